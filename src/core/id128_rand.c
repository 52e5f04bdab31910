/* SPDX-License-Identifier: Apache-2.0 */
/*
** id128_rand.c -- what a 128-bit ID reads on every call, at the
** generator's speed: unguessable bits, and the millisecond.
**
** Random bits: a keystream per thread and per generator ("stream"), drawn
** 1 KiB at a time into a buffer the calls read 8 or 16 bytes at a time:
** AES-256-CTR on a CPU with AES-NI (rand_aes.c, about four times as fast
** here), ChaCha20 elsewhere (libsodium's vector code runs whole 512-byte
** blocks). Each refill keeps the first 32 bytes of its draw as the next
** key (Bernstein's fast-key-erasure generator, as OpenBSD's arc4random
** and Linux's CRNG): the key that made bytes already handed out is gone,
** so a copy of the process' memory shows no earlier bits. A stream's
** first key comes from the thread's own master key, itself a
** fast-key-erasure ChaCha20 (on every CPU) seeded from the system's
** random numbers (libsodium's randombytes_buf); every RESEED refills
** (1 MiB) the stream takes a new key straight from the system, so that a
** state that leaked stops predicting within a megabyte. Why a keystream
** and not a keyed hash per ID (SipHash, what the first releases used): it
** makes whole blocks in vector registers for a cycle per byte or less,
** against a SipHash call per 8 bytes; and a keystream under an unknown
** key is indistinguishable from random, so an observer of any number of
** IDs learns nothing of the bits of others (docs/formats.md).
**
** Per thread: no lock and no shared cache line on the hot path. Each
** thread holds STREAMS slots, any of which may hold any stream: a call
** for the stream of the thread's last call goes straight to its slot,
** another looks through the slots and, when its stream holds none, takes
** the least recently used; the last call's slot is also kept in the
** thread's own storage (hot), so that a call for its stream reads its
** bytes two loads from the thread pointer. A thread going round up to
** STREAMS generators keeps each one's buffer, whatever their numbers.
** fork(): a slot and the master key are armed with the process key
** (base/fork.h); a child finds them foreign on its first call and draws
** new keys from the system before any bit, so parent and child never
** share a byte of keystream, whatever made the fork.
**
** Tests (frond__id128_fixed_key): every stream starts from one given key
** and never takes the system's, so that two generators, or two processes,
** draw the same bits.
**
** The millisecond: clock_gettime(CLOCK_REALTIME) costs about 24 ns here,
** more than the whole snowflake next(). Under sustained use a ticker
** thread stores the wall clock's millisecond in one word about once per
** millisecond and the calls read that word, as the snowflake generator's
** ticker moves its clock; the ticker stops after a second without a
** reader, and calls then read the clock themselves until 256 have done so
** in a row. The time may lag the wall clock by up to a tick (more on a
** machine too loaded to run the ticker), never lead it; order never rests
** on it (id128.c moves each generator's word by compare-and-swap).
*/
#include "base/busy.h"
#include "base/fork.h"
#include "core/formats.h"

#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the keystream ---- */

#define STREAMS 16
#define DRAW 1024
#define RBUF (DRAW - 32)
#define RESEED 1024 /* refills: 1 MiB */

typedef struct frond__rand_slot {
  uint64_t stream; /* 0: empty */
  unsigned epoch;  /* fixed_word when its key was made */
  frond__fork_mark fork;
  unsigned pos; /* next unread byte of buf */
  unsigned refills;
  uint64_t used;   /* the thread's count of slot changes at its last use */
  uint8_t key[32]; /* key and buf are one keystream draw: keep together */
  uint8_t buf[RBUF];
} rand_slot;

typedef struct rand_thread {
  frond__fork_mark fork;
  int seeded;
  uint64_t rekeys;  /* a slot took a new key for a stream */
  uint64_t changes; /* calls that found another stream in slot[last] */
  unsigned last;    /* the slot of the last call's stream */
  uint8_t master[32];
  rand_slot slot[STREAMS];
} rand_thread;

static __thread rand_thread *mine __attribute__((tls_model("initial-exec")));

