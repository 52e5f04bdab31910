/* SPDX-License-Identifier: Apache-2.0 */
/*
** db.c -- the engine-neutral half of the SQL layer: templates rendered
** per dialect, the statement cache, transactions and their failure rules,
** and RETURNING or its emulation, and the URI grammar (a MySQL URI is
** taken apart by db_uri.c). The engines (db_sqlite.c, db_pg.c,
** db_mysql.c) only talk to their library; the rows and failures they hand
** up are db_common.c's.
*/
#include "store/db.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Statements kept prepared per connection: the segment store uses 8, the
** lease coordinator as many; the least recently used goes first. */
#define CACHE_MAX 16

typedef struct frond_db_cached {
  char *sql; /* the template: the key, with types */
  char types[FROND_DB_MAX_ARGS + 1];
  void *stmt;
  int nparam, nslots;
  int absent; /* has {if_absent:K} on a FROND_DB_ABSENT_BY_ERROR engine */
  unsigned char slots[FROND_DB_MAX_SLOTS];
  uint64_t used;
} frond_db_cached;

/* ---- URIs ---- */

/* An engine this build leaves out (FROND_WITH_PG=OFF, ...) keeps its
** schemes with no methods and its name, so that its URIs say why they
** fail. */
static const struct {
  const char *prefix;
  const frond_db_methods *m;
  const char *missing; /* what the build left out */
} schemes[] = {
    {"sqlite:", &frond__db_sqlite, NULL},
#ifdef FROND_WITH_PG
    {"postgresql://", &frond__db_pg, NULL},
    {"postgres://", &frond__db_pg, NULL},
#else
    {"postgresql://", NULL, "PostgreSQL support (FROND_WITH_PG=OFF)"},
    {"postgres://", NULL, "PostgreSQL support (FROND_WITH_PG=OFF)"},
#endif
#ifdef FROND_WITH_MYSQL
    {"mysql://", &frond__db_mysql, NULL},
    {"mariadb://", &frond__db_mysql, NULL},
#else
    {"mysql://", NULL, "MySQL/MariaDB support (FROND_WITH_MYSQL=OFF)"},
    {"mariadb://", NULL, "MySQL/MariaDB support (FROND_WITH_MYSQL=OFF)"},
#endif
};

#define EXPECTED                                                               \
  "sqlite:///abs/path.db, sqlite:relative.db, postgresql://..., "              \
  "mysql://... or multi:URI|URI..."

/* uri for a message, at most len - 1 bytes, its password as "***". */
static void redact(const char *uri, char *out, size_t len) {
  frond__uri_redact(uri, strlen(uri), out, len);
}

