/*
** coord.c -- coordinator dispatch, shared checks and the reporter.
**
** This file contains what every coordinator shares: choosing a driver by
** URI, the thin wrappers around its methods, the start checks (node range,
** clock), the node cache file, and two threads per attached generator:
**
**   reporter  every report_ms: report the high-water time (or try to regain
**             a lost claim) and rewrite the cache file. It does the I/O and
**             may block on the coordinator.
**   watchdog  every few ms: blocks the generator with NODE_ID_LOST while
**             the claim is lost or its validity ran out, unblocks it once
**             it is back. It never does I/O, so a hung database or
**             ZooKeeper cannot keep a node issuing past its lease.
*/
#include "coord/coord.h"
#include "os/file.h"
#include "core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WATCHDOG_NS (5 * 1000 * 1000)

void frond__coord_options_init(frond_coord_options *o) {
  memset(o, 0, sizeof(*o));
  o->port = 8080;
  o->node_bits = 10;
  o->max_wait_ms = FROND_DEFAULT_MAX_WAIT_MS;
  o->report_ms = FROND_COORD_DEFAULT_REPORT_MS;
  o->session_ms = FROND_COORD_DEFAULT_SESSION_MS;
  o->connect_ms = FROND_COORD_DEFAULT_CONNECT_MS;
  o->lease_ms = FROND_COORD_DEFAULT_LEASE_MS;
}

int64_t frond__coord_now(const frond_coord *c) {
  frond_clock_fn fn = c->o.clock ? c->o.clock : frond_clock_realtime;
  return fn(c->o.clock_ctx);
}

/* ---- URI query ---------------------------------------------------------- */

static const struct {
  const char *name;
  size_t off;
  int64_t min, max;
} query_keys[] = {
#define K(n, lo, hi)                                                           \
  { #n, offsetof(frond_coord_options, n), lo, hi }
    K(report_ms, 10, 3600000),  K(session_ms, 100, 3600000),
    K(connect_ms, 10, 3600000), K(retention_ms, 0, INT64_MAX / 4),
    K(lease_ms, 30, 86400000),  K(max_wait_ms, 0, 3600000),
#undef K
};

int frond__coord_parse_query(frond_coord *c, const char *q, frond_error *err) {
  while (q && *q) {
    const char *amp = strchr(q, '&'), *eq = strchr(q, '=');
    size_t len = amp ? (size_t)(amp - q) : strlen(q);
    if (!eq || eq >= q + len)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator option '%.*s' has no value", (int)len, q);
    size_t klen = (size_t)(eq - q);
    int64_t v;
    if (frond__parse_i64(eq + 1, len - klen - 1, &v) != 0)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator option '%.*s' is not an integer",
                         (int)len, q);
    int found = 0;
    for (size_t i = 0; i < FROND__ARRAY_SIZE(query_keys); i++) {
      if (strlen(query_keys[i].name) != klen ||
          memcmp(query_keys[i].name, q, klen) != 0)
        continue;
      if (v < query_keys[i].min || v > query_keys[i].max)
        return frond__fail(err, FROND_EINVAL,
                           "coordinator option %s=%" PRId64
                           " is outside [%" PRId64 ", %" PRId64 "]",
                           query_keys[i].name, v, query_keys[i].min,
                           query_keys[i].max);
      *(int64_t *)((char *)&c->o + query_keys[i].off) = v;
      found = 1;
    }
    if (!found && klen == 5 && memcmp(q, "nodes", 5) == 0) {
      if (v < 1)
        return frond__fail(err, FROND_EINVAL, "nodes must be >= 1");
      c->o.nodes = (uint64_t)v;
      found = 1;
    }
    if (!found)
      return frond__fail(err, FROND_EINVAL, "unknown coordinator option '%.*s'",
                         (int)klen, q);
    q = amp ? amp + 1 : NULL;
  }
  return 0;
}

/* ---- open / close ------------------------------------------------------- */

