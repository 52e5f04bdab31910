/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_segment_ordered.c -- ordered tags in the library (seg_ordered.c,
** store_sql_ordered.c), two allocators on one SQLite file standing for
** two nodes: one owns the tag and the other is told who (TAG_OWNER,
** frond__seg_ordered_owner); a clean close releases the claim and gives
** the rest back, so the other continues at the next number; an owner
** whose store stops answering stops issuing by its own clock, and issues
** again, above, once it answers; after kill -9 of the owner the other
** claims the tag once it has seen the claim unchanged for a lease, above
** every ID the dead one issued, and never while the owner renews; a claim
** taken again under a new epoch drops the old buffers; an allocator with
** no address never claims; ranges are refused; the
** attribute reads back; a multi: store refuses to create one; the
** parser of a forwarded answer.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include "core/core.h"
#include "core/formats.h"
#include "server/server.h"
#include "store/store.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/frond-ordered-XXXXXX";
static char uri[300], path[200], path2[200], multi[700];

static int setup(void **state) {
  (void)state;
  if (mkdtemp(dir) == NULL)
    return -1;
  snprintf(path, sizeof(path), "%s/t.db", dir);
  snprintf(path2, sizeof(path2), "%s/u.db", dir);
  snprintf(uri, sizeof(uri), "sqlite://%s", path);
  snprintf(multi, sizeof(multi), "multi:sqlite://%s|sqlite://%s", path, path2);
  return 0;
}

static int teardown(void **state) {
  char p[300];
  static const char *const sfx[] = {"", "-wal", "-shm"};
  const char *const files[] = {path, path2};
  size_t i, j;
  (void)state;
  for (j = 0; j < 2; j++)
    for (i = 0; i < 3; i++) {
      snprintf(p, sizeof(p), "%s%s", files[j], sfx[i]);
      unlink(p);
    }
  rmdir(dir);
  return 0;
}

static void quiet(void *ctx, int level, const char *msg) {
  (void)ctx;
  (void)level;
  (void)msg;
}

static void create(const char *tag, int64_t step) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  frond_tag_seq q = {0, 1, 0, 1};
  frond_log_set(quiet, NULL, FROND_LOG_DEBUG);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create_seq(st, tag, step, 1, "", &q, &e), 0);
  q.ordered = 0;
  assert_int_equal(frond_store_tag_seq(st, tag, &q, &e), 0);
  assert_int_equal(q.ordered, 1);
  frond_store_close(st);
}

static frond_seg *node(const char *owner, int64_t lease_ms) {
  frond_seg *s = NULL;
  frond_seg_options o;
  frond_error e = {0, ""};
  frond_seg_options_init(&o);
  o.wait_ms = 2000;
  o.retry_min_ms = 1;
  o.retry_max_ms = 5;
  o.owner = owner;
  o.ordered_lease_ms = lease_ms;
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  return s;
}

/* The owner the store records (frond_store_tag_owner). */
static void recorded(const char *tag, const char *want, int64_t epoch) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  char got[300];
  int64_t ep = -1;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_owner(st, tag, got, sizeof(got), &ep, &e),
                   0);
  assert_string_equal(got, want);
  assert_int_equal(ep, epoch);
  frond_store_close(st);
}

/* Whether the store records owner for tag now. */
static int recorded_is(const char *tag, const char *owner) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  char got[300] = "";
  int64_t ep;
  int rc;
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  rc = frond_store_tag_owner(st, tag, got, sizeof(got), &ep, &e);
  frond_store_close(st);
  return rc == 0 && strcmp(got, owner) == 0;
}

static int next(frond_seg *s, const char *tag, int64_t *id, frond_error *e) {
  return frond_seg_next(s, tag, strlen(tag), id, e);
}

/* A take refused because the store confirmed this node's claim after
** its deadline (lease - lease / 10 from the claim's start): what a loaded
** machine does to a store call, not what a test looks for. Said on
** stderr, so that it shows in the test's log. */
static int late_claim(int rc, const frond_error *e) {
  if (rc != FROND_ESEGMENT_UNAVAILABLE ||
      strstr(e->message, "not confirmed by the store") == NULL)
    return 0;
  fprintf(stderr, "  (claim confirmed late, asked again: %s)\n", e->message);
  return 1;
}

