/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_zk.c -- node IDs from ZooKeeper, compatible with Leaf's layout.
**
** This file contains the ZooKeeper coordinator ("zk://h:p[,h:p...]/name").
** Leaf's part, unchanged, so Leaf and Frond nodes can share a cluster:
**
**   /snowflake/<name>/forever/<ip>:<port>-<10 digits>   PERSISTENT_SEQUENTIAL
**       data {"ip":"...","port":"...","timestamp":<ms>}
**
** The 10 digits plus the first node ID served (coord_scope.c) are the
** node ID; an identity that already has a child reuses its number. The timestamp is the node's FENCE: no ID above it is
** issued under the number, and every later holder starts above it. Leaf
** parses this data with Jackson into a class of exactly these three fields
** and fails on any other, so nothing is added to it.
**
** Frond's additions, which Leaf never reads:
**
**   /snowflake/<name>/claims/<10 digits>                 EPHEMERAL
**       "<ip>:<port> pid <pid> clock <unix ms> session <ms>"
**   /snowflake/<name>/layout                             PERSISTENT
**       "spec=<layout>\nfloor=<id>\nprevious=<layout>\nstate=ready|changing\n"
**
**   - The claim: one live holder per number. A second live process with
**     the same identity fails with NODE_IN_USE; a restart after kill -9
**     waits (bounded) for its dead session's claim to go.
**   - Every fence write is one multi-op: check the layout's version, set
**     our child at the version we last wrote (a successor's first write
**     changes it, so a late write of ours fails: NODE_ID_LOST), and set our
**     claim's data with our wall clock. The claim's mtime is ZooKeeper's
**     clock at the same moment: peers compare clocks through it.
**   - Session expiry: the claim is gone; coord.c blocks the generator, and
**     regain opens a new session, claims again and resumes above any fence
**     another holder stored meanwhile.
**   - Reclaiming (retention_ms > 0): when the sequence runs past the
**     layout's node range, a new identity takes over the lowest number that
**     nobody claims and whose fence is older than retention_ms, in one
**     multi-op (delete the old child at its version, create ours with the
**     old timestamp, create the claim), and starts above that fence.
*/
#include "coord/coord_zk.h"
#include "base/base.h"
#include "core/core.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int zk_open(frond_coord *c, const char *uri, frond_error *err) {
  const char *h = uri + strlen("zk://"), *name;
  size_t hlen, nlen;
  zk *z;
  int rc;

  if ((rc = frond__zk_parse_uri(c, uri, &hlen, &name, &nlen, err)) != 0)
    return rc;
  if (c->t.node >= 0 || c->t.unregistered)
    return frond__fail(err, FROND_EINVAL,
                       "node= and unregistered= are not ZooKeeper options: "
                       "ZooKeeper hands out node IDs itself");
  if (!(z = calloc(1, sizeof(*z))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  z->c = c;
  c->impl = z;
  snprintf(z->hosts, sizeof(z->hosts), "%.*s", (int)hlen, h);
  frond__zk_path(z->root, "/snowflake/%.*s", (int)nlen, name);
  frond__zk_path(z->forever, "%s/forever", z->root);
  frond__zk_path(z->claims, "%s/claims", z->root);
  frond__zk_path(z->layout, "%s/layout", z->root);
  z->peer_raw = INT64_MIN;
  pthread_mutex_init(&z->mu, NULL);
  frond__cond_init(&z->cv);
  atomic_init(&z->expired, 0);
  atomic_store(&c->validity_ms, c->t.session_ms);
  zoo_set_debug_level(getenv("FROND_ZK_DEBUG") ? ZOO_LOG_LEVEL_INFO : 0);
  return frond__zk_connect(z, err);
}

/* Leaf's data: exactly ip, port and timestamp (Jackson rejects others). */
static int format_data(zk *z, int64_t ms, char *buf, size_t len) {
  const char *colon = strrchr(z->c->owner, ':');
  return snprintf(buf, len,
                  "{\"ip\":\"%.*s\",\"port\":\"%s\",\"timestamp\":%" PRId64 "}",
                  (int)(colon - z->c->owner), z->c->owner, colon + 1, ms);
}

/* ---- the layout record -------------------------------------------------- */

typedef frond__zk_layout_rec layout_rec;

/* Read the record (creating ours when there is none) and check it against
** this node's layout. */
static int check_layout(zk *z, frond_error *err) {
  frond_coord *c = z->c;
  char buf[DATA_MAX];
  struct Stat st;
  layout_rec r;
  int rc = frond__zk_get(z, z->layout, buf, &st);
  if (rc == ZNONODE) {
    memset(&r, 0, sizeof(r));
    snprintf(r.spec, sizeof(r.spec), "%s", c->layout_spec);
    frond__zk_format_layout(&r, buf, sizeof(buf));
    rc = zoo_create(z->zh, z->layout, buf, (int)strlen(buf),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
    if (rc != ZOK && rc != ZNODEEXISTS)
      return frond__zk_fail(err, rc, "create", z->layout);
    rc = frond__zk_get(z, z->layout, buf, &st);
  }
  if (rc != ZOK)
    return frond__zk_fail(err, rc, "get", z->layout);
  frond__zk_parse_layout(buf, &r);
  if (r.changing)
    return frond__fail(
        err, FROND_ECOORD,
        "a change of the fleet's layout from %s was begun and not finished "
        "(%s): no node starts until it is. Unless a `frond node layout "
        "--set` runs now, one stopped or failed: finish it with `frond node "
        "layout --set <new layout>` (every node stopped) or undo it with "
        "`frond node layout --set %s` (or --layout-change on a start)",
        r.spec, z->layout, r.spec);
  if (strcmp(r.spec, c->layout_spec) != 0)
    return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                       "this node's layout is %s, the fleet's is %s (%s); "
                       "nodes under two layouts can issue equal IDs: use the "
                       "fleet's, or change it with `frond node layout --set`",
                       c->layout_spec, r.spec, z->layout);
  z->layout_version = st.version;
  c->floor_id = r.floor;
  snprintf(c->prev_spec, sizeof(c->prev_spec), "%s", r.previous);
  return 0;
}

/* ---- claims ------------------------------------------------------------- */

/*
** Create our claim. With wait, a claim held by another session is waited
** for (bounded by that session's timeout plus a margin): after kill -9 the
** dead process' session holds it until ZooKeeper expires it. NODE_IN_USE
** when it is still held after that: a live process has our identity.
*/
static int create_claim(zk *z, int wait, frond_error *err) {
  char data[DATA_MAX], held[DATA_MAX];
  int64_t deadline = 0, bound = 0;
  for (;;) {
    struct Stat st;
    const clientid_t *me;
    int rc;
    frond__zk_claim_data(z, frond__coord_now(z->c), data, sizeof(data));
    rc = zoo_create(z->zh, z->claim, data, (int)strlen(data),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
    if (rc == ZOK)
      break;
    if (rc != ZNODEEXISTS)
      return frond__zk_fail(err, rc, "create", z->claim);
    pthread_mutex_lock(&z->mu);
    z->claim_event = 0;
    pthread_mutex_unlock(&z->mu);
    {
      int len = DATA_MAX - 1;
      rc = zoo_wget(z->zh, z->claim, frond__zk_claim_watcher, z, held, &len,
                    &st);
      held[rc == ZOK && len > 0 ? len : 0] = 0;
    }
    if (rc == ZNONODE)
      continue; /* gone meanwhile: try again */
    if (rc != ZOK)
      return frond__zk_fail(err, rc, "get", z->claim);
    me = zoo_client_id(z->zh);
    if (me && st.ephemeralOwner == me->client_id)
      break; /* ours already (a retried create) */
    if (!wait)
      return frond__fail(err, FROND_ENODE_ID_LOST,
                         "node ID %" PRIu64 " is claimed by another process: "
                         "%s",
                         z->node, held);
    if (!deadline) {
      int64_t s = frond__zk_claim_field(held, "session");
      bound = (s > 0 ? s : zoo_recv_timeout(z->zh)) + CLAIM_WAIT_MARGIN_MS;
      deadline = frond__mono_ns() + bound * 1000000;
      frond_log(FROND_LOG_WARN,
                "node ID %" PRIu64 " (%s) is claimed by \"%s\", session "
                "0x%llx: waiting up to %" PRId64
                " ms for that session to expire (a restart after a crash?)",
                z->node, z->c->owner, held,
                (unsigned long long)st.ephemeralOwner, bound);
    }
    pthread_mutex_lock(&z->mu);
    while (!z->claim_event && frond__mono_ns() < deadline &&
           !atomic_load(&frond__start_interrupted))
      frond__cond_wait_until(&z->cv, &z->mu, frond__mono_ns() + 50 * 1000000);
    pthread_mutex_unlock(&z->mu);
    /* Nothing created: the other session's claim is left as it is. */
    if (atomic_load(&frond__start_interrupted))
      return frond__fail(err, FROND_ECLOSED,
                         "stopped while waiting for node ID %" PRIu64
                         "'s earlier holder (%s) to expire",
                         z->node, held);
    if (frond__mono_ns() >= deadline)
      return frond__fail(err, FROND_ENODE_IN_USE,
                         "node ID %" PRIu64 " (%s) is claimed by a live "
                         "process: %s (still held after %" PRId64 " ms)",
                         z->node, z->c->owner, held, bound);
  }
  atomic_store(&z->claimed, 1);
  return 0;
}

/* ---- acquire ------------------------------------------------------------ */

/* Take over an old, unclaimed ID for our identity. */
static int reclaim(zk *z, struct String_vector *kids, frond_error *err) {
  frond_coord *c = z->c;
  int64_t now = frond__coord_now(c);
  for (uint64_t want = 0;
       c->t.retention_ms > 0 && want <= c->node_hi - c->node_lo; want++) {
    for (int32_t i = 0; i < kids->count; i++) {
      char old[PATH_MAX_ZK], nw[PATH_MAX_ZK], claim[PATH_MAX_ZK];
      char data[DATA_MAX], cdata[DATA_MAX], buf[DATA_MAX];
      size_t olen;
      uint64_t seq;
      int64_t ts;
      struct Stat st;
      zoo_op_t ops[3];
      zoo_op_result_t res[3];
      if (frond__zk_parse_child(kids->data[i], &olen, &seq) != 0 || seq != want)
        continue;
      frond__zk_path(old, "%s/%s", z->forever, kids->data[i]);
      frond__zk_path(claim, "%s/%010" PRIu64, z->claims, seq);
      if (zoo_exists(z->zh, claim, 0, NULL) != ZNONODE)
        continue;
      if (frond__zk_get(z, old, buf, &st) != ZOK)
        continue;
      ts = frond__zk_timestamp(buf);
      if (now - ts < c->t.retention_ms)
        continue;
      frond__zk_path(nw, "%s/%s-%010" PRIu64, z->forever, c->owner, seq);
      format_data(z, ts, data, sizeof(data));
      frond__zk_claim_data(z, now, cdata, sizeof(cdata));
      zoo_delete_op_init(&ops[0], old, st.version);
      zoo_create_op_init(&ops[1], nw, data, (int)strlen(data),
                         &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
      zoo_create_op_init(&ops[2], claim, cdata, (int)strlen(cdata),
                         &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
      if (zoo_multi(z->zh, 3, ops, res) != ZOK)
        continue; /* someone was faster, or it changed: try the next */
      frond_log(FROND_LOG_WARN,
                "node ID %" PRIu64 " reclaimed from %.*s (fenced at %" PRId64
                ", unused since)",
                seq, (int)olen, kids->data[i], ts);
      z->node = seq;
      z->have_node = 1;
      frond__zk_path(z->mine, "%s", nw);
      frond__zk_path(z->claim, "%s", claim);
      z->child_version = 0;
      atomic_store(&z->claimed, 1);
      return 0;
    }
  }
  return frond__fail(err, FROND_ENODE_RANGE,
                     "no free node ID in %s: the sequence is past %" PRIu64
                     " and no ID has been unclaimed for retention_ms=%" PRId64
                     "%s",
                     z->forever, c->node_hi - c->node_lo, c->t.retention_ms,
                     c->t.retention_ms ? "" : " (reclaiming is off)");
}

/* The lowest child of forever for our identity, or -1. */
static int find_mine(zk *z, struct String_vector *kids, uint64_t *seq,
                     char *name, size_t len) {
  int found = -1;
  size_t ol = strlen(z->c->owner);
  for (int32_t i = 0; i < kids->count; i++) {
    size_t olen;
    uint64_t s;
    if (frond__zk_parse_child(kids->data[i], &olen, &s) != 0 || olen != ol ||
        memcmp(kids->data[i], z->c->owner, ol) != 0)
      continue;
    if (found < 0 || s < *seq) {
      *seq = s;
      snprintf(name, len, "%s", kids->data[i]);
      found = 0;
    }
  }
  return found;
}

/* Read our child: its fence and version. */
static int read_mine(zk *z, int64_t *fence, int32_t *version,
                     frond_error *err) {
  char buf[DATA_MAX];
  struct Stat st;
  int rc = frond__zk_get(z, z->mine, buf, &st);
  if (rc == ZNONODE)
    return frond__fail(err, FROND_ENODE_ID_LOST, "%s was removed", z->mine);
  if (rc != ZOK)
    return frond__zk_fail(err, rc, "get", z->mine);
  *fence = frond__zk_timestamp(buf);
  *version = st.version;
  return 0;
}

static int zk_acquire(frond_coord *c, frond__coord_claim *out,
                      frond_error *err) {
  zk *z = c->impl;
  struct String_vector kids = {0, NULL};
  char name[PATH_MAX_ZK], created[PATH_MAX_ZK], data[DATA_MAX];
  uint64_t seq = 0;
  int rc;

  if (!frond__zk_is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  if ((rc = frond__zk_ensure_path(z, z->forever, err)) != 0 ||
      (rc = frond__zk_ensure_path(z, z->claims, err)) != 0 ||
      (rc = check_layout(z, err)) != 0)
    return rc;
  if ((rc = zoo_get_children(z->zh, z->forever, 0, &kids)) != ZOK)
    return frond__zk_fail(err, rc, "list", z->forever);
  if (find_mine(z, &kids, &seq, name, sizeof(name)) != 0) {
    char prefix[PATH_MAX_ZK];
    frond__zk_path(prefix, "%s/%s-", z->forever, c->owner);
    format_data(z, frond__coord_now(c), data, sizeof(data));
    rc =
        zoo_create(z->zh, prefix, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE,
                   ZOO_PERSISTENT_SEQUENTIAL, created, sizeof(created));
    deallocate_String_vector(&kids);
    if (rc != ZOK)
      return frond__zk_fail(err, rc, "create", prefix);
    /* Two first starts of one identity may race: both keep the lowest
    ** child, so the claim below admits only one of them. */
    if ((rc = zoo_get_children(z->zh, z->forever, 0, &kids)) != ZOK)
      return frond__zk_fail(err, rc, "list", z->forever);
    find_mine(z, &kids, &seq, name, sizeof(name));
    if (strcmp(strrchr(created, '/') + 1, name) != 0)
      zoo_delete(z->zh, created, -1);
    if (seq > c->node_hi - c->node_lo) {
      zoo_delete(z->zh, created, -1);
      rc = reclaim(z, &kids, err);
      deallocate_String_vector(&kids);
      if (rc != 0)
        return rc;
      goto claimed;
    }
  }
  deallocate_String_vector(&kids);
  z->node = seq;
  z->have_node = 1;
  frond__zk_path(z->mine, "%s/%s", z->forever, name);
  frond__zk_path(z->claim, "%s/%010" PRIu64, z->claims, seq);
  if (seq > c->node_hi - c->node_lo)
    return frond__fail(err, FROND_ENODE_RANGE,
                       "%s: number %" PRIu64 " is past the node IDs served, %s",
                       z->mine, seq, c->scope);
  if ((rc = create_claim(z, 1, err)) != 0)
    return rc == FROND_ENODE_ID_LOST ? FROND_ENODE_IN_USE : rc;
claimed:
  memset(out, 0, sizeof(*out));
  out->node = c->node_lo + z->node;
  if ((rc = read_mine(z, &out->fence_ms, &z->child_version, err)) != 0)
    return rc == FROND_ENODE_ID_LOST ? FROND_ECOORD : rc;
  return 0;
}

/* ---- the fence ---------------------------------------------------------- */

/* Did ZooKeeper answer rc because the session expired? Once the client
** knows, later calls fail with ZINVALIDSTATE rather than saying so. */
static int expired(zk *z, int rc) {
  return rc == ZSESSIONEXPIRED ||
         (rc == ZINVALIDSTATE && zoo_state(z->zh) == ZOO_EXPIRED_SESSION_STATE);
}

/* Was the last write to our child ours? Our multi sets the child and our
** claim in one transaction, so both carry its zxid. 1: ours; 0: another
** holder's, or a node gone; else ZooKeeper's error when it could not
** tell (a connection lost on the way: unknown, not another holder's;
** the session expired: the claim is gone with it). */
static int last_write_ours(zk *z, int32_t *version) {
  struct Stat child, claim;
  const clientid_t *me = zoo_client_id(z->zh);
  int rc = zoo_exists(z->zh, z->mine, 0, &child);
  if (rc == ZOK)
    rc = zoo_exists(z->zh, z->claim, 0, &claim);
  if (rc != ZOK)
    return rc == ZNONODE ? 0 : expired(z, rc) ? ZSESSIONEXPIRED : rc;
  if (!me || claim.ephemeralOwner != me->client_id ||
      claim.mzxid != child.mzxid)
    return 0;
  *version = child.version;
  return 1;
}

static void note_clock(zk *z, int64_t t0, int64_t t1, int64_t mtime) {
  frond_coord *c = z->c;
  if (z->peer_raw != INT64_MIN)
    atomic_store(&c->clock_offset_ms, (t0 - mtime) - z->peer_raw);
  else
    atomic_store(&c->clock_offset_ms, t0 + (t1 - t0) / 2 - mtime);
  atomic_store(&c->clock_checked, 1);
}

/* The session expired: the ephemeral claim went with it. */
static int session_lost(zk *z, frond_error *err) {
  atomic_store(&z->expired, 1);
  atomic_store(&z->claimed, 0);
  return frond__fail(
      err, FROND_ENODE_ID_LOST,
      "zookeeper session expired; claim on node ID %" PRIu64 " lost", z->node);
}

static int zk_fence(frond_coord *c, int64_t fence_ms, frond_error *err) {
  zk *z = c->impl;
  char data[DATA_MAX], cdata[DATA_MAX];
  for (int attempt = 0; attempt < 3; attempt++) {
    struct Stat st_child, st_claim;
    zoo_op_t ops[3];
    zoo_op_result_t res[3];
    int64_t t0, t1;
    int rc;
    if (atomic_load(&z->expired))
      return session_lost(z, err);
    if (!frond__zk_is_connected(z))
      return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable",
                         z->hosts);
    if (!atomic_load(&z->claimed))
      return frond__fail(err, FROND_ENODE_ID_LOST,
                         "node ID %" PRIu64 " is not claimed", z->node);
    t0 = frond__coord_now(c);
    format_data(z, fence_ms, data, sizeof(data));
    frond__zk_claim_data(z, t0, cdata, sizeof(cdata));
    memset(res, 0, sizeof(res));
    zoo_check_op_init(&ops[0], z->layout, z->layout_version);
    zoo_set_op_init(&ops[1], z->mine, data, (int)strlen(data), z->child_version,
                    &st_child);
    zoo_set_op_init(&ops[2], z->claim, cdata, (int)strlen(cdata), -1,
                    &st_claim);
    rc = zoo_multi(z->zh, 3, ops, res);
    t1 = frond__coord_now(c);
    if (rc == ZOK) {
      z->child_version = st_child.version;
      note_clock(z, t0, t1, st_claim.mtime);
      return 0;
    }
    if (expired(z, rc))
      return session_lost(z, err);
    if (res[0].err == ZBADVERSION || res[0].err == ZNONODE) {
      /* The layout record changed: fine if it is still ours. */
      if ((rc = check_layout(z, err)) != 0)
        return rc;
      continue;
    }
    if (res[1].err == ZBADVERSION) {
      /* A write of ours whose answer was lost moves the version too. */
      int ours = last_write_ours(z, &z->child_version);
      if (ours == 1)
        continue;
      if (ours == ZSESSIONEXPIRED)
        return session_lost(z, err);
      if (ours != 0)
        return frond__zk_fail(err, ours, "exists", z->mine);
      return frond__fail(err, FROND_ENODE_ID_LOST,
                         "%s was written by another holder of node ID %" PRIu64,
                         z->mine, z->node);
    }
    if (res[1].err == ZNONODE || res[2].err == ZNONODE) {
      atomic_store(&z->claimed, 0);
      return frond__fail(err, FROND_ENODE_ID_LOST,
                         "%s was removed: node ID %" PRIu64 " is not ours",
                         res[1].err == ZNONODE ? z->mine : z->claim, z->node);
    }
    /* Connection loss or a timeout: the write may have happened. */
    return frond__zk_fail(err, rc, "multi (fence)", z->mine);
  }
  return frond__fail(err, FROND_ECOORD, "zookeeper: %s keeps changing",
                     z->mine);
}

/* Started from the cache, or after an expiry: find our child again and
** claim the ID. NODE_ID_LOST when it is not ours (or held by another). */
static int zk_regain(frond_coord *c, int64_t *after, frond_error *err) {
  zk *z = c->impl;
  struct String_vector kids = {0, NULL};
  char name[PATH_MAX_ZK];
  uint64_t seq = 0;
  int32_t version = 0;
  int64_t fence = 0;
  int rc, found = 0;

  *after = 0;
  if ((rc = frond__zk_ensure_session(z, err)) != 0 ||
      (rc = check_layout(z, err)) != 0)
    return rc;
  if ((rc = zoo_get_children(z->zh, z->forever, 0, &kids)) != ZOK)
    return frond__zk_fail(err, rc, "list", z->forever);
  for (int32_t i = 0; i < kids.count; i++) {
    size_t olen;
    if (frond__zk_parse_child(kids.data[i], &olen, &seq) == 0 &&
        c->node >= c->node_lo && seq == c->node - c->node_lo) {
      frond__zk_path(name, "%s", kids.data[i]);
      found =
          olen == strlen(c->owner) && memcmp(kids.data[i], c->owner, olen) == 0;
      break;
    }
  }
  deallocate_String_vector(&kids);
  if (!found)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " no longer belongs to %s in %s",
                       c->node, c->owner, z->forever);
  z->node = c->node - c->node_lo;
  z->have_node = 1;
  frond__zk_path(z->mine, "%s/%s", z->forever, name);
  frond__zk_path(z->claim, "%s/%010" PRIu64, z->claims, z->node);
  if (!atomic_load(&z->claimed) && (rc = create_claim(z, 0, err)) != 0)
    return rc;
  if ((rc = read_mine(z, &fence, &version, err)) != 0)
    return rc;
  /* Always above the stored fence, even when the version is the one we
  ** last wrote: a reclaim deletes the child and creates it again at
  ** version 0, so another holder of our identity can leave it at our
  ** version with a fence of its own. Above our own fence costs at most
  ** the window we had borrowed. */
  *after = fence;
  z->child_version = version;
  return 0;
}

static int zk_release(frond_coord *c, frond_error *err) {
  zk *z = c->impl;
  if (!z->have_node || !frond__zk_is_connected(z) ||
      !atomic_exchange(&z->claimed, 0))
    return 0;
  /* Ours: an ephemeral node of our live session. */
  zoo_delete(z->zh, z->claim, -1);
  return 0;
}

static void zk_close(frond_coord *c) {
  zk *z = c->impl;
  if (!z)
    return;
  if (z->zh)
    zookeeper_close(z->zh);
  pthread_mutex_destroy(&z->mu);
  pthread_cond_destroy(&z->cv);
  free(z);
}

const frond_coord_methods frond__coord_zk_methods = {
    .iVersion = 2,
    .zScheme = "zk://",
    .xOpen = zk_open,
    .xAcquire = zk_acquire,
    .xFence = zk_fence,
    .xRegain = zk_regain,
    .xRelease = zk_release,
    .xList = frond__zk_list,
    .xClockOffset = frond__zk_clock_offset,
    .xLayoutGet = frond__zk_layout_get,
    .xLayoutSet = frond__zk_layout_set,
    .xClose = zk_close,
    /* Leaf's rule: a restart may learn its ID from the cache while
    ** ZooKeeper is down. Unlike Leaf, it issues nothing until ZooKeeper
    ** answers: a later holder would not read a local file. */
    .bCacheFallback = 1,
    .bFenced = 1,
    .bNumbered = 1,
    .xFact = frond__zk_fact,
};
