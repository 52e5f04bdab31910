/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_sql_member.c -- what a SQL store keeps as a member of a multi:
** store, beside its rows (store_multi.c's head explains the scheme): the
** marks of the other members' blocks (frond_multi_mark), the database's
** history as a plain store before it joined (marks of member -1), and a
** fact read without being recorded. Over store_sql.c, which owns the
** connection and the tables.
*/
#include "store/store.h"

#include <stdio.h>
#include <string.h>

#define DB(st) frond__store_sql_db(st)

int frond__store_sql_mark_get(frond_store *st, int member, const char *tag,
                              int64_t *end, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[2];
  int rc;
  a[0] = frond__db_int(member);
  a[1] = frond__db_text(tag);
  rc = frond__db_exec(DB(st),
                      "SELECT coalesce(max(max_id), 0) FROM frond_multi_mark "
                      "WHERE (member = $1 OR member = -1) AND biz_tag = $2",
                      a, 2, &r, err);
  *end = 0;
  if (rc == 0 && r.nrows == 1)
    rc = frond__db_get_int(&r, 0, 0, end, err);
  frond__db_result_free(&r);
  return rc;
}

int frond__store_sql_mark_put(frond_store *st, int member, const char *tag,
                              int64_t end, frond_error *err) {
  static const char raise[] = "UPDATE frond_multi_mark SET max_id = $3 WHERE "
                              "member = $1 AND biz_tag = $2 AND max_id < $3";
  frond_db_result r = {0};
  frond_db_arg a[3];
  int rc;
  a[0] = frond__db_int(member);
  a[1] = frond__db_text(tag);
  a[2] = frond__db_int(end);
  rc = frond__db_exec(DB(st), raise, a, 3, &r, err);
  if (rc == 0 && r.changes == 0) {
    rc =
        frond__db_exec(DB(st),
                       "INSERT INTO frond_multi_mark (member, biz_tag, max_id) "
                       "VALUES ($1, $2, $3)",
                       a, 3, NULL, err);
    /* Present already (higher, or another node's insert won): raise. */
    if (rc != 0 && frond__db_error_class(DB(st)) == FROND_DB_UNIQUE)
      rc = frond__db_exec(DB(st), raise, a, 3, NULL, err);
  }
  frond__db_result_free(&r);
  return rc;
}

/* The database's history as a plain store, as marks of member -1: every
** row's max_id, and the floor of every deleted tag (IDs below them may have
** been issued outside the interleave). Replaces what an earlier attempt to
** join recorded, in one transaction. */
int frond__store_sql_history(frond_store *st, frond_error *err) {
  int rc;
  if ((rc = frond__db_begin(DB(st), err)) != 0)
    return rc;
  if ((rc = frond__db_exec(DB(st),
                           "DELETE FROM frond_multi_mark WHERE member = -1",
                           NULL, 0, NULL, err)) == 0 &&
      (rc = frond__db_exec(DB(st),
                           "INSERT INTO frond_multi_mark (member, biz_tag, "
                           "max_id) SELECT -1, biz_tag, max_id FROM "
                           "leaf_alloc",
                           NULL, 0, NULL, err)) == 0)
    rc = frond__db_exec(DB(st),
                        "INSERT INTO frond_multi_mark (member, biz_tag, "
                        "max_id) SELECT -1, f.biz_tag, f.floor_id FROM "
                        "frond_tag_floor f WHERE NOT EXISTS (SELECT 1 FROM "
                        "leaf_alloc a WHERE a.biz_tag = f.biz_tag)",
                        NULL, 0, NULL, err);
  if (rc == 0)
    return frond__db_commit(DB(st), err);
  frond__db_rollback(DB(st));
  return rc;
}

int frond__store_sql_served(frond_store *st, int member, int *any,
                            frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_int(member);
  int rc = frond__db_exec(DB(st),
                          "SELECT biz_tag FROM frond_multi_mark WHERE member = "
                          "$1 LIMIT 1",
                          &a, 1, &r, err);
  *any = rc == 0 && r.nrows > 0;
  frond__db_result_free(&r);
  return rc;
}

int frond__store_sql_fact_read(frond_store *st, const char *name,
                               char *recorded, size_t len, frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(name);
  const char *v;
  int exists = 0, rc;
  recorded[0] = '\0';
  if ((rc = frond__db_table_exists(DB(st), "frond_meta", &exists, err)) != 0 ||
      !exists)
    return rc;
  rc = frond__db_exec(DB(st), "SELECT value FROM frond_meta WHERE name = $1",
                      &a, 1, &r, err);
  if (rc == 0 && r.nrows == 1 && (v = frond__db_get_text(&r, 0, 0)) != NULL)
    snprintf(recorded, len, "%s", v);
  frond__db_result_free(&r);
  return rc;
}
