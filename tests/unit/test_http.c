/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_http.c -- the HTTP front's answers through the real handlers
** without a network (server_fixture.h): Leaf's paths, /v1, the admin
** calls that finish off the loop, framing, limits and the counters.
*/
#include "server_fixture.h"

#include "server/http.h"

static int setup(void **state) {
  static const char *const tags[] = {"order", NULL};
  *state = fixture_open(&frond__http_proto, tags);
  return 0;
}

/* One answer, split: status, a header's value (static), the body. */
typedef struct answer {
  int status;
  const char *body;
  size_t body_len;
  const char *head;
  size_t head_len;
  size_t len; /* of the whole answer */
} answer;

static answer parse_answer(const char *s) {
  answer a;
  const char *end = strstr(s, "\r\n\r\n"), *cl;
  assert_non_null(end);
  assert_int_equal(sscanf(s, "HTTP/1.1 %d ", &a.status), 1);
  a.head = s;
  a.head_len = (size_t)(end - s) + 2;
  cl = strstr(s, "Content-Length: ");
  a.body = end + 4;
  if (a.status == 204) { /* neither a body nor a header about one */
    assert_true(cl == NULL || cl > end);
    a.body_len = 0;
  } else {
    assert_true(cl != NULL && cl < end);
    a.body_len = strtoul(cl + 16, NULL, 10);
  }
  a.len = (size_t)(a.body - s) + a.body_len;
  return a;
}

/* Does the head carry the line "name: value"? */
static int has_header(const answer *a, const char *line) {
  char want[256];
  const char *p;
  snprintf(want, sizeof want, "\r\n%s\r\n", line);
  p = strstr(a->head, want);
  return p != NULL && p < a->head + a->head_len;
}

/* A request as a program sends it: Host the server's loopback address,
** and a body as JSON unless the headers say otherwise. */
static answer get(fixture *f, const char *method, const char *path,
                  const char *headers, const char *body) {
  char req[4096];
  int n = snprintf(req, sizeof req,
                   "%s %s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%s%s"
                   "Content-Length: %zu\r\n\r\n%s",
                   method, path, headers ? headers : "",
                   body && !(headers && strstr(headers, "Content-Type"))
                       ? "Content-Type: application/json\r\n"
                       : "",
                   body ? strlen(body) : 0, body ? body : "");
  const char *out = feed(f, req, (size_t)n, NULL);
  answer a = parse_answer(out);
  assert_int_equal(a.len, strlen(out)); /* exactly one answer */
  return a;
}

static int body_is(const answer *a, const char *want) {
  return a->body_len == strlen(want) && memcmp(a->body, want, a->body_len) == 0;
}

static int body_has(const answer *a, const char *want) {
  char *buf = malloc(a->body_len + 1);
  int found;
  memcpy(buf, a->body, a->body_len);
  buf[a->body_len] = '\0';
  found = strstr(buf, want) != NULL;
  free(buf);
  return found;
}

static void test_leaf(void **state) {
  fixture *f = *state;
  answer a = get(f, "GET", "/api/snowflake/get/k", NULL, NULL);
  assert_int_equal(a.status, 200);
  assert_true(has_header(&a, "Content-Type: text/plain;charset=UTF-8"));
  assert_true(a.body_len >= 15 && a.body[0] >= '1' && a.body[0] <= '9');
  a = get(f, "POST", "/api/segment/get/order", NULL, NULL);
  assert_true(a.status == 200 && body_is(&a, "1"));
  a = get(f, "GET", "/api/segment/get/order", NULL, NULL);
  assert_true(a.status == 200 && body_is(&a, "2"));
  /* Unknown: looked up off the loop, then Leaf's -2. */
  a = get(f, "GET", "/api/segment/get/nope", NULL, NULL);
  assert_int_equal(a.status, 500);
  assert_true(body_is(&a, "Result{id=-2, status=EXCEPTION}"));
  assert_true(has_header(&a, "Frond-Error: TAG_NOT_FOUND"));
  /* Created elsewhere since the allocator read its tags: works at once. */
  fixture_tag(f, "made-elsewhere", 5);
  a = get(f, "GET", "/api/segment/get/made-elsewhere", NULL, NULL);
  assert_true(a.status == 200 && body_is(&a, "1"));
  a = get(f, "GET", "/api/snowflake/get/", NULL, NULL);
  assert_int_equal(a.status, 404);
  a = get(f, "GET", "/decodeSnowflakeId?snowflakeId=abc", NULL, NULL);
  assert_true(a.status == 200 &&
              body_is(&a, "{\"errorMsg\":\"snowflake Id反解析失败\"}"));
  a = get(f, "GET", "/decodeSnowflakeId", NULL, NULL);
  assert_int_equal(a.status, 400);
}

