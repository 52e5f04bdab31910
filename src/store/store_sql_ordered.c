/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_sql_ordered.c -- who serves an ordered tag: one owner at a time,
** through a row of Frond's own table frond_tag_owner on a plain SQL store.
**
** The row. frond_tag_owner (biz_tag, ordered, owner, token, epoch, mark,
** lease_ms): ordered is the tag's attribute (1: one fleet-wide sequence),
** written with the tag's other attributes in its create's transaction
** (store_sql_seq.c) and cleared by its delete; the rest is the claim: the
** owner's address (where other nodes forward calls), the owning
** process's random token, the claim's epoch (one more at every claim,
** never reset, not even by a delete), its renewal mark (one more at every
** renewal; 0: released) and its lease.
**
** A take (FROND__STORE_ORDERED_TAKE) is one transaction holding the row:
**   - the claim is the caller's (its token) and not released: it is
**     renewed, and a segment is allocated;
**   - the claim was released (or never made), or is stale: the caller
**     claims it under epoch + 1, and a segment is allocated. The
**     allocation moves max_id, so the new owner's first segment lies above
**     every segment any earlier owner ever took: what they issued, and
**     what they may still hold in their buffers;
**   - anyone else's live claim: TAG_OWNER, naming the holder and its
**     state; nothing allocated.
** A renew moves the mark of a claim of the caller's token and epoch only;
** a release (a clean stop, after its give-back) sets it to 0 at once, so
** that a successor need not wait.
**
** Stale means: the caller has seen this claim, at this epoch and mark,
** for at least its lease by the caller's own monotonic clock, counted
** from after the read that first showed it. No wall clock, the
** database's included, takes part: the owner stops issuing
** (seg_ordered.c) a tenth of the lease after the moment before it sent
** the renewal that wrote that mark, which came before the read, so it
** has stopped by then as long as the two clocks' rates differ by less
** than a tenth. Timing decides only order, never uniqueness: every owner
** serves only segments that max_id handed out to it alone.
*/
#include "store/db.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

#define OWNER_COLS                                                             \
  "biz_tag varchar(128) NOT NULL PRIMARY KEY, ordered bigint NOT NULL "        \
  "DEFAULT 0, owner varchar(300) NOT NULL DEFAULT '', token bigint NOT NULL "  \
  "DEFAULT 0, epoch bigint NOT NULL DEFAULT 0, mark bigint NOT NULL DEFAULT "  \
  "0, lease_ms bigint NOT NULL DEFAULT 0, update_time timestamp NOT NULL "     \
  "DEFAULT CURRENT_TIMESTAMP"

int frond__ordered_schema(frond_db *db, frond_error *err) {
  int my = strcmp(frond__db_engine(db), "mysql") == 0;
  return frond__db_ensure_table(
      db, "frond_tag_owner",
      my ? "CREATE TABLE IF NOT EXISTS frond_tag_owner (" OWNER_COLS
           ") ENGINE=InnoDB"
         : "CREATE TABLE IF NOT EXISTS frond_tag_owner (" OWNER_COLS ")",
      err);
}

int frond__ordered_put(frond_db *db, const char *tag, int ordered,
                       frond_error *err) {
  frond_db_arg a[2];
  int rc;
  a[0] = frond__db_text(tag);
  a[1] = frond__db_int(ordered ? 1 : 0);
  if ((rc = frond__db_exec(db,
                           "UPDATE frond_tag_owner SET ordered = $2, "
                           "update_time = CURRENT_TIMESTAMP WHERE biz_tag = $1",
                           a, 2, NULL, err)) != 0 ||
      !ordered)
    return rc;
  return frond__db_exec(db,
                        "INSERT INTO frond_tag_owner (biz_tag, ordered, owner, "
                        "token, epoch, mark, lease_ms, update_time) VALUES "
                        "($1, $2, '', 0, 0, 0, 0, CURRENT_TIMESTAMP) "
                        "{if_absent:biz_tag}",
                        a, 2, NULL, err);
}

static int not_ordered(const char *tag, frond_error *err) {
  return frond__fail(err, FROND_EINVAL,
                     "tag \"%s\" is not ordered (frond_tag_owner has no "
                     "row saying so)",
                     tag);
}

/* The claim as the row holds it, read under its lock. */
typedef struct claim {
  int64_t ordered, token, epoch, mark, lease_ms;
  char owner[FROND__OWNER_MAX];
  char spelt[FROND_TAG_MAX + 1]; /* biz_tag as stored */
} claim;

static int read_claim(frond_db *db, const char *tag, claim *c, int lock,
                      frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg a = frond__db_text(tag);
  const char *o;
  int rc = frond__db_exec(db,
                          lock ? "SELECT ordered, token, epoch, mark, "
                                 "lease_ms, owner, biz_tag FROM "
                                 "frond_tag_owner WHERE biz_tag = $1 "
                                 "{for_update}"
                               : "SELECT ordered, token, epoch, mark, "
                                 "lease_ms, owner, biz_tag FROM "
                                 "frond_tag_owner WHERE biz_tag = $1",
                          &a, 1, &r, err);
  int64_t *col[5] = {&c->ordered, &c->token, &c->epoch, &c->mark, &c->lease_ms};
  memset(c, 0, sizeof(*c));
  if (rc == 0 && r.nrows == 0)
    rc = not_ordered(tag, err);
  for (int i = 0; rc == 0 && r.nrows > 0 && i < 5; i++)
    rc = frond__db_get_int(&r, 0, i, col[i], err);
  if (rc == 0 && (o = frond__db_get_text(&r, 0, 5)) != NULL)
    snprintf(c->owner, sizeof(c->owner), "%s", o);
  if (rc == 0 && (o = frond__db_get_text(&r, 0, 6)) != NULL)
    snprintf(c->spelt, sizeof(c->spelt), "%s", o);
  frond__db_result_free(&r);
  if (rc == 0 && !c->ordered)
    rc = not_ordered(tag, err);
  return rc;
}

