/* SPDX-License-Identifier: Apache-2.0 */
/*
** check.c -- `frond check`: what a start would meet, without starting.
**
**   frond check [--config FILE] [--KEY VALUE]... [--json]
**
** The configuration comes from the sources `frond serve` reads (the file,
** the FROND_* variables, the flags) and goes through the checks a start
** makes before it reaches anything (frond__serve_preflight, the same
** function); then the ports, the store and the coordinator are reached,
** and what they and the data directory record is set against this node:
** the node ID it would hold, the fleet's layout, the high-water time, the
** clock. It claims nothing and issues nothing: a node ID is looked at,
** not taken (the static coordinator's file lock is tried for a moment).
**
** Each check is one row of the table below, one function given what the
** rows before it found; it prints one line: ok, warn (a start goes on),
** FAIL (a start refuses, or an ID could repeat) or skip (a row it needs
** did not pass). Exit 0 without a FAIL, 1 with one, 2 for a bad option of
** its own. A check that needs a shared fact added elsewhere is one more row.
*/
#include "cli/check.h"
#include "cli/cli.h"
#include "coord/coord.h"
#include "core/core.h"
#include "core/high_water.h"
#include "server/server.h"
#include "server/acl.h"
#include "server/tls.h"
#include "server/serve.h"
#include "store/db.h"
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int frond__cli_check(int argc, char **argv);

static const char usage[] =
    "usage: frond check [--config FILE] [--KEY VALUE]... [--json]\n"
    "\n"
    "Check what `frond serve` with the same file, FROND_* variables and\n"
    "flags would meet, without starting it: the configuration and every\n"
    "rule a start checks, the ports, the clients file and the audit log,\n"
    "the store, the coordinator, the node ID this process would hold, the\n"
    "fleet's layout, the data directory's high-water file and the clock.\n"
    "It claims nothing. One line per check: ok, warn (a start goes on),\n"
    "FAIL (a start refuses, or an ID could repeat) or skip. Exit status 0\n"
    "without a FAIL, 1 with one.\n"
    "\n"
    "  --config FILE  the configuration file, as for frond serve\n"
    "  --KEY VALUE    any key of frond serve (frond serve --list-keys)\n"
    "  --json         a JSON array of {check, status, code, message}\n"
    "\n"
    "Before a start: ExecStartPre= in systemd, an init container in\n"
    "Kubernetes (docs/operations.md).\n";

static const char *const status_word[] = {"ok", "warn", "FAIL", "skip"};
static const char *const status_json[] = {"ok", "warn", "fail", "skip"};

/* ---- the rows ---- */

static int row_config(frond__check_ctx *x, frond__verdict *v) {
  frond__server *srv = x->srv;
  frond_error e = {0, ""};
  char shown[1100];
  if (x->load_err.code != 0)
    return frond__check_fail(v, FROND__CHECK_FAIL, &x->load_err);
  if (frond__serve_preflight(srv, &e) != 0)
    return frond__check_fail(v, FROND__CHECK_FAIL, &e);
  x->config_ok = 1;
  x->is_static = strncmp(srv->coord_uri, "static:", 7) == 0;
  if (x->is_static) /* static:N[?query], checked by the preflight */
    frond__parse_i64(srv->coord_uri + 7, strcspn(srv->coord_uri + 7, "?"),
                     &x->node);
  frond__store_uri_shown(srv->cfg.store, shown, sizeof(shown));
  frond__store_uri_shown(srv->coord_uri, x->coord_shown,
                         sizeof(x->coord_shown));
  return frond__check_say(v, FROND__CHECK_OK, 0,
                          "store %.300s, coordinator %s, layout %s, listen %s",
                          shown, x->coord_shown, srv->cfg.layout,
                          srv->cfg.listen);
}

