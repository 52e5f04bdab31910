/*
** segment.c -- the segment allocator: per-tag double buffers served from
** memory, filled by one background loader thread.
**
** A tag holds two segment entries and one 64-bit word, gen << 32 | off.
** Generation g is served from entry g & 1; handing out an ID is one
** atomic fetch-add on the word: the caller owns offset `off` of
** generation g, and the ID is start + off when entry g & 1 still holds
** generation g (read under a seqlock) and off < size. The word changes
** only by fetch-add, by a switch to (g + 1) << 32, and by clamping an
** offset already >= size back to size (under the mutex, once no offset
** of g is usable), so no two calls own the same usable (g, off); and
** generation g + 1 is always a later segment: IDs are unique and increase
** per thread. Anything else (segment used up, next
** one not there, entry rewritten under a slow reader) takes the slow path
** under the tag's mutex; an offset owned but not used is skipped, never
** handed out.
**
** Once preload_pct of the current segment is handed out, the call that
** crosses that point asks the loader for the next segment. The loader runs
** the store transaction with no tag lock held and installs the result under
** the tag's mutex, so a reader only ever waits for memory work, except
** when both buffers are empty.
**
** Locks, in the only order in which they nest:
**   s->table_mu  writers of the tag table (readers look up without a lock)
**   t->mu        one tag's buffers and state; held for memory work only
**   s->mu        the loader's wake-up flag and the miss rate limit
** s->store_mu serializes use of the store connection; it is held during
** I/O and never while another of these locks is held.
**
** Tags are never freed before close: a tag deleted from the store is
** marked removed (its buffers dropped) and revived if it comes back, so a
** reader holding a tag pointer without a lock is always safe.
**
** The state, the tag and the segment entries are in segment.h; the tag
** table, its growth and its refresh from the store in segment_table.c.
*/
#include "core/segment.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void frond_seg_options_init(frond_seg_options *o) {
  memset(o, 0, sizeof(*o));
  o->preload_pct = 10;
  o->max_step = 1000000;
  o->wait_ms = 50;
  o->refresh_ms = 60000;
  o->retry_min_ms = 100;
  o->retry_max_ms = 5000;
  o->clock = frond_clock_realtime;
  o->first_wait_ms = 5000;
  o->miss_checks = 50;
}

/* ---- loading ---- */

