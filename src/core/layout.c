/* SPDX-License-Identifier: Apache-2.0 */
/*
** layout.c -- ID layouts: presets, spec parsing, validation, compose and
** decode.
**
** An ID is 0 | time | node | sequence. Everything here is a pure function
** of its arguments; nothing allocates.
*/
#include "core/core.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 2025-01-01T00:00:00Z: Frond's own epoch, recent so that 41 bits of
** milliseconds last until 2094. */
#define FROND_EPOCH_MS INT64_C(1735689600000)

static const frond_layout presets[] = {
    {"frond", 41, 10, 0, 0, 12, 1, FROND_EPOCH_MS},
    /* Twitter's original, also Meituan Leaf's. */
    {"twitter", 41, 10, 5, 5, 12, 1, INT64_C(1288834974657)},
    /* Sony's: 10 ms units from 2014-09-01. */
    {"sonyflake", 39, 16, 0, 0, 8, 10, INT64_C(1409529600000)},
    /* Baidu uid-generator's default: seconds from 2016-05-20; it ran out on
    ** 2024-11-20 and is kept to show (and refuse) exactly that. */
    {"baidu", 28, 22, 0, 0, 13, 1000, INT64_C(1463673600000)},
    /* Instagram's sharded IDs: 13 bits of shard, epoch 2011-08-24. Their
    ** scheme gives time 41 bits of a signed 64-bit integer, the top one being
    ** the sign; Frond keeps IDs non-negative, so 40 usable bits, identical
    ** IDs until that bit would flip (2046). */
    {"instagram", 40, 13, 0, 0, 10, 1, INT64_C(1314220021721)},
    /* IDs below 2^53, exact as JavaScript numbers (JSON parsed into
    ** doubles): Frond's unit and epoch, so the same 69.7 years (to 2094),
    ** and the 12 remaining bits split for an ID service rather than for
    ** every client: 32 nodes of 128,000 IDs/s each, about what one node
    ** serves over HTTP. */
    {"js", 41, 5, 0, 0, 7, 1, FROND_EPOCH_MS},
};

size_t frond_layout_preset_count(void) {
  return FROND__ARRAY_SIZE(presets);
}

const frond_layout *frond_layout_preset(size_t i) {
  return i < FROND__ARRAY_SIZE(presets) ? &presets[i] : NULL;
}

unsigned frond_layout_id_bits(const frond_layout *l) {
  return l->time_bits + l->node_bits + l->seq_bits;
}

uint64_t frond_layout_max_node(const frond_layout *l) {
  return (UINT64_C(1) << l->node_bits) - 1;
}

int64_t frond_layout_end_ms(const frond_layout *l) {
  /* epoch + 2^time_bits * unit, saturating. */
  int64_t units;
  if (l->time_bits >= 63)
    return INT64_MAX;
  units = INT64_C(1) << l->time_bits;
  if (units > (INT64_MAX - l->epoch_ms) / l->unit_ms)
    return INT64_MAX;
  return l->epoch_ms + units * l->unit_ms;
}

int64_t frond_layout_time_left_ms(const frond_layout *l, int64_t now_ms) {
  int64_t end = frond_layout_end_ms(l);
  if (now_ms >= end)
    return 0;
  if (now_ms < 0 && end > INT64_MAX + now_ms)
    return INT64_MAX;
  return end - now_ms;
}

int frond__layout_warn_end(const frond_layout *l, int64_t now_ms) {
  int64_t left = frond_layout_time_left_ms(l, now_ms);
  char spec[160], end[40];
  /* Run out already: the generator refuses to start, with its own words. */
  if (left == 0 || left >= FROND__LAYOUT_WARN_MS)
    return 0;
  frond_layout_format(l, spec, sizeof(spec));
  frond__format_rfc3339(frond_layout_end_ms(l), end, sizeof(end));
  frond_log(FROND_LOG_WARN,
            "layout '%s' (%s) runs out of time bits on %s, in %" PRId64
            " days: from then on every snowflake ID request fails with "
            "TIME_EXHAUSTED; move to a layout with a later end before that",
            l->name, spec, end, left / 86400000);
  return 1;
}

double frond_layout_ids_per_second(const frond_layout *l) {
  return (double)(UINT64_C(1) << l->seq_bits) * 1000.0 / (double)l->unit_ms;
}