/* data_dir holds the high-water file and the node cache: a directory this
** user can write in, or a start fails with IO. */
static int row_data_dir(frond__check_ctx *x, frond__verdict *v) {
  const char *dir = x->srv->cfg.data_dir;
  struct stat st;
  if (stat(dir, &st) != 0)
    return frond__check_say(v, FROND__CHECK_FAIL, FROND_EIO, "%s: %s", dir,
                            strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return frond__check_say(v, FROND__CHECK_FAIL, FROND_EIO,
                            "%s: not a directory", dir);
  if (access(dir, W_OK | X_OK) != 0)
    return frond__check_say(v, FROND__CHECK_FAIL, FROND_EIO,
                            "%s: this user cannot write in it: %s", dir,
                            strerror(errno));
  x->dir_ok = 1;
  return frond__check_say(v, FROND__CHECK_OK, 0, "%s, writable", dir);
}

static int row_listen(frond__check_ctx *x, frond__verdict *v) {
  frond__server *srv = x->srv;
  frond_error e = {0, ""};
  int i;
  frond__tls *tls = NULL;
  char also[600] = "";
  for (i = 0; i < FROND__MAX_LISTENERS; i++)
    if (srv->ep[i].addr.port != 0 &&
        frond__listen_probe(&srv->ep[i].addr, &e) != 0)
      return frond__check_say(v, FROND__CHECK_FAIL, e.code, "%s %s: %s",
                              srv->ep[i].key, srv->ep[i].text, e.message);
  /* The TLS listeners' certificate loads as a start would load it. */
  for (i = FROND__MAX_PROTOS; i < FROND__MAX_LISTENERS; i++)
    if (srv->ep[i].addr.port != 0)
      snprintf(also + strlen(also), sizeof also - strlen(also), ", %s",
               srv->ep[i].text);
  if (also[0] != '\0') {
    char why[FROND__CFG_STR_MAX + 200];
    if (frond__tls_open(&tls, &srv->cfg, &e) != 0)
      return frond__check_say(v, FROND__CHECK_FAIL, e.code, "%s", e.message);
    frond__tls_close(tls);
    if (frond__tls_key_exposed(srv->cfg.tls_key, why, sizeof why))
      return frond__check_say(v, FROND__CHECK_WARN, FROND_ECONFIG, "%s", why);
  }
  return frond__check_say(v, FROND__CHECK_OK, 0, "%s%s%s%s free",
                          srv->cfg.listen, srv->ep[1].addr.port ? " and " : "",
                          srv->ep[1].addr.port ? srv->cfg.resp_listen : "",
                          also);
}

/*
** Who may ask, and where it is written down: the clients file loaded as a
** start loads it, and the audit log's file (or, before its first start,
** its directory) writable by this user. Nothing is created.
*/
static int row_access(frond__check_ctx *x, frond__verdict *v) {
  const frond__config *cfg = &x->srv->cfg;
  frond_error e = {0, ""};
  frond__acl *set = NULL;
  char who[FROND__CFG_STR_MAX + 64] = "no clients_file";
  char log[FROND__CFG_STR_MAX + 64];
  if (cfg->clients_file[0] != '\0') {
    if (frond__acl_load(cfg->clients_file, &set, &e) != 0)
      return frond__check_say(v, FROND__CHECK_FAIL, e.code, "%s", e.message);
    snprintf(who, sizeof who, "%s: %zu client%s", cfg->clients_file, set->n,
             set->n == 1 ? "" : "s");
    frond__acl_unref(set);
  }
  if (cfg->audit_log[0] == '\0') {
    snprintf(log, sizeof log, "no audit_log");
  } else {
    const char *slash = strrchr(cfg->audit_log, '/');
    char dir[FROND__CFG_STR_MAX];
    int exists = access(cfg->audit_log, F_OK) == 0;
    snprintf(dir, sizeof dir, "%.*s",
             slash == NULL             ? 1
             : slash == cfg->audit_log ? 1
                                       : (int)(slash - cfg->audit_log),
             slash == NULL ? "." : cfg->audit_log);
    if (access(exists ? cfg->audit_log : dir, exists ? W_OK : W_OK | X_OK) != 0)
      return frond__check_say(
          v, FROND__CHECK_FAIL, FROND_EIO,
          "audit_log %s: this user cannot %s: %s; a start refuses",
          cfg->audit_log,
          exists ? "append to it" : "create it in its directory",
          strerror(errno));
    snprintf(log, sizeof log, "audit_log %s%s", cfg->audit_log,
             exists ? ", writable" : " (made by the first start)");
  }
  if (cfg->admin_token[0] != '\0' && cfg->clients_file[0] == '\0')
    snprintf(who, sizeof who, "admin_token only");
  return frond__check_say(v, FROND__CHECK_OK, 0, "%s; %s", who, log);
}

/* One database of the store: reached, and its leaf_alloc. */
static int store_db(const char *uri, char *out, size_t len, frond_error *e) {
  frond_db *db = NULL;
  frond_db_result r = {0};
  int exists = 0, rc;
  int64_t n = 0;
  char shown[1100];
  if ((rc = frond__check_sqlite_absent(uri, out, len, e)) != 0)
    return rc > 0 ? 0 : rc;
  if ((rc = frond__db_open(uri, NULL, &db, e)) != 0)
    return rc;
  rc = frond__db_table_exists(db, "leaf_alloc", &exists, e);
  if (rc == 0 && exists &&
      (rc = frond__db_exec(db, "SELECT count(*) FROM leaf_alloc", NULL, 0, &r,
                           e)) == 0)
    rc = frond__db_get_int(&r, 0, 0, &n, e);
  frond__db_result_free(&r);
  frond__db_close(db);
  frond__store_uri_shown(uri, shown, sizeof(shown));
  if (rc == 0 && exists)
    snprintf(out, len, "%s: %lld tag%s", shown, (long long)n,
             n == 1 ? "" : "s");
  else if (rc == 0)
    snprintf(out, len, "%s: no leaf_alloc table yet (a start makes it)", shown);
  return rc;
}

static int row_store(frond__check_ctx *x, frond__verdict *v) {
  const char *uri = x->srv->cfg.store;
  frond_error e = {0, ""};
  frond_multi_uri m;
  char one[1400], all[sizeof(v->msg)] = "reached ";
  int i, n;
  if (strcmp(uri, "none") == 0)
    return frond__check_say(v, FROND__CHECK_OK, 0, "none: segment IDs are off");
  if (strncmp(uri, "multi:", 6) != 0) {
    m.n = 1;
    m.start[0] = 0;
    m.len[0] = strlen(uri);
  } else if (frond__store_multi_parse(uri, &m, &e) != 0) {
    return frond__check_fail(v, FROND__CHECK_FAIL, &e);
  }
  for (i = 0, n = m.n; i < n; i++) {
    char member[FROND_STORE_URI_MAX];
    snprintf(member, sizeof(member), "%.*s", (int)m.len[i], uri + m.start[i]);
    if (store_db(member, one, sizeof(one), &e) != 0)
      /* A transient failure does not stop a start: it retries, and segment
      ** IDs wait for the store. A permanent one does. */
      return frond__check_say(
          v,
          frond__db_transient(e.code) ? FROND__CHECK_WARN : FROND__CHECK_FAIL,
          e.code, "%s%s", e.message,
          frond__db_transient(e.code)
              ? " (a start goes on without segment IDs and retries)"
              : "");
    snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%.300s",
             i ? "; " : "", one);
  }
  return frond__check_say(v, FROND__CHECK_OK, 0, "%s", all);
}

