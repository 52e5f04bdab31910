/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_segment_stride.c -- strided tags (--increment K --offset R) through
** the allocator on a real SQLite file: the residue arithmetic at its
** edges, every ID R modulo K and in order on every path (singles, the
** inline call on a handle, batches across segments, threads), with a max
** that is and is not of the residue, at the end of the bigint range, and
** ranges refused.
*/
#include "testutil.h"
#include "sqlite_fixture.h"

#include "core/seg.h"
#include "store/store.h"

#include <pthread.h>
#include <unistd.h>

/* Create the tag and open an allocator; preload: the options' share, 0
** for the default. */
static frond_seg *strided_at(const char *tag, int64_t step, int64_t start,
                             int64_t k, int64_t r, int64_t max,
                             unsigned preload) {
  frond_store *st = NULL;
  frond_seg *s = NULL;
  frond_seg_options o;
  frond_error e = {0, ""};
  frond_tag_seq q = {max, k, r, 0};
  frond_log_set(quiet, NULL, FROND_LOG_DEBUG);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create_seq(st, tag, step, start, "", &q, &e),
                   0);
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.wait_ms = 2000;
  o.retry_min_ms = 1;
  o.retry_max_ms = 5;
  if (preload != 0)
    o.preload_pct = preload;
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  return s;
}

static frond_seg *strided(const char *tag, int64_t step, int64_t start,
                          int64_t k, int64_t r, int64_t max) {
  return strided_at(tag, step, start, k, r, max, 0);
}

static void test_arithmetic(void **state) {
  (void)state;
  assert_int_equal(frond__seg_first(0, 1, 0), 0);
  assert_int_equal(frond__seg_first(1, 3, 1), 1);
  assert_int_equal(frond__seg_first(2, 3, 1), 4);
  assert_int_equal(frond__seg_first(3, 3, 0), 3);
  assert_int_equal(frond__seg_first(4, 3, 0), 6);
  assert_int_equal(frond__seg_first(11, 10, 9), 19);
  /* Past the bigint range: none. */
  assert_int_equal(frond__seg_first(INT64_MAX, 2, INT64_MAX % 2), INT64_MAX);
  assert_int_equal(frond__seg_first(INT64_MAX, 2, 1 - INT64_MAX % 2), -1);
  assert_int_equal(frond__seg_first(INT64_MAX - 1, 3, (INT64_MAX - 2) % 3), -1);
  /* Counts of [a, b). */
  assert_int_equal(frond__seg_count(1, 11, 3, 1), 4);   /* 1 4 7 10 */
  assert_int_equal(frond__seg_count(11, 21, 3, 1), 3);  /* 13 16 19 */
  assert_int_equal(frond__seg_count(21, 31, 3, 1), 3);  /* 22 25 28 */
  assert_int_equal(frond__seg_count(1, 11, 10, 0), 1);  /* 10 */
  assert_int_equal(frond__seg_count(11, 20, 10, 0), 0); /* none */
  assert_int_equal(frond__seg_count(5, 5, 1, 0), 0);
  assert_int_equal(frond__seg_count(0, INT64_MAX, 1, 0), INT64_MAX);
  assert_int_equal(
      frond__seg_count(INT64_MAX - 10, INT64_MAX, 4, (INT64_MAX - 1) % 4), 3);
}

/* n singles of tag, each the next number of the residue after prev. */
static int64_t singles(frond_seg *s, const char *tag, int64_t prev, int64_t k,
                       int n) {
  frond_error e = {0, ""};
  int64_t id = -1;
  int i;
  for (i = 0; i < n; i++) {
    assert_int_equal(frond_seg_next(s, tag, strlen(tag), &id, &e), 0);
    assert_int_equal(id, prev + k);
    prev = id;
  }
  return prev;
}

