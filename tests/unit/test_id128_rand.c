/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_id128_rand.c -- what makes 128-bit IDs fast, against what it
** replaced: the table-driven hex and base32 writers against byte-at-a-time
** ones on random inputs; the per-thread keystreams distinct across
** threads, streams and fork(), equal under a fixed key; batches equal to
** single calls; the ticker's millisecond never ahead of the clock and
** following it.
*/
#include "testutil.h"

#include "core/core.h"
#include "core/formats.h"
#include "core/rand_hot.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sodium.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the writers the tables replaced ---- */

static void ref_hex(const uint8_t *b, int n, char *out) {
  static const char d[] = "0123456789abcdef";
  for (int i = 0; i < n; i++) {
    out[2 * i] = d[b[i] >> 4];
    out[2 * i + 1] = d[b[i] & 15];
  }
}

static void ref_uuid(const uint8_t u[16], char out[37]) {
  char h[32];
  ref_hex(u, 16, h);
  snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16,
           h + 20);
}

static void ref_ulid(const uint8_t u[16], char out[27]) {
  static const char c[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  uint64_t hi = 0, lo = 0;
  for (int i = 0; i < 8; i++)
    hi = hi << 8 | u[i];
  for (int i = 8; i < 16; i++)
    lo = lo << 8 | u[i];
  for (int i = 25; i >= 0; i--) {
    out[i] = c[lo & 31];
    lo = lo >> 5 | hi << 59;
    hi >>= 5;
  }
  out[26] = '\0';
}

/* Random inputs, and the edges (all zero, all ones, one bit set). */
static void input(int i, uint8_t b[16]) {
  if (i < 128) {
    memset(b, 0, 16);
    b[i / 8] = (uint8_t)(1u << (i % 8));
  } else if (i == 128)
    memset(b, 0, 16);
  else if (i == 129)
    memset(b, 0xff, 16);
  else
    randombytes_buf(b, 16);
}

static void test_writers_match_bytewise(void **state) {
  (void)state;
  assert_int_equal(sodium_init() < 0, 0);
  for (int i = 0; i < 200000; i++) {
    uint8_t b[16], back[16];
    char got[40], want[40];
    input(i, b);
    frond_uuid_format(b, got);
    ref_uuid(b, want);
    assert_string_equal(got, want);
    assert_int_equal(frond_uuid_parse(got, 36, back, NULL), 0);
    assert_memory_equal(back, b, 16);
    frond_ulid_format(b, got);
    ref_ulid(b, want);
    assert_string_equal(got, want);
    assert_int_equal(frond_ulid_parse(got, 26, back, NULL), 0);
    assert_memory_equal(back, b, 16);
    frond_objectid_format(b, got);
    ref_hex(b, 12, want);
    want[24] = '\0';
    assert_string_equal(got, want);
    assert_int_equal(frond_objectid_parse(got, 24, back, NULL), 0);
    assert_memory_equal(back, b, 12);
  }
}

/* ---- keystreams ---- */

static int cmp64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static size_t repeats64(uint64_t *v, size_t n) {
  size_t r = 0;
  qsort(v, n, sizeof(*v), cmp64);
  for (size_t i = 1; i < n; i++)
    r += v[i] == v[i - 1];
  return r;
}

enum { T = 4, PER = 20000 };
typedef struct drawer {
  uint64_t s1, s2;
  uint64_t *out;
} drawer;

static void *draw(void *arg) {
  drawer *d = arg;
  for (int i = 0; i < PER; i += 2) {
    d->out[i] = frond__rand64(d->s1);
    frond__rand_bytes(d->s2, &d->out[i + 1], 8);
  }
  return NULL;
}

/* Four threads on the same two streams: no 64-bit value twice (by chance
** about 1 in 10^9 for 80,000 values). */
static void test_streams_distinct_across_threads(void **state) {
  uint64_t *all = malloc(sizeof(*all) * T * PER);
  uint64_t s1 = frond__rand_stream(), s2 = frond__rand_stream();
  pthread_t th[T];
  drawer d[T];
  (void)state;
  assert_int_not_equal(s1, s2);
  for (int i = 0; i < T; i++) {
    d[i] = (drawer){s1, s2, all + i * PER};
    assert_int_equal(pthread_create(&th[i], NULL, draw, &d[i]), 0);
  }
  for (int i = 0; i < T; i++)
    pthread_join(th[i], NULL);
  assert_int_equal(repeats64(all, T * PER), 0);
  free(all);
}

/* Parent and child of each kind of fork draw from a stream whose buffer
** the parent had filled: not one value in common (nor UUIDv4s). */
static void fork_distinct(int how) {
  enum { N = 512 };
  uint64_t s = frond__rand_stream(), mine[2 * N], theirs[N];
  int fds[2], status;
  pid_t pid;
  (void)frond__rand64(s); /* the buffer is full in the parent */
  assert_int_equal(pipe(fds), 0);
  pid = fork_by(how);
  assert_true(pid >= 0);
  if (pid == 0) {
    for (int i = 0; i < N; i += 2) {
      uint8_t u[16];
      theirs[i] = frond__rand64(s);
      frond__uuid4_fast(u);
      memcpy(&theirs[i + 1], u, 8);
    }
    _exit(write(fds[1], theirs, sizeof(theirs)) == sizeof(theirs) ? 0 : 1);
  }
  close(fds[1]);
  assert_int_equal(read(fds[0], theirs, sizeof(theirs)), sizeof(theirs));
  close(fds[0]);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_int_equal(status, 0);
  for (int i = 0; i < N; i += 2) {
    uint8_t u[16];
    mine[i] = frond__rand64(s);
    frond__uuid4_fast(u);
    memcpy(&mine[i + 1], u, 8);
  }
  memcpy(mine + N, theirs, sizeof(theirs));
  assert_int_equal(repeats64(mine, 2 * N), 0);
}

static void test_streams_distinct_across_fork(void **state) {
  (void)state;
  fork_distinct(BY_FORK);
  fork_distinct(BY_UNDERSCORE_FORK);
  fork_distinct(BY_SYSCALL);
}

/* A fixed key: every stream draws the same bits, past a refill; without
** it, two streams differ. */
static void test_fixed_key(void **state) {
  static const uint8_t key[16] = {7, 7, 7};
  uint64_t a = frond__rand_stream(), b = frond__rand_stream();
  int same = 0;
  (void)state;
  frond__rand_fixed(key);
  for (int i = 0; i < 1000; i++)
    assert_true(frond__rand64(a) == frond__rand64(b));
  frond__rand_fixed(NULL);
  /* Streams keyed under the fixed key take the system's at their next
  ** refill: past it (1 KiB), a and b part ways. */
  for (int i = 0; i < 1000; i++)
    same += frond__rand64(a) == frond__rand64(b);
  assert_true(same < 1000 - 200);
  same = 0;
  a = frond__rand_stream();
  b = frond__rand_stream();
  for (int i = 0; i < 1000; i++)
    same += frond__rand64(a) == frond__rand64(b);
  assert_int_equal(same, 0);
}

/* Eight generators used in turn on one thread, as a server thread serving
** eight formats does: each stream keeps its slot, so the thread takes a
** new key once per stream, not once per call. */
static void test_streams_keep_their_slots(void **state) {
  enum { G = 8, ROUNDS = 4000 };
  uint64_t s[G], before, rekeys;
  (void)state;
  for (int i = 0; i < G; i++)
    s[i] = frond__rand_stream();
  (void)frond__rand64(s[0]);
  before = frond__rand_rekeys();
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < G; i++)
      (void)frond__rand64(s[i]);
  rekeys = frond__rand_rekeys() - before;
  print_message("%d generators in turn, %d calls: %llu new keys\n", G,
                G * ROUNDS, (unsigned long long)rekeys);
  assert_true(rekeys <= G);
}

