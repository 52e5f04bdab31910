/* SPDX-License-Identifier: Apache-2.0 */
/*
** metrics.c -- /metrics in the Prometheus text format, and the sums the
** status page and INFO read.
**
** Workers count into their own frond__metrics and each protocol into its
** own per-worker state; a scrape sums all workers with relaxed loads, so
** the request path never shares a cache line. Each protocol appends its
** own families through its table; library-side state (generator stats,
** per-tag buffers) is read through the library's thread-safe snapshots.
**
** Per-tag series are bounded, as Prometheus asks of label sets: every
** family has its aggregate over all tags, and per-tag series exist only for
** the tags named in metrics_tags and the metrics_top_tags fastest (by the
** allocator's sampled rate), however many tags the store holds.
*/
#include "server/quota.h"
#include "server/server.h"
#include "server/tls.h"

#include "server/acl.h"
#include "server/ready.h"

#include "base/base.h"
#include "coord/coord.h"
#include "core/core.h"
#include "server/build.h"
#include "store/store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t frond__metrics_sum(const frond__server *srv, size_t off) {
  uint64_t s = 0;
  int i;
  for (i = 0; i < srv->nworkers; i++) {
    const frond__counter *c =
        (const frond__counter *)(const void
                                     *)((const char *)&srv->workers[i].m + off);
    s += FROND__GET(*c);
  }
  return s;
}

uint64_t frond__metrics_state_sum(const frond__server *srv,
                                  const frond__proto *p, size_t off) {
  uint64_t s = 0;
  int i, j;
  for (i = 0; i < srv->nworkers; i++)
    for (j = 0; j < srv->workers[i].nlisteners; j++) {
      const frond__listener *l = &srv->workers[i].listeners[j];
      if (l->proto == p && l->state != NULL)
        s += FROND__GET(
            *(const frond__counter *)(const void *)((const char *)l->state +
                                                    off));
    }
  return s;
}

void frond__metrics_conns(const frond__server *srv, const frond__proto *p,
                          uint64_t *accepted, uint64_t *open) {
  uint64_t a = 0, c = 0;
  int i, j;
  for (i = 0; i < srv->nworkers; i++)
    for (j = 0; j < srv->workers[i].nlisteners; j++) {
      const frond__listener *l = &srv->workers[i].listeners[j];
      if (l->proto == p) {
        a += FROND__GET(l->accepted);
        c += FROND__GET(l->closed);
      }
    }
  *accepted = a;
  *open = a > c ? a - c : 0;
}

void frond__metrics_counter(frond__buf *b, const char *name, const char *help,
                            uint64_t v) {
  frond__buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help,
                    name, name, (unsigned long long)v);
}

