/* SPDX-License-Identifier: Apache-2.0 */
/*
** frond/inline.h -- the calls that frond.h compiles into the caller: the
** common case of frond_seg_tag_next on a handle, and of frond_gen_next.
** Part of frond.h, which includes it; see the conventions there.
*/
#ifndef FROND_FROND_INLINE_H
#define FROND_FROND_INLINE_H

#ifndef FROND_H
#error "include <frond.h>, not <frond/inline.h>"
#endif

/*
** With GCC or Clang, frond_seg_tag_next is inlined into the caller: a call
** costs about one atomic fetch-add (bench/README.md), where a call into the
** library costs a third more. The inline part reads the start of the
** handle (frond__seg_tag_hot, not for use) and calls the library for
** anything but the common case; that layout is part of the library's ABI,
** changed only with its soname. Define FROND_NO_INLINE, or write
** (frond_seg_tag_next)(t, id, err), to call the exported function instead
** (as bindings through a foreign-function interface do).
*/
#if defined(__GNUC__)
#define FROND__ALIGN8 __attribute__((aligned(8)))
#else
#define FROND__ALIGN8
#endif
typedef struct frond__seg_tag_hot {
  FROND__ALIGN8 uint64_t word; /* generation << 32 | offset, fetch-added */
  uint64_t pad_[7];            /* its own cache line */
  FROND__ALIGN8 uint64_t seq;  /* the served generation's segment, */
  FROND__ALIGN8 uint64_t gen;  /* under a seqlock */
  FROND__ALIGN8 int64_t start;
  FROND__ALIGN8 uint64_t size, preload_at;
} frond__seg_tag_hot;

/* Everything but the common case of the inline call, given the word the
** call fetch-added. */
FROND_EXPORT int frond__seg_tag_next_slow(frond_seg_tag *t, uint64_t word,
                                          int64_t *id, frond_error *err);

/* With GCC or Clang where 64-bit atomics need no lock (every 64-bit
** target); the casts are C++'s in C++. */
#if defined(__GNUC__) && defined(__GCC_ATOMIC_LLONG_LOCK_FREE) &&              \
    __GCC_ATOMIC_LLONG_LOCK_FREE == 2
#define FROND__SEG_INLINE 1
#ifdef __cplusplus
#define FROND__HOT(t) reinterpret_cast<frond__seg_tag_hot *>(t)
#define FROND__I64(x) static_cast<int64_t>(x)
#else
#define FROND__HOT(t) ((frond__seg_tag_hot *)(void *)(t))
#define FROND__I64(x) ((int64_t)(x))
#endif

/* The common case: 1 and *id set, else 0 and *w the word fetch-added. */
static inline int frond__seg_tag_take(frond_seg_tag *t, uint64_t *w,
                                      int64_t *id) {
  frond__seg_tag_hot *h = FROND__HOT(t);
  /* Read the segment first, from an address that does not depend on the
  ** add, so that the loads overlap it; then add, and check that both name
  ** the same generation. */
  uint64_t seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
  uint64_t gen = __atomic_load_n(&h->gen, __ATOMIC_ACQUIRE);
  int64_t start = __atomic_load_n(&h->start, __ATOMIC_ACQUIRE);
  uint64_t size = __atomic_load_n(&h->size, __ATOMIC_ACQUIRE);
  uint64_t at = __atomic_load_n(&h->preload_at, __ATOMIC_ACQUIRE);
  uint64_t again = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);
  uint64_t off;
  *w = __atomic_fetch_add(&h->word, 1, __ATOMIC_ACQUIRE);
  off = *w & 0xffffffffu;
  if (__builtin_expect((seq & 1) != 0 || again != seq || gen != *w >> 32 ||
                           off >= size || off == at,
                       0))
    return 0;
  *id = start + FROND__I64(off);
  return 1;
}

static inline int frond__seg_tag_next_inline(frond_seg_tag *t, int64_t *id,
                                             frond_error *err) {
  uint64_t w;
  int64_t v; /* not id: its address stays the caller's */
  int rc = frond__seg_tag_take(t, &w, &v)
               ? 0
               : frond__seg_tag_next_slow(t, w, &v, err);
  if (rc == 0)
    *id = v;
  return rc;
}
#ifndef FROND_NO_INLINE
#define frond_seg_tag_next(t, id, err) frond__seg_tag_next_inline(t, id, err)
#endif
#endif

/*
** frond_gen_next likewise: with GCC or Clang the common case is inlined
** into the caller, one fetch-add on the generator's state word below the
** limit it reads, the ID one OR from the value it fetched (the state word
** is laid out as the ID, node bits zero): 1.0x a bare fetch-add on the
** project's machine, 1.4x through the exported call (bench/RESULTS.md).
** Anything else calls the library with the value it added. Programs built
** with an earlier header, whose inline part computed the ID from a packed
** word, get the same IDs: the generator sets the fields it reads so that
** its arithmetic yields v | node_part.
** The inline part reads the start of the
** generator (frond__gen_hot, not for use), part of the library's ABI like
** frond__seg_tag_hot. FROND_NO_INLINE, or (frond_gen_next)(g, id, err),
** call the exported function.
*/
typedef struct frond__gen_hot {
  FROND__ALIGN8 uint64_t state; /* time << time_shift | seq, fetch-added */
  uint64_t pad_[7];             /* its own cache line */
  FROND__ALIGN8 uint64_t limit; /* the first value not to issue here */
  FROND__ALIGN8 uint64_t node_part, compat_mask_, max_count_;
  unsigned compat_bits_, time_shift; /* what earlier inline calls read */
  const uint64_t *fork_at;           /* the process key's word ... */
  FROND__ALIGN8 uint64_t fork_key;   /* ... and its value when created */
} frond__gen_hot;

/* Everything but the common case of the inline call, given the value the
** call fetch-added (and so holds). */
FROND_EXPORT int frond__gen_next_slow(frond_gen *g, uint64_t held, int64_t *id,
                                      frond_error *err);

#ifdef FROND__SEG_INLINE
#ifdef __cplusplus
#define FROND__GEN_HOT(g) reinterpret_cast<frond__gen_hot *>(g)
#else
#define FROND__GEN_HOT(g) ((frond__gen_hot *)(void *)(g))
#endif

static inline int frond__gen_next_inline(frond_gen *g, int64_t *id,
                                         frond_error *err) {
  frond__gen_hot *h = FROND__GEN_HOT(g);
  /* The limit and the fork key first, from addresses that do not depend
  ** on the add, so that the loads overlap it. */
  uint64_t lim = __atomic_load_n(&h->limit, __ATOMIC_ACQUIRE);
  int forked = __atomic_load_n(h->fork_at, __ATOMIC_RELAXED) !=
               __atomic_load_n(&h->fork_key, __ATOMIC_ACQUIRE);
  uint64_t v = __atomic_fetch_add(&h->state, 1, __ATOMIC_RELAXED);
  if (__builtin_expect(v + 1 > lim || forked, 0)) {
    int64_t x; /* not id: its address stays the caller's */
    int rc = frond__gen_next_slow(g, v, &x, err);
    if (rc == 0)
      *id = x;
    return rc;
  }
  *id = FROND__I64(v | h->node_part);
  return 0;
}
#ifndef FROND_NO_INLINE
#define frond_gen_next(g, id, err) frond__gen_next_inline(g, id, err)
#endif
#endif

#endif /* FROND_FROND_INLINE_H */
