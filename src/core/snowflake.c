/*
** snowflake.c -- the snowflake generator.
**
** State is one atomic word, `state`, holding time << seq_bits | sequence: the
** next value to hand out. The ID is a value's time and sequence with the node
** bits OR-ed in between. A sequence overflow carries into time, which is how
** the logical clock borrows ahead of the wall clock.
**
** A second word, `limit`, holds the first packed value that may not be
** issued without a look at the clock and the lock:
**
**   limit = (min(wall + max_ahead, reservation, fence, last unit) + 1)
**           << seq_bits,                       0 while blocked
**
** where the reservation is the high-water file's durable time and the fence
** the coordinator's. Both only ever rise, so a limit read a moment late
** still never lets a value past anything durable.
**
** The hot path reads no clock and takes no lock: it loads `state`, loads
** `limit` (acquire) and, when the n values [cur, cur + n) lie below it,
** claims them with one compare-and-swap of state from cur to cur + n;
** anything else goes to the slow path. So a call that fails has moved
** nothing: `state` is always one past the last value handed out (or a start
** point no ID has used yet), and the high water reported from it, at run
** time or in the clean-close record, never counts values that were not
** issued. The slow path decides under `mu`: it re-reads the clock,
** republishes `limit`, and either claims the values itself (again by
** compare-and-swap), waits when the wall clock, the reservation or the fence
** can allow them within max_wait, or fails.
**
** Every writer that raises the floor (resume after a regained node ID, the
** ticker following the wall clock) raises `state` by compare-and-swap
** first and publishes `limit` (release) last: a call that sees the new
** limit sees the new state in its own compare-and-swap, and a call that
** still holds an older value of state fails that compare-and-swap and
** looks again.
**
** A background thread (the ticker) follows the wall clock about once per
** millisecond: it raises `state` to the current unit when the generator is
** idle (so IDs carry the current time), republishes `limit`, and keeps the
** high-water reservation of the file ahead of anything `limit` allows. A
** coordinator keeps its own fence ahead (frond__gen_set_fence) from its own
** thread; a call that reaches it asks for it at once through the `want`
** hook and waits up to max_wait.
**
** Starting: the logical clock begins above the high-water record (exactly:
** above the largest ID the record's layout could have issued there, so a
** changed layout never reissues a number) and above the coordinator's
** start_after_ms, waiting when that start is ahead of the clock by less
** than the start slack (frond__start_slack_ms) and refusing beyond.
**
** Locking: `mu` guards reserved_units, fence_units, the file, the block
** code's changes and the writes of `limit` (so that a stale clock reading
** never overwrites a newer one). The hot path takes no lock.
*/
#include "core/internal.h"
#include "os/highwater.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE_LINE 64

struct frond_gen {
  /* Written by every call: alone on its cache line. */
  _Alignas(CACHE_LINE) _Atomic uint64_t state;

  /* Read by every call, rarely written. */
  _Alignas(CACHE_LINE) _Atomic uint64_t limit;
  uint64_t node_part; /* node << seq_bits */
  uint64_t seq_mask;
  uint64_t max_count; /* largest n for next_n */
  unsigned seq_bits;
  unsigned time_shift; /* seq_bits + node_bits */

  /* Cold. */
  _Alignas(CACHE_LINE) frond_layout layout;
  uint64_t node;
  frond_gen_options opt;
  int64_t tmax;            /* last time unit the layout can express */
  int64_t ahead_units;     /* max_ahead_ms in whole units */
  int64_t slack_ms;        /* frond__start_slack_ms for this generator */
  int64_t period_ns;       /* ticker period */
  uint64_t rng;            /* ticker only: random sequence starts */
  int64_t seen_units;      /* ticker only: logical units at the previous tick */
  void (*want)(void *ctx); /* coordinator: extend the fence now */
  void *want_ctx;

  pthread_mutex_t mu;
  pthread_cond_t cv; /* wakes the ticker, and waiters for reservation/fence */
  pthread_t thread;
  int stop;               /* under mu */
  int renew_wanted;       /* under mu: a caller waits for the reservation */
  int waiting;            /* under mu: calls waiting in the slow path */
  int64_t reserved_units; /* under mu; tmax without a file */
  int64_t fence_units;    /* under mu; tmax without a coordinator fence */
  frond__hw *hw;
  char spec[128];
  frond_error bg_err; /* under mu: the ticker's last failure, code 0: none */

