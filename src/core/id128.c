/* SPDX-License-Identifier: Apache-2.0 */
/*
** id128.c -- UUIDv7, UUIDv4, ULID and MongoDB ObjectId generators, and
** their bytes (their string forms are id128_text.c's).
**
** The three time-ordered kinds share one engine: a 64-bit atomic word
** `state` = time << cbits | counter, the last value handed out. A call
** reads the clock once and moves the word to max(state + 1, the clock's
** first value), by one fetch-add while the word's unit is the clock's
** (engine_next_n): a new time unit starts the counter at its seed, the
** same unit increments it, and a counter that overflows carries into the
** time, which then runs ahead of the clock until the clock catches up
** (RFC 9562 section 6.2 allows exactly this; so does a clock that steps
** back). Values of one generator therefore strictly increase, across
** threads, with no lock.
**
**   kind      unit    cbits  seed at a new unit
**   UUIDv7    1 ms    16     15 random bits (top counter bit 0: a guard)
**   ULID      1 ms    16     0 (the random part is a per-ms random base
**                            of 79 bits plus the counter)
**   ObjectId  1 s     24     the previous counter + 1 (MongoDB's counter
**                            runs on across seconds from a random start)
**
** Random bits per ID (UUIDv7's 58, UUIDv4's 122) come from the calling
** thread's keystream for the generator (id128_rand.c): a fresh
** unguessable value per ID without a system call, a hash or a lock. What
** is drawn once per time unit stays a keyed function of the unit, SipHash
** (libsodium) under 16 bytes from the system's random numbers, so that
** every thread agrees on it: UUIDv7's counter seed and ULID's random base
** (computed once per thread and millisecond, not once per ID). After a
** fork a child would repeat its parent's IDs word for word, so each
** generator is armed with the process key (base/fork.h: a word the kernel
** wipes in a child, whatever made the fork) and draws a new key (and
** ObjectId a new process value) on its first call in the child, as the
** keystreams do (RFC 9562 section 6.9 asks for exactly this reseeding).
**
** The time: with the default clock, a ticker's word under sustained use
** (frond__now_ms, rand_hot.h; id128_rand.c); a clock given is called
** every time. The one-ID path is a leaf: the engine's add, the clock's
** and the keystream's common cases inlined (no call, no saved register:
** stores that the next ID's locked add would wait to drain).
** A batch moves the word once for all its values (engine_next_n), the
** values its single calls would have made one after the other.
*/
#include "base/busy.h"
#include "base/fork.h"
#include "core/core.h"
#include "core/formats.h"
#include "core/id128_text.h"
#include "core/rand_hot.h"

#include <pthread.h>
#include <stddef.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* ---- the shared engine ---- */

enum { K_UUID7, K_ULID, K_OID };

typedef struct id_engine {
  _Alignas(64) _Atomic uint64_t state;
  _Alignas(64) int kind;
  unsigned cbits;
  int64_t unit_ms;
  frond_clock_fn clock; /* NULL: the ticker's (frond__now_ms) */
  void *clock_ctx;
  uint64_t stream;       /* the keystream of its random bits */
  frond__fork_mark fork; /* the process key the keys were drawn under */
  pthread_mutex_t mu;    /* re-keying after fork */
  uint8_t key[16];       /* SipHash key for random bits */
  uint8_t process[5];    /* ObjectId's per-process value */
} id_engine;

/* Tests only (frond__id128_fixed_key): every generator's key and
** ObjectId process value from this key instead of the system's random
** numbers, so that two processes' random bits are equal. */
static _Atomic int fixed_set;
static uint8_t fixed_key[16];

void frond__id128_fixed_key(const uint8_t key[16]) {
  if (key == NULL) {
    atomic_store_explicit(&fixed_set, 0, memory_order_release);
    frond__rand_fixed(NULL);
    return;
  }
  memcpy(fixed_key, key, sizeof(fixed_key));
  frond__rand_fixed(key);
  atomic_store_explicit(&fixed_set, 1, memory_order_release);
}

