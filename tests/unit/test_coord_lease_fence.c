/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_coord_lease_fence.c -- the lease row's fence against a holder's own
** late writes, on SQLite. A fence write whose statement is delayed (a
** partition: its connection's retransmissions back off while a new
** connection gets through) may commit after a later write of the same
** holder, or after the same holder regained the row: the token is the
** holder's all along, so only the statement itself can keep the stored
** fence from going down. Each test counts the IDs the next holder of the
** node ID would issue twice.
*/
#include "coord_util.h"

#include "coord/coord_lease.h"

#include <pthread.h>
#include <sqlite3.h>

static char db[600];

static frond_coord *at(fake_clock *clk, int port) {
  frond_coord_options o;
  char uri[900], who[64];
  frond_coord_options_init(&o);
  snprintf(who, sizeof(who), "127.0.0.1:%d", port);
  o.advertise = who;
  o.clock = fake_clock_read;
  o.clock_ctx = clk;
  o.max_clock_offset_ms = 0; /* the fake clock is not the database's */
  snprintf(uri, sizeof(uri),
           "lease+sqlite://%s?lease_ms=60000&nodes=1&window_ms=100", db);
  return open_ok(uri, &o);
}

static void sql(const char *text) {
  sqlite3 *h;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  sqlite3_busy_timeout(h, 5000);
  if (sqlite3_exec(h, text, NULL, NULL, NULL) != SQLITE_OK)
    fail_msg("%s: %s", text, sqlite3_errmsg(h));
  sqlite3_close(h);
}

static int64_t stored_fence(void) {
  sqlite3 *h;
  sqlite3_stmt *st;
  int64_t v = -1;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  sqlite3_busy_timeout(h, 5000);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT high_water_ms FROM frond_node",
                                      -1, &st, NULL),
                   SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

/* The fence write the fencer sent earlier, committing only now. */
static void late_write(frond_coord *c, int64_t t) {
  frond_error err = {0, ""};
  pthread_mutex_lock(&c->lock);
  assert_int_equal(c->m->xFence(c, t, &err), 0); /* our token: it lands */
  pthread_mutex_unlock(&c->lock);
}

/* Every ID g issues until it must wait for the clock, into out (up to
** max); returns how many. */
static int drain(frond_gen *g, int64_t *out, int max) {
  int n = 0;
  while (n < max && frond_gen_next(g, &out[n], NULL) == 0)
    n++;
  return n;
}

static int cmp_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* How many of b[0..nb) are in a[0..na) (a sorted here). */
static int same_ids(int64_t *a, int na, const int64_t *b, int nb) {
  int same = 0;
  qsort(a, (size_t)na, sizeof(int64_t), cmp_id);
  for (int i = 0; i < nb; i++)
    same += bsearch(&b[i], a, (size_t)na, sizeof(int64_t), cmp_id) != NULL;
  return same;
}

enum { MAX_IDS = 40000 };
static int64_t first_ids[MAX_IDS], next_ids[MAX_IDS];

