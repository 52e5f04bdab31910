/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_fact_race.c -- the check of a keyed format's key read by
** threads that issue while another thread checks again. What an issue
** reads is one check's outcome whole: never the state of one check with
** the tag of another, so that no number is issued for a tag whose key was
** refused or never checked. Under ThreadSanitizer the reads and the
** republishing must not race at all.
**
** Each test is bounded in count and in time: the checking thread waits
** for the issuing one to issue again (not a sleep) between two checks.
*/
#include "format_testutil.h"

#include "core/core.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

/* Rounds of checks, and the time they may take at most. */
#define ROUNDS 400
#define LIMIT_NS INT64_C(20000000000)

/* The issuing thread: issues from src until told to stop, counting its
** calls, and remembers the first answer outside ok_a and ok_b (bad_rc,
** -1 for none, stored after bad and why). */
typedef struct issuer {
  frond_format *f;
  frond_format_source src;
  int ok_a, ok_b;
  atomic_int stop, bad_rc;
  atomic_long calls;
  char bad[64], why[512];
} issuer;

static void *issue(void *arg) {
  issuer *t = arg;
  char buf[64];
  while (!atomic_load(&t->stop)) {
    frond_error err = {0, ""};
    int rc = frond_format_next(t->f, &t->src, buf, sizeof(buf), &err);
    if (rc != t->ok_a && rc != t->ok_b && atomic_load(&t->bad_rc) == -1) {
      snprintf(t->bad, sizeof(t->bad), "%s", rc == 0 ? buf : "");
      snprintf(t->why, sizeof(t->why), "%s", err.message);
      atomic_store(&t->bad_rc, rc);
    }
    atomic_fetch_add(&t->calls, 1);
  }
  return NULL;
}

/* Let the issuing thread make one more call; false past the deadline. */
static int one_more_call(issuer *t, int64_t deadline) {
  long seen = atomic_load(&t->calls);
  while (atomic_load(&t->calls) == seen) {
    if (frond__mono_ns() > deadline)
      return 0;
    sched_yield();
  }
  return 1;
}

/* Stop the issuing thread, then fail on its first wrong answer (issued:
** what a number it issued means), or when round i fell short of ROUNDS
** (err: the check that failed, or none: out of time). */
static void stop_and_judge(issuer *t, pthread_t th, int i,
                           const frond_error *err, const char *issued) {
  atomic_store(&t->stop, 1);
  pthread_join(th, NULL);
  if (t->bad_rc == 0)
    fail_msg("round %d: issued %s %s", i, t->bad, issued);
  if (t->bad_rc != -1)
    fail_msg("round %d: %s: %s", i, frond_err_name(t->bad_rc), t->why);
  if (i < ROUNDS)
    fail_msg("round %d of %d: %s", i, ROUNDS,
             err->code ? err->message : "out of time");
}

/* Another process recorded its key for src's numbers first. */
static void recorded_by_another(const frond_format_source *src) {
  frond_format *other = keyed("order:digits=19,key=1", "1:" KEY1);
  frond_error err = {0, ""};
  assert_int_equal(frond_format_check(other, src, NULL, NULL, &err), 0);
  frond_format_free(other);
}

/* An SQLite store with the tags names[0..n), 100000 IDs a segment. */
static frond_seg *store_with(const char *dir, const char *const *names, int n) {
  char uri[600];
  frond_store *st;
  frond_seg *s;
  frond_error err = {0, ""};
  snprintf(uri, sizeof(uri), "sqlite://%s/ids.db", dir);
  assert_int_equal(frond_store_open(&st, uri, &err), 0);
  for (int i = 0; i < n; i++)
    assert_int_equal(
        frond_store_tag_create(st, names[i], 100000, 1, NULL, &err), 0);
  frond_store_close(st);
  if (frond_seg_open(&s, uri, NULL, &err) != 0)
    fail_msg("seg: %s", err.message);
  return s;
}

/* As the server's periodic check does: the record of snowflake IDs'
** numbers in the store is checked again and again (it agrees each time)
** while a thread issues. Every issue works, and under ThreadSanitizer
** nothing races. */
static void test_recheck_while_issuing(void **state) {
  char *dir = tmpdir_make();
  frond_gen *g = format_gen(1);
  frond_seg *s = store_with(dir, NULL, 0);
  issuer t = {.ok_a = 0, .ok_b = 0, .bad_rc = -1};
  frond_error err = {0, ""};
  int64_t deadline = frond__mono_ns() + LIMIT_NS;
  pthread_t th;
  int i;
  (void)state;
  t.f = keyed("order:digits=19,key=1", "1:" KEY0);
  t.src = (frond_format_source){g, s, NULL, 0};
  assert_int_equal(frond_format_check(t.f, &t.src, NULL, NULL, &err), 0);
  assert_int_equal(pthread_create(&th, NULL, issue, &t), 0);
  for (i = 0; i < ROUNDS && one_more_call(&t, deadline); i++)
    if (frond_format_check(t.f, &t.src, NULL, NULL, &err) != 0)
      break;
  stop_and_judge(&t, th, i, &err, "while agreed");
  frond_format_free(t.f);
  frond_seg_close(s);
  frond_gen_close(g, NULL);
  tmpdir_remove(dir);
}

