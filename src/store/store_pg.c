/*
** store_pg.c -- the PostgreSQL segment store (libpq).
**
** URIs: "postgresql://..." and "postgres://..." (any libpq URI). An
** allocation is one statement, UPDATE ... RETURNING, hence one transaction:
** when it returns the range is committed. Statements are prepared once per
** connection. A broken connection is dropped and re-opened (and the
** statements re-prepared) on the next call; the caller's backoff paces that.
*/
#include "store/store.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pg_store {
  frond_store base;
  PGconn *conn; /* NULL after a broken connection was dropped */
  int prepared; /* the statements exist on conn */
  char *uri;
} pg_store;

static const char *const prepared[][2] = {
    {"frond_alloc_step",
     "UPDATE leaf_alloc SET max_id = max_id + $2::bigint, update_time = now() "
     "WHERE biz_tag = $1 RETURNING max_id, step"},
    {"frond_alloc_row",
     "UPDATE leaf_alloc SET max_id = max_id + step, update_time = now() "
     "WHERE biz_tag = $1 RETURNING max_id, step"},
};

static void quiet(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* Copy libpq's message into err, without its trailing newline. */
static int pg_fail(pg_store *s, const PGresult *res, frond_error *err,
                   const char *what) {
  char msg[400];
  size_t n;
  snprintf(msg, sizeof(msg), "%s",
           res != NULL ? PQresultErrorMessage(res)
           : s->conn   ? PQerrorMessage(s->conn)
                       : "no connection");
  n = strlen(msg);
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
    msg[--n] = '\0';
  if (s->conn != NULL && PQstatus(s->conn) != CONNECTION_OK) {
    PQfinish(s->conn);
    s->conn = NULL;
  }
  return frond__fail(err, FROND_ESTORE, "postgresql: %s: %s", what, msg);
}

/* Prepare the allocation statements; before leaf_alloc exists this fails,
** and the next allocation tries again. */
static void prepare_all(pg_store *s) {
  PGresult *res;
  size_t i;
  s->prepared = 1;
  for (i = 0; i < FROND__ARRAY_SIZE(prepared); i++) {
    res = PQprepare(s->conn, prepared[i][0], prepared[i][1], 0, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
      s->prepared = 0;
    PQclear(res);
  }
  if (!s->prepared) /* drop the ones that did succeed */
    PQclear(PQexec(s->conn, "DEALLOCATE ALL"));
}

static int pg_connect(pg_store *s, frond_error *err) {
  /* Keywords before dbname are defaults that the URI may override. */
  const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
  const char *vals[] = {"5", "frond", s->uri, NULL};
  if (s->conn != NULL)
    return 0;
  s->conn = PQconnectdbParams(keys, vals, 1);
  if (s->conn == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  if (PQstatus(s->conn) != CONNECTION_OK)
    return pg_fail(s, NULL, err, "connect");
  PQsetNoticeProcessor(s->conn, quiet, NULL);
  prepare_all(s);
  return 0;
}

static void pg_close(frond_store *st) {
  pg_store *s = (pg_store *)st;
  if (s->conn != NULL)
    PQfinish(s->conn);
  free(s->uri);
  free(s);
}

static int pg_open(const char *uri, frond_store **out, frond_error *err) {
  pg_store *s;
  int rc;
  if (strncmp(uri, "postgresql://", 13) != 0 &&
      strncmp(uri, "postgres://", 11) != 0)
    return frond__fail(err, FROND_ESTORE_URI,
                       "unsupported store URI \"%.200s\" (expected "
                       "postgresql://... or postgres://...)",
                       uri);
  s = calloc(1, sizeof(*s));
  if (s == NULL || (s->uri = strdup(uri)) == NULL) {
    free(s);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  s->base.methods = &frond__store_pg;
  if ((rc = pg_connect(s, err)) != 0) {
    pg_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

static int is_unique_violation(const PGresult *res) {
  const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  return state != NULL && strcmp(state, "23505") == 0;
}

/* Run sql with text parameters; *res holds the result on success (PQclear
** it). On failure the result is already cleared and err filled, except for
** a unique violation, returned as TAG_EXISTS with no message. */
static int run(pg_store *s, const char *sql, int n, const char *const *params,
               PGresult **res, frond_error *err) {
  ExecStatusType st;
  int rc;
  *res = NULL;
  if ((rc = pg_connect(s, err)) != 0)
    return rc;
  *res = PQexecParams(s->conn, sql, n, NULL, params, NULL, NULL, 0);
  st = PQresultStatus(*res);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
    return 0;
  rc = *res != NULL && is_unique_violation(*res)
           ? FROND_ETAG_EXISTS
           : pg_fail(s, *res, err, "statement");
  PQclear(*res);
  *res = NULL;
  return rc;
}

static int table_exists(pg_store *s, frond_error *err) {
  PGresult *res;
  int rc = run(s, "SELECT to_regclass('leaf_alloc') IS NOT NULL", 0, NULL, &res,
               err);
  if (rc == 0)
    rc = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
  PQclear(res);
  return rc;
}

static int pg_ensure_schema(frond_store *st, frond_error *err) {
  pg_store *s = (pg_store *)st;
  PGresult *res;
  int rc = table_exists(s, err);
  if (rc != 0)
    return rc < 0 ? rc : 0;
  /* Two nodes creating the table at once: one of them gets a unique
  ** violation on the catalog; it then finds the table made by the other. */
  if ((rc = run(s, FROND__LEAF_ALLOC_DDL, 0, NULL, &res, err)) != 0) {
    if (table_exists(s, NULL) == 1)
      rc = 0;
    else if (rc == FROND_ETAG_EXISTS)
      rc = frond__fail(err, FROND_ESTORE,
                       "postgresql: cannot create leaf_alloc: a conflicting "
                       "object exists");
  }
  PQclear(res);
  return rc;
}

static int parse(const char *text, int64_t *out) {
  return frond__parse_i64(text, strlen(text), out);
}

static int pg_alloc(frond_store *st, const char *tag, int64_t step,
                    int64_t *max_id, int64_t *row_step, frond_error *err) {
  pg_store *s = (pg_store *)st;
  char stepbuf[24];
  const char *params[2] = {tag, stepbuf};
  PGresult *res;
  int rc;
  if ((rc = pg_connect(s, err)) != 0)
    return rc;
  if (!s->prepared)
    prepare_all(s);
  snprintf(stepbuf, sizeof(stepbuf), "%lld", (long long)step);
  res = PQexecPrepared(s->conn, prepared[step > 0 ? 0 : 1][0], step > 0 ? 2 : 1,
                       params, NULL, NULL, 0);
  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    rc = pg_fail(s, res, err, "allocate");
  else if (PQntuples(res) == 0)
    rc = frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  else if (parse(PQgetvalue(res, 0, 0), max_id) != 0 ||
           parse(PQgetvalue(res, 0, 1), row_step) != 0)
    rc = frond__fail(err, FROND_ESTORE, "postgresql: unexpected row");
  PQclear(res);
  return rc;
}

#define ROW_SELECT                                                             \
  "SELECT biz_tag, max_id, step, coalesce(description, ''), "                  \
  "to_char(update_time, 'YYYY-MM-DD HH24:MI:SS') FROM leaf_alloc "

static void read_row(const PGresult *res, int i, frond_tag_row *r) {
  memset(r, 0, sizeof(*r));
  snprintf(r->tag, sizeof(r->tag), "%s", PQgetvalue(res, i, 0));
  parse(PQgetvalue(res, i, 1), &r->max_id);
  parse(PQgetvalue(res, i, 2), &r->step);
  snprintf(r->description, sizeof(r->description), "%s", PQgetvalue(res, i, 3));
  snprintf(r->update_time, sizeof(r->update_time), "%s", PQgetvalue(res, i, 4));
}

static int pg_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                       frond_error *err) {
  pg_store *s = (pg_store *)st;
  PGresult *res;
  int rc, i, count;
  *out = NULL;
  *n = 0;
  rc = run(s, ROW_SELECT "ORDER BY biz_tag COLLATE \"C\"", 0, NULL, &res, err);
  if (rc != 0)
    return rc;
  count = PQntuples(res);
  if (count > 0 && (*out = calloc((size_t)count, sizeof(**out))) == NULL) {
    PQclear(res);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (i = 0; i < count; i++)
    read_row(res, i, &(*out)[i]);
  *n = (size_t)count;
  PQclear(res);
  return 0;
}

static int pg_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                      frond_error *err) {
  pg_store *s = (pg_store *)st;
  PGresult *res;
  int rc = run(s, ROW_SELECT "WHERE biz_tag = $1", 1, &tag, &res, err);
  if (rc != 0) {
    return rc;
  } else if (PQntuples(res) == 0) {
    rc = frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  } else {
    read_row(res, 0, out);
  }
  PQclear(res);
  return rc;
}

/* Run a modifying statement; TAG_NOT_FOUND when it touched no row. */
static int modify(pg_store *s, const char *sql, int n,
                  const char *const *params, const char *tag,
                  frond_error *err) {
  PGresult *res;
  int rc = run(s, sql, n, params, &res, err);
  if (rc == FROND_ETAG_EXISTS)
    return frond__fail(err, rc, "tag \"%s\" already exists", tag);
  if (rc != 0)
    return rc;
  if (rc == 0 && strcmp(PQcmdTuples(res), "0") == 0) {
    rc = frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  }
  PQclear(res);
  return rc;
}

static int pg_tag_create(frond_store *st, const char *tag, int64_t step,
                         int64_t start, const char *description,
                         frond_error *err) {
  char stepbuf[24], startbuf[24];
  const char *params[4] = {tag, startbuf, stepbuf, description};
  snprintf(stepbuf, sizeof(stepbuf), "%lld", (long long)step);
  snprintf(startbuf, sizeof(startbuf), "%lld", (long long)start);
  return modify((pg_store *)st,
                "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, "
                "update_time) VALUES ($1, $2, $3, $4, now())",
                4, params, tag, err);
}

static int pg_tag_set_step(frond_store *st, const char *tag, int64_t step,
                           frond_error *err) {
  char stepbuf[24];
  const char *params[2] = {tag, stepbuf};
  snprintf(stepbuf, sizeof(stepbuf), "%lld", (long long)step);
  return modify((pg_store *)st,
                "UPDATE leaf_alloc SET step = $2, update_time = now() "
                "WHERE biz_tag = $1",
                2, params, tag, err);
}

static int pg_tag_delete(frond_store *st, const char *tag, frond_error *err) {
  return modify((pg_store *)st, "DELETE FROM leaf_alloc WHERE biz_tag = $1", 1,
                &tag, tag, err);
}

const frond_store_methods frond__store_pg = {
    1,          "postgres",       "postgresql",    pg_open,
    pg_close,   pg_ensure_schema, pg_alloc,        pg_tag_list,
    pg_tag_get, pg_tag_create,    pg_tag_set_step, pg_tag_delete,
};
