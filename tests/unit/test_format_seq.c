/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_seq.c -- daily, monthly and yearly sequences on a real
** SQLite store: a period change under a fake clock in the format's zone,
** exhaustion as an error and never a wrap, and two allocators (two nodes)
** on one tag and one file issuing no number twice.
*/
#include "testutil.h"

#include "core/formats.h"

#include <pthread.h>

#define KEY0 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

typedef struct env {
  char *dir;
  char uri[600];
  fake_clock clock;
} env;

static void env_open(env *e, const char *tag, int64_t step) {
  frond_store *st;
  frond_error err = {0, ""};
  e->dir = tmpdir_make();
  snprintf(e->uri, sizeof(e->uri), "sqlite://%s/ids.db", e->dir);
  assert_int_equal(frond_store_open(&st, e->uri, &err), 0);
  if (frond_store_tag_create(st, tag, step, 1, NULL, &err) != 0)
    fail_msg("create %s: %s", tag, err.message);
  frond_store_close(st);
}

static frond_seg *seg_open(env *e) {
  frond_seg_options o;
  frond_seg *s;
  frond_error err = {0, ""};
  frond_seg_options_init(&o);
  o.clock = fake_clock_read;
  o.clock_ctx = &e->clock;
  /* A busy machine can take a while to commit a segment: wait for it
  ** rather than fail (these tests are about numbers, not latency). */
  o.wait_ms = 20000;
  o.first_wait_ms = 20000;
  if (frond_seg_open(&s, e->uri, &o, &err) != 0)
    fail_msg("seg: %s", err.message);
  return s;
}

static frond_format *format_of(const char *spec) {
  frond_order_keys *k;
  frond_format *f;
  frond_error err = {0, ""};
  assert_int_equal(frond_order_keys_parse("1:" KEY0, 66, &k, NULL), 0);
  if (frond_format_create(&f, spec, k, NULL, NULL, &err) != 0)
    fail_msg("'%s': %s", spec, err.message);
  frond_order_keys_free(k);
  return f;
}

static void next_str(frond_format *f, frond_seg *s, char *buf, size_t len) {
  frond_format_source src = {NULL, s, NULL, 0};
  frond_error err = {0, ""};
  if (frond_format_next(f, &src, buf, len, &err) != 0)
    fail_msg("next: %s: %s", frond_err_name(err.code), err.message);
}

/* 2026-11-23T00:00:00+09:00 (Tokyo), i.e. 2026-11-22T15:00:00Z. */
#define TOKYO_MIDNIGHT INT64_C(1795359600000)

static void test_period_change(void **state) {
  env e;
  frond_seg *s;
  frond_format *f;
  frond_format_value v;
  frond_tag_row row;
  frond_store *st;
  char buf[64];
  (void)state;
  env_open(&e, "orders", 100);
  fake_clock_set(&e.clock, TOKYO_MIDNIGHT - 10);
  s = seg_open(&e);
  f = format_of("seq:tag=orders,period=day,digits=6,tz=Asia/Tokyo");
  next_str(f, s, buf, sizeof(buf));
  assert_string_equal(buf, "20261122000001");
  next_str(f, s, buf, sizeof(buf));
  assert_string_equal(buf, "20261122000002");
  /* Midnight in Tokyo: the old period's loaded segment still holds 98
  ** numbers, and must not serve the new day. */
  fake_clock_set(&e.clock, TOKYO_MIDNIGHT);
  next_str(f, s, buf, sizeof(buf));
  assert_string_equal(buf, "20261123000001");
  /* The clock steps back a second: that second belongs to the old day,
  ** whose row goes on where it was; nothing repeats. */
  fake_clock_set(&e.clock, TOKYO_MIDNIGHT - 1000);
  next_str(f, s, buf, sizeof(buf));
  assert_string_equal(buf, "20261122000003");
  fake_clock_set(&e.clock, TOKYO_MIDNIGHT + 5000);
  next_str(f, s, buf, sizeof(buf));
  assert_string_equal(buf, "20261123000002");
  /* Decoding gives the period, its local start and the row. */
  assert_int_equal(frond_format_decode(f, buf, strlen(buf), &v, NULL), 0);
  assert_int_equal(v.id, 2);
  assert_string_equal(v.period, "20261123");
  assert_string_equal(v.tag, "orders:20261123");
  assert_int_equal(v.unix_ms, TOKYO_MIDNIGHT);
  frond_format_free(f);
  frond_seg_close(s);
  /* The rows were made from the base row's step, one per period. */
  assert_int_equal(frond_store_open(&st, e.uri, NULL), 0);
  assert_int_equal(frond_store_tag_get(st, "orders:20261123", &row, NULL), 0);
  assert_int_equal(row.step, 100);
  assert_int_equal(frond_store_tag_get(st, "orders:20261122", &row, NULL), 0);
  frond_store_close(st);
  /* A restart (a new allocator) never repeats a number of the day. */
  s = seg_open(&e);
  f = format_of("seq:tag=orders,period=day,digits=6,tz=Asia/Tokyo");
  next_str(f, s, buf, sizeof(buf));
  assert_true(strcmp(buf, "20261123000002") > 0);
  assert_memory_equal(buf, "20261123", 8);
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(e.dir);
}