static int row_coordinator(frond__check_ctx *x, frond__verdict *v) {
  frond_coord_options co;
  frond_coord_stats st;
  frond_error e = {0, ""};
  char who[300];
  size_t i, live = 0;
  /* The lease in a SQLite file no start has made yet: nothing is leased,
  ** and checking makes no file. */
  if (strncmp(x->srv->coord_uri, "lease+sqlite:", 13) == 0) {
    char db[FROND_COORD_URI_MAX], note[400];
    int rc;
    snprintf(db, sizeof(db), "%.*s", (int)strcspn(x->srv->coord_uri + 6, "?"),
             x->srv->coord_uri + 6);
    if ((rc = frond__check_sqlite_absent(db, note, sizeof(note), &e)) < 0)
      return frond__check_fail(v, FROND__CHECK_FAIL, &e);
    if (rc > 0) {
      /* Reached in effect: nothing is recorded there, which the rows
      ** that need the coordinator read as such (x->coord stays NULL). */
      if (frond__serve_coord_options(x->srv, &co, who, sizeof(who), &e) != 0)
        return frond__check_fail(v, FROND__CHECK_FAIL, &e);
      snprintf(x->owner, sizeof(x->owner), "%s",
               co.advertise ? co.advertise : "this node");
      x->coord_ok = 1;
      return frond__check_say(
          v, FROND__CHECK_OK, 0,
          "%s: no node ID leased yet (%s); a start takes the first "
          "free one",
          x->coord_shown, note);
    }
  }
  if (frond__serve_coord_options(x->srv, &co, who, sizeof(who), &e) != 0 ||
      frond_coord_open(&x->coord, x->srv->coord_uri, &co, &e) != 0)
    return frond__check_fail(v, FROND__CHECK_FAIL, &e);
  frond_coord_stats_get(x->coord, &st);
  snprintf(x->owner, sizeof(x->owner), "%s", st.owner);
  if (x->is_static) {
    x->coord_ok = 1;
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "%s: nothing to reach; node ID %" PRId64
                            " from the configuration",
                            x->coord_shown, x->node);
  }
  if (frond_coord_list(x->coord, &x->nodes, &x->nnodes, &e) != 0) {
    /* ZooKeeper's start may come from the node cache file. */
    frond_coord_cache cc;
    char path[FROND__CFG_STR_MAX + 300];
    int missing = 0;
    int cached = x->coord->m->bCacheFallback &&
                 frond__coord_cache_name(x->coord, path, sizeof(path)) == 0 &&
                 frond__coord_cache_read(path, &cc, &missing, NULL) == 0;
    return frond__check_say(
        v, cached ? FROND__CHECK_WARN : FROND__CHECK_FAIL, e.code, "%s%s",
        e.message, cached ? " (a start goes on from the node cache file)" : "");
  }
  x->coord_ok = 1;
  for (i = 0; i < x->nnodes; i++)
    live += x->nodes[i].live != 0;
  return frond__check_say(
      v, FROND__CHECK_OK, 0, "%s reached as %s: %zu node ID%s known, %zu live",
      x->coord_shown, x->owner, x->nnodes, x->nnodes == 1 ? "" : "s", live);
}

