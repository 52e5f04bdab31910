/* SPDX-License-Identifier: Apache-2.0 */
/*
** snowflake_start.c -- creating a snowflake generator, where it starts
** (after the high-water record, above a coordinator's earlier holders,
** within the start slack), and closing it with its exact high water.
*/
#include "core/snowflake.h"

#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

void frond_gen_options_init(frond_gen_options *opts) {
  memset(opts, 0, sizeof(*opts));
  opts->max_ahead_ms = FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS;
  opts->max_wait_ms = -1;
  opts->window_ms = FROND_SNOWFLAKE_DEFAULT_WINDOW_MS;
  opts->seq_start = FROND_SEQ_ZERO;
  opts->sleep_ms = FROND_SNOWFLAKE_DEFAULT_SLEEP_MS;
}

int64_t frond__start_slack_ms(int64_t max_ahead_ms, int64_t window_ms,
                              int64_t max_wait_ms) {
  /* A holder issues up to max_ahead in front of its clock, makes durable
  ** up to a window beyond that, and a call may wait max_wait on top. */
  return max_ahead_ms + window_ms + max_wait_ms;
}

/* Where to start after the high-water record `rec`: above the largest ID
** the record's layout could have issued (frond__hw_first_after). When the
** layout changed and that start lies beyond what a restart waits for, or
** beyond the layout's end, refuse here, naming both layouts; the clock rule
** for the rest is wait_for_start's. */
static int start_after_record(frond_gen *g, const frond__hw_record *rec,
                              int64_t now, uint64_t *start, frond_error *err) {
  const char *path = g->opt.high_water_path;
  frond_error e = {0, ""};
  char was[40], need[40];
  int64_t last_id, u;
  int rc = frond__hw_first_after(rec, &g->layout, g->node, start, &last_id, &e);
  if (rc != 0)
    return frond__fail(err, rc, "%s: %s", path, e.message);
  *start = value_of_packed(g, *start);
  if (strcmp(rec->layout, g->spec) == 0)
    return 0;
  u = units_of_value(g, *start);
  frond__format_rfc3339(rec->time_ms, was, sizeof(was));
  if (!g->opt.layout_change) {
    frond_layout old;
    char cost[300], a[160], b[160];
    /* The record's layout parsed already in frond__hw_first_after. */
    if (frond_layout_parse(rec->layout, &old, NULL) != 0)
      old = g->layout;
    frond__layout_label(&old, a, sizeof(a));
    frond__layout_label(&g->layout, b, sizeof(b));
    if (u > g->tmax || ms_of(g, u) - now > g->slack_ms)
      snprintf(cost, sizeof(cost),
               "the new one could not start here now "
               "anyway");
    else
      frond__layout_lockout_text(&old, &g->layout, now, cost, sizeof(cost));
    return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                       "%s records layout '%s' (IDs up to %" PRId64
                       "); this run's is '%s'. Switching records the new one "
                       "there: %s. Use '%s', or ask for the switch with "
                       "--layout-change",
                       path, a, last_id, b, cost, a);
  }
  if (u > g->tmax)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "%s: written under layout '%s' up to ID %" PRId64
                       " (%s); layout '%s' has no ID above it for node %" PRIu64
                       ": keep the old layout",
                       path, rec->layout, last_id, was, g->spec, g->node);
  if (ms_of(g, u) - now > g->slack_ms) {
    frond__format_rfc3339(ms_of(g, u), need, sizeof(need));
    return frond__fail(
        err, FROND_ELAYOUT_INVALID,
        "%s: written under layout '%s' up to ID %" PRId64
        " (%s); layout '%s' passes that ID only from %s, %" PRId64
        " ms ahead of the clock (a restart waits at most %" PRId64
        " ms): keep the old layout or choose one whose IDs are "
        "above it now",
        path, rec->layout, last_id, was, g->spec, need, ms_of(g, u) - now,
        g->slack_ms);
  }
  {
    frond_layout old;
    char cost[400] = "";
    if (frond_layout_parse(rec->layout, &old, NULL) == 0)
      frond__layout_lockout_text(&old, &g->layout, now, cost, sizeof(cost));
    frond_log(FROND_LOG_WARN,
              "%s: written under layout '%s' up to ID %" PRId64
              "; starting under layout '%s' above it, as asked: %s",
              path, rec->layout, last_id, g->spec, cost);
  }
  return 0;
}