/* a's fencer sends t1; the statement is held up and the answer never
** comes; a later write of t2 > t1 commits, and a issues up to t2. Then t1
** lands, and a dies. The next holder must start above t2. */
static void test_late_write_after_later(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_coord *a, *b;
  frond_gen *ga, *gb;
  int64_t t0 = frond_clock_realtime(NULL), t1, t2;
  int na, nb, same;
  (void)state;
  snprintf(db, sizeof(db), "%s/lease.db", dir);
  fake_clock_set(&clk, t0);
  a = at(&clk, 1);
  assert_int_equal(create(a, SMALL, NULL, &ga, NULL), 0);
  frond__coord_stop_threads(a); /* the test runs a's fencer's rounds */
  fake_clock_add(&clk, 200);
  t1 = frond__gen_fence_target(ga, frond__coord_now(a), a->t.window_ms);
  fake_clock_add(&clk, 300);
  assert_int_equal(frond__coord_fence_round(a, 1, NULL), 0);
  t2 = stored_fence();
  assert_true(t2 > t1);
  na = drain(ga, first_ids, MAX_IDS);
  assert_true(na > 0);
  assert_true(id_ms(SMALL, first_ids[na - 1]) > t1); /* a borrowed past t1 */
  late_write(a, t1);
  assert_true(stored_fence() >= t2);
  /* a dies; its lease runs out; b takes the row. */
  sql("UPDATE frond_node SET lease_expires = 1");
  fake_clock_set(&clk, t2 - 1000 + 100); /* b may issue above t2 */
  b = at(&clk, 2);
  assert_int_equal(create(b, SMALL, NULL, &gb, NULL), 0);
  frond__coord_stop_threads(b);
  nb = drain(gb, next_ids, MAX_IDS);
  same = same_ids(first_ids, na, next_ids, nb);
  print_message("a issued %d IDs, the next holder %d; %d of them twice\n", na,
                nb, same);
  assert_true(nb > 0);
  assert_int_equal(same, 0);
  assert_true(id_ms(SMALL, next_ids[0]) > t2);
  frond_coord_close(b, NULL);
  frond_coord_close(a, NULL);
  tmpdir_remove(dir);
}

/* a's write of t1 is held up; b takes the row above a's fence, borrows
** ahead and dies; a regains it (above b's fence) and only then does t1
** land, with a's token, the row's again. a dies; the next holder must
** start above b's fence. */
static void test_late_write_after_regain(void **state) {
  char *dir = tmpdir_make();
  fake_clock clk;
  frond_coord *a, *b, *c;
  frond_gen *ga, *gb, *gc;
  int64_t t0 = frond_clock_realtime(NULL), t1, fence_b;
  int nb, nc, same;
  (void)state;
  snprintf(db, sizeof(db), "%s/lease.db", dir);
  fake_clock_set(&clk, t0);
  a = at(&clk, 1);
  assert_int_equal(create(a, SMALL, NULL, &ga, NULL), 0);
  frond__coord_stop_threads(a);
  fake_clock_add(&clk, 200);
  t1 = frond__gen_fence_target(ga, frond__coord_now(a), a->t.window_ms);
  /* a is cut off; b takes the row, issues 600 ms ahead, dies. */
  sql("UPDATE frond_node SET lease_expires = 1");
  fake_clock_add(&clk, 500);
  b = at(&clk, 2);
  assert_int_equal(create(b, SMALL, NULL, &gb, NULL), 0);
  frond__coord_stop_threads(b);
  fence_b = stored_fence();
  nb = drain(gb, first_ids, MAX_IDS);
  assert_true(nb > 0);
  assert_true(id_ms(SMALL, first_ids[0]) <= t1); /* t1 is below b's IDs */
  sql("UPDATE frond_node SET lease_expires = 1");
  /* a's fencer: refused, then the row back, above b's fence. */
  assert_int_equal(frond__coord_fence_round(a, 1, NULL), FROND_ENODE_ID_LOST);
  assert_int_equal(frond__coord_fence_round(a, 1, NULL), 0);
  assert_true(stored_fence() > fence_b);
  late_write(a, t1);
  assert_true(stored_fence() > fence_b);
  /* a dies; c takes the row. */
  sql("UPDATE frond_node SET lease_expires = 1");
  fake_clock_set(&clk, stored_fence() - 1000 + 100);
  c = at(&clk, 3);
  assert_int_equal(create(c, SMALL, NULL, &gc, NULL), 0);
  frond__coord_stop_threads(c);
  nc = drain(gc, next_ids, MAX_IDS);
  same = same_ids(first_ids, nb, next_ids, nc);
  print_message("b issued %d IDs, the holder after a's regain %d; %d of "
                "them twice\n",
                nb, nc, same);
  assert_true(nc > 0);
  assert_int_equal(same, 0);
  assert_true(id_ms(SMALL, next_ids[0]) > fence_b);
  frond_coord_close(c, NULL);
  frond_coord_close(b, NULL);
  frond_coord_close(a, NULL);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_late_write_after_later),
      cmocka_unit_test(test_late_write_after_regain),
  };
  return frond_run_tests(tests, NULL, NULL);
}
