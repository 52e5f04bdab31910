/* SPDX-License-Identifier: Apache-2.0 */
/*
** cli_node_coord.c -- `frond node coordinator`: the fleet's coordinators
** as its store records them, and a deliberate change of them.
**
**   frond node coordinator [--store URI] [--config FILE]
**   frond node coordinator --set NEW --from OLD [--store URI] ...
**
** Without --set: every coordinator the store records as current, with
** its identity, node IDs and floor. With --set: NEW takes the node IDs
** OLD serves. Refused while any node holds an ID in OLD (NODE_IN_USE),
** and when OLD is not the recorded coordinator (COORDINATOR_MISMATCH).
** The change records a floor, OLD's highest fence: a node 0 of NEW that
** issued while the old node 0's fence (up to max_ahead + window ahead of
** the clock) still lay ahead of its clock would repeat the old node 0's
** IDs; NEW's nodes start above it instead (coord_record.c). OLD is
** retired first (retire()), so that a node of it that was paused past
** its lease cannot move its fence or regain when it wakes.
*/
#include "cli/cli.h"
#include "coord/coord.h"
#include "server/config.h"
#include "server/node.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__cli_node_coordinator(int argc, char **argv);

static const char usage[] =
    "usage: frond node coordinator [--store URI] [--config FILE]\n"
    "       frond node coordinator --set NEW --from OLD [--store URI]\n"
    "                              [--config FILE]\n"
    "\n"
    "The coordinators the store records for its servers' node IDs: a\n"
    "server whose coordinator is not the recorded one for its node IDs is\n"
    "refused (COORDINATOR_MISMATCH), since two coordinators would each\n"
    "hand out node 0.\n"
    "\n"
    "With --set, move the fleet from OLD to NEW (e.g. from the store's\n"
    "lease to ZooKeeper): refused while any node holds an ID in OLD (stop\n"
    "them first). It records a floor, OLD's highest fence: the old node\n"
    "0's fence may lie ahead of the clock, and a node 0 of NEW issuing\n"
    "below it would repeat its IDs; NEW's nodes start above it. OLD is\n"
    "retired first (a layout no node runs is recorded in it). With the\n"
    "same URI as NEW and OLD, a coordinator whose data was lost (another\n"
    "identity) is adopted, with a floor of now + max_ahead + window.\n"
    "\n"
    "  --store URI        the servers' store (default: $FROND_STORE, else "
    "the\n"
    "                     --config file's, else " FROND_STORE_DEFAULT ")\n"
    "  --config FILE      read serve's keys from FILE\n"
    "  --set URI          the new coordinator\n"
    "  --from URI         the coordinator the store records now (with its\n"
    "                     password: its nodes are listed)\n";

static int load_store(const char *cmd, const char *store, const char *file,
                      char *out, size_t len, int64_t *max_ahead_ms,
                      frond_error *err) {
  char flag[] = "--config", path[4096], *av[2] = {flag, path};
  frond__config cfg;
  int action;
  if (file != NULL && strlen(file) >= sizeof(path))
    return frond__usage_error(cmd, "--config: the path is too long");
  snprintf(path, sizeof(path), "%s", file ? file : "");
  if (frond__config_load(&cfg, file ? 2 : 0, av, &action, err) != 0 ||
      (store != NULL &&
       frond__config_set(&cfg, "store", 5, store, "--store", err) != 0))
    return frond__usage_error(cmd, "%s", err->message);
  if (strcmp(cfg.store, "none") == 0)
    return frond__usage_error(cmd, "store none: nothing records the fleet's "
                                   "coordinator; give --store");
  snprintf(out, len, "%s", cfg.store);
  *max_ahead_ms = cfg.max_ahead_ms;
  return 0;
}

static void print_rec(const char *what, const frond__coord_rec *r) {
  frond__out_printf("%s %s identity %s node IDs %" PRIu64 "..%" PRIu64
                    " (%s) floor %" PRId64 "\n",
                    what, r->uri, r->id, r->lo, r->hi, r->scope, r->floor_ms);
}

/* The coordinator at uri, with its identity and what it serves. */
static int open_one(const char *uri, frond_coord **c, frond__coord_rec *r,
                    frond_error *err) {
  int rc;
  if ((rc = frond_coord_open(c, uri, NULL, err)) != 0)
    return rc;
  if (!frond__coord_has_facts(*c)) {
    frond_coord_close(*c, NULL);
    *c = NULL;
    return frond__fail(err, FROND_EINVAL,
                       "%s keeps no facts: a static node ID is leased in "
                       "the store (the store's lease is its coordinator)",
                       uri);
  }
  memset(r, 0, sizeof *r);
  if ((rc = frond__coord_identity(*c, r->id, sizeof r->id, err)) != 0)
    return rc;
  frond__coord_cache_uri(uri, r->uri, sizeof r->uri);
  return 0;
}

