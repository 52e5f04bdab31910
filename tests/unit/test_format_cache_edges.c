/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_cache_edges.c -- the thread's cache of order numbers
** (format_cache.c) at its edges: a signal handler that asks on the thread
** it interrupted, a tag buffer the caller reuses for another tag, a
** generator blocked or raised while numbers are cached, a clock that
** stepped back, and the IDs skipped by formats taken in turn.
*/
#include "format_testutil.h"

#include "core/core.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#define SPEC "order:digits=19,check=damm,key=1"

static frond_format *fmt(frond_order_keys *k, const char *spec) {
  frond_format *f = format_of(spec, k);
  frond_format_skip_check(f);
  return f;
}

static int64_t id_of(const frond_format *f, const char *s) {
  frond_format_value v;
  return frond_format_decode(f, s, strlen(s), &v, NULL) == 0 ? v.id : -1;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static size_t repeats(int64_t *a, size_t n) {
  size_t d = 0;
  qsort(a, n, sizeof(*a), cmp64);
  for (size_t i = 1; i < n; i++)
    d += a[i - 1] == a[i];
  return d;
}

/* Calls until the thread's cache holds numbers (bounded). */
static void fill(frond_format *f, frond_gen *g) {
  frond_format_source src = {g, NULL, NULL, 0};
  char buf[64];
  for (int i = 0; i < 200000 && (i < 64 || frond__order_cache_held() == 0); i++)
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
  assert_true(frond__order_cache_held() > 0);
}

/* ---- a signal handler on the same thread ---- */

/* The numbers come from an issue function of the test's own: a lock-free
** counter, each number its ID in ten digits and their nines' complement
** after them, so that a torn number (two numbers' halves) shows, and no
** call in the handler can wait on a lock the thread holds. A thread asks
** while another interrupts it with signals whose handler asks too: the
** handler must neither hand out a number the thread is handing out nor
** leave the cache torn. Bounded: 2,000,000 numbers in the thread,
** 20,000 in the handler, 30 s. */
enum { SIG_MAIN = 2000000, SIG_HANDLER = 20000 };
static _Atomic int64_t sig_next = 1;
static frond_format *sig_f;
static char (*sig_out)[64]; /* the handler's */
static volatile sig_atomic_t sig_n, sig_err;
static _Atomic int sig_stop;
static pthread_t sig_target;

static void put_number(char *out, size_t len, int64_t id) {
  for (size_t i = 0; i < len; i++)
    out[i] = '0';
  for (int i = 9; i >= 0; i--, id /= 10) {
    out[i] = (char)('0' + id % 10);
    out[10 + i] = (char)('0' + (9 - id % 10));
  }
  out[len] = '\0';
}

/* The ID of a number put_number wrote, -1 when torn. */
static int64_t number_id(const char *s, size_t len) {
  int64_t id = 0;
  if (strlen(s) != len)
    return -1;
  for (int i = 0; i < 10; i++) {
    if (s[i] < '0' || s[i] > '9' || s[10 + i] - '0' != 9 - (s[i] - '0'))
      return -1;
    id = id * 10 + (s[i] - '0');
  }
  return id;
}

static int sig_issue(frond_format *f, const frond_format_source *src, size_t n,
                     char *out, size_t stride, frond__issue_tally *t,
                     frond_error *err) {
  int64_t first = atomic_fetch_add(&sig_next, (int64_t)n);
  (void)src;
  (void)t;
  (void)err;
  for (size_t j = 0; j < n; j++)
    put_number(out + j * stride, f->length, first + (int64_t)j);
  return 0;
}

static void sig_on(int signo) {
  static const frond_format_source src = {NULL, NULL, NULL, 0};
  long n = sig_n;
  int saved = errno; /* the interrupted code's */
  (void)signo;
  if (n < SIG_HANDLER) {
    if (frond__order_cached(sig_f, &src, sig_out[n], sig_issue, NULL) != 0)
      sig_err = sig_err + 1;
    sig_n = (sig_atomic_t)(n + 1);
  }
  errno = saved;
}

static void *sig_kicker(void *arg) {
  (void)arg;
  while (!atomic_load(&sig_stop)) {
    pthread_kill(sig_target, SIGUSR1);
    for (volatile int i = 0; i < 300; i++)
      ;
  }
  return NULL;
}

static void test_signal_handler_same_thread(void **state) {
  static const frond_format_source src = {NULL, NULL, NULL, 0};
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  struct sigaction sa, old;
  pthread_t kt;
  int64_t *ids, until = frond_clock_realtime(NULL) + 30000;
  size_t total = 0, torn = 0, above = 0;
  long made = 0, err = 0;
  char buf[64];
  (void)state;
  sig_f = fmt(k, SPEC);
  assert_true(sig_f->length >= 20 && sig_f->length < 64);
  sig_out = calloc(SIG_HANDLER, 64);
  /* The thread's numbers' IDs (-1: torn), then the handler's. */
  ids = malloc(sizeof(*ids) * (SIG_MAIN + SIG_HANDLER));
  assert_non_null(sig_out);
  assert_non_null(ids);
  /* The thread's cache exists before the first signal, and the clock's
  ** ticker runs (it starts after a few hundred reads in a row, and would
  ** start a thread inside the handler: format.h says a handler's thread
  ** makes its first IDs outside it). */
  for (int i = 0; i < 1000; i++)
    (void)frond__id128_now_ms();
  assert_int_equal(frond__order_cached(sig_f, &src, buf, sig_issue, NULL), 0);
  ids[made++] = number_id(buf, sig_f->length);
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = sig_on;
  sa.sa_flags = SA_RESTART;
  assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
  sig_n = 0;
  sig_err = 0;
  atomic_store(&sig_stop, 0);
  sig_target = pthread_self();
  assert_int_equal(pthread_create(&kt, NULL, sig_kicker, NULL), 0);
  while (sig_n < SIG_HANDLER && made < SIG_MAIN &&
         frond_clock_realtime(NULL) < until)
    for (int i = 0; i < 1000 && made < SIG_MAIN; i++, made++) {
      if (frond__order_cached(sig_f, &src, buf, sig_issue, NULL) != 0)
        err++;
      ids[made] = number_id(buf, sig_f->length);
    }
  atomic_store(&sig_stop, 1);
  pthread_join(kt, NULL);
  assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
  for (long i = 0; i < made + sig_n; i++) {
    int64_t id =
        i < made ? ids[i] : number_id(sig_out[i - made], sig_f->length);
    if (id < 0)
      torn++;
    else if (id >= atomic_load(&sig_next))
      above++; /* never drawn */
    else
      ids[total++] = id;
  }
  print_message("%ld numbers in the thread, %ld in the handler: %zu torn, "
                "%zu never drawn, %zu repeated\n",
                made, (long)sig_n, torn, above, repeats(ids, total));
  assert_true(sig_n > 0);
  assert_int_equal(err + sig_err, 0);
  assert_int_equal(torn, 0);
  assert_int_equal(above, 0);
  assert_int_equal(repeats(ids, total), 0);
  free(ids);
  free(sig_out);
  frond_format_free(sig_f);
  frond_order_keys_free(k);
}

/* ---- a segment tag in a buffer the caller reuses ---- */

typedef struct env {
  char *dir;
  char uri[600];
  frond_seg *s;
} env;

static void env_open(env *e, const char *const *tags, int ntags) {
  frond_store *st;
  frond_seg_options o;
  frond_error err = {0, ""};
  e->dir = tmpdir_make();
  snprintf(e->uri, sizeof(e->uri), "sqlite://%s/ids.db", e->dir);
  assert_int_equal(frond_store_open(&st, e->uri, &err), 0);
  for (int i = 0; i < ntags; i++)
    if (frond_store_tag_create(st, tags[i], 1000000, 1, NULL, &err) != 0)
      fail_msg("create %s: %s", tags[i], err.message);
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.wait_ms = 20000; /* a busy machine commits slowly: wait, not fail */
  o.first_wait_ms = 20000;
  if (frond_seg_open(&e->s, e->uri, &o, &err) != 0)
    fail_msg("seg: %s", err.message);
}

static void env_close(env *e) {
  frond_seg_close(e->s);
  tmpdir_remove(e->dir);
}

/* The caller writes "a", asks twice, writes "b" in the same buffer, asks
** once: every number given for b is one of b's IDs, never one cached for
** a (both tags count from 1). A tag longer than any allocator has is
** refused, cached or not. */
static void test_tag_buffer_reused(void **state) {
  enum { N = 4000 };
  static const char *const tags[] = {"a", "b"};
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, "order:digits=12,key=1");
  env e;
  char tagbuf[FROND_TAG_MAX + 2], buf[64];
  frond_format_source src;
  int64_t *ids = malloc(sizeof(*ids) * 2 * N);
  size_t n = 0;
  (void)state;
  assert_non_null(ids);
  env_open(&e, tags, 2);
  src = (frond_format_source){NULL, e.s, tagbuf, 0};
  for (int i = 0; i < N; i++) {
    strcpy(tagbuf, "a");
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
    strcpy(tagbuf, "b");
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
    assert_true((ids[n++] = id_of(f, buf)) > 0);
  }
  /* b's own next IDs, straight from the allocator. */
  for (int i = 0; i < N; i++)
    assert_int_equal(frond_seg_next(e.s, "b", 1, &ids[n++], NULL), 0);
  print_message("%d numbers for b: %zu repeat b's own IDs\n", N,
                repeats(ids, n));
  assert_int_equal(repeats(ids, n), 0);
  memset(tagbuf, 'x', FROND_TAG_MAX + 1);
  tagbuf[FROND_TAG_MAX + 1] = '\0';
  for (int i = 0; i < 3; i++)
    assert_true(frond_format_next(f, &src, buf, sizeof(buf), NULL) != 0);
  free(ids);
  env_close(&e);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* ---- the generator's barriers, and the clock ---- */

/* Blocked: the next call refuses with the block's code, however many
** numbers the thread holds. Resumed and raised above a time: the next
** number's ID is above it, none of those drawn before. */
static void test_block_and_floor(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC);
  frond_gen *g = format_gen(1);
  frond_format_source src = {g, NULL, NULL, 0};
  frond_error err = {0, ""};
  char buf[64];
  int64_t fresh, id;
  (void)state;
  for (int round = 0; round < 20; round++) {
    fill(f, g);
    frond__gen_block(g, FROND_ENODE_ID_LOST);
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                     FROND_ENODE_ID_LOST);
    frond__gen_resume(g, 0, frond_clock_realtime(NULL) + 100000);
  }
  for (int round = 0; round < 20; round++) {
    fill(f, g);
    frond__gen_raise_floor(g, frond_clock_realtime(NULL) + 1000);
    assert_int_equal(frond_gen_next(g, &fresh, NULL), 0);
    /* Every ID cached before the raise is below fresh, which is above
    ** the floor; the next number's ID comes after it. */
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
    assert_true((id = id_of(f, buf)) > fresh);
  }
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* A cache drawn "after" the millisecond the clock now shows (it stepped
** back) is dropped, as one too old is. */
static void test_clock_back_drops(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC);
  frond_gen *g = format_gen(1);
  frond_format_source src = {g, NULL, NULL, 0};
  char buf[64];
  int64_t fresh;
  (void)state;
  for (int round = 0; round < 20; round++) {
    fill(f, g);
    frond__order_cache_shift(1000); /* drawn a second ahead of now */
    assert_int_equal(frond_gen_next(g, &fresh, NULL), 0);
    assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), NULL), 0);
    assert_true(id_of(f, buf) > fresh);
  }
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* ---- IDs skipped ---- */

