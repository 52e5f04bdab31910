/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_out.c -- HTTP answers: the table of statuses, the status line and
** headers, error bodies (a library code's status is the request layer's:
** frond__req_status), lists of IDs, decoded fields, and the counters every
** answer adds to.
**
** Answers are built with memcpy into the connection's output, not printf:
** this is the hot path of every request.
*/
#include "server/http.h"

#include "base/base.h"
#include "server/json.h"
#include "server/quota.h"

#include <stdio.h>
#include <string.h>

/*
** The statuses Frond answers: the number, its reason phrase, and for those
** the framing refuses a request with, the code its error body names. A
** row is a slot of the metrics, in this order; FROND__NSTATUS counts one
** more, for any other.
*/
#define STATUSES(XX)                                                           \
  XX(200, "OK", NULL)                                                          \
  XX(201, "Created", NULL)                                                     \
  XX(204, "No Content", NULL)                                                  \
  XX(400, "Bad Request", "BAD_REQUEST")                                        \
  XX(401, "Unauthorized", NULL)                                                \
  XX(404, "Not Found", NULL)                                                   \
  XX(405, "Method Not Allowed", NULL)                                          \
  XX(408, "Request Timeout", NULL)                                             \
  XX(409, "Conflict", NULL)                                                    \
  XX(413, "Content Too Large", "BODY_TOO_LARGE")                               \
  XX(414, "URI Too Long", "URI_TOO_LONG")                                      \
  XX(431, "Request Header Fields Too Large", "HEADERS_TOO_LARGE")              \
  XX(500, "Internal Server Error", NULL)                                       \
  XX(501, "Not Implemented", "NOT_IMPLEMENTED")                                \
  XX(503, "Service Unavailable", NULL)                                         \
  XX(505, "HTTP Version Not Supported", "HTTP_VERSION_NOT_SUPPORTED")          \
  XX(403, "Forbidden", NULL)                                                   \
  XX(415, "Unsupported Media Type", NULL)                                      \
  XX(429, "Too Many Requests", NULL)

enum {
#define XX(status, reason, code) SLOT_##status,
  STATUSES(XX)
#undef XX
      SLOT_OTHER
};
_Static_assert(SLOT_OTHER + 1 == FROND__NSTATUS, "FROND__NSTATUS");

static const struct {
  int status;
  const char *reason, *code;
} statuses[] = {
#define XX(status, reason, code) {status, reason, code},
    STATUSES(XX)
#undef XX
        {0, "Unknown", NULL}};

static int slot(int status) {
  switch (status) {
#define XX(status, reason, code)                                               \
  case status:                                                                 \
    return SLOT_##status;
    STATUSES(XX)
#undef XX
  default:
    return SLOT_OTHER;
  }
}

int frond__http_status_at(int i) {
  return statuses[i].status;
}

const char *frond__http_refusal(int status) {
  const char *code = statuses[slot(status)].code;
  return code != NULL ? code : "BAD_REQUEST";
}

static void record(frond__http_ctx *x, frond__http_state *st, int status) {
  FROND__INC(st->requests[x->route][slot(status)], 1);
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

/* The status line and headers of a response whose body is len bytes, with
** room reserved for the body after them; the buffer to put the body in,
** or NULL when none is to follow (a HEAD request, or no memory: the
** connection then closes). */
static frond__buf *respond_head(frond__http_ctx *x, int status,
                                const char *ctype, size_t len,
                                const char *extra) {
  frond__buf *out = frond__conn_out(x->c);
  frond__http_state *st = x->c->l->state;
  const char *reason = statuses[slot(status)].reason;
  size_t elen = extra ? strlen(extra) : 0;
  x->status = status;
  if (frond__conn_draining(x->c))
    x->keep_alive = 0;
  if (status == 204) /* no content, and no header that speaks of one */
    ctype = NULL;
  if (frond__buf_reserve(out, 250 + (ctype ? strlen(ctype) : 0) + elen + len) !=
      0) {
    x->keep_alive = 0;
    return NULL;
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
  record(x, st, status);
  return x->head ? NULL : out;
}

void frond__http_respond(frond__http_ctx *x, int status, const char *ctype,
                         const char *body, size_t len, const char *extra) {
  frond__buf *out = respond_head(x, status, ctype, len, extra);
  if (out != NULL)
    put(out, body, len);
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
  char extra[48];
  frond__http_error(x, frond__req_status(code), frond_err_name(code),
                    frond__req_message(code, err),
                    frond__http_retry_after(code, extra, sizeof extra));
}

const char *frond__http_retry_after(int code, char *buf, size_t cap) {
  uint64_t s = frond__quota_retry_after();
  if (code != FROND_EQUOTA_EXCEEDED || s == UINT64_MAX)
    return NULL; /* a count above the burst: no wait serves it */
  snprintf(buf, cap, "Retry-After: %llu\r\n", (unsigned long long)s);
  return buf;
}

void frond__http_not_found(frond__http_ctx *x) {
  frond__http_error(x, 404, "NOT_FOUND", "no such path", NULL);
}

void frond__http_not_allowed(frond__http_ctx *x, const char *allow) {
  char extra[64];
  snprintf(extra, sizeof extra, "Allow: %s\r\n", allow);
  frond__http_error(x, 405, "METHOD_NOT_ALLOWED", "method not allowed here",
                    extra);
}

void frond__http_ids(frond__http_ctx *x, const int64_t *ids, size_t n) {
  frond__buf *b = &x->w->scratch;
  int text = x->text;
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
                         size_t stride, int fixed) {
  frond__buf *b = &x->w->scratch;
  int text = x->text;
  size_t i;
  if (text && fixed) { /* one copy, no strlen: a 36-byte UUID is 37 */
    if ((b = respond_head(x, 200, "text/plain", n * stride, NULL)) != NULL) {
      char *body = b->data + b->len;
      memcpy(body, s, n * stride);
      for (i = 1; i <= n; i++)
        body[i * stride - 1] = '\n';
      b->len += n * stride;
    }
    return;
  }
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

void frond__http_fields(frond__http_ctx *x, const frond__field *f, size_t n) {
  frond__buf *b = &x->w->scratch;
  size_t i;
  b->len = 0;
  for (i = 0; i < n; i++) {
    frond__buf_printf(b, "%s\"%s\":", i == 0 ? "{" : ",", f[i].name);
    if (f[i].is_num) {
      frond__buf_printf(b, "%lld", (long long)f[i].num);
    } else {
      frond__buf_append(b, "\"", 1);
      frond__json_append(b, f[i].str, strlen(f[i].str));
      frond__buf_append(b, "\"", 1);
    }
  }
  if (frond__buf_append(b, "}\n", 2) != 0) {
    frond__http_error(x, 500, "NOMEM", "out of memory", NULL);
    return;
  }
  frond__http_respond(x, 200, "application/json", b->data, b->len, NULL);
}