int frond__db_uri_parse(const char *uri, frond_db_uri *out, frond_error *err) {
  char shown[240];
  const char *p;
  size_t i;
  memset(out, 0, sizeof(*out));
  if (uri == NULL || *uri == '\0')
    return frond__fail(err, FROND_ESTORE_URI, "no database URI (expected %s)",
                       EXPECTED);
  for (p = uri; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return frond__fail(err, FROND_ESTORE_URI,
                         "database URI has a control character at byte %zu",
                         (size_t)(p - uri));
  for (i = 0; i < FROND__ARRAY_SIZE(schemes); i++)
    if (strncmp(uri, schemes[i].prefix, strlen(schemes[i].prefix)) == 0)
      break;
  if (i == FROND__ARRAY_SIZE(schemes) && strncmp(uri, "frond://", 8) == 0)
    return frond__fail(err, FROND_ESTORE_URI,
                       "a frond:// URI names Frond servers, not a database: "
                       "it leases segment ranges only; node IDs, a multi: "
                       "member and the lease live in a database (the one "
                       "those servers use)");
  if (i == FROND__ARRAY_SIZE(schemes)) {
    redact(uri, shown, sizeof(shown));
    return frond__fail(err, FROND_ESTORE_URI,
                       "unsupported database URI \"%s\" (expected %s)", shown,
                       EXPECTED);
  }
  if (uri[0] == 'm') { /* mysql://, mariadb:// */
    frond_db_mysql_uri m;
    size_t n = (size_t)(p - uri) + 8;
    char *buf = malloc(n);
    int rc;
    if (buf == NULL)
      return frond__fail(err, FROND_ENOMEM, NULL);
    rc = frond__db_mysql_parse(uri, &m, buf, n, err);
    free(buf);
    if (rc != 0)
      return rc;
  }
  if (schemes[i].m == NULL) {
    redact(uri, shown, sizeof(shown));
    return frond__fail(err, FROND_ESTORE_URI,
                       "database URI \"%s\": built without %s", shown,
                       schemes[i].missing);
  }
  out->engine = schemes[i].m;
  if (uri[0] != 's') {
    out->target = uri;
    out->target_len = (size_t)(p - uri);
    return 0;
  }
  p = uri + strlen("sqlite:");
  if (strncmp(p, "//", 2) == 0) {
    p += 2;
    if (*p != '/' && *p != '\0')
      return frond__fail(err, FROND_ESTORE_URI,
                         "sqlite URI \"%.200s\" names a host; use "
                         "sqlite:///abs/path.db or sqlite:relative.db",
                         uri);
  }
  if (*p == '\0')
    return frond__fail(err, FROND_ESTORE_URI,
                       "sqlite URI \"%.200s\" has no file name", uri);
  if (strpbrk(p, "?#") != NULL)
    return frond__fail(err, FROND_ESTORE_URI,
                       "sqlite URI \"%.200s\" has options ('?' or '#'); a "
                       "sqlite URI is a path and takes none",
                       uri);
  out->target = p;
  out->target_len = strlen(p);
  out->memory = strcmp(p, ":memory:") == 0;
  return 0;
}

/* ---- templates ---- */

typedef struct sink {
  char *out;
  size_t len, n; /* n may pass len: the size needed */
  int absent;    /* {if_absent:K} was rendered */
} sink;

static void put(sink *s, const char *p, size_t n) {
  if (s->n < s->len)
    memcpy(s->out + s->n, p, s->n + n <= s->len ? n : s->len - s->n);
  s->n += n;
}

/* Dialect string d with every {x} replaced by arg. */
static void put_expanded(sink *s, const char *d, const char *arg, size_t alen) {
  const char *x;
  while ((x = strstr(d, "{x}")) != NULL) {
    put(s, d, (size_t)(x - d));
    put(s, arg, alen);
    d = x + 3;
  }
  put(s, d, strlen(d));
}

static int token(const frond_db_methods *m, sink *s, const char *t, size_t n,
                 frond_error *err) {
  static const struct {
    const char *name;
    int arg; /* takes an argument */
  } tokens[] = {{"now_ms", 0},  {"if_absent", 1}, {"binary", 1},
                {"ts_text", 1}, {"id", 1},        {"for_update", 0}};
  const char *colon = memchr(t, ':', n), *arg = colon ? colon + 1 : t + n;
  size_t name_len = (size_t)(arg - t) - (colon != NULL),
         alen = n - (size_t)(arg - t);
  size_t i, k;
  for (i = 0; i < FROND__ARRAY_SIZE(tokens); i++)
    if (strlen(tokens[i].name) == name_len &&
        memcmp(tokens[i].name, t, name_len) == 0)
      break;
  /* Arguments are names (columns, tables): nothing in them can open a
  ** quote, a parameter or a second statement once expanded. */
  for (k = 0; k < alen; k++)
    if (!isalnum((unsigned char)arg[k]) && arg[k] != '_' && arg[k] != '.')
      break;
  if (i == FROND__ARRAY_SIZE(tokens) ||
      (tokens[i].arg != 0) != (colon != NULL) || (colon != NULL && alen == 0) ||
      k < alen)
    return frond__fail(err, FROND_EINVAL, "SQL template: bad token {%.*s}",
                       (int)(n > 40 ? 40 : n), t);
  switch (i) {
  case 0:
    put(s, m->zNowMs, strlen(m->zNowMs));
    break;
  case 1:
    put_expanded(s, m->zIfAbsent, arg, alen);
    s->absent = 1;
    break;
  case 2:
    put_expanded(s, m->zBinary, arg, alen);
    break;
  case 3:
    put_expanded(s, m->zTsText, arg, alen);
    break;
  case 5:
    put(s, m->zForUpdate, strlen(m->zForUpdate));
    break;
  default:
    put(s, &m->cQuote, 1);
    put(s, arg, alen);
    put(s, &m->cQuote, 1);
  }
  return 0;
}

/* Render into s; see frond__db_render. */
static int render(const frond_db_methods *m, const char *sql, sink *s,
                  int *nparam, unsigned char *slots, int *nslots,
                  frond_error *err) {
  uint64_t seen = 0; /* bit k: $(k+1) appears */
  const char *p = sql, *q;
  int maxn = 0, ns = 0;
  char num[24];
  while (*p) {
    if (*p == '\'' || *p == '"' || *p == '`') {
      /* A quoted literal or identifier, copied as is ('' is two). */
      if ((q = strchr(p + 1, *p)) == NULL)
        return frond__fail(err, FROND_EINVAL, "SQL template: unterminated %c",
                           *p);
      put(s, p, (size_t)(q + 1 - p));
      p = q + 1;
    } else if (*p == '$' && isdigit((unsigned char)p[1])) {
      int n = 0;
      for (q = p + 1; isdigit((unsigned char)*q) && n <= FROND_DB_MAX_ARGS; q++)
        n = n * 10 + (*q - '0');
      if (n < 1 || n > FROND_DB_MAX_ARGS || isdigit((unsigned char)*q))
        return frond__fail(err, FROND_EINVAL,
                           "SQL template: parameter out of $1..$%d",
                           FROND_DB_MAX_ARGS);
      if (ns == FROND_DB_MAX_SLOTS)
        return frond__fail(err, FROND_EINVAL,
                           "SQL template: more than %d parameters",
                           FROND_DB_MAX_SLOTS);
      slots[ns++] = (unsigned char)(n - 1);
      seen |= (uint64_t)1 << (n - 1);
      maxn = n > maxn ? n : maxn;
      if (m->cParam == 0)
        put(s, "?", 1);
      else
        put(s, num, (size_t)snprintf(num, sizeof(num), "%c%d", m->cParam, n));
      p = q;
    } else if (*p == '{') {
      if ((q = strchr(p, '}')) == NULL ||
          memchr(p + 1, '{', (size_t)(q - p - 1)))
        return frond__fail(err, FROND_EINVAL,
                           "SQL template: unterminated token");
      if (token(m, s, p + 1, (size_t)(q - p - 1), err) != 0)
        return FROND_EINVAL;
      p = q + 1;
    } else if (*p == '?' || *p == '}' || *p == ';') {
      /* '?' would be a parameter to some engines; ';' a second
      ** statement, which an engine would not run. */
      return frond__fail(err, FROND_EINVAL,
                         "SQL template: stray '%c' (parameters are $n)", *p);
    } else {
      put(s, p++, 1);
    }
  }
  if (maxn > 0 && seen != ((uint64_t)1 << maxn) - 1)
    return frond__fail(err, FROND_EINVAL,
                       "SQL template: $1..$%d are not all used", maxn);
  put(s, "", 1);
  *nparam = maxn;
  *nslots = ns;
  return 0;
}

int frond__db_render(const frond_db_methods *m, const char *sql, char *out,
                     size_t len, int *nparam, unsigned char *slots, int *nslots,
                     frond_error *err) {
  sink s = {out, len, 0, 0};
  int rc = render(m, sql, &s, nparam, slots, nslots, err);
  if (rc == 0 && s.n > len)
    return frond__fail(err, FROND_EINVAL,
                       "SQL template: %zu bytes rendered, room for %zu", s.n,
                       len);
  return rc;
}

/* ---- connections ---- */

/* uri parsed, and refused when no option allows what it asks for. */
static int uri_usable(const char *uri, const frond_db_options *o,
                      frond_db_uri *u, frond_error *err) {
  int rc = frond__db_uri_parse(uri, u, err);
  if (rc == 0 && u->memory && !(o != NULL && o->allow_memory))
    return frond__fail(err, FROND_ESTORE_URI,
                       "sqlite::memory: forgets everything when it is "
                       "closed; give a file (sqlite:///abs/path.db)");
  return rc;
}

int frond__db_uri_check(const char *uri, frond_error *err) {
  frond_db_uri u;
  return uri_usable(uri, NULL, &u, err);
}

int frond__db_open(const char *uri, const frond_db_options *o, frond_db **out,
                   frond_error *err) {
  frond_db_uri u;
  frond_db *db;
  int rc;
  *out = NULL;
  if ((rc = uri_usable(uri, o, &u, err)) != 0)
    return rc;
  if ((db = calloc(1, u.engine->szDb)) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  db->m = u.engine;
  if (o != NULL)
    db->o = *o;
  /* Both go to ints (SQLite's busy timeout, seconds for libpq). */
  if (db->o.statement_timeout_ms <= 0)
    db->o.statement_timeout_ms = 10000;
  if (db->o.statement_timeout_ms > INT32_MAX)
    db->o.statement_timeout_ms = INT32_MAX;
  if (db->o.connect_timeout_ms > INT32_MAX)
    db->o.connect_timeout_ms = INT32_MAX;
  if (db->o.application_name == NULL)
    db->o.application_name = "frond";
  if (db->o.answer_timeout_ms <= 0)
    db->o.answer_timeout_ms =
        db->o.statement_timeout_ms +
        (db->o.connect_timeout_ms > 0 ? db->o.connect_timeout_ms : 5000);
  db->answer_ms = db->o.answer_timeout_ms;
  db->flags = u.engine->flags;
  if ((rc = db->m->xOpen(db, &u, err)) != 0) {
    free(db);
    return rc;
  }
  /* The options' strings were read by xOpen; none is kept. */
  db->o.application_name = NULL;
  *out = db;
  return 0;
}

void frond__db_close(frond_db *db) {
  int i;
  if (db == NULL)
    return;
  frond__db_rollback(db);
  db->closing = 1;
  for (i = 0; i < db->ncache; i++) {
    db->m->xFinalize(db, db->cache[i].stmt);
    free(db->cache[i].sql);
  }
  free(db->cache);
  db->m->xClose(db);
  free(db);
}

const char *frond__db_engine(const frond_db *db) {
  return db->m->zName;
}

int frond__db_error_class(const frond_db *db) {
  return db->err_class;
}

void frond__db_set_answer_timeout(frond_db *db, int64_t ms) {
  db->answer_ms = ms > 0 ? ms : db->o.answer_timeout_ms;
}

void frond__db_set_deadline(frond_db *db, int64_t mono_ns) {
  db->deadline_ns = mono_ns;
}

void frond__db_test_clear_flags(frond_db *db, unsigned flags) {
  db->flags &= ~flags;
}

/* ---- statements ---- */

/* The prepared statement for (sql, argument types), made on a miss. */
static int prepared(frond_db *db, const char *sql, const frond_db_arg *args,
                    int nargs, frond_db_cached **out, frond_error *err) {
  char types[FROND_DB_MAX_ARGS + 1], bind[FROND_DB_MAX_SLOTS + 1];
  char stackbuf[4096], *text = stackbuf;
  frond_db_cached c, *e;
  sink s = {stackbuf, sizeof(stackbuf), 0, 0};
  int i, nbind, rc;
  for (i = 0; i < nargs; i++)
    types[i] = args[i].type;
  types[nargs] = '\0';
  for (i = 0; i < db->ncache; i++) {
    e = &db->cache[i];
    if (strcmp(e->sql, sql) == 0 && strcmp(e->types, types) == 0) {
      e->used = ++db->tick;
      *out = e;
      return 0;
    }
  }
  memset(&c, 0, sizeof(c));
  if ((rc = render(db->m, sql, &s, &c.nparam, c.slots, &c.nslots, err)) != 0)
    return rc;
  if (s.n > sizeof(stackbuf)) {
    if ((text = malloc(s.n)) == NULL)
      return frond__fail(err, FROND_ENOMEM, NULL);
    s = (sink){text, s.n, 0, 0};
    render(db->m, sql, &s, &c.nparam, c.slots, &c.nslots, err);
  }
  c.absent = s.absent && (db->flags & FROND_DB_ABSENT_BY_ERROR);
  if (c.nparam > nargs) {
    rc = frond__fail(err, FROND_EINVAL,
                     "SQL template uses $%d; %d arguments given", c.nparam,
                     nargs);
    goto fail;
  }
  /* What the engine binds: $1..$n, or each placeholder in order. */
  nbind = db->m->cParam ? c.nparam : c.nslots;
  for (i = 0; i < nbind; i++)
    bind[i] = args[db->m->cParam ? i : c.slots[i]].type;
  bind[nbind] = '\0';
  memcpy(c.types, types, (size_t)nargs + 1);
  if ((c.sql = strdup(sql)) == NULL) {
    rc = frond__fail(err, FROND_ENOMEM, NULL);
    goto fail;
  }
  if ((rc = db->m->xPrepare(db, text, nbind, bind, &c.stmt, err)) != 0) {
    free(c.sql);
    goto fail;
  }
  if (text != stackbuf)
    free(text);
  if (db->cache == NULL &&
      (db->cache = calloc(CACHE_MAX, sizeof(*db->cache))) == NULL) {
    db->m->xFinalize(db, c.stmt);
    free(c.sql);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  if (db->ncache < CACHE_MAX) {
    e = &db->cache[db->ncache++];
  } else {
    e = &db->cache[0];
    for (i = 1; i < CACHE_MAX; i++)
      if (db->cache[i].used < e->used)
        e = &db->cache[i];
    db->m->xFinalize(db, e->stmt);
    free(e->sql);
  }
  *e = c;
  e->used = ++db->tick;
  *out = e;
  return 0;
fail:
  if (text != stackbuf)
    free(text);
  return rc;
}

int frond__db_exec(frond_db *db, const char *sql, const frond_db_arg *args,
                   int nargs, frond_db_result *res, frond_error *err) {
  frond_db_arg ordered[FROND_DB_MAX_SLOTS];
  frond_db_result local = {0};
  frond_db_cached *c = NULL;
  const frond_db_arg *bind = args;
  int rc, k;
  if (nargs < 0 || nargs > FROND_DB_MAX_ARGS)
    return frond__fail(err, FROND_EINVAL, "%d SQL arguments", nargs);
  if (db->in_tx && db->tx_failed)
    return frond__db_fail(db, FROND_DB_ERROR, err, "statement",
                          "the transaction has failed; roll it back");
  if (res == NULL)
    res = &local;
  db->err_class = FROND_DB_OK;
  if ((rc = prepared(db, sql, args, nargs, &c, err)) == 0) {
    if (db->m->cParam == 0) {
      for (k = 0; k < c->nslots; k++)
        ordered[k] = args[c->slots[k]];
      bind = ordered;
    }
    rc = db->m->xRun(db, c->stmt, bind, res, err);
    if (rc != 0 && c->absent && db->err_class == FROND_DB_UNIQUE) {
      /* The row exists: nothing inserted, which is the statement's
      ** meaning (the engine rolled back this statement only). */
      frond__db_result_start(res, 0);
      db->err_class = FROND_DB_OK;
      rc = 0;
    }
  }
  if (rc != 0) {
    /* A template the engine could not prepare is the caller's error
    ** class too: it failed. */
    if (db->err_class == FROND_DB_OK)
      db->err_class = FROND_DB_ERROR;
    db->tx_failed = db->in_tx;
    frond__db_result_start(res, 0);
  }
  frond__db_result_free(&local);
  return rc;
}

int frond__db_write_returning(frond_db *db, const char *write, const char *cols,
                              const char *back, const frond_db_arg *args,
                              int nargs, frond_db_result *res,
                              frond_error *err) {
  frond_db_result local = {0};
  int rc, own;
  int64_t changes;
  if (res == NULL)
    res = &local;
  if (db->flags & FROND_DB_RETURNING) {
    size_t n = strlen(write) + strlen(cols) + sizeof(" RETURNING ");
    char *sql = malloc(n);
    if (sql == NULL)
      return frond__fail(err, FROND_ENOMEM, NULL);
    snprintf(sql, n, "%s RETURNING %s", write, cols);
    rc = frond__db_exec(db, sql, args, nargs, res, err);
    free(sql);
    frond__db_result_free(&local);
    return rc;
  }
  /* The emulation: the write, then the row read back by the same
  ** transaction, which still holds the row's write lock. */
  own = !db->in_tx;
  if (own && (rc = frond__db_begin(db, err)) != 0)
    return rc;
  rc = frond__db_exec(db, write, args, nargs, res, err);
  changes = res->changes;
  if (rc == 0 && changes > 0)
    rc = frond__db_exec(db, back, args, nargs, res, err);
  res->changes = changes;
  if (own) {
    if (rc == 0)
      rc = frond__db_commit(db, err);
    else
      frond__db_rollback(db);
  }
  if (rc != 0)
    frond__db_result_start(res, 0);
  frond__db_result_free(&local);
  return rc;
}

/* ---- transactions ---- */

int frond__db_begin(frond_db *db, frond_error *err) {
  int rc;
  if (db->in_tx)
    return frond__fail(err, FROND_EINVAL, "a transaction is already open");
  if ((rc = db->m->xBegin(db, err)) != 0)
    return rc;
  db->in_tx = 1;
  db->tx_failed = 0;
  db->err_class = FROND_DB_OK;
  return 0;
}

int frond__db_commit(frond_db *db, frond_error *err) {
  int rc;
  if (!db->in_tx)
    return frond__fail(err, FROND_EINVAL, "no transaction to commit");
  if (db->tx_failed) {
    frond__db_rollback(db);
    return frond__db_fail(db, FROND_DB_ERROR, err, "commit",
                          "a statement of the transaction failed; it was "
                          "rolled back");
  }
  /* The engine leaves the connection outside any transaction, whatever
  ** the outcome. */
  rc = db->m->xCommit(db, err);
  db->in_tx = 0;
  if (rc == 0)
    db->err_class = FROND_DB_OK;
  return rc;
}

void frond__db_rollback(frond_db *db) {
  if (!db->in_tx)
    return;
  db->m->xRollback(db);
  db->in_tx = 0;
  db->tx_failed = 0;
}

int frond__db_table_exists(frond_db *db, const char *name, int *exists,
                           frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(name);
  int rc = frond__db_exec(db, db->m->zTableExists, &a, 1, &r, err);
  *exists = rc == 0 && r.nrows > 0;
  frond__db_result_free(&r);
  return rc;
}

int frond__db_ensure_table(frond_db *db, const char *name, const char *ddl,
                           frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(name);
  const char *why;
  int rc = frond__db_exec(db, db->m->zTableExists, &a, 1, &r, err);
  if (rc == 0 && r.nrows == 0 &&
      (rc = frond__db_exec(db, ddl, NULL, 0, NULL, err)) != 0 &&
      frond__db_exec(db, db->m->zTableExists, &a, 1, &r, NULL) == 0 &&
      r.nrows > 0)
    rc = 0; /* a concurrent creator won the race: its table will do */
  if (rc == 0 && db->m->zTableCheck != NULL &&
      (rc = frond__db_exec(db, db->m->zTableCheck, &a, 1, &r, err)) == 0 &&
      (why = frond__db_get_text(&r, 0, 0)) != NULL) {
    char what[160];
    snprintf(what, sizeof(what), "table %.100s", name);
    rc = frond__db_fail(db, FROND_DB_ERROR, err, what, why);
  }
  frond__db_result_free(&r);
  return rc;
}
