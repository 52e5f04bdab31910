/*
** metrics.c -- /metrics (Prometheus text format) and the status page.
**
** Workers count into their own frond__metrics; a scrape sums all workers
** with relaxed loads, so the request path never shares a cache line.
** Library-side state (generator stats, per-tag buffers) is read through
** the library's thread-safe snapshot calls.
*/
#include "server/server.h"

#include "core/internal.h"
#include "server/json.h"

#include <stdlib.h>
#include <string.h>

const char *const frond__route_names[FROND__R_COUNT] = {
    "leaf_segment", "leaf_snowflake", "leaf_decode", "snowflake", "segment",
    "decode",       "layout",         "tags",        "metrics",   "livez",
    "readyz",       "status_page",    "other"};

const int frond__statuses[FROND__NSTATUS] = {200, 201, 204, 400, 401, 404,
                                             405, 408, 409, 413, 414, 431,
                                             500, 501, 503, 505, 403, 0};

int frond__status_index(int status) {
  int i;
  for (i = 0; i < FROND__NSTATUS - 1; i++)
    if (frond__statuses[i] == status)
      return i;
  return FROND__NSTATUS - 1;
}

const double frond__bucket_bounds[FROND__NBUCKETS] = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
    0.0025,  0.005,    0.01,    0.025,  0.05,    0.1,    1.0};

static uint64_t sum(frond__server *srv, size_t off) {
  uint64_t s = 0;
  int i;
  for (i = 0; i < srv->nworkers; i++) {
    frond__counter *c =
        (frond__counter *)(void *)((char *)&srv->workers[i].m + off);
    s += FROND__GET(*c);
  }
  return s;
}
#define SUM(field) sum(srv, offsetof(frond__metrics, field))

static void counter(frond__buf *b, const char *name, const char *help,
                    uint64_t v) {
  frond__buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help,
                    name, name, (unsigned long long)v);
}

static void gauge(frond__buf *b, const char *name, const char *help, double v) {
  frond__buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help,
                    name, name, v);
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

/* The coordinator's part: the node's fence and its clock against the
** fleet's. */
static void coord_metrics(frond__server *srv, frond__buf *b) {
  frond_coord_stats cs;
  frond_coord_stats_get(srv->coord, &cs);
  gauge(b, "frond_coord_node_held",
        "1 while the node ID is held and IDs may be issued up to the fence.",
        cs.state == 0 ? 1.0 : 0.0);
  if (cs.fence_ms != INT64_MAX)
    gauge(b, "frond_coord_fence_ahead_seconds",
          "Durable fence minus the wall clock: how long the node can issue "
          "without reaching its coordinator.",
          (double)(cs.fence_ms - frond_clock_realtime(NULL)) / 1000.0);
  counter(b, "frond_coord_fence_writes_total",
          "Fence writes the coordinator confirmed.", cs.fence_writes);
  counter(b, "frond_coord_fence_write_failures_total",
          "Fence writes that failed or got no answer.", cs.write_failures);
  if (cs.clock_checked)
    gauge(b, "frond_coord_clock_offset_seconds",
          "This clock minus the fleet's (ZooKeeper: the other live nodes' "
          "median; lease: the database's).",
          (double)cs.clock_offset_ms / 1000.0);
}

