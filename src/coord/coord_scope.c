/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_scope.c -- the node IDs a coordinator serves: the whole range of
** the layout, one datacenter of it, or a range, and its record.
**
** A region runs its own ZooKeeper (an ensemble does not span regions) or
** its own lease database. Each hands out node IDs over what it is told to
** serve; two regions that serve the same node IDs hand out node 0 twice,
** and their IDs repeat. So:
**
**   datacenter=N   (a layout with dc bits) node IDs N << worker_bits | w,
**                  w in [0, 2^worker_bits): the worker bits only;
**   nodes=a-b      (any layout) node IDs a..b;
**   nodes=N        node IDs 0..N-1 (a cap, as the lease always had);
**   none           the layout's whole range.
**
** Why no node ID is held twice across regions. Inside one coordinator,
** its claims (ZooKeeper's sequence and claim nodes, the lease's rows)
** give each live node a distinct number, and the fence rule keeps
** successive holders of one number apart. Across coordinators nothing is
** shared, so the ranges must be disjoint: datacenters N != M give
** disjoint sets by construction (the dc field differs), and disjoint
** nodes= ranges are the operator's to choose, checked once by `frond
** check` and the docs' recipe. What can go wrong after that is a node
** started with settings that are not its coordinator's (another region's
** datacenter, none at all, a copied configuration): then the numbers it
** is handed would be mapped into another region's range. The shared fact
** closes that: the first node records what the coordinator serves
** (FROND__COORD_SCOPE_FACT, beside the layout record; never overwritten:
** the numbers it handed out mean those node IDs), and every
** start, every regain from the cache file, compares its own settings with
** the record before a node ID is used, refusing with DATACENTER_MISMATCH.
** A node ID from the cache file outside the configured range, or cached
** under another scope, is refused too: it was handed out under other
** settings.
**
** Three more ways a number could be read under two mappings:
**   - a ZooKeeper cluster that handed numbers out before any scope was
**     recorded used them as node IDs of the whole range: with no record
**     and numbers present, "all" is recorded (numbered_before);
**   - nodes of versions that know no scopes read only the layout record,
**     byte for byte: a scope other than "all" is written into it after
**     the layout ("<spec>;datacenter=3", frond__coord_scoped_spec), so
**     they find another layout and are refused; the layout record is
**     checked first, so a node refused for its layout records nothing;
**   - a coordinator that holds no node ID (frond node list, layout --set)
**     reads the numbers under the scope its layout record names, and a
**     URI that names another is refused (frond__coord_scope_recorded).
**
** Calls coord_fact.c (the record) and coord_common.c (the layout record);
** coord.c, coord_fence.c and coord_layout.c call it.
*/
#include "coord/coord.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__coord_scope(frond_coord *c, const frond_layout *l,
                       frond_error *err) {
  uint64_t max = frond_layout_max_node(l), lo = 0, hi = max, span;
  const frond__coord_tun *t = &c->t;
  if (t->datacenter >= 0) {
    if (l->dc_bits == 0)
      return frond__fail(err, FROND_ECONFIG,
                         "datacenter=%" PRId64 " needs a layout with dc bits "
                         "(dc=N,worker=N), and %s has none: give the region a "
                         "node range instead (nodes=a-b)",
                         t->datacenter, c->uri);
    if (t->nodes_lo >= 0)
      return frond__fail(err, FROND_ECONFIG,
                         "datacenter=%" PRId64 " and nodes=%" PRId64 "-%" PRId64
                         " both name the node IDs to serve: give "
                         "one",
                         t->datacenter, t->nodes_lo, t->nodes_hi);
    if ((uint64_t)t->datacenter >> l->dc_bits)
      return frond__fail(err, FROND_ECONFIG,
                         "datacenter=%" PRId64 " does not fit the layout's %u "
                         "dc bits: datacenters are 0..%" PRIu64,
                         t->datacenter, l->dc_bits,
                         (UINT64_C(1) << l->dc_bits) - 1);
    span = UINT64_C(1) << l->worker_bits;
    lo = (uint64_t)t->datacenter << l->worker_bits;
    hi = lo + span - 1;
    if (t->nodes > 0 && (uint64_t)t->nodes < span)
      hi = lo + (uint64_t)t->nodes - 1;
    snprintf(c->scope, sizeof(c->scope), "datacenter=%" PRId64, t->datacenter);
  } else if (t->nodes_lo >= 0) {
    if ((uint64_t)t->nodes_hi > max)
      return frond__fail(err, FROND_ECONFIG,
                         "nodes=%" PRId64 "-%" PRId64 " reaches past the "
                         "layout's largest node ID %" PRIu64 " (%u node bits)",
                         t->nodes_lo, t->nodes_hi, max, l->node_bits);
    lo = (uint64_t)t->nodes_lo;
    hi = (uint64_t)t->nodes_hi;
    snprintf(c->scope, sizeof(c->scope), "nodes=%" PRIu64 "-%" PRIu64, lo, hi);
  } else {
    if (t->nodes > 0 && (uint64_t)t->nodes - 1 < max)
      hi = (uint64_t)t->nodes - 1;
    /* A cap, not a region: recorded as the whole range. */
    snprintf(c->scope, sizeof(c->scope), "all");
  }
  /* A pinned node ID beyond the layout is the driver's NODE_RANGE. */
  if (t->node >= 0 && (uint64_t)t->node <= max &&
      ((uint64_t)t->node < lo || (uint64_t)t->node > hi))
    return frond__fail(err, FROND_ECONFIG,
                       "node=%" PRId64 " is outside the node IDs %" PRIu64
                       "..%" PRIu64 " this coordinator serves (%s)",
                       t->node, lo, hi, c->scope);
  c->node_lo = lo;
  c->node_hi = hi;
  c->scoped = 1;
  return 0;
}

/* How a record reads in messages. */
static const char *say(const char *scope) {
  return strcmp(scope, "all") == 0 ? "the whole node range (no datacenter= "
                                     "or nodes=a-b)"
                                   : scope;
}

/* Has a ZooKeeper-like coordinator handed numbers out (children under its
** parent)? Each was a node ID of the whole range: 1 when any. */
static int numbered_before(frond_coord *c, int *used, frond_error *err) {
  frond_coord_entry *e = NULL;
  size_t n = 0;
  int rc;
  *used = 0;
  if (!c->m->bNumbered || strcmp(c->scope, "all") == 0)
    return 0;
  pthread_mutex_lock(&c->lock);
  rc = c->m->xList(c, &e, &n, err);
  pthread_mutex_unlock(&c->lock);
  free(e);
  *used = rc == 0 && n > 0;
  return rc;
}

int frond__coord_scope_check(frond_coord *c, frond_error *err) {
  char rec[128], where[300], mine[160];
  const char *offer = c->scope;
  int rc, used;
  if (!frond__coord_has_facts(c))
    return 0;
  /* No record, yet numbers handed out: nodes before ranges existed used
  ** them as node IDs of the whole range, so that is what is recorded. */
  if ((rc = numbered_before(c, &used, err)) != 0)
    return rc;
  if (used)
    offer = "all";
  rec[0] = 0;
  rc = frond__coord_fact(c, FROND__COORD_SCOPE_FACT, offer, rec, sizeof(rec),
                         where, sizeof(where), err);
  if (rc != 0)
    return rc;
  if (strcmp(rec, c->scope) == 0)
    return 0;
  snprintf(mine, sizeof(mine), "%s", say(c->scope));
  if (used && strcmp(rec, "all") == 0)
    return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                       "this node serves %s; %.200s records %s: the cluster "
                       "issued node IDs before regions (its numbers are node "
                       "IDs of the whole range), and under %s they would be "
                       "handed out again. A region needs its own new cluster "
                       "name or path (docs/coordinators.md#regions)",
                       mine, where, say(rec), c->scope);
  return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                     "this node serves %s; %.200s records %s: two regions "
                     "mapped onto one range hand out equal node IDs. Start "
                     "it with the coordinator's settings, or point it at its "
                     "own region's coordinator (a region that moves starts "
                     "a new cluster: docs/coordinators.md#regions)",
                     mine, where, say(rec));
}

int frond__coord_scope_node(frond_coord *c, const struct frond_coord_cache *cc,
                            const char *path, frond_error *err) {
  if (cc->scope[0] && strcmp(cc->scope, c->scope) != 0)
    return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                       "the cache file %s holds node ID %" PRIu64
                       " handed out while the coordinator served %s; this "
                       "node serves %s, under which that number means "
                       "another node ID: start with those settings, or "
                       "remove the file once the coordinator answers",
                       path, cc->node, say(cc->scope), say(c->scope));
  if (cc->node >= c->node_lo && cc->node <= c->node_hi)
    return 0;
  return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                     "the cache file %s holds node ID %" PRIu64
                     ", outside the node IDs %" PRIu64 "..%" PRIu64
                     " this node serves (%s): it was handed out under other "
                     "settings; start with those, or remove the file once "
                     "the coordinator answers",
                     path, cc->node, c->node_lo, c->node_hi, say(c->scope));
}

void frond__coord_scoped_spec(char *spec, size_t len, const char *scope) {
  size_t n = strlen(spec);
  if (strcmp(scope, "all") != 0 && n < len)
    snprintf(spec + n, len - n, ";%s", scope);
}

int frond__coord_scope_verify(frond_coord *c, const frond_layout *l,
                              frond_error *err) {
  char spec[FROND_COORD_SPEC_MAX], mine[FROND_COORD_SPEC_MAX], where[300];
  int64_t floor = 0;
  int changing = 0, used = 0, rc;
  if (!frond__coord_has_facts(c))
    return 0;
  /* Nothing is recorded for a node the layout record refuses. */
  rc = frond__coord_layout_record(c, spec, sizeof(spec), &floor, &changing,
                                  NULL);
  if (rc == 0 && spec[0] && !changing) {
    frond_layout_format(l, mine, sizeof(mine));
    if (strcmp(spec, mine) != 0)
      return FROND_ELAYOUT_MISMATCH;
    if (strcmp(c->rec_scope, c->scope) != 0) {
      if (strcmp(c->rec_scope, "all") == 0 &&
          (rc = numbered_before(c, &used, err)) != 0)
        return rc;
      if (used) /* the words of frond__coord_scope_check */
        return frond__coord_scope_check(c, err);
      frond__coord_cache_uri(c->uri, where, sizeof(where));
      snprintf(mine, sizeof(mine), "%s", say(c->scope));
      return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                         "this node serves %s; the layout record of %.200s "
                         "says the cluster serves %s: two regions mapped onto "
                         "one range hand out equal node IDs. Start it with "
                         "the coordinator's settings, or point it at its own "
                         "region's coordinator (a region starts on a new "
                         "cluster: docs/coordinators.md#regions)",
                         mine, where, say(c->rec_scope));
    }
  }
  return frond__coord_scope_check(c, err);
}

int frond__coord_scope_parse(const char *rec, int64_t *dc, int64_t *lo,
                             int64_t *hi) {
  long long a, b;
  char end;
  *dc = *lo = *hi = -1;
  if (strcmp(rec, "all") == 0)
    return 0;
  if (strncmp(rec, "datacenter=", 11) == 0 && rec[11] >= '0' &&
      rec[11] <= '9' && sscanf(rec, "datacenter=%lld%c", &a, &end) == 1 &&
      a <= 65535) {
    *dc = a;
    return 0;
  }
  if (strncmp(rec, "nodes=", 6) == 0 && rec[6] >= '0' && rec[6] <= '9' &&
      sscanf(rec, "nodes=%lld-%lld%c", &a, &b, &end) == 2 && a >= 0 && b >= a &&
      b <= INT64_MAX / 4) {
    *lo = a;
    *hi = b;
    return 0;
  }
  return -1;
}

/* The record's scope into the tunables: 0, or -1 when it reads as none. */
static int adopt(frond_coord *c, const char *rec) {
  int64_t dc, lo, hi;
  if (frond__coord_scope_parse(rec, &dc, &lo, &hi) != 0)
    return -1;
  c->t.datacenter = dc;
  c->t.nodes_lo = lo;
  c->t.nodes_hi = hi;
  return 0;
}

int frond__coord_scope_recorded(frond_coord *c, frond_error *err) {
  char spec[FROND_COORD_SPEC_MAX], where[300], mine[160];
  frond__coord_tun saved;
  frond_layout l;
  int64_t floor = 0;
  int rc;
  if (c->scoped)
    return 0;
  if (frond__coord_layout_record(c, spec, sizeof(spec), &floor, NULL, NULL) !=
          0 ||
      !spec[0] || frond_layout_parse(spec, &l, NULL) != 0)
    return 0;
  /* A URI that names no range reads the one recorded; for this only: a
  ** start later still checks its URI's own (frond__coord_scope_verify). */
  saved = c->t;
  if (c->t.datacenter < 0 && c->t.nodes_lo < 0 &&
      strcmp(c->rec_scope, "all") != 0 && adopt(c, c->rec_scope) != 0)
    return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                       "the layout record of %s names '%s', which this "
                       "version does not read",
                       c->uri, c->rec_scope);
  rc = frond__coord_scope(c, &l, err);
  c->t = saved;
  if (rc != 0)
    return rc;
  if (strcmp(c->scope, c->rec_scope) == 0)
    return 0;
  c->scoped = 0;
  frond__coord_cache_uri(c->uri, where, sizeof(where));
  snprintf(mine, sizeof(mine), "%s", say(c->scope));
  return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                     "the URI names %s; the layout record of %.200s says the "
                     "cluster serves %s: its numbers read under the URI's "
                     "range would name other node IDs. Give the URI the "
                     "cluster's datacenter= or nodes=, or none",
                     mine, where, say(c->rec_scope));
}
