/* SPDX-License-Identifier: Apache-2.0 */
/*
** frond/coord.h -- coordinators: node IDs and their fences.
** Part of frond.h, which includes it; see the conventions there.
*/
#ifndef FROND_FROND_COORD_H
#define FROND_FROND_COORD_H

#ifndef FROND_H
#error "include <frond.h>, not <frond/coord.h>"
#endif

/* ------------------------------------------------------------------------
** Coordinators
**
** A snowflake ID is unique only while no two processes issue under one node
** ID. A coordinator hands node IDs out and, with each, keeps a FENCE: a
** time (unix ms) that is durable where every later holder of that node ID
** reads it. The one rule: a node never issues an ID whose time is above a
** fence already durable there. The fence is moved ahead in the background,
** before it is needed (to "now + max_ahead + window", once less than half
** a window is left), with a write that succeeds only while the node still
** holds its ID; every later holder (a takeover, a restart, a reclaim) starts
** above the fence it reads. A node that cannot extend its fence
** (partitioned, paused, coordinator down) stops at it. Leases, sessions
** and clocks decide when a node may issue, never whether two nodes can
** issue the same ID.
**
** Coordinators are chosen by URI:
**   "static:N"                      node N; the operator guarantees that no
**                                   two processes use it (no fence). Where
**                                   a database is shared, register it
**                                   instead: "lease+<URI>?node=N"
**   "zk://host:port[,...]/cluster"  ZooKeeper, in Leaf's layout
**   "lease+sqlite:///path.db"       a lease row per node ID in a database
**   "lease+postgresql://..."
** followed by tunables as a query ("?session_ms=10000&window_ms=3000"),
** documented in docs/coordinators.md.
**
** Use:
**   frond_coord_open(&c, uri, &opts, &err);
**   frond_coord_gen_create(c, &layout, &gen_opts, &g, &err);
**   ... frond_gen_next(g, &id, &err) from any thread ...
**   frond_coord_close(c, &err);        also closes g
**
** fork(): a coordinator belongs to the process that opened it. In a child
** of fork() it would hold its parent's node ID on its parent's connection,
** without its threads: every call there fails with FROND_EFORKED
** (frond_coord_state returns it; its generator refuses too), and
** frond_coord_close frees the child's copy only, leaving the parent's node
** ID, connection and threads alone. A child opens a coordinator of its own,
** which claims a node ID of its own, as a new process would.
*/
typedef struct frond_coord frond_coord;

#define FROND_COORD_DEFAULT "static:0"
#define FROND_COORD_DEFAULT_WINDOW_MS 3000
#define FROND_COORD_DEFAULT_MAX_CLOCK_OFFSET_MS 1000

typedef struct frond_coord_options {
  /* The identity this node gives its coordinator, "host:port" (IPv6 as
  ** "[::1]:8080"): ZooKeeper keys node IDs by it, as Leaf does, and a
  ** restart with the same identity gets the same node ID back; the lease
  ** records it as the owner. Containers and NAT set it to the address
  ** others reach them at. NULL: the first non-loopback IPv4 address
  ** (127.0.0.1 when none) and `port`. Copied by open. */
  const char *advertise;
  int port; /* with advertise NULL; default 8080 */
  /* Directory for the node cache file (node ID and fence, one file per
  ** coordinator and identity), or NULL for none. With ZooKeeper the cache
  ** lets a restart learn its node ID while ZooKeeper is unreachable; it
  ** then issues nothing until ZooKeeper answers again. Copied by open. */
  const char *cache_dir;
  /* How far ahead of need the fence is kept: default
  ** FROND_COORD_DEFAULT_WINDOW_MS. Longer: fewer coordinator writes, and a
  ** longer wait for a node that restarts after a crash. The URI's
  ** window_ms wins. */
  int64_t window_ms;
  /* At start, refuse with CLOCK_OFFSET when this node's clock differs from
  ** the other live nodes' (ZooKeeper) or the database's (lease) by more
  ** than this; 0: no check. Default FROND_COORD_DEFAULT_MAX_CLOCK_OFFSET_MS;
  ** the URI's max_clock_offset_ms wins. */
  int64_t max_clock_offset_ms;
  frond_clock_fn clock; /* NULL: frond_clock_realtime */
  void *clock_ctx;
} frond_coord_options;

