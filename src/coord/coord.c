/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord.c -- coordinators: open, acquire, close, and the public API.
**
** This file contains what every coordinator does the same way: choosing a
** driver by URI, the default identity, and the start of a node (the
** helpers drivers call themselves are in coord_common.c, below them):
**
**   acquire   take a node ID (driver), check its range, the layout the
**             fleet records, the stored fence against the clock (one slack
**             rule with the generator: frond__start_slack_ms) and the clock
**             against the fleet's; then make the first fence durable, the
**             cache file first;
**   create    the generator, above every earlier holder's fence and the
**             layout floor, stopping at the new fence;
**   attach    the fencer and the watchdog (coord_fence.c);
**   close     block the generator, store its exact high-water time as the
**             final fence, give the ID up, close the generator.
**
** The fleet's layout, read and changed, is coord_layout.c's.
*/
#include "coord/coord.h"
#include "coord/coord_etcd.h"
#include "core/core.h"
#include "core/high_water.h"
#include "base/file.h"
#include "store/db.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void frond_coord_options_init(frond_coord_options *o) {
  memset(o, 0, sizeof(*o));
  o->port = 8080;
  o->window_ms = FROND_COORD_DEFAULT_WINDOW_MS;
  o->max_clock_offset_ms = FROND_COORD_DEFAULT_MAX_CLOCK_OFFSET_MS;
}

/* ---- identity ----------------------------------------------------------- */

void frond__coord_default_ip(char *buf, size_t len) {
  struct ifaddrs *ifa = NULL, *i;
  snprintf(buf, len, "127.0.0.1");
  if (getifaddrs(&ifa) != 0)
    return;
  for (i = ifa; i; i = i->ifa_next) {
    struct sockaddr_in *sin;
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
      continue;
    sin = (struct sockaddr_in *)(void *)i->ifa_addr;
    if ((ntohl(sin->sin_addr.s_addr) >> 24) == 127)
      continue;
    inet_ntop(AF_INET, &sin->sin_addr, buf, (socklen_t)len);
    break;
  }
  freeifaddrs(ifa);
}

/* ---- open --------------------------------------------------------------- */

static const frond_coord_methods *const drivers[] = {
    &frond__coord_static_methods,
#ifdef FROND_WITH_ZK
    &frond__coord_zk_methods,
#endif
#ifdef FROND_WITH_ETCD
    &frond__coord_etcd_methods,
#endif
    &frond__coord_lease_methods,
};

/* Coordinators (or their databases) this build leaves out, so that their
** URIs say why they fail; looked at before the drivers. */
static const struct {
  const char *scheme, *missing;
} left_out[] = {
#ifndef FROND_WITH_ZK
    {"zk://", "ZooKeeper support (FROND_WITH_ZK=OFF)"},
#endif
#ifndef FROND_WITH_ETCD
    {"etcd://", "etcd support (FROND_WITH_ETCD=OFF)"},
#endif
#ifndef FROND_WITH_PG
    {"lease+postgresql:", "PostgreSQL support (FROND_WITH_PG=OFF)"},
    {"lease+postgres:", "PostgreSQL support (FROND_WITH_PG=OFF)"},
#endif
#ifndef FROND_WITH_MYSQL
    {"lease+mysql:", "MySQL/MariaDB support (FROND_WITH_MYSQL=OFF)"},
    {"lease+mariadb:", "MySQL/MariaDB support (FROND_WITH_MYSQL=OFF)"},
#endif
    {NULL, NULL},
};

static void free_coord(frond_coord *c) {
  pthread_mutex_destroy(&c->lock);
  pthread_mutex_destroy(&c->stats_lock);
  pthread_mutex_destroy(&c->wake_lock);
  pthread_cond_destroy(&c->wake);
  free(c);
}

