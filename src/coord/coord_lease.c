/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_lease.c -- node IDs as leased rows of a database table.
**
** This file contains the coordinator for deployments with a database and
** no ZooKeeper: "lease+" followed by any URI of the SQL layer (db.h):
** lease+sqlite:///path.db, lease+postgresql://..., lease+mysql://...
** Its statements are written once and run on every engine the layer
** speaks; our tunables (lease_ms, nodes, ...) come out of the URI's query
** and the rest of it goes to the engine.
**
**   CREATE TABLE frond_node (
**     node_id       BIGINT PRIMARY KEY,
**     owner         VARCHAR(128) NOT NULL,  -- identity of the holder
**     token         VARCHAR(40) NOT NULL,   -- random, one per acquire
**     lease_expires BIGINT NOT NULL,        -- unix ms, database clock
**     high_water_ms BIGINT NOT NULL,        -- the fence, unix ms
**     updated       BIGINT NOT NULL)        -- unix ms of the last write
**   CREATE TABLE frond_meta (
**     name  VARCHAR(64) PRIMARY KEY,        -- layout, layout_floor,
**     value VARCHAR(256) NOT NULL)          -- layout_previous, holder.<N>
**
** Taking a row (acquire: the order, a pinned static node ID, who holds
** it) is coord_lease_take.c's, with the statements both files share.
**
** high_water_ms is the node's FENCE: no ID above it is issued under the
** row's node ID, and the next holder starts above it. It is written, and
** the lease renewed, by one UPDATE guarded by the holder's token and by the
** fleet's layout (compared bytewise, whatever the collation), so a write
** that arrives after a takeover, or after a layout change, changes
** nothing. Lease times come from the database's clock; safety does not
** depend on them (coord.c's watchdog stops a node at 9/10 of its lease
** only so that a takeover finds it stopped).
**
** A fence write checks the token, not the lease's expiry: a holder whose
** lease ran out, and whose row nobody took, may still extend its fence and
** renew. That is safe because every layout change gives every row a
** token no holder has (the layout's text alone may read the same again,
** A then B then A: such a holder would go on under a floor it never
** read; it now fails and regains through it), and every take changes the
** token and reads the fence in one statement (UPDATE ... RETURNING high_water_ms, or the
** layer's emulation inside the take's transaction, under the row's write
** lock): a fence write lands either before the take, which then reads it,
** or after it, and then changes nothing. Refusing expired writes would buy
** nothing: a paused holder would lose a row nobody wanted, and a write
** that raced a take would still have to be read by the take. What the
** take must not do is trust a fence read by an earlier statement (a regain
** used to read it in a SELECT, and a delayed UPDATE then took the row from
** a holder that had written a higher fence in between). For the same
** reason a regain that finds the row already its own (its take committed,
** the answer was lost) resumes above the fence the row holds now.
**
** A fence write gets a third of the lease, all its round trips together
** (MySQL has no UPDATE ... RETURNING: four of them): past it the layer
** closes the connection and the write's outcome is unknown, which the
** fence rule allows for. A partitioned node must not hang in a renewal.
** Other statements get connect_ms or that third, whichever is longer.
**
** Connections. A node holds none between calls: each call of the driver
** (a take, a fence write, a regain, a listing) opens one and closes it
** when it returns, so that a fleet costs the database the connections of
** the writes in flight (about nodes x write time / report_ms, a handful
** at 1,024 nodes) rather than one per node, which PostgreSQL's default
** max_connections (100) and MariaDB's (151) cannot give 1,024 nodes.
** keep_connection=1 keeps one open for small fleets (no connect per
** write). A start (open, take, clock check, first fence write) uses one
** connection throughout, closed after the first fence write.
**
** Why the fence rule does not depend on the connection: a fence is
** durable only once the UPDATE that carries it has committed, and the
** generator passes nothing above the fence the previous write made
** durable (coord_fence.c), whatever becomes of the connection. A connect
** that fails, or does not finish in time, is a failed write (COORD): the
** fence stays where it was, the generator stops there, and the watchdog
** blocks the node once its lease may have run out, as for any failed
** write. The connect shares the fence write's third of the lease (its
** deadline caps the connect too, in milliseconds: libpq's connect_timeout
** counts whole seconds), so a renewal still fails in time for the next
** one to be tried inside the lease. A write cut off at its deadline may
** still commit on the server after its connection is gone, as it could
** when the connection was kept: it only raises the stored fence
** (FENCE_RAISE), which makes a later holder start later, never earlier,
** and after a takeover its token matches nothing. A transaction left
** open (MySQL's emulated RETURNING) is rolled back by the server when
** the connection closes. Every take reads the fence in the statement
** that takes the row, on whatever connection: nothing is carried from
** one connection to the next but the token, which lives in this struct.
*/
#include "coord/coord_lease.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MySQL gets ENGINE=InnoDB spelled out: a table in an engine without
** transactions would be refused (db.h) anyway. */
#define NODE_DDL                                                               \
  "CREATE TABLE IF NOT EXISTS frond_node ("                                    \
  "node_id BIGINT PRIMARY KEY, owner VARCHAR(128) NOT NULL, "                  \
  "token VARCHAR(40) NOT NULL, lease_expires BIGINT NOT NULL, "                \
  "high_water_ms BIGINT NOT NULL, updated BIGINT NOT NULL)"
#define META_DDL                                                               \
  "CREATE TABLE IF NOT EXISTS frond_meta ("                                    \
  "name VARCHAR(64) PRIMARY KEY, value VARCHAR(256) NOT NULL)"

/* Our tunables come out of the query; the rest is left for the engine. */
/* keep_connection=0|1: the lease's own option (no other coordinator
** holds a database connection). */
static int keep_option(frond_coord *c, const char *part, int *taken,
                       frond_error *err) {
  static const char key[] = "keep_connection=";
  *taken = strncmp(part, key, strlen(key)) == 0;
  if (!*taken)
    return 0;
  part += strlen(key);
  if (strcmp(part, "0") != 0 && strcmp(part, "1") != 0)
    return frond__fail(err, FROND_EINVAL,
                       "coordinator option keep_connection=%s: want 0 (a "
                       "connection per call, the default) or 1 (one kept "
                       "open)",
                       part);
  c->t.keep_connection = part[0] - '0';
  return 0;
}

static int split_query(frond_coord *c, const char *q, char *rest, size_t len,
                       frond_error *err) {
  size_t o = 0;
  int rc, taken;
  rest[0] = 0;
  while (q && *q) {
    char part[256];
    size_t n = strcspn(q, "&");
    if (n >= sizeof(part))
      return frond__fail(err, FROND_EINVAL, "coordinator option too long");
    memcpy(part, q, n);
    part[n] = 0;
    if ((rc = keep_option(c, part, &taken, err)) != 0)
      return rc;
    if (taken) {
      /* ours: nothing for the engine */
    } else if (frond__coord_is_query_key(part, strcspn(part, "="))) {
      if ((rc = frond__coord_parse_query(c, part, err)) != 0)
        return rc;
    } else if (n > 0) {
      if (o + n + 2 >= len)
        return frond__fail(err, FROND_EINVAL, "URI too long");
      o += (size_t)snprintf(rest + o, len - o, "%s%s", o ? "&" : "", part);
    }
    q += n + (q[n] == '&');
  }
  return 0;
}

int frond__lease_parse_uri(frond_coord *c, const char *uri, char *dburi,
                           size_t len, frond_error *err) {
  const char *target = uri + strlen("lease+");
  const char *qm = strchr(target, '?');
  char rest[FROND_COORD_URI_MAX];
  frond_db_uri u;
  int rc;

  if (strncmp(uri, "lease+", 6) != 0)
    return frond__fail(err, FROND_EINVAL, "not a lease URI: '%s'", uri);
  snprintf(dburi, len, "%.*s",
           (int)(qm ? (size_t)(qm - target) : strlen(target)), target);
  if ((rc = split_query(c, qm ? qm + 1 : NULL, rest, sizeof(rest), err)) != 0)
    return rc;
  if (rest[0] && strncmp(dburi, "sqlite:", 7) == 0)
    return frond__fail(err, FROND_EINVAL, "unknown lease option '%s'", rest);
  if (rest[0])
    snprintf(dburi + strlen(dburi), len - strlen(dburi), "?%s", rest);
  return frond__lease_err(frond__db_uri_parse(dburi, &u, err), err);
}

int frond__lease_connect(lease *l, int64_t deadline_ns, frond_error *err) {
  frond_db_options o = l->o;
  if (l->db != NULL)
    return 0;
  o.connect_deadline_ns = deadline_ns;
  return frond__lease_err(frond__db_open(l->uri, &o, &l->db, err), err);
}

void frond__lease_idle(lease *l) {
  if (l->db != NULL && !l->c->t.keep_connection && !l->starting) {
    frond__db_close(l->db);
    l->db = NULL;
  }
}

static int lease_open(frond_coord *c, const char *uri, frond_error *err) {
  int64_t third = c->t.lease_ms / 3;
  lease *l;
  int rc, mysql;

  if (!(l = calloc(1, sizeof(*l))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  if ((rc = frond__lease_parse_uri(c, uri, l->uri, sizeof(l->uri), err)) != 0) {
    free(l);
    return rc;
  }
  if (c->t.unregistered) {
    free(l);
    return frond__fail(err, FROND_EINVAL,
                       "unregistered=1 is for static:N; a lease is always "
                       "recorded in its database");
  }
  l->c = c;
  atomic_store(&c->validity_ms, c->t.lease_ms - c->t.lease_ms / 10);
  l->o.connect_timeout_ms = c->t.connect_ms;
  l->o.statement_timeout_ms = c->t.connect_ms > third ? c->t.connect_ms : third;
  l->o.answer_timeout_ms = l->o.statement_timeout_ms;
  l->o.application_name = "frond-lease";
  if ((rc = frond__lease_connect(l, 0, err)) != 0) {
    free(l);
    return rc;
  }
  mysql = strcmp(frond__db_engine(l->db), "mysql") == 0;
  if ((rc = frond__db_ensure_table(l->db, "frond_node",
                                   mysql ? NODE_DDL " ENGINE=InnoDB" : NODE_DDL,
                                   err)) != 0 ||
      (rc = frond__db_ensure_table(l->db, "frond_meta",
                                   mysql ? META_DDL " ENGINE=InnoDB" : META_DDL,
                                   err)) != 0) {
    frond__db_close(l->db);
    free(l);
    return frond__lease_err(rc, err);
  }
  l->starting = 1;
  c->impl = l;
  return 0;
}

/* ---- fence, regain, release --------------------------------------------- */

/* The fence write: the token and the layout guard it (head comment). It
** raises the stored fence and never lowers it: a statement of ours held
** up on the way (its connection closed at the deadline, its retransmits
** backing off while a new connection gets through) may commit after a
** later write of ours, or after our own regain, the token being ours all
** along; storing it as sent would take the fence back below IDs issued
** under a later one, ours or another holder's. The close alone stores a
** lower fence, its exact high water: nothing was issued above it, and
** nothing will be. */
#define FENCE_SET(v)                                                           \
  "UPDATE frond_node SET lease_expires = {now_ms} + $3, high_water_ms = " v    \
  ", updated = {now_ms} WHERE node_id = $1 AND token = $2 AND EXISTS "         \
  "(SELECT 1 FROM frond_meta WHERE name = 'layout' AND {binary:value} = $5)"
#define FENCE_RAISE                                                            \
  FENCE_SET("CASE WHEN high_water_ms > $4 THEN high_water_ms ELSE $4 END")
#define FENCE_FINAL FENCE_SET("$4")

static int lease_fence(frond_coord *c, int64_t fence_ms, frond_error *err) {
  lease *l = c->impl;
  frond_db_arg a[5];
  frond_db_result r = {0};
  int64_t t0, t1, deadline, db_now = 0;
  int rc;
  if (!l->held)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " is not leased", l->node);
  a[0] = frond__db_int((int64_t)l->node);
  a[1] = frond__db_text(l->token);
  a[2] = frond__db_int(c->t.lease_ms);
  a[3] = frond__db_int(fence_ms);
  a[4] = frond__db_text(c->layout_spec);
  /* One deadline for the connect and every round trip of the write. */
  deadline = frond__mono_ns() + c->t.lease_ms / 3 * 1000000;
  if ((rc = frond__lease_connect(l, deadline, err)) != 0)
    return rc; /* a failed write: the fence stays where it was */
  t0 = frond__coord_now(c);
  frond__db_set_deadline(l->db, deadline);
  rc = frond__lease_err(
      frond__db_write_returning(
          l->db, atomic_load(&c->closing) ? FENCE_FINAL : FENCE_RAISE,
          "{now_ms}",
          "SELECT {now_ms} FROM frond_node WHERE node_id = $1 AND token = $2",
          a, 5, &r, err),
      err);
  frond__db_set_deadline(l->db, 0);
  t1 = frond__coord_now(c);
  if (rc == 0 && r.nrows == 1 &&
      frond__db_get_int(&r, 0, 0, &db_now, NULL) == 0) {
    atomic_store(&c->clock_offset_ms, t0 + (t1 - t0) / 2 - db_now);
    atomic_store(&c->clock_checked, 1);
  }
  if (rc == 0 && r.nrows != 1 &&
      (rc = frond__lease_layout_verdict(l, err)) == 0) {
    l->held = 0;
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "lease on node ID %" PRIu64 " was taken over", l->node);
  }
  frond__db_result_free(&r);
  return rc;
}

/* Take our row back if it is still ours or expired; *after is the fence
** the row holds, which every earlier holder stayed at or below. The take
** reads it in the same statement (RETURNING, or the layer's emulation in
** the take's transaction): a fence read by an earlier statement may be
** stale, since a holder whose lease ran out still writes fences until its
** token changes (see the head comment). */
static int lease_regain(frond_coord *c, int64_t *after, frond_error *err) {
  lease *l = c->impl;
  frond_db_arg a[5];
  frond_db_result r = {0};
  char theirs[48], owner[FROND_COORD_OWNER_MAX];
  const char *t;
  int64_t fence = 0, expired = 0;
  int rc;
  *after = 0;
  a[0] = frond__db_int((int64_t)l->node);
  rc = frond__lease_run(
      l,
      "SELECT token, high_water_ms, CASE WHEN lease_expires < {now_ms} "
      "THEN 1 ELSE 0 END, owner FROM frond_node WHERE node_id = $1",
      a, 1, &r, err);
  if (rc == 0 && r.nrows != 1)
    rc = frond__fail(err, FROND_ENODE_ID_LOST, "node ID %" PRIu64 " has no row",
                     l->node);
  if (rc == 0 && ((rc = frond__db_get_int(&r, 0, 1, &fence, err)) != 0 ||
                  (rc = frond__db_get_int(&r, 0, 2, &expired, err)) != 0))
    rc = frond__lease_err(rc, err);
  if (rc != 0) {
    frond__db_result_free(&r);
    return rc;
  }
  t = frond__db_get_text(&r, 0, 0);
  snprintf(theirs, sizeof(theirs), "%s", t ? t : "");
  t = frond__db_get_text(&r, 0, 3);
  snprintf(owner, sizeof(owner), "%s", t ? t : "");
  frond__db_result_free(&r);
  if (strcmp(theirs, l->token) == 0) {
    /* Still ours, or ours again: a take whose answer was lost may have
    ** taken the row from a holder that wrote fences meanwhile. Our token
    ** stopped their writes, so the fence read now is above all of them.
    ** The next fence write renews the lease. */
    l->held = 1;
    *after = fence;
    return 0;
  }
  if (!expired)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " is leased by %s", l->node, owner);
  /* The read-back (MySQL) uses $1 and $2: a template uses its first
  ** parameters without a gap. */
  a[1] = frond__db_text(l->token);
  a[2] = frond__db_text(c->owner);
  a[3] = frond__db_int(c->t.lease_ms);
  a[4] = frond__db_text(theirs);
  rc = frond__lease_err(
      frond__db_write_returning(
          l->db,
          "UPDATE frond_node SET owner = $3, token = $2, "
          "lease_expires = {now_ms} + $4, updated = {now_ms} "
          "WHERE node_id = $1 AND token = $5 AND lease_expires < {now_ms}",
          "high_water_ms",
          "SELECT high_water_ms FROM frond_node WHERE node_id = $1 AND "
          "token = $2",
          a, 5, &r, err),
      err);
  if (rc == 0 && r.nrows != 1)
    rc = frond__fail(err, FROND_ENODE_ID_LOST,
                     "node ID %" PRIu64 " was taken by another node", l->node);
  if (rc == 0 && (rc = frond__db_get_int(&r, 0, 0, &fence, err)) != 0)
    rc = frond__lease_err(rc, err);
  if (rc == 0) {
    l->held = 1;
    *after = fence;
  }
  frond__db_result_free(&r);
  return rc;
}

