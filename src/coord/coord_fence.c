/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_fence.c -- the two threads that keep a node's fence ahead of need.
**
** This file contains, per generator made by a coordinator:
**
**   fencer    moves the fence forward before it is needed: once less than
**             half a window is left above "now + max_ahead" (or when a
**             caller waits at the fence, or report_ms passed), it writes
**             target = now + max_ahead + window, in this order:
**               1. the cache file (write-ahead: a write whose answer is
**                  lost may have committed, and a later start from the
**                  cache must be above it too);
**               2. the coordinator, conditional on still holding the ID;
**               3. the generator (frond__gen_set_fence), only once the
**                  coordinator confirmed.
**             After NODE_ID_LOST it takes the ID back (regain), raises
**             the generator above the fence another holder left and the
**             floor the layout record gives then (a layout changed and
**             changed back meanwhile, a start from the cache), and
**             writes a new fence before the generator may resume. It does
**             all the I/O and may block on the coordinator.
**   watchdog  without I/O: blocks the generator while the claim is lost,
**             its validity ran out (a lease not renewed for 9/10 of its
**             length, ZooKeeper not reached for a session timeout) or the
**             fleet's layout changed, and resumes it with frond__gen_resume,
**             above any fence another holder stored. It sleeps until the
**             validity runs out, the fencer pokes it (it changed what the
**             watchdog reads) or a second passes, not on a fixed beat.
**
** While the generator's clock thread sleeps (no call for a while), the
** fencer writes at the report interval only (which renews the claim) and
** naps up to a second. Each write still asks for now + max_ahead + window
** (target_ms), so an idle node's fence stays between max_ahead + window -
** report and max_ahead + window ahead of the clock, as a busy node's; only
** a report interval longer than that lets it fall behind. A fence not
** extended only stops issuing, which is safe; the first call that reaches
** it asks through the `want` hook, which wakes the fencer at once.
**
** Safety rests on the fence alone (a generator never passes the last fence
** the coordinator confirmed); the watchdog only turns "waiting at the
** fence" into a clear NODE_ID_LOST sooner.
*/
#include "coord/coord.h"
#include "core/core.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define WATCHDOG_MIN_NS (1000 * 1000)
#define WATCHDOG_MAX_NS (1000 * 1000 * 1000)
#define RETRY_MIN_MS 50
#define RETRY_MAX_MS 1000
#define NAP_MAX_MS 100
#define NAP_IDLE_MAX_MS 1000

static int64_t report_interval_ms(const frond_coord *c) {
  int64_t ms = c->t.report_ms, v = atomic_load(&c->validity_ms);
  /* Renew well before the validity runs out: at a third of it. */
  if (v > 0 && v / 3 < ms)
    ms = v / 3;
  return ms > 0 ? ms : 1;
}

/* Is a report due: a report interval since the last confirmed write, by
** the monotonic clock (a wall clock stepped back would hold it back). */
static int report_due(const frond_coord *c) {
  return frond__mono_ns() / 1000000 - atomic_load(&c->last_write_mono_ms) >=
         report_interval_ms(c);
}

static int64_t cap_end(const frond_coord *c, int64_t ms) {
  int64_t end = frond_layout_end_ms(&c->layout);
  return ms < end ? ms : end - 1;
}

/* The fence to write now: never below one already sent, so that the
** stored fence only grows while the node runs. */
static int64_t target_ms(frond_coord *c, int64_t after) {
  int64_t now = frond__coord_now(c);
  int64_t t = frond__gen_fence_target(c->gen, now, c->t.window_ms);
  int64_t sent = atomic_load(&c->sent_ms);
  if (after > 0) {
    int64_t a = cap_end(c, after + c->max_ahead_ms + c->t.window_ms);
    if (a > t)
      t = a;
  }
  return t > sent ? t : sent;
}

const uint64_t frond__coord_fence_bounds_ns[FROND__COORD_FENCE_BUCKETS] = {
    1000000,    2500000,    5000000,    10000000,  25000000,
    50000000,   100000000,  250000000,  500000000, 1000000000,
    2500000000, 5000000000, 10000000000};

