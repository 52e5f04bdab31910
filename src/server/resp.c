/*
** resp.c -- the Redis protocol (RESP2) front.
**
** Any Redis client can fetch IDs: `INCR <tag>` answers the next segment ID
** of the tag as an integer, which makes Frond a drop-in for services that
** count with Redis INCR today, without Redis' lost increments after a
** crash. ID.* commands add batches, snowflake IDs and decoding; PING,
** HELLO, AUTH, SELECT 0, CLIENT, COMMAND and INFO are answered the way
** Redis answers them, so that clients connect unmodified.
**
** on_data parses one command (resp_parse.c), answers it synchronously into
** the connection's output and returns the bytes consumed, so pipelined
** commands are answered in order and written in one batch per read (the
** connection layer flushes after each read). An error reply leaves the
** connection usable; a protocol error is answered, then the connection is
** closed, as Redis does.
*/
#include "server/server.h"

#include "core/internal.h"
#include "server/resp_parse.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Before AUTH, commands are bounded as Redis bounds unauthenticated
** clients: at most 10 arguments of at most 16 KiB. */
#define UNAUTH_MAX_ARGS 10
#define UNAUTH_MAX_BULK 16384
#define CLIENT_NAME_MAX 128

typedef struct resp_state {
  uint64_t id;
  int authed;
  char name[CLIENT_NAME_MAX + 1];
  char lib_name[CLIENT_NAME_MAX + 1];
  char lib_ver[CLIENT_NAME_MAX + 1];
} resp_state;

/* One command being answered. */
typedef struct rx {
  frond__conn *c;
  frond__worker *w;
  frond__server *srv;
  resp_state *st;
  frond__buf *out;
  const frond__resp_arg *argv;
  size_t argc;
  int failed; /* an error reply was written */
  int close;  /* close once the reply is written */
} rx;

typedef struct resp_cmd {
  const char *name; /* lower case, as COMMAND lists it */
  int id;           /* FROND__RC_* */
  int min, max;     /* argument count including the name; max -1: any */
  int noauth;       /* allowed before AUTH */
  int key;          /* argv[1] is a key (the tag), for cluster-aware clients */
  const char *flags;
  void (*fn)(rx *x);
} resp_cmd;

static _Atomic uint64_t next_client_id = 1;

/* ---------------------------------------------------------------- replies */

/* Decimal text of v ending at end; returns the start. */
static char *i64_text(int64_t v, char *end) {
  char *p = end;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0)
    *--p = '-';
  return p;
}

/* "<type><v>\r\n", the header of integers, arrays and bulk strings. */
static void reply_num(rx *x, char type, int64_t v) {
  char num[24], *p = i64_text(v, num + sizeof num);
  size_t n = (size_t)(num + sizeof num - p);
  if (frond__buf_reserve(x->out, n + 3) != 0) {
    x->close = 1;
    return;
  }
  x->out->data[x->out->len++] = type;
  memcpy(x->out->data + x->out->len, p, n);
  memcpy(x->out->data + x->out->len + n, "\r\n", 2);
  x->out->len += n + 2;
}

static void reply_int(rx *x, int64_t v) {
  reply_num(x, ':', v);
}

static void reply_array(rx *x, int64_t n) {
  reply_num(x, '*', n);
}

static void reply_bulk(rx *x, const char *p, size_t n) {
  reply_num(x, '$', (int64_t)n);
  if (frond__buf_append(x->out, p, n) != 0 ||
      frond__buf_append(x->out, "\r\n", 2) != 0)
    x->close = 1;
}

static void reply_cstr(rx *x, const char *s) {
  reply_bulk(x, s, strlen(s));
}

static void reply_nil(rx *x) {
  if (frond__buf_append(x->out, "$-1\r\n", 5) != 0)
    x->close = 1;
}

static void reply_status(rx *x, const char *s) {
  if (frond__buf_printf(x->out, "+%s\r\n", s) != 0)
    x->close = 1;
}

/* "-CODE message\r\n". A reply line cannot hold CR or LF, and control bytes
** from a client's argument are no use to a person reading it: they become
** spaces, as in Redis' own error replies. */
static void reply_error(rx *x, const char *code, const char *fmt, ...)
    FROND__PRINTF(3, 4);
