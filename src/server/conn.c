/* SPDX-License-Identifier: Apache-2.0 */
/*
** conn.c -- worker loops and the connection layer.
**
** Each worker runs one libuv loop with its own SO_REUSEPORT listener per
** protocol (frond__listener: a port and the frond__proto spoken on it).
** Reads land in a per-connection buffer; the protocol consumes whole
** requests from it and appends answers to `out`. After a read has been
** handled, the answers are written with uv_try_write, and only a remainder
** is handed to uv_write (one write in flight per connection, with its
** request embedded in the connection): no allocation per answer.
**
** A sweep timer per worker enforces the header and idle timeouts and the
** drain deadline, walking the worker's connection list.
**
** Memory per connection stays small whatever it did before: a buffer that
** grew above RBUF_KEEP (input) or OUT_KEEP (answers) for one large request
** or answer is freed once consumed or written, so a pool of idle
** connections that each once fetched a large batch, or sent one large
** command, holds a few KiB each rather than its largest answer; after a
** second idle, the sweep frees the small buffers too.
**
** A connection to a TLS listener (c->tls) reads ciphertext into the
** worker's tls_in and feeds it to its TLS state (tls.c); the plaintext is
** decrypted into the same read buffer, under the same limits, that a plain
** connection reads into, and the answers in `out` are sealed into
** ciphertext just before they are written: the protocols see the same
** bytes either way. Its handshake runs before on_open, timed from accept
** by header_timeout_ms as a first request is.
*/
#include "server/server.h"
#include "server/tls.h"

#include "server/acl.h"

#include "base/base.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RBUF_INITIAL 4096
/* A connection idle this long with nothing buffered frees its read
** buffer as well. */
#define IDLE_FREE_MS 1000
/* Buffers at most this large are kept for the next request. */
#define RBUF_KEEP 4096
#define OUT_KEEP 4096
/* A connection closed after a final answer keeps reading (and discarding)
** this long after shutting down its write side, so that unread input does
** not make the kernel send a reset that destroys the answer. */
#define LINGER_MS 1000
/* Stop reading while this much output waits for a slow reader. */
#define OUT_HIGH_WATER FROND__OUT_HIGH_WATER

/* Output waiting for a slow reader: answers, and over TLS what the TLS
** state made to send besides (frond__tls_backlog). */
#define OUT_WAITING(c)                                                         \
  ((c)->out.len + (c)->wbuf.len +                                              \
   ((c)->tls != NULL ? frond__tls_backlog((c)->tls) : 0))
/* Ciphertext read at once (a few TLS records). */
#define TLS_IN_SIZE 65536

const char *frond__conn_peer(frond__conn *c, char *buf, size_t cap) {
  struct sockaddr_storage ss;
  int len = (int)sizeof ss;
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
    if (ss.ss_family == AF_INET6) {
      const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
      port = ntohs(s6->sin6_port);
    } else if (ss.ss_family == AF_INET) {
      const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
      port = ntohs(s4->sin_port);
    }
  }
  snprintf(buf, cap, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
  return buf;
}

int frond__conn_draining(const frond__conn *c) {
  return c->w->draining;
}

int frond__conn_gone(const frond__conn *c) {
  return c->closing;
}

/* Bring the worker's count of buffer bytes up to date with c's. */
static void count_buffers(frond__conn *c, size_t now) {
  FROND__INC(c->w->m.buffer_bytes, (uint64_t)now - (uint64_t)c->counted);
  c->counted = now;
}

static void conn_unref(frond__conn *c) {
  if (--c->refs > 0)
    return;
  frond__acl_conn_drop(c);
  free(c->rbuf);
  frond__buf_free(&c->out);
  frond__buf_free(&c->wbuf);
  frond__tls_conn_free(c->tls);
  free(c);
}

static void on_close(uv_handle_t *h) {
  frond__conn *c = h->data;
  frond__worker *w = c->w;
  c->prev->next = c->next;
  c->next->prev = c->prev;
  w->nconns--;
  count_buffers(c, 0);
  if (c->opened) {
    FROND__INC(c->l->closed, 1);
    if (c->proto->on_close != NULL)
      c->proto->on_close(c);
  }
  conn_unref(c);
}

static void conn_close(frond__conn *c) {
  if (c->closing)
    return;
  c->closing = 1;
  /* Counted out now, not in on_close at the end of the loop iteration:
  ** the limit is on connections the server still serves. */
  atomic_fetch_sub(&c->w->srv->nconns, 1);
  uv_close((uv_handle_t *)&c->tcp, on_close);
}

