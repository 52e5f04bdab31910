/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_bound.c -- a tag's bound (its max): no ID above it is ever issued.
**
** Where it lives. Leaf's leaf_alloc stays as Leaf defines it; the bound is
** a row of Frond's own table frond_tag_bound (biz_tag, max_value) in the
** same database, on every engine. A tag without a bound has no row there,
** so a store whose tags have none looks exactly as before. In a multi:
** store every member records the bound (a shared fact): a read asks every
** member that answers, and members that disagree are refused, both named.
**
** Who enforces it. The allocator (seg_load.c) reads the bound after each
** allocation has committed, and cuts the range at max + 1: the last range
** may be shorter than the step, and a range that starts above max is
** SEGMENT_EXHAUSTED. The store's row may move past max (a load that finds
** the tag used up, a Leaf node): that wastes numbers, never issues one.
**
** Why a lowered bound is safe (frond_store_tag_set_max). Lowering writes
** the new bound first, then reads what the tag may have issued (its row's
** max_id, in a multi: store the highest of any member's) and, when that
** is above the new bound, writes the old bound back and refuses. Take any
** allocation A. If A's bound read came after the new bound was written,
** A cuts at the new bound. Otherwise A's read, and so A's commit before
** it, came before that write, so the check that follows the write sees
** A's row: if A's range passes the new bound, the old bound is restored
** and the lowering refused. Either way no ID above the bound that stays
** recorded is ever issued. Raising needs no check: every range cut at the
** old bound is below the new one.
**
** A tag created with a bound records it in the create's own transaction
** (frond__store_sql_create_max): no node can allocate the tag before it is
** bounded. A delete drops the bound with the row, in one transaction; the
** floor (frond_tag_floor) keeps a re-created tag above every ID the old
** one could have issued whatever either's bound, and the new tag has the
** bound it is created with, or none.
*/
#include "store/store.h"
#include "store/store_multi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOUND_COLS                                                             \
  "biz_tag varchar(128) NOT NULL PRIMARY KEY, max_value bigint NOT NULL, "     \
  "update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP"

/* ---- the SQL store's part ---- */

int frond__store_sql_bound_schema(frond_store *st, frond_error *err) {
  frond_db *db = frond__store_sql_db(st);
  int my = strcmp(frond__db_engine(db), "mysql") == 0;
  return frond__db_ensure_table(
      db, "frond_tag_bound",
      my ? "CREATE TABLE IF NOT EXISTS frond_tag_bound (" BOUND_COLS
           ") ENGINE=InnoDB"
         : "CREATE TABLE IF NOT EXISTS frond_tag_bound (" BOUND_COLS ")",
      err);
}

static int sql_bound_get(frond_store *st, const char *tag, int64_t *max,
                         frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int rc = frond__db_exec(frond__store_sql_db(st),
                          "SELECT max_value FROM frond_tag_bound WHERE "
                          "biz_tag = $1",
                          &a, 1, &r, err);
  *max = 0;
  if (rc == 0 && r.nrows > 0)
    rc = frond__db_get_int(&r, 0, 0, max, err);
  frond__db_result_free(&r);
  return rc;
}

/* Record max (0: drop the bound), inside the caller's transaction or as
** two statements of their own: a reader sees the old row or the new. */
int frond__store_sql_bound_put(frond_store *st, const char *tag, int64_t max,
                               frond_error *err) {
  frond_db *db = frond__store_sql_db(st);
  frond_db_arg a[2];
  frond_db_result r = {0};
  int rc;
  a[0] = frond__db_text(tag);
  a[1] = frond__db_int(max);
  if (max <= 0)
    return frond__db_exec(db, "DELETE FROM frond_tag_bound WHERE biz_tag = $1",
                          a, 1, NULL, err);
  rc = frond__db_exec(db,
                      "UPDATE frond_tag_bound SET max_value = $2, update_time "
                      "= CURRENT_TIMESTAMP WHERE biz_tag = $1",
                      a, 2, &r, err);
  if (rc == 0 && r.changes == 0)
    rc = frond__db_exec(db,
                        "INSERT INTO frond_tag_bound (biz_tag, max_value, "
                        "update_time) VALUES ($1, $2, CURRENT_TIMESTAMP) "
                        "{if_absent:biz_tag}",
                        a, 2, NULL, err);
  frond__db_result_free(&r);
  /* An UPDATE that set the same value may count no change (MySQL): the
  ** INSERT then did nothing. Read back what is recorded. */
  if (rc == 0) {
    int64_t got = 0;
    if ((rc = sql_bound_get(st, tag, &got, err)) == 0 && got != max)
      rc = frond__fail(err, FROND_ESTORE,
                       "tag \"%s\": frond_tag_bound holds max %lld after "
                       "writing %lld",
                       tag, (long long)got, (long long)max);
  }
  return rc;
}

int frond__store_sql_bound(frond_store *st, int op, void *arg,
                           frond_error *err) {
  frond__store_bound_arg *b = arg;
  switch (op) {
  case FROND__STORE_BOUND_GET:
    return sql_bound_get(st, b->tag, &b->max, err);
  case FROND__STORE_BOUND_PUT:
    return frond__store_sql_bound_put(st, b->tag, b->max, err);
  default:
    return FROND_EINVAL;
  }
}

/* ---- the multi: store's part ---- */

/* Every member that answers holds the same bound (none counts as one).
** A member that does not answer is skipped for a read (the others vouch:
** a write needs every member, so a bound is on all of them or refused
** at one that answers); none answering is STORE. */
static int multi_bound_get(frond__multi *ms, const char *tag, int64_t *max,
                           frond_error *err) {
  frond_error e;
  int64_t v;
  int i, first = -1;
  char why[FROND__MULTI_WHY_MAX] = "no member";
  *max = 0;
  for (i = 0; i < ms->n; i++) {
    e.code = 0;
    e.message[0] = '\0';
    if (!frond__multi_member_due(&ms->m[i]) ||
        frond__multi_member_open(ms, i, &e) != 0 ||
        sql_bound_get(ms->m[i].st, tag, &v, &e) != 0) {
      snprintf(why, sizeof(why), "member %d: %.400s", i,
               e.message[0] ? e.message : ms->m[i].why);
      continue;
    }
    if (first < 0) {
      first = i;
      *max = v;
    } else if (v != *max) {
      return frond__fail(err, FROND_ESTORE_MEMBER,
                         "tag \"%s\": member %d (%s) records max %lld and "
                         "member %d (%s) max %lld (0: none); set it again "
                         "with every member up (frond tag set-max)",
                         tag, first, ms->m[first].engine, (long long)*max, i,
                         ms->m[i].engine, (long long)v);
    }
  }
  if (first < 0)
    return frond__fail(err, FROND_ESTORE, "multi: no member answers (%s)", why);
  return 0;
}

static int multi_bound_put(frond__multi *ms, const char *tag, int64_t max,
                           frond_error *err) {
  int i, rc;
  for (i = 0; i < ms->n; i++)
    if ((rc = frond__multi_member_open(ms, i, err)) != 0 ||
        (rc = frond__store_sql_bound_put(ms->m[i].st, tag, max, err)) != 0)
      return rc;
  return 0;
}

int frond__store_multi_bound(frond__multi *ms, int op, void *arg,
                             frond_error *err) {
  frond__store_bound_arg *b = arg;
  switch (op) {
  case FROND__STORE_BOUND_GET:
    return multi_bound_get(ms, b->tag, &b->max, err);
  case FROND__STORE_BOUND_PUT:
    return multi_bound_put(ms, b->tag, b->max, err);
  case FROND__STORE_CREATE_MAX:
    ms->create_max = *(int64_t *)arg;
    return 0;
  default:
    return FROND_EINVAL;
  }
}

/* ---- the wrappers ---- */

int frond__store_bound(frond_store *st, const char *tag, int64_t *max,
                       frond_error *err) {
  frond__store_bound_arg b = {tag, 0};
  int rc;
  *max = 0;
  if (st->methods->iVersion < 4 || st->methods->xControl == NULL)
    return 0;
  rc = st->methods->xControl(st, FROND__STORE_BOUND_GET, &b, err);
  if (rc == FROND_EINVAL) /* keeps no bounds (frond://: its server cuts) */
    return 0;
  if (rc == 0)
    *max = b.max;
  return rc;
}

static int bound_put(frond_store *st, const char *tag, int64_t max,
                     frond_error *err) {
  frond__store_bound_arg b = {tag, max};
  int rc = st->methods->iVersion < 4 || st->methods->xControl == NULL
               ? FROND_EINVAL
               : st->methods->xControl(st, FROND__STORE_BOUND_PUT, &b, err);
  if (rc == FROND_EINVAL)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": the %s store keeps no bounds", tag,
                       st->methods->zName);
  return rc;
}