/* The last call's slot, in the thread's own storage: a call for the same
** stream with bytes left reads its bytes in two steps from the thread
** pointer (the cursor, then the bytes), where the slot's fields sit three
** loads away (mine, its last slot, the slot's cursor). That matters
** because a 128-bit ID's loads wait for its generator's locked add to
** finish: each load in the chain is time on every ID. While a stream is
** hot its slot's pos is stale; hot_flush writes it back before any other
** code reads the slot. The fork mark is the slot's. */
__thread frond__rand_hot frond__hot __attribute__((tls_model("initial-exec")));

/* No slot hot: every call goes to frond__rand_bytes. */
static void hot_clear(void) {
  frond__hot.stream = 0;
  frond__hot.p = frond__hot.end = NULL;
  frond__hot.slot = NULL;
}

static void hot_flush(void) {
  if (frond__hot.stream != 0)
    frond__hot.slot->pos = (unsigned)(frond__hot.p - frond__hot.slot->buf);
  hot_clear();
}

static void hot_load(rand_slot *s) {
  frond__hot.stream = s->stream;
  frond__hot.slot = s;
  frond__hot.p = s->buf + s->pos;
  frond__hot.end = s->buf + RBUF;
  frond__hot.fork.at = s->fork.at;
  atomic_store_explicit(
      &frond__hot.fork.key,
      atomic_load_explicit(&s->fork.key, memory_order_relaxed),
      memory_order_relaxed);
}
static pthread_key_t rand_key;
static pthread_once_t rand_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t streams;

/* Tests: a fixed key for every stream. Each change of the setting starts
** an epoch, and a slot keyed in another epoch takes a new key at its next
** refill, so no stream goes on from the fixed key once it is cleared. The
** epoch and whether the key is set are one word (epoch << 1 | set), read
** once by a refill: a refill that keys a slot under the fixed key records
** the epoch the key was set in, never a later one. */
static _Atomic unsigned fixed_word;
static uint8_t fixed_key[32];
static _Atomic(void (*)(void)) refill_hook;

void frond__rand_refill_hook(void (*fn)(void)) {
  atomic_store(&refill_hook, fn);
}

/* busy is set while a call reads or changes this thread's state; a call
** that finds it set is a signal handler that interrupted one on its own
** thread (base/busy.h). */
__thread volatile sig_atomic_t frond__rand_busy
    __attribute__((tls_model("initial-exec")));
#define ENTER() FROND__BUSY_ENTER(frond__rand_busy)
#define LEAVE() FROND__BUSY_LEAVE(frond__rand_busy)

/* Set once the thread's state is freed at its exit: a later destructor
** that draws takes the system's bits rather than a state no destructor
** would free. */
static __thread unsigned char gone __attribute__((tls_model("initial-exec")));

static _Atomic(void (*)(void)) exit_hook;

void frond__rand_exit_hook(void (*fn)(void)) {
  atomic_store(&exit_hook, fn);
}

/* The state is let go of under the mark, before it is freed: a handler
** that draws while it is freed finds the thread gone (the system's bits),
** never a pointer to it. */
static void rand_thread_free(void *p) {
  void (*hook)(void);
  ENTER();
  gone = 1;
  mine = NULL;
  hot_clear();
  LEAVE();
  /* Tests only: a load first, so that exits share no locked write. */
  if (atomic_load_explicit(&exit_hook, memory_order_relaxed) != NULL &&
      (hook = atomic_exchange(&exit_hook, NULL)) != NULL)
    hook();
  if (p != NULL) {
    sodium_memzero(p, sizeof(rand_thread));
    free(p);
  }
}

static void rand_key_make(void) {
  pthread_key_create(&rand_key, rand_thread_free);
}

uint64_t frond__rand_stream(void) {
  return atomic_fetch_add_explicit(&streams, 1, memory_order_relaxed) + 1;
}

void frond__rand_fixed(const uint8_t key[16]) {
  unsigned w = atomic_load_explicit(&fixed_word, memory_order_relaxed);
  if (key != NULL) {
    memcpy(fixed_key, key, 16);
    memcpy(fixed_key + 16, key, 16);
  }
  /* Release: a refill that sees the word set (acquire) sees the key. */
  while (!atomic_compare_exchange_weak_explicit(
      &fixed_word, &w, ((w >> 1) + 1) << 1 | (key != NULL),
      memory_order_release, memory_order_relaxed))
    ;
}

