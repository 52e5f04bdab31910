/* SPDX-License-Identifier: Apache-2.0 */
/*
** format_testutil.h -- fixed keys and small constructors shared by the
** order-number tests.
*/
#ifndef FROND_FORMAT_TESTUTIL_H
#define FROND_FORMAT_TESTUTIL_H

#include "testutil.h"

#include "core/formats.h"

/* Fixed keys: the tests are deterministic. */
#define KEY0 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY1 "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"
#define KEY2 "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"

static inline frond_order_keys *keys_of(const char *text) {
  frond_order_keys *k;
  frond_error err = {0, ""};
  if (frond_order_keys_parse(text, strlen(text), &k, &err) != 0)
    fail_msg("keys: %s", err.message);
  return k;
}

/* A generator of node under layout l that may run a day ahead of the
** clock (the order-number tests draw many IDs at once); NULL when it
** cannot be made, with err's message. */
static inline frond_gen *format_gen_of(const frond_layout *l, uint64_t node,
                                       frond_error *err) {
  frond_gen_options o;
  frond_gen *g;
  frond_gen_options_init(&o);
  o.max_ahead_ms = 86400000;
  return frond_gen_create(&g, l, node, &o, err) == 0 ? g : NULL;
}

/* The same under the default preset. */
static inline frond_gen *format_gen(uint64_t node) {
  frond_error err = {0, ""};
  frond_gen *g = format_gen_of(frond_layout_preset(0), node, &err);
  if (g == NULL)
    fail_msg("generator: %s", err.message);
  return g;
}

/* The default preset with a unit of a second: a thread's cached order
** numbers stay valid that long (the layout's unit), so that a test's
** steps between a fill and a call may take that long on a loaded
** machine. NULL when it cannot be made (a test's own thread says so). */
static inline frond_gen *format_gen_seconds(uint64_t node) {
  frond_layout l = *frond_layout_preset(0);
  l.unit_ms = 1000;
  snprintf(l.name, sizeof(l.name), "custom");
  return format_gen_of(&l, node, NULL);
}

/* The keyed permutation written out, for the tests to hold the code to:
** x split into A = x / radix^floor(w/2) and B; each round i turns (A, B)
** into (B, (A + F(i << 56 | B) reduced to [0, |A|) by multiply-shift)
** mod |A|); then the halves' symbols, most significant first. F is the
** scheme's round function under key. */
typedef uint64_t (*perm_round_fn)(const void *key, uint64_t word);

static inline void perm_reference_by(const frond__perm *p, perm_round_fn F,
                                     const void *key, uint64_t x,
                                     uint8_t *out) {
  uint64_t A = x / p->b, B = x % p->b, ma = p->a, mb = p->b, t;
  for (unsigned i = 0; i < p->rounds; i++) {
    uint64_t h = F(key, B | (uint64_t)i << 56);
    t = (A + (uint64_t)(((unsigned __int128)h * ma) >> 64)) % ma;
    A = B;
    B = t;
    t = ma, ma = mb, mb = t;
  }
  for (unsigned i = p->adig; i > 0; i--, A /= p->radix)
    out[i - 1] = (uint8_t)(A % p->radix);
  for (unsigned i = p->bdig; i > 0; i--, B /= p->radix)
    out[p->adig + i - 1] = (uint8_t)(B % p->radix);
}

static inline frond_format *format_of(const char *spec,
                                      const frond_order_keys *k) {
  frond_format *f;
  frond_error err = {0, ""};
  if (frond_format_create(&f, spec, k, NULL, NULL, &err) != 0)
    fail_msg("'%s': %s", spec, err.message);
  return f;
}

/* A format of spec under the key text (a key file's lines). */
static inline frond_format *keyed(const char *spec, const char *keytext) {
  frond_order_keys *k = keys_of(keytext);
  frond_format *f = format_of(spec, k);
  frond_order_keys_free(k);
  return f;
}

static const uint8_t key16[16] = {1, 2,  3,  4,  5,  6,  7,  8,
                                  9, 10, 11, 12, 13, 14, 15, 16};

/* xorshift64: a reproducible stream for sampled cases. */
static inline uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

#endif
