/*
** test_coord.c -- coordinators: URIs, the node cache file, start checks,
** the SQLite lease and the watchdog that blocks a generator.
*/
#include "testutil.h"

#include "coord/coord.h"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

static frond_coord *open_ok(const char *uri, frond_coord_options *o) {
  frond_coord *c = NULL;
  frond_error err = {0, ""};
  if (frond__coord_open(&c, uri, o, &err) != 0)
    fail_msg("open '%s': %s", uri, err.message);
  return c;
}

static void open_bad(const char *uri, int code, const char *expect) {
  frond_coord *c = NULL;
  frond_error err = {0, ""};
  int rc = frond__coord_open(&c, uri, NULL, &err);
  if (rc != code)
    fail_msg("'%s' gave %s, want %s (%s)", uri, frond_err_name(rc),
             frond_err_name(code), err.message);
  assert_null(c);
  if (!strstr(err.message, expect))
    fail_msg("'%s': message '%s' lacks '%s'", uri, err.message, expect);
}

static void test_uri_parsing(void **state) {
  frond_coord *c;
  frond_coord_claim cl;
  (void)state;
  open_bad("nope:1", FROND_EINVAL, "unknown coordinator");
  open_bad("static:", FROND_EINVAL, "static:N");
  open_bad("static:-1", FROND_EINVAL, "static:N");
  open_bad("static:x", FROND_EINVAL, "static:N");
  open_bad("static:1?bogus=1", FROND_EINVAL, "unknown coordinator option");
  open_bad("static:1?report_ms=1", FROND_EINVAL, "outside");
  open_bad("static:1?report_ms", FROND_EINVAL, "no value");
  open_bad("static:1?report_ms=x", FROND_EINVAL, "not an integer");
  open_bad("zk://", FROND_EINVAL, "zk://host:port");
  open_bad("zk://127.0.0.1:1", FROND_EINVAL, "zk://host:port");
  open_bad("zk://127.0.0.1:1/", FROND_EINVAL, "cluster name");
  open_bad("zk://127.0.0.1:1/a/b", FROND_EINVAL, "cluster name");
  open_bad("lease+mysql://x", FROND_EINVAL, "lease+sqlite");
  open_bad("lease+sqlite:", FROND_EINVAL, "file path");
  open_bad("lease+sqlite:///tmp/x.db?sslmode=1", FROND_EINVAL,
           "unknown lease option");

  c = open_ok(NULL, NULL); /* the default: static:0 */
  assert_string_equal(c->uri, "static:0");
  assert_int_equal(frond__coord_acquire(c, &cl, NULL), 0);
  assert_int_equal(cl.node, 0);
  assert_int_equal(cl.high_water_ms, 0);
  frond__coord_close(c, NULL);

  c = open_ok("static:7?report_ms=250&max_wait_ms=3", NULL);
  assert_int_equal(c->o.report_ms, 250);
  assert_int_equal(c->o.max_wait_ms, 3);
  assert_int_equal(frond__coord_acquire(c, &cl, NULL), 0);
  assert_int_equal(cl.node, 7);
  frond__coord_close(c, NULL);
}

static void test_owner(void **state) {
  frond_coord_options o;
  frond_coord *c;
  (void)state;
  frond__coord_options_init(&o);
  o.ip = "10.1.2.3";
  o.port = 9090;
  c = open_ok("static:0", &o);
  assert_string_equal(c->owner, "10.1.2.3:9090");
  frond__coord_close(c, NULL);
  o.ip = NULL;
  c = open_ok("static:0", &o);
  assert_non_null(strstr(c->owner, ":9090")); /* some local address */
  frond__coord_close(c, NULL);
}

static void test_node_range(void **state) {
  frond_coord_options o;
  frond_coord_claim cl;
  frond_coord *c;
  frond_error err = {0, ""};
  (void)state;
  frond__coord_options_init(&o);
  c = open_ok("static:1024", &o); /* default 10 node bits: 0..1023 */
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ENODE_RANGE);
  assert_non_null(strstr(err.message, "1023"));
  frond__coord_close(c, NULL);
  o.node_bits = 2;
  c = open_ok("static:4", &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ENODE_RANGE);
  frond__coord_close(c, NULL);
  c = open_ok("static:3", &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), 0);
  frond__coord_close(c, NULL);
}

