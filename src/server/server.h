/*
** server.h -- the pieces of `frond serve` and how they fit.
**
** One process, N worker threads. Each worker owns a libuv loop, its own
** listening socket per protocol (SO_REUSEPORT: the kernel spreads
** connections), its connections and its metrics. Nothing is shared on the
** request path except the generator's atomic word and the segment
** allocator, both lock-free while healthy.
**
** The connection layer (conn.c) knows bytes, limits and timeouts; a
** protocol (http.c, resp.c) plugs in through frond__proto. Each protocol
** has its own listening port; both run on the same loops.
*/
#ifndef FROND_SERVER_H
#define FROND_SERVER_H

#include "frond.h"
#include "server/config.h"
#include "server/resp.h"

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

typedef struct frond__conn frond__conn;
typedef struct frond__worker frond__worker;
typedef struct frond__server frond__server;

/* A growable byte buffer, reused for the life of a connection. */
typedef struct frond__buf {
  char *data;
  size_t len;
  size_t cap;
} frond__buf;

int frond__buf_reserve(frond__buf *b, size_t extra);
int frond__buf_append(frond__buf *b, const void *p, size_t n);
int frond__buf_printf(frond__buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void frond__buf_free(frond__buf *b);

/*
** A protocol. on_data handles the unconsumed input buf[0..len) and returns
** the bytes it consumed (> 0; it is called again with the rest), 0 when it
** needs more bytes, or -1 to close the connection once the output written
** so far is flushed. It answers by appending to frond__conn_out(c).
** on_timeout may write a last answer before a slow client is closed.
** on_open (optional) runs once a connection is accepted and may set its
** idle time and c->pdata; on_close (optional) releases c->pdata. busy is
** what a connection refused at max_connections is told before it is
** closed (NULL: HTTP's 503).
*/
enum { FROND__PROTO_HTTP = 0, FROND__PROTO_RESP = 1 };

typedef struct frond__proto {
  const char *name;
  int (*on_data)(frond__conn *c, const char *buf, size_t len);
  void (*on_timeout)(frond__conn *c);
  int id; /* FROND__PROTO_* */
  int (*on_open)(frond__conn *c);
  void (*on_close)(frond__conn *c);
  const char *busy;
} frond__proto;

/* A listening socket of one worker and the protocol spoken on it. */
typedef struct frond__listener {
  uv_tcp_t tcp;
  frond__worker *w;
  int fd; /* bound and listening, from frond__listen_socket */
  const frond__proto *proto;
  size_t max_input; /* largest unconsumed input a connection holds */
} frond__listener;

#define FROND__MAX_LISTENERS 2 /* HTTP, and RESP on its own port */

struct frond__conn {
  uv_tcp_t tcp;
  frond__worker *w;
  const frond__listener *l;
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
  uint64_t last_ms;      /* last read or write activity */
  uint64_t req_start_ms; /* first byte of the pending request, 0: idle */
  uint64_t linger_ms;    /* when the lingering close began */
  unsigned proto_state;  /* the protocol's own, zeroed at accept */
  uint64_t idle_ms;      /* close after this long idle, 0: never */
  void *pdata;           /* the protocol's per-connection state */
};

static inline frond__buf *frond__conn_out(frond__conn *c) {
  return &c->out;
}
/* Will the server close this connection after the current answer? */
int frond__conn_draining(const frond__conn *c);

/* Per-worker counters: written only by the owning thread with relaxed
** stores, read by the scraper with relaxed loads. */
typedef _Atomic uint64_t frond__counter;
#define FROND__INC(ctr, n)                                                     \
  atomic_store_explicit(                                                       \
      &(ctr), atomic_load_explicit(&(ctr), memory_order_relaxed) + (n),        \
      memory_order_relaxed)
#define FROND__GET(ctr) atomic_load_explicit(&(ctr), memory_order_relaxed)

enum {
  FROND__R_LEAF_SEGMENT,
  FROND__R_LEAF_SNOWFLAKE,
  FROND__R_LEAF_DECODE,
  FROND__R_SNOWFLAKE,
  FROND__R_SEGMENT,
  FROND__R_DECODE,
  FROND__R_LAYOUT,
  FROND__R_TAGS,
  FROND__R_METRICS,
  FROND__R_LIVEZ,
  FROND__R_READYZ,
  FROND__R_STATUS,
  FROND__R_OTHER,
  FROND__R_COUNT
};
extern const char *const frond__route_names[FROND__R_COUNT];

#define FROND__NSTATUS 18
extern const int frond__statuses[FROND__NSTATUS]; /* last slot: other */
int frond__status_index(int status);

#define FROND__NBUCKETS 14
extern const double frond__bucket_bounds[FROND__NBUCKETS]; /* seconds */

typedef struct frond__metrics {
  frond__counter requests[FROND__R_COUNT][FROND__NSTATUS];
  frond__counter duration[FROND__R_COUNT][FROND__NBUCKETS + 1];
  frond__counter duration_ns[FROND__R_COUNT];
  frond__counter ids_snowflake;
  frond__counter ids_segment;
  frond__counter errors_clock_behind;
  frond__counter accepted;
  frond__counter rejected;
  frond__counter closed;
  frond__counter header_timeouts;
  frond__counter idle_timeouts;
  frond__counter bad_requests;
  frond__resp_metrics resp;
} frond__metrics;

struct frond__worker {
  int id;
  frond__server *srv;
  uv_loop_t loop;
  uv_thread_t thread;
  frond__listener listeners[FROND__MAX_LISTENERS];
  int nlisteners;
  uv_timer_t sweep;
  uv_async_t wake;
  frond__conn conns; /* list head */
  size_t nconns;
  int draining;
  uint64_t drain_deadline;
  char date[48]; /* "Date: ...\r\n", refreshed by the sweep timer */
  size_t date_len;
  frond__buf scratch; /* answer bodies under construction */
  int64_t *ids;       /* max_count IDs */
  frond__metrics m;
};

/* Rates sampled once a second by the main thread. */
typedef struct frond__rate {
  char tag[FROND_TAG_MAX + 1];
  uint64_t last;
  double per_sec;
} frond__rate;

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
  int leaf_local_time;
  int nworkers;
  frond__worker *workers;
  int64_t start_ms;
  atomic_int draining;
  atomic_int ready;
  atomic_long nconns;
  char listen_host[256];
  int listen_port;
  int loopback;
  char resp_host[256];
  int resp_port; /* 0: RESP is off */
  /* Admin: one store connection, one request at a time. */
  pthread_mutex_t admin_lock;
  frond_store *admin_store;
  /* Rates, under rate_lock. */
  pthread_mutex_t rate_lock;
  double rate_snowflake;
  uint64_t last_snowflake;
  frond__rate *rates;
  size_t nrates;
};

