/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_gen_fork.c -- a snowflake generator after fork(): the child has the
** parent's node ID and state word, so every call there must fail with
** FORKED and issue nothing, while the parent goes on; the child can still
** make a generator of its own. Forks of every kind: fork(), and _Fork()
** and the raw system call, which run no pthread_atfork handler.
*/
#include "gen_util.h"
#include "base/fork.h"
#include "core/high_water.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 2000

/* What the child saw, one bit per check that failed (0: all held). */
enum {
  C_NEXT = 1,    /* frond_gen_next did not fail with FORKED */
  C_NEXT_N = 2,  /* frond_gen_next_n did not fail with FORKED */
  C_MESSAGE = 4, /* the message does not say what happened */
  C_STATS = 8,   /* stats do not show FORKED */
  C_CLOSE = 16   /* closing the child's copy failed */
};

/* The child: only what a refusal needs, so that it takes no lock the
** parent's threads may have held at the fork (the sanitizers' allocator
** among them). Closing frees memory: only after fork(), which makes the
** allocator safe to use in the child. */
static int child(frond_gen *g, int fd, int how) {
  int64_t ids[N], id = -1;
  frond_error err = {0, ""};
  frond_gen_stats st;
  int bad = 0, rc;
  rc = frond_gen_next_n(g, N, ids, &err);
  if (rc == 0) /* what the parent issues too: let it count them */
    (void)!write(fd, ids, sizeof(ids));
  if (rc != FROND_EFORKED)
    bad |= C_NEXT_N;
  if (!strstr(err.message, "fork()") || !strstr(err.message, "node 3"))
    bad |= C_MESSAGE;
  if (frond_gen_next(g, &id, NULL) != FROND_EFORKED)
    bad |= C_NEXT;
  frond_gen_stats_get(g, &st);
  if (st.last_error != FROND_EFORKED)
    bad |= C_STATS;
  if (how == BY_FORK && frond_gen_close(g, NULL) != 0)
    bad |= C_CLOSE;
  close(fd);
  return bad;
}

/* Parent and child issue N IDs each from one generator after the fork, on
** a frozen clock (so the parent's clock thread does not move the state
** word meanwhile): a child that issued would repeat the parent's IDs one
** for one. None repeats; the child was refused on every call. */
static void fork_refused(int how) {
  char *dir = tmpdir_make(), path[600];
  int64_t ids[N], theirs[N], last, id;
  frond_gen_options o;
  frond_gen *g = NULL;
  fake_clock c;
  frond_error err = {0, ""};
  ssize_t got = 0, n;
  int fds[2], st = 0, dups = 0;
  pid_t pid;
  assert_int_equal(frond__hw_path(path, sizeof(path), dir, 3), 0);
  fake_clock_set(&c, T0);
  o = fake_options(&c, FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS, -1);
  o.high_water_path = path;
  if (frond_gen_create(&g, twitter(), 3, &o, &err) != 0)
    fail_msg("create: %s", err.message);
  assert_int_equal(frond_gen_next(g, &last, NULL), 0);
  assert_int_equal(pipe(fds), 0);
  pid = fork_by(how);
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    _exit(child(g, fds[1], how));
  }
  close(fds[1]);
  assert_int_equal(frond_gen_next_n(g, N, ids, &err), 0);
  while ((n = read(fds[0], (char *)theirs + got, sizeof(theirs) - got)) > 0)
    got += n;
  close(fds[0]);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  for (ssize_t i = 0; i < got / (ssize_t)sizeof(int64_t); i++)
    for (int k = 0; k < N; k++)
      dups += theirs[i] == ids[k];
  if (dups)
    fail_msg("%d of the child's IDs were the parent's too", dups);
  assert_int_equal(got, 0);
  assert_true(WIFEXITED(st));
  if (WEXITSTATUS(st) != 0)
    fail_msg("the child: checks failed, bits 0x%x", WEXITSTATUS(st));
  /* The child's close left the parent's lock on the node's file alone. */
  {
    frond__hw *hw = NULL;
    assert_int_equal(frond__hw_open(&hw, path, &err), FROND_ENODE_IN_USE);
    assert_null(hw);
  }
  /* The parent goes on, above what it issued, and closes cleanly. */
  assert_true(ids[0] > last);
  assert_int_equal(frond_gen_next(g, &id, NULL), 0);
  assert_true(id > ids[N - 1]);
  assert_int_equal(frond_gen_close(g, NULL), 0);
  tmpdir_remove(dir);
}

static void test_fork_refused(void **state) {
  (void)state;
  fork_refused(BY_FORK);
}

/* Every fork is caught only where the kernel wipes the key's page. */
static void need_wipe(void) {
  if (!frond__fork_wipes())
    fail_msg("this kernel refuses MADV_WIPEONFORK (before Linux 4.14, or a "
             "seccomp filter): only fork() is caught here");
}

/* _Fork() and the raw system call skip pthread_atfork: the key's page,
** wiped by the kernel in the child, still tells. */
static void test_underscore_fork_refused(void **state) {
  (void)state;
  need_wipe();
  fork_refused(BY_UNDERSCORE_FORK);
}

static void test_syscall_fork_refused(void **state) {
  (void)state;
  need_wipe();
  fork_refused(BY_SYSCALL);
}

/* A generator created in the child after the fork is the child's own: it
** issues, and closes with its record written. The parent has no thread
** running at the fork here. */
static void test_created_after_fork(void **state) {
  char *dir = tmpdir_make(), path[600];
  frond__hw *hw = NULL;
  frond__hw_record rec;
  pid_t pid;
  int st = 0;
  (void)state;
  assert_int_equal(frond__hw_path(path, sizeof(path), dir, 9), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    frond_gen_options o;
    frond_gen *g = NULL;
    int64_t id;
    int ok;
    frond_gen_options_init(&o);
    o.high_water_path = path;
    ok = frond_gen_create(&g, twitter(), 9, &o, NULL) == 0 &&
         frond_gen_next(g, &id, NULL) == 0 && frond_gen_close(g, NULL) == 0;
    _exit(ok ? 0 : 1);
  }
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  assert_int_equal(frond__hw_open(&hw, path, NULL), 0);
  assert_int_equal(frond__hw_read(hw, &rec, NULL), 0);
  assert_int_equal(rec.clean, 1);
  frond__hw_close(hw);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fork_refused),
      cmocka_unit_test(test_underscore_fork_refused),
      cmocka_unit_test(test_syscall_fork_refused),
      cmocka_unit_test(test_created_after_fork),
  };
  return frond_run_tests(tests, NULL, NULL);
}
