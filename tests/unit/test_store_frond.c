/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_store_frond.c -- the frond:// store's pure parts and its failures
** without a server: the URI grammar (what it takes, what it refuses and
** that a refusal never shows the token), the response head and the JSON
** its servers answer, each read against a guard page; a server that
** accepts and never answers is STORE_TIMEOUT, none at all STORE, with
** every attempt named; a frond:// URI is refused where a database is
** wanted (a lease, a multi: member).
*/
#include "testutil.h"

#include "store/db.h"
#include "store/store_frond.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int refused(const char *uri, const char *words) {
  frond_fs_uri u;
  frond_error e = {0, ""};
  int rc = frond__fs_uri_parse(uri, &u, &e);
  if (rc == 0)
    return 0;
  assert_int_equal(rc, FROND_ESTORE_URI);
  if (strstr(e.message, words) == NULL)
    fail_msg("%s: \"%s\" lacks \"%s\"", uri, e.message, words);
  return 1;
}

static void test_uri_grammar(void **state) {
  frond_fs_uri u;
  frond_error e = {0, ""};
  (void)state;
  assert_int_equal(frond__fs_uri_parse("frond://127.0.0.1:8080", &u, &e), 0);
  assert_int_equal(u.n, 1);
  assert_string_equal(u.srv[0].host, "127.0.0.1");
  assert_int_equal(u.srv[0].port, 8080);
  assert_int_equal(u.timeout_ms, FROND_FS_DEFAULT_TIMEOUT_MS);
  assert_int_equal(u.retries, FROND_FS_DEFAULT_RETRIES);
  assert_string_equal(u.token, "");

  assert_int_equal(
      frond__fs_uri_parse("frond://ids-1.example:9000,[::1]:8081,10.0.0.7/"
                          "?token=Ab.c-d_e~f+g/h=&timeout_ms=250&retries=0"
                          "&tls=off",
                          &u, &e),
      0);
  assert_int_equal(u.n, 3);
  assert_string_equal(u.srv[0].shown, "ids-1.example:9000");
  assert_string_equal(u.srv[1].host, "::1");
  assert_string_equal(u.srv[1].shown, "[::1]:8081");
  assert_int_equal(u.srv[2].port, FROND_FS_DEFAULT_PORT);
  assert_string_equal(u.token, "Ab.c-d_e~f+g/h=");
  assert_int_equal(u.timeout_ms, 250);
  assert_int_equal(u.retries, 0);

  assert_true(refused("frond:/h:1", "expected frond://"));
  assert_true(refused("frond://", "server 1 is empty"));
  assert_true(refused("frond://a:1,,b:2", "server 2 is empty"));
  assert_true(refused("frond://a:0", "1..65535"));
  assert_true(refused("frond://a:65536", "1..65535"));
  assert_true(refused("frond://a:+80", "1..65535"));
  assert_true(refused("frond://a:", "1..65535"));
  assert_true(refused("frond://a b:1", "space or control"));
  assert_true(refused("frond://a%2e:1", "cannot have"));
  assert_true(refused("frond://[::1:1", "without ']'"));
  assert_true(refused("frond://[nope]:1", "not an IPv6"));
  assert_true(refused("frond://[::1]x", "expected ':'"));
  assert_true(refused("frond://u:pw@h:1", "?token="));
  assert_true(refused("frond://h:1/v1", "no path"));
  assert_true(refused("frond://h:1#x", "no path or fragment"));
  assert_true(refused("frond://h:1?tls=on", "plain HTTP only"));
  assert_true(refused("frond://h:1?tls=maybe", "tls must be off"));
  assert_true(refused("frond://h:1?timeout_ms=0", "1..600000"));
  assert_true(refused("frond://h:1?timeout_ms=600001", "1..600000"));
  assert_true(refused("frond://h:1?retries=11", "0..10"));
  assert_true(refused("frond://h:1?retries=1&retries=1", "given twice"));
  assert_true(refused("frond://h:1?timeout=5", "unknown option"));
  assert_true(refused("frond://h:1?token=", "needs a value"));
  assert_true(refused("frond://h:1?a&&b", "unknown option"));
  assert_true(refused("frond://h:1?retries=1&", "an empty option"));
  {
    char many[400] = "frond://";
    for (int i = 0; i <= FROND_FS_MAX_SERVERS; i++)
      snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sh%d:1",
               i ? "," : "", i);
    assert_true(refused(many, "more than 16 servers"));
  }
}

