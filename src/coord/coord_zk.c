/*
** coord_zk.c -- node IDs from ZooKeeper, compatible with Leaf's layout.
**
** This file contains the ZooKeeper coordinator ("zk://h:p[,h:p...]/name").
** Leaf's part, unchanged, so Leaf and Frond nodes can share a cluster:
**
**   /snowflake/<name>/forever/<ip>:<port>-<10 digits>   PERSISTENT_SEQUENTIAL
**       data {"ip":"...","port":"...","timestamp":<ms>}
**
** The 10 digits are the node ID; an ip:port that already has a child
** reuses its number; the timestamp is rewritten every report_ms with the
** node's high-water time (never below the current time, as Leaf writes).
**
** Frond's additions:
**
**   /snowflake/<name>/claims/<10 digits>                 EPHEMERAL
**       data "<ip>:<port> pid <pid>"
**
**   - The claim makes a second live process with the same ip:port fail
**     with NODE_IN_USE instead of sharing the ID.
**   - On session expiry the claim is gone: the node is blocked with
**     NODE_ID_LOST (coord.c), reconnects with a new session and resumes
**     once it has created the claim again.
**   - Reclaiming: when the sequence runs past the layout's node range, a
**     new ip:port takes over the lowest ID that nobody claims and whose
**     stored time is older than retention_ms (0, the default, never
**     reclaims, as Leaf). The take-over is one multi-op: delete the old
**     child (at the version read), create "<new ip:port>-<same digits>"
**     carrying the old timestamp, create the claim. The new owner starts
**     above that timestamp.
**   - With retention_ms set, a node that cannot report for retention_ms/2
**     (ZooKeeper unreachable) stops issuing: after retention_ms its ID
**     could be reclaimed by another ip:port.
*/
#include "coord/coord.h"
#include "core/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define THREADED /* the synchronous API of libzookeeper_mt */
#include <zookeeper/zookeeper.h>
#include <stdarg.h>

#define PATH_MAX_ZK 512

typedef struct {
  frond_coord *c;
  zhandle_t *zh;
  char hosts[FROND_COORD_URI_MAX];
  char root[PATH_MAX_ZK];    /* /snowflake/<name> */
  char forever[PATH_MAX_ZK]; /* root/forever */
  char claims[PATH_MAX_ZK];  /* root/claims */
  char mine[PATH_MAX_ZK];    /* our child of forever */
  uint64_t node;
  atomic_int claimed; /* the ephemeral claim is ours */
  int have_node;
  pthread_mutex_t mu;
  int connected; /* guarded by mu */
  atomic_int expired;
} zk;

/* snprintf into a PATH_MAX_ZK buffer; names are bounded well below it
** (cluster name <= 128, owner < FROND_COORD_OWNER_MAX). */
static void zp(char *buf, const char *fmt, ...) FROND__PRINTF(2, 3);
static void zp(char *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, PATH_MAX_ZK, fmt, ap);
  va_end(ap);
}

static int zfail(frond_error *err, int rc, const char *what, const char *path) {
  return frond__fail(err, FROND_ECOORD, "zookeeper: %s %s: %s", what, path,
                     zerror(rc));
}

static void watcher(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  zk *z = ctx;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&z->mu);
  z->connected = state == ZOO_CONNECTED_STATE;
  if (state == ZOO_EXPIRED_SESSION_STATE) {
    atomic_store(&z->expired, 1);
    /* The ephemeral claim is gone with the session: stop at once. */
    if (atomic_exchange(&z->claimed, 0))
      atomic_store(&z->c->lost, 1);
  }
  pthread_mutex_unlock(&z->mu);
}

static int is_connected(zk *z) {
  int ok;
  pthread_mutex_lock(&z->mu);
  ok = z->connected;
  pthread_mutex_unlock(&z->mu);
  return ok && z->zh && !atomic_load(&z->expired);
}