/* Three streams under one fixed key, drawn in an irregular turn in 8 and
** 16 bytes (the hot slot's reads) and in longer draws: each stream's
** bytes, laid end to end, are exactly the bytes of a stream drawn alone
** under that key. A stream that lost its place when another took the hot
** slot would repeat bytes or skip them. */
static void test_streams_in_turn_keep_their_places(void **state) {
  static const uint8_t key[16] = {5, 4, 3, 2, 1};
  enum { N = 6000 };
  uint8_t *want = malloc(N), *got[3];
  uint64_t s[3], alone;
  size_t at[3] = {0, 0, 0};
  unsigned r = 1;
  (void)state;
  frond__rand_fixed(key);
  alone = frond__rand_stream();
  frond__rand_bytes(alone, want, N);
  for (int i = 0; i < 3; i++) {
    s[i] = frond__rand_stream();
    got[i] = malloc(N + 64);
  }
  while (at[0] < N || at[1] < N || at[2] < N) {
    int i;
    r = r * 1103515245u + 12345u; /* which stream, and how */
    i = (int)(r >> 16) % 3;
    if (at[i] >= N)
      continue;
    switch ((r >> 20) % 4) {
    case 0:
    case 1: { /* the call, and its inlined form (rand_hot.h) */
      uint64_t v =
          (r >> 24) & 1 ? frond__rand64(s[i]) : frond__rand_take64(s[i]);
      memcpy(got[i] + at[i], &v, 8);
      at[i] += 8;
      break;
    }
    case 2: {
      uint64_t v[2];
      frond__rand_take(s[i], v, 16);
      memcpy(got[i] + at[i], v, 16);
      at[i] += 16;
      break;
    }
    default: {
      size_t k = 1 + (r >> 8) % 40;
      frond__rand_bytes(s[i], got[i] + at[i], k);
      at[i] += k;
    }
    }
  }
  frond__rand_fixed(NULL);
  for (int i = 0; i < 3; i++) {
    assert_memory_equal(got[i], want, N);
    free(got[i]);
  }
  free(want);
}

