/* SPDX-License-Identifier: Apache-2.0 */
/*
** siphash_lanes.c -- SipHash-2-4 of 16 independent 8-byte words at once,
** for the permutation of a batch of order numbers (order.c).
**
** Why not libsodium alone: one order number is a chain of 8 SipHash calls,
** each waiting for the one before, and SipHash's own latency (about 31
** cycles for an 8-byte input, ~13 ns here) is most of the cost: calling
** libsodium's crypto_shorthash or the inlined SipHash of siphash.h takes
** the same time per call (bench/bench_formats). The IDs of a batch are
** independent, so their rounds could run side by side, but libsodium
** hashes one input per call: issued back to back, its calls overlap only
** as far as the CPU's out-of-order window reaches (about 1.4 times
** faster). SIMD lanes compute 4 (AVX2) or 8 (AVX-512) SipHashes in the
** time of one, which is what brings a batched order number under 50 ns.
** The whole network runs in the registers (feistel16): the reduction of
** each hash to the half's modulus and the addition too, about 6 ns an ID
** less with AVX-512 than passing every round's hashes through memory.
**
** The kernels below compute exactly SipHash-2-4 (Aumasson and Bernstein,
** 2012) of one 8-byte little-endian word under a 128-bit key, as
** libsodium's crypto_shorthash_siphash24 does: 2 compression rounds for
** the word, 2 for the final block (which holds only the length, 8), then
** 4 finalization rounds, from the constants of siphash.h, whose scalar
** SipHash serves single IDs and decoding. Nothing else of the cryptography
** is written by hand (feistel16 adds only the permutation's arithmetic):
** key derivation stays libsodium's BLAKE2b, and
** tests/unit/test_format_order.c checks every kernel this machine runs against
*crypto_shorthash for every word of a
** sample (random words, all-zero and all-one bytes, every round number in
** the top byte), and the batched permutation against the single one.
**
** Which kernel runs is decided once, by the CPU's features
** (__builtin_cpu_supports, which also checks that the OS saves the vector
** registers); without AVX2, or on other architectures, full groups of 16
** call libsodium once per word and shorter ones go one ID at a time.
*/
#include "core/formats.h"
#include "core/siphash.h"

#include <pthread.h>
#include <sodium.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__BYTE_ORDER__) &&     \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HAVE_X86_KERNELS 1
#include <immintrin.h>
#endif

/* libsodium's reference kernel: one crypto_shorthash call per word. */
static void sip16_sodium(const uint8_t key[16], const uint64_t m[16],
                         uint64_t h[16]) {
  for (int j = 0; j < 16; j++) {
    uint8_t in[8], out[8];
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
      in[k] = (uint8_t)(m[j] >> (8 * k));
    crypto_shorthash(out, in, sizeof(in), key);
    for (int k = 7; k >= 0; k--)
      v = v << 8 | out[k];
    h[j] = v;
  }
}

#ifdef HAVE_X86_KERNELS

#define SIP_C0 FROND__SIP_C0
#define SIP_C1 FROND__SIP_C1
#define SIP_C2 FROND__SIP_C2
#define SIP_C3 FROND__SIP_C3
#define SIP_LAST FROND__SIP_LAST
#define key_words frond__sip_key_words

/* ---- AVX2: 4 lanes per register, 4 registers of state per group ---- */

#define X2 _mm256_xor_si256
#define A2 _mm256_add_epi64
/* Rotations: 32 bits swap the dwords, 16 bits shuffle bytes, the others
** take two shifts and an or (AVX2 has no 64-bit rotate). */
#define ROT2(x, b)                                                             \
  _mm256_or_si256(_mm256_slli_epi64(x, b), _mm256_srli_epi64(x, 64 - b))
#define ROT2_32(x) _mm256_shuffle_epi32(x, 0xb1)
#define ROT2_16(x) _mm256_shuffle_epi8(x, r16)
#define SIPROUND2(v0, v1, v2, v3)                                              \
  do {                                                                         \
    v0 = A2(v0, v1);                                                           \
    v1 = ROT2(v1, 13);                                                         \
    v1 = X2(v1, v0);                                                           \
    v0 = ROT2_32(v0);                                                          \
    v2 = A2(v2, v3);                                                           \
    v3 = ROT2_16(v3);                                                          \
    v3 = X2(v3, v2);                                                           \
    v0 = A2(v0, v3);                                                           \
    v3 = ROT2(v3, 21);                                                         \
    v3 = X2(v3, v0);                                                           \
    v2 = A2(v2, v1);                                                           \
    v1 = ROT2(v1, 17);                                                         \
    v1 = X2(v1, v2);                                                           \
    v2 = ROT2_32(v2);                                                          \
  } while (0)

