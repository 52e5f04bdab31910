/* SPDX-License-Identifier: Apache-2.0 */
/*
** sqlite_fixture.h -- a test program's SQLite store: the file t.db in a
** fresh directory for the whole group (dir, path, uri), made by setup and
** removed, journal and all, by teardown; and quiet, a log sink that drops
** every line. Included once, by the program's .c file, after testutil.h;
** the program passes setup and teardown to frond_run_tests.
*/
#ifndef FROND_SQLITE_FIXTURE_H
#define FROND_SQLITE_FIXTURE_H

static char *dir;
static char path[600], uri[700];

static int setup(void **state) {
  (void)state;
  dir = tmpdir_make();
  snprintf(path, sizeof(path), "%s/t.db", dir);
  snprintf(uri, sizeof(uri), "sqlite://%s", path);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tmpdir_remove(dir);
  dir = NULL;
  return 0;
}

static inline void quiet(void *ctx, int level, const char *msg) {
  (void)ctx;
  (void)level;
  (void)msg;
}

#endif /* FROND_SQLITE_FIXTURE_H */
