/* SPDX-License-Identifier: Apache-2.0 */
/*
** alphabet.c -- the symbols IDs are written with, and check characters.
**
** Crockford's base32 leaves out I, L, O and U so that a number read aloud
** or copied by hand cannot be misread; decoding accepts lower case and
** reads I and L as 1, O as 0. Base62 uses 0-9A-Za-z in ASCII order, so a
** fixed-length string sorts like the number it holds.
**
** Check characters:
**   - Damm (decimal): one table lookup per digit; detects every single-digit
**     error and every transposition of adjacent digits (the table is a
**     weakly totally anti-symmetric quasigroup). Each lookup waits for the
**     last, so frond__damm takes two digits a step from a table of the
**     pairs (1,000 bytes): a 19-digit order number with a date is 27
**     digits, which one at a time cost more than its permutation. Where
**     the CPU has a byte shuffle (SSSE3's pshufb), it does not wait at
**     all: a digit d is the map s -> table[s][d] of the ten interim
**     digits, one 16-byte vector; one shuffle composes two maps, and maps
**     compose in any grouping, so four digits' maps are combined side by
**     side and the running map waits for one shuffle per four digits
**     (the same digit, checked against the table on random strings by
**     test_format_order). Luhn misses 09 <-> 90 and Verhoeff needs three
**     tables for the same guarantee.
**   - Luhn (decimal): offered for systems that already expect it (payment
**     cards), with its known blind spot.
**   - Crockford's mod 37 (base32): the number modulo the prime 37, written
**     with the 32 symbols plus "*~$=U". A single substitution changes the
**     value by d * 32^k and an adjacent transposition by 31 * d * 32^k,
**     neither divisible by 37 for |d| < 32, so both are always detected.
*/
#include "core/formats.h"

#include <pthread.h>

const char frond__crockford[38] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U";
const char frond__base62[63] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

int frond__crockford_value(unsigned char c) {
  if (c >= 'a' && c <= 'z')
    c = (unsigned char)(c - 'a' + 'A');
  if (c >= '0' && c <= '9')
    return c - '0';
  switch (c) {
  case 'O':
    return 0;
  case 'I':
  case 'L':
    return 1;
  case 'U':
    return -1;
  default:
    break;
  }
  for (int i = 10; i < 32; i++)
    if (frond__crockford[i] == (char)c)
      return i;
  return -1;
}

int frond__crockford_check_value(unsigned char c) {
  int v = frond__crockford_value(c);
  if (v >= 0)
    return v;
  switch (c) {
  case '*':
    return 32;
  case '~':
    return 33;
  case '$':
    return 34;
  case '=':
    return 35;
  case 'U':
  case 'u':
    return 36;
  default:
    return -1;
  }
}

int frond__base62_value(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'Z')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 36;
  return -1;
}

static const uint8_t damm_table[10][10] = {
    {0, 3, 1, 7, 5, 9, 8, 6, 4, 2}, {7, 0, 9, 2, 1, 5, 4, 8, 6, 3},
    {4, 2, 0, 6, 8, 7, 1, 3, 5, 9}, {1, 7, 5, 0, 9, 8, 3, 4, 2, 6},
    {6, 1, 2, 3, 0, 4, 5, 9, 7, 8}, {3, 6, 7, 4, 2, 0, 9, 5, 8, 1},
    {5, 8, 6, 9, 7, 2, 0, 1, 3, 4}, {8, 9, 4, 5, 3, 6, 2, 0, 1, 7},
    {9, 4, 3, 8, 6, 1, 7, 2, 0, 5}, {2, 5, 8, 1, 4, 3, 6, 7, 9, 0}};

/* damm_pairs[s][10 * a + b]: the interim digit after a then b from s. */
static uint8_t damm_pairs[10][100];
static pthread_once_t damm_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && defined(__GNUC__)
static void damm_maps_fill(void);
#endif

static void damm_fill(void) {
  for (int s = 0; s < 10; s++)
    for (int ab = 0; ab < 100; ab++)
      damm_pairs[s][ab] = damm_table[damm_table[s][ab / 10]][ab % 10];
#if defined(__x86_64__) && defined(__GNUC__)
  damm_maps_fill();
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DAMM_SHUFFLE 1

/* damm_maps[d][s] = damm_table[s][d]: digit d as a map of the interim
** digit; entries 10..15 are never an index (interim digits are 0..9). */
static uint8_t damm_maps[10][16] __attribute__((aligned(16)));
static int damm_has_ssse3;

static void damm_maps_fill(void) {
  for (int d = 0; d < 10; d++)
    for (int st = 0; st < 10; st++)
      damm_maps[d][st] = damm_table[st][d];
  damm_has_ssse3 = __builtin_cpu_supports("ssse3");
}

/* The map "f, then g": (g o f)[s] = g[f[s]]. */
__attribute__((target("ssse3"))) static inline __m128i damm_then(__m128i f,
                                                                 __m128i g) {
  return _mm_shuffle_epi8(g, f);
}

__attribute__((target("ssse3"))) static int damm_ssse3(const uint8_t *v,
                                                       size_t n) {
  __m128i acc = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                              15); /* the identity */
  size_t i = 0;
#define MAP(k) _mm_load_si128((const __m128i *)damm_maps[v[k]])
  for (; i + 4 <= n; i += 4) {
    __m128i ab = damm_then(MAP(i), MAP(i + 1));
    __m128i cd = damm_then(MAP(i + 2), MAP(i + 3));
    acc = damm_then(acc, damm_then(ab, cd));
  }
  for (; i < n; i++)
    acc = damm_then(acc, MAP(i));
#undef MAP
  return _mm_cvtsi128_si32(acc) & 0xff; /* the map applied to 0 */
}
#endif

int frond__damm(const uint8_t *v, size_t n) {
  unsigned interim = 0;
  size_t i = 0;
  pthread_once(&damm_once, damm_fill);
#ifdef DAMM_SHUFFLE
  if (FROND__LIKELY(damm_has_ssse3))
    return damm_ssse3(v, n);
#endif
  for (; i + 1 < n; i += 2)
    interim = damm_pairs[interim][v[i] * 10 + v[i + 1]];
  if (i < n)
    interim = damm_table[interim][v[i]];
  return (int)interim;
}

int frond__luhn(const uint8_t *v, size_t n) {
  /* Double every second digit from the right, counting the check digit
  ** that will follow as the first. */
  unsigned sum = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned d = v[n - 1 - i];
    if (i % 2 == 0) {
      d *= 2;
      if (d > 9)
        d -= 9;
    }
    sum += d;
  }
  return (int)((10 - sum % 10) % 10);
}

int frond__mod37(const uint8_t *v, size_t n) {
  unsigned r = 0;
  for (size_t i = 0; i < n; i++)
    r = (r * 32 + v[i]) % 37;
  return (int)r;
}

void frond__put_radix(uint64_t v, unsigned radix, const char *alphabet,
                      unsigned width, char *out) {
  /* Constant divisors: the compiler turns them into multiplications. */
  switch (radix) {
  case 62:
    for (unsigned i = width; i > 0; i--, v /= 62)
      out[i - 1] = alphabet[v % 62];
    return;
  case 32:
    for (unsigned i = width; i > 0; i--, v >>= 5)
      out[i - 1] = alphabet[v & 31];
    return;
  case 10:
    for (unsigned i = width; i > 0; i--, v /= 10)
      out[i - 1] = alphabet[v % 10];
    return;
  default:
    for (unsigned i = width; i > 0; i--, v /= radix)
      out[i - 1] = alphabet[v % radix];
  }
}