static void reply_error(rx *x, const char *code, const char *fmt, ...) {
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
static void reply_lib_error(rx *x, int code, const frond_error *err) {
  reply_error(x, frond_err_name(code), "%s",
              err != NULL && err->code != 0 ? err->message
                                            : frond_strerror(code));
}

static void reply_ids(rx *x, const int64_t *ids, size_t n) {
  size_t i;
  if (frond__buf_reserve(x->out, 16 + n * 24) != 0) {
    x->close = 1;
    return;
  }
  reply_array(x, (int64_t)n);
  for (i = 0; i < n; i++)
    reply_int(x, ids[i]);
}

static int arg_is(const frond__resp_arg *a, const char *s) {
  size_t n = strlen(s);
  return a->len == n && strncasecmp(a->p, s, n) == 0;
}

/* The argument as a NUL-terminated string in buf[cap], truncated. */
static const char *arg_str(const frond__resp_arg *a, char *buf, size_t cap) {
  size_t n = a->len < cap - 1 ? a->len : cap - 1;
  memcpy(buf, a->p, n);
  buf[n] = '\0';
  return buf;
}

/* ----------------------------------------------------------------- IDs */

/* Parse argv[i] as a count in [1, max_count]; 0 after an error reply. */
static size_t get_count(rx *x, size_t i) {
  int64_t n;
  if (i >= x->argc)
    return 1;
  if (frond__parse_i64(x->argv[i].p, x->argv[i].len, &n) != 0 || n < 1 ||
      n > x->srv->cfg.max_count) {
    reply_error(x, "COUNT_INVALID", "count must be an integer in [1, %lld]",
                (long long)x->srv->cfg.max_count);
    return 0;
  }
  return (size_t)n;
}

static void cmd_incr(rx *x) {
  frond_error err = {0, ""};
  int r = frond__ids_segment(x->w, x->argv[1].p, x->argv[1].len, 1, &err);
  if (r != 0) {
    reply_lib_error(x, r, &err);
    return;
  }
  reply_int(x, x->w->ids[0]);
}

/* INCRBY <tag> 1 is what some clients send for INCR (redis-py's incr()).
** A larger increment would promise the caller every ID below the answer,
** which a batch that spans two segments does not hold: ID.NEXT answers
** batches. */
static void cmd_incrby(rx *x) {
  int64_t by;
  if (frond__parse_i64(x->argv[2].p, x->argv[2].len, &by) != 0 || by != 1) {
    reply_error(x, "COUNT_INVALID",
                "INCRBY takes an increment of 1 only; use ID.NEXT <tag> "
                "<count> for a batch");
    return;
  }
  cmd_incr(x);
}

static void cmd_id_next(rx *x) {
  frond_error err = {0, ""};
  size_t n;
  int r;
  if ((n = get_count(x, 2)) == 0)
    return;
  r = frond__ids_segment(x->w, x->argv[1].p, x->argv[1].len, n, &err);
  if (r != 0) {
    reply_lib_error(x, r, &err);
    return;
  }
  reply_ids(x, x->w->ids, n);
}

static void cmd_id_snowflake(rx *x) {
  frond_error err = {0, ""};
  size_t n;
  int r;
  if ((n = get_count(x, 1)) == 0)
    return;
  if ((r = frond__ids_snowflake(x->w, n, &err)) != 0) {
    reply_lib_error(x, r, &err);
    return;
  }
  reply_ids(x, x->w->ids, n);
}

/* Field/value pairs, flat, as HGETALL answers under RESP2. */
static void cmd_id_decode(rx *x) {
  frond_error err = {0, ""};
  frond_fields f;
  int64_t id;
  char when[40], spec[160];
  int r;
  if (frond__parse_i64(x->argv[1].p, x->argv[1].len, &id) != 0) {
    reply_error(x, "ID_INVALID", "the ID must be a decimal integer");
    return;
  }
  if ((r = frond_decode(&x->srv->layout, id, &f, &err)) != 0) {
    reply_lib_error(x, r, &err);
    return;
  }
  frond__format_rfc3339(f.unix_ms, when, sizeof when);
  frond_layout_format(&x->srv->layout, spec, sizeof spec);
  reply_array(x, 18);
  reply_cstr(x, "id");
  reply_int(x, id);
  reply_cstr(x, "time");
  reply_cstr(x, when);
  reply_cstr(x, "unix_ms");
  reply_int(x, f.unix_ms);
  reply_cstr(x, "time_units");
  reply_int(x, f.time);
  reply_cstr(x, "node");
  reply_int(x, (int64_t)f.node);
  reply_cstr(x, "datacenter");
  reply_int(x, (int64_t)f.datacenter);
  reply_cstr(x, "worker");
  reply_int(x, (int64_t)f.worker);
  reply_cstr(x, "sequence");
  reply_int(x, (int64_t)f.sequence);
  reply_cstr(x, "layout");
  reply_cstr(x, spec);
}

static void cmd_id_tags(rx *x) {
  frond_error err = {0, ""};
  frond_tag_info *tags = NULL;
  size_t n = 0, i;
  int r;
  frond_seg *seg = atomic_load(&x->srv->seg);
  if (seg == NULL) {
    reply_array(x, 0);
    return;
  }
  if ((r = frond_seg_tags(seg, &tags, &n, &err)) != 0) {
    reply_lib_error(x, r, &err);
    return;
  }
  reply_array(x, (int64_t)n);
  for (i = 0; i < n; i++)
    reply_cstr(x, tags[i].tag);
  frond_free(tags);
}

/* ------------------------------------------------------- connection */

static void cmd_ping(rx *x) {
  if (x->argc == 2)
    reply_bulk(x, x->argv[1].p, x->argv[1].len);
  else
    reply_status(x, "PONG");
}

static void cmd_echo(rx *x) {
  reply_bulk(x, x->argv[1].p, x->argv[1].len);
}

static void cmd_quit(rx *x) {
  reply_status(x, "OK");
  x->close = 1;
}

static void set_authed(rx *x, int authed) {
  x->st->authed = authed;
  x->c->idle_ms = authed ? (uint64_t)x->srv->cfg.resp_idle_timeout_ms
                         : (uint64_t)x->srv->cfg.header_timeout_ms;
}

/* Check user (NULL: "default") and password against admin_token in
** constant time; answers the error itself. 1 when they match. */
static int check_auth(rx *x, const frond__resp_arg *user,
                      const frond__resp_arg *pass) {
  const char *tok = x->srv->cfg.admin_token;
  size_t tl = strlen(tok), i;
  unsigned char diff = 0;
  if (tl == 0) {
    reply_error(x, "ERR",
                "AUTH <password> called without any password configured for "
                "the default user. Are you sure your configuration is "
                "correct?");
    return 0;
  }
  if (user != NULL && !(user->len == 7 && memcmp(user->p, "default", 7) == 0))
    diff = 1;
  if (pass->len != tl)
    diff = 1;
  else
    for (i = 0; i < tl; i++)
      diff |= (unsigned char)(pass->p[i] ^ tok[i]);
  if (diff != 0) {
    FROND__INC(x->w->m.resp.auth_failures, 1);
    reply_error(x, "WRONGPASS",
                "invalid username-password pair or user is disabled.");
    return 0;
  }
  set_authed(x, 1);
  return 1;
}

static void cmd_auth(rx *x) {
  if (x->argc == 2 ? check_auth(x, NULL, &x->argv[1])
                   : check_auth(x, &x->argv[1], &x->argv[2]))
    reply_status(x, "OK");
}

static int set_name(rx *x, const frond__resp_arg *a) {
  size_t i;
  for (i = 0; i < a->len; i++)
    if (a->p[i] <= ' ' || a->p[i] > '~') {
      reply_error(x, "ERR",
                  "Client names cannot contain spaces, newlines or special "
                  "characters.");
      return -1;
    }
  if (a->len > CLIENT_NAME_MAX) {
    reply_error(x, "ERR", "Client name longer than %d bytes", CLIENT_NAME_MAX);
    return -1;
  }
  arg_str(a, x->st->name, sizeof x->st->name);
  return 0;
}

/* HELLO [protover [AUTH user pass] [SETNAME name]]: RESP2 only. */
static void cmd_hello(rx *x) {
  size_t i, setname = 0;
  int64_t ver;
  int authed_here = 0;
  if (x->argc >= 2) {
    if (frond__parse_i64(x->argv[1].p, x->argv[1].len, &ver) != 0) {
      reply_error(x, "ERR",
                  "Protocol version is not an integer or out of range");
      return;
    }
    if (ver != 2) {
      reply_error(x, "NOPROTO", "unsupported protocol version");
      return;
    }
  }
  for (i = 2; i < x->argc; i++) {
    size_t more = x->argc - i - 1;
    if (arg_is(&x->argv[i], "AUTH") && more >= 2) {
      if (!check_auth(x, &x->argv[i + 1], &x->argv[i + 2]))
        return;
      authed_here = 1;
      i += 2;
    } else if (arg_is(&x->argv[i], "SETNAME") && more >= 1) {
      setname = ++i;
    } else {
      char opt[64];
      reply_error(x, "ERR", "Syntax error in HELLO option '%s'",
                  arg_str(&x->argv[i], opt, sizeof opt));
      return;
    }
  }
  if (!x->st->authed && !authed_here) {
    reply_error(x, "NOAUTH",
                "HELLO must be called with the client already "
                "authenticated, otherwise the HELLO <proto> AUTH <user> "
                "<pass> option can be used to authenticate the client and "
                "select the RESP protocol version at the same time");
    return;
  }
  if (setname != 0 && set_name(x, &x->argv[setname]) != 0)
    return;
  reply_array(x, 14);
  reply_cstr(x, "server");
  reply_cstr(x, "frond");
  reply_cstr(x, "version");
  reply_cstr(x, FROND_VERSION_STRING);
  reply_cstr(x, "proto");
  reply_int(x, 2);
  reply_cstr(x, "id");
  reply_int(x, (int64_t)x->st->id);
  reply_cstr(x, "mode");
  reply_cstr(x, "standalone");
  reply_cstr(x, "role");
  reply_cstr(x, "master");
  reply_cstr(x, "modules");
  reply_array(x, 0);
}

static void cmd_select(rx *x) {
  int64_t db;
  if (frond__parse_i64(x->argv[1].p, x->argv[1].len, &db) != 0)
    reply_error(x, "ERR", "value is not an integer or out of range");
  else if (db != 0)
    reply_error(x, "ERR", "DB index is out of range");
  else
    reply_status(x, "OK");
}

static void cmd_reset(rx *x) {
  x->st->name[0] = '\0';
  set_authed(x, x->srv->cfg.admin_token[0] == '\0');
  reply_status(x, "RESET");
}

static void client_info(rx *x, frond__buf *b) {
  struct sockaddr_storage ss;
  char host[64] = "?";
  int len = sizeof ss, port = 0;
  if (uv_tcp_getpeername(&x->c->tcp, (struct sockaddr *)&ss, &len) == 0) {
    if (ss.ss_family == AF_INET6) {
      uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof host);
      port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    } else {
      uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof host);
      port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
  }
  frond__buf_printf(b,
                    "id=%llu addr=%s:%d name=%s db=0 lib-name=%s lib-ver=%s "
                    "resp=2 user=default\n",
                    (unsigned long long)x->st->id, host, port, x->st->name,
                    x->st->lib_name, x->st->lib_ver);
}

