/*
** server.h -- the pieces of `frond serve` and how they fit.
**
** One process, N worker threads. Each worker owns a libuv loop, its own
** listening socket per protocol (SO_REUSEPORT: the kernel spreads
** connections), its connections and its counters. Nothing is shared on
** the request path except the generator's atomic word and the segment
** allocator, both lock-free while healthy.
**
** The connection layer (conn.c) knows bytes, limits and timeouts, and no
** protocol: a protocol (http.c, resp.c) plugs in through its frond__proto
** table, which brings its configuration check, its per-worker state, its
** metrics, its busy answer and its connection callbacks. Files call one
** another one way only; by level, each using only levels below it:
**
**   buf, config, http_parse, resp_parse     pure: no server state
**   conn, json, metrics, resp_reply         loops; counters; replies
**   ids, status, http_out                   IDs; the status page; answers
**   http_api, resp_cmds                     endpoints, commands
**   http_admin, resp                        admin calls; RESP's table
**   http                                    HTTP's table
**   serve                                   start-up, signals
**
** tests/integration/test_layers.py fails on any circle among them.
*/
#ifndef FROND_SERVER_H
#define FROND_SERVER_H

#include "frond.h"
#include "server/buf.h"
#include "server/config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

typedef struct frond__conn frond__conn;
typedef struct frond__worker frond__worker;
typedef struct frond__server frond__server;
typedef struct frond__listener frond__listener;

/* Where a protocol listens, decided by its configure hook. */
typedef struct frond__endpoint {
  const char *key; /* its configuration key and value, for messages */
  const char *text;
  frond__addr addr;
  size_t max_input; /* largest unconsumed input a connection holds */
} frond__endpoint;

/*
** A protocol.
**
** configure (main thread, at start-up) checks the protocol's keys against
** the rest of the configuration and fills ep; it returns 0, 1 when the
** protocol is off, or a FROND_E* code with err filled.
** state_size is the size of the zeroed state each worker keeps for it
** (counters, caches), reached as c->l->state on its connections.
** metrics (optional) appends its Prometheus families.
**
** on_open (optional) runs once a connection is accepted and may set its
** idle time and c->pdata; on_close (optional) releases c->pdata; it runs
** only after on_open succeeded. on_data handles the unconsumed input
** buf[0..len) and returns the bytes it consumed (> 0; it is called again
** with the rest), 0 when it needs more bytes, or -1 to close the
** connection once the output written so far is flushed. It answers by
** appending to frond__conn_out(c), or takes the request off the loop with
** frond__conn_hold. on_timeout may write a last answer before a slow
** client is closed. busy is what a connection refused at max_connections
** (or while draining) is told before it is closed.
*/
typedef struct frond__proto {
  const char *name;
  int (*configure)(frond__server *srv, frond__endpoint *ep, frond_error *err);
  size_t state_size;
  void (*metrics)(frond__server *srv, frond__buf *b);
  int (*on_open)(frond__conn *c);
  int (*on_data)(frond__conn *c, const char *buf, size_t len);
  void (*on_timeout)(frond__conn *c);
  void (*on_close)(frond__conn *c);
  const char *busy;
} frond__proto;

/* Per-worker counters: written only by the owning thread with relaxed
** stores, read by the scraper with relaxed loads. */
typedef _Atomic uint64_t frond__counter;
#define FROND__INC(ctr, n)                                                     \
  atomic_store_explicit(                                                       \
      &(ctr), atomic_load_explicit(&(ctr), memory_order_relaxed) + (n),        \
      memory_order_relaxed)
#define FROND__GET(ctr) atomic_load_explicit(&(ctr), memory_order_relaxed)

/* A listening socket of one worker and the protocol spoken on it. */
struct frond__listener {
  uv_tcp_t tcp;
  frond__worker *w;
  int fd; /* bound and listening, from frond__listen_socket */
  const frond__proto *proto;
  const frond__endpoint *ep;
  void *state; /* proto->state_size bytes, the protocol's own */
  frond__counter accepted;
  frond__counter closed;
};

#define FROND__MAX_PROTOS 2 /* HTTP, and RESP on its own port */

