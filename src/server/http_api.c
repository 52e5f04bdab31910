/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_api.c -- the HTTP endpoints that answer from memory: Leaf's paths,
** /v1 IDs, decode and layout, health, /metrics and the status page.
*/
#include "server/http.h"

#include "base/base.h"
#include "base/escape.h"
#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Path segment after prefix, percent-decoded into tag. Returns its length,
** or -1 (an error has been answered). */
int frond__http_path_tag(frond__http_ctx *x, size_t prefix, char *tag) {
  return frond__http_tag_between(x, prefix, x->req->path_len, tag);
}

int frond__http_tag_between(frond__http_ctx *x, size_t prefix, size_t end,
                            char *tag) {
  const char *s = x->req->target + prefix;
  size_t len = end - prefix;
  frond_error err = {0, ""};
  int n;
  if (len == 0 || memchr(s, '/', len) != NULL) {
    frond__http_error(x, 404, "NOT_FOUND", "no such path", NULL);
    return -1;
  }
  n = frond__http_unescape(s, len, tag, FROND_TAG_MAX);
  if (n < 0) {
    frond__http_error(x, 400, "TAG_INVALID",
                      "bad percent-escape or tag too long", NULL);
    return -1;
  }
  tag[n] = '\0';
  if (frond_tag_validate(tag, (size_t)n, &err) != 0) {
    frond__http_error_code(x, err.code ? err.code : FROND_ETAG_INVALID, &err);
    return -1;
  }
  return n;
}

/* ?count=N in [1, max], default 1. Returns N or 0 (an error has been
** answered). */
static size_t count_upto(frond__http_ctx *x, int64_t max) {
  const char *v;
  size_t vl;
  int64_t n;
  char msg[128];
  if (!frond__http_query(x->req->target, x->req->target_len, "count", &v, &vl))
    return 1;
  if (vl == 0 || vl > 19 || frond__parse_i64(v, vl, &n) != 0 || v[0] == '-' ||
      n < 1 || n > max) {
    snprintf(msg, sizeof msg, "count must be an integer in [1, %lld]",
             (long long)max);
    frond__http_error(x, 400, "COUNT_INVALID", msg, NULL);
    return 0;
  }
  return (size_t)n;
}

size_t frond__http_count(frond__http_ctx *x) {
  return count_upto(x, x->srv->cfg.max_count);
}

int frond__http_text(frond__http_ctx *x) {
  const char *v;
  size_t vl;
  if (!frond__http_query(x->req->target, x->req->target_len, "format", &v, &vl))
    return 0;
  if (vl == 4 && memcmp(v, "json", 4) == 0)
    return 0;
  if (vl == 4 && memcmp(v, "text", 4) == 0)
    return 1;
  frond__http_error(x, 400, "BAD_REQUEST", "format must be json or text", NULL);
  return -1;
}

/* ---------------------------------------------------------------- Leaf */

static void leaf_fail(frond__http_ctx *x, int leaf_code, int code) {
  char body[64], extra[64];
  int n =
      snprintf(body, sizeof body, "Result{id=%d, status=EXCEPTION}", leaf_code);
  snprintf(extra, sizeof extra, "Frond-Error: %s\r\n", frond_err_name(code));
  frond__http_respond(x, 500, "text/plain;charset=UTF-8", body, (size_t)n,
                      extra);
}

static void leaf_id(frond__http_ctx *x, int64_t id) {
  char num[FROND__DEC_MAX];
  frond__http_respond(x, 200, "text/plain;charset=UTF-8", num,
                      frond__dec_u64(num, (uint64_t)id), NULL);
}

/* A segment request finished off the loop. */
typedef struct segment_call {
  frond__ids_call call; /* first */
  frond__http_ctx x;
  int leaf; /* answer as Leaf does */
  int text; /* /v1: format=text */
} segment_call;

static void range_answer(frond__http_ctx *x, const char *tag, int64_t start,
                         int64_t n, int text);

