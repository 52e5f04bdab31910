/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp.c -- the Redis protocol front, RESP2 and (after HELLO 3) RESP3.
**
** Any Redis client can fetch IDs: `INCR <tag>` answers the next segment ID
** of the tag as an integer, which makes Frond a drop-in for services that
** count with Redis INCR today, without Redis' lost increments after a
** crash. ID.* commands add batches, snowflake IDs and decoding, with IDs
** as bulk strings so that no client rounds them; PING, HELLO, AUTH,
** SELECT 0, CLIENT, COMMAND, INFO and the rest of what clients send when
** they connect are answered the way Redis answers them, so that clients
** connect unmodified.
**
** on_data parses one command (resp_parse.c), answers it synchronously into
** the connection's output and returns the bytes consumed, so pipelined
** commands are answered in order and written in one batch per read (the
** connection layer flushes after each read). An error reply leaves the
** connection usable; a protocol error is answered, then the connection is
** closed, as Redis does.
**
** This file holds the framing, the command table (with COMMAND, which
** reads it), the protocol's configuration check and metrics; the commands
** are in resp_cmds.c, the replies in resp_reply.c.
*/
#include "server/resp_shared.h"

#include "base/base.h"
#include "server/acl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct resp_cmd {
  const char *name; /* lower case, as COMMAND lists it */
  int id;           /* FROND__RC_* */
  int min, max;     /* argument count including the name; max -1: any */
  int noauth;       /* allowed before AUTH */
  int key;          /* argv[1] is a key (the tag), for cluster-aware clients */
  const char *flags;
  void (*fn)(frond__resp_ctx *x);
} resp_cmd;

static _Atomic uint64_t next_client_id = 1;

static void command(frond__resp_ctx *x);
static void exec(frond__resp_ctx *x);

/* Sorted by how often clients send them. */
static const resp_cmd command_table[] = {
    {"incr", FROND__RC_INCR, 2, 2, 0, 1, "write fast", frond__resp_cmd_incr},
    {"incrby", FROND__RC_INCRBY, 3, 3, 0, 1, "write fast",
     frond__resp_cmd_incrby},
    {"id.next", FROND__RC_ID_NEXT, 2, 3, 0, 1, "write",
     frond__resp_cmd_id_next},
    {"id.range", FROND__RC_ID_RANGE, 3, 3, 0, 1, "write",
     frond__resp_cmd_id_range},
    {"id.snowflake", FROND__RC_ID_SNOWFLAKE, 1, 2, 0, 0, "write",
     frond__resp_cmd_id_snowflake},
    {"id.decode", FROND__RC_ID_DECODE, 2, 3, 0, 0, "readonly fast",
     frond__resp_cmd_id_decode},
    {"id.tags", FROND__RC_ID_TAGS, 1, 1, 0, 0, "readonly",
     frond__resp_cmd_id_tags},
    {"id.format", FROND__RC_ID_FORMAT, 2, 4, 0, 0, "write",
     frond__resp_cmd_id_format},
    {"id.order", FROND__RC_ID_ORDER, 2, 3, 0, 0, "write",
     frond__resp_cmd_id_order},
    {"id.uuid", FROND__RC_ID_UUID, 1, 3, 0, 0, "write",
     frond__resp_cmd_id_uuid},
    {"id.ulid", FROND__RC_ID_ULID, 1, 2, 0, 0, "write",
     frond__resp_cmd_id_ulid},
    {"id.objectid", FROND__RC_ID_OBJECTID, 1, 2, 0, 0, "write",
     frond__resp_cmd_id_objectid},
    {"ping", FROND__RC_PING, 1, 2, 1, 0, "fast stale", frond__resp_cmd_ping},
    {"echo", FROND__RC_ECHO, 2, 2, 0, 0, "fast", frond__resp_cmd_echo},
    {"quit", FROND__RC_QUIT, 1, -1, 1, 0, "noscript loading stale fast",
     frond__resp_cmd_quit},
    {"hello", FROND__RC_HELLO, 1, -1, 1, 0, "noscript loading stale fast",
     frond__resp_cmd_hello},
    {"auth", FROND__RC_AUTH, 2, 3, 1, 0, "noscript loading stale fast",
     frond__resp_cmd_auth},
    {"select", FROND__RC_SELECT, 2, 2, 0, 0, "loading stale fast",
     frond__resp_cmd_select},
    {"client", FROND__RC_CLIENT, 2, -1, 0, 0, "noscript loading stale",
     frond__resp_cmd_client},
    {"command", FROND__RC_COMMAND, 1, -1, 0, 0, "loading stale", command},
    {"info", FROND__RC_INFO, 1, -1, 0, 0, "loading stale",
     frond__resp_cmd_info},
    {"config", FROND__RC_CONFIG, 2, -1, 0, 0, "admin noscript loading stale",
     frond__resp_cmd_config},
    {"reset", FROND__RC_RESET, 1, 1, 0, 0, "noscript loading stale fast",
     frond__resp_cmd_reset},
    {"readonly", FROND__RC_READONLY, 1, 1, 0, 0, "loading stale fast",
     frond__resp_cmd_readonly},
    {"readwrite", FROND__RC_READWRITE, 1, 1, 0, 0, "loading stale fast",
     frond__resp_cmd_readonly},
    {"multi", FROND__RC_MULTI, 1, 1, 0, 0, "noscript loading stale fast",
     frond__resp_cmd_multi},
    {"exec", FROND__RC_EXEC, 1, 1, 0, 0, "noscript loading stale", exec},
    {"discard", FROND__RC_DISCARD, 1, 1, 0, 0, "noscript loading stale fast",
     frond__resp_cmd_discard},
    {"watch", FROND__RC_WATCH, 2, -1, 0, 0, "noscript loading stale fast",
     frond__resp_cmd_watch},
    {"unwatch", FROND__RC_UNWATCH, 1, 1, 0, 0, "noscript loading stale fast",
     frond__resp_cmd_unwatch},
};

