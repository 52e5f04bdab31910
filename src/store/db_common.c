/* SPDX-License-Identifier: Apache-2.0 */
/*
** db_common.c -- what db.c and every engine share, below both: the rows
** of a statement, copied out of the engine, a failure in the engine's own
** words (and whether retrying could help: the engines' numbers, classed
** here so that the classes are pure and tested in every build), the
** deadline of an answer, and where a URI's password is.
**
** The engines (db_sqlite.c, db_pg.c, db_mysql.c) call these; db.c calls the
*engines
** through their method tables. Keeping them here, and not in db.c, is
** what lets the calls run one way: db.c -> engine -> db_common.c.
*/
#include "store/db.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- URIs ---- */

int frond__db_uri_password(const char *uri, size_t *from, size_t *to) {
  const char *auth = strstr(uri, "://"), *at, *colon, *end;
  if (strncmp(uri, "frond://", 8) == 0) { /* its secret: ?token=... */
    const char *q = strchr(uri, '?'), *t;
    for (t = q; t != NULL; t = strchr(t + 1, '&'))
      if (strncmp(t + 1, "token=", 6) == 0) {
        *from = (size_t)(t + 7 - uri);
        *to = *from + strcspn(t + 7, "&#");
        return 1;
      }
    return 0;
  }
  if (auth == NULL)
    return 0;
  auth += 3;
  end = auth + strcspn(auth, "/?#");
  for (at = end; at > auth && at[-1] != '@'; at--)
    ;
  if (at == auth || (colon = memchr(auth, ':', (size_t)(at - auth))) == NULL)
    return 0;
  *from = (size_t)(colon + 1 - uri);
  *to = (size_t)(at - 1 - uri);
  return 1;
}

static int ci_prefix(const char *p, size_t n, const char *lower) {
  size_t i, m = strlen(lower);
  if (n < m)
    return 0;
  for (i = 0; i < m; i++)
    if (tolower((unsigned char)p[i]) != lower[i])
      return 0;
  return 1;
}

/* Where a URI keeps a password in its authority, whatever its scheme
** (misspelt or unknown: "postgres:/u:pw@h", "u:pw@h"): [*from, *to) of
** p[0..n), or 0. The authority starts after the first "://" (as
** frond__db_uri_password finds it), else after the scheme's ':' and any
** '/'. */
static int userinfo_password(const char *p, size_t n, size_t *from,
                             size_t *to) {
  size_t s = 0, e, at, colon, q;
  for (q = 0; q < n && p[q] != '?' && p[q] != '#'; q++)
    ;
  for (s = 0; s + 3 <= q && memcmp(p + s, "://", 3) != 0; s++)
    ;
  if (s + 3 <= q) {
    s += 3;
  } else {
    for (s = 0; s < q && strchr(":/@", p[s]) == NULL; s++)
      ;
    s = s < q && p[s] == ':' ? s + 1 : 0;
    while (s < q && p[s] == '/')
      s++;
  }
  for (e = s; e < q && p[e] != '/'; e++)
    ;
  for (at = e; at > s && p[at - 1] != '@'; at--)
    ;
  if (at == s)
    return 0;
  for (colon = s; colon < at - 1 && p[colon] != ':'; colon++)
    ;
  if (colon >= at - 1)
    return 0;
  *from = colon + 1;
  *to = at - 1;
  return 1;
}

/* m bytes of p at out[*k], as far as they fit before the NUL. */
static void put(char *out, size_t len, size_t *k, const char *p, size_t m) {
  for (; m > 0 && *k + 1 < len; m--)
    out[(*k)++] = *p++;
}

size_t frond__uri_redact(const char *p, size_t n, char *out, size_t len) {
  static const char *const keys[] = {"token=", "password="};
  size_t i = 0, k = 0, from = 0, to = 0, j, gfrom = 0, gto = 0;
  int pw = 0, g;
  if (len == 0)
    return 0;
  /* Also where frond__db_uri_password sees one in the whole string (p is
  ** a C string of n bytes): however a garbled URI reads, the two agree. */
  g = frond__db_uri_password(p, &gfrom, &gto) && gto > gfrom && gto <= n;
  if (ci_prefix(p, n, "multi:")) {
    put(out, len, &k, p, 6);
    i = 6;
  }
  for (size_t m = i; i < n;) { /* m: where the member i is in begins */
    size_t key = 0, v;
    if (i == m) { /* each member's user:password@ in its own authority */
      size_t e = m;
      while (e < n && p[e] != '|')
        e++;
      pw = userinfo_password(p + m, e - m, &from, &to) && to > from;
    }
    if (g && i >= gfrom && i < gto) {
      put(out, len, &k, "***", 3);
      i = gto;
      continue;
    }
    if (pw && i == m + from) {
      put(out, len, &k, "***", 3);
      i = m + to;
      continue;
    }
    for (j = 0; j < FROND__ARRAY_SIZE(keys) && key == 0; j++)
      if (ci_prefix(p + i, n - i, keys[j]))
        key = strlen(keys[j]);
    if (key == 0) {
      if (p[i] == '|')
        m = i + 1;
      put(out, len, &k, p + i++, 1);
      continue;
    }
    /* A secret in the query, however spelt: its value hidden. */
    put(out, len, &k, p + i, key);
    for (i = v = i + key; i < n && strchr("&#?;| ", p[i]) == NULL; i++)
      ;
    if (i > v)
      put(out, len, &k, "***", 3);
  }
  out[k] = '\0';
  return k;
}