static int row_node(frond__check_ctx *x, frond__verdict *v) {
  uint64_t max = (UINT64_C(1) << x->srv->layout.node_bits) - 1, lo = 0;
  uint64_t hi = max;
  frond_error e = {0, ""};
  size_t i, taken = 0;
  int ranged = 0, lease;
  int64_t retention, now;
  if (x->is_static) {
    char path[FROND__CFG_STR_MAX + 64];
    frond__hw *hw = NULL;
    int rc;
    if (!x->dir_ok)
      return frond__check_say(v, FROND__CHECK_SKIP, 0,
                              "the node's file is in data_dir");
    if (frond__hw_path(path, sizeof(path), x->srv->cfg.data_dir,
                       (uint64_t)x->node) != 0)
      return frond__check_say(v, FROND__CHECK_FAIL, FROND_EINVAL,
                              "data_dir: the path is too long");
    /* The lock a running node holds, tried and given back at once. */
    if (frond__hw_open(&hw, path, &e) != 0)
      return frond__check_say(v, FROND__CHECK_FAIL, e.code,
                              "node %" PRId64 ": %s", x->node, e.message);
    rc = frond__hw_read(hw, &x->rec, &e);
    frond__hw_close(hw);
    if (rc < 0)
      return frond__check_say(v, FROND__CHECK_FAIL, e.code, "%s", e.message);
    x->have_rec = rc == 0;
    /* Registered nowhere: a store shared with other hosts does not stop
    ** another node from using the same ID. */
    if (strncmp(x->srv->cfg.store, "sqlite:", 7) != 0 &&
        strcmp(x->srv->cfg.store, "none") != 0)
      return frond__check_say(
          v, FROND__CHECK_WARN, 0,
          "node %" PRId64 " (static): held by no process on this "
          "host; no coordinator stops another host from using it "
          "too with the shared store",
          x->node);
    return frond__check_say(
        v, FROND__CHECK_OK, 0,
        "node %" PRId64 " (static), held by no process here", x->node);
  }
  /* What these settings serve against the coordinator's record, as a
  ** start checks it (coord_scope.c): another region's, or none. */
  if (x->coord &&
      frond__coord_scope_inspect(x->coord, &x->srv->layout, x->served,
                                 sizeof(x->served), &e) != 0)
    return frond__check_fail(v, FROND__CHECK_FAIL, &e);
  /* A node ID pinned on the lease (node = N with a store). */
  if (frond__config_pinned_node(x->srv->coord_uri) >= 0) {
    uint64_t want = (uint64_t)frond__config_pinned_node(x->srv->coord_uri);
    x->node = (int64_t)want;
    for (i = 0; i < x->nnodes; i++)
      if (x->nodes[i].node == want && x->nodes[i].live)
        return frond__check_say(v, FROND__CHECK_FAIL, FROND_ENODE_IN_USE,
                                "node %" PRIu64
                                " (static, registered at %s) is held now "
                                "by a live process as %s",
                                want, x->coord_shown, x->nodes[i].owner);
      else if (x->nodes[i].node == want)
        x->fence_ms = x->nodes[i].fence_ms;
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "node %" PRIu64
                            " (static, registered at %s), held by no "
                            "live process",
                            want, x->coord_shown);
  }
  /* A region or a nodes= range hands out its own node IDs only: the
  ** range these settings serve, as the start checks them. */
  {
    unsigned long long a, b;
    char scope[64];
    if (sscanf(x->served, "%63[^:]: node IDs %llu..%llu", scope, &a, &b) == 3 &&
        a <= b && b <= max) {
      lo = a;
      hi = b;
      ranged = 1;
    }
  }
  lease = strncmp(x->srv->coord_uri, "lease+", 6) == 0;
  retention = x->coord ? x->coord->t.retention_ms : 0;
  now = frond_clock_realtime(NULL);
  for (i = 0; i < x->nnodes; i++) {
    const frond_coord_entry *n = &x->nodes[i];
    int in = n->node >= lo && n->node <= hi;
    /* What a new identity cannot have: a lease row while it is live; a
    ** ZooKeeper or etcd number once used, unless retention_ms lets an
    ** unclaimed one whose fence is that old be taken over. */
    taken +=
        in && (n->live ||
               (!lease && (retention <= 0 || now - n->fence_ms < retention)));
    if (strcmp(n->owner, x->owner) != 0)
      continue;
    /* Its own number outside the range: a driver whose node IDs are its
    ** own numbers (ZooKeeper's sequence) names this identity by it and
    ** refuses; the lease and etcd look in the range. */
    if (!in && x->coord && x->coord->m->bNumbered)
      return frond__check_say(v, FROND__CHECK_FAIL, FROND_ENODE_RANGE,
                              "%s holds number %" PRIu64
                              ", outside the node IDs served (%" PRIu64
                              "..%" PRIu64 "): a start refuses",
                              x->owner, n->node, lo, hi);
    if (!in)
      continue;
    x->node = (int64_t)n->node;
    x->fence_ms = n->fence_ms;
    if (n->live)
      return frond__check_say(
          v, FROND__CHECK_FAIL, FROND_ENODE_IN_USE,
          "node %" PRIu64 " is held now by a live process as %s: "
          "stop it, or give this one another identity (advertise)",
          n->node, x->owner);
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "node %" PRIu64
                            ", which %s held last: a start takes it "
                            "again, above its fence",
                            n->node, x->owner);
  }
  if (taken > hi - lo)
    return frond__check_say(
        v, FROND__CHECK_FAIL, FROND_ENODE_RANGE,
        "%zu of the %" PRIu64 " node IDs %s (%" PRIu64 "..%" PRIu64
        ") are %s: none is free",
        taken, hi - lo + 1, ranged ? "the range serves" : "of the layout", lo,
        hi,
        lease ? "live"
              : "held or used by other identities (retention_ms frees "
                "unclaimed ones)");
  return frond__check_say(v, FROND__CHECK_OK, 0,
                          "a free node ID: %s holds none yet (%zu of %" PRIu64
                          " taken)",
                          x->owner, taken, hi - lo + 1);
}