int frond__coord_open_driver(frond_coord **out, const frond_coord_methods *m,
                             const char *uri, const frond_coord_options *opts,
                             frond_error *err) {
  frond_coord_options o;
  frond_coord *c;
  char ip[64];
  int rc;

  *out = NULL;
  if (opts)
    o = *opts;
  else
    frond_coord_options_init(&o);
  if (o.advertise && (rc = frond__coord_check_advertise(o.advertise, err)))
    return rc;
  if (!o.advertise && (o.port < 1 || o.port > 65535))
    return frond__fail(err, FROND_EINVAL, "port %d is not in 1..65535", o.port);
  if (o.window_ms < 10 || o.window_ms > 3600000 || o.max_clock_offset_ms < 0)
    return frond__fail(err, FROND_EINVAL,
                       "window_ms (10..3600000) or max_clock_offset_ms (>= 0) "
                       "out of range");
  if (o.cache_dir && strlen(o.cache_dir) >= sizeof(c->cache_dir) - 200)
    return frond__fail(err, FROND_EINVAL, "cache directory path too long");
  if (!(c = calloc(1, sizeof(*c))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  c->m = m;
  c->t.report_ms = FROND_COORD_DEFAULT_REPORT_MS;
  c->t.session_ms = FROND_COORD_DEFAULT_SESSION_MS;
  c->t.connect_ms = FROND_COORD_DEFAULT_CONNECT_MS;
  c->t.lease_ms = FROND_COORD_DEFAULT_LEASE_MS;
  c->t.node = -1;
  c->t.nodes_lo = c->t.nodes_hi = c->t.datacenter = -1;
  c->pid = (long)getpid();
  frond__fork_arm(&c->fork);
  c->t.window_ms = o.window_ms;
  c->t.max_clock_offset_ms = o.max_clock_offset_ms;
  c->clock = o.clock ? o.clock : frond_clock_realtime;
  c->clock_ctx = o.clock_ctx;
  /* Kept for messages and the cache file only (the driver reads uri):
  ** without the secrets it may hold (an etcd password=, a database's). */
  frond__uri_redact(uri, strlen(uri), c->uri, sizeof(c->uri));
  if (o.advertise) {
    snprintf(c->owner, sizeof(c->owner), "%s", o.advertise);
  } else {
    frond__coord_default_ip(ip, sizeof(ip));
    snprintf(c->owner, sizeof(c->owner), "%s:%d", ip, o.port);
  }
  if (o.cache_dir)
    snprintf(c->cache_dir, sizeof(c->cache_dir), "%s", o.cache_dir);
  c->max_node = (UINT64_C(1) << 10) - 1;
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_init(&c->stats_lock, NULL);
  pthread_mutex_init(&c->wake_lock, NULL);
  frond__cond_init(&c->wake);
  atomic_init(&c->durable_ms, INT64_MAX);

  rc = m->xOpen(c, uri, err);
  /* Unreachable is not fatal here: acquire may still use the cache. */
  if (rc != 0 && !(rc == FROND_ECOORD && m->bCacheFallback)) {
    if (c->impl)
      m->xClose(c);
    free_coord(c);
    return rc;
  }
  *out = c;
  return 0;
}

int frond_coord_open(frond_coord **out, const char *uri,
                     const frond_coord_options *opts, frond_error *err) {
  const frond_coord_methods *m = NULL;
  if (out == NULL)
    return frond__fail(err, FROND_EINVAL, "out must not be NULL");
  *out = NULL;
  if (!uri || !*uri)
    uri = FROND_COORD_DEFAULT;
  if (strlen(uri) >= FROND_COORD_URI_MAX)
    return frond__fail(err, FROND_EINVAL, "coordinator URI too long");
  for (size_t i = 0; left_out[i].scheme != NULL; i++)
    if (strncmp(uri, left_out[i].scheme, strlen(left_out[i].scheme)) == 0)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator '%s...': built without %s",
                         left_out[i].scheme, left_out[i].missing);
  for (size_t i = 0; i < FROND__ARRAY_SIZE(drivers); i++)
    if (strncmp(uri, drivers[i]->zScheme, strlen(drivers[i]->zScheme)) == 0) {
      m = drivers[i];
      break;
    }
  if (!m)
    return frond__fail(err, FROND_EINVAL,
                       "unknown coordinator '%s' (use static:N, "
                       "zk://host:port/cluster, etcd://host:port/prefix, "
                       "lease+sqlite:///path.db, lease+postgresql://... or "
                       "lease+mysql://...)",
                       uri);
  return frond__coord_open_driver(out, m, uri, opts, err);
}

/* ---- acquire ------------------------------------------------------------ */

static void release_claim(frond_coord *c) {
  pthread_mutex_lock(&c->lock);
  c->m->xRelease(c, NULL);
  pthread_mutex_unlock(&c->lock);
}

/* Read this identity's cache file into *cc: 1 when it is ours, 0 when
** there is none (or it belongs to another coordinator or identity), or a
** negative code. Falls back to the single file of earlier versions. */
static int read_cache(frond_coord *c, frond_coord_cache *cc, frond_error *err) {
  char legacy[1200], want[FROND_COORD_URI_MAX], have[FROND_COORD_URI_MAX];
  int missing = 0, rc;
  if (!c->cache_dir[0])
    return 0;
  if (frond__coord_cache_name(c, c->cache_path, sizeof(c->cache_path)) != 0)
    return frond__fail(err, FROND_EINVAL, "cache directory path too long");
  frond__file_sweep(c->cache_path);
  rc = frond__coord_cache_read(c->cache_path, cc, &missing, err);
  if (rc != 0 && missing) {
    snprintf(legacy, sizeof(legacy), "%s/frond-node.cache", c->cache_dir);
    rc = frond__coord_cache_read(legacy, cc, &missing, NULL);
    if (rc != 0)
      return 0;
  }
  if (rc != 0)
    return rc;
  frond__coord_cache_uri(c->uri, want, sizeof(want));
  frond__coord_cache_uri(cc->uri, have, sizeof(have));
  return strcmp(want, have) == 0 && strcmp(cc->owner, c->owner) == 0;
}

static int64_t cap_ms(const frond_layout *l, int64_t ms) {
  int64_t end = frond_layout_end_ms(l);
  return ms < end ? ms : end - 1;
}

/* The generator's max_wait for a layout, as frond_gen_create resolves -1. */
static int64_t resolve_max_wait(const frond_layout *l, int64_t w) {
  if (w >= 0)
    return w;
  w = FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS;
  if (l->unit_ms >= 1 && l->unit_ms <= 86400000 && 2 * l->unit_ms > w)
    w = 2 * l->unit_ms;
  return w;
}

static int check_clock(frond_coord *c, frond_error *err) {
  char ref[96], a[40], b[40];
  int64_t off = 0, now;
  int rc;
  if (c->t.max_clock_offset_ms <= 0)
    return 0;
  ref[0] = 0;
  pthread_mutex_lock(&c->lock);
  rc = c->m->xClockOffset(c, &off, ref, sizeof(ref), err);
  pthread_mutex_unlock(&c->lock);
  if (rc != 0)
    return rc;
  atomic_store(&c->clock_offset_ms, off);
  atomic_store(&c->clock_checked, 1);
  if (off <= c->t.max_clock_offset_ms && off >= -c->t.max_clock_offset_ms)
    return 0;
  now = frond__coord_now(c);
  frond__format_rfc3339(now, a, sizeof(a));
  frond__format_rfc3339(now - off, b, sizeof(b));
  return frond__fail(err, FROND_ECLOCK_OFFSET,
                     "this clock reads %s, %s reads %s: %+" PRId64
                     " ms apart, beyond max_clock_offset_ms=%" PRId64
                     "; fix the clock (NTP) before starting",
                     a, ref, b, off, c->t.max_clock_offset_ms);
}

/* A node refused for its layout: say what switching the fleet would cost
** the recorded layout, after the driver's words. */
static int mismatch_cost(frond_coord *c, const frond_layout *l,
                         frond_error *err) {
  char spec[FROND_COORD_SPEC_MAX], cost[300], where[FROND_COORD_URI_MAX];
  char a[FROND_COORD_SPEC_MAX], b[FROND_COORD_SPEC_MAX];
  frond_layout rec;
  int64_t floor = 0;
  int rc;
  rc = frond__coord_layout_record(c, spec, sizeof(spec), &floor, NULL, NULL);
  /* Not readable now: the driver's own words stand. */
  if (rc != 0 || !spec[0] || frond_layout_parse(spec, &rec, NULL) != 0)
    return FROND_ELAYOUT_MISMATCH;
  frond__layout_lockout_text(&rec, l, frond__coord_now(c), cost, sizeof(cost));
  frond__layout_label(&rec, a, sizeof(a));
  frond__layout_label(l, b, sizeof(b));
  frond__coord_cache_uri(c->uri, where, sizeof(where));
  return frond__fail(err, FROND_ELAYOUT_MISMATCH,
                     "this node's layout is '%s'; %.200s records '%s' for the "
                     "fleet: nodes under two layouts can issue equal IDs. Use "
                     "'%s', or switch the fleet while no node runs "
                     "(--layout-change, `frond node layout --set`): %s",
                     b, where, a, a, cost);
}

int frond__coord_acquire(frond_coord *c, const frond_layout *l,
                         const frond_gen_options *go, frond__coord_start *out,
                         frond_error *err) {
  frond_gen_options gd;
  frond_coord_cache cc;
  frond__coord_claim cl;
  int64_t now, after, floor_ms, slack, target;
  int have_cache, rc;

  if (c->acquired)
    return frond__fail(err, FROND_EINVAL, "node ID already acquired");
  if ((rc = frond_layout_validate(l, frond__coord_now(c), err)) != 0)
    return rc;
  if (!go) {
    frond_gen_options_init(&gd);
    go = &gd;
  }
  c->layout = *l;
  frond_layout_format(l, c->layout_spec, sizeof(c->layout_spec));
  c->max_node = frond_layout_max_node(l);
  if ((rc = frond__coord_scope(c, l, err)) != 0)
    return rc;
  frond__coord_scoped_spec(c->layout_spec, sizeof(c->layout_spec), c->scope);
  c->max_ahead_ms = go->max_ahead_ms;
  c->max_wait_ms = resolve_max_wait(l, go->max_wait_ms);
  c->floor_id = 0;

  memset(&cc, 0, sizeof(cc));
  if ((have_cache = read_cache(c, &cc, err)) < 0)
    return have_cache;
  memset(&cl, 0, sizeof(cl));
  /* What this coordinator serves is checked against its record before it
  ** hands out a node ID (coord_scope.c). Unreachable: the cache file below,
  ** and the check when the node claims its ID (coord_fence.c's regain). */
  if ((rc = frond__coord_scope_verify(c, l, err)) == 0) {
    pthread_mutex_lock(&c->lock);
    rc = c->m->xAcquire(c, &cl, err);
    pthread_mutex_unlock(&c->lock);
  }
  if (rc == FROND_ELAYOUT_MISMATCH)
    return mismatch_cost(c, l, err);
  if (rc == FROND_ECOORD && c->m->bCacheFallback && have_cache) {
    if ((rc = frond__coord_scope_node(c, &cc, c->cache_path, err)) != 0)
      return rc;
    frond_log(FROND_LOG_WARN,
              "coordinator unreachable (%s); node ID %" PRIu64
              " from the cache file %s: issuing nothing until the "
              "coordinator answers",
              err ? err->message : "", cc.node, c->cache_path);
    cl.node = cc.node;
    cl.fence_ms = cc.fence_ms;
    c->from_cache = 1;
    rc = 0;
  }
  if (rc != 0)
    return rc;

  if (cl.node > c->max_node) {
    rc = frond__fail(err, FROND_ENODE_RANGE,
                     "node ID %" PRIu64 " from %s is above the layout's "
                     "largest node ID %" PRIu64 " (%u node bits)",
                     cl.node, c->uri, c->max_node, l->node_bits);
    goto undo;
  }
  if (cl.node < c->node_lo || cl.node > c->node_hi) {
    rc = frond__fail(err, FROND_ENODE_RANGE,
                     "node ID %" PRIu64 " from %s is outside the node IDs "
                     "%" PRIu64 "..%" PRIu64 " it serves (%s)",
                     cl.node, c->uri, c->node_lo, c->node_hi, c->scope);
    goto undo;
  }
  c->node = cl.node;
  after = cl.fence_ms;
  if (have_cache && cc.node == cl.node && cc.fence_ms > after)
    after = cc.fence_ms;
  now = frond__coord_now(c);
  slack =
      frond__start_slack_ms(c->max_ahead_ms, c->t.window_ms, c->max_wait_ms);
  floor_ms = frond__coord_floor_ms(l, c->floor_id);
  if (floor_ms > after && floor_ms - now > slack) {
    char a[40];
    frond__format_rfc3339(floor_ms, a, sizeof(a));
    rc = frond__fail(err, FROND_ELAYOUT_MISMATCH,
                     "the fleet moved from layout %s to %s: IDs must be "
                     "above %" PRId64 ", the largest the old layout could "
                     "have issued, which the new one reaches only at %s, "
                     "%" PRId64 " ms from now (at most %" PRId64 " ms)",
                     c->prev_spec[0] ? c->prev_spec : "(unknown)",
                     c->layout_spec, c->floor_id, a, floor_ms - now, slack);
    goto undo;
  }
  if (floor_ms > after)
    after = floor_ms;
  if (after - now > slack) {
    char a[40], b[40];
    frond__format_rfc3339(after, a, sizeof(a));
    frond__format_rfc3339(now, b, sizeof(b));
    rc = frond__fail(err, FROND_ECLOCK_BEHIND,
                     "node ID %" PRIu64 " is fenced up to %s (%" PRId64
                     "), %" PRId64 " ms ahead of the clock %s (%" PRId64
                     "), more than a restart explains (%" PRId64
                     " ms): the clock went back",
                     cl.node, a, after, after - now, b, now, slack);
    goto undo;
  }
  if (!c->from_cache && (rc = check_clock(c, err)) != 0)
    goto undo;

  if (!c->m->bFenced) {
    target = INT64_MAX;
  } else if (c->from_cache) {
    target = after; /* nothing above the cached fence until claimed */
    atomic_store(&c->sent_ms, after);
  } else {
    int64_t sent_ns;
    target = cap_ms(l, (after > now ? after : now) + c->max_ahead_ms +
                           c->t.window_ms);
    atomic_store(&c->sent_ms, target);
    if ((rc = frond__coord_cache_store(c, target, err)) != 0)
      goto undo;
    sent_ns = frond__mono_ns();
    pthread_mutex_lock(&c->lock);
    rc = c->m->xFence(c, target, err);
    pthread_mutex_unlock(&c->lock);
    frond__coord_fence_timed(c, (uint64_t)(frond__mono_ns() - sent_ns));
    if (rc != 0)
      goto undo;
    atomic_store(&c->last_write_ms, frond__coord_now(c));
    atomic_store(&c->last_write_mono_ms, frond__mono_ns() / 1000000);
    atomic_fetch_add(&c->fence_writes, 1);
    if (c->validity_ms > 0)
      atomic_store(&c->valid_until_ns, sent_ns + c->validity_ms * 1000000);
  }
  atomic_store(&c->durable_ms, target);
  atomic_store(&c->unclaimed, c->from_cache);
  c->acquired = 1;
  c->start_after_ms = after;
  memset(out, 0, sizeof(*out));
  out->node = cl.node;
  out->after_ms = after;
  out->fence_ms = target;
  out->from_cache = c->from_cache;
  return 0;

undo:
  if (!c->from_cache)
    release_claim(c);
  c->from_cache = 0;
  return rc;
}

/* ---- the public API ----------------------------------------------------- */

int frond_coord_gen_create(frond_coord *c, const frond_layout *l,
                           const frond_gen_options *gen_opts, frond_gen **out,
                           frond_error *err) {
  frond_gen_options o;
  frond__coord_start st;
  frond__gen_fence f;
  frond_gen *g = NULL;
  char hw[1200];
  int rc;

  if (!c || !l || !out)
    return frond__fail(err, FROND_EINVAL, "c, layout and out are required");
  if (frond__coord_forked(c))
    return frond__coord_refuse_forked(c, err);
  if (c->gen)
    return frond__fail(err, FROND_EINVAL,
                       "this coordinator already has a generator");
  if (gen_opts)
    o = *gen_opts;
  else
    frond_gen_options_init(&o);
  if (!o.clock) {
    o.clock = c->clock;
    o.clock_ctx = c->clock_ctx;
  }
  if ((rc = frond__coord_acquire(c, l, &o, &st, err)) != 0)
    return rc;
  /* A high-water file a static node left for this node ID in the cache
  ** directory (the data directory of a server that ran as static:N, the
  ** default of earlier versions): start above it too, and keep it. */
  if (!o.high_water_path && c->cache_dir[0] &&
      frond__hw_path(hw, sizeof(hw), c->cache_dir, st.node) == 0 &&
      access(hw, F_OK) == 0)
    o.high_water_path = hw;
  memset(&f, 0, sizeof(f));
  f.start_after_ms = st.after_ms;
  f.fence_ms = st.fence_ms;
  f.window_ms = c->m->bFenced ? c->t.window_ms : 0;
  f.want = c->m->bFenced ? frond__coord_want : NULL;
  f.ctx = c;
  if ((rc = frond__gen_create_fenced(&g, l, st.node, &o, &f, err)) != 0)
    goto undo;
  c->gen = g;
  c->own_gen = 1;
  /* The generator may have waited for the clock (a restart above a fence
  ** ahead of it) longer than the first write keeps the claim valid (a
  ** short lease): renew it before the watchdog looks, so that the node
  ** starts unblocked. A failure here is the fencer's to handle. */
  if (c->m->bFenced && !c->from_cache && c->validity_ms > 0 &&
      frond__mono_ns() >
          atomic_load(&c->valid_until_ns) - c->validity_ms / 3 * 1000000)
    (void)frond__coord_fence_round(c, 1, NULL);
  if (c->m->bFenced && (rc = frond__coord_attach_gen(c, g, err)) != 0)
    goto undo;
  frond_log(FROND_LOG_INFO,
            "node ID %" PRIu64 " held by %s (%s); starting above %" PRId64
            ", fence %" PRId64,
            st.node, c->owner, c->m->zScheme, st.after_ms,
            st.fence_ms == INT64_MAX ? 0 : st.fence_ms);
  *out = g;
  return 0;
undo:
  if (g)
    frond_gen_close(g, NULL);
  c->gen = NULL;
  c->own_gen = 0;
  if (!c->from_cache)
    release_claim(c);
  c->acquired = 0;
  c->from_cache = 0;
  return rc;
}

int frond_coord_state(frond_coord *c) {
  if (frond__coord_forked(c))
    return FROND_EFORKED;
  if (atomic_load(&c->closing))
    return FROND_ECLOSED;
  return atomic_load(&c->applied);
}

void frond_coord_stats_get(frond_coord *c, frond_coord_stats *out) {
  memset(out, 0, sizeof(*out));
  out->node = c->node;
  snprintf(out->owner, sizeof(out->owner), "%s", c->owner);
  out->state = frond_coord_state(c);
  out->from_cache = c->from_cache;
  out->start_after_ms = c->start_after_ms;
  out->fence_ms = atomic_load(&c->durable_ms);
  out->high_water_ms = c->gen ? frond_gen_high_water_ms(c->gen) : 0;
  out->last_write_ms = atomic_load(&c->last_write_ms);
  out->fence_writes = atomic_load(&c->fence_writes);
  out->write_failures = atomic_load(&c->write_failures);
  out->regains = atomic_load(&c->regains);
  out->last_error = atomic_load(&c->last_error);
  if (frond__coord_forked(c))
    return; /* the lock may have been held by a thread the child lacks */
  pthread_mutex_lock(&c->stats_lock);
  snprintf(out->last_error_message, sizeof(out->last_error_message), "%s",
           c->last_error_message);
  pthread_mutex_unlock(&c->stats_lock);
  out->clock_offset_ms = atomic_load(&c->clock_offset_ms);
  out->clock_checked = atomic_load(&c->clock_checked);
}

int frond_coord_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                     frond_error *err) {
  int rc;
  if (!c || !out || !n)
    return frond__fail(err, FROND_EINVAL, "c, out and n are required");
  if (frond__coord_forked(c))
    return frond__coord_refuse_forked(c, err);
  /* ZooKeeper's numbers as node IDs, under the range recorded; settings
  ** that name another are kept for frond__coord_scope_conflict. */
  if ((rc = frond__coord_scope_recorded(c, err)) != 0)
    return rc;
  pthread_mutex_lock(&c->lock);
  rc = c->m->xList(c, out, n, err);
  pthread_mutex_unlock(&c->lock);
  return rc;
}

