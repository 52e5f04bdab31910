/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord.h -- coordinators: who may use which snowflake node ID, and up to
** which time.
**
** This file contains the internal side of the coordinator API declared in
** frond.h (frond_coord_*): the driver interface and what coord.c keeps for
** every driver.
**
**   static:N                      node N, the operator guarantees uniqueness
**   zk://h:p[,h:p...]/cluster     ZooKeeper, Leaf's layout plus an ephemeral
**                                 claim per ID (coord_zk.c)
**   etcd://h:p[,h:p...]/prefix    etcd v3, a claim per ID on an etcd lease
**                                 (coord_etcd.c)
**   lease+sqlite:///path.db       a lease row per node ID in a database
**   lease+postgresql://...        (coord_lease.c), on any engine of the
**   lease+mysql://...             SQL layer (store/db.h)
**
** The fence rule (docs/safety.md): a node never issues an ID whose time is
** above a fence already durable where every later holder of its node ID
** reads it. Drivers store the fence with the ID and write it only while
** the ID is still theirs (a lease token, a ZooKeeper version); coord.c
** decides when to write, keeps the cache file ahead of every write, and
** hands a fence to the generator only after the driver confirmed it.
**
** Like SQLite's VFS, a driver is a versioned struct of function pointers;
** the rest of Frond calls the wrappers in coord.c only, which is where
** tests inject a fake driver (frond__coord_open_driver).
**
** Files, top to bottom: coord_layout.c (the fleet's layout read and
** changed) calls coord.c (open, acquire, close, the public API), which
** calls coord_fence.c (the fencer and watchdog threads), coord_cache.c
** (the node cache file) and, through their method tables, one file per
** driver (the lease's is two: coord_lease.c over coord_lease_take.c);
** all of them call coord_common.c (the clock, the URI's tunables, the
** identity check, the layout floor), which calls none of them.
*/
#ifndef FROND_COORD_H
#define FROND_COORD_H

#include "frond.h"
#include "base/fork.h"

#include <pthread.h>
#include <stdatomic.h>

/* Longest owner ("host:port") and URI we keep. */
#define FROND_COORD_OWNER_MAX 128
#define FROND_COORD_URI_MAX 1024
#define FROND_COORD_SPEC_MAX 160

#define FROND_COORD_DEFAULT_REPORT_MS 3000
#define FROND_COORD_DEFAULT_SESSION_MS 10000
#define FROND_COORD_DEFAULT_CONNECT_MS 5000
#define FROND_COORD_DEFAULT_LEASE_MS 30000

/* Tunables: the defaults, then frond_coord_options, then the URI query. */
typedef struct frond__coord_tun {
  int64_t report_ms;  /* write the fence at least this often */
  int64_t session_ms; /* ZooKeeper session timeout */
  int64_t connect_ms; /* give up reaching it at start; a close's retries */
  /* ZooKeeper: an ID nobody claims whose stored fence is older than this
  ** may be taken over by a new identity. 0: never (as Leaf). */
  int64_t retention_ms;
  int64_t lease_ms; /* database lease length, renewed every third */
  /* lease: 1 keeps one database connection open while the node runs; 0
  ** (the default) opens one for each call and closes it after. */
  int64_t keep_connection;
  int64_t nodes; /* IDs 0..nodes-1 are used; 0: the whole range */
  /* nodes=a-b: the node IDs a..b (inclusive) are used; -1: not given. */
  int64_t nodes_lo, nodes_hi;
  /* datacenter=N: node IDs N << worker_bits | worker of a layout with dc
  ** bits (coord_scope.c); -1: not given. */
  int64_t datacenter;
  /* lease: take exactly this node ID (a static node ID registered in the
  ** database), or NODE_IN_USE; -1 (the default): any free one. */
  int64_t node;
  /* static: 1 says the operator knows this node ID is registered nowhere
  ** (the server then registers it in no store); 0 otherwise. */
  int64_t unregistered;
  int64_t window_ms;
  int64_t max_clock_offset_ms;
  /* Accepted for old URIs, no longer used: the start check follows the
  ** generator's slack rule (frond__start_slack_ms). */
  int64_t max_wait_ms;
} frond__coord_tun;

/* What a driver's acquire returns. */
typedef struct frond__coord_claim {
  uint64_t node;
  /* The fence stored for this ID (unix ms): every earlier holder issued at
  ** or below it. 0 when none. */
  int64_t fence_ms;
} frond__coord_claim;

/*
** A driver. Every method returns 0 or a negative FROND_E* code with the
** detail in err. coord.c calls them one at a time (under c->lock).
*/
typedef struct frond_coord_methods {
  int iVersion; /* 2 */
  const char *zScheme;
  /* Parse the URI (frond__coord_parse_query for the tunables) and connect,
  ** bounded by connect_ms. Unreachable: COORD. */
  int (*xOpen)(frond_coord *c, const char *uri, frond_error *err);
  /* Take a node ID for c->owner under c->layout_spec: check the layout the
  ** coordinator records (record ours when none: LAYOUT_MISMATCH naming
  ** both when another, setting c->floor_id from the record), then the ID
  ** (NODE_IN_USE when a live process holds ours, NODE_RANGE when none is
  ** free, COORD when unreachable). Writes no fence. */
  int (*xAcquire)(frond_coord *c, frond__coord_claim *out, frond_error *err);
  /* Make fence_ms durable with the ID, only if the ID is still ours and
  ** the recorded layout is still c->layout_spec; renews the claim. May
  ** lower the stored fence (the final, exact one). NODE_ID_LOST: not ours
  ** any more; LAYOUT_MISMATCH: the layout changed; COORD: unreachable,
  ** and the write may or may not have happened. */
  int (*xFence)(frond_coord *c, int64_t fence_ms, frond_error *err);
  /* Take the ID back after NODE_ID_LOST, or claim it for the first time
  ** after a start from the cache. *after_ms: the fence another holder
  ** stored meanwhile, 0 when nobody else held the ID. */
  int (*xRegain)(frond_coord *c, int64_t *after_ms, frond_error *err);
  /* Give the ID up (the final fence is already written). */
  int (*xRelease)(frond_coord *c, frond_error *err);
  /* All known IDs, sorted, into *out (malloc'd, caller frees). */
  int (*xList)(frond_coord *c, frond_coord_entry **out, size_t *n,
               frond_error *err);
  /* This clock minus the reference clock, in ms, after acquire; ref gets
  ** what the reference was ("3 live nodes", "the database"). */
  int (*xClockOffset)(frond_coord *c, int64_t *offset_ms, char *ref, size_t len,
                      frond_error *err);
  /* The recorded layout spec ("" when none) and floor; while a change is
  ** under way (or was begun and not finished), the old spec after
  ** FROND_COORD_CHANGING. */
  int (*xLayoutGet)(frond_coord *c, char *spec, size_t len, int64_t *floor_id,
                    frond_error *err);
  /* Record spec with a floor computed by coord.c from the old layout and
  ** every fence (frond__coord_floor); refuse while any ID is held. The
  ** driver blocks fence writes first (the change's mark), then reads the
  ** fences, so none can move past the floor; a failure after the mark puts
  ** the old layout back. A spec equal to the recorded one sets no floor:
  ** it takes away a mark left by a change that did not finish (the old
  ** layout back, as before the change), and is otherwise a no-op. */
  int (*xLayoutSet)(frond_coord *c, const char *spec, int64_t *floor_id,
                    frond_error *err);
  void (*xClose)(frond_coord *c);
  /* Can a start fall back to the cache file while unreachable? */
  int bCacheFallback;
  /* Does the driver keep a fence (all but static)? */
  int bFenced;
  /* Are node IDs the driver's own numbers plus the range's first ID
  ** (ZooKeeper's sequence)? Then a cluster that handed numbers out before
  ** any range was recorded already used them as node IDs (coord_scope.c). */
  int bNumbered;
  /* Optional (NULL: the driver keeps no facts). A fact every process of
  ** the fleet must agree on (an ID format's key fingerprint): record name
  ** = value when nothing is recorded under name, then read back what is
  ** recorded into recorded (len bytes); where (wlen bytes) says where, for
  ** messages. Never overwrites. COORD when unreachable. value NULL: only
  ** read ("" when nothing is recorded). */
  int (*xFact)(frond_coord *c, const char *name, const char *value,
               char *recorded, size_t len, char *where, size_t wlen,
               frond_error *err);
} frond_coord_methods;

/* A fence write's duration buckets, 1 ms to 10 s: a write is a round trip
** and a commit to the coordinator, and its window (default 1.3 s) is what
** a slow one eats into. */
#define FROND__COORD_FENCE_BUCKETS 13
extern const uint64_t frond__coord_fence_bounds_ns[FROND__COORD_FENCE_BUCKETS];

/* What coord.c keeps for every driver; drivers hang their state on impl. */
struct frond_coord {
  const frond_coord_methods *m;
  void *impl;
  frond__coord_tun t;
  frond_clock_fn clock;
  void *clock_ctx;
  /* The URI for messages: its secrets as "***" (frond__uri_redact). */
  char uri[FROND_COORD_URI_MAX];
  char owner[FROND_COORD_OWNER_MAX]; /* "host:port" */
  char cache_dir[1024];
  char cache_path[1200]; /* set by acquire, "" without a cache dir */
  /* Set by gen_create before the driver's acquire. */
  char layout_spec[FROND_COORD_SPEC_MAX];
  frond_layout layout;
  uint64_t max_node;
  /* The node IDs this coordinator hands out, [node_lo, node_hi], and what
  ** its cluster record must say for them ("all", "datacenter=3",
  ** "nodes=4-7"): set by frond__coord_scope from the layout and the URI. */
  uint64_t node_lo, node_hi;
  char scope[64];
  int scoped;         /* frond__coord_scope ran */
  int scope_recorded; /* and the record said the same */
  /* Listed by the record while the settings name another range. */
  frond_error scope_conflict;
  /* What the layout record says this cluster serves (after its ';', "all"
  ** when none), from the last frond__coord_layout_record. */
  char rec_scope[64];
  int64_t floor_id; /* the layout's floor, from the driver's acquire */
  char prev_spec[FROND_COORD_SPEC_MAX]; /* the layout before the floor */
  int64_t max_ahead_ms, max_wait_ms;
  /* How long a confirmed write keeps the claim safe to use, or 0 for as
  ** long as the driver does not say NODE_ID_LOST. Set by the driver's
  ** open: the lease's 9/10, ZooKeeper's session timeout (rewritten on
  ** every ZooKeeper connect, and read by readiness on any thread). */
  _Atomic int64_t validity_ms;
  int acquired;
  uint64_t node;
  int from_cache;
  long pid; /* the process that opened it: a child of fork() is refused */
  frond__fork_mark fork; /* the process key when opened (base/fork.h) */
  int64_t start_after_ms;
  pthread_mutex_t lock; /* serialises driver calls */

  /* The fence. sent_ms only grows while running (the cache holds at least
  ** it); durable_ms is the largest the driver confirmed. */
  _Atomic int64_t sent_ms, durable_ms;
  /* Claim state, read by the watchdog without the lock. */
  atomic_int lost;                 /* the driver said NODE_ID_LOST */
  atomic_int unclaimed;            /* started from the cache, not claimed */
  atomic_int layout_changed;       /* the driver said LAYOUT_MISMATCH */
  _Atomic int64_t valid_until_ns;  /* monotonic; 0: no limit */
  _Atomic int64_t resume_after_ms; /* another holder's fence: start above */
  atomic_int applied;              /* what the generator was last told */
  atomic_int closing;

  /* Statistics (stats_lock for the message). */
  _Atomic int64_t last_write_ms, clock_offset_ms;
  /* The last confirmed fence write on the monotonic clock (ms): the next
  ** report is due by it, so that a wall clock stepped back does not hold
  ** the renewals back (and lose the claim) for as long as the step. */
  _Atomic int64_t last_write_mono_ms;
  _Atomic uint64_t fence_writes, write_failures, regains;
  /* Fence writes' durations, confirmed or not: per bucket of
  ** frond__coord_fence_bounds_ns (the last: above them all), and the sum. */
  _Atomic uint64_t fence_le[FROND__COORD_FENCE_BUCKETS + 1], fence_sum_ns;
  atomic_int clock_checked, last_error;
  pthread_mutex_t stats_lock;
  char last_error_message[256];

  /* The generator (owned when made by gen_create) and the threads. */
  frond_gen *gen;
  int own_gen;
  pthread_t fencer, watchdog;
  int threads;
  atomic_int stopping;
  atomic_int wanted; /* a caller waits at the fence */
  atomic_uint pokes; /* the fencer changed what the watchdog reads */
  pthread_mutex_t wake_lock;
  pthread_cond_t wake;
};

/* Fence writes' durations (frond_coord's fence_le, fence_sum_ns), for
** /metrics: n[k] writes took at most bounds_ns[k] and more than the bound
** before it, n[FROND__COORD_FENCE_BUCKETS] more than every bound. */
typedef struct frond__coord_fence_hist {
  uint64_t n[FROND__COORD_FENCE_BUCKETS + 1];
  uint64_t sum_ns;
} frond__coord_fence_hist;
void frond__coord_fence_hist_get(frond_coord *c, frond__coord_fence_hist *h);
/* Count one fence write that took ns, confirmed or not. */
void frond__coord_fence_timed(frond_coord *c, uint64_t ns);

/* What xLayoutGet puts before the old spec while a change is under way. */
#define FROND_COORD_CHANGING "changing:"

/* frond_coord_layout_get, and whether a change of it was begun and has not
** finished (*changing: then *l is the layout before the change). */
int frond__coord_layout_read(frond_coord *c, frond_layout *l, int64_t *floor_id,
                             int *changing, frond_error *err);

/* frond_coord_open with a given driver (tests: fake drivers). */
int frond__coord_open_driver(frond_coord **out, const frond_coord_methods *m,
                             const char *uri, const frond_coord_options *opts,
                             frond_error *err);

/* What acquire decided. */
typedef struct frond__coord_start {
  uint64_t node;
  int64_t after_ms; /* start above this (fences of earlier holders, floor) */
  int64_t fence_ms; /* durable fence; INT64_MAX: none (static) */
  int from_cache;
} frond__coord_start;

/*
** Steps 1 and 2 of frond_coord_gen_create: take a node ID, check range,
** layout, stored fence (against frond__start_slack_ms) and clock, and make
** the first fence durable (cache file first). May block.
*/
int frond__coord_acquire(frond_coord *c, const frond_layout *l,
                         const frond_gen_options *go, frond__coord_start *out,
                         frond_error *err);

/* Step 4: start the fencer and the watchdog for g (not owned). */
int frond__coord_attach_gen(frond_coord *c, frond_gen *g, frond_error *err);
/* Stop the threads (close does it too). */
void frond__coord_stop_threads(frond_coord *c);
/* Test hook: free c as kill -9 ends a process: no final fence, no
** release (coord.c). */
void frond__coord_test_crash(frond_coord *c);

/* One round of the fencer, synchronously (tests): regain when lost, then
** extend the fence when due (force: now). Returns the driver's result. */
int frond__coord_fence_round(frond_coord *c, int force, frond_error *err);
/* The code the watchdog applies to the generator now (0: may issue). */
int frond__coord_blocking(frond_coord *c);
/* One look of the watchdog (also synchronously, in tests): the generator
** blocked or resumed as frond__coord_blocking says. */
void frond__coord_apply(frond_coord *c);
/* Test hook: called by each look between reading what blocks and
** applying it. */
extern void (*_Atomic frond__coord_apply_hook)(frond_coord *c);
/* The generator's `want` hook: wake the fencer. */
void frond__coord_want(void *ctx);
/* Wake the watchdog: something it reads changed (the claim lost, a fence
** written, a regain). It otherwise sleeps until the validity runs out. */
void frond__coord_poke(frond_coord *c);

/* xFact under c->lock (coord_fact.c): INVAL when the driver keeps no
** facts. A frond__fact_fn of the core's with ctx the coordinator. */
int frond__coord_fact(void *ctx, const char *name, const char *value,
                      char *recorded, size_t len, char *where, size_t wlen,
                      frond_error *err);
/* Whether c's driver keeps facts. */
int frond__coord_has_facts(const frond_coord *c);

/* Record a background failure for the stats. */
void frond__coord_note_error(frond_coord *c, int code, const char *msg);

/* Is c a copy inherited through fork()? A coordinator belongs to the
** process that opened it: a child has neither its threads nor a connection
** of its own, and would hold the parent's node ID. */
int frond__coord_forked(const frond_coord *c);
/* FORKED, saying so, when c is such a copy; else 0. */
int frond__coord_refuse_forked(const frond_coord *c, frond_error *err);
/* The driver's layout record (xLayoutGet, under c->lock): spec without
** the mark of a change under way, which *changing (may be NULL) reports. */
int frond__coord_layout_record(frond_coord *c, char *spec, size_t len,
                               int64_t *floor_id, int *changing,
                               frond_error *err);

/* The largest ID any node could have issued under layout l given every
** entry's fence: the floor a new layout must start above. */
int64_t frond__coord_floor(const frond_layout *l, const frond_coord_entry *e,
                           size_t n);
/* The unix ms a node under layout l must start above so that every ID it
** issues is numerically above floor_id (0 when floor_id is 0). */
int64_t frond__coord_floor_ms(const frond_layout *l, int64_t floor_id);

/* ---- the node IDs a coordinator serves (coord_scope.c) ------------------ */

/* The name of the record of what a coordinator serves, kept with xFact
** beside the layout record. */
#define FROND__COORD_SCOPE_FACT "node_scope"
/* Set c->node_lo, node_hi and scope from layout l and the URI's
** datacenter= and nodes=: CONFIG, naming what is wrong, when the
** datacenter does not fit l (no dc bits, N too large) or the range falls
** outside it. */
int frond__coord_scope(frond_coord *c, const frond_layout *l, frond_error *err);
/* Check c->scope against the coordinator's record (recording it when
** none): DATACENTER_MISMATCH naming both and the record; 0 when the
** driver keeps no records (static). */
int frond__coord_scope_check(frond_coord *c, frond_error *err);
/* The layout record checked before the scope is recorded: LAYOUT_MISMATCH
** (the caller words it) when it names another layout than l,
** DATACENTER_MISMATCH when it names another scope; then
** frond__coord_scope_check. Unreadable: frond__coord_scope_check alone. */
int frond__coord_scope_verify(frond_coord *c, const frond_layout *l,
                              frond_error *err);
/* For a coordinator that holds no node ID (it lists them, changes the
** layout): frond__coord_scope under the recorded layout and the scope its
** layout record names (the node IDs its numbers are). A URI that names
** another range is kept for frond__coord_scope_conflict; a record that
** cannot be read, or whose scope fact names another range than its layout
** record, is refused. 0 when nothing is recorded or the coordinator holds
** a node ID (it was checked at its start). */
int frond__coord_scope_recorded(frond_coord *c, frond_error *err);
/* After frond__coord_scope_recorded: DATACENTER_MISMATCH naming both when
** the settings name another range than the record; else 0. */
int frond__coord_scope_conflict(const frond_coord *c, frond_error *err);
/* frond check: what these settings would serve under layout l, checked
** against the records as a start checks them, without writing any
** (DATACENTER_MISMATCH naming both); out says what is served. */
int frond__coord_scope_inspect(frond_coord *c, const frond_layout *l, char *out,
                               size_t len, frond_error *err);
/* What c serves ("all", "datacenter=3", "nodes=4-7") and its node IDs
** lo..hi, and whether that was read from a record; NULL when not known
** (no node ID held or listed yet). */
const char *frond__coord_served(const frond_coord *c, uint64_t *lo,
                                uint64_t *hi, int *recorded);
/* A recorded scope: "all" (all three -1), "datacenter=N" (*dc) or
** "nodes=a-b" (*lo, *hi); -1 when it is none of them. */
int frond__coord_scope_parse(const char *rec, int64_t *dc, int64_t *lo,
                             int64_t *hi);
/* spec followed by ";scope" unless scope is "all": what a layout record
** holds, so that nodes which do not know scopes find another layout. */
void frond__coord_scoped_spec(char *spec, size_t len, const char *scope);
struct frond_coord_cache;
/* DATACENTER_MISMATCH when the cache file cc (at path) was written under
** another scope, or its node lies outside [node_lo, node_hi]. */
int frond__coord_scope_node(frond_coord *c, const struct frond_coord_cache *cc,
                            const char *path, frond_error *err);

/* ---- the fleet's coordinators in the store (coord_record.c) ------------ */

/* A coordinator's identity: 32 random lowercase hex characters recorded
** once in the coordinator (xFact), read back by every later node. */
#define FROND__COORD_ID_LEN 32
#define FROND__COORD_ID_FACT "coordinator.id"
/* The store's log of the fleet's coordinators: facts named this, 1, 2... */
#define FROND__COORD_REC_PREFIX "coord.record."
/* c's identity into id (len > 32), recorded now when none is: INVAL for a
** driver without facts (static), COORD when unreachable. */
int frond__coord_identity(frond_coord *c, char *id, size_t len,
                          frond_error *err);

/* One entry of the log: a coordinator and the node IDs it serves. */
typedef struct frond__coord_rec {
  int set; /* a deliberate change: replaces every overlapping coordinator */
  char id[FROND__COORD_ID_LEN + 1];
  uint64_t lo, hi;
  int64_t floor_ms; /* its nodes issue above this (0: no floor) */
  char scope[64];   /* "all", "datacenter=N", "nodes=a-b" */
  char uri[200];    /* as shown: no query, no password */
} frond__coord_rec;

/* Where the log is kept (a store's facts; tests: a fake). put records
** name = value unless recorded, then reads back; get only reads ("" when
** nothing). where names it in messages. */
typedef struct frond__coord_book {
  int (*put)(void *ctx, const char *name, const char *value, char *rec,
             size_t len, frond_error *err);
  int (*get)(void *ctx, const char *name, char *rec, size_t len,
             frond_error *err);
  void *ctx;
  const char *where;
} frond__coord_book;

/* An entry's text: 0, or -1 when it is not one. Pure. */
int frond__coord_rec_parse(const char *s, frond__coord_rec *r);
int frond__coord_rec_format(const frond__coord_rec *r, char *buf, size_t len);
/* Check me against the log, recording it when no coordinator serves an
** overlapping range: COORDINATOR_MISMATCH naming both when another does;
** else 0 with the floor its nodes start above, *recorded when written
** now. */
int frond__coord_rec_check(const frond__coord_book *b,
                           const frond__coord_rec *me, int64_t *floor_ms,
                           int *recorded, frond_error *err);
/* The current coordinators (*out malloc'd, caller frees) and the first
** empty slot. */
int frond__coord_rec_state(const frond__coord_book *b, frond__coord_rec **out,
                           size_t *n, int *next, frond_error *err);
/* Append the change e (e->set = 1) at the log's end; *slot: where. */
int frond__coord_rec_set(const frond__coord_book *b, const frond__coord_rec *e,
                         int *slot, frond_error *err);

/* ---- node cache file (coord_cache.c) ------------------------------------ */

typedef struct frond_coord_cache {
  char uri[FROND_COORD_URI_MAX]; /* coordinator, without query or password */
  char owner[FROND_COORD_OWNER_MAX];
  uint64_t node;
  int64_t fence_ms; /* "high_water_ms" in the file, Leaf-era name */
  /* Wall ms when the coordinator last confirmed the claim. */
  int64_t reported_ms;
  /* The node IDs served when it was written (frond_coord's scope); a file
  ** without one was written before ranges: "all". */
  char scope[64];
} frond_coord_cache;

/* The cache file for this coordinator and identity in c->cache_dir:
** "frond-node-<identity>-<hash of the coordinator>.cache", made of
** [A-Za-z0-9._-] only. Returns 0, or -1 when it does not fit len. */
int frond__coord_cache_name(const frond_coord *c, char *buf, size_t len);
/* The coordinator as the cache records it: the URI without its query and
** without a password. */
void frond__coord_cache_uri(const char *uri, char *buf, size_t len);
/* Write atomically (temp file, fsync, rename, fsync of the directory). */
int frond__coord_cache_write(const char *path, const frond_coord_cache *cc,
                             frond_error *err);
/* The file's text into buf: its length, or -1 when it does not fit. */
int frond__coord_cache_format(const frond_coord_cache *cc, char *buf,
                              size_t len);
/* Parse a cache file's bytes: 0, or -1 when torn, edited or garbage (the
** checksum, every key, numbers in range). Pure. */
int frond__coord_cache_parse(const char *data, size_t len,
                             frond_coord_cache *cc);
/* Read: 0, FROND_EIO with *missing = 1 when absent, HIGHWATER_CORRUPT when
** torn or garbage. */
int frond__coord_cache_read(const char *path, frond_coord_cache *cc,
                            int *missing, frond_error *err);
/* Rewrite c's cache file with fence_ms (no-op without a cache). */
int frond__coord_cache_store(frond_coord *c, int64_t fence_ms,
                             frond_error *err);

/* ---- helpers for drivers ------------------------------------------------ */

/* Wall clock through the options' clock. */
int64_t frond__coord_now(const frond_coord *c);
/* Parse "key=value&..." after '?' into c->t; unknown keys are INVAL. The
** query may be NULL. */
int frond__coord_parse_query(frond_coord *c, const char *query,
                             frond_error *err);
/* Is this query key one of ours (frond__coord_parse_query's)? */
int frond__coord_is_query_key(const char *key, size_t len);
/* Check "host:port" (IPv6 as "[v6]:port", port 1..65535, host of
** [A-Za-z0-9._:-]); 0 or INVAL naming the value. */
int frond__coord_check_advertise(const char *s, frond_error *err);
/* The host's first non-loopback IPv4 address, else 127.0.0.1: a node's
** address when it listens on all and advertises none. */
void frond__coord_default_ip(char *buf, size_t len);

extern const frond_coord_methods frond__coord_static_methods;
extern const frond_coord_methods frond__coord_zk_methods;
extern const frond_coord_methods frond__coord_lease_methods;
extern const frond_coord_methods frond__coord_etcd_methods;

/* What ZooKeeper nodes hold, parsed (coord_zk_data.c; pure, fuzzed, in
** every build): a child's name "ip:port-0000000012" (its owner's length
** and sequence; 0, or -1 when it is not such a name), the fence in Leaf's
** JSON ("timestamp", 0 when absent), a number after "<key> " in a claim's
** data (-1 when absent), and the layout record. */
int frond__zk_parse_child(const char *name, size_t *olen, uint64_t *seq);
int64_t frond__zk_timestamp(const char *data);
int64_t frond__zk_claim_field(const char *data, const char *key);
typedef struct frond__zk_layout_rec {
  char spec[FROND_COORD_SPEC_MAX];
  char previous[FROND_COORD_SPEC_MAX];
  int64_t floor;
  int changing;
} frond__zk_layout_rec;
void frond__zk_parse_layout(const char *data, frond__zk_layout_rec *r);
int frond__zk_format_layout(const frond__zk_layout_rec *r, char *buf,
                            size_t len);

/* The coordinator URIs that need a connection, read without one (pure,
** fuzzed, in every build); the query's tunables go to c->t.
** "zk://h:p[,h:p...]/name[?query]": the hosts are the first *hosts_len
** bytes after "zk://", the cluster name the *name_len bytes at *name.
** "lease+<db URI>[?query]": dburi (len bytes, FROND_LEASE_DB_URI_MAX
** suffices) gets the SQL layer's URI, with the query keys that are not
** ours left for the engine, checked by frond__db_uri_parse. Both refuse
** with FROND_EINVAL. */
#define FROND_LEASE_DB_URI_MAX (2 * FROND_COORD_URI_MAX + 2)
int frond__zk_parse_uri(frond_coord *c, const char *uri, size_t *hosts_len,
                        const char **name, size_t *name_len, frond_error *err);
int frond__lease_parse_uri(frond_coord *c, const char *uri, char *dburi,
                           size_t len, frond_error *err);

/* What frond_coord_open checks in uri before it connects: a scheme this
** build has, and the driver's own reading of the rest (static:N, with N at
** most max_node; zk://; lease+ and its database URI). Pure: connects to
** nothing. 0, NODE_RANGE or INVAL with the message frond_coord_open would
** give. */
int frond__coord_uri_check(const char *uri, uint64_t max_node,
                           frond_error *err);
/* A lease row's holder record ("<token> pid=<pid> host=<host>", in
** frond_meta as holder.<N>): 0 with *pid (0: unknown) and host (len bytes,
** "" when unknown) when it belongs to token, else -1 (a record of an
** earlier holder of the row). Pure, fuzzed. */
int frond__lease_parse_holder(const char *value, const char *token, long *pid,
                              char *host, size_t len);

/* Tests only: make the ZooKeeper server expire this process' session. */
int frond__coord_zk_expire_session(frond_coord *c, frond_error *err);

#endif /* FROND_COORD_H */
