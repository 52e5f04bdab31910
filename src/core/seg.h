/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg.h -- the segment allocator's private pieces, shared by its files:
**
**   segment.c    the hot path, batches and ranges, the public calls,
**                open and close, the seq formats' period rows, stats
**   seg_tags.c   the tag table: names, look-up, the refresh from the
**                store, the sorted index, queries and rates; a tag's
**                next step, its description, dropping its buffers
**   seg_load.c   the loader pool: the queue of tags that want a segment,
**                the store transactions, retries with backoff, and
**                installing a loaded segment in the tag's entries
**   seg_fork.c   the open allocators, marked in a child after fork()
**
** (the segment entries' seqlock, inline at the end of this file, is
** written by segment.c, seg_load.c and seg_tags.c alike)
**
** Tags come in two weights. Every row of the store gets a seg_name: its
** name, hash and row step, about 40 bytes in an arena, found through an
** open-addressing table without a lock. A name gets its seg_tag (two
** segment entries, a mutex, counters: about 600 bytes) on first use, so a
** million rows that are never used cost tens of megabytes, and whatever
** iterates over tags in use (the sampler, the top-N of /metrics) costs
** what is in use, not what is stored.
**
** Neither is freed before close: a tag deleted from the store is marked
** removed (its buffers dropped) and revived if it comes back, so a pointer
** to either, held without a lock (a handle, frond_seg_tag), stays valid.
**
** Locks, in the only order in which they nest:
**   s->table_mu  writers of the table and the arena; the added list
**   t->mu        one tag's buffers and state; held for memory work only
**   s->mu        the loaders' queue, retry heap and wake-ups; miss budget
** s->index_mu guards the sorted index and nests nothing but t->mu (a page
** of descriptions). s->store_mu serializes the main store connection; it
** is held during I/O and never while another of these locks is held. Each
** loader thread has a connection of its own, used by it alone.
*/
#ifndef FROND_SEG_H
#define FROND_SEG_H

#include "base/fork.h"
#include "core/core.h"
#include "store/store.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>

/* Offsets need 31 bits (a segment holds at most INT32_MAX IDs) plus the
** few that failing calls add before the slow path clamps them; the
** generation gets the other 32 and wraps after 4 billion segments of a
** tag. */
#define SEG_GEN_SHIFT 32
#define SEG_OFF_MASK ((UINT64_C(1) << SEG_GEN_SHIFT) - 1)
#define SEG_GEN_MASK ((UINT64_C(1) << (64 - SEG_GEN_SHIFT)) - 1)
#define SEG_NO_GEN UINT64_MAX

/* Where a tag is in the loaders' queue (under s->mu). */
enum { SEG_Q_NONE, SEG_Q_QUEUED, SEG_Q_RETRY };

typedef struct seg_tag seg_tag;

/* A row of the store: a name the allocator knows. */
typedef struct seg_name {
  uint64_t hash;
  seg_tag *_Atomic tag;     /* NULL until first use, then fixed */
  _Atomic int32_t row_step; /* as last read from the store; written under
                            ** table_mu, read anywhere */
  uint32_t seen;            /* the refresh that last saw it; under table_mu */
  atomic_uchar removed;     /* written under table_mu */
  unsigned char len;
  char name[]; /* len bytes and a NUL */
} seg_name;

/* One segment. Written only under the tag's mutex, as a seqlock (seq is
** odd while being written); read lock-free by the hot path. */
typedef struct seg_entry {
  atomic_uint_fast64_t seq;
  atomic_uint_fast64_t gen; /* the generation it serves, or SEG_NO_GEN */
  atomic_int_fast64_t start, size;
  atomic_int_fast64_t preload_at; /* offset whose taker asks for the next */
  int64_t step;                   /* under mu */
  /* Offset off is the ID start + off * stride (size counts IDs). A
  ** strided entry's copy in cur has size 0: the inline call, which adds
  ** the offset alone, always leaves such a tag to the slow path. Under
  ** mu. */
  int64_t stride;
  /* The store's range this segment was cut from, [res_start, res_end):
  ** the row's max_id before and after the allocation, uncut by a bound or
  ** a stride; 0, 0 for none. What a give-back compares (seg_give.c). Under
  ** mu. */
  int64_t res_start, res_end;
} seg_entry;