/* Bytes handed out are not kept: after 8- and 16-byte draws (the hot
** slot's) and longer ones, none of the words handed out is anywhere in
** the thread's keystream state. The check can fail: a word is in a copy
** of the state taken just before its draw. */
static int in_state(const void *word) {
  size_t len;
  const uint8_t *st = frond__rand_state(&len);
  assert_non_null(st);
  return memmem(st, len, word, 8) != NULL;
}

static void test_drawn_bytes_not_kept(void **state) {
  enum { N = 30 }; /* 752 bytes with the 24 below: one draw holds them */
  uint64_t s = frond__rand_stream(), w[3 * N], next;
  size_t len;
  uint8_t *copy;
  (void)state;
  (void)frond__rand64(s); /* a fresh draw: the rest of it stays unread */
  for (int i = 0; i < N; i++) {
    w[3 * i] = i % 2 ? frond__rand64(s) : frond__rand_take64(s);
    frond__rand_take(s, &w[3 * i + 1], 16);
  }
  for (int i = 0; i < 3 * N; i++)
    assert_false(in_state(&w[i]));
  frond__rand_bytes(s, w, 24);
  for (int i = 0; i < 3; i++)
    assert_false(in_state(&w[i]));
  (void)frond__rand_state(&len);
  copy = malloc(len);
  memcpy(copy, frond__rand_state(&len), len);
  next = frond__rand64(s);
  assert_non_null(memmem(copy, len, &next, 8));
  assert_false(in_state(&next));
  free(copy);
}

/* The fixed key cleared while a refill is keying a stream under it: the
** stream takes the system's key at its next refill, as every stream keyed
** under the fixed key does. Under the same fixed key set again, a new
** stream draws what the first did while it was fixed, and no more. */
static void clear_fixed(void) {
  frond__rand_fixed(NULL);
}

static void test_fixed_key_cleared_during_refill(void **state) {
  static const uint8_t key[16] = {9, 9, 9};
  enum { N = 4096, FIRST = 1024 - 32 }; /* one draw's bytes */
  uint8_t *a = malloc(N), *c = malloc(N);
  size_t same = 0;
  (void)state;
  frond__rand_fixed(key);
  frond__rand_refill_hook(clear_fixed);
  frond__rand_bytes(frond__rand_stream(), a, N);
  frond__rand_refill_hook(NULL);
  frond__rand_fixed(key);
  frond__rand_bytes(frond__rand_stream(), c, N);
  frond__rand_fixed(NULL);
  assert_memory_equal(a, c, FIRST);
  for (size_t i = FIRST; i < N; i += 8)
    same += memcmp(a + i, c + i, 8) == 0;
  print_message("%zu of %d words past the first draw still from the fixed "
                "key\n",
                same, (N - FIRST) / 8);
  assert_int_equal(same, 0);
  free(a);
  free(c);
}

/* A thread-exit destructor that makes IDs after the keystream's own
** destructor ran: it gets random bits, and no state is made again (it
** would leak). The destructor sets itself again once, so that its second
** call comes after every first one, the keystream's included. */
static pthread_key_t late_key;
static uint64_t late_value, late_rekeys = 99;

static void late_destructor(void *p) {
  if (p == (void *)1) {
    pthread_setspecific(late_key, (void *)2);
    return;
  }
  late_value = frond__rand64(frond__rand_stream());
  late_rekeys = frond__rand_rekeys();
}