/* The final fence of a close. A coordinator that fails a request for a
** moment (an etcd request timed out, a database full of connections)
** gets further tries: each starts within connect_ms of the first, and
** while the claim is certainly ours. A later holder then starts above the
** exact high water at once, rather than after the claim runs out. A write
** whose answer was lost is the driver's to find on the next try, as for a
** renewal; one that lands late (a try may end after both bounds) is held
** by the driver's compare (the claim's revision, the session, the
** token). The threads are stopped: the sleep keeps
** c->lock, as every driver call does. */
static int close_fence(frond_coord *c, int64_t final, frond_error *err) {
  int64_t until = frond__mono_ns() + c->t.connect_ms * INT64_C(1000000),
          valid = atomic_load(&c->valid_until_ns), pause_ms = 20;
  frond_error e = {0, ""};
  int r;
  if (valid != 0 && valid < until)
    until = valid;
  while ((r = c->m->xFence(c, final, &e)) == FROND_ECOORD &&
         frond__mono_ns() + pause_ms * 1000000 < until) {
    frond_log(FROND_LOG_WARN,
              "node ID %" PRIu64 ": the final fence failed (%s); trying "
              "again in %" PRId64 " ms",
              c->node, e.message, pause_ms);
    frond__sleep_ns(pause_ms * 1000000);
    pause_ms = pause_ms * 2 < 1000 ? pause_ms * 2 : 1000;
  }
  if (r != 0 && err)
    *err = e;
  return r;
}

