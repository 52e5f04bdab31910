/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_snowflake.c -- the snowflake generator: uniqueness, order, the clock
** policy, time-bits exhaustion and the high-water file across restarts.
*/
#include "gen_util.h"
#include "core/high_water.h"

#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* The deprecated spellings still compile and mean the same. */
_Static_assert(FROND_DEFAULT_MAX_AHEAD_MS ==
                   FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS,
               "max_ahead alias");
_Static_assert(FROND_DEFAULT_MAX_WAIT_MS == FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS,
               "max_wait alias");
_Static_assert(FROND_DEFAULT_WINDOW_MS == FROND_SNOWFLAKE_DEFAULT_WINDOW_MS,
               "window alias");
_Static_assert(offsetof(frond_gen_options, highwater_path) ==
                   offsetof(frond_gen_options, high_water_path),
               "high_water_path alias");

/* ---- uniqueness under threads ------------------------------------------ */

#define PER_THREAD 5000000
#define BLOCK 1000
#define BLOCKS 2000

typedef struct worker {
  frond_gen *g;
  int64_t *ids;
  size_t n;
  int use_blocks;
  frond_error err; /* the first failure; cmocka asserts only in main */
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  w->n = 0;
  if (w->use_blocks) {
    for (size_t b = 0; b < BLOCKS; b++, w->n += BLOCK)
      if (frond_gen_next_n(w->g, BLOCK, w->ids + w->n, &w->err) != 0)
        return NULL;
  } else {
    for (; w->n < PER_THREAD; w->n++)
      if (frond_gen_next(w->g, &w->ids[w->n], &w->err) != 0)
        return NULL;
  }
  return NULL;
}

static void test_threads_unique(void **state) {
  frond_gen *g;
  worker w[3];
  pthread_t t[3];
  size_t total = 0, at = 0;
  int64_t *all;
  (void)state;
  assert_int_equal(frond_gen_create(&g, twitter(), 7, NULL, NULL), 0);
  for (int i = 0; i < 3; i++) {
    w[i].g = g;
    w[i].use_blocks = i == 2;
    w[i].err.code = 0;
    w[i].ids = malloc(sizeof(int64_t) * PER_THREAD);
    assert_non_null(w[i].ids);
    assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    total += w[i].n;
  }
  for (int i = 0; i < 3; i++)
    if (w[i].err.code != 0)
      fail_msg("thread %d, call %zu: %s", i, w[i].n, w[i].err.message);
  /* Each thread's IDs strictly increase, and carry node 7. */
  for (int i = 0; i < 3; i++) {
    for (size_t k = 1; k < w[i].n; k++)
      if (w[i].ids[k] <= w[i].ids[k - 1])
        fail_msg("thread %d: ID %zu not above the one before", i, k);
    assert_int_equal(fields(g, w[i].ids[0]).node, 7);
  }
  all = malloc(sizeof(int64_t) * total);
  for (int i = 0; i < 3; i++) {
    memcpy(all + at, w[i].ids, sizeof(int64_t) * w[i].n);
    at += w[i].n;
  }
  qsort(all, total, sizeof(int64_t), cmp_i64);
  for (size_t k = 1; k < total; k++)
    if (all[k] == all[k - 1])
      fail_msg("duplicate ID %lld", (long long)all[k]);
  /* A next_n block is contiguous among everything issued: no other ID lies
  ** between its first and last. */
  for (size_t b = 0; b < BLOCKS; b++) {
    int64_t *blk = w[2].ids + b * BLOCK;
    int64_t *pos = bsearch(&blk[0], all, total, sizeof(int64_t), cmp_i64);
    assert_non_null(pos);
    assert_true(pos + BLOCK <= all + total);
    assert_memory_equal(pos, blk, sizeof(int64_t) * BLOCK);
  }
  free(all);
  for (int i = 0; i < 3; i++)
    free(w[i].ids);
  assert_int_equal(frond_gen_close(g, NULL), 0);
}

