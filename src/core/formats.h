/* SPDX-License-Identifier: Apache-2.0 */
/*
** formats.h -- pieces shared by the ID format sources (format.c,
** format_decode.c, format_spec.c, order.c, siphash_lanes.c, alphabet.c,
** damm.c, id128.c, id128_text.c, tz.c, period.c); not part of the API.
*/
#ifndef FROND_FORMATS_H
#define FROND_FORMATS_H

#include "base/base.h"
#include "base/fork.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

/* ---- alphabets and check characters (alphabet.c, damm.c) ---- */

/* Crockford's base32 symbols, and the five extra check symbols after them
** ("*~$=U" for 32..36). */
extern const char frond__crockford[38];
/* The value of a base32 character: any case, I/L read as 1 and O as 0.
** -1 for anything else (U included: it is only a check symbol). */
int frond__crockford_value(unsigned char c);
/* The value of a Crockford check symbol (0..36), -1 for anything else. */
int frond__crockford_check_value(unsigned char c);
/* 0-9A-Za-z, in ASCII order so that fixed-length strings sort like the
** numbers they hold. */
extern const char frond__base62[63];
int frond__base62_value(unsigned char c);

/* Check characters over symbol values (digits 0..9 for Damm and Luhn,
** 0..31 for mod 37). Each returns the check symbol's value. */
int frond__damm(const uint8_t *v, size_t n);
/* Damm's interim digit after v[0..n) from the interim digit s (0..9). */
int frond__damm_from(unsigned s, const uint8_t *v, size_t n);
/* The check digits of n numbers of w digits each (number j's at v + j *
** w), number j continued from the interim digit s[j], into out[j]
** (damm.c: sixteen side by side where the CPU can). */
void frond__damm_n(const uint8_t *v, size_t w, size_t n, const uint8_t *s,
                   uint8_t *out);
/* Tests: every number through frond__damm_from. */
void frond__damm_force_scalar(int on);
int frond__luhn(const uint8_t *v, size_t n);
int frond__mod37(const uint8_t *v, size_t n);

/* Write v (< radix^width) as width symbols of the alphabet, high first. */
void frond__put_radix(uint64_t v, unsigned radix, const char *alphabet,
                      unsigned width, char *out);

/* ---- the keyed permutation (order.c) ---- */

#define FROND__PERM_MAX_WIDTH 19

/*
** A permutation of [0, radix^width): a Feistel network on the two halves
** of the numeral string, the high ceil(width/2) symbols (A, modulus a)
** and the low floor(width/2) (B, modulus b). A round turns (A, B) into
** (B, (A + F_i(B)) mod a) and swaps the two moduli; an even round count
** brings the halves back to their places. F_i is SipHash-2-4 (siphash.h; bit
*for
** bit libsodium's crypto_shorthash) of (i << 56 | B) under the format's key,
*reduced to
** the modulus. The domain is exactly radix^width, so no cycle-walking is
** needed.
*/
typedef struct frond__perm {
  unsigned radix, width, rounds;
  unsigned adig, bdig; /* symbols in A and B */
  uint64_t a, b;       /* radix^adig, radix^bdig */
} frond__perm;

int frond__perm_init(frond__perm *p, unsigned radix, unsigned width,
                     unsigned rounds);
/* x < radix^width (or any x when that exceeds 2^64): width symbol values
** into out, high first. */
void frond__perm_apply(const frond__perm *p, const uint8_t key[16], uint64_t x,
                       uint8_t *out);
/* The inverse; -1 when the preimage does not fit in 64 bits. */
int frond__perm_invert(const frond__perm *p, const uint8_t key[16],
                       const uint8_t *in, uint64_t *x);

