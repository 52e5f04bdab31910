/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_quota.c -- quotas: the bucket's arithmetic on a clock the test
** gives (refill, burst, a count above the burst, rates at their bounds,
** a clock that steps back, undoing a take), the rules' parser and which
** rule a name falls under, the server's tables (exact across threads,
** bounded however many names come), and the HTTP front through its real
** handlers: 429 with Retry-After, nothing issued, batches and ranges
** counted, other clients and tags unaffected.
*/
#include "server_fixture.h"

#include "server/quota.h"

#include <pthread.h>
#include <time.h>

#define S UINT64_C(1000000000) /* a second in ns */

/* ---------------------------------------------------------------- bucket */

static void test_bucket_refill(void **state) {
  _Atomic uint64_t tat = 0;
  uint64_t retry = 0, t = 1000 * S;
  (void)state;
  /* Full at first: the whole burst at once, then nothing. */
  assert_int_equal(frond__quota_bucket_tokens(&tat, 10, 20, t), 20);
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 20, t, 15, &retry), 0);
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 20, t, 5, &retry), 0);
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 20, t, 1, &retry), 1);
  assert_int_equal(retry, 1);
  /* 10 a second: 7 need 0.7 s, rounded up to 1. */
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 20, t, 7, &retry), 1);
  assert_int_equal(retry, 1);
  /* A refusal took nothing; after 0.1 s one ID is back, and only one. */
  t += S / 10;
  assert_int_equal(frond__quota_bucket_tokens(&tat, 10, 20, t), 1);
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 20, t, 1, &retry), 0);
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 20, t, 1, &retry), 1);
  /* 2.5 s idle refills 25, of which the burst keeps 20. */
  t += 5 * S / 2;
  assert_int_equal(frond__quota_bucket_tokens(&tat, 10, 20, t), 20);
  /* 20 IDs missing at 3 a second: 7 s (6.67 rounded up). */
  tat = 0;
  assert_int_equal(frond__quota_bucket_take(&tat, 3, 20, t, 20, &retry), 0);
  assert_int_equal(frond__quota_bucket_take(&tat, 3, 20, t, 20, &retry), 1);
  assert_int_equal(retry, 7);
}

static void test_bucket_above_burst(void **state) {
  _Atomic uint64_t tat = 0;
  uint64_t retry = 0;
  (void)state;
  /* Never admitted, whatever the wait; and nothing is taken. */
  assert_int_equal(frond__quota_bucket_take(&tat, 100, 50, S, 51, &retry), 1);
  assert_true(retry == UINT64_MAX);
  assert_int_equal(frond__quota_bucket_tokens(&tat, 100, 50, S), 50);
  assert_int_equal(frond__quota_bucket_take(&tat, 100, 50, S, 50, &retry), 0);
}

static void test_bucket_bounds(void **state) {
  _Atomic uint64_t tat = 0;
  uint64_t retry = 0, rate = FROND__QUOTA_RATE_MAX;
  uint64_t burst = FROND__QUOTA_BURST_MAX;
  /* 500 years of uptime in ns: the bucket's clock still fits. */
  uint64_t t = UINT64_C(500) * 365 * 86400 * S;
  (void)state;
  assert_true(frond__quota_clock(t, rate) == t);
  assert_true(frond__quota_clock(t, 1) == t / S);
  assert_true(frond__quota_bucket_tokens(&tat, rate, burst, t) == burst);
  assert_int_equal(
      frond__quota_bucket_take(&tat, rate, burst, t, burst, &retry), 0);
  assert_int_equal(frond__quota_bucket_take(&tat, rate, burst, t, 1, &retry),
                   1);
  assert_int_equal(retry, 1);
  assert_int_equal(
      frond__quota_bucket_take(&tat, rate, burst, t, burst, &retry), 1);
  assert_int_equal(retry, burst / rate); /* 1000 s */
  /* A nanosecond at a billion a second is one ID. */
  assert_int_equal(
      frond__quota_bucket_take(&tat, rate, burst, t + 1, 1, &retry), 0);
  /* The slowest rule: 1 a second, refused for a day's worth. */
  tat = 0;
  assert_int_equal(frond__quota_bucket_take(&tat, 1, burst, t, burst, &retry),
                   0);
  assert_int_equal(frond__quota_bucket_take(&tat, 1, burst, t, 86400, &retry),
                   1);
  assert_int_equal(retry, 86400);
}

