/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_gen_sleep.c -- the snowflake generator's clock thread sleeps when
** nobody issues, and the first call after an idle spell is still right:
** it carries the clock's time, respects max_ahead against a clock that
** moved while nobody looked, waits for the reservation or the fence that
** nothing extended meanwhile, and wakes the thread.
**
** Everything runs on a fake clock; only the idle spell itself is real
** time (sleep_ms is short here).
*/
#include "gen_util.h"

#include <inttypes.h>
#include <unistd.h>

#define SLEEP_MS 30

static frond_gen_options sleepy(fake_clock *c, int64_t max_wait) {
  frond_gen_options o =
      fake_options(c, FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS, max_wait);
  o.sleep_ms = SLEEP_MS;
  return o;
}

static frond_gen *make(const frond_gen_options *o) {
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  if (frond_gen_create(&g, twitter(), 3, o, &err) != 0)
    fail_msg("create: %s", err.message);
  return g;
}

/* Wait (bounded, real time) until the clock thread sleeps. */
static void wait_asleep(frond_gen *g) {
  frond_gen_stats st;
  int64_t deadline = frond__mono_ns() + 5000000000LL;
  do {
    frond_gen_stats_get(g, &st);
    if (st.asleep)
      return;
    frond__sleep_ns(2000000);
  } while (frond__mono_ns() < deadline);
  fail_msg("the clock thread never went to sleep");
}

/* A generator on c with a high-water file at path, one ID issued, its
** clock thread asleep. */
static frond_gen *asleep_on_file(fake_clock *c, int64_t max_wait,
                                 const char *path) {
  frond_gen_options o = sleepy(c, max_wait);
  frond_gen *g;
  int64_t id = 0;
  o.high_water_path = path;
  g = make(&o);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  wait_asleep(g);
  return g;
}

static int asleep(frond_gen *g) {
  frond_gen_stats st;
  frond_gen_stats_get(g, &st);
  return st.asleep;
}

/* Idle: it sleeps, and while it sleeps it no longer follows the clock
** (nothing runs); a call wakes it and carries the clock's time. Without
** the limit dropping to 0 at sleep, that call would take the old limit on
** the hot path and issue an ID of the last tick's time. */
static void test_sleeps_and_wakes(void **state) {
  fake_clock c;
  frond_gen_options o;
  frond_gen_stats st;
  frond_gen *g;
  int64_t id = 0, hw;
  (void)state;
  fake_clock_set(&c, T0);
  o = sleepy(&c, -1);
  g = make(&o);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0);
  wait_asleep(g);
  hw = frond_gen_high_water_ms(g);
  /* Asleep: the clock moves, nothing follows it. */
  fake_clock_add(&c, 10000);
  frond__sleep_ns(50 * 1000000);
  assert_int_equal(frond_gen_high_water_ms(g), hw);
  assert_true(asleep(g));
  /* The first call reads the clock. */
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 10000);
  assert_false(asleep(g));
  /* Awake again: it follows the clock by itself. */
  fake_clock_add(&c, 5);
  frond__sleep_ns(20 * 1000000);
  assert_int_equal(frond_gen_high_water_ms(g), T0 + 10004);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 10005);
  frond_gen_stats_get(g, &st);
  assert_int_equal(st.sleeps, 1);
  frond_gen_close(g, NULL);
}

/* The clock went back while the thread slept: the first call must not
** issue more than max_ahead in front of it (with a stale limit it would,
** on the hot path), and it consumes nothing. */
static void test_clock_back_while_asleep(void **state) {
  fake_clock c;
  frond_gen_options o;
  frond_gen *g;
  frond_error err = {0, ""};
  int64_t id = -1, hw;
  (void)state;
  fake_clock_set(&c, T0 + 10000);
  o = sleepy(&c, 0);
  g = make(&o);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  hw = frond_gen_high_water_ms(g);
  wait_asleep(g);
  fake_clock_add(&c, -5000);
  id = -1;
  assert_int_equal(frond_gen_next(g, &id, &err), FROND_ECLOCK_BEHIND);
  assert_int_equal(id, -1);
  assert_int_equal(frond_gen_high_water_ms(g), hw);
  /* Back within max_ahead of the logical clock: it issues, above. */
  fake_clock_add(&c, 4500);
  assert_int_equal(frond_gen_next(g, &id, &err), 0);
  assert_true(fields(g, id).unix_ms >= T0 + 10000);
  frond_gen_close(g, NULL);
}

