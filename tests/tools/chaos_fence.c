/* SPDX-License-Identifier: Apache-2.0 */
/*
** chaos_fence.c -- record the fence each node ID has at its coordinator.
**
** This file contains the fault-injection suite's fence poller. Every
** interval it reads, for every node ID, the time stored durably at the
** coordinator, where any later holder of that node ID reads it:
**
**   zk     the "timestamp" of /snowflake/<cluster>/forever/<ip:port>-<seq>
**   lease  high_water_ms of the node's row in frond_node
**
** and appends one record per node ID to OUT, as three native int64:
** the CLOCK_MONOTONIC time the poll began, the node ID and the stored time
** (unix ms). A record therefore says: at least this much was durable no
** later than that instant. The checker compares every snowflake ID with
** the first poll that began after the ID was received.
**
**   chaos_fence zk HOSTS CLUSTER OUT [interval_ms]
**   chaos_fence lease POSTGRESQL-URI OUT [interval_ms]
**
** The coordinator may go away and come back (the suite restarts it): a
** failed poll is skipped and the connection opened again. SIGTERM ends the
** program after one last poll.
*/
#define THREADED
#include <zookeeper/zookeeper.h>

#include "base/base.h"

#include <libpq-fe.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int stopping;
static FILE *out;
static long polls, failed;

static void on_signal(int sig) {
  (void)sig;
  atomic_store(&stopping, 1);
}

static void put(int64_t at, int64_t node, int64_t fence_ms) {
  int64_t r[3] = {at, node, fence_ms};
  if (fwrite(r, sizeof r, 1, out) != 1) {
    fprintf(stderr, "chaos_fence: cannot write\n");
    exit(2);
  }
}

/* ---- ZooKeeper ----------------------------------------------------------- */

static zhandle_t *zh;
static const char *zk_hosts;
static char forever[600];

static int zk_poll(void) {
  struct String_vector kids = {0, NULL};
  int64_t at = frond__mono_ns();
  int rc;
  if (zh && zoo_state(zh) == ZOO_EXPIRED_SESSION_STATE) {
    zookeeper_close(zh);
    zh = NULL;
  }
  if (!zh && !(zh = zookeeper_init(zk_hosts, NULL, 4000, NULL, NULL, 0)))
    return -1;
  if (zoo_state(zh) != ZOO_CONNECTED_STATE)
    return -1;
  rc = zoo_get_children(zh, forever, 0, &kids);
  if (rc == ZNONODE)
    return 0;
  if (rc != ZOK)
    return -1;
  for (int i = 0; i < kids.count; i++) {
    const char *dash = strrchr(kids.data[i], '-'), *t;
    char path[1200], buf[512];
    int len = sizeof buf - 1;
    if (!dash || strlen(dash + 1) != 10)
      continue;
    snprintf(path, sizeof path, "%s/%s", forever, kids.data[i]);
    if (zoo_get(zh, path, 0, buf, &len, NULL) != ZOK || len < 0)
      continue;
    buf[len] = 0;
    if ((t = strstr(buf, "\"timestamp\":")) != NULL)
      put(at, strtoll(dash + 1, NULL, 10), strtoll(t + 12, NULL, 10));
  }
  deallocate_String_vector(&kids);
  return 0;
}

/* ---- the lease table ----------------------------------------------------- */

static PGconn *pg;
static const char *pg_uri;

static int lease_poll(void) {
  PGresult *r;
  int64_t at = frond__mono_ns();
  if (pg && PQstatus(pg) != CONNECTION_OK) {
    PQfinish(pg);
    pg = NULL;
  }
  if (!pg) {
    const char *keys[] = {"dbname", "connect_timeout", "options", NULL};
    const char *vals[] = {pg_uri, "2", "-c statement_timeout=2000", NULL};
    pg = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(pg) != CONNECTION_OK)
      return -1;
  }
  r = PQexec(pg, "SELECT node_id, high_water_ms FROM frond_node");
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    /* No table yet is fine: nobody has taken a node ID. */
    int missing = strstr(PQerrorMessage(pg), "does not exist") != NULL;
    PQclear(r);
    return missing ? 0 : -1;
  }
  for (int i = 0; i < PQntuples(r); i++)
    put(at, strtoll(PQgetvalue(r, i, 0), NULL, 10),
        strtoll(PQgetvalue(r, i, 1), NULL, 10));
  PQclear(r);
  return 0;
}

int main(int argc, char **argv) {
  int (*poll_once)(void);
  const char *path;
  long interval_ms;
  struct sigaction sa;
  int zk = argc >= 5 && strcmp(argv[1], "zk") == 0;
  int lease = argc >= 4 && strcmp(argv[1], "lease") == 0;

  if (!zk && !lease) {
    fprintf(stderr, "usage: chaos_fence zk HOSTS CLUSTER OUT [interval_ms]\n"
                    "       chaos_fence lease URI OUT [interval_ms]\n");
    return 2;
  }
  if (zk) {
    zoo_set_debug_level(0);
    zk_hosts = argv[2];
    snprintf(forever, sizeof forever, "/snowflake/%s/forever", argv[3]);
    path = argv[4];
    interval_ms = argc > 5 ? atol(argv[5]) : 100;
    poll_once = zk_poll;
  } else {
    pg_uri = argv[2];
    path = argv[3];
    interval_ms = argc > 4 ? atol(argv[4]) : 100;
    poll_once = lease_poll;
  }
  if (!(out = fopen(path, "wb"))) {
    perror(path);
    return 2;
  }
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  for (;;) {
    int last = atomic_load(&stopping);
    polls++;
    if (poll_once() != 0)
      failed++;
    fflush(out);
    if (last)
      break;
    usleep((useconds_t)interval_ms * 1000);
  }
  if (zh)
    zookeeper_close(zh);
  if (pg)
    PQfinish(pg);
  fclose(out);
  printf("polls %ld failed %ld\n", polls, failed);
  return 0;
}