static void flush(frond__conn *c);
static void start_reading(frond__conn *c);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void on_shutdown(uv_shutdown_t *req, int status) {
  frond__conn *c = req->data;
  if (status < 0)
    conn_close(c);
}

/* Lingering close: FIN now, discard input until EOF or LINGER_MS. */
static void linger(frond__conn *c) {
  if (c->lingering || c->closing)
    return;
  c->lingering = 1;
  c->close_after_write = 1; /* input from now on is discarded */
  c->linger_ms = uv_now(&c->w->loop);
  c->sreq.data = c;
  if (c->tls != NULL) {
    /* close_notify before the FIN, if the socket takes it now. */
    uv_buf_t b;
    frond__tls_shutdown(c->tls);
    if (frond__tls_seal(c->tls, &c->out) == 0 && c->out.len > 0) {
      b = uv_buf_init(c->out.data, (unsigned)c->out.len);
      (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    }
    c->out.len = 0;
  }
  if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
    conn_close(c);
    return;
  }
  c->rlen = 0;
  if (!c->reading &&
      uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
    c->reading = 1;
}

/* An answer buffer that holds nothing: give a large one back. */
static void out_trim(frond__buf *b) {
  if (b->len == 0 && b->cap > OUT_KEEP)
    frond__buf_free(b);
}

static void on_write(uv_write_t *req, int status) {
  frond__conn *c = req->data;
  c->writing = 0;
  c->wbuf.len = 0;
  out_trim(&c->wbuf);
  if (status < 0 || c->closing) {
    conn_close(c);
    return;
  }
  c->last_ms = uv_now(&c->w->loop);
  flush(c);
}

static void flush_out(frond__conn *c);

/* Write what is in c->out (try_write first, uv_write the rest), and count
** the buffers as they are now. */
static void flush(frond__conn *c) {
  flush_out(c);
  if (!c->closing)
    count_buffers(c, c->rcap + c->out.cap + c->wbuf.cap);
}

static void flush_out(frond__conn *c) {
  uv_buf_t b;
  int n;
  frond__buf tmp;
  if (c->closing || c->writing)
    return;
  /* Over TLS, what is written is the answers sealed, with any handshake
  ** message or alert the TLS state has to send. */
  if (c->tls != NULL && frond__tls_seal(c->tls, &c->out) != 0) {
    conn_close(c);
    return;
  }
  if (c->out.len > 0) {
    b = uv_buf_init(c->out.data, (unsigned)c->out.len);
    n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n < 0 && n != UV_EAGAIN) {
      conn_close(c);
      return;
    }
    if (n < 0)
      n = 0;
    c->last_ms = uv_now(&c->w->loop);
    if ((size_t)n < c->out.len) {
      /* Swap buffers: the remainder is written from wbuf while new answers
      ** are built in out. */
      tmp = c->wbuf;
      c->wbuf = c->out;
      c->out = tmp;
      c->out.len = 0;
      memmove(c->wbuf.data, c->wbuf.data + n, c->wbuf.len - (size_t)n);
      c->wbuf.len -= (size_t)n;
      b = uv_buf_init(c->wbuf.data, (unsigned)c->wbuf.len);
      c->wreq.data = c;
      if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
        conn_close(c);
        return;
      }
      c->writing = 1;
      return;
    }
    c->out.len = 0;
    out_trim(&c->out);
  }
  /* A held answer is still to come. Otherwise, while draining, a
  ** connection with nothing left to answer is done. */
  if (!c->held && (c->close_after_write || (c->w->draining && c->rlen == 0))) {
    linger(c);
    return;
  }
  if (!c->reading && !c->pumping)
    start_reading(c);
}

/* Grow the read buffer when little room is left, up to max_input. */
static void rbuf_room(frond__conn *c) {
  size_t max = c->l->ep->max_input;
  if (c->rcap - c->rlen < 1024 && c->rcap < max) {
    size_t cap = c->rcap ? c->rcap * 2 : RBUF_INITIAL;
    char *p;
    if (cap > max)
      cap = max;
    p = realloc(c->rbuf, cap);
    if (p != NULL) {
      c->rbuf = p;
      c->rcap = cap;
    }
  }
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  frond__conn *c = h->data;
  frond__worker *w = c->w;
  if (c->tls != NULL) {
    /* Fed to the TLS state before the next read: one buffer a worker. */
    if (w->tls_in == NULL)
      w->tls_in = malloc(TLS_IN_SIZE);
    *buf = uv_buf_init(w->tls_in, w->tls_in != NULL ? TLS_IN_SIZE : 0);
    return;
  }
  rbuf_room(c);
  *buf = uv_buf_init(c->rbuf + c->rlen, (unsigned)(c->rcap - c->rlen));
}