/* ---- deadlines ---- */

int64_t frond__db_connect_deadline(const frond_db *db) {
  int64_t a = db->o.connect_deadline_ns, b = db->deadline_ns;
  return a > 0 && (b <= 0 || a < b) ? a : b > 0 ? b : 0;
}

int64_t frond__db_deadline(const frond_db *db) {
  int64_t d = frond__mono_ns() + db->answer_ms * 1000000;
  return db->deadline_ns > 0 && db->deadline_ns < d ? db->deadline_ns : d;
}

/* ---- results ---- */

void frond__db_result_free(frond_db_result *r) {
  free(r->cells);
  free(r->text);
  memset(r, 0, sizeof(*r));
}

void frond__db_result_start(frond_db_result *r, int ncols) {
  r->nrows = 0;
  r->ncols = ncols;
  r->changes = 0;
  r->ncells = 0;
  r->text_len = 0;
}

int frond__db_result_put(frond_db_result *r, char type, int64_t i,
                         const char *text, size_t len) {
  char num[FROND__DEC_MAX];
  frond_db_cell *c;
  if (type == FROND_DB_INT && text == NULL)
    len = frond__dec_i64(num, i), text = num;
  else if (type == FROND_DB_NULL)
    text = "", len = 0;
  if (r->ncells == r->cells_cap) {
    size_t cap = r->cells_cap ? r->cells_cap * 2 : 16;
    if ((c = realloc(r->cells, cap * sizeof(*c))) == NULL)
      return FROND_ENOMEM;
    r->cells = c;
    r->cells_cap = cap;
  }
  if (r->text_len + len + 1 > r->text_cap) {
    size_t cap = r->text_cap ? r->text_cap : 256;
    char *t;
    while (cap < r->text_len + len + 1)
      cap *= 2;
    if ((t = realloc(r->text, cap)) == NULL)
      return FROND_ENOMEM;
    r->text = t;
    r->text_cap = cap;
  }
  c = &r->cells[r->ncells++];
  c->type = type;
  c->i = type == FROND_DB_INT ? i : 0;
  c->off = r->text_len;
  memcpy(r->text + r->text_len, text, len);
  r->text[r->text_len + len] = '\0';
  r->text_len += len + 1;
  if (r->ncols > 0 && r->ncells % (size_t)r->ncols == 0)
    r->nrows = (int)(r->ncells / (size_t)r->ncols);
  return 0;
}

static const frond_db_cell *cell(const frond_db_result *r, int row, int col) {
  if (row < 0 || col < 0 || row >= r->nrows || col >= r->ncols)
    return NULL;
  return &r->cells[(size_t)row * (size_t)r->ncols + (size_t)col];
}

int frond__db_get_int(const frond_db_result *r, int row, int col, int64_t *out,
                      frond_error *err) {
  const frond_db_cell *c = cell(r, row, col);
  const char *t;
  if (c == NULL)
    return frond__fail(err, FROND_ESTORE,
                       "no cell (%d, %d) in a %d x %d "
                       "result",
                       row, col, r->nrows, r->ncols);
  if (c->type == FROND_DB_INT) {
    *out = c->i;
    return 0;
  }
  t = r->text + c->off;
  if (c->type == FROND_DB_NULL)
    return frond__fail(err, FROND_ESTORE, "column %d is NULL", col + 1);
  if (frond__parse_i64(t, strlen(t), out) != 0)
    return frond__fail(err, FROND_ESTORE,
                       "column %d is not an integer: \"%.40s\"", col + 1, t);
  return 0;
}

const char *frond__db_get_text(const frond_db_result *r, int row, int col) {
  const frond_db_cell *c = cell(r, row, col);
  return c == NULL || c->type == FROND_DB_NULL ? NULL : r->text + c->off;
}

int frond__db_is_null(const frond_db_result *r, int row, int col) {
  const frond_db_cell *c = cell(r, row, col);
  return c == NULL || c->type == FROND_DB_NULL;
}

