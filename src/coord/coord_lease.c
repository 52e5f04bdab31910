/*
** coord_lease.c -- node IDs as leased rows of a database table.
**
** This file contains the coordinator for deployments with a database and
** no ZooKeeper: "lease+sqlite:///path.db" or "lease+postgresql://...".
**
**   CREATE TABLE frond_node (
**     node_id       BIGINT PRIMARY KEY,
**     owner         VARCHAR(128) NOT NULL,  -- ip:port of the holder
**     token         VARCHAR(40) NOT NULL,   -- random, one per acquire
**     lease_expires BIGINT NOT NULL,        -- unix ms, database clock
**     high_water_ms BIGINT NOT NULL,        -- last reported time
**     updated       BIGINT NOT NULL)        -- unix ms of the last write
**
** A node takes a free or expired row with one conditional statement (its
** own transaction): either an UPDATE of a row whose lease has expired (the
** one this owner held before first), or an INSERT of the lowest node ID
** that has no row yet. When two nodes race for one row, the database lets
** exactly one statement change it; the other retries with the next row or
** fails with NODE_RANGE when none is left. The lease is renewed every third
** of its length, only while the token is still ours; the node stops
** issuing (coord.c's watchdog) when lease_ms * 9/10 has passed since the
** last renewal was sent, so it stops before the database lets another node
** take the row. All times in the table come from the database's clock.
*/
#include "coord/coord.h"
#include "core/internal.h"
#include "store/store.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_COLS 5
#define COL_MAX 128
#define ACQUIRE_TRIES 64

typedef struct {
  char col[MAX_COLS][COL_MAX];
} row;

typedef struct {
  row *rows;
  size_t n, cap;
} result;

typedef struct {
  sqlite3 *db;
  PGconn *pg;
  char conninfo[2 * FROND_COORD_URI_MAX + 2];
  char token[40];
  uint64_t node;
  int held;
} lease;

static const char *now_sqlite =
    "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
static const char *now_pg =
    "(extract(epoch from clock_timestamp()) * 1000)::bigint";

static const char *schema =
    "CREATE TABLE IF NOT EXISTS frond_node ("
    "node_id BIGINT PRIMARY KEY, owner VARCHAR(128) NOT NULL, "
    "token VARCHAR(40) NOT NULL, lease_expires BIGINT NOT NULL, "
    "high_water_ms BIGINT NOT NULL, updated BIGINT NOT NULL)";

/* Statements are written once with $n parameters and @now; this turns them
** into the dialect ($n stays for PostgreSQL, ?n for SQLite). */
static int render(const lease *l, const char *sql, char *out, size_t len) {
  const char *now = l->pg ? now_pg : now_sqlite;
  size_t o = 0, nl = strlen(now);
  for (const char *p = sql; *p; p++) {
    if (strncmp(p, "@now", 4) == 0) {
      if (o + nl >= len)
        return -1;
      memcpy(out + o, now, nl);
      o += nl;
      p += 3;
      continue;
    }
    if (o + 1 >= len)
      return -1;
    out[o++] = (*p == '$' && !l->pg) ? '?' : *p;
  }
  out[o] = 0;
  return 0;
}

static int add_row(result *r, frond_error *err) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 8;
    row *nr = realloc(r->rows, cap * sizeof(*nr));
    if (!nr)
      return frond__fail(err, FROND_ENOMEM, NULL);
    r->rows = nr;
    r->cap = cap;
  }
  memset(&r->rows[r->n], 0, sizeof(row));
  r->n++;
  return 0;
}

static int exec_sqlite(lease *l, const char *sql, int np, const char **pv,
                       result *r, int *changes, frond_error *err) {
  sqlite3_stmt *st = NULL;
  int rc;
  if (sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK)
    return frond__fail(err, FROND_ECOORD, "lease (sqlite): %s",
                       sqlite3_errmsg(l->db));
  for (int i = 0; i < np; i++) {
    int64_t v;
    if (frond__parse_i64(pv[i], strlen(pv[i]), &v) == 0)
      sqlite3_bind_int64(st, i + 1, v);
    else
      sqlite3_bind_text(st, i + 1, pv[i], -1, SQLITE_STATIC);
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (r) {
      if ((rc = add_row(r, err)) != 0) {
        sqlite3_finalize(st);
        return rc;
      }
      for (int i = 0; i < sqlite3_column_count(st) && i < MAX_COLS; i++) {
        const unsigned char *t = sqlite3_column_text(st, i);
        snprintf(r->rows[r->n - 1].col[i], COL_MAX, "%s",
                 t ? (const char *)t : "");
      }
    }
  }
  if (rc != SQLITE_DONE) {
    rc = frond__fail(err, FROND_ECOORD, "lease (sqlite): %s",
                     sqlite3_errmsg(l->db));
    sqlite3_finalize(st);
    return rc;
  }
  if (changes)
    *changes = sqlite3_changes(l->db);
  sqlite3_finalize(st);
  return 0;
}