/* Five formats (more than the thread's slots) in turn, 40 numbers each,
** on one segment tag whose counter tells the IDs drawn: those skipped
** (drawn, neither handed out nor still held) stay within the documented
** bound per millisecond. Bounded: 150 ms, 2,000,000 numbers. */
static void test_waste_bounded(void **state) {
  enum { NF = 5, PER = 40 };
  static const char *const tags[] = {"w"};
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f[NF];
  frond_format_source src;
  env e;
  char buf[64];
  int64_t first, last, t0, ms;
  long handed = 0, skipped;
  (void)state;
  env_open(&e, tags, 1);
  src = (frond_format_source){NULL, e.s, NULL, 0};
  for (int i = 0; i < NF; i++)
    f[i] = fmt(k, "order:digits=12,key=1,tag=w");
  assert_int_equal(frond_seg_next(e.s, "w", 1, &first, NULL), 0);
  t0 = frond_clock_realtime(NULL);
  while (frond_clock_realtime(NULL) - t0 < 150 && handed < 2000000)
    for (int i = 0; i < NF; i++)
      for (int j = 0; j < PER; j++, handed++)
        assert_int_equal(frond_format_next(f[i], &src, buf, sizeof(buf), NULL),
                         0);
  ms = frond_clock_realtime(NULL) - t0;
  assert_int_equal(frond_seg_next(e.s, "w", 1, &last, NULL), 0);
  skipped = (long)(last - first - 1) - handed - (long)frond__order_cache_held();
  print_message("%d formats in turn, %lld ms: %ld handed out, %ld skipped "
                "(%.1f per ms; at most %d)\n",
                NF, (long long)ms, handed, skipped,
                (double)skipped / (double)(ms > 0 ? ms : 1),
                FROND__ORDER_SKIP_MAX);
  assert_true(skipped >= 0);
  /* The ticker's milliseconds over the run: at most two more than the
  ** wall clock's (it lags, never leads). */
  assert_true(skipped <= (long)FROND__ORDER_SKIP_MAX * (ms + 2));
  for (int i = 0; i < NF; i++)
    frond_format_free(f[i]);
  env_close(&e);
  frond_order_keys_free(k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_signal_handler_same_thread),
      cmocka_unit_test(test_tag_buffer_reused),
      cmocka_unit_test(test_block_and_floor),
      cmocka_unit_test(test_clock_back_drops),
      cmocka_unit_test(test_waste_bounded),
  };
  return frond_run_tests(tests, NULL, NULL);
}
