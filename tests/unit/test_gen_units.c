/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_gen_units.c -- the snowflake generator's state word laid out as the
** ID: a unit's sequence ends in a gap (the node field's span) that no ID
** may come from, and the slow path crosses to the next unit. Layouts of
** two sequence bits make every fourth ID cross; node 0 makes a gap value
** show as another node, and the uniqueness check catches the rest.
*/
#include "gen_util.h"
#include "core/snowflake.h" /* frond__gen_hot, as earlier headers read it */

#include <stdlib.h>

/* Two sequence bits; node bits as twitter's (10), or none (no gap: a
** unit's sequence ends where the next unit begins). */
static int no_node_bits;

static frond_layout four_a_unit(void) {
  frond_layout l = *twitter();
  l.seq_bits = 2;
  if (no_node_bits)
    l.node_bits = l.dc_bits = l.worker_bits = 0;
  snprintf(l.name, sizeof(l.name), "custom");
  return l;
}

static frond_gen *make_four(fake_clock *c, uint64_t node, const char *hw) {
  frond_layout l = four_a_unit();
  frond_gen_options o = fake_options(c, 86400000, 0);
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  o.high_water_path = hw;
  if (frond_gen_create(&g, &l, node, &o, &err) != 0)
    fail_msg("create: %s", err.message);
  return g;
}

/* Every ID is node's, a sequence of its unit, above the one before. */
static void check_run(const frond_gen *g, uint64_t node, const int64_t *ids,
                      size_t n, int64_t *prev) {
  for (size_t i = 0; i < n; i++) {
    frond_fields f = fields(g, ids[i]);
    if (f.node != node || f.sequence > 3 || ids[i] <= *prev)
      fail_msg("ID %lld (node %llu, sequence %llu) after %lld",
               (long long)ids[i], (unsigned long long)f.node,
               (unsigned long long)f.sequence, (long long)*prev);
    *prev = ids[i];
  }
}

/* One thread, calls of 1 to 9 IDs: each crosses where its unit ends, a
** batch of more than a unit spans units, and nothing is skipped while
** the clock is frozen (the next ID follows the last, in value order). */
static void test_one_thread_crosses(void **state) {
  fake_clock c;
  frond_gen *g;
  int64_t ids[9], prev = -1;
  uint64_t count = 0;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_four(&c, 0, NULL);
  for (int k = 0; k < 3000; k++) {
    size_t n = (size_t)(k % 9) + 1;
    if (n == 1)
      assert_int_equal(frond_gen_next(g, &ids[0], NULL), 0);
    else
      assert_int_equal(frond_gen_next_n(g, n, ids, NULL), 0);
    check_run(g, 0, ids, n, &prev);
    count += n;
  }
  /* Four to a unit from T0, none skipped: the last ID is the count's. */
  assert_int_equal(fields(g, prev).unix_ms, T0 + (int64_t)(count - 1) / 4);
  assert_int_equal(fields(g, prev).sequence, (count - 1) % 4);
  assert_int_equal(frond_gen_high_water_ms(g), T0 + (int64_t)(count - 1) / 4);
  frond_gen_close(g, NULL);
}

typedef struct crosser {
  pthread_t thread;
  frond_gen *g;
  int index;
  size_t got;
  int64_t *ids; /* CALLS * 9 */
  char why[600];
} crosser;

enum { THREADS = 4, CALLS = 20000 };

static void *crosser_main(void *arg) {
  crosser *t = arg;
  int64_t prev = -1, run[9];
  for (int k = 0; k < CALLS; k++) {
    /* Mostly single IDs, as the hot path sees them; some batches. */
    size_t n = k % 5 != 4 ? 1 : (size_t)((k / 5 + t->index) % 9) + 1;
    frond_error err = {0, ""};
    int rc = n == 1 ? frond_gen_next(t->g, &run[0], &err)
                    : frond_gen_next_n(t->g, n, run, &err);
    if (rc != 0) {
      snprintf(t->why, sizeof(t->why), "call %d: %s", k, err.message);
      return NULL;
    }
    for (size_t i = 0; i < n; i++) {
      if (run[i] <= prev) {
        snprintf(t->why, sizeof(t->why), "ID %lld after %lld",
                 (long long)run[i], (long long)prev);
        return NULL;
      }
      t->ids[t->got++] = prev = run[i];
    }
  }
  return NULL;
}