static void *late_thread(void *arg) {
  (void)arg;
  (void)frond__rand64(frond__rand_stream());
  pthread_setspecific(late_key, (void *)1);
  return NULL;
}

static void test_draw_after_thread_state_freed(void **state) {
  pthread_t th;
  (void)state;
  assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
  assert_int_equal(pthread_create(&th, NULL, late_thread, NULL), 0);
  pthread_join(th, NULL);
  pthread_key_delete(late_key);
  assert_int_equal(late_rekeys, 0);
  assert_true(late_value != 0);
}

/* A signal whose handler draws arrives while the thread's state is freed
** at its exit (the exit hook raises it there), and a later destructor
** draws from the same stream: neither may touch the freed state (ASan
** reports a use after free when the handler's draw makes it the hot slot
** again), and neither makes a state again. */
static uint64_t exit_stream;
static volatile uint64_t exit_handler_value;
static uint64_t exit_late_value, exit_late_rekeys = 99;
static pthread_key_t exit_key;

static void exit_handler(int sig) {
  (void)sig;
  exit_handler_value = frond__rand64(exit_stream);
}

static void exit_raise(void) {
  raise(SIGUSR2);
}

static void exit_destructor(void *p) {
  if (p == (void *)1) { /* again once: after the keystream's own */
    pthread_setspecific(exit_key, (void *)2);
    return;
  }
  exit_late_value = frond__rand64(exit_stream);
  exit_late_rekeys = frond__rand_rekeys();
}

static void *exit_thread(void *arg) {
  (void)arg;
  (void)frond__rand64(exit_stream); /* the hot slot is this stream's */
  frond__rand_exit_hook(exit_raise);
  pthread_setspecific(exit_key, (void *)1);
  return NULL;
}

static void test_signal_while_thread_state_freed(void **state) {
  struct sigaction sa, old;
  pthread_t th;
  (void)state;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = exit_handler;
  sigemptyset(&sa.sa_mask);
  assert_int_equal(sigaction(SIGUSR2, &sa, &old), 0);
  exit_stream = frond__rand_stream();
  assert_int_equal(pthread_key_create(&exit_key, exit_destructor), 0);
  assert_int_equal(pthread_create(&th, NULL, exit_thread, NULL), 0);
  pthread_join(th, NULL);
  pthread_key_delete(exit_key);
  frond__rand_exit_hook(NULL);
  sigaction(SIGUSR2, &old, NULL);
  assert_true(exit_handler_value != 0);
  assert_true(exit_late_value != 0);
  assert_true(exit_late_value != exit_handler_value);
  assert_int_equal(exit_late_rekeys, 0);
}

/* ---- signal handlers ---- */

/* A thread makes UUIDv4s and UUIDv7s while another interrupts it with
** signals whose handler makes them too: a handler that interrupted a
** draw must not read the bytes the draw is handing out, nor reuse a key
** it is replacing. The thread goes on until the handler made 20,000;
** bounded: 2,000,000 IDs in the thread, 30 s. */
enum { SIG_MAIN = 2000000, SIG_HANDLER = 20000 };
static uint8_t (*sig_ids)[16];
static volatile sig_atomic_t sig_n; /* the handler's, on this thread */
static _Atomic int sig_stop;        /* the kicker's, another thread */
static frond_uuid7 *sig_g7;
static pthread_t sig_target;

