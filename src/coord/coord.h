/*
** coord.h -- coordinators: who may use which snowflake node ID.
**
** This file contains the coordinator interface. Snowflake IDs are unique
** only while no two live processes share a node ID; a coordinator hands
** out node IDs and keeps the claim alive:
**
**   static:N                      node N, the operator guarantees uniqueness
**   zk://h:p[,h:p...]/cluster     ZooKeeper, Leaf's layout plus an ephemeral
**                                 claim per ID (coord_zk.c)
**   lease+sqlite:///path.db       a lease row per node ID in a database
**   lease+postgresql://...        (coord_lease.c)
**
** Tunables may follow the URI as a query: ?report_ms=3000&session_ms=10000
** &connect_ms=5000&retention_ms=0&lease_ms=30000&nodes=N&max_wait_ms=10.
**
** Like SQLite's VFS, a driver is a versioned struct of function pointers
** (frond_coord_methods); the rest of Frond calls the frond__coord_*
** wrappers in coord.c only, which is where tests inject failures. coord.c
** also owns what all drivers share: the URI, the clock and range checks at
** start, the node cache file, and the threads that report the high-water
** time and block the generator while the claim is not held.
**
** Use:
**   frond__coord_open(&c, uri, &opts, err);
**   frond__coord_acquire(c, &claim, err);       node ID + stored time
**   gen opts.start_after_ms = claim.high_water_ms;
**   frond_gen_create(&g, layout, claim.node, &gen_opts, err);
**   frond__coord_attach_gen(c, g, err);         starts the reporter
**   ...
**   frond__coord_close(c, err);   final report + release; before gen close
**   frond_gen_close(g, err);
*/
#ifndef FROND_COORD_H
#define FROND_COORD_H

#include "frond.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct frond_coord frond_coord;

/* Longest owner ("ip:port" or any name) and URI we keep. */
#define FROND_COORD_OWNER_MAX 128
#define FROND_COORD_URI_MAX 1024

#define FROND_COORD_DEFAULT "static:0"
#define FROND_COORD_DEFAULT_REPORT_MS 3000
#define FROND_COORD_DEFAULT_SESSION_MS 10000
#define FROND_COORD_DEFAULT_CONNECT_MS 5000
#define FROND_COORD_DEFAULT_LEASE_MS 30000

typedef struct frond_coord_options {
  /* Who we are. ZooKeeper keys node IDs by "ip:port" as Leaf does; the
  ** lease records it as the owner. NULL ip: the first non-loopback IPv4
  ** address (127.0.0.1 when none); port: the server's port. */
  const char *ip;
  int port;
  /* Node cache file (node ID + high-water time), or NULL for none. */
  const char *cache_path;
  /* Node IDs must fit this many bits (the layout's node_bits); 0: 10. */
  unsigned node_bits;
  /* Refuse to start (CLOCK_BEHIND) when a stored or cached high-water time
  ** is ahead of the clock by more than this. Default (and when < 0)
  ** FROND_DEFAULT_MAX_WAIT_MS. */
  int64_t max_wait_ms;
  int64_t report_ms;  /* report the high-water time this often */
  int64_t session_ms; /* ZooKeeper session timeout */
  int64_t connect_ms; /* give up reaching the coordinator at start */
  /* ZooKeeper: an ID nobody claims whose stored time is older than this
  ** may be reclaimed by a new ip:port. 0: never (as Leaf). */
  int64_t retention_ms;
  int64_t lease_ms;     /* database lease length, renewed every third */
  uint64_t nodes;       /* lease: IDs 0..nodes-1 are used; 0: the whole range */
  frond_clock_fn clock; /* NULL: frond_clock_realtime */
  void *clock_ctx;
} frond_coord_options;

void frond__coord_options_init(frond_coord_options *o);

/* What acquire returns. */
typedef struct frond_coord_claim {
  uint64_t node;
  /* Unix ms the generator must start above: the largest of the time the
  ** coordinator stored for this ID and the cached one. 0 when none. */
  int64_t high_water_ms;
  int from_cache; /* the coordinator was unreachable; cache file used */
} frond_coord_claim;

/* One row of a listing (frond node list). */
typedef struct frond_coord_entry {
  uint64_t node;
  char owner[FROND_COORD_OWNER_MAX];
  int64_t high_water_ms; /* last reported, unix ms; 0 when unknown */
  int64_t expires_ms;    /* lease expiry, unix ms; 0 when not a lease */
  int live;              /* claimed by a live process right now */
} frond_coord_entry;

/*
** A driver. Every method returns 0 or a negative FROND_E* code with the
** detail in err. Methods are called from one thread at a time (coord.c
** holds c->lock around them), except `watch`, which is lock-free.
*/
typedef struct frond_coord_methods {
  int version; /* 1 */
  const char *scheme;
  /* Parse the URI and connect (bounded by connect_ms). Unreachable:
  ** FROND_ECOORD. */
  int (*open)(frond_coord *c, const char *uri, frond_error *err);
  /* Take a node ID for c->owner: NODE_IN_USE when another live process
  ** holds ours, NODE_RANGE when none is free, COORD when unreachable. */
  int (*acquire)(frond_coord *c, frond_coord_claim *out, frond_error *err);
  /* Store the high-water time and keep the claim alive. NODE_ID_LOST when
  ** the claim is gone (the caller blocks the generator and calls regain),
  ** COORD when the coordinator cannot be reached. */
  int (*report)(frond_coord *c, int64_t high_water_ms, frond_error *err);
  /* Try to take the claim back after NODE_ID_LOST. On success *after_ms is
  ** a time the wall clock must pass before issuing again. */
  int (*regain)(frond_coord *c, int64_t *after_ms, frond_error *err);
  /* Store the final time and give the ID up for others. */
  int (*release)(frond_coord *c, int64_t high_water_ms, frond_error *err);
  /* All known IDs, sorted, into *out (malloc'd, caller frees). */
  int (*list)(frond_coord *c, frond_coord_entry **out, size_t *n,
              frond_error *err);
  void (*close)(frond_coord *c);
  /* Can a restart fall back to the cache file while unreachable? */
  int cache_fallback;
} frond_coord_methods;

