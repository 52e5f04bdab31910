/* SPDX-License-Identifier: Apache-2.0 */
/*
** db_mysql.c -- the MySQL/MariaDB engine of the SQL layer (db.h), over
** libmariadb (MariaDB Connector/C).
**
** Every call on the wire goes through the library's non-blocking API
** (mysql_*_start / _cont) and a poll() bounded by the statement's
** deadline (db.h: answers on the wire), the connect by connect_timeout:
** a server that goes silent costs a bounded wait, never a hang. When the
** deadline passes, the socket is shut down, the library fails the call
** with CR_SERVER_LOST, and the connection is dropped: the statement's
** outcome is unknown (FROND_DB_LOST), as with a cable cut.
**
** Isolation: READ COMMITTED, as on PostgreSQL. Leaf runs on InnoDB's
** default, REPEATABLE READ, and both are correct for its allocation: the
** UPDATE is a locking read of the newest row version in either, and the
** SELECT that follows sees the transaction's own write. READ COMMITTED is
** chosen for the rest: every statement of a transaction sees the latest
** committed rows (the lease coordinator's checks read what others just
** wrote, where REPEATABLE READ would read the transaction's first
** snapshot), and InnoDB takes no gap locks, so an INSERT of a new node ID
** never waits on a neighbour's range lock or deadlocks on it. (With
** binlog_format=STATEMENT MySQL refuses writes at READ COMMITTED; MIXED,
** the default, and ROW log them by row.)
**
** Statements are server-side prepared statements, made on first use on
** each connection (a reconnect starts a new generation). Results are
** stored whole on the client (mysql_stmt_store_result) before they are
** read, so that no statement leaves the connection busy.
**
** The reconnect rule (db.h): before anything is sent outside a
** transaction, a connection the server has closed is replaced, once. The
** probe polls the idle socket: the server never speaks unasked, so any
** readable byte or hang-up means it is gone (KILL, shutdown, wait_timeout
** all close it, most with an error packet first).
*/
#include "store/db.h"

#include <errmsg.h>
#include <errno.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The library runs a non-blocking call on a stack of its own; TLS and the
** sanitizers' interceptors need more than its 16 KB default. */
#define ASYNC_STACK (256 * 1024)
#define CELL_BUF 256

typedef struct my_db {
  frond_db base;
  MYSQL *h;     /* NULL after a broken connection was dropped */
  unsigned gen; /* connections made so far; statements carry theirs */
  int mariadb;  /* the server is MariaDB, not MySQL */
  int plain;    /* ssl-mode PREFERRED met a server without TLS */
  int cut;      /* a wait ran past its deadline: the socket is shut */
  frond_db_mysql_uri u;
  char *buf;         /* u's strings */
  char session[400]; /* the SET run after each connect */
  char app[64];      /* the program_name connection attribute */
} my_db;

typedef struct my_stmt {
  MYSQL_STMT *st; /* on connection number gen; NULL: not yet */
  unsigned gen;
  char *sql;
  int nparam;
  char what[16];
} my_stmt;

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_rc;

/* mysql_init would do it on first use, but not thread-safely. */
static void lib_init(void) {
  lib_rc = mysql_library_init(0, NULL, NULL);
}

/* ---- waiting ---- */