struct frond__conn {
  uv_tcp_t tcp;
  frond__worker *w;
  frond__listener *l;
  const frond__proto *proto;
  frond__conn *prev, *next;
  char *rbuf;
  size_t rlen, rcap;
  frond__buf out;  /* answers being built */
  frond__buf wbuf; /* answers being written by uv_write */
  uv_write_t wreq;
  uv_shutdown_t sreq;
  unsigned writing : 1;
  unsigned lingering : 1;
  unsigned reading : 1;
  unsigned closing : 1;
  unsigned close_after_write : 1;
  unsigned eof : 1;      /* the client half-closed */
  unsigned opened : 1;   /* on_open succeeded: on_close is due */
  unsigned held : 1;     /* an answer is being prepared off the loop */
  unsigned refs;         /* the handle's, and one per frond__conn_hold */
  uint64_t last_ms;      /* last read or write activity */
  uint64_t req_start_ms; /* first byte of the pending request, 0: idle */
  uint64_t linger_ms;    /* when the lingering close began */
  unsigned proto_state;  /* the protocol's own, zeroed at accept */
  uint64_t idle_ms;      /* close after this long idle, 0: never */
  void *pdata;           /* the protocol's per-connection state */
  size_t counted;        /* buffer bytes counted in w->m.buffer_bytes */
};

/* Generic per-worker counters; a protocol keeps its own in its state. */
typedef struct frond__metrics {
  frond__counter ids_snowflake;
  frond__counter ids_segment;
  frond__counter rejected;
  frond__counter header_timeouts;
  frond__counter idle_timeouts;
  /* Bytes of read and answer buffers held by open connections (a gauge;
  ** each connection's share as of its last flush). */
  frond__counter buffer_bytes;
} frond__metrics;

struct frond__worker {
  int id;
  frond__server *srv;
  uv_loop_t loop;
  uv_thread_t thread;
  frond__listener listeners[FROND__MAX_PROTOS];
  int nlisteners;
  uv_timer_t sweep;
  uv_async_t wake;
  frond__conn conns; /* list head */
  size_t nconns;
  int draining;
  uint64_t drain_deadline;
  frond__buf scratch; /* answer bodies under construction */
  int64_t *ids;       /* max_count IDs */
  frond__metrics m;
};

struct frond_coord;

struct frond__server {
  frond__config cfg;
  frond_layout layout;
  uint64_t node;
  frond_gen *gen;
  /* Who says which node ID this process may use (static:N by default). */
  struct frond_coord *coord;
  char coord_uri[FROND__CFG_STR_MAX + 32];
  /* NULL with store = none, and until the store is first reached: the
  ** main thread retries opening it and publishes it here. */
  frond_seg *_Atomic seg;
  int seg_enabled;
  int nworkers;
  frond__worker *workers;
  int64_t start_ms;
  atomic_int draining;
  atomic_int ready;
  atomic_long nconns;
  /* The protocols, and where each listens (port 0: off). */
  const frond__proto *protos[FROND__MAX_PROTOS];
  frond__endpoint ep[FROND__MAX_PROTOS];
  int nprotos;
  /* The HTTP address, which the coordinator records for this node. */
  char listen_host[256];
  int listen_port;
  /* The server's own store connection, for calls made off the loop (tag
  ** admin, look-ups of unknown tags): one call at a time, under store_lock;
  ** opened on first use (frond__store_conn). */
  pthread_mutex_t store_lock;
  frond_store *store_conn;
  /* Look-ups of unknown tags (ids.c), under lookup_lock. */
  pthread_mutex_t lookup_lock;
  int64_t lookup_second;
  unsigned lookups, lookups_in_flight;
  /* The snowflake rate (status.c), under rate_lock; segment tags' rates
  ** are the allocator's (frond_seg_sample). */
  pthread_mutex_t rate_lock;
  double rate_snowflake;
  uint64_t last_snowflake;
  int64_t sample_next_ns; /* main thread: the next frond_seg_sample */
};

/* ---------------------------------------------------------------- conn.c */

static inline frond__buf *frond__conn_out(frond__conn *c) {
  return &c->out;
}
/* Will the server close this connection after the current answer? */
int frond__conn_draining(const frond__conn *c);
/*
** Inside on_data: the request just consumed is answered later, from work
** done off the loop. Input waits meanwhile (it is still read, so that a
** client that goes away is noticed), and the connection stays allocated
** until frond__conn_resume, even if it is closed before.
*/
void frond__conn_hold(frond__conn *c);
/* Has the connection been closed while held? Then nothing may be written
** to it; frond__conn_resume still must be called. */
int frond__conn_gone(const frond__conn *c);
/* On the loop, once the held answer is in frond__conn_out(c) (or the
** connection is gone): write it, and go on with the input that waited;
** close_after closes the connection once written. */
void frond__conn_resume(frond__conn *c, int close_after);

/* The protocols' endpoints (port 0: off) may not share a port. */
int frond__endpoints_check(const frond__endpoint *ep, int n, frond_error *err);
/* Fail with IO when host:port is taken, by anyone. */
int frond__listen_probe(const frond__addr *a, frond_error *err);
/* A bound, listening SO_REUSEPORT socket, or -1 with err filled. */
int frond__listen_socket(const frond__addr *a, frond_error *err);
int frond__worker_start(frond__worker *w);
void frond__worker_wake(frond__worker *w);
void frond__worker_join(frond__worker *w);

