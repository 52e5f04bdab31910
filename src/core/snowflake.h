/* SPDX-License-Identifier: Apache-2.0 */
/*
** snowflake.h -- the snowflake generator's state, private to snowflake.c
** (issuing) and snowflake_start.c (creating, starting, closing).
**
** State is one atomic word, `state`, holding a value laid out as the ID
** with its node field zero: time << time_shift | sequence. The ID is the
** value with the node bits OR-ed in, one instruction from the fetched
** value. The values between a unit's last sequence and the next unit's
** first (the node field's span, the unit's "gap") are no ID: a sequence
** that runs past its unit's last lands there, and the slow path moves on
** to the next unit's first value, which is how the logical clock borrows
** ahead of the wall clock.
**
** A second word, `limit`, holds the first value that may not be issued
** without a look at the clock and the lock:
**
**   limit = min((min(wall + max_ahead, reservation, fence, last unit) + 1)
**               << time_shift, run_end(cap)),        0 while blocked
**
** where the reservation is the high-water file's durable time and the fence
** the coordinator's. Both only ever rise, so a limit read a moment late
** still never lets a value past anything durable. run_end(cap) is the
** end of the sequence in the unit of `cap`: `state` never lies below cap,
** which only rises, so every value below a limit ever published and at or
** above the cap is a sequence of the cap's unit, never a gap value (a
** limit published for an older cap lies below the newer cap, and allows
** nothing). The hot path so issues within one unit; the slow path crosses
** to the next, raising the cap to its first value.
**
** The hot path reads no clock and takes no lock: it loads `limit`, then
** claims one value with one fetch-add to `state`: when it lies below the
** limit it is the call's; anything else goes to the slow path, still
** holding it. A fetch-add costs what the reference costs and never
** retries under contention; a compare-and-swap after a load of `state`
** cost 1.8x a fetch-add with one thread and 2x with two (bench/RESULTS.md,
** 2026-11-28). A batch (next_n) claims [cur, cur + n) by compare-and-swap
** only when it lies below the limit, and holds nothing otherwise: a batch
** that ran past its unit's sequence would hold IDs and gap values both.
** A single value held past the sequence is a gap value: its call moves
** the word back down to it when every value above it is no ID either,
** else leaves it at once to whoever gives back down to it (a dead range,
** below); so failing calls (a block, the layout's end) never push the
** word up for good.
**
** A call that fails gives back what it holds, under `mu`, so that it
** consumes nothing: when nothing was added above its values, it moves
** `state` back to their first value (compare-and-swap), and on down
** through the values of calls waiting below (`held`), which it gives back
** for them; when something was, it takes its values if every bound allows
** them now (a limit read a moment late refused them), else waits on `cv`
** until the call above gives them back for it. It never takes a value
** while blocked, nor below `floor`, and never gives back below it: the
** highest value a raise set (values a raise jumped over stay unused: the
** raise moved `state` past them, not the call). A claim made while sealed
** holds values with the seal bit, above any limit: it is only given back.
** At most one claim per call is in flight, so the calls waiting are at
** most the callers. So, once the calls in flight have returned, `state`
** is one past the last value handed out (or a start point no ID has used
** yet; values skipped below an issued one are skipped as a raise skips
** them), and the high water reported from it, at run time or in the
** clean-close record, never counts values that were not issued; while
** calls are in flight it may count their values, never more. The slow
** path then decides under `mu`: it re-reads the clock, republishes
** `limit`, and either claims the values itself (by compare-and-swap),
** waits when the wall clock, the reservation or the fence can allow them
** within max_wait, or fails.
**
** Every writer that raises the floor (resume after a regained node ID, the
** ticker following the wall clock) raises `state` by compare-and-swap
** first and publishes `limit` (release) last; resume unseals and raises in
** one compare-and-swap, so that no claim lands on an unsealed word below
** the new floor: a claim made before it holds sealed values, one made
** after it values above the floor.
**
** A background thread (the ticker) follows the wall clock about once per
** millisecond: it raises `state` to the current unit when the generator is
** idle (so IDs carry the current time), republishes `limit`, and keeps the
** high-water reservation of the file ahead of anything `limit` allows. A
** coordinator keeps its own fence ahead (frond__gen_set_fence) from its own
** thread; a call that reaches it asks for it at once through the `want`
** hook and waits up to max_wait.
**
** The ticker sleeps once no value was claimed for sleep_ms: under mu it
** sets `asleep` and publishes a limit of 0, so that no call uses a limit
** computed from a clock reading that is no longer followed; every call then
** takes the slow path. The first one, under mu, clears `asleep`, follows
** the clock as the ticker would (raising `state` to the current unit) and
** wakes the ticker, then decides like any slow-path call: it reads the
** clock, and waits within max_wait for the reservation or the fence if
** they fell behind while nothing extended them.
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
**
** fork(): a child has the parent's state word, limit and node ID but not
** its ticker thread (nor, perhaps, a free `mu`). A generator is armed with
** the process key when created (base/fork.h: a word the kernel wipes in a
** child, however the fork was made); the hot path sends a call that finds
** the key changed to the slow path, which refuses it (FORKED) before
** taking any lock.
*/
#ifndef FROND_SNOWFLAKE_H
#define FROND_SNOWFLAKE_H

