/* SPDX-License-Identifier: Apache-2.0 */
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
** metrics, its busy answer and its connection callbacks; it serves what
** a request asks through the request layer (req.c), which every front
** shares. Files call one another one way only; by level, each using only
** levels below it:
**
**   buf, build, http_parse, resp_parse      pure: no server state
**   tls, listen                             TLS records; sockets
**   conn, json, notify, config              loops; what systemd is told
**   ids                                     IDs
**   formats                                 ID strings of formats
**   audit                                   the audit log
**   req, metrics                            the request layer: checks,
**                                           waits off the loop, answers;
**                                           counters
**   http_out, resp_reply, status            answers; the status page
**   http_args, resp_cmds, resp_formats      HTTP's arguments; commands
**   http_api, http_decode, http_admin, resp endpoints; RESP's table
**   http                                    HTTP's table
**   serve                                   start-up, signals
**
** tests/integration/test_layers.py fails on any circle among them.
*/
#ifndef FROND_SERVER_H
#define FROND_SERVER_H

#include "core/format_fields.h"
#include "frond.h"
#include "server/buf.h"
#include "server/config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
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
  int tls;          /* spoken over TLS (set before configure) */
  const char *alpn; /* over TLS: the ALPN protocol it answers, or NULL */
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
** client is closed. busy writes what a connection refused at
** max_connections (or while draining) is told before it is closed.
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
  void (*busy)(frond__conn *c);
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
/* Each protocol on a plain port and on a TLS port. */
#define FROND__MAX_LISTENERS (2 * FROND__MAX_PROTOS)

/* A connection stops reading, and a protocol that answers in parts (a
** Redis EXEC) stops answering, while this much output waits for a slow
** reader; on_data returning 0 then waits for the output to drain. */
#define FROND__OUT_HIGH_WATER (4u << 20)

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
  unsigned eof : 1;       /* the client half-closed */
  unsigned opened : 1;    /* on_open succeeded: on_close is due */
  unsigned held : 1;      /* an answer is being prepared off the loop */
  unsigned pumping : 1;   /* start_reading answers input (conn.c) */
  unsigned tls_begun : 1; /* over TLS: its first bytes were looked at */
  unsigned refs;          /* the handle's, and one per frond__conn_hold */
  uint64_t last_ms;       /* last read or write activity */
  uint64_t req_start_ms;  /* first byte of the pending request, 0: idle */
  uint64_t open_ms;       /* the protocol's: work left open across requests
                            (a Redis transaction) since, timed out as a
                            pending request is; 0: none */
  uint64_t linger_ms;     /* when the lingering close began */
  unsigned proto_state;   /* the protocol's own, zeroed at accept */
  uint64_t idle_ms;       /* close after this long idle, 0: never */
  void *pdata;            /* the protocol's per-connection state */
  size_t counted;         /* buffer bytes counted in w->m.buffer_bytes */
  /* The subject name of the client certificate the TLS transport verified
  ** (mTLS), NUL-terminated; "" without one. Credentials map it to a client. */
  char cert_name[256];
  /* The TLS of a connection to a TLS listener (tls.c); NULL: plain. */
  struct frond__tls_conn *tls;
  /* The client the current request comes from, once its credentials are
  ** checked (acl.c, which keeps its set alive meanwhile); NULL: none. */
  const struct frond__client *client;
};

/* Generic per-worker counters; a protocol keeps its own in its state. */
typedef struct frond__metrics {
  frond__counter ids_snowflake;
  frond__counter ids_segment;
  frond__counter ids_forwarded; /* an ordered tag's, from its owner */
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
  frond__listener listeners[FROND__MAX_LISTENERS];
  int nlisteners;
  char *tls_in; /* ciphertext as read, before frond__tls_feed (conn.c) */
  uv_timer_t sweep;
  uv_async_t wake;
  frond__conn conns; /* list head */
  size_t nconns;
  int draining;
  uint64_t drain_deadline;
  int closed;         /* its handles are closing (under srv->end_lock) */
  frond__buf scratch; /* answer bodies under construction */
  int64_t *ids;       /* max_count IDs */
  frond__buf strs;    /* ID strings of a format (formats.c) */
  frond__counter *format_counts; /* strings issued, per format */
  frond__metrics m;
  /* The watchdog's heartbeat: bumped by a timer of this loop, read by the
  ** main thread, which alone keeps beats_seen and stalled_ms. */
  uv_timer_t beat;
  _Atomic uint64_t beats;
  uint64_t beats_seen;
  uint64_t stalled_ms; /* when it was first seen stuck, 0: it is not */
  /* Set only by a test build's hook (serve.c): block this loop once, this
  ** long. The field is in every build so that the struct is one shape. */
  atomic_int test_wedge_ms;
};

