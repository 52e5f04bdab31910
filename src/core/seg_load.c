/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_load.c -- the segment allocator's loader pool.
**
** A tag that wants a segment (its first, or the next once preload_pct of
** the current one is handed out) goes on a queue; `loaders` threads take
** tags off it, each running the store transaction on a connection of its
** own, with no tag lock held, and install the result under the tag's
** mutex. Segments of different tags so load at the same time, and a tag
** whose transaction stalls (a row lock held elsewhere, a slow replica)
** holds one loader, not the others: it delays only itself, as long as
** fewer than `loaders` tags stall at once. A tag is on the queue at most
** once and in the store on at most one loader.
**
** A failed load is retried after a backoff that doubles from retry_min_ms
** to retry_max_ms, per tag: the tag waits on a heap ordered by its retry
** time, and loaders sleep until the earliest one (or the next periodic
** refresh of the tag list, which whichever loader is free runs).
*/
#include "core/seg.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the queue and the retry heap (under s->mu) ---- */

static void queue_push(frond_seg *s, seg_tag *t) {
  t->q_next = NULL;
  if (s->q_tail != NULL)
    s->q_tail->q_next = t;
  else
    s->q_head = t;
  s->q_tail = t;
  t->qstate = SEG_Q_QUEUED;
}

static seg_tag *queue_pop(frond_seg *s) {
  seg_tag *t = s->q_head;
  if (t != NULL) {
    s->q_head = t->q_next;
    if (s->q_head == NULL)
      s->q_tail = NULL;
    t->qstate = SEG_Q_NONE;
  }
  return t;
}

static void heap_swap(seg_retry *h, size_t a, size_t b) {
  seg_retry x = h[a];
  h[a] = h[b];
  h[b] = x;
}

static int heap_push(frond_seg *s, seg_tag *t, int64_t at_ns) {
  size_t i;
  if (s->nretry == s->retry_cap) {
    size_t cap = s->retry_cap ? s->retry_cap * 2 : 16;
    seg_retry *h = realloc(s->retry, cap * sizeof(*h));
    if (h == NULL)
      return -1;
    s->retry = h;
    s->retry_cap = cap;
  }
  i = s->nretry++;
  s->retry[i].at_ns = at_ns;
  s->retry[i].t = t;
  for (; i > 0 && s->retry[(i - 1) / 2].at_ns > s->retry[i].at_ns;
       i = (i - 1) / 2)
    heap_swap(s->retry, i, (i - 1) / 2);
  t->qstate = SEG_Q_RETRY;
  return 0;
}

static seg_tag *heap_pop(frond_seg *s) {
  seg_tag *t = s->retry[0].t;
  size_t i = 0;
  s->retry[0] = s->retry[--s->nretry];
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < s->nretry && s->retry[l].at_ns < s->retry[m].at_ns)
      m = l;
    if (r < s->nretry && s->retry[r].at_ns < s->retry[m].at_ns)
      m = r;
    if (m == i)
      break;
    heap_swap(s->retry, i, m);
    i = m;
  }
  t->qstate = SEG_Q_NONE;
  return t;
}

/* Put t on the queue (at once) or the heap (at at_ns), unless it is on
** one already. Expects s->mu held. */
static void schedule(frond_seg *s, seg_tag *t, int64_t at_ns) {
  if (t->qstate != SEG_Q_NONE)
    return;
  if (at_ns <= frond__mono_ns() || heap_push(s, t, at_ns) != 0)
    queue_push(s, t);
  pthread_cond_signal(&s->cv);
}

void frond__seg_request_load(frond_seg *s, seg_tag *t) {
  if (t->want)
    return;
  t->want = 1;
  pthread_mutex_lock(&s->mu);
  schedule(s, t, 0);
  pthread_mutex_unlock(&s->mu);
}

/* ---- one load ---- */