static int exec_pg(lease *l, const char *sql, int np, const char **pv,
                   result *r, int *changes, frond_error *err) {
  PGresult *res = NULL;
  ExecStatusType s;
  for (int attempt = 0; attempt < 2; attempt++) {
    if (PQstatus(l->pg) != CONNECTION_OK)
      PQreset(l->pg);
    res = PQexecParams(l->pg, sql, np, NULL, pv, NULL, NULL, 0);
    s = PQresultStatus(res);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
      break;
    if (PQstatus(l->pg) == CONNECTION_OK || attempt == 1) {
      int rc = frond__fail(err, FROND_ECOORD, "lease (postgresql): %s",
                           PQerrorMessage(l->pg));
      PQclear(res);
      return rc;
    }
    PQclear(res);
    res = NULL;
  }
  if (r) {
    for (int i = 0; i < PQntuples(res); i++) {
      int rc = add_row(r, err);
      if (rc != 0) {
        PQclear(res);
        return rc;
      }
      for (int j = 0; j < PQnfields(res) && j < MAX_COLS; j++)
        snprintf(r->rows[r->n - 1].col[j], COL_MAX, "%s",
                 PQgetvalue(res, i, j));
    }
  }
  if (changes) {
    const char *t = PQcmdTuples(res);
    *changes = t && *t ? atoi(t) : 0;
  }
  PQclear(res);
  return 0;
}

/* Run one statement (autocommit: one transaction). Rows go to r when not
** NULL; *changes receives the rows written. */
static int exec(lease *l, const char *sql, int np, const char **pv, result *r,
                int *changes, frond_error *err) {
  char q[2048];
  if (render(l, sql, q, sizeof(q)) != 0)
    return frond__fail(err, FROND_EINVAL, "statement too long");
  if (l->pg)
    return exec_pg(l, q, np, pv, r, changes, err);
  return exec_sqlite(l, q, np, pv, r, changes, err);
}

