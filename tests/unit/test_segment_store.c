/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_segment_store.c -- the store layer on a real SQLite file: URI
** dispatch, tag administration, allocation, a table made by Leaf's DDL.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "sqlite_fixture.h"

#include "store/store.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_uris(void **state) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  static const char *const bad[] = {"mysql://h/", "sqlite://host/x.db",
                                    "sqlite:", "", "postgresqlx://h/db"};
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    assert_int_equal(frond_store_open(&st, bad[i], &e), FROND_ESTORE_URI);
    assert_true(e.message[0] != '\0');
    assert_null(st);
  }
  /* A directory that does not exist will not come by retrying. */
  assert_int_equal(frond_store_open(&st, "sqlite:///nonexistent-dir/x.db", &e),
                   FROND_ESTORE_PERMANENT);
  assert_non_null(strstr(e.message, "unable to open"));
  assert_non_null(strstr(e.message, "/nonexistent-dir does not exist"));
}

/* An in-memory database forgets every allocation when it is closed: the
** next open would hand out the same ranges again. Such a store is refused,
** whatever spelling reaches SQLite's in-memory database. */
static void test_memory_store_refused(void **state) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  static const char *const mem[] = {
      "sqlite::memory:", "sqlite:file::memory:?cache=shared",
      "sqlite:file:x.db?mode=memory"};
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(mem); i++) {
    int rc = frond_store_open(&st, mem[i], &e);
    if (rc == 0)
      frond_store_close(st);
    assert_int_equal(rc, FROND_ESTORE_URI);
    assert_null(st);
  }
}

static void test_admin_and_alloc(void **state) {
  frond_store *st;
  frond_error e = {0, ""};
  frond_tag_row row, *rows;
  size_t n;
  int64_t max_id, step;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "order", 1000, 1, "orders", &e),
                   0);
  assert_int_equal(frond_store_tag_create(st, "order", 10, 1, NULL, &e),
                   FROND_ETAG_EXISTS);
  assert_int_equal(frond_store_tag_create(st, "", 10, 1, NULL, &e),
                   FROND_ETAG_INVALID);
  assert_int_equal(frond_store_tag_create(st, "b", 0, 1, NULL, &e),
                   FROND_EINVAL);
  assert_int_equal(frond_store_tag_create(st, "b", 5, 100, NULL, &e), 0);
  assert_int_equal(frond_store_tag_list(st, &rows, &n, &e), 0);
  assert_int_equal(n, 2);
  assert_string_equal(rows[0].tag, "b");
  assert_string_equal(rows[1].tag, "order");
  assert_string_equal(rows[1].description, "orders");
  assert_int_equal(rows[1].max_id, 1);
  assert_int_equal(strlen(rows[1].update_time), 19);
  frond_free(rows);
  /* Leaf's convention: max_id 1, step 1000 gives 1..1000 first. */
  assert_int_equal(frond__store_alloc(st, "order", 0, &max_id, &step, &e), 0);
  assert_int_equal(max_id, 1001);
  assert_int_equal(step, 1000);
  assert_int_equal(frond__store_alloc(st, "order", 5000, &max_id, &step, &e),
                   0);
  assert_int_equal(max_id, 6001);
  assert_int_equal(step, 1000);
  assert_int_equal(frond__store_alloc(st, "nope", 0, &max_id, &step, &e),
                   FROND_ETAG_NOT_FOUND);
  assert_int_equal(frond_store_tag_set_step(st, "order", 7, &e), 0);
  assert_int_equal(frond_store_tag_get(st, "order", &row, &e), 0);
  assert_int_equal(row.step, 7);
  assert_int_equal(row.max_id, 6001);
  assert_int_equal(frond_store_tag_delete(st, "order", &e), 0);
  assert_int_equal(frond_store_tag_delete(st, "order", &e),
                   FROND_ETAG_NOT_FOUND);
  assert_int_equal(frond_store_tag_get(st, "order", &row, &e),
                   FROND_ETAG_NOT_FOUND);
  frond_store_close(st);
}

static void test_overflow_is_refused(void **state) {
  frond_store *st;
  frond_error e = {0, ""};
  int64_t max_id, step;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(
      frond_store_tag_create(st, "big", 1000, INT64_MAX - 10, NULL, &e), 0);
  assert_int_equal(frond__store_alloc(st, "big", 0, &max_id, &step, &e),
                   FROND_ESTORE);
  assert_non_null(strstr(e.message, "overflow"));
  frond_store_close(st);
}

