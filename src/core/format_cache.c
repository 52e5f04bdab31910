/* SPDX-License-Identifier: Apache-2.0 */
/*
** format_cache.c -- order numbers one at a time from a per-thread cache
** of a batch.
**
** One order number is a chain of 8 Feistel rounds, each an AES-128 (10
** aesenc, each waiting for the last) or a SipHash call: about 130 ns
** however the code around it is written. The numbers of a batch are
** independent and run side by side in vector registers for a tenth of
** that each. So a thread that asks for numbers one after another gets
** them from a batch: its first call draws one ID as before; while the
** calls keep coming within the validity (below), each refill draws twice
** as many as the last, up to 32, from the same source the single call
** uses (frond_gen_next_n, or the tag's segment), permutes them with the
** batch kernel, writes them out whole (prefix, check character) and hands
** them out one per call.
**
** What this keeps, and what it changes:
**   - Nothing is handed out twice. A cache belongs to one thread and each
**     number leaves it once. It is keyed by the format's serial number
**     (never its address, which a new format with another key may reuse),
**     the source's generator and allocator by their serial numbers too
**     (a generator of another node, or an allocator of another store,
**     made where a closed one was finds nothing of it), and the tag:
**     another spec or key is another format, and finds nothing; the tag
**     by its text, never its address (a caller may reuse a buffer for
**     another tag). In a child
**     of fork() the thread's cache is dropped before anything is handed
**     out (base/fork.h: one load), whatever made the fork.
**   - A cached number's ID was drawn a little before the call that hands
**     it out: at most VALIDITY_MS (the snowflake layout's unit when
**     longer), as the ticker's millisecond tells (frond__id128_now_ms: no
**     clock read per call under sustained use; it lags the wall clock by
**     at most a tick, more on a machine too loaded to run the ticker). An
**     older cache is dropped and its numbers skipped, never reused, as a
**     segment's rest is at a restart. A date prefix shows the ID's time,
**     as before, so a number handed out just after midnight may carry the
**     day before's date, as any ID drawn just before it does.
**     A cache drawn "after" the ticker's millisecond (the clock stepped
**     back) is dropped too.
**   - A generator's block, resume or floor raise is a barrier for the
**     cached IDs too: they are dropped before the next number is handed
**     out (frond__gen_barriers: one load), and the call fails or draws as
**     the single call does. A call under way when the block lands may
**     still hand one out, as a call of the generator past its check may
**     issue: drawn below the fence, before the block.
**   - The key's record is checked on every call before a number is handed
**     out (frond__format_fact_ready, in the caller), as before.
**   - Order: none is promised for order numbers (docs/formats.md); within
**     a thread they come in the order their IDs were drawn.
**   - Waste: a thread that calls slowly never grows its batches past 1,
**     and a cache dropped for its age halves the next (starts again at
**     1 when another format's refill dropped it: it was idle). A thread
**     holds at most AHEAD_MAX numbers ahead across its formats, and
**     stops drawing ahead for the rest of a millisecond once it skipped
**     SKIP_BUDGET in it: fewer than FROND__ORDER_SKIP_MAX IDs skipped a
**     millisecond per thread, however many formats it takes in turn, and
**     at most AHEAD_MAX at its exit.
**   - A refill that fails (the allocator would wait, an ID too large)
**     hands out the numbers it wrote before failing (the IDs that fit,
**     the chunks drawn before), counts the IDs it drew and wrote none of
**     as skipped (against the budget above); when it wrote none, the
**     single call fails or succeeds as it did. The next draw takes one ID,
**     and draws grow again only once one succeeds: a source that keeps
**     failing costs what the single call costs, one ID a call.
**   - A signal handler that asks on the thread it interrupted, inside a
**     call, finds the cache busy and issues uncached (the single call),
**     touching nothing of it.
**   - The cache is freed at the thread's exit.
*/
#include "base/busy.h"
#include "base/fork.h"
#include "core/core.h"
#include "core/formats.h"
#include "core/rand_hot.h"
#include "core/seg.h"
#include "core/snowflake.h"