/* With a high-water file: nothing is written while asleep; the first call
** after the reservation ran out waits for one write, and carries the new
** time. */
static void test_reservation_after_sleep(void **state) {
  fake_clock c;
  frond_gen_stats a, b;
  frond_gen *g;
  char *dir = tmpdir_make(), path[600];
  int64_t id = 0;
  (void)state;
  snprintf(path, sizeof(path), "%s/hw", dir);
  fake_clock_set(&c, T0);
  g = asleep_on_file(&c, 2000, path);
  frond_gen_stats_get(g, &a);
  fake_clock_add(&c, 60000); /* far past the reservation */
  frond__sleep_ns(30 * 1000000);
  frond_gen_stats_get(g, &b);
  assert_int_equal(b.reservations, a.reservations);
  assert_int_equal(b.reserved_ms, a.reserved_ms);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 60000);
  frond_gen_stats_get(g, &b);
  assert_true(b.reserved_ms >=
              T0 + 60000 + FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS);
  assert_true(b.reservations > a.reservations);
  assert_int_equal(frond_gen_close(g, NULL), 0);
  tmpdir_remove(dir);
}

/* The reservation write the sleep skipped does not count against
** max_wait: with max_wait 0 (no call may wait on the clock), the first call
** after a long sleep still waits for that one write and gets its ID.
** Before, it failed with CLOCK_BEHIND whenever the write (an fsync) took
** longer than max_wait, as a loaded disk's does. It waits up to 1 s
** (frond.h's max_wait_ms), no longer: a call that fails having waited
** that long kept its bound, on a machine whose write took longer, and
** the round is made again (at most 5); one that fails sooner did not
** wait, and fails the test. */
static void test_first_call_waits_for_the_skipped_reservation(void **state) {
  int rounds;
  (void)state;
  for (rounds = 1; rounds <= 5; rounds++) {
    fake_clock c;
    frond_gen *g;
    frond_error err = {0, ""};
    char *dir = tmpdir_make(), path[600];
    int64_t id = 0, t, waited_ms;
    int rc;
    snprintf(path, sizeof(path), "%s/hw", dir);
    fake_clock_set(&c, T0);
    g = asleep_on_file(&c, 0, path);
    fake_clock_add(&c, 60000); /* far past the reservation */
    t = frond__mono_ns();
    rc = frond_gen_next(g, &id, &err);
    waited_ms = (frond__mono_ns() - t) / 1000000;
    if (rc == 0)
      assert_int_equal(fields(g, id).unix_ms, T0 + 60000);
    else if (rc != FROND_ECLOCK_BEHIND || waited_ms < 1000)
      fail_msg("first call after the sleep, after %" PRId64 " ms: %s",
               waited_ms, err.message);
    else
      print_message("round %d: the reservation took over %" PRId64 " ms: %s\n",
                    rounds, waited_ms, err.message);
    assert_int_equal(frond_gen_close(g, NULL), 0);
    tmpdir_remove(dir);
    if (rc == 0)
      return;
  }
  fail_msg("the reservation write took over 1 s in each of 5 rounds");
}

/* Under a coordinator fence that nobody extended while asleep: the first
** call asks through the want hook and goes through when it is served. */
typedef struct want_ctx {
  frond_gen *g;
  fake_clock *c;
  _Atomic int calls;
} want_ctx;

static void want_hook(void *ctx) {
  want_ctx *w = ctx;
  atomic_fetch_add(&w->calls, 1);
  frond__gen_set_fence(w->g, fake_clock_read(w->c) + 4000);
}

