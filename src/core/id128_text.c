/* SPDX-License-Identifier: Apache-2.0 */
/*
** id128_text.c -- the string forms of UUIDs, ULIDs and ObjectIds, and
** their parsers (the generators are id128.c's).
**
** The writers are id128_text.h's, shared with id128.c's one-string
** paths: UUIDs and ObjectIds by byte shuffles where the CPU has SSSE3
** (from a table of whole bytes elsewhere, and in tests that ask for it),
** ULIDs from a table of 10-bit pairs of symbols. Parsers take exactly the
** documented lengths and say what they expected.
*/
#include "core/core.h"
#include "core/formats.h"
#include "core/id128_text.h"

#include <stdatomic.h>
#include <string.h>

/* A byte as two hex digits, and ten bits as two Crockford symbols. */
#define HEXD(n) ((char)((n) < 10 ? '0' + (n) : 'a' - 10 + (n)))
#define HEXP(h, l)                                                             \
  { HEXD(h), HEXD(l) }
#define HEXROW(h)                                                              \
  HEXP(h, 0), HEXP(h, 1), HEXP(h, 2), HEXP(h, 3), HEXP(h, 4), HEXP(h, 5),      \
      HEXP(h, 6), HEXP(h, 7), HEXP(h, 8), HEXP(h, 9), HEXP(h, 10),             \
      HEXP(h, 11), HEXP(h, 12), HEXP(h, 13), HEXP(h, 14), HEXP(h, 15)
static const char hex_pairs[256][2] = {
    HEXROW(0),  HEXROW(1),  HEXROW(2),  HEXROW(3), HEXROW(4),  HEXROW(5),
    HEXROW(6),  HEXROW(7),  HEXROW(8),  HEXROW(9), HEXROW(10), HEXROW(11),
    HEXROW(12), HEXROW(13), HEXROW(14), HEXROW(15)};

/* Crockford's symbol of n < 32 (frond__crockford) as a constant. */
#define B32D(n)                                                                \
  ((char)((n) < 10   ? '0' + (n)                                               \
          : (n) < 18 ? 'A' + (n)-10                                            \
          : (n) < 20 ? 'J' + (n)-18                                            \
          : (n) < 22 ? 'M' + (n)-20                                            \
          : (n) < 27 ? 'P' + (n)-22                                            \
                     : 'V' + (n)-27))
#define B32P(h, l)                                                             \
  { B32D(h), B32D(l) }
#define B32Q(h, l) B32P(h, l), B32P(h, l + 1), B32P(h, l + 2), B32P(h, l + 3)
#define B32ROW(h)                                                              \
  B32Q(h, 0), B32Q(h, 4), B32Q(h, 8), B32Q(h, 12), B32Q(h, 16), B32Q(h, 20),   \
      B32Q(h, 24), B32Q(h, 28)
#define B32ROWS(h) B32ROW(h), B32ROW(h + 1), B32ROW(h + 2), B32ROW(h + 3)
const char frond__b32_pairs[1024][2] = {B32ROWS(0),  B32ROWS(4),  B32ROWS(8),
                                        B32ROWS(12), B32ROWS(16), B32ROWS(20),
                                        B32ROWS(24), B32ROWS(28)};

static void put_hex(char *p, const uint8_t *b, int n) {
  for (int i = 0; i < n; i++)
    memcpy(p + 2 * i, hex_pairs[b[i]], 2);
}

int frond__text_ssse3(void) {
#ifdef FROND__TEXT_SSSE3
  static _Atomic int known = -1;
  int k = atomic_load_explicit(&known, memory_order_relaxed);
  if (FROND__UNLIKELY(k < 0)) {
    k = __builtin_cpu_supports("ssse3") != 0;
    atomic_store_explicit(&known, k, memory_order_relaxed);
  }
  return k;
#else
  return 0;
#endif
}

#ifdef FROND__TEXT_SSSE3
/* The vector writers inlined into a function of their target: called
** from one of another, each would be a call of its own. */
FROND__TEXT_TARGET static void uuid_format_ssse3(const uint8_t u[16],
                                                 char *out) {
  frond__uuid_text(frond__bytes_v(u), out);
}

FROND__TEXT_TARGET static void objectid_format_ssse3(const uint8_t o[12],
                                                     char *out) {
  uint32_t lo;
  memcpy(&lo, o + 8, 4);
  frond__objectid_text(frond__get_be64(o), __builtin_bswap32(lo), out);
}
#endif

static _Atomic int hex_forced_scalar;

void frond__hex_format_force_scalar(int on) {
  atomic_store(&hex_forced_scalar, on);
}

#ifdef FROND__TEXT_SSSE3
/* The hex writers' test: the CPU runs the vector code, and no test has
** forced the table. */
static inline int hex_vector(void) {
  return frond__text_ssse3() &&
         !atomic_load_explicit(&hex_forced_scalar, memory_order_relaxed);
}
#endif

void frond_uuid_format(const uint8_t u[16], char out[FROND_UUID_STRLEN + 1]) {
#ifdef FROND__TEXT_SSSE3
  if (hex_vector()) {
    uuid_format_ssse3(u, out);
    return;
  }
#endif
  put_hex(out, u, 4);
  out[8] = '-';
  put_hex(out + 9, u + 4, 2);
  out[13] = '-';
  put_hex(out + 14, u + 6, 2);
  out[18] = '-';
  put_hex(out + 19, u + 8, 2);
  out[23] = '-';
  put_hex(out + 24, u + 10, 6);
  out[36] = '\0';
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

void frond_ulid_format(const uint8_t u[16], char out[FROND_ULID_STRLEN + 1]) {
  frond__ulid_text(frond__get_be64(u), frond__get_be64(u + 8), out);
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
      frond__put_be64(out, hi);
      frond__put_be64(out + 8, lo);
      return 0;
    }
  }
  return frond__fail(err, FROND_EID_INVALID,
                     "'%.*s' is not a ULID (26 Crockford base32 characters, "
                     "the first 0-7)",
                     s == NULL ? 0 : (int)(len > 64 ? 64 : len), s ? s : "");
}

void frond_objectid_format(const uint8_t o[12],
                           char out[FROND_OBJECTID_STRLEN + 1]) {
#ifdef FROND__TEXT_SSSE3
  if (hex_vector()) {
    objectid_format_ssse3(o, out);
    return;
  }
#endif
  put_hex(out, o, 12);
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