static int cmp_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Threads crossing units together, through the hot path and the slow:
** no ID twice, none from a gap (node 0's IDs would show another node). */
static void test_threads_cross(void **state) {
  fake_clock c;
  frond_gen *g;
  crosser t[THREADS];
  int64_t *all;
  size_t total = 0;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_four(&c, 0, NULL);
  all = malloc(sizeof(int64_t) * THREADS * CALLS * 9);
  assert_non_null(all);
  for (int i = 0; i < THREADS; i++) {
    memset(&t[i], 0, sizeof(t[i]));
    t[i].g = g;
    t[i].index = i;
    t[i].ids = all + (size_t)i * CALLS * 9;
    assert_int_equal(pthread_create(&t[i].thread, NULL, crosser_main, &t[i]),
                     0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i].thread, NULL);
  for (int i = 0; i < THREADS; i++) {
    if (t[i].why[0] != '\0')
      fail_msg("thread %d: %s", i, t[i].why);
    memmove(all + total, t[i].ids, t[i].got * sizeof(int64_t));
    total += t[i].got;
  }
  qsort(all, total, sizeof(int64_t), cmp_id);
  for (size_t i = 0; i < total; i++) {
    frond_fields f = fields(g, all[i]);
    if (f.node != 0 || f.sequence > 3)
      fail_msg("ID %lld: node %llu, sequence %llu (a gap value)",
               (long long)all[i], (unsigned long long)f.node,
               (unsigned long long)f.sequence);
    if (i > 0 && all[i] == all[i - 1])
      fail_msg("ID %lld issued twice", (long long)all[i]);
  }
  assert_true(total >= (size_t)THREADS * CALLS);
  free(all);
  frond_gen_close(g, NULL);
}

/* l with a time field of time_bits whose last unit is T0 + 99. */
static frond_layout ending(frond_layout l, unsigned time_bits) {
  l.time_bits = time_bits;
  l.epoch_ms = T0 + 100 - ((int64_t)1 << time_bits);
  snprintf(l.name, sizeof(l.name), "custom");
  return l;
}

/* A 63-bit layout without node bits, whose last unit ends at bit 63: the
** generator ends a unit early (headroom for calls in flight), so using up
** its last unit, then a block and a resume, issue nothing more, and the
** word never reads as sealed. */
static void test_used_up_at_end(void **state) {
  fake_clock c;
  frond_layout l = ending(*twitter(), 40);
  frond_gen_options o = fake_options(&c, 5, 0);
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  int64_t id = -42, *buf = malloc(sizeof(int64_t) << 20);
  int rc = 0;
  (void)state;
  assert_non_null(buf);
  l.seq_bits = 23;
  l.node_bits = l.dc_bits = l.worker_bits = 0;
  fake_clock_set(&c, T0 + 99);
  assert_int_equal(frond_gen_create(&g, &l, 0, &o, &err),
                   FROND_ETIME_EXHAUSTED);
  fake_clock_set(&c, T0 + 98);
  if (frond_gen_create(&g, &l, 0, &o, &err) != 0)
    fail_msg("create: %s", err.message);
  for (int k = 0; k < 9 && rc == 0; k++)
    rc = frond_gen_next_n(g, (size_t)1 << 20, buf, &err);
  assert_int_equal(rc, FROND_ETIME_EXHAUSTED);
  assert_int_equal(fields(g, buf[(1 << 20) - 1]).unix_ms, T0 + 98);
  assert_int_equal(frond_gen_next(g, &id, NULL), FROND_ETIME_EXHAUSTED);
  frond__gen_block(g, FROND_ENODE_ID_LOST);
  frond__gen_resume(g, 0, INT64_MAX);
  assert_int_equal(atomic_load(&g->state) & FROND__GEN_SEALED, 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), FROND_ETIME_EXHAUSTED);
  assert_int_equal(frond_gen_high_water_ms(g), T0 + 98);
  assert_int_equal(id, -42);
  frond_gen_close(g, NULL);
  free(buf);
}