static void engine_keys(id_engine *e) {
  if (atomic_load_explicit(&fixed_set, memory_order_acquire)) {
    memcpy(e->key, fixed_key, sizeof(e->key));
    memcpy(e->process, fixed_key, sizeof(e->process));
    return;
  }
  randombytes_buf(e->key, sizeof(e->key));
  randombytes_buf(e->process, sizeof(e->process));
}

static int engine_init(id_engine *e, int kind, frond_clock_fn clock,
                       void *clock_ctx, frond_error *err) {
  int rc;
  uint64_t start = 0;
  if ((rc = frond__sodium_init(err)) != 0)
    return rc;
  e->kind = kind;
  e->cbits = kind == K_OID ? 24 : 16;
  e->unit_ms = kind == K_OID ? 1000 : 1;
  e->clock = clock != frond_clock_realtime ? clock : NULL;
  e->clock_ctx = clock_ctx;
  e->stream = frond__rand_stream();
  pthread_mutex_init(&e->mu, NULL);
  engine_keys(e);
  frond__fork_arm(&e->fork);
  if (kind == K_OID && atomic_load(&fixed_set)) /* tests: not random */
    memcpy(&start, fixed_key + 5, 3);
  else if (kind == K_OID) /* the counter starts at a random value */
    randombytes_buf(&start, 3);
  atomic_init(&e->state, start & 0xffffff);
  return 0;
}

static uint64_t prf64(const id_engine *e, uint64_t v) {
  uint8_t in[8], out[8];
  uint64_t h = 0;
  for (int i = 0; i < 8; i++)
    in[i] = (uint8_t)(v >> (8 * i));
  crypto_shorthash(out, in, sizeof(in), e->key);
  for (int i = 7; i >= 0; i--)
    h = h << 8 | out[i];
  return h;
}

/* A child of fork() takes new keys before its first ID. The keys are
** written before the mark is re-armed (release), and a call that finds the
** mark its own (acquire) reads them after. */
__attribute__((noinline)) static void engine_rekey(id_engine *e) {
  pthread_mutex_lock(&e->mu);
  if (frond__fork_seen(&e->fork)) {
    engine_keys(e);
    frond__fork_arm(&e->fork);
  }
  pthread_mutex_unlock(&e->mu);
}

static inline void engine_check_fork(id_engine *e) {
  if (FROND__UNLIKELY(frond__fork_seen(&e->fork)))
    engine_rekey(e);
}

/* The first value of time unit u. */
static uint64_t unit_start(const id_engine *e, uint64_t u, uint64_t cur) {
  uint64_t mask = (UINT64_C(1) << e->cbits) - 1;
  switch (e->kind) {
  case K_UUID7:
    return u << 16 | (prf64(e, u << 16 | 0xffff) & 0x7fff);
  case K_ULID:
    return u << 16;
  default:
    return u << 24 | ((cur + 1) & mask);
  }
}

/* engine_next_n's call that found the word's unit behind its clock u,
** after its add left the word at cur + n. */
__attribute__((noinline)) static uint64_t
engine_catch_up(id_engine *e, uint64_t cur, uint64_t n, uint64_t u) {
  uint64_t seen = cur + n, next;
  for (;;) {
    next = cur + 1;
    if ((cur >> e->cbits) < u) {
      uint64_t first = unit_start(e, u, cur);
      if (first > next)
        next = first;
    }
    if (atomic_compare_exchange_strong_explicit(
            &e->state, &seen, next + (n - 1), memory_order_relaxed,
            memory_order_relaxed))
      return next;
    cur = seen;
  }
}

/* The time unit of now. The unit is 1 ms or 1 s (engine_init), spelt as
** the constant: a division by the field, even behind unit_ms == 1, is a
** divide on every ID (the compiler drops the test, as now / 1 is now). */
__attribute__((always_inline)) static inline uint64_t
unit_of(const id_engine *e, int64_t now) {
  return now <= 0 ? 0 : e->unit_ms == 1 ? (uint64_t)now : (uint64_t)now / 1000;
}