/* A tag in use (the public frond_seg_tag). Its first two lines are what
** the inline frond_seg_tag_next of frond/inline.h reads (frond__seg_tag_hot):
** word, and cur, a copy of the entry of the generation being served (or
** of none) that switch_gen rewrites. The hot path reads cur before its
** fetch-add, from an address that does not depend on the add's result,
** so the loads overlap the locked add; the other entries are read under
** mu only. The static asserts below keep the two layouts one. */
struct seg_tag {
  _Alignas(64) atomic_uint_fast64_t word; /* gen << GEN_SHIFT | off */
  frond_seg *s;                           /* read-only */
  seg_name *nm;                           /* read-only */
  atomic_uint_fast64_t done; /* IDs of segments switched away from */
  /* Odd while the word moves to the next generation and the segment left
  ** is counted in done (switch_gen, frond__seg_drop): a count
  ** (frond__seg_taken) reads the two between two even, equal values of
  ** it. Written under mu. */
  atomic_uint_fast64_t moving;
  _Alignas(64) seg_entry cur;
  _Alignas(64) seg_entry e[2];
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* calls waiting for a segment */
  int want;           /* a load is requested and not done yet */
  int loading;        /* a loader is in the store for this tag */
  int qstate;         /* SEG_Q_*, under s->mu */
  seg_tag *q_next;    /* the queue's link, under s->mu */
  uint64_t gen;       /* bumped on removal: in-flight loads are dropped */
  int64_t step;       /* step of the last load, 0 before the first */
  int64_t row_step;   /* the row's step as last read */
  int64_t max_step;   /* dynamic step cap, 0: the allocator's */
  int64_t range_need; /* a range waits for a segment of this size, 0: no */
  atomic_int capped;  /* a seq period: made and capped in this process */
  /* Its bound as the last load read it (0: none), and whether that load
  ** found the row at or past the bound (the tag used up, or its last
  ** segment cut): the next asks the store before allocating (seg_load.c).
  ** Written under mu: by a load with the segment it installs (a load
  ** dropped as its generation changed sets past only), and by a tag's
  ** re-creation or change of stride (seg_tags.c). Read by anyone, and
  ** under mu where counted with the buffers. */
  _Atomic int64_t bound;
  _Atomic int64_t stride, residue; /* as the last load read them */
  _Atomic int64_t row_end; /* the row's max_id after the last load, uncut */
  atomic_int past;
  atomic_int bound_read; /* a load has read the bound (else: ask first) */
  /* The range of this process's last allocation for the tag, [last_start,
  ** last_end), installed or not; 0, 0 once the buffers were dropped. Under
  ** mu. */
  int64_t last_start, last_end;
  int64_t last_load_ms; /* opts.clock time of the last load, 0: never */
  int64_t last_load_unix_ms;
  int64_t backoff_ms;
  int64_t retry_at_ns; /* monotonic; no load attempt before */
  uint64_t loads, failures;
  /* The last load's refusal (a code other than STORE: the store said why
  ** it will not, e.g. TAG_FLOOR, STORE_MEMBER), given to calls that wait
  ** in vain instead of SEGMENT_UNAVAILABLE; 0 after a load works. */
  int fail_code;
  char *fail_why;       /* its message, malloc'd */
  seg_tag *hot_next;    /* tags in use, newest first; fixed once pushed */
  uint64_t sample_last; /* IDs taken at the last sample (sample_mu) */
  _Atomic double rate;  /* IDs per second between the last two samples */
  /* An ordered tag (seg_ordered.c). ordered is set under mu before the
  ** first install, and read by switch_gen, which keeps such a tag off the
  ** inline path; the rest is under mu. */
  atomic_int ordered;      /* the last load found the tag ordered */
  int64_t own_epoch;       /* the claim this process holds, 0: none */
  int64_t own_until_ns;    /* CLOCK_BOOTTIME: no ID is issued at or past
                              it; 0: none before a take confirms */
  int64_t renew_at_ns;     /* frond__mono_ns: the claim's next renewal */
  char *holder;            /* another owner as last read (malloc'd) */
  int64_t holder_until_ns; /* CLOCK_BOOTTIME: its claim is not asked
                              about again before (stale at the earliest) */
  /* Its claim as last seen (epoch, renewal mark), and since when
  ** (CLOCK_BOOTTIME), after the read that first showed it. */
  int64_t seen_epoch, seen_mark, seen_at_ns;
};

