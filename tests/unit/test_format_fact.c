/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_fact.c -- a keyed format's key as a shared fact: the
** fingerprint changes with the key and with everything that permutes,
** and with nothing else; nothing is issued before a check agreed; the
** record in a data directory, a SQLite store, a multi: store and a lease
** coordinator's database is made once and then compared, so that a
** second process with another key, another rounds=, or the unversioned key
** changed in place is refused with KEY_MISMATCH naming both fingerprints
** and the record, while a new key version records its own.
*/
#include "format_testutil.h"

#include "core/core.h"
#include "store/db.h"
#include "store/store.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/* 2026-01-01T00:00:00Z */
#define T0 INT64_C(1767225600000)

static void fp_of(const frond_format *f, char out[17]) {
  assert_int_equal(frond_format_fingerprint(f, out, 17), 16);
}

static frond_gen *gen_at(uint64_t node) {
  frond_gen *g;
  assert_int_equal(
      frond_gen_create(&g, frond_layout_preset(0), node, NULL, NULL), 0);
  return g;
}

/* Equal keys and parameters give equal fingerprints; the key, the rounds,
** the width or the radix change them; a prefix, a check character or a
** time zone (which do not permute) do not. Unkeyed formats have none. */
static void test_fingerprint(void **state) {
  char a[17], b[17];
  frond_format *f, *g;
  (void)state;
  f = keyed("order:digits=12,key=1", "1:" KEY0);
  fp_of(f, a);
  for (int i = 0; i < 16; i++)
    assert_non_null(strchr("0123456789abcdef", a[i]));
  /* Nothing of the key: its hex does not hold the fingerprint. */
  assert_null(strstr(KEY0, a));
  g = keyed("order:digits=12,key=1,check=damm,prefix=A%Y-,tz=Asia/Tokyo",
            "1:" KEY0);
  fp_of(g, b);
  assert_string_equal(a, b);
  frond_format_free(g);
  static const char *const other[] = {
      "order:digits=12,key=1,rounds=10", "order:digits=13,key=1",
      "order:base32=12,key=1", "seq:tag=t,digits=12,key=1"};
  for (size_t i = 0; i < FROND__ARRAY_SIZE(other); i++) {
    g = keyed(other[i], "1:" KEY0);
    fp_of(g, b);
    if (strcmp(a, b) == 0)
      fail_msg("%s has the fingerprint of order:digits=12,key=1", other[i]);
    frond_format_free(g);
  }
  g = keyed("order:digits=12,key=1", "1:" KEY1);
  fp_of(g, b);
  assert_string_not_equal(a, b);
  frond_format_free(g);
  /* The version picks the key; the same key under two versions has one
  ** fingerprint (the record's name tells the versions apart). */
  g = keyed("order:digits=12,key=2", "1:" KEY1 "\n2:" KEY0);
  fp_of(g, b);
  assert_string_equal(a, b);
  frond_format_free(g);
  frond_format_free(f);
  f = format_of("seq:tag=t,digits=6", NULL);
  assert_int_equal(frond_format_fingerprint(f, a, sizeof(a)), 0);
  assert_string_equal(a, "");
  assert_true(frond_format_checked(f));
  frond_format_free(f);
  f = format_of("base62", NULL);
  assert_int_equal(frond_format_fingerprint(f, NULL, 0), 0);
  frond_format_free(f);
}

/* Record names: per kind, radix, width, version and source; a tag that
** is not plain text is hashed; at most 64 bytes of [A-Za-z0-9._-]. */
static void test_names(void **state) {
  char n[80];
  frond_format *f;
  (void)state;
  f = keyed("order:digits=12,key=1", "1:" KEY0);
  frond__format_fact_name(f, "", n, sizeof(n));
  assert_string_equal(n, "key.order.d12.1.snowflake");
  frond__format_fact_name(f, "orders", n, sizeof(n));
  assert_string_equal(n, "key.order.d12.1.tag.orders");
  frond__format_fact_name(f, "shop/eu:orders", n, sizeof(n));
  assert_memory_equal(n, "key.order.d12.1.tagh.", 21);
  assert_int_equal(strlen(n), 21 + 16);
  frond_format_free(f);
  f = keyed("seq:tag=t,base32=12,key=Z", "Z:" KEY0);
  frond__format_fact_name(f, "t", n, sizeof(n));
  assert_string_equal(n, "key.seq.b12.Z.tag.t");
  frond_format_free(f);
  f = keyed("order:digits=19", KEY0);
  frond__format_fact_name(f, "a-tag-of-forty-characters-exactly_______", n,
                          sizeof(n));
  assert_string_equal(n,
                      "key.order.d19.-.tag.a-tag-of-forty-characters-exactly_"
                      "______");
  assert_true(strlen(n) <= FROND__FACT_NAME_MAX);
  frond_format_free(f);
}