int frond__store_create_max(frond_store *st, int64_t max, frond_error *err) {
  int rc = st->methods->iVersion < 4 || st->methods->xControl == NULL
               ? FROND_EINVAL
               : st->methods->xControl(st, FROND__STORE_CREATE_MAX, &max, err);
  if (rc == FROND_EINVAL && max > 0)
    return frond__fail(err, FROND_EINVAL, "the %s store keeps no bounds",
                       st->methods->zName);
  return rc == FROND_EINVAL ? 0 : rc;
}

int frond_store_tag_max(frond_store *st, const char *tag, int64_t *max,
                        frond_error *err) {
  frond_tag_row row;
  int rc;
  if ((rc = frond_store_tag_get(st, tag, &row, err)) != 0)
    return rc;
  return frond__store_bound(st, tag, max, err);
}

int frond_store_tag_set_max(frond_store *st, const char *tag, int64_t max,
                            frond_error *err) {
  frond_tag_row row;
  frond_error e;
  int64_t old;
  int rc, lower;
  if (max < 0)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": max %lld is below 1 (0: no bound)", tag,
                       (long long)max);
  if ((rc = frond_store_tag_get(st, tag, &row, err)) != 0 ||
      (rc = frond__store_bound(st, tag, &old, err)) != 0)
    return rc;
  /* Lowering: from none to one, or to a smaller one. */
  lower = max > 0 && (old == 0 || max < old);
  if (lower && row.max_id - 1 > max)
    return frond__fail(err, FROND_ETAG_FLOOR,
                       "tag \"%s\": max %lld is below %lld, the highest ID "
                       "it may already have issued; a bound only rises "
                       "once IDs are out",
                       tag, (long long)max, (long long)(row.max_id - 1));
  if ((rc = bound_put(st, tag, max, err)) != 0 || !lower)
    return rc;
  /* An allocation that read the old bound committed before the write:
  ** its row shows now (see the head of this file). */
  if ((rc = frond_store_tag_get(st, tag, &row, err)) != 0 ||
      row.max_id - 1 <= max)
    return rc;
  if (bound_put(st, tag, old, &e) != 0)
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