const char *frond__metrics_num(double v, char buf[FROND__NUM_MAX]) {
  const char *e;
  int p, exp, digits;
  if (isnan(v))
    return "NaN";
  if (isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  if (v == 0)
    return "0"; /* and -0 */
  /* Any decimal of up to 15 digits survives a double, so %.15g finds it
  ** when there is one; 17 digits always read back. */
  for (p = 15; p < 17; p++) {
    snprintf(buf, FROND__NUM_MAX, "%.*g", p, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  snprintf(buf, FROND__NUM_MAX, "%.*g", p, v);
  if ((e = strchr(buf, 'e')) == NULL)
    return buf;
  /* %g chose an exponent: the same digits as a plain decimal, as the
  ** bounds of a histogram read best (le="0.00001"). */
  exp = atoi(e + 1);
  digits = 0;
  for (const char *q = buf; q < e; q++)
    digits += *q >= '0' && *q <= '9';
  if (exp < -12 || exp > 20)
    return buf;
  snprintf(buf, FROND__NUM_MAX, "%.*f",
           digits - 1 - exp > 0 ? digits - 1 - exp : 0, v);
  return buf;
}

void frond__metrics_gauge(frond__buf *b, const char *name, const char *help,
                          double v) {
  char num[FROND__NUM_MAX];
  frond__buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help,
                    name, name, frond__metrics_num(v, num));
}

const uint64_t frond__hist_bounds_ns[FROND__HIST_BOUNDS] = {
    1000,     2500,     5000,     10000,     25000,     50000,
    100000,   250000,   500000,   1000000,   2500000,   5000000,
    10000000, 25000000, 50000000, 100000000, 1000000000};

void frond__metrics_hist_head(frond__buf *b, const char *name,
                              const char *help) {
  frond__buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
}

void frond__metrics_hist(frond__buf *b, const frond__server *srv,
                         const frond__proto *p, size_t off, const char *name,
                         const char *label, const char *value) {
  uint64_t n[FROND__HIST_BOUNDS + 1], total = 0, cum = 0;
  char num[FROND__NUM_MAX];
  int k;
  for (k = 0; k <= FROND__HIST_BOUNDS; k++) {
    n[k] = frond__metrics_state_sum(srv, p,
                                    off + offsetof(frond__hist, n) +
                                        (size_t)k * sizeof(frond__counter));
    total += n[k];
  }
  if (total == 0)
    return;
  for (k = 0; k < FROND__HIST_BOUNDS; k++) {
    cum += n[k];
    frond__buf_printf(
        b, "%s_bucket{%s=\"%s\",le=\"%s\"} %llu\n", name, label, value,
        frond__metrics_num((double)frond__hist_bounds_ns[k] / 1e9, num),
        (unsigned long long)cum);
  }
  frond__buf_printf(
      b,
      "%s_bucket{%s=\"%s\",le=\"+Inf\"} %llu\n%s_sum{%s=\"%s\"} %s\n"
      "%s_count{%s=\"%s\"} %llu\n",
      name, label, value, (unsigned long long)total, name, label, value,
      frond__metrics_num((double)frond__metrics_state_sum(
                             srv, p, off + offsetof(frond__hist, sum_ns)) /
                             1e9,
                         num),
      name, label, value, (unsigned long long)total);
}

/* Tag names are valid UTF-8 without control characters; a label value
** needs only backslash and quote escaped. */
static void label(char *dst, size_t cap, const char *s) {
  size_t n = 0;
  for (; *s && n + 2 < cap; s++) {
    if (*s == '\\' || *s == '"')
      dst[n++] = '\\';
    dst[n++] = *s;
  }
  dst[n] = '\0';
}

static int info_cmp(const void *a, const void *b) {
  return strcmp(((const frond_tag_info *)a)->tag,
                ((const frond_tag_info *)b)->tag);
}

/* Append one tag's state to *v unless it is there. */
static int add_tag(frond_tag_info **v, size_t *n, size_t *cap,
                   const frond_tag_info *t) {
  size_t i;
  for (i = 0; i < *n; i++)
    if (strcmp((*v)[i].tag, t->tag) == 0)
      return 0;
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    frond_tag_info *p = realloc(*v, c * sizeof(*p));
    if (p == NULL)
      return -1;
    *v = p;
    *cap = c;
  }
  (*v)[(*n)++] = *t;
  return 0;
}

int frond__metrics_tags(frond__server *srv, frond_tag_info **out, size_t *n) {
  frond_seg *seg = atomic_load(&srv->seg);
  frond_tag_info *top = NULL, *v = NULL, ti;
  frond_seg_query q;
  size_t ntop = 0, cap = 0, i;
  const char *p = srv->cfg.metrics_tags, *e;
  *out = NULL;
  *n = 0;
  if (seg == NULL)
    return 0;
  memset(&q, 0, sizeof q);
  q.order = FROND_SEG_BY_RATE;
  q.limit = (size_t)srv->cfg.metrics_top_tags;
  if (q.limit > 0 && frond_seg_tag_query(seg, &q, &top, &ntop, NULL, NULL))
    ntop = 0;
  for (i = 0; i < ntop; i++)
    if (add_tag(&v, n, &cap, &top[i]) != 0)
      break;
  frond_free(top);
  /* The configured list: "a,b, c". */
  for (; *p != '\0'; p = *e ? e + 1 : e) {
    frond_seg_tag *h;
    size_t len;
    while (*p == ' ')
      p++;
    e = strchr(p, ',');
    if (e == NULL)
      e = p + strlen(p);
    for (len = (size_t)(e - p); len > 0 && p[len - 1] == ' '; len--)
      ;
    if (len == 0 || frond_seg_tag_find(seg, p, len, &h, NULL) != 0)
      continue;
    frond_seg_tag_info(h, &ti);
    if (add_tag(&v, n, &cap, &ti) != 0)
      break;
  }
  if (*n > 1)
    qsort(v, *n, sizeof *v, info_cmp);
  *out = v;
  return 0;
}

/* The IDs of all tags together, then those of the tags with series. */
static void ids_issued(frond__server *srv, frond__buf *b,
                       const frond_tag_info *tags, size_t ntags) {
  char l[FROND_TAG_MAX * 2 + 1];
  size_t i;
  frond__buf_printf(b,
                    "# HELP frond_ids_issued_total IDs issued, by generator "
                    "(segment: all tags).\n# TYPE frond_ids_issued_total "
                    "counter\nfrond_ids_issued_total{generator=\"snowflake\"} "
                    "%llu\nfrond_ids_issued_total{generator=\"segment\"} "
                    "%llu\n",
                    (unsigned long long)FROND__SUM(srv, ids_snowflake),
                    (unsigned long long)FROND__SUM(srv, ids_segment));
  frond__buf_printf(b,
                    "# HELP frond_ids_forwarded_total IDs of ordered tags "
                    "this node answered with, issued by their owner (and "
                    "counted there).\n# TYPE frond_ids_forwarded_total "
                    "counter\nfrond_ids_forwarded_total %llu\n",
                    (unsigned long long)FROND__SUM(srv, ids_forwarded));
  if (ntags == 0)
    return;
  frond__buf_printf(b, "# HELP frond_segment_tag_ids_issued_total IDs taken "
                       "from a tag by this process (tags in metrics_tags and "
                       "the metrics_top_tags fastest).\n# TYPE "
                       "frond_segment_tag_ids_issued_total counter\n");
  for (i = 0; i < ntags; i++) {
    label(l, sizeof l, tags[i].tag);
    frond__buf_printf(b,
                      "frond_segment_tag_ids_issued_total{tag=\"%s\"} %llu\n",
                      l, (unsigned long long)tags[i].issued);
  }
}

/* How long both buffers of each tag last at its current rate: the alert
** for a buffer about to run dry divides nothing itself. +Inf while the tag
** is idle. */
static void seconds_left(frond__buf *b, const frond_tag_info *tags,
                         size_t ntags) {
  char l[FROND_TAG_MAX * 2 + 1], num[FROND__NUM_MAX];
  size_t i;
  frond__buf_printf(b, "# HELP frond_segment_buffer_seconds_left Seconds "
                       "until both buffers of a tag are used up at its "
                       "current rate (+Inf when idle).\n# TYPE "
                       "frond_segment_buffer_seconds_left gauge\n");
  for (i = 0; i < ntags; i++) {
    const frond_seg_buffer *cur = &tags[i].current, *nx = &tags[i].next;
    double left = (double)((cur->ready ? cur->end - cur->pos : 0) +
                           (nx->ready ? nx->end - nx->pos : 0));
    label(l, sizeof l, tags[i].tag);
    frond__buf_printf(
        b, "frond_segment_buffer_seconds_left{tag=\"%s\"} %s\n", l,
        frond__metrics_num(tags[i].rate > 0 ? left / tags[i].rate : INFINITY,
                           num));
  }
}

/* Every store call's duration, per engine, member and call (store.c
** keeps them); left out until the store was called. */
static void store_calls(frond__buf *b) {
  static const char name[] = "frond_store_call_duration_seconds";
  frond__store_call_stat c;
  char num[FROND__NUM_MAX], member[16];
  size_t i;
  int k;
  for (i = 0; frond__store_call_get(i, &c) == 0; i++) {
    if (i == 0)
      frond__metrics_hist_head(b, name,
                               "Store calls (a segment's allocation, a tag "
                               "list, ...) by engine, member of a multi: "
                               "store (\"\" otherwise) and call.");
    if (c.member >= 0)
      snprintf(member, sizeof(member), "%d", c.member);
    else
      member[0] = '\0';
    for (k = 0; k < FROND__STORE_CALL_BUCKETS; k++)
      frond__buf_printf(
          b,
          "%s_bucket{engine=\"%s\",member=\"%s\",call=\"%s\",le=\"%s\"} "
          "%llu\n",
          name, c.engine, member, c.call,
          frond__metrics_num(frond__store_call_bounds[k], num),
          (unsigned long long)c.le[k]);
    frond__buf_printf(
        b,
        "%s_bucket{engine=\"%s\",member=\"%s\",call=\"%s\",le=\"+Inf\"} "
        "%llu\n",
        name, c.engine, member, c.call, (unsigned long long)c.count);
    frond__buf_printf(b, "%s_sum{engine=\"%s\",member=\"%s\",call=\"%s\"} %s\n",
                      name, c.engine, member, c.call,
                      frond__metrics_num(c.sum, num));
    frond__buf_printf(b,
                      "%s_count{engine=\"%s\",member=\"%s\",call=\"%s\"} "
                      "%llu\n",
                      name, c.engine, member, c.call,
                      (unsigned long long)c.count);
  }
}

/* Bounded tags (--max) among the per-tag series: their max, and the IDs
** left below it as this node last saw the store (frond_seg_tag_seq).
** Tags without a bound (or not loaded yet) have no series. */
static void remaining(frond_seg *seg, frond__buf *b, const frond_tag_info *tags,
                      size_t ntags) {
  static const char *const help[2] = {
      "# HELP frond_segment_max The highest ID a bounded tag issues (--max)."
      "\n# TYPE frond_segment_max gauge\n",
      "# HELP frond_segment_remaining IDs a bounded tag can still issue up "
      "to its max (this node's buffers and the row as it last saw it)."
      "\n# TYPE frond_segment_remaining gauge\n"};
  static const char *const name[2] = {"frond_segment_max",
                                      "frond_segment_remaining"};
  frond_seg_tag *h;
  frond_tag_seq q;
  int64_t v[2];
  size_t i;
  int k, head;
  char l[FROND_TAG_MAX * 2 + 1];
  for (k = 0; k < 2 && seg != NULL; k++)
    for (i = 0, head = 0; i < ntags; i++) {
      if (frond_seg_tag_find(seg, tags[i].tag, strlen(tags[i].tag), &h, NULL) !=
          0)
        continue;
      frond_seg_tag_seq(h, &q, &v[1]);
      v[0] = q.max;
      if (v[0] <= 0 || v[k] < 0) /* no bound; or not told until a load */
        continue;
      if (!head++)
        frond__buf_printf(b, "%s", help[k]);
      label(l, sizeof l, tags[i].tag);
      frond__buf_printf(b, "%s{tag=\"%s\"} %lld\n", name[k], l,
                        (long long)v[k]);
    }
}

static void segments(frond_seg *seg, frond__buf *b, const frond_tag_info *tags,
                     size_t ntags) {
  char l[FROND_TAG_MAX * 2 + 1];
  frond_seg_stats ss;
  size_t i;
  frond_seg_stats_get(seg, &ss);
  frond__metrics_counter(b, "frond_segment_loads_total",
                         "Segments loaded from the store.", ss.loads);
  frond__metrics_counter(b, "frond_segment_load_failures_total",
                         "Segment loads that failed.", ss.load_failures);
  frond__metrics_counter(b, "frond_segment_unavailable_total",
                         "Calls that failed with SEGMENT_UNAVAILABLE.",
                         ss.unavailable);
  frond__metrics_gauge(b, "frond_segment_store_up",
                       "1 when the last store call worked.",
                       ss.store_ok ? 1 : 0);
  frond__metrics_gauge(b, "frond_segment_tags",
                       "Tags known (rows of the store).", (double)ss.tags);
  frond__metrics_gauge(b, "frond_segment_tags_in_use", "Tags used since start.",
                       (double)ss.tags_in_use);
  if (ntags == 0)
    return;
  frond__metrics_counter(b, "frond_segment_rollbacks_total",
                         "Ranges the store handed out below one already "
                         "taken (the row went back), refused.",
                         ss.rollbacks);
  if (ss.store_members > 0) {
    frond__buf_printf(b, "# HELP frond_store_member_up 1 when the last call "
                         "to a member of a multi: store worked.\n# TYPE "
                         "frond_store_member_up gauge\n");
    for (i = 0; i < ss.store_members; i++)
      frond__buf_printf(b, "frond_store_member_up{member=\"%zu\"} %d\n", i,
                        (int)(ss.store_members_up >> i & 1));
  }
  frond__buf_printf(b, "# HELP frond_segment_step Step of the tag's next "
                       "load.\n# TYPE frond_segment_step gauge\n");
  for (i = 0; i < ntags; i++) {
    label(l, sizeof l, tags[i].tag);
    frond__buf_printf(b, "frond_segment_step{tag=\"%s\"} %lld\n", l,
                      (long long)tags[i].step);
  }
  seconds_left(b, tags, ntags);
  frond__buf_printf(b, "# HELP frond_segment_buffer_remaining IDs left in "
                       "a tag's buffer.\n# TYPE "
                       "frond_segment_buffer_remaining gauge\n");
  for (i = 0; i < ntags; i++) {
    const frond_seg_buffer *cur = &tags[i].current, *nx = &tags[i].next;
    frond_seg_tag *h;
    frond_tag_seq q = {0, 1, 0, 0};
    int64_t left;
    /* A strided tag's buffers count numbers: one stride per ID. */
    if (frond_seg_tag_find(seg, tags[i].tag, strlen(tags[i].tag), &h, NULL) ==
        0)
      frond_seg_tag_seq(h, &q, &left);
    label(l, sizeof l, tags[i].tag);
    frond__buf_printf(
        b,
        "frond_segment_buffer_remaining{tag=\"%s\",buffer=\"current\"} "
        "%lld\nfrond_segment_buffer_remaining{tag=\"%s\",buffer=\"next\"} "
        "%lld\n",
        l, (long long)(cur->ready ? (cur->end - cur->pos) / q.increment : 0), l,
        (long long)(nx->ready ? (nx->end - nx->pos) / q.increment : 0));
  }
  remaining(seg, b, tags, ntags);
}

/* What `frond tag restore` reads after a store is restored from a
** backup: the store this node serves, and the last ID each buffer it holds
** may hand out (every ID it handed out of the tag is at or below the
** largest of them: a node's segments only go up). */
static void restore_facts(frond__server *srv, frond__buf *b,
                          const frond_tag_info *tags, size_t ntags) {
  const char *store = frond__store_id(srv);
  char l[FROND_TAG_MAX * 2 + 1];
  size_t i;
  int k;
  if (store != NULL)
    frond__buf_printf(b,
                      "# HELP frond_store_info The identity of the segment "
                      "store this node serves (always 1).\n# TYPE "
                      "frond_store_info gauge\nfrond_store_info{store=\"%s\"} "
                      "1\n",
                      store);
  if (ntags == 0)
    return;
  frond__buf_printf(b, "# HELP frond_segment_buffer_last_id The last ID a "
                       "tag's loaded buffer may hand out.\n# TYPE "
                       "frond_segment_buffer_last_id gauge\n");
  for (i = 0; i < ntags; i++) {
    label(l, sizeof l, tags[i].tag);
    for (k = 0; k < 2; k++) {
      const frond_seg_buffer *sb = k == 0 ? &tags[i].current : &tags[i].next;
      if (sb->ready && sb->end > sb->start)
        frond__buf_printf(b,
                          "frond_segment_buffer_last_id{tag=\"%s\","
                          "buffer=\"%s\"} %lld\n",
                          l, k == 0 ? "current" : "next",
                          (long long)(sb->end - 1));
    }
  }
}

static void snowflake(frond__server *srv, frond__buf *b) {
  int64_t now_ms = frond_clock_realtime(NULL);
  frond_gen_stats gs;
  frond_gen_stats_get(srv->gen, &gs);
  frond__metrics_counter(
      b, "frond_snowflake_borrowed_units_total",
      "Time units the logical clock entered ahead of the wall clock.",
      gs.borrowed);
  frond__metrics_counter(b, "frond_snowflake_clock_waits_total",
                         "Snowflake calls that waited for the wall clock "
                         "(borrowed time ran out).",
                         gs.waits);
  frond__metrics_counter(b, "frond_snowflake_clock_behind_total",
                         "Snowflake calls that failed with CLOCK_BEHIND.",
                         gs.clock_behind);
  frond__metrics_counter(b, "frond_snowflake_reservations_total",
                         "High-water reservations made durable.",
                         gs.reservations);
  frond__metrics_gauge(b, "frond_snowflake_ahead_seconds",
                       "Logical clock minus wall clock (borrowed time).",
                       (double)gs.ahead_ms / 1000.0);
  frond__metrics_counter(b, "frond_snowflake_fence_refused_total",
                         "Snowflake calls refused at the coordinator's "
                         "fence (COORD).",
                         gs.fence_refused);
  if (gs.fence_ms != 0)
    frond__metrics_gauge(b, "frond_snowflake_fence_ahead_seconds",
                         "The fence the generator issues under, minus the "
                         "wall clock.",
                         (double)(gs.fence_ms - now_ms) / 1000.0);
  if (gs.reserved_ms != 0)
    frond__metrics_gauge(b, "frond_snowflake_reserved_ahead_seconds",
                         "The durable high-water reservation minus the wall "
                         "clock.",
                         (double)(gs.reserved_ms - now_ms) / 1000.0);
  frond__metrics_gauge(
      b, "frond_snowflake_time_left_seconds",
      "Time until the layout runs out of time bits and snowflake IDs stop.",
      (double)frond_layout_time_left_ms(&srv->layout, now_ms) / 1000.0);
}

/* How long fence writes took, confirmed or not (the coordinator keeps
** them); left out until the first write. */
static void fence_durations(frond_coord *c, frond__buf *b) {
  static const char name[] = "frond_coord_fence_write_duration_seconds";
  frond__coord_fence_hist h;
  char num[FROND__NUM_MAX];
  uint64_t cum = 0, total = 0;
  int k;
  frond__coord_fence_hist_get(c, &h);
  for (k = 0; k <= FROND__COORD_FENCE_BUCKETS; k++)
    total += h.n[k];
  if (total == 0)
    return;
  frond__metrics_hist_head(b, name,
                           "Fence writes to the coordinator, confirmed or "
                           "not: a slow one eats into the fence window.");
  for (k = 0; k < FROND__COORD_FENCE_BUCKETS; k++) {
    cum += h.n[k];
    frond__buf_printf(
        b, "%s_bucket{le=\"%s\"} %llu\n", name,
        frond__metrics_num((double)frond__coord_fence_bounds_ns[k] / 1e9, num),
        (unsigned long long)cum);
  }
  frond__buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name,
                    (unsigned long long)total);
  frond__buf_printf(b, "%s_sum %s\n%s_count %llu\n", name,
                    frond__metrics_num((double)h.sum_ns / 1e9, num), name,
                    (unsigned long long)total);
}

