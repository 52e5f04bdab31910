/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp_shared.h -- the Redis protocol front's own pieces, shared by its files:
**
**   resp.c        framing, the command table, dispatch, configuration,
**                 metrics (the frond__proto table)
**   resp_cmds.c   the commands
**   resp_formats.c  the ID format commands and ID.DECODE
**   resp_multi.c  transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH
**   resp_reply.c  replies, written in the connection's protocol (RESP2 or
**                 RESP3): a command says what a value is, the helper how
*/
#ifndef FROND_SERVER_RESP_SHARED_H
#define FROND_SERVER_RESP_SHARED_H

#include "server/resp_parse.h"
#include "server/server.h"

#include <stdint.h>

/* Every command Frond answers, by its lower-case name; "unknown" counts
** the rest. The order is the metrics' order and COMMAND's. */
#define FROND__RESP_COMMANDS(XX)                                               \
  XX(INCR, "incr")                                                             \
  XX(INCRBY, "incrby")                                                         \
  XX(ID_NEXT, "id.next")                                                       \
  XX(ID_RANGE, "id.range")                                                     \
  XX(ID_SNOWFLAKE, "id.snowflake")                                             \
  XX(ID_DECODE, "id.decode")                                                   \
  XX(ID_TAGS, "id.tags")                                                       \
  XX(ID_FORMAT, "id.format")                                                   \
  XX(ID_ORDER, "id.order")                                                     \
  XX(ID_UUID, "id.uuid")                                                       \
  XX(ID_ULID, "id.ulid")                                                       \
  XX(ID_OBJECTID, "id.objectid")                                               \
  XX(PING, "ping")                                                             \
  XX(ECHO, "echo")                                                             \
  XX(QUIT, "quit")                                                             \
  XX(HELLO, "hello")                                                           \
  XX(AUTH, "auth")                                                             \
  XX(SELECT, "select")                                                         \
  XX(CLIENT, "client")                                                         \
  XX(COMMAND, "command")                                                       \
  XX(INFO, "info")                                                             \
  XX(CONFIG, "config")                                                         \
  XX(RESET, "reset")                                                           \
  XX(READONLY, "readonly")                                                     \
  XX(READWRITE, "readwrite")                                                   \
  XX(MULTI, "multi")                                                           \
  XX(EXEC, "exec")                                                             \
  XX(DISCARD, "discard")                                                       \
  XX(WATCH, "watch")                                                           \
  XX(UNWATCH, "unwatch")                                                       \
  XX(UNKNOWN, "unknown")

enum {
#define FROND__RESP_ENUM(id, name) FROND__RC_##id,
  FROND__RESP_COMMANDS(FROND__RESP_ENUM)
#undef FROND__RESP_ENUM
      FROND__RC_COUNT
};

/* Before AUTH, commands are bounded as Redis bounds unauthenticated
** clients: at most 10 arguments of at most 16 KiB. */
#define FROND__RESP_UNAUTH_MAX_ARGS 10
#define FROND__RESP_UNAUTH_MAX_BULK 16384
#define FROND__RESP_NAME_MAX 128
/* Most commands, and bytes of their arguments, one transaction queues
** (resp_multi.c). */
#define FROND__RESP_MAX_QUEUED 10000
#define FROND__RESP_TX_MAX_BYTES (256u << 10)

/* What RESP keeps per worker (c->l->state), written by its thread only. */
typedef struct frond__resp_stats {
  frond__counter commands[FROND__RC_COUNT][2]; /* [cmd][0 ok, 1 error] */
  frond__counter protocol_errors; /* closed after a protocol error */
  frond__counter noauth;          /* commands refused before AUTH */
  frond__counter auth_failures;
  frond__counter http_refused;           /* closed: an HTTP request (resp.c) */
  uint64_t http_logged_ms;               /* when one was last logged */
  frond__hist duration[FROND__RC_COUNT]; /* with metrics_histograms */
} frond__resp_stats;

#define FROND__RESP_STATS(x) ((frond__resp_stats *)(x)->c->l->state)