/* One format (no tag=) checked for two tags, the IDs of each in the
** store: "a" agrees, "b" holds another process's key and is refused. A
** thread issuing for "b" while the checks alternate is refused every time
** (KEY_MISMATCH, or INVAL while "a" is the tag checked): never a number
** under the key that "b" refused. */
static void test_no_number_for_a_refused_tag(void **state) {
  static const char *const tags[] = {"a", "b"};
  char *dir = tmpdir_make();
  frond_seg *s = store_with(dir, tags, 2);
  frond_format_source a, b;
  issuer t = {.ok_a = FROND_EKEY_MISMATCH, .ok_b = FROND_EINVAL, .bad_rc = -1};
  frond_error err = {0, ""};
  int64_t deadline = frond__mono_ns() + LIMIT_NS;
  pthread_t th;
  int i;
  (void)state;
  a = (frond_format_source){NULL, s, "a", 0};
  b = (frond_format_source){NULL, s, "b", 0};
  recorded_by_another(&b);
  t.f = keyed("order:digits=19,key=1", "1:" KEY0);
  t.src = b;
  assert_int_equal(frond_format_check(t.f, &b, NULL, NULL, &err),
                   FROND_EKEY_MISMATCH);
  assert_int_equal(pthread_create(&th, NULL, issue, &t), 0);
  for (i = 0; i < ROUNDS && atomic_load(&t.bad_rc) == -1; i++) {
    err = (frond_error){0, ""};
    if (!one_more_call(&t, deadline) ||
        frond_format_check(t.f, &a, NULL, NULL, &err) != 0 ||
        !one_more_call(&t, deadline) ||
        frond_format_check(t.f, &b, NULL, NULL, &err) != FROND_EKEY_MISMATCH)
      break;
  }
  stop_and_judge(&t, th, i, &err, "for tag \"b\", whose key was refused");
  frond_format_free(t.f);
  frond_seg_close(s);
  tmpdir_remove(dir);
}

/* As a server whose key was refused sees the store come back: the check
** is reset (frond_format_recheck) and made again, refused again, while a
** thread issues. Every issue fails (KEY_MISMATCH, or INVAL between the
** reset and the check): never a number under the refused key. */
static void test_no_number_across_a_recheck(void **state) {
  char *dir = tmpdir_make();
  frond_gen *g = format_gen(1);
  frond_seg *s = store_with(dir, NULL, 0);
  issuer t = {.ok_a = FROND_EKEY_MISMATCH, .ok_b = FROND_EINVAL, .bad_rc = -1};
  frond_error err = {0, ""};
  int64_t deadline = frond__mono_ns() + LIMIT_NS;
  pthread_t th;
  int i;
  (void)state;
  t.src = (frond_format_source){g, s, NULL, 0};
  recorded_by_another(&t.src);
  t.f = keyed("order:digits=19,key=1", "1:" KEY0);
  assert_int_equal(frond_format_check(t.f, &t.src, NULL, NULL, &err),
                   FROND_EKEY_MISMATCH);
  assert_int_equal(pthread_create(&th, NULL, issue, &t), 0);
  for (i = 0; i < ROUNDS && atomic_load(&t.bad_rc) == -1; i++) {
    err = (frond_error){0, ""};
    if (!one_more_call(&t, deadline))
      break;
    frond_format_recheck(t.f);
    if (!one_more_call(&t, deadline) ||
        frond_format_check(t.f, &t.src, NULL, NULL, &err) !=
            FROND_EKEY_MISMATCH)
      break;
  }
  stop_and_judge(&t, th, i, &err, "under a refused key");
  frond_format_free(t.f);
  frond_seg_close(s);
  frond_gen_close(g, NULL);
  tmpdir_remove(dir);
}

