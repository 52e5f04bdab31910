/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_coord_record.c -- the fleet's coordinators recorded in the store
** (coord_record.c), on a fake store: one map of facts, written once each,
** as frond_meta keeps them. The races are played both ways: a second
** process that read the log's end before the first wrote it, and real
** threads starting at once.
*/
#include "testutil.h"

#include "coord/coord.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FACTS 64

typedef struct fake {
  pthread_mutex_t mu;
  char name[FACTS][64], value[FACTS][300];
  int n;
  /* Run once, the first time get finds a name empty (another process
  ** that acts between this one's read and its write). */
  void (*meanwhile)(struct fake *);
  int puts;
} fake;

static int fput(void *ctx, const char *name, const char *value, char *rec,
                size_t len, frond_error *err) {
  fake *f = ctx;
  int i;
  (void)err;
  pthread_mutex_lock(&f->mu);
  f->puts++;
  for (i = 0; i < f->n; i++)
    if (strcmp(f->name[i], name) == 0)
      break;
  if (i == f->n) {
    assert_true(f->n < FACTS);
    snprintf(f->name[i], sizeof f->name[i], "%s", name);
    snprintf(f->value[i], sizeof f->value[i], "%s", value);
    f->n++;
  }
  snprintf(rec, len, "%s", f->value[i]);
  pthread_mutex_unlock(&f->mu);
  return 0;
}

static int fget(void *ctx, const char *name, char *rec, size_t len,
                frond_error *err) {
  fake *f = ctx;
  void (*then)(fake *) = NULL;
  int i;
  (void)err;
  pthread_mutex_lock(&f->mu);
  rec[0] = '\0';
  for (i = 0; i < f->n; i++)
    if (strcmp(f->name[i], name) == 0)
      snprintf(rec, len, "%s", f->value[i]);
  if (rec[0] == '\0' && f->meanwhile) {
    then = f->meanwhile;
    f->meanwhile = NULL;
  }
  pthread_mutex_unlock(&f->mu);
  if (then)
    then(f);
  return 0;
}

static fake *fake_new(void) {
  fake *f = calloc(1, sizeof *f);
  assert_non_null(f);
  pthread_mutex_init(&f->mu, NULL);
  return f;
}

static frond__coord_book book_of(fake *f) {
  frond__coord_book b = {fput, fget, f, "the store"};
  return b;
}

static frond__coord_rec rec(char who, uint64_t lo, uint64_t hi,
                            const char *scope) {
  frond__coord_rec r;
  memset(&r, 0, sizeof r);
  memset(r.id, who, FROND__COORD_ID_LEN);
  r.lo = lo;
  r.hi = hi;
  snprintf(r.scope, sizeof r.scope, "%s", scope);
  snprintf(r.uri, sizeof r.uri, "zk://%c:2181/x", who);
  return r;
}

static int check(fake *f, char who, uint64_t lo, uint64_t hi, const char *scope,
                 int64_t *floor, frond_error *err) {
  frond__coord_book b = book_of(f);
  frond__coord_rec me = rec(who, lo, hi, scope);
  int64_t fl = 0;
  int rc = frond__coord_rec_check(&b, &me, floor ? floor : &fl, NULL, err);
  return rc;
}

static void test_first_records_later_agree(void **state) {
  fake *f = fake_new();
  frond_error err = {0, ""};
  (void)state;
  assert_int_equal(check(f, 'a', 0, 1023, "all", NULL, &err), 0);
  assert_int_equal(f->n, 1);
  /* The same coordinator again: nothing more written. */
  assert_int_equal(check(f, 'a', 0, 1023, "all", NULL, &err), 0);
  assert_int_equal(f->n, 1);
  /* Another one on the same node IDs: refused, both named. */
  assert_int_equal(check(f, 'b', 0, 1023, "all", NULL, &err),
                   FROND_ECOORDINATOR_MISMATCH);
  assert_non_null(strstr(err.message, "zk://b:2181/x"));
  assert_non_null(strstr(err.message, "zk://a:2181/x"));
  assert_non_null(strstr(err.message, "frond node coordinator --set"));
  assert_int_equal(f->n, 1);
  free(f);
}

