/* SPDX-License-Identifier: Apache-2.0 */
/*
** listen.c -- the listening sockets: bound on each worker with
** SO_REUSEPORT, probed at start-up, and the endpoints' ports checked
** against each other (plain and TLS alike).
*/
#include "server/server.h"

#include "base/base.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bind (and with `reuseport`, listen on) a socket on a's address.
** SO_REUSEPORT lets every worker have its own. */
static int bind_socket(const frond__addr *a, int reuseport, frond_error *err) {
  struct sockaddr_storage ss;
  socklen_t sl;
  int fd, one = 1;
  memset(&ss, 0, sizeof ss);
  if (strchr(a->host, ':') != NULL) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)a->port);
    if (inet_pton(AF_INET6, a->host, &s6->sin6_addr) != 1)
      goto bad_host;
    sl = sizeof *s6;
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)a->port);
    if (inet_pton(AF_INET, a->host, &s4->sin_addr) != 1)
      goto bad_host;
    sl = sizeof *s4;
  }
  fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    frond__fail(err, FROND_EIO, "socket: %s", strerror(errno));
    return -1;
  }
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      (reuseport &&
       setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) ||
      bind(fd, (struct sockaddr *)&ss, sl) != 0 ||
      (reuseport && listen(fd, 1024) != 0)) {
    frond__fail(err, FROND_EIO, "listen on %s:%d: %s", a->host, a->port,
                strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
bad_host:
  frond__fail(err, FROND_EINVAL, "listen: '%s' is not a numeric IP address",
              a->host);
  return -1;
}

int frond__listen_probe(const frond__addr *a, frond_error *err) {
  /* Without SO_REUSEPORT this bind fails while anyone listens on the
  ** port, including another frond whose sockets would otherwise share
  ** the port with ours and split its traffic. */
  int fd = bind_socket(a, 0, err);
  if (fd < 0)
    return err != NULL ? err->code : FROND_EIO;
  close(fd);
  return 0;
}

int frond__listen_socket(const frond__addr *a, frond_error *err) {
  /* libuv 1.44 has no UV_TCP_REUSEPORT: set it before bind ourselves. */
  return bind_socket(a, 1, err);
}

int frond__endpoints_check(const frond__endpoint *ep, int n, frond_error *err) {
  int i, j;
  for (i = 0; i < n; i++)
    for (j = 0; j < i && ep[i].addr.port != 0; j++)
      if (ep[j].addr.port == ep[i].addr.port)
        return frond__fail(err, FROND_EINVAL,
                           "%s %s and %s %s use the same port", ep[i].key,
                           ep[i].text, ep[j].key, ep[j].text);
  return 0;
}