static void test_v1_ids(void **state) {
  fixture *f = *state;
  answer a = get(f, "GET", "/v1/snowflake?count=3&format=text", NULL, NULL);
  long long x, y, z;
  assert_int_equal(a.status, 200);
  assert_int_equal(sscanf(a.body, "%lld\n%lld\n%lld\n", &x, &y, &z), 3);
  assert_true(x < y && y < z);
  a = get(f, "GET", "/v1/segment/order?count=3", NULL, NULL);
  assert_true(a.status == 200 &&
              body_is(&a, "{\"ids\":[\"1\",\"2\",\"3\"]}\n"));
  a = get(f, "GET", "/v1/segment/unknown?count=3", NULL, NULL);
  assert_int_equal(a.status, 404);
  assert_true(body_is(&a, "{\"error\":{\"code\":\"TAG_NOT_FOUND\",\"message\":"
                          "\"tag \\\"unknown\\\" not found\"}}\n"));
  fixture_tag(f, "later", 5);
  a = get(f, "GET", "/v1/segment/later?count=2&format=text", NULL, NULL);
  assert_true(a.status == 200 && body_is(&a, "1\n2\n"));
  a = get(f, "GET", "/v1/snowflake?count=0", NULL, NULL);
  assert_int_equal(a.status, 400);
  assert_true(body_has(&a, "COUNT_INVALID"));
  a = get(f, "POST", "/v1/snowflake", NULL, NULL);
  assert_int_equal(a.status, 405);
  assert_true(has_header(&a, "Allow: GET, HEAD"));
  {
    /* HEAD: the GET's headers, no body. */
    const char *out =
        FEED(f, "HEAD /v1/snowflake HTTP/1.1\r\nHost: t\r\n\r\n", NULL);
    a = parse_answer(out);
    assert_true(a.status == 200 && a.body_len > 0);
    assert_int_equal(strlen(out), (size_t)(a.body - out));
  }
  a = get(f, "GET", "/v1/decode/12345", NULL, NULL);
  assert_true(a.status == 200 && body_has(&a, "\"id\":\"12345\""));
  a = get(f, "GET", "/v1/layout", NULL, NULL);
  assert_true(a.status == 200 && body_has(&a, "\"node\":3"));
}

/* The admin calls run on the thread pool and answer on the loop. */
static void test_admin(void **state) {
  fixture *f = *state;
  const char *auth = "Authorization: Bearer tok\r\n";
  answer a;
  fixture_token(f, "tok");
  a = get(f, "POST", "/v1/tags", NULL, "{\"tag\":\"inv\",\"step\":7}");
  assert_int_equal(a.status, 401);
  assert_false(f->c->held); /* refused on the loop */
  a = get(f, "POST", "/v1/tags", auth,
          "{\"tag\":\"inv\",\"step\":7,\"start\":50,\"description\":\"ü\"}");
  assert_int_equal(a.status, 201);
  assert_true(body_has(&a, "\"tag\":\"inv\"") && body_has(&a, "\"step\":7,") &&
              body_has(&a, "\"description\":\"ü\""));
  /* The allocator was refreshed: IDs at once. */
  a = get(f, "GET", "/v1/segment/inv?count=2", NULL, NULL);
  assert_int_equal(a.status, 401); /* with a token, IDs need it too */
  a = get(f, "GET", "/v1/segment/inv?count=2", auth, NULL);
  assert_true(a.status == 200 && body_is(&a, "{\"ids\":[\"50\",\"51\"]}\n"));
  a = get(f, "POST", "/v1/tags", auth, "{\"tag\":\"inv\",\"step\":7}");
  assert_int_equal(a.status, 409);
  a = get(f, "PATCH", "/v1/tags/inv", auth, "{\"step\":9}");
  assert_true(a.status == 200 && body_has(&a, "\"step\":9"));
  a = get(f, "PATCH", "/v1/tags/inv", auth, "{\"step\":\"x\"}");
  assert_int_equal(a.status, 400);
  a = get(f, "GET", "/v1/tags", auth, NULL);
  assert_true(a.status == 200 && body_has(&a, "{\"tags\":[") &&
              body_has(&a, "\"tag\":\"order\""));
  a = get(f, "DELETE", "/v1/tags/inv", auth, NULL);
  assert_true(a.status == 204 && a.body_len == 0);
  /* RFC 9110 8.6, 8.3: a 204 has no Content-Length, and no Content-Type
  ** since there is no content. */
  assert_null(memmem(a.head, a.head_len, "Content-", 8));
  a = get(f, "GET", "/v1/tags/inv", auth, NULL);
  assert_int_equal(a.status, 404);
  a = get(f, "PUT", "/v1/tags", auth, "{}");
  assert_int_equal(a.status, 405);
}