static void test_cache_file(void **state) {
  char *dir = tmpdir_make(), path[600];
  frond_coord_cache w, r;
  frond_error err = {0, ""};
  int missing = 0;
  FILE *f;
  (void)state;
  snprintf(path, sizeof(path), "%s/node.cache", dir);
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err),
                   FROND_EIO);
  assert_int_equal(missing, 1);

  memset(&w, 0, sizeof(w));
  snprintf(w.uri, sizeof(w.uri), "zk://127.0.0.1:2181/frond");
  snprintf(w.owner, sizeof(w.owner), "10.0.0.1:8080");
  w.node = 17;
  w.high_water_ms = INT64_C(1700000000123);
  w.reported_ms = INT64_C(1700000000000);
  assert_int_equal(frond__coord_cache_write(path, &w, &err), 0);
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err), 0);
  assert_string_equal(r.uri, w.uri);
  assert_string_equal(r.owner, w.owner);
  assert_int_equal(r.node, 17);
  assert_int_equal(r.high_water_ms, w.high_water_ms);
  assert_int_equal(r.reported_ms, w.reported_ms);
  {
    /* Leaf's key is there too, and no temp file is left behind. */
    char buf[1024], cmd[700];
    size_t n;
    f = fopen(path, "r");
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    assert_non_null(strstr(buf, "workerID=17\n"));
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -q tmp", dir);
    assert_int_not_equal(system(cmd), 0);
  }

  /* Torn: cut in the middle. */
  assert_int_equal(truncate(path, 40), 0);
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err),
                   FROND_EHIGHWATER_CORRUPT);
  assert_int_equal(missing, 0);

  /* Edited: a changed digit fails the checksum. */
  assert_int_equal(frond__coord_cache_write(path, &w, &err), 0);
  {
    char buf[1024], *p;
    size_t n;
    f = fopen(path, "r");
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    p = strstr(buf, "workerID=17");
    p[9] = '2';
    f = fopen(path, "w");
    fwrite(buf, 1, n, f);
    fclose(f);
  }
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err),
                   FROND_EHIGHWATER_CORRUPT);

  /* Garbage. */
  f = fopen(path, "w");
  fputs("workerID=3\n", f);
  fclose(f);
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err),
                   FROND_EHIGHWATER_CORRUPT);
  tmpdir_remove(dir);
}

/* Processes sharing a directory rewrite files there at the same time:
** every replacement succeeds, the file always reads back whole, and no
** temporary file is left behind. */
static void test_cache_concurrent_writers(void **state) {
  char *dir = tmpdir_make(), path[600];
  pid_t kids[3];
  frond_coord_cache r;
  frond_error err = {0, ""};
  int missing = 0, failures = 0;
  (void)state;
  snprintf(path, sizeof(path), "%s/node.cache", dir);
  for (int k = 0; k < 3; k++) {
    if ((kids[k] = fork()) == 0) {
      frond_coord_cache w;
      int bad = 0;
      memset(&w, 0, sizeof(w));
      snprintf(w.uri, sizeof(w.uri), "zk://127.0.0.1:2181/frond");
      snprintf(w.owner, sizeof(w.owner), "10.0.0.%d:8080", k);
      w.node = (uint64_t)k;
      for (int i = 0; i < 200; i++) {
        w.high_water_ms = i;
        bad += frond__coord_cache_write(path, &w, NULL) != 0;
      }
      _exit(bad ? 1 : 0);
    }
    assert_true(kids[k] > 0);
  }
  for (int k = 0; k < 3; k++) {
    int st = 0;
    assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
    failures += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  assert_int_equal(failures, 0);
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err), 0);
  assert_int_equal(r.high_water_ms, 199);
  {
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -q tmp", dir);
    assert_int_not_equal(system(cmd), 0);
  }
  tmpdir_remove(dir);
}

