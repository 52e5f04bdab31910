/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp_reply.c -- replies, in the protocol the connection speaks.
**
** A connection speaks RESP2 until HELLO 3 switches it to RESP3 (HELLO 2
** back). Commands never look at which: they say what a value is (a map,
** a set, a nil, an ID, a text meant for people) and the helpers here write
** it the way Redis writes that kind of value in each protocol:
**
**   helper            RESP2                    RESP3
**   resp_map(n)       *<2n> (flat pairs)       %<n>
**   resp_set(n)       *<n>                     ~<n>
**   resp_nil          $-1                      _
**   resp_verbatim     $<n> text                =<n+4> txt:text
**   resp_double       $<n> "%.17g"             ,<%.17g|inf|-inf|nan>
**   resp_u64 > 2^63-1 $<n> digits              (<digits>
**   resp_id           $<n> digits              $<n> digits
**
** IDs are bulk strings in both: JavaScript clients (ioredis, node-redis)
** read RESP integers into doubles, and a snowflake ID above 2^53 would
** come out rounded, several IDs as one. Counts, times and fields are
** small and stay integers. Errors and status lines are the same in both.
**
** Integers are written with the server's one decimal formatter and no
** printf: INCR's reply is the hot path. Once a command's reply is queued,
** frond__resp_count counts it, with its latency. The commands that issue
** IDs hand them to the request layer (req.c) through frond__resp_run,
** whose answers are written here, now or after a wait off the loop.
*/
#include "server/resp_shared.h"

#include "base/base.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int resp3(const frond__resp_ctx *x) {
  return x->st != NULL && x->st->proto == 3;
}

/* "<type><v>\r\n", the header of integers, aggregates and strings. */
static void reply_num(frond__resp_ctx *x, char type, int64_t v) {
  frond__buf *b = x->out;
  if (frond__buf_reserve(b, FROND__DEC_MAX + 3) != 0) {
    x->close = 1;
    return;
  }
  b->data[b->len++] = type;
  b->len += frond__dec_i64(b->data + b->len, v);
  b->data[b->len++] = '\r';
  b->data[b->len++] = '\n';
}

static void append(frond__resp_ctx *x, const char *p, size_t n) {
  if (frond__buf_append(x->out, p, n) != 0)
    x->close = 1;
}

void frond__resp_int(frond__resp_ctx *x, int64_t v) {
  reply_num(x, ':', v);
}

void frond__resp_array(frond__resp_ctx *x, int64_t n) {
  reply_num(x, '*', n);
}

void frond__resp_map(frond__resp_ctx *x, int64_t pairs) {
  if (resp3(x))
    reply_num(x, '%', pairs);
  else
    reply_num(x, '*', 2 * pairs);
}

void frond__resp_set(frond__resp_ctx *x, int64_t n) {
  reply_num(x, resp3(x) ? '~' : '*', n);
}

void frond__resp_bulk(frond__resp_ctx *x, const char *p, size_t n) {
  reply_num(x, '$', (int64_t)n);
  append(x, p, n);
  append(x, "\r\n", 2);
}

void frond__resp_cstr(frond__resp_ctx *x, const char *s) {
  frond__resp_bulk(x, s, strlen(s));
}

void frond__resp_nil(frond__resp_ctx *x) {
  if (resp3(x))
    append(x, "_\r\n", 3);
  else
    append(x, "$-1\r\n", 5);
}

void frond__resp_status(frond__resp_ctx *x, const char *s) {
  frond__resp_status_n(x, s, strlen(s));
}

void frond__resp_status_n(frond__resp_ctx *x, const char *s, size_t n) {
  append(x, "+", 1);
  append(x, s, n);
  append(x, "\r\n", 2);
}

