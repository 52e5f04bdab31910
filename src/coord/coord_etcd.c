/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_etcd.c -- node IDs from etcd v3.
**
** This file contains the etcd coordinator ("etcd://h:p[,h:p...]/prefix"),
** spoken through etcd's v3 JSON gateway (coord_etcd_http.c). Its keys,
** under the prefix:
**
**   <prefix>/layout             the fleet's layout record, as ZooKeeper's
**       "spec=<layout>\nfloor=<id>\nprevious=<layout>\nstate=ready|changing\n"
**   <prefix>/node/<10 digits>   one per node ID ever handed out, no lease:
**       "fence <unix ms> owner <host:port>"
**   <prefix>/claim/<10 digits>  the claim, put with this process' etcd lease:
**       "<host:port> pid <pid> clock <unix ms> skew <ms> ttl <s>"
**   <prefix>/facts/<name>       facts the fleet agrees on (coord_fact.c)
**
** The digits are the node ID itself. An identity keeps the node ID its
** node key names; a new identity takes the lowest node ID of the range
** served (coord_scope.c) that has no node key (after a lost race for one,
** one a random number of free IDs further up), or, with retention_ms, the
** lowest one unclaimed whose fence is older than retention_ms.
**
** No node ID held twice. A claim is made by one transaction comparing
** the claim key's create_revision with 0 (nobody's), so of two claimants
** one wins; the key goes only with its lease (expiry, revoke) or our own
** delete, so while it exists nobody else can create it. A node that may
** have lost it stops: the watchdog (coord_fence.c) blocks the generator
** once 9/10 of the lease's TTL has passed since the last keepalive was
** sent, and etcd's leader expires a lease no sooner than a TTL after it
** received that keepalive (later, after a leader change, never sooner).
**
** No ID above a durable fence. The fence is the node key's "fence"; every
** write of it is a transaction comparing (a) the claim key's
** create_revision with the one our claim got, (b) the node key's
** mod_revision with the one our last write or read saw, and (c) the layout
** record's mod_revision. So only the live claim's holder writes it, no
** write of ours delayed on the way can land after a later one (and take
** the fence back), and no write lands during a layout change. A claimant
** puts its claim and reads the fence in one transaction that compares the
** node key's mod_revision with what it read: every fence the previous
** holder got confirmed is in etcd before that transaction (etcd's
** transactions are serialisable), and none can be written after it (the
** previous claim key is gone, so (a) fails). The new holder starts above
** that fence, and the previous holder issued at most up to it: coord.c
** hands the generator a fence only once the transaction that wrote it
** succeeded. Timing (TTL, clocks) decides only when a node stops.
**
** etcd unreachable (a partition, quorum lost): a write's outcome is
** unknown, which the rule allows for (the cache file is written ahead of
** it); the node issues up to its last confirmed fence and stops, blocked
** once the lease may have expired, then regains its ID (the same node key,
** a new claim) and starts above the fence stored meanwhile.
**
** The peer clock check compares clocks through etcd: each node measures
** its clock against the Date of an etcd member's answers (to the change of
** second, coord_etcd_http.c) and records the difference in its claim; a
** starting node compares its own with the median of the live peers',
** which cancels the member's own offset, or, alone, with the member's.
*/
#include "coord/coord_etcd.h"
#include "base/base.h"
#include "core/core.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Margin above a dead holder's lease TTL when waiting for its claim. */
#define CLAIM_WAIT_MARGIN_MS 2000
#define ACQUIRE_TRIES 8

static void node_value(const frond__etcd *e, int64_t fence, char *buf,
                       size_t len) {
  snprintf(buf, len, "fence %" PRId64 " owner %s", fence, e->c->owner);
}

static void claim_value(const frond__etcd *e, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s pid %d clock %" PRId64, e->c->owner,
                   (int)getpid(), frond__coord_now(e->c));
  if (e->skew != INT64_MIN && n > 0 && (size_t)n < len)
    n += snprintf(buf + n, len - (size_t)n, " skew %" PRId64, e->skew);
  if (n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, " ttl %" PRId64, e->ttl_s);
}

/* ---- the lease ---------------------------------------------------------- */