/* ------------------------------------------------------------- metrics.c */

/* The sum over workers of the frond__metrics counter at offset off. */
uint64_t frond__metrics_sum(const frond__server *srv, size_t off);
#define FROND__SUM(srv, field)                                                 \
  frond__metrics_sum(srv, offsetof(frond__metrics, field))
/* The sum over p's listeners of the counter at offset off of its state. */
uint64_t frond__metrics_state_sum(const frond__server *srv,
                                  const frond__proto *p, size_t off);
/* Connections p accepted, and how many of them are open now. */
void frond__metrics_conns(const frond__server *srv, const frond__proto *p,
                          uint64_t *accepted, uint64_t *open);
/* One counter or gauge family with a single value. */
void frond__metrics_counter(frond__buf *b, const char *name, const char *help,
                            uint64_t v);
void frond__metrics_gauge(frond__buf *b, const char *name, const char *help,
                          double v);
/* The tags that get per-tag series (in /metrics and INFO): those named in
** metrics_tags and the metrics_top_tags fastest, by name, in *out (free
** with free; NULL when none). 0, or -1 when out of memory. */
int frond__metrics_tags(frond__server *srv, frond_tag_info **out, size_t *n);
/* The whole /metrics page. */
void frond__metrics_render(frond__server *srv, frond__buf *b);

/* ----------------------------------------------------------------- ids.c */

/* Issue n IDs into w->ids (n <= max_count) and count them; 0 or the
** library's code with err filled. A segment allocator that is not there
** (store not reached yet, or store = none) is SEGMENT_UNAVAILABLE with a
** message saying which. Segment calls never wait on the loop: a tag the
** allocator does not know fails with TAG_NOT_FOUND, a call that would wait
** for the store returns FROND__AGAIN; either goes to
** frond__ids_segment_later. */
int frond__ids_snowflake(frond__worker *w, size_t n, frond_error *err);
int frond__ids_segment(frond__worker *w, const char *tag, size_t len, size_t n,
                       frond_error *err);
/* A range lease of n IDs [*start, *start + n), as frond__ids_segment. */
int frond__ids_range(frond__worker *w, const char *tag, size_t len, int64_t n,
                     int64_t *start, frond_error *err);

/* The segment allocator's options for the server (see ids.c). */
void frond__ids_seg_options(const frond__server *srv, frond_seg_options *o);

/* A segment request finished off the loop (an unknown tag looked up in
** the store, or a call that waits for the loaders). A protocol embeds it
** in its own record of the request (first member), sets done, and range
** for a range lease. */
typedef struct frond__ids_call frond__ids_call;
struct frond__ids_call {
  uv_work_t work;
  frond__worker *w;
  frond__conn *c; /* held until done has called frond__conn_resume */
  char tag[FROND_TAG_MAX + 1];
  size_t len, n;
  int range;     /* a range lease of n IDs: start, not ids */
  int lookup;    /* the tag is looked up in the store first */
  int64_t *ids;  /* n IDs when rc is 0; done frees it */
  int64_t start; /* a range's first ID when rc is 0 */
  int rc;
  frond_error err;
  /* On the loop: answer (unless frond__conn_gone), resume c, free. */
  void (*done)(frond__ids_call *call);
};
/* After frond__ids_segment or frond__ids_range returned why (TAG_NOT_FOUND
** or FROND__AGAIN): finish the request off the loop, looking the tag up
** first for TAG_NOT_FOUND. Returns 1 when queued (c is held, done will
** run), 0 when it cannot be (another code, the look-up budget spent, no
** allocator): then answer the error at once. */
int frond__ids_segment_later(frond__ids_call *call, frond__conn *c,
                             const char *tag, size_t len, size_t n, int why);

/* With store_lock held: open the server's own store connection unless it
** is open. 0, or STORE (store = none, or unreachable). */
int frond__store_conn(frond__server *srv, frond_error *err);
/* With store_lock held, after a call on it returned rc: a connection that
** failed with STORE is closed, to be opened again by the next call. */
void frond__store_conn_check(frond__server *srv, int rc);

/* -------------------------------------------------------------- status.c */

/* The status page for the request target (its query: page=N, q=TEXT, a
** search in tag names). */
void frond__status_render(frond__server *srv, frond__buf *b, const char *target,
                          size_t len);
/* Called once a second (dt seconds since the last call): rates. */
void frond__rates_sample(frond__server *srv, double dt);

/* ------------------------------------------------------ the protocols */

extern const frond__proto frond__http_proto;
extern const frond__proto frond__resp_proto;

#endif /* FROND_SERVER_H */
