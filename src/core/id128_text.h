/* SPDX-License-Identifier: Apache-2.0 */
/*
** id128_text.h -- the string forms of 128-bit IDs from their two words,
** inlined where they are used: by id128_text.c's formatters (bytes in,
** for any caller) and by id128.c's one-string paths (words in registers,
** no bytes stored and read back, no call).
**
** Each form is written in a few whole stores, not a store per character:
** a store waits in the store buffer, and the next ID's locked add waits
** for every store before it to drain.
**   UUID      36 characters: the 32 hex digits are two byte shuffles of
**             the nibbles through "0123456789abcdef", interleaved; the
**             hyphens are shuffled in as zero bytes and set by an OR
**             (SSSE3). Four stores.
**   ObjectId  24 hex digits, the same way. Three stores.
**   ULID      26 Crockford symbols, two a lookup in a table of 10-bit
**             pairs; the 128 bits with two zero bits on top are 13 pairs,
**             four to a word. Four stores, the last two overlapping.
** The hex forms need SSSE3 (FROND__TEXT_SSSE3: x86-64 with GCC or
** clang); callers check the CPU (frond__text_ssse3) before calling them,
** and write the table's way otherwise.
*/
#ifndef FROND_CORE_ID128_TEXT_H
#define FROND_CORE_ID128_TEXT_H

#include <stdint.h>
#include <string.h>

/* Crockford's symbols of every 10-bit value, two characters each
** (id128_text.c). */
extern const char frond__b32_pairs[1024][2];

/* 1 when this CPU runs the hex forms below (always 0 without them). */
int frond__text_ssse3(void);

/* ULID: 26 symbols and the NUL of the 128 bits hi:lo. */
static inline void frond__ulid_text(uint64_t hi, uint64_t lo, char *out) {
  uint64_t w[4] = {0, 0, 0, 0};
#pragma GCC unroll 13
  for (int k = 0; k < 13; k++) {
    /* symbols 2k and 2k+1: bits 120 - 10k up, of a 130-bit number */
    int at = 120 - 10 * k;
    uint64_t bits = at >= 64  ? hi >> (at - 64)
                    : at > 54 ? hi << (64 - at) | lo >> at
                              : lo >> at;
    uint16_t pair;
    memcpy(&pair, frond__b32_pairs[bits & 1023], 2);
    w[k / 4] |= (uint64_t)pair << (16 * (k % 4));
  }
  memcpy(out, &w[0], 8);
  memcpy(out + 8, &w[1], 8);
  memcpy(out + 16, &w[2], 8);
  /* characters 19..26: the third word's last five, pair 12, the NUL */
  w[3] = w[2] >> 24 | w[3] << 40;
  memcpy(out + 19, &w[3], 8);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FROND__TEXT_SSSE3 1
#define FROND__TEXT_TARGET __attribute__((target("ssse3")))

/* The 16 bytes hi:lo, big-endian, in a vector. */
FROND__TEXT_TARGET static inline __m128i frond__words_v(uint64_t hi,
                                                        uint64_t lo) {
  return _mm_set_epi64x((long long)__builtin_bswap64(lo),
                        (long long)__builtin_bswap64(hi));
}

/* The 16 bytes at b in a vector: two 8-byte loads, as the generators
** write their bytes with two 8-byte stores, which one 16-byte load could
** not take from the store buffer. */
FROND__TEXT_TARGET static inline __m128i frond__bytes_v(const uint8_t *b) {
  return _mm_unpacklo_epi64(
      _mm_loadl_epi64((const __m128i *)(const void *)b),
      _mm_loadl_epi64((const __m128i *)(const void *)(b + 8)));
}

/* The hex digits of the 16 bytes in b: digits 0..15 into *d0, 16..31
** into *d1. */
FROND__TEXT_TARGET static inline void frond__hex32(__m128i b, __m128i *d0,
                                                   __m128i *d1) {
  const __m128i digits = _mm_setr_epi8('0', '1', '2', '3', '4', '5', '6', '7',
                                       '8', '9', 'a', 'b', 'c', 'd', 'e', 'f');
  const __m128i low = _mm_set1_epi8(0x0f);
  __m128i h =
      _mm_shuffle_epi8(digits, _mm_and_si128(_mm_srli_epi16(b, 4), low));
  __m128i l = _mm_shuffle_epi8(digits, _mm_and_si128(b, low));
  *d0 = _mm_unpacklo_epi8(h, l);
  *d1 = _mm_unpackhi_epi8(h, l);
}

/* UUID: 36 characters and the NUL of its 16 bytes in b (frond__words_v,
** frond__bytes_v). */
FROND__TEXT_TARGET static inline void frond__uuid_text(__m128i b, char *out) {
  const __m128i at0 =
      _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -1, 8, 9, 10, 11, -1, 12, 13);
  const __m128i dash0 =
      _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, '-', 0, 0, 0, 0, '-', 0, 0);
  const __m128i at1 =
      _mm_setr_epi8(0, 1, -1, 2, 3, 4, 5, -1, 6, 7, 8, 9, 10, 11, 12, 13);
  const __m128i dash1 =
      _mm_setr_epi8(0, 0, '-', 0, 0, 0, 0, '-', 0, 0, 0, 0, 0, 0, 0, 0);
  __m128i h0, h1, mid;
  int last;
  frond__hex32(b, &h0, &h1);
  mid = _mm_alignr_epi8(h1, h0, 14);                /* digits 14..29 */
  last = _mm_cvtsi128_si32(_mm_srli_si128(h1, 12)); /* 28..31 */
  _mm_storeu_si128((__m128i *)(void *)out,
                   _mm_or_si128(_mm_shuffle_epi8(h0, at0), dash0));
  _mm_storeu_si128((__m128i *)(void *)(out + 16),
                   _mm_or_si128(_mm_shuffle_epi8(mid, at1), dash1));
  memcpy(out + 32, &last, 4);
  out[36] = '\0';
}

/* ObjectId: 24 digits and the NUL of its 12 bytes, the first 8 in hi
** and the last 4 in lo32, big-endian. */
FROND__TEXT_TARGET static inline void
frond__objectid_text(uint64_t hi, uint32_t lo32, char *out) {
  __m128i d0, d1;
  uint64_t tail;
  frond__hex32(frond__words_v(hi, (uint64_t)lo32 << 32), &d0, &d1);
  tail = (uint64_t)_mm_cvtsi128_si64(d1); /* digits 16..23 */
  _mm_storeu_si128((__m128i *)(void *)out, d0);
  memcpy(out + 16, &tail, 8);
  out[24] = '\0';
}
#endif

#endif /* FROND_CORE_ID128_TEXT_H */