/* ZooKeeper unreachable: the cache serves a restart, for the same
** coordinator and ip:port only, with the clock check. */
static void test_zk_cache_fallback(void **state) {
  char *dir = tmpdir_make(), cache[700];
  const char *uri = "zk://127.0.0.1:1/t?connect_ms=100&retention_ms=10000";
  frond_coord_options o;
  frond_coord_cache cc;
  frond_coord_claim cl;
  frond_coord *c;
  frond_error err = {0, ""};
  int64_t now = frond_clock_realtime(NULL);
  (void)state;
  snprintf(cache, sizeof(cache), "%s/node.cache", dir);
  frond__coord_options_init(&o);
  o.ip = "10.0.0.1";
  o.port = 8080;
  o.cache_path = cache;

  /* No cache: unreachable is an error at acquire. */
  c = open_ok(uri, &o);
  assert_int_equal(c->validity_ms, 5000); /* retention / 2 */
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ECOORD);
  frond__coord_close(c, NULL);

  memset(&cc, 0, sizeof(cc));
  snprintf(cc.uri, sizeof(cc.uri), "zk://127.0.0.1:1/t");
  snprintf(cc.owner, sizeof(cc.owner), "10.0.0.1:8080");
  cc.node = 9;
  cc.high_water_ms = now - 1000;
  cc.reported_ms = now - 6000; /* beyond retention / 2: maybe not ours */
  assert_int_equal(frond__coord_cache_write(cache, &cc, &err), 0);
  c = open_ok(uri, &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ECOORD);
  assert_non_null(strstr(err.message, "last confirmed"));
  frond__coord_close(c, NULL);

  cc.reported_ms = now - 4000; /* 1 s of the 5 s left */
  assert_int_equal(frond__coord_cache_write(cache, &cc, &err), 0);
  c = open_ok(uri, &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), 0);
  assert_int_equal(cl.node, 9);
  assert_int_equal(cl.high_water_ms, now - 1000);
  assert_int_equal(cl.from_cache, 1);
  assert_int_equal(frond__coord_state(c), 0);
  frond__sleep_ns(1200 * INT64_C(1000000));
  assert_int_equal(frond__coord_state(c), FROND_ENODE_ID_LOST);
  frond__coord_close(c, NULL);
  {
    /* The restart kept the time of the last confirmation. */
    frond_coord_cache back;
    int missing;
    assert_int_equal(frond__coord_cache_read(cache, &back, &missing, &err), 0);
    assert_int_equal(back.reported_ms, now - 4000);
  }

  /* Without retention a cached claim does not age (as Leaf). */
  c = open_ok("zk://127.0.0.1:1/t?connect_ms=100", &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), 0);
  assert_int_equal(cl.from_cache, 1);
  frond__coord_close(c, NULL);

  /* Another ip:port must not use it. */
  o.port = 8081;
  c = open_ok(uri, &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ECOORD);
  frond__coord_close(c, NULL);
  o.port = 8080;

  /* Another cluster neither. */
  c = open_ok("zk://127.0.0.1:1/other?connect_ms=100", &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ECOORD);
  frond__coord_close(c, NULL);

  /* The clock check applies to the cached time. */
  cc.high_water_ms = now + 3600000;
  cc.reported_ms = now;
  assert_int_equal(frond__coord_cache_write(cache, &cc, &err), 0);
  c = open_ok(uri, &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ECLOCK_BEHIND);
  frond__coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* ---- SQLite lease --------------------------------------------------- */

static char lease_uri[700], lease_db[600];

static frond_coord *lease_open(int port, const char *extra) {
  frond_coord_options o;
  char uri[900];
  frond__coord_options_init(&o);
  o.ip = "127.0.0.1";
  o.port = port;
  snprintf(uri, sizeof(uri), "%s%s", lease_uri, extra ? extra : "");
  return open_ok(uri, &o);
}

static void lease_sql(const char *sql) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(lease_db, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
    fail_msg("%s: %s", sql, sqlite3_errmsg(db));
  sqlite3_close(db);
}

