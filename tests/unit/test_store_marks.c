/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_store_marks.c -- what a multi: store's marks must see, whatever
** else is down: a member's block is served only once another member has
** recorded it and has said where the member stood before (so a member
** restored from an older backup is found behind even while the member that
** recorded its blocks is down, and a member alone serves nothing that
** could not be checked later); a database that joins with rows of its own
** (a single database converted, an older copy of it) is moved above the
** others' history; and marks are kept under the name as the member's row
** spells it, so that spellings its collation takes for one row meet them.
*/
#include "testutil.h"

#include "store/store.h"

#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *dir;

static int setup(void **state) {
  (void)state;
  dir = tmpdir_make();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tmpdir_remove(dir);
  return 0;
}

static void quiet(void *ctx, int level, const char *msg) {
  (void)ctx;
  (void)level;
  (void)msg;
}

/* DIR/name as a SQLite URI into out. */
static void sqlite_uri(char *out, size_t n, const char *name) {
  snprintf(out, n, "sqlite://%s/%s", dir, name);
}

/* "multi:" and the members' files, separated by '|'. */
static void multi_uri(char *out, size_t n, const char *const *names, int k) {
  size_t at = (size_t)snprintf(out, n, "multi:");
  int i;
  for (i = 0; i < k; i++)
    at += (size_t)snprintf(out + at, n - at, "%ssqlite://%s/%s", i ? "|" : "",
                           dir, names[i]);
}

static void path_of(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", dir, name);
}

static void sql(const char *name, const char *stmt) {
  char p[600];
  sqlite3 *db;
  path_of(p, sizeof(p), name);
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, stmt, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

/* A consistent copy of a closed SQLite database (an online backup). */
static void copy_db(const char *from, const char *to) {
  char a[600], b[600];
  sqlite3 *src, *dst;
  sqlite3_backup *bk;
  path_of(a, sizeof(a), from);
  path_of(b, sizeof(b), to);
  unlink(b);
  assert_int_equal(sqlite3_open(a, &src), SQLITE_OK);
  assert_int_equal(sqlite3_open(b, &dst), SQLITE_OK);
  assert_non_null(bk = sqlite3_backup_init(dst, "main", src, "main"));
  assert_int_equal(sqlite3_backup_step(bk, -1), SQLITE_DONE);
  sqlite3_backup_finish(bk);
  sqlite3_close(src);
  sqlite3_close(dst);
}

/* Put the copy `from` in the place of database `to` (nobody has it open). */
static void restore(const char *from, const char *to) {
  char p[600];
  static const char *const sfx[] = {"-wal", "-shm"};
  size_t i;
  for (i = 0; i < 2; i++) {
    snprintf(p, sizeof(p), "%s/%s%s", dir, to, sfx[i]);
    unlink(p);
  }
  copy_db(from, to);
}

/* Rename a directory of DIR (a member taken away, or brought back). */
static void move(const char *from, const char *to) {
  char a[600], b[600];
  path_of(a, sizeof(a), from);
  path_of(b, sizeof(b), to);
  assert_int_equal(rename(a, b), 0);
}

/* Up to n IDs of tag from a new allocator over uri (a process of its
** own); how many it gave before the first failure (into *e). */
static size_t take(const char *uri, const char *tag, int64_t *out, size_t n,
                   frond_error *e) {
  frond_seg *s;
  frond_seg_options o;
  size_t i;
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms = 3000;
  o.retry_min_ms = 10;
  o.retry_max_ms = 100;
  assert_int_equal(frond_seg_open(&s, uri, &o, e), 0);
  for (i = 0; i < n; i++)
    if (frond_seg_next(s, tag, strlen(tag), &out[i], e) != 0)
      break;
  frond_seg_close(s);
  return i;
}

static void take_all(const char *uri, const char *tag, int64_t *out, size_t n) {
  frond_error e = {0, ""};
  size_t got = take(uri, tag, out, n, &e);
  if (got != n)
    fail_msg("%zu of %zu IDs of %s: %s", got, n, tag, e.message);
}

static size_t dups(const int64_t *ids, size_t n) {
  int64_t *s = malloc(n * sizeof(*s));
  size_t i, d = 0;
  assert_non_null(s);
  memcpy(s, ids, n * sizeof(*s));
  qsort(s, n, sizeof(*s), cmp_i64);
  for (i = 1; i < n; i++)
    d += s[i] == s[i - 1];
  free(s);
  return d;
}

/* Members among ids (block (id - 1) / b, modulo m), a bit each. */
static int members(const int64_t *ids, size_t n, int64_t b, int m) {
  int bits = 0;
  size_t i;
  for (i = 0; i < n; i++)
    bits |= 1 << ((ids[i] - 1) / b % m);
  return bits;
}

static void create(const char *uri, const char *tag, int64_t step) {
  frond_store *st;
  frond_error e = {0, ""};
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, tag, step, 0, NULL, &e), 0);
  frond_store_close(st);
}

