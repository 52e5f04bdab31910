/* SPDX-License-Identifier: Apache-2.0 */
/*
** order_digits.c -- the halves of permuted numbers written out as
** symbol values, for the batches of order.c and order_aes.c.
**
** One number's halves go through frond__perm_put (here): two decimal
** digits a step from a table, a multiplication by a constant each. In a
** batch of 32 numbers that was a third of the permutation's time. With
** AVX-512 IFMA, eight decimal digits are one broadcast and two 52-bit
** multiply-adds (Lemire's method, "Converting integers to decimal strings
** faster with AVX-512", 2022): lane j > 0 holds frac(v / 10^(8-j)) in
** 52-bit fixed point, the low 52 bits of v * ceil(2^52 / 10^(8-j)), and
** the high 52 bits of ten times that are the digit of 10^(7-j). Exact for
** v < 10^8 while 10^(8-j) <= 10^7: the constant's rounding adds less than
** v / 2^52 < 2.3 * 10^-8 to a fraction that is a multiple of 10^-(8-j),
** under 10^-7 from the next. Lane 0, whose fraction would be a multiple
** of 10^-8, takes floor(v / 10^7) at once: the high 52 bits of
** v * ceil(2^52 / 10^7), exact by the same bound. A half of up
** to 10 digits is its low 8 by that and its top one or two from the
** table. Base32 halves are shifts, the same in either code.
*/
#include "core/formats.h"

#include <string.h>

/* The two digits of 0..99, tens first. */
#define PAIRS_OF(t) t, 0, t, 1, t, 2, t, 3, t, 4, t, 5, t, 6, t, 7, t, 8, t, 9
static const uint8_t pairs[200] = {
    PAIRS_OF(0), PAIRS_OF(1), PAIRS_OF(2), PAIRS_OF(3), PAIRS_OF(4),
    PAIRS_OF(5), PAIRS_OF(6), PAIRS_OF(7), PAIRS_OF(8), PAIRS_OF(9)};

/* The radix is 10 or 32, written out as constants so that no digit costs
** a hardware division (about as much as a SipHash call on a busy core).
** Decimal halves go two digits a step, copied from a table: half the
** multiplications of a digit at a time, which in a batch were a third of
** the time spent outside the SipHash kernel. */
static inline void put_half(uint64_t v, unsigned radix, unsigned n,
                            uint8_t *out) {
  if (radix == 32) {
    for (unsigned i = n; i > 0; i--, v >>= 5)
      out[i - 1] = (uint8_t)(v & 31);
    return;
  }
  for (; n >= 2; n -= 2) {
    uint64_t q = v / 100;
    memcpy(out + n - 2, pairs + 2 * (v - q * 100), 2);
    v = q;
  }
  if (n == 1)
    out[0] = (uint8_t)v; /* below 10: the half is below 10^n */
}

void frond__perm_put(const frond__perm *p, uint64_t A, uint64_t B,
                     uint8_t *out) {
  put_half(A, p->radix, p->adig, out);
  put_half(B, p->radix, p->bdig, out + p->adig);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DIGITS_X86 1
#define IFMA __attribute__((target("avx512f,avx512ifma")))

/* ceil(2^52 / 10^k), k = 7 (lane 0: the quotient by 10^7), then 7 down
** to 1 (the fractions). */
#define C52(k) ((((uint64_t)1 << 52) + (k)-1) / (k))
static const uint64_t frac_by[8] = {C52(10000000), C52(10000000), C52(1000000),
                                    C52(100000),   C52(10000),    C52(1000),
                                    C52(100),      C52(10)};

/* The 8 decimal digits of v < 10^8, as values 0..9, into out[0..8). */
IFMA static inline void digits8(uint64_t v, __m512i by, __m512i ten,
                                uint8_t *out) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i vb = _mm512_set1_epi64((long long)v);
  __m512i f = _mm512_madd52lo_epu64(zero, vb, by);
  __m512i d = _mm512_maskz_madd52hi_epu64(0xfe, zero, f, ten);
  d = _mm512_mask_madd52hi_epu64(d, 0x01, vb, by);
  _mm_storel_epi64((__m128i *)(void *)out, _mm512_cvtepi64_epi8(d));
}