/* The inline hot path of frond/inline.h, which the library uses too,
** reads a seg_tag as a frond__seg_tag_hot. */
#ifndef FROND__SEG_INLINE
#error "libfrond needs lock-free 64-bit atomics (GCC or Clang)"
#endif
#define SEG_HOT_SAME(a, b)                                                     \
  (offsetof(seg_tag, a) == offsetof(frond__seg_tag_hot, b) &&                  \
   sizeof(((seg_tag *)0)->a) == sizeof(((frond__seg_tag_hot *)0)->b))
_Static_assert(SEG_HOT_SAME(word, word) && SEG_HOT_SAME(cur.seq, seq) &&
                   SEG_HOT_SAME(cur.gen, gen) &&
                   SEG_HOT_SAME(cur.start, start) &&
                   SEG_HOT_SAME(cur.size, size) &&
                   SEG_HOT_SAME(cur.preload_at, preload_at) &&
                   SEG_GEN_SHIFT == 32,
               "frond__seg_tag_hot (frond/inline.h) and seg_tag disagree");

/* Open addressing, linear probing, load <= 1/2. Slots are only ever set
** (under table_mu) and read lock-free; a grown table replaces the old one,
** which stays allocated (on the `older` chain) until close. */
typedef struct seg_table {
  struct seg_table *older;
  size_t cap, count;
  seg_name *_Atomic slot[];
} seg_table;

typedef struct seg_arena seg_arena;

/* A tag waiting for its next load attempt (the retry heap, under s->mu). */
typedef struct seg_retry {
  int64_t at_ns;
  seg_tag *t;
} seg_retry;

struct frond_seg {
  frond_seg_options o;
  uint64_t seed;   /* of the name hash */
  uint64_t serial; /* frond__serial(): what caches key on, never s */

  /* The main store connection: refresh, look-ups, period rows. Loaders
  ** open their own to uri. */
  char *uri;
  frond_store *store;
  pthread_mutex_t store_mu;

  /* The table (seg_tags.c). refresh_mu: one refresh at a time, taken
  ** before any other lock. */
  pthread_mutex_t refresh_mu;
  seg_table *_Atomic table;
  pthread_mutex_t table_mu;
  seg_arena *arena;
  uint32_t epoch;   /* of the last refresh */
  size_t nlive;     /* names not removed */
  seg_name **added; /* names added since the index was built */
  size_t nadded, added_cap;
  seg_tag *_Atomic hot; /* tags in use, newest first */
  atomic_size_t nhot;

  /* The sorted index (seg_tags.c): every name ever added, by name. */
  pthread_mutex_t index_mu;
  seg_name **sorted;
  size_t nsorted;

  /* Rates (seg_tags.c). */
  pthread_mutex_t sample_mu;
  int64_t sample_ns;
  uint64_t sample_visits; /* tags the sampler has looked at, for tests */

  /* The loaders (seg_load.c). */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* wakes loaders */
  seg_tag *q_head, *q_tail;
  seg_retry *retry; /* min-heap by at_ns */
  size_t nretry, retry_cap;
  int stop;
  int refreshing;        /* a loader is reading the tag list */
  int64_t refresh_at_ns; /* the next periodic refresh */
  int64_t refresh_backoff_ms;
  int64_t miss_second; /* unknown tags' rate limit window */
  unsigned miss_used;
  pthread_t *loaders;
  unsigned nloaders;
  atomic_uint busy;     /* loaders in the store right now */
  atomic_uint max_busy; /* the most at once, for tests and stats */

  atomic_uint_fast64_t loads, failures, unavailable;
  atomic_int store_ok;
  atomic_int closed; /* frond_seg_close has begun: no call takes an ID */
  /* Ordered tags (seg_ordered.c): this process's random token and
  ** address, read-only; the next renewal due (under mu). */
  int64_t token;
  char *owner;
  int64_t renew_at_ns;
  int renewing;

  /* fork() (seg_fork.c): set in a child, where every call refuses. */
  atomic_int forked;
  frond_seg *fork_next;  /* the open allocators, under seg_fork.c's lock */
  frond__fork_mark fork; /* the process key when opened: any fork */
};

static inline int64_t frond__seg_clock(frond_seg *s) {
  return s->o.clock(s->o.clock_ctx);
}

/* ---- seg_tags.c ---- */

/* ---- the name hash ----
** Short names dominate, so the hash reads them in at most four loads and
** mixes with two multiplications (the structure of wyhash, which is in
** the public domain). Keyed per allocator: the table's layout cannot be
** predicted from outside. */

#define SEG_P0 UINT64_C(0xa0761d6478bd642f)
#define SEG_P1 UINT64_C(0xe7037ed1a0b428db)