/* ---- the clock policy, with a fake clock ------------------------------- */

static void test_same_unit_and_jump(void **state) {
  fake_clock c;
  frond_gen *g;
  int64_t a = 0, b = 0;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fake(&c, 1000, 10, 3);
  assert_int_equal(frond_gen_next(g, &a, NULL), 0);
  assert_int_equal(frond_gen_next(g, &b, NULL), 0);
  assert_int_equal(fields(g, a).unix_ms, T0);
  assert_int_equal(fields(g, b).unix_ms, T0);
  assert_int_equal(fields(g, b).sequence, fields(g, a).sequence + 1);
  assert_int_equal(fields(g, a).node, 3);
  /* Forward jump: the next ID carries the new time, sequence from 0. */
  fake_clock_add(&c, 5000);
  frond__gen_tick(g);
  assert_int_equal(frond_gen_next(g, &b, NULL), 0);
  assert_int_equal(fields(g, b).unix_ms, T0 + 5000);
  assert_int_equal(fields(g, b).sequence, 0);
  assert_true(b > a);
  frond_gen_close(g, NULL);
}

static void test_rollback(void **state) {
  static const int64_t small[] = {1, 50};
  fake_clock c;
  frond_gen *g;
  int64_t prev, id = -42;
  frond_error err = {0, ""};
  frond_gen_stats st;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fake(&c, 1000, 10, 1);
  assert_int_equal(frond_gen_next(g, &prev, NULL), 0);
  /* Going back by 1 ms or 50 ms is within max_ahead: IDs keep coming,
  ** increasing, with the logical time (which never goes back). */
  for (size_t i = 0; i < 2; i++) {
    fake_clock_add(&c, -small[i]);
    frond__gen_tick(g);
    for (int k = 0; k < 100; k++) {
      assert_int_equal(frond_gen_next(g, &id, NULL), 0);
      assert_true(id > prev);
      assert_true(fields(g, id).unix_ms >= T0);
      prev = id;
    }
  }
  /* Back by 10 s: far beyond max_ahead + max_wait, fails at once with no
  ** ID. */
  fake_clock_set(&c, T0 - 10000);
  frond__gen_tick(g);
  id = -42;
  {
    /* Counted, not timed: a call that waited for the clock adds one to
    ** the generator's waits, whatever the machine's load. */
    frond_gen_stats before;
    frond_gen_stats_get(g, &before);
    assert_int_equal(frond_gen_next(g, &id, &err), FROND_ECLOCK_BEHIND);
    frond_gen_stats_get(g, &st);
    assert_int_equal(st.waits, before.waits); /* did not wait */
  }
  assert_int_equal(id, -42);
  assert_int_equal(err.code, FROND_ECLOCK_BEHIND);
  assert_non_null(strstr(err.message, "behind"));
  {
    int64_t blk[4] = {-1, -1, -1, -1};
    assert_int_equal(frond_gen_next_n(g, 4, blk, NULL), FROND_ECLOCK_BEHIND);
    assert_int_equal(blk[0], -1);
  }
  frond_gen_stats_get(g, &st);
  assert_true(st.clock_behind >= 2);
  /* Once the clock is back, IDs resume above everything before. */
  fake_clock_set(&c, T0 + 1);
  frond__gen_tick(g);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id > prev);
  frond_gen_close(g, NULL);
}

static void test_overflow_borrows(void **state) {
  fake_clock c;
  frond_gen *g;
  int64_t id = 0, prev = -1;
  frond_gen_stats st;
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fake(&c, 1000, 10, 0);
  for (int k = 0; k < 4096; k++) {
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
    assert_int_equal(fields(g, id).unix_ms, T0);
    assert_true(id > prev);
    prev = id;
  }
  /* The 4097th ID borrows the next millisecond. */
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 1);
  assert_int_equal(fields(g, id).sequence, 0);
  frond__gen_tick(g);
  frond_gen_stats_get(g, &st);
  assert_int_equal(st.borrowed, 1);
  assert_int_equal(st.ahead_ms, 1);
  frond_gen_close(g, NULL);
}

