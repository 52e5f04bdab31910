/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_segment.c -- the segment allocator against a fake store that stalls
** and fails on demand, with a fake clock for the dynamic step.
*/
#include "core/seg.h"
#include "base/fork.h"
#include "fake_store.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_preload_point_and_switch(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  frond_tag_info r;
  int64_t i;
  fake_reset();
  fake_add("a", 1, 100);
  s = fake_seg_open(&o);
  for (i = 1; i <= 10; i++)
    assert_int_equal(next_id(s, "a"), i);
  frond__sleep_ns(50000000);
  /* 10 % used exactly: no preload yet. */
  assert_int_equal(fake_allocs(), 1);
  r = fake_tag_info(s, "a");
  assert_int_equal(r.current.start, 1);
  assert_int_equal(r.current.end, 101);
  assert_false(r.next.ready);
  /* The 11th ID crosses 10 %: the next segment is loaded. */
  assert_int_equal(next_id(s, "a"), 11);
  r = fake_wait_next_ready(s, "a");
  assert_int_equal(fake_allocs(), 2);
  /* Loaded at once after the first: the step doubled. */
  assert_int_equal(r.next.start, 101);
  assert_int_equal(r.next.end, 301);
  for (i = 12; i <= 100; i++)
    assert_int_equal(next_id(s, "a"), i);
  /* The switch: no store call on the way. */
  assert_int_equal(next_id(s, "a"), 101);
  r = fake_tag_info(s, "a");
  assert_int_equal(r.current.start, 101);
  assert_int_equal(r.current.step, 200);
  assert_int_equal(r.issued, 101);
  frond_seg_close(s);
}

/* Use the current segment up to its preload point, at fake time `at`,
** and return the next segment's step once loaded. */
static int64_t step_after(frond_seg *s, int64_t advance_ms) {
  frond_tag_info r = fake_tag_info(s, "a");
  int64_t k, used = r.current.pos - r.current.start;
  int64_t need = (r.current.end - r.current.start) / 10 + 1;
  atomic_fetch_add(&fake_now, advance_ms);
  /* Finish this segment, switch, and cross the new one's preload point. */
  if (r.next.ready) {
    for (k = r.current.pos; k < r.current.end; k++)
      next_id(s, "a");
    r = fake_tag_info(s, "a");
    used = 0;
    need = (r.next.end - r.next.start) / 10 + 1;
  }
  for (k = used; k < need; k++)
    next_id(s, "a");
  return fake_wait_next_ready(s, "a").next.step;
}

static void test_dynamic_step(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  fake_reset();
  fake_add("a", 1, 100);
  o.max_step = 700;
  s = fake_seg_open(&o);
  next_id(s, "a"); /* first load: the row's step */
  assert_int_equal(fake_tag_info(s, "a").current.step, 100);
  assert_int_equal(step_after(s, 60 * 1000), 200);      /* 1 min: double */
  assert_int_equal(step_after(s, 14 * 60 * 1000), 400); /* < 15 min */
  assert_int_equal(step_after(s, 20 * 60 * 1000), 400); /* 15..30: keep */
  assert_int_equal(step_after(s, 60 * 1000), 700);      /* capped */
  assert_int_equal(step_after(s, 60 * 1000), 700);
  assert_int_equal(step_after(s, 31 * 60 * 1000), 350); /* > 30: halve */
  assert_int_equal(step_after(s, 45 * 60 * 1000), 175);
  assert_int_equal(step_after(s, 45 * 60 * 1000), 100); /* row's floor */
  assert_int_equal(step_after(s, 45 * 60 * 1000), 100);
  frond_seg_close(s);
}

static void test_both_empty_then_unavailable(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg_stats st;
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t i, id = 0, t0, waited;
  fake_reset();
  fake_add("a", 1, 100);
  s = fake_seg_open(&o);
  next_id(s, "a");
  fake_set(&fake.hold, 1); /* the preload hangs in the store */
  for (i = 2; i <= 100; i++)
    assert_int_equal(next_id(s, "a"), i);
  t0 = frond__mono_ns();
  assert_int_equal(frond_seg_next(s, T("a"), &id, &e),
                   FROND_ESEGMENT_UNAVAILABLE);
  waited = (frond__mono_ns() - t0) / 1000000;
  assert_true(waited >= 95 && waited < 1000);
  assert_int_equal(e.code, FROND_ESEGMENT_UNAVAILABLE);
  frond_seg_stats_get(s, &st);
  assert_int_equal(st.unavailable, 1);
  fake_set(&fake.hold, 0);
  /* The tag resumes by itself, above everything issued. */
  assert_int_equal(next_id(s, "a"), 101);
  frond_seg_close(s);
}