/* serve.c: "host:port" or "[v6]:port" into host[256] and *port; localhost
** becomes 127.0.0.1. Returns 0 or -1 after writing a message to err. */
int frond__parse_hostport(const char *key, const char *l, char *host, int *port,
                          int *loopback, char *err, size_t len);

/* ids.c: issue n IDs into w->ids (n <= max_count) and count them; 0 or
** the library's code with err filled. A segment allocator that is not
** there (store not reached yet, or store = none) is SEGMENT_UNAVAILABLE
** with a message saying which. */
int frond__ids_snowflake(frond__worker *w, size_t n, frond_error *err);
int frond__ids_segment(frond__worker *w, const char *tag, size_t len, size_t n,
                       frond_error *err);

/* conn.c */
void frond__worker_date(frond__worker *w);
/* Fail (with a message) when host:port is taken, by anyone. */
int frond__listen_probe(const char *host, int port, char *err, size_t len);
/* A bound, listening SO_REUSEPORT socket, or -1 with a message. */
int frond__listen_socket(const char *host, int port, char *err, size_t len);
int frond__worker_start(frond__worker *w);
void frond__worker_wake(frond__worker *w);
void frond__worker_join(frond__worker *w);

/* http.c */
extern const frond__proto frond__http_proto;

/* resp.c */
extern const frond__proto frond__resp_proto;
/* Check the RESP keys of srv->cfg and set resp_host/resp_port. */
int frond__resp_configure(frond__server *srv, char *err, size_t len);
void frond__resp_metrics_render(frond__server *srv, frond__buf *b);

/* metrics.c */
void frond__metrics_render(frond__server *srv, frond__buf *b);
void frond__status_render(frond__server *srv, frond__buf *b);
void frond__rates_sample(frond__server *srv, double dt);

#endif /* FROND_SERVER_H */
