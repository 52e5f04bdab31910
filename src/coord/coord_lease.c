/*
** coord_lease.c -- node IDs as leased rows of a database table.
**
** This file contains the coordinator for deployments with a database and
** no ZooKeeper: "lease+sqlite:///path.db" or "lease+postgresql://...".
**
**   CREATE TABLE frond_node (
**     node_id       BIGINT PRIMARY KEY,
**     owner         VARCHAR(128) NOT NULL,  -- identity of the holder
**     token         VARCHAR(40) NOT NULL,   -- random, one per acquire
**     lease_expires BIGINT NOT NULL,        -- unix ms, database clock
**     high_water_ms BIGINT NOT NULL,        -- the fence, unix ms
**     updated       BIGINT NOT NULL)        -- unix ms of the last write
**   CREATE TABLE frond_meta (
**     name  VARCHAR(64) PRIMARY KEY,        -- layout, layout_floor,
**     value VARCHAR(256) NOT NULL)          -- layout_previous
**
** A node takes a free or expired row with one conditional statement (its
** own transaction): an UPDATE of a row whose lease has expired (the one
** this owner held before first), or an INSERT of the lowest node ID that
** has no row yet. When two nodes race for one row, the database lets
** exactly one statement change it.
**
** high_water_ms is the node's FENCE: no ID above it is issued under the
** row's node ID, and the next holder starts above it. It is written, and
** the lease renewed, by one UPDATE guarded by the holder's token and by the
** fleet's layout, so a write that arrives after a takeover, or after a
** layout change, changes nothing. Lease times come from the database's
** clock; safety does not depend on them (coord.c's watchdog stops a node
** at 9/10 of its lease only so that a takeover finds it stopped).
**
** A fence write that gets no answer within a third of the lease is
** abandoned with its connection (PostgreSQL): a partitioned node must not
** hang in a renewal. Other statements get connect_ms (at least as long).
*/
#include "coord/coord_lease.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define ACQUIRE_TRIES 64
#define CHANGING "changing:"

static const char *schema[] = {
    "CREATE TABLE IF NOT EXISTS frond_node ("
    "node_id BIGINT PRIMARY KEY, owner VARCHAR(128) NOT NULL, "
    "token VARCHAR(40) NOT NULL, lease_expires BIGINT NOT NULL, "
    "high_water_ms BIGINT NOT NULL, updated BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS frond_meta ("
    "name VARCHAR(64) PRIMARY KEY, value VARCHAR(256) NOT NULL)",
};

/* Our tunables come out of the query; the rest is left for libpq. */
static int split_query(frond_coord *c, const char *q, char *rest, size_t len,
                       frond_error *err) {
  size_t o = 0;
  rest[0] = 0;
  while (q && *q) {
    char part[256];
    size_t n = strcspn(q, "&");
    if (n >= sizeof(part))
      return frond__fail(err, FROND_EINVAL, "coordinator option too long");
    memcpy(part, q, n);
    part[n] = 0;
    if (frond__coord_is_query_key(part, strcspn(part, "="))) {
      int rc = frond__coord_parse_query(c, part, err);
      if (rc != 0)
        return rc;
    } else {
      if (o + n + 2 >= len)
        return frond__fail(err, FROND_EINVAL, "URI too long");
      o += (size_t)snprintf(rest + o, len - o, "%s%s", o ? "&" : "", part);
    }
    q += n + (q[n] == '&');
  }
  return 0;
}

