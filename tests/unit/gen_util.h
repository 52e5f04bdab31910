/* SPDX-License-Identifier: Apache-2.0 */
/*
** gen_util.h -- shared by the snowflake generator's unit tests: a generator
** on a fake clock, decoding, and threads that hammer it.
*/
#ifndef FROND_GEN_UTIL_H
#define FROND_GEN_UTIL_H

#include "testutil.h"

#include <pthread.h>

/* 2026-01-01T00:00:00Z: where the fake clock starts. */
#define T0 INT64_C(1767225600000)

static inline const frond_layout *twitter(void) {
  return preset("twitter");
}

/* The default options with the fake clock c, max_ahead and max_wait (-1:
** the default). */
static inline frond_gen_options fake_options(fake_clock *c, int64_t max_ahead,
                                             int64_t max_wait) {
  frond_gen_options o;
  frond_gen_options_init(&o);
  o.clock = fake_clock_read;
  o.clock_ctx = c;
  o.max_ahead_ms = max_ahead;
  o.max_wait_ms = max_wait;
  return o;
}

static inline frond_gen *make_fake(fake_clock *c, int64_t max_ahead,
                                   int64_t max_wait, uint64_t node) {
  frond_gen_options o = fake_options(c, max_ahead, max_wait);
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  if (frond_gen_create(&g, twitter(), node, &o, &err) != 0)
    fail_msg("create: %s", err.message);
  return g;
}

static inline frond_fields fields(const frond_gen *g, int64_t id) {
  frond_fields f;
  assert_int_equal(frond_decode(frond_gen_layout(g), id, &f, NULL), 0);
  return f;
}

#endif /* FROND_GEN_UTIL_H */