static void test_lease_sqlite(void **state) {
  char *dir = tmpdir_make();
  frond_coord *a, *b, *c, *d;
  frond_coord_claim ca, cb, cc;
  frond_coord_entry *e;
  frond_error err = {0, ""};
  size_t n;
  (void)state;
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  snprintf(lease_uri, sizeof(lease_uri),
           "lease+sqlite://%s?lease_ms=60000&nodes=2", lease_db);

  a = lease_open(1, NULL);
  b = lease_open(2, NULL);
  c = lease_open(3, NULL);
  assert_int_equal(frond__coord_acquire(a, &ca, &err), 0);
  assert_int_equal(frond__coord_acquire(b, &cb, &err), 0);
  assert_int_equal(ca.node, 0);
  assert_int_equal(cb.node, 1);
  /* Both rows leased: the third is refused, clearly. */
  assert_int_equal(frond__coord_acquire(c, &cc, &err), FROND_ENODE_RANGE);
  assert_non_null(strstr(err.message, "all 2 node IDs"));

  /* Reports store the high-water time and never lower it. */
  assert_int_equal(frond__coord_report(a, INT64_C(1000), &err), 0);
  assert_int_equal(frond__coord_report(a, INT64_C(500), &err), 0);
  assert_int_equal(frond__coord_list(a, &e, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_int_equal(e[0].node, 0);
  assert_string_equal(e[0].owner, "127.0.0.1:1");
  assert_int_equal(e[0].high_water_ms, 1000);
  assert_int_equal(e[0].live, 1);
  assert_true(e[0].expires_ms > 0);
  free(e);

  /* A released row goes to the next node, with its stored time. */
  assert_int_equal(frond__coord_close(a, &err), 0);
  assert_int_equal(frond__coord_acquire(c, &cc, &err), 0);
  assert_int_equal(cc.node, 0);
  assert_int_equal(cc.high_water_ms, 1000);

  /* b's lease runs out and d takes the row: b's renewal says LOST. */
  lease_sql("UPDATE frond_node SET lease_expires = 1 WHERE node_id = 1");
  d = lease_open(4, NULL);
  assert_int_equal(frond__coord_acquire(d, &cb, &err), 0);
  assert_int_equal(cb.node, 1);
  assert_int_equal(frond__coord_report(b, 2000, &err), FROND_ENODE_ID_LOST);
  assert_int_equal(frond__coord_state(b), FROND_ENODE_ID_LOST);
  /* ...and it cannot take it back while d holds it. */
  assert_int_equal(frond__coord_report(b, 2000, &err), FROND_ENODE_ID_LOST);
  assert_int_equal(frond__coord_report(d, 3000, &err), 0);
  assert_int_equal(frond__coord_state(d), 0);
  /* Closing the loser must not release the winner's row. */
  frond__coord_close(b, NULL);
  assert_int_equal(frond__coord_report(d, 3000, &err), 0);
  frond__coord_close(c, NULL);
  frond__coord_close(d, NULL);
  tmpdir_remove(dir);
}

static void test_clock_check(void **state) {
  char *dir = tmpdir_make(), cache[700];
  frond_coord_options o;
  frond_coord *c;
  frond_coord_claim cl;
  frond_coord_cache cc;
  frond_error err = {0, ""};
  int64_t now = frond_clock_realtime(NULL);
  (void)state;
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  snprintf(lease_uri, sizeof(lease_uri), "lease+sqlite://%s", lease_db);
  c = lease_open(1, NULL);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), 0);
  frond__coord_close(c, NULL);

  /* Stored time a minute ahead of the clock: refuse, naming both. */
  lease_sql("UPDATE frond_node SET high_water_ms = "
            "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) "
            "+ 60000");
  c = lease_open(1, NULL);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ECLOCK_BEHIND);
  assert_non_null(strstr(err.message, "ahead of the clock"));
  frond__coord_close(c, NULL);

  /* Within max_wait_ms: fine (the generator waits). */
  lease_sql("UPDATE frond_node SET high_water_ms = 0, lease_expires = 0");
  c = lease_open(1, "?max_wait_ms=100000");
  lease_sql("UPDATE frond_node SET high_water_ms = "
            "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) "
            "+ 60000");
  assert_int_equal(frond__coord_acquire(c, &cl, &err), 0);
  frond__coord_close(c, NULL);

  /* The cache counts too, for the same coordinator and owner. */
  lease_sql("UPDATE frond_node SET high_water_ms = 0, lease_expires = 0");
  snprintf(cache, sizeof(cache), "%s/node.cache", dir);
  memset(&cc, 0, sizeof(cc));
  snprintf(cc.uri, sizeof(cc.uri), "%s", lease_uri);
  snprintf(cc.owner, sizeof(cc.owner), "127.0.0.1:1");
  cc.node = 0;
  cc.high_water_ms = now + 3600000;
  assert_int_equal(frond__coord_cache_write(cache, &cc, &err), 0);
  frond__coord_options_init(&o);
  o.ip = "127.0.0.1";
  o.port = 1;
  o.cache_path = cache;
  c = open_ok(lease_uri, &o);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), FROND_ECLOCK_BEHIND);
  frond__coord_close(c, NULL);
  /* ...and the refused start released the row again. */
  c = lease_open(2, NULL);
  assert_int_equal(frond__coord_acquire(c, &cl, &err), 0);
  assert_int_equal(cl.node, 0);
  frond__coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* ---- watchdog ------------------------------------------------------- */

