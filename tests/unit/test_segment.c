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

static frond_seg_options opts(void) {
  frond_seg_options o;
  frond_seg_options_init(&o);
  o.clock = fake_now_read;
  o.wait_ms = 100;
  o.retry_min_ms = 10;
  o.retry_max_ms = 50;
  return o;
}

static frond_seg *open_seg(const frond_seg_options *o) {
  frond_seg *s = NULL;
  frond_error e = {0, ""};
  fake_install();
  frond_log_set(fake_log, NULL, FROND_LOG_DEBUG);
  if (frond_seg_open(&s, "fake:", o, &e) != 0)
    fail_msg("open: %s", e.message);
  return s;
}

static frond_tag_info info(frond_seg *s, const char *tag) {
  frond_tag_info *v, r;
  size_t n, i;
  memset(&r, 0, sizeof(r));
  assert_int_equal(frond_seg_tag_list(s, &v, &n, NULL), 0);
  for (i = 0; i < n; i++)
    if (strcmp(v[i].tag, tag) == 0)
      r = v[i];
  frond_free(v);
  return r;
}

/* Wait (bounded) until the tag's next buffer is ready. */
static frond_tag_info wait_next_ready(frond_seg *s, const char *tag) {
  int64_t deadline = frond__mono_ns() + 3000000000;
  frond_tag_info r;
  do {
    r = info(s, tag);
    if (r.next.ready)
      return r;
    frond__sleep_ns(1000000);
  } while (frond__mono_ns() < deadline);
  fail_msg("next buffer of %s never became ready", tag);
  return r;
}

static void test_preload_point_and_switch(void **state) {
  frond_seg_options o = opts();
  frond_seg *s;
  frond_tag_info r;
  int64_t i;
  fake_reset();
  fake_add("a", 1, 100);
  s = open_seg(&o);
  for (i = 1; i <= 10; i++)
    assert_int_equal(next_id(s, "a"), i);
  frond__sleep_ns(50000000);
  /* 10 % used exactly: no preload yet. */
  assert_int_equal(fake_allocs(), 1);
  r = info(s, "a");
  assert_int_equal(r.current.start, 1);
  assert_int_equal(r.current.end, 101);
  assert_false(r.next.ready);
  /* The 11th ID crosses 10 %: the next segment is loaded. */
  assert_int_equal(next_id(s, "a"), 11);
  r = wait_next_ready(s, "a");
  assert_int_equal(fake_allocs(), 2);
  /* Loaded at once after the first: the step doubled. */
  assert_int_equal(r.next.start, 101);
  assert_int_equal(r.next.end, 301);
  for (i = 12; i <= 100; i++)
    assert_int_equal(next_id(s, "a"), i);
  /* The switch: no store call on the way. */
  assert_int_equal(next_id(s, "a"), 101);
  r = info(s, "a");
  assert_int_equal(r.current.start, 101);
  assert_int_equal(r.current.step, 200);
  assert_int_equal(r.issued, 101);
  frond_seg_close(s);
}

/* Use the current segment up to its preload point, at fake time `at`,
** and return the next segment's step once loaded. */
static int64_t step_after(frond_seg *s, int64_t advance_ms) {
  frond_tag_info r = info(s, "a");
  int64_t k, used = r.current.pos - r.current.start;
  int64_t need = (r.current.end - r.current.start) / 10 + 1;
  atomic_fetch_add(&fake_now, advance_ms);
  /* Finish this segment, switch, and cross the new one's preload point. */
  if (r.next.ready) {
    for (k = r.current.pos; k < r.current.end; k++)
      next_id(s, "a");
    r = info(s, "a");
    used = 0;
    need = (r.next.end - r.next.start) / 10 + 1;
  }
  for (k = used; k < need; k++)
    next_id(s, "a");
  return wait_next_ready(s, "a").next.step;
}

