/* SPDX-License-Identifier: Apache-2.0 */
/*
** segment.c -- the segment allocator: per-tag double buffers served from
** memory; batches and range leases; the public calls, open and close.
** The tag table is in seg_tags.c, the loaders in seg_load.c (seg.h maps
** them).
**
** A tag in use holds two segment entries and one 64-bit word, gen << 32 |
** off. Generation g is served from entry g & 1; handing out an ID is one
** atomic fetch-add on the word: the caller owns offset `off` of
** generation g, and the ID is start + off when entry g & 1 still holds
** generation g (read under a seqlock) and off < size. The word changes
** only by fetch-add, by a switch to (g + 1) << 32, and by clamping an
** offset already >= size back to size (under the mutex, once no offset
** of g is usable), so no two calls own the same usable (g, off), and a
** segment is never served twice: IDs are unique. Generation g + 1 is the
** segment loaded after g's. Whether it lies above g's is what the store
** declares (frond_seg_order, store.h's FROND__STORE_ORDER): with one
** database it does (the store's rollback guard hands out every range
** above the ones before), so IDs increase per thread; a multi: store's
** next block may lie below (a member whose row lags, store_multi.c), so
** there IDs increase within a segment only. Nothing here relies on more
** than within-segment order. Anything else (segment used up, next one not there, entry
** rewritten under a slow reader) takes the slow path under the tag's
** mutex; an offset owned but not used is skipped, never handed out.
**
** Once preload_pct of the current segment is handed out, the call that
** crosses that point asks the loaders for the next segment. A loader runs
** the store transaction with no tag lock held and installs the result
** under the tag's mutex, so a reader only ever waits for memory work,
** except when both buffers are empty.
**
** A handle (frond_seg_tag) is the tag in use itself: calls on it skip the
** look-up by name and go straight to the fetch-add.
**
** fork(): a child process gets a copy of every buffer and none of the
** loader threads; IDs it took from the copies would be the parent's.
** seg_fork.c marks every open allocator forked in the child and sends the
** inline fast path to the slow path, which refuses with FORKED before it
** takes any lock; so does every other call.
*/
#include "core/formats.h"
#include "core/seg.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  o->loaders = 4;
  o->give_back = 1;
  o->ordered_lease_ms = 3000;
}

/* ---- finding a tag ---- */

/* A tag not in the table (or removed): ask the store once, so that a tag
** created since the last refresh works at once. Rate-limited. */
int frond__seg_miss(frond_seg *s, const char *name, size_t len, seg_name **out,
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
  rc = frond__seg_name_add(s, z, len, row.step, out);
  pthread_mutex_unlock(&s->table_mu);
  return rc == 0 ? 0 : frond__fail(err, rc, NULL);
}