/* A call that read the limit just before another crossed to the next
** unit, and fetch-added a value there, is refused by its stale limit; it
** runs only after the others used that unit up and a third crossed on.
** Its value is still its own: it takes it, and the fence's twelve values
** are issued, each once. */
static void test_stale_limit_after_crossing(void **state) {
  fake_clock c;
  frond_gen_options o = fake_options(&c, 86400000, 0);
  frond__gen_fence f = {0, T0 + 2, 0, NULL, NULL}; /* units T0 .. T0 + 2 */
  frond_layout l = four_a_unit();
  frond_gen *g = NULL;
  frond__gen_hot *h;
  frond_error err = {0, ""};
  int64_t ids[16], prev = -1, id;
  size_t n = 0;
  uint64_t lim, v;
  (void)state;
  fake_clock_set(&c, T0);
  if (frond__gen_create_fenced(&g, &l, 3, &o, &f, &err) != 0)
    fail_msg("create: %s", err.message);
  h = (frond__gen_hot *)(void *)g;
  for (int k = 0; k < 4; k++) /* unit T0 */
    assert_int_equal(frond_gen_next(g, &ids[n++], NULL), 0);
  lim = __atomic_load_n(&h->limit, __ATOMIC_ACQUIRE); /* B reads the limit */
  assert_int_equal(frond_gen_next(g, &ids[n++], NULL), 0); /* A crosses */
  v = __atomic_fetch_add(&h->state, 1, __ATOMIC_RELAXED);  /* B's add */
  assert_true(v + 1 > lim);   /* B to the slow path, after the others: */
  for (int k = 0; k < 3; k++) /* the rest of T0 + 1, then T0 + 2 */
    assert_int_equal(frond_gen_next(g, &ids[n++], NULL), 0);
  assert_int_equal(frond__gen_next_slow(g, v, &ids[n++], NULL), 0);
  while (n < 16 && frond_gen_next(g, &id, NULL) == 0)
    ids[n++] = id;
  qsort(ids, n, sizeof(int64_t), cmp_id);
  check_run(g, 3, ids, n, &prev);
  assert_int_equal(n, 12);
  frond_gen_close(g, NULL);
}

/* ---- every value up to a fence, once ----------------------------------
**
** Six threads mixing single IDs and batches of 1 to 9 against a fence, on
** layouts of 1 and 2 sequence bits with 0, 1 and 10 node bits; then one
** thread takes what they left. Each value of each unit up to the fence
** must be issued exactly once: a call whose value a stale limit refused
** takes it in the slow path, even once another call crossed to a later
** unit (a crossing moves the cap, and jumps over nothing). */

enum { FILLERS = 6 };

typedef struct filler {
  pthread_t thread;
  frond_gen *g;
  int index;
  size_t got, cap;
  int64_t *ids;
  int other; /* a failure other than the fence's */
  char why[600];
} filler;

static void *filler_main(void *arg) {
  filler *t = arg;
  int64_t run[9];
  unsigned r = 12345u * (unsigned)(t->index + 1);
  int64_t deadline = frond__mono_ns() + 8 * INT64_C(1000000000);
  /* Until 200 calls in a row fail (the fence is reached) or the deadline. */
  for (int failed = 0; failed < 200 && frond__mono_ns() < deadline;) {
    frond_error err = {0, ""};
    size_t n;
    int rc;
    r = r * 1103515245u + 12345u;
    n = (r >> 16) % 3 != 0 ? 1 : (size_t)((r >> 8) % 9) + 1;
    rc = n == 1 ? frond_gen_next(t->g, &run[0], &err)
                : frond_gen_next_n(t->g, n, run, &err);
    if (rc != 0) {
      failed++;
      if (rc != FROND_ECOORD && t->other == 0) {
        t->other = rc;
        snprintf(t->why, sizeof(t->why), "%s", err.message);
      }
      continue;
    }
    failed = 0;
    for (size_t i = 0; i < n && t->got < t->cap; i++)
      t->ids[t->got++] = run[i];
  }
  return NULL;
}

