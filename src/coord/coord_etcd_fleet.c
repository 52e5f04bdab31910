/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_etcd_fleet.c -- the etcd coordinator's view of the fleet: the list
** of node IDs, the peer clock check, the layout record read and changed,
** and the facts the fleet agrees on. Keys as coord_etcd.c describes them.
*/
#include "coord/coord_etcd.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_entry(const void *a, const void *b) {
  const frond_coord_entry *x = a, *y = b;
  return x->node < y->node ? -1 : x->node > y->node;
}

int frond__etcd_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                     frond_error *err) {
  frond__etcd *e = c->impl;
  frond__etcd_reply nodes, claims;
  frond_coord_entry *v;
  size_t k = 0;
  int rc;
  if ((rc = frond__etcd_range_dir(e, "node", &nodes, err)) != 0)
    return rc;
  if ((rc = frond__etcd_range_dir(e, "claim", &claims, err)) != 0) {
    frond__etcd_reply_free(&nodes);
    return rc;
  }
  if (!(v = calloc(nodes.nkvs ? nodes.nkvs : 1, sizeof(*v)))) {
    rc = frond__fail(err, FROND_ENOMEM, NULL);
    goto out;
  }
  for (size_t i = 0; i < nodes.nkvs; i++) {
    char ck[FROND__ETCD_KEY_LEN];
    int64_t id = frond__etcd_key_node(e, nodes.kvs[i].key, "node"), fence;
    if (id < 0 || frond__etcd_parse_node(nodes.kvs[i].value, &fence, v[k].owner,
                                         sizeof(v[k].owner)) != 0)
      continue;
    v[k].node = (uint64_t)id;
    v[k].fence_ms = fence;
    frond__etcd_key(e, "claim", (uint64_t)id, ck);
    v[k].live = frond__etcd_find(&claims, ck) != NULL;
    k++;
  }
  qsort(v, k, sizeof(*v), cmp_entry);
  *out = v;
  *n = k;
out:
  frond__etcd_reply_free(&nodes);
  frond__etcd_reply_free(&claims);
  return rc;
}