/* The tag in use for name: from memory, else (ask) from the store. */
static int resolve(frond_seg *s, const char *tag, size_t len, int ask,
                   seg_tag **out, frond_error *err) {
  seg_name *nm;
  int rc;
  if (s == NULL || out == NULL || (tag == NULL && len > 0))
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if ((rc = frond__seg_forked(s, err)) != 0)
    return rc;
  if (len > FROND_TAG_MAX)
    return frond_tag_validate(tag, len, err);
  if ((nm = frond__seg_find(s, tag, len)) == NULL) {
    if (ask)
      rc = frond__seg_miss(s, tag, len, &nm, err);
    else if ((rc = frond_tag_validate(tag, len, err)) == 0)
      rc = frond__fail(err, FROND_ETAG_NOT_FOUND,
                       "tag \"%.*s\" not found (as of the last refresh)",
                       (int)len, tag);
    if (rc != 0)
      return rc;
  }
  if ((*out = frond__seg_hot(s, nm)) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  return 0;
}

/* ---- serving ---- */

/* Nothing to serve from generation g: bring the offset back to the end of
** its segment (or to 0 when g has none; it never will), so that calls
** failing on the fast path cannot creep into the generation bits. No
** offset of g is usable before or after this store. Under mu. */
static void clamp(seg_tag *t, uint64_t g, seg_entry *e, int64_t size) {
  atomic_store(&t->word, g << SEG_GEN_SHIFT | (e != NULL ? (uint64_t)size : 0));
}

/* A call gives up: the store's refusal when the last load was refused
** (the store said why, naming the tag unless its words do already), else SEGMENT_UNAVAILABLE with msg, and why the
** last load failed when it did. Under mu. */
static int give_up(frond_seg *s, seg_tag *t, frond_error *err,
                   const char *msg) {
  const char *why = t->fail_why;
  size_t len = t->nm->len;
  atomic_fetch_add(&s->unavailable, 1);
  if (t->fail_code != 0 && why != NULL && strncmp(why, "tag \"", 5) == 0 &&
      strncmp(why + 5, t->nm->name, len) == 0 && why[5 + len] == '"')
    return frond__fail(err, t->fail_code, "%s", why); /* names the tag */
  if (t->fail_code != 0)
    return frond__fail(err, t->fail_code, "tag \"%s\": %s", t->nm->name,
                       why != NULL ? why : frond_strerror(t->fail_code));
  return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE, "tag \"%s\": %s%s%s",
                     t->nm->name, msg,
                     t->fail_why != NULL ? "; the last load failed: " : "",
                     t->fail_why != NULL ? t->fail_why : "");
}

/* Whether a load that failed while this call waited was refused by the
** store (a code other than STORE): then waiting longer is no use, the
** call gives up at once. A refusal from before the call (a transient one,
** while a tag was deleted and created again) is waited out, as the next
** attempt may work. *seen: the failures counted when the call first
** waited, UINT64_MAX before; a tag created again counts from 0. Under
** mu. */
static int refused(seg_tag *t, uint64_t *seen) {
  if (*seen == UINT64_MAX) {
    *seen = t->failures;
    return 0;
  }
  return t->fail_code != 0 && !t->loading && t->failures != *seen;
}

/* How long a call waits for the loaders this time; 0 when it gives up.
** A tag's first segment, and a segment that a range needs for itself
** (store: 1), are a store transaction by design, not a sign of a slow
** store: they wait up to first_wait_ms, the rest up to wait_ms. Under mu. */
static int wait_turn(frond_seg *s, seg_tag *t, int64_t *deadline, int store) {
  if (*deadline == 0)
    *deadline =
        frond__mono_ns() +
        (t->loads == 0 || store ? s->o.first_wait_ms : s->o.wait_ms) * 1000000;
  else if (frond__mono_ns() >= *deadline)
    return 0;
  frond__cond_wait_until(&t->cv, &t->mu, *deadline);
  return 1;
}

/* Where t stands: the word, the entries of its generation and of the
** next one, and the current segment's bounds (0 without an entry). Under
** mu; TAG_NOT_FOUND once the tag was deleted. */
typedef struct seg_pos {
  uint64_t w, g, off;
  seg_entry *e, *nx;
  int64_t start, size, left, stride;
} seg_pos;

static int position(seg_tag *t, seg_pos *p, frond_error *err) {
  if (atomic_load(&t->s->closed))
    return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE,
                       "tag \"%s\": the segment allocator is closing",
                       t->nm->name);
  if (atomic_load(&t->nm->removed))
    return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" was deleted",
                       t->nm->name);
  p->w = atomic_load(&t->word);
  p->g = p->w >> SEG_GEN_SHIFT;
  p->off = p->w & SEG_OFF_MASK;
  p->e = entry_of(t, p->g);
  p->nx = entry_of(t, (p->g + 1) & SEG_GEN_MASK);
  p->start = p->size = p->left = 0;
  p->stride = 1;
  if (p->e != NULL) {
    p->size = atomic_load(&p->e->size);
    p->start = atomic_load(&p->e->start);
    p->stride = p->e->stride;
    p->left = p->off < (uint64_t)p->size ? p->size - (int64_t)p->off : 0;
  }
  return 0;
}

