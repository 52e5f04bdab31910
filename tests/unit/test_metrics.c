/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_metrics.c -- /metrics' numbers and histograms: values without float
** noise, bucket bounds without exponents, histograms summed over workers
** and cumulative, RESP timed by command, and metrics_histograms = off
** leaving the families out.
*/
#include "server_fixture.h"

#include "server/http.h"
#include "server/resp_shared.h"

#include <math.h>
#include <sodium.h>
#include <sqlite3.h>

static void test_numbers(void **state) {
  static const struct {
    double v;
    const char *want;
  } cases[] = {
      {0.705, "0.705"}, /* %.17g: 0.70499999999999996 */
      {0.1, "0.1"},
      {0.30000000000000004, "0.30000000000000004"}, /* 0.1 + 0.2: 17 digits */
      {1.0 / 3.0, "0.3333333333333333"},
      {1e-05, "0.00001"}, /* %g: 1e-05 */
      {2.5e-06, "0.0000025"},
      {0.0001, "0.0001"},
      {1, "1"},
      {-1.5, "-1.5"},
      {0, "0"},
      {-0.0, "0"},
      {1.972, "1.972"},
      {2139281758.536, "2139281758.536"},
      {1e20, "100000000000000000000"},
      {1e21, "1e+21"},
      {1e-13, "1e-13"},
      {18446744073709551616.0, "18446744073709551616"},
      {INFINITY, "+Inf"},
      {-INFINITY, "-Inf"},
      {NAN, "NaN"},
  };
  char buf[FROND__NUM_MAX];
  size_t i;
  (void)state;
  for (i = 0; i < FROND__ARRAY_SIZE(cases); i++) {
    const char *got = frond__metrics_num(cases[i].v, buf);
    if (strcmp(got, cases[i].want) != 0)
      fail_msg("%.17g: got %s, want %s", cases[i].v, got, cases[i].want);
  }
  /* Whatever the value, the text reads back as it. */
  for (i = 0; i < 100000; i++) {
    double v = (double)rand() / RAND_MAX * pow(10, (int)(i % 30) - 15);
    const char *got = frond__metrics_num(v, buf);
    if (strtod(got, NULL) != v)
      fail_msg("%.17g printed %s", v, got);
  }
}

/* One histogram of the HTTP state of a two-worker server, rendered. */
static void test_histogram(void **state) {
  fixture *f = *state;
  frond__http_state *st[2];
  frond__listener *l2;
  frond__worker *two = calloc(2, sizeof *two);
  frond__buf b = {0};
  (void)state;
  /* A second worker beside the fixture's. */
  two[0] = f->w;
  l2 = &two[1].listeners[0];
  l2->proto = &frond__http_proto;
  l2->state = calloc(1, sizeof(frond__http_state));
  two[1].nlisteners = 1;
  f->srv.workers = two;
  f->srv.nworkers = 2;
  st[0] = two[0].listeners[0].state;
  st[1] = l2->state;
  frond__hist_add(&st[0]->duration[FROND__R_LAYOUT], 1000); /* le 0.000001 */
  frond__hist_add(&st[1]->duration[FROND__R_LAYOUT], 1001); /* le 0.0000025 */
  frond__hist_add(&st[1]->duration[FROND__R_LAYOUT], 30000000);   /* 0.05 */
  frond__hist_add(&st[0]->duration[FROND__R_LAYOUT], 2000000000); /* +Inf */
  frond__metrics_hist(&b, &f->srv, &frond__http_proto,
                      offsetof(frond__http_state, duration[FROND__R_LAYOUT]),
                      "h", "route", "layout");
  assert_int_equal(frond__buf_append(&b, "", 1), 0);
  assert_string_equal(b.data, "h_bucket{route=\"layout\",le=\"0.000001\"} 1\n"
                              "h_bucket{route=\"layout\",le=\"0.0000025\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.000005\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.00001\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.000025\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.00005\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.0001\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.00025\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.0005\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.001\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.0025\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.005\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.01\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.025\"} 2\n"
                              "h_bucket{route=\"layout\",le=\"0.05\"} 3\n"
                              "h_bucket{route=\"layout\",le=\"0.1\"} 3\n"
                              "h_bucket{route=\"layout\",le=\"1\"} 3\n"
                              "h_bucket{route=\"layout\",le=\"+Inf\"} 4\n"
                              "h_sum{route=\"layout\"} 2.030002001\n"
                              "h_count{route=\"layout\"} 4\n");
  /* A key without an observation has no series. */
  b.len = 0;
  frond__metrics_hist(&b, &f->srv, &frond__http_proto,
                      offsetof(frond__http_state, duration[FROND__R_DECODE]),
                      "h", "route", "decode");
  assert_int_equal(b.len, 0);
  f->srv.workers = &f->w;
  f->srv.nworkers = 1;
  free(l2->state);
  free(two);
  frond__buf_free(&b);
}

/* The /metrics page of the fixture's server. */
static const char *scrape(fixture *f, frond__buf *b) {
  b->len = 0;
  frond__metrics_render(&f->srv, b);
  assert_int_equal(frond__buf_append(b, "", 1), 0);
  return b->data;
}