/* A fresh key for a stream of this thread: from the master key, which is
** seeded from the system (again in a child of fork()). */
static void stream_key(rand_thread *t, uint8_t out[32]) {
  static const uint8_t nonce[crypto_stream_chacha20_NONCEBYTES];
  uint8_t k[32], draw[64];
  if (!t->seeded || frond__fork_seen(&t->fork)) {
    randombytes_buf(t->master, sizeof(t->master));
    frond__fork_arm(&t->fork);
    t->seeded = 1;
  }
  memcpy(k, t->master, 32);
  crypto_stream_chacha20(draw, sizeof(draw), nonce, k);
  memcpy(t->master, draw, 32);
  memcpy(out, draw + 32, 32);
  sodium_memzero(k, sizeof(k));
  sodium_memzero(draw, sizeof(draw));
}

/* Refill slot s for stream: a new key when the slot held another stream,
** was made in another process or is due a reseed; then the next draw. */
static void refill(rand_thread *t, rand_slot *s, uint64_t stream) {
  static const uint8_t nonce[crypto_stream_chacha20_NONCEBYTES];
  uint8_t k[32];
  unsigned epoch = atomic_load_explicit(&fixed_word, memory_order_acquire);
  int fixed = (int)(epoch & 1);
  void (*hook)(void) = atomic_exchange(&refill_hook, NULL);
  if (hook != NULL)
    hook();
  if (s->stream != stream || s->epoch != epoch || frond__fork_seen(&s->fork)) {
    if (fixed)
      memcpy(s->key, fixed_key, 32);
    else
      stream_key(t, s->key);
    s->stream = stream;
    s->epoch = epoch;
    s->refills = 0;
    t->rekeys++;
    frond__fork_arm(&s->fork);
  } else if (++s->refills >= RESEED && !fixed) {
    randombytes_buf(s->key, sizeof(s->key));
    s->refills = 0;
  }
  s->pos = 0;
  if (frond__rand_aes_draw(s->key, sizeof(s->key) + sizeof(s->buf)) == 0)
    return; /* AES-256-CTR (rand_aes.c) */
  memcpy(k, s->key, 32);
  crypto_stream_chacha20(s->key, sizeof(s->key) + sizeof(s->buf), nonce, k);
  sodium_memzero(k, sizeof(k));
}

static rand_thread *thread_state(void) {
  rand_thread *t;
  pthread_once(&rand_once, rand_key_make);
  if ((t = calloc(1, sizeof(*t))) == NULL)
    return NULL;
  pthread_setspecific(rand_key, t);
  mine = t;
  return t;
}

/* The slot of stream: the last call's, one that holds it, or the least
** recently used (which refill() then keys for it). */
static rand_slot *slot_find(rand_thread *t, uint64_t stream) {
  unsigned i, lru = 0;
  for (i = 0; i < STREAMS; i++) {
    if (t->slot[i].stream == stream)
      break;
    if (t->slot[i].used < t->slot[lru].used)
      lru = i;
  }
  if (i == STREAMS)
    i = lru;
  t->last = i;
  t->slot[i].used = ++t->changes;
  return &t->slot[i];
}

static inline rand_slot *slot_of(rand_thread *t, uint64_t stream) {
  rand_slot *s = &t->slot[t->last];
  return FROND__LIKELY(s->stream == stream) ? s : slot_find(t, stream);
}

static void draw_bytes(rand_thread *t, uint64_t stream, void *out, size_t n) {
  rand_slot *s = slot_of(t, stream);
  while (n > 0) {
    size_t k;
    if (FROND__UNLIKELY(s->stream != stream || s->pos >= RBUF ||
                        frond__fork_seen(&s->fork)))
      refill(t, s, stream);
    k = RBUF - s->pos < n ? RBUF - s->pos : n;
    memcpy(out, s->buf + s->pos, k);
    memset(s->buf + s->pos, 0, k); /* handed out: not kept */
    s->pos += (unsigned)k;
    out = (uint8_t *)out + k;
    n -= k;
  }
}

void frond__rand_bytes(uint64_t stream, void *out, size_t n) {
  rand_thread *t;
  if (FROND__UNLIKELY(frond__rand_busy)) {
    randombytes_buf(out, n); /* a handler inside a draw */
    return;
  }
  ENTER();
  hot_flush();
  if ((t = mine) != NULL || (!gone && (t = thread_state()) != NULL)) {
    draw_bytes(t, stream, out, n);
    hot_load(&t->slot[t->last]);
  } else
    randombytes_buf(out, n); /* exiting, or no memory: the system's */
  LEAVE();
}

