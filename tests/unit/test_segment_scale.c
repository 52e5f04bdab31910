/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_segment_scale.c -- the segment allocator with many tags: the loader
** pool (a stalled tag delays only itself), handles, range leases, calls
** that never wait, the tag table read in pages, queries, and the rate
** sampler that looks only at tags in use.
**
** The fake store ("fake:") stalls one tag on demand; the many-tag cases
** run on a SQLite file filled in one transaction.
*/
#include "core/seg.h"
#include "fake_store.h"

#include <sqlite3.h>

static frond_seg_options opts(void) {
  frond_seg_options o;
  frond_seg_options_init(&o);
  o.clock = fake_now_read;
  /* Long enough for a loaded machine: a test that wants a wait to fail
  ** sets its own. */
  o.wait_ms = 10000;
  o.first_wait_ms = 10000;
  o.retry_min_ms = 10;
  o.retry_max_ms = 50;
  return o;
}

static frond_seg *open_on(const char *uri, const frond_seg_options *o) {
  frond_seg *s = NULL;
  frond_error e = {0, ""};
  fake_install();
  frond_log_set(fake_log, NULL, FROND_LOG_DEBUG);
  if (frond_seg_open(&s, uri, o, &e) != 0)
    fail_msg("open %s: %s", uri, e.message);
  return s;
}

/* ---- the loader pool ---- */

typedef struct waiter {
  frond_seg *s;
  const char *tag;
  int rc;
  int64_t id;
} waiter;

static void *wait_next(void *arg) {
  waiter *w = arg;
  w->rc = frond_seg_next(w->s, w->tag, strlen(w->tag), &w->id, NULL);
  return NULL;
}

/* One tag's store transaction hangs: the other tags still get their
** first segments, from the other loaders. With one loader for all (the
** old design) "a" and "b" waited behind "slow" and failed. */
static void test_stalled_tag_delays_only_itself(void **state) {
  frond_seg_options o = opts();
  frond_seg_stats st;
  frond_seg *s;
  waiter w = {0};
  pthread_t th;
  fake_reset();
  fake_add("slow", 1, 10);
  fake_add("a", 1, 10);
  fake_add("b", 1, 10);
  o.first_wait_ms = 2000;
  s = open_on("fake:", &o);
  fake_hold_tag("slow");
  w.s = s;
  w.tag = "slow";
  pthread_create(&th, NULL, wait_next, &w);
  /* Let a loader enter the store for "slow" first. */
  for (int i = 0; i < 2000; i++) {
    frond_seg_stats_get(s, &st);
    if (st.loaders_busy_max >= 1)
      break;
    frond__sleep_ns(1000000);
  }
  assert_int_equal(next_id(s, "a"), 1);
  assert_int_equal(next_id(s, "b"), 1);
  assert_int_equal(next_id(s, "a"), 2);
  frond_seg_stats_get(s, &st);
  assert_int_equal(st.loaders, 4);
  assert_true(st.loaders_busy_max >= 2);
  fake_hold_tag(NULL);
  pthread_join(th, NULL);
  assert_int_equal(w.rc, 0);
  assert_int_equal(w.id, 1);
  frond_seg_close(s);
}

/* The pool is bounded: with its only loader stuck on a stalled tag, other
** tags wait (up to first_wait_ms) and fail clearly, then work once the
** store answers. */
static void test_pool_bounded(void **state) {
  frond_seg_options o = opts();
  frond_seg_stats st;
  frond_seg_tag *h;
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t id;
  int i;
  fake_reset();
  fake_add("slow", 1, 10);
  fake_add("a", 1, 10);
  o.loaders = 1;
  o.wait_ms = o.first_wait_ms = 200; /* "a" gives up behind "slow" */
  s = open_on("fake:", &o);
  fake_hold_tag("slow");
  assert_int_equal(frond_seg_tag_find(s, T("slow"), &h, &e), 0);
  assert_int_equal(frond__seg_tag_next_nowait(h, 1, &id, &e),
                   FROND_EWOULD_BLOCK);
  for (i = 0; i < 2000; i++) {
    frond_seg_stats_get(s, &st);
    if (st.loaders_busy_max >= 1)
      break;
    frond__sleep_ns(1000000);
  }
  assert_int_equal(frond_seg_next(s, T("a"), &id, &e),
                   FROND_ESEGMENT_UNAVAILABLE);
  fake_hold_tag(NULL);
  assert_int_equal(next_id(s, "a"), 1);
  assert_int_equal(next_id(s, "slow"), 1);
  frond_seg_close(s);
}

/* ---- handles ---- */

