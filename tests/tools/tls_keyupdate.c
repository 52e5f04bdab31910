/* SPDX-License-Identifier: Apache-2.0 */
/*
** tls_keyupdate.c -- a TLS 1.3 client that asks for key updates and never
** reads, for test_tls.py's memory check.
**
**   tls_keyupdate PORT N
**
** Connects to 127.0.0.1:PORT (the server's certificate is not checked:
** this client attacks, it trusts nothing it is told), then sends up to N
** KeyUpdate messages with update_requested, each of which makes the
** server queue a KeyUpdate of its own, and reads nothing. It stops early
** when the socket has taken nothing for 3 s (the server stopped reading)
** or the server closed the connection. Prints "sent K" on stdout, then
** holds the connection open until its stdin is closed. Exit status 0, or 1 with the failure on stderr.
*/
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int die(const char *what) {
  fprintf(stderr, "tls_keyupdate: %s\n", what);
  ERR_print_errors_fp(stderr);
  return 1;
}

int main(int argc, char **argv) {
  struct sockaddr_in a = {0};
  SSL_CTX *ctx;
  SSL *s;
  long n, i;
  int fd;
  char c;

  if (argc != 3)
    return die("usage: tls_keyupdate PORT N");
  n = atol(argv[2]);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)atoi(argv[1]));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
      connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
    return die("cannot connect");
  if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
      SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      (s = SSL_new(ctx)) == NULL || SSL_set_fd(s, fd) != 1 ||
      SSL_connect(s) != 1)
    return die("no TLS 1.3 handshake");
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  for (i = 0; i < n; i++) {
    int r;
    if (SSL_key_update(s, SSL_KEY_UPDATE_REQUESTED) != 1)
      return die("SSL_key_update");
    while ((r = SSL_do_handshake(s)) != 1) {
      struct pollfd p = {fd, POLLOUT, 0};
      if (SSL_get_error(s, r) != SSL_ERROR_WANT_WRITE || poll(&p, 1, 3000) == 0)
        goto stopped; /* the server closed the connection, or stopped reading */
    }
  }
stopped:
  printf("sent %ld\n", i);
  fflush(stdout);
  while (read(0, &c, 1) > 0)
    ;
  SSL_free(s);
  SSL_CTX_free(ctx);
  close(fd);
  return 0;
}
