/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_ready.c -- readiness per kind of ID (server/ready.c) from made-up
** facts: every reason /readyz, the status page, /metrics and INFO report,
** in the words they report it, and /readyz's first line.
*/
#include "testutil.h"

#include "server/ready.h"

#include "frond.h"

#define NOW INT64_C(1700000000000)

/* A healthy node on a fenced coordinator with a store. */
static void healthy(frond__ready_facts *f) {
  memset(f, 0, sizeof *f);
  f->now_ms = NOW;
  f->fenced = 1;
  f->last_write_ms = NOW - 200;
  f->fence_ms = NOW + 3000;
  f->window_ms = 3000;
  f->validity_ms = 10000;
  f->high_water_ms = NOW - 1;
  f->max_ahead_ms = 1000;
  f->seg_enabled = f->seg_open = f->store_ok = 1;
}

static void expect(const frond__ready_facts *f, frond__ready_reason sf,
                   frond__ready_reason seg) {
  frond__ready_reason r[FROND__KINDS];
  frond__ready_eval(f, r);
  assert_string_equal(frond__ready_label(r[FROND__KIND_SNOWFLAKE]),
                      frond__ready_label(sf));
  assert_string_equal(frond__ready_label(r[FROND__KIND_SEGMENT]),
                      frond__ready_label(seg));
}

static void line(const frond__ready_facts *f, int kind, char *out, size_t cap) {
  frond__ready_reason r[FROND__KINDS];
  frond__ready_eval(f, r);
  frond__ready_describe(f, kind, r[kind], out, cap);
}

static void first_line(const frond__ready_facts *f, char *out, size_t cap) {
  frond__ready_reason r[FROND__KINDS];
  frond__ready_eval(f, r);
  frond__ready_summary(f, r, out, cap);
}

static void test_ready_both(void **state) {
  frond__ready_facts f;
  frond__ready_reason r[FROND__KINDS];
  char s[400];
  (void)state;
  healthy(&f);
  expect(&f, FROND__READY_OK, FROND__READY_OK);
  frond__ready_eval(&f, r);
  assert_true(frond__ready_all(r));
  first_line(&f, s, sizeof s);
  assert_string_equal(s, "ready");
  line(&f, FROND__KIND_SNOWFLAKE, s, sizeof s);
  assert_string_equal(s, "ready");
  /* An idle node's fence stays a window ahead too (every write, the
  ** report's included, asks for now + max_ahead + window): one below the
  ** clock is a stop, whatever the last round said. */
  f.fence_ms = NOW - 5000;
  expect(&f, FROND__READY_FENCE_REACHED, FROND__READY_OK);
}

/* The coordinator hangs: the fence write is in flight, no round has
** failed yet (coord_error 0), and the generator already refuses. Readiness
** follows the generator, not the last round. */
static void test_fence_reached_while_write_hangs(void **state) {
  frond__ready_facts f;
  char s[400];
  (void)state;
  healthy(&f);
  f.last_write_ms = NOW - 9000;
  f.fence_ms = NOW - 1;
  expect(&f, FROND__READY_FENCE_REACHED, FROND__READY_OK);
  line(&f, FROND__KIND_SNOWFLAKE, s, sizeof s);
  assert_string_equal(s, "not ready: node ID held, stopped at its fence: the "
                         "coordinator has not confirmed a fence (for 9s; "
                         "window_ms 3000 used up, issuing again once it "
                         "confirms one)");
  /* At the clock's unit exactly: that unit may still be issued. */
  f.fence_ms = NOW;
  expect(&f, FROND__READY_OK, FROND__READY_OK);
  /* A busy node borrows up to max_ahead past the clock: it reaches the
  ** fence before the clock does. */
  f.fence_ms = NOW + 500;
  f.high_water_ms = NOW + 500;
  expect(&f, FROND__READY_FENCE_REACHED, FROND__READY_OK);
  f.high_water_ms = NOW + 499;
  expect(&f, FROND__READY_OK, FROND__READY_OK);
  /* In the layout's units: a 1-second unit is allowed while its first ms
  ** is at or below the fence. */
  f.high_water_ms = NOW - 1;
  f.unit_ms = 1000;
  f.epoch_ms = NOW - 7000;
  f.now_ms = NOW + 1500;
  f.fence_ms = NOW + 1000;
  expect(&f, FROND__READY_OK, FROND__READY_OK);
  assert_int_equal(frond__ready_next_unit_ms(&f), NOW + 1000);
  f.fence_ms = NOW + 999;
  expect(&f, FROND__READY_FENCE_REACHED, FROND__READY_OK);
  /* Without a coordinator fence there is nothing to reach. */
  f.fenced = 0;
  expect(&f, FROND__READY_OK, FROND__READY_OK);
}

