/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_segment_give.c -- a clean close gives back the rest of a tag's last
** segment (seg_give.c), on a real SQLite file: the next allocator goes on
** exactly after the last ID handed out; both buffers; an allocation by
** another process after ours, or between our two, wins; a range lease
** stays issued; strided and bounded tags; off by option; a store that
** fails the write, and a multi: store, leave the numbers skipped.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/frond-give-XXXXXX";
static char uri[300], path[200], path2[200], multi[700];

static int setup(void **state) {
  (void)state;
  if (mkdtemp(dir) == NULL)
    return -1;
  snprintf(path, sizeof(path), "%s/t.db", dir);
  snprintf(path2, sizeof(path2), "%s/u.db", dir);
  snprintf(uri, sizeof(uri), "sqlite://%s", path);
  snprintf(multi, sizeof(multi), "multi:sqlite://%s|sqlite://%s", path, path2);
  return 0;
}

static int teardown(void **state) {
  char p[300];
  static const char *const sfx[] = {"", "-wal", "-shm"};
  const char *const files[] = {path, path2};
  size_t i, j;
  (void)state;
  for (j = 0; j < 2; j++)
    for (i = 0; i < 3; i++) {
      snprintf(p, sizeof(p), "%s%s", files[j], sfx[i]);
      unlink(p);
    }
  rmdir(dir);
  return 0;
}

static void quiet(void *ctx, int level, const char *msg) {
  (void)ctx;
  (void)level;
  (void)msg;
}

/* Create tag in the store at u with its attributes (NULL: none). */
static void create(const char *u, const char *tag, int64_t step,
                   const frond_tag_seq *q) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  frond_log_set(quiet, NULL, FROND_LOG_DEBUG);
  assert_int_equal(frond_store_open(&st, u, &e), 0);
  assert_int_equal(frond_store_tag_create_seq(st, tag, step, 1, "", q, &e), 0);
  frond_store_close(st);
}

static frond_seg *open_seg(const char *u, int give_back) {
  frond_seg *s = NULL;
  frond_seg_options o;
  frond_error e = {0, ""};
  frond_seg_options_init(&o);
  o.wait_ms = 2000;
  o.retry_min_ms = 1;
  o.retry_max_ms = 5;
  o.give_back = give_back;
  assert_int_equal(frond_seg_open(&s, u, &o, &e), 0);
  return s;
}

static int64_t row_at(const char *u, const char *tag) {
  frond_store *st = NULL;
  frond_tag_row row;
  frond_error e = {0, ""};
  assert_int_equal(frond_store_open(&st, u, &e), 0);
  assert_int_equal(frond_store_tag_get(st, tag, &row, &e), 0);
  frond_store_close(st);
  return row.max_id;
}

static int64_t row_max_id(const char *tag) {
  return row_at(uri, tag);
}

/* n IDs of tag, which must be want, want + k, ... */
static void take(frond_seg *s, const char *tag, int n, int64_t want,
                 int64_t k) {
  frond_error e = {0, ""};
  int64_t id;
  int i;
  for (i = 0; i < n; i++, want += k) {
    assert_int_equal(frond_seg_next(s, tag, strlen(tag), &id, &e), 0);
    assert_int_equal(id, want);
  }
}

/* Wait (bounded) until s has made `loads` loads. */
static void loads_done(frond_seg *s, uint64_t loads) {
  frond_seg_stats st;
  int i;
  for (i = 0; i < 5000; i++) {
    frond_seg_stats_get(s, &st);
    if (st.loads >= loads)
      return;
    usleep(1000);
  }
  fail_msg("the allocator made %llu loads, not %llu",
           (unsigned long long)st.loads, (unsigned long long)loads);
}

/* Another process's allocation of tag: its range's end. */
static int64_t other_alloc(const char *tag) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  int64_t max_id = 0, rstep = 0;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond__store_alloc(st, tag, 0, &max_id, &rstep, &e), 0);
  frond_store_close(st);
  return max_id;
}

