/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_sql.c -- the segment store over the SQL layer (db.h): Leaf's
** leaf_alloc table on any engine the layer speaks (SQLite, PostgreSQL,
** MySQL/MariaDB; on MySQL created by Leaf's own DDL when missing), and
** the facts Frond keeps beside it in tables of its own.
**
** An allocation is Leaf's transaction: UPDATE leaf_alloc SET max_id =
** max_id + step WHERE biz_tag = ?, then max_id and step read back in the
** same transaction. Where the engine has RETURNING that is one statement
** (its own transaction, one round trip); elsewhere the layer runs the
** UPDATE and the SELECT inside BEGIN ... COMMIT. The segment is
** [max_id - step, max_id). The UPDATE refuses to push max_id past the
** bigint range, so that no engine turns the sum into a float or an error
** of its own, and a row it skips is told apart from a missing one.
**
** Leaf's table stays exactly as Leaf defines it; what Frond must remember
** beyond it lives in its own tables of the same database, read by the
** same statements that use the rows, so that every process sharing the
** database sees it:
** - frond_tag_floor: per tag name, its floor, the first ID a tag of that
**   name may issue again once deleted. A delete writes it in the
**   delete's transaction (the row's max_id, read under the row's lock; a
**   member's, turned into a global ID), a create starts one Leaf step above it
**   (a Leaf node whose load raced the create reads the step below),
**   an advance never goes below it, and an allocation from a row below
**   it (a row loaded by hand) is refused with TAG_FLOOR. For a multi:
**   member it also keeps the block size the tag was created with.
** - frond_multi: the member's place in its multi: store (one row), or no
**   row in a plain store. A plain store refuses a database that has one,
**   at open and in every allocation, so a node left running on a database
**   that became a member stops at its next allocation.
** - frond_multi_mark (members): per member and tag, the global end of the
**   last block that member handed out, as the other members record it
**   (store_multi.c).
**
** The statements are written once; the layer renders them per dialect
** and keeps them prepared, and reconnects where it safely can.
*/
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sql_store {
  frond_store base;
  frond_db *db;
  int member, members;      /* of a multi: store; members 0: a plain store */
  int fresh;                /* a member whose database records no place yet */
  int64_t alloc_min;        /* a member's allocations start at or above it */
  int64_t alloc_block;      /* when its row's step is this block size */
  frond_tag_seq create_seq; /* what the next create records (store_sql_seq.c) */
  char spelt[FROND_TAG_MAX + 1]; /* the last allocation's row, as it spells
                                 ** its name ("" when unknown) */
} sql_store;

#define DB(st) (((sql_store *)(st))->db)
#define SQ(st) ((sql_store *)(st))

#define ALLOC_SET                                                              \
  "UPDATE leaf_alloc SET max_id = max_id + coalesce($2, step), "               \
  "update_time = CURRENT_TIMESTAMP WHERE biz_tag = $1 AND "                    \
  "max_id <= 9223372036854775807 - coalesce($2, step)"
#define FLOOR_OF(tag)                                                          \
  "coalesce((SELECT floor_id FROM frond_tag_floor WHERE biz_tag = " tag "), "  \
  "0)"
#define BLOCK_OF(tag)                                                          \
  "coalesce((SELECT block FROM frond_tag_floor WHERE biz_tag = " tag "), "     \
  "step)"
/* A plain store: never below the floor, never on a member. */
#define ALLOC_PLAIN                                                            \
  ALLOC_SET " AND max_id >= " FLOOR_OF("$1") " AND NOT EXISTS (SELECT 1 "      \
                                             "FROM frond_multi)"
/* A member: never below what the others record ($3, computed for the
** block size $4: a row of another step, a tag created again with it, is
** checked by the caller once it knows the block), never with another
** block than the store created the tag with. */
#define ALLOC_MEMBER                                                           \
  ALLOC_SET " AND (step <> $4 OR max_id >= $3) AND step = " BLOCK_OF("$1")
#define ALLOC_BACK                                                             \
  "SELECT max_id, step, biz_tag FROM leaf_alloc WHERE biz_tag = $1"
/* Why an allocation or an advance moved no row. */
#define ROW_WHY                                                                \
  "SELECT max_id, step, " FLOOR_OF(                                            \
      "$1") ", (SELECT count(*) FROM "                                         \
            "frond_multi), " BLOCK_OF(                                         \
                "$1") " FROM leaf_alloc WHERE biz_tag = $1"

#define ROW_SELECT                                                             \
  "SELECT biz_tag, max_id, step, coalesce(description, ''), "                  \
  "{ts_text:update_time} FROM leaf_alloc "

static int not_found(const char *tag, frond_error *err) {
  return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
}

static int sql_open(const char *uri, frond_store **out, frond_error *err) {
  sql_store *s = calloc(1, sizeof(*s));
  int rc;
  if (s == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  /* The layer's defaults; an in-memory database is refused, it would hand
  ** out the same ranges again after a restart. */
  if ((rc = frond__db_open(uri, NULL, &s->db, err)) != 0) {
    free(s);
    return rc;
  }
  s->base.methods = &frond__store_sql;
  *out = &s->base;
  return 0;
}

static void sql_close(frond_store *st) {
  frond__db_close(DB(st));
  free(st);
}

int frond__store_multi_nocheck;

/* Frond's tables beside leaf_alloc (see the head of this file). A multi:
** store's member records which member it is, once: the first node that
** finds it joinable writes (i, n), every later open compares. */
#define TABLE(name, cols) "CREATE TABLE IF NOT EXISTS " name " (" cols ")"
#define FLOOR_COLS                                                             \
  "biz_tag varchar(128) NOT NULL PRIMARY KEY, floor_id bigint NOT NULL, "      \
  "block int, update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP"
#define MULTI_COLS                                                             \
  "id int NOT NULL PRIMARY KEY, member int NOT NULL, "                         \
  "members int NOT NULL"
#define MARK_COLS                                                              \
  "member int NOT NULL, biz_tag varchar(128) NOT NULL, max_id bigint NOT "     \
  "NULL, PRIMARY KEY (member, biz_tag)"
#define INNODB " ENGINE=InnoDB"

void frond__store_sql_deadline(frond_store *st, int64_t mono_ns) {
  frond__db_set_deadline(DB(st), mono_ns);
}

void frond__store_sql_member(frond_store *st, int i, int n) {
  SQ(st)->member = i;
  SQ(st)->members = n;
}

int frond__store_sql_fresh(const frond_store *st) {
  return ((const sql_store *)st)->fresh;
}

void frond__store_sql_alloc_min(frond_store *st, int64_t min, int64_t block) {
  SQ(st)->alloc_min = min;
  SQ(st)->alloc_block = block;
}

const char *frond__store_sql_spelling(const frond_store *st) {
  return ((const sql_store *)st)->spelt;
}

frond_db *frond__store_sql_db(frond_store *st) {
  return DB(st);
}

/* The place the database records: 0 with *i, *n (-1 when none). */
static int place_read(sql_store *s, int64_t *i, int64_t *n, frond_error *err) {
  frond_db_result r = {0};
  int rc = frond__db_exec(s->db,
                          "SELECT member, members FROM frond_multi "
                          "WHERE id = 1",
                          NULL, 0, &r, err);
  *i = *n = -1;
  if (rc == 0 && r.nrows == 1 &&
      (rc = frond__db_get_int(&r, 0, 0, i, err)) == 0)
    rc = frond__db_get_int(&r, 0, 1, n, err);
  frond__db_result_free(&r);
  return rc;
}

static int place_check(sql_store *s, frond_error *err) {
  int64_t i, n;
  int rc = place_read(s, &i, &n, err);
  s->fresh = 0;
  if (rc != 0)
    return rc;
  if (n < 0) {
    s->fresh = s->members > 0;
    return 0;
  }
  if (s->members == 0)
    return frond__fail(err, FROND_ESTORE_MEMBER,
                       "this database is member %lld of %lld of a multi: "
                       "store; open it only through that multi: URI",
                       (long long)i, (long long)n);
  if (i != s->member || n != s->members)
    return frond__fail(err, FROND_ESTORE_MEMBER,
                       "the database listed as member %d of %d is member "
                       "%lld of %lld: every node must list the same databases "
                       "in the same order",
                       s->member, s->members, (long long)i, (long long)n);
  return 0;
}

int frond__store_sql_join(frond_store *st, frond_error *err) {
  sql_store *s = SQ(st);
  frond_db_arg a[2];
  int rc;
  a[0] = frond__db_int(s->member);
  a[1] = frond__db_int(s->members);
  rc = frond__db_exec(s->db,
                      "INSERT INTO frond_multi (id, member, members) "
                      "VALUES (1, $1, $2)",
                      a, 2, NULL, err);
  if (rc != 0 && frond__db_error_class(s->db) != FROND_DB_UNIQUE)
    return rc;
  /* Another node may have joined it meanwhile, maybe elsewhere. */
  return place_check(s, err);
}

static int sql_ensure_schema(frond_store *st, frond_error *err) {
  sql_store *s = SQ(st);
  int my = strcmp(frond__db_engine(s->db), "mysql") == 0, rc;
  if ((rc = frond__db_ensure_table(
           s->db, "leaf_alloc",
           my ? FROND__LEAF_ALLOC_DDL_MYSQL : FROND__LEAF_ALLOC_DDL, err)) ||
      (rc = frond__db_ensure_table(s->db, "frond_tag_floor",
                                   my ? TABLE("frond_tag_floor", FLOOR_COLS)
                                            INNODB
                                      : TABLE("frond_tag_floor", FLOOR_COLS),
                                   err)) ||
      (rc = frond__db_ensure_table(s->db, "frond_multi",
                                   my ? TABLE("frond_multi", MULTI_COLS) INNODB
                                      : TABLE("frond_multi", MULTI_COLS),
                                   err)) ||
      (rc = frond__seq_schema(s->db, err)))
    return rc;
  if (s->members > 0 && (rc = frond__db_ensure_table(
                             s->db, "frond_multi_mark",
                             my ? TABLE("frond_multi_mark", MARK_COLS) INNODB
                                : TABLE("frond_multi_mark", MARK_COLS),
                             err)) != 0)
    return rc;
  if (s->members > 0 && frond__store_multi_nocheck)
    return 0;
  return place_check(s, err);
}

/* ---- floors ---- */

static int floor_read(frond_store *st, const char *tag, int lock,
                      int64_t *floor, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int rc = frond__db_exec(DB(st),
                          lock ? "SELECT floor_id FROM frond_tag_floor WHERE "
                                 "biz_tag = $1 {for_update}"
                               : "SELECT floor_id FROM frond_tag_floor WHERE "
                                 "biz_tag = $1",
                          &a, 1, &r, err);
  *floor = 0;
  if (rc == 0 && r.nrows == 1)
    rc = frond__db_get_int(&r, 0, 0, floor, err);
  frond__db_result_free(&r);
  return rc;
}

/* Raise tag's floor to floor (never lower it); set its block to block
** (> 0), clear it (0) or keep it (-1). */
static int floor_put(frond_store *st, const char *tag, int64_t floor,
                     int64_t block, frond_error *err) {
  frond_db_arg a[2];
  int rc;
  a[0] = frond__db_text(tag);
  a[1] = frond__db_int(floor);
  if ((rc = frond__db_exec(DB(st),
                           "INSERT INTO frond_tag_floor (biz_tag, floor_id, "
                           "update_time) VALUES ($1, $2, CURRENT_TIMESTAMP) "
                           "{if_absent:biz_tag}",
                           a, 2, NULL, err)) != 0 ||
      (rc = frond__db_exec(DB(st),
                           "UPDATE frond_tag_floor SET floor_id = $2, "
                           "update_time = CURRENT_TIMESTAMP WHERE biz_tag = $1 "
                           "AND floor_id < $2",
                           a, 2, NULL, err)) != 0 ||
      block < 0)
    return rc;
  a[1] = frond__db_int(block);
  return frond__db_exec(DB(st),
                        block > 0 ? "UPDATE frond_tag_floor SET block = $2 "
                                    "WHERE biz_tag = $1"
                                  : "UPDATE frond_tag_floor SET block = NULL "
                                    "WHERE biz_tag = $1",
                        a, block > 0 ? 2 : 1, NULL, err);
}

static int below_floor(const char *tag, int64_t start, int64_t floor,
                       int64_t step, frond_error *err) {
  return frond__fail(
      err, FROND_ETAG_FLOOR,
      "tag \"%s\": start %lld is below %lld, one Leaf step above "
      "the tag's floor %lld: a tag of this name was deleted "
      "after it could issue IDs up to %lld, and a Leaf node "
      "reading the new row's last step without allocating it "
      "must find none of them; a new one starts at %lld or "
      "above (leave out the start to begin there)",
      tag, (long long)start, (long long)frond__tag_lowest_start(floor, step),
      (long long)floor, (long long)floor - 1,
      (long long)frond__tag_lowest_start(floor, step));
}

/* ---- allocation ---- */

/* An allocation or an advance of tag that moved no row: why, from the
** row and the facts beside it. to: the advance's target, 0 for an
** allocation (step then the step asked for, 0 for the row's). */
static int row_why(frond_store *st, const char *tag, int64_t to, int64_t step,
                   frond_error *err) {
  sql_store *s = SQ(st);
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int64_t max_id = 0, rstep = 0, floor = 0, places = 0, block = 0, pi, pn;
  int rc = frond__db_exec(s->db, ROW_WHY, &a, 1, &r, err);
  if (rc == 0 && r.nrows == 0)
    rc = not_found(tag, err);
  else if (rc == 0 && (rc = frond__db_get_int(&r, 0, 0, &max_id, err)) == 0 &&
           (rc = frond__db_get_int(&r, 0, 1, &rstep, err)) == 0 &&
           (rc = frond__db_get_int(&r, 0, 2, &floor, err)) == 0 &&
           (rc = frond__db_get_int(&r, 0, 3, &places, err)) == 0)
    rc = frond__db_get_int(&r, 0, 4, &block, err);
  frond__db_result_free(&r);
  if (rc != 0)
    return rc;
  if (s->members == 0 && places > 0) {
    if ((rc = place_read(s, &pi, &pn, err)) != 0)
      return rc;
    return frond__fail(err, FROND_ESTORE_MEMBER,
                       "tag \"%s\": this database became member %lld of %lld "
                       "of a multi: store while this process had it open as a "
                       "plain store; it allocates no more here: use the "
                       "multi: URI",
                       tag, (long long)pi, (long long)pn);
  }
  if (to > 0 && to < max_id)
    return frond__fail(err, FROND_ETAG_FLOOR,
                       "tag \"%s\" may already have issued IDs up to %lld (its "
                       "max_id is %lld): a tag only moves forward; give %lld "
                       "or more",
                       tag, (long long)max_id - 1, (long long)max_id,
                       (long long)max_id);
  if (s->members == 0 && (to > 0 ? to : max_id) < floor)
    return frond__fail(err, FROND_ETAG_FLOOR,
                       "tag \"%s\": %s %lld is below the tag's floor %lld (a "
                       "tag of this name, deleted, could issue IDs up to "
                       "%lld); move it with: frond tag advance %s --to %lld",
                       tag, to > 0 ? "advancing to" : "its row's max_id",
                       (long long)(to > 0 ? to : max_id), (long long)floor,
                       (long long)floor - 1, tag, (long long)floor);
  if (s->members > 0 && to == 0 && rstep != block)
    return frond__fail(err, FROND_ESTORE,
                       "multi: member %d: tag \"%s\" has step %lld where the "
                       "multi: store created it with block %lld: in a multi: "
                       "store the step is the block size and must never "
                       "change",
                       s->member, tag, (long long)rstep, (long long)block);
  if (s->members > 0 && to == 0 && max_id < s->alloc_min &&
      rstep == s->alloc_block)
    return frond__fail(err, FROND_ESTORE_MEMBER_STALE,
                       "multi: member %d: tag \"%s\": its row (max_id %lld) is "
                       "below what the other members record that member %d "
                       "handed out (up to its block at %lld): the database "
                       "lost allocations (an empty database in its place, a "
                       "restore from an older backup); repair it with: frond "
                       "tag repair-member %d",
                       s->member, tag, (long long)max_id, s->member,
                       (long long)s->alloc_min, s->member);
  if (to > 0)
    return frond__fail(err, FROND_ESTORE, "tag \"%s\": advancing moved no row",
                       tag);
  return frond__fail(err, FROND_ESTORE,
                     "tag \"%s\": max_id + step would overflow bigint "
                     "(max_id %lld, step %lld)",
                     tag, (long long)max_id,
                     (long long)(step > 0 ? step : rstep));
}

static int sql_alloc(frond_store *st, const char *tag, int64_t step,
                     int64_t *max_id, int64_t *row_step, frond_error *err) {
  sql_store *s = SQ(st);
  frond_db_result r = {0};
  frond_db_arg a[4];
  int rc;
  a[0] = frond__db_text(tag);
  a[1] = step > 0 ? frond__db_int(step) : frond__db_null();
  a[2] = frond__db_int(s->alloc_min);
  a[3] = frond__db_int(s->alloc_block);
  s->spelt[0] = '\0';
  rc = frond__db_write_returning(
      s->db, s->members > 0 ? ALLOC_MEMBER : ALLOC_PLAIN,
      "max_id, step, biz_tag", ALLOC_BACK, a, s->members > 0 ? 4 : 2, &r, err);
  if (rc == 0 && r.nrows == 1) {
    const char *t = frond__db_get_text(&r, 0, 2);
    if ((rc = frond__db_get_int(&r, 0, 0, max_id, err)) == 0)
      rc = frond__db_get_int(&r, 0, 1, row_step, err);
    snprintf(s->spelt, sizeof(s->spelt), "%s", t != NULL ? t : "");
  } else if (rc == 0) {
    rc = row_why(st, tag, 0, step, err);
  }
  frond__db_result_free(&r);
  return rc;
}

/* An ordered tag's allocation, inside its take's transaction. */
static int ordered_alloc(void *ctx, const char *tag, int64_t step,
                         int64_t *max_id, int64_t *row_step, frond_error *err) {
  return sql_alloc(ctx, tag, step, max_id, row_step, err);
}

/* ---- reading tags ---- */

static void read_row(const frond_db_result *r, int i, frond_tag_row *row) {
  const char *t;
  memset(row, 0, sizeof(*row));
  t = frond__db_get_text(r, i, 0);
  snprintf(row->tag, sizeof(row->tag), "%s", t ? t : "");
  frond__db_get_int(r, i, 1, &row->max_id, NULL);
  frond__db_get_int(r, i, 2, &row->step, NULL);
  t = frond__db_get_text(r, i, 3);
  snprintf(row->description, sizeof(row->description), "%s", t ? t : "");
  t = frond__db_get_text(r, i, 4);
  snprintf(row->update_time, sizeof(row->update_time), "%s", t ? t : "");
}

static int sql_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                        frond_error *err) {
  frond_db_result r = {0};
  int rc, i;
  *out = NULL;
  *n = 0;
  rc = frond__db_exec(DB(st), ROW_SELECT "ORDER BY {binary:biz_tag}", NULL, 0,
                      &r, err);
  if (rc == 0 && r.nrows > 0 &&
      (*out = calloc((size_t)r.nrows, sizeof(**out))) == NULL)
    rc = frond__fail(err, FROND_ENOMEM, NULL);
  for (i = 0; rc == 0 && i < r.nrows; i++)
    read_row(&r, i, &(*out)[i]);
  if (rc == 0)
    *n = (size_t)r.nrows;
  frond__db_result_free(&r);
  return rc;
}

/* In the table's key order (the primary key's index, whatever its
** collation), so that every page is an index range scan. */
static int sql_tag_page(frond_store *st, const char *after, int limit,
                        frond__tag_fn fn, void *ctx, int *n, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[2];
  int64_t step;
  int rc, i;
  a[0] = frond__db_int(limit);
  a[1] = frond__db_text(after);
  if (after == NULL)
    rc = frond__db_exec(DB(st),
                        "SELECT biz_tag, step FROM leaf_alloc ORDER BY biz_tag "
                        "LIMIT $1",
                        a, 1, &r, err);
  else
    rc = frond__db_exec(DB(st),
                        "SELECT biz_tag, step FROM leaf_alloc WHERE biz_tag > "
                        "$2 ORDER BY biz_tag LIMIT $1",
                        a, 2, &r, err);
  for (i = 0; rc == 0 && i < r.nrows; i++) {
    const char *t = frond__db_get_text(&r, i, 0);
    if (t == NULL || frond__db_get_int(&r, i, 1, &step, err) != 0)
      continue; /* not a row a caller could ask for */
    rc = fn(ctx, t, step);
  }
  *n = rc == 0 ? r.nrows : i;
  frond__db_result_free(&r);
  return rc;
}

static int sql_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                       frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int64_t floor = 0;
  int rc =
      frond__db_exec(DB(st), ROW_SELECT "WHERE biz_tag = $1", &a, 1, &r, err);
  int found = rc == 0 && r.nrows > 0;
  if (found)
    read_row(&r, 0, out);
  frond__db_result_free(&r);
  if (rc != 0 || found)
    return rc;
  /* Say where a deleted tag of this name would start again. */
  if (SQ(st)->members == 0 && floor_read(st, tag, 0, &floor, NULL) == 0 &&
      floor > 1)
    return frond__fail(err, FROND_ETAG_NOT_FOUND,
                       "tag \"%s\" not found (it was deleted; created again, "
                       "it starts one Leaf step above its floor %lld)",
                       tag, (long long)floor);
  return not_found(tag, err);
}

