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
** Text, one key per line, Leaf's "workerID=N" among them:
**   # frond node cache
**   uri=zk://...
**   owner=10.0.0.7:8080
**   workerID=5
**   high_water_ms=1700000000000       the fence
**   reported_ms=1699999999000
**   end=<FNV-1a 64 of everything above, 16 hex digits>
** The last line holds a checksum of everything before it, so a torn or
** edited file is refused instead of trusted.
*/
#include "coord/coord.h"
#include "base/base.h"
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

int frond__coord_cache_format(const frond_coord_cache *cc, char *buf,
                              size_t len) {
  int n = snprintf(buf, len,
                   "# frond node cache\nuri=%s\nowner=%s\nworkerID=%" PRIu64
                   "\nhigh_water_ms=%" PRId64 "\nreported_ms=%" PRId64 "\n",
                   cc->uri, cc->owner, cc->node, cc->fence_ms, cc->reported_ms);
  if (n < 0 || (size_t)n + 22 >= len)
    return -1;
  return n + snprintf(buf + n, len - (size_t)n, "end=%016" PRIx64 "\n",
                      frond__fnv1a64(buf, (size_t)n));
}

int frond__coord_cache_write(const char *path, const frond_coord_cache *cc,
                             frond_error *err) {
  char buf[2048];
  int n = frond__coord_cache_format(cc, buf, sizeof(buf));
  if (n < 0)
    return frond__fail(err, FROND_EINVAL, "node cache entry too long");
  return frond__file_replace(path, buf, (size_t)n, err);
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
  return frond__coord_cache_write(c->cache_path, &cc, err);
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

int frond__coord_cache_parse(const char *data, size_t len,
                             frond_coord_cache *cc) {
  char buf[2048], num[32], sum[24];
  const char *end;
  int64_t node, fence;
  if (len >= sizeof(buf) || memchr(data, 0, len))
    return -1;
  memcpy(buf, data, len);
  buf[len] = 0;
  end = strstr(buf, "end=");
  if (!end || (end != buf && end[-1] != '\n') ||
      cache_str(buf, "end", sum, sizeof(sum)) != 0)
    return -1;
  snprintf(num, sizeof(num), "%016" PRIx64,
           frond__fnv1a64(buf, (size_t)(end - buf)));
  if (strcmp(num, sum) != 0)
    return -1;
  if (cache_str(buf, "uri", cc->uri, sizeof(cc->uri)) != 0 ||
      cache_str(buf, "owner", cc->owner, sizeof(cc->owner)) != 0 ||
      cache_str(buf, "workerID", num, sizeof(num)) != 0 ||
      frond__parse_i64(num, strlen(num), &node) != 0 || node < 0 ||
      cache_str(buf, "high_water_ms", num, sizeof(num)) != 0 ||
      frond__parse_i64(num, strlen(num), &fence) != 0 || fence < 0 ||
      cache_str(buf, "reported_ms", num, sizeof(num)) != 0 ||
      frond__parse_i64(num, strlen(num), &cc->reported_ms) != 0)
    return -1;
  cc->node = (uint64_t)node;
  cc->fence_ms = fence;
  return 0;
}

int frond__coord_cache_read(const char *path, frond_coord_cache *cc,
                            int *missing, frond_error *err) {
  char buf[2048];
  ssize_t n;
  int fd;

  *missing = 0;
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
    *missing = errno == ENOENT;
    return frond__fail(err, FROND_EIO, "node cache %s: %s", path,
                       strerror(errno));
  }
  n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n < 0)
    return frond__fail(err, FROND_EIO, "node cache %s: %s", path,
                       strerror(errno));
  if (frond__coord_cache_parse(buf, (size_t)n, cc) != 0)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT,
                       "node cache %s is torn or corrupt; remove it only if "
                       "no other process uses its node ID",
                       path);
  return 0;
}