#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_MAX 32
#define SLOTS 4
/* An order number is at most 60 characters: a prefix of 32 whose date
** fields expand (15 digits of date from as few as 8 characters, as in
** %Y%Y%Y%j: 7 more), the key version, 19 digits and the check character;
** with its NUL it fits 64. slot_of caches nothing longer. */
#define STRIDE 64
#define VALIDITY_MS 1
/* Waste: a thread holds at most AHEAD_MAX numbers drawn ahead across its
** slots, and once it dropped SKIP_BUDGET unused in one millisecond no
** refill draws ahead until the next. So it skips fewer than SKIP_BUDGET +
** AHEAD_MAX IDs a millisecond (what it held when the budget ran out, on
** top of the budget), and at most AHEAD_MAX at its exit or in a child of
** fork(). */
#define AHEAD_MAX 64
#define SKIP_BUDGET 32
_Static_assert(SKIP_BUDGET + AHEAD_MAX <= FROND__ORDER_SKIP_MAX,
               "formats.h states the bound");
_Static_assert(AHEAD_MAX >= BATCH_MAX - 1, "one format batches in full");

_Static_assert(FROND__PREFIX_MAX + 7 + 1 + FROND__PERM_MAX_WIDTH + 1 < STRIDE,
               "a cached order number fits its stride");

typedef struct order_slot {
  uint64_t serial;   /* the format's; 0: empty */
  uint64_t gen, seg; /* the source's serials (0: none), never addresses */
  int has_tag;       /* src->tag was given: its text, never its address */
  char tag_text[FROND_TAG_MAX + 1];
  int no_store;
  int64_t drawn_ms, validity_ms;
  const _Atomic uint64_t *gen_barriers; /* frond__gen_barriers(gen) */
  uint64_t barriers;                    /* its count before the draw */
  unsigned pos, n;                      /* next to hand out, numbers held */
  unsigned k;                           /* the next refill's size */
  int failed;    /* the last draw failed: the next draws one, as it did */
  uint64_t used; /* the count of the thread's calls that chose it, at the
                 ** last (cached(): the least recent is emptied first) */
  char num[BATCH_MAX][STRIDE];
} order_slot;

typedef struct order_cache {
  frond__fork_mark fork;
  uint64_t calls;   /* cached()'s calls, for the slots' used */
  int64_t skip_ms;  /* the ticker's millisecond of skipped's count */
  unsigned skipped; /* IDs dropped unused in it */
  size_t dropped;   /* all IDs drop() skipped, for the tests */
  unsigned last;    /* the slot of the last cached() call */
  order_slot slot[SLOTS];
} order_cache;

static _Atomic unsigned batch_max = BATCH_MAX;
static __thread order_cache *mine __attribute__((tls_model("initial-exec")));
/* Set at the thread's exit: a later destructor's call issues uncached. */
static __thread unsigned char gone __attribute__((tls_model("initial-exec")));
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

void frond__order_cache_max(unsigned k) {
  atomic_store(&batch_max, k == 0 || k > BATCH_MAX ? BATCH_MAX : k);
}

/* busy is set while a call reads or changes this thread's cache; a call
** that finds it set is a signal handler that interrupted one on its own
** thread (base/busy.h). */
FROND__BUSY_MARK(busy);
#define ENTER() FROND__BUSY_ENTER(busy)
#define LEAVE() FROND__BUSY_LEAVE(busy)

/* At the thread's exit: the thread lets go of the cache before it is
** freed, so that a handler that runs in between finds none (and gone
** set: it issues uncached) rather than memory being freed. */
static void cache_free(void *p) {
  ENTER();
  gone = 1;
  mine = NULL;
  atomic_signal_fence(memory_order_seq_cst);
  if (p != NULL) {
    sodium_memzero(p, sizeof(order_cache));
    free(p);
  }
  LEAVE();
}

static void cache_key_make(void) {
  pthread_key_create(&cache_key, cache_free);
}

