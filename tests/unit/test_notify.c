/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_notify.c -- what the server tells systemd, through libsystemd's
** sd_notify, against a fake NOTIFY_SOCKET (a path and an abstract name):
** READY, STATUS and STOPPING with the node and layout, nothing when not
** under systemd, a socket that is gone, the watchdog's period from the
** environment, and WATCHDOG=1 only while every event loop beats.
*/
#include "testutil.h"

#include "server/server.h"

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
static const char *fake_recv(fake_systemd *f, char *buf, size_t cap) {
  ssize_t n = recv(f->fd, buf, cap - 1, MSG_DONTWAIT);
  buf[n < 0 ? 0 : n] = '\0';
  return buf;
}

static void fake_close(fake_systemd *f) {
  close(f->fd);
  tmpdir_remove(f->dir);
  unsetenv("NOTIFY_SOCKET");
}

/* A server as far as notify.c looks at it: node, layout, workers. */
static void server_init(frond__server *srv, frond__worker *w, int n) {
  frond_error err = {0, ""};
  memset(srv, 0, sizeof *srv);
  memset(w, 0, sizeof *w * (size_t)n);
  srv->node = 7;
  assert_int_equal(frond_layout_parse("frond", &srv->layout, &err), 0);
  srv->workers = w;
  srv->nworkers = n;
  srv->watchdog_ms = 2000;
}

static void messages_in_order(int abstract) {
  fake_systemd f;
  frond__server srv;
  frond__worker w[1];
  char buf[8192];
  server_init(&srv, w, 1);
  fake_open(&f, abstract);
  frond__notify_ready(&srv, "ready");
  frond__notify_status(&srv, "not ready: store not reached");
  frond__watchdog_check(&srv, 1000); /* no beat seen yet: none */
  atomic_fetch_add(&w[0].beats, 1);
  frond__watchdog_check(&srv, 2000);
  frond__notify_stopping(&srv, "draining");
  assert_string_equal(fake_recv(&f, buf, sizeof buf),
                      "READY=1\nSTATUS=node 7, layout frond: ready");
  assert_string_equal(
      fake_recv(&f, buf, sizeof buf),
      "STATUS=node 7, layout frond: not ready: store not reached");
  assert_string_equal(fake_recv(&f, buf, sizeof buf), "WATCHDOG=1");
  assert_string_equal(fake_recv(&f, buf, sizeof buf),
                      "STOPPING=1\nSTATUS=node 7, layout frond: draining");
  assert_string_equal(fake_recv(&f, buf, sizeof buf), "");
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

/* What the log sink was given: "<level> <message>\n" each. */
static char logged[4096];

static void log_sink(void *ctx, int level, const char *msg) {
  size_t at = strlen(logged);
  (void)ctx;
  snprintf(logged + at, sizeof logged - at, "%s %s\n",
           frond_log_level_name(level), msg);
}

/* The lines of logged that start with prefix. */
static int lines_starting(const char *prefix) {
  int n = 0;
  for (const char *p = logged; *p; p = strchr(p, '\n') + 1)
    n += strncmp(p, prefix, strlen(prefix)) == 0;
  return n;
}

/* Not under systemd, every call is a no-op: nothing reaches a socket that
** is there but not named, nothing is logged. Its socket gone, each call
** logs one warning naming what was not sent, and returns; named again, the
** socket gets the next message whole. */
static void test_no_socket(void **state) {
  fake_systemd f;
  frond__server srv;
  frond__worker w[1];
  char buf[8192], path[700];
  (void)state;
  server_init(&srv, w, 1);
  fake_open(&f, 0);
  unsetenv("NOTIFY_SOCKET");
  logged[0] = '\0';
  frond_log_set(log_sink, NULL, FROND_LOG_DEBUG);
  frond__notify_ready(&srv, "ready");
  frond__notify_status(&srv, "ready");
  frond__notify_failed("cannot start: IO: nope");
  atomic_fetch_add(&w[0].beats, 1);
  frond__watchdog_check(&srv, 1000);
  frond__notify_stopping(&srv, "draining");
  assert_string_equal(fake_recv(&f, buf, sizeof buf), "");
  assert_string_equal(logged, "");
  snprintf(path, sizeof path, "%s/nobody-listens", f.dir);
  setenv("NOTIFY_SOCKET", path, 1);
  frond__notify_ready(&srv, "ready");
  frond__notify_failed("cannot start: IO: nope");
  frond__notify_stopping(&srv, "draining");
  assert_int_equal(
      lines_starting("warn systemd notify socket: READY=1 not sent: "), 1);
  assert_int_equal(
      lines_starting("warn systemd notify socket: STATUS not sent: "), 1);
  assert_int_equal(
      lines_starting("warn systemd notify socket: STOPPING=1 not sent: "), 1);
  assert_int_equal(lines_starting(""), 3);
  assert_string_equal(fake_recv(&f, buf, sizeof buf), "");
  setenv("NOTIFY_SOCKET", f.addr, 1);
  frond__notify_ready(&srv, "ready");
  assert_string_equal(fake_recv(&f, buf, sizeof buf),
                      "READY=1\nSTATUS=node 7, layout frond: ready");
  assert_int_equal(lines_starting(""), 3);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
  fake_close(&f);
}

static void test_watchdog_env(void **state) {
  char pid[32];
  (void)state;
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  assert_int_equal(frond__watchdog_ms(), 0);
  setenv("WATCHDOG_USEC", "2000000", 1);
  assert_int_equal(frond__watchdog_ms(), 2000);
  setenv("WATCHDOG_PID", pid, 1);
  assert_int_equal(frond__watchdog_ms(), 2000);
  /* Meant for another process (a parent whose environment we inherited). */
  setenv("WATCHDOG_PID", "1", 1);
  assert_int_equal(frond__watchdog_ms(), 0);
  unsetenv("WATCHDOG_PID");
  {
    static const char *const bad[] = {"", "0", "-5", "10s", "x"};
    for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
      setenv("WATCHDOG_USEC", bad[i], 1);
      if (frond__watchdog_ms() != 0)
        fail_msg("WATCHDOG_USEC='%s' taken as a period", bad[i]);
    }
  }
  unsetenv("WATCHDOG_USEC");
}

