/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_store_db.c -- the SQL layer (db.h) on SQLite: the URI grammar,
** templates rendered for every dialect, typed parameters and NULLs, rows
** changed, transactions and their failure rules, RETURNING and its
** emulation, the connection settings, the statement cache, and which
** failures are permanent (STORE_PERMANENT) for every engine's numbers.
** PostgreSQL is tested against a real server in
** tests/integration/test_segment_db_pg.py.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "sqlite_fixture.h"

#include "store/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const frond_db_options mem_opts = {0, 0, NULL, 1, 0, 0};

static frond_db *mem(void) {
  frond_db *db = NULL;
  frond_error e = {0, ""};
  assert_int_equal(frond__db_open("sqlite::memory:", &mem_opts, &db, &e), 0);
  return db;
}

static void exec_ok(frond_db *db, const char *sql) {
  frond_error e = {0, ""};
  int rc = frond__db_exec(db, sql, NULL, 0, NULL, &e);
  if (rc != 0)
    fail_msg("%s: %s", sql, e.message);
}

/* ---- URIs ---- */

static void test_uri_grammar(void **state) {
  static const struct {
    const char *uri;
    int rc;
    const char *target; /* NULL: the whole URI */
    int memory;
  } cases[] = {
      {"sqlite:///var/lib/frond.db", 0, "/var/lib/frond.db", 0},
      {"sqlite:/abs.db", 0, "/abs.db", 0},
      {"sqlite:rel/f.db", 0, "rel/f.db", 0},
      {"sqlite:frond.db", 0, "frond.db", 0},
      {"sqlite::memory:", 0, ":memory:", 1},
      {"sqlite:file::memory:", 0, "file::memory:", 0},
      {"postgresql://u@h:5432/db?sslmode=disable", 0, NULL, 0},
      {"postgres://h/db", 0, NULL, 0},
      {"sqlite://host/x.db", FROND_ESTORE_URI, NULL, 0},
      {"sqlite://localhost/x.db", FROND_ESTORE_URI, NULL, 0},
      {"sqlite://", FROND_ESTORE_URI, NULL, 0},
      {"sqlite:", FROND_ESTORE_URI, NULL, 0},
      {"sqlite:///x.db?mode=memory", FROND_ESTORE_URI, NULL, 0},
      {"sqlite:x.db#frag", FROND_ESTORE_URI, NULL, 0},
      {"sqlite:a\nb.db", FROND_ESTORE_URI, NULL, 0},
      {"SQLITE:x.db", FROND_ESTORE_URI, NULL, 0},
      {"postgresql:db", FROND_ESTORE_URI, NULL, 0},
      {"postgresqlx://h/db", FROND_ESTORE_URI, NULL, 0},
#ifdef FROND_WITH_MYSQL
      {"mysql://h/db", 0, NULL, 0},
      {"mariadb://u:p@[::1]:3307/db?ssl-mode=required", 0, NULL, 0},
#else
      {"mysql://h/db", FROND_ESTORE_URI, NULL, 0},
#endif
      {"mysql://h", FROND_ESTORE_URI, NULL, 0},
      {"mysqlx://h/db", FROND_ESTORE_URI, NULL, 0},
      {"", FROND_ESTORE_URI, NULL, 0},
  };
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(cases); i++) {
    frond_db_uri u;
    frond_error e = {0, ""};
    int rc = frond__db_uri_parse(cases[i].uri, &u, &e);
    if (rc != cases[i].rc)
      fail_msg("%s: %d, expected %d (%s)", cases[i].uri, rc, cases[i].rc,
               e.message);
    if (rc != 0) {
      assert_int_equal(e.code, rc);
      assert_true(e.message[0] != '\0');
      assert_null(strchr(e.message, '\n'));
      continue;
    }
    assert_non_null(u.engine);
    assert_int_equal(u.memory, cases[i].memory);
    if (cases[i].target != NULL) {
      assert_ptr_equal(u.engine, &frond__db_sqlite);
      assert_int_equal(u.target_len, strlen(cases[i].target));
      assert_memory_equal(u.target, cases[i].target, u.target_len);
    } else {
#ifdef FROND_WITH_MYSQL
      assert_ptr_equal(u.engine, cases[i].uri[0] == 'm' ? &frond__db_mysql
                                                        : &frond__db_pg);
#else
      assert_ptr_equal(u.engine, &frond__db_pg);
#endif
      assert_string_equal(u.target, cases[i].uri);
    }
  }
  assert_int_equal(frond__db_uri_parse(NULL, &(frond_db_uri){0}, NULL),
                   FROND_ESTORE_URI);
}