struct frond_coord;

/* A format the server issues and decodes: one named by the configuration
** (format.<name>), or a built-in behind /v1/uuid7, /v1/uuid4, /v1/ulid,
** /v1/objectid and ID.UUID, ID.ULID, ID.OBJECTID (formats.c). */
typedef struct frond__named_format {
  char name[FROND__CFG_FORMAT_NAME_MAX + 1];
  frond_format *f;
  int kind;      /* FROND_FORMAT_* */
  size_t stride; /* room of one string: frond_format_length + 1 */
  size_t index;  /* its counter in every worker's format_counts */
} frond__named_format;

enum {
  FROND__BUILTIN_UUID7,
  FROND__BUILTIN_UUID4,
  FROND__BUILTIN_ULID,
  FROND__BUILTIN_OBJECTID,
  FROND__BUILTINS
};

#define FROND__STORE_ID_LEN 32

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
  int64_t start_ms;      /* the wall clock at start: "started at" */
  int64_t start_mono_ns; /* the monotonic clock at start: uptime */
  uint64_t watchdog_ms;  /* systemd's WatchdogSec, 0: none */
  /* 0: serving; 1: draining (the first SIGTERM or SIGINT); 2: a second
  ** signal ended the drain at once. Written by the main thread only. */
  atomic_int draining;
  /* Each worker's loop, as it ends, counts itself here and wakes the main
  ** thread, which keeps its signals handled until the last one has; both
  ** under end_lock, so that the handle is closed after the last wake. */
  pthread_mutex_t end_lock;
  int loops_ended;
  uv_async_t *loop_ended;
  /* Every configured kind of ID ready (ready.c), as the last tick saw
  ** it: what the log and systemd were told. */
  atomic_int ready;
  /* What the last try to open the store failed with for good, 0 when
  ** none: segment IDs are "store refusing" rather than "not reached". */
  atomic_int store_refusing;
  atomic_long nconns;
  /* The protocols, and where each listens (port 0: off): protocol i on
  ** ep[i], and over TLS on ep[FROND__MAX_PROTOS + i]. */
  const frond__proto *protos[FROND__MAX_PROTOS];
  frond__endpoint ep[FROND__MAX_LISTENERS];
  int nprotos;
  /* The TLS listeners' certificate and key (tls.c); NULL: none on. */
  struct frond__tls *tls;
  /* The HTTP address, which the coordinator records for this node. */
  char listen_host[256];
  char owner_addr[300]; /* where other nodes forward this node's ordered
                           tags: advertise, else the HTTP address */
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
  /* ID formats (formats.c), built at start, read-only after. */
  frond__named_format *formats; /* format.<name>, in the configuration's
                                   order */
  size_t nformats;
  frond__named_format builtin[FROND__BUILTINS];
  int facts_up; /* main thread: the formats' record place answered at the
                   last tick (frond__formats_tick) */
  /* Rates (status.c), under rate_lock. */
  pthread_mutex_t rate_lock;
  double rate_snowflake;
  uint64_t last_snowflake;
  int64_t sample_next_ns; /* main thread: the next frond_seg_sample */
  /* The store's identity (store_id.c): written once, before store_id_known
  ** is set (release); read after it (acquire). */
  char store_id[FROND__STORE_ID_LEN + 1];
  atomic_int store_id_known;
  int store_id_busy; /* main thread: a read is on the pool */
  /* The coordinator not yet checked against the store's record (the store
  ** not reached at start; node_coord.c): no snowflake ID until it is.
  ** Cleared by the check on the pool (coord_check_busy: main thread). */
  atomic_int coord_unchecked;
  int coord_check_busy;
  /* Quotas (quota.c), built at start; NULL when none is configured. */
  struct frond__quota *quota;
  /* The audit log (audit.c); NULL without audit_log. */
  struct frond__audit *audit;
};