/* One format checked for tags in turn, prefixes of one another across
** the fact's 8-byte words (7, 8, 9, 16 and 128 characters): after each
** check it issues for that tag alone, INVAL for every other, cycle after
** cycle (the outcome is written over in place: nothing is kept per tag). */
static void test_tags_in_turn(void **state) {
  static char names[5][FROND_TAG_MAX + 1];
  static const size_t len[5] = {7, 8, 9, 16, FROND_TAG_MAX};
  const char *tags[5];
  char *dir = tmpdir_make(), buf[64];
  frond_seg *s;
  frond_format *f;
  frond_error err = {0, ""};
  (void)state;
  for (int i = 0; i < 5; i++) {
    memset(names[i], 'a', len[i]);
    names[i][len[i]] = '\0';
    tags[i] = names[i];
  }
  s = store_with(dir, tags, 5);
  f = keyed("order:digits=19,key=1", "1:" KEY0);
  for (int cycle = 0; cycle < 20; cycle++)
    for (int i = 0; i < 5; i++) {
      frond_format_source src = {NULL, s, tags[i], 0};
      assert_int_equal(frond_format_check(f, &src, NULL, NULL, &err), 0);
      for (int j = 0; j < 5; j++) {
        frond_format_source other = {NULL, s, tags[j], 0};
        int rc = frond_format_next(f, &other, buf, sizeof(buf), &err);
        if (rc != (i == j ? 0 : FROND_EINVAL))
          fail_msg("checked for %zu characters, issued for %zu: %s", len[i],
                   len[j], rc == 0 ? buf : frond_err_name(rc));
      }
    }
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(dir);
}

/* A check called without an error struct that refuses: the issues after
** it fail with the refusal's code and a message, never an empty one. */
static void test_refusal_says_why(void **state) {
  char *dir = tmpdir_make(), buf[64];
  frond_gen *g = format_gen(1);
  frond_seg *s = store_with(dir, NULL, 0);
  frond_format_source src = {g, s, NULL, 0};
  frond_format *f;
  frond_error err = {0, ""};
  (void)state;
  recorded_by_another(&src);
  f = keyed("order:digits=19,key=1", "1:" KEY0);
  assert_int_equal(frond_format_check(f, &src, NULL, NULL, NULL),
                   FROND_EKEY_MISMATCH);
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                   FROND_EKEY_MISMATCH);
  assert_int_equal(err.code, FROND_EKEY_MISMATCH);
  assert_true(err.message[0] != '\0');
  frond_format_free(f);
  frond_seg_close(s);
  frond_gen_close(g, NULL);
  tmpdir_remove(dir);
}

/* A reset (a store reconnect) while a check reads the record: what the
** check read may be the store's from before, so it reads again. Here the
** store before held this key and the one after holds another: the check
** refuses, and nothing is issued. A reset on every read: the check fails
** (STORE) and the format stays unchecked. */
typedef struct reset_ctx {
  frond_format *f;
  int calls, every;
} reset_ctx;

static int reset_mid_read(void *ctx, const char *name, const char *value,
                          char *recorded, size_t len, char *where, size_t wlen,
                          frond_error *err) {
  reset_ctx *c = ctx;
  (void)name;
  (void)err;
  snprintf(where, wlen, "the test's record");
  if (c->calls++ == 0 || c->every) { /* the store before: this key */
    snprintf(recorded, len, "%s", value);
    frond_format_recheck(c->f);
  } else { /* the store after: another process's */
    snprintf(recorded, len, "%s", "0123456789abcdef");
  }
  return 0;
}

static void test_reset_while_checking(void **state) {
  frond_gen *g = format_gen(1);
  frond_format_source src = {g, NULL, NULL, 0};
  reset_ctx c = {NULL, 0, 0};
  frond_error err = {0, ""};
  char buf[64];
  (void)state;
  c.f = keyed("order:digits=19,key=1", "1:" KEY0);
  assert_int_equal(frond__format_check_with(c.f, "", reset_mid_read, &c, &err),
                   FROND_EKEY_MISMATCH);
  assert_int_equal(c.calls, 2);
  assert_int_equal(frond_format_next(c.f, &src, buf, sizeof(buf), &err),
                   FROND_EKEY_MISMATCH);
  c.every = 1;
  c.calls = 0;
  assert_int_equal(frond__format_check_with(c.f, "", reset_mid_read, &c, &err),
                   FROND_ESTORE);
  assert_int_equal(c.calls, 3);
  assert_int_equal(frond_format_next(c.f, &src, buf, sizeof(buf), &err),
                   FROND_EINVAL);
  frond_format_free(c.f);
  frond_gen_close(g, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_recheck_while_issuing),
      cmocka_unit_test(test_no_number_for_a_refused_tag),
      cmocka_unit_test(test_no_number_across_a_recheck),
      cmocka_unit_test(test_tags_in_turn),
      cmocka_unit_test(test_refusal_says_why),
      cmocka_unit_test(test_reset_while_checking),
  };
  return frond_run_tests(tests, NULL, NULL);
}