/*
** Many IDs at once: the permutation of x[i] (each as frond__perm_apply
** takes it) into out + i * p->width, for i < n. Identical results to
** frond__perm_apply, in a fraction of the time per ID: the rounds of up to
** 16 IDs run side by side through a SIMD SipHash kernel (siphash_lanes.c).
** Fewer IDs than the kernel's min_lanes go one at a time, which is then
** faster. kernel NULL: the fastest this machine runs.
*/
typedef struct frond__sip_kernel {
  const char *name; /* "avx512", "avx2", "libsodium" */
  /* h[j] = SipHash-2-4 under key of the 8 little-endian bytes of m[j]. */
  void (*hash16)(const uint8_t key[16], const uint64_t m[16], uint64_t h[16]);
  /* A kernel call costs the same for 1 lane as for 16: from this many IDs
  ** on it beats frond__perm_apply one ID at a time (measured). */
  size_t min_lanes;
  /* NULL, or every round of the permutation (order.c) at once on 16 lanes
  ** of halves (A[j], B[j]) with moduli a and b, kept in vector registers:
  ** the same result as hash16 and the scalar arithmetic round by round. */
  void (*feistel16)(const uint8_t key[16], unsigned rounds, uint64_t a,
                    uint64_t b, uint64_t A[16], uint64_t B[16]);
} frond__sip_kernel;
/* The kernels this machine runs, fastest first; the last is libsodium's
** crypto_shorthash, one call per word. Thread-safe. */
size_t frond__sip_kernels(const frond__sip_kernel **list);
void frond__perm_apply_n(const frond__perm *p, const uint8_t key[16],
                         const uint64_t *x, size_t n, uint8_t *out,
                         const frond__sip_kernel *kernel);

/* The halves' arithmetic, shared with order_aes.c: x / b (the high half),
** both halves written as symbol values, a half read back. */
uint64_t frond__perm_div_low(const frond__perm *p, uint64_t x);
void frond__perm_put(const frond__perm *p, uint64_t A, uint64_t B,
                     uint8_t *out);
uint64_t frond__perm_get(const uint8_t *in, unsigned radix, unsigned n);
/* The halves (A[j], B[j]) of n numbers, each written as
** frond__perm_put writes it, at out + j * p->width (order_digits.c:
** AVX-512 IFMA where the CPU has it; tests force the table with 1). */
void frond__perm_put_n(const frond__perm *p, const uint64_t *A,
                       const uint64_t *B, size_t n, uint8_t *out);
void frond__perm_put_force_scalar(int on);
/* n decimal bodies of w digit values (body j at v + j * w) as text at out
** + j * stride (order_digits.c: AVX-512 BW where the CPU has it; the same
** switch forces plain C). */
void frond__perm_text_n(const uint8_t *v, unsigned w, size_t n, char *out,
                        size_t stride);

/*
** Order schemes: how a key version permutes. SIP is the first (order.c);
** AES (order_aes.c) is the same Feistel network with AES-128 as the round
** function, chosen per key version ("V:aes:KEY").
*/
enum { FROND__SCHEME_SIP = 0, FROND__SCHEME_AES = 1 };
typedef struct frond__aes_key {
  _Alignas(16) uint8_t rk[11][16]; /* the round keys */
} frond__aes_key;
void frond__aes_expand(const uint8_t key[16], frond__aes_key *k);
/* One block: the fastest code this CPU runs, and portable C (tests). */
void frond__aes_encrypt(const frond__aes_key *k, const uint8_t in[16],
                        uint8_t out[16]);
void frond__aes_encrypt_c(const frond__aes_key *k, const uint8_t in[16],
                          uint8_t out[16]);
/* "vaes", "aes-ni" or "c": what runs here; tests force "c" with 1. */
const char *frond__aes_impl(void);
/* What the CPU has for AES, asked once: 2 VAES with AVX-512F besides
** AES-NI, 1 AES-NI (with SSE4.1), 0 neither (order_aes.c, rand_aes.c). */
int frond__aes_cpu(void);
void frond__aes_force_c(int on);
/* frond__perm_apply, frond__perm_apply_n and frond__perm_invert with AES
** rounds under the expanded key k. */
void frond__aes_perm_apply(const frond__perm *p, const frond__aes_key *k,
                           uint64_t x, uint8_t *out);
void frond__aes_perm_apply_n(const frond__perm *p, const frond__aes_key *k,
                             const uint64_t *x, size_t n, uint8_t *out);
