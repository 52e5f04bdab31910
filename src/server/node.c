/* SPDX-License-Identifier: Apache-2.0 */
/*
** node.c -- claiming a node ID from the configuration (see node.h).
**
** One path for `frond serve` and `frond next`: the same settings give the
** same coordinator, the same identity and the same files, so a command
** run beside a server never takes the server's node ID, and a layout
** other than the recorded one is refused the same way for both.
**
**   identity   advertise when set, else the HTTP address (a wildcard
**              leaves the choice to the library: the first non-loopback
**              IPv4 address, and the port)
**   files      the node cache file in data_dir; a static node ID's
**              high-water file frond-node-N.hw there, registered or not
**   layout     with layout_change, a coordinator that records another
**              layout is switched first (refused while any node holds an
**              ID); without it, a mismatch is refused (LAYOUT_MISMATCH)
**
** A SQLite store (or lease) named by a relative path is a different file
** in every working directory: it is shown with the absolute path it
** resolved to, and `frond next` refuses one that does not exist
** (frond__node_sqlite_here) rather than make a new one beside no server.
*/
#include "server/node.h"
#include "coord/coord.h"

#include "base/base.h"
#include "core/core.h"
#include "core/high_water.h"
#include "store/db.h"
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int loopback(const char *host) {
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
}

/* The identity the coordinator knows this node by, into co (buf holds
** it when made here). */
static int identity(const frond__config *cfg, const frond__node_claim_opts *o,
                    frond_coord_options *co, char *buf, size_t len,
                    frond_error *err) {
  int wildcard = strcmp(o->host, "0.0.0.0") == 0 ||
                 strcmp(o->host, "::") == 0 || o->host[0] == '\0';
  co->port = o->port;
  if (cfg->advertise[0] && strcmp(cfg->advertise, "auto") != 0) {
    if (frond__coord_check_advertise(cfg->advertise, err) != 0)
      return FROND_EINVAL;
    co->advertise = cfg->advertise;
  } else if (!wildcard) {
    snprintf(buf, len, strchr(o->host, ':') ? "[%s]:%d" : "%s:%d", o->host,
             o->port);
    co->advertise = buf;
  }
  return 0;
}

int frond__node_coord_options(const frond__config *cfg, const char *host,
                              int port, frond_coord_options *co, char *buf,
                              size_t len, frond_error *err) {
  frond__node_claim_opts o;
  memset(&o, 0, sizeof o);
  o.host = host;
  o.port = port;
  frond_coord_options_init(co);
  co->cache_dir = cfg->data_dir;
  return identity(cfg, &o, co, buf, len, err);
}

/* With layout_change: switch the layout the coordinator records, if it is
** another one. Refused while any node holds an ID (NODE_IN_USE). A change
** begun and not finished (its mark left) is finished with another layout,
** undone with the one it started from. */
static int switch_layout(frond_coord *c, const frond_layout *l,
                         frond_error *err) {
  frond_layout rec;
  char was[160], want[160], cost[300];
  int64_t floor = 0;
  int changing = 0,
      rc = frond__coord_layout_read(c, &rec, &floor, &changing, NULL);
  if (rc != 0) /* none recorded (or none kept: static): nothing to switch */
    return 0;
  frond_layout_format(&rec, was, sizeof was);
  frond_layout_format(l, want, sizeof want);
  if (strcmp(was, want) == 0 && !changing)
    return 0;
  if ((rc = frond_coord_layout_set(c, l, &floor, err)) != 0)
    return rc;
  if (strcmp(was, want) == 0) {
    frond_log(FROND_LOG_WARN,
              "layout_change: a change of the fleet's layout from '%s' was "
              "begun and not finished; undone (the layout is '%s' again)",
              frond__layout_label(&rec, was, sizeof was), want);
    return 0;
  }
  frond__layout_lockout_text(&rec, l, frond_clock_realtime(NULL), cost,
                             sizeof cost);
  frond_log(FROND_LOG_WARN,
            "layout switched as asked (layout_change): from '%s' to '%s', "
            "every ID above %" PRId64 "; %s",
            frond__layout_label(&rec, was, sizeof was),
            frond__layout_label(l, want, sizeof want), floor, cost);
  return 0;
}