/* Months and years, and a zone with DST: New York's day starts at 05:00Z
** in winter and at 04:00Z in summer. */
static void test_months_years_dst(void **state) {
  env e;
  frond_seg *s;
  frond_format *m, *y, *d;
  char buf[64];
  (void)state;
  env_open(&e, "inv", 10);
  s = seg_open(&e);
  m = format_of("seq:tag=inv,period=month,digits=5,prefix=INV-,tz=UTC");
  y = format_of("seq:tag=inv,period=year,digits=7,check=damm,tz=UTC");
  d = format_of("seq:tag=inv,digits=4,tz=America/New_York");
  fake_clock_set(&e.clock, INT64_C(1798761599000)); /* 2026-12-31T23:59:59Z */
  next_str(m, s, buf, sizeof(buf));
  assert_string_equal(buf, "INV-20261200001");
  next_str(y, s, buf, sizeof(buf));
  assert_memory_equal(buf, "20260000001", 11);
  assert_int_equal(strlen(buf), 12);
  fake_clock_add(&e.clock, 1000);
  next_str(m, s, buf, sizeof(buf));
  assert_string_equal(buf, "INV-20270100001");
  next_str(y, s, buf, sizeof(buf));
  assert_memory_equal(buf, "20270000001", 11);
  /* 2026-07-01T03:59:59Z is still June 30 in New York (EDT, -4). */
  fake_clock_set(&e.clock, INT64_C(1782878399000));
  next_str(d, s, buf, sizeof(buf));
  assert_string_equal(buf, "202606300001");
  fake_clock_add(&e.clock, 1000);
  next_str(d, s, buf, sizeof(buf));
  assert_string_equal(buf, "202607010001");
  /* 2026-12-01T04:30:00Z is still November 30 (EST, -5). */
  fake_clock_set(&e.clock, INT64_C(1796099400000));
  next_str(d, s, buf, sizeof(buf));
  assert_string_equal(buf, "202611300001");
  frond_format_free(m);
  frond_format_free(y);
  frond_format_free(d);
  frond_seg_close(s);
  tmpdir_remove(e.dir);
}