static void test_restart_continues(void **state) {
  frond_seg *s;
  (void)state;
  create(uri, "a", 100, NULL);
  s = open_seg(uri, 1);
  take(s, "a", 3, 1, 1);
  frond_seg_close(s);
  assert_int_equal(row_max_id("a"), 4);
  s = open_seg(uri, 1);
  take(s, "a", 5, 4, 1); /* exactly after the last one */
  frond_seg_close(s);
  assert_int_equal(row_max_id("a"), 9);
}

/* The second buffer, loaded and unused, goes back with the first's rest:
** their ranges touch. */
static void test_both_buffers(void **state) {
  frond_seg *s;
  (void)state;
  create(uri, "b", 100, NULL);
  s = open_seg(uri, 1);
  take(s, "b", 20, 1, 1); /* past preload_pct: the next one loads */
  loads_done(s, 2);
  assert_true(row_max_id("b") > 101); /* the second, its step doubled */
  frond_seg_close(s);
  assert_int_equal(row_max_id("b"), 21);
}

/* Another node allocated after us: its range stays its own. */
static void test_other_after(void **state) {
  frond_seg *s;
  (void)state;
  create(uri, "c", 100, NULL);
  s = open_seg(uri, 1);
  take(s, "c", 3, 1, 1);
  assert_int_equal(other_alloc("c"), 201); /* [101, 201) is theirs */
  frond_seg_close(s);
  assert_int_equal(row_max_id("c"), 201);
  s = open_seg(uri, 1);
  take(s, "c", 1, 201, 1);
  frond_seg_close(s);
}

/* Another node allocated between our two loads: only our second range,
** whole, goes back; the rest of the first lies below theirs. */
static _Atomic int between_depth; /* the hook runs on a loader thread */
static _Atomic int64_t between_end;
static int between_hook(frond_store *st, const char *op) {
  (void)st;
  if (strcmp(op, "alloc") == 0 && ++between_depth == 2)
    between_end = other_alloc("d"); /* [101, 201) before our second */
  return 0;
}

static void test_other_between(void **state) {
  frond_seg *s;
  (void)state;
  create(uri, "d", 100, NULL);
  s = open_seg(uri, 1);
  atomic_store(&between_depth, 0);
  atomic_store(&frond__store_fault, between_hook);
  take(s, "d", 20, 1, 1);
  loads_done(s, 2);
  atomic_store(&frond__store_fault, NULL);
  assert_int_equal(atomic_load(&between_end), 201);
  assert_true(row_max_id("d") > 201); /* ours, after theirs */
  frond_seg_close(s);
  assert_int_equal(row_max_id("d"), 201); /* not 21: [101, 201) theirs */
}

/* A range lease is issued: never returned. */
static void test_range_kept(void **state) {
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t first = 0;
  (void)state;
  create(uri, "r", 100, NULL);
  s = open_seg(uri, 1);
  take(s, "r", 3, 1, 1);
  assert_int_equal(frond_seg_range(s, "r", 1, 50, &first, &e), 0);
  assert_int_equal(first, 4);
  frond_seg_close(s);
  assert_int_equal(row_max_id("r"), 54);
  s = open_seg(uri, 1);
  take(s, "r", 1, 54, 1);
  frond_seg_close(s);
}

static void test_strided(void **state) {
  frond_tag_seq q = {0, 3, 1, 0};
  frond_seg *s;
  (void)state;
  create(uri, "s", 100, &q);
  s = open_seg(uri, 1);
  take(s, "s", 3, 1, 3);
  frond_seg_close(s);
  assert_int_equal(row_max_id("s"), 10);
  s = open_seg(uri, 1);
  take(s, "s", 3, 10, 3);
  frond_seg_close(s);
  assert_int_equal(row_max_id("s"), 19);
}