/* SipHash-2-4 of the 16 words in w[0..3] into h[0..3]. */
__attribute__((target("avx2"), always_inline)) static inline void
sip_avx2(uint64_t k0, uint64_t k1, const __m256i w[4], __m256i h[4]) {
  const __m256i r16 =
      _mm256_setr_epi8(6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12, 13, 6,
                       7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12, 13);
  const __m256i last = _mm256_set1_epi64x((long long)SIP_LAST);
  const __m256i ff = _mm256_set1_epi64x(0xff);
  __m256i v0[4], v1[4], v2[4], v3[4];
  /* Four independent groups, so that one group's rotations fill the
  ** others' wait for their adds. */
  for (int g = 0; g < 4; g++) {
    v0[g] = _mm256_set1_epi64x((long long)(k0 ^ SIP_C0));
    v1[g] = _mm256_set1_epi64x((long long)(k1 ^ SIP_C1));
    v2[g] = _mm256_set1_epi64x((long long)(k0 ^ SIP_C2));
    v3[g] = X2(_mm256_set1_epi64x((long long)(k1 ^ SIP_C3)), w[g]);
  }
  for (int r = 0; r < 2; r++)
    for (int g = 0; g < 4; g++)
      SIPROUND2(v0[g], v1[g], v2[g], v3[g]);
  for (int g = 0; g < 4; g++) {
    v0[g] = X2(v0[g], w[g]);
    v3[g] = X2(v3[g], last);
  }
  for (int r = 0; r < 2; r++)
    for (int g = 0; g < 4; g++)
      SIPROUND2(v0[g], v1[g], v2[g], v3[g]);
  for (int g = 0; g < 4; g++) {
    v0[g] = X2(v0[g], last);
    v2[g] = X2(v2[g], ff);
  }
  for (int r = 0; r < 4; r++)
    for (int g = 0; g < 4; g++)
      SIPROUND2(v0[g], v1[g], v2[g], v3[g]);
  for (int g = 0; g < 4; g++)
    h[g] = X2(X2(v0[g], v1[g]), X2(v2[g], v3[g]));
}

__attribute__((target("avx2"))) static void
sip16_avx2(const uint8_t key[16], const uint64_t m[16], uint64_t h[16]) {
  uint64_t k0, k1;
  __m256i w[4], r[4];
  key_words(key, &k0, &k1);
  for (int g = 0; g < 4; g++)
    w[g] = _mm256_loadu_si256((const __m256i *)(const void *)(m + 4 * g));
  sip_avx2(k0, k1, w, r);
  for (int g = 0; g < 4; g++)
    _mm256_storeu_si256((__m256i *)(void *)(h + 4 * g), r[g]);
}

/* The high 64 bits of h * m in each lane from 32-bit products, as
** mulhi_avx512 below. */
__attribute__((target("avx2"), always_inline)) static inline __m256i
mulhi_avx2(__m256i h, __m256i m, __m256i mh) {
  const __m256i lo = _mm256_set1_epi64x(0xffffffff);
  __m256i hh = _mm256_srli_epi64(h, 32);
  __m256i p0 = _mm256_mul_epu32(h, m);
  __m256i p1 = _mm256_mul_epu32(h, mh);
  __m256i p2 = _mm256_mul_epu32(hh, m);
  __m256i p3 = _mm256_mul_epu32(hh, mh);
  __m256i mid = A2(_mm256_srli_epi64(p0, 32),
                   A2(_mm256_and_si256(p1, lo), _mm256_and_si256(p2, lo)));
  return A2(A2(p3, _mm256_srli_epi64(mid, 32)),
            A2(_mm256_srli_epi64(p1, 32), _mm256_srli_epi64(p2, 32)));
}

