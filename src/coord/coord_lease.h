/*
** coord_lease.h -- the lease coordinator's state and its connection,
** shared by coord_lease.c (the protocol: acquire, fence, regain, the
** fleet's layout) and coord_lease_sql.c (the connection: SQLite, or
** PostgreSQL with every wait bounded, and statements written once for
** both).
*/
#ifndef FROND_COORD_LEASE_H
#define FROND_COORD_LEASE_H

#include "coord/coord.h"

#include <sqlite3.h>
#include <stdint.h>
#ifdef FROND_WITH_PG
#include <libpq-fe.h>
#else
typedef struct pg_conn PGconn;
#endif

#define MAX_COLS 5
#define COL_MAX 260

typedef struct {
  char col[MAX_COLS][COL_MAX];
} row;

typedef struct {
  row *rows;
  size_t n, cap;
} result;

typedef struct {
  frond_coord *c;
  sqlite3 *db;
  PGconn *pg;
  int is_pg;
  char conninfo[2 * FROND_COORD_URI_MAX + 2];
  char token[40];
  uint64_t node;
  int held;
  /* How long a statement may go unanswered: a third of the lease for the
  ** fence writes (a renewal must not outlive the lease), connect_ms or
  ** that, whichever is longer, for the rest. */
  int64_t answer_ms;
} lease;

/* Open the SQLite file path (WAL, busy timeout connect_ms), or connect to
** l->conninfo (PostgreSQL). */
int frond__lease_open_sqlite(lease *l, const char *path, frond_error *err);
int frond__lease_open_pg(lease *l, frond_error *err);
/* Close the connection, either kind; l stays allocated. */
void frond__lease_drop(lease *l);

/* Run one statement (autocommit: one transaction, unless inside BEGIN),
** written with $n parameters, @now (the database's clock in unix ms) and
** @lock (FOR UPDATE where rows can be locked). Rows go to r when not
** NULL; *changes receives the rows written. */
int frond__lease_exec(lease *l, const char *sql, int np, const char **pv,
                      result *r, int *changes, frond_error *err);

#endif