static void default_ip(char *buf, size_t len) {
  struct ifaddrs *ifa = NULL, *i;
  snprintf(buf, len, "127.0.0.1");
  if (getifaddrs(&ifa) != 0)
    return;
  for (i = ifa; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
      continue;
    struct sockaddr_in *sin = (struct sockaddr_in *)(void *)i->ifa_addr;
    if ((ntohl(sin->sin_addr.s_addr) >> 24) == 127)
      continue;
    inet_ntop(AF_INET, &sin->sin_addr, buf, (socklen_t)len);
    break;
  }
  freeifaddrs(ifa);
}

static const frond_coord_methods *const drivers[] = {
    &frond__coord_static_methods,
    &frond__coord_zk_methods,
    &frond__coord_lease_methods,
};

int frond__coord_open(frond_coord **out, const char *uri,
                      const frond_coord_options *opts, frond_error *err) {
  frond_coord *c;
  const frond_coord_methods *m = NULL;
  char ip[64];
  int rc;

  *out = NULL;
  if (!uri || !*uri)
    uri = FROND_COORD_DEFAULT;
  if (strlen(uri) >= FROND_COORD_URI_MAX)
    return frond__fail(err, FROND_EINVAL, "coordinator URI too long");
  for (size_t i = 0; i < FROND__ARRAY_SIZE(drivers); i++) {
    size_t n = strlen(drivers[i]->scheme);
    if (strncmp(uri, drivers[i]->scheme, n) == 0) {
      m = drivers[i];
      break;
    }
  }
  if (!m)
    return frond__fail(err, FROND_EINVAL,
                       "unknown coordinator '%s' (use static:N, "
                       "zk://host:port/cluster, lease+sqlite:///path.db or "
                       "lease+postgresql://...)",
                       uri);
  if (!(c = calloc(1, sizeof(*c))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  c->m = m;
  if (opts)
    c->o = *opts;
  else
    frond__coord_options_init(&c->o);
  if (c->o.node_bits == 0)
    c->o.node_bits = 10;
  if (c->o.max_wait_ms < 0) /* the generator's "default" */
    c->o.max_wait_ms = FROND_DEFAULT_MAX_WAIT_MS;
  if (c->o.node_bits > 62) {
    unsigned bits = c->o.node_bits;
    free(c);
    return frond__fail(err, FROND_EINVAL, "node_bits %u > 62", bits);
  }
  c->max_node = (UINT64_C(1) << c->o.node_bits) - 1;
  snprintf(c->uri, sizeof(c->uri), "%s", uri);
  if (c->o.ip)
    snprintf(ip, sizeof(ip), "%s", c->o.ip);
  else
    default_ip(ip, sizeof(ip));
  snprintf(c->owner, sizeof(c->owner), "%s:%d", ip, c->o.port);
  if (c->o.cache_path)
    snprintf(c->cache_path, sizeof(c->cache_path), "%s", c->o.cache_path);
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_init(&c->wake_lock, NULL);
  frond__cond_init(&c->wake); /* nap() waits against the monotonic clock */
  atomic_init(&c->lost, 0);
  atomic_init(&c->valid_until_ns, 0);
  atomic_init(&c->resume_after_ms, 0);
  atomic_init(&c->blocked, 0);
  atomic_init(&c->last_report_ms, 0);
  atomic_init(&c->stopping, 0);
  c->o.cache_path = NULL; /* copied above; the caller's string may go */
  c->o.ip = NULL;

  rc = m->open(c, uri, err);
  /* Unreachable is not fatal here: acquire may still use the cache. */
  if (rc != 0 && !(rc == FROND_ECOORD && m->cache_fallback)) {
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->wake_lock);
    pthread_cond_destroy(&c->wake);
    free(c);
    return rc;
  }
  *out = c;
  return 0;
}

static void stop_threads(frond_coord *c) {
  if (!c->threads)
    return;
  pthread_mutex_lock(&c->wake_lock);
  atomic_store(&c->stopping, 1);
  pthread_cond_broadcast(&c->wake);
  pthread_mutex_unlock(&c->wake_lock);
  pthread_join(c->reporter, NULL);
  pthread_join(c->watchdog, NULL);
  c->threads = 0;
}

int frond__coord_close(frond_coord *c, frond_error *err) {
  int rc = 0;
  if (!c)
    return 0;
  stop_threads(c);
  if (c->acquired) {
    int64_t hw = c->hw_fn ? c->hw_fn(c->hook_ctx) : c->claim.high_water_ms;
    if (c->cache_path[0]) {
      frond_coord_cache cc;
      snprintf(cc.uri, sizeof(cc.uri), "%s", c->uri);
      snprintf(cc.owner, sizeof(cc.owner), "%s", c->owner);
      cc.node = c->claim.node;
      cc.high_water_ms = hw;
      cc.reported_ms = atomic_load(&c->last_report_ms);
      rc = frond__coord_cache_write(c->cache_path, &cc, err);
    }
    /* Only a claim still held may be released: a lost one is someone
    ** else's now. */
    if (!atomic_load(&c->lost)) {
      pthread_mutex_lock(&c->lock);
      int r = c->m->release(c, hw, err);
      pthread_mutex_unlock(&c->lock);
      if (r != 0 && rc == 0)
        rc = r;
    }
  }
  c->m->close(c);
  pthread_mutex_destroy(&c->lock);
  pthread_mutex_destroy(&c->wake_lock);
  pthread_cond_destroy(&c->wake);
  free(c);
  return rc;
}

/* ---- acquire ------------------------------------------------------------ */

/* The URI without its query: the cache belongs to a coordinator, not to
** its tunables. */
static int same_coordinator(const char *a, const char *b) {
  size_t la = strcspn(a, "?"), lb = strcspn(b, "?");
  return la == lb && memcmp(a, b, la) == 0;
}

int frond__coord_acquire(frond_coord *c, frond_coord_claim *out,
                         frond_error *err) {
  frond_coord_cache cc;
  frond_coord_claim cl;
  int have_cache = 0, missing = 0, rc;
  int64_t sent_ns = frond__mono_ns();

  memset(&cl, 0, sizeof(cl));
  if (c->acquired)
    return frond__fail(err, FROND_EINVAL, "node ID already acquired");
  if (c->cache_path[0]) {
    rc = frond__coord_cache_read(c->cache_path, &cc, &missing, err);
    if (rc != 0 && !missing)
      return rc;
    have_cache = rc == 0 && same_coordinator(cc.uri, c->uri) &&
                 strcmp(cc.owner, c->owner) == 0;
  }

  pthread_mutex_lock(&c->lock);
  rc = c->m->acquire(c, &cl, err);
  pthread_mutex_unlock(&c->lock);
  if (rc == FROND_ECOORD && c->m->cache_fallback && have_cache &&
      c->validity_ms > 0) {
    /* The claim may be given to another node validity_ms after it was
    ** last confirmed: only the rest of that time is ours. */
    int64_t age = frond__coord_now(c) - cc.reported_ms;
    if (age >= c->validity_ms)
      return frond__fail(err, FROND_ECOORD,
                         "coordinator unreachable, and the cached node ID "
                         "%" PRIu64 " was last confirmed %" PRId64
                         " ms ago, beyond the %" PRId64 " ms it is safe",
                         cc.node, age, c->validity_ms);
    sent_ns = frond__mono_ns() - (age > 0 ? age : 0) * 1000000;
  }
  if (rc == FROND_ECOORD && c->m->cache_fallback && have_cache) {
    frond_log(FROND_LOG_WARN,
              "coordinator unreachable (%s); node ID %" PRIu64
              " from the cache file %s",
              err ? err->message : "", cc.node, c->cache_path);
    cl.node = cc.node;
    cl.high_water_ms = cc.high_water_ms;
    cl.from_cache = 1;
    rc = 0;
  }
  if (rc != 0)
    return rc;

  if (cl.node > c->max_node) {
    rc = frond__fail(err, FROND_ENODE_RANGE,
                     "node ID %" PRIu64 " from %s is above the layout's "
                     "largest node ID %" PRIu64 " (%u node bits)",
                     cl.node, c->uri, c->max_node, c->o.node_bits);
    goto undo;
  }
  if (have_cache && cc.node == cl.node && cc.high_water_ms > cl.high_water_ms)
    cl.high_water_ms = cc.high_water_ms;
  {
    int64_t now = frond__coord_now(c);
    if (cl.high_water_ms - now > c->o.max_wait_ms) {
      char a[40], b[40];
      frond__format_rfc3339(cl.high_water_ms, a, sizeof(a));
      frond__format_rfc3339(now, b, sizeof(b));
      rc = frond__fail(err, FROND_ECLOCK_BEHIND,
                       "node ID %" PRIu64 " was used up to %s (%" PRId64
                       "), %" PRId64 " ms ahead of the clock %s (%" PRId64
                       "); refusing to start (max_wait_ms %" PRId64 ")",
                       cl.node, a, cl.high_water_ms, cl.high_water_ms - now, b,
                       now, c->o.max_wait_ms);
      goto undo;
    }
  }
  if (c->cache_path[0]) {
    snprintf(cc.uri, sizeof(cc.uri), "%s", c->uri);
    snprintf(cc.owner, sizeof(cc.owner), "%s", c->owner);
    /* Never lower the cached time of this ID: it protects the next
    ** restart. */
    if (!have_cache || cc.node != cl.node ||
        cc.high_water_ms < cl.high_water_ms)
      cc.high_water_ms = cl.high_water_ms;
    if (!cl.from_cache)
      cc.reported_ms = frond__coord_now(c);
    cc.node = cl.node;
    if ((rc = frond__coord_cache_write(c->cache_path, &cc, err)) != 0)
      goto undo;
  }
  c->claim = cl;
  c->acquired = 1;
  if (c->validity_ms > 0)
    atomic_store(&c->valid_until_ns, sent_ns + c->validity_ms * 1000000);
  atomic_store(&c->last_report_ms,
               cl.from_cache ? cc.reported_ms : frond__coord_now(c));
  *out = cl;
  return 0;

undo:
  if (!cl.from_cache) {
    pthread_mutex_lock(&c->lock);
    c->m->release(c, 0, NULL);
    pthread_mutex_unlock(&c->lock);
  }
  return rc;
}

int frond__coord_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                      frond_error *err) {
  int rc;
  pthread_mutex_lock(&c->lock);
  rc = c->m->list(c, out, n, err);
  pthread_mutex_unlock(&c->lock);
  return rc;
}

