/* SPDX-License-Identifier: Apache-2.0 */
/*
** ready.c -- readiness per kind of ID (see ready.h).
**
** This file contains the verdict (a pure function of the facts), the facts
** read from a running server, /readyz's body and the frond_ready families.
**
** Snowflake IDs are ready while the generator may issue now: the node ID
** held, the durable fence at or above the next unit it may issue (the
** clock's, or past what a busy node borrowed ahead), the clock not behind
** the IDs. Every fence write, the report's included, asks for now +
** max_ahead + window, so busy and idle nodes' fences stay ahead of the
** clock. A node whose coordinator does not answer (or hangs) goes on
** issuing up to its fence and stays ready until it reaches it (docs/coordinators.md, "How long can the
** coordinator be down?"); only then, or once its claim may be gone (the
** session or lease not renewed in time), is it not ready, and the reason
** says which. Segment IDs are ready while the store answers.
**
** /readyz without a kind is 200 only when every configured kind is ready,
** and answers one line, as it always did: a load balancer that sends both kinds to a node must
** not send a snowflake request to a node that would refuse it. A load
** balancer that routes one kind asks /readyz?kind=snowflake|segment.
*/
#include "server/ready.h"

#include "base/base.h"
#include "coord/coord.h"
#include "core/core.h"
#include "server/buf.h"
#include "server/server.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const LABELS[] = {
#define XX(name, label, text) label,
    FROND__READY_MAP(XX)
#undef XX
};
static const char *const TEXTS[] = {
#define XX(name, label, text) text,
    FROND__READY_MAP(XX)
#undef XX
};
static const char *const KINDS[FROND__KINDS] = {"snowflake", "segment"};

/* The reasons each kind can have, in the order metrics list them. */
static const frond__ready_reason SF_REASONS[] = {FROND__READY_OK,
                                                 FROND__READY_DRAINING,
                                                 FROND__READY_NODE_NOT_HELD,
                                                 FROND__READY_FENCE_REACHED,
                                                 FROND__READY_COORD_NOT_REACHED,
                                                 FROND__READY_LAYOUT_CHANGED,
                                                 FROND__READY_CLOCK_BEHIND,
                                                 FROND__READY_COORD_UNCHECKED};
static const frond__ready_reason SEG_REASONS[] = {
    FROND__READY_OK, FROND__READY_DRAINING, FROND__READY_STORE_NOT_REACHED,
    FROND__READY_STORE_REFUSING, FROND__READY_NO_STORE};

const char *frond__ready_label(frond__ready_reason r) {
  return r >= 0 && r < FROND__READY_REASONS ? LABELS[r] : "unknown";
}

const char *frond__ready_text(frond__ready_reason r) {
  return r >= 0 && r < FROND__READY_REASONS ? TEXTS[r] : "unknown";
}

const char *frond__ready_kind_name(int kind) {
  return kind >= 0 && kind < FROND__KINDS ? KINDS[kind] : "unknown";
}

int frond__ready_kind_parse(const char *s, size_t len) {
  int k;
  for (k = 0; k < FROND__KINDS; k++)
    if (strlen(KINDS[k]) == len && memcmp(KINDS[k], s, len) == 0)
      return k;
  return -1;
}

int64_t frond__ready_next_unit_ms(const frond__ready_facts *f) {
  int64_t unit = f->unit_ms > 0 ? f->unit_ms : 1;
  int64_t now = f->now_ms - f->epoch_ms;
  int64_t at = f->epoch_ms + (now >= 0 ? now - now % unit : 0);
  /* A node that borrowed ahead of the clock (up to max_ahead) goes on
  ** above its last unit: counted as spent, so that a busy node is not
  ** ready one unit early rather than one unit late. */
  if (f->high_water_ms >= at)
    at = f->high_water_ms + unit;
  return at;
}

static frond__ready_reason snowflake(const frond__ready_facts *f) {
  /* Above another holder's fence (a regain, a takeover): NODE_ID_LOST
  ** until the wall clock comes within max_ahead of it, as
  ** frond__coord_blocking says; that wait is the clock's. */
  int waits_for_clock = !f->coord_lost && !f->validity_expired &&
                        f->resume_after_ms != 0 &&
                        f->now_ms + f->max_ahead_ms <= f->resume_after_ms;
  if (f->draining)
    return FROND__READY_DRAINING;
  switch (f->coord_state) {
  case 0:
    break;
  case FROND_ELAYOUT_MISMATCH:
    return FROND__READY_LAYOUT_CHANGED;
  case FROND_ECOORD:
    return FROND__READY_COORD_NOT_REACHED;
  case FROND_ECLOSED:
    return FROND__READY_DRAINING;
  case FROND_ENODE_ID_LOST:
    return waits_for_clock ? FROND__READY_CLOCK_BEHIND
                           : FROND__READY_NODE_NOT_HELD;
  default:
    return FROND__READY_NODE_NOT_HELD;
  }
  /* What the generator would do now, whether or not a fence write is in
  ** flight (a hung coordinator call finishes late, if ever): stopped once
  ** the durable fence is below the next unit it may issue. */
  /* The coordinator's own reasons first: a start from the node cache is
  ** not checked either, and is told as not reached. */
  if (f->coord_unchecked)
    return FROND__READY_COORD_UNCHECKED;
  if (f->fenced && f->fence_ms != INT64_MAX &&
      frond__ready_next_unit_ms(f) > f->fence_ms)
    return FROND__READY_FENCE_REACHED;
  if (f->high_water_ms > f->now_ms + f->max_ahead_ms)
    return FROND__READY_CLOCK_BEHIND;
  return FROND__READY_OK;
}

