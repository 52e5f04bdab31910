/* SPDX-License-Identifier: Apache-2.0 */
/*
** snowflake_info.c -- what a snowflake generator tells its callers and its
** coordinator: the fence and its target, whether it is blocked or asleep,
** and its counters. Reads only; issuing is snowflake.c's.
*/
#include "core/snowflake.h"

int64_t frond__layout_last_unit_ms(const frond_layout *l) {
  return frond_layout_end_ms(l) - l->unit_ms;
}

int64_t frond__gen_fence_target(const frond_gen *g, int64_t now_ms,
                                int64_t window_ms) {
  int64_t last = frond__layout_last_unit_ms(&g->layout);
  int64_t t = now_ms + g->opt.max_ahead_ms + window_ms;
  return t > last ? last : t;
}

int64_t frond__gen_fence_ms(const frond_gen *g) {
  return atomic_load_explicit(&g->fence_ms, memory_order_relaxed);
}

int frond__gen_blocked(const frond_gen *g) {
  return atomic_load_explicit(&g->blocked, memory_order_relaxed);
}

const _Atomic uint64_t *frond__gen_barriers(const frond_gen *g) {
  return &g->barriers;
}

int frond__gen_asleep(const frond_gen *g) {
  return atomic_load_explicit(&g->asleep, memory_order_relaxed);
}

void frond_gen_stats_get(frond_gen *g, frond_gen_stats *out) {
  int64_t fence = atomic_load_explicit(&g->fence_ms, memory_order_relaxed);
  memset(out, 0, sizeof(*out));
  out->borrowed = atomic_load_explicit(&g->borrowed, memory_order_relaxed);
  out->waits = atomic_load_explicit(&g->waits, memory_order_relaxed);
  out->clock_behind =
      atomic_load_explicit(&g->clock_behind, memory_order_relaxed);
  out->reservations =
      atomic_load_explicit(&g->reservations, memory_order_relaxed);
  out->ahead_ms = atomic_load_explicit(&g->ahead_ms, memory_order_relaxed);
  out->reserved_ms =
      atomic_load_explicit(&g->reserved_ms, memory_order_relaxed);
  out->fence_ms = fence == INT64_MAX ? 0 : fence;
  out->fence_refused =
      atomic_load_explicit(&g->fence_refused, memory_order_relaxed);
  out->asleep = atomic_load_explicit(&g->asleep, memory_order_relaxed);
  out->sleeps = atomic_load_explicit(&g->sleeps, memory_order_relaxed);
  if (gen_forked(g)) {
    out->last_error = FROND_EFORKED;
    return;
  }
  pthread_mutex_lock(&g->mu);
  out->last_error = g->bg_err.code;
  pthread_mutex_unlock(&g->mu);
}