/* A transaction (resp_multi.c): queued between MULTI and EXEC, then run. */
typedef struct frond__resp_tx {
  int on;      /* after MULTI, until EXEC or DISCARD */
  int dirty;   /* a command was refused while queueing: EXEC aborts */
  int running; /* EXEC has answered its array's head */
  size_t n;    /* commands queued */
  size_t next; /* EXEC: the next command to run, and its offset in q */
  size_t off;
  uint64_t t0;  /* EXEC: when it was first read, for its duration */
  frond__buf q; /* the queued commands (resp_multi.c's head comment) */
} frond__resp_tx;

/* One client (c->pdata). */
typedef struct frond__resp_client {
  uint64_t id;
  int authed;
  int proto; /* 2 or 3, as HELLO chose */
  char name[FROND__RESP_NAME_MAX + 1];
  char lib_name[FROND__RESP_NAME_MAX + 1];
  char lib_ver[FROND__RESP_NAME_MAX + 1];
  frond__resp_tx tx;
} frond__resp_client;

/* One command being answered. */
typedef struct frond__resp_ctx {
  frond__conn *c;
  frond__worker *w;
  frond__server *srv;
  frond__resp_client *st;
  frond__buf *out;
  const frond__resp_arg *argv;
  size_t argc;
  int cmd;     /* FROND__RC_* */
  int failed;  /* an error reply was written */
  int close;   /* close once the reply is written */
  int held;    /* EXEC: a queued command waits, the rest is to come */
  uint64_t t0; /* frond__clock_ns() when the command was complete; 0 with
                  metrics_histograms off */
} frond__resp_ctx;

/* resp_reply.c: count a command once its reply is queued (by result,
** and its time since t0). */
void frond__resp_count(frond__resp_ctx *x);

/* resp_reply.c: replies in the connection's protocol (the table at the top
** of resp_reply.c). A reply that does not fit in memory sets x->close. */
void frond__resp_int(frond__resp_ctx *x, int64_t v);
/* An unsigned integer: above INT64_MAX a big number (RESP3) or a bulk
** string (RESP2). */
void frond__resp_u64(frond__resp_ctx *x, uint64_t v);
void frond__resp_double(frond__resp_ctx *x, double d);
void frond__resp_array(frond__resp_ctx *x, int64_t n);
/* A map of `pairs` key/value pairs follows: flat in RESP2, as HGETALL. */
void frond__resp_map(frond__resp_ctx *x, int64_t pairs);
void frond__resp_set(frond__resp_ctx *x, int64_t n);
void frond__resp_bulk(frond__resp_ctx *x, const char *p, size_t n);
void frond__resp_cstr(frond__resp_ctx *x, const char *s);
/* Text for people (INFO, CLIENT INFO): a verbatim string in RESP3. */
void frond__resp_verbatim(frond__resp_ctx *x, const char *p, size_t n);
void frond__resp_nil(frond__resp_ctx *x);
void frond__resp_status(frond__resp_ctx *x, const char *s);
void frond__resp_status_n(frond__resp_ctx *x, const char *s, size_t n);
/* An ID, or an array of n IDs: bulk strings of decimal digits in both
** protocols, so that no client reads them into a double. */
void frond__resp_id(frond__resp_ctx *x, int64_t id);
void frond__resp_ids(frond__resp_ctx *x, const int64_t *ids, size_t n);
/* "-CODE message\r\n"; control bytes in the message become spaces. */
void frond__resp_error(frond__resp_ctx *x, const char *code, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));
/* A library error under its stable name ("-TAG_NOT_FOUND ..."). */
void frond__resp_lib_error(frond__resp_ctx *x, int code,
                           const frond_error *err);
void frond__resp_wrong_args(frond__resp_ctx *x, const char *name);
/* An array of n bulk strings, NUL-terminated, stride bytes apart. */
void frond__resp_strings(frond__resp_ctx *x, const char *s, size_t n,
                         size_t stride);
