/* SPDX-License-Identifier: Apache-2.0 */
/*
** busy.h -- a thread's mark that one of its calls is inside its state, for
** state a signal handler may also reach.
**
** A per-thread cache (random bits, order numbers) is read and changed by
** calls on its own thread only, so it needs no lock; but a signal handler
** runs on the thread it interrupted, and a handler that calls in while a
** call is half-way through its state would hand out what the call is
** handing out, or see a slot half refilled. The call sets the mark around
** its work; a call that finds the mark set is such a handler and takes
** the slow path that touches nothing (bytes from the system, an uncached
** ID). The signal fences keep the compiler from moving the state's reads
** and writes outside the mark; no instruction of the processor is needed,
** as the handler and the call it interrupted are one thread.
**
** Each file keeps its own mark: a handler inside one file's call may use
** another file's state, whose mark is clear. (id128_rand.c shares its
** mark with its own fast paths, inlined elsewhere from core/rand_hot.h.)
*/
#ifndef FROND_BASE_BUSY_H
#define FROND_BASE_BUSY_H

#include <signal.h>
#include <stdatomic.h>

#define FROND__BUSY_MARK(name)                                                 \
  static __thread volatile sig_atomic_t name                                   \
      __attribute__((tls_model("initial-exec")))

#define FROND__BUSY_ENTER(name)                                                \
  do {                                                                         \
    (name) = 1;                                                                \
    atomic_signal_fence(memory_order_seq_cst);                                 \
  } while (0)

#define FROND__BUSY_LEAVE(name)                                                \
  do {                                                                         \
    atomic_signal_fence(memory_order_seq_cst);                                 \
    (name) = 0;                                                                \
  } while (0)

#endif /* FROND_BASE_BUSY_H */
