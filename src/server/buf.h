/* SPDX-License-Identifier: Apache-2.0 */
/*
** buf.h -- the server's growable byte buffer.
**
** Every answer, page and reply is built in a frond__buf that lives as long
** as its connection or worker, so the request path reuses memory instead
** of allocating. The hot paths reserve once and then write with memcpy and
** frond__dec_u64 rather than printf.
*/
#ifndef FROND_SERVER_BUF_H
#define FROND_SERVER_BUF_H

#include "base/base.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

typedef struct frond__buf {
  char *data;
  size_t len;
  size_t cap;
} frond__buf;

/* Make room for extra more bytes. 0, or -1 when out of memory. */
int frond__buf_reserve(frond__buf *b, size_t extra);
int frond__buf_append(frond__buf *b, const void *p, size_t n);
int frond__buf_printf(frond__buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void frond__buf_free(frond__buf *b);

/* Append v in decimal to b, whose room the caller has reserved. */
static inline void frond__buf_put_u64(frond__buf *b, uint64_t v) {
  assert(b->len <= b->cap && b->cap - b->len >= 20); /* reserved */
  b->len += frond__dec_u64(b->data + b->len, v);
}

#endif /* FROND_SERVER_BUF_H */