void frond__metrics_render(frond__server *srv, frond__buf *b) {
  int r, s, k;
  frond_gen_stats gs;
  frond_tag_info *tags = NULL;
  size_t ntags = 0, i;

  frond__buf_printf(b, "# HELP frond_http_requests_total HTTP requests by "
                       "route and status.\n# TYPE frond_http_requests_total "
                       "counter\n");
  for (r = 0; r < FROND__R_COUNT; r++)
    for (s = 0; s < FROND__NSTATUS; s++) {
      uint64_t v = SUM(requests[r][s]);
      if (v == 0)
        continue;
      if (frond__statuses[s] != 0)
        frond__buf_printf(
            b,
            "frond_http_requests_total{route=\"%s\",status=\"%d\"}"
            " %llu\n",
            frond__route_names[r], frond__statuses[s], (unsigned long long)v);
      else
        frond__buf_printf(b,
                          "frond_http_requests_total{route=\"%s\",status="
                          "\"other\"} %llu\n",
                          frond__route_names[r], (unsigned long long)v);
    }
  frond__buf_printf(b, "# HELP frond_http_request_duration_seconds Time from "
                       "a complete request to its answer being queued.\n"
                       "# TYPE frond_http_request_duration_seconds "
                       "histogram\n");
  for (r = 0; r < FROND__R_COUNT; r++) {
    uint64_t cum = 0;
    uint64_t ns = SUM(duration_ns[r]);
    uint64_t total = 0;
    for (k = 0; k <= FROND__NBUCKETS; k++)
      total += SUM(duration[r][k]);
    if (total == 0)
      continue;
    for (k = 0; k < FROND__NBUCKETS; k++) {
      cum += SUM(duration[r][k]);
      frond__buf_printf(b,
                        "frond_http_request_duration_seconds_bucket{route="
                        "\"%s\",le=\"%g\"} %llu\n",
                        frond__route_names[r], frond__bucket_bounds[k],
                        (unsigned long long)cum);
    }
    frond__buf_printf(
        b,
        "frond_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"}"
        " %llu\nfrond_http_request_duration_seconds_sum{route=\"%s\"} %.9f\n"
        "frond_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
        frond__route_names[r], (unsigned long long)total, frond__route_names[r],
        (double)ns / 1e9, frond__route_names[r], (unsigned long long)total);
  }

  frond_gen_stats_get(srv->gen, &gs);
  frond__buf_printf(b,
                    "# HELP frond_ids_issued_total IDs issued, by generator "
                    "(and tag for segment IDs).\n# TYPE frond_ids_issued_total "
                    "counter\nfrond_ids_issued_total{generator=\"snowflake\"} "
                    "%llu\n",
                    (unsigned long long)SUM(ids_snowflake));
  frond_seg *seg = srv->seg;
  if (seg != NULL && frond_seg_tags(seg, &tags, &ntags, NULL) == 0) {
    for (i = 0; i < ntags; i++) {
      char l[FROND_TAG_MAX * 2 + 1];
      label(l, sizeof l, tags[i].tag);
      frond__buf_printf(
          b, "frond_ids_issued_total{generator=\"segment\",tag=\"%s\"} %llu\n",
          l, (unsigned long long)tags[i].issued);
    }
  }
  counter(b, "frond_snowflake_borrowed_units_total",
          "Time units the logical clock entered ahead of the wall clock.",
          gs.borrowed);
  counter(b, "frond_snowflake_clock_waits_total",
          "Snowflake calls that waited for the wall clock (borrowed time ran "
          "out).",
          gs.waits);
  counter(b, "frond_snowflake_clock_behind_total",
          "Snowflake calls that failed with CLOCK_BEHIND.", gs.clock_behind);
  counter(b, "frond_snowflake_reservations_total",
          "High-water reservations made durable.", gs.reservations);
  gauge(b, "frond_snowflake_ahead_ms",
        "Logical clock minus wall clock (borrowed time).", (double)gs.ahead_ms);
  if (srv->coord != NULL)
    coord_metrics(srv, b);

  if (seg != NULL) {
    frond_seg_stats ss;
    frond_seg_stats_get(seg, &ss);
    counter(b, "frond_segment_loads_total", "Segments loaded from the store.",
            ss.loads);
    counter(b, "frond_segment_load_failures_total",
            "Segment loads that failed.", ss.load_failures);
    counter(b, "frond_segment_unavailable_total",
            "Calls that failed with SEGMENT_UNAVAILABLE.", ss.unavailable);
    gauge(b, "frond_segment_store_up", "1 when the last store call worked.",
          ss.store_ok ? 1 : 0);
    frond__buf_printf(b, "# HELP frond_segment_step Step of the tag's next "
                         "load.\n# TYPE frond_segment_step gauge\n");
    for (i = 0; i < ntags; i++) {
      char l[FROND_TAG_MAX * 2 + 1];
      label(l, sizeof l, tags[i].tag);
      frond__buf_printf(b, "frond_segment_step{tag=\"%s\"} %lld\n", l,
                        (long long)tags[i].step);
    }
    frond__buf_printf(b, "# HELP frond_segment_buffer_remaining IDs left in "
                         "a tag's buffer.\n# TYPE "
                         "frond_segment_buffer_remaining gauge\n");
    for (i = 0; i < ntags; i++) {
      char l[FROND_TAG_MAX * 2 + 1];
      const frond_seg_buffer *cur = &tags[i].current, *nx = &tags[i].next;
      label(l, sizeof l, tags[i].tag);
      frond__buf_printf(
          b,
          "frond_segment_buffer_remaining{tag=\"%s\",buffer=\"current\"} "
          "%lld\nfrond_segment_buffer_remaining{tag=\"%s\",buffer=\"next\"} "
          "%lld\n",
          l, (long long)(cur->ready ? cur->end - cur->pos : 0), l,
          (long long)(nx->ready ? nx->end - nx->pos : 0));
    }
    frond_free(tags);
  }
  counter(b, "frond_connections_accepted_total", "Connections accepted.",
          SUM(accepted));
  counter(b, "frond_connections_rejected_total",
          "Connections refused at max_connections.", SUM(rejected));
  counter(b, "frond_connections_header_timeouts_total",
          "Connections closed by header_timeout_ms.", SUM(header_timeouts));
  counter(b, "frond_connections_idle_timeouts_total",
          "Connections closed by idle_timeout_ms.", SUM(idle_timeouts));
  counter(b, "frond_http_bad_requests_total", "Requests the parser rejected.",
          SUM(bad_requests));
  gauge(b, "frond_connections", "Open connections.",
        (double)atomic_load(&srv->nconns));
  frond__resp_metrics_render(srv, b);
  gauge(b, "frond_ready", "1 when /readyz answers 200.",
        atomic_load(&srv->ready) && !atomic_load(&srv->draining));
  gauge(b, "frond_uptime_seconds", "Seconds since start.",
        (double)(frond_clock_realtime(NULL) - srv->start_ms) / 1000.0);
}