/* A recorded layout by its preset's name when it is one. */
static const char *layout_name(const frond_layout *l, const char *spec) {
  size_t i;
  char p[160];
  for (i = 0; i < frond_layout_preset_count(); i++) {
    frond_layout_format(frond_layout_preset(i), p, sizeof(p));
    if (strcmp(p, spec) == 0)
      return frond_layout_preset(i)->name;
  }
  return l->name;
}

static int row_layout(frond__check_ctx *x, frond__verdict *v) {
  frond_layout rec;
  frond_error e = {0, ""};
  char ours[160], theirs[160];
  int64_t floor_id = 0;
  int rc;
  frond_layout_format(&x->srv->layout, ours, sizeof(ours));
  if (x->is_static)
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "%s; the static coordinator records none (the "
                            "data directory's file: high-water)",
                            ours);
  rc = x->coord ? frond_coord_layout_get(x->coord, &rec, &floor_id, &e)
                : FROND_ELAYOUT_INVALID;
  if (rc == FROND_ELAYOUT_INVALID)
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "none recorded yet: the first node records %s%s%s",
                            ours, x->served[0] ? "; serves " : "", x->served);
  if (rc != 0)
    return frond__check_fail(v, FROND__CHECK_FAIL, &e);
  frond_layout_format(&rec, theirs, sizeof(theirs));
  if (strcmp(ours, theirs) != 0 && x->srv->cfg.layout_change)
    return frond__check_say(
        v, FROND__CHECK_WARN, 0,
        "this node's layout is %s (%s), the fleet's record %s (%s): "
        "a start switches it, as asked (layout_change), and is "
        "refused while any node runs",
        x->srv->cfg.layout, ours, layout_name(&rec, theirs), theirs);
  if (strcmp(ours, theirs) != 0)
    return frond__check_say(
        v, FROND__CHECK_FAIL, FROND_ELAYOUT_MISMATCH,
        "this node's layout is %s (%s), the fleet's record %s (%s): "
        "start with the fleet's, or change it with frond node layout "
        "--set while no node runs",
        x->srv->cfg.layout, ours, layout_name(&rec, theirs), theirs);
  return frond__check_say(
      v, FROND__CHECK_OK, 0, "%s, as the fleet records (floor %lld)%s%s", ours,
      (long long)floor_id, x->served[0] ? "; serves " : "", x->served);
}

