/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_out.c -- HTTP answers: the status line and headers, error bodies,
** lists of IDs, and the counters every answer adds to.
**
** Answers are built with memcpy into the connection's output, not printf:
** this is the hot path of every request.
*/
#include "server/http.h"

#include "base/base.h"
#include "server/json.h"

#include <stdio.h>
#include <string.h>

const char *const frond__http_route_names[FROND__R_COUNT] = {
    "leaf_segment", "leaf_snowflake", "leaf_decode",   "snowflake", "segment",
    "decode",       "layout",         "tags",          "metrics",   "livez",
    "readyz",       "status_page",    "segment_range", "format",    "uuid7",
    "uuid4",        "ulid",           "objectid",      "other"};

const int frond__http_statuses[FROND__NSTATUS] = {
    200, 201, 204, 400, 401, 404, 405, 408, 409, 413,
    414, 431, 500, 501, 503, 505, 403, 415, 0};

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
  case 415:
    return "Unsupported Media Type";
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

static int status_index(int status) {
  int i;
  for (i = 0; i < FROND__NSTATUS - 1; i++)
    if (frond__http_statuses[i] == status)
      return i;
  return FROND__NSTATUS - 1;
}

static void record(frond__http_ctx *x, frond__http_state *st, int status) {
  FROND__INC(st->requests[x->route][status_index(status)], 1);
  if (x->t0 != 0)
    frond__hist_add(&st->duration[x->route], frond__clock_ns() - x->t0);
}