/* A call that took e's offsets up to end (exclusive) asks for the next
** segment once it took the preload offset, unless the next is there or
** coming. Under mu. */
static void preload_past(frond_seg *s, seg_tag *t, const seg_entry *e,
                         const seg_entry *nx, uint64_t end) {
  if (end > (uint64_t)atomic_load(&e->preload_at) && nx == NULL && !t->loading)
    frond__seg_request_load(s, t);
}

/* What a call that must not wait answers where it would: the load is
** asked for, nothing was taken, the caller repeats the call off its loop. */
static int would_block(const seg_tag *t, frond_error *err) {
  return frond__fail(err, FROND_EWOULD_BLOCK,
                     "tag \"%s\": its next segment is not loaded yet",
                     t->nm->name);
}

/* At most how many IDs a bounded tag has left for this process: its
** buffers and the row's numbers of the residue up to the bound, as the
** last load read them (other nodes may take some of the row: an upper
** bound). -1 when it cannot be told: no bound, not loaded yet, or a store
** whose segments come out of order (multi:, a lagging member's blocks
** below the row's end). Under mu. */
static int64_t bounded_left(frond_seg *s, seg_tag *t, const seg_pos *p) {
  int64_t b = atomic_load(&t->bound), end = atomic_load(&t->row_end);
  int64_t k = atomic_load(&t->stride), r, left, row;
  if (b <= 0 || !atomic_load(&t->bound_read) ||
      frond__store_order(s->store) != FROND_SEG_ORDER_TAG)
    return -1;
  k = k > 1 ? k : 1;
  r = k > 1 ? atomic_load(&t->residue) : 0;
  left = p->left + (p->nx != NULL ? atomic_load(&p->nx->size) : 0);
  if (end > 0 && end <= b) {
    row = frond__seg_count(end, b, k, r) + ((b - r) % k == 0);
    left = row > INT64_MAX - left ? INT64_MAX : left + row;
  }
  return left;
}

