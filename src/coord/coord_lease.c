/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_lease.c -- node IDs as leased rows of a database table.
**
** This file contains the coordinator for deployments with a database and
** no ZooKeeper: "lease+" followed by any URI of the SQL layer (db.h):
** lease+sqlite:///path.db, lease+postgresql://..., lease+mysql://...
** Its statements are written once and run on every engine the layer
** speaks; our tunables (lease_ms, nodes, ...) come out of the URI's query
** and the rest of it goes to the engine.
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
** exactly one statement change it: the UPDATE re-reads lease_expires
** under the row's lock (READ COMMITTED on PostgreSQL and MySQL, the
** write lock on SQLite); the INSERT meets the primary key.
**
** high_water_ms is the node's FENCE: no ID above it is issued under the
** row's node ID, and the next holder starts above it. It is written, and
** the lease renewed, by one UPDATE guarded by the holder's token and by the
** fleet's layout (compared bytewise, whatever the collation), so a write
** that arrives after a takeover, or after a layout change, changes
** nothing. Lease times come from the database's clock; safety does not
** depend on them (coord.c's watchdog stops a node at 9/10 of its lease
** only so that a takeover finds it stopped).
**
** A fence write gets a third of the lease, all its round trips together
** (MySQL has no UPDATE ... RETURNING: four of them): past it the layer
** closes the connection and the write's outcome is unknown, which the
** fence rule allows for. A partitioned node must not hang in a renewal.
** Other statements get connect_ms or that third, whichever is longer.
*/
#include "coord/coord.h"
#include "base/base.h"
#include "store/db.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define ACQUIRE_TRIES 64
#define CHANGING "changing:"
#define META_MAX 256

typedef struct {
  frond_coord *c;
  frond_db *db;
  char token[40];
  uint64_t node;
  int held;
} lease;

/* MySQL gets ENGINE=InnoDB spelled out: a table in an engine without
** transactions would be refused (db.h) anyway. */
#define NODE_DDL                                                               \
  "CREATE TABLE IF NOT EXISTS frond_node ("                                    \
  "node_id BIGINT PRIMARY KEY, owner VARCHAR(128) NOT NULL, "                  \
  "token VARCHAR(40) NOT NULL, lease_expires BIGINT NOT NULL, "                \
  "high_water_ms BIGINT NOT NULL, updated BIGINT NOT NULL)"
#define META_DDL                                                               \
  "CREATE TABLE IF NOT EXISTS frond_meta ("                                    \
  "name VARCHAR(64) PRIMARY KEY, value VARCHAR(256) NOT NULL)"

/* The row a write gave itself, found again by its owner and fresh token
** (the RETURNING emulation's read-back). */
#define TAKEN                                                                  \
  "SELECT node_id, high_water_ms FROM frond_node WHERE owner = $1 "            \
  "AND token = $2"

/* The layer's failure as the coordinator's: the database could not be
** used (COORD), in the engine's words; a bad URI is the caller's (INVAL). */
static int coord_err(int rc, frond_error *err) {
  char words[sizeof(err->message)];
  if (rc != FROND_ESTORE && rc != FROND_ESTORE_URI)
    return rc;
  snprintf(words, sizeof(words), "%s", err ? err->message : "");
  return frond__fail(err, rc == FROND_ESTORE ? FROND_ECOORD : FROND_EINVAL,
                     "lease: %s", words);
}

static int run(lease *l, const char *sql, const frond_db_arg *a, int n,
               frond_db_result *r, frond_error *err) {
  return coord_err(frond__db_exec(l->db, sql, a, n, r, err), err);
}

/* Our tunables come out of the query; the rest is left for the engine. */
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
    } else if (n > 0) {
      if (o + n + 2 >= len)
        return frond__fail(err, FROND_EINVAL, "URI too long");
      o += (size_t)snprintf(rest + o, len - o, "%s%s", o ? "&" : "", part);
    }
    q += n + (q[n] == '&');
  }
  return 0;
}