static void fill_to_fence(unsigned node_bits, unsigned seq_bits) {
  fake_clock c;
  frond_layout l = *twitter();
  frond_gen_options o = fake_options(&c, 86400000, 0);
  int64_t units = 6000 >> seq_bits, id;
  frond__gen_fence f = {0, T0 + units - 1, 0, NULL, NULL};
  uint64_t per = UINT64_C(1) << seq_bits, node = node_bits != 0;
  size_t want = (size_t)units * per, total = 0;
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  filler t[FILLERS];
  int64_t *all = malloc(sizeof(int64_t) * FILLERS * (want + 16));
  assert_non_null(all);
  l.seq_bits = seq_bits;
  l.node_bits = node_bits;
  l.dc_bits = l.worker_bits = 0;
  snprintf(l.name, sizeof(l.name), "custom");
  fake_clock_set(&c, T0);
  if (frond__gen_create_fenced(&g, &l, node, &o, &f, &err) != 0)
    fail_msg("create: %s", err.message);
  for (int i = 0; i < FILLERS; i++) {
    memset(&t[i], 0, sizeof(t[i]));
    t[i].g = g;
    t[i].index = i;
    t[i].cap = want + 16;
    t[i].ids = all + (size_t)i * (want + 16);
    assert_int_equal(pthread_create(&t[i].thread, NULL, filler_main, &t[i]), 0);
  }
  for (int i = 0; i < FILLERS; i++)
    pthread_join(t[i].thread, NULL);
  for (int i = 0; i < FILLERS; i++) {
    if (t[i].other != 0)
      fail_msg("node bits %u, sequence bits %u: %s", node_bits, seq_bits,
               t[i].why);
    memmove(all + total, t[i].ids, t[i].got * sizeof(int64_t));
    total += t[i].got;
  }
  /* What a thread preempted inside a claim left, one call at a time. */
  while (total < want + 16 && frond_gen_next(g, &id, NULL) == 0)
    all[total++] = id;
  qsort(all, total, sizeof(int64_t), cmp_id);
  for (size_t i = 0; i < total; i++) {
    frond_fields fl = fields(g, all[i]);
    if (fl.node != node || fl.sequence >= per || fl.unix_ms > T0 + units - 1)
      fail_msg("ID %lld: node %llu, sequence %llu, at T0 + %lld ms",
               (long long)all[i], (unsigned long long)fl.node,
               (unsigned long long)fl.sequence, (long long)(fl.unix_ms - T0));
    if (i > 0 && all[i] == all[i - 1])
      fail_msg("ID %lld issued twice", (long long)all[i]);
  }
  if (total != want)
    fail_msg("node bits %u, sequence bits %u: %zu IDs up to the fence, not "
             "%zu",
             node_bits, seq_bits, total, want);
  frond_gen_close(g, NULL);
  free(all);
}

static void test_fill_to_fence(void **state) {
  static const unsigned node_bits[] = {0, 1, 10}, seq_bits[] = {1, 2};
  (void)state;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 2; b++)
      fill_to_fence(node_bits[a], seq_bits[b]);
}

/* ---- failing calls do not push the word up ----------------------------
**
** Threads that keep calling while every call fails (the layout's end, a
** block) each hold at most one value at a time: once they stop, the word
** lies at most that many values past where the failures began, however
** many calls failed. (When each failed call with a claim above it left a
** range for a give-back that never came, the word climbed with every
** call: past the seal bit at a layout's end, where a resume then issued
** IDs of the epoch.) */

enum { STORMERS = 4, STORM_CALLS = 20000 };

typedef struct stormer {
  pthread_t thread;
  frond_gen *g;
  int want; /* the only answer expected */
  int other;
} stormer;

static void *stormer_main(void *arg) {
  stormer *t = arg;
  int64_t id;
  for (int k = 0; k < STORM_CALLS; k++) {
    int rc = frond_gen_next(t->g, &id, NULL);
    if (rc != t->want)
      t->other = rc;
  }
  return NULL;
}

