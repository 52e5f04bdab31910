/* SPDX-License-Identifier: Apache-2.0 */
/*
** db_sqlite.c -- the SQLite engine of the SQL layer (db.h).
**
** One connection per frond_db, opened NOMUTEX (the user serializes, see
** db.h), in WAL mode with synchronous=FULL and a busy timeout. Statements
** are prepared once (SQLITE_PREPARE_PERSISTENT) and run to their end
** before the call returns, so that a statement outside a transaction has
** committed when the caller sees its rows. A file that cannot be opened
** or written fails for good (STORE_PERMANENT, db.h), with SQLite's and
** the system's words and, for a missing directory, which one.
*/
#include "store/db.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct sq_db {
  frond_db base;
  sqlite3 *h;
} sq_db;

typedef struct sq_stmt {
  sqlite3_stmt *st;
  int nparam;
  char what[16]; /* the statement's first word, for messages */
} sq_stmt;

int frond__sqlite_use_wal(sqlite3 *db, int timeout_ms) {
  int64_t deadline = frond__mono_ns() + (int64_t)timeout_ms * 1000000;
  int rc;
  while ((rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL)) !=
         SQLITE_OK) {
    int base = rc & 0xff;
    if ((base != SQLITE_BUSY && base != SQLITE_LOCKED) ||
        frond__mono_ns() > deadline)
      break;
    frond__sleep_ns(5 * 1000000);
  }
  return rc;
}

/* Retrying cannot help a file that cannot be opened or written (a missing
** directory, permissions, a read-only file or file system), nor one that
** is not a database or is damaged; BUSY, LOCKED, IOERR, FULL, NOMEM can
** pass. */
static int sq_class(int x) {
  switch (x & 0xff) {
  case SQLITE_CONSTRAINT:
    return x == SQLITE_CONSTRAINT_PRIMARYKEY || x == SQLITE_CONSTRAINT_UNIQUE
               ? FROND_DB_UNIQUE
               : FROND_DB_ERROR;
  case SQLITE_CANTOPEN:
  case SQLITE_READONLY:
  case SQLITE_PERM:
  case SQLITE_AUTH:
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
    return FROND_DB_PERMANENT;
  default:
    return FROND_DB_ERROR;
  }
}

/* What the system said, when it said something (a missing directory). */
static void sq_words(sqlite3 *h, int x, const char *path, char *out,
                     size_t len) {
  int e = h ? sqlite3_system_errno(h) : 0;
  const char *slash;
  char dir[512];
  struct stat st;
  size_t n;
  snprintf(out, len, "%s", h ? sqlite3_errmsg(h) : sqlite3_errstr(x));
  if (e != 0)
    snprintf(out + strlen(out), len - strlen(out), ": %s", strerror(e));
  if ((x & 0xff) != SQLITE_CANTOPEN || path == NULL)
    return;
  /* Say which: the directory, or the file in it. */
  slash = strrchr(path, '/');
  n = slash == NULL ? 1 : slash == path ? 1 : (size_t)(slash - path);
  snprintf(dir, sizeof(dir), "%.*s", (int)n, slash ? path : ".");
  if (stat(dir, &st) != 0)
    snprintf(out + strlen(out), len - strlen(out),
             " (the directory %.200s does not exist)", dir);
  else if (!S_ISDIR(st.st_mode))
    snprintf(out + strlen(out), len - strlen(out),
             " (%.200s is not a directory)", dir);
  else if (access(dir, W_OK | X_OK) != 0)
    snprintf(out + strlen(out), len - strlen(out),
             " (this user cannot write in the directory %.200s)", dir);
}

static int sq_fail(sq_db *s, frond_error *err, const char *what) {
  int x = sqlite3_extended_errcode(s->h);
  char words[400];
  sq_words(s->h, x, NULL, words, sizeof(words));
  return frond__db_fail(&s->base, sq_class(x), err, what, words);
}

static int sq_exec(sq_db *s, const char *sql, frond_error *err) {
  if (sqlite3_exec(s->h, sql, NULL, NULL, NULL) != SQLITE_OK)
    return sq_fail(s, err, sql);
  return 0;
}

