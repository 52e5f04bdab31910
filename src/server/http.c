/*
** http.c -- the HTTP protocol: framing, routing and the endpoints.
**
** on_data parses one request head from the connection's buffer, waits for
** its body, answers it synchronously and returns the bytes consumed, so
** pipelined requests are answered in order. Every answer carries
** Content-Length; a request the parser rejects gets its status and the
** connection is closed, since the byte stream can no longer be framed.
*/
#include "server/server.h"

#include "core/internal.h"
#include "server/http_parse.h"
#include "server/json.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct ctx {
  frond__conn *c;
  frond__worker *w;
  frond__server *srv;
  const frond__http_request *req;
  const char *body;
  size_t body_len;
  int route;
  int keep_alive;
  uint64_t t0;
} ctx;

static const char *reason_phrase(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 201:
    return "Created";
  case 204:
    return "No Content";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 409:
    return "Conflict";
  case 413:
    return "Content Too Large";
  case 414:
    return "URI Too Long";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 501:
    return "Not Implemented";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Unknown";
  }
}

/* Decimal text of v into the end of buf[24]; returns the start. */
static char *u64_text(uint64_t v, char *end) {
  char *p = end;
  do {
    *--p = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  return p;
}

static void record(ctx *x, int status) {
  frond__metrics *m = &x->w->m;
  uint64_t ns = uv_hrtime() - x->t0;
  double s = (double)ns / 1e9;
  int b = 0;
  while (b < FROND__NBUCKETS && s > frond__bucket_bounds[b])
    b++;
  FROND__INC(m->requests[x->route][frond__status_index(status)], 1);
  FROND__INC(m->duration[x->route][b], 1);
  FROND__INC(m->duration_ns[x->route], ns);
}

static void put(frond__buf *b, const char *s, size_t n) {
  memcpy(b->data + b->len, s, n);
  b->len += n;
}
#define PUT_LIT(b, lit) put(b, lit, sizeof(lit) - 1)

/* Append a whole answer. extra: more header lines, each ending in CRLF.
** Built with memcpy, not printf: this is the hot path of every request. */
static void respond(ctx *x, int status, const char *ctype, const char *body,
                    size_t len, const char *extra) {
  frond__buf *out = frond__conn_out(x->c);
  const char *reason = reason_phrase(status);
  size_t elen = extra ? strlen(extra) : 0;
  char num[24], *n;
  if (frond__conn_draining(x->c))
    x->keep_alive = 0;
  if (frond__buf_reserve(out, 250 + strlen(ctype) + elen + len) != 0) {
    x->keep_alive = 0;
    return;
  }
  if (status == 200) {
    PUT_LIT(out, "HTTP/1.1 200 OK\r\nContent-Type: ");
  } else {
    PUT_LIT(out, "HTTP/1.1 ");
    n = u64_text((uint64_t)status, num + sizeof num);
    put(out, n, (size_t)(num + sizeof num - n));
    PUT_LIT(out, " ");
    put(out, reason, strlen(reason));
    PUT_LIT(out, "\r\nContent-Type: ");
  }
  put(out, ctype, strlen(ctype));
  PUT_LIT(out, "\r\n");
  put(out, x->w->date, x->w->date_len);
  PUT_LIT(out, "Content-Length: ");
  n = u64_text(len, num + sizeof num);
  put(out, n, (size_t)(num + sizeof num - n));
  PUT_LIT(out, "\r\n");
  if (!x->keep_alive)
    PUT_LIT(out, "Connection: close\r\n");
  else if (x->req != NULL && x->req->minor == 0)
    PUT_LIT(out, "Connection: keep-alive\r\n");
  if (elen > 0)
    put(out, extra, elen);
  PUT_LIT(out, "\r\n");
  if (x->req == NULL || x->req->method != FROND__HTTP_HEAD)
    put(out, body, len);
  record(x, status);
}

static void respond_json(ctx *x, int status, const frond__buf *b) {
  respond(x, status, "application/json", b->data, b->len, NULL);
}

static int status_of(int code) {
  switch (code) {
  case FROND_EINVAL:
  case FROND_ECOUNT_INVALID:
  case FROND_EID_INVALID:
  case FROND_ETAG_INVALID:
  case FROND_ELAYOUT_INVALID:
    return 400;
  case FROND_ETAG_NOT_FOUND:
    return 404;
  case FROND_ETAG_EXISTS:
    return 409;
  case FROND_ESEGMENT_UNAVAILABLE:
  case FROND_ECLOCK_BEHIND:
  case FROND_ESTORE:
  case FROND_ENODE_ID_LOST:
  case FROND_ECOORD:
  case FROND_ECLOSED:
  case FROND_ELAYOUT_MISMATCH:
    return 503;
  default:
    return 500;
  }
}

/* {"error":{"code":..,"message":..}} with the given status. */
static void error_with(ctx *x, int status, const char *code, const char *msg,
                       const char *extra) {
  char esc[1024], body[1200];
  int n;
  frond__json_escape(msg, strlen(msg), esc, sizeof esc);
  n = snprintf(body, sizeof body,
               "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n", code, esc);
  respond(x, status, "application/json", body, (size_t)n, extra);
}

static void error_code(ctx *x, int code, const frond_error *err) {
  const char *msg = err && err->code ? err->message : frond_strerror(code);
  error_with(x, status_of(code), frond_err_name(code), msg, NULL);
}

static void not_allowed(ctx *x, const char *allow) {
  char extra[64];
  snprintf(extra, sizeof extra, "Allow: %s\r\n", allow);
  error_with(x, 405, "METHOD_NOT_ALLOWED", "method not allowed here", extra);
}

static int is_get(ctx *x) {
  return x->req->method == FROND__HTTP_GET ||
         x->req->method == FROND__HTTP_HEAD;
}

/* Path segment after prefix, percent-decoded into tag. Returns its length,
** or -1 (an error has been answered). */
static int path_tag(ctx *x, size_t prefix, char *tag) {
  const char *s = x->req->target + prefix;
  size_t len = x->req->path_len - prefix;
  frond_error err = {0, ""};
  int n;
  if (len == 0 || memchr(s, '/', len) != NULL) {
    error_with(x, 404, "NOT_FOUND", "no such path", NULL);
    return -1;
  }
  n = frond__http_unescape(s, len, tag, FROND_TAG_MAX);
  if (n < 0) {
    error_with(x, 400, "TAG_INVALID", "bad percent-escape or tag too long",
               NULL);
    return -1;
  }
  tag[n] = '\0';
  if (frond_tag_validate(tag, (size_t)n, &err) != 0) {
    error_code(x, err.code ? err.code : FROND_ETAG_INVALID, &err);
    return -1;
  }
  return n;
}

/* ?count=N, default 1. Returns N or 0 (an error has been answered). */
static size_t get_count(ctx *x) {
  const char *v;
  size_t vl;
  int64_t n;
  char msg[128];
  if (!frond__http_query(x->req->target, x->req->target_len, "count", &v, &vl))
    return 1;
  if (vl == 0 || vl > 19 || frond__parse_i64(v, vl, &n) != 0 || v[0] == '-' ||
      n < 1 || n > x->srv->cfg.max_count) {
    snprintf(msg, sizeof msg, "count must be an integer in [1, %lld]",
             (long long)x->srv->cfg.max_count);
    error_with(x, 400, "COUNT_INVALID", msg, NULL);
    return 0;
  }
  return (size_t)n;
}

/* 0 json, 1 text, -1 answered with an error. */
static int get_format(ctx *x) {
  const char *v;
  size_t vl;
  if (!frond__http_query(x->req->target, x->req->target_len, "format", &v, &vl))
    return 0;
  if (vl == 4 && memcmp(v, "json", 4) == 0)
    return 0;
  if (vl == 4 && memcmp(v, "text", 4) == 0)
    return 1;
  error_with(x, 400, "BAD_REQUEST", "format must be json or text", NULL);
  return -1;
}

static void ids_answer(ctx *x, const int64_t *ids, size_t n, int text) {
  frond__buf *b = &x->w->scratch;
  size_t i;
  b->len = 0;
  if (frond__buf_reserve(b, n * 23 + 16) != 0) {
    error_with(x, 500, "NOMEM", "out of memory", NULL);
    return;
  }
  if (!text) {
    memcpy(b->data, "{\"ids\":[", 8);
    b->len = 8;
  }
  for (i = 0; i < n; i++) {
    char num[24], *p = u64_text((uint64_t)ids[i], num + sizeof num);
    size_t l = (size_t)(num + sizeof num - p);
    char *d = b->data + b->len;
    if (text) {
      memcpy(d, p, l);
      d[l] = '\n';
      b->len += l + 1;
    } else {
      if (i > 0)
        *d++ = ',';
      *d++ = '"';
      memcpy(d, p, l);
      d[l] = '"';
      b->len += l + 2 + (i > 0);
    }
  }
  if (!text) {
    memcpy(b->data + b->len, "]}\n", 3);
    b->len += 3;
  }
  respond(x, 200, text ? "text/plain" : "application/json", b->data, b->len,
          NULL);
}

/* ---------------------------------------------------------------- Leaf */

static void leaf_fail(ctx *x, int leaf_code, int code) {
  char body[64], extra[64];
  int n =
      snprintf(body, sizeof body, "Result{id=%d, status=EXCEPTION}", leaf_code);
  snprintf(extra, sizeof extra, "Frond-Error: %s\r\n", frond_err_name(code));
  respond(x, 500, "text/plain;charset=UTF-8", body, (size_t)n, extra);
}

static void leaf_id(ctx *x, int64_t id) {
  char num[24], *p = u64_text((uint64_t)id, num + sizeof num);
  respond(x, 200, "text/plain;charset=UTF-8", p, (size_t)(num + sizeof num - p),
          NULL);
}

static void leaf_snowflake(ctx *x) {
  int r = frond__ids_snowflake(x->w, 1, NULL);
  if (r != 0) {
    leaf_fail(x, r == FROND_ECLOCK_BEHIND ? -1 : -3, r);
    return;
  }
  leaf_id(x, x->w->ids[0]);
}

static void leaf_segment(ctx *x, size_t prefix) {
  const char *s = x->req->target + prefix;
  size_t len = x->req->path_len - prefix;
  char tag[FROND_TAG_MAX + 1];
  int n, r;
  if (len == 0 || memchr(s, '/', len) != NULL) {
    error_with(x, 404, "NOT_FOUND", "no such path", NULL);
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
  if (r != 0) {
    leaf_fail(x, r == FROND_ETAG_NOT_FOUND || r == FROND_ETAG_INVALID ? -2 : -3,
              r);
    return;
  }
  leaf_id(x, x->w->ids[0]);
}

static void leaf_decode(ctx *x) {
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
    error_with(x, 400, "BAD_REQUEST", "parameter snowflakeId is missing", NULL);
    return;
  }
  if (frond__parse_i64(v, vl, &id) != 0 ||
      frond_decode(&x->srv->layout, id, &f, NULL) != 0) {
    /* Leaf answers its own error map with status 200. */
    static const char msg[] = "{\"errorMsg\":\"snowflake Id反解析失败\"}";
    respond(x, 200, "application/json", msg, sizeof msg - 1, NULL);
    return;
  }
  t = (time_t)(f.unix_ms >= 0 ? f.unix_ms / 1000 : (f.unix_ms - 999) / 1000);
  if (x->srv->leaf_local_time)
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
  respond(x, 200, "application/json", body, (size_t)n, NULL);
}

/* ------------------------------------------------------------------ v1 */

static void v1_snowflake(ctx *x) {
  frond_error err = {0, ""};
  size_t n;
  int fmt, r;
  if (!is_get(x)) {
    not_allowed(x, "GET, HEAD");
    return;
  }
  if ((n = get_count(x)) == 0 || (fmt = get_format(x)) < 0)
    return;
  if ((r = frond__ids_snowflake(x->w, n, &err)) != 0) {
    error_code(x, r, &err);
    return;
  }
  ids_answer(x, x->w->ids, n, fmt);
}

static void v1_segment(ctx *x, size_t prefix) {
  frond_error err = {0, ""};
  char tag[FROND_TAG_MAX + 1];
  size_t n;
  int fmt, r, tl;
  if (!is_get(x)) {
    not_allowed(x, "GET, HEAD");
    return;
  }
  if ((tl = path_tag(x, prefix, tag)) < 0 || (n = get_count(x)) == 0 ||
      (fmt = get_format(x)) < 0)
    return;
  if ((r = frond__ids_segment(x->w, tag, (size_t)tl, n, &err)) != 0) {
    error_code(x, r, &err);
    return;
  }
  ids_answer(x, x->w->ids, n, fmt);
}

static void v1_decode(ctx *x, size_t prefix) {
  const char *s = x->req->target + prefix;
  size_t len = x->req->path_len - prefix;
  frond_error err = {0, ""};
  frond_fields f;
  int64_t id;
  char when[40], spec[160];
  frond__buf *b = &x->w->scratch;
  if (!is_get(x)) {
    not_allowed(x, "GET, HEAD");
    return;
  }
  if (frond__parse_i64(s, len, &id) != 0) {
    error_with(x, 400, "ID_INVALID", "the ID must be a decimal integer", NULL);
    return;
  }
  if (frond_decode(&x->srv->layout, id, &f, &err) != 0) {
    error_code(x, err.code ? err.code : FROND_EID_INVALID, &err);
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
  respond_json(x, 200, b);
}

static void v1_layout(ctx *x) {
  const frond_layout *l = &x->srv->layout;
  char spec[160], end[40];
  frond__buf *b = &x->w->scratch;
  if (!is_get(x)) {
    not_allowed(x, "GET, HEAD");
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
  respond_json(x, 200, b);
}

/* -------------------------------------------------------------- admin */

/* Constant-time comparison of the bearer token. 1 when authorized. */
static int authorized(ctx *x) {
  const char *tok = x->srv->cfg.admin_token;
  size_t tl = strlen(tok), i;
  const frond__http_header *h;
  unsigned char diff = 0;
  if (tl == 0)
    return 1;
  h = frond__http_header_find(x->req, "authorization");
  if (h == NULL || h->value_len < 7 || memcmp(h->value, "Bearer ", 7) != 0 ||
      h->value_len - 7 != tl)
    diff = 1;
  else
    for (i = 0; i < tl; i++)
      diff |= (unsigned char)(h->value[7 + i] ^ tok[i]);
  if (diff != 0) {
    error_with(x, 401, "UNAUTHORIZED",
               "this endpoint needs Authorization: Bearer <admin_token>",
               "WWW-Authenticate: Bearer\r\n");
    return 0;
  }
  return 1;
}

static int admin_store(ctx *x, frond_error *err) {
  if (x->srv->admin_store != NULL)
    return 0;
  if (strcmp(x->srv->cfg.store, "none") == 0)
    return frond__fail(err, FROND_ESTORE, "no store configured (store = none)");
  return frond_store_open(&x->srv->admin_store, x->srv->cfg.store, err);
}

static void tag_json(frond__buf *b, const frond_tag_row *r) {
  char t[FROND_TAG_MAX * 6 + 1], d[257 * 6 + 1];
  frond__json_escape(r->tag, strlen(r->tag), t, sizeof t);
  frond__json_escape(r->description, strlen(r->description), d, sizeof d);
  frond__buf_printf(b,
                    "{\"tag\":\"%s\",\"max_id\":%lld,\"step\":%lld,"
                    "\"description\":\"%s\",\"update_time\":\"%s\"}",
                    t, (long long)r->max_id, (long long)r->step, d,
                    r->update_time);
}

static void v1_tags(ctx *x, size_t prefix, int one) {
  frond_error err = {0, ""};
  frond__buf *b = &x->w->scratch;
  char tag[FROND_TAG_MAX + 1], desc[257], jerr[160];
  frond_seg *seg;
  int m = x->req->method, r = 0, status = 200;
  frond__json_field fields[4] = {
      {"tag", FROND__JSON_STR, tag, sizeof tag, 0, 0},
      {"step", FROND__JSON_INT, NULL, 0, 0, 0},
      {"start", FROND__JSON_INT, NULL, 0, 0, 0},
      {"description", FROND__JSON_STR, desc, sizeof desc, 0, 0},
  };
  if (one) {
    if (m != FROND__HTTP_GET && m != FROND__HTTP_HEAD &&
        m != FROND__HTTP_PATCH && m != FROND__HTTP_DELETE) {
      not_allowed(x, "GET, HEAD, PATCH, DELETE");
      return;
    }
    if (path_tag(x, prefix, tag) < 0)
      return;
  } else if (!is_get(x) && m != FROND__HTTP_POST) {
    not_allowed(x, "GET, HEAD, POST");
    return;
  }
  if (!is_get(x) && !authorized(x))
    return;
  if (m == FROND__HTTP_POST || m == FROND__HTTP_PATCH) {
    /* POST reads tag, step, start, description; PATCH only step. */
    size_t nf = m == FROND__HTTP_POST ? 4 : 2;
    frond__json_field *f = m == FROND__HTTP_POST ? fields : fields + 1;
    if (frond__json_read(x->body, x->body_len, f, nf - (m == FROND__HTTP_PATCH),
                         jerr, sizeof jerr) != 0) {
      error_with(x, 400, "BAD_REQUEST", jerr, NULL);
      return;
    }
    if ((m == FROND__HTTP_POST && (!fields[0].present || !fields[1].present)) ||
        (m == FROND__HTTP_PATCH && !fields[1].present)) {
      error_with(x, 400, "BAD_REQUEST",
                 m == FROND__HTTP_POST ? "body needs \"tag\" and \"step\""
                                       : "body needs \"step\"",
                 NULL);
      return;
    }
  }
  b->len = 0;
  pthread_mutex_lock(&x->srv->admin_lock);
  r = admin_store(x, &err);
  if (r == 0 && one && is_get(x)) {
    frond_tag_row row;
    if ((r = frond_store_tag_get(x->srv->admin_store, tag, &row, &err)) == 0)
      tag_json(b, &row);
  } else if (r == 0 && is_get(x)) {
    frond_tag_row *rows = NULL;
    size_t n = 0, i;
    if ((r = frond_store_tag_list(x->srv->admin_store, &rows, &n, &err)) == 0) {
      frond__buf_printf(b, "{\"tags\":[");
      for (i = 0; i < n; i++) {
        if (i > 0)
          frond__buf_append(b, ",", 1);
        tag_json(b, &rows[i]);
      }
      frond__buf_printf(b, "]}");
      frond_free(rows);
    }
  } else if (r == 0 && m == FROND__HTTP_POST) {
    r = frond_store_tag_create(x->srv->admin_store, tag, fields[1].num,
                               fields[2].present ? fields[2].num : 1,
                               fields[3].present ? desc : "", &err);
    status = 201;
  } else if (r == 0 && m == FROND__HTTP_PATCH) {
    r = frond_store_tag_set_step(x->srv->admin_store, tag, fields[1].num, &err);
  } else if (r == 0) {
    r = frond_store_tag_delete(x->srv->admin_store, tag, &err);
  }
  if (r == 0 && (m == FROND__HTTP_POST || m == FROND__HTTP_PATCH)) {
    frond_tag_row row;
    if ((r = frond_store_tag_get(x->srv->admin_store, tag, &row, &err)) == 0)
      tag_json(b, &row);
  }
  if (r == FROND_ESTORE && x->srv->admin_store != NULL) {
    /* Reconnect on the next request. */
    frond_store_close(x->srv->admin_store);
    x->srv->admin_store = NULL;
  }
  pthread_mutex_unlock(&x->srv->admin_lock);
  if (r != 0) {
    error_code(x, r, &err);
    return;
  }
  if (!is_get(x) && (seg = x->srv->seg) != NULL)
    (void)frond_seg_refresh(seg, NULL);
  if (m == FROND__HTTP_DELETE) {
    respond(x, 204, "application/json", "", 0, NULL);
    return;
  }
  frond__buf_append(b, "\n", 1);
  respond_json(x, status, b);
}

/* -------------------------------------------------------------- health */

static void plain(ctx *x, int status, const char *text) {
  respond(x, status, "text/plain", text, strlen(text), NULL);
}

static void readyz(ctx *x) {
  if (atomic_load(&x->srv->draining))
    plain(x, 503, "draining\n");
  else if (!atomic_load(&x->srv->ready))
    plain(x, 503, "not ready: store not reached\n");
  else
    plain(x, 200, "ready\n");
}

static void page(ctx *x, int which) {
  frond__buf *b = &x->w->scratch;
  if (!is_get(x)) {
    not_allowed(x, "GET, HEAD");
    return;
  }
  b->len = 0;
  if (which == FROND__R_METRICS) {
    frond__metrics_render(x->srv, b);
    respond(x, 200, "text/plain; version=0.0.4", b->data, b->len, NULL);
  } else {
    frond__status_render(x->srv, b);
    respond(x, 200, "text/html; charset=utf-8", b->data, b->len,
            "Cache-Control: no-store\r\n");
  }
}

/* ------------------------------------------------------------- routing */

#define PREFIX(lit)                                                            \
  (plen >= sizeof(lit) - 1 && memcmp(path, lit, sizeof(lit) - 1) == 0)
#define EXACT(lit) (plen == sizeof(lit) - 1 && memcmp(path, lit, plen) == 0)

static void dispatch(ctx *x) {
  const char *path = x->req->target;
  size_t plen = x->req->path_len;
  if (PREFIX("/api/snowflake/get/")) {
    x->route = FROND__R_LEAF_SNOWFLAKE;
    if (plen == sizeof("/api/snowflake/get/") - 1 ||
        memchr(path + sizeof("/api/snowflake/get/") - 1, '/',
               plen - (sizeof("/api/snowflake/get/") - 1)) != NULL)
      error_with(x, 404, "NOT_FOUND", "no such path", NULL);
    else
      leaf_snowflake(x);
  } else if (PREFIX("/api/segment/get/")) {
    x->route = FROND__R_LEAF_SEGMENT;
    leaf_segment(x, sizeof("/api/segment/get/") - 1);
  } else if (PREFIX("/v1/")) {
    if (EXACT("/v1/snowflake")) {
      x->route = FROND__R_SNOWFLAKE;
      v1_snowflake(x);
    } else if (PREFIX("/v1/segment/")) {
      x->route = FROND__R_SEGMENT;
      v1_segment(x, sizeof("/v1/segment/") - 1);
    } else if (PREFIX("/v1/decode/")) {
      x->route = FROND__R_DECODE;
      v1_decode(x, sizeof("/v1/decode/") - 1);
    } else if (EXACT("/v1/layout")) {
      x->route = FROND__R_LAYOUT;
      v1_layout(x);
    } else if (EXACT("/v1/tags")) {
      x->route = FROND__R_TAGS;
      v1_tags(x, 0, 0);
    } else if (PREFIX("/v1/tags/")) {
      x->route = FROND__R_TAGS;
      v1_tags(x, sizeof("/v1/tags/") - 1, 1);
    } else {
      error_with(x, 404, "NOT_FOUND", "no such path", NULL);
    }
  } else if (EXACT("/decodeSnowflakeId")) {
    x->route = FROND__R_LEAF_DECODE;
    leaf_decode(x);
  } else if (EXACT("/metrics")) {
    x->route = FROND__R_METRICS;
    page(x, FROND__R_METRICS);
  } else if (EXACT("/livez") || EXACT("/healthz")) {
    x->route = FROND__R_LIVEZ;
    plain(x, 200, "ok\n");
  } else if (EXACT("/readyz")) {
    x->route = FROND__R_READYZ;
    readyz(x);
  } else if (EXACT("/")) {
    x->route = FROND__R_STATUS;
    page(x, FROND__R_STATUS);
  } else {
    error_with(x, 404, "NOT_FOUND", "no such path", NULL);
  }
}

static int http_on_data(frond__conn *c, const char *buf, size_t len) {
  frond__http_request req;
  ctx x;
  int n = frond__http_parse(buf, len, &req);
  memset(&x, 0, sizeof x);
  x.c = c;
  x.w = c->w;
  x.srv = c->w->srv;
  x.route = FROND__R_OTHER;
  x.t0 = uv_hrtime();
  if (n == FROND__HTTP_PARTIAL)
    return 0;
  if (n < 0) {
    static const char *codes[] = {"BAD_REQUEST", "URI_TOO_LONG",
                                  "HEADERS_TOO_LARGE", "NOT_IMPLEMENTED",
                                  "HTTP_VERSION_NOT_SUPPORTED"};
    int i = req.status == 414   ? 1
            : req.status == 431 ? 2
            : req.status == 501 ? 3
            : req.status == 505 ? 4
                                : 0;
    FROND__INC(x.w->m.bad_requests, 1);
    error_with(&x, req.status, codes[i], req.reason, NULL);
    return -1;
  }
  x.req = &req;
  x.keep_alive = req.keep_alive;
  if (req.body_len > x.srv->cfg.max_body) {
    x.keep_alive = 0;
    error_with(&x, 413, "BODY_TOO_LARGE", "request body too large", NULL);
    return -1;
  }
  if ((size_t)n + (size_t)req.body_len > len) {
    /* A client that waits for "100 Continue" before its body gets it
    ** once (proto_state remembers), so it does not stall a second. */
    const frond__http_header *e = frond__http_header_find(&req, "expect");
    if (e != NULL && c->proto_state == 0 && req.minor == 1 &&
        e->value_len == 12 && strncasecmp(e->value, "100-continue", 12) == 0) {
      frond__buf_append(frond__conn_out(c), "HTTP/1.1 100 Continue\r\n\r\n",
                        25);
      c->proto_state = 1;
    }
    return 0;
  }
  c->proto_state = 0;
  x.body = buf + n;
  x.body_len = (size_t)req.body_len;
  dispatch(&x);
  if (!x.keep_alive)
    return -1;
  return n + (int)req.body_len;
}

static void http_on_timeout(frond__conn *c) {
  ctx x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.w = c->w;
  x.srv = c->w->srv;
  x.route = FROND__R_OTHER;
  x.t0 = uv_hrtime();
  error_with(&x, 408, "REQUEST_TIMEOUT", "the request was not received in time",
             NULL);
}

const frond__proto frond__http_proto = {.name = "http",
                                        .on_data = http_on_data,
                                        .on_timeout = http_on_timeout,
                                        .id = FROND__PROTO_HTTP};