/* Where the next ID may start after `after_ms` (the high-water time) set
** against this clock: the start slack of snowflake_start.c. */
static int against_clock(frond__check_ctx *x, frond__verdict *v,
                         int64_t start_ms, int code, const char *what) {
  const frond__config *c = &x->srv->cfg;
  int64_t now = frond_clock_realtime(NULL), wait = c->max_wait_ms, slack;
  char a[40], b[40];
  if (wait < 0)
    wait = 2 * x->srv->layout.unit_ms > FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS
               ? 2 * x->srv->layout.unit_ms
               : FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS;
  slack = frond__start_slack_ms(c->max_ahead_ms,
                                x->is_static ? FROND_SNOWFLAKE_DEFAULT_WINDOW_MS
                                             : FROND_COORD_DEFAULT_WINDOW_MS,
                                wait);
  frond__format_rfc3339(start_ms, a, sizeof(a));
  frond__format_rfc3339(now, b, sizeof(b));
  if (start_ms - now > slack)
    return frond__check_say(
        v, FROND__CHECK_FAIL, code,
        "%s: the next ID is due at %s, %" PRId64 " ms ahead of this "
        "clock (%s), more than a start waits (%" PRId64 " ms)",
        what, a, start_ms - now, b, slack);
  if (start_ms - now > c->max_ahead_ms)
    return frond__check_say(v, FROND__CHECK_WARN, 0,
                            "%s: a start waits %" PRId64 " ms for the clock",
                            what, start_ms - now - c->max_ahead_ms);
  return frond__check_say(v, FROND__CHECK_OK, 0,
                          "%s: the next ID is due at %s, behind this clock",
                          what, a);
}