/* The permutation backwards, whatever its round function: f(ctx, word) is
** the 64-bit PRF output of word = i << 56 | v for round i (the sip and aes
** schemes). */
typedef uint64_t (*frond__perm_round)(const void *ctx, uint64_t word);
int frond__perm_invert_by(const frond__perm *p, frond__perm_round f,
                          const void *ctx, const uint8_t *in, uint64_t *x);
int frond__aes_perm_invert(const frond__perm *p, const frond__aes_key *k,
                           const uint8_t *in, uint64_t *x);

/* Derive the 16-byte SipHash key of a permutation from a 32-byte master
** key and a context string (kind, domain, rounds, period): BLAKE2b keyed
** with the master key, so formats sharing a key are independent. */
void frond__perm_key(const uint8_t master[FROND_ORDER_KEY_BYTES],
                     const char *context, uint8_t out[16]);

/* Up to 37 keys: index 0 is the unversioned one, 1 + value of a version
** character (0-9 -> 0..9, A-Z -> 10..35) for the others. */
#define FROND__KEY_SLOTS 37
struct frond_order_keys {
  uint8_t present[FROND__KEY_SLOTS];
  uint8_t scheme[FROND__KEY_SLOTS]; /* FROND__SCHEME_* */
  uint8_t key[FROND__KEY_SLOTS][FROND_ORDER_KEY_BYTES];
};
/* Slot of version character c ('\0': unversioned), -1 when c is not 0-9
** or A-Z. */
int frond__key_slot(char c);
/* Start libsodium once; -1 when it cannot. Thread-safe. */
int frond__sodium_init(frond_error *err);

/* ---- time zones (tz.c) ---- */

/*
** A time zone from the system's tz database (TZif files, RFC 8536),
** including the POSIX TZ rule in the file's footer, expanded into
** transitions up to FROND__TZ_LAST_YEAR; later instants keep the last
** offset. Immutable once loaded: any thread may read it.
*/
#define FROND__TZ_LAST_YEAR 2200
typedef struct frond__tz frond__tz;

/* name: an IANA zone ("Asia/Shanghai"), "UTC", or a fixed offset
** "+08:00" / "-0530". Reads $TZDIR (else /usr/share/zoneinfo)/name.
** Errors: FORMAT_INVALID (unknown zone, bad file), NOMEM. */
int frond__tz_open(const char *name, frond__tz **out, frond_error *err);
/* Parse TZif bytes. Errors: FORMAT_INVALID, NOMEM. */
int frond__tz_parse(const uint8_t *buf, size_t len, frond__tz **out,
                    frond_error *err);
void frond__tz_free(frond__tz *tz);
const char *frond__tz_name(const frond__tz *tz);
/* Offset east of UTC in seconds at unix second t; *until (may be NULL)
** receives the first second at which the offset may change (INT64_MAX when
** never). Thread-safe, no allocation. */
int32_t frond__tz_offset(const frond__tz *tz, int64_t t, int64_t *until);

/* Proleptic Gregorian calendar: days since 1970-01-01 and back. */
int64_t frond__days_from_civil(int64_t y, unsigned m, unsigned d);
void frond__civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* ---- 128-bit generators (id128.c) ---- */