static int lease_open(frond_coord *c, const char *uri, frond_error *err) {
  lease *l;
  const char *target = uri + strlen("lease+");
  const char *qm = strchr(target, '?');
  char rest[FROND_COORD_URI_MAX], base[FROND_COORD_URI_MAX];
  int rc;

  snprintf(base, sizeof(base), "%.*s",
           (int)(qm ? (size_t)(qm - target) : strlen(target)), target);
  if ((rc = split_query(c, qm ? qm + 1 : NULL, rest, sizeof(rest), err)) != 0)
    return rc;
  if (!(l = calloc(1, sizeof(*l))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  l->c = c;
  c->impl = l;
  c->validity_ms = c->t.lease_ms - c->t.lease_ms / 10;
  l->answer_ms =
      c->t.connect_ms > c->t.lease_ms / 3 ? c->t.connect_ms : c->t.lease_ms / 3;

  if (strncmp(base, "sqlite:", 7) == 0) {
    const char *path = base + 7;
    if (rest[0]) {
      rc = frond__fail(err, FROND_EINVAL, "unknown lease option '%s'", rest);
      goto fail;
    }
    if (strncmp(path, "//", 2) == 0)
      path += 2;
    if (!*path) {
      rc = frond__fail(err, FROND_EINVAL, "lease+sqlite needs a file path");
      goto fail;
    }
    if ((rc = frond__lease_open_sqlite(l, path, err)) != 0)
      goto fail;
  } else if (strncmp(base, "postgresql:", 11) == 0 ||
             strncmp(base, "postgres:", 9) == 0) {
    l->is_pg = 1;
    snprintf(l->conninfo, sizeof(l->conninfo), "%s%s%s", base,
             rest[0] ? "?" : "", rest);
    if ((rc = frond__lease_open_pg(l, err)) != 0)
      goto fail;
  } else {
    rc = frond__fail(err, FROND_EINVAL,
                     "lease coordinator wants lease+sqlite:///path.db or "
                     "lease+postgresql://..., not '%s'",
                     uri);
    goto fail;
  }
  for (size_t i = 0; i < FROND__ARRAY_SIZE(schema); i++)
    if ((rc = frond__lease_exec(l, schema[i], 0, NULL, NULL, NULL, err)) != 0)
      goto fail;
  return 0;
fail:
  frond__lease_drop(l);
  free(l);
  c->impl = NULL;
  return rc;
}

static void new_token(lease *l) {
  uint64_t a[2] = {0, 0};
  if (getrandom(a, sizeof(a), 0) != (ssize_t)sizeof(a)) {
    a[0] = (uint64_t)frond__mono_ns() ^ ((uint64_t)getpid() << 32);
    a[1] = a[0] * 31;
  }
  snprintf(l->token, sizeof(l->token), "%016" PRIx64 "%016" PRIx64, a[0], a[1]);
}

static int64_t col_i64(const row *r, int i) {
  int64_t v = 0;
  frond__parse_i64(r->col[i], strlen(r->col[i]), &v);
  return v;
}

/* ---- the layout record -------------------------------------------------- */

typedef struct {
  char spec[COL_MAX]; /* "changing:<spec>" during a change */
  char previous[COL_MAX];
  int64_t floor;
} layout_rec;

static int read_layout(lease *l, layout_rec *rec, const char *lock,
                       frond_error *err) {
  result r = {0};
  char sql[200];
  int rc;
  memset(rec, 0, sizeof(*rec));
  snprintf(sql, sizeof(sql),
           "SELECT name, value FROM frond_meta WHERE name IN ('layout', "
           "'layout_floor', 'layout_previous')%s",
           lock);
  if ((rc = frond__lease_exec(l, sql, 0, NULL, &r, NULL, err)) != 0)
    return rc;
  for (size_t i = 0; i < r.n; i++) {
    if (strcmp(r.rows[i].col[0], "layout") == 0)
      snprintf(rec->spec, sizeof(rec->spec), "%s", r.rows[i].col[1]);
    else if (strcmp(r.rows[i].col[0], "layout_previous") == 0)
      snprintf(rec->previous, sizeof(rec->previous), "%s", r.rows[i].col[1]);
    else
      rec->floor = col_i64(&r.rows[i], 1);
  }
  free(r.rows);
  return 0;
}

/* Why a guarded write changed nothing: LAYOUT_MISMATCH, COORD (a change is
** under way) or 0 (the layout is ours). */
static int layout_verdict(lease *l, frond_error *err) {
  frond_coord *c = l->c;
  layout_rec rec;
  int rc = read_layout(l, &rec, "", err);
  if (rc != 0)
    return rc;
  if (strncmp(rec.spec, CHANGING, strlen(CHANGING)) == 0)
    return frond__fail(err, FROND_ECOORD,
                       "the fleet's layout is being changed (from %s): "
                       "waiting for the change to finish",
                       rec.spec + strlen(CHANGING));
  if (strcmp(rec.spec, c->layout_spec) != 0)
    return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                       "this node's layout is %s, the fleet's is %s "
                       "(frond_meta); nodes under two layouts can issue equal "
                       "IDs: use the fleet's, or change it with `frond node "
                       "layout --set`",
                       c->layout_spec, rec.spec);
  c->floor_id = rec.floor;
  snprintf(c->prev_spec, sizeof(c->prev_spec), "%.*s",
           (int)sizeof(c->prev_spec) - 1, rec.previous);
  return 0;
}

/* ---- acquire, fence, regain, release ------------------------------------ */

static int lease_acquire(frond_coord *c, frond__coord_claim *out,
                         frond_error *err) {
  lease *l = c->impl;
  char ms[24], nodes[24];
  uint64_t limit = c->t.nodes ? (uint64_t)c->t.nodes : c->max_node + 1;
  const char *pv[4];
  int rc;

  rc = frond__lease_exec(
      l,
      "INSERT INTO frond_meta (name, value) VALUES ('layout', $1) "
      "ON CONFLICT (name) DO NOTHING",
      1, (const char *[]){c->layout_spec}, NULL, NULL, err);
  if (rc != 0 || (rc = layout_verdict(l, err)) != 0)
    return rc;
  if (limit > c->max_node + 1)
    limit = c->max_node + 1;
  new_token(l);
  snprintf(ms, sizeof(ms), "%" PRId64, c->t.lease_ms);
  snprintf(nodes, sizeof(nodes), "%" PRIu64, limit);
  pv[0] = c->owner, pv[1] = l->token, pv[2] = ms, pv[3] = nodes;
  for (int i = 0; i < ACQUIRE_TRIES; i++) {
    result r = {0}, cnt = {0};
    /* An expired row, the one this owner had before first. A concurrent
    ** taker re-checks lease_expires after our write and changes nothing. */
    rc = frond__lease_exec(
        l,
        "UPDATE frond_node SET owner = $1, token = $2, "
        "lease_expires = @now + $3, updated = @now "
        "WHERE node_id = (SELECT node_id FROM frond_node "
        "WHERE lease_expires < @now AND node_id < $4 "
        "ORDER BY CASE WHEN owner = $1 THEN 0 ELSE 1 END, node_id "
        "LIMIT 1) AND lease_expires < @now "
        "RETURNING node_id, high_water_ms",
        4, pv, &r, NULL, err);
    if (rc == 0 && r.n == 0)
      rc = frond__lease_exec(
          l,
          "INSERT INTO frond_node (node_id, owner, token, "
          "lease_expires, high_water_ms, updated) "
          "SELECT id, $1, $2, @now + $3, 0, @now FROM (SELECT "
          "CASE WHEN NOT EXISTS (SELECT 1 FROM frond_node WHERE "
          "node_id = 0) THEN 0 ELSE (SELECT MIN(a.node_id + 1) FROM "
          "frond_node a WHERE NOT EXISTS (SELECT 1 FROM frond_node b "
          "WHERE b.node_id = a.node_id + 1)) END AS id) free "
          "WHERE id IS NOT NULL AND id < $4 "
          "ON CONFLICT (node_id) DO NOTHING "
          "RETURNING node_id, high_water_ms",
          4, pv, &r, NULL, err);
    if (rc != 0) {
      free(r.rows);
      return rc;
    }
    if (r.n == 1) {
      l->node = (uint64_t)col_i64(&r.rows[0], 0);
      l->held = 1;
      memset(out, 0, sizeof(*out));
      out->node = l->node;
      out->fence_ms = col_i64(&r.rows[0], 1);
      free(r.rows);
      return 0;
    }
    free(r.rows);
    /* Nothing taken: either all rows are leased, or a racer took the row
    ** we aimed at. Count to tell them apart. */
    rc = frond__lease_exec(
        l,
        "SELECT COUNT(*) FROM frond_node WHERE node_id < $1 AND "
        "lease_expires >= @now",
        1, &pv[3], &cnt, NULL, err);
    if (rc == 0 && cnt.n == 1 &&
        strtoull(cnt.rows[0].col[0], NULL, 10) >= limit) {
      free(cnt.rows);
      return frond__fail(err, FROND_ENODE_RANGE,
                         "all %" PRIu64 " node IDs of %s are leased", limit,
                         c->uri);
    }
    free(cnt.rows);
    if (rc != 0)
      return rc;
  }
  return frond__fail(err, FROND_ECOORD,
                     "lease: no free node ID after %d tries (contention)",
                     ACQUIRE_TRIES);
}

static int lease_fence(frond_coord *c, int64_t fence_ms, frond_error *err) {
  lease *l = c->impl;
  char id[24], ms[24], f[24];
  const char *pv[5] = {id, l->token, ms, f, c->layout_spec};
  result r = {0};
  int64_t t0, t1;
  int rc;
  if (!l->held)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " is not leased", l->node);
  snprintf(id, sizeof(id), "%" PRIu64, l->node);
  snprintf(ms, sizeof(ms), "%" PRId64, c->t.lease_ms);
  snprintf(f, sizeof(f), "%" PRId64, fence_ms);
  t0 = frond__coord_now(c);
  l->answer_ms = c->t.lease_ms / 3;
  rc = frond__lease_exec(
      l,
      "UPDATE frond_node SET lease_expires = @now + $3, "
      "high_water_ms = $4, updated = @now "
      "WHERE node_id = $1 AND token = $2 AND EXISTS (SELECT 1 FROM "
      "frond_meta WHERE name = 'layout' AND value = $5) "
      "RETURNING @now",
      5, pv, &r, NULL, err);
  l->answer_ms =
      c->t.connect_ms > c->t.lease_ms / 3 ? c->t.connect_ms : c->t.lease_ms / 3;
  t1 = frond__coord_now(c);
  if (rc == 0 && r.n == 1) {
    atomic_store(&c->clock_offset_ms,
                 t0 + (t1 - t0) / 2 - col_i64(&r.rows[0], 0));
    atomic_store(&c->clock_checked, 1);
  }
  if (rc == 0 && r.n != 1 && (rc = layout_verdict(l, err)) == 0) {
    l->held = 0;
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "lease on node ID %" PRIu64 " was taken over", l->node);
  }
  free(r.rows);
  return rc;
}

