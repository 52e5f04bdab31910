/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_coord_fence.c -- the coordinator's side of the fence, with a fake
** driver and a fake clock: the first fence durable before the generator
** exists, a partition that stops issuing at the fence, a write whose
** answer is lost, a regained node ID resuming above another holder (also
** when the watchdog never saw the loss), a validity renewed as it ran
** out, the start slack and the layout
** floor at start and at a regain, a close whose final fence fails for a
** moment.
*/
#include "coord_util.h"

#include <pthread.h>

/* ---- a fake driver ---------------------------------------------------
**
** The coordinator's side of the fence without a network: a "stored" fence
** per node, writes that succeed, hang, fail, or commit without an answer,
** and a record of what the cache file held when each write was sent. */

enum { OK = 0, HANG, LOST_ANSWER, DOWN, TAKEN };

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int mode, hanging;
  int64_t stored; /* the fence a later holder reads */
  int64_t last_sent;
  int writes, ahead_of_cache; /* writes sent before the cache held them */
  int fail_writes; /* the next ones fail; those with an odd count left
                   ** (3, then 1) commit first */
  int regain_rc;
  int64_t regain_after;
  int regains;
  int64_t floor; /* the layout floor the "coordinator" records */
  char spec[64]; /* the layout it records ("": the node's own) */
} fake;

static fake F = {.mu = PTHREAD_MUTEX_INITIALIZER,
                 .cv = PTHREAD_COND_INITIALIZER};

/* A field of the fake, read under its lock: the fencer thread writes
** them. */
static int64_t fake_get(const void *field, size_t size) {
  int64_t v;
  pthread_mutex_lock(&F.mu);
  v = size == sizeof(int64_t) ? *(const int64_t *)field : *(const int *)field;
  pthread_mutex_unlock(&F.mu);
  return v;
}
#define FX(f) fake_get(&F.f, sizeof(F.f))

static void fake_reset(void) {
  pthread_mutex_lock(&F.mu);
  F.mode = OK;
  F.hanging = 0;
  F.stored = F.last_sent = 0;
  F.writes = F.ahead_of_cache = F.regains = F.fail_writes = 0;
  F.regain_rc = 0;
  F.regain_after = 0;
  F.floor = 0;
  F.spec[0] = 0;
  pthread_mutex_unlock(&F.mu);
}

static void fake_mode(int mode) {
  pthread_mutex_lock(&F.mu);
  F.mode = mode;
  pthread_cond_broadcast(&F.cv);
  pthread_mutex_unlock(&F.mu);
}

static int f_open(frond_coord *c, const char *uri, frond_error *err) {
  c->impl = &F;
  return 0;
}

static int f_acquire(frond_coord *c, frond__coord_claim *out,
                     frond_error *err) {
  out->node = 5;
  pthread_mutex_lock(&F.mu);
  out->fence_ms = F.stored;
  c->floor_id = F.floor;
  snprintf(c->prev_spec, sizeof(c->prev_spec), "twitter-ish");
  pthread_mutex_unlock(&F.mu);
  return 0;
}

static int f_fence(frond_coord *c, int64_t t, frond_error *err) {
  int rc = 0;
  pthread_mutex_lock(&F.mu);
  F.writes++;
  F.last_sent = t;
  if (c->cache_path[0]) {
    frond_coord_cache cc;
    int missing;
    if (frond__coord_cache_read(c->cache_path, &cc, &missing, NULL) != 0 ||
        cc.fence_ms < t)
      F.ahead_of_cache++;
  }
  if (F.mode == HANG) {
    F.hanging = 1;
    pthread_cond_broadcast(&F.cv);
    while (F.mode == HANG)
      pthread_cond_wait(&F.cv, &F.mu);
    F.hanging = 0;
  }
  if (F.fail_writes > 0) { /* a moment's failure, in either of its kinds */
    if (F.fail_writes-- % 2)
      F.stored = t;
    rc = frond__fail(err, FROND_ECOORD, "fake: request timed out");
  } else if (F.mode == OK || F.mode == LOST_ANSWER) {
    F.stored = t;
  }
  if (rc == 0 && (F.mode == LOST_ANSWER || F.mode == DOWN))
    rc =
        frond__fail(err, FROND_ECOORD, "fake: no answer to write %d", F.writes);
  if (F.mode == TAKEN)
    rc = frond__fail(err, FROND_ENODE_ID_LOST, "fake: taken over");
  pthread_mutex_unlock(&F.mu);
  return rc;
}

