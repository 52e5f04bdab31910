/* SPDX-License-Identifier: Apache-2.0 */
/*
** http.h -- the HTTP protocol's own pieces, shared by its files:
**
**   http.c        framing, the route table and its rules, configuration,
**                 metrics
**   http_args.c   a request's arguments: path parameter, count, output
**   http_api.c    IDs and ID strings, layout, health and page endpoints
**   http_decode.c decoding: Leaf's and /v1's
**   http_admin.c  /v1/tags, whose store calls run off the event loop
**   http_out.c    answers: the status table, status line, headers, errors,
**                 ID lists, and how the request layer's answers are written
*/
#ifndef FROND_SERVER_HTTP_H
#define FROND_SERVER_HTTP_H

#include "server/http_parse.h"
#include "server/server.h"

#include <time.h>

/* Every route, by its name in the metrics ("other": no route); the
** order is the metrics'. http.c's route table says which paths, methods
** and rules each one has, as resp.c's command table does for commands. */
#define FROND__HTTP_ROUTES(XX)                                                 \
  XX(LEAF_SEGMENT, "leaf_segment")                                             \
  XX(LEAF_SNOWFLAKE, "leaf_snowflake")                                         \
  XX(LEAF_DECODE, "leaf_decode")                                               \
  XX(SNOWFLAKE, "snowflake")                                                   \
  XX(SEGMENT, "segment")                                                       \
  XX(DECODE, "decode")                                                         \
  XX(LAYOUT, "layout")                                                         \
  XX(TAGS, "tags")                                                             \
  XX(METRICS, "metrics")                                                       \
  XX(LIVEZ, "livez")                                                           \
  XX(READYZ, "readyz")                                                         \
  XX(STATUS, "status_page")                                                    \
  XX(SEGMENT_RANGE, "segment_range")                                           \
  XX(FORMAT, "format")                                                         \
  XX(UUID7, "uuid7")                                                           \
  XX(UUID4, "uuid4")                                                           \
  XX(ULID, "ulid")                                                             \
  XX(OBJECTID, "objectid")                                                     \
  XX(OTHER, "other")

enum {
#define FROND__HTTP_ROUTE_ENUM(id, name) FROND__R_##id,
  FROND__HTTP_ROUTES(FROND__HTTP_ROUTE_ENUM)
#undef FROND__HTTP_ROUTE_ENUM
      FROND__R_COUNT
};

/* The statuses the metrics count apart (http_out.c's table), and a last
** slot for any other. */
#define FROND__NSTATUS 20
/* The status counted in slot i (0: other). */
int frond__http_status_at(int i);

/* What HTTP keeps per worker (c->l->state): its counters and the Date
** header, formatted once a second. Written by the worker's thread only. */
typedef struct frond__http_state {
  frond__counter requests[FROND__R_COUNT][FROND__NSTATUS];
  frond__hist duration[FROND__R_COUNT];
  frond__counter bad_requests;
  time_t date_t;
  char date[48]; /* "Date: ...\r\n" */
  size_t date_len;
} frond__http_state;

/*
** One request being answered. req and body are views into the
** connection's input, valid only inside on_data; what an answer needs
** later (an admin call finishing off the loop) is copied out of them.
*/
typedef struct frond__http_ctx {
  frond__conn *c;
  frond__worker *w;
  frond__server *srv;
  const frond__http_request *req;
  const char *body;
  size_t body_len;
  const char *param; /* the route's path parameter (percent-encoded) */
  size_t param_len;
  int arg;        /* the route's own argument (a built-in format, ...) */
  int route;      /* FROND__R_* */
  int keep_alive; /* cleared by an answer that closes the connection */
  int minor;      /* HTTP/1.<minor> */
  int head;       /* HEAD: headers only */
  int leaf;       /* answer IDs as Leaf does: plain text, Leaf's errors */
  int text;       /* answer ID lists as text, one a line (http_args.c) */
  int status;     /* of the answer, once frond__http_respond wrote it */
  uint64_t t0;    /* frond__clock_ns() when the request was complete; 0 with
                     metrics_histograms off */
} frond__http_ctx;

/* http_out.c: append a whole answer (extra: more header lines, each
** ending in CRLF) and count it. ctype NULL: no Content-Type. A 204 carries
** neither Content-Type nor Content-Length (RFC 9110 8.6). */
void frond__http_respond(frond__http_ctx *x, int status, const char *ctype,
                         const char *body, size_t len, const char *extra);
