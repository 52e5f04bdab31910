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
** A node ID from the cache file outside the configured range is refused
** too: it was handed out under other settings.
**
** Calls coord_fact.c (the record); coord.c and coord_fence.c call it.
*/
#include "coord/coord.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
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

int frond__coord_scope_check(frond_coord *c, frond_error *err) {
  char rec[128], where[300];
  int rc;
  if (!frond__coord_has_facts(c))
    return 0;
  rec[0] = 0;
  rc = frond__coord_fact(c, FROND__COORD_SCOPE_FACT, c->scope, rec, sizeof(rec),
                         where, sizeof(where), err);
  if (rc != 0)
    return rc;
  c->scope_recorded = strcmp(rec, c->scope) == 0;
  return c->scope_recorded ? 0 : mismatch(c->scope, where, rec, err);
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

/* Settings t with the record rec put in the place of datacenter= and
** nodes=a-b; -1 when rec does not read as a record. */
static int adopt(frond__coord_tun *t, const char *rec) {
  long long a, b;
  char tail;
  t->datacenter = t->nodes_lo = t->nodes_hi = -1;
  if (strcmp(rec, "all") == 0)
    return 0;
  if (sscanf(rec, "datacenter=%lld%c", &a, &tail) == 1 && a >= 0) {
    t->datacenter = a;
    return 0;
  }
  if (sscanf(rec, "nodes=%lld-%lld%c", &a, &b, &tail) == 2 && a >= 0 &&
      b >= a) {
    t->nodes_lo = a, t->nodes_hi = b, t->nodes = 0;
    return 0;
  }
  return -1;
}

int frond__coord_scope_verify(frond_coord *c, const frond_layout *l, char *out,
                              size_t len, frond_error *err) {
  char rec[128], where[300], mine[64];
  uint64_t lo, hi;
  int rc = scope_of(&c->t, l, c->uri, &lo, &hi, mine, err);
  if (rc != 0)
    return rc;
  if ((rc = read_record(c, rec, sizeof(rec), where, sizeof(where), err)) < 0)
    return rc;
  if (rc == 1 && strcmp(rec, mine) != 0)
    return mismatch(mine, where, rec, err);
  snprintf(out, len, "%s: node IDs %" PRIu64 "..%" PRIu64 "%s", mine, lo, hi,
           rc == 1 ? ", as the coordinator records"
                   : "; nothing recorded yet: the first node records it");
  return 0;
}

int frond__coord_scope_node(frond_coord *c, uint64_t node, const char *path,
                            frond_error *err) {
  if (node >= c->node_lo && node <= c->node_hi)
    return 0;
  return frond__fail(err, FROND_EDATACENTER_MISMATCH,
                     "the cache file %s holds node ID %" PRIu64
                     ", outside the node IDs %" PRIu64 "..%" PRIu64
                     " this node serves (%s): it was handed out under other "
                     "settings; start with those, or remove the file once "
                     "the coordinator answers",
                     path, node, c->node_lo, c->node_hi, say(c->scope));
}

int frond__coord_scope_recorded(frond_coord *c, frond_error *err) {
  char spec[FROND_COORD_SPEC_MAX], rec[128], where[300], mine[64];
  frond__coord_tun t = c->t;
  uint64_t lo, hi;
  frond_layout l;
  int64_t floor = 0;
  int have;
  if (c->scoped ||
      frond__coord_layout_record(c, spec, sizeof(spec), &floor, NULL, NULL) !=
          0 ||
      !spec[0] || frond_layout_parse(spec, &l, NULL) != 0)
    return 0;
  if ((have = read_record(c, rec, sizeof(rec), where, sizeof(where), err)) < 0)
    return have;
  /* The record says which node IDs the numbers are, whatever the
  ** settings say (they are compared below). */
  if (have == 1 && adopt(&t, rec) != 0)
    return frond__fail(err, FROND_ECOORD,
                       "%s holds '%.64s', not a record of "
                       "the node IDs served",
                       where, rec);
  if (scope_of(&t, &l, c->uri, &c->node_lo, &c->node_hi, c->scope, NULL) != 0)
    return 0;
  c->scoped = 1;
  c->scope_recorded = have == 1;
  /* Listed by the record; settings that name another range are kept to
  ** be told (frond__coord_scope_conflict), as a start would refuse. */
  if (have == 1 && (c->t.datacenter >= 0 || c->t.nodes_lo >= 0) &&
      scope_of(&c->t, &l, c->uri, &lo, &hi, mine, NULL) == 0 &&
      strcmp(mine, c->scope) != 0)
    (void)mismatch(mine, where, c->scope, &c->scope_conflict);
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
