/* SPDX-License-Identifier: Apache-2.0 */
/*
** id128.c -- UUIDv7, UUIDv4, ULID and MongoDB ObjectId generators, and
** their string forms.
**
** The three time-ordered kinds share one engine: a 64-bit atomic word
** `state` = time << cbits | counter, the last value handed out. A call
** reads the clock once and moves the word with one compare-and-swap to
** max(state + 1, the clock's first value): a new time unit starts the
** counter at its seed, the same unit increments it, and a counter that
** overflows carries into the time, which then runs ahead of the clock
** until the clock catches up (RFC 9562 section 6.2 allows exactly this;
** so does a clock that steps back). Values of one generator therefore
** strictly increase, across threads, with no lock.
**
**   kind      unit    cbits  seed at a new unit
**   UUIDv7    1 ms    16     15 random bits (top counter bit 0: a guard)
**   ULID      1 ms    16     0 (the random part is a per-ms random base
**                            of 79 bits plus the counter)
**   ObjectId  1 s     24     the previous counter + 1 (MongoDB's counter
**                            runs on across seconds from a random start)
**
** Random bits come from SipHash (libsodium) keyed with 16 bytes from the
** system's random numbers, over the state word: a fresh unguessable value
** per ID without a system call. After a fork a child would repeat its
** parent's IDs word for word, so each generator is armed with the process
** key (base/fork.h: a word the kernel wipes in a child, whatever made the
** fork) and draws a new key (and ObjectId a new process value) on its
** first call in the child (RFC 9562 section 6.9 asks for exactly this
** reseeding).
*/
#include "base/fork.h"
#include "core/core.h"
#include "core/formats.h"

