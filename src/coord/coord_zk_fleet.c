/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_zk_fleet.c -- what the ZooKeeper coordinator reads across the
** fleet rather than for its own claim: every number's holder and fence
** (frond node list, a layout change's floor), the clock check against
** the live peers' claims, and the layout record read and changed (the
** record's format is coord_zk_data.c's; coord_zk.c describes every node
** and calls this file, which calls coord_zk_session.c, never back).
*/
#include "coord/coord_zk.h"
#include "base/base.h"
#include "core/core.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef frond__zk_layout_rec layout_rec;

static int cmp_entry(const void *a, const void *b) {
  const frond_coord_entry *x = a, *y = b;
  return x->node < y->node ? -1 : x->node > y->node;
}

int frond__zk_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                   frond_error *err) {
  zk *z = c->impl;
  struct String_vector kids = {0, NULL};
  frond_coord_entry *e;
  size_t k = 0;
  int rc;

  if (!frond__zk_is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  rc = zoo_get_children(z->zh, z->forever, 0, &kids);
  if (rc == ZNONODE) {
    *out = calloc(1, sizeof(**out));
    *n = 0;
    return *out ? 0 : frond__fail(err, FROND_ENOMEM, NULL);
  }
  if (rc != ZOK)
    return frond__zk_fail(err, rc, "list", z->forever);
  if (!(e = calloc(kids.count ? (size_t)kids.count : 1, sizeof(*e)))) {
    deallocate_String_vector(&kids);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (int32_t i = 0; i < kids.count; i++) {
    char path[PATH_MAX_ZK], claim[PATH_MAX_ZK], buf[DATA_MAX];
    struct Stat st;
    size_t olen;
    uint64_t seq;
    if (frond__zk_parse_child(kids.data[i], &olen, &seq) != 0)
      continue;
    e[k].node = c->node_lo + seq;
    snprintf(e[k].owner, sizeof(e[k].owner), "%.*s", (int)olen, kids.data[i]);
    frond__zk_path(path, "%s/%s", z->forever, kids.data[i]);
    if (frond__zk_get(z, path, buf, &st) == ZOK)
      e[k].fence_ms = frond__zk_timestamp(buf);
    frond__zk_path(claim, "%s/%010" PRIu64, z->claims, seq);
    e[k].live = zoo_exists(z->zh, claim, 0, NULL) == ZOK;
    k++;
  }
  deallocate_String_vector(&kids);
  qsort(e, k, sizeof(*e), cmp_entry);
  *out = e;
  *n = k;
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/*
** Our clock against the other live nodes'. Each claim holds its node's wall
** clock when it last wrote its fence; the claim's mtime is ZooKeeper's clock
** when that write committed. "clock - mtime" is a node's offset from
** ZooKeeper (minus its one-way delay): comparing ours with the peers'
** median cancels ZooKeeper's own offset and most of the delay. Alone, we
** compare with ZooKeeper's clock, corrected by half the round trip.
*/
int frond__zk_clock_offset(frond_coord *c, int64_t *offset_ms, char *ref,
                           size_t len, frond_error *err) {
  zk *z = c->impl;
  struct String_vector kids = {0, NULL};
  char data[DATA_MAX];
  struct Stat st;
  int64_t t0, t1, *peers;
  size_t n = 0;
  int rc;

  t0 = frond__coord_now(c);
  frond__zk_claim_data(z, t0, data, sizeof(data));
  rc = zoo_set2(z->zh, z->claim, data, (int)strlen(data), -1, &st);
  t1 = frond__coord_now(c);
  if (rc != ZOK)
    return frond__zk_fail(err, rc, "set", z->claim);
  if ((rc = zoo_get_children(z->zh, z->claims, 0, &kids)) != ZOK)
    return frond__zk_fail(err, rc, "list", z->claims);
  peers = calloc(kids.count ? (size_t)kids.count : 1, sizeof(*peers));
  if (!peers) {
    deallocate_String_vector(&kids);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (int32_t i = 0; i < kids.count; i++) {
    char path[PATH_MAX_ZK], buf[DATA_MAX];
    struct Stat ps;
    int64_t clock;
    frond__zk_path(path, "%s/%s", z->claims, kids.data[i]);
    if (strcmp(path, z->claim) == 0 || frond__zk_get(z, path, buf, &ps) != ZOK)
      continue;
    if ((clock = frond__zk_claim_field(buf, "clock")) > 0)
      peers[n++] = clock - ps.mtime;
  }
  deallocate_String_vector(&kids);
  if (n > 0) {
    qsort(peers, n, sizeof(*peers), cmp_i64);
    z->peer_raw = peers[n / 2];
    *offset_ms = (t0 - st.mtime) - z->peer_raw;
    snprintf(ref, len, "the median of %zu other live node%s", n,
             n == 1 ? "" : "s");
  } else {
    z->peer_raw = INT64_MIN;
    *offset_ms = t0 + (t1 - t0) / 2 - st.mtime;
    snprintf(ref, len, "ZooKeeper (no other live node)");
  }
  free(peers);
  return 0;
}

int frond__zk_layout_get(frond_coord *c, char *spec, size_t len,
                         int64_t *floor_id, frond_error *err) {
  zk *z = c->impl;
  char buf[DATA_MAX];
  struct Stat st;
  layout_rec r;
  int rc;
  if (!frond__zk_is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  rc = frond__zk_get(z, z->layout, buf, &st);
  spec[0] = 0;
  *floor_id = 0;
  if (rc == ZNONODE)
    return 0;
  if (rc != ZOK)
    return frond__zk_fail(err, rc, "get", z->layout);
  frond__zk_parse_layout(buf, &r);
  snprintf(spec, len, "%s%s", r.changing ? FROND_COORD_CHANGING : "", r.spec);
  *floor_id = r.floor;
  return 0;
}

static int live_claims(zk *z, char *who, size_t len, frond_error *err) {
  struct String_vector kids = {0, NULL};
  int rc = zoo_get_children(z->zh, z->claims, 0, &kids), n;
  if (rc == ZNONODE)
    return 0;
  if (rc != ZOK)
    return frond__zk_fail(err, rc, "list", z->claims);
  n = kids.count;
  who[0] = 0;
  for (int32_t i = 0; i < kids.count && strlen(who) + 16 < len; i++)
    snprintf(who + strlen(who), len - strlen(who), "%s%s", i ? ", " : "",
             kids.data[i]);
  deallocate_String_vector(&kids);
  return n;
}

/*
** Change the recorded layout. Phase 1 marks the record "changing", which
** moves its version: from then on no fence write (each checks the version)
** and no start succeeds, so the fences read next are final. With nobody
** holding an ID, the floor is computed from them and the new layout is
** recorded (phase 2), at the version phase 1 left: an undo in between
** makes it fail. With a holder, or when phase 2 fails, the old record is
** put back. The layout it records (marked or not) puts the old record back
** and sets no floor: the undo of a change left unfinished (its process
** killed between the phases, ZooKeeper lost before the put-back).
*/
/* Write r at version v (NULL st: do not learn the new version). */
static int set_rec(zk *z, const layout_rec *r, int v, struct Stat *st,
                   frond_error *err) {
  char buf[DATA_MAX];
  int rc;
  frond__zk_format_layout(r, buf, sizeof(buf));
  rc = st ? zoo_set2(z->zh, z->layout, buf, (int)strlen(buf), v, st)
          : zoo_set(z->zh, z->layout, buf, (int)strlen(buf), v);
  if (rc == ZBADVERSION)
    return frond__fail(err, FROND_ECOORD,
                       "%s changed meanwhile: look at it again, then try "
                       "again",
                       z->layout);
  return rc == ZOK ? 0 : frond__zk_fail(err, rc, "set", z->layout);
}

int frond__zk_layout_set(frond_coord *c, const char *spec, int64_t *floor_id,
                         frond_error *err) {
  zk *z = c->impl;
  char buf[DATA_MAX], who[256];
  frond_coord_entry *e = NULL;
  struct Stat st;
  layout_rec r, keep;
  size_t n = 0;
  int rc, live;

  if (!frond__zk_is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  if ((rc = frond__zk_ensure_path(z, z->root, err)) != 0)
    return rc;
  rc = frond__zk_get(z, z->layout, buf, &st);
  if (rc == ZNONODE) {
    if ((live = live_claims(z, who, sizeof(who), err)) != 0)
      goto in_use;
    memset(&r, 0, sizeof(r));
    snprintf(r.spec, sizeof(r.spec), "%s", spec);
    frond__zk_format_layout(&r, buf, sizeof(buf));
    rc = zoo_create(z->zh, z->layout, buf, (int)strlen(buf),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
    *floor_id = 0;
    return rc == ZOK ? 0 : frond__zk_fail(err, rc, "create", z->layout);
  }
  if (rc != ZOK)
    return frond__zk_fail(err, rc, "get", z->layout);
  frond__zk_parse_layout(buf, &r);
  keep = r;
  keep.changing = 0;
  *floor_id = r.floor;
  if (strcmp(spec, r.spec) == 0) /* undo a change left unfinished */
    return r.changing ? set_rec(z, &keep, st.version, NULL, err) : 0;
  if ((live = live_claims(z, who, sizeof(who), err)) != 0)
    goto in_use;
  r.changing = 1;
  if ((rc = set_rec(z, &r, st.version, &st, err)) != 0)
    return rc;
  if ((live = live_claims(z, who, sizeof(who), err)) != 0 ||
      (rc = frond__zk_list(c, &e, &n, err)) != 0) {
    set_rec(z, &keep, st.version, NULL, NULL);
    if (live > 0)
      goto in_use;
    return live < 0 ? live : rc;
  }
  *floor_id = frond__coord_floor(&c->layout, e, n);
  free(e);
  if (*floor_id < r.floor)
    *floor_id = r.floor;
  memset(&r, 0, sizeof(r));
  snprintf(r.spec, sizeof(r.spec), "%s", spec);
  snprintf(r.previous, sizeof(r.previous), "%s", keep.spec);
  r.floor = *floor_id;
  if ((rc = set_rec(z, &r, st.version, NULL, err)) != 0)
    /* The old record back, unless it moved on (the set went through
    ** after all, or an undo). A mark left stops every start, saying how
    ** to finish or undo the change. */
    set_rec(z, &keep, st.version, NULL, NULL);
  return rc;
in_use:
  if (live < 0)
    return live;
  return frond__fail(err, FROND_ENODE_IN_USE,
                     "%d node ID%s held (%s in %s): stop every node before "
                     "changing the layout",
                     live, live == 1 ? " is" : "s are", who, z->claims);
}