static int grant(frond__etcd *e, frond_error *err) {
  frond_coord *c = e->c;
  frond__etcd_reply r;
  frond__etcd_body b = {.n = 0};
  int rc;
  frond__etcd_add(&b, "{\"TTL\":\"%" PRId64 "\"}",
                  (c->t.session_ms + 999) / 1000);
  rc = frond__etcd_request(e, "/v3/lease/grant", &b, 0, c->t.connect_ms, &r,
                           err);
  if (rc == 0 && (r.id == 0 || r.ttl <= 0))
    rc = frond__fail(err, FROND_ECOORD, "etcd %s: lease grant without a lease",
                     frond__etcd_endpoint(e->h));
  if (rc == 0) {
    e->lease = r.id;
    e->ttl_s = r.ttl;
    /* etcd may grant longer than asked (its minimum TTL): a node stops
    ** at 9/10 of what it got, which its leader counts from receipt. */
    atomic_store(&c->validity_ms, r.ttl * 1000 - r.ttl * 100);
  }
  frond__etcd_reply_free(&r);
  return rc;
}

/* Renew the lease: NODE_ID_LOST when etcd says it expired. */
static int keepalive(frond__etcd *e, frond_error *err) {
  frond__etcd_reply r;
  frond__etcd_body b = {.n = 0};
  int rc;
  frond__etcd_add(&b, "{\"ID\":\"%" PRId64 "\"}", e->lease);
  rc = frond__etcd_request(e, "/v3/lease/keepalive", &b, 0,
                           frond__etcd_call_ms(e->c), &r, err);
  if (rc == 0 && r.ttl <= 0) {
    e->lease = 0;
    e->claimed = 0;
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "etcd lease of node ID %" PRIu64 " expired (%s)", e->node,
                     frond__etcd_endpoint(e->h));
  }
  frond__etcd_reply_free(&r);
  return rc;
}

static void lease_revoke(frond__etcd *e) {
  frond__etcd_reply r;
  frond__etcd_body b = {.n = 0};
  if (!e->lease)
    return;
  frond__etcd_add(&b, "{\"ID\":\"%" PRId64 "\"}", e->lease);
  (void)frond__etcd_request(e, "/v3/lease/revoke", &b, 0, e->c->t.connect_ms,
                            &r, NULL);
  frond__etcd_reply_free(&r);
  e->lease = 0;
}

/* ---- open --------------------------------------------------------------- */