/* Fill opts with the defaults. */
FROND_EXPORT void frond_coord_options_init(frond_coord_options *opts);

/*
** Open a coordinator (uri NULL: FROND_COORD_DEFAULT) and connect to it,
** bounded by the URI's connect_ms. opts may be NULL for the defaults.
** Claims nothing yet. May block on the network.
** Errors: INVAL (bad URI, option or advertise), COORD (unreachable; a
** ZooKeeper coordinator still opens, because a restart may come from the
** cache, and keeps trying), NOMEM.
*/
FROND_EXPORT int frond_coord_open(frond_coord **out, const char *uri,
                                  const frond_coord_options *opts,
                                  frond_error *err);

/*
** Take a node ID and create a snowflake generator on it, in this order:
**   1. acquire a node ID for this identity; check that it fits the layout,
**      that the layout is the one the coordinator records, and (unless
**      disabled) this node's clock;
**   2. make the first fence durable with the ID (the cache file first);
**   3. create the generator above the fence stored by every earlier holder
**      (and above the layout floor after a layout change), stopping at the
**      new fence;
**   4. start two threads: the fencer (extends the fence, renews the claim,
**      takes a lost claim back) and the watchdog (stops the generator while
**      the claim is not held, without doing I/O).
** gen_opts: max_ahead_ms, max_wait_ms, seq_start, clock as for
** frond_gen_create (NULL: defaults); high_water_path may be set (the static
** coordinator has no fence; a file then protects restarts). The generator
** uses the coordinator's clock when gen_opts->clock is NULL.
** The generator *out belongs to the coordinator: use it from any thread,
** never close it yourself; frond_coord_close closes it. One generator per
** coordinator. May block: on the network, on a dead predecessor's
** ZooKeeper session (up to its session timeout), and on the wall clock
** catching up with the stored fence.
** Errors: NODE_IN_USE (a live process holds this identity's ID, or the
** node ID a lease is pinned to, "?node=N": the message names the holder),
** NODE_RANGE (no free ID, or above the layout's range), LAYOUT_MISMATCH
** (names both layouts and what switching would cost the recorded one),
** CLOCK_BEHIND (stored fence further ahead of the clock than a crash
** explains), CLOCK_OFFSET, COORD (unreachable and no cache),
** HIGHWATER_CORRUPT (cache file), FORKED (c was opened by the parent of
** this process), IO, NOMEM, INVAL, and those of frond_gen_create. A
** high-water file frond-node-<N>.hw that cache_dir holds for the node ID
** taken (left by a static node) is used as gen_opts' high_water_path
** when that is NULL: the generator starts above it too.
*/
FROND_EXPORT int frond_coord_gen_create(frond_coord *c, const frond_layout *l,
                                        const frond_gen_options *gen_opts,
                                        frond_gen **out, frond_error *err);

/* 0 while the generator may issue up to its fence, else the code its calls
** fail with now: NODE_ID_LOST (claim not held), LAYOUT_MISMATCH (the fleet's
** layout changed), COORD (started from the cache, coordinator not reached
** yet), CLOSED, FORKED (in a child of fork()). Thread-safe, never
** blocks. */
FROND_EXPORT int frond_coord_state(frond_coord *c);