static int lease_release(frond_coord *c, frond_error *err) {
  lease *l = c->impl;
  frond_db_arg a[2];
  if (!l->held)
    return 0;
  l->held = 0;
  a[0] = frond__db_int((int64_t)l->node);
  a[1] = frond__db_text(l->token);
  return frond__lease_run(
      l,
      "UPDATE frond_node SET lease_expires = 0, updated = {now_ms} "
      "WHERE node_id = $1 AND token = $2",
      a, 2, NULL, err);
}

/* Every row, sorted; locked against writers when `lock` (inside the
** layout change's transaction). */
static int list_rows(lease *l, frond_coord_entry **out, size_t *n, int lock,
                     frond_error *err) {
  frond_db_result r = {0};
  frond_coord_entry *e;
  int rc, i;
  int64_t v;
  rc = frond__lease_run(
      l,
      lock ? "SELECT node_id, owner, lease_expires, high_water_ms, "
             "CASE WHEN lease_expires >= {now_ms} THEN 1 ELSE 0 END "
             "FROM frond_node ORDER BY node_id{for_update}"
           : "SELECT node_id, owner, lease_expires, high_water_ms, "
             "CASE WHEN lease_expires >= {now_ms} THEN 1 ELSE 0 END "
             "FROM frond_node ORDER BY node_id",
      NULL, 0, &r, err);
  if (rc != 0)
    return rc;
  if (!(e = calloc(r.nrows ? (size_t)r.nrows : 1, sizeof(*e)))) {
    frond__db_result_free(&r);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (i = 0; i < r.nrows; i++) {
    const char *owner = frond__db_get_text(&r, i, 1);
    if (frond__db_get_int(&r, i, 0, &v, NULL) == 0)
      e[i].node = (uint64_t)v;
    snprintf(e[i].owner, sizeof(e[i].owner), "%.*s",
             (int)sizeof(e[i].owner) - 1, owner ? owner : "");
    frond__db_get_int(&r, i, 2, &e[i].expires_ms, NULL);
    frond__db_get_int(&r, i, 3, &e[i].fence_ms, NULL);
    e[i].live = frond__db_get_int(&r, i, 4, &v, NULL) == 0 && v == 1;
  }
  *out = e;
  *n = (size_t)r.nrows;
  frond__db_result_free(&r);
  return 0;
}

static int lease_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                      frond_error *err) {
  return list_rows(c->impl, out, n, 0, err);
}