static frond__ready_reason segment(const frond__ready_facts *f) {
  if (f->draining)
    return FROND__READY_DRAINING;
  if (!f->seg_enabled)
    return FROND__READY_NO_STORE;
  if (!f->seg_open && f->store_refusing != 0)
    return FROND__READY_STORE_REFUSING;
  if (!f->seg_open || !f->store_ok)
    return FROND__READY_STORE_NOT_REACHED;
  return FROND__READY_OK;
}

void frond__ready_eval(const frond__ready_facts *f,
                       frond__ready_reason out[FROND__KINDS]) {
  out[FROND__KIND_SNOWFLAKE] = snowflake(f);
  out[FROND__KIND_SEGMENT] = segment(f);
}

int frond__ready_all(const frond__ready_reason r[FROND__KINDS]) {
  return r[FROND__KIND_SNOWFLAKE] == FROND__READY_OK &&
         (r[FROND__KIND_SEGMENT] == FROND__READY_OK ||
          r[FROND__KIND_SEGMENT] == FROND__READY_NO_STORE);
}

/* Whole seconds, rounded up, of a span in ms (never below 0). */
static long long secs(int64_t ms) {
  return ms <= 0 ? 0 : (long long)((ms + 999) / 1000);
}

void frond__ready_describe(const frond__ready_facts *f, int kind,
                           frond__ready_reason r, char *out, size_t cap) {
  char more[200] = "";
  int64_t quiet = f->last_write_ms > 0 ? f->now_ms - f->last_write_ms : 0;
  switch (r) {
  case FROND__READY_OK:
    /* Riding out an outage: say so, and for how long at most. */
    if (kind == FROND__KIND_SNOWFLAKE && f->fenced && f->coord_error != 0 &&
        f->fence_ms != INT64_MAX)
      snprintf(more, sizeof more,
               "coordinator not reached for %llds; issuing up to its fence, "
               "%llds left",
               secs(quiet), secs(f->fence_ms - f->now_ms));
    break;
  case FROND__READY_NODE_NOT_HELD:
    if (f->coord_lost)
      snprintf(more, sizeof more,
               "the coordinator gave it to another holder "
               "or lost it; taking it back");
    else if (f->validity_expired)
      snprintf(more, sizeof more,
               "coordinator not reached for %llds, longer than the %lld ms "
               "its claim is sure for; taking it back once it answers",
               secs(quiet), (long long)f->validity_ms);
    break;
  case FROND__READY_FENCE_REACHED:
    snprintf(more, sizeof more,
             "for %llds; window_ms %lld used up, issuing again once it "
             "confirms one",
             secs(quiet), (long long)f->window_ms);
    break;
  case FROND__READY_CLOCK_BEHIND:
    snprintf(
        more, sizeof more,
        "the wall clock is %lld ms behind what this node ID issued",
        (long long)((f->resume_after_ms > f->high_water_ms ? f->resume_after_ms
                                                           : f->high_water_ms) -
                    f->now_ms));
    break;
  case FROND__READY_STORE_REFUSING:
    snprintf(more, sizeof more, "%s; retrying",
             frond_err_name(f->store_refusing));
    break;
  case FROND__READY_NO_STORE:
    snprintf(more, sizeof more, "store = none");
    break;
  default:
    break;
  }
  snprintf(out, cap, "%s%s%s%s%s",
           r == FROND__READY_OK ? "" : "not ready: ", frond__ready_text(r),
           more[0] ? " (" : "", more, more[0] ? ")" : "");
}

void frond__ready_facts_get(frond__server *srv, frond__ready_facts *f) {
  frond_seg *seg = atomic_load(&srv->seg);
  memset(f, 0, sizeof *f);
  f->now_ms = frond_clock_realtime(NULL);
  f->draining = atomic_load(&srv->draining) != 0;
  f->fence_ms = INT64_MAX;
  f->max_ahead_ms = srv->cfg.max_ahead_ms;
  f->unit_ms = srv->layout.unit_ms;
  f->epoch_ms = srv->layout.epoch_ms;
  if (srv->gen != NULL)
    f->high_water_ms = frond_gen_high_water_ms(srv->gen);
  f->coord_unchecked = atomic_load(&srv->coord_unchecked) != 0;
  if (srv->coord != NULL) {
    frond_coord *c = srv->coord;
    int64_t until = atomic_load(&c->valid_until_ns);
    f->fenced = c->m->bFenced;
    f->coord_state = frond_coord_state(c);
    f->coord_lost = atomic_load(&c->lost) != 0;
    f->validity_expired = until != 0 && frond__mono_ns() > until;
    f->coord_error = atomic_load(&c->last_error);
    {
      /* now_ms less the write's age by the monotonic clock: a wall clock
      ** stepped since the write moves neither the age nor the text. */
      int64_t mono = atomic_load(&c->last_write_mono_ms);
      f->last_write_ms =
          mono > 0 ? f->now_ms - (frond__mono_ns() / 1000000 - mono) : 0;
    }
    f->fence_ms = atomic_load(&c->durable_ms);
    f->window_ms = c->t.window_ms;
    f->validity_ms = atomic_load(&c->validity_ms);
    f->resume_after_ms = atomic_load(&c->resume_after_ms);
  }
  f->seg_enabled = srv->seg_enabled;
  f->seg_open = seg != NULL;
  if (seg != NULL) {
    frond_seg_stats ss;
    frond_seg_stats_get(seg, &ss);
    f->store_ok = ss.store_ok;
  }
  f->store_refusing = atomic_load(&srv->store_refusing);
}

