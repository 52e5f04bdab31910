/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_segment_bound.c -- a tag's bound (its max) through the allocator on
** a real SQLite file: the last segment cut at the max, mid-range and on a
** segment's edge; a batch and a range that would pass it; the end of the
** bigint range; SEGMENT_EXHAUSTED afterwards without moving the row again;
** and the store's rules for changing a max (never below what was issued).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "sqlite_fixture.h"

#include "core/seg.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int create_max(frond_store *st, const char *tag, int64_t step,
                      int64_t start, const char *desc, int64_t max,
                      frond_error *e) {
  frond_tag_seq q = {max, 1, 0, 0};
  return frond_store_tag_create_seq(st, tag, step, start, desc, &q, e);
}

static int tag_max(frond_store *st, const char *tag, int64_t *max,
                   frond_error *e) {
  frond_tag_seq q;
  int rc = frond_store_tag_seq(st, tag, &q, e);
  *max = q.max;
  return rc;
}

/* Create tag (step, start, max) in the store and open an allocator. */
static frond_seg *bounded(const char *tag, int64_t step, int64_t start,
                          int64_t max) {
  frond_store *st = NULL;
  frond_seg *s = NULL;
  frond_seg_options o;
  frond_error e = {0, ""};
  frond_log_set(quiet, NULL, FROND_LOG_DEBUG);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(create_max(st, tag, step, start, "", max, &e), 0);
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.wait_ms = 10000; /* a loaded machine: the loader may take long */
  o.retry_min_ms = 1;
  o.retry_max_ms = 5;
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  return s;
}

static int64_t row_max_id(const char *tag) {
  frond_store *st = NULL;
  frond_tag_row row;
  frond_error e = {0, ""};
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_get(st, tag, &row, &e), 0);
  frond_store_close(st);
  return row.max_id;
}

/* The next call is SEGMENT_EXHAUSTED naming the tag and its max, and so
** are the calls after it, none moving the row. */
static void used_up(frond_seg *s, const char *tag, int64_t max) {
  frond_error e = {0, ""};
  char want[64];
  int64_t id = -1, row;
  int i;
  assert_int_equal(frond_seg_next(s, tag, strlen(tag), &id, &e),
                   FROND_ESEGMENT_EXHAUSTED);
  snprintf(want, sizeof want, "its max %lld", (long long)max);
  assert_non_null(strstr(e.message, want));
  assert_non_null(strstr(e.message, tag));
  row = row_max_id(tag);
  for (i = 0; i < 5; i++) {
    usleep(10000); /* past the loader's backoff: it tries again */
    assert_int_equal(frond_seg_next(s, tag, strlen(tag), &id, &e),
                     FROND_ESEGMENT_EXHAUSTED);
  }
  assert_int_equal(row_max_id(tag), row);
}

/* Singles from the first ID to the max, in order, each once. */
static void singles_to(frond_seg *s, const char *tag, int64_t first,
                       int64_t max) {
  frond_error e = {0, ""};
  int64_t id, want;
  for (want = first; want <= max; want++) {
    assert_int_equal(frond_seg_next(s, tag, strlen(tag), &id, &e), 0);
    assert_int_equal(id, want);
  }
}

static void test_max_mid_segment(void **state) {
  frond_seg *s = bounded("mid", 10, 1, 25);
  (void)state;
  singles_to(s, "mid", 1, 25);
  used_up(s, "mid", 25);
  frond_seg_close(s);
}

static void test_max_on_segment_edge(void **state) {
  frond_seg *s = bounded("edge", 10, 1, 20);
  (void)state;
  singles_to(s, "edge", 1, 20);
  used_up(s, "edge", 20);
  frond_seg_close(s);
}

/* A max below the first segment's end: one short segment. */
static void test_max_inside_first_segment(void **state) {
  frond_seg *s = bounded("tiny", 1000, 1, 1);
  (void)state;
  singles_to(s, "tiny", 1, 1);
  used_up(s, "tiny", 1);
  frond_seg_close(s);
}

/* The tag "again" used up, deleted and created again with a higher max
** as the loader reads it: after the bound, before the row. The loader
** retries the used-up tag meanwhile; the tag's counts of loads as this
** one runs (one load of a tag at a time) tell when it ended. */
static atomic_int again_runs, again_rc;
static seg_tag *again_t;
static uint64_t again_loads, again_failures; /* under again_t->mu, */
static int again_seen;                       /* once this is set */

