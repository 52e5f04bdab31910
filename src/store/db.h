/* SPDX-License-Identifier: Apache-2.0 */
/*
** db.h -- one SQL layer under every user of a database: the segment store
** (store_sql.c) and the lease coordinator (coord_lease.c).
**
** This file contains the layer's API and the interface an engine
** implements. A user opens a URI, runs statements written once with
** typed parameters $1..$n, reads rows through typed getters, and brackets
** several statements in a transaction. The layer turns the statement into
** the engine's dialect, keeps it prepared, applies one set of connection
** settings per engine, and reports failures as frond_error with the
** engine's own words: STORE for the database, STORE_URI for the URI.
**
** URIs (one grammar for every user):
**   sqlite:///abs/path.db   sqlite:/abs/path.db   an absolute path
**   sqlite:relative.db                             relative to the cwd
**   sqlite::memory:         a private in-memory database; refused unless
**                           frond_db_options.allow_memory (it forgets
**                           everything when closed)
**   postgresql://...  postgres://...   any libpq URI; its query (sslmode,
**                           connect_timeout, application_name, ...) goes to
**                           libpq and overrides the layer's defaults
**   mysql://[user[:password]@][host][:port]/database[?options]
**   mariadb://...           the same (libmariadb): host a name, an IPv4
**                           address or [IPv6], port 3306 by default; user,
**                           password and database percent-decoded; options
**                           socket=/path (a unix socket instead of TCP),
**                           ssl-mode=DISABLED|PREFERRED|REQUIRED|VERIFY_CA|
**                           VERIFY_IDENTITY, ssl-ca=, ssl-cert=, ssl-key=,
**                           connect_timeout=seconds ('_' and '-' alike);
**                           see frond__db_mysql_parse
** Refused with STORE_URI: other schemes, a host in a sqlite URI
** (sqlite://host/x.db), an empty path, '?' or '#' in a sqlite URI (SQLite
** takes no options here, and SQLite's own "file:" URIs are not
** interpreted), control characters; a PostgreSQL URI that libpq cannot
** parse, with libpq's words; a MySQL URI without a database, with an
** unknown option, a bad port or a bad %-escape; a MySQL URI when the
** build has no MySQL support (FROND_WITH_MYSQL=OFF).
**
** Statements. A template is one SQL statement with parameters $1..$n
** (each may appear several times, each of $1..$n at least once; $n inside
** '...' or "..." is text) and dialect tokens in braces:
**   {now_ms}        the database's clock, unix milliseconds, a bigint
**   {if_absent:K}   ends a one-row INSERT: insert nothing when a row with
**                   the primary key K exists (ON CONFLICT (K) DO NOTHING;
**                   on SQLite an INSERT ... SELECT needs a WHERE before
**                   it; on MySQL the duplicate key error is the answer,
**                   see FROND_DB_ABSENT_BY_ERROR)
**   {binary:E}      E compared and ordered bytewise (E COLLATE "C")
**   {ts_text:E}     timestamp E as 'YYYY-MM-DD HH:MM:SS'
**   {id:N}          identifier N quoted for the dialect
**   {for_update}    ends a SELECT inside a transaction: lock the rows it
**                   reads (FOR UPDATE; nothing on SQLite, whose write
**                   transaction holds the whole database)
** Token arguments are names (letters, digits, '_', '.'). Refused: '?',
** ';' (one statement), a stray '}', unknown tokens. No comments or
** dollar quoting. LIMIT n is written plainly: every engine here spells it
** so. On PostgreSQL an int64 parameter is a bigint and a text or NULL one
** takes its type from where it stands, so a NULL needs a typed place (a
** column, coalesce(), CAST).
**
** Threads: a frond_db is used by one thread at a time (see NOMUTEX
** below); every call but the getters may block on the database, up to
** the timeouts below.
**
** Connection settings, one set per engine:
**   SQLite: WAL (retried while another process holds the lock, up to
**     connect_timeout_ms), synchronous=FULL (a committed allocation
**     survives a power cut), busy_timeout = statement_timeout_ms,
**     transactions BEGIN IMMEDIATE (the write lock first: a transaction
**     that read before writing could fail to upgrade without waiting for
**     the busy timeout). Mutex mode NOMUTEX: a frond_db is used by one
**     thread at a time, which every user ensures with its own lock (the
**     allocator's store_mu, the server's admin lock, the coordinator's
**     lock); the layer's own state (statement cache, transaction flags)
**     needs that anyway, so SQLite's per-call mutex would buy nothing.
**   PostgreSQL: connect_timeout, application_name, TCP keepalives and
**     tcp_user_timeout (a vanished server is noticed in ~25 s) as libpq
**     defaults the URI may override; then, per session, statement_timeout
**     and idle_in_transaction_session_timeout = statement_timeout_ms, set
**     after connecting so that no URI option can drop them. Transactions
**     READ COMMITTED: an UPDATE locks the row and re-reads the newest
**     version, which is what makes max_id = max_id + step atomic.
**   MySQL/MariaDB (db_mysql.c): libmariadb with auto-reconnect off,
**     CLIENT_FOUND_ROWS (an UPDATE counts the rows it matched, as the
**     other engines do, not only those whose value changed), utf8mb4;
**     per session READ COMMITTED (see db_mysql.c for why), sql_mode
**     ANSI_QUOTES, PIPES_AS_CONCAT, NO_BACKSLASH_ESCAPES (the templates'
**     SQL means the same everywhere) and STRICT_ALL_TABLES (out-of-range
**     values fail, never clip), time_zone UTC, innodb_lock_wait_timeout
**     and max_statement_time (MariaDB) or max_execution_time (MySQL) from
**     statement_timeout_ms. Every wait on the wire, the connect
**     included, is bounded by the client (the non-blocking API).
**
** Answers on the wire. Every statement's answer is awaited at most
** answer_timeout_ms (PostgreSQL, MySQL); then the connection is closed
** and the statement's outcome is unknown (FROND_DB_LOST), exactly as if
** the network had cut it. The default lets the server's statement
** timeout speak first; a caller that must not hang longer (the lease
** coordinator's fence writes) sets its own with
** frond__db_set_answer_timeout.
**
** Reconnection (PostgreSQL, MySQL). Before a statement is sent outside a
** transaction, a connection the server has closed (restart,
** pg_terminate_backend, KILL, wait_timeout: the server says so while we
** are idle) is replaced, once. Once a statement has been sent, a lost
** connection is an error (FROND_DB_LOST): the statement may or may not
** have taken effect, and the layer never sends it again; in particular a
** COMMIT (or a lone write) whose answer is lost is reported, never
** retried. Inside a transaction nothing reconnects: the caller rolls back
** and starts over.
**
** Adding an engine: a db_<name>.c with a frond_db_methods (the connection
** functions and the dialect, as db_mysql.c), its schemes in db.c's scheme
** table, its library in CMakeLists.txt (an option FROND_WITH_<NAME>) and
** scripts/deps.sh, a scripts/<name>.sh to start a throwaway server, and
** the integration tests run on it. Templates stay as they are, with one
** rule for MySQL: an UPDATE may not read its own table in a subquery
** except through a derived table (SELECT ... FROM (SELECT ... LIMIT n)
** t; the LIMIT keeps the optimizer from merging it back), which the other
** engines accept too.
*/
#ifndef FROND_DB_H
#define FROND_DB_H