/* Wait for what the library asked (status) until the deadline. Returns
** the events for the _cont call. Past the deadline the socket is shut
** down and both directions reported ready: the library's next read or
** write fails at once, so the call ends. */
static int wait_io(my_db *m, int status, int64_t deadline) {
  struct pollfd pf;
  int64_t left;
  int ms, n, lib = -1;
  pf.fd = mysql_get_socket(m->h);
  pf.events = (short)((status & MYSQL_WAIT_READ ? POLLIN : 0) |
                      (status & MYSQL_WAIT_WRITE ? POLLOUT : 0) |
                      (status & MYSQL_WAIT_EXCEPT ? POLLPRI : 0));
  for (;;) {
    left = (deadline - frond__mono_ns()) / 1000000;
    if (left <= 0 || m->cut) {
      shutdown(pf.fd, SHUT_RDWR);
      m->cut = 1;
      return MYSQL_WAIT_READ | MYSQL_WAIT_WRITE;
    }
    ms = left > 1000 ? 1000 : (int)left;
    if (status & MYSQL_WAIT_TIMEOUT) {
      lib = (int)mysql_get_timeout_value_ms(m->h);
      if (lib < ms)
        ms = lib;
    }
    pf.revents = 0;
    n = poll(&pf, 1, ms);
    if (n > 0)
      return (pf.revents & (POLLIN | POLLHUP | POLLERR) ? MYSQL_WAIT_READ : 0) |
             (pf.revents & (POLLOUT | POLLHUP | POLLERR) ? MYSQL_WAIT_WRITE
                                                         : 0) |
             (pf.revents & POLLPRI ? MYSQL_WAIT_EXCEPT : 0);
    if (n == 0 && ms == lib)
      return MYSQL_WAIT_TIMEOUT;
    if (n < 0 && errno != EINTR)
      m->cut = 1; /* cannot wait: give the connection up */
  }
}

/* Run a non-blocking call to its end: start, then cont (which reads the
** ready events as ev_) until the library says done. */
#define RUN(m, deadline, start, cont)                                          \
  do {                                                                         \
    int st_ = (start);                                                         \
    while (st_ != 0) {                                                         \
      int ev_ = wait_io((m), st_, (deadline));                                 \
      st_ = (cont);                                                            \
    }                                                                          \
  } while (0)

/* ---- connections ---- */

static int is_lost(unsigned e) {
  return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST ||
         e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR ||
         e == ER_CONNECTION_KILLED || e == ER_SERVER_SHUTDOWN ||
         e == ER_NET_READ_ERROR || e == ER_NET_READ_INTERRUPTED ||
         e == ER_NET_ERROR_ON_WRITE || e == ER_NET_WRITE_INTERRUPTED;
}

/* The engine's words: the message, error number and SQLSTATE; or that
** the deadline passed. */
static int my_fail(my_db *m, unsigned no, const char *state, const char *msg,
                   int cls, frond_error *err, const char *what,
                   const char *why) {
  char words[480];
  if (cls == FROND_DB_ERROR && !m->cut)
    cls = frond__db_mysql_errno_class(no);
  if (m->cut)
    snprintf(words, sizeof(words),
             "%sno answer within %lld ms; the connection was closed", why,
             (long long)m->base.answer_ms);
  else
    snprintf(words, sizeof(words), "%s%s (error %u, SQLSTATE %s)", why,
             msg && *msg ? msg : "unknown error", no, state ? state : "?");
  return frond__db_fail(&m->base, cls, err, what, words);
}

static int conn_fail(my_db *m, int cls, frond_error *err, const char *what,
                     const char *why) {
  return my_fail(m, mysql_errno(m->h), mysql_sqlstate(m->h), mysql_error(m->h),
                 cls, err, what, why);
}

/* A full server (max_connections) answers the handshake with error 1040;
** the library, waiting for TLS, reports a TLS error (2026) that quotes
** it. The server's own error comes first, as its number. */
static int connect_refused(my_db *m, frond_error *err) {
  const char *msg = mysql_error(m->h);
  if (mysql_errno(m->h) == 1040 ||
      (msg != NULL && strstr(msg, "1040 - Too many connections") != NULL))
    return my_fail(m, 1040, "08004", msg, FROND_DB_ERROR, err, "connect",
                   "too many connections (the database's "
                   "max_connections): ");
  return conn_fail(m, FROND_DB_ERROR, err, "connect", "");
}

static void drop(my_db *m) {
  if (m->h != NULL)
    mysql_close(m->h); /* invalidates the statements made on it */
  m->h = NULL;
  m->cut = 0;
}

