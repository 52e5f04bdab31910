/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_coord_claims.c -- who gets which node ID from a lease on SQLite:
** static node IDs registered as pinned leases (a second live holder
** refused, naming it; never handed to anyone else), the order in which
** rows are taken, a full range, a high-water file left by a static node,
** and a coordinator used in a child of fork().
*/
#include "coord_util.h"
#include "base/fork.h"
#include "core/high_water.h"

#include <sqlite3.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char db[600];

static frond_coord *at(int port, const char *query) {
  frond_coord_options o;
  char uri[900], who[64];
  frond_coord_options_init(&o);
  snprintf(who, sizeof(who), "127.0.0.1:%d", port);
  o.advertise = who;
  snprintf(uri, sizeof(uri), "lease+sqlite://%s%s%s", db, query ? "?" : "",
           query ? query : "");
  return open_ok(uri, &o);
}

/* Open and claim; the node ID, or the code when refused (negative). */
static int64_t claim(frond_coord **c, int port, const char *query,
                     frond_error *err) {
  frond_gen *g;
  int rc;
  *c = at(port, query);
  rc = create(*c, "frond", NULL, &g, err);
  if (rc != 0) {
    frond_coord_close(*c, NULL);
    *c = NULL;
    return rc;
  }
  return (int64_t)frond_gen_node(g);
}

static char *setup_db(void) {
  char *dir = tmpdir_make();
  snprintf(db, sizeof(db), "%s/frond.db", dir);
  return dir;
}

/* static:N registered: a pinned lease. A second live holder is refused
** with NODE_IN_USE naming the first (identity, pid, host); unpinned claims
** never get N while it is held; N held by an unpinned claim refuses a
** pinned one the same way. After a clean stop N comes back to its pinned
** holder, above the fence. */
static void test_pinned(void **state) {
  char *dir = setup_db(), pid[32];
  frond_coord *s, *s2, *a, *b, *c, *d;
  frond_error err = {0, ""};
  frond_gen *g;
  int64_t id, last;
  (void)state;
  assert_int_equal(claim(&s, 1, "node=1", &err), 1);
  assert_int_equal(claim(&s2, 2, "node=1", &err), FROND_ENODE_IN_USE);
  assert_non_null(strstr(err.message, "node ID 1 is held by 127.0.0.1:1"));
  snprintf(pid, sizeof(pid), "pid %ld on ", (long)getpid());
  assert_non_null(strstr(err.message, pid));
  /* Unpinned claims go round it: 0, then 2. */
  assert_int_equal(claim(&a, 3, NULL, &err), 0);
  assert_int_equal(claim(&b, 4, NULL, &err), 2);
  /* ...and a pinned claim of an unpinned holder's ID is refused too. */
  assert_int_equal(claim(&c, 5, "node=2", &err), FROND_ENODE_IN_USE);
  assert_non_null(strstr(err.message, "127.0.0.1:4"));
  /* Out of the layout's range. */
  assert_int_equal(claim(&c, 5, "node=1024", &err), FROND_ENODE_RANGE);
  /* A clean stop gives node 1 back to whoever pins it, above its IDs. */
  g = s->gen;
  assert_int_equal(frond_gen_next(g, &last, NULL), 0);
  assert_int_equal(frond_coord_close(s, &err), 0);
  /* Meanwhile an unpinned claim takes a new row, not the pinned one's. */
  assert_int_equal(claim(&d, 6, NULL, &err), 3);
  assert_int_equal(claim(&s, 1, "node=1", &err), 1);
  assert_int_equal(frond_gen_next(s->gen, &id, NULL), 0);
  assert_true(id > last);
  frond_coord_close(s, NULL);
  frond_coord_close(a, NULL);
  frond_coord_close(b, NULL);
  frond_coord_close(d, NULL);
  tmpdir_remove(dir);
}

