/* SPDX-License-Identifier: Apache-2.0 */
/*
** db_pg.c -- the PostgreSQL engine of the SQL layer (db.h), over libpq.
**
** Statements are named prepared statements, made on first use on each
** connection (a reconnect starts a new generation and they are made
** again). Values travel as text; int64 parameters are typed bigint, text
** and NULL ones are left for the server to infer from their context.
**
** The reconnect rule (db.h): before anything is sent outside a
** transaction, a connection the server has closed is replaced, once;
** the probe reads what the server said while we were idle (a FATAL
** "terminating connection", or the end of the stream). Once a statement
** has been sent, a broken connection is an error and nothing is sent
** again: a lone write or a COMMIT whose answer is lost is FROND_DB_LOST.
**
** Everything after the connect is sent with libpq's asynchronous calls
** and awaited with poll() up to the answer deadline (db.h); past it the
** connection is closed, as if the network had cut it, so that a silent
** server (a partition, a standby that never acknowledges) costs a bounded
** wait.
*/
#include "store/db.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INT8OID 20
#define TEXTOID 25

typedef struct pg_db {
  frond_db base;
  PGconn *conn;    /* NULL after a broken connection was dropped */
  unsigned gen;    /* connections made so far; statements carry theirs */
  unsigned nnames; /* prepared statement names used */
  int fatal;       /* the server sent a FATAL while we were idle */
  int cut;         /* the last answer did not come before its deadline */
  char *uri;
  char connect_s[24], app[64], session[160];
  /* A URI naming several hosts (host=a,b or postgresql://h1,h2/...):
  ** libpq's lists as it read them, for a connect host by host. */
  int nhost;  /* hosts in the URI; 0: not read yet */
  int good;   /* the host to try first (rotate), from the process's hint */
  int rotate; /* target_session_attrs asks for a kind of server */
  char *host, *addr, *port;
} pg_db;

typedef struct pg_stmt {
  char name[24];
  char what[16];
  char *sql;
  int nparam;
  unsigned gen; /* prepared on connection number gen; 0: not yet */
  Oid types[FROND_DB_MAX_SLOTS];
} pg_stmt;

/* Notices are not ours to print; a FATAL one says the session is over. */
static void notice(void *arg, const PGresult *res) {
  const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (sev != NULL && (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0))
    ((pg_db *)arg)->fatal = 1;
}

static void drop(pg_db *p) {
  if (p->conn != NULL)
    PQfinish(p->conn);
  p->conn = NULL;
  p->fatal = 0;
  p->cut = 0;
}

/* Wait for the socket until the deadline: 0, or -1 when it passed. */
static int wait_sock(pg_db *p, short events, int64_t deadline) {
  struct pollfd pf;
  for (;;) {
    int64_t left = (deadline - frond__mono_ns()) / 1000000;
    int n;
    if (left <= 0)
      return -1;
    pf.fd = PQsocket(p->conn);
    pf.events = events;
    pf.revents = 0;
    n = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
    if (n > 0)
      return 0;
    if (n < 0 && errno != EINTR)
      return -1;
  }
}

/* The answer to what was just sent, awaited until the deadline: the last
** result, or NULL when the send failed, the connection broke (PQstatus
** says so) or the deadline passed (p->cut). */
static PGresult *answer(pg_db *p, int sent, int64_t deadline) {
  PGresult *res, *last = NULL;
  int f;
  if (!sent)
    return NULL;
  while ((f = PQflush(p->conn)) == 1)
    if (wait_sock(p, POLLIN | POLLOUT, deadline) != 0)
      goto late;
    else if (!PQconsumeInput(p->conn))
      return NULL;
  if (f < 0)
    return NULL;
  for (;;) {
    while (PQisBusy(p->conn)) {
      if (wait_sock(p, POLLIN, deadline) != 0)
        goto late;
      if (!PQconsumeInput(p->conn)) {
        PQclear(last); /* broken: PQerrorMessage says how */
        return NULL;
      }
    }
    if ((res = PQgetResult(p->conn)) == NULL)
      return last;
    PQclear(last);
    last = res;
    if (PQstatus(p->conn) != CONNECTION_OK)
      return last;
  }
late:
  PQclear(last);
  p->cut = 1;
  return NULL;
}

