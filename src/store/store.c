/* SPDX-License-Identifier: Apache-2.0 */
/*
** store.c -- every call on an open store: the wrappers the core calls,
** and the public frond_store_* administration functions over them, in
** one place: fault injection, the rollback guard on allocations, tag
** validation, what a backend declares (xControl or the default), and the
** timing of each call per engine, member and call, which /metrics shows
** (frond_store_call_duration_seconds). Backends are opened in
** store_open.c; the multi: store calls these on its members.
*/
#include "store/store.h"
#include "base/utf8.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

frond__store_fault_fn *_Atomic frond__store_fault;

/* ---- call timings ---- */

enum {
  CALL_ENSURE_SCHEMA,
  CALL_ALLOC,
  CALL_TAG_LIST,
  CALL_TAG_GET,
  CALL_TAG_PAGE,
  CALL_FACT,
  CALL_TAG_CREATE,
  CALL_TAG_SET_STEP,
  CALL_TAG_DELETE,
  CALL_TAG_ADVANCE,
  CALL_TAG_FLOOR,
  CALL_REPAIR,
  NCALLS
};
static const char *const call_names[NCALLS] = {
    "ensure_schema", "alloc",       "tag_list",   "tag_get",
    "tag_page",      "fact",        "tag_create", "tag_set_step",
    "tag_delete",    "tag_advance", "tag_floor",  "repair_member"};