/* A password never reaches a message. */
static void test_uri_redacted(void **state) {
  frond_db_uri u;
  frond_error e = {0, ""};
  assert_int_equal(
      frond__db_uri_parse("oracle://app:s3cret@db:1521/ids", &u, &e),
      FROND_ESTORE_URI);
  assert_null(strstr(e.message, "s3cret"));
  assert_non_null(strstr(e.message, "oracle://app:***@db:1521/ids"));
  assert_int_equal(frond__db_uri_parse("oracle://h/x", &u, &e),
                   FROND_ESTORE_URI);
  assert_non_null(strstr(e.message, "oracle://h/x"));
  /* A MySQL URI refused for its options or escapes. */
  assert_int_equal(
      frond__db_uri_parse("mysql://app:s3cret@db/ids?nope=1", &u, &e),
      FROND_ESTORE_URI);
  assert_null(strstr(e.message, "s3cret"));
  assert_int_equal(frond__db_uri_parse("mysql://app:s3%zzcret@db/ids", &u, &e),
                   FROND_ESTORE_URI);
  assert_null(strstr(e.message, "s3"));
}

/* The MySQL URI taken apart: decoded fields, defaults, and refusals. */
static void test_mysql_uri(void **state) {
  char buf[512];
  frond_db_mysql_uri u;
  frond_error e = {0, ""};
  static const char *const bad[] = {
      "mysql://h",                      /* no database */
      "mysql://h/",                     /* empty database */
      "mysql://h/a/b",                  /* '/' in the database */
      "mysql://h:0/db",                 /* port out of range */
      "mysql://h:65536/db",             /* port out of range */
      "mysql://h:/db",                  /* empty port */
      "mysql://h:+5/db",                /* sign */
      "mysql://h:12ab/db",              /* not a number */
      "mysql://[::1/db",                /* unclosed [ */
      "mysql://[::1]x/db",              /* junk after ] */
      "mysql://[zz]/db",                /* not IPv6 */
      "mysql://h%41/db",                /* % in a host */
      "mysql://u:p%4@h/db",             /* truncated escape */
      "mysql://u:p%00@h/db",            /* NUL */
      "mysql://h/db%zz",                /* bad escape */
      "mysql://h/db#x",                 /* fragment */
      "mysql://h/db?ssl-mode=maybe",    /* unknown ssl mode */
      "mysql://h/db?socket=rel.sock",   /* relative socket */
      "mysql://h/db?connect_timeout=0", /* out of range */
      "mysql://h/db?connect_timeout=x", /* not a number */
      "mysql://h/db?charset=latin1",    /* unknown option */
      "mysql://h/db?socket",            /* not name=value */
      "mysql://h/db?socket=",           /* empty */
      "postgresql://h/db",              /* another scheme */
  };
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    if (frond__db_mysql_parse(bad[i], &u, buf, sizeof(buf), &e) !=
        FROND_ESTORE_URI)
      fail_msg("%s accepted", bad[i]);
    assert_true(e.message[0] != '\0');
  }
  assert_int_equal(
      frond__db_mysql_parse("mysql://h/db", &u, buf, sizeof(buf), &e), 0);
  assert_string_equal(u.host, "h");
  assert_string_equal(u.database, "db");
  assert_null(u.user);
  assert_null(u.password);
  assert_null(u.socket);
  assert_int_equal(u.port, 3306);
  assert_int_equal(u.ssl_mode, FROND_DB_SSL_PREFERRED);
  assert_int_equal(u.connect_timeout_ms, 0);
  assert_int_equal(
      frond__db_mysql_parse("mariadb://le%40f:p%3Aw%40d@[fe80::1]:3307/"
                            "ids%20db?ssl_mode=Verify_Identity&ssl-ca=/a%20b&"
                            "connect-timeout=7&&socket=/run/x.sock",
                            &u, buf, sizeof(buf), &e),
      0);
  assert_string_equal(u.user, "le@f");
  assert_string_equal(u.password, "p:w@d");
  assert_string_equal(u.host, "fe80::1");
  assert_int_equal(u.port, 3307);
  assert_string_equal(u.database, "ids db");
  assert_int_equal(u.ssl_mode, FROND_DB_SSL_VERIFY_IDENTITY);
  assert_string_equal(u.ssl_ca, "/a b");
  assert_int_equal(u.connect_timeout_ms, 7000);
  assert_string_equal(u.socket, "/run/x.sock");
  /* No host (the socket only), an empty password, '@' in the password. */
  assert_int_equal(frond__db_mysql_parse("mysql://root:@/frond?socket=/s", &u,
                                         buf, sizeof(buf), &e),
                   0);
  assert_null(u.host);
  assert_string_equal(u.user, "root");
  assert_string_equal(u.password, "");
  assert_int_equal(
      frond__db_mysql_parse("mysql://u:a@b@h/d", &u, buf, sizeof(buf), &e), 0);
  assert_string_equal(u.password, "a@b");
  assert_string_equal(u.host, "h");
  /* A buffer too small is refused, never overrun. */
  assert_int_equal(frond__db_mysql_parse("mysql://h/database", &u, buf, 8, &e),
                   FROND_ESTORE_URI);
}