/* Eight bytes big-endian, one move each way (id128.c, id128_text.c);
** these, and the words the 128-bit writers compose, assume a
** little-endian CPU. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the 128-bit writers compose little-endian words");
static inline void frond__put_be64(uint8_t *p, uint64_t v) {
  v = __builtin_bswap64(v);
  memcpy(p, &v, 8);
}
static inline uint64_t frond__get_be64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

/* Unguessable bits and the millisecond for them (id128_rand.c). A
** stream is one generator's: frond__rand_stream gives a new number, and
** each thread draws a stream's bits from its own keystream for it
** (AES-256-CTR or ChaCha20: rand_aes.c), re-keyed as it goes and after
** fork(). Thread-safe, lock-free. */
uint64_t frond__rand_stream(void);
uint64_t frond__rand64(uint64_t stream);
void frond__rand_bytes(uint64_t stream, void *out, size_t n);
/* Tests: every stream from this key (NULL: the system's again). */
void frond__rand_fixed(const uint8_t key[16]);
/* rand_aes.c: n bytes (at most FROND__RAND_AES_MAX) of AES-256-CTR
** keystream under the key in buf[0..32), written over buf from its
** start, the key's bytes included (the caller keeps the first 32 as the
** next key: fast key erasure). 0, or -1 (nothing written) on a CPU
** without AES-NI, where id128_rand.c draws ChaCha20. */
#define FROND__RAND_AES_MAX 4096
int frond__rand_aes_draw(uint8_t *buf, size_t n);
/* "vaes", "aes-ni" or "chacha20": the keystream drawn here. Tests: force
** level 0 (ChaCha20), 1 (AES-NI) or 2 (VAES), -1 the CPU's best; -1 when
** this CPU lacks it. */
const char *frond__rand_impl(void);
int frond__rand_force(int level);
/* Tests: this thread's keystream state (NULL: none yet), *len bytes. */
const void *frond__rand_state(size_t *len);
/* Tests: how many times this thread's streams took a new key. */
uint64_t frond__rand_rekeys(void);
/* Tests: called once, by the next refill, just after it read whether the
** fixed key is set (then cleared). */
void frond__rand_refill_hook(void (*fn)(void));
/* Tests: called once, by the next thread's exit, after its state is let
** go of and before it is freed (then cleared). */
void frond__rand_exit_hook(void (*fn)(void));
/* Tests: called once, by the next write of a thread's ULID memo, between
** its millisecond and its base (then cleared). */
void frond__ulid_memo_hook(void (*fn)(void));
/* The wall clock's unix ms, read from a ticker's word under sustained use
** (at most a tick behind), else from the clock. Thread-safe. */
int64_t frond__id128_now_ms(void);

/* The state of the inlined fast paths of id128_rand.c (rand_hot.h):
** the thread's hot slot and busy mark, and the ticker. */
struct frond__rand_slot;

/* The thread's hot slot (id128_rand.c). */
typedef struct frond__rand_hot {
  uint64_t stream; /* 0: none */
  uint8_t *p;      /* next unread byte */
  uint8_t *end;    /* the end of the slot's buffer */
  struct frond__rand_slot *slot;
  frond__fork_mark fork;
} frond__rand_hot;

extern __thread frond__rand_hot frond__hot
    __attribute__((tls_model("initial-exec")));
/* The thread's busy mark (base/busy.h) for its keystream state. */
extern __thread volatile sig_atomic_t frond__rand_busy
    __attribute__((tls_model("initial-exec")));

/* The ticker's state (id128_rand.c). */
enum {
  FROND__TICK_STOPPED,
  FROND__TICK_STARTING,
  FROND__TICK_RUNNING,
  FROND__TICK_FAILED
};
typedef struct frond__tick {
  _Atomic int64_t ms;
  _Atomic int state;
  _Atomic int read;      /* read since the last tick */
  frond__fork_mark fork; /* armed before RUNNING (release) */
} frond__tick;

extern frond__tick frond__ticker;

/* Batches: n values of one generator in one step, each as its single
** call makes them (out: n * 16 or n * 12 bytes). Thread-safe. */
void frond__uuid7_next_n(frond_uuid7 *g, size_t n, uint8_t *out);
void frond__ulid_next_n(frond_ulid *g, size_t n, uint8_t *out);
void frond__objectid_next_n(frond_objectid *g, size_t n, uint8_t *out);
/* Tests: frond_uuid_format and frond_objectid_format by the byte table,
** not the vector code (the one-string paths of formats keep theirs). */
void frond__hex_format_force_scalar(int on);
/* One string of the generator's next ID into out (its format's length
** and a NUL), where frond__text_ssse3() says so (id128.c). 0. */
int frond__uuid7_next_text(frond_uuid7 *g, char *out);
int frond__uuid4_next_text(char *out);
int frond__ulid_next_text(frond_ulid *g, char *out);
int frond__objectid_next_text(frond_objectid *g, char *out);
/* UUIDv4 from the calling thread's keystream: one, and n of them (16 * n
** bytes). */
void frond__uuid4_fast(uint8_t out[16]);
void frond__uuid4_next_n(size_t n, uint8_t *out);

