/* SPDX-License-Identifier: Apache-2.0 */
/*
** rand_aes.c -- the keystream of id128_rand.c on a CPU with AES-NI:
** AES-256 in counter mode, each key used for one draw and replaced by
** the draw's first 32 bytes (fast key erasure, as the ChaCha20 keystream
** it replaces there).
**
** Block j of a draw is AES-256_k(0^120 || j): the keystream of
** AES-256-CTR (NIST SP 800-38A) from an all-zero initial counter block,
** which test_rand_aes checks against OpenSSL's aes-256-ctr. A draw is
** at most FROND__RAND_AES_MAX bytes (256 blocks), so j fits the last
** byte; a key makes one draw and is then gone, so no counter block ever
** repeats under a key.
**
** The argument: AES-256 is taken to be a pseudorandom permutation; the
** 64 blocks a key makes here are then within 64^2 / 2^129 of random
** bytes (the switching lemma), and each next key is such bytes, hidden
** from the output like ChaCha20's. AES-256 rather than AES-128: a key's
** output is public in part (the random bits of IDs), and many keys under
** attack at once (a multi-target search) cost 2^256 / keys rather than
** 2^128 / keys. Why AES over ChaCha20 where AES-NI exists: a 1 KiB draw
** is 64 blocks of 14 rounds, 4 blocks an instruction on VAES, about 0.9
** ns per 8 bytes here (1.4 on AES-NI alone) against ChaCha20's 3.4
** (bench_formats, "1 KiB draw" rows); and AES-NI runs in constant time,
** which table-driven AES does not, so a CPU without it keeps ChaCha20
** (no AES in portable C here).
**
** Key expansion (FIPS-197, 5.2) runs once per draw with AESKEYGENASSIST:
** words 8i..8i+3 from RotWord(SubWord(w[8i-1])) ^ Rcon, words 8i+4..
** 8i+7 from SubWord(w[8i+3]), each four-word half being the previous
** one's running XOR.
*/
#include "core/formats.h"

#include <sodium.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic int forced; /* 0, or 1 + the level tests asked for */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AESNI __attribute__((target("aes,sse4.1")))
#define VAES __attribute__((target("aes,avx512f,vaes")))

/* k ^ k << 32 ^ k << 64 ^ k << 96, then t (the assist's word, in every
** lane): the next four words from the four before them. */
AESNI static inline __m128i step(__m128i k, __m128i t) {
  k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
  k = _mm_xor_si128(k, _mm_slli_si128(k, 8));
  return _mm_xor_si128(k, t);
}

#define EVEN(i, rcon)                                                          \
  rk[i] = step(                                                                \
      rk[(i)-2],                                                               \
      _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[(i)-1], rcon), 0xff))
#define ODD(i)                                                                 \
  rk[i] =                                                                      \
      step(rk[(i)-2],                                                          \
           _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[(i)-1], 0), 0xaa))

AESNI static void expand(const uint8_t key[32], __m128i rk[15]) {
  rk[0] = _mm_loadu_si128((const __m128i *)(const void *)key);
  rk[1] = _mm_loadu_si128((const __m128i *)(const void *)(key + 16));
  EVEN(2, 0x01);
  ODD(3);
  EVEN(4, 0x02);
  ODD(5);
  EVEN(6, 0x04);
  ODD(7);
  EVEN(8, 0x08);
  ODD(9);
  EVEN(10, 0x10);
  ODD(11);
  EVEN(12, 0x20);
  ODD(13);
  EVEN(14, 0x40);
}

/* Counter block j (< 256): zero but for its last byte. */
AESNI static inline __m128i ctr(size_t j) {
  return _mm_slli_si128(_mm_cvtsi32_si128((int)j), 15);
}

/* Every loop over rounds and blocks unrolled: gcc at -O2 otherwise keeps
** the blocks in memory, each aesenc a load and a store, which made the
** AES-NI path no faster than ChaCha20. */
#define UNROLL(n) _Pragma(FROND__STR(GCC unroll n))
#define FROND__STR(x) #x

/* Blocks from..nb-1 one at a time (a tail, or the whole draw). What a
** block held is wiped with the round keys: key material (fast key
** erasure) never stays behind on the stack, as libsodium's ChaCha20
** leaves none. */
AESNI static void blocks_ni(const __m128i rk[15], uint8_t *out, size_t from,
                            size_t nb, size_t n) {
  __m128i b[1];
  for (size_t j = from; j < nb; j++) {
    b[0] = _mm_xor_si128(ctr(j), rk[0]);
    UNROLL(13)
    for (int r = 1; r < 14; r++)
      b[0] = _mm_aesenc_si128(b[0], rk[r]);
    b[0] = _mm_aesenclast_si128(b[0], rk[14]);
    memcpy(out + 16 * j, b, 16 * j + 16 <= n ? 16 : n - 16 * j);
  }
  sodium_memzero(b, sizeof(b));
}