static void test_bucket_clock_back(void **state) {
  _Atomic uint64_t tat = 0;
  uint64_t retry = 0, t = 10000 * S;
  (void)state;
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 10, t, 10, &retry), 0);
  /* A clock an hour back (a thread's stale reading): nothing extra is
  ** granted, and nothing is written. */
  assert_int_equal(frond__quota_bucket_tokens(&tat, 10, 10, t - 3600 * S), 0);
  assert_int_equal(
      frond__quota_bucket_take(&tat, 10, 10, t - 3600 * S, 1, &retry), 1);
  assert_int_equal(
      frond__quota_bucket_take(&tat, 10, 10, t - 3600 * S, 10, &retry), 1);
  assert_int_equal(tat, 100010);
  /* Back at the time of the last take: as it was; a second later, full. */
  assert_int_equal(frond__quota_bucket_tokens(&tat, 10, 10, t), 0);
  t += S;
  assert_int_equal(frond__quota_bucket_tokens(&tat, 10, 10, t), 10);
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 10, t, 10, &retry), 0);
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 10, t, 1, &retry), 1);
  /* A few ns back: one ID of the clock's rounding at most. */
  tat = 0;
  t = 200 * S;
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 10, t, 5, &retry), 0);
  assert_in_range(frond__quota_bucket_tokens(&tat, 10, 10, t - 50), 4, 5);
}

static void test_bucket_give(void **state) {
  _Atomic uint64_t tat = 0;
  uint64_t retry = 0;
  (void)state;
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 10, S, 4, &retry), 0);
  assert_int_equal(frond__quota_bucket_take(&tat, 10, 10, S, 4, &retry), 0);
  frond__quota_bucket_give(&tat, 4);
  assert_int_equal(frond__quota_bucket_tokens(&tat, 10, 10, S), 6);
  /* A bucket that filled since stays full. */
  frond__quota_bucket_give(&tat, 4);
  frond__quota_bucket_give(&tat, 400);
  assert_int_equal(frond__quota_bucket_tokens(&tat, 10, 10, S), 10);
}

/* ----------------------------------------------------------------- rules */

static int parse(const char *text, frond__quota_rule *r, size_t *n,
                 frond_error *err) {
  return frond__quota_parse("quota_tag", text, strlen(text),
                            FROND__QUOTA_NAME_MAX, r, FROND__QUOTA_RULES_MAX, n,
                            err);
}

