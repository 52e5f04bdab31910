/*
** resp_reply.c -- RESP2 replies, appended to the connection's output.
**
** Integers are written with the server's one decimal formatter and no
** printf: INCR's reply is the hot path. Once a command's reply is queued,
** frond__resp_count counts it, with its latency.
*/
#include "server/resp.h"

#include "base/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* "<type><v>\r\n", the header of integers, arrays and bulk strings. */
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

void frond__resp_int(frond__resp_ctx *x, int64_t v) {
  reply_num(x, ':', v);
}

void frond__resp_array(frond__resp_ctx *x, int64_t n) {
  reply_num(x, '*', n);
}

void frond__resp_bulk(frond__resp_ctx *x, const char *p, size_t n) {
  reply_num(x, '$', (int64_t)n);
  if (frond__buf_append(x->out, p, n) != 0 ||
      frond__buf_append(x->out, "\r\n", 2) != 0)
    x->close = 1;
}

void frond__resp_cstr(frond__resp_ctx *x, const char *s) {
  frond__resp_bulk(x, s, strlen(s));
}

void frond__resp_nil(frond__resp_ctx *x) {
  if (frond__buf_append(x->out, "$-1\r\n", 5) != 0)
    x->close = 1;
}

void frond__resp_status(frond__resp_ctx *x, const char *s) {
  if (frond__buf_printf(x->out, "+%s\r\n", s) != 0)
    x->close = 1;
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
  frond__resp_error(x, frond_err_name(code), "%s",
                    err != NULL && err->code != 0 ? err->message
                                                  : frond_strerror(code));
}

void frond__resp_ids(frond__resp_ctx *x, const int64_t *ids, size_t n) {
  size_t i;
  if (frond__buf_reserve(x->out, 16 + n * 24) != 0) {
    x->close = 1;
    return;
  }
  frond__resp_array(x, (int64_t)n);
  for (i = 0; i < n; i++)
    frond__resp_int(x, ids[i]);
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