static int row_high_water(frond__check_ctx *x, frond__verdict *v) {
  const frond_layout *l = &x->srv->layout;
  frond_error e = {0, ""};
  uint64_t start, last_unit;
  int64_t last_id;
  char what[420], spec[160];
  if (!x->is_static) {
    if (x->node < 0 || x->fence_ms <= 0)
      return frond__check_say(v, FROND__CHECK_OK, 0,
                              "no fence stored for the node ID a start takes");
    snprintf(what, sizeof(what), "node %" PRId64 "'s fence at %s", x->node,
             x->coord_shown);
    return against_clock(x, v, x->fence_ms, FROND_ECLOCK_BEHIND, what);
  }
  if (!x->have_rec)
    return frond__check_say(v, FROND__CHECK_OK, 0,
                            "no high-water file for node %" PRId64 " in %s: a "
                            "first start",
                            x->node, x->srv->cfg.data_dir);
  snprintf(what, sizeof(what),
           "node %" PRId64 "'s high-water file (%s, "
           "layout %s)",
           x->node, x->rec.clean ? "clean stop" : "reservation", x->rec.layout);
  frond_layout_format(l, spec, sizeof(spec));
  /* As a start: another layout than the one recorded only when asked. */
  if (strcmp(spec, x->rec.layout) != 0 && !x->srv->cfg.layout_change)
    return frond__check_say(
        v, FROND__CHECK_FAIL, FROND_ELAYOUT_MISMATCH,
        "%s: this node's layout is %s; a start refuses to switch the "
        "recorded one unless asked (layout_change, --layout-change)",
        what, spec);
  if (frond__hw_first_after(&x->rec, l, (uint64_t)x->node, &start, &last_id,
                            &e) != 0)
    return frond__check_say(v, FROND__CHECK_FAIL, e.code, "%s: %s", what,
                            e.message);
  last_unit =
      l->time_bits >= 63 ? UINT64_MAX : (UINT64_C(1) << l->time_bits) - 1;
  if ((start >> l->seq_bits) > last_unit)
    return frond__check_say(v, FROND__CHECK_FAIL, FROND_ELAYOUT_INVALID,
                            "%s: the layout %s has no ID above %" PRId64
                            " for this "
                            "node: keep the old layout",
                            what, x->srv->cfg.layout, last_id);
  /* As a start: the same layout waits for the clock or finds it went back
  ** (CLOCK_BEHIND); another one has no ID above the old ones soon enough
  ** (LAYOUT_INVALID). */
  return against_clock(
      x, v, l->epoch_ms + (int64_t)(start >> l->seq_bits) * l->unit_ms,
      strcmp(spec, x->rec.layout) == 0 ? FROND_ECLOCK_BEHIND
                                       : FROND_ELAYOUT_INVALID,
      what);
}

/* This clock minus the database's at uri (a SQL layer URI). */
static int db_offset(const char *uri, int64_t *off, frond_error *e) {
  frond_db *db = NULL;
  frond_db_result r = {0};
  int64_t t0, t1, now = 0;
  int rc;
  if ((rc = frond__db_open(uri, NULL, &db, e)) != 0)
    return rc;
  t0 = frond_clock_realtime(NULL);
  rc = frond__db_exec(db, "SELECT {now_ms}", NULL, 0, &r, e);
  t1 = frond_clock_realtime(NULL);
  if (rc == 0 && (rc = frond__db_get_int(&r, 0, 0, &now, e)) == 0)
    *off = t0 + (t1 - t0) / 2 - now;
  frond__db_result_free(&r);
  frond__db_close(db);
  return rc;
}

static int row_clock(frond__check_ctx *x, frond__verdict *v) {
  const char *co = x->srv->coord_uri, *store = x->srv->cfg.store;
  char dburi[FROND_LEASE_DB_URI_MAX];
  frond_coord c;
  frond_error e = {0, ""};
  int64_t off = 0, bound;
  int by_coord = strncmp(co, "lease+", 6) == 0;
  const char *ref;
  memset(&c, 0, sizeof(c));
  bound = x->coord ? x->coord->t.max_clock_offset_ms
                   : FROND_COORD_DEFAULT_MAX_CLOCK_OFFSET_MS;
  if (by_coord) {
    /* The lease coordinator's start measures against its database. */
    if (frond__lease_parse_uri(&c, co, dburi, sizeof(dburi), &e) != 0)
      return frond__check_fail(v, FROND__CHECK_FAIL, &e);
    if (strncmp(dburi, "sqlite:", 7) == 0)
      return frond__check_say(v, FROND__CHECK_OK, 0,
                              "the lease is in a SQLite file on this host: its "
                              "clock is this one");
    ref = "the coordinator's database";
  } else if (strncmp(store, "postgres", 8) == 0 ||
             strncmp(store, "mysql:", 6) == 0 ||
             strncmp(store, "mariadb:", 8) == 0) {
    snprintf(dburi, sizeof(dburi), "%s", store);
    ref = "the store's database";
  } else {
    return frond__check_say(
        v, FROND__CHECK_OK, 0, "no reference clock reachable without a claim%s",
        strncmp(co, "zk://", 5) == 0 || strncmp(co, "etcd://", 7) == 0
            ? " (a start sets this clock against the live nodes')"
            : "");
  }
  if (db_offset(dburi, &off, &e) != 0)
    return frond__check_say(v, FROND__CHECK_WARN, e.code, "%s not reached: %s",
                            ref, e.message);
  if (bound > 0 && (off > bound || off < -bound))
    return frond__check_say(v, by_coord ? FROND__CHECK_FAIL : FROND__CHECK_WARN,
                            FROND_ECLOCK_OFFSET,
                            "this clock is %+" PRId64
                            " ms from %s, beyond %" PRId64
                            " ms: fix the clock (NTP)%s",
                            off, ref, bound,
                            by_coord ? "; a start refuses"
                                     : "; snowflake IDs of nodes "
                                       "apart lose their order");
  return frond__check_say(v, FROND__CHECK_OK, 0,
                          "%+" PRId64 " ms from %s (bound %" PRId64 " ms)", off,
                          ref, bound);
}