static void test_open_errors(void **state) {
  frond_db *db = NULL;
  frond_error e = {0, ""};
  /* Refused by default: it would forget everything when closed. */
  assert_int_equal(frond__db_open("sqlite::memory:", NULL, &db, &e),
                   FROND_ESTORE_URI);
  assert_null(db);
  /* libpq's own parser judges PostgreSQL URIs, before any connection. */
  assert_int_equal(frond__db_open("postgresql://[::1/db", NULL, &db, &e),
                   FROND_ESTORE_URI);
  assert_non_null(strstr(e.message, "postgresql URI: "));
  assert_int_equal(
      frond__db_open("postgresql://h/db?no_such_option=1", NULL, &db, &e),
      FROND_ESTORE_URI);
  assert_non_null(strstr(e.message, "no_such_option"));
  /* libpq quotes a token it cannot decode: not when it is a password. */
  assert_int_equal(
      frond__db_open("postgresql://u:se%zzcret@h/db", NULL, &db, &e),
      FROND_ESTORE_URI);
  assert_null(strstr(e.message, "se%zzcret"));
  assert_int_equal(
      frond__db_open("sqlite:///nonexistent-dir/x.db", NULL, &db, &e),
      FROND_ESTORE_PERMANENT);
  assert_non_null(strstr(e.message, "unable to open"));
  assert_non_null(strstr(e.message, "No such file or directory"));
  assert_non_null(strstr(e.message, "the directory /nonexistent-dir does not "
                                    "exist"));
  assert_null(db);
  assert_int_equal(frond__db_uri_check("sqlite::memory:", &e),
                   FROND_ESTORE_URI);
  assert_int_equal(frond__db_uri_check("sqlite:///nonexistent-dir/x.db", &e),
                   0);
}

/* ---- templates ---- */

/* A dialect like the MySQL one db.h describes: positional parameters. */
static frond_db_methods positional;

static void render_is(const frond_db_methods *m, const char *sql,
                      const char *want, int nparam) {
  char out[512];
  unsigned char slots[FROND_DB_MAX_SLOTS];
  int np = -1, ns = -1;
  frond_error e = {0, ""};
  if (frond__db_render(m, sql, out, sizeof(out), &np, slots, &ns, &e) != 0)
    fail_msg("%s: %s", sql, e.message);
  assert_string_equal(out, want);
  assert_int_equal(np, nparam);
}