static void wrong_args(rx *x, const char *name) {
  reply_error(x, "ERR", "wrong number of arguments for '%s' command", name);
}

static void cmd_client(rx *x) {
  const frond__resp_arg *sub = &x->argv[1];
  char s[64];
  if (arg_is(sub, "SETNAME")) {
    if (x->argc != 3)
      wrong_args(x, "client|setname");
    else if (set_name(x, &x->argv[2]) == 0)
      reply_status(x, "OK");
  } else if (arg_is(sub, "GETNAME")) {
    if (x->st->name[0] == '\0')
      reply_nil(x);
    else
      reply_cstr(x, x->st->name);
  } else if (arg_is(sub, "ID")) {
    reply_int(x, (int64_t)x->st->id);
  } else if (arg_is(sub, "SETINFO")) {
    char *field;
    if (x->argc != 4) {
      wrong_args(x, "client|setinfo");
      return;
    }
    if (arg_is(&x->argv[2], "LIB-NAME"))
      field = x->st->lib_name;
    else if (arg_is(&x->argv[2], "LIB-VER"))
      field = x->st->lib_ver;
    else {
      reply_error(x, "ERR", "Unrecognized option '%s'",
                  arg_str(&x->argv[2], s, sizeof s));
      return;
    }
    arg_str(&x->argv[3], field, CLIENT_NAME_MAX + 1);
    reply_status(x, "OK");
  } else if (arg_is(sub, "INFO") || arg_is(sub, "LIST")) {
    /* LIST shows this connection only: the others live on other loops. */
    frond__buf b = {NULL, 0, 0};
    client_info(x, &b);
    reply_bulk(x, b.data ? b.data : "", b.len);
    frond__buf_free(&b);
  } else if (arg_is(sub, "NO-EVICT") || arg_is(sub, "NO-TOUCH")) {
    reply_status(x, "OK");
  } else {
    reply_error(x, "ERR", "unknown subcommand '%s'. Try CLIENT HELP.",
                arg_str(sub, s, sizeof s));
  }
}

