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
** Why a lowered bound is safe (frond_store_tag_set_max). Lowering writes
** the new bound first, then reads what the tag may have issued (its row's
** max_id, in a multi: store the highest of any member's) and, when that
** is above the new bound, writes the old bound back and refuses. Take any
** allocation A. If A's read came after the new bound was written, A cuts
** at the new bound. Otherwise A's read, and so A's commit before it, came
** before that write, so the check that follows the write sees A's row: if
** A's range passes the new bound, the old bound is restored and the
** lowering refused. Either way no ID above the bound that stays recorded
** is ever issued. Raising needs no check: every range cut at the old
** bound is below the new one.
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
  return frond__db_ensure_table(
      db, "frond_tag_seq",
      my ? "CREATE TABLE IF NOT EXISTS frond_tag_seq (" SEQ_COLS
           ") ENGINE=InnoDB"
         : "CREATE TABLE IF NOT EXISTS frond_tag_seq (" SEQ_COLS ")",
      err);
}

int frond__seq_get(frond_db *db, const char *tag, frond_tag_seq *q,
                   frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int rc = frond__db_exec(db,
                          "SELECT max_value, stride, residue FROM "
                          "frond_tag_seq WHERE biz_tag = $1",
                          &a, 1, &r, err);
  q->max = 0;
  q->increment = 1;
  q->offset = 0;
  if (rc == 0 && r.nrows > 0 &&
      (rc = frond__db_get_int(&r, 0, 0, &q->max, err)) == 0 &&
      (rc = frond__db_get_int(&r, 0, 1, &q->increment, err)) == 0)
    rc = frond__db_get_int(&r, 0, 2, &q->offset, err);
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
