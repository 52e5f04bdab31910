/* SPDX-License-Identifier: Apache-2.0 */
/*
** hiredis_client.c -- hiredis (the C client) against a running frond serve,
** for tests/integration/test_clients.py.
**
**   hiredis_client PORT [PASSWORD]
**
** Checks what a C program relies on: IDs as strings of digits that the
** server's own ID.DECODE gives back, increasing and unique; INCR an
** integer; an unknown tag a REDIS_REPLY_ERROR starting with its code;
** 1,000 commands pipelined (redisAppendCommand, then the replies) answered
** in order. Prints the IDs it got, one per line ("snowflake N" or
** "segment N"), for the caller to check across clients; exits 0, or
** prints why on stderr and exits 1.
*/
#include <hiredis/hiredis.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redisContext *c;

static void fail(const char *what, const redisReply *r) {
  fprintf(stderr, "hiredis: %s (reply type %d, %s)\n", what,
          r != NULL ? r->type : -1,
          r == NULL ? c->errstr
          : r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ||
                  r->type == REDIS_REPLY_STRING
              ? r->str
              : "");
  exit(1);
}

static redisReply *cmd(const char *fmt, ...) {
  va_list ap;
  redisReply *r;
  va_start(ap, fmt);
  r = redisvCommand(c, fmt, ap);
  va_end(ap);
  if (r == NULL)
    fail("no reply", NULL);
  return r;
}

/* An ID reply element: a string of digits. Returns its value. */
static unsigned long long id_of(const redisReply *e, const char *what) {
  size_t i;
  if (e->type != REDIS_REPLY_STRING || e->len == 0 || e->len > 19)
    fail(what, e);
  for (i = 0; i < e->len; i++)
    if (e->str[i] < '0' || e->str[i] > '9')
      fail(what, e);
  return strtoull(e->str, NULL, 10);
}

/* ID.DECODE's "id" field (a flat array under RESP2) must be id. */
static void check_decode(const redisReply *id) {
  redisReply *d = cmd("ID.DECODE %b", id->str, id->len);
  size_t i;
  if (d->type != REDIS_REPLY_ARRAY || d->elements != 18)
    fail("ID.DECODE: not 18 elements", d);
  for (i = 0; i + 1 < d->elements; i += 2)
    if (strcmp(d->element[i]->str, "id") == 0) {
      const redisReply *v = d->element[i + 1];
      if (v->type != REDIS_REPLY_STRING || v->len != id->len ||
          memcmp(v->str, id->str, id->len) != 0)
        fail("ID.DECODE: another id", v);
      freeReplyObject(d);
      return;
    }
  fail("ID.DECODE: no id field", d);
}

int main(int argc, char **argv) {
  struct timeval tv = {10, 0};
  unsigned long long prev = 0, v;
  long long a, b, last;
  redisReply *r;
  size_t i;
  if (argc < 2) {
    fprintf(stderr, "usage: hiredis_client PORT [PASSWORD]\n");
    return 2;
  }
  c = redisConnectWithTimeout("127.0.0.1", atoi(argv[1]), tv);
  if (c == NULL || c->err) {
    fprintf(stderr, "hiredis: connect: %s\n", c ? c->errstr : "no memory");
    return 1;
  }
  redisSetTimeout(c, tv);
  if (argc > 2) {
    r = cmd("AUTH %s", argv[2]);
    if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0)
      fail("AUTH", r);
    freeReplyObject(r);
  }
  /* Snowflake IDs: strings, increasing, and the server decodes each back
  ** to itself. */
  r = cmd("ID.SNOWFLAKE 5");
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 5)
    fail("ID.SNOWFLAKE 5", r);
  for (i = 0; i < r->elements; i++) {
    v = id_of(r->element[i], "ID.SNOWFLAKE: not a string of digits");
    if (v <= prev)
      fail("ID.SNOWFLAKE: not increasing", r->element[i]);
    prev = v;
    check_decode(r->element[i]);
    printf("snowflake %s\n", r->element[i]->str);
  }
  freeReplyObject(r);
  /* INCR: an integer, as Redis answers it. */
  r = cmd("INCR order");
  if (r->type != REDIS_REPLY_INTEGER)
    fail("INCR: not an integer", r);
  a = r->integer;
  freeReplyObject(r);
  r = cmd("INCR order");
  if (r->type != REDIS_REPLY_INTEGER || r->integer <= a)
    fail("INCR: not increasing", r);
  b = r->integer;
  freeReplyObject(r);
  printf("segment %lld\nsegment %lld\n", a, b);
  /* An error reply, with its code; the connection goes on. */
  r = cmd("INCR nope");
  if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, "TAG_NOT_FOUND ", 14))
    fail("INCR nope: not -TAG_NOT_FOUND", r);
  freeReplyObject(r);
  /* 1,000 commands in one batch, every 100th failing, in order. */
  for (i = 0; i < 1000; i++)
    if (redisAppendCommand(c, i % 100 == 50 ? "INCR nope" : "INCR order") !=
        REDIS_OK)
      fail("redisAppendCommand", NULL);
  last = b;
  for (i = 0; i < 1000; i++) {
    if (redisGetReply(c, (void **)&r) != REDIS_OK)
      fail("redisGetReply", NULL);
    if (i % 100 == 50) {
      if (r->type != REDIS_REPLY_ERROR ||
          strncmp(r->str, "TAG_NOT_FOUND ", 14) != 0)
        fail("pipelined INCR nope", r);
    } else {
      if (r->type != REDIS_REPLY_INTEGER || r->integer <= last)
        fail("pipelined INCR out of order", r);
      last = r->integer;
      printf("segment %lld\n", last);
    }
    freeReplyObject(r);
  }
  redisFree(c);
  return 0;
}