/* A range the store refuses (larger than it takes at once) is given up
** by the call that asked for it, and only by it: later loads go back to
** the tag's step instead of asking that size again and again. */
static void test_refused_range_not_asked_again(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg_tag *t;
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t i, start = 0, id = 0;
  (void)state;
  fake_reset();
  fake_add("a", 1, 10);
  o.max_step = 40; /* the dynamic step stays within what the store takes */
  s = fake_seg_open(&o);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &t, &e), 0);
  assert_int_equal(frond_seg_tag_next(t, &id, &e), 0);
  pthread_mutex_lock(&fake.mu);
  fake.refuse_above = 100;
  pthread_mutex_unlock(&fake.mu);
  assert_int_equal(frond_seg_tag_range(t, 1000, &start, &e),
                   FROND_ECOUNT_INVALID);
  for (i = 0; i < 300; i++)
    if (frond_seg_tag_next(t, &id, &e) != 0)
      fail_msg("next after the refused range, ID %lld: %s: %s", (long long)i,
               frond_err_name(e.code), e.message);
  pthread_mutex_lock(&fake.mu);
  fake.refuse_above = 0;
  pthread_mutex_unlock(&fake.mu);
  frond_seg_close(s);
}

/* A store that is not answering now (STORE_TIMEOUT, or SEGMENT_UNAVAILABLE
** passed on from a server's 503) is retried while calls wait, as STORE is,
** not told to them at once as a refusal. */
static void *heal_later(void *arg) {
  (void)arg;
  frond__sleep_ns(300000000);
  pthread_mutex_lock(&fake.mu);
  fake.fail = 0;
  pthread_mutex_unlock(&fake.mu);
  return NULL;
}

static void test_not_answering_is_waited_for(void **state) {
  static const int codes[] = {FROND_ESTORE_TIMEOUT, FROND_ESEGMENT_UNAVAILABLE};
  (void)state;
  for (size_t k = 0; k < FROND__ARRAY_SIZE(codes); k++) {
    frond_seg_options o = fake_seg_options();
    frond_seg *s;
    frond_error e = {0, ""};
    pthread_t th;
    int64_t id = 0;
    int rc;
    fake_reset();
    fake_add("a", 1, 10);
    o.wait_ms = 10000;
    s = fake_seg_open(&o);
    pthread_mutex_lock(&fake.mu);
    fake.fail = codes[k]; /* negative: allocations fail with it */
    pthread_mutex_unlock(&fake.mu);
    assert_int_equal(pthread_create(&th, NULL, heal_later, NULL), 0);
    rc = frond_seg_next(s, T("a"), &id, &e);
    pthread_join(th, NULL);
    if (rc != 0)
      fail_msg("%s: the call gave up: %s: %s", frond_err_name(codes[k]),
               frond_err_name(rc), e.message);
    assert_int_equal(id, 1);
    frond_seg_close(s);
  }
}

static void test_store_failure_and_recovery(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg_stats st;
  frond_seg *s;
  int64_t i, id = 0, deadline;
  int rc;
  fake_reset();
  fake_add("a", 1, 100);
  s = fake_seg_open(&o);
  next_id(s, "a");
  fake_set(&fake.fail, 1);
  /* Buffers keep serving while the store is down. */
  for (i = 2; i <= 100; i++)
    assert_int_equal(next_id(s, "a"), i);
  assert_int_equal(frond_seg_next(s, T("a"), &id, NULL),
                   FROND_ESEGMENT_UNAVAILABLE);
  frond_seg_stats_get(s, &st);
  assert_true(st.load_failures >= 1);
  assert_int_equal(st.store_ok, 0);
  pthread_mutex_lock(&fake_log_mu);
  assert_non_null(strstr(fake_last_log, "fake store is down"));
  pthread_mutex_unlock(&fake_log_mu);
  /* Recovery without a restart, by the loader's retries alone. */
  fake_set(&fake.fail, 0);
  deadline = frond__mono_ns() + 2000000000;
  while ((rc = frond_seg_next(s, T("a"), &id, NULL)) != 0 &&
         frond__mono_ns() < deadline)
    ;
  if (rc != 0)
    fail_msg("no recovery: %s; last log: %s", frond_err_name(rc),
             fake_last_log);
  assert_int_equal(id, 101);
  frond_seg_stats_get(s, &st);
  assert_int_equal(st.store_ok, 1);
  frond_seg_close(s);
}