/* One statement by text, awaited until the deadline. */
static PGresult *text_query(pg_db *p, const char *sql, int64_t deadline) {
  return answer(p, PQsendQuery(p->conn, sql), deadline);
}

/* The engine's words for a failed result: the primary message and the
** SQLSTATE, or libpq's own text for a connection failure. */
static int pg_fail(pg_db *p, const PGresult *res, int cls, frond_error *err,
                   const char *what, const char *why) {
  char words[480];
  const char *msg =
      res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if (cls == FROND_DB_ERROR && state != NULL)
    cls = frond__db_pg_state_class(state);
  if (p->cut)
    snprintf(words, sizeof(words),
             "%sno answer within %lld ms; the connection was closed", why,
             (long long)p->base.answer_ms);
  else if (msg != NULL)
    snprintf(words, sizeof(words), "%s%s (SQLSTATE %s)", why, msg,
             state ? state : "?");
  else
    snprintf(words, sizeof(words), "%s%s", why,
             p->conn ? PQerrorMessage(p->conn) : "no connection");
  return frond__db_fail(&p->base, cls, err, what, words);
}

/* A connection refused: libpq's message without the server's LOCATION
** lines (the verbose form has them), classed by the last SQLSTATE in it
** (the server that refused last: libpq stops there) or, with none, by
** whether the server asked for a password none was given for. */
static int connect_fail(pg_db *p, frond_error *err) {
  const char *msg = PQerrorMessage(p->conn), *line;
  char words[480], state[6];
  size_t n = 0;
  int cls = FROND_DB_ERROR;
  for (line = msg; *line && n + 1 < sizeof(words);) {
    size_t len = strcspn(line, "\n");
    if (strncmp(line, "LOCATION:", 9) != 0) {
      if (len > sizeof(words) - 2 - n)
        len = sizeof(words) - 2 - n;
      memcpy(words + n, line, len);
      n += len;
      words[n++] = ' ';
    }
    line += strcspn(line, "\n");
    line += *line == '\n';
  }
  words[n] = '\0';
  if (frond__db_pg_message_state(words, state))
    cls = frond__db_pg_state_class(state);
  else if (PQconnectionNeedsPassword(p->conn))
    cls = FROND_DB_PERMANENT;
  return frond__db_fail(&p->base, cls, err, "connect", words);
}

/* PQreset's connect, bounded by a deadline in milliseconds rather than
** libpq's connect_timeout (whole seconds, per host, at least 2): polled
** as PQconnectPoll asks. 0 when it finished (PQstatus tells how), -1
** when the deadline passed first. */
static int reset_until(pg_db *p, int64_t deadline) {
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  if (!PQresetStart(p->conn))
    return 0;
  while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
    if (wait_sock(p, st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
                  deadline) != 0)
      return -1;
    st = PQresetPoll(p->conn);
  }
  return 0;
}

/* The host of the last connection to a URI with several, per URI in the
** process: connections open and close at every fence write, and a
** fleet's nodes in one process share their database. A hint only: any
** host may be tried, and a stale one costs one share of a deadline. */
#define HINTS 16
static struct {
  uint64_t uri; /* FNV-1a of the URI; 0: unused */
  int good;
} hints[HINTS];
static pthread_mutex_t hints_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t uri_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ? h : 1;
}

static int hint_get(const char *uri) {
  uint64_t h = uri_hash(uri);
  int i, good = 0;
  pthread_mutex_lock(&hints_lock);
  for (i = 0; i < HINTS; i++)
    if (hints[i].uri == h)
      good = hints[i].good;
  pthread_mutex_unlock(&hints_lock);
  return good;
}

