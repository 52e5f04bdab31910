/* SPDX-License-Identifier: Apache-2.0 */
/*
** siphash.h -- SipHash-2-4 of one 8-byte word, in the caller's registers.
**
** The round function of the order-number permutation (order.c) is
** SipHash-2-4 (Aumasson and Bernstein, 2012) of one little-endian 8-byte
** word under the format's 128-bit key, exactly libsodium's
** crypto_shorthash_siphash24 of those 8 bytes: 2 compression rounds for
** the word, 2 for the final block (which holds only the length, 8), then
** 4 finalization rounds. Specialised to that one length, and inlined with
** the key's initial state computed once per permutation rather than once
** per call, it is a straight chain of 8 SipRounds with no loads, stores
** or calls between them; the SIMD kernels (siphash_lanes.c) compute the
** same thing lane by lane from the same constants.
**
** tests/unit/test_format_order.c checks it against crypto_shorthash on
** random keys and words and against the published SipHash test vector.
*/
#ifndef FROND_CORE_SIPHASH_H
#define FROND_CORE_SIPHASH_H

#include <stdint.h>

/* SipHash's initial state constants ("somepseudorandomlygeneratedbytes"). */
#define FROND__SIP_C0 UINT64_C(0x736f6d6570736575)
#define FROND__SIP_C1 UINT64_C(0x646f72616e646f6d)
#define FROND__SIP_C2 UINT64_C(0x6c7967656e657261)
#define FROND__SIP_C3 UINT64_C(0x7465646279746573)
/* The final block of an 8-byte input: its length in the top byte. */
#define FROND__SIP_LAST ((uint64_t)8 << 56)

/* A key's initial state: v0..v3 before the first word is absorbed. */
typedef struct frond__sip_key {
  uint64_t v0, v1, v2, v3;
} frond__sip_key;

/* The key's two words, read little-endian as SipHash reads its key. */
static inline void frond__sip_key_words(const uint8_t key[16], uint64_t *k0,
                                        uint64_t *k1) {
  uint64_t a = 0, b = 0;
  for (int i = 7; i >= 0; i--) {
    a = a << 8 | key[i];
    b = b << 8 | key[8 + i];
  }
  *k0 = a;
  *k1 = b;
}

static inline void frond__sip_key_init(frond__sip_key *k,
                                       const uint8_t key[16]) {
  uint64_t k0, k1;
  frond__sip_key_words(key, &k0, &k1);
  k->v0 = k0 ^ FROND__SIP_C0;
  k->v1 = k1 ^ FROND__SIP_C1;
  k->v2 = k0 ^ FROND__SIP_C2;
  k->v3 = k1 ^ FROND__SIP_C3;
}

static inline uint64_t frond__sip_rotl(uint64_t x, int b) {
  return (x << b) | (x >> (64 - b));
}

#define FROND__SIPROUND(v0, v1, v2, v3)                                        \
  do {                                                                         \
    v0 += v1;                                                                  \
    v1 = frond__sip_rotl(v1, 13);                                              \
    v1 ^= v0;                                                                  \
    v0 = frond__sip_rotl(v0, 32);                                              \
    v2 += v3;                                                                  \
    v3 = frond__sip_rotl(v3, 16);                                              \
    v3 ^= v2;                                                                  \
    v0 += v3;                                                                  \
    v3 = frond__sip_rotl(v3, 21);                                              \
    v3 ^= v0;                                                                  \
    v2 += v1;                                                                  \
    v1 = frond__sip_rotl(v1, 17);                                              \
    v1 ^= v2;                                                                  \
    v2 = frond__sip_rotl(v2, 32);                                              \
  } while (0)

/* SipHash-2-4 under k of the 8 bytes of m, least significant first; the
** 64-bit result as crypto_shorthash's 8 output bytes read little-endian. */
static inline uint64_t frond__sip24_word(const frond__sip_key *k, uint64_t m) {
  uint64_t v0 = k->v0, v1 = k->v1, v2 = k->v2, v3 = k->v3 ^ m;
  FROND__SIPROUND(v0, v1, v2, v3);
  FROND__SIPROUND(v0, v1, v2, v3);
  v0 ^= m;
  v3 ^= FROND__SIP_LAST;
  FROND__SIPROUND(v0, v1, v2, v3);
  FROND__SIPROUND(v0, v1, v2, v3);
  v0 ^= FROND__SIP_LAST;
  v2 ^= 0xff;
  FROND__SIPROUND(v0, v1, v2, v3);
  FROND__SIPROUND(v0, v1, v2, v3);
  FROND__SIPROUND(v0, v1, v2, v3);
  FROND__SIPROUND(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

#endif
