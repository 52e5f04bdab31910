/* SPDX-License-Identifier: Apache-2.0 */
/*
** format_layout.c -- write-spreading layouts of the 64-bit ID formats
** (decimal, base62, base32): reverse=yes, the ID's 63 bits reversed, and
** shard=S, S high bits from a keyed hash of a caller's key above the ID.
**
** Time-ordered IDs put every insert on the last page of a B-tree and the
** last range of a distributed database. Both layouts keep an ID unique by
** construction:
**
**   reverse  r(x) = the 63 bits of x in reverse order. A bijection of
**            [0, 2^63) (its own inverse): two IDs never share a value, and
**            the value decodes to exactly one ID (Spanner's bit-reversed
**            sequences, Vitess' reverse_bits).
**   shard=S  y = h(key) mod 2^S << (63 - S) | x, for x < 2^(63 - S). The
**            low 63 - S bits are the ID itself, whole: two different IDs
**            differ there whatever their shards, and x = y mod 2^(63 - S).
**            An ID that needs more bits is refused (ID_TOO_LARGE), never
**            cut. h is SipHash-2-4 under a key derived from the format's
**            master key (key=V picks the version), so the shard of a key
**            is the same on every node and process that shares the master
**            key, and a key's shard cannot be computed without it. The
**            master key is a shared fact like an order number's: its
**            fingerprint is recorded and checked (format_fact.c) before a
**            shard format issues.
*/
#include "core/core.h"
#include "core/formats.h"

#include <inttypes.h>
#include <sodium.h>
#include <string.h>

uint64_t frond__reverse63(uint64_t x) {
  uint64_t r = 0;
  x &= (UINT64_C(1) << 63) - 1;
  /* Swap ever smaller blocks, then drop the bit that went to the bottom. */
  x = (x >> 1 & UINT64_C(0x5555555555555555)) |
      (x & UINT64_C(0x5555555555555555)) << 1;
  x = (x >> 2 & UINT64_C(0x3333333333333333)) |
      (x & UINT64_C(0x3333333333333333)) << 2;
  x = (x >> 4 & UINT64_C(0x0F0F0F0F0F0F0F0F)) |
      (x & UINT64_C(0x0F0F0F0F0F0F0F0F)) << 4;
  r = __builtin_bswap64(x);
  return r >> 1;
}

int frond__layout_init(frond_format *f, const frond_order_keys *keys,
                       frond_error *err) {
  char ctx[64];
  int slot = frond__key_slot(f->version), rc;
  if (f->shard_bits == 0)
    return 0;
  if ((rc = frond__format_key_needed(
           f, keys, "shard= needs a key (its hash is keyed)", err)) != 0)
    return rc;
  if ((f->keys = sodium_malloc(sizeof(*f->keys))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  memcpy(f->keys, keys, sizeof(*keys));
  f->keyed = 1;
  /* The fingerprint names the kind "shard" and S; the record of a scope's
  ** shard format names S, the version and it, and is one for every S and
  ** version: another is refused (format_fact.c). */
  f->radix = 2;
  f->width = f->shard_bits;
  f->rounds = 0;
  frond__format_fingerprint_init(f, keys->key[slot]);
  snprintf(ctx, sizeof(ctx), "frond shard v1 bits=%u", f->shard_bits);
  frond__perm_key(keys->key[slot], ctx, f->ekey);
  f->max_id = (int64_t)((UINT64_C(1) << (63 - f->shard_bits)) - 1);
  return 0;
}

uint64_t frond__layout_shard(const frond_format *f, const char *key,
                             size_t len) {
  uint8_t h[crypto_shorthash_BYTES];
  uint64_t v = 0;
  crypto_shorthash(h, (const unsigned char *)key, len, f->ekey);
  for (int i = 7; i >= 0; i--)
    v = v << 8 | h[i];
  return v & ((UINT64_C(1) << f->shard_bits) - 1);
}

int frond__layout_apply(const frond_format *f, uint64_t shard, int64_t id,
                        int64_t *out, frond_error *err) {
  if (f->reverse) {
    *out = (int64_t)frond__reverse63((uint64_t)id);
    return 0;
  }
  if (f->shard_bits == 0) {
    *out = id;
    return 0;
  }
  if (id > f->max_id)
    return frond__fail(err, FROND_EID_TOO_LARGE,
                       "ID %" PRId64 " needs more than the %u bits that "
                       "shard=%u leaves it (at most %" PRId64 "): the "
                       "layout's IDs no longer fit; use fewer shard bits",
                       id, 63 - f->shard_bits, f->shard_bits, f->max_id);
  *out = (int64_t)(shard << (63 - f->shard_bits) | (uint64_t)id);
  return 0;
}

int64_t frond__layout_invert(const frond_format *f, int64_t v,
                             uint64_t *shard) {
  *shard = 0;
  if (f->reverse)
    return (int64_t)frond__reverse63((uint64_t)v);
  if (f->shard_bits == 0)
    return v;
  *shard = (uint64_t)v >> (63 - f->shard_bits);
  return v & f->max_id;
}

int frond_format_shard_of(const frond_format *f, const char *key, size_t len,
                          uint64_t *shard, frond_error *err) {
  if (f == NULL || shard == NULL || (key == NULL && len > 0))
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if (f->shard_bits == 0)
    return frond__fail(err, FROND_EINVAL, "the format has no shard= bits");
  if (len == 0 || len > FROND_SHARD_KEY_MAX)
    return frond__fail(err, FROND_EINVAL,
                       "a shard key is 1 to %d bytes (got %zu)",
                       FROND_SHARD_KEY_MAX, len);
  *shard = frond__layout_shard(f, key, len);
  return 0;
}

unsigned frond_format_shard_bits(const frond_format *f) {
  return f->shard_bits;
}
