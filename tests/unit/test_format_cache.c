/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_cache.c -- order numbers one at a time from a thread's
** cache of a batch (format_cache.c): unique across threads, the same
** numbers as encoding their IDs, dropped in a child of fork() (its own
** ticker running or not), never
** handed out under another format, dropped when older than its validity,
** and holding no room for others once too old.
*/
#include "format_testutil.h"

#include "core/core.h"
#include "core/rand_hot.h"

#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#define SPEC "order:digits=19,check=damm,key=1"

static frond_format *fmt(frond_order_keys *k) {
  frond_format *f = format_of(SPEC, k);
  frond_format_skip_check(f);
  return f;
}

/* The ID of an order number, -1 when it does not decode under f. */
static int64_t id_of(const frond_format *f, const char *s) {
  frond_format_value v;
  return frond_format_decode(f, s, strlen(s), &v, NULL) == 0 ? v.id : -1;
}

/* Calls until the thread's cache holds numbers (bounded); the last ID. */
static int64_t fill(frond_format *f, frond_gen *g) {
  frond_format_source src = {g, NULL, NULL, 0};
  char buf[64];
  int64_t last = -1;
  for (int i = 0; i < 200000 && (i < 64 || frond__order_cache_held() == 0);
       i++) {
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
    last = id_of(f, buf);
    assert_true(last >= 0);
  }
  assert_true(frond__order_cache_held() > 0);
  return last;
}

typedef struct worker {
  frond_format *f;
  frond_gen *g;
  int64_t *ids;
  int n, bad, disorder; /* counted here, asserted after the join */
} worker;

