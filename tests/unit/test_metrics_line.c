/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_metrics_line.c -- one Prometheus text line read back
** (metrics_line.c): samples with and without labels, what is refused.
*/
#include "testutil.h"

#include "server/metrics_line.h"

#include <string.h>

static int parse(const char *s, frond__metrics_line *l) {
  return frond__metrics_line_parse(s, strlen(s), l);
}

/* A sample without labels is one: `frond_segment_tags_in_use 2`. */
static void test_no_labels(void **state) {
  frond__metrics_line l;
  (void)state;
  assert_int_equal(parse("frond_segment_tags_in_use 2", &l), 1);
  assert_string_equal(l.name, "frond_segment_tags_in_use");
  assert_int_equal(l.nlabels, 0);
  assert_true(l.is_int);
  assert_int_equal(l.ivalue, 2);
  assert_int_equal(parse("up\t1 1700000000000", &l), 1);
  assert_int_equal(l.ivalue, 1);
  assert_int_equal(parse("up1", &l), -1);
  assert_int_equal(parse("up", &l), -1);
  assert_int_equal(parse("up ", &l), -1);
}

static void test_labels(void **state) {
  frond__metrics_line l;
  (void)state;
  assert_int_equal(
      parse("frond_segment_buffer_last_id{tag=\"a\\\"b\",buffer=\"next\"} "
            "9007199254740993",
            &l),
      1);
  assert_string_equal(frond__metrics_label_get(&l, "tag"), "a\"b");
  assert_string_equal(frond__metrics_label_get(&l, "buffer"), "next");
  assert_true(l.is_int);
  assert_int_equal(l.ivalue, 9007199254740993LL);
  assert_int_equal(parse("x {a=\"1\"} 2", &l), 1);
  assert_int_equal(parse("x{a=\"1\"}2", &l), -1);
  /* Floats are samples, not integers: the reader decides. */
  assert_int_equal(parse("x 9.007199254740993e+15", &l), 1);
  assert_false(l.is_int);
  assert_int_equal(parse("x 5000.0", &l), 1);
  assert_false(l.is_int);
  assert_int_equal(parse("# HELP x y", &l), 0);
  assert_int_equal(parse("", &l), 0);
  assert_int_equal(parse("x{a=\"1\" 2", &l), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_labels),
      cmocka_unit_test(test_labels),
  };
  return frond_run_tests(tests, NULL, NULL);
}