/* Rows are taken in this order: this identity's old row, a new row, then
** another identity's expired row (only when the range is full). */
static void test_take_order(void **state) {
  char *dir = setup_db();
  frond_coord *a, *b, *c;
  frond_error err = {0, ""};
  (void)state;
  assert_int_equal(claim(&a, 1, "nodes=3", &err), 0);
  assert_int_equal(claim(&b, 2, "nodes=3", &err), 1);
  frond_coord_close(a, NULL);
  /* A new identity does not take 1:'s row while the range has room. */
  assert_int_equal(claim(&c, 3, "nodes=3", &err), 2);
  /* 1: comes back to its own row. */
  assert_int_equal(claim(&a, 1, "nodes=3", &err), 0);
  frond_coord_close(a, NULL);
  frond_coord_close(c, NULL);
  /* Range full of rows: a new identity takes the lowest expired one. */
  assert_int_equal(claim(&c, 4, "nodes=3", &err), 0);
  frond_coord_close(b, NULL);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

static void sql(const char *q) {
  sqlite3 *h;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  sqlite3_busy_timeout(h, 5000);
  if (sqlite3_exec(h, q, NULL, NULL, NULL) != SQLITE_OK)
    fail_msg("%s: %s", q, sqlite3_errmsg(h));
  sqlite3_close(h);
}

/* The whole range of a layout: 1,024 node IDs for "frond", 1,022 of them
** held by live leases written straight into the table. The last two free
** IDs are handed out, and then the claim is NODE_RANGE, naming how a dead
** process's lease ends. */
static void test_full_range(void **state) {
  char *dir = setup_db();
  frond_coord *a, *b, *c;
  frond_error err = {0, ""};
  (void)state;
  assert_int_equal(claim(&a, 1, NULL, &err), 0); /* makes the tables */
  frond_coord_close(a, NULL);
  sql("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n "
      "WHERE i < 1023) INSERT OR REPLACE INTO frond_node SELECT i, "
      "'10.0.0.' || i || ':80', 't' || i, 4102444800000, 0, 0 FROM n "
      "WHERE i NOT IN (500, 1023)");
  assert_int_equal(claim(&a, 2, NULL, &err), 500);
  assert_int_equal(claim(&b, 3, NULL, &err), 1023);
  assert_int_equal(claim(&c, 4, NULL, &err), FROND_ENODE_RANGE);
  assert_non_null(strstr(err.message, "all 1024 node IDs"));
  assert_non_null(strstr(err.message, "lease_ms=30000"));
  frond_coord_close(a, NULL);
  frond_coord_close(b, NULL);
  tmpdir_remove(dir);
}

/* A restart after kill -9 (a holder that no longer exists) takes another
** node ID when unpinned; pinned, it waits for the dead lease to run out,
** bounded by it, and then starts above the dead holder's fence. */
static void test_dead_holder(void **state) {
  char *dir = setup_db(), cache[700];
  frond_coord *a, *b;
  frond_error err = {0, ""};
  int64_t id, theirs = 0, t;
  int fds[2], st = 0;
  pid_t pid;
  (void)state;
  snprintf(cache, sizeof(cache), "%s", dir);
  assert_int_equal(pipe(fds), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* The holder: claims node 5 for 127.0.0.1:1, issues, dies unclean. */
    frond_coord *h = NULL;
    frond_error e = {0, ""};
    int64_t x = -1;
    close(fds[0]);
    if (claim(&h, 1, "node=5&lease_ms=2000", &e) == 5)
      frond_gen_next(h->gen, &x, NULL);
    (void)!write(fds[1], &x, sizeof(x));
    _exit(0); /* no close: the lease stays until it runs out */
  }
  close(fds[1]);
  assert_int_equal(read(fds[0], &theirs, sizeof(theirs)), sizeof(theirs));
  close(fds[0]);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(theirs > 0);
  /* Unpinned, the same identity: another node ID at once. */
  assert_int_equal(claim(&a, 1, "lease_ms=2000", &err), 0);
  frond_coord_close(a, NULL);
  /* Another identity pinning 5: refused at once, the dead lease named. */
  assert_int_equal(claim(&b, 2, "node=5&lease_ms=2000", &err),
                   FROND_ENODE_IN_USE);
  /* The same identity pinning 5: waits for the lease, then starts above
  ** the dead holder's IDs. */
  t = frond__mono_ns();
  if (claim(&b, 1, "node=5&lease_ms=2000", &err) != 5)
    fail_msg("the dead holder's successor: %s", err.message);
  t = frond__mono_ns() - t;
  assert_true(t < 4000 * INT64_C(1000000));
  assert_int_equal(frond_gen_next(b->gen, &id, NULL), 0);
  assert_true(id > theirs);
  frond_coord_close(b, NULL);
  tmpdir_remove(dir);
}

/* A high-water file a static node left in the data directory: a lease on
** that node ID starts above it (an upgrade from a static:N server). */
static void test_static_file_honoured(void **state) {
  char *dir = setup_db(), hw[700];
  frond_coord_options o;
  frond_coord *c;
  frond_gen *g;
  frond__hw *f;
  frond__hw_record rec;
  frond_layout l = layout_of("frond");
  frond_error err = {0, ""};
  int64_t id = 0, now = frond_clock_realtime(NULL);
  (void)state;
  assert_int_equal(frond__hw_path(hw, sizeof(hw), dir, 0), 0);
  memset(&rec, 0, sizeof(rec));
  rec.node = 0;
  rec.time_ms = now + 800; /* borrowed ahead before a crash */
  rec.seq = 4095;
  frond_layout_format(&l, rec.layout, sizeof(rec.layout));
  assert_int_equal(frond__hw_open(&f, hw, NULL), 0);
  assert_int_equal(frond__hw_write(f, &rec, NULL), 0);
  frond__hw_close(f);
  frond_coord_options_init(&o);
  o.advertise = "127.0.0.1:1";
  o.cache_dir = dir;
  snprintf(hw, sizeof(hw), "lease+sqlite://%s", db);
  c = open_ok(hw, &o);
  assert_int_equal(create(c, "frond", NULL, &g, &err), 0);
  assert_int_equal(frond_gen_node(g), 0);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id_ms("frond", id) > now + 800);
  frond_coord_close(c, NULL);
  tmpdir_remove(dir);
}

