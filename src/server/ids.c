/*
** ids.c -- issuing IDs for a worker, shared by the HTTP and Redis fronts:
** the generator calls, the counters /metrics reports, and the error when
** segment IDs are not available at all.
*/
#include "core/internal.h"
#include "server/server.h"

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
  return counted(r, &w->m.ids_segment, n);
}