static int f_regain(frond_coord *c, int64_t *after, frond_error *err) {
  pthread_mutex_lock(&F.mu);
  F.regains++;
  *after = F.regain_after;
  pthread_mutex_unlock(&F.mu);
  return F.regain_rc ? frond__fail(err, F.regain_rc, "fake: regain") : 0;
}

static int f_release(frond_coord *c, frond_error *err) {
  return 0;
}

static int f_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                  frond_error *err) {
  *out = calloc(1, sizeof(**out));
  *n = 0;
  return 0;
}

static int f_clock(frond_coord *c, int64_t *off, char *ref, size_t len,
                   frond_error *err) {
  *off = 0;
  snprintf(ref, len, "the fake");
  return 0;
}

static int f_layout_get(frond_coord *c, char *spec, size_t len, int64_t *fl,
                        frond_error *err) {
  pthread_mutex_lock(&F.mu);
  snprintf(spec, len, "%s", F.spec[0] ? F.spec : c->layout_spec);
  *fl = F.floor;
  pthread_mutex_unlock(&F.mu);
  return 0;
}

static int f_layout_set(frond_coord *c, const char *spec, int64_t *fl,
                        frond_error *err) {
  return 0;
}

static void f_close(frond_coord *c) {}

static const frond_coord_methods fake_methods = {
    .iVersion = 2,
    .zScheme = "fake:",
    .xOpen = f_open,
    .xAcquire = f_acquire,
    .xFence = f_fence,
    .xRegain = f_regain,
    .xRelease = f_release,
    .xList = f_list,
    .xClockOffset = f_clock,
    .xLayoutGet = f_layout_get,
    .xLayoutSet = f_layout_set,
    .xClose = f_close,
    .bCacheFallback = 0,
    .bFenced = 1,
};

static frond_coord *fake_open(fake_clock *clk, const char *cache_dir) {
  frond_coord_options o;
  frond_coord *c = NULL;
  frond_error err = {0, ""};
  frond_coord_options_init(&o);
  o.advertise = "10.9.9.9:1";
  o.clock = fake_clock_read;
  o.clock_ctx = clk;
  o.cache_dir = cache_dir;
  o.window_ms = 1000;
  if (frond__coord_open_driver(&c, &fake_methods, "fake:", &o, &err) != 0)
    fail_msg("fake open: %s", err.message);
  return c;
}

static frond_gen_options small_opts(void) {
  frond_gen_options go;
  frond_gen_options_init(&go);
  go.max_ahead_ms = 100;
  go.max_wait_ms = 0;
  return go;
}

static int is_hanging(void *arg) {
  int h;
  (void)arg;
  pthread_mutex_lock(&F.mu);
  h = F.hanging;
  pthread_mutex_unlock(&F.mu);
  return h;
}

/* The first fence is durable (cache first) before the generator exists. */
static void test_fence_first_durable(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord_stats st;
  frond_coord *c;
  frond_gen *g;
  int64_t t0 = INT64_C(1800000000000), id = 0;
  (void)state;
  fake_reset();
  F.stored = t0 - 5000; /* an earlier holder's fence */
  fake_clock_set(&clk, t0);
  c = fake_open(&clk, dir);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  assert_int_equal(FX(writes), 1);
  assert_int_equal(FX(ahead_of_cache), 0);
  assert_int_equal(FX(stored), t0 + 100 + 1000); /* now + max_ahead + window */
  assert_int_equal(frond__gen_fence_ms(g), FX(stored));
  frond_coord_stats_get(c, &st);
  assert_int_equal(st.fence_ms, FX(stored));
  assert_int_equal(st.start_after_ms, t0 - 5000);
  assert_int_equal(st.node, 5);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id_ms(SMALL, id) > t0 - 5000);
  /* Close stores the exact high-water time as the fence: the fake clock
  ** has not moved, so that is the last ID's unit. */
  assert_int_equal(frond_coord_close(c, NULL), 0);
  assert_int_equal(FX(stored), id_ms(SMALL, id));
  tmpdir_remove(dir);
}

