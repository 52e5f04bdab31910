/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_coord.c -- coordinators: URIs, identity, the node cache file, the
** SQLite lease, the start checks (range, clock, layout) and the layout
** floor. The fence with a fake driver is test_coord_fence.c.
*/
#include "coord_util.h"

#include "coord/coord_lease.h"

#include <pthread.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_uri_parsing(void **state) {
  frond_coord *c;
  frond_gen *g;
  frond_coord_stats st;
  (void)state;
  open_bad("nope:1", NULL, FROND_EINVAL, "unknown coordinator");
  open_bad("static:", NULL, FROND_EINVAL, "static:N");
  open_bad("static:-1", NULL, FROND_EINVAL, "static:N");
  open_bad("static:x", NULL, FROND_EINVAL, "static:N");
  open_bad("static:1?bogus=1", NULL, FROND_EINVAL,
           "unknown coordinator option");
  open_bad("static:1?report_ms=1", NULL, FROND_EINVAL, "outside");
  open_bad("static:1?window_ms=1", NULL, FROND_EINVAL, "outside");
  open_bad("static:1?report_ms", NULL, FROND_EINVAL, "no value");
  open_bad("static:1?report_ms=x", NULL, FROND_EINVAL, "not an integer");
  open_bad("zk://", NULL, FROND_EINVAL, "zk://host:port");
  open_bad("zk://127.0.0.1:1", NULL, FROND_EINVAL, "zk://host:port");
  open_bad("zk://127.0.0.1:1/", NULL, FROND_EINVAL, "cluster name");
  open_bad("zk://127.0.0.1:1/a/b", NULL, FROND_EINVAL, "cluster name");
  open_bad("lease+mysql://x", NULL, FROND_EINVAL, "no database");
  open_bad("lease+oracle://x/y", NULL, FROND_EINVAL, "unsupported database");
  open_bad("lease+sqlite:", NULL, FROND_EINVAL, "no file name");
  open_bad("lease+sqlite:///tmp/x.db?sslmode=1", NULL, FROND_EINVAL,
           "unknown lease option");

  c = open_ok(NULL, NULL); /* the default: static:0 */
  assert_string_equal(c->uri, "static:0");
  assert_int_equal(create(c, "frond", NULL, &g, NULL), 0);
  assert_int_equal(frond_gen_node(g), 0);
  frond_coord_stats_get(c, &st);
  assert_int_equal(st.node, 0);
  assert_true(st.fence_ms == INT64_MAX); /* static: no fence */
  assert_int_equal(frond_coord_state(c), 0);
  assert_int_equal(frond_coord_close(c, NULL), 0);

  c = open_ok("static:7?report_ms=250&max_wait_ms=3&window_ms=500&"
              "max_clock_offset_ms=0",
              NULL);
  assert_int_equal(c->t.report_ms, 250);
  assert_int_equal(c->t.window_ms, 500);
  assert_int_equal(c->t.max_clock_offset_ms, 0);
  assert_int_equal(create(c, "frond", NULL, &g, NULL), 0);
  assert_int_equal(frond_gen_node(g), 7);
  frond_coord_close(c, NULL);
}

static void test_advertise(void **state) {
  frond_coord_options o;
  frond_coord *c;
  static const char *bad[] = {"10.0.0.1",     "10.0.0.1:0", "10.0.0.1:65536",
                              ":8080",        "a b:80",     "host/x:80",
                              "[::1]",        "::1:8080",   "[]:80",
                              "10.0.0.1:80x", "h:-1"};
  (void)state;
  frond_coord_options_init(&o);
  o.advertise = "10.1.2.3:9090";
  c = open_ok("static:0", &o);
  assert_string_equal(c->owner, "10.1.2.3:9090");
  frond_coord_close(c, NULL);
  o.advertise = "[fd00::7]:8080";
  c = open_ok("static:0", &o);
  assert_string_equal(c->owner, "[fd00::7]:8080");
  frond_coord_close(c, NULL);
  o.advertise = "node-7.svc.local:80";
  c = open_ok("static:0", &o);
  frond_coord_close(c, NULL);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    o.advertise = bad[i];
    open_bad("static:0", &o, FROND_EINVAL, "advertise");
  }
  o.advertise = NULL;
  o.port = 9090;
  c = open_ok("static:0", &o);
  assert_non_null(strstr(c->owner, ":9090")); /* some local address */
  frond_coord_close(c, NULL);
}

