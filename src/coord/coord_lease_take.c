/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_lease_take.c -- the database lease: taking a row, and what every
** part of the lease shares (see coord_lease.c for the tables and the
** whole design).
**
** A node takes a free or expired row with one conditional statement (its
** own transaction), in this order: an UPDATE of an expired row this owner
** held before (so an identity keeps its node ID across clean restarts),
** an INSERT of the lowest node ID that has no row yet, an UPDATE of any
** expired row (the lowest). New rows before other owners' old ones: a row
** is not taken from an identity that may come back (a static node among
** them) while the range has room. When two nodes race for one row, the
** database lets exactly one statement change it: the UPDATE re-reads
** lease_expires under the row's lock (READ COMMITTED on PostgreSQL and
** MySQL, the write lock on SQLite); the INSERT meets the primary key.
**
** A pinned node ("?node=N": a static node ID registered in the store)
** takes row N only: free or expired, else NODE_IN_USE naming the holder.
** Only when the holder is this identity, on this host, with a process
** that no longer exists (a restart after kill -9) does it wait, bounded by
** the lease, for the dead lease to run out.
**
** Who holds a row, for messages: frond_meta's "holder.<N>" is the
** holder's token, pid and host name, written after each take.
*/
#include "coord/coord_lease.h"
#include "base/base.h"
#include "core/core.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define ACQUIRE_TRIES 64
/* A pinned restart polls a dead predecessor's lease this often. */
#define PIN_POLL_MS 100

/* The row a write gave itself, found again by its owner and fresh token
** (the RETURNING emulation's read-back). */
#define TAKEN                                                                  \
  "SELECT node_id, high_water_ms FROM frond_node WHERE owner = $1 "            \
  "AND token = $2"

int frond__lease_err(int rc, frond_error *err) {
  char words[sizeof(err->message)];
  if (rc != FROND_ESTORE && rc != FROND_ESTORE_URI &&
      rc != FROND_ESTORE_PERMANENT)
    return rc;
  snprintf(words, sizeof(words), "%s", err ? err->message : "");
  /* A database that refuses for good (no such database, a wrong
  ** password) stays what it is: retrying does not help, and the start
  ** says so rather than waiting. */
  return frond__fail(err,
                     rc == FROND_ESTORE             ? FROND_ECOORD
                     : rc == FROND_ESTORE_PERMANENT ? FROND_ESTORE_PERMANENT
                                                    : FROND_EINVAL,
                     "lease: %s", words);
}

int frond__lease_run(lease *l, const char *sql, const frond_db_arg *a, int n,
                     frond_db_result *r, frond_error *err) {
  return frond__lease_err(frond__db_exec(l->db, sql, a, n, r, err), err);
}

/* ---- the layout record -------------------------------------------------- */

int frond__lease_read_layout(lease *l, layout_rec *rec, frond_error *err) {
  frond_db_result r = {0};
  int rc, i;
  memset(rec, 0, sizeof(*rec));
  rc = frond__lease_run(
      l,
      "SELECT name, value FROM frond_meta WHERE name IN ('layout', "
      "'layout_floor', 'layout_previous')",
      NULL, 0, &r, err);
  for (i = 0; rc == 0 && i < r.nrows; i++) {
    const char *name = frond__db_get_text(&r, i, 0);
    const char *value = frond__db_get_text(&r, i, 1);
    if (name == NULL || value == NULL)
      continue;
    if (strcmp(name, "layout") == 0)
      snprintf(rec->spec, sizeof(rec->spec), "%s", value);
    else if (strcmp(name, "layout_previous") == 0)
      snprintf(rec->previous, sizeof(rec->previous), "%s", value);
    else
      frond__parse_i64(value, strlen(value), &rec->floor);
  }
  frond__db_result_free(&r);
  return rc;
}