typedef struct advancer {
  fake_clock *c;
  _Atomic int stop;
  int64_t step_ms;
  int64_t until_ms; /* stop moving at this time (0: never) */
} advancer;

static void *advance_main(void *arg) {
  advancer *a = arg;
  while (!atomic_load(&a->stop)) {
    frond__sleep_ns(1000000);
    if (a->until_ms == 0 || fake_clock_read(a->c) < a->until_ms)
      fake_clock_add(a->c, a->step_ms);
  }
  return NULL;
}

static void test_ahead_waits_then_succeeds(void **state) {
  fake_clock c;
  frond_gen *g;
  int64_t id = 0;
  frond_gen_stats st;
  advancer a;
  pthread_t t;
  frond_error err = {0, ""};
  (void)state;
  fake_clock_set(&c, T0);
  /* max_ahead 5 ms: 6 units of 4096 IDs may be issued at T0 without
  ** waiting. */
  g = make_fake(&c, 5, 2000, 0);
  for (int k = 0; k < 6 * 4096; k++)
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_int_equal(fields(g, id).unix_ms, T0 + 5);
  frond_gen_stats_get(g, &st);
  assert_int_equal(st.waits, 0);
  /* The next one needs the wall clock at T0 + 1: it waits while another
  ** thread moves the fake clock there (and no further: where the clock
  ** is when the call wakes must not decide the ID). */
  a.c = &c;
  a.stop = 0;
  a.step_ms = 1;
  a.until_ms = T0 + 1;
  assert_int_equal(pthread_create(&t, NULL, advance_main, &a), 0);
  assert_int_equal(frond_gen_next(g, &id, &err), 0);
  atomic_store(&a.stop, 1);
  pthread_join(t, NULL);
  assert_int_equal(fields(g, id).unix_ms, T0 + 6);
  assert_true(fields(g, id).unix_ms <= fake_clock_read(&c) + 5);
  frond_gen_stats_get(g, &st);
  assert_int_equal(st.waits, 1);
  frond_gen_close(g, NULL);
}

static void test_still_behind_after_max_wait(void **state) {
  fake_clock c;
  frond_gen *g;
  int64_t id = -42, t;
  frond_error err = {0, ""};
  (void)state;
  fake_clock_set(&c, T0);
  g = make_fake(&c, 5, 30, 0);
  {
    int64_t blk[4096];
    for (int k = 0; k < 6; k++)
      assert_int_equal(frond_gen_next_n(g, 4096, blk, NULL), 0);
  }
  /* 1 ms short and the clock frozen: waits max_wait, then fails. */
  t = frond__mono_ns();
  assert_int_equal(frond_gen_next(g, &id, &err), FROND_ECLOCK_BEHIND);
  t = frond__mono_ns() - t;
  assert_true(t >= 25 * 1000000);
  assert_true(t < 2000 * 1000000LL);
  assert_int_equal(id, -42);
  frond_gen_close(g, NULL);
}