/* What coord.c keeps for every driver; drivers hang their state on impl. */
struct frond_coord {
  const frond_coord_methods *m;
  void *impl;
  frond_coord_options o;
  char uri[FROND_COORD_URI_MAX];
  char owner[FROND_COORD_OWNER_MAX]; /* "ip:port" */
  char cache_path[1024];
  uint64_t max_node;
  /* How long a successful report keeps the claim safe, or 0 for as long
  ** as the driver does not say NODE_ID_LOST. Set by the driver's open. */
  int64_t validity_ms;
  int acquired;
  frond_coord_claim claim;
  pthread_mutex_t lock; /* serialises driver calls */

  /* Claim state, read by the watchdog without the lock. */
  atomic_int lost;                 /* the driver said NODE_ID_LOST */
  _Atomic int64_t valid_until_ns;  /* monotonic; the claim may be held by
                                      someone else after this */
  _Atomic int64_t resume_after_ms; /* wall ms to pass before issuing */
  atomic_int blocked;              /* what the generator was last told */
  _Atomic int64_t last_report_ms;  /* wall ms of the last good report */

  /* Attached generator (or hooks) and the threads. */
  int64_t (*hw_fn)(void *ctx);
  void (*block_fn)(void *ctx, int code);
  void *hook_ctx;
  pthread_t reporter, watchdog;
  int threads;
  atomic_int stopping;
  pthread_mutex_t wake_lock;
  pthread_cond_t wake;
};

/* Open a coordinator by URI (NULL: FROND_COORD_DEFAULT). Errors: INVAL
** (bad URI or option), COORD (unreachable; the cache may still serve in
** acquire for ZooKeeper), NOMEM. */
int frond__coord_open(frond_coord **out, const char *uri,
                      const frond_coord_options *opts, frond_error *err);

/*
** Take a node ID. Falls back to the cache file when the coordinator is
** unreachable and the driver allows it (when a claim is only safe for
** validity_ms after the last confirmation, only if that has not passed;
** the rest of it bounds how long the node issues without reaching the
** coordinator). Refuses with NODE_RANGE when the ID
** does not fit node_bits, CLOCK_BEHIND when the stored or cached
** high-water time is ahead of the clock by more than max_wait_ms. Writes
** the cache file. May block on the coordinator.
*/
int frond__coord_acquire(frond_coord *c, frond_coord_claim *out,
                         frond_error *err);

/* Start the reporter and the watchdog for a generator: every report_ms the
** high-water time is reported and cached; while the claim is not held the
** generator is blocked with NODE_ID_LOST, and unblocked once it is
** regained. */
int frond__coord_attach_gen(frond_coord *c, frond_gen *g, frond_error *err);
/* The same with plain hooks (tests, other generators). */
int frond__coord_attach(frond_coord *c, int64_t (*hw_fn)(void *ctx),
                        void (*block_fn)(void *ctx, int code), void *ctx,
                        frond_error *err);

/* Report now (also done by the reporter). */
int frond__coord_report(frond_coord *c, int64_t high_water_ms,
                        frond_error *err);
/* 0 while the claim is held, else the code the generator is blocked with. */
int frond__coord_state(frond_coord *c);

/* List IDs (frond node list). *out is malloc'd; free() it. */
int frond__coord_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                      frond_error *err);

/* Stop the threads, report the final high-water time (from the attached
** generator, which must still be open), release and free. NULL: no-op. */
int frond__coord_close(frond_coord *c, frond_error *err);

/* ---- node cache file -------------------------------------------------- */

typedef struct frond_coord_cache {
  char uri[FROND_COORD_URI_MAX];
  char owner[FROND_COORD_OWNER_MAX];
  uint64_t node;
  int64_t high_water_ms;
  /* Wall ms when the coordinator last confirmed the claim (acquire or
  ** report). A restart from the cache needs it when claims can expire
  ** (ZooKeeper with retention_ms): see frond__coord_acquire. */
  int64_t reported_ms;
} frond_coord_cache;

/* Write atomically (temp file, fsync, rename, fsync of the directory). */
int frond__coord_cache_write(const char *path, const frond_coord_cache *cc,
                             frond_error *err);
/* Read: 0, FROND_EIO with errno ENOENT kept in *missing = 1 when absent,
** HIGHWATER_CORRUPT when torn or garbage. */
int frond__coord_cache_read(const char *path, frond_coord_cache *cc,
                            int *missing, frond_error *err);

/* ---- helpers for drivers ---------------------------------------------- */

/* Wall clock through the options' clock. */
int64_t frond__coord_now(const frond_coord *c);
/* Parse "key=value&..." after '?' into c->o; unknown keys are INVAL. The
** query may be NULL. */
int frond__coord_parse_query(frond_coord *c, const char *query,
                             frond_error *err);

extern const frond_coord_methods frond__coord_static_methods;
extern const frond_coord_methods frond__coord_zk_methods;
extern const frond_coord_methods frond__coord_lease_methods;

/* Tests only: make the ZooKeeper server expire this process' session. */
int frond__coord_zk_expire_session(frond_coord *c, frond_error *err);

#endif /* FROND_COORD_H */
