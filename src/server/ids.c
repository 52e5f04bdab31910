/* SPDX-License-Identifier: Apache-2.0 */
/*
** ids.c -- issuing IDs for a worker, shared by the HTTP and Redis fronts:
** the generator calls, the counters /metrics reports, the error when
** segment IDs are not available at all, and the segment calls that must
** not run on the event loop.
**
** On the loop a segment request resolves its tag in memory
** (frond_seg_tag_find) and takes its IDs without waiting
** (frond__seg_tag_next_nowait). Two cases fail there and are finished off
** the loop, on libuv's thread pool, by the request layer (req.c) with
** frond__ids_segment_wait:
**   - a tag the allocator does not know (TAG_NOT_FOUND): it is looked up
**     in the store (frond_seg_refresh_tag, at most LOOKUPS_PER_SECOND a
**     second and LOOKUPS_IN_FLIGHT at a time), so that a tag created
**     elsewhere since the last refresh works at once;
**   - a call that would wait for the loaders (WOULD_BLOCK): a tag's first
**     segment, both buffers used up, a range larger than what is
**     buffered. It waits there (up to first_wait_ms or wait_ms), so that a
**     slow tag delays its own requests and never a loop.
*/
#include "base/base.h"
#include "core/core.h"
#include "server/node.h"
#include "server/server.h"

#include <stdlib.h>
#include <string.h>

/* As the allocator's own default for miss_checks. */
#define LOOKUPS_PER_SECOND 50
#define LOOKUPS_IN_FLIGHT 16

/* The generator counts its own failures (clock_behind in its stats). */
static int counted(int r, frond__counter *issued, size_t n) {
  if (r == 0)
    FROND__INC(*issued, n);
  return r;
}

int frond__ids_coord_unchecked(frond__server *srv, frond_error *err) {
  int code = atomic_load_explicit(&srv->coord_unchecked, memory_order_acquire);
  if (code == 0)
    return 0;
  return frond__fail(err, code,
                     "the coordinator is not checked against the one the "
                     "store records (%s): no snowflake ID until it is; the "
                     "server's log says why",
                     frond__node_coord_later(code)
                         ? "the store or the coordinator not reached yet"
                         : "it was refused");
}

/* A batch is issued one time unit's worth at a time: a single block of
** many units would need the wall clock to cover all of them at once, which
** max_wait does not allow once the node has borrowed its max_ahead, and the
** request would fail although the node can serve it at the layout's rate.
** Each piece waits at most about one unit. Pieces already issued when a
** later one fails are dropped, never handed out. */
int frond__ids_snowflake(frond__worker *w, size_t n, frond_error *err) {
  frond_gen *g = w->srv->gen;
  size_t unit = (size_t)1 << frond_gen_layout(g)->seq_bits, done;
  int r = frond__ids_coord_unchecked(w->srv, err);
  if (r != 0)
    return r;
  if (n == 1)
    return counted(frond_gen_next(g, w->ids, err), &w->m.ids_snowflake, 1);
  for (done = 0; done < n && r == 0; done += unit) {
    size_t k = n - done < unit ? n - done : unit;
    r = frond_gen_next_n(g, k, w->ids + done, err);
  }
  return counted(r, &w->m.ids_snowflake, n);
}

int frond__ids_seg_missing(const frond__server *srv, frond_error *err) {
  return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE, "%s",
                     srv->seg_enabled
                         ? "the segment store has not been reached yet"
                         : "segment IDs are disabled (store = none)");
}

/* The handle of tag from memory: SEGMENT_UNAVAILABLE saying why when there
** is no allocator, TAG_NOT_FOUND when the tag is not known. */
static int tag_of(frond__worker *w, const char *tag, size_t len,
                  frond_seg_tag **h, frond_error *err) {
  frond_seg *seg = atomic_load(&w->srv->seg);
  if (seg == NULL)
    return frond__ids_seg_missing(w->srv, err);
  return frond_seg_tag_find(seg, tag, len, h, err);
}

