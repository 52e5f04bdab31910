/* SPDX-License-Identifier: Apache-2.0 */
/*
** check_rows.c -- `frond check`'s verdict helpers, and its rows about the
** facts a fleet keeps in its store: formats' keys and tags' floors.
**
** Every read here is a read: no table is made, no record written, no
** SQLite file created. A record that does not exist yet is what a start
** would write first, and says so.
*/
#include "cli/check.h"
#include "core/core.h"
#include "server/node.h"
#include "store/db.h"
#include "store/store.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int frond__check_say(frond__verdict *v, int status, int code, const char *fmt,
                     ...) {
  va_list ap;
  v->status = status;
  v->code = code;
  va_start(ap, fmt);
  vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
  va_end(ap);
  return status;
}

int frond__check_fail(frond__verdict *v, int status, const frond_error *e) {
  return frond__check_say(v, status, e->code, "%s", e->message);
}

int frond__check_sqlite_absent(const char *uri, char *out, size_t len,
                               frond_error *e) {
  frond_db_uri u;
  char path[FROND__CFG_STR_MAX + 8], dir[FROND__CFG_STR_MAX + 8];
  const char *slash;
  struct stat st;
  if (frond__db_uri_parse(uri, &u, NULL) != 0 || strncmp(uri, "sqlite:", 7) ||
      u.target_len >= sizeof(path))
    return 0;
  snprintf(path, sizeof(path), "%.*s", (int)u.target_len, u.target);
  if (stat(path, &st) == 0)
    return 0;
  slash = strrchr(path, '/');
  snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
           slash ? (slash == path ? "/" : path) : ".");
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return frond__fail(e, FROND_ESTORE_PERMANENT,
                       "sqlite: cannot open %s: the directory %s does not "
                       "exist",
                       path, dir);
  if (access(dir, W_OK | X_OK) != 0)
    return frond__fail(e, FROND_ESTORE_PERMANENT,
                       "sqlite: cannot open %s: this user cannot write in the "
                       "directory %s",
                       path, dir);
  if (path[0] != '/' && getcwd(dir, sizeof(dir)) != NULL)
    snprintf(out, len,
             "%.300s: no file yet, %.300s/%.300s (a start makes it; frond "
             "next refuses it)",
             uri, dir, path);
  else
    snprintf(out, len,
             "%.300s: no file yet (a start makes it; frond next refuses it)",
             uri);
  return 1;
}

/* Open the SQL database uri for reading, unless it is a SQLite file that
** does not exist yet (*db NULL, 0). */
static int open_existing(const char *uri, frond_db **db, frond_error *e) {
  char note[64];
  int rc = frond__check_sqlite_absent(uri, note, sizeof(note), e);
  *db = NULL;
  if (rc != 0)
    return rc > 0 ? 0 : rc;
  return frond__db_open(uri, NULL, db, e);
}

/* The name f's record has in db for the numbers of scope: a start names it
** after the tag's row as the database spells it (formats.md, keys). */
static void fact_name_in(frond_db *db, const frond_format *f, const char *scope,
                         char *name, size_t len) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(scope);
  const char *t = NULL;
  int exists = 0;
  if (scope[0] != '\0' &&
      frond__db_table_exists(db, "leaf_alloc", &exists, NULL) == 0 && exists &&
      frond__db_exec(db, "SELECT biz_tag FROM leaf_alloc WHERE biz_tag = $1",
                     &a, 1, &r, NULL) == 0 &&
      r.nrows == 1)
    t = frond__db_get_text(&r, 0, 0);
  frond__format_fact_name(f, t != NULL ? t : scope, name, len);
  frond__db_result_free(&r);
}