#include <pthread.h>
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
  frond_clock_fn clock;
  void *clock_ctx;
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
    return;
  }
  memcpy(fixed_key, key, sizeof(fixed_key));
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
  e->clock = clock != NULL ? clock : frond_clock_realtime;
  e->clock_ctx = clock_ctx;
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
static void engine_check_fork(id_engine *e) {
  if (FROND__LIKELY(!frond__fork_seen(&e->fork)))
    return;
  pthread_mutex_lock(&e->mu);
  if (frond__fork_seen(&e->fork)) {
    engine_keys(e);
    frond__fork_arm(&e->fork);
  }
  pthread_mutex_unlock(&e->mu);
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

static uint64_t engine_next(id_engine *e) {
  int64_t now = e->clock(e->clock_ctx);
  uint64_t u = now > 0 ? (uint64_t)now / (uint64_t)e->unit_ms : 0;
  uint64_t cur = atomic_load_explicit(&e->state, memory_order_relaxed), next;
  engine_check_fork(e);
  do {
    next = cur + 1;
    if ((cur >> e->cbits) < u) {
      uint64_t first = unit_start(e, u, cur);
      if (first > next)
        next = first;
    }
  } while (!atomic_compare_exchange_weak_explicit(
      &e->state, &cur, next, memory_order_relaxed, memory_order_relaxed));
  return next;
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

void frond_uuid7_next(frond_uuid7 *g, uint8_t out[16]) {
  uint64_t v = engine_next(&g->e), ms = v >> 16, ctr = v & 0xffff;
  uint64_t rnd = prf64(&g->e, v);
  /* 48 ms | ver 7 | rand_a = counter >> 4 | var 10 | counter & 15 | 58
  ** random bits. */
  uint64_t hi =
      (ms & UINT64_C(0xffffffffffff)) << 16 | UINT64_C(0x7000) | ctr >> 4;
  uint64_t lo =
      UINT64_C(2) << 62 | (ctr & 15) << 58 | (rnd & ((UINT64_C(1) << 58) - 1));
  put_be(out, hi, 8);
  put_be(out + 8, lo, 8);
}

void frond_uuid7_free(frond_uuid7 *g) {
  engine_free(g != NULL ? &g->e : NULL);
}

int frond_uuid4(uint8_t out[16], frond_error *err) {
  int rc = frond__sodium_init(err);
  if (rc != 0)
    return rc;
  randombytes_buf(out, 16);
  out[6] = (uint8_t)((out[6] & 0x0f) | 0x40);
  out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
  return 0;
}

static const char hexdig[] = "0123456789abcdef";

void frond_uuid_format(const uint8_t u[16], char out[FROND_UUID_STRLEN + 1]) {
  char *p = out;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      *p++ = '-';
    *p++ = hexdig[u[i] >> 4];
    *p++ = hexdig[u[i] & 15];
  }
  *p = '\0';
}

/* n hex digits (n even) into n/2 bytes, skipping hyphens at the given
** positions of a UUID when dashed. */
static int hex_bytes(const char *s, size_t len, uint8_t *out, size_t nbytes,
                     int dashed) {
  size_t i = 0, k = 0;
  while (k < nbytes * 2) {
    int v;
    if (dashed && (i == 8 || i == 13 || i == 18 || i == 23)) {
      if (i >= len || s[i] != '-')
        return -1;
      i++;
      continue;
    }
    if (i >= len || (v = frond__hexval((unsigned char)s[i])) < 0)
      return -1;
    out[k / 2] = (uint8_t)(k % 2 == 0 ? v << 4 : (out[k / 2] | v));
    i++;
    k++;
  }
  return i == len ? 0 : -1;
}

int frond_uuid_parse(const char *s, size_t len, uint8_t out[16],
                     frond_error *err) {
  if (s != NULL && (len == 36 || len == 32) &&
      hex_bytes(s, len, out, 16, len == 36) == 0)
    return 0;
  return frond__fail(err, FROND_EID_INVALID,
                     "'%.*s' is not a UUID (36 characters "
                     "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, or 32 hex digits)",
                     s == NULL ? 0 : (int)(len > 64 ? 64 : len), s ? s : "");
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

void frond_ulid_next(frond_ulid *g, uint8_t out[16]) {
  uint64_t v = engine_next(&g->e), ms = v >> 16, ctr = v & 0xffff;
  uint8_t base[16], in[8];
  uint64_t hi, lo;
  /* The millisecond's random base: 79 bits of SipHash-128 of the ms, so
  ** base + counter (< 2^16) never overflows 80 bits. */
  for (int i = 0; i < 8; i++)
    in[i] = (uint8_t)(ms >> (8 * i));
  crypto_shorthash_siphashx24(base, in, sizeof(in), g->e.key);
  hi = 0;
  lo = 0;
  for (int i = 0; i < 2; i++)
    hi = hi << 8 | base[i];
  for (int i = 2; i < 10; i++)
    lo = lo << 8 | base[i];
  hi &= 0x7fff; /* 16 + 64 = 80 bits, top one cleared: 79 */
  lo += ctr;
  if (lo < ctr)
    hi++;
  put_be(out, ms & UINT64_C(0xffffffffffff), 6);
  put_be(out + 6, hi, 2);
  put_be(out + 8, lo, 8);
}

void frond_ulid_free(frond_ulid *g) {
  engine_free(g != NULL ? &g->e : NULL);
}

void frond_ulid_format(const uint8_t u[16], char out[FROND_ULID_STRLEN + 1]) {
  /* 128 bits as 26 symbols of 5 bits, the first holding the top 3. */
  uint64_t hi = 0, lo = 0;
  for (int i = 0; i < 8; i++)
    hi = hi << 8 | u[i];
  for (int i = 8; i < 16; i++)
    lo = lo << 8 | u[i];
  for (int i = 25; i >= 0; i--) {
    out[i] = frond__crockford[lo & 31];
    lo = lo >> 5 | hi << 59;
    hi >>= 5;
  }
  out[26] = '\0';
}

int frond_ulid_parse(const char *s, size_t len, uint8_t out[16],
                     frond_error *err) {
  uint64_t hi = 0, lo = 0;
  int v = -1;
  if (s != NULL && len == 26 &&
      (v = frond__crockford_value((unsigned char)s[0])) >= 0 && v <= 7) {
    size_t i;
    for (i = 0; i < 26; i++) {
      if ((v = frond__crockford_value((unsigned char)s[i])) < 0)
        break;
      hi = hi << 5 | lo >> 59;
      lo = lo << 5 | (uint64_t)v;
    }
    if (i == 26) {
      put_be(out, hi, 8);
      put_be(out + 8, lo, 8);
      return 0;
    }
  }
  return frond__fail(err, FROND_EID_INVALID,
                     "'%.*s' is not a ULID (26 Crockford base32 characters, "
                     "the first 0-7)",
                     s == NULL ? 0 : (int)(len > 64 ? 64 : len), s ? s : "");
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

void frond_objectid_next(frond_objectid *g, uint8_t out[12]) {
  uint64_t v = engine_next(&g->e);
  put_be(out, (v >> 24) & 0xffffffff, 4);
  memcpy(out + 4, g->e.process, 5);
  put_be(out + 9, v & 0xffffff, 3);
}

void frond_objectid_free(frond_objectid *g) {
  engine_free(g != NULL ? &g->e : NULL);
}

void frond_objectid_format(const uint8_t o[12],
                           char out[FROND_OBJECTID_STRLEN + 1]) {
  for (int i = 0; i < 12; i++) {
    out[2 * i] = hexdig[o[i] >> 4];
    out[2 * i + 1] = hexdig[o[i] & 15];
  }
  out[24] = '\0';
}

int frond_objectid_parse(const char *s, size_t len, uint8_t out[12],
                         frond_error *err) {
  if (s != NULL && len == 24 && hex_bytes(s, len, out, 12, 0) == 0)
    return 0;
  return frond__fail(err, FROND_EID_INVALID,
                     "'%.*s' is not an ObjectId (24 hex digits)",
                     s == NULL ? 0 : (int)(len > 64 ? 64 : len), s ? s : "");
}