/* Take our row back if it is still ours or expired; *after is the fence
** another holder stored meanwhile. */
static int lease_regain(frond_coord *c, int64_t *after, frond_error *err) {
  lease *l = c->impl;
  char id[24], ms[24], theirs[COL_MAX];
  const char *pv[5] = {id, c->owner, l->token, ms, theirs};
  result r = {0};
  int changes = 0, rc;
  int64_t fence;
  *after = 0;
  snprintf(id, sizeof(id), "%" PRIu64, l->node);
  snprintf(ms, sizeof(ms), "%" PRId64, c->t.lease_ms);
  rc = frond__lease_exec(
      l,
      "SELECT token, high_water_ms, CASE WHEN lease_expires < @now "
      "THEN 1 ELSE 0 END, owner FROM frond_node WHERE node_id = $1",
      1, pv, &r, NULL, err);
  if (rc == 0 && r.n != 1)
    rc = frond__fail(err, FROND_ENODE_ID_LOST, "node ID %" PRIu64 " has no row",
                     l->node);
  if (rc != 0) {
    free(r.rows);
    return rc;
  }
  snprintf(theirs, sizeof(theirs), "%s", r.rows[0].col[0]);
  fence = col_i64(&r.rows[0], 1);
  if (strcmp(theirs, l->token) == 0) {
    free(r.rows); /* still ours: the next fence write renews it */
    l->held = 1;
    return 0;
  }
  if (r.rows[0].col[2][0] != '1') {
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "node ID %" PRIu64 " is leased by %s", l->node,
                     r.rows[0].col[3]);
    free(r.rows);
    return rc;
  }
  free(r.rows);
  rc = frond__lease_exec(
      l,
      "UPDATE frond_node SET owner = $2, token = $3, "
      "lease_expires = @now + $4, updated = @now "
      "WHERE node_id = $1 AND token = $5 AND lease_expires < @now",
      5, pv, NULL, &changes, err);
  if (rc == 0 && changes != 1)
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "node ID %" PRIu64 " was taken by another node", l->node);
  if (rc == 0) {
    l->held = 1;
    *after = fence;
  }
  return rc;
}