/* Milliseconds since the server started, on the monotonic clock: a wall
** clock stepped back does not make it negative (metrics, status, INFO). */
static inline int64_t frond__uptime_ms(const frond__server *srv) {
  return (frond__mono_ns() - srv->start_mono_ns) / 1000000;
}

/* ------------------------------------------------------------ store_id.c */

/* Read (or record) the store's identity now; blocks on the store. 0, or
** the failure (logged). */
int frond__store_id_read(frond__server *srv);
/* Main thread, each tick: read it off the loop while it is not known. */
void frond__store_id_tick(frond__server *srv);
/* The identity, or NULL while not known (and with store = none). Any
** thread. */
const char *frond__store_id(const frond__server *srv);

/* ---------------------------------------------------------------- conn.c */

static inline frond__buf *frond__conn_out(frond__conn *c) {
  return &c->out;
}
/* The client's address, "host:port" ("[v6]:port"), into buf, for a log
** line about its request. */
#define FROND__PEER_MAX 64
const char *frond__conn_peer(frond__conn *c, char *buf, size_t cap);
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

/* v as the text format spells a sample value or a bucket bound: the
** shortest decimal that reads back as v exactly (0.705, not
** 0.70499999999999996), without an exponent between 1e-12 and 1e21
** (0.00001, not 1e-05), and NaN, +Inf, -Inf. Returns buf. */
#define FROND__NUM_MAX 48
const char *frond__metrics_num(double v, char buf[FROND__NUM_MAX]);

/*
** Latency histograms, as HTTP keeps them per route and RESP per command:
** fixed bounds (1 us to 1 s), one frond__hist per worker and key, written
** by the worker's thread with relaxed stores (no lock, no shared line),
** summed at scrape.
*/
/* The monotonic clock in ns, for a histogram's start and end: glibc's
** clock_gettime straight to the vDSO (uv_hrtime costs twice the
** instructions, counted with callgrind by bench/http/histograms.sh). */
static inline uint64_t frond__clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define FROND__HIST_BOUNDS 17
extern const uint64_t frond__hist_bounds_ns[FROND__HIST_BOUNDS];
typedef struct frond__hist {
  frond__counter n[FROND__HIST_BOUNDS + 1]; /* the last: above every bound */
  frond__counter sum_ns;
} frond__hist;
static inline void frond__hist_add(frond__hist *h, uint64_t ns) {
  int i = 0;
  while (i < FROND__HIST_BOUNDS && ns > frond__hist_bounds_ns[i])
    i++;
  FROND__INC(h->n[i], 1);
  FROND__INC(h->sum_ns, ns);
}
/* The # HELP and # TYPE lines of a histogram family. */
void frond__metrics_hist_head(frond__buf *b, const char *name,
                              const char *help);
/* The series of family name for label="value": the histogram at offset
** off of p's per-worker state, summed over workers. Nothing when it has
** no observation. */
void frond__metrics_hist(frond__buf *b, const frond__server *srv,
                         const frond__proto *p, size_t off, const char *name,
                         const char *label, const char *value);
/* The whole /metrics page. */
void frond__metrics_render(frond__server *srv, frond__buf *b);
/* What the process_* families report (metrics_process.c): each have_ 0
** when the system does not say (no /proc), and the family is left out. */
typedef struct frond__process {
  int have_stat, have_start, have_fds, have_max_fds;
  double resident_bytes, virtual_bytes, cpu_seconds, start_time_seconds;
  double open_fds, max_fds;
} frond__process;
void frond__process_read(frond__process *p);

/* ----------------------------------------------------------------- ids.c */

/* Issue n IDs into w->ids (n <= max_count) and count them; 0 or the
** library's code with err filled. A segment allocator that is not there
** (store not reached yet, or store = none) is SEGMENT_UNAVAILABLE with a
** message saying which. Segment calls never wait on the loop: a tag the
** allocator does not know fails with TAG_NOT_FOUND, a call that would wait
** for the store with WOULD_BLOCK; the request layer (req.c) then finishes
** either off the loop with frond__ids_segment_wait. */
int frond__ids_snowflake(frond__worker *w, size_t n, frond_error *err);
/* The code a snowflake ID is refused with while the coordinator is not
** checked against the store's record (node_coord.c), else 0. */
int frond__ids_coord_unchecked(frond__server *srv, frond_error *err);
int frond__ids_segment(frond__worker *w, const char *tag, size_t len, size_t n,
                       frond_error *err);