/* ---- reporter and watchdog ---------------------------------------------- */

int frond__coord_state(frond_coord *c) {
  int64_t until = atomic_load(&c->valid_until_ns);
  if (atomic_load(&c->lost))
    return FROND_ENODE_ID_LOST;
  if (until != 0 && frond__mono_ns() > until)
    return FROND_ENODE_ID_LOST;
  if (frond__coord_now(c) <= atomic_load(&c->resume_after_ms))
    return FROND_ENODE_ID_LOST;
  return 0;
}

int frond__coord_applied(frond_coord *c) {
  return atomic_load(&c->blocked);
}

static void update_cache(frond_coord *c, int64_t hw) {
  frond_coord_cache cc;
  frond_error e;
  if (!c->cache_path[0])
    return;
  snprintf(cc.uri, sizeof(cc.uri), "%s", c->uri);
  snprintf(cc.owner, sizeof(cc.owner), "%s", c->owner);
  cc.node = c->claim.node;
  cc.high_water_ms = hw;
  cc.reported_ms = atomic_load(&c->last_report_ms);
  if (frond__coord_cache_write(c->cache_path, &cc, &e) != 0)
    frond_log(FROND_LOG_WARN, "node cache: %s", e.message);
}

int frond__coord_report(frond_coord *c, int64_t hw, frond_error *err) {
  int64_t sent_ns = frond__mono_ns(), after = 0;
  int rc;

  /* The cache is local: keep it current even while the coordinator is
  ** away, so that a restart from it starts above every issued ID. */
  if (hw < c->claim.high_water_ms)
    hw = c->claim.high_water_ms;
  update_cache(c, hw);
  pthread_mutex_lock(&c->lock);
  if (atomic_load(&c->lost)) {
    rc = c->m->regain(c, &after, err);
    if (rc == 0) {
      atomic_store(&c->resume_after_ms, after);
      atomic_store(&c->lost, 0);
      frond_log(FROND_LOG_INFO, "node ID %" PRIu64 " regained", c->claim.node);
      rc = c->m->report(c, hw, err);
    }
  } else {
    rc = c->m->report(c, hw, err);
  }
  pthread_mutex_unlock(&c->lock);
  if (rc == 0) {
    if (c->validity_ms > 0)
      atomic_store(&c->valid_until_ns, sent_ns + c->validity_ms * 1000000);
    atomic_store(&c->last_report_ms, frond__coord_now(c));
  } else if (rc == FROND_ENODE_ID_LOST) {
    if (!atomic_exchange(&c->lost, 1))
      frond_log(FROND_LOG_ERROR, "node ID %" PRIu64 " lost: %s", c->claim.node,
                err ? err->message : "");
  }
  return rc;
}