static void test_exhaustion(void **state) {
  fake_clock c;
  frond_gen *g = NULL;
  frond_layout l;
  frond_gen_options o;
  frond_error err = {0, ""};
  int64_t id = -42, blk[8];
  (void)state;
  /* 20 bits of ms from an epoch 2^20 - 3 ms before the fake now: three
  ** units left (the current one and two more). */
  assert_int_equal(
      frond_layout_parse("time=20,node=31,seq=12,epoch=0", &l, NULL), 0);
  l.epoch_ms = T0 - ((INT64_C(1) << 20) - 3);
  fake_clock_set(&c, T0);
  frond_gen_options_init(&o);
  o.clock = fake_clock_read;
  o.clock_ctx = &c;
  assert_int_equal(frond_gen_create(&g, &l, 1, &o, &err), 0);
  /* Borrowing cannot go past the last unit: 3 units of 4096. */
  for (int k = 0; k < 3 * 4096; k++)
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id > 0);
  assert_int_equal(frond_gen_next(g, &id, &err), FROND_ETIME_EXHAUSTED);
  assert_non_null(strstr(err.message, "ran out"));
  assert_int_equal(frond_gen_next_n(g, 8, blk, &err), FROND_ETIME_EXHAUSTED);
  /* The wall clock passing the end: still exhausted, never wrapped. */
  fake_clock_add(&c, 10);
  frond__gen_tick(g);
  assert_int_equal(frond_gen_next(g, &id, &err), FROND_ETIME_EXHAUSTED);
  frond_gen_close(g, NULL);
  /* Creating one after the end fails at once. */
  assert_int_equal(frond_gen_create(&g, &l, 1, &o, &err),
                   FROND_ETIME_EXHAUSTED);
  /* Baidu's preset, on the real clock: ran out on 2024-11-20. */
  assert_int_equal(frond_gen_create(&g, preset("baidu"), 1, NULL, &err),
                   FROND_ETIME_EXHAUSTED);
  assert_non_null(strstr(err.message, "2024-11-20"));
}

static void test_real_clock_fields(void **state) {
  frond_gen *g;
  int64_t id = 0;
  (void)state;
  assert_int_equal(frond_gen_create(&g, twitter(), 1023, NULL, NULL), 0);
  for (int k = 0; k < 1000; k++) {
    int64_t now;
    assert_int_equal(frond_gen_next(g, &id, NULL), 0);
    now = frond_clock_realtime(NULL);
    assert_int_equal(fields(g, id).node, 1023);
    assert_int_equal(fields(g, id).datacenter, 31);
    assert_int_equal(fields(g, id).worker, 31);
    assert_true(fields(g, id).unix_ms <=
                now + FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS);
    /* The ticker follows the clock about every millisecond. */
    assert_true(fields(g, id).unix_ms >= now - 200);
    if (k % 100 == 0)
      frond__sleep_ns(200000);
  }
  frond_gen_close(g, NULL);
}

static void test_create_errors(void **state) {
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  frond_gen_options o;
  frond_layout l = *twitter();
  int64_t blk[1];
  (void)state;
  assert_int_equal(frond_gen_create(&g, twitter(), 1024, NULL, &err),
                   FROND_ENODE_RANGE);
  assert_non_null(strstr(err.message, "1024"));
  assert_non_null(strstr(err.message, "1023"));
  l.seq_bits = 13; /* 64 bits */
  assert_int_equal(frond_gen_create(&g, &l, 1, NULL, &err),
                   FROND_ELAYOUT_INVALID);
  frond_gen_options_init(&o);
  o.max_ahead_ms = -1;
  assert_int_equal(frond_gen_create(&g, twitter(), 1, &o, &err), FROND_EINVAL);
  assert_null(g);
  assert_int_equal(frond_gen_create(&g, twitter(), 1, NULL, NULL), 0);
  assert_int_equal(frond_gen_next_n(g, 0, blk, &err), FROND_ECOUNT_INVALID);
  frond_gen_close(g, NULL);
}

static void test_blocked(void **state) {
  frond_gen *g;
  int64_t id = -1;
  frond_error err = {0, ""};
  (void)state;
  assert_int_equal(frond_gen_create(&g, twitter(), 2, NULL, NULL), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  frond__gen_block(g, FROND_ENODE_ID_LOST);
  id = -1;
  assert_int_equal(frond_gen_next(g, &id, &err), FROND_ENODE_ID_LOST);
  assert_int_equal(id, -1);
  frond__gen_resume(g, 0, INT64_MIN);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id > 0);
  frond_gen_close(g, NULL);
}