/* ---- the fleet: clock and layout ---------------------------------------- */

/* The database's clock, corrected by half the round trip. */
static int lease_clock_offset(frond_coord *c, int64_t *offset_ms, char *ref,
                              size_t len, frond_error *err) {
  lease *l = c->impl;
  frond_db_result r = {0};
  int64_t t0 = frond__coord_now(c), t1, db_now = 0;
  int rc = frond__lease_run(l, "SELECT {now_ms}", NULL, 0, &r, err);
  t1 = frond__coord_now(c);
  if (rc == 0 && (rc = frond__db_get_int(&r, 0, 0, &db_now, err)) != 0)
    rc = frond__lease_err(rc, err);
  if (rc == 0)
    *offset_ms = t0 + (t1 - t0) / 2 - db_now;
  frond__db_result_free(&r);
  snprintf(ref, len, "the database");
  return rc;
}

static int lease_layout_get(frond_coord *c, char *spec, size_t len,
                            int64_t *floor_id, frond_error *err) {
  layout_rec rec;
  int rc = frond__lease_read_layout(c->impl, &rec, err);
  if (rc != 0)
    return rc;
  snprintf(spec, len, "%s", rec.spec); /* "changing:<old>" during a change */
  *floor_id = rec.floor;
  return 0;
}

