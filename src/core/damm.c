/* SPDX-License-Identifier: Apache-2.0 */
/*
** damm.c -- Damm's check digit: one table lookup per digit, the interim
** digit s -> table[s][d]. It detects every single-digit error and every
** transposition of adjacent digits (the table is a weakly totally
** anti-symmetric quasigroup); Verhoeff needs three tables for the same.
**
** One number: each lookup waits for the last, so the portable code takes
** two digits a step from a table of the pairs (1,000 bytes). Where the
** CPU has a byte shuffle (SSSE3's pshufb) it does not wait at all: a
** digit d is the map s -> table[s][d] of the ten interim digits, one
** 16-byte vector; one shuffle composes two maps, and maps compose in any
** grouping, so four digits' maps are combined side by side and the
** running map waits for one shuffle per four digits.
**
** A batch of numbers (frond__damm_n: a chunk of order numbers, whose
** prefix and version are the same and checked once): with AVX-512 VBMI,
** sixteen numbers go side by side, one in each 32-bit lane, digit
** position by digit position. A gather reads four digits of each of the
** sixteen; a lane's next interim digit is one byte permutation over the
** table flattened to 100 bytes (index 10 * s + d, two registers), whose
** entries are kept times ten so that the next index is one addition; the
** last digit reads the plain table. Sixteen chains, none waiting on
** another, at about four instructions a digit for all sixteen: a whole
** 19-digit order number's check cost more than its AES permutation
** before (test_format_order checks every path against the table).
*/
#include "core/formats.h"

#include <pthread.h>

static const uint8_t damm_table[10][10] = {
    {0, 3, 1, 7, 5, 9, 8, 6, 4, 2}, {7, 0, 9, 2, 1, 5, 4, 8, 6, 3},
    {4, 2, 0, 6, 8, 7, 1, 3, 5, 9}, {1, 7, 5, 0, 9, 8, 3, 4, 2, 6},
    {6, 1, 2, 3, 0, 4, 5, 9, 7, 8}, {3, 6, 7, 4, 2, 0, 9, 5, 8, 1},
    {5, 8, 6, 9, 7, 2, 0, 1, 3, 4}, {8, 9, 4, 5, 3, 6, 2, 0, 1, 7},
    {9, 4, 3, 8, 6, 1, 7, 2, 0, 5}, {2, 5, 8, 1, 4, 3, 6, 7, 9, 0}};

/* damm_pairs[s][10 * a + b]: the interim digit after a then b from s. */
static uint8_t damm_pairs[10][100];
static pthread_once_t damm_once = PTHREAD_ONCE_INIT;
static _Atomic int forced_scalar;

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define DAMM_X86 1

/* damm_maps[d][s] = damm_table[s][d]: digit d as a map of the interim
** digit; entries 10..15 are never an index (interim digits are 0..9). */
static uint8_t damm_maps[10][16] __attribute__((aligned(16)));
/* damm_flat[0][10 * s + d] = 10 * damm_table[s][d], damm_flat[1][...]
** the table itself; 100..127 are never an index. */
static uint8_t damm_flat[2][128] __attribute__((aligned(64)));
static int damm_has_ssse3, damm_has_vbmi;

/* AVX-512 VBMI: CPUID leaf 7, ECX bit 1, asked directly (as order_aes.c
** asks for VAES); avx512f's check says the OS saves the registers. */
static int has_vbmi(void) {
  unsigned a, b, c, d;
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 1)) != 0;
}
#endif

static void damm_fill(void) {
  for (int s = 0; s < 10; s++)
    for (int ab = 0; ab < 100; ab++)
      damm_pairs[s][ab] = damm_table[damm_table[s][ab / 10]][ab % 10];
#ifdef DAMM_X86
  for (int d = 0; d < 10; d++)
    for (int s = 0; s < 10; s++) {
      damm_maps[d][s] = damm_table[s][d];
      damm_flat[0][10 * s + d] = (uint8_t)(10 * damm_table[s][d]);
      damm_flat[1][10 * s + d] = damm_table[s][d];
    }
  damm_has_ssse3 = __builtin_cpu_supports("ssse3");
  damm_has_vbmi = has_vbmi();
#endif
}