/* CONFIG GET answers no parameter (an empty list, as Redis answers an
** unknown one): redis-benchmark asks for save and appendonly at start.
** Frond is configured by its file, environment and flags, not here. */
static void cmd_config(rx *x) {
  char s[64];
  if (arg_is(&x->argv[1], "GET"))
    reply_array(x, 0);
  else
    reply_error(x, "ERR", "unknown subcommand '%s'. Try CONFIG HELP.",
                arg_str(&x->argv[1], s, sizeof s));
}

static void cmd_command(rx *x);
static void cmd_info(rx *x);

/* Sorted by how often clients send them. */
static const resp_cmd commands[] = {
    {"incr", FROND__RC_INCR, 2, 2, 0, 1, "write fast", cmd_incr},
    {"incrby", FROND__RC_INCRBY, 3, 3, 0, 1, "write fast", cmd_incrby},
    {"id.next", FROND__RC_ID_NEXT, 2, 3, 0, 1, "write", cmd_id_next},
    {"id.snowflake", FROND__RC_ID_SNOWFLAKE, 1, 2, 0, 0, "write",
     cmd_id_snowflake},
    {"id.decode", FROND__RC_ID_DECODE, 2, 2, 0, 0, "readonly fast",
     cmd_id_decode},
    {"id.tags", FROND__RC_ID_TAGS, 1, 1, 0, 0, "readonly", cmd_id_tags},
    {"ping", FROND__RC_PING, 1, 2, 1, 0, "fast stale", cmd_ping},
    {"echo", FROND__RC_ECHO, 2, 2, 0, 0, "fast", cmd_echo},
    {"quit", FROND__RC_QUIT, 1, -1, 1, 0, "noscript loading stale fast",
     cmd_quit},
    {"hello", FROND__RC_HELLO, 1, -1, 1, 0, "noscript loading stale fast",
     cmd_hello},
    {"auth", FROND__RC_AUTH, 2, 3, 1, 0, "noscript loading stale fast",
     cmd_auth},
    {"select", FROND__RC_SELECT, 2, 2, 0, 0, "loading stale fast", cmd_select},
    {"client", FROND__RC_CLIENT, 2, -1, 0, 0, "noscript loading stale",
     cmd_client},
    {"command", FROND__RC_COMMAND, 1, -1, 0, 0, "loading stale", cmd_command},
    {"info", FROND__RC_INFO, 1, -1, 0, 0, "loading stale", cmd_info},
    {"config", FROND__RC_CONFIG, 2, -1, 0, 0, "admin noscript loading stale",
     cmd_config},
    {"reset", FROND__RC_RESET, 1, 1, 0, 0, "noscript loading stale fast",
     cmd_reset},
};

