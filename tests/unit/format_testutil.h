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

/* A generator of node under the default preset that may run a day
** ahead of the clock: the order-number tests draw many IDs at once. */
static inline frond_gen *format_gen(uint64_t node) {
  frond_gen_options o;
  frond_gen *g;
  frond_error err = {0, ""};
  frond_gen_options_init(&o);
  o.max_ahead_ms = 86400000;
  if (frond_gen_create(&g, frond_layout_preset(0), node, &o, &err) != 0)
    fail_msg("generator: %s", err.message);
  return g;
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