#ifdef DAMM_X86
/* The map "f, then g": (g o f)[s] = g[f[s]]. */
__attribute__((target("ssse3"))) static inline __m128i damm_then(__m128i f,
                                                                 __m128i g) {
  return _mm_shuffle_epi8(g, f);
}

__attribute__((target("ssse3"))) static int
damm_ssse3(unsigned s, const uint8_t *v, size_t n) {
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
  /* the map applied to s */
  return _mm_cvtsi128_si32(_mm_shuffle_epi8(acc, _mm_cvtsi32_si128((int)s))) &
         0xff;
}

#define VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

/* Sixteen numbers of w >= 4 digits, number j's at v + j * w, from the
** interim digits s[0..16), into out[0..16). Digits k..k+3 of each number
** are one gather; a last group that would read past a number reads the
** four digits that end it, and skips the ones done. */
VBMI static void damm16_vbmi(const uint8_t *v, size_t w, const uint8_t *s,
                             uint8_t *out) {
  const __m512i t10a = _mm512_load_si512((const void *)damm_flat[0]);
  const __m512i t10b = _mm512_load_si512((const void *)(damm_flat[0] + 64));
  const __m512i t1a = _mm512_load_si512((const void *)damm_flat[1]);
  const __m512i t1b = _mm512_load_si512((const void *)(damm_flat[1] + 64));
  const __m512i ff = _mm512_set1_epi32(0xff);
  const __m512i at = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)w));
  /* 10 * s: the index of the first digit's row */
  __m512i st = _mm512_mullo_epi32(
      _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)s)),
      _mm512_set1_epi32(10));
  for (size_t k = 0; k < w; k += 4) {
    size_t g = k + 4 <= w ? k : w - 4;
    __m512i x = _mm512_i32gather_epi32(at, (const void *)(v + g), 1);
    for (size_t i = k - g; i < 4; i++) {
      __m512i d = _mm512_srl_epi32(x, _mm_cvtsi32_si128((int)(8 * i)));
      __m512i idx = _mm512_add_epi32(st, _mm512_and_si512(d, ff));
      /* bytes 1..3 of a lane index entry 0, which is 0 in both tables */
      st = g + i + 1 < w ? _mm512_permutex2var_epi8(t10a, idx, t10b)
                         : _mm512_permutex2var_epi8(t1a, idx, t1b);
    }
  }
  _mm_storeu_si128((__m128i *)(void *)out, _mm512_cvtepi32_epi8(st));
}
#endif

void frond__damm_force_scalar(int on) {
  atomic_store(&forced_scalar, on);
}

int frond__damm_from(unsigned s, const uint8_t *v, size_t n) {
  size_t i = 0;
  pthread_once(&damm_once, damm_fill);
#ifdef DAMM_X86
  if (FROND__LIKELY(damm_has_ssse3))
    return damm_ssse3(s, v, n);
#endif
  for (; i + 1 < n; i += 2)
    s = damm_pairs[s][v[i] * 10 + v[i + 1]];
  if (i < n)
    s = damm_table[s][v[i]];
  return (int)s;
}

int frond__damm(const uint8_t *v, size_t n) {
  return frond__damm_from(0, v, n);
}

void frond__damm_n(const uint8_t *v, size_t w, size_t n, const uint8_t *s,
                   uint8_t *out) {
  size_t j = 0;
  pthread_once(&damm_once, damm_fill);
#ifdef DAMM_X86
  if (damm_has_vbmi && w >= 4 &&
      !atomic_load_explicit(&forced_scalar, memory_order_relaxed))
    for (; j + 16 <= n; j += 16)
      damm16_vbmi(v + j * w, w, s + j, out + j);
#endif
  for (; j < n; j++)
    out[j] = (uint8_t)frond__damm_from(s[j], v + j * w, w);
}
