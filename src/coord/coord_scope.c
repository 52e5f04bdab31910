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
**     reads the numbers under the scope its layout record names (its
**     scope record, if any, must say the same); a URI that names another
**     is told after the list and refused by a layout change, whose floor
**     would read other node IDs (frond__coord_scope_recorded, _conflict).
**
** frond check judges settings as a start would, reading both records and
** writing neither (frond__coord_scope_inspect); frond node list and
** /v1/layout show what is served (frond__coord_served).
**
** Calls coord_fact.c (the record) and coord_common.c (the layout record,
** its ';' range split off there); coord.c, coord_fence.c, coord_layout.c,
** the CLI and the server call it.
*/
#include "coord/coord.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What settings t serve under layout l: [*lo_out, *hi_out] and the name
** the record keeps (scope, 64 bytes); CONFIG naming what is wrong. */
static int scope_of(const frond__coord_tun *t, const frond_layout *l,
                    const char *uri, uint64_t *lo_out, uint64_t *hi_out,
                    char scope[64], frond_error *err) {
  uint64_t max = frond_layout_max_node(l), lo = 0, hi = max, span;
  if (t->datacenter >= 0) {
    if (l->dc_bits == 0)
      return frond__fail(err, FROND_ECONFIG,
                         "datacenter=%" PRId64 " needs a layout with dc bits "
                         "(dc=N,worker=N), and %s has none: give the region a "
                         "node range instead (nodes=a-b)",
                         t->datacenter, uri);
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
    snprintf(scope, 64, "datacenter=%" PRId64, t->datacenter);
  } else if (t->nodes_lo >= 0) {
    if ((uint64_t)t->nodes_hi > max)
      return frond__fail(err, FROND_ECONFIG,
                         "nodes=%" PRId64 "-%" PRId64 " reaches past the "
                         "layout's largest node ID %" PRIu64 " (%u node bits)",
                         t->nodes_lo, t->nodes_hi, max, l->node_bits);
    lo = (uint64_t)t->nodes_lo;
    hi = (uint64_t)t->nodes_hi;
    snprintf(scope, 64, "nodes=%" PRIu64 "-%" PRIu64, lo, hi);
  } else {
    if (t->nodes > 0 && (uint64_t)t->nodes - 1 < max)
      hi = (uint64_t)t->nodes - 1;
    /* A cap, not a region: recorded as the whole range. */
    snprintf(scope, 64, "all");
  }
  /* A pinned node ID beyond the layout is the driver's NODE_RANGE. */
  if (t->node >= 0 && (uint64_t)t->node <= max &&
      ((uint64_t)t->node < lo || (uint64_t)t->node > hi))
    return frond__fail(err, FROND_ECONFIG,
                       "node=%" PRId64 " is outside the node IDs %" PRIu64
                       "..%" PRIu64 " this coordinator serves (%s)",
                       t->node, lo, hi, scope);
  *lo_out = lo;
  *hi_out = hi;
  return 0;
}

int frond__coord_scope(frond_coord *c, const frond_layout *l,
                       frond_error *err) {
  int rc = scope_of(&c->t, l, c->uri, &c->node_lo, &c->node_hi, c->scope, err);
  if (rc == 0)
    c->scoped = 1;
  return rc;
}

/* How a record reads in messages. */
static const char *say(const char *scope) {
  return strcmp(scope, "all") == 0 ? "the whole node range (no datacenter= "
                                     "or nodes=a-b)"
                                   : scope;
}

/* DATACENTER_MISMATCH: this node's settings (mine) against the record
** (rec) kept at where. */
static int mismatch(const char *mine, const char *where, const char *rec,
                    frond_error *err) {
  char m[160];
  snprintf(m, sizeof(m), "%s", say(mine));
  return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                     "this node serves %s; %.200s records %s: two regions "
                     "mapped onto one range hand out equal node IDs. Start "
                     "it with the coordinator's settings, or point it at its "
                     "own region's coordinator (a region that moves starts "
                     "a new cluster: docs/coordinators.md#regions)",
                     m, where, say(rec));
}

/* DATACENTER_MISMATCH: settings (mine) on a cluster that issued numbers
** before regions, recorded rec ("all") at where. */
static int numbered_mismatch(const char *mine, const char *where,
                             const char *rec, frond_error *err) {
  char m[160];
  snprintf(m, sizeof(m), "%s", say(mine));
  return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                     "this node serves %s; %.200s records %s: the cluster "
                     "issued node IDs before regions (its numbers are node "
                     "IDs of the whole range), and under %s they would be "
                     "handed out again. A region needs its own new cluster "
                     "name or path (docs/coordinators.md#regions)",
                     m, where, say(rec), mine);
}