static int sql_tag_floor(frond_store *st, const char *tag, int64_t *first,
                         frond_error *err) {
  int rc = floor_read(st, tag, 0, first, err);
  if (rc == 0 && *first < 1)
    *first = 1;
  return rc;
}

/* ---- changing tags ---- */

/* One write of one tag's row; TAG_NOT_FOUND when it touched none. */
static int modify(frond_store *st, const char *sql, const frond_db_arg *a,
                  int n, const char *tag, frond_error *err) {
  frond_db_result r = {0};
  int rc = frond__db_exec(DB(st), sql, a, n, &r, err);
  if (rc != 0 && frond__db_error_class(DB(st)) == FROND_DB_UNIQUE)
    rc = frond__fail(err, FROND_ETAG_EXISTS, "tag \"%s\" already exists", tag);
  else if (rc == 0 && r.changes == 0)
    rc = not_found(tag, err);
  frond__db_result_free(&r);
  return rc;
}

/* Commit when rc is 0, else roll back; rc or the commit's failure. */
static int finish(frond_store *st, int rc, frond_error *err) {
  if (rc == 0)
    return frond__db_commit(DB(st), err);
  frond__db_rollback(DB(st));
  return rc;
}

#define INSERT_ROW                                                             \
  "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, "               \
  "update_time) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"

