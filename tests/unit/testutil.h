/* SPDX-License-Identifier: Apache-2.0 */
/*
** testutil.h -- the one header every unit test includes: cmocka, how a
** program runs its tests, a fake clock, temp dirs, guarded buffers.
**
** Assertions are the main thread's: a worker thread counts what it saw
** and the test asserts on the counts after joining it (a cmocka failure
** longjmps, which only the main thread may do).
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
#include "core/core.h"

#include <sys/syscall.h>
#include <unistd.h>

/* How a test forks: fork(), _Fork() (glibc 2.34), or the system call;
** the last two run no pthread_atfork handler, so what must refuse in a
** child has to see the fork another way. */
enum { BY_FORK, BY_UNDERSCORE_FORK, BY_SYSCALL };

static inline pid_t fork_by(int how) {
  switch (how) {
  case BY_UNDERSCORE_FORK:
    return _Fork();
  case BY_SYSCALL:
    return (pid_t)syscall(SYS_fork);
  default:
    return fork();
  }
}

/* Run the group: every test, or only the one $FROND_TEST names. ctest
** runs each test of a program as its own entry, unit/<program>/<test>. */
#define frond_run_tests(tests, setup, teardown)                                \
  (cmocka_set_test_filter(getenv("FROND_TEST")),                               \
   cmocka_run_group_tests(tests, setup, teardown))

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

/* The layout preset called name: tests name presets, never index them. */
static inline const frond_layout *preset(const char *name) {
  for (size_t i = 0; i < frond_layout_preset_count(); i++)
    if (strcmp(frond_layout_preset(i)->name, name) == 0)
      return frond_layout_preset(i);
  fail_msg("no layout preset '%s'", name);
  return NULL;
}

/* A fresh directory under TMPDIR (or /tmp), removed by tmpdir_remove. */
static inline char *tmpdir_make(void) {
  const char *base = getenv("TMPDIR");
  char *path = malloc(512);
  snprintf(path, 512, "%s/frond-unit-XXXXXX", base ? base : "/tmp");
  assert_non_null(mkdtemp(path));
  return path;
}

/* The same in memory (/dev/shm) where there is one: for a check of how
** long a call takes, whose fsyncs a loaded disk would make take seconds.
** Removed by tmpdir_remove. */
static inline char *tmpdir_make_mem(void) {
  char *path = malloc(512);
  snprintf(path, 512, "/dev/shm/frond-unit-XXXXXX");
  if (mkdtemp(path) != NULL)
    return path;
  free(path);
  return tmpdir_make();
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

/* Copy len bytes so that they end exactly at a PROT_NONE page: a parser
** that reads one byte too far crashes. Release with guarded_free. */
#include <sys/mman.h>
#include <unistd.h>
typedef struct guarded {
  char *map;
  size_t maplen;
  char *p;
} guarded;

static inline guarded guarded_copy(const void *src, size_t len) {
  guarded g;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t pages = (len + page - 1) / page + 1;
  g.maplen = pages * page;
  g.map = mmap(NULL, g.maplen, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(g.map != MAP_FAILED);
  assert_int_equal(mprotect(g.map + (pages - 1) * page, page, PROT_NONE), 0);
  g.p = g.map + (pages - 1) * page - len;
  memcpy(g.p, src, len);
  return g;
}

static inline void guarded_free(guarded *g) {
  munmap(g->map, g->maplen);
}

#endif /* FROND_TESTUTIL_H */