static void test_render(void **state) {
  char out[64];
  unsigned char slots[FROND_DB_MAX_SLOTS];
  int np, ns;
  positional = frond__db_sqlite;
  positional.cParam = 0;
  positional.cQuote = '`';
  positional.zIfAbsent = "ON DUPLICATE KEY UPDATE {x} = {x}";
  render_is(&frond__db_pg, "SELECT $1, $2, $1", "SELECT $1, $2, $1", 2);
  render_is(&frond__db_sqlite, "SELECT $1, $2, $1", "SELECT ?1, ?2, ?1", 2);
  render_is(&positional, "SELECT $2, $1, $2", "SELECT ?, ?, ?", 2);
  assert_int_equal(frond__db_render(&positional, "SELECT $2, $1, $2", out,
                                    sizeof(out), &np, slots, &ns, NULL),
                   0);
  assert_int_equal(ns, 3);
  assert_int_equal(slots[0], 1);
  assert_int_equal(slots[1], 0);
  assert_int_equal(slots[2], 1);
  /* Quoted text is copied as is: no parameter, no token. */
  render_is(&frond__db_sqlite, "SELECT '$1 {now_ms} it''s', \"a$2\"",
            "SELECT '$1 {now_ms} it''s', \"a$2\"", 0);
  render_is(&frond__db_pg, "SELECT {now_ms}",
            "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint", 0);
  render_is(&frond__db_sqlite, "INSERT INTO t VALUES ($1) {if_absent:k}",
            "INSERT INTO t VALUES (?1) ON CONFLICT (k) DO NOTHING", 1);
  render_is(&positional, "INSERT INTO t VALUES ($1) {if_absent:k}",
            "INSERT INTO t VALUES (?) ON DUPLICATE KEY UPDATE k = k", 1);
  render_is(&frond__db_pg, "ORDER BY {binary:tag}",
            "ORDER BY tag COLLATE \"C\"", 0);
  render_is(&frond__db_pg, "SELECT {ts_text:t}",
            "SELECT to_char(t, 'YYYY-MM-DD HH24:MI:SS')", 0);
  render_is(&frond__db_pg, "SELECT {id:owner}", "SELECT \"owner\"", 0);
  render_is(&positional, "SELECT {id:owner}", "SELECT `owner`", 0);
}

static void test_render_errors(void **state) {
  static const char *const bad[] = {
      "SELECT $0",
      "SELECT $33",
      "SELECT $1, $3",
      "SELECT $99999999999999999999",
      "SELECT {nope}",
      "SELECT {now_ms:x}",
      "SELECT {id}",
      "SELECT {id:}",
      "SELECT 'open",
      "SELECT \"open",
      "SELECT ?",
      "SELECT 1; SELECT 2",
      "SELECT {now_ms",
      "SELECT {a{b}",
      "SELECT }",
      "SELECT {id:a\"b}",
      "SELECT {binary:a?b}",
      "SELECT {if_absent:k) OR (1}",
  };
  char out[256];
  unsigned char slots[FROND_DB_MAX_SLOTS];
  int np, ns;
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    frond_error e = {0, ""};
    if (frond__db_render(&frond__db_pg, bad[i], out, sizeof(out), &np, slots,
                         &ns, &e) != FROND_EINVAL)
      fail_msg("rendered: %s", bad[i]);
    assert_true(e.message[0] != '\0');
  }
  /* Too small a buffer is an error, never a cut statement. */
  assert_int_equal(frond__db_render(&frond__db_pg, "SELECT {now_ms}", out, 10,
                                    &np, slots, &ns, NULL),
                   FROND_EINVAL);
}

/* ---- statements ---- */