static void test_every_residue_in_order(void **state) {
  frond_seg *s = strided("odd", 10, 1, 3, 1, 0);
  frond_seg_tag *h;
  frond_error e = {0, ""};
  int64_t ids[50], id = -1, prev;
  int i;
  (void)state;
  /* Singles: 1, 4, 7, ... across segments of ten numbers. */
  prev = singles(s, "odd", 1 - 3, 3, 40);
  /* The inline call on a handle goes to the slow path, never start+off. */
  assert_int_equal(frond_seg_tag_get(s, "odd", 3, &h, &e), 0);
  for (i = 0; i < 40; i++) {
    assert_int_equal(frond_seg_tag_next(h, &id, &e), 0);
    assert_int_equal(id, prev + 3);
    prev = id;
  }
  /* A batch across several segments. */
  assert_int_equal(frond_seg_next_n(s, "odd", 3, 50, ids, &e), 0);
  for (i = 0; i < 50; i++) {
    assert_int_equal(ids[i] % 3, 1);
    assert_true(i == 0 ? ids[0] > prev : ids[i] == ids[i - 1] + 3);
  }
  frond_seg_close(s);
}

static void test_residue_zero_and_wide(void **state) {
  frond_seg *s = strided("tens", 10, 1, 10, 0, 0);
  frond_seg *w = strided("wide", 1000, 1, 1000, 999, 0);
  (void)state;
  singles(s, "tens", 0, 10, 30);   /* 10, 20, ... */
  singles(w, "wide", -1, 1000, 5); /* 999, 1999, ... */
  frond_seg_close(s);
  frond_seg_close(w);
}

static void test_ranges_refused(void **state) {
  frond_seg *s = strided("rng", 10, 1, 2, 0, 0);
  frond_error e = {0, ""};
  int64_t start, id;
  (void)state;
  /* Before any load, and after one. */
  assert_int_equal(frond_seg_range(s, "rng", 3, 4, &start, &e), FROND_EINVAL);
  assert_non_null(strstr(e.message, "step by 2"));
  assert_int_equal(frond_seg_next(s, "rng", 3, &id, &e), 0);
  assert_int_equal(id % 2, 0);
  assert_int_equal(frond_seg_range(s, "rng", 3, 1, &start, &e), FROND_EINVAL);
  frond_seg_close(s);
}

static void expect_exhausted(frond_seg *s, const char *tag) {
  frond_error e = {0, ""};
  int64_t id = -1;
  assert_int_equal(frond_seg_next(s, tag, strlen(tag), &id, &e),
                   FROND_ESEGMENT_EXHAUSTED);
}

static void test_max_of_the_residue_or_not(void **state) {
  frond_seg *a = strided("on", 10, 1, 3, 1, 40);  /* 40 = 1 mod 3 */
  frond_seg *b = strided("off", 10, 1, 3, 1, 38); /* last ID 37 */
  frond_seg *c = strided("none", 10, 1, 5, 4, 3); /* no ID at all */
  (void)state;
  assert_int_equal(singles(a, "on", -2, 3, 14), 40);
  expect_exhausted(a, "on");
  assert_int_equal(singles(b, "off", -2, 3, 13), 37);
  expect_exhausted(b, "off");
  expect_exhausted(c, "none");
  frond_seg_close(a);
  frond_seg_close(b);
  frond_seg_close(c);
}

/* The end of the bigint range: every number of the residue up to the max,
** in order, then used up. */
static void test_int64_end(void **state) {
  int64_t start = INT64_MAX - 100, max = INT64_MAX - 40, k = 7;
  int64_t r = (INT64_MAX - 50) % 7, want = frond__seg_first(start, k, r), id;
  frond_seg *s = strided("end", 30, start, k, r, max);
  frond_error e = {0, ""};
  frond_seg_tag *h;
  frond_tag_info v;
  frond_tag_seq q;
  int64_t left;
  (void)state;
  assert_int_equal(frond_seg_tag_get(s, "end", 3, &h, &e), 0);
  for (; want <= max; want += k) {
    assert_int_equal(frond_seg_next(s, "end", 3, &id, &e), 0);
    assert_int_equal(id, want);
    /* Described in numbers without passing the bigint range. */
    frond_seg_tag_info(h, &v);
    assert_true(v.current.ready && v.current.pos <= v.current.end);
    frond_seg_tag_seq(h, &q, &left);
    assert_true(q.max == max && q.increment == k && q.offset == r);
    assert_int_equal(left, (max - id) / k);
  }
  expect_exhausted(s, "end");
  frond_seg_tag_seq(h, &q, &left);
  assert_true(q.max == max && q.increment == k && left == 0);
  frond_seg_close(s);
}