static int recreate_at_get(frond_store *unused, const char *op) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  (void)unused;
  if (strcmp(op, "get") != 0 || atomic_fetch_add(&again_runs, 1) != 0)
    return 0;
  pthread_mutex_lock(&again_t->mu); /* a loader holds no tag lock here */
  again_loads = again_t->loads;
  again_failures = again_t->failures;
  again_seen = 1;
  pthread_mutex_unlock(&again_t->mu);
  if (frond_store_open(&st, uri, &e) == 0 &&
      frond_store_tag_delete(st, "again", &e) == 0)
    atomic_store(&again_rc, create_max(st, "again", 10, 0, "", 2000000, &e));
  if (atomic_load(&again_rc) != 0)
    fprintf(stderr, "created again: %s\n", e.message);
  frond_store_close(st);
  return 0;
}

/* A used-up tag asks the store before it allocates: its bound, then its
** row. Deleted and created again with a higher max between the two
** reads, the old bound and the new row (at the old one's floor, past the
** old bound) said SEGMENT_EXHAUSTED of a tag with most of its IDs left. The
** bound is read again around the row: the load allocates, and the new
** tag's IDs come. */
static void test_recreated_as_asked(void **state) {
  frond_seg *s = bounded("again", 10, 1, 10);
  frond_error e = {0, ""};
  frond_seg_tag *h;
  seg_tag *t;
  int64_t id = -1, t0;
  int done = 0, failed = 0, fail = 0;
  (void)state;
  singles_to(s, "again", 1, 10);
  assert_int_equal(frond_seg_next(s, "again", 5, &id, &e),
                   FROND_ESEGMENT_EXHAUSTED);
  assert_int_equal(frond_seg_tag_get(s, "again", 5, &h, &e), 0);
  t = (seg_tag *)h;
  atomic_store(&again_runs, 0);
  atomic_store(&again_rc, -1);
  again_t = t;
  again_seen = 0;
  atomic_store(&frond__store_fault, recreate_at_get);
  pthread_mutex_lock(&t->mu);
  frond__seg_request_load(s, t);
  pthread_mutex_unlock(&t->mu);
  /* The hook runs inside a load, which ends under mu, counted. */
  for (t0 = frond__mono_ns(); frond__mono_ns() - t0 < 60000000000LL;) {
    pthread_mutex_lock(&t->mu);
    done = again_seen &&
           (t->loads != again_loads || t->failures != again_failures);
    failed = t->failures != again_failures;
    fail = t->fail_code;
    pthread_mutex_unlock(&t->mu);
    if (done)
      break;
    frond__sleep_ns(1000000);
  }
  atomic_store(&frond__store_fault, NULL);
  assert_int_equal(atomic_load(&again_runs), 1);
  assert_int_equal(atomic_load(&again_rc), 0);
  assert_true(done);
  if (failed) {
    frond_seg_close(s);
    fail_msg("the load after the tag was created again: %s",
             frond_err_name(fail));
  }
  assert_int_equal(frond_seg_next(s, "again", 5, &id, &e), 0);
  assert_true(id > 10 && id <= 2000000);
  frond_seg_close(s);
}

static void test_batch_past_max(void **state) {
  frond_seg *s = bounded("batch", 10, 1, 25);
  frond_error e = {0, ""};
  int64_t ids[30];
  int i;
  (void)state;
  assert_int_equal(frond_seg_next_n(s, "batch", 5, 20, ids, &e), 0);
  for (i = 0; i < 20; i++)
    assert_int_equal(ids[i], i + 1);
  /* 5 left: a batch of 10 is all or nothing. */
  memset(ids, 0, sizeof ids);
  assert_int_equal(frond_seg_next_n(s, "batch", 5, 10, ids, &e),
                   FROND_ESEGMENT_EXHAUSTED);
  for (i = 0; i < 10; i++)
    assert_true(ids[i] <= 25);
  /* It waited for a segment before taking any: the 5 are still there. */
  singles_to(s, "batch", 21, 25);
  used_up(s, "batch", 25);
  frond_seg_close(s);
}