static void test_params_and_nulls(void **state) {
  frond_db *db = mem();
  frond_db_result r = {0};
  frond_error e = {0, ""};
  frond_db_arg a[3];
  const char *odd = "it's \"$1\" {now_ms} \xc3\xa9";
  int64_t v;
  exec_ok(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, s TEXT, n INTEGER)");
  a[0] = frond__db_int(INT64_MIN);
  a[1] = frond__db_text(odd);
  a[2] = frond__db_null();
  assert_int_equal(
      frond__db_exec(db, "INSERT INTO t VALUES ($1, $2, $3)", a, 3, &r, &e), 0);
  assert_int_equal(r.changes, 1);
  a[0] = frond__db_int(INT64_MAX);
  a[1] = frond__db_text("42");
  a[2] = frond__db_int(-7);
  assert_int_equal(
      frond__db_exec(db, "INSERT INTO t VALUES ($1, $2, $3)", a, 3, &r, &e), 0);
  assert_int_equal(
      frond__db_exec(db, "SELECT k, s, n FROM t ORDER BY k", NULL, 0, &r, &e),
      0);
  assert_int_equal(r.nrows, 2);
  assert_int_equal(r.ncols, 3);
  assert_int_equal(r.changes, 0);
  assert_int_equal(frond__db_get_int(&r, 0, 0, &v, &e), 0);
  assert_true(v == INT64_MIN);
  assert_string_equal(frond__db_get_text(&r, 0, 1), odd);
  assert_true(frond__db_is_null(&r, 0, 2));
  assert_null(frond__db_get_text(&r, 0, 2));
  assert_int_equal(frond__db_get_int(&r, 0, 2, &v, &e), FROND_ESTORE);
  assert_non_null(strstr(e.message, "NULL"));
  assert_int_equal(frond__db_get_int(&r, 0, 1, &v, &e), FROND_ESTORE);
  assert_int_equal(frond__db_get_int(&r, 1, 0, &v, &e), 0);
  assert_true(v == INT64_MAX);
  assert_string_equal(frond__db_get_text(&r, 1, 0), "9223372036854775807");
  assert_int_equal(frond__db_get_int(&r, 1, 1, &v, &e), 0); /* text "42" */
  assert_int_equal(v, 42);
  assert_int_equal(frond__db_get_int(&r, 1, 2, &v, &e), 0);
  assert_int_equal(v, -7);
  assert_false(frond__db_is_null(&r, 1, 2));
  /* Cells that do not exist. */
  assert_true(frond__db_is_null(&r, 2, 0));
  assert_null(frond__db_get_text(&r, 0, 3));
  assert_int_equal(frond__db_get_int(&r, -1, 0, &v, &e), FROND_ESTORE);
  /* A real is not an integer, whatever SQLite would round it to. */
  assert_int_equal(frond__db_exec(db, "SELECT 1.5", NULL, 0, &r, &e), 0);
  assert_int_equal(frond__db_get_int(&r, 0, 0, &v, &e), FROND_ESTORE);
  /* Too few arguments for the template. */
  assert_int_equal(frond__db_exec(db, "SELECT $1, $2", a, 1, &r, &e),
                   FROND_EINVAL);
  assert_int_equal(r.nrows, 0);
  frond__db_result_free(&r);
  frond__db_close(db);
}

static void test_changes_and_if_absent(void **state) {
  frond_db *db = mem();
  frond_db_result r = {0};
  frond_error e = {0, ""};
  frond_db_arg a[2] = {frond__db_int(1), frond__db_text("x")};
  exec_ok(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, s TEXT)");
  assert_int_equal(frond__db_exec(db,
                                  "INSERT INTO t VALUES ($1, $2) {if_absent:k}",
                                  a, 2, &r, &e),
                   0);
  assert_int_equal(r.changes, 1);
  assert_int_equal(frond__db_exec(db,
                                  "INSERT INTO t VALUES ($1, $2) {if_absent:k}",
                                  a, 2, &r, &e),
                   0);
  assert_int_equal(r.changes, 0);
  exec_ok(db, "INSERT INTO t VALUES (2, 'y'), (3, 'y')");
  assert_int_equal(
      frond__db_exec(db, "UPDATE t SET s = 'z' WHERE k >= 2", NULL, 0, &r, &e),
      0);
  assert_int_equal(r.changes, 2);
  /* Neither DDL nor a SELECT reports the last writer's count. */
  assert_int_equal(frond__db_exec(db, "CREATE TABLE u (x)", NULL, 0, &r, &e),
                   0);
  assert_int_equal(r.changes, 0);
  assert_int_equal(
      frond__db_exec(db, "DELETE FROM t WHERE k = 99", NULL, 0, &r, &e), 0);
  assert_int_equal(r.changes, 0);
  /* A unique violation is classed, with SQLite's words. */
  assert_int_equal(
      frond__db_exec(db, "INSERT INTO t VALUES ($1, $2)", a, 2, &r, &e),
      FROND_ESTORE);
  assert_int_equal(frond__db_error_class(db), FROND_DB_UNIQUE);
  assert_non_null(strstr(e.message, "sqlite: insert: UNIQUE constraint"));
  assert_int_equal(frond__db_exec(db, "SELECT 1", NULL, 0, &r, &e), 0);
  assert_int_equal(frond__db_error_class(db), FROND_DB_OK);
  assert_int_equal(frond__db_exec(db, "SELECT * FROM nope", NULL, 0, &r, &e),
                   FROND_ESTORE);
  assert_int_equal(frond__db_error_class(db), FROND_DB_ERROR);
  assert_non_null(strstr(e.message, "no such table"));
  frond__db_result_free(&r);
  frond__db_close(db);
}

static int64_t count(frond_db *db, const char *sql) {
  frond_db_result r = {0};
  int64_t n = -1;
  if (frond__db_exec(db, sql, NULL, 0, &r, NULL) != 0 ||
      frond__db_get_int(&r, 0, 0, &n, NULL) != 0)
    n = -1;
  frond__db_result_free(&r);
  return n;
}