/* Hand out n IDs of t into out: from the current segment, switching to
** the next when it is used up, and waiting (up to wait_ms each time) for
** the loaders when a batch needs more segments than are buffered. A batch
** waits for the next segment before it starts taking IDs that would not
** be enough alone. With nowait, fails with WOULD_BLOCK instead of waiting,
** having taken nothing (unless the fast path raced it: then the IDs it
** took are skipped). Expects t->mu held, so no generation switch or entry
** write runs concurrently; fast-path callers still take offsets. When a
** batch fails halfway, the IDs it took are skipped, never handed out. */
static int take(frond_seg *s, seg_tag *t, size_t n, int64_t *out, int nowait,
                frond_error *err) {
  int64_t deadline = 0, more;
  uint64_t w, off, k = 0, got, seen = UINT64_MAX;
  seg_pos p = {0};
  int rc, asked = 0;
  for (;;) {
    if ((rc = position(t, &p, err)) != 0)
      return rc;
    /* A batch larger than all a bounded tag has left is refused before it
    ** takes any: taken and then given up, they would be skipped, and the
    ** tag used up by a call that issued nothing. First one load is waited
    ** for, which buffers what is left and rereads the bound (raised?). */
    if (k == 0 && (more = bounded_left(s, t, &p)) >= 0 && (uint64_t)more < n) {
      if (!asked && p.nx == NULL) {
        asked = 1;
        if (!t->loading)
          frond__seg_request_load(s, t);
        if (nowait)
          return would_block(t, err);
        if (!refused(t, &seen) && wait_turn(s, t, &deadline, 0))
          continue;
      }
      if (asked && t->loading && !nowait && !refused(t, &seen) &&
          wait_turn(s, t, &deadline, 0))
        continue;
      return frond__fail(err, FROND_ESEGMENT_EXHAUSTED,
                         "tag \"%s\": %zu IDs asked, and at most %lld are "
                         "left up to its max %lld (none was taken)",
                         t->nm->name, n, (long long)more,
                         (long long)atomic_load(&t->bound));
    }
    if (p.left == 0 && p.nx != NULL) {
      switch_gen(t, p.w);
      deadline = 0;
      continue;
    }
    more = p.nx != NULL ? atomic_load(&p.nx->size) : 0;
    if (p.left > 0 && (k > 0 || p.nx != NULL || (uint64_t)p.left >= n) &&
        !(nowait && k == 0 && (uint64_t)(p.left + more) < n)) {
      /* Never add more than the segment holds: the offset stays far
      ** from the generation bits. */
      got = n - k < (uint64_t)p.left ? n - k : (uint64_t)p.left;
      w = atomic_fetch_add(&t->word, got);
      off = w & SEG_OFF_MASK;
      if (off >= (uint64_t)p.size)
        got = 0;
      else if (got > (uint64_t)p.size - off)
        got = (uint64_t)p.size - off;
      /* Only IDs of the segment. (The cursor itself may be past its end:
      ** hot-path calls add without the lock, and then miss.) */
      for (; got > 0; got--) {
        assert(off < (uint64_t)p.size);
        out[k++] = p.start + (int64_t)off++ * p.stride;
      }
      preload_past(s, t, p.e, p.nx, off);
      if (k == n)
        return 0;
      deadline = 0;
      continue;
    }
    if (p.left == 0)
      clamp(t, p.g, p.e, p.size);
    if (!t->loading && p.nx == NULL)
      frond__seg_request_load(s, t);
    if (nowait)
      return would_block(t, err);
    if (refused(t, &seen))
      return give_up(s, t, err, "");
    if (!wait_turn(s, t, &deadline, 0)) {
      char msg[128];
      if (k > 0) /* all or nothing: the IDs taken so far are skipped */
        snprintf(msg, sizeof msg,
                 "%zu IDs asked, the store has not delivered a segment "
                 "after %llu",
                 n, (unsigned long long)k);
      return give_up(s, t, err,
                     k > 0 ? msg
                           : "both segments are used up and the store has "
                             "not delivered the next one");
    }
  }
}

/* A range is n consecutive numbers, which a strided tag does not issue:
** refused, naming what to use instead. */
static int strided(const seg_tag *t, int64_t k, frond_error *err) {
  return frond__fail(err, FROND_EINVAL,
                     "tag \"%s\": its IDs step by %lld (--increment), and a "
                     "range hands out consecutive numbers; ask for a batch "
                     "(?count=, ID.NEXT) instead",
                     t->nm->name, (long long)k);
}

