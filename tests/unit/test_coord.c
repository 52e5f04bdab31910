/*
** test_coord.c -- coordinators: URIs, identity, the node cache file, the
** fence (with a fake driver and a fake clock), the SQLite lease, the start
** checks (range, slack, clock, layout) and the layout floor.
*/
#include "testutil.h"

#include "coord/coord.h"

#include <pthread.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

/* 16 IDs per ms, so that a test can walk a generator to its fence. */
#define SMALL "time=49,node=10,seq=4"

static frond_coord *open_ok(const char *uri, frond_coord_options *o) {
  frond_coord *c = NULL;
  frond_error err = {0, ""};
  if (frond_coord_open(&c, uri, o, &err) != 0)
    fail_msg("open '%s': %s", uri, err.message);
  return c;
}

static void open_bad(const char *uri, frond_coord_options *o, int code,
                     const char *expect) {
  frond_coord *c = NULL;
  frond_error err = {0, ""};
  int rc = frond_coord_open(&c, uri, o, &err);
  if (rc != code)
    fail_msg("'%s' gave %s, want %s (%s)", uri, frond_err_name(rc),
             frond_err_name(code), err.message);
  assert_null(c);
  if (!strstr(err.message, expect))
    fail_msg("'%s': message '%s' lacks '%s'", uri, err.message, expect);
}

static frond_layout layout_of(const char *spec) {
  frond_layout l;
  frond_error err = {0, ""};
  if (frond_layout_parse(spec, &l, &err) != 0)
    fail_msg("layout %s: %s", spec, err.message);
  return l;
}

/* gen_create; returns the code, the generator in *g. */
static int create(frond_coord *c, const char *spec, frond_gen_options *go,
                  frond_gen **g, frond_error *err) {
  frond_layout l = layout_of(spec);
  *g = NULL;
  return frond_coord_gen_create(c, &l, go, g, err);
}

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

/* ---- a fake driver ---------------------------------------------------
**
** The coordinator's side of the fence without a network: a "stored" fence
** per node, writes that succeed, hang, fail, or commit without an answer,
** and a record of what the cache file held when each write was sent. */

enum { OK = 0, HANG, LOST_ANSWER, DOWN, TAKEN };

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int mode, hanging;
  int64_t stored; /* the fence a later holder reads */
  int64_t last_sent;
  int writes, ahead_of_cache; /* writes sent before the cache held them */
  int regain_rc;
  int64_t regain_after;
  int regains;
  int64_t floor; /* the layout floor the "coordinator" records */
} fake;

static fake F = {.mu = PTHREAD_MUTEX_INITIALIZER,
                 .cv = PTHREAD_COND_INITIALIZER};

static void fake_reset(void) {
  pthread_mutex_lock(&F.mu);
  F.mode = OK;
  F.hanging = 0;
  F.stored = F.last_sent = 0;
  F.writes = F.ahead_of_cache = F.regains = 0;
  F.regain_rc = 0;
  F.regain_after = 0;
  F.floor = 0;
  pthread_mutex_unlock(&F.mu);
}

static void fake_mode(int mode) {
  pthread_mutex_lock(&F.mu);
  F.mode = mode;
  pthread_cond_broadcast(&F.cv);
  pthread_mutex_unlock(&F.mu);
}

static int f_open(frond_coord *c, const char *uri, frond_error *err) {
  c->impl = &F;
  return 0;
}

static int f_acquire(frond_coord *c, frond__coord_claim *out,
                     frond_error *err) {
  out->node = 5;
  pthread_mutex_lock(&F.mu);
  out->fence_ms = F.stored;
  c->floor_id = F.floor;
  snprintf(c->prev_spec, sizeof(c->prev_spec), "twitter-ish");
  pthread_mutex_unlock(&F.mu);
  return 0;
}

static int f_fence(frond_coord *c, int64_t t, frond_error *err) {
  int rc = 0;
  pthread_mutex_lock(&F.mu);
  F.writes++;
  F.last_sent = t;
  if (c->cache_path[0]) {
    frond_coord_cache cc;
    int missing;
    if (frond__coord_cache_read(c->cache_path, &cc, &missing, NULL) != 0 ||
        cc.fence_ms < t)
      F.ahead_of_cache++;
  }
  if (F.mode == HANG) {
    F.hanging = 1;
    pthread_cond_broadcast(&F.cv);
    while (F.mode == HANG)
      pthread_cond_wait(&F.cv, &F.mu);
    F.hanging = 0;
  }
  if (F.mode == OK || F.mode == LOST_ANSWER)
    F.stored = t;
  if (F.mode == LOST_ANSWER || F.mode == DOWN)
    rc = frond__fail(err, FROND_ECOORD, "fake: no answer");
  if (F.mode == TAKEN)
    rc = frond__fail(err, FROND_ENODE_ID_LOST, "fake: taken over");
  pthread_mutex_unlock(&F.mu);
  return rc;
}

