/* SPDX-License-Identifier: Apache-2.0 */
/*
** order_aes.c -- the "aes" scheme of order numbers: the keyed permutation
** of order.c with AES-128 as its round function instead of SipHash-2-4.
**
** A key version says its scheme ("V:aes:KEY" in the key text); versions
** without one keep the first scheme, SipHash, and every number they made
** or will make. The construction is order.c's, round for round: a
** Feistel network over the two halves of the numeral string (moduli
** a = radix^ceil(w/2), b = radix^floor(w/2), no cycle-walking), 8 rounds
** by default, as NIST's FF3-1 (SP 800-38G Rev. 1), whose round function
** is AES too. Round i computes
**
**   F_i(v) = the first 8 bytes, read little-endian, of
**            AES-128_k(LE64(i << 56 | v) || 0^64), reduced to [0, m)
**            by multiply-shift (bias below 2^-29, as order.c)
**
** with k a 16-byte key derived per format from the version's master key
** (BLAKE2b over "frond order aes v1 radix= width= rounds=", so that the
** two schemes never share a key). It is not FF3-1 byte for byte: FF3-1
** reverses the numeral strings and bytes, splits a 56-bit tweak and
** reduces the whole 128-bit block with a division each round; the round
** input here is order.c's, so one code path serves both schemes' halves.
** The security argument is the same as SipHash's: AES-128 is a
** pseudorandom permutation, hence a PRF on distinct inputs up to q^2 /
** 2^129 (the switching lemma), and the rounds' inputs are distinct per
** round; Patarin's bound for 6+ rounds and FF3-1's choice of 8 carry over
** unchanged.
**
** Why: on a CPU with AES-NI, AES-128 of one block is a chain of 10
** aesenc of about 3 cycles each, 11 ns here against SipHash-2-4's 16 ns,
** so one order number at a time takes about two thirds of the time; and
** VAES runs four blocks per instruction, so batches take 16 IDs side by
** side for a fraction of the AVX-512 SipHash kernel's time. Without
** AES-NI the rounds run in portable C (table lookups: not constant time,
** and slower than SipHash); the results are identical, which
** test_format_order checks against FIPS-197's example and on random
** blocks.
*/
#include "core/formats.h"

#include <string.h>

/* ---- AES-128 in portable C (FIPS-197) ---- */

static const uint8_t sbox[256] = {
    0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b,
    0xfe, 0xd7, 0xab, 0x76, 0xca, 0x82, 0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0,
    0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0, 0xb7, 0xfd, 0x93, 0x26,
    0x36, 0x3f, 0xf7, 0xcc, 0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15,
    0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96, 0x05, 0x9a, 0x07, 0x12, 0x80, 0xe2,
    0xeb, 0x27, 0xb2, 0x75, 0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0,
    0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84, 0x53, 0xd1, 0x00, 0xed,
    0x20, 0xfc, 0xb1, 0x5b, 0x6a, 0xcb, 0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf,
    0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85, 0x45, 0xf9, 0x02, 0x7f,
    0x50, 0x3c, 0x9f, 0xa8, 0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5,
    0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff, 0xf3, 0xd2, 0xcd, 0x0c, 0x13, 0xec,
    0x5f, 0x97, 0x44, 0x17, 0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
    0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88, 0x46, 0xee, 0xb8, 0x14,
    0xde, 0x5e, 0x0b, 0xdb, 0xe0, 0x32, 0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c,
    0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79, 0xe7, 0xc8, 0x37, 0x6d,
    0x8d, 0xd5, 0x4e, 0xa9, 0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08,
    0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6, 0xb4, 0xc6, 0xe8, 0xdd, 0x74, 0x1f,
    0x4b, 0xbd, 0x8b, 0x8a, 0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e,
    0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e, 0xe1, 0xf8, 0x98, 0x11,
    0x69, 0xd9, 0x8e, 0x94, 0x9b, 0x1e, 0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf,
    0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68, 0x41, 0x99, 0x2d, 0x0f,
    0xb0, 0x54, 0xbb, 0x16};

