/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_sql_seq.c -- a tag's sequence attributes: its bound (max: no ID above
** it is ever issued) and its stride (increment k and offset r: every ID
** of the tag is r modulo k).
**
** Where they live. Leaf's leaf_alloc stays as Leaf defines it; the
** attributes are a row of Frond's own table frond_tag_seq (biz_tag,
** max_value, stride, residue) in the same database, on every engine. A
** tag with neither has no row there, so a store whose tags have none
** looks exactly as before. In a multi: store every member records them
** (a shared fact): a read asks every member that answers, and members
** that disagree are refused, both named.
**
** What the row counts. leaf_alloc's max_id and step count numbers, as
** Leaf's do: an allocation reserves the numbers [max_id - step, max_id),
** and of those a strided tag issues the ones that are r modulo k (step /
** k of them, give or take one). The IDs therefore stay inside the ranges
** the row hands out, which never overlap (whatever the stride, the
** floor of a deleted tag, a multi: interleave or a Leaf node beside):
** the stride decides which numbers of a range are issued, never whether
** a number is issued twice.
**
** Who enforces them. The allocator (seg_load.c) reads the attributes after
** each allocation has committed and installs the range with them: cut at
** max + 1, and only its numbers of the residue (a range of none is
** SEGMENT_EXHAUSTED when it starts above max). The store's row may move
** past max (a load that finds the tag used up, a Leaf node): that wastes
** numbers, never issues one.
**
** The stride is fixed when the tag is created (a change would leave IDs of
** two residues, and nodes buffering the old one); a tag's step is at
** least its increment, so that every range holds an ID of the residue.
**
** Why a lowered bound is safe (frond_store_tag_set_max). The check and
** the write are one transaction that holds the tag's leaf_alloc row
** (frond__seq_max_set): every allocation updates that row, and every
** set-max locks it, so both are serialised with it. Take any allocation
** A. If A committed before the lock, the check sees A's row: a lowering
** below what A took is refused, nothing written. Otherwise A commits
** after the new bound and reads it after its commit, so it cuts there.
** Raising needs no check: every range cut at the old bound is below the
** new one. Nothing is written back afterwards, so one admin's refused
** lowering can never undo another's accepted one. In a multi: store each
** member is checked and written so; members that disagree afterwards
** (one refused or was away) are refused by every read until a set-max
** reaches them all.
**
** A tag created with attributes records them in the create's own
** transaction (FROND__STORE_CREATE_SEQ): no node can allocate the tag
** before they hold. A delete drops them with the row, in one transaction;
** the floor (frond_tag_floor) keeps a re-created tag above every number
** the old one could have issued whatever either's attributes, and the new
** tag has the ones it is created with, or none.
*/
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEQ_COLS                                                               \
  "biz_tag varchar(128) NOT NULL PRIMARY KEY, max_value bigint NOT NULL "      \
  "DEFAULT 0, stride bigint NOT NULL DEFAULT 1, residue bigint NOT NULL "      \
  "DEFAULT 0, update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP"

static int plain(const frond_tag_seq *q) {
  return q == NULL || (q->max <= 0 && q->increment <= 1);
}

int frond__seq_schema(frond_db *db, frond_error *err) {
  int my = strcmp(frond__db_engine(db), "mysql") == 0;
  int rc = frond__db_ensure_table(
      db, "frond_tag_seq",
      my ? "CREATE TABLE IF NOT EXISTS frond_tag_seq (" SEQ_COLS
           ") ENGINE=InnoDB"
         : "CREATE TABLE IF NOT EXISTS frond_tag_seq (" SEQ_COLS ")",
      err);
  return rc != 0 ? rc : frond__ordered_schema(db, err);
}

int frond__seq_get(frond_db *db, const char *tag, frond_tag_seq *q,
                   frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int64_t ordered = 0;
  /* One round trip: the row of frond_tag_seq (or none) and whether the
  ** tag is ordered (store_sql_ordered.c). */
  int rc = frond__db_exec(
      db,
      "SELECT coalesce((SELECT max_value FROM frond_tag_seq WHERE biz_tag = "
      "$1), 0), coalesce((SELECT stride FROM frond_tag_seq WHERE biz_tag = "
      "$1), 1), coalesce((SELECT residue FROM frond_tag_seq WHERE biz_tag = "
      "$1), 0), coalesce((SELECT ordered FROM frond_tag_owner WHERE biz_tag "
      "= $1), 0)",
      &a, 1, &r, err);
  q->max = 0;
  q->increment = 1;
  q->offset = 0;
  q->ordered = 0;
  if (rc == 0 && r.nrows > 0 &&
      (rc = frond__db_get_int(&r, 0, 0, &q->max, err)) == 0 &&
      (rc = frond__db_get_int(&r, 0, 1, &q->increment, err)) == 0 &&
      (rc = frond__db_get_int(&r, 0, 2, &q->offset, err)) == 0 &&
      (rc = frond__db_get_int(&r, 0, 3, &ordered, err)) == 0)
    q->ordered = ordered != 0;
  frond__db_result_free(&r);
  /* A row written by hand that breaks the rules would issue wrong IDs. */
  if (rc == 0 && (q->max < 0 || q->increment < 1 || q->offset < 0 ||
                  q->offset >= q->increment))
    rc = frond__fail(err, FROND_ESTORE,
                     "tag \"%s\": frond_tag_seq holds max %lld, stride %lld, "
                     "residue %lld: not a valid sequence (0 <= residue < "
                     "stride)",
                     tag, (long long)q->max, (long long)q->increment,
                     (long long)q->offset);
  return rc;
}

