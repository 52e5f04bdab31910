/* SPDX-License-Identifier: Apache-2.0 */
/*
** http.c -- the HTTP protocol: framing, routing, its configuration and
** metrics, and its frond__proto table.
**
** on_data parses one request head from the connection's buffer, waits for
** its body, answers it and returns the bytes consumed, so pipelined
** requests are answered in order. Answers from memory are written at once
** (http_api.c); the admin calls that need the store finish off the loop
** (http_admin.c) while the connection holds its further input. Every
** answer carries Content-Length; a request the parser rejects gets its
** status and the connection is closed, since the byte stream can no longer
** be framed.
*/
#include "server/http.h"

#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------- browsers */

/*
** A web page can make the browser on the machine send requests to
** 127.0.0.1: a form or fetch() to another site's address (CSRF), or its
** own name resolved to 127.0.0.1 (DNS rebinding). Browsers say where a
** request comes from: Origin on every POST and CORS request, Sec-Fetch-Site
** on every request of current browsers. Requests that issue IDs or change
** tags are refused when they come from a page of another site, or from an
** Origin that is not the server's own (the Host asked for). Without
** admin_token, tag changes also need a loopback Host with the server's
** port: a name rebound to 127.0.0.1 arrives with its own name as Host.
** Programs (curl, clients, proxies) send none of these and pass.
*/

/* h[0..n) is localhost, 127.x.x.x or [::1], with the port (80 when none). */
static int loopback_host(const char *h, size_t n, int port) {
  const char *colon;
  size_t hl;
  int64_t p = 80, octet;
  if (n > 0 && h[0] == '[') {
    const char *rb = memchr(h, ']', n);
    if (rb == NULL)
      return 0;
    hl = (size_t)(rb + 1 - h);
    colon = hl < n ? rb + 1 : NULL;
    if (colon != NULL && *colon != ':')
      return 0;
  } else {
    colon = memchr(h, ':', n);
    hl = colon != NULL ? (size_t)(colon - h) : n;
  }
  if (colon != NULL &&
      frond__parse_i64(colon + 1, n - (size_t)(colon + 1 - h), &p) != 0)
    return 0;
  if (p != port)
    return 0;
  if (frond__http_eq_nocase(h, hl, "localhost") ||
      frond__http_eq_nocase(h, hl, "[::1]"))
    return 1;
  /* 127.0.0.0/8 as a dotted quad */
  if (hl < 8 || memcmp(h, "127.", 4) != 0)
    return 0;
  {
    size_t i = 4, dots = 1;
    while (i < hl) {
      size_t s = i;
      while (i < hl && h[i] >= '0' && h[i] <= '9')
        i++;
      if (i == s || i - s > 3 || frond__parse_i64(h + s, i - s, &octet) != 0 ||
          octet > 255)
        return 0;
      if (i < hl) {
        if (h[i] != '.')
          return 0;
        dots++;
        i++;
      }
    }
    return dots == 3 && h[hl - 1] != '.';
  }
}

/* Is the Origin this server's own: http:// or https:// and the Host? */
static int origin_is_host(const frond__http_request *r) {
  const char *o = r->origin->value;
  size_t n = r->origin->value_len, skip;
  if (n > 7 && frond__http_eq_nocase(o, 7, "http://"))
    skip = 7;
  else if (n > 8 && frond__http_eq_nocase(o, 8, "https://"))
    skip = 8;
  else
    return 0; /* "null" (a sandboxed or file: page), or garbage */
  return r->host != NULL && n - skip == r->host_len &&
         strncasecmp(o + skip, r->host, r->host_len) == 0;
}

/* 1 when the request is refused (403 answered). admin: a tag change. */
static int from_a_page(frond__http_ctx *x, int admin) {
  const frond__http_request *r = x->req;
  const frond__http_header *fs = r->fetch_site;
  const char *why = NULL;
  if (fs != NULL &&
      (frond__http_eq_nocase(fs->value, fs->value_len, "cross-site") ||
       frond__http_eq_nocase(fs->value, fs->value_len, "same-site")))
    why = "refused: a request a page of another site made the browser send "
          "(Sec-Fetch-Site)";
  else if (r->origin != NULL && !origin_is_host(r))
    why = "refused: the Origin is not this server's";
  else if (admin && x->srv->cfg.admin_token[0] == '\0' &&
           (r->host == NULL ||
            !loopback_host(r->host, r->host_len, x->c->l->ep->addr.port)))
    why = "without admin_token, tag changes need Host: localhost, 127.0.0.1 "
          "or [::1] with the server's port";
  if (why == NULL)
    return 0;
  frond__http_error(x, 403, "FORBIDDEN", why, NULL);
  return 1;
}

/* ------------------------------------------------------------- routing */