atomic_int frond__start_interrupted;

/* Before issuing anything, wait for the wall clock to come within max_ahead
** of `start`; refuse when it is further behind than a crash can explain
** (the start slack), and give up when the start is interrupted. */
static int wait_for_start(frond_gen *g, uint64_t start, const char *source,
                          frond_error *err) {
  int64_t start_ms = ms_of(g, units_of_value(g, start));
  int64_t now = clock_now(g);
  int64_t deadline;
  if (start_ms - now > g->slack_ms) {
    char a[40], b[40];
    frond__format_rfc3339(start_ms, a, sizeof(a));
    frond__format_rfc3339(now, b, sizeof(b));
    return frond__fail(err, FROND_ECLOCK_BEHIND,
                       "high-water time %s (%s) is %" PRId64 " ms ahead of "
                       "the clock %s, more than a crash explains (%" PRId64
                       " ms): the clock went back across the restart",
                       a, source, start_ms - now, b, g->slack_ms);
  }
  deadline = frond__mono_ns() + (g->slack_ms + 1000) * 1000000;
  /* Up to window_ms after a crash: said, so that a start that seems to
  ** hang is explained. */
  if (start_ms - now - g->opt.max_ahead_ms > 1000)
    frond_log(FROND_LOG_INFO,
              "waiting %" PRId64 " ms for the clock to reach the high-water "
              "time (%s)",
              start_ms - now - g->opt.max_ahead_ms, source);
  while (start_ms - now > g->opt.max_ahead_ms) {
    if (atomic_load(&frond__start_interrupted))
      return frond__fail(err, FROND_ECLOSED,
                         "stopped while waiting %" PRId64 " ms more for the "
                         "clock to reach the high-water time (%s)",
                         start_ms - now - g->opt.max_ahead_ms, source);
    if (frond__mono_ns() > deadline)
      return frond__fail(err, FROND_ECLOCK_BEHIND,
                         "the clock did not reach the high-water time (%s) "
                         "in time",
                         source);
    frond__sleep_ns((start_ms - now - g->opt.max_ahead_ms > 10 ? 10 : 1) *
                    1000000);
    now = clock_now(g);
  }
  return 0;
}

static int init_options(frond_gen *g, const frond_layout *l,
                        const frond_gen_options *opts,
                        const frond__gen_fence *f, frond_error *err) {
  int64_t window;
  if (opts != NULL)
    g->opt = *opts;
  else
    frond_gen_options_init(&g->opt);
  if (g->opt.clock == NULL)
    g->opt.clock = frond_clock_realtime;
  if (g->opt.max_wait_ms == -1) {
    g->opt.max_wait_ms = FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS;
    if (l->unit_ms >= 1 && l->unit_ms <= 86400000 &&
        2 * l->unit_ms > g->opt.max_wait_ms)
      g->opt.max_wait_ms = 2 * l->unit_ms;
  }
  if (g->opt.max_ahead_ms < 0 || g->opt.max_wait_ms < 0 ||
      g->opt.window_ms < 1 || g->opt.max_wait_ms > 3600000 ||
      g->opt.max_ahead_ms > 86400000 || g->opt.window_ms > 86400000 ||
      g->opt.sleep_ms < 0 || g->opt.sleep_ms > 86400000 ||
      (f != NULL && (f->window_ms < 0 || f->window_ms > 86400000)))
    return frond__fail(err, FROND_EINVAL,
                       "max_ahead_ms (0..86400000), max_wait_ms (0..3600000), "
                       "window_ms (1..86400000) or sleep_ms (0..86400000) out "
                       "of range");
  window = g->opt.window_ms;
  if (f != NULL && f->window_ms > window)
    window = f->window_ms;
  g->slack_ms =
      frond__start_slack_ms(g->opt.max_ahead_ms, window, g->opt.max_wait_ms);
  return 0;
}

