/* SPDX-License-Identifier: Apache-2.0 */
/*
** config_coord.c -- the coordinator a configuration names (config.h's
** frond__config_coord_uri): `coordinator`, `node` and `store` together.
**
** By default (`coordinator = auto`) node IDs come from the store's
** database, a lease per node ID ("lease+<store>"), so that servers and
** commands that share a store never share a node ID with nothing set. A
** node ID typed by hand is registered there too, as a lease pinned to it
** ("lease+<store>?node=N"): a second live holder is refused, and the lease
** hands it to nobody else. Only where nothing is shared (store = none), or
** where the operator says so (static:N?unregistered=1), is a static node
** ID left to the operator, with its high-water file. A multi: store is
** several databases, none of which every server is sure to share: it
** needs a coordinator named.
*/
#include "server/config.h"

#include "base/base.h"

#include <stdio.h>
#include <string.h>

/* Is the store one SQL database, where node IDs can be claimed? */
static int store_is_db(const char *store) {
  return strcmp(store, "none") != 0 && strncmp(store, "multi:", 6) != 0 &&
         strncmp(store, "frond://", 8) != 0;
}

/* A frond:// store: Frond servers, which lease segment ranges, never node
** IDs (the servers' own come from their database or coordinator). */
static int store_is_servers(const char *store) {
  return strncmp(store, "frond://", 8) == 0;
}

/* "lease+<store>" with the extra query options q (may be empty). */
static int lease_on_store(const char *store, const char *q, char *uri,
                          size_t cap, frond_error *err) {
  int n = snprintf(uri, cap, "lease+%s%s%s", store,
                   q[0] ? (strchr(store, '?') ? "&" : "?") : "", q);
  if (n < 0 || (size_t)n >= cap)
    return frond__fail(err, FROND_EINVAL,
                       "store: the URI is too long to "
                       "claim node IDs in");
  return 0;
}

/* static:N[?query]: registered in the store (a lease pinned to N) unless
** the query says unregistered=1 or there is no store. */
/* The value of the last key=<integer> in query q (as the coordinator's
** parser reads it: the last one wins), or -1. */
static int64_t query_int(const char *q, const char *key) {
  size_t k = strlen(key);
  int64_t n, v = -1;
  for (; q && *q; q += strcspn(q, "&") + (q[strcspn(q, "&")] == '&'))
    if (strncmp(q, key, k) == 0 && q[k] == '=')
      v = frond__parse_i64(q + k + 1, strcspn(q + k + 1, "&"), &n) == 0 ? n
                                                                        : -1;
  return v;
}

static int static_uri(const frond__config *c, int64_t n, const char *q,
                      char *uri, size_t cap, frond_error *err) {
  char opts[300];
  int unregistered = query_int(q, "unregistered") == 1;
  if (query_int(q, "node") != -1 || strstr(q, "node=") != NULL)
    return frond__fail(err, FROND_EINVAL,
                       "coordinator: static:%lld names its node ID; node= "
                       "is for a lease",
                       (long long)n);
  if (strlen(q) >= sizeof opts - 32)
    return frond__fail(err, FROND_EINVAL,
                       "coordinator: the query is too "
                       "long");
  if (unregistered || strcmp(c->store, "none") == 0) {
    snprintf(uri, cap, "static:%lld%s%s", (long long)n, q[0] ? "?" : "", q);
    return 0;
  }
  if (store_is_servers(c->store))
    return frond__fail(
        err, FROND_EINVAL,
        "coordinator: static node ID %lld cannot be registered in a "
        "frond:// store (its servers lease segment ranges, not node IDs): "
        "register it where the servers' node IDs are, coordinator = "
        "lease+<their database's URI>?node=%lld, or say that nothing else "
        "can use node %lld: static:%lld?unregistered=1",
        (long long)n, (long long)n, (long long)n, (long long)n);
  if (!store_is_db(c->store))
    return frond__fail(
        err, FROND_EINVAL,
        "coordinator: static node ID %lld cannot be registered in a multi: "
        "store (its databases are separate): name one database for node IDs "
        "on every server, coordinator = lease+<its URI>?node=%lld, or say "
        "that nothing else can use node %lld: static:%lld?unregistered=1",
        (long long)n, (long long)n, (long long)n, (long long)n);
  snprintf(opts, sizeof opts, "node=%lld%s%s", (long long)n, q[0] ? "&" : "",
           q);
  return lease_on_store(c->store, opts, uri, cap, err);
}