static void test_node_range(void **state) {
  frond_coord *c;
  frond_gen *g;
  frond_error err = {0, ""};
  (void)state;
  c = open_ok("static:1024", NULL); /* default 10 node bits: 0..1023 */
  assert_int_equal(create(c, "frond", NULL, &g, &err), FROND_ENODE_RANGE);
  assert_non_null(strstr(err.message, "1023"));
  assert_null(g);
  frond_coord_close(c, NULL);
  c = open_ok("static:4", NULL);
  assert_int_equal(create(c, "time=41,node=2,seq=20", NULL, &g, &err),
                   FROND_ENODE_RANGE);
  frond_coord_close(c, NULL);
  c = open_ok("static:3", NULL);
  assert_int_equal(create(c, "time=41,node=2,seq=20", NULL, &g, &err), 0);
  frond_coord_close(c, NULL);
}

/* ---- the cache file ------------------------------------------------- */

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
  w.fence_ms = INT64_C(1700000000123);
  w.reported_ms = INT64_C(1700000000000);
  assert_int_equal(frond__coord_cache_write(path, &w, &err), 0);
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err), 0);
  assert_string_equal(r.uri, w.uri);
  assert_string_equal(r.owner, w.owner);
  assert_int_equal(r.node, 17);
  assert_int_equal(r.fence_ms, w.fence_ms);
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
/* The scope a layout record or a cache file names, and what a cache file
** written before scopes reads as. */
static void test_scope_record(void **state) {
  char *dir = tmpdir_make(), path[600];
  frond_coord_cache w, r;
  frond_error err = {0, ""};
  int64_t dc, lo, hi;
  int missing = 0;
  (void)state;
  assert_int_equal(frond__coord_scope_parse("all", &dc, &lo, &hi), 0);
  assert_true(dc == -1 && lo == -1 && hi == -1);
  assert_int_equal(frond__coord_scope_parse("datacenter=3", &dc, &lo, &hi), 0);
  assert_true(dc == 3 && lo == -1);
  assert_int_equal(frond__coord_scope_parse("nodes=4-7", &dc, &lo, &hi), 0);
  assert_true(dc == -1 && lo == 4 && hi == 7);
  assert_int_equal(frond__coord_scope_parse("nodes=7-4", &dc, &lo, &hi), -1);
  assert_int_equal(frond__coord_scope_parse("datacenter=-1", &dc, &lo, &hi),
                   -1);
  assert_int_equal(frond__coord_scope_parse("datacenter= 3", &dc, &lo, &hi),
                   -1);
  assert_int_equal(frond__coord_scope_parse("datacenter=3x", &dc, &lo, &hi),
                   -1);
  assert_int_equal(frond__coord_scope_parse("", &dc, &lo, &hi), -1);

  snprintf(path, sizeof(path), "%s/node.cache", dir);
  memset(&w, 0, sizeof(w));
  snprintf(w.uri, sizeof(w.uri), "zk://127.0.0.1:2181/frond");
  snprintf(w.owner, sizeof(w.owner), "10.0.0.1:8080");
  w.node = 4;
  assert_int_equal(frond__coord_cache_write(path, &w, &err), 0);
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err), 0);
  assert_string_equal(r.scope, "all"); /* written before scopes */
  snprintf(w.scope, sizeof(w.scope), "datacenter=1");
  assert_int_equal(frond__coord_cache_write(path, &w, &err), 0);
  assert_int_equal(frond__coord_cache_read(path, &r, &missing, &err), 0);
  assert_string_equal(r.scope, "datacenter=1");
  unlink(path);
  tmpdir_remove(dir);
}

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
        w.fence_ms = i;
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
  assert_int_equal(r.fence_ms, 199);
  {
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -q tmp", dir);
    assert_int_not_equal(system(cmd), 0);
  }
  tmpdir_remove(dir);
}