/* DATACENTER_MISMATCH: settings (mine) against the range in the layout
** record of c's cluster (c->rec_scope). */
static int layout_mismatch(frond_coord *c, const char *mine, frond_error *err) {
  char where[300], m[160];
  frond__coord_cache_uri(c->uri, where, sizeof(where));
  snprintf(m, sizeof(m), "%s", say(mine));
  return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                     "this node serves %s; the layout record of %.200s "
                     "records %s: two regions mapped onto one range hand "
                     "out equal node IDs. Start it with "
                     "the coordinator's settings, or point it at its own "
                     "region's coordinator (a region starts on a new "
                     "cluster: docs/coordinators.md#regions)",
                     m, where, say(c->rec_scope));
}

/* Has a ZooKeeper-like coordinator handed numbers out (children under its
** parent)? Each was a node ID of the whole range: 1 when any. Not asked
** for settings (mine) that serve the whole range anyway. */
static int numbered_before(frond_coord *c, const char *mine, int *used,
                           frond_error *err) {
  frond_coord_entry *e = NULL;
  size_t n = 0;
  int rc;
  *used = 0;
  if (!c->m->bNumbered || strcmp(mine, "all") == 0)
    return 0;
  pthread_mutex_lock(&c->lock);
  rc = c->m->xList(c, &e, &n, err);
  pthread_mutex_unlock(&c->lock);
  free(e);
  *used = rc == 0 && n > 0;
  return rc;
}

int frond__coord_scope_check(frond_coord *c, frond_error *err) {
  char rec[128], where[300];
  const char *offer = c->scope;
  int rc, used;
  if (!frond__coord_has_facts(c))
    return 0;
  /* No record, yet numbers handed out: nodes before ranges existed used
  ** them as node IDs of the whole range, so that is what is recorded. */
  if ((rc = numbered_before(c, c->scope, &used, err)) != 0)
    return rc;
  if (used)
    offer = "all";
  rec[0] = 0;
  rc = frond__coord_fact(c, FROND__COORD_SCOPE_FACT, offer, rec, sizeof(rec),
                         where, sizeof(where), err);
  if (rc != 0)
    return rc;
  c->scope_recorded = strcmp(rec, c->scope) == 0;
  if (c->scope_recorded)
    return 0;
  if (used && strcmp(rec, "all") == 0)
    return numbered_mismatch(c->scope, where, rec, err);
  return mismatch(c->scope, where, rec, err);
}

/* Read the record without writing it: 1 and rec when there is one, 0
** when none (or the driver keeps none), else an error code. */
static int read_record(frond_coord *c, char *rec, size_t len, char *where,
                       size_t wlen, frond_error *err) {
  int rc;
  if (!frond__coord_has_facts(c))
    return 0;
  rec[0] = 0;
  rc = frond__coord_fact(c, FROND__COORD_SCOPE_FACT, NULL, rec, len, where,
                         wlen, err);
  return rc != 0 ? rc : rec[0] != 0;
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
  char spec[FROND_COORD_SPEC_MAX], mine[FROND_COORD_SPEC_MAX];
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
          (rc = numbered_before(c, c->scope, &used, err)) != 0)
        return rc;
      if (used) /* the words of frond__coord_scope_check */
        return frond__coord_scope_check(c, err);
      return layout_mismatch(c, c->scope, err);
    }
  }
  return frond__coord_scope_check(c, err);
}