int frond__seg_install(frond_seg *s, seg_tag *t, int64_t start, int64_t size,
                       int64_t stride, int64_t step, int64_t res_start,
                       int64_t res_end) {
  uint64_t w = atomic_load(&t->word), g = w >> SEG_GEN_SHIFT;
  uint64_t next = (g + 1) & SEG_GEN_MASK;
  seg_entry *cur = entry_of(t, g);
  int used_up =
      cur == NULL || (w & SEG_OFF_MASK) >= (uint64_t)atomic_load(&cur->size);
  if (used_up && entry_of(t, next) != NULL) { /* switch first */
    switch_gen(t, w);
    w = atomic_load(&t->word);
    g = next;
    next = (g + 1) & SEG_GEN_MASK;
    used_up = 0;
  }
  if (!used_up && entry_of(t, next) != NULL)
    return 0;
  /* The next segment never overlaps the one being served. It starts past
  ** its end when the store declares tag order (the store's guard hands
  ** out ranges above every earlier one of the tag); a store that declares
  ** segment order (multi:, whose members interleave blocks) may hand out
  ** a lagging member's block below it. */
  assert(start >= 0 && size > 0 && stride >= 1);
  assert(entry_of(t, g) == NULL ||
         start >= atomic_load(&entry_of(t, g)->start) +
                      (atomic_load(&entry_of(t, g)->size) - 1) *
                          entry_of(t, g)->stride +
                      1 ||
         (frond__store_order(s->store) == FROND_SEG_ORDER_SEGMENT &&
          start + (size - 1) * stride < atomic_load(&entry_of(t, g)->start)));
  entry_write(&t->e[next & 1], next, start, size, stride, step,
              s->o.preload_pct);
  t->e[next & 1].res_start = res_start;
  t->e[next & 1].res_end = res_end;
  if (used_up)
    switch_gen(t, w);
  return 1;
}

void frond_seg_tag_seq(frond_seg_tag *h, frond_tag_seq *out,
                       int64_t *remaining) {
  seg_tag *t = (seg_tag *)h;
  frond_tag_info v;
  int64_t b, end, left, k, r;
  /* The row as the last load read it, and the buffers, under one lock:
  ** a load records both as it installs (a child's copy of the tag after
  ** fork takes no lock, and has no buffers). A tag a refresh found
  ** created again is unknown until its next load: nothing is counted. */
  int locked = frond__seg_forked(t->s, NULL) == 0, known;
  memset(&v, 0, sizeof(v));
  if (locked) {
    pthread_mutex_lock(&t->mu);
    frond__seg_describe(t->s, t, &v);
  }
  b = atomic_load(&t->bound);
  end = atomic_load(&t->row_end);
  k = atomic_load(&t->stride);
  r = atomic_load(&t->residue);
  known = atomic_load(&t->bound_read);
  if (locked)
    pthread_mutex_unlock(&t->mu);
  out->max = b;
  out->increment = k > 1 ? k : 1;
  out->offset = k > 1 ? r : 0;
  out->ordered = atomic_load(&t->ordered);
  *remaining = -1;
  if (b <= 0 || !known)
    return;
  k = out->increment;
  r = out->offset;
  /* The buffers in numbers: one stride per ID (seg_tags.c). */
  left = (v.current.ready ? (v.current.end - v.current.pos) / k : 0) +
         (v.next.ready ? (v.next.end - v.next.pos) / k : 0);
  if (end > 0 && end <= b) /* not yet allocated from the row */
    left += frond__seg_count(end, b, k, r) + ((b - r) % k == 0);
  *remaining = left;
}

/* Open the loader's own connection on first use. It shares the rollback
** guard of the allocator's connection: a tag's loads run on any loader,
** and a range that went back must be refused whichever loader took the
** ranges before it (store_guard.c). */
static int connect_store(frond_seg *s, frond_store **st, frond_error *err) {
  if (*st != NULL)
    return 0;
  return frond__store_open_shared(s->uri, s->store, st, err);
}

/* The tag is used up: no number at or below its bound is left. */
static int exhausted(seg_tag *t, int64_t bound, frond_error *err) {
  return frond__fail(err, FROND_ESEGMENT_EXHAUSTED,
                     "tag \"%s\": every ID up to its max %lld has been "
                     "issued (a bounded tag never wraps: raise the max, or "
                     "use another tag)",
                     t->nm->name, (long long)bound);
}