/* The coordinator's part: the node's fence and its clock against the
** fleet's. */
static void coordinator(frond__server *srv, frond__buf *b) {
  frond_coord_stats cs;
  frond_coord_stats_get(srv->coord, &cs);
  frond__metrics_gauge(
      b, "frond_coord_node_held",
      "1 while the node ID is held and IDs may be issued up to the fence.",
      cs.state == 0 ? 1.0 : 0.0);
  if (cs.fence_ms != INT64_MAX)
    frond__metrics_gauge(
        b, "frond_coord_fence_ahead_seconds",
        "Durable fence minus the wall clock: how long the node can issue "
        "without reaching its coordinator.",
        (double)(cs.fence_ms - frond_clock_realtime(NULL)) / 1000.0);
  frond__metrics_counter(b, "frond_coord_fence_writes_total",
                         "Fence writes the coordinator confirmed.",
                         cs.fence_writes);
  frond__metrics_counter(b, "frond_coord_fence_write_failures_total",
                         "Fence writes that failed or got no answer.",
                         cs.write_failures);
  if (srv->cfg.metrics_histograms)
    fence_durations(srv->coord, b);
  frond__metrics_counter(b, "frond_coord_regains_total",
                         "Times the node ID was claimed back after its "
                         "claim was lost.",
                         cs.regains);
  frond__metrics_gauge(b, "frond_coord_from_cache",
                       "1 when the node started from the node cache file "
                       "(its coordinator unreachable at start).",
                       cs.from_cache ? 1.0 : 0.0);
  if (cs.last_write_ms != 0)
    frond__metrics_gauge(b, "frond_coord_last_fence_write_timestamp_seconds",
                         "When the coordinator last confirmed a fence write "
                         "(unix time).",
                         (double)cs.last_write_ms / 1000.0);
  if (cs.clock_checked)
    frond__metrics_gauge(
        b, "frond_coord_clock_offset_seconds",
        "This clock minus the fleet's (ZooKeeper: the other live nodes' "
        "median; lease: the database's).",
        (double)cs.clock_offset_ms / 1000.0);
}