/* With the default max_wait, a coarse layout waits for its next unit
** once borrowing is used up, instead of failing. */
static void test_coarse_unit_waits(void **state) {
  frond_gen *g;
  frond_gen_options o;
  frond_layout l;
  int64_t blk[256];
  frond_error err = {0, ""};
  (void)state;
  assert_int_equal(frond_layout_parse("sonyflake", &l, NULL), 0);
  frond_gen_options_init(&o);
  o.max_ahead_ms = 20; /* two units of 10 ms */
  assert_int_equal(frond_gen_create(&g, &l, 1, &o, NULL), 0);
  /* 10 units' worth: several times more than max_ahead allows at once. */
  for (int k = 0; k < 10; k++)
    if (frond_gen_next_n(g, 256, blk, &err) != 0)
      fail_msg("block %d: %s", k, err.message);
  frond_gen_close(g, NULL);
}

static void test_start_after(void **state) {
  frond_gen *g;
  frond__gen_fence f;
  int64_t id = 0, after = frond_clock_realtime(NULL) + 300;
  (void)state;
  memset(&f, 0, sizeof(f));
  f.start_after_ms = after;
  f.fence_ms = INT64_MAX;
  assert_int_equal(frond__gen_create_fenced(&g, twitter(), 2, NULL, &f, NULL),
                   0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(fields(g, id).unix_ms > after);
  frond_gen_close(g, NULL);
}

/* ---- the high-water file ----------------------------------------------- */

static char *hw_path(const char *dir) {
  char *p = malloc(600);
  snprintf(p, 600, "%s/frond-node-5.hw", dir);
  return p;
}

static frond_gen *make_hw(const char *path, frond_error *err, int *rc) {
  frond_gen_options o;
  frond_gen *g = NULL;
  frond_gen_options_init(&o);
  o.high_water_path = path;
  *rc = frond_gen_create(&g, twitter(), 5, &o, err);
  return g;
}

/* A clean restart starts at once (a start from the reservation would
** wait for the clock, up to max_ahead): timed, so the file lives in
** memory, where an fsync does not wait on a loaded disk. */
static void test_clean_restart(void **state) {
  char *dir = tmpdir_make_mem(), *path = hw_path(dir);
  frond_error err = {0, ""};
  int rc;
  int64_t last = 0, id, t;
  frond_gen *g = make_hw(path, &err, &rc);
  frond_gen_stats st;
  (void)state;
  assert_int_equal(rc, 0);
  frond_gen_stats_get(g, &st);
  assert_true(st.reservations >= 1);
  assert_true(st.reserved_ms > frond_clock_realtime(NULL));
  /* Full speed: borrows ahead of the clock. */
  for (int k = 0; k < 2000000; k++)
    assert_int_equal(frond_gen_next(g, &last, NULL), 0);
  assert_int_equal(frond_gen_close(g, &err), 0);
  /* A second process on the same file while the first runs is refused. */
  t = frond__mono_ns();
  g = make_hw(path, &err, &rc);
  assert_int_equal(rc, 0);
  assert_true(frond__mono_ns() - t < 200 * 1000000); /* no wait */
  {
    frond_gen *g2 = make_hw(path, &err, &rc);
    assert_null(g2);
    assert_int_equal(rc, FROND_ENODE_IN_USE);
  }
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id > last);
  frond_gen_close(g, NULL);
  free(path);
  tmpdir_remove(dir);
}

static void write_record(const char *path, int64_t time_ms, int clean) {
  frond__hw *hw;
  frond__hw_record rec;
  memset(&rec, 0, sizeof(rec));
  rec.node = 5;
  rec.time_ms = time_ms;
  rec.seq = 4095;
  rec.clean = clean;
  frond_layout_format(twitter(), rec.layout, sizeof(rec.layout));
  assert_int_equal(frond__hw_open(&hw, path, NULL), 0);
  assert_int_equal(frond__hw_write(hw, &rec, NULL), 0);
  frond__hw_close(hw);
}