/* Ask the loader for a segment. Expects t->mu held. */
static void request_load(frond_seg *s, seg_tag *t) {
  if (t->want)
    return;
  t->want = 1;
  pthread_mutex_lock(&s->mu);
  s->pending = 1;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* The step of the next load, as Leaf: the row's step first; then double
** while segments last under 15 min (capped at max_step, where Leaf keeps
** the step instead), keep up to 30 min, halve from 30 min on (never below
** the row's step). 0 means "the row's step". The time is since the last
** load, which is about how long the previous segment lasted.
** Expects t->mu held. */
static int64_t next_step(frond_seg *s, seg_tag *t) {
  int64_t dur, step, cap = t->max_step > 0 ? t->max_step : s->o.max_step;
  if (s->store->fixed_step)
    return 0; /* the row's step is the store's unit (multi:) */
  if (t->last_load_ms == 0 || t->step == 0)
    return 0;
  dur = now_ms(s) - t->last_load_ms;
  if (dur < 15 * MIN_MS)
    step = t->step * 2 <= cap ? t->step * 2 : t->step < cap ? cap : t->step;
  else if (dur < 30 * MIN_MS)
    step = t->step;
  else
    step = t->step / 2;
  return step < t->row_step ? t->row_step : step;
}

/* Put [start, end) into the next generation's entry, and serve it at
** once when the current one is used up. Expects t->mu held. Returns 0
** when both are full (the segment is then abandoned, never reused). */
static int install(frond_seg *s, seg_tag *t, int64_t start, int64_t end,
                   int64_t step) {
  uint64_t w = atomic_load(&t->word), g = w >> GEN_SHIFT;
  uint64_t next = (g + 1) & GEN_MASK;
  seg_entry *cur = entry_of(t, g);
  int used_up =
      cur == NULL || (w & OFF_MASK) >= (uint64_t)atomic_load(&cur->size);
  if (used_up && entry_of(t, next) != NULL) { /* switch first */
    switch_gen(t, w);
    w = atomic_load(&t->word);
    g = next;
    next = (g + 1) & GEN_MASK;
    used_up = 0;
  }
  if (!used_up && entry_of(t, next) != NULL)
    return 0;
  /* The next segment never overlaps the one being served. It starts past
  ** its end with one database (the store's guard hands out ranges above
  ** every earlier one of the tag); a multi: store's members interleave
  ** blocks, so there a lagging member's block may lie below it. */
  assert(start >= 0 && end > start);
  assert(entry_of(t, g) == NULL ||
         start >= atomic_load(&entry_of(t, g)->start) +
                      atomic_load(&entry_of(t, g)->size) ||
         end <= atomic_load(&entry_of(t, g)->start));
  entry_write(&t->e[next & 1], next, start, end - start, step,
              s->o.preload_pct);
  if (used_up)
    switch_gen(t, w);
  return 1;
}

static void load(frond_seg *s, seg_tag *t, int64_t step, uint64_t gen) {
  frond_error e = {0, ""};
  int64_t max_id = 0, row_step = 0, used, start;
  int rc, was_failing;
  pthread_mutex_lock(&s->store_mu);
  rc = frond__store_alloc(s->store, t->name, step, &max_id, &row_step, &e);
  pthread_mutex_unlock(&s->store_mu);
  used = step > 0 ? step : row_step;
  start = max_id - used;
  if (rc == 0 && (used < 1 || used > INT32_MAX || start < 0))
    rc = frond__fail(&e, FROND_ESTORE,
                     "row gives an invalid range (max_id %lld, step %lld)",
                     (long long)max_id, (long long)used);
  atomic_store(&s->store_ok, rc == 0 || rc == FROND_ETAG_NOT_FOUND);
  pthread_mutex_lock(&t->mu);
  t->loading = 0;
  was_failing = t->backoff_ms != 0;
  if (rc == 0) {
    atomic_fetch_add(&s->loads, 1);
    if (gen == t->gen && !atomic_load(&t->removed)) {
      if (install(s, t, start, max_id, used)) {
        t->step = used;
        t->row_step = row_step;
        t->last_load_ms = now_ms(s);
        t->last_load_unix_ms = frond_clock_realtime(NULL);
        t->loads++;
      }
      t->want = 0;
      t->backoff_ms = 0;
      t->retry_at_ns = 0;
      pthread_cond_broadcast(&t->cv);
    }
  } else {
    atomic_fetch_add(&s->failures, 1);
    t->failures++;
    t->backoff_ms = t->backoff_ms == 0 ? s->o.retry_min_ms : t->backoff_ms * 2;
    if (t->backoff_ms > s->o.retry_max_ms)
      t->backoff_ms = s->o.retry_max_ms;
    t->retry_at_ns = frond__mono_ns() + t->backoff_ms * 1000000;
  }
  pthread_mutex_unlock(&t->mu);
  if (rc != 0)
    frond_log(FROND_LOG_WARN,
              "segment: tag \"%s\": loading a segment failed, retrying in "
              "%lld ms: %s",
              t->name, (long long)t->backoff_ms, e.message);
  else if (was_failing)
    frond_log(FROND_LOG_INFO, "segment: tag \"%s\": loading works again",
              t->name);
}

static void *loader_main(void *arg) {
  frond_seg *s = arg;
  int64_t now, wake, refresh_at, refresh_backoff = 0, step;
  frond_error e;
  seg_table *tb;
  seg_tag *t;
  size_t i;
  uint64_t gen;
  int go;
  refresh_at = frond__mono_ns() + s->o.refresh_ms * 1000000;
  for (;;) {
    now = frond__mono_ns();
    if (now >= refresh_at) {
      if (frond_seg_refresh(s, &e) == 0) {
        refresh_backoff = 0;
        refresh_at = now + s->o.refresh_ms * 1000000;
      } else {
        refresh_backoff =
            refresh_backoff == 0 ? s->o.retry_min_ms : refresh_backoff * 2;
        if (refresh_backoff > s->o.retry_max_ms)
          refresh_backoff = s->o.retry_max_ms;
        refresh_at = now + refresh_backoff * 1000000;
        frond_log(FROND_LOG_WARN,
                  "segment: reading the tag list failed, retrying in %lld "
                  "ms: %s",
                  (long long)refresh_backoff, e.message);
      }
    }
    wake = refresh_at;
    tb = atomic_load_explicit(&s->table, memory_order_acquire);
    for (i = 0; i < tb->cap; i++) {
      if ((t = atomic_load_explicit(&tb->slot[i], memory_order_acquire)) ==
          NULL)
        continue;
      pthread_mutex_lock(&t->mu);
      go = t->want && !t->loading && !atomic_load(&t->removed);
      if (go && t->retry_at_ns > frond__mono_ns()) {
        go = 0;
        if (t->retry_at_ns < wake)
          wake = t->retry_at_ns;
      }
      step = 0;
      gen = t->gen;
      if (go) {
        t->loading = 1;
        step = next_step(s, t);
      }
      pthread_mutex_unlock(&t->mu);
      if (go) {
        load(s, t, step, gen);
        wake = 0; /* look again: the tag may need a retry */
      }
    }
    pthread_mutex_lock(&s->mu);
    while (!s->stop && !s->pending && frond__mono_ns() < wake)
      frond__cond_wait_until(&s->cv, &s->mu, wake);
    s->pending = 0;
    if (s->stop) {
      pthread_mutex_unlock(&s->mu);
      return NULL;
    }
    pthread_mutex_unlock(&s->mu);
  }
}

/* ---- serving ---- */

/* A tag not in the table (or removed): ask the store once, so that a tag
** created since the last refresh works at once. Rate-limited. */
static int miss(frond_seg *s, const char *name, size_t len, seg_tag **out,
                frond_error *err) {
  char z[FROND_TAG_MAX + 1];
  frond_tag_row row;
  int64_t sec = frond__mono_ns() / 1000000000;
  int rc, allowed;
  if ((rc = frond_tag_validate(name, len, err)) != 0)
    return rc;
  memcpy(z, name, len);
  z[len] = '\0';
  pthread_mutex_lock(&s->mu);
  if (s->miss_second != sec) {
    s->miss_second = sec;
    s->miss_used = 0;
  }
  allowed = s->miss_used < s->o.miss_checks;
  s->miss_used += allowed;
  pthread_mutex_unlock(&s->mu);
  if (!allowed)
    return frond__fail(err, FROND_ETAG_NOT_FOUND,
                       "tag \"%s\" not found (as of the last refresh)", z);
  pthread_mutex_lock(&s->store_mu);
  rc = frond__store_tag_get(s->store, z, &row, err);
  pthread_mutex_unlock(&s->store_mu);
  if (rc == FROND_ETAG_NOT_FOUND)
    return frond__fail(err, rc, "tag \"%s\" not found", z);
  if (rc != 0) {
    char why[sizeof(err->message)];
    snprintf(why, sizeof(why), "%s", err != NULL ? err->message : "");
    return frond__fail(err, FROND_ETAG_NOT_FOUND,
                       "tag \"%s\" not found as of the last refresh (the "
                       "store could not be asked: %s)",
                       z, why);
  }
  pthread_mutex_lock(&s->table_mu);
  rc = frond__seg_tag_add(s, z, row.step, out);
  pthread_mutex_unlock(&s->table_mu);
  return rc == 0 ? 0 : frond__fail(err, rc, NULL);
}

/* Ask for the next segment unless it is there or coming. */
static void preload(frond_seg *s, seg_tag *t) {
  uint64_t g;
  pthread_mutex_lock(&t->mu);
  g = atomic_load(&t->word) >> GEN_SHIFT;
  if (entry_of(t, (g + 1) & GEN_MASK) == NULL && !t->loading)
    request_load(s, t);
  pthread_mutex_unlock(&t->mu);
}

/* The hot path: one fetch-add and a seqlock read; no lock. Returns 0 when
** the slow path must decide. */
static int fast_take(frond_seg *s, seg_tag *t, int64_t *id) {
  uint64_t w = atomic_fetch_add_explicit(&t->word, 1, memory_order_acquire);
  uint64_t g = w >> GEN_SHIFT, off = w & OFF_MASK, seq;
  seg_entry *e = &t->e[g & 1];
  int64_t start, size, preload_at;
  /* Seqlock read; acquire loads keep the second read of seq after them. */
  seq = atomic_load_explicit(&e->seq, memory_order_acquire);
  if (FROND__UNLIKELY(atomic_load_explicit(&e->gen, memory_order_acquire) != g))
    return 0;
  start = atomic_load_explicit(&e->start, memory_order_acquire);
  size = atomic_load_explicit(&e->size, memory_order_acquire);
  preload_at = atomic_load_explicit(&e->preload_at, memory_order_acquire);
  if (FROND__UNLIKELY((seq & 1) != 0 ||
                      atomic_load_explicit(&e->seq, memory_order_relaxed) !=
                          seq ||
                      off >= (uint64_t)size))
    return 0;
  *id = start + (int64_t)off;
  if (FROND__UNLIKELY(off == (uint64_t)preload_at))
    preload(s, t);
  return 1;
}

/* Hand out n IDs of t into out: from the current segment, switching to
** the next when it is used up, and waiting (up to wait_ms each time) for
** the loader when a batch needs more segments than are buffered. A batch
** waits for the next segment before it starts taking IDs that would not
** be enough alone. Expects t->mu held, so no generation switch or entry
** write runs concurrently; fast-path callers still take offsets. When a
** batch fails halfway, the IDs it took are skipped, never handed out. */
static int take(frond_seg *s, seg_tag *t, size_t n, int64_t *out,
                frond_error *err) {
  int64_t deadline = 0, size = 0, start = 0, left;
  uint64_t w, g, off, k = 0, got;
  seg_entry *e, *nx;
  for (;;) {
    if (atomic_load(&t->removed))
      return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" was deleted",
                         t->name);
    w = atomic_load(&t->word);
    g = w >> GEN_SHIFT;
    off = w & OFF_MASK;
    e = entry_of(t, g);
    nx = entry_of(t, (g + 1) & GEN_MASK);
    left = 0;
    if (e != NULL) {
      size = atomic_load(&e->size);
      start = atomic_load(&e->start);
      left = off < (uint64_t)size ? size - (int64_t)off : 0;
    }
    if (left == 0 && nx != NULL) {
      switch_gen(t, w);
      deadline = 0;
      continue;
    }
    if (left > 0 && (k > 0 || nx != NULL || (uint64_t)left >= n)) {
      /* Never add more than the segment holds: the offset stays far
      ** from the generation bits. */
      got = n - k < (uint64_t)left ? n - k : (uint64_t)left;
      w = atomic_fetch_add(&t->word, got);
      off = w & OFF_MASK;
      if (off >= (uint64_t)size)
        got = 0;
      else if (got > (uint64_t)size - off)
        got = (uint64_t)size - off;
      for (; got > 0; got--)
        out[k++] = start + (int64_t)off++;
      assert(off <= (uint64_t)size); /* the cursor never passes the end */
      if (off > (uint64_t)atomic_load(&e->preload_at) && nx == NULL &&
          !t->loading)
        request_load(s, t);
      if (k == n)
        return 0;
      deadline = 0;
      continue;
    }
    if (left == 0)
      /* Nothing to serve: bring the offset back to the end of the segment
      ** (or to 0 when generation g has none; it never will), so that
      ** calls failing on the fast path cannot creep into the generation
      ** bits. No offset of g is usable before or after this store. */
      atomic_store(&t->word, g << GEN_SHIFT | (e != NULL ? (uint64_t)size : 0));
    if (!t->loading)
      request_load(s, t);
    if (deadline == 0)
      deadline = frond__mono_ns() +
                 (t->loads == 0 ? s->o.first_wait_ms : s->o.wait_ms) * 1000000;
    else if (frond__mono_ns() >= deadline) {
      atomic_fetch_add(&s->unavailable, 1);
      if (k > 0) /* all or nothing: the IDs taken so far are skipped */
        return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE,
                           "tag \"%s\": %zu IDs asked, the store has not "
                           "delivered a segment after %llu",
                           t->name, n, (unsigned long long)k);
      return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE,
                         "tag \"%s\": both segments are used up and the "
                         "store has not delivered the next one",
                         t->name);
    }
    frond__cond_wait_until(&t->cv, &t->mu, deadline);
  }
}