/* The holders among e[0..n) into who; their count. */
static int live_rows(const frond_coord_entry *e, size_t n, char *who,
                     size_t len) {
  int live = 0;
  who[0] = 0;
  for (size_t i = 0; i < n; i++)
    if (e[i].live && ++live && strlen(who) + 40 < len)
      snprintf(who + strlen(who), len - strlen(who), "%s%" PRIu64 " (%s)",
               live > 1 ? ", " : "", e[i].node, e[i].owner);
  return live;
}

static int in_use(int live, const char *who, frond_error *err) {
  return frond__fail(err, FROND_ENODE_IN_USE,
                     "%d node ID%s leased (%s): stop every node before "
                     "changing the layout",
                     live, live == 1 ? " is" : "s are", who);
}

/* Undo a change that was marked and did not finish (or did nothing, when
** none is marked): the layout as it was, mark taken away only if it is
** still the mark read (a change finishing meanwhile holds its row until
** it commits, and then this finds it changed). old: the layout recorded
** before the mark, "" when none was (the row then goes). */
static int put_back(lease *l, const char *marked, const char *old,
                    frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[2];
  int rc;
  a[0] = frond__db_text(marked);
  a[1] = frond__db_text(old);
  rc = frond__lease_run(
      l,
      old[0] ? "UPDATE frond_meta SET value = $2 WHERE name = 'layout' AND "
               "{binary:value} = $1"
             : "DELETE FROM frond_meta WHERE name = 'layout' AND "
               "{binary:value} = $1",
      a, old[0] ? 2 : 1, &r, err);
  if (rc == 0 && r.changes != 1)
    rc = frond__fail(err, FROND_ECOORD,
                     "the fleet's layout changed meanwhile (another `frond "
                     "node layout --set`?): look at it again, then try again");
  frond__db_result_free(&r);
  return rc;
}