static void test_transactions(void **state) {
  frond_db *db = mem();
  frond_error e = {0, ""};
  frond_db_arg a = frond__db_int(5);
  exec_ok(db, "CREATE TABLE t (k INTEGER PRIMARY KEY)");
  assert_int_equal(frond__db_begin(db, &e), 0);
  assert_int_equal(frond__db_begin(db, &e), FROND_EINVAL);
  exec_ok(db, "INSERT INTO t VALUES (1)");
  frond__db_rollback(db);
  assert_int_equal(count(db, "SELECT count(*) FROM t"), 0);
  frond__db_rollback(db); /* outside a transaction: nothing */
  assert_int_equal(frond__db_commit(db, &e), FROND_EINVAL);

  assert_int_equal(frond__db_begin(db, &e), 0);
  exec_ok(db, "INSERT INTO t VALUES (1)");
  assert_int_equal(frond__db_commit(db, &e), 0);
  assert_int_equal(count(db, "SELECT count(*) FROM t"), 1);

  /* A failed statement poisons the transaction: nothing more runs, and
  ** commit rolls back what came before. */
  assert_int_equal(frond__db_begin(db, &e), 0);
  assert_int_equal(
      frond__db_exec(db, "INSERT INTO t VALUES ($1)", &a, 1, NULL, &e), 0);
  assert_int_equal(
      frond__db_exec(db, "INSERT INTO t VALUES (1)", NULL, 0, NULL, &e),
      FROND_ESTORE);
  assert_int_equal(frond__db_exec(db, "SELECT 1", NULL, 0, NULL, &e),
                   FROND_ESTORE);
  assert_non_null(strstr(e.message, "roll it back"));
  assert_int_equal(frond__db_commit(db, &e), FROND_ESTORE);
  assert_non_null(strstr(e.message, "rolled back"));
  assert_int_equal(count(db, "SELECT count(*) FROM t"), 1);
  /* And the connection is usable again. */
  assert_int_equal(frond__db_begin(db, &e), 0);
  assert_int_equal(frond__db_commit(db, &e), 0);
  frond__db_close(db);
}

static void write_returning(frond_db *db) {
  frond_db_result r = {0};
  frond_error e = {0, ""};
  frond_db_arg a[2] = {frond__db_text("a"), frond__db_int(10)};
  int64_t v;
  int i;
  for (i = 1; i <= 3; i++) {
    assert_int_equal(frond__db_write_returning(
                         db, "UPDATE t SET v = v + $2 WHERE k = $1", "v, k",
                         "SELECT v, k FROM t WHERE k = $1", a, 2, &r, &e),
                     0);
    assert_int_equal(r.nrows, 1);
    assert_int_equal(r.changes, 1);
    assert_int_equal(frond__db_get_int(&r, 0, 0, &v, &e), 0);
    assert_int_equal(v, 100 + 10 * i);
    assert_string_equal(frond__db_get_text(&r, 0, 1), "a");
  }
  a[0] = frond__db_text("missing");
  assert_int_equal(frond__db_write_returning(
                       db, "UPDATE t SET v = v + $2 WHERE k = $1", "v, k",
                       "SELECT v, k FROM t WHERE k = $1", a, 2, &r, &e),
                   0);
  assert_int_equal(r.nrows, 0);
  assert_int_equal(r.changes, 0);
  /* Inside the caller's transaction, undone with it. */
  a[0] = frond__db_text("a");
  assert_int_equal(frond__db_begin(db, &e), 0);
  assert_int_equal(
      frond__db_write_returning(db, "UPDATE t SET v = v + $2 WHERE k = $1", "v",
                                "SELECT v FROM t WHERE k = $1", a, 2, &r, &e),
      0);
  assert_int_equal(frond__db_get_int(&r, 0, 0, &v, &e), 0);
  assert_int_equal(v, 140);
  frond__db_rollback(db);
  assert_int_equal(count(db, "SELECT v FROM t"), 130);
  frond__db_result_free(&r);
}