/* 5 ms to 10 s: a store call answers in milliseconds when it is well, and
** a member's answer is cut at 3 s (store_multi.c). */
const double frond__store_call_bounds[FROND__STORE_CALL_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

#define CALL_ROWS 64 /* (engine, member) pairs: 16 members of a few engines */

struct frond__store_calls {
  frond__store_label label;
  struct {
    atomic_ullong count, sum_ns;
    atomic_ullong le[FROND__STORE_CALL_BUCKETS]; /* not cumulative */
  } c[NCALLS];
};

static frond__store_calls rows[CALL_ROWS];
static atomic_size_t nrows; /* rows[0..nrows) are filled */
static pthread_mutex_t rows_mu = PTHREAD_MUTEX_INITIALIZER;

static void label_of(frond_store *st, frond__store_label *l) {
  snprintf(l->engine, sizeof(l->engine), "%s", st->methods->zName);
  l->member = -1;
  if (st->methods->iVersion >= 4 && st->methods->xControl != NULL)
    st->methods->xControl(st, FROND__STORE_LABEL, l, NULL);
}

/* st's row, found or added on its first call (a store is used by one
** thread at a time); NULL when the table is full: not timed. */
static frond__store_calls *calls_of(frond_store *st) {
  frond__store_label l;
  size_t i, n;
  if (st->calls != NULL)
    return st->calls;
  label_of(st, &l);
  pthread_mutex_lock(&rows_mu);
  n = atomic_load(&nrows);
  for (i = 0; i < n; i++)
    if (rows[i].label.member == l.member &&
        strcmp(rows[i].label.engine, l.engine) == 0)
      break;
  if (i == n && n < CALL_ROWS) {
    rows[n].label = l;
    atomic_store(&nrows, n + 1);
  }
  pthread_mutex_unlock(&rows_mu);
  return st->calls = i < CALL_ROWS ? &rows[i] : NULL;
}

static void timed(frond_store *st, int call, int64_t t0) {
  frond__store_calls *r = calls_of(st);
  uint64_t ns = (uint64_t)(frond__mono_ns() - t0);
  int b;
  if (r == NULL)
    return;
  for (b = 0; b < FROND__STORE_CALL_BUCKETS; b++)
    if ((double)ns <= frond__store_call_bounds[b] * 1e9) {
      atomic_fetch_add_explicit(&r->c[call].le[b], 1, memory_order_relaxed);
      break;
    }
  atomic_fetch_add_explicit(&r->c[call].sum_ns, ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&r->c[call].count, 1, memory_order_release);
}

/* Time the call expr (an int) on st as call, into rt_. */
#define TIMED(st, call, expr)                                                  \
  do {                                                                         \
    int64_t t0_ = frond__mono_ns();                                            \
    rt_ = (expr);                                                              \
    timed(st, call, t0_);                                                      \
  } while (0)

int frond__store_call_get(size_t n, frond__store_call_stat *out) {
  size_t i, k = 0, rows_n = atomic_load(&nrows);
  int c, b;
  for (i = 0; i < rows_n; i++)
    for (c = 0; c < NCALLS; c++) {
      uint64_t count = atomic_load_explicit(&rows[i].c[c].count,
                                            memory_order_acquire),
               sum = 0;
      if (count == 0 || k++ != n)
        continue;
      snprintf(out->engine, sizeof(out->engine), "%s", rows[i].label.engine);
      out->member = rows[i].label.member;
      out->call = call_names[c];
      for (b = 0; b < FROND__STORE_CALL_BUCKETS; b++) {
        sum += atomic_load_explicit(&rows[i].c[c].le[b], memory_order_relaxed);
        out->le[b] = sum;
      }
      /* Counted last: a reader may see a call in a bucket before its
      ** count, never the count before the bucket. */
      out->count = count > sum ? count : sum;
      out->sum = (double)atomic_load_explicit(&rows[i].c[c].sum_ns,
                                              memory_order_relaxed) /
                 1e9;
      return 0;
    }
  return -1;
}

/* ---- what a backend declares ---- */

static int control(frond_store *st, int op, void *arg) {
  if (st->methods->iVersion < 4 || st->methods->xControl == NULL)
    return FROND_EINVAL;
  return st->methods->xControl(st, op, arg, NULL);
}

int frond__store_order(frond_store *st) {
  int order = FROND_SEG_ORDER_TAG;
  control(st, FROND__STORE_ORDER, &order);
  return order;
}

int frond__store_own_guards(frond_store *st) {
  uint64_t n = 0;
  return control(st, FROND__STORE_ROLLBACKS, &n) == 0;
}

int frond__store_fixed_step(frond_store *st) {
  int fixed = 0;
  control(st, FROND__STORE_FIXED_STEP, &fixed);
  return fixed;
}

int64_t frond__store_max_step(frond_store *st) {
  int64_t max = 0;
  control(st, FROND__STORE_MAX_STEP, &max);
  return max > 0 ? max : 0;
}

int frond__store_retryable(int code) {
  return code == FROND_ESTORE || code == FROND_ESTORE_TIMEOUT ||
         code == FROND_ESTORE_MISMATCH || code == FROND_ESEGMENT_UNAVAILABLE;
}

int frond__store_members(frond_store *st, uint64_t *up) {
  frond__store_members_arg m = {0, 0};
  if (st != NULL)
    control(st, FROND__STORE_MEMBERS, &m);
  *up = m.up;
  return m.n;
}

int frond__store_give_back(frond_store *st, frond__store_give_back_arg *a,
                           frond_error *err) {
  int rc;
  a->handled = a->moved = 0;
  FROND__STORE_FAULT(st, "give_back");
  if (st->methods->iVersion < 4 || st->methods->xControl == NULL)
    return frond__fail(err, FROND_EINVAL, "the %s store gives nothing back",
                       st->methods->zName);
  rc = st->methods->xControl(st, FROND__STORE_GIVE_BACK, a, err);
  if (rc == FROND_EINVAL && !a->handled)
    return frond__fail(err, rc, "a %s store does no give-backs",
                       st->methods->zName);
  return rc;
}

int frond__store_ordered(frond_store *st, int op, frond__store_ordered_arg *a,
                         frond_error *err) {
  frond_error e = {0, ""};
  int64_t used, end;
  int rc;
  FROND__STORE_FAULT(st, op == FROND__STORE_ORDERED_TAKE ? "alloc" : "ordered");
  rc = st->methods->iVersion < 4 || st->methods->xControl == NULL
           ? FROND_EINVAL
           : st->methods->xControl(st, op, a, &e);
  if (rc != 0 && e.message[0] != '\0') /* the backend's own words */
    return frond__fail(err, rc, "%s", e.message);
  if (rc == FROND_EINVAL) /* a backend that serves none */
    return frond__fail(err, rc,
                       "tag \"%s\": a %s store serves no ordered tag (one "
                       "database does)",
                       a->tag, st->methods->zName);
  if (rc != 0 || op != FROND__STORE_ORDERED_TAKE)
    return rc;
  /* The rollback guard, as for every allocation; a range that went back
  ** is refused here rather than moved past (frond tag advance does). */
  used = a->step > 0 ? a->step : a->row_step;
  end = frond__guard_end(st->guard, a->tag);
  if (a->max_id - used < end)
    return frond__fail(err, FROND_ESTORE,
                       "tag \"%s\": the store handed out [%lld, %lld), below "
                       "%lld where a range this node already took ends: the "
                       "row went back (a failover that lost writes?)",
                       a->tag, (long long)(a->max_id - used),
                       (long long)a->max_id, (long long)end);
  frond__guard_note(st->guard, a->tag, a->max_id);
  return 0;
}

uint64_t frond__store_rollbacks(frond_store *st) {
  uint64_t n = 0;
  if (st == NULL)
    return 0;
  if (st->guard == NULL && control(st, FROND__STORE_ROLLBACKS, &n) == 0)
    return n; /* the guards it keeps itself (multi:'s members) */
  return frond__guard_rollbacks(st->guard);
}

/* ---- the wrappers the core calls ---- */

void frond__store_close(frond_store *st) {
  if (st != NULL) {
    if (!st->guard_shared)
      frond__guard_free(st->guard);
    st->guard = NULL;
    st->methods->xClose(st);
  }
}

int frond__store_ensure_schema(frond_store *st, frond_error *err) {
  int rt_;
  FROND__STORE_FAULT(st, "ensure_schema");
  TIMED(st, CALL_ENSURE_SCHEMA, st->methods->xEnsureSchema(st, err));
  return rt_;
}

int frond__store_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err) {
  int rt_;
  FROND__STORE_FAULT(st, "alloc");
  if (step < 0)
    return frond__fail(err, FROND_EINVAL, "negative step %lld",
                       (long long)step);
  TIMED(st, CALL_ALLOC,
        frond__guard_alloc(st, tag, step, max_id, row_step, err));
  return rt_;
}

