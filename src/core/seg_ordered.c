/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_ordered.c -- ordered tags: one fleet-wide sequence per tag, served
** by one owner at a time from its double buffer.
**
** The claim is a row in the store (store_sql_ordered.c). A load of an
** ordered tag is a take: claim the tag (or keep the claim) and allocate,
** in one transaction. Other processes get TAG_OWNER with the owner's
** address, which a server forwards to (server/forward.c).
**
** What is guaranteed: every ID of the tag is larger than every ID of it
** whose answer was received before its request was sent, whichever nodes
** answered (the sequence is linearizable), as long as the monotonic
** clocks of the nodes run at rates within a tenth of each other (real
** clocks differ by a few parts per million). No wall clock takes part:
** neither a node's offset nor a step of the database's clock matters.
** Uniqueness never depends on any of it: each owner issues only segments
** that max_id handed to it alone.
**
** Why. Within one owner, every take is under the tag's mutex (an ordered
** tag's copy of the current segment says size 0, so the inline path
** always comes here), and the double buffer's next segment lies above the
** current one (one database: FROND_SEG_ORDER_TAG). Across owners, a
** successor claims only a claim released on a clean stop (after its last
** ID) or one it has seen unchanged (same epoch, same renewal mark) for a
** whole lease by its own clock, counted from after the read that first
** showed it (store_sql_ordered.c), and its first segment is allocated in
** the same transaction, above every segment any earlier owner took. The
** previous owner issues nothing once its own clock passes t0 + lease -
** lease / 10, where t0 is the moment before it sent the take or renewal
** that wrote that mark: before the successor's first sighting, so the
** owner has stopped a tenth of a lease before the successor claims, less
** the clocks' drift. The check comes after the take, under the mutex, so
** a process paused between the two issues nothing. A claim regained
** after a lapse (a new epoch) drops the buffers of the old one first,
** since a successor may have issued above them meanwhile.
**
** Availability: on a clean stop the claim is released at once; after a
** kill -9 or a partition from the store, the tag waits for the lease
** (ordered_lease_ms, 3 s by default) before another node claims it.
*/
#include "core/seg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEASE_DEFAULT_MS 3000

/* The clock of claims and deadlines: CLOCK_BOOTTIME, which counts a
** system suspend as time passed (CLOCK_MONOTONIC stops: an owner woken
** from a suspend would think its deadline still ahead). The renewals'
** schedule stays on frond__mono_ns, the loaders' clock. */
static int64_t boot_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
    return frond__mono_ns();
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t frond__seg_ordered_lease_ms(const frond_seg *s) {
  return s->o.ordered_lease_ms > 0 ? s->o.ordered_lease_ms : LEASE_DEFAULT_MS;
}

/* The time this process stops issuing under a claim confirmed from t0. */
static int64_t deadline_of(const frond_seg *s, int64_t t0) {
  int64_t l = frond__seg_ordered_lease_ms(s);
  return t0 + (l - l / 10) * 1000000;
}