/* The clock format.h asks of a process whose handlers make IDs: one of
** its own (the default's ticker may start a thread, which no handler may:
** ThreadSanitizer saw it happen when the 256th read in a row fell in the
** handler). */
static int64_t sig_clock(void *ctx) {
  struct timespec ts;
  (void)ctx;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sig_on(int signo) {
  long n = sig_n;
  (void)signo;
  if (n < SIG_HANDLER) {
    if (n % 2 == 0)
      frond__uuid4_fast(sig_ids[SIG_MAIN + n]);
    else
      frond_uuid7_next(sig_g7, sig_ids[SIG_MAIN + n]);
    sig_n = (sig_atomic_t)(n + 1);
  }
}

static void *sig_kicker(void *arg) {
  (void)arg;
  while (!atomic_load(&sig_stop)) {
    pthread_kill(sig_target, SIGUSR1);
    for (volatile int i = 0; i < 200; i++)
      ;
  }
  return NULL;
}

static int cmp16(const void *a, const void *b) {
  return memcmp(a, b, 16);
}

static void test_ids_made_in_signal_handler(void **state) {
  struct sigaction sa, old;
  pthread_t k;
  uint64_t *words;
  size_t total, dup = 0;
  int64_t until = frond_clock_realtime(NULL) + 30000;
  long made = 0;
  (void)state;
  sig_ids = calloc(SIG_MAIN + SIG_HANDLER, 16);
  assert_non_null(sig_ids);
  assert_int_equal(frond_uuid7_create(&sig_g7, sig_clock, NULL, NULL), 0);
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = sig_on;
  sa.sa_flags = SA_RESTART;
  assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
  sig_n = 0;
  atomic_store(&sig_stop, 0);
  sig_target = pthread_self();
  frond__uuid4_fast(sig_ids[0]); /* the thread's state exists */
  assert_int_equal(pthread_create(&k, NULL, sig_kicker, NULL), 0);
  while (sig_n < SIG_HANDLER && made < SIG_MAIN &&
         frond_clock_realtime(NULL) < until) {
    for (int i = 0; i < 1000; i++, made++) {
      if (made % 2 == 0)
        frond__uuid4_fast(sig_ids[made]);
      else
        frond_uuid7_next(sig_g7, sig_ids[made]);
    }
  }
  atomic_store(&sig_stop, 1);
  pthread_join(k, NULL);
  assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
  /* The handler's IDs follow the thread's in one array. */
  memmove(sig_ids[made], sig_ids[SIG_MAIN], 16 * (size_t)sig_n);
  total = (size_t)made + (size_t)sig_n;
  assert_true(sig_n > 0);
  qsort(sig_ids, total, 16, cmp16);
  for (size_t i = 1; i < total; i++)
    dup += memcmp(sig_ids[i - 1], sig_ids[i], 16) == 0;
  /* The random words: both halves of a UUIDv4, the last 8 bytes of a
  ** UUIDv7 (its 58 random bits are there and in byte 7). */
  words = malloc(sizeof(*words) * 2 * total);
  assert_non_null(words);
  for (size_t i = 0; i < total; i++) {
    memcpy(&words[2 * i], sig_ids[i] + 8, 8);
    if ((sig_ids[i][6] >> 4) == 4)
      memcpy(&words[2 * i + 1], sig_ids[i], 8);
    else
      words[2 * i + 1] = UINT64_C(0xff00000000000000) | i; /* distinct */
  }
  print_message("%ld IDs in the thread, %ld in the handler: %zu duplicate "
                "IDs, %zu shared random words\n",
                made, (long)sig_n, dup, repeats64(words, 2 * total));
  assert_int_equal(dup, 0);
  assert_int_equal(repeats64(words, 2 * total), 0);
  free(words);
  frond_uuid7_free(sig_g7);
  free(sig_ids);
}

/* A call that interrupts another's write of the thread's ULID memo, as
** a signal handler's would (the hook runs between the memo's new
** millisecond and its new base), still takes that millisecond's base:
** the three ULIDs of the millisecond, the interrupted one, the
** handler's and the next, have consecutive random parts (base plus
** the counter). With a stale base the handler's would not follow. */
static int64_t memo_now;
static frond_ulid *memo_g;
static uint8_t memo_mid[16];

static int64_t memo_clock(void *ctx) {
  (void)ctx;
  return memo_now;
}

static void memo_interrupt(void) {
  frond_ulid_next(memo_g, memo_mid);
}

static unsigned __int128 ulid_random(const uint8_t u[16]) {
  unsigned __int128 r = 0;
  for (int i = 6; i < 16; i++)
    r = r << 8 | u[i];
  return r;
}

static void test_ulid_memo_in_handler(void **state) {
  uint8_t a[16], b[16];
  (void)state;
  memo_now = 1700000000000;
  assert_int_equal(frond_ulid_create(&memo_g, memo_clock, NULL, NULL), 0);
  frond_ulid_next(memo_g, a); /* the memo holds this millisecond's base */
  memo_now++;
  frond__ulid_memo_hook(memo_interrupt);
  frond_ulid_next(memo_g, a);
  frond_ulid_next(memo_g, b);
  frond__ulid_memo_hook(NULL);
  assert_memory_equal(a, memo_mid, 6); /* one millisecond */
  assert_memory_equal(a, b, 6);
  assert_true(ulid_random(memo_mid) == ulid_random(a) + 1);
  assert_true(ulid_random(b) == ulid_random(a) + 2);
  frond_ulid_free(memo_g);
}

/* ---- batches ---- */

/* Under one fake clock and one fixed key, n values in one call are the n
** values of n single calls, byte for byte, for all three kinds; and a
** batch carries into the next milliseconds as single calls do. */
static void test_batches_equal_single_calls(void **state) {
  enum { N = 70000 }; /* past one ms of ULID's 2^16 counter */
  static const uint8_t key[16] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint8_t *one = malloc(16 * N), *many = malloc(16 * N);
  fake_clock c1, c2;
  (void)state;
  frond__id128_fixed_key(key);
  for (int kind = 0; kind < 3; kind++) {
    size_t w = kind == 2 ? 12 : 16;
    frond_uuid7 *u[2] = {NULL, NULL};
    frond_ulid *l[2] = {NULL, NULL};
    frond_objectid *o[2] = {NULL, NULL};
    fake_clock_set(&c1, INT64_C(1767225600000));
    fake_clock_set(&c2, INT64_C(1767225600000));
    if (kind == 0) {
      assert_int_equal(frond_uuid7_create(&u[0], fake_clock_read, &c1, NULL),
                       0);
      assert_int_equal(frond_uuid7_create(&u[1], fake_clock_read, &c2, NULL),
                       0);
      for (int i = 0; i < N; i++)
        frond_uuid7_next(u[0], one + 16 * i);
      frond__uuid7_next_n(u[1], N, many);
    } else if (kind == 1) {
      assert_int_equal(frond_ulid_create(&l[0], fake_clock_read, &c1, NULL), 0);
      assert_int_equal(frond_ulid_create(&l[1], fake_clock_read, &c2, NULL), 0);
      for (int i = 0; i < N; i++)
        frond_ulid_next(l[0], one + 16 * i);
      frond__ulid_next_n(l[1], N, many);
    } else {
      assert_int_equal(frond_objectid_create(&o[0], fake_clock_read, &c1, NULL),
                       0);
      assert_int_equal(frond_objectid_create(&o[1], fake_clock_read, &c2, NULL),
                       0);
      for (int i = 0; i < N; i++)
        frond_objectid_next(o[0], one + 12 * i);
      frond__objectid_next_n(o[1], N, many);
    }
    for (int i = 0; i < N; i++) {
      assert_memory_equal(one + w * i, many + w * i, w);
      if (i > 0 && kind != 2) /* ObjectId's counter wraps in a second */
        assert_true(memcmp(many + w * (i - 1), many + w * i, w) < 0);
    }
    for (int i = 0; i < 2; i++) {
      frond_uuid7_free(u[i]);
      frond_ulid_free(l[i]);
      frond_objectid_free(o[i]);
    }
  }
  frond__id128_fixed_key(NULL);
  free(one);
  free(many);
}

/* ---- the millisecond ---- */

static int64_t wall_ms(void) {
  return frond_clock_realtime(NULL);
}

/* Enough reads to start the ticker; every value at or behind the clock
** read after it, never ahead; and it follows the clock: it reaches a
** later millisecond (bounded: 10 s of wall time at most). The reads
** alternate between the call and its inlined form (rand_hot.h), and end
** with the ticker running: the inlined form read its word. */
static void test_ticker_follows_clock(void **state) {
  int64_t start = wall_ms(), t = 0;
  long reads = 0;
  (void)state;
  while (t < start + 20 && wall_ms() < start + 10000) {
    t = reads % 2 ? frond__id128_now_ms() : frond__now_ms();
    assert_true(t <= wall_ms());
    reads++;
  }
  assert_true(t >= start + 20);
  assert_true(reads > 256);
  assert_int_equal(atomic_load(&frond__ticker.state), FROND__TICK_RUNNING);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writers_match_bytewise),
      cmocka_unit_test(test_streams_distinct_across_threads),
      cmocka_unit_test(test_streams_distinct_across_fork),
      cmocka_unit_test(test_fixed_key),
      cmocka_unit_test(test_fixed_key_cleared_during_refill),
      cmocka_unit_test(test_ids_made_in_signal_handler),
      cmocka_unit_test(test_ulid_memo_in_handler),
      cmocka_unit_test(test_streams_keep_their_slots),
      cmocka_unit_test(test_streams_in_turn_keep_their_places),
      cmocka_unit_test(test_drawn_bytes_not_kept),
      cmocka_unit_test(test_draw_after_thread_state_freed),
      cmocka_unit_test(test_signal_while_thread_state_freed),
      cmocka_unit_test(test_batches_equal_single_calls),
      cmocka_unit_test(test_ticker_follows_clock),
  };
  return frond_run_tests(tests, NULL, NULL);
}