/* A close whose final fence fails for a moment (a request timed out,
** answered or not) tries again: the exact high water is stored, so that
** a later holder starts at once. One that stays down gives up within
** connect_ms, and sooner when the claim's validity ends; a lost claim is
** not tried again. The pauses (20 ms, doubling) only lengthen on a
** loaded machine, so each bound caps the number of writes: 7 tries fit
** in 2 s, 4 in 300 ms. */
static void test_close_tries_again(void **state) {
  static const struct {
    int fail_writes, mode;
    int64_t connect_ms, valid_ms; /* valid_ms 0: no validity */
    int rc, min_writes, max_writes;
  } k[] = {
      {3, OK, 60000, 0, 0, 4, 4},
      {0, DOWN, 2000, 0, FROND_ECOORD, 1, 7},
      {0, DOWN, 60000, 300, FROND_ECOORD, 1, 4},
      {0, TAKEN, 60000, 0, FROND_ENODE_ID_LOST, 1, 1},
  };
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  int64_t t0 = INT64_C(1800000000000), id = 0;
  (void)state;
  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
    frond_error err = {0, ""};
    int before, writes;
    fake_reset();
    fake_clock_set(&clk, t0);
    c = fake_open(&clk, dir);
    assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
    frond__coord_stop_threads(c); /* no renewal from here: close's writes */
    c->t.connect_ms = k[i].connect_ms;
    if (k[i].valid_ms)
      atomic_store(&c->valid_until_ns,
                   frond__mono_ns() + k[i].valid_ms * 1000000);
    before = FX(writes);
    pthread_mutex_lock(&F.mu);
    F.fail_writes = k[i].fail_writes;
    F.mode = k[i].mode;
    pthread_mutex_unlock(&F.mu);
    assert_int_equal(frond_coord_close(c, &err), k[i].rc);
    writes = FX(writes) - before;
    print_message("case %zu: %d writes\n", i, writes);
    assert_true(writes >= k[i].min_writes && writes <= k[i].max_writes);
    if (k[i].rc == 0) {
      assert_int_equal(err.code, 0);
      assert_int_equal(FX(stored), id_ms(SMALL, id));
    } else if (k[i].mode == DOWN) { /* the last try's error */
      char last[64];
      snprintf(last, sizeof(last), "fake: no answer to write %d",
               (int)FX(writes));
      assert_string_equal(err.message, last);
    }
  }
  tmpdir_remove(dir);
}