static int lease_release(frond_coord *c, frond_error *err) {
  lease *l = c->impl;
  char id[24];
  const char *pv[2] = {id, l->token};
  if (!l->held)
    return 0;
  snprintf(id, sizeof(id), "%" PRIu64, l->node);
  l->held = 0;
  return frond__lease_exec(
      l,
      "UPDATE frond_node SET lease_expires = 0, updated = @now "
      "WHERE node_id = $1 AND token = $2",
      2, pv, NULL, NULL, err);
}

static int lease_list_lock(frond_coord *c, frond_coord_entry **out, size_t *n,
                           const char *lock, frond_error *err) {
  lease *l = c->impl;
  result r = {0};
  frond_coord_entry *e;
  char sql[300];
  int rc;
  snprintf(sql, sizeof(sql),
           "SELECT node_id, owner, lease_expires, high_water_ms, "
           "CASE WHEN lease_expires >= @now THEN 1 ELSE 0 END "
           "FROM frond_node ORDER BY node_id%s",
           lock);
  if ((rc = frond__lease_exec(l, sql, 0, NULL, &r, NULL, err)) != 0)
    return rc;
  if (!(e = calloc(r.n ? r.n : 1, sizeof(*e)))) {
    free(r.rows);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (size_t i = 0; i < r.n; i++) {
    e[i].node = (uint64_t)col_i64(&r.rows[i], 0);
    snprintf(e[i].owner, sizeof(e[i].owner), "%.*s",
             (int)sizeof(e[i].owner) - 1, r.rows[i].col[1]);
    e[i].expires_ms = col_i64(&r.rows[i], 2);
    e[i].fence_ms = col_i64(&r.rows[i], 3);
    e[i].live = r.rows[i].col[4][0] == '1';
  }
  *out = e;
  *n = r.n;
  free(r.rows);
  return 0;
}

static int lease_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                      frond_error *err) {
  return lease_list_lock(c, out, n, "", err);
}