static inline uint64_t frond__seg_mix(uint64_t a, uint64_t b) {
  __uint128_t r = (__uint128_t)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t seg_rd8(const char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline uint64_t seg_rd4(const char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* The name hash, keyed per allocator. */
static inline uint64_t frond__seg_hash(const frond_seg *s, const char *p,
                                       size_t len) {
  uint64_t a, b, seed = s->seed;
  size_t i = len;
  if (len <= 16) {
    if (len >= 4) {
      size_t q = (len >> 3) << 2;
      a = seg_rd4(p) << 32 | seg_rd4(p + q);
      b = seg_rd4(p + len - 4) << 32 | seg_rd4(p + len - 4 - q);
    } else if (len > 0) {
      a = (uint64_t)(unsigned char)p[0] << 16 |
          (uint64_t)(unsigned char)p[len >> 1] << 8 | (unsigned char)p[len - 1];
      b = 0;
    } else {
      a = b = 0;
    }
  } else {
    for (; i > 16; i -= 16, p += 16)
      seed = frond__seg_mix(seg_rd8(p) ^ SEG_P1, seg_rd8(p + 8) ^ seed);
    a = seg_rd8(p + i - 16);
    b = seg_rd8(p + i - 8);
  }
  return frond__seg_mix(SEG_P1 ^ len, frond__seg_mix(a ^ SEG_P1, b ^ seed));
}

/* Names are at most FROND_TAG_MAX bytes; compare the common short ones
** with two overlapping loads instead of a call. */
static inline int seg_name_eq(const char *a, const char *b, size_t len) {
  if (len >= 8 && len <= 16)
    return seg_rd8(a) == seg_rd8(b) &&
           seg_rd8(a + len - 8) == seg_rd8(b + len - 8);
  if (len >= 4 && len < 8)
    return seg_rd4(a) == seg_rd4(b) &&
           seg_rd4(a + len - 4) == seg_rd4(b + len - 4);
  return memcmp(a, b, len) == 0;
}

/* The name's entry, removed or not, or NULL. Lock-free. */
static inline seg_name *frond__seg_lookup(frond_seg *s, const char *name,
                                          size_t len, uint64_t h) {
  seg_table *tb = atomic_load_explicit(&s->table, memory_order_acquire);
  size_t i, mask = tb->cap - 1;
  seg_name *nm;
  for (i = h & mask;; i = (i + 1) & mask) {
    nm = atomic_load_explicit(&tb->slot[i], memory_order_acquire);
    if (nm == NULL)
      return NULL;
    if (nm->hash == h && nm->len == len && seg_name_eq(nm->name, name, len))
      return nm;
  }
}
/* A live name (not removed), or NULL. Lock-free. */
static inline seg_name *frond__seg_find(frond_seg *s, const char *name,
                                        size_t len) {
  seg_name *nm = frond__seg_lookup(s, name, len, frond__seg_hash(s, name, len));
  if (FROND__UNLIKELY(nm == NULL ||
                      atomic_load_explicit(&nm->removed, memory_order_relaxed)))
    return NULL;
  return nm;
}
/* The name's tag in use, made on first use. NULL when out of memory. */
seg_tag *frond__seg_hot(frond_seg *s, seg_name *nm);
/* A tag not in the table (or removed): ask the store once, rate-limited
** (segment.c). */
int frond__seg_miss(frond_seg *s, const char *name, size_t len, seg_name **out,
                    frond_error *err);
/* Add (or revive) the name with the row's step; *out gets it. Expects
** table_mu held. 0 or NOMEM. */
int frond__seg_name_add(frond_seg *s, const char *name, size_t len,
                        int64_t row_step, seg_name **out);
/* Mark the name removed and drop its buffers. Expects table_mu held. */
void frond__seg_name_remove(frond_seg *s, seg_name *nm);
/* Tags frond_seg_sample has looked at since open (tests check that it
** looks only at tags in use). */
uint64_t frond__seg_sample_visits(frond_seg *s);
/* Read the whole tag list; add new names, remove those that are gone. */
int frond__seg_refresh(frond_seg *s, frond_error *err);
/* Test hook: called by a refresh between its read of a tag's stride and
** its comparison under the tag's lock. */
extern void (*_Atomic frond__seg_restrided_hook)(seg_tag *t);
int frond__seg_table_init(frond_seg *s);
void frond__seg_table_free(frond_seg *s);
/* The step of t's next load (0: the row's). Expects t->mu held. */
int64_t frond__seg_next_step(frond_seg *s, seg_tag *t);
/* Drop both of t's entries (t was removed). Expects t->mu held. */
void frond__seg_drop(seg_tag *t);
/* t's state into *out (its name too). Expects t->mu held. */
void frond__seg_describe(frond_seg *s, seg_tag *t, frond_tag_info *out);
/* IDs taken from t so far, read without the lock (for rates). */
uint64_t frond__seg_taken(seg_tag *t);

/* ---- seg_load.c ---- */

/* Ask the loaders for a segment of t. Expects t->mu held. */
void frond__seg_request_load(frond_seg *s, seg_tag *t);
int frond__seg_loaders_start(frond_seg *s, frond_error *err);
void frond__seg_loaders_stop(frond_seg *s);
/* Put [start, end) into t's next generation's entry, and serve it at once
** when the current one is used up. Expects t->mu held. Returns 0 when both
** entries are full (the segment is then abandoned, never reused). */
int frond__seg_install(frond_seg *s, seg_tag *t, int64_t start, int64_t size,
                       int64_t stride, int64_t step, int64_t res_start,
                       int64_t res_end);

/* ---- seg_give.c ---- */

/* At close, once no load runs: close every tag's buffers to new takers and
** give the rest of each one's last segment back to the store when no one
** allocated after it (s->o.give_back). Never fails: what is not given back
** stays skipped. */
void frond__seg_give_back(frond_seg *s);

/* ---- seg_ordered.c ---- */

/* What an ordered tag's take got: the allocation, the claim's epoch, the
** monotonic time before it was sent; or who holds the claim instead. */
typedef struct seg_claim {
  int64_t max_id, row_step, epoch, t0, t1; /* t1: after the answer */
  char holder[FROND__OWNER_MAX];
  int64_t holder_epoch, holder_mark, holder_lease_ms;
} seg_claim;

/* A load's store transaction for an ordered tag: claim or keep, and
** allocate (no lock held). 0, TAG_OWNER with c->holder, or the store's
** error. */
int frond__seg_ordered_take(frond_seg *s, frond_store *st, seg_tag *t,
                            int64_t step, seg_claim *c, frond_error *err);
/* Its result, under mu, before the segment is installed: a new claim
** drops the buffers of the old one; a claim of another drops ours. */
void frond__seg_ordered_taken(frond_seg *s, seg_tag *t, const seg_claim *c,
                              int rc);
/* Under mu, before a call takes IDs: TAG_OWNER naming the owner while
** another holds the claim; once this process's claim has run out by its
** clock, its buffers are dropped (the call then waits for a take). */
int frond__seg_ordered_gate(seg_tag *t, frond_error *err);
/* Under mu, after a call took IDs: 0 when this process may issue them
** (the claim holds by its clock); else they are skipped, and the error
** says why. */
int frond__seg_ordered_check(seg_tag *t, frond_error *err);
/* On a loader, when s->renew_at_ns has come: renew every claim due;
** returns the next renewal due (INT64_MAX: none). */
int64_t frond__seg_ordered_renew(frond_seg *s, frond_store *st);
/* At close, after the give-back: end every claim this process holds. */
void frond__seg_ordered_release(frond_seg *s);
/* The lease, and the share of it an owner issues for. */
int64_t frond__seg_ordered_lease_ms(const frond_seg *s);

/* ---- strides (seg_load.c's arithmetic, pure) ---- */

/* The first number at or above a (>= 0) that is r modulo k (k >= 1,
** 0 <= r < k); -1 when it is past INT64_MAX. */
static inline int64_t frond__seg_first(int64_t a, int64_t k, int64_t r) {
  int64_t d = ((r - a % k) % k + k) % k;
  return a > INT64_MAX - d ? -1 : a + d;
}

/* How many numbers of [a, b) (0 <= a) are r modulo k. */
static inline int64_t frond__seg_count(int64_t a, int64_t b, int64_t k,
                                       int64_t r) {
  int64_t f = frond__seg_first(a, k, r);
  return f < 0 || f >= b ? 0 : (b - 1 - f) / k + 1;
}

/* ---- seg_fork.c ---- */

/* Put s on the list of open allocators that a fork() marks in the child,
** arming its fork mark (at open), or take it off (at close). */
void frond__seg_forks_add(frond_seg *s);
void frond__seg_forks_remove(frond_seg *s);
/* A tag's memory, zeroed, from pages a child of any fork sees zeroed
** (MADV_WIPEONFORK): there the inline call finds no segment, and the slow
** path no allocator (t->s NULL). NULL when out of memory. */
seg_tag *frond__seg_tag_alloc(void);
void frond__seg_tag_free(seg_tag *t);
/* FORKED when s is used in a child process after a fork (seg_fork.c sets
** s->forked there after fork(); the process key tells after any fork; a
** tag's s is NULL there), else 0: every call that takes a lock or hands
** out IDs asks first (a lock may be held by a thread that the child does
** not have). */
static inline int frond__seg_forked(frond_seg *s, frond_error *err) {
  if (FROND__UNLIKELY(s == NULL ||
                      atomic_load_explicit(&s->forked, memory_order_relaxed) ||
                      frond__fork_seen(&s->fork)))
    return frond__fail(err, FROND_EFORKED,
                       "this segment allocator was opened before fork(), in "
                       "the parent process; IDs from it here would repeat "
                       "the parent's: open a new one in the child");
  return 0;
}

/* ---- segment entries (writers hold t->mu) ---- */

static inline void entry_set(seg_entry *e, uint64_t gen, int64_t start,
                             int64_t size, int64_t step, int64_t preload_at) {
  uint_fast64_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
  /* Release stores: a reader that sees any new field also sees seq odd
  ** (or the final even value) on its second read of seq. */
  atomic_store_explicit(&e->seq, seq + 1, memory_order_relaxed);
  atomic_store_explicit(&e->gen, gen, memory_order_release);
  atomic_store_explicit(&e->start, start, memory_order_release);
  atomic_store_explicit(&e->size, size, memory_order_release);
  atomic_store_explicit(&e->preload_at, preload_at, memory_order_release);
  e->step = step;
  atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
}

/* Write generation gen's segment into e. The taker of offset preload_at
** is the first to have used more than pct % of the segment. */
static inline void entry_write(seg_entry *e, uint64_t gen, int64_t start,
                               int64_t size, int64_t stride, int64_t step,
                               unsigned pct) {
  entry_set(e, gen, start, size, step, size * pct / 100);
  e->stride = stride > 1 ? stride : 1;
}

/* Entry of generation g, or NULL when it holds another one. Under mu. */
static inline seg_entry *entry_of(seg_tag *t, uint64_t g) {
  seg_entry *e = &t->e[g & 1];
  return atomic_load_explicit(&e->gen, memory_order_relaxed) == g ? e : NULL;
}

/* Move the word from w's generation g to g + 1, whose segment (if any)
** is served from now on; the rest of g's segment, of size IDs (0: none),
** is skipped. The IDs taken of g are counted in done from the offset the
** move took away, so a fetch-add landing just before it is counted too.
** The word moves first, then cur: a hot-path call whose copy of cur and
** whose offset disagree on the generation, as they do for a moment here,
** goes to the slow path. An entry holds one generation's segment from
** its write to its next, and a generation is written once, so a copy of
** cur that names generation g holds g's segment, however old the copy.
** Under mu, with moving odd (a count reading meanwhile waits). */
static inline void move_word(seg_tag *t, uint64_t w, int64_t size) {
  uint64_t next = ((w >> SEG_GEN_SHIFT) + 1) & SEG_GEN_MASK, off;
  seg_entry *e;
  off = atomic_exchange_explicit(&t->word, next << SEG_GEN_SHIFT,
                                 memory_order_acq_rel) &
        SEG_OFF_MASK;
  atomic_fetch_add(&t->done, off < (uint64_t)size ? off : (uint64_t)size);
  atomic_fetch_add(&t->moving, 1); /* even again: counts read on */
  if ((e = entry_of(t, next)) != NULL)
    entry_set(&t->cur, next, atomic_load(&e->start),
              e->stride > 1 || atomic_load(&t->ordered) ? 0
                                                        : atomic_load(&e->size),
              e->step, atomic_load(&e->preload_at));
  else
    entry_set(&t->cur, SEG_NO_GEN, 0, 0, 0, 0);
}

/* Serve generation g + 1 from now on (see move_word). Under mu. */
static inline void switch_gen(seg_tag *t, uint64_t w) {
  seg_entry *e = entry_of(t, w >> SEG_GEN_SHIFT);
  atomic_fetch_add(&t->moving, 1);
  move_word(t, w, e != NULL ? atomic_load(&e->size) : 0);
}

#endif /* FROND_SEG_H */