/* Every round of the network on 16 lanes in registers, as
** feistel16_avx512 below. AVX2 compares only signed 64-bit lanes: the
** halves and moduli are below 2^36, so the signed compare is exact. */
__attribute__((target("avx2"))) static void
feistel16_avx2(const uint8_t key[16], unsigned rounds, uint64_t a, uint64_t b,
               uint64_t A[16], uint64_t B[16]) {
  uint64_t k0, k1;
  __m256i va[4], vb[4], w[4], h[4];
  __m256i ma = _mm256_set1_epi64x((long long)a);
  __m256i mb = _mm256_set1_epi64x((long long)b);
  key_words(key, &k0, &k1);
  for (int g = 0; g < 4; g++) {
    va[g] = _mm256_loadu_si256((const __m256i *)(const void *)(A + 4 * g));
    vb[g] = _mm256_loadu_si256((const __m256i *)(const void *)(B + 4 * g));
  }
  for (unsigned i = 0; i < rounds; i++) {
    const __m256i tag = _mm256_set1_epi64x((long long)((uint64_t)i << 56));
    const __m256i mh = _mm256_srli_epi64(ma, 32), t = ma;
    for (int g = 0; g < 4; g++)
      w[g] = _mm256_or_si256(vb[g], tag);
    sip_avx2(k0, k1, w, h);
    for (int g = 0; g < 4; g++) {
      /* (A, B) -> (B, (A + F(B)) mod ma): subtract ma unless s < ma. */
      __m256i s = A2(va[g], mulhi_avx2(h[g], ma, mh));
      s = _mm256_sub_epi64(s,
                           _mm256_andnot_si256(_mm256_cmpgt_epi64(ma, s), ma));
      va[g] = vb[g];
      vb[g] = s;
    }
    ma = mb;
    mb = t;
  }
  for (int g = 0; g < 4; g++) {
    _mm256_storeu_si256((__m256i *)(void *)(A + 4 * g), va[g]);
    _mm256_storeu_si256((__m256i *)(void *)(B + 4 * g), vb[g]);
  }
}

/* ---- AVX-512: 8 lanes per register, native 64-bit rotates ---- */

#define X5 _mm512_xor_si512
#define A5 _mm512_add_epi64
#define ROT5 _mm512_rol_epi64
#define SIPROUND5(v0, v1, v2, v3)                                              \
  do {                                                                         \
    v0 = A5(v0, v1);                                                           \
    v1 = ROT5(v1, 13);                                                         \
    v1 = X5(v1, v0);                                                           \
    v0 = ROT5(v0, 32);                                                         \
    v2 = A5(v2, v3);                                                           \
    v3 = ROT5(v3, 16);                                                         \
    v3 = X5(v3, v2);                                                           \
    v0 = A5(v0, v3);                                                           \
    v3 = ROT5(v3, 21);                                                         \
    v3 = X5(v3, v0);                                                           \
    v2 = A5(v2, v1);                                                           \
    v1 = ROT5(v1, 17);                                                         \
    v1 = X5(v1, v2);                                                           \
    v2 = ROT5(v2, 32);                                                         \
  } while (0)

/* SipHash-2-4 of the 16 words in w[0..1] into h[0..1]. */
__attribute__((target("avx512f"), always_inline)) static inline void
sip_avx512(uint64_t k0, uint64_t k1, const __m512i w[2], __m512i h[2]) {
  const __m512i last = _mm512_set1_epi64((long long)SIP_LAST);
  const __m512i ff = _mm512_set1_epi64(0xff);
  __m512i v0[2], v1[2], v2[2], v3[2];
  for (int g = 0; g < 2; g++) {
    v0[g] = _mm512_set1_epi64((long long)(k0 ^ SIP_C0));
    v1[g] = _mm512_set1_epi64((long long)(k1 ^ SIP_C1));
    v2[g] = _mm512_set1_epi64((long long)(k0 ^ SIP_C2));
    v3[g] = X5(_mm512_set1_epi64((long long)(k1 ^ SIP_C3)), w[g]);
  }
  for (int r = 0; r < 2; r++)
    for (int g = 0; g < 2; g++)
      SIPROUND5(v0[g], v1[g], v2[g], v3[g]);
  for (int g = 0; g < 2; g++) {
    v0[g] = X5(v0[g], w[g]);
    v3[g] = X5(v3[g], last);
  }
  for (int r = 0; r < 2; r++)
    for (int g = 0; g < 2; g++)
      SIPROUND5(v0[g], v1[g], v2[g], v3[g]);
  for (int g = 0; g < 2; g++) {
    v0[g] = X5(v0[g], last);
    v2[g] = X5(v2[g], ff);
  }
  for (int r = 0; r < 4; r++)
    for (int g = 0; g < 2; g++)
      SIPROUND5(v0[g], v1[g], v2[g], v3[g]);
  for (int g = 0; g < 2; g++)
    h[g] = X5(X5(v0[g], v1[g]), X5(v2[g], v3[g]));
}

__attribute__((target("avx512f"))) static void
sip16_avx512(const uint8_t key[16], const uint64_t m[16], uint64_t h[16]) {
  uint64_t k0, k1;
  __m512i w[2], r[2];
  key_words(key, &k0, &k1);
  for (int g = 0; g < 2; g++)
    w[g] = _mm512_loadu_si512((const void *)(m + 8 * g));
  sip_avx512(k0, k1, w, r);
  for (int g = 0; g < 2; g++)
    _mm512_storeu_si512((void *)(h + 8 * g), r[g]);
}