/* The IDs left while a load is under way. The loader is held at its
** allocation until the test holds the tag's lock; the allocation then
** moves the row. A count reads the row's end and the buffers under that
** lock, so the row's new end must not be seen before the segment is
** installed: seen alone, the segment would be counted nowhere (2 left
** where 6 were). Then every count to the max is exact. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int hold_state; /* 1 armed, 2 the loader waits, 3 it goes on */
#define WAIT (60 * 1000000000LL)

static int hold_alloc(frond_store *st, const char *op) {
  (void)st;
  if (strcmp(op, "alloc") != 0)
    return 0;
  pthread_mutex_lock(&hold_mu);
  if (hold_state == 1) {
    hold_state = 2;
    pthread_cond_broadcast(&hold_cv);
    while (hold_state != 3)
      pthread_cond_wait(&hold_cv, &hold_mu);
  }
  pthread_mutex_unlock(&hold_mu);
  return 0;
}

static void test_left_while_loading(void **state) {
  int64_t k = 3, max = 3 * 40, id, left, end, moved, t0;
  unsigned busy;
  /* Preload only once a segment is used up: the load is the test's. */
  frond_seg *s = strided_at("left", 30, 1, k, 0, max, 100);
  frond_error e = {0, ""};
  frond_seg_tag *h;
  frond_tag_seq q;
  seg_tag *t;
  (void)state;
  assert_int_equal(frond_seg_tag_get(s, "left", 4, &h, &e), 0);
  t = (seg_tag *)h;
  assert_int_equal(frond_seg_next(s, "left", 4, &id, &e), 0);
  assert_int_equal(id, 3);
  frond_seg_tag_seq(h, &q, &left);
  assert_int_equal(left, (max - id) / k);
  hold_state = 1;
  atomic_store(&frond__store_fault, hold_alloc);
  pthread_mutex_lock(&t->mu);
  end = atomic_load(&t->row_end);
  frond__seg_request_load(s, t);
  pthread_mutex_unlock(&t->mu);
  pthread_mutex_lock(&hold_mu);
  for (t0 = frond__mono_ns();
       hold_state != 2 && frond__mono_ns() - t0 < WAIT;) {
    pthread_mutex_unlock(&hold_mu);
    frond__sleep_ns(1000000);
    pthread_mutex_lock(&hold_mu);
  }
  if (hold_state != 2) { /* a loader in the hook after all goes on */
    hold_state = 3;
    pthread_cond_broadcast(&hold_cv);
    pthread_mutex_unlock(&hold_mu);
    atomic_store(&frond__store_fault, NULL);
    frond_seg_close(s);
    fail_msg("the loader did not allocate in %lld s", WAIT / 1000000000);
  }
  pthread_mutex_unlock(&hold_mu);
  /* The loader allocates, then waits for the lock this thread holds. */
  pthread_mutex_lock(&t->mu);
  pthread_mutex_lock(&hold_mu);
  hold_state = 3;
  pthread_cond_broadcast(&hold_cv);
  pthread_mutex_unlock(&hold_mu);
  /* Its store calls end as it counts itself out of the busy loaders; the
  ** old code's record of the row's end came a few instructions after. */
  for (t0 = frond__mono_ns();
       (busy = atomic_load(&s->busy)) != 0 && frond__mono_ns() - t0 < WAIT;)
    frond__sleep_ns(100000);
  for (t0 = frond__mono_ns(), moved = end;
       moved == end && frond__mono_ns() - t0 < 1000000000;)
    moved = atomic_load(&t->row_end);
  pthread_mutex_unlock(&t->mu);
  atomic_store(&frond__store_fault, NULL);
  if (busy != 0 || moved != end) {
    frond_seg_close(s);
    if (busy != 0)
      fail_msg("the loader's store calls did not end in %lld s",
               WAIT / 1000000000);
    fail_msg("the row's end moved from %lld to %lld before its segment was "
             "installed",
             (long long)end, (long long)moved);
  }
  for (id += k; id <= max; id += k) {
    int64_t got;
    assert_int_equal(frond_seg_next(s, "left", 4, &got, &e), 0);
    assert_int_equal(got, id);
    frond_seg_tag_seq(h, &q, &left);
    assert_int_equal(left, (max - got) / k);
  }
  frond_seg_close(s);
}