typedef struct {
  _Atomic int64_t hw;
  atomic_int blocked;
  atomic_int calls;
} fake_gen;

static int64_t fake_hw(void *ctx) {
  return atomic_load(&((fake_gen *)ctx)->hw);
}

static void fake_block(void *ctx, int code) {
  fake_gen *g = ctx;
  atomic_store(&g->blocked, code);
  atomic_fetch_add(&g->calls, 1);
}

static int wait_blocked(fake_gen *g, int code, int ms) {
  for (int i = 0; i < ms / 5; i++) {
    if (atomic_load(&g->blocked) == code)
      return 1;
    frond__sleep_ns(5 * 1000000);
  }
  return 0;
}

static void test_watchdog_lease(void **state) {
  char *dir = tmpdir_make();
  frond_coord *a, *b;
  frond_coord_claim cl;
  frond_error err = {0, ""};
  fake_gen g;
  (void)state;
  atomic_init(&g.hw, 0);
  atomic_init(&g.blocked, 0);
  atomic_init(&g.calls, 0);
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  snprintf(lease_uri, sizeof(lease_uri),
           "lease+sqlite://%s?lease_ms=600&nodes=1", lease_db);
  a = lease_open(1, NULL);
  assert_int_equal(frond__coord_acquire(a, &cl, &err), 0);
  atomic_store(&g.hw, frond_clock_realtime(NULL));
  assert_int_equal(frond__coord_attach(a, fake_hw, fake_block, &g, &err), 0);
  /* Renewed every 180 ms: still held well after one lease length. */
  frond__sleep_ns(900 * 1000000LL);
  assert_int_equal(atomic_load(&g.blocked), 0);
  assert_int_equal(atomic_load(&g.calls), 0);

  /* Another node takes the row over: a is blocked at its next renewal. */
  lease_sql("UPDATE frond_node SET token = 'someone else'");
  assert_true(wait_blocked(&g, FROND_ENODE_ID_LOST, 2000));

  /* The other node goes away without releasing; once its lease expired,
  ** a takes its row back and is unblocked only above the stored time. */
  lease_sql("UPDATE frond_node SET lease_expires = 0");
  assert_true(wait_blocked(&g, 0, 2000));
  b = lease_open(2, NULL);
  assert_int_equal(frond__coord_acquire(b, &cl, &err), FROND_ENODE_RANGE);
  frond__coord_close(b, NULL);
  assert_int_equal(frond__coord_close(a, &err), 0);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uri_parsing),
      cmocka_unit_test(test_owner),
      cmocka_unit_test(test_node_range),
      cmocka_unit_test(test_cache_file),
      cmocka_unit_test(test_cache_concurrent_writers),
      cmocka_unit_test(test_zk_cache_fallback),
      cmocka_unit_test(test_lease_sqlite),
      cmocka_unit_test(test_clock_check),
      cmocka_unit_test(test_watchdog_lease),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