static void test_stored_ahead(void **state) {
  char *dir = tmpdir_make(), *path = hw_path(dir);
  frond_error err = {0, ""};
  int rc;
  int64_t id = 0, now = frond_clock_realtime(NULL);
  frond_gen *g;
  (void)state;
  /* A little ahead (as after a crash): waits until the clock is within
  ** max_ahead of the start (~400 ms), then issues above. Checked on the
  ** clock, not on the time spent: the write's fsync may take most of it
  ** on a busy machine. */
  write_record(path, now + FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS + 400, 0);
  g = make_hw(path, &err, &rc);
  assert_int_equal(rc, 0);
  assert_true(frond_clock_realtime(NULL) >= now + 401);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(fields(g, id).unix_ms >
              now + FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS + 400);
  frond_gen_close(g, NULL);
  /* Far ahead (the clock went back across the restart): refused, naming
  ** both times. */
  now = frond_clock_realtime(NULL);
  write_record(path, now + 3600 * 1000, 1);
  g = make_hw(path, &err, &rc);
  assert_null(g);
  assert_int_equal(rc, FROND_ECLOCK_BEHIND);
  assert_non_null(strstr(err.message, "high-water time"));
  assert_non_null(strstr(err.message, "the clock went back"));
  {
    char when[40];
    frond__format_rfc3339(now + 3600 * 1000, when, sizeof(when));
    when[16] = '\0'; /* to the minute */
    assert_non_null(strstr(err.message, when));
  }
  free(path);
  tmpdir_remove(dir);
}

static void put_file(const char *path, const char *content, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(content, 1, len, f), len);
  fclose(f);
}

static void test_corrupt_file(void **state) {
  char *dir = tmpdir_make(), *path = hw_path(dir);
  frond_error err = {0, ""};
  frond__hw_record rec;
  char line[512];
  int rc, n;
  (void)state;
  memset(&rec, 0, sizeof(rec));
  rec.node = 5;
  rec.time_ms = frond_clock_realtime(NULL);
  snprintf(rec.layout, sizeof(rec.layout), "time=41,node=10,seq=12");
  n = frond__hw_format(&rec, line, sizeof(line));
  assert_true(n > 0);
  /* Torn: the last byte missing. */
  put_file(path, line, (size_t)n - 1);
  assert_null(make_hw(path, &err, &rc));
  assert_int_equal(rc, FROND_EHIGHWATER_CORRUPT);
  assert_non_null(strstr(err.message, "torn"));
  /* One digit changed: the checksum catches it. */
  line[30] = line[30] == '1' ? '2' : '1';
  put_file(path, line, (size_t)n);
  assert_null(make_hw(path, &err, &rc));
  assert_int_equal(rc, FROND_EHIGHWATER_CORRUPT);
  /* Garbage and an empty file. */
  put_file(path, "hello world\n", 12);
  assert_null(make_hw(path, &err, &rc));
  assert_int_equal(rc, FROND_EHIGHWATER_CORRUPT);
  put_file(path, "", 0);
  assert_null(make_hw(path, &err, &rc));
  assert_int_equal(rc, FROND_EHIGHWATER_CORRUPT);
  /* Another node's file. */
  write_record(path, frond_clock_realtime(NULL), 1);
  {
    frond_gen_options o;
    frond_gen *g = NULL;
    frond_gen_options_init(&o);
    o.high_water_path = path;
    assert_int_equal(frond_gen_create(&g, twitter(), 6, &o, &err),
                     FROND_EINVAL);
    assert_non_null(strstr(err.message, "belongs to node 5"));
  }
  free(path);
  tmpdir_remove(dir);
}

static void test_record_parse(void **state) {
  frond__hw_record a, b;
  char line[512];
  int n;
  (void)state;
  memset(&a, 0, sizeof(a));
  a.node = 1023;
  a.time_ms = INT64_C(1767225600123);
  a.seq = 17;
  a.clean = 1;
  frond_layout_format(twitter(), a.layout, sizeof(a.layout));
  n = frond__hw_format(&a, line, sizeof(line));
  assert_int_equal(frond__hw_parse(line, (size_t)n, &b, NULL), 0);
  assert_int_equal(b.node, a.node);
  assert_int_equal(b.time_ms, a.time_ms);
  assert_int_equal(b.seq, a.seq);
  assert_int_equal(b.clean, 1);
  assert_string_equal(b.layout, a.layout);
  /* Every truncation is refused. */
  for (int k = 0; k < n; k++)
    assert_int_equal(frond__hw_parse(line, (size_t)k, &b, NULL),
                     FROND_EHIGHWATER_CORRUPT);
}