/* ---- failures ---- */

int frond__db_fail(frond_db *db, int cls, frond_error *err, const char *what,
                   const char *words) {
  char line[400];
  size_t n = 0;
  int gap = 0;
  const char *p;
  /* The engine's words on one line: libpq's hints span several. */
  for (p = words ? words : "unknown error"; *p && n + 2 < sizeof(line); p++) {
    if (isspace((unsigned char)*p)) {
      gap = n > 0;
      continue;
    }
    if (gap)
      line[n++] = ' ';
    gap = 0;
    line[n++] = *p;
  }
  line[n] = '\0';
  db->err_class = cls;
  return frond__fail(
      err, cls == FROND_DB_PERMANENT ? FROND_ESTORE_PERMANENT : FROND_ESTORE,
      "%s: %s: %s", db->m->zName, what, line);
}

/* ---- permanent or transient ---- */

int frond__db_transient(int code) {
  return code == FROND_ESTORE;
}

/* Item i of a libpq list (db.h) (commas, a backslash escaping the next
** character) into out; the number of items. NULL or "" is one empty
** item, as libpq reads it. */
int frond__db_pg_list_item(const char *list, int i, char *out, size_t len) {
  int k = 0;
  size_t n = 0;
  if (out != NULL && len > 0)
    out[0] = '\0';
  for (; list != NULL && *list; list++) {
    if (*list == ',') {
      k++;
      continue;
    }
    if (*list == '\\' && list[1])
      list++;
    if (k == i && out != NULL && n + 1 < len) {
      out[n++] = *list;
      out[n] = '\0';
    }
  }
  return k + 1;
}

int frond__db_pg_state_class(const char *state) {
  /* 28: invalid authorization (a wrong password, no such role, no
  ** pg_hba.conf entry); 3D: no such database; 42501: no privilege (on the
  ** database at connect, on the schema or the table after). Not 08
  ** (connection), 53 (resources: too many connections), 57 (shutting down,
  ** starting up), 40 (serialization, deadlock), 25006 (a standby, read
  ** only, while failing over): those pass. */
  if (state == NULL || strlen(state) != 5)
    return FROND_DB_ERROR;
  if (strncmp(state, "28", 2) == 0 || strncmp(state, "3D", 2) == 0 ||
      strcmp(state, "42501") == 0)
    return FROND_DB_PERMANENT;
  return FROND_DB_ERROR;
}

int frond__db_pg_message_state(const char *msg, char state[6]) {
  const char *p;
  int found = 0;
  state[0] = '\0';
  /* libpq writes "SEVERITY:  SQLSTATE: message"; the severity is one
  ** upper-case word (localized, so any letters), two spaces after its
  ** colon. */
  for (p = msg; p != NULL && (p = strstr(p, ":  ")) != NULL; p++) {
    const char *q = p + 3;
    int i;
    for (i = 0; i < 5; i++)
      if (!isdigit((unsigned char)q[i]) && !isupper((unsigned char)q[i]))
        break;
    if (i == 5 && q[5] == ':') {
      memcpy(state, q, 5);
      state[5] = '\0';
      found = 1;
    }
  }
  return found;
}

int frond__db_mysql_errno_class(unsigned no) {
  switch (no) {
  case 1044: /* ER_DBACCESS_DENIED_ERROR: no access to the database */
  case 1045: /* ER_ACCESS_DENIED_ERROR: a wrong user or password */
  case 1049: /* ER_BAD_DB_ERROR: no such database */
  case 1142: /* ER_TABLEACCESS_DENIED_ERROR */
  case 1143: /* ER_COLUMNACCESS_DENIED_ERROR */
  case 1227: /* ER_SPECIFIC_ACCESS_DENIED_ERROR */
  case 1251: /* ER_NOT_SUPPORTED_AUTH_MODE: the client cannot log in so */
  case 1698: /* ER_ACCESS_DENIED_NO_PASSWORD_ERROR */
  case 1820: /* ER_MUST_CHANGE_PASSWORD */
  case 1862: /* ER_MUST_CHANGE_PASSWORD_LOGIN */
  case 2059: /* CR_AUTH_PLUGIN_CANNOT_LOAD */
  case 3118: /* MySQL: ER_ACCOUNT_HAS_BEEN_LOCKED */
  case 4151: /* MariaDB: ER_ACCOUNT_HAS_BEEN_LOCKED */
    return FROND_DB_PERMANENT;
  default: /* 2002, 2003, 2013 (unreachable, lost), 1040 (too many
           ** connections), 1053 (shutting down), 1205, 1213 (locks),
           ** 1290 (read only while failing over), ... */
    return FROND_DB_ERROR;
  }
}