/* The value recorded for f's numbers of scope in uri's frond_meta into out
** (len bytes), and the record's name into name: 0 when found, 1 when not
** (no file, no table, no row), or an error. */
static int meta_get(const char *uri, const frond_format *f, const char *scope,
                    char *name, size_t nlen, char *out, size_t len,
                    frond_error *e) {
  frond_db *db;
  frond_db_result r = {0};
  frond_db_arg a[1];
  const char *val;
  int exists = 0, rc = open_existing(uri, &db, e);
  if (rc != 0 || db == NULL)
    return rc != 0 ? rc : 1;
  fact_name_in(db, f, scope, name, nlen);
  rc = frond__db_table_exists(db, "frond_meta", &exists, e);
  if (rc == 0 && exists) {
    a[0] = frond__db_text(name);
    rc = frond__db_exec(db, "SELECT value FROM frond_meta WHERE name = $1", a,
                        1, &r, e);
    if (rc == 0 && r.nrows == 1 && (val = frond__db_get_text(&r, 0, 0)))
      snprintf(out, len, "%s", val);
    else if (rc == 0)
      rc = 1;
    frond__db_result_free(&r);
  } else if (rc == 0) {
    rc = 1;
  }
  frond__db_close(db);
  return rc;
}

/* The databases of a store URI (one, or every member of a multi: one),
** each into out[i]; their count, or -1. */
static int databases(const char *store, char (*out)[FROND_STORE_URI_MAX],
                     int cap) {
  frond_multi_uri m;
  int i;
  if (strncmp(store, "multi:", 6) != 0) {
    snprintf(out[0], FROND_STORE_URI_MAX, "%s", store);
    return 1;
  }
  if (frond__store_multi_parse(store, &m, NULL) != 0 || m.n > cap)
    return -1;
  for (i = 0; i < m.n; i++)
    snprintf(out[i], FROND_STORE_URI_MAX, "%.*s", (int)m.len[i],
             store + m.start[i]);
  return m.n;
}

/* Where f's record is for this configuration, as frond_format_check
** finds it: into dbs (n of them, a SQL database each) or the data
** directory's file (*dir set), or nowhere we can read (*zk). */
static int record_place(frond__check_ctx *x, const frond_format *f,
                        char (*dbs)[FROND_STORE_URI_MAX], int cap, int *dir,
                        int *zk) {
  const frond__config *c = &x->srv->cfg;
  const char *co = x->srv->coord_uri;
  *dir = *zk = 0;
  if (frond__format_scope(f, NULL)[0] == '\0') {
    if (strncmp(co, "lease+", 6) == 0) {
      snprintf(dbs[0], FROND_STORE_URI_MAX, "%.*s", (int)strcspn(co + 6, "?"),
               co + 6);
      return 1;
    }
    if (strncmp(co, "zk://", 5) == 0 || strncmp(co, "etcd://", 7) == 0) {
      *zk = 1;
      return 0;
    }
    if (strcmp(c->store, "none") == 0) {
      *dir = 1;
      return 0;
    }
  }
  if (strcmp(c->store, "none") == 0)
    return 0;
  return databases(c->store, dbs, cap);
}

int frond__check_keys(frond__check_ctx *x, frond__verdict *v) {
  static char dbs[FROND_STORE_MULTI_MAX][FROND_STORE_URI_MAX];
  frond__server *srv = x->srv;
  frond_error e = {0, ""};
  char name[FROND__FACT_NAME_MAX + 1], fp[FROND__FACT_VALUE_MAX + 1], rec[300],
      path[PATH_MAX];
  size_t i, keyed = 0, fresh = 0, unread = 0;
  for (i = 0; i < srv->nformats; i++) {
    const frond__named_format *nf = &srv->formats[i];
    int n, d, dir, zk, rc;
    if (frond_format_fingerprint(nf->f, NULL, 0) == 0)
      continue;
    frond__format_fact_value(nf->f, fp, sizeof(fp)); /* what is recorded */
    keyed++;
    frond__format_fact_name(nf->f, frond__format_scope(nf->f, NULL), name,
                            sizeof(name));
    n = record_place(x, nf->f, dbs, FROND_STORE_MULTI_MAX, &dir, &zk);
    if (zk) { /* read by the node's own claim: a start checks it */
      unread++;
      continue;
    }
    if (dir) {
      snprintf(path, sizeof(path), "%s/frond-fact-%s", srv->cfg.data_dir, name);
      rc = access(path, F_OK) == 0 ? 0 : 1;
      /* The file's own reader checks it; here, that it is there. */
      fresh += rc == 1;
      continue;
    }
    if (n < 0)
      return frond__check_say(v, FROND__CHECK_FAIL, FROND_ESTORE_URI,
                              "format.%s: the store's URI", nf->name);
    for (d = 0; d < n; d++) {
      rc = meta_get(dbs[d], nf->f, frond__format_scope(nf->f, NULL), name,
                    sizeof(name), rec, sizeof(rec), &e);
      if (rc < 0)
        return frond__check_say(v, FROND__CHECK_WARN, e.code,
                                "format.%s: the record %s not read: %s",
                                nf->name, name, e.message);
      if (rc == 1) {
        fresh++;
        continue;
      }
      if (strcmp(rec, fp) != 0) {
        char shown[1100];
        frond__store_uri_shown(dbs[d], shown, sizeof(shown));
        return frond__check_say(
            v, FROND__CHECK_FAIL, FROND_EKEY_MISMATCH,
            "format.%s: this key's fingerprint is %s, the fleet's record %s "
            "in %s (frond_meta) is %s: a start refuses the format; give it "
            "the fleet's key, or a new key under a new version",
            nf->name, fp, name, shown, rec);
      }
    }
  }
  if (keyed == 0)
    return frond__check_say(v, FROND__CHECK_OK, 0, "no keyed format");
  return frond__check_say(
      v, FROND__CHECK_OK, 0,
      "%zu keyed format%s: %zu agree with their records, %zu recorded by "
      "the first start%s",
      keyed, keyed == 1 ? "" : "s", keyed - fresh - unread, fresh,
      unread ? "; ZooKeeper's records are checked by a start" : "");
}