static void hint_set(const char *uri, int good) {
  uint64_t h = uri_hash(uri);
  int i, at = (int)(h % HINTS);
  pthread_mutex_lock(&hints_lock);
  for (i = 0; i < HINTS; i++)
    if (hints[i].uri == h || hints[i].uri == 0) {
      at = i;
      break;
    }
  hints[at].uri = h;
  hints[at].good = good;
  pthread_mutex_unlock(&hints_lock);
}

/* Host i's entry of a list: its own, or the one entry all hosts share. */
static void pick(const char *list, int i, char *out, size_t len) {
  int n = frond__db_pg_list_item(list, 0, NULL, 0);
  frond__db_pg_list_item(list, n > 1 ? i : 0, out, len);
}

static char *option(PQconninfoOption *o, const char *key) {
  for (; o != NULL && o->keyword != NULL; o++)
    if (strcmp(o->keyword, key) == 0)
      return o->val && o->val[0] ? strdup(o->val) : strdup("");
  return strdup("");
}

/* The hosts the connection p->conn was started with, as libpq read them
** (the URI, then the environment): p->nhost of them, or 1 when there is
** one, or when the lists do not match (libpq then says why). */
static int read_hosts(pg_db *p) {
  PQconninfoOption *o = PQconninfo(p->conn);
  char *tsa;
  int nh, na, np;
  if (o == NULL)
    return FROND_ENOMEM;
  p->host = option(o, "host");
  p->addr = option(o, "hostaddr");
  p->port = option(o, "port");
  tsa = option(o, "target_session_attrs");
  PQconninfoFree(o);
  if (!p->host || !p->addr || !p->port || !tsa) {
    free(tsa);
    return FROND_ENOMEM;
  }
  p->rotate = tsa[0] && strcmp(tsa, "any") != 0;
  free(tsa);
  nh = frond__db_pg_list_item(p->host, 0, NULL, 0);
  na = frond__db_pg_list_item(p->addr, 0, NULL, 0);
  np = frond__db_pg_list_item(p->port, 0, NULL, 0);
  p->nhost = nh > na ? nh : na;
  if ((nh != 1 && nh != p->nhost) || (na != 1 && na != p->nhost) ||
      (np != 1 && np != p->nhost) || (nh == 1 && na == 1))
    p->nhost = 1;
  return 0;
}