/* A keyed format issues nothing until a check agreed, and nothing after a
** recheck until it agrees again; skipping the check is explicit. */
static void test_unchecked_issues_nothing(void **state) {
  frond_format *f = keyed("order:digits=19,key=1", "1:" KEY0);
  frond_gen *g = gen_at(1);
  frond_format_source src = {g, NULL, NULL, 0};
  frond_error err = {0, ""};
  char buf[32], *dir = tmpdir_make();
  (void)state;
  assert_false(frond_format_checked(f));
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "not checked"));
  /* Nowhere to check: refused, and still nothing issued. */
  assert_int_equal(frond_format_check(f, &src, NULL, NULL, &err), FROND_EINVAL);
  assert_non_null(strstr(err.message, "nowhere"));
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL),
                   FROND_EINVAL);
  assert_int_equal(frond_format_check(f, &src, NULL, dir, &err), 0);
  assert_true(frond_format_checked(f));
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err), 0);
  frond_format_recheck(f);
  assert_false(frond_format_checked(f));
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL),
                   FROND_EINVAL);
  assert_int_equal(frond_format_check(f, &src, NULL, dir, &err), 0);
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err), 0);
  /* A check for snowflake IDs does not cover a tag's IDs. */
  src.tag = "orders";
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "for this source"));
  frond_format_free(f);
  f = keyed("order:digits=19,key=1", "1:" KEY1);
  src.tag = NULL;
  frond_format_skip_check(f);
  assert_true(frond_format_checked(f));
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err), 0);
  frond_format_free(f);
  frond_gen_close(g, NULL);
  tmpdir_remove(dir);
}

/* Two "hosts" sharing a data directory: the first records, one with
** another key, another rounds= or the unversioned key changed in place is
** refused, naming both fingerprints and the file; a new version records
** its own. The file is a checksummed record, never rewritten. */
static void test_dir_record(void **state) {
  char *dir = tmpdir_make(), path[600], fa[17], fb[17];
  frond_gen *g = gen_at(1);
  frond_format_source src = {g, NULL, NULL, 0};
  frond_format *a, *b;
  frond_error err = {0, ""};
  struct stat st1, st2;
  char buf[32];
  (void)state;
  a = keyed("order:digits=19,key=1", "1:" KEY0);
  assert_int_equal(frond_format_check(a, &src, NULL, dir, &err), 0);
  snprintf(path, sizeof(path), "%s/frond-fact-key.order.d19.1.snowflake", dir);
  assert_int_equal(stat(path, &st1), 0);
  b = keyed("order:digits=19,key=1", "1:" KEY1);
  fp_of(a, fa);
  fp_of(b, fb);
  assert_int_equal(frond_format_check(b, &src, NULL, dir, &err),
                   FROND_EKEY_MISMATCH);
  assert_int_equal(err.code, FROND_EKEY_MISMATCH);
  assert_non_null(strstr(err.message, fa));
  assert_non_null(strstr(err.message, fb));
  assert_non_null(strstr(err.message, path));
  assert_non_null(strstr(err.message, "key version 1"));
  /* Refused, it issues nothing, with the same message every time. */
  assert_false(frond_format_checked(b));
  memset(&err, 0, sizeof(err));
  assert_int_equal(frond_format_next(b, &src, buf, sizeof(buf), &err),
                   FROND_EKEY_MISMATCH);
  assert_non_null(strstr(err.message, fb));
  frond_format_free(b);
  /* rounds= changed under the same version. */
  b = keyed("order:digits=19,key=1,rounds=12", "1:" KEY0);
  assert_int_equal(frond_format_check(b, &src, NULL, dir, &err),
                   FROND_EKEY_MISMATCH);
  frond_format_free(b);
  /* A new version: its own record, both serve. */
  b = keyed("order:digits=19,key=2", "1:" KEY0 "\n2:" KEY1);
  assert_int_equal(frond_format_check(b, &src, NULL, dir, &err), 0);
  assert_int_equal(frond_format_next(b, &src, buf, sizeof(buf), &err), 0);
  assert_int_equal(buf[0], '2');
  frond_format_free(b);
  assert_int_equal(frond_format_check(a, &src, NULL, dir, &err), 0);
  frond_format_free(a);
  /* The unversioned key changed in place. */
  a = keyed("order:digits=19", KEY0);
  b = keyed("order:digits=19", KEY2);
  assert_int_equal(frond_format_check(a, &src, NULL, dir, &err), 0);
  assert_int_equal(frond_format_check(b, &src, NULL, dir, &err),
                   FROND_EKEY_MISMATCH);
  assert_non_null(strstr(err.message, "unversioned key"));
  frond_format_free(a);
  frond_format_free(b);
  /* The first record stands, untouched. */
  assert_int_equal(stat(path, &st2), 0);
  assert_int_equal(st1.st_ino, st2.st_ino);
  assert_int_equal(st1.st_mtime, st2.st_mtime);
  /* A record that was edited is not trusted: IO, and nothing issued. */
  {
    FILE *fp = fopen(path, "r+");
    assert_non_null(fp);
    fseek(fp, 30, SEEK_SET);
    fputc('x', fp);
    fclose(fp);
  }
  a = keyed("order:digits=19,key=1", "1:" KEY0);
  assert_int_equal(frond_format_check(a, &src, NULL, dir, &err), FROND_EIO);
  assert_false(frond_format_checked(a));
  frond_format_free(a);
  frond_gen_close(g, NULL);
  tmpdir_remove(dir);
}