  _Atomic int blocked;      /* written under mu */
  _Atomic int64_t fence_ms; /* written under mu; INT64_MAX: none */
  _Atomic uint64_t waits, clock_behind, reservations, borrowed, fence_refused;
  _Atomic int64_t ahead_ms, reserved_ms;
};

static int64_t clock_now(const frond_gen *g) {
  return g->opt.clock(g->opt.clock_ctx);
}

/* The unit containing unix ms t (floor, also before the epoch). */
static int64_t units_of(const frond_gen *g, int64_t t) {
  int64_t d = t - g->layout.epoch_ms;
  int64_t u = d / g->layout.unit_ms;
  if (d < 0 && u * g->layout.unit_ms != d)
    u--;
  return u;
}

static int64_t ms_of(const frond_gen *g, int64_t units) {
  return g->layout.epoch_ms + units * g->layout.unit_ms;
}

static int64_t units_of_value(const frond_gen *g, uint64_t v) {
  return (int64_t)(v >> g->seq_bits);
}

/* The first value the clock reading `now`, the reservation, the fence and
** the layout allow no call to reach. Expects mu held. */
static uint64_t bounds_limit(const frond_gen *g, int64_t now) {
  int64_t l = units_of(g, now) + g->ahead_units;
  if (l > g->reserved_units)
    l = g->reserved_units;
  if (l > g->fence_units)
    l = g->fence_units;
  if (l > g->tmax)
    l = g->tmax;
  return l < 0 ? 0 : (uint64_t)(l + 1) << g->seq_bits;
}

/* Recompute `limit` from the clock reading `now`: 0 (every call to the
** slow path) while blocked or while calls wait there, so that no call
** overtakes them on the hot path. Release: whoever reads the new limit
** also sees every write made before it under mu (a raised state above
** all). Expects mu held. */
static void publish_limit(frond_gen *g, int64_t now) {
  uint64_t lim = bounds_limit(g, now);
  if (atomic_load_explicit(&g->blocked, memory_order_relaxed) != 0 ||
      g->waiting > 0)
    lim = 0;
  atomic_store_explicit(&g->limit, lim, memory_order_release);
}

/* Raise state to at least v (never lower it). Expects mu held. */
static void raise_state(frond_gen *g, uint64_t v) {
  uint64_t cur = atomic_load_explicit(&g->state, memory_order_relaxed);
  while (cur < v &&
         !atomic_compare_exchange_weak_explicit(
             &g->state, &cur, v, memory_order_relaxed, memory_order_relaxed))
    ;
}

/* The first value above the unit of unix ms t: where a successor of a
** holder whose fence (or high water) is t starts. Clamped to [0, the
** value past the last unit]. */
static uint64_t value_after(const frond_gen *g, int64_t t) {
  int64_t u = t < g->layout.epoch_ms ? 0 : units_of(g, t) + 1;
  if (u > g->tmax + 1)
    u = g->tmax + 1;
  return (uint64_t)u << g->seq_bits;
}