/* A tag whose row the last load found at or past its bound (or one this
** process has not loaded yet) allocates again only once its bound was
** raised (or dropped) past its row: each allocation beyond the bound
** moves the row and wastes the numbers, and would run it to the end of
** the bigint range under a client that retries. Saving numbers only: the
** cut after the allocation is what keeps every ID at or below the bound.
** The bound and the row are two reads: a tag deleted and created again
** between them (its row starts at the old one's floor) gives the old
** bound and the new row. The bound is read again, and only a bound the
** same on both sides of the row's read says used up; else the allocation
** goes ahead, and its cut decides. */
static int still_exhausted(frond_store *st, seg_tag *t, frond_tag_seq *q,
                           frond_error *err) {
  frond_tag_row row;
  frond_tag_seq again;
  int rc;
  if ((rc = frond__store_seq(st, t->nm->name, q, err)) != 0 || q->max == 0 ||
      (rc = frond__store_tag_get(st, t->nm->name, &row, err)) != 0 ||
      row.max_id <= q->max ||
      (rc = frond__store_seq(st, t->nm->name, &again, err)) != 0)
    return rc;
  if (again.max != q->max || again.increment != q->increment ||
      again.offset != q->offset || again.ordered != q->ordered) {
    *q = again;
    return 0;
  }
  return exhausted(t, q->max, err);
}