int frond_layout_validate(const frond_layout *l, int64_t now_ms,
                          frond_error *err) {
  unsigned sum;
  if (l == NULL)
    return frond__fail(err, FROND_EINVAL, "layout is NULL");
  if (l->time_bits == 0)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "time bits must be at least 1");
  /* node_bits may be 0 (Simpleflake's 41 time + 22 sequence bits): the
  ** layout then has one node ID, 0, and every shift and mask below and in
  ** the generator is still right (a mask of 0, a shift by seq_bits). Who
  ** may run such a layout is the coordinator's question, not the layout's:
  ** exactly one holder can exist only where node ID 0 is claimed under
  ** mutual exclusion (server/node.c, frond__node_one_holder). */
  if (l->seq_bits == 0)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "sequence bits must be at least 1");
  if ((l->dc_bits == 0) != (l->worker_bits == 0))
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "datacenter and worker bits must both be set or both "
                       "be 0 (got dc=%u, worker=%u)",
                       l->dc_bits, l->worker_bits);
  if (l->dc_bits != 0 && l->dc_bits + l->worker_bits != l->node_bits)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "datacenter %u + worker %u bits must equal node bits %u",
                       l->dc_bits, l->worker_bits, l->node_bits);
  sum = l->time_bits + l->node_bits + l->seq_bits;
  if (l->time_bits > 63 || l->node_bits > 63 || l->seq_bits > 63 || sum > 63)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "time %u + node %u + sequence %u bits = %u, must be at "
                       "most 63",
                       l->time_bits, l->node_bits, l->seq_bits, sum);
  if (l->unit_ms < 1)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "time unit must be at least 1ms (got %" PRId64 "ms)",
                       l->unit_ms);
  if (l->unit_ms > 86400000)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "time unit must be at most 1 day (got %" PRId64 "ms)",
                       l->unit_ms);
  if (l->epoch_ms < 0)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "epoch must not be before 1970 (got %" PRId64 ")",
                       l->epoch_ms);
  if (frond_layout_end_ms(l) == INT64_MAX)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "%u time bits of %" PRId64 "ms units overflow a 64-bit "
                       "millisecond clock",
                       l->time_bits, l->unit_ms);
  if (l->epoch_ms > now_ms) {
    char e[40], n[40];
    frond__format_rfc3339(l->epoch_ms, e, sizeof(e));
    frond__format_rfc3339(now_ms, n, sizeof(n));
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "epoch %s is in the future (now %s)", e, n);
  }
  return 0;
}

/* Parse "<n>ms" or "<n>s" into milliseconds. */
static int parse_unit(const char *v, size_t len, int64_t *out) {
  int64_t n, mul = 1;
  if (len > 2 && memcmp(v + len - 2, "ms", 2) == 0)
    len -= 2;
  else if (len > 1 && v[len - 1] == 's') {
    len -= 1;
    mul = 1000;
  } else
    return -1;
  if (frond__parse_i64(v, len, &n) != 0 || n < 0 || n > INT64_MAX / mul)
    return -1;
  *out = n * mul;
  return 0;
}

/* Parse the digits at *p of exactly `width` characters. */
static int digits(const char **p, const char *end, int width, int *out) {
  int v = 0;
  for (int i = 0; i < width; i++) {
    if (*p >= end || (*p)[0] < '0' || (*p)[0] > '9')
      return -1;
    v = v * 10 + ((*p)[0] - '0');
    (*p)++;
  }
  *out = v;
  return 0;
}

static int expect(const char **p, const char *end, char c) {
  if (*p >= end || **p != c)
    return -1;
  (*p)++;
  return 0;
}

/* Parse an epoch: unix ms, or YYYY-MM-DD[THH:MM:SS[.mmm]Z] in UTC. */
static int parse_epoch(const char *v, size_t len, int64_t *out) {
  const char *p = v, *end = v + len;
  int y, mo, d, h = 0, mi = 0, s = 0, ms = 0;
  struct tm tm;
  time_t t;
  if (frond__parse_i64(v, len, out) == 0)
    return *out >= 0 ? 0 : -1;
  if (digits(&p, end, 4, &y) || expect(&p, end, '-') ||
      digits(&p, end, 2, &mo) || expect(&p, end, '-') || digits(&p, end, 2, &d))
    return -1;
  if (p < end) {
    if (expect(&p, end, 'T') || digits(&p, end, 2, &h) ||
        expect(&p, end, ':') || digits(&p, end, 2, &mi) ||
        expect(&p, end, ':') || digits(&p, end, 2, &s))
      return -1;
    if (p < end && *p == '.') {
      p++;
      if (digits(&p, end, 3, &ms))
        return -1;
    }
    if (expect(&p, end, 'Z') || p != end)
      return -1;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59)
    return -1;
  memset(&tm, 0, sizeof(tm));
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  t = timegm(&tm);
  /* timegm normalises 2024-02-31 to March; refuse such dates. */
  if (tm.tm_mday != d || tm.tm_mon != mo - 1)
    return -1;
  *out = (int64_t)t * 1000 + ms;
  return *out >= 0 ? 0 : -1;
}

