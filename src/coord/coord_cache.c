/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_cache.c -- the node cache file: node ID and fence, kept locally.
**
** This file contains the cache file every coordinator but static keeps in
** its cache directory. It serves two ends:
**
**   - write-ahead of the fence: a fence is written here before it is sent
**     to the coordinator, so that a write whose answer was lost (and that
**     may have committed) is covered by every later start from this file;
**   - a start while ZooKeeper is unreachable learns its node ID here (as
**     Leaf's workerID.properties), starts above the cached fence and issues
**     nothing until ZooKeeper answers and a later fence is durable there.
**
** One file per coordinator and identity, so servers sharing a directory
** never share one:
**
**   frond-node-<identity>-<16 hex: FNV-1a of the coordinator>.cache
**
** A record file (base/record.h) of kind "node cache", Leaf's "workerID=N"
** among its keys:
**   # frond node cache
**   uri=zk://...
**   owner=10.0.0.7:8080
**   workerID=5
**   high_water_ms=1700000000000       the fence
**   reported_ms=1699999999000
**   scope=datacenter=3               the node IDs served (none: "all")
**   end=<FNV-1a 64 of everything above, 16 hex digits>
** The last line holds a checksum of everything before it, so a torn or
** edited file is refused instead of trusted.
*/
#include "coord/coord.h"
#include "base/base.h"
#include "base/record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void frond__coord_cache_uri(const char *uri, char *buf, size_t len) {
  size_t n = strcspn(uri, "?");
  const char *scheme = strstr(uri, "://");
  const char *at = NULL;
  /* user:password@host: keep the user, drop the password. */
  if (scheme && scheme < uri + n) {
    const char *host = scheme + 3;
    const char *slash = strchr(host, '/');
    const char *end = slash && slash < uri + n ? slash : uri + n;
    for (const char *p = host; p < end; p++)
      if (*p == '@')
        at = p;
    if (at) {
      const char *colon = memchr(host, ':', (size_t)(at - host));
      if (colon) {
        snprintf(buf, len, "%.*s%.*s", (int)(colon - uri), uri,
                 (int)(uri + n - at), at);
        return;
      }
    }
  }
  snprintf(buf, len, "%.*s", (int)n, uri);
}

int frond__coord_cache_name(const frond_coord *c, char *buf, size_t len) {
  char id[FROND_COORD_OWNER_MAX], coord[FROND_COORD_URI_MAX];
  size_t i;
  int n;
  for (i = 0; c->owner[i] && i + 1 < sizeof(id); i++) {
    char ch = c->owner[i];
    int safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
               (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
    id[i] = safe ? ch : '_';
  }
  id[i] = 0;
  frond__coord_cache_uri(c->uri, coord, sizeof(coord));
  n = snprintf(buf, len, "%s/frond-node-%s-%016" PRIx64 ".cache", c->cache_dir,
               id, frond__fnv1a64(coord, strlen(coord)));
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

#define CACHE_KIND "node cache"

/* The entry as a record file (not finished). */
static void fill(const frond_coord_cache *cc, frond__record *r) {
  frond__record_init(r, CACHE_KIND);
  frond__record_put(r, "uri", cc->uri);
  frond__record_put(r, "owner", cc->owner);
  frond__record_put_u64(r, "workerID", cc->node);
  frond__record_put_i64(r, "high_water_ms", cc->fence_ms);
  frond__record_put_i64(r, "reported_ms", cc->reported_ms);
  if (cc->scope[0])
    frond__record_put(r, "scope", cc->scope);
}

int frond__coord_cache_format(const frond_coord_cache *cc, char *buf,
                              size_t len) {
  frond__record r;
  int n;
  fill(cc, &r);
  if (frond__record_finish(&r) < 0)
    return -1;
  n = snprintf(buf, len, "%.*s", (int)r.len, r.text);
  return n < 0 || (size_t)n >= len ? -1 : n;
}

int frond__coord_cache_write(const char *path, const frond_coord_cache *cc,
                             frond_error *err) {
  frond__record r;
  fill(cc, &r);
  return frond__record_write(&r, path, err);
}

int frond__coord_cache_store(frond_coord *c, int64_t fence_ms,
                             frond_error *err) {
  frond_coord_cache cc;
  if (!c->cache_path[0])
    return 0;
  frond__coord_cache_uri(c->uri, cc.uri, sizeof(cc.uri));
  snprintf(cc.owner, sizeof(cc.owner), "%s", c->owner);
  cc.node = c->node;
  cc.fence_ms = fence_ms;
  cc.reported_ms = atomic_load(&c->last_write_ms);
  snprintf(cc.scope, sizeof(cc.scope), "%s", c->scoped ? c->scope : "");
  return frond__coord_cache_write(c->cache_path, &cc, err);
}

/* The entry of a record read: 0, or -1 when a key is missing or a number
** is out of its range. */
static int entry_of(const frond__record *r, frond_coord_cache *cc) {
  int64_t fence;
  if (frond__record_get_str(r, "uri", cc->uri, sizeof(cc->uri)) != 0 ||
      frond__record_get_str(r, "owner", cc->owner, sizeof(cc->owner)) != 0 ||
      frond__record_get_u64(r, "workerID", &cc->node) != 0 ||
      frond__record_get_i64(r, "high_water_ms", &fence) != 0 || fence < 0 ||
      frond__record_get_i64(r, "reported_ms", &cc->reported_ms) != 0)
    return -1;
  cc->fence_ms = fence;
  /* Written before node ranges: the whole range. */
  if (frond__record_get_str(r, "scope", cc->scope, sizeof(cc->scope)) != 0)
    snprintf(cc->scope, sizeof(cc->scope), "all");
  return 0;
}

int frond__coord_cache_parse(const char *data, size_t len,
                             frond_coord_cache *cc) {
  frond__record r;
  const char *why;
  if (frond__record_parse(&r, CACHE_KIND, NULL, data, len, &why) != 0)
    return -1;
  return entry_of(&r, cc);
}

int frond__coord_cache_read(const char *path, frond_coord_cache *cc,
                            int *missing, frond_error *err) {
  frond__record r;
  int rc = frond__record_read(&r, path, CACHE_KIND, NULL,
                              FROND_EHIGHWATER_CORRUPT, err);
  *missing = rc == 1;
  if (rc == 1)
    return frond__fail(err, FROND_EIO, "node cache %s: %s", path,
                       strerror(ENOENT));
  if (rc == 0 && entry_of(&r, cc) != 0)
    rc =
        frond__fail(err, FROND_EHIGHWATER_CORRUPT, "%s: malformed entry", path);
  if (rc == FROND_EHIGHWATER_CORRUPT && err != NULL) {
    char detail[sizeof(err->message)];
    snprintf(detail, sizeof(detail), "%s", err->message);
    frond__fail(err, rc,
                "node cache %s; remove it only if no other process uses its "
                "node ID",
                detail);
  }
  return rc;
}