/* Two digits hold 99 numbers a day: the 100th is SEQUENCE_EXHAUSTED, and
** stays so (never 00 or a wrap into the next day's); the next day starts
** again. */
static void test_exhausted_never_wraps(void **state) {
  env e;
  frond_seg *s;
  frond_format *f;
  frond_format_source src;
  frond_error err = {0, ""};
  char buf[64], many[10][16];
  (void)state;
  env_open(&e, "t", 7);
  fake_clock_set(&e.clock, INT64_C(1767225600000));
  s = seg_open(&e);
  src = (frond_format_source){NULL, s, NULL, 0};
  f = format_of("seq:tag=t,digits=2");
  for (int i = 1; i <= 99; i++) {
    char want[16];
    next_str(f, s, buf, sizeof(buf));
    snprintf(want, sizeof(want), "20260101%02d", i);
    assert_string_equal(buf, want);
  }
  for (int i = 0; i < 3; i++) {
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                     FROND_ESEQUENCE_EXHAUSTED);
    assert_non_null(strstr(err.message, "t:20260101"));
  }
  /* A batch is all or nothing too. */
  assert_int_equal(
      frond_format_next_n(f, &src, 10, many[0], sizeof(many[0]), &err),
      FROND_ESEQUENCE_EXHAUSTED);
  fake_clock_add(&e.clock, 86400000);
  next_str(f, s, buf, sizeof(buf));
  assert_string_equal(buf, "2026010201");
  assert_int_equal(
      frond_format_next_n(f, &src, 10, many[0], sizeof(many[0]), &err), 0);
  assert_string_equal(many[0], "2026010202");
  assert_string_equal(many[9], "2026010211");
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(e.dir);
}

/* A keyed sequence: numbers of one day are a permutation of its range, the
** same position on two days gives unrelated numbers, and they decode. */
static void test_keyed(void **state) {
  env e;
  frond_seg *s;
  frond_format *f;
  frond_format_value v;
  char a[64], b[64];
  (void)state;
  env_open(&e, "k", 50);
  fake_clock_set(&e.clock, INT64_C(1767225600000));
  s = seg_open(&e);
  f = format_of("seq:tag=k,digits=6,key=1,check=damm");
  {
    /* A keyed sequence issues once its key is checked in the tag's store,
    ** where the first check records it. */
    frond_format_source src = {NULL, s, NULL, 0};
    frond_error err = {0, ""};
    assert_int_equal(frond_format_next(f, &src, a, sizeof(a), &err),
                     FROND_EINVAL);
    assert_non_null(strstr(err.message, "not checked"));
    if (frond_format_check(f, &src, NULL, NULL, &err) != 0)
      fail_msg("check: %s", err.message);
  }
  next_str(f, s, a, sizeof(a));
  fake_clock_add(&e.clock, 86400000);
  next_str(f, s, b, sizeof(b));
  assert_int_equal(strlen(a), 16); /* date, version, 6 digits, check */
  assert_int_equal(a[8], '1');
  assert_true(strcmp(a + 9, b + 9) != 0); /* both are number 1 of a day */
  assert_int_equal(frond_format_decode(f, a, strlen(a), &v, NULL), 0);
  assert_int_equal(v.id, 1);
  assert_string_equal(v.period, "20260101");
  assert_int_equal(frond_format_decode(f, b, strlen(b), &v, NULL), 0);
  assert_int_equal(v.id, 1);
  assert_string_equal(v.period, "20260102");
  /* A batch (permuted side by side) holds numbers 2..301 of the day. */
  {
    frond_format_source src = {NULL, s, NULL, 0};
    char(*many)[20] = calloc(300, 20);
    assert_int_equal(frond_format_next_n(f, &src, 300, many[0], 20, NULL), 0);
    for (int i = 0; i < 300; i++) {
      assert_int_equal(
          frond_format_decode(f, many[i], strlen(many[i]), &v, NULL), 0);
      assert_int_equal(v.id, 2 + i);
    }
    free(many);
  }
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(e.dir);
}

/* A missing base row is TAG_NOT_FOUND naming the command that makes it. */
static void test_missing_base(void **state) {
  env e;
  frond_seg *s;
  frond_format *f;
  frond_format_source src;
  frond_error err = {0, ""};
  char buf[64];
  (void)state;
  env_open(&e, "other", 10);
  fake_clock_set(&e.clock, INT64_C(1767225600000));
  s = seg_open(&e);
  src = (frond_format_source){NULL, s, NULL, 0};
  f = format_of("seq:tag=orders,digits=6");
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                   FROND_ETAG_NOT_FOUND);
  assert_non_null(strstr(err.message, "frond tag create orders"));
  src.seg = NULL;
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                   FROND_EINVAL);
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(e.dir);
}