static void test_handles(void **state) {
  frond_seg_options o = opts();
  frond_seg_tag *h, *h2;
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t id, last = 0, i;
  fake_reset();
  fake_add("a", 1, 50);
  s = open_on("fake:", &o);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, &e), 0);
  assert_string_equal(frond_seg_tag_name(h), "a");
  assert_int_equal(frond_seg_tag_find(s, T("a"), &h2, &e), 0);
  assert_ptr_equal(h, h2);
  /* Handle and name share one sequence. */
  for (i = 0; i < 300; i++) {
    int rc = i % 2 ? frond_seg_tag_next(h, &id, &e)
                   : frond_seg_next(s, T("a"), &id, &e);
    assert_int_equal(rc, 0);
    assert_true(id > last);
    last = id;
  }
  /* Deleted: the handle fails as the name does; created again: the same
  ** handle works, above the new row. */
  fake_delete("a");
  assert_int_equal(frond_seg_refresh(s, &e), 0);
  assert_int_equal(frond_seg_tag_next(h, &id, &e), FROND_ETAG_NOT_FOUND);
  assert_int_equal(frond_seg_tag_range(h, 5, &id, &e), FROND_ETAG_NOT_FOUND);
  fake_add("a", 5000, 50);
  assert_int_equal(frond_seg_refresh(s, &e), 0);
  assert_int_equal(frond_seg_tag_next(h, &id, &e), 0);
  /* (A load in flight at the delete may have taken the new row's first
  ** segment and been dropped: skipped, never handed out.) */
  assert_true(id >= 5000);
  assert_int_equal(frond_seg_tag_find(s, T("a"), &h2, &e), 0);
  assert_ptr_equal(h, h2);
  frond_seg_close(s);
}

/* find() never asks the store; get() does, within miss_checks. */
static void test_find_is_memory_only(void **state) {
  frond_seg_options o = opts();
  frond_seg_tag *h;
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t id;
  fake_reset();
  fake_add("a", 1, 10);
  s = open_on("fake:", &o);
  fake_add("late", 1, 10);
  assert_int_equal(frond_seg_tag_find(s, T("late"), &h, &e),
                   FROND_ETAG_NOT_FOUND);
  assert_int_equal(frond_seg_tag_find(s, T("bad\x01"), &h, &e),
                   FROND_ETAG_INVALID);
  assert_int_equal(fake_gets(), 0);
  assert_int_equal(frond_seg_tag_get(s, T("late"), &h, &e), 0);
  assert_int_equal(fake_gets(), 1);
  assert_int_equal(frond_seg_tag_next(h, &id, &e), 0);
  assert_int_equal(id, 1);
  frond_seg_close(s);
}

/* refresh_tag reads one row: added, changed, removed. */
static void test_refresh_tag(void **state) {
  frond_seg_options o = opts();
  frond_seg_stats st;
  frond_seg_tag *h;
  frond_error e = {0, ""};
  frond_seg *s;
  fake_reset();
  fake_add("a", 1, 10);
  o.miss_checks = 0;
  s = open_on("fake:", &o);
  fake_add("b", 1, 10);
  assert_int_equal(frond_seg_tag_get(s, T("b"), &h, &e), FROND_ETAG_NOT_FOUND);
  assert_int_equal(frond_seg_refresh_tag(s, T("b"), &e), 0);
  assert_int_equal(frond_seg_tag_find(s, T("b"), &h, &e), 0);
  frond_seg_stats_get(s, &st);
  assert_int_equal(st.tags, 2);
  fake_delete("b");
  assert_int_equal(frond_seg_refresh_tag(s, T("b"), &e), FROND_ETAG_NOT_FOUND);
  assert_int_equal(frond_seg_tag_find(s, T("b"), &h, &e), FROND_ETAG_NOT_FOUND);
  frond_seg_stats_get(s, &st);
  assert_int_equal(st.tags, 1);
  frond_seg_close(s);
}

/* ---- calls that never wait ---- */