/* A range lease of n IDs [*start, *start + n), as frond__ids_segment. */
int frond__ids_range(frond__worker *w, const char *tag, size_t len, int64_t n,
                     int64_t *start, frond_error *err);
/* On a pool thread: the same calls, allowed to wait for the loaders (up
** to first_wait_ms or wait_ms); with lookup, `tag` (NUL-terminated) is
** looked up in the store first (frond__ids_lookup_tag). n IDs into ids, or
** with range a lease of n IDs from *start. Not counted: the caller counts
** on its loop. */
int frond__ids_segment_wait(frond__server *srv, const char *tag, size_t len,
                            size_t n, int range, int lookup, int64_t *ids,
                            int64_t *start, frond_error *err);

/* forward.c: n IDs of an ordered tag that another node owns, from that
** owner (one hop: the request says it was forwarded). TAG_OWNER when the
** owner is not known (err as the allocator said it), SEGMENT_UNAVAILABLE
** when it does not answer, its own error when it refuses. */
int frond__forward_segment(frond__server *srv, const char *tag, size_t len,
                           size_t n, int64_t *out, frond_error *err);
/* The parse of its answer, one ID a line, increasing: n into out. Pure;
** fuzzed. */
int frond__forward_parse(const char *body, size_t len, size_t n, int64_t *out,
                         frond_error *err);
/* The library code an owner's error answer names ({"error":{"code":
** "NAME",...}}), or 0 when it names none. Pure; fuzzed. */
int frond__forward_error(const char *body, size_t len);
/* At exit: close the pooled connections. */
void frond__forward_free(void);

/* SEGMENT_UNAVAILABLE, saying why there is no allocator (not reached yet,
** or store = none). */
int frond__ids_seg_missing(const frond__server *srv, frond_error *err);

/* The segment allocator's options for the server (see ids.c). */
void frond__ids_seg_options(const frond__server *srv, frond_seg_options *o);

/* Look-ups of unknown tags are bounded (LOOKUPS_PER_SECOND a second,
** LOOKUPS_IN_FLIGHT at a time): admit one (1, counted; release it once
** done) or not (0). Thread-safe. */
int frond__ids_lookup_admit(frond__server *srv);
void frond__ids_lookup_release(frond__server *srv);
/* On a pool thread: have the allocator look `tag` up in the store
** (frond_seg_refresh_tag), so that it serves a tag created since its last
** refresh. 0, or TAG_NOT_FOUND (saying why when the store could not be
** asked). */
int frond__ids_lookup_tag(frond__server *srv, const char *tag,
                          frond_error *err);

/* With store_lock held: open the server's own store connection unless it
** is open. 0, or STORE (store = none, or unreachable). */
int frond__store_conn(frond__server *srv, frond_error *err);
/* With store_lock held, after a call on it returned rc: a connection that
** failed with STORE is closed, to be opened again by the next call. */
void frond__store_conn_check(frond__server *srv, int rc);

/* ------------------------------------------------------------- formats.c */

/* Build the formats (the built-ins, then format.<name> with the keys of
** order_key_file or FROND_ORDER_KEY). Main thread, at start; a spec, a
** key or a seq format without a store stops the start. */
int frond__formats_create(frond__server *srv, frond_error *err);
void frond__formats_free(frond__server *srv);
/* A worker's counters (one per format) and string buffer. */
int frond__formats_worker_init(frond__worker *w);
void frond__formats_worker_free(frond__worker *w);
/* The named format `name` (len bytes), or NULL. */
/* At start, once the generator and the store are there: check every keyed
** format's key where it can be now (the others on first use); another
** fingerprint recorded is KEY_MISMATCH naming the format. */
int frond__formats_check(frond__server *srv, frond_error *err);
/* On the main thread's tick: when the store (without one, the
** coordinator) answers again after it did not, every keyed format checks
** its key again before its next number. */
void frond__formats_tick(frond__server *srv);
const frond__named_format *frond__formats_find(const frond__server *srv,
                                               const char *name, size_t len);
/* The message of an unknown format name, in msg[cap]; returns msg. */
const char *frond__formats_missing(const char *name, size_t len, char *msg,
                                   size_t cap);