static void *work(void *arg) {
  worker *w = arg;
  frond_format_source src = {w->g, NULL, NULL, 0};
  char buf[64];
  for (int i = 0; i < w->n; i++) {
    if (frond_format_next(w->f, &src, buf, sizeof(buf), NULL) != 0 ||
        (w->ids[i] = id_of(w->f, buf)) < 0) {
      w->bad++;
      w->ids[i] = -1 - i;
      continue;
    }
    if (i > 0 && w->ids[i] <= w->ids[i - 1])
      w->disorder++; /* one thread's IDs come in the order drawn */
  }
  return NULL;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void test_threads_unique(void **state) {
  enum { T = 4, N = 20000 };
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k);
  frond_gen *g = format_gen(1);
  int64_t *all = malloc(sizeof(*all) * T * N);
  pthread_t th[T];
  worker w[T];
  (void)state;
  for (int i = 0; i < T; i++) {
    w[i] = (worker){f, g, all + i * N, N, 0, 0};
    assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(w[i].bad, 0);
    assert_int_equal(w[i].disorder, 0);
  }
  qsort(all, T * N, sizeof(*all), cmp64);
  for (int i = 1; i < T * N; i++)
    assert_true(all[i - 1] != all[i]);
  free(all);
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* A cached number is the one encoding its ID gives, for both schemes. */
static void test_same_as_encode(void **state) {
  static const char *const keys[] = {"1:aes:" KEY0, "1:" KEY0};
  (void)state;
  for (int s = 0; s < 2; s++) {
    frond_order_keys *k = keys_of(keys[s]);
    frond_format *f = fmt(k);
    frond_gen *g = format_gen(1);
    frond_format_source src = {g, NULL, NULL, 0};
    char buf[64], again[64];
    fill(f, g);
    for (int i = 0; i < 1000; i++) {
      int64_t id;
      assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
      assert_true((id = id_of(f, buf)) >= 0);
      assert_int_equal(
          frond_format_encode(f, id, 0, again, sizeof(again), NULL), 0);
      assert_string_equal(buf, again);
    }
    frond_gen_close(g, NULL);
    frond_format_free(f);
    frond_order_keys_free(k);
  }
}

/* In a child of fork() the parent's cached numbers are dropped before the
** call looks at the generator, which refuses the child. */
static void test_fork_drops(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k);
  frond_gen *g = format_gen(1);
  int status;
  pid_t pid;
  (void)state;
  fill(f, g);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    frond_format_source src = {g, NULL, NULL, 0};
    char buf[64];
    frond_error err = {0, ""};
    int rc = frond_format_next(f, &src, buf, sizeof(buf), &err);
    _exit(rc == FROND_EFORKED && frond__order_cache_held() == 0 ? 0 : 1);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_true(frond__order_cache_held() > 0); /* the parent's stays */
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* What a child of fork() saw, sent to the parent. */
typedef struct child_report {
  int ticking; /* its own ticker ran when it asked */
  int rc;
  char num[64];
} child_report;

/* As test_fork_drops, with the child's own ticker running when it asks
** (it read the clock until the ticker started, as a child making UUIDs
** would), so that the call takes the common path, which reads the ticker
** inline, and a generator of 1 s units (the cache's validity 1 s: the
** parent's numbers still fresh). The child is refused (the generator's
** fork check) and hands out none of the parent's numbers. */
static void test_fork_child_ticking(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k);
  frond_gen *g;
  frond_format_source src = {NULL, NULL, NULL, 0};
  child_report r = {0, 0, ""};
  char buf[64];
  int status, fd[2];
  pid_t pid;
  (void)state;
#ifdef __SANITIZE_THREAD__
  /* ThreadSanitizer cannot start a thread (the child's ticker) in a child
  ** of a process with threads: the ASan build runs this. */
  skip();
#endif
  assert_non_null(g = format_gen_seconds(1));
  src.gen = g;
  fill(f, g);
  assert_int_equal(pipe(fd), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    frond_error err = {0, ""};
    int64_t ms, until = frond__id128_now_ms() + 60000;
    /* Until the ticker runs and was read (a minute at most, by the clock
    ** the reads fall back to): a read marks it read, the ticker clears
    ** the mark each millisecond, so the check follows the read. */
    for (;;) {
      int64_t now = frond__id128_now_ms();
      if ((r.ticking = frond__now_ms_hot(&ms)) || now >= until)
        break;
      sched_yield();
    }
    r.rc = frond_format_next(f, &src, r.num, sizeof(r.num), &err);
    if (r.rc != 0)
      r.num[0] = '\0';
    _exit(write(fd[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
  }
  close(fd[1]);
  assert_int_equal(read(fd[0], &r, sizeof(r)), (ssize_t)sizeof(r));
  close(fd[0]);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
  print_message("child: ticker %s, rc %d, \"%s\"; parent's next \"%s\"\n",
                r.ticking ? "running" : "not running", r.rc, r.num, buf);
  assert_true(r.ticking);
  assert_int_equal(r.rc, FROND_EFORKED);
  assert_string_not_equal(r.num, buf);
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* Another format (another key, or the same spec made again, perhaps at
** the same address) draws its own IDs: never one cached for the first. */
static void test_other_format_draws_anew(void **state) {
  frond_order_keys *k0 = keys_of("1:aes:" KEY0), *k1 = keys_of("1:aes:" KEY1);
  frond_gen *g = format_gen(1);
  frond_format_source src = {g, NULL, NULL, 0};
  (void)state;
  for (int round = 0; round < 2; round++) {
    frond_format *a = fmt(k0), *b;
    char buf[64];
    int64_t fresh, id;
    fill(a, g);
    /* Every ID cached for a is below this one. */
    assert_int_equal(frond_gen_next(g, &fresh, NULL), 0);
    frond_format_free(a);
    b = fmt(round == 0 ? k1 : k0);
    assert_int_equal(frond_format_next(b, &src, buf, sizeof(buf), NULL), 0);
    assert_true((id = id_of(b, buf)) > fresh);
    frond_format_free(b);
  }
  frond_gen_close(g, NULL);
  frond_order_keys_free(k0);
  frond_order_keys_free(k1);
}

/* A cache older than its validity (the layout's unit, 1 ms) is dropped:
** the next number's ID is drawn after the wait. */
static void test_old_cache_dropped(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k);
  frond_gen *g = format_gen(1);
  frond_format_source src = {g, NULL, NULL, 0};
  char buf[64];
  int64_t fresh, start;
  (void)state;
  fill(f, g);
  assert_int_equal(frond_gen_next(g, &fresh, NULL), 0);
  start = frond__id128_now_ms();
  for (int i = 0; i < 100000 && frond__id128_now_ms() <= start + 2; i++)
    usleep(100); /* waits for the millisecond to move, bounded: 10 s */
  assert_true(frond__id128_now_ms() > start + 2);
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
  assert_true(id_of(f, buf) > fresh);
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* Numbers that can no longer be handed out (too old) hold no room: a
** format asked for after others stopped batches in full, and the thread
** holds no more than that one's batch. */
static void test_stale_numbers_make_room(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *a = fmt(k), *b = fmt(k), *c = fmt(k);
  frond_gen *g;
  frond_format_source src = {NULL, NULL, NULL, 0};
  char buf[64];
  int64_t start;
  size_t dropped;
  int i;
  (void)state;
  /* A unit of a second: the numbers stay valid that long (the layout's
  ** unit), so that a's are not dropped while b fills, however slow. */
  assert_non_null(g = format_gen_seconds(1));
  src.gen = g;
  for (i = 0; i < 200000 && frond__order_cache_held() < 24; i++)
    assert_int_equal(frond_format_next(a, &src, buf, sizeof(buf), NULL), 0);
  for (i = 0; i < 200000 && frond__order_cache_held() < 48; i++)
    assert_int_equal(frond_format_next(b, &src, buf, sizeof(buf), NULL), 0);
  assert_true(frond__order_cache_held() >= 48);
  start = frond__id128_now_ms();
  for (i = 0; i < 30000 && frond__id128_now_ms() <= start + 1001; i++)
    usleep(1000); /* waits past the validity, bounded: 30 s */
  assert_true(frond__id128_now_ms() > start + 1001);
  dropped = frond__order_cache_dropped();
  /* c's batches grow to 32 (one handed out, 31 held), the others' dropped
  ** at its first refill of more than one: held while they count, never
  ** 31 */
  for (i = 0; i < 200000 && frond__order_cache_held() != 31; i++)
    assert_int_equal(frond_format_next(c, &src, buf, sizeof(buf), NULL), 0);
  assert_int_equal(frond__order_cache_held(), 31);
  assert_true(frond__order_cache_dropped() - dropped >= 48);
  frond_gen_close(g, NULL);
  frond_format_free(a);
  frond_format_free(b);
  frond_format_free(c);
  frond_order_keys_free(k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_unique),
      cmocka_unit_test(test_same_as_encode),
      cmocka_unit_test(test_fork_drops),
      cmocka_unit_test(test_fork_child_ticking),
      cmocka_unit_test(test_other_format_draws_anew),
      cmocka_unit_test(test_old_cache_dropped),
      cmocka_unit_test(test_stale_numbers_make_room),
  };
  return frond_run_tests(tests, NULL, NULL);
}