/* Requests pipelined behind a call that finishes off the loop are
** answered after it, in order. */
static void test_pipeline_behind_admin(void **state) {
  fixture *f = *state;
  static const char in[] =
      "POST /v1/tags HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type: "
      "application/json\r\nContent-Length: 23\r\n\r\n"
      "{\"tag\":\"p\",\"step\":1000}"
      "GET /v1/segment/p HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /livez HTTP/1.1\r\nHost: t\r\n\r\n";
  const char *out = FEED(f, in, NULL);
  answer a = parse_answer(out), b, c;
  b = parse_answer(out + a.len);
  c = parse_answer(out + a.len + b.len);
  assert_int_equal(a.status, 201);
  assert_true(b.status == 200 && body_is(&b, "{\"ids\":[\"1\"]}\n"));
  assert_true(c.status == 200 && body_is(&c, "ok\n"));
  assert_int_equal(a.len + b.len + c.len, strlen(out));
}

static void test_framing(void **state) {
  fixture *f = *state;
  int last;
  const char *out;
  answer a;
  /* A partial head waits. */
  out = FEED(f, "GET /livez HTTP/1.1\r\nHost:", &last);
  assert_int_equal(last, 0);
  assert_string_equal(out, "");
  /* A parse error is answered and closes. */
  out = FEED(f, "GET / HTTP/2.0\r\nHost: t\r\n\r\n", &last);
  a = parse_answer(out);
  assert_int_equal(last, -1);
  assert_int_equal(a.status, 505);
  assert_true(has_header(&a, "Connection: close"));
  /* HTTP/1.0 keep-alive is said. */
  out = FEED(f, "GET /livez HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &last);
  a = parse_answer(out);
  assert_true(last > 0 && has_header(&a, "Connection: keep-alive"));
  /* Too large a body: 413 and close. */
  out = FEED(f,
             "POST /v1/tags HTTP/1.1\r\nHost: t\r\nContent-Length: "
             "5000\r\n\r\n",
             &last);
  assert_int_equal(last, -1);
  assert_int_equal(parse_answer(out).status, 413);
  /* A client waiting for 100 Continue gets it once, then the answer. */
#define PATCH_HEAD                                                             \
  "PATCH /v1/tags/order HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nExpect: "          \
  "100-continue\r\nContent-Type: application/json\r\nContent-Length: "         \
  "11\r\n\r\n"
  out = FEED(f, PATCH_HEAD, &last);
  assert_int_equal(last, 0);
  assert_string_equal(out, "HTTP/1.1 100 Continue\r\n\r\n");
  out = FEED(f, PATCH_HEAD, &last);
  assert_string_equal(out, "");
  out = FEED(f, PATCH_HEAD "{\"step\":50}", &last);
  a = parse_answer(out);
  assert_true(a.status == 200 && body_has(&a, "\"step\":50"));
  /* Timeout answer. */
  frond__http_proto.on_timeout(f->c);
  out = FEED(f, "", NULL);
  assert_int_equal(parse_answer(out).status, 408);
}

static void test_health_and_pages(void **state) {
  fixture *f = *state;
  answer a = get(f, "GET", "/readyz", NULL, NULL);
  assert_true(a.status == 200 && body_is(&a, "ready\n"));
  {
    /* Readiness reads the node's state: a store never opened is not
    ** reached (the allocator set aside, then put back). */
    frond_seg *seg = atomic_exchange(&f->srv.seg, NULL);
    int enabled = f->srv.seg_enabled;
    f->srv.seg_enabled = 1;
    a = get(f, "GET", "/readyz", NULL, NULL);
    atomic_store(&f->srv.seg, seg);
    f->srv.seg_enabled = enabled;
  }
  assert_true(a.status == 503 && body_is(&a, "not ready: store not reached\n"));
  a = get(f, "GET", "/healthz", NULL, NULL);
  assert_true(a.status == 200 && body_is(&a, "ok\n"));
  a = get(f, "GET", "/", NULL, NULL);
  assert_true(a.status == 200 && body_has(&a, "Frond node 3") &&
              body_has(&a, "<code>order</code>"));
  assert_true(has_header(&a, "Cache-Control: no-store"));
  a = get(f, "GET", "/nope", NULL, NULL);
  assert_int_equal(a.status, 404);
  /* The counters of all the above, by route and status. */
  a = get(f, "GET", "/metrics", NULL, NULL);
  assert_int_equal(a.status, 200);
  assert_true(body_has(&a, "frond_http_requests_total{route=\"readyz\","
                           "status=\"200\"} 1\n"));
  assert_true(body_has(&a, "frond_http_requests_total{route=\"readyz\","
                           "status=\"503\"} 1\n"));
  assert_true(body_has(&a, "frond_http_requests_total{route=\"other\","
                           "status=\"404\"} 1\n"));
  assert_true(body_has(&a, "frond_http_request_duration_seconds_count{route="
                           "\"status_page\"} 1\n"));
  assert_true(body_has(&a, "frond_connections_accepted_by_protocol_total{"
                           "protocol=\"http\"} 1\n"));
  assert_true(body_has(&a, "frond_ids_issued_total{generator=\"snowflake\"}"));
  assert_true(body_has(&a, "frond_ready 1\n"));
  /* Draining: the answer says it closes. */
  f->w.draining = 1;
  a = get(f, "GET", "/livez", NULL, NULL);
  assert_true(has_header(&a, "Connection: close"));
  f->w.draining = 0;
}

/* The status line and the first header of out[]'s first answer. */
static int status_of(const char *out) {
  int st = 0;
  if (sscanf(out, "HTTP/1.1 %d ", &st) != 1)
    return -1;
  return st;
}

/* HTTP conformance: each case was answered wrong before (RFC 9110/9112). */
static void test_conformance(void **state) {
  fixture *f = *state;
  const char *out;
  int last;
  answer a;
  /* A proxy's absolute-form target must be accepted (RFC 9112 3.2.2). */
  out = FEED(f, "GET http://127.0.0.1:8080/livez HTTP/1.1\r\nHost: x\r\n\r\n",
             &last);
  a = parse_answer(out);
  assert_true(a.status == 200 && body_is(&a, "ok\n") && last > 0);
  out = FEED(f,
             "GET HTTP://localhost:8080/v1/decode/7?x=1 HTTP/1.1\r\n"
             "Host: localhost:8080\r\n\r\n",
             NULL);
  a = parse_answer(out);
  assert_true(a.status == 200 && body_has(&a, "\"id\":\"7\""));
  out = FEED(f, "GET http://h HTTP/1.1\r\nHost: h\r\n\r\n", NULL);
  assert_int_equal(parse_answer(out).status, 200); /* the status page */
  /* OPTIONS * asks about the server: 200, Allow, Content-Length 0. */
  out = FEED(f, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", &last);
  a = parse_answer(out);
  assert_true(a.status == 200 && a.body_len == 0 && last > 0);
  assert_true(has_header(&a, "Allow: GET, HEAD, POST, PATCH, DELETE, OPTIONS"));
  assert_true(has_header(&a, "Content-Length: 0"));
  /* HTTP/2's preface: 505, as the docs say. */
  out = FEED(f, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", &last);
  assert_true(status_of(out) == 505 && last == -1);
  /* A bare LF does not end a header line: "X-A: a\nContent-Length: 48"
  ** is one line to a proxy that splits on CRLF only. */
  out = FEED(f,
             "GET /livez HTTP/1.1\r\nHost: x\r\nX-A: a\nContent-Length: 48"
             "\r\n\r\n",
             &last);
  assert_true(status_of(out) == 400 && last == -1);
  out = FEED(f, "GET /livez HTTP/1.0\n\n", &last);
  assert_true(status_of(out) == 400 && last == -1);
  /* The Bearer scheme is case-insensitive (RFC 9110 11.1). */
  fixture_token(f, "tok");
  a = get(f, "PATCH", "/v1/tags/order", "authorization: bearer tok\r\n",
          "{\"step\":60}");
  assert_int_equal(a.status, 200);
  a = get(f, "PATCH", "/v1/tags/order", "Authorization: BEARER   tok\r\n",
          "{\"step\":61}");
  assert_int_equal(a.status, 200);
  a = get(f, "PATCH", "/v1/tags/order", "Authorization: Bearertok\r\n",
          "{\"step\":62}");
  assert_int_equal(a.status, 401);
  a = get(f, "PATCH", "/v1/tags/order", "Authorization: Basic tok\r\n",
          "{\"step\":62}");
  assert_int_equal(a.status, 401);
  fixture_token(f, "");
  /* The 503 of a full server carries Date, as every answer. */
  frond__http_busy(f->c);
  out = FEED(f, "", NULL);
  a = parse_answer(out);
  assert_true(a.status == 503 && body_has(&a, "TOO_MANY_CONNECTIONS"));
  assert_non_null(memmem(a.head, a.head_len, "\r\nDate: ", 8));
  /* A 129-byte tag is TAG_INVALID on POST as on GET and DELETE. */
  {
    char body[300];
    snprintf(body, sizeof body, "{\"tag\":\"%0129d\",\"step\":1}", 0);
    a = get(f, "POST", "/v1/tags", NULL, body);
    assert_true(a.status == 400 && body_has(&a, "\"code\":\"TAG_INVALID\""));
    a = get(f, "POST", "/v1/tags", NULL, "{\"tag\":\"\",\"step\":1}");
    assert_true(a.status == 400 && body_has(&a, "\"code\":\"TAG_INVALID\""));
  }
}

/* A chunked body, as requests sends a generator and fetch() a stream. */
static void test_chunked(void **state) {
  fixture *f = *state;
  static const char req[] =
      "POST /v1/tags HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: "
      "application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
      "8\r\n{\"tag\":\"\r\n"
      "3;name=\"va;l\\\"x\"\r\nck1\r\n"
      "00c ; a = b ;c\r\n\",\"step\":10}\r\n"
      "0\r\nX-Checksum: abc\r\n\r\n"
      "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n";
  const char *out;
  char slow[sizeof req];
  answer a, b;
  int last;
  size_t i, off = 0;
  out = FEED(f, req, &last);
  a = parse_answer(out);
  assert_int_equal(a.status, 201);
  assert_true(body_has(&a, "\"tag\":\"ck1\"") && body_has(&a, "\"step\":10"));
  b = parse_answer(out + a.len);
  assert_true(b.status == 200 && body_is(&b, "ok\n"));
  /* The same body arriving a byte at a time: answered once it is whole. */
  memcpy(slow, req, sizeof req);
  memcpy(strstr(slow, "ck1"), "ck2", 3);
  for (i = 1; i <= sizeof req - 1; i++) {
    int n = frond__http_proto.on_data(f->c, slow + off, i - off);
    fixture_settle(f);
    assert_true(n >= 0);
    off += (size_t)n;
  }
  assert_int_equal(off, sizeof req - 1);
  out = FEED(f, "", NULL); /* what was written, and what waits in out */
  a = parse_answer(out);
  assert_true(a.status == 201 && body_has(&a, "\"tag\":\"ck2\""));
  assert_int_equal(status_of(out + a.len), 200);
  /* Refusals: framing that could be read two ways closes. */
  static const struct {
    const char *te;
    int status;
  } bad[] = {
      {"Transfer-Encoding: gzip, chunked\r\n", 501},
      {"Transfer-Encoding: chunked, gzip\r\n", 400},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400},
      {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400},
      {"Transfer-Encoding: \r\n", 400},
  };
  for (i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    char r[512];
    int n = snprintf(r, sizeof r,
                     "POST /v1/tags HTTP/1.1\r\nHost: localhost:8080\r\n%s"
                     "\r\n0\r\n\r\n",
                     bad[i].te);
    out = feed(f, r, (size_t)n, &last);
    assert_int_equal(status_of(out), bad[i].status);
    assert_int_equal(last, -1);
  }
  out = FEED(f,
             "POST /v1/tags HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
             "0\r\n\r\n",
             &last);
  assert_true(status_of(out) == 400 && last == -1);
  static const char *const chunks[] = {
      "5\r\nabc\r\n",    /* data shorter than its size */
      "x\r\n",           /* not hex */
      "5 \r\nabcde\r\n", /* space without an extension */
      "5;\r\nabcde\r\n", /* extension without a name */
      "5\nabcde\r\n",    /* bare LF */
      "0\r\nX: a\n\r\n", /* trailer with a bare LF */
      "0\r\nbad trailer\r\n\r\n",
      "5;a=\"b\r\nabcde\r\n", /* unterminated quoted string */
  };
  for (i = 0; i < FROND__ARRAY_SIZE(chunks); i++) {
    char r[512];
    int n = snprintf(r, sizeof r,
                     "POST /v1/tags HTTP/1.1\r\nHost: localhost:8080\r\n"
                     "Content-Type: application/json\r\nTransfer-Encoding: "
                     "chunked\r\n\r\n%s0\r\n\r\n",
                     chunks[i]);
    out = feed(f, r, (size_t)n, &last);
    assert_int_equal(status_of(out), 400);
    assert_int_equal(last, -1);
  }
  /* Above max_body (4 KiB): 413 as soon as a chunk says so. */
  out = FEED(f,
             "POST /v1/tags HTTP/1.1\r\nHost: localhost:8080\r\n"
             "Transfer-Encoding: chunked\r\n\r\n1001\r\n",
             &last);
  assert_true(status_of(out) == 413 && last == -1);
  out = FEED(f,
             "POST /v1/tags HTTP/1.1\r\nHost: localhost:8080\r\n"
             "Transfer-Encoding: chunked\r\n\r\n"
             "ffffffffffffffffffffffff\r\n",
             &last);
  assert_true(status_of(out) == 413 && last == -1);
}

/* Without a token, what a web page makes a browser send is refused on the
** paths that issue IDs or change tags; programs pass. */
static void test_browser_requests(void **state) {
  fixture *f = *state;
  answer a;
  const char *out;
  /* A cross-site form: text/plain, no preflight. */
  a = get(f, "POST", "/v1/tags", "Content-Type: text/plain\r\n",
          "{\"tag\":\"csrf\",\"step\":1}");
  assert_true(a.status == 415 && body_has(&a, "UNSUPPORTED_MEDIA_TYPE"));
  assert_true(has_header(&a, "Accept-Post: application/json"));
  a = get(f, "PATCH", "/v1/tags/order", "Content-Type: application/jsonx\r\n",
          "{\"step\":3}");
  assert_true(a.status == 415 && has_header(&a, "Accept-Patch: "
                                                "application/json"));
  out = FEED(f,
             "POST /v1/tags HTTP/1.1\r\nHost: localhost:8080\r\n"
             "Content-Length: 21\r\n\r\n{\"tag\":\"nt\",\"step\":1}",
             NULL);
  assert_int_equal(parse_answer(out).status, 415);
  a = get(f, "POST", "/v1/tags",
          "Content-Type: Application/JSON ; charset=utf-8\r\n",
          "{\"tag\":\"ok1\",\"step\":1}");
  assert_int_equal(a.status, 201);
  /* DNS rebinding: the page's own name as Host. */
  out = FEED(f,
             "DELETE /v1/tags/ok1 HTTP/1.1\r\nHost: evil.example:8080\r\n"
             "\r\n",
             NULL);
  a = parse_answer(out);
  assert_true(a.status == 403 && body_has(&a, "\"code\":\"FORBIDDEN\""));
  static const char *const hosts[] = {
      "localhost",    "127.0.0.1:80",     "127.0.0.1:8081", "localhost.:8080",
      "127.0.0:8080", "127.0.0.1.2:8080", "128.0.0.1:8080", "[::2]:8080",
      "[::1]8080",    "127.0.0.256:8080", "localhost:8080x"};
  for (size_t i = 0; i < FROND__ARRAY_SIZE(hosts); i++) {
    char r[256];
    int n =
        snprintf(r, sizeof r,
                 "DELETE /v1/tags/ok1 HTTP/1.1\r\nHost: %s\r\n\r\n", hosts[i]);
    assert_int_equal(status_of(feed(f, r, (size_t)n, NULL)), 403);
  }
  out = FEED(f, "DELETE /v1/tags/ok1 HTTP/1.0\r\n\r\n", NULL);
  assert_int_equal(status_of(out), 403); /* no Host at all */
  /* A foreign Origin, a cross-site fetch: refused; reading is not. */
  a = get(f, "PATCH", "/v1/tags/order",
          "Origin: http://evil.example\r\nContent-Type: application/json\r\n",
          "{\"step\":3}");
  assert_int_equal(a.status, 403);
  a = get(f, "PATCH", "/v1/tags/order", "Origin: null\r\n", "{\"step\":3}");
  assert_int_equal(a.status, 403);
  a = get(f, "GET", "/v1/snowflake", "Sec-Fetch-Site: cross-site\r\n", NULL);
  assert_int_equal(a.status, 403);
  /* A range lease uses up IDs too. */
  a = get(f, "GET", "/v1/segment/order/range?count=5",
          "Sec-Fetch-Site: cross-site\r\n", NULL);
  assert_int_equal(a.status, 403);
  a = get(f, "GET", "/api/segment/get/order", "Sec-Fetch-Site: same-site\r\n",
          NULL);
  assert_int_equal(a.status, 403);
  a = get(f, "GET", "/v1/segment/order", "Origin: http://localhost:3000\r\n",
          NULL);
  assert_int_equal(a.status, 403);
  a = get(f, "GET", "/v1/layout", "Sec-Fetch-Site: cross-site\r\n", NULL);
  assert_int_equal(a.status, 200);
  a = get(f, "GET", "/v1/tags", "Origin: http://evil.example\r\n", NULL);
  assert_int_equal(a.status, 200);
  /* The server's own pages, a typed address, and programs pass. */
  a = get(f, "GET", "/v1/snowflake",
          "Sec-Fetch-Site: same-origin\r\nOrigin: http://127.0.0.1:8080\r\n",
          NULL);
  assert_int_equal(a.status, 200);
  a = get(f, "GET", "/api/snowflake/get/x", "Sec-Fetch-Site: none\r\n", NULL);
  assert_int_equal(a.status, 200);
  out = FEED(f,
             "PATCH /v1/tags/order HTTP/1.1\r\nHost: [::1]:8080\r\n"
             "Origin: http://[::1]:8080\r\nContent-Type: application/json"
             "\r\nContent-Length: 10\r\n\r\n{\"step\":4}",
             NULL);
  assert_int_equal(parse_answer(out).status, 200);
  out = FEED(f, "DELETE /v1/tags/ok1 HTTP/1.1\r\nHost: LOCALHOST:8080\r\n\r\n",
             NULL);
  assert_int_equal(parse_answer(out).status, 204);
  /* With a token, the token decides; the Host is not checked. */
  fixture_token(f, "tok");
  out = FEED(f,
             "PATCH /v1/tags/order HTTP/1.1\r\nHost: ids.example\r\n"
             "Authorization: Bearer tok\r\nContent-Type: application/json"
             "\r\nContent-Length: 10\r\n\r\n{\"step\":5}",
             NULL);
  assert_int_equal(parse_answer(out).status, 200);
}

/* How lists are answered: ?as=, Accept, and the deprecated ?format=. */
static void test_output_choice(void **state) {
  fixture *f = *state;
  static const struct {
    const char *path, *headers;
    int text;
  } cases[] = {
      {"/v1/segment/order?count=2&as=text", NULL, 1},
      {"/v1/segment/order?count=2&as=json", NULL, 0},
      {"/v1/segment/order?count=2", "Accept: text/plain\r\n", 1},
      {"/v1/segment/order?count=2", "Accept: TEXT/PLAIN; q=0.9, */*\r\n", 1},
      {"/v1/segment/order?count=2", "Accept: application/json, text/plain\r\n",
       0},
      {"/v1/segment/order?count=2", "Accept: text/plainx\r\n", 0},
      {"/v1/segment/order?count=2", "Accept: */*\r\n", 0},
      {"/v1/segment/order?count=2&as=json", "Accept: text/plain\r\n", 0},
      /* The old spelling still works; as wins over it. */
      {"/v1/segment/order?count=2&format=text", NULL, 1},
      {"/v1/segment/order?count=2&format=text&as=json", NULL, 0},
      {"/v1/segment/order?count=2&format=json", "Accept: text/plain\r\n", 0},
  };
  long long next = 1;
  answer a;
  char want[128];
  for (size_t i = 0; i < FROND__ARRAY_SIZE(cases); i++) {
    a = get(f, "GET", cases[i].path, cases[i].headers, NULL);
    if (cases[i].text)
      snprintf(want, sizeof want, "%lld\n%lld\n", next, next + 1);
    else
      snprintf(want, sizeof want, "{\"ids\":[\"%lld\",\"%lld\"]}\n", next,
               next + 1);
    assert_int_equal(a.status, 200);
    assert_true(body_is(&a, want));
    assert_true(has_header(&a, cases[i].text
                                   ? "Content-Type: text/plain"
                                   : "Content-Type: application/json"));
    next += 2;
  }
  a = get(f, "GET", "/v1/segment/order/range?count=3&as=text", NULL, NULL);
  snprintf(want, sizeof want, "%lld %lld\n", next, next + 3);
  assert_true(a.status == 200 && body_is(&a, want));
  a = get(f, "GET", "/v1/snowflake?count=2", "Accept: text/plain\r\n", NULL);
  assert_true(a.status == 200 && a.body[a.body_len - 1] == '\n' &&
              memchr(a.body, '"', a.body_len) == NULL);
  a = get(f, "GET", "/v1/snowflake?as=xml", NULL, NULL);
  assert_true(a.status == 400 && body_has(&a, "\"code\":\"BAD_REQUEST\"") &&
              body_has(&a, "as must be json or text"));
  a = get(f, "GET", "/v1/snowflake?format=xml", NULL, NULL);
  assert_true(a.status == 400 && body_has(&a, "format must be json or text"));
  /* A bad count is answered before a bad output choice, as before. */
  a = get(f, "GET", "/v1/snowflake?count=0&as=xml", NULL, NULL);
  assert_true(a.status == 400 && body_has(&a, "COUNT_INVALID"));
}

/* The route table: each route's methods (405 and Allow), its parameter
** (one path segment: 404 on the route otherwise), and a snowflake ID
** decoded with the fields every front shows. */
static void test_routes(void **state) {
  fixture *f = *state;
  static const struct {
    const char *method, *path, *allow;
  } wrong[] = {
      {"POST", "/v1/snowflake", "GET, HEAD"},
      {"DELETE", "/v1/segment/order", "GET, HEAD"},
      {"POST", "/v1/segment/order/range", "GET, HEAD"},
      {"PUT", "/v1/format/x", "GET, HEAD"},
      {"POST", "/v1/uuid7", "GET, HEAD"},
      {"POST", "/v1/decode/1", "GET, HEAD"},
      {"POST", "/v1/layout", "GET, HEAD"},
      {"DELETE", "/v1/tags", "GET, HEAD, POST"},
      {"POST", "/v1/tags/order", "GET, HEAD, PATCH, DELETE"},
      {"GET", "/v1/tags/order/advance", "POST"},
      {"OPTIONS", "/metrics", "GET, HEAD"},
      {"POST", "/", "GET, HEAD"},
  };
  char line[64];
  answer a;
  for (size_t i = 0; i < FROND__ARRAY_SIZE(wrong); i++) {
    a = get(f, wrong[i].method, wrong[i].path, NULL, NULL);
    snprintf(line, sizeof line, "Allow: %s", wrong[i].allow);
    assert_int_equal(a.status, 405);
    assert_true(has_header(&a, line));
  }
  /* Leaf's paths and the probes take any method. */
  a = get(f, "DELETE", "/api/snowflake/get/k", NULL, NULL);
  assert_int_equal(a.status, 200);
  a = get(f, "OPTIONS", "/livez", NULL, NULL);
  assert_true(a.status == 200 && body_is(&a, "ok\n"));
  /* A parameter is one segment: else 404, counted on its route. */
  a = get(f, "GET", "/v1/segment/a/b", NULL, NULL);
  assert_true(a.status == 404 && body_has(&a, "\"NOT_FOUND\""));
  a = get(f, "GET", "/v1/segment/", NULL, NULL);
  assert_int_equal(a.status, 404);
  a = get(f, "GET", "/v1/tags/a/b/advance", NULL, NULL);
  assert_int_equal(a.status, 404);
  a = get(f, "GET", "/v1/nope", NULL, NULL);
  assert_int_equal(a.status, 404);
  /* /v1/decode's parameter is the rest of the path: a bad ID, not a 404. */
  a = get(f, "GET", "/v1/decode/a/b", NULL, NULL);
  assert_true(a.status == 400 && body_has(&a, "ID_INVALID"));
  a = get(f, "GET", "/metrics", NULL, NULL);
  assert_true(body_has(&a, "frond_http_requests_total{route=\"segment\","
                           "status=\"404\"} 2\n"));
  assert_true(body_has(&a, "frond_http_requests_total{route=\"tags\","
                           "status=\"404\"} 1\n"));
  assert_true(body_has(&a, "frond_http_requests_total{route=\"other\","
                           "status=\"404\"} 1\n"));
  assert_true(body_has(&a, "frond_http_requests_total{route=\"tags\","
                           "status=\"405\"} 3\n"));
  /* The decoded fields, in their one order. */
  a = get(f, "GET", "/v1/decode/4194307", NULL, NULL);
  assert_int_equal(a.status, 200);
  {
    static const char *const fields[] = {"{\"id\":\"4194307\",\"time\":\"",
                                         "\"unix_ms\":",
                                         "\"time_units\":1,",
                                         "\"node\":0,",
                                         "\"datacenter\":0,",
                                         "\"worker\":0,",
                                         "\"sequence\":3,",
                                         "\"layout\":\"time=41,"};
    const char *at = a.body;
    for (size_t i = 0; i < FROND__ARRAY_SIZE(fields); i++) {
      const char *p = memmem(at, a.body_len - (size_t)(at - a.body), fields[i],
                             strlen(fields[i]));
      assert_non_null(p);
      at = p + strlen(fields[i]);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_leaf, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_v1_ids, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_admin, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_pipeline_behind_admin, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_framing, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_health_and_pages, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_conformance, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_chunked, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_browser_requests, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_output_choice, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_routes, setup, fixture_teardown),
  };
  return frond_run_tests(tests, NULL, NULL);
}
