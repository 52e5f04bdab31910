/*
** version.c -- `frond --version`: the version, how this binary was built,
** and the versions of the libraries it runs with.
**
** The first line is "frond <version>" alone, for scripts. The build line
** comes from the build system (compile definitions set in
** CMakeLists.txt); the library versions are asked of the libraries at run
** time, so they name what the process really loaded, except ZooKeeper's C
** client, which only has a compile-time version.
*/
#include "cli/cli.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <uv.h>
#include <zookeeper/zookeeper_version.h>

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
  int pq = PQlibVersion(); /* e.g. 150018 for 15.18 */
  printf("frond %s\n", FROND_VERSION_STRING);
  printf("build: %s, %s, asserts %s, sanitizers: %s\n", FROND_BUILD_TYPE,
         FROND_BUILD_COMPILER,
#ifdef NDEBUG
         "off",
#else
         "on",
#endif
         FROND_BUILD_SANITIZERS);
  printf("libraries: libuv %s, SQLite %s, libpq %d.%d, ZooKeeper C client "
         "%s\n",
         uv_version_string(), sqlite3_libversion(), pq / 10000, pq % 10000,
         ZOO_VERSION);
  return FROND__EXIT_OK;
}
