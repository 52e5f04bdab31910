/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_zk.h -- the ZooKeeper coordinator's state and its session,
** shared by coord_zk.c (Leaf's layout: claims, acquire, fence, the
** fleet) and coord_zk_session.c (connecting, the session's watcher,
** expiry, and the small calls every step makes).
*/
#ifndef FROND_COORD_ZK_H
#define FROND_COORD_ZK_H

#include "base/base.h"
#include "coord/coord.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#define THREADED /* the synchronous API of libzookeeper_mt */
#include <zookeeper/zookeeper.h>

#define PATH_MAX_ZK 512
#define DATA_MAX 512
/* Margin above a dead session's timeout when waiting for its claim. */
#define CLAIM_WAIT_MARGIN_MS 2000

typedef struct {
  frond_coord *c;
  zhandle_t *zh;
  char hosts[FROND_COORD_URI_MAX];
  char root[PATH_MAX_ZK];    /* /snowflake/<name> */
  char forever[PATH_MAX_ZK]; /* root/forever */
  char claims[PATH_MAX_ZK];  /* root/claims */
  char layout[PATH_MAX_ZK];  /* root/layout */
  char mine[PATH_MAX_ZK];    /* our child of forever */
  char claim[PATH_MAX_ZK];   /* our claim */
  uint64_t node;
  int have_node;
  atomic_int claimed;    /* the ephemeral claim is ours */
  int32_t child_version; /* of our child, after our last write or read */
  int32_t layout_version;
  int64_t peer_raw; /* median of the peers' clock - mtime; INT64_MIN: none */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* connection state and claim watches */
  int connected;     /* under mu */
  int claim_event;   /* under mu: the watched claim changed */
  atomic_int expired;
} zk;

/* snprintf into a PATH_MAX_ZK buffer; names are bounded well below it
** (cluster name <= 128, owner < FROND_COORD_OWNER_MAX). */
void frond__zk_path(char *buf, const char *fmt, ...) FROND__PRINTF(2, 3);
/* FROND_ECOORD, naming the call, the path and ZooKeeper's error. */
int frond__zk_fail(frond_error *err, int rc, const char *what,
                   const char *path);
/* The watch set on a claim: wakes waiters on z->cv. */
void frond__zk_claim_watcher(zhandle_t *zh, int type, int state,
                             const char *path, void *ctx);
/* Connected, in a session that has not expired. */
int frond__zk_is_connected(zk *z);
/* Connect (a new session) and wait up to connect_ms. */
int frond__zk_connect(zk *z, frond_error *err);
/* (Re)connect when the session expired or never started. */
int frond__zk_ensure_session(zk *z, frond_error *err);
/* Create path and its parents (persistent, empty) where missing. */
int frond__zk_ensure_path(zk *z, const char *path, frond_error *err);
/* Get a node's data as a string (and its stat); ZooKeeper's code. */
int frond__zk_get(zk *z, const char *path, char *buf, struct Stat *st);

/* A claim's data: "<owner> pid <pid> clock <now> session <ms>". */
int frond__zk_claim_data(zk *z, int64_t now, char *buf, size_t len);

/* The xList method: every number's node ID, fence and holder. */
int frond__zk_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                   frond_error *err);

/* The methods of coord_zk_fleet.c: the clock check against the live
** peers, the layout record read and changed. */
int frond__zk_clock_offset(frond_coord *c, int64_t *offset_ms, char *ref,
                           size_t len, frond_error *err);
int frond__zk_layout_get(frond_coord *c, char *spec, size_t len,
                         int64_t *floor_id, frond_error *err);
int frond__zk_layout_set(frond_coord *c, const char *spec, int64_t *floor_id,
                         frond_error *err);

/* The xFact method: a persistent node root/facts/<name> holding the
** value, created when absent (of two creates one wins), then read back. */
int frond__zk_fact(frond_coord *c, const char *name, const char *value,
                   char *recorded, size_t len, char *where, size_t wlen,
                   frond_error *err);

#endif
