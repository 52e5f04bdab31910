/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp_cmds.c -- the commands of the Redis protocol front.
**
** IDs: INCR <tag> answers the tag's next segment ID (INCRBY <tag> <n> the
** last of n consecutive ones),
** ID.NEXT and ID.SNOWFLAKE answer batches, ID.RANGE a lease, ID.TAGS the
** tags; all are served by the request layer (req.c) and answered as
** resp_reply.c's frond__resp_run says. The rest answers the way Redis does, so that clients
** connect unmodified: PING, ECHO, QUIT, HELLO, AUTH, SELECT 0, CLIENT,
** CONFIG GET, RESET and INFO. COMMAND lives with the table, in resp.c.
*/
#include "server/resp_shared.h"

#include "base/base.h"
#include "core/core.h"
#include "server/acl.h"
#include "server/ready.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------------------- IDs */

/* INCR, INCRBY and ID.NEXT: n IDs of the tag argv[1], through the request
** layer (req.c). */
static void segment(frond__resp_ctx *x, int op, size_t count_at) {
  const frond__resp_arg *tag = &x->argv[1];
  frond__req r = {.op = op, .tag = tag->p, .len = tag->len, .n = 1};
  if (count_at == 0 || frond__resp_count_arg(x, &r, count_at) == 0)
    frond__resp_run(x, &r);
}

void frond__resp_cmd_incr(frond__resp_ctx *x) {
  segment(x, FROND__REQ_SEGMENT, 0);
}

/* INCRBY <tag> n, as Redis means it: the counter went up by n, and every
** value up to the answer is the caller's. n = 1 is INCR (redis-py's
** incr() sends INCRBY key 1); a larger n leases n consecutive IDs, a range
** as ID.RANGE takes (within max_range), and answers the last of them. A
** batch (ID.NEXT) may span two segments and so would not keep that
** promise. */
void frond__resp_cmd_incrby(frond__resp_ctx *x) {
  const frond__resp_arg *tag = &x->argv[1];
  frond__req r = {.op = FROND__REQ_RANGE, .tag = tag->p, .len = tag->len};
  if (frond__resp_arg_is(&x->argv[2], "1")) {
    frond__resp_cmd_incr(x);
    return;
  }
  if (frond__resp_count_arg(x, &r, 2) == 0)
    frond__resp_run(x, &r);
}

void frond__resp_cmd_id_next(frond__resp_ctx *x) {
  segment(x, FROND__REQ_SEGMENT, 2);
}

/* ID.RANGE <tag> <count>: a range lease [start, end) of count IDs, for a
** client that hands them out itself. */
void frond__resp_cmd_id_range(frond__resp_ctx *x) {
  segment(x, FROND__REQ_RANGE, 2);
}

void frond__resp_cmd_id_snowflake(frond__resp_ctx *x) {
  frond__req r = {.op = FROND__REQ_SNOWFLAKE};
  if (frond__resp_count_arg(x, &r, 1) == 0)
    frond__resp_run(x, &r);
}

void frond__resp_cmd_id_tags(frond__resp_ctx *x) {
  frond_error err = {0, ""};
  frond_tag_info *tags = NULL;
  size_t n = 0, i;
  int r;
  frond_seg *seg = atomic_load(&x->srv->seg);
  if (seg == NULL) {
    frond__resp_array(x, 0);
    return;
  }
  if ((r = frond_seg_tag_list(seg, &tags, &n, &err)) != 0) {
    frond__resp_lib_error(x, r, &err);
    return;
  }
  frond__resp_array(x, (int64_t)n);
  for (i = 0; i < n; i++)
    frond__resp_cstr(x, tags[i].tag);
  frond_free(tags);
}

/* ------------------------------------------------------- connection */

void frond__resp_cmd_ping(frond__resp_ctx *x) {
  if (x->argc == 2)
    frond__resp_bulk(x, x->argv[1].p, x->argv[1].len);
  else
    frond__resp_status(x, "PONG");
}

void frond__resp_cmd_echo(frond__resp_ctx *x) {
  frond__resp_bulk(x, x->argv[1].p, x->argv[1].len);
}

void frond__resp_cmd_quit(frond__resp_ctx *x) {
  frond__resp_status(x, "OK");
  x->close = 1;
}