/* {"error":{"code":..,"message":..}} with the given status. */
void frond__http_error(frond__http_ctx *x, int status, const char *code,
                       const char *msg, const char *extra);
/* A library error: its status (frond__req_status), its stable name, err's
** message. */
/* QUOTA_EXCEEDED's header "Retry-After: N\r\n" in buf[cap], or NULL (any
** other code, or a refusal no wait would change). */
const char *frond__http_retry_after(int code, char *buf, size_t cap);
void frond__http_error_code(frond__http_ctx *x, int code,
                            const frond_error *err);
/* 404 NOT_FOUND, "no such path". */
void frond__http_not_found(frond__http_ctx *x);
/* 405 with the Allow header. */
void frond__http_not_allowed(frond__http_ctx *x, const char *allow);
/* The code of the error body of a request the framing refuses with
** status (400, 413, 414, 431, 501, 505). */
const char *frond__http_refusal(int status);
/* {"ids":["1","2"]} or one ID a line (x->text). */
void frond__http_ids(frond__http_ctx *x, const int64_t *ids, size_t n);
/* The same for n NUL-terminated strings of ID formats, stride bytes apart
** (characters that need no JSON escaping); fixed: every one is stride - 1
** characters long (all formats but decimal), so the text form is the
** block itself with each NUL made a newline. */
void frond__http_strings(frond__http_ctx *x, const char *s, size_t n,
                         size_t stride, int fixed);
/* Decoded fields as one JSON object. */
void frond__http_fields(frond__http_ctx *x, const frond__field *f, size_t n);

/* What a connection refused at max_connections is told: 503, with Date. */
void frond__http_busy(frond__conn *c);

static inline int frond__http_is_get(const frond__http_ctx *x) {
  return x->req->method == FROND__HTTP_GET ||
         x->req->method == FROND__HTTP_HEAD;
}

/* http_args.c: a request's arguments. The route's path parameter,
** percent-decoded into tag[FROND_TAG_MAX + 1] and checked as a tag:
** its length, or -1 (an error has been answered). */
int frond__http_tag(frond__http_ctx *x, char *tag);
/* r->n from ?count=N (default 1) within r->op's limit (frond__req_count):
** 0, or -1 after answering COUNT_INVALID. */
int frond__http_count(frond__http_ctx *x, frond__req *r);
/* x->text from ?as=json|text, else the deprecated ?format=json|text, else
** Accept (text/plain first: text); JSON by default. 0, or -1 after
** answering 400. */
int frond__http_as(frond__http_ctx *x);
/* The value of ?key=, or NULL (*len its length). */
const char *frond__http_arg(const frond__http_ctx *x, const char *key,
                            size_t *len);
/* How many times the query gives key (0: absent). */
int frond__http_arg_count(const frond__http_ctx *x, const char *key);

/* The endpoints, as http.c's route table calls them. http_api.c: IDs and
** ID strings from memory (or off the loop through req.c), the layout,
** health and the pages. */
void frond__http_leaf_snowflake(frond__http_ctx *x);
void frond__http_leaf_segment(frond__http_ctx *x);
void frond__http_v1_snowflake(frond__http_ctx *x);
void frond__http_v1_segment(frond__http_ctx *x);
void frond__http_v1_segment_range(frond__http_ctx *x);
void frond__http_v1_format(frond__http_ctx *x);
/* /v1/uuid7, /v1/uuid4, /v1/ulid, /v1/objectid: x->arg FROND__BUILTIN_*. */
void frond__http_v1_builtin(frond__http_ctx *x);
void frond__http_v1_layout(frond__http_ctx *x);
void frond__http_livez(frond__http_ctx *x);
void frond__http_readyz(frond__http_ctx *x);
void frond__http_metrics(frond__http_ctx *x);
void frond__http_status_page(frond__http_ctx *x);
/* http_decode.c: Leaf's /decodeSnowflakeId and /v1/decode/{s}. */
void frond__http_leaf_decode(frond__http_ctx *x);
void frond__http_v1_decode(frond__http_ctx *x);
/* http_admin.c: /v1/tags (x->arg 0), /v1/tags/{tag} (1) and POST
** /v1/tags/{tag}/advance (2), their store calls off the loop. */
void frond__http_v1_tags(frond__http_ctx *x);

#endif /* FROND_SERVER_HTTP_H */