/* A batch larger than what a bounded tag has left is refused and takes
** nothing: what is left is still there for smaller calls. */
static void test_batch_larger_than_left(void **state) {
  frond_seg *s = bounded("burn", 20, 1, 35);
  frond_error e = {0, ""};
  int64_t ids[40], id = 0;
  int i;
  (void)state;
  assert_int_equal(frond_seg_next(s, "burn", 4, &id, &e), 0);
  assert_int_equal(id, 1);
  assert_int_equal(frond_seg_next_n(s, "burn", 4, 36, ids, &e),
                   FROND_ESEGMENT_EXHAUSTED);
  assert_non_null(strstr(e.message, "its max 35"));
  assert_int_equal(frond_seg_next_n(s, "burn", 4, 35, ids, &e),
                   FROND_ESEGMENT_EXHAUSTED);
  assert_int_equal(frond_seg_next_n(s, "burn", 4, 34, ids, &e), 0);
  for (i = 0; i < 34; i++)
    assert_int_equal(ids[i], i + 2);
  used_up(s, "burn", 35);
  frond_seg_close(s);
}

static void test_batch_to_max_exactly(void **state) {
  frond_seg *s = bounded("exact", 10, 1, 25);
  frond_error e = {0, ""};
  int64_t ids[25];
  int i;
  (void)state;
  assert_int_equal(frond_seg_next_n(s, "exact", 5, 25, ids, &e), 0);
  for (i = 0; i < 25; i++)
    assert_int_equal(ids[i], i + 1);
  used_up(s, "exact", 25);
  frond_seg_close(s);
}

static void test_range_past_max(void **state) {
  frond_seg *s = bounded("range", 10, 1, 25);
  frond_error e = {0, ""};
  int64_t start = 0, id;
  (void)state;
  assert_int_equal(frond_seg_range(s, "range", 5, 8, &start, &e), 0);
  assert_int_equal(start, 1);
  /* 17 left below the max, in pieces: a range of 20 cannot be whole. */
  assert_int_equal(frond_seg_range(s, "range", 5, 20, &start, &e),
                   FROND_ESEGMENT_EXHAUSTED);
  /* What is left is still handed out, never above the max. */
  for (;;) {
    int rc = frond_seg_next(s, "range", 5, &id, &e);
    if (rc != 0) {
      assert_int_equal(rc, FROND_ESEGMENT_EXHAUSTED);
      break;
    }
    assert_true(id > 8 && id <= 25);
  }
  frond_seg_close(s);
}

/* At the end of the bigint range: the cut, then used up, never the
** store's overflow refusal. */
static void test_int64_end(void **state) {
  int64_t start = INT64_MAX - 100, max = INT64_MAX - 40;
  frond_seg *s = bounded("end", 30, start, max);
  (void)state;
  singles_to(s, "end", start, max);
  used_up(s, "end", max);
  frond_seg_close(s);
}

static void test_max_int64_max(void **state) {
  int64_t start = INT64_MAX - 10;
  frond_seg *s = bounded("top", 5, start, INT64_MAX);
  (void)state;
  singles_to(s, "top", start, start + 4);
  frond_seg_close(s);
}

