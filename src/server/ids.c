/*
** ids.c -- issuing IDs for a worker, shared by the HTTP and Redis fronts:
** the generator calls, the counters /metrics reports, the error when
** segment IDs are not available at all, and the look-up of a tag the
** allocator does not know yet, which asks the store and so runs off the
** event loop.
**
** The allocator is opened with miss_checks = 0: a tag it does not know
** fails at once, in memory, with TAG_NOT_FOUND. The protocol then hands
** the request to frond__ids_segment_later, which looks the tag up on
** libuv's thread pool (through the server's own store connection, at most
** LOOKUPS_PER_SECOND a second and LOOKUPS_IN_FLIGHT at a time, as the
** allocator itself would), reads the tag list again when the tag exists,
** takes the IDs there (a tag's first segment may take a store round trip)
** and completes on the loop. A tag created elsewhere since the last
** refresh so works at once, and a slow store never stalls a loop.
*/
#include "base/base.h"
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

/* A batch is issued one time unit's worth at a time: a single block of
** many units would need the wall clock to cover all of them at once, which
** max_wait does not allow once the node has borrowed its max_ahead, and the
** request would fail although the node can serve it at the layout's rate.
** Each piece waits at most about one unit. Pieces already issued when a
** later one fails are dropped, never handed out. */
int frond__ids_snowflake(frond__worker *w, size_t n, frond_error *err) {
  frond_gen *g = w->srv->gen;
  size_t unit = (size_t)1 << frond_gen_layout(g)->seq_bits, done;
  int r = 0;
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

int frond__ids_segment(frond__worker *w, const char *tag, size_t len, size_t n,
                       frond_error *err) {
  frond_seg *seg = atomic_load(&w->srv->seg);
  int r;
  if (seg == NULL)
    return frond__ids_seg_missing(w->srv, err);
  r = n == 1 ? frond_seg_next(seg, tag, len, w->ids, err)
             : frond_seg_next_n(seg, tag, len, n, w->ids, err);
  return counted(r, &w->m.ids_segment, n);
}

void frond__ids_seg_options(frond_seg_options *o) {
  frond_seg_options_init(o);
  o->miss_checks = 0; /* looked up off the loop instead */
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
  frond_tag_row row;
  frond_error e = {0, ""};
  int r;
  pthread_mutex_lock(&srv->store_lock);
  if ((r = frond__store_conn(srv, &e)) == 0)
    r = frond_store_tag_get(srv->store_conn, tag, &row, &e);
  frond__store_conn_check(srv, r);
  pthread_mutex_unlock(&srv->store_lock);
  if (r == 0)
    r = frond_seg_refresh(seg, &e);
  if (r == FROND_ETAG_NOT_FOUND)
    return frond__fail(err, r, "tag \"%s\" not found", tag);
  if (r != 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND,
                       "tag \"%s\" not found as of the last refresh (the "
                       "store could not be asked: %s)",
                       tag, e.message);
  return 0;
}

/* On a pool thread. */
static void lookup_work(uv_work_t *work) {
  frond__ids_call *call = work->data;
  frond_seg *seg = atomic_load(&call->w->srv->seg);
  call->rc = frond__ids_lookup_tag(call->w->srv, call->tag, &call->err);
  if (call->rc == 0)
    call->rc = call->n == 1 ? frond_seg_next(seg, call->tag, call->len,
                                             call->ids, &call->err)
                            : frond_seg_next_n(seg, call->tag, call->len,
                                               call->n, call->ids, &call->err);
}

/* Back on the loop. */
static void lookup_done(uv_work_t *work, int status) {
  frond__ids_call *call = work->data;
  frond__server *srv = call->w->srv;
  frond__ids_lookup_release(srv);
  if (status != 0)
    call->rc =
        frond__fail(&call->err, FROND_ECLOSED, "%s", uv_strerror(status));
  if (call->rc == 0)
    FROND__INC(call->w->m.ids_segment, call->n);
  call->done(call);
}

int frond__ids_segment_later(frond__ids_call *call, frond__conn *c,
                             const char *tag, size_t len, size_t n) {
  frond__worker *w = c->w;
  if (atomic_load(&w->srv->seg) == NULL || len > FROND_TAG_MAX ||
      !frond__ids_lookup_admit(w->srv))
    return 0;
  if ((call->ids = malloc(n * sizeof *call->ids)) == NULL)
    goto undo;
  memcpy(call->tag, tag, len);
  call->tag[len] = '\0';
  call->len = len;
  call->n = n;
  call->w = w;
  call->c = c;
  call->work.data = call;
  if (uv_queue_work(&w->loop, &call->work, lookup_work, lookup_done) != 0) {
    free(call->ids);
    call->ids = NULL;
    goto undo;
  }
  frond__conn_hold(c);
  return 1;
undo:
  frond__ids_lookup_release(w->srv);
  return 0;
}