/* The high 64 bits of h * m in each lane, from 32-bit products (AVX-512F
** has no 64-bit high multiply): exactly order.c's reduce(). */
__attribute__((target("avx512f"), always_inline)) static inline __m512i
mulhi_avx512(__m512i h, __m512i m, __m512i mh) {
  const __m512i lo = _mm512_set1_epi64(0xffffffff);
  __m512i hh = _mm512_srli_epi64(h, 32);
  __m512i p0 = _mm512_mul_epu32(h, m);   /* hl * ml */
  __m512i p1 = _mm512_mul_epu32(h, mh);  /* hl * mh */
  __m512i p2 = _mm512_mul_epu32(hh, m);  /* hh * ml */
  __m512i p3 = _mm512_mul_epu32(hh, mh); /* hh * mh */
  __m512i mid = A5(_mm512_srli_epi64(p0, 32),
                   A5(_mm512_and_si512(p1, lo), _mm512_and_si512(p2, lo)));
  return A5(A5(p3, _mm512_srli_epi64(mid, 32)),
            A5(_mm512_srli_epi64(p1, 32), _mm512_srli_epi64(p2, 32)));
}

/* Every round of the Feistel network (order.c) on 16 lanes, in registers:
** the hash, the reduction and the addition of a round never leave them. */
__attribute__((target("avx512f"))) static void
feistel16_avx512(const uint8_t key[16], unsigned rounds, uint64_t a, uint64_t b,
                 uint64_t A[16], uint64_t B[16]) {
  uint64_t k0, k1;
  __m512i va[2], vb[2], w[2], h[2];
  __m512i ma = _mm512_set1_epi64((long long)a);
  __m512i mb = _mm512_set1_epi64((long long)b);
  key_words(key, &k0, &k1);
  for (int g = 0; g < 2; g++) {
    va[g] = _mm512_loadu_si512((const void *)(A + 8 * g));
    vb[g] = _mm512_loadu_si512((const void *)(B + 8 * g));
  }
  for (unsigned i = 0; i < rounds; i++) {
    const __m512i tag = _mm512_set1_epi64((long long)((uint64_t)i << 56));
    const __m512i mh = _mm512_srli_epi64(ma, 32), t = ma;
    for (int g = 0; g < 2; g++)
      w[g] = _mm512_or_si512(vb[g], tag);
    sip_avx512(k0, k1, w, h);
    for (int g = 0; g < 2; g++) {
      /* (A, B) -> (B, (A + F(B)) mod ma) */
      __m512i s = A5(va[g], mulhi_avx512(h[g], ma, mh));
      s = _mm512_mask_sub_epi64(s, _mm512_cmpge_epu64_mask(s, ma), s, ma);
      va[g] = vb[g];
      vb[g] = s;
    }
    ma = mb;
    mb = t;
  }
  for (int g = 0; g < 2; g++) {
    _mm512_storeu_si512((void *)(A + 8 * g), va[g]);
    _mm512_storeu_si512((void *)(B + 8 * g), vb[g]);
  }
}

#endif /* HAVE_X86_KERNELS */

/*
** A call hashes 16 lanes whatever the batch, so a short batch is faster
** one ID at a time (frond__perm_apply, its rounds a chain of SipHash
** calls). Where each kernel starts to win, per ID at 8 rounds of a
** 19-digit permutation on the project's machine: avx512 160 ns at 2 IDs,
** 88 at 4, against 127 one at a time; avx2 138 at 4, 81 at 8; libsodium's
** 16 independent calls overlap in the CPU and win only when all 16 lanes
** are used (95 ns).
*/
static const frond__sip_kernel kernels[] = {
#ifdef HAVE_X86_KERNELS
    {"avx512", sip16_avx512, 3, feistel16_avx512},
    {"avx2", sip16_avx2, 5, feistel16_avx2},
#endif
    {"libsodium", sip16_sodium, 16, NULL},
};

static int runnable(const frond__sip_kernel *k) {
#ifdef HAVE_X86_KERNELS
  if (k->hash16 == sip16_avx512)
    return __builtin_cpu_supports("avx512f");
  if (k->hash16 == sip16_avx2)
    return __builtin_cpu_supports("avx2");
#endif
  return k->hash16 == sip16_sodium;
}

static frond__sip_kernel usable[FROND__ARRAY_SIZE(kernels)];
static size_t nusable;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void pick(void) {
#ifdef HAVE_X86_KERNELS
  __builtin_cpu_init();
#endif
  for (size_t i = 0; i < FROND__ARRAY_SIZE(kernels); i++)
    if (runnable(&kernels[i]))
      usable[nusable++] = kernels[i];
}

size_t frond__sip_kernels(const frond__sip_kernel **list) {
  pthread_once(&once, pick);
  *list = usable;
  return nusable;
}