/* Threads on one handle: every ID of the residue, none twice. */
#define THREADS 4
#define PER 5000
typedef struct worker {
  frond_seg_tag *h;
  int64_t ids[PER];
  int failed;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  frond_error e = {0, ""};
  int i;
  for (i = 0; i < PER; i++)
    if (frond_seg_tag_next(w->h, &w->ids[i], &e) != 0)
      w->failed++;
  return NULL;
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void test_threads(void **state) {
  frond_seg *s = strided("mt", 100, 1, 4, 3, 0);
  static worker w[THREADS];
  static int64_t all[THREADS * PER];
  pthread_t th[THREADS];
  frond_error e = {0, ""};
  frond_seg_tag *h;
  int i, j;
  (void)state;
  assert_int_equal(frond_seg_tag_get(s, "mt", 2, &h, &e), 0);
  for (i = 0; i < THREADS; i++) {
    w[i].h = h;
    w[i].failed = 0;
    assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
  }
  for (i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  for (i = 0; i < THREADS; i++) {
    assert_int_equal(w[i].failed, 0);
    for (j = 0; j < PER; j++) {
      assert_int_equal(w[i].ids[j] % 4, 3);
      assert_true(j == 0 || w[i].ids[j] > w[i].ids[j - 1]);
      all[i * PER + j] = w[i].ids[j];
    }
  }
  qsort(all, THREADS * PER, sizeof all[0], cmp);
  for (i = 1; i < THREADS * PER; i++)
    assert_true(all[i] > all[i - 1]);
  frond_seg_close(s);
}

static void test_create_rules(void **state) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  frond_tag_seq q = {0, 4, 4, 0}, got;
  (void)state;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  /* The offset is a remainder: below the increment. */
  assert_int_equal(frond_store_tag_create_seq(st, "r1", 10, 0, "", &q, &e),
                   FROND_EINVAL);
  q.offset = -1;
  assert_int_equal(frond_store_tag_create_seq(st, "r1", 10, 0, "", &q, &e),
                   FROND_EINVAL);
  /* The step counts numbers: at least the increment. */
  q.offset = 1;
  assert_int_equal(frond_store_tag_create_seq(st, "r1", 3, 0, "", &q, &e),
                   FROND_EINVAL);
  assert_non_null(strstr(e.message, "below the increment"));
  assert_int_equal(frond_store_tag_seq(st, "r1", &got, &e),
                   FROND_ETAG_NOT_FOUND);
  assert_int_equal(frond_store_tag_create_seq(st, "r1", 4, 0, "", &q, &e), 0);
  assert_int_equal(frond_store_tag_seq(st, "r1", &got, &e), 0);
  assert_true(got.max == 0 && got.increment == 4 && got.offset == 1);
  /* Nor can the step go below it later. */
  assert_int_equal(frond_store_tag_set_step(st, "r1", 3, &e), FROND_EINVAL);
  assert_int_equal(frond_store_tag_set_step(st, "r1", 8, &e), 0);
  /* A bound set later keeps the stride; dropped, the stride stays. */
  assert_int_equal(frond_store_tag_set_max(st, "r1", 1000, &e), 0);
  assert_int_equal(frond_store_tag_set_max(st, "r1", 0, &e), 0);
  assert_int_equal(frond_store_tag_seq(st, "r1", &got, &e), 0);
  assert_true(got.max == 0 && got.increment == 4 && got.offset == 1);
  /* Deleted and created again plainly: no stride left behind. */
  assert_int_equal(frond_store_tag_delete(st, "r1", &e), 0);
  assert_int_equal(frond_store_tag_create(st, "r1", 4, 0, "", &e), 0);
  assert_int_equal(frond_store_tag_seq(st, "r1", &got, &e), 0);
  assert_true(got.max == 0 && got.increment == 1 && got.offset == 0);
  frond_store_close(st);
}

/* Delete the tag and create it again with stride k, residue r. */
static void recreate(const char *tag, int64_t k, int64_t r) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  frond_tag_seq q = {0, k, r, 0};
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_delete(st, tag, &e), 0);
  assert_int_equal(frond_store_tag_create_seq(st, tag, 1000, 0, "", &q, &e), 0);
  frond_store_close(st);
}

