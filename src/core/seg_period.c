/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_period.c -- the rows of seq formats' periods in the segment
** allocator: a period's row (TAG:PERIOD) is made on its first use from
** its base tag, with the base's step, bound and stride, and its first
** segment is waited for where the caller expects to block.
*/
#include "core/formats.h"
#include "core/seg.h"

#include <stdio.h>
#include <string.h>

/* ---- periods of seq formats ---- */

int64_t frond__seg_now_ms(frond_seg *s) {
  return frond__seg_clock(s);
}

int frond__seg_period_ready(frond_seg *s, const char *tag, size_t len) {
  seg_name *nm = frond__seg_find(s, tag, len);
  seg_tag *t = nm != NULL ? atomic_load(&nm->tag) : NULL;
  return t != NULL && atomic_load_explicit(&t->capped, memory_order_acquire);
}

int frond__seg_period_tag(frond_seg *s, const char *base, const char *tag,
                          int64_t cap, frond_error *err) {
  size_t blen = strlen(base), len = strlen(tag);
  seg_name *nm = frond__seg_lookup(s, tag, len, frond__seg_hash(s, tag, len));
  seg_name *b;
  seg_tag *t;
  frond_tag_row row;
  frond_tag_seq q;
  int64_t step, deadline;
  int rc, loaded;
  if ((rc = frond__seg_forked(s, err)) != 0)
    return rc;
  /* A period row that this process used and that has since left the store
  ** was deleted by hand: making it again would start the period's numbers
  ** over, so refuse. */
  if (nm != NULL && atomic_load(&nm->removed))
    return frond__fail(err, FROND_ETAG_NOT_FOUND,
                       "tag \"%s\" was deleted while in use; it is not made "
                       "again, since its numbers would repeat",
                       tag);
  if (nm == NULL) {
    /* The base row gives the step; it must exist, as for any tag. */
    if ((b = frond__seg_find(s, base, blen)) == NULL &&
        (rc = frond__seg_miss(s, base, blen, &b, err)) != 0) {
      if (rc == FROND_ETAG_NOT_FOUND)
        return frond__fail(err, rc,
                           "tag \"%s\" not found: a seq format makes its "
                           "periods' rows from it (frond tag create %s "
                           "--step N)",
                           base, base);
      return rc;
    }
    pthread_mutex_lock(&s->table_mu);
    step = b->row_step < cap ? b->row_step : cap;
    pthread_mutex_unlock(&s->table_mu);
    if (step < 1)
      step = 1;
    /* Another node may create the row at the same moment: its INSERT or
    ** ours wins, the other gets TAG_EXISTS, and both use the one row. */
    pthread_mutex_lock(&s->store_mu);
    /* At 1, or above a deleted row's floor (never its numbers again),
    ** with the base's bound and stride, in the create's transaction: a
    ** period counts as the base does (docs/segment.md, Bounds). */
    rc = frond__store_seq(s->store, base, &q, err);
    /* A period of an ordered tag would be ordered too, and served by
    ** whichever node made it: a format does not forward (forward.c). */
    if (rc == 0 && q.ordered)
      rc = frond__fail(err, FROND_EINVAL,
                       "tag \"%s\" is ordered: a seq format cannot number "
                       "its periods from it (use a tag that is not ordered)",
                       base);
    if (rc == 0 && q.increment > step)
      step = q.increment; /* a segment holds at least one ID */
    if (rc == 0)
      rc = frond_store_tag_create_seq(s->store, tag, step, 0,
                                      "frond seq period", &q, err);
    if (rc == FROND_ETAG_EXISTS)
      rc = frond__store_tag_get(s->store, tag, &row, err);
    else
      row.step = step;
    pthread_mutex_unlock(&s->store_mu);
    atomic_store(&s->store_ok, rc == 0);
    if (rc != 0)
      return rc;
    pthread_mutex_lock(&s->table_mu);
    rc = frond__seg_name_add(s, tag, len, row.step, &nm);
    pthread_mutex_unlock(&s->table_mu);
    if (rc != 0)
      return frond__fail(err, rc, NULL);
  }
  if ((t = frond__seg_hot(s, nm)) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  if (cap > s->o.max_step)
    cap = s->o.max_step;
  pthread_mutex_lock(&t->mu);
  t->max_step = cap;
  /* Ready means served from memory, as any tag in use: the first segment
  ** is waited for here, where the caller expects to block, and not by the
  ** first call that frond__seg_period_ready lets through. */
  deadline = frond__mono_ns() + s->o.first_wait_ms * 1000000;
  while (t->loads == 0 && !atomic_load(&t->nm->removed) &&
         frond__mono_ns() < deadline) {
    frond__seg_request_load(s, t);
    frond__cond_wait_until(&t->cv, &t->mu, deadline);
  }
  loaded = t->loads > 0;
  pthread_mutex_unlock(&t->mu);
  if (!loaded)
    return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE,
                       "tag \"%s\": the store has not delivered the period's "
                       "first segment",
                       tag);
  atomic_store_explicit(&t->capped, 1, memory_order_release);
  return 0;
}