/* Partitioned: every write hangs. The generator issues up to its fence and
** not one unit further, whatever the clock says; once the coordinator
** answers, it goes on. */
static void test_fence_partition_stops_at_fence(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  int64_t t0 = INT64_C(1800000000000), fence, id = 0, max_ms = 0;
  int refused = 0, issued = 0;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  c = fake_open(&clk, dir);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  fence = FX(stored);
  fake_mode(HANG);
  /* The clock runs far past the fence; the fencer's write hangs. Below
  ** the fence the generator stops only for its own max_ahead (CLOCK_BEHIND,
  ** max_wait 0); once the clock is within max_ahead of it, at the fence
  ** (COORD). */
  for (int step = 0; step < 40; step++) {
    fake_clock_add(&clk, 50);
    frond__gen_tick(g);
    for (int i = 0; i < 2000; i++) {
      int rc = frond_gen_next(g, &id, NULL);
      if (rc == 0) {
        issued++;
        if (id_ms(SMALL, id) > max_ms)
          max_ms = id_ms(SMALL, id);
        continue;
      }
      if (rc == FROND_ECOORD)
        refused++;
      else
        assert_int_equal(rc, FROND_ECLOCK_BEHIND);
      break;
    }
  }
  assert_true(wait_until(is_hanging, NULL, 2000));
  assert_true(issued > 0);
  assert_true(refused > 0);
  assert_true(max_ms <= fence);
  assert_true(max_ms >= fence - 16); /* it did get there */
  fake_mode(OK);                     /* the link is back */
  for (int i = 0; i < 2000 && frond_gen_next(g, &id, NULL) != 0; i++)
    frond__sleep_ns(1000000);
  assert_true(id_ms(SMALL, id) > fence);
  assert_int_equal(FX(ahead_of_cache), 0);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* The renewals come every report interval by the monotonic clock: a wall
** clock stepped back 10 s (and then standing still) holds none of them
** back, so that a claim renewed by the report does not run out. */
static void test_report_after_clock_step_back(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  int64_t t0 = INT64_C(1800000000000), w;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  c = fake_open(&clk, dir);
  c->t.report_ms = 100;
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  fake_clock_add(&clk, -10000);
  w = FX(writes);
  for (int i = 0; i < 5000 && FX(writes) < w + 3; i++)
    frond__sleep_ns(1000000);
  assert_true(FX(writes) >= w + 3);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* A write whose answer is lost may have committed: the generator must not
** use it, and the cache already covers it. */
static void test_fence_lost_answer(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  frond_coord_cache cc;
  int64_t t0 = INT64_C(1800000000000), fence;
  int missing;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  c = fake_open(&clk, dir);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  fence = frond__gen_fence_ms(g);
  fake_mode(LOST_ANSWER);
  fake_clock_add(&clk, 800); /* less than half a window left: extend */
  for (int i = 0; i < 2000 && FX(stored) == fence; i++)
    frond__sleep_ns(1000000);
  assert_true(FX(stored) > fence); /* committed at the coordinator */
  frond__sleep_ns(20 * 1000000);
  assert_int_equal(frond__gen_fence_ms(g), fence); /* not confirmed */
  assert_int_equal(frond__coord_cache_read(c->cache_path, &cc, &missing, NULL),
                   0);
  assert_true(cc.fence_ms >= FX(stored));
  assert_int_equal(FX(ahead_of_cache), 0);
  fake_mode(OK);
  for (int i = 0; i < 2000 && frond__gen_fence_ms(g) == fence; i++)
    frond__sleep_ns(1000000);
  assert_true(frond__gen_fence_ms(g) > fence);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* After a takeover the node is blocked; when it regains its ID, the next
** ID is above the other holder's fence at once, even with the generator's
** own clock still below it (the 1 ms between the ticker and the watchdog
** held open). */
static void test_regain_resumes_above_other(void **state) {
  fake_clock clk, gclk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  int64_t t0 = INT64_C(1800000000000), other, id = 0;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  fake_clock_set(&gclk, t0);
  go.max_ahead_ms = 1000;
  go.clock = fake_clock_read;
  go.clock_ctx = &gclk;
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  fake_mode(TAKEN);
  assert_int_equal(frond__coord_fence_round(c, 1, NULL), FROND_ENODE_ID_LOST);
  assert_true(wait_state(c, FROND_ENODE_ID_LOST, 2000));
  assert_int_equal(frond_gen_next(g, &id, NULL), FROND_ENODE_ID_LOST);
  /* The other holder borrowed 300 ms ahead, then stopped. */
  other = t0 + 300;
  pthread_mutex_lock(&F.mu);
  F.regain_after = other;
  pthread_mutex_unlock(&F.mu);
  fake_mode(OK);
  fake_clock_add(&clk, 400); /* the coordinator's clock is past it */
  assert_true(wait_state(c, 0, 3000));
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id_ms(SMALL, id) > other);
  frond_coord_close(c, NULL);
}

static int cmp_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* A regain that completes before the watchdog looks (a loaded machine:
** the fencer's loss and regain take a few round trips, and the watchdog
** was not scheduled in between; here its threads are stopped and the
** test runs the fencer's rounds). The watchdog never blocked the
** generator, so it never resumed it above the other holder's fence: the
** regain itself must raise the generator past it before the new fence
** lets it on. Counts the IDs the regained node issues that the other
** holder of node ID 5 issued too, and those at or below its fence. */
static void test_regain_before_watchdog(void **state) {
  enum { THEIRS = 4000, OURS = 16000 };
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *a, *b;
  frond_gen *ga, *gb;
  int64_t t0 = INT64_C(1800000000000), fence_a, fence_b, id = 0;
  static int64_t theirs[THEIRS];
  int same = 0, at_or_below = 0, issued = 0;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  go.max_ahead_ms = 1000;
  go.clock = fake_clock_read;
  go.clock_ctx = &clk;
  a = fake_open(&clk, NULL);
  assert_int_equal(create(a, SMALL, &go, &ga, NULL), 0);
  frond__coord_stop_threads(a); /* the watchdog is not scheduled */
  fence_a = FX(stored);
  assert_int_equal(frond_gen_next(ga, &id, NULL), 0);
  /* a is cut off: its next fence write is refused. */
  fake_mode(TAKEN);
  assert_int_equal(frond__coord_fence_round(a, 1, NULL), FROND_ENODE_ID_LOST);
  /* b takes node ID 5 above a's fence, borrows ahead and dies. */
  fake_mode(OK);
  fake_clock_add(&clk, 1500);
  b = fake_open(&clk, NULL);
  assert_int_equal(create(b, SMALL, &go, &gb, NULL), 0);
  frond__coord_stop_threads(b);
  fence_b = FX(stored);
  assert_true(fence_b > fence_a);
  for (int i = 0; i < THEIRS; i++) {
    assert_int_equal(frond_gen_next(gb, &theirs[i], NULL), 0);
    assert_true(id_ms(SMALL, theirs[i]) > fence_a);
  }
  qsort(theirs, THEIRS, sizeof(int64_t), cmp_id);
  /* a's fencer regains: the row holds b's fence. */
  pthread_mutex_lock(&F.mu);
  F.regain_after = fence_b;
  pthread_mutex_unlock(&F.mu);
  assert_int_equal(frond__coord_fence_round(a, 1, NULL), 0);
  assert_true(frond__gen_fence_ms(ga) > fence_b);
  for (int i = 0; i < OURS && frond_gen_next(ga, &id, NULL) == 0; i++) {
    issued++;
    at_or_below += id_ms(SMALL, id) <= fence_b;
    same += bsearch(&id, theirs, THEIRS, sizeof(int64_t), cmp_id) != NULL;
  }
  print_message("regained node: %d IDs issued, %d at or below the other "
                "holder's fence, %d equal to the other holder's\n",
                issued, at_or_below, same);
  assert_int_equal(same, 0);
  assert_int_equal(at_or_below, 0);
  /* Once the clock is within max_ahead of b's fence, a issues above it. */
  fake_clock_set(&clk, fence_b - 500);
  frond__gen_tick(ga);
  assert_int_equal(frond_gen_next(ga, &id, NULL), 0);
  assert_true(id_ms(SMALL, id) > fence_b);
  frond_coord_close(a, NULL);
  frond_coord_close(b, NULL);
}

/* A claim's validity runs out as its renewal lands. The watchdog reads
** the old validity and blocks the generator; the fencer's write, between
** the two, read `applied` before the watchdog stored it, and so did not
** wake it. The look ends with the generator issuing again (the writer's
** validity read on a second look): with one look it stayed blocked under
** a valid claim until the watchdog's next wake, up to a second, every call
** refused with NODE_ID_LOST. The threads are stopped; the test is the
** watchdog and, in the hook, the fencer. */
static frond_coord *renewing;

static void renew_in_the_look(frond_coord *c) {
  if (c != renewing)
    return;
  renewing = NULL; /* once */
  atomic_store(&c->validity_ms, 60000);
  assert_int_equal(frond__coord_fence_round(c, 1, NULL), 0);
}

static void test_renewed_as_it_ran_out(void **state) {
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  int64_t id = 0, until;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, INT64_C(1800000000000));
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  frond__coord_stop_threads(c);
  atomic_store(&c->validity_ms, 1);
  assert_int_equal(frond__coord_fence_round(c, 1, NULL), 0);
  until = atomic_load(&c->valid_until_ns);
  while (frond__mono_ns() <= until) /* the validity runs out */
    frond__sleep_ns(1000000);
  assert_int_equal(frond__coord_blocking(c), FROND_ENODE_ID_LOST);
  renewing = c;
  atomic_store(&frond__coord_apply_hook, renew_in_the_look);
  frond__coord_apply(c);
  atomic_store(&frond__coord_apply_hook, NULL);
  assert_null(renewing); /* the fencer's write ran in the look */
  assert_int_equal(frond__coord_blocking(c), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond_coord_close(c, NULL);
}

/* A stored fence ahead of the clock: within the slack (max_ahead + window
** + max_wait) the node starts; beyond it, CLOCK_BEHIND naming both. */
static void test_start_slack(void **state) {
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  frond_error err = {0, ""};
  int64_t t0 = INT64_C(1800000000000), id = 0;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  F.stored = t0 + 90; /* right after a burst 90 ms ahead */
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, &err), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id_ms(SMALL, id) > t0 + 90);
  frond_coord_close(c, NULL);

  fake_reset();
  F.stored = t0 + 100 + 1000 + 1000; /* past max_ahead + window + wait */
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, &err), FROND_ECLOCK_BEHIND);
  assert_non_null(strstr(err.message, "ahead of the clock"));
  assert_int_equal(FX(writes), 0);
  frond_coord_close(c, NULL);
}