/* A tag in use, deleted and created again strided elsewhere between two
** refreshes: the allocator's buffers hold the old tag's every number.
** The next refresh sees the new stride and drops them: the next ID is of
** the new residue, above every number of the old tag. The IDs issued are
** counted across the drop. */
static void test_recreated_strided(void **state) {
  frond_error e = {0, ""};
  frond_seg *s = strided("again", 1000, 1, 1, 0, 0);
  frond_seg_tag *h;
  frond_tag_info v;
  int64_t id = 0, old = 0;
  int i;
  (void)state;
  assert_int_equal(frond_seg_tag_get(s, "again", 5, &h, &e), 0);
  assert_int_equal(frond_seg_next(s, "again", 5, &old, &e), 0);
  recreate("again", 2, 1);
  assert_int_equal(frond_seg_refresh(s, &e), 0);
  for (i = 0; i < 20; i++) {
    assert_int_equal(frond_seg_next(s, "again", 5, &id, &e), 0);
    assert_int_equal(id % 2, 1);
    assert_true(id > 1000);
  }
  /* The dropped buffers' ID handed out is counted still. */
  frond_seg_tag_info(h, &v);
  assert_int_equal(v.issued, 21);
  frond_seg_close(s);
}

/* What the refresh's hook did, told after it returns. */
static frond_seg *twice_s;
static int twice_runs, twice_rc;
static int64_t twice_id;

/* The refresh has read the tag strided; the tag is now created again
** plain, and a load reads and records it before the refresh compares. */
static void twice_plain(seg_tag *t) {
  frond_error e = {0, ""};
  if (twice_runs++ != 0)
    return;
  recreate("twice", 1, 0);
  pthread_mutex_lock(&t->mu);
  frond__seg_drop(t); /* the plain tag's load comes next */
  pthread_mutex_unlock(&t->mu);
  twice_rc = frond_seg_next(twice_s, "twice", 5, &twice_id, &e);
}