/*
** A plain store's create: in one transaction, one Leaf step above the floor
** when there is one (frond__tag_lowest_start: the skipped step is never
** issued, and is all a Leaf node that read the new row without
** allocating can take). A create racing a delete of the same name waits
** for the delete's row lock in its INSERT; the floor is read again after
** it, so a floor that delete wrote is seen. A member's create (its local
** start chosen by the multi: store, above every member's floor) records
** the tag's block beside it.
*/
static int sql_tag_create(frond_store *st, const char *tag, int64_t step,
                          int64_t start, const char *description,
                          frond_error *err) {
  frond_db_arg a[4];
  int64_t floor = 0, again = 0, first = start;
  frond_tag_seq q = SQ(st)->create_seq; /* recorded in the transaction */
  int rc, tries;
  memset(&SQ(st)->create_seq, 0, sizeof(q));
  if (q.ordered && SQ(st)->members > 0)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": an ordered tag needs one database, and "
                       "this one is a member of a multi: store",
                       tag);
  a[0] = frond__db_text(tag);
  a[2] = frond__db_int(step);
  a[3] = frond__db_text(description);
  for (tries = 0; tries < 3; tries++) {
    if ((rc = frond__db_begin(DB(st), err)) != 0)
      return rc;
    if (SQ(st)->members > 0) {
      a[1] = frond__db_int(start);
      if ((rc = modify(st, INSERT_ROW, a, 4, tag, err)) == 0 &&
          (rc = floor_put(st, tag, 0, step, err)) == 0)
        rc = frond__seq_create(DB(st), tag, &q, err);
      return finish(st, rc, err);
    }
    rc = floor_read(st, tag, 1, &floor, err);
    first = start > 0 ? start : frond__tag_lowest_start(floor, step);
    if (rc == 0 && first < frond__tag_lowest_start(floor, step))
      rc = below_floor(tag, first, floor, step, err);
    a[1] = frond__db_int(first);
    if (rc == 0 && (rc = modify(st, INSERT_ROW, a, 4, tag, err)) == 0 &&
        (rc = floor_read(st, tag, 0, &again, err)) == 0 &&
        first < frond__tag_lowest_start(again, step)) {
      if (start == 0) { /* a delete raised it meanwhile: from there */
        frond__db_rollback(DB(st));
        continue;
      }
      rc = below_floor(tag, first, again, step, err);
    }
    if (rc == 0)
      rc = frond__seq_create(DB(st), tag, &q, err);
    return finish(st, rc, err);
  }
  return frond__fail(err, FROND_ESTORE,
                     "tag \"%s\": its floor kept rising while it was created "
                     "(deleted again and again elsewhere); try again",
                     tag);
}