#define PREFIX(lit)                                                            \
  (plen >= sizeof(lit) - 1 && memcmp(path, lit, sizeof(lit) - 1) == 0)
#define EXACT(lit) (plen == sizeof(lit) - 1 && memcmp(path, lit, plen) == 0)
/* PREFIX(pre) && SUFFIX(suf): a path pre{param}suf, the parameter not
** empty. */
#define SUFFIX(pre, suf)                                                       \
  (plen > sizeof(pre) - 1 + sizeof(suf) - 1 &&                                 \
   memcmp(path + plen - (sizeof(suf) - 1), suf, sizeof(suf) - 1) == 0)

/* OPTIONS *: what the server as a whole allows (RFC 9110 9.3.7). */
#define ALLOW_ANY "GET, HEAD, POST, PATCH, DELETE, OPTIONS"

static void dispatch(frond__http_ctx *x) {
  const char *path = x->req->target;
  size_t plen = x->req->path_len;
  if (x->req->asterisk) {
    frond__http_respond(x, 200, NULL, "", 0, "Allow: " ALLOW_ANY "\r\n");
  } else if (PREFIX("/api/snowflake/get/")) {
    x->route = FROND__R_LEAF_SNOWFLAKE;
    if (plen == sizeof("/api/snowflake/get/") - 1 ||
        memchr(path + sizeof("/api/snowflake/get/") - 1, '/',
               plen - (sizeof("/api/snowflake/get/") - 1)) != NULL)
      frond__http_error(x, 404, "NOT_FOUND", "no such path", NULL);
    else if (!from_a_page(x, 0))
      frond__http_leaf_snowflake(x);
  } else if (PREFIX("/api/segment/get/")) {
    x->route = FROND__R_LEAF_SEGMENT;
    if (!from_a_page(x, 0))
      frond__http_leaf_segment(x, sizeof("/api/segment/get/") - 1);
  } else if (PREFIX("/v1/")) {
    if (EXACT("/v1/snowflake")) {
      x->route = FROND__R_SNOWFLAKE;
      if (!from_a_page(x, 0))
        frond__http_v1_snowflake(x);
    } else if (PREFIX("/v1/segment/") && SUFFIX("/v1/segment/", "/range")) {
      x->route = FROND__R_SEGMENT_RANGE;
      if (!from_a_page(x, 0))
        frond__http_v1_segment_range(x, sizeof("/v1/segment/") - 1,
                                     plen - (sizeof("/range") - 1));
    } else if (PREFIX("/v1/segment/")) {
      x->route = FROND__R_SEGMENT;
      if (!from_a_page(x, 0))
        frond__http_v1_segment(x, sizeof("/v1/segment/") - 1);
    } else if (PREFIX("/v1/format/")) {
      x->route = FROND__R_FORMAT;
      if (!from_a_page(x, 0))
        frond__http_v1_format(x, sizeof("/v1/format/") - 1);
    } else if (EXACT("/v1/uuid7")) {
      x->route = FROND__R_UUID7;
      if (!from_a_page(x, 0))
        frond__http_v1_builtin(x, FROND__BUILTIN_UUID7);
    } else if (EXACT("/v1/uuid4")) {
      x->route = FROND__R_UUID4;
      if (!from_a_page(x, 0))
        frond__http_v1_builtin(x, FROND__BUILTIN_UUID4);
    } else if (EXACT("/v1/ulid")) {
      x->route = FROND__R_ULID;
      if (!from_a_page(x, 0))
        frond__http_v1_builtin(x, FROND__BUILTIN_ULID);
    } else if (EXACT("/v1/objectid")) {
      x->route = FROND__R_OBJECTID;
      if (!from_a_page(x, 0))
        frond__http_v1_builtin(x, FROND__BUILTIN_OBJECTID);
    } else if (PREFIX("/v1/decode/")) {
      x->route = FROND__R_DECODE;
      frond__http_v1_decode_any(x, sizeof("/v1/decode/") - 1);
    } else if (EXACT("/v1/layout")) {
      x->route = FROND__R_LAYOUT;
      frond__http_v1_layout(x);
    } else if (EXACT("/v1/tags")) {
      x->route = FROND__R_TAGS;
      if (frond__http_is_get(x) || !from_a_page(x, 1))
        frond__http_v1_tags(x, 0, 0);
    } else if (PREFIX("/v1/tags/") && SUFFIX("/v1/tags/", "/advance")) {
      x->route = FROND__R_TAGS;
      if (!from_a_page(x, 1))
        frond__http_v1_tag_advance(x, sizeof("/v1/tags/") - 1,
                                   plen - (sizeof("/advance") - 1));
    } else if (PREFIX("/v1/tags/")) {
      x->route = FROND__R_TAGS;
      if (frond__http_is_get(x) || !from_a_page(x, 1))
        frond__http_v1_tags(x, sizeof("/v1/tags/") - 1, 1);
    } else {
      frond__http_error(x, 404, "NOT_FOUND", "no such path", NULL);
    }
  } else if (EXACT("/decodeSnowflakeId")) {
    x->route = FROND__R_LEAF_DECODE;
    frond__http_leaf_decode(x);
  } else if (EXACT("/metrics")) {
    x->route = FROND__R_METRICS;
    frond__http_page(x, FROND__R_METRICS);
  } else if (EXACT("/livez") || EXACT("/healthz")) {
    x->route = FROND__R_LIVEZ;
    frond__http_plain(x, 200, "ok\n");
  } else if (EXACT("/readyz")) {
    x->route = FROND__R_READYZ;
    frond__http_readyz(x);
  } else if (EXACT("/")) {
    x->route = FROND__R_STATUS;
    frond__http_page(x, FROND__R_STATUS);
  } else {
    frond__http_error(x, 404, "NOT_FOUND", "no such path", NULL);
  }
}