/* A period row deleted by hand while the period runs: making it again
** would start the day's numbers over at 1. The allocator that used it
** refuses instead. */
static void test_deleted_period_row_not_remade(void **state) {
  env e;
  frond_seg *s;
  frond_format *f;
  frond_format_source src;
  frond_store *st;
  frond_error err = {0, ""};
  char first[64], buf[64];
  (void)state;
  env_open(&e, "orders", 10);
  fake_clock_set(&e.clock, INT64_C(1767225600000));
  s = seg_open(&e);
  src = (frond_format_source){NULL, s, NULL, 0};
  f = format_of("seq:tag=orders,digits=6");
  next_str(f, s, first, sizeof(first));
  assert_int_equal(frond_store_open(&st, e.uri, NULL), 0);
  assert_int_equal(frond_store_tag_delete(st, "orders:20260101", NULL), 0);
  frond_store_close(st);
  assert_int_equal(frond_seg_refresh(s, NULL), 0);
  /* A new format object (a reload of the configuration) asks again. */
  frond_format_free(f);
  f = format_of("seq:tag=orders,digits=6");
  if (frond_format_next(f, &src, buf, sizeof(buf), &err) == 0)
    fail_msg("the deleted row was made again: %s after %s", buf, first);
  assert_int_equal(err.code, FROND_ETAG_NOT_FOUND);
  assert_non_null(strstr(err.message, "would repeat"));
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(e.dir);
}

/* With no_store, a period's first use fails with WOULD_BLOCK and makes
** nothing; once a blocking call has made the period (row and first
** segment), no_store calls are served; the next period is WOULD_BLOCK
** again. What an event loop relies on to keep store calls off it. */
static void test_no_store(void **state) {
  env e;
  frond_seg *s;
  frond_format *f;
  frond_format_source src;
  frond_error err = {0, ""};
  frond_tag_row row;
  frond_store *st;
  frond_tag_info *tags;
  size_t n;
  char buf[64];
  (void)state;
  env_open(&e, "orders", 10);
  fake_clock_set(&e.clock, INT64_C(1767225600000)); /* 2026-01-01 UTC */
  s = seg_open(&e);
  f = format_of("seq:tag=orders,digits=6");
  src = (frond_format_source){NULL, s, NULL, 1};
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                   FROND_EWOULD_BLOCK);
  assert_non_null(strstr(err.message, "orders:20260101"));
  assert_int_equal(frond_store_open(&st, e.uri, &err), 0);
  assert_int_equal(frond_store_tag_get(st, "orders:20260101", &row, &err),
                   FROND_ETAG_NOT_FOUND);
  src.no_store = 0;
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err), 0);
  assert_string_equal(buf, "20260101000001");
  /* Ready: the row is there and its first segment was loaded before the
  ** period counted as ready. */
  assert_int_equal(frond_store_tag_get(st, "orders:20260101", &row, &err), 0);
  assert_int_equal(frond_seg_tag_list(s, &tags, &n, &err), 0);
  for (size_t i = 0; i < n; i++)
    if (strcmp(tags[i].tag, "orders:20260101") == 0)
      assert_true(tags[i].current.ready);
  frond_free(tags);
  src.no_store = 1;
  for (int i = 2; i <= 25; i++) { /* across segments of 10 */
    char want[32];
    int rc = frond_format_next(f, &src, buf, sizeof(buf), &err);
    /* The next segment not loaded yet: nothing was taken, and the call is
    ** repeated where it may wait, as an event loop does on its pool. */
    if (rc == FROND_EWOULD_BLOCK) {
      assert_non_null(strstr(err.message, "not loaded yet"));
      src.no_store = 0;
      rc = frond_format_next(f, &src, buf, sizeof(buf), &err);
      src.no_store = 1;
    }
    assert_int_equal(rc, 0);
    snprintf(want, sizeof(want), "20260101%06d", i);
    assert_string_equal(buf, want);
  }
  fake_clock_add(&e.clock, 86400000);
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                   FROND_EWOULD_BLOCK);
  src.no_store = 0;
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err), 0);
  assert_string_equal(buf, "20260102000001");
  /* Making a period waits for its first segment: once it counts as ready,
  ** nothing is left to wait for on the store. */
  assert_int_equal(
      frond__seg_period_tag(s, "orders", "orders:20260103", 1000, &err), 0);
  assert_true(frond__seg_period_ready(s, "orders:20260103", 15));
  assert_int_equal(frond_seg_tag_list(s, &tags, &n, &err), 0);
  for (size_t i = 0; i < n; i++)
    if (strcmp(tags[i].tag, "orders:20260103") == 0)
      assert_true(tags[i].current.ready || tags[i].next.ready);
  frond_free(tags);
  frond_store_close(st);
  frond_format_free(f);
  frond_seg_close(s);
  tmpdir_remove(e.dir);
}