static int sql_tag_set_step(frond_store *st, const char *tag, int64_t step,
                            frond_error *err) {
  frond_db_arg a[2];
  a[0] = frond__db_text(tag);
  a[1] = frond__db_int(step);
  return modify(st,
                "UPDATE leaf_alloc SET step = $2, update_time = "
                "CURRENT_TIMESTAMP WHERE biz_tag = $1",
                a, 2, tag, err);
}

/* The delete and the floor in one transaction: the row is read under its
** lock, so an allocation committed by any node (Leaf's too) before the
** delete is below the floor, and one after it finds no row. */
static int sql_tag_delete(frond_store *st, const char *tag, frond_error *err) {
  sql_store *s = SQ(st);
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  char spelt[FROND_TAG_MAX + 1];
  int64_t max_id = 0, step = 0, floor;
  int rc;
  if ((rc = frond__db_begin(s->db, err)) != 0)
    return rc;
  rc = frond__db_exec(s->db,
                      "SELECT max_id, step, biz_tag FROM leaf_alloc WHERE "
                      "biz_tag = $1 {for_update}",
                      &a, 1, &r, err);
  if (rc == 0 && r.nrows == 0)
    rc = not_found(tag, err);
  else if (rc == 0 && (rc = frond__db_get_int(&r, 0, 0, &max_id, err)) == 0)
    rc = frond__db_get_int(&r, 0, 1, &step, err);
  /* The floor under the name as the row spells it: the one every spelling
  ** the database takes for the row meets. */
  snprintf(spelt, sizeof(spelt), "%s",
           rc == 0 && frond__db_get_text(&r, 0, 2) != NULL
               ? frond__db_get_text(&r, 0, 2)
               : tag);
  frond__db_result_free(&r);
  /* A member's floor is global: above every block it handed out. */
  floor = s->members > 0
              ? frond__multi_next(max_id, step, s->member, s->members)
              : max_id;
  if (rc == 0)
    rc = floor_put(st, spelt, floor, s->members > 0 ? 0 : -1, err);
  if (rc == 0)
    rc = modify(st, "DELETE FROM leaf_alloc WHERE biz_tag = $1", &a, 1, tag,
                err);
  if (rc == 0) /* its bound and stride go with it (store_sql_seq.c) */
    rc = frond__seq_create(s->db, spelt, NULL, err);
  return finish(st, rc, err);
}