typedef struct racer {
  const char *dir;
  frond_format *f;
  frond_gen *g;
  pthread_barrier_t *go;
  int rc;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  frond_format_source src = {r->g, NULL, NULL, 0};
  pthread_barrier_wait(r->go);
  r->rc = frond_format_check(r->f, &src, NULL, r->dir, NULL);
  return NULL;
}

/* Processes racing to record different keys: exactly one wins, every
** other is refused, round after round. */
static void test_dir_race(void **state) {
  enum { N = 4, ROUNDS = 20 };
  static const char *const keys[N] = {"1:" KEY0, "1:" KEY1, "1:" KEY2,
                                      "1:" KEY0};
  frond_gen *g = gen_at(1);
  (void)state;
  for (int round = 0; round < ROUNDS; round++) {
    char *dir = tmpdir_make();
    pthread_barrier_t go;
    pthread_t th[N];
    racer r[N];
    int agreed = 0, refused = 0;
    pthread_barrier_init(&go, NULL, N);
    for (int i = 0; i < N; i++) {
      r[i] = (racer){dir, keyed("order:digits=19,key=1", keys[i]), g, &go, -1};
      assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < N; i++) {
      pthread_join(th[i], NULL);
      agreed += r[i].rc == 0;
      refused += r[i].rc == FROND_EKEY_MISMATCH;
    }
    /* KEY0 is held by two: both agree when it wins. */
    if (!((agreed == 1 && refused == 3) || (agreed == 2 && refused == 2)))
      fail_msg("round %d: %d agreed, %d refused", round, agreed, refused);
    if (agreed == 2)
      assert_true(r[0].rc == 0 && r[3].rc == 0);
    for (int i = 0; i < N; i++)
      frond_format_free(r[i].f);
    pthread_barrier_destroy(&go);
    tmpdir_remove(dir);
  }
  frond_gen_close(g, NULL);
}

/* A SQLite store, two allocators as two servers would hold: the tag's
** format checks in the store (frond_meta), another key is refused there;
** a format of snowflake IDs checks there too when the source names the
** allocator. A store that cannot answer leaves the state as it was. */
static frond_seg *seg_on(const char *uri) {
  frond_seg *s;
  frond_error err = {0, ""};
  if (frond_seg_open(&s, uri, NULL, &err) != 0)
    fail_msg("seg: %s", err.message);
  return s;
}

static int fail_facts(frond_store *st, const char *op) {
  (void)st;
  return strcmp(op, "fact") == 0 ? FROND_ESTORE : 0;
}

