/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_store_guard.c -- a store whose row goes back (a failover onto a
** replica that had not received the last allocations) must not make this
** node serve an ID twice: the store wrapper refuses a range at or below
** one it already handed out and moves the row past it.
**
** The rollback is made the way a lost write looks from outside: the row's
** max_id set back with an UPDATE on the SQLite file.
*/
#include "testutil.h"

#include "store/store.h"

#include <sqlite3.h>

static char *dir;
static char uri[600], path[560];

static int setup(void **state) {
  (void)state;
  dir = tmpdir_make();
  snprintf(path, sizeof(path), "%s/g.db", dir);
  snprintf(uri, sizeof(uri), "sqlite://%s", path);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tmpdir_remove(dir);
  return 0;
}

/* What a failover that lost writes does to a row. */
static void set_max_id(const char *tag, int64_t max_id) {
  sqlite3 *db;
  char sql[300];
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 10000);
  snprintf(sql, sizeof(sql),
           "UPDATE leaf_alloc SET max_id = %lld WHERE biz_tag = '%s'",
           (long long)max_id, tag);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

static char last_warning[1024];

static void quiet(void *ctx, int level, const char *msg) {
  (void)ctx;
  if (level == FROND_LOG_WARN)
    snprintf(last_warning, sizeof(last_warning), "%s", msg);
}

/* Store level: the range after a rollback starts where the last one
** ended, whatever step the allocation asks for. */
static void test_store_refuses_a_lower_range(void **state) {
  frond_store *st;
  frond_error e = {0, ""};
  int64_t max_id, row_step;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_WARN);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "g", 100, 1, NULL, &e), 0);
  assert_int_equal(frond__store_alloc(st, "g", 0, &max_id, &row_step, &e), 0);
  assert_int_equal(max_id, 101); /* [1, 101) */
  assert_int_equal(frond__store_alloc(st, "g", 300, &max_id, &row_step, &e), 0);
  assert_int_equal(max_id, 401); /* [101, 401) */
  assert_int_equal(frond__store_rollbacks(st), 0);
  set_max_id("g", 151); /* back inside both ranges */
  assert_int_equal(frond__store_alloc(st, "g", 0, &max_id, &row_step, &e), 0);
  assert_int_equal(row_step, 100);
  assert_int_equal(max_id, 501); /* [401, 501) */
  assert_int_equal(frond__store_rollbacks(st), 1);
  assert_non_null(strstr(last_warning, "the row went back"));
  assert_non_null(strstr(last_warning, "[151, 251)"));
  set_max_id("g", 1); /* back to the start */
  assert_int_equal(frond__store_alloc(st, "g", 50, &max_id, &row_step, &e), 0);
  assert_int_equal(max_id, 551); /* [501, 551) */
  assert_int_equal(frond__store_rollbacks(st), 2);
  /* A tag it never allocated from is not affected. */
  assert_int_equal(frond_store_tag_create(st, "h", 10, 1, NULL, &e), 0);
  assert_int_equal(frond__store_alloc(st, "h", 0, &max_id, &row_step, &e), 0);
  assert_int_equal(max_id, 11);
  /* Ordinary allocations after it: no rollback counted. */
  assert_int_equal(frond__store_alloc(st, "g", 0, &max_id, &row_step, &e), 0);
  assert_int_equal(max_id, 651);
  assert_int_equal(frond__store_rollbacks(st), 2);
  frond_store_close(st);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* Allocator level: IDs served before and after the row went back never
** repeat, and keep increasing. */
static void test_allocator_serves_no_id_twice(void **state) {
  frond_seg *seg;
  frond_seg_options o;
  frond_seg_stats ss;
  frond_store *st;
  frond_error e = {0, ""};
  enum { N = 3000 };
  static int64_t ids[2 * N];
  int i, j;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "s", 100, 1, NULL, &e), 0);
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.max_step = 100; /* no dynamic step: a few segments buffered at most */
  o.wait_ms = o.first_wait_ms = 30000; /* a loaded machine: no timing */
  assert_int_equal(frond_seg_open(&seg, uri, &o, &e), 0);
  for (i = 0; i < N; i++)
    assert_int_equal(frond_seg_next(seg, "s", 1, &ids[i], &e), 0);
  set_max_id("s", 1);
  for (; i < 2 * N; i++)
    assert_int_equal(frond_seg_next(seg, "s", 1, &ids[i], &e), 0);
  for (i = 1; i < 2 * N; i++)
    if (ids[i] <= ids[i - 1])
      fail_msg("ID %lld after %lld (position %d): served again",
               (long long)ids[i], (long long)ids[i - 1], i);
  for (i = 0; i < N; i++)
    for (j = N; j < 2 * N; j++)
      assert_true(ids[i] != ids[j]);
  frond_seg_stats_get(seg, &ss);
  assert_int_equal(ss.rollbacks, 1);
  frond_seg_close(seg);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* The same with several loaders and tags: a tag's loads run on any
** loader, each with its own connection, and the guard must remember the
** ranges of the tag whichever loader took them. */
static void test_every_loader_remembers(void **state) {
  frond_seg *seg;
  frond_seg_options o;
  frond_seg_stats ss;
  frond_store *st;
  frond_error e = {0, ""};
  enum { TAGS = 8, N = 1000 };
  static int64_t ids[TAGS][2 * N];
  char tag[8];
  int t, i, j;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  for (t = 0; t < TAGS; t++) {
    snprintf(tag, sizeof tag, "m%d", t);
    assert_int_equal(frond_store_tag_create(st, tag, 100, 1, NULL, &e), 0);
  }
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.max_step = 100;
  o.loaders = 4;
  o.wait_ms = o.first_wait_ms = 30000;
  assert_int_equal(frond_seg_open(&seg, uri, &o, &e), 0);
  for (i = 0; i < N; i++)
    for (t = 0; t < TAGS; t++) {
      snprintf(tag, sizeof tag, "m%d", t);
      assert_int_equal(frond_seg_next(seg, tag, 2, &ids[t][i], &e), 0);
    }
  for (t = 0; t < TAGS; t++) {
    snprintf(tag, sizeof tag, "m%d", t);
    set_max_id(tag, 1);
  }
  for (; i < 2 * N; i++)
    for (t = 0; t < TAGS; t++) {
      snprintf(tag, sizeof tag, "m%d", t);
      assert_int_equal(frond_seg_next(seg, tag, 2, &ids[t][i], &e), 0);
    }
  for (t = 0; t < TAGS; t++)
    for (i = 1; i < 2 * N; i++)
      for (j = 0; j < i; j++)
        if (ids[t][i] == ids[t][j])
          fail_msg("tag m%d: ID %lld served twice (positions %d and %d)", t,
                   (long long)ids[t][i], j, i);
  frond_seg_stats_get(seg, &ss);
  assert_int_equal(ss.rollbacks, TAGS);
  frond_seg_close(seg);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_store_refuses_a_lower_range),
      cmocka_unit_test(test_allocator_serves_no_id_twice),
      cmocka_unit_test(test_every_loader_remembers),
  };
  return frond_run_tests(tests, setup, teardown);
}