/* One ID of tag, asked for again rather than failing a test on the
** timing (what a test times comes after), for at most 60 s in all:
**   - 2 ms apart while another node's claim is live (TAG_OWNER), when
**     wait_owner (a take-over);
**   - at once after a refusal for this node's own claim confirmed late,
**     when the call took the claim's deadline at least: the claim began
**     after the call did, so a shorter call is no late claim but a fault.
** *claimed (may be NULL): when the first take not refused with TAG_OWNER
** returned, by which this node had made any claim of its own. */
static int take(frond_seg *s, const char *tag, int64_t lease_ms, int wait_owner,
                int64_t *id, frond_error *e, int64_t *claimed) {
  int64_t t0 = frond__mono_ns(), t1, t2;
  int rc;
  for (;;) {
    t1 = frond__mono_ns();
    rc = next(s, tag, id, e);
    t2 = frond__mono_ns();
    if (t2 - t0 > 60000000000LL)
      return rc;
    if (rc == FROND_ETAG_OWNER && wait_owner) {
      usleep(2000);
      continue;
    }
    if (claimed != NULL && *claimed == 0)
      *claimed = t2;
    if (t2 - t1 < (lease_ms - lease_ms / 10) * 1000000LL || !late_claim(rc, e))
      return rc;
  }
}

/* A tag's first take: its claim and first segment come from the store. */
static int first(frond_seg *s, const char *tag, int64_t lease_ms, int64_t *id,
                 frond_error *e) {
  return take(s, tag, lease_ms, 0, id, e, NULL);
}

/* One owner; the other is told who it is, and issues nothing. */
static void test_one_owner(void **state) {
  frond_seg *a, *b;
  frond_error e = {0, ""};
  char who[300];
  int64_t id, last = 0, start;
  int i, rc;
  (void)state;
  create("o1", 100);
  a = node("127.0.0.1:1001", 3000);
  b = node("127.0.0.1:1002", 3000);
  assert_int_equal(first(a, "o1", 3000, &last, &e), 0);
  for (i = 1; i < 250; i++) { /* across segments: still increasing */
    assert_int_equal(next(a, "o1", &id, &e), 0);
    assert_true(id > last);
    last = id;
  }
  assert_int_equal(next(b, "o1", &id, &e), FROND_ETAG_OWNER);
  assert_non_null(strstr(e.message, "127.0.0.1:1001"));
  recorded("o1", "127.0.0.1:1001", 1);
  assert_int_equal(frond__seg_ordered_owner(b, "o1", 2, who, sizeof(who)), 0);
  assert_string_equal(who, "127.0.0.1:1001");
  assert_int_equal(frond__seg_ordered_owner(a, "o1", 2, who, sizeof(who)), -1);
  /* Told again without a store call, and still refused. */
  assert_int_equal(next(b, "o1", &id, &e), FROND_ETAG_OWNER);
  /* No range: a client would hand it out after later IDs. */
  assert_int_equal(frond_seg_range(a, "o1", 2, 10, &start, &e), FROND_EINVAL);
  assert_non_null(strstr(e.message, "ordered"));
  /* A clean close releases the claim and gives the rest back: the other
  ** claims once it asks the store again (a server asks at once when the
  ** owner stops answering its forwarded calls) and goes on at the next
  ** number. */
  frond_seg_close(a);
  frond__seg_ordered_forget(b, "o1", 2);
  for (i = 0; (rc = next(b, "o1", &id, &e)) == FROND_ETAG_OWNER && i < 500; i++)
    usleep(2000);
  assert_int_equal(rc, 0);
  assert_int_equal(id, last + 1);
  recorded("o1", "127.0.0.1:1002", 2);
  frond_seg_close(b);
  recorded("o1", "", 2); /* released */
}

static atomic_int fail_ordered; /* the store's renewals and takes fail */

static int fault(frond_store *st, const char *op) {
  (void)st;
  return atomic_load(&fail_ordered) &&
                 (strcmp(op, "ordered") == 0 || strcmp(op, "alloc") == 0)
             ? FROND_ESTORE
             : 0;
}

