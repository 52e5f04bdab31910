/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_gen_fence.c -- the snowflake generator's limits under pressure: a
** call that fails consumes nothing, a regained node ID resumes above the
** other holder's fence, and the coordinator fence stops issuing.
*/
#include "gen_util.h"
#include "core/snowflake.h" /* the barrier test replays the hot path */

#include <sys/resource.h>

/* ---- a call that fails consumes nothing -------------------------------- */

static void test_failed_call_consumes_nothing(void **state) {
  fake_clock c;
  frond_gen *g;
  int64_t blk[4096], id = -42, hw;
  frond_error err = {0, ""};
  (void)state;
  fake_clock_set(&c, T0);
  /* max_ahead 5 ms: units T0 .. T0 + 5 may be issued; max_wait 0. */
  g = make_fake(&c, 5, 0, 1);
  for (int k = 0; k < 6; k++)
    assert_int_equal(frond_gen_next_n(g, 4096, blk, NULL), 0);
  hw = frond_gen_high_water_ms(g);
  assert_int_equal(hw, T0 + 5);
  /* Every call past the limit fails, and leaves the clock where it was. */
  for (int k = 0; k < 1000; k++) {
    assert_int_equal(frond_gen_next_n(g, 4096, blk, &err), FROND_ECLOCK_BEHIND);
    assert_int_equal(frond_gen_next(g, &id, &err), FROND_ECLOCK_BEHIND);
  }
  assert_int_equal(id, -42);
  assert_int_equal(frond_gen_high_water_ms(g), hw);
  /* One more millisecond of wall clock buys exactly one more unit, from
  ** sequence 0: nothing was skipped by the failures. */
  fake_clock_add(&c, 1);
  frond__gen_tick(g);
  assert_int_equal(frond_gen_next(g, &id, &err), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 6);
  assert_int_equal(fields(g, id).sequence, 0);
  frond_gen_close(g, NULL);
}

typedef struct hammer {
  pthread_t thread;
  frond_gen *g;
  size_t n;            /* IDs per call */
  int64_t deadline_ns; /* stop then, or after max_calls */
  uint64_t max_calls, ok, failed;
  int64_t ids[4096];
} hammer;

static void *hammer_main(void *arg) {
  hammer *h = arg;
  for (uint64_t k = 0; k < h->max_calls && frond__mono_ns() < h->deadline_ns;
       k++) {
    if (frond_gen_next_n(h->g, h->n, h->ids, NULL) == 0)
      h->ok++;
    else
      h->failed++;
  }
  return NULL;
}