static int64_t report_interval_ms(const frond_coord *c) {
  int64_t ms = c->o.report_ms;
  /* Renew well before the validity runs out: at a third of it. */
  if (c->validity_ms > 0 && c->validity_ms / 3 < ms)
    ms = c->validity_ms / 3;
  return ms > 0 ? ms : 1;
}

/* Sleep up to ms or until stopping; returns nonzero when stopping. */
static int nap(frond_coord *c, int64_t ns) {
  int64_t deadline = frond__mono_ns() + ns;
  int stop;
  pthread_mutex_lock(&c->wake_lock);
  while (!(stop = atomic_load(&c->stopping)))
    if (frond__cond_wait_until(&c->wake, &c->wake_lock, deadline) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&c->wake_lock);
  return stop;
}

static void *reporter_main(void *arg) {
  frond_coord *c = arg;
  int last = 0;
  while (!nap(c, report_interval_ms(c) * 1000000)) {
    frond_error e;
    int rc;
    e.message[0] = 0;
    rc = frond__coord_report(c, c->hw_fn(c->hook_ctx), &e);
    if (rc != 0 && rc != last && rc != FROND_ENODE_ID_LOST)
      frond_log(FROND_LOG_WARN, "coordinator: %s", e.message);
    if (rc == 0 && last != 0 && last != FROND_ENODE_ID_LOST)
      frond_log(FROND_LOG_INFO, "coordinator reachable again");
    last = rc;
  }
  return NULL;
}

