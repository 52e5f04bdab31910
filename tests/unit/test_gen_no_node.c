/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_gen_no_node.c -- the snowflake generator on a layout with no node
** bits (Simpleflake's 41 time + 22 sequence bits): time in the top bits,
** the sequence right below, node 0 the only one, and under threads every
** ID unique and each thread's increasing.
*/
#include "gen_util.h"

#define NO_NODE "time=41,node=0,seq=22"
#define THREADS 3
#define PER_THREAD 400000
#define BLOCK 500

static frond_layout no_node(void) {
  frond_layout l;
  frond_error err = {0, ""};
  if (frond_layout_parse(NO_NODE, &l, &err) != 0)
    fail_msg("parse: %s", err.message);
  return l;
}

/* On a fake clock the ID is exactly (units since epoch) << 22 | sequence. */
static void test_fields_exact(void **state) {
  frond_layout l = no_node();
  fake_clock c;
  frond_gen_options o;
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  int64_t id = -1, ids[3], t;
  (void)state;
  fake_clock_set(&c, T0);
  o = fake_options(&c, 1000, 10);
  assert_int_equal(frond_gen_create(&g, &l, 0, &o, &err), 0);
  t = T0 - l.epoch_ms;
  assert_int_equal(frond_gen_next(g, &id, &err), 0);
  assert_int_equal(id >> 22, t);
  assert_int_equal(id & ((INT64_C(1) << 22) - 1), 0);
  assert_int_equal(frond_gen_next_n(g, 3, ids, &err), 0);
  assert_int_equal(ids[0], (t << 22) | 1);
  assert_int_equal(ids[2], (t << 22) | 3);
  assert_int_equal(fields(g, ids[2]).node, 0);
  assert_int_equal(fields(g, ids[2]).sequence, 3);
  assert_int_equal(fields(g, ids[2]).unix_ms, T0);
  /* The next unit starts the sequence again, above everything before. */
  fake_clock_add(&c, 1);
  frond__gen_tick(g);
  assert_int_equal(frond_gen_next(g, &id, &err), 0);
  assert_int_equal(id, (t + 1) << 22);
  assert_int_equal(frond_gen_close(g, NULL), 0);
  /* Node 1 is not a node of this layout. */
  assert_int_equal(frond_gen_create(&g, &l, 1, &o, &err), FROND_ENODE_RANGE);
  assert_non_null(strstr(err.message, "maximum 0"));
}

typedef struct worker {
  frond_gen *g;
  int64_t *ids;
  size_t n;
  int blocks;
  frond_error err; /* the first failure; cmocka asserts only in main */
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  w->n = 0;
  while (w->n < PER_THREAD) {
    size_t k = w->blocks ? BLOCK : 1;
    if (frond_gen_next_n(w->g, k, w->ids + w->n, &w->err) != 0)
      return NULL;
    w->n += k;
  }
  return NULL;
}

/* The real clock, three threads (one by blocks): no ID twice, each
** thread's strictly increasing, every one on node 0 at about now. */
static void test_threads_unique(void **state) {
  frond_layout l = no_node();
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  worker w[THREADS];
  pthread_t t[THREADS];
  size_t total = 0, at = 0;
  int64_t *all, before, after;
  (void)state;
  /* Before the generator reads the clock: a loaded machine may run this
  ** thread a few milliseconds after the create, and the first IDs carry
  ** the create's time until the ticker follows the clock. */
  before = frond_clock_realtime(NULL);
  assert_int_equal(frond_gen_create(&g, &l, 0, NULL, &err), 0);
  for (int i = 0; i < THREADS; i++) {
    w[i].g = g;
    w[i].blocks = i == THREADS - 1;
    w[i].err.code = 0;
    w[i].ids = malloc(sizeof(int64_t) * PER_THREAD);
    assert_non_null(w[i].ids);
    assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    total += w[i].n;
  }
  after = frond_clock_realtime(NULL);
  for (int i = 0; i < THREADS; i++)
    if (w[i].err.code != 0)
      fail_msg("thread %d, ID %zu: %s", i, w[i].n, w[i].err.message);
  for (int i = 0; i < THREADS; i++) {
    for (size_t k = 1; k < w[i].n; k++)
      if (w[i].ids[k] <= w[i].ids[k - 1])
        fail_msg("thread %d: ID %zu not above the one before", i, k);
    for (size_t k = 0; k < w[i].n; k += w[i].n - 1) {
      frond_fields f = fields(g, w[i].ids[k]);
      assert_int_equal(f.node, 0);
      /* 1.2 M IDs at 4.2 M per ms: borrowing stays within a few units. */
      assert_true(f.unix_ms >= before - 1 && f.unix_ms <= after + 1000);
    }
  }
  all = malloc(sizeof(int64_t) * total);
  assert_non_null(all);
  for (int i = 0; i < THREADS; i++) {
    memcpy(all + at, w[i].ids, sizeof(int64_t) * w[i].n);
    at += w[i].n;
  }
  qsort(all, total, sizeof(int64_t), cmp_i64);
  for (size_t k = 1; k < total; k++)
    if (all[k] == all[k - 1])
      fail_msg("duplicate ID %lld", (long long)all[k]);
  assert_int_equal(total, (size_t)THREADS * PER_THREAD);
  free(all);
  for (int i = 0; i < THREADS; i++)
    free(w[i].ids);
  assert_int_equal(frond_gen_close(g, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields_exact),
      cmocka_unit_test(test_threads_unique),
  };
  return frond_run_tests(tests, NULL, NULL);
}
