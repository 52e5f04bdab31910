/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_gen_restart.c -- where a snowflake generator starts: after a record
** written under another layout (refused unless the change is asked for,
** and where it starts when it is), and within or beyond the start slack.
*/
#include "gen_util.h"
#include "core/high_water.h"

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

static frond_layout layout_of(const char *spec, int64_t epoch_ms) {
  frond_layout l;
  frond_error err = {0, ""};
  if (frond_layout_parse(spec, &l, &err) != 0)
    fail_msg("%s: %s", spec, err.message);
  l.epoch_ms = epoch_ms;
  return l;
}

/* Whether create_on asks for a layout change: the tests of where a
** changed layout starts do; test_layout_change_asked turns it off. */
static int change_asked = 1;

static int create_on(frond_gen **g, const frond_layout *l, fake_clock *c,
                     const char *path, frond_error *err) {
  frond_gen_options o =
      fake_options(c, FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS, 10);
  o.high_water_path = path;
  o.layout_change = change_asked;
  *g = NULL;
  return frond_gen_create(g, l, NODE, &o, err);
}

/* Create must refuse with `code`. A generator that starts anyway is closed
** before the test fails (its thread reads the test's clock). */
static void expect_refused(const frond_layout *l, fake_clock *c,
                           const char *path, int code, frond_error *err) {
  frond_gen *g;
  int rc = create_on(&g, l, c, path, err);
  if (rc == 0) {
    int64_t id = -1;
    frond_gen_next(g, &id, NULL);
    frond_gen_close(g, NULL);
    fail_msg("started (first ID %lld) instead of refusing with %s",
             (long long)id, frond_err_name(code));
  }
  assert_null(g);
  if (rc != code)
    fail_msg("%s instead of %s: %s", frond_err_name(rc), frond_err_name(code),
             err->message);
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

/* The same bits, an epoch 100 ms later: at the same wall time the new
** layout's IDs are those the old one issued 100 ms earlier. The restart
** must start above the old IDs, not above the old time. */
static void test_later_epoch(void **state) {
  dir d = dir_make();
  fake_clock c;
  frond_layout old = layout_of("time=41,node=10,seq=12", T0 - 60000);
  frond_layout neu = old;
  frond_gen *g;
  frond_error err = {0, ""};
  int64_t last, id = 0;
  (void)state;
  neu.epoch_ms += 100;
  fake_clock_set(&c, T0);
  last = run_old(&old, &c, d.path, 3);
  if (create_on(&g, &neu, &c, d.path, &err) != 0)
    fail_msg("restart: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond_gen_close(g, NULL);
  if (id <= last)
    fail_msg("first ID under the new layout %lld is not above the old "
             "layout's last %lld",
             (long long)id, (long long)last);
  /* The least such ID: the unit after the old one, 100 ms further on. */
  assert_int_equal(id >> 22, (last >> 22) + 1);
  assert_int_equal(id & 4095, 0);
  dir_remove(&d);
}

/* An epoch an hour later: the new layout would have to start an hour ahead
** of the clock. Refused, naming both layouts, the old last ID and what the
** new layout needs. */
static void test_later_epoch_too_far(void **state) {
  dir d = dir_make();
  fake_clock c;
  frond_layout old = layout_of("time=41,node=10,seq=12", T0 - 7200000);
  frond_layout neu = old;
  frond_error err = {0, ""};
  char spec[160], num[32];
  int64_t last;
  (void)state;
  neu.epoch_ms += 3600000;
  fake_clock_set(&c, T0);
  last = run_old(&old, &c, d.path, 1);
  expect_refused(&neu, &c, d.path, FROND_ELAYOUT_INVALID, &err);
  frond_layout_format(&old, spec, sizeof(spec));
  assert_non_null(strstr(err.message, spec));
  frond_layout_format(&neu, spec, sizeof(spec));
  assert_non_null(strstr(err.message, spec));
  snprintf(num, sizeof(num), "%lld", (long long)last);
  assert_non_null(strstr(err.message, num));
  assert_non_null(strstr(err.message, "2026-01-01T01:00:00.001Z"));
  dir_remove(&d);
}

/* An earlier epoch makes every new ID larger: start at the wall clock, no
** wait, no jump ahead. */
static void test_earlier_epoch(void **state) {
  dir d = dir_make();
  fake_clock c;
  frond_layout old = layout_of("time=41,node=10,seq=12", T0 - 60000);
  frond_layout neu = old;
  frond_gen *g;
  frond_error err = {0, ""};
  int64_t last, id;
  frond_fields f;
  (void)state;
  neu.epoch_ms -= 100;
  fake_clock_set(&c, T0);
  last = run_old(&old, &c, d.path, 3);
  if (create_on(&g, &neu, &c, d.path, &err) != 0)
    fail_msg("restart: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  f = fields(g, id);
  frond_gen_close(g, NULL);
  assert_true(id > last);
  assert_int_equal(f.unix_ms, T0);
  dir_remove(&d);
}

/* Other bits. One more time bit halves every ID at a given time: the new
** layout could only pass the old IDs decades from now, so it is refused.
** One time bit less doubles them: it starts at once. */
static void test_other_bits(void **state) {
  dir d = dir_make();
  fake_clock c;
  frond_layout a = layout_of("time=41,node=10,seq=12", T0 - 60000);
  frond_layout b = layout_of("time=42,node=9,seq=12", T0 - 60000);
  frond_gen *g;
  frond_error err = {0, ""};
  int64_t last, id;
  (void)state;
  fake_clock_set(&c, T0);
  last = run_old(&a, &c, d.path, 2);
  expect_refused(&b, &c, d.path, FROND_ELAYOUT_INVALID, &err);
  assert_non_null(strstr(err.message, "time=41,node=10,seq=12"));
  assert_non_null(strstr(err.message, "time=42,node=9,seq=12"));
  dir_remove(&d);

  d = dir_make();
  last = run_old(&b, &c, d.path, 2);
  if (create_on(&g, &a, &c, d.path, &err) != 0)
    fail_msg("restart: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond_gen_close(g, NULL);
  assert_true(id > last);
  dir_remove(&d);
}

/* A record whose time lies before the new layout's epoch: no negative
** unit, no false "clock went back". */
static void test_record_before_epoch(void **state) {
  dir d = dir_make();
  fake_clock c;
  frond_layout old = layout_of("time=41,node=10,seq=12", T0 - 10);
  frond_layout neu = layout_of("time=41,node=10,seq=12", T0 + 100);
  frond_gen *g;
  frond_error err = {0, ""};
  int64_t last, id;
  frond_fields f;
  (void)state;
  fake_clock_set(&c, T0);
  last = run_old(&old, &c, d.path, 1);
  fake_clock_set(&c, T0 + 200);
  if (create_on(&g, &neu, &c, d.path, &err) != 0)
    fail_msg("restart: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  f = fields(g, id);
  frond_gen_close(g, NULL);
  assert_true(id > last);
  assert_int_equal(f.unix_ms, T0 + 200);
  dir_remove(&d);
}

/* A record whose layout this version cannot read: refused, never guessed
** around. */
static void test_unknown_layout(void **state) {
  dir d = dir_make();
  fake_clock c;
  frond__hw *hw;
  frond__hw_record rec;
  frond_error err = {0, ""};
  (void)state;
  fake_clock_set(&c, T0);
  memset(&rec, 0, sizeof(rec));
  rec.node = NODE;
  rec.time_ms = T0 - 1000;
  rec.seq = 4095;
  snprintf(rec.layout, sizeof(rec.layout), "time=41,node=10,seq=12,hue=7");
  assert_int_equal(frond__hw_open(&hw, d.path, NULL), 0);
  assert_int_equal(frond__hw_write(hw, &rec, NULL), 0);
  frond__hw_close(hw);
  expect_refused(twitter(), &c, d.path, FROND_ELAYOUT_INVALID, &err);
  assert_non_null(strstr(err.message, "hue=7"));
  assert_non_null(strstr(err.message, d.path));
  dir_remove(&d);
}

/* A record of another layout is refused unless the change is asked for:
** the message names both layouts and what the switch would cost the
** recorded one; nothing is written, and the recorded layout still starts.
** Asked for, the switch happens, and the old layout is then refused in
** turn, until its IDs pass the new one's. */
static void test_layout_change_asked(void **state) {
  dir d = dir_make();
  fake_clock c;
  frond_layout old = layout_of("time=41,node=10,seq=12", T0 - 60000);
  frond_layout neu = *twitter();
  frond_gen *g;
  frond_error err = {0, ""};
  char num[32], when[40];
  int64_t last, id, t;
  (void)state;
  fake_clock_set(&c, T0);
  last = run_old(&old, &c, d.path, 2);
  change_asked = 0;
  expect_refused(&neu, &c, d.path, FROND_ELAYOUT_MISMATCH, &err);
  assert_non_null(strstr(err.message, "'twitter'"));
  assert_non_null(strstr(err.message, "time=41,node=10,seq=12"));
  assert_non_null(strstr(err.message, "--layout-change"));
  snprintf(num, sizeof(num), "%lld", (long long)last);
  assert_non_null(strstr(err.message, num));
  /* The cost: the old layout passes twitter's IDs of now only then. */
  t = frond__layout_lockout_ms(&old, &neu, T0);
  assert_true(t > T0 + 365 * INT64_C(86400000));
  frond__format_rfc3339(t, when, sizeof(when));
  assert_non_null(strstr(err.message, when));
  assert_non_null(strstr(err.message, "days"));
  /* Nothing changed: the recorded layout starts, above its record. */
  if (create_on(&g, &old, &c, d.path, &err) != 0)
    fail_msg("the recorded layout: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond_gen_close(g, NULL);
  assert_true(id > last);
  last = id;
  /* Asked for: it switches, and starts above every old ID. */
  change_asked = 1;
  if (create_on(&g, &neu, &c, d.path, &err) != 0)
    fail_msg("the switch asked for: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond_gen_close(g, NULL);
  assert_true(id > last);
  /* Now the old layout is the other one: refused even when asked for,
  ** since its IDs are below twitter's for years. */
  expect_refused(&old, &c, d.path, FROND_ELAYOUT_INVALID, &err);
  change_asked = 0;
  expect_refused(&old, &c, d.path, FROND_ELAYOUT_MISMATCH, &err);
  assert_non_null(strstr(err.message, "could not start here now anyway"));
  change_asked = 1;
  dir_remove(&d);
}

/* What a switch costs, as numbers: a layout with the same bits and a later
** epoch passes the earlier one's IDs after the epochs' distance; one whose
** IDs are larger now can come back at once; one whose time bits end first
** never. */
static void test_lockout_math(void **state) {
  frond_layout a = layout_of("time=41,node=10,seq=12", T0 - 86400000);
  frond_layout b = layout_of("time=41,node=10,seq=12", T0 - 2 * 86400000);
  frond_layout tiny = layout_of("time=20,node=10,seq=12", T0 - 1000);
  char buf[300];
  int64_t t;
  (void)state;
  /* From a (later epoch, smaller IDs) to b: a is locked out one day. */
  t = frond__layout_lockout_ms(&a, &b, T0);
  assert_true(t > T0 + 86400000 - 10 && t <= T0 + 86400000 + 10);
  frond__layout_lockout_text(&a, &b, T0, buf, sizeof(buf));
  assert_non_null(strstr(buf, "would be locked out until 2026-01-02T00:00"));
  assert_non_null(strstr(buf, "more the longer"));
  /* From b to a: b's IDs are larger already. */
  assert_true(frond__layout_lockout_ms(&b, &a, T0) <= T0);
  frond__layout_lockout_text(&b, &a, T0, buf, sizeof(buf));
  assert_non_null(strstr(buf, "could come back at once"));
  /* tiny's 2^20 ms (17 minutes) never reach a's IDs of now. */
  assert_true(frond__layout_lockout_ms(&tiny, &a, T0) == INT64_MAX);
  frond__layout_lockout_text(&tiny, &a, T0, buf, sizeof(buf));
  assert_non_null(strstr(buf, "for good"));
  /* Names for messages: a preset's name, else the spec. */
  assert_string_equal(frond__layout_label(twitter(), buf, sizeof(buf)),
                      "twitter");
  frond__layout_label(&tiny, buf, sizeof(buf));
  assert_non_null(strstr(buf, "time=20,node=10,seq=12"));
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
  int64_t last, id = 0;
  (void)state;
  fake_clock_set(&c, T0);
  last = run_old(&l, &c, d.path, 1000); /* T0 .. T0 + 999 */
  /* The fake clock stands still: a start that waited for it would fail
  ** at max_wait, never pass. */
  if (create_on(&g, &l, &c, d.path, &err) != 0)
    fail_msg("restart: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond_gen_close(g, NULL);
  assert_int_equal(id >> 22, (last >> 22) + 1);
  dir_remove(&d);
}

/* A coordinator's start 4 s ahead: within the slack when the coordinator's
** window is 5 s (the generator waits for the clock), refused with both
** times when only the local 1 s window counts. */
static void test_start_coordinator_window(void **state) {
  fake_clock c;
  frond_gen_options o =
      fake_options(&c, FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS, 10);
  frond__gen_fence f = {T0 + 4000, INT64_MAX, 5000, NULL, NULL};
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  advancer a;
  int64_t id = 0, id_ms = 0;
  int rc;
  (void)state;
  fake_clock_set(&c, T0);
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
      cmocka_unit_test(test_later_epoch),
      cmocka_unit_test(test_later_epoch_too_far),
      cmocka_unit_test(test_earlier_epoch),
      cmocka_unit_test(test_other_bits),
      cmocka_unit_test(test_record_before_epoch),
      cmocka_unit_test(test_unknown_layout),
      cmocka_unit_test(test_layout_change_asked),
      cmocka_unit_test(test_lockout_math),
      cmocka_unit_test(test_slack_rule),
      cmocka_unit_test(test_restart_after_burst),
      cmocka_unit_test(test_start_coordinator_window),
  };
  return frond_run_tests(tests, NULL, NULL);
}