static int has_tag(frond_seg *s, const char *tag) {
  return fake_tag_info(s, tag).tag[0] != '\0';
}

static void test_tag_refresh(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  frond_tag_info *v;
  size_t n;
  int64_t id, deadline;
  fake_reset();
  fake_add("a", 1, 100);
  o.refresh_ms = 30;
  s = fake_seg_open(&o);
  next_id(s, "a");
  fake_add("b", 1000, 10);
  deadline = frond__mono_ns() + 2000000000;
  while (!has_tag(s, "b") && frond__mono_ns() < deadline)
    frond__sleep_ns(5000000);
  assert_true(has_tag(s, "b"));
  fake_delete("a");
  while (has_tag(s, "a") && frond__mono_ns() < deadline)
    frond__sleep_ns(5000000);
  assert_false(has_tag(s, "a"));
  assert_int_equal(frond_seg_next(s, T("a"), &id, NULL), FROND_ETAG_NOT_FOUND);
  /* An empty table is a real state: no tags. */
  fake_delete("b");
  while (has_tag(s, "b") && frond__mono_ns() < deadline)
    frond__sleep_ns(5000000);
  assert_int_equal(frond_seg_tags(s, &v, &n, NULL), 0); /* the 0.1 name */
  assert_int_equal(n, 0);
  frond_free(v);
  frond_seg_close(s);
}

static void test_new_tag_without_refresh(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  int64_t id;
  frond_error e = {0, ""};
  fake_reset();
  s = fake_seg_open(&o); /* refresh_ms is a minute */
  assert_int_equal(frond_seg_next(s, T("c"), &id, &e), FROND_ETAG_NOT_FOUND);
  assert_non_null(strstr(e.message, "\"c\""));
  fake_add("c", 42, 10);
  assert_int_equal(next_id(s, "c"), 42);
  frond_seg_close(s);
}

static void test_unknown_tags_rate_limited(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  frond_error e;
  int64_t id;
  int i, limited = 0;
  fake_reset();
  o.miss_checks = 2;
  s = fake_seg_open(&o);
  for (i = 0; i < 6; i++) {
    memset(&e, 0, sizeof(e));
    assert_int_equal(frond_seg_next(s, T("nope"), &id, &e),
                     FROND_ETAG_NOT_FOUND);
    limited += strstr(e.message, "as of the last refresh") != NULL;
  }
  /* At most 2 look-ups per second: even across a second boundary, at
  ** least 2 of the 6 were answered without asking the store. */
  assert_true(limited >= 2);
  frond_seg_close(s);
}

static void test_deleted_then_recreated(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  int64_t deadline;
  fake_reset();
  fake_add("a", 1, 100);
  o.refresh_ms = 20;
  s = fake_seg_open(&o);
  assert_int_equal(next_id(s, "a"), 1);
  fake_delete("a");
  deadline = frond__mono_ns() + 2000000000;
  while (has_tag(s, "a") && frond__mono_ns() < deadline)
    frond__sleep_ns(2000000);
  assert_false(has_tag(s, "a"));
  /* Created again: served at once from the new row, never from the
  ** buffers of the old one. */
  fake_add("a", 5000, 10);
  assert_int_equal(next_id(s, "a"), 5000);
  assert_int_equal(next_id(s, "a"), 5001);
  frond_seg_close(s);
}

typedef struct waiter {
  frond_seg *s;
  int64_t id;
  int rc;
} waiter;

static void *wait_next(void *arg) {
  waiter *w = arg;
  w->rc = frond_seg_next(w->s, T("a"), &w->id, NULL);
  return NULL;
}

/* Deleted and created again while a load of the old row is in the store:
** that load's result is dropped, and a call that waits meanwhile is
** served from the new row when it ends. Before, nobody asked for a load
** and the call failed at its deadline. */
static void test_recreated_during_a_load(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  pthread_t th;
  waiter w;
  fake_reset();
  fake_add("a", 1, 10);
  o.wait_ms = 5000;
  s = fake_seg_open(&o);
  assert_int_equal(next_id(s, "a"), 1);
  fake_hold_tag("a"); /* the preload hangs in the store */
  assert_int_equal(next_id(s, "a"), 2);
  while (atomic_load(&s->busy) == 0) /* a loader is in the store */
    frond__sleep_ns(1000000);
  fake_delete("a");
  assert_int_equal(frond_seg_refresh_tag(s, T("a"), NULL),
                   FROND_ETAG_NOT_FOUND);
  fake_add("a", 5000, 10);
  assert_int_equal(frond_seg_refresh_tag(s, T("a"), NULL), 0);
  w.s = s;
  pthread_create(&th, NULL, wait_next, &w);
  frond__sleep_ns(100000000);
  fake_hold_tag(NULL); /* the old load ends */
  pthread_join(th, NULL);
  assert_int_equal(w.rc, 0);
  assert_true(w.id >= 5000);
  frond_seg_close(s);
}