/* The owner's store stops answering: it stops issuing by its own clock
** within its lease (less a tenth) of its last renewal, and issues again,
** above, once the store answers. */
static void test_lapse_and_regain(void **state) {
  frond_seg *a;
  frond_error e = {0, ""};
  int64_t id, last = 0, t0, t;
  int rc, i;
  (void)state;
  create("o2", 10000000);
  a = node("127.0.0.1:1001", 600);
  assert_int_equal(first(a, "o2", 600, &last, &e), 0);
  for (i = 1; i < 10; i++) {
    assert_int_equal(next(a, "o2", &id, &e), 0);
    last = id;
  }
  t0 = frond__mono_ns();
  atomic_store(&fail_ordered, 1);
  atomic_store(&frond__store_fault, fault);
  for (;;) { /* a issues until its deadline (lease - lease / 10) */
    t = frond__mono_ns();
    if ((rc = next(a, "o2", &id, &e)) != 0)
      break;
    /* The call began before the check, which came before the deadline:
    ** at most 540 ms after the last renewal, which came before t0. */
    assert_true(t - t0 < 540000000LL);
    assert_true(id > last);
    last = id;
  }
  assert_int_equal(rc, FROND_ESEGMENT_UNAVAILABLE);
  /* Its buffers hold millions of IDs: none is issued past the
  ** deadline, however long the store stays away. */
  usleep(600000);
  assert_int_equal(next(a, "o2", &id, &e), FROND_ESEGMENT_UNAVAILABLE);
  atomic_store(&frond__store_fault, NULL);
  atomic_store(&fail_ordered, 0);
  for (i = 0; (rc = next(a, "o2", &id, &e)) != 0 && i < 500; i++)
    usleep(2000);
  assert_int_equal(rc, 0);
  assert_true(id > last);
  frond_seg_close(a);
}

/* kill -9 of the owner (a child process): its claim stays, and the other
** claims it only once it has seen it unchanged for a whole lease by its
** own clock; then above every ID the dead owner issued. */
static void test_kill9_take_over(void **state) {
  frond_seg *b;
  frond_error e = {0, ""};
  int64_t id, last = 0, seen, t;
  int fds[2], i, status;
  pid_t pid, parent = getpid();
  (void)state;
  create("o3", 1000);
  assert_int_equal(pipe(fds), 0);
  if ((pid = fork()) == 0) { /* the owner: a few IDs, then wait to die */
    frond_seg *a;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(4); /* dies with the test, however it ends */
    a = node("127.0.0.1:1001", 600);
    if (first(a, "o3", 600, &id, &e) != 0)
      _exit(2);
    for (i = 1; i < 10; i++)
      if (next(a, "o3", &id, &e) != 0)
        _exit(2);
    if (write(fds[1], &id, sizeof(id)) != (ssize_t)sizeof(id))
      _exit(3);
    for (;;)
      pause();
  }
  close(fds[1]); /* a child that exits is an end of file, not a hang */
  assert_true(pid > 0);
  assert_int_equal(read(fds[0], &last, sizeof(last)), (ssize_t)sizeof(last));
  b = node("127.0.0.1:1002", 600);
  seen = frond__mono_ns(); /* before b first sees the claim */
  assert_int_equal(next(b, "o3", &id, &e), FROND_ETAG_OWNER);
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  t = 0;
  assert_int_equal(take(b, "o3", 600, 1, &id, &e, &t), 0);
  assert_true(id > last);
  /* Never before a whole lease since b first saw the claim (t: when the
  ** take that claimed returned): the owner may have renewed it until the
  ** kill, and b counts from its sighting of the last renewal, which is
  ** later still. */
  assert_true(t - seen >= 600000000LL);
  frond_seg_close(b);
  close(fds[0]);
}