static void test_dynamic_step(void **state) {
  frond_seg_options o = opts();
  frond_seg *s;
  fake_reset();
  fake_add("a", 1, 100);
  o.max_step = 700;
  s = open_seg(&o);
  next_id(s, "a"); /* first load: the row's step */
  assert_int_equal(info(s, "a").current.step, 100);
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
  frond_seg_options o = opts();
  frond_seg_stats st;
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t i, id = 0, t0, waited;
  fake_reset();
  fake_add("a", 1, 100);
  s = open_seg(&o);
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
  frond_seg_options o = opts();
  frond_seg_tag *t;
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t i, start = 0, id = 0;
  (void)state;
  fake_reset();
  fake_add("a", 1, 10);
  o.max_step = 40; /* the dynamic step stays within what the store takes */
  s = open_seg(&o);
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
    frond_seg_options o = opts();
    frond_seg *s;
    frond_error e = {0, ""};
    pthread_t th;
    int64_t id = 0;
    int rc;
    fake_reset();
    fake_add("a", 1, 10);
    o.wait_ms = 10000;
    s = open_seg(&o);
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
  frond_seg_options o = opts();
  frond_seg_stats st;
  frond_seg *s;
  int64_t i, id = 0, deadline;
  int rc;
  fake_reset();
  fake_add("a", 1, 100);
  s = open_seg(&o);
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
  return info(s, tag).tag[0] != '\0';
}

static void test_tag_refresh(void **state) {
  frond_seg_options o = opts();
  frond_seg *s;
  frond_tag_info *v;
  size_t n;
  int64_t id, deadline;
  fake_reset();
  fake_add("a", 1, 100);
  o.refresh_ms = 30;
  s = open_seg(&o);
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
  frond_seg_options o = opts();
  frond_seg *s;
  int64_t id;
  frond_error e = {0, ""};
  fake_reset();
  s = open_seg(&o); /* refresh_ms is a minute */
  assert_int_equal(frond_seg_next(s, T("c"), &id, &e), FROND_ETAG_NOT_FOUND);
  assert_non_null(strstr(e.message, "\"c\""));
  fake_add("c", 42, 10);
  assert_int_equal(next_id(s, "c"), 42);
  frond_seg_close(s);
}