static void test_nowait(void **state) {
  frond_seg_options o = opts();
  frond_seg_tag *h;
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t ids[30], start, i;
  fake_reset();
  fake_add("a", 1, 10);
  o.preload_pct = 100; /* the next segment only when asked for */
  s = open_on("fake:", &o);
  fake_set(&fake.hold, 1);
  assert_int_equal(frond_seg_tag_find(s, T("a"), &h, &e), 0);
  /* First use: nothing buffered, the load is asked for, no wait. */
  assert_int_equal(frond__seg_tag_next_nowait(h, 1, ids, &e),
                   FROND_EWOULD_BLOCK);
  assert_int_equal(frond__seg_tag_range_nowait(h, 5, &start, &e),
                   FROND_EWOULD_BLOCK);
  fake_set(&fake.hold, 0);
  assert_int_equal(frond_seg_tag_next_n(h, 3, ids, &e), 0);
  assert_int_equal(ids[0], 1);
  /* 7 left and no next segment: a batch of 8 would wait. */
  fake_set(&fake.hold, 1);
  assert_int_equal(frond__seg_tag_next_nowait(h, 8, ids, &e),
                   FROND_EWOULD_BLOCK);
  assert_int_equal(frond__seg_tag_next_nowait(h, 7, ids, &e), 0);
  for (i = 0; i < 7; i++)
    assert_int_equal(ids[i], 4 + i);
  fake_set(&fake.hold, 0);
  assert_int_equal(frond_seg_tag_next_n(h, 30, ids, &e), 0);
  for (i = 1; i < 30; i++)
    assert_true(ids[i] > ids[i - 1]);
  assert_true(ids[0] > 10);
  frond_seg_close(s);
}

/* ---- range leases ---- */

static void test_range_from_buffers(void **state) {
  frond_seg_options o = opts();
  frond_seg_tag *h;
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t start, id;
  fake_reset();
  fake_add("a", 1, 100);
  s = open_on("fake:", &o);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, &e), 0);
  assert_int_equal(frond_seg_tag_next(h, &id, &e), 0);
  assert_int_equal(id, 1);
  /* From the current segment: [2, 42). */
  assert_int_equal(frond_seg_tag_range(h, 40, &start, &e), 0);
  assert_int_equal(start, 2);
  assert_int_equal(frond_seg_tag_next(h, &id, &e), 0);
  assert_int_equal(id, 42);
  /* 58 left in [1, 101): a range of 60 skips them and comes whole from the
  ** next segment, [101, 301) with the doubled step. */
  assert_int_equal(frond_seg_range(s, T("a"), 60, &start, &e), 0);
  assert_int_equal(start, 101);
  assert_int_equal(frond_seg_tag_next(h, &id, &e), 0);
  assert_int_equal(id, 161);
  /* Counts. */
  assert_int_equal(frond_seg_tag_range(h, 0, &start, &e), FROND_ECOUNT_INVALID);
  assert_int_equal(frond_seg_tag_range(h, FROND_SEG_RANGE_MAX + 1, &start, &e),
                   FROND_ECOUNT_INVALID);
  frond_seg_close(s);
}

/* A range larger than any buffered segment: one store transaction of its
** size; the tag's dynamic step is not moved by it. */
static void test_range_larger_than_step(void **state) {
  frond_seg_options o = opts();
  frond_seg_tag *h;
  frond_tag_info ti;
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t start, id, prev;
  int allocs;
  fake_reset();
  fake_add("a", 1, 10);
  s = open_on("fake:", &o);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, &e), 0);
  assert_int_equal(frond_seg_tag_next(h, &prev, &e), 0);
  allocs = fake_allocs();
  assert_int_equal(frond_seg_tag_range(h, 100000, &start, &e), 0);
  assert_true(start > prev);
  assert_true(fake.max_step == 100000);
  assert_true(fake_allocs() >= allocs + 1);
  frond_seg_tag_info(h, &ti);
  assert_true(ti.step < 100000); /* the next ordinary load: not the range */
  assert_int_equal(frond_seg_tag_next(h, &id, &e), 0);
  assert_true(id >= start + 100000);
  frond_seg_close(s);
}

static void *release_later(void *arg) {
  (void)arg;
  frond__sleep_ns(100 * 1000000);
  fake_hold_tag(NULL);
  return NULL;
}

/* A range larger than the buffers is a store transaction of its own, as a
** tag's first segment is: it waits up to first_wait_ms, not wait_ms (a
** store that answers in 100 ms is not a failure; before, the range
** failed with SEGMENT_UNAVAILABLE after wait_ms). */
static void test_range_waits_for_its_own_segment(void **state) {
  frond_seg_options o = opts();
  frond_seg_tag *h;
  frond_error e = {0, ""};
  frond_seg *s;
  int64_t start, prev;
  pthread_t th;
  (void)state;
  fake_reset();
  fake_add("a", 1, 10);
  o.wait_ms = 1;
  o.first_wait_ms = 30000;
  s = open_on("fake:", &o);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, &e), 0);
  assert_int_equal(frond_seg_tag_next(h, &prev, &e), 0);
  fake_hold_tag("a");
  pthread_create(&th, NULL, release_later, NULL);
  assert_int_equal(frond_seg_tag_range(h, 1000, &start, &e), 0);
  assert_true(start > prev);
  pthread_join(th, NULL);
  frond_seg_close(s);
}