/* After a layout change, a node starts numerically above the floor, or
** refuses, naming both layouts, when the floor lies too far ahead. */
static void test_layout_floor_start(void **state) {
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_layout l = layout_of(SMALL);
  frond_coord *c;
  frond_gen *g;
  frond_error err = {0, ""};
  frond_fields f;
  int64_t t0 = INT64_C(1800000000000), id;
  (void)state;
  memset(&f, 0, sizeof(f));
  fake_reset();
  fake_clock_set(&clk, t0);
  f.time = (t0 + 50 - l.epoch_ms) / l.unit_ms; /* IDs up to 50 ms ahead */
  f.node = 1023;
  f.sequence = 15;
  assert_int_equal(frond_compose(&l, &f, &F.floor, NULL), 0);
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, &err), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id > FX(floor));
  frond_coord_close(c, NULL);

  fake_reset();
  f.time = (t0 + 600000 - l.epoch_ms) / l.unit_ms; /* ten minutes ahead */
  assert_int_equal(frond_compose(&l, &f, &F.floor, NULL), 0);
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, &err), FROND_ELAYOUT_MISMATCH);
  assert_non_null(strstr(err.message, "twitter-ish"));
  assert_non_null(strstr(err.message, "seq=4"));
  assert_int_equal(FX(writes), 0);
  frond_coord_close(c, NULL);
}

