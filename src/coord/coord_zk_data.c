/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_zk_data.c -- what the ZooKeeper coordinator reads from and writes
** to its nodes, as pure functions: no connection, no libzookeeper, so they
** are built (and fuzzed) in every build, FROND_WITH_ZK or not.
**
** The names of Leaf's sequential children, the fence in Leaf's JSON, the
** fields of a claim's data, and the layout record (coord_zk.c describes
** each node).
*/
#include "coord/coord.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__zk_parse_uri(frond_coord *c, const char *uri, size_t *hosts_len,
                        const char **name, size_t *name_len, frond_error *err) {
  const char *h = uri + strlen("zk://");
  const char *slash = strchr(h, '/');
  const char *qm;
  size_t nlen;
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
  *hosts_len = (size_t)(slash - h);
  *name = slash + 1;
  *name_len = nlen;
  return 0;
}

/* "ip:port-0000000012" -> owner length and sequence, or -1. */
int frond__zk_parse_child(const char *name, size_t *olen, uint64_t *seq) {
  const char *dash = strrchr(name, '-');
  int64_t v;
  if (!dash || dash == name || strlen(dash + 1) != 10 ||
      frond__parse_i64(dash + 1, 10, &v) != 0 || v < 0)
    return -1;
  *olen = (size_t)(dash - name);
  *seq = (uint64_t)v;
  return 0;
}

int64_t frond__zk_timestamp(const char *buf) {
  const char *t = strstr(buf, "\"timestamp\":");
  return t ? strtoll(t + 12, NULL, 10) : 0;
}

int64_t frond__zk_claim_field(const char *data, const char *key) {
  char k[32];
  const char *p;
  snprintf(k, sizeof(k), " %s ", key);
  p = strstr(data, k);
  return p ? strtoll(p + strlen(k), NULL, 10) : -1;
}

/* ---- the layout record -------------------------------------------------- */

static void rec_line(const char *buf, const char *key, char *out, size_t len) {
  size_t kl = strlen(key);
  out[0] = 0;
  for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
      snprintf(out, len, "%.*s", (int)strcspn(p + kl + 1, "\n"), p + kl + 1);
      return;
    }
}

void frond__zk_parse_layout(const char *buf, frond__zk_layout_rec *r) {
  char v[32];
  memset(r, 0, sizeof(*r));
  rec_line(buf, "spec", r->spec, sizeof(r->spec));
  rec_line(buf, "previous", r->previous, sizeof(r->previous));
  rec_line(buf, "floor", v, sizeof(v));
  r->floor = strtoll(v, NULL, 10);
  rec_line(buf, "state", v, sizeof(v));
  r->changing = strcmp(v, "changing") == 0;
}

int frond__zk_format_layout(const frond__zk_layout_rec *r, char *buf,
                            size_t len) {
  return snprintf(
      buf, len, "spec=%s\nfloor=%" PRId64 "\nprevious=%s\nstate=%s\n", r->spec,
      r->floor, r->previous, r->changing ? "changing" : "ready");
}