void frond__coord_fence_timed(frond_coord *c, uint64_t ns) {
  int k = 0;
  while (k < FROND__COORD_FENCE_BUCKETS && ns > frond__coord_fence_bounds_ns[k])
    k++;
  atomic_fetch_add_explicit(&c->fence_le[k], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->fence_sum_ns, ns, memory_order_relaxed);
}

void frond__coord_fence_hist_get(frond_coord *c, frond__coord_fence_hist *h) {
  int k;
  for (k = 0; k <= FROND__COORD_FENCE_BUCKETS; k++)
    h->n[k] = atomic_load_explicit(&c->fence_le[k], memory_order_relaxed);
  h->sum_ns = atomic_load_explicit(&c->fence_sum_ns, memory_order_relaxed);
}

/* Write fence t: cache, coordinator, then (on success) the generator. */
static int write_fence(frond_coord *c, int64_t t, frond_error *err) {
  int64_t sent_ns, validity;
  int rc;
  if (t > atomic_load(&c->sent_ms)) {
    if ((rc = frond__coord_cache_store(c, t, err)) != 0)
      return rc; /* not covered by the cache: not sent */
    atomic_store(&c->sent_ms, t);
  }
  sent_ns = frond__mono_ns();
  pthread_mutex_lock(&c->lock);
  rc = c->m->xFence(c, t, err);
  pthread_mutex_unlock(&c->lock);
  frond__coord_fence_timed(c, (uint64_t)(frond__mono_ns() - sent_ns));
  if (rc == 0) {
    if (t > atomic_load(&c->durable_ms) ||
        atomic_load(&c->durable_ms) == INT64_MAX)
      atomic_store(&c->durable_ms, t);
    if ((validity = atomic_load(&c->validity_ms)) > 0)
      atomic_store(&c->valid_until_ns, sent_ns + validity * 1000000);
    atomic_store(&c->last_write_ms, frond__coord_now(c));
    atomic_store(&c->last_write_mono_ms, frond__mono_ns() / 1000000);
    atomic_fetch_add(&c->fence_writes, 1);
    frond__gen_set_fence(c->gen, atomic_load(&c->durable_ms));
    /* Blocked for a validity that ran out: this write renewed it, so the
    ** watchdog may resume now rather than at its next look. */
    if (atomic_load(&c->applied) != 0)
      frond__coord_poke(c);
    return 0;
  }
  atomic_fetch_add(&c->write_failures, 1);
  if (rc == FROND_ENODE_ID_LOST && !atomic_exchange(&c->lost, 1))
    frond_log(FROND_LOG_ERROR, "node ID %" PRIu64 " lost: %s", c->node,
              err ? err->message : "");
  if (rc == FROND_ELAYOUT_MISMATCH && !atomic_exchange(&c->layout_changed, 1))
    frond_log(FROND_LOG_ERROR, "node ID %" PRIu64 ": %s", c->node,
              err ? err->message : "");
  frond__coord_poke(c);
  return rc;
}

/* The floor the layout record gives once the claim is ours again: a
** layout changed and changed back while this node was away (a pause, a
** partition), or a start from the cache file that never read the record,
** leaves IDs of another layout above the clock. As a normal start
** (coord.c): raise `after` to it, or refuse when it lies further ahead
** than a restart explains. Read after the claim, which stops any layout
** change until this node lets go of its ID. */
static int regain_floor(frond_coord *c, int64_t *after, frond_error *err) {
  char spec[sizeof(c->layout_spec) + 32], a[40];
  size_t n = strlen(FROND_COORD_CHANGING);
  int64_t floor_id = 0, floor_ms, now, slack;
  int rc;
  pthread_mutex_lock(&c->lock);
  rc = c->m->xLayoutGet(c, spec, sizeof(spec), &floor_id, err);
  pthread_mutex_unlock(&c->lock);
  if (rc != 0)
    return rc;
  if (strncmp(spec, FROND_COORD_CHANGING, n) == 0)
    return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                       "a change of the fleet's layout from %s is under way: "
                       "node ID %" PRIu64 " issues nothing under %s",
                       spec + n, c->node, c->layout_spec);
  if (strcmp(spec, c->layout_spec) != 0)
    return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                       "this node's layout is %s, the fleet's is %s; nodes "
                       "under two layouts can issue equal IDs",
                       c->layout_spec, spec[0] ? spec : "(none recorded)");
  c->floor_id = floor_id;
  floor_ms = frond__coord_floor_ms(&c->layout, floor_id);
  if (floor_ms <= *after)
    return 0;
  now = frond__coord_now(c);
  slack =
      frond__start_slack_ms(c->max_ahead_ms, c->t.window_ms, c->max_wait_ms);
  if (floor_ms - now > slack) {
    frond__format_rfc3339(floor_ms, a, sizeof(a));
    return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                       "the fleet moved from layout %s to %s: IDs must be "
                       "above %" PRId64 ", the largest the old layout could "
                       "have issued, which the new one reaches only at %s, "
                       "%" PRId64 " ms from now (at most %" PRId64 " ms)",
                       c->prev_spec[0] ? c->prev_spec : "(unknown)",
                       c->layout_spec, floor_id, a, floor_ms - now, slack);
  }
  *after = floor_ms;
  return 0;
}