/* Move the row forward to `to` (a member's: local, chosen by the multi:
** store): never back, never below the floor. */
static int sql_tag_advance(frond_store *st, const char *tag, int64_t to,
                           frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[2];
  int rc;
  a[0] = frond__db_text(tag);
  a[1] = frond__db_int(to);
  rc = frond__db_exec(
      DB(st),
      SQ(st)->members > 0
          ? "UPDATE leaf_alloc SET max_id = $2, update_time = "
            "CURRENT_TIMESTAMP WHERE biz_tag = $1 AND max_id <= $2"
          : "UPDATE leaf_alloc SET max_id = $2, update_time = "
            "CURRENT_TIMESTAMP WHERE biz_tag = $1 AND max_id <= $2 AND "
            "$2 >= " FLOOR_OF("$1") " AND NOT EXISTS (SELECT 1 FROM "
                                    "frond_multi)",
      a, 2, &r, err);
  if (rc == 0 && r.changes == 0)
    rc = row_why(st, tag, to, 0, err);
  frond__db_result_free(&r);
  return rc;
}

/* ---- a member's facts (store_multi.c; its marks: store_sql_member.c) ---- */

int frond__store_sql_facts(frond_store *st, const char *tag, int64_t *floor,
                           int64_t *marks, int64_t *block, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  int rc = frond__db_exec(
      DB(st),
      "SELECT " FLOOR_OF("$1") ", coalesce((SELECT max(max_id) FROM "
                               "frond_multi_mark WHERE biz_tag = $1), 0), "
                               "coalesce((SELECT block FROM frond_tag_floor "
                               "WHERE biz_tag = $1), 0)",
      &a, 1, &r, err);
  *floor = *marks = *block = 0;
  if (rc == 0 && r.nrows == 1 &&
      ((rc = frond__db_get_int(&r, 0, 0, floor, err)) == 0 &&
       (rc = frond__db_get_int(&r, 0, 1, marks, err)) == 0))
    rc = frond__db_get_int(&r, 0, 2, block, err);
  frond__db_result_free(&r);
  return rc;
}