int frond__node_claim(const frond__config *cfg, const frond__node_claim_opts *o,
                      const frond_layout *l, frond_coord **coord,
                      frond_gen **gen, frond_error *err) {
  frond_coord_options co;
  frond_gen_options go;
  char who[300], hw[FROND__CFG_STR_MAX + 64];
  int64_t pinned = frond__config_pinned_node(o->uri);
  int bare = strncmp(o->uri, "static:", 7) == 0, rc;

  *coord = NULL;
  *gen = NULL;
  frond_coord_options_init(&co);
  if ((rc = identity(cfg, o, &co, who, sizeof who, err)) != 0)
    return rc;
  if (bare && !o->files)
    return frond__fail(err, FROND_EINVAL,
                       "node ID %" PRId64 " is static and registered nowhere: "
                       "its high-water file is all that keeps two runs "
                       "apart, so it cannot be left out; claim the node ID "
                       "from a store or a coordinator instead",
                       pinned);
  if (bare && o->serving && !loopback(o->host))
    frond_log(FROND_LOG_WARN,
              "node ID %" PRId64 " is static and registered nowhere (%s), "
              "and this server listens beyond loopback (%s): that no other "
              "process, on any host, runs node ID %" PRId64 " under this "
              "layout now rests on whoever configures them, and nothing "
              "checks it; give a store or a coordinator to register it",
              pinned,
              strcmp(cfg->store, "none") == 0 ? "store = none"
                                              : "unregistered=1",
              cfg->listen, pinned);
  co.cache_dir = o->files ? cfg->data_dir : NULL;
  frond_gen_options_init(&go);
  go.max_ahead_ms = cfg->max_ahead_ms;
  go.max_wait_ms = cfg->max_wait_ms;
  go.layout_change = cfg->layout_change;
  if (pinned >= 0 && o->files) {
    if (frond__hw_path(hw, sizeof hw, cfg->data_dir, (uint64_t)pinned) != 0)
      return frond__fail(err, FROND_EINVAL, "data_dir: the path is too long");
    go.high_water_path = hw;
  }
  if ((rc = frond_coord_open(coord, o->uri, &co, err)) != 0)
    return rc;
  if (o->unchecked)
    *o->unchecked = 0;
  /* The coordinator against the store's record, before the first ID: a
  ** store down leaves it unchecked for a server (which checks later). */
  if ((cfg->layout_change && (rc = switch_layout(*coord, l, err)) != 0) ||
      (rc = frond_coord_gen_create(*coord, l, &go, gen, err)) != 0 ||
      ((rc = frond__node_coord_check(cfg->store, *coord, *gen, err)) != 0 &&
       !(o->unchecked && frond__node_coord_later(rc)))) {
    if (rc == FROND_ELAYOUT_MISMATCH) /* retired by a change? */
      frond__node_coord_retired(cfg->store, *coord, err);
    rc = err->code ? err->code : rc;
    frond_coord_close(*coord, NULL);
    *coord = NULL;
    *gen = NULL;
    return rc;
  }
  if (rc != 0) {
    *o->unchecked = rc;
    frond_log(FROND_LOG_WARN,
              "%s not reached: the coordinator is not checked against the "
              "one the store records, and no snowflake ID is issued until "
              "it is (retrying): %s",
              rc == FROND_ECOORD ? "the coordinator" : "the store",
              err->message);
    err->code = 0;
  }
  return 0;
}

/* ---- a layout with no node bits: exactly one holder -------------------- */

/*
** Why these, and only these, give exactly one holder of node 0:
**
**   lease+...   the row of node 0 is taken in one transaction, free or
**               expired only, so a second live process is refused
**               (NODE_IN_USE, or NODE_RANGE: there is no other row); a
**               successor after an expiry starts above the fence the row
**               holds, and the old holder stops at that fence, which it can
**               no longer move (the row is no longer its). The same lease
**               takes a static node ID pinned to it (node = 0 with a store).
**   zk://       node 0's ephemeral claim admits one live session; the fence
**               in the node's data, moved only by a write that checks the
**               version this holder last wrote, does the rest as above.
**               Any other coordinator that hands out node IDs keeps the
**               same two rules (DESIGN: the coordinator), so it passes.
**
** Refused: every static node ID (static:N, the default with store none,
** unregistered=1). A static node 0 is registered nowhere, and the
** high-water file's lock covers one node ID in one data directory: a
** server of another layout in the same directory (node 1 of 10 node bits
** locks frond-node-1.hw, never node 0's file), the same directory moved to
** this layout (node 0's file is new, the old node's fence unread), or a
** server on another directory takes it beside this one. Under no node bits
** node 0's sequence covers every other node's range, so each of them
** repeats IDs and nothing could tell. The same check refuses `frond next`.
*/
int frond__node_one_holder(const frond__config *cfg, const char *uri,
                           const frond_layout *l, int oneoff,
                           frond_error *err) {
  /* Short enough for one frond_error line with the layout as typed. */
  static const char why[] =
      "registered nowhere; the high-water file's lock covers one node ID "
      "in one data directory, so another process (another layout in this "
      "directory, or another directory) would issue the same IDs";
  const char *key = oneoff ? "--coordinator " : "coordinator = ";
  if (l->node_bits != 0 || strncmp(uri, "static:", 7) != 0)
    return 0;
  if (strcmp(cfg->store, "none") != 0)
    return frond__fail(
        err, FROND_ECONFIG,
        "layout %.80s has no node bits: node 0 is its only node ID, and "
        "%.60s is %s. Drop unregistered=1 so that node 0 is leased in the "
        "store, or name a lease or ZooKeeper coordinator, or use node bits",
        cfg->layout, uri, why);
  if (strcmp(cfg->coordinator, "auto") == 0 && cfg->node < 0)
    return frond__fail(
        err, FROND_ECONFIG,
        "layout %.80s has no node bits: node 0 is its only node ID, and "
        "with store none and no coordinator it is static, %s. On one host "
        "set: %slease+sqlite:///var/lib/frond/nodes.db",
        cfg->layout, why, key);
  return frond__fail(
      err, FROND_ECONFIG,
      "layout %.80s has no node bits: node 0 is its only node ID, and "
      "%.60s is %s. On one host: %slease+sqlite:///var/lib/frond/nodes.db; "
      "a fleet: a shared lease or ZooKeeper; or use node bits",
      cfg->layout, uri, why, key);
}

