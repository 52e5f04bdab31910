/*
** sd_notify.c -- the sd_notify(3) datagram protocol (see sd_notify.h).
*/
#include "base/sd_notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A decimal integer > 0 that fills s, or -1. */
static long long positive(const char *s) {
  char *end;
  long long v;
  if (s == NULL || *s < '0' || *s > '9')
    return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || v <= 0)
    return -1;
  return v;
}

int frond__sd_notify(const char *state) {
  const char *path = getenv("NOTIFY_SOCKET");
  struct sockaddr_un sa;
  socklen_t salen;
  size_t plen, len = strlen(state);
  ssize_t n;
  int fd, e;
  if (path == NULL || path[0] == '\0')
    return 0;
  plen = strlen(path);
  /* A path, or "@name": the abstract namespace, where '@' stands for the
  ** leading NUL. */
  if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sa.sun_path))
    return -EINVAL;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path, plen);
  if (path[0] == '@')
    sa.sun_path[0] = '\0';
  salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen +
                      (path[0] == '/'));
  fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;
  do
    n = sendto(fd, state, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
  while (n < 0 && errno == EINTR);
  e = n < 0 ? -errno : (size_t)n != len ? -EMSGSIZE : 1;
  close(fd);
  return e;
}

int frond__sd_notifyf(const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return frond__sd_notify(buf);
}

int64_t frond__sd_watchdog_usec(void) {
  long long usec = positive(getenv("WATCHDOG_USEC"));
  const char *pid = getenv("WATCHDOG_PID");
  if (usec < 0)
    return 0;
  /* WATCHDOG_PID guards a child that inherited the environment from
  ** pinging on its parent's behalf. */
  if (pid != NULL && positive(pid) != (long long)getpid())
    return 0;
  return (int64_t)usec;
}
