/* SPDX-License-Identifier: Apache-2.0 */
/*
** bindshim.c -- make a process bind another port than the one it was given.
**
** This file contains a small LD_PRELOAD library for the fault-injection
** suite. A Frond node is known to ZooKeeper by the ip:port it listens on.
** In a real fleet, a second process with the same identity appears when a
** host's address moves to another machine (a floating IP, a rescheduled
** container) while the first process still runs somewhere. On one machine
** two processes cannot listen on one port, so the suite starts the second
** one with this library preloaded: the server believes it listens on
** 127.0.0.1:FROM, and so registers that identity, while its sockets are
** really bound to 127.0.0.1:TO, where the suite's clients reach it. It is to
** ports what libfaketime is to clocks.
**
**   LD_PRELOAD=libchaos_bindshim.so CHAOS_BIND_FROM=8080 CHAOS_BIND_TO=18080
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  static bind_fn real;
  const char *from = getenv("CHAOS_BIND_FROM"), *to = getenv("CHAOS_BIND_TO");
  if (!real)
    real = (bind_fn)dlsym(RTLD_NEXT, "bind");
  if (from && to && addr && addr->sa_family == AF_INET &&
      len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    if (ntohs(in.sin_port) == (unsigned)atoi(from)) {
      in.sin_port = htons((unsigned short)atoi(to));
      return real(fd, (const struct sockaddr *)&in, sizeof in);
    }
  }
  return real(fd, addr, len);
}