/* Options of one coordinator are refused by the others. */
static void test_options(void **state) {
  (void)state;
  open_bad("static:1?node=2", NULL, FROND_EINVAL, "node= is for a lease");
  open_bad("lease+sqlite:///nonexistent/x.db?unregistered=1", NULL,
           FROND_EINVAL, "unregistered=1 is for static:N");
  open_bad("lease+sqlite:///tmp/x.db?node=-1", NULL, FROND_EINVAL, "outside");
  frond_coord_close(open_ok("static:1?unregistered=1", NULL), NULL);
}

/* A coordinator in a child of fork(): every call refused with FORKED, the
** generator too; closing it there (only after fork(), which leaves the
** allocator usable in the child) leaves the parent's node ID alone. */
static void fork_refused(int how) {
  char *dir = setup_db();
  frond_coord *c;
  frond_coord_entry *e = NULL;
  frond_error err = {0, ""};
  size_t n = 0;
  int64_t id;
  int st = 0;
  pid_t pid;
  if (how != BY_FORK && !frond__fork_wipes())
    fail_msg("this kernel refuses MADV_WIPEONFORK (before Linux 4.14, or a "
             "seccomp filter): only fork() is caught here");
  assert_int_equal(claim(&c, 1, NULL, &err), 0);
  assert_int_equal(frond_gen_next(c->gen, &id, NULL), 0);
  pid = fork_by(how);
  assert_true(pid >= 0);
  if (pid == 0) {
    frond_coord_stats cs;
    frond_layout l = layout_of("frond");
    int64_t floor, x;
    int bad = 0;
    bad |= frond_coord_state(c) != FROND_EFORKED;
    bad |= (frond_gen_next(c->gen, &x, NULL) != FROND_EFORKED) << 1;
    bad |= (frond_coord_list(c, &e, &n, &err) != FROND_EFORKED) << 2;
    bad |= (!strstr(err.message, "fork()")) << 3;
    bad |= (frond_coord_layout_get(c, &l, &floor, NULL) != FROND_EFORKED) << 4;
    frond_coord_stats_get(c, &cs);
    if (how == BY_FORK)
      bad |= (frond_coord_close(c, NULL) != 0) << 5;
    _exit(bad);
  }
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  if (WEXITSTATUS(st) != 0)
    fail_msg("the child: checks failed, bits 0x%x", WEXITSTATUS(st));
  /* The parent still holds node 0 and renews it. */
  assert_int_equal(frond_coord_state(c), 0);
  assert_int_equal(frond__coord_fence_round(c, 1, &err), 0);
  assert_int_equal(frond_coord_list(c, &e, &n, &err), 0);
  assert_int_equal(n, 1);
  assert_int_equal(e[0].live, 1);
  frond_free(e);
  assert_int_equal(frond_gen_next(c->gen, &id, NULL), 0);
  assert_int_equal(frond_coord_close(c, &err), 0);
  tmpdir_remove(dir);
}

static void test_fork(void **state) {
  (void)state;
  fork_refused(BY_FORK);
}

static void test_underscore_fork(void **state) {
  (void)state;
  fork_refused(BY_UNDERSCORE_FORK);
}

static void test_syscall_fork(void **state) {
  (void)state;
  fork_refused(BY_SYSCALL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pinned),
      cmocka_unit_test(test_take_order),
      cmocka_unit_test(test_full_range),
      cmocka_unit_test(test_dead_holder),
      cmocka_unit_test(test_static_file_honoured),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_fork),
      cmocka_unit_test(test_underscore_fork),
      cmocka_unit_test(test_syscall_fork),
  };
  return frond_run_tests(tests, NULL, NULL);
}