typedef struct mixer {
  frond_seg_tag *h;
  int64_t *ids;
  size_t n;
  int fails;
} mixer;

#define MIX_ROUNDS 3000

/* Each round: a single, then a range of 1..9 (all its IDs recorded). */
static void *mix(void *arg) {
  mixer *m = arg;
  int64_t id, start, k;
  int r;
  for (r = 0; r < MIX_ROUNDS; r++) {
    if (frond_seg_tag_next(m->h, &id, NULL) != 0) {
      m->fails++;
      continue;
    }
    m->ids[m->n++] = id;
    k = 1 + r % 9;
    if (frond_seg_tag_range(m->h, k, &start, NULL) != 0) {
      m->fails++;
      continue;
    }
    /* Increasing per thread across singles and ranges. */
    assert_true(start > id);
    while (k-- > 0)
      m->ids[m->n++] = start++;
  }
  return NULL;
}

static void test_ranges_and_singles_unique(void **state) {
  frond_seg_options o = opts();
  frond_seg *s;
  frond_seg_tag *h;
  mixer m[4];
  pthread_t th[4];
  int64_t *all;
  size_t n = 0, i, j;
  fake_reset();
  fake_add("a", 1, 37);
  o.wait_ms = 2000;
  s = open_on("fake:", &o);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, NULL), 0);
  all = malloc(4 * MIX_ROUNDS * 10 * sizeof(*all));
  for (i = 0; i < 4; i++) {
    m[i].h = h;
    m[i].ids = all + i * MIX_ROUNDS * 10;
    m[i].n = 0;
    m[i].fails = 0;
    pthread_create(&th[i], NULL, mix, &m[i]);
  }
  for (i = 0; i < 4; i++)
    pthread_join(th[i], NULL);
  for (i = 0; i < 4; i++) {
    assert_int_equal(m[i].fails, 0);
    memmove(all + n, m[i].ids, m[i].n * sizeof(*all));
    n += m[i].n;
  }
  qsort(all, n, sizeof(*all), cmp_i64);
  for (j = 1; j < n; j++)
    assert_true(all[j] > all[j - 1]);
  free(all);
  frond_seg_close(s);
}

/* ---- many tags, on SQLite ---- */

static char dir[256];