static void ctx_init(frond__http_ctx *x, frond__conn *c) {
  memset(x, 0, sizeof *x);
  x->c = c;
  x->w = c->w;
  x->srv = c->w->srv;
  x->route = FROND__R_OTHER;
  x->minor = 1;
  x->t0 = c->w->srv->cfg.metrics_histograms ? frond__clock_ns() : 0;
}

/* A connection's state beyond the request in its buffer (c->pdata), made
** for its first chunked request: the scan of the body as it arrives, and
** the body decoded once it is whole. */
typedef struct http_conn {
  frond__http_chunks ch;
  frond__buf body;
} http_conn;

/* An answer to a request the parser or the framing refused: its status,
** then the connection is closed. */
static int refuse(frond__http_ctx *x, int status, const char *why) {
  static const char *codes[] = {
      "BAD_REQUEST",     "URI_TOO_LONG",   "HEADERS_TOO_LARGE",
      "NOT_IMPLEMENTED", "BODY_TOO_LARGE", "HTTP_VERSION_NOT_SUPPORTED"};
  int i = status == 414   ? 1
          : status == 431 ? 2
          : status == 501 ? 3
          : status == 413 ? 4
          : status == 505 ? 5
                          : 0;
  if (status != 413)
    FROND__INC(((frond__http_state *)x->c->l->state)->bad_requests, 1);
  x->keep_alive = 0;
  frond__http_error(x, status, codes[i], why, NULL);
  return -1;
}

/* While a body is awaited: a client that waits for "100 Continue" before
** sending it gets it once (proto_state remembers), so it does not stall a
** second. */
static void expect_continue(frond__conn *c, const frond__http_request *req) {
  const frond__http_header *e = frond__http_header_find(req, "expect");
  if (e != NULL && c->proto_state == 0 && req->minor == 1 &&
      e->value_len == 12 && strncasecmp(e->value, "100-continue", 12) == 0) {
    frond__buf_append(frond__conn_out(c), "HTTP/1.1 100 Continue\r\n\r\n", 25);
    c->proto_state = 1;
  }
}

/* The chunked body after the head (n bytes): 1 with x->body set and
** *used the bytes of the whole request, 0 while more is to come, -1 after
** an answer that closes the connection. */
static int chunked_body(frond__http_ctx *x, const char *buf, size_t len, int n,
                        size_t *used) {
  frond__conn *c = x->c;
  http_conn *hc = c->pdata;
  const char *why = NULL;
  int status = 0, r;
  if (hc == NULL) {
    if ((hc = calloc(1, sizeof *hc)) == NULL) {
      x->keep_alive = 0;
      frond__http_error_code(x, FROND_ENOMEM, NULL);
      return -1;
    }
    c->pdata = hc;
  }
  r = frond__http_chunked(buf + n, len - (size_t)n,
                          (size_t)x->srv->cfg.max_body, &hc->ch, &status, &why);
  if (r == FROND__HTTP_PARTIAL) {
    if (len >= c->l->ep->max_input)
      return refuse(x, 413, "request body too large with its chunk framing");
    expect_continue(c, x->req);
    return 0;
  }
  if (r < 0) {
    memset(&hc->ch, 0, sizeof hc->ch);
    return refuse(x, status, why);
  }
  if (frond__buf_reserve(&hc->body, hc->ch.data + 1) != 0) {
    memset(&hc->ch, 0, sizeof hc->ch);
    x->keep_alive = 0;
    frond__http_error_code(x, FROND_ENOMEM, NULL);
    return -1;
  }
  frond__http_chunked_copy(buf + n, (size_t)r, hc->body.data);
  x->body = hc->body.data;
  x->body_len = hc->ch.data;
  *used = (size_t)n + (size_t)r;
  memset(&hc->ch, 0, sizeof hc->ch);
  return 1;
}

