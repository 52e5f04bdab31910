/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_util.h -- shared by the coordinators' unit tests (test_coord.c,
** test_coord_fence.c): opening a coordinator that must open or must
** fail, layouts by spec, generators under a coordinator, decoding an ID's
** time, and waiting (bounded) for a coordinator's state.
*/
#ifndef FROND_COORD_UTIL_H
#define FROND_COORD_UTIL_H

#include "testutil.h"

#include "coord/coord.h"

/* 16 IDs per ms, so that a test can walk a generator to its fence. */
#define SMALL "time=49,node=10,seq=4"

static inline frond_coord *open_ok(const char *uri, frond_coord_options *o) {
  frond_coord *c = NULL;
  frond_error err = {0, ""};
  if (frond_coord_open(&c, uri, o, &err) != 0)
    fail_msg("open '%s': %s", uri != NULL ? uri : "(default)", err.message);
  return c;
}

static inline void open_bad(const char *uri, frond_coord_options *o, int code,
                            const char *expect) {
  frond_coord *c = NULL;
  frond_error err = {0, ""};
  int rc = frond_coord_open(&c, uri, o, &err);
  if (rc != code)
    fail_msg("'%s' gave %s, want %s (%s)", uri, frond_err_name(rc),
             frond_err_name(code), err.message);
  assert_null(c);
  if (!strstr(err.message, expect))
    fail_msg("'%s': message '%s' lacks '%s'", uri, err.message, expect);
}

static inline frond_layout layout_of(const char *spec) {
  frond_layout l;
  frond_error err = {0, ""};
  if (frond_layout_parse(spec, &l, &err) != 0)
    fail_msg("layout %s: %s", spec, err.message);
  return l;
}

/* gen_create; returns the code, the generator in *g. */
static inline int create(frond_coord *c, const char *spec,
                         frond_gen_options *go, frond_gen **g,
                         frond_error *err) {
  frond_layout l = layout_of(spec);
  *g = NULL;
  return frond_coord_gen_create(c, &l, go, g, err);
}

static inline int64_t id_ms(const char *spec, int64_t id) {
  frond_layout l = layout_of(spec);
  frond_fields f;
  assert_int_equal(frond_decode(&l, id, &f, NULL), 0);
  return f.unix_ms;
}

static inline int wait_until(int (*cond)(void *), void *arg, int ms) {
  for (int i = 0; i < ms; i++) {
    if (cond(arg))
      return 1;
    frond__sleep_ns(1000000);
  }
  return cond(arg);
}

static inline int state_is(void *arg) {
  void **a = arg;
  return frond_coord_state(a[0]) == *(int *)a[1];
}

static inline int wait_state(frond_coord *c, int code, int ms) {
  void *a[2] = {c, &code};
  return wait_until(state_is, a, ms);
}

#endif