/* This thread's cache, made on first use and dropped whole in a child of
** fork(); NULL when none can be had. */
static order_cache *cache(void) {
  order_cache *c = mine;
  if (FROND__LIKELY(c != NULL)) {
    if (FROND__UNLIKELY(frond__fork_seen(&c->fork))) {
      memset(c->slot, 0, sizeof(c->slot));
      frond__fork_arm(&c->fork);
    }
    return c;
  }
  if (gone)
    return NULL;
  pthread_once(&cache_once, cache_key_make);
  if ((c = calloc(1, sizeof(*c))) == NULL)
    return NULL;
  if (pthread_setspecific(cache_key, c) != 0) {
    free(c);
    return NULL;
  }
  frond__fork_arm(&c->fork);
  mine = c;
  return c;
}

size_t frond__order_cache_held(void) {
  order_cache *c = cache();
  size_t held = 0;
  if (c != NULL)
    for (int i = 0; i < SLOTS; i++)
      if (c->slot[i].serial != 0)
        held += c->slot[i].n - c->slot[i].pos;
  return held;
}

size_t frond__order_cache_dropped(void) {
  order_cache *c = cache();
  return c != NULL ? c->dropped : 0;
}

/* A generator's or allocator's serial, 0 for none: a closed one's
** address may be the next one's, its serial never is. */
static inline uint64_t gen_serial(const frond_gen *g) {
  return g != NULL ? g->serial : 0;
}
static inline uint64_t seg_serial(const frond_seg *g) {
  return g != NULL ? g->serial : 0;
}

/* The generator and allocator are compared by serial, the tag by its
** text: a caller may write another tag into the buffer it passed before
** (the same address, another tag). */
static inline int same_owner(const order_slot *s,
                             const frond_format_source *src) {
  return s->gen == gen_serial(src->gen) && s->seg == seg_serial(src->seg) &&
         s->no_store == src->no_store;
}

static int same_source(const order_slot *s, const frond_format_source *src) {
  if (!same_owner(s, src))
    return 0;
  if (src->tag == NULL)
    return !s->has_tag;
  return s->has_tag && strcmp(s->tag_text, src->tag) == 0;
}

/* The slot's numbers not handed out are dropped: skipped, never reused,
** and counted against the thread's budget for the millisecond now. */
static void skip(order_cache *c, int64_t now, size_t n) {
  if (n > 0) {
    if (c->skip_ms != now) {
      c->skip_ms = now;
      c->skipped = 0;
    }
    c->skipped += (unsigned)n;
  }
}

static void drop(order_cache *c, order_slot *s, int64_t now) {
  skip(c, now, s->n - s->pos);
  c->dropped += s->n - s->pos;
  s->pos = s->n = 0;
}

static inline int recent(const order_slot *s, int64_t now);

/* How many to draw for a refill that would draw k: k while the thread's
** numbers held stay within AHEAD_MAX, fewer to keep them there, 1 (none
** ahead) once the millisecond's budget of skipped IDs is spent. Numbers
** too old to be handed out (their slot's next call would drop them) are
** dropped first, against the budget: a format no longer asked for would
** otherwise keep the others' refills small. By age only: another slot's
** generator may be closed, and its barrier count with it. */
static unsigned ahead(order_cache *c, int64_t now, unsigned k) {
  unsigned held = 0;
  for (int i = 0; i < SLOTS; i++)
    if (c->slot[i].pos < c->slot[i].n && !recent(&c->slot[i], now))
      drop(c, &c->slot[i], now);
  if (c->skip_ms == now && c->skipped >= SKIP_BUDGET)
    return 1;
  for (int i = 0; i < SLOTS; i++)
    held += c->slot[i].n - c->slot[i].pos;
  return held + k - 1 <= AHEAD_MAX ? k : AHEAD_MAX + 1 - held;
}