static void test_http_histograms_switch(void **state) {
  fixture *f = *state;
  frond__buf b = {0};
  FEED(f, "GET /v1/layout HTTP/1.1\r\nHost: a\r\n\r\n", NULL);
  assert_non_null(strstr(scrape(f, &b), "frond_http_request_duration_seconds_"
                                        "count{route=\"layout\"} 1\n"));
  /* Off: no family at all (not an empty one), and nothing recorded. */
  f->srv.cfg.metrics_histograms = 0;
  FEED(f, "GET /v1/layout HTTP/1.1\r\nHost: a\r\n\r\n", NULL);
  assert_null(strstr(scrape(f, &b), "frond_http_request_duration_seconds"));
  assert_non_null(strstr(b.data, "frond_http_requests_total{route=\"layout\","
                                 "status=\"200\"} 2\n"));
  f->srv.cfg.metrics_histograms = 1;
  assert_non_null(strstr(scrape(f, &b), "frond_http_request_duration_seconds_"
                                        "count{route=\"layout\"} 1\n"));
  frond__buf_free(&b);
}

/* RESP commands are timed by command, the ones answered off the loop
** (a tag looked up in the store) included, once each. */
static void test_resp_histograms(void **state) {
  static const char *const tags[] = {"order", NULL};
  fixture *f = fixture_open(&frond__resp_proto, tags);
  frond__buf b = {0};
  const char *m;
  (void)state;
  FEED(f, "PING\r\nPING\r\nINCR order\r\nINCR nothere\r\n", NULL);
  fixture_tag(f, "later", 10);
  assert_string_equal(FEED(f, "INCR later\r\n", NULL), ":1\r\n");
  m = scrape(f, &b);
  assert_non_null(strstr(m, "# TYPE frond_resp_command_duration_seconds "
                            "histogram\n"));
  assert_non_null(
      strstr(m, "frond_resp_command_duration_seconds_count{command=\"ping\"} "
                "2\n"));
  assert_non_null(
      strstr(m, "frond_resp_command_duration_seconds_count{command=\"incr\"} "
                "3\n"));
  assert_non_null(
      strstr(m, "frond_resp_command_duration_seconds_bucket{command=\"incr\","
                "le=\"+Inf\"} 3\n"));
  assert_null(strstr(m, "command_duration_seconds_count{command=\"echo\"}"));
  f->srv.cfg.metrics_histograms = 0;
  FEED(f, "PING\r\n", NULL);
  assert_null(strstr(scrape(f, &b), "frond_resp_command_duration_seconds"));
  assert_non_null(strstr(b.data,
                         "frond_resp_commands_total{command=\"ping\",result="
                         "\"ok\"} 3\n"));
  frond__buf_free(&b);
  fixture_close(f);
}

/* Every value on the page is as the text format writes it: no float noise
** and no exponent where a plain decimal reads. */
static void test_page_numbers(void **state) {
  fixture *f = *state;
  frond__buf b = {0};
  const char *line;
  FEED(f, "GET /v1/snowflake HTTP/1.1\r\nHost: a\r\n\r\n", NULL);
  for (line = scrape(f, &b); *line; line = strchr(line, '\n') + 1) {
    const char *nl = strchr(line, '\n'), *sp = memrchr(line, ' ', nl - line);
    const char *le;
    char num[FROND__NUM_MAX], v[64];
    if (line[0] == '#')
      continue;
    assert_true(sp != NULL && nl != NULL && sp < nl &&
                (size_t)(nl - sp) < sizeof v);
    memcpy(v, sp + 1, (size_t)(nl - sp - 1));
    v[nl - sp - 1] = '\0';
    if (strcmp(frond__metrics_num(strtod(v, NULL), num), v) != 0)
      fail_msg("not the shortest form: %.*s", (int)(nl - line), line);
    /* A bucket's bound, too. */
    if ((le = strstr(line, "le=\"")) != NULL && le < nl) {
      const char *q = strchr(le + 4, '"');
      if (strncmp(le + 4, "+Inf", 4) != 0 &&
          memchr(le + 4, 'e', (size_t)(q - le - 4)) != NULL)
        fail_msg("an exponent in %.*s", (int)(nl - line), line);
    }
  }
  frond__buf_free(&b);
}

/* The build as labels of a constant 1, the libraries as they say. */
static void test_build_info(void **state) {
  fixture *f = *state;
  frond__buf b = {0};
  char want[256];
  const char *m = scrape(f, &b), *line;
  line = strstr(m, "\nfrond_build_info{");
  assert_non_null(line);
  assert_non_null(strstr(m, "# TYPE frond_build_info gauge\n"));
  snprintf(want, sizeof want, "{version=\"%s\",build_type=\"",
           FROND_VERSION_STRING);
  assert_non_null(strstr(line, want));
  snprintf(want, sizeof want, ",libsodium=\"%s\",", sodium_version_string());
  assert_non_null(strstr(line, want));
  snprintf(want, sizeof want, ",sqlite=\"%s\",", sqlite3_libversion());
  assert_non_null(strstr(line, want));
  assert_non_null(strstr(line, ",asserts=\""));
  assert_true(strstr(line, "} 1\n") < strchr(line + 1, '\n'));
  frond__buf_free(&b);
}

static int setup_http(void **state) {
  static const char *const tags[] = {"order", NULL};
  *state = fixture_open(&frond__http_proto, tags);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_numbers),
      cmocka_unit_test_setup_teardown(test_histogram, setup_http,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_http_histograms_switch, setup_http,
                                      fixture_teardown),
      cmocka_unit_test(test_resp_histograms),
      cmocka_unit_test_setup_teardown(test_page_numbers, setup_http,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_build_info, setup_http,
                                      fixture_teardown),
  };
  return frond_run_tests(tests, NULL, NULL);
}