static void set_authed(frond__resp_ctx *x, int authed) {
  x->st->authed = authed;
  x->c->idle_ms = authed ? (uint64_t)x->srv->cfg.resp_idle_timeout_ms
                         : (uint64_t)x->srv->cfg.header_timeout_ms;
}

/* Check user (NULL: the one-argument AUTH) and password: admin_token's
** client (user default or admin) or a named client of clients_file, in
** constant time (acl.c); answers the error itself. 1 when they match.
** Without any credential the user "default" takes any password, as
** Redis' default user without a password does (clients that send a
** password unasked still connect); the one-argument form is refused as
** Redis refuses it. */
static int check_auth(frond__resp_ctx *x, const frond__resp_arg *user,
                      const frond__resp_arg *pass) {
  frond_error err = {0, ""};
  int is_default =
      user == NULL || (user->len == 7 && memcmp(user->p, "default", 7) == 0);
  if (!frond__acl_on(x->srv)) {
    if (user == NULL) {
      frond__resp_error(
          x, "ERR",
          "AUTH <password> called without any password configured for "
          "the default user. Are you sure your configuration is "
          "correct?");
      return 0;
    }
    if (!is_default) {
      FROND__INC(FROND__RESP_STATS(x)->auth_failures, 1);
      frond__resp_error(x, "WRONGPASS",
                        "invalid username-password pair or user is "
                        "disabled.");
      return 0;
    }
    set_authed(x, 1);
    return 1;
  }
  if (frond__acl_auth(x->c, user != NULL ? user->p : NULL,
                      user != NULL ? user->len : 0, pass->p, pass->len,
                      &err) != 0) {
    FROND__INC(FROND__RESP_STATS(x)->auth_failures, 1);
    frond__resp_error(x, "WRONGPASS",
                      "invalid username-password pair or user is disabled.");
    return 0;
  }
  set_authed(x, 1);
  return 1;
}

void frond__resp_cmd_auth(frond__resp_ctx *x) {
  if (x->argc == 2 ? check_auth(x, NULL, &x->argv[1])
                   : check_auth(x, &x->argv[1], &x->argv[2]))
    frond__resp_status(x, "OK");
}

/* Client names, library names and versions: printable ASCII without
** spaces, as Redis wants them (CLIENT LIST and INFO are split on spaces).
** 0, or -1 after an error naming `what`. */
static int check_printable(frond__resp_ctx *x, const frond__resp_arg *a,
                           const char *what) {
  size_t i;
  for (i = 0; i < a->len; i++)
    if (a->p[i] < '!' || a->p[i] > '~') {
      frond__resp_error(
          x, "ERR", "%s cannot contain spaces, newlines or special characters.",
          what);
      return -1;
    }
  if (a->len > FROND__RESP_NAME_MAX) {
    frond__resp_error(x, "ERR", "%s longer than %d bytes", what,
                      FROND__RESP_NAME_MAX);
    return -1;
  }
  return 0;
}

static int set_name(frond__resp_ctx *x, const frond__resp_arg *a) {
  if (check_printable(x, a, "Client names") != 0)
    return -1;
  frond__resp_arg_str(a, x->st->name, sizeof x->st->name);
  return 0;
}

/* HELLO's map: Redis' seven fields, proto the connection's. */
static void hello_reply(frond__resp_ctx *x) {
  frond__resp_map(x, 7);
  frond__resp_cstr(x, "server");
  frond__resp_cstr(x, "frond");
  frond__resp_cstr(x, "version");
  frond__resp_cstr(x, FROND_VERSION_STRING);
  frond__resp_cstr(x, "proto");
  frond__resp_int(x, x->st->proto);
  frond__resp_cstr(x, "id");
  frond__resp_u64(x, x->st->id);
  frond__resp_cstr(x, "mode");
  frond__resp_cstr(x, "standalone");
  frond__resp_cstr(x, "role");
  frond__resp_cstr(x, "master");
  frond__resp_cstr(x, "modules");
  frond__resp_array(x, 0);
}