int frond__check_tags(frond__check_ctx *x, frond__verdict *v) {
  const char *store = x->srv->cfg.store;
  frond_error e = {0, ""};
  frond_db_result r = {0};
  frond_db *db;
  char shown[1100];
  int exists = 0, rc;
  if (strcmp(store, "none") == 0)
    return frond__check_say(v, FROND__CHECK_OK, 0, "no store");
  if (strncmp(store, "multi:", 6) == 0)
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "multi: every allocation checks its member's "
                            "place and marks");
  if ((rc = open_existing(store, &db, &e)) != 0)
    return frond__check_fail(v, FROND__CHECK_WARN, &e);
  if (db == NULL)
    return frond__check_say(v, FROND__CHECK_OK, 0, "no tags yet");
  frond__store_uri_shown(store, shown, sizeof(shown));
  /* A plain URI on a database that became a member of a multi: store. */
  rc = frond__db_table_exists(db, "frond_multi", &exists, &e);
  if (rc == 0 && exists &&
      (rc = frond__db_exec(db, "SELECT count(*) FROM frond_multi", NULL, 0, &r,
                           &e)) == 0) {
    int64_t n = 0;
    frond__db_get_int(&r, 0, 0, &n, NULL);
    frond__db_result_free(&r);
    if (n > 0) {
      frond__db_close(db);
      return frond__check_say(
          v, FROND__CHECK_FAIL, FROND_ESTORE_MEMBER,
          "%s is a member of a multi: store: a node must use the multi: URI "
          "that names it, never the member alone",
          shown);
    }
  }
  exists = 0;
  if (rc == 0)
    rc = frond__db_table_exists(db, "frond_tag_floor", &exists, &e);
  if (rc == 0 && exists)
    rc = frond__db_exec(db,
                        "SELECT a.biz_tag, a.max_id, f.floor_id FROM "
                        "leaf_alloc a JOIN frond_tag_floor f ON f.biz_tag = "
                        "a.biz_tag WHERE a.max_id < f.floor_id ORDER BY "
                        "a.biz_tag",
                        NULL, 0, &r, &e);
  frond__db_close(db);
  if (rc != 0)
    return frond__check_fail(v, FROND__CHECK_WARN, &e);
  if (exists && r.nrows > 0) {
    const char *tag = frond__db_get_text(&r, 0, 0);
    int64_t max_id = 0, floor = 0;
    frond__db_get_int(&r, 0, 1, &max_id, NULL);
    frond__db_get_int(&r, 0, 2, &floor, NULL);
    frond__check_say(v, FROND__CHECK_FAIL, FROND_ETAG_FLOOR,
                     "%d tag%s below the floor a deleted tag of the name "
                     "left (the first: %s, max_id %" PRId64 " below %" PRId64
                     "): loaded or restored by hand; a node refuses to "
                     "allocate from it: frond tag advance %s --to %" PRId64,
                     r.nrows, r.nrows == 1 ? " is" : "s are", tag ? tag : "?",
                     max_id, floor, tag ? tag : "TAG", floor);
    frond__db_result_free(&r);
    return FROND__CHECK_FAIL;
  }
  frond__db_result_free(&r);
  return frond__check_say(v, FROND__CHECK_OK, 0,
                          "%s: every tag at or above its floor", shown);
}