int frond__lease_parse_uri(frond_coord *c, const char *uri, char *dburi,
                           size_t len, frond_error *err) {
  const char *target = uri + strlen("lease+");
  const char *qm = strchr(target, '?');
  char rest[FROND_COORD_URI_MAX];
  frond_db_uri u;
  int rc;

  if (strncmp(uri, "lease+", 6) != 0)
    return frond__fail(err, FROND_EINVAL, "not a lease URI: '%s'", uri);
  snprintf(dburi, len, "%.*s",
           (int)(qm ? (size_t)(qm - target) : strlen(target)), target);
  if ((rc = split_query(c, qm ? qm + 1 : NULL, rest, sizeof(rest), err)) != 0)
    return rc;
  if (rest[0] && strncmp(dburi, "sqlite:", 7) == 0)
    return frond__fail(err, FROND_EINVAL, "unknown lease option '%s'", rest);
  if (rest[0])
    snprintf(dburi + strlen(dburi), len - strlen(dburi), "?%s", rest);
  return coord_err(frond__db_uri_parse(dburi, &u, err), err);
}

static int lease_open(frond_coord *c, const char *uri, frond_error *err) {
  char base[FROND_LEASE_DB_URI_MAX];
  int64_t third = c->t.lease_ms / 3;
  frond_db_options o;
  lease *l;
  int rc, mysql;

  if ((rc = frond__lease_parse_uri(c, uri, base, sizeof(base), err)) != 0)
    return rc;
  if (!(l = calloc(1, sizeof(*l))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  l->c = c;
  c->validity_ms = c->t.lease_ms - c->t.lease_ms / 10;
  memset(&o, 0, sizeof(o));
  o.connect_timeout_ms = c->t.connect_ms;
  o.statement_timeout_ms = c->t.connect_ms > third ? c->t.connect_ms : third;
  o.answer_timeout_ms = o.statement_timeout_ms;
  o.application_name = "frond-lease";
  if ((rc = coord_err(frond__db_open(base, &o, &l->db, err), err)) != 0) {
    free(l);
    return rc;
  }
  mysql = strcmp(frond__db_engine(l->db), "mysql") == 0;
  if ((rc = frond__db_ensure_table(l->db, "frond_node",
                                   mysql ? NODE_DDL " ENGINE=InnoDB" : NODE_DDL,
                                   err)) != 0 ||
      (rc = frond__db_ensure_table(l->db, "frond_meta",
                                   mysql ? META_DDL " ENGINE=InnoDB" : META_DDL,
                                   err)) != 0) {
    frond__db_close(l->db);
    free(l);
    return coord_err(rc, err);
  }
  c->impl = l;
  return 0;
}

static void new_token(lease *l) {
  uint64_t a[2] = {0, 0};
  if (getrandom(a, sizeof(a), 0) != (ssize_t)sizeof(a)) {
    a[0] = (uint64_t)frond__mono_ns() ^ ((uint64_t)getpid() << 32);
    a[1] = a[0] * 31;
  }
  snprintf(l->token, sizeof(l->token), "%016" PRIx64 "%016" PRIx64, a[0], a[1]);
}

/* ---- the layout record -------------------------------------------------- */

typedef struct {
  char spec[META_MAX]; /* "changing:<spec>" during a change */
  char previous[META_MAX];
  int64_t floor;
} layout_rec;

static int read_layout(lease *l, layout_rec *rec, frond_error *err) {
  frond_db_result r = {0};
  int rc, i;
  memset(rec, 0, sizeof(*rec));
  rc = run(l,
           "SELECT name, value FROM frond_meta WHERE name IN ('layout', "
           "'layout_floor', 'layout_previous')",
           NULL, 0, &r, err);
  for (i = 0; rc == 0 && i < r.nrows; i++) {
    const char *name = frond__db_get_text(&r, i, 0);
    const char *value = frond__db_get_text(&r, i, 1);
    if (name == NULL || value == NULL)
      continue;
    if (strcmp(name, "layout") == 0)
      snprintf(rec->spec, sizeof(rec->spec), "%s", value);
    else if (strcmp(name, "layout_previous") == 0)
      snprintf(rec->previous, sizeof(rec->previous), "%s", value);
    else
      frond__parse_i64(value, strlen(value), &rec->floor);
  }
  frond__db_result_free(&r);
  return rc;
}

/* Why a guarded write changed nothing: LAYOUT_MISMATCH, COORD (a change is
** under way) or 0 (the layout is ours). */
static int layout_verdict(lease *l, frond_error *err) {
  frond_coord *c = l->c;
  layout_rec rec;
  int rc = read_layout(l, &rec, err);
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

/* The node ID and fence of a row a write just took, from r. */
static int took(lease *l, const frond_db_result *r, frond__coord_claim *out,
                frond_error *err) {
  int64_t node = 0;
  int rc = frond__db_get_int(r, 0, 0, &node, err);
  memset(out, 0, sizeof(*out));
  if (rc == 0)
    rc = frond__db_get_int(r, 0, 1, &out->fence_ms, err);
  if (rc != 0)
    return coord_err(rc, err);
  l->node = (uint64_t)node;
  l->held = 1;
  out->node = l->node;
  return 0;
}

static int lease_acquire(frond_coord *c, frond__coord_claim *out,
                         frond_error *err) {
  lease *l = c->impl;
  uint64_t limit = c->t.nodes ? (uint64_t)c->t.nodes : c->max_node + 1;
  frond_db_arg a[4];
  frond_db_result r = {0};
  int64_t live;
  int rc, i;

  l->held = 0;
  a[0] = frond__db_text(c->layout_spec);
  rc = run(l,
           "INSERT INTO frond_meta (name, value) VALUES ('layout', $1) "
           "{if_absent:name}",
           a, 1, NULL, err);
  if (rc != 0 || (rc = layout_verdict(l, err)) != 0)
    return rc;
  if (limit > c->max_node + 1)
    limit = c->max_node + 1;
  new_token(l);
  a[0] = frond__db_text(c->owner);
  a[1] = frond__db_text(l->token);
  a[2] = frond__db_int(c->t.lease_ms);
  a[3] = frond__db_int((int64_t)limit);
  for (i = 0; i < ACQUIRE_TRIES; i++) {
    /* An expired row, the one this owner had before first. A concurrent
    ** taker re-checks lease_expires after our write and changes nothing.
    ** The candidate is read through a derived table: MySQL does not let
    ** an UPDATE read its own table in a plain subquery. */
    rc = coord_err(
        frond__db_write_returning(
            l->db,
            "UPDATE frond_node SET owner = $1, token = $2, "
            "lease_expires = {now_ms} + $3, updated = {now_ms} "
            "WHERE node_id = (SELECT node_id FROM (SELECT node_id FROM "
            "frond_node WHERE lease_expires < {now_ms} AND node_id < $4 "
            "ORDER BY CASE WHEN owner = $1 THEN 0 ELSE 1 END, node_id "
            "LIMIT 1) candidate) AND lease_expires < {now_ms}",
            "node_id, high_water_ms", TAKEN, a, 4, &r, err),
        err);
    if (rc == 0 && r.nrows == 0)
      rc = coord_err(
          frond__db_write_returning(
              l->db,
              "INSERT INTO frond_node (node_id, owner, token, "
              "lease_expires, high_water_ms, updated) "
              "SELECT id, $1, $2, {now_ms} + $3, 0, {now_ms} FROM (SELECT "
              "CASE WHEN NOT EXISTS (SELECT 1 FROM frond_node WHERE "
              "node_id = 0) THEN 0 ELSE (SELECT MIN(a.node_id + 1) FROM "
              "frond_node a WHERE NOT EXISTS (SELECT 1 FROM frond_node b "
              "WHERE b.node_id = a.node_id + 1)) END AS id) free "
              "WHERE id IS NOT NULL AND id < $4 {if_absent:node_id}",
              "node_id, high_water_ms", TAKEN, a, 4, &r, err),
          err);
    if (rc == 0 && r.nrows == 1)
      rc = took(l, &r, out, err);
    if (rc != 0 || l->held) {
      frond__db_result_free(&r);
      return rc;
    }
    /* Nothing taken: either all rows are leased, or a racer took the row
    ** we aimed at. Count to tell them apart. */
    rc = run(l,
             "SELECT COUNT(*) FROM frond_node WHERE node_id < $1 AND "
             "lease_expires >= {now_ms}",
             &a[3], 1, &r, err);
    if (rc == 0 && frond__db_get_int(&r, 0, 0, &live, NULL) == 0 &&
        (uint64_t)live >= limit) {
      frond__db_result_free(&r);
      return frond__fail(err, FROND_ENODE_RANGE,
                         "all %" PRIu64 " node IDs of %s are leased", limit,
                         c->uri);
    }
    if (rc != 0) {
      frond__db_result_free(&r);
      return rc;
    }
  }
  frond__db_result_free(&r);
  return frond__fail(err, FROND_ECOORD,
                     "lease: no free node ID after %d tries (contention)",
                     ACQUIRE_TRIES);
}

static int lease_fence(frond_coord *c, int64_t fence_ms, frond_error *err) {
  lease *l = c->impl;
  frond_db_arg a[5];
  frond_db_result r = {0};
  int64_t t0, t1, db_now = 0;
  int rc;
  if (!l->held)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " is not leased", l->node);
  a[0] = frond__db_int((int64_t)l->node);
  a[1] = frond__db_text(l->token);
  a[2] = frond__db_int(c->t.lease_ms);
  a[3] = frond__db_int(fence_ms);
  a[4] = frond__db_text(c->layout_spec);
  t0 = frond__coord_now(c);
  frond__db_set_deadline(l->db, frond__mono_ns() + c->t.lease_ms / 3 * 1000000);
  rc = coord_err(
      frond__db_write_returning(
          l->db,
          "UPDATE frond_node SET lease_expires = {now_ms} + $3, "
          "high_water_ms = $4, updated = {now_ms} "
          "WHERE node_id = $1 AND token = $2 AND EXISTS (SELECT 1 FROM "
          "frond_meta WHERE name = 'layout' AND {binary:value} = $5)",
          "{now_ms}",
          "SELECT {now_ms} FROM frond_node WHERE node_id = $1 AND token = $2",
          a, 5, &r, err),
      err);
  frond__db_set_deadline(l->db, 0);
  t1 = frond__coord_now(c);
  if (rc == 0 && r.nrows == 1 &&
      frond__db_get_int(&r, 0, 0, &db_now, NULL) == 0) {
    atomic_store(&c->clock_offset_ms, t0 + (t1 - t0) / 2 - db_now);
    atomic_store(&c->clock_checked, 1);
  }
  if (rc == 0 && r.nrows != 1 && (rc = layout_verdict(l, err)) == 0) {
    l->held = 0;
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "lease on node ID %" PRIu64 " was taken over", l->node);
  }
  frond__db_result_free(&r);
  return rc;
}

/* Take our row back if it is still ours or expired; *after is the fence
** another holder stored meanwhile. */
static int lease_regain(frond_coord *c, int64_t *after, frond_error *err) {
  lease *l = c->impl;
  frond_db_arg a[5];
  frond_db_result r = {0};
  char theirs[48], owner[FROND_COORD_OWNER_MAX];
  const char *t;
  int64_t fence = 0, expired = 0;
  int rc;
  *after = 0;
  a[0] = frond__db_int((int64_t)l->node);
  rc = run(l,
           "SELECT token, high_water_ms, CASE WHEN lease_expires < {now_ms} "
           "THEN 1 ELSE 0 END, owner FROM frond_node WHERE node_id = $1",
           a, 1, &r, err);
  if (rc == 0 && r.nrows != 1)
    rc = frond__fail(err, FROND_ENODE_ID_LOST, "node ID %" PRIu64 " has no row",
                     l->node);
  if (rc == 0 && ((rc = frond__db_get_int(&r, 0, 1, &fence, err)) != 0 ||
                  (rc = frond__db_get_int(&r, 0, 2, &expired, err)) != 0))
    rc = coord_err(rc, err);
  if (rc != 0) {
    frond__db_result_free(&r);
    return rc;
  }
  t = frond__db_get_text(&r, 0, 0);
  snprintf(theirs, sizeof(theirs), "%s", t ? t : "");
  t = frond__db_get_text(&r, 0, 3);
  snprintf(owner, sizeof(owner), "%s", t ? t : "");
  frond__db_result_free(&r);
  if (strcmp(theirs, l->token) == 0) {
    l->held = 1; /* still ours: the next fence write renews it */
    return 0;
  }
  if (!expired)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " is leased by %s", l->node, owner);
  a[1] = frond__db_text(c->owner);
  a[2] = frond__db_text(l->token);
  a[3] = frond__db_int(c->t.lease_ms);
  a[4] = frond__db_text(theirs);
  rc = run(l,
           "UPDATE frond_node SET owner = $2, token = $3, "
           "lease_expires = {now_ms} + $4, updated = {now_ms} "
           "WHERE node_id = $1 AND token = $5 AND lease_expires < {now_ms}",
           a, 5, &r, err);
  if (rc == 0 && r.changes != 1)
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "node ID %" PRIu64 " was taken by another node", l->node);
  if (rc == 0) {
    l->held = 1;
    *after = fence;
  }
  frond__db_result_free(&r);
  return rc;
}