static void *watchdog_main(void *arg) {
  frond_coord *c = arg;
  do {
    int code = frond__coord_state(c);
    if (code != atomic_load(&c->blocked)) {
      atomic_store(&c->blocked, code);
      c->block_fn(c->hook_ctx, code);
      if (code)
        frond_log(FROND_LOG_ERROR,
                  "node ID %" PRIu64 " not held: issuing stopped",
                  c->claim.node);
      else
        frond_log(FROND_LOG_INFO, "node ID %" PRIu64 " held: issuing again",
                  c->claim.node);
    }
  } while (!nap(c, WATCHDOG_NS));
  return NULL;
}

int frond__coord_attach(frond_coord *c, int64_t (*hw_fn)(void *ctx),
                        void (*block_fn)(void *ctx, int code), void *ctx,
                        frond_error *err) {
  if (!c->acquired)
    return frond__fail(err, FROND_EINVAL, "attach before acquire");
  if (c->threads)
    return frond__fail(err, FROND_EINVAL, "already attached");
  c->hw_fn = hw_fn;
  c->block_fn = block_fn;
  c->hook_ctx = ctx;
  if (pthread_create(&c->watchdog, NULL, watchdog_main, c) != 0)
    return frond__fail(err, FROND_ENOMEM, "cannot start the watchdog");
  if (pthread_create(&c->reporter, NULL, reporter_main, c) != 0) {
    atomic_store(&c->stopping, 1);
    pthread_join(c->watchdog, NULL);
    return frond__fail(err, FROND_ENOMEM, "cannot start the reporter");
  }
  c->threads = 1;
  return 0;
}

static int64_t gen_hw(void *ctx) {
  return frond_gen_high_water_ms(ctx);
}

