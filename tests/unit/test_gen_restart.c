/*
** test_gen_restart.c -- where a snowflake generator starts: within or
** beyond the start slack.
*/
#include "gen_util.h"
#include "os/highwater.h"

#define NODE 5

typedef struct dir {
  char *dir;
  char path[600];
} dir;

static dir dir_make(void) {
  dir d;
  d.dir = tmpdir_make();
  assert_int_equal(frond__hw_path(d.path, sizeof(d.path), d.dir, NODE), 0);
  return d;
}

static void dir_remove(dir *d) {
  tmpdir_remove(d->dir);
}

static int create_on(frond_gen **g, const frond_layout *l, fake_clock *c,
                     const char *path, frond_error *err) {
  frond_gen_options o;
  frond_gen_options_init(&o);
  o.clock = fake_clock_read;
  o.clock_ctx = c;
  o.max_wait_ms = 10;
  o.highwater_path = path;
  *g = NULL;
  return frond_gen_create(g, l, NODE, &o, err);
}

/* Run a generator under `l` from T0 on the fake clock, issuing `units`
** units' worth of IDs (borrowing ahead), and close it cleanly. Returns the
** largest ID issued. */
static int64_t run_old(const frond_layout *l, fake_clock *c, const char *path,
                       int units) {
  frond_gen *g;
  frond_error err = {0, ""};
  size_t per = (size_t)1 << l->seq_bits;
  int64_t *blk = malloc(sizeof(int64_t) * per), last = -1;
  assert_non_null(blk);
  if (create_on(&g, l, c, path, &err) != 0)
    fail_msg("old layout: %s", err.message);
  for (int k = 0; k < units; k++) {
    assert_int_equal(frond_gen_next_n(g, per, blk, NULL), 0);
    assert_true(blk[0] > last);
    last = blk[per - 1];
  }
  assert_int_equal(frond_gen_close(g, NULL), 0);
  free(blk);
  return last;
}

/* ---- the start slack ---------------------------------------------------- */

typedef struct advancer {
  pthread_t thread;
  fake_clock *c;
  _Atomic int stop;
} advancer;

/* The fake clock runs ten times faster than the real one. */
static void *advance_main(void *arg) {
  advancer *a = arg;
  while (!atomic_load(&a->stop)) {
    frond__sleep_ns(1000000);
    fake_clock_add(a->c, 10);
  }
  return NULL;
}

static void test_slack_rule(void **state) {
  (void)state;
  assert_int_equal(frond__start_slack_ms(1000, 1000, 10), 2010);
  assert_int_equal(frond__start_slack_ms(0, 5000, 0), 5000);
}

/* A restart right after a burst (the clean record max_ahead - 1 ms ahead
** of the clock: the next value is exactly max_ahead ahead) starts at once,
** right above the burst. */
static void test_restart_after_burst(void **state) {
  dir d = dir_make();
  fake_clock c;
  frond_layout l = *twitter();
  frond_gen *g;
  frond_error err = {0, ""};
  int64_t last, id, t;
  (void)state;
  fake_clock_set(&c, T0);
  last = run_old(&l, &c, d.path, 1000); /* T0 .. T0 + 999 */
  t = frond__mono_ns();
  if (create_on(&g, &l, &c, d.path, &err) != 0)
    fail_msg("restart: %s", err.message);
  t = frond__mono_ns() - t;
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond_gen_close(g, NULL);
  assert_int_equal(id >> 22, (last >> 22) + 1);
  assert_true(t < 500 * 1000000LL);
  dir_remove(&d);
}

/* A coordinator's start 4 s ahead: within the slack when the coordinator's
** window is 5 s (the generator waits for the clock), refused with both
** times when only the local 1 s window counts. */
static void test_start_coordinator_window(void **state) {
  fake_clock c;
  frond_gen_options o;
  frond__gen_fence f = {T0 + 4000, INT64_MAX, 5000, NULL, NULL};
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  advancer a;
  int64_t id, id_ms = 0;
  int rc;
  (void)state;
  fake_clock_set(&c, T0);
  frond_gen_options_init(&o);
  o.clock = fake_clock_read;
  o.clock_ctx = &c;
  o.max_wait_ms = 10;
  f.window_ms = 0;
  assert_int_equal(frond__gen_create_fenced(&g, twitter(), 1, &o, &f, &err),
                   FROND_ECLOCK_BEHIND);
  assert_null(g);
  assert_non_null(strstr(err.message, "2026-01-01T00:00:04.001Z"));
  assert_non_null(strstr(err.message, "2026-01-01T00:00:00.000Z"));
  assert_non_null(strstr(err.message, "the coordinator"));
  assert_non_null(strstr(err.message, "(2010 ms)"));
  f.window_ms = 5000;
  a.c = &c;
  a.stop = 0;
  assert_int_equal(pthread_create(&a.thread, NULL, advance_main, &a), 0);
  rc = frond__gen_create_fenced(&g, twitter(), 1, &o, &f, &err);
  if (rc == 0) {
    /* Started once the clock came within max_ahead of the start. */
    assert_true(fake_clock_read(&c) >= T0 + 3001);
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
    id_ms = fields(g, id).unix_ms;
    frond_gen_close(g, NULL);
  }
  atomic_store(&a.stop, 1);
  pthread_join(a.thread, NULL);
  if (rc != 0)
    fail_msg("within the slack: %s", err.message);
  assert_true(id_ms > T0 + 4000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slack_rule),
      cmocka_unit_test(test_restart_after_burst),
      cmocka_unit_test(test_start_coordinator_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
