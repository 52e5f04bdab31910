/* SPDX-License-Identifier: Apache-2.0 */
/*
** server_fixture.h -- a server of one worker and one connection, for the
** protocol tests (test_http.c, test_resp.c), without a worker thread.
**
** A real generator and a SQLite store in a temp dir; the worker's loop is
** initialised but only run by the test. Input goes straight to the
** protocol's on_data, as the connection layer hands it over, and answers
** are read back from the connection's output. The connection is one end of
** a socketpair on that loop, so a request the protocol takes off the loop
** (frond__conn_hold) completes through the real connection layer: feed()
** runs the loop until it is answered and reads what was written from the
** other end. Everything runs on the test's thread; nothing asserts on
** another.
*/
#ifndef FROND_SERVER_FIXTURE_H
#define FROND_SERVER_FIXTURE_H

#include "testutil.h"
#include "server/acl.h"
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct fixture {
  char *dir;
  char uri[600];
  const frond__proto *proto;
  frond__server srv;
  frond__worker w;
  frond__conn *c;
  int peer;       /* the client's end of the socketpair */
  frond__buf got; /* the answers of the last feed() */
  int holds;      /* requests feed() found held, taken off the loop */
} fixture;

/* Create tag with step in the fixture's store, through a connection of its
** own (as another node or the CLI would). */
static void fixture_tag(fixture *f, const char *tag, int64_t step) {
  frond_error err = {0, ""};
  frond_store *st;
  assert_int_equal(frond_store_open(&st, f->uri, &err), 0);
  assert_int_equal(frond_store_tag_create(st, tag, step, 1, "", &err), 0);
  frond_store_close(st);
}

/* A server speaking proto with the tags (NULL-terminated) of step 100. */
static fixture *fixture_open(const frond__proto *proto,
                             const char *const *tags) {
  fixture *f = calloc(1, sizeof *f);
  frond__server *srv = &f->srv;
  frond__worker *w = &f->w;
  frond__listener *l = &w->listeners[0];
  frond_error err = {0, ""};
  frond_seg_options o;
  frond_seg *seg;
  int sv[2];
  f->proto = proto;
  f->dir = tmpdir_make();
  snprintf(f->uri, sizeof f->uri, "sqlite://%s/frond.db", f->dir);
  frond__config_defaults(&srv->cfg);
  snprintf(srv->cfg.store, sizeof srv->cfg.store, "%s", f->uri);
  for (; tags != NULL && *tags != NULL; tags++)
    fixture_tag(f, *tags, 100);
  frond__ids_seg_options(srv, &o);
  /* The server's waits for a load (tens of ms) are for a quiet store; a
  ** SQLite load on a machine loaded past its cores may take longer, and
  ** no test here asks for SEGMENT_UNAVAILABLE. */
  o.wait_ms = o.first_wait_ms = 10000;
  assert_int_equal(frond_seg_open(&seg, f->uri, &o, &err), 0);
  atomic_store(&srv->seg, seg);
  srv->seg_enabled = 1;
  atomic_store(&srv->ready, 1);
  assert_int_equal(frond_layout_parse("frond", &srv->layout, &err), 0);
  assert_int_equal(frond_gen_create(&srv->gen, &srv->layout, 3, NULL, &err), 0);
  srv->node = 3;
  srv->start_ms = frond_clock_realtime(NULL);
  pthread_mutex_init(&srv->store_lock, NULL);
  pthread_mutex_init(&srv->lookup_lock, NULL);
  pthread_mutex_init(&srv->rate_lock, NULL);
  srv->protos[0] = proto;
  srv->nprotos = 1;
  assert_int_equal(proto->configure(srv, &srv->ep[0], &err), 0);
  srv->nworkers = 1;
  srv->workers = w;
  w->srv = srv;
  w->ids = malloc((size_t)srv->cfg.max_count * sizeof(int64_t));
  w->conns.next = w->conns.prev = &w->conns;
  assert_int_equal(uv_loop_init(&w->loop), 0);
  l->w = w;
  l->proto = proto;
  l->ep = &srv->ep[0];
  l->state = calloc(1, proto->state_size);
  w->nlisteners = 1;
  /* One accepted connection, as on_connection makes it. */
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  f->c = calloc(1, sizeof *f->c);
  f->c->w = w;
  f->c->l = l;
  f->c->proto = proto;
  f->c->refs = 1;
  f->c->idle_ms = (uint64_t)srv->cfg.idle_timeout_ms;
  f->c->next = f->c->prev = &w->conns;
  w->conns.next = w->conns.prev = f->c;
  w->nconns = 1;
  atomic_store(&srv->nconns, 1);
  assert_int_equal(uv_tcp_init(&w->loop, &f->c->tcp), 0);
  assert_int_equal(uv_tcp_open(&f->c->tcp, sv[0]), 0);
  f->c->tcp.data = f->c;
  if (proto->on_open != NULL)
    assert_int_equal(proto->on_open(f->c), 0);
  f->c->opened = 1;
  FROND__INC(l->accepted, 1);
  f->peer = sv[1];
  assert_int_equal(fcntl(f->peer, F_SETFL, O_NONBLOCK), 0);
  return f;
}

