/* SPDX-License-Identifier: Apache-2.0 */
/*
** period.c -- the periods of daily, monthly and yearly sequences.
**
** A seq number belongs to the period (local day, month or year in the
** format's zone) of the segment allocator's clock at the moment it is
** issued. Periods are computed from a zone's transitions, never from the
** process-wide TZ, and cached as a window [from, until) of unix ms: the
** window ends at the next local midnight (or month or year start) or at
** the next change of the zone's offset, whichever comes first, so the
** hot path is two loads and two comparisons. A clock that goes back
** before the window recomputes it; a zone that turns back across midnight
** gives that hour the previous date again, which is safe: its row still
** holds the numbers already issued.
*/
#include "core/formats.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void frond__period_init(frond__period_cache *c) {
  atomic_init(&c->seq, 0);
  atomic_init(&c->from_ms, 1);
  atomic_init(&c->until_ms, 0); /* empty: the first call computes */
  atomic_init(&c->period, 0);
  atomic_init(&c->start_ms, 0);
  pthread_mutex_init(&c->mu, NULL);
}

void frond__period_destroy(frond__period_cache *c) {
  pthread_mutex_destroy(&c->mu);
}

/* Period number of a local date, and the local day its period starts. */
static int64_t period_number(int kind, int64_t y, unsigned m, unsigned d,
                             int64_t *first_day, int64_t *next_day) {
  switch (kind) {
  case FROND__PERIOD_DAY:
    *first_day = frond__days_from_civil(y, m, d);
    *next_day = *first_day + 1;
    return y * 10000 + m * 100 + d;
  case FROND__PERIOD_MONTH:
    *first_day = frond__days_from_civil(y, m, 1);
    *next_day = m == 12 ? frond__days_from_civil(y + 1, 1, 1)
                        : frond__days_from_civil(y, m + 1, 1);
    return y * 100 + m;
  default:
    *first_day = frond__days_from_civil(y, 1, 1);
    *next_day = frond__days_from_civil(y + 1, 1, 1);
    return y;
  }
}

/* Compute the window around t (ms). */
static void compute(const frond__tz *tz, int kind, int64_t t, int64_t *period,
                    int64_t *until_ms, int64_t *start_ms) {
  int64_t sec = frond__floor_div(t, 1000), change, local, first, next, y,
          boundary;
  int32_t off = frond__tz_offset(tz, sec, &change);
  unsigned m, d;
  local = sec + off;
  frond__civil_from_days(frond__floor_div(local, 86400), &y, &m, &d);
  *period = period_number(kind, y, m, d, &first, &next);
  boundary = next * 86400 - off; /* next period, if the offset holds */
  if (change < boundary)
    boundary = change;
  *until_ms = boundary > INT64_MAX / 1000 ? INT64_MAX : boundary * 1000;
  *start_ms = frond__period_start(tz, kind, *period);
}

int64_t frond__period_of(frond__period_cache *c, const frond__tz *tz, int kind,
                         int64_t t, int64_t *start_ms) {
  uint64_t s1 = atomic_load_explicit(&c->seq, memory_order_acquire);
  int64_t from = atomic_load_explicit(&c->from_ms, memory_order_acquire);
  int64_t until = atomic_load_explicit(&c->until_ms, memory_order_acquire);
  int64_t period = atomic_load_explicit(&c->period, memory_order_acquire);
  int64_t start = atomic_load_explicit(&c->start_ms, memory_order_acquire);
  if (FROND__LIKELY((s1 & 1) == 0 && t >= from && t < until &&
                    atomic_load_explicit(&c->seq, memory_order_relaxed) ==
                        s1)) {
    *start_ms = start;
    return period;
  }
  compute(tz, kind, t, &period, &until, &start);
  /* Publish the new window (seqlock write: seq odd while writing). */
  pthread_mutex_lock(&c->mu);
  s1 = atomic_load_explicit(&c->seq, memory_order_relaxed);
  atomic_store_explicit(&c->seq, s1 + 1, memory_order_relaxed);
  atomic_store_explicit(&c->from_ms, t, memory_order_release);
  atomic_store_explicit(&c->until_ms, until, memory_order_release);
  atomic_store_explicit(&c->period, period, memory_order_release);
  atomic_store_explicit(&c->start_ms, start, memory_order_release);
  atomic_store_explicit(&c->seq, s1 + 2, memory_order_release);
  pthread_mutex_unlock(&c->mu);
  *start_ms = start;
  return period;
}

int64_t frond__period_start(const frond__tz *tz, int kind, int64_t period) {
  int64_t y, m = 1, d = 1, day, local, guess;
  switch (kind) {
  case FROND__PERIOD_DAY:
    y = period / 10000;
    m = period / 100 % 100;
    d = period % 100;
    break;
  case FROND__PERIOD_MONTH:
    y = period / 100;
    m = period % 100;
    break;
  default:
    y = period;
    break;
  }
  if (y < 0 || m < 1 || m > 12 || d < 1 || d > 31)
    return INT64_MIN;
  day = frond__days_from_civil(y, (unsigned)m, (unsigned)d);
  local = day * 86400;
  /* The first instant whose local date is that day: midnight under the
  ** offset in force then (after a gap at midnight, the end of the gap). */
  guess = local - frond__tz_offset(tz, local, NULL);
  guess = local - frond__tz_offset(tz, guess, NULL);
  if (frond__floor_div(guess + frond__tz_offset(tz, guess, NULL), 86400) <
      day) {
    int64_t change;
    frond__tz_offset(tz, guess, &change);
    guess = change;
  }
  return guess * 1000;
}

/* ---- keys of keyed sequences ---- */

int frond__seq_key_for(const frond_format *f, int slot, int64_t period,
                       uint8_t out[16], frond_error *err) {
  char ctx[128];
  if (f->keys == NULL || slot < 0 || !f->keys->present[slot])
    return frond__fail(err, FROND_EKEY_INVALID, "no key for this version");
  snprintf(ctx, sizeof(ctx),
           "frond seq v1 radix=%u width=%u rounds=%u period=%" PRId64, f->radix,
           f->width, f->rounds, period);
  frond__perm_key(f->keys->key[slot], ctx, out);
  return 0;
}

int frond__seq_key(frond_format *f, int64_t period, const uint8_t **key,
                   frond_error *err) {
  frond__pkey *k = atomic_load_explicit(&f->pkey, memory_order_acquire), *nk;
  int rc;
  for (frond__pkey *p = k; p != NULL; p = p->older)
    if (p->period == period) {
      *key = p->key;
      return 0;
    }
  /* A period seen for the first time: derive its key and publish it at
  ** the head of the list. Entries are never freed before the format, so
  ** a reader holding one is always safe; a lost race only wastes one. */
  if ((nk = calloc(1, sizeof(*nk))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  nk->period = period;
  if ((rc = frond__seq_key_for(f, frond__key_slot(f->version), period, nk->key,
                               err)) != 0) {
    free(nk);
    return rc;
  }
  do
    nk->older = k;
  while (!atomic_compare_exchange_weak_explicit(
      &f->pkey, &k, nk, memory_order_acq_rel, memory_order_acquire));
  *key = nk->key;
  return 0;
}