/* HELLO [protover [AUTH user pass] [SETNAME name]], in Redis' order: the
** options are read, then the credentials checked, then the name set, and
** only then the protocol switched (2 or 3), so that a refused HELLO
** changes nothing. The reply is in the new protocol. */
void frond__resp_cmd_hello(frond__resp_ctx *x) {
  const frond__resp_arg *user = NULL, *pass = NULL, *name = NULL;
  size_t i;
  int64_t ver = 0;
  if (x->argc >= 2) {
    if (frond__parse_i64(x->argv[1].p, x->argv[1].len, &ver) != 0) {
      frond__resp_error(x, "ERR",
                        "Protocol version is not an integer or out of range");
      return;
    }
    if (ver != 2 && ver != 3) {
      frond__resp_error(x, "NOPROTO", "unsupported protocol version");
      return;
    }
  }
  for (i = 2; i < x->argc; i++) {
    size_t more = x->argc - i - 1;
    if (frond__resp_arg_is(&x->argv[i], "AUTH") && more >= 2) {
      user = &x->argv[i + 1];
      pass = &x->argv[i + 2];
      i += 2;
    } else if (frond__resp_arg_is(&x->argv[i], "SETNAME") && more >= 1) {
      name = &x->argv[++i];
    } else {
      char opt[64];
      frond__resp_error(x, "ERR", "Syntax error in HELLO option '%s'",
                        frond__resp_arg_str(&x->argv[i], opt, sizeof opt));
      return;
    }
  }
  if (user != NULL && !check_auth(x, user, pass))
    return;
  if (!x->st->authed) {
    frond__resp_error(
        x, "NOAUTH",
        "HELLO must be called with the client already "
        "authenticated, otherwise the HELLO <proto> AUTH <user> "
        "<pass> option can be used to authenticate the client and "
        "select the RESP protocol version at the same time");
    return;
  }
  if (name != NULL && set_name(x, name) != 0)
    return;
  if (ver != 0)
    x->st->proto = (int)ver;
  hello_reply(x);
}

void frond__resp_cmd_select(frond__resp_ctx *x) {
  int64_t db;
  if (frond__parse_i64(x->argv[1].p, x->argv[1].len, &db) != 0)
    frond__resp_error(x, "ERR", "value is not an integer or out of range");
  else if (db != 0)
    frond__resp_error(x, "ERR", "DB index is out of range");
  else
    frond__resp_status(x, "OK");
}

/* RESET: back to a fresh connection, as Redis' RESET: no name, RESP2,
** no transaction, and with a token, not authenticated. */
void frond__resp_cmd_reset(frond__resp_ctx *x) {
  frond__resp_tx_free(x->st);
  x->c->open_ms = 0;
  x->st->name[0] = '\0';
  x->st->proto = 2;
  frond__acl_conn_drop(x->c);
  set_authed(x, !frond__acl_on(x->srv));
  frond__resp_status(x, "RESET");
}

static void client_info(frond__resp_ctx *x, frond__buf *b) {
  struct sockaddr_storage ss = {0};
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
                    "resp=%d user=default\n",
                    (unsigned long long)x->st->id, host, port, x->st->name,
                    x->st->lib_name, x->st->lib_ver, x->st->proto);
}

/* CLIENT SETINFO LIB-NAME|LIB-VER value, checked as Redis checks it. */
static void client_setinfo(frond__resp_ctx *x) {
  const frond__resp_arg *attr = &x->argv[2];
  char s[64], *field;
  if (frond__resp_arg_is(attr, "LIB-NAME"))
    field = x->st->lib_name;
  else if (frond__resp_arg_is(attr, "LIB-VER"))
    field = x->st->lib_ver;
  else {
    frond__resp_error(x, "ERR", "Unrecognized option '%s'",
                      frond__resp_arg_str(attr, s, sizeof s));
    return;
  }
  if (check_printable(x, &x->argv[3], frond__resp_arg_str(attr, s, sizeof s)) !=
      0)
    return;
  frond__resp_arg_str(&x->argv[3], field, FROND__RESP_NAME_MAX + 1);
  frond__resp_status(x, "OK");
}

/* CLIENT's subcommands, each with its argument count (the command's name
** and the subcommand included). */
static const struct {
  const char *name, *full;
  size_t argc;
} client_subs[] = {
    {"SETNAME", "client|setname", 3},
    {"GETNAME", "client|getname", 2},
    {"ID", "client|id", 2},
    {"SETINFO", "client|setinfo", 4},
    {"INFO", "client|info", 2},
    {"LIST", "client|list", 0},
    {"NO-EVICT", "client|no-evict", 3},
    {"NO-TOUCH", "client|no-touch", 3},
};