/* n consecutive IDs of t from one segment (see frond_seg_tag_range).
** nowait and the lock as take. */
static int take_range(frond_seg *s, seg_tag *t, int64_t n, int64_t *first,
                      int nowait, frond_error *err) {
  int64_t deadline = 0;
  uint64_t off, seen = UINT64_MAX;
  seg_pos p = {0};
  int rc;
  for (;;) {
    if ((rc = position(t, &p, err)) != 0)
      return rc;
    if (p.stride > 1 || (p.nx != NULL && p.nx->stride > 1))
      return strided(t, p.stride > 1 ? p.stride : p.nx->stride, err);
    if (atomic_load(&t->ordered))
      return frond__fail(err, FROND_EINVAL,
                         "tag \"%s\" is ordered: its IDs are issued one "
                         "call at a time by its owner, and a range held by "
                         "a client would be handed out after later IDs; ask "
                         "for a batch (?count=, ID.NEXT) instead",
                         t->nm->name);
    if (p.left >= n) {
      off = atomic_fetch_add(&t->word, (uint64_t)n) & SEG_OFF_MASK;
      if (off + (uint64_t)n <= (uint64_t)p.size) {
        *first = p.start + (int64_t)off;
        if (t->range_need <= n)
          t->range_need = 0;
        preload_past(s, t, p.e, p.nx, off + (uint64_t)n);
        return 0;
      }
      continue; /* the fast path took some of it: skipped, look again */
    }
    if (p.nx != NULL) {
      /* The current segment cannot hold it whole: skip its rest. */
      switch_gen(t, p.w);
      deadline = 0;
      continue;
    }
    /* A segment of at least n as the next one, from the store. */
    if (t->range_need < n)
      t->range_need = n;
    if (p.left == 0)
      clamp(t, p.g, p.e, p.size);
    if (!t->loading)
      frond__seg_request_load(s, t);
    if (nowait)
      return would_block(t, err);
    if (refused(t, &seen)) {
      if (t->range_need <= n) /* no later load is sized for it */
        t->range_need = 0;
      return give_up(s, t, err, "");
    }
    if (!wait_turn(s, t, &deadline, 1)) {
      char msg[96];
      if (t->range_need <= n) /* no later load is sized for it */
        t->range_need = 0;
      snprintf(msg, sizeof msg,
               "a range of %lld IDs needs a segment the store has not "
               "delivered",
               (long long)n);
      return give_up(s, t, err, msg);
    }
  }
}