/* Regions: a coordinator per datacenter on one store; overlap refuses. */
static void test_regions(void **state) {
  fake *f = fake_new();
  frond_error err = {0, ""};
  (void)state;
  assert_int_equal(check(f, 'a', 0, 31, "datacenter=0", NULL, &err), 0);
  assert_int_equal(check(f, 'b', 32, 63, "datacenter=1", NULL, &err), 0);
  assert_int_equal(check(f, 'a', 0, 31, "datacenter=0", NULL, &err), 0);
  assert_int_equal(check(f, 'b', 32, 63, "datacenter=1", NULL, &err), 0);
  /* A third region's coordinator given datacenter 1 by mistake. */
  assert_int_equal(check(f, 'c', 32, 63, "datacenter=1", NULL, &err),
                   FROND_ECOORDINATOR_MISMATCH);
  /* Overlapping nodes= ranges; the whole range. */
  assert_int_equal(check(f, 'c', 60, 70, "nodes=60-70", NULL, &err),
                   FROND_ECOORDINATOR_MISMATCH);
  assert_int_equal(check(f, 'c', 0, 1023, "all", NULL, &err),
                   FROND_ECOORDINATOR_MISMATCH);
  assert_int_equal(check(f, 'c', 64, 95, "datacenter=2", NULL, &err), 0);
  free(f);
}

/* B read the log's end (slot 1 empty), then A started and recorded
** itself there, then B wrote: B's write finds A's entry and is refused. */
static fake *race_target;
static void a_starts(fake *f) {
  frond_error err = {0, ""};
  race_target = f;
  assert_int_equal(check(f, 'a', 0, 1023, "all", NULL, &err), 0);
}

static void test_race_read_then_write(void **state) {
  fake *f = fake_new();
  frond_error err = {0, ""};
  (void)state;
  f->meanwhile = a_starts;
  assert_int_equal(check(f, 'b', 0, 1023, "all", NULL, &err),
                   FROND_ECOORDINATOR_MISMATCH);
  assert_ptr_equal(race_target, f);
  assert_int_equal(f->n, 1); /* A's entry only */
  assert_int_equal(check(f, 'a', 0, 1023, "all", NULL, &err), 0);
  free(f);
}

/* Disjoint regions racing for one slot: the loser takes the next. */
static void a_region(fake *f) {
  frond_error err = {0, ""};
  assert_int_equal(check(f, 'a', 0, 31, "datacenter=0", NULL, &err), 0);
}

static void test_race_disjoint(void **state) {
  fake *f = fake_new();
  frond_error err = {0, ""};
  (void)state;
  f->meanwhile = a_region;
  assert_int_equal(check(f, 'b', 32, 63, "datacenter=1", NULL, &err), 0);
  assert_int_equal(f->n, 2);
  free(f);
}

/* Real threads, many rounds: of two coordinators starting at once on
** overlapping node IDs exactly one passes. */
typedef struct racer {
  fake *f;
  char who;
  int rc;
  pthread_barrier_t *go;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  frond_error err = {0, ""};
  pthread_barrier_wait(r->go);
  r->rc = check(r->f, r->who, r->who == 'a' ? 0 : 500,
                r->who == 'a' ? 600 : 1023, "nodes", NULL, &err);
  return NULL;
}

static void test_race_threads(void **state) {
  int round;
  (void)state;
  for (round = 0; round < 200; round++) {
    fake *f = fake_new();
    pthread_barrier_t go;
    pthread_t t[2];
    racer r[2] = {{f, 'a', 1, &go}, {f, 'b', 1, &go}};
    int i;
    pthread_barrier_init(&go, NULL, 2);
    for (i = 0; i < 2; i++)
      assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
    for (i = 0; i < 2; i++)
      pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
    if ((r[0].rc == 0) + (r[1].rc == 0) != 1)
      fail_msg("round %d: a %d, b %d: not exactly one passed", round, r[0].rc,
               r[1].rc);
    assert_true(r[0].rc == FROND_ECOORDINATOR_MISMATCH ||
                r[1].rc == FROND_ECOORDINATOR_MISMATCH);
    free(f);
  }
}