int frond__store_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                          frond_error *err) {
  int rt_;
  FROND__STORE_FAULT(st, "list");
  TIMED(st, CALL_TAG_LIST, st->methods->xTagList(st, out, n, err));
  return rt_;
}

int frond__store_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                         frond_error *err) {
  int rt_;
  FROND__STORE_FAULT(st, "get");
  TIMED(st, CALL_TAG_GET, st->methods->xTagGet(st, tag, out, err));
  return rt_;
}

/* A version-1 backend's page: its whole list, sorted bytewise, from the
** row after `after`. */
static int page_of_list(frond_store *st, const char *after, int limit,
                        frond__tag_fn fn, void *ctx, int *n, frond_error *err) {
  frond_tag_row *rows_ = NULL;
  size_t nrows_ = 0, i;
  int rc;
  if ((rc = st->methods->xTagList(st, &rows_, &nrows_, err)) != 0)
    return rc;
  for (i = 0; i < nrows_ && *n < limit && rc == 0; i++)
    if (after == NULL || strcmp(rows_[i].tag, after) > 0) {
      rc = fn(ctx, rows_[i].tag, rows_[i].step);
      ++*n;
    }
  free(rows_);
  return rc;
}

int frond__store_tag_page(frond_store *st, const char *after, int limit,
                          frond__tag_fn fn, void *ctx, int *n,
                          frond_error *err) {
  int rt_;
  FROND__STORE_FAULT(st, "list");
  *n = 0;
  if (st->methods->iVersion >= 2 && st->methods->xTagPage != NULL)
    TIMED(st, CALL_TAG_PAGE,
          st->methods->xTagPage(st, after, limit, fn, ctx, n, err));
  else
    TIMED(st, CALL_TAG_PAGE, page_of_list(st, after, limit, fn, ctx, n, err));
  return rt_;
}

int frond__store_fact(frond_store *st, const char *name, const char *value,
                      char *recorded, size_t len, frond_error *err) {
  int rt_;
  FROND__STORE_FAULT(st, "fact");
  if (st->methods->iVersion < 3 || st->methods->xFact == NULL)
    return frond__fail(err, FROND_EINVAL, "store %s records no facts",
                       st->methods->zName);
  TIMED(st, CALL_FACT, st->methods->xFact(st, name, value, recorded, len, err));
  return rt_;
}

/* ---- tags, and the public administration API ---- */