static int f_regain(frond_coord *c, int64_t *after, frond_error *err) {
  pthread_mutex_lock(&F.mu);
  F.regains++;
  *after = F.regain_after;
  pthread_mutex_unlock(&F.mu);
  return F.regain_rc ? frond__fail(err, F.regain_rc, "fake: regain") : 0;
}

static int f_release(frond_coord *c, frond_error *err) {
  return 0;
}

static int f_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                  frond_error *err) {
  *out = calloc(1, sizeof(**out));
  *n = 0;
  return 0;
}

static int f_clock(frond_coord *c, int64_t *off, char *ref, size_t len,
                   frond_error *err) {
  *off = 0;
  snprintf(ref, len, "the fake");
  return 0;
}

static int f_layout_get(frond_coord *c, char *spec, size_t len, int64_t *fl,
                        frond_error *err) {
  spec[0] = 0;
  *fl = 0;
  return 0;
}

static int f_layout_set(frond_coord *c, const char *spec, int64_t *fl,
                        frond_error *err) {
  return 0;
}

static void f_close(frond_coord *c) {}

static const frond_coord_methods fake_methods = {
    .version = 2,
    .scheme = "fake:",
    .open = f_open,
    .acquire = f_acquire,
    .fence = f_fence,
    .regain = f_regain,
    .release = f_release,
    .list = f_list,
    .clock_offset = f_clock,
    .layout_get = f_layout_get,
    .layout_set = f_layout_set,
    .close = f_close,
    .cache_fallback = 0,
    .fenced = 1,
};

static frond_coord *fake_open(fake_clock *clk, const char *cache_dir) {
  frond_coord_options o;
  frond_coord *c = NULL;
  frond_error err = {0, ""};
  frond_coord_options_init(&o);
  o.advertise = "10.9.9.9:1";
  o.clock = fake_clock_read;
  o.clock_ctx = clk;
  o.cache_dir = cache_dir;
  o.window_ms = 1000;
  if (frond__coord_open_driver(&c, &fake_methods, "fake:", &o, &err) != 0)
    fail_msg("fake open: %s", err.message);
  return c;
}

static frond_gen_options small_opts(void) {
  frond_gen_options go;
  frond_gen_options_init(&go);
  go.max_ahead_ms = 100;
  go.max_wait_ms = 0;
  return go;
}

static int64_t id_ms(const char *spec, int64_t id) {
  frond_layout l = layout_of(spec);
  frond_fields f;
  assert_int_equal(frond_decode(&l, id, &f, NULL), 0);
  return f.unix_ms;
}

static int wait_until(int (*cond)(void *), void *arg, int ms) {
  for (int i = 0; i < ms; i++) {
    if (cond(arg))
      return 1;
    frond__sleep_ns(1000000);
  }
  return cond(arg);
}

static int is_hanging(void *arg) {
  int h;
  (void)arg;
  pthread_mutex_lock(&F.mu);
  h = F.hanging;
  pthread_mutex_unlock(&F.mu);
  return h;
}

static int state_is(void *arg) {
  void **a = arg;
  return frond_coord_state(a[0]) == *(int *)a[1];
}

static int wait_state(frond_coord *c, int code, int ms) {
  void *a[2] = {c, &code};
  return wait_until(state_is, a, ms);
}

/* The first fence is durable (cache first) before the generator exists. */
static void test_fence_first_durable(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord_stats st;
  frond_coord *c;
  frond_gen *g;
  int64_t t0 = INT64_C(1800000000000), id;
  (void)state;
  fake_reset();
  F.stored = t0 - 5000; /* an earlier holder's fence */
  fake_clock_set(&clk, t0);
  c = fake_open(&clk, dir);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  assert_int_equal(F.writes, 1);
  assert_int_equal(F.ahead_of_cache, 0);
  assert_int_equal(F.stored, t0 + 100 + 1000); /* now + max_ahead + window */
  assert_int_equal(frond__gen_fence_ms(g), F.stored);
  frond_coord_stats_get(c, &st);
  assert_int_equal(st.fence_ms, F.stored);
  assert_int_equal(st.start_after_ms, t0 - 5000);
  assert_int_equal(st.node, 5);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id_ms(SMALL, id) > t0 - 5000);
  /* Close stores the exact high-water time as the fence: the fake clock
  ** has not moved, so that is the last ID's unit. */
  assert_int_equal(frond_coord_close(c, NULL), 0);
  assert_int_equal(F.stored, id_ms(SMALL, id));
  tmpdir_remove(dir);
}