static uint8_t xtime(uint8_t x) {
  return (uint8_t)(x << 1 ^ ((x >> 7) * 0x1b));
}

void frond__aes_expand(const uint8_t key[16], frond__aes_key *k) {
  uint8_t *w = &k->rk[0][0], rcon = 1;
  memcpy(w, key, 16);
  for (int i = 16; i < 176; i += 4) {
    uint8_t t[4];
    memcpy(t, w + i - 4, 4);
    if (i % 16 == 0) {
      uint8_t t0 = t[0];
      t[0] = (uint8_t)(sbox[t[1]] ^ rcon);
      t[1] = sbox[t[2]];
      t[2] = sbox[t[3]];
      t[3] = sbox[t0];
      rcon = xtime(rcon);
    }
    for (int j = 0; j < 4; j++)
      w[i + j] = (uint8_t)(w[i - 16 + j] ^ t[j]);
  }
}

void frond__aes_encrypt_c(const frond__aes_key *k, const uint8_t in[16],
                          uint8_t out[16]) {
  uint8_t s[16], t[16];
  for (int i = 0; i < 16; i++)
    s[i] = (uint8_t)(in[i] ^ k->rk[0][i]);
  for (int r = 1; r <= 10; r++) {
    /* SubBytes and ShiftRows (column-major state: byte 4c + row). */
    for (int c = 0; c < 4; c++)
      for (int row = 0; row < 4; row++)
        t[4 * c + row] = sbox[s[4 * ((c + row) % 4) + row]];
    if (r < 10) /* MixColumns */
      for (int c = 0; c < 4; c++) {
        uint8_t *a = t + 4 * c, a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
        uint8_t all = (uint8_t)(a0 ^ a1 ^ a2 ^ a3);
        a[0] = (uint8_t)(a0 ^ all ^ xtime((uint8_t)(a0 ^ a1)));
        a[1] = (uint8_t)(a1 ^ all ^ xtime((uint8_t)(a1 ^ a2)));
        a[2] = (uint8_t)(a2 ^ all ^ xtime((uint8_t)(a2 ^ a3)));
        a[3] = (uint8_t)(a3 ^ all ^ xtime((uint8_t)(a3 ^ a0)));
      }
    for (int i = 0; i < 16; i++)
      s[i] = (uint8_t)(t[i] ^ k->rk[r][i]);
  }
  memcpy(out, s, 16);
}

/* ---- AES-NI and VAES ---- */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <cpuid.h>
#define AES_X86 1

#define AESNI __attribute__((target("aes,sse4.1")))
#define VAES __attribute__((target("aes,avx512f,avx512ifma,vaes")))

AESNI static inline uint64_t f_aesni(const frond__aes_key *k, uint64_t m) {
  const __m128i *rk = (const __m128i *)(const void *)k->rk;
  __m128i b = _mm_xor_si128(_mm_cvtsi64_si128((long long)m), rk[0]);
  for (int r = 1; r < 10; r++)
    b = _mm_aesenc_si128(b, rk[r]);
  b = _mm_aesenclast_si128(b, rk[10]);
  return (uint64_t)_mm_cvtsi128_si64(b);
}

AESNI static uint64_t f_aesni_call(const frond__aes_key *k, uint64_t m) {
  return f_aesni(k, m);
}

AESNI static void encrypt_ni(const frond__aes_key *k, const uint8_t in[16],
                             uint8_t out[16]) {
  const __m128i *rk = (const __m128i *)(const void *)k->rk;
  __m128i b =
      _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)in), rk[0]);
  for (int r = 1; r < 10; r++)
    b = _mm_aesenc_si128(b, rk[r]);
  _mm_storeu_si128((__m128i *)(void *)out, _mm_aesenclast_si128(b, rk[10]));
}

