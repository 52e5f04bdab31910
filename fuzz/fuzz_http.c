/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_http.c -- libFuzzer harness for the HTTP request parser, with the
** query and unescape helpers over what it parsed.
**
** Invariants checked beyond "no crash": a parsed head lies inside the
** input, views point into it, and parsing is a pure function (the same
** input gives the same answer). A chunked body after the head is scanned
** whole and in two pieces (the scan resumes where it stopped): both give
** the same answer, and the decoded data fits what the scan counted. The
** admin API's JSON reader has a harness of its own (fuzz_json.c).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

/* The chunked body at buf[0..len): whole, then in two pieces. */
static void fuzz_chunked(const char *buf, size_t len) {
  frond__http_chunks a = {0, 0, 0}, b = {0, 0, 0};
  const char *why = NULL;
  int st = 0, st2 = 0;
  size_t max = 4096;
  int r = frond__http_chunked(buf, len, max, &a, &st, &why);
  int r2 = frond__http_chunked(buf, len / 2, max, &b, &st2, &why);
  if (r2 == FROND__HTTP_PARTIAL)
    r2 = frond__http_chunked(buf, len, max, &b, &st2, &why);
  check(r == r2);
  if (r == FROND__HTTP_ERROR) {
    check(st == st2 && (st == 400 || st == 413 || st == 431) && why != NULL);
    return;
  }
  if (r == FROND__HTTP_PARTIAL)
    return;
  check(r > 0 && (size_t)r <= len && a.data == b.data && a.data <= max);
  {
    /* An exact-size destination: ASan sees any write beyond it. */
    char *dst = malloc(a.data ? a.data : 1);
    if (dst == NULL)
      return;
    frond__http_chunked_copy(buf, (size_t)r, dst);
    free(dst);
  }
}

static void fuzz_http(const char *buf, size_t len) {
  frond__http_request req, again;
  int n = frond__http_parse(buf, len, &req);
  size_t i;
  check(frond__http_parse(buf, len, &again) == n);
  if (n == FROND__HTTP_ERROR) {
    check(req.status >= 400 && req.status <= 505 && req.reason != NULL);
    return;
  }
  if (n == FROND__HTTP_PARTIAL) {
    check(len < FROND__HTTP_MAX_HEAD);
    return;
  }
  check(n > 0 && (size_t)n <= len && n <= FROND__HTTP_MAX_HEAD);
  /* "*" and an absolute form without a path stand for "/" (a literal). */
  check((req.target >= buf && req.target + req.target_len <= buf + n) ||
        (req.target_len == 1 && req.target[0] == '/'));
  check(req.path_len <= req.target_len && req.target[0] == '/');
  check(req.host == NULL ||
        (req.host >= buf && req.host + req.host_len <= buf + n));
  check(!req.chunked || req.body_len == 0);
  check(req.body_len >= 0);
  for (i = 0; i < req.num_headers; i++) {
    const frond__http_header *h = &req.headers[i];
    check(h->name >= buf && h->name + h->name_len <= buf + n);
    check(h->value >= buf && h->value + h->value_len <= buf + n);
  }
  {
    const char *v;
    size_t vl;
    char out[FROND__HTTP_MAX_HEAD];
    if (frond__http_query(req.target, req.target_len, "count", &v, &vl))
      check(v >= req.target && v + vl <= req.target + req.target_len);
    /* Every later occurrence of a key lies past the one before it, inside
    ** the target (the walk /readyz uses to refuse a kind given twice). */
    {
      const char *end = req.target + req.target_len;
      const char *q = memchr(req.target, '?', req.target_len);
      const char *last = req.target;
      for (q = q ? q + 1 : end + 1;
           q <= end &&
           frond__http_query_params(q, (size_t)(end - q), "kind", &v, &vl);
           q = v + vl + 1) {
        check(v >= last && v + vl <= end);
        last = v + vl;
      }
    }
    check(frond__http_unescape(req.target, req.path_len, out, sizeof out) <=
          (int)req.path_len);
    /* A query value decodes to as many bytes as with '+' kept: a '+' is
    ** one byte either way. */
    check(frond__http_unescape_query(req.target, req.target_len, out,
                                     sizeof out) ==
          frond__http_unescape(req.target, req.target_len, out, sizeof out));
  }
  if (req.chunked)
    fuzz_chunked(buf + n, len - (size_t)n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size copy so that ASan sees any over-read. */
  char *copy = malloc(size ? size : 1);
  if (copy == NULL)
    return 0;
  memcpy(copy, data, size);
  fuzz_http(copy, size);
  free(copy);
  return 0;
}