static const resp_cmd *find_command(const frond__resp_arg *a) {
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(commands); i++)
    if (arg_is(a, commands[i].name))
      return &commands[i];
  return NULL;
}

/* One COMMAND INFO entry, in Redis 7's ten-field shape. */
static void command_entry(rx *x, const resp_cmd *k) {
  const char *f = k->flags, *sp;
  int nflags = 1;
  for (sp = f; *sp; sp++)
    nflags += *sp == ' ';
  reply_array(x, 10);
  reply_cstr(x, k->name);
  reply_int(x, k->min == k->max ? k->min : -k->min);
  reply_array(x, nflags);
  while (*f) {
    sp = strchr(f, ' ');
    if (sp == NULL)
      sp = f + strlen(f);
    reply_bulk(x, f, (size_t)(sp - f));
    f = *sp ? sp + 1 : sp;
  }
  reply_int(x, k->key);
  reply_int(x, k->key);
  reply_int(x, k->key);
  reply_array(x, 0);
  reply_array(x, 0);
  reply_array(x, 0);
  reply_array(x, 0);
}

static void cmd_command(rx *x) {
  size_t i, n = FROND__ARRAY_SIZE(commands);
  char s[64];
  if (x->argc == 1) {
    reply_array(x, (int64_t)n);
    for (i = 0; i < n; i++)
      command_entry(x, &commands[i]);
  } else if (arg_is(&x->argv[1], "COUNT")) {
    reply_int(x, (int64_t)n);
  } else if (arg_is(&x->argv[1], "LIST")) {
    reply_array(x, (int64_t)n);
    for (i = 0; i < n; i++)
      reply_cstr(x, commands[i].name);
  } else if (arg_is(&x->argv[1], "INFO")) {
    reply_array(x, (int64_t)(x->argc - 2));
    for (i = 2; i < x->argc; i++) {
      const resp_cmd *k = find_command(&x->argv[i]);
      if (k == NULL)
        reply_nil(x);
      else
        command_entry(x, k);
    }
  } else if (arg_is(&x->argv[1], "DOCS")) {
    /* No docs: redis-cli then falls back to its built-in help. */
    reply_array(x, 0);
  } else {
    reply_error(x, "ERR", "unknown subcommand '%s'. Try COMMAND HELP.",
                arg_str(&x->argv[1], s, sizeof s));
  }
}

/* ---------------------------------------------------------------- INFO */

#define RSUM(field) resp_sum(srv, offsetof(frond__metrics, field))

static uint64_t resp_sum(frond__server *srv, size_t off) {
  uint64_t s = 0;
  int i;
  for (i = 0; i < srv->nworkers; i++)
    s += FROND__GET(
        *(frond__counter *)(void *)((char *)&srv->workers[i].m + off));
  return s;
}

static uint64_t commands_sum(frond__server *srv, int result) {
  uint64_t s = 0;
  int k;
  for (k = 0; k < FROND__RC_COUNT; k++)
    s += RSUM(resp.commands[k][result]);
  return s;
}

/* INFO's own way to write a tag name: no ':', ',', '=' or spaces. */
static void info_name(char *dst, size_t cap, const char *s) {
  size_t n = 0;
  for (; *s && n + 1 < cap; s++)
    dst[n++] = strchr(":,= ", *s) != NULL ? '_' : *s;
  dst[n] = '\0';
}