static int lease_release(frond_coord *c, frond_error *err) {
  lease *l = c->impl;
  frond_db_arg a[2];
  if (!l->held)
    return 0;
  l->held = 0;
  a[0] = frond__db_int((int64_t)l->node);
  a[1] = frond__db_text(l->token);
  return run(l,
             "UPDATE frond_node SET lease_expires = 0, updated = {now_ms} "
             "WHERE node_id = $1 AND token = $2",
             a, 2, NULL, err);
}

/* Every row, sorted; locked against writers when `lock` (inside the
** layout change's transaction). */
static int list_rows(lease *l, frond_coord_entry **out, size_t *n, int lock,
                     frond_error *err) {
  frond_db_result r = {0};
  frond_coord_entry *e;
  int rc, i;
  int64_t v;
  rc = run(l,
           lock ? "SELECT node_id, owner, lease_expires, high_water_ms, "
                  "CASE WHEN lease_expires >= {now_ms} THEN 1 ELSE 0 END "
                  "FROM frond_node ORDER BY node_id{for_update}"
                : "SELECT node_id, owner, lease_expires, high_water_ms, "
                  "CASE WHEN lease_expires >= {now_ms} THEN 1 ELSE 0 END "
                  "FROM frond_node ORDER BY node_id",
           NULL, 0, &r, err);
  if (rc != 0)
    return rc;
  if (!(e = calloc(r.nrows ? (size_t)r.nrows : 1, sizeof(*e)))) {
    frond__db_result_free(&r);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (i = 0; i < r.nrows; i++) {
    const char *owner = frond__db_get_text(&r, i, 1);
    if (frond__db_get_int(&r, i, 0, &v, NULL) == 0)
      e[i].node = (uint64_t)v;
    snprintf(e[i].owner, sizeof(e[i].owner), "%.*s",
             (int)sizeof(e[i].owner) - 1, owner ? owner : "");
    frond__db_get_int(&r, i, 2, &e[i].expires_ms, NULL);
    frond__db_get_int(&r, i, 3, &e[i].fence_ms, NULL);
    e[i].live = frond__db_get_int(&r, i, 4, &v, NULL) == 0 && v == 1;
  }
  *out = e;
  *n = (size_t)r.nrows;
  frond__db_result_free(&r);
  return 0;
}

static int lease_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                      frond_error *err) {
  return list_rows(c->impl, out, n, 0, err);
}