/* A live owner renews its claim: another that saw the claim a lease ago
** must not take it, since the renewal mark has moved since (the epoch
** alone is the same). */
static void test_renewed_claim_kept(void **state) {
  frond_seg *a, *b;
  frond_error e = {0, ""};
  int64_t id, last = 0, t0;
  (void)state;
  create("o4", 1000000);
  a = node("127.0.0.1:1001", 600);
  b = node("127.0.0.1:1002", 600);
  assert_int_equal(first(a, "o4", 600, &id, &e), 0);
  assert_int_equal(next(b, "o4", &id, &e), FROND_ETAG_OWNER); /* sighting */
  /* a keeps issuing for well over a lease: its renewals go through. */
  t0 = frond__mono_ns();
  while (frond__mono_ns() - t0 < 1000000000LL) {
    assert_int_equal(next(a, "o4", &id, &e), 0);
    assert_true(id > last);
    last = id;
    usleep(1000);
  }
  /* b asks the store again (its cache of the holder has run out): the
  ** claim's epoch is the one it saw a second ago, its mark is not. */
  assert_int_equal(next(b, "o4", &id, &e), FROND_ETAG_OWNER);
  assert_int_equal(next(a, "o4", &id, &e), 0);
  assert_true(id > last);
  frond_seg_close(b);
  frond_seg_close(a);
}

/* The store fails this allocator's connections only (recorded while it
** alone ran): what a partition of one node does. */
static frond_store *cut[8];
static atomic_int ncut, recording, cutting;

/* cutting: 1 cuts every operation of the recorded connections, 2 their
** renewals only ("ordered"; a take is "alloc"). */
static int cut_fault(frond_store *st, const char *op) {
  int i, n = atomic_load(&ncut), how;
  if (atomic_load(&recording)) {
    for (i = 0; i < n && cut[i] != st; i++)
      ;
    if (i == n && n < 8 && atomic_compare_exchange_strong(&ncut, &n, n + 1))
      cut[n] = st;
    return 0;
  }
  if ((how = atomic_load(&cutting)) == 0 ||
      (how == 2 && strcmp(op, "ordered") != 0))
    return 0;
  for (i = 0; i < n; i++)
    if (cut[i] == st)
      return FROND_ESTORE;
  return 0;
}

/* An owner partitioned while its loader retries a take, with no call in
** between; another takes the tag over, issues, and stops cleanly; the
** first's retried take then claims the tag again under a new epoch: it
** must drop what its buffers held (below the other's IDs). */
static void test_new_epoch_drops_buffers(void **state) {
  frond_seg *a, *b;
  frond_seg_options o;
  frond_error e = {0, ""};
  int64_t id, b_last = 0;
  int i;
  (void)state;
  create("o5", 100);
  frond_seg_options_init(&o);
  o.wait_ms = 2000;
  o.retry_min_ms = 1;
  o.retry_max_ms = 5;
  o.loaders = 1;
  o.owner = "127.0.0.1:1001";
  o.ordered_lease_ms = 600;
  atomic_store(&recording, 1);
  atomic_store(&frond__store_fault, cut_fault);
  assert_int_equal(frond_seg_open(&a, uri, &o, &e), 0);
  /* the loader's own connection is made */
  assert_int_equal(first(a, "o5", 600, &id, &e), 0);
  for (i = 1; i < 5; i++)
    assert_int_equal(next(a, "o5", &id, &e), 0);
  atomic_store(&recording, 0);
  atomic_store(&cutting, 1);
  /* Past the preload point: a load is asked for, fails, and is retried
  ** by the loader; a has 90 IDs left in its buffer, and no call. */
  for (i = 0; i < 10; i++)
    assert_int_equal(next(a, "o5", &id, &e), 0);
  b = node("127.0.0.1:1002", 600);
  assert_int_equal(take(b, "o5", 600, 1, &id, &e, NULL), 0);
  for (i = 0; i < 5; i++) {
    assert_int_equal(next(b, "o5", &id, &e), 0);
    b_last = id;
  }
  frond_seg_close(b); /* released: a's retry claims it at once */
  /* Takes pass, renewals stay cut: a renewal would be told the claim was
  ** taken over, and drop the buffers (and the retry) before the take. No
  ** call on a until its loader has claimed the tag again (a call before
  ** would find its old claim run out, and drop the buffers). */
  atomic_store(&cutting, 2);
  for (i = 0; i < 20000 && !recorded_is("o5", "127.0.0.1:1001"); i++)
    usleep(1000);
  assert_true(recorded_is("o5", "127.0.0.1:1001"));
  atomic_store(&cutting, 0);
  assert_int_equal(next(a, "o5", &id, &e), 0);
  assert_true(id > b_last);
  atomic_store(&frond__store_fault, NULL);
  atomic_store(&ncut, 0);
  frond_seg_close(a);
}