static int coord_uri(const frond__config *c, char *uri, size_t cap,
                     frond_error *err) {
  const char *co = c->coordinator, *q;
  int64_t n;
  if (co[0] == '\0') /* the library would take it for static:0 */
    return frond__fail(err, FROND_EINVAL,
                       "coordinator is empty: leave it out (auto: node IDs "
                       "from the store) or name one");
  if (strcmp(co, "auto") == 0) {
    if (c->node >= 0)
      return static_uri(c, c->node, "", uri, cap, err);
    if (strcmp(c->store, "none") == 0) {
      snprintf(uri, cap, "static:0");
      return 0;
    }
    if (store_is_servers(c->store))
      return frond__fail(
          err, FROND_EINVAL,
          "coordinator auto: the store is frond://, Frond servers that "
          "lease segment ranges, not node IDs: name the coordinator the "
          "servers use (lease+<their database's URI>, zk://...), or give "
          "this process a node of its own");
    if (!store_is_db(c->store))
      return frond__fail(
          err, FROND_EINVAL,
          "coordinator auto: the store is a multi: store, whose databases are "
          "separate, so no one of them can hand out node IDs for every "
          "server: name the coordinator, the same on every server "
          "(lease+<one database's URI>, zk://...), or give each server its "
          "own node");
    return lease_on_store(c->store, "", uri, cap, err);
  }
  if (strcmp(co, "static") == 0)
    return static_uri(c, c->node >= 0 ? c->node : 0, "", uri, cap, err);
  if (strncmp(co, "static:", 7) == 0) {
    size_t len = strcspn(co + 7, "?");
    q = co[7 + len] == '?' ? co + 8 + len : "";
    if (frond__parse_i64(co + 7, len, &n) != 0 || n < 0)
      return frond__fail(err, FROND_EINVAL, "coordinator: bad node ID in '%s'",
                         co);
    if (c->node >= 0 && c->node != n)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator '%s' and node = %lld disagree", co,
                         (long long)c->node);
    return static_uri(c, n, q, uri, cap, err);
  }
  if (c->node >= 0 && strncmp(co, "lease+", 6) == 0) {
    char opts[32];
    int64_t pinned = frond__config_pinned_node(co);
    if (pinned >= 0 && pinned != c->node)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator '%s' and node = %lld disagree", co,
                         (long long)c->node);
    snprintf(opts, sizeof opts, "node=%lld", (long long)c->node);
    return lease_on_store(co + 6, opts, uri, cap, err);
  }
  if (c->node >= 0)
    return frond__fail(err, FROND_EINVAL,
                       "node = %lld is for a static node ID or a lease; '%s' "
                       "assigns the node ID itself",
                       (long long)c->node, co);
  snprintf(uri, cap, "%s", co);
  return 0;
}

/* The key `datacenter`: datacenter=N on the coordinator's URI, which it
** records and checks (coord_scope.c). A static node ID names its node
** itself; a URI that names another datacenter disagrees. */
int frond__config_coord_uri(const frond__config *c, char *uri, size_t cap,
                            frond_error *err) {
  const char *q;
  int64_t dc;
  int rc = coord_uri(c, uri, cap, err);
  if (rc != 0 || c->datacenter < 0)
    return rc;
  /* With a store a static node ID is a pinned lease (node=N), which would
  ** record the datacenter for the fleet: refused as for static:. */
  if (strncmp(uri, "static:", 7) == 0 || frond__config_pinned_node(uri) >= 0)
    return frond__fail(err, FROND_ECONFIG,
                       "datacenter = %lld: a static node ID names its node "
                       "itself; datacenter is for zk://, etcd:// and "
                       "lease+ coordinators, which hand node IDs out",
                       (long long)c->datacenter);
  q = strchr(uri, '?');
  dc = q ? query_int(q + 1, "datacenter") : -1;
  if (dc >= 0 && dc != c->datacenter)
    return frond__fail(err, FROND_ECONFIG,
                       "coordinator '%s' and datacenter = %lld disagree",
                       c->coordinator, (long long)c->datacenter);
  if (dc >= 0)
    return 0;
  if (strlen(uri) + 32 >= cap)
    return frond__fail(err, FROND_EINVAL,
                       "coordinator: the URI is too long for datacenter=");
  snprintf(uri + strlen(uri), cap - strlen(uri), "%sdatacenter=%lld",
           q ? "&" : "?", (long long)c->datacenter);
  return 0;
}

int64_t frond__config_pinned_node(const char *uri) {
  const char *q = strchr(uri, '?');
  int64_t n;
  if (strncmp(uri, "static:", 7) == 0)
    return frond__parse_i64(uri + 7, strcspn(uri + 7, "?"), &n) == 0 ? n : -1;
  if (strncmp(uri, "lease+", 6) != 0 || q == NULL)
    return -1;
  return query_int(q + 1, "node");
}