int frond_coord_close(frond_coord *c, frond_error *err) {
  int rc = 0, r;
  if (!c)
    return 0;
  if (frond__coord_forked(c)) {
    /* The parent's node ID, threads and connection stay the parent's:
    ** free the child's copy of c and of its generator, nothing else (a
    ** driver's close would talk on the parent's connection). */
    if (c->own_gen && c->gen)
      frond_gen_close(c->gen, NULL);
    free(c);
    return 0;
  }
  atomic_store(&c->closing, 1);
  if (c->gen)
    frond__gen_block(c->gen, FROND_ECLOSED);
  frond__coord_stop_threads(c);
  if (c->acquired && c->m->bFenced) {
    /* Nothing above the exact high-water time was issued, and nothing
    ** more will be: that is the final fence, so a restart need not wait. */
    int64_t final =
        c->gen ? frond_gen_high_water_ms(c->gen) : atomic_load(&c->durable_ms);
    int held = !atomic_load(&c->lost) && !atomic_load(&c->unclaimed);
    /* Nothing was issued between the high water and now either: a
    ** generator whose clock thread slept stopped following the clock, and
    ** its high water is its last ID's time. The fence records the close,
    ** which reclaiming's retention_ms is measured from. */
    if (frond__coord_now(c) > final)
      final = frond__coord_now(c);
    if (final > atomic_load(&c->durable_ms))
      final = atomic_load(&c->durable_ms);
    if (held) {
      pthread_mutex_lock(&c->lock);
      r = close_fence(c, final, err);
      if (r == 0)
        atomic_store(&c->durable_ms, final);
      if (r == 0 || r == FROND_ELAYOUT_MISMATCH)
        r = c->m->xRelease(c, err);
      pthread_mutex_unlock(&c->lock);
      if (r != 0 && rc == 0)
        rc = r;
    }
    if ((r = frond__coord_cache_store(c, final, rc ? NULL : err)) != 0 &&
        rc == 0)
      rc = r;
  }
  if (c->own_gen && c->gen && (r = frond_gen_close(c->gen, rc ? NULL : err)))
    if (rc == 0)
      rc = r;
  c->m->xClose(c);
  free_coord(c);
  return rc;
}

