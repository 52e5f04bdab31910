/*
** status.c -- the status page (/): tags, buffers, steps and rates, for a
** person; and the once-a-second rate sampling it shows.
**
** The page is plain HTML with inline style and no script or external
** asset; it refreshes itself every two seconds. Every text that comes
** from outside (tag names) is escaped.
*/
#include "server/server.h"

#include "base/base.h"

#include <stdlib.h>
#include <string.h>

void frond__rates_sample(frond__server *srv, double dt) {
  uint64_t issued = FROND__SUM(srv, ids_snowflake);
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
      (unsigned long long)FROND__SUM(srv, ids_snowflake),
      (long long)gs.ahead_ms, (unsigned long long)gs.waits,
      (long)atomic_load(&srv->nconns));
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