static const resp_cmd *find_command(const frond__resp_arg *a) {
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(command_table); i++)
    if (frond__resp_arg_is(a, command_table[i].name))
      return &command_table[i];
  return NULL;
}

/* One COMMAND INFO entry, in Redis 7's ten-field shape: flags are status
** strings in a set, and the four trailing lists (ACL categories, tips, key
** specs, subcommands) are empty sets. */
static void command_entry(frond__resp_ctx *x, const resp_cmd *k) {
  const char *f = k->flags, *sp;
  int nflags = 1, i;
  for (sp = f; *sp; sp++)
    nflags += *sp == ' ';
  frond__resp_array(x, 10);
  frond__resp_cstr(x, k->name);
  frond__resp_int(x, k->min == k->max ? k->min : -k->min);
  frond__resp_set(x, nflags);
  while (*f) {
    sp = strchr(f, ' ');
    if (sp == NULL)
      sp = f + strlen(f);
    frond__resp_status_n(x, f, (size_t)(sp - f));
    f = *sp ? sp + 1 : sp;
  }
  frond__resp_int(x, k->key);
  frond__resp_int(x, k->key);
  frond__resp_int(x, k->key);
  for (i = 0; i < 4; i++)
    frond__resp_set(x, 0);
}

static void command(frond__resp_ctx *x) {
  size_t i, n = FROND__ARRAY_SIZE(command_table);
  char s[64];
  if (x->argc == 1) {
    frond__resp_array(x, (int64_t)n);
    for (i = 0; i < n; i++)
      command_entry(x, &command_table[i]);
  } else if (frond__resp_arg_is(&x->argv[1], "COUNT")) {
    frond__resp_int(x, (int64_t)n);
  } else if (frond__resp_arg_is(&x->argv[1], "LIST")) {
    frond__resp_array(x, (int64_t)n);
    for (i = 0; i < n; i++)
      frond__resp_cstr(x, command_table[i].name);
  } else if (frond__resp_arg_is(&x->argv[1], "INFO")) {
    frond__resp_array(x, (int64_t)(x->argc - 2));
    for (i = 2; i < x->argc; i++) {
      const resp_cmd *k = find_command(&x->argv[i]);
      if (k == NULL)
        frond__resp_nil(x);
      else
        command_entry(x, k);
    }
  } else if (frond__resp_arg_is(&x->argv[1], "DOCS")) {
    /* No docs (a map of none): redis-cli then falls back to its built-in
    ** help. */
    frond__resp_map(x, 0);
  } else {
    frond__resp_error(x, "ERR", "unknown subcommand '%s'. Try COMMAND HELP.",
                      frond__resp_arg_str(&x->argv[1], s, sizeof s));
  }
}

/* --------------------------------------------------------------- framing */