#include "base/base.h"

#include <stddef.h>

typedef struct frond_db frond_db;
typedef struct frond_db_methods frond_db_methods;

/* ---- values ---- */

#define FROND_DB_NULL 'n'
#define FROND_DB_INT 'i'
#define FROND_DB_TEXT 't'

/* A parameter. Text is used during the call only (not copied). */
typedef struct frond_db_arg {
  char type; /* FROND_DB_NULL, _INT, _TEXT */
  int64_t i;
  const char *s;
} frond_db_arg;

static inline frond_db_arg frond__db_int(int64_t v) {
  frond_db_arg a = {FROND_DB_INT, v, NULL};
  return a;
}
/* A NULL s is SQL NULL. */
static inline frond_db_arg frond__db_text(const char *s) {
  frond_db_arg a = {s ? FROND_DB_TEXT : FROND_DB_NULL, 0, s};
  return a;
}
static inline frond_db_arg frond__db_null(void) {
  frond_db_arg a = {FROND_DB_NULL, 0, NULL};
  return a;
}

/* The rows of one statement, copied out of the engine: valid until the
** next statement run into it or frond__db_result_free. Zero-initialize
** ({0}); one result may be reused for many statements. */
typedef struct frond_db_cell {
  char type;  /* FROND_DB_NULL, _INT (i holds it), _TEXT */
  int64_t i;  /* the value of an INT cell */
  size_t off; /* the text (of INT cells too) at text + off, NUL-ended */
} frond_db_cell;

