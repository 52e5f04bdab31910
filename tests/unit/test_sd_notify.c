/*
** test_sd_notify.c -- the sd_notify(3) protocol against a fake
** NOTIFY_SOCKET (a path and an abstract name), its failures, and the
** watchdog's environment.
*/
#include "testutil.h"

#include "base/sd_notify.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A datagram socket standing in for systemd's notify socket. */
typedef struct fake_systemd {
  int fd;
  char *dir;
  char addr[108];
} fake_systemd;

static void fake_open(fake_systemd *f, int abstract) {
  struct sockaddr_un sa;
  socklen_t len;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  f->dir = tmpdir_make();
  if (abstract) {
    snprintf(f->addr, sizeof f->addr, "@frond-test-notify-%d", (int)getpid());
    memcpy(sa.sun_path + 1, f->addr + 1, strlen(f->addr) - 1);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(f->addr));
  } else {
    snprintf(f->addr, sizeof f->addr, "%s/notify", f->dir);
    memcpy(sa.sun_path, f->addr, strlen(f->addr));
    len = (socklen_t)sizeof sa;
  }
  f->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(f->fd >= 0);
  assert_int_equal(bind(f->fd, (struct sockaddr *)&sa, len), 0);
  setenv("NOTIFY_SOCKET", f->addr, 1);
}

/* The next datagram, or "" when none is waiting. */
static void fake_recv(fake_systemd *f, char *buf, size_t cap) {
  ssize_t n = recv(f->fd, buf, cap - 1, MSG_DONTWAIT);
  buf[n < 0 ? 0 : n] = '\0';
}

static void fake_close(fake_systemd *f) {
  close(f->fd);
  tmpdir_remove(f->dir);
  unsetenv("NOTIFY_SOCKET");
}

static void messages_in_order(int abstract) {
  fake_systemd f;
  char buf[8192];
  fake_open(&f, abstract);
  assert_int_equal(
      frond__sd_notifyf("READY=1\nSTATUS=node %d, layout %s", 7, "frond"), 1);
  assert_int_equal(frond__sd_notify("WATCHDOG=1"), 1);
  assert_int_equal(frond__sd_notify("STOPPING=1\nSTATUS=draining"), 1);
  fake_recv(&f, buf, sizeof buf);
  assert_string_equal(buf, "READY=1\nSTATUS=node 7, layout frond");
  fake_recv(&f, buf, sizeof buf);
  assert_string_equal(buf, "WATCHDOG=1");
  fake_recv(&f, buf, sizeof buf);
  assert_string_equal(buf, "STOPPING=1\nSTATUS=draining");
  fake_recv(&f, buf, sizeof buf);
  assert_string_equal(buf, "");
  fake_close(&f);
}

static void test_path_socket(void **state) {
  (void)state;
  messages_in_order(0);
}

static void test_abstract_socket(void **state) {
  (void)state;
  messages_in_order(1);
}

static void test_long_status(void **state) {
  fake_systemd f;
  char big[6000], buf[8192];
  (void)state;
  fake_open(&f, 0);
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  /* Cut at 4 KiB, still one datagram. */
  assert_int_equal(frond__sd_notifyf("STATUS=%s", big), 1);
  fake_recv(&f, buf, sizeof buf);
  assert_int_equal(strlen(buf), 4095);
  assert_memory_equal(buf, "STATUS=xxx", 10);
  fake_close(&f);
}

static void test_not_under_systemd(void **state) {
  (void)state;
  unsetenv("NOTIFY_SOCKET");
  assert_int_equal(frond__sd_notify("READY=1"), 0);
  setenv("NOTIFY_SOCKET", "", 1);
  assert_int_equal(frond__sd_notify("READY=1"), 0);
  unsetenv("NOTIFY_SOCKET");
}

static void test_bad_socket(void **state) {
  char *dir = tmpdir_make(), path[700], longp[200];
  (void)state;
  /* Set but unusable: a failure the caller can log, not a crash. */
  snprintf(path, sizeof path, "%s/nobody-listens", dir);
  setenv("NOTIFY_SOCKET", path, 1);
  assert_int_equal(frond__sd_notify("READY=1"), -ENOENT);
  setenv("NOTIFY_SOCKET", "relative/path", 1);
  assert_int_equal(frond__sd_notify("READY=1"), -EINVAL);
  memset(longp, 'a', sizeof longp - 1);
  longp[0] = '/';
  longp[sizeof longp - 1] = '\0';
  setenv("NOTIFY_SOCKET", longp, 1);
  assert_int_equal(frond__sd_notify("READY=1"), -EINVAL);
  unsetenv("NOTIFY_SOCKET");
  tmpdir_remove(dir);
}

static void test_watchdog_env(void **state) {
  char pid[32];
  (void)state;
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  assert_int_equal(frond__sd_watchdog_usec(), 0);
  setenv("WATCHDOG_USEC", "2000000", 1);
  assert_int_equal(frond__sd_watchdog_usec(), 2000000);
  setenv("WATCHDOG_PID", pid, 1);
  assert_int_equal(frond__sd_watchdog_usec(), 2000000);
  /* Meant for another process (a parent whose environment we inherited). */
  setenv("WATCHDOG_PID", "1", 1);
  assert_int_equal(frond__sd_watchdog_usec(), 0);
  setenv("WATCHDOG_PID", "x", 1);
  assert_int_equal(frond__sd_watchdog_usec(), 0);
  unsetenv("WATCHDOG_PID");
  {
    static const char *const bad[] = {
        "", "0", "-5", "10s", " 5", "x", "99999999999999999999"};
    for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
      setenv("WATCHDOG_USEC", bad[i], 1);
      if (frond__sd_watchdog_usec() != 0)
        fail_msg("WATCHDOG_USEC='%s' taken as a period", bad[i]);
    }
  }
  unsetenv("WATCHDOG_USEC");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_path_socket),
      cmocka_unit_test(test_abstract_socket),
      cmocka_unit_test(test_long_status),
      cmocka_unit_test(test_not_under_systemd),
      cmocka_unit_test(test_bad_socket),
      cmocka_unit_test(test_watchdog_env),
  };
  return frond_run_tests(tests, NULL, NULL);
}