/* The ID paths inline their draws (rand_hot.h); this call serves the rest. */
uint64_t frond__rand64(uint64_t stream) {
  uint64_t v;
  frond__rand_bytes(stream, &v, 8);
  return v;
}

const void *frond__rand_state(size_t *len) {
  *len = sizeof(rand_thread);
  return mine;
}

uint64_t frond__rand_rekeys(void) {
  return mine != NULL ? mine->rekeys : 0;
}

/* ---- the millisecond ---- */

#define TICK_AFTER 256    /* clock reads in a row before a ticker starts */
#define TICK_IDLE_MS 1000 /* a ticker stops after this long unread */

frond__tick frond__ticker;
static _Atomic uint64_t tick_gen;    /* the running ticker's number */
static _Atomic unsigned tick_direct; /* clock reads while stopped */
static _Atomic int tick_fork_armed;

static void *ticker(void *arg) {
  uint64_t gen = (uint64_t)(uintptr_t)arg;
  int idle = 0;
  for (;;) {
    struct timespec ts;
    long ns;
    clock_gettime(CLOCK_REALTIME, &ts);
    atomic_store_explicit(&frond__ticker.ms,
                          (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
                          memory_order_relaxed);
    /* Wake just after the next millisecond begins. */
    ns = 1000000 - ts.tv_nsec % 1000000 + 20000;
    frond__sleep_ns(ns);
    if (atomic_load_explicit(&tick_gen, memory_order_relaxed) != gen)
      return NULL; /* another ticker took over */
    if (atomic_exchange_explicit(&frond__ticker.read, 0, memory_order_relaxed))
      idle = 0;
    else if (++idle >= TICK_IDLE_MS) {
      int running = FROND__TICK_RUNNING;
      atomic_store_explicit(&tick_direct, 0, memory_order_relaxed);
      atomic_compare_exchange_strong(&frond__ticker.state, &running,
                                     FROND__TICK_STOPPED);
      return NULL;
    }
  }
}

static void tick_start(int64_t now) {
  int stopped = FROND__TICK_STOPPED;
  pthread_t th;
  pthread_attr_t a;
  sigset_t all, old;
  uint64_t gen;
  if (!atomic_compare_exchange_strong(&frond__ticker.state, &stopped,
                                      FROND__TICK_STARTING))
    return;
  gen = atomic_fetch_add(&tick_gen, 1) + 1;
  atomic_store_explicit(&frond__ticker.ms, now, memory_order_relaxed);
  frond__fork_arm(&frond__ticker.fork);
  /* Release: a reader that sees it armed (acquire) sees the mark's word. */
  atomic_store_explicit(&tick_fork_armed, 1, memory_order_release);
  /* The ticker takes no signal: they stay the application's threads'. */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&th, &a, ticker, (void *)(uintptr_t)gen) != 0)
    atomic_store(&frond__ticker.state,
                 FROND__TICK_FAILED); /* read the clock each call */
  else
    atomic_store_explicit(&frond__ticker.state, FROND__TICK_RUNNING,
                          memory_order_release);
  pthread_attr_destroy(&a);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int64_t frond__id128_now_ms(void) {
  int st = atomic_load_explicit(&frond__ticker.state, memory_order_acquire);
  int64_t now;
  if (FROND__LIKELY(st == FROND__TICK_RUNNING &&
                    !frond__fork_seen(&frond__ticker.fork))) {
    if (!atomic_load_explicit(&frond__ticker.read, memory_order_relaxed))
      atomic_store_explicit(&frond__ticker.read, 1, memory_order_relaxed);
    return atomic_load_explicit(&frond__ticker.ms, memory_order_relaxed);
  }
  now = frond_clock_realtime(NULL);
  if (atomic_load_explicit(&tick_fork_armed, memory_order_acquire) &&
      frond__fork_seen(&frond__ticker.fork)) {
    /* A child of fork(): the parent's ticker is not here. */
    atomic_fetch_add(&tick_gen, 1);
    atomic_store(&tick_direct, 0);
    atomic_store(&frond__ticker.state, FROND__TICK_STOPPED);
    frond__fork_arm(&frond__ticker.fork);
    return now;
  }
  if (st == FROND__TICK_STOPPED &&
      atomic_fetch_add_explicit(&tick_direct, 1, memory_order_relaxed) + 1 >=
          TICK_AFTER)
    tick_start(now);
  return now;
}