/*
** Does an inline command look like the start of an HTTP request? A web
** page can make a browser send HTTP to any port of the machine: with a
** body of RESP commands under its request line, every line of which the
** inline parser would run. As Redis does for POST and "Host:", such a
** connection is closed without an answer before any of it runs. HTTP's
** methods are upper case (and Frond has no command of those names); the
** request line has a target after the method; "Host:" is matched in any
** case, as it starts the second line of every HTTP/1.1 request.
*/
static int looks_like_http(const frond__resp_arg *argv, size_t argc) {
  static const char *const methods[] = {"GET",    "HEAD",    "POST",  "PUT",
                                        "DELETE", "OPTIONS", "PATCH", "CONNECT",
                                        "TRACE",  "PRI"};
  size_t i;
  if (frond__resp_arg_is(&argv[0], "host:"))
    return 1;
  if (argc < 2)
    return 0;
  for (i = 0; i < FROND__ARRAY_SIZE(methods); i++)
    if (argv[0].len == strlen(methods[i]) &&
        memcmp(argv[0].p, methods[i], argv[0].len) == 0)
      return 1;
  return 0;
}

/* Log a refused HTTP request at most once a minute per worker: a page
** that retries must not flood the log. */
static void log_http_refused(frond__resp_ctx *x) {
  uint64_t now = uv_now(&x->w->loop);
  frond__resp_stats *st = FROND__RESP_STATS(x);
  if (st->http_logged_ms != 0 && now - st->http_logged_ms < 60000)
    return;
  st->http_logged_ms = now;
  frond_log(FROND_LOG_WARN,
            "resp: closed a connection that sent an HTTP request to the "
            "Redis protocol port (a web page, or a client pointed at the "
            "wrong port)");
}

static void unknown_command(frond__resp_ctx *x) {
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
  frond__resp_error(x, "ERR",
                    "unknown command '%s', with args beginning with: %s",
                    frond__resp_arg_str(&x->argv[0], name, sizeof name), args);
}

/* Commands that run at once between MULTI and EXEC, as in Redis; any
** other is queued. */
static int runs_in_multi(int id) {
  return id == FROND__RC_MULTI || id == FROND__RC_EXEC ||
         id == FROND__RC_DISCARD || id == FROND__RC_WATCH ||
         id == FROND__RC_QUIT || id == FROND__RC_RESET;
}

/* Is the connection authenticated? With credentials, its client is
** looked up again after the clients file is read again, or found by its
** certificate (acl.c). */
static int authed(frond__resp_ctx *x) {
  int now;
  if (frond__acl_on(x->srv) &&
      (now = frond__acl_conn(x->c) != NULL) != x->st->authed) {
    /* Found by its certificate, or logged out by a reload: the idle
    ** limit follows, as AUTH sets it (an authenticated connection waits
    ** resp_idle_timeout_ms, one that is not header_timeout_ms). */
    x->st->authed = now;
    x->c->idle_ms = now ? (uint64_t)x->srv->cfg.resp_idle_timeout_ms
                        : (uint64_t)x->srv->cfg.header_timeout_ms;
  }
  return x->st->authed;
}

/* Commands that need the read right (IDs need issue, checked with their
** tag by the request layer; the rest, connection handling, need a
** client only). */
static int reads(int id) {
  return id == FROND__RC_ID_DECODE || id == FROND__RC_ID_TAGS ||
         id == FROND__RC_INFO || id == FROND__RC_CONFIG;
}

static void execute(frond__resp_ctx *x) {
  const resp_cmd *k = find_command(&x->argv[0]);
  frond_error err = {0, ""};
  int queue = x->st->tx.on && (k == NULL || !runs_in_multi(k->id));
  x->cmd = k != NULL ? k->id : FROND__RC_UNKNOWN;
  x->t0 = x->srv->cfg.metrics_histograms ? frond__clock_ns() : 0;
  if (k == NULL) {
    unknown_command(x);
  } else if (!authed(x) && !k->noauth) {
    FROND__INC(FROND__RESP_STATS(x)->noauth, 1);
    frond__resp_error(x, "NOAUTH", "Authentication required.");
  } else if ((int)x->argc < k->min || (k->max >= 0 && (int)x->argc > k->max)) {
    frond__resp_wrong_args(x, k->name);
  } else if (reads(k->id) &&
             frond__acl_right(x->c, FROND__ACL_READ, &err) != 0) {
    frond__resp_lib_error(x, err.code, &err);
  } else if (queue) {
    /* Counted when EXEC runs it. */
    frond__resp_tx_queue(x);
    if (!x->failed)
      return;
  } else {
    k->fn(x);
  }
  /* A command refused while queueing aborts the transaction at EXEC. */
  if (queue && x->failed)
    x->st->tx.dirty = 1;
  /* A command answered later (or an EXEC answered in parts) is counted
  ** then. */
  if (!x->c->held && !x->held)
    frond__resp_count(x);
}