/* A decimal half of n <= 10 digits: its top n - 8 from the table, the low
** 8 by digits8; fewer than 8 digits are the end of 8. */
IFMA static inline void half_ifma(uint64_t v, unsigned n, __m512i by,
                                  __m512i ten, uint8_t *out) {
  uint8_t tmp[8];
  if (n >= 8) {
    uint64_t top = v / 100000000;
    digits8(v - top * 100000000, by, ten, out + n - 8);
    if (n == 10) {
      out[0] = (uint8_t)(top / 10);
      out[1] = (uint8_t)(top % 10);
    } else if (n == 9) {
      out[0] = (uint8_t)top;
    }
    return;
  }
  digits8(v, by, ten, tmp);
  memcpy(out, tmp + 8 - n, n);
}

IFMA static void put_n_ifma(const frond__perm *p, const uint64_t *A,
                            const uint64_t *B, size_t n, uint8_t *out) {
  const __m512i by = _mm512_loadu_si512((const void *)frac_by);
  const __m512i ten = _mm512_set1_epi64(10);
  for (size_t j = 0; j < n; j++, out += p->width) {
    half_ifma(A[j], p->adig, by, ten, out);
    half_ifma(B[j], p->bdig, by, ten, out + p->adig);
  }
}

/* What this CPU runs of the writers below, asked once: CPU_IFMA (the
** digits) and CPU_BW (the text); CPU_KNOWN once asked. Racing first
** callers store the same value. */
enum { CPU_KNOWN = 1, CPU_IFMA = 2, CPU_BW = 4 };

static int cpu(int want) {
  static _Atomic int known;
  int k = atomic_load_explicit(&known, memory_order_relaxed);
  if (FROND__UNLIKELY(k == 0)) {
    int f512 = __builtin_cpu_supports("avx512f");
    k = CPU_KNOWN |
        (f512 && __builtin_cpu_supports("avx512ifma") ? CPU_IFMA : 0) |
        (f512 && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl")
             ? CPU_BW
             : 0);
    atomic_store_explicit(&known, k, memory_order_relaxed);
  }
  return (k & want) != 0;
}

/* Decimal digit values as text: with AVX-512 BW, one masked load, one
** add and one masked store a number (masked bytes are neither read nor
** written, so nothing past a body or a slot is touched). */
#define BW __attribute__((target("avx512f,avx512bw,avx512vl")))

BW static void text_n_bw(const uint8_t *v, unsigned w, size_t n, char *out,
                         size_t stride) {
  const __m512i zero = _mm512_set1_epi8('0');
  const __mmask64 m = w >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << w) - 1;
  for (size_t j = 0; j < n; j++)
    _mm512_mask_storeu_epi8(
        out + j * stride, m,
        _mm512_add_epi8(_mm512_maskz_loadu_epi8(m, v + j * w), zero));
}
#endif

static _Atomic int forced_scalar;

void frond__perm_text_n(const uint8_t *v, unsigned w, size_t n, char *out,
                        size_t stride) {
#ifdef DIGITS_X86
  if (w <= 64 && cpu(CPU_BW) &&
      !atomic_load_explicit(&forced_scalar, memory_order_relaxed)) {
    text_n_bw(v, w, n, out, stride);
    return;
  }
#endif
  for (size_t j = 0; j < n; j++) {
    const uint8_t *restrict b = v + j * w;
    char *restrict o = out + j * stride;
    for (unsigned i = 0; i < w; i++)
      o[i] = (char)('0' + b[i]);
  }
}

void frond__perm_put_force_scalar(int on) {
  atomic_store(&forced_scalar, on);
}

void frond__perm_put_n(const frond__perm *p, const uint64_t *A,
                       const uint64_t *B, size_t n, uint8_t *out) {
#ifdef DIGITS_X86
  if (p->radix == 10 && cpu(CPU_IFMA) &&
      !atomic_load_explicit(&forced_scalar, memory_order_relaxed)) {
    put_n_ifma(p, A, B, n, out);
    return;
  }
#endif
  for (size_t j = 0; j < n; j++)
    frond__perm_put(p, A[j], B[j], out + j * p->width);
}