int frond__lease_layout_verdict(lease *l, frond_error *err) {
  frond_coord *c = l->c;
  layout_rec rec;
  int rc = frond__lease_read_layout(l, &rec, err);
  if (rc != 0)
    return rc;
  if (strncmp(rec.spec, CHANGING, strlen(CHANGING)) == 0) {
    const char *old = rec.spec + strlen(CHANGING);
    return frond__fail(
        err, FROND_ECOORD,
        "a change of the fleet's layout from %s was begun and not finished "
        "(frond_meta): no node starts until it is. Unless a `frond node "
        "layout --set` runs now, one stopped or failed: finish it with "
        "`frond node layout --set <new layout>` (every node stopped) or "
        "undo it with `frond node layout --set %s` (or --layout-change on "
        "a start)",
        old[0] ? old : "(none recorded)",
        old[0] ? old : "<the fleet's layout>");
  }
  if (strcmp(rec.spec, c->layout_spec) != 0)
    return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                       "this node's layout is %s, the fleet's is %s "
                       "(frond_meta); nodes under two layouts can issue equal "
                       "IDs: use the fleet's, or change it with `frond node "
                       "layout --set`",
                       c->layout_spec, rec.spec);
  c->floor_id = rec.floor;
  snprintf(c->prev_spec, sizeof(c->prev_spec), "%.*s",
           (int)sizeof(c->prev_spec) - 1, rec.previous);
  return 0;
}

/* name = value in frond_meta: an UPDATE (it counts the row even when the
** value is the same), else an INSERT; a racing INSERT means the UPDATE
** now finds the row. */
int frond__lease_set_meta(lease *l, const char *name, const char *value,
                          frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[2];
  int rc, i;
  a[0] = frond__db_text(name);
  a[1] = frond__db_text(value);
  for (i = 0, rc = 0; i < 3 && rc == 0; i++) {
    rc = frond__lease_run(l, "UPDATE frond_meta SET value = $2 WHERE name = $1",
                          a, 2, &r, err);
    if (rc != 0 || r.changes == 1)
      break;
    rc =
        frond__lease_run(l,
                         "INSERT INTO frond_meta (name, value) VALUES ($1, $2) "
                         "{if_absent:name}",
                         a, 2, &r, err);
    if (rc == 0 && r.changes == 1)
      break;
  }
  frond__db_result_free(&r);
  return rc;
}

static void new_token(lease *l) {
  uint64_t a[2] = {0, 0};
  if (getrandom(a, sizeof(a), 0) != (ssize_t)sizeof(a)) {
    a[0] = (uint64_t)frond__mono_ns() ^ ((uint64_t)getpid() << 32);
    a[1] = a[0] * 31;
  }
  snprintf(l->token, sizeof(l->token), "%016" PRIx64 "%016" PRIx64, a[0], a[1]);
}

/* ---- acquire ------------------------------------------------------------ */

/* The node ID and fence of a row a write just took, from r. */
static int took(lease *l, const frond_db_result *r, frond__coord_claim *out,
                frond_error *err) {
  int64_t node = 0;
  int rc = frond__db_get_int(r, 0, 0, &node, err);
  memset(out, 0, sizeof(*out));
  if (rc == 0)
    rc = frond__db_get_int(r, 0, 1, &out->fence_ms, err);
  if (rc != 0)
    return frond__lease_err(rc, err);
  l->node = (uint64_t)node;
  l->held = 1;
  out->node = l->node;
  return 0;
}

/* Who holds a row: "<token> pid=<pid> host=<host>" under holder.<N>. */
static void holder_name(uint64_t node, char *buf, size_t len) {
  snprintf(buf, len, "holder.%" PRIu64, node);
}

/* Record this process as the holder of the row just taken. Only messages
** read it: a failure is logged, not returned. */
static void note_holder(lease *l) {
  char name[32], value[META_MAX], host[128] = "";
  frond_error e = {0, ""};
  gethostname(host, sizeof(host) - 1);
  holder_name(l->node, name, sizeof(name));
  snprintf(value, sizeof(value), "%s pid=%ld host=%.100s", l->token,
           (long)getpid(), host[0] ? host : "?");
  if (frond__lease_set_meta(l, name, value, &e) != 0)
    frond_log(FROND_LOG_WARN,
              "lease: node ID %" PRIu64 " taken, but its "
              "holder was not recorded: %s",
              l->node, e.message);
}