/* Is the argument 1 or more decimal digits? */
int frond__resp_arg_digits(const frond__resp_arg *a);
/* Is the argument s, in any case? */
int frond__resp_arg_is(const frond__resp_arg *a, const char *s);
/* The argument as a NUL-terminated string in buf[cap], truncated. */
const char *frond__resp_arg_str(const frond__resp_arg *a, char *buf,
                                size_t cap);

/* resp_reply.c: r->n from argv[i] (absent: 1) within r->op's limit
** (frond__req_count): 0, or -1 after replying COUNT_INVALID. */
int frond__resp_count_arg(frond__resp_ctx *x, frond__req *r, size_t i);
/* Serve r through the request layer and reply: IDs as INCR or ID.* reply
** them (x->cmd), a range as two IDs, ID strings as an array; a request
** finished off the loop replies then and is counted then. */
void frond__resp_run(frond__resp_ctx *x, frond__req *r);

/* resp_cmds.c */
void frond__resp_cmd_incr(frond__resp_ctx *x);
void frond__resp_cmd_incrby(frond__resp_ctx *x);
void frond__resp_cmd_id_next(frond__resp_ctx *x);
void frond__resp_cmd_id_range(frond__resp_ctx *x);
void frond__resp_cmd_id_snowflake(frond__resp_ctx *x);
void frond__resp_cmd_id_tags(frond__resp_ctx *x);
/* resp_formats.c */
void frond__resp_cmd_id_decode(frond__resp_ctx *x);
void frond__resp_cmd_id_format(frond__resp_ctx *x);
void frond__resp_cmd_id_order(frond__resp_ctx *x);
void frond__resp_cmd_id_uuid(frond__resp_ctx *x);
void frond__resp_cmd_id_ulid(frond__resp_ctx *x);
void frond__resp_cmd_id_objectid(frond__resp_ctx *x);
void frond__resp_cmd_ping(frond__resp_ctx *x);
void frond__resp_cmd_echo(frond__resp_ctx *x);
void frond__resp_cmd_quit(frond__resp_ctx *x);
void frond__resp_cmd_hello(frond__resp_ctx *x);
void frond__resp_cmd_auth(frond__resp_ctx *x);
void frond__resp_cmd_select(frond__resp_ctx *x);
void frond__resp_cmd_client(frond__resp_ctx *x);
void frond__resp_cmd_info(frond__resp_ctx *x);
void frond__resp_cmd_config(frond__resp_ctx *x);
void frond__resp_cmd_reset(frond__resp_ctx *x);
void frond__resp_cmd_readonly(frond__resp_ctx *x);
/* resp_multi.c */
void frond__resp_cmd_multi(frond__resp_ctx *x);
void frond__resp_cmd_discard(frond__resp_ctx *x);
void frond__resp_cmd_watch(frond__resp_ctx *x);
void frond__resp_cmd_unwatch(frond__resp_ctx *x);
/* Queue x's command: +QUEUED, or -QUEUE_FULL, which aborts the
** transaction. */
void frond__resp_tx_queue(frond__resp_ctx *x);
/* EXEC: run the queue in order, each command through run (resp.c's
** dispatch, which counts it). Returns 1 when a command waits off the loop
** with more to come (x->c is held), or when the output is past the
** high-water mark: the caller leaves EXEC unconsumed, and calls this again
** for the same EXEC once the connection resumes or the output has
** drained; 0 once answered. */
int frond__resp_tx_exec(frond__resp_ctx *x, void (*run)(frond__resp_ctx *y));
/* Drop a client's transaction (RESET, a closing connection). */
void frond__resp_tx_free(frond__resp_client *st);
/* A command appended to the queue q (-1: no memory, an argument over 4
** GiB), and the command at q[0..len) read back into argv[max] (the bytes
** used, -1 when q does not hold a whole command). Pure: the fuzz harness
** checks one against the other. */
int frond__resp_tx_put(frond__buf *q, const frond__resp_arg *argv, size_t argc);
long frond__resp_tx_get(const char *q, size_t len, frond__resp_arg *argv,
                        size_t max, size_t *argc);

#endif /* FROND_SERVER_RESP_SHARED_H */