static int etcd_open(frond_coord *c, const char *uri, frond_error *err) {
  frond__etcd *e;
  int rc;
  if (!(e = calloc(1, sizeof(*e))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  if ((rc = frond__etcd_parse_uri(c, uri, &e->u, err)) != 0 ||
      ((c->t.node >= 0 || c->t.unregistered) &&
       (rc = frond__fail(err, FROND_EINVAL,
                         "node= and unregistered= are not etcd options: the "
                         "etcd coordinator hands out node IDs itself")))) {
    free(e);
    return rc;
  }
  e->c = c;
  e->skew = INT64_MIN;
  c->impl = e;
  snprintf(e->layout, sizeof(e->layout), "%s/layout", e->u.prefix);
  atomic_store(&c->validity_ms, c->t.session_ms - c->t.session_ms / 10);
  return frond__etcd_http_open(&e->h, &e->u, c->t.connect_ms, err);
}

static void etcd_close(frond_coord *c) {
  frond__etcd *e = c->impl;
  if (!e)
    return;
  frond__etcd_http_close(e->h);
  free(e);
}

/* ---- the layout record -------------------------------------------------- */

/* Read the record, creating ours when there is none, and check it. */
static int check_layout(frond__etcd *e, frond_error *err) {
  frond_coord *c = e->c;
  char text[512];
  frond__etcd_reply r;
  const frond__etcd_kv *kv;
  frond__etcd_body b = {.n = 0};
  frond__zk_layout_rec rec;
  int rc;
  memset(&rec, 0, sizeof(rec));
  snprintf(rec.spec, sizeof(rec.spec), "%s", c->layout_spec);
  frond__zk_format_layout(&rec, text, sizeof(text));
  frond__etcd_add(&b, FROND__ETCD_TXN_BEGIN);
  frond__etcd_cmp(&b, e->layout, "CREATE", 0);
  frond__etcd_add(&b, FROND__ETCD_TXN_SUCCESS);
  frond__etcd_put(&b, e->layout, text, 0);
  frond__etcd_rng(&b, e->layout);
  frond__etcd_add(&b, FROND__ETCD_TXN_FAILURE);
  frond__etcd_rng(&b, e->layout);
  frond__etcd_add(&b, FROND__ETCD_TXN_END);
  if ((rc = frond__etcd_request(e, "/v3/kv/txn", &b, 0, c->t.connect_ms, &r,
                                err)) != 0)
    goto out;
  if (!(kv = frond__etcd_find(&r, e->layout))) {
    rc = frond__fail(err, FROND_ECOORD, "etcd: %s vanished", e->layout);
    goto out;
  }
  frond__zk_parse_layout(kv->value, &rec);
  if (rec.changing) {
    rc = frond__fail(
        err, FROND_ECOORD,
        "a change of the fleet's layout from %s was begun and not finished "
        "(etcd %s): no node starts until it is. Unless a `frond node layout "
        "--set` runs now, one stopped or failed: finish it with `frond node "
        "layout --set <new layout>` (every node stopped) or undo it with "
        "`frond node layout --set %s` (or --layout-change on a start)",
        rec.spec, e->layout, rec.spec);
    goto out;
  }
  if (strcmp(rec.spec, c->layout_spec) != 0) {
    rc = frond__fail(err, FROND_ELAYOUT_MISMATCH,
                     "this node's layout is %s, the fleet's is %s (etcd %s); "
                     "nodes under two layouts can issue equal IDs: use the "
                     "fleet's, or change it with `frond node layout --set`",
                     c->layout_spec, rec.spec, e->layout);
    goto out;
  }
  e->layout_rev = kv->mod_rev;
  c->floor_id = rec.floor;
  snprintf(c->prev_spec, sizeof(c->prev_spec), "%s", rec.previous);
out:
  frond__etcd_reply_free(&r);
  return rc;
}

/* ---- claims ------------------------------------------------------------- */

/*
** Claim node ID n, whose node key was last written at node_rev (0: none)
** with fence: one transaction that also writes the node key with our
** identity (it moves node_rev, so a claimant that read the key before us
** fails). 0 when claimed; 1 when it failed, with *holder the claim key's
** value ("" when the claim is free: the node key or the layout moved); an
** error's code (negative, as every FROND_E*) when the request failed or
** the layout changed.
*/
static int claim(frond__etcd *e, uint64_t n, int64_t node_rev, int64_t fence,
                 char *holder, size_t hlen, frond_error *err) {
  char ck[FROND__ETCD_KEY_LEN], nk[FROND__ETCD_KEY_LEN],
      cv[FROND__ETCD_VAL_MAX / 2], nv[256];
  frond__etcd_reply r;
  const frond__etcd_kv *kv;
  frond__etcd_body b = {.n = 0};
  int rc;
  holder[0] = 0;
  frond__etcd_key(e, "claim", n, ck);
  frond__etcd_key(e, "node", n, nk);
  claim_value(e, cv, sizeof(cv));
  node_value(e, fence, nv, sizeof(nv));
  frond__etcd_add(&b, FROND__ETCD_TXN_BEGIN);
  frond__etcd_cmp(&b, ck, "CREATE", 0);
  frond__etcd_cmp(&b, nk, "MOD", node_rev);
  frond__etcd_cmp(&b, e->layout, "MOD", e->layout_rev);
  frond__etcd_add(&b, FROND__ETCD_TXN_SUCCESS);
  frond__etcd_put(&b, ck, cv, e->lease);
  frond__etcd_put(&b, nk, nv, 0);
  frond__etcd_add(&b, FROND__ETCD_TXN_FAILURE);
  frond__etcd_rng(&b, ck);
  frond__etcd_rng(&b, e->layout);
  frond__etcd_add(&b, FROND__ETCD_TXN_END);
  rc = frond__etcd_request(e, "/v3/kv/txn", &b, 0, e->c->t.connect_ms, &r, err);
  if (rc == 0 && r.succeeded) {
    e->node = n;
    e->have_node = 1;
    e->claimed = 1;
    e->claim_rev = e->node_rev = r.revision;
  } else if (rc == 0 && (kv = frond__etcd_find(&r, ck)) != NULL &&
             e->lease != 0 && kv->lease == e->lease) {
    /* Ours already: an earlier claim of this process whose answer was
    ** lost. It wrote the node key in the same transaction, and only the
    ** claim's holder writes it since (a fence write that finds it moved
    ** reads it again). */
    e->node = n;
    e->have_node = 1;
    e->claimed = 1;
    e->claim_rev = e->node_rev = kv->create_rev;
  } else if (rc == 0) {
    if (kv != NULL)
      snprintf(holder, hlen, "%s", kv->value);
    if ((kv = frond__etcd_find(&r, e->layout)) != NULL &&
        kv->mod_rev != e->layout_rev)
      rc = check_layout(e, err);
    if (rc == 0)
      rc = 1;
  } else if (rc == FROND_ENODE_ID_LOST) {
    e->lease = 0; /* expired meanwhile: the caller grants another */
    rc = 1;
  }
  frond__etcd_reply_free(&r);
  return rc;
}

/* After kill -9 the dead process' lease holds its claim for up to a TTL:
** wait for it, bounded. 0 when gone, NODE_IN_USE when still held. */
static int wait_claim(frond__etcd *e, uint64_t n, const char *held,
                      frond_error *err) {
  int64_t ttl = frond__etcd_claim_field(held, "ttl", e->ttl_s);
  int64_t bound = ttl * 1000 + CLAIM_WAIT_MARGIN_MS;
  int64_t deadline = frond__mono_ns() + bound * 1000000;
  char ck[FROND__ETCD_KEY_LEN];
  frond__etcd_key(e, "claim", n, ck);
  frond_log(FROND_LOG_WARN,
            "node ID %" PRIu64 " (%s) is claimed by \"%s\": waiting up to "
            "%" PRId64 " ms for that claim's lease to expire (a restart "
            "after a crash?)",
            n, e->c->owner, held, bound);
  while (frond__mono_ns() < deadline) {
    frond__etcd_reply r;
    frond__etcd_body b = {.n = 0};
    char k[FROND__ETCD_KEY_LEN * 2];
    int rc, gone;
    if (atomic_load(&frond__start_interrupted))
      return frond__fail(err, FROND_ECLOSED,
                         "stopped while waiting for node ID %" PRIu64
                         "'s earlier holder (%s) to expire",
                         n, held);
    frond__etcd_add(&b, "{\"key\":\"%s\"}",
                    frond__etcd_text64(ck, k, sizeof(k)));
    rc = frond__etcd_request(e, "/v3/kv/range", &b, 1, e->c->t.connect_ms, &r,
                             err);
    gone = rc == 0 && frond__etcd_find(&r, ck) == NULL;
    frond__etcd_reply_free(&r);
    if (rc != 0)
      return rc;
    if (gone)
      return 0;
    frond__sleep_ns(100 * 1000000);
  }
  return frond__fail(err, FROND_ENODE_IN_USE,
                     "node ID %" PRIu64 " (%s) is claimed by a live process: "
                     "%s (still held after %" PRId64 " ms)",
                     n, e->c->owner, held, bound);
}

/* What the node keys say: ours (*mine, lowest), a node ID of the range
** without a key (*fresh: the first, or the skip-th), the oldest unclaimed
** one past retention (*old); -1 each when none. */
typedef struct pick {
  int64_t mine, fresh, old;
  int64_t rev[3], fence[3]; /* of mine, fresh (0, 0), old */
} pick;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The skip-th of lo..hi not among used[0..n) (0: the lowest), which it
** sorts; the highest free one when fewer are free, -1 when none is. The
** walk is as long as the node keys plus skip, whatever the range's size. */
static int64_t nth_free(uint64_t *used, size_t n, uint64_t lo, uint64_t hi,
                        uint64_t skip) {
  int64_t found = -1;
  size_t i = 0;
  qsort(used, n, sizeof(*used), cmp_u64);
  for (uint64_t want = lo;; want++) {
    while (i < n && used[i] < want)
      i++;
    if (i == n || used[i] != want) {
      found = (int64_t)want;
      if (skip-- == 0)
        break;
    }
    if (want == hi)
      break;
  }
  return found;
}

/* How many free node IDs the next try skips after `tries` lost races
** for a fresh one: none at first (the fleet's IDs stay low), then a
** random number below 8, 16, 32 ... (servers starting side by side
** spread over the free IDs instead of all taking the lowest again). */
static uint64_t spread(int tries) {
  uint64_t r;
  if (tries == 0)
    return 0;
  if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
    r = (uint64_t)frond__mono_ns() * 0x9e3779b97f4a7c15u ^ (uint64_t)getpid();
  return r % ((uint64_t)4 << tries); /* tries < ACQUIRE_TRIES: below 512 */
}

static int choose(frond__etcd *e, uint64_t skip, pick *p, frond_error *err) {
  frond_coord *c = e->c;
  frond__etcd_reply nodes, claims;
  int64_t now = frond__coord_now(c), best_old = INT64_MAX;
  uint64_t *used;
  size_t nused = 0;
  int rc;
  memset(p, 0, sizeof(*p));
  p->mine = p->fresh = p->old = -1;
  if ((rc = frond__etcd_range_dir(e, "node", &nodes, err)) != 0)
    return rc;
  if ((rc = frond__etcd_range_dir(e, "claim", &claims, err)) != 0) {
    frond__etcd_reply_free(&nodes);
    return rc;
  }
  if (!(used = calloc(nodes.nkvs ? nodes.nkvs : 1, sizeof(*used)))) {
    rc = frond__fail(err, FROND_ENOMEM, NULL);
    goto out;
  }
  for (size_t i = 0; i < nodes.nkvs; i++) {
    const frond__etcd_kv *kv = &nodes.kvs[i];
    char owner[FROND_COORD_OWNER_MAX], ck[FROND__ETCD_KEY_LEN];
    int64_t n = frond__etcd_key_node(e, kv->key, "node"), fence;
    if (n < 0 || (uint64_t)n < c->node_lo || (uint64_t)n > c->node_hi ||
        frond__etcd_parse_node(kv->value, &fence, owner, sizeof(owner)) != 0)
      continue;
    used[nused++] = (uint64_t)n;
    if (strcmp(owner, c->owner) == 0 && (p->mine < 0 || n < p->mine)) {
      p->mine = n;
      p->rev[0] = kv->mod_rev;
      p->fence[0] = fence;
    }
    frond__etcd_key(e, "claim", (uint64_t)n, ck);
    if (c->t.retention_ms > 0 && !frond__etcd_find(&claims, ck) &&
        now - fence >= c->t.retention_ms && n < best_old) {
      best_old = p->old = n;
      p->rev[2] = kv->mod_rev;
      p->fence[2] = fence;
    }
  }
  p->fresh = nth_free(used, nused, c->node_lo, c->node_hi, skip);
  free(used);
out:
  frond__etcd_reply_free(&nodes);
  frond__etcd_reply_free(&claims);
  return rc;
}

static int etcd_acquire(frond_coord *c, frond__coord_claim *out,
                        frond_error *err) {
  frond__etcd *e = c->impl;
  char held[FROND__ETCD_VAL_MAX];
  int rc;
  if ((rc = check_layout(e, err)) != 0)
    return rc;
  /* The clock against etcd's (up to 2 s of requests) before the lease
  ** is granted, so that a short lease does not run out before its first
  ** renewal; the peer check after acquire compares it. */
  if (c->t.max_clock_offset_ms > 0 && e->skew == INT64_MIN &&
      (rc = frond__etcd_skew(e->h, c, &e->skew, err)) != 0)
    return rc;
  for (int i = 0, lost = 0; i < ACQUIRE_TRIES; i++) {
    pick p;
    int k;
    if (!e->lease && (rc = grant(e, err)) != 0)
      return rc;
    if ((rc = choose(e, spread(lost), &p, err)) != 0)
      return rc;
    k = p.mine >= 0 ? 0 : p.fresh >= 0 ? 1 : p.old >= 0 ? 2 : -1;
    if (k < 0)
      return frond__fail(err, FROND_ENODE_RANGE,
                         "no free node ID in etcd %s/node: all %" PRIu64
                         " of %" PRIu64 "..%" PRIu64
                         " (%s) are used by other identities and none has "
                         "been unclaimed for retention_ms=%" PRId64 "%s",
                         e->u.prefix, c->node_hi - c->node_lo + 1, c->node_lo,
                         c->node_hi, c->scope, c->t.retention_ms,
                         c->t.retention_ms ? "" : " (reclaiming is off)");
    uint64_t n = (uint64_t)(k == 0 ? p.mine : k == 1 ? p.fresh : p.old);
    rc = claim(e, n, p.rev[k], p.fence[k], held, sizeof(held), err);
    if (rc < 0)
      return rc;
    if (rc == 0) {
      if (k == 2)
        frond_log(FROND_LOG_WARN,
                  "node ID %" PRIu64 " reclaimed (fenced at %" PRId64
                  ", unused since)",
                  n, p.fence[2]);
      memset(out, 0, sizeof(*out));
      out->node = n;
      out->fence_ms = p.fence[k];
      return 0;
    }
    /* Our own node ID, claimed by a process of our identity: a live one
    ** (NODE_IN_USE), or a dead one whose lease has not expired yet. */
    if (k == 0 && held[0] && (rc = wait_claim(e, n, held, err)) != 0)
      return rc;
    /* Another server took that fresh ID first: its claim key is there.
    ** A claim that failed for its own lease running out, or for the
    ** layout record moving (a fact written beside it), lost no race and
    ** tries the lowest free ID again. */
    if (k == 1 && held[0])
      lost++;
  }
  return frond__fail(err, FROND_ECOORD,
                     "etcd: no node ID claimed after %d tries (contention)",
                     ACQUIRE_TRIES);
}

/* ---- the fence ---------------------------------------------------------- */

static int etcd_fence(frond_coord *c, int64_t fence_ms, frond_error *err) {
  frond__etcd *e = c->impl;
  char ck[FROND__ETCD_KEY_LEN], nk[FROND__ETCD_KEY_LEN],
      cv[FROND__ETCD_VAL_MAX / 2], nv[256];
  int rc;
  if (!e->claimed)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " is not claimed", e->node);
  if ((rc = keepalive(e, err)) != 0)
    return rc;
  frond__etcd_key(e, "claim", e->node, ck);
  frond__etcd_key(e, "node", e->node, nk);
  for (int attempt = 0; attempt < 4; attempt++) {
    frond__etcd_reply r;
    const frond__etcd_kv *kc, *kn, *kl;
    char owner[FROND_COORD_OWNER_MAX];
    int64_t stored;
    frond__etcd_body b = {.n = 0};
    node_value(e, fence_ms, nv, sizeof(nv));
    claim_value(e, cv, sizeof(cv));
    frond__etcd_add(&b, FROND__ETCD_TXN_BEGIN);
    frond__etcd_cmp(&b, ck, "CREATE", e->claim_rev);
    frond__etcd_cmp(&b, nk, "MOD", e->node_rev);
    frond__etcd_cmp(&b, e->layout, "MOD", e->layout_rev);
    frond__etcd_add(&b, FROND__ETCD_TXN_SUCCESS);
    frond__etcd_put(&b, nk, nv, 0);
    frond__etcd_put(&b, ck, cv, e->lease);
    frond__etcd_add(&b, FROND__ETCD_TXN_FAILURE);
    frond__etcd_rng(&b, ck);
    frond__etcd_rng(&b, nk);
    frond__etcd_rng(&b, e->layout);
    frond__etcd_add(&b, FROND__ETCD_TXN_END);
    rc = frond__etcd_request(e, "/v3/kv/txn", &b, 0, frond__etcd_call_ms(c), &r,
                             err);
    if (rc != 0) {
      frond__etcd_reply_free(&r);
      if (rc == FROND_ENODE_ID_LOST) { /* the lease expired */
        e->claimed = 0;
        e->lease = 0;
      }
      return rc; /* the write may or may not have happened */
    }
    if (r.succeeded) {
      e->node_rev = r.revision;
      frond__etcd_reply_free(&r);
      return 0;
    }
    kc = frond__etcd_find(&r, ck);
    kn = frond__etcd_find(&r, nk);
    kl = frond__etcd_find(&r, e->layout);
    if (!kc || kc->create_rev != e->claim_rev || !kn) {
      frond__etcd_reply_free(&r);
      e->claimed = 0;
      return frond__fail(err, FROND_ENODE_ID_LOST,
                         "etcd %s is no longer our claim: node ID %" PRIu64
                         " is not ours",
                         ck, e->node);
    }
    if (!kl || kl->mod_rev != e->layout_rev) {
      /* The layout record changed: fine if it is still ours. */
      frond__etcd_reply_free(&r);
      if ((rc = check_layout(e, err)) != 0)
        return rc;
      continue;
    }
    /* Our claim, and the node key moved: only the claim's holder writes
    ** it, so a write of ours whose answer was lost. Never below it, but
    ** at a close (the exact high water). */
    if (frond__etcd_parse_node(kn->value, &stored, owner, sizeof(owner)) != 0 ||
        strcmp(owner, c->owner) != 0) {
      frond__etcd_reply_free(&r);
      e->claimed = 0;
      return frond__fail(err, FROND_ENODE_ID_LOST,
                         "etcd %s was written by another holder", nk);
    }
    e->node_rev = kn->mod_rev;
    if (stored > fence_ms && !atomic_load(&c->closing))
      fence_ms = stored;
    frond__etcd_reply_free(&r);
  }
  return frond__fail(err, FROND_ECOORD, "etcd: %s keeps changing", nk);
}

/* Started from the cache, or after a loss: claim the node ID again, with
** a new lease when the old one expired. *after: the fence stored. */
static int etcd_regain(frond_coord *c, int64_t *after, frond_error *err) {
  frond__etcd *e = c->impl;
  char nk[FROND__ETCD_KEY_LEN], k[FROND__ETCD_KEY_LEN * 2],
      owner[FROND_COORD_OWNER_MAX];
  char held[FROND__ETCD_VAL_MAX];
  frond__etcd_reply r;
  const frond__etcd_kv *kv;
  frond__etcd_body b = {.n = 0};
  int64_t fence = 0, rev;
  int rc;
  *after = 0;
  if (e->lease && !e->claimed) {
    lease_revoke(e); /* a claim of ours may still hang on it */
  }
  if (!e->lease && (rc = grant(e, err)) != 0)
    return rc;
  if ((rc = check_layout(e, err)) != 0)
    return rc;
  frond__etcd_key(e, "node", c->node, nk);
  frond__etcd_add(&b, "{\"key\":\"%s\"}", frond__etcd_text64(nk, k, sizeof(k)));
  if ((rc = frond__etcd_request(e, "/v3/kv/range", &b, 1, c->t.connect_ms, &r,
                                err)) != 0) {
    frond__etcd_reply_free(&r);
    return rc;
  }
  kv = frond__etcd_find(&r, nk);
  rc = !kv ||
       frond__etcd_parse_node(kv->value, &fence, owner, sizeof(owner)) != 0 ||
       strcmp(owner, c->owner) != 0;
  rev = kv ? kv->mod_rev : 0;
  frond__etcd_reply_free(&r);
  if (rc)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " no longer belongs to %s in etcd %s",
                       c->node, c->owner, nk);
  if (e->claimed) {
    e->node_rev = rev;
    *after = fence;
    return 0;
  }
  rc = claim(e, c->node, rev, fence, held, sizeof(held), err);
  if (rc < 0)
    return rc;
  if (rc == 1)
    return held[0] ? frond__fail(err, FROND_ENODE_ID_LOST,
                                 "node ID %" PRIu64
                                 " is claimed by another process: %s",
                                 c->node, held)
                   : frond__fail(err, FROND_ECOORD,
                                 "etcd %s changed while claiming it: trying "
                                 "again",
                                 nk);
  /* Always above the fence stored, even one of ours. */
  *after = fence;
  return 0;
}

static int etcd_release(frond_coord *c, frond_error *err) {
  frond__etcd *e = c->impl;
  if (!e->have_node || !e->claimed)
    return 0;
  e->claimed = 0;
  /* The claim goes with the lease. */
  lease_revoke(e);
  return 0;
}

const frond_coord_methods frond__coord_etcd_methods = {
    .iVersion = 2,
    .zScheme = "etcd://",
    .xOpen = etcd_open,
    .xAcquire = etcd_acquire,
    .xFence = etcd_fence,
    .xRegain = etcd_regain,
    .xRelease = etcd_release,
    .xList = frond__etcd_list,
    .xClockOffset = frond__etcd_clock_offset,
    .xLayoutGet = frond__etcd_layout_get,
    .xLayoutSet = frond__etcd_layout_set,
    .xClose = etcd_close,
    /* As ZooKeeper: a restart may learn its ID from the cache while etcd
    ** is down, and issues nothing until etcd answers. */
    .bCacheFallback = 1,
    .bFenced = 1,
    .bNumbered = 0,
    .xFact = frond__etcd_fact,
};
