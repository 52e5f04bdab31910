/* SPDX-License-Identifier: Apache-2.0 */
/*
** check.h -- what `frond check`'s files share: a row's verdict, what the
** rows found so far, and the rows of check_rows.c.
**
** check.c runs the table of rows and prints their verdicts; check_rows.c
** holds the verdict helpers and the rows about the facts a fleet shares in
** its store (formats' keys, tags' floors, a member's place). Files call
** one way: check.c -> check_rows.c.
*/
#ifndef FROND_CLI_CHECK_H
#define FROND_CLI_CHECK_H

#include "coord/coord.h"
#include "core/high_water.h"
#include "server/server.h"

enum {
  FROND__CHECK_OK,
  FROND__CHECK_WARN,
  FROND__CHECK_FAIL,
  FROND__CHECK_SKIP
};

typedef struct frond__verdict {
  int status;
  int code; /* a FROND_E* code for warn and FAIL, else 0 */
  char msg[900];
} frond__verdict;

/* What the rows found so far. */
typedef struct frond__check_ctx {
  frond__server *srv;
  frond_error load_err; /* reading the configuration */
  int config_ok;        /* read, and passed the preflight */
  int dir_ok;           /* data_dir is a directory we can write in */
  int is_static;        /* the static coordinator: node from the file */
  int64_t node;         /* the node ID this process would hold; -1: unknown */
  frond_coord *coord;   /* opened by the coordinator row */
  int coord_ok;         /* and reached */
  frond_coord_entry *nodes;
  size_t nnodes;
  char owner[128];       /* this node's identity at the coordinator */
  char coord_shown[300]; /* its URI for messages, no password */
  char served[160];      /* what the settings serve, checked (node row) */
  int have_rec;          /* the static node's high-water record was read */
  frond__hw_record rec;
  int64_t fence_ms; /* a fenced coordinator's stored fence for node */
} frond__check_ctx;

/* Set v; returns status. */
int frond__check_say(frond__verdict *v, int status, int code, const char *fmt,
                     ...) __attribute__((format(printf, 4, 5)));
/* v from an error: its code and message. */
int frond__check_fail(frond__verdict *v, int status, const frond_error *e);

/* A SQLite file that does not exist yet is not made here: a start makes
** it, in a directory it must be able to write in. 1 when uri is such a
** file (out says so), 0 to open it, or STORE_PERMANENT. */
int frond__check_sqlite_absent(const char *uri, char *out, size_t len,
                               frond_error *e);

/* keys: each keyed format's fingerprint against the record where the
** processes issuing its numbers meet, read without writing. */
int frond__check_keys(frond__check_ctx *x, frond__verdict *v);
/* tags: the store's tags against their floors (a row loaded or restored
** below what a deleted tag of its name issued), and a plain store on a
** database that is a multi: member. */
int frond__check_tags(frond__check_ctx *x, frond__verdict *v);
/* The coordinator against the one the store records for its node IDs
** (coord_record.c), read without writing: COORDINATOR_MISMATCH naming
** both when a start would be refused. */
int frond__check_fleet(frond__check_ctx *x, frond__verdict *v);

#endif /* FROND_CLI_CHECK_H */