/*
** Change the recorded layout. Phase 1 (committed) marks it "changing:",
** which every fence write checks: none succeeds from then on, and no node
** starts. Phase 2, in one transaction, locks the layout's row and checks
** the mark is still there (an undo may have taken it away), locks every
** node's row (FOR UPDATE waits for a write that began before phase 1),
** refuses while a lease is live, computes the floor from the fences and
** records the new layout. A failure after phase 1 puts the old layout
** back. A mark left anyway (the process killed between the phases, the
** database gone before the put-back) stops every start with a message
** saying how to finish or undo it: this call with a new layout finishes
** it, with the old one undoes it.
*/
static int lease_layout_set(frond_coord *c, const char *spec, int64_t *floor_id,
                            frond_error *err) {
  lease *l = c->impl;
  char marked[META_MAX + 16], floor[24], who[256];
  const char *old;
  frond_coord_entry *e = NULL;
  frond_db_result r = {0};
  frond_db_arg a[2];
  frond_error e2 = {0, ""};
  layout_rec rec;
  size_t n = 0;
  int rc, live;

  if ((rc = frond__lease_read_layout(l, &rec, err)) != 0)
    return rc;
  if (strncmp(rec.spec, CHANGING, strlen(CHANGING)) == 0)
    snprintf(marked, sizeof(marked), "%s", rec.spec);
  else
    snprintf(marked, sizeof(marked), CHANGING "%s", rec.spec);
  old = marked + strlen(CHANGING);
  *floor_id = rec.floor;
  if (old[0] && strcmp(spec, old) == 0)
    /* The layout it was: undo a change left unfinished, else nothing. */
    return strcmp(rec.spec, marked) == 0 ? put_back(l, marked, old, err) : 0;
  /* Leave running nodes alone: refuse before touching anything. */
  if ((rc = lease_list(c, &e, &n, err)) != 0)
    return rc;
  live = live_rows(e, n, who, sizeof(who));
  free(e);
  if (live)
    return in_use(live, who, err);
  a[0] = frond__db_text(marked);
  a[1] = frond__db_text(rec.spec);
  rc = frond__lease_run(
      l,
      "UPDATE frond_meta SET value = $1 WHERE name = 'layout' AND "
      "{binary:value} = $2",
      a, 2, &r, err);
  if (rc == 0 && r.changes != 1)
    rc =
        frond__lease_set_meta(l, "layout", marked, err); /* none recorded yet */
  frond__db_result_free(&r);
  if (rc != 0)
    return rc;
  if ((rc = frond__lease_err(frond__db_begin(l->db, err), err)) != 0)
    goto put_back;
  /* The rows first, then the mark: a fence write locks its row, then
  ** reads the layout. */
  if ((rc = list_rows(l, &e, &n, 1, err)) != 0)
    goto rollback;
  a[0] = frond__db_text(marked);
  rc = frond__lease_run(l,
                        "SELECT value FROM frond_meta WHERE name = 'layout' "
                        "AND {binary:value} = $1{for_update}",
                        a, 1, &r, err);
  if (rc == 0 && r.nrows != 1)
    rc = frond__fail(err, FROND_ECOORD,
                     "the fleet's layout changed meanwhile (another `frond "
                     "node layout --set`?): look at it again, then try again");
  frond__db_result_free(&r);
  if (rc != 0) {
    free(e);
    frond__db_rollback(l->db);
    return rc; /* the mark is not ours to take away any more */
  }
  if ((live = live_rows(e, n, who, sizeof(who))) != 0) {
    /* A node started in between: put the old layout back. */
    free(e);
    frond__db_rollback(l->db);
    if ((rc = put_back(l, marked, old, err)) != 0)
      return rc;
    return in_use(live, who, err);
  }
  *floor_id = frond__coord_floor(&c->layout, e, n);
  free(e);
  if (*floor_id < rec.floor)
    *floor_id = rec.floor;
  snprintf(floor, sizeof(floor), "%" PRId64, *floor_id);
  /* Every row gets a token no holder has: a holder whose lease ran out
  ** with nobody taking its row (paused, cut off) finds its next fence
  ** write refused, however the layout's text reads by then (A, B, then A
  ** again), and regains through the new floor (coord_fence.c). The text
  ** alone may repeat; a token never does. */
  rc = frond__lease_run(l, "UPDATE frond_node SET token = 'layout changed'",
                        NULL, 0, &r, err);
  frond__db_result_free(&r);
  if (rc != 0)
    goto rollback;
  if ((rc = frond__lease_set_meta(l, "layout_floor", floor, err)) != 0 ||
      (rc = frond__lease_set_meta(l, "layout_previous", old, err)) != 0 ||
      (rc = frond__lease_set_meta(l, "layout", spec, err)) != 0)
    goto rollback;
  if ((rc = frond__lease_err(frond__db_commit(l->db, err), err)) == 0)
    return 0;
  /* A commit whose answer was lost may have committed. */
  if (frond__lease_read_layout(l, &rec, &e2) == 0 &&
      strcmp(rec.spec, spec) == 0)
    return 0;
  goto put_back;
rollback:
  frond__db_rollback(l->db);
put_back:
  if (put_back(l, marked, old, &e2) != 0)
    frond_log(FROND_LOG_WARN,
              "lease: the layout change failed and its mark could not be "
              "taken away (%s): no node starts until `frond node layout "
              "--set` finishes it, or undoes it with the old layout %s",
              e2.message, old[0] ? old : "(none was recorded)");
  return rc;
}