/* A queued command, run by EXEC: checked when it was queued. */
static void run_queued(frond__resp_ctx *x) {
  const resp_cmd *k = find_command(&x->argv[0]);
  x->cmd = k->id;
  x->t0 = x->srv->cfg.metrics_histograms ? frond__clock_ns() : 0;
  k->fn(x);
  if (!x->c->held)
    frond__resp_count(x);
}

/* EXEC; x->held tells on_data whether it has finished. */
static void exec(frond__resp_ctx *x) {
  x->held = frond__resp_tx_exec(x, run_queued);
}

static void ctx_init(frond__resp_ctx *x, frond__conn *c) {
  memset(x, 0, sizeof *x);
  x->c = c;
  x->w = c->w;
  x->srv = c->w->srv;
  x->st = c->pdata;
  x->out = frond__conn_out(c);
}

static int resp_on_data(frond__conn *c, const char *buf, size_t len) {
  frond__resp_arg argv[FROND__RESP_MAX_ARGS];
  frond__resp_limits lim;
  const frond__config *cfg = &c->w->srv->cfg;
  const char *why = NULL;
  frond__resp_ctx x;
  long n;
  ctx_init(&x, c);
  lim.max_args = (size_t)cfg->resp_max_args;
  lim.max_bulk = (size_t)cfg->resp_max_bulk;
  lim.max_inline = (size_t)cfg->resp_max_inline;
  if (!x.st->authed) {
    if (lim.max_args > FROND__RESP_UNAUTH_MAX_ARGS)
      lim.max_args = FROND__RESP_UNAUTH_MAX_ARGS;
    if (lim.max_bulk > FROND__RESP_UNAUTH_MAX_BULK)
      lim.max_bulk = FROND__RESP_UNAUTH_MAX_BULK;
    if (lim.max_inline > FROND__RESP_UNAUTH_MAX_BULK)
      lim.max_inline = FROND__RESP_UNAUTH_MAX_BULK;
  }
  n = frond__resp_parse(buf, len, &lim, argv, &x.argc, &why);
  if (n == 0 && len >= c->l->ep->max_input)
    why = "Protocol error: query buffer limit reached";
  if (n < 0 || why != NULL) {
    FROND__INC(FROND__RESP_STATS(&x)->protocol_errors, 1);
    frond__resp_error(&x, "ERR", "%s", why);
    return -1;
  }
  if (n == 0)
    return 0;
  if (x.argc > 0 && buf[0] != '*' && looks_like_http(argv, x.argc)) {
    FROND__INC(FROND__RESP_STATS(&x)->http_refused, 1);
    log_http_refused(&x);
    return -1;
  }
  if (x.argc > 0) {
    x.argv = argv;
    execute(&x);
  }
  /* An EXEC behind a command that waits is read again, and goes on, once
  ** the connection resumes (resp_multi.c): its bytes stay unconsumed. */
  if (x.held)
    return 0;
  /* While draining, close once every complete command has been answered;
  ** a command answered later closes then, if it must. */
  if (!c->held && (x.close || (frond__conn_draining(c) && (size_t)n == len)))
    return -1;
  return (int)n;
}

static void resp_on_timeout(frond__conn *c) {
  frond__resp_ctx x;
  ctx_init(&x, c);
  if (c->open_ms != 0 &&
      (c->req_start_ms == 0 || c->open_ms <= c->req_start_ms))
    frond__resp_error(&x, "ERR",
                      "transaction not executed within %lld ms of MULTI "
                      "(header_timeout_ms), closing",
                      (long long)x.srv->cfg.header_timeout_ms);
  else
    frond__resp_error(
        &x, "ERR",
        "Protocol error: command not complete after %lld ms, closing",
        (long long)x.srv->cfg.header_timeout_ms);
}

static int resp_on_open(frond__conn *c) {
  frond__server *srv = c->w->srv;
  frond__resp_client *st = calloc(1, sizeof *st);
  if (st == NULL)
    return -1;
  st->id = atomic_fetch_add(&next_client_id, 1);
  /* A client certificate that names a client authenticates at once: a
  ** pool's connection waits its first command under its client's limit. */
  st->authed = !frond__acl_on(srv) || frond__acl_conn(c) != NULL;
  st->proto = 2;
  c->pdata = st;
  /* Connection pools keep idle connections: no command pending is idle,
  ** not a slow request. Before AUTH, idle time is bounded like a request. */
  c->req_start_ms = 0;
  c->idle_ms = st->authed ? (uint64_t)srv->cfg.resp_idle_timeout_ms
                          : (uint64_t)srv->cfg.header_timeout_ms;
  return 0;
}