/* The layout changed and changed back while the node had lost its ID (a
** pause, a partition): the record's floor now lies above the fence the
** node left. The regain reads it: the regained node issues above it, or,
** with the floor further ahead than a restart explains, refuses
** LAYOUT_MISMATCH as a start does, and issues nothing. */
static void test_layout_floor_regain(void **state) {
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_layout l = layout_of(SMALL);
  frond_coord *c;
  frond_gen *g;
  frond_error err = {0, ""};
  frond_fields f;
  int64_t t0 = INT64_C(1800000000000), id = 0, floor, fence;
  int below = 0, issued = 0;
  (void)state;
  memset(&f, 0, sizeof(f));
  f.node = 1023;
  f.sequence = 15;
  for (int far = 0; far <= 1; far++) {
    fake_reset();
    fake_clock_set(&clk, t0);
    go.max_ahead_ms = 1000;
    go.clock = fake_clock_read;
    go.clock_ctx = &clk;
    c = fake_open(&clk, NULL);
    assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
    frond__coord_stop_threads(c);
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
    fence = FX(stored);
    fake_mode(TAKEN);
    assert_int_equal(frond__coord_fence_round(c, 1, NULL), FROND_ENODE_ID_LOST);
    /* Another layout ran 1.5 s past this node's fence (or ten minutes),
    ** and the fleet came back to this one with that floor. */
    f.time = (fence + (far ? 600000 : 1500) - l.epoch_ms) / l.unit_ms;
    assert_int_equal(frond_compose(&l, &f, &floor, NULL), 0);
    pthread_mutex_lock(&F.mu);
    F.floor = floor;
    F.regain_after = fence;
    pthread_mutex_unlock(&F.mu);
    fake_mode(OK);
    fake_clock_set(&clk, fence);
    if (far) {
      assert_int_equal(frond__coord_fence_round(c, 1, &err),
                       FROND_ELAYOUT_MISMATCH);
      assert_non_null(strstr(err.message, "twitter-ish"));
      assert_int_equal(FX(stored), fence); /* no fence written above it */
      assert_int_equal(frond__coord_fence_round(c, 1, NULL),
                       FROND_ELAYOUT_MISMATCH);
      frond_coord_close(c, NULL);
      continue;
    }
    assert_int_equal(frond__coord_fence_round(c, 1, NULL), 0);
    fake_clock_add(&clk, 600); /* within max_ahead of the floor */
    frond__gen_tick(g);
    for (int i = 0; i < 1000 && frond_gen_next(g, &id, NULL) == 0; i++) {
      issued++;
      below += id <= floor;
    }
    print_message("regained node: %d IDs issued, %d at or below the "
                  "layout floor\n",
                  issued, below);
    assert_true(issued > 0);
    assert_int_equal(below, 0);
    frond_coord_close(c, NULL);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fence_first_durable),
      cmocka_unit_test(test_close_tries_again),
      cmocka_unit_test(test_fence_partition_stops_at_fence),
      cmocka_unit_test(test_fence_lost_answer),
      cmocka_unit_test(test_report_after_clock_step_back),
      cmocka_unit_test(test_regain_resumes_above_other),
      cmocka_unit_test(test_regain_before_watchdog),
      cmocka_unit_test(test_renewed_as_it_ran_out),
      cmocka_unit_test(test_start_slack),
      cmocka_unit_test(test_layout_floor_start),
      cmocka_unit_test(test_layout_floor_regain),
  };
  return frond_run_tests(tests, NULL, NULL);
}