/* scope=node: the string of snowflake ID id (whose time is unix_ms) into
** out, the ID whole after the time field, the bits left over random under
** g's key (id128.c has the layouts). Thread-safe. */
void frond__uuid7_of_id(frond_uuid7 *g, uint64_t id, int64_t unix_ms,
                        uint8_t out[16]);
void frond__ulid_of_id(frond_ulid *g, uint64_t id, int64_t unix_ms,
                       uint8_t out[16]);
void frond__objectid_of_id(uint64_t id, int64_t unix_ms, uint8_t out[12]);
/* The snowflake ID inside the bytes of a node-scoped string of kind. */
uint64_t frond__id_in(int kind, const uint8_t *bytes);
/* frond__id128_fixed_key: core.h. */

/* ---- seq periods (period.c) ---- */

enum { FROND__PERIOD_DAY = 1, FROND__PERIOD_MONTH, FROND__PERIOD_YEAR };

/*
** The period of a seq format at a time: cached as a window [from, until)
** of unix ms in which the local date's period does not change, behind a
** seqlock (one writer at a time under mu; readers lock-free).
*/
typedef struct frond__period_cache {
  _Atomic uint64_t seq;
  _Atomic int64_t from_ms, until_ms, period, start_ms;
  pthread_mutex_t mu;
} frond__period_cache;

void frond__period_init(frond__period_cache *c);
void frond__period_destroy(frond__period_cache *c);
/* The period (yyyymmdd, yyyymm or yyyy) of unix ms t in zone tz, and the
** unix ms at which its local day, month or year began. Thread-safe. */
int64_t frond__period_of(frond__period_cache *c, const frond__tz *tz, int kind,
                         int64_t t, int64_t *start_ms);
/* The unix ms at which the period `period` starts in zone tz (its first
** instant with that local date); INT64_MIN when the period is malformed. */
int64_t frond__period_start(const frond__tz *tz, int kind, int64_t period);

/* ---- key fingerprints (format_fact.c) ---- */

/* Hex digits of a fingerprint: 64 bits of keyed BLAKE2b. */
#define FROND__FINGERPRINT_LEN 16

/* ---- the format object (format_spec.c builds it, format*.c use it) ---- */

enum {
  FROND__CHECK_NONE,
  FROND__CHECK_DAMM,
  FROND__CHECK_LUHN,
  FROND__CHECK_MOD37
};

/* Items of a prefix pattern: literal text or a date field. */
enum {
  FROND__P_LIT,
  FROND__P_Y4,
  FROND__P_Y2,
  FROND__P_MON,
  FROND__P_DAY,
  FROND__P_HOUR,
  FROND__P_DOY
};
#define FROND__PREFIX_MAX 32
typedef struct frond__pitem {
  uint8_t type, len; /* len: characters written */
  uint8_t off;       /* literal: offset into prefix_text */
} frond__pitem;

/* A keyed sequence's permutation key for one period; published by an
** atomic pointer, kept until the format is freed. */
typedef struct frond__pkey {
  struct frond__pkey *older;
  int64_t period;
  uint8_t key[16];
} frond__pkey;

/* Where a keyed format stands with the record of its key's fingerprint
** (format_fact.c). */
enum {
  FROND__FACT_UNCHECKED, /* nothing checked: a keyed format issues nothing */
  FROND__FACT_AGREED,    /* the record agrees, for the fact's scope */
  FROND__FACT_REFUSED,   /* the record differs: the fact's code and why */
  FROND__FACT_SKIPPED    /* frond_format_skip_check: issues unchecked */
};

/* The check's outcome in one word: state, code and whether the scope is
** "" (snowflake IDs) read by one load; a generation that every publish
** moves on; and a bit set while a publish writes the scope's words.
** format_fact.c. */
#define FROND__FACT_STATE(w) ((int)((w)&15))
#define FROND__FACT_WRITING ((uint64_t)1 << 4)
#define FROND__FACT_NO_SCOPE ((uint64_t)1 << 5)
#define FROND__FACT_CODE(w) ((int)(int16_t)(uint16_t)((w) >> 8))
#define FROND__FACT_WORDS ((FROND_TAG_MAX + 1 + 7) / 8)