/* ---- the fleet's coordinator against the store's record ---------------- */

int frond__check_fleet(frond__check_ctx *x, frond__verdict *v) {
  const char *store = x->srv->cfg.store;
  char id[257] = "", where[300], note[400];
  unsigned long long lo, hi;
  char scope[64];
  frond__coord_book b;
  frond__coord_rec *cur = NULL;
  frond_store *st = NULL;
  frond_error e = {0, ""};
  size_t n = 0, i;
  int rc;
  if (strcmp(store, "none") == 0)
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "store none: nothing shared records the fleet's "
                            "coordinator, so it is not checked");
  if (x->coord == NULL && !x->is_static)
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "%s: no store file yet, nothing recorded; a "
                            "start records this coordinator",
                            x->coord_shown);
  if (x->coord == NULL || !frond__coord_has_facts(x->coord))
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "%s keeps no identity (a static node ID "
                            "registered nowhere): not checked",
                            x->coord_shown);
  if (sscanf(x->served, "%63[^:]: node IDs %llu..%llu", scope, &lo, &hi) != 3)
    return frond__check_say(v, FROND__CHECK_SKIP, 0,
                            "the node IDs this node serves are not known");
  /* Read only: the identity a start would read back, none yet. */
  if (frond__coord_fact(x->coord, FROND__COORD_ID_FACT, NULL, id, sizeof(id),
                        where, sizeof(where), &e) != 0)
    return frond__check_fail(v, FROND__CHECK_FAIL, &e);
  if ((rc = frond__check_sqlite_absent(store, note, sizeof(note), &e)) != 0)
    return rc < 0 ? frond__check_fail(v, FROND__CHECK_FAIL, &e)
                  : frond__check_say(v, FROND__CHECK_OK, 0,
                                     "nothing recorded yet (%s): a start "
                                     "records %s",
                                     note, x->coord_shown);
  if ((rc = frond__node_book_open(store, &st, &b, where, sizeof(where), &e)) !=
      0)
    return rc < 0 ? frond__check_fail(v, FROND__CHECK_WARN, &e)
                  : frond__check_say(v, FROND__CHECK_OK, 0,
                                     "the store keeps no facts: not checked");
  rc = frond__coord_rec_state(&b, &cur, &n, NULL, &e);
  frond_store_close(st);
  if (rc != 0)
    return frond__check_fail(v, FROND__CHECK_FAIL, &e);
  for (i = 0; i < n; i++) {
    if (cur[i].lo > hi || lo > cur[i].hi)
      continue;
    if (id[0] == '\0' || strcmp(cur[i].id, id) != 0) {
      rc = frond__check_say(
          v, FROND__CHECK_FAIL, FROND_ECOORDINATOR_MISMATCH,
          "%s (identity %.8s, node IDs %llu..%llu) is not the coordinator "
          "the store records for them: %s (identity %.8s, node IDs "
          "%" PRIu64 "..%" PRIu64 "); a start is refused. Name the recorded "
          "one, or move the fleet: frond node coordinator --set",
          x->coord_shown, id[0] ? id : "none yet", lo, hi, cur[i].uri,
          cur[i].id, cur[i].lo, cur[i].hi);
      free(cur);
      return rc;
    }
  }
  for (i = 0; i < n; i++)
    if (strcmp(cur[i].id, id) == 0 && cur[i].lo <= lo && cur[i].hi >= hi)
      break;
  rc = frond__check_say(v, FROND__CHECK_OK, 0,
                        i < n ? "%s (identity %.8s) is the coordinator the "
                                "store records for node IDs %llu..%llu"
                              : "%s (identity %.8s): nothing recorded for "
                                "node IDs %llu..%llu yet; a start records it",
                        x->coord_shown, id[0] ? id : "none yet", lo, hi);
  free(cur);
  return rc;
}