typedef struct frond_db_result {
  int nrows, ncols;
  int64_t changes; /* rows inserted, updated or deleted; 0 for a SELECT */
  frond_db_cell *cells;
  size_t ncells, cells_cap;
  char *text;
  size_t text_len, text_cap;
} frond_db_result;

void frond__db_result_free(frond_db_result *r);
/* Cell (row, col) as an int64: INT cells, and TEXT cells that are a
** decimal integer (PostgreSQL answers in text). STORE for NULL, text that
** is not an integer, or a cell out of range. */
int frond__db_get_int(const frond_db_result *r, int row, int col, int64_t *out,
                      frond_error *err);
/* The text of a cell, NULL for SQL NULL or a cell out of range. */
const char *frond__db_get_text(const frond_db_result *r, int row, int col);
int frond__db_is_null(const frond_db_result *r, int row, int col);

/* ---- connections ---- */

typedef struct frond_db_options {
  /* PostgreSQL connect_timeout (rounded up to seconds); SQLite: how long
  ** the switch to WAL is retried. 0: 5 s for PostgreSQL, 10 s SQLite. */
  int64_t connect_timeout_ms;
  /* PostgreSQL statement_timeout and idle_in_transaction_session_timeout;
  ** SQLite busy_timeout (a statement waits this long for another
  ** connection's lock). 0: 10 s. */
  int64_t statement_timeout_ms;
  const char *application_name; /* NULL: "frond"; the URI may override */
  int allow_memory;             /* accept sqlite::memory: */
  /* How long an answer may take on the wire (PostgreSQL, MySQL) before
  ** the connection is given up (FROND_DB_LOST). 0: statement_timeout_ms
  ** plus connect_timeout_ms, so that the server's timeout speaks first. */
  int64_t answer_timeout_ms;
  /* 0, or a point on frond__mono_ns's clock by which every connect
  ** (PostgreSQL, MySQL; the first and every reconnect) has finished, its
  ** session settings included, or failed: a cap on connect_timeout_ms
  ** for a caller that must not wait past its own deadline (the lease
  ** coordinator's fence write opens a connection for each write). A
  ** reconnect is capped by frond__db_set_deadline's cap too. */
  int64_t connect_deadline_ns;
} frond_db_options;

/* The earlier of the connect deadline and the cap in force on db (0:
** neither), for engines. */
int64_t frond__db_connect_deadline(const frond_db *db);

/* Error classes, for a caller that must tell them apart. */
#define FROND_DB_OK 0
#define FROND_DB_ERROR 1  /* any other failure */
#define FROND_DB_UNIQUE 2 /* a unique or primary key constraint */
#define FROND_DB_LOST                                                          \
  3 /* the connection broke after the statement was                            \
    ** sent: its outcome is unknown */
/* The database refuses in a way retrying cannot fix: no such database,
** user or role, a wrong password, no privilege, a SQLite file that cannot
** be created or written. The failure's code is STORE_PERMANENT. */
#define FROND_DB_PERMANENT 4