/* The Date header every answer carries (RFC 9110 6.6.1), formatted once a
** second rather than per answer. */
static void date(frond__http_state *st) {
  time_t t = time(NULL);
  struct tm tm;
  if (t == st->date_t && st->date_len > 0)
    return;
  gmtime_r(&t, &tm);
  st->date_t = t;
  st->date_len = strftime(st->date, sizeof st->date,
                          "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
}

static void put(frond__buf *b, const char *s, size_t n) {
  memcpy(b->data + b->len, s, n);
  b->len += n;
}
#define PUT_LIT(b, lit) put(b, lit, sizeof(lit) - 1)

void frond__http_respond(frond__http_ctx *x, int status, const char *ctype,
                         const char *body, size_t len, const char *extra) {
  frond__buf *out = frond__conn_out(x->c);
  frond__http_state *st = x->c->l->state;
  const char *reason = reason_phrase(status);
  size_t elen = extra ? strlen(extra) : 0;
  x->status = status;
  if (frond__conn_draining(x->c))
    x->keep_alive = 0;
  if (status == 204) /* no content, and no header that speaks of one */
    ctype = NULL;
  if (frond__buf_reserve(out, 250 + (ctype ? strlen(ctype) : 0) + elen + len) !=
      0) {
    x->keep_alive = 0;
    return;
  }
  date(st);
  if (status == 200) {
    PUT_LIT(out, "HTTP/1.1 200 OK\r\n");
  } else {
    PUT_LIT(out, "HTTP/1.1 ");
    frond__buf_put_u64(out, (uint64_t)status);
    PUT_LIT(out, " ");
    put(out, reason, strlen(reason));
    PUT_LIT(out, "\r\n");
  }
  if (ctype != NULL) {
    PUT_LIT(out, "Content-Type: ");
    put(out, ctype, strlen(ctype));
    PUT_LIT(out, "\r\n");
  }
  put(out, st->date, st->date_len);
  if (status != 204) {
    PUT_LIT(out, "Content-Length: ");
    frond__buf_put_u64(out, len);
    PUT_LIT(out, "\r\n");
  }
  if (!x->keep_alive)
    PUT_LIT(out, "Connection: close\r\n");
  else if (x->minor == 0)
    PUT_LIT(out, "Connection: keep-alive\r\n");
  if (elen > 0)
    put(out, extra, elen);
  PUT_LIT(out, "\r\n");
  if (!x->head)
    put(out, body, len);
  record(x, st, status);
}

static int status_of(int code) {
  switch (code) {
  case FROND_EINVAL:
  case FROND_ECOUNT_INVALID:
  case FROND_EID_INVALID:
  case FROND_ETAG_INVALID:
  case FROND_ELAYOUT_INVALID:
  case FROND_EFORMAT_INVALID:
  case FROND_EKEY_INVALID:
    return 400;
  case FROND_ETAG_NOT_FOUND:
    return 404;
  case FROND_ETAG_EXISTS:
  case FROND_ETAG_FLOOR:
    return 409;
  case FROND_ESEGMENT_UNAVAILABLE:
  case FROND_ECLOCK_BEHIND:
  case FROND_ESTORE:
  case FROND_ENODE_ID_LOST:
  case FROND_ECOORD:
  case FROND_ECLOSED:
  case FROND_ELAYOUT_MISMATCH:
  case FROND_ESEQUENCE_EXHAUSTED:
  case FROND_ESTORE_MEMBER_STALE:
    return 503;
  default:
    return 500;
  }
}

void frond__http_error(frond__http_ctx *x, int status, const char *code,
                       const char *msg, const char *extra) {
  char esc[1024], body[1200];
  int n;
  frond__json_escape(msg, strlen(msg), esc, sizeof esc);
  n = snprintf(body, sizeof body,
               "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n", code, esc);
  frond__http_respond(x, status, "application/json", body, (size_t)n, extra);
}

void frond__http_error_code(frond__http_ctx *x, int code,
                            const frond_error *err) {
  const char *msg = err && err->code ? err->message : frond_strerror(code);
  frond__http_error(x, status_of(code), frond_err_name(code), msg, NULL);
}

void frond__http_not_allowed(frond__http_ctx *x, const char *allow) {
  char extra[64];
  snprintf(extra, sizeof extra, "Allow: %s\r\n", allow);
  frond__http_error(x, 405, "METHOD_NOT_ALLOWED", "method not allowed here",
                    extra);
}

void frond__http_ids(frond__http_ctx *x, const int64_t *ids, size_t n,
                     int text) {
  frond__buf *b = &x->w->scratch;
  size_t i;
  b->len = 0;
  if (frond__buf_reserve(b, n * (FROND__DEC_MAX + 3) + 16) != 0) {
    frond__http_error(x, 500, "NOMEM", "out of memory", NULL);
    return;
  }
  if (!text)
    put(b, "{\"ids\":[", 8);
  for (i = 0; i < n; i++) {
    if (text) {
      frond__buf_put_u64(b, (uint64_t)ids[i]);
      b->data[b->len++] = '\n';
    } else {
      if (i > 0)
        b->data[b->len++] = ',';
      b->data[b->len++] = '"';
      frond__buf_put_u64(b, (uint64_t)ids[i]);
      b->data[b->len++] = '"';
    }
  }
  if (!text)
    put(b, "]}\n", 3);
  frond__http_respond(x, 200, text ? "text/plain" : "application/json", b->data,
                      b->len, NULL);
}

void frond__http_busy(frond__conn *c) {
  static const char body[] = "{\"error\":{\"code\":\"TOO_MANY_CONNECTIONS\","
                             "\"message\":\"connection limit reached, retry "
                             "later\"}}\n";
  frond__http_state *st = c->l->state;
  date(st);
  frond__buf_printf(frond__conn_out(c),
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                    "application/json\r\n%.*sContent-Length: %zu\r\n"
                    "Connection: close\r\n\r\n%s",
                    (int)st->date_len, st->date, sizeof body - 1, body);
}

void frond__http_strings(frond__http_ctx *x, const char *s, size_t n,
                         size_t stride, int text) {
  frond__buf *b = &x->w->scratch;
  size_t i;
  b->len = 0;
  if (frond__buf_reserve(b, n * (stride + 3) + 16) != 0) {
    frond__http_error(x, 500, "NOMEM", "out of memory", NULL);
    return;
  }
  if (!text)
    put(b, "{\"ids\":[", 8);
  for (i = 0; i < n; i++, s += stride) {
    size_t len = strlen(s);
    if (text) {
      put(b, s, len);
      b->data[b->len++] = '\n';
    } else {
      if (i > 0)
        b->data[b->len++] = ',';
      b->data[b->len++] = '"';
      put(b, s, len);
      b->data[b->len++] = '"';
    }
  }
  if (!text)
    put(b, "]}\n", 3);
  frond__http_respond(x, 200, text ? "text/plain" : "application/json", b->data,
                      b->len, NULL);
}

void frond__http_ctx_keep(frond__http_ctx *dst, const frond__http_ctx *x) {
  *dst = *x;
  dst->req = NULL;
  dst->body = NULL;
  dst->body_len = 0;
}