static void test_parse(void **state) {
  static frond__quota_rule r[FROND__QUOTA_RULES_MAX];
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"orders", "not NAME=RATE"},
      {"=10", "a name of 1 to"},
      {"orders=", "RATE must be"},
      {"orders=0", "RATE must be"},
      {"orders=-5", "RATE must be"},
      {"orders=1000000001", "RATE must be"},
      {"orders=10/0", "BURST one in"},
      {"orders=10/1000000000001", "BURST one in"},
      {"orders=10/", "BURST one in"},
      {"orders=10/5/5", "BURST one in"},
      {"orders=1x", "RATE must be"},
      {"orders=1 0", "RATE must be"},
      {"or*ders=10", "a * inside it"},
      {"**=10", "a * inside it"},
      {"or/ders=10", "a /"},
      {"or\001ders=10", "not UTF-8 without control"},
      {"or\377ders=10", "not UTF-8 without control"},
      {"a=1,,b=2", "an empty rule"},
      {"a=1,", "an empty rule"},
      {",a=1", "an empty rule"},
      {"a=1, a = 2", "\"a\" is given twice"},
      {"a*=1,a*=2", "\"a*\" is given twice"},
  };
  frond_error err = {0, ""};
  char big[300];
  size_t n, i;
  (void)state;
  assert_int_equal(parse("", r, &n, &err), 0);
  assert_int_equal(n, 0);
  assert_int_equal(parse("  \t ", r, &n, &err), 0);
  assert_int_equal(n, 0);
  assert_int_equal(
      parse(" orders:*=100/500 , *=10,orders = 7, orders:eu:*=3/4 ,b=1", r, &n,
            &err),
      0);
  assert_int_equal(n, 5);
  /* Exact names first, by bytes; then patterns, longest first. */
  assert_string_equal(r[0].name, "b");
  assert_string_equal(r[1].name, "orders");
  assert_int_equal(r[1].rate, 7);
  assert_int_equal(r[1].burst, 7); /* BURST defaults to RATE */
  assert_string_equal(r[2].name, "orders:eu:*");
  assert_int_equal(r[2].len, 10);
  assert_int_equal(r[2].burst, 4);
  assert_string_equal(r[3].name, "orders:*");
  assert_int_equal(r[3].rate, 100);
  assert_int_equal(r[3].burst, 500);
  assert_string_equal(r[4].name, "*");
  assert_int_equal(r[4].len, 0);
  assert_true(r[4].prefix && !r[0].prefix);
  /* An exact name and the pattern of that prefix are two rules. */
  assert_int_equal(parse("a=1,a*=2", r, &n, &err), 0);
  assert_int_equal(n, 2);
  for (i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    err.message[0] = '\0';
    if (parse(bad[i].text, r, &n, &err) != FROND_EINVAL ||
        err.code != FROND_EINVAL || strstr(err.message, bad[i].why) == NULL ||
        strncmp(err.message, "quota_tag: ", 11) != 0)
      fail_msg("%s: %s", bad[i].text, err.message);
  }
  /* Names: a tag's 128 bytes; a client's 63. */
  memset(big, 'x', 129);
  strcpy(big + 129, "=1");
  assert_int_equal(parse(big, r, &n, &err), FROND_EINVAL);
  assert_int_equal(parse(big + 1, r, &n, &err), 0);
  assert_int_equal(frond__quota_parse("quota_client", big + 1, strlen(big + 1),
                                      FROND__QUOTA_CLIENT_MAX, r,
                                      FROND__QUOTA_RULES_MAX, &n, &err),
                   FROND_EINVAL);
  /* At most cap rules. */
  assert_int_equal(frond__quota_parse("quota_tag", "a=1,b=1,c=1", 11,
                                      FROND__QUOTA_NAME_MAX, r, 2, &n, &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "more than 2 rules"));
}

static void test_match(void **state) {
  static frond__quota_rule r[FROND__QUOTA_RULES_MAX];
  static const struct {
    const char *name, *rule; /* NULL: none */
  } cases[] = {
      {"orders", "orders"},
      {"orders:eu:1", "orders:eu:*"},
      {"orders:eu:", "orders:eu:*"},
      {"orders:eu", "orders:*"},
      {"orders:", "orders:*"},
      {"order", NULL},
      {"ordersx", NULL},
      {"b", "b"},
      {"a", NULL},
      {"c", NULL},
  };
  frond_error err = {0, ""};
  const frond__quota_rule *m;
  size_t n, i;
  (void)state;
  assert_int_equal(parse("orders:*=1,orders=2,orders:eu:*=3,b=4", r, &n, &err),
                   0);
  for (i = 0; i < FROND__ARRAY_SIZE(cases); i++) {
    m = frond__quota_match(r, n, cases[i].name, strlen(cases[i].name));
    if (cases[i].rule == NULL ? m != NULL
                              : m == NULL || strcmp(m->name, cases[i].rule))
      fail_msg("%s: %s", cases[i].name, m ? m->name : "(none)");
  }
  /* * catches the rest; no rule at all, nothing. */
  assert_int_equal(parse("b=4,*=9", r, &n, &err), 0);
  assert_string_equal(frond__quota_match(r, n, "a", 1)->name, "*");
  assert_string_equal(frond__quota_match(r, n, "b", 1)->name, "b");
  assert_null(frond__quota_match(r, 0, "a", 1));
}

/* ---------------------------------------------------------------- tables */

/* A server holding only its configuration and its quotas. */
static frond__server *quota_server(const char *clients, const char *tags,
                                   int64_t buckets) {
  frond__server *srv = calloc(1, sizeof *srv);
  frond_error err = {0, ""};
  frond__config_defaults(&srv->cfg);
  snprintf(srv->cfg.quota_client, sizeof srv->cfg.quota_client, "%s", clients);
  snprintf(srv->cfg.quota_tag, sizeof srv->cfg.quota_tag, "%s", tags);
  srv->cfg.quota_buckets = buckets;
  if (frond__quota_create(srv, &err) != 0)
    fail_msg("%s", err.message);
  return srv;
}