/* Over TLS: decrypt what was fed into the read buffer, as much as it
** takes. Returns the bytes added; a client's close_notify is its EOF; a bad
** record closes the connection. */
static size_t tls_fill(frond__conn *c) {
  size_t added = 0;
  ssize_t n;
  while (!c->closing && !c->eof) {
    rbuf_room(c);
    if (c->rlen == c->rcap)
      break;
    n = frond__tls_read(c->tls, c->rbuf + c->rlen, c->rcap - c->rlen);
    if (n == 0)
      break;
    if (n == FROND__TLS_EOF) {
      c->eof = 1;
      if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
      }
      break;
    }
    if (n < 0) {
      conn_close(c);
      break;
    }
    c->rlen += (size_t)n;
    added += (size_t)n;
  }
  return added;
}

/* Is there input the protocol has not seen? */
static int input_pending(const frond__conn *c) {
  return c->rlen > 0 || (c->tls != NULL && frond__tls_pending(c->tls));
}

/* All the input a connection may hold is buffered. */
static int input_full(const frond__conn *c) {
  return c->rlen == c->rcap && c->rcap >= c->l->ep->max_input;
}

/* After input was consumed: a large read buffer is freed when empty and
** shrunk when mostly empty (a partial request left in a buffer that grew
** for a large one). on_alloc makes a new one when the next bytes come. */
static void rbuf_trim(frond__conn *c) {
  size_t want;
  char *p;
  if (c->rcap <= RBUF_KEEP)
    return;
  if (c->rlen == 0) {
    free(c->rbuf);
    c->rbuf = NULL;
    c->rcap = 0;
    return;
  }
  for (want = RBUF_INITIAL; want < 2 * c->rlen; want *= 2)
    ;
  if (want < c->rcap / 2 && (p = realloc(c->rbuf, want)) != NULL) {
    c->rbuf = p;
    c->rcap = want;
  }
}

/* Hand buffered input to the protocol until it needs more bytes, or takes
** a request off the loop. */
static void process_some(frond__conn *c) {
  size_t off = 0;
  int more = 0;
  /* Answers wait in memory until written: stop at the high-water mark and
  ** leave further pipelined requests for when the client has read. */
  while (off < c->rlen && !c->close_after_write && !c->held &&
         c->out.len < OUT_HIGH_WATER) {
    int n = c->proto->on_data(c, c->rbuf + off, c->rlen - off);
    if (n < 0) {
      c->close_after_write = 1;
      break;
    }
    if (n == 0) {
      /* Held, the protocol waits for its own answer, not for bytes (a
      ** Redis EXEC behind a command that waits); past the high-water
      ** mark, for the client to read (an EXEC answered in parts). */
      more = !c->held && OUT_WAITING(c) < OUT_HIGH_WATER;
      break;
    }
    /* A protocol consumes at most the bytes it was given. */
    assert((size_t)n <= c->rlen - off);
    off += (size_t)n;
  }
  if (off > 0) {
    memmove(c->rbuf, c->rbuf + off, c->rlen - off);
    c->rlen -= off;
  }
  rbuf_trim(c);
  /* A request is pending while bytes of it wait; its clock restarts. */
  if (c->rlen == 0)
    c->req_start_ms = 0;
  else if (off > 0 || c->req_start_ms == 0)
    c->req_start_ms = uv_now(&c->w->loop);
  if (more && input_full(c) && !c->close_after_write) {
    /* The protocol could not frame a request in the largest buffer. */
    c->close_after_write = 1;
  }
}

/* process_some, and over TLS, again for each record decrypted while the
** protocol can go on. */
static void process(frond__conn *c) {
  if (c->tls != NULL && (tls_fill(c), c->closing))
    return; /* a bad record */
  process_some(c);
  while (c->tls != NULL && !c->closing && !c->held && !c->close_after_write &&
         c->out.len < OUT_HIGH_WATER && tls_fill(c) > 0)
    process_some(c);
}

static int conn_open(frond__conn *c);

