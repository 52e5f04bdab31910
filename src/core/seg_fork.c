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
*/
#include "core/seg.h"

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