void frond__resp_verbatim(frond__resp_ctx *x, const char *p, size_t n) {
  if (!resp3(x)) {
    frond__resp_bulk(x, p, n);
    return;
  }
  reply_num(x, '=', (int64_t)n + 4);
  append(x, "txt:", 4);
  append(x, p, n);
  append(x, "\r\n", 2);
}

void frond__resp_double(frond__resp_ctx *x, double d) {
  char s[40];
  int n;
  if (isnan(d))
    n = snprintf(s, sizeof s, "nan");
  else if (isinf(d))
    n = snprintf(s, sizeof s, "%s", d > 0 ? "inf" : "-inf");
  else
    n = snprintf(s, sizeof s, "%.17g", d);
  if (!resp3(x)) {
    frond__resp_bulk(x, s, (size_t)n);
    return;
  }
  append(x, ",", 1);
  append(x, s, (size_t)n);
  append(x, "\r\n", 2);
}

void frond__resp_u64(frond__resp_ctx *x, uint64_t v) {
  char s[FROND__DEC_MAX];
  size_t n;
  if (v <= (uint64_t)INT64_MAX) {
    reply_num(x, ':', (int64_t)v);
    return;
  }
  n = frond__dec_u64(s, v);
  if (!resp3(x)) {
    frond__resp_bulk(x, s, n);
    return;
  }
  append(x, "(", 1);
  append(x, s, n);
  append(x, "\r\n", 2);
}

/* "$<len>\r\n<digits>\r\n" at b, whose room the caller has reserved. */
static void put_id(frond__buf *b, int64_t id) {
  char s[FROND__DEC_MAX];
  size_t n = frond__dec_i64(s, id);
  b->data[b->len++] = '$';
  b->len += frond__dec_u64(b->data + b->len, n);
  b->data[b->len++] = '\r';
  b->data[b->len++] = '\n';
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len++] = '\r';
  b->data[b->len++] = '\n';
}

/* The room one put_id takes at most: "$20\r\n" + 20 digits + "\r\n". */
#define ID_MAX (FROND__DEC_MAX + 7)

void frond__resp_id(frond__resp_ctx *x, int64_t id) {
  if (frond__buf_reserve(x->out, ID_MAX) != 0) {
    x->close = 1;
    return;
  }
  put_id(x->out, id);
}

void frond__resp_ids(frond__resp_ctx *x, const int64_t *ids, size_t n) {
  size_t i;
  if (frond__buf_reserve(x->out, FROND__DEC_MAX + 3 + n * ID_MAX) != 0) {
    x->close = 1;
    return;
  }
  frond__resp_array(x, (int64_t)n);
  for (i = 0; i < n; i++)
    put_id(x->out, ids[i]);
}

/* "-CODE message\r\n". A reply line cannot hold CR or LF, and control bytes
** from a client's argument are no use to a person reading it: they become
** spaces, as in Redis' own error replies. */
void frond__resp_error(frond__resp_ctx *x, const char *code, const char *fmt,
                       ...) {
  char msg[600];
  va_list ap;
  size_t i, n;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  n = strlen(msg);
  for (i = 0; i < n; i++)
    if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
      msg[i] = ' ';
  x->failed = 1;
  if (frond__buf_printf(x->out, "-%s%s%s\r\n", code, n ? " " : "", msg) != 0)
    x->close = 1;
}

/* A library error under its stable name ("-TAG_NOT_FOUND ..."). */
void frond__resp_lib_error(frond__resp_ctx *x, int code,
                           const frond_error *err) {
  /* Credentials answer as Redis' ACLs do. */
  frond__resp_error(x,
                    code == FROND_EFORBIDDEN      ? "NOPERM"
                    : code == FROND_EUNAUTHORIZED ? "NOAUTH"
                                                  : frond_err_name(code),
                    "%s",
                    err != NULL && err->code != 0 ? err->message
                                                  : frond_strerror(code));
}

