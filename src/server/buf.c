/* SPDX-License-Identifier: Apache-2.0 */
/*
** buf.c -- growable byte buffers (see buf.h).
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
