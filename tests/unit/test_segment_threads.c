/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_segment_threads.c -- the segment allocator under threads and
** forks, against the fake store: every way of taking IDs shares one
** sequence, threads see IDs unique and increasing even with tiny
** segments, a store's refusal reaches every waiting caller, and a child
** of any kind of fork is refused.
*/
#include "core/seg.h"
#include "base/fork.h"
#include "fake_store.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  frond_seg_tag *h;
  int64_t id, k;
  fake_reset();
  fake_add("a", 1, 10);
  o.max_step = 40;
  s = fake_seg_open(&o);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, NULL), 0);
  for (k = 1; k <= 5000; k++) {
    assert_int_equal(one_id(s, h, (int)(k % 11), &id), 0);
    assert_int_equal(id, k);
  }
  frond_seg_close(s);
}

/* What a reader without the tag's lock (the rates' sampler) counts of
** the IDs taken, over and over while the workers run: it never goes
** down. The old count added a segment to done before the word left it,
** so a reading between the two counted the segment twice, then once. */
typedef struct sampler {
  frond_seg_tag *h;
  atomic_int stop;
  uint64_t readings, last;
  int fell;
} sampler;

static void *sample(void *arg) {
  sampler *m = arg;
  uint64_t v;
  while (!atomic_load(&m->stop) && m->readings < 400000000) {
    v = frond__seg_taken((seg_tag *)m->h);
    if (v < m->last)
      m->fell++;
    m->last = v;
    m->readings++;
  }
  return NULL;
}

/* Several threads on one tag: every ID unique, each thread's increasing.
** Tiny segments force many switches and both-empty waits. The count of
** IDs taken never falls, and at the end holds every ID handed out. */
static void run_threads(int64_t row_step, int64_t max_step, int64_t stall_ns,
                        int batch) {
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  pthread_t th[THREADS], sm;
  worker w[THREADS];
  sampler m = {0};
  frond_seg_tag *h;
  int64_t *all = malloc(sizeof(int64_t) * THREADS * PER_THREAD);
  int i, k;
  fake_reset();
  fake_add("a", 1, row_step);
  o.max_step = max_step;
  o.wait_ms = 5000;
  s = fake_seg_open(&o);
  fake.stall_ns = stall_ns;
  for (i = 0; i < THREADS; i++) {
    w[i].s = s;
    w[i].ids = all + (size_t)i * PER_THREAD;
    w[i].failed = 0;
    w[i].batch = batch;
    pthread_create(&th[i], NULL, work, &w[i]);
  }
  assert_int_equal(frond_seg_tag_get(s, T("a"), &m.h, NULL), 0);
  pthread_create(&sm, NULL, sample, &m);
  for (i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    /* Batches bigger than two tiny segments can fail; nothing else. */
    if (batch == 0)
      assert_int_equal(w[i].failed, 0);
    for (k = 1; k < PER_THREAD; k++)
      assert_true(w[i].ids[k] > w[i].ids[k - 1]);
  }
  atomic_store(&m.stop, 1);
  pthread_join(sm, NULL);
  if (m.fell != 0)
    fail_msg("the count of IDs taken fell %d times in %llu readings", m.fell,
             (unsigned long long)m.readings);
  assert_int_equal(frond_seg_tag_get(s, T("a"), &h, NULL), 0);
  assert_true(frond__seg_taken((seg_tag *)h) >= (uint64_t)THREADS * PER_THREAD);
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
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  frond_error e = {0, ""};
  int64_t i, id = 0, t0, waited;
  fake_reset();
  fake_add("a", 1, 100);
  o.wait_ms = 2000;
  o.max_step = 100; /* segments of 100: 200 IDs use both up */
  s = fake_seg_open(&o);
  for (i = 1; i <= 20; i++) /* past the preload point */
    assert_int_equal(next_id(s, "a"), i);
  fake_wait_next_ready(s, "a");
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
  frond_seg_options o = fake_seg_options();
  frond_seg *s;
  frond_seg_tag *h;
  frond_error e = {0, ""};
  int64_t id = 0, ids[4], start, before;
  int status = -1;
  pid_t pid;
  fake_reset();
  fake_add("a", 1, 1000);
  fake_add("b", 1, 1000);
  s = fake_seg_open(&o);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_call_one_sequence),
      cmocka_unit_test(test_threads_unique_and_increasing),
      cmocka_unit_test(test_threads_tiny_segments),
      cmocka_unit_test(test_refusal_reaches_callers),
      cmocka_unit_test(test_fork),
      cmocka_unit_test(test_underscore_fork),
      cmocka_unit_test(test_syscall_fork),
  };
  return frond_run_tests(tests, NULL, NULL);
}