/* A fact in frond_meta beside the layout: inserted when absent (one
** INSERT wins a race), then read back. */
static int lease_fact(frond_coord *c, const char *name, const char *value,
                      char *recorded, size_t len, char *where, size_t wlen,
                      frond_error *err) {
  lease *l = c->impl;
  frond_db_result r = {0};
  frond_db_arg a[2];
  const char *v;
  int rc;
  snprintf(where, wlen, "the lease database (frond_meta)");
  a[0] = frond__db_text(name);
  a[1] = frond__db_text(value ? value : "");
  if ((value == NULL ||
       (rc = frond__lease_run(l,
                              "INSERT INTO frond_meta (name, value) VALUES "
                              "($1, $2) {if_absent:name}",
                              a, 2, NULL, err)) == 0) &&
      (rc = frond__lease_run(l, "SELECT value FROM frond_meta WHERE name = $1",
                             a, 1, &r, err)) == 0) {
    if (value == NULL && r.nrows == 0)
      recorded[0] = '\0'; /* read only: nothing recorded */
    else if (r.nrows != 1 || (v = frond__db_get_text(&r, 0, 0)) == NULL)
      rc = frond__fail(err, FROND_ECOORD, "lease: frond_meta: no value of %s",
                       name);
    else
      snprintf(recorded, len, "%s", v);
  }
  frond__db_result_free(&r);
  return rc;
}