static int set_options(my_db *m, MYSQL *h, int tls) {
  const frond_db_mysql_uri *u = &m->u;
  size_t stack = ASYNC_STACK;
  my_bool no = 0, yes = 1;
  int rc = 0;
  rc |= mysql_optionsv(h, MYSQL_OPT_NONBLOCK, &stack);
  rc |= mysql_optionsv(h, MYSQL_OPT_RECONNECT, &no);
  rc |= mysql_optionsv(h, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  rc |= mysql_optionsv(h, MYSQL_OPT_LOCAL_INFILE, &no);
  rc |= mysql_optionsv(h, MYSQL_OPT_CONNECT_ATTR_ADD, "program_name", m->app);
  if (u->socket != NULL) {
    unsigned proto = MYSQL_PROTOCOL_SOCKET;
    rc |= mysql_optionsv(h, MYSQL_OPT_PROTOCOL, &proto);
  }
  if (!tls) {
    rc |= mysql_optionsv(h, MYSQL_OPT_SSL_ENFORCE, &no);
    rc |= mysql_optionsv(h, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &no);
    return rc;
  }
  if (u->ssl_ca || u->ssl_cert || u->ssl_key)
    rc |= mysql_ssl_set(h, u->ssl_key, u->ssl_cert, u->ssl_ca, NULL, NULL);
  rc |= mysql_optionsv(h, MYSQL_OPT_SSL_ENFORCE, &yes);
  rc |= mysql_optionsv(h, MYSQL_OPT_SSL_VERIFY_SERVER_CERT,
                       u->ssl_mode >= FROND_DB_SSL_VERIFY_CA ? &yes : &no);
  return rc;
}

/* One statement by text (the session's SETs, START TRANSACTION); 0 or
** the library's error number. */
static unsigned query(my_db *m, const char *sql, int64_t deadline) {
  int ret = 0;
  RUN(m, deadline, mysql_real_query_start(&ret, m->h, sql, strlen(sql)),
      mysql_real_query_cont(&ret, m->h, ev_));
  return ret == 0            ? 0
         : mysql_errno(m->h) ? mysql_errno(m->h)
                             : CR_UNKNOWN_ERROR;
}

static int my_connect(my_db *m, frond_error *err) {
  const frond_db_mysql_uri *u = &m->u;
  int64_t ct = u->connect_timeout_ms > 0          ? u->connect_timeout_ms
               : m->base.o.connect_timeout_ms > 0 ? m->base.o.connect_timeout_ms
                                                  : 5000;
  int64_t deadline = frond__mono_ns() + ct * 1000000;
  int64_t st = m->base.o.statement_timeout_ms;
  int64_t cap = frond__db_connect_deadline(&m->base);
  if (cap > 0 && cap < deadline)
    deadline = cap;
  int tls = u->ssl_mode != FROND_DB_SSL_DISABLED, rc;
  char timeouts[160];
  MYSQL *ret = NULL;
  if ((m->h = mysql_init(NULL)) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  m->cut = 0;
  if (set_options(m, m->h, tls) != 0) {
    rc = conn_fail(m, FROND_DB_ERROR, err, "connect", "options: ");
    drop(m);
    return rc;
  }
  /* With socket= the library still goes by TCP to any host but
  ** "localhost": no host, so that the socket is what is used. */
  RUN(m, deadline,
      mysql_real_connect_start(&ret, m->h, u->socket ? NULL : u->host, u->user,
                               u->password, u->database, u->port, u->socket,
                               CLIENT_FOUND_ROWS),
      mysql_real_connect_cont(&ret, m->h, ev_));
  if (ret == NULL) {
    rc = m->cut ? frond__db_fail(&m->base, FROND_DB_ERROR, err, "connect",
                                 "no connection within the connect timeout")
                : connect_refused(m, err);
    drop(m);
    return rc;
  }
  /* The library goes on in plain text when the server offers no TLS
  ** (unless it verifies certificates): REQUIRED is checked here. */
  if (u->ssl_mode >= FROND_DB_SSL_REQUIRED &&
      mysql_get_ssl_cipher(m->h) == NULL) {
    drop(m);
    return frond__db_fail(&m->base, FROND_DB_ERROR, err, "connect",
                          "ssl-mode requires TLS and the server offered none");
  }
  m->mariadb = strstr(mysql_get_server_info(m->h), "MariaDB") != NULL;
  /* The lock wait in whole seconds (at least 1); the statement time as
  ** each server spells it (MySQL's bounds SELECTs only). */
  if (m->mariadb)
    snprintf(timeouts, sizeof(timeouts),
             ", innodb_lock_wait_timeout = %lld, max_statement_time = "
             "%lld.%03lld",
             (long long)((st + 999) / 1000), (long long)(st / 1000),
             (long long)(st % 1000));
  else
    snprintf(timeouts, sizeof(timeouts),
             ", innodb_lock_wait_timeout = %lld, max_execution_time = %lld",
             (long long)((st + 999) / 1000), (long long)st);
  snprintf(m->session, sizeof(m->session),
           "SET SESSION sql_mode = 'ANSI_QUOTES,PIPES_AS_CONCAT,"
           "NO_BACKSLASH_ESCAPES,STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,"
           "NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'%s",
           timeouts);
  if (query(m, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
            deadline) != 0 ||
      query(m, m->session, deadline) != 0) {
    rc = conn_fail(m, FROND_DB_ERROR, err, "connect", "session settings: ");
    drop(m);
    return rc;
  }
  m->gen++;
  return 0;
}

/* Has the server closed this idle connection? It never speaks unasked:
** anything to read, or a hang-up, means it is gone. */
static int gone(my_db *m) {
  struct pollfd pf;
  if (m->h == NULL)
    return 1;
  pf.fd = mysql_get_socket(m->h);
  pf.events = POLLIN;
  pf.revents = 0;
  return poll(&pf, 1, 0) != 0;
}

/* A usable connection: outside a transaction a closed one is replaced;
** inside, its loss fails the transaction (the server rolled it back). */
static int ready(my_db *m, frond_error *err) {
  if (!gone(m))
    return 0;
  drop(m);
  if (m->base.in_tx)
    return frond__db_fail(&m->base, FROND_DB_ERROR, err, "transaction",
                          "the connection was lost; the transaction did not "
                          "commit");
  return my_connect(m, err);
}

static void my_close(frond_db *db) {
  my_db *m = (my_db *)db;
  drop(m);
  free(m->buf);
}

static int my_open(frond_db *db, const frond_db_uri *u, frond_error *err) {
  my_db *m = (my_db *)db;
  size_t n = u->target_len + 8;
  char *uri;
  int rc;
  pthread_once(&lib_once, lib_init);
  if (lib_rc != 0)
    return frond__fail(err, FROND_ESTORE,
                       "mysql: the client library did not "
                       "initialize");
  if ((uri = strndup(u->target, u->target_len)) == NULL ||
      (m->buf = malloc(n)) == NULL) {
    free(uri);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  /* The options' strings are not kept (db.c): reconnects need this. */
  snprintf(m->app, sizeof(m->app), "%s", db->o.application_name);
  rc = frond__db_mysql_parse(uri, &m->u, m->buf, n, err);
  free(uri);
  if (rc == 0 && (rc = my_connect(m, err)) != 0) {
    free(m->buf);
    m->buf = NULL;
  }
  return rc;
}

/* ---- statements ---- */

static int my_prepare(frond_db *db, const char *sql, int nparam,
                      const char *types, void **out, frond_error *err) {
  my_stmt *s = calloc(1, sizeof(*s));
  int i;
  (void)db;
  (void)types; /* bound per run, by each argument's type */
  if (s == NULL || (s->sql = strdup(sql)) == NULL) {
    free(s);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (i = 0; sql[i] && sql[i] != ' ' && i + 1 < (int)sizeof(s->what); i++)
    s->what[i] = (char)(sql[i] | 0x20);
  s->nparam = nparam;
  *out = s;
  return 0;
}

static void my_finalize(frond_db *db, void *stmt) {
  my_stmt *s = stmt;
  (void)db;
  /* On a dropped connection the library has already detached it: this
  ** only frees it. */
  if (s->st != NULL)
    mysql_stmt_close(s->st);
  free(s->sql);
  free(s);
}

static int stmt_fail(my_db *m, my_stmt *s, frond_error *err) {
  unsigned no = mysql_stmt_errno(s->st);
  int rc;
  if (m->cut || is_lost(no)) {
    /* Sent, then the connection broke: never sent again. */
    rc = m->base.in_tx
             ? my_fail(m, no, mysql_stmt_sqlstate(s->st),
                       mysql_stmt_error(s->st), FROND_DB_ERROR, err, s->what,
                       "the connection was lost; the transaction did not "
                       "commit: ")
             : my_fail(m, no, mysql_stmt_sqlstate(s->st),
                       mysql_stmt_error(s->st), FROND_DB_LOST, err, s->what,
                       "the connection was lost before the answer; the "
                       "statement may or may not have taken effect: ");
    drop(m);
    return rc;
  }
  return my_fail(m, no, mysql_stmt_sqlstate(s->st), mysql_stmt_error(s->st),
                 no == ER_DUP_ENTRY ? FROND_DB_UNIQUE : FROND_DB_ERROR, err,
                 s->what, "");
}

/* Make s exist on this connection. Nothing runs, so when the connection
** turns out to be gone, one reconnect and retry is safe (outside a
** transaction). */
static int make(my_db *m, my_stmt *s, frond_error *err) {
  unsigned no;
  int tries, ret, rc, lost;
  for (tries = 0; s->st == NULL || s->gen != m->gen; tries++) {
    if (s->st != NULL)
      mysql_stmt_close(s->st); /* detached: made on an older connection */
    if ((s->st = mysql_stmt_init(m->h)) == NULL)
      return frond__fail(err, FROND_ENOMEM, NULL);
    ret = 0;
    RUN(m, frond__db_deadline(&m->base),
        mysql_stmt_prepare_start(&ret, s->st, s->sql, strlen(s->sql)),
        mysql_stmt_prepare_cont(&ret, s->st, ev_));
    if (ret == 0) {
      s->gen = m->gen;
      continue;
    }
    no = mysql_stmt_errno(s->st);
    lost = m->cut || is_lost(no);
    if (lost && !m->base.in_tx && tries == 0) {
      drop(m);
      if ((rc = my_connect(m, err)) != 0)
        return rc;
      continue;
    }
    /* Nothing ran: an error, never "lost". */
    rc = my_fail(m, no, mysql_stmt_sqlstate(s->st), mysql_stmt_error(s->st),
                 FROND_DB_ERROR, err, s->what,
                 lost && m->base.in_tx ? "the connection was lost; the "
                                         "transaction did not commit: "
                                       : "");
    mysql_stmt_close(s->st);
    s->st = NULL;
    if (lost)
      drop(m);
    return rc;
  }
  return 0;
}

static int is_int(const MYSQL_FIELD *f) {
  switch (f->type) {
  case MYSQL_TYPE_TINY:
  case MYSQL_TYPE_SHORT:
  case MYSQL_TYPE_INT24:
  case MYSQL_TYPE_LONG:
    return 1;
  case MYSQL_TYPE_LONGLONG:
    return !(f->flags & UNSIGNED_FLAG); /* above INT64_MAX: as text */
  default:
    return 0;
  }
}

/* Copy the stored rows of s into out. */
static int copy_rows(my_db *m, my_stmt *s, int ncols, frond_db_result *out,
                     frond_error *err) {
  MYSQL_RES *meta = mysql_stmt_result_metadata(s->st);
  MYSQL_FIELD *f = meta ? mysql_fetch_fields(meta) : NULL;
  MYSQL_BIND *b = calloc((size_t)ncols, sizeof(*b));
  int64_t *ints = calloc((size_t)ncols, sizeof(*ints));
  char *text = malloc((size_t)ncols * CELL_BUF), *big = NULL;
  unsigned long *lens = calloc((size_t)ncols, sizeof(*lens));
  my_bool *nulls = calloc((size_t)ncols, sizeof(*nulls));
  int c, rc = 0, fr = 0;
  if (meta == NULL || f == NULL || !b || !ints || !text || !lens || !nulls) {
    rc = meta == NULL && mysql_stmt_errno(s->st)
             ? stmt_fail(m, s, err)
             : frond__fail(err, FROND_ENOMEM, NULL);
    goto done;
  }
  for (c = 0; c < ncols; c++) {
    b[c].length = &lens[c];
    b[c].is_null = &nulls[c];
    if (is_int(&f[c])) {
      b[c].buffer_type = MYSQL_TYPE_LONGLONG;
      b[c].buffer = &ints[c];
    } else {
      b[c].buffer_type = MYSQL_TYPE_STRING;
      b[c].buffer = text + (size_t)c * CELL_BUF;
      b[c].buffer_length = CELL_BUF;
    }
  }
  if (mysql_stmt_bind_result(s->st, b) != 0) {
    rc = stmt_fail(m, s, err);
    goto done;
  }
  frond__db_result_start(out, ncols);
  while (rc == 0 &&
         ((fr = mysql_stmt_fetch(s->st)) == 0 || fr == MYSQL_DATA_TRUNCATED)) {
    for (c = 0; c < ncols && rc == 0; c++) {
      if (nulls[c]) {
        rc = frond__db_result_put(out, FROND_DB_NULL, 0, NULL, 0);
      } else if (b[c].buffer_type == MYSQL_TYPE_LONGLONG) {
        rc = frond__db_result_put(out, FROND_DB_INT, ints[c], NULL, 0);
      } else if (lens[c] <= CELL_BUF) {
        rc = frond__db_result_put(out, FROND_DB_TEXT, 0, b[c].buffer, lens[c]);
      } else {
        /* Longer than the cell buffer: fetch the whole value. */
        MYSQL_BIND one;
        char *nb = realloc(big, lens[c]);
        if (nb == NULL) {
          rc = FROND_ENOMEM;
          break;
        }
        big = nb;
        memset(&one, 0, sizeof(one));
        one.buffer_type = MYSQL_TYPE_STRING;
        one.buffer = big;
        one.buffer_length = lens[c];
        if (mysql_stmt_fetch_column(s->st, &one, (unsigned)c, 0) != 0) {
          rc = stmt_fail(m, s, err);
          break;
        }
        rc = frond__db_result_put(out, FROND_DB_TEXT, 0, big, lens[c]);
      }
    }
    if (rc == FROND_ENOMEM)
      rc = frond__fail(err, FROND_ENOMEM, NULL);
  }
  if (rc == 0 && fr == 1)
    rc = stmt_fail(m, s, err);
done:
  if (s->st != NULL)
    mysql_stmt_free_result(s->st);
  if (meta != NULL)
    mysql_free_result(meta);
  free(b);
  free(ints);
  free(text);
  free(big);
  free(lens);
  free(nulls);
  return rc;
}

static int my_run(frond_db *db, void *stmt, const frond_db_arg *args,
                  frond_db_result *out, frond_error *err) {
  my_db *m = (my_db *)db;
  my_stmt *s = stmt;
  MYSQL_BIND pb[FROND_DB_MAX_SLOTS];
  unsigned long lens[FROND_DB_MAX_SLOTS];
  int64_t vals[FROND_DB_MAX_SLOTS];
  int64_t deadline;
  int i, ret = 0, ncols;
  memset(pb, 0, sizeof(pb[0]) * (size_t)s->nparam);
  for (i = 0; i < s->nparam; i++) {
    if (args[i].type == FROND_DB_INT) {
      vals[i] = args[i].i;
      pb[i].buffer_type = MYSQL_TYPE_LONGLONG;
      pb[i].buffer = &vals[i];
    } else if (args[i].type == FROND_DB_TEXT) {
      lens[i] = (unsigned long)strlen(args[i].s);
      pb[i].buffer_type = MYSQL_TYPE_STRING;
      pb[i].buffer = (void *)(uintptr_t)args[i].s; /* only read */
      pb[i].buffer_length = lens[i];
      pb[i].length = &lens[i];
    } else {
      pb[i].buffer_type = MYSQL_TYPE_NULL;
    }
  }
  if ((ret = ready(m, err)) != 0 || (ret = make(m, s, err)) != 0)
    return ret;
  if (s->nparam > 0 && mysql_stmt_bind_param(s->st, pb) != 0)
    return stmt_fail(m, s, err);
  deadline = frond__db_deadline(db);
  RUN(m, deadline, mysql_stmt_execute_start(&ret, s->st),
      mysql_stmt_execute_cont(&ret, s->st, ev_));
  if (ret != 0)
    return stmt_fail(m, s, err);
  ncols = (int)mysql_stmt_field_count(s->st);
  if (ncols == 0) {
    frond__db_result_start(out, 0);
    out->changes = (int64_t)mysql_stmt_affected_rows(s->st);
    return 0;
  }
  RUN(m, deadline, mysql_stmt_store_result_start(&ret, s->st),
      mysql_stmt_store_result_cont(&ret, s->st, ev_));
  if (ret != 0)
    return stmt_fail(m, s, err);
  return copy_rows(m, s, ncols, out, err);
}

/* ---- transactions ---- */

static int my_begin(frond_db *db, frond_error *err) {
  my_db *m = (my_db *)db;
  unsigned no;
  int rc;
  if ((rc = ready(m, err)) != 0)
    return rc;
  if ((no = query(m, "START TRANSACTION", frond__db_deadline(db))) == 0)
    return 0;
  rc = conn_fail(m, FROND_DB_ERROR, err, "begin", "");
  if (m->cut || is_lost(no))
    drop(m);
  return rc;
}

static int my_commit(frond_db *db, frond_error *err) {
  my_db *m = (my_db *)db;
  my_bool ret = 0;
  unsigned no;
  int rc;
  if (gone(m)) { /* closed before COMMIT was sent: certainly not committed */
    drop(m);
    return frond__db_fail(db, FROND_DB_ERROR, err, "commit",
                          "the connection was lost; the transaction did not "
                          "commit");
  }
  RUN(m, frond__db_deadline(db), mysql_commit_start(&ret, m->h),
      mysql_commit_cont(&ret, m->h, ev_));
  if (ret == 0)
    return 0;
  no = mysql_errno(m->h);
  if (m->cut || is_lost(no)) {
    rc = conn_fail(m, FROND_DB_LOST, err, "commit",
                   "the connection was lost before COMMIT's answer; the "
                   "transaction may or may not have committed: ");
    drop(m);
    return rc;
  }
  rc = conn_fail(m, FROND_DB_ERROR, err, "commit", "");
  query(m, "ROLLBACK", frond__db_deadline(db));
  return rc;
}

static void my_rollback(frond_db *db) {
  my_db *m = (my_db *)db;
  my_bool ret = 0;
  if (m->h == NULL)
    return;
  RUN(m, frond__db_deadline(db), mysql_rollback_start(&ret, m->h),
      mysql_rollback_cont(&ret, m->h, ev_));
  if (ret != 0 && (m->cut || is_lost(mysql_errno(m->h))))
    drop(m);
}

const frond_db_methods frond__db_mysql = {
    .iVersion = 1,
    .zName = "mysql",
    .szDb = sizeof(my_db),
    .xOpen = my_open,
    .xClose = my_close,
    .xPrepare = my_prepare,
    .xRun = my_run,
    .xFinalize = my_finalize,
    .xBegin = my_begin,
    .xCommit = my_commit,
    .xRollback = my_rollback,
    .cParam = 0,
    .cQuote = '`',
    .flags = FROND_DB_ABSENT_BY_ERROR,
    .zNowMs = "CAST(UNIX_TIMESTAMP(SYSDATE(3)) * 1000 AS SIGNED)",
    .zIfAbsent = "",
    .zBinary = "CAST({x} AS BINARY)",
    .zTsText = "DATE_FORMAT({x}, '%Y-%m-%d %H:%i:%s')",
    .zTableExists = "SELECT 1 FROM information_schema.tables WHERE "
                    "table_schema = DATABASE() AND table_name = $1",
    .zForUpdate = " FOR UPDATE",
    /* Leaf's allocation is an UPDATE then a SELECT: without transactions
    ** (MyISAM, Aria, MEMORY) another node's UPDATE can come between and
    ** two nodes read the same max_id. */
    .zTableCheck = "SELECT CASE WHEN engine = 'InnoDB' THEN NULL ELSE "
                   "CONCAT('its storage engine is ', coalesce(engine, "
                   "'none'), ', which has no transactions: two nodes could "
                   "get the same range; ALTER TABLE ', table_name, "
                   "' ENGINE=InnoDB') END FROM information_schema.tables "
                   "WHERE table_schema = DATABASE() AND table_name = $1",
};