/* Eight blocks side by side: each aesenc waits some cycles for the
** last, and the CPU starts one a cycle. */
AESNI static size_t eights_ni(const __m128i rk[15], uint8_t *out, size_t from,
                              size_t nb) {
  __m128i b[8];
  size_t j;
  for (j = from; j + 8 <= nb; j += 8) {
    UNROLL(8)
    for (int q = 0; q < 8; q++)
      b[q] = _mm_xor_si128(ctr(j + (size_t)q), rk[0]);
    UNROLL(13)
    for (int r = 1; r < 14; r++) {
      UNROLL(8)
      for (int q = 0; q < 8; q++)
        b[q] = _mm_aesenc_si128(b[q], rk[r]);
    }
    UNROLL(8)
    for (int q = 0; q < 8; q++)
      _mm_storeu_si128((__m128i *)(void *)(out + 16 * (j + (size_t)q)),
                       _mm_aesenclast_si128(b[q], rk[14]));
  }
  sodium_memzero(b, sizeof(b));
  return j;
}

/* 32 blocks a step, four a register, eight registers side by side: the
** counters of the four lanes step by 4 in the last byte (4 << 56 in the
** high half). */
VAES static size_t thirty_twos_vaes(const __m128i rk[15], uint8_t *out,
                                    size_t nb) {
  const long long s4 = 4LL << 56;
  const __m512i four = _mm512_set_epi64(s4, 0, s4, 0, s4, 0, s4, 0);
  __m512i k[15], x[8];
  __m512i c = _mm512_set_epi64(3LL << 56, 0, 2LL << 56, 0, 1LL << 56, 0, 0, 0);
  size_t j;
  UNROLL(15)
  for (int r = 0; r < 15; r++)
    k[r] = _mm512_broadcast_i32x4(rk[r]);
  for (j = 0; j + 32 <= nb; j += 32) {
    UNROLL(8)
    for (int q = 0; q < 8; q++) {
      x[q] = _mm512_xor_si512(c, k[0]);
      c = _mm512_add_epi64(c, four);
    }
    UNROLL(13)
    for (int r = 1; r < 14; r++) {
      UNROLL(8)
      for (int q = 0; q < 8; q++)
        x[q] = _mm512_aesenc_epi128(x[q], k[r]);
    }
    UNROLL(8)
    for (int q = 0; q < 8; q++)
      _mm512_storeu_si512((void *)(out + 16 * (j + 4 * (size_t)q)),
                          _mm512_aesenclast_epi128(x[q], k[14]));
  }
  sodium_memzero(k, sizeof(k));
  sodium_memzero(x, sizeof(x));
  return j;
}

/* What runs: the CPU's (frond__aes_cpu), or what a test forced (never
** above the CPU's). */
static int level(void) {
  int l = frond__aes_cpu();
  int f = atomic_load_explicit(&forced, memory_order_relaxed);
  return f > 0 && f - 1 < l ? f - 1 : l;
}

#ifndef __OPTIMIZE__
/* Unoptimised, the callees' temporaries (round keys among them) stay on
** the stack below the draw's frame: wipe what they used. Optimised
** builds keep them in registers, and wipe the arrays above. */
__attribute__((noinline)) static void wipe_below(void) {
  uint8_t pad[4096];
  sodium_memzero(pad, sizeof(pad));
}
#else
static void wipe_below(void) {}
#endif

_Static_assert((FROND__RAND_AES_MAX + 15) / 16 <= 256,
               "a counter block's last byte counts the blocks of a draw");

int frond__rand_aes_draw(uint8_t *buf, size_t n) {
  __m128i rk[15];
  size_t j = 0;
  int l = level();
  if (l == 0 || n > FROND__RAND_AES_MAX)
    return -1;
  expand(buf, rk);
  if (l == 2 && n >= 32 * 16)
    j = thirty_twos_vaes(rk, buf, n / 16);
  j = eights_ni(rk, buf, j, n / 16); /* whole blocks only */
  blocks_ni(rk, buf, j, (n + 15) / 16, n);
  sodium_memzero(rk, sizeof(rk));
  wipe_below();
  return 0;
}
#else
static int level(void) {
  return 0;
}

int frond__rand_aes_draw(uint8_t *buf, size_t n) {
  (void)buf, (void)n;
  return -1;
}
#endif

int frond__rand_force(int lvl) {
  if (lvl > frond__aes_cpu())
    return -1; /* the force stays as it was */
  atomic_store(&forced, lvl < 0 ? 0 : lvl + 1);
  return 0;
}

const char *frond__rand_impl(void) {
  static const char *const names[] = {"chacha20", "aes-ni", "vaes"};
  return names[level()];
}