/*
** Permanent or transient. Each engine classes its failures by the
** database's own numbers, never its words: SQLite's result codes
** (CANTOPEN, READONLY, PERM, AUTH, NOTADB, CORRUPT are permanent),
** PostgreSQL's SQLSTATE (classes 28 and 3D, 42501; at connect the state
** comes from libpq's verbose message), MariaDB/MySQL's error numbers
** (1044, 1045, 1049, 1142, 1227, 1251, 1698, ...). Anything else (refused,
** timed out, too many connections, starting up or shutting down, failing
** over, a lost connection, a lock) is transient: FROND_ESTORE.
**
** frond__db_transient(code) is the one test every caller that retries a
** store makes: 1 for STORE (retry), 0 for STORE_PERMANENT, STORE_URI and
** anything else (stop, and say so).
*/
int frond__db_transient(int code);
/* The class of a PostgreSQL SQLSTATE (5 characters): FROND_DB_PERMANENT
** or FROND_DB_ERROR. Pure. */
int frond__db_pg_state_class(const char *state);
/* Item i of one of libpq's comma lists (host=a,b; port=1,2; a backslash
** escapes the next character) into out, cut to len - 1 bytes; returns the
** number of items (NULL or "" is one empty item, as libpq reads it). */
int frond__db_pg_list_item(const char *list, int i, char *out, size_t len);
/* The last SQLSTATE in a libpq message written with PQERRORS_VERBOSE
** ("FATAL:  28P01: password ..."), into state[6]; 1 when there is one,
** else 0 (state ""). Pure, fuzzed. */
int frond__db_pg_message_state(const char *msg, char state[6]);
/* The class of a MariaDB/MySQL error number: FROND_DB_PERMANENT or
** FROND_DB_ERROR. Pure. */
int frond__db_mysql_errno_class(unsigned no);

/* A parsed URI: which engine, and the rest as the engine takes it. */
typedef struct frond_db_uri {
  const frond_db_methods *engine;
  const char *target; /* the SQLite path, or the whole libpq URI */
  size_t target_len;
  int memory; /* sqlite::memory: */
} frond_db_uri;

/* Parse uri (NUL-terminated) without touching anything: a pure function,
** fuzzed. 0 or STORE_URI with a message. */
int frond__db_uri_parse(const char *uri, frond_db_uri *out, frond_error *err);

/* What frond__db_open checks in uri before it connects, with the default
** options (sqlite::memory: refused): 0 or STORE_URI. Pure. */
int frond__db_uri_check(const char *uri, frond_error *err);

/* Where the password of a scheme://user:password@host... URI is (of a
** frond:// URI, its token=): 1 with [*from, *to) in uri, or 0 when it
** has none. For messages, which never
** show it. */
int frond__db_uri_password(const char *uri, size_t *from, size_t *to);
/* The first n bytes of uri, for a message, into out (len bytes with the
** NUL, truncated to fit): every secret it may hold as "***", whatever
** its scheme's case or spelling: the password of an authority's
** user:password@ (each multi: member's), and the value of every token=
** and password= (any case).
** Returns the bytes written. */
size_t frond__uri_redact(const char *uri, size_t n, char *out, size_t len);

/* Open a connection. o may be NULL (defaults). 0, STORE_URI, STORE or
** NOMEM. */
int frond__db_open(const char *uri, const frond_db_options *o, frond_db **out,
                   frond_error *err);
void frond__db_close(frond_db *db);
/* The answer timeout (see frond_db_options) from now on; 0: back to the
** one the connection was opened with. */
void frond__db_set_answer_timeout(frond_db *db, int64_t ms);
/* A cap on every answer's deadline from now on: no statement, begin or
** commit waits past mono_ns (frond__mono_ns's clock); 0 lifts it. For a
** caller bounding several statements together (an emulated RETURNING is
** four round trips). */
void frond__db_set_deadline(frond_db *db, int64_t mono_ns);
/* The deadline (frond__mono_ns) for an answer to a statement sent now:
** now plus the answer timeout, or the cap when that comes first. */
int64_t frond__db_deadline(const frond_db *db);
/* "sqlite", "postgresql", "mysql": the engine, for messages and for a user that
** must still branch. */
const char *frond__db_engine(const frond_db *db);
/* The class (FROND_DB_*) of the last failure on db, FROND_DB_OK after a
** success. */
int frond__db_error_class(const frond_db *db);

/*
** Run one statement template with nargs arguments for $1..$nargs. On
** success the statement has run to its end (outside a transaction: it
** has committed) and res, when not NULL, holds its rows and changes.
** STORE on failure; inside a transaction, only a rollback may follow.
*/
int frond__db_exec(frond_db *db, const char *sql, const frond_db_arg *args,
                   int nargs, frond_db_result *res, frond_error *err);