static void test_store_record(void **state) {
  char *dir = tmpdir_make(), uri[600], buf[64];
  frond_store *st;
  frond_seg *s1, *s2;
  frond_format *a, *b, *c;
  frond_format_source src1, src2;
  frond_error err = {0, ""};
  frond_db *db;
  frond_db_result r = {0};
  (void)state;
  snprintf(uri, sizeof(uri), "sqlite://%s/ids.db", dir);
  assert_int_equal(frond_store_open(&st, uri, &err), 0);
  assert_int_equal(frond_store_tag_create(st, "orders", 100, 1, NULL, &err), 0);
  frond_store_close(st);
  s1 = seg_on(uri);
  s2 = seg_on(uri);
  src1 = (frond_format_source){NULL, s1, NULL, 0};
  src2 = (frond_format_source){NULL, s2, NULL, 0};
  a = keyed("order:digits=8,key=1,tag=orders", "1:" KEY0);
  b = keyed("order:digits=8,key=1,tag=orders", "1:" KEY1);
  /* A tag's format needs the tag's store. */
  assert_int_equal(frond_format_check(a, NULL, NULL, dir, &err), FROND_EINVAL);
  assert_non_null(strstr(err.message, "tag \"orders\""));
  assert_int_equal(frond_format_check(a, &src1, NULL, NULL, &err), 0);
  assert_int_equal(frond_format_next(a, &src1, buf, sizeof(buf), &err), 0);
  assert_int_equal(frond_format_check(b, &src2, NULL, NULL, &err),
                   FROND_EKEY_MISMATCH);
  assert_non_null(strstr(err.message, "frond_meta"));
  assert_non_null(strstr(err.message, "key.order.d8.1.tag.orders"));
  assert_non_null(strstr(err.message, "tag \"orders\""));
  assert_int_equal(frond_format_next(b, &src2, buf, sizeof(buf), NULL),
                   FROND_EKEY_MISMATCH);
  /* Snowflake IDs with the allocator given: recorded in the store too. */
  c = keyed("order:digits=19,key=1", "1:" KEY0);
  assert_int_equal(frond_format_check(c, &src1, NULL, dir, &err), 0);
  /* The rows, in the table the lease coordinator shares. */
  assert_int_equal(frond__db_open(uri, NULL, &db, &err), 0);
  assert_int_equal(frond__db_exec(db,
                                  "SELECT name, value FROM frond_meta ORDER BY "
                                  "name",
                                  NULL, 0, &r, &err),
                   0);
  assert_int_equal(r.nrows, 2);
  assert_string_equal(frond__db_get_text(&r, 0, 0),
                      "key.order.d19.1.snowflake");
  assert_string_equal(frond__db_get_text(&r, 1, 0),
                      "key.order.d8.1.tag.orders");
  fp_of(a, buf);
  assert_string_equal(frond__db_get_text(&r, 1, 1), buf);
  frond__db_result_free(&r);
  frond__db_close(db);
  /* The store cannot answer: an agreed check stays agreed (no waiting on
  ** the store for numbers already checked), an unchecked one stays so. */
  atomic_store(&frond__store_fault, fail_facts);
  assert_int_equal(frond_format_check(a, &src1, NULL, NULL, &err),
                   FROND_ESTORE);
  assert_true(frond_format_checked(a));
  frond_format_recheck(c);
  assert_int_equal(frond_format_check(c, &src1, NULL, NULL, &err),
                   FROND_ESTORE);
  assert_false(frond_format_checked(c));
  atomic_store(&frond__store_fault, NULL);
  frond_format_free(a);
  frond_format_free(b);
  frond_format_free(c);
  frond_seg_close(s1);
  frond_seg_close(s2);
  tmpdir_remove(dir);
}