static seg_tag *find(frond_seg *s, const char *tag, size_t len) {
  seg_tag *t = seg_lookup(s, tag, len, hash_name(tag, len));
  if (FROND__UNLIKELY(t == NULL ||
                      atomic_load_explicit(&t->removed, memory_order_relaxed)))
    return NULL;
  return t;
}

int frond_seg_next_n(frond_seg *s, const char *tag, size_t len, size_t n,
                     int64_t *out, frond_error *err) {
  seg_tag *t;
  int rc;
  if (s == NULL || out == NULL || (tag == NULL && len > 0))
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if (n == 0)
    return frond__fail(err, FROND_ECOUNT_INVALID, "count must be at least 1");
  if (len > FROND_TAG_MAX)
    return frond_tag_validate(tag, len, err);
  if ((t = find(s, tag, len)) == NULL && (rc = miss(s, tag, len, &t, err)) != 0)
    return rc;
  pthread_mutex_lock(&t->mu);
  rc = take(s, t, n, out, err);
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int frond_seg_next(frond_seg *s, const char *tag, size_t len, int64_t *id,
                   frond_error *err) {
  seg_tag *t;
  if (FROND__LIKELY(s != NULL && id != NULL && len <= FROND_TAG_MAX &&
                    (t = find(s, tag, len)) != NULL && fast_take(s, t, id)))
    return 0;
  return frond_seg_next_n(s, tag, len, 1, id, err);
}

/* ---- periods of seq formats ---- */

int64_t frond__seg_now_ms(frond_seg *s) {
  return now_ms(s);
}

int frond__seg_period_ready(frond_seg *s, const char *tag, size_t len) {
  seg_tag *t = find(s, tag, len);
  return t != NULL && atomic_load_explicit(&t->capped, memory_order_acquire);
}

int frond__seg_period_tag(frond_seg *s, const char *base, const char *tag,
                          int64_t cap, frond_error *err) {
  size_t blen = strlen(base), len = strlen(tag);
  seg_tag *t = seg_lookup(s, tag, len, hash_name(tag, len)), *b;
  frond_tag_row row;
  int64_t step, deadline;
  int rc, loaded;
  /* A period row that this process used and that has since left the store
  ** was deleted by hand: making it again would start the period's numbers
  ** over, so refuse. */
  if (t != NULL && atomic_load(&t->removed))
    return frond__fail(err, FROND_ETAG_NOT_FOUND,
                       "tag \"%s\" was deleted while in use; it is not made "
                       "again, since its numbers would repeat",
                       tag);
  if (t == NULL) {
    /* The base row gives the step; it must exist, as for any tag. */
    if ((b = find(s, base, blen)) == NULL &&
        (rc = miss(s, base, blen, &b, err)) != 0) {
      if (rc == FROND_ETAG_NOT_FOUND)
        return frond__fail(err, rc,
                           "tag \"%s\" not found: a seq format makes its "
                           "periods' rows from it (frond tag create %s "
                           "--step N)",
                           base, base);
      return rc;
    }
    pthread_mutex_lock(&b->mu);
    step = b->row_step < cap ? b->row_step : cap;
    pthread_mutex_unlock(&b->mu);
    if (step < 1)
      step = 1;
    /* Another node may create the row at the same moment: its INSERT or
    ** ours wins, the other gets TAG_EXISTS, and both use the one row. */
    pthread_mutex_lock(&s->store_mu);
    rc =
        frond_store_tag_create(s->store, tag, step, 1, "frond seq period", err);
    if (rc == FROND_ETAG_EXISTS)
      rc = frond__store_tag_get(s->store, tag, &row, err);
    else
      row.step = step;
    pthread_mutex_unlock(&s->store_mu);
    atomic_store(&s->store_ok, rc == 0);
    if (rc != 0)
      return rc;
    pthread_mutex_lock(&s->table_mu);
    rc = frond__seg_tag_add(s, tag, row.step, &t);
    pthread_mutex_unlock(&s->table_mu);
    if (rc != 0)
      return frond__fail(err, rc, NULL);
  }
  if (cap > s->o.max_step)
    cap = s->o.max_step;
  pthread_mutex_lock(&t->mu);
  t->max_step = cap;
  /* Ready means served from memory, as any tag in use: the first segment
  ** is waited for here, where the caller expects to block, and not by the
  ** first call that frond__seg_period_ready lets through. */
  deadline = frond__mono_ns() + s->o.first_wait_ms * 1000000;
  while (t->loads == 0 && !atomic_load(&t->removed) &&
         frond__mono_ns() < deadline) {
    if (!t->loading)
      request_load(s, t);
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

/* ---- life cycle and introspection ---- */

static int check_options(const frond_seg_options *o, frond_error *err) {
  if (o->preload_pct > 100)
    return frond__fail(err, FROND_EINVAL, "preload_pct %u is above 100",
                       o->preload_pct);
  if (o->max_step < 1 || o->max_step > INT32_MAX)
    return frond__fail(err, FROND_EINVAL, "max_step %lld is out of 1..%d",
                       (long long)o->max_step, INT32_MAX);
  if (o->wait_ms < 0 || o->first_wait_ms < 0 || o->refresh_ms < 1 ||
      o->retry_min_ms < 1 || o->retry_max_ms < o->retry_min_ms)
    return frond__fail(err, FROND_EINVAL,
                       "bad timing options: wait_ms, first_wait_ms >= 0, "
                       "refresh_ms >= 1, 1 <= retry_min_ms <= retry_max_ms");
  return 0;
}

static void seg_free(frond_seg *s) {
  frond__seg_table_free(s);
  frond__store_close(s->store);
  pthread_mutex_destroy(&s->table_mu);
  pthread_mutex_destroy(&s->store_mu);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

int frond_seg_open(frond_seg **out, const char *store_uri,
                   const frond_seg_options *opts, frond_error *err) {
  frond_seg *s;
  int rc;
  if (out == NULL)
    return frond__fail(err, FROND_EINVAL, "out is NULL");
  *out = NULL;
  if ((s = calloc(1, sizeof(*s))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  if (opts != NULL)
    s->o = *opts;
  else
    frond_seg_options_init(&s->o);
  if (s->o.clock == NULL)
    s->o.clock = frond_clock_realtime;
  pthread_mutex_init(&s->table_mu, NULL);
  pthread_mutex_init(&s->store_mu, NULL);
  pthread_mutex_init(&s->mu, NULL);
  frond__cond_init(&s->cv);
  atomic_init(&s->table, frond__seg_table_new(16));
  if (atomic_load(&s->table) == NULL) {
    rc = frond__fail(err, FROND_ENOMEM, NULL);
    goto fail;
  }
  if ((rc = check_options(&s->o, err)) != 0 ||
      (rc = frond__store_open(store_uri, &s->store, err)) != 0 ||
      (rc = frond__store_ensure_schema(s->store, err)) != 0 ||
      (rc = frond_seg_refresh(s, err)) != 0)
    goto fail;
  if (pthread_create(&s->loader, NULL, loader_main, s) != 0) {
    rc = frond__fail(err, FROND_ENOMEM, "cannot start the loader thread");
    goto fail;
  }
  *out = s;
  return 0;
fail:
  seg_free(s);
  return rc;
}

void frond_seg_close(frond_seg *s) {
  if (s == NULL)
    return;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->loader, NULL);
  seg_free(s);
}

/* Describe generation g's entry; off is its taken offset. Under mu. */
static void describe(seg_tag *t, uint64_t g, uint64_t off,
                     frond_seg_buffer *d) {
  seg_entry *e = entry_of(t, g);
  int64_t size;
  if (e == NULL)
    return;
  size = atomic_load(&e->size);
  if (off > (uint64_t)size)
    off = (uint64_t)size;
  d->start = atomic_load(&e->start);
  d->end = d->start + size;
  d->pos = d->start + (int64_t)off;
  d->step = e->step;
  d->ready = 1;
}

static int info_cmp(const void *a, const void *b) {
  return strcmp(((const frond_tag_info *)a)->tag,
                ((const frond_tag_info *)b)->tag);
}

int frond_seg_tags(frond_seg *s, frond_tag_info **out, size_t *n,
                   frond_error *err) {
  seg_table *tb;
  frond_tag_info *v;
  seg_tag *t;
  size_t i, k = 0;
  uint64_t w;
  pthread_mutex_lock(&s->table_mu);
  tb = atomic_load(&s->table);
  if ((v = calloc(tb->count + 1, sizeof(*v))) == NULL) {
    pthread_mutex_unlock(&s->table_mu);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (i = 0; i < tb->cap; i++) {
    if ((t = atomic_load(&tb->slot[i])) == NULL || atomic_load(&t->removed))
      continue;
    pthread_mutex_lock(&t->mu);
    memcpy(v[k].tag, t->name, t->len + 1);
    w = atomic_load(&t->word);
    describe(t, w >> GEN_SHIFT, w & OFF_MASK, &v[k].current);
    describe(t, ((w >> GEN_SHIFT) + 1) & GEN_MASK, 0, &v[k].next);
    v[k].issued = t->done + (uint64_t)(v[k].current.pos - v[k].current.start);
    v[k].step = next_step(s, t);
    if (v[k].step == 0)
      v[k].step = t->row_step;
    v[k].row_step = t->row_step;
    v[k].last_load_ms = t->last_load_unix_ms;
    v[k].loads = t->loads;
    v[k].load_failures = t->failures;
    v[k].loading = t->want;
    pthread_mutex_unlock(&t->mu);
    k++;
  }
  pthread_mutex_unlock(&s->table_mu);
  qsort(v, k, sizeof(*v), info_cmp);
  *out = v;
  *n = k;
  return 0;
}

void frond_seg_stats_get(frond_seg *s, frond_seg_stats *out) {
  out->loads = atomic_load_explicit(&s->loads, memory_order_relaxed);
  out->load_failures = atomic_load_explicit(&s->failures, memory_order_relaxed);
  out->unavailable =
      atomic_load_explicit(&s->unavailable, memory_order_relaxed);
  out->store_ok = atomic_load_explicit(&s->store_ok, memory_order_relaxed);
  out->rollbacks = frond__store_rollbacks(s->store);
  out->store_members =
      (unsigned)frond__store_members(s->store, &out->store_members_up);
}
