/* SPDX-License-Identifier: Apache-2.0 */
/*
** num.c -- decimal numbers: the one integer parser and formatter, and the
** FNV-1a hash of our own files and tables, and the process' serial
** numbers.
*/
#include "base/base.h"

#include <stdatomic.h>
#include <string.h>

static _Atomic uint64_t serials;

uint64_t frond__serial(void) {
  return atomic_fetch_add_explicit(&serials, 1, memory_order_relaxed) + 1;
}

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

/* Two digits per division: batches of IDs are mostly this. */
size_t frond__dec_u64(char *dst, uint64_t v) {
  static const char pairs[201] = "0001020304050607080910111213141516171819"
                                 "2021222324252627282930313233343536373839"
                                 "4041424344454647484950515253545556575859"
                                 "6061626364656667686970717273747576777879"
                                 "8081828384858687888990919293949596979899";
  char tmp[FROND__DEC_MAX];
  size_t i = sizeof tmp;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100) * 2;
    v /= 100;
    tmp[--i] = pairs[r + 1];
    tmp[--i] = pairs[r];
  }
  if (v >= 10) {
    tmp[--i] = pairs[v * 2 + 1];
    tmp[--i] = pairs[v * 2];
  } else {
    tmp[--i] = (char)('0' + v);
  }
  memcpy(dst, tmp + i, sizeof tmp - i);
  return sizeof tmp - i;
}

size_t frond__dec_i64(char *dst, int64_t v) {
  if (v >= 0)
    return frond__dec_u64(dst, (uint64_t)v);
  dst[0] = '-';
  return 1 + frond__dec_u64(dst + 1, (uint64_t)0 - (uint64_t)v);
}