int frond_tag_validate(const char *tag, size_t len, frond_error *err) {
  const unsigned char *s = (const unsigned char *)tag;
  size_t i = 0, k;
  uint32_t cp;
  if (tag == NULL || len == 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name is empty");
  if (len > FROND_TAG_MAX)
    return frond__fail(err, FROND_ETAG_INVALID,
                       "tag name is %zu bytes long, the limit is %d", len,
                       FROND_TAG_MAX);
  while (i < len) {
    k = frond__utf8_len(s + i, len - i, &cp);
    if (k == 0)
      return frond__fail(err, FROND_ETAG_INVALID,
                         "tag name is not valid UTF-8 (byte %zu)", i);
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
      return frond__fail(err, FROND_ETAG_INVALID,
                         "tag name contains control character U+%04X at "
                         "byte %zu",
                         (unsigned)cp, i);
    i += k;
  }
  return 0;
}

static int tag_check(const char *tag, frond_error *err) {
  if (tag == NULL)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name is missing");
  return frond_tag_validate(tag, strnlen(tag, FROND_TAG_MAX + 1), err);
}

/* leaf_alloc.step is an int. */
static int step_check(int64_t step, frond_error *err) {
  if (step < 1 || step > INT32_MAX)
    return frond__fail(err, FROND_EINVAL, "step %lld is out of 1..%d",
                       (long long)step, INT32_MAX);
  return 0;
}

int frond_store_tag_create(frond_store *st, const char *tag, int64_t step,
                           int64_t start, const char *description,
                           frond_error *err) {
  return frond_store_tag_create_seq(st, tag, step, start, description, NULL,
                                    err);
}

int frond_store_tag_create_seq(frond_store *st, const char *tag, int64_t step,
                               int64_t start, const char *description,
                               const frond_tag_seq *seq, frond_error *err) {
  int rc, rt_;
  if ((rc = frond__store_seq_check(seq, step, start, err)) != 0)
    return rc;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  if ((rc = step_check(step, err)) != 0)
    return rc;
  if (start < 0)
    return frond__fail(err, FROND_EINVAL, "start %lld is below 1",
                       (long long)start);
  if (description != NULL && strlen(description) > 256)
    return frond__fail(err, FROND_EINVAL,
                       "description is longer than 256 bytes");
  FROND__STORE_FAULT(st, "create");
  if (start == 0 && st->methods->iVersion < 3)
    start = 1; /* a store that keeps no floors (tests' fakes) */
  /* A bound below where the name starts again would issue nothing. */
  if (seq != NULL && seq->max > 0 && start == 0) {
    int64_t floor = 1, low;
    if ((rc = frond_store_tag_floor(st, tag, &floor, err)) != 0)
      return rc;
    if ((low = frond__tag_lowest_start(floor, step)) > seq->max)
      return frond__fail(err, FROND_EINVAL,
                         "tag \"%s\": max %lld is below %lld, where the "
                         "name starts again (one Leaf step above the floor "
                         "%lld a deleted tag of the name left)",
                         tag, (long long)seq->max, (long long)low,
                         (long long)floor);
  }
  /* Its bound and stride go into the create's transaction (store_sql_seq.c). */
  if ((rc = frond__store_create_seq(st, seq, err)) != 0)
    return rc;
  TIMED(st, CALL_TAG_CREATE,
        st->methods->xTagCreate(st, tag, step, start, description, err));
  return rt_;
}

int frond_store_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                         frond_error *err) {
  return frond__store_tag_list(st, out, n, err);
}

int frond_store_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                        frond_error *err) {
  int rc;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  return frond__store_tag_get(st, tag, out, err);
}

int frond_store_tag_set_step(frond_store *st, const char *tag, int64_t step,
                             frond_error *err) {
  frond_tag_seq q;
  int rc, rt_;
  if ((rc = tag_check(tag, err)) != 0 || (rc = step_check(step, err)) != 0)
    return rc;
  /* A strided tag's segments hold at least one ID each (store_sql_seq.c). */
  if ((rc = frond__store_seq(st, tag, &q, err)) != 0)
    return rc;
  if (q.increment > 1 && step < q.increment)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": step %lld is below its increment %lld: "
                       "a segment counts numbers, and must hold at least one "
                       "ID of the tag",
                       tag, (long long)step, (long long)q.increment);
  FROND__STORE_FAULT(st, "set_step");
  TIMED(st, CALL_TAG_SET_STEP, st->methods->xTagSetStep(st, tag, step, err));
  return rt_;
}