static void test_fence_after_sleep(void **state) {
  fake_clock c;
  frond_gen_options o;
  want_ctx w = {NULL, &c, 0};
  frond__gen_fence f = {0, T0 + 2000, 0, want_hook, &w};
  frond_gen *g = NULL;
  int64_t id = 0;
  (void)state;
  fake_clock_set(&c, T0);
  o = sleepy(&c, 50);
  assert_int_equal(frond__gen_create_fenced(&g, twitter(), 4, &o, &f, NULL), 0);
  w.g = g;
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  wait_asleep(g);
  fake_clock_add(&c, 30000);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 30000);
  assert_int_equal(atomic_load(&w.calls), 1);
  assert_int_equal(frond__gen_fence_ms(g), T0 + 34000);
  frond_gen_close(g, NULL);
}

/* sleep_ms = 0: the thread never sleeps. */
static void test_sleep_off(void **state) {
  fake_clock c;
  frond_gen_options o;
  frond_gen *g;
  int64_t id;
  (void)state;
  fake_clock_set(&c, T0);
  o = sleepy(&c, -1);
  o.sleep_ms = 0;
  g = make(&o);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond__sleep_ns(150 * 1000000);
  assert_false(asleep(g));
  o.sleep_ms = -1;
  assert_int_equal(
      frond_gen_create(&(frond_gen *){NULL}, twitter(), 1, &o, NULL),
      FROND_EINVAL);
  frond_gen_close(g, NULL);
}

/* Threads that issue in bursts with idle gaps, so that the clock thread
** falls asleep and wakes again and again under them: every ID unique,
** increasing per thread, and never ahead of the (moving) clock by more
** than max_ahead. */
#define BURSTS 40
#define PER_BURST 200

typedef struct burster {
  frond_gen *g;
  fake_clock *c;
  int id;
  int64_t *out;
  int n;
  int bad;
} burster;

static void *burst_main(void *arg) {
  burster *b = arg;
  int64_t prev = -1, id;
  for (int k = 0; k < BURSTS; k++) {
    for (int i = 0; i < PER_BURST; i++) {
      int64_t now = fake_clock_read(b->c);
      if (frond_gen_next(b->g, &id, NULL) != 0)
        continue;
      if (id <= prev ||
          fields(b->g, id).unix_ms > fake_clock_read(b->c) + 1000 ||
          fields(b->g, id).unix_ms < now - 1000)
        b->bad++;
      prev = id;
      b->out[b->n++] = id;
    }
    if (b->id == 0)
      fake_clock_add(b->c, 7);
    frond__sleep_ns((k % 3 == 0 ? SLEEP_MS + 20 : 1) * 1000000LL);
  }
  return NULL;
}

static void test_bursts_unique(void **state) {
  fake_clock c;
  frond_gen_options o;
  frond_gen_stats st;
  frond_gen *g;
  burster b[3];
  pthread_t th[3];
  int64_t *all = malloc(3 * BURSTS * PER_BURST * sizeof(*all));
  int n = 0;
  (void)state;
  fake_clock_set(&c, T0);
  o = sleepy(&c, 20);
  g = make(&o);
  for (int i = 0; i < 3; i++) {
    b[i] = (burster){g, &c, i, all + i * BURSTS * PER_BURST, 0, 0};
    pthread_create(&th[i], NULL, burst_main, &b[i]);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(b[i].bad, 0);
    memmove(all + n, b[i].out, (size_t)b[i].n * sizeof(*all));
    n += b[i].n;
  }
  assert_true(n > BURSTS * PER_BURST);
  qsort(all, (size_t)n, sizeof(*all), cmp_i64);
  for (int i = 1; i < n; i++)
    assert_true(all[i] > all[i - 1]);
  frond_gen_stats_get(g, &st);
  assert_true(st.sleeps >= 1);
  free(all);
  frond_gen_close(g, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sleeps_and_wakes),
      cmocka_unit_test(test_clock_back_while_asleep),
      cmocka_unit_test(test_reservation_after_sleep),
      cmocka_unit_test(test_first_call_waits_for_the_skipped_reservation),
      cmocka_unit_test(test_fence_after_sleep),
      cmocka_unit_test(test_sleep_off),
      cmocka_unit_test(test_bursts_unique),
  };
  return frond_run_tests(tests, NULL, NULL);
}
