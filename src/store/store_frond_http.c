/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_frond_http.c -- the frond:// store's HTTP/1.1 client: one
** kept-alive connection per store connection, every call within its
** timeout, failover across the servers with jittered backoff.
**
** Written here rather than taken from libcurl: a Frond server answers
** plain HTTP/1.1 with Content-Length, which a page of code reads (the head
** in store_frond_parse.c, fuzzed), and libfrond, which programs link into
** payment paths, then depends on nothing new (libcurl would bring TLS
** libraries, a resolver thread, its global init and signals with it).
**
** The rules, as for a database (db.h): a call that was never sent may go
** to the next server; a GET that was sent may be sent again (a range
** whose answer was lost is skipped, never handed out: the server handed
** it to nobody else); a change that was sent is never sent again (it may
** have been made), and its lost answer is an error that says so.
*/
#include "store/store_frond.h"

#include "frond.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define AGENT                                                                  \
  "frond-c/" STR(FROND_VERSION_MAJOR) "." STR(FROND_VERSION_MINOR) "." STR(    \
      FROND_VERSION_PATCH)

void frond__fs_client_init(frond_fs_client *c, const frond_fs_uri *u) {
  memset(c, 0, sizeof(*c));
  c->u = *u;
  c->fd = -1;
  c->agent = AGENT;
  c->rng = (uint64_t)frond__mono_ns() ^ ((uint64_t)getpid() << 32) ^
           (uint64_t)(uintptr_t)c;
  /* Spread the connections of many processes over the servers? No: the
  ** first server is the one the operator listed first (the nearest); the
  ** others are there for its failures. */
}

static void drop(frond_fs_client *c) {
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  c->len = 0;
}

void frond__fs_client_free(frond_fs_client *c) {
  drop(c);
  free(c->buf);
  c->buf = NULL;
  c->cap = 0;
}

void frond__fs_next_server(frond_fs_client *c) {
  drop(c);
  c->cur = (c->cur + 1) % c->u.n;
}

static uint64_t rnd(frond_fs_client *c) { /* xorshift64* */
  c->rng ^= c->rng >> 12;
  c->rng ^= c->rng << 25;
  c->rng ^= c->rng >> 27;
  return c->rng * UINT64_C(2685821657736338717);
}

/* Full jitter: a random wait in [0, min(cap, base * 2^attempt)]. */
static void backoff(frond_fs_client *c, int attempt) {
  int64_t ms = FROND_FS_BACKOFF_BASE_MS << (attempt < 5 ? attempt : 5);
  if (ms > FROND_FS_BACKOFF_CAP_MS)
    ms = FROND_FS_BACKOFF_CAP_MS;
  frond__sleep_ns((int64_t)(rnd(c) % (uint64_t)(ms + 1)) * 1000000);
}

static int remaining_ms(int64_t deadline) {
  int64_t left = (deadline - frond__mono_ns()) / 1000000;
  return left <= 0 ? 0 : left > 600000 ? 600000 : (int)left;
}

/* Wait for fd to be ready for ev until deadline: 0, or -1 (errno
** ETIMEDOUT when the time ran out). */
static int wait_fd(int fd, short ev, int64_t deadline) {
  struct pollfd p = {fd, ev, 0};
  for (;;) {
    int ms = remaining_ms(deadline), n;
    if (ms == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    n = poll(&p, 1, ms);
    if (n > 0)
      return 0;
    if (n < 0 && errno != EINTR)
      return -1;
  }
}

/* A non-blocking connection to s within deadline: the fd, or -1 with
** why in msg. */
static int dial(const frond_fs_server *s, int64_t deadline, char *msg,
                size_t len) {
  struct addrinfo hints, *res = NULL, *ai;
  char port[8];
  int fd = -1, rc, one = 1;
  memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
  snprintf(port, sizeof(port), "%d", s->port);
  if ((rc = getaddrinfo(s->host, port, &hints, &res)) != 0) {
    snprintf(msg, len, "%s: %s", s->shown, gai_strerror(rc));
    return -1;
  }
  snprintf(msg, len, "%s: no address", s->shown);
  for (ai = res; ai != NULL; ai = ai->ai_next) {
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                ai->ai_protocol);
    if (fd < 0) {
      snprintf(msg, len, "%s: socket: %s", s->shown, strerror(errno));
      continue;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
        (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0 &&
         getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
         (errno = soerr) == 0)) {
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      break;
    }
    snprintf(msg, len, "%s: %s", s->shown,
             errno == ETIMEDOUT ? "no connection within the timeout"
                                : strerror(errno));
    close(fd);
    fd = -1;
    if (remaining_ms(deadline) == 0) {
      errno = ETIMEDOUT;
      break;
    }
  }
  freeaddrinfo(res);
  return fd;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_fd(fd, POLLOUT, deadline) != 0)
        return -1;
    } else {
      return -1;
    }
  }
  return 0;
}

