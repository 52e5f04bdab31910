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
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------- routing */

#define PREFIX(lit)                                                            \
  (plen >= sizeof(lit) - 1 && memcmp(path, lit, sizeof(lit) - 1) == 0)
#define EXACT(lit) (plen == sizeof(lit) - 1 && memcmp(path, lit, plen) == 0)
/* PREFIX(pre) && SUFFIX(suf): a path pre{param}suf, the parameter not
** empty. */
#define SUFFIX(pre, suf)                                                       \
  (plen > sizeof(pre) - 1 + sizeof(suf) - 1 &&                                 \
   memcmp(path + plen - (sizeof(suf) - 1), suf, sizeof(suf) - 1) == 0)

static void dispatch(frond__http_ctx *x) {
  const char *path = x->req->target;
  size_t plen = x->req->path_len;
  if (PREFIX("/api/snowflake/get/")) {
    x->route = FROND__R_LEAF_SNOWFLAKE;
    if (plen == sizeof("/api/snowflake/get/") - 1 ||
        memchr(path + sizeof("/api/snowflake/get/") - 1, '/',
               plen - (sizeof("/api/snowflake/get/") - 1)) != NULL)
      frond__http_error(x, 404, "NOT_FOUND", "no such path", NULL);
    else
      frond__http_leaf_snowflake(x);
  } else if (PREFIX("/api/segment/get/")) {
    x->route = FROND__R_LEAF_SEGMENT;
    frond__http_leaf_segment(x, sizeof("/api/segment/get/") - 1);
  } else if (PREFIX("/v1/")) {
    if (EXACT("/v1/snowflake")) {
      x->route = FROND__R_SNOWFLAKE;
      frond__http_v1_snowflake(x);
    } else if (PREFIX("/v1/segment/") && SUFFIX("/v1/segment/", "/range")) {
      x->route = FROND__R_SEGMENT_RANGE;
      frond__http_v1_segment_range(x, sizeof("/v1/segment/") - 1,
                                   plen - (sizeof("/range") - 1));
    } else if (PREFIX("/v1/segment/")) {
      x->route = FROND__R_SEGMENT;
      frond__http_v1_segment(x, sizeof("/v1/segment/") - 1);
    } else if (PREFIX("/v1/format/")) {
      x->route = FROND__R_FORMAT;
      frond__http_v1_format(x, sizeof("/v1/format/") - 1);
    } else if (EXACT("/v1/uuid7")) {
      x->route = FROND__R_UUID7;
      frond__http_v1_builtin(x, FROND__BUILTIN_UUID7);
    } else if (EXACT("/v1/uuid4")) {
      x->route = FROND__R_UUID4;
      frond__http_v1_builtin(x, FROND__BUILTIN_UUID4);
    } else if (EXACT("/v1/ulid")) {
      x->route = FROND__R_ULID;
      frond__http_v1_builtin(x, FROND__BUILTIN_ULID);
    } else if (EXACT("/v1/objectid")) {
      x->route = FROND__R_OBJECTID;
      frond__http_v1_builtin(x, FROND__BUILTIN_OBJECTID);
    } else if (PREFIX("/v1/decode/")) {
      x->route = FROND__R_DECODE;
      frond__http_v1_decode_any(x, sizeof("/v1/decode/") - 1);
    } else if (EXACT("/v1/layout")) {
      x->route = FROND__R_LAYOUT;
      frond__http_v1_layout(x);
    } else if (EXACT("/v1/tags")) {
      x->route = FROND__R_TAGS;
      frond__http_v1_tags(x, 0, 0);
    } else if (PREFIX("/v1/tags/")) {
      x->route = FROND__R_TAGS;
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

static int http_on_data(frond__conn *c, const char *buf, size_t len) {
  frond__http_request req;
  frond__http_ctx x;
  int n = frond__http_parse(buf, len, &req);
  if (n == FROND__HTTP_PARTIAL)
    return 0;
  ctx_init(&x, c);
  if (n < 0) {
    static const char *codes[] = {"BAD_REQUEST", "URI_TOO_LONG",
                                  "HEADERS_TOO_LARGE", "NOT_IMPLEMENTED",
                                  "HTTP_VERSION_NOT_SUPPORTED"};
    int i = req.status == 414   ? 1
            : req.status == 431 ? 2
            : req.status == 501 ? 3
            : req.status == 505 ? 4
                                : 0;
    FROND__INC(((frond__http_state *)c->l->state)->bad_requests, 1);
    frond__http_error(&x, req.status, codes[i], req.reason, NULL);
    return -1;
  }
  x.req = &req;
  x.keep_alive = req.keep_alive;
  x.minor = req.minor;
  x.head = req.method == FROND__HTTP_HEAD;
  if (req.body_len > x.srv->cfg.max_body) {
    x.keep_alive = 0;
    frond__http_error(&x, 413, "BODY_TOO_LARGE", "request body too large",
                      NULL);
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
  /* A held request answers later, and closes then if it must. */
  if (!x.keep_alive && !c->held)
    return -1;
  return n + (int)req.body_len;
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
    .busy = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
            "application/json\r\nContent-Length: 92\r\nConnection: close\r\n"
            "\r\n{\"error\":{\"code\":\"TOO_MANY_CONNECTIONS\",\"message\":"
            "\"connection limit reached, retry later\"}}\n",
};