typedef struct {
  char owner[FROND_COORD_OWNER_MAX];
  char host[128];
  long pid;        /* 0: unknown */
  int64_t left_ms; /* until the lease expires, by the database's clock */
  int64_t expires; /* lease_expires, unix ms */
  int live;
} holder;

/* Who holds row node now; 0 with h->live 0 when the row is free. */
static int read_holder(lease *l, uint64_t node, holder *h, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[1];
  char name[32], token[48] = "";
  const char *t;
  int rc;
  memset(h, 0, sizeof(*h));
  a[0] = frond__db_int((int64_t)node);
  rc = frond__lease_run(
      l,
      "SELECT owner, lease_expires - {now_ms}, token, lease_expires "
      "FROM frond_node WHERE node_id = $1",
      a, 1, &r, err);
  if (rc == 0 && r.nrows == 1) {
    t = frond__db_get_text(&r, 0, 0);
    snprintf(h->owner, sizeof(h->owner), "%s", t ? t : "");
    frond__db_get_int(&r, 0, 1, &h->left_ms, NULL);
    frond__db_get_int(&r, 0, 3, &h->expires, NULL);
    t = frond__db_get_text(&r, 0, 2);
    snprintf(token, sizeof(token), "%s", t ? t : "");
    h->live = h->left_ms >= 0;
  }
  frond__db_result_free(&r);
  if (rc != 0 || !h->live)
    return rc;
  holder_name(node, name, sizeof(name));
  a[0] = frond__db_text(name);
  rc = frond__lease_run(l, "SELECT value FROM frond_meta WHERE name = $1", a, 1,
                        &r, err);
  if (rc == 0 && r.nrows == 1 && (t = frond__db_get_text(&r, 0, 0)) != NULL)
    frond__lease_parse_holder(t, token, &h->pid, h->host, sizeof(h->host));
  frond__db_result_free(&r);
  return rc;
}

int frond__lease_parse_holder(const char *value, const char *token, long *pid,
                              char *host, size_t len) {
  size_t n = strlen(token);
  const char *p, *q;
  int64_t v;
  *pid = 0;
  host[0] = 0;
  /* Another holder's record (the row changed hands since): not ours. */
  if (n == 0 || strncmp(value, token, n) != 0 || value[n] != ' ')
    return -1;
  p = strstr(value + n, " pid=");
  q = strstr(value + n, " host=");
  if (p && frond__parse_i64(p + 5, strcspn(p + 5, " "), &v) == 0 && v > 0 &&
      v <= INT32_MAX)
    *pid = (long)v;
  if (q)
    snprintf(host, len, "%.*s", (int)strcspn(q + 6, " "), q + 6);
  return 0;
}

/* "10.0.0.1:8080 (pid 42 on host-a, lease until <time>)" into buf. */
static void describe(const holder *h, char *buf, size_t len) {
  char until[40], who[200] = "";
  frond__format_rfc3339(h->expires, until, sizeof(until));
  if (h->pid > 0)
    snprintf(who, sizeof(who), "pid %ld on %s, ", h->pid,
             h->host[0] ? h->host : "?");
  snprintf(buf, len, "%s (%slease until %s)", h->owner, who, until);
}

/* Is the holder this identity's own predecessor, dead on this host? */
static int dead_predecessor(const frond_coord *c, const holder *h) {
  char host[128] = "";
  gethostname(host, sizeof(host) - 1);
  return h->pid > 0 && h->pid != (long)getpid() &&
         strcmp(h->owner, c->owner) == 0 && strcmp(h->host, host) == 0 &&
         kill((pid_t)h->pid, 0) != 0 && errno == ESRCH;
}