/* A table made by Leaf's DDL (MySQL's, adapted to SQLite) works as is. */
static void test_leaf_table(void **state) {
  char p[300];
  sqlite3 *db;
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t id;
  snprintf(p, sizeof(p), "%s/leaf.db", dir);
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  assert_int_equal(
      sqlite3_exec(db,
                   "CREATE TABLE `leaf_alloc` ("
                   "`biz_tag` varchar(128) NOT NULL DEFAULT '',"
                   "`max_id` bigint(20) NOT NULL DEFAULT '1',"
                   "`step` int(11) NOT NULL,"
                   "`description` varchar(256) DEFAULT NULL,"
                   "`update_time` timestamp NOT NULL DEFAULT "
                   "CURRENT_TIMESTAMP,"
                   "PRIMARY KEY (`biz_tag`));"
                   "INSERT INTO leaf_alloc(biz_tag, max_id, step, "
                   "description) VALUES('leaf-segment-test', 1, 2000, "
                   "'Test leaf Segment Mode Get Id')",
                   NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(db);
  snprintf(p, sizeof(p), "sqlite://%s/leaf.db", dir);
  assert_int_equal(frond_seg_open(&s, p, NULL, &e), 0);
  assert_int_equal(frond_seg_next(s, "leaf-segment-test", 17, &id, &e), 0);
  assert_int_equal(id, 1);
  frond_seg_close(s);
  snprintf(p, sizeof(p), "%s/leaf.db", dir);
  unlink(p);
  strcat(p, "-wal");
  unlink(p);
  p[strlen(p) - 4] = '\0';
  strcat(p, "-shm");
  unlink(p);
}

static atomic_int fail_allocs;

static int fault(frond_store *st, const char *op) {
  (void)st;
  return atomic_load(&fail_allocs) && strcmp(op, "alloc") == 0 ? FROND_ESTORE
                                                               : 0;
}

/* Faults injected in the wrapper, in front of a real SQLite store: the
** buffers keep serving, then SEGMENT_UNAVAILABLE, then recovery. */
/* xFact: a value recorded once under a name in frond_meta and read back;
** a second value for the name never overwrites the first; names are
** independent; the table is the lease coordinator's (same DDL). */
static void test_facts(void **state) {
  frond_store *st;
  frond_error e = {0, ""};
  char got[64];
  sqlite3 *db;
  sqlite3_stmt *q;
  assert_int_equal(frond__store_open(uri, &st, &e), 0);
  assert_int_equal(frond__store_fact(st, "key.a", "1111", got, sizeof(got), &e),
                   0);
  assert_string_equal(got, "1111");
  assert_int_equal(frond__store_fact(st, "key.a", "2222", got, sizeof(got), &e),
                   0);
  assert_string_equal(got, "1111");
  assert_int_equal(frond__store_fact(st, "key.b", "2222", got, sizeof(got), &e),
                   0);
  assert_string_equal(got, "2222");
  frond__store_close(st);
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT sql FROM sqlite_master WHERE "
                                      "name = 'frond_meta'",
                                      -1, &q, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(q, 0),
                      "CREATE TABLE frond_meta (name VARCHAR(64) PRIMARY KEY, "
                      "value VARCHAR(256) NOT NULL)");
  sqlite3_finalize(q);
  sqlite3_close(db);
}

static void test_injected_faults(void **state) {
  frond_store *st;
  frond_seg *s;
  frond_seg_options o;
  frond_seg_stats stats;
  frond_error e = {0, ""};
  int64_t id = 0, prev = 0, deadline;
  int rc, i;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "f", 50, 1, NULL, &e), 0);
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.retry_min_ms = 10;
  o.retry_max_ms = 20;
  o.wait_ms = 20;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  frond__store_fault = fault;
  assert_int_equal(frond_seg_next(s, "f", 1, &id, &e), 0);
  assert_int_equal(id, 1);
  atomic_store(&fail_allocs, 1);
  for (i = 0;; i++) {
    prev = id;
    if ((rc = frond_seg_next(s, "f", 1, &id, &e)) != 0)
      break;
    assert_true(id > prev);
  }
  assert_int_equal(rc, FROND_ESEGMENT_UNAVAILABLE);
  assert_true(i >= 49); /* the whole first segment was served */
  frond_seg_stats_get(s, &stats);
  assert_int_equal(stats.store_ok, 0);
  assert_true(stats.load_failures > 0);
  atomic_store(&fail_allocs, 0);
  deadline = frond__mono_ns() + 30000000000; /* a loaded machine */
  while ((rc = frond_seg_next(s, "f", 1, &id, &e)) != 0 &&
         frond__mono_ns() < deadline)
    ;
  assert_int_equal(rc, 0);
  assert_true(id > prev);
  frond_seg_close(s);
  frond__store_fault = NULL;
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uris),
      cmocka_unit_test(test_memory_store_refused),
      cmocka_unit_test(test_admin_and_alloc),
      cmocka_unit_test(test_overflow_is_refused),
      cmocka_unit_test(test_leaf_table),
      cmocka_unit_test(test_facts),
      cmocka_unit_test(test_injected_faults),
  };
  return frond_run_tests(tests, setup, teardown);
}
