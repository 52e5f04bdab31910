/* SPDX-License-Identifier: Apache-2.0 */
/*
** fork.c -- the process key of fork.h: one page of its own, wiped in a
** child by the kernel, zeroed there by a pthread_atfork handler as well
** (the only way where the kernel refuses to wipe it).
*/
#include "base/fork.h"
#include "base/base.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18 /* Linux 4.14; older headers lack the name */
#endif

static _Atomic uint64_t plain_word; /* when the page cannot be had */
static _Atomic uint64_t *word = &plain_word;
static int wiped;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* In the child of fork() (not of _Fork() nor the raw system call): what
** the kernel does to the page, done by hand for the plain word. */
static void on_child(void) {
  atomic_store_explicit(word, 0, memory_order_relaxed);
}

static void setup(void) {
  long page = sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, page > 0 ? (size_t)page : 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED &&
      madvise(p, page > 0 ? (size_t)page : 4096, MADV_WIPEONFORK) == 0) {
    word = p; /* kept for the life of the process */
    wiped = 1;
  } else if (p != MAP_FAILED) {
    munmap(p, page > 0 ? (size_t)page : 4096);
  }
  (void)pthread_atfork(NULL, NULL, on_child);
}

/* A random nonzero key; the clock and pid where randomness fails. */
uint64_t frond__random_key(void) {
  uint64_t k = 0;
  while (k == 0)
    if (getrandom(&k, sizeof(k), 0) != (ssize_t)sizeof(k))
      k = (uint64_t)frond__mono_ns() * 0x9e3779b97f4a7c15u ^
          ((uint64_t)getpid() << 32);
  return k;
}

void frond__fork_arm(frond__fork_mark *m) {
  uint64_t cur;
  pthread_once(&once, setup);
  cur = atomic_load_explicit(word, memory_order_acquire);
  while (cur == 0) {
    uint64_t k = frond__random_key();
    if (atomic_compare_exchange_strong(word, &cur, k))
      cur = k;
  }
  if (m->at != word) /* set once: re-arming leaves it for its readers */
    m->at = word;
  atomic_store_explicit(&m->key, cur, memory_order_release);
}

int frond__fork_wipes(void) {
  pthread_once(&once, setup);
  return wiped;
}
