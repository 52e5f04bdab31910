/*
** store_sqlite.c -- the SQLite segment store.
**
** URIs: "sqlite:///abs/path.db" and "sqlite:relative.db". The file may be
** shared by several processes: WAL mode, a busy timeout, and BEGIN
** IMMEDIATE so that the writer lock is taken before the row is read.
** synchronous=FULL: a committed allocation must survive a power cut, or a
** restarted node could hand out the same range again.
*/
#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUSY_TIMEOUT_MS 10000

typedef struct sqlite_store {
  frond_store base;
  sqlite3 *db;
  sqlite3_stmt *alloc; /* UPDATE ... RETURNING, prepared once */
} sqlite_store;

static int db_fail(sqlite_store *s, frond_error *err, const char *what) {
  return frond__fail(err, FROND_ESTORE, "sqlite: %s: %s", what,
                     sqlite3_errmsg(s->db));
}

static int exec(sqlite_store *s, const char *sql, frond_error *err) {
  if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(s, err, sql);
  return 0;
}

static void sqlite_close(frond_store *st) {
  sqlite_store *s = (sqlite_store *)st;
  sqlite3_finalize(s->alloc);
  sqlite3_close(s->db);
  free(s);
}

static int sqlite_open(const char *uri, frond_store **out, frond_error *err) {
  const char *path = uri + strlen("sqlite:");
  sqlite_store *s;
  int rc;
  if (strncmp(path, "//", 2) == 0) {
    path += 2;
    if (*path != '/')
      return frond__fail(err, FROND_ESTORE_URI,
                         "sqlite URI \"%.200s\" names a host; use "
                         "sqlite:///abs/path.db or sqlite:relative.db",
                         uri);
  }
  if (*path == '\0')
    return frond__fail(err, FROND_ESTORE_URI,
                       "sqlite URI \"%.200s\" has no "
                       "file name",
                       uri);
  if ((s = calloc(1, sizeof(*s))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  s->base.methods = &frond__store_sqlite;
  rc = sqlite3_open_v2(
      path, &s->db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    frond__fail(err, FROND_ESTORE, "sqlite: cannot open %.200s: %s", path,
                s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    sqlite_close(&s->base);
    return FROND_ESTORE;
  }
  sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
  if (frond__sqlite_use_wal(s->db, BUSY_TIMEOUT_MS) != SQLITE_OK)
    rc = db_fail(s, err, "PRAGMA journal_mode=WAL");
  else
    rc = exec(s, "PRAGMA synchronous=FULL", err);
  if (rc != 0) {
    sqlite_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

static int sqlite_ensure_schema(frond_store *st, frond_error *err) {
  return exec((sqlite_store *)st, FROND__LEAF_ALLOC_DDL, err);
}

static int prepare(sqlite_store *s, sqlite3_stmt **stmt, const char *sql,
                   frond_error *err) {
  if (sqlite3_prepare_v2(s->db, sql, -1, stmt, NULL) != SQLITE_OK)
    return db_fail(s, err, "prepare");
  return 0;
}

/* Does the row exist? 1, 0, or a negative code. */
static int row_exists(sqlite_store *s, const char *tag, frond_error *err) {
  sqlite3_stmt *q;
  int rc;
  if ((rc = prepare(s, &q, "SELECT 1 FROM leaf_alloc WHERE biz_tag = ?1",
                    err)) != 0)
    return rc;
  sqlite3_bind_text(q, 1, tag, -1, SQLITE_STATIC);
  rc = sqlite3_step(q);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE)
    rc = rc == SQLITE_ROW;
  else
    rc = db_fail(s, err, "select");
  sqlite3_finalize(q);
  return rc;
}

static int sqlite_alloc(frond_store *st, const char *tag, int64_t step,
                        int64_t *max_id, int64_t *row_step, frond_error *err) {
  sqlite_store *s = (sqlite_store *)st;
  int rc, found = 0;
  /* The bound keeps max_id + step inside int64 (SQLite would turn an
  ** overflowing sum into a float). */
  if (s->alloc == NULL &&
      (rc = prepare(s, &s->alloc,
                    "UPDATE leaf_alloc SET max_id = max_id + "
                    "coalesce(?2, step), update_time = CURRENT_TIMESTAMP "
                    "WHERE biz_tag = ?1 AND max_id <= "
                    "9223372036854775807 - coalesce(?2, step) "
                    "RETURNING max_id, step",
                    err)) != 0)
    return rc;
  if ((rc = exec(s, "BEGIN IMMEDIATE", err)) != 0)
    return rc;
  sqlite3_bind_text(s->alloc, 1, tag, -1, SQLITE_STATIC);
  if (step > 0)
    sqlite3_bind_int64(s->alloc, 2, step);
  else
    sqlite3_bind_null(s->alloc, 2);
  rc = sqlite3_step(s->alloc);
  if (rc == SQLITE_ROW) {
    *max_id = sqlite3_column_int64(s->alloc, 0);
    *row_step = sqlite3_column_int64(s->alloc, 1);
    found = 1;
    rc = sqlite3_step(s->alloc);
  }
  if (rc != SQLITE_DONE) {
    rc = db_fail(s, err, "update");
    sqlite3_reset(s->alloc);
    goto rollback;
  }
  sqlite3_reset(s->alloc);
  sqlite3_clear_bindings(s->alloc);
  if (!found) {
    rc = row_exists(s, tag, err);
    if (rc == 0)
      rc = frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
    else if (rc == 1)
      rc = frond__fail(err, FROND_ESTORE,
                       "tag \"%s\": max_id + step would overflow bigint", tag);
    goto rollback;
  }
  if ((rc = exec(s, "COMMIT", err)) != 0)
    goto rollback;
  return 0;
rollback:
  sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

static void read_row(sqlite3_stmt *q, frond_tag_row *r) {
  const unsigned char *t;
  memset(r, 0, sizeof(*r));
  t = sqlite3_column_text(q, 0);
  snprintf(r->tag, sizeof(r->tag), "%s", t ? (const char *)t : "");
  r->max_id = sqlite3_column_int64(q, 1);
  r->step = sqlite3_column_int64(q, 2);
  t = sqlite3_column_text(q, 3);
  snprintf(r->description, sizeof(r->description), "%s",
           t ? (const char *)t : "");
  t = sqlite3_column_text(q, 4);
  snprintf(r->update_time, sizeof(r->update_time), "%s",
           t ? (const char *)t : "");
}

#define ROW_COLUMNS "biz_tag, max_id, step, description, update_time"

static int sqlite_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                           frond_error *err) {
  sqlite_store *s = (sqlite_store *)st;
  sqlite3_stmt *q;
  frond_tag_row *rows = NULL, *grown;
  size_t count = 0, cap = 0;
  int rc;
  *out = NULL;
  *n = 0;
  if ((rc = prepare(s, &q,
                    "SELECT " ROW_COLUMNS " FROM leaf_alloc ORDER BY biz_tag",
                    err)) != 0)
    return rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      if ((grown = realloc(rows, cap * sizeof(*rows))) == NULL) {
        rc = frond__fail(err, FROND_ENOMEM, NULL);
        goto fail;
      }
      rows = grown;
    }
    read_row(q, &rows[count++]);
  }
  if (rc != SQLITE_DONE) {
    rc = db_fail(s, err, "select");
    goto fail;
  }
  sqlite3_finalize(q);
  *out = rows;
  *n = count;
  return 0;
fail:
  sqlite3_finalize(q);
  free(rows);
  return rc;
}

static int sqlite_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                          frond_error *err) {
  sqlite_store *s = (sqlite_store *)st;
  sqlite3_stmt *q;
  int rc;
  if ((rc = prepare(s, &q,
                    "SELECT " ROW_COLUMNS " FROM leaf_alloc WHERE biz_tag = ?1",
                    err)) != 0)
    return rc;
  sqlite3_bind_text(q, 1, tag, -1, SQLITE_STATIC);
  rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) {
    read_row(q, out);
    rc = 0;
  } else if (rc == SQLITE_DONE) {
    rc = frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  } else {
    rc = db_fail(s, err, "select");
  }
  sqlite3_finalize(q);
  return rc;
}