static int regain(frond_coord *c, frond_error *err) {
  int64_t after = 0;
  int rc, first = atomic_load(&c->unclaimed);
  /* Started from the cache file while the coordinator was unreachable:
  ** what it serves was not checked yet (coord_scope.c). */
  if (first && (rc = frond__coord_scope_check(c, err)) != 0) {
    if (rc == FROND_EDATACENTER_MISMATCH)
      frond_log(FROND_LOG_ERROR, "node ID %" PRIu64 ": %s", c->node,
                err ? err->message : "");
    frond__coord_poke(c);
    return rc;
  }
  pthread_mutex_lock(&c->lock);
  rc = c->m->xRegain(c, &after, err);
  pthread_mutex_unlock(&c->lock);
  if (rc == 0 && first && atomic_load(&c->sent_ms) > after)
    after = atomic_load(&c->sent_ms); /* the cached fence */
  if (rc == 0)
    rc = regain_floor(c, &after, err);
  if (rc == FROND_ELAYOUT_MISMATCH && !atomic_exchange(&c->layout_changed, 1))
    frond_log(FROND_LOG_ERROR, "node ID %" PRIu64 ": %s", c->node,
              err ? err->message : "");
  if (rc != 0) {
    frond__coord_poke(c);
    return rc;
  }
  /* Above `after` before the fence written next lets the generator past
  ** its old one: the watchdog resumes it above `after` only if it saw the
  ** loss, and a loss and a regain can both fall between two of its looks
  ** (a thread not scheduled for a few round trips). The generator, never
  ** blocked, would go on issuing at its own clock, under the other
  ** holder's fence. */
  if (after > 0 && c->gen != NULL)
    frond__gen_raise_floor(c->gen, after);
  if ((rc = write_fence(c, target_ms(c, after), err)) != 0)
    return rc;
  /* The watchdog resumes the generator above `after` once lost and
  ** unclaimed are clear: publish it first. */
  if (after > atomic_load(&c->resume_after_ms))
    atomic_store(&c->resume_after_ms, after);
  atomic_store(&c->lost, 0);
  atomic_store(&c->unclaimed, 0);
  atomic_fetch_add(&c->regains, 1);
  frond__coord_poke(c);
  frond_log(FROND_LOG_INFO,
            "node ID %" PRIu64 " %s; fence %" PRId64 ", issuing above %" PRId64,
            c->node, first ? "claimed" : "regained",
            atomic_load(&c->durable_ms), after);
  return 0;
}

int frond__coord_fence_round(frond_coord *c, int force, frond_error *err) {
  int64_t now, durable;
  if (atomic_load(&c->layout_changed))
    return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                       "the fleet's layout is no longer %s", c->layout_spec);
  if (atomic_load(&c->lost) || atomic_load(&c->unclaimed))
    return regain(c, err);
  now = frond__coord_now(c);
  durable = atomic_load(&c->durable_ms);
  /* Ahead of need: nothing to do while the fence is a window ahead, or
  ** while the generator sleeps; the claim is renewed at the report
  ** interval all the same. */
  if (!force && !atomic_exchange(&c->wanted, 0) &&
      ((c->gen != NULL && frond__gen_asleep(c->gen)) ||
       durable - (now + c->max_ahead_ms) >= c->t.window_ms / 2) &&
      !report_due(c))
    return 0;
  return write_fence(c, target_ms(c, 0), err);
}