static void lease_close(frond_coord *c) {
  lease *l = c->impl;
  if (!l)
    return;
  frond__db_close(l->db);
  free(l);
}

/* ---- a connection per call ---------------------------------------------- */

/* Each method as coord.c calls it (under c->lock): a connection for the
** call (bounded by connect_ms), the method, the connection closed after
** (see the head comment). The fence write opens its own, inside its
** deadline. A failed call ends a start (the start fails, or begins again
** on a new connection); so does a listing, which no start makes (frond
** check, frond node list open a handle only to list). */
#define WITH_CONN(name, params, args, ends)                                    \
  static int conn_##name params {                                              \
    lease *l = c->impl;                                                        \
    int rc = frond__lease_connect(l, 0, err);                                  \
    if (rc == 0)                                                               \
      rc = name args;                                                          \
    if (rc != 0 || (ends))                                                     \
      l->starting = 0;                                                         \
    frond__lease_idle(l);                                                      \
    return rc;                                                                 \
  }
WITH_CONN(frond__lease_acquire,
          (frond_coord * c, frond__coord_claim *out, frond_error *err),
          (c, out, err), 0)
WITH_CONN(lease_regain, (frond_coord * c, int64_t *after, frond_error *err),
          (c, after, err), 0)
WITH_CONN(lease_list,
          (frond_coord * c, frond_coord_entry **out, size_t *n,
           frond_error *err),
          (c, out, n, err), 1)
