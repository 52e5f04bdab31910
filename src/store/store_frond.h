/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_frond.h -- what the frond:// store's files share: its URI, the
** pure readers of what servers answer (store_frond_parse.c, fuzzed), and
** the HTTP/1.1 client with its failover (store_frond_http.c), under the
** backend itself (store_frond.c).
*/
#ifndef FROND_STORE_FROND_H
#define FROND_STORE_FROND_H

#include "store/store.h"

#define FROND_FS_MAX_SERVERS 16
#define FROND_FS_HOST_MAX 253
#define FROND_FS_TOKEN_MAX 256
#define FROND_FS_HEAD_MAX 16384      /* a response head */
#define FROND_FS_BODY_MAX (64 << 20) /* a response body: 64 MiB */
#define FROND_FS_DEFAULT_PORT 8080
#define FROND_FS_DEFAULT_TIMEOUT_MS 2000
#define FROND_FS_DEFAULT_RETRIES 3
#define FROND_FS_BACKOFF_BASE_MS 50
#define FROND_FS_BACKOFF_CAP_MS 1000
#define FROND_FS_STORE_LEN 32 /* a store's identity: lowercase hex */

typedef struct frond_fs_server {
  char host[FROND_FS_HOST_MAX + 1]; /* a name, IPv4, or IPv6 without [] */
  int port;
  char shown[FROND_FS_HOST_MAX + 9]; /* host:port, [v6]:port */
} frond_fs_server;

typedef struct frond_fs_uri {
  int n;
  frond_fs_server srv[FROND_FS_MAX_SERVERS];
  char token[FROND_FS_TOKEN_MAX + 1]; /* "": none */
  int64_t timeout_ms;                 /* per call, 1..600000 */
  int retries;                        /* 0..10 */
} frond_fs_uri;

/* frond://host[:port][,host[:port]...][/][?token=T&timeout_ms=N&retries=N
** &tls=off]. A pure function: 0 or STORE_URI with a one-line message that
** never shows the token. */
int frond__fs_uri_parse(const char *uri, frond_fs_uri *out, frond_error *err);

/* The head of an HTTP/1.x response. */
typedef struct frond_fs_resp {
  int status;             /* 200..599 */
  size_t head_len;        /* bytes up to and including the blank line */
  int64_t content_length; /* bytes of body that follow */
  int close;              /* the server closes the connection after it */
  char store[FROND_FS_STORE_LEN + 1]; /* Frond-Store:, "" without one */
} frond_fs_resp;

/* Read a response head from buf[0..len): > 0 its length (out filled), -2
** when more bytes are needed, -1 when it is malformed (err says why). A
** pure function over the buffer: reads nothing past len, allocates
** nothing. Strict: CRLF line ends, Content-Length required (but for 204
** and 304), no Transfer-Encoding (Frond's server never sends one), no
** 1xx (no request asks for one). A Frond-Store header must be 32
** lowercase hex characters. */
int frond__fs_resp_parse(const char *buf, size_t len, frond_fs_resp *out,
                         frond_error *err);

/* A range answer (as=text): "start end\n", 0 <= start < end. 0 or -1. */
int frond__fs_range_parse(const char *body, size_t len, int64_t *start,
                          int64_t *end);

/* GET /v1/layout's answer, a JSON object: 0 with its "store" (32
** lowercase hex, "" when absent) and "max_range" (0 when absent), -1
** when it is not such an object or those fields are malformed. */
int frond__fs_layout_parse(const char *body, size_t len, char *store,
                           int64_t *max_range);

/* An error body {"error":{"code":"NAME","message":"…"}}: 0 with the
** name and message (truncated to fit, NUL-terminated; control
** characters, a server's newlines among them, as spaces), or -1. */
int frond__fs_error_parse(const char *body, size_t len, char *code,
                          size_t code_len, char *msg, size_t msg_len);

/* A tag row {"tag":…,"max_id":N,"step":N,"description":…,"update_time":…}
** (unknown keys skipped): 0 or -1. */
int frond__fs_row_parse(const char *body, size_t len, frond_tag_row *out);

/* The tag list {"tags":[row,…]}: every row to fn (0 to go on, else that
** code ends the list with it). 0, -1 when malformed, or fn's code. */
typedef int (*frond_fs_row_fn)(void *ctx, const frond_tag_row *row);
int frond__fs_rows_parse(const char *body, size_t len, frond_fs_row_fn fn,
                         void *ctx);

/* ---- the client (store_frond_http.c) ---- */

typedef struct frond_fs_client {
  frond_fs_uri u;
  int cur;   /* the server calls go to */
  int fd;    /* kept-alive connection to srv[cur], -1: none */
  char *buf; /* received bytes */
  size_t cap, len;
  uint64_t rng;                       /* for the jitter */
  const char *agent;                  /* User-Agent */
  uint64_t calls;                     /* requests sent */
  char store[FROND_FS_STORE_LEN + 1]; /* the last answer's Frond-Store */
} frond_fs_client;

/* What a call asks. Only an idempotent call (a GET: a range lost on the
** way is skipped, never handed out) is sent again after it was sent;
** a change is retried only when it never left. */
typedef struct frond_fs_answer frond_fs_answer;
typedef struct frond_fs_req {
  const char *method;
  const char *path; /* origin form, already percent-encoded */
  const char *body; /* JSON, or NULL */
  int idempotent;
  /* NULL, or: is a 2xx answer of an idempotent call one to take? 0, or a
  ** code with why in err: the answer is refused as a server's failure
  ** (not Frond's answer, another store, a range gone back), and the call
  ** moves on to the next server. */
  int (*check)(void *ctx, const frond_fs_answer *a, frond_error *err);
  void *ctx;
} frond_fs_req;

/* An answer: the status, the body (in c->buf, valid until the next
** call), which server gave it (srv, index i) and the store it names. */
struct frond_fs_answer {
  int status;
  const char *body;
  size_t len;
  const frond_fs_server *srv;
  int i;
  const char *store; /* Frond-Store, "" without one */
};

void frond__fs_client_init(frond_fs_client *c, const frond_fs_uri *u);
void frond__fs_client_free(frond_fs_client *c);
/* Send req to the current server, failing over to the next on a
** connection error, a timeout, a malformed answer, a 5xx, an answer that
** is not Frond's (a 3xx or 4xx without Frond's error body: a proxy's),
** or a 2xx that req->check refuses, with jittered backoff, up to
** 1 + retries attempts, each within timeout_ms. A change that was sent is
** never sent again. 0 with any other answer (a 4xx with Frond's error is
** never retried), or: STORE_MISMATCH when a server was refused for its
** store, else STORE_TIMEOUT when the last attempt timed out, the last
** check's or 5xx's code, or STORE (every failure named). */
int frond__fs_call(frond_fs_client *c, const frond_fs_req *req,
                   frond_fs_answer *a, frond_error *err);
/* Turn a failed answer (status >= 300) into its library code and a
** message naming the server: the code the server names when the library
** has it, else STORE_PERMANENT for a 4xx (it refuses: a token is missing
** or wrong, the path is not a Frond server's) and STORE otherwise. */
int frond__fs_fail(const frond_fs_answer *a, const char *what,
                   frond_error *err);
/* Move on to the next server (the current one answered wrongly). */
void frond__fs_next_server(frond_fs_client *c);

#endif /* FROND_STORE_FROND_H */