/* One connect, to host i of a list (-1: as the URI says), until the
** deadline (0: libpq's blocking connect, connect_timeout per host). */
static int connect_one(pg_db *p, int i, int64_t deadline, frond_error *err) {
  /* Keywords before dbname are defaults that the URI may override; the
  ** host, its address and port after it override the URI's lists. */
  static const char *const keys[] = {"connect_timeout",
                                     "application_name",
                                     "keepalives",
                                     "keepalives_idle",
                                     "keepalives_interval",
                                     "keepalives_count",
                                     "tcp_user_timeout",
                                     "dbname",
                                     "host",
                                     "hostaddr",
                                     "port",
                                     NULL};
  char host[256], addr[64], port[16], where[400];
  const char *vals[] = {p->connect_s, p->app, "1",  "10", "5",  "3",
                        "25000",      p->uri, host, addr, port, NULL};
  int rc;
  host[0] = addr[0] = port[0] = '\0'; /* "": the URI's own */
  if (i >= 0) {
    pick(p->host, i, host, sizeof(host));
    pick(p->addr, i, addr, sizeof(addr));
    pick(p->port, i, port, sizeof(port));
  }
  /* PQconnectdbParams, with the server's SQLSTATE in the message of a
  ** refused connection: the verbosity is a connection's, and only a
  ** connection that exists can be given it; PQreset then connects as
  ** PQconnectdbParams would. The attempt PQconnectStartParams began is
  ** dropped before it sent anything. */
  p->conn = PQconnectStartParams(keys, vals, 1);
  if (p->conn == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  PQsetErrorVerbosity(p->conn, PQERRORS_VERBOSE);
  if (p->nhost == 0 && read_hosts(p) != 0) {
    drop(p);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  if (i < 0 && p->nhost > 1)
    return 0; /* started only to read the lists */
  if (deadline > 0 ? reset_until(p, deadline) != 0 : (PQreset(p->conn), 0)) {
    drop(p);
    if (i >= 0)
      snprintf(where, sizeof(where),
               "no answer from host %d of %d (%s%s%s) before its share of "
               "the caller's deadline",
               i + 1, p->nhost, addr[0] ? addr : host, port[0] ? ":" : "",
               port);
    return frond__db_fail(&p->base, FROND_DB_ERROR, err, "connect",
                          i >= 0 ? where
                                 : "no connection before the caller's "
                                   "deadline");
  }
  if (PQstatus(p->conn) != CONNECTION_OK) {
    rc = connect_fail(p, err);
    drop(p);
    return rc;
  }
  return 0;
}

/* A connection, host by host when the URI names several: libpq moves to
** the next host on its connect_timeout only in its blocking connect, so
** under a deadline each host gets a share of what is left (a host that
** accepts and never answers costs its share, not the whole deadline).
** With target_session_attrs the host of the last connection is tried
** first: a fleet does not wait on a dead first host at every write. */
static int pg_connect(pg_db *p, frond_error *err) {
  PGresult *res;
  int64_t deadline, cap = frond__db_connect_deadline(&p->base), now;
  int rc = 0, k, i;
  /* The first connect reads the lists; with one host it connects. */
  if (p->nhost <= 1 && (rc = connect_one(p, -1, cap, err)) != 0)
    return rc;
  if (p->nhost > 1 && p->rotate)
    p->good = hint_get(p->uri) % p->nhost;
  if (p->nhost > 1)
    for (k = 0; k < p->nhost; k++) {
      drop(p);
      i = ((p->rotate ? p->good : 0) + k) % p->nhost;
      deadline = 0;
      if (cap > 0) {
        if ((now = frond__mono_ns()) >= cap)
          break; /* err holds the last host's failure */
        deadline = now + (cap - now) / (p->nhost - k);
      }
      if ((rc = connect_one(p, i, deadline, err)) == 0) {
        if (p->rotate && i != p->good)
          hint_set(p->uri, i);
        p->good = i;
        break;
      }
    }
  if (p->conn == NULL)
    return rc != 0 ? rc
                   : frond__db_fail(&p->base, FROND_DB_ERROR, err, "connect",
                                    "no connection before the caller's "
                                    "deadline");
  PQsetErrorVerbosity(p->conn, PQERRORS_DEFAULT);
  PQsetNoticeReceiver(p->conn, notice, p);
  PQsetnonblocking(p->conn, 1);
  /* After connecting, so that no option in the URI can drop them. */
  deadline = frond__db_deadline(&p->base);
  if (cap > 0 && cap < deadline)
    deadline = cap;
  res = text_query(p, p->session, deadline);
  if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK) {
    rc = pg_fail(p, res, FROND_DB_ERROR, err, "connect", "");
    drop(p);
  }
  PQclear(res);
  p->gen++;
  return rc;
}

/* Has the server closed this idle connection? Reads, without waiting,
** what it sent meanwhile. */
static int gone(pg_db *p) {
  struct pollfd pf;
  int i;
  if (p->conn == NULL)
    return 1;
  for (i = 0; i < 4; i++) {
    if (PQstatus(p->conn) != CONNECTION_OK || p->fatal)
      return 1;
    pf.fd = PQsocket(p->conn);
    pf.events = POLLIN;
    pf.revents = 0;
    if (poll(&pf, 1, 0) <= 0)
      return 0;
    if (!PQconsumeInput(p->conn))
      return 1;
    (void)PQisBusy(p->conn); /* parses it: a FATAL reaches notice() */
  }
  return PQstatus(p->conn) != CONNECTION_OK || p->fatal;
}

/* A usable connection: outside a transaction a closed one is replaced;
** inside, its loss fails the transaction (the server rolled it back). */
static int ready(pg_db *p, frond_error *err) {
  if (!gone(p))
    return 0;
  if (p->base.in_tx) {
    int rc = pg_fail(p, NULL, FROND_DB_ERROR, err, "transaction",
                     "the connection was lost; the transaction did not "
                     "commit: ");
    drop(p);
    return rc;
  }
  drop(p);
  return pg_connect(p, err);
}

static void free_hosts(pg_db *p) {
  free(p->host);
  free(p->addr);
  free(p->port);
}

static void pg_close(frond_db *db) {
  pg_db *p = (pg_db *)db;
  drop(p);
  free(p->uri);
  free_hosts(p);
}

/* Does msg quote the password of uri (libpq quotes a token it cannot
** decode)? */
static int shows_password(const char *uri, const char *msg) {
  size_t from, to;
  char *pw;
  int found;
  if (!frond__db_uri_password(uri, &from, &to) || to == from ||
      (pw = strndup(uri + from, to - from)) == NULL)
    return 0;
  found = strstr(msg, pw) != NULL;
  free(pw);
  return found;
}

static int pg_open(frond_db *db, const frond_db_uri *u, frond_error *err) {
  pg_db *p = (pg_db *)db;
  char *msg = NULL;
  PQconninfoOption *opts;
  int64_t ct = db->o.connect_timeout_ms > 0 ? db->o.connect_timeout_ms : 5000;
  int rc;
  if ((p->uri = strndup(u->target, u->target_len)) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  /* A URI libpq cannot read is the user's to fix, not a store outage. */
  if ((opts = PQconninfoParse(p->uri, &msg)) == NULL) {
    rc = msg == NULL ? frond__fail(err, FROND_ENOMEM, NULL)
         : shows_password(p->uri, msg)
             ? frond__fail(err, FROND_ESTORE_URI,
                           "postgresql URI: libpq cannot read it (its "
                           "message would show the password)")
             : frond__fail(err, FROND_ESTORE_URI, "postgresql URI: %s", msg);
    if (rc == FROND_ESTORE_URI && err != NULL) /* one line */
      err->message[strcspn(err->message, "\n")] = '\0';
    PQfreemem(msg);
    free(p->uri);
    return rc;
  }
  PQconninfoFree(opts);
  snprintf(p->connect_s, sizeof(p->connect_s), "%lld",
           (long long)((ct + 999) / 1000));
  snprintf(p->app, sizeof(p->app), "%s", db->o.application_name);
  snprintf(p->session, sizeof(p->session),
           "SET statement_timeout = %lld; "
           "SET idle_in_transaction_session_timeout = %lld",
           (long long)db->o.statement_timeout_ms,
           (long long)db->o.statement_timeout_ms);
  if ((rc = pg_connect(p, err)) != 0) {
    free(p->uri);
    free_hosts(p);
  }
  return rc;
}

static int pg_prepare(frond_db *db, const char *sql, int nparam,
                      const char *types, void **out, frond_error *err) {
  pg_db *p = (pg_db *)db;
  pg_stmt *s = calloc(1, sizeof(*s));
  int i;
  if (s == NULL || (s->sql = strdup(sql)) == NULL) {
    free(s);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  snprintf(s->name, sizeof(s->name), "frond_%u", ++p->nnames);
  for (i = 0; sql[i] && sql[i] != ' ' && i + 1 < (int)sizeof(s->what); i++)
    s->what[i] = (char)(sql[i] | 0x20);
  s->nparam = nparam;
  for (i = 0; i < nparam; i++)
    s->types[i] = types[i] == FROND_DB_INT ? INT8OID : 0;
  *out = s;
  return 0;
}

static void pg_finalize(frond_db *db, void *stmt) {
  pg_db *p = (pg_db *)db;
  pg_stmt *s = stmt;
  /* Outside a transaction only (inside, a failed one refuses it), and
  ** not when the connection is about to close anyway. */
  if (p->conn != NULL && s->gen == p->gen && !db->in_tx && !db->closing) {
    char sql[48];
    snprintf(sql, sizeof(sql), "DEALLOCATE %s", s->name);
    PQclear(text_query(p, sql, frond__db_deadline(db)));
    if (p->cut || PQstatus(p->conn) != CONNECTION_OK)
      drop(p);
  }
  free(s->sql);
  free(s);
}

/* Make s exist on this connection. Nothing runs, so when the connection
** turns out to be gone, one reconnect and retry is safe (outside a
** transaction). */
static int pg_make(pg_db *p, pg_stmt *s, frond_error *err) {
  int tries, rc;
  for (tries = 0; s->gen != p->gen; tries++) {
    PGresult *res =
        answer(p, PQsendPrepare(p->conn, s->name, s->sql, s->nparam, s->types),
               frond__db_deadline(&p->base));
    int broken = p->cut || PQstatus(p->conn) != CONNECTION_OK;
    if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK) {
      s->gen = p->gen;
    } else if (broken && !p->base.in_tx && tries == 0) {
      drop(p);
      if ((rc = pg_connect(p, err)) != 0) {
        PQclear(res);
        return rc;
      }
    } else {
      rc = pg_fail(p, res, FROND_DB_ERROR, err, s->what, "");
      if (broken)
        drop(p);
      PQclear(res);
      return rc;
    }
    PQclear(res);
  }
  return 0;
}

static int copy_rows(PGresult *res, frond_db_result *out) {
  int r, c, nrows = PQntuples(res), ncols = PQnfields(res);
  const char *tag = PQcmdStatus(res), *n = PQcmdTuples(res);
  frond__db_result_start(out, ncols);
  for (r = 0; r < nrows; r++)
    for (c = 0; c < ncols; c++)
      if (frond__db_result_put(
              out, PQgetisnull(res, r, c) ? FROND_DB_NULL : FROND_DB_TEXT, 0,
              PQgetvalue(res, r, c), (size_t)PQgetlength(res, r, c)) != 0)
        return FROND_ENOMEM;
  /* Rows written: PQcmdTuples also counts a SELECT's rows. */
  if (strncmp(tag, "INSERT", 6) == 0 || strncmp(tag, "UPDATE", 6) == 0 ||
      strncmp(tag, "DELETE", 6) == 0 || strncmp(tag, "MERGE", 5) == 0)
    frond__parse_i64(n, strlen(n), &out->changes);
  return 0;
}

static int pg_run(frond_db *db, void *stmt, const frond_db_arg *args,
                  frond_db_result *out, frond_error *err) {
  pg_db *p = (pg_db *)db;
  pg_stmt *s = stmt;
  char nums[FROND_DB_MAX_SLOTS][24];
  const char *vals[FROND_DB_MAX_SLOTS];
  PGresult *res;
  ExecStatusType st;
  int i, rc;
  for (i = 0; i < s->nparam; i++) {
    if (args[i].type == FROND_DB_INT) {
      snprintf(nums[i], sizeof(nums[i]), "%lld", (long long)args[i].i);
      vals[i] = nums[i];
    } else {
      vals[i] = args[i].type == FROND_DB_TEXT ? args[i].s : NULL;
    }
  }
  if ((rc = ready(p, err)) != 0 || (rc = pg_make(p, s, err)) != 0)
    return rc;
  res = answer(
      p, PQsendQueryPrepared(p->conn, s->name, s->nparam, vals, NULL, NULL, 0),
      frond__db_deadline(db));
  st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
    rc = copy_rows(res, out);
    PQclear(res);
    return rc == 0 ? 0 : frond__fail(err, FROND_ENOMEM, NULL);
  }
  if (p->cut || PQstatus(p->conn) != CONNECTION_OK) {
    /* Sent, then the connection broke: never sent again. */
    rc = db->in_tx ? pg_fail(p, res, FROND_DB_ERROR, err, s->what,
                             "the connection was lost; the transaction did not "
                             "commit: ")
                   : pg_fail(p, res, FROND_DB_LOST, err, s->what,
                             "the connection was lost before the answer; the "
                             "statement may or may not have taken effect: ");
    drop(p);
  } else {
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    rc = pg_fail(p, res,
                 state && strcmp(state, "23505") == 0 ? FROND_DB_UNIQUE
                                                      : FROND_DB_ERROR,
                 err, s->what, "");
  }
  PQclear(res);
  return rc;
}

static int pg_begin(frond_db *db, frond_error *err) {
  pg_db *p = (pg_db *)db;
  PGresult *res;
  int rc;
  if ((rc = ready(p, err)) != 0)
    return rc;
  res = text_query(p, "BEGIN ISOLATION LEVEL READ COMMITTED",
                   frond__db_deadline(db));
  if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK) {
    rc = pg_fail(p, res, FROND_DB_ERROR, err, "begin", "");
    if (p->cut || PQstatus(p->conn) != CONNECTION_OK)
      drop(p);
  }
  PQclear(res);
  return rc;
}