void frond__resp_cmd_client(frond__resp_ctx *x) {
  const frond__resp_arg *sub = &x->argv[1];
  char s[64];
  size_t k;
  for (k = 0; k < FROND__ARRAY_SIZE(client_subs); k++)
    if (frond__resp_arg_is(sub, client_subs[k].name))
      break;
  if (k == FROND__ARRAY_SIZE(client_subs)) {
    frond__resp_error(x, "ERR", "unknown subcommand '%s'. Try CLIENT HELP.",
                      frond__resp_arg_str(sub, s, sizeof s));
    return;
  }
  if (client_subs[k].argc != 0 && x->argc != client_subs[k].argc) {
    frond__resp_wrong_args(x, client_subs[k].full);
    return;
  }
  switch (k) {
  case 0:
    if (set_name(x, &x->argv[2]) == 0)
      frond__resp_status(x, "OK");
    break;
  case 1:
    if (x->st->name[0] == '\0')
      frond__resp_nil(x);
    else
      frond__resp_cstr(x, x->st->name);
    break;
  case 2:
    frond__resp_u64(x, x->st->id);
    break;
  case 3:
    client_setinfo(x);
    break;
  case 4:
  case 5: {
    /* LIST shows this connection only: the others live on other loops. */
    frond__buf b = {NULL, 0, 0};
    client_info(x, &b);
    frond__resp_verbatim(x, b.data ? b.data : "", b.len);
    frond__buf_free(&b);
    break;
  }
  default:
    /* NO-EVICT, NO-TOUCH: nothing is evicted or touched here; the
    ** argument is checked as Redis checks it. */
    if (frond__resp_arg_is(&x->argv[2], "ON") ||
        frond__resp_arg_is(&x->argv[2], "OFF"))
      frond__resp_status(x, "OK");
    else
      frond__resp_error(x, "ERR", "syntax error");
  }
}

/* READONLY and READWRITE: +OK. A cluster client's replica mode, which
** node-redis and ioredis send in their handshake when asked to (and fail
** the connection on an error); a Frond node serves IDs either way. */
void frond__resp_cmd_readonly(frond__resp_ctx *x) {
  frond__resp_status(x, "OK");
}

/* CONFIG GET answers no parameter (an empty map, as Redis answers an
** unknown one): redis-benchmark asks for save and appendonly at start.
** Frond is configured by its file, environment and flags, not here. */
void frond__resp_cmd_config(frond__resp_ctx *x) {
  char s[64];
  if (frond__resp_arg_is(&x->argv[1], "GET"))
    frond__resp_map(x, 0);
  else
    frond__resp_error(x, "ERR", "unknown subcommand '%s'. Try CONFIG HELP.",
                      frond__resp_arg_str(&x->argv[1], s, sizeof s));
}

/* ---------------------------------------------------------------- INFO */

/* The sum over workers of a counter of RESP's state. */
#define STATS_SUM(x, field)                                                    \
  frond__metrics_state_sum((x)->srv, (x)->c->proto,                            \
                           offsetof(frond__resp_stats, field))

static uint64_t commands_sum(frond__resp_ctx *x, int result) {
  uint64_t s = 0;
  int k;
  for (k = 0; k < FROND__RC_COUNT; k++)
    s += STATS_SUM(x, commands[k][result]);
  return s;
}

/* INFO's own way to write a tag name: no ':', ',', '=' or spaces. */
static void info_name(char *dst, size_t cap, const char *s) {
  size_t n = 0;
  for (; *s && n + 1 < cap; s++)
    dst[n++] = strchr(":,= ", *s) != NULL ? '_' : *s;
  dst[n] = '\0';
}