/* Refusals and the URI as logs show it never carry the token. */
static void test_token_never_shown(void **state) {
  const char *bad[] = {"frond://h:1?token=s3cr3tTOKEN&tls=on",
                       "frond://h:1?token=s3cr3tTOKEN&retries=99",
                       "frond://h:1?token=s3cr3tTOKEN&token=s3cr3tTOKEN",
                       "frond://h:1?token=s3cr3tTOKEN!"};
  char shown[256];
  size_t i;
  (void)state;
  for (i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    frond_fs_uri u;
    frond_error e = {0, ""};
    assert_int_not_equal(frond__fs_uri_parse(bad[i], &u, &e), 0);
    assert_null(strstr(e.message, "s3cr3t"));
    frond__store_uri_shown(bad[i], shown, sizeof(shown));
    assert_null(strstr(shown, "s3cr3t"));
    assert_non_null(strstr(shown, "token=***"));
  }
  frond__store_uri_shown("frond://h:1?retries=1&token=s3cr3t&tls=off", shown,
                         sizeof(shown));
  assert_string_equal(shown, "frond://h:1?retries=1&token=***&tls=off");
}

/* Whatever the scheme's case or typo, and in every member of a multi:
** URI, a token or a password is hidden where the URI is shown: in the
** store's refusal, in frond__store_uri_shown and in frond__db_uri_parse's
** message. */
static void test_secret_hidden_any_scheme(void **state) {
  static const char *const uris[] = {
      "FROND://h?token=s3cr3t",
      "Frond://h?Token=s3cr3t",
      "frond:/h?token=s3cr3t",
      "frond//h?token=s3cr3t",
      "frond:h?tls=off&token=s3cr3t",
      "lease+frond://h?token=s3cr3t",
      "frond://h?x=1?token=s3cr3t",
      "frond://h?retries=1&token=s3cr3t",
      "frond://h?token=s3cr3t?token=s3cr3t2",
      "frond://h%3Ftoken=s3cr3t",
      "multi:frond://h?token=s3cr3t|sqlite:///x.db",
      "MULTI:sqlite:///x.db|FROND://h?TOKEN=s3cr3t",
      "multi:sqlite:///x.db|postgresql://u:s3cr3t@h/db",
      "POSTGRESQL://u:s3cr3t@h/db",
      "postgres:/u:s3cr3t@h/db",
      "postgresql://u@h/db?sslmode=off&password=s3cr3t",
      "mysql://u:s3cr3t@h:3306/db",
      "mysq://u:s3cr3t@h/db",
  };
  char shown[256];
  size_t i;
  (void)state;
  for (i = 0; i < FROND__ARRAY_SIZE(uris); i++) {
    frond_seg *s = NULL;
    frond_db_uri du;
    frond_error e = {0, ""}, e2 = {0, ""};
    frond__store_uri_shown(uris[i], shown, sizeof(shown));
    if (strstr(shown, "s3cr3t") != NULL || strstr(shown, "***") == NULL)
      fail_msg("%s shown as %s", uris[i], shown);
    /* Open what no database takes (nothing is reached). */
    if (strncmp(uris[i], "frond://", 8) != 0 &&
        strncmp(uris[i], "multi:", 6) != 0 &&
        strncmp(uris[i], "postgresql:", 11) != 0 &&
        strncmp(uris[i], "mysql:", 6) != 0) {
      assert_int_not_equal(frond_seg_open(&s, uris[i], NULL, &e), 0);
      if (strstr(e.message, "s3cr3t") != NULL)
        fail_msg("%s: opening says %s", uris[i], e.message);
    }
    (void)frond__db_uri_parse(uris[i], &du, &e2);
    if (strstr(e2.message, "s3cr3t") != NULL)
      fail_msg("%s: as a database: %s", uris[i], e2.message);
  }
  /* What is not a secret stays as written. */
  frond__store_uri_shown("sqlite:///var/lib/frond/tokens.db", shown,
                         sizeof(shown));
  assert_string_equal(shown, "sqlite:///var/lib/frond/tokens.db");
  frond__store_uri_shown("multi:postgresql://u:pw@h/a|mysql://u@h/b?x=1", shown,
                         sizeof(shown));
  assert_string_equal(shown, "multi:postgresql://u:***@h/a|mysql://u@h/b?x=1");
}