/* A batch's arguments: somewhere to put the IDs, and at least one. */
static int check_batch(size_t n, const int64_t *out, frond_error *err) {
  if (out == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if (n == 0)
    return frond__fail(err, FROND_ECOUNT_INVALID, "count must be at least 1");
  return 0;
}

static int next_n(seg_tag *t, size_t n, int64_t *out, int nowait,
                  frond_error *err) {
  int rc;
  if ((rc = frond__seg_forked(t->s, err)) != 0)
    return rc;
  pthread_mutex_lock(&t->mu);
  if ((rc = frond__seg_ordered_gate(t, err)) == 0) {
    /* A batch that waited across a change of owner would hold IDs from
    ** both sides of another owner's: all of its IDs under one claim. */
    int64_t epoch = t->own_epoch;
    if ((rc = take(t->s, t, n, out, nowait, err)) == 0 &&
        (rc = frond__seg_ordered_check(t, err)) == 0 &&
        atomic_load(&t->ordered) && t->own_epoch != epoch && epoch != 0)
      rc = frond__fail(err, FROND_ESEGMENT_UNAVAILABLE,
                       "tag \"%s\" is ordered, and its owner changed while "
                       "the batch waited (the IDs taken are skipped); ask "
                       "again",
                       t->nm->name);
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

/* One ID when the hot path (frond__seg_tag_take, inline in frond/inline.h) did
** not give one; w is the word it fetch-added. Its offset is used when it
** is good: the call read cur while a switch was rewriting it, or took the
** offset that asks for the next segment. Else the offset is skipped and
** the ID comes from take. Out of line. */
static FROND__COLD int slow(seg_tag *t, uint64_t w, int64_t *id, int nowait,
                            frond_error *err) {
  uint64_t g = w >> SEG_GEN_SHIFT, off = w & SEG_OFF_MASK;
  seg_entry *e;
  int rc = 0;
  if (id == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if ((rc = frond__seg_forked(t->s, err)) != 0)
    return rc;
  pthread_mutex_lock(&t->mu);
  if ((rc = frond__seg_ordered_gate(t, err)) != 0) {
    ; /* another node's ordered tag */
  } else if ((e = entry_of(t, g)) != NULL &&
             off < (uint64_t)atomic_load(&e->size)) {
    *id = atomic_load(&e->start) + (int64_t)off * e->stride;
    preload_past(t->s, t, e, entry_of(t, (g + 1) & SEG_GEN_MASK), off + 1);
  } else {
    rc = take(t->s, t, 1, id, nowait, err);
  }
  if (rc == 0) /* an ordered tag's owner issues only while its claim holds */
    rc = frond__seg_ordered_check(t, err);
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int frond__seg_tag_next_slow(frond_seg_tag *h, uint64_t w, int64_t *id,
                             frond_error *err) {
  return slow((seg_tag *)h, w, id, 0, err);
}

static int range(seg_tag *t, int64_t n, int64_t *start, int nowait,
                 frond_error *err) {
  int64_t block;
  int rc;
  if (start == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if ((rc = frond__seg_forked(t->s, err)) != 0)
    return rc;
  if (n < 1 || n > FROND_SEG_RANGE_MAX)
    return frond__fail(err, FROND_ECOUNT_INVALID,
                       "a range holds 1 to %lld IDs, not %lld",
                       (long long)FROND_SEG_RANGE_MAX, (long long)n);
  /* A store whose segments are all of the row's step (multi:'s blocks)
  ** cannot give a larger one: refused here, before it asks for one. */
  if (frond__store_fixed_step(t->s->store) &&
      (block = atomic_load(&t->nm->row_step)) > 0 && n > block)
    return frond__fail(err, FROND_ECOUNT_INVALID,
                       "tag \"%s\": a range comes from one segment, and this "
                       "store's segments are the tag's block of %lld IDs: "
                       "ask for at most %lld, not %lld",
                       t->nm->name, (long long)block, (long long)block,
                       (long long)n);
  /* Nor above what the store takes at once (frond://: max_range). */
  if ((block = frond__store_max_step(t->s->store)) > 0 && n > block)
    return frond__fail(err, FROND_ECOUNT_INVALID,
                       "tag \"%s\": this store takes at most %lld IDs at "
                       "once (the servers' max_range), not %lld",
                       t->nm->name, (long long)block, (long long)n);
  if ((block = atomic_load(&t->stride)) > 1)
    return strided(t, block, err);
  pthread_mutex_lock(&t->mu);
  rc = take_range(t->s, t, n, start, nowait, err);
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int frond_seg_next_n(frond_seg *s, const char *tag, size_t len, size_t n,
                     int64_t *out, frond_error *err) {
  seg_tag *t;
  int rc;
  if ((rc = check_batch(n, out, err)) != 0 ||
      (rc = resolve(s, tag, len, 1, &t, err)) != 0)
    return rc;
  return next_n(t, n, out, 0, err);
}

int frond_seg_next(frond_seg *s, const char *tag, size_t len, int64_t *id,
                   frond_error *err) {
  seg_name *nm;
  seg_tag *t;
  if (FROND__UNLIKELY(
          s == NULL || id == NULL || len > FROND_TAG_MAX ||
          (nm = frond__seg_find(s, tag, len)) == NULL ||
          (t = atomic_load_explicit(&nm->tag, memory_order_acquire)) == NULL))
    return frond_seg_next_n(s, tag, len, 1, id, err);
  return frond__seg_tag_next_inline((frond_seg_tag *)t, id, err);
}

int frond_seg_range(frond_seg *s, const char *tag, size_t len, int64_t n,
                    int64_t *start, frond_error *err) {
  seg_tag *t;
  int rc = resolve(s, tag, len, 1, &t, err);
  return rc != 0 ? rc : range(t, n, start, 0, err);
}

/* ---- handles ---- */

int frond_seg_tag_get(frond_seg *s, const char *tag, size_t len,
                      frond_seg_tag **out, frond_error *err) {
  return resolve(s, tag, len, 1, (seg_tag **)out, err);
}

int frond_seg_tag_find(frond_seg *s, const char *tag, size_t len,
                       frond_seg_tag **out, frond_error *err) {
  return resolve(s, tag, len, 0, (seg_tag **)out, err);
}

/* The exported function behind the inline one of frond/inline.h: the same code.
 */
int(frond_seg_tag_next)(frond_seg_tag *h, int64_t *id, frond_error *err) {
  return frond__seg_tag_next_inline(h, id, err);
}

int frond_seg_tag_next_n(frond_seg_tag *h, size_t n, int64_t *out,
                         frond_error *err) {
  int rc = check_batch(n, out, err);
  return rc != 0 ? rc : next_n((seg_tag *)h, n, out, 0, err);
}

int frond_seg_tag_range(frond_seg_tag *h, int64_t n, int64_t *start,
                        frond_error *err) {
  return range((seg_tag *)h, n, start, 0, err);
}

const char *frond_seg_tag_name(const frond_seg_tag *h) {
  const seg_name *nm = ((const seg_tag *)h)->nm;
  return nm != NULL ? nm->name : ""; /* NULL: a child's zeroed copy */
}

int frond__seg_tag_next_nowait(frond_seg_tag *h, size_t n, int64_t *out,
                               frond_error *err) {
  uint64_t w;
  int rc;
  if ((rc = check_batch(n, out, err)) != 0)
    return rc;
  if (n == 1)
    return frond__seg_tag_take(h, &w, out) ? 0
                                           : slow((seg_tag *)h, w, out, 1, err);
  return next_n((seg_tag *)h, n, out, 1, err);
}

int frond__seg_tag_range_nowait(frond_seg_tag *h, int64_t n, int64_t *start,
                                frond_error *err) {
  return range((seg_tag *)h, n, start, 1, err);
}

/* ---- the store, by hand ---- */

int frond_seg_refresh(frond_seg *s, frond_error *err) {
  int rc = frond__seg_forked(s, err);
  return rc != 0 ? rc : frond__seg_refresh(s, err);
}

int frond_seg_refresh_tag(frond_seg *s, const char *tag, size_t len,
                          frond_error *err) {
  char z[FROND_TAG_MAX + 1];
  frond_tag_row row;
  seg_name *nm;
  int rc;
  if (s == NULL || (tag == NULL && len > 0))
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if ((rc = frond__seg_forked(s, err)) != 0 ||
      (rc = frond_tag_validate(tag, len, err)) != 0)
    return rc;
  memcpy(z, tag, len);
  z[len] = '\0';
  pthread_mutex_lock(&s->store_mu);
  rc = frond__store_tag_get(s->store, z, &row, err);
  pthread_mutex_unlock(&s->store_mu);
  if (rc != 0 && rc != FROND_ETAG_NOT_FOUND)
    return rc;
  pthread_mutex_lock(&s->table_mu);
  if (rc == 0)
    rc = frond__seg_name_add(s, z, len, row.step, &nm);
  else if ((nm = frond__seg_lookup(s, z, len, frond__seg_hash(s, z, len))))
    frond__seg_name_remove(s, nm);
  pthread_mutex_unlock(&s->table_mu);
  if (rc == FROND_ETAG_NOT_FOUND)
    return frond__fail(err, rc, "tag \"%s\" not found", z);
  return rc == 0 ? 0 : frond__fail(err, rc, NULL);
}

/* ---- the facts of formats drawing from this store ---- */

int frond__seg_tag_spelling(frond_seg *s, const char *tag, char *out,
                            size_t len, frond_error *err) {
  frond_tag_row row;
  int rc;
  if ((rc = frond__seg_forked(s, err)) != 0)
    return rc;
  pthread_mutex_lock(&s->store_mu);
  rc = frond__store_tag_get(s->store, tag, &row, err);
  pthread_mutex_unlock(&s->store_mu);
  if (rc == 0)
    snprintf(out, len, "%s", row.tag);
  return rc;
}

int frond__seg_fact(void *ctx, const char *name, const char *value,
                    char *recorded, size_t len, char *where, size_t wlen,
                    frond_error *err) {
  frond_seg *s = ctx;
  char shown[FROND_STORE_URI_MAX];
  int rc;
  frond__store_uri_shown(s->uri, shown, sizeof(shown));
  snprintf(where, wlen, "the store %.200s (frond_meta)", shown);
  pthread_mutex_lock(&s->store_mu);
  rc = frond__store_fact(s->store, name, value, recorded, len, err);
  pthread_mutex_unlock(&s->store_mu);
  return rc;
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
  if (o->loaders < 1 || o->loaders > 64)
    return frond__fail(err, FROND_EINVAL, "loaders %u is out of 1..64",
                       o->loaders);
  if (o->ordered_lease_ms != 0 &&
      (o->ordered_lease_ms < 300 || o->ordered_lease_ms > 600000))
    return frond__fail(err, FROND_EINVAL,
                       "ordered_lease_ms %lld is out of 300..600000",
                       (long long)o->ordered_lease_ms);
  if (o->owner != NULL && strlen(o->owner) >= FROND__OWNER_MAX)
    return frond__fail(err, FROND_EINVAL, "owner: longer than %d bytes",
                       FROND__OWNER_MAX - 1);
  return 0;
}

static void seg_free(frond_seg *s) {
  frond__seg_table_free(s);
  frond__store_close(s->store);
  free(s->uri);
  free(s->owner);
  pthread_mutex_destroy(&s->refresh_mu);
  pthread_mutex_destroy(&s->table_mu);
  pthread_mutex_destroy(&s->index_mu);
  pthread_mutex_destroy(&s->sample_mu);
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
  s->serial = frond__serial();
  if (opts != NULL)
    s->o = *opts;
  else
    frond_seg_options_init(&s->o);
  if (s->o.clock == NULL)
    s->o.clock = frond_clock_realtime;
  pthread_mutex_init(&s->refresh_mu, NULL);
  pthread_mutex_init(&s->table_mu, NULL);
  pthread_mutex_init(&s->index_mu, NULL);
  pthread_mutex_init(&s->sample_mu, NULL);
  pthread_mutex_init(&s->store_mu, NULL);
  pthread_mutex_init(&s->mu, NULL);
  frond__cond_init(&s->cv);
  s->uri = strdup(store_uri != NULL ? store_uri : FROND_STORE_DEFAULT);
  s->owner = s->o.owner != NULL ? strdup(s->o.owner) : NULL;
  s->renew_at_ns = INT64_MAX;
  s->token = (int64_t)(frond__random_key() >> 1) | 1; /* never 0 */
  if (s->uri == NULL || (s->o.owner != NULL && s->owner == NULL) ||
      frond__seg_table_init(s) != 0) {
    rc = frond__fail(err, FROND_ENOMEM, NULL);
    goto fail;
  }
  s->o.owner = s->owner; /* the allocator's copy */
  if ((rc = check_options(&s->o, err)) != 0 ||
      (rc = frond__store_open(s->uri, &s->store, err)) != 0 ||
      (rc = frond__store_ensure_schema(s->store, err)) != 0 ||
      (rc = frond__seg_refresh(s, err)) != 0 ||
      (rc = frond__seg_loaders_start(s, err)) != 0)
    goto fail;
  frond__seg_forks_add(s);
  *out = s;
  return 0;
fail:
  seg_free(s);
  return rc;
}

void frond_seg_close(frond_seg *s) {
  if (s == NULL)
    return;
  if (frond__seg_forked(s, NULL) != 0)
    return; /* a child's copy: its threads, locks (a lock or a condition
            ** variable may be held or waited on by a thread the child does
            ** not have; after _Fork() the list's lock too) and store
            ** connections are the parent's; left */
  frond__seg_forks_remove(s);
  frond__seg_loaders_stop(s);
  frond__seg_give_back(s);       /* no load runs from here on */
  frond__seg_ordered_release(s); /* after the last ID and the give-back */
  seg_free(s);
}