/* A deliberate change: the new one takes the range above a floor, the
** old one is refused from then on. */
static void test_change(void **state) {
  fake *f = fake_new();
  frond__coord_book b = book_of(f);
  frond__coord_rec e = rec('b', 0, 1023, "all");
  frond__coord_rec *cur = NULL;
  frond_error err = {0, ""};
  int64_t floor = 0;
  size_t n = 0;
  int slot = 0;
  (void)state;
  assert_int_equal(check(f, 'a', 0, 1023, "all", NULL, &err), 0);
  e.set = 1;
  e.floor_ms = 1700000000123;
  assert_int_equal(frond__coord_rec_set(&b, &e, &slot, &err), 0);
  assert_int_equal(slot, 2);
  assert_int_equal(check(f, 'a', 0, 1023, "all", NULL, &err),
                   FROND_ECOORDINATOR_MISMATCH);
  assert_int_equal(check(f, 'b', 0, 1023, "all", &floor, &err), 0);
  assert_int_equal(floor, 1700000000123);
  assert_int_equal(frond__coord_rec_state(&b, &cur, &n, &slot, &err), 0);
  assert_int_equal(n, 1);
  assert_int_equal(slot, 3);
  assert_int_equal(cur[0].id[0], 'b');
  free(cur);
  free(f);
}

/* An "add" that overlaps a current coordinator (written by hand, or by a
** version that did not check) is void for every reader. */
static void test_void_entry(void **state) {
  fake *f = fake_new();
  frond__coord_rec a = rec('a', 0, 9, "nodes=0-9");
  frond__coord_rec bb = rec('b', 5, 20, "nodes=5-20");
  frond_error err = {0, ""};
  (void)state;
  snprintf(f->name[0], 64, FROND__COORD_REC_PREFIX "1");
  assert_int_equal(frond__coord_rec_format(&a, f->value[0], 256), 0);
  snprintf(f->name[1], 64, FROND__COORD_REC_PREFIX "2");
  assert_int_equal(frond__coord_rec_format(&bb, f->value[1], 256), 0);
  f->n = 2;
  assert_int_equal(check(f, 'b', 5, 20, "nodes=5-20", NULL, &err),
                   FROND_ECOORDINATOR_MISMATCH);
  assert_int_equal(check(f, 'a', 0, 9, "nodes=0-9", NULL, &err), 0);
  /* An entry this version cannot read stops the check. */
  snprintf(f->name[2], 64, FROND__COORD_REC_PREFIX "3");
  snprintf(f->value[2], 300, "move everything");
  f->n = 3;
  assert_int_equal(check(f, 'a', 0, 9, "nodes=0-9", NULL, &err),
                   FROND_ECOORDINATOR_MISMATCH);
  assert_non_null(strstr(err.message, "does not read"));
  free(f);
}

static void test_parse(void **state) {
  frond__coord_rec r = rec('c', 3, 7, "nodes=3-7"), back;
  char buf[300];
  static const char *const bad[] = {
      "",
      "add",
      "put cccccccccccccccccccccccccccccccc 0 1 0 all zk://x",
      "add CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC 0 1 0 all zk://x",
      "add cccccccccccccccccccccccccccccccc 2 1 0 all zk://x",
      "add cccccccccccccccccccccccccccccccc -1 1 0 all zk://x",
      "add cccccccccccccccccccccccccccccccc 0 1 0 all",
      "add cccccccccccccccccccccccccccccccc 0 1 0 all ",
      "add  cccccccccccccccccccccccccccccccc 0 1 0 all zk://x",
      "add cccccccccccccccccccccccccccccccc 0 1 99999999999999999999 all z",
  };
  size_t i;
  (void)state;
  r.floor_ms = 42;
  assert_int_equal(frond__coord_rec_format(&r, buf, sizeof buf), 0);
  assert_int_equal(frond__coord_rec_parse(buf, &back), 0);
  assert_string_equal(back.id, r.id);
  assert_int_equal(back.lo, 3);
  assert_int_equal(back.hi, 7);
  assert_int_equal(back.floor_ms, 42);
  assert_string_equal(back.scope, "nodes=3-7");
  assert_string_equal(back.uri, "zk://c:2181/x");
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (frond__coord_rec_parse(bad[i], &back) == 0)
      fail_msg("'%s' was read", bad[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_records_later_agree),
      cmocka_unit_test(test_regions),
      cmocka_unit_test(test_race_read_then_write),
      cmocka_unit_test(test_race_disjoint),
      cmocka_unit_test(test_race_threads),
      cmocka_unit_test(test_change),
      cmocka_unit_test(test_void_entry),
      cmocka_unit_test(test_parse),
  };
  return frond_run_tests(tests, NULL, NULL);
}
