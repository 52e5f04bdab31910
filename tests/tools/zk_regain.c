/* SPDX-License-Identifier: Apache-2.0 */
/*
** zk_regain.c -- a ZooKeeper regain after another holder of the same
** identity re-created the node's child at the version we last wrote.
**
**   zk_regain HOSTS CLUSTER
**
** A holds a node ID with its coordinator's threads stopped (the test runs
** its fence rounds). Its claim is deleted, as when its session expires,
** and another process of the same identity reclaims the number: the child
** is deleted and created again (version 0), its fence set ahead of the
** clock, and written as many times as A wrote its own, so that the
** versions match. A's next round loses the node ID, the one after regains
** it; A then issues IDs. Prints one line:
**
**   issued N below M fence F
**
** N IDs issued after the regain, M of them at or below the other holder's
** fence F. M must be 0. Exit status 0, or 1 with the failure on stderr.
*/
#define THREADED
#include <zookeeper/zookeeper.h>

#include "coord/coord.h"
#include "coord/coord_zk.h"

#include <stdio.h>
#include <string.h>

#define SPEC "time=49,node=10,seq=4"
#define MAX_IDS 20000

static int die(const char *what, const char *why) {
  fprintf(stderr, "zk_regain: %s: %s\n", what, why);
  return 1;
}

int main(int argc, char **argv) {
  frond_coord_options o;
  frond_gen_options go;
  frond_layout l;
  frond_coord *a = NULL;
  frond_gen *g = NULL;
  frond_error err = {0, ""};
  struct Stat st;
  char uri[512], data[200];
  int64_t id, other;
  int n = 0, below = 0, rc;
  zk *z;

  if (argc != 3)
    return die("usage", "zk_regain HOSTS CLUSTER");
  snprintf(uri, sizeof(uri), "zk://%s/%s?window_ms=100", argv[1], argv[2]);
  frond_coord_options_init(&o);
  o.advertise = "127.0.0.1:4242";
  o.max_clock_offset_ms = 0;
  frond_gen_options_init(&go);
  go.max_ahead_ms = 1000;
  if (frond_layout_parse(SPEC, &l, &err) != 0 ||
      frond_coord_open(&a, uri, &o, &err) != 0 ||
      frond_coord_gen_create(a, &l, &go, &g, &err) != 0)
    return die("start", err.message);
  frond__coord_stop_threads(a);
  for (int i = 0; i < 3; i++)
    frond__coord_fence_round(a, 1, NULL);
  z = a->impl;

  /* The other holder: claim gone, child re-created at version 0 with a
  ** fence 800 ms ahead, written until its version is A's. */
  other = frond_clock_realtime(NULL) + 800;
  snprintf(data, sizeof(data),
           "{\"ip\":\"127.0.0.1\",\"port\":\"4242\",\"timestamp\":%lld}",
           (long long)other);
  if ((rc = zoo_delete(z->zh, z->claim, -1)) != ZOK ||
      (rc = zoo_delete(z->zh, z->mine, -1)) != ZOK ||
      (rc = zoo_create(z->zh, z->mine, data, (int)strlen(data),
                       &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0)) != ZOK)
    return die("re-create the child", zerror(rc));
  for (int32_t i = 0; i < z->child_version; i++)
    if ((rc = zoo_set2(z->zh, z->mine, data, (int)strlen(data), -1, &st)) !=
        ZOK)
      return die("set", zerror(rc));

  /* A's rounds: the write fails (claim gone), then the regain. */
  frond__coord_fence_round(a, 1, &err);
  if ((rc = frond__coord_fence_round(a, 1, &err)) != 0)
    return die("regain", err.message);
  while (n < MAX_IDS && frond_gen_next(g, &id, NULL) == 0) {
    frond_fields f;
    if (frond_decode(&l, id, &f, &err) != 0)
      return die("decode", err.message);
    n++;
    below += f.unix_ms <= other;
  }
  printf("issued %d below %d fence %lld\n", n, below, (long long)other);
  frond_coord_close(a, NULL);
  return n > 0 ? 0 : die("issue", "no ID after the regain");
}