/* Sleep up to ns, or until stopping, or (fencer) until a caller waits at
** the fence, or (watchdog, seen != NULL) until the poke count moves past
** *seen, read before the watchdog looked; returns nonzero when stopping. */
static int nap(frond_coord *c, int64_t ns, int on_want, const unsigned *seen) {
  int64_t deadline = frond__mono_ns() + ns;
  int stop;
  pthread_mutex_lock(&c->wake_lock);
  while (!(stop = atomic_load(&c->stopping)) &&
         !(on_want && atomic_load(&c->wanted)) &&
         !(seen != NULL && atomic_load(&c->pokes) != *seen))
    if (frond__cond_wait_until(&c->wake, &c->wake_lock, deadline) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&c->wake_lock);
  return stop;
}

void frond__coord_poke(frond_coord *c) {
  atomic_fetch_add(&c->pokes, 1);
  pthread_mutex_lock(&c->wake_lock);
  pthread_cond_broadcast(&c->wake);
  pthread_mutex_unlock(&c->wake_lock);
}

void frond__coord_want(void *ctx) {
  frond_coord *c = ctx;
  if (atomic_exchange(&c->wanted, 1))
    return;
  pthread_mutex_lock(&c->wake_lock);
  pthread_cond_broadcast(&c->wake);
  pthread_mutex_unlock(&c->wake_lock);
}

/* How long the fencer may sleep before the next write is due: a nap of
** at most NAP_MAX_MS while IDs are issued, of up to NAP_IDLE_MAX_MS while
** the generator sleeps (only the report is due then). */
static int64_t next_due_ms(frond_coord *c) {
  int64_t now = frond__coord_now(c);
  int64_t by_fence =
      atomic_load(&c->durable_ms) - c->max_ahead_ms - c->t.window_ms / 2 - now;
  int64_t by_report = atomic_load(&c->last_write_mono_ms) +
                      report_interval_ms(c) - frond__mono_ns() / 1000000;
  int asleep = c->gen != NULL && frond__gen_asleep(c->gen);
  int64_t ms = asleep || by_report < by_fence ? by_report : by_fence;
  int64_t cap = asleep ? NAP_IDLE_MAX_MS : NAP_MAX_MS;
  if (ms < 1)
    ms = 1;
  return ms < cap ? ms : cap;
}

static void *fencer_main(void *arg) {
  frond_coord *c = arg;
  int64_t retry = RETRY_MIN_MS, wait = 0;
  int last = 0;
  while (!nap(c, wait * 1000000, 1, NULL)) {
    frond_error e;
    int rc;
    e.message[0] = 0;
    rc = frond__coord_fence_round(c, 0, &e);
    if (rc != 0) {
      frond__coord_note_error(c, rc, e.message);
      if (rc != last && rc != FROND_ENODE_ID_LOST)
        frond_log(FROND_LOG_WARN, "coordinator: %s", e.message);
      wait = retry;
      retry = retry * 2 < RETRY_MAX_MS ? retry * 2 : RETRY_MAX_MS;
    } else {
      if (last != 0 && last != FROND_ENODE_ID_LOST)
        frond_log(FROND_LOG_INFO, "coordinator reachable again");
      atomic_store(&c->last_error, 0);
      retry = RETRY_MIN_MS;
      wait = next_due_ms(c);
    }
    last = rc;
  }
  return NULL;
}

int frond__coord_blocking(frond_coord *c) {
  int64_t until = atomic_load(&c->valid_until_ns);
  int64_t after = atomic_load(&c->resume_after_ms);
  if (atomic_load(&c->closing))
    return FROND_ECLOSED;
  if (atomic_load(&c->layout_changed))
    return FROND_ELAYOUT_MISMATCH;
  if (atomic_load(&c->unclaimed))
    return FROND_ECOORD;
  if (atomic_load(&c->lost))
    return FROND_ENODE_ID_LOST;
  if (until != 0 && frond__mono_ns() > until)
    return FROND_ENODE_ID_LOST;
  /* Above another holder's fence the generator could only fail with
  ** CLOCK_BEHIND until the wall clock comes within max_ahead of it. */
  if (after != 0 && frond__coord_now(c) + c->max_ahead_ms <= after)
    return FROND_ENODE_ID_LOST;
  return 0;
}

