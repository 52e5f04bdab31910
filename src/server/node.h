/* SPDX-License-Identifier: Apache-2.0 */
/*
** node.h -- claiming a node ID from the configuration: what `frond serve`
** and `frond next` share, so that both claim theirs the same way.
*/
#ifndef FROND_SERVER_NODE_H
#define FROND_SERVER_NODE_H

#include "server/config.h"

/* How a node ID is claimed; see frond__node_claim. */
typedef struct frond__node_claim_opts {
  const char *uri;  /* the coordinator (frond__config_coord_uri) */
  const char *host; /* the HTTP address: identity and loopback check */
  int port;
  /* Keep files in data_dir: the high-water file of a static node ID and
  ** the node cache file. 0: none (`frond next --no-high-water`), refused
  ** for a static node ID registered nowhere. */
  int files;
  /* A server: warn when a node ID registered nowhere is used beyond
  ** loopback. */
  int serving;
  /* Not NULL: a store (or coordinator) not reached leaves the coordinator
  ** unchecked against the store's record (*unchecked = the code, STORE or
  ** COORD; the server checks later and issues no snowflake ID until then)
  ** rather than failing the claim. */
  int *unchecked;
} frond__node_claim_opts;

/*
** Claim a node ID and create the generator on it, as configured by cfg
** (advertise, data_dir, max_ahead_ms, max_wait_ms, layout_change) under
** layout l: open the coordinator o->uri with this node's identity (cfg's
** advertise, else the HTTP address), switch the layout it records when
** layout_change asks for it, and create the generator above every earlier
** holder (and the data directory's high-water file of a static node ID).
** *coord owns *gen: frond_coord_close closes both. Returns 0, or the
** library's code with err filled; *coord is NULL then.
*/
int frond__node_claim(const frond__config *cfg, const frond__node_claim_opts *o,
                      const frond_layout *l, frond_coord **coord,
                      frond_gen **gen, frond_error *err);

/* The coordinator options a claim under cfg would use, for a node whose
** HTTP address is host:port: its identity (buf holds it when made here)
** and the data directory's cache. For what looks without claiming (frond
** check). 0 or INVAL (a bad advertise). */
int frond__node_coord_options(const frond__config *cfg, const char *host,
                              int port, frond_coord_options *co, char *buf,
                              size_t len, frond_error *err);

/*
** A layout with no node bits has one node ID, 0: a second process that
** issues under it repeats every ID of the first. It is allowed only where
** exactly one holder of node 0 can exist (see node.c): a coordinator that
** claims node IDs under mutual exclusion and keeps the fence (a lease, in
** the store's database or named; ZooKeeper). Every static node ID is
** refused, CONFIG saying why and what to do: registered nowhere, its
** high-water file's lock covers one node ID in one data directory. oneoff
** (`frond next`) words the fix as a flag. uri is the coordinator
** (frond__config_coord_uri). 0 for any layout with node bits.
*/
int frond__node_one_holder(const frond__config *cfg, const char *uri,
                           const frond_layout *l, int oneoff, frond_error *err);
/* The file of a SQLite store or lease URI (sqlite:..., lease+sqlite:...)
** as an absolute path into path (len bytes), *relative set when the URI
** names it relative to the working directory: 1, or 0 when uri names no
** SQLite file (another engine, none, multi:, sqlite::memory:), -1 when the
** path does not fit. */
int frond__node_sqlite_file(const char *uri, char *path, size_t len,
                            int *relative);

/* A store or coordinator URI for the log: passwords hidden, and a SQLite
** file named by a relative path followed by the absolute one, "sqlite:
** frond.db (/var/lib/frond/frond.db)". */
void frond__node_store_shown(const char *uri, char *out, size_t len);

/* 0 when uri names no SQLite file or one that exists; else CONFIG with a
** message naming `what` (the key: "store", "coordinator"), the absolute
** path, and then `why`: that the command makes no store, what a new file
** would have meant, and the ways on. */
int frond__node_sqlite_here(const char *what, const char *uri, const char *why,
                            frond_error *err);

/* ---- the fleet's coordinator in the store (node_coord.c) -------------- */

struct frond__coord_rec;
struct frond__coord_book;
struct frond_store;
/* c's identity and the node IDs it serves, as the store's log records
** them. */
int frond__node_coord_rec(frond_coord *c, struct frond__coord_rec *me,
                          frond_error *err);
/* Open store as the log's book (where: its name in messages): 0, 1 when
** the store keeps no facts (nothing opened), or an error. */
int frond__node_book_open(const char *store, struct frond_store **st,
                          struct frond__coord_book *b, char *where, size_t wlen,
                          frond_error *err);
/* Check c against the coordinator store records for its node IDs
** (recording it when none is): COORDINATOR_MISMATCH naming both; STORE
** when the store is not reached; 0, with g raised above the floor of a
** change of coordinator. Not checked: store none, a driver without facts
** (static), a store without facts. Blocks on the store. */
int frond__node_coord_check(const char *store, frond_coord *c, frond_gen *g,
                            frond_error *err);
/* After c refused a start (LAYOUT_MISMATCH): when the store records
** another coordinator for c's node IDs, c was retired by a change of
** coordinator, and err is replaced by COORDINATOR_MISMATCH naming both.
** Only reads; any failure leaves err as it was. */
void frond__node_coord_retired(const char *store, frond_coord *c,
                               frond_error *err);
/* Is a failed check's code one a later try may pass (the store or the
** coordinator not reached: STORE, COORD), so that a server starts and
** checks later (a start from the node cache while ZooKeeper is down)? */
int frond__node_coord_later(int code);

#endif /* FROND_SERVER_NODE_H */