/* A multi: store records on every member and needs them all; a member
** whose record differs (another process recorded it there first) refuses
** the key. */
static void test_multi_record(void **state) {
  char *dir = tmpdir_make(), uri[700], b_uri[600], bad[700], fa[17];
  frond_store *st;
  frond_seg *s;
  frond_format *f;
  frond_format_source src;
  frond_error err = {0, ""};
  frond_db *db;
  frond_db_arg arg;
  frond_db_result r = {0};
  (void)state;
  snprintf(uri, sizeof(uri), "multi:sqlite://%s/a.db|sqlite://%s/b.db", dir,
           dir);
  snprintf(b_uri, sizeof(b_uri), "sqlite://%s/b.db", dir);
  assert_int_equal(frond_store_open(&st, uri, &err), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 10, 1, NULL, &err), 0);
  frond_store_close(st);
  s = seg_on(uri);
  src = (frond_format_source){NULL, s, NULL, 0};
  f = keyed("seq:tag=t,digits=6,key=1", "1:" KEY0);
  assert_int_equal(frond_format_check(f, &src, NULL, NULL, &err), 0);
  fp_of(f, fa);
  frond_format_free(f);
  assert_int_equal(frond__db_open(b_uri, NULL, &db, &err), 0);
  arg = frond__db_text("key.seq.d6.1.tag.t");
  assert_int_equal(
      frond__db_exec(db, "SELECT value FROM frond_meta WHERE name = $1", &arg,
                     1, &r, &err),
      0);
  assert_int_equal(r.nrows, 1);
  assert_string_equal(frond__db_get_text(&r, 0, 0), fa);
  frond__db_result_free(&r);
  /* Member b holds another value (recorded there by another process). */
  assert_int_equal(frond__db_exec(db,
                                  "UPDATE frond_meta SET value = "
                                  "'0123456789abcdef' WHERE name = $1",
                                  &arg, 1, NULL, &err),
                   0);
  frond__db_close(db);
  f = keyed("seq:tag=t,digits=6,key=1", "1:" KEY0);
  assert_int_equal(frond_format_check(f, &src, NULL, NULL, &err),
                   FROND_EKEY_MISMATCH);
  assert_non_null(strstr(err.message, "0123456789abcdef"));
  frond_format_free(f);
  frond_seg_close(s);
  /* A member out of reach: nothing is checked. */
  snprintf(bad, sizeof(bad), "multi:sqlite://%s/a.db|sqlite://%s/no/b.db", dir,
           dir);
  s = seg_on(bad);
  src.seg = s;
  f = keyed("seq:tag=t,digits=6,key=2", "2:" KEY0);
  assert_int_equal(frond_format_check(f, &src, NULL, NULL, &err), FROND_ESTORE);
  assert_non_null(strstr(err.message, "every member"));
  assert_false(frond_format_checked(f));
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(dir);
}

/* Member a's record is lost (a restore from before the format); a process
** with the wrong key is refused at member b and writes nothing to member
** a, so that the processes with the right key are not refused there when
** they start again. Before, the wrong key's fingerprint was written to
** member a first, and the right key was refused ever after. */
static void test_multi_refused_key_leaves_no_trace(void **state) {
  char *dir = tmpdir_make(), uri[700], a_uri[600];
  frond_store *st;
  frond_seg *s;
  frond_format *f;
  frond_format_source src;
  frond_error err = {0, ""};
  frond_db *db;
  frond_db_result r = {0};
  (void)state;
  snprintf(uri, sizeof(uri), "multi:sqlite://%s/a.db|sqlite://%s/b.db", dir,
           dir);
  snprintf(a_uri, sizeof(a_uri), "sqlite://%s/a.db", dir);
  assert_int_equal(frond_store_open(&st, uri, &err), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 10, 1, NULL, &err), 0);
  frond_store_close(st);
  s = seg_on(uri);
  src = (frond_format_source){NULL, s, NULL, 0};
  f = keyed("order:digits=6,key=1,tag=t", "1:" KEY0);
  assert_int_equal(frond_format_check(f, &src, NULL, NULL, &err), 0);
  frond_format_free(f);
  assert_int_equal(frond__db_open(a_uri, NULL, &db, &err), 0);
  assert_int_equal(
      frond__db_exec(db, "DELETE FROM frond_meta", NULL, 0, NULL, &err), 0);
  f = keyed("order:digits=6,key=1,tag=t", "1:" KEY1);
  assert_int_equal(frond_format_check(f, &src, NULL, NULL, &err),
                   FROND_EKEY_MISMATCH);
  frond_format_free(f);
  assert_int_equal(
      frond__db_exec(db, "SELECT count(*) FROM frond_meta", NULL, 0, &r, &err),
      0);
  assert_string_equal(frond__db_get_text(&r, 0, 0), "0");
  frond__db_result_free(&r);
  frond__db_close(db);
  f = keyed("order:digits=6,key=1,tag=t", "1:" KEY0);
  assert_int_equal(frond_format_check(f, &src, NULL, NULL, &err), 0);
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(dir);
}