/* NODE_IN_USE when a live process holds an ID in c; else 0 and, in
** *fence_ms, the highest fence c stores. */
static int none_held(frond_coord *c, const char *uri, int64_t *fence_ms,
                     frond_error *err) {
  frond_coord_entry *e = NULL;
  size_t n = 0, i;
  int rc;
  *fence_ms = 0;
  if ((rc = frond_coord_list(c, &e, &n, err)) != 0)
    return rc;
  for (i = 0; i < n && rc == 0; i++) {
    if (e[i].live)
      rc = frond__fail(err, FROND_ENODE_IN_USE,
                       "node ID %" PRIu64 " of %.200s is held by %.128s: "
                       "stop every node of the old coordinator first",
                       e[i].node, uri, e[i].owner);
    if (e[i].fence_ms > *fence_ms)
      *fence_ms = e[i].fence_ms;
  }
  frond_free(e);
  return rc;
}

/* Retire OLD before NEW is recorded: record in OLD a layout no node of
** it runs (its own, one unit earlier: the same bits, so the same node
** IDs, and a floor its IDs pass at once). Recording a layout first blocks
** every fence write of OLD (the change's mark), then reads the fences, so
** a node of OLD that was paused or cut off past its lease (listed as not
** live) fails its next fence write and cannot regain (LAYOUT_MISMATCH):
** it stops at its fence, which is at most the floor. *floor_ms gets that
** floor: every fence of OLD, read after the mark. A change run again
** finds OLD retired already (the store records NEW): not retired twice. */
static int retire(frond_coord *oc, const char *from, int retired,
                  int64_t *floor_ms, frond_error *err) {
  frond_layout was, l;
  int64_t floor_id = 0, fence = 0;
  int rc;
  if (!retired) {
    rc = frond_coord_layout_get(oc, &was, NULL, err);
    if (rc == FROND_ELAYOUT_INVALID) /* none recorded: nothing issued */
      rc = frond_layout_parse(FROND_LAYOUT_DEFAULT, &was, err);
    if (rc != 0)
      return rc;
    l = was;
    snprintf(l.name, sizeof l.name, "custom");
    if (l.epoch_ms >= l.unit_ms)
      l.epoch_ms -= l.unit_ms;
    else
      l.epoch_ms += l.unit_ms;
    if ((rc = frond_coord_layout_set(oc, &l, &floor_id, err)) != 0)
      return rc;
    if (floor_id > 0)
      *floor_ms = frond__coord_floor_ms(&was, floor_id);
  }
  /* The fences after the mark: none can move any more. */
  if ((rc = none_held(oc, from, &fence, err)) != 0)
    return rc;
  if (fence > *floor_ms)
    *floor_ms = fence;
  return 0;
}

/* --set URI --from URI: the coordinator at URI answers with another
** identity than the store records for it: its data was lost (ZooKeeper
** wiped, the lease database recreated) or replaced. Its nodes' fences
** went with it, so the floor comes from what the store knows: the floors
** recorded so far, and now + max_ahead + window, above any fence a node
** of the lost data could have held (a fence lies at most that far ahead
** of the clock when written, and the loss was before now). */
static int adopt(frond__coord_book *b, frond_coord *c, const char *uri,
                 const frond__coord_rec *me, int64_t max_ahead,
                 frond_error *err) {
  frond__coord_rec *cur = NULL, e;
  size_t n = 0, i;
  int64_t fence = 0, floor;
  int rc, found = 0, slot = 0;
  if (max_ahead <= 0)
    max_ahead = FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS;
  /* A node's clock may lead this host's by up to max_clock_offset_ms
  ** (the fleet's start check), and its fences with it. */
  floor = frond_clock_realtime(NULL) + max_ahead + c->t.window_ms +
          (c->t.max_clock_offset_ms > 0 ? c->t.max_clock_offset_ms : 0);
  if ((rc = none_held(c, uri, &fence, err)) != 0 ||
      (rc = frond__coord_rec_state(b, &cur, &n, NULL, err)) != 0)
    goto done;
  if (fence > floor)
    floor = fence;
  for (i = 0; i < n && rc == 0; i++) {
    if (strcmp(cur[i].uri, me->uri) != 0)
      continue;
    found = 1;
    if (strcmp(cur[i].id, me->id) == 0) {
      print_rec("unchanged", &cur[i]);
      continue;
    }
    e = cur[i];
    e.set = 1;
    memcpy(e.id, me->id, sizeof e.id);
    if (floor > e.floor_ms)
      e.floor_ms = floor;
    if ((rc = frond__coord_rec_set(b, &e, &slot, err)) == 0)
      print_rec("set", &e);
  }
  if (rc == 0 && !found)
    rc = frond__fail(err, FROND_ECOORDINATOR_MISMATCH,
                     "%s records no coordinator at %.200s: nothing to adopt "
                     "(frond node coordinator lists what it records)",
                     b->where, me->uri);
done:
  free(cur);
  return rc;
}

