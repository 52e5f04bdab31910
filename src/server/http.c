/* SPDX-License-Identifier: Apache-2.0 */
/*
** http.c -- the HTTP protocol: framing, routing, its configuration and
** metrics, and its frond__proto table.
**
** on_data parses one request head from the connection's buffer, waits for
** its body, answers it and returns the bytes consumed, so pipelined
** requests are answered in order. A request is routed by one table
** (routes[]: path, methods, the page it may come from, the token, the
** handler), whose rules are checked here before a handler runs; handlers
** hand what they serve to the request layer (req.c), which answers from
** memory at once or finishes off the loop while the connection holds its
** further input. Every
** answer carries Content-Length; a request the parser rejects gets its
** status and the connection is closed, since the byte stream can no longer
** be framed.
*/
#include "server/http.h"

#include "base/base.h"
#include "server/acl.h"

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
  else if (admin && !frond__acl_on(x->srv) && !x->c->l->ep->addr.loopback)
    /* A TLS listener with tls_ca may be beyond loopback without a
    ** credential: a client certificate lets a client in, not change tags,
    ** and its Host header says whatever it likes. */
    why = "without admin_token or clients_file, tag changes need a "
          "listener on loopback";
  else if (admin && !frond__acl_on(x->srv) &&
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

/* Methods, as a route lists them; the Allow header names them in this
** order. */
#define M_GET (1u << FROND__HTTP_GET)
#define M_HEAD (1u << FROND__HTTP_HEAD)
#define M_POST (1u << FROND__HTTP_POST)
#define M_PATCH (1u << FROND__HTTP_PATCH)
#define M_DELETE (1u << FROND__HTTP_DELETE)
#define M_READ (M_GET | M_HEAD)
#define M_ANY 0u /* no check: Leaf's paths and the probes take any */

/* Who may send a request from a web page (see "browsers" above). */
enum {
  SITE_ANY,   /* anyone: it reads, and changes nothing */
  SITE_IDS,   /* not another site's page: it uses up IDs */
  SITE_ADMIN, /* a change (not GET or HEAD): as SITE_IDS, and without
                 admin_token a loopback Host */
};

/*
** One route: a path, or a path with one parameter between its two parts
** (a segment, not empty, without '/', else 404; or the rest of the path,
** whatever it holds; the handler reads it as x->param);
** the methods it takes (405 with Allow otherwise); who may send it from a
** page (credentials are checked apart, below); the handler,
** its argument (x->arg), and its name in the metrics. The rules are checked
** in that order, so a handler sees only a request it may serve.
*/
typedef struct route {
  const char *pre;
  size_t pre_len;
  const char *suf; /* after the parameter; NULL: no parameter */
  size_t suf_len;
  int rest; /* the parameter is the rest of the path, any bytes */
  unsigned methods;
  int site;
  void (*fn)(frond__http_ctx *x);
  int arg;
  int id; /* FROND__R_* */
} route;

#define EXACT(path) path, sizeof(path) - 1, NULL, 0, 0
#define PARAM(pre, suf) pre, sizeof(pre) - 1, suf, sizeof(suf) - 1, 0
#define REST(pre) pre, sizeof(pre) - 1, "", 0, 1

/* Sorted by how often clients send them; a path with a parameter and a
** suffix before the same path without one. */
static const route routes[] = {
    {PARAM("/api/segment/get/", ""), M_ANY, SITE_IDS, frond__http_leaf_segment,
     0, FROND__R_LEAF_SEGMENT},
    {PARAM("/api/snowflake/get/", ""), M_ANY, SITE_IDS,
     frond__http_leaf_snowflake, 0, FROND__R_LEAF_SNOWFLAKE},
    {EXACT("/v1/snowflake"), M_READ, SITE_IDS, frond__http_v1_snowflake, 0,
     FROND__R_SNOWFLAKE},
    {PARAM("/v1/segment/", "/range"), M_READ, SITE_IDS,
     frond__http_v1_segment_range, 0, FROND__R_SEGMENT_RANGE},
    {PARAM("/v1/segment/", ""), M_READ, SITE_IDS, frond__http_v1_segment, 0,
     FROND__R_SEGMENT},
    {PARAM("/v1/format/", ""), M_READ, SITE_IDS, frond__http_v1_format, 0,
     FROND__R_FORMAT},
    {EXACT("/v1/uuid7"), M_READ, SITE_IDS, frond__http_v1_builtin,
     FROND__BUILTIN_UUID7, FROND__R_UUID7},
    {EXACT("/v1/uuid4"), M_READ, SITE_IDS, frond__http_v1_builtin,
     FROND__BUILTIN_UUID4, FROND__R_UUID4},
    {EXACT("/v1/ulid"), M_READ, SITE_IDS, frond__http_v1_builtin,
     FROND__BUILTIN_ULID, FROND__R_ULID},
    {EXACT("/v1/objectid"), M_READ, SITE_IDS, frond__http_v1_builtin,
     FROND__BUILTIN_OBJECTID, FROND__R_OBJECTID},
    {REST("/v1/decode/"), M_READ, SITE_ANY, frond__http_v1_decode, 0,
     FROND__R_DECODE},
    {EXACT("/v1/layout"), M_READ, SITE_ANY, frond__http_v1_layout, 0,
     FROND__R_LAYOUT},
    {EXACT("/v1/tags"), M_READ | M_POST, SITE_ADMIN, frond__http_v1_tags, 0,
     FROND__R_TAGS},
    {PARAM("/v1/tags/", "/advance"), M_POST, SITE_ADMIN, frond__http_v1_tags, 2,
     FROND__R_TAGS},
    {PARAM("/v1/tags/", ""), M_READ | M_PATCH | M_DELETE, SITE_ADMIN,
     frond__http_v1_tags, 1, FROND__R_TAGS},
    {EXACT("/decodeSnowflakeId"), M_ANY, SITE_ANY, frond__http_leaf_decode, 0,
     FROND__R_LEAF_DECODE},
    {EXACT("/metrics"), M_READ, SITE_ANY, frond__http_metrics, 0,
     FROND__R_METRICS},
    {EXACT("/livez"), M_ANY, SITE_ANY, frond__http_livez, 0, FROND__R_LIVEZ},
    {EXACT("/healthz"), M_ANY, SITE_ANY, frond__http_livez, 0, FROND__R_LIVEZ},
    {EXACT("/readyz"), M_ANY, SITE_ANY, frond__http_readyz, 0, FROND__R_READYZ},
    {EXACT("/"), M_READ, SITE_ANY, frond__http_status_page, 0, FROND__R_STATUS},
};

/*
** Credentials (acl.c), when any is configured: who the request comes from
** (Authorization: Bearer <name>:<secret> or <admin_token>, else the client
** certificate), 401 when nobody; then the right the route needs, 403 when
** not granted. Issuing and tag changes are checked again with their tag
** by the request layer. The probes and /metrics need nothing with
** open_reads. The scheme is case-insensitive and followed by one or more
** spaces (RFC 9110 11.1, 11.4). 1 when the request may go on, else its
** answer is written.
*/
static int authorized(frond__http_ctx *x, int id, int site, int change) {
  const frond__http_header *h;
  frond_error err = {0, ""};
  const char *v = NULL;
  size_t sp = 6, n = 0;
  unsigned right = site == SITE_ANY || !change ? FROND__ACL_READ
                   : site == SITE_ADMIN        ? FROND__ACL_ADMIN
                                               : 0;
  if (!frond__acl_on(x->srv) ||
      (x->srv->cfg.open_reads &&
       (id == FROND__R_LIVEZ || id == FROND__R_READYZ ||
        id == FROND__R_METRICS)))
    return 1;
  if (site == SITE_IDS || id == FROND__R_LAYOUT)
    right = 0; /* the request layer checks the tag; every client reads the
                  layout, as ID clients learn max_range and the store there */
  h = frond__http_header_find(x->req, "authorization");
  if (h != NULL) {
    while (sp < h->value_len && h->value[sp] == ' ')
      sp++;
    if (sp > 6 && frond__http_eq_nocase(h->value, 6, "bearer")) {
      v = h->value + sp;
      n = h->value_len - sp;
    } else {
      v = "";
    }
  }
  if (frond__acl_http(x->c, v, n, &err) != 0) {
    frond__http_error(x, 401, "UNAUTHORIZED", err.message,
                      h != NULL ? "WWW-Authenticate: Bearer "
                                  "error=\"invalid_token\"\r\n"
                                : "WWW-Authenticate: Bearer\r\n");
    return 0;
  }
  if (right != 0 && frond__acl_right(x->c, right, &err) != 0) {
    frond__http_error_code(x, err.code, &err);
    return 0;
  }
  return 1;
}

/* OPTIONS *: what the server as a whole allows (RFC 9110 9.3.7). */
#define ALLOW_ANY "GET, HEAD, POST, PATCH, DELETE, OPTIONS"

/* Does the path match route k? Then its parameter is set in x. A
** parameter may be empty at the end of a path (a 404 then, on the
** route), never before a suffix. */
static int matches(const route *k, frond__http_ctx *x) {
  const char *path = x->req->target;
  size_t plen = x->req->path_len;
  if (k->suf == NULL)
    return plen == k->pre_len && memcmp(path, k->pre, plen) == 0;
  if (plen < k->pre_len + k->suf_len + (k->suf_len > 0) ||
      memcmp(path, k->pre, k->pre_len) != 0 ||
      memcmp(path + plen - k->suf_len, k->suf, k->suf_len) != 0)
    return 0;
  x->param = path + k->pre_len;
  x->param_len = plen - k->pre_len - k->suf_len;
  return 1;
}

/* 405, naming the route's methods. */
static void not_allowed(frond__http_ctx *x, unsigned methods) {
  static const struct {
    unsigned m;
    const char *name;
  } names[] = {{M_GET, "GET"},
               {M_HEAD, "HEAD"},
               {M_POST, "POST"},
               {M_PATCH, "PATCH"},
               {M_DELETE, "DELETE"}};
  char allow[64] = "";
  size_t i, n = 0;
  for (i = 0; i < FROND__ARRAY_SIZE(names); i++)
    if (methods & names[i].m)
      n += (size_t)snprintf(allow + n, sizeof allow - n, "%s%s",
                            n > 0 ? ", " : "", names[i].name);
  frond__http_not_allowed(x, allow);
}

static void dispatch(frond__http_ctx *x) {
  const route *k = NULL;
  size_t i;
  unsigned m = 1u << x->req->method;
  int change = !(m & M_READ);
  if (x->req->asterisk) {
    frond__http_respond(x, 200, NULL, "", 0, "Allow: " ALLOW_ANY "\r\n");
    return;
  }
  for (i = 0; i < FROND__ARRAY_SIZE(routes) && k == NULL; i++)
    if (matches(&routes[i], x))
      k = &routes[i];
  if (k == NULL) {
    frond__http_not_found(x);
    return;
  }
  x->route = k->id;
  x->arg = k->arg;
  if (k->suf != NULL && !k->rest &&
      (x->param_len == 0 || memchr(x->param, '/', x->param_len) != NULL))
    frond__http_not_found(x);
  else if ((k->site == SITE_IDS || (k->site == SITE_ADMIN && change)) &&
           from_a_page(x, k->site == SITE_ADMIN))
    ; /* 403 answered */
  else if (k->methods != M_ANY && !(k->methods & m))
    not_allowed(x, k->methods);
  else if (!authorized(x, k->id, k->site, change))
    ; /* 401 or 403 answered */
  else
    k->fn(x);
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
  if (status != 413)
    FROND__INC(((frond__http_state *)x->c->l->state)->bad_requests, 1);
  x->keep_alive = 0;
  frond__http_error(x, status, frond__http_refusal(status), why, NULL);
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
  size_t used = 0; /* set by either branch; gcc cannot see chunked_body does */
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
  const char *key = ep->tls ? "tls_listen" : "listen";
  const char *text = ep->tls ? cfg->tls_listen : cfg->listen;
  int r = frond__config_addr(key, text, &ep->addr, err);
  if (r != 0)
    return r < 0 || ep->tls
               ? r
               : frond__fail(err, FROND_EINVAL, "listen cannot be off");
  /* A verified client certificate (tls_ca) authenticates as a token does. */
  if (!ep->addr.loopback && cfg->admin_token[0] == '\0' &&
      cfg->clients_file[0] == '\0' && !(ep->tls && cfg->tls_ca[0] != '\0'))
    return frond__fail(err, FROND_EINVAL,
                       "refusing to listen on %s beyond loopback without "
                       "admin_token (set FROND_ADMIN_TOKEN or --admin-token) "
                       "or clients_file%s",
                       text, ep->tls ? " or tls_ca" : "");
  ep->key = key;
  ep->text = text;
  ep->alpn = "http/1.1";
  ep->max_input = FROND__HTTP_MAX_HEAD + (size_t)cfg->max_body;
  return 0;
}

/* ---------------------------------------------------------------- metrics */

#define STATE_SUM(srv, field)                                                  \
  frond__metrics_state_sum(srv, &frond__http_proto,                            \
                           offsetof(frond__http_state, field))

static void http_metrics(frond__server *srv, frond__buf *b) {
  static const char *const names[FROND__R_COUNT] = {
#define NAME(id, name) name,
      FROND__HTTP_ROUTES(NAME)
#undef NAME
  };
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
      snprintf(status, sizeof status, "%d", frond__http_status_at(s));
      frond__buf_printf(b,
                        "frond_http_requests_total{route=\"%s\",status=\"%s\"}"
                        " %llu\n",
                        names[r], frond__http_status_at(s) ? status : "other",
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