int frond_store_tag_delete(frond_store *st, const char *tag, frond_error *err) {
  int rc, rt_;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  FROND__STORE_FAULT(st, "delete");
  TIMED(st, CALL_TAG_DELETE, st->methods->xTagDelete(st, tag, err));
  return rt_;
}

int frond_store_tag_advance(frond_store *st, const char *tag, int64_t to,
                            frond_error *err) {
  int rc, rt_;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  if (to < 1)
    return frond__fail(err, FROND_EINVAL, "advancing to %lld: IDs start at 1",
                       (long long)to);
  if (st->methods->iVersion < 3 || st->methods->xTagAdvance == NULL)
    return frond__fail(err, FROND_EINVAL, "the %s store cannot advance tags",
                       st->methods->zName);
  FROND__STORE_FAULT(st, "advance");
  TIMED(st, CALL_TAG_ADVANCE, st->methods->xTagAdvance(st, tag, to, err));
  return rt_;
}

int frond_store_tag_floor(frond_store *st, const char *tag, int64_t *first,
                          frond_error *err) {
  int rc, rt_;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  if (first == NULL)
    return frond__fail(err, FROND_EINVAL, "first is NULL");
  *first = 1;
  if (st->methods->iVersion < 3 || st->methods->xTagFloor == NULL)
    return 0; /* a store without floors (tests' fakes) */
  FROND__STORE_FAULT(st, "floor");
  TIMED(st, CALL_TAG_FLOOR, st->methods->xTagFloor(st, tag, first, err));
  return rt_;
}

int frond_store_member_repair(frond_store *st, int member, frond_repair_fn fn,
                              void *ctx, frond_error *err) {
  frond__store_repair_arg a = {member, fn, ctx};
  uint64_t up;
  int rt_;
  if (st == NULL || frond__store_members(st, &up) == 0)
    return frond__fail(err, FROND_EINVAL,
                       "repairing a member needs a multi: store URI");
  FROND__STORE_FAULT(st, "repair");
  TIMED(st, CALL_REPAIR,
        st->methods->xControl(st, FROND__STORE_REPAIR, &a, err));
  return rt_;
}

void frond_free(void *p) {
  free(p);
}

static int plain_seq(const frond_tag_seq *q) {
  return q == NULL || (q->max <= 0 && q->increment <= 1 && !q->ordered);
}

/* ---- bounds and strides (store_sql_seq.c) ---- */

int frond__store_seq(frond_store *st, const char *tag, frond_tag_seq *q,
                     frond_error *err) {
  frond__store_seq_arg b = {tag, {0, 1, 0, 0}};
  int rc;
  *q = b.seq;
  if (st->methods->iVersion < 4 || st->methods->xControl == NULL)
    return 0;
  rc = st->methods->xControl(st, FROND__STORE_SEQ_GET, &b, err);
  if (rc == FROND_EINVAL) /* keeps none (frond://: its servers cut) */
    return 0;
  if (rc == 0)
    *q = b.seq;
  return rc;
}

static int max_put(frond_store *st, const char *tag, int64_t max,
                   frond_error *err) {
  frond__store_seq_arg b = {tag, {max, 1, 0, 0}};
  int rc = st->methods->iVersion < 4 || st->methods->xControl == NULL
               ? FROND_EINVAL
               : st->methods->xControl(st, FROND__STORE_MAX_PUT, &b, err);
  if (rc == FROND_EINVAL)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": the %s store keeps no bounds", tag,
                       st->methods->zName);
  return rc;
}

int frond__store_create_seq(frond_store *st, const frond_tag_seq *q,
                            frond_error *err) {
  frond_tag_seq arg = {0, 1, 0, 0};
  int rc;
  if (q != NULL)
    arg = *q;
  frond_error e = {0, ""};
  rc = st->methods->iVersion < 4 || st->methods->xControl == NULL
           ? FROND_EINVAL
           : st->methods->xControl(st, FROND__STORE_CREATE_SEQ, &arg, &e);
  if (rc != 0 && e.message[0] != '\0') /* the backend's own words */
    return frond__fail(err, rc, "%s", e.message);
  if (rc == FROND_EINVAL && !plain_seq(q))
    return frond__fail(err, FROND_EINVAL,
                       "the %s store keeps no bounds, strides or ordered "
                       "tags",
                       st->methods->zName);
  return rc == FROND_EINVAL ? 0 : rc;
}