static void info_section(frond__server *srv, frond__buf *b, int which) {
  int64_t now = frond_clock_realtime(NULL), up = (now - srv->start_ms) / 1000;
  uint64_t resp_open = RSUM(resp.accepted) - RSUM(resp.closed);
  uint64_t all_open = (uint64_t)atomic_load(&srv->nconns);
  frond_gen_stats gs;
  switch (which) {
  case 0:
    /* redis_version is the protocol level Frond answers as: clients gate
    ** features on it. */
    frond__buf_printf(
        b,
        "# Server\r\nredis_version:7.0.0\r\nfrond_version:%s\r\n"
        "redis_mode:standalone\r\narch_bits:%d\r\nprocess_id:%ld\r\n"
        "tcp_port:%d\r\nuptime_in_seconds:%lld\r\nuptime_in_days:%lld\r\n"
        "io_threads_active:%d\r\n\r\n",
        FROND_VERSION_STRING, (int)(sizeof(void *) * 8), (long)getpid(),
        srv->resp_port, (long long)up, (long long)(up / 86400), srv->nworkers);
    break;
  case 1:
    frond__buf_printf(
        b,
        "# Clients\r\nconnected_clients:%llu\r\n"
        "http_connections:%llu\r\nmaxclients:%lld\r\n\r\n",
        (unsigned long long)resp_open,
        (unsigned long long)(all_open > resp_open ? all_open - resp_open : 0),
        (long long)srv->cfg.max_connections);
    break;
  case 2:
    frond__buf_printf(
        b,
        "# Stats\r\ntotal_connections_received:%llu\r\n"
        "total_commands_processed:%llu\r\ntotal_error_replies:%llu\r\n"
        "rejected_connections:%llu\r\nprotocol_errors:%llu\r\n"
        "auth_failures:%llu\r\n\r\n",
        (unsigned long long)RSUM(resp.accepted),
        (unsigned long long)(commands_sum(srv, 0) + commands_sum(srv, 1)),
        (unsigned long long)commands_sum(srv, 1),
        (unsigned long long)RSUM(rejected),
        (unsigned long long)RSUM(resp.protocol_errors),
        (unsigned long long)RSUM(resp.auth_failures));
    break;
  case 3: {
    char spec[160];
    frond_layout_format(&srv->layout, spec, sizeof spec);
    frond_gen_stats_get(srv->gen, &gs);
    frond__buf_printf(
        b,
        "# Snowflake\r\nnode:%llu\r\nlayout:%s\r\nlayout_spec:%s\r\n"
        "ids_issued:%llu\r\nborrowed_units:%llu\r\nclock_waits:%llu\r\n"
        "clock_behind:%llu\r\nahead_ms:%lld\r\n\r\n",
        (unsigned long long)srv->node, srv->layout.name, spec,
        (unsigned long long)RSUM(ids_snowflake),
        (unsigned long long)gs.borrowed, (unsigned long long)gs.waits,
        (unsigned long long)gs.clock_behind, (long long)gs.ahead_ms);
    break;
  }
  case 4: {
    frond_seg_stats ss;
    frond_tag_info *tags = NULL;
    frond_seg *seg = atomic_load(&srv->seg);
    size_t n = 0, i;
    frond__buf_printf(b, "# Segment\r\n");
    if (seg == NULL) {
      frond__buf_printf(b, "enabled:%d\r\nstore_up:0\r\n\r\n",
                        srv->seg_enabled);
      break;
    }
    frond_seg_stats_get(seg, &ss);
    if (frond_seg_tags(seg, &tags, &n, NULL) != 0)
      n = 0;
    frond__buf_printf(b,
                      "enabled:1\r\nstore_up:%d\r\nloads:%llu\r\n"
                      "load_failures:%llu\r\nunavailable:%llu\r\n"
                      "ids_issued:%llu\r\ntags:%zu\r\n",
                      ss.store_ok, (unsigned long long)ss.loads,
                      (unsigned long long)ss.load_failures,
                      (unsigned long long)ss.unavailable,
                      (unsigned long long)RSUM(ids_segment), n);
    for (i = 0; i < n; i++) {
      char name[FROND_TAG_MAX + 1];
      const frond_seg_buffer *cur = &tags[i].current;
      info_name(name, sizeof name, tags[i].tag);
      frond__buf_printf(b, "tag_%s:issued=%llu,step=%lld,remaining=%lld\r\n",
                        name, (unsigned long long)tags[i].issued,
                        (long long)tags[i].step,
                        (long long)(cur->ready ? cur->end - cur->pos : 0));
    }
    frond__buf_printf(b, "\r\n");
    frond_free(tags);
    break;
  }
  default:
    frond__buf_printf(b, "# Keyspace\r\n\r\n");
  }
}

