/* SPDX-License-Identifier: Apache-2.0 */
/*
** fork.h -- knowing, without a system call, that this process is a child
** of fork(), however the fork was made.
**
** An object that a child of fork() must not use as its parent's (a
** generator's clock word, a segment's buffers, a random key, a
** coordinator's node ID) is armed when it is made: it remembers the
** process key, a random nonzero word in a page the kernel gives a child
** zeroed (MADV_WIPEONFORK, Linux 4.14 and later). A child's first look
** finds the word zero, or, once the child armed an object of its own, a
** new key: either way not the one remembered. That catches every kind of
** fork: fork(), _Fork(), the raw system call and clone() without
** CLONE_VM, of which only fork() runs pthread_atfork handlers.
** Where the kernel refuses the advice (older kernels, a seccomp filter),
** the word is ordinary memory that a pthread_atfork handler zeroes in the
** child: fork() is caught, a fork that skips the handlers is not.
*/
#ifndef FROND_BASE_FORK_H
#define FROND_BASE_FORK_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct frond__fork_mark {
  const _Atomic uint64_t *at; /* the process key's word */
  _Atomic uint64_t key;       /* its value when armed */
} frond__fork_mark;

/* Remember this process' key in m (making the key when the process has
** none yet: its first object, or its first in a child). m starts zeroed.
** Thread-safe for distinct marks; re-arming a mark others read is safe
** too (its key is atomic, its word never changes). */
void frond__fork_arm(frond__fork_mark *m);

/* Was m armed in another process (an ancestor of this one)? One load of
** the key's word, no system call: for hot paths. m must have been armed. */
static inline int frond__fork_seen(const frond__fork_mark *m) {
  return atomic_load_explicit(m->at, memory_order_relaxed) !=
         atomic_load_explicit(&m->key, memory_order_acquire);
}

/* 1 when the key lives in a page the kernel wipes in a child (every fork
** is caught), 0 when only fork() is (the advice was refused). Arms nothing;
** sets the key's page up on first use. */
int frond__fork_wipes(void);

#endif /* FROND_BASE_FORK_H */
