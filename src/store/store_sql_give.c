/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_sql_give.c -- a clean stop's give-back on a plain SQL store: one
** compare-and-set on the tag's row (seg_give.c has the argument for why
** nothing returned was handed out, and nothing handed out is handed out
** again).
**
** The row goes from end (max_id as this process's last allocation left
** it) back to to (the first number it did not hand out) only when it is
** still at end, so an allocation by anyone since ours, a Frond node or a
** Leaf node beside it, wins and keeps what it took. Never below the tag's
** floor (frond_tag_floor: floors stay one-way; a give-back never writes
** one), never to 0 or below, never upward, and never on a database that
** is a member of a multi: store (there the row is checked against the
** marks the other members keep of it: lowering it would read as a lost
** write; the caller refuses those before it gets here).
*/
#include "store/db.h"
#include "store/store.h"

#define GIVE_BACK                                                              \
  "UPDATE leaf_alloc SET max_id = $3, update_time = CURRENT_TIMESTAMP "        \
  "WHERE biz_tag = $1 AND max_id = $2 AND max_id > $3 AND $3 >= "              \
  "coalesce((SELECT floor_id FROM frond_tag_floor WHERE biz_tag = $1), 0) "    \
  "AND NOT EXISTS (SELECT 1 FROM frond_multi)"

int frond__sql_give_back(frond_db *db, frond__store_give_back_arg *g,
                         frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a[3];
  int rc;
  g->handled = 1;
  g->moved = 0;
  if (g->to < 1 || g->to >= g->end)
    return frond__fail(err, FROND_EINVAL,
                       "tag \"%s\": a give-back from %lld to %lld goes "
                       "nowhere",
                       g->tag, (long long)g->end, (long long)g->to);
  a[0] = frond__db_text(g->tag);
  a[1] = frond__db_int(g->end);
  a[2] = frond__db_int(g->to);
  frond__db_set_deadline(db, g->deadline);
  rc = frond__db_exec(db, GIVE_BACK, a, 3, &r, err);
  frond__db_set_deadline(db, 0);
  /* Only a committed change of the one row counts: an error or a timeout
  ** leaves moved 0, and the caller counts the numbers skipped. */
  g->moved = rc == 0 && r.changes == 1;
  frond__db_result_free(&r);
  return rc;
}