/* The coordinator does not answer, the fence is still ahead: issuing,
** ready, and the line says for how long at most. Then the fence is used
** up: not ready, in those words, the segment IDs still ready. */
static void test_riding_out_then_fence(void **state) {
  frond__ready_facts f;
  frond__ready_reason r[FROND__KINDS];
  char s[400];
  (void)state;
  healthy(&f);
  f.coord_error = FROND_ECOORD;
  f.last_write_ms = NOW - 4000;
  f.fence_ms = NOW + 9500;
  f.window_ms = 16000;
  expect(&f, FROND__READY_OK, FROND__READY_OK);
  line(&f, FROND__KIND_SNOWFLAKE, s, sizeof s);
  assert_string_equal(s, "ready (coordinator not reached for 4s; issuing up "
                         "to its fence, 10s left)");
  f.now_ms = NOW + 9501;
  expect(&f, FROND__READY_FENCE_REACHED, FROND__READY_OK);
  frond__ready_eval(&f, r);
  assert_false(frond__ready_all(r));
  line(&f, FROND__KIND_SNOWFLAKE, s, sizeof s);
  assert_string_equal(s, "not ready: node ID held, stopped at its fence: the "
                         "coordinator has not confirmed a fence (for 14s; "
                         "window_ms 16000 used up, issuing again once it "
                         "confirms one)");
  line(&f, FROND__KIND_SEGMENT, s, sizeof s);
  assert_string_equal(s, "ready");
  first_line(&f, s, sizeof s);
  assert_string_equal(s, "not ready: node ID held, stopped at its fence: the "
                         "coordinator has not confirmed a fence");
}

static void test_node_id_not_held(void **state) {
  frond__ready_facts f;
  char s[400];
  (void)state;
  healthy(&f);
  /* The session (or lease) ran out while the coordinator did not answer. */
  f.coord_state = FROND_ENODE_ID_LOST;
  f.validity_expired = 1;
  f.coord_error = FROND_ECOORD;
  f.last_write_ms = NOW - 12000;
  expect(&f, FROND__READY_NODE_NOT_HELD, FROND__READY_OK);
  line(&f, FROND__KIND_SNOWFLAKE, s, sizeof s);
  assert_string_equal(s, "not ready: node ID not held (coordinator not "
                         "reached for 12s, longer than the 10000 ms its "
                         "claim is sure for; taking it back once it "
                         "answers)");
  /* The coordinator said another holder has it. */
  f.validity_expired = 0;
  f.coord_lost = 1;
  expect(&f, FROND__READY_NODE_NOT_HELD, FROND__READY_OK);
  first_line(&f, s, sizeof s);
  assert_string_equal(s, "not ready: node ID not held");
}

static void test_other_coordinator_states(void **state) {
  frond__ready_facts f;
  (void)state;
  healthy(&f);
  f.coord_state = FROND_ECOORD; /* started from the cache */
  expect(&f, FROND__READY_COORD_NOT_REACHED, FROND__READY_OK);
  f.coord_state = FROND_ELAYOUT_MISMATCH;
  expect(&f, FROND__READY_LAYOUT_CHANGED, FROND__READY_OK);
  f.coord_state = FROND_ECLOSED;
  expect(&f, FROND__READY_DRAINING, FROND__READY_OK);
  f.coord_state = FROND_EFORKED;
  expect(&f, FROND__READY_NODE_NOT_HELD, FROND__READY_OK);
}

static void test_clock_behind(void **state) {
  frond__ready_facts f;
  char s[400];
  (void)state;
  healthy(&f);
  /* The clock went back below what the node issued, beyond max_ahead. */
  f.high_water_ms = NOW + 1500;
  expect(&f, FROND__READY_CLOCK_BEHIND, FROND__READY_OK);
  line(&f, FROND__KIND_SNOWFLAKE, s, sizeof s);
  assert_string_equal(s, "not ready: clock behind (the wall clock is 1500 "
                         "ms behind what this node ID issued)");
  /* Within max_ahead: borrowing, not behind. */
  f.high_water_ms = NOW + 1000;
  expect(&f, FROND__READY_OK, FROND__READY_OK);
  /* Regained above another holder's fence: the coordinator says
  ** NODE_ID_LOST until the clock catches up; that is the clock's wait. */
  f.coord_state = FROND_ENODE_ID_LOST;
  f.resume_after_ms = NOW + 4000;
  expect(&f, FROND__READY_CLOCK_BEHIND, FROND__READY_OK);
  f.resume_after_ms = NOW + 500; /* within max_ahead: something else */
  expect(&f, FROND__READY_NODE_NOT_HELD, FROND__READY_OK);
}