/* The allocator the hook below re-creates "a" in. */
static frond_seg *recreate_in;

/* After the store's answer to a load of the deleted "a" and before the
** allocator sees it: "a" is created again, as a server's POST /v1/tags
** does (the row, then the allocator told). */
static void recreate_a(const char *tag, int rc) {
  if (strcmp(tag, "a") != 0 || rc != FROND_ETAG_NOT_FOUND)
    return;
  fake.after_alloc = NULL; /* once; the fake calls it without its lock */
  fake_add("a", 5000, 10);
  assert_int_equal(frond_seg_refresh_tag(recreate_in, T("a"), NULL), 0);
}

/* A load started before a delete fails with TAG_NOT_FOUND in the store
** (the row is gone), and its answer arrives once the tag was created
** again. That failure is the old tag's: the new one is served at once
** from its new row. Before, the failure was recorded against the new tag
** (its refusal and a backoff longer than a call waits), and the next call
** answered TAG_NOT_FOUND, "tag "a": tag "a" not found", every time; and
** the new tag's first segment was waited for only wait_ms, as the old
** tag's loads counted for it. */
static void test_recreated_after_a_failed_load(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_error e = {0, ""};
  frond_seg *s;
  seg_tag *t;
  int64_t id = 0;
  int busy, rc;
  fake_reset();
  fake_add("a", 1, 10);
  o.wait_ms = 50;         /* the server's default */
  o.first_wait_ms = 1000; /* a first segment is waited for longer */
  o.retry_min_ms = 3000;  /* a retry after a failure comes later still */
  o.retry_max_ms = 3000;
  s = fake_seg_open(&o);
  recreate_in = s;
  assert_int_equal(next_id(s, "a"), 1);
  t = atomic_load(&frond__seg_find(s, T("a"))->tag);
  fake_hold_tag("a"); /* the preload waits at the store */
  assert_int_equal(next_id(s, "a"), 2);
  while (atomic_load(&s->busy) == 0)
    frond__sleep_ns(1000000);
  fake_delete("a");
  assert_int_equal(frond_seg_refresh_tag(s, T("a"), NULL),
                   FROND_ETAG_NOT_FOUND);
  pthread_mutex_lock(&fake.mu);
  fake.after_alloc = recreate_a;
  pthread_mutex_unlock(&fake.mu);
  fake_hold_tag(NULL); /* the old load finds no row */
  do {                 /* and its answer is seen */
    frond__sleep_ns(1000000);
    pthread_mutex_lock(&t->mu);
    busy = t->loading;
    pthread_mutex_unlock(&t->mu);
  } while (busy);
  /* The new tag's first segment takes longer than wait_ms: it is waited
  ** for as a first, which it is. */
  pthread_mutex_lock(&fake.mu);
  fake.stall_ns = 100000000;
  pthread_mutex_unlock(&fake.mu);
  rc = frond_seg_next(s, T("a"), &id, &e);
  if (rc != 0)
    fail_msg("next after the create: %s: %s", frond_err_name(rc), e.message);
  assert_true(id >= 5000);
  frond_seg_close(s);
}

/* A refusal names its tag once: the store's message already says which. */
static void test_refusal_names_the_tag_once(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t id;
  fake_reset();
  fake_add("a", 1, 10);
  fake_add("b", 1, 10);
  o.wait_ms = 2000;
  s = fake_seg_open(&o);
  assert_int_equal(next_id(s, "a"), 1);
  fake_delete("a"); /* gone from the store, not yet from memory */
  for (id = 2; id <= 10; id++)
    assert_int_equal(next_id(s, "a"), id);
  assert_int_equal(frond_seg_next(s, T("a"), &id, &e), FROND_ETAG_NOT_FOUND);
  assert_string_equal(e.message, "tag \"a\" not found");
  fake_set(&fake.fail, FROND_ESTORE_MEMBER); /* a message without the tag */
  assert_int_equal(frond_seg_next(s, T("b"), &id, &e), FROND_ESTORE_MEMBER);
  assert_string_equal(e.message, "tag \"b\": fake store refuses");
  frond_seg_close(s);
}

