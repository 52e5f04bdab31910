/* SPDX-License-Identifier: Apache-2.0 */
/*
** id128_text.c -- the string forms of UUIDs, ULIDs and ObjectIds, and
** their parsers (the generators are id128.c's).
**
** Hex and Crockford base32 from tables of whole bytes and of 10-bit pairs
** of symbols, two characters a lookup; a UUID's 36 characters, where the
** CPU has SSSE3, from two byte shuffles of its nibbles and two more that
** place the hyphens (half the table's time). Parsers take exactly the
** documented lengths and say what they expected.
*/
#include "core/core.h"
#include "core/formats.h"

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
static const char b32_pairs[1024][2] = {B32ROWS(0),  B32ROWS(4),  B32ROWS(8),
                                        B32ROWS(12), B32ROWS(16), B32ROWS(20),
                                        B32ROWS(24), B32ROWS(28)};

static void put_hex(char *p, const uint8_t *b, int n) {
  for (int i = 0; i < n; i++)
    memcpy(p + 2 * i, hex_pairs[b[i]], 2);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define UUID_SSSE3 1
#define SSSE3 __attribute__((target("ssse3")))

/* The 36 characters in vectors: the 32 hex digits are two byte shuffles
** of the nibbles through "0123456789abcdef", interleaved; the hyphens
** are shuffled in as zero bytes and set by an OR. */
SSSE3 static void uuid_format_ssse3(const uint8_t u[16], char *out) {
  const __m128i digits = _mm_setr_epi8('0', '1', '2', '3', '4', '5', '6', '7',
                                       '8', '9', 'a', 'b', 'c', 'd', 'e', 'f');
  const __m128i low = _mm_set1_epi8(0x0f);
  const __m128i at0 =
      _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -1, 8, 9, 10, 11, -1, 12, 13);
  const __m128i dash0 =
      _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, '-', 0, 0, 0, 0, '-', 0, 0);
  const __m128i at1 =
      _mm_setr_epi8(0, 1, -1, 2, 3, 4, 5, -1, 6, 7, 8, 9, 10, 11, 12, 13);
  const __m128i dash1 =
      _mm_setr_epi8(0, 0, '-', 0, 0, 0, 0, '-', 0, 0, 0, 0, 0, 0, 0, 0);
  /* two 8-byte loads: the generators write the bytes as two 8-byte
  ** stores, which a 16-byte load could not take from the store buffer */
  __m128i b = _mm_unpacklo_epi64(
      _mm_loadl_epi64((const __m128i *)(const void *)u),
      _mm_loadl_epi64((const __m128i *)(const void *)(u + 8)));
  __m128i hi =
      _mm_shuffle_epi8(digits, _mm_and_si128(_mm_srli_epi16(b, 4), low));
  __m128i lo = _mm_shuffle_epi8(digits, _mm_and_si128(b, low));
  __m128i h0 = _mm_unpacklo_epi8(hi, lo);               /* digits 0..15 */
  __m128i h1 = _mm_unpackhi_epi8(hi, lo);               /* digits 16..31 */
  __m128i mid = _mm_alignr_epi8(h1, h0, 14);            /* digits 14..29 */
  int last = _mm_cvtsi128_si32(_mm_srli_si128(h1, 12)); /* 28..31 */
  _mm_storeu_si128((__m128i *)(void *)out,
                   _mm_or_si128(_mm_shuffle_epi8(h0, at0), dash0));
  _mm_storeu_si128((__m128i *)(void *)(out + 16),
                   _mm_or_si128(_mm_shuffle_epi8(mid, at1), dash1));
  memcpy(out + 32, &last, 4);
  out[36] = '\0';
}

static int has_ssse3(void) {
  static _Atomic int known = -1;
  int k = atomic_load_explicit(&known, memory_order_relaxed);
  if (FROND__UNLIKELY(k < 0)) {
    k = __builtin_cpu_supports("ssse3");
    atomic_store_explicit(&known, k, memory_order_relaxed);
  }
  return k;
}
#endif

static _Atomic int uuid_forced_scalar;

void frond__uuid_format_force_scalar(int on) {
  atomic_store(&uuid_forced_scalar, on);
}

void frond_uuid_format(const uint8_t u[16], char out[FROND_UUID_STRLEN + 1]) {
#ifdef UUID_SSSE3
  if (has_ssse3() &&
      !atomic_load_explicit(&uuid_forced_scalar, memory_order_relaxed)) {
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
  /* 128 bits as 26 symbols of 5 bits, the first holding the top 3: that
  ** one, 12 from hi's next 60 bits, one across the two words, 12 from
  ** lo's low 60; two symbols a lookup. */
  uint64_t hi = frond__get_be64(u), lo = frond__get_be64(u + 8);
  out[0] = frond__crockford[hi >> 61];
  for (int i = 0; i < 6; i++)
    memcpy(out + 1 + 2 * i, b32_pairs[(hi >> (51 - 10 * i)) & 1023], 2);
  out[13] = frond__crockford[(hi & 1) << 4 | lo >> 60];
  for (int i = 0; i < 6; i++)
    memcpy(out + 14 + 2 * i, b32_pairs[(lo >> (50 - 10 * i)) & 1023], 2);
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
