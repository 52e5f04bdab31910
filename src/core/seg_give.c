/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_give.c -- a clean stop gives back the rest of each tag's last
** segment (frond_seg_close, segment_give_back).
**
** Without it every clean restart skips what is left of both buffers: with
** steps grown to 100,000, a rolling deploy of ten nodes throws away
** millions of numbers and invoice numbers jump visibly. At close, once no
** loader runs, each tag in use is closed to new takers and, when its
** row's max_id is still where this process's last allocation left it,
** set back to the first number the process did not hand out, in one
** compare-and-set:
**
**   UPDATE leaf_alloc SET max_id = <to> WHERE biz_tag = ? AND max_id = <end>
**
** The next allocation, by any node, continues there.
**
** Why nothing returned was ever handed out:
**   1. Every ID leaves the buffers through the tag's word: a call owns
**      offset off of generation g by a fetch-add on it (the inline path,
**      batches, range leases alike), and only an owned offset below the
**      segment's size becomes an ID (segment.c). The word is swapped
**      here, under the tag's mutex, for a generation no entry holds:
**      every later fetch-add owns nothing, and the slow path refuses
**      (s->closed, set before any tag is looked at). The swapped-out word
**      bounds every offset of g ever owned: at most min(off, size) - 1.
**   2. Generation g + 1's entry, loaded and not served yet, has no owned
**      offset: the word reaches g + 1 only by a switch, and it is at g.
**   3. So the numbers at and past `to` -- g's segment from offset off,
**      then all of g + 1's -- were never handed out, by any path: a
**      range lease (/v1/segment/{tag}/range) took its offsets through the
**      word like a single ID, so it lies below `to` and stays issued.
**   4. Between g's segment and g + 1's nobody else's numbers lie: the rest
**      of g is included only when g's range ends where g + 1's begins
**      (res_end == res_start), i.e. no allocation came between them.
**
** Why nothing handed out is handed out again:
**   5. [to, end) is ours: the row's range of our last allocation ends at
**      end, and the compare-and-set moves the row only when max_id is
**      still end, so no one allocated since (a Frond node, a Leaf node:
**      each moves max_id up first); a concurrent allocation either comes
**      first (the row is past end: nothing is given back) or after (it
**      takes [to, ...), which nobody issued).
**   6. `last` is really the last: loaders are stopped before this runs,
**      and a load whose range was abandoned (both entries full) or
**      dropped (the tag deleted, its stride changed) leaves last pointing
**      at a range that is not in the buffers, or nowhere: then nothing.
**   7. Doubt means no give-back: the store's rollback guard saw the row go
**      back (lost writes: the row's history is not ours to reason about),
**      a store that does not do it (multi:, whose members' rows are
**      checked against the marks the others keep; frond://, whose
**      servers own the row), or a failed or timed-out write (the numbers
**      stay skipped). A write whose answer was lost may still commit
**      later: that is safe too, as the buffers are closed before it is
**      sent and nothing of [to, end) is ever handed out by this process.
**   8. The row equal to end means no one holds a number at or above end
**      from an allocation after ours: every allocation moves max_id up,
**      and a give-back (ours or another node's) moves it down only to
**      the first number that node did not hand out, above everything it
**      did; another node's range starts at or above end (it came after
**      ours), so its give-back reaches end only when it handed out
**      nothing. Then our [to, end) is still ours, and lowering the row
**      to `to` returns only what no one issued.
**   The one way around 8 is a store restored from a backup while this
**   node ran, after which other nodes' allocations happen to bring the
**   row back to exactly end: their ranges then overlap ours already
**   (IDs repeat without any give-back), which is why a restore is done
**   with every node stopped (docs/segment.md); the rollback guard sees
**   it only when this node allocated after the restore (point 7).
**
** Floors stay one-way: the SQL statement never sets max_id below the
** tag's floor (frond_tag_floor), and never writes a floor. A floor is a
** lower bound of what a tag of the name may issue next; a give-back lowers
** max_id only to `to`, which is at or above every ID this tag issued
** (point 3 and 5), so every floor raised from the row later (a delete) is
** still above everything issued. A bound (frond_tag_seq.max) compared
** with the row by set-max sees a lower row: right, the numbers above it
** were never issued. A stride needs nothing: `to` is the next number of
** the residue, or the range's end.
*/
#include "core/seg.h"

#include <stdio.h>

/* The whole give-back waits at most this long for the store: a clean stop
** with the store unreachable ends in bounded time, its numbers skipped. */
#define GIVE_BACK_MS 3000

/* The first number e's segment has not handed out, given the word's
** offset off (past its end: the end of its range). */
static int64_t unissued(const seg_entry *e, uint64_t off) {
  int64_t size = atomic_load(&e->size);
  if (off >= (uint64_t)size)
    return e->res_end;
  return atomic_load(&e->start) + (int64_t)off * e->stride;
}

/* Close t to new takers and say what may go back: 1 with [*to, *end)
** when the rest of its last segment may, else 0. Under mu. */
static int close_tag(seg_tag *t, int64_t *to, int64_t *end) {
  uint64_t w, g, off;
  seg_entry *e, *nx;
  w = atomic_load(&t->word);
  g = w >> SEG_GEN_SHIFT;
  /* Point 1: a generation neither entry holds (they hold g and g + 1 at
  ** most, never g + 2); the exchange's result bounds every offset owned. */
  w = atomic_exchange(&t->word, ((g + 2) & SEG_GEN_MASK) << SEG_GEN_SHIFT);
  g = w >> SEG_GEN_SHIFT;
  off = w & SEG_OFF_MASK;
  entry_set(&t->cur, SEG_NO_GEN, 0, 0, 0, 0);
  e = entry_of(t, g);
  nx = entry_of(t, (g + 1) & SEG_GEN_MASK);
  *end = t->last_end;
  *to = 0;
  if (*end <= 0 || atomic_load(&t->nm->removed))
    return 0;
  if (nx != NULL && nx->res_end == *end) { /* point 2 */
    *to = nx->res_start;
    if (e != NULL && e->res_end == nx->res_start) /* point 4 */
      *to = unissued(e, off);
  } else if (e != NULL && e->res_end == *end) {
    *to = unissued(e, off);
  }
  return *to > 0 && *to < *end;
}

void frond__seg_give_back(frond_seg *s) {
  frond__store_give_back_arg a;
  frond_error err;
  seg_tag *t;
  int64_t to, end, deadline = frond__mono_ns() + GIVE_BACK_MS * 1000000LL;
  uint64_t given = 0, tags = 0, moved_on = 0, failed = 0;
  int go = s->o.give_back, rc;
  atomic_store(&s->closed, 1);
  if (go && frond__store_rollbacks(s->store) > 0) {
    frond_log(FROND_LOG_WARN,
              "segment: the store's rows went back while this process ran "
              "(a lost write, a restore): nothing is given back on close");
    go = 0;
  }
  for (t = atomic_load(&s->hot); t != NULL; t = t->hot_next) {
    pthread_mutex_lock(&t->mu);
    rc = close_tag(t, &to, &end);
    pthread_mutex_unlock(&t->mu);
    if (!go || !rc)
      continue;
    if (frond__mono_ns() >= deadline) {
      failed++;
      continue;
    }
    a.tag = t->nm->name;
    a.end = end;
    a.to = to;
    a.deadline = deadline;
    err.code = 0;
    err.message[0] = '\0';
    pthread_mutex_lock(&s->store_mu);
    rc = frond__store_give_back(s->store, &a, &err);
    pthread_mutex_unlock(&s->store_mu);
    if (rc == FROND_EINVAL && !a.handled) { /* point 7: a store of none */
      frond_log(FROND_LOG_INFO,
                "segment: this store gives nothing back on close (%s): the "
                "rest of the buffers is skipped",
                err.message);
      go = 0;
    } else if (rc != 0) {
      frond_log(FROND_LOG_WARN,
                "segment: tag \"%s\": giving back [%lld, %lld) failed, the "
                "numbers stay skipped: %s: %s",
                a.tag, (long long)to, (long long)end, frond_err_name(rc),
                err.message);
      failed++;
      if (frond__store_retryable(rc))
        go = 0; /* the store does not answer: the others would wait too */
    } else if (a.moved) {
      given += (uint64_t)(end - to);
      tags++;
      frond_log(FROND_LOG_DEBUG,
                "segment: tag \"%s\": gave back [%lld, %lld) on close: the "
                "next allocation starts at %lld",
                a.tag, (long long)to, (long long)end, (long long)to);
    } else {
      moved_on++;
      frond_log(FROND_LOG_DEBUG,
                "segment: tag \"%s\": [%lld, %lld) not given back: its row "
                "is no longer at %lld (another allocation came after ours)",
                a.tag, (long long)to, (long long)end, (long long)end);
    }
  }
  if (tags + moved_on + failed > 0)
    frond_log(failed > 0 ? FROND_LOG_WARN : FROND_LOG_INFO,
              "segment: closed: %llu numbers of %llu tags given back to the "
              "store; %llu tags had been allocated from since (skipped, as "
              "they must be); %llu not given back for want of an answer "
              "(skipped)",
              (unsigned long long)given, (unsigned long long)tags,
              (unsigned long long)moved_on, (unsigned long long)failed);
}