/* The table: name, what it needs (0: nothing, 1: the configuration, 2: the
** coordinator reached too, 3: and the node ID found), the check. */
static const struct {
  const char *name;
  int needs;
  int (*run)(frond__check_ctx *x, frond__verdict *v);
} rows[] = {
    {"config", 0, row_config},
    {"data_dir", 1, row_data_dir},
    {"listen", 1, row_listen},
    {"access", 1, row_access},
    {"store", 1, row_store},
    {"coordinator", 1, row_coordinator},
    {"node", 2, row_node},
    {"layout", 2, row_layout},
    {"fleet", 2, frond__check_fleet},
    {"high-water", 3, row_high_water},
    {"clock", 1, row_clock},
    {"keys", 1, frond__check_keys},
    {"tags", 1, frond__check_tags},
};

static void print_row(const char *name, const frond__verdict *v, int json,
                      int first) {
  const char *code = v->code ? frond_err_name(v->code) : NULL;
  if (json) {
    frond__out_str(first ? "[\n  {\"check\":" : ",\n  {\"check\":");
    frond__out_json_str(name);
    frond__out_str(",\"status\":");
    frond__out_json_str(status_json[v->status]);
    frond__out_str(",\"code\":");
    if (code != NULL)
      frond__out_json_str(code);
    else
      frond__out_str("null");
    frond__out_str(",\"message\":");
    frond__out_json_str(v->msg);
    frond__out_str("}");
    return;
  }
  frond__out_printf("%-4s %-11s ", status_word[v->status], name);
  if (code != NULL)
    frond__out_printf("%s: ", code);
  frond__out_text(v->msg);
  frond__out_str("\n");
}

int frond__cli_check(int argc, char **argv) {
  static frond__server srv;
  frond__check_ctx x;
  char **args = calloc((size_t)argc + 1, sizeof(*args));
  int i, n = 0, json = 0, action = 0, failed = 0, reached = 0;
  size_t r;
  if (args == NULL)
    return frond__cli_fail_errno("memory");
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      free(args);
      fputs(usage, stdout);
      return FROND__EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else
      args[n++] = argv[i];
  }
  memset(&x, 0, sizeof(x));
  x.srv = &srv;
  x.node = -1;
  frond_log_set(NULL, NULL, FROND_LOG_ERROR);
  if (frond__config_load(&srv.cfg, n, args, &action, &x.load_err) == 0 &&
      action != FROND__CFG_RUN) {
    free(args);
    return frond__usage_error("check", "--print-config, --list-keys: see "
                                       "frond serve");
  }
  free(args);
  for (r = 0; r < FROND__ARRAY_SIZE(rows); r++) {
    frond__verdict v = {FROND__CHECK_SKIP, 0, "a check it needs did not pass"};
    if (rows[r].needs == 0 || (rows[r].needs == 1 && x.config_ok) ||
        (rows[r].needs >= 2 && x.config_ok && x.coord_ok &&
         (rows[r].needs == 2 || reached))) {
      rows[r].run(&x, &v);
      /* The high-water check needs the node ID the node check found. */
      if (rows[r].run == row_node)
        reached = v.status == FROND__CHECK_OK || v.status == FROND__CHECK_WARN;
    }
    failed |= v.status == FROND__CHECK_FAIL;
    print_row(rows[r].name, &v, json, r == 0);
  }
  if (json)
    frond__out_str("\n]\n");
  frond_free(x.nodes);
  frond_coord_close(x.coord, NULL);
  frond__formats_free(&srv);
  return frond__out_finish(failed ? FROND__EXIT_FAILURE : FROND__EXIT_OK);
}
