/* SPDX-License-Identifier: Apache-2.0 */
/*
** rand_hot.h -- the fast paths of id128_rand.c, inlined into the 128-bit
** generators: a thread's next 8 or 16 bytes of a stream's keystream, and
** the ticker's millisecond.
**
** Why inline: a 128-bit ID's work after its generator's locked add waits
** for the add, and every store before the next locked add has to drain
** first. A call to each of these costs its return address and the
** caller's saved registers, stores on every ID. Inlined, with the
** engine's add and one string's path free of calls, a UUIDv7 went from
** 2.1x to 1.85x the snowflake next() (bench_formats). Only the common
** case is here; the rest is id128_rand.c's, and the state these read is
** declared in formats.h (id128_rand.c includes no inline part of it).
*/
#ifndef FROND_CORE_RAND_HOT_H
#define FROND_CORE_RAND_HOT_H

#include "base/base.h"
#include "base/busy.h"
#include "base/fork.h"
#include "core/formats.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* 1 with *p the hot slot's next n bytes of stream and the thread's mark
** set; 0, the mark clear, when the hot slot is not stream's, has fewer
** bytes, was made in another process, or the call is a handler inside a
** draw (then frond__rand_bytes serves it). The mark is set before the
** cursor is read: a handler that ran between the two would hand out the
** bytes this call read. */
__attribute__((always_inline)) static inline int
frond__rand_hot_begin(uint64_t stream, unsigned n, uint8_t **p) {
  if (FROND__UNLIKELY(frond__rand_busy))
    return 0;
  FROND__BUSY_ENTER(frond__rand_busy);
  *p = frond__hot.p;
  if (FROND__UNLIKELY(frond__hot.stream != stream ||
                      (size_t)(frond__hot.end - *p) < n ||
                      frond__fork_seen(&frond__hot.fork))) {
    FROND__BUSY_LEAVE(frond__rand_busy);
    return 0;
  }
  return 1;
}

/* The n bytes at p, read, are handed out: not kept, and the mark clear. */
__attribute__((always_inline)) static inline void
frond__rand_hot_end(uint8_t *p, unsigned n) {
  memset(p, 0, n);
  frond__hot.p = p + n;
  FROND__BUSY_LEAVE(frond__rand_busy);
}

/* n (8 or 16: a constant in each caller) bytes of stream's keystream. */
__attribute__((always_inline)) static inline void
frond__rand_take(uint64_t stream, void *out, unsigned n) {
  uint8_t *p;
  if (FROND__UNLIKELY(!frond__rand_hot_begin(stream, n, &p))) {
    frond__rand_bytes(stream, out, n);
    return;
  }
  memcpy(out, p, n);
  frond__rand_hot_end(p, n);
}

/* 1 with *v the next 8 bytes of stream's keystream from the hot slot; 0
** when they are not there (frond__rand64 then serves them). No call. */
__attribute__((always_inline)) static inline int
frond__rand_try64(uint64_t stream, uint64_t *v) {
  uint8_t *p;
  if (FROND__UNLIKELY(!frond__rand_hot_begin(stream, 8, &p)))
    return 0;
  memcpy(v, p, 8);
  frond__rand_hot_end(p, 8);
  return 1;
}

/* frond__rand64 inlined: the value stays in a register (frond__rand_take's
** out would be a store and a load). */
__attribute__((always_inline)) static inline uint64_t
frond__rand_take64(uint64_t stream) {
  uint64_t v;
  return frond__rand_try64(stream, &v) ? v : frond__rand64(stream);
}

/* frond__id128_now_ms, its common case inlined: a running ticker of
** this process. */
__attribute__((always_inline)) static inline int
frond__now_ms_hot(int64_t *ms) {
  frond__tick *t = &frond__ticker;
  if (FROND__LIKELY(atomic_load_explicit(&t->state, memory_order_acquire) ==
                        FROND__TICK_RUNNING &&
                    !frond__fork_seen(&t->fork) &&
                    atomic_load_explicit(&t->read, memory_order_relaxed))) {
    *ms = atomic_load_explicit(&t->ms, memory_order_relaxed);
    return 1;
  }
  return 0;
}

__attribute__((always_inline)) static inline int64_t frond__now_ms(void) {
  int64_t ms;
  return frond__now_ms_hot(&ms) ? ms : frond__id128_now_ms();
}

#endif /* FROND_CORE_RAND_HOT_H */
