/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_seg_order.c -- each store declares the order it keeps, and only
** that holds. A store whose row goes back hands the allocator a segment
** below the current one: declared in tag order, the wrappers' rollback
** guard refuses it and the tag's IDs keep increasing; declared in
** segment order with guards of its own (as multi: is), it is served,
** unique but below, and a
** caller that took a batch's last ID for its largest would be wrong. The
** declaration, frond_seg_order(), is what tells the two apart.
*/
#include "testutil.h"

#include "store/store.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define STEP 10

/* One tag, "t", whose row starts at 100 and goes back to 50 after its
** first allocation (a failover that lost writes). */
static _Atomic int declared;
static _Atomic int own_guards; /* answers FROND__STORE_ROLLBACKS */
static _Atomic int64_t row;
static _Atomic int allocs;

static int lower_open(const char *uri, frond_store **out, frond_error *err);
static void lower_close(frond_store *st) {
  free(st);
}
static int lower_schema(frond_store *st, frond_error *err) {
  (void)st;
  (void)err;
  return 0;
}
static int lower_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err) {
  (void)st;
  if (strcmp(tag, "t") != 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND, NULL);
  if (allocs++ == 1)
    row = 50;
  row += step ? step : STEP;
  *max_id = row;
  *row_step = STEP;
  return 0;
}
static int lower_list(frond_store *st, frond_tag_row **out, size_t *n,
                      frond_error *err) {
  (void)st;
  (void)err;
  *out = calloc(1, sizeof(**out));
  strcpy((*out)->tag, "t");
  (*out)->step = STEP;
  (*out)->max_id = row;
  *n = 1;
  return 0;
}
static int lower_get(frond_store *st, const char *tag, frond_tag_row *out,
                     frond_error *err) {
  frond_tag_row *rows;
  size_t n;
  if (strcmp(tag, "t") != 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND, NULL);
  lower_list(st, &rows, &n, err);
  *out = rows[0];
  free(rows);
  return 0;
}
static int lower_control(frond_store *st, int op, void *arg, frond_error *err) {
  (void)st;
  (void)err;
  if (op == FROND__STORE_ROLLBACKS && own_guards) {
    *(uint64_t *)arg = 0;
    return 0;
  }
  if (op != FROND__STORE_ORDER)
    return FROND_EINVAL;
  *(int *)arg = declared;
  return 0;
}
static const frond_store_methods lower_methods = {
    4,           "lower:",   "lower",   lower_open, lower_close,  lower_schema,
    lower_alloc, lower_list, lower_get, NULL,       NULL,         NULL,
    NULL,        NULL,       NULL,      NULL,       lower_control};
static int lower_open(const char *uri, frond_store **out, frond_error *err) {
  (void)uri;
  if ((*out = calloc(1, sizeof(**out))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  (*out)->methods = &lower_methods;
  return 0;
}

static int setup(void **state) {
  (void)state;
  frond__store_register(&lower_methods);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return 0;
}

static void quiet(void *ctx, int level, const char *msg) {
  (void)ctx;
  (void)level;
  (void)msg;
}

/* n IDs of t from a fresh allocator over a store declaring `order`, and
** keeping guards of its own when `own`. */
static frond_seg *take_n(int order, int own, int64_t *ids, size_t n) {
  frond_seg *s;
  frond_seg_options o;
  frond_error e = {0, ""};
  declared = order;
  own_guards = own;
  row = 100;
  allocs = 0;
  frond_seg_options_init(&o);
  o.loaders = 1;
  assert_int_equal(frond_seg_open(&s, "lower:", &o, &e), 0);
  assert_int_equal(frond_seg_order(s), order);
  assert_int_equal(frond_seg_next_n(s, "t", 1, n, ids, &e), 0);
  return s;
}

/* 20 IDs; a store in segment order keeps its own guards, as multi: does. */
static frond_seg *take(int order, int64_t *ids) {
  return take_n(order, order == FROND_SEG_ORDER_SEGMENT, ids, 20);
}

static int increasing(const int64_t *ids, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (ids[i] <= ids[i - 1])
      return 0;
  return 1;
}

static int64_t largest(const int64_t *ids, size_t n) {
  int64_t m = ids[0];
  for (size_t i = 1; i < n; i++)
    m = ids[i] > m ? ids[i] : m;
  return m;
}

/* Tag order: the lower segment is refused and replaced by one past the
** first; the batch increases, and its last ID is its largest. */
static void test_tag_order_is_kept(void **state) {
  frond_seg_stats ss;
  int64_t ids[20];
  frond_seg *s;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  s = take(FROND_SEG_ORDER_TAG, ids);
  assert_int_equal(ids[0], 100);
  assert_true(increasing(ids, 20));
  assert_int_equal(ids[19], largest(ids, 20));
  frond_seg_stats_get(s, &ss);
  assert_int_equal(ss.rollbacks, 1);
  frond_seg_close(s);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* Segment order: the lower segment is served (the store answers for its
** ranges; no guard stands over it), the IDs are unique and increase
** within each segment, and a caller assuming more than is declared gets
** it wrong: the batch does not increase, and its last ID is not its
** largest. */
static void test_segment_order_only(void **state) {
  int64_t ids[20], sorted[20];
  frond_seg_stats ss;
  frond_seg *s;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  s = take(FROND_SEG_ORDER_SEGMENT, ids);
  assert_true(increasing(ids, 10));
  assert_true(increasing(ids + 10, 10));
  assert_int_equal(ids[0], 100);
  assert_int_equal(ids[10], 50);
  assert_false(increasing(ids, 20));
  assert_true(ids[19] < largest(ids, 20));
  memcpy(sorted, ids, sizeof(ids));
  for (size_t i = 0; i < 20; i++)
    for (size_t j = i + 1; j < 20; j++)
      assert_true(sorted[i] != sorted[j]);
  frond_seg_stats_get(s, &ss);
  assert_int_equal(ss.rollbacks, 0);
  frond_seg_close(s);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* A store that declares segment order but keeps no guards of its own
** still gets the wrappers' guard: its lower segment is refused (counted),
** never served over IDs already issued. An answer about order must not
** turn off what keeps IDs unique. */
static void test_order_never_turns_the_guard_off(void **state) {
  int64_t ids[200];
  frond_seg_stats ss;
  frond_seg *s;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  assert_int_equal(frond_seg_order(NULL), FROND_SEG_ORDER_SEGMENT);
  s = take_n(FROND_SEG_ORDER_SEGMENT, 0, ids, 200);
  for (size_t i = 0; i < 200; i++)
    for (size_t j = i + 1; j < 200; j++)
      assert_true(ids[i] != ids[j]);
  frond_seg_stats_get(s, &ss);
  assert_int_equal(ss.rollbacks, 1);
  frond_seg_close(s);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tag_order_is_kept),
      cmocka_unit_test(test_segment_order_only),
      cmocka_unit_test(test_order_never_turns_the_guard_off),
  };
  return frond_run_tests(tests, setup, teardown);
}