/*
** n new strings of nf into w->strs, nf->stride bytes apart, each
** NUL-terminated, counted. Never waits on the store: a seq period's first
** use is WOULD_BLOCK, a tag the allocator does not know TAG_NOT_FOUND;
** the request layer (req.c) finishes both with frond__formats_next_wait. Other errors: those of
** frond_format_next_n (frond_format_next_for with the caller's key
** key[0..key_len), for a shard= format), SEGMENT_UNAVAILABLE without an
** allocator, NOMEM.
*/
int frond__formats_next(frond__worker *w, const frond__named_format *nf,
                        const char *key, size_t key_len, size_t n,
                        frond_error *err);

/* On a pool thread: the same call, allowed to wait on the store, into
** out (n strings, nf->stride apart): a key not checked yet is checked
** first; a tag the allocator does not know is looked up in the store once,
** within the budget (*admitted: it holds one, to be released on the loop),
** and the call repeated. Not counted: the caller counts on its loop. */
int frond__formats_next_wait(frond__server *srv, const frond__named_format *nf,
                             const char *key, size_t key_len, size_t n,
                             char *out, int *admitted, frond_error *err);

/* Decode s (len bytes) into fields: as nf's strings, or with nf NULL by
** shape, and when no shape fits as a number of one of the server's order
** or seq formats (several that read it: ID_INVALID, name one). Snowflake
** IDs are split by the server's layout. Errors: ID_INVALID, KEY_INVALID,
** those of frond_decode. */
int frond__formats_decode(frond__server *srv, const frond__named_format *nf,
                          const char *s, size_t len, frond__field *out,
                          size_t *n, frond_error *err);
/* The frond_format_strings_total family. */
void frond__formats_metrics(frond__server *srv, frond__buf *b);

/* ----------------------------------------------------------------- req.c */

/*
** The request layer (req.c): what every front does with a request between
** its own arguments and its own answer. A front fills a frond__req, says
** how it answers (a frond__req_how), and calls frond__req_run: the layer
** serves it on the loop and has the front answer at once, or takes it off
** the loop and has the front answer later, on the loop, from a copy of its
** record (ctx). Credentials, quotas and audit hook in there (its head
** comment says where).
*/
enum {
  FROND__REQ_SNOWFLAKE, /* n snowflake IDs: ids */
  FROND__REQ_SEGMENT,   /* n IDs of tag: ids */
  FROND__REQ_RANGE,     /* a lease of n IDs of tag: [start, start + n) */
  FROND__REQ_FORMAT,    /* n strings of nf, nf->stride apart: strs */
  FROND__REQ_STORE      /* how->store on a pool thread; never on the loop */
};

typedef struct frond__req frond__req;

/* Who asks: a named client of the credentials (its name, NUL-terminated,
** is what quotas count and the audit log records). A front sets
** frond__req.client once the request's credentials are checked. */
typedef struct frond__client frond__client;
struct frond__client {
  char name[64];
};

/* How a front answers a kind of request; a static table of the front. */
typedef struct frond__req_how {
  size_t ctx_size; /* the front's record of a request, copied to wait */
  /* On that copy (optional): drop what points into the connection's
  ** input, which is gone by the answer. */
  void (*keep)(void *ctx);
  /* Write the answer: the result when r->rc is 0, else the error r->rc
  ** (r->err saying why). Never called for a connection that went away. */
  void (*answer)(const frond__req *r, void *ctx);
  /* Once a request that waited is answered, or its connection went away
  ** (gone): count it, log it. Returns 1 to close the connection once its
  ** answer is written. */
  int (*done)(const frond__req *r, void *ctx, int gone);
  /* FROND__REQ_STORE: the call, on a pool thread, one at a time on the
  ** server's own store connection; 0 or a code with r->err filled. */
  int (*store)(frond__req *r, void *ctx, frond_store *st);
} frond__req_how;

struct frond__req {
  /* What is asked, set by the front. */
  int op;          /* FROND__REQ_* */
  const char *tag; /* SEGMENT, RANGE; STORE: the tag it changes, or NULL */
  size_t len;      /* of tag */
  size_t n;        /* IDs or strings; frond__req_count sets it */
  const frond__named_format *nf; /* FORMAT; tag and len: the caller's key
                                    of a shard= format, or NULL */
  int change;    /* STORE: the allocator reads tag's row again after */
  int forwarded; /* SEGMENT: forwarded by another node: an ordered tag
                    whose owner this node is not is not forwarded again */
  const frond__client *client; /* who asks; NULL: anonymous (no credential
                                  configured, or an open read) */
  const frond__req_how *how;
  void *ctx; /* the front's record, how->ctx_size bytes */
  /* The result, for how->answer. */
  int rc;
  frond_error err;
  const int64_t *ids;
  int64_t start;
  const char *strs;
};