static void info_section(frond__resp_ctx *x, frond__buf *b, int which) {
  frond__server *srv = x->srv;
  int64_t up = frond__uptime_ms(srv) / 1000;
  uint64_t resp_accepted, resp_open;
  uint64_t all_open = (uint64_t)atomic_load(&srv->nconns);
  frond_gen_stats gs;
  frond__ready_facts rf;
  frond__ready_reason why[FROND__KINDS];
  frond__metrics_conns(srv, x->c->proto, &resp_accepted, &resp_open);
  frond__ready_facts_get(srv, &rf);
  frond__ready_eval(&rf, why);
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
        x->c->l->ep->addr.port, (long long)up, (long long)(up / 86400),
        srv->nworkers);
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
        (unsigned long long)resp_accepted,
        (unsigned long long)(commands_sum(x, 0) + commands_sum(x, 1)),
        (unsigned long long)commands_sum(x, 1),
        (unsigned long long)FROND__SUM(srv, rejected),
        (unsigned long long)STATS_SUM(x, protocol_errors),
        (unsigned long long)STATS_SUM(x, auth_failures));
    break;
  case 3: {
    char spec[160];
    frond_layout_format(&srv->layout, spec, sizeof spec);
    frond_gen_stats_get(srv->gen, &gs);
    frond__buf_printf(
        b,
        "# Snowflake\r\nnode:%llu\r\nlayout:%s\r\nlayout_spec:%s\r\n"
        "ids_issued:%llu\r\nborrowed_units:%llu\r\nclock_waits:%llu\r\n"
        "clock_behind:%llu\r\nahead_ms:%lld\r\nready:%d\r\n"
        "ready_reason:%s\r\n\r\n",
        (unsigned long long)srv->node, srv->layout.name, spec,
        (unsigned long long)FROND__SUM(srv, ids_snowflake),
        (unsigned long long)gs.borrowed, (unsigned long long)gs.waits,
        (unsigned long long)gs.clock_behind, (long long)gs.ahead_ms,
        why[FROND__KIND_SNOWFLAKE] == FROND__READY_OK,
        frond__ready_label(why[FROND__KIND_SNOWFLAKE]));
    break;
  }
  case 4: {
    frond_seg_stats ss;
    frond_tag_info *tags = NULL;
    frond_seg *seg = atomic_load(&srv->seg);
    size_t n = 0, i;
    frond__buf_printf(b, "# Segment\r\n");
    if (seg == NULL) {
      frond__buf_printf(b,
                        "enabled:%d\r\nstore_up:0\r\nready:0\r\n"
                        "ready_reason:%s\r\n\r\n",
                        srv->seg_enabled,
                        frond__ready_label(why[FROND__KIND_SEGMENT]));
      break;
    }
    frond_seg_stats_get(seg, &ss);
    /* Tag lines for the tags /metrics shows, not for every tag. */
    if (frond__metrics_tags(srv, &tags, &n) != 0)
      n = 0;
    frond__buf_printf(
        b,
        "enabled:1\r\nstore_up:%d\r\nready:%d\r\n"
        "ready_reason:%s\r\nloads:%llu\r\n"
        "load_failures:%llu\r\nunavailable:%llu\r\n"
        "ids_issued:%llu\r\ntags:%llu\r\ntags_in_use:%llu\r\n",
        ss.store_ok, why[FROND__KIND_SEGMENT] == FROND__READY_OK,
        frond__ready_label(why[FROND__KIND_SEGMENT]),
        (unsigned long long)ss.loads, (unsigned long long)ss.load_failures,
        (unsigned long long)ss.unavailable,
        (unsigned long long)FROND__SUM(srv, ids_segment),
        (unsigned long long)ss.tags, (unsigned long long)ss.tags_in_use);
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

void frond__resp_cmd_info(frond__resp_ctx *x) {
  static const char *const names[] = {"server",    "clients", "stats",
                                      "snowflake", "segment", "keyspace"};
  int want[FROND__ARRAY_SIZE(names)] = {0};
  frond__buf *b = &x->w->scratch;
  size_t i, k;
  if (x->argc == 1)
    for (k = 0; k < 5; k++)
      want[k] = 1;
  for (i = 1; i < x->argc; i++) {
    if (frond__resp_arg_is(&x->argv[i], "all") ||
        frond__resp_arg_is(&x->argv[i], "everything") ||
        frond__resp_arg_is(&x->argv[i], "default")) {
      for (k = 0; k < FROND__ARRAY_SIZE(names); k++)
        want[k] = 1;
      continue;
    }
    for (k = 0; k < FROND__ARRAY_SIZE(names); k++)
      if (frond__resp_arg_is(&x->argv[i], names[k]))
        want[k] = 1;
  }
  b->len = 0;
  for (k = 0; k < FROND__ARRAY_SIZE(names); k++)
    if (want[k])
      info_section(x, b, (int)k);
  /* Sections are separated by a blank line; the last one has none. */
  if (b->len >= 2)
    b->len -= 2;
  frond__resp_verbatim(x, b->data ? b->data : "", b->len);
}