void frond__rates_sample(frond__server *srv, double dt) {
  uint64_t issued = SUM(ids_snowflake);
  frond_tag_info *tags = NULL;
  size_t n = 0, i, j;
  frond__rate *nr;
  frond_seg *seg = srv->seg;
  if (seg == NULL || frond_seg_tags(seg, &tags, &n, NULL) != 0)
    n = 0;
  nr = calloc(n ? n : 1, sizeof *nr);
  pthread_mutex_lock(&srv->rate_lock);
  srv->rate_snowflake = (double)(issued - srv->last_snowflake) / dt;
  srv->last_snowflake = issued;
  for (i = 0; nr != NULL && i < n; i++) {
    memcpy(nr[i].tag, tags[i].tag, sizeof nr[i].tag);
    nr[i].last = tags[i].issued;
    for (j = 0; j < srv->nrates; j++)
      if (strcmp(srv->rates[j].tag, tags[i].tag) == 0)
        nr[i].per_sec = (double)(tags[i].issued - srv->rates[j].last) / dt;
  }
  if (nr != NULL) {
    free(srv->rates);
    srv->rates = nr;
    srv->nrates = n;
  }
  pthread_mutex_unlock(&srv->rate_lock);
  frond_free(tags);
}

static void html(frond__buf *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<':
      frond__buf_append(b, "&lt;", 4);
      break;
    case '>':
      frond__buf_append(b, "&gt;", 4);
      break;
    case '&':
      frond__buf_append(b, "&amp;", 5);
      break;
    case '"':
      frond__buf_append(b, "&quot;", 6);
      break;
    default:
      frond__buf_append(b, s, 1);
    }
  }
}