#include "base/fork.h"
#include "core/core.h"
#include "core/high_water.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define CACHE_LINE 64

/* The top bit of `state`, never part of an issued value (IDs stay below
** 2^63): set while the generator is blocked, so that a claim made after
** the block holds values above any limit. A block is then a barrier: once
** frond__gen_block returns, no claim made after it is issued until a
** resume, and one made before it is issued only as one made before it.
** Failed claims piled up in the layout's last unit could reach it; such
** values are never issued either (the slow path finds the layout's end),
** and FROND__GEN_HEADROOM keeps them below it. */
#define FROND__GEN_SEALED (UINT64_C(1) << 63)

/* Claims in flight past the last unit's sequence that the word holds
** below the seal bit: one per calling thread (a call that fails there
** moves the word back down over the values of no ID: settle). In a layout
** of 63 bits whose last unit's gap is smaller (few node and sequence
** bits, or none), the generator ends that many values early (tmax,
** snowflake_start.c). */
#define FROND__GEN_HEADROOM (UINT64_C(1) << 20)

/* A failed call's values while it waits, under mu, for the claims above
** them to be given back (on its stack; in the generator's list). */
typedef struct frond__gen_held {
  uint64_t v, end;
  int given; /* given back by the call below which state went */
  struct frond__gen_held *next;
} frond__gen_held;

/* Ranges that calls gave up waiting for (see settle in snowflake.c):
** giving back passes through them too. Rare: a call gives up only when a
** claim above its values was issued while it could not take them. */
#define FROND__GEN_DEAD_MAX 64

struct frond_gen {
  /* Written by every call: alone on its cache line. */
  _Alignas(CACHE_LINE) _Atomic uint64_t state;

  /* Read by every call, rarely written. */
  _Alignas(CACHE_LINE) _Atomic uint64_t limit;
  uint64_t node_part; /* node << seq_bits */
  /* For programs built with an earlier inline frond_gen_next, which computed
  ** ((v >> bits) << time_shift) | node_part | (v & mask): with both
  ** (1 << time_shift) - 1 and time_shift, that is v | node_part. */
  uint64_t compat_mask;
  uint64_t max_count; /* largest n for next_n */
  unsigned compat_bits;
  unsigned time_shift;   /* seq_bits + node_bits */
  frond__fork_mark fork; /* the process key when created */
  uint64_t serial;       /* frond__serial(): what caches key on, never g */