void frond__resp_strings(frond__resp_ctx *x, const char *s, size_t n,
                         size_t stride) {
  size_t i;
  if (frond__buf_reserve(x->out, 16 + n * (stride + 16)) != 0) {
    x->close = 1;
    return;
  }
  frond__resp_array(x, (int64_t)n);
  for (i = 0; i < n; i++, s += stride)
    frond__resp_bulk(x, s, strlen(s));
}

int frond__resp_arg_digits(const frond__resp_arg *a) {
  size_t i;
  for (i = 0; i < a->len; i++)
    if (a->p[i] < '0' || a->p[i] > '9')
      return 0;
  return a->len > 0;
}

int frond__resp_arg_is(const frond__resp_arg *a, const char *s) {
  size_t n = strlen(s);
  return a->len == n && strncasecmp(a->p, s, n) == 0;
}

/* The argument as a NUL-terminated string in buf[cap], truncated. */
const char *frond__resp_arg_str(const frond__resp_arg *a, char *buf,
                                size_t cap) {
  size_t n = a->len < cap - 1 ? a->len : cap - 1;
  memcpy(buf, a->p, n);
  buf[n] = '\0';
  return buf;
}

void frond__resp_wrong_args(frond__resp_ctx *x, const char *name) {
  frond__resp_error(x, "ERR", "wrong number of arguments for '%s' command",
                    name);
}

void frond__resp_count(frond__resp_ctx *x) {
  frond__resp_stats *st = FROND__RESP_STATS(x);
  FROND__INC(st->commands[x->cmd][x->failed], 1);
  if (x->t0 != 0)
    frond__hist_add(&st->duration[x->cmd], frond__clock_ns() - x->t0);
}

/* ------------------------------------------------ through the request layer */

int frond__resp_count_arg(frond__resp_ctx *x, frond__req *r, size_t i) {
  const frond__resp_arg *a = i < x->argc ? &x->argv[i] : NULL;
  if (frond__req_count(r, x->srv, a ? a->p : NULL, a ? a->len : 0) == 0)
    return 0;
  frond__resp_lib_error(x, r->rc, &r->err);
  return -1;
}

/* INCR and INCRBY answer an integer, as Redis does (INCRBY n: the last of
** its n IDs); ID.* answer IDs (bulk strings, exact in every client),
** ID.RANGE the range [start, end) as two of them. */
static void answer(const frond__req *r, void *ctx) {
  frond__resp_ctx *x = ctx;
  int64_t ends[2];
  if (r->rc != 0) {
    frond__resp_lib_error(x, r->rc, &r->err);
  } else if (r->op == FROND__REQ_FORMAT) {
    frond__resp_strings(x, r->strs, r->n, r->nf->stride);
  } else if (r->op == FROND__REQ_RANGE && x->cmd == FROND__RC_INCRBY) {
    frond__resp_int(x, r->start + (int64_t)r->n - 1);
  } else if (r->op == FROND__REQ_RANGE) {
    ends[0] = r->start;
    ends[1] = r->start + (int64_t)r->n;
    frond__resp_ids(x, ends, 2);
  } else if (x->cmd == FROND__RC_INCR || x->cmd == FROND__RC_INCRBY) {
    frond__resp_int(x, r->ids[0]);
  } else {
    frond__resp_ids(x, r->ids, r->n);
  }
}

static void keep(void *ctx) {
  frond__resp_ctx *x = ctx;
  x->argv = NULL;
  x->argc = 0;
}

/* Counted now that its result is known (execute skipped it). */
static int done(const frond__req *r, void *ctx, int gone) {
  frond__resp_ctx *x = ctx;
  (void)r;
  (void)gone;
  frond__resp_count(x);
  return x->close;
}

static const frond__req_how ids_how = {sizeof(frond__resp_ctx), keep, answer,
                                       done, NULL};

void frond__resp_run(frond__resp_ctx *x, frond__req *r) {
  r->how = &ids_how;
  r->ctx = x;
  frond__req_run(x->c, r);
}
