/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_store_floor.c -- a tag's floor on a real SQLite file: a deleted tag
** created again starts one Leaf step above every ID the old one could have
** issued (so that a Leaf node reading the new row's last step takes none
** of them), and nothing moves a tag below its floor (a create's start, an
** advance, a row loaded by hand); an advance moves a tag forward only; a
** plain store that was open before its database became a multi: member
** stops at its next allocation.
*/
#include "testutil.h"

#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;
static char uri[400], path[300];
static int serial;

/* A new database for each test: t<n>.db. */
static int setup(void **state) {
  (void)state;
  if (dir == NULL)
    dir = tmpdir_make();
  snprintf(path, sizeof(path), "%s/t%d.db", dir, serial++);
  snprintf(uri, sizeof(uri), "sqlite://%s", path);
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

/* n IDs of tag from a new allocator (a process of its own, as the CLI). */
static void take(const char *u, const char *tag, int64_t *out, size_t n) {
  frond_seg *s;
  frond_seg_options o;
  frond_error e = {0, ""};
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms = 30000;
  assert_int_equal(frond_seg_open(&s, u, &o, &e), 0);
  assert_int_equal(frond_seg_next_n(s, tag, strlen(tag), n, out, &e), 0);
  frond_seg_close(s);
}

static size_t dups(int64_t *ids, size_t n) {
  size_t i, d = 0;
  qsort(ids, n, sizeof(*ids), cmp_i64);
  for (i = 1; i < n; i++)
    d += ids[i] == ids[i - 1];
  return d;
}

static int64_t max_id(frond_store *st, const char *tag) {
  frond_tag_row r;
  frond_error e = {0, ""};
  assert_int_equal(frond_store_tag_get(st, tag, &r, &e), 0);
  return r.max_id;
}

/* Delete and create again, twice, with IDs taken between: none twice.
** Before floors, the second life served the first's IDs again. */
static void test_recreated_tag_starts_above(void **state) {
  static int64_t ids[3 * 250];
  frond_store *st;
  frond_error e = {0, ""};
  int64_t floor, first;
  int k;
  (void)state;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_floor(st, "o", &first, &e), 0);
  assert_int_equal(first, 1); /* a name never used */
  assert_int_equal(frond_store_tag_create(st, "o", 100, 0, NULL, &e), 0);
  assert_int_equal(max_id(st, "o"), 1);
  for (k = 0; k < 3; k++) {
    take(uri, "o", ids + 250 * k, 250);
    if (k == 2)
      break;
    floor = max_id(st, "o");
    assert_int_equal(frond_store_tag_delete(st, "o", &e), 0);
    assert_int_equal(frond_store_tag_floor(st, "o", &first, &e), 0);
    assert_int_equal(first, floor);
    /* Below it, or less than a Leaf step (the largest a Leaf node's step
    ** grows to) above it: refused, naming it; without a start: one Leaf
    ** step above it. */
    assert_int_equal(frond_store_tag_create(st, "o", 100, 1, NULL, &e),
                     FROND_ETAG_FLOOR);
    {
      char want[32];
      snprintf(want, sizeof(want), "floor %lld", (long long)floor);
      assert_non_null(strstr(e.message, want));
    }
    assert_int_equal(frond_store_tag_create(st, "o", 100, floor - 1, NULL, &e),
                     FROND_ETAG_FLOOR);
    assert_int_equal(frond_store_tag_create(st, "o", 100, floor + 99, NULL, &e),
                     FROND_ETAG_FLOOR);
    assert_int_equal(frond_store_tag_create(st, "o", 100,
                                            floor + FROND__LEAF_MAX_STEP - 1,
                                            NULL, &e),
                     FROND_ETAG_FLOOR);
    assert_int_equal(frond_store_tag_create(st, "o", 100, 0, NULL, &e), 0);
    assert_int_equal(max_id(st, "o"), floor + FROND__LEAF_MAX_STEP);
  }
  frond_store_close(st);
  assert_int_equal(dups(ids, 3 * 250), 0);
}

/* An explicit start a Leaf step or more above the floor is taken as
** given; a step larger than Leaf's largest is the gap itself. */
static void test_start_above_floor(void **state) {
  const int64_t leaf = FROND__LEAF_MAX_STEP;
  frond_store *st;
  frond_error e = {0, ""};
  (void)state;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 10, 500, NULL, &e), 0);
  assert_int_equal(frond_store_tag_delete(st, "o", &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 10, 500, NULL, &e),
                   FROND_ETAG_FLOOR);
  assert_int_equal(
      frond_store_tag_create(st, "o", 10, 500 + leaf - 1, NULL, &e),
      FROND_ETAG_FLOOR);
  assert_int_equal(frond_store_tag_create(st, "o", 10, 500 + leaf, NULL, &e),
                   0);
  assert_int_equal(frond_store_tag_delete(st, "o", &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 10, 9 * leaf, NULL, &e), 0);
  assert_int_equal(max_id(st, "o"), 9 * leaf);
  /* The floor never goes down: a delete at a lower row keeps it. */
  assert_int_equal(frond_store_tag_delete(st, "o", &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 10, 0, NULL, &e), 0);
  assert_int_equal(max_id(st, "o"), 10 * leaf);
  /* A step above Leaf's largest: one step above the floor. */
  assert_int_equal(frond_store_tag_delete(st, "o", &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 3 * leaf, 0, NULL, &e), 0);
  assert_int_equal(max_id(st, "o"), 13 * leaf);
  frond_store_close(st);
}