static void fill(const char *db, int n) {
  sqlite3 *h;
  sqlite3_stmt *st;
  char tag[32];
  int i;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(sqlite3_exec(h, FROND__LEAF_ALLOC_DDL, 0, 0, 0), SQLITE_OK);
  assert_int_equal(sqlite3_exec(h, "BEGIN", 0, 0, 0), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h,
                                      "INSERT INTO leaf_alloc (biz_tag, max_id,"
                                      " step) VALUES (?, 1, 100)",
                                      -1, &st, NULL),
                   SQLITE_OK);
  for (i = 0; i < n; i++) {
    snprintf(tag, sizeof(tag), "tenant-%06d", i);
    sqlite3_bind_text(st, 1, tag, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  assert_int_equal(sqlite3_exec(h, "COMMIT", 0, 0, 0), SQLITE_OK);
  sqlite3_close(h);
}

static void sql(const char *db, const char *q) {
  sqlite3 *h;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(sqlite3_exec(h, q, 0, 0, 0), SQLITE_OK);
  sqlite3_close(h);
}

#define MANY 10000

static void test_many_tags(void **state) {
  char db[300], uri[320];
  frond_seg_options o = opts();
  frond_seg_query q;
  frond_seg_stats st;
  frond_tag_info *v;
  frond_error e = {0, ""};
  frond_seg *s;
  size_t n, total;
  int i;
  snprintf(dir, sizeof(dir), "%s/frond-unit-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  assert_non_null(mkdtemp(dir));
  snprintf(db, sizeof(db), "%s/many.db", dir);
  snprintf(uri, sizeof(uri), "sqlite:%s", db);
  fill(db, MANY);
  o.clock = NULL;
  s = open_on(uri, &o);
  frond_seg_stats_get(s, &st);
  assert_int_equal(st.tags, MANY);
  assert_int_equal(st.tags_in_use, 0);

  /* Pages by name, with the total. */
  memset(&q, 0, sizeof(q));
  q.offset = 4095;
  q.limit = 3;
  assert_int_equal(frond_seg_tag_query(s, &q, &v, &n, &total, &e), 0);
  assert_int_equal(n, 3);
  assert_int_equal(total, MANY);
  assert_string_equal(v[0].tag, "tenant-004095");
  assert_string_equal(v[2].tag, "tenant-004097");
  assert_false(v[0].in_use);
  assert_int_equal(v[0].row_step, 100);
  frond_free(v);
  /* A search. */
  q.match = "-00099";
  q.offset = 2;
  q.limit = 5;
  assert_int_equal(frond_seg_tag_query(s, &q, &v, &n, &total, &e), 0);
  assert_int_equal(total, 10);
  assert_int_equal(n, 5);
  assert_string_equal(v[0].tag, "tenant-000992");
  frond_free(v);
  /* Past the end. */
  q.match = NULL;
  q.offset = MANY;
  assert_int_equal(frond_seg_tag_query(s, &q, &v, &n, &total, &e), 0);
  assert_int_equal(n, 0);
  assert_int_equal(total, MANY);
  frond_free(v);

  /* Five in use; the sampler looks at those five only. */
  for (i = 0; i < 5; i++) {
    char tag[32];
    snprintf(tag, sizeof(tag), "tenant-%06d", i * 2000);
    next_id(s, tag);
    next_id(s, tag);
  }
  frond_seg_stats_get(s, &st);
  assert_int_equal(st.tags_in_use, 5);
  frond_seg_sample(s);
  frond_seg_sample(s);
  assert_int_equal(frond__seg_sample_visits(s), 10);

  /* Rows deleted across page boundaries, new ones added: one pass. */
  sql(db, "DELETE FROM leaf_alloc WHERE biz_tag IN ('tenant-000000', "
          "'tenant-004096', 'tenant-009999')");
  sql(db, "INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES "
          "('zz-new', 1, 10)");
  assert_int_equal(frond_seg_refresh(s, &e), 0);
  frond_seg_stats_get(s, &st);
  assert_int_equal(st.tags, MANY - 3 + 1);
  assert_int_equal(frond_seg_next(s, T("tenant-000000"), &(int64_t){0}, &e),
                   FROND_ETAG_NOT_FOUND);
  next_id(s, "zz-new");
  memset(&q, 0, sizeof(q));
  q.offset = MANY - 3;
  assert_int_equal(frond_seg_tag_query(s, &q, &v, &n, &total, &e), 0);
  assert_int_equal(n, 1);
  assert_string_equal(v[0].tag, "zz-new");
  assert_true(v[0].in_use);
  frond_free(v);
  frond_seg_close(s);
  sql(db, "SELECT 1");
  {
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
  }
}

/* ---- rates and the top by rate ---- */

static void test_rates_top(void **state) {
  frond_seg_options o = opts();
  frond_seg_query q;
  frond_tag_info *v;
  frond_seg *s;
  size_t n, total;
  int i;
  fake_reset();
  fake_add("slowest", 1, 1000);
  fake_add("fast", 1, 1000);
  fake_add("medium", 1, 1000);
  fake_add("unused", 1, 1000);
  s = open_on("fake:", &o);
  next_id(s, "slowest");
  next_id(s, "fast");
  next_id(s, "medium");
  frond_seg_sample(s);
  frond__sleep_ns(20000000);
  for (i = 0; i < 300; i++)
    next_id(s, "fast");
  for (i = 0; i < 100; i++)
    next_id(s, "medium");
  next_id(s, "slowest");
  frond_seg_sample(s);
  memset(&q, 0, sizeof(q));
  q.order = FROND_SEG_BY_RATE;
  q.limit = 2;
  assert_int_equal(frond_seg_tag_query(s, &q, &v, &n, &total, NULL), 0);
  assert_int_equal(total, 3); /* in use */
  assert_int_equal(n, 2);
  assert_string_equal(v[0].tag, "fast");
  assert_string_equal(v[1].tag, "medium");
  assert_true(v[0].rate > v[1].rate);
  assert_true(v[1].rate > 0);
  frond_free(v);
  frond_seg_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stalled_tag_delays_only_itself),
      cmocka_unit_test(test_pool_bounded),
      cmocka_unit_test(test_handles),
      cmocka_unit_test(test_find_is_memory_only),
      cmocka_unit_test(test_refresh_tag),
      cmocka_unit_test(test_nowait),
      cmocka_unit_test(test_range_from_buffers),
      cmocka_unit_test(test_range_larger_than_step),
      cmocka_unit_test(test_range_waits_for_its_own_segment),
      cmocka_unit_test(test_ranges_and_singles_unique),
      cmocka_unit_test(test_many_tags),
      cmocka_unit_test(test_rates_top),
  };
  return frond_run_tests(tests, NULL, NULL);
}