/* The claim c, as a refused take tells it. */
static void held_by(frond__store_ordered_arg *a, const claim *c) {
  snprintf(a->holder, sizeof(a->holder), "%s", c->mark != 0 ? c->owner : "");
  a->holder_epoch = c->epoch;
  a->holder_mark = c->mark;
  a->holder_lease_ms = c->lease_ms;
}

int frond__ordered_take(frond_db *db, frond__store_ordered_arg *a,
                        frond__ordered_alloc_fn alloc, void *ctx,
                        frond_error *err) {
  frond_db_arg v[5];
  claim c;
  int rc, mine, free_;
  a->holder[0] = '\0';
  if ((rc = frond__db_begin(db, err)) != 0)
    return rc;
  if ((rc = read_claim(db, a->tag, &c, 1, err)) != 0)
    goto done;
  /* A database whose collation ignores case or trailing spaces (MySQL's
  ** default) finds the row under other spellings too; an allocator keeps
  ** each spelling apart, so two of them in one process would be two
  ** sequences. Only the row's own spelling is served. */
  if (strcmp(c.spelt, a->tag) != 0) {
    rc = frond__fail(err, FROND_EINVAL,
                     "tag \"%s\" is the ordered tag \"%s\" spelt another "
                     "way: an ordered tag is served under its own spelling "
                     "only",
                     a->tag, c.spelt);
    goto done;
  }
  mine = c.token == a->token && c.mark != 0;
  free_ = c.mark == 0 || (a->seen_epoch == c.epoch && a->seen_mark == c.mark &&
                          a->seen_ms >= c.lease_ms);
  /* A process with no address never claims: nobody could forward to it
  ** (frond_seg_options.owner). */
  if (!mine && free_ && a->owner[0] == '\0') {
    held_by(a, &c);
    rc = frond__fail(err, FROND_ETAG_OWNER,
                     "tag \"%s\" is ordered, and only a process with an "
                     "address (a server, or frond_seg_options.owner) serves "
                     "it: ask a frond server",
                     a->tag);
    goto done;
  }
  if (!mine && !free_) { /* live: mark != 0 */
    held_by(a, &c);
    rc = frond__fail(err, FROND_ETAG_OWNER,
                     "tag \"%s\" is ordered and served by its owner %s "
                     "(claim %lld)",
                     a->tag,
                     c.owner[0] ? c.owner : "(a process with no address)",
                     (long long)c.epoch);
    goto done;
  }
  v[0] = frond__db_text(a->tag);
  v[1] = frond__db_text(a->owner);
  v[2] = frond__db_int(a->token);
  v[3] = frond__db_int(mine ? c.epoch : c.epoch + 1);
  v[4] = frond__db_int(a->lease_ms);
  if ((rc = frond__db_exec(db,
                           "UPDATE frond_tag_owner SET owner = $2, token = "
                           "$3, epoch = $4, mark = mark + 1, lease_ms = $5, "
                           "update_time = CURRENT_TIMESTAMP WHERE biz_tag = $1",
                           v, 5, NULL, err)) != 0 ||
      (rc = alloc(ctx, a->tag, a->step, &a->max_id, &a->row_step, err)) != 0)
    goto done;
  rc = frond__db_commit(db, err);
  if (rc == 0)
    a->epoch = mine ? c.epoch : c.epoch + 1;
  return rc;
done:
  frond__db_rollback(db);
  return rc;
}

int frond__ordered_renew(frond_db *db, frond__store_ordered_arg *a, int release,
                         frond_error *err) {
  frond_db_result r = {0};
  frond_db_arg v[4];
  int rc;
  v[0] = frond__db_text(a->tag);
  v[1] = frond__db_int(a->token);
  v[2] = frond__db_int(a->epoch);
  v[3] = frond__db_int(a->lease_ms);
  /* mark + 1 never comes back to 0 (a bigint renewed every millisecond
  ** for 290 million years). */
  rc = frond__db_exec(db,
                      release ? "UPDATE frond_tag_owner SET mark = 0, "
                                "update_time = CURRENT_TIMESTAMP WHERE "
                                "biz_tag = $1 AND token = $2 AND epoch = $3"
                              : "UPDATE frond_tag_owner SET mark = mark + 1, "
                                "lease_ms = $4, update_time = "
                                "CURRENT_TIMESTAMP WHERE biz_tag = $1 AND "
                                "token = $2 AND epoch = $3 AND mark <> 0",
                      v, release ? 3 : 4, &r, err);
  if (rc == 0 && r.changes != 1 && !release)
    rc = frond__fail(err, FROND_ETAG_OWNER,
                     "tag \"%s\": this node's claim %lld was released or "
                     "taken over",
                     a->tag, (long long)a->epoch);
  frond__db_result_free(&r);
  return rc;
}

int frond__ordered_read(frond_db *db, frond__store_ordered_arg *a,
                        frond_error *err) {
  claim c;
  int rc = read_claim(db, a->tag, &c, 0, err);
  if (rc == 0)
    held_by(a, &c);
  return rc;
}