/* ---- SQLite files, by their absolute path ------------------------------ */

int frond__node_sqlite_file(const char *uri, char *path, size_t len,
                            int *relative) {
  char one[FROND__CFG_STR_MAX + 64], cwd[PATH_MAX];
  frond_db_uri u;
  size_t n;
  int k;
  if (strncmp(uri, "lease+", 6) == 0)
    uri += 6;
  if (strncmp(uri, "sqlite:", 7) != 0)
    return 0;
  n = strcspn(uri, "?"); /* a lease's options; a SQLite URI takes none */
  if (n >= sizeof one)
    return -1;
  snprintf(one, sizeof one, "%.*s", (int)n, uri);
  if (frond__db_uri_parse(one, &u, NULL) != 0 || u.memory)
    return 0;
  *relative = u.target[0] != '/';
  if (*relative && getcwd(cwd, sizeof cwd) == NULL)
    return -1;
  k = *relative
          ? snprintf(path, len, "%s/%.*s", cwd, (int)u.target_len, u.target)
          : snprintf(path, len, "%.*s", (int)u.target_len, u.target);
  return k < 0 || (size_t)k >= len ? -1 : 1;
}

void frond__node_store_shown(const char *uri, char *out, size_t len) {
  char path[PATH_MAX + 64];
  size_t k;
  int relative = 0;
  frond__store_uri_shown(uri, out, len);
  k = strlen(out);
  if (frond__node_sqlite_file(uri, path, sizeof path, &relative) == 1 &&
      relative && k < len)
    snprintf(out + k, len - k, " (%s)", path);
}

int frond__node_sqlite_here(const char *what, const char *uri, const char *why,
                            frond_error *err) {
  char path[PATH_MAX + 64], shown[FROND__CFG_STR_MAX + 64];
  struct stat st;
  int relative = 0, e = 0, rc;
  if (strncmp(uri, "multi:", 6) == 0) {
    /* No store here is a multi: store none of whose members is there (a
    ** member missing beside others is a member down, or a new one, which
    ** the store's own checks take or refuse). The first refusal is said. */
    char one[FROND__CFG_STR_MAX + 64];
    const char *p = uri + 6;
    frond_error first = {0, ""};
    int refused = 0;
    while (*p != '\0') {
      size_t n = strcspn(p, "|");
      frond_error me = {0, ""};
      if (n < sizeof one) {
        snprintf(one, sizeof one, "%.*s", (int)n, p);
        if (frond__node_sqlite_here(what, one, why, &me) == 0)
          return 0;
        if (refused++ == 0)
          first = me;
      }
      p += n + (p[n] == '|');
    }
    if (refused == 0)
      return 0;
    return frond__fail(err, first.code, "%s", first.message);
  }
  rc = frond__node_sqlite_file(uri, path, sizeof path, &relative);
  if (rc == 0 || (rc == 1 && stat(path, &st) == 0))
    return 0;
  e = errno;
  frond__store_uri_shown(uri, shown, sizeof shown);
  if (rc < 0)
    return frond__fail(err, FROND_ECONFIG,
                       "%s %s: the path of its file is too long", what, shown);
  return frond__fail(
      err, FROND_ECONFIG, "%s %s is %s%s: %s. %s", what, shown, path,
      relative ? " (relative to the working directory)" : "", strerror(e), why);
}