/* A bounded tag: its last segment cut at the max; what was not issued
** goes back, and the max is reached exactly, never passed. */
static void test_bounded(void **state) {
  frond_tag_seq q = {25, 1, 0, 0};
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t id;
  (void)state;
  create(uri, "m", 100, &q);
  s = open_seg(uri, 1);
  take(s, "m", 5, 1, 1);
  frond_seg_close(s);
  assert_int_equal(row_max_id("m"), 6);
  s = open_seg(uri, 1);
  take(s, "m", 20, 6, 1);
  assert_int_equal(frond_seg_next(s, "m", 1, &id, &e),
                   FROND_ESEGMENT_EXHAUSTED);
  frond_seg_close(s);
}

static void test_off(void **state) {
  frond_seg *s;
  (void)state;
  create(uri, "o", 100, NULL);
  s = open_seg(uri, 0);
  take(s, "o", 3, 1, 1);
  frond_seg_close(s);
  assert_int_equal(row_max_id("o"), 101);
}

/* The store fails the write (unreachable): skipped, and close returns. */
static int fail_hook(frond_store *st, const char *op) {
  (void)st;
  return strcmp(op, "give_back") == 0 ? FROND_ESTORE : 0;
}

static char warned[512];
static void keep_warning(void *ctx, int level, const char *msg) {
  (void)ctx;
  if (level == FROND_LOG_WARN && strstr(msg, "tag \"f\"") != NULL)
    snprintf(warned, sizeof(warned), "%s", msg);
}

static void test_store_fails(void **state) {
  frond_seg *s;
  (void)state;
  create(uri, "f", 100, NULL);
  s = open_seg(uri, 1);
  take(s, "f", 3, 1, 1);
  atomic_store(&frond__store_fault, fail_hook);
  frond_log_set(keep_warning, NULL, FROND_LOG_DEBUG);
  frond_seg_close(s);
  frond_log_set(quiet, NULL, FROND_LOG_DEBUG);
  atomic_store(&frond__store_fault, NULL);
  assert_int_equal(row_max_id("f"), 101);
  /* One line says so: the range, the numbers skipped, the store's why. */
  assert_non_null(strstr(warned, "giving back [4, 101) failed, the numbers "
                                 "stay skipped: STORE"));
  s = open_seg(uri, 1);
  take(s, "f", 1, 101, 1);
  frond_seg_close(s);
}

/* The row went back while the allocator ran (a restore, a failover that
** lost writes): its rollback guard saw it, and in that doubt nothing is
** given back, though the row is at the end of its last allocation. */
static void test_rolled_back(void **state) {
  frond_seg_stats st;
  frond_seg *s;
  sqlite3 *db;
  int64_t row;
  (void)state;
  create(uri, "g", 100, NULL);
  s = open_seg(uri, 1);
  take(s, "g", 3, 1, 1);
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 10000);
  assert_int_equal(sqlite3_exec(db,
                                "UPDATE leaf_alloc SET max_id = 1 WHERE "
                                "biz_tag = 'g'",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  take(s, "g", 20, 4, 1); /* past the preload: a load, refused, redone */
  loads_done(s, 2);
  frond_seg_stats_get(s, &st);
  assert_true(st.rollbacks >= 1);
  row = row_max_id("g");
  frond_seg_close(s);
  assert_int_equal(row_max_id("g"), row);
}

/* A multi: store gives nothing back: its members' rows stay. */
static void test_multi(void **state) {
  frond_seg *s;
  int64_t before;
  (void)state;
  create(multi, "x", 100, NULL);
  before = row_at(multi, "x");
  s = open_seg(multi, 1);
  take(s, "x", 1, 1, 1);
  frond_seg_close(s);
  assert_true(row_at(multi, "x") > before);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_restart_continues),
      cmocka_unit_test(test_both_buffers),
      cmocka_unit_test(test_other_after),
      cmocka_unit_test(test_other_between),
      cmocka_unit_test(test_range_kept),
      cmocka_unit_test(test_strided),
      cmocka_unit_test(test_bounded),
      cmocka_unit_test(test_off),
      cmocka_unit_test(test_store_fails),
      cmocka_unit_test(test_rolled_back),
      cmocka_unit_test(test_multi),
  };
  return frond_run_tests(tests, setup, teardown);
}