  /* Cold. */
  _Alignas(CACHE_LINE) frond_layout layout;
  uint64_t node;
  uint64_t seq_mask; /* a unit's run: seq_mask + 1 values */
  unsigned seq_bits;
  frond_gen_options opt;
  int64_t tmax;            /* last time unit the layout can express */
  int64_t ahead_units;     /* max_ahead_ms in whole units */
  int64_t slack_ms;        /* frond__start_slack_ms for this generator */
  int64_t period_ns;       /* ticker period */
  int64_t sleep_ns;        /* ticker sleeps after this long idle; 0: never */
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
  uint64_t floor;         /* under mu: no value below it is taken (a raise's) */
  /* Under mu: the hot path issues from cap's unit only; state never falls
  ** below it. Raised with the floor, and by a slow-path claim that reaches
  ** a later unit (whose values below it, held by other calls, stay theirs
  ** to take: a claim's, unlike a raise's, jumps over nothing). */
  uint64_t cap;
  struct frond__gen_held *held; /* under mu: failed calls waiting */
  int ndead;                    /* under mu: ranges given up on */
  struct {
    uint64_t v, end;
  } dead[FROND__GEN_DEAD_MAX];
  frond__hw *hw;
  char spec[128];
  frond_error bg_err; /* under mu: the ticker's last failure, code 0: none */

  _Atomic int blocked; /* written under mu */
  /* Blocks, resumes and floor raises so far (written under mu): what a
  ** thread that holds IDs drawn earlier checks before handing one out. */
  _Atomic uint64_t barriers;
  _Atomic int asleep; /* written under mu: the ticker sleeps */
  _Atomic uint64_t sleeps;
  _Atomic int64_t fence_ms; /* written under mu; INT64_MAX: none */
  _Atomic uint64_t waits, clock_behind, reservations, borrowed, fence_refused;
  _Atomic int64_t ahead_ms, reserved_ms;
  long pid; /* the creating process, for messages */
};

/* The inline frond_gen_next of frond/inline.h, which the library uses
** too, reads the start of a frond_gen as a frond__gen_hot. */
#ifndef FROND__SEG_INLINE
#error "libfrond needs lock-free 64-bit atomics (GCC or Clang)"
#endif
#define GEN_HOT_SAME(a, b)                                                     \
  (offsetof(frond_gen, a) == offsetof(frond__gen_hot, b) &&                    \
   sizeof(((frond_gen *)0)->a) == sizeof(((frond__gen_hot *)0)->b))
_Static_assert(GEN_HOT_SAME(state, state) && GEN_HOT_SAME(limit, limit) &&
                   GEN_HOT_SAME(node_part, node_part) &&
                   GEN_HOT_SAME(compat_mask, compat_mask_) &&
                   GEN_HOT_SAME(compat_bits, compat_bits_) &&
                   GEN_HOT_SAME(time_shift, time_shift) &&
                   GEN_HOT_SAME(fork.at, fork_at) &&
                   GEN_HOT_SAME(fork.key, fork_key),
               "frond__gen_hot (frond/inline.h) and frond_gen disagree");

/* Is g a copy inherited through fork()? Never blocks, no system call. */
static inline int gen_forked(const frond_gen *g) {
  return frond__fork_seen(&g->fork);
}

static inline int64_t clock_now(const frond_gen *g) {
  return g->opt.clock(g->opt.clock_ctx);
}

/* The unit containing unix ms t (floor, also before the epoch). */
static inline int64_t units_of(const frond_gen *g, int64_t t) {
  int64_t d = t - g->layout.epoch_ms;
  int64_t u = d / g->layout.unit_ms;
  if (d < 0 && u * g->layout.unit_ms != d)
    u--;
  return u;
}

static inline int64_t ms_of(const frond_gen *g, int64_t units) {
  return g->layout.epoch_ms + units * g->layout.unit_ms;
}

static inline int64_t units_of_value(const frond_gen *g, uint64_t v) {
  return (int64_t)(v >> g->time_shift);
}

/* The first value of unit u. */
static inline uint64_t unit_value(const frond_gen *g, int64_t u) {
  return (uint64_t)u << g->time_shift;
}

/* The end of v's unit's sequence: the first gap value (v unsealed). */
static inline uint64_t run_end(const frond_gen *g, uint64_t v) {
  return (v >> g->time_shift << g->time_shift) + g->seq_mask + 1;
}

/* The end of the last unit's sequence: no value at or above it is ever
** issued (tmax may end a little before the layout's end: headroom). */
static inline uint64_t value_end(const frond_gen *g) {
  return run_end(g, unit_value(g, g->tmax));
}

