/* SPDX-License-Identifier: Apache-2.0 */
/*
** chaos_load.c -- the fault-injection suite's load client.
**
** This file contains a small program that loads `frond serve` nodes the way
** Jepsen's unique-ids workload does: every stream is one thread with one
** connection to one node, sending one request at a time, so that the order
** in which a stream received its IDs is the order the node issued them to
** it. Every ID answered is kept, in arrival order, as native int64 in
** DIR/NAME.ids; every request, answered or not, is one record in
** DIR/NAME.rec:
**
**   int64 sent_ns, recv_ns   CLOCK_MONOTONIC (the same clock across all
**                            processes of the machine, unlike the wall
**                            clock that the suite shifts with libfaketime)
**   int64 n                  IDs this answer added to NAME.ids
**   int64 code               0, a negative FROND_E* code named by the
**                            answer, or one of the CL_* codes below
**
**   chaos_load --dir DIR [--seconds S] [--max-ids N] STREAM...
**   STREAM =
*name,proto,port,kind,tag,count[,timeout_ms[,pause_us[,backoff_ms]]]
**     proto   http  GET /v1/snowflake?count=N / /v1/segment/TAG?count=N
**             leaf  GET /api/snowflake/get/chaos / /api/segment/get/TAG
**             resp  ID.SNOWFLAKE N / ID.NEXT TAG N
**             incr  INCR TAG
**     kind    snowflake | segment (tag "-" for snowflake)
**     count   IDs per request (1 for leaf and incr)
**     timeout_ms   give up on an answer after this (default 3000); the
**                  connection is then closed and opened again
**     pause_us     sleep this long between requests (default 0)
**     backoff_ms   after an error answer, wait this long before the next
**                  request, as client libraries do (default 100; 0 for a
**                  client that hammers); after a transport failure 20 ms
**
** It stops at the deadline, once N IDs were collected over all streams,
** or on SIGTERM/SIGINT, finishing the request in flight. Then it prints
** one line per stream: "stream NAME requests R ids I errors E".
*/
#include "frond.h"
#include "base/base.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Failures that are not the server's answer. */
enum {
  CL_CONNECT = 1, /* connection refused or not made */
  CL_TIMEOUT = 2, /* no (whole) answer within timeout_ms */
  CL_CLOSED = 3,  /* the server closed or reset the connection */
  CL_GARBAGE = 4, /* an answer we cannot parse */
  CL_STATUS = 5   /* an error status without a Frond code */
};

enum { P_HTTP, P_LEAF, P_RESP, P_INCR };

#define MAX_STREAMS 256
#define OUT_IDS 8192

typedef struct stream {
  char name[64], tag[130];
  int proto, port, segment;
  long count, timeout_ms, pause_us, backoff_ms;
  pthread_t thread;
  atomic_int fd;
  char *buf; /* received bytes */
  size_t len, cap;
  FILE *ids, *rec;
  int64_t *out; /* IDs of the current answer */
  size_t nout, capout;
  long long requests, nids, errors;
} stream;

static stream streams[MAX_STREAMS];
static int nstreams;
static atomic_int stopping, running;
static atomic_llong collected;
static long long max_ids;
static int64_t deadline_ns;

static void on_signal(int sig) {
  (void)sig;
  atomic_store(&stopping, 1);
}

static void die(const char *what) {
  fprintf(stderr, "chaos_load: %s\n", what);
  exit(2);
}

static void put_rec(stream *s, int64_t sent, int64_t recv, int64_t n,
                    int64_t code) {
  int64_t r[4] = {sent, recv, n, code};
  if (fwrite(r, sizeof r, 1, s->rec) != 1)
    die("cannot write a record file");
}

/* ---- connection ---------------------------------------------------------- */

static void disconnect(stream *s) {
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  s->len = 0;
}

static int connect_to(stream *s) {
  struct sockaddr_in a;
  struct timeval tv;
  int one = 1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)s->port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->fd < 0)
    die("socket");
  tv.tv_sec = s->timeout_ms / 1000;
  tv.tv_usec = (s->timeout_ms % 1000) * 1000;
  setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(s->fd, (struct sockaddr *)&a, sizeof a) != 0) {
    disconnect(s);
    return -1;
  }
  return 0;
}