/* A tag in use, deleted and created again twice while a refresh runs:
** strided, which the refresh reads, then plain, which a load reads and
** records before the refresh compares. The refresh's read is the older:
** put over the load's, the plain tag's ranges were refused as strided
** (INVAL) and it was counted in the old stride until the next load. */
static void test_recreated_while_refreshing(void **state) {
  frond_seg *s = strided("twice", 1000, 1, 1, 0, 0);
  frond_error e = {0, ""};
  frond_seg_tag *h;
  frond_tag_seq q;
  int64_t id = 0, first = 0, left;
  (void)state;
  assert_int_equal(frond_seg_tag_get(s, "twice", 5, &h, &e), 0);
  assert_int_equal(frond_seg_next(s, "twice", 5, &id, &e), 0);
  recreate("twice", 3, 2);
  twice_s = s;
  twice_runs = 0;
  twice_rc = -1;
  atomic_store(&frond__seg_restrided_hook, twice_plain);
  assert_int_equal(frond_seg_refresh(s, &e), 0);
  atomic_store(&frond__seg_restrided_hook, NULL);
  assert_int_equal(twice_runs, 1);
  assert_int_equal(twice_rc, 0);
  assert_true(twice_id > id);
  frond_seg_tag_seq(h, &q, &left);
  assert_int_equal(q.increment, 1);
  assert_int_equal(left, -1); /* unknown until its next load */
  if (frond_seg_tag_range(h, 10, &first, &e) != 0) {
    frond_seg_close(s);
    fail_msg("a range of the plain tag: %s: %s", frond_err_name(e.code),
             e.message);
  }
  assert_true(first > twice_id);
  assert_int_equal(frond_seg_next(s, "twice", 5, &id, &e), 0);
  assert_true(id >= first + 10);
  frond_seg_close(s);
}

/* A strided tag in use, deleted and created again plain, then seen by a
** refresh: the plain tag's first call is a range, and it is served (the
** tag's stride is unknown until a load reads it, not the old one's). */
static void test_recreated_plain_range_first(void **state) {
  frond_seg *s = strided("plain", 1000, 1, 3, 2, 0);
  frond_error e = {0, ""};
  frond_seg_tag *h;
  int64_t id = 0, first = 0;
  int i;
  (void)state;
  assert_int_equal(frond_seg_tag_get(s, "plain", 5, &h, &e), 0);
  assert_int_equal(frond_seg_next(s, "plain", 5, &id, &e), 0);
  assert_int_equal(id % 3, 2);
  recreate("plain", 1, 0);
  for (i = 0; i < 3; i++) { /* the refreshes after it too */
    assert_int_equal(frond_seg_refresh(s, &e), 0);
    if (frond_seg_tag_range(h, 10, &first, &e) != 0) {
      frond_seg_close(s);
      fail_msg("a range of the plain tag after refresh %d: %s: %s", i + 1,
               frond_err_name(e.code), e.message);
    }
    assert_true(first > id);
    id = first + 9;
  }
  frond_seg_close(s);
}

/* A start whose first segment passes the end of the bigint range is
** refused at create (it would issue nothing, and its first ID could not
** be told); the last start that fits is taken. */
static void test_start_at_the_end(void **state) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  frond_tag_seq q = {0, INT32_MAX, 5, 0};
  (void)state;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create_seq(st, "far", INT32_MAX,
                                              INT64_MAX - 807, "", &q, &e),
                   FROND_EINVAL);
  assert_non_null(strstr(e.message, "bigint"));
  q.increment = 2;
  q.offset = 1;
  assert_int_equal(
      frond_store_tag_create_seq(st, "far", 10, INT64_MAX - 9, "", &q, &e),
      FROND_EINVAL);
  assert_int_equal(
      frond_store_tag_create_seq(st, "far", 10, INT64_MAX - 10, "", &q, &e), 0);
  frond_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arithmetic),
      cmocka_unit_test(test_every_residue_in_order),
      cmocka_unit_test(test_residue_zero_and_wide),
      cmocka_unit_test(test_ranges_refused),
      cmocka_unit_test(test_max_of_the_residue_or_not),
      cmocka_unit_test(test_int64_end),
      cmocka_unit_test(test_left_while_loading),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_create_rules),
      cmocka_unit_test(test_recreated_strided),
      cmocka_unit_test(test_recreated_while_refreshing),
      cmocka_unit_test(test_recreated_plain_range_first),
      cmocka_unit_test(test_start_at_the_end),
  };
  return frond_run_tests(tests, setup, teardown);
}