/* One cache file per coordinator and identity; safe characters only; no
** password in the name or the file. */
static void test_cache_name(void **state) {
  frond_coord_options o;
  frond_coord *a, *b, *c;
  char na[1300], nb[1300], nc[1300], u[256];
  (void)state;
  frond_coord_options_init(&o);
  o.cache_dir = "/var/lib/frond";
  o.advertise = "[fd00::1]:8080";
  a = open_ok("static:1?report_ms=100", &o);
  o.advertise = "10.0.0.2:8080";
  b = open_ok("static:1", &o);
  c = open_ok("static:2", &o);
  assert_int_equal(frond__coord_cache_name(a, na, sizeof(na)), 0);
  assert_int_equal(frond__coord_cache_name(b, nb, sizeof(nb)), 0);
  assert_int_equal(frond__coord_cache_name(c, nc, sizeof(nc)), 0);
  assert_non_null(strstr(na, "/var/lib/frond/frond-node-_fd00__1__8080-"));
  assert_non_null(strstr(nb, "/var/lib/frond/frond-node-10.0.0.2_8080-"));
  assert_string_not_equal(na, nb);
  assert_string_not_equal(nb, nc);
  for (const char *p = strrchr(na, '/') + 1; *p; p++)
    assert_non_null(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
                           "WXYZ0123456789._-",
                           *p));
  frond_coord_close(a, NULL);
  frond_coord_close(b, NULL);
  frond_coord_close(c, NULL);
  frond__coord_cache_uri("lease+postgresql://frond:secret@db:5432/x?a=1", u,
                         sizeof(u));
  assert_string_equal(u, "lease+postgresql://frond@db:5432/x");
  frond__coord_cache_uri("zk://h1:2181,h2:2181/c?session_ms=1", u, sizeof(u));
  assert_string_equal(u, "zk://h1:2181,h2:2181/c");
}

/* ---- SQLite lease --------------------------------------------------- */

static char lease_uri[700], lease_db[600];