static void resp_busy(frond__conn *c) {
  static const char busy[] = "-ERR max number of clients reached\r\n";
  frond__buf_append(frond__conn_out(c), busy, sizeof busy - 1);
}

static void resp_on_close(frond__conn *c) {
  if (c->pdata != NULL)
    frond__resp_tx_free(c->pdata);
  free(c->pdata);
  c->pdata = NULL;
}

/* --------------------------------------------------------- configuration */

static int resp_configure(frond__server *srv, frond__endpoint *ep,
                          frond_error *err) {
  const frond__config *cfg = &srv->cfg;
  const char *key = ep->tls ? "resp_tls_listen" : "resp_listen";
  const char *text = ep->tls ? cfg->resp_tls_listen : cfg->resp_listen;
  int r = frond__config_addr(key, text, &ep->addr, err);
  if (r != 0)
    return r; /* 1: off */
  /* A verified client certificate (tls_ca) authenticates as a token does. */
  if (!ep->addr.loopback && cfg->admin_token[0] == '\0' &&
      cfg->clients_file[0] == '\0' && !(ep->tls && cfg->tls_ca[0] != '\0'))
    return frond__fail(err, FROND_EINVAL,
                       "refusing to listen on %s (resp) beyond loopback "
                       "without admin_token (set FROND_ADMIN_TOKEN or "
                       "--admin-token) or clients_file%s",
                       text, ep->tls ? " or tls_ca" : "");
  ep->key = key;
  ep->text = text;
  ep->max_input = (size_t)cfg->resp_max_query;
  return 0;
}

/* The argument array on on_data's stack holds resp_max_args' maximum. */
_Static_assert(FROND__RESP_MAX_ARGS >= 1024, "resp_max_args' range");

/* ---------------------------------------------------------------- metrics */

#define STATS_SUM(srv, field)                                                  \
  frond__metrics_state_sum(srv, &frond__resp_proto,                            \
                           offsetof(frond__resp_stats, field))

static void resp_metrics(frond__server *srv, frond__buf *b) {
  static const char *const names[FROND__RC_COUNT] = {
#define NAME(id, name) name,
      FROND__RESP_COMMANDS(NAME)
#undef NAME
  };
  int k, r;
  frond__buf_printf(b, "# HELP frond_resp_commands_total RESP commands by "
                       "name and result.\n# TYPE frond_resp_commands_total "
                       "counter\n");
  for (k = 0; k < FROND__RC_COUNT; k++)
    for (r = 0; r < 2; r++) {
      uint64_t v = STATS_SUM(srv, commands[k][r]);
      if (v != 0)
        frond__buf_printf(
            b, "frond_resp_commands_total{command=\"%s\",result=\"%s\"} %llu\n",
            names[k], r ? "error" : "ok", (unsigned long long)v);
    }
  /* With metrics_histograms off the family is left out, not left empty. */
  if (srv->cfg.metrics_histograms) {
    frond__metrics_hist_head(b, "frond_resp_command_duration_seconds",
                             "Time from a complete command to its reply "
                             "being queued.");
    for (k = 0; k < FROND__RC_COUNT; k++)
      frond__metrics_hist(
          b, srv, &frond__resp_proto, offsetof(frond__resp_stats, duration[k]),
          "frond_resp_command_duration_seconds", "command", names[k]);
  }
  frond__metrics_counter(b, "frond_resp_protocol_errors_total",
                         "RESP connections closed after a protocol error.",
                         STATS_SUM(srv, protocol_errors));
  frond__metrics_counter(b, "frond_resp_auth_failures_total",
                         "Failed AUTH attempts.",
                         STATS_SUM(srv, auth_failures));
  frond__metrics_counter(b, "frond_resp_noauth_total",
                         "Commands refused before AUTH.",
                         STATS_SUM(srv, noauth));
  frond__metrics_counter(b, "frond_resp_http_refused_total",
                         "RESP connections closed for sending an HTTP "
                         "request.",
                         STATS_SUM(srv, http_refused));
}

const frond__proto frond__resp_proto = {
    .name = "resp",
    .configure = resp_configure,
    .state_size = sizeof(frond__resp_stats),
    .metrics = resp_metrics,
    .on_open = resp_on_open,
    .on_data = resp_on_data,
    .on_timeout = resp_on_timeout,
    .on_close = resp_on_close,
    .busy = resp_busy,
};