int frond__store_sql_block_put(frond_store *st, const char *tag, int64_t block,
                               frond_error *err) {
  return floor_put(st, tag, 0, block, err);
}

/* Record name = value unless a value is recorded, then read it back: an
** INSERT that does nothing when the row exists ({if_absent}), so that of
** two processes recording at once one wins and both read its value. */
static int sql_fact(frond_store *st, const char *name, const char *value,
                    char *recorded, size_t len, frond_error *err) {
  int mysql = strcmp(frond__db_engine(DB(st)), "mysql") == 0;
  frond_db_result r = {0};
  frond_db_arg a[2];
  const char *v;
  int rc;
  a[0] = frond__db_text(name);
  a[1] = frond__db_text(value);
  if ((rc = frond__db_ensure_table(
           DB(st), "frond_meta",
           mysql ? FROND__META_DDL " ENGINE=InnoDB" : FROND__META_DDL, err)) !=
          0 ||
      (rc = frond__db_exec(DB(st),
                           "INSERT INTO frond_meta (name, value) VALUES ($1, "
                           "$2) {if_absent:name}",
                           a, 2, NULL, err)) != 0 ||
      (rc = frond__db_exec(DB(st),
                           "SELECT value FROM frond_meta WHERE name = $1", a, 1,
                           &r, err)) != 0)
    goto done;
  if (r.nrows != 1 || (v = frond__db_get_text(&r, 0, 0)) == NULL)
    rc = frond__fail(err, FROND_ESTORE, "frond_meta: no value of %s", name);
  else
    snprintf(recorded, len, "%s", v);
done:
  frond__db_result_free(&r);
  return rc;
}

