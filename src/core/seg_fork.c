/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_fork.c -- segment allocators and fork(): a child process gets a copy
** of every tag's buffers and none of the loader threads, so IDs it took
** from the copies would be the ones the parent hands out.
**
** Every open allocator is on a list (frond__seg_forks_add at open,
** _remove at close). A handler run in the child (pthread_atfork), with
** the list's lock taken around the fork, marks each allocator forked and
** points each tag's copy of its segment (what the inline
** frond_seg_tag_next reads) at no generation: the inline call falls to
** the slow path, which refuses with FORKED (frond__seg_forked, seg.h)
** before it takes any lock, as every other call does.
**
** A fork that runs no pthread_atfork handler (_Fork(), the raw system
** call) is caught without one: each allocator remembers the process key
** (base/fork.h), which a child finds changed, and every tag lives in pages
** the kernel gives a child zeroed (MADV_WIPEONFORK), where the inline call
** finds no segment and the slow path no allocator (t->s NULL): both
** refuse. Tags are carved from such pages here and kept for reuse when
** freed; where the kernel refuses the advice they are ordinary memory,
** and fork() is still caught by the handler.
*/
#include "core/seg.h"

#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18 /* Linux 4.14; older headers lack the name */
#endif
/* Pages mapped at a time for tags: a few hundred tags. */
#define TAG_CHUNK (256 * 1024)

/* The address sanitizer watches the heap, not these pages: it is told which
** bytes are no tag's (the unused rest of a chunk, a freed tag past its
** link), so that a use after free is still caught. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define TAG_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TAG_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TAG_POISON(p, n) ((void)(p), (void)(n))
#define TAG_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static pthread_mutex_t forks_mu = PTHREAD_MUTEX_INITIALIZER;
static frond_seg *forks; /* open allocators, under forks_mu */
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) {
  pthread_mutex_lock(&forks_mu);
}

static void fork_parent(void) {
  pthread_mutex_unlock(&forks_mu);
}

/* In the child, with one thread, before fork() returns there: no lock of
** the allocators is taken (another thread of the parent may hold it). A
** tag's copy of its segment is left even (no writer) and names no
** generation, which no word ever names. */
static void poison(seg_tag *t) {
  seg_entry *c = &t->cur;
  uint_fast64_t seq = atomic_load(&c->seq) | 1;
  atomic_store(&c->seq, seq);
  atomic_store(&c->gen, SEG_NO_GEN);
  atomic_store(&c->size, 0);
  atomic_store(&c->seq, seq + 1);
}

static void fork_child(void) {
  frond_seg *s;
  seg_table *tb;
  seg_name *nm;
  seg_tag *t;
  size_t i;
  for (s = forks; s != NULL; s = s->fork_next) {
    atomic_store(&s->forked, 1);
    /* Every tag in use: each is reached from its name in the newest
    ** table, even one not yet on the list of tags in use. */
    tb = atomic_load(&s->table);
    for (i = 0; tb != NULL && i < tb->cap; i++)
      if ((nm = atomic_load(&tb->slot[i])) != NULL &&
          (t = atomic_load(&nm->tag)) != NULL)
        poison(t);
  }
  pthread_mutex_unlock(&forks_mu);
}

static void forks_init(void) {
  (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void frond__seg_forks_add(frond_seg *s) {
  frond__fork_arm(&s->fork);
  pthread_once(&forks_once, forks_init);
  pthread_mutex_lock(&forks_mu);
  s->fork_next = forks;
  forks = s;
  pthread_mutex_unlock(&forks_mu);
}

void frond__seg_forks_remove(frond_seg *s) {
  frond_seg **p;
  pthread_mutex_lock(&forks_mu);
  for (p = &forks; *p != NULL && *p != s; p = &(*p)->fork_next)
    ;
  if (*p != NULL)
    *p = s->fork_next;
  pthread_mutex_unlock(&forks_mu);
}

/* ---- tags, in memory a child sees zeroed -------------------------------- */

typedef struct tag_slot {
  struct tag_slot *next;
} tag_slot;

static pthread_mutex_t tags_mu = PTHREAD_MUTEX_INITIALIZER;
static char *chunk_at, *chunk_end; /* the unused rest of the newest chunk */
static tag_slot *tags_free;        /* freed tags (their link inside them) */

seg_tag *frond__seg_tag_alloc(void) {
  size_t size = (sizeof(seg_tag) + 63) & ~(size_t)63;
  void *t = NULL, *p;
  pthread_mutex_lock(&tags_mu);
  if (tags_free != NULL) {
    t = tags_free;
    tags_free = tags_free->next;
  } else {
    if (chunk_at == NULL || (size_t)(chunk_end - chunk_at) < size) {
      p = mmap(NULL, TAG_CHUNK, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        /* Refused (before Linux 4.14, a filter): the handler's poison
        ** still catches fork(). */
        (void)madvise(p, TAG_CHUNK, MADV_WIPEONFORK);
        TAG_POISON(p, TAG_CHUNK);
        chunk_at = p;
        chunk_end = chunk_at + TAG_CHUNK;
      }
    }
    if (chunk_at != NULL && (size_t)(chunk_end - chunk_at) >= size) {
      t = chunk_at;
      chunk_at += size;
    }
  }
  pthread_mutex_unlock(&tags_mu);
  if (t != NULL) {
    TAG_UNPOISON(t, size);
    memset(t, 0, size);
  }
  return t;
}

void frond__seg_tag_free(seg_tag *t) {
  size_t size = (sizeof(seg_tag) + 63) & ~(size_t)63;
  tag_slot *f = (tag_slot *)(void *)t;
  pthread_mutex_lock(&tags_mu);
  f->next = tags_free;
  tags_free = f;
  TAG_POISON((char *)t + sizeof(*f), size - sizeof(*f));
  pthread_mutex_unlock(&tags_mu);
}