/* Read more bytes into s->buf before `until` (monotonic ns). Returns 0, or
** CL_TIMEOUT / CL_CLOSED. */
static int fill(stream *s, int64_t until) {
  ssize_t n;
  if (s->cap - s->len < 65536) {
    size_t cap = s->cap * 2;
    char *b = realloc(s->buf, cap);
    if (!b)
      die("out of memory");
    s->buf = b;
    s->cap = cap;
  }
  for (;;) {
    n = recv(s->fd, s->buf + s->len, s->cap - s->len, 0);
    if (n > 0) {
      s->len += (size_t)n;
      return 0;
    }
    if (n == 0)
      return CL_CLOSED;
    if (errno == EINTR && frond__mono_ns() < until)
      continue;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
               ? CL_TIMEOUT
               : CL_CLOSED;
  }
}

static int send_all(stream *s, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(s->fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return errno == EAGAIN || errno == EWOULDBLOCK ? CL_TIMEOUT : CL_CLOSED;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void add_id(stream *s, int64_t id) {
  if (s->nout == s->capout) {
    size_t cap = s->capout ? s->capout * 2 : 1024;
    int64_t *o = realloc(s->out, cap * sizeof *o);
    if (!o)
      die("out of memory");
    s->out = o;
    s->capout = cap;
  }
  s->out[s->nout++] = id;
}

/* Decimal IDs separated by whitespace; anything else is garbage. */
static int parse_ids(stream *s, const char *p, const char *end) {
  while (p < end) {
    int64_t v = 0;
    int digits = 0;
    while (p < end && (*p == '\n' || *p == '\r' || *p == ' '))
      p++;
    if (p == end)
      break;
    while (p < end && *p >= '0' && *p <= '9' && digits < 19) {
      v = v * 10 + (*p++ - '0');
      digits++;
    }
    if (digits == 0 || (p < end && *p != '\n' && *p != '\r' && *p != ' '))
      return CL_GARBAGE;
    add_id(s, v);
  }
  return 0;
}

/* The Frond code an error answer names, or fallback. */
static int code_named(const char *p, size_t n, int fallback) {
  char name[40];
  size_t i = 0;
  while (i < n && i < sizeof name - 1 &&
         ((p[i] >= 'A' && p[i] <= 'Z') || p[i] == '_'))
    name[i] = p[i], i++;
  name[i] = 0;
  i = (size_t)frond_err_from_name(name);
  return i ? (int)i : fallback;
}

static const char *find(const char *hay, size_t n, const char *needle) {
  return memmem(hay, n, needle, strlen(needle));
}

/* ---- HTTP ---------------------------------------------------------------- */

static int http_request(stream *s, int64_t until) {
  char req[512];
  const char *head_end, *p;
  size_t head, body_len;
  int status, rc, n;
  if (s->proto == P_LEAF)
    n = s->segment
            ? snprintf(req, sizeof req, "GET /api/segment/get/%s", s->tag)
            : snprintf(req, sizeof req, "GET /api/snowflake/get/chaos");
  else
    n = s->segment
            ? snprintf(req, sizeof req,
                       "GET /v1/segment/%s?count=%ld&format=text", s->tag,
                       s->count)
            : snprintf(req, sizeof req,
                       "GET /v1/snowflake?count=%ld&format=text", s->count);
  n += snprintf(req + n, sizeof req - (size_t)n,
                " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  if ((rc = send_all(s, req, (size_t)n)) != 0)
    return rc;
  while (!(head_end = find(s->buf, s->len, "\r\n\r\n")))
    if ((rc = fill(s, until)) != 0)
      return rc;
  head = (size_t)(head_end - s->buf) + 4;
  if (s->len < 12 || memcmp(s->buf, "HTTP/1.", 7) != 0)
    return CL_GARBAGE;
  status = atoi(s->buf + 9);
  p = find(s->buf, head, "\r\nContent-Length:");
  if (!p)
    return CL_GARBAGE;
  body_len = (size_t)strtoull(p + 17, NULL, 10);
  while (s->len < head + body_len)
    if ((rc = fill(s, until)) != 0)
      return rc;
  if (status == 200) {
    rc = parse_ids(s, s->buf + head, s->buf + head + body_len);
  } else if ((p = find(s->buf, head, "\r\nFrond-Error: "))) {
    rc = code_named(p + 15, head - (size_t)(p + 15 - s->buf), CL_STATUS);
  } else if ((p = find(s->buf + head, body_len, "\"code\":\""))) {
    rc = code_named(p + 8, body_len - (size_t)(p + 8 - (s->buf + head)),
                    CL_STATUS);
  } else {
    rc = CL_STATUS;
  }
  /* Keep what follows this answer (nothing: one request at a time). */
  memmove(s->buf, s->buf + head + body_len, s->len - head - body_len);
  s->len -= head + body_len;
  return rc;
}

/* ---- RESP ---------------------------------------------------------------- */

/* One line of the reply at *pos; returns its start or NULL after filling
** failed (rc in *err). */
static const char *resp_line(stream *s, size_t *pos, size_t *len, int64_t until,
                             int *err) {
  const char *e;
  while (!(e = find(s->buf + *pos, s->len - *pos, "\r\n")))
    if ((*err = fill(s, until)) != 0)
      return NULL;
  *len = (size_t)(e - (s->buf + *pos));
  e = s->buf + *pos;
  *pos += *len + 2;
  return e;
}

static int resp_request(stream *s, int64_t until) {
  char req[512], num[24];
  const char *l;
  size_t pos = 0, n;
  int rc = 0, k, m;
  long items, i;
  snprintf(num, sizeof num, "%ld", s->count);
  if (s->proto == P_INCR)
    k = snprintf(req, sizeof req, "*2\r\n$4\r\nINCR\r\n$%zu\r\n%s\r\n",
                 strlen(s->tag), s->tag);
  else if (s->segment)
    k = snprintf(req, sizeof req,
                 "*3\r\n$7\r\nID.NEXT\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                 strlen(s->tag), s->tag, strlen(num), num);
  else
    k = snprintf(req, sizeof req, "*2\r\n$12\r\nID.SNOWFLAKE\r\n$%zu\r\n%s\r\n",
                 strlen(num), num);
  if ((rc = send_all(s, req, (size_t)k)) != 0)
    return rc;
  if (!(l = resp_line(s, &pos, &n, until, &rc)))
    return rc;
  /* IDs of ID.* are bulk strings ($<len>, then the digits on a line of
  ** their own); INCR answers an integer. */
  if (l[0] == '-') {
    m = code_named(l + 1, n - 1, CL_STATUS);
  } else if (l[0] == ':') {
    m = parse_ids(s, l + 1, l + n);
  } else if (l[0] == '$') {
    if (!(l = resp_line(s, &pos, &n, until, &rc)))
      return rc;
    m = parse_ids(s, l, l + n);
  } else if (l[0] == '*') {
    items = strtol(l + 1, NULL, 10);
    for (i = 0, m = 0; i < items && m == 0; i++) {
      if (!(l = resp_line(s, &pos, &n, until, &rc)))
        return rc;
      if (l[0] == '$') {
        if (!(l = resp_line(s, &pos, &n, until, &rc)))
          return rc;
        m = parse_ids(s, l, l + n);
      } else {
        m = l[0] == ':' ? parse_ids(s, l + 1, l + n) : CL_GARBAGE;
      }
    }
  } else {
    m = CL_GARBAGE;
  }
  memmove(s->buf, s->buf + pos, s->len - pos);
  s->len -= pos;
  return m;
}

/* ---- the stream loop ----------------------------------------------------- */

static void *run(void *arg) {
  stream *s = arg;
  while (!atomic_load(&stopping) && frond__mono_ns() < deadline_ns &&
         (max_ids == 0 || atomic_load(&collected) < max_ids)) {
    int64_t sent = frond__mono_ns(), until = sent + s->timeout_ms * 1000000;
    int rc;
    s->nout = 0;
    if (s->fd < 0 && connect_to(s) != 0) {
      put_rec(s, sent, frond__mono_ns(), 0, CL_CONNECT);
      s->errors++;
      usleep(20000);
      continue;
    }
    rc = s->proto == P_HTTP || s->proto == P_LEAF ? http_request(s, until)
                                                  : resp_request(s, until);
    s->requests++;
    if (rc > 0) {
      /* Transport trouble: whatever half-answer there was is dropped. */
      disconnect(s);
      s->nout = 0;
    }
    if (s->nout > 0 &&
        fwrite(s->out, sizeof(int64_t), s->nout, s->ids) != s->nout)
      die("cannot write an ID file");
    put_rec(s, sent, frond__mono_ns(), (int64_t)s->nout, rc);
    s->nids += (long long)s->nout;
    atomic_fetch_add(&collected, (long long)s->nout);
    if (rc != 0) {
      s->errors++;
      if (rc > 0 || s->backoff_ms > 0)
        usleep(rc > 0 ? 20000 : (useconds_t)s->backoff_ms * 1000);
    }
    if (s->pause_us > 0)
      usleep((useconds_t)s->pause_us);
  }
  disconnect(s);
  atomic_fetch_sub(&running, 1);
  return NULL;
}

static void parse_stream(stream *s, char *spec, const char *dir) {
  char *f[9], path[4096], *save = NULL;
  int n = 0;
  for (char *t = strtok_r(spec, ",", &save); t && n < 9;
       t = strtok_r(NULL, ",", &save))
    f[n++] = t;
  if (n < 6)
    die("a stream is name,proto,port,kind,tag,count"
        "[,timeout_ms[,pause_us[,backoff_ms]]]");
  snprintf(s->name, sizeof s->name, "%s", f[0]);
  if (strcmp(f[1], "http") == 0)
    s->proto = P_HTTP;
  else if (strcmp(f[1], "leaf") == 0)
    s->proto = P_LEAF;
  else if (strcmp(f[1], "resp") == 0)
    s->proto = P_RESP;
  else if (strcmp(f[1], "incr") == 0)
    s->proto = P_INCR;
  else
    die("proto is http, leaf, resp or incr");
  s->port = atoi(f[2]);
  s->segment = strcmp(f[3], "segment") == 0;
  if (!s->segment && strcmp(f[3], "snowflake") != 0)
    die("kind is snowflake or segment");
  snprintf(s->tag, sizeof s->tag, "%s", f[4]);
  s->count = atol(f[5]);
  s->timeout_ms = n > 6 ? atol(f[6]) : 3000;
  s->pause_us = n > 7 ? atol(f[7]) : 0;
  s->backoff_ms = n > 8 ? atol(f[8]) : 100;
  if (s->port <= 0 || s->count <= 0 || s->timeout_ms <= 0 ||
      ((s->proto == P_LEAF || s->proto == P_INCR) && s->count != 1) ||
      (s->proto == P_INCR && !s->segment))
    die("bad stream");
  s->fd = -1;
  s->cap = 1 << 17;
  if (!(s->buf = malloc(s->cap)))
    die("out of memory");
  snprintf(path, sizeof path, "%s/%s.ids", dir, s->name);
  if (!(s->ids = fopen(path, "wb")))
    die("cannot create an ID file");
  snprintf(path, sizeof path, "%s/%s.rec", dir, s->name);
  if (!(s->rec = fopen(path, "wb")))
    die("cannot create a record file");
}

int main(int argc, char **argv) {
  const char *dir = NULL;
  double seconds = 10;
  struct sigaction sa;
  int i;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
      dir = argv[++i];
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (strcmp(argv[i], "--max-ids") == 0 && i + 1 < argc)
      max_ids = atoll(argv[++i]);
    else if (argv[i][0] == '-' || !dir)
      die("usage: chaos_load --dir DIR [--seconds S] [--max-ids N] STREAM...");
    else if (nstreams == MAX_STREAMS)
      die("too many streams");
    else
      parse_stream(&streams[nstreams++], argv[i], dir);
  }
  if (!dir || nstreams == 0)
    die("usage: chaos_load --dir DIR [--seconds S] [--max-ids N] STREAM...");
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal; /* no SA_RESTART: a blocked recv returns */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  deadline_ns = frond__mono_ns() + (int64_t)(seconds * 1e9);
  atomic_store(&running, nstreams);
  for (i = 0; i < nstreams; i++)
    if (pthread_create(&streams[i].thread, NULL, run, &streams[i]) != 0)
      die("cannot start a thread");
  /* A stream waiting on a stopped node would hold the exit up for its
  ** whole timeout: once it is time to stop, cut every connection. */
  while (atomic_load(&running) > 0) {
    if (atomic_load(&stopping) || frond__mono_ns() >= deadline_ns ||
        (max_ids > 0 && atomic_load(&collected) >= max_ids)) {
      atomic_store(&stopping, 1);
      for (i = 0; i < nstreams; i++) {
        int fd = atomic_load(&streams[i].fd);
        if (fd >= 0)
          shutdown(fd, SHUT_RDWR);
      }
    }
    usleep(20000);
  }
  for (i = 0; i < nstreams; i++) {
    stream *s = &streams[i];
    pthread_join(s->thread, NULL);
    if (fclose(s->ids) != 0 || fclose(s->rec) != 0)
      die("cannot close the output files");
    printf("stream %s requests %lld ids %lld errors %lld\n", s->name,
           s->requests, s->nids, s->errors);
    free(s->buf);
    free(s->out);
  }
  return 0;
}
