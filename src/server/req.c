/* SPDX-License-Identifier: Apache-2.0 */
/*
** req.c -- the request layer under every front: what HTTP, RESP and any
** later protocol do with a request between reading their own arguments
** and writing their own answer.
**
**   - argument checks: a count within its limit;
**   - issuing: IDs and ID strings from memory on the event loop (ids.c,
**     formats.c), and the answer written at once through the front's
**     frond__req_how;
**   - waiting: what cannot be done on the loop (a tag to look up in the
**     store, a segment not loaded yet, a period's first use, a key to
**     check, an admin call on the store) runs on libuv's thread pool. This
**     file owns such a request's whole life, as Redis' blocked.c owns a
**     blocked client's: it copies the front's record of the request, holds
**     the connection, runs the work, counts the result, asks the front to
**     answer (unless the client went away), lets it count and log, and
**     resumes the connection. A new kind of wait is a case of work() here,
**     never a new queue in a front;
**   - answers: which HTTP status each library code gets (one table, RESP
**     replies -NAME message for every code but the credentials', which
**     answer as Redis' ACLs do), and a call that had to wait
**     and could not is SEGMENT_UNAVAILABLE, said in one place;
**   - decoding: an ID or ID string into the fields every front shows
**     (core/format_fields.c).
**
** Credentials, quotas and audit hook in here, once for every front: who
** a client is and what it may do at the top of frond__req_run (acl.c:
** the front has read its credential onto the connection), how much
** at the top of frond__req_run (every ID, ID string and store call passes
** there with its operation, tag, count and connection, before anything is
** issued), and what was done in finish() (every request that waited, its
** result known, whether or not its client is still there).
*/
#include "base/base.h"
#include "core/core.h"
#include "server/quota.h"
#include "server/server.h"

#include "server/acl.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ answers */

/*
** The HTTP status of each library code a request can end with; any other
** is 500. RESP answers every code as -NAME message, so the table has no
** column for it. docs/reference/errors.md lists the same (checked by
** test_docs_errors.py).
*/
#define ANSWERS(XX)                                                            \
  XX(INVAL, 400)                                                               \
  XX(COUNT_INVALID, 400)                                                       \
  XX(ID_INVALID, 400)                                                          \
  XX(TAG_INVALID, 400)                                                         \
  XX(LAYOUT_INVALID, 400)                                                      \
  XX(FORMAT_INVALID, 400)                                                      \
  XX(KEY_INVALID, 400)                                                         \
  XX(UNAUTHORIZED, 401)                                                        \
  XX(FORBIDDEN, 403)                                                           \
  XX(TAG_NOT_FOUND, 404)                                                       \
  XX(TAG_EXISTS, 409)                                                          \
  XX(TAG_FLOOR, 409)                                                           \
  XX(SEGMENT_EXHAUSTED, 409)                                                   \
  XX(SEGMENT_UNAVAILABLE, 503)                                                 \
  XX(CLOCK_BEHIND, 503)                                                        \
  XX(STORE, 503)                                                               \
  XX(NODE_ID_LOST, 503)                                                        \
  XX(COORD, 503)                                                               \
  XX(CLOSED, 503)                                                              \
  XX(LAYOUT_MISMATCH, 503)                                                     \
  XX(SEQUENCE_EXHAUSTED, 503)                                                  \
  XX(STORE_MEMBER_STALE, 503)                                                  \
  XX(STORE_TIMEOUT, 503)                                                       \
  XX(STORE_MISMATCH, 503)                                                      \
  XX(QUOTA_EXCEEDED, 429)                                                      \
  XX(AUDIT_UNAVAILABLE, 503)                                                   \
  XX(DATACENTER_MISMATCH, 503)                                                 \
  XX(COORDINATOR_MISMATCH, 503)                                                \
  XX(TAG_OWNER, 503)

int frond__req_status(int code) {
  switch (code) {
#define XX(name, status)                                                       \
  case FROND_E##name:                                                          \
    return status;
    ANSWERS(XX)
#undef XX
  default:
    return 500;
  }
}

const char *frond__req_message(int code, const frond_error *err) {
  return err != NULL && err->code != 0 ? err->message : frond_strerror(code);
}

/* A call that would wait, and could not be taken off the loop (no memory,
** the pool refused it): what the client is told. */
static void unavailable(frond__req *r) {
  if (r->rc == FROND_EWOULD_BLOCK)
    r->rc = frond__fail(&r->err, FROND_ESEGMENT_UNAVAILABLE,
                        "the segment is being loaded and the request could "
                        "not wait for it");
}

/* ------------------------------------------------------ argument checks */

int frond__req_count(frond__req *r, const frond__server *srv, const char *s,
                     size_t len) {
  int64_t max =
      r->op == FROND__REQ_RANGE ? srv->cfg.max_range : srv->cfg.max_count;
  int64_t n;
  if (s == NULL) {
    r->n = 1;
    return 0;
  }
  /* At most 19 characters, as HTTP has always read it. */
  if (len == 0 || len > 19 || frond__parse_i64(s, len, &n) != 0 || n < 1 ||
      n > max)
    return r->rc = frond__fail(&r->err, FROND_ECOUNT_INVALID,
                               "count must be an integer in [1, %lld]",
                               (long long)max);
  r->n = (size_t)n;
  return 0;
}