static int head_of(const char *text, frond_fs_resp *r) {
  guarded g = guarded_copy(text, strlen(text));
  frond_error e = {0, ""};
  int h = frond__fs_resp_parse(g.p, strlen(text), r, &e);
  if (h == -1)
    assert_true(e.message[0] != '\0');
  guarded_free(&g);
  return h;
}

static void test_response_head(void **state) {
  frond_fs_resp r;
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                   "content-length: 10\r\n\r\n1001 2001\n";
  size_t i, n = strlen(ok);
  (void)state;
  assert_int_equal(head_of(ok, &r), (int)(n - 10));
  assert_int_equal(r.status, 200);
  assert_int_equal(r.content_length, 10);
  assert_false(r.close);
  /* Every prefix of the head is partial, never an error. */
  for (i = 0; i < n - 10; i++) {
    char buf[128];
    memcpy(buf, ok, i);
    buf[i] = '\0';
    assert_int_equal(head_of(buf, &r), -2);
  }
  assert_int_equal(head_of("HTTP/1.0 503 Unavailable\r\nContent-Length: 0\r\n"
                           "\r\n",
                           &r),
                   47);
  assert_true(r.close);
  assert_int_equal(head_of("HTTP/1.1 204 No Content\r\nConnection: x, close\r\n"
                           "\r\n",
                           &r),
                   49);
  assert_int_equal(r.content_length, 0);
  assert_true(r.close);
  assert_int_equal(head_of("SSH-2.0-OpenSSH\r\n", &r), -1);
  assert_int_equal(head_of("HTTP/1.1 200 OK\nContent-Length: 0\n\n", &r), -1);
  assert_int_equal(head_of("HTTP/1.1 200 OK\r\n\r\n", &r), -1);
  assert_int_equal(head_of("HTTP/1.1 100 Continue\r\n\r\n", &r), -1);
  assert_int_equal(
      head_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &r), -1);
  assert_int_equal(head_of("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
                           "Content-Length: 2\r\n\r\n",
                           &r),
                   -1);
  assert_int_equal(head_of("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", &r),
                   -1);
  assert_int_equal(
      head_of("HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", &r),
      -1);
}

static int collect(void *ctx, const frond_tag_row *row) {
  frond_tag_row *rows = ctx;
  int i = rows[0].tag[0] == '\0' ? 0 : 1;
  rows[i] = *row;
  return 0;
}

static void test_answers(void **state) {
  const char *row = "{\"tag\":\"caf\\u00e9/\\\"x\\\"\",\"max_id\":1001,"
                    "\"step\":1000,\"description\":null,\"update_time\":"
                    "\"2026-11-28 10:00:00\",\"later\":[1,{\"a\":false}]}";
  const char *list = "{\"tags\":[{\"tag\":\"a\",\"max_id\":1,\"step\":10,"
                     "\"description\":\"d\",\"update_time\":\"t\"},"
                     "{\"tag\":\"b\",\"max_id\":7,\"step\":2}]}";
  const char *error = "{\"error\":{\"code\":\"TAG_NOT_FOUND\",\"message\":"
                      "\"tag \\\"x\\\" not found\"}}";
  frond_tag_row r, rows[2];
  char code[40], msg[200];
  int64_t a, b;
  guarded g;
  (void)state;
  g = guarded_copy(row, strlen(row));
  assert_int_equal(frond__fs_row_parse(g.p, strlen(row), &r), 0);
  guarded_free(&g);
  assert_string_equal(r.tag, "caf\xc3\xa9/\"x\"");
  assert_int_equal(r.max_id, 1001);
  assert_int_equal(r.step, 1000);
  assert_string_equal(r.description, "");
  assert_int_equal(frond__fs_row_parse("{\"tag\":\"a\",\"step\":1}", 20, &r),
                   -1);
  assert_int_equal(frond__fs_row_parse("{\"tag\":\"a\",\"max_id\":1.5,"
                                       "\"step\":1}",
                                       32, &r),
                   -1);
  memset(rows, 0, sizeof(rows));
  g = guarded_copy(list, strlen(list));
  assert_int_equal(frond__fs_rows_parse(g.p, strlen(list), collect, rows), 0);
  guarded_free(&g);
  assert_string_equal(rows[0].tag, "a");
  assert_string_equal(rows[1].tag, "b");
  assert_int_equal(rows[1].max_id, 7);
  assert_int_equal(frond__fs_rows_parse("{\"tags\":[]}", 11, collect, rows), 0);
  assert_int_equal(frond__fs_rows_parse("{\"tags\":[]", 10, collect, rows), -1);
  g = guarded_copy(error, strlen(error));
  assert_int_equal(frond__fs_error_parse(g.p, strlen(error), code, sizeof(code),
                                         msg, sizeof(msg)),
                   0);
  guarded_free(&g);
  assert_string_equal(code, "TAG_NOT_FOUND");
  assert_string_equal(msg, "tag \"x\" not found");
  assert_int_equal(
      frond__fs_error_parse("<html>", 6, code, sizeof(code), msg, sizeof(msg)),
      -1);
  assert_int_equal(frond__fs_range_parse("1001 2001\n", 10, &a, &b), 0);
  assert_int_equal(a, 1001);
  assert_int_equal(b, 2001);
  assert_int_equal(frond__fs_range_parse("2001 1001", 9, &a, &b), -1);
  assert_int_equal(frond__fs_range_parse("-1 5", 4, &a, &b), -1);
  assert_int_equal(frond__fs_range_parse("15", 2, &a, &b), -1);
  /* Against a guard page: the only space is the last byte, or the body is
  ** one or two bytes; nothing past the body is read. */
  {
    static const char *const cut[] = {"5 ", " ", "5 \n", "1 2 ", "1  2", "7"};
    for (size_t i = 0; i < FROND__ARRAY_SIZE(cut); i++) {
      size_t n = strlen(cut[i]);
      guarded gc = guarded_copy(cut[i], n);
      assert_int_equal(frond__fs_range_parse(gc.p, n, &a, &b), -1);
      guarded_free(&gc);
    }
  }
}