static frond_coord *lease_open(int port, const char *extra) {
  frond_coord_options o;
  char uri[900], who[64];
  frond_coord_options_init(&o);
  snprintf(who, sizeof(who), "127.0.0.1:%d", port);
  o.advertise = who;
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

static int64_t lease_fence_of(int node) {
  sqlite3 *db;
  sqlite3_stmt *st;
  int64_t v = -1;
  assert_int_equal(sqlite3_open(lease_db, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT high_water_ms FROM frond_node "
                                      "WHERE node_id = ?",
                                      -1, &st, NULL),
                   SQLITE_OK);
  sqlite3_bind_int(st, 1, node);
  if (sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

static void test_lease_sqlite(void **state) {
  char *dir = tmpdir_make();
  frond_coord *a, *b, *c, *d;
  frond_gen *ga, *gb, *gc, *gd;
  frond_coord_entry *e;
  frond_coord_stats st;
  frond_error err = {0, ""};
  int64_t id = 0, last_a, now = frond_clock_realtime(NULL);
  size_t n;
  (void)state;
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  snprintf(lease_uri, sizeof(lease_uri),
           "lease+sqlite://%s?lease_ms=60000&nodes=2", lease_db);

  a = lease_open(1, NULL);
  b = lease_open(2, NULL);
  c = lease_open(3, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), 0);
  assert_int_equal(create(b, "frond", NULL, &gb, &err), 0);
  assert_int_equal(frond_gen_node(ga), 0);
  assert_int_equal(frond_gen_node(gb), 1);
  /* Both rows leased: the third is refused, clearly. */
  assert_int_equal(create(c, "frond", NULL, &gc, &err), FROND_ENODE_RANGE);
  assert_non_null(strstr(err.message, "all 2 node IDs"));

  /* The row holds the fence: ahead of the clock by about max_ahead +
  ** window, before anything was issued. */
  frond_coord_stats_get(a, &st);
  assert_int_equal(lease_fence_of(0), st.fence_ms);
  assert_true(st.fence_ms >= now + 1000 + FROND_COORD_DEFAULT_WINDOW_MS);
  assert_int_equal(frond_coord_list(a, &e, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_int_equal(e[0].node, 0);
  assert_string_equal(e[0].owner, "127.0.0.1:1");
  assert_int_equal(e[0].fence_ms, st.fence_ms);
  assert_int_equal(e[0].live, 1);
  assert_true(e[0].expires_ms > 0);
  frond_free(e);

  /* A clean stop stores the exact high water; the next holder of the row
  ** starts above it without waiting. */
  assert_int_equal(frond_gen_next(ga, &id, NULL), 0);
  last_a = id;
  assert_int_equal(frond_coord_close(a, &err), 0);
  assert_true(lease_fence_of(0) >= id_ms("frond", last_a));
  assert_true(lease_fence_of(0) <= frond_clock_realtime(NULL));
  assert_int_equal(create(c, "frond", NULL, &gc, &err), 0);
  assert_int_equal(frond_gen_node(gc), 0);
  assert_int_equal(frond_gen_next(gc, &id, NULL), 0);
  assert_true(id > last_a);

  /* b's lease runs out and d takes the row: b's next fence write says
  ** LOST, and b stops. */
  lease_sql("UPDATE frond_node SET lease_expires = 1 WHERE node_id = 1");
  d = lease_open(4, NULL);
  assert_int_equal(create(d, "frond", NULL, &gd, &err), 0);
  assert_int_equal(frond_gen_node(gd), 1);
  assert_int_equal(frond__coord_fence_round(b, 1, &err), FROND_ENODE_ID_LOST);
  assert_true(wait_state(b, FROND_ENODE_ID_LOST, 2000));
  assert_int_equal(frond_gen_next(gb, &id, NULL), FROND_ENODE_ID_LOST);
  /* ...and it cannot take it back while d holds it. */
  assert_int_equal(frond__coord_fence_round(b, 1, &err), FROND_ENODE_ID_LOST);
  assert_int_equal(frond__coord_fence_round(d, 1, &err), 0);
  /* Closing the loser must not release the winner's row. */
  frond_coord_close(b, NULL);
  assert_int_equal(frond__coord_fence_round(d, 1, &err), 0);
  frond_coord_close(c, NULL);
  frond_coord_close(d, NULL);
  tmpdir_remove(dir);
}

/* A fence write that lands after a takeover changes nothing. */
static void test_lease_late_write(void **state) {
  char *dir = tmpdir_make();
  frond_coord *a, *b;
  frond_gen *ga, *gb;
  frond_error err = {0, ""};
  int64_t fence_b;
  (void)state;
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  snprintf(lease_uri, sizeof(lease_uri),
           "lease+sqlite://%s?lease_ms=60000&nodes=1", lease_db);
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), 0);
  lease_sql("UPDATE frond_node SET lease_expires = 1");
  b = lease_open(2, NULL);
  assert_int_equal(create(b, "frond", NULL, &gb, &err), 0);
  fence_b = lease_fence_of(0);
  pthread_mutex_lock(&a->lock);
  assert_int_equal(a->m->xFence(a, fence_b + 100000, &err),
                   FROND_ENODE_ID_LOST);
  pthread_mutex_unlock(&a->lock);
  assert_int_equal(lease_fence_of(0), fence_b);
  frond_coord_close(a, NULL);
  frond_coord_close(b, NULL);
  tmpdir_remove(dir);
}

/* A regain whose answer was lost: its UPDATE took the row back from a
** holder that wrote fences meanwhile, and only the retry learns that the
** row is ours. It must resume above the row's fence, not above its own
** old state. returning: the engine's RETURNING, else the layer's
** emulation (MySQL's way). */
static void regain_after_lost_answer(int returning) {
  char *dir = tmpdir_make(), sql[300];
  frond_coord *a, *b;
  frond_gen *ga, *gb;
  frond_error err = {0, ""};
  int64_t id = 0, fence, after = -1;
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  /* Without RETURNING: the flag is a connection's, so a keeps its one. */
  snprintf(lease_uri, sizeof(lease_uri),
           "lease+sqlite://%s?lease_ms=60000&nodes=1&window_ms=100%s", lease_db,
           returning ? "" : "&keep_connection=1");
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), 0);
  if (!returning) { /* under the lock the fencer writes fences under */
    pthread_mutex_lock(&a->lock);
    frond__db_test_clear_flags(((lease *)a->impl)->db, FROND_DB_RETURNING);
    pthread_mutex_unlock(&a->lock);
  }
  /* a's threads stop: it learns of the takeover only from the regain
  ** below, as when its watchdog is not scheduled between the loss and the
  ** regain (else its generator is blocked only if a's fencer happens to
  ** write during the takeover). */
  frond__coord_stop_threads(a);
  /* a is cut off; its lease runs out and b takes the row, fenced ahead of
  ** the clock (b may borrow that far), and dies. */
  lease_sql("UPDATE frond_node SET lease_expires = 1");
  b = lease_open(2, NULL);
  assert_int_equal(create(b, "frond", NULL, &gb, &err), 0);
  frond__coord_stop_threads(b); /* b dies */
  fence = lease_fence_of(0);
  assert_true(fence > frond_clock_realtime(NULL));
  lease_sql("UPDATE frond_node SET lease_expires = 1");
  /* a's regain: its take committed, its answer was lost. */
  snprintf(sql, sizeof(sql),
           "UPDATE frond_node SET owner = '127.0.0.1:1', token = '%s', "
           "lease_expires = 9000000000000",
           ((lease *)a->impl)->token);
  lease_sql(sql);
  /* The retry finds the row ours, and resumes above b's fence. */
  pthread_mutex_lock(&a->lock);
  assert_int_equal(a->m->xRegain(a, &after, &err), 0);
  pthread_mutex_unlock(&a->lock);
  assert_true(after >= fence);
  /* Through the fencer's round and the generator, never blocked: a's
  ** next ID is above it (it waits for the clock to reach it, bounded). */
  atomic_store(&a->lost, 1);
  assert_int_equal(frond__coord_fence_round(a, 1, &err), 0);
  for (int i = 0; i < 10000 && frond_gen_next(ga, &id, &err) != 0; i++)
    frond__sleep_ns(1000000);
  assert_int_equal(frond_gen_next(ga, &id, &err), 0);
  assert_true(id_ms("frond", id) > fence);
  frond_coord_close(b, NULL);
  frond_coord_close(a, NULL);
  tmpdir_remove(dir);
}