static void segment_done(frond__ids_call *call) {
  segment_call *sc = (segment_call *)(void *)call;
  frond__http_ctx *x = &sc->x;
  int r = call->rc;
  if (frond__conn_gone(x->c))
    ; /* the client went away */
  else if (sc->leaf && r != 0)
    leaf_fail(x, r == FROND_ETAG_NOT_FOUND || r == FROND_ETAG_INVALID ? -2 : -3,
              r);
  else if (sc->leaf)
    leaf_id(x, call->ids[0]);
  else if (r != 0)
    frond__http_error_code(x, r, &call->err);
  else if (call->range)
    range_answer(x, call->tag, call->start, (int64_t)call->n, sc->text);
  else
    frond__http_ids(x, call->ids, call->n, sc->text);
  frond__conn_resume(x->c, !x->keep_alive);
  free(call->ids);
  free(sc);
}

/* The allocator did not know the tag, or the call would wait for the
** store (why): finish it off the loop. 1 when the answer comes later, 0 to
** answer the error now. */
static int segment_later(frond__http_ctx *x, const char *tag, size_t len,
                         size_t n, int leaf, int text, int range, int why) {
  segment_call *sc;
  if (why != FROND_ETAG_NOT_FOUND && why != FROND_EWOULD_BLOCK)
    return 0;
  if ((sc = calloc(1, sizeof *sc)) == NULL)
    return 0;
  frond__http_ctx_keep(&sc->x, x);
  sc->leaf = leaf;
  sc->text = text;
  sc->call.range = range;
  sc->call.done = segment_done;
  if (frond__ids_segment_later(&sc->call, x->c, tag, len, n, why))
    return 1;
  free(sc);
  return 0;
}

/* A call that could not go off the loop although it had to wait. */
static int unavailable(int r, frond_error *err) {
  if (r != FROND_EWOULD_BLOCK)
    return r;
  return frond__fail(err, FROND_ESEGMENT_UNAVAILABLE,
                     "the segment is being loaded and the request could not "
                     "wait for it");
}

void frond__http_leaf_snowflake(frond__http_ctx *x) {
  int r = frond__ids_snowflake(x->w, 1, NULL);
  if (r != 0) {
    leaf_fail(x, r == FROND_ECLOCK_BEHIND ? -1 : -3, r);
    return;
  }
  leaf_id(x, x->w->ids[0]);
}

void frond__http_leaf_segment(frond__http_ctx *x, size_t prefix) {
  const char *s = x->req->target + prefix;
  size_t len = x->req->path_len - prefix;
  char tag[FROND_TAG_MAX + 1];
  int n, r;
  if (len == 0 || memchr(s, '/', len) != NULL) {
    frond__http_error(x, 404, "NOT_FOUND", "no such path", NULL);
    return;
  }
  n = frond__http_unescape(s, len, tag, FROND_TAG_MAX);
  if (n < 0) {
    leaf_fail(x, -2, FROND_ETAG_INVALID);
    return;
  }
  if (atomic_load(&x->srv->seg) == NULL) { /* Leaf: "not initialised" */
    leaf_fail(x, -1, FROND_ESEGMENT_UNAVAILABLE);
    return;
  }
  r = frond__ids_segment(x->w, tag, (size_t)n, 1, NULL);
  if (r != 0 && segment_later(x, tag, (size_t)n, 1, 1, 0, 0, r))
    return;
  r = unavailable(r, NULL);
  if (r != 0) {
    leaf_fail(x, r == FROND_ETAG_NOT_FOUND || r == FROND_ETAG_INVALID ? -2 : -3,
              r);
    return;
  }
  leaf_id(x, x->w->ids[0]);
}

void frond__http_leaf_decode(frond__http_ctx *x) {
  const char *v;
  size_t vl;
  int64_t id;
  frond_fields f;
  struct tm tm;
  time_t t;
  char body[256];
  int n;
  if (!frond__http_query(x->req->target, x->req->target_len, "snowflakeId", &v,
                         &vl)) {
    /* Spring answers a missing required parameter with 400. */
    frond__http_error(x, 400, "BAD_REQUEST", "parameter snowflakeId is missing",
                      NULL);
    return;
  }
  if (frond__parse_i64(v, vl, &id) != 0 ||
      frond_decode(&x->srv->layout, id, &f, NULL) != 0) {
    /* Leaf answers its own error map with status 200. */
    static const char msg[] = "{\"errorMsg\":\"snowflake Id反解析失败\"}";
    frond__http_respond(x, 200, "application/json", msg, sizeof msg - 1, NULL);
    return;
  }
  t = (time_t)(f.unix_ms >= 0 ? f.unix_ms / 1000 : (f.unix_ms - 999) / 1000);
  if (x->srv->cfg.leaf_time_zone == FROND__TZ_LOCAL)
    localtime_r(&t, &tm);
  else
    gmtime_r(&t, &tm);
  n = snprintf(body, sizeof body,
               "{\"timestamp\":\"%lld(%04d-%02d-%02d %02d:%02d:%02d.%03d)\","
               "\"workerId\":\"%llu\",\"sequenceId\":\"%llu\"}",
               (long long)f.unix_ms, tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
               (int)(((f.unix_ms % 1000) + 1000) % 1000),
               (unsigned long long)f.node, (unsigned long long)f.sequence);
  frond__http_respond(x, 200, "application/json", body, (size_t)n, NULL);
}