/* The high 64 bits of h * m in each lane, m < 2^40, in two 52-bit
** multiply-adds (AVX-512 IFMA): with h = h1 * 2^52 + h0,
** floor(h * m / 2^52) = h1 * m + floor(h0 * m / 2^52) exactly, and that
** shifted right by 12 is reduce() below. Both products fit their 52 bits
** (h1 * m < 2^12 * 2^35 for the moduli of up to 10 digits). The
** multiply-adds read the low 52 bits of their factors only, so h goes in
** whole as h0. */
VAES static inline __m512i mulhi(__m512i h, __m512i m) {
  __m512i p = _mm512_madd52hi_epu64(_mm512_setzero_si512(), h, m);
  return _mm512_srli_epi64(
      _mm512_madd52lo_epu64(p, _mm512_srli_epi64(h, 52), m), 12);
}

/* Every round on 8 * G lanes in registers: a lane's round input is the
** low half of an AES block whose high half is zero (as f_aesni's), four
** blocks a register, so one aesenc advances four IDs. A round's 10
** aesenc are a chain, each waiting about 4 cycles for the last, and the
** CPU starts one a cycle: 2 * G chains side by side keep it busy (G = 4,
** 32 IDs, halved the kernel's time against G = 2, 16 IDs). G is a
** constant in each caller, so every loop over it unrolls. */
VAES __attribute__((always_inline)) static inline void
feistel_vaes(const frond__aes_key *k, unsigned rounds, uint64_t a, uint64_t b,
             uint64_t *A, uint64_t *B, const int G) {
  const __m128i *rk = (const __m128i *)(const void *)k->rk;
  __m512i key[11], va[8], vb[8], x[16];
  /* The first round key's halves, each in every lane: a block's first
  ** XOR is (w ^ k0.lo, k0.hi), its high half being zero. */
  const __m512i k0lo = _mm512_set1_epi64(_mm_cvtsi128_si64(rk[0]));
  const __m512i k0hi = _mm512_set1_epi64(_mm_extract_epi64(rk[0], 1));
  __m512i ma = _mm512_set1_epi64((long long)a);
  __m512i mb = _mm512_set1_epi64((long long)b);
  for (int r = 1; r < 11; r++)
    key[r] = _mm512_broadcast_i32x4(rk[r]);
  for (int g = 0; g < G; g++) {
    va[g] = _mm512_loadu_si512((const void *)(A + 8 * g));
    vb[g] = _mm512_loadu_si512((const void *)(B + 8 * g));
  }
  for (unsigned i = 0; i < rounds; i++) {
    /* B < 2^56: its OR with the round's tag is an XOR, taken with the
    ** first round key's low half in one. */
    const __m512i tag = _mm512_xor_si512(
        _mm512_set1_epi64((long long)((uint64_t)i << 56)), k0lo);
    const __m512i t = ma;
    for (int g = 0; g < G; g++) {
      __m512i w = _mm512_xor_si512(vb[g], tag);
      /* lanes 0,2,4,6 and 1,3,5,7, each over the key's high half (a zero
      ** high half, the first round key added) */
      x[2 * g] = _mm512_unpacklo_epi64(w, k0hi);
      x[2 * g + 1] = _mm512_unpackhi_epi64(w, k0hi);
    }
    for (int r = 1; r < 10; r++)
      for (int q = 0; q < 2 * G; q++)
        x[q] = _mm512_aesenc_epi128(x[q], key[r]);
    for (int q = 0; q < 2 * G; q++)
      x[q] = _mm512_aesenclast_epi128(x[q], key[10]);
    for (int g = 0; g < G; g++) {
      /* the low halves back in lane order, then (A, B) -> (B, (A + F) mod
      ** ma) */
      __m512i h = _mm512_unpacklo_epi64(x[2 * g], x[2 * g + 1]);
      __m512i s = _mm512_add_epi64(va[g], mulhi(h, ma));
      s = _mm512_mask_sub_epi64(s, _mm512_cmpge_epu64_mask(s, ma), s, ma);
      va[g] = vb[g];
      vb[g] = s;
    }
    ma = mb;
    mb = t;
  }
  for (int g = 0; g < G; g++) {
    _mm512_storeu_si512((void *)(A + 8 * g), va[g]);
    _mm512_storeu_si512((void *)(B + 8 * g), vb[g]);
  }
}