static int pg_commit(frond_db *db, frond_error *err) {
  pg_db *p = (pg_db *)db;
  PGresult *res;
  int rc = 0;
  if (gone(p)) { /* closed before COMMIT was sent: certainly not committed */
    rc = pg_fail(p, NULL, FROND_DB_ERROR, err, "commit",
                 "the connection was lost; the transaction did not commit: ");
    drop(p);
    return rc;
  }
  res = text_query(p, "COMMIT", frond__db_deadline(db));
  if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK &&
      strcmp(PQcmdStatus(res), "COMMIT") == 0) {
    rc = 0;
  } else if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK) {
    /* The server answers COMMIT with ROLLBACK for a failed transaction. */
    rc = frond__db_fail(db, FROND_DB_ERROR, err, "commit",
                        "the server rolled the transaction back");
  } else if (p->cut || PQstatus(p->conn) != CONNECTION_OK) {
    rc = pg_fail(p, res, FROND_DB_LOST, err, "commit",
                 "the connection was lost before COMMIT's answer; the "
                 "transaction may or may not have committed: ");
    drop(p);
  } else {
    rc = pg_fail(p, res, FROND_DB_ERROR, err, "commit", "");
    if (PQtransactionStatus(p->conn) != PQTRANS_IDLE)
      PQclear(text_query(p, "ROLLBACK", frond__db_deadline(db)));
    if (p->cut)
      drop(p);
  }
  PQclear(res);
  return rc;
}

