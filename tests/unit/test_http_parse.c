/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_http_parse.c -- the HTTP request parser, the flat JSON reader and
** the configuration table.
**
** Every parser input is placed so that its last byte touches a PROT_NONE
** page: reading one byte too far crashes the test. Each input is also fed
** byte by byte, and every prefix must be PARTIAL or the same answer.
*/
#include "testutil.h"

#include <sys/mman.h>
#include <unistd.h>

#include "server/config.h"
#include "server/http_parse.h"
#include "server/json.h"

static char *guard_base;
static size_t page_size;

/* A copy of s[0..len) ending exactly at a guard page. */
static const char *at_guard(const char *s, size_t len) {
  char *dst;
  assert_true(len <= 4 * page_size);
  dst = guard_base + 4 * page_size - len;
  memcpy(dst, s, len);
  return dst;
}

static int setup(void **state) {
  page_size = (size_t)sysconf(_SC_PAGESIZE);
  guard_base = mmap(NULL, 5 * page_size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(guard_base != MAP_FAILED);
  assert_int_equal(mprotect(guard_base + 4 * page_size, page_size, PROT_NONE),
                   0);
  return 0;
}

static int teardown(void **state) {
  munmap(guard_base, 5 * page_size);
  return 0;
}

static int parse(const char *s, size_t len, frond__http_request *req) {
  return frond__http_parse(at_guard(s, len), len, req);
}

/* Parse s whole and every prefix of it; returns the whole's result. */
static int parse_all(const char *s, frond__http_request *req) {
  size_t len = strlen(s), i;
  int whole = parse(s, len, req), r;
  int status = req->status;
  frond__http_request tmp;
  for (i = 0; i < len; i++) {
    r = parse(s, i, &tmp);
    if (r == FROND__HTTP_ERROR)
      assert_int_equal(tmp.status, status);
    else
      assert_int_equal(r, FROND__HTTP_PARTIAL);
  }
  r = parse(s, len, req);
  assert_int_equal(r, whole);
  return whole;
}

static int status_of_req(const char *s) {
  frond__http_request req;
  int r = parse_all(s, &req);
  return r == FROND__HTTP_ERROR ? req.status : r > 0 ? 200 : 0;
}

static void test_simple_get(void **state) {
  const char *s = "GET /api/snowflake/get/x HTTP/1.1\r\nHost: a\r\n\r\n";
  frond__http_request req;
  assert_int_equal(parse_all(s, &req), (int)strlen(s));
  assert_int_equal(req.method, FROND__HTTP_GET);
  assert_int_equal(req.minor, 1);
  assert_int_equal(req.keep_alive, 1);
  assert_int_equal(req.target_len, strlen("/api/snowflake/get/x"));
  assert_memory_equal(req.target, "/api/snowflake/get/x", req.target_len);
  assert_int_equal(req.path_len, req.target_len);
  assert_int_equal(req.num_headers, 1);
  assert_memory_equal(req.headers[0].value, "a", 1);
}

static void test_query_and_headers(void **state) {
  const char *s = "POST /v1/tags?count=12&format=text HTTP/1.1\r\n"
                  "Host: x\r\nContent-Length:  5 \r\nX-Empty:\r\n"
                  "Connection: keep-alive, close\r\n\r\nhello";
  frond__http_request req;
  const char *v;
  size_t vl;
  int n = parse(s, strlen(s), &req);
  assert_int_equal(n, (int)strlen(s) - 5);
  assert_int_equal(req.method, FROND__HTTP_POST);
  assert_int_equal(req.body_len, 5);
  assert_int_equal(req.keep_alive, 0);
  assert_int_equal(req.path_len, strlen("/v1/tags"));
  assert_int_equal(
      frond__http_query(req.target, req.target_len, "count", &v, &vl), 1);
  assert_int_equal(vl, 2);
  assert_memory_equal(v, "12", 2);
  assert_int_equal(
      frond__http_query(req.target, req.target_len, "format", &v, &vl), 1);
  assert_memory_equal(v, "text", 4);
  assert_int_equal(
      frond__http_query(req.target, req.target_len, "coun", &v, &vl), 0);
  assert_non_null(frond__http_header_find(&req, "x-empty"));
  assert_int_equal(frond__http_header_find(&req, "X-EMPTY")->value_len, 0);
}

static void test_http10(void **state) {
  frond__http_request req;
  assert_true(parse_all("GET / HTTP/1.0\r\n\r\n", &req) > 0);
  assert_int_equal(req.keep_alive, 0);
  assert_true(
      parse_all("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &req) > 0);
  assert_int_equal(req.keep_alive, 1);
  /* Every line ends in CRLF: a bare LF is refused wherever it is. */
  assert_int_equal(status_of_req("GET / HTTP/1.0\n\n"), 400);
  assert_int_equal(status_of_req("GET / HTTP/1.0\r\n\n"), 400);
  assert_int_equal(status_of_req("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\n"
                                 "Content-Length: 48\r\n\r\n"),
                   400);
}

static void test_target_forms(void **state) {
  frond__http_request req;
  const char *s = "GET http://127.0.0.1:8080/v1/decode/5?x=1 HTTP/1.1\r\n"
                  "Host: other\r\n\r\n";
  assert_int_equal(parse_all(s, &req), (int)strlen(s));
  assert_int_equal(req.target_len, strlen("/v1/decode/5?x=1"));
  assert_memory_equal(req.target, "/v1/decode/5?x=1", req.target_len);
  assert_int_equal(req.path_len, strlen("/v1/decode/5"));
  /* The target's authority stands for Host (RFC 9112 3.2.2). */
  assert_int_equal(req.host_len, strlen("127.0.0.1:8080"));
  assert_memory_equal(req.host, "127.0.0.1:8080", req.host_len);
  assert_true(parse_all("GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n", &req) > 0);
  assert_true(req.target_len == 1 && req.target[0] == '/' && req.path_len == 1);
  assert_true(parse_all("GET http://h?a HTTP/1.1\r\nHost: h\r\n\r\n", &req) >
              0);
  assert_true(req.target_len == 1 && req.host_len == 1);
  assert_true(parse_all("GET / HTTP/1.1\r\nHost: h:1\r\n\r\n", &req) > 0);
  assert_true(req.host_len == 3 && memcmp(req.host, "h:1", 3) == 0);
  assert_true(parse_all("GET / HTTP/1.0\r\n\r\n", &req) > 0);
  assert_null(req.host);
  assert_true(parse_all("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", &req) > 0);
  assert_true(req.asterisk && req.target_len == 1 && req.target[0] == '/');
  assert_int_equal(status_of_req("GET * HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  assert_int_equal(status_of_req("GET http:// HTTP/1.1\r\nHost: a\r\n\r\n"),
                   400);
  assert_int_equal(status_of_req("GET http://u@h/ HTTP/1.1\r\nHost: a\r\n\r\n"),
                   400);
  assert_int_equal(status_of_req("GET ftp://h/ HTTP/1.1\r\nHost: a\r\n\r\n"),
                   400);
  /* The version is checked first: HTTP/2's preface is 505. */
  assert_int_equal(status_of_req("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 505);
}

static void test_browser_headers(void **state) {
  frond__http_request req;
  assert_true(parse_all("POST / HTTP/1.1\r\nHost: a\r\nORIGIN: http://x\r\n"
                        "sec-fetch-site: cross-site\r\n\r\n",
                        &req) > 0);
  assert_non_null(req.origin);
  assert_memory_equal(req.origin->value, "http://x", 8);
  assert_non_null(req.fetch_site);
  assert_memory_equal(req.fetch_site->value, "cross-site", 10);
  assert_true(parse_all("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &req) > 0);
  assert_true(req.origin == NULL && req.fetch_site == NULL);
}

static void test_errors(void **state) {
  assert_int_equal(status_of_req("FOO / HTTP/1.1\r\nHost: a\r\n\r\n"), 501);
  assert_int_equal(status_of_req("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
  assert_int_equal(status_of_req("GET / HTTP/1.2\r\nHost: a\r\n\r\n"), 505);
  assert_int_equal(status_of_req("GET / HTTPS/1.1\r\nHost: a\r\n\r\n"), 400);
  assert_int_equal(status_of_req("GET / HTTP/1.1\r\n\r\n"), 400);
  assert_int_equal(status_of_req("GET  / HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  assert_int_equal(status_of_req("GET x HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  assert_int_equal(status_of_req("GET /\xff HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  assert_int_equal(status_of_req("GET / HTTP/1.1\r\nHost a\r\n\r\n"), 400);
  assert_int_equal(status_of_req("GET / HTTP/1.1\r\nHost: a\r\n b\r\n\r\n"),
                   400);
  assert_int_equal(
      status_of_req("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n"), 400);
  assert_int_equal(
      status_of_req("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"),
      400);
  assert_int_equal(status_of_req("GET / HTTP/1.1\r\nHost: a\r\nContent-Length:"
                                 " 1\r\nContent-Length: 2\r\n\r\n"),
                   400);
  assert_int_equal(status_of_req("GET / HTTP/1.1\r\nHost: a\r\n"
                                 "Transfer-Encoding: gzip\r\n\r\n"),
                   501);
  assert_int_equal(status_of_req("GET / HTTP/1.1\r\nHost: a\r\n"
                                 "Transfer-Encoding: chunked, gzip\r\n\r\n"),
                   400);
  assert_int_equal(status_of_req("GET / HTTP/1.1\r\nHost: a\r\n"
                                 "Transfer-Encoding: chunked\r\n"
                                 "Content-Length: 3\r\n\r\n"),
                   400);
  assert_int_equal(status_of_req("GET / HTTP/1.0\r\n"
                                 "Transfer-Encoding: chunked\r\n\r\n"),
                   400);
  assert_int_equal(status_of_req("\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n"), 400);
}

static void test_limits(void **state) {
  char *big = malloc(3 * FROND__HTTP_MAX_HEAD);
  frond__http_request req;
  size_t n;
  int i;
  /* A request line that never ends: 414 once the limit is reached. */
  memcpy(big, "GET /", 5);
  memset(big + 5, 'a', 2 * FROND__HTTP_MAX_HEAD);
  assert_int_equal(parse(big, FROND__HTTP_MAX_HEAD - 1, &req),
                   FROND__HTTP_PARTIAL);
  assert_int_equal(parse(big, FROND__HTTP_MAX_HEAD, &req), FROND__HTTP_ERROR);
  assert_int_equal(req.status, 414);
  /* Headers that never end: 431. */
  n = (size_t)sprintf(big, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
  memset(big + n, 'b', 2 * FROND__HTTP_MAX_HEAD);
  assert_int_equal(parse(big, FROND__HTTP_MAX_HEAD, &req), FROND__HTTP_ERROR);
  assert_int_equal(req.status, 431);
  /* Too many headers: 431. */
  n = (size_t)sprintf(big, "GET / HTTP/1.1\r\nHost: a\r\n");
  for (i = 0; i < FROND__HTTP_MAX_HEADERS; i++)
    n += (size_t)sprintf(big + n, "X%d: y\r\n", i);
  n += (size_t)sprintf(big + n, "\r\n");
  assert_int_equal(parse(big, n, &req), FROND__HTTP_ERROR);
  assert_int_equal(req.status, 431);
  /* A complete head just inside the limit is fine. */
  n = (size_t)sprintf(big, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
  memset(big + n, 'c', FROND__HTTP_MAX_HEAD - n - 4);
  memcpy(big + FROND__HTTP_MAX_HEAD - 4, "\r\n\r\n", 4);
  assert_int_equal(parse(big, FROND__HTTP_MAX_HEAD, &req),
                   FROND__HTTP_MAX_HEAD);
  free(big);
}

/* Scan body[0..len) (at a guard page) from a zeroed state in one piece,
** and again a byte at a time; both must agree. Returns the scan's result
** and the data in out. */
static int chunked(const char *body, size_t max, char *out, size_t *outlen,
                   int *status) {
  size_t len = strlen(body), i;
  frond__http_chunks ch = {0, 0, 0}, ch2 = {0, 0, 0};
  const char *why = NULL, *at;
  int r, r2 = FROND__HTTP_PARTIAL, st2 = 0;
  at = at_guard(body, len);
  r = frond__http_chunked(at, len, max, &ch, status, &why);
  for (i = 0; i <= len && r2 == FROND__HTTP_PARTIAL; i++)
    r2 = frond__http_chunked(at_guard(body, i), i, max, &ch2, &st2, &why);
  if (r == FROND__HTTP_PARTIAL) {
    assert_int_equal(r2, FROND__HTTP_PARTIAL);
    return r;
  }
  assert_int_equal(r2, r);
  if (r < 0) {
    assert_int_equal(st2, *status);
    assert_non_null(why);
    return r;
  }
  assert_int_equal(ch.data, ch2.data);
  at = at_guard(body, (size_t)r);
  frond__http_chunked_copy(at, (size_t)r, out);
  *outlen = ch.data;
  return r;
}

static void test_chunked(void **state) {
  char out[64];
  size_t n;
  int st = 0;
  const char *b =
      "3\r\nabc\r\nA;x=1;y=\"a\\\"\"\r\n0123456789\r\n0\r\n\r\nNEXT";
  assert_int_equal(chunked(b, 100, out, &n, &st), (int)strlen(b) - 4);
  assert_int_equal(n, 13);
  assert_memory_equal(out, "abc0123456789", 13);
  b = "1 ; a ; b = c\r\nz\r\n0;last\r\nX-Sum: 1\r\nY:\r\n\r\n";
  assert_int_equal(chunked(b, 100, out, &n, &st), (int)strlen(b));
  assert_true(n == 1 && out[0] == 'z');
  assert_int_equal(chunked("0\r\n\r\n", 0, out, &n, &st), 5);
  assert_int_equal(n, 0);
  assert_int_equal(chunked("000\r\n\r\n", 0, out, &n, &st), 7);
  /* Incomplete. */
  assert_int_equal(chunked("5\r\nab", 100, out, &n, &st), FROND__HTTP_PARTIAL);
  assert_int_equal(chunked("0\r\nX: y\r\n", 100, out, &n, &st),
                   FROND__HTTP_PARTIAL);
  /* Too much data: 413, as soon as a size says so. */
  assert_int_equal(chunked("65\r\n", 100, out, &n, &st), FROND__HTTP_ERROR);
  assert_int_equal(st, 413);
  assert_int_equal(chunked("40\r\n", 100, out, &n, &st), FROND__HTTP_PARTIAL);
  assert_int_equal(chunked("32\r\n"
                           "0123456789012345678901234567890123456789"
                           "0123456789\r\n33\r\n",
                           100, out, &n, &st),
                   FROND__HTTP_ERROR);
  assert_int_equal(st, 413);
  assert_int_equal(
      chunked("fffffffffffffffffffffffffff\r\n", 100, out, &n, &st),
      FROND__HTTP_ERROR);
  assert_int_equal(st, 413);
  /* Malformed: 400. */
  static const char *const bad[] = {"\r\n",
                                    "g\r\n",
                                    "-1\r\n",
                                    "5\nabcde\r\n",
                                    "5\r\nabcdeX\r\n",
                                    "5\r\nabcde\n0\r\n\r\n",
                                    "5 \r\n",
                                    "5;\r\n",
                                    "5;=a\r\n",
                                    "5;a=\r\n",
                                    "5;a=\"b\r\n",
                                    "5;a=\"\x01\"\r\n",
                                    "5;a b\r\n",
                                    "0\r\nX\r\n\r\n",
                                    "0\r\nX: a\n\r\n",
                                    "0\r\n X: a\r\n\r\n",
                                    "0\r\nX: \x01\r\n\r\n",
                                    "0\r\n\n"};
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    assert_int_equal(chunked(bad[i], 100, out, &n, &st), FROND__HTTP_ERROR);
    assert_int_equal(st, 400);
  }
  /* A chunk line that never ends; trailers that never end. */
  {
    char *big = malloc(2 * FROND__HTTP_MAX_HEAD);
    memset(big, '0', 2 * FROND__HTTP_MAX_HEAD);
    big[2 * FROND__HTTP_MAX_HEAD - 1] = '\0';
    assert_int_equal(chunked(big, 100, out, &n, &st), FROND__HTTP_ERROR);
    assert_int_equal(st, 400);
    memcpy(big, "0\r\nX: ", 6);
    memset(big + 6, 'a', 2 * FROND__HTTP_MAX_HEAD - 7);
    assert_int_equal(chunked(big, 100, out, &n, &st), FROND__HTTP_ERROR);
    assert_int_equal(st, 431);
    free(big);
  }
}

static void test_unescape(void **state) {
  char out[8];
  assert_int_equal(frond__http_unescape("a%20b", 5, out, sizeof out), 3);
  assert_memory_equal(out, "a b", 3);
  assert_int_equal(frond__http_unescape(at_guard("a%2", 3), 3, out, 8), -1);
  assert_int_equal(frond__http_unescape(at_guard("%", 1), 1, out, 8), -1);
  assert_int_equal(frond__http_unescape("%zz", 3, out, 8), -1);
  assert_int_equal(frond__http_unescape("123456789", 9, out, 8), -1);
}

/* 0, or -1 after checking that the refusal carries its code and says
** what was wrong. */
static int json(const char *s, frond__json_field *f, size_t n) {
  frond_error err = {0, ""};
  int r = frond__json_read(at_guard(s, strlen(s)), strlen(s), f, n, &err);
  if (r == 0)
    return 0;
  assert_int_equal(r, FROND_EINVAL);
  assert_int_equal(err.code, FROND_EINVAL);
  assert_memory_equal(err.message, "invalid JSON body: ", 19);
  return -1;
}

static void test_json(void **state) {
  char tag[16];
  frond__json_field f[2] = {{"tag", FROND__JSON_STR, tag, sizeof tag, 0, 0},
                            {"step", FROND__JSON_INT, NULL, 0, 0, 0}};
  assert_int_equal(json("{\"tag\":\"a\\u00e9\\n\",\"step\":-12}", f, 2), 0);
  assert_string_equal(tag, "a\xc3\xa9\n");
  assert_int_equal(f[1].num, -12);
  assert_int_equal(json(" { } ", f, 2), 0);
  assert_int_equal(f[0].present, 0);
  assert_int_equal(json("{\"tag\":\"\\ud83d\\ude00\"}", f, 2), 0);
  assert_string_equal(tag, "\xf0\x9f\x98\x80");
  assert_int_equal(json("{\"tag\":\"a\",\"tag\":\"b\"}", f, 2), -1);
  assert_int_equal(json("{\"other\":1}", f, 2), -1);
  assert_int_equal(json("{\"step\":1.5}", f, 2), -1);
  assert_int_equal(json("{\"step\":01}", f, 2), -1);
  assert_int_equal(json("{\"step\":99999999999999999999}", f, 2), -1);
  assert_int_equal(json("{\"step\":\"1\"}", f, 2), -1);
  assert_int_equal(json("{\"tag\":1}", f, 2), -1);
  assert_int_equal(json("{\"tag\":\"0123456789abcdef\"}", f, 2), -1);
  assert_int_equal(json("{\"tag\":\"\\ud83d\"}", f, 2), -1);
  assert_int_equal(json("{\"tag\":\"\xff\"}", f, 2), -1);
  assert_int_equal(json("{\"tag\":\"a\"", f, 2), -1);
  assert_int_equal(json("{\"tag\":\"a\"} x", f, 2), -1);
  assert_int_equal(json("{\"step\":-", f, 2), -1);
  assert_int_equal(json("{\"tag\":\"\\u00", f, 2), -1);
  assert_int_equal(json("", f, 2), -1);
}

static void test_json_escape(void **state) {
  char out[32];
  frond__json_escape("a\"b\\\n\xff\x7f\x01\t", 9, out, sizeof out);
  assert_string_equal(out, "a\\\"b\\\\\\n\xef\xbf\xbd\\u007f\\u0001\\t");
  assert_int_equal(frond__json_escape("abcdef", 6, out, 4), 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_simple_get),
      cmocka_unit_test(test_query_and_headers),
      cmocka_unit_test(test_http10),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_target_forms),
      cmocka_unit_test(test_browser_headers),
      cmocka_unit_test(test_chunked),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_unescape),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_json_escape),
  };
  return frond_run_tests(tests, setup, teardown);
}