typedef struct node_run {
  frond_seg *seg;
  frond_format *f;
  char (*out)[32];
  int n;
  int rc;
} node_run;

static void *node_main(void *arg) {
  node_run *r = arg;
  frond_format_source src = {NULL, r->seg, NULL, 0};
  for (int i = 0; i < r->n && r->rc == 0; i += 10)
    r->rc =
        frond_format_next_n(r->f, &src, 10, r->out[i], sizeof(r->out[i]), NULL);
  return NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(a, b);
}

/* Two allocators on one tag and one SQLite file, as two nodes would be,
** two threads each, all starting on a period nobody has used: the
** period's row is created once (one INSERT wins, the other sees
** TAG_EXISTS) and no number is issued twice. */
static void test_two_nodes_one_file(void **state) {
  enum { NODES = 2, PER = 2, N = 3000 };
  env e;
  frond_seg *seg[NODES];
  frond_format *f[NODES];
  node_run r[NODES * PER];
  pthread_t th[NODES * PER];
  char(*all)[32] = calloc(NODES * PER * N, 32);
  frond_tag_row *rows;
  frond_store *st;
  size_t nrows, periods = 0;
  (void)state;
  env_open(&e, "orders", 5);
  fake_clock_set(&e.clock, INT64_C(1767225600000));
  for (int i = 0; i < NODES; i++) {
    seg[i] = seg_open(&e);
    f[i] = format_of("seq:tag=orders,digits=8");
  }
  for (int i = 0; i < NODES * PER; i++) {
    r[i] = (node_run){seg[i % NODES], f[i % NODES], all + i * N, N, 0};
    assert_int_equal(pthread_create(&th[i], NULL, node_main, &r[i]), 0);
  }
  for (int i = 0; i < NODES * PER; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(r[i].rc, 0);
  }
  qsort(all, NODES * PER * N, 32, cmp_str);
  for (int i = 1; i < NODES * PER * N; i++)
    if (strcmp(all[i - 1], all[i]) == 0)
      fail_msg("%s issued twice", all[i]);
  for (int i = 0; i < NODES; i++) {
    frond_format_free(f[i]);
    frond_seg_close(seg[i]);
  }
  assert_int_equal(frond_store_open(&st, e.uri, NULL), 0);
  assert_int_equal(frond_store_tag_list(st, &rows, &nrows, NULL), 0);
  for (size_t i = 0; i < nrows; i++)
    periods += strncmp(rows[i].tag, "orders:", 7) == 0;
  assert_int_equal(periods, 1);
  frond_free(rows);
  frond_store_close(st);
  free(all);
  tmpdir_remove(e.dir);
}

typedef struct batch_run {
  frond_seg *seg;
  frond_format *f;
  char (*out)[32];
  int cap, n, rc;
} batch_run;