/* Take n values (n >= 1) at once: the first is what one call takes, the
** others follow it; returns the first. The common case, a unit the word
** has reached, is one fetch-add: the n values after the word's are the
** caller's alone, and no load of the word stands in front of the locked
** instruction (a compare-and-swap would wait for it). A call that finds
** the word's unit behind its clock moves the word up by compare-and-swap,
** from the word its add left: when no other call has moved it since, the
** add is as if not made (the values follow the word before it, as one
** compare-and-swap would have made them: no gap, so an ObjectId's counter
** still goes up by one per ID); when another has, the added values are
** left unused, a gap in the counter, and the loop goes on from the word
** as found. */
__attribute__((always_inline)) static inline uint64_t
engine_next_n(id_engine *e, uint64_t n) {
  int64_t now = e->clock == NULL ? frond__now_ms() : e->clock(e->clock_ctx);
  uint64_t u = unit_of(e, now), cur;
  engine_check_fork(e);
  cur = atomic_fetch_add_explicit(&e->state, n, memory_order_relaxed);
  if (FROND__LIKELY((cur >> e->cbits) >= u))
    return cur + 1;
  return engine_catch_up(e, cur, n, u);
}

__attribute__((always_inline)) static inline uint64_t
engine_next(id_engine *e) {
  return engine_next_n(e, 1);
}

/* One ID's path, a leaf. Each kind's next() takes its value with
** engine_hot and its other input (random bits, ULID's base) from an
** inlined common case, and writes the bytes: no call, so no saved
** register and no return address, stores the next ID's locked add would
** wait to drain. Anything else goes to the kind's cold function, a tail
** call, which takes the value engine_hot left it (engine_cold) and does
** the rest the long way.
**
** engine_hot: engine_next's common case. HOT_TAKEN: *v is the value.
** HOT_NONE: nothing was taken (a clock given, no running ticker, a fork
** since the keys); engine_cold calls engine_next. HOT_BEHIND: the add
** found the word's unit behind the clock's *u, *v is the word it found;
** engine_cold catches up from it, as engine_next would have. */
enum { HOT_TAKEN, HOT_NONE, HOT_BEHIND };

__attribute__((always_inline)) static inline int
engine_hot(id_engine *e, uint64_t *v, uint64_t *u) {
  int64_t now;
  *v = *u = 0;
  if (FROND__UNLIKELY(e->clock != NULL || !frond__now_ms_hot(&now) ||
                      frond__fork_seen(&e->fork)))
    return HOT_NONE;
  *u = unit_of(e, now);
  *v = atomic_fetch_add_explicit(&e->state, 1, memory_order_relaxed);
  if (FROND__UNLIKELY((*v >> e->cbits) < *u))
    return HOT_BEHIND;
  *v += 1;
  return HOT_TAKEN;
}

static uint64_t engine_cold(id_engine *e, int hot, uint64_t v, uint64_t u) {
  return hot == HOT_NONE     ? engine_next(e)
         : hot == HOT_BEHIND ? engine_catch_up(e, v, 1, u)
                             : v;
}