/* Partitioned: every write hangs. The generator issues up to its fence and
** not one unit further, whatever the clock says; once the coordinator
** answers, it goes on. */
static void test_fence_partition_stops_at_fence(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  int64_t t0 = INT64_C(1800000000000), fence, id, max_ms = 0;
  int refused = 0, issued = 0;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  c = fake_open(&clk, dir);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  fence = F.stored;
  fake_mode(HANG);
  /* The clock runs far past the fence; the fencer's write hangs. Below
  ** the fence the generator stops only for its own max_ahead (CLOCK_BEHIND,
  ** max_wait 0); once the clock is within max_ahead of it, at the fence
  ** (COORD). */
  for (int step = 0; step < 40; step++) {
    fake_clock_add(&clk, 50);
    frond__gen_tick(g);
    for (int i = 0; i < 2000; i++) {
      int rc = frond_gen_next(g, &id, NULL);
      if (rc == 0) {
        issued++;
        if (id_ms(SMALL, id) > max_ms)
          max_ms = id_ms(SMALL, id);
        continue;
      }
      if (rc == FROND_ECOORD)
        refused++;
      else
        assert_int_equal(rc, FROND_ECLOCK_BEHIND);
      break;
    }
  }
  assert_true(wait_until(is_hanging, NULL, 2000));
  assert_true(issued > 0);
  assert_true(refused > 0);
  assert_true(max_ms <= fence);
  assert_true(max_ms >= fence - 16); /* it did get there */
  fake_mode(OK);                     /* the link is back */
  for (int i = 0; i < 2000 && frond_gen_next(g, &id, NULL) != 0; i++)
    frond__sleep_ns(1000000);
  assert_true(id_ms(SMALL, id) > fence);
  assert_int_equal(F.ahead_of_cache, 0);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* A write whose answer is lost may have committed: the generator must not
** use it, and the cache already covers it. */
static void test_fence_lost_answer(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  frond_coord_cache cc;
  int64_t t0 = INT64_C(1800000000000), fence;
  int missing;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  c = fake_open(&clk, dir);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  fence = frond__gen_fence_ms(g);
  fake_mode(LOST_ANSWER);
  fake_clock_add(&clk, 800); /* less than half a window left: extend */
  for (int i = 0; i < 2000 && F.stored == fence; i++)
    frond__sleep_ns(1000000);
  assert_true(F.stored > fence); /* committed at the coordinator */
  frond__sleep_ns(20 * 1000000);
  assert_int_equal(frond__gen_fence_ms(g), fence); /* not confirmed */
  assert_int_equal(frond__coord_cache_read(c->cache_path, &cc, &missing, NULL),
                   0);
  assert_true(cc.fence_ms >= F.stored);
  assert_int_equal(F.ahead_of_cache, 0);
  fake_mode(OK);
  for (int i = 0; i < 2000 && frond__gen_fence_ms(g) == fence; i++)
    frond__sleep_ns(1000000);
  assert_true(frond__gen_fence_ms(g) > fence);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* After a takeover the node is blocked; when it regains its ID, the next
** ID is above the other holder's fence at once, even with the generator's
** own clock still below it (the 1 ms between the ticker and the watchdog
** held open). */
static void test_regain_resumes_above_other(void **state) {
  fake_clock clk, gclk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  int64_t t0 = INT64_C(1800000000000), other, id;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  fake_clock_set(&gclk, t0);
  go.max_ahead_ms = 1000;
  go.clock = fake_clock_read;
  go.clock_ctx = &gclk;
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, NULL), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  fake_mode(TAKEN);
  assert_int_equal(frond__coord_fence_round(c, 1, NULL), FROND_ENODE_ID_LOST);
  assert_true(wait_state(c, FROND_ENODE_ID_LOST, 2000));
  assert_int_equal(frond_gen_next(g, &id, NULL), FROND_ENODE_ID_LOST);
  /* The other holder borrowed 300 ms ahead, then stopped. */
  other = t0 + 300;
  pthread_mutex_lock(&F.mu);
  F.regain_after = other;
  pthread_mutex_unlock(&F.mu);
  fake_mode(OK);
  fake_clock_add(&clk, 400); /* the coordinator's clock is past it */
  assert_true(wait_state(c, 0, 3000));
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id_ms(SMALL, id) > other);
  frond_coord_close(c, NULL);
}