static void sq_close(frond_db *db) {
  sq_db *s = (sq_db *)db;
  sqlite3_close(s->h); /* statements are finalized before (db.c) */
}

static int sq_open(frond_db *db, const frond_db_uri *u, frond_error *err) {
  sq_db *s = (sq_db *)db;
  int64_t wal_ms =
      db->o.connect_timeout_ms > 0 ? db->o.connect_timeout_ms : 10000;
  char *path = malloc(u->target_len + 3);
  int rc;
  if (path == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  /* This SQLite may read names that begin with "file:" as its own URIs
  ** (mode=memory, ...): a relative path is made explicit so that only
  ** db.h's grammar applies. */
  snprintf(path, u->target_len + 3, "%s%.*s",
           strncmp(u->target, "file:", 5) == 0 ? "./" : "", (int)u->target_len,
           u->target);
  rc = sqlite3_open_v2(
      path, &s->h,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    char words[400], what[240];
    int x = s->h ? sqlite3_extended_errcode(s->h) : rc;
    sq_words(s->h, x, path, words, sizeof(words));
    snprintf(what, sizeof(what), "cannot open %.200s", path);
    rc = frond__db_fail(db, sq_class(x), err, what, words);
    free(path);
    sqlite3_close(s->h);
    return rc;
  }
  sqlite3_extended_result_codes(s->h, 1);
  sqlite3_busy_timeout(s->h, (int)db->o.statement_timeout_ms);
  if (sqlite3_db_readonly(s->h, "main") == 1) {
    /* Opened read-only (the file or the file system is): every
    ** allocation would fail. */
    char what[240];
    snprintf(what, sizeof(what), "cannot write %.200s", path);
    rc = frond__db_fail(db, FROND_DB_PERMANENT, err, what,
                        "the file is read-only for this user");
  } else if (frond__sqlite_use_wal(s->h, (int)wal_ms) != SQLITE_OK) {
    rc = sq_fail(s, err, "PRAGMA journal_mode=WAL");
  } else {
    rc = sq_exec(s, "PRAGMA synchronous=FULL", err);
  }
  free(path);
  if (rc != 0) {
    sqlite3_close(s->h);
    return rc;
  }
  if (sqlite3_libversion_number() < 3035000)
    db->flags &= ~(unsigned)FROND_DB_RETURNING; /* RETURNING came in 3.35 */
  return 0;
}

static int sq_prepare(frond_db *db, const char *sql, int nparam,
                      const char *types, void **out, frond_error *err) {
  sq_db *s = (sq_db *)db;
  sq_stmt *q = calloc(1, sizeof(*q));
  const char *tail = NULL;
  size_t i;
  (void)types; /* SQLite types each value as it is bound */
  if (q == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  for (i = 0; sql[i] && sql[i] != ' ' && i + 1 < sizeof(q->what); i++)
    q->what[i] = (char)(sql[i] | 0x20);
  if (sqlite3_prepare_v3(s->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &q->st,
                         &tail) != SQLITE_OK) {
    free(q);
    return sq_fail(s, err, "prepare");
  }
  if (q->st == NULL || (tail != NULL && tail[strspn(tail, " \t\n")] != '\0')) {
    sqlite3_finalize(q->st);
    free(q);
    return frond__fail(err, FROND_EINVAL, "SQL template is not one statement");
  }
  q->nparam = nparam;
  *out = q;
  return 0;
}

static void sq_finalize(frond_db *db, void *stmt) {
  sq_stmt *q = stmt;
  (void)db;
  sqlite3_finalize(q->st);
  free(q);
}

static int sq_run(frond_db *db, void *stmt, const frond_db_arg *args,
                  frond_db_result *res, frond_error *err) {
  sq_db *s = (sq_db *)db;
  sq_stmt *q = stmt;
  sqlite3_stmt *st = q->st;
  sqlite3_int64 total = sqlite3_total_changes64(s->h);
  int i, rc, ncols = sqlite3_column_count(st);
  for (i = 0, rc = SQLITE_OK; i < q->nparam && rc == SQLITE_OK; i++) {
    if (args[i].type == FROND_DB_INT)
      rc = sqlite3_bind_int64(st, i + 1, args[i].i);
    else if (args[i].type == FROND_DB_TEXT)
      rc = sqlite3_bind_text(st, i + 1, args[i].s, -1, SQLITE_STATIC);
    else
      rc = sqlite3_bind_null(st, i + 1);
  }
  /* A deadline (frond__db_set_deadline) caps the wait for a lock too: the
  ** busy timeout is what SQLite waits, the rest of the time to it. */
  if (db->deadline_ns > 0) {
    int64_t left = (db->deadline_ns - frond__mono_ns()) / 1000000;
    sqlite3_busy_timeout(s->h, left < 1 ? 1
                               : left < db->o.statement_timeout_ms
                                   ? (int)left
                                   : (int)db->o.statement_timeout_ms);
  }
  frond__db_result_start(res, ncols);
  while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (i = 0, rc = SQLITE_OK; i < ncols && rc == SQLITE_OK; i++) {
      int t = sqlite3_column_type(st, i);
      if (t == SQLITE_NULL)
        rc = frond__db_result_put(res, FROND_DB_NULL, 0, NULL, 0);
      else if (t == SQLITE_INTEGER)
        rc = frond__db_result_put(res, FROND_DB_INT,
                                  sqlite3_column_int64(st, i), NULL, 0);
      else /* text, and a real or blob as SQLite writes it in text */
        rc = frond__db_result_put(res, FROND_DB_TEXT, 0,
                                  (const char *)sqlite3_column_text(st, i),
                                  (size_t)sqlite3_column_bytes(st, i));
    }
    if (rc == FROND_ENOMEM) {
      sqlite3_reset(st);
      sqlite3_clear_bindings(st);
      return frond__fail(err, FROND_ENOMEM, NULL);
    }
    rc = SQLITE_OK;
  }
  if (rc == SQLITE_DONE) {
    /* This statement's own count, and only if it wrote: sqlite3_changes
    ** keeps the last writer's count through DDL and SELECTs. */
    if (sqlite3_total_changes64(s->h) != total)
      res->changes = sqlite3_changes64(s->h);
    rc = 0;
  } else {
    rc = sq_fail(s, err, q->what);
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (db->deadline_ns > 0)
    sqlite3_busy_timeout(s->h, (int)db->o.statement_timeout_ms);
  return rc;
}

static int sq_begin(frond_db *db, frond_error *err) {
  return sq_exec((sq_db *)db, "BEGIN IMMEDIATE", err);
}

static int sq_commit(frond_db *db, frond_error *err) {
  sq_db *s = (sq_db *)db;
  int rc = sq_exec(s, "COMMIT", err);
  if (rc != 0 && !sqlite3_get_autocommit(s->h))
    sqlite3_exec(s->h, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

static void sq_rollback(frond_db *db) {
  sq_db *s = (sq_db *)db;
  if (!sqlite3_get_autocommit(s->h))
    sqlite3_exec(s->h, "ROLLBACK", NULL, NULL, NULL);
}

const frond_db_methods frond__db_sqlite = {
    .iVersion = 1,
    .zName = "sqlite",
    .szDb = sizeof(sq_db),
    .xOpen = sq_open,
    .xClose = sq_close,
    .xPrepare = sq_prepare,
    .xRun = sq_run,
    .xFinalize = sq_finalize,
    .xBegin = sq_begin,
    .xCommit = sq_commit,
    .xRollback = sq_rollback,
    .cParam = '?',
    .cQuote = '"',
    .flags = FROND_DB_RETURNING,
    .zNowMs = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
    .zIfAbsent = "ON CONFLICT ({x}) DO NOTHING",
    .zBinary = "{x} COLLATE BINARY",
    .zTsText = "{x}",
    .zTableExists =
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1",
    .zForUpdate = "",
};