/* Layout keys a spec may set, each at most once. */
enum { K_TIME, K_NODE, K_DC, K_WORKER, K_SEQ, K_UNIT, K_EPOCH, K_COUNT };
static const char *const key_names[K_COUNT] = {"time", "node", "dc",   "worker",
                                               "seq",  "unit", "epoch"};

int frond_layout_parse(const char *spec, frond_layout *out, frond_error *err) {
  frond_layout l;
  int seen[K_COUNT] = {0};
  const char *p, *end;
  if (spec == NULL || out == NULL)
    return frond__fail(err, FROND_EINVAL, "layout spec is NULL");
  for (size_t i = 0; i < FROND__ARRAY_SIZE(presets); i++) {
    if (strcmp(spec, presets[i].name) == 0) {
      *out = presets[i];
      return 0;
    }
  }
  if (strchr(spec, '=') == NULL)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "'%.64s' is neither a preset (frond, twitter, "
                       "sonyflake, baidu, instagram, js) nor a key=value spec",
                       spec);
  memset(&l, 0, sizeof(l));
  snprintf(l.name, sizeof(l.name), "custom");
  l.unit_ms = 1;
  l.epoch_ms = FROND_EPOCH_MS;
  p = spec;
  end = spec + strlen(spec);
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *item_end = comma ? comma : end;
    const char *eq = memchr(p, '=', (size_t)(item_end - p));
    size_t klen, vlen;
    const char *v;
    int k;
    int64_t n = 0;
    if (eq == NULL)
      return frond__fail(err, FROND_ELAYOUT_INVALID, "'%.*s' is not key=value",
                         (int)(item_end - p), p);
    klen = (size_t)(eq - p);
    v = eq + 1;
    vlen = (size_t)(item_end - v);
    for (k = 0; k < K_COUNT; k++)
      if (strlen(key_names[k]) == klen && memcmp(key_names[k], p, klen) == 0)
        break;
    if (k == K_COUNT)
      return frond__fail(err, FROND_ELAYOUT_INVALID,
                         "unknown layout key '%.*s' (keys: time, node, dc, "
                         "worker, seq, unit, epoch)",
                         (int)klen, p);
    if (seen[k]++)
      return frond__fail(err, FROND_ELAYOUT_INVALID, "'%s' given twice",
                         key_names[k]);
    if (k == K_UNIT) {
      if (parse_unit(v, vlen, &l.unit_ms) != 0)
        return frond__fail(err, FROND_ELAYOUT_INVALID,
                           "unit '%.*s' is not <n>ms or <n>s", (int)vlen, v);
    } else if (k == K_EPOCH) {
      if (parse_epoch(v, vlen, &l.epoch_ms) != 0)
        return frond__fail(err, FROND_ELAYOUT_INVALID,
                           "epoch '%.*s' is neither unix ms nor "
                           "YYYY-MM-DD[THH:MM:SS[.mmm]Z]",
                           (int)vlen, v);
    } else {
      if (frond__parse_i64(v, vlen, &n) != 0 || n < 0 || n > 63)
        return frond__fail(err, FROND_ELAYOUT_INVALID,
                           "%s bits '%.*s' is not a number from 0 to 63",
                           key_names[k], (int)vlen, v);
      switch (k) {
      case K_TIME:
        l.time_bits = (unsigned)n;
        break;
      case K_NODE:
        l.node_bits = (unsigned)n;
        break;
      case K_DC:
        l.dc_bits = (unsigned)n;
        break;
      case K_WORKER:
        l.worker_bits = (unsigned)n;
        break;
      default:
        l.seq_bits = (unsigned)n;
        break;
      }
    }
    p = comma ? comma + 1 : end;
    if (comma && p == end)
      return frond__fail(err, FROND_ELAYOUT_INVALID, "spec ends with ','");
  }
  if (!seen[K_TIME] || !seen[K_SEQ])
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "a layout spec needs time=, seq= and node= (or dc= "
                       "and worker=)");
  if (seen[K_DC] != seen[K_WORKER])
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "dc= and worker= go together");
  if (seen[K_DC]) {
    if (l.dc_bits == 0 || l.worker_bits == 0)
      return frond__fail(err, FROND_ELAYOUT_INVALID,
                         "dc and worker bits must be at least 1 (got dc=%u, "
                         "worker=%u)",
                         l.dc_bits, l.worker_bits);
    if (seen[K_NODE] && l.node_bits != l.dc_bits + l.worker_bits)
      return frond__fail(err, FROND_ELAYOUT_INVALID,
                         "node=%u disagrees with dc=%u + worker=%u",
                         l.node_bits, l.dc_bits, l.worker_bits);
    l.node_bits = l.dc_bits + l.worker_bits;
  } else if (!seen[K_NODE]) {
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "a layout spec needs node= (or dc= and worker=)");
  }
  {
    int rc = frond_layout_validate(&l, frond_clock_realtime(NULL), err);
    if (rc != 0)
      return rc;
  }
  *out = l;
  return 0;
}

