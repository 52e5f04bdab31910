/* SPDX-License-Identifier: Apache-2.0 */
/*
** zk_tool.c -- look into ZooKeeper, or write to it as Leaf would, for the
** coordinator's integration tests.
**
**   zk_tool HOSTS ls PATH          one line per child: "<name> <data>"
**   zk_tool HOSTS stat PATH        "ephemeral", "persistent" or "none"
**   zk_tool HOSTS leaf PATH DATA   create PATH (parents too) as Leaf does:
**                                  PERSISTENT_SEQUENTIAL; prints the path
**   zk_tool HOSTS get PATH         the node's data
**   zk_tool HOSTS set PATH DATA    replace the node's data (any version)
**
** Exit status 0, or 1 with the ZooKeeper error on stderr.
*/
#define THREADED
#include <zookeeper/zookeeper.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static zhandle_t *connect_to(const char *hosts) {
  zhandle_t *zh;
  zoo_set_debug_level(0);
  zh = zookeeper_init(hosts, NULL, 10000, NULL, NULL, 0);
  for (int i = 0; zh && i < 1000; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    if (zoo_state(zh) == ZOO_CONNECTED_STATE)
      return zh;
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "zk_tool: cannot reach %s\n", hosts);
  exit(1);
}

static int fail(const char *what, int rc) {
  fprintf(stderr, "zk_tool: %s: %s\n", what, zerror(rc));
  return 1;
}

int main(int argc, char **argv) {
  zhandle_t *zh;
  int rc;
  if (argc < 4) {
    fprintf(stderr, "usage: zk_tool HOSTS ls|stat|get PATH | leaf|set PATH "
                    "DATA\n");
    return 2;
  }
  zh = connect_to(argv[1]);
  if (strcmp(argv[2], "ls") == 0) {
    struct String_vector kids = {0, NULL};
    if ((rc = zoo_get_children(zh, argv[3], 0, &kids)) != ZOK)
      return fail(argv[3], rc);
    for (int i = 0; i < kids.count; i++) {
      char path[1024], buf[1024];
      int len = sizeof(buf) - 1;
      snprintf(path, sizeof(path), "%s/%s", argv[3], kids.data[i]);
      if (zoo_get(zh, path, 0, buf, &len, NULL) != ZOK || len < 0)
        len = 0;
      buf[len] = 0;
      printf("%s %s\n", kids.data[i], buf);
    }
    deallocate_String_vector(&kids);
  } else if (strcmp(argv[2], "stat") == 0) {
    struct Stat st;
    rc = zoo_exists(zh, argv[3], 0, &st);
    if (rc == ZNONODE)
      printf("none\n");
    else if (rc == ZOK)
      printf("%s\n", st.ephemeralOwner ? "ephemeral" : "persistent");
    else
      return fail(argv[3], rc);
  } else if (strcmp(argv[2], "leaf") == 0 && argc == 5) {
    char p[1024], created[1024];
    snprintf(p, sizeof(p), "%s", argv[3]);
    for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
      *s = 0;
      zoo_create(zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL,
                 0);
      *s = '/';
    }
    rc = zoo_create(zh, argv[3], argv[4], (int)strlen(argv[4]),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL, created,
                    sizeof(created));
    if (rc != ZOK)
      return fail(argv[3], rc);
    printf("%s\n", created);
  } else if (strcmp(argv[2], "get") == 0) {
    char buf[1024];
    int len = sizeof(buf) - 1;
    if ((rc = zoo_get(zh, argv[3], 0, buf, &len, NULL)) != ZOK)
      return fail(argv[3], rc);
    buf[len > 0 ? len : 0] = 0;
    printf("%s", buf);
  } else if (strcmp(argv[2], "set") == 0 && argc == 5) {
    if ((rc = zoo_set(zh, argv[3], argv[4], (int)strlen(argv[4]), -1)) != ZOK)
      return fail(argv[3], rc);
  } else {
    fprintf(stderr, "zk_tool: unknown command %s\n", argv[2]);
    return 2;
  }
  zookeeper_close(zh);
  return 0;
}
