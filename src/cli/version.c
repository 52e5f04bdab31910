/* SPDX-License-Identifier: Apache-2.0 */
/*
** version.c -- `frond --version`: the version, how this binary was built,
** and the versions of the libraries it runs with.
**
** The first line is "frond <version>" alone, for scripts, and the last
** the licence; the lines between come from frond__build_get
** (server/build.c), which the server's frond_build_info metric reads too.
** A backend the build left out (FROND_WITH_PG=OFF, FROND_WITH_ZK=OFF,
** FROND_WITH_MYSQL=OFF, FROND_WITH_ETCD=OFF) is named as such.
*/
#include "cli/cli.h"
#include "server/build.h"

#include <stdio.h>

int frond__cli_version(void) {
  frond__build b;
  int i;
  frond__build_get(&b);
  printf("frond %s\n", b.version);
  printf("build: %s, %s, asserts %s, sanitizers: %s\n", b.type, b.compiler,
         b.asserts, b.sanitizers);
  printf("libraries:");
  for (i = 0; i < FROND__BUILD_LIBS; i++) {
    if (b.libs[i].version[0] == '\0')
      printf("%s no %s", i ? "," : "", b.libs[i].name);
    else
      printf("%s %s %s", i ? "," : "", b.libs[i].name, b.libs[i].version);
  }
  printf("\n");
  printf("license: Apache-2.0 (see LICENSE, or "
         "https://www.apache.org/licenses/LICENSE-2.0)\n");
  return FROND__EXIT_OK;
}