/* v's offset from its unit's first value: its sequence, or above
** seq_mask for a gap value. */
static inline uint64_t unit_offset(const frond_gen *g, uint64_t v) {
  return v - (v >> g->time_shift << g->time_shift);
}

/* The sequence of v, a gap value's counted as its unit's last. */
static inline uint64_t value_seq(const frond_gen *g, uint64_t v) {
  uint64_t low = unit_offset(g, v);
  return low > g->seq_mask ? g->seq_mask : low;
}

/* The value of a packed time << seq_bits | sequence (high_water.c's). */
static inline uint64_t value_of_packed(const frond_gen *g, uint64_t p) {
  return (p >> g->seq_bits << g->time_shift) | (p & g->seq_mask);
}

/* The first value the clock reading `now`, the reservation, the fence and
** the layout allow no call to reach. Expects mu held. */
static inline uint64_t bounds_limit(const frond_gen *g, int64_t now) {
  int64_t l = units_of(g, now) + g->ahead_units;
  if (l > g->reserved_units)
    l = g->reserved_units;
  if (l > g->fence_units)
    l = g->fence_units;
  if (l > g->tmax)
    l = g->tmax;
  return l < 0 ? 0 : unit_value(g, l + 1);
}

/* Recompute `limit` from the clock reading `now`, within the cap's unit:
** 0 (every call to the slow path) while blocked or while calls wait there,
** so that no call overtakes them on the hot path, and while the ticker
** sleeps, so that the next call reads the clock and wakes it. Release:
** whoever reads the new limit also sees every write made before it under
** mu (a raised state above all). Expects mu held. */
static inline void publish_limit(frond_gen *g, int64_t now) {
  uint64_t lim = bounds_limit(g, now);
  if (lim > run_end(g, g->cap))
    lim = run_end(g, g->cap);
  if (atomic_load_explicit(&g->blocked, memory_order_relaxed) != 0 ||
      g->waiting > 0 || atomic_load_explicit(&g->asleep, memory_order_relaxed))
    lim = 0;
  atomic_store_explicit(&g->limit, lim, memory_order_release);
}

/* The first value above the unit of unix ms t: where a successor of a
** holder whose fence (or high water) is t starts. Clamped to [0, the
** first value past the last unit's sequence] (value_end: below the seal
** bit, tmax leaving headroom in a 63-bit layout). No claim is issued
** there: the next unit is past the generator's end. */
static inline uint64_t value_after(const frond_gen *g, int64_t t) {
  int64_t u = t < g->layout.epoch_ms ? 0 : units_of(g, t) + 1;
  if (u > g->tmax)
    return value_end(g);
  return unit_value(g, u);
}

/* The last unit a fence at unix ms t allows: the unit containing t (-1
** before the epoch, at most the layout's last). */
static inline int64_t fence_units_of(const frond_gen *g, int64_t t) {
  int64_t u = t < g->layout.epoch_ms ? -1 : units_of(g, t);
  return u > g->tmax ? g->tmax : u;
}

static inline void hw_record(const frond_gen *g, int64_t units, uint64_t seq,
                             int clean, frond__hw_record *rec) {
  memset(rec, 0, sizeof(*rec));
  rec->node = g->node;
  rec->time_ms = ms_of(g, units);
  rec->seq = seq;
  rec->clean = clean;
  snprintf(rec->layout, sizeof(rec->layout), "%s", g->spec);
}

/* Make "now + max_ahead + window" durable, then allow IDs up to it (mu
** held; dropped around the write). */
int frond__gen_extend_reservation(frond_gen *g, int64_t now, frond_error *err);
/* The background thread: follows the clock, extends the reservation. */
void *frond__gen_ticker(void *arg);
/* FORKED, naming the node and the creating process. */
int frond__gen_forked(const frond_gen *g, frond_error *err);
/* TIME_EXHAUSTED with the layout's end. */
int frond__gen_exhausted(const frond_gen *g, frond_error *err);

#endif /* FROND_SNOWFLAKE_H */