/* Run one modifying statement; the number of changed rows in *changes. */
static int modify(sqlite_store *s, sqlite3_stmt *q, int *changes,
                  frond_error *err) {
  int rc = sqlite3_step(q);
  if (rc == SQLITE_DONE) {
    *changes = sqlite3_changes(s->db);
    rc = 0;
  } else if (sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_PRIMARYKEY) {
    rc = FROND_ETAG_EXISTS;
  } else {
    rc = db_fail(s, err, "write");
  }
  sqlite3_finalize(q);
  return rc;
}

static int sqlite_tag_create(frond_store *st, const char *tag, int64_t step,
                             int64_t start, const char *description,
                             frond_error *err) {
  sqlite_store *s = (sqlite_store *)st;
  sqlite3_stmt *q;
  int rc, changes;
  if ((rc = prepare(s, &q,
                    "INSERT INTO leaf_alloc (biz_tag, max_id, step, "
                    "description, update_time) VALUES (?1, ?2, ?3, ?4, "
                    "CURRENT_TIMESTAMP)",
                    err)) != 0)
    return rc;
  sqlite3_bind_text(q, 1, tag, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 2, start);
  sqlite3_bind_int64(q, 3, step);
  if (description != NULL)
    sqlite3_bind_text(q, 4, description, -1, SQLITE_STATIC);
  rc = modify(s, q, &changes, err);
  if (rc == FROND_ETAG_EXISTS)
    return frond__fail(err, rc, "tag \"%s\" already exists", tag);
  return rc;
}

static int sqlite_tag_set_step(frond_store *st, const char *tag, int64_t step,
                               frond_error *err) {
  sqlite_store *s = (sqlite_store *)st;
  sqlite3_stmt *q;
  int rc, changes = 0;
  if ((rc = prepare(s, &q,
                    "UPDATE leaf_alloc SET step = ?2, update_time = "
                    "CURRENT_TIMESTAMP WHERE biz_tag = ?1",
                    err)) != 0)
    return rc;
  sqlite3_bind_text(q, 1, tag, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 2, step);
  if ((rc = modify(s, q, &changes, err)) != 0)
    return rc;
  if (changes == 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  return 0;
}

static int sqlite_tag_delete(frond_store *st, const char *tag,
                             frond_error *err) {
  sqlite_store *s = (sqlite_store *)st;
  sqlite3_stmt *q;
  int rc, changes = 0;
  if ((rc = prepare(s, &q, "DELETE FROM leaf_alloc WHERE biz_tag = ?1", err)) !=
      0)
    return rc;
  sqlite3_bind_text(q, 1, tag, -1, SQLITE_STATIC);
  if ((rc = modify(s, q, &changes, err)) != 0)
    return rc;
  if (changes == 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  return 0;
}

const frond_store_methods frond__store_sqlite = {
    1,
    "sqlite:",
    "sqlite",
    sqlite_open,
    sqlite_close,
    sqlite_ensure_schema,
    sqlite_alloc,
    sqlite_tag_list,
    sqlite_tag_get,
    sqlite_tag_create,
    sqlite_tag_set_step,
    sqlite_tag_delete,
};