/* A Leaf node's load races a delete and a create: its UPDATE finds no row,
** its SELECT the new one, and it serves [max_id - its step, max_id) of it
** without having allocated. That range lies at or above the floor and is
** never issued by anyone else, whatever the node's step has grown to
** (Leaf doubles it up to 1,000,000): before, it was the old tag's last
** range. */
static void test_leaf_reader_of_a_new_row(void **state) {
  static int64_t ids[600];
  frond_store *st;
  frond_error e = {0, ""};
  int64_t floor, m, lo, i;
  (void)state;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 100, 0, NULL, &e), 0);
  take(uri, "o", ids, 250);
  floor = max_id(st, "o");
  assert_int_equal(frond_store_tag_delete(st, "o", &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 100, 0, NULL, &e), 0);
  m = max_id(st, "o"); /* what the racing SELECT reads */
  for (lo = 100; lo <= FROND__LEAF_MAX_STEP; lo *= 2) /* Leaf's steps */
    assert_true(m - lo >= floor);
  assert_true(m - FROND__LEAF_MAX_STEP >= floor);
  lo = m - 100;
  take(uri, "o", ids + 250, 250);
  for (i = 0; i < 100; i++)
    ids[500 + i] = lo + i; /* the Leaf node's step */
  frond_store_close(st);
  assert_int_equal(dups(ids, 600), 0);
}

static void sql(const char *stmt) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, stmt, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

/* A row loaded by hand below the floor (an import): its first allocation
** is refused, the row left where it is, until an advance moves it. */
static void test_row_below_floor_refused(void **state) {
  static int64_t ids[400];
  frond_store *st;
  frond_error e = {0, ""};
  int64_t m, r;
  (void)state;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 100, 0, NULL, &e), 0);
  take(uri, "o", ids, 200);
  assert_int_equal(frond_store_tag_delete(st, "o", &e), 0);
  sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('o', 1, 100)");
  assert_int_equal(frond__store_alloc(st, "o", 0, &m, &r, &e),
                   FROND_ETAG_FLOOR);
  assert_non_null(strstr(e.message, "frond tag advance o"));
  assert_int_equal(max_id(st, "o"), 1); /* not moved */
  assert_int_equal(frond_store_tag_floor(st, "o", &m, &e), 0);
  assert_int_equal(frond_store_tag_advance(st, "o", m - 1, &e),
                   FROND_ETAG_FLOOR);
  assert_int_equal(frond_store_tag_advance(st, "o", m, &e), 0);
  frond_store_close(st);
  take(uri, "o", ids + 200, 200);
  assert_int_equal(dups(ids, 400), 0);
}

/* Forward only: below max_id is refused, naming it; a missing tag is
** TAG_NOT_FOUND; the row moves, and the next allocation starts there. */
static void test_advance(void **state) {
  frond_store *st;
  frond_error e = {0, ""};
  int64_t m, r;
  (void)state;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_advance(st, "o", 10, &e),
                   FROND_ETAG_NOT_FOUND);
  assert_int_equal(frond_store_tag_create(st, "o", 100, 0, NULL, &e), 0);
  assert_int_equal(frond__store_alloc(st, "o", 0, &m, &r, &e), 0);
  assert_int_equal(m, 101);
  assert_int_equal(frond_store_tag_advance(st, "o", 100, &e), FROND_ETAG_FLOOR);
  assert_non_null(strstr(e.message, "max_id is 101"));
  assert_int_equal(frond_store_tag_advance(st, "o", 101, &e), 0);
  assert_int_equal(frond_store_tag_advance(st, "o", 5000, &e), 0);
  assert_int_equal(frond__store_alloc(st, "o", 0, &m, &r, &e), 0);
  assert_int_equal(m - r, 5000);
  assert_int_equal(frond_store_tag_advance(st, "o", 0, &e), FROND_EINVAL);
  frond_store_close(st);
}

/* A plain store open while its database becomes member 0 of a multi:
** store allocates no more: STORE_MEMBER, naming the place. */
static void test_plain_stops_on_a_member(void **state) {
  char multi[900];
  frond_store *plain, *ms;
  frond_error e = {0, ""};
  int64_t m, r;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  assert_int_equal(frond_store_open(&plain, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(plain, "o", 100, 0, NULL, &e), 0);
  assert_int_equal(frond__store_alloc(plain, "o", 0, &m, &r, &e), 0);
  snprintf(multi, sizeof(multi), "multi:%s|sqlite://%s/other%d.db", uri, dir,
           serial);
  assert_int_equal(frond_store_open(&ms, multi, &e), 0); /* joins */
  assert_int_equal(frond__store_alloc(plain, "o", 0, &m, &r, &e),
                   FROND_ESTORE_MEMBER);
  assert_non_null(strstr(e.message, "member 0 of 2"));
  assert_int_equal(frond_store_tag_advance(plain, "o", 9999, &e),
                   FROND_ESTORE_MEMBER);
  frond_store_close(ms);
  frond_store_close(plain);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* A deleted tag's TAG_NOT_FOUND says where a new one of its name starts. */
static void test_tag_not_found_names_floor(void **state) {
  frond_store *st;
  frond_tag_row row;
  frond_error e = {0, ""};
  (void)state;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "o", 100, 700, NULL, &e), 0);
  assert_int_equal(frond_store_tag_delete(st, "o", &e), 0);
  assert_int_equal(frond_store_tag_get(st, "o", &row, &e),
                   FROND_ETAG_NOT_FOUND);
  assert_non_null(strstr(e.message, "one Leaf step above its floor 700"));
  frond_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_recreated_tag_starts_above, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_start_above_floor, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leaf_reader_of_a_new_row, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_row_below_floor_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_advance, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plain_stops_on_a_member, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_tag_not_found_names_floor, setup,
                                      teardown),
  };
  int rc = frond_run_tests(tests, NULL, NULL);
  if (dir != NULL)
    tmpdir_remove(dir);
  return rc;
}