static void test_lease_regain_lost_answer(void **state) {
  (void)state;
  regain_after_lost_answer(1);
}

static void test_lease_regain_lost_answer_emulated(void **state) {
  (void)state;
  regain_after_lost_answer(0);
}

static void test_lease_start_checks(void **state) {
  char *dir = tmpdir_make();
  frond_coord_options o;
  frond_coord *c;
  frond_gen *g;
  frond_error err = {0, ""};
  fake_clock clk;
  (void)state;
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  /* One row: another identity must take that one. */
  snprintf(lease_uri, sizeof(lease_uri), "lease+sqlite://%s?nodes=1", lease_db);
  c = lease_open(1, NULL);
  assert_int_equal(create(c, "frond", NULL, &g, &err), 0);
  frond_coord_close(c, NULL);

  /* Stored fence a minute ahead of the clock: refuse, naming both. */
  lease_sql("UPDATE frond_node SET high_water_ms = "
            "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) "
            "+ 60000");
  c = lease_open(1, NULL);
  assert_int_equal(create(c, "frond", NULL, &g, &err), FROND_ECLOCK_BEHIND);
  assert_non_null(strstr(err.message, "ahead of the clock"));
  frond_coord_close(c, NULL);
  /* ...and the refused start released the row again. */
  c = lease_open(2, NULL);
  assert_int_equal(create(c, "frond", NULL, &g, &err), FROND_ECLOCK_BEHIND);
  frond_coord_close(c, NULL);
  lease_sql("UPDATE frond_node SET high_water_ms = 0");

  /* A clock 10 s off the database's: CLOCK_OFFSET, naming both times. */
  frond_coord_options_init(&o);
  o.advertise = "127.0.0.1:1";
  o.clock = fake_clock_read;
  o.clock_ctx = &clk;
  fake_clock_set(&clk, frond_clock_realtime(NULL) + 10000);
  c = open_ok(lease_uri, &o);
  assert_int_equal(create(c, "frond", NULL, &g, &err), FROND_ECLOCK_OFFSET);
  assert_non_null(strstr(err.message, "the database reads"));
  frond_coord_close(c, NULL);
  /* Within the bound (or with the check off) it starts. */
  c = open_ok(lease_uri, NULL);
  frond_coord_close(c, NULL);
  o.max_clock_offset_ms = 0;
  c = open_ok(lease_uri, &o);
  assert_int_equal(create(c, "frond", NULL, &g, &err), 0);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* ---- layout ---------------------------------------------------------- */

static void test_layout_floor_math(void **state) {
  frond_layout a = layout_of("frond"), b = layout_of("time=40,node=12,seq=11");
  frond_coord_entry e[3];
  frond_fields f;
  int64_t floor, ms, first;
  (void)state;
  memset(e, 0, sizeof(e));
  e[0].node = 3, e[0].fence_ms = a.epoch_ms + 1000;
  e[1].node = 900, e[1].fence_ms = a.epoch_ms + 5000;
  e[2].node = 5000, e[2].fence_ms = a.epoch_ms + 9000; /* outside a's range */
  floor = frond__coord_floor(&a, e, 3);
  assert_int_equal(frond_decode(&a, floor, &f, NULL), 0);
  assert_int_equal(f.unix_ms, a.epoch_ms + 5000);
  assert_int_equal(f.node, 900);
  assert_int_equal(f.sequence, 4095);
  assert_int_equal(frond__coord_floor(&a, e, 0), 0);
  assert_int_equal(frond__coord_floor_ms(&b, 0), 0);
  /* The first unit after floor_ms under b, node 0 sequence 0, is above. */
  ms = frond__coord_floor_ms(&b, floor);
  f.time = (ms - b.epoch_ms) / b.unit_ms + 1;
  f.node = 0;
  f.sequence = 0;
  assert_int_equal(frond_compose(&b, &f, &first, NULL), 0);
  assert_true(first > floor);
  f.time--;
  f.node = 4095;
  f.sequence = 2047;
  assert_int_equal(frond_compose(&b, &f, &first, NULL), 0);
  assert_true(first >= floor - (INT64_C(1) << 23)); /* and it is tight */
}

static void test_lease_layout(void **state) {
  char *dir = tmpdir_make();
  frond_coord *a, *b, *admin;
  frond_gen *ga, *gb;
  frond_layout l, now_l;
  frond_error err = {0, ""};
  int64_t floor = 0, last = 0, id;
  (void)state;
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  snprintf(lease_uri, sizeof(lease_uri), "lease+sqlite://%s", lease_db);
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), 0);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(frond_gen_next(ga, &last, NULL), 0);
  /* Another layout is refused, naming both. */
  b = lease_open(2, NULL);
  assert_int_equal(create(b, "time=40,node=12,seq=11", NULL, &gb, &err),
                   FROND_ELAYOUT_MISMATCH);
  assert_non_null(strstr(err.message, "time=40"));
  assert_non_null(strstr(err.message, "'frond'"));
  /* ...and what switching would cost the recorded one. */
  assert_non_null(strstr(err.message, "'frond' would be locked out until"));
  frond_coord_close(b, NULL);
  /* No change while a node holds an ID. */
  admin = lease_open(9, NULL);
  l = layout_of("time=40,node=12,seq=11");
  assert_int_equal(frond_coord_layout_set(admin, &l, &floor, &err),
                   FROND_ENODE_IN_USE);
  assert_int_equal(frond_coord_layout_get(admin, &now_l, &floor, &err), 0);
  assert_int_equal(now_l.time_bits, 41);
  frond_coord_close(a, NULL);
  assert_int_equal(frond_coord_layout_set(admin, &l, &floor, &err), 0);
  assert_true(floor >= last);
  frond_coord_close(admin, NULL);
  /* The old layout can no longer start; the new one starts above. */
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), FROND_ELAYOUT_MISMATCH);
  frond_coord_close(a, NULL);
  b = lease_open(2, NULL);
  assert_int_equal(create(b, "time=40,node=12,seq=11", NULL, &gb, &err), 0);
  assert_int_equal(frond_gen_next(gb, &id, NULL), 0);
  assert_true(id > floor);
  assert_true(id > last);
  frond_coord_close(b, NULL);
  tmpdir_remove(dir);
}