/* Our tunables come out of the query; the rest is left for libpq. */
static int split_query(frond_coord *c, const char *q, char *rest, size_t len,
                       frond_error *err) {
  size_t o = 0;
  rest[0] = 0;
  while (q && *q) {
    char part[256];
    size_t n = strcspn(q, "&");
    int ours = 0;
    static const char *keys[] = {
        "report_ms=", "lease_ms=", "nodes=", "max_wait_ms=", "connect_ms="};
    if (n >= sizeof(part))
      return frond__fail(err, FROND_EINVAL, "coordinator option too long");
    memcpy(part, q, n);
    part[n] = 0;
    for (size_t i = 0; i < FROND__ARRAY_SIZE(keys); i++)
      ours |= strncmp(part, keys[i], strlen(keys[i])) == 0;
    if (ours) {
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
  c->impl = l;
  c->validity_ms = c->o.lease_ms - c->o.lease_ms / 10;

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
    if (sqlite3_open_v2(path, &l->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                            SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
      rc = frond__fail(err, FROND_ECOORD, "lease (sqlite) %s: %s", path,
                       l->db ? sqlite3_errmsg(l->db) : "out of memory");
      goto fail;
    }
    sqlite3_busy_timeout(l->db, (int)c->o.connect_ms);
    if (frond__sqlite_use_wal(l->db, (int)c->o.connect_ms) != SQLITE_OK) {
      rc = frond__fail(err, FROND_ECOORD, "lease (sqlite) %s: %s", path,
                       sqlite3_errmsg(l->db));
      goto fail;
    }
  } else if (strncmp(base, "postgresql:", 11) == 0 ||
             strncmp(base, "postgres:", 9) == 0) {
    /* A renewal that hangs must not outlive the lease: every session,
    ** reconnects included, gets a statement timeout of a third of it. */
    char timeout[24], options[64];
    const char *keys[] = {"dbname", "connect_timeout", "options", NULL};
    const char *vals[] = {l->conninfo, timeout, options, NULL};
    snprintf(l->conninfo, sizeof(l->conninfo), "%s%s%s", base,
             rest[0] ? "?" : "", rest);
    snprintf(timeout, sizeof(timeout), "%" PRId64,
             (c->o.connect_ms + 999) / 1000);
    snprintf(options, sizeof(options), "-c statement_timeout=%" PRId64,
             c->o.lease_ms / 3);
    l->pg = PQconnectdbParams(keys, vals, 1);
    if (!l->pg || PQstatus(l->pg) != CONNECTION_OK) {
      rc = frond__fail(err, FROND_ECOORD, "lease (postgresql): %s",
                       l->pg ? PQerrorMessage(l->pg) : "out of memory");
      goto fail;
    }
  } else {
    rc = frond__fail(err, FROND_EINVAL,
                     "lease coordinator wants lease+sqlite:///path.db or "
                     "lease+postgresql://..., not '%s'",
                     uri);
    goto fail;
  }
  if ((rc = exec(l, schema, 0, NULL, NULL, NULL, err)) != 0)
    goto fail;
  return 0;
fail:
  if (l->db)
    sqlite3_close(l->db);
  if (l->pg)
    PQfinish(l->pg);
  free(l);
  c->impl = NULL;
  return rc;
}

static void new_token(lease *l) {
  uint64_t a = 0, b = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(&a, sizeof(a), 1, f) != 1 || fread(&b, sizeof(b), 1, f) != 1)
    a = (uint64_t)frond__mono_ns() ^ ((uint64_t)getpid() << 32), b = a * 31;
  if (f)
    fclose(f);
  snprintf(l->token, sizeof(l->token), "%016" PRIx64 "%016" PRIx64, a, b);
}

static int lease_acquire(frond_coord *c, frond_coord_claim *out,
                         frond_error *err) {
  lease *l = c->impl;
  char ms[24], nodes[24];
  uint64_t limit = c->o.nodes ? c->o.nodes : c->max_node + 1;
  const char *pv[4];
  int rc;

  if (limit > c->max_node + 1)
    limit = c->max_node + 1;
  new_token(l);
  snprintf(ms, sizeof(ms), "%" PRId64, c->o.lease_ms);
  snprintf(nodes, sizeof(nodes), "%" PRIu64, limit);
  pv[0] = c->owner, pv[1] = l->token, pv[2] = ms, pv[3] = nodes;
  for (int i = 0; i < ACQUIRE_TRIES; i++) {
    result r = {0};
    /* An expired row, the one this owner had before first. A concurrent
    ** taker re-checks lease_expires after our write and changes nothing. */
    rc = exec(l,
              "UPDATE frond_node SET owner = $1, token = $2, "
              "lease_expires = @now + $3, updated = @now "
              "WHERE node_id = (SELECT node_id FROM frond_node "
              "WHERE lease_expires < @now AND node_id < $4 "
              "ORDER BY CASE WHEN owner = $1 THEN 0 ELSE 1 END, node_id "
              "LIMIT 1) AND lease_expires < @now "
              "RETURNING node_id, high_water_ms",
              4, pv, &r, NULL, err);
    if (rc == 0 && r.n == 0)
      rc = exec(l,
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
      int64_t node, hw;
      frond__parse_i64(r.rows[0].col[0], strlen(r.rows[0].col[0]), &node);
      frond__parse_i64(r.rows[0].col[1], strlen(r.rows[0].col[1]), &hw);
      free(r.rows);
      l->node = (uint64_t)node;
      l->held = 1;
      memset(out, 0, sizeof(*out));
      out->node = l->node;
      out->high_water_ms = hw;
      return 0;
    }
    free(r.rows);
    /* Nothing taken: either all rows are leased, or a racer took the row
    ** we aimed at. Count to tell them apart. */
    result cnt = {0};
    rc = exec(l,
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

static int lease_report(frond_coord *c, int64_t hw, frond_error *err) {
  lease *l = c->impl;
  char id[24], ms[24], h[24];
  const char *pv[4] = {id, l->token, ms, h};
  int changes = 0, rc;
  snprintf(id, sizeof(id), "%" PRIu64, l->node);
  snprintf(ms, sizeof(ms), "%" PRId64, c->o.lease_ms);
  snprintf(h, sizeof(h), "%" PRId64, hw);
  rc = exec(l,
            "UPDATE frond_node SET lease_expires = @now + $3, "
            "high_water_ms = CASE WHEN high_water_ms > $4 THEN "
            "high_water_ms ELSE $4 END, updated = @now "
            "WHERE node_id = $1 AND token = $2",
            4, pv, NULL, &changes, err);
  if (rc != 0)
    return rc;
  if (changes != 1) {
    l->held = 0;
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "lease on node ID %" PRIu64 " was taken over", l->node);
  }
  return 0;
}

/* Take our row back if its lease expired and nobody else holds it; issue
** again only above the time its holder meanwhile stored. */
static int lease_regain(frond_coord *c, int64_t *after, frond_error *err) {
  lease *l = c->impl;
  char id[24], ms[24];
  const char *pv[4] = {id, c->owner, l->token, ms};
  result r = {0};
  int rc;
  snprintf(id, sizeof(id), "%" PRIu64, l->node);
  snprintf(ms, sizeof(ms), "%" PRId64, c->o.lease_ms);
  rc = exec(l,
            "UPDATE frond_node SET owner = $2, token = $3, "
            "lease_expires = @now + $4, updated = @now "
            "WHERE node_id = $1 AND (token = $3 OR lease_expires < @now) "
            "RETURNING high_water_ms",
            4, pv, &r, NULL, err);
  if (rc == 0 && r.n != 1)
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "node ID %" PRIu64 " is leased by another node", l->node);
  if (rc == 0) {
    frond__parse_i64(r.rows[0].col[0], strlen(r.rows[0].col[0]), after);
    l->held = 1;
  }
  free(r.rows);
  return rc;
}

static int lease_release(frond_coord *c, int64_t hw, frond_error *err) {
  lease *l = c->impl;
  char id[24], h[24];
  const char *pv[3] = {id, l->token, h};
  if (!l->held)
    return 0;
  snprintf(id, sizeof(id), "%" PRIu64, l->node);
  snprintf(h, sizeof(h), "%" PRId64, hw);
  l->held = 0;
  return exec(l,
              "UPDATE frond_node SET lease_expires = 0, "
              "high_water_ms = CASE WHEN high_water_ms > $3 THEN "
              "high_water_ms ELSE $3 END, updated = @now "
              "WHERE node_id = $1 AND token = $2",
              3, pv, NULL, NULL, err);
}

static int lease_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                      frond_error *err) {
  lease *l = c->impl;
  result r = {0};
  frond_coord_entry *e;
  int rc = exec(l,
                "SELECT node_id, owner, lease_expires, high_water_ms, "
                "CASE WHEN lease_expires >= @now THEN 1 ELSE 0 END "
                "FROM frond_node ORDER BY node_id",
                0, NULL, &r, NULL, err);
  if (rc != 0)
    return rc;
  if (!(e = calloc(r.n ? r.n : 1, sizeof(*e)))) {
    free(r.rows);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (size_t i = 0; i < r.n; i++) {
    int64_t v;
    frond__parse_i64(r.rows[i].col[0], strlen(r.rows[i].col[0]), &v);
    e[i].node = (uint64_t)v;
    snprintf(e[i].owner, sizeof(e[i].owner), "%s", r.rows[i].col[1]);
    frond__parse_i64(r.rows[i].col[2], strlen(r.rows[i].col[2]),
                     &e[i].expires_ms);
    frond__parse_i64(r.rows[i].col[3], strlen(r.rows[i].col[3]),
                     &e[i].high_water_ms);
    e[i].live = r.rows[i].col[4][0] == '1';
  }
  *out = e;
  *n = r.n;
  free(r.rows);
  return 0;
}

static void lease_close(frond_coord *c) {
  lease *l = c->impl;
  if (!l)
    return;
  if (l->db)
    sqlite3_close(l->db);
  if (l->pg)
    PQfinish(l->pg);
  free(l);
}

const frond_coord_methods frond__coord_lease_methods = {
    .version = 1,
    .scheme = "lease+",
    .open = lease_open,
    .acquire = lease_acquire,
    .report = lease_report,
    .regain = lease_regain,
    .release = lease_release,
    .list = lease_list,
    .close = lease_close,
    /* A lease that cannot be renewed may be someone else's: never. */
    .cache_fallback = 0,
};