static void test_write_returning(void **state) {
  frond_db *db = mem();
  exec_ok(db, "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)");
  exec_ok(db, "INSERT INTO t VALUES ('a', 100)");
  write_returning(db);
  frond__db_close(db);
  /* The same through the emulation an engine without RETURNING gets. */
  db = mem();
  frond__db_test_clear_flags(db, FROND_DB_RETURNING);
  exec_ok(db, "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)");
  exec_ok(db, "INSERT INTO t VALUES ('a', 100)");
  write_returning(db);
  frond__db_close(db);
}

/* More statements than the cache holds, over and over: each is made
** again after its eviction and answers right. */
static void test_statement_cache(void **state) {
  frond_db *db = mem();
  char sql[64];
  int round, i;
  for (round = 0; round < 3; round++)
    for (i = 0; i < 40; i++) {
      snprintf(sql, sizeof(sql), "SELECT %d + 0", i);
      assert_int_equal(count(db, sql), i);
    }
  frond__db_close(db);
}

/* ---- settings ---- */

static void test_file_settings(void **state) {
  frond_db *db;
  frond_error e = {0, ""};
  frond_db_result r = {0};
  frond_db_options o = {0, 1234, NULL, 0, 0, 0};
  int64_t v;
  assert_int_equal(frond__db_open(uri, &o, &db, &e), 0);
  assert_string_equal(frond__db_engine(db), "sqlite");
  assert_int_equal(frond__db_exec(db, "PRAGMA journal_mode", NULL, 0, &r, &e),
                   0);
  assert_string_equal(frond__db_get_text(&r, 0, 0), "wal");
  assert_int_equal(count(db, "PRAGMA synchronous"), 2); /* FULL */
  assert_int_equal(count(db, "PRAGMA busy_timeout"), 1234);
  /* The database's clock, in unix ms: near this process's. */
  assert_int_equal(frond__db_exec(db, "SELECT {now_ms}", NULL, 0, &r, &e), 0);
  assert_int_equal(frond__db_get_int(&r, 0, 0, &v, &e), 0);
  assert_true(llabs(v - (int64_t)time(NULL) * 1000) < 600000);
  frond__db_result_free(&r);
  frond__db_close(db);
}

/* A writer waits statement_timeout_ms for another connection's lock, then
** fails with SQLite's words. */
static void test_busy_timeout(void **state) {
  frond_db *a, *b;
  frond_error e = {0, ""};
  frond_db_options o = {0, 100, NULL, 0, 0, 0};
  int64_t t0;
  assert_int_equal(frond__db_open(uri, NULL, &a, &e), 0);
  assert_int_equal(frond__db_open(uri, &o, &b, &e), 0);
  assert_int_equal(frond__db_begin(a, &e), 0);
  t0 = frond__mono_ns();
  assert_int_equal(frond__db_begin(b, &e), FROND_ESTORE);
  assert_true(frond__mono_ns() - t0 >= 90 * 1000000LL);
  assert_non_null(strstr(e.message, "locked"));
  frond__db_rollback(a);
  assert_int_equal(frond__db_begin(b, &e), 0);
  assert_int_equal(frond__db_commit(b, &e), 0);
  frond__db_close(a);
  frond__db_close(b);
}

static void test_ensure_table(void **state) {
  frond_db *db = mem();
  frond_error e = {0, ""};
  /* Made by someone else's DDL: accepted as it is. */
  exec_ok(db, "CREATE TABLE `leaf_alloc` (`biz_tag` varchar(128) PRIMARY KEY,"
              " `max_id` bigint(20), `extra` int)");
  assert_int_equal(frond__db_ensure_table(db, "leaf_alloc",
                                          "CREATE TABLE leaf_alloc (x)", &e),
                   0);
  assert_int_equal(count(db, "SELECT count(*) FROM pragma_table_info("
                             "'leaf_alloc') WHERE name = 'extra'"),
                   1);
  assert_int_equal(
      frond__db_ensure_table(db, "other", "CREATE TABLE other (x)", &e), 0);
  assert_int_equal(
      frond__db_ensure_table(db, "other", "CREATE TABLE other (x)", &e), 0);
  assert_int_equal(count(db, "SELECT count(*) FROM other"), 0);
  assert_int_equal(frond__db_ensure_table(db, "bad", "CREATE TABLE bad (", &e),
                   FROND_ESTORE);
  frond__db_close(db);
}

/* ---- permanent or transient ---- */