static void connections(frond__server *srv, frond__buf *b) {
  uint64_t accepted[FROND__MAX_PROTOS], open[FROND__MAX_PROTOS], all = 0;
  int p;
  for (p = 0; p < srv->nprotos; p++) {
    frond__metrics_conns(srv, srv->protos[p], &accepted[p], &open[p]);
    all += accepted[p];
  }
  frond__metrics_counter(b, "frond_connections_accepted_total",
                         "Connections accepted.", all);
  frond__metrics_counter(b, "frond_connections_rejected_total",
                         "Connections refused at max_connections.",
                         FROND__SUM(srv, rejected));
  frond__metrics_counter(b, "frond_connections_header_timeouts_total",
                         "Connections closed by header_timeout_ms.",
                         FROND__SUM(srv, header_timeouts));
  frond__metrics_counter(b, "frond_connections_idle_timeouts_total",
                         "Connections closed by idle_timeout_ms.",
                         FROND__SUM(srv, idle_timeouts));
  frond__metrics_gauge(b, "frond_connections", "Open connections.",
                       (double)atomic_load(&srv->nconns));
  frond__metrics_gauge(b, "frond_connection_buffer_bytes",
                       "Bytes of read and answer buffers held by open "
                       "connections.",
                       (double)(int64_t)FROND__SUM(srv, buffer_bytes));
  frond__buf_printf(b, "# HELP frond_connections_accepted_by_protocol_total "
                       "Connections accepted, by protocol.\n# TYPE "
                       "frond_connections_accepted_by_protocol_total "
                       "counter\n");
  for (p = 0; p < srv->nprotos; p++)
    frond__buf_printf(b,
                      "frond_connections_accepted_by_protocol_total{protocol="
                      "\"%s\"} %llu\n",
                      srv->protos[p]->name, (unsigned long long)accepted[p]);
  frond__buf_printf(b, "# HELP frond_connections_by_protocol Open "
                       "connections, by protocol.\n# TYPE "
                       "frond_connections_by_protocol gauge\n");
  for (p = 0; p < srv->nprotos; p++)
    frond__buf_printf(b,
                      "frond_connections_by_protocol{protocol=\"%s\"} %llu\n",
                      srv->protos[p]->name, (unsigned long long)open[p]);
}