int frond_layout_format(const frond_layout *l, char *buf, size_t len) {
  char node[32];
  if (l->dc_bits != 0)
    snprintf(node, sizeof(node), "dc=%u,worker=%u", l->dc_bits, l->worker_bits);
  else
    snprintf(node, sizeof(node), "node=%u", l->node_bits);
  if (l->unit_ms % 1000 == 0)
    return snprintf(
        buf, len, "time=%u,%s,seq=%u,unit=%" PRId64 "s,epoch=%" PRId64,
        l->time_bits, node, l->seq_bits, l->unit_ms / 1000, l->epoch_ms);
  return snprintf(buf, len,
                  "time=%u,%s,seq=%u,unit=%" PRId64 "ms,epoch=%" PRId64,
                  l->time_bits, node, l->seq_bits, l->unit_ms, l->epoch_ms);
}

int frond_decode(const frond_layout *l, int64_t id, frond_fields *out,
                 frond_error *err) {
  uint64_t u = (uint64_t)id;
  uint64_t seq_mask = (UINT64_C(1) << l->seq_bits) - 1;
  uint64_t node_mask = (UINT64_C(1) << l->node_bits) - 1;
  if (id < 0)
    return frond__fail(err, FROND_EID_INVALID,
                       "ID %" PRId64 " is negative: no valid ID has the top "
                       "bit set",
                       id);
  if (frond_layout_id_bits(l) < 63 && u >> frond_layout_id_bits(l) != 0)
    return frond__fail(err, FROND_EID_INVALID,
                       "ID %" PRId64 " is not below 2^%u, the top of layout "
                       "%s",
                       id, frond_layout_id_bits(l), l->name);
  out->sequence = u & seq_mask;
  out->node = (u >> l->seq_bits) & node_mask;
  out->time = (int64_t)(u >> (l->seq_bits + l->node_bits));
  out->unix_ms = l->epoch_ms + out->time * l->unit_ms;
  if (l->dc_bits != 0) {
    out->datacenter = out->node >> l->worker_bits;
    out->worker = out->node & ((UINT64_C(1) << l->worker_bits) - 1);
  } else {
    out->datacenter = 0;
    out->worker = out->node;
  }
  return 0;
}

int frond_compose(const frond_layout *l, const frond_fields *f, int64_t *id,
                  frond_error *err) {
  int64_t tmax = (INT64_C(1) << l->time_bits) - 1;
  if (f->time < 0)
    return frond__fail(err, FROND_EINVAL,
                       "time %" PRId64 " is before the layout's epoch",
                       f->time);
  if (f->time > tmax)
    return frond__fail(err, FROND_ETIME_EXHAUSTED,
                       "time %" PRId64 " does not fit in %u bits (max %" PRId64
                       ")",
                       f->time, l->time_bits, tmax);
  if (f->node > frond_layout_max_node(l))
    return frond__fail(err, FROND_ENODE_RANGE,
                       "node %" PRIu64 " does not fit in %u bits (max %" PRIu64
                       ")",
                       f->node, l->node_bits, frond_layout_max_node(l));
  if (f->sequence >= (UINT64_C(1) << l->seq_bits))
    return frond__fail(err, FROND_EINVAL,
                       "sequence %" PRIu64 " does not fit in %u bits",
                       f->sequence, l->seq_bits);
  *id = (int64_t)(((uint64_t)f->time << (l->seq_bits + l->node_bits)) |
                  (f->node << l->seq_bits) | f->sequence);
  return 0;
}

int frond_layout_node(const frond_layout *l, uint64_t datacenter,
                      uint64_t worker, uint64_t *node, frond_error *err) {
  if (l->dc_bits == 0) {
    if (datacenter != 0)
      return frond__fail(err, FROND_ENODE_RANGE,
                         "layout has no datacenter field (got %" PRIu64 ")",
                         datacenter);
    if (worker > frond_layout_max_node(l))
      return frond__fail(err, FROND_ENODE_RANGE,
                         "node %" PRIu64
                         " is above the layout's maximum %" PRIu64,
                         worker, frond_layout_max_node(l));
    *node = worker;
    return 0;
  }
  if (datacenter >= (UINT64_C(1) << l->dc_bits))
    return frond__fail(err, FROND_ENODE_RANGE,
                       "datacenter %" PRIu64 " does not fit in %u bits",
                       datacenter, l->dc_bits);
  if (worker >= (UINT64_C(1) << l->worker_bits))
    return frond__fail(err, FROND_ENODE_RANGE,
                       "worker %" PRIu64 " does not fit in %u bits", worker,
                       l->worker_bits);
  *node = (datacenter << l->worker_bits) | worker;
  return 0;
}
