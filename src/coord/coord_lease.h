/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_lease.h -- what the two files of the database lease share: the
** driver's state, the statements of the layout record and of frond_meta,
** and acquire. coord_lease.c (open, fence, regain, release, list, the
** layout change, the method table) calls coord_lease_take.c (taking a
** row, who holds it, the shared statements), never the reverse.
*/
#ifndef FROND_COORD_LEASE_H
#define FROND_COORD_LEASE_H

#include "coord/coord.h"
#include "store/db.h"

#define CHANGING FROND_COORD_CHANGING
#define META_MAX 256

typedef struct {
  frond_coord *c;
  frond_db *db; /* NULL between calls unless keep_connection=1 */
  char uri[FROND_LEASE_DB_URI_MAX];
  frond_db_options o;
  /* From open to the end of the first fence write: the start's calls
  ** (take, clock, facts, first fence) share one connection. */
  int starting;
  char token[40];
  uint64_t node;
  int held;
} lease;

/* The fleet's layout as frond_meta records it. */
typedef struct {
  char spec[META_MAX]; /* "changing:<spec>" during a change */
  char previous[META_MAX];
  int64_t floor;
} layout_rec;

/* A connection for one call of the driver (c->lock held): the one kept
** open, or a new one whose connect finishes by deadline_ns (0: by
** connect_ms); frond__lease_idle closes it after the call unless
** keep_connection=1. A failed connect is COORD, in the engine's words. */
int frond__lease_connect(lease *l, int64_t deadline_ns, frond_error *err);
void frond__lease_idle(lease *l);

/* The layer's failure as the coordinator's: the database could not be
** used (COORD), in the engine's words; a bad URI is the caller's (INVAL). */
int frond__lease_err(int rc, frond_error *err);
/* One statement, its failure as frond__lease_err's. */
int frond__lease_run(lease *l, const char *sql, const frond_db_arg *a, int n,
                     frond_db_result *r, frond_error *err);
/* The layout record, and why a guarded write changed nothing:
** LAYOUT_MISMATCH, COORD (a change is under way) or 0 (the layout is
** ours; c->floor_id and c->prev_spec set from the record). */
int frond__lease_read_layout(lease *l, layout_rec *rec, frond_error *err);
int frond__lease_layout_verdict(lease *l, frond_error *err);
/* name = value in frond_meta. */
int frond__lease_set_meta(lease *l, const char *name, const char *value,
                          frond_error *err);
/* The driver's xAcquire: take a row (see coord_lease.c's head comment). */
int frond__lease_acquire(frond_coord *c, frond__coord_claim *out,
                         frond_error *err);

#endif /* FROND_COORD_LEASE_H */
