/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_common.c -- what coord.c and every driver share, below both: the
** wall clock through the options, the URI's tunables, the identity
** check, the layout floor, the note of a background failure, whether a
** coordinator is a child's copy after fork(), and the layout record as a
** driver keeps it.
**
** Drivers call these; coord.c calls the drivers through their method
** tables. Keeping them here, and not in coord.c, is what lets the calls
** run one way: coord.c -> driver -> coord_common.c.
*/
#include "coord/coord.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int64_t frond__coord_now(const frond_coord *c) {
  return c->clock(c->clock_ctx);
}

/* ---- URI query ---------------------------------------------------------- */

static const struct {
  const char *name;
  size_t off;
  int64_t min, max;
} query_keys[] = {
#define K(n, lo, hi)                                                           \
  { #n, offsetof(frond__coord_tun, n), lo, hi }
    K(report_ms, 10, 3600000),  K(session_ms, 100, 3600000),
    K(connect_ms, 10, 3600000), K(retention_ms, 0, INT64_MAX / 4),
    K(lease_ms, 30, 86400000),  K(nodes, 1, INT64_MAX / 4),
    K(window_ms, 10, 3600000),  K(max_clock_offset_ms, 0, 86400000),
    K(max_wait_ms, 0, 3600000), K(node, 0, INT64_MAX / 4),
    K(unregistered, 0, 1),
#undef K
};

int frond__coord_is_query_key(const char *key, size_t len) {
  for (size_t i = 0; i < FROND__ARRAY_SIZE(query_keys); i++)
    if (strlen(query_keys[i].name) == len &&
        memcmp(query_keys[i].name, key, len) == 0)
      return 1;
  return 0;
}

int frond__coord_parse_query(frond_coord *c, const char *q, frond_error *err) {
  while (q && *q) {
    const char *amp = strchr(q, '&'), *eq = strchr(q, '=');
    size_t len = amp ? (size_t)(amp - q) : strlen(q), klen, i;
    int64_t v;
    if (!eq || eq >= q + len)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator option '%.*s' has no value", (int)len, q);
    klen = (size_t)(eq - q);
    if (frond__parse_i64(eq + 1, len - klen - 1, &v) != 0)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator option '%.*s' is not an integer",
                         (int)len, q);
    for (i = 0; i < FROND__ARRAY_SIZE(query_keys); i++)
      if (strlen(query_keys[i].name) == klen &&
          memcmp(query_keys[i].name, q, klen) == 0)
        break;
    if (i == FROND__ARRAY_SIZE(query_keys))
      return frond__fail(err, FROND_EINVAL, "unknown coordinator option '%.*s'",
                         (int)klen, q);
    if (v < query_keys[i].min || v > query_keys[i].max)
      return frond__fail(err, FROND_EINVAL,
                         "coordinator option %s=%" PRId64
                         " is outside [%" PRId64 ", %" PRId64 "]",
                         query_keys[i].name, v, query_keys[i].min,
                         query_keys[i].max);
    *(int64_t *)(void *)((char *)&c->t + query_keys[i].off) = v;
    q = amp ? amp + 1 : NULL;
  }
  return 0;
}

/* ---- identity ----------------------------------------------------------- */

int frond__coord_check_advertise(const char *s, frond_error *err) {
  const char *colon, *host = s, *end;
  int64_t port;
  if (s[0] == '[') {
    const char *rb = strchr(s, ']');
    if (!rb || rb[1] != ':' || rb == s + 1)
      goto bad;
    colon = rb + 1;
    host = s + 1;
    end = rb;
  } else {
    colon = strrchr(s, ':');
    if (!colon || colon == s || memchr(s, ':', (size_t)(colon - s)))
      goto bad;
    end = colon;
  }
  for (const char *p = host; p < end; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_' ||
          (*p == ':' && s[0] == '[')))
      goto bad;
  if (strlen(s) >= FROND_COORD_OWNER_MAX - 1 ||
      frond__parse_i64(colon + 1, strlen(colon + 1), &port) != 0 || port < 1 ||
      port > 65535)
    goto bad;
  return 0;
bad:
  return frond__fail(err, FROND_EINVAL,
                     "advertise: want host:port (IPv6 as [addr]:port, port "
                     "1..65535, host of letters, digits, '.', '-', '_'), not "
                     "'%.100s'",
                     s);
}

/* ---- layout floor ------------------------------------------------------- */

int64_t frond__coord_floor(const frond_layout *l, const frond_coord_entry *e,
                           size_t n) {
  int64_t floor = 0;
  for (size_t i = 0; i < n; i++) {
    frond_fields f;
    int64_t id, end = frond_layout_end_ms(l);
    if (e[i].fence_ms < l->epoch_ms || e[i].node > frond_layout_max_node(l))
      continue;
    memset(&f, 0, sizeof(f));
    f.time = ((e[i].fence_ms < end ? e[i].fence_ms : end - 1) - l->epoch_ms) /
             l->unit_ms;
    f.node = e[i].node;
    f.sequence = (UINT64_C(1) << l->seq_bits) - 1;
    if (frond_compose(l, &f, &id, NULL) == 0 && id > floor)
      floor = id;
  }
  return floor;
}

int64_t frond__coord_floor_ms(const frond_layout *l, int64_t floor_id) {
  unsigned shift = l->seq_bits + l->node_bits;
  if (floor_id <= 0)
    return 0;
  return l->epoch_ms + (floor_id >> shift) * l->unit_ms;
}

/* ---- background failures ------------------------------------------------ */

void frond__coord_note_error(frond_coord *c, int code, const char *msg) {
  atomic_store(&c->last_error, code);
  pthread_mutex_lock(&c->stats_lock);
  snprintf(c->last_error_message, sizeof(c->last_error_message), "%s",
           msg ? msg : "");
  pthread_mutex_unlock(&c->stats_lock);
}

/* ---- fork() ------------------------------------------------------------- */

/* The process key (no system call, every kind of fork where the kernel
** wipes it), and the pid where it does not. */
int frond__coord_forked(const frond_coord *c) {
  return frond__fork_seen(&c->fork) || (long)getpid() != c->pid;
}

int frond__coord_refuse_forked(const frond_coord *c, frond_error *err) {
  if (!frond__coord_forked(c))
    return 0;
  return frond__fail(err, FROND_EFORKED,
                     "this coordinator (%s, node ID %" PRIu64
                     ") belongs to process %ld; in a child of fork() it "
                     "would share its parent's node ID and connection: open "
                     "a coordinator in the child, which claims a node ID of "
                     "its own",
                     c->uri, c->node, c->pid);
}

/* ---- the layout record --------------------------------------------------- */

int frond__coord_layout_record(frond_coord *c, char *spec, size_t len,
                               int64_t *floor_id, int *changing,
                               frond_error *err) {
  size_t n = strlen(FROND_COORD_CHANGING);
  int rc;
  spec[0] = 0;
  pthread_mutex_lock(&c->lock);
  rc = c->m->xLayoutGet(c, spec, len, floor_id, err);
  pthread_mutex_unlock(&c->lock);
  if (changing)
    *changing = 0;
  if (rc == 0 && strncmp(spec, FROND_COORD_CHANGING, n) == 0) {
    memmove(spec, spec + n, strlen(spec + n) + 1);
    if (changing)
      *changing = 1;
  }
  return rc;
}