/* A layout change whose second step fails puts the old layout back; a
** mark left anyway (its process killed between the steps) stops every
** start with a message saying how to finish or undo it, which the layout
** it started from undoes and a new one finishes. */
static void test_lease_layout_unfinished(void **state) {
  char *dir = tmpdir_make();
  frond_coord *a, *admin;
  frond_gen *ga;
  frond_layout l = layout_of("time=40,node=12,seq=11"),
               was = layout_of("frond"), got;
  frond_error err = {0, ""};
  int64_t floor = 0, last = 0, id;
  int changing = -1;
  (void)state;
  snprintf(lease_db, sizeof(lease_db), "%s/lease.db", dir);
  snprintf(lease_uri, sizeof(lease_uri), "lease+sqlite://%s", lease_db);
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), 0);
  assert_int_equal(frond_gen_next(ga, &last, NULL), 0);
  frond_coord_close(a, NULL);
  admin = lease_open(9, NULL);

  /* Step 2 fails (the database refuses a write of it). */
  lease_sql("CREATE TRIGGER boom BEFORE UPDATE ON frond_meta WHEN "
            "NEW.name = 'layout_previous' BEGIN SELECT RAISE(ABORT, 'boom'); "
            "END; CREATE TRIGGER boom2 BEFORE INSERT ON frond_meta WHEN "
            "NEW.name = 'layout_previous' BEGIN SELECT RAISE(ABORT, 'boom'); "
            "END");
  assert_int_not_equal(frond_coord_layout_set(admin, &l, &floor, &err), 0);
  assert_non_null(strstr(err.message, "boom"));
  lease_sql("DROP TRIGGER boom; DROP TRIGGER boom2");
  assert_int_equal(
      frond__coord_layout_read(admin, &got, &floor, &changing, &err), 0);
  assert_int_equal(changing, 0);
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), 0);
  assert_int_equal(frond_gen_next(ga, &id, NULL), 0);
  assert_true(id > last);
  last = id;
  frond_coord_close(a, NULL);

  /* The process killed between the steps: the mark stays. */
  lease_sql("UPDATE frond_meta SET value = 'changing:' || value WHERE name = "
            "'layout'");
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), FROND_ECOORD);
  assert_non_null(strstr(err.message, "not finished"));
  assert_non_null(strstr(err.message, "frond node layout --set "
                                      "time=41,node=10,seq=12"));
  frond_coord_close(a, NULL);
  assert_int_equal(
      frond__coord_layout_read(admin, &got, &floor, &changing, &err), 0);
  assert_int_equal(changing, 1);
  assert_int_equal(got.time_bits, 41);
  /* The layout it started from undoes it, setting no floor. */
  assert_int_equal(frond_coord_layout_set(admin, &was, &floor, &err), 0);
  assert_int_equal(floor, 0);
  assert_int_equal(
      frond__coord_layout_read(admin, &got, &floor, &changing, &err), 0);
  assert_int_equal(changing, 0);
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "frond", NULL, &ga, &err), 0);
  assert_int_equal(frond_gen_next(ga, &id, NULL), 0);
  assert_true(id > last);
  last = id;
  frond_coord_close(a, NULL);
  /* ...and a new one finishes it. */
  lease_sql("UPDATE frond_meta SET value = 'changing:' || value WHERE name = "
            "'layout'");
  assert_int_equal(frond_coord_layout_set(admin, &l, &floor, &err), 0);
  assert_true(floor >= last);
  frond_coord_close(admin, NULL);
  a = lease_open(1, NULL);
  assert_int_equal(create(a, "time=40,node=12,seq=11", NULL, &ga, &err), 0);
  assert_int_equal(frond_gen_next(ga, &id, NULL), 0);
  assert_true(id > floor);
  frond_coord_close(a, NULL);
  tmpdir_remove(dir);
}