/*
** A write of at most one row and that row read back, atomically: `write
** RETURNING cols` where the dialect has it; else `write`, then (when it
** changed a row) the SELECT `back` that finds the row again by what the
** write fixed, both in one transaction (the caller's, or one of their
** own). res gets no row when the write changed none.
*/
int frond__db_write_returning(frond_db *db, const char *write, const char *cols,
                              const char *back, const frond_db_arg *args,
                              int nargs, frond_db_result *res,
                              frond_error *err);

/* Transactions: the engine's write transaction (SQLite BEGIN IMMEDIATE,
** PostgreSQL READ COMMITTED). commit returns 0 only once committed; a
** commit whose answer is lost fails with class FROND_DB_LOST (it may have
** committed) and is never retried. rollback is always allowed, also after
** a failed statement or commit, and outside a transaction does nothing. */
int frond__db_begin(frond_db *db, frond_error *err);
int frond__db_commit(frond_db *db, frond_error *err);
void frond__db_rollback(frond_db *db);

/* Create table `name` with `ddl` unless it exists; a table made by
** someone else's DDL (Leaf's) is accepted as is, and so is one created by
** a concurrent caller meanwhile. STORE for a table the engine cannot run
** the layer's transactions on (a MyISAM table on MySQL). */
int frond__db_ensure_table(frond_db *db, const char *name, const char *ddl,
                           frond_error *err);
/* Whether table `name` exists, into *exists. */
int frond__db_table_exists(frond_db *db, const char *name, int *exists,
                           frond_error *err);

/* ---- the engine interface (one file per engine) ---- */

#define FROND_DB_MAX_ARGS 32  /* $1..$32 */
#define FROND_DB_MAX_SLOTS 64 /* placeholders in one statement */

/* Dialect flags. */
#define FROND_DB_RETURNING 1 /* INSERT/UPDATE/DELETE ... RETURNING */
/* {if_absent:K} renders to nothing, and the statement's duplicate key
** error (FROND_DB_UNIQUE) is its answer "nothing inserted": success with
** no change, the transaction still usable (MySQL rolls back the statement
** only). For MySQL, where ON DUPLICATE KEY UPDATE K = K would count the
** existing row as changed under CLIENT_FOUND_ROWS, and INSERT IGNORE
** would turn every other error into a warning too. */
#define FROND_DB_ABSENT_BY_ERROR 2

struct frond_db_methods {
  int iVersion;      /* 1 */
  const char *zName; /* "sqlite", "postgresql" */
  size_t szDb;       /* bytes of the engine's connection struct */

  /* The connection. db is zeroed, szDb bytes, base fields set. */
  int (*xOpen)(frond_db *db, const frond_db_uri *u, frond_error *err);
  void (*xClose)(frond_db *db);
  /* Prepare rendered sql (placeholders in the dialect's style) taking
  ** nparam arguments whose types are types[0..nparam-1]. */
  int (*xPrepare)(frond_db *db, const char *sql, int nparam, const char *types,
                  void **stmt, frond_error *err);
  /* Run it with args in placeholder order; rows and changes into res (not
  ** NULL). Set db->err_class on failure. */
  int (*xRun)(frond_db *db, void *stmt, const frond_db_arg *args,
              frond_db_result *res, frond_error *err);
  void (*xFinalize)(frond_db *db, void *stmt);
  int (*xBegin)(frond_db *db, frond_error *err);
  int (*xCommit)(frond_db *db, frond_error *err);
  void (*xRollback)(frond_db *db);

  /* The dialect. In the strings, {x} stands for the token's argument. */
  char cParam;              /* '$' for $n, '?' for ?n, 0 for positional ? */
  char cQuote;              /* identifier quote */
  unsigned flags;           /* FROND_DB_RETURNING */
  const char *zNowMs;       /* {now_ms} */
  const char *zIfAbsent;    /* {if_absent:x} */
  const char *zBinary;      /* {binary:x} */
  const char *zTsText;      /* {ts_text:x} */
  const char *zTableExists; /* a SELECT giving a row when table $1 exists */
  const char *zForUpdate;   /* {for_update} */
  /* NULL, or a SELECT giving one row for table $1 whose first cell is
  ** NULL when the layer can rely on the table, else why not (MySQL: a
  ** table in a storage engine without transactions). */
  const char *zTableCheck;
};