/* The engine and, for a member of a multi: store, its index: what the
** wrappers time its calls under; a tag's bound and stride
** (store_sql_seq.c). The rest is the defaults: tag order (the wrappers'
** guard holds it to that), the step asked for. */
static int sql_control(frond_store *st, int op, void *arg, frond_error *err) {
  frond__store_label *l = arg;
  frond__store_seq_arg *q = arg;
  switch (op) {
  case FROND__STORE_CREATE_SEQ:
    SQ(st)->create_seq = *(const frond_tag_seq *)arg;
    return 0;
  case FROND__STORE_SEQ_GET:
    return frond__seq_get(DB(st), q->tag, &q->seq, err);
  case FROND__STORE_MAX_PUT:
    return frond__seq_max_set(DB(st), q->tag, q->seq.max, SQ(st)->member,
                              SQ(st)->members, err);
  case FROND__STORE_SEQ_SET:
    return frond__seq_create(DB(st), q->tag, &q->seq, err);
  case FROND__STORE_ORDERED_TAKE:
  case FROND__STORE_ORDERED_RENEW:
  case FROND__STORE_ORDERED_RELEASE:
  case FROND__STORE_ORDERED_READ:
    if (SQ(st)->members > 0)
      return FROND_EINVAL; /* ordered needs one database */
    if (op == FROND__STORE_ORDERED_READ)
      return frond__ordered_read(DB(st), arg, err);
    return op == FROND__STORE_ORDERED_TAKE
               ? frond__ordered_take(DB(st), arg, ordered_alloc, st, err)
               : frond__ordered_renew(DB(st), arg,
                                      op == FROND__STORE_ORDERED_RELEASE, err);
  case FROND__STORE_GIVE_BACK:
    if (SQ(st)->members > 0)
      return frond__fail(err, FROND_EINVAL,
                         "a member of a multi: store gives nothing back");
    return frond__sql_give_back(DB(st), arg, err);
  default:
    break;
  }
  if (op != FROND__STORE_LABEL)
    return FROND_EINVAL;
  snprintf(l->engine, sizeof(l->engine), "%s", frond__db_engine(DB(st)));
  l->member = SQ(st)->members > 0 ? SQ(st)->member : -1;
  return 0;
}

const frond_store_methods frond__store_sql = {
    4,
    NULL, /* every URI the SQL layer accepts */
    "sql",
    sql_open,
    sql_close,
    sql_ensure_schema,
    sql_alloc,
    sql_tag_list,
    sql_tag_get,
    sql_tag_create,
    sql_tag_set_step,
    sql_tag_delete,
    sql_tag_page,
    sql_tag_advance,
    sql_tag_floor,
    sql_fact,
    sql_control,
};