/* ---------------------------------------------------- waiting requests */

/* A request waiting off the loop, with its front's record after it and
** the room of its result after that. */
typedef struct waiting {
  uv_work_t work;
  frond__worker *w;
  frond__conn *c; /* held until finish() resumes it */
  frond__req r;   /* a copy: its pointers lead into this record */
  int admitted;   /* holds a tag look-up of the budget (ids.c) */
  int relayed;    /* the IDs are an ordered tag's owner's (forward.c) */
  int64_t *ids;   /* the result's room, after the front's record */
  char *strs;
  char tag[FROND_SHARD_KEY_MAX + 1]; /* a tag, or a shard= format's key */
} waiting;

_Static_assert(FROND_SHARD_KEY_MAX >= FROND_TAG_MAX,
               "a tag fits the key's room");

#define ROUND16(n) (((n) + 15) & ~(size_t)15)

/* On a pool thread: the call, allowed to wait. */
static void work(uv_work_t *wk) {
  waiting *q = wk->data;
  frond__req *r = &q->r;
  frond__server *srv = q->w->srv;
  frond_seg *seg;
  switch (r->op) {
  case FROND__REQ_SEGMENT:
  case FROND__REQ_RANGE:
    r->rc = frond__ids_segment_wait(srv, q->tag, r->len, r->n,
                                    r->op == FROND__REQ_RANGE, q->admitted,
                                    q->ids, &r->start, &r->err);
    /* An ordered tag that another node owns: its answer (forward.c). */
    if (r->rc == FROND_ETAG_OWNER && r->op == FROND__REQ_SEGMENT &&
        !r->forwarded) {
      r->rc =
          frond__forward_segment(srv, q->tag, r->len, r->n, q->ids, &r->err);
      q->relayed = 1;
    }
    break;
  case FROND__REQ_FORMAT:
    /* The caller's key, copied with the request (1 byte at least). */
    r->rc =
        frond__formats_next_wait(srv, r->nf, r->len > 0 ? q->tag : NULL, r->len,
                                 r->n, q->strs, &q->admitted, &r->err);
    break;
  default: /* FROND__REQ_STORE: one call at a time on one connection */
    pthread_mutex_lock(&srv->store_lock);
    if ((r->rc = frond__store_conn(srv, &r->err)) == 0)
      r->rc = r->how->store(r, r->ctx, srv->store_conn);
    frond__store_conn_check(srv, r->rc);
    pthread_mutex_unlock(&srv->store_lock);
    /* A change shows in the allocator at once, not at its next refresh:
    ** the one row is read again (not the whole list, which may be long). */
    if (r->rc == 0 && r->change && (seg = atomic_load(&srv->seg)) != NULL)
      (void)frond_seg_refresh_tag(seg, q->tag, r->len, NULL);
  }
}

/* Back on the loop: count, answer, resume, free. */
static void finish(uv_work_t *wk, int status) {
  waiting *q = wk->data;
  frond__req *r = &q->r;
  frond__worker *w = q->w;
  frond__conn *c = q->c;
  int gone = frond__conn_gone(c);
  if (q->admitted)
    frond__ids_lookup_release(w->srv);
  if (status != 0) /* cancelled: the call never ran */
    r->rc = frond__fail(&r->err, FROND_ECLOSED, "%s", uv_strerror(status));
  if (r->rc == 0 && r->op == FROND__REQ_FORMAT)
    FROND__INC(w->format_counts[r->nf->index], r->n);
  else if (r->rc == 0 && q->relayed) /* issued, and counted, by the owner */
    FROND__INC(w->m.ids_forwarded, r->n);
  else if (r->rc == 0 && r->op != FROND__REQ_STORE)
    FROND__INC(w->m.ids_segment, r->n);
  unavailable(r);
  if (!gone)
    r->how->answer(r, r->ctx);
  frond__audit_req(c, r, gone);
  frond__conn_resume(c, r->how->done(r, r->ctx, gone));
  frond__acl_release(r->client);
  free(q);
}

/* Can the call that failed with r->rc on the loop finish off it? A tag
** the allocator does not know is looked up in the store first, within the
** look-up budget (admitted). */
static int can_wait(const frond__server *srv, const frond__req *r,
                    int *lookup) {
  *lookup = r->rc == FROND_ETAG_NOT_FOUND;
  switch (r->op) {
  case FROND__REQ_SEGMENT:
  case FROND__REQ_RANGE:
    return (r->rc == FROND_EWOULD_BLOCK || *lookup ||
            (r->rc == FROND_ETAG_OWNER && r->op == FROND__REQ_SEGMENT &&
             !r->forwarded)) &&
           atomic_load(&srv->seg) != NULL && r->len <= FROND_TAG_MAX;
  case FROND__REQ_FORMAT:
    /* A period's first use is not counted against the budget: every such
    ** call is valid, and all but the first find the period made. */
    return r->rc == FROND_EWOULD_BLOCK ||
           (*lookup && frond_format_tag(r->nf->f) != NULL);
  case FROND__REQ_STORE:
    return 1;
  default:
    return 0;
  }
}