struct frond_format {
  int kind;
  uint64_t serial; /* unique in the process: what a thread's cache keys on */
  size_t length;
  char tag[FROND_TAG_MAX + 1]; /* tag=, "" when none */
  size_t tag_len;
  frond_order_keys *keys; /* copy of the keys a keyed format needs */

  /* order and seq: [prefix][date][version][body][check] */
  unsigned radix, width, rounds;
  int check;
  char version; /* key=, '\0' when none */
  int keyed;
  frond__perm perm;
  uint8_t ekey[16];                   /* order: the encoding key */
  uint8_t dkey[FROND__KEY_SLOTS][16]; /* order: a key per version */
  uint8_t escheme;                    /* the encoding version's scheme */
  uint8_t dscheme[FROND__KEY_SLOTS];  /* each version's */
  frond__aes_key *aes; /* order, when a version is AES: [FROND__KEY_SLOTS]
                          expanded keys, aes[slot] for that version */
  uint8_t prefix_text[FROND__PREFIX_MAX + 1];
  frond__pitem prefix[FROND__PREFIX_MAX];
  size_t nprefix, prefix_len;
  int prefix_dates;                        /* the prefix has date fields */
  char prefix_spec[FROND__PREFIX_MAX + 1]; /* as given, for the spec */
  frond__tz *tz;
  int64_t max_id;

  /* seq */
  int period_kind;
  unsigned period_len; /* 8, 6 or 4 */
  frond__period_cache pc;
  _Atomic(frond__pkey *) pkey;
  _Atomic int64_t exhausted_period; /* 0: none */

  /* decimal, base62, base32: write-spreading layouts (format_layout.c) */
  int reverse;         /* reverse=yes: the 63 bits reversed */
  unsigned shard_bits; /* shard=S: S high bits from a keyed hash; ekey */

  /* uuid7, ulid, objectid */
  int node_scope; /* scope=node: made of the source's snowflake IDs */
  int text_leaf;  /* one string by the generator's one-string path */
  int order_leaf; /* one order number from the thread's cache, no frame */
  frond_uuid7 *uuid7;
  frond_ulid *ulid;
  frond_objectid *oid;

  /* Keyed formats: the fingerprint of the encoding key and of everything
  ** that permutes with it ("" when unkeyed), and the check of it against
  ** the record where the processes sharing the numbers meet. An issue
  ** reads word and scope lock-free, as a sequence lock (the word again
  ** after the scope: the same word, the same outcome), and why under mu;
  ** a check writes them all under mu (format_fact.c). */
  char fingerprint[FROND__FINGERPRINT_LEN + 1];
  struct {
    pthread_mutex_t mu;
    _Atomic uint64_t word; /* FROND__FACT_* fields, above */
    /* the tag checked for, zero-padded: "" for snowflake IDs */
    _Atomic uint64_t scope[FROND__FACT_WORDS];
    char why[sizeof(((frond_error *)0)->message)]; /* refused: the message */
    uint64_t resets; /* frond_format_recheck's count: a check reads again */
  } fact;
};

/* Shared by writing (format.c) and reading (format_decode.c): the symbols
** of an order or seq number, and its check character over the symbol
** values vals[0..nv). */
const char *frond__format_alphabet(const frond_format *f);
char frond__format_check(const frond_format *f, const uint8_t *vals, size_t nv);

/* The key of a keyed seq format for a period (derived once, then cached). */
int frond__seq_key(frond_format *f, int64_t period, const uint8_t **key,
                   frond_error *err);
/* A period's key for decoding, under the master key of `slot`. */
int frond__seq_key_for(const frond_format *f, int slot, int64_t period,
                       uint8_t out[16], frond_error *err);

/* The fingerprint of format f under master key `master` into
** f->fingerprint (format_fact.c): keyed BLAKE2b over a fixed string naming
** the kind, radix, width and rounds. It reveals nothing of the key, and
** changes with the key and with anything that permutes the numbers. */
void frond__format_fingerprint_init(
    frond_format *f, const uint8_t master[FROND_ORDER_KEY_BYTES]);
