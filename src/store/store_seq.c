/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_seq.c -- a tag's sequence attributes: its bound (max: no ID above
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
#include "store/store_multi.h"

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

/* ---- the SQL store's part ---- */

int frond__store_sql_seq_schema(frond_store *st, frond_error *err) {
  frond_db *db = frond__store_sql_db(st);
  int my = strcmp(frond__db_engine(db), "mysql") == 0;
  return frond__db_ensure_table(
      db, "frond_tag_seq",
      my ? "CREATE TABLE IF NOT EXISTS frond_tag_seq (" SEQ_COLS
           ") ENGINE=InnoDB"
         : "CREATE TABLE IF NOT EXISTS frond_tag_seq (" SEQ_COLS ")",
      err);
}

static int sql_seq_get(frond_store *st, const char *tag, frond_tag_seq *q,
                       frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int rc = frond__db_exec(frond__store_sql_db(st),
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
int frond__store_sql_seq_create(frond_store *st, const char *tag,
                                const frond_tag_seq *q, frond_error *err) {
  frond_db *db = frond__store_sql_db(st);
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
int frond__store_sql_max_put(frond_store *st, const char *tag, int64_t max,
                             frond_error *err) {
  frond_db *db = frond__store_sql_db(st);
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
  if ((rc = sql_seq_get(st, tag, &got, err)) == 0 && got.max != max)
    rc = frond__fail(err, FROND_ESTORE,
                     "tag \"%s\": frond_tag_seq holds max %lld after writing "
                     "%lld",
                     tag, (long long)got.max, (long long)max);
  return rc;
}

int frond__store_sql_seq(frond_store *st, int op, void *arg, frond_error *err) {
  frond__store_seq_arg *b = arg;
  switch (op) {
  case FROND__STORE_SEQ_GET:
    return sql_seq_get(st, b->tag, &b->seq, err);
  case FROND__STORE_MAX_PUT:
    return frond__store_sql_max_put(st, b->tag, b->seq.max, err);
  default:
    return FROND_EINVAL;
  }
}

/* ---- the multi: store's part ---- */

/* Every member that answers holds the same attributes (none counts as
** one). A member that does not answer is skipped for a read (the others
** vouch: a write needs every member, so attributes are on all of them or
** refused at one that answers); none answering is STORE. */
static int multi_seq_get(frond__multi *ms, const char *tag, frond_tag_seq *q,
                         frond_error *err) {
  frond_error e;
  frond_tag_seq v;
  int i, first = -1;
  char why[FROND__MULTI_WHY_MAX] = "no member";
  for (i = 0; i < ms->n; i++) {
    e.code = 0;
    e.message[0] = '\0';
    if (!frond__multi_member_due(&ms->m[i]) ||
        frond__multi_member_open(ms, i, &e) != 0 ||
        sql_seq_get(ms->m[i].st, tag, &v, &e) != 0) {
      snprintf(why, sizeof(why), "member %d: %.400s", i,
               e.message[0] ? e.message : ms->m[i].why);
      continue;
    }
    if (first < 0) {
      first = i;
      *q = v;
    } else if (v.max != q->max || v.increment != q->increment ||
               v.offset != q->offset) {
      return frond__fail(
          err, FROND_ESTORE_MEMBER,
          "tag \"%s\": member %d (%s) records max %lld, increment %lld, "
          "offset %lld and member %d (%s) max %lld, increment %lld, offset "
          "%lld (max 0: none); set the max again with every member up "
          "(frond tag set-max), or delete the tag and create it again",
          tag, first, ms->m[first].engine, (long long)q->max,
          (long long)q->increment, (long long)q->offset, i, ms->m[i].engine,
          (long long)v.max, (long long)v.increment, (long long)v.offset);
    }
  }
  if (first < 0)
    return frond__fail(err, FROND_ESTORE, "multi: no member answers (%s)", why);
  return 0;
}

static int multi_max_put(frond__multi *ms, const char *tag, int64_t max,
                         frond_error *err) {
  int i, rc;
  for (i = 0; i < ms->n; i++)
    if ((rc = frond__multi_member_open(ms, i, err)) != 0 ||
        (rc = frond__store_sql_max_put(ms->m[i].st, tag, max, err)) != 0)
      return rc;
  return 0;
}

int frond__store_multi_seq(frond__multi *ms, int op, void *arg,
                           frond_error *err) {
  frond__store_seq_arg *b = arg;
  switch (op) {
  case FROND__STORE_SEQ_GET:
    return multi_seq_get(ms, b->tag, &b->seq, err);
  case FROND__STORE_MAX_PUT:
    return multi_max_put(ms, b->tag, b->seq.max, err);
  case FROND__STORE_CREATE_SEQ:
    ms->create_seq = *(const frond_tag_seq *)arg;
    return 0;
  default:
    return FROND_EINVAL;
  }
}

/* ---- the wrappers ---- */

int frond__store_seq(frond_store *st, const char *tag, frond_tag_seq *q,
                     frond_error *err) {
  frond__store_seq_arg b = {tag, {0, 1, 0}};
  int rc;
  *q = b.seq;
  if (st->methods->iVersion < 4 || st->methods->xControl == NULL)
    return 0;
  rc = st->methods->xControl(st, FROND__STORE_SEQ_GET, &b, err);
  if (rc == FROND_EINVAL) /* keeps none (frond://: its servers cut) */
    return 0;
  if (rc == 0)
    *q = b.seq;
  return rc;
}

static int max_put(frond_store *st, const char *tag, int64_t max,
                   frond_error *err) {
  frond__store_seq_arg b = {tag, {max, 1, 0}};
  int rc = st->methods->iVersion < 4 || st->methods->xControl == NULL
               ? FROND_EINVAL
               : st->methods->xControl(st, FROND__STORE_MAX_PUT, &b, err);
  if (rc == FROND_EINVAL)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": the %s store keeps no bounds", tag,
                       st->methods->zName);
  return rc;
}

int frond__store_create_seq(frond_store *st, const frond_tag_seq *q,
                            frond_error *err) {
  frond_tag_seq arg = {0, 1, 0};
  int rc;
  if (q != NULL)
    arg = *q;
  rc = st->methods->iVersion < 4 || st->methods->xControl == NULL
           ? FROND_EINVAL
           : st->methods->xControl(st, FROND__STORE_CREATE_SEQ, &arg, err);
  if (rc == FROND_EINVAL && q != NULL && !plain(q))
    return frond__fail(err, FROND_EINVAL,
                       "the %s store keeps no bounds or strides",
                       st->methods->zName);
  return rc == FROND_EINVAL ? 0 : rc;
}

/* The rules of a create's attributes, before anything is written. */
int frond__store_seq_check(const frond_tag_seq *q, int64_t step, int64_t start,
                           frond_error *err) {
  if (q == NULL)
    return 0;
  if (q->max < 0)
    return frond__fail(err, FROND_EINVAL, "max %lld is below 1 (0: none)",
                       (long long)q->max);
  if (q->increment < 0 || q->increment > INT32_MAX)
    return frond__fail(err, FROND_EINVAL, "increment %lld is out of 1..%d",
                       (long long)q->increment, INT32_MAX);
  if (q->offset < 0 || (q->offset > 0 && q->offset >= q->increment))
    return frond__fail(err, FROND_EINVAL,
                       "offset %lld is out of 0..%lld (the remainder of every "
                       "ID divided by the increment %lld)",
                       (long long)q->offset,
                       (long long)(q->increment > 1 ? q->increment - 1 : 0),
                       (long long)(q->increment > 1 ? q->increment : 1));
  if (q->increment > 1 && step < q->increment)
    return frond__fail(err, FROND_EINVAL,
                       "step %lld is below the increment %lld: a segment "
                       "counts numbers, and must hold at least one ID of "
                       "the tag",
                       (long long)step, (long long)q->increment);
  if (q->max > 0 && start > 0 && start > q->max)
    return frond__fail(err, FROND_EINVAL,
                       "max %lld is below the start %lld: the tag could "
                       "issue nothing",
                       (long long)q->max, (long long)start);
  return 0;
}

int frond_store_tag_seq(frond_store *st, const char *tag, frond_tag_seq *out,
                        frond_error *err) {
  frond_tag_row row;
  int rc;
  if ((rc = frond_store_tag_get(st, tag, &row, err)) != 0)
    return rc;
  return frond__store_seq(st, tag, out, err);
}

int frond_store_tag_set_max(frond_store *st, const char *tag, int64_t max,
                            frond_error *err) {
  frond_tag_row row;
  frond_tag_seq q;
  frond_error e;
  int64_t old;
  int rc, lower;
  if (max < 0)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": max %lld is below 1 (0: no bound)", tag,
                       (long long)max);
  if ((rc = frond_store_tag_get(st, tag, &row, err)) != 0 ||
      (rc = frond__store_seq(st, tag, &q, err)) != 0)
    return rc;
  old = q.max;
  /* Lowering: from none to one, or to a smaller one. */
  lower = max > 0 && (old == 0 || max < old);
  if (lower && row.max_id - 1 > max)
    return frond__fail(err, FROND_ETAG_FLOOR,
                       "tag \"%s\": max %lld is below %lld, the highest ID "
                       "it may already have issued; a bound only rises "
                       "once IDs are out",
                       tag, (long long)max, (long long)(row.max_id - 1));
  if ((rc = max_put(st, tag, max, err)) != 0 || !lower)
    return rc;
  /* An allocation that read the old bound committed before the write:
  ** its row shows now (see the head of this file). */
  if ((rc = frond_store_tag_get(st, tag, &row, err)) != 0 ||
      row.max_id - 1 <= max)
    return rc;
  if (max_put(st, tag, old, &e) != 0)
    return frond__fail(err, FROND_ESTORE,
                       "tag \"%s\": an allocation took IDs up to %lld while "
                       "max %lld was written, and the old max %lld could "
                       "not be written back (%s): set it with frond tag "
                       "set-max %s %lld",
                       tag, (long long)(row.max_id - 1), (long long)max,
                       (long long)old, e.message, tag, (long long)old);
  return frond__fail(err, FROND_ETAG_FLOOR,
                     "tag \"%s\": max %lld is below %lld, which an "
                     "allocation took meanwhile; the max stays %lld",
                     tag, (long long)max, (long long)(row.max_id - 1),
                     (long long)old);
}
