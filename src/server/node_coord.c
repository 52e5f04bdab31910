/* SPDX-License-Identifier: Apache-2.0 */
/*
** node_coord.c -- a node's coordinator checked against the one its store
** records (coord_record.c says how and why), for `frond serve`, `frond
** next` and `frond node coordinator`.
**
**   store none               nothing shared to check against: not checked
**   a driver without facts   static:N?unregistered=1: no identity; the
**                            operator's guarantee (a static N on a store
**                            is leased in the store: the store's lease is
**                            its coordinator, and it is checked as such)
**   a store that keeps no    (frond://) not checked, said in the log
**   facts
*/
#include "server/node.h"
#include "coord/coord.h"

#include "base/base.h"
#include "core/core.h"
#include "store/store.h"
#include "store/store_multi.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int put(void *ctx, const char *name, const char *value, char *rec,
               size_t len, frond_error *err) {
  return frond__store_fact(ctx, name, value, rec, len, err);
}

static int get(void *ctx, const char *name, char *rec, size_t len,
               frond_error *err) {
  frond_store *st = ctx;
  if (st->methods == &frond__store_multi)
    return frond__store_multi_fact_read(st, name, rec, len, err);
  return frond__store_sql_fact_read(st, name, rec, len, err);
}

int frond__node_book_open(const char *store, frond_store **st,
                          frond__coord_book *b, char *where, size_t wlen,
                          frond_error *err) {
  char shown[FROND_STORE_URI_MAX];
  int rc;
  *st = NULL;
  if ((rc = frond_store_open(st, store, err)) != 0)
    return rc;
  if ((*st)->methods != &frond__store_sql &&
      (*st)->methods != &frond__store_multi) {
    frond_store_close(*st);
    *st = NULL;
    return 1;
  }
  frond__store_uri_shown(store, shown, sizeof shown);
  snprintf(where, wlen, "the store %.200s (frond_meta)", shown);
  b->put = put;
  b->get = get;
  b->ctx = *st;
  b->where = where;
  return 0;
}

int frond__node_coord_rec(frond_coord *c, frond__coord_rec *me,
                          frond_error *err) {
  uint64_t lo = 0, hi = 0;
  const char *scope = frond__coord_served(c, &lo, &hi, NULL);
  /* lease+<store>?node=N (what static:N and --node N on a store become),
  ** as the URI's tunables read it: that one ID is all it hands out. */
  int64_t pin = c != NULL ? c->t.node : -1;
  int rc;
  memset(me, 0, sizeof *me);
  if (scope == NULL)
    return frond__fail(err, FROND_EINVAL,
                       "the coordinator's node IDs are not known yet");
  if ((rc = frond__coord_identity(c, me->id, sizeof me->id, err)) != 0)
    return rc;
  me->lo = lo;
  me->hi = hi;
  snprintf(me->scope, sizeof me->scope, "%s", scope);
  /* A pinned node ID is recorded and checked as itself: a fleet on
  ** another coordinator for 0..99 leaves node 700 free. */
  if (pin >= 0 && (uint64_t)pin >= lo && (uint64_t)pin <= hi) {
    me->lo = me->hi = (uint64_t)pin;
    snprintf(me->scope, sizeof me->scope, "node=%" PRId64, pin);
  }
  frond__coord_cache_uri(c->uri, me->uri, sizeof me->uri);
  return 0;
}

/* What may pass by itself, or by a repair, while the server runs: the
** store or the coordinator not reached, a multi: member behind the
** others (frond tag repair-member). Until then no snowflake ID. */
int frond__node_coord_later(int code) {
  return code == FROND_ESTORE || code == FROND_ECOORD ||
         code == FROND_ESTORE_TIMEOUT || code == FROND_ESTORE_MEMBER_STALE;
}

int frond__node_coord_check(const char *store, frond_coord *c, frond_gen *g,
                            frond_error *err) {
  frond__coord_book b;
  frond__coord_rec me;
  frond_store *st;
  char where[300];
  int64_t floor = 0;
  int rc, recorded = 0;
  if (strcmp(store, "none") == 0 || !frond__coord_has_facts(c))
    return 0;
  if ((rc = frond__node_coord_rec(c, &me, err)) != 0)
    return rc;
  if ((rc = frond__node_book_open(store, &st, &b, where, sizeof where, err)) !=
      0) {
    if (rc < 0)
      return rc;
    frond_log(FROND_LOG_WARN,
              "the store keeps no facts: the fleet's coordinator is not "
              "checked against it");
    return 0;
  }
  rc = frond__coord_rec_check(&b, &me, &floor, &recorded, err);
  frond_store_close(st);
  if (rc != 0)
    return rc;
  if (recorded)
    frond_log(FROND_LOG_INFO,
              "coordinator %s (identity %s) recorded in %s for node IDs "
              "%" PRIu64 "..%" PRIu64,
              me.uri, me.id, where, me.lo, me.hi);
  /* After a change of coordinator: above every fence of the old one. */
  if (floor > 0 && g != NULL)
    frond__gen_raise_floor(g, floor);
  return 0;
}

void frond__node_coord_retired(const char *store, frond_coord *c,
                               frond_error *err) {
  frond__coord_book b;
  frond__coord_rec me, *cur = NULL;
  frond_store *st = NULL;
  frond_error e = {0, ""};
  char where[300];
  size_t n = 0, i;
  if (err == NULL || strcmp(store, "none") == 0 || !frond__coord_has_facts(c) ||
      frond__node_coord_rec(c, &me, &e) != 0 ||
      frond__node_book_open(store, &st, &b, where, sizeof where, &e) != 0)
    return;
  if (frond__coord_rec_state(&b, &cur, &n, NULL, &e) == 0)
    for (i = 0; i < n; i++)
      if (cur[i].lo <= me.hi && me.lo <= cur[i].hi &&
          strcmp(cur[i].id, me.id) != 0) {
        char was[sizeof err->message];
        snprintf(was, sizeof was, "%s", err->message);
        frond__fail(err, FROND_ECOORDINATOR_MISMATCH,
                    "this node's coordinator %.110s (identity %.8s) was "
                    "retired: its store records %.110s (identity %.8s) for "
                    "node IDs %" PRIu64 "..%" PRIu64 " (frond node "
                    "coordinator --set). Name the recorded one (%.200s)",
                    me.uri, me.id, cur[i].uri, cur[i].id, cur[i].lo, cur[i].hi,
                    was);
        break;
      }
  free(cur);
  frond_store_close(st);
}