/* WATCHDOG=1 only when every loop has beaten since the last check: one
** stuck loop among three withholds it, until it beats again. */
static void test_watchdog_every_loop(void **state) {
  fake_systemd f;
  frond__server srv;
  frond__worker w[3];
  char buf[256];
  int i;
  (void)state;
  server_init(&srv, w, 3);
  fake_open(&f, 0);
  for (i = 0; i < 3; i++)
    atomic_fetch_add(&w[i].beats, 1);
  frond__watchdog_check(&srv, 1000);
  assert_string_equal(fake_recv(&f, buf, sizeof buf), "WATCHDOG=1");
  /* Loop 1 is stuck: two checks, no ping. */
  atomic_fetch_add(&w[0].beats, 1);
  atomic_fetch_add(&w[2].beats, 1);
  frond__watchdog_check(&srv, 2000);
  atomic_fetch_add(&w[0].beats, 2);
  atomic_fetch_add(&w[2].beats, 1);
  frond__watchdog_check(&srv, 3000);
  assert_string_equal(fake_recv(&f, buf, sizeof buf), "");
  assert_int_equal(w[1].stalled_ms, 1000);
  /* It runs again. */
  for (i = 0; i < 3; i++)
    atomic_fetch_add(&w[i].beats, 1);
  frond__watchdog_check(&srv, 4000);
  assert_string_equal(fake_recv(&f, buf, sizeof buf), "WATCHDOG=1");
  assert_int_equal(w[1].stalled_ms, 0);
  /* A check with no beat anywhere (the whole process was stopped). */
  frond__watchdog_check(&srv, 5000);
  assert_string_equal(fake_recv(&f, buf, sizeof buf), "");
  fake_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_path_socket),
      cmocka_unit_test(test_abstract_socket),
      cmocka_unit_test(test_no_socket),
      cmocka_unit_test(test_watchdog_env),
      cmocka_unit_test(test_watchdog_every_loop),
  };
  return frond_run_tests(tests, NULL, NULL);
}