static void buffer_cell(frond__buf *b, const frond_tag_info *t, int current) {
  const frond_seg_buffer *buf = current ? &t->current : &t->next;
  double fill;
  if (!buf->ready) {
    /* Only a current buffer that ran dry after loads is a problem. */
    if (current && t->loads > 0)
      frond__buf_printf(b, "<td class=empty>empty%s</td>",
                        t->loading ? ", loading&hellip;" : "");
    else if (t->loading)
      frond__buf_printf(b, "<td class=idle>loading&hellip;</td>");
    else
      frond__buf_printf(b, "<td class=idle>%s</td>",
                        current ? "loads on first use" : "not needed yet");
    return;
  }
  fill = buf->end > buf->start ? (double)(buf->end - buf->pos) * 100.0 /
                                     (double)(buf->end - buf->start)
                               : 0;
  frond__buf_printf(b,
                    "<td><div class=bar><span style=\"width:%.0f%%\"></span>"
                    "</div><small>%lld &hellip; %lld, next %lld "
                    "(%.0f%% left)</small></td>",
                    fill, (long long)buf->start, (long long)buf->end - 1,
                    (long long)buf->pos, fill);
}

void frond__status_render(frond__server *srv, frond__buf *b) {
  char spec[160], started[40];
  frond_gen_stats gs;
  frond_seg *seg = srv->seg;
  frond_tag_info *tags = NULL;
  size_t ntags = 0, i, j;
  int64_t up = (frond_clock_realtime(NULL) - srv->start_ms) / 1000;
  int ready = atomic_load(&srv->ready) && !atomic_load(&srv->draining);
  frond_layout_format(&srv->layout, spec, sizeof spec);
  frond__format_rfc3339(srv->start_ms, started, sizeof started);
  double sf_rate;
  frond_gen_stats_get(srv->gen, &gs);
  pthread_mutex_lock(&srv->rate_lock);
  sf_rate = srv->rate_snowflake;
  pthread_mutex_unlock(&srv->rate_lock);
  frond__buf_printf(
      b,
      "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
      "<meta http-equiv=refresh content=2>"
      "<meta name=viewport content=\"width=device-width\">"
      "<title>Frond node %llu</title><style>"
      "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:"
      "1100px;padding:0 1em;color:#1d2b1f;background:#f6f8f5}"
      "h1{font-size:22px;margin:0 0 .2em}h1 span{color:#3d7a45}"
      "h2{font-size:16px;margin:1.6em 0 .5em}"
      ".cards{display:flex;gap:12px;flex-wrap:wrap;margin-top:14px}"
      ".card{background:#fff;border:1px solid #d6dfd4;border-radius:8px;"
      "padding:10px 14px;min-width:140px}.card b{display:block;font-size:"
      "20px}.card small{color:#5b6b5d}"
      "table{border-collapse:collapse;width:100%%;background:#fff;border:"
      "1px solid #d6dfd4;border-radius:8px}th,td{text-align:left;padding:7px"
      " 10px;border-bottom:1px solid #e8eee6;vertical-align:top}"
      "th{background:#eef3ec;font-weight:600}td.num{text-align:right;"
      "font-variant-numeric:tabular-nums}"
      ".bar{height:8px;background:#e3e9e1;border-radius:4px;overflow:hidden;"
      "width:180px}.bar span{display:block;height:100%%;background:#4c9a55}"
      ".empty{color:#a04030}.idle{color:#7a887b}.ok{color:#2f7a3a}.bad{color:#"
      "a04030}"
      "code{background:#eef3ec;padding:1px 4px;border-radius:4px}"
      "footer{margin-top:2em;color:#7a887b;font-size:12px}"
      "</style></head><body>\n",
      (unsigned long long)srv->node);
  frond__buf_printf(
      b,
      "<h1><span>&#10047;</span> Frond node %llu</h1>"
      "<div>layout <code>%s</code> (%s) &middot; started %s</div>\n"
      "<div class=cards>"
      "<div class=card><small>status</small><b class=%s>%s</b></div>"
      "<div class=card><small>uptime</small><b>%lldd %02lld:%02lld:%02lld"
      "</b></div>"
      "<div class=card><small>snowflake IDs/s</small><b id=sf-rate>%.0f</b>"
      "</div><div class=card><small>snowflake IDs issued</small><b>%llu</b>"
      "</div><div class=card><small>clock ahead / waits</small><b>%lld ms "
      "/ %llu</b></div><div class=card><small>connections</small><b>%ld</b>"
      "</div></div>\n",
      (unsigned long long)srv->node, spec, srv->layout.name, started,
      ready ? "ok" : "bad",
      atomic_load(&srv->draining) ? "draining"
      : ready                     ? "ready"
                                  : "not ready",
      (long long)(up / 86400), (long long)(up / 3600 % 24),
      (long long)(up / 60 % 60), (long long)(up % 60), sf_rate,
      (unsigned long long)SUM(ids_snowflake), (long long)gs.ahead_ms,
      (unsigned long long)gs.waits, (long)atomic_load(&srv->nconns));
  frond__buf_printf(b, "<h2>Segment tags</h2>\n");
  if (seg == NULL && !srv->seg_enabled) {
    frond__buf_printf(b, "<p>Segment IDs are disabled (<code>store = "
                         "none</code>).</p>\n");
  } else if (seg == NULL) {
    frond__buf_printf(b, "<p class=bad>The segment store has not been "
                         "reached yet; retrying.</p>\n");
  } else if (frond_seg_tags(seg, &tags, &ntags, NULL) != 0 || ntags == 0) {
    frond__buf_printf(b, "<p>No tags yet. Create one with <code>POST "
                         "/v1/tags</code>.</p>\n");
  } else {
    frond__buf_printf(b, "<table><tr><th>tag</th><th>current buffer</th>"
                         "<th>next buffer</th><th>step</th><th>IDs/s</th>"
                         "<th>issued</th><th>loads / failures</th></tr>\n");
    pthread_mutex_lock(&srv->rate_lock);
    for (i = 0; i < ntags; i++) {
      double rate = 0;
      for (j = 0; j < srv->nrates; j++)
        if (strcmp(srv->rates[j].tag, tags[i].tag) == 0)
          rate = srv->rates[j].per_sec;
      frond__buf_printf(b, "<tr><td><code>");
      html(b, tags[i].tag);
      frond__buf_printf(b, "</code></td>");
      buffer_cell(b, &tags[i], 1);
      buffer_cell(b, &tags[i], 0);
      frond__buf_printf(
          b,
          "<td class=num>%lld<br><small>row %lld</small></td><td class=num>"
          "%.0f</td><td class=num>%llu</td><td class=num>%llu / %llu%s</td>"
          "</tr>\n",
          (long long)tags[i].step, (long long)tags[i].row_step, rate,
          (unsigned long long)tags[i].issued, (unsigned long long)tags[i].loads,
          (unsigned long long)tags[i].load_failures,
          tags[i].loading ? "<br><small>loading&hellip;</small>" : "");
    }
    pthread_mutex_unlock(&srv->rate_lock);
    frond__buf_printf(b, "</table>\n");
  }
  frond_free(tags);
  frond__buf_printf(b,
                    "<footer>frond %s &middot; <a href=/metrics>metrics</a> "
                    "&middot; <a href=/v1/layout>layout</a> &middot; "
                    "refreshes every 2 s</footer>\n</body></html>\n",
                    FROND_VERSION_STRING);
}