/* Connect (a new session) and wait up to connect_ms. */
static int zk_connect(zk *z, frond_error *err) {
  int64_t ms = z->c->o.connect_ms, deadline;
  int ok;

  atomic_store(&z->expired, 0);
  pthread_mutex_lock(&z->mu);
  z->connected = 0;
  pthread_mutex_unlock(&z->mu);
  z->zh =
      zookeeper_init(z->hosts, watcher, (int)z->c->o.session_ms, NULL, z, 0);
  if (!z->zh)
    return frond__fail(err, FROND_ECOORD, "zookeeper %s: %s", z->hosts,
                       strerror(errno));
  /* Polled rather than a timed condition wait: simple, and immune to
  ** clock games (tests shift the wall clock with libfaketime). */
  deadline = frond__mono_ns() + ms * 1000000;
  while (!(ok = is_connected(z)) && frond__mono_ns() < deadline)
    frond__sleep_ns(2 * 1000000);
  if (!ok)
    return frond__fail(err, FROND_ECOORD,
                       "zookeeper %s unreachable after %" PRId64 " ms",
                       z->hosts, ms);
  return 0;
}

static int ensure_path(zk *z, const char *path, frond_error *err) {
  char p[PATH_MAX_ZK];
  zp(p, "%s", path);
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == 0) {
      char keep = *s;
      *s = 0;
      int rc = zoo_create(z->zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                          ZOO_PERSISTENT, NULL, 0);
      if (rc != ZOK && rc != ZNODEEXISTS)
        return zfail(err, rc, "create", p);
      *s = keep;
      if (!keep)
        break;
    }
  }
  return 0;
}