VAES static void feistel16_vaes(const frond__aes_key *k, unsigned rounds,
                                uint64_t a, uint64_t b, uint64_t *A,
                                uint64_t *B) {
  feistel_vaes(k, rounds, a, b, A, B, 2);
}

VAES static void feistel32_vaes(const frond__aes_key *k, unsigned rounds,
                                uint64_t a, uint64_t b, uint64_t *A,
                                uint64_t *B) {
  feistel_vaes(k, rounds, a, b, A, B, 4);
}

VAES static void feistel64_vaes(const frond__aes_key *k, unsigned rounds,
                                uint64_t a, uint64_t b, uint64_t *A,
                                uint64_t *B) {
  feistel_vaes(k, rounds, a, b, A, B, 8);
}
#endif

/* What the CPU has: 2 VAES and AVX-512F besides AES-NI, 1 AES-NI (and
** SSE4.1), 0 neither; -1 until asked. Racing first callers store the
** same value. */
static _Atomic int cpu_aes = -1;

int frond__aes_cpu(void) {
  int l = atomic_load_explicit(&cpu_aes, memory_order_relaxed);
  if (FROND__UNLIKELY(l < 0)) {
    l = 0;
#ifdef AES_X86
    unsigned a, b, c, d;
    __builtin_cpu_init(); /* a call from a constructor may come first */
    /* VAES: CPUID leaf 7, ECX bit 9, asked directly (clang 14's
    ** __builtin_cpu_supports does not know "vaes"); avx512f's check
    ** also says the OS saves the registers. */
    if (__builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1"))
      l = __builtin_cpu_supports("avx512f") &&
                  __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
                  (c & (1u << 9)) != 0
              ? 2
              : 1;
#endif
    atomic_store_explicit(&cpu_aes, l, memory_order_relaxed);
  }
  return l;
}

/* Which code runs: 2 VAES (batches, which need AVX-512 IFMA too) and
** AES-NI, 1 AES-NI, 0 portable C; -1 until the CPU was asked. */
static _Atomic int aes_level = -1;
static _Atomic int aes_forced_c;

static int level(void) {
  int l = atomic_load_explicit(&aes_level, memory_order_relaxed);
  if (FROND__UNLIKELY(l < 0)) {
    l = frond__aes_cpu();
#ifdef AES_X86
    if (l == 2 && !__builtin_cpu_supports("avx512ifma"))
      l = 1;
#endif
    atomic_store_explicit(&aes_level, l, memory_order_relaxed);
  }
  return atomic_load_explicit(&aes_forced_c, memory_order_relaxed) ? 0 : l;
}

void frond__aes_force_c(int on) {
  atomic_store(&aes_forced_c, on);
}

const char *frond__aes_impl(void) {
  static const char *const names[] = {"c", "aes-ni", "vaes"};
  return names[level()];
}

static uint64_t f_c(const frond__aes_key *k, uint64_t m) {
  uint8_t in[16] = {0}, out[16];
  uint64_t h = 0;
  for (int i = 0; i < 8; i++)
    in[i] = (uint8_t)(m >> (8 * i));
  frond__aes_encrypt_c(k, in, out);
  for (int i = 7; i >= 0; i--)
    h = h << 8 | out[i];
  return h;
}

void frond__aes_encrypt(const frond__aes_key *k, const uint8_t in[16],
                        uint8_t out[16]) {
#ifdef AES_X86
  if (level() > 0) {
    encrypt_ni(k, in, out);
    return;
  }
#endif
  frond__aes_encrypt_c(k, in, out);
}

/* ---- the permutation ---- */

static uint64_t reduce(uint64_t h, uint64_t m) {
#if defined(__SIZEOF_INT128__)
  return (uint64_t)(((unsigned __int128)h * m) >> 64);
#else
  return h % m;
#endif
}

#define FEISTEL(F)                                                             \
  do {                                                                         \
    for (unsigned i = 0; i < p->rounds; i++) {                                 \
      uint64_t t = A + reduce(F(k, B | (uint64_t)i << 56), ma);                \
      if (t >= ma)                                                             \
        t -= ma;                                                               \
      A = B;                                                                   \
      B = t;                                                                   \
      t = ma, ma = mb, mb = t;                                                 \
    }                                                                          \
  } while (0)

#ifdef AES_X86
AESNI static void apply_ni(const frond__perm *p, const frond__aes_key *k,
                           uint64_t *pA, uint64_t *pB) {
  uint64_t A = *pA, B = *pB, ma = p->a, mb = p->b;
  FEISTEL(f_aesni);
  *pA = A;
  *pB = B;
}
#endif

static void apply_c(const frond__perm *p, const frond__aes_key *k, uint64_t *pA,
                    uint64_t *pB) {
  uint64_t A = *pA, B = *pB, ma = p->a, mb = p->b;
  FEISTEL(f_c);
  *pA = A;
  *pB = B;
}

void frond__aes_perm_apply(const frond__perm *p, const frond__aes_key *k,
                           uint64_t x, uint8_t *out) {
  uint64_t A = frond__perm_div_low(p, x), B = x - A * p->b;
#ifdef AES_X86
  if (level() > 0)
    apply_ni(p, k, &A, &B);
  else
#endif
    apply_c(p, k, &A, &B);
  frond__perm_put(p, A, B, out);
}

/* The IDs x[0..n) split into halves, side by side in A and B. */
static void split(const frond__perm *p, const uint64_t *x, size_t n,
                  uint64_t *A, uint64_t *B) {
  for (size_t j = 0; j < n; j++) {
    A[j] = frond__perm_div_low(p, x[j]);
    B[j] = x[j] - A[j] * p->b;
  }
}

void frond__aes_perm_apply_n(const frond__perm *p, const frond__aes_key *k,
                             const uint64_t *x, size_t n, uint8_t *out) {
  size_t i = 0;
#ifdef AES_X86
  if (level() == 2) {
    uint64_t A[64], B[64];
    while (n - i >= 16) {
      size_t m = n - i >= 64 ? 64 : n - i >= 32 ? 32 : 16;
      split(p, x + i, m, A, B);
      if (m == 64)
        feistel64_vaes(k, p->rounds, p->a, p->b, A, B);
      else if (m == 32)
        feistel32_vaes(k, p->rounds, p->a, p->b, A, B);
      else
        feistel16_vaes(k, p->rounds, p->a, p->b, A, B);
      frond__perm_put_n(p, A, B, m, out + i * p->width);
      i += m;
    }
    /* The rest (fewer than 16, a cache's small refill) in 16 lanes too:
    ** the unused ones cost less than one ID's chain of 80 aesenc. */
    if (n - i >= 2) {
      memset(A, 0, 16 * sizeof(A[0]));
      memset(B, 0, 16 * sizeof(B[0]));
      split(p, x + i, n - i, A, B);
      feistel16_vaes(k, p->rounds, p->a, p->b, A, B);
      frond__perm_put_n(p, A, B, n - i, out + i * p->width);
      i = n;
    }
  }
#endif
  for (; i < n; i++)
    frond__aes_perm_apply(p, k, x[i], out + i * p->width);
}

static uint64_t aes_round(const void *k, uint64_t word) {
#ifdef AES_X86
  if (level() > 0)
    return f_aesni_call(k, word);
#endif
  return f_c(k, word);
}

int frond__aes_perm_invert(const frond__perm *p, const frond__aes_key *k,
                           const uint8_t *in, uint64_t *x) {
  return frond__perm_invert_by(p, aes_round, k, in, x);
}