static void storm(frond_gen *g, int want) {
  stormer t[STORMERS];
  for (int i = 0; i < STORMERS; i++) {
    memset(&t[i], 0, sizeof(t[i]));
    t[i].g = g;
    t[i].want = want;
    assert_int_equal(pthread_create(&t[i].thread, NULL, stormer_main, &t[i]),
                     0);
  }
  for (int i = 0; i < STORMERS; i++) {
    pthread_join(t[i].thread, NULL);
    assert_int_equal(t[i].other, 0);
  }
}

static uint64_t word(frond_gen *g) {
  return atomic_load(&g->state) & ~FROND__GEN_SEALED;
}

static void test_failing_calls_do_not_climb(void **state) {
  fake_clock c;
  /* a gap of 4 values after 4 */
  frond_layout l = ending(four_a_unit(), 30);
  frond_gen_options o = fake_options(&c, 5, 0);
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  int64_t id;
  uint64_t before;
  (void)state;
  l.node_bits = 1;
  l.dc_bits = l.worker_bits = 0;
  fake_clock_set(&c, T0 + 99);
  if (frond_gen_create(&g, &l, 1, &o, &err) != 0)
    fail_msg("create: %s", err.message);
  for (int k = 0; k < 4; k++) /* the last unit */
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  before = word(g);
  storm(g, FROND_ETIME_EXHAUSTED);
  if (word(g) > before + STORMERS)
    fail_msg("the word climbed %llu values past the end",
             (unsigned long long)(word(g) - before));
  frond__gen_block(g, FROND_ENODE_ID_LOST);
  storm(g, FROND_ENODE_ID_LOST);
  if (word(g) > before + STORMERS)
    fail_msg("blocked: the word climbed %llu values past the end",
             (unsigned long long)(word(g) - before));
  frond__gen_resume(g, 0, INT64_MAX);
  assert_int_equal(frond_gen_next(g, &id, NULL), FROND_ETIME_EXHAUSTED);
  frond_gen_close(g, NULL);

  /* In the middle of the layout's life: a block, calls failing, a resume;
  ** the next ID follows the last one, not units ahead. */
  fake_clock_set(&c, T0);
  g = make_four(&c, 1, NULL);
  for (int k = 0; k < 4; k++) /* T0 used up: the word at its gap */
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  before = word(g);
  frond__gen_block(g, FROND_ENODE_ID_LOST);
  storm(g, FROND_ENODE_ID_LOST);
  if (word(g) > before + STORMERS)
    fail_msg("blocked: the word climbed %llu values",
             (unsigned long long)(word(g) - before));
  frond__gen_resume(g, 0, INT64_MAX);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 1);
  assert_int_equal(fields(g, id).sequence, 0);
  frond_gen_close(g, NULL);
}

/* frond_gen_next as earlier headers inlined it into programs built then:
** the ID from a packed word, by the fields it read. */
static int next_packed(frond_gen *g, int64_t *id) {
  frond__gen_hot *h = (frond__gen_hot *)(void *)g;
  uint64_t lim = __atomic_load_n(&h->limit, __ATOMIC_ACQUIRE);
  uint64_t v = __atomic_fetch_add(&h->state, 1, __ATOMIC_RELAXED);
  if (v + 1 > lim)
    return frond__gen_next_slow(g, v, id, NULL);
  *id = (int64_t)(((v >> h->compat_bits_) << h->time_shift) | h->node_part |
                  (v & h->compat_mask_));
  return 0;
}

/* A program built with an earlier header and run on this library issues the
** same IDs as one built now: calls of both kinds alternate on one
** generator and make one increasing run of node 5's IDs. */
static void test_packed_inline(void **state) {
  fake_clock c;
  frond_gen *g;
  int64_t id, prev = -1;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_four(&c, 5, NULL);
  for (int k = 0; k < 2000; k++) {
    assert_int_equal(
        k % 3 == 0 ? next_packed(g, &id) : frond_gen_next(g, &id, 0), 0);
    check_run(g, 5, &id, 1, &prev);
    assert_int_equal(fields(g, id).unix_ms, T0 + k / 4);
    assert_int_equal(fields(g, id).sequence, (uint64_t)k % 4);
  }
  frond_gen_close(g, NULL);
}