/* leaf_alloc compares tag names without case (as MariaDB's default
** collation does; frond_meta compares them exactly, as PostgreSQL's
** would): "ORDERS.EU" is the row "orders.eu", and its numbers are
** checked under that row's record, so another key is refused. Before,
** the record was named after the format's spelling: two keys served one
** row. A seq format spelt otherwise than its row is refused outright (its
** periods' rows are named after it); a tag without a row checks nothing. */
static void test_record_under_the_rows_spelling(void **state) {
  char *dir = tmpdir_make(), uri[600];
  frond_store *st;
  frond_seg *s;
  frond_format *a, *b, *q, *n;
  frond_format_source src;
  frond_error err = {0, ""};
  frond_db *db;
  (void)state;
  snprintf(uri, sizeof(uri), "sqlite://%s/ids.db", dir);
  assert_int_equal(frond__db_open(uri, NULL, &db, &err), 0);
  assert_int_equal(
      frond__db_exec(db,
                     "CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL "
                     "DEFAULT '' COLLATE NOCASE PRIMARY KEY, max_id bigint "
                     "NOT NULL DEFAULT 1, step int NOT NULL, description "
                     "varchar(256) DEFAULT NULL, update_time timestamp NOT "
                     "NULL DEFAULT CURRENT_TIMESTAMP)",
                     NULL, 0, NULL, &err),
      0);
  frond__db_close(db);
  assert_int_equal(frond_store_open(&st, uri, &err), 0);
  assert_int_equal(frond_store_tag_create(st, "orders.eu", 100, 1, NULL, &err),
                   0);
  frond_store_close(st);
  s = seg_on(uri);
  src = (frond_format_source){NULL, s, NULL, 0};
  a = keyed("order:digits=8,key=1,tag=orders.eu", "1:" KEY0);
  b = keyed("order:digits=8,key=1,tag=ORDERS.EU", "1:" KEY1);
  q = keyed("seq:digits=6,tag=ORDERS.EU,key=1", "1:" KEY0);
  n = keyed("order:digits=8,key=1,tag=nope", "1:" KEY0);
  assert_int_equal(frond_format_check(a, &src, NULL, NULL, &err), 0);
  assert_int_equal(frond_format_check(b, &src, NULL, NULL, &err),
                   FROND_EKEY_MISMATCH);
  assert_non_null(strstr(err.message, "tag \"ORDERS.EU\""));
  assert_int_equal(frond_format_check(q, &src, NULL, NULL, &err),
                   FROND_ETAG_INVALID);
  assert_non_null(strstr(err.message, "tag=orders.eu"));
  assert_int_equal(frond_format_check(n, &src, NULL, NULL, &err),
                   FROND_ETAG_NOT_FOUND);
  assert_false(frond_format_checked(n));
  frond_format_free(a);
  frond_format_free(b);
  frond_format_free(q);
  frond_format_free(n);
  frond_seg_close(s);
  tmpdir_remove(dir);
}

/* Without a store, formats of snowflake IDs check in a coordinator that
** keeps facts: the lease's frond_meta, beside the fleet's layout. */
static void test_lease_record(void **state) {
  char *dir = tmpdir_make(), uri[600];
  frond_coord *c1, *c2;
  frond_format *a, *b;
  frond_format_source src = {NULL, NULL, NULL, 0};
  frond_error err = {0, ""};
  (void)state;
  snprintf(uri, sizeof(uri), "lease+sqlite://%s/lease.db", dir);
  assert_int_equal(frond_coord_open(&c1, uri, NULL, &err), 0);
  assert_int_equal(frond_coord_open(&c2, uri, NULL, &err), 0);
  a = keyed("order:digits=19,key=3", "3:" KEY0);
  b = keyed("order:digits=19,key=3", "3:" KEY1);
  assert_int_equal(frond_format_check(a, &src, c1, dir, &err), 0);
  assert_int_equal(frond_format_check(b, &src, c2, dir, &err),
                   FROND_EKEY_MISMATCH);
  assert_non_null(strstr(err.message, "lease database"));
  /* Not the data directory: the coordinator came first. */
  {
    char path[600];
    snprintf(path, sizeof(path), "%s/frond-fact-key.order.d19.3.snowflake",
             dir);
    assert_int_not_equal(access(path, F_OK), 0);
  }
  frond_format_free(a);
  frond_format_free(b);
  frond_coord_close(c1, NULL);
  frond_coord_close(c2, NULL);
  /* static: keeps no facts: the data directory is next. */
  assert_int_equal(frond_coord_open(&c1, "static:1", NULL, &err), 0);
  a = keyed("order:digits=19,key=3", "3:" KEY1);
  assert_int_equal(frond_format_check(a, &src, c1, dir, &err), 0);
  frond_format_free(a);
  frond_coord_close(c1, NULL);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fingerprint),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_unchecked_issues_nothing),
      cmocka_unit_test(test_dir_record),
      cmocka_unit_test(test_dir_race),
      cmocka_unit_test(test_store_record),
      cmocka_unit_test(test_multi_record),
      cmocka_unit_test(test_multi_refused_key_leaves_no_trace),
      cmocka_unit_test(test_record_under_the_rows_spelling),
      cmocka_unit_test(test_lease_record),
  };
  return frond_run_tests(tests, NULL, NULL);
}