void (*_Atomic frond__coord_apply_hook)(frond_coord *c);

/* Block or resume the generator as frond__coord_blocking says, then look
** again, until what was applied is what is read. A fence written while
** this looked (the validity renewed as it ran out) may have read
** `applied` before this stored it, and so not poked: after one look the
** generator would stay blocked under a valid claim until the watchdog's
** nap ended (up to WATCHDOG_MAX_NS). Either the writer reads the new
** `applied` and pokes, or the second look reads its validity: both
** sides store, then load (seq_cst). */
void frond__coord_apply(frond_coord *c) {
  void (*hook)(frond_coord *);
  int code;
  while ((code = frond__coord_blocking(c)) != atomic_load(&c->applied)) {
    if ((hook = atomic_load(&frond__coord_apply_hook)) != NULL)
      hook(c);
    if (code)
      frond__gen_block(c->gen, code);
    else
      frond__gen_resume(c->gen, atomic_load(&c->resume_after_ms),
                        atomic_load(&c->durable_ms));
    atomic_store(&c->applied, code);
    if (code == FROND_ECLOSED)
      return;
    if (code)
      frond_log(FROND_LOG_ERROR, "node ID %" PRIu64 ": issuing stopped (%s)",
                c->node, frond_err_name(code));
    else
      frond_log(FROND_LOG_INFO, "node ID %" PRIu64 " held: issuing again",
                c->node);
  }
}

/* Until the next moment frond__coord_blocking can change by itself: the
** validity running out, or a held-back resume coming within max_ahead of
** the clock. Anything else changes through the fencer, which pokes. */
static int64_t watchdog_wait_ns(frond_coord *c) {
  int64_t now = frond__mono_ns(), ns = WATCHDOG_MAX_NS;
  int64_t until = atomic_load(&c->valid_until_ns);
  int64_t after = atomic_load(&c->resume_after_ms);
  /* A millisecond past each moment, so that it has passed on waking. */
  if (until > now && until - now + WATCHDOG_MIN_NS < ns)
    ns = until - now + WATCHDOG_MIN_NS;
  if (after != 0) {
    int64_t ms = after - c->max_ahead_ms - frond__coord_now(c);
    if (ms >= 0 && (ms + 1) * 1000000 < ns)
      ns = (ms + 1) * 1000000;
  }
  return ns < WATCHDOG_MIN_NS ? WATCHDOG_MIN_NS : ns;
}

static void *watchdog_main(void *arg) {
  frond_coord *c = arg;
  unsigned seen;
  /* The poke count is read before apply looks, so that a change made
  ** while it looks is not slept through. */
  do {
    seen = atomic_load(&c->pokes);
    frond__coord_apply(c);
  } while (!nap(c, watchdog_wait_ns(c), 0, &seen));
  return NULL;
}

int frond__coord_attach_gen(frond_coord *c, frond_gen *g, frond_error *err) {
  if (!c->acquired)
    return frond__fail(err, FROND_EINVAL, "attach before acquire");
  if (c->threads)
    return frond__fail(err, FROND_EINVAL, "already attached");
  c->gen = g;
  frond__coord_apply(c); /* a start from the cache: blocked at once */
  if (pthread_create(&c->watchdog, NULL, watchdog_main, c) != 0)
    return frond__fail(err, FROND_ENOMEM, "cannot start the watchdog");
  if (pthread_create(&c->fencer, NULL, fencer_main, c) != 0) {
    atomic_store(&c->stopping, 1);
    pthread_join(c->watchdog, NULL);
    atomic_store(&c->stopping, 0);
    return frond__fail(err, FROND_ENOMEM, "cannot start the fencer");
  }
  c->threads = 1;
  return 0;
}

void frond__coord_stop_threads(frond_coord *c) {
  if (!c->threads)
    return;
  pthread_mutex_lock(&c->wake_lock);
  atomic_store(&c->stopping, 1);
  pthread_cond_broadcast(&c->wake);
  pthread_mutex_unlock(&c->wake_lock);
  pthread_join(c->fencer, NULL);
  pthread_join(c->watchdog, NULL);
  c->threads = 0;
}
