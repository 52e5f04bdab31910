/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_call.c -- the wrappers the core (and the multi: store, for its
** members) calls on an open store: fault injection in one place, the
** rollback guard on allocations, and closing. Below store.c, which opens
** stores and picks their backend, and store_multi.c, which calls these
** on its members.
*/
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

frond__store_fault_fn *_Atomic frond__store_fault;

uint64_t frond__store_rollbacks(const frond_store *st) {
  if (st != NULL && st->xRollbacks != NULL)
    return st->xRollbacks(st);
  return st ? frond__guard_rollbacks(st->guard) : 0;
}

void frond__store_close(frond_store *st) {
  if (st != NULL) {
    if (!st->guard_shared)
      frond__guard_free(st->guard);
    st->guard = NULL;
    st->methods->xClose(st);
  }
}

int frond__store_ensure_schema(frond_store *st, frond_error *err) {
  FROND__STORE_FAULT(st, "ensure_schema");
  return st->methods->xEnsureSchema(st, err);
}

int frond__store_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err) {
  FROND__STORE_FAULT(st, "alloc");
  if (step < 0)
    return frond__fail(err, FROND_EINVAL, "negative step %lld",
                       (long long)step);
  return frond__guard_alloc(st, tag, step, max_id, row_step, err);
}

int frond__store_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                          frond_error *err) {
  FROND__STORE_FAULT(st, "list");
  return st->methods->xTagList(st, out, n, err);
}

int frond__store_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                         frond_error *err) {
  FROND__STORE_FAULT(st, "get");
  return st->methods->xTagGet(st, tag, out, err);
}

int frond__store_tag_page(frond_store *st, const char *after, int limit,
                          frond__tag_fn fn, void *ctx, int *n,
                          frond_error *err) {
  frond_tag_row *rows = NULL;
  size_t nrows = 0, i;
  int rc;
  FROND__STORE_FAULT(st, "list");
  *n = 0;
  if (st->methods->iVersion >= 2 && st->methods->xTagPage != NULL)
    return st->methods->xTagPage(st, after, limit, fn, ctx, n, err);
  /* The whole list, sorted bytewise, from the row after `after`. */
  if ((rc = st->methods->xTagList(st, &rows, &nrows, err)) != 0)
    return rc;
  for (i = 0; i < nrows && *n < limit && rc == 0; i++)
    if (after == NULL || strcmp(rows[i].tag, after) > 0) {
      rc = fn(ctx, rows[i].tag, rows[i].step);
      ++*n;
    }
  free(rows);
  return rc;
}

int frond__store_fact(frond_store *st, const char *name, const char *value,
                      char *recorded, size_t len, frond_error *err) {
  FROND__STORE_FAULT(st, "fact");
  if (st->methods->iVersion < 3 || st->methods->xFact == NULL)
    return frond__fail(err, FROND_EINVAL, "store %s records no facts",
                       st->methods->zName);
  return st->methods->xFact(st, name, value, recorded, len, err);
}
