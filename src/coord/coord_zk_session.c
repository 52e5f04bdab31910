/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_zk_session.c -- the ZooKeeper coordinator's session: connecting
** with a bounded wait, the watcher that notes expiry (the claim goes with
** the session, so the generator stops at once), reconnecting, and the
** small calls every step of coord_zk.c makes.
*/
#include "coord/coord_zk.h"
#include "base/base.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void frond__zk_path(char *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, PATH_MAX_ZK, fmt, ap);
  va_end(ap);
}

int frond__zk_fail(frond_error *err, int rc, const char *what,
                   const char *path) {
  return frond__fail(err, FROND_ECOORD, "zookeeper: %s %s: %s", what, path,
                     zerror(rc));
}

static void watcher(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  zk *z = ctx;
  int lost = 0;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&z->mu);
  z->connected = state == ZOO_CONNECTED_STATE;
  if (state == ZOO_EXPIRED_SESSION_STATE) {
    atomic_store(&z->expired, 1);
    /* The ephemeral claim is gone with the session: stop at once. */
    if (atomic_exchange(&z->claimed, 0)) {
      atomic_store(&z->c->lost, 1);
      lost = 1;
    }
  }
  pthread_cond_broadcast(&z->cv);
  pthread_mutex_unlock(&z->mu);
  if (lost)
    frond__coord_poke(z->c);
}

void frond__zk_claim_watcher(zhandle_t *zh, int type, int state,
                             const char *path, void *ctx) {
  zk *z = ctx;
  pthread_mutex_lock(&z->mu);
  z->claim_event = 1;
  pthread_cond_broadcast(&z->cv);
  pthread_mutex_unlock(&z->mu);
}

int frond__zk_is_connected(zk *z) {
  int ok;
  pthread_mutex_lock(&z->mu);
  ok = z->connected;
  pthread_mutex_unlock(&z->mu);
  return ok && z->zh && !atomic_load(&z->expired);
}

int frond__zk_connect(zk *z, frond_error *err) {
  int64_t ms = z->c->t.connect_ms, deadline;
  int ok;

  atomic_store(&z->expired, 0);
  pthread_mutex_lock(&z->mu);
  z->connected = 0;
  pthread_mutex_unlock(&z->mu);
  z->zh =
      zookeeper_init(z->hosts, watcher, (int)z->c->t.session_ms, NULL, z, 0);
  if (!z->zh)
    return frond__fail(err, FROND_ECOORD, "zookeeper %s: %s", z->hosts,
                       strerror(errno));
  /* Polled rather than a timed condition wait on the wall clock: immune to
  ** clock games (tests shift the wall clock with libfaketime). */
  deadline = frond__mono_ns() + ms * 1000000;
  while (!(ok = frond__zk_is_connected(z)) && frond__mono_ns() < deadline)
    frond__sleep_ns(2 * 1000000);
  if (!ok)
    return frond__fail(err, FROND_ECOORD,
                       "zookeeper %s unreachable after %" PRId64 " ms",
                       z->hosts, ms);
  /* A node that has not reached ZooKeeper for a session timeout stops
  ** (Curator's LOST): its session may be gone, its claim with it. */
  atomic_store(&z->c->validity_ms, (int64_t)zoo_recv_timeout(z->zh));
  return 0;
}

int frond__zk_ensure_session(zk *z, frond_error *err) {
  if (atomic_load(&z->expired) || !z->zh) {
    if (z->zh)
      zookeeper_close(z->zh);
    z->zh = NULL;
    atomic_store(&z->claimed, 0);
    return frond__zk_connect(z, err);
  }
  if (!frond__zk_is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  return 0;
}

int frond__zk_ensure_path(zk *z, const char *path, frond_error *err) {
  char p[PATH_MAX_ZK];
  frond__zk_path(p, "%s", path);
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == 0) {
      char keep = *s;
      int rc;
      *s = 0;
      rc = zoo_create(z->zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT,
                      NULL, 0);
      if (rc != ZOK && rc != ZNODEEXISTS)
        return frond__zk_fail(err, rc, "create", p);
      *s = keep;
      if (!keep)
        break;
    }
  }
  return 0;
}

int frond__zk_get(zk *z, const char *path, char *buf, struct Stat *st) {
  int len = DATA_MAX - 1, rc;
  rc = zoo_get(z->zh, path, 0, buf, &len, st);
  buf[rc == ZOK && len > 0 ? len : 0] = 0;
  return rc;
}

int frond__zk_fact(frond_coord *c, const char *name, const char *value,
                   char *recorded, size_t len, char *where, size_t wlen,
                   frond_error *err) {
  zk *z = c->impl;
  char dir[PATH_MAX_ZK], path[PATH_MAX_ZK], buf[DATA_MAX];
  struct Stat st;
  int rc;
  frond__zk_path(dir, "%s/facts", z->root);
  frond__zk_path(path, "%s/%s", dir, name);
  snprintf(where, wlen, "ZooKeeper %.160s at %s", z->hosts, path);
  if (!frond__zk_is_connected(z))
    return frond__fail(err, FROND_ECOORD, "zookeeper %s unreachable", z->hosts);
  if (value != NULL && (rc = frond__zk_ensure_path(z, dir, err)) != 0)
    return rc;
  rc = value == NULL
           ? ZOK
           : zoo_create(z->zh, path, value, (int)strlen(value),
                        &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
  if (rc != ZOK && rc != ZNODEEXISTS)
    return frond__zk_fail(err, rc, "create", path);
  rc = frond__zk_get(z, path, buf, &st);
  if (value == NULL && rc == ZNONODE) { /* read only: nothing recorded */
    recorded[0] = '\0';
    return 0;
  }
  if (rc != ZOK)
    return frond__zk_fail(err, rc, "get", path);
  snprintf(recorded, len, "%s", buf);
  return 0;
}

/* Tests: end this coordinator's session from outside, as a server does
** when it has not heard from the client for the session timeout. */
int frond__coord_zk_expire_session(frond_coord *c, frond_error *err) {
  zk *z = c->impl;
  clientid_t id;
  zhandle_t *twin;
  int64_t deadline = frond__mono_ns() + 5000 * INT64_C(1000000);
  if (strcmp(c->m->zScheme, "zk://") != 0 || !z->zh)
    return frond__fail(err, FROND_EINVAL, "not a connected zk coordinator");
  pthread_mutex_lock(&c->lock);
  id = *zoo_client_id(z->zh);
  pthread_mutex_unlock(&c->lock);
  /* A second handle on the same session, closed: the server ends the
  ** session, and the first handle learns that it expired. */
  twin = zookeeper_init(z->hosts, NULL, (int)c->t.session_ms, &id, NULL, 0);
  if (!twin)
    return frond__fail(err, FROND_ECOORD, "zookeeper_init failed");
  while (zoo_state(twin) != ZOO_CONNECTED_STATE && frond__mono_ns() < deadline)
    frond__sleep_ns(10 * 1000000);
  zookeeper_close(twin);
  return 0;
}

int frond__zk_claim_data(zk *z, int64_t now, char *buf, size_t len) {
  return snprintf(buf, len, "%s pid %d clock %" PRId64 " session %d",
                  z->c->owner, (int)getpid(), now,
                  z->zh ? zoo_recv_timeout(z->zh) : (int)z->c->t.session_ms);
}