int frond__coord_scope_inspect(frond_coord *c, const frond_layout *l, char *out,
                               size_t len, frond_error *err) {
  char spec[FROND_COORD_SPEC_MAX], rec[128], where[300], mine[64];
  uint64_t lo = 0, hi = 0;
  int64_t floor = 0;
  int changing = 0, in_layout = 0, used = 0, have = 0;
  int rc = scope_of(&c->t, l, c->uri, &lo, &hi, mine, err);
  if (rc != 0)
    return rc;
  /* As frond__coord_scope_verify and frond__coord_scope_check judge a
  ** start, reading each record and writing none. */
  if (frond__coord_has_facts(c)) {
    in_layout = frond__coord_layout_record(c, spec, sizeof(spec), &floor,
                                           &changing, NULL) == 0 &&
                spec[0] && !changing;
    if ((rc = numbered_before(c, mine, &used, err)) != 0)
      return rc;
    if (in_layout && strcmp(c->rec_scope, mine) != 0 &&
        !(used && strcmp(c->rec_scope, "all") == 0))
      return layout_mismatch(c, mine, err);
    if ((have = read_record(c, rec, sizeof(rec), where, sizeof(where), err)) <
        0)
      return have;
    if (have == 0 && used) { /* what a start would record */
      snprintf(rec, sizeof(rec), "all");
      have = 1;
    }
    if (have == 1 && strcmp(rec, mine) != 0)
      return used && strcmp(rec, "all") == 0
                 ? numbered_mismatch(mine, where, rec, err)
                 : mismatch(mine, where, rec, err);
  }
  snprintf(out, len, "%s: node IDs %" PRIu64 "..%" PRIu64 "%s", mine, lo, hi,
           have == 1 || in_layout
               ? ", as the coordinator records"
               : "; nothing recorded yet: the first node records it");
  return 0;
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

/* Settings t with the recorded scope rec in the place of datacenter= and
** nodes=a-b: 0, or -1 when rec reads as none. */
static int adopt(frond__coord_tun *t, const char *rec) {
  int64_t dc, lo, hi;
  if (frond__coord_scope_parse(rec, &dc, &lo, &hi) != 0)
    return -1;
  t->datacenter = dc;
  t->nodes_lo = lo;
  t->nodes_hi = hi;
  return 0;
}

int frond__coord_scope_recorded(frond_coord *c, frond_error *err) {
  char spec[FROND_COORD_SPEC_MAX], rec[128], where[300], mine[64];
  char cluster[300];
  frond__coord_tun t = c->t;
  uint64_t lo, hi;
  frond_layout l;
  int64_t floor = 0;
  int have, rc;
  if (c->scoped)
    return 0;
  if (frond__coord_layout_record(c, spec, sizeof(spec), &floor, NULL, NULL) !=
          0 ||
      !spec[0] || frond_layout_parse(spec, &l, NULL) != 0)
    return 0;
  /* The layout record says which node IDs the numbers are, whatever the
  ** settings say (they are compared below). */
  frond__coord_cache_uri(c->uri, cluster, sizeof(cluster));
  if (adopt(&t, c->rec_scope) != 0)
    return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                       "the layout record of %.200s names '%s', which this "
                       "version does not read",
                       cluster, c->rec_scope);
  /* The record of what the cluster serves, where it keeps one, says the
  ** same: a start checks both, so no node serves a cluster where they
  ** differ, and its numbers cannot be told apart. */
  if ((have = read_record(c, rec, sizeof(rec), where, sizeof(where), err)) < 0)
    return have;
  if (have == 1 && strcmp(rec, c->rec_scope) != 0)
    return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                       "the layout record of %.200s records %s; %.200s "
                       "records %s: its numbers cannot be read as "
                       "node IDs of either. Point it at each region's own "
                       "coordinator (docs/coordinators.md#regions)",
                       cluster, c->rec_scope, where, rec);
  if ((rc = scope_of(&t, &l, c->uri, &c->node_lo, &c->node_hi, c->scope,
                     err)) != 0)
    return rc;
  c->scoped = 1;
  c->scope_recorded = 1;
  /* A URI that names no range reads the recorded one. One that names
  ** another is listed by the record and kept to be told
  ** (frond__coord_scope_conflict): a start with it is refused, and the
  ** floor of a layout change is not read under it. */
  if ((c->t.datacenter >= 0 || c->t.nodes_lo >= 0) &&
      scope_of(&c->t, &l, c->uri, &lo, &hi, mine, &c->scope_conflict) == 0 &&
      strcmp(mine, c->scope) != 0) {
    snprintf(where, sizeof(where), "%s", say(mine));
    (void)frond__fail(&c->scope_conflict, FROND_EDATACENTER_MISMATCH,
                      "the URI names %s; the layout record of %.200s "
                      "records %s: its numbers read under the "
                      "URI's range would name other node IDs. Give the URI "
                      "the cluster's datacenter= or nodes=, or none",
                      where, cluster, say(c->scope));
  }
  return 0;
}

int frond__coord_scope_conflict(const frond_coord *c, frond_error *err) {
  if (c == NULL || c->scope_conflict.code == 0)
    return 0;
  if (err)
    *err = c->scope_conflict;
  return c->scope_conflict.code;
}

const char *frond__coord_served(const frond_coord *c, uint64_t *lo,
                                uint64_t *hi, int *recorded) {
  if (c == NULL || !c->scoped)
    return NULL;
  *lo = c->node_lo;
  *hi = c->node_hi;
  if (recorded)
    *recorded = c->scope_recorded;
  return c->scope;
}