static void test_set_max_rules(void **state) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  frond_seg *s = bounded("rules", 10, 1, 0);
  int64_t max = -1, id;
  (void)state;
  frond_seg_options o;
  singles_to(s, "rules", 1, 5);
  /* Closed: no preload moves the row while the rules are checked. */
  frond_seg_close(s);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(tag_max(st, "rules", &max, &e), 0);
  assert_int_equal(max, 0);
  /* Bounding it below what may have been issued (1 to 5; the close gave
  ** the rest back): refused, unchanged. */
  assert_int_equal(row_max_id("rules"), 6);
  assert_int_equal(frond_store_tag_set_max(st, "rules", 4, &e),
                   FROND_ETAG_FLOOR);
  assert_non_null(strstr(e.message, "max 4"));
  assert_int_equal(tag_max(st, "rules", &max, &e), 0);
  assert_int_equal(max, 0);
  /* At what it may have issued: allowed; then only up. */
  assert_int_equal(
      frond_store_tag_set_max(st, "rules", row_max_id("rules") - 1 + 4, &e), 0);
  assert_int_equal(frond_store_tag_set_max(st, "rules", 1, &e),
                   FROND_ETAG_FLOOR);
  assert_int_equal(frond_store_tag_set_max(st, "rules", -1, &e), FROND_EINVAL);
  assert_int_equal(frond_store_tag_set_max(st, "nope", 10, &e),
                   FROND_ETAG_NOT_FOUND);
  assert_int_equal(tag_max(st, "rules", &max, &e), 0);
  frond_seg_options_init(&o);
  o.wait_ms = 10000;
  o.retry_min_ms = 1;
  o.retry_max_ms = 5;
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  /* The allocator cuts at it: 4 more at most. */
  for (;;) {
    int rc = frond_seg_next(s, "rules", 5, &id, &e);
    if (rc != 0) {
      assert_int_equal(rc, FROND_ESEGMENT_EXHAUSTED);
      break;
    }
    assert_true(id <= max);
  }
  /* Raised: on again, above everything before; dropped: unbounded. */
  assert_int_equal(frond_store_tag_set_max(st, "rules", max + 100, &e), 0);
  for (int i = 0; i < 500; i++) { /* until the loader tries again */
    int rc = frond_seg_next(s, "rules", 5, &id, &e);
    if (rc == 0)
      break;
    assert_int_equal(rc, FROND_ESEGMENT_EXHAUSTED);
    usleep(10000);
  }
  assert_true(id > max && id <= max + 100);
  assert_int_equal(frond_store_tag_set_max(st, "rules", 0, &e), 0);
  assert_int_equal(tag_max(st, "rules", &max, &e), 0);
  assert_int_equal(max, 0);
  /* A deleted tag's bound goes with it. */
  assert_int_equal(frond_store_tag_set_max(st, "rules", 1000000, &e), 0);
  assert_int_equal(frond_store_tag_delete(st, "rules", &e), 0);
  assert_int_equal(frond_store_tag_create(st, "rules", 10, 0, "", &e), 0);
  assert_int_equal(tag_max(st, "rules", &max, &e), 0);
  assert_int_equal(max, 0);
  /* Deleted after IDs were out: created again with a max below where the
  ** name starts again (above its floor), refused. */
  assert_int_equal(frond_store_tag_delete(st, "rules", &e), 0);
  assert_int_equal(create_max(st, "rules", 10, 0, "", 500, &e), FROND_EINVAL);
  assert_non_null(strstr(e.message, "floor"));
  /* A max below the start is refused before anything is created. */
  assert_int_equal(create_max(st, "low", 10, 50, "", 10, &e), FROND_EINVAL);
  assert_int_equal(tag_max(st, "low", &max, &e), FROND_ETAG_NOT_FOUND);
  frond_store_close(st);
  frond_seg_close(s);
}

/* Two admins' set-max interleaved with an allocation: Y lowers the max;
** after Y's write, an allocation on another node passes Y's max and X
** sets 5000 there, accepted. X's accepted max stands: Y never writes
** back a max it read before X's write. */
static frond_store *race_b;
static int race_depth, race_rc = -1;

static int race_hook(frond_store *st, const char *op) {
  frond_error e = {0, ""};
  int64_t mid = 0, rstep = 0;
  (void)st;
  if (strcmp(op, "set_max_written") != 0 || race_depth++ > 0)
    return 0;
  assert_int_equal(frond__guard_alloc(race_b, "race", 1000, &mid, &rstep, &e),
                   0);
  assert_true(mid - 1 > 1500);
  race_rc = frond_store_tag_set_max(race_b, "race", 5000, &e);
  return 0;
}

static void test_set_max_interleaved(void **state) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  int64_t mid = 0, rstep = 0, max = -1;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_DEBUG);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_open(&race_b, uri, &e), 0);
  assert_int_equal(create_max(st, "race", 1000, 1, "", 100000, &e), 0);
  assert_int_equal(frond__guard_alloc(st, "race", 1000, &mid, &rstep, &e), 0);
  atomic_store(&frond__store_fault, race_hook);
  (void)frond_store_tag_set_max(st, "race", 1500, &e);
  atomic_store(&frond__store_fault, NULL);
  assert_int_equal(race_depth, 2); /* Y's write, then X's inside it */
  assert_int_equal(race_rc, 0);
  assert_int_equal(tag_max(st, "race", &max, &e), 0);
  assert_int_equal(max, 5000);
  frond_store_close(race_b);
  frond_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_max_mid_segment),
      cmocka_unit_test(test_max_on_segment_edge),
      cmocka_unit_test(test_max_inside_first_segment),
      cmocka_unit_test(test_recreated_as_asked),
      cmocka_unit_test(test_batch_past_max),
      cmocka_unit_test(test_batch_larger_than_left),
      cmocka_unit_test(test_batch_to_max_exactly),
      cmocka_unit_test(test_range_past_max),
      cmocka_unit_test(test_int64_end),
      cmocka_unit_test(test_max_int64_max),
      cmocka_unit_test(test_set_max_rules),
      cmocka_unit_test(test_set_max_interleaved),
  };
  return frond_run_tests(tests, setup, teardown);
}
