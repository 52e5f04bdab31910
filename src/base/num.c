/*
** num.c -- decimal numbers: the one integer parser and formatter, and the
** FNV-1a hash of our own files and tables.
*/
#include "base/base.h"

int frond__parse_i64(const char *s, size_t len, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  uint64_t v = 0;
  uint64_t limit;
  if (len == 0)
    return -1;
  if (s[0] == '-') {
    neg = 1;
    i = 1;
    if (len == 1)
      return -1;
  }
  limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < len; i++) {
    unsigned d = (unsigned char)s[i] - '0';
    if (d > 9)
      return -1;
    if (v > (limit - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

uint64_t frond__fnv1a64(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  while (n--)
    h = (h ^ *s++) * UINT64_C(0x100000001b3);
  return h;
}
