/* SPDX-License-Identifier: Apache-2.0 */
/*
** snowflake.c -- the snowflake generator: issuing IDs (the hot path and
** the slow path), following the clock, the coordinator's fence, block and
** resume. The design is described in snowflake.h; creating, starting and
** closing are in snowflake_start.c, what a generator reports (counters,
** fence, state) in snowflake_info.c.
*/
#include "core/snowflake.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>

int frond__gen_forked(const frond_gen *g, frond_error *err) {
  return frond__fail(err, FROND_EFORKED,
                     "this snowflake generator (node %" PRIu64
                     ") belongs to process %ld; used in a child of fork() it "
                     "would issue its parent's IDs: create a generator in the "
                     "child, on a node ID of its own",
                     g->node, g->pid);
}

/* How long the first call after the ticker slept may wait for the
** reservation write it owes to the sleep, whatever max_wait says. */
#define WAKE_RESERVE_MS 1000 /* frond.h's max_wait_ms says 1 s */

/* Drop the ranges given back that a raise jumped over. Expects mu held. */
static void dead_prune(frond_gen *g) {
  int k = 0;
  for (int i = 0; i < g->ndead; i++)
    if (g->dead[i].end > g->cap)
      g->dead[k++] = g->dead[i];
  g->ndead = k;
}

/* Remember [v, end) as given up on: a call waited in vain for the claims
** above it (one was issued, or its thread did not run for HOLD_MIN_MS).
** Whoever gives back down to `end` goes on down to v. Full, it forgets
** the lowest range (never reached again once a claim above it was
** issued). Expects mu held. */
static void dead_push(frond_gen *g, uint64_t v, uint64_t end) {
  int low = 0;
  dead_prune(g);
  if (v < g->cap)
    v = g->cap;
  if (g->ndead == FROND__GEN_DEAD_MAX) {
    for (int i = 1; i < g->ndead; i++)
      if (g->dead[i].end < g->dead[low].end)
        low = i;
    g->dead[low] = g->dead[--g->ndead];
  }
  g->dead[g->ndead].v = v;
  g->dead[g->ndead].end = end;
  g->ndead++;
}

/* state was just given back down to s: go on down through the values of
** calls waiting below (giving them back for them) and ranges given up on
** that end there. Stops when a claim lands meanwhile: its call gives back
** (and goes on from there) or is issued. Expects mu held. */
static void give_back_below(frond_gen *g, uint64_t s) {
  int given = 0;
  for (;;) {
    uint64_t at = s & ~FROND__GEN_SEALED, v, to;
    frond__gen_held *h;
    int i = g->ndead;
    for (h = g->held; h != NULL; h = h->next)
      if (!h->given && h->end == at)
        break;
    if (h == NULL)
      for (i = 0; i < g->ndead; i++)
        if (g->dead[i].end == at)
          break;
    if (h == NULL && i == g->ndead)
      break;
    v = h != NULL ? h->v : g->dead[i].v;
    to = (s & FROND__GEN_SEALED) | (v < g->cap ? g->cap : v);
    if (!atomic_compare_exchange_strong_explicit(
            &g->state, &s, to, memory_order_relaxed, memory_order_relaxed))
      break;
    s = to;
    if (h != NULL) {
      h->given = 1;
      given = 1;
    } else {
      g->dead[i] = g->dead[--g->ndead];
    }
  }
  if (given)
    pthread_cond_broadcast(&g->cv);
}

/* Raise state to at least v (never lower it) in one compare-and-swap,
** keeping the seal bit when `keep` is FROND__GEN_SEALED and clearing it
** when 0: a claim lands either on the sealed word (its values are above
** any limit) or above v, never on an unsealed word below v. Expects mu
** held. */
static void raise_state(frond_gen *g, uint64_t v, uint64_t keep) {
  uint64_t cur = atomic_load_explicit(&g->state, memory_order_relaxed), next;
  do {
    next = cur & ~FROND__GEN_SEALED;
    /* Below the cap only if claims ran past the seal bit: no ID left. */
    if (next < g->cap)
      next = value_end(g);
    if (next < v)
      next = v;
    next |= cur & keep;
  } while (next != cur && !atomic_compare_exchange_weak_explicit(
                              &g->state, &cur, next, memory_order_acq_rel,
                              memory_order_relaxed));
  /* Never given back below v, even when a claim held above it made the
  ** raise unneeded. */
  if (v > g->floor)
    g->floor = v;
  if (v > g->cap)
    g->cap = v;
  dead_prune(g);
}