/* The build, as labels of a constant 1 (the Prometheus way to export
** text). */
static void build_info(frond__buf *b) {
  char l[2][64 * 2 + 1];
  frond__build bi;
  int i;
  frond__build_get(&bi);
  label(l[0], sizeof l[0], bi.compiler);
  label(l[1], sizeof l[1], bi.sanitizers);
  frond__buf_printf(b,
                    "# HELP frond_build_info The version, how the binary "
                    "was built and the libraries it runs with.\n# TYPE "
                    "frond_build_info gauge\nfrond_build_info{version=\"%s\","
                    "build_type=\"%s\",compiler=\"%s\",sanitizers=\"%s\","
                    "asserts=\"%s\"",
                    bi.version, bi.type, l[0], l[1], bi.asserts);
  for (i = 0; i < FROND__BUILD_LIBS; i++) {
    label(l[0], sizeof l[0], bi.libs[i].version);
    frond__buf_printf(b, ",%s=\"%s\"", bi.libs[i].label, l[0]);
  }
  frond__buf_printf(b, "} 1\n");
}

/* The process_* families, with the names, types and units of Prometheus'
** own clients, so that dashboards and alerts written for any service
** (restarts, memory, descriptors) work unchanged. */
static void process(frond__buf *b) {
  char num[FROND__NUM_MAX];
  frond__process p;
  frond__process_read(&p);
  if (p.have_stat) {
    frond__metrics_gauge(b, "process_resident_memory_bytes",
                         "Resident memory size in bytes.", p.resident_bytes);
    frond__metrics_gauge(b, "process_virtual_memory_bytes",
                         "Virtual memory size in bytes.", p.virtual_bytes);
    frond__buf_printf(b,
                      "# HELP process_cpu_seconds_total Total user and system "
                      "CPU time spent in seconds.\n# TYPE "
                      "process_cpu_seconds_total counter\n"
                      "process_cpu_seconds_total %s\n",
                      frond__metrics_num(p.cpu_seconds, num));
  }
  if (p.have_start)
    frond__metrics_gauge(b, "process_start_time_seconds",
                         "Start time of the process since unix epoch in "
                         "seconds.",
                         p.start_time_seconds);
  if (p.have_fds)
    frond__metrics_gauge(b, "process_open_fds",
                         "Number of open file descriptors.", p.open_fds);
  if (p.have_max_fds)
    frond__metrics_gauge(b, "process_max_fds",
                         "Maximum number of open file descriptors.", p.max_fds);
}