/* ------------------------------------------------------------------ v1 */

void frond__http_v1_snowflake(frond__http_ctx *x) {
  frond_error err = {0, ""};
  size_t n;
  int fmt, r;
  if (!frond__http_is_get(x)) {
    frond__http_not_allowed(x, "GET, HEAD");
    return;
  }
  if ((n = frond__http_count(x)) == 0 || (fmt = frond__http_text(x)) < 0)
    return;
  if ((r = frond__ids_snowflake(x->w, n, &err)) != 0) {
    frond__http_error_code(x, r, &err);
    return;
  }
  frond__http_ids(x, x->w->ids, n, fmt);
}

void frond__http_v1_segment(frond__http_ctx *x, size_t prefix) {
  frond_error err = {0, ""};
  char tag[FROND_TAG_MAX + 1];
  size_t n;
  int fmt, r, tl;
  if (!frond__http_is_get(x)) {
    frond__http_not_allowed(x, "GET, HEAD");
    return;
  }
  if ((tl = frond__http_path_tag(x, prefix, tag)) < 0 ||
      (n = frond__http_count(x)) == 0 || (fmt = frond__http_text(x)) < 0)
    return;
  if ((r = frond__ids_segment(x->w, tag, (size_t)tl, n, &err)) != 0) {
    if (segment_later(x, tag, (size_t)tl, n, 0, fmt, 0, r))
      return;
    r = unavailable(r, &err);
    frond__http_error_code(x, r, &err);
    return;
  }
  frond__http_ids(x, x->w->ids, n, fmt);
}

/* {"tag":"orders","start":"1001","end":"2001","count":1000}: the range
** [start, end); IDs as strings, as everywhere in /v1, so that JavaScript
** reads them exactly. Text: "1001 2001" (start, end). */
static void range_answer(frond__http_ctx *x, const char *tag, int64_t start,
                         int64_t n, int text) {
  char esc[FROND_TAG_MAX * 6 + 1], a[FROND__DEC_MAX + 1], e[FROND__DEC_MAX + 1];
  frond__buf *b = &x->w->scratch;
  a[frond__dec_i64(a, start)] = '\0';
  e[frond__dec_i64(e, start + n)] = '\0';
  b->len = 0;
  if (text) {
    frond__buf_printf(b, "%s %s\n", a, e);
  } else {
    frond__json_escape(tag, strlen(tag), esc, sizeof esc);
    frond__buf_printf(
        b, "{\"tag\":\"%s\",\"start\":\"%s\",\"end\":\"%s\",\"count\":%lld}\n",
        esc, a, e, (long long)n);
  }
  frond__http_respond(x, 200, text ? "text/plain" : "application/json", b->data,
                      b->len, NULL);
}

void frond__http_v1_segment_range(frond__http_ctx *x, size_t prefix,
                                  size_t end) {
  frond_error err = {0, ""};
  char tag[FROND_TAG_MAX + 1];
  size_t n;
  int64_t start;
  int fmt, r, tl;
  if (!frond__http_is_get(x)) {
    frond__http_not_allowed(x, "GET, HEAD");
    return;
  }
  if ((tl = frond__http_tag_between(x, prefix, end, tag)) < 0 ||
      (n = count_upto(x, x->srv->cfg.max_range)) == 0 ||
      (fmt = frond__http_text(x)) < 0)
    return;
  r = frond__ids_range(x->w, tag, (size_t)tl, (int64_t)n, &start, &err);
  if (r != 0) {
    if (segment_later(x, tag, (size_t)tl, n, 0, fmt, 1, r))
      return;
    r = unavailable(r, &err);
    frond__http_error_code(x, r, &err);
    return;
  }
  range_answer(x, tag, start, (int64_t)n, fmt);
}