/* Take exactly row c->t.node: free, expired, or (bounded) once a dead
** predecessor's lease has run out. a: owner, token, lease_ms, node. */
static int acquire_pinned(lease *l, frond_db_arg *a, frond__coord_claim *out,
                          frond_error *err) {
  frond_coord *c = l->c;
  frond_db_result r = {0};
  int64_t deadline = 0;
  holder h;
  char who[400];
  int rc;
  for (;;) {
    rc = frond__lease_err(
        frond__db_write_returning(
            l->db,
            "UPDATE frond_node SET owner = $1, token = $2, "
            "lease_expires = {now_ms} + $3, updated = {now_ms} "
            "WHERE node_id = $4 AND lease_expires < {now_ms}",
            "node_id, high_water_ms", TAKEN, a, 4, &r, err),
        err);
    if (rc == 0 && r.nrows == 0)
      rc = frond__lease_err(
          frond__db_write_returning(
              l->db,
              "INSERT INTO frond_node (node_id, owner, token, lease_expires, "
              "high_water_ms, updated) VALUES ($4, $1, $2, {now_ms} + $3, 0, "
              "{now_ms}) {if_absent:node_id}",
              "node_id, high_water_ms", TAKEN, a, 4, &r, err),
          err);
    if (rc == 0 && r.nrows == 1)
      rc = took(l, &r, out, err);
    frond__db_result_free(&r);
    if (rc != 0 || l->held)
      return rc;
    if ((rc = read_holder(l, (uint64_t)c->t.node, &h, err)) != 0)
      return rc;
    if (!h.live)
      continue; /* it expired in between */
    describe(&h, who, sizeof(who));
    if (!dead_predecessor(c, &h) || (deadline && frond__mono_ns() > deadline))
      return frond__fail(err, FROND_ENODE_IN_USE,
                         "node ID %" PRId64 " is held by %s: two live "
                         "processes must never share a node ID; stop that "
                         "one, or give this one another node ID (or none: "
                         "the store then hands one out)",
                         c->t.node, who);
    if (!deadline) {
      int64_t wait = h.left_ms < c->t.lease_ms ? h.left_ms : c->t.lease_ms;
      deadline = frond__mono_ns() + (wait + 1000) * 1000000;
      frond_log(FROND_LOG_WARN,
                "node ID %" PRId64 " is held by %s, a process of this "
                "identity that no longer exists (killed?): waiting up to "
                "%" PRId64 " ms for its lease to run out",
                c->t.node, who, wait + 1000);
    }
    /* Nothing taken: the row is left to its holder's lease. */
    for (int64_t t = 0; t < PIN_POLL_MS; t += 50) {
      if (atomic_load(&frond__start_interrupted))
        return frond__fail(err, FROND_ECLOSED,
                           "stopped while waiting for node ID %" PRId64
                           "'s lease (held by %s) to run out",
                           c->t.node, who);
      frond__sleep_ns(50 * 1000000);
    }
  }
}

/* One of the three takes of an unpinned acquire (see the head comment). */
static int take(lease *l, int step, frond_db_arg *a, frond_db_result *r,
                frond_error *err) {
  static const char *const sql[3] = {
      /* An expired row of this owner. A concurrent taker re-checks
      ** lease_expires after our write and changes nothing. The candidate
      ** is read through a derived table: MySQL does not let an UPDATE read
      ** its own table in a plain subquery. */
      "UPDATE frond_node SET owner = $1, token = $2, "
      "lease_expires = {now_ms} + $3, updated = {now_ms} "
      "WHERE node_id = (SELECT node_id FROM (SELECT node_id FROM "
      "frond_node WHERE lease_expires < {now_ms} AND node_id < $4 "
      "AND node_id >= $5 "
      "AND {binary:owner} = $1 ORDER BY node_id LIMIT 1) candidate) "
      "AND lease_expires < {now_ms}",
      /* The lowest node ID of the range without a row. */
      "INSERT INTO frond_node (node_id, owner, token, "
      "lease_expires, high_water_ms, updated) "
      "SELECT id, $1, $2, {now_ms} + $3, 0, {now_ms} FROM (SELECT "
      "CASE WHEN NOT EXISTS (SELECT 1 FROM frond_node WHERE "
      "node_id = $5) THEN $5 ELSE (SELECT MIN(a.node_id + 1) FROM "
      "frond_node a WHERE a.node_id >= $5 AND NOT EXISTS (SELECT 1 FROM "
      "frond_node b WHERE b.node_id = a.node_id + 1)) END AS id) free "
      "WHERE id IS NOT NULL AND id < $4 {if_absent:node_id}",
      /* Any expired row, the lowest. */
      "UPDATE frond_node SET owner = $1, token = $2, "
      "lease_expires = {now_ms} + $3, updated = {now_ms} "
      "WHERE node_id = (SELECT node_id FROM (SELECT node_id FROM "
      "frond_node WHERE lease_expires < {now_ms} AND node_id < $4 "
      "AND node_id >= $5 ORDER BY CASE WHEN owner = $1 THEN 0 ELSE 1 END, "
      "node_id "
      "LIMIT 1) candidate) "
      "AND lease_expires < {now_ms}",
  };
  return frond__lease_err(frond__db_write_returning(l->db, sql[step],
                                                    "node_id, high_water_ms",
                                                    TAKEN, a, 5, r, err),
                          err);
}