/* kill -9 a process issuing at full speed, restart at once: every new ID
** is above every old one. The child publishes each ID it has issued in
** shared memory before asking for the next. */
static void test_kill9_restart(void **state) {
  char *dir = tmpdir_make(), *path = hw_path(dir);
  void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  _Atomic int64_t *shared = map;
  pid_t pid;
  int status, rc;
  int64_t id, before;
  frond_error err = {0, ""};
  frond_gen *g;
  (void)state;
  assert_true(map != MAP_FAILED);
  atomic_store(&shared[0], 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    frond_gen *cg = make_hw(path, &err, &rc);
    if (rc != 0)
      _exit(3);
    for (;;) {
      int64_t v;
      if (frond_gen_next(cg, &v, NULL) == 0)
        atomic_store_explicit(&shared[0], v, memory_order_release);
    }
  }
  /* Long enough to borrow up to max_ahead at full speed. */
  frond__sleep_ns(1500 * 1000000LL);
  kill(pid, SIGKILL);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status));
  before = atomic_load(&shared[0]);
  assert_true(before > 0);
  g = make_hw(path, &err, &rc);
  if (rc != 0)
    fail_msg("restart: %s", err.message);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id > before);
  frond_gen_close(g, NULL);
  munmap(map, 4096);
  free(path);
  tmpdir_remove(dir);
}

/* The reservation on disk is above every ID issued so far, at any time. */
static void test_reservation_ahead(void **state) {
  char *dir = tmpdir_make(), *path = hw_path(dir);
  frond_error err = {0, ""};
  int rc;
  frond_gen *g = make_hw(path, &err, &rc);
  int64_t id = 0;
  (void)state;
  assert_int_equal(rc, 0);
  for (int round = 0; round < 20; round++) {
    frond__hw *hw = NULL;
    frond__hw_record rec;
    for (int k = 0; k < 200000; k++)
      assert_int_equal(frond_gen_next(g, &id, NULL), 0);
    /* Read the file directly (the lock is the generator's). */
    {
      FILE *f = fopen(path, "rb");
      char buf[512];
      size_t n;
      assert_non_null(f);
      n = fread(buf, 1, sizeof(buf), f);
      fclose(f);
      assert_int_equal(frond__hw_parse(buf, n, &rec, NULL), 0);
    }
    (void)hw;
    assert_true(rec.time_ms >= fields(g, id).unix_ms);
  }
  frond_gen_close(g, NULL);
  free(path);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_unit_and_jump),
      cmocka_unit_test(test_rollback),
      cmocka_unit_test(test_overflow_borrows),
      cmocka_unit_test(test_ahead_waits_then_succeeds),
      cmocka_unit_test(test_still_behind_after_max_wait),
      cmocka_unit_test(test_exhaustion),
      cmocka_unit_test(test_real_clock_fields),
      cmocka_unit_test(test_create_errors),
      cmocka_unit_test(test_blocked),
      cmocka_unit_test(test_coarse_unit_waits),
      cmocka_unit_test(test_start_after),
      cmocka_unit_test(test_record_parse),
      cmocka_unit_test(test_corrupt_file),
      cmocka_unit_test(test_clean_restart),
      cmocka_unit_test(test_stored_ahead),
      cmocka_unit_test(test_reservation_ahead),
      cmocka_unit_test(test_kill9_restart),
      cmocka_unit_test(test_threads_unique),
  };
  return frond_run_tests(tests, NULL, NULL);
}
