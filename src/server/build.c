/* SPDX-License-Identifier: Apache-2.0 */
/*
** build.c -- how this binary was built (compile definitions set in
** CMakeLists.txt, so that nothing is generated) and the versions of the
** libraries it runs with.
*/
#include "server/build.h"

#include "frond.h"

#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <uv.h>
#ifdef FROND_WITH_PG
#include <libpq-fe.h>
#endif
#ifdef FROND_WITH_ZK
#include <zookeeper/zookeeper_version.h>
#endif
#ifdef FROND_WITH_MYSQL
#include <mysql.h>
#endif
#ifdef FROND_WITH_ETCD
#include <curl/curl.h>
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
#ifndef FROND_LIBSYSTEMD_VERSION
#define FROND_LIBSYSTEMD_VERSION "unknown"
#endif

static void lib(frond__build *b, int i, const char *label, const char *name,
                const char *version) {
  b->libs[i].label = label;
  b->libs[i].name = name;
  snprintf(b->libs[i].version, sizeof b->libs[i].version, "%s", version);
}

void frond__build_get(frond__build *b) {
#ifdef FROND_WITH_PG
  int pq = PQlibVersion(); /* e.g. 150018 for 15.18 */
  char v[32];
#endif
  b->version = FROND_VERSION_STRING;
  b->type = FROND_BUILD_TYPE;
  b->compiler = FROND_BUILD_COMPILER;
  b->sanitizers = FROND_BUILD_SANITIZERS;
#ifdef NDEBUG
  b->asserts = "off";
#else
  b->asserts = "on";
#endif
  lib(b, 0, "libuv", "libuv", uv_version_string());
  lib(b, 1, "sqlite", "SQLite", sqlite3_libversion());
#ifdef FROND_WITH_PG
  snprintf(v, sizeof v, "%d.%d", pq / 10000, pq % 10000);
  lib(b, 2, "libpq", "libpq", v);
#else
  lib(b, 2, "libpq", "PostgreSQL", "");
#endif
  lib(b, 3, "libsodium", "libsodium", sodium_version_string());
#ifdef FROND_WITH_ZK
  lib(b, 4, "zookeeper", "ZooKeeper C client", ZOO_VERSION);
#else
  lib(b, 4, "zookeeper", "ZooKeeper", "");
#endif
  lib(b, 5, "libsystemd", "libsystemd", FROND_LIBSYSTEMD_VERSION);
#ifdef FROND_WITH_MYSQL
  lib(b, 6, "libmariadb", "libmariadb", mysql_get_client_info());
#else
  lib(b, 6, "libmariadb", "MySQL", "");
#endif
#ifdef FROND_WITH_ETCD
  lib(b, 7, "libcurl", "libcurl", curl_version_info(CURLVERSION_NOW)->version);
#else
  lib(b, 7, "libcurl", "etcd", "");
#endif
}