/* Batches of 256 until the period is used up: every string kept. */
static void *batch_main(void *arg) {
  batch_run *r = arg;
  frond_format_source src = {NULL, r->seg, NULL, 0};
  frond_error err = {0, ""};
  while (r->n + 256 <= r->cap) {
    int rc = frond_format_next_n(r->f, &src, 256, r->out[r->n],
                                 sizeof(r->out[0]), &err);
    if (rc == FROND_ESEQUENCE_EXHAUSTED)
      break;
    if (rc != 0) {
      r->rc = rc;
      break;
    }
    r->n += 256;
  }
  return NULL;
}

/* A daily sequence on a multi: store of two databases, taken in batches
** by two allocators of two threads each, to the end of every day. A
** multi: store interleaves its members' blocks, so a later segment can
** lie below the one before: a batch is not increasing, and every number
** of it must be checked against the end, not only its last. */
static void test_multi_batches(void **state) {
  enum { NODES = 2, PER = 2, DAYS = 30, CAP = 100000 };
  env e;
  frond_seg *seg[NODES];
  frond_format *f[NODES];
  batch_run r[NODES * PER];
  pthread_t th[NODES * PER];
  char(*all)[32] = calloc(NODES * PER * CAP, 32);
  frond_store *st;
  frond_error err = {0, ""};
  int dups = 0, days_with = 0;
  (void)state;
  e.dir = tmpdir_make();
  snprintf(e.uri, sizeof(e.uri), "multi:sqlite://%s/a.db|sqlite://%s/b.db",
           e.dir, e.dir);
  assert_int_equal(frond_store_open(&st, e.uri, &err), 0);
  if (frond_store_tag_create(st, "orders", 100, 1, NULL, &err) != 0)
    fail_msg("create: %s", err.message);
  frond_store_close(st);
  fake_clock_set(&e.clock, INT64_C(1767225600000));
  for (int i = 0; i < NODES; i++) {
    seg[i] = seg_open(&e);
    f[i] = format_of("seq:tag=orders,digits=5");
  }
  for (int d = 0; d < DAYS; d++) {
    int total = 0, day = 0;
    for (int i = 0; i < NODES * PER; i++) {
      r[i] =
          (batch_run){seg[i % NODES], f[i % NODES], all + i * CAP, CAP, 0, 0};
      assert_int_equal(pthread_create(&th[i], NULL, batch_main, &r[i]), 0);
    }
    for (int i = 0; i < NODES * PER; i++) {
      pthread_join(th[i], NULL);
      if (r[i].rc != 0)
        fail_msg("day %d: %s", d, frond_err_name(r[i].rc));
      /* Packed one after the other for the sort. */
      memmove(all + total, r[i].out, (size_t)r[i].n * 32);
      total += r[i].n;
    }
    qsort(all, (size_t)total, 32, cmp_str);
    for (int i = 1; i < total; i++)
      day += strcmp(all[i - 1], all[i]) == 0;
    dups += day;
    days_with += day > 0;
    /* Most of the day's 99,999 numbers were issued. */
    assert_true(total > 90000);
    fake_clock_add(&e.clock, 86400000);
  }
  for (int i = 0; i < NODES; i++) {
    frond_format_free(f[i]);
    frond_seg_close(seg[i]);
  }
  free(all);
  tmpdir_remove(e.dir);
  if (dups > 0)
    fail_msg("%d numbers issued twice, on %d of %d days", dups, days_with,
             DAYS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_period_change),
      cmocka_unit_test(test_months_years_dst),
      cmocka_unit_test(test_exhausted_never_wraps),
      cmocka_unit_test(test_keyed),
      cmocka_unit_test(test_missing_base),
      cmocka_unit_test(test_no_store),
      cmocka_unit_test(test_deleted_period_row_not_remade),
      cmocka_unit_test(test_two_nodes_one_file),
      cmocka_unit_test(test_multi_batches),
  };
  return frond_run_tests(tests, NULL, NULL);
}