/* The three generators are an engine each; the public types wrap it. */
static int engine_create(id_engine **out, int kind, frond_clock_fn clock,
                         void *clock_ctx, frond_error *err) {
  id_engine *e;
  int rc;
  if ((e = aligned_alloc(64, sizeof(*e))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  memset(e, 0, sizeof(*e));
  if ((rc = engine_init(e, kind, clock, clock_ctx, err)) != 0) {
    free(e);
    return rc;
  }
  *out = e;
  return 0;
}

static void engine_free(id_engine *e) {
  if (e == NULL)
    return;
  sodium_memzero(e->key, sizeof(e->key));
  pthread_mutex_destroy(&e->mu);
  free(e);
}

/* ---- UUIDv7 ---- */

struct frond_uuid7 {
  id_engine e;
};

int frond_uuid7_create(frond_uuid7 **out, frond_clock_fn clock, void *clock_ctx,
                       frond_error *err) {
  id_engine *e = NULL;
  int rc;
  if (out == NULL)
    return frond__fail(err, FROND_EINVAL, "out is NULL");
  rc = engine_create(&e, K_UUID7, clock, clock_ctx, err);
  *out = (frond_uuid7 *)e;
  return rc;
}

static void put_be(uint8_t *p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--) {
    p[i] = (uint8_t)v;
    v >>= 8;
  }
}

/* 48 ms | ver 7 | rand_a = counter >> 4 | var 10 | counter & 15 | 58
** random bits. */
__attribute__((always_inline)) static inline void
uuid7_words(uint64_t v, uint64_t rnd, uint64_t w[2]) {
  uint64_t ms = v >> 16, ctr = v & 0xffff;
  w[0] = (ms & UINT64_C(0xffffffffffff)) << 16 | UINT64_C(0x7000) | ctr >> 4;
  w[1] =
      UINT64_C(2) << 62 | (ctr & 15) << 58 | (rnd & ((UINT64_C(1) << 58) - 1));
}

__attribute__((always_inline)) static inline void
uuid7_bytes(uint64_t v, uint64_t rnd, uint8_t out[16]) {
  uint64_t w[2];
  uuid7_words(v, rnd, w);
  frond__put_be64(out, w[0]);
  frond__put_be64(out + 8, w[1]);
}

__attribute__((always_inline)) static inline void
uuid7_put(frond_uuid7 *g, uint64_t v, uint8_t out[16]) {
  uuid7_bytes(v, frond__rand_take64(g->e.stream), out);
}

__attribute__((noinline)) static void
uuid7_cold(frond_uuid7 *g, int hot, uint64_t v, uint64_t u, uint8_t out[16]) {
  uuid7_put(g, engine_cold(&g->e, hot, v, u), out);
}

void frond_uuid7_next(frond_uuid7 *g, uint8_t out[16]) {
  uint64_t v, u, rnd;
  int hot = engine_hot(&g->e, &v, &u);
  if (FROND__UNLIKELY(hot != HOT_TAKEN ||
                      !frond__rand_try64(g->e.stream, &rnd))) {
    uuid7_cold(g, hot, v, u, out);
    return;
  }
  uuid7_bytes(v, rnd, out);
}

void frond__uuid7_next_n(frond_uuid7 *g, size_t n, uint8_t *out) {
  uint64_t v = engine_next_n(&g->e, n);
  for (size_t i = 0; i < n; i++)
    uuid7_put(g, v + i, out + 16 * i);
}

void frond_uuid7_free(frond_uuid7 *g) {
  engine_free(g != NULL ? &g->e : NULL);
}

/* UUIDv4: one process-wide stream, drawn per thread. */
static _Atomic uint64_t uuid4_stream;

static uint64_t uuid4_stream_of_process(void) {
  uint64_t s = atomic_load_explicit(&uuid4_stream, memory_order_relaxed);
  if (FROND__UNLIKELY(s == 0)) {
    uint64_t none = 0, mine = frond__rand_stream();
    s = atomic_compare_exchange_strong(&uuid4_stream, &none, mine) ? mine
                                                                   : none;
  }
  return s;
}

void frond__uuid4_next_n(size_t n, uint8_t *out) {
  if (n == 1) { /* one string at a time (format.c): one short draw */
    frond__uuid4_fast(out);
    return;
  }
  frond__rand_bytes(uuid4_stream_of_process(), out, 16 * n);
  for (size_t i = 0; i < n; i++, out += 16) {
    out[6] = (uint8_t)((out[6] & 0x0f) | 0x40);
    out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
  }
}

/* Version and variant set in the words, and the bytes written as two
** 8-byte stores: byte stores over them would keep the string writer's
** 8-byte loads waiting for the stores to drain (no forwarding from
** several stores), which cost a third of a UUIDv4 string. */
__attribute__((always_inline)) static inline void uuid4_words(uint64_t w[2]) {
  w[0] = (w[0] & ~UINT64_C(0xf000)) | UINT64_C(0x4000);     /* ver 4, byte 6 */
  w[1] = (w[1] & ~(UINT64_C(3) << 62)) | UINT64_C(2) << 62; /* var 10, byte 8 */
}

void frond__uuid4_fast(uint8_t out[16]) {
  uint64_t w[2];
  frond__rand_take(uuid4_stream_of_process(), w, 16);
  uuid4_words(w);
  frond__put_be64(out, w[0]);
  frond__put_be64(out + 8, w[1]);
}

int frond_uuid4(uint8_t out[16], frond_error *err) {
  int rc = frond__sodium_init(err);
  if (rc != 0)
    return rc;
  frond__uuid4_fast(out);
  return 0;
}

/* ---- ULID ---- */

struct frond_ulid {
  id_engine e;
};

int frond_ulid_create(frond_ulid **out, frond_clock_fn clock, void *clock_ctx,
                      frond_error *err) {
  id_engine *e = NULL;
  int rc;
  if (out == NULL)
    return frond__fail(err, FROND_EINVAL, "out is NULL");
  rc = engine_create(&e, K_ULID, clock, clock_ctx, err);
  *out = (frond_ulid *)e;
  return rc;
}

/* The last millisecond's random base this thread computed, and for which
** generator (its stream: never reused) and key (new after fork()). A
** call reads and writes it under the thread's mark (base/busy.h): a
** signal handler's call that interrupts one finds the mark set and
** computes its base without the memo, so it never pairs one millisecond
** with another's base, half written. */
static __thread struct {
  uint64_t stream, fork_key, ms, hi, lo;
} ulid_memo __attribute__((tls_model("initial-exec")));
FROND__BUSY_MARK(memo_busy);
static _Atomic(void (*)(void)) memo_hook;

void frond__ulid_memo_hook(void (*fn)(void)) {
  atomic_store(&memo_hook, fn);
}

/* 1 with the memo's base when it is the millisecond's; 0 when it is
** another's, or the call is a handler inside a call. No call. */
__attribute__((always_inline)) static inline int
ulid_memo_get(const id_engine *e, uint64_t ms, uint64_t *hi, uint64_t *lo) {
  int hit;
  if (FROND__UNLIKELY(memo_busy))
    return 0;
  FROND__BUSY_ENTER(memo_busy);
  hit = ulid_memo.stream == e->stream && ulid_memo.ms == ms &&
        ulid_memo.fork_key ==
            atomic_load_explicit(&e->fork.key, memory_order_relaxed);
  if (FROND__LIKELY(hit)) {
    *hi = ulid_memo.hi;
    *lo = ulid_memo.lo;
  }
  FROND__BUSY_LEAVE(memo_busy);
  return hit;
}

/* The millisecond's random base: 79 bits of SipHash-128 of the ms, so
** base + counter (< 2^16) never overflows 80 bits. The same for every
** thread: a function of the generator's key and the ms. */
static void ulid_base(const id_engine *e, uint64_t ms, uint64_t *hi,
                      uint64_t *lo) {
  uint64_t fk = atomic_load_explicit(&e->fork.key, memory_order_relaxed);
  uint8_t base[16], in[8];
  int memo = !memo_busy; /* 0: a handler inside a call */
  void (*hook)(void);
  if (ulid_memo_get(e, ms, hi, lo))
    return;
  for (int i = 0; i < 8; i++)
    in[i] = (uint8_t)(ms >> (8 * i));
  crypto_shorthash_siphashx24(base, in, sizeof(in), e->key);
  *hi = ((uint64_t)base[0] << 8 | base[1]) & 0x7fff; /* 16 + 64, top cleared */
  *lo = frond__get_be64(base + 2);
  if (!memo)
    return;
  FROND__BUSY_ENTER(memo_busy);
  ulid_memo.stream = e->stream;
  ulid_memo.fork_key = fk;
  ulid_memo.ms = ms;
  /* Tests: a call made here, as a handler's, with the memo half new. */
  if (atomic_load_explicit(&memo_hook, memory_order_relaxed) != NULL &&
      (hook = atomic_exchange(&memo_hook, NULL)) != NULL)
    hook();
  ulid_memo.hi = *hi;
  ulid_memo.lo = *lo;
  FROND__BUSY_LEAVE(memo_busy);
}

/* 48 ms | the millisecond's 80-bit base (hi: its top 16) + counter. */
__attribute__((always_inline)) static inline void
ulid_words(uint64_t v, uint64_t hi, uint64_t lo, uint64_t w[2]) {
  uint64_t ms = v >> 16, ctr = v & 0xffff;
  lo += ctr;
  if (lo < ctr)
    hi++;
  w[0] = (ms & UINT64_C(0xffffffffffff)) << 16 | hi;
  w[1] = lo;
}

__attribute__((always_inline)) static inline void
ulid_bytes(uint64_t v, uint64_t hi, uint64_t lo, uint8_t out[16]) {
  uint64_t w[2];
  ulid_words(v, hi, lo, w);
  frond__put_be64(out, w[0]);
  frond__put_be64(out + 8, w[1]);
}

static void ulid_put(const id_engine *e, uint64_t v, uint8_t out[16]) {
  uint64_t hi, lo;
  ulid_base(e, v >> 16, &hi, &lo);
  ulid_bytes(v, hi, lo, out);
}

__attribute__((noinline)) static void
ulid_cold(frond_ulid *g, int hot, uint64_t v, uint64_t u, uint8_t out[16]) {
  ulid_put(&g->e, engine_cold(&g->e, hot, v, u), out);
}

void frond_ulid_next(frond_ulid *g, uint8_t out[16]) {
  uint64_t v, u, hi, lo;
  int hot = engine_hot(&g->e, &v, &u);
  if (FROND__UNLIKELY(hot != HOT_TAKEN ||
                      !ulid_memo_get(&g->e, v >> 16, &hi, &lo))) {
    ulid_cold(g, hot, v, u, out);
    return;
  }
  ulid_bytes(v, hi, lo, out);
}

void frond__ulid_next_n(frond_ulid *g, size_t n, uint8_t *out) {
  uint64_t v = engine_next_n(&g->e, n);
  for (size_t i = 0; i < n; i++)
    ulid_put(&g->e, v + i, out + 16 * i);
}

void frond_ulid_free(frond_ulid *g) {
  engine_free(g != NULL ? &g->e : NULL);
}

/* ---- node scope ----
**
** scope=node: the string of a snowflake ID of the process' generator.
** The ID is embedded whole, after the time field that its own time fills,
** so two strings are equal only when their IDs are: uniqueness across the
** fleet is the snowflake IDs', resting on the node ID and the fence rule,
** not on random bits. What is left over is random (a PRF of the ID under
** the generator's key): 11 bits of UUIDv7, 17 of a ULID, none of an
** ObjectId.
**
**   UUIDv7   ms(48) | 7 | ID >> 51 (12) | 10 | ID & (2^51-1) (51) | r(11)
**   ULID     ms(48) | ID (63) | r(17)
**   ObjectId s(32)  | ID (64, the top bit 0)
*/

void frond__uuid7_of_id(frond_uuid7 *g, uint64_t id, int64_t unix_ms,
                        uint8_t out[16]) {
  uint64_t r, ms = unix_ms > 0 ? (uint64_t)unix_ms : 0, hi, lo;
  engine_check_fork(&g->e);
  r = prf64(&g->e, id) & 0x7ff;
  hi = (ms & UINT64_C(0xffffffffffff)) << 16 | UINT64_C(0x7000) | id >> 51;
  lo = UINT64_C(2) << 62 | (id & ((UINT64_C(1) << 51) - 1)) << 11 | r;
  put_be(out, hi, 8);
  put_be(out + 8, lo, 8);
}

void frond__ulid_of_id(frond_ulid *g, uint64_t id, int64_t unix_ms,
                       uint8_t out[16]) {
  uint64_t r, ms = unix_ms > 0 ? (uint64_t)unix_ms : 0;
  engine_check_fork(&g->e);
  r = prf64(&g->e, id) & 0x1ffff;
  put_be(out, ms & UINT64_C(0xffffffffffff), 6);
  put_be(out + 6, id >> 47, 2);
  put_be(out + 8, (id & ((UINT64_C(1) << 47) - 1)) << 17 | r, 8);
}

void frond__objectid_of_id(uint64_t id, int64_t unix_ms, uint8_t out[12]) {
  put_be(out, unix_ms > 0 ? (uint64_t)unix_ms / 1000 : 0, 4);
  put_be(out + 4, id, 8);
}

uint64_t frond__id_in(int kind, const uint8_t *b) {
  uint64_t hi = 0, lo = 0;
  for (int i = 0; i < 8; i++)
    hi = hi << 8 | b[i];
  for (int i = 8; i < (kind == FROND_FORMAT_OBJECTID ? 12 : 16); i++)
    lo = lo << 8 | b[i];
  switch (kind) {
  case FROND_FORMAT_UUID7:
    return (hi & 0xfff) << 51 | (lo & ((UINT64_C(1) << 62) - 1)) >> 11;
  case FROND_FORMAT_ULID:
    return (hi & 0xffff) << 47 | lo >> 17;
  default: /* ObjectId: bytes 4..11 */
    return (hi & 0xffffffff) << 32 | (lo & 0xffffffff);
  }
}

/* ---- ObjectId ---- */

struct frond_objectid {
  id_engine e;
};

int frond_objectid_create(frond_objectid **out, frond_clock_fn clock,
                          void *clock_ctx, frond_error *err) {
  id_engine *e = NULL;
  int rc;
  if (out == NULL)
    return frond__fail(err, FROND_EINVAL, "out is NULL");
  rc = engine_create(&e, K_OID, clock, clock_ctx, err);
  *out = (frond_objectid *)e;
  return rc;
}

/* 32-bit seconds | 5 process bytes | 24-bit counter: the first 8 bytes
** in *hi, the last 4 in *lo, big-endian. */
__attribute__((always_inline)) static inline void
objectid_words(const id_engine *e, uint64_t v, uint64_t *hi, uint32_t *lo) {
  uint32_t p;
  memcpy(&p, e->process, 4);
  *hi = ((v >> 24) & 0xffffffff) << 32 | __builtin_bswap32(p);
  *lo = (uint32_t)e->process[4] << 24 | (uint32_t)(v & 0xffffff);
}

/* As two stores. */
__attribute__((always_inline)) static inline void
objectid_put(const id_engine *e, uint64_t v, uint8_t out[12]) {
  uint64_t hi;
  uint32_t lo;
  objectid_words(e, v, &hi, &lo);
  frond__put_be64(out, hi);
  lo = __builtin_bswap32(lo);
  memcpy(out + 8, &lo, 4);
}

__attribute__((noinline)) static void objectid_cold(frond_objectid *g, int hot,
                                                    uint64_t v, uint64_t u,
                                                    uint8_t out[12]) {
  objectid_put(&g->e, engine_cold(&g->e, hot, v, u), out);
}

void frond_objectid_next(frond_objectid *g, uint8_t out[12]) {
  uint64_t v, u;
  int hot = engine_hot(&g->e, &v, &u);
  if (FROND__UNLIKELY(hot != HOT_TAKEN)) {
    objectid_cold(g, hot, v, u, out);
    return;
  }
  objectid_put(&g->e, v, out);
}

void frond__objectid_next_n(frond_objectid *g, size_t n, uint8_t *out) {
  uint64_t v = engine_next_n(&g->e, n);
  for (size_t i = 0; i < n; i++)
    objectid_put(&g->e, v + i, out + 12 * i);
}

void frond_objectid_free(frond_objectid *g) {
  engine_free(g != NULL ? &g->e : NULL);
}

/* ---- one string ----
**
** A format's one string: the kind's next() with the string written from
** the words (id128_text.h) where next() writes the bytes; none are
** stored and read back, and the path stays a leaf. Where the CPU has
** SSSE3 (format.c asks frond__text_ssse3); anything but the common case
** goes to text_cold, the bytes and the formatter the long way. */
#ifdef FROND__TEXT_SSSE3
/* g is any of the three: each is its engine (engine_create). */
_Static_assert(offsetof(frond_uuid7, e) == 0 && offsetof(frond_ulid, e) == 0 &&
                   offsetof(frond_objectid, e) == 0,
               "a generator is its engine");

__attribute__((noinline)) static int
text_cold(void *g, int kind, int hot, uint64_t v, uint64_t u, char *out) {
  uint8_t b[16];
  v = engine_cold(g, hot, v, u);
  if (kind == K_UUID7) {
    uuid7_put(g, v, b);
    frond_uuid_format(b, out);
  } else if (kind == K_ULID) {
    ulid_put(g, v, b);
    frond_ulid_format(b, out);
  } else {
    objectid_put(g, v, b);
    frond_objectid_format(b, out);
  }
  return 0;
}

__attribute__((noinline)) static int uuid4_text_cold(char *out) {
  uint8_t b[16];
  frond__uuid4_fast(b);
  frond_uuid_format(b, out);
  return 0;
}

/* The process' stream once it has one, the thread's keystream's bytes. */
FROND__TEXT_TARGET int frond__uuid4_next_text(char *out) {
  uint64_t s = atomic_load_explicit(&uuid4_stream, memory_order_relaxed), w[2];
  uint8_t *p;
  if (FROND__UNLIKELY(s == 0 || !frond__rand_hot_begin(s, 16, &p)))
    return uuid4_text_cold(out);
  memcpy(w, p, 16);
  frond__rand_hot_end(p, 16);
  uuid4_words(w);
  frond__uuid_text(frond__words_v(w[0], w[1]), out);
  return 0;
}

FROND__TEXT_TARGET int frond__uuid7_next_text(frond_uuid7 *g, char *out) {
  uint64_t v, u, rnd, w[2];
  int hot = engine_hot(&g->e, &v, &u);
  if (FROND__UNLIKELY(hot != HOT_TAKEN ||
                      !frond__rand_try64(g->e.stream, &rnd)))
    return text_cold(g, K_UUID7, hot, v, u, out);
  uuid7_words(v, rnd, w);
  frond__uuid_text(frond__words_v(w[0], w[1]), out);
  return 0;
}

FROND__TEXT_TARGET int frond__ulid_next_text(frond_ulid *g, char *out) {
  uint64_t v, u, hi, lo, w[2];
  int hot = engine_hot(&g->e, &v, &u);
  if (FROND__UNLIKELY(hot != HOT_TAKEN ||
                      !ulid_memo_get(&g->e, v >> 16, &hi, &lo)))
    return text_cold(g, K_ULID, hot, v, u, out);
  ulid_words(v, hi, lo, w);
  frond__ulid_text(w[0], w[1], out);
  return 0;
}

FROND__TEXT_TARGET int frond__objectid_next_text(frond_objectid *g, char *out) {
  uint64_t v, u, hi;
  uint32_t lo;
  int hot = engine_hot(&g->e, &v, &u);
  if (FROND__UNLIKELY(hot != HOT_TAKEN))
    return text_cold(g, K_OID, hot, v, u, out);
  objectid_words(&g->e, v, &hi, &lo);
  frond__objectid_text(hi, lo, out);
  return 0;
}
#endif