static void gen_block(void *ctx, int code) {
  frond_gen_set_blocked(ctx, code);
}

int frond__coord_attach_gen(frond_coord *c, frond_gen *g, frond_error *err) {
  return frond__coord_attach(c, gen_hw, gen_block, g, err);
}

/* ---- node cache file ----------------------------------------------------
**
** Text, one key per line, Leaf's "workerID=N" among them:
**   # frond node cache
**   uri=zk://...
**   owner=10.0.0.7:8080
**   workerID=5
**   high_water_ms=1700000000000
**   reported_ms=1699999999000
**   end=<FNV-1a 64 of everything above, 16 hex digits>
** The last line holds a checksum of everything before it, so a torn or
** edited file is refused instead of trusted.
*/

int frond__coord_cache_write(const char *path, const frond_coord_cache *cc,
                             frond_error *err) {
  char buf[2048];
  int n;
  n = snprintf(buf, sizeof(buf),
               "# frond node cache\nuri=%s\nowner=%s\nworkerID=%" PRIu64
               "\nhigh_water_ms=%" PRId64 "\nreported_ms=%" PRId64 "\n",
               cc->uri, cc->owner, cc->node, cc->high_water_ms,
               cc->reported_ms);
  if (n < 0 || (size_t)n >= sizeof(buf) - 32)
    return frond__fail(err, FROND_EINVAL, "node cache entry too long");
  n += snprintf(buf + n, sizeof(buf) - (size_t)n, "end=%016" PRIx64 "\n",
                frond__fnv1a64(buf, (size_t)n));
  return frond__file_replace(path, buf, (size_t)n, err);
}

static const char *cache_value(const char *buf, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    if (strncmp(p, key, kl) == 0 && p[kl] == '=')
      return p + kl + 1;
  return NULL;
}

static int cache_str(const char *buf, const char *key, char *out, size_t len) {
  const char *v = cache_value(buf, key);
  size_t n;
  if (!v)
    return -1;
  n = strcspn(v, "\n");
  if (n >= len)
    return -1;
  memcpy(out, v, n);
  out[n] = 0;
  return 0;
}

int frond__coord_cache_read(const char *path, frond_coord_cache *cc,
                            int *missing, frond_error *err) {
  char buf[2048], num[32], sum[24];
  const char *end;
  ssize_t n;
  int64_t node, hw;
  int fd;

  *missing = 0;
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
    *missing = errno == ENOENT;
    return frond__fail(err, FROND_EIO, "node cache %s: %s", path,
                       strerror(errno));
  }
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n < 0)
    return frond__fail(err, FROND_EIO, "node cache %s: %s", path,
                       strerror(errno));
  buf[n] = 0;
  end = strstr(buf, "end=");
  if (!end || (end != buf && end[-1] != '\n') ||
      cache_str(buf, "end", sum, sizeof(sum)) != 0)
    goto corrupt;
  snprintf(num, sizeof(num), "%016" PRIx64,
           frond__fnv1a64(buf, (size_t)(end - buf)));
  if (strcmp(num, sum) != 0)
    goto corrupt;
  if (cache_str(buf, "uri", cc->uri, sizeof(cc->uri)) != 0 ||
      cache_str(buf, "owner", cc->owner, sizeof(cc->owner)) != 0 ||
      cache_str(buf, "workerID", num, sizeof(num)) != 0 ||
      frond__parse_i64(num, strlen(num), &node) != 0 || node < 0 ||
      cache_str(buf, "high_water_ms", num, sizeof(num)) != 0 ||
      frond__parse_i64(num, strlen(num), &hw) != 0 || hw < 0 ||
      cache_str(buf, "reported_ms", num, sizeof(num)) != 0 ||
      frond__parse_i64(num, strlen(num), &cc->reported_ms) != 0)
    goto corrupt;
  cc->node = (uint64_t)node;
  cc->high_water_ms = hw;
  return 0;
corrupt:
  return frond__fail(err, FROND_EHIGHWATER_CORRUPT,
                     "node cache %s is torn or corrupt; remove it only if "
                     "no other process uses its node ID",
                     path);
}