static void want_renewal(frond_seg *s, seg_tag *t, int64_t at_ns) {
  t->renew_at_ns = at_ns;
  pthread_mutex_lock(&s->mu);
  if (at_ns < s->renew_at_ns) {
    s->renew_at_ns = at_ns;
    pthread_cond_signal(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
}

int frond__seg_ordered_take(frond_seg *s, frond_store *st, seg_tag *t,
                            int64_t step, seg_claim *c, frond_error *err) {
  frond__store_ordered_arg a;
  int rc;
  memset(&a, 0, sizeof(a));
  pthread_mutex_lock(&t->mu);
  a.epoch = t->own_epoch;
  a.seen_epoch = t->seen_epoch;
  a.seen_mark = t->seen_mark;
  pthread_mutex_unlock(&t->mu);
  a.tag = t->nm->name;
  a.owner = s->owner != NULL ? s->owner : "";
  a.token = s->token;
  a.lease_ms = frond__seg_ordered_lease_ms(s);
  a.step = step;
  c->t0 = boot_ns();
  /* How long the claim seen has been seen unchanged, by this clock; 0
  ** when none was (a successor then waits a whole lease from now). */
  pthread_mutex_lock(&t->mu);
  a.seen_ms = t->seen_at_ns > 0 ? (c->t0 - t->seen_at_ns) / 1000000 : 0;
  pthread_mutex_unlock(&t->mu);
  rc = frond__store_ordered(st, FROND__STORE_ORDERED_TAKE, &a, err);
  c->t1 = boot_ns();
  c->max_id = a.max_id;
  c->row_step = a.row_step;
  c->epoch = a.epoch;
  memcpy(c->holder, a.holder, sizeof(c->holder));
  c->holder_epoch = a.holder_epoch;
  c->holder_mark = a.holder_mark;
  c->holder_lease_ms = a.holder_lease_ms;
  return rc;
}

/* Stop issuing under the claim held: its buffers go (what they held is
** skipped), and nothing is issued before a take confirms a claim. */
static void lapse(seg_tag *t) {
  frond__seg_drop(t);
  t->own_until_ns = 0;
}

void frond__seg_ordered_taken(frond_seg *s, seg_tag *t, const seg_claim *c,
                              int rc) {
  int64_t until, lease = frond__seg_ordered_lease_ms(s);
  if (rc == 0) {
    if (c->epoch != t->own_epoch) { /* a new claim: none of the old one's */
      if (t->own_epoch != 0)
        frond__seg_drop(t);
      t->own_epoch = c->epoch;
      t->own_until_ns = 0;
      frond_log(FROND_LOG_INFO,
                "segment: ordered tag \"%s\": this node owns it now "
                "(claim %lld)",
                t->nm->name, (long long)c->epoch);
    }
    until = deadline_of(s, c->t0);
    if (until > t->own_until_ns)
      t->own_until_ns = until;
    free(t->holder);
    t->holder = NULL;
    t->seen_epoch = t->seen_mark = t->seen_at_ns = 0;
    want_renewal(s, t, frond__mono_ns() + lease / 3 * 1000000);
    return;
  }
  if (rc != FROND_ETAG_OWNER)
    return; /* the store did not answer: the claim runs out by itself */
  if (t->own_epoch != 0) {
    lapse(t);
    t->own_epoch = 0;
    frond_log(FROND_LOG_WARN,
              "segment: ordered tag \"%s\": owned by %s now; this node "
              "forwards to it",
              t->nm->name, c->holder[0] ? c->holder : "(no address)");
  }
  free(t->holder);
  t->holder = strdup(c->holder);
  /* The claim as seen now: the same as before keeps its first sighting,
  ** another starts one after this read (t1: after the renewal that wrote
  ** it, so after the moment its owner counts its deadline from). */
  if (c->holder_epoch != t->seen_epoch || c->holder_mark != t->seen_mark ||
      t->seen_at_ns == 0) {
    t->seen_epoch = c->holder_epoch;
    t->seen_mark = c->holder_mark;
    t->seen_at_ns = c->t1;
  }
  /* Asked again once the claim may be stale, or after a third of its
  ** lease at least (the holder renews that often: its address is read
  ** again, and a claim moved on is seen). */
  until = c->holder_lease_ms > 0 ? c->holder_lease_ms : lease;
  t->holder_until_ns = t->seen_at_ns + until * 1000000;
  if (t->holder_until_ns > c->t1 + until / 3 * 1000000)
    t->holder_until_ns = c->t1 + until / 3 * 1000000;
}

static int owned_elsewhere(seg_tag *t, frond_error *err) {
  if (t->s->owner == NULL || t->s->owner[0] == '\0')
    return frond__fail(err, FROND_ETAG_OWNER,
                       "tag \"%s\" is ordered, and only a process with an "
                       "address (a server, or frond_seg_options.owner) "
                       "serves it: ask a frond server%s%s",
                       t->nm->name,
                       t->holder != NULL && t->holder[0] ? "; its owner: " : "",
                       t->holder != NULL ? t->holder : "");
  return frond__fail(err, FROND_ETAG_OWNER,
                     "tag \"%s\" is ordered and served by its owner %s",
                     t->nm->name,
                     t->holder != NULL && t->holder[0] ? t->holder
                                                       : "(a process with no "
                                                         "address)");
}

int frond__seg_ordered_gate(seg_tag *t, frond_error *err) {
  int64_t now;
  if (!atomic_load(&t->ordered))
    return 0;
  now = boot_ns();
  if (t->own_until_ns > 0 && now >= t->own_until_ns) {
    lapse(t);
    frond_log(FROND_LOG_WARN,
              "segment: ordered tag \"%s\": the store has not confirmed "
              "this node's claim %lld in time: it issues nothing until it "
              "has",
              t->nm->name, (long long)t->own_epoch);
  }
  if (t->own_epoch == 0 && t->holder != NULL && now < t->holder_until_ns)
    return owned_elsewhere(t, err);
  return 0;
}

int frond__seg_ordered_check(seg_tag *t, frond_error *err) {
  if (!atomic_load(&t->ordered))
    return 0;
  if (t->own_until_ns > 0 && boot_ns() < t->own_until_ns)
    return 0;
  if (t->own_until_ns > 0)
    lapse(t);
  if (t->own_epoch == 0 && t->holder != NULL)
    return owned_elsewhere(t, err);
  return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE,
                     "tag \"%s\" is ordered, and this node's claim on it is "
                     "not confirmed by the store now (the IDs taken are "
                     "skipped)",
                     t->nm->name);
}

int64_t frond__seg_ordered_renew(frond_seg *s, frond_store *st) {
  frond__store_ordered_arg a;
  frond_error err;
  int64_t next = INT64_MAX, now, t0, lease = frond__seg_ordered_lease_ms(s);
  seg_tag *t;
  int rc;
  for (t = atomic_load(&s->hot); t != NULL; t = t->hot_next) {
    if (!atomic_load(&t->ordered))
      continue;
    memset(&a, 0, sizeof(a));
    pthread_mutex_lock(&t->mu);
    now = frond__mono_ns();
    if (t->own_epoch == 0 || t->own_until_ns == 0 || now < t->renew_at_ns) {
      if (t->own_epoch != 0 && t->own_until_ns != 0 && t->renew_at_ns < next)
        next = t->renew_at_ns;
      pthread_mutex_unlock(&t->mu);
      continue;
    }
    a.epoch = t->own_epoch;
    pthread_mutex_unlock(&t->mu);
    a.tag = t->nm->name;
    a.token = s->token;
    a.lease_ms = lease;
    err.code = 0;
    err.message[0] = '\0';
    t0 = boot_ns();
    rc = frond__store_ordered(st, FROND__STORE_ORDERED_RENEW, &a, &err);
    pthread_mutex_lock(&t->mu);
    if (t->own_epoch == a.epoch) { /* else a take moved on meanwhile */
      if (rc == 0) {
        if (deadline_of(s, t0) > t->own_until_ns)
          t->own_until_ns = deadline_of(s, t0);
        t->renew_at_ns = now + lease / 3 * 1000000;
      } else if (rc == FROND_ETAG_OWNER) {
        lapse(t);
        t->own_epoch = 0;
      } else {
        t->renew_at_ns = frond__mono_ns() + lease / 10 * 1000000;
      }
    }
    if (t->own_epoch != 0 && t->renew_at_ns < next)
      next = t->renew_at_ns;
    pthread_mutex_unlock(&t->mu);
    if (rc == FROND_ETAG_OWNER)
      frond_log(FROND_LOG_WARN,
                "segment: ordered tag \"%s\": owned by another node now "
                "(this node's claim %lld was taken over); this node "
                "forwards to it",
                a.tag, (long long)a.epoch);
    else if (rc != 0)
      frond_log(FROND_LOG_DEBUG,
                "segment: ordered tag \"%s\": renewing claim %lld: %s: %s",
                a.tag, (long long)a.epoch, frond_err_name(rc), err.message);
  }
  return next;
}

void frond__seg_ordered_release(frond_seg *s) {
  frond__store_ordered_arg a;
  frond_error err;
  seg_tag *t;
  int rc;
  for (t = atomic_load(&s->hot); t != NULL; t = t->hot_next) {
    memset(&a, 0, sizeof(a));
    pthread_mutex_lock(&t->mu);
    /* The claim this process holds, whatever the tag is recorded as now
    ** (a refresh leaves a tag created again unknown: not ordered). */
    a.epoch = t->own_epoch;
    t->own_epoch = 0;
    t->own_until_ns = 0;
    pthread_mutex_unlock(&t->mu);
    if (a.epoch == 0)
      continue;
    a.tag = t->nm->name;
    a.token = s->token;
    err.code = 0;
    err.message[0] = '\0';
    pthread_mutex_lock(&s->store_mu);
    rc = frond__store_ordered(s->store, FROND__STORE_ORDERED_RELEASE, &a, &err);
    pthread_mutex_unlock(&s->store_mu);
    if (rc != 0)
      frond_log(FROND_LOG_WARN,
                "segment: ordered tag \"%s\": releasing claim %lld failed "
                "(another node takes over once it expires): %s: %s",
                a.tag, (long long)a.epoch, frond_err_name(rc), err.message);
  }
}

/* The tag in use for name, or NULL (never looked up from the store). */
static seg_tag *in_use(frond_seg *s, const char *tag, size_t len) {
  seg_name *nm;
  if (len > FROND_TAG_MAX || (nm = frond__seg_find(s, tag, len)) == NULL)
    return NULL;
  return atomic_load(&nm->tag);
}

int frond__seg_ordered_owner(frond_seg *s, const char *tag, size_t len,
                             char *out, size_t cap) {
  seg_tag *t = in_use(s, tag, len);
  int rc = -1;
  if (t == NULL)
    return -1;
  pthread_mutex_lock(&t->mu);
  if (atomic_load(&t->ordered) && t->own_epoch == 0 && t->holder != NULL &&
      t->holder[0] != '\0' && strlen(t->holder) < cap) {
    memcpy(out, t->holder, strlen(t->holder) + 1);
    rc = 0;
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

void frond__seg_ordered_forget(frond_seg *s, const char *tag, size_t len) {
  seg_tag *t = in_use(s, tag, len);
  int64_t soon;
  if (t == NULL)
    return;
  soon = boot_ns() + frond__seg_ordered_lease_ms(s) / 10 * 1000000;
  pthread_mutex_lock(&t->mu);
  /* Within a tenth of a lease (one load at a time asks); the claim as
  ** seen stays, and its age counts on. */
  if (t->holder_until_ns > soon)
    t->holder_until_ns = soon;
  pthread_mutex_unlock(&t->mu);
}