static int http_on_data(frond__conn *c, const char *buf, size_t len) {
  frond__http_request req;
  frond__http_ctx x;
  size_t used;
  int n = frond__http_parse(buf, len, &req);
  if (n == FROND__HTTP_PARTIAL)
    return 0;
  ctx_init(&x, c);
  if (n < 0)
    return refuse(&x, req.status, req.reason);
  x.req = &req;
  x.keep_alive = req.keep_alive;
  x.minor = req.minor;
  x.head = req.method == FROND__HTTP_HEAD;
  if (req.chunked) {
    int r = chunked_body(&x, buf, len, n, &used);
    if (r <= 0)
      return r;
  } else {
    if (req.body_len > x.srv->cfg.max_body)
      return refuse(&x, 413, "request body too large");
    if ((size_t)n + (size_t)req.body_len > len) {
      expect_continue(c, &req);
      return 0;
    }
    x.body = buf + n;
    x.body_len = (size_t)req.body_len;
    used = (size_t)n + (size_t)req.body_len;
  }
  c->proto_state = 0;
  dispatch(&x);
  /* A held request answers later, and closes then if it must. */
  if (!x.keep_alive && !c->held)
    return -1;
  return (int)used;
}

static void http_on_close(frond__conn *c) {
  http_conn *hc = c->pdata;
  if (hc != NULL) {
    frond__buf_free(&hc->body);
    free(hc);
    c->pdata = NULL;
  }
}

static void http_on_timeout(frond__conn *c) {
  frond__http_ctx x;
  ctx_init(&x, c);
  frond__http_error(&x, 408, "REQUEST_TIMEOUT",
                    "the request was not received in time", NULL);
}

/* --------------------------------------------------------- configuration */

static int http_configure(frond__server *srv, frond__endpoint *ep,
                          frond_error *err) {
  const frond__config *cfg = &srv->cfg;
  int r = frond__config_addr("listen", cfg->listen, &ep->addr, err);
  if (r != 0)
    return r < 0 ? r : frond__fail(err, FROND_EINVAL, "listen cannot be off");
  if (!ep->addr.loopback && cfg->admin_token[0] == '\0')
    return frond__fail(err, FROND_EINVAL,
                       "refusing to listen on %s beyond loopback without "
                       "admin_token (set FROND_ADMIN_TOKEN or --admin-token)",
                       cfg->listen);
  ep->key = "listen";
  ep->text = cfg->listen;
  ep->max_input = FROND__HTTP_MAX_HEAD + (size_t)cfg->max_body;
  return 0;
}

/* ---------------------------------------------------------------- metrics */

#define STATE_SUM(srv, field)                                                  \
  frond__metrics_state_sum(srv, &frond__http_proto,                            \
                           offsetof(frond__http_state, field))

static void http_metrics(frond__server *srv, frond__buf *b) {
  const char *const *names = frond__http_route_names;
  int r, s;
  frond__buf_printf(b, "# HELP frond_http_requests_total HTTP requests by "
                       "route and status.\n# TYPE frond_http_requests_total "
                       "counter\n");
  for (r = 0; r < FROND__R_COUNT; r++)
    for (s = 0; s < FROND__NSTATUS; s++) {
      uint64_t v = STATE_SUM(srv, requests[r][s]);
      char status[16];
      if (v == 0)
        continue;
      snprintf(status, sizeof status, "%d", frond__http_statuses[s]);
      frond__buf_printf(b,
                        "frond_http_requests_total{route=\"%s\",status=\"%s\"}"
                        " %llu\n",
                        names[r], frond__http_statuses[s] ? status : "other",
                        (unsigned long long)v);
    }
  /* With metrics_histograms off the family is left out, not left empty. */
  if (srv->cfg.metrics_histograms) {
    frond__metrics_hist_head(b, "frond_http_request_duration_seconds",
                             "Time from a complete request to its answer "
                             "being queued.");
    for (r = 0; r < FROND__R_COUNT; r++)
      frond__metrics_hist(
          b, srv, &frond__http_proto, offsetof(frond__http_state, duration[r]),
          "frond_http_request_duration_seconds", "route", names[r]);
  }
  frond__metrics_counter(b, "frond_http_bad_requests_total",
                         "Requests the parser rejected.",
                         STATE_SUM(srv, bad_requests));
}

const frond__proto frond__http_proto = {
    .name = "http",
    .configure = http_configure,
    .state_size = sizeof(frond__http_state),
    .metrics = http_metrics,
    .on_data = http_on_data,
    .on_timeout = http_on_timeout,
    .on_close = http_on_close,
    .busy = frond__http_busy,
};