/* Two members, member 0 in a directory of its own. The one that records
** member 1's blocks is down while member 1, restored from an older
** backup, is asked for IDs: nothing is served (before, marks_of() skipped
** the member that was down and the restore went unseen: 800 of 6,000 IDs
** twice); member 1 alone serves nothing either. Member 0 back: member 1 is
** found behind, member 0 serves; repaired, both serve. */
static void test_restore_seen_while_holder_down(void **state) {
  static int64_t ids[6 * 2000];
  static const char *const names[] = {"z/a.db", "b.db"};
  char uri[1400];
  frond_store *st;
  frond_error e = {0, ""};
  size_t n = 0, got;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  {
    char p[600];
    path_of(p, sizeof(p), "z");
    assert_int_equal(mkdir(p, 0755), 0);
  }
  multi_uri(uri, sizeof(uri), names, 2);
  create(uri, "t", 100);
  take_all(uri, "t", ids, 2000);
  n += 2000;
  copy_db("b.db", "b-backup.db");
  take_all(uri, "t", ids + n, 2000);
  n += 2000;
  restore("b-backup.db", "b.db");
  move("z", "z.off");
  got = take(uri, "t", ids + n, 2000, &e);
  print_message("member 0 down, member 1 restored: %zu IDs served (%s)\n", got,
                e.message);
  assert_int_equal(got, 0);
  assert_non_null(strstr(e.message, "no other member"));
  n += got;
  move("z.off", "z");
  take_all(uri, "t", ids + n, 2000);
  assert_int_equal(members(ids + n, 2000, 100, 2), 1); /* member 0 only */
  n += 2000;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_member_repair(st, 1, NULL, NULL, &e), 0);
  frond_store_close(st);
  take_all(uri, "t", ids + n, 2000);
  assert_int_equal(members(ids + n, 2000, 100, 2), 3);
  n += 2000;
  assert_int_equal(dups(ids, n), 0);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* Three members: one down, the other two serve, each recording the
** other's blocks; a member restored meanwhile is found behind by the one
** that answers; nothing twice. */
static void test_three_members_serve_with_one_down(void **state) {
  static int64_t ids[4 * 3000];
  static const char *const names[] = {"y/c.db", "d.db", "e.db"};
  char uri[1400], p[600];
  size_t n = 0;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  path_of(p, sizeof(p), "y");
  assert_int_equal(mkdir(p, 0755), 0);
  multi_uri(uri, sizeof(uri), names, 3);
  create(uri, "t", 50);
  take_all(uri, "t", ids, 3000);
  assert_int_equal(members(ids, 3000, 50, 3), 7);
  n += 3000;
  copy_db("e.db", "e-backup.db");
  take_all(uri, "t", ids + n, 3000);
  n += 3000;
  restore("e-backup.db", "e.db");
  move("y", "y.off"); /* member 0 down */
  take_all(uri, "t", ids + n, 3000);
  assert_int_equal(members(ids + n, 3000, 50, 3), 2); /* member 1 only */
  n += 3000;
  move("y.off", "y");
  take_all(uri, "t", ids + n, 3000);
  assert_int_equal(members(ids + n, 3000, 50, 3), 3); /* 0 and 1 */
  n += 3000;
  assert_int_equal(dups(ids, n), 0);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* A single database, and an older copy of it, made the two members of a
** multi: store, in either order: the copy's rows (behind what the single
** database issued) are moved above it when it joins; the create finds the
** tag complete; nothing the single database issued comes again. Before,
** the copy joined with its rows as they were: 800 of 13,000 IDs twice. */
static void convert(const char *live, const char *copy, int copy_first) {
  static int64_t ids[13000];
  const char *names[2];
  char single[600], uri[1400];
  frond_store *st;
  frond_error e = {0, ""};
  sqlite_uri(single, sizeof(single), live);
  create(single, "t", 100);
  take_all(single, "t", ids, 2000);
  copy_db(live, copy);
  take_all(single, "t", ids + 2000, 8000);
  names[0] = copy_first ? copy : live;
  names[1] = copy_first ? live : copy;
  multi_uri(uri, sizeof(uri), names, 2);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 100, 0, NULL, &e),
                   FROND_ETAG_EXISTS);
  frond_store_close(st);
  take_all(uri, "t", ids + 10000, 3000);
  assert_int_equal(members(ids + 10000, 3000, 100, 2), 3);
  assert_int_equal(dups(ids, 13000), 0);
}

static void test_conversion_with_an_older_copy(void **state) {
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  convert("f.db", "g.db", 0);
  convert("h.db", "i.db", 1);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* Member 1's table compares tag names without case (as MariaDB's default
** collation does; member 0 compares them exactly, as PostgreSQL): IDs
** asked for as "T" come from member 1's row "t" alone. Its marks are kept
** under "t", so when member 1's row is put back (a restore), the next
** allocation of "t" finds it behind. Before, the marks of the "T"
** allocations were kept under "T" and the restore went unseen. */
static void test_marks_under_the_rows_spelling(void **state) {
  static int64_t ids[3 * 3000];
  static const char *const names[] = {"j.db", "k.db"};
  char uri[1400];
  size_t n = 0;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  sql("k.db", "CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL "
              "DEFAULT '' COLLATE NOCASE PRIMARY KEY, max_id bigint NOT NULL "
              "DEFAULT 1, step int NOT NULL, description varchar(256) "
              "DEFAULT NULL, update_time timestamp NOT NULL DEFAULT "
              "CURRENT_TIMESTAMP)");
  multi_uri(uri, sizeof(uri), names, 2);
  create(uri, "t", 100);
  take_all(uri, "t", ids, 1000);
  n += 1000;
  sql("k.db", "CREATE TABLE saved AS SELECT * FROM leaf_alloc");
  take_all(uri, "T", ids + n, 3000);
  assert_int_equal(members(ids + n, 3000, 100, 2), 2); /* member 1 only */
  n += 3000;
  sql("k.db", "UPDATE leaf_alloc SET max_id = (SELECT max_id FROM saved)");
  take_all(uri, "t", ids + n, 3000);
  assert_int_equal(members(ids + n, 3000, 100, 2), 1); /* refused: behind */
  n += 3000;
  assert_int_equal(dups(ids, n), 0);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_restore_seen_while_holder_down),
      cmocka_unit_test(test_three_members_serve_with_one_down),
      cmocka_unit_test(test_conversion_with_an_older_copy),
      cmocka_unit_test(test_marks_under_the_rows_spelling),
  };
  return frond_run_tests(tests, setup, teardown);
}