static void test_unknown_tags_rate_limited(void **state) {
  frond_seg_options o = opts();
  frond_seg *s;
  frond_error e;
  int64_t id;
  int i, limited = 0;
  fake_reset();
  o.miss_checks = 2;
  s = open_seg(&o);
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
  frond_seg_options o = opts();
  frond_seg *s;
  int64_t deadline;
  fake_reset();
  fake_add("a", 1, 100);
  o.refresh_ms = 20;
  s = open_seg(&o);
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
  frond_seg_options o = opts();
  frond_seg *s;
  pthread_t th;
  waiter w;
  fake_reset();
  fake_add("a", 1, 10);
  o.wait_ms = 5000;
  s = open_seg(&o);
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
  frond_seg_options o = opts();
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
  s = open_seg(&o);
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
  frond_seg_options o = opts();
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t id;
  fake_reset();
  fake_add("a", 1, 10);
  fake_add("b", 1, 10);
  o.wait_ms = 2000;
  s = open_seg(&o);
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
  frond_seg_options o = opts();
  frond_error e;
  frond_seg *s;
  int64_t id;
  size_t i;
  fake_reset();
  s = open_seg(&o);
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
  frond_seg_options o = opts();
  frond_seg *s;
  int64_t out[150], i;
  static int64_t big[100000];
  fake_reset();
  fake_add("a", 1, 100);
  o.max_step = 1000;
  s = open_seg(&o);
  assert_int_equal(frond_seg_next_n(s, T("a"), 20, out, NULL), 0);
  wait_next_ready(s, "a");
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

#define THREADS 4
#define PER_THREAD 200000

typedef struct worker {
  frond_seg *s;
  int64_t *ids;
  int failed;
  int batch; /* every 16th call asks next_n for this many */
} worker;

/* One ID by each way there is to ask for one, in turn: by name, inline
** on a handle, the handle's exported function, and the server's call
** that never waits (retried: it fails with WOULD_BLOCK instead of waiting). */
static int one_id(frond_seg *s, frond_seg_tag *h, int how, int64_t *id) {
  int rc;
  switch (how % 4) {
  case 0:
    return frond_seg_next(s, T("a"), id, NULL);
  case 1:
    return frond_seg_tag_next(h, id, NULL);
  case 2:
    return (frond_seg_tag_next)(h, id, NULL);
  default:
    while ((rc = frond__seg_tag_next_nowait(h, 1, id, NULL)) ==
           FROND_EWOULD_BLOCK)
      frond__sleep_ns(100000);
    return rc;
  }
}

static void *work(void *arg) {
  worker *w = arg;
  frond_seg_tag *h;
  int i = 0, n, rc;
  assert_int_equal(frond_seg_tag_get(w->s, T("a"), &h, NULL), 0);
  while (i < PER_THREAD) {
    n = w->batch > 0 && i % 16 == 15 ? w->batch : 1;
    if (n > PER_THREAD - i)
      n = PER_THREAD - i;
    rc = n > 1 ? frond_seg_next_n(w->s, T("a"), (size_t)n, &w->ids[i], NULL)
               : one_id(w->s, h, i / 7, &w->ids[i]);
    if (rc != 0)
      w->failed++;
    else
      i += n;
  }
  return NULL;
}

/* One thread, every way of asking in turn: no ID is skipped, whichever
** call takes the offset that asks for the next segment or finds a
** segment used up. The fake store's segments follow one another, so the
** IDs are 1, 2, 3, ... */
static void test_every_call_one_sequence(void **state) {
  frond_seg_options o = opts();
  frond_seg *s;
  frond_seg_tag *h;
  int64_t id, k;
  fake_reset();
  fake_add("a", 1, 10);
  o.max_step = 40;
  s = open_seg(&o);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, NULL), 0);
  for (k = 1; k <= 5000; k++) {
    assert_int_equal(one_id(s, h, (int)(k % 11), &id), 0);
    assert_int_equal(id, k);
  }
  frond_seg_close(s);
}

/* Several threads on one tag: every ID unique, each thread's increasing.
** Tiny segments force many switches and both-empty waits. */
static void run_threads(int64_t row_step, int64_t max_step, int64_t stall_ns,
                        int batch) {
  frond_seg_options o = opts();
  frond_seg *s;
  pthread_t th[THREADS];
  worker w[THREADS];
  int64_t *all = malloc(sizeof(int64_t) * THREADS * PER_THREAD);
  int i, k;
  fake_reset();
  fake_add("a", 1, row_step);
  o.max_step = max_step;
  o.wait_ms = 5000;
  s = open_seg(&o);
  fake.stall_ns = stall_ns;
  for (i = 0; i < THREADS; i++) {
    w[i].s = s;
    w[i].ids = all + (size_t)i * PER_THREAD;
    w[i].failed = 0;
    w[i].batch = batch;
    pthread_create(&th[i], NULL, work, &w[i]);
  }
  for (i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    /* Batches bigger than two tiny segments can fail; nothing else. */
    if (batch == 0)
      assert_int_equal(w[i].failed, 0);
    for (k = 1; k < PER_THREAD; k++)
      assert_true(w[i].ids[k] > w[i].ids[k - 1]);
  }
  qsort(all, (size_t)THREADS * PER_THREAD, sizeof(int64_t), cmp_i64);
  for (k = 1; k < THREADS * PER_THREAD; k++)
    assert_true(all[k] > all[k - 1]);
  free(all);
  frond_seg_close(s);
}

static void test_threads_unique_and_increasing(void **state) {
  run_threads(1000, 20000, 2000000, 0); /* loads take 2 ms */
}

static void test_threads_tiny_segments(void **state) {
  run_threads(7, 50, 0, 0);
  run_threads(5, 40, 0, 9);
}