/* Is a kept-alive connection still good? A server that closed it (its
** idle timeout) has made it readable: EOF, or bytes no request asked. */
static int still_open(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

typedef enum { SENT_NOT, SENT_YES } sent_state;

/* One attempt on the current server. 0 with the answer; else -1 with
** *timed_out and *sent set and why in msg. */
static int attempt(frond_fs_client *c, const frond_fs_req *req,
                   frond_fs_answer *a, int *timed_out, sent_state *sent,
                   char *msg, size_t mlen) {
  const frond_fs_server *s = &c->u.srv[c->cur];
  int64_t deadline = frond__mono_ns() + c->u.timeout_ms * 1000000;
  char head[1024 + FROND_FS_TOKEN_MAX];
  size_t blen = req->body ? strlen(req->body) : 0;
  int n, reused = 0;
  frond_fs_resp r;
  frond_error pe = {0, ""};
  *timed_out = 0;
  *sent = SENT_NOT;
  /* A change always goes on a fresh connection: on a kept-alive one, a
  ** close by the server's idle timeout and a lost answer look alike. */
  if (c->fd >= 0 && (!req->idempotent || !still_open(c->fd)))
    drop(c);
  if (c->fd < 0) {
    if ((c->fd = dial(s, deadline, msg, mlen)) < 0) {
      *timed_out = errno == ETIMEDOUT;
      return -1;
    }
  } else {
    reused = 1;
  }
  n = snprintf(head, sizeof(head),
               "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n"
               "Accept: application/json, text/plain\r\n%s%s%s",
               req->method, req->path, s->shown, c->agent,
               c->u.token[0] ? "Authorization: Bearer " : "", c->u.token,
               c->u.token[0] ? "\r\n" : "");
  if (req->body)
    n += snprintf(head + n, sizeof(head) - (size_t)n,
                  "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                  blen);
  n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
  if ((size_t)n >= sizeof(head)) {
    snprintf(msg, mlen, "request head too long");
    drop(c);
    return -1;
  }
  c->calls++;
  c->len = 0;
  if (send_all(c->fd, head, (size_t)n, deadline) != 0 ||
      (blen > 0 && send_all(c->fd, req->body, blen, deadline) != 0)) {
    *timed_out = errno == ETIMEDOUT;
    *sent = reused ? SENT_YES : SENT_NOT; /* a fresh connection took nothing
                                          ** it could answer */
    snprintf(msg, mlen, "%s: sending: %s", s->shown,
             *timed_out ? "not taken within the timeout" : strerror(errno));
    drop(c);
    return -1;
  }
  *sent = SENT_YES;
  for (;;) {
    ssize_t k;
    int h = frond__fs_resp_parse(c->buf, c->len, &r, &pe);
    if (h > 0 && c->len >= (size_t)h + (size_t)r.content_length)
      break;
    if (h == -1) {
      snprintf(msg, mlen, "%s: a bad answer: %s", s->shown, pe.message);
      drop(c);
      return -1;
    }
    if (c->cap - c->len < 4096) {
      size_t cap = c->cap ? c->cap * 2 : 16384;
      char *b;
      if (h > 0 && cap < (size_t)h + (size_t)r.content_length)
        cap = (size_t)h + (size_t)r.content_length;
      if ((b = realloc(c->buf, cap)) == NULL) {
        snprintf(msg, mlen, "out of memory");
        drop(c);
        return -1;
      }
      c->buf = b;
      c->cap = cap;
    }
    k = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (k > 0) {
      c->len += (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_fd(c->fd, POLLIN, deadline) == 0)
        continue;
      *timed_out = errno == ETIMEDOUT;
      snprintf(msg, mlen, "%s: %s", s->shown,
               *timed_out ? "no answer within the timeout" : strerror(errno));
    } else {
      snprintf(msg, mlen, "%s: %s", s->shown,
               k == 0 ? "the connection closed before the answer"
                      : strerror(errno));
    }
    drop(c);
    return -1;
  }
  a->status = r.status;
  a->body = c->buf + r.head_len;
  a->len = (size_t)r.content_length;
  a->srv = s;
  a->i = c->cur;
  memcpy(c->store, r.store, sizeof(c->store));
  a->store = c->store;
  if (r.close || c->len != r.head_len + (size_t)r.content_length) {
    /* Closed by the server, or bytes past the answer that no request
    ** asked for: this connection is done. The answer stays in buf. */
    close(c->fd);
    c->fd = -1;
  }
  c->len = 0;
  return 0;
}

/* Is a's failure one the next server may not have? A 5xx (the server
** cannot serve now, or a proxy in front of it failed), or an answer that
** is not Frond's: a 3xx or 4xx without Frond's error body (a proxy's
** page, a server of something else). A 4xx with Frond's error is the
** request's fault: every server would refuse it. */
static int server_failed(const frond_fs_answer *a, char *code, size_t clen) {
  char msg[8];
  if (frond__fs_error_parse(a->body, a->len, code, clen, msg, sizeof(msg)) !=
      0) {
    snprintf(code, clen, "%s", a->status >= 500 ? "STORE" : "");
    return a->status >= 300;
  }
  return a->status >= 500;
}

int frond__fs_call(frond_fs_client *c, const frond_fs_req *req,
                   frond_fs_answer *a, frond_error *err) {
  char why[FROND_FS_MAX_SERVERS * 2][200];
  int tries = 1 + c->u.retries, i, nwhy = 0, timed_out = 0, rc = 0;
  int mismatch = 0;
  sent_state sent = SENT_NOT;
  char code[40];
  for (i = 0; i < tries; i++) {
    char m[200];
    if (i > 0)
      backoff(c, i - 1);
    if (attempt(c, req, a, &timed_out, &sent, m, sizeof(m)) == 0) {
      timed_out = 0;
      if (server_failed(a, code, sizeof(code))) {
        if (!req->idempotent) /* refused or lost, never sent again */
          return frond__fs_fail(a, "", err);
        snprintf(m, sizeof(m), "%.100s: %d %.40s", a->srv->shown, a->status,
                 code[0] ? code : "(not a Frond answer)");
        rc = frond_err_from_name(code);
        if (rc == 0)
          rc = FROND_ESTORE;
      } else if (a->status >= 300 || req->check == NULL) {
        return 0;
      } else {
        frond_error ce = {0, ""};
        if ((rc = req->check(req->ctx, a, &ce)) == 0)
          return 0;
        if (rc == FROND_ESTORE_MISMATCH)
          mismatch = 1;
        snprintf(m, sizeof(m), "%.199s", ce.message);
      }
    } else if (sent == SENT_YES && !req->idempotent) {
      return frond__fail(err, timed_out ? FROND_ESTORE_TIMEOUT : FROND_ESTORE,
                         "%s (the change was sent: it may have been made; "
                         "read the tag to see)",
                         m);
    } else {
      rc = timed_out ? FROND_ESTORE_TIMEOUT : FROND_ESTORE;
    }
    if (nwhy < (int)FROND__ARRAY_SIZE(why))
      snprintf(why[nwhy++], sizeof(why[0]), "%s", m);
    frond__fs_next_server(c);
  }
  {
    char all[600];
    size_t k = 0;
    all[0] = '\0';
    for (i = 0; i < nwhy && k < sizeof(all); i++)
      k += (size_t)snprintf(all + k, sizeof(all) - k, "%s%s", i ? "; " : "",
                            why[i]);
    return frond__fail(err, mismatch ? FROND_ESTORE_MISMATCH : rc,
                       "no Frond server served the call in %d attempt%s: %s",
                       tries, tries == 1 ? "" : "s", all);
  }
}

int frond__fs_fail(const frond_fs_answer *a, const char *what,
                   frond_error *err) {
  char code[40], msg[400];
  int rc;
  if (frond__fs_error_parse(a->body, a->len, code, sizeof(code), msg,
                            sizeof(msg)) != 0)
    return frond__fail(err, FROND_ESTORE,
                       "%s%sserver %s answered %d without a Frond error "
                       "(not a Frond server?)",
                       what, *what ? ": " : "", a->srv->shown, a->status);
  rc = frond_err_from_name(code);
  if (rc == 0)
    rc = a->status >= 400 && a->status < 500 ? FROND_ESTORE_PERMANENT
                                             : FROND_ESTORE;
  return frond__fail(err, rc, "%s%sserver %s: %d %s: %s%s", what,
                     *what ? ": " : "", a->srv->shown, a->status, code, msg,
                     a->status == 401   ? " (give a credential: ?token=<admin "
                                          "token> or ?token=<name>:<secret>)"
                     : a->status == 403 ? " (the server's admin token, or a "
                                          "client granted it: ?token=)"
                                        : "");
}