static void quota_server_free(frond__server *srv) {
  frond__quota_free(srv);
  free(srv);
}

static int take(frond__server *srv, const char *client, const char *tag,
                size_t n, frond_error *err) {
  frond__client cl;
  frond__req r = {.op = tag ? FROND__REQ_SEGMENT : FROND__REQ_SNOWFLAKE,
                  .tag = tag,
                  .len = tag ? strlen(tag) : 0,
                  .n = n};
  if (client != NULL) {
    snprintf(cl.name, sizeof cl.name, "%s", client);
    r.client = &cl;
  }
  return frond__quota_take(srv, &r, err);
}

/* The value of a /metrics line that starts with prefix, or -1. */
static long long metric(frond__server *srv, const char *prefix) {
  frond__buf b = {0};
  const char *p;
  long long v = -1;
  frond__quota_metrics(srv, &b);
  assert_int_equal(frond__buf_append(&b, "", 1), 0);
  for (p = b.data; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (strncmp(p, prefix, strlen(prefix)) == 0 && p[strlen(prefix)] == ' ') {
      v = atoll(p + strlen(prefix) + 1);
      break;
    }
  frond__buf_free(&b);
  return v;
}

static void test_none(void **state) {
  frond__server *srv = quota_server("", "", 4096);
  (void)state;
  /* No rule: nothing is built, the request layer's branch skips it. */
  assert_null(srv->quota);
  quota_server_free(srv);
}

/* Waits until the clock of buckets of 1 ID a second has just ticked
** (within its first tenth): a run of takes that begins then sees the
** same tick unless the machine stalls it for most of a second. A tick
** between two takes gives one ID back, which a test of an exact burst
** would count as a fault. */
static void fresh_tick(void) {
  uint64_t ph;
  while ((ph = frond__clock_ns() % S) > S / 10)
    usleep((useconds_t)((S - ph) / 1000 + 1));
}

static void test_clients_and_tags(void **state) {
  /* Slow rules: 1 ID a second, and the takes and their metrics within
  ** one tick (fresh_tick): what is taken does not come back. */
  frond__server *srv =
      quota_server("anonymous=1/10, payments=1/100, batch-*=1/5",
                   "orders=1/50, orders:*=1/3, *=1/1000000", 64);
  frond_error err = {0, ""};
  frond__client cl = {"dashboard"};
  frond__req admin = {.op = FROND__REQ_STORE, .n = 1000, .client = &cl};
  char longtag[300];
  (void)state;
  assert_non_null(srv->quota);
  fresh_tick();
  /* A batch takes its count: 10, then the 11th is refused. */
  assert_int_equal(take(srv, NULL, NULL, 10, &err), 0);
  assert_int_equal(take(srv, NULL, NULL, 1, &err), FROND_EQUOTA_EXCEEDED);
  assert_int_equal(err.code, FROND_EQUOTA_EXCEEDED);
  assert_non_null(strstr(err.message, "client \"anonymous\""));
  assert_non_null(strstr(err.message, "retry in 1 s"));
  assert_int_equal(frond__quota_retry_after(), 1);
  /* Another client is not touched; one without a rule has no limit. */
  assert_int_equal(take(srv, "payments", NULL, 100, &err), 0);
  assert_int_equal(take(srv, "payments", NULL, 1, &err), FROND_EQUOTA_EXCEEDED);
  assert_int_equal(take(srv, "dashboard", NULL, 100000, &err), 0);
  /* A pattern: each name its own bucket. */
  assert_int_equal(take(srv, "batch-1", NULL, 5, &err), 0);
  assert_int_equal(take(srv, "batch-1", NULL, 1, &err), FROND_EQUOTA_EXCEEDED);
  assert_int_equal(take(srv, "batch-2", NULL, 5, &err), 0);
  /* Tags: the exact rule, the pattern per tag, * per tag. */
  assert_int_equal(take(srv, "dashboard", "orders", 50, &err), 0);
  assert_int_equal(take(srv, "dashboard", "orders", 1, &err),
                   FROND_EQUOTA_EXCEEDED);
  assert_non_null(strstr(err.message, "tag \"orders\""));
  assert_int_equal(take(srv, "dashboard", "orders:eu", 3, &err), 0);
  assert_int_equal(take(srv, "dashboard", "orders:us", 3, &err), 0);
  assert_int_equal(take(srv, "dashboard", "orders:us", 1, &err),
                   FROND_EQUOTA_EXCEEDED);
  assert_int_equal(take(srv, "dashboard", "users", 1000, &err), 0);
  /* Above the burst: refused for good, and said so. */
  assert_int_equal(take(srv, "dashboard", "orders:fr", 4, &err),
                   FROND_EQUOTA_EXCEEDED);
  assert_non_null(strstr(err.message, "ask for at most 3 at once"));
  assert_true(frond__quota_retry_after() == UINT64_MAX);
  /* Both or neither: a tag's refusal gives the client's IDs back. */
  assert_int_equal(take(srv, "batch-3", "orders:de", 3, &err), 0);
  assert_int_equal(take(srv, "batch-3", "orders:de", 2, &err),
                   FROND_EQUOTA_EXCEEDED);
  assert_int_equal(take(srv, "batch-3", NULL, 2, &err), 0);
  /* A tag no bucket may have (too long, not UTF-8: TAG_INVALID next)
  ** takes from its rule's shared bucket, and makes none. */
  memset(longtag, 'x', sizeof longtag - 1);
  longtag[sizeof longtag - 1] = '\0';
  assert_int_equal(take(srv, "dashboard", longtag, 1, &err), 0);
  assert_int_equal(take(srv, "dashboard", "bad\377", 1, &err), 0);
  /* orders:eu, :us, :fr, :de and users */
  assert_int_equal(metric(srv, "frond_quota_buckets{kind=\"tag\"}"), 5);
  /* Tag administration issues no ID. */
  assert_int_equal(frond__quota_take(srv, &admin, &err), 0);
  /* The metrics: refusals by name and by rule, tokens left. */
  assert_int_equal(
      metric(srv, "frond_quota_refused_total{client=\"anonymous\"}"), 1);
  assert_int_equal(metric(srv, "frond_quota_tokens{client=\"anonymous\"}"), 0);
  assert_int_equal(metric(srv, "frond_quota_tokens{client=\"payments\"}"), 0);
  assert_int_equal(metric(srv, "frond_quota_refused_total{tag=\"orders\"}"), 1);
  assert_int_equal(metric(srv, "frond_quota_refused_total{tag=\"orders:us\"}"),
                   1);
  assert_int_equal(
      metric(srv,
             "frond_quota_rule_refused_total{kind=\"tag\",rule=\"orders:*\"}"),
      3);
  assert_int_equal(
      metric(
          srv,
          "frond_quota_rule_refused_total{kind=\"client\",rule=\"batch-*\"}"),
      1);
  assert_int_equal(metric(srv, "frond_quota_buckets{kind=\"client\"}"), 3);
  assert_int_equal(metric(srv, "frond_quota_overflow_total{kind=\"tag\"}"), 0);
  quota_server_free(srv);
}

static void test_bounded(void **state) {
  /* 16 slots, buckets that stay in use for the test: names past them
  ** share the rule's one bucket, never get more. In use whatever the
  ** time: each name takes a whole burst of 10^12 at 1 ID a second (a
  ** burst of 1 is full again at the clock's next second, which a loop
  ** that crosses it would see). */
  frond__server *srv = quota_server("", "*=1/1000000000000", 16);
  frond_error err = {0, ""};
  char tag[32];
  int i, admitted = 0;
  (void)state;
  for (i = 0; i < 1000; i++) {
    snprintf(tag, sizeof tag, "hostile-%d", i);
    admitted += take(srv, NULL, tag, 1000000000000, &err) == 0;
  }
  assert_true(metric(srv, "frond_quota_buckets{kind=\"tag\"}") <= 16);
  assert_true(admitted <= 16 + 1);
  assert_true(metric(srv, "frond_quota_overflow_total{kind=\"tag\"}") >=
              1000 - 16);
  /* Every name past the slots was refused by the one shared bucket. */
  assert_true(metric(srv, "frond_quota_rule_refused_total{kind=\"tag\","
                          "rule=\"*\"}") >= 1000 - 17);
  quota_server_free(srv);
  /* Buckets that refill at once are reused: every name is served from a
  ** bucket of its own, in 16 slots. */
  srv = quota_server("", "*=1000000000/1", 16);
  for (i = 0; i < 1000; i++) {
    snprintf(tag, sizeof tag, "name-%d", i);
    assert_int_equal(take(srv, NULL, tag, 1, &err), 0);
  }
  assert_true(metric(srv, "frond_quota_buckets{kind=\"tag\"}") <= 16);
  assert_int_equal(metric(srv, "frond_quota_overflow_total{kind=\"tag\"}"), 0);
  quota_server_free(srv);
}

/* ---------------------------------------------------------------- threads */

#define THREADS 4
#define TRIES 20000

typedef struct racer {
  frond__server *srv;
  int index;
  int admitted;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  frond_error err = {0, ""};
  char tag[16];
  int i;
  for (i = 0; i < TRIES; i++) {
    /* One shared bucket, and names that come and go in a small table. */
    r->admitted += take(r->srv, "shared", NULL, 1, &err) == 0;
    snprintf(tag, sizeof tag, "t%d", (i * 7 + r->index) % 40);
    (void)take(r->srv, NULL, tag, 1, &err);
  }
  return NULL;
}

static void test_threads(void **state) {
  frond__server *srv = quota_server("shared=10/1000", "*=1000/5", 16);
  pthread_t t[THREADS];
  racer r[THREADS];
  uint64_t t0 = frond__clock_ns(), dt;
  int i, admitted = 0;
  (void)state;
  for (i = 0; i < THREADS; i++) {
    r[i] = (racer){srv, i, 0};
    assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
  }
  for (i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    admitted += r[i].admitted;
  }
  dt = frond__clock_ns() - t0;
  /* Exact for the whole server: the burst, and what the rate refilled
  ** meanwhile (one more for the clock's rounding); never more. */
  if ((uint64_t)admitted > 1000 + dt * 10 / S + 1 || admitted < 1000)
    fail_msg("%d admitted in %.3f s", admitted, (double)dt / 1e9);
  assert_true(metric(srv, "frond_quota_buckets{kind=\"tag\"}") <= 16);
  quota_server_free(srv);
}

/* ------------------------------------------------------------------ HTTP */

static int setup(void **state) {
  static const char *const tags[] = {"orders", "users", NULL};
  fixture *f = fixture_open(&frond__http_proto, tags);
  frond_error err = {0, ""};
  snprintf(f->srv.cfg.quota_client, sizeof f->srv.cfg.quota_client, "%s",
           "anonymous=2/100");
  snprintf(f->srv.cfg.quota_tag, sizeof f->srv.cfg.quota_tag, "%s",
           "orders=2/30");
  assert_int_equal(frond__quota_create(&f->srv, &err), 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  frond__quota_free(&f->srv);
  return fixture_teardown(state);
}

/* The first segment ID in an answer's body, or -1. */
static long long first_id(const char *got) {
  const char *p = strstr(got, "\"ids\":[\"");
  return p ? atoll(p + 8) : -1;
}

/* GET path, answered. */
static const char *get(fixture *f, const char *path) {
  char req[512];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n", path);
  return feed(f, req, (size_t)n, NULL);
}

/* The buckets' clock at 2 IDs a second, in IDs: it ticks every 0.5 s. */
static uint64_t tick(void) {
  return frond__quota_clock(frond__clock_ns(), 2);
}

/*
** GET path on an emptied bucket, until it is refused. The bucket was
** emptied by a take at tick *w or later: an ID admitted now is right only
** if the clock ticked since (a loaded machine may be slow between two
** requests), and it must follow *last. Bounded: each admission needs a
** tick of its own.
*/
static const char *refused(fixture *f, const char *path, uint64_t *w,
                           long long *last) {
  const char *got = NULL;
  int i;
  for (i = 0; i < 10; i++) {
    uint64_t before = tick();
    got = get(f, path);
    if (strstr(got, "HTTP/1.1 200 ") == NULL)
      return got;
    if (tick() <= *w)
      fail_msg("admitted with no refill since the bucket emptied: %s", got);
    {
      /* The first ID: /v1's JSON, or Leaf's body, the number alone. */
      const char *body = strstr(got, "\r\n\r\n");
      long long id = first_id(got) >= 0 ? first_id(got)
                     : body != NULL     ? atoll(body + 4)
                                        : -1;
      assert_int_equal(id, *last + 1);
      *last = id;
    }
    *w = before;
  }
  fail_msg("never refused: %s", got);
  return got;
}

static void test_http(void **state) {
  fixture *f = *state;
  const char *got;
  long long last, next = -1;
  uint64_t w = tick();
  int i;
  /* A burst is allowed: 30 of the tag's, one batch. */
  got = get(f, "/v1/segment/orders?count=30");
  assert_non_null(strstr(got, "HTTP/1.1 200 "));
  last = first_id(got) + 29;
  /* Over: 429, Retry-After, the code; nothing issued. */
  got = refused(f, "/v1/segment/orders", &w, &last);
  assert_non_null(strstr(got, "HTTP/1.1 429 Too Many Requests\r\n"));
  assert_non_null(strstr(got, "\r\nRetry-After: 1\r\n"));
  assert_non_null(strstr(got, "\"code\":\"QUOTA_EXCEEDED\""));
  assert_non_null(strstr(got, "tag \\\"orders\\\""));
  /* Leaf's path: its body, with 429 and Retry-After. */
  got = refused(f, "/api/segment/get/orders", &w, &last);
  assert_non_null(strstr(got, "HTTP/1.1 429 "));
  assert_non_null(strstr(got, "Frond-Error: QUOTA_EXCEEDED\r\nRetry-After: "));
  assert_non_null(strstr(got, "Result{id=-3, status=EXCEPTION}"));
  /* A range lease counts its IDs: 31 is above the burst, no wait helps. */
  got = get(f, "/v1/segment/orders/range?count=31");
  assert_non_null(strstr(got, "HTTP/1.1 429 "));
  assert_null(strstr(got, "Retry-After"));
  assert_non_null(strstr(got, "ask for at most 30 at once"));
  /* Another tag is not touched (the client's own 100 allow it). */
  got = get(f, "/v1/segment/users?count=50");
  assert_non_null(strstr(got, "HTTP/1.1 200 "));
  /* Until the tag's bucket refills: every refusal issued nothing, so the
  ** next ID follows the last one given. Bounded in time. */
  for (i = 0; i < 400 && next < 0; i++) {
    got = get(f, "/v1/segment/orders");
    if (strstr(got, "HTTP/1.1 200 ") != NULL)
      next = first_id(got);
    else {
      assert_non_null(strstr(got, "HTTP/1.1 429 "));
      nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
  }
  assert_int_equal(next, last + 1);
  /* Snowflake IDs count against the client alone: 100 minus the 80
  ** taken (and what refilled since) leave room for 19, not for 200. */
  got = get(f, "/v1/snowflake?count=19");
  assert_non_null(strstr(got, "HTTP/1.1 200 "));
  got = get(f, "/v1/snowflake?count=100");
  assert_non_null(strstr(got, "HTTP/1.1 429 "));
  assert_non_null(strstr(got, "client \\\"anonymous\\\""));
  /* /metrics shows it. */
  got = get(f, "/metrics");
  assert_non_null(strstr(got, "frond_quota_refused_total{tag=\"orders\"} "));
  assert_non_null(
      strstr(got, "frond_quota_refused_total{client=\"anonymous\"} 1\n"));
  assert_non_null(strstr(got, "HTTP/1.1 200 "));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bucket_refill),
      cmocka_unit_test(test_bucket_above_burst),
      cmocka_unit_test(test_bucket_bounds),
      cmocka_unit_test(test_bucket_clock_back),
      cmocka_unit_test(test_bucket_give),
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_match),
      cmocka_unit_test(test_none),
      cmocka_unit_test(test_clients_and_tags),
      cmocka_unit_test(test_bounded),
      cmocka_unit_test(test_threads),
      cmocka_unit_test_setup_teardown(test_http, setup, teardown),
  };
  return frond_run_tests(tests, NULL, NULL);
}