/* Before a keyed format issues for the source's scope: 0 when its record
** agrees (or it was told to skip the check), else the code to fail with
** (KEY_MISMATCH when refused; INVAL when not checked for this scope).
** Lock-free, but for a refusal's message and while a check publishes
** (the check's lock, held for string copies only). */
int frond__format_fact_ready(frond_format *f, const frond_format_source *src,
                             frond_error *err);
/* A new format's fact (unchecked), and its lock at the free. */
void frond__format_fact_init(frond_format *f);
void frond__format_fact_free(frond_format *f);

/* ---- write-spreading layouts (format_layout.c) ---- */

/* The low 63 bits of x in reverse order (its own inverse). */
uint64_t frond__reverse63(uint64_t x);
/* After parsing: a shard format's key (derived from the master key of its
** version), fingerprint and largest ID. Errors: KEY_INVALID, NOMEM. */
/* 0 when keys hold the key of f's version, else KEY_INVALID saying which
** line to add (none: what the refusal says when f takes the unversioned
** key). Order, seq and shard= formats alike. */
int frond__format_key_needed(const frond_format *f,
                             const frond_order_keys *keys, const char *none,
                             frond_error *err);
int frond__layout_init(frond_format *f, const frond_order_keys *keys,
                       frond_error *err);
/* The shard of a caller's key (len bytes) under f's key. */
uint64_t frond__layout_shard(const frond_format *f, const char *key,
                             size_t len);
/* The value f writes for ID id (shard: of the caller's key). Errors:
** ID_TOO_LARGE (the ID needs the shard's bits). */
int frond__layout_apply(const frond_format *f, uint64_t shard, int64_t id,
                        int64_t *out, frond_error *err);
/* The ID a written value holds, and its shard (0 without shard=). */
int64_t frond__layout_invert(const frond_format *f, int64_t v, uint64_t *shard);

/* Segment hooks for seq formats (segment.c). */
int64_t frond__seg_now_ms(frond_seg *s);
/* Make the period tag `tag` exist, created from the base tag's row with
** its step capped at cap (and the dynamic step never above cap), tolerating
** a create by another node, and wait (up to first_wait_ms) for its first
** segment. Blocks on the store on a tag's first use. */
int frond__seg_period_tag(frond_seg *s, const char *base, const char *tag,
                          int64_t cap, frond_error *err);
/* 1 when frond__seg_period_tag has made `tag` ready in this allocator:
** its row exists and its first segment is loaded, so taking IDs waits on
** the store no more than any tag in use does. Lock-free. */
int frond__seg_period_ready(frond_seg *s, const char *tag, size_t len);

/* ---- order numbers one at a time (format_cache.c) ---- */

/* One order number of f from src into out (room checked by the caller),
** from the calling thread's cache of a batch when the calls come fast
** enough, else by issue(f, src, 1, out, stride, NULL, err) alone. issue
** is the uncached path (format.c), also what fills the cache. On failure
** it tells, when t is not NULL, how many numbers it wrote first (the
** first t->done of out, whole, in the order their IDs were drawn: each
** may be handed out) and how many IDs it drew and wrote none of
** (t->lost: skipped); both are 0 on success. */
typedef struct frond__issue_tally {
  size_t done, lost;
} frond__issue_tally;
typedef int (*frond__issue_fn)(frond_format *f, const frond_format_source *src,
                               size_t n, char *out, size_t stride,
                               frond__issue_tally *t, frond_error *err);
int frond__order_cached(frond_format *f, const frond_format_source *src,
                        char *out, frond__issue_fn issue, frond_error *err);
/* Tests: the cache's numbers in this thread (what was drawn and not yet
** handed out), those it dropped unused (too old, a barrier, a slot
** taken for another format), and its largest batch (0: the default, 32). */
size_t frond__order_cache_held(void);
size_t frond__order_cache_dropped(void);
void frond__order_cache_max(unsigned k);
/* Tests: move this thread's cached batches' draw time by ms (> 0: as if
** the clock stepped back by that much since they were drawn). */
void frond__order_cache_shift(int64_t ms);
/* IDs a thread skips (drawn, never handed out) in a millisecond, at most
** (format_cache.c: its budget, and what it may hold ahead). */
#define FROND__ORDER_SKIP_MAX 96

#endif /* FROND_FORMATS_H */