static void unseal_raise(frond_gen *g, uint64_t v) {
  raise_state(g, v, 0);
}

/* Raise the coordinator fence to fence_ms (never lower it); returns
** nonzero when it moved. Expects mu held. */
static int raise_fence(frond_gen *g, int64_t fence_ms) {
  if (fence_ms <= atomic_load_explicit(&g->fence_ms, memory_order_relaxed))
    return 0;
  atomic_store_explicit(&g->fence_ms, fence_ms, memory_order_relaxed);
  g->fence_units = fence_units_of(g, fence_ms);
  return 1;
}

static uint64_t start_seq(frond_gen *g) {
  uint64_t span;
  if (g->opt.seq_start != FROND_SEQ_RANDOM)
    return 0;
  span = (g->seq_mask + 1) / 16;
  if (span > 100)
    span = 100;
  if (span <= 1)
    return 0;
  /* xorshift64: spreading low digits needs no cryptographic randomness. */
  g->rng ^= g->rng << 13;
  g->rng ^= g->rng >> 7;
  g->rng ^= g->rng << 17;
  return g->rng % span;
}

/* Move an idle generator's clock up to the wall clock, and account for
** borrowing. The ticker, or the call that wakes it while the ticker sleeps
** (which so cannot run); mu held. */
static void follow_clock(frond_gen *g, int64_t now) {
  int64_t wall = units_of(g, now);
  uint64_t cur = atomic_load_explicit(&g->state, memory_order_relaxed);
  int64_t logical;
  if (cur & FROND__GEN_SEALED)
    return; /* blocked: resume sets the floor */
  while (units_of_value(g, cur) < wall && wall <= g->tmax) {
    uint64_t next = unit_value(g, wall) | start_seq(g);
    if (atomic_compare_exchange_weak_explicit(&g->state, &cur, next,
                                              memory_order_relaxed,
                                              memory_order_relaxed)) {
      if (next > g->floor)
        g->floor = next;
      if (next > g->cap)
        g->cap = next;
      dead_prune(g);
      break;
    }
  }
  logical =
      units_of_value(g, atomic_load_explicit(&g->state, memory_order_relaxed));
  if (logical > wall) {
    int64_t from = g->seen_units > wall ? g->seen_units : wall;
    if (logical > from)
      atomic_fetch_add_explicit(&g->borrowed, (uint64_t)(logical - from),
                                memory_order_relaxed);
    atomic_store_explicit(&g->ahead_ms, (logical - wall) * g->layout.unit_ms,
                          memory_order_relaxed);
  } else {
    atomic_store_explicit(&g->ahead_ms, 0, memory_order_relaxed);
  }
  g->seen_units = logical;
}

/* Make "now + max_ahead + window" durable, then allow IDs up to it. Called
** with mu held; drops it around the file write so callers are not blocked
** by the fsync. */
int frond__gen_extend_reservation(frond_gen *g, int64_t now, frond_error *err) {
  int64_t target = units_of(g, now + g->opt.max_ahead_ms + g->opt.window_ms);
  frond__hw_record rec;
  int rc;
  if (target > g->tmax)
    target = g->tmax;
  if (target <= g->reserved_units)
    return 0;
  hw_record(g, target, g->seq_mask, 0, &rec);
  pthread_mutex_unlock(&g->mu);
  rc = frond__hw_write(g->hw, &rec, err);
  pthread_mutex_lock(&g->mu);
  if (rc != 0)
    return rc;
  if (target > g->reserved_units)
    g->reserved_units = target;
  atomic_store_explicit(&g->reserved_ms, ms_of(g, g->reserved_units),
                        memory_order_relaxed);
  atomic_fetch_add_explicit(&g->reservations, 1, memory_order_relaxed);
  return 0;
}

static int needs_renewal(const frond_gen *g, int64_t now) {
  int64_t horizon = now + g->opt.max_ahead_ms + g->opt.window_ms / 2;
  return g->renew_wanted || units_of(g, horizon) > g->reserved_units;
}