/* ---- the fleet: clock and layout ---------------------------------------- */

/* The database's clock, corrected by half the round trip. */
static int lease_clock_offset(frond_coord *c, int64_t *offset_ms, char *ref,
                              size_t len, frond_error *err) {
  lease *l = c->impl;
  result r = {0};
  int64_t t0 = frond__coord_now(c), t1;
  int rc = frond__lease_exec(l, "SELECT @now", 0, NULL, &r, NULL, err);
  t1 = frond__coord_now(c);
  if (rc == 0 && r.n == 1)
    *offset_ms = t0 + (t1 - t0) / 2 - col_i64(&r.rows[0], 0);
  free(r.rows);
  snprintf(ref, len, "the database");
  return rc;
}

static int lease_layout_get(frond_coord *c, char *spec, size_t len,
                            int64_t *floor_id, frond_error *err) {
  layout_rec rec;
  int rc = read_layout(c->impl, &rec, "", err);
  const char *s = rec.spec;
  if (rc != 0)
    return rc;
  if (strncmp(s, CHANGING, strlen(CHANGING)) == 0)
    s += strlen(CHANGING);
  snprintf(spec, len, "%s", s);
  *floor_id = rec.floor;
  return 0;
}

static int set_meta(lease *l, const char *name, const char *value,
                    frond_error *err) {
  const char *pv[2] = {name, value};
  return frond__lease_exec(
      l,
      "INSERT INTO frond_meta (name, value) VALUES ($1, $2) "
      "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      2, pv, NULL, NULL, err);
}

/*
** Change the recorded layout. Phase 1 (committed) marks it "changing:",
** which every fence write checks: none succeeds from then on. Phase 2, in
** one transaction, locks every row (FOR UPDATE waits for a write that began
** before phase 1), refuses while a lease is live, computes the floor from
** the fences and records the new layout.
*/
/* The holders among e[0..n) into who; their count. */
static int live_rows(const frond_coord_entry *e, size_t n, char *who,
                     size_t len) {
  int live = 0;
  who[0] = 0;
  for (size_t i = 0; i < n; i++)
    if (e[i].live && ++live && strlen(who) + 40 < len)
      snprintf(who + strlen(who), len - strlen(who), "%s%" PRIu64 " (%s)",
               live > 1 ? ", " : "", e[i].node, e[i].owner);
  return live;
}

static int in_use(int live, const char *who, frond_error *err) {
  return frond__fail(err, FROND_ENODE_IN_USE,
                     "%d node ID%s leased (%s): stop every node before "
                     "changing the layout",
                     live, live == 1 ? " is" : "s are", who);
}

static int lease_layout_set(frond_coord *c, const char *spec, int64_t *floor_id,
                            frond_error *err) {
  lease *l = c->impl;
  char marked[COL_MAX + 16], floor[24], who[256];
  const char *pv[2];
  frond_coord_entry *e = NULL;
  layout_rec rec;
  size_t n = 0;
  int rc, changes = 0, live;

  /* Leave running nodes alone: refuse before touching anything. */
  if ((rc = lease_list(c, &e, &n, err)) != 0)
    return rc;
  live = live_rows(e, n, who, sizeof(who));
  free(e);
  if (live)
    return in_use(live, who, err);
  if ((rc = read_layout(l, &rec, "", err)) != 0)
    return rc;
  if (strncmp(rec.spec, CHANGING, strlen(CHANGING)) == 0)
    snprintf(marked, sizeof(marked), "%s", rec.spec);
  else
    snprintf(marked, sizeof(marked), CHANGING "%s", rec.spec);
  pv[0] = marked, pv[1] = rec.spec;
  rc = frond__lease_exec(
      l,
      "UPDATE frond_meta SET value = $1 WHERE name = 'layout' AND "
      "value = $2",
      2, pv, NULL, &changes, err);
  if (rc == 0 && changes != 1)
    rc = set_meta(l, "layout", marked, err); /* none recorded yet */
  if (rc != 0)
    return rc;
  if ((rc = frond__lease_exec(l, l->is_pg ? "BEGIN" : "BEGIN IMMEDIATE", 0,
                              NULL, NULL, NULL, err)) != 0)
    return rc;
  if ((rc = lease_list_lock(c, &e, &n, "@lock", err)) != 0)
    goto rollback;
  if ((live = live_rows(e, n, who, sizeof(who))) != 0) {
    /* A node started in between: put the old layout back. */
    free(e);
    rc = set_meta(l, "layout", marked + strlen(CHANGING), err);
    if (rc == 0)
      rc = frond__lease_exec(l, "COMMIT", 0, NULL, NULL, NULL, err);
    return rc ? rc : in_use(live, who, err);
  }
  *floor_id = frond__coord_floor(&c->layout, e, n);
  free(e);
  if (*floor_id < rec.floor)
    *floor_id = rec.floor;
  snprintf(floor, sizeof(floor), "%" PRId64, *floor_id);
  if ((rc = set_meta(l, "layout_floor", floor, err)) != 0 ||
      (rc = set_meta(l, "layout_previous", marked + strlen(CHANGING), err)) !=
          0 ||
      (rc = set_meta(l, "layout", spec, err)) != 0)
    goto rollback;
  return frond__lease_exec(l, "COMMIT", 0, NULL, NULL, NULL, err);
rollback:
  frond__lease_exec(l, "ROLLBACK", 0, NULL, NULL, NULL, NULL);
  return rc;
}

static void lease_close(frond_coord *c) {
  lease *l = c->impl;
  if (!l)
    return;
  frond__lease_drop(l);
  free(l);
}

const frond_coord_methods frond__coord_lease_methods = {
    .version = 2,
    .scheme = "lease+",
    .open = lease_open,
    .acquire = lease_acquire,
    .fence = lease_fence,
    .regain = lease_regain,
    .release = lease_release,
    .list = lease_list,
    .clock_offset = lease_clock_offset,
    .layout_get = lease_layout_get,
    .layout_set = lease_layout_set,
    .close = lease_close,
    /* Only the database hands rows out: a start never comes from the
    ** cache (the cache still holds the fence ahead of every write). */
    .cache_fallback = 0,
    .fenced = 1,
};
