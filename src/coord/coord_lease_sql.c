/*
** coord_lease_sql.c -- the lease coordinator's connection: one SQLite
** file, or PostgreSQL with every wait bounded (a statement that gets no
** answer within l->answer_ms is abandoned with its connection), and the
** statements of coord_lease.c rendered in each dialect.
*/
#include "coord/coord_lease.h"
#include "base/base.h"
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *now_sqlite =
    "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
static const char *now_pg =
    "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/* Statements are written once with $n parameters, @now and @lock; this
** turns them into the dialect ($n stays for PostgreSQL, ?n for SQLite;
** @lock is FOR UPDATE where rows can be locked). */
static int render(const lease *l, const char *sql, char *out, size_t len) {
  static const struct {
    const char *word, *pg, *sqlite;
  } macros[] = {{"@now", NULL, NULL}, {"@lock", " FOR UPDATE", ""}};
  size_t o = 0;
  for (const char *p = sql; *p; p++) {
    size_t i;
    for (i = 0; i < FROND__ARRAY_SIZE(macros); i++) {
      size_t wl = strlen(macros[i].word);
      const char *v = i == 0 ? (l->is_pg ? now_pg : now_sqlite)
                             : (l->is_pg ? macros[i].pg : macros[i].sqlite);
      size_t vl = strlen(v);
      if (strncmp(p, macros[i].word, wl) != 0)
        continue;
      if (o + vl >= len)
        return -1;
      memcpy(out + o, v, vl);
      o += vl;
      p += wl - 1;
      break;
    }
    if (i < FROND__ARRAY_SIZE(macros))
      continue;
    if (o + 1 >= len)
      return -1;
    out[o++] = (*p == '$' && !l->is_pg) ? '?' : *p;
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
    if (!r)
      continue;
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

#ifdef FROND_WITH_PG
/* ---- PostgreSQL, with every wait bounded -------------------------------- */

static void pg_drop(lease *l) {
  if (l->pg)
    PQfinish(l->pg);
  l->pg = NULL;
}

/* Wait for the socket until deadline; 0, or -1 on timeout. */
static int pg_wait(lease *l, short events, int64_t deadline_ns) {
  struct pollfd p = {PQsocket(l->pg), events, 0};
  for (;;) {
    int64_t left = (deadline_ns - frond__mono_ns()) / 1000000;
    int n;
    if (left <= 0)
      return -1;
    n = poll(&p, 1, left > 1000 ? 1000 : (int)left);
    if (n > 0)
      return 0;
    if (n < 0 && errno != EINTR)
      return -1;
  }
}

static int pg_connect(lease *l, frond_error *err) {
  frond_coord *c = l->c;
  /* statement_timeout bounds the server's side; our own deadline below
  ** bounds the wait for an answer that never comes (a partition). */
  char timeout[24], options[64];
  const char *keys[] = {"dbname", "connect_timeout", "options", NULL};
  const char *vals[] = {l->conninfo, timeout, options, NULL};
  int64_t deadline = frond__mono_ns() + c->t.connect_ms * 1000000;
  PostgresPollingStatusType s = PGRES_POLLING_WRITING;
  pg_drop(l);
  snprintf(timeout, sizeof(timeout), "%" PRId64,
           (c->t.connect_ms + 999) / 1000);
  snprintf(options, sizeof(options), "-c statement_timeout=%" PRId64,
           c->t.lease_ms / 3);
  if (!(l->pg = PQconnectStartParams(keys, vals, 1)))
    return frond__fail(err, FROND_ENOMEM, NULL);
  while (PQstatus(l->pg) != CONNECTION_BAD && s != PGRES_POLLING_OK &&
         s != PGRES_POLLING_FAILED) {
    if (pg_wait(l, s == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline)) {
      pg_drop(l);
      return frond__fail(err, FROND_ECOORD,
                         "lease (postgresql): no connection after %" PRId64
                         " ms",
                         c->t.connect_ms);
    }
    s = PQconnectPoll(l->pg);
  }
  if (PQstatus(l->pg) != CONNECTION_OK) {
    int rc = frond__fail(err, FROND_ECOORD, "lease (postgresql): %s",
                         PQerrorMessage(l->pg));
    pg_drop(l);
    return rc;
  }
  PQsetnonblocking(l->pg, 1);
  return 0;
}

static int exec_pg(lease *l, const char *sql, int np, const char **pv,
                   result *r, int *changes, frond_error *err) {
  int64_t deadline;
  PGresult *res, *first = NULL;
  ExecStatusType s;
  int rc = 0, f;

  if ((!l->pg || PQstatus(l->pg) != CONNECTION_OK) &&
      (rc = pg_connect(l, err)) != 0)
    return rc;
  deadline = frond__mono_ns() + l->answer_ms * 1000000;
  if (!PQsendQueryParams(l->pg, sql, np, NULL, pv, NULL, NULL, 0))
    goto broken;
  while ((f = PQflush(l->pg)) == 1)
    if (pg_wait(l, POLLIN | POLLOUT, deadline) || !PQconsumeInput(l->pg))
      goto broken;
  if (f < 0)
    goto broken;
  for (;;) {
    while (PQisBusy(l->pg))
      if (pg_wait(l, POLLIN, deadline) || !PQconsumeInput(l->pg))
        goto broken;
    if (!(res = PQgetResult(l->pg)))
      break;
    if (!first)
      first = res;
    else
      PQclear(res);
  }
  if (!first)
    goto broken;
  s = PQresultStatus(first);
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
    rc = frond__fail(err, FROND_ECOORD, "lease (postgresql): %s",
                     PQresultErrorMessage(first));
    PQclear(first);
    return rc;
  }
  for (int i = 0; r && i < PQntuples(first) && rc == 0; i++) {
    if ((rc = add_row(r, err)) != 0)
      break;
    for (int j = 0; j < PQnfields(first) && j < MAX_COLS; j++)
      snprintf(r->rows[r->n - 1].col[j], COL_MAX, "%s",
               PQgetvalue(first, i, j));
  }
  if (changes) {
    const char *t = PQcmdTuples(first);
    *changes = t && *t ? atoi(t) : 0;
  }
  PQclear(first);
  return rc;
broken:
  /* No answer in time, or the connection failed: the statement may or may
  ** not have committed. The connection is dropped, never reused. */
  rc = frond__fail(err, FROND_ECOORD,
                   "lease (postgresql): no answer within %" PRId64 " ms%s%s",
                   l->answer_ms, l->pg ? ": " : "",
                   l->pg ? PQerrorMessage(l->pg) : "");
  if (first)
    PQclear(first);
  pg_drop(l);
  return rc;
}
#else
/* Built without PostgreSQL (FROND_WITH_PG=OFF): coord.c refuses its lease
** URIs before they reach this driver. */
static void pg_drop(lease *l) {
  (void)l;
}

static int pg_connect(lease *l, frond_error *err) {
  (void)l;
  return frond__fail(err, FROND_EINVAL,
                     "built without PostgreSQL support (FROND_WITH_PG=OFF)");
}

static int exec_pg(lease *l, const char *sql, int np, const char **pv,
                   result *r, int *changes, frond_error *err) {
  (void)sql, (void)np, (void)pv, (void)r, (void)changes;
  return pg_connect(l, err);
}
#endif

/* Run one statement (autocommit: one transaction, unless inside BEGIN).
** Rows go to r when not NULL; *changes receives the rows written. */
int frond__lease_exec(lease *l, const char *sql, int np, const char **pv,
                      result *r, int *changes, frond_error *err) {
  char q[2048];
  if (render(l, sql, q, sizeof(q)) != 0)
    return frond__fail(err, FROND_EINVAL, "statement too long");
  if (l->is_pg)
    return exec_pg(l, q, np, pv, r, changes, err);
  return exec_sqlite(l, q, np, pv, r, changes, err);
}

int frond__lease_open_sqlite(lease *l, const char *path, frond_error *err) {
  int ms = (int)l->c->t.connect_ms;
  if (sqlite3_open_v2(path, &l->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                          SQLITE_OPEN_FULLMUTEX,
                      NULL) != SQLITE_OK)
    return frond__fail(err, FROND_ECOORD, "lease (sqlite) %s: %s", path,
                       l->db ? sqlite3_errmsg(l->db) : "out of memory");
  sqlite3_busy_timeout(l->db, ms);
  if (frond__sqlite_use_wal(l->db, ms) != SQLITE_OK)
    return frond__fail(err, FROND_ECOORD, "lease (sqlite) %s: %s", path,
                       sqlite3_errmsg(l->db));
  return 0;
}

int frond__lease_open_pg(lease *l, frond_error *err) {
  return pg_connect(l, err);
}

void frond__lease_drop(lease *l) {
  if (l->db)
    sqlite3_close(l->db);
  l->db = NULL;
  pg_drop(l);
}
