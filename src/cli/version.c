/*
** version.c -- `frond --version`: the version, how this binary was built,
** and the versions of the libraries it runs with.
**
** The first line is "frond <version>" alone, for scripts. The build line
** comes from the build system (compile definitions set in
** CMakeLists.txt); the library versions are asked of the libraries at run
** time, so they name what the process really loaded, except ZooKeeper's C
** client, which only has a compile-time version. A backend the build left
** out (FROND_WITH_PG=OFF, FROND_WITH_ZK=OFF) is named as such.
*/
#include "cli/cli.h"

#include <sqlite3.h>
#include <stdio.h>
#include <uv.h>
#ifdef FROND_WITH_PG
#include <libpq-fe.h>
#endif
#ifdef FROND_WITH_ZK
#include <zookeeper/zookeeper_version.h>
#endif

#ifndef FROND_BUILD_TYPE
#define FROND_BUILD_TYPE "unknown"
#endif
#ifndef FROND_BUILD_COMPILER
#define FROND_BUILD_COMPILER "unknown compiler"
#endif
#ifndef FROND_BUILD_SANITIZERS
#define FROND_BUILD_SANITIZERS "none"
#endif

int frond__cli_version(void) {
  char pq[32];
#ifdef FROND_WITH_PG
  int v = PQlibVersion(); /* e.g. 150018 for 15.18 */
  snprintf(pq, sizeof(pq), "libpq %d.%d", v / 10000, v % 10000);
#else
  snprintf(pq, sizeof(pq), "no PostgreSQL");
#endif
  printf("frond %s\n", FROND_VERSION_STRING);
  printf("build: %s, %s, asserts %s, sanitizers: %s\n", FROND_BUILD_TYPE,
         FROND_BUILD_COMPILER,
#ifdef NDEBUG
         "off",
#else
         "on",
#endif
         FROND_BUILD_SANITIZERS);
  printf("libraries: libuv %s, SQLite %s, %s, %s\n", uv_version_string(),
         sqlite3_libversion(), pq,
#ifdef FROND_WITH_ZK
         "ZooKeeper C client " ZOO_VERSION
#else
         "no ZooKeeper"
#endif
  );
  return FROND__EXIT_OK;
}