void frond__ready_summary(const frond__ready_facts *f,
                          const frond__ready_reason r[FROND__KINDS], char *out,
                          size_t cap) {
  const char *sep = "not ready: ";
  size_t n = 0;
  int k;
  if (frond__ready_all(r) && !f->draining) {
    snprintf(out, cap, "ready");
    return;
  }
  if (f->draining) {
    snprintf(out, cap, "draining");
    return;
  }
  out[0] = '\0';
  for (k = 0; k < FROND__KINDS && n < cap; k++) {
    int w;
    if (r[k] == FROND__READY_OK || r[k] == FROND__READY_NO_STORE)
      continue;
    w = snprintf(out + n, cap - n, "%s%s", sep, frond__ready_text(r[k]));
    n += w > 0 ? (size_t)w : 0;
    sep = "; ";
  }
}

int frond__ready_body(frond__server *srv, int kind, frond__buf *b) {
  frond__ready_facts f;
  frond__ready_reason r[FROND__KINDS];
  char line[400], first[400];
  int ok;
  frond__ready_facts_get(srv, &f);
  frond__ready_eval(&f, r);
  if (kind >= 0) {
    ok = r[kind] == FROND__READY_OK;
    frond__ready_describe(&f, kind, r[kind], line, sizeof line);
    frond__buf_printf(
        b, "%s%s\n%s: %s\n", ok || f.draining ? "" : "not ready: ",
        ok ? "ready" : frond__ready_text(r[kind]), KINDS[kind], line);
    return ok ? 200 : 503;
  }
  ok = frond__ready_all(r) && !f.draining;
  /* One line, as /readyz always answered it ("ready\n", "draining\n",
  ** "not ready: <reason>\n"): checks that compare the body go on working.
  ** Each kind's detail is in ?kind=, the status page, INFO and /metrics. */
  frond__ready_summary(&f, r, first, sizeof first);
  frond__buf_printf(b, "%s\n", first);
  return ok ? 200 : 503;
}

static void reasons(frond__buf *b, int kind, frond__ready_reason now,
                    const frond__ready_reason *set, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    frond__buf_printf(b, "frond_ready_reason{kind=\"%s\",reason=\"%s\"} %d\n",
                      KINDS[kind], LABELS[set[i]], set[i] == now);
}

void frond__ready_metrics(frond__server *srv, frond__buf *b) {
  frond__ready_facts f;
  frond__ready_reason r[FROND__KINDS];
  frond__ready_facts_get(srv, &f);
  frond__ready_eval(&f, r);
  /* frond_ready is what /readyz answers, one series as before (an alert
  ** on frond_ready == 0 fires once per instance); each kind has its own
  ** family, frond_ready_kind. A kind that is not configured (segment with
  ** store = none) has no series there. */
  frond__buf_printf(b,
                    "# HELP frond_ready 1 when /readyz answers 200.\n"
                    "# TYPE frond_ready gauge\n"
                    "frond_ready %d\n"
                    "# HELP frond_ready_kind 1 when /readyz?kind=<kind> "
                    "answers 200.\n"
                    "# TYPE frond_ready_kind gauge\n"
                    "frond_ready_kind{kind=\"snowflake\"} %d\n",
                    frond__ready_all(r) && !f.draining,
                    r[FROND__KIND_SNOWFLAKE] == FROND__READY_OK);
  if (f.seg_enabled)
    frond__buf_printf(b, "frond_ready_kind{kind=\"segment\"} %d\n",
                      r[FROND__KIND_SEGMENT] == FROND__READY_OK);
  frond__buf_printf(b, "# HELP frond_ready_reason Why each kind of ID is or "
                       "is not ready: 1 for the reason that holds now.\n"
                       "# TYPE frond_ready_reason gauge\n");
  reasons(b, FROND__KIND_SNOWFLAKE, r[FROND__KIND_SNOWFLAKE], SF_REASONS,
          FROND__ARRAY_SIZE(SF_REASONS));
  reasons(b, FROND__KIND_SEGMENT, r[FROND__KIND_SEGMENT], SEG_REASONS,
          FROND__ARRAY_SIZE(SEG_REASONS));
}