extern const frond_db_methods frond__db_sqlite;
extern const frond_db_methods frond__db_pg;
#ifdef FROND_WITH_MYSQL
extern const frond_db_methods frond__db_mysql;
#endif

/* A MySQL URI taken apart (see the grammar above). The strings point
** into the caller's buffer; NULL when absent. */
typedef struct frond_db_mysql_uri {
  const char *user, *password, *host, *database, *socket;
  unsigned port; /* 3306 when absent */
  int ssl_mode;  /* FROND_DB_SSL_*; PREFERRED when absent */
  const char *ssl_ca, *ssl_cert, *ssl_key;
  int64_t connect_timeout_ms; /* 0 when absent */
} frond_db_mysql_uri;

#define FROND_DB_SSL_DISABLED 0
#define FROND_DB_SSL_PREFERRED 1
#define FROND_DB_SSL_REQUIRED 2
#define FROND_DB_SSL_VERIFY_CA 3
#define FROND_DB_SSL_VERIFY_IDENTITY 4

/* Parse a mysql:// or mariadb:// URI (NUL-terminated) into out, the
** decoded strings into buf (len >= strlen(uri) + 8 always suffices). A
** pure function, fuzzed; it needs no MySQL library. 0 or STORE_URI with
** a message that never shows the password. */
int frond__db_mysql_parse(const char *uri, frond_db_mysql_uri *out, char *buf,
                          size_t len, frond_error *err);

/* Every engine's connection struct starts with this. */
struct frond_db {
  const frond_db_methods *m;
  frond_db_options o;
  unsigned flags;      /* the dialect's, an engine may clear some at open */
  int in_tx;           /* between begin and commit/rollback */
  int tx_failed;       /* a statement in the transaction failed */
  int err_class;       /* FROND_DB_* of the last failure */
  int closing;         /* in frond__db_close: engines may skip clean-up that
                       ** closing the connection does anyway */
  int64_t answer_ms;   /* the answer timeout in force (never 0) */
  int64_t deadline_ns; /* frond__db_set_deadline's cap, 0: none */
  struct frond_db_cached *cache; /* prepared statements, db.c's */
  int ncache;
  uint64_t tick;
};

/* For engines: a failure with the engine's words, as "<engine>: <what>:
** <words>" on one line, class recorded on db. Returns STORE, or
** STORE_PERMANENT for the class FROND_DB_PERMANENT. */
int frond__db_fail(frond_db *db, int cls, frond_error *err, const char *what,
                   const char *words);
/* For engines: start a result of ncols columns, then put cells row-major.
** text may be NULL for an INT cell (it is formatted). NOMEM on failure. */
void frond__db_result_start(frond_db_result *r, int ncols);
int frond__db_result_put(frond_db_result *r, char type, int64_t i,
                         const char *text, size_t len);

/* Render template sql for engine m into out (len bytes): placeholders in
** m's style, tokens expanded. *nparam receives the highest $n used;
** slots[k] the argument index (0-based) of the k-th placeholder, *nslots
** their count (what a positional engine binds). A pure function, fuzzed.
** 0, or INVAL with a message for a template it cannot render. */
int frond__db_render(const frond_db_methods *m, const char *sql, char *out,
                     size_t len, int *nparam, unsigned char *slots, int *nslots,
                     frond_error *err);

/* Put a SQLite connection in WAL mode, so several processes can share the
** file. Changing the journal mode, like the first look at a WAL file while
** another process recovers it, can fail with SQLITE_BUSY without the busy
** handler being called: this retries for up to timeout_ms. Returns the
** last SQLite result code (SQLITE_OK on success). */
struct sqlite3;
int frond__sqlite_use_wal(struct sqlite3 *db, int timeout_ms);

/* Test hook: clear dialect flags on an open db (e.g. FROND_DB_RETURNING,
** to run the emulation on an engine that has RETURNING). */
void frond__db_test_clear_flags(frond_db *db, unsigned flags);

#endif /* FROND_DB_H */
