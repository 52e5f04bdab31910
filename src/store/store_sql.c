/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_sql.c -- the segment store over the SQL layer (db.h): Leaf's
** leaf_alloc table on any engine the layer speaks (SQLite, PostgreSQL,
** MySQL/MariaDB; on MySQL created by Leaf's own DDL when missing).
**
** An allocation is Leaf's transaction: UPDATE leaf_alloc SET max_id =
** max_id + step WHERE biz_tag = ?, then max_id and step read back in the
** same transaction. Where the engine has RETURNING that is one statement
** (its own transaction, one round trip); elsewhere the layer runs the
** UPDATE and the SELECT inside BEGIN ... COMMIT. The segment is
** [max_id - step, max_id). The UPDATE refuses to push max_id past the
** bigint range, so that no engine turns the sum into a float or an error
** of its own, and a row it skips is told apart from a missing one.
**
** The statements are written once; the layer renders them per dialect
** and keeps them prepared, and reconnects where it safely can.
*/
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sql_store {
  frond_store base;
  frond_db *db;
  int member, members; /* of a multi: store; members 0: a plain store */
} sql_store;

#define DB(st) (((sql_store *)(st))->db)

#define ALLOC_WRITE                                                            \
  "UPDATE leaf_alloc SET max_id = max_id + coalesce($2, step), "               \
  "update_time = CURRENT_TIMESTAMP WHERE biz_tag = $1 AND "                    \
  "max_id <= 9223372036854775807 - coalesce($2, step)"
#define ALLOC_BACK "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = $1"

#define ROW_SELECT                                                             \
  "SELECT biz_tag, max_id, step, coalesce(description, ''), "                  \
  "{ts_text:update_time} FROM leaf_alloc "

static int not_found(const char *tag, frond_error *err) {
  return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
}

static int sql_open(const char *uri, frond_store **out, frond_error *err) {
  sql_store *s = calloc(1, sizeof(*s));
  int rc;
  if (s == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  /* The layer's defaults; an in-memory database is refused, it would hand
  ** out the same ranges again after a restart. */
  if ((rc = frond__db_open(uri, NULL, &s->db, err)) != 0) {
    free(s);
    return rc;
  }
  s->base.methods = &frond__store_sql;
  *out = &s->base;
  return 0;
}

static void sql_close(frond_store *st) {
  frond__db_close(DB(st));
  free(st);
}

int frond__store_multi_nocheck;

/* A multi: store's member records which member it is, once: the first
** node to open it writes (i, n), every later open compares. A plain store
** never opens a member (its local IDs are not the store's IDs). */
#define MULTI_DDL                                                              \
  "CREATE TABLE IF NOT EXISTS frond_multi (id int NOT NULL PRIMARY KEY, "      \
  "member int NOT NULL, members int NOT NULL)"
#define MULTI_DDL_MYSQL MULTI_DDL " ENGINE=InnoDB"

void frond__store_sql_deadline(frond_store *st, int64_t mono_ns) {
  frond__db_set_deadline(DB(st), mono_ns);
}

void frond__store_sql_member(frond_store *st, int i, int n) {
  ((sql_store *)st)->member = i;
  ((sql_store *)st)->members = n;
}

static int member_check(frond_store *st, int mysql, frond_error *err) {
  sql_store *s = (sql_store *)st;
  frond_db_result r = {0};
  frond_db_arg a[2];
  int64_t i = -1, n = 0;
  int rc, exists = 0;
  if (s->members == 0) {
    if ((rc = frond__db_table_exists(s->db, "frond_multi", &exists, err)) != 0)
      return rc;
    if (!exists)
      return 0;
  } else {
    if (frond__store_multi_nocheck)
      return 0;
    a[0] = frond__db_int(s->member);
    a[1] = frond__db_int(s->members);
    if ((rc = frond__db_ensure_table(s->db, "frond_multi",
                                     mysql ? MULTI_DDL_MYSQL : MULTI_DDL,
                                     err)) != 0 ||
        ((rc = frond__db_exec(s->db,
                              "INSERT INTO frond_multi (id, member, members) "
                              "VALUES (1, $1, $2)",
                              a, 2, NULL, err)) != 0 &&
         frond__db_error_class(s->db) != FROND_DB_UNIQUE))
      return rc;
  }
  rc = frond__db_exec(s->db,
                      "SELECT member, members FROM frond_multi "
                      "WHERE id = 1",
                      NULL, 0, &r, err);
  if (rc == 0 && r.nrows == 1 && frond__db_get_int(&r, 0, 0, &i, err) == 0 &&
      frond__db_get_int(&r, 0, 1, &n, err) == 0) {
    if (s->members == 0)
      rc = frond__fail(err, FROND_ESTORE_MEMBER,
                       "this database is member %lld of %lld of a multi: "
                       "store; open it only through that multi: URI",
                       (long long)i, (long long)n);
    else if (i != s->member || n != s->members)
      rc = frond__fail(err, FROND_ESTORE_MEMBER,
                       "the database listed as member %d of %d is member "
                       "%lld of %lld: every node must list the same databases "
                       "in the same order",
                       s->member, s->members, (long long)i, (long long)n);
  } else if (rc == 0) {
    rc = frond__fail(err, FROND_ESTORE, "frond_multi: no row 1");
  }
  frond__db_result_free(&r);
  return rc;
}

static int sql_ensure_schema(frond_store *st, frond_error *err) {
  int mysql = strcmp(frond__db_engine(DB(st)), "mysql") == 0;
  int rc = frond__db_ensure_table(
      DB(st), "leaf_alloc",
      mysql ? FROND__LEAF_ALLOC_DDL_MYSQL : FROND__LEAF_ALLOC_DDL, err);
  return rc != 0 ? rc : member_check(st, mysql, err);
}

static int sql_alloc(frond_store *st, const char *tag, int64_t step,
                     int64_t *max_id, int64_t *row_step, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[2];
  int rc;
  a[0] = frond__db_text(tag);
  a[1] = step > 0 ? frond__db_int(step) : frond__db_null();
  rc = frond__db_write_returning(DB(st), ALLOC_WRITE, "max_id, step",
                                 ALLOC_BACK, a, 2, &r, err);
  if (rc == 0 && r.nrows == 1) {
    if ((rc = frond__db_get_int(&r, 0, 0, max_id, err)) == 0)
      rc = frond__db_get_int(&r, 0, 1, row_step, err);
  } else if (rc == 0) {
    /* No row moved: missing, or at the end of the bigint range. */
    rc = frond__db_exec(DB(st), ALLOC_BACK, a, 1, &r, err);
    if (rc == 0 && r.nrows == 0)
      rc = not_found(tag, err);
    else if (rc == 0)
      rc = frond__fail(err, FROND_ESTORE,
                       "tag \"%s\": max_id + step would overflow bigint", tag);
  }
  frond__db_result_free(&r);
  return rc;
}

static void read_row(const frond_db_result *r, int i, frond_tag_row *row) {
  const char *t;
  memset(row, 0, sizeof(*row));
  t = frond__db_get_text(r, i, 0);
  snprintf(row->tag, sizeof(row->tag), "%s", t ? t : "");
  frond__db_get_int(r, i, 1, &row->max_id, NULL);
  frond__db_get_int(r, i, 2, &row->step, NULL);
  t = frond__db_get_text(r, i, 3);
  snprintf(row->description, sizeof(row->description), "%s", t ? t : "");
  t = frond__db_get_text(r, i, 4);
  snprintf(row->update_time, sizeof(row->update_time), "%s", t ? t : "");
}

static int sql_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                        frond_error *err) {
  frond_db_result r = {0};
  int rc, i;
  *out = NULL;
  *n = 0;
  rc = frond__db_exec(DB(st), ROW_SELECT "ORDER BY {binary:biz_tag}", NULL, 0,
                      &r, err);
  if (rc == 0 && r.nrows > 0 &&
      (*out = calloc((size_t)r.nrows, sizeof(**out))) == NULL)
    rc = frond__fail(err, FROND_ENOMEM, NULL);
  for (i = 0; rc == 0 && i < r.nrows; i++)
    read_row(&r, i, &(*out)[i]);
  if (rc == 0)
    *n = (size_t)r.nrows;
  frond__db_result_free(&r);
  return rc;
}

/* In the table's key order (the primary key's index, whatever its
** collation), so that every page is an index range scan. */
static int sql_tag_page(frond_store *st, const char *after, int limit,
                        frond__tag_fn fn, void *ctx, int *n, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[2];
  int64_t step;
  int rc, i;
  a[0] = frond__db_int(limit);
  a[1] = frond__db_text(after);
  if (after == NULL)
    rc = frond__db_exec(DB(st),
                        "SELECT biz_tag, step FROM leaf_alloc ORDER BY biz_tag "
                        "LIMIT $1",
                        a, 1, &r, err);
  else
    rc = frond__db_exec(DB(st),
                        "SELECT biz_tag, step FROM leaf_alloc WHERE biz_tag > "
                        "$2 ORDER BY biz_tag LIMIT $1",
                        a, 2, &r, err);
  for (i = 0; rc == 0 && i < r.nrows; i++) {
    const char *t = frond__db_get_text(&r, i, 0);
    if (t == NULL || frond__db_get_int(&r, i, 1, &step, err) != 0)
      continue; /* not a row a caller could ask for */
    rc = fn(ctx, t, step);
  }
  *n = rc == 0 ? r.nrows : i;
  frond__db_result_free(&r);
  return rc;
}

static int sql_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                       frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int rc =
      frond__db_exec(DB(st), ROW_SELECT "WHERE biz_tag = $1", &a, 1, &r, err);
  if (rc == 0 && r.nrows == 0)
    rc = not_found(tag, err);
  else if (rc == 0)
    read_row(&r, 0, out);
  frond__db_result_free(&r);
  return rc;
}

