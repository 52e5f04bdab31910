/* SPDX-License-Identifier: Apache-2.0 */
/*
** status.c -- the status page (/): tags, buffers, steps and rates, for a
** person; and the once-a-second rate sampling it shows.
**
** The page is plain HTML with inline style and no script or external
** asset; it refreshes itself every two seconds. Every text that comes
** from outside (tag names, the search) is escaped. Tags come a page at a
** time (PAGE_TAGS, by name; ?page=N) and can be searched by a part of
** their name (?q=TEXT), both done by the allocator's index, so the page
** stays small and cheap with a million tags.
*/
#include "server/server.h"

#include "base/base.h"
#include "server/http_parse.h"
#include "server/ready.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE_TAGS 50
/* Sampling the tags' rates takes at most 1/SAMPLE_SHARE of a core. */
#define SAMPLE_SHARE 1000

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void frond__rates_sample(frond__server *srv, double dt) {
  uint64_t issued = FROND__SUM(srv, ids_snowflake);
  frond_seg *seg = atomic_load(&srv->seg);
  pthread_mutex_lock(&srv->rate_lock);
  srv->rate_snowflake = (double)(issued - srv->last_snowflake) / dt;
  srv->last_snowflake = issued;
  pthread_mutex_unlock(&srv->rate_lock);
  /* Over the tags in use only; their rates show in frond_tag_info. With
  ** a hundred thousand tags in use a sample costs milliseconds (a few
  ** cache misses per tag): then it is taken less often than once a
  ** second, so that an idle server stays idle; the rates are measured
  ** over the longer interval. */
  if (seg != NULL && frond__mono_ns() >= srv->sample_next_ns) {
    int64_t cpu = thread_cpu_ns();
    frond_seg_sample(seg);
    srv->sample_next_ns =
        frond__mono_ns() + (thread_cpu_ns() - cpu) * SAMPLE_SHARE;
  }
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

/* Percent-encode s for a query value. */
static void url(frond__buf *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      frond__buf_append(b, s, 1);
    } else {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      frond__buf_append(b, e, 3);
    }
  }
}

/* The query's page (from 1) and search text (form encoding: '+' is a
** space), into q[FROND_TAG_MAX + 1]; a text too long or badly escaped is
** ignored. */
static size_t query(const char *target, size_t len, char *q) {
  char raw[FROND_TAG_MAX * 3 + 1];
  const char *v;
  size_t vl, i;
  int64_t page = 1;
  int n;
  q[0] = '\0';
  if (frond__http_query(target, len, "page", &v, &vl) &&
      (frond__parse_i64(v, vl, &page) != 0 || page < 1 || page > 1000000000))
    page = 1;
  if (frond__http_query(target, len, "q", &v, &vl) && vl < sizeof raw) {
    for (i = 0; i < vl; i++)
      raw[i] = v[i] == '+' ? ' ' : v[i];
    n = frond__http_unescape(raw, vl, q, FROND_TAG_MAX);
    q[n > 0 ? n : 0] = '\0';
  }
  return (size_t)page;
}

/* A link to page p of the search q. */
static void page_link(frond__buf *b, size_t p, const char *q,
                      const char *text) {
  frond__buf_printf(b, "<a href=\"/?page=%zu", p);
  if (q[0]) {
    frond__buf_append(b, "&amp;q=", 7);
    url(b, q);
  }
  frond__buf_printf(b, "\">%s</a>", text);
}