/* Test hook: end c as kill -9 would, from inside one process (a scale
** test holds a thousand claims in one): the generator blocked, the
** threads stopped, no final fence, no release; the driver's connection
** or session closed as the operating system would close it. A later
** holder finds the row or the claim as a crash leaves it: the lease
** still running, the last fence written while running. */
void frond__coord_test_crash(frond_coord *c) {
  if (!c)
    return;
  if (c->gen)
    frond__gen_block(c->gen, FROND_ECLOSED);
  frond__coord_stop_threads(c);
  if (c->own_gen && c->gen)
    frond_gen_close(c->gen, NULL);
  c->m->xClose(c);
  free_coord(c);
}

/* ---- a URI, checked without connecting ----------------------------------- */

int frond__coord_uri_check(const char *uri, uint64_t max_node,
                           frond_error *err) {
  static const char *const reads[] = {"static:", "zk://", "lease+", "etcd://"};
  char dburi[FROND_LEASE_DB_URI_MAX];
  frond__etcd_uri eu;
  const char *name, *n;
  size_t i, hosts, nlen;
  frond_coord c;
  int64_t v;
  int rc = 0, known = 0;
  if (!uri || !*uri)
    uri = FROND_COORD_DEFAULT;
  if (strlen(uri) >= FROND_COORD_URI_MAX)
    return frond__fail(err, FROND_EINVAL, "coordinator URI too long");
  for (i = 0; left_out[i].scheme != NULL; i++)
    if (strncmp(uri, left_out[i].scheme, strlen(left_out[i].scheme)) == 0)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator '%s...': built without %s",
                         left_out[i].scheme, left_out[i].missing);
  for (i = 0; i < FROND__ARRAY_SIZE(drivers); i++)
    known |=
        strncmp(uri, drivers[i]->zScheme, strlen(drivers[i]->zScheme)) == 0;
  if (!known)
    return frond__fail(err, FROND_EINVAL,
                       "unknown coordinator '%s' (use static:N, "
                       "zk://host:port/cluster, etcd://host:port/prefix, "
                       "lease+sqlite:///path.db, lease+postgresql://... or "
                       "lease+mysql://...)",
                       uri);
  /* The drivers' pure readers, as their xOpen reads the URI first. */
  memset(&c, 0, sizeof(c));
  if (strncmp(uri, reads[0], strlen(reads[0])) == 0) {
    n = uri + strlen(reads[0]);
    nlen = strcspn(n, "?");
    if (nlen == 0 || frond__parse_i64(n, nlen, &v) != 0 || v < 0)
      return frond__fail(err, FROND_EINVAL,
                         "static coordinator wants static:N with N >= 0, "
                         "not '%s'",
                         uri);
    if (n[nlen] == '?' &&
        (rc = frond__coord_parse_query(&c, n + nlen + 1, err)) != 0)
      return rc;
    if ((uint64_t)v > max_node)
      return frond__fail(err, FROND_ENODE_RANGE,
                         "node %" PRId64 " does not fit the layout's node "
                         "bits: at most %" PRIu64,
                         v, max_node);
  } else if (strncmp(uri, reads[1], strlen(reads[1])) == 0) {
    rc = frond__zk_parse_uri(&c, uri, &hosts, &name, &nlen, err);
  } else if (strncmp(uri, reads[2], strlen(reads[2])) == 0) {
    rc = frond__lease_parse_uri(&c, uri, dburi, sizeof(dburi), err);
  } else if (strncmp(uri, reads[3], strlen(reads[3])) == 0) {
    rc = frond__etcd_parse_uri(&c, uri, &eu, err);
  }
  return rc;
}
