/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_coord_uri.c -- libFuzzer harness for coordinator URIs: how
** frond_coord_open picks a coordinator, static:N, the zk://, etcd:// and
** lease+ grammars (read by their pure readers, so nothing connects), the query's
** tunables, and the form of a URI the node cache records.
**
** Whatever the bytes, a URI is accepted or refused with INVAL and a
** message, never half read:
**   - the cached form has no query, is no longer than the URI, and is its
**     own cached form (a cache written by one version matches itself);
**   - an accepted zk:// URI names 1..128 bytes of cluster without '/',
**     after non-empty hosts, and its tunables are the query's alone;
**   - an accepted etcd:// URI names 1..16 endpoints, each http:// or,
**     with TLS, https:// before host:port, and a prefix of '/' and at
**     least one more byte, without "//" or a trailing '/', and without
**     a component that is one of the driver's key names (layout, node,
**     claim, facts: another fleet's key directory);
**   - an accepted lease+ URI gives a URI the SQL layer accepts: the
**     target, and only the options that are not ours (none for sqlite);
**   - any other URI opens only as static:N with N >= 0 and a query that
**     the tunables reader accepts, without node= (a lease's).
*/
#include "coord/coord.h"
#include "coord/coord_etcd.h"
#include "base/base.h"
#include "store/db.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused(int rc, const frond_error *err) {
  if (rc != FROND_EINVAL || err->code != FROND_EINVAL || !err->message[0])
    abort();
}

static void cached(const char *uri) {
  char a[FROND_COORD_URI_MAX], b[FROND_COORD_URI_MAX], small[8];
  frond__coord_cache_uri(uri, a, sizeof(a));
  frond__coord_cache_uri(a, b, sizeof(b));
  if (strchr(a, '?') || strlen(a) > strlen(uri) || strcmp(a, b) != 0)
    abort();
  frond__coord_cache_uri(uri, small, sizeof(small));
  if (strncmp(small, a, sizeof(small) - 1) != 0)
    abort();
}

/* The tunables a query alone gives, or 1 when it is refused. */
static int query_only(const char *q, frond__coord_tun *t) {
  static frond_coord c;
  memset(&c, 0, sizeof(c));
  c.t.node = -1; /* as frond_coord_open starts */
  if (q && frond__coord_parse_query(&c, q, NULL) != 0)
    return 1;
  *t = c.t;
  return 0;
}

static void zk(const char *uri) {
  static frond_coord c;
  frond_error err = {0, ""};
  frond__coord_tun t;
  const char *name;
  size_t hlen, nlen;
  int rc;
  memset(&c, 0, sizeof(c));
  c.t.node = -1; /* as frond_coord_open starts */
  rc = frond__zk_parse_uri(&c, uri, &hlen, &name, &nlen, &err);
  if (rc != 0) {
    refused(rc, &err);
    return;
  }
  if (hlen == 0 || memchr(uri + 5, '/', hlen) || name != uri + 5 + hlen + 1 ||
      nlen == 0 || nlen > 128 || memchr(name, '/', nlen) ||
      (name[nlen] != '\0' && name[nlen] != '?'))
    abort();
  if (query_only(name[nlen] ? name + nlen + 1 : NULL, &t) != 0 ||
      memcmp(&t, &c.t, sizeof(t)) != 0)
    abort();
}

static void lease(const char *uri) {
  static frond_coord c;
  char dburi[FROND_LEASE_DB_URI_MAX];
  frond_error err = {0, ""};
  const char *target = uri + strlen("lease+"), *rest;
  frond_db_uri u;
  size_t blen;
  int rc;
  memset(&c, 0, sizeof(c));
  rc = frond__lease_parse_uri(&c, uri, dburi, sizeof(dburi), &err);
  if (rc != 0) {
    refused(rc, &err);
    return;
  }
  /* The SQL layer's URI: the target up to its query, then the options
  ** that are not ours; one the layer itself accepts. */
  blen = strcspn(dburi, "?");
  rest = dburi[blen] ? dburi + blen + 1 : "";
  if (strncmp(dburi, target, blen) != 0 ||
      (target[blen] != '\0' && target[blen] != '?') ||
      frond__db_uri_parse(dburi, &u, NULL) != 0)
    abort();
  if (rest[0] && strncmp(dburi, "sqlite:", 7) == 0)
    abort();
  for (const char *p = rest; *p;) {
    size_t n = strcspn(p, "&");
    if (n == 0 || frond__coord_is_query_key(p, strcspn(p, "=&")))
      abort();
    p += n + (p[n] == '&');
  }
}

static void etcd(const char *uri) {
  static frond_coord c;
  static frond__etcd_uri u;
  frond_error err = {0, ""};
  size_t pl;
  int rc;
  memset(&c, 0, sizeof(c));
  c.t.node = -1; /* as frond_coord_open starts */
  rc = frond__etcd_parse_uri(&c, uri, &u, &err);
  if (rc != 0) {
    refused(rc, &err);
    return;
  }
  pl = strlen(u.prefix);
  if (u.n < 1 || u.n > FROND__ETCD_ENDPOINTS_MAX || pl < 2 ||
      u.prefix[0] != '/' || u.prefix[pl - 1] == '/' || strstr(u.prefix, "//") ||
      (!u.user[0]) != (!u.password[0]))
    abort();
  for (const char *p = u.prefix + 1; *p;) {
    static const char *const own[] = {"layout", "node", "claim", "facts"};
    size_t n = strcspn(p, "/");
    for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
      if (strlen(own[k]) == n && memcmp(own[k], p, n) == 0)
        abort();
    p += n + (p[n] == '/');
  }
  for (int i = 0; i < u.n; i++)
    if (strncmp(u.endpoints[i], u.tls ? "https://" : "http://",
                u.tls ? 8 : 7) != 0 ||
        !strchr(u.endpoints[i] + 7, ':'))
      abort();
}

static void open_other(const char *uri) {
  frond_coord_options o;
  frond_error err = {0, ""};
  frond_coord *c = NULL;
  frond__coord_tun t;
  int64_t v;
  int want = uri[0] == '\0', rc;
  if (strncmp(uri, "static:", 7) == 0) {
    const char *n = uri + 7;
    size_t len = strcspn(n, "?");
    /* node= pins a lease; static:N names its node ID itself. */
    want = len > 0 && frond__parse_i64(n, len, &v) == 0 && v >= 0 &&
           query_only(n[len] ? n + len + 1 : NULL, &t) == 0 && t.node < 0;
  }
  frond_coord_options_init(&o);
  o.advertise = "127.0.0.1:7000";
  rc = frond_coord_open(&c, uri, &o, &err);
  if (rc == 0) {
    if (!want || !c || frond_coord_close(c, NULL) != 0)
      abort();
    return;
  }
  if (want || c)
    abort();
  refused(rc, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *uri;
  if (size >= FROND_COORD_URI_MAX || memchr(data, '\0', size))
    return 0; /* frond_coord_open refuses longer ones before any reader */
  if ((uri = malloc(size + 1)) == NULL)
    return 0;
  memcpy(uri, data, size);
  uri[size] = '\0';
  cached(uri);
  if (strncmp(uri, "zk://", 5) == 0)
    zk(uri);
  else if (strncmp(uri, "lease+", 6) == 0)
    lease(uri);
  else if (strncmp(uri, "etcd://", 7) == 0)
    etcd(uri);
  else
    open_other(uri);
  free(uri);
  return 0;
}