void frond__metrics_render(frond__server *srv, frond__buf *b) {
  frond_tag_info *tags = NULL;
  frond_seg *seg = srv->seg;
  size_t ntags = 0;
  int p;
  for (p = 0; p < srv->nprotos; p++)
    if (srv->protos[p]->metrics != NULL)
      srv->protos[p]->metrics(srv, b);
  if (frond__metrics_tags(srv, &tags, &ntags) != 0)
    ntags = 0;
  ids_issued(srv, b, tags, ntags);
  frond__formats_metrics(srv, b);
  frond__quota_metrics(srv, b);
  frond__audit_metrics(srv, b);
  frond__acl_metrics(srv, b);
  snowflake(srv, b);
  if (srv->coord != NULL)
    coordinator(srv, b);
  if (seg != NULL) {
    segments(seg, b, tags, ntags);
    restore_facts(srv, b, tags, ntags);
  }
  /* With metrics_histograms off the family is left out, as the others. */
  if (seg != NULL && srv->cfg.metrics_histograms)
    store_calls(b);
  frond_free(tags);
  connections(srv, b);
  if (srv->tls != NULL)
    frond__tls_metrics(srv->tls, b);
  frond__ready_metrics(srv, b);
  frond__metrics_gauge(b, "frond_uptime_seconds", "Seconds since start.",
                       (double)frond__uptime_ms(srv) / 1000.0);
  build_info(b);
  process(b);
}
