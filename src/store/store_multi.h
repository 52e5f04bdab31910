/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_multi.h -- the multi: store's private pieces, shared by its files:
**
**   store_multi_uri.c   its URI grammar and the interleave's arithmetic
**   store_multi.c       members (connecting, joining, health), and
**                       allocating a block with the members' marks
**   store_multi_tags.c  the backend: open, close, and every tag operation
**
** (store_multi.c's head explains the scheme and what it rests on.)
*/
#ifndef FROND_STORE_MULTI_H
#define FROND_STORE_MULTI_H

#include "store/store.h"

#include <stdatomic.h>

#define FROND__MULTI_WHY_MAX 512

typedef struct frond__multi_member {
  char *uri;
  char engine[16];         /* the scheme, for messages (never the password) */
  frond_store *st;         /* NULL until connected and its identity checked */
  int refused;             /* its identity does not match: never used */
  int joining;             /* being checked before it records its place */
  frond_store *joining_st; /* its connection meanwhile */

  /* Shared by every connection of one allocator (FROND__STORE_SHARE):
  ** the rollback guard of the member's ranges, and whether it serves. */
  frond_store_guard *guard;
  struct frond__multi_health {
    atomic_int up;
    atomic_int stale;         /* refused as behind its marks: it answers */
    _Atomic int64_t retry_ns; /* no attempt before (monotonic), 0: now */
    _Atomic int64_t backoff_ms;
  } * h, h_own;
  char why[FROND__MULTI_WHY_MAX]; /* the last failure */
} frond__multi_member;

typedef struct frond__multi {
  frond_store base;
  int n;
  unsigned next;            /* round-robin cursor */
  frond_store_guard *step;  /* tag -> the block size seen last */
  int shared;               /* guards, step and up are another's */
  int scan;                 /* the member a listing in pages reads, -1: none */
  frond_tag_seq create_seq; /* what the next create records */
  frond__multi_member m[FROND_STORE_MULTI_MAX];
} frond__multi;

/* Connect member i, check its identity, and for a database that records
** no place yet, whether it may join (STORE_MEMBER_STALE when the others
** record blocks of its place: a new or emptied database stands there).
** 0 when it is usable. */
int frond__multi_member_open(frond__multi *ms, int i, frond_error *err);
/* What the members record under name, read only: the one value ("" when
** none records one), STORE_MISMATCH naming two members that differ. */
int frond__store_multi_fact_read(frond_store *st, const char *name,
                                 char *recorded, size_t len, frond_error *err);
/* Whether member i may be tried now (connected, or due for a retry). */
int frond__multi_member_due(const frond__multi_member *m);
/* Whether member i may be asked for, or given, the others' marks now: due,
** or refused as behind its own marks (its database answers). */
int frond__multi_member_holds(const frond__multi_member *m);
/* Bounds and strides (store_multi.c): xControl's FROND__STORE_SEQ_GET,
** MAX_PUT and CREATE_SEQ. */
int frond__store_multi_seq(frond__multi *ms, int op, void *arg,
                           frond_error *err);
/* Member i worked, or failed with e (skipped for a backoff; logged when
** it was up, as a refusal when e is STORE_MEMBER_STALE). */
void frond__multi_member_up(frond__multi *ms, int i);
void frond__multi_member_down(frond__multi *ms, int i, const frond_error *e);
/* A block of tag from some member, round-robin: its global range
** [*max_id - *row_step, *max_id). */
int frond__multi_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err);
/* The first global ID member i hands out next for its row r. */
int64_t frond__multi_row_next(const frond__multi *ms, int i,
                              const frond_tag_row *r);

#endif /* FROND_STORE_MULTI_H */
