/*
** buf.c -- growable byte buffers and decimal text (see buf.h).
*/
#include "server/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__buf_reserve(frond__buf *b, size_t extra) {
  size_t cap;
  char *p;
  if (b->cap - b->len >= extra)
    return 0;
  cap = b->cap ? b->cap : 4096;
  while (cap - b->len < extra)
    cap *= 2;
  p = realloc(b->data, cap);
  if (p == NULL)
    return -1;
  b->data = p;
  b->cap = cap;
  return 0;
}

int frond__buf_append(frond__buf *b, const void *p, size_t n) {
  if (n == 0)
    return 0;
  if (frond__buf_reserve(b, n) != 0)
    return -1;
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

int frond__buf_printf(frond__buf *b, const char *fmt, ...) {
  va_list ap;
  int n;
  if (frond__buf_reserve(b, 256) != 0)
    return -1;
  va_start(ap, fmt);
  n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -1;
  if ((size_t)n >= b->cap - b->len) {
    if (frond__buf_reserve(b, (size_t)n + 1) != 0)
      return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
  return 0;
}

void frond__buf_free(frond__buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
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