static int change(frond__coord_book *b, const char *to, const char *from,
                  int64_t max_ahead, frond_error *err) {
  frond_coord *oc = NULL, *nc = NULL;
  frond__coord_rec old, neu, *cur = NULL, e;
  size_t n = 0, i;
  int64_t fence = 0, floor = 0;
  int rc, found = 0, current = 0, slot = 0;
  if ((rc = open_one(from, &oc, &old, err)) != 0 ||
      (rc = open_one(to, &nc, &neu, err)) != 0)
    goto done;
  if (strcmp(old.id, neu.id) == 0 && strcmp(old.uri, neu.uri) == 0) {
    rc = adopt(b, oc, from, &old, max_ahead, err);
    goto done;
  }
  if (strcmp(old.id, neu.id) == 0) {
    rc = frond__fail(err, FROND_EINVAL,
                     "%s and %s are one coordinator (identity %s)", from, to,
                     old.id);
    goto done;
  }
  if ((rc = none_held(oc, from, &fence, err)) != 0 ||
      (rc = frond__coord_rec_state(b, &cur, &n, NULL, err)) != 0)
    goto done;
  for (i = 0; i < n; i++) {
    if (strcmp(cur[i].id, old.id) == 0)
      current = found = 1;
    else if (strcmp(cur[i].id, neu.id) == 0)
      found = 1;
  }
  for (i = 0; i < n && !found; i++)
    if (strcmp(cur[i].uri, old.uri) == 0) {
      rc = frond__fail(err, FROND_ECOORDINATOR_MISMATCH,
                       "%s records %.200s with identity %.8s, and it now "
                       "answers with identity %.8s: its data was lost or "
                       "replaced. Adopt it first (frond node coordinator "
                       "--set %.200s --from %.200s), then move",
                       b->where, old.uri, cur[i].id, old.id, from, from);
      goto done;
    }
  if (!found) {
    rc = frond__fail(err, FROND_ECOORDINATOR_MISMATCH,
                     "%s records neither %.200s (identity %.8s) nor %.200s "
                     "(identity %.8s): nothing to move (frond node "
                     "coordinator lists what it records)",
                     b->where, old.uri, old.id, neu.uri, neu.id);
    goto done;
  }
  /* OLD stops first: no fence of it moves past the floor read here. */
  floor = fence;
  if ((rc = retire(oc, from, !current, &floor, err)) != 0)
    goto done;
  /* NEW takes every range OLD serves; a change run again finds NEW there
  ** and records nothing unless the floor rose. */
  for (i = 0; i < n && rc == 0; i++) {
    if (strcmp(cur[i].id, old.id) != 0 && strcmp(cur[i].id, neu.id) != 0)
      continue;
    if (strcmp(cur[i].id, neu.id) == 0 && cur[i].floor_ms >= floor) {
      print_rec("unchanged", &cur[i]);
      continue;
    }
    e = cur[i];
    e.set = 1;
    memcpy(e.id, neu.id, sizeof e.id);
    memcpy(e.uri, neu.uri, sizeof e.uri);
    if (floor > e.floor_ms)
      e.floor_ms = floor;
    if ((rc = frond__coord_rec_set(b, &e, &slot, err)) == 0)
      print_rec("set", &e);
  }
done:
  free(cur);
  if (oc)
    frond_coord_close(oc, NULL);
  if (nc)
    frond_coord_close(nc, NULL);
  return rc;
}

int frond__cli_node_coordinator(int argc, char **argv) {
  const char *store = NULL, *file = NULL, *set = NULL, *from = NULL;
  frond__opt opts[] = {{"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {"config", FROND__OPT_STR, &file, 0, 0, 0},
                       {"set", FROND__OPT_STR, &set, 0, 0, 0},
                       {"from", FROND__OPT_STR, &from, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"node coordinator", usage, opts, 0, 0, NULL, NULL, 0};
  char uri[FROND__CFG_STR_MAX + 64], where[300];
  frond__coord_book b;
  frond__coord_rec *cur = NULL;
  frond_store *st = NULL;
  frond_error err = {0, ""};
  size_t n = 0, i;
  int64_t max_ahead = 0;
  int rc;

  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if ((set == NULL) != (from == NULL))
    return frond__usage_error(a.cmd, "--set and --from go together");
  if ((rc = load_store(a.cmd, store, file, uri, sizeof uri, &max_ahead,
                       &err)) != 0)
    return rc;
  if (frond__node_sqlite_here(
          "store", uri, "a new store here records no coordinator", &err) != 0)
    return frond__cli_fail(&err);
  if ((rc = frond__node_book_open(uri, &st, &b, where, sizeof where, &err)) !=
      0) {
    if (rc > 0)
      frond__fail(&err, FROND_EINVAL, "the store keeps no facts");
    return frond__cli_fail(&err);
  }
  rc = set ? change(&b, set, from, max_ahead, &err)
           : frond__coord_rec_state(&b, &cur, &n, NULL, &err);
  frond_store_close(st);
  if (rc != 0) {
    free(cur);
    return frond__cli_fail(&err);
  }
  for (i = 0; i < n; i++)
    print_rec("coordinator", &cur[i]);
  if (!set && n == 0)
    frond__out_printf("none recorded: the first server records its own\n");
  free(cur);
  return frond__out_finish(FROND__EXIT_OK);
}