/* Plain text where a TLS client's first record belongs (tls.c answers
** it in the protocol's words): unencrypted, then a lingering close that
** sends no TLS alert. */
static int plain_to_tls(frond__conn *c) {
  const char *text;
  size_t n = frond__tls_plain(c->tls, c->l->ep->alpn != NULL, &text);
  uv_buf_t b = uv_buf_init((char *)(uintptr_t)text, (unsigned)n);
  frond__tls_conn_free(c->tls);
  c->tls = NULL;
  (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
  linger(c);
  return -1;
}

/* Over TLS: ciphertext read. Returns 0 when plaintext may have come (the
** handshake is done), -1 when there is nothing for the protocol (the
** handshake goes on, or the connection was closed). */
static int tls_in(frond__conn *c, const char *p, size_t n) {
  char why[160], peer[FROND__PEER_MAX];
  int r;
  if (!c->opened && !c->tls_begun && n > 0 && (c->tls_begun = 1, p[0] != 0x16))
    return plain_to_tls(c);
  if (frond__tls_feed(c->tls, p, n) != 0) {
    conn_close(c);
    return -1;
  }
  if (c->opened) {
    tls_fill(c);
    return c->closing ? -1 : 0;
  }
  r = frond__tls_handshake(c->tls, c->cert_name, sizeof c->cert_name, why,
                           sizeof why);
  if (r < 0) {
    frond_log(FROND_LOG_DEBUG, "TLS handshake with %s failed: %s",
              frond__conn_peer(c, peer, sizeof peer), why);
    c->close_after_write = 1; /* its alert, then close */
    flush(c);
    return -1;
  }
  if (r == 0 || conn_open(c) != 0) {
    flush(c); /* the handshake's next messages */
    return -1;
  }
  if (c->cert_name[0] != '\0')
    frond_log(FROND_LOG_DEBUG, "TLS client %s: certificate of '%s'",
              frond__conn_peer(c, peer, sizeof peer), c->cert_name);
  tls_fill(c);
  return c->closing ? -1 : 0;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  frond__conn *c = s->data;
  if (nread == UV_EOF && !c->close_after_write) {
    /* The client has sent all it will (a half-close): answer what is
    ** buffered, finish writing, then close. libuv stopped reading. */
    c->eof = 1;
    c->reading = 0;
    if (!c->writing)
      start_reading(c);
    return;
  }
  if (nread < 0) {
    conn_close(c);
    return;
  }
  if (nread == 0)
    return;
  if (c->close_after_write)
    return; /* input after a final answer is discarded */
  c->last_ms = uv_now(&c->w->loop);
  if (c->tls != NULL) {
    if (tls_in(c, buf->base, (size_t)nread) != 0)
      return;
  } else {
    c->rlen += (size_t)nread;
    assert(c->rlen <= c->rcap); /* libuv read into the room we gave it */
  }
  /* Over TLS, nothing decrypted yet after the handshake is not a request
  ** begun: header_timeout_ms still runs from accept. */
  if (!c->held && c->rlen > 0)
    process(c);
  if (OUT_WAITING(c) >= OUT_HIGH_WATER || c->close_after_write ||
      (c->held && input_full(c))) {
    uv_read_stop(s);
    c->reading = 0;
  }
  flush(c);
}

static void start_reading(frond__conn *c) {
  if (c->closing || c->close_after_write)
    return;
  /* Input may have been left while output was backed up; an answer in
  ** parts (a Redis EXEC) goes on while each part is written at once. A
  ** loop, not flush_out calling back here: one part after another must
  ** not deepen the stack. */
  while (input_pending(c) && !c->held) {
    process(c);
    if (c->out.len == 0)
      break;
    c->pumping = 1;
    flush(c);
    c->pumping = 0;
    if (c->writing || c->closing || c->close_after_write)
      return;
  }
  if (c->held && (c->eof || input_full(c)))
    return; /* frond__conn_resume goes on */
  if (c->eof) {
    /* Nothing more will come: what is left cannot become a request. */
    c->close_after_write = 1;
    flush(c);
    return;
  }
  if (!c->reading &&
      uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
    c->reading = 1;
}

void frond__conn_hold(frond__conn *c) {
  c->held = 1;
  c->refs++;
}

void frond__conn_resume(frond__conn *c, int close_after) {
  c->held = 0;
  if (c->closing) {
    conn_unref(c);
    return;
  }
  c->refs--; /* the handle still holds one */
  c->last_ms = uv_now(&c->w->loop);
  if (close_after)
    c->close_after_write = 1;
  else if (input_pending(c))
    process(c);
  if (c->reading &&
      (OUT_WAITING(c) >= OUT_HIGH_WATER || c->close_after_write)) {
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
  }
  flush(c);
}

static void on_connection(uv_stream_t *server, int status) {
  frond__listener *l = server->data;
  frond__worker *w = l->w;
  frond__server *srv = w->srv;
  frond__conn *c;
  if (status < 0)
    return;
  c = calloc(1, sizeof *c);
  if (c == NULL)
    return;
  uv_tcp_init(&w->loop, &c->tcp);
  c->tcp.data = c;
  c->refs = 1;
  c->w = w;
  c->l = l;
  c->proto = l->proto;
  c->idle_ms = (uint64_t)srv->cfg.idle_timeout_ms;
  c->next = w->conns.next;
  c->prev = &w->conns;
  c->next->prev = c;
  w->conns.next = c;
  w->nconns++;
  atomic_fetch_add(&srv->nconns, 1);
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  c->last_ms = c->req_start_ms = uv_now(&w->loop);
  if (atomic_load(&srv->nconns) > srv->cfg.max_connections || w->draining) {
    FROND__INC(w->m.rejected, 1);
    if (l->ep->tls) {
      /* No handshake is spent on a connection refused. */
      conn_close(c);
      return;
    }
    c->close_after_write = 1;
    c->proto->busy(c);
    flush(c);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  if (l->ep->tls) {
    /* The protocol opens it once the handshake is done (tls_in). */
    if ((c->tls = frond__tls_conn_new(srv->tls, l->ep->alpn)) == NULL) {
      conn_close(c);
      return;
    }
    start_reading(c);
    return;
  }
  if (conn_open(c) == 0)
    start_reading(c);
}

/* Hand an accepted connection to its protocol. 0, or -1 (closed). */
static int conn_open(frond__conn *c) {
  if (c->proto->on_open != NULL && c->proto->on_open(c) != 0) {
    conn_close(c);
    return -1;
  }
  c->opened = 1;
  FROND__INC(c->l->accepted, 1);
  return 0;
}

static void begin_drain(frond__worker *w) {
  frond__conn *c, *next;
  int i;
  if (w->draining)
    return;
  w->draining = 1;
  w->drain_deadline = uv_now(&w->loop) + (uint64_t)w->srv->cfg.drain_timeout_ms;
  for (i = 0; i < w->nlisteners; i++)
    uv_close((uv_handle_t *)&w->listeners[i].tcp, NULL);
  for (c = w->conns.next; c != &w->conns; c = next) {
    next = c->next;
    if (c->rlen == 0 && !c->writing && c->out.len == 0 && !c->held)
      conn_close(c);
  }
}

static void close_walk(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void on_sweep(uv_timer_t *t) {
  frond__worker *w = t->data;
  const frond__config *cfg = &w->srv->cfg;
  uint64_t now = uv_now(&w->loop), start;
  frond__conn *c, *next;
  if (w->draining &&
      (w->nconns == 0 || (int64_t)(now - w->drain_deadline) >= 0)) {
    /* Its handles close now: no one may wake it any more. */
    pthread_mutex_lock(&w->srv->end_lock);
    w->closed = 1;
    pthread_mutex_unlock(&w->srv->end_lock);
    /* Work still in flight off the loop keeps the loop running until its
    ** completion has run (and found its connection gone). */
    for (c = w->conns.next; c != &w->conns; c = next) {
      next = c->next;
      conn_close(c);
    }
    uv_walk(&w->loop, close_walk, NULL);
    return;
  }
  for (c = w->conns.next; c != &w->conns; c = next) {
    next = c->next;
    if (c->lingering && now - c->linger_ms >= LINGER_MS) {
      conn_close(c);
      continue;
    }
    /* A client that does not read its answers is idle too. */
    if (c->writing && !c->closing &&
        now - c->last_ms >= (uint64_t)cfg->idle_timeout_ms) {
      FROND__INC(w->m.idle_timeouts, 1);
      conn_close(c);
      continue;
    }
    /* A held request is the server's to finish, not the client's. */
    if (c->closing || c->writing || c->close_after_write || c->held)
      continue;
    /* Work a protocol left open is timed as a pending request. */
    start = c->req_start_ms;
    if (c->open_ms != 0 && (start == 0 || c->open_ms < start))
      start = c->open_ms;
    if (start != 0 && now - start >= (uint64_t)cfg->header_timeout_ms) {
      FROND__INC(w->m.header_timeouts, 1);
      if (c->proto->on_timeout != NULL && c->opened)
        c->proto->on_timeout(c);
      c->close_after_write = 1;
      if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
      }
      flush(c);
    } else if (start == 0 && c->idle_ms != 0 &&
               now - c->last_ms >= c->idle_ms) {
      FROND__INC(w->m.idle_timeouts, 1);
      conn_close(c);
    } else if (start == 0 && c->rlen == 0 && c->out.len == 0 &&
               c->rcap + c->out.cap + c->wbuf.cap > 0 &&
               now - c->last_ms >= IDLE_FREE_MS) {
      /* Idle with nothing buffered: the small buffers go too; on_alloc
      ** and the next answer make new ones. */
      free(c->rbuf);
      c->rbuf = NULL;
      c->rcap = 0;
      frond__buf_free(&c->out);
      frond__buf_free(&c->wbuf);
      if (c->tls != NULL)
        frond__tls_trim(c->tls);
      count_buffers(c, 0);
    }
  }
}

static void on_wake(uv_async_t *a) {
  frond__worker *w = a->data;
  int draining = atomic_load(&w->srv->draining);
#ifdef FROND_TEST_HOOKS
  int wedge = atomic_exchange(&w->test_wedge_ms, 0);
  if (wedge > 0) /* test_notify.py: a loop stuck in a callback */
    uv_sleep((unsigned)wedge);
#endif
  if (draining)
    begin_drain(w);
  if (draining > 1 && !uv_is_closing((uv_handle_t *)&w->sweep)) {
    /* A second signal: the deadline is now. */
    w->drain_deadline = uv_now(&w->loop);
    on_sweep(&w->sweep);
  }
}

/* The watchdog's heartbeat: it moves only while this loop runs its
** callbacks. */
static void on_beat(uv_timer_t *t) {
  frond__worker *w = t->data;
  atomic_fetch_add(&w->beats, 1);
}

static void worker_main(void *arg) {
  frond__worker *w = arg;
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_loop_close(&w->loop);
  free(w->tls_in);
  w->tls_in = NULL;
  pthread_mutex_lock(&w->srv->end_lock);
  w->srv->loops_ended++;
  uv_async_send(w->srv->loop_ended);
  pthread_mutex_unlock(&w->srv->end_lock);
}

int frond__worker_start(frond__worker *w) {
  int64_t period;
  int r, i;
  w->conns.next = w->conns.prev = &w->conns;
  if ((r = uv_loop_init(&w->loop)) != 0)
    return r;
  for (i = 0; i < w->nlisteners; i++) {
    frond__listener *l = &w->listeners[i];
    uv_tcp_init(&w->loop, &l->tcp);
    l->tcp.data = l;
    l->w = w;
    if ((r = uv_tcp_open(&l->tcp, l->fd)) != 0 ||
        (r = uv_listen((uv_stream_t *)&l->tcp, 1024, on_connection)) != 0)
      return r;
  }
  uv_timer_init(&w->loop, &w->sweep);
  w->sweep.data = w;
  period = w->srv->cfg.header_timeout_ms;
  if (w->srv->cfg.idle_timeout_ms < period)
    period = w->srv->cfg.idle_timeout_ms;
  period /= 4;
  if (period > 250)
    period = 250;
  uv_timer_start(&w->sweep, on_sweep, (uint64_t)period, (uint64_t)period);
  uv_async_init(&w->loop, &w->wake, on_wake);
  w->wake.data = w;
  if (w->srv->watchdog_ms > 0) {
    /* Twice per check of the main thread: a loop that runs at all beats
    ** in every check's window. */
    uint64_t every = w->srv->watchdog_ms / 4 > 0 ? w->srv->watchdog_ms / 4 : 1;
    uv_timer_init(&w->loop, &w->beat);
    w->beat.data = w;
    uv_timer_start(&w->beat, on_beat, every, every);
  }
  return uv_thread_create(&w->thread, worker_main, w);
}

/* Safe at any time from any thread: a loop that has begun to close its
** handles has nothing left to be woken for. */
void frond__worker_wake(frond__worker *w) {
  pthread_mutex_lock(&w->srv->end_lock);
  if (!w->closed)
    uv_async_send(&w->wake);
  pthread_mutex_unlock(&w->srv->end_lock);
}

void frond__worker_join(frond__worker *w) {
  uv_thread_join(&w->thread);
}