/* May the ticker sleep now? Only when healthy and nobody waits. Expects
** mu held. */
static int may_sleep(const frond_gen *g, int64_t idle_ns) {
  return g->sleep_ns > 0 && idle_ns >= g->sleep_ns && g->waiting == 0 &&
         !g->renew_wanted && g->bg_err.code == 0;
}

void *frond__gen_ticker(void *arg) {
  frond_gen *g = arg;
  int64_t idle_since = frond__mono_ns();
  uint64_t left = 0; /* state as the previous tick left it */
  pthread_mutex_lock(&g->mu);
  while (!g->stop) {
    int64_t now, mono;
    if (atomic_load_explicit(&g->asleep, memory_order_relaxed)) {
      /* A call (frond__gen_wake) or close wakes it. */
      pthread_cond_wait(&g->cv, &g->mu);
      if (!atomic_load_explicit(&g->asleep, memory_order_relaxed)) {
        idle_since = frond__mono_ns();
        left = 0;
      }
      continue;
    }
    now = clock_now(g);
    mono = frond__mono_ns();
    /* A claim (or a raise) since the last tick: not idle. */
    if (atomic_load_explicit(&g->state, memory_order_relaxed) != left)
      idle_since = mono;
    follow_clock(g, now);
    if (g->hw != NULL && needs_renewal(g, now)) {
      frond_error e = {0, ""};
      int rc = frond__gen_extend_reservation(g, now, &e);
      if (rc != 0) {
        /* Log each new failure once; keep retrying every tick. */
        if (g->bg_err.code == 0)
          frond_log(FROND_LOG_ERROR,
                    "snowflake node %" PRIu64
                    ": cannot extend the high-water reservation: %s",
                    g->node, e.message);
        g->bg_err = e;
      } else {
        if (g->bg_err.code != 0)
          frond_log(FROND_LOG_INFO,
                    "snowflake node %" PRIu64 ": high-water file writable "
                    "again",
                    g->node);
        g->bg_err.code = 0;
        g->renew_wanted = 0;
      }
      now = clock_now(g);
    }
    left = atomic_load_explicit(&g->state, memory_order_relaxed);
    if (may_sleep(g, mono - idle_since)) {
      /* Limit 0 first: no call may go on using a limit from a clock that
      ** is no longer followed. */
      atomic_store_explicit(&g->asleep, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&g->sleeps, 1, memory_order_relaxed);
      atomic_store_explicit(&g->ahead_ms, 0, memory_order_relaxed);
      publish_limit(g, now);
      continue;
    }
    publish_limit(g, now);
    pthread_cond_broadcast(&g->cv);
    frond__cond_wait_until(&g->cv, &g->mu, frond__mono_ns() + g->period_ns);
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

/* The first call after the ticker fell asleep: follow the clock as the
** ticker would (so that the IDs carry the current time) and wake it. The
** caller publishes the limit. Expects mu held. */
static void wake(frond_gen *g) {
  atomic_store_explicit(&g->asleep, 0, memory_order_relaxed);
  follow_clock(g, clock_now(g));
  pthread_cond_broadcast(&g->cv);
}

int frond__gen_exhausted(const frond_gen *g, frond_error *err) {
  char when[40];
  /* The generator's end: the layout's, or a little before it (tmax). */
  frond__format_rfc3339(ms_of(g, g->tmax + 1), when, sizeof(when));
  return frond__fail(err, FROND_ETIME_EXHAUSTED,
                     "layout '%s' ran out of time bits on %s: it can issue no "
                     "more IDs; move to a layout with a later end",
                     g->spec, when);
}

static int fence_reached(frond_gen *g, int64_t waited_ms, frond_error *err) {
  char when[40];
  int64_t f = atomic_load_explicit(&g->fence_ms, memory_order_relaxed);
  frond__format_rfc3339(f, when, sizeof(when));
  atomic_fetch_add_explicit(&g->fence_refused, 1, memory_order_relaxed);
  return frond__fail(err, FROND_ECOORD,
                     "snowflake node %" PRIu64 " reached its coordinator "
                     "fence %s (unix ms %" PRId64 "): the coordinator has not "
                     "confirmed a later one (waited %" PRId64 " ms)",
                     g->node, when, f, waited_ms);
}

static int clock_behind(const frond_gen *g, int64_t now, int64_t units,
                        frond_error *err) {
  char wall[40], logical[40];
  frond__format_rfc3339(now, wall, sizeof(wall));
  frond__format_rfc3339(ms_of(g, units), logical, sizeof(logical));
  return frond__fail(err, FROND_ECLOCK_BEHIND,
                     "wall clock %s is %" PRId64 " ms behind the generator's "
                     "clock %s (max_ahead %" PRId64 " ms, max_wait %" PRId64
                     " ms)",
                     wall, ms_of(g, units) - now, logical, g->opt.max_ahead_ms,
                     g->opt.max_wait_ms);
}

/* A call whose last unit is beyond both the wall clock's bound and the
** coordinator's fence is stopped by the fence when the fence is the lower
** of the two: the clock catching up would not let it through, the
** coordinator must confirm a later fence. Expects mu held. */
static int fence_stops(const frond_gen *g, int64_t now, int64_t last_units) {
  return last_units > g->fence_units &&
         ms_of(g, g->fence_units - g->ahead_units) <= now;
}

/* Why a call that waited max_wait still cannot have its values. */
static int timed_out(frond_gen *g, int64_t now, int64_t last_units,
                     frond_error *err) {
  if (fence_stops(g, now, last_units))
    return fence_reached(g, g->opt.max_wait_ms, err);
  if (ms_of(g, last_units - g->ahead_units) > now)
    return clock_behind(g, now, last_units, err);
  if (last_units > g->reserved_units)
    return frond__fail(err, FROND_ECLOCK_BEHIND,
                       "the high-water reservation was not extended within "
                       "max_wait (%" PRId64 " ms)",
                       g->opt.max_wait_ms);
  if (last_units > g->fence_units)
    return fence_reached(g, g->opt.max_wait_ms, err);
  return frond__fail(err, FROND_ECLOCK_BEHIND,
                     "the calls waiting before this one were not served "
                     "within max_wait (%" PRId64 " ms)",
                     g->opt.max_wait_ms);
}

/* How long, at least, a failed call waits for the claims above its values
** to be given back before it gives up on them (dead_push). Their calls
** are in the slow path and give back at once; only a claim above that
** was issued, or a thread that does not run, makes it wait that long. */
#define HOLD_MIN_MS 50 /* frond.h's max_wait_ms says 50 ms */

static void held_remove(frond_gen *g, frond__gen_held *me) {
  frond__gen_held **p = &g->held;
  while (*p != NULL && *p != me)
    p = &(*p)->next;
  if (*p == me)
    *p = me->next;
}

/*
** The values [r, r + n) that a failed hot-path claim holds (r as the
** fetch-add returned it, with the seal bit when claimed while blocked).
** When nothing was added above them, give them back: state goes back to
** their first value (never below the floor), and on down through the
** values of calls waiting below. Else take them when every bound allows
** them now (a limit read a moment late refused them); else wait until the
** call above gives them back, a raise jumps over them, or they can be
** taken. Returns 1 when taken, 0 when the call holds nothing any more.
** Expects mu held; waits on cv.
*/
static int settle(frond_gen *g, uint64_t n, uint64_t r, int64_t deadline) {
  uint64_t v = r & ~FROND__GEN_SEALED, end = v + n;
  uint64_t next_unit = unit_value(g, units_of_value(g, v) + 1);
  frond__gen_held me = {v, end, 0, NULL};
  int listed = 0, rc = 0;
  int64_t hold_until = frond__mono_ns() + HOLD_MIN_MS * 1000000;
  if (hold_until < deadline)
    hold_until = deadline;
  for (;;) {
    uint64_t s = atomic_load_explicit(&g->state, memory_order_relaxed);
    int64_t now_ns;
    if (me.given || g->floor >= end)
      break; /* given back for it, or jumped over */
    if ((s & ~FROND__GEN_SEALED) == end) {
      uint64_t to = (s & FROND__GEN_SEALED) | (v < g->cap ? g->cap : v);
      if (!atomic_compare_exchange_strong_explicit(
              &g->state, &s, to, memory_order_relaxed, memory_order_relaxed))
        continue; /* a claim landed meanwhile: look again */
      if (listed)
        held_remove(g, &me);
      listed = 0;
      give_back_below(g, to);
      break;
    }
    if (!(r & FROND__GEN_SEALED) && !(s & FROND__GEN_SEALED) &&
        atomic_load_explicit(&g->blocked, memory_order_relaxed) == 0 &&
        v >= g->floor && end <= run_end(g, v) &&
        end <= bounds_limit(g, clock_now(g))) {
      rc = 1;
      break;
    }
    /* No ID (a gap value, or past the generator's end), with claims
    ** above: nothing to wait for. When every value from ours up to the
    ** word is no ID either, move the word back down to ours: the calls
    ** holding those hold nothing issuable, and later claims may hold the
    ** same values again. Else whoever gives back down to ours goes on
    ** through them. So the word does not climb while calls keep failing
    ** (a block, the layout's end). */
    if ((v >= run_end(g, v) && end <= next_unit) || v >= value_end(g)) {
      uint64_t top = s & ~FROND__GEN_SEALED, to = v < g->cap ? g->cap : v;
      if (top > to && (top <= next_unit || v >= value_end(g))) {
        uint64_t want = (s & FROND__GEN_SEALED) | to;
        if (!atomic_compare_exchange_strong_explicit(&g->state, &s, want,
                                                     memory_order_relaxed,
                                                     memory_order_relaxed))
          continue; /* a claim landed meanwhile: look again */
        give_back_below(g, want);
      } else if (top > end && end > g->cap) {
        dead_push(g, v, end);
      } /* else the word is at or below it already: nothing is held */
      break;
    }
    now_ns = frond__mono_ns();
    if (now_ns >= hold_until) {
      dead_push(g, v, end);
      break;
    }
    if (!listed) {
      me.next = g->held;
      g->held = &me;
      listed = 1;
    }
    frond__cond_wait_until(&g->cv, &g->mu,
                           now_ns + g->period_ns < hold_until
                               ? now_ns + g->period_ns
                               : hold_until);
  }
  if (listed)
    held_remove(g, &me);
  return rc;
}

/* Where a claim of n values made at cur lies: from *first, the n values
** in order, skipping the gaps (a claim may run on into later units, as
** the packed word's carry did); its last value is in unit *last_units, at
** *last when that unit exists. *first is cur, or the next unit's first
** value when cur is a gap value. */
static void place(const frond_gen *g, uint64_t cur, uint64_t n, uint64_t *first,
                  int64_t *last_units, uint64_t *last) {
  uint64_t per = g->seq_mask + 1, low = unit_offset(g, cur), off;
  if (units_of_value(g, cur) > g->tmax) { /* sealed, or the layout's end */
    *first = cur;
    *last_units = units_of_value(g, cur);
    *last = 0;
    return;
  }
  if (low >= per) {
    cur = unit_value(g, units_of_value(g, cur) + 1);
    low = 0;
  }
  off = low + n - 1;
  *first = cur;
  *last_units = units_of_value(g, cur) + (int64_t)(off / per);
  *last = *last_units > g->tmax ? 0 : unit_value(g, *last_units) | off % per;
}

/*
** A call for n values that the hot path could not take below `limit`;
** when `holds`, it holds the values [held, held + n) of its fetch-add.
** Under mu, first settle them: take them, or give them back. Then, in a
** loop: claim n values (compare-and-swap), in the cap's unit or from
** the next one's first value, when every bound allows them now; else wait
** when the wall clock, the reservation or the fence can allow them within
** max_wait; else fail. Nothing is claimed on failure.
**
** Calls that wait are served before new ones: while any waits, the limit
** is 0, so every new call comes here and waits once (a tick or a claim
** wakes it) before it may claim. Waiters then claim in whatever order they
** get the lock, so one that is not scheduled holds no one up. A call never
** fails while its values are allowed. max_wait counts from the lock.
*/
static int gen_slow(frond_gen *g, uint64_t n, int holds, uint64_t held,
                    uint64_t *first, frond_error *err) {
  int64_t deadline, wake_deadline = 0;
  int waited = 0, wanted = 0, queued = 0, rc = 0, cancel;
  /* Before the lock: the parent's ticker may have held it at the fork.
  ** The child's state is its own copy: nothing to give back. */
  if (gen_forked(g))
    return frond__gen_forked(g, err);
  /* A cancel inside a wait below would end the thread with mu locked,
  ** waiting raised and its values neither taken nor given back, settle's
  ** on-stack entry still in g->held: every later call would hang. So the
  ** call cannot be cancelled; a cancel asked meanwhile is acted on at the
  ** caller's next cancellation point, after the call has returned. */
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  pthread_mutex_lock(&g->mu);
  deadline = frond__mono_ns() + g->opt.max_wait_ms * 1000000;
  if (atomic_load_explicit(&g->asleep, memory_order_relaxed)) {
    wake(g);
    /* The reservation write the sleep skipped is owed to the sleep, not
    ** to a slow clock: the first call waits for it up to WAKE_RESERVE_MS
    ** even when max_wait is shorter (docs/safety.md). */
    wake_deadline = frond__mono_ns() + WAKE_RESERVE_MS * 1000000;
  }
  if (holds && settle(g, n, held, deadline)) {
    *first = held;
    goto done;
  }
  for (;;) {
    int blocked = atomic_load_explicit(&g->blocked, memory_order_relaxed);
    uint64_t cur = atomic_load_explicit(&g->state, memory_order_relaxed);
    uint64_t from, last;
    int64_t last_units, now, need_ms, remain_ns, wake_ns;
    place(g, cur, n, &from, &last_units, &last);
    if (blocked != 0) {
      rc = frond__fail(err, blocked,
                       "snowflake IDs are suspended on node %" PRIu64 ": %s",
                       g->node, frond_strerror(blocked));
      break;
    }
    if (last_units > g->tmax) { /* a sealed cur too: its unit is past */
      rc = frond__gen_exhausted(g, err);
      break;
    }
    now = clock_now(g);
    /* A call's turn: when nobody waits, or once it has waited itself; and
    ** always rather than fail at its deadline. */
    if (last < bounds_limit(g, now) &&
        ((queued ? waited : g->waiting == 0) || frond__mono_ns() >= deadline)) {
      if (atomic_compare_exchange_strong_explicit(&g->state, &cur, last + 1,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed)) {
        /* In a later unit: the hot path follows (publish_limit). */
        if (unit_value(g, last_units) > g->cap) {
          g->cap = unit_value(g, last_units);
          dead_prune(g);
        }
        *first = from;
        break;
      }
      continue; /* the hot path moved state meanwhile */
    }
    remain_ns = deadline - frond__mono_ns();
    /* More than max_ahead in front of the wall clock: wait only if the
    ** wall clock can catch up within max_wait. */
    need_ms = ms_of(g, last_units - g->ahead_units) - now;
    if (need_ms > 0 && need_ms > remain_ns / 1000000) {
      rc = fence_stops(g, now, last_units)
               ? fence_reached(g, g->opt.max_wait_ms, err)
               : clock_behind(g, now, last_units, err);
      break;
    }
    if (last_units > g->reserved_units && g->bg_err.code != 0) {
      rc = frond__fail(err, g->bg_err.code, "%s", g->bg_err.message);
      break;
    }
    if (last_units > g->fence_units && !wanted && g->want != NULL) {
      /* Ask once per call, without our lock: the coordinator may extend
      ** the fence from inside the hook. */
      wanted = 1;
      pthread_mutex_unlock(&g->mu);
      g->want(g->want_ctx);
      pthread_mutex_lock(&g->mu);
      continue;
    }
    if (remain_ns <= 0) {
      /* Past max_wait: only the first call after a sleep goes on, and only
      ** for the reservation, while the clock and the fence allow it. */
      if (!(need_ms <= 0 && last_units > g->reserved_units &&
            last_units <= g->fence_units && frond__mono_ns() < wake_deadline)) {
        rc = timed_out(g, now, last_units, err);
        break;
      }
      remain_ns = wake_deadline - frond__mono_ns();
    }
    if (last_units > g->reserved_units && !g->renew_wanted) {
      g->renew_wanted = 1;
      pthread_cond_broadcast(&g->cv); /* the ticker extends it now */
    }
    if (!queued) {
      queued = 1;
      g->waiting++;
      publish_limit(g, now);
    }
    waited = 1;
    /* The ticker wakes every waiter each period; a claim, a new fence, a
    ** block or a resume also do. */
    wake_ns =
        frond__mono_ns() + (need_ms > 0 ? need_ms * 1000000 : g->period_ns);
    frond__cond_wait_until(&g->cv, &g->mu,
                           wake_ns < frond__mono_ns() + remain_ns
                               ? wake_ns
                               : frond__mono_ns() + remain_ns);
  }
  if (queued)
    g->waiting--;
done:
  publish_limit(g, clock_now(g));
  if (g->waiting > 0)
    pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  pthread_setcancelstate(cancel, NULL);
  if (waited)
    atomic_fetch_add_explicit(&g->waits, 1, memory_order_relaxed);
  if (rc == FROND_ECLOCK_BEHIND)
    atomic_fetch_add_explicit(&g->clock_behind, 1, memory_order_relaxed);
  return rc;
}

static int64_t make_id(const frond_gen *g, uint64_t v) {
  /* The node ID fits the layout's node field; v is no gap value. */
  assert(g->node_part >> g->seq_bits == g->node &&
         g->node_part < UINT64_C(1) << g->time_shift);
  assert(v < run_end(g, v));
  return (int64_t)(v | g->node_part);
}

/* The IDs of n values claimed from `first` (place): one unit's run, or
** several, skipping the gaps between them. */
static void make_ids(const frond_gen *g, uint64_t first, size_t n,
                     int64_t *out) {
  uint64_t v = first, end = run_end(g, first);
  if (first + n <= end) {
    for (size_t i = 0; i < n; i++)
      out[i] = (int64_t)((first + i) | g->node_part);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    out[i] = make_id(g, v++);
    if (v == end) { /* the next unit's first value, also without a gap */
      v = unit_value(g, units_of_value(g, v - 1) + 1);
      end = run_end(g, v);
    }
  }
}

/* Claim the n values [*v, *v + n) by compare-and-swap when they lie
** below `limit` (so in the cap's unit's run); return nonzero, holding
** nothing, when they do not: the slow path claims them. Lock-free. Not a
** fetch-add as frond_gen_next's single value: a batch whose values ran
** past its unit's run would hold IDs and gap values both, and could be
** neither issued nor given back while claims above it were issued. The
** limit is read first: a limit read a moment early is one the claim could
** have seen (every bound in it only rises; a block seals the word, which
** fails the swap; a raise of the floor lands before the load of the word
** or fails the swap). */
static inline int claim(frond_gen *g, uint64_t n, uint64_t *v) {
  uint64_t lim = atomic_load_explicit(&g->limit, memory_order_acquire);
  uint64_t cur = atomic_load_explicit(&g->state, memory_order_relaxed);
  if (FROND__UNLIKELY(gen_forked(g)))
    return 1;
  while (cur + n <= lim)
    if (atomic_compare_exchange_weak_explicit(&g->state, &cur, cur + n,
                                              memory_order_relaxed,
                                              memory_order_relaxed)) {
      *v = cur;
      return 0;
    }
  return 1;
}

/* What every claim of n values from v must be (debug builds): not taken
** while sealed, from no gap value, within the layout's time, and no unit
** past the coordinator's fence (which only rises, so the limit the claim
** saw was below it). */
static inline void assert_claimed(const frond_gen *g, uint64_t v, uint64_t n) {
#ifndef NDEBUG
  uint64_t per = g->seq_mask + 1, low = unit_offset(g, v);
  int64_t last = units_of_value(g, v) + (int64_t)((low + n - 1) / per);
  int64_t fence = atomic_load_explicit(&g->fence_ms, memory_order_relaxed);
  assert((v & FROND__GEN_SEALED) == 0 && low < per);
  assert(last <= g->tmax);
  assert(fence == INT64_MAX || last <= fence_units_of(g, fence));
#else
  (void)g;
  (void)v;
  (void)n;
#endif
}

/* The slow half of the inline frond_gen_next (frond/inline.h): the call
** holds the value `held` it fetch-added. */
int frond__gen_next_slow(frond_gen *g, uint64_t held, int64_t *id,
                         frond_error *err) {
  uint64_t v;
  int rc = gen_slow(g, 1, 1, held, &v, err);
  if (rc != 0)
    return rc;
  assert_claimed(g, v, 1);
  *id = make_id(g, v);
  return 0;
}

/* The exported function, for callers that do not inline (FROND_NO_INLINE,
** bindings through a foreign-function interface). */
int(frond_gen_next)(frond_gen *g, int64_t *id, frond_error *err) {
  return frond__gen_next_inline(g, id, err);
}

int frond_gen_next_n(frond_gen *g, size_t n, int64_t *out, frond_error *err) {
  uint64_t v;
  if (n == 0 || n > g->max_count)
    return frond__fail(err, FROND_ECOUNT_INVALID,
                       "count %zu is not between 1 and %" PRIu64, n,
                       g->max_count);
  if (FROND__UNLIKELY(claim(g, n, &v) != 0)) {
    int rc = gen_slow(g, n, 0, 0, &v, err);
    if (rc != 0)
      return rc;
  }
  assert_claimed(g, v, n);
  make_ids(g, v, n, out);
  return 0;
}

int64_t frond_gen_high_water_ms(frond_gen *g) {
  /* state - 1: the last value handed out (state moves only by claims and
  ** by raises to values not handed out yet), or, while calls are in
  ** flight, one of theirs. */
  uint64_t v = atomic_load_explicit(&g->state, memory_order_relaxed) &
               ~FROND__GEN_SEALED;
  return ms_of(g, units_of_value(g, v > 0 ? v - 1 : 0));
}

void frond__gen_block(frond_gen *g, int code) {
  assert(code < 0);
  if (code >= 0)
    code = FROND_EINVAL;
  pthread_mutex_lock(&g->mu);
  atomic_store_explicit(&g->blocked, code, memory_order_relaxed);
  publish_limit(g, clock_now(g));
  /* Seal after the limit: a claim in flight either completed before this
  ** (and the high water shows it) or fails on the changed word. */
  atomic_fetch_or_explicit(&g->state, FROND__GEN_SEALED, memory_order_acq_rel);
  /* Last (release): whoever sees the count moved sees the seal. */
  atomic_fetch_add_explicit(&g->barriers, 1, memory_order_release);
  pthread_cond_broadcast(&g->cv); /* waiters fail now, not at max_wait */
  pthread_mutex_unlock(&g->mu);
}

void frond__gen_resume(frond_gen *g, int64_t after_ms, int64_t fence_ms) {
  pthread_mutex_lock(&g->mu);
  /* In this order: unseal and raise the floor first, the limit (release)
  ** last, so that no call that sees the new limit can claim a value below
  ** the floor. Until then the limit of a blocked generator is 0. */
  unseal_raise(g, after_ms > 0 ? value_after(g, after_ms) : 0);
  raise_fence(g, fence_ms);
  atomic_store_explicit(&g->blocked, 0, memory_order_relaxed);
  publish_limit(g, clock_now(g));
  atomic_fetch_add_explicit(&g->barriers, 1, memory_order_release);
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

void frond__gen_raise_floor(frond_gen *g, int64_t after_ms) {
  pthread_mutex_lock(&g->mu);
  raise_state(g, value_after(g, after_ms), FROND__GEN_SEALED);
  /* Calls waiting on values below the floor give up on them now. */
  publish_limit(g, clock_now(g));
  atomic_fetch_add_explicit(&g->barriers, 1, memory_order_release);
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

void frond__gen_set_fence(frond_gen *g, int64_t fence_ms) {
  pthread_mutex_lock(&g->mu);
  if (raise_fence(g, fence_ms)) {
    publish_limit(g, clock_now(g));
    pthread_cond_broadcast(&g->cv);
  }
  pthread_mutex_unlock(&g->mu);
}

void frond__gen_tick(frond_gen *g) {
  int64_t now;
  pthread_mutex_lock(&g->mu);
  now = clock_now(g);
  follow_clock(g, now);
  publish_limit(g, now);
  pthread_mutex_unlock(&g->mu);
}