/* ---- the fleet: clocks and layout --------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Our clock against the live peers' (the head comment). */
int frond__etcd_clock_offset(frond_coord *c, int64_t *offset_ms, char *ref,
                             size_t len, frond_error *err) {
  frond__etcd *e = c->impl;
  frond__etcd_reply claims;
  char mine[FROND__ETCD_KEY_LEN];
  int64_t *peers;
  size_t n = 0;
  int rc;
  if (e->skew == INT64_MIN &&
      (rc = frond__etcd_skew(e->h, c, &e->skew, err)) != 0)
    return rc;
  if ((rc = frond__etcd_range_dir(e, "claim", &claims, err)) != 0)
    return rc;
  frond__etcd_key(e, "claim", e->node, mine);
  if (!(peers = calloc(claims.nkvs ? claims.nkvs : 1, sizeof(*peers)))) {
    frond__etcd_reply_free(&claims);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (size_t i = 0; i < claims.nkvs; i++) {
    int64_t s = frond__etcd_claim_field(claims.kvs[i].value, "skew", INT64_MIN);
    if (strcmp(claims.kvs[i].key, mine) != 0 && s != INT64_MIN)
      peers[n++] = s;
  }
  frond__etcd_reply_free(&claims);
  if (n > 0) {
    qsort(peers, n, sizeof(*peers), cmp_i64);
    *offset_ms = e->skew - peers[n / 2];
    snprintf(ref, len, "the median of %zu other live node%s", n,
             n == 1 ? "" : "s");
  } else {
    *offset_ms = e->skew;
    snprintf(ref, len, "etcd %s (no other live node)",
             frond__etcd_endpoint(e->h));
  }
  free(peers);
  return 0;
}

/* The layout record's text and mod_revision ("" and 0 when none). */
static int read_layout(frond__etcd *e, char *text, size_t len, int64_t *rev,
                       frond_error *err) {
  frond__etcd_reply r;
  const frond__etcd_kv *kv;
  char k[FROND__ETCD_KEY_LEN * 2];
  frond__etcd_body b = {.n = 0};
  int rc;
  frond__etcd_add(&b, "{\"key\":\"%s\"}",
                  frond__etcd_text64(e->layout, k, sizeof(k)));
  text[0] = 0;
  *rev = 0;
  if ((rc = frond__etcd_request(e, "/v3/kv/range", &b, 1, e->c->t.connect_ms,
                                &r, err)) == 0 &&
      (kv = frond__etcd_find(&r, e->layout)) != NULL) {
    snprintf(text, len, "%s", kv->value);
    *rev = kv->mod_rev;
  }
  frond__etcd_reply_free(&r);
  return rc;
}

int frond__etcd_layout_get(frond_coord *c, char *spec, size_t len,
                           int64_t *floor_id, frond_error *err) {
  frond__etcd *e = c->impl;
  char text[FROND__ETCD_VAL_MAX];
  frond__zk_layout_rec r;
  int64_t rev;
  int rc;
  spec[0] = 0;
  *floor_id = 0;
  if ((rc = read_layout(e, text, sizeof(text), &rev, err)) != 0 || !rev)
    return rc;
  frond__zk_parse_layout(text, &r);
  snprintf(spec, len, "%s%s", r.changing ? FROND_COORD_CHANGING : "", r.spec);
  *floor_id = r.floor;
  return 0;
}

/* The live claims, named into who: their count, or a negative code. */
static int live_claims(frond__etcd *e, char *who, size_t len,
                       frond_error *err) {
  frond__etcd_reply r;
  int rc, n;
  if ((rc = frond__etcd_range_dir(e, "claim", &r, err)) != 0) {
    frond__etcd_reply_free(&r);
    return rc;
  }
  who[0] = 0;
  for (size_t i = 0; i < r.nkvs && strlen(who) + 40 < len; i++)
    snprintf(who + strlen(who), len - strlen(who), "%s%s", i ? ", " : "",
             r.kvs[i].key + strlen(e->u.prefix) + 1);
  n = (int)r.nkvs;
  frond__etcd_reply_free(&r);
  return n;
}

/* Write the record at mod_revision rev (0: create it): 0, or COORD when it
** moved meanwhile. *now_rev: its revision after the write. */
static int set_rec(frond__etcd *e, const frond__zk_layout_rec *rec, int64_t rev,
                   int64_t *now_rev, frond_error *err) {
  char text[512];
  frond__etcd_reply r;
  frond__etcd_body b = {.n = 0};
  int rc;
  frond__zk_format_layout(rec, text, sizeof(text));
  frond__etcd_add(&b, FROND__ETCD_TXN_BEGIN);
  frond__etcd_cmp(&b, e->layout, rev ? "MOD" : "CREATE", rev);
  frond__etcd_add(&b, FROND__ETCD_TXN_SUCCESS);
  frond__etcd_put(&b, e->layout, text, 0);
  frond__etcd_add(&b, FROND__ETCD_TXN_FAILURE FROND__ETCD_TXN_END);
  rc = frond__etcd_request(e, "/v3/kv/txn", &b, 0, e->c->t.connect_ms, &r, err);
  if (rc == 0 && !r.succeeded)
    rc = frond__fail(err, FROND_ECOORD,
                     "etcd %s changed meanwhile: look at it again, then try "
                     "again",
                     e->layout);
  if (rc == 0 && now_rev)
    *now_rev = r.revision;
  frond__etcd_reply_free(&r);
  return rc;
}

/* The layout change, as ZooKeeper's (coord_zk.c): mark the record, which
** moves its mod_revision and so stops every fence write and claim; read
** the fences, now final; record the new layout at the revision the mark
** left, or put the old one back. */
int frond__etcd_layout_set(frond_coord *c, const char *spec, int64_t *floor_id,
                           frond_error *err) {
  frond__etcd *e = c->impl;
  char text[FROND__ETCD_VAL_MAX], who[256];
  frond_coord_entry *v = NULL;
  frond__zk_layout_rec r, keep;
  int64_t rev;
  size_t n = 0;
  int rc, live;

  if ((rc = read_layout(e, text, sizeof(text), &rev, err)) != 0)
    return rc;
  *floor_id = 0;
  if (!rev) {
    if ((live = live_claims(e, who, sizeof(who), err)) != 0)
      goto in_use;
    memset(&r, 0, sizeof(r));
    snprintf(r.spec, sizeof(r.spec), "%s", spec);
    return set_rec(e, &r, 0, NULL, err);
  }
  frond__zk_parse_layout(text, &r);
  keep = r;
  keep.changing = 0;
  *floor_id = r.floor;
  if (strcmp(spec, r.spec) == 0) /* undo a change left unfinished */
    return r.changing ? set_rec(e, &keep, rev, NULL, err) : 0;
  if ((live = live_claims(e, who, sizeof(who), err)) != 0)
    goto in_use;
  r.changing = 1;
  if ((rc = set_rec(e, &r, rev, &rev, err)) != 0)
    return rc;
  if ((live = live_claims(e, who, sizeof(who), err)) != 0 ||
      (rc = frond__etcd_list(c, &v, &n, err)) != 0) {
    set_rec(e, &keep, rev, NULL, NULL);
    if (live > 0)
      goto in_use;
    return live < 0 ? live : rc;
  }
  *floor_id = frond__coord_floor(&c->layout, v, n);
  free(v);
  if (*floor_id < r.floor)
    *floor_id = r.floor;
  memset(&r, 0, sizeof(r));
  snprintf(r.spec, sizeof(r.spec), "%s", spec);
  snprintf(r.previous, sizeof(r.previous), "%s", keep.spec);
  r.floor = *floor_id;
  if ((rc = set_rec(e, &r, rev, NULL, err)) != 0)
    set_rec(e, &keep, rev, NULL, NULL);
  return rc;
in_use:
  if (live < 0)
    return live;
  return frond__fail(err, FROND_ENODE_IN_USE,
                     "%d node ID%s held (%s in etcd %s/claim): stop every "
                     "node before changing the layout",
                     live, live == 1 ? " is" : "s are", who, e->u.prefix);
}

/* A fact: <prefix>/facts/<name>, created when absent, then read back. */
int frond__etcd_fact(frond_coord *c, const char *name, const char *value,
                     char *recorded, size_t len, char *where, size_t wlen,
                     frond_error *err) {
  frond__etcd *e = c->impl;
  char key[FROND__ETCD_KEY_LEN], k[FROND__ETCD_KEY_LEN * 2];
  frond__etcd_reply r;
  const frond__etcd_kv *kv;
  frond__etcd_body b = {.n = 0};
  int rc;
  snprintf(key, sizeof(key), "%s/facts/%.64s", e->u.prefix, name);
  snprintf(where, wlen, "etcd %.120s at %s", frond__etcd_endpoint(e->h), key);
  if (value) {
    frond__etcd_add(&b, FROND__ETCD_TXN_BEGIN);
    frond__etcd_cmp(&b, key, "CREATE", 0);
    frond__etcd_add(&b, FROND__ETCD_TXN_SUCCESS);
    frond__etcd_put(&b, key, value, 0);
    frond__etcd_rng(&b, key);
    frond__etcd_add(&b, FROND__ETCD_TXN_FAILURE);
    frond__etcd_rng(&b, key);
    frond__etcd_add(&b, FROND__ETCD_TXN_END);
    rc = frond__etcd_request(e, "/v3/kv/txn", &b, 0, c->t.connect_ms, &r, err);
  } else {
    frond__etcd_add(&b, "{\"key\":\"%s\"}",
                    frond__etcd_text64(key, k, sizeof(k)));
    rc =
        frond__etcd_request(e, "/v3/kv/range", &b, 1, c->t.connect_ms, &r, err);
  }
  if (rc == 0) {
    kv = frond__etcd_find(&r, key);
    snprintf(recorded, len, "%s", kv ? kv->value : "");
  }
  frond__etcd_reply_free(&r);
  return rc;
}