/* xFact: the lease records a fact once in frond_meta, beside the layout,
** and reads it back; a second value never overwrites it; static: keeps
** none. */
static void test_lease_facts(void **state) {
  char *dir = tmpdir_make(), uri[600], got[64], where[300];
  frond_coord *c;
  frond_error err = {0, ""};
  (void)state;
  snprintf(uri, sizeof(uri), "lease+sqlite://%s/lease.db", dir);
  c = open_ok(uri, NULL);
  assert_true(frond__coord_has_facts(c));
  assert_int_equal(frond__coord_fact(c, "key.x", "aaaa", got, sizeof(got),
                                     where, sizeof(where), &err),
                   0);
  assert_string_equal(got, "aaaa");
  assert_non_null(strstr(where, "frond_meta"));
  assert_int_equal(frond__coord_fact(c, "key.x", "bbbb", got, sizeof(got),
                                     where, sizeof(where), &err),
                   0);
  assert_string_equal(got, "aaaa");
  frond_coord_close(c, NULL);
  c = open_ok("static:1", NULL);
  assert_false(frond__coord_has_facts(c));
  assert_int_equal(frond__coord_fact(c, "key.x", "bbbb", got, sizeof(got),
                                     where, sizeof(where), &err),
                   FROND_EINVAL);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uri_parsing),
      cmocka_unit_test(test_advertise),
      cmocka_unit_test(test_node_range),
      cmocka_unit_test(test_cache_file),
      cmocka_unit_test(test_scope_record),
      cmocka_unit_test(test_cache_concurrent_writers),
      cmocka_unit_test(test_cache_name),
      cmocka_unit_test(test_lease_sqlite),
      cmocka_unit_test(test_lease_late_write),
      cmocka_unit_test(test_lease_regain_lost_answer),
      cmocka_unit_test(test_lease_regain_lost_answer_emulated),
      cmocka_unit_test(test_lease_start_checks),
      cmocka_unit_test(test_layout_floor_math),
      cmocka_unit_test(test_lease_layout),
      cmocka_unit_test(test_lease_layout_unfinished),
      cmocka_unit_test(test_lease_facts),
  };
  return frond_run_tests(tests, NULL, NULL);
}