static int zk_open(frond_coord *c, const char *uri, frond_error *err) {
  const char *h = uri + strlen("zk://");
  const char *slash = strchr(h, '/');
  const char *qm;
  size_t nlen;
  zk *z;
  int rc;

  if (!slash || slash == h)
    return frond__fail(err, FROND_EINVAL,
                       "zookeeper coordinator wants "
                       "zk://host:port[,host:port...]/name, not '%s'",
                       uri);
  qm = strchr(slash, '?');
  nlen = qm ? (size_t)(qm - slash - 1) : strlen(slash + 1);
  if (nlen == 0 || memchr(slash + 1, '/', nlen) || nlen > 128)
    return frond__fail(err, FROND_EINVAL,
                       "zookeeper cluster name must be 1..128 characters "
                       "without '/': '%s'",
                       uri);
  if (qm && (rc = frond__coord_parse_query(c, qm + 1, err)) != 0)
    return rc;
  if (!(z = calloc(1, sizeof(*z))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  z->c = c;
  c->impl = z;
  snprintf(z->hosts, sizeof(z->hosts), "%.*s", (int)(slash - h), h);
  zp(z->root, "/snowflake/%.*s", (int)nlen, slash + 1);
  zp(z->forever, "%s/forever", z->root);
  zp(z->claims, "%s/claims", z->root);
  pthread_mutex_init(&z->mu, NULL);

  atomic_init(&z->expired, 0);
  if (c->o.retention_ms > 0)
    c->validity_ms = c->o.retention_ms / 2;
  zoo_set_debug_level(getenv("FROND_ZK_DEBUG") ? ZOO_LOG_LEVEL_INFO : 0);
  return zk_connect(z, err);
}

/* "ip:port-0000000012" -> owner length and sequence, or -1. */
static int parse_child(const char *name, size_t *olen, uint64_t *seq) {
  const char *dash = strrchr(name, '-');
  int64_t v;
  if (!dash || dash == name || strlen(dash + 1) != 10 ||
      frond__parse_i64(dash + 1, 10, &v) != 0 || v < 0)
    return -1;
  *olen = (size_t)(dash - name);
  *seq = (uint64_t)v;
  return 0;
}

static int64_t json_timestamp(const char *buf) {
  const char *t = strstr(buf, "\"timestamp\":");
  return t ? strtoll(t + 12, NULL, 10) : 0;
}

static int format_data(zk *z, int64_t ms, char *buf, size_t len) {
  const char *colon = strrchr(z->c->owner, ':');
  return snprintf(buf, len,
                  "{\"ip\":\"%.*s\",\"port\":\"%s\",\"timestamp\":%" PRId64 "}",
                  (int)(colon - z->c->owner), z->c->owner, colon + 1, ms);
}

/* Read a child's stored timestamp (and version). */
static int read_ts(zk *z, const char *path, int64_t *ts, int *version,
                   frond_error *err) {
  char buf[512];
  int len = sizeof(buf) - 1, rc;
  struct Stat st;
  rc = zoo_get(z->zh, path, 0, buf, &len, &st);
  if (rc != ZOK)
    return rc == ZNONODE ? FROND_ENODE_ID_LOST : zfail(err, rc, "get", path);
  buf[len > 0 ? len : 0] = 0;
  *ts = json_timestamp(buf);
  if (version)
    *version = st.version;
  return 0;
}

static int create_claim(zk *z, frond_error *err) {
  char path[PATH_MAX_ZK], data[FROND_COORD_OWNER_MAX + 32];
  int rc;
  zp(path, "%s/%010" PRIu64, z->claims, z->node);
  snprintf(data, sizeof(data), "%s pid %d", z->c->owner, (int)getpid());
  rc = zoo_create(z->zh, path, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE,
                  ZOO_EPHEMERAL, NULL, 0);
  if (rc == ZNODEEXISTS) {
    char held[256];
    int len = sizeof(held) - 1;
    struct Stat st;
    const clientid_t *me = zoo_client_id(z->zh);
    if (zoo_get(z->zh, path, 0, held, &len, &st) == ZOK) {
      if (me && st.ephemeralOwner == me->client_id) {
        atomic_store(&z->claimed, 1);
        return 0;
      }
      held[len > 0 ? len : 0] = 0;
    } else {
      snprintf(held, sizeof(held), "another process");
    }
    return frond__fail(err, FROND_ENODE_IN_USE,
                       "node ID %" PRIu64 " (%s) is claimed by a live "
                       "process: %s",
                       z->node, z->c->owner, held);
  }
  if (rc != ZOK)
    return zfail(err, rc, "create", path);
  atomic_store(&z->claimed, 1);
  return 0;
}

/* Take over an old, unclaimed ID for our ip:port. */
static int reclaim(zk *z, struct String_vector *kids, int64_t *hw,
                   frond_error *err) {
  frond_coord *c = z->c;
  int64_t now = frond__coord_now(c);
  for (uint64_t want = 0; c->o.retention_ms > 0 && want <= c->max_node;
       want++) {
    for (int32_t i = 0; i < kids->count; i++) {
      char old[PATH_MAX_ZK], nw[PATH_MAX_ZK], claim[PATH_MAX_ZK], data[256];
      char cdata[FROND_COORD_OWNER_MAX + 32];
      size_t olen;
      uint64_t seq;
      int64_t ts;
      int version, rc;
      zoo_op_t ops[3];
      zoo_op_result_t res[3];
      if (parse_child(kids->data[i], &olen, &seq) != 0 || seq != want)
        continue;
      zp(old, "%s/%s", z->forever, kids->data[i]);
      zp(claim, "%s/%010" PRIu64, z->claims, seq);
      if (zoo_exists(z->zh, claim, 0, NULL) != ZNONODE)
        continue;
      if (read_ts(z, old, &ts, &version, NULL) != 0)
        continue;
      if (now - ts < c->o.retention_ms)
        continue;
      zp(nw, "%s/%s-%010" PRIu64, z->forever, c->owner, seq);
      format_data(z, ts, data, sizeof(data));
      snprintf(cdata, sizeof(cdata), "%s pid %d", c->owner, (int)getpid());
      zoo_delete_op_init(&ops[0], old, version);
      zoo_create_op_init(&ops[1], nw, data, (int)strlen(data),
                         &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
      zoo_create_op_init(&ops[2], claim, cdata, (int)strlen(cdata),
                         &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
      rc = zoo_multi(z->zh, 3, ops, res);
      if (rc != ZOK)
        continue; /* someone was faster, or it changed: try the next */
      frond_log(FROND_LOG_WARN,
                "node ID %" PRIu64 " reclaimed from %.*s (unused since "
                "%" PRId64 ")",
                seq, (int)olen, kids->data[i], ts);
      z->node = seq;
      z->have_node = 1;
      zp(z->mine, "%s", nw);
      pthread_mutex_lock(&z->mu);
      atomic_store(&z->claimed, 1);
      pthread_mutex_unlock(&z->mu);
      *hw = ts;
      return 0;
    }
  }
  return frond__fail(err, FROND_ENODE_RANGE,
                     "no free node ID in %s: the sequence is past %" PRIu64
                     " and no ID has been unclaimed for retention_ms=%" PRId64
                     "%s",
                     z->forever, c->max_node, c->o.retention_ms,
                     c->o.retention_ms ? "" : " (reclaiming is off)");
}

/* The lowest child of forever for our ip:port, or -1. */
static int find_mine(zk *z, struct String_vector *kids, uint64_t *seq,
                     char *name, size_t len) {
  int found = -1;
  size_t ol = strlen(z->c->owner);
  for (int32_t i = 0; i < kids->count; i++) {
    size_t olen;
    uint64_t s;
    if (parse_child(kids->data[i], &olen, &s) != 0 || olen != ol ||
        memcmp(kids->data[i], z->c->owner, ol) != 0)
      continue;
    if (found < 0 || s < *seq) {
      *seq = s;
      snprintf(name, len, "%s", kids->data[i]);
      found = 0;
    }
  }
  return found;
}

static int zk_acquire(frond_coord *c, frond_coord_claim *out,
                      frond_error *err) {
  zk *z = c->impl;
  struct String_vector kids = {0, NULL};
  char name[PATH_MAX_ZK], created[PATH_MAX_ZK], data[256];
  uint64_t seq = 0;
  int64_t hw = 0;
  int rc;

  if (!is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  if ((rc = ensure_path(z, z->forever, err)) != 0 ||
      (rc = ensure_path(z, z->claims, err)) != 0)
    return rc;
  if ((rc = zoo_get_children(z->zh, z->forever, 0, &kids)) != ZOK)
    return zfail(err, rc, "list", z->forever);
  if (find_mine(z, &kids, &seq, name, sizeof(name)) != 0) {
    char prefix[PATH_MAX_ZK];
    zp(prefix, "%s/%s-", z->forever, c->owner);
    format_data(z, frond__coord_now(c), data, sizeof(data));
    rc =
        zoo_create(z->zh, prefix, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE,
                   ZOO_PERSISTENT_SEQUENTIAL, created, sizeof(created));
    deallocate_String_vector(&kids);
    if (rc != ZOK)
      return zfail(err, rc, "create", prefix);
    /* Two first starts of one ip:port may race: both keep the lowest
    ** child, so the claim below admits only one of them. */
    if ((rc = zoo_get_children(z->zh, z->forever, 0, &kids)) != ZOK)
      return zfail(err, rc, "list", z->forever);
    find_mine(z, &kids, &seq, name, sizeof(name));
    if (strcmp(strrchr(created, '/') + 1, name) != 0)
      zoo_delete(z->zh, created, -1);
    if (seq > c->max_node) {
      zoo_delete(z->zh, created, -1);
      rc = reclaim(z, &kids, &hw, err);
      deallocate_String_vector(&kids);
      if (rc != 0)
        return rc;
      memset(out, 0, sizeof(*out));
      out->node = z->node;
      out->high_water_ms = hw;
      return 0;
    }
  }
  deallocate_String_vector(&kids);
  z->node = seq;
  z->have_node = 1;
  zp(z->mine, "%s/%s", z->forever, name);
  if (seq > c->max_node)
    return frond__fail(err, FROND_ENODE_RANGE,
                       "%s holds node ID %" PRIu64 " above the layout's "
                       "largest %" PRIu64,
                       z->mine, seq, c->max_node);
  if ((rc = create_claim(z, err)) != 0)
    return rc;
  if ((rc = read_ts(z, z->mine, &hw, NULL, err)) != 0) {
    if (rc == FROND_ENODE_ID_LOST)
      rc = frond__fail(err, FROND_ECOORD, "%s vanished", z->mine);
    return rc;
  }
  memset(out, 0, sizeof(*out));
  out->node = seq;
  out->high_water_ms = hw;
  return 0;
}

/* Started from the cache, or after an expiry: find our child again and
** claim the ID. NODE_ID_LOST when it is not ours any more. */
static int claim_again(zk *z, int64_t *after, frond_error *err) {
  frond_coord *c = z->c;
  struct String_vector kids = {0, NULL};
  char name[PATH_MAX_ZK];
  uint64_t seq = 0;
  int rc, found = 0;

  if ((rc = zoo_get_children(z->zh, z->forever, 0, &kids)) != ZOK)
    return zfail(err, rc, "list", z->forever);
  for (int32_t i = 0; i < kids.count; i++) {
    size_t olen;
    if (parse_child(kids.data[i], &olen, &seq) == 0 && seq == c->claim.node) {
      zp(name, "%s", kids.data[i]);
      found =
          olen == strlen(c->owner) && memcmp(kids.data[i], c->owner, olen) == 0;
      break;
    }
  }
  deallocate_String_vector(&kids);
  if (!found)
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "node ID %" PRIu64 " no longer belongs to %s in %s",
                       c->claim.node, c->owner, z->forever);
  z->node = c->claim.node;
  z->have_node = 1;
  zp(z->mine, "%s/%s", z->forever, name);
  if ((rc = create_claim(z, err)) != 0)
    return rc == FROND_ENODE_IN_USE ? FROND_ENODE_ID_LOST : rc;
  return read_ts(z, z->mine, after, NULL, err);
}

static int zk_regain(frond_coord *c, int64_t *after, frond_error *err) {
  zk *z = c->impl;
  int rc;
  *after = 0;
  if (atomic_load(&z->expired) || !z->zh) {
    if (z->zh)
      zookeeper_close(z->zh);
    z->zh = NULL;
    if ((rc = zk_connect(z, err)) != 0)
      return rc;
  }
  if (!is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  return claim_again(z, after, err);
}

static int zk_report(frond_coord *c, int64_t hw, frond_error *err) {
  zk *z = c->impl;
  char data[256];
  int64_t now = frond__coord_now(c);
  int rc;

  if (atomic_load(&z->expired))
    return frond__fail(err, FROND_ENODE_ID_LOST,
                       "zookeeper session expired; claim on node ID %" PRIu64
                       " lost",
                       c->claim.node);
  /* zookeeper_init itself failed at start: try again. */
  if (!z->zh && (rc = zk_connect(z, err)) != 0)
    return rc;
  if (!is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  if (!atomic_load(&z->claimed)) {
    /* Running from the cache: claim as soon as ZooKeeper is back. */
    int64_t after = 0;
    if ((rc = claim_again(z, &after, err)) != 0)
      return rc;
    if (after > now)
      atomic_store(&c->resume_after_ms, after);
  }
  format_data(z, hw > now ? hw : now, data, sizeof(data));
  rc = zoo_set(z->zh, z->mine, data, (int)strlen(data), -1);
  if (rc == ZNONODE)
    return frond__fail(err, FROND_ENODE_ID_LOST, "%s was removed", z->mine);
  if (rc != ZOK)
    return zfail(err, rc, "set", z->mine);
  return 0;
}

static int zk_release(frond_coord *c, int64_t hw, frond_error *err) {
  zk *z = c->impl;
  char data[256], claim[PATH_MAX_ZK];
  int rc;
  if (!z->have_node || !is_connected(z))
    return 0;
  if (hw > 0) {
    format_data(z, hw, data, sizeof(data));
    if (atomic_load(&z->claimed) &&
        (rc = zoo_set(z->zh, z->mine, data, (int)strlen(data), -1)) != ZOK)
      return zfail(err, rc, "set", z->mine);
  }
  if (atomic_load(&z->claimed)) {
    zp(claim, "%s/%010" PRIu64, z->claims, z->node);
    zoo_delete(z->zh, claim, -1);
    atomic_store(&z->claimed, 0);
  }
  return 0;
}

static int cmp_entry(const void *a, const void *b) {
  const frond_coord_entry *x = a, *y = b;
  return x->node < y->node ? -1 : x->node > y->node;
}

static int zk_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                   frond_error *err) {
  zk *z = c->impl;
  struct String_vector kids = {0, NULL};
  frond_coord_entry *e;
  size_t k = 0;
  int rc;

  if (!is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  rc = zoo_get_children(z->zh, z->forever, 0, &kids);
  if (rc == ZNONODE) {
    *out = calloc(1, sizeof(**out));
    *n = 0;
    return *out ? 0 : frond__fail(err, FROND_ENOMEM, NULL);
  }
  if (rc != ZOK)
    return zfail(err, rc, "list", z->forever);
  if (!(e = calloc(kids.count ? (size_t)kids.count : 1, sizeof(*e)))) {
    deallocate_String_vector(&kids);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (int32_t i = 0; i < kids.count; i++) {
    char path[PATH_MAX_ZK], claim[PATH_MAX_ZK];
    size_t olen;
    uint64_t seq;
    if (parse_child(kids.data[i], &olen, &seq) != 0)
      continue;
    e[k].node = seq;
    snprintf(e[k].owner, sizeof(e[k].owner), "%.*s", (int)olen, kids.data[i]);
    zp(path, "%s/%s", z->forever, kids.data[i]);
    read_ts(z, path, &e[k].high_water_ms, NULL, NULL);
    zp(claim, "%s/%010" PRIu64, z->claims, seq);
    e[k].live = zoo_exists(z->zh, claim, 0, NULL) == ZOK;
    k++;
  }
  deallocate_String_vector(&kids);
  qsort(e, k, sizeof(*e), cmp_entry);
  *out = e;
  *n = k;
  return 0;
}

static void zk_close(frond_coord *c) {
  zk *z = c->impl;
  if (!z)
    return;
  if (z->zh)
    zookeeper_close(z->zh);
  pthread_mutex_destroy(&z->mu);
  free(z);
}

int frond__coord_zk_expire_session(frond_coord *c, frond_error *err) {
  zk *z = c->impl;
  clientid_t id;
  zhandle_t *twin;
  int64_t deadline = frond__mono_ns() + 5000 * INT64_C(1000000);
  if (c->m != &frond__coord_zk_methods || !z->zh)
    return frond__fail(err, FROND_EINVAL, "not a connected zk coordinator");
  pthread_mutex_lock(&c->lock);
  id = *zoo_client_id(z->zh);
  pthread_mutex_unlock(&c->lock);
  /* A second handle on the same session, closed: the server ends the
  ** session, and the first handle learns that it expired. */
  twin = zookeeper_init(z->hosts, NULL, (int)c->o.session_ms, &id, NULL, 0);
  if (!twin)
    return frond__fail(err, FROND_ECOORD, "zookeeper_init failed");
  while (zoo_state(twin) != ZOO_CONNECTED_STATE && frond__mono_ns() < deadline)
    frond__sleep_ns(10 * 1000000);
  zookeeper_close(twin);
  return 0;
}

const frond_coord_methods frond__coord_zk_methods = {
    .version = 1,
    .scheme = "zk://",
    .open = zk_open,
    .acquire = zk_acquire,
    .report = zk_report,
    .regain = zk_regain,
    .release = zk_release,
    .list = zk_list,
    .close = zk_close,
    /* Leaf's rule: a restart may use the cached ID while ZooKeeper is
    ** down (with the clock check, unlike Leaf). */
    .cache_fallback = 1,
};