/* Threads that keep asking past max_ahead on a frozen clock must not push
** the logical clock ahead: once the wall clock moves, calls succeed again
** at once. */
static void test_hammer_past_max_ahead(void **state) {
  enum { THREADS = 4 };
  fake_clock c;
  frond_gen *g;
  hammer h[THREADS];
  uint64_t ok = 0, failed = 0;
  int64_t id = 0, hw;
  frond_error err = {0, ""};
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fake(&c, 5, 0, 1);
  for (int i = 0; i < THREADS; i++) {
    memset(&h[i], 0, sizeof(h[i]));
    h[i].g = g;
    h[i].n = 4096;
    h[i].deadline_ns = frond__mono_ns() + 300 * 1000000LL;
    h[i].max_calls = 2000000;
    assert_int_equal(pthread_create(&h[i].thread, NULL, hammer_main, &h[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(h[i].thread, NULL);
    ok += h[i].ok;
    failed += h[i].failed;
  }
  /* Six units of 4096 fit within max_ahead; everything else failed. */
  assert_int_equal(ok, 6);
  assert_true(failed > 0);
  hw = frond_gen_high_water_ms(g);
  if (hw > T0 + 5)
    fail_msg("high water %lld ms past the wall clock after %llu failed "
             "calls (max_ahead 5)",
             (long long)(hw - T0), (unsigned long long)failed);
  fake_clock_add(&c, 10);
  frond__gen_tick(g);
  if (frond_gen_next(g, &id, &err) != 0)
    fail_msg("after the wall clock moved: %s", err.message);
  assert_true(fields(g, id).unix_ms <= T0 + 10 + 5);
  frond_gen_close(g, NULL);
}

/* Threads asking flat out past max_ahead on the real clock: the layout's
** rate is shared among them and no call that waits for the clock loses its
** turn to calls that came later, so none fails. (When a waiter held no
** values, the thread that came back first took every new unit and the
** others failed CLOCK_BEHIND after max_wait.) A call during which the
** thread was taken off the CPU (a loaded machine: three threads on two
** cores, other tests beside) may pass max_wait off the CPU; such a failed
** call is told apart and excused, as it says nothing of the turns. */
typedef struct racer {
  pthread_t thread;
  frond_gen *g;
  int64_t deadline_ns;
  uint64_t ok, failed, off_cpu;
  frond_error err;
} racer;

static long preempted(void) {
  struct rusage u;
  return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : -1;
}

static void *racer_main(void *arg) {
  racer *r = arg;
  int64_t id;
  for (uint64_t k = 0; k < 20000000 && frond__mono_ns() < r->deadline_ns; k++) {
    long before = preempted();
    if (frond_gen_next(r->g, &id, &r->err) == 0)
      r->ok++;
    else if (before >= 0 && preempted() != before)
      r->off_cpu++;
    else
      r->failed++;
  }
  return NULL;
}

static void test_waiters_not_starved(void **state) {
  enum { THREADS = 3 };
  frond_gen *g;
  frond_gen_options o;
  frond_layout l = *twitter();
  racer r[THREADS];
  frond_gen_stats st;
  uint64_t ok = 0, failed = 0, off_cpu = 0;
  (void)state;
  /* 4 IDs a millisecond (2 sequence bits): three threads asking flat out
  ** pass that rate on any machine, a loaded one under the sanitizers too
  ** (twitter's 4,096 needed a fast, quiet one). */
  l.seq_bits = 2;
  snprintf(l.name, sizeof(l.name), "custom");
  frond_gen_options_init(&o);
  o.max_ahead_ms = 5;
  o.max_wait_ms = FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS;
  assert_int_equal(frond_gen_create(&g, &l, 1, &o, NULL), 0);
  for (int i = 0; i < THREADS; i++) {
    memset(&r[i], 0, sizeof(r[i]));
    r[i].g = g;
    r[i].deadline_ns = frond__mono_ns() + 400 * 1000000LL;
    assert_int_equal(pthread_create(&r[i].thread, NULL, racer_main, &r[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(r[i].thread, NULL);
    ok += r[i].ok;
    failed += r[i].failed;
    off_cpu += r[i].off_cpu;
    if (r[i].failed != 0)
      print_message("thread %d: %s\n", i, r[i].err.message);
  }
  frond_gen_stats_get(g, &st);
  frond_gen_close(g, NULL);
  if (failed != 0)
    fail_msg("%llu of %llu calls failed on the CPU", (unsigned long long)failed,
             (unsigned long long)(ok + failed + off_cpu));
  if (off_cpu != 0)
    print_message("%llu failed calls were taken off the CPU meanwhile\n",
                  (unsigned long long)off_cpu);
  assert_true(ok > off_cpu); /* mostly on the CPU: it tests the turns */
  assert_true(st.waits > 0); /* the layout's rate was the limit */
}

/* ---- regaining a node ID -----------------------------------------------
**
** Round k of the test, in ms from T0 + k * ROUND_MS: this node may issue up
** to its fence at +OURS; it loses the node ID; the other holder issues in
** (+OURS, +THEIRS] and leaves its fence at +THEIRS; this node regains the
** ID and resumes above +THEIRS with a fence at the next round's +OURS. No
** ID this node ever issues may lie in (+OURS, +THEIRS] of any round. The
** fake clock stands still; max_ahead covers every round. */

#define ROUND_MS 100
#define OURS 10
#define THEIRS 60

typedef struct issuer {
  pthread_t thread;
  frond_gen *g;
  size_t n; /* IDs per call */
  _Atomic int *stop;
  uint64_t issued, violations;
  uint64_t undecodable; /* counted here, asserted by the main thread */
  int64_t worst_ms;     /* an ID's time in a foreign range, 0: none */
  int64_t ids[4096];
} issuer;

static void *issuer_main(void *arg) {
  issuer *w = arg;
  while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
    if (frond_gen_next_n(w->g, w->n, w->ids, NULL) != 0)
      continue;
    for (size_t i = 0; i < w->n; i++) {
      frond_fields f;
      int64_t at;
      w->issued++;
      /* No cmocka assertion off the main thread: count, check later. */
      if (frond_decode(frond_gen_layout(w->g), w->ids[i], &f, NULL) != 0) {
        w->undecodable++;
        continue;
      }
      at = (f.unix_ms - T0) % ROUND_MS;
      if (at > OURS && at <= THEIRS) {
        w->violations++;
        w->worst_ms = f.unix_ms;
      }
    }
  }
  return NULL;
}

static void test_resume_above_fence(void **state) {
  enum { THREADS = 3, ROUNDS = 40 };
  static const size_t per_call[THREADS] = {1, 4096, 4096};
  fake_clock c;
  frond_gen *g;
  frond_gen_options o = fake_options(&c, 86400000, 0);
  frond__gen_fence f = {0, T0 + OURS, 0, NULL, NULL};
  frond_gen_stats st;
  frond_error err = {0, ""};
  issuer *w = calloc(THREADS, sizeof(*w));
  _Atomic int stop = 0;
  uint64_t issued = 0, violations = 0, undecodable = 0;
  int64_t worst = 0;
  (void)state;
  assert_non_null(w);
  fake_clock_set(&c, T0);
  if (frond__gen_create_fenced(&g, twitter(), 4, &o, &f, &err) != 0)
    fail_msg("create: %s", err.message);
  for (int i = 0; i < THREADS; i++) {
    w[i].g = g;
    w[i].n = per_call[i];
    w[i].stop = &stop;
    assert_int_equal(pthread_create(&w[i].thread, NULL, issuer_main, &w[i]), 0);
  }
  for (int64_t k = 0; k < ROUNDS; k++) {
    int64_t base = T0 + k * ROUND_MS;
    /* Let the issuers run into this round's fence. */
    for (int t = 0; t < 200 && frond_gen_high_water_ms(g) < base + OURS; t++)
      frond__sleep_ns(1000000);
    frond__gen_block(g, FROND_ENODE_ID_LOST);
    frond__gen_resume(g, base + THEIRS, base + ROUND_MS + OURS);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(w[i].thread, NULL);
    issued += w[i].issued;
    violations += w[i].violations;
    undecodable += w[i].undecodable;
    if (w[i].worst_ms != 0)
      worst = w[i].worst_ms;
  }
  frond_gen_stats_get(g, &st);
  frond_gen_close(g, NULL);
  free(w);
  assert_int_equal(undecodable, 0);
  if (violations != 0)
    fail_msg("%llu of %llu IDs lie in another holder's range, e.g. at "
             "T0 + %lld ms",
             (unsigned long long)violations, (unsigned long long)issued,
             (long long)(worst - T0));
  /* The issuers did reach the fences, and went on above them. */
  assert_true(st.fence_refused > 0);
  assert_true(issued > (uint64_t)ROUNDS * 4096);
}

/* ---- the coordinator fence --------------------------------------------- */

typedef struct want_ctx {
  frond_gen *g;
  _Atomic int calls;
  int64_t extend_to; /* 0: the coordinator cannot extend */
} want_ctx;

static void want_hook(void *ctx) {
  want_ctx *w = ctx;
  atomic_fetch_add(&w->calls, 1);
  if (w->extend_to != 0)
    frond__gen_set_fence(w->g, w->extend_to);
}

static frond_gen *make_fenced(fake_clock *c, int64_t fence_ms, int64_t max_wait,
                              want_ctx *w) {
  frond_gen_options o =
      fake_options(c, FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS, max_wait);
  frond__gen_fence f = {0, fence_ms, 0, want_hook, w};
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  if (frond__gen_create_fenced(&g, twitter(), 4, &o, &f, &err) != 0)
    fail_msg("create: %s", err.message);
  w->g = g;
  return g;
}

/* Units up to the fence's are issued; the next call asks the coordinator,
** waits max_wait, then fails with COORD and consumes nothing. */
static void test_fence_stops(void **state) {
  fake_clock c;
  want_ctx w = {NULL, 0, 0};
  frond_gen *g;
  frond_gen_stats st;
  frond_error err = {0, ""};
  int64_t blk[4096], id = -42, t;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fenced(&c, T0 + 3, 30, &w);
  assert_int_equal(frond__gen_fence_ms(g), T0 + 3);
  for (int k = 0; k < 4; k++)
    assert_int_equal(frond_gen_next_n(g, 4096, blk, NULL), 0);
  assert_int_equal(fields(g, blk[4095]).unix_ms, T0 + 3);
  t = frond__mono_ns();
  assert_int_equal(frond_gen_next(g, &id, &err), FROND_ECOORD);
  t = frond__mono_ns() - t;
  assert_true(t >= 25 * 1000000LL);
  assert_true(t < 2000 * 1000000LL);
  assert_int_equal(id, -42);
  assert_true(atomic_load(&w.calls) >= 1);
  assert_non_null(strstr(err.message, "node 4"));
  assert_non_null(strstr(err.message, "2026-01-01T00:00:00.003Z"));
  assert_non_null(strstr(err.message, "not confirmed"));
  assert_int_equal(frond_gen_high_water_ms(g), T0 + 3);
  frond_gen_stats_get(g, &st);
  assert_int_equal(st.fence_ms, T0 + 3);
  assert_int_equal(st.fence_refused, 1);
  assert_int_equal(st.clock_behind, 0);
  /* The coordinator confirms a later fence: issuing goes on right after
  ** the last ID. A lower fence never takes it back. */
  frond__gen_set_fence(g, T0 + 5);
  frond__gen_set_fence(g, T0 + 1);
  assert_int_equal(frond__gen_fence_ms(g), T0 + 5);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 4);
  assert_int_equal(fields(g, id).sequence, 0);
  frond_gen_close(g, NULL);
}

/* max_wait 0 on a clock that does not move: the error names the bound
** that stops the call. The fence at or below the clock's bound: COORD,
** counted as a fence refusal (the clock catching up would not help). The
** clock below the fence: CLOCK_BEHIND. */
static void test_error_names_the_bound(void **state) {
  static const struct {
    int64_t fence_ms;
    int code;
  } cases[] = {{T0, FROND_ECOORD}, {T0 + 10, FROND_ECLOCK_BEHIND}};
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    fake_clock c;
    want_ctx w = {NULL, 0, 0};
    frond_gen_options o;
    frond__gen_fence f = {0, cases[i].fence_ms, 0, want_hook, &w};
    frond_gen *g = NULL;
    frond_gen_stats st;
    frond_error err = {0, ""};
    int64_t blk[4096];
    fake_clock_set(&c, T0);
    o = fake_options(&c, 0, 0);
    if (frond__gen_create_fenced(&g, twitter(), 4, &o, &f, &err) != 0)
      fail_msg("create: %s", err.message);
    w.g = g;
    assert_int_equal(frond_gen_next_n(g, 4096, blk, NULL), 0);
    assert_int_equal(fields(g, blk[4095]).unix_ms, T0);
    assert_int_equal(frond_gen_next(g, &blk[0], &err), cases[i].code);
    frond_gen_stats_get(g, &st);
    if (cases[i].code == FROND_ECOORD) {
      assert_non_null(strstr(err.message, "coordinator fence"));
      assert_int_equal(st.fence_refused, 1);
      assert_int_equal(st.clock_behind, 0);
    } else {
      assert_non_null(strstr(err.message, "behind"));
      assert_int_equal(st.fence_refused, 0);
      assert_int_equal(st.clock_behind, 1);
    }
    frond_gen_close(g, NULL);
  }
}

/* ---- a cancelled call leaves the generator whole ----------------------- */

typedef struct call {
  pthread_t thread;
  frond_gen *g;
  int rc;
  int64_t id;
} call;

static void *call_main(void *arg) {
  call *c = arg;
  c->rc = frond_gen_next(c->g, &c->id, NULL);
  pthread_testcancel(); /* a cancel asked during the call ends it here */
  return NULL;
}

static void *set_fence_main(void *arg) {
  call *c = arg;
  frond__gen_set_fence(c->g, T0 + 10);
  return NULL;
}

/* Start fn(c) and join it within 10 s: a call that hangs fails the test
** instead of holding the suite. */
static void *run_bounded(void *(*fn)(void *), call *c, const char *what) {
  struct timespec ts;
  void *ret = NULL;
  assert_int_equal(pthread_create(&c->thread, NULL, fn, c), 0);
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 10;
  if (pthread_timedjoin_np(c->thread, &ret, &ts) != 0)
    fail_msg("%s did not return within 10 s: the generator hangs", what);
  return ret;
}

/* pthread_cancel of a call waiting at the fence: before, it ended inside
** the wait with the generator's lock held, every later call and fence
** hung. Now the call cannot be cancelled: it finishes (here with its ID,
** once the fence moves), the cancel ends the thread after it, and other
** threads go on issuing, above it. */
static void test_cancelled_call(void **state) {
  fake_clock c;
  want_ctx w = {NULL, 0, 0};
  frond_gen *g;
  call waiter, fencer, later;
  int64_t blk[4096];
  struct timespec ts;
  void *ret = NULL;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fenced(&c, T0 + 3, 10000, &w);
  for (int k = 0; k < 4; k++)
    assert_int_equal(frond_gen_next_n(g, 4096, blk, NULL), 0);
  memset(&waiter, 0, sizeof(waiter));
  waiter.g = g;
  waiter.rc = -1;
  assert_int_equal(pthread_create(&waiter.thread, NULL, call_main, &waiter), 0);
  /* The waiter reached the fence once it asked the coordinator; it waits
  ** on from there. */
  for (int64_t until = frond__mono_ns() + 10000 * 1000000LL;
       atomic_load(&w.calls) == 0;) {
    if (frond__mono_ns() > until)
      fail_msg("the call never reached the fence");
    frond__sleep_ns(100000);
  }
  assert_int_equal(pthread_cancel(waiter.thread), 0);
  fencer.g = g;
  run_bounded(set_fence_main, &fencer, "frond__gen_set_fence");
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 10;
  if (pthread_timedjoin_np(waiter.thread, &ret, &ts) != 0)
    fail_msg("the cancelled call did not end within 10 s");
  assert_true(ret == PTHREAD_CANCELED);
  assert_int_equal(waiter.rc, 0);
  assert_int_equal(fields(g, waiter.id).unix_ms, T0 + 4);
  memset(&later, 0, sizeof(later));
  later.g = g;
  later.rc = -1;
  run_bounded(call_main, &later, "a call after the cancel");
  assert_int_equal(later.rc, 0);
  assert_true(later.id > waiter.id);
  assert_int_equal(frond_gen_next(g, &blk[0], NULL), 0);
  assert_true(blk[0] > later.id);
  frond_gen_close(g, NULL);
}

/* A coordinator that extends the fence from the hook: the call at the
** fence goes through. */
static void test_fence_want_extends(void **state) {
  fake_clock c;
  want_ctx w = {NULL, 0, T0 + 100};
  frond_gen *g;
  frond_gen_stats st;
  int64_t blk[4096], id = 0;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fenced(&c, T0, 0, &w);
  assert_int_equal(frond_gen_next_n(g, 4096, blk, NULL), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 1);
  assert_int_equal(atomic_load(&w.calls), 1);
  assert_int_equal(frond__gen_fence_ms(g), T0 + 100);
  frond_gen_stats_get(g, &st);
  assert_int_equal(st.fence_refused, 0);
  frond_gen_close(g, NULL);
}

typedef struct waiter {
  frond_gen *g;
  int rc;
  int64_t ns;
} waiter;

static void *waiter_main(void *arg) {
  waiter *w = arg;
  int64_t id, t = frond__mono_ns();
  w->rc = frond_gen_next(w->g, &id, NULL);
  w->ns = frond__mono_ns() - t;
  return NULL;
}

/* Blocking fails every call with the code, at once (also one waiting at
** the fence), consuming nothing; resume lets calls through again. */
static void test_block_and_resume(void **state) {
  fake_clock c;
  want_ctx w = {NULL, 0, 0};
  frond_gen *g;
  frond_error err = {0, ""};
  waiter wt;
  pthread_t t;
  int64_t blk[4096], id = -42, hw;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fenced(&c, T0, 3000, &w);
  assert_int_equal(frond_gen_next_n(g, 4096, blk, NULL), 0);
  wt.g = g;
  assert_int_equal(pthread_create(&t, NULL, waiter_main, &wt), 0);
  while (atomic_load(&w.calls) == 0)
    frond__sleep_ns(100000);
  frond__gen_block(g, FROND_ENODE_ID_LOST);
  pthread_join(t, NULL);
  assert_int_equal(wt.rc, FROND_ENODE_ID_LOST);
  assert_true(wt.ns < 2000 * 1000000LL);
  assert_int_equal(frond__gen_blocked(g), FROND_ENODE_ID_LOST);
  hw = frond_gen_high_water_ms(g);
  for (int k = 0; k < 100; k++)
    assert_int_equal(frond_gen_next_n(g, 4096, blk, &err), FROND_ENODE_ID_LOST);
  assert_non_null(strstr(err.message, "node 4"));
  assert_int_equal(frond_gen_high_water_ms(g), hw);
  frond__gen_resume(g, 0, T0 + 10);
  assert_int_equal(frond__gen_blocked(g), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 1);
  /* Resuming above a time: the next ID is in the unit after it, even one
  ** ahead of the fence's old value. */
  frond__gen_block(g, FROND_ENODE_ID_LOST);
  frond__gen_resume(g, T0 + 7, T0 + 20);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 8);
  assert_int_equal(fields(g, id).sequence, 0);
  frond_gen_close(g, NULL);
}

/* ---- a block is a barrier ---------------------------------------------
**
** Once frond__gen_block returns, no call may complete: a claim that read
** the limit before the block must not be issued from an add after it, or
** the exact high-water time read right after the block (what a coordinator
** stores as its final fence) would miss an issued ID. The hot path's claim
** is replayed step by step around a block: load the limit (the value is
** allowed), block, then the fetch-add, whose values must lie above the
** limit; the slow path then gives them back. */

static void test_block_is_a_barrier(void **state) {
  fake_clock c;
  frond_gen *g;
  uint64_t cur, lim, v;
  int64_t hw, id = -42;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fake(&c, 5, 0, 1);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  cur = atomic_load_explicit(&g->state, memory_order_relaxed);
  lim = atomic_load_explicit(&g->limit, memory_order_acquire);
  assert_true(cur + 1 <= lim); /* the hot path would take cur */
  frond__gen_block(g, FROND_ENODE_ID_LOST);
  hw = frond_gen_high_water_ms(g);
  v = atomic_fetch_add_explicit(&g->state, 1, memory_order_relaxed);
  assert_true(v + 1 > lim); /* sealed: no limit allows it */
  id = -42;
  assert_int_equal(frond__gen_next_slow(g, v, &id, NULL), FROND_ENODE_ID_LOST);
  assert_int_equal(id, -42);
  /* Given back: the word is where the block left it. */
  assert_int_equal(atomic_load(&g->state), cur | FROND__GEN_SEALED);
  assert_int_equal(frond_gen_high_water_ms(g), hw);
  assert_int_equal(frond_gen_next(g, &id, NULL), FROND_ENODE_ID_LOST);
  /* Resume unseals: the next ID follows the last one. */
  frond__gen_resume(g, 0, INT64_MAX);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0);
  assert_int_equal(fields(g, id).sequence, 1);
  assert_int_equal(frond_gen_high_water_ms(g), T0);
  frond_gen_close(g, NULL);
}

/* ---- threads at a fence -----------------------------------------------
**
** Threads race up to a fence that does not move, with calls of every size,
** each on the hot path's fetch-add: every value up to the fence is issued
** exactly once, none above it, and the failures past it give every value
** back: once the fence moves, the next ID is the first of the next unit.
** (A hot path that let a claim past the limit would issue above the fence;
** one that kept a failed claim's values would leave the state above the
** last ID, and the next ID would not start the unit.) */

#define FILL_UNITS 4 /* the fence is at T0 + 3 */
#define FILL_IDS (FILL_UNITS * 4096)

typedef struct filler {
  pthread_t thread;
  frond_gen *g;
  size_t n; /* IDs per call */
  int64_t deadline_ns;
  size_t count;
  int other; /* failures with another code than COORD */
  int64_t ids[FILL_IDS];
} filler;

static void *filler_main(void *arg) {
  filler *w = arg;
  int64_t buf[128];
  frond_error err = {0, ""};
  /* Until 200 calls in a row fail (the fence is reached) or the deadline. */
  for (int failed = 0; failed < 200 && frond__mono_ns() < w->deadline_ns;) {
    int rc = w->n == 1 ? frond_gen_next(w->g, buf, &err)
                       : frond_gen_next_n(w->g, w->n, buf, &err);
    if (rc != 0) {
      failed++;
      w->other |= rc != FROND_ECOORD;
      continue;
    }
    failed = 0;
    for (size_t i = 0; i < w->n && w->count < FILL_IDS; i++)
      w->ids[w->count++] = buf[i];
  }
  return NULL;
}

static void test_threads_fill_to_fence(void **state) {
  enum { THREADS = 4 };
  static const size_t per_call[THREADS] = {1, 7, 100, 1};
  fake_clock c;
  want_ctx w = {NULL, 0, 0};
  frond_gen *g;
  filler *f = calloc(THREADS, sizeof(*f));
  int64_t *all = malloc(sizeof(*all) * FILL_IDS * THREADS), id = 0;
  size_t total = 0;
  (void)state;
  assert_non_null(f);
  assert_non_null(all);
  fake_clock_set(&c, T0);
  g = make_fenced(&c, T0 + FILL_UNITS - 1, 0, &w);
  for (int i = 0; i < THREADS; i++) {
    f[i].g = g;
    f[i].n = per_call[i];
    f[i].deadline_ns = frond__mono_ns() + 10 * 1000000000LL;
    assert_int_equal(pthread_create(&f[i].thread, NULL, filler_main, &f[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(f[i].thread, NULL);
    assert_int_equal(f[i].other, 0);
    memcpy(all + total, f[i].ids, f[i].count * sizeof(*all));
    total += f[i].count;
  }
  /* A thread stops after 200 failures in a row, and one preempted inside
  ** a claim past the limit (before it gives the values back) can make
  ** the others fail that often: what they left, one call at a time with
  ** nothing else running. A failed claim that kept its values would
  ** leave them unissued here too. */
  while (total < (size_t)FILL_IDS * THREADS &&
         frond_gen_next(g, &id, NULL) == 0)
    all[total++] = id;
  qsort(all, total, sizeof(*all), cmp_i64);
  for (size_t i = 1; i < total; i++)
    if (all[i] == all[i - 1])
      fail_msg("ID %lld issued twice", (long long)all[i]);
  if (total > 0 && fields(g, all[total - 1]).unix_ms > T0 + FILL_UNITS - 1)
    fail_msg("ID at T0 + %lld ms, past the fence at T0 + %d",
             (long long)(fields(g, all[total - 1]).unix_ms - T0),
             FILL_UNITS - 1);
  /* Every value below the fence, once: the first at T0 sequence 0, the
  ** last at the fence's unit, sequence 4095. */
  if (total != FILL_IDS)
    fail_msg("%zu IDs issued up to the fence, not %d", total, FILL_IDS);
  assert_int_equal(fields(g, all[0]).unix_ms, T0);
  assert_int_equal(fields(g, all[0]).sequence, 0);
  assert_int_equal(fields(g, all[total - 1]).sequence, 4095);
  assert_int_equal(frond_gen_high_water_ms(g), T0 + FILL_UNITS - 1);
  /* The failed calls consumed nothing. */
  frond__gen_set_fence(g, T0 + FILL_UNITS + 5);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + FILL_UNITS);
  assert_int_equal(fields(g, id).sequence, 0);
  frond_gen_close(g, NULL);
  free(all);
  free(f);
}

static void test_fence_target(void **state) {
  fake_clock c;
  frond_gen *g;
  frond_gen_options o;
  frond_layout l;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fake(&c, 1000, 10, 1);
  assert_int_equal(frond__gen_fence_ms(g), INT64_MAX);
  assert_int_equal(frond__gen_fence_target(g, T0, 3000), T0 + 4000);
  assert_int_equal(frond__layout_last_unit_ms(twitter()),
                   frond_layout_end_ms(twitter()) - 1);
  frond_gen_close(g, NULL);
  /* Near the layout's end: capped at its last unit. */
  assert_int_equal(
      frond_layout_parse("time=20,node=31,seq=12,unit=10ms,epoch=0", &l, NULL),
      0);
  l.epoch_ms = T0 - ((INT64_C(1) << 20) - 300) * 10;
  o = fake_options(&c, FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS, -1);
  assert_int_equal(frond_gen_create(&g, &l, 1, &o, NULL), 0);
  assert_int_equal(frond__layout_last_unit_ms(&l), T0 + 2990);
  assert_int_equal(frond__gen_fence_target(g, T0, 5000), T0 + 2990);
  assert_int_equal(frond__gen_fence_target(g, T0 - 5000, 1000), T0 - 3000);
  frond_gen_close(g, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failed_call_consumes_nothing),
      cmocka_unit_test(test_hammer_past_max_ahead),
      cmocka_unit_test(test_waiters_not_starved),
      cmocka_unit_test(test_resume_above_fence),
      cmocka_unit_test(test_fence_stops),
      cmocka_unit_test(test_fence_want_extends),
      cmocka_unit_test(test_cancelled_call),
      cmocka_unit_test(test_error_names_the_bound),
      cmocka_unit_test(test_block_and_resume),
      cmocka_unit_test(test_block_is_a_barrier),
      cmocka_unit_test(test_threads_fill_to_fence),
      cmocka_unit_test(test_fence_target),
  };
  return frond_run_tests(tests, NULL, NULL);
}