/* ---- the fleet: clock and layout ---------------------------------------- */

/* The database's clock, corrected by half the round trip. */
static int lease_clock_offset(frond_coord *c, int64_t *offset_ms, char *ref,
                              size_t len, frond_error *err) {
  lease *l = c->impl;
  frond_db_result r = {0};
  int64_t t0 = frond__coord_now(c), t1, db_now = 0;
  int rc = run(l, "SELECT {now_ms}", NULL, 0, &r, err);
  t1 = frond__coord_now(c);
  if (rc == 0 && (rc = frond__db_get_int(&r, 0, 0, &db_now, err)) != 0)
    rc = coord_err(rc, err);
  if (rc == 0)
    *offset_ms = t0 + (t1 - t0) / 2 - db_now;
  frond__db_result_free(&r);
  snprintf(ref, len, "the database");
  return rc;
}

static int lease_layout_get(frond_coord *c, char *spec, size_t len,
                            int64_t *floor_id, frond_error *err) {
  layout_rec rec;
  int rc = read_layout(c->impl, &rec, err);
  const char *s = rec.spec;
  if (rc != 0)
    return rc;
  if (strncmp(s, CHANGING, strlen(CHANGING)) == 0)
    s += strlen(CHANGING);
  snprintf(spec, len, "%s", s);
  *floor_id = rec.floor;
  return 0;
}