static void test_store_states(void **state) {
  frond__ready_facts f;
  frond__ready_reason r[FROND__KINDS];
  char s[400];
  (void)state;
  healthy(&f);
  f.store_ok = 0;
  expect(&f, FROND__READY_OK, FROND__READY_STORE_NOT_REACHED);
  first_line(&f, s, sizeof s);
  assert_string_equal(s, "not ready: store not reached");
  f.seg_open = 0;
  expect(&f, FROND__READY_OK, FROND__READY_STORE_NOT_REACHED);
  f.store_refusing = FROND_ESTORE_PERMANENT;
  expect(&f, FROND__READY_OK, FROND__READY_STORE_REFUSING);
  line(&f, FROND__KIND_SEGMENT, s, sizeof s);
  assert_string_equal(s, "not ready: store refusing (STORE_PERMANENT; "
                         "retrying)");
  /* store = none: segment is not a configured kind; /readyz is ready. */
  f.seg_enabled = 0;
  expect(&f, FROND__READY_OK, FROND__READY_NO_STORE);
  frond__ready_eval(&f, r);
  assert_true(frond__ready_all(r));
  line(&f, FROND__KIND_SEGMENT, s, sizeof s);
  assert_string_equal(s, "not ready: no store configured (store = none)");
  /* Both kinds down: both reasons on the first line. */
  healthy(&f);
  f.store_ok = 0;
  f.coord_state = FROND_ENODE_ID_LOST;
  f.coord_lost = 1;
  first_line(&f, s, sizeof s);
  assert_string_equal(s, "not ready: node ID not held; store not reached");
}

static void test_draining(void **state) {
  frond__ready_facts f;
  char s[400];
  (void)state;
  healthy(&f);
  f.draining = 1;
  expect(&f, FROND__READY_DRAINING, FROND__READY_DRAINING);
  first_line(&f, s, sizeof s);
  assert_string_equal(s, "draining");
}

/* The coordinator not yet checked against the store's record: snowflake
** IDs are not ready, segment IDs are; the coordinator's own reason (a
** start from the cache, not reached) is told first; a drain before both. */
static void test_coord_unchecked(void **state) {
  frond__ready_facts f;
  char s[400];
  (void)state;
  healthy(&f);
  f.coord_unchecked = 1;
  expect(&f, FROND__READY_COORD_UNCHECKED, FROND__READY_OK);
  first_line(&f, s, sizeof s);
  assert_string_equal(s, "not ready: the coordinator not yet checked "
                         "against the store's record");
  assert_string_equal(frond__ready_label(FROND__READY_COORD_UNCHECKED),
                      "coordinator_unchecked");
  f.coord_state = FROND_ECOORD;
  expect(&f, FROND__READY_COORD_NOT_REACHED, FROND__READY_OK);
  f.draining = 1;
  expect(&f, FROND__READY_DRAINING, FROND__READY_DRAINING);
}

static void test_kind_names(void **state) {
  (void)state;
  assert_int_equal(frond__ready_kind_parse("snowflake", 9),
                   FROND__KIND_SNOWFLAKE);
  assert_int_equal(frond__ready_kind_parse("segment", 7), FROND__KIND_SEGMENT);
  assert_int_equal(frond__ready_kind_parse("segments", 8), -1);
  assert_int_equal(frond__ready_kind_parse("seg", 3), -1);
  assert_int_equal(frond__ready_kind_parse("", 0), -1);
  assert_string_equal(frond__ready_label(FROND__READY_FENCE_REACHED),
                      "fence_reached");
  assert_string_equal(frond__ready_label(FROND__READY_REASONS), "unknown");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ready_both),
      cmocka_unit_test(test_riding_out_then_fence),
      cmocka_unit_test(test_fence_reached_while_write_hangs),
      cmocka_unit_test(test_node_id_not_held),
      cmocka_unit_test(test_other_coordinator_states),
      cmocka_unit_test(test_clock_behind),
      cmocka_unit_test(test_store_states),
      cmocka_unit_test(test_draining),
      cmocka_unit_test(test_coord_unchecked),
      cmocka_unit_test(test_kind_names),
  };
  return frond_run_tests(tests, NULL, NULL);
}
