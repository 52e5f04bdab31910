/*
** testutil.h -- shared by the unit tests: cmocka, a fake clock, temp dirs.
*/
#ifndef FROND_TESTUTIL_H
#define FROND_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frond.h"
#include "core/internal.h"

/* A clock the test moves by hand; thread-safe. */
typedef struct fake_clock {
  _Atomic int64_t now_ms;
} fake_clock;

static inline int64_t fake_clock_read(void *ctx) {
  return atomic_load(&((fake_clock *)ctx)->now_ms);
}

static inline void fake_clock_set(fake_clock *c, int64_t ms) {
  atomic_store(&c->now_ms, ms);
}

static inline void fake_clock_add(fake_clock *c, int64_t ms) {
  atomic_fetch_add(&c->now_ms, ms);
}

/* A fresh directory under TMPDIR (or /tmp), removed by tmpdir_remove. */
static inline char *tmpdir_make(void) {
  const char *base = getenv("TMPDIR");
  char *path = malloc(512);
  snprintf(path, 512, "%s/frond-unit-XXXXXX", base ? base : "/tmp");
  assert_non_null(mkdtemp(path));
  return path;
}

static inline void tmpdir_remove(char *path) {
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
  assert_int_equal(system(cmd), 0);
  free(path);
}

static inline int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

#endif /* FROND_TESTUTIL_H */