/* A refusal of the store (a code other than STORE: STORE_MEMBER here) is
** what a call that finds both buffers empty gets, at once, not
** SEGMENT_UNAVAILABLE after wait_ms; retries go on, and the tag serves
** again when the store does. */
static void test_refusal_reaches_callers(void **state) {
  frond_seg_options o = opts();
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t i, id = 0, t0, waited;
  fake_reset();
  fake_add("a", 1, 100);
  o.wait_ms = 2000;
  o.max_step = 100; /* segments of 100: 200 IDs use both up */
  s = open_seg(&o);
  for (i = 1; i <= 20; i++) /* past the preload point */
    assert_int_equal(next_id(s, "a"), i);
  wait_next_ready(s, "a");
  fake_set(&fake.fail, FROND_ESTORE_MEMBER);
  for (; i <= 200; i++)
    assert_int_equal(next_id(s, "a"), i);
  t0 = frond__mono_ns();
  assert_int_equal(frond_seg_next(s, T("a"), &id, &e), FROND_ESTORE_MEMBER);
  waited = (frond__mono_ns() - t0) / 1000000;
  assert_true(waited < 1500);
  assert_non_null(strstr(e.message, "fake store refuses"));
  fake_set(&fake.fail, 0);
  for (i = 0; i < 100 && frond_seg_next(s, T("a"), &id, &e) != 0; i++)
    frond__sleep_ns(20000000);
  assert_true(id > 200);
  frond_seg_close(s);
}

/* After a fork, the child's copy refuses every call with FORKED, the
** inline call on a handle too; the parent goes on. Before, parent and
** child handed out the same IDs from their buffers (after _Fork() or the
** system call, until the tags moved to pages the kernel wipes there). */
static void fork_refused(int how) {
  frond_seg_options o = opts();
  frond_seg *s;
  frond_seg_tag *h;
  frond_error e = {0, ""};
  int64_t id = 0, ids[4], start, before;
  int status = -1;
  pid_t pid;
  fake_reset();
  fake_add("a", 1, 1000);
  fake_add("b", 1, 1000);
  s = open_seg(&o);
  before = next_id(s, "a");
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, &e), 0);
  if (how != BY_FORK && !frond__fork_wipes())
    fail_msg("this kernel refuses MADV_WIPEONFORK (before Linux 4.14, or a "
             "seccomp filter): only fork() is caught here");
  if ((pid = fork_by(how)) == 0) {
    int ok = frond_seg_next(s, T("a"), &id, &e) == FROND_EFORKED &&
             frond_seg_tag_next(h, &id, &e) == FROND_EFORKED &&
             (frond_seg_tag_next)(h, &id, &e) == FROND_EFORKED &&
             frond_seg_tag_next_n(h, 4, ids, &e) == FROND_EFORKED &&
             frond_seg_next_n(s, T("b"), 4, ids, &e) == FROND_EFORKED &&
             frond_seg_range(s, T("a"), 10, &start, &e) == FROND_EFORKED &&
             frond_seg_refresh(s, &e) == FROND_EFORKED &&
             strstr(e.message, "fork()") != NULL;
    frond_seg_close(s); /* its memory only */
    _exit(ok ? 0 : 1);
  }
  assert_true(pid > 0);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(frond_seg_tag_next(h, &id, &e), 0);
  assert_int_equal(id, before + 1);
  frond_seg_close(s);
}

static void test_fork(void **state) {
  (void)state;
  fork_refused(BY_FORK);
}

static void test_underscore_fork(void **state) {
  (void)state;
  fork_refused(BY_UNDERSCORE_FORK);
}

static void test_syscall_fork(void **state) {
  (void)state;
  fork_refused(BY_SYSCALL);
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
      cmocka_unit_test(test_every_call_one_sequence),
      cmocka_unit_test(test_threads_unique_and_increasing),
      cmocka_unit_test(test_threads_tiny_segments),
      cmocka_unit_test(test_refusal_reaches_callers),
      cmocka_unit_test(test_fork),
      cmocka_unit_test(test_underscore_fork),
      cmocka_unit_test(test_syscall_fork),
      cmocka_unit_test(test_open_errors),
  };
  return frond_run_tests(tests, NULL, NULL);
}