/* Read the high-water file and move *start above its record. */
static int start_from_file(frond_gen *g, int64_t now, uint64_t *start,
                           const char **source, frond_error *err) {
  frond__hw_record rec;
  uint64_t s;
  int rc;
  if ((rc = frond__hw_open(&g->hw, g->opt.high_water_path, err)) != 0)
    return rc;
  rc = frond__hw_read(g->hw, &rec, err);
  if (rc != 0)
    return rc < 0 ? rc : 0; /* 1: no file, a first start */
  if (rec.node != g->node)
    return frond__fail(err, FROND_EINVAL,
                       "%s belongs to node %" PRIu64 ", not %" PRIu64,
                       g->opt.high_water_path, rec.node, g->node);
  if ((rc = start_after_record(g, &rec, now, &s, err)) != 0)
    return rc;
  if (s > *start) {
    *start = s;
    *source = g->opt.high_water_path;
  }
  return 0;
}

static int gen_init(frond_gen *g, const frond_layout *l, uint64_t node,
                    const frond_gen_options *opts, const frond__gen_fence *f,
                    frond_error *err) {
  int64_t now, wall, after;
  uint64_t start, max_count;
  const char *source = NULL;
  int rc;
  if ((rc = init_options(g, l, opts, f, err)) != 0)
    return rc;
  now = clock_now(g);
  if ((rc = frond_layout_validate(l, now, err)) != 0)
    return rc;
  g->layout = *l;
  frond_layout_format(l, g->spec, sizeof(g->spec));
  if (node > frond_layout_max_node(l))
    return frond__fail(err, FROND_ENODE_RANGE,
                       "node ID %" PRIu64
                       " is above the layout's maximum %" PRIu64
                       " (%u node bits)",
                       node, frond_layout_max_node(l), l->node_bits);
  g->node = node;
  g->seq_bits = l->seq_bits;
  g->seq_mask = (UINT64_C(1) << l->seq_bits) - 1;
  g->time_shift = l->seq_bits + l->node_bits;
  g->node_part = node << l->seq_bits;
  g->compat_bits = g->time_shift;
  g->compat_mask = (UINT64_C(1) << g->time_shift) - 1;
  /* 2^seq_bits * 1000, at most 2^48 (past any array a caller can pass). */
  max_count = l->seq_bits > 38 ? UINT64_C(1) << 48 : (g->seq_mask + 1) * 1000;
  g->max_count = max_count > SIZE_MAX ? SIZE_MAX : max_count;
  g->tmax = (INT64_C(1) << l->time_bits) - 1;
  if (l->time_bits + g->time_shift == 63) {
    /* The value past the last unit is the seal bit: leave headroom. */
    uint64_t unit = UINT64_C(1) << g->time_shift, gap = unit - g->seq_mask - 1;
    if (gap < FROND__GEN_HEADROOM)
      g->tmax -= (int64_t)((FROND__GEN_HEADROOM - gap + unit - 1) / unit);
  }
  g->ahead_units = g->opt.max_ahead_ms / l->unit_ms;
  g->period_ns = l->unit_ms >= 100 ? 10000000 : 1000000;
  g->sleep_ns = g->opt.sleep_ms * 1000000;
  g->rng = (uint64_t)frond__mono_ns() * UINT64_C(0x9e3779b97f4a7c15) | 1;
  g->reserved_units = g->tmax;
  g->fence_units = g->tmax;
  atomic_store(&g->fence_ms, INT64_MAX);
  if (f != NULL) {
    atomic_store(&g->fence_ms, f->fence_ms);
    g->fence_units = fence_units_of(g, f->fence_ms);
    g->want = f->want;
    g->want_ctx = f->ctx;
  }

  wall = units_of(g, now);
  if (wall > g->tmax)
    return frond__gen_exhausted(g, err);
  start = unit_value(g, wall < 0 ? 0 : wall);
  if (g->opt.high_water_path != NULL &&
      (rc = start_from_file(g, now, &start, &source, err)) != 0)
    return rc;
  after = f != NULL ? f->start_after_ms : 0;
  if (after > 0 && value_after(g, after) > start) {
    start = value_after(g, after);
    source = "the coordinator";
  }
  /* Past the last unit's sequence: no ID left (value_after's clamp). */
  if (start >= value_end(g))
    return frond__gen_exhausted(g, err);
  if (source != NULL && (rc = wait_for_start(g, start, source, err)) != 0)
    return rc;
  now = clock_now(g);
  wall = units_of(g, now);
  if (wall > units_of_value(g, start))
    start = unit_value(g, wall);
  atomic_store(&g->state, start);
  g->cap = start; /* publish_limit keeps the hot path in its unit */
  g->seen_units = units_of_value(g, start);

  if (g->hw != NULL) {
    /* Reserve before the first ID: nothing is issued above a durable
    ** reservation, not even in the first window. */
    g->reserved_units = units_of_value(g, start) - 1;
    pthread_mutex_lock(&g->mu);
    rc = frond__gen_extend_reservation(g, now, err);
    pthread_mutex_unlock(&g->mu);
    if (rc != 0)
      return rc;
  }
  pthread_mutex_lock(&g->mu);
  publish_limit(g, now);
  pthread_mutex_unlock(&g->mu);
  return 0;
}