/* A listening socket nobody accepts from: connections complete in the
** kernel's backlog, and no answer ever comes. */
static int silent_port(int *fd) {
  struct sockaddr_in a;
  socklen_t len = sizeof(a);
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(*fd >= 0);
  assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(*fd, 16), 0);
  assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
  return ntohs(a.sin_port);
}

static void test_silent_server_times_out(void **state) {
  char uri[128];
  frond_store *st = NULL;
  frond_seg *s = NULL;
  frond_error e = {0, ""};
  int fd, port = silent_port(&fd);
  (void)state;
  snprintf(uri, sizeof(uri), "frond://127.0.0.1:%d?timeout_ms=100&retries=1",
           port);
  assert_int_equal(frond_store_open(&st, uri, &e), FROND_ESTORE_TIMEOUT);
  assert_null(st);
  assert_non_null(strstr(e.message, "no answer within the timeout"));
  assert_non_null(strstr(e.message, "2 attempts"));
  assert_int_equal(frond_seg_open(&s, uri, NULL, &e), FROND_ESTORE_TIMEOUT);
  assert_null(s);
  close(fd);
}

static void test_no_server(void **state) {
  char uri[160];
  frond_store *st = NULL;
  frond_error e = {0, ""};
  int fd, p1 = silent_port(&fd), p2;
  (void)state;
  close(fd); /* nobody listens there now */
  p2 = silent_port(&fd);
  close(fd);
  snprintf(uri, sizeof(uri),
           "frond://127.0.0.1:%d,127.0.0.1:%d?timeout_ms=500&retries=2", p1,
           p2);
  assert_int_equal(frond_store_open(&st, uri, &e), FROND_ESTORE);
  assert_non_null(strstr(e.message, "3 attempts"));
  assert_non_null(strstr(e.message, "refused"));
}

/* Where a database is wanted, a frond:// URI is refused, saying why. */
static void test_not_a_database(void **state) {
  frond_error e = {0, ""};
  frond_db_uri u;
  frond_multi_uri m;
  (void)state;
  assert_int_equal(frond__db_uri_parse("frond://h:1", &u, &e),
                   FROND_ESTORE_URI);
  assert_non_null(strstr(e.message, "not a database"));
  assert_int_equal(
      frond__store_multi_parse("multi:frond://h:1|sqlite:x.db", &m, &e),
      FROND_ESTORE_URI);
  assert_non_null(strstr(e.message, "not a database"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uri_grammar),
      cmocka_unit_test(test_token_never_shown),
      cmocka_unit_test(test_secret_hidden_any_scheme),
      cmocka_unit_test(test_response_head),
      cmocka_unit_test(test_answers),
      cmocka_unit_test(test_silent_server_times_out),
      cmocka_unit_test(test_no_server),
      cmocka_unit_test(test_not_a_database),
  };
  return frond_run_tests(tests, NULL, NULL);
}