/* A clean close at a unit's end, and one in its middle: the restart goes
** on right after the last ID, never below it, and wastes nothing. */
static void test_restart_at_unit_end(void **state) {
  fake_clock c;
  frond_gen *g;
  char *dir = tmpdir_make(), path[512];
  int64_t id, last = -1;
  (void)state;
  snprintf(path, sizeof(path), "%s/hw", dir);
  fake_clock_set(&c, T0);
  for (int round = 0; round < 4; round++) {
    int take = round % 2 == 0 ? 4 : 6; /* a unit whole, then half of one */
    g = make_four(&c, 0, path);
    for (int k = 0; k < take; k++) {
      int64_t prev = last;
      assert_int_equal(frond_gen_next(g, &id, NULL), 0);
      check_run(g, 0, &id, 1, &prev);
      if (k == 0 && last >= 0) { /* right after the last, or a unit on */
        frond_fields a = fields(g, last), b = fields(g, id);
        int64_t gap = (b.unix_ms - a.unix_ms) * 4 + (int64_t)b.sequence -
                      (int64_t)a.sequence;
        assert_true(gap == 1 || (a.sequence == 3 && b.sequence == 0));
      }
      last = id;
    }
    assert_int_equal(frond_gen_close(g, NULL), 0);
  }
  tmpdir_remove(dir);
}

/* The same without node bits, where no gap lies between two units. */
static void test_no_node_bits(void **state) {
  no_node_bits = 1;
  test_one_thread_crosses(state);
  test_threads_cross(state);
  test_restart_at_unit_end(state);
}

static int with_node_bits(void **state) {
  (void)state;
  no_node_bits = 0; /* also after a failure inside test_no_node_bits */
  return 0;
}

/* A layout whose time runs out 100 ms after the fake clock's start, its
** bits all used (time 30 + node 10 + sequence 23 = 63): a raise of the
** floor into its last unit (another holder's fence there) must leave no
** ID to issue, a state word below the seal bit, and the high water at
** the last unit, through a block and a resume as well. */
static void test_raise_at_layout_end(void **state) {
  fake_clock c;
  frond_layout l = ending(*twitter(), 30);
  frond_gen_options o = fake_options(&c, 5, 0);
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  int64_t id = -42, last_ms;
  (void)state;
  l.seq_bits = 23;
  fake_clock_set(&c, T0);
  if (frond_gen_create(&g, &l, 1, &o, &err) != 0)
    fail_msg("create: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  last_ms = frond_layout_end_ms(&l) - 1;
  frond__gen_raise_floor(g, last_ms);
  assert_int_equal(atomic_load(&g->state) & FROND__GEN_SEALED, 0);
  assert_int_equal(frond_gen_high_water_ms(g), last_ms);
  assert_int_equal(frond_gen_next(g, &id, NULL), FROND_ETIME_EXHAUSTED);
  frond__gen_block(g, FROND_ENODE_ID_LOST);
  frond__gen_resume(g, 0, INT64_MAX);
  assert_int_equal(frond_gen_next(g, &id, NULL), FROND_ETIME_EXHAUSTED);
  assert_int_equal(frond_gen_high_water_ms(g), last_ms);
  frond_gen_close(g, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_thread_crosses),
      cmocka_unit_test(test_threads_cross),
      cmocka_unit_test_teardown(test_no_node_bits, with_node_bits),
      cmocka_unit_test(test_raise_at_layout_end),
      cmocka_unit_test(test_used_up_at_end),
      cmocka_unit_test(test_stale_limit_after_crossing),
      cmocka_unit_test(test_fill_to_fence),
      cmocka_unit_test(test_failing_calls_do_not_climb),
      cmocka_unit_test(test_packed_inline),
      cmocka_unit_test(test_restart_at_unit_end),
  };
  return frond_run_tests(tests, NULL, NULL);
}