static void cmd_info(rx *x) {
  static const char *const names[] = {"server",    "clients", "stats",
                                      "snowflake", "segment", "keyspace"};
  int want[FROND__ARRAY_SIZE(names)] = {0};
  frond__buf *b = &x->w->scratch;
  size_t i, k;
  if (x->argc == 1)
    for (k = 0; k < 5; k++)
      want[k] = 1;
  for (i = 1; i < x->argc; i++) {
    if (arg_is(&x->argv[i], "all") || arg_is(&x->argv[i], "everything") ||
        arg_is(&x->argv[i], "default")) {
      for (k = 0; k < FROND__ARRAY_SIZE(names); k++)
        want[k] = 1;
      continue;
    }
    for (k = 0; k < FROND__ARRAY_SIZE(names); k++)
      if (arg_is(&x->argv[i], names[k]))
        want[k] = 1;
  }
  b->len = 0;
  for (k = 0; k < FROND__ARRAY_SIZE(names); k++)
    if (want[k])
      info_section(x->srv, b, (int)k);
  /* Sections are separated by a blank line; the last one has none. */
  if (b->len >= 2)
    b->len -= 2;
  reply_bulk(x, b->data ? b->data : "", b->len);
}

/* --------------------------------------------------------------- framing */

static void unknown_command(rx *x) {
  char name[130], args[160];
  size_t i, n = 0;
  args[0] = '\0';
  for (i = 1; i < x->argc && n < 128; i++) {
    int w = snprintf(args + n, sizeof args - n, "'%.*s' ",
                     (int)(x->argv[i].len < 128 - n ? x->argv[i].len : 128 - n),
                     x->argv[i].p);
    if (w < 0 || (size_t)w >= sizeof args - n)
      break;
    n += (size_t)w;
  }
  reply_error(x, "ERR", "unknown command '%s', with args beginning with: %s",
              arg_str(&x->argv[0], name, sizeof name), args);
}

static void execute(rx *x) {
  const resp_cmd *k = find_command(&x->argv[0]);
  int id = k != NULL ? k->id : FROND__RC_UNKNOWN;
  if (k == NULL) {
    unknown_command(x);
  } else if (!x->st->authed && !k->noauth) {
    FROND__INC(x->w->m.resp.noauth, 1);
    reply_error(x, "NOAUTH", "Authentication required.");
  } else if ((int)x->argc < k->min || (k->max >= 0 && (int)x->argc > k->max)) {
    wrong_args(x, k->name);
  } else {
    k->fn(x);
  }
  FROND__INC(x->w->m.resp.commands[id][x->failed], 1);
}

static int resp_on_data(frond__conn *c, const char *buf, size_t len) {
  frond__resp_arg argv[FROND__RESP_MAX_ARGS];
  frond__resp_limits lim;
  const frond__config *cfg = &c->w->srv->cfg;
  const char *why = NULL;
  rx x;
  long n;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.w = c->w;
  x.srv = c->w->srv;
  x.st = c->pdata;
  x.out = frond__conn_out(c);
  lim.max_args = (size_t)cfg->resp_max_args;
  lim.max_bulk = (size_t)cfg->resp_max_bulk;
  lim.max_inline = (size_t)cfg->resp_max_inline;
  if (!x.st->authed) {
    if (lim.max_args > UNAUTH_MAX_ARGS)
      lim.max_args = UNAUTH_MAX_ARGS;
    if (lim.max_bulk > UNAUTH_MAX_BULK)
      lim.max_bulk = UNAUTH_MAX_BULK;
    if (lim.max_inline > UNAUTH_MAX_BULK)
      lim.max_inline = UNAUTH_MAX_BULK;
  }
  n = frond__resp_parse(buf, len, &lim, argv, &x.argc, &why);
  if (n == 0 && len >= c->l->max_input)
    why = "Protocol error: query buffer limit reached";
  if (n < 0 || why != NULL) {
    FROND__INC(x.w->m.resp.protocol_errors, 1);
    reply_error(&x, "ERR", "%s", why);
    return -1;
  }
  if (n == 0)
    return 0;
  if (x.argc > 0) {
    x.argv = argv;
    execute(&x);
  }
  /* While draining, close once every complete command has been answered. */
  if (x.close || (frond__conn_draining(c) && (size_t)n == len))
    return -1;
  return (int)n;
}

static void resp_on_timeout(frond__conn *c) {
  rx x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.w = c->w;
  x.srv = c->w->srv;
  x.st = c->pdata;
  x.out = frond__conn_out(c);
  reply_error(&x, "ERR",
              "Protocol error: command not complete after %lld ms, closing",
              (long long)x.srv->cfg.header_timeout_ms);
}