/* The rules of a create's attributes, before anything is written. */
int frond__store_seq_check(const frond_tag_seq *q, int64_t step, int64_t start,
                           frond_error *err) {
  if (q == NULL)
    return 0;
  /* A bounded or strided tag whose first segment passes the bigint range
  ** would issue nothing (every allocation overflows), and its first ID
  ** could not be told. (A plain one is left as Leaf's table allows.) */
  if ((q->max > 0 || q->increment > 1) && start > 0 && step > 0 &&
      start > INT64_MAX - step)
    return frond__fail(err, FROND_EINVAL,
                       "start %lld: its first segment of %lld passes the end "
                       "of the bigint range (%lld), so the tag could issue "
                       "nothing; start at most %lld",
                       (long long)start, (long long)step, (long long)INT64_MAX,
                       (long long)(INT64_MAX - step));
  if (q->max < 0)
    return frond__fail(err, FROND_EINVAL, "max %lld is below 1 (0: none)",
                       (long long)q->max);
  if (q->increment < 0 || q->increment > INT32_MAX)
    return frond__fail(err, FROND_EINVAL, "increment %lld is out of 1..%d",
                       (long long)q->increment, INT32_MAX);
  if (q->offset < 0 || (q->offset > 0 && q->offset >= q->increment))
    return frond__fail(err, FROND_EINVAL,
                       "offset %lld is out of 0..%lld (the remainder of every "
                       "ID divided by the increment %lld)",
                       (long long)q->offset,
                       (long long)(q->increment > 1 ? q->increment - 1 : 0),
                       (long long)(q->increment > 1 ? q->increment : 1));
  if (q->increment > 1 && step < q->increment)
    return frond__fail(err, FROND_EINVAL,
                       "step %lld is below the increment %lld: a segment "
                       "counts numbers, and must hold at least one ID of "
                       "the tag",
                       (long long)step, (long long)q->increment);
  if (q->max > 0 && start > 0 && start > q->max)
    return frond__fail(err, FROND_EINVAL,
                       "max %lld is below the start %lld: the tag could "
                       "issue nothing",
                       (long long)q->max, (long long)start);
  return 0;
}

int frond_store_tag_owner(frond_store *st, const char *tag, char *addr,
                          size_t cap, int64_t *epoch, frond_error *err) {
  frond__store_ordered_arg a;
  int rc;
  if (st == NULL || tag == NULL || addr == NULL || cap == 0 || epoch == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  memset(&a, 0, sizeof(a));
  a.tag = tag;
  if ((rc = frond__store_ordered(st, FROND__STORE_ORDERED_READ, &a, err)) != 0)
    return rc;
  snprintf(addr, cap, "%s", a.holder);
  *epoch = a.holder_epoch;
  return 0;
}

int frond_store_tag_seq(frond_store *st, const char *tag, frond_tag_seq *out,
                        frond_error *err) {
  frond_tag_row row;
  int rc;
  if ((rc = frond_store_tag_get(st, tag, &row, err)) != 0)
    return rc;
  return frond__store_seq(st, tag, out, err);
}

int frond_store_tag_set_max(frond_store *st, const char *tag, int64_t max,
                            frond_error *err) {
  frond_tag_row row;
  frond_tag_seq q;
  int rc;
  if (max < 0)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": max %lld is below 1 (0: no bound)", tag,
                       (long long)max);
  if ((rc = frond_store_tag_get(st, tag, &row, err)) != 0)
    return rc;
  /* A lowering below what is out is refused before anything is written
  ** when the attributes read (a multi: store's members may disagree after
  ** a set-max that reached some: then each member's write checks). */
  if (frond__store_seq(st, tag, &q, NULL) == 0 && max > 0 &&
      (q.max == 0 || max < q.max) && row.max_id - 1 > max)
    return frond__fail(err, FROND_ETAG_FLOOR,
                       "tag \"%s\": max %lld is below %lld, the highest ID "
                       "it may already have issued; a bound only rises "
                       "once IDs are out",
                       tag, (long long)max, (long long)(row.max_id - 1));
  /* The check and the write are one transaction on each database
  ** (frond__seq_max_set): nothing is written back afterwards. */
  if ((rc = max_put(st, tag, max, err)) != 0)
    return rc;
  FROND__STORE_FAULT(st, "set_max_written");
  return 0;
}