static void test_bad_tag_names(void **state) {
  static const char *const bad[] = {"",         "a\x01",        "\x7f",
                                    "a\xff",    "\xc0\xaf",     "\xed\xa0\x80",
                                    "\xe2\x82", "\xc2\x85 nel", "tab\there"};
  char longname[FROND_TAG_MAX + 2];
  frond_seg_options o = fake_seg_options();
  frond_error e;
  frond_seg *s;
  int64_t id;
  size_t i;
  fake_reset();
  s = fake_seg_open(&o);
  for (i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    memset(&e, 0, sizeof(e));
    assert_int_equal(frond_tag_validate(bad[i], strlen(bad[i]), &e),
                     FROND_ETAG_INVALID);
    assert_true(e.message[0] != '\0');
    assert_int_equal(frond_seg_next(s, bad[i], strlen(bad[i]), &id, NULL),
                     FROND_ETAG_INVALID);
  }
  memset(longname, 'x', sizeof(longname));
  assert_int_equal(frond_tag_validate(longname, FROND_TAG_MAX, NULL), 0);
  assert_int_equal(frond_tag_validate(longname, FROND_TAG_MAX + 1, &e),
                   FROND_ETAG_INVALID);
  assert_non_null(strstr(e.message, "129"));
  assert_int_equal(frond_tag_validate(T("订单-2024"), NULL), 0);
  assert_int_equal(frond_seg_next(s, T("订单"), &id, NULL),
                   FROND_ETAG_NOT_FOUND);
  frond_seg_close(s);
}

static void test_next_n_spans_segments(void **state) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  int64_t out[150], i;
  static int64_t big[100000];
  fake_reset();
  fake_add("a", 1, 100);
  o.max_step = 1000;
  s = fake_seg_open(&o);
  assert_int_equal(frond_seg_next_n(s, T("a"), 20, out, NULL), 0);
  fake_wait_next_ready(s, "a");
  assert_int_equal(frond_seg_next_n(s, T("a"), 150, out, NULL), 0);
  for (i = 0; i < 150; i++)
    assert_int_equal(out[i], 21 + i);
  /* More than both buffers hold: the batch goes through as many
  ** segments as it needs. */
  assert_int_equal(frond_seg_next_n(s, T("a"), 100000, big, NULL), 0);
  assert_int_equal(big[0], 171);
  for (i = 1; i < 100000; i++)
    assert_true(big[i] > big[i - 1]);
  assert_true(next_id(s, "a") > big[99999]);
  /* A store that stops in the middle of a batch: it fails, and the IDs
  ** it took are never handed out. */
  fake_set(&fake.fail, 1);
  assert_int_equal(frond_seg_next_n(s, T("a"), 100000, big, NULL),
                   FROND_ESEGMENT_UNAVAILABLE);
  fake_set(&fake.fail, 0);
  assert_int_equal(frond_seg_next_n(s, T("a"), 0, out, NULL),
                   FROND_ECOUNT_INVALID);
  frond_seg_close(s);
}

static void test_open_errors(void **state) {
  frond_seg *s = NULL;
  frond_error e = {0, ""};
  assert_int_equal(frond_seg_open(&s, "mysqlx://x/y", NULL, &e),
                   FROND_ESTORE_URI);
  assert_non_null(strstr(e.message, "mysqlx://x/y"));
  assert_null(s);
  fake_install();
  fake_reset();
  fake.fail = 1;
  assert_int_equal(frond_seg_open(&s, "fake:", NULL, &e), FROND_ESTORE);
  assert_non_null(strstr(e.message, "fake store is down"));
  fake.fail = 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_preload_point_and_switch),
      cmocka_unit_test(test_dynamic_step),
      cmocka_unit_test(test_both_empty_then_unavailable),
      cmocka_unit_test(test_store_failure_and_recovery),
      cmocka_unit_test(test_tag_refresh),
      cmocka_unit_test(test_refused_range_not_asked_again),
      cmocka_unit_test(test_not_answering_is_waited_for),
      cmocka_unit_test(test_new_tag_without_refresh),
      cmocka_unit_test(test_unknown_tags_rate_limited),
      cmocka_unit_test(test_deleted_then_recreated),
      cmocka_unit_test(test_recreated_after_a_failed_load),
      cmocka_unit_test(test_refusal_names_the_tag_once),
      cmocka_unit_test(test_recreated_during_a_load),
      cmocka_unit_test(test_bad_tag_names),
      cmocka_unit_test(test_next_n_spans_segments),
      cmocka_unit_test(test_open_errors),
  };
  return frond_run_tests(tests, NULL, NULL);
}