static int resp_on_open(frond__conn *c) {
  frond__server *srv = c->w->srv;
  resp_state *st = calloc(1, sizeof *st);
  if (st == NULL)
    return -1;
  st->id = atomic_fetch_add(&next_client_id, 1);
  st->authed = srv->cfg.admin_token[0] == '\0';
  c->pdata = st;
  /* Connection pools keep idle connections: no command pending is idle,
  ** not a slow request. Before AUTH, idle time is bounded like a request. */
  c->req_start_ms = 0;
  c->idle_ms = st->authed ? (uint64_t)srv->cfg.resp_idle_timeout_ms
                          : (uint64_t)srv->cfg.header_timeout_ms;
  FROND__INC(c->w->m.resp.accepted, 1);
  return 0;
}

static void resp_on_close(frond__conn *c) {
  free(c->pdata);
  c->pdata = NULL;
  FROND__INC(c->w->m.resp.closed, 1);
}

const frond__proto frond__resp_proto = {
    "resp",
    resp_on_data,
    resp_on_timeout,
    FROND__PROTO_RESP,
    resp_on_open,
    resp_on_close,
    "-ERR max number of clients reached\r\n"};

/* --------------------------------------------------------- configuration */

int frond__resp_configure(frond__server *srv, char *err, size_t len) {
  const frond__config *cfg = &srv->cfg;
  int loopback;
  srv->resp_port = 0;
  if (strcmp(cfg->resp_listen, "off") == 0)
    return 0;
  if (frond__parse_hostport("resp_listen", cfg->resp_listen, srv->resp_host,
                            &srv->resp_port, &loopback, err, len) != 0)
    return -1;
  if (srv->resp_port == srv->listen_port) {
    snprintf(err, len, "resp_listen %s and listen %s use the same port",
             cfg->resp_listen, cfg->listen);
    return -1;
  }
  if (!loopback && cfg->admin_token[0] == '\0') {
    snprintf(err, len,
             "refusing to listen on %s (resp) beyond loopback without "
             "admin_token (set FROND_ADMIN_TOKEN or --admin-token)",
             cfg->resp_listen);
    return -1;
  }
  if ((int64_t)FROND__RESP_MAX_ARGS < cfg->resp_max_args) {
    snprintf(err, len, "resp_max_args is above %d", FROND__RESP_MAX_ARGS);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- metrics */

void frond__resp_metrics_render(frond__server *srv, frond__buf *b) {
  static const char *const names[FROND__RC_COUNT] = {
#define NAME(id, name) name,
      FROND__RESP_COMMANDS(NAME)
#undef NAME
  };
  uint64_t ra = RSUM(resp.accepted), rc = RSUM(resp.closed);
  uint64_t ha = RSUM(accepted) - ra, open = (uint64_t)atomic_load(&srv->nconns);
  int k, r;
  frond__buf_printf(b, "# HELP frond_resp_commands_total RESP commands by "
                       "name and result.\n# TYPE frond_resp_commands_total "
                       "counter\n");
  for (k = 0; k < FROND__RC_COUNT; k++)
    for (r = 0; r < 2; r++) {
      uint64_t v = RSUM(resp.commands[k][r]);
      if (v != 0)
        frond__buf_printf(
            b, "frond_resp_commands_total{command=\"%s\",result=\"%s\"} %llu\n",
            names[k], r ? "error" : "ok", (unsigned long long)v);
    }
  frond__buf_printf(
      b,
      "# HELP frond_resp_protocol_errors_total RESP connections closed after "
      "a protocol error.\n# TYPE frond_resp_protocol_errors_total counter\n"
      "frond_resp_protocol_errors_total %llu\n"
      "# HELP frond_resp_auth_failures_total Failed AUTH attempts.\n"
      "# TYPE frond_resp_auth_failures_total counter\n"
      "frond_resp_auth_failures_total %llu\n"
      "# HELP frond_resp_noauth_total Commands refused before AUTH.\n"
      "# TYPE frond_resp_noauth_total counter\nfrond_resp_noauth_total %llu\n"
      "# HELP frond_connections_accepted_by_protocol_total Connections "
      "accepted, by protocol.\n# TYPE "
      "frond_connections_accepted_by_protocol_total counter\n"
      "frond_connections_accepted_by_protocol_total{protocol=\"http\"} %llu\n"
      "frond_connections_accepted_by_protocol_total{protocol=\"resp\"} %llu\n"
      "# HELP frond_connections_by_protocol Open connections, by protocol.\n"
      "# TYPE frond_connections_by_protocol gauge\n"
      "frond_connections_by_protocol{protocol=\"http\"} %llu\n"
      "frond_connections_by_protocol{protocol=\"resp\"} %llu\n",
      (unsigned long long)RSUM(resp.protocol_errors),
      (unsigned long long)RSUM(resp.auth_failures),
      (unsigned long long)RSUM(resp.noauth), (unsigned long long)ha,
      (unsigned long long)ra,
      (unsigned long long)(open > ra - rc ? open - (ra - rc) : 0),
      (unsigned long long)(ra - rc));
}