/* Serve r on c's loop, or off it; r->how->answer writes the answer, now
** (c is not held on return) or later (c is held). Call it from on_data. */
void frond__req_run(frond__conn *c, frond__req *r);
/* r->n from a count argument s[0..len) (s NULL: absent, 1), in [1,
** max_count] (max_range for FROND__REQ_RANGE): 0, or COUNT_INVALID in
** r->rc and r->err. Set r->op first. */
int frond__req_count(frond__req *r, const frond__server *srv, const char *s,
                     size_t len);
/* The HTTP status of a library code (500 for one the table does not
** name); RESP answers every code as -NAME message. */
int frond__req_status(int code);
/* What a failure with code says: err's message, else the code's own. */
const char *frond__req_message(int code, const frond_error *err);
/* The fields of s (len bytes): with nf, as nf's strings; without, a
** decimal snowflake ID (1 to 19 digits) as frond__snowflake_fields lists
** it, anything else by its shape (frond__formats_decode). Errors:
** ID_INVALID, KEY_INVALID, those of frond_decode. */
int frond__req_decode(frond__server *srv, const frond__named_format *nf,
                      const char *s, size_t len, frond__field *out, size_t *n,
                      frond_error *err);

/* --------------------------------------------------------------- audit.c */

/*
** The audit log (audit_log; audit.c's head comment says what it holds and
** how it keeps up). Open it and start its writer thread and its SIGHUP
** handler on loop (main thread, at start, once the workers are made): 0,
** or IO when the path cannot be opened; nothing without audit_log. Close
** it once the workers have ended: what they recorded is written first.
*/
typedef struct frond__audit frond__audit;
int frond__audit_open(frond__server *srv, uv_loop_t *loop, frond_error *err);
/* Stops the writer after a last write; how many records the file did not
** take (written to stderr instead: audit_writer.c). */
uint64_t frond__audit_close(frond__server *srv, uv_loop_t *loop);
/* Before r issues anything (on c's loop): 0, or -1 with r->rc
** AUDIT_UNAVAILABLE when audit_full = refuse and the log cannot keep up. */
int frond__audit_admit(frond__conn *c, frond__req *r);
/* Once r (served on c's loop, or off it and back) has succeeded: record
** what it handed out; gone: its client went away before the answer. */
void frond__audit_req(frond__conn *c, const frond__req *r, int gone);
/* The frond_audit_* families of /metrics (none without audit_log). */
void frond__audit_metrics(frond__server *srv, frond__buf *b);

/* -------------------------------------------------------------- status.c */

/* The status page for the request target (its query: page=N, q=TEXT, a
** search in tag names). */
void frond__status_render(frond__server *srv, frond__buf *b, const char *target,
                          size_t len);
/* Called once a second (dt seconds since the last call): rates. */
void frond__rates_sample(frond__server *srv, double dt);

/* -------------------------------------------------------------- notify.c */

/* systemd's notify protocol (sd_notify(3)): no-ops unless the unit is
** Type=notify. A failure to send is logged, never fatal. Main thread only.
** status is the state after "node N, layout L: " ("ready", "not ready:
** store not reached", "draining"). */
void frond__notify_ready(frond__server *srv, const char *status);
void frond__notify_status(frond__server *srv, const char *status);
void frond__notify_stopping(frond__server *srv, const char *status);
/* STATUS=status alone, before the node is known (a failed start). */
void frond__notify_failed(const char *status);
/* The watchdog period systemd expects (WatchdogSec=) in ms; 0: none. */
uint64_t frond__watchdog_ms(void);
/* Every srv->watchdog_ms / 2: WATCHDOG=1 if every worker's loop has beaten
** since the last call; else log the loop that has not (once per stall). */
void frond__watchdog_check(frond__server *srv, uint64_t now_ms);

/* ------------------------------------------------------ the protocols */

extern const frond__proto frond__http_proto;
extern const frond__proto frond__resp_proto;

#endif /* FROND_SERVER_H */