typedef struct frond_coord_stats {
  uint64_t node;          /* the node ID (valid once gen_create succeeded) */
  char owner[128];        /* this node's identity, "host:port" */
  int state;              /* as frond_coord_state */
  int from_cache;         /* started from the cache file */
  int64_t start_after_ms; /* the generator started above this: the fences
                             of every earlier holder, the layout floor */
  int64_t fence_ms;       /* durable fence, unix ms; INT64_MAX: none */
  int64_t high_water_ms;  /* generator's last issued time, unix ms */
  int64_t last_write_ms;  /* unix ms of the last confirmed fence write */
  uint64_t fence_writes;  /* confirmed fence writes */
  uint64_t write_failures;
  uint64_t regains; /* claims taken back after a loss */
  int last_error;   /* last background error code, 0: none */
  char last_error_message[256];
  /* This clock minus the reference clock in ms (see docs/coordinators.md:
  ** the other live nodes' for ZooKeeper, the database's for the lease),
  ** measured at start and at every fence write; clock_checked is 0 until
  ** measured (static coordinator, started from the cache). */
  int64_t clock_offset_ms;
  int clock_checked;
} frond_coord_stats;

/* A snapshot of the coordinator's state. Thread-safe, never blocks on I/O. */
FROND_EXPORT void frond_coord_stats_get(frond_coord *c, frond_coord_stats *out);

/* One node ID the coordinator knows. */
typedef struct frond_coord_entry {
  uint64_t node;
  char owner[128];    /* identity of the last holder */
  int64_t fence_ms;   /* stored fence (exact high water after a clean
                         stop), unix ms; 0 when unknown */
  int64_t expires_ms; /* lease expiry, unix ms; 0 when not a lease */
  int live;           /* held by a live process right now */
} frond_coord_entry;

/* Every node ID the coordinator knows, sorted by node, into *out (free with
** frond_free); *n is the count. Reads only. May block on the network; not
** concurrent with gen_create or close on the same c. Errors: COORD, NOMEM,
** FORKED. */
FROND_EXPORT int frond_coord_list(frond_coord *c, frond_coord_entry **out,
                                  size_t *n, frond_error *err);

/* The layout the coordinator records for the fleet into *l, and the floor
** (see frond_coord_layout_set; 0: none). Returns 0, or FROND_ELAYOUT_INVALID
** when none is recorded yet (the first node records its own), COORD,
** FORKED. May block on the network. */
FROND_EXPORT int frond_coord_layout_get(frond_coord *c, frond_layout *l,
                                        int64_t *floor_id, frond_error *err);

/*
** Change the fleet's layout to *l. Refused (NODE_IN_USE) while any node
** holds an ID. Records the new layout with a floor: the largest ID any node
** could have issued under the old layout (from every node's fence); nodes
** under the new layout start numerically above it, or refuse to start
** (LAYOUT_MISMATCH, naming both layouts) when it is further ahead of the
** clock than they may wait. Old-layout nodes can neither start nor extend
** a fence afterwards. *floor_id receives the floor. A change that was
** begun and not finished (its process stopped halfway: every start then
** refuses, saying so) is finished by a call with a new layout and undone
** by one with the layout it started from, which puts the old record back
** and sets no floor; with the recorded layout and no such change, nothing
** changes. Not concurrent with
** gen_create on c. May block on the network. Errors: NODE_IN_USE,
** LAYOUT_INVALID, COORD, INVAL (the static coordinator records nothing),
** FORKED.
*/
FROND_EXPORT int frond_coord_layout_set(frond_coord *c, const frond_layout *l,
                                        int64_t *floor_id, frond_error *err);

/*
** Stop: block the generator (calls fail with CLOSED), stop the threads,
** store the final fence (the generator's exact high-water time, so that a
** restart need not wait) in the coordinator and the cache file, give the
** node ID up, and close the generator that gen_create made. No other call
** on c or on its generator may run concurrently or follow. Returns 0, or
** the first failure (the ID is then left to expire; the stored fence still
** protects every later holder). NULL is a no-op returning 0. May block on
** the network. In a child of fork(): frees the child's copy only, returns
** 0.
*/
FROND_EXPORT int frond_coord_close(frond_coord *c, frond_error *err);

#endif /* FROND_FROND_COORD_H */
