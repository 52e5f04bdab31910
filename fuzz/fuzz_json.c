/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_json.c -- libFuzzer harness for the admin API's JSON reader and
** the server's JSON string escaper.
**
** The input is a request body, read as POST /v1/tags and PATCH
** /v1/tags/{tag} read it. Invariants beyond "no crash": reading is a pure
** function; a string read fits its field; the escaper stays inside its
** buffer and writes only what JSON allows, and what it writes reads back
** to a string that escapes to the same text.
*/
#include "server/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

typedef struct body {
  char tag[129], desc[257];
  frond__json_field f[8];
} body;

static int read_body(const char *in, size_t len, body *b, size_t n) {
  frond_error err = {0, ""};
  /* The fields of http_admin.c's read_body, in its order: a POST reads
  ** all eight, a PATCH step and max, an advance one. */
  frond__json_field proto[8] = {
      {"tag", FROND__JSON_STR, b->tag, sizeof b->tag, 0, 0},
      {"step", FROND__JSON_INT, NULL, 0, 0, 0},
      {"max", FROND__JSON_INT, NULL, 0, 0, 0},
      {"start", FROND__JSON_INT, NULL, 0, 0, 0},
      {"description", FROND__JSON_STR, b->desc, sizeof b->desc, 0, 0},
      {"increment", FROND__JSON_INT, NULL, 0, 0, 0},
      {"offset", FROND__JSON_INT, NULL, 0, 0, 0},
      {"ordered", FROND__JSON_BOOL, NULL, 0, 0, 0},
  };
  int r;
  memcpy(b->f, proto, sizeof proto);
  r = frond__json_read(in, len, n == 8 ? b->f : b->f + 1, n, &err);
  check(r == 0 || (r == FROND_EINVAL && err.code == FROND_EINVAL &&
                   strncmp(err.message, "invalid JSON body: ", 19) == 0));
  return r;
}

static void fuzz_read(const char *in, size_t len) {
  body a, b;
  int r = read_body(in, len, &a, 8);
  check(read_body(in, len, &b, 8) == r);
  if (r == 0) {
    check(a.f[0].present == b.f[0].present && a.f[1].num == b.f[1].num &&
          a.f[2].present == b.f[2].present && a.f[2].num == b.f[2].num &&
          a.f[5].num == b.f[5].num && a.f[6].num == b.f[6].num &&
          a.f[7].num == b.f[7].num &&
          (!a.f[7].present || a.f[7].num == 0 || a.f[7].num == 1));
    if (a.f[0].present)
      check(strlen(a.tag) < sizeof a.tag && strcmp(a.tag, b.tag) == 0);
    if (a.f[4].present)
      check(strlen(a.desc) < sizeof a.desc);
  }
  (void)read_body(in, len, &a, 2); /* PATCH: step and max */
  (void)read_body(in, len, &a, 1); /* advance: to */
}

/* Escape s; check the text; read it back as a string; escape that. */
static void fuzz_escape(const char *s, size_t len) {
  size_t cap = len * 6 + 1, n, i, m;
  char *esc = malloc(cap), *doc = malloc(cap + 20), *back = malloc(cap);
  char small[16];
  frond_error err = {0, ""};
  frond__json_field f = {"t", FROND__JSON_STR, back, cap, 0, 0};
  frond__buf b = {NULL, 0, 0};
  check(esc != NULL && doc != NULL && back != NULL);
  n = frond__json_escape(s, len, esc, cap);
  check(n < cap && esc[n] == '\0');
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)esc[i];
    check(c >= 0x20 && c != 0x7f);
    if (c == '"')
      check(i > 0 && esc[i - 1] == '\\');
  }
  check(frond__json_append(&b, s, len) == 0 && b.len == n &&
        memcmp(b.data ? b.data : "", esc, n) == 0);
  frond__buf_free(&b);
  /* A truncated escape stays inside its buffer and NUL-terminates. */
  m = frond__json_escape(s, len, small, sizeof small);
  check(m < sizeof small && small[m] == '\0' && memcmp(small, esc, m) == 0);
  m = (size_t)(stpcpy(stpcpy(stpcpy(doc, "{\"t\":\""), esc), "\"}") - doc);
  if (memchr(s, '\0', len) == NULL) {
    /* \u0000 is refused on reading, everything else comes back. */
    check(frond__json_read(doc, m, &f, 1, &err) == 0);
    check(f.present);
    check(frond__json_escape(back, strlen(back), doc, cap) == n &&
          memcmp(doc, esc, n) == 0);
  }
  free(esc);
  free(doc);
  free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size copy so that ASan sees any over-read. */
  char *copy = malloc(size ? size : 1);
  if (copy == NULL)
    return 0;
  memcpy(copy, data, size);
  fuzz_read(copy, size);
  fuzz_escape(copy, size);
  free(copy);
  return 0;
}