/* Set the admin token ("": none) and read the credentials again, as a
** start would (server/acl.h). */
static inline void fixture_token(fixture *f, const char *tok) {
  frond_error err = {0, ""};
  snprintf(f->srv.cfg.admin_token, sizeof f->srv.cfg.admin_token, "%s", tok);
  assert_int_equal(frond__acl_open(&f->srv, &err), 0);
}

static void fixture_close(fixture *f) {
  frond__worker *w = &f->w;
  frond__acl_conn_drop(f->c);
  frond__acl_close(&f->srv);
  if (f->proto->on_close != NULL)
    f->proto->on_close(f->c);
  uv_close((uv_handle_t *)&f->c->tcp, NULL);
  assert_int_equal(uv_run(&w->loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&w->loop), 0);
  close(f->peer);
  free(f->c->rbuf);
  frond__buf_free(&f->c->out);
  frond__buf_free(&f->c->wbuf);
  free(f->c);
  free(w->listeners[0].state);
  frond__buf_free(&w->scratch);
  frond__buf_free(&f->got);
  free(w->ids);
  frond_seg_close(f->srv.seg);
  frond_gen_close(f->srv.gen, NULL);
  if (f->srv.store_conn != NULL)
    frond_store_close(f->srv.store_conn);
  tmpdir_remove(f->dir);
  free(f);
}

/* cmocka's teardown for a test whose state is a fixture. */
static int fixture_teardown(void **state) {
  fixture_close(*state);
  return 0;
}

/* Run the loop until a held request has been answered. */
static void fixture_settle(fixture *f) {
  int i;
  f->holds += f->c->held;
  for (i = 0; f->c->held && i < 100000; i++)
    uv_run(&f->w.loop, UV_RUN_ONCE);
  assert_false(f->c->held);
}

/* Feed s as the connection layer would: whole requests, in a loop, waiting
** for any held one before the next. Returns the answers (in f->got,
** NUL-terminated) and the last on_data result in *last. */
static const char *feed(fixture *f, const char *s, size_t len, int *last) {
  frond__conn *c = f->c;
  size_t off = 0;
  int n = 0;
  char chunk[65536];
  ssize_t r;
  f->got.len = 0;
  while (off < len) {
    fixture_settle(f);
    n = c->proto->on_data(c, s + off, len - off);
    /* Held without consuming (a Redis EXEC behind a command that waits):
    ** the same bytes again once it is answered, as the connection does. */
    if (n == 0 && c->held)
      continue;
    if (n <= 0)
      break;
    off += (size_t)n;
  }
  fixture_settle(f);
  if (last != NULL)
    *last = n;
  /* What a held answer flushed went out first, then what waits in out. */
  while ((r = read(f->peer, chunk, sizeof chunk)) > 0)
    assert_int_equal(frond__buf_append(&f->got, chunk, (size_t)r), 0);
  assert_true(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  assert_int_equal(
      frond__buf_append(&f->got, c->out.data ? c->out.data : "", c->out.len),
      0);
  c->out.len = 0;
  assert_int_equal(frond__buf_append(&f->got, "", 1), 0);
  f->got.len--;
  return f->got.data;
}

#define FEED(f, lit, last) feed(f, lit, sizeof(lit) - 1, last)

#endif /* FROND_SERVER_FIXTURE_H */