/* Run t's store transaction on the loader's connection and install the
** segment. range: the step was raised for a range, which does not count
** as the tag's dynamic step. */
static void load(frond_seg *s, frond_store **st, seg_tag *t, int64_t step,
                 uint64_t gen, int range) {
  frond_error e = {0, ""};
  int64_t max_id = 0, row_step = 0, used, start, backoff_ms, bound;
  int64_t first = 0, count = 0, k, res_end = 0;
  frond_tag_seq q = {0, 1, 0, 0};
  seg_claim c;
  unsigned busy;
  int rc, was_failing, restrided, ordered, reorder, read, past;
  busy = atomic_fetch_add(&s->busy, 1) + 1;
  for (unsigned m = atomic_load(&s->max_busy);
       busy > m && !atomic_compare_exchange_weak(&s->max_busy, &m, busy);)
    ;
  rc = connect_store(s, st, &e);
  if (rc == 0 && (atomic_load(&t->past) || !atomic_load(&t->bound_read)) &&
      frond__store_order(*st) == FROND_SEG_ORDER_TAG)
    rc = still_exhausted(*st, t, &q, &e);
  /* An ordered tag's allocation is its owner's (seg_ordered.c). Whether
  ** the tag is ordered is read before its first allocation (above) and
  ** after every one (below). */
  ordered = atomic_load(&t->ordered) || q.ordered;
  if (rc == 0 && ordered) {
    rc = frond__seg_ordered_take(s, *st, t, step, &c, &e);
    max_id = c.max_id;
    row_step = c.row_step;
  } else if (rc == 0) {
    rc = frond__store_alloc(*st, t->nm->name, step, &max_id, &row_step, &e);
  }
  /* The attributes are read after the allocation has committed: a bound
  ** lowered before the commit is seen here, and one lowered after it sees
  ** the row this allocation moved (store_sql_seq.c). */
  if (rc == 0)
    rc = frond__store_seq(*st, t->nm->name, &q, &e);
  /* Created again as another kind between two refreshes (a take refused
  ** as not ordered, an allocation of a tag now ordered): nothing of this
  ** load is installed, the next one allocates as the tag now is. */
  reorder = (rc == 0 && q.ordered != ordered) ||
            (rc == FROND_EINVAL && ordered &&
             frond__store_seq(*st, t->nm->name, &q, NULL) == 0 && !q.ordered);
  atomic_fetch_sub(&s->busy, 1);
  if (reorder) {
    pthread_mutex_lock(&t->mu);
    t->loading = 0;
    frond__seg_drop(t);
    atomic_store(&t->ordered, q.ordered);
    frond__seg_request_load(s, t);
    pthread_mutex_unlock(&t->mu);
    frond_log(FROND_LOG_INFO, "segment: tag \"%s\" is %s now", t->nm->name,
              q.ordered ? "ordered" : "no longer ordered");
    return;
  }
  bound = q.max;
  k = q.increment > 1 ? q.increment : 1;
  used = step > 0 ? step : row_step;
  start = max_id - used;
  if (rc == 0 && (used < 1 || used > INT32_MAX || start < 0))
    rc = frond__fail(&e, FROND_ESTORE,
                     "row gives an invalid range (max_id %lld, step %lld)",
                     (long long)max_id, (long long)used);
  /* The stride of the buffers loaded before: a different one now is a
  ** tag deleted and created again with another (seg_tags.c, restrided). */
  restrided = rc == 0 && atomic_load(&t->bound_read) &&
              (atomic_load(&t->stride) != k ||
               atomic_load(&t->residue) != (k > 1 ? q.offset : 0));
  /* What the row said is recorded with the install below, under mu: a
  ** count of the IDs left (bounded_left, frond_seg_tag_seq) reads the
  ** row's end and the buffers together, and never sees the end moved past
  ** a segment not installed yet. The row at or past the bound: the next
  ** load asks first (an allocation there would only move the row, and
  ** near the end of the bigint range be refused as an overflow instead of
  ** said used up). */
  read = rc == 0 || rc == FROND_ESEGMENT_EXHAUSTED;
  past = rc != 0 || (bound > 0 && max_id > bound);
  /* Cut the range at the bound: [start, min(max_id, bound + 1)), and of
  ** it install only the numbers of the residue: first, first + k, ...,
  ** count of them. Nothing above the bound and nothing of another residue
  ** is installed, so no path (single IDs, batches, the inline call) can
  ** hand one out. The numbers stay inside the range the row handed out,
  ** so they are unique as the ranges are. */
  if (rc == 0) {
    res_end = max_id; /* the row's, before the cut */
    if (bound > 0 && max_id - 1 > bound)
      max_id = start > bound ? start : bound + 1;
    first = frond__seg_first(start, k, k > 1 ? q.offset : 0);
    count = frond__seg_count(start, max_id, k, k > 1 ? q.offset : 0);
    if (count == 0 && bound > 0 && (first < 0 || first > bound))
      rc = exhausted(t, bound, &e);
    else if (count == 0)
      rc = frond__fail(&e, FROND_ESTORE,
                       "tag \"%s\": the range [%lld, %lld) holds no ID of "
                       "the residue %lld modulo %lld: its step is below its "
                       "increment",
                       t->nm->name, (long long)start, (long long)max_id,
                       (long long)q.offset, (long long)k);
  }
  atomic_store(&s->store_ok, rc == 0 || rc == FROND_ETAG_NOT_FOUND ||
                                 rc == FROND_ESEGMENT_EXHAUSTED ||
                                 rc == FROND_ETAG_OWNER);
  pthread_mutex_lock(&t->mu);
  t->loading = 0;
  if (gen != t->gen || atomic_load(&t->nm->removed)) {
    /* A load of the tag as it was before a delete: its result is dropped,
    ** and so is its failure (TAG_NOT_FOUND once the old row was gone).
    ** Neither says anything of the tag as it is now: created again, it
    ** starts with no refusal and no backoff, and a refusal or a backoff
    ** recorded here would be the new tag's until its next load worked.
    ** A request made while it ran was passed over by the loaders (one
    ** load per tag at a time): queue it now. Calls waiting meanwhile
    ** look again, and ask for a load themselves. */
    atomic_fetch_add(rc == 0 ? &s->loads : &s->failures, 1);
    /* Of what it read, only that the row was at or past the bound is
    ** kept: the next load asks the store first (always safe). */
    if (read && past)
      atomic_store(&t->past, 1);
    if (t->want && !atomic_load(&t->nm->removed)) {
      pthread_mutex_lock(&s->mu);
      schedule(s, t, 0);
      pthread_mutex_unlock(&s->mu);
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (rc != 0)
      frond_log(FROND_LOG_DEBUG,
                "segment: tag \"%s\": a load begun before the tag was "
                "deleted failed, dropped: %s: %s",
                t->nm->name, frond_err_name(rc), e.message);
    return;
  }
  if (read) {
    atomic_store(&t->past, past);
    atomic_store(&t->bound, bound);
    atomic_store(&t->stride, k);
    atomic_store(&t->residue, k > 1 ? q.offset : 0);
    if (res_end > 0) /* an allocation: the row moved */
      atomic_store(&t->row_end, res_end);
    atomic_store(&t->bound_read, 1);
  }
  if (ordered) {
    atomic_store(&t->ordered, 1); /* before the install: off the inline path */
    frond__seg_ordered_taken(s, t, &c, rc);
  }
  was_failing = t->backoff_ms != 0;
  free(t->fail_why);
  t->fail_why = NULL;
  /* A refusal is told to the calls waiting; a store not answering now
  ** (frond://: STORE_TIMEOUT, a 503's code, another store) is retried
  ** while they wait. */
  t->fail_code = rc == 0 || frond__store_retryable(rc) ? 0 : rc;
  /* A range refused (larger than the store takes) is given up by the
  ** call that asked for it: later loads go back to the tag's step. */
  if (t->fail_code != 0 && range)
    t->range_need = 0;
  if (rc != 0) /* said by calls that give up (a refusal, or the last why) */
    t->fail_why = strdup(e.message);
  if (rc == 0) {
    atomic_fetch_add(&s->loads, 1);
    if (restrided) { /* none of the old tag's numbers after this load */
      frond__seg_drop(t);
      frond_log(FROND_LOG_WARN,
                "segment: tag \"%s\" was created again with increment "
                "%lld, offset %lld: the buffers of the old one are dropped",
                t->nm->name, (long long)k, (long long)(k > 1 ? q.offset : 0));
    }
    /* The row's range is this process's last allocation of the tag,
    ** whether installed or abandoned (both entries full): a give-back
    ** returns numbers of the buffers only when it is one of theirs. */
    t->last_start = start;
    t->last_end = res_end;
    if (frond__seg_install(s, t, first, count, k, used, start, res_end)) {
      if (!range) {
        t->step = used;
        t->last_load_ms = frond__seg_clock(s);
      }
      t->row_step = row_step;
      t->last_load_unix_ms = frond_clock_realtime(NULL);
      t->loads++;
    }
    t->want = 0;
    t->backoff_ms = 0;
    t->retry_at_ns = 0;
    pthread_cond_broadcast(&t->cv);
  } else if (rc == FROND_ETAG_OWNER) {
    /* Not a failure: the calls waiting give up with the owner's address,
    ** and later ones are told it without a load while its claim lasts
    ** (seg_ordered.c). No retry, no backoff. */
    t->failures++;
    t->want = 0;
    t->backoff_ms = 0;
    t->retry_at_ns = 0;
    pthread_cond_broadcast(&t->cv);
  } else {
    atomic_fetch_add(&s->failures, 1);
    t->failures++;
    t->backoff_ms = t->backoff_ms == 0 ? s->o.retry_min_ms : t->backoff_ms * 2;
    if (t->backoff_ms > s->o.retry_max_ms)
      t->backoff_ms = s->o.retry_max_ms;
    t->retry_at_ns = frond__mono_ns() + t->backoff_ms * 1000000;
    if (t->fail_code != 0) /* refused: waiting calls give up now */
      pthread_cond_broadcast(&t->cv);
    if (t->want) {
      pthread_mutex_lock(&s->mu);
      schedule(s, t, t->retry_at_ns);
      pthread_mutex_unlock(&s->mu);
    }
  }
  backoff_ms = t->backoff_ms;
  pthread_mutex_unlock(&t->mu);
  if (rc != 0 && rc != FROND_ETAG_OWNER)
    frond_log(FROND_LOG_WARN,
              "segment: tag \"%s\": loading a segment failed, retrying in "
              "%lld ms: %s: %s",
              t->nm->name, (long long)backoff_ms, frond_err_name(rc),
              e.message);
  else if (was_failing)
    frond_log(FROND_LOG_INFO, "segment: tag \"%s\": loading works again",
              t->nm->name);
}

/* A tag taken off the queue: load it unless that is no longer wanted or
** its retry time has not come. */
static void serve(frond_seg *s, frond_store **st, seg_tag *t) {
  int64_t step = 0, base;
  uint64_t gen;
  int go, range = 0;
  pthread_mutex_lock(&t->mu);
  go = t->want && !t->loading && !atomic_load(&t->nm->removed);
  if (go && t->retry_at_ns > frond__mono_ns()) {
    pthread_mutex_lock(&s->mu);
    schedule(s, t, t->retry_at_ns);
    pthread_mutex_unlock(&s->mu);
    go = 0;
  }
  gen = t->gen;
  if (go) {
    t->loading = 1;
    step = frond__seg_next_step(s, t);
    base = step > 0 ? step : t->row_step;
    /* A store of fixed segments (multi:) takes no other size: a range
    ** larger than one is refused before it waits (segment.c). */
    if (t->range_need > base && !frond__store_fixed_step(s->store)) {
      step = t->range_need;
      range = 1;
    }
    /* Never above what the store takes at once (frond://'s max_range);
    ** a range above it is refused before it asks (segment.c). */
    if (frond__store_max_step(s->store) > 0 &&
        step > frond__store_max_step(s->store)) {
      step = frond__store_max_step(s->store);
      if (range && t->range_need > step)
        t->range_need = 0;
      range = step > base;
    }
  }
  pthread_mutex_unlock(&t->mu);
  if (go)
    load(s, st, t, step, gen, range);
}

/* The refresh takes at most 1/REFRESH_SHARE of a core over time. */
#define REFRESH_SHARE 400

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Read the tag list again; back off while it fails. Called without
** s->mu. The next one comes after refresh_ms, or later when this one cost
** more than refresh_ms / REFRESH_SHARE of CPU: reading a million tags
** (about half a second) every minute would keep an idle server at 1 % of
** a core. */
static void refresh(frond_seg *s) {
  frond_error e = {0, ""};
  int64_t now = frond__mono_ns(), at, cpu = thread_cpu_ns(), paced;
  int rc = frond__seg_refresh(s, &e);
  paced = (thread_cpu_ns() - cpu) * REFRESH_SHARE;
  pthread_mutex_lock(&s->mu);
  if (rc == 0) {
    s->refresh_backoff_ms = 0;
    at = now + (paced > s->o.refresh_ms * 1000000 ? paced
                                                  : s->o.refresh_ms * 1000000);
  } else {
    s->refresh_backoff_ms = s->refresh_backoff_ms == 0
                                ? s->o.retry_min_ms
                                : s->refresh_backoff_ms * 2;
    if (s->refresh_backoff_ms > s->o.retry_max_ms)
      s->refresh_backoff_ms = s->o.retry_max_ms;
    at = now + s->refresh_backoff_ms * 1000000;
  }
  s->refresh_at_ns = at;
  s->refreshing = 0;
  pthread_mutex_unlock(&s->mu);
  if (rc != 0)
    frond_log(FROND_LOG_WARN,
              "segment: reading the tag list failed, retrying in %lld ms: %s",
              (long long)s->refresh_backoff_ms, e.message);
}

static void *loader_main(void *arg) {
  frond_seg *s = arg;
  frond_store *st = NULL;
  seg_tag *t;
  int64_t now, wake;
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    now = frond__mono_ns();
    while (s->nretry > 0 && s->retry[0].at_ns <= now)
      queue_push(s, heap_pop(s));
    if (!s->refreshing && now >= s->refresh_at_ns) {
      s->refreshing = 1;
      pthread_mutex_unlock(&s->mu);
      refresh(s);
      pthread_mutex_lock(&s->mu);
      continue;
    }
    if (!s->renewing && now >= s->renew_at_ns) {
      frond_error e = {0, ""};
      int64_t next = INT64_MAX;
      s->renewing = 1;
      s->renew_at_ns = INT64_MAX;
      pthread_mutex_unlock(&s->mu);
      if (connect_store(s, &st, &e) == 0)
        next = frond__seg_ordered_renew(s, st);
      else
        next = now + frond__seg_ordered_lease_ms(s) / 10 * 1000000;
      pthread_mutex_lock(&s->mu);
      s->renewing = 0;
      if (next < s->renew_at_ns)
        s->renew_at_ns = next;
      continue;
    }
    if ((t = queue_pop(s)) != NULL) {
      if (s->q_head != NULL)
        pthread_cond_signal(&s->cv); /* more for another loader */
      pthread_mutex_unlock(&s->mu);
      serve(s, &st, t);
      pthread_mutex_lock(&s->mu);
      continue;
    }
    wake = s->refreshing ? INT64_MAX : s->refresh_at_ns;
    if (!s->renewing && s->renew_at_ns < wake)
      wake = s->renew_at_ns;
    if (s->nretry > 0 && s->retry[0].at_ns < wake)
      wake = s->retry[0].at_ns;
    if (wake == INT64_MAX)
      pthread_cond_wait(&s->cv, &s->mu);
    else
      frond__cond_wait_until(&s->cv, &s->mu, wake);
  }
  pthread_mutex_unlock(&s->mu);
  frond__store_close(st);
  return NULL;
}