/* An allocator with no address never claims an ordered tag, and a seq
** format cannot number periods from one. */
static void test_no_address_no_claim(void **state) {
  frond_seg *s;
  frond_seg_options o;
  frond_error e = {0, ""};
  int64_t id;
  (void)state;
  create("o6", 100);
  frond_seg_options_init(&o);
  o.wait_ms = 2000;
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  assert_int_equal(next(s, "o6", &id, &e), FROND_ETAG_OWNER);
  assert_non_null(strstr(e.message, "frond server"));
  recorded("o6", "", 0);
  assert_int_equal(frond__seg_period_tag(s, "o6", "o6:20261129", 100, &e),
                   FROND_EINVAL);
  assert_non_null(strstr(e.message, "ordered"));
  frond_seg_close(s);
}

static void test_multi_refused(void **state) {
  frond_store *st = NULL;
  frond_error e = {0, ""};
  frond_tag_seq q = {0, 1, 0, 1};
  char got[300];
  int64_t ep;
  (void)state;
  /* A plain tag has no owner to read. */
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "plain", 100, 1, "", &e), 0);
  assert_int_equal(
      frond_store_tag_owner(st, "plain", got, sizeof(got), &ep, &e),
      FROND_EINVAL);
  assert_non_null(strstr(e.message, "not ordered"));
  frond_store_close(st);
  assert_int_equal(frond_store_open(&st, multi, &e), 0);
  assert_int_equal(frond_store_tag_create_seq(st, "m", 100, 1, "", &q, &e),
                   FROND_EINVAL);
  assert_non_null(strstr(e.message, "one database"));
  frond_store_close(st);
}

static void test_forward_parse(void **state) {
  frond_error e = {0, ""};
  int64_t out[3];
  (void)state;
  assert_int_equal(frond__forward_parse("5\n6\n9\n", 6, 3, out, &e), 0);
  assert_int_equal(out[0], 5);
  assert_int_equal(out[2], 9);
  assert_int_equal(frond__forward_parse("5\r\n6\r\n", 6, 2, out, &e), 0);
  assert_int_equal(frond__forward_parse("5\n6\n", 4, 3, out, &e),
                   FROND_ESTORE); /* fewer */
  assert_int_equal(frond__forward_parse("5\n6\n7\n", 6, 2, out, &e),
                   FROND_ESTORE); /* more */
  assert_int_equal(frond__forward_parse("6\n5\n", 4, 2, out, &e),
                   FROND_ESTORE); /* not increasing */
  assert_int_equal(frond__forward_parse("5x\n", 3, 1, out, &e), FROND_ESTORE);
  assert_int_equal(
      frond__forward_parse("99999999999999999999\n", 21, 1, out, &e),
      FROND_ESTORE);
  assert_int_equal(frond__forward_parse("", 0, 1, out, &e), FROND_ESTORE);
  /* An owner's error answer names its code. */
#define ERR(s) frond__forward_error(s, strlen(s))
  assert_int_equal(ERR("{\"error\":{\"code\":\"TAG_OWNER\",\"message\":"
                       "\"x\"}}"),
                   FROND_ETAG_OWNER);
  assert_int_equal(ERR("{\"error\":{\"code\":\"SEGMENT_UNAVAILABLE\"}}"),
                   FROND_ESEGMENT_UNAVAILABLE);
  assert_int_equal(ERR("{\"error\":{\"code\":\"NO_SUCH\"}}"), 0);
  assert_int_equal(ERR("{\"error\":{\"code\":\"TAG_OWNER"), 0);
  assert_int_equal(ERR("<html>bad gateway</html>"), 0);
#undef ERR
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_owner),
      cmocka_unit_test(test_lapse_and_regain),
      cmocka_unit_test(test_kill9_take_over),
      cmocka_unit_test(test_renewed_claim_kept),
      cmocka_unit_test(test_new_epoch_drops_buffers),
      cmocka_unit_test(test_no_address_no_claim),
      cmocka_unit_test(test_multi_refused),
      cmocka_unit_test(test_forward_parse),
  };
  return frond_run_tests(tests, setup, teardown);
}
