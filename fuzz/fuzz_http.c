/*
** fuzz_http.c -- libFuzzer harness for the HTTP request parser, with the
** query and unescape helpers over what it parsed.
**
** Invariants checked beyond "no crash": a parsed head lies inside the
** input, views point into it, and parsing is a pure function (the same
** input gives the same answer). The admin API's JSON reader has a harness
** of its own (fuzz_json.c).
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
  check(req.target >= buf && req.target + req.target_len <= buf + n);
  check(req.path_len <= req.target_len && req.target[0] == '/');
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
    check(frond__http_unescape(req.target, req.path_len, out, sizeof out) <=
          (int)req.path_len);
  }
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