int frond__lease_acquire(frond_coord *c, frond__coord_claim *out,
                         frond_error *err) {
  lease *l = c->impl;
  /* The range served (coord_scope.c): rows node_lo .. limit - 1. */
  uint64_t limit = c->node_hi + 1;
  frond_db_arg a[5];
  frond_db_result r = {0};
  int64_t live;
  int rc, i;

  l->held = 0;
  a[0] = frond__db_text(c->layout_spec);
  rc = frond__lease_run(
      l,
      "INSERT INTO frond_meta (name, value) VALUES ('layout', $1) "
      "{if_absent:name}",
      a, 1, NULL, err);
  if (rc != 0 || (rc = frond__lease_layout_verdict(l, err)) != 0)
    return rc;
  new_token(l);
  a[0] = frond__db_text(c->owner);
  a[1] = frond__db_text(l->token);
  a[2] = frond__db_int(c->t.lease_ms);
  a[3] = frond__db_int((int64_t)limit);
  a[4] = frond__db_int((int64_t)c->node_lo);
  if (c->t.node >= 0) {
    if ((uint64_t)c->t.node > c->max_node)
      return frond__fail(err, FROND_ENODE_RANGE,
                         "node ID %" PRId64 " is above the layout's largest "
                         "node ID %" PRIu64,
                         c->t.node, c->max_node);
    a[3] = frond__db_int(c->t.node);
    if ((rc = acquire_pinned(l, a, out, err)) == 0)
      note_holder(l);
    return rc;
  }
  for (i = 0; i < ACQUIRE_TRIES; i++) {
    for (int step = 0; step < 3 && !l->held; step++) {
      rc = take(l, step, a, &r, err);
      if (rc == 0 && r.nrows == 1)
        rc = took(l, &r, out, err);
      if (rc != 0) {
        frond__db_result_free(&r);
        return rc;
      }
    }
    if (l->held) {
      frond__db_result_free(&r);
      note_holder(l);
      return 0;
    }
    /* Nothing taken: either all rows are leased, or a racer took the row
    ** we aimed at. Count to tell them apart. */
    rc = frond__lease_run(
        l,
        "SELECT COUNT(*) FROM frond_node WHERE node_id < $1 AND "
        "node_id >= $2 AND lease_expires >= {now_ms}",
        &a[3], 2, &r, err);
    if (rc == 0 && frond__db_get_int(&r, 0, 0, &live, NULL) == 0 &&
        (uint64_t)live >= limit - c->node_lo) {
      frond__db_result_free(&r);
      return frond__fail(err, FROND_ENODE_RANGE,
                         "all %" PRIu64 " node IDs of %s are leased (%" PRIu64
                         "..%" PRIu64 ", %s; a process killed without "
                         "stopping keeps its node ID until its lease runs "
                         "out, lease_ms=%" PRId64 ")",
                         limit - c->node_lo, c->uri, c->node_lo, limit - 1,
                         c->scope, c->t.lease_ms);
    }
    if (rc != 0) {
      frond__db_result_free(&r);
      return rc;
    }
  }
  frond__db_result_free(&r);
  return frond__fail(err, FROND_ECOORD,
                     "lease: no free node ID after %d tries (contention)",
                     ACQUIRE_TRIES);
}