/* One write of one tag's row; TAG_NOT_FOUND when it touched none. */
static int modify(frond_store *st, const char *sql, const frond_db_arg *a,
                  int n, const char *tag, frond_error *err) {
  frond_db_result r = {0};
  int rc = frond__db_exec(DB(st), sql, a, n, &r, err);
  if (rc != 0 && frond__db_error_class(DB(st)) == FROND_DB_UNIQUE)
    rc = frond__fail(err, FROND_ETAG_EXISTS, "tag \"%s\" already exists", tag);
  else if (rc == 0 && r.changes == 0)
    rc = not_found(tag, err);
  frond__db_result_free(&r);
  return rc;
}

static int sql_tag_create(frond_store *st, const char *tag, int64_t step,
                          int64_t start, const char *description,
                          frond_error *err) {
  frond_db_arg a[4];
  a[0] = frond__db_text(tag);
  a[1] = frond__db_int(start);
  a[2] = frond__db_int(step);
  a[3] = frond__db_text(description);
  return modify(st,
                "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, "
                "update_time) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                a, 4, tag, err);
}

static int sql_tag_set_step(frond_store *st, const char *tag, int64_t step,
                            frond_error *err) {
  frond_db_arg a[2];
  a[0] = frond__db_text(tag);
  a[1] = frond__db_int(step);
  return modify(st,
                "UPDATE leaf_alloc SET step = $2, update_time = "
                "CURRENT_TIMESTAMP WHERE biz_tag = $1",
                a, 2, tag, err);
}

static int sql_tag_delete(frond_store *st, const char *tag, frond_error *err) {
  frond_db_arg a = frond__db_text(tag);
  return modify(st, "DELETE FROM leaf_alloc WHERE biz_tag = $1", &a, 1, tag,
                err);
}

/* Record name = value unless a value is recorded, then read it back: an
** INSERT that does nothing when the row exists ({if_absent}), so that of
** two processes recording at once one wins and both read its value. */
static int sql_fact(frond_store *st, const char *name, const char *value,
                    char *recorded, size_t len, frond_error *err) {
  int mysql = strcmp(frond__db_engine(DB(st)), "mysql") == 0;
  frond_db_result r = {0};
  frond_db_arg a[2];
  const char *v;
  int rc;
  a[0] = frond__db_text(name);
  a[1] = frond__db_text(value);
  if ((rc = frond__db_ensure_table(
           DB(st), "frond_meta",
           mysql ? FROND__META_DDL " ENGINE=InnoDB" : FROND__META_DDL, err)) !=
          0 ||
      (rc = frond__db_exec(DB(st),
                           "INSERT INTO frond_meta (name, value) VALUES ($1, "
                           "$2) {if_absent:name}",
                           a, 2, NULL, err)) != 0 ||
      (rc = frond__db_exec(DB(st),
                           "SELECT value FROM frond_meta WHERE name = $1", a, 1,
                           &r, err)) != 0)
    goto done;
  if (r.nrows != 1 || (v = frond__db_get_text(&r, 0, 0)) == NULL)
    rc = frond__fail(err, FROND_ESTORE, "frond_meta: no value of %s", name);
  else
    snprintf(recorded, len, "%s", v);
done:
  frond__db_result_free(&r);
  return rc;
}

const frond_store_methods frond__store_sql = {
    3,
    NULL, /* every URI the SQL layer accepts */
    "sql",
    sql_open,
    sql_close,
    sql_ensure_schema,
    sql_alloc,
    sql_tag_list,
    sql_tag_get,
    sql_tag_create,
    sql_tag_set_step,
    sql_tag_delete,
    sql_tag_page,
    sql_fact,
};
