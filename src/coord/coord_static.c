/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_static.c -- "static:N": the node ID comes from configuration.
**
** This file contains the trivial coordinator. The operator guarantees that
** no two processes run with the same N; nothing is stored, no fence is
** kept (a high-water file protects restarts), nothing is checked beyond
** the node range (in coord.c). Where a database is shared, a static node
** ID is better registered there: a lease pinned to it
** ("lease+<URI>?node=N", coord_lease.c), which refuses a second live
** holder and keeps a fence; `frond serve` does that by itself.
*/
#include "coord/coord.h"
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint64_t node;
} static_coord;

static int static_open(frond_coord *c, const char *uri, frond_error *err) {
  const char *n = uri + strlen("static:");
  size_t len = strcspn(n, "?");
  int64_t v;
  static_coord *s;
  if (len == 0 || frond__parse_i64(n, len, &v) != 0 || v < 0)
    return frond__fail(err, FROND_EINVAL,
                       "static coordinator wants static:N with N >= 0, "
                       "not '%s'",
                       uri);
  if (n[len] == '?') {
    int rc = frond__coord_parse_query(c, n + len + 1, err);
    if (rc != 0)
      return rc;
  }
  if (c->t.node >= 0)
    return frond__fail(err, FROND_EINVAL,
                       "static:N names its node ID: node= is for a lease");
  if (!(s = calloc(1, sizeof(*s))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  s->node = (uint64_t)v;
  c->impl = s;
  return 0;
}

static int static_acquire(frond_coord *c, frond__coord_claim *out,
                          frond_error *err) {
  static_coord *s = c->impl;
  memset(out, 0, sizeof(*out));
  out->node = s->node;
  return 0;
}

static int static_fence(frond_coord *c, int64_t fence_ms, frond_error *err) {
  return 0;
}

static int static_regain(frond_coord *c, int64_t *after, frond_error *err) {
  *after = 0;
  return 0;
}

static int static_release(frond_coord *c, frond_error *err) {
  return 0;
}

static int static_clock(frond_coord *c, int64_t *offset_ms, char *ref,
                        size_t len, frond_error *err) {
  *offset_ms = 0;
  snprintf(ref, len, "itself");
  return 0;
}

static int static_layout_get(frond_coord *c, char *spec, size_t len,
                             int64_t *floor_id, frond_error *err) {
  spec[0] = 0;
  *floor_id = 0;
  return 0;
}

static int static_layout_set(frond_coord *c, const char *spec,
                             int64_t *floor_id, frond_error *err) {
  return frond__fail(err, FROND_EINVAL,
                     "the static coordinator records no layout: every node "
                     "uses the layout it is configured with");
}

static int static_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                       frond_error *err) {
  static_coord *s = c->impl;
  frond_coord_entry *e = calloc(1, sizeof(*e));
  if (!e)
    return frond__fail(err, FROND_ENOMEM, NULL);
  e->node = s->node;
  snprintf(e->owner, sizeof(e->owner), "(static)");
  e->live = c->acquired;
  e->fence_ms = 0;
  *out = e;
  *n = 1;
  return 0;
}

static void static_close(frond_coord *c) {
  free(c->impl);
}

const frond_coord_methods frond__coord_static_methods = {
    .iVersion = 2,
    .zScheme = "static:",
    .xOpen = static_open,
    .xAcquire = static_acquire,
    .xFence = static_fence,
    .xRegain = static_regain,
    .xRelease = static_release,
    .xList = static_list,
    .xClockOffset = static_clock,
    .xLayoutGet = static_layout_get,
    .xLayoutSet = static_layout_set,
    .xClose = static_close,
    .bCacheFallback = 0,
    .bFenced = 0,
};
