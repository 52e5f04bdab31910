/* SPDX-License-Identifier: Apache-2.0 */
/*
** build.h -- how this binary was built and the libraries it runs with,
** for `frond --version` and the server's frond_build_info metric.
*/
#ifndef FROND_SERVER_BUILD_H
#define FROND_SERVER_BUILD_H

#include <stddef.h>

#define FROND__BUILD_LIBS 8

typedef struct frond__build {
  const char *version;    /* "0.1.0" */
  const char *type;       /* CMake's build type: "Release", "Debug" */
  const char *compiler;   /* "GNU 12.2.0" */
  const char *sanitizers; /* "none", "address, undefined" */
  const char *asserts;    /* "on" or "off" */
  struct {
    const char *label; /* a metric's label: "sqlite" */
    const char *name;  /* as people write it: "SQLite" */
    char version[32];  /* "": a backend the build left out (FROND_WITH_PG,
                          FROND_WITH_ZK off, ...) */
  } libs[FROND__BUILD_LIBS];
} frond__build;

/* Fill b. Library versions are asked of the libraries where they can say
** (what the process really loaded), else the headers' (ZooKeeper's C
** client, libsystemd). */
void frond__build_get(frond__build *b);

#endif /* FROND_SERVER_BUILD_H */