WITH_CONN(lease_clock_offset,
          (frond_coord * c, int64_t *offset_ms, char *ref, size_t len,
           frond_error *err),
          (c, offset_ms, ref, len, err), 0)
WITH_CONN(lease_layout_get,
          (frond_coord * c, char *spec, size_t len, int64_t *floor_id,
           frond_error *err),
          (c, spec, len, floor_id, err), 0)
WITH_CONN(lease_layout_set,
          (frond_coord * c, const char *spec, int64_t *floor_id,
           frond_error *err),
          (c, spec, floor_id, err), 0)
WITH_CONN(lease_fact,
          (frond_coord * c, const char *name, const char *value, char *recorded,
           size_t len, char *where, size_t wlen, frond_error *err),
          (c, name, value, recorded, len, where, wlen, err), 0)
#undef WITH_CONN

static int conn_lease_fence(frond_coord *c, int64_t fence_ms,
                            frond_error *err) {
  lease *l = c->impl;
  int rc = lease_fence(c, fence_ms, err);
  l->starting = 0; /* the start is over, whatever its outcome */
  if (!atomic_load(&c->closing))
    frond__lease_idle(l); /* closing: the release follows, then xClose */
  return rc;
}

static int conn_lease_release(frond_coord *c, frond_error *err) {
  lease *l = c->impl;
  int rc;
  if (!l->held)
    return 0; /* nothing to write: no connection */
  if ((rc = frond__lease_connect(l, 0, err)) == 0)
    rc = lease_release(c, err);
  else
    l->held = 0; /* as lease_release: the lease runs out by itself */
  frond__lease_idle(l);
  return rc;
}

const frond_coord_methods frond__coord_lease_methods = {
    .iVersion = 2,
    .zScheme = "lease+",
    .xOpen = lease_open,
    .xAcquire = conn_frond__lease_acquire,
    .xFence = conn_lease_fence,
    .xRegain = conn_lease_regain,
    .xRelease = conn_lease_release,
    .xList = conn_lease_list,
    .xClockOffset = conn_lease_clock_offset,
    .xLayoutGet = conn_lease_layout_get,
    .xLayoutSet = conn_lease_layout_set,
    .xClose = lease_close,
    /* Only the database hands rows out: a start never comes from the
    ** cache (the cache still holds the fence ahead of every write). */
    .bCacheFallback = 0,
    .bFenced = 1,
    .xFact = conn_lease_fact,
};
