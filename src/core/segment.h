/*
** segment.h -- the segment allocator's state, private to segment.c
** (loading, serving, life cycle) and segment_table.c (the tag table).
**
** Per-tag double buffers served from memory, filled by one background
** loader thread.
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
*/
#ifndef FROND_CORE_SEGMENT_H
#define FROND_CORE_SEGMENT_H

#include "core/formats.h"
#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define MIN_MS (60 * 1000)

/* Offsets need 31 bits (a step is at most INT32_MAX) plus the few that
** failing calls add before the slow path clamps them; the generation
** gets the other 32 and wraps after 4 billion segments of a tag. */
#define GEN_SHIFT 32
#define OFF_MASK ((UINT64_C(1) << GEN_SHIFT) - 1)
#define GEN_MASK ((UINT64_C(1) << (64 - GEN_SHIFT)) - 1)
#define NO_GEN UINT64_MAX

/* One segment. Written only under the tag's mutex, as a seqlock (seq is
** odd while being written); read lock-free by the fast path. */
typedef struct seg_entry {
  atomic_uint_fast64_t seq;
  atomic_uint_fast64_t gen; /* the generation it serves, or NO_GEN */
  atomic_int_fast64_t start, size;
  atomic_int_fast64_t preload_at; /* offset whose taker asks for the next */
  int64_t step;                   /* under mu */
} seg_entry;

typedef struct seg_tag {
  _Alignas(64) atomic_uint_fast64_t word; /* gen << GEN_SHIFT | off */
  _Alignas(64) seg_entry e[2];
  pthread_mutex_t mu;
  pthread_cond_t cv; /* readers waiting for a segment */
  uint64_t done;     /* IDs of segments switched away from */
  int want;          /* a load is requested and not done yet */
  int loading;       /* the loader is in the store for this tag */
  atomic_int removed;
  uint64_t gen;         /* bumped on removal: in-flight loads are dropped */
  int64_t step;         /* step of the last load, 0 before the first */
  int64_t row_step;     /* the row's step as last read */
  int64_t max_step;     /* dynamic step cap, 0: the allocator's */
  atomic_int capped;    /* a seq period: made and capped in this process */
  int64_t last_load_ms; /* opts.clock time of the last load, 0: never */
  int64_t last_load_unix_ms;
  int64_t backoff_ms;
  int64_t retry_at_ns; /* monotonic; no load attempt before */
  uint64_t loads, failures;
  uint64_t hash;
  size_t len;
  char name[FROND_TAG_MAX + 1];
} seg_tag;

/* Open addressing, linear probing, load <= 1/2. Slots are only ever set
** (under table_mu) and read lock-free; a grown table replaces the old one,
** which stays allocated (on the `older` chain) until close. */
typedef struct seg_table {
  struct seg_table *older;
  size_t cap, count;
  _Atomic(seg_tag *) slot[];
} seg_table;

struct frond_seg {
  frond_seg_options o;
  frond_store *store;
  _Atomic(seg_table *) table;
  pthread_mutex_t table_mu;
  pthread_mutex_t store_mu;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* wakes the loader */
  int pending;       /* some tag wants a load */
  int stop;
  int64_t miss_second; /* rate limit window (monotonic seconds) */
  unsigned miss_used;
  pthread_t loader;
  atomic_uint_fast64_t loads, failures, unavailable;
  atomic_int store_ok;
};

static inline int64_t now_ms(frond_seg *s) {
  return s->o.clock(s->o.clock_ctx);
}

static inline uint64_t hash_name(const char *p, size_t n) {
  return frond__fnv1a64(p, n);
}

/* ---- segment entries (writers hold t->mu) ---- */

static inline void entry_write(seg_entry *e, uint64_t gen, int64_t start,
                               int64_t size, int64_t step, unsigned pct) {
  uint_fast64_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
  /* Release stores: a reader that sees any new field also sees seq odd
  ** (or the final even value) on its second read of seq. */
  atomic_store_explicit(&e->seq, seq + 1, memory_order_relaxed);
  atomic_store_explicit(&e->gen, gen, memory_order_release);
  atomic_store_explicit(&e->start, start, memory_order_release);
  atomic_store_explicit(&e->size, size, memory_order_release);
  /* The taker of offset preload_at is the first to have used more than
  ** pct % of the segment. */
  atomic_store_explicit(&e->preload_at, size * pct / 100, memory_order_release);
  e->step = step;
  atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
}

/* Entry of generation g, or NULL when it holds another one. Under mu. */
static inline seg_entry *entry_of(seg_tag *t, uint64_t g) {
  seg_entry *e = &t->e[g & 1];
  return atomic_load_explicit(&e->gen, memory_order_relaxed) == g ? e : NULL;
}

/* Serve generation g + 1 from now on. Under mu. */
static inline void switch_gen(seg_tag *t, uint64_t w) {
  uint64_t g = w >> GEN_SHIFT, off = w & OFF_MASK;
  seg_entry *e = entry_of(t, g);
  if (e != NULL) {
    int64_t size = atomic_load_explicit(&e->size, memory_order_relaxed);
    t->done += off < (uint64_t)size ? off : (uint64_t)size;
  }
  atomic_store_explicit(&t->word, ((g + 1) & GEN_MASK) << GEN_SHIFT,
                        memory_order_release);
}
/* The tag `name` of hash h, or NULL; without a lock (the fast path's
** look-up, kept inline). */
static inline seg_tag *seg_lookup(frond_seg *s, const char *name, size_t len,
                                  uint64_t h) {
  seg_table *tb = atomic_load_explicit(&s->table, memory_order_acquire);
  size_t i, mask = tb->cap - 1;
  seg_tag *t;
  for (i = h & mask;; i = (i + 1) & mask) {
    t = atomic_load_explicit(&tb->slot[i], memory_order_acquire);
    if (t == NULL)
      return NULL;
    if (t->hash == h && t->len == len && memcmp(t->name, name, len) == 0)
      return t;
  }
}

/* ---- the tag table (segment_table.c) ---- */

/* A table of cap slots (a power of two), or NULL. */
seg_table *frond__seg_table_new(size_t cap);
/* Find or create the tag `name` (valid, NUL-terminated) and make it live
** with the row's step. Expects table_mu held. */
int frond__seg_tag_add(frond_seg *s, const char *name, int64_t row_step,
                       seg_tag **out);
/* Free every tag and every table, current and older. */
void frond__seg_table_free(frond_seg *s);

#endif