int frond__seg_loaders_start(frond_seg *s, frond_error *err) {
  unsigned i;
  s->refresh_at_ns = frond__mono_ns() + s->o.refresh_ms * 1000000;
  if ((s->loaders = calloc(s->o.loaders, sizeof(*s->loaders))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  for (i = 0; i < s->o.loaders; i++) {
    if (pthread_create(&s->loaders[i], NULL, loader_main, s) != 0) {
      frond__seg_loaders_stop(s);
      return frond__fail(err, FROND_ENOMEM, "cannot start loader thread %u",
                         i + 1);
    }
    s->nloaders++;
  }
  return 0;
}

void frond__seg_loaders_stop(frond_seg *s) {
  unsigned i;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  for (i = 0; i < s->nloaders; i++)
    pthread_join(s->loaders[i], NULL);
  s->nloaders = 0;
  free(s->loaders);
  s->loaders = NULL;
  free(s->retry);
  s->retry = NULL;
  s->nretry = s->retry_cap = 0;
}

/* ---- what the loads and the store say (frond.h) ---- */

void frond_seg_stats_get(frond_seg *s, frond_seg_stats *out) {
  memset(out, 0, sizeof(*out));
  if (frond__seg_forked(s, NULL) != 0)
    return; /* a child's copy: nothing of it is the child's */
  out->loads = atomic_load_explicit(&s->loads, memory_order_relaxed);
  out->load_failures = atomic_load_explicit(&s->failures, memory_order_relaxed);
  out->unavailable =
      atomic_load_explicit(&s->unavailable, memory_order_relaxed);
  out->store_ok = atomic_load_explicit(&s->store_ok, memory_order_relaxed);
  pthread_mutex_lock(&s->table_mu);
  out->tags = s->nlive;
  pthread_mutex_unlock(&s->table_mu);
  out->tags_in_use = atomic_load(&s->nhot);
  out->loaders = s->o.loaders;
  out->loaders_busy_max = atomic_load(&s->max_busy);
  out->rollbacks = frond__store_rollbacks(s->store);
  out->store_members =
      (unsigned)frond__store_members(s->store, &out->store_members_up);
}

/* What the store declares; a question of its backend, no I/O. */
int frond_seg_order(frond_seg *s) {
  /* Without an allocator, the least any store keeps. */
  return s == NULL ? FROND_SEG_ORDER_SEGMENT : frond__store_order(s->store);
}