/* The slot of (f, src), or the least recently used one, emptied; NULL
** for what is not cached: a tag longer than any allocator has (the
** single call says so), a number longer than the stride. */
static order_slot *slot_of(order_cache *c, const frond_format *f,
                           const frond_format_source *src, int64_t now) {
  order_slot *lru = &c->slot[0];
  size_t tag_len = 0;
  for (int i = 0; i < SLOTS; i++) {
    order_slot *s = &c->slot[i];
    if (s->serial == f->serial && same_source(s, src))
      return s;
    if (s->used < lru->used)
      lru = s;
  }
  if (src->tag != NULL &&
      (tag_len = strnlen(src->tag, FROND_TAG_MAX + 1)) > FROND_TAG_MAX)
    return NULL;
  if (f->length >= STRIDE)
    return NULL;
  drop(c, lru, now);
  memset(lru, 0, offsetof(order_slot, num));
  if (src->tag != NULL) {
    memcpy(lru->tag_text, src->tag, tag_len + 1);
    lru->has_tag = 1;
  }
  lru->serial = f->serial;
  lru->gen = gen_serial(src->gen);
  lru->gen_barriers = src->gen != NULL ? frond__gen_barriers(src->gen) : NULL;
  lru->seg = seg_serial(src->seg);
  lru->no_store = src->no_store;
  lru->k = 1;
  lru->validity_ms = VALIDITY_MS;
  if (src->gen != NULL && f->tag_len == 0 && src->tag == NULL &&
      frond_gen_layout(src->gen)->unit_ms > VALIDITY_MS)
    lru->validity_ms = frond_gen_layout(src->gen)->unit_ms;
  return lru;
}

/* Were the slot's numbers drawn at most its validity before now, and not
** after it (a clock that stepped back: the ticker's millisecond follows
** the wall clock)? One unsigned comparison for both. */
static inline int recent(const order_slot *s, int64_t now) {
  return (uint64_t)(now - s->drawn_ms) <= (uint64_t)s->validity_ms;
}

/* May the slot's numbers still be handed out: recent, and no block,
** resume or floor raise of the generator since they were drawn (one
** load), so that a call that starts after frond__gen_block returns hands
** out nothing, as the generator issues nothing. */
static inline int usable(const order_slot *s, int64_t now) {
  return recent(s, now) &&
         (s->gen_barriers == NULL ||
          atomic_load_explicit(s->gen_barriers, memory_order_relaxed) ==
              s->barriers);
}

/* n bytes (1 to STRIDE) of a cached number to the caller's buffer: a
** few overlapping fixed-size moves, which the compiler inlines, where a
** call into the C library cost a tenth of the whole call. Exactly n
** bytes are written: the caller's buffer may end there. */
static inline void copy_out(char *out, const char *num, size_t n) {
  if (n >= 16) {
    size_t i;
    for (i = 0; i + 16 <= n; i += 16)
      memcpy(out + i, num + i, 16);
    if (i < n)
      memcpy(out + n - 16, num + n - 16, 16);
  } else if (n >= 8) {
    memcpy(out, num, 8);
    memcpy(out + n - 8, num + n - 8, 8);
  } else {
    for (size_t i = 0; i < n; i++)
      out[i] = num[i];
  }
}

static int cached(frond_format *f, const frond_format_source *src, char *out,
                  frond__issue_fn issue, frond_error *err) {
  order_cache *c = cache();
  order_slot *s;
  frond__issue_tally t = {0, 0};
  int64_t now;
  unsigned k, max;
  int rc;
  if (c == NULL)
    return issue(f, src, 1, out, f->length + 1, NULL, err);
  now = frond__id128_now_ms();
  if ((s = slot_of(c, f, src, now)) == NULL)
    return issue(f, src, 1, out, f->length + 1, NULL, err);
  c->last = (unsigned)(s - c->slot);
  s->used = ++c->calls;
  if (s->pos < s->n) {
    if (FROND__LIKELY(usable(s, now))) {
      copy_out(out, s->num[s->pos++], f->length + 1);
      return 0;
    }
    /* Too old, drawn "after" now, or drawn before a barrier of the
    ** generator: skipped, and the next batch half as large. */
    s->k = s->k > 1 ? s->k / 2 : 1;
    drop(c, s, now);
  } else if (s->drawn_ms != 0 && !s->failed && recent(s, now)) {
    /* Used up within its validity: the calls come fast, batch more. */
    max = atomic_load_explicit(&batch_max, memory_order_relaxed);
    s->k = s->k * 2 <= max ? s->k * 2 : max;
  } else if (s->drawn_ms != 0) {
    s->k = 1;
  }
  s->drawn_ms = now;
  if (s->gen_barriers != NULL) /* before the draw: a barrier after shows */
    s->barriers = atomic_load_explicit(s->gen_barriers, memory_order_acquire);
  k = s->k > 1 ? ahead(c, now, s->k) : 1;
  s->pos = s->n = 0;
  if (k <= 1) {
    rc = issue(f, src, 1, out, f->length + 1, NULL, err);
    s->failed = rc != 0;
    return rc;
  }
  if (issue(f, src, k, s->num[0], STRIDE, &t, NULL) != 0) {
    /* What it drew and wrote none of is skipped, against the budget; the
    ** numbers it wrote first are handed out, else the single call decides
    ** (one ID may be had where k may not); the next draw takes one, and
    ** draws grow again only after one succeeds: a failing source costs
    ** what the single call costs. */
    skip(c, now, t.lost);
    s->k = 1;
    s->failed = 1;
    if (t.done == 0) {
      rc = issue(f, src, 1, out, f->length + 1, NULL, err);
      s->failed = rc != 0;
      return rc;
    }
    k = (unsigned)t.done;
  } else {
    s->failed = 0;
  }
  s->n = k;
  s->pos = 1;
  memcpy(out, s->num[0], f->length + 1);
  return 0;
}