/* Take r off the loop: 1 when queued (c is held; finish() answers), 0
** when it cannot be, r->rc then says why. */
static int wait_off_loop(frond__conn *c, frond__req *r) {
  frond__worker *w = c->w;
  size_t ctx = ROUND16(r->how->ctx_size), room = 0;
  waiting *q;
  int lookup, rc;
  if (!can_wait(w->srv, r, &lookup))
    return 0;
  if (lookup && !frond__ids_lookup_admit(w->srv))
    return 0;
  assert(r->len <= FROND_SHARD_KEY_MAX); /* a front's tag or key at most */
  if (r->op == FROND__REQ_SEGMENT)
    room = r->n * sizeof(int64_t);
  else if (r->op == FROND__REQ_FORMAT)
    room = r->n * r->nf->stride;
  if ((q = malloc(ROUND16(sizeof *q) + ctx + room)) == NULL) {
    if (r->op == FROND__REQ_STORE)
      r->rc = frond__fail(&r->err, FROND_ENOMEM, "out of memory");
    goto undo;
  }
  q->w = w;
  q->c = c;
  q->r = *r;
  q->admitted = lookup;
  q->relayed = 0;
  memcpy(q->tag, r->tag != NULL ? r->tag : "", r->len);
  q->tag[r->len] = '\0';
  q->r.tag = q->tag;
  q->r.ctx = (char *)q + ROUND16(sizeof *q);
  memcpy(q->r.ctx, r->ctx, r->how->ctx_size);
  if (r->how->keep != NULL)
    r->how->keep(q->r.ctx);
  q->strs = (char *)q->r.ctx + ctx;
  q->ids = (int64_t *)(void *)q->strs;
  q->r.ids = q->ids;
  q->r.strs = q->strs;
  q->r.err.code = 0;
  q->r.err.message[0] = '\0';
  q->work.data = q;
  if ((rc = uv_queue_work(&w->loop, &q->work, work, finish)) != 0) {
    free(q);
    if (r->op == FROND__REQ_STORE)
      r->rc = frond__fail(&r->err, FROND_ECLOSED, "%s", uv_strerror(rc));
    goto undo;
  }
  frond__conn_hold(c);
  frond__acl_hold(r->client);
  return 1;
undo:
  if (lookup)
    frond__ids_lookup_release(w->srv);
  return 0;
}

void frond__req_run(frond__conn *c, frond__req *r) {
  frond__worker *w = c->w;
  /* Quotas and audit of what is asked hook in here (see the head
  ** comment): every request of every front passes before it is served.
  ** Credentials first: who asks, and may they; then the audit log's room
  ** and the quotas (which take what they count). */
  if (frond__acl_req(c, r) != 0 || frond__audit_admit(c, r) != 0 ||
      (w->srv->quota != NULL &&
       (r->rc = frond__quota_take(w->srv, r, &r->err)) != 0)) {
    r->how->answer(r, r->ctx);
    return;
  }
  switch (r->op) {
  case FROND__REQ_SNOWFLAKE:
    r->rc = frond__ids_snowflake(w, r->n, &r->err);
    r->ids = w->ids;
    break;
  case FROND__REQ_SEGMENT:
    r->rc = frond__ids_segment(w, r->tag, r->len, r->n, &r->err);
    r->ids = w->ids;
    break;
  case FROND__REQ_RANGE:
    r->rc =
        frond__ids_range(w, r->tag, r->len, (int64_t)r->n, &r->start, &r->err);
    break;
  case FROND__REQ_FORMAT:
    r->rc = frond__formats_next(w, r->nf, r->tag, r->len, r->n, &r->err);
    r->strs = w->strs.data;
    break;
  default: /* a store call never runs on the loop */
    r->rc = FROND_EWOULD_BLOCK;
  }
  if (r->rc != 0 && wait_off_loop(c, r))
    return;
  unavailable(r);
  r->how->answer(r, r->ctx);
  frond__audit_req(c, r, 0);
}

/* -------------------------------------------------------------- decoding */

/* 1 to 19 decimal digits: a snowflake ID, answered with its fields. */
static int decimal(const char *s, size_t len) {
  size_t i;
  for (i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return 0;
  return len >= 1 && len <= 19;
}

int frond__req_decode(frond__server *srv, const frond__named_format *nf,
                      const char *s, size_t len, frond__field *out, size_t *n,
                      frond_error *err) {
  int64_t id;
  if (nf != NULL || !decimal(s, len))
    return frond__formats_decode(srv, nf, s, len, out, n, err);
  if (frond__parse_i64(s, len, &id) != 0)
    return frond__fail(err, FROND_EID_INVALID,
                       "the ID must be a decimal integer");
  return frond__snowflake_fields(&srv->layout, id, out, n, err);
}