int frond__ids_segment(frond__worker *w, const char *tag, size_t len, size_t n,
                       frond_error *err) {
  frond_seg_tag *h;
  int r;
  if ((r = tag_of(w, tag, len, &h, err)) != 0)
    return r;
  r = frond__seg_tag_next_nowait(h, n, w->ids, err);
  return counted(r, &w->m.ids_segment, n);
}

int frond__ids_range(frond__worker *w, const char *tag, size_t len, int64_t n,
                     int64_t *start, frond_error *err) {
  frond_seg_tag *h;
  int r;
  if ((r = tag_of(w, tag, len, &h, err)) != 0)
    return r;
  r = frond__seg_tag_range_nowait(h, n, start, err);
  return counted(r, &w->m.ids_segment, (size_t)n);
}

void frond__ids_seg_options(const frond__server *srv, frond_seg_options *o) {
  frond_seg_options_init(o);
  o->miss_checks = 0; /* looked up off the loop instead */
  o->loaders = (unsigned)srv->cfg.segment_loaders;
  o->wait_ms = srv->cfg.segment_wait_ms;
  o->give_back = srv->cfg.segment_give_back;
  o->owner = srv->owner_addr[0] ? srv->owner_addr : NULL;
  o->ordered_lease_ms = srv->cfg.ordered_lease_ms;
}

int frond__store_conn(frond__server *srv, frond_error *err) {
  if (srv->store_conn != NULL)
    return 0;
  if (strcmp(srv->cfg.store, "none") == 0)
    return frond__fail(err, FROND_ESTORE, "no store configured (store = none)");
  return frond_store_open(&srv->store_conn, srv->cfg.store, err);
}

void frond__store_conn_check(frond__server *srv, int rc) {
  if (rc == FROND_ESTORE && srv->store_conn != NULL) {
    /* Reconnect on the next call. */
    frond_store_close(srv->store_conn);
    srv->store_conn = NULL;
  }
}

/* May another look-up start? Counts it when it may. */
int frond__ids_lookup_admit(frond__server *srv) {
  int64_t sec = frond__mono_ns() / 1000000000;
  int ok;
  pthread_mutex_lock(&srv->lookup_lock);
  if (srv->lookup_second != sec) {
    srv->lookup_second = sec;
    srv->lookups = 0;
  }
  ok = srv->lookups < LOOKUPS_PER_SECOND &&
       srv->lookups_in_flight < LOOKUPS_IN_FLIGHT;
  srv->lookups += ok;
  srv->lookups_in_flight += ok;
  pthread_mutex_unlock(&srv->lookup_lock);
  return ok;
}

void frond__ids_lookup_release(frond__server *srv) {
  pthread_mutex_lock(&srv->lookup_lock);
  srv->lookups_in_flight--;
  pthread_mutex_unlock(&srv->lookup_lock);
}

int frond__ids_lookup_tag(frond__server *srv, const char *tag,
                          frond_error *err) {
  frond_seg *seg = atomic_load(&srv->seg);
  frond_error e = {0, ""};
  int r = frond_seg_refresh_tag(seg, tag, strlen(tag), &e);
  if (r == FROND_ETAG_NOT_FOUND)
    return frond__fail(err, r, "tag \"%s\" not found", tag);
  if (r != 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND,
                       "tag \"%s\" not found as of the last refresh (the "
                       "store could not be asked: %s)",
                       tag, e.message);
  return 0;
}

int frond__ids_segment_wait(frond__server *srv, const char *tag, size_t len,
                            size_t n, int range, int lookup, int64_t *ids,
                            int64_t *start, frond_error *err) {
  frond_seg *seg = atomic_load(&srv->seg);
  frond_seg_tag *h;
  int r;
  if (lookup && (r = frond__ids_lookup_tag(srv, tag, err)) != 0)
    return r;
  if ((r = frond_seg_tag_find(seg, tag, len, &h, err)) != 0)
    return r;
  if (range)
    return frond_seg_tag_range(h, (int64_t)n, start, err);
  return frond_seg_tag_next_n(h, n, ids, err);
}