/* name = value in frond_meta: an UPDATE (it counts the row even when the
** value is the same), else an INSERT; a racing INSERT means the UPDATE
** now finds the row. */
static int set_meta(lease *l, const char *name, const char *value,
                    frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[2];
  int rc, i;
  a[0] = frond__db_text(name);
  a[1] = frond__db_text(value);
  for (i = 0, rc = 0; i < 3 && rc == 0; i++) {
    rc = run(l, "UPDATE frond_meta SET value = $2 WHERE name = $1", a, 2, &r,
             err);
    if (rc != 0 || r.changes == 1)
      break;
    rc = run(l,
             "INSERT INTO frond_meta (name, value) VALUES ($1, $2) "
             "{if_absent:name}",
             a, 2, &r, err);
    if (rc == 0 && r.changes == 1)
      break;
  }
  frond__db_result_free(&r);
  return rc;
}

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

/*
** Change the recorded layout. Phase 1 (committed) marks it "changing:",
** which every fence write checks: none succeeds from then on. Phase 2, in
** one transaction, locks every row (FOR UPDATE waits for a write that began
** before phase 1), refuses while a lease is live, computes the floor from
** the fences and records the new layout.
*/
static int lease_layout_set(frond_coord *c, const char *spec, int64_t *floor_id,
                            frond_error *err) {
  lease *l = c->impl;
  char marked[META_MAX + 16], floor[24], who[256];
  frond_coord_entry *e = NULL;
  frond_db_result r = {0};
  frond_db_arg a[2];
  layout_rec rec;
  size_t n = 0;
  int rc, live;

  /* Leave running nodes alone: refuse before touching anything. */
  if ((rc = lease_list(c, &e, &n, err)) != 0)
    return rc;
  live = live_rows(e, n, who, sizeof(who));
  free(e);
  if (live)
    return in_use(live, who, err);
  if ((rc = read_layout(l, &rec, err)) != 0)
    return rc;
  if (strncmp(rec.spec, CHANGING, strlen(CHANGING)) == 0)
    snprintf(marked, sizeof(marked), "%s", rec.spec);
  else
    snprintf(marked, sizeof(marked), CHANGING "%s", rec.spec);
  a[0] = frond__db_text(marked);
  a[1] = frond__db_text(rec.spec);
  rc = run(l,
           "UPDATE frond_meta SET value = $1 WHERE name = 'layout' AND "
           "{binary:value} = $2",
           a, 2, &r, err);
  if (rc == 0 && r.changes != 1)
    rc = set_meta(l, "layout", marked, err); /* none recorded yet */
  frond__db_result_free(&r);
  if (rc != 0)
    return rc;
  if ((rc = coord_err(frond__db_begin(l->db, err), err)) != 0)
    return rc;
  if ((rc = list_rows(l, &e, &n, 1, err)) != 0)
    goto rollback;
  if ((live = live_rows(e, n, who, sizeof(who))) != 0) {
    /* A node started in between: put the old layout back. */
    free(e);
    rc = set_meta(l, "layout", marked + strlen(CHANGING), err);
    if (rc == 0)
      rc = coord_err(frond__db_commit(l->db, err), err);
    else
      frond__db_rollback(l->db);
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
  return coord_err(frond__db_commit(l->db, err), err);
rollback:
  frond__db_rollback(l->db);
  return rc;
}

/* A fact in frond_meta beside the layout: inserted when absent (one
** INSERT wins a race), then read back. */
static int lease_fact(frond_coord *c, const char *name, const char *value,
                      char *recorded, size_t len, char *where, size_t wlen,
                      frond_error *err) {
  lease *l = c->impl;
  frond_db_result r = {0};
  frond_db_arg a[2];
  const char *v;
  int rc;
  snprintf(where, wlen, "the lease database (frond_meta)");
  a[0] = frond__db_text(name);
  a[1] = frond__db_text(value);
  if ((rc = run(l,
                "INSERT INTO frond_meta (name, value) VALUES ($1, $2) "
                "{if_absent:name}",
                a, 2, NULL, err)) == 0 &&
      (rc = run(l, "SELECT value FROM frond_meta WHERE name = $1", a, 1, &r,
                err)) == 0) {
    if (r.nrows != 1 || (v = frond__db_get_text(&r, 0, 0)) == NULL)
      rc = frond__fail(err, FROND_ECOORD, "lease: frond_meta: no value of %s",
                       name);
    else
      snprintf(recorded, len, "%s", v);
  }
  frond__db_result_free(&r);
  return rc;
}

static void lease_close(frond_coord *c) {
  lease *l = c->impl;
  if (!l)
    return;
  frond__db_close(l->db);
  free(l);
}

const frond_coord_methods frond__coord_lease_methods = {
    .iVersion = 2,
    .zScheme = "lease+",
    .xOpen = lease_open,
    .xAcquire = lease_acquire,
    .xFence = lease_fence,
    .xRegain = lease_regain,
    .xRelease = lease_release,
    .xList = lease_list,
    .xClockOffset = lease_clock_offset,
    .xLayoutGet = lease_layout_get,
    .xLayoutSet = lease_layout_set,
    .xClose = lease_close,
    /* Only the database hands rows out: a start never comes from the
    ** cache (the cache still holds the fence ahead of every write). */
    .bCacheFallback = 0,
    .bFenced = 1,
    .xFact = lease_fact,
};
