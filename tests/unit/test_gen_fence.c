/*
** test_gen_fence.c -- the snowflake generator's limits under pressure: a
** call that fails consumes nothing.
*/
#include "gen_util.h"

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
    assert_int_equal(frond_gen_next_n(g, 4096, blk, &err),
                     FROND_ECLOCK_BEHIND);
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
  int64_t id, hw;
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
    assert_int_equal(pthread_create(&h[i].thread, NULL, hammer_main, &h[i]),
                     0);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failed_call_consumes_nothing),
      cmocka_unit_test(test_hammer_past_max_ahead),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