int frond__gen_create_fenced(frond_gen **out, const frond_layout *l,
                             uint64_t node, const frond_gen_options *opts,
                             const frond__gen_fence *f, frond_error *err) {
  frond_gen *g;
  int rc;
  if (out == NULL || l == NULL)
    return frond__fail(err, FROND_EINVAL, "out and layout must not be NULL");
  if (posix_memalign((void **)&g, CACHE_LINE, sizeof(*g)) != 0)
    return frond__fail(err, FROND_ENOMEM, NULL);
  memset(g, 0, sizeof(*g));
  g->serial = frond__serial();
  frond__fork_arm(&g->fork);
  g->pid = (long)getpid();
  pthread_mutex_init(&g->mu, NULL);
  frond__cond_init(&g->cv);
  rc = gen_init(g, l, node, opts, f, err);
  if (rc == 0 && pthread_create(&g->thread, NULL, frond__gen_ticker, g) != 0)
    rc = frond__fail(err, FROND_ENOMEM, "cannot start the clock thread");
  if (rc != 0) {
    frond__hw_close(g->hw);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
    return rc;
  }
  *out = g;
  return 0;
}

int frond_gen_create(frond_gen **out, const frond_layout *l, uint64_t node,
                     const frond_gen_options *opts, frond_error *err) {
  return frond__gen_create_fenced(out, l, node, opts, NULL, err);
}

int frond_gen_close(frond_gen *g, frond_error *err) {
  int rc = 0;
  if (g == NULL)
    return 0;
  if (gen_forked(g)) {
    /* The parent's: its thread, its lock (perhaps held at the fork), its
    ** record. Close the child's copy of the lock file's descriptor (the
    ** parent's keeps the lock) and free the memory. */
    frond__hw_close(g->hw);
    free(g);
    return 0;
  }
  pthread_mutex_lock(&g->mu);
  g->stop = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  pthread_join(g->thread, NULL);
  if (g->hw != NULL) {
    /* state - 1 is at or above every value handed out; no value above the
    ** reservation was ever handed out. */
    uint64_t last = (atomic_load(&g->state) & ~FROND__GEN_SEALED) - 1;
    frond__hw_record rec;
    if (units_of_value(g, last) > g->reserved_units)
      last = unit_value(g, g->reserved_units) | g->seq_mask;
    hw_record(g, units_of_value(g, last), value_seq(g, last), 1, &rec);
    rc = frond__hw_write(g->hw, &rec, err);
    frond__hw_close(g->hw);
  }
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
  free(g);
  return rc;
}

const frond_layout *frond_gen_layout(const frond_gen *g) {
  return &g->layout;
}

uint64_t frond_gen_node(const frond_gen *g) {
  return g->node;
}
