/* SPDX-License-Identifier: Apache-2.0 */
/*
** http.h -- the HTTP protocol's own pieces, shared by its files:
**
**   http.c        framing, routing, configuration, metrics (the table)
**   http_api.c    the ID, decode, layout, health and page endpoints
**   http_formats.c  ID formats: named, UUIDs, ULIDs, ObjectIds, decoding
**   http_admin.c  /v1/tags, whose store calls run off the event loop
**   http_out.c    answers: status line, headers, errors, ID lists
*/
#ifndef FROND_SERVER_HTTP_H
#define FROND_SERVER_HTTP_H

#include "server/http_parse.h"
#include "server/server.h"

#include <time.h>

/* Routes, for the metrics. */
enum {
  FROND__R_LEAF_SEGMENT,
  FROND__R_LEAF_SNOWFLAKE,
  FROND__R_LEAF_DECODE,
  FROND__R_SNOWFLAKE,
  FROND__R_SEGMENT,
  FROND__R_DECODE,
  FROND__R_LAYOUT,
  FROND__R_TAGS,
  FROND__R_METRICS,
  FROND__R_LIVEZ,
  FROND__R_READYZ,
  FROND__R_STATUS,
  FROND__R_SEGMENT_RANGE,
  FROND__R_FORMAT,
  FROND__R_UUID7,
  FROND__R_UUID4,
  FROND__R_ULID,
  FROND__R_OBJECTID,
  FROND__R_OTHER,
  FROND__R_COUNT
};
extern const char *const frond__http_route_names[FROND__R_COUNT];

#define FROND__NSTATUS 19
extern const int frond__http_statuses[FROND__NSTATUS]; /* last slot: other */

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
  int route;      /* FROND__R_* */
  int keep_alive; /* cleared by an answer that closes the connection */
  int minor;      /* HTTP/1.<minor> */
  int head;       /* HEAD: headers only */
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
/* A library error: its status, its stable name, err's message. */
void frond__http_error_code(frond__http_ctx *x, int code,
                            const frond_error *err);
/* 405 with the Allow header. */
void frond__http_not_allowed(frond__http_ctx *x, const char *allow);
/* {"ids":["1","2"]} or one ID a line (text). */
void frond__http_ids(frond__http_ctx *x, const int64_t *ids, size_t n,
                     int text);
/* The same for n NUL-terminated strings of ID formats, stride bytes apart
** (characters that need no JSON escaping). */
void frond__http_strings(frond__http_ctx *x, const char *s, size_t n,
                         size_t stride, int text);

/* What a connection refused at max_connections is told: 503, with Date. */
void frond__http_busy(frond__conn *c);

/* A copy of x for an answer written later, without the request's views. */
void frond__http_ctx_keep(frond__http_ctx *dst, const frond__http_ctx *x);

static inline int frond__http_is_get(const frond__http_ctx *x) {
  return x->req->method == FROND__HTTP_GET ||
         x->req->method == FROND__HTTP_HEAD;
}

/* http_api.c: path segment after prefix, percent-decoded into
** tag[FROND_TAG_MAX + 1] and checked. Returns its length, or -1 (an error
** has been answered). */
int frond__http_path_tag(frond__http_ctx *x, size_t prefix, char *tag);
/* The same for the path's bytes [prefix, end). */
int frond__http_tag_between(frond__http_ctx *x, size_t prefix, size_t end,
                            char *tag);
/* ?count=N, default 1: N, or 0 when an error has been answered. */
size_t frond__http_count(frond__http_ctx *x);
/* ?format=json (default: 0) or text (1); -1 when an error has been
** answered. */
int frond__http_text(frond__http_ctx *x);
void frond__http_leaf_snowflake(frond__http_ctx *x);
void frond__http_leaf_segment(frond__http_ctx *x, size_t prefix);
void frond__http_leaf_decode(frond__http_ctx *x);
void frond__http_v1_snowflake(frond__http_ctx *x);
void frond__http_v1_segment(frond__http_ctx *x, size_t prefix);
/* /v1/segment/{tag}/range: the tag is the path's [prefix, end). */
void frond__http_v1_segment_range(frond__http_ctx *x, size_t prefix,
                                  size_t end);
void frond__http_v1_decode(frond__http_ctx *x, size_t prefix);
void frond__http_v1_layout(frond__http_ctx *x);
void frond__http_readyz(frond__http_ctx *x);
void frond__http_plain(frond__http_ctx *x, int status, const char *text);
/* /metrics (which = FROND__R_METRICS) or the status page. */
void frond__http_page(frond__http_ctx *x, int which);

/* http_formats.c: /v1/format/{name}, and /v1/uuid7, /v1/uuid4, /v1/ulid,
** /v1/objectid (which: FROND__BUILTIN_*). */
void frond__http_v1_format(frond__http_ctx *x, size_t prefix);
void frond__http_v1_builtin(frond__http_ctx *x, int which);
/* /v1/decode/{s}: a decimal snowflake ID without ?format= as
** frond__http_v1_decode answers it; anything else by its shape or the
** named format. */
void frond__http_v1_decode_any(frond__http_ctx *x, size_t prefix);

/* http_admin.c: /v1/tags (one = 0) and /v1/tags/{tag} (one = 1). */
void frond__http_v1_tags(frond__http_ctx *x, size_t prefix, int one);
/* http_admin.c: POST /v1/tags/{tag}/advance, the tag between prefix and
** end. */
void frond__http_v1_tag_advance(frond__http_ctx *x, size_t prefix, size_t end);

#endif /* FROND_SERVER_HTTP_H */