/* The last unit a fence at unix ms t allows: the unit containing t (-1
** before the epoch, at most the layout's last). */
static int64_t fence_units_of(const frond_gen *g, int64_t t) {
  int64_t u = t < g->layout.epoch_ms ? -1 : units_of(g, t);
  return u > g->tmax ? g->tmax : u;
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
** borrowing. Ticker only, mu held. */
static void follow_clock(frond_gen *g, int64_t now) {
  int64_t wall = units_of(g, now);
  uint64_t cur = atomic_load_explicit(&g->state, memory_order_relaxed);
  int64_t logical;
  while (units_of_value(g, cur) < wall && wall <= g->tmax) {
    uint64_t next = ((uint64_t)wall << g->seq_bits) | start_seq(g);
    if (atomic_compare_exchange_weak_explicit(
            &g->state, &cur, next, memory_order_relaxed, memory_order_relaxed))
      break;
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

static void hw_record(const frond_gen *g, int64_t units, uint64_t seq,
                      int clean, frond__hw_record *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->node = g->node;
  rec->time_ms = ms_of(g, units);
  rec->seq = seq;
  rec->clean = clean;
  snprintf(rec->layout, sizeof(rec->layout), "%s", g->spec);
}

/* Make "now + max_ahead + window" durable, then allow IDs up to it. Called
** with mu held; drops it around the file write so callers are not blocked
** by the fsync. */
static int extend_reservation(frond_gen *g, int64_t now, frond_error *err) {
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

static void *ticker_main(void *arg) {
  frond_gen *g = arg;
  pthread_mutex_lock(&g->mu);
  while (!g->stop) {
    int64_t now = clock_now(g);
    follow_clock(g, now);
    if (g->hw != NULL && needs_renewal(g, now)) {
      frond_error e = {0, ""};
      int rc = extend_reservation(g, now, &e);
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
    publish_limit(g, now);
    pthread_cond_broadcast(&g->cv);
    frond__cond_wait_until(&g->cv, &g->mu, frond__mono_ns() + g->period_ns);
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

static int exhausted(const frond_gen *g, frond_error *err) {
  char when[40];
  frond__format_rfc3339(frond_layout_end_ms(&g->layout), when, sizeof(when));
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

/* Why a call that waited max_wait still cannot have its values. */
static int timed_out(frond_gen *g, int64_t now, int64_t last_units,
                     frond_error *err) {
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

/*
** A call for n values that the hot path could not claim below `limit`.
** Under mu, in a loop: claim them (compare-and-swap, as the hot path) when
** every bound allows them now; else wait when the wall clock, the
** reservation or the fence can allow them within max_wait; else fail.
** Nothing is claimed on failure.
**
** Calls that wait are served before new ones: while any waits, the limit
** is 0, so every new call comes here and waits once (a tick or a claim
** wakes it) before it may claim. Waiters then claim in whatever order they
** get the lock, so one that is not scheduled holds no one up. A call never
** fails while its values are allowed. max_wait counts from the lock.
*/
static int gen_slow(frond_gen *g, uint64_t n, uint64_t *first,
                    frond_error *err) {
  int64_t deadline;
  int waited = 0, wanted = 0, queued = 0, rc = 0;
  pthread_mutex_lock(&g->mu);
  deadline = frond__mono_ns() + g->opt.max_wait_ms * 1000000;
  for (;;) {
    int blocked = atomic_load_explicit(&g->blocked, memory_order_relaxed);
    uint64_t cur = atomic_load_explicit(&g->state, memory_order_relaxed);
    uint64_t last = cur + n - 1;
    int64_t last_units = units_of_value(g, last), now, need_ms, remain_ns,
            wake_ns;
    if (blocked != 0) {
      rc = frond__fail(err, blocked,
                       "snowflake IDs are suspended on node %" PRIu64 ": %s",
                       g->node, frond_strerror(blocked));
      break;
    }
    if (last_units > g->tmax || last >= (UINT64_C(1) << 63)) {
      rc = exhausted(g, err);
      break;
    }
    now = clock_now(g);
    /* A call's turn: when nobody waits, or once it has waited itself; and
    ** always rather than fail at its deadline. */
    if (last < bounds_limit(g, now) &&
        ((queued ? waited : g->waiting == 0) || frond__mono_ns() >= deadline)) {
      if (atomic_compare_exchange_strong_explicit(&g->state, &cur, cur + n,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed)) {
        *first = cur;
        break;
      }
      continue; /* the hot path moved state meanwhile */
    }
    remain_ns = deadline - frond__mono_ns();
    /* More than max_ahead in front of the wall clock: wait only if the
    ** wall clock can catch up within max_wait. */
    need_ms = ms_of(g, last_units - g->ahead_units) - now;
    if (need_ms > 0 && need_ms > remain_ns / 1000000) {
      rc = clock_behind(g, now, last_units, err);
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
      rc = timed_out(g, now, last_units, err);
      break;
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
                           wake_ns < deadline ? wake_ns : deadline);
  }
  if (queued)
    g->waiting--;
  publish_limit(g, clock_now(g));
  if (g->waiting > 0)
    pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  if (waited)
    atomic_fetch_add_explicit(&g->waits, 1, memory_order_relaxed);
  if (rc == FROND_ECLOCK_BEHIND)
    atomic_fetch_add_explicit(&g->clock_behind, 1, memory_order_relaxed);
  return rc;
}

static int64_t make_id(const frond_gen *g, uint64_t v) {
  return (int64_t)(((v >> g->seq_bits) << g->time_shift) | g->node_part |
                   (v & g->seq_mask));
}

/* Claim the n values [*v, *v + n) if they lie below `limit`; return 0 with
** *v set, or nonzero when the slow path must decide. Lock-free. */
static inline int claim(frond_gen *g, uint64_t n, uint64_t *v) {
  uint64_t cur = atomic_load_explicit(&g->state, memory_order_relaxed);
  do {
    if (FROND__UNLIKELY(cur + n >
                        atomic_load_explicit(&g->limit, memory_order_acquire)))
      return -1;
  } while (!atomic_compare_exchange_weak_explicit(
      &g->state, &cur, cur + n, memory_order_relaxed, memory_order_relaxed));
  *v = cur;
  return 0;
}

int frond_gen_next(frond_gen *g, int64_t *id, frond_error *err) {
  uint64_t v;
  if (FROND__UNLIKELY(claim(g, 1, &v) != 0)) {
    int rc = gen_slow(g, 1, &v, err);
    if (rc != 0)
      return rc;
  }
  *id = make_id(g, v);
  return 0;
}

int frond_gen_next_n(frond_gen *g, size_t n, int64_t *out, frond_error *err) {
  uint64_t v;
  if (n == 0 || n > g->max_count)
    return frond__fail(err, FROND_ECOUNT_INVALID,
                       "count %zu is not between 1 and %" PRIu64, n,
                       g->max_count);
  if (FROND__UNLIKELY(claim(g, n, &v) != 0)) {
    int rc = gen_slow(g, n, &v, err);
    if (rc != 0)
      return rc;
  }
  for (size_t i = 0; i < n; i++)
    out[i] = make_id(g, v + i);
  return 0;
}

void frond_gen_options_init(frond_gen_options *opts) {
  memset(opts, 0, sizeof(*opts));
  opts->max_ahead_ms = FROND_DEFAULT_MAX_AHEAD_MS;
  opts->max_wait_ms = -1;
  opts->window_ms = FROND_DEFAULT_WINDOW_MS;
  opts->seq_start = FROND_SEQ_ZERO;
}

int64_t frond__start_slack_ms(int64_t max_ahead_ms, int64_t window_ms,
                              int64_t max_wait_ms) {
  /* A holder issues up to max_ahead in front of its clock, makes durable
  ** up to a window beyond that, and a call may wait max_wait on top. */
  return max_ahead_ms + window_ms + max_wait_ms;
}

/* Where to start after the high-water record `rec`: above the largest ID
** the record's layout could have issued (frond__hw_first_after). When the
** layout changed and that start lies beyond what a restart waits for, or
** beyond the layout's end, refuse here, naming both layouts; the clock rule
** for the rest is wait_for_start's. */
static int start_after_record(frond_gen *g, const frond__hw_record *rec,
                              int64_t now, uint64_t *start, frond_error *err) {
  const char *path = g->opt.highwater_path;
  frond_error e = {0, ""};
  char was[40], need[40];
  int64_t last_id, u;
  int rc = frond__hw_first_after(rec, &g->layout, g->node, start, &last_id, &e);
  if (rc != 0)
    return frond__fail(err, rc, "%s: %s", path, e.message);
  if (strcmp(rec->layout, g->spec) == 0)
    return 0;
  u = units_of_value(g, *start);
  frond__format_rfc3339(rec->time_ms, was, sizeof(was));
  if (u > g->tmax)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "%s: written under layout '%s' up to ID %" PRId64
                       " (%s); layout '%s' has no ID above it for node %" PRIu64
                       ": keep the old layout",
                       path, rec->layout, last_id, was, g->spec, g->node);
  if (ms_of(g, u) - now > g->slack_ms) {
    frond__format_rfc3339(ms_of(g, u), need, sizeof(need));
    return frond__fail(
        err, FROND_ELAYOUT_INVALID,
        "%s: written under layout '%s' up to ID %" PRId64
        " (%s); layout '%s' passes that ID only from %s, %" PRId64
        " ms ahead of the clock (a restart waits at most %" PRId64
        " ms): keep the old layout or choose one whose IDs are "
        "above it now",
        path, rec->layout, last_id, was, g->spec, need, ms_of(g, u) - now,
        g->slack_ms);
  }
  frond_log(FROND_LOG_WARN,
            "%s: written under layout '%s' up to ID %" PRId64
            "; starting under layout '%s' above it",
            path, rec->layout, last_id, g->spec);
  return 0;
}

/* Before issuing anything, wait for the wall clock to come within max_ahead
** of `start`; refuse when it is further behind than a crash can explain
** (the start slack). */
static int wait_for_start(frond_gen *g, uint64_t start, const char *source,
                          frond_error *err) {
  int64_t start_ms = ms_of(g, units_of_value(g, start));
  int64_t now = clock_now(g);
  int64_t deadline;
  if (start_ms - now > g->slack_ms) {
    char a[40], b[40];
    frond__format_rfc3339(start_ms, a, sizeof(a));
    frond__format_rfc3339(now, b, sizeof(b));
    return frond__fail(err, FROND_ECLOCK_BEHIND,
                       "high-water time %s (%s) is %" PRId64 " ms ahead of "
                       "the clock %s, more than a crash explains (%" PRId64
                       " ms): the clock went back across the restart",
                       a, source, start_ms - now, b, g->slack_ms);
  }
  deadline = frond__mono_ns() + (g->slack_ms + 1000) * 1000000;
  while (start_ms - now > g->opt.max_ahead_ms) {
    if (frond__mono_ns() > deadline)
      return frond__fail(err, FROND_ECLOCK_BEHIND,
                         "the clock did not reach the high-water time (%s) "
                         "in time",
                         source);
    frond__sleep_ns((start_ms - now - g->opt.max_ahead_ms > 10 ? 10 : 1) *
                    1000000);
    now = clock_now(g);
  }
  return 0;
}

static int init_options(frond_gen *g, const frond_layout *l,
                        const frond_gen_options *opts,
                        const frond__gen_fence *f, frond_error *err) {
  int64_t window;
  if (opts != NULL)
    g->opt = *opts;
  else
    frond_gen_options_init(&g->opt);
  if (g->opt.clock == NULL)
    g->opt.clock = frond_clock_realtime;
  if (g->opt.max_wait_ms == -1) {
    g->opt.max_wait_ms = FROND_DEFAULT_MAX_WAIT_MS;
    if (l->unit_ms >= 1 && l->unit_ms <= 86400000 &&
        2 * l->unit_ms > g->opt.max_wait_ms)
      g->opt.max_wait_ms = 2 * l->unit_ms;
  }
  if (g->opt.max_ahead_ms < 0 || g->opt.max_wait_ms < 0 ||
      g->opt.window_ms < 1 || g->opt.max_wait_ms > 3600000 ||
      g->opt.max_ahead_ms > 86400000 || g->opt.window_ms > 86400000 ||
      (f != NULL && (f->window_ms < 0 || f->window_ms > 86400000)))
    return frond__fail(err, FROND_EINVAL,
                       "max_ahead_ms (0..86400000), max_wait_ms (0..3600000) "
                       "or window_ms (1..86400000) out of range");
  window = g->opt.window_ms;
  if (f != NULL && f->window_ms > window)
    window = f->window_ms;
  g->slack_ms =
      frond__start_slack_ms(g->opt.max_ahead_ms, window, g->opt.max_wait_ms);
  return 0;
}

/* Read the high-water file and move *start above its record. */
static int start_from_file(frond_gen *g, int64_t now, uint64_t *start,
                           const char **source, frond_error *err) {
  frond__hw_record rec;
  uint64_t s;
  int rc;
  if ((rc = frond__hw_open(&g->hw, g->opt.highwater_path, err)) != 0)
    return rc;
  rc = frond__hw_read(g->hw, &rec, err);
  if (rc != 0)
    return rc < 0 ? rc : 0; /* 1: no file, a first start */
  if (rec.node != g->node)
    return frond__fail(err, FROND_EINVAL,
                       "%s belongs to node %" PRIu64 ", not %" PRIu64,
                       g->opt.highwater_path, rec.node, g->node);
  if ((rc = start_after_record(g, &rec, now, &s, err)) != 0)
    return rc;
  if (s > *start) {
    *start = s;
    *source = g->opt.highwater_path;
  }
  return 0;
}

static int gen_init(frond_gen *g, const frond_layout *l, uint64_t node,
                    const frond_gen_options *opts, const frond__gen_fence *f,
                    frond_error *err) {
  int64_t now, wall, after;
  uint64_t start, max_count;
  const char *source = NULL;
  int rc;
  if ((rc = init_options(g, l, opts, f, err)) != 0)
    return rc;
  now = clock_now(g);
  if ((rc = frond_layout_validate(l, now, err)) != 0)
    return rc;
  g->layout = *l;
  frond_layout_format(l, g->spec, sizeof(g->spec));
  if (node > frond_layout_max_node(l))
    return frond__fail(err, FROND_ENODE_RANGE,
                       "node ID %" PRIu64
                       " is above the layout's maximum %" PRIu64
                       " (%u node bits)",
                       node, frond_layout_max_node(l), l->node_bits);
  g->node = node;
  g->seq_bits = l->seq_bits;
  g->seq_mask = (UINT64_C(1) << l->seq_bits) - 1;
  g->time_shift = l->seq_bits + l->node_bits;
  g->node_part = node << l->seq_bits;
  /* 2^seq_bits * 1000, at most 2^48 (past any array a caller can pass). */
  max_count = l->seq_bits > 38 ? UINT64_C(1) << 48 : (g->seq_mask + 1) * 1000;
  g->max_count = max_count > SIZE_MAX ? SIZE_MAX : max_count;
  g->tmax = (INT64_C(1) << l->time_bits) - 1;
  g->ahead_units = g->opt.max_ahead_ms / l->unit_ms;
  g->period_ns = l->unit_ms >= 100 ? 10000000 : 1000000;
  g->rng = (uint64_t)frond__mono_ns() * UINT64_C(0x9e3779b97f4a7c15) | 1;
  g->reserved_units = g->tmax;
  g->fence_units = g->tmax;
  atomic_store(&g->fence_ms, INT64_MAX);
  if (f != NULL) {
    atomic_store(&g->fence_ms, f->fence_ms);
    g->fence_units = fence_units_of(g, f->fence_ms);
    g->want = f->want;
    g->want_ctx = f->ctx;
  }

  wall = units_of(g, now);
  if (wall > g->tmax)
    return exhausted(g, err);
  start = (uint64_t)(wall < 0 ? 0 : wall) << g->seq_bits;
  if (g->opt.highwater_path != NULL &&
      (rc = start_from_file(g, now, &start, &source, err)) != 0)
    return rc;
  after = g->opt.start_after_ms;
  if (f != NULL && f->start_after_ms > after)
    after = f->start_after_ms;
  if (after > 0 && value_after(g, after) > start) {
    start = value_after(g, after);
    source = "the coordinator";
  }
  if (units_of_value(g, start) > g->tmax)
    return exhausted(g, err);
  if (source != NULL && (rc = wait_for_start(g, start, source, err)) != 0)
    return rc;
  now = clock_now(g);
  wall = units_of(g, now);
  if (wall > units_of_value(g, start))
    start = (uint64_t)wall << g->seq_bits;
  atomic_store(&g->state, start);
  g->seen_units = units_of_value(g, start);

  if (g->hw != NULL) {
    /* Reserve before the first ID: nothing is issued above a durable
    ** reservation, not even in the first window. */
    g->reserved_units = units_of_value(g, start) - 1;
    pthread_mutex_lock(&g->mu);
    rc = extend_reservation(g, now, err);
    pthread_mutex_unlock(&g->mu);
    if (rc != 0)
      return rc;
  }
  pthread_mutex_lock(&g->mu);
  publish_limit(g, now);
  pthread_mutex_unlock(&g->mu);
  return 0;
}

int frond__gen_create_fenced(frond_gen **out, const frond_layout *l,
                             uint64_t node, const frond_gen_options *opts,
                             const frond__gen_fence *f, frond_error *err) {
  frond_gen *g;
  int rc;
  if (out == NULL || l == NULL)
    return frond__fail(err, FROND_EINVAL, "out and layout must not be NULL");
  if (posix_memalign((void **)&g, CACHE_LINE, sizeof(*g)) != 0)
    return frond__fail(err, FROND_ENOMEM, NULL);
  memset(g, 0, sizeof(*g));
  pthread_mutex_init(&g->mu, NULL);
  frond__cond_init(&g->cv);
  rc = gen_init(g, l, node, opts, f, err);
  if (rc == 0 && pthread_create(&g->thread, NULL, ticker_main, g) != 0)
    rc = frond__fail(err, FROND_ENOMEM, "cannot start the clock thread");
  if (rc != 0) {
    frond__hw_close(g->hw);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
    return rc;
  }
  *out = g;
  return 0;
}

int frond_gen_create(frond_gen **out, const frond_layout *l, uint64_t node,
                     const frond_gen_options *opts, frond_error *err) {
  return frond__gen_create_fenced(out, l, node, opts, NULL, err);
}

int frond_gen_close(frond_gen *g, frond_error *err) {
  int rc = 0;
  if (g == NULL)
    return 0;
  pthread_mutex_lock(&g->mu);
  g->stop = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  pthread_join(g->thread, NULL);
  if (g->hw != NULL) {
    /* state - 1 is at or above every value handed out; no value above the
    ** reservation was ever handed out. */
    uint64_t last = atomic_load(&g->state) - 1;
    frond__hw_record rec;
    if (units_of_value(g, last) > g->reserved_units)
      last = (uint64_t)g->reserved_units << g->seq_bits | g->seq_mask;
    hw_record(g, units_of_value(g, last), last & g->seq_mask, 1, &rec);
    rc = frond__hw_write(g->hw, &rec, err);
    frond__hw_close(g->hw);
  }
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
  free(g);
  return rc;
}

const frond_layout *frond_gen_layout(const frond_gen *g) {
  return &g->layout;
}

uint64_t frond_gen_node(const frond_gen *g) {
  return g->node;
}

int64_t frond_gen_high_water_ms(frond_gen *g) {
  /* state - 1: the last value handed out (state moves only by claims and
  ** by raises to values not handed out yet). */
  uint64_t v = atomic_load_explicit(&g->state, memory_order_relaxed);
  return ms_of(g, units_of_value(g, v > 0 ? v - 1 : 0));
}

void frond__gen_block(frond_gen *g, int code) {
  assert(code < 0);
  if (code >= 0)
    code = FROND_EINVAL;
  pthread_mutex_lock(&g->mu);
  atomic_store_explicit(&g->blocked, code, memory_order_relaxed);
  publish_limit(g, clock_now(g));
  pthread_cond_broadcast(&g->cv); /* waiters fail now, not at max_wait */
  pthread_mutex_unlock(&g->mu);
}

void frond__gen_resume(frond_gen *g, int64_t after_ms, int64_t fence_ms) {
  pthread_mutex_lock(&g->mu);
  /* In this order: the floor first, the limit (release) last, so that no
  ** call that sees the new limit can claim a value below the floor. */
  if (after_ms > 0)
    raise_state(g, value_after(g, after_ms));
  raise_fence(g, fence_ms);
  atomic_store_explicit(&g->blocked, 0, memory_order_relaxed);
  publish_limit(g, clock_now(g));
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

void frond_gen_set_blocked(frond_gen *g, int code) {
  if (code != 0)
    frond__gen_block(g, code);
  else
    frond__gen_resume(g, 0, INT64_MIN);
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
  pthread_mutex_lock(&g->mu);
  out->last_error = g->bg_err.code;
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
