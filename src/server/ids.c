/*
** ids.c -- issuing IDs for a worker, shared by the HTTP and Redis fronts:
** the generator calls, the counters /metrics reports, and the error when
** segment IDs are not available at all.
*/
#include "core/internal.h"
#include "server/server.h"

static int counted(frond__worker *w, int r, frond__counter *issued, size_t n) {
  if (r == 0)
    FROND__INC(*issued, n);
  else if (r == FROND_ECLOCK_BEHIND)
    FROND__INC(w->m.errors_clock_behind, 1);
  return r;
}

int frond__ids_snowflake(frond__worker *w, size_t n, frond_error *err) {
  frond_gen *g = w->srv->gen;
  int r = n == 1 ? frond_gen_next(g, w->ids, err)
                 : frond_gen_next_n(g, n, w->ids, err);
  return counted(w, r, &w->m.ids_snowflake, n);
}

int frond__ids_segment(frond__worker *w, const char *tag, size_t len, size_t n,
                       frond_error *err) {
  frond_seg *seg = atomic_load(&w->srv->seg);
  int r;
  if (seg == NULL)
    return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE, "%s",
                       w->srv->seg_enabled
                           ? "the segment store has not been reached yet"
                           : "segment IDs are disabled (store = none)");
  r = n == 1 ? frond_seg_next(seg, tag, len, w->ids, err)
             : frond_seg_next_n(seg, tag, len, n, w->ids, err);
  return counted(w, r, &w->m.ids_segment, n);
}
