/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_coord_lease_conn.c -- the lease's connection between calls, on
** SQLite. A node holds none between calls (keep_connection=0); a start
** keeps one from open to its first fence write. A start that ends
** otherwise (a take refused, a handle opened only to list) closes it
** there, not at close.
*/
#include "coord_util.h"

#include "coord/coord_lease.h"

static char db[600];

static frond_coord *at(int port, const char *extra) {
  frond_coord_options o;
  char uri[900], who[64];
  frond_coord_options_init(&o);
  snprintf(who, sizeof(who), "127.0.0.1:%d", port);
  o.advertise = who;
  snprintf(uri, sizeof(uri), "lease+sqlite://%s?lease_ms=60000&nodes=1%s", db,
           extra);
  return open_ok(uri, &o);
}

static frond_db *conn(frond_coord *c) {
  return ((lease *)c->impl)->db;
}

/* frond check, frond node list: open, list, close. */
static void test_list_only_closes(void **state) {
  char *dir = tmpdir_make();
  frond_coord *c;
  frond_coord_entry *e = NULL;
  size_t n = 9;
  (void)state;
  snprintf(db, sizeof(db), "%s/lease.db", dir);
  c = at(1, "");
  assert_non_null(conn(c)); /* the start's, from open */
  assert_int_equal(frond_coord_list(c, &e, &n, NULL), 0);
  assert_int_equal(n, 0);
  assert_null(conn(c));
  frond_free(e);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* The only node ID held: the second start is refused and closes. */
static void test_refused_start_closes(void **state) {
  char *dir = tmpdir_make();
  frond_coord *a, *b;
  frond_gen *ga, *gb = NULL;
  (void)state;
  snprintf(db, sizeof(db), "%s/lease.db", dir);
  a = at(1, "");
  assert_int_equal(create(a, SMALL, NULL, &ga, NULL), 0);
  assert_null(conn(a)); /* after the first fence write */
  b = at(2, "");
  assert_int_not_equal(create(b, SMALL, NULL, &gb, NULL), 0);
  assert_null(conn(b));
  frond_coord_close(b, NULL);
  frond_coord_close(a, NULL);
  tmpdir_remove(dir);
}

/* keep_connection=1 keeps it, refused or not. */
static void test_keep_connection_keeps(void **state) {
  char *dir = tmpdir_make();
  frond_coord *c;
  frond_coord_entry *e = NULL;
  size_t n = 9;
  (void)state;
  snprintf(db, sizeof(db), "%s/lease.db", dir);
  c = at(1, "&keep_connection=1");
  assert_int_equal(frond_coord_list(c, &e, &n, NULL), 0);
  assert_non_null(conn(c));
  frond_free(e);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_only_closes),
      cmocka_unit_test(test_refused_start_closes),
      cmocka_unit_test(test_keep_connection_keeps),
  };
  return frond_run_tests(tests, NULL, NULL);
}