static void tags_table(frond__server *srv, frond__buf *b, frond_seg *seg,
                       const char *target, size_t len) {
  char q[FROND_TAG_MAX + 1];
  frond_seg_query sq;
  frond_tag_info *tags = NULL;
  frond_seg_stats ss;
  size_t page = query(target, len, q), n = 0, total = 0, pages, i;
  memset(&sq, 0, sizeof sq);
  sq.match = q;
  sq.offset = (page - 1) * PAGE_TAGS;
  sq.limit = PAGE_TAGS;
  frond_seg_stats_get(seg, &ss);
  if (frond_seg_tag_query(seg, &sq, &tags, &n, &total, NULL) != 0)
    n = total = 0;
  frond__buf_printf(b, "<form class=find method=get action=\"/\">"
                       "<input name=q placeholder=\"search tags\" value=\"");
  html(b, q);
  frond__buf_printf(b,
                    "\"> <button>search</button> <small>%llu tags, %llu "
                    "in use</small></form>\n",
                    (unsigned long long)ss.tags,
                    (unsigned long long)ss.tags_in_use);
  if (total == 0) {
    if (q[0]) {
      frond__buf_printf(b, "<p>No tag contains <code>");
      html(b, q);
      frond__buf_printf(b, "</code>.</p>\n");
    } else {
      frond__buf_printf(b, "<p>No tags yet. Create one with <code>POST "
                           "/v1/tags</code>.</p>\n");
    }
    frond_free(tags);
    return;
  }
  pages = (total + PAGE_TAGS - 1) / PAGE_TAGS;
  frond__buf_printf(b, "<p class=pager>");
  if (page > 1)
    page_link(b, page - 1, q, "&laquo; previous");
  frond__buf_printf(b, " <span id=page-info>tags %zu&ndash;%zu of %zu",
                    n ? sq.offset + 1 : 0, sq.offset + n, total);
  if (q[0]) {
    frond__buf_printf(b, " containing <code>");
    html(b, q);
    frond__buf_printf(b, "</code>");
  }
  frond__buf_printf(b, " &middot; page %zu of %zu</span> ", page, pages);
  if (page < pages)
    page_link(b, page + 1, q, "next &raquo;");
  frond__buf_printf(b, "</p>\n");
  if (n == 0) {
    frond_free(tags);
    return;
  }
  frond__buf_printf(b, "<table><tr><th>tag</th><th>current buffer</th>"
                       "<th>next buffer</th><th>step</th><th>IDs/s</th>"
                       "<th>issued</th><th>loads / failures</th></tr>\n");
  for (i = 0; i < n; i++) {
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
        (long long)tags[i].step, (long long)tags[i].row_step, tags[i].rate,
        (unsigned long long)tags[i].issued, (unsigned long long)tags[i].loads,
        (unsigned long long)tags[i].load_failures,
        tags[i].loading ? "<br><small>loading&hellip;</small>" : "");
  }
  frond__buf_printf(b, "</table>\n");
  frond_free(tags);
}

void frond__status_render(frond__server *srv, frond__buf *b, const char *target,
                          size_t len) {
  char spec[160], started[40];
  frond_gen_stats gs;
  frond_seg *seg = atomic_load(&srv->seg);
  int64_t up = frond__uptime_ms(srv) / 1000;
  frond__ready_facts rf;
  frond__ready_reason why[FROND__KINDS];
  int ready, k;
  double sf_rate;
  frond__ready_facts_get(srv, &rf);
  frond__ready_eval(&rf, why);
  ready = frond__ready_all(why) && !rf.draining;
  frond_layout_format(&srv->layout, spec, sizeof spec);
  frond__format_rfc3339(srv->start_ms, started, sizeof started);
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
      ".find{margin:0 0 .6em}.find input{padding:4px 8px;border:1px solid "
      "#c8d3c5;border-radius:6px;min-width:240px}.find small,.pager{color:"
      "#5b6b5d}.pager a{color:#2f7a3a}"
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
      (unsigned long long)FROND__SUM(srv, ids_snowflake),
      (long long)gs.ahead_ms, (unsigned long long)gs.waits,
      (long)atomic_load(&srv->nconns));
  /* Each kind's readiness, in /readyz?kind='s words. */
  frond__buf_printf(b, "<h2>Readiness</h2>\n<table><tr><th>kind</th><th>"
                       "ready</th><th>why</th></tr>\n");
  for (k = 0; k < FROND__KINDS; k++) {
    char line[400];
    frond__ready_describe(&rf, k, why[k], line, sizeof line);
    frond__buf_printf(
        b,
        "<tr><td>%s</td><td class=%s id=ready-%s>%s</td>"
        "<td>",
        frond__ready_kind_name(k), why[k] == FROND__READY_OK ? "ok" : "bad",
        frond__ready_kind_name(k), why[k] == FROND__READY_OK ? "yes" : "no");
    html(b, line);
    frond__buf_printf(b, "</td></tr>\n");
  }
  frond__buf_printf(b, "</table>\n");
  frond__buf_printf(b, "<h2>Segment tags</h2>\n");
  if (seg == NULL && !srv->seg_enabled)
    frond__buf_printf(b, "<p>Segment IDs are disabled (<code>store = "
                         "none</code>).</p>\n");
  else if (seg == NULL)
    frond__buf_printf(b, "<p class=bad>The segment store has not been "
                         "reached yet; retrying.</p>\n");
  else
    tags_table(srv, b, seg, target, len);
  frond__buf_printf(b,
                    "<footer>frond %s &middot; <a href=/metrics>metrics</a> "
                    "&middot; <a href=/v1/layout>layout</a> &middot; "
                    "refreshes every 2 s</footer>\n</body></html>\n",
                    FROND_VERSION_STRING);
}