/* A create's attributes (in its transaction): the tag's row, or none
** (a row a deleted tag of the name left is dropped). */
int frond__seq_create(frond_db *db, const char *tag, const frond_tag_seq *q,
                      frond_error *err) {
  frond_db_arg a[4];
  int rc;
  a[0] = frond__db_text(tag);
  if ((rc = frond__db_exec(db, "DELETE FROM frond_tag_seq WHERE biz_tag = $1",
                           a, 1, NULL, err)) != 0 ||
      (rc = frond__ordered_put(db, tag, q != NULL && q->ordered, err)) != 0 ||
      plain(q))
    return rc;
  a[1] = frond__db_int(q->max);
  a[2] = frond__db_int(q->increment > 1 ? q->increment : 1);
  a[3] = frond__db_int(q->increment > 1 ? q->offset : 0);
  return frond__db_exec(
      db,
      "INSERT INTO frond_tag_seq (biz_tag, max_value, stride, "
      "residue, update_time) VALUES ($1, $2, $3, $4, "
      "CURRENT_TIMESTAMP)",
      a, 4, NULL, err);
}

/* Record max (0: none), keeping the stride; each statement alone leaves
** the row whole (a reader sees the old max or the new, never none). */
int frond__seq_max_put(frond_db *db, const char *tag, int64_t max,
                       frond_error *err) {
  frond_db_arg a[2];
  frond_tag_seq got;
  int rc;
  a[0] = frond__db_text(tag);
  a[1] = frond__db_int(max);
  if ((rc = frond__db_exec(db,
                           "UPDATE frond_tag_seq SET max_value = $2, "
                           "update_time = CURRENT_TIMESTAMP WHERE biz_tag = $1",
                           a, 2, NULL, err)) != 0 ||
      (max > 0 && (rc = frond__db_exec(db,
                                       "INSERT INTO frond_tag_seq (biz_tag, "
                                       "max_value, update_time) VALUES ($1, "
                                       "$2, CURRENT_TIMESTAMP) "
                                       "{if_absent:biz_tag}",
                                       a, 2, NULL, err)) != 0) ||
      (rc = frond__db_exec(db,
                           "DELETE FROM frond_tag_seq WHERE biz_tag = $1 AND "
                           "max_value = 0 AND stride = 1",
                           a, 1, NULL, err)) != 0)
    return rc;
  /* Read back what is recorded: an UPDATE that set the same value may
  ** count no change (MySQL), and the INSERT did nothing when a row was. */
  if ((rc = frond__seq_get(db, tag, &got, err)) == 0 && got.max != max)
    rc = frond__fail(err, FROND_ESTORE,
                     "tag \"%s\": frond_tag_seq holds max %lld after writing "
                     "%lld",
                     tag, (long long)got.max, (long long)max);
  return rc;
}

/* The highest global ID a row at max_id (step) can have handed out: a plain
** store's max_id - 1, a member's mapped through its interleave (0: none). */
static int64_t row_top(int64_t max_id, int64_t step, int member, int members) {
  int64_t l = max_id - 1, ls, gs;
  if (members <= 0)
    return l;
  if (l < 1 || step < 1)
    return 0;
  ls = l - (l - 1) % step;
  return frond__multi_map(ls, step, member, members, &gs) == 0 ? gs + (l - ls)
                                                               : INT64_MAX;
}

/* A checked max (frond tag set-max): in one transaction holding the tag's
** leaf_alloc row, so that it is serialised with every allocation of the
** tag (they update that row) and every other set-max (they lock it too).
** A lowering below what the row may have handed out is refused with
** nothing written; otherwise the max is written and committed. An
** allocation that commits before the lock is seen by the check; one that
** waits for the lock commits after the new max, and the allocator reads
** the max after its commit (seg_load.c): either way no ID above the
** recorded max. Nothing is ever written back, so no set-max undoes
** another's. */
int frond__seq_max_set(frond_db *db, const char *tag, int64_t max, int member,
                       int members, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  frond_tag_seq old;
  int64_t max_id = 0, step = 0, top;
  int rc;
  if ((rc = frond__db_begin(db, err)) != 0)
    return rc;
  rc = frond__db_exec(db,
                      "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = $1 "
                      "{for_update}",
                      &a, 1, &r, err);
  if (rc == 0 && r.nrows == 0)
    rc = frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  else if (rc == 0 && (rc = frond__db_get_int(&r, 0, 0, &max_id, err)) == 0)
    rc = frond__db_get_int(&r, 0, 1, &step, err);
  frond__db_result_free(&r);
  if (rc == 0)
    rc = frond__seq_get(db, tag, &old, err);
  top = row_top(max_id, step, member, members);
  if (rc == 0 && max > 0 && (old.max == 0 || max < old.max) && top > max)
    rc = frond__fail(err, FROND_ETAG_FLOOR,
                     "tag \"%s\": max %lld is below %lld, the highest ID it "
                     "may already have issued; a bound only rises once IDs "
                     "are out (the max stays %lld, 0: none)",
                     tag, (long long)max, (long long)top, (long long)old.max);
  if (rc == 0)
    rc = frond__seq_max_put(db, tag, max, err);
  if (rc != 0) {
    frond__db_rollback(db);
    return rc;
  }
  return frond__db_commit(db, err);
}