static void pg_rollback(frond_db *db) {
  pg_db *p = (pg_db *)db;
  if (p->conn == NULL)
    return;
  PQclear(text_query(p, "ROLLBACK", frond__db_deadline(db)));
  if (p->cut || PQstatus(p->conn) != CONNECTION_OK)
    drop(p);
}

const frond_db_methods frond__db_pg = {
    .iVersion = 1,
    .zName = "postgresql",
    .szDb = sizeof(pg_db),
    .xOpen = pg_open,
    .xClose = pg_close,
    .xPrepare = pg_prepare,
    .xRun = pg_run,
    .xFinalize = pg_finalize,
    .xBegin = pg_begin,
    .xCommit = pg_commit,
    .xRollback = pg_rollback,
    .cParam = '$',
    .cQuote = '"',
    .flags = FROND_DB_RETURNING,
    .zNowMs = "(extract(epoch from clock_timestamp()) * 1000)::bigint",
    .zIfAbsent = "ON CONFLICT ({x}) DO NOTHING",
    .zBinary = "{x} COLLATE \"C\"",
    .zTsText = "to_char({x}, 'YYYY-MM-DD HH24:MI:SS')",
    .zTableExists = "SELECT 1 WHERE to_regclass($1) IS NOT NULL",
    .zForUpdate = " FOR UPDATE",
};