/* A stored fence ahead of the clock: within the slack (max_ahead + window
** + max_wait) the node starts; beyond it, CLOCK_BEHIND naming both. */
static void test_start_slack(void **state) {
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_coord *c;
  frond_gen *g;
  frond_error err = {0, ""};
  int64_t t0 = INT64_C(1800000000000), id;
  (void)state;
  fake_reset();
  fake_clock_set(&clk, t0);
  F.stored = t0 + 90; /* right after a burst 90 ms ahead */
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, &err), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id_ms(SMALL, id) > t0 + 90);
  frond_coord_close(c, NULL);

  fake_reset();
  F.stored = t0 + 100 + 1000 + 1000; /* past max_ahead + window + wait */
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, &err), FROND_ECLOCK_BEHIND);
  assert_non_null(strstr(err.message, "ahead of the clock"));
  assert_int_equal(F.writes, 0);
  frond_coord_close(c, NULL);
}

/* After a layout change, a node starts numerically above the floor, or
** refuses, naming both layouts, when the floor lies too far ahead. */
static void test_layout_floor_start(void **state) {
  fake_clock clk;
  frond_gen_options go = small_opts();
  frond_layout l = layout_of(SMALL);
  frond_coord *c;
  frond_gen *g;
  frond_error err = {0, ""};
  frond_fields f;
  int64_t t0 = INT64_C(1800000000000), id;
  (void)state;
  memset(&f, 0, sizeof(f));
  fake_reset();
  fake_clock_set(&clk, t0);
  f.time = (t0 + 50 - l.epoch_ms) / l.unit_ms; /* IDs up to 50 ms ahead */
  f.node = 1023;
  f.sequence = 15;
  assert_int_equal(frond_compose(&l, &f, &F.floor, NULL), 0);
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, &err), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id > F.floor);
  frond_coord_close(c, NULL);

  fake_reset();
  f.time = (t0 + 600000 - l.epoch_ms) / l.unit_ms; /* ten minutes ahead */
  assert_int_equal(frond_compose(&l, &f, &F.floor, NULL), 0);
  c = fake_open(&clk, NULL);
  assert_int_equal(create(c, SMALL, &go, &g, &err), FROND_ELAYOUT_MISMATCH);
  assert_non_null(strstr(err.message, "twitter-ish"));
  assert_non_null(strstr(err.message, "seq=4"));
  assert_int_equal(F.writes, 0);
  frond_coord_close(c, NULL);
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
  int64_t id, last_a, now = frond_clock_realtime(NULL);
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
  assert_int_equal(a->m->fence(a, fence_b + 100000, &err), FROND_ENODE_ID_LOST);
  pthread_mutex_unlock(&a->lock);
  assert_int_equal(lease_fence_of(0), fence_b);
  frond_coord_close(a, NULL);
  frond_coord_close(b, NULL);
  tmpdir_remove(dir);
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
  snprintf(lease_uri, sizeof(lease_uri), "lease+sqlite://%s", lease_db);
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
  assert_non_null(strstr(err.message, "time=41"));
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uri_parsing),
      cmocka_unit_test(test_advertise),
      cmocka_unit_test(test_node_range),
      cmocka_unit_test(test_cache_file),
      cmocka_unit_test(test_cache_concurrent_writers),
      cmocka_unit_test(test_cache_name),
      cmocka_unit_test(test_fence_first_durable),
      cmocka_unit_test(test_fence_partition_stops_at_fence),
      cmocka_unit_test(test_fence_lost_answer),
      cmocka_unit_test(test_regain_resumes_above_other),
      cmocka_unit_test(test_start_slack),
      cmocka_unit_test(test_layout_floor_start),
      cmocka_unit_test(test_lease_sqlite),
      cmocka_unit_test(test_lease_late_write),
      cmocka_unit_test(test_lease_start_checks),
      cmocka_unit_test(test_layout_floor_math),
      cmocka_unit_test(test_lease_layout),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
