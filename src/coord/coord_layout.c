/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_layout.c -- the fleet's layout, as its coordinator records it:
** read (frond_coord_layout_get), and changed (frond_coord_layout_set).
**
** A change is the driver's, in two steps: a mark that stops every start
** and every fence write, then the new layout with a floor above every ID
** the old one could have issued (from every node's fence). Here: the old
** layout and its floor read first, a new layout refused when its IDs
** would pass that floor only long after now, and the recorded layout set
** again passed on as what it is, the undo of a change whose mark was left
** (its process stopped between the steps): the driver then puts the old
** record back and sets no floor.
**
** Calls coord.c (the node IDs known) and coord_common.c, never the
** reverse.
*/
#include "coord/coord.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* frond_coord_layout_set refuses a layout that reaches the floor later. */
#define FLOOR_MAX_AHEAD_MS 60000

static int recorded_layout(frond_coord *c, frond_layout *l, int64_t *floor_id,
                           int *changing, frond_error *err) {
  char spec[FROND_COORD_SPEC_MAX];
  int rc = frond__coord_layout_record(c, spec, sizeof(spec), floor_id, changing,
                                      err);
  if (rc != 0)
    return rc;
  if (!spec[0])
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "%s records no layout yet (the first node to start "
                       "records its own)",
                       c->uri);
  return frond_layout_parse(spec, l, err);
}

int frond_coord_layout_get(frond_coord *c, frond_layout *l, int64_t *floor_id,
                           frond_error *err) {
  int64_t f = 0;
  int rc;
  if (!c || !l)
    return frond__fail(err, FROND_EINVAL, "c and layout are required");
  if (frond__coord_forked(c))
    return frond__coord_refuse_forked(c, err);
  rc = recorded_layout(c, l, &f, NULL, err);
  if (floor_id)
    *floor_id = f;
  return rc;
}

int frond__coord_layout_read(frond_coord *c, frond_layout *l, int64_t *floor_id,
                             int *changing, frond_error *err) {
  int64_t f = 0;
  int rc;
  *changing = 0;
  if (frond__coord_forked(c))
    return frond__coord_refuse_forked(c, err);
  rc = recorded_layout(c, l, &f, changing, err);
  if (floor_id)
    *floor_id = f;
  return rc;
}

/* A floor that the new layout's IDs pass only well after now would keep
** every node under it from starting until then: refuse the change. */
static int check_floor_reachable(frond_coord *c, const frond_layout *old,
                                 int64_t floor_old, const frond_layout *l,
                                 const char *spec, frond_error *err) {
  frond_coord_entry *e = NULL;
  char was[FROND_COORD_SPEC_MAX], when[40];
  int64_t floor, ms, now = frond__coord_now(c);
  size_t n = 0;
  int rc;
  if ((rc = frond_coord_list(c, &e, &n, err)) != 0)
    return rc;
  floor = frond__coord_floor(old, e, n);
  free(e);
  if (floor < floor_old)
    floor = floor_old;
  ms = frond__coord_floor_ms(l, floor);
  if (ms - now <= FLOOR_MAX_AHEAD_MS)
    return 0;
  frond_layout_format(old, was, sizeof(was));
  frond__format_rfc3339(ms, when, sizeof(when));
  return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                     "the fleet issued IDs up to %" PRId64 " under layout %s; "
                     "under %s IDs pass that only at %s, so no node could "
                     "start until then: choose a layout whose IDs are larger "
                     "now (an earlier epoch, fewer time bits)",
                     floor, was, spec, when);
}

int frond_coord_layout_set(frond_coord *c, const frond_layout *l,
                           int64_t *floor_id, frond_error *err) {
  char spec[FROND_COORD_SPEC_MAX], was[FROND_COORD_SPEC_MAX];
  frond_layout old;
  int64_t f = 0, floor_old = 0;
  int rc;
  if (!c || !l)
    return frond__fail(err, FROND_EINVAL, "c and layout are required");
  if (frond__coord_forked(c))
    return frond__coord_refuse_forked(c, err);
  if (c->acquired)
    return frond__fail(err, FROND_EINVAL,
                       "this coordinator holds a node ID: change the layout "
                       "from a coordinator that holds none");
  if ((rc = frond_layout_validate(l, frond__coord_now(c), err)) != 0)
    return rc;
  rc = recorded_layout(c, &old, &floor_old, NULL, err);
  if (rc == FROND_ELAYOUT_INVALID) {
    /* Nothing recorded: without the old layout the floor is unknown, so
    ** only an unused coordinator may take a first layout this way. */
    frond_coord_entry *e = NULL;
    size_t n = 0;
    if ((rc = frond_coord_list(c, &e, &n, err)) != 0)
      return rc;
    free(e);
    if (n > 0)
      return frond__fail(err, FROND_ELAYOUT_INVALID,
                         "%s records no layout, but %zu node IDs were used: "
                         "start a node under the layout they used (it "
                         "records it), then change it",
                         c->uri, n);
    old = *l;
    /* A first layout carries the range the URI names. */
    if ((rc = frond__coord_scope(c, l, err)) != 0)
      return rc;
  } else if (rc != 0 || (rc = frond__coord_scope_recorded(c, err)) != 0 ||
             (rc = frond__coord_scope_conflict(c, err)) != 0) {
    /* A URI naming another range than the record: the floor would read
    ** the fences of other node IDs. */
    return rc;
  }
  frond_layout_format(l, spec, sizeof(spec));
  frond_layout_format(&old, was, sizeof(was));
  if (strcmp(c->scope, "all") != 0 &&
      (l->dc_bits != old.dc_bits || l->worker_bits != old.worker_bits ||
       l->node_bits != old.node_bits))
    return frond__fail(
        err, FROND_EDATACENTER_MISMATCH,
        "%s serves %s of layout %s, and %s splits the node bits otherwise: "
        "that range would name other node IDs, which other regions' "
        "coordinators may hand out, and they cannot be checked from here. "
        "Change every region's layout together, on new clusters "
        "(docs/coordinators.md#regions)",
        c->uri, c->scope, was, spec);
  /* The recorded layout again sets no floor: the driver only puts it
  ** back, undoing a change that was begun and not finished. */
  if (strcmp(spec, was) != 0 &&
      (rc = check_floor_reachable(c, &old, floor_old, l, spec, err)) != 0)
    return rc;
  c->layout = old;
  /* The floor reads every node's fence under the old layout's node IDs. */
  if (!c->scoped)
    (void)frond__coord_scope(c, &old, NULL);
  /* The record keeps the range it serves (frond__coord_scoped_spec). */
  frond__coord_scoped_spec(spec, sizeof(spec), c->scope);
  pthread_mutex_lock(&c->lock);
  rc = c->m->xLayoutSet(c, spec, &f, err);
  pthread_mutex_unlock(&c->lock);
  if (rc == 0 && floor_id)
    *floor_id = f;
  return rc;
}