/* What retrying cannot fix fails with STORE_PERMANENT, by the engines'
** numbers; the rest is STORE, which callers retry. */
static void test_permanent(void **state) {
  static const char *const pg_permanent[] = {"28P01", "28000", "3D000",
                                             "42501"};
  static const char *const pg_transient[] = {"08006", "08001", "57P03", "57P01",
                                             "53300", "40001", "40P01", "25006",
                                             "57014", "55P03", "XX000", ""};
  static const unsigned my_permanent[] = {1044, 1045, 1049, 1142,
                                          1227, 1698, 1820, 4151};
  static const unsigned my_transient[] = {2002, 2003, 2006, 2013, 1040,
                                          1053, 1205, 1213, 1290, 0};
  char st[6];
  size_t i;
  frond_db *db = NULL;
  frond_error e = {0, ""};
  FILE *f;
  assert_int_equal(frond__db_transient(FROND_ESTORE), 1);
  assert_int_equal(frond__db_transient(FROND_ESTORE_PERMANENT), 0);
  assert_int_equal(frond__db_transient(FROND_ESTORE_URI), 0);
  assert_int_equal(frond__db_transient(0), 0);
  for (i = 0; i < FROND__ARRAY_SIZE(pg_permanent); i++)
    assert_int_equal(frond__db_pg_state_class(pg_permanent[i]),
                     FROND_DB_PERMANENT);
  for (i = 0; i < FROND__ARRAY_SIZE(pg_transient); i++)
    assert_int_equal(frond__db_pg_state_class(pg_transient[i]), FROND_DB_ERROR);
  assert_int_equal(frond__db_pg_state_class(NULL), FROND_DB_ERROR);
  for (i = 0; i < FROND__ARRAY_SIZE(my_permanent); i++)
    assert_int_equal(frond__db_mysql_errno_class(my_permanent[i]),
                     FROND_DB_PERMANENT);
  for (i = 0; i < FROND__ARRAY_SIZE(my_transient); i++)
    assert_int_equal(frond__db_mysql_errno_class(my_transient[i]),
                     FROND_DB_ERROR);
  /* libpq's verbose words: the last server to refuse is the one that
  ** counts (libpq stops there; one starting up it passes over). */
  assert_int_equal(
      frond__db_pg_message_state(
          "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  "
          "28P01: password authentication failed for user \"frond\"",
          st),
      1);
  assert_string_equal(st, "28P01");
  assert_int_equal(
      frond__db_pg_message_state(
          "connection to server at \"a\", port 1 failed: FATAL:  57P03: the "
          "database system is starting up\nconnection to server at \"b\", "
          "port 2 failed: FATAL:  3D000: database \"x\" does not exist",
          st),
      1);
  assert_string_equal(st, "3D000");
  /* Refused, timed out, or words without a state: none. */
  assert_int_equal(frond__db_pg_message_state(
                       "connection to server at \"127.0.0.1\", port 1 "
                       "failed: Connection refused",
                       st),
                   0);
  assert_string_equal(st, "");
  assert_int_equal(frond__db_pg_message_state(
                       "FATAL:  password authentication failed for user", st),
                   0);
  assert_int_equal(frond__db_pg_message_state("FATAL:  28P0", st), 0);
  assert_int_equal(frond__db_pg_message_state("", st), 0);
  /* SQLite: a file that is not a database will not become one. */
  assert_non_null(f = fopen(path, "w"));
  fputs("this is not a SQLite database, and no retry makes it one\n", f);
  fclose(f);
  assert_int_equal(frond__db_open(uri, NULL, &db, &e), FROND_ESTORE_PERMANENT);
  assert_null(db);
  assert_non_null(strstr(e.message, "not a database"));
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uri_grammar),
      cmocka_unit_test(test_uri_redacted),
      cmocka_unit_test(test_mysql_uri),
      cmocka_unit_test(test_open_errors),
      cmocka_unit_test(test_render),
      cmocka_unit_test(test_render_errors),
      cmocka_unit_test(test_params_and_nulls),
      cmocka_unit_test(test_changes_and_if_absent),
      cmocka_unit_test(test_transactions),
      cmocka_unit_test(test_write_returning),
      cmocka_unit_test(test_statement_cache),
      cmocka_unit_test(test_file_settings),
      cmocka_unit_test(test_busy_timeout),
      cmocka_unit_test(test_ensure_table),
      cmocka_unit_test(test_permanent),
  };
  return frond_run_tests(tests, setup, teardown);
}