void frond__http_v1_decode(frond__http_ctx *x, size_t prefix) {
  const char *s = x->req->target + prefix;
  size_t len = x->req->path_len - prefix;
  frond_error err = {0, ""};
  frond_fields f;
  int64_t id;
  char when[40], spec[160];
  frond__buf *b = &x->w->scratch;
  if (!frond__http_is_get(x)) {
    frond__http_not_allowed(x, "GET, HEAD");
    return;
  }
  if (frond__parse_i64(s, len, &id) != 0) {
    frond__http_error(x, 400, "ID_INVALID", "the ID must be a decimal integer",
                      NULL);
    return;
  }
  if (frond_decode(&x->srv->layout, id, &f, &err) != 0) {
    frond__http_error_code(x, err.code ? err.code : FROND_EID_INVALID, &err);
    return;
  }
  frond__format_rfc3339(f.unix_ms, when, sizeof when);
  frond_layout_format(&x->srv->layout, spec, sizeof spec);
  b->len = 0;
  frond__buf_printf(
      b,
      "{\"id\":\"%lld\",\"time\":\"%s\",\"unix_ms\":%lld,\"time_units\":%lld,"
      "\"node\":%llu,\"datacenter\":%llu,\"worker\":%llu,\"sequence\":%llu,"
      "\"layout\":\"%s\"}\n",
      (long long)id, when, (long long)f.unix_ms, (long long)f.time,
      (unsigned long long)f.node, (unsigned long long)f.datacenter,
      (unsigned long long)f.worker, (unsigned long long)f.sequence, spec);
  frond__http_respond(x, 200, "application/json", b->data, b->len, NULL);
}

void frond__http_v1_layout(frond__http_ctx *x) {
  const frond_layout *l = &x->srv->layout;
  char spec[160], end[40];
  frond__buf *b = &x->w->scratch;
  if (!frond__http_is_get(x)) {
    frond__http_not_allowed(x, "GET, HEAD");
    return;
  }
  frond_layout_format(l, spec, sizeof spec);
  frond__format_rfc3339(frond_layout_end_ms(l), end, sizeof end);
  b->len = 0;
  frond__buf_printf(
      b,
      "{\"name\":\"%s\",\"spec\":\"%s\",\"time_bits\":%u,\"node_bits\":%u,"
      "\"dc_bits\":%u,\"worker_bits\":%u,\"seq_bits\":%u,\"unit_ms\":%lld,"
      "\"epoch_ms\":%lld,\"end\":\"%s\",\"ids_per_second\":%.0f,"
      "\"node\":%llu}\n",
      l->name, spec, l->time_bits, l->node_bits, l->dc_bits, l->worker_bits,
      l->seq_bits, (long long)l->unit_ms, (long long)l->epoch_ms, end,
      frond_layout_ids_per_second(l), (unsigned long long)x->srv->node);
  frond__http_respond(x, 200, "application/json", b->data, b->len, NULL);
}

/* -------------------------------------------------------------- health */

void frond__http_plain(frond__http_ctx *x, int status, const char *text) {
  frond__http_respond(x, status, "text/plain", text, strlen(text), NULL);
}

void frond__http_readyz(frond__http_ctx *x) {
  if (atomic_load(&x->srv->draining))
    frond__http_plain(x, 503, "draining\n");
  else if (!atomic_load(&x->srv->ready))
    frond__http_plain(x, 503, "not ready: store not reached\n");
  else
    frond__http_plain(x, 200, "ready\n");
}

void frond__http_page(frond__http_ctx *x, int which) {
  frond__buf *b = &x->w->scratch;
  if (!frond__http_is_get(x)) {
    frond__http_not_allowed(x, "GET, HEAD");
    return;
  }
  b->len = 0;
  if (which == FROND__R_METRICS) {
    frond__metrics_render(x->srv, b);
    frond__http_respond(x, 200, "text/plain; version=0.0.4", b->data, b->len,
                        NULL);
  } else {
    frond__status_render(x->srv, b, x->req->target, x->req->target_len);
    frond__http_respond(x, 200, "text/html; charset=utf-8", b->data, b->len,
                        "Cache-Control: no-store\r\n");
  }
}