/* The common call, what cached() does for it in fewer steps: the slot of
** the thread's last call, when it is this format's and source's and holds
** a number not handed out; NULL for anything else (cached() then
** decides). untagged (a constant at each call): the caller saw src->tag
** NULL, so that no text is compared. The clock is the caller's to read,
** after this: the cold path reads it only for a slot that may serve. */
__attribute__((always_inline)) static inline order_slot *
last_slot(order_cache *c, const frond_format *f, const frond_format_source *src,
          int untagged) {
  order_slot *s = &c->slot[c->last];
  if (s->serial != f->serial || s->pos >= s->n || frond__fork_seen(&c->fork) ||
      !(untagged ? same_owner(s, src) && !s->has_tag : same_source(s, src)))
    return NULL;
  return s;
}

/* The slot's next number to out. The slot is the thread's last, which
** cached() marked used last: it stays the most recent without a mark of
** its own here (the least recent slot is the same either way). */
__attribute__((always_inline)) static inline void
hand_out(order_slot *s, const frond_format *f, char *out) {
  copy_out(out, s->num[s->pos++], f->length + 1);
}

/* Everything but an untagged source's common call: a tag's, a refill,
** another slot, the first call of a thread, a handler inside a call, a
** ticker not running. */
__attribute__((noinline)) static int
order_cold(frond_format *f, const frond_format_source *src, char *out,
           frond__issue_fn issue, frond_error *err) {
  order_cache *c;
  order_slot *s;
  int rc = 0;
  if (FROND__UNLIKELY(busy)) /* a handler inside a call: uncached */
    return issue(f, src, 1, out, f->length + 1, NULL, err);
  ENTER();
  if ((c = mine) != NULL && (s = last_slot(c, f, src, 0)) != NULL &&
      usable(s, frond__id128_now_ms()))
    hand_out(s, f, out);
  else
    rc = cached(f, src, out, issue, err);
  LEAVE();
  return rc;
}

/* An untagged source's common call in the caller's frame: no register
** saved and no call (the ticker read inline, core/rand_hot.h), where the
** saves and the calls were stores on every number. The tag is looked at
** first: last_slot then compares no text. */
int frond__order_cached(frond_format *f, const frond_format_source *src,
                        char *out, frond__issue_fn issue, frond_error *err) {
  order_cache *c = mine;
  order_slot *s;
  int64_t now;
  if (FROND__LIKELY(!busy && c != NULL && src->tag == NULL)) {
    int done = 0;
    ENTER();
    if (FROND__LIKELY(frond__now_ms_hot(&now)) &&
        (s = last_slot(c, f, src, 1)) != NULL && usable(s, now)) {
      hand_out(s, f, out);
      done = 1;
    }
    LEAVE();
    if (FROND__LIKELY(done))
      return 0;
  }
  return order_cold(f, src, out, issue, err);
}

void frond__order_cache_shift(int64_t ms) {
  order_cache *c = cache();
  if (c != NULL)
    for (int i = 0; i < SLOTS; i++)
      if (c->slot[i].serial != 0)
        c->slot[i].drawn_ms += ms;
}
