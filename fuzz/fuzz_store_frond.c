/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_store_frond.c -- libFuzzer harness for the frond:// store's pure
** readers (store_frond_parse.c): its URI, a response head, a range, an
** error body, a tag row and the tag list.
**
** The first byte picks the reader, the rest is its input, in a malloc of
** exactly its size (ASan catches any over-read; a URI alone gets its NUL).
** Every input is accepted or refused, the same way twice. An accepted URI
** has 1 to 16 servers, each with a non-empty host and a port in 1..65535,
** a timeout in 1..600000 ms and retries in 0..10; a refused one never
** shows its token.
** An accepted head lies inside the input, has a status in 200..599 and a
** body length within the cap; a refused one is refused for every longer
** input that starts with it (a prefix refused is never a partial). A
** range has 0 <= start < end; a row has a tag; strings are NUL-terminated
** within their fields.
*/
#include "store/store_frond.h"

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_row(void *ctx, const frond_tag_row *row) {
  if (row->tag[0] == '\0' || strlen(row->tag) > FROND_TAG_MAX ||
      strlen(row->description) >= sizeof(row->description))
    abort();
  ++*(int *)ctx;
  return 0;
}

static void uri(const char *s) {
  frond_fs_uri u, u2;
  frond_error e = {0, ""}, e2 = {0, ""};
  int rc = frond__fs_uri_parse(s, &u, &e), i;
  const char *t = strstr(s, "token=");
  char shown[FROND_STORE_URI_MAX + 64];
  if (rc != frond__fs_uri_parse(s, &u2, &e2) || strcmp(e.message, e2.message))
    abort();
  /* A token shows neither in a refusal nor where the URI is shown: put a
  ** marker found nowhere else in the URI where the token's value is, and
  ** look for the marker. */
  if (t != NULL && strlen(s) < FROND_STORE_URI_MAX) {
    size_t n = strcspn(t + 6, "&#?;| "), at = (size_t)(t + 6 - s);
    char marker[16], marked[FROND_STORE_URI_MAX + 32];
    frond_error e3 = {0, ""};
    frond_fs_uri u3;
    int k = 0;
    do
      snprintf(marker, sizeof(marker), "TK%dKT", k++);
    while (strstr(s, marker) != NULL);
    snprintf(marked, sizeof(marked), "%.*s%s%s", (int)at, s, marker, t + 6 + n);
    (void)frond__fs_uri_parse(marked, &u3, &e3);
    frond__store_uri_shown(marked, shown, sizeof(shown));
    if (strstr(e3.message, marker) != NULL || strstr(shown, marker) != NULL)
      abort();
  }
  if (rc != 0) {
    if (rc != FROND_ESTORE_URI || e.message[0] == '\0')
      abort();
    return;
  }
  if (u.n < 1 || u.n > FROND_FS_MAX_SERVERS || u.timeout_ms < 1 ||
      u.timeout_ms > 600000 || u.retries < 0 || u.retries > 10)
    abort();
  for (i = 0; i < u.n; i++)
    if (u.srv[i].host[0] == '\0' || u.srv[i].port < 1 || u.srv[i].port > 65535)
      abort();
}

static void head(const char *s, size_t n) {
  frond_fs_resp r;
  frond_error e = {0, ""};
  int h = frond__fs_resp_parse(s, n, &r, &e);
  if (h > 0) {
    if ((size_t)h > n || r.head_len != (size_t)h || r.status < 200 ||
        r.status > 599 || r.content_length < 0 ||
        r.content_length > FROND_FS_BODY_MAX)
      abort();
    return;
  }
  if (h != -1 && h != -2)
    abort();
  if (h == -1 && e.message[0] == '\0')
    abort();
  /* A partial head stays partial or becomes a head or an error once
  ** complete; an error is an error for every shorter prefix's answer
  ** that was not partial. Checked on the prefix one byte short. */
  if (n > 0) {
    frond_fs_resp r2;
    int h2 = frond__fs_resp_parse(s, n - 1, &r2, NULL);
    if (h2 == -1 && h != -1)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s;
  size_t n;
  if (size == 0)
    return 0;
  n = size - 1;
  if (data[0] % 6 == 0) { /* a C string: its own copy, to its NUL */
    if ((s = malloc(n + 1)) == NULL)
      return 0;
    memcpy(s, data + 1, n);
    s[n] = '\0';
    uri(s);
    free(s);
    return 0;
  }
  /* Exactly n bytes (one at least, for malloc): a read past the input is
  ** a read past the allocation, which ASan reports. */
  if ((s = malloc(n > 0 ? n : 1)) == NULL)
    return 0;
  memcpy(s, data + 1, n);
  switch (data[0] % 6) {
  case 1:
    head(s, n);
    break;
  case 2: {
    int64_t a, b;
    if (frond__fs_range_parse(s, n, &a, &b) == 0 && (a < 0 || a >= b))
      abort();
    break;
  }
  case 3: {
    char code[40], msg[100];
    if (frond__fs_error_parse(s, n, code, sizeof(code), msg, sizeof(msg)) ==
            0 &&
        (code[0] == '\0' || strlen(code) >= sizeof(code) ||
         strlen(msg) >= sizeof(msg)))
      abort();
    break;
  }
  case 4: {
    frond_tag_row row;
    if (frond__fs_row_parse(s, n, &row) == 0)
      count_row(&(int){0}, &row);
    break;
  }
  default: {
    int k = 0;
    if (frond__fs_rows_parse(s, n, count_row, &k) != 0)
      k = 0;
    break;
  }
  }
  free(s);
  return 0;
}
