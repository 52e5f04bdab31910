/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_multi.c -- the multi: store: N independent databases, any mix of
** engines, each handing out only IDs that no other can, so that no single
** database is needed for a node to keep serving. This file holds its
** members (connecting, joining, health) and the allocation of a block;
** store_multi_tags.c the backend around them (store_multi.h maps them).
**
** The scheme is block interleaving (Flickr's ticket servers and tinyid's
** delta/remainder, in blocks). In a multi: store a tag's step B is fixed:
** it is the block size. Member i of N keeps its own leaf_alloc row, a
** Leaf row like any other, and allocates whole blocks of B in its own
** count: its local range [1 + q*B, 1 + (q+1)*B) is global block q*N + i,
** the IDs [1 + (q*N + i)*B, 1 + (q*N + i + 1)*B). Blocks of different
** members never meet, whatever their rows say; a range stays contiguous,
** so the double buffer serves it as any other. IDs increase per node
** within a range and trend upwards overall: a member whose row lags hands
** out blocks below the others' newest.
**
** What that rests on, and how each part is held rather than assumed:
** - Every node must give a database the same index i and the same N. Each
**   member records its own (i, N) in the frond_multi table, written once
**   (when it joins, below) and compared on every open; a mismatch
**   (another order, another N, one database listed twice) refuses the
**   member with STORE_MEMBER. A plain store URI on a member database is
**   refused too (store_sql.c), at open and at every allocation: its local
**   IDs are not global.
** - A member's row never goes back. Each member keeps, per other member
**   and tag, the global end of the last block that member handed out (its
**   marks, frond_multi_mark). Before a block is taken from member i, the
**   marks the other members keep of it are read; its row must be at or
**   above them (a restore from an older backup, a row lost: the row is
**   left alone and the member refused with STORE_MEMBER_STALE until
**   `frond tag repair-member`); after, the block's end is written to
**   them. Every mark was written after its block committed, so a row that
**   never went back is always at or above it, whatever other nodes do
**   meanwhile. The fence rule holds for marks: at least one other member
**   must answer the read, and record the block, before it is served
**   (member_alloc), so no block is ever out of sight of every mark. Marks
**   are kept under the tag as member i's row spells it. A database with
**   no place recorded (new, or emptied) joins only when every other
**   member answers and none has a mark of its place; its history as a
**   plain store becomes marks of member -1, and its rows are moved above
**   what the others may have handed out (join, settle). What no check
**   can see, with three members or more: a member restored while every
**   member holding its newest marks is down (docs/segment.md).
** - B must not change: set-step is refused, a member records the block
**   its tag was created with and refuses a row whose step differs (a step
**   changed by hand), and a member whose row gives another step than this
**   process saw before for the tag is refused unless the member records
**   that block (the tag was deleted and created again with it).
** - A local range must be block-aligned. The rows this store creates are;
**   a row moved by hand (or by a member's rollback guard) is realigned by
**   one allocation of 2B - 1, which always holds one whole aligned block.
** - The rollback guard runs per member, on the member's own row (ranges
**   of different members interleave, so one guard over all of them would
**   see every other member's block as a step back).
**
** Draws go round-robin over the members; a member that fails is skipped
** for a backoff (0.5 s doubling to 8 s) while the others serve (those
** that another member still answers for), and tried again after it. A member's allocation has 3 s for its answers (then
** the connection is given up: the allocation, if it took effect, is a
** gap), a connection its engine's connect timeout.
*/
#include "store/store_multi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 8000
#define WHY_MAX FROND__MULTI_WHY_MAX
/* A member's allocation (its statements' answers) gets this long before
** the next member is asked: a silent server costs one load this much. */
#define MEMBER_ANSWER_MS INT64_C(3000)

typedef frond__multi_member member;
typedef frond__multi multi_store;

#define MS(st) ((multi_store *)(st))

/* ---- members ---- */

void frond__multi_member_down(multi_store *ms, int i, const frond_error *e) {
  member *m = &ms->m[i];
  int was = atomic_exchange(&m->h->up, 0);
  int64_t backoff = atomic_load(&m->h->backoff_ms);
  /* A refusal is said once when it begins, up or not before. */
  if (backoff == 0 && e->code == FROND_ESTORE_MEMBER_STALE)
    was = 1;
  backoff = backoff == 0 ? BACKOFF_MIN_MS : backoff * 2;
  if (backoff > BACKOFF_MAX_MS)
    backoff = BACKOFF_MAX_MS;
  atomic_store(&m->h->backoff_ms, backoff);
  atomic_store(&m->h->retry_ns, frond__mono_ns() + backoff * 1000000);
  snprintf(m->why, sizeof(m->why), "%s", e->message);
  atomic_store(&m->h->stale,
               e->code == FROND_ESTORE_MEMBER_STALE && m->st != NULL);
  if (was && e->code == FROND_ESTORE_MEMBER_STALE)
    frond_log(FROND_LOG_ERROR,
              "store: multi: member %d (%s) refused, the others serve: "
              "STORE_MEMBER_STALE: %s",
              i, m->engine, e->message);
  else if (was)
    frond_log(FROND_LOG_WARN,
              "store: multi: member %d (%s) failed, the others serve; "
              "trying it again in %lld ms: %s",
              i, m->engine, (long long)backoff, e->message);
}

void frond__multi_member_up(multi_store *ms, int i) {
  member *m = &ms->m[i];
  if (!atomic_exchange(&m->h->up, 1) && atomic_load(&m->h->backoff_ms) != 0)
    frond_log(FROND_LOG_INFO, "store: multi: member %d (%s) works again", i,
              m->engine);
  atomic_store(&m->h->stale, 0);
  atomic_store(&m->h->backoff_ms, 0);
  atomic_store(&m->h->retry_ns, 0);
}

int frond__multi_member_due(const member *m) {
  int64_t at = atomic_load(&m->h->retry_ns);
  return !m->refused && (at == 0 || frond__mono_ns() >= at);
}

/* A member refused for its own allocations (its row is behind its marks)
** still keeps the others' marks: its database answers and records them
** durably, where every node reads them. One that is down, or that never
** joined (an empty database in its place: never stale), does not. */
int frond__multi_member_holds(const member *m) {
  return frond__multi_member_due(m) ||
         (!m->refused && atomic_load(&m->h->stale));
}

/* Member j's connection for reading its rows and facts: the member's, or
** while it joins, the one it joins through. */
static frond_store *conn_of(multi_store *ms, int j) {
  return ms->m[j].st != NULL ? ms->m[j].st : ms->m[j].joining_st;
}

/*
** The rows a joining database holds already (a single database converted
** into a member, a copy of one, a database that served as a plain store)
** hand out blocks of its place from where they stand. Each is moved, as a
** repair would, above everything any member may have handed out of its
** tag: every other member's next block, floor and marks (a database
** converted into a member keeps its history there as marks of member
** -1), so that neither its blocks nor the plain IDs it or another member
** issued before come again. Every other member has answered already.
*/
static int settle(multi_store *ms, int i, frond_store *st, frond_error *err) {
  frond_tag_row *rows = NULL, r;
  size_t n = 0, t;
  int64_t g, floor, marks, block, next, l;
  int j, rc;
  if ((rc = frond__store_tag_list(st, &rows, &n, err)) != 0)
    return rc;
  for (t = 0; t < n && rc == 0; t++) {
    frond_tag_row *own = &rows[t];
    g = 1;
    for (j = 0; j < ms->n && rc == 0; j++) {
      frond_store *o = j == i ? st : conn_of(ms, j);
      if (o == NULL) {
        rc = frond__fail(err, FROND_ESTORE,
                         "multi: member %d joins, and member %d is not "
                         "connected",
                         i, j);
        break;
      }
      if (j != i) {
        rc = frond__store_tag_get(o, own->tag, &r, err);
        if (rc == 0 &&
            (next = frond__multi_next(r.max_id, r.step, j, ms->n)) > g)
          g = next;
        if (rc == FROND_ETAG_NOT_FOUND)
          rc = 0;
      }
      if (rc == 0 && (rc = frond__store_sql_facts(o, own->tag, &floor, &marks,
                                                  &block, err)) == 0) {
        g = floor > g ? floor : g;
        g = marks > g ? marks : g;
      }
    }
    if (rc != 0)
      break;
    if ((l = frond__multi_local_min(g, own->step, i, ms->n)) < 0) {
      rc = frond__fail(err, FROND_ESTORE,
                       "multi: member %d: tag \"%s\": no block above %lld in "
                       "the bigint range",
                       i, own->tag, (long long)g);
      break;
    }
    if (own->max_id >= l)
      continue;
    if ((rc = st->methods->xTagAdvance(st, own->tag, l, err)) == 0)
      frond_log(FROND_LOG_WARN,
                "store: multi: member %d (%s) joins with tag \"%s\" at %lld: "
                "moved to %lld, above every ID the other members (or the "
                "database they were converted from) may have handed out",
                i, ms->m[i].engine, own->tag, (long long)own->max_id,
                (long long)l);
  }
  free(rows);
  return rc;
}

/*
** Member i's database records no place (st, connected, is not m->st yet):
** a new database, or one emptied, or restored from before it joined, or a
** database that served as a plain store. It may join only when no other
** member records a block of place i (then another database held the
** place, and its blocks would be handed out again), and every other
** member must answer to say so. A member that is itself joining holds no
** marks worth asking. Its history as a plain store is recorded first, as
** marks of member -1 that every member's allocations are checked against,
** then the rows it holds are settled above everything the others may have
** handed out (settle), then it records its place.
*/
static int join(multi_store *ms, int i, frond_store *st, frond_error *err) {
  member *m = &ms->m[i];
  frond_error e;
  int j, any = 0, rc;
  m->joining = 1;
  m->joining_st = st;
  rc = frond__store_sql_history(st, err);
  for (j = 0; j < ms->n && rc == 0; j++) {
    if (j == i || ms->m[j].joining)
      continue;
    e.code = 0;
    e.message[0] = '\0';
    if (frond__multi_member_open(ms, j, &e) != 0 ||
        frond__store_sql_served(ms->m[j].st, i, &any, &e) != 0)
      rc = frond__fail(err, FROND_ESTORE,
                       "multi: member %d (%s) records no place in this "
                       "multi: store yet; it joins once every other member "
                       "answers, and member %d does not: %s",
                       i, m->engine, j, e.message);
    else if (any)
      rc = frond__fail(err, FROND_ESTORE_MEMBER_STALE,
                       "multi: member %d (%s) records no place in this "
                       "multi: store, yet member %d records blocks that "
                       "member %d handed out: a new or emptied database "
                       "stands in its place and would hand them out again; "
                       "repair it with: frond tag repair-member %d",
                       i, m->engine, j, i, i);
  }
  if (rc == 0)
    rc = settle(ms, i, st, err);
  m->joining = 0;
  m->joining_st = NULL;
  return rc != 0 ? rc : frond__store_sql_join(st, err);
}

int frond__multi_member_open(multi_store *ms, int i, frond_error *err) {
  member *m = &ms->m[i];
  frond_store *st;
  int rc;
  if (m->refused)
    return frond__fail(err, FROND_ESTORE_MEMBER, "multi: member %d (%s): %s", i,
                       m->engine, m->why);
  if (m->st != NULL)
    return 0;
  if (m->joining)
    return frond__fail(err, FROND_ESTORE, "multi: member %d is joining", i);
  /* As frond__store_open (store.c) opens a SQL store, with the member's
  ** guard: one per member, whichever connection of the allocator uses it. */
  if ((rc = frond__store_sql.xOpen(m->uri, &st, err)) != 0)
    goto fail;
  st->guard = m->guard;
  st->guard_shared = 1;
  frond__store_sql_member(st, i, ms->n);
  if ((rc = frond__store_ensure_schema(st, err)) != 0 ||
      (frond__store_sql_fresh(st) && (rc = join(ms, i, st, err)) != 0)) {
    frond__store_close(st);
    goto fail;
  }
  m->st = st;
  frond__multi_member_up(ms, i);
  return 0;
fail:
  if (rc == FROND_ESTORE_MEMBER) {
    m->refused = 1;
    snprintf(m->why, sizeof(m->why), "%s", err ? err->message : "refused");
    frond_log(FROND_LOG_ERROR, "store: multi: member %d (%s) refused: %s", i,
              m->engine, m->why);
    return rc;
  }
  {
    frond_error e = {rc, ""};
    snprintf(e.message, sizeof(e.message), "%s",
             err ? err->message : "cannot connect");
    frond__multi_member_down(ms, i, &e);
  }
  if (rc == FROND_ESTORE_MEMBER_STALE)
    return frond__fail(err, rc, "%s", m->why);
  return frond__fail(err, rc, "multi: member %d (%s): %s", i, m->engine,
                     m->why);
}

int64_t frond__multi_row_next(const multi_store *ms, int i,
                              const frond_tag_row *r) {
  return frond__multi_next(r->max_id, r->step, i, ms->n);
}

/* ---- allocating ---- */

/* Note why member j could not vouch for another's blocks (for messages). */
static void why_not(multi_store *ms, int j, const char *what, char *why,
                    size_t len) {
  snprintf(why, len, "member %d (%s) %s", j, ms->m[j].engine, what);
}

/* A call on one other member, under the answer deadline: 0, or the
** failure that backs the member off. */
typedef int (*other_fn)(frond_store *o, void *ctx, frond_error *e);

/* The one loop over the members that vouch for member i: fn on every
** other member that holds marks now (connected, or refused as behind its
** own marks: its database answers), each under the answer deadline. A
** member that fails is backed off. How many answered; why tells of one
** that did not. */
static int each_other(multi_store *ms, int i, other_fn fn, void *ctx, char *why,
                      size_t len) {
  frond_error e;
  int j, answered = 0;
  for (j = 0; j < ms->n; j++) {
    if (j == i)
      continue;
    if (!frond__multi_member_holds(&ms->m[j])) {
      why_not(ms, j, ms->m[j].refused ? "is refused" : "is down", why, len);
      continue;
    }
    e.code = 0;
    e.message[0] = '\0';
    if (frond__multi_member_open(ms, j, &e) != 0) {
      why_not(ms, j, "does not answer", why, len);
      continue;
    }
    frond__store_sql_deadline(ms->m[j].st,
                              frond__mono_ns() + MEMBER_ANSWER_MS * 1000000);
    if (fn(ms->m[j].st, ctx, &e) != 0) {
      frond__multi_member_down(ms, j, &e);
      why_not(ms, j, "does not answer", why, len);
    } else {
      answered++;
    }
    frond__store_sql_deadline(ms->m[j].st, 0);
  }
  return answered;
}

typedef struct mark_arg {
  int i;           /* the member the marks are of */
  const char *tag; /* as member i's row spells it */
  int64_t end;     /* read: the highest so far; written: the block's end */
} mark_arg;

static int mark_read(frond_store *o, void *ctx, frond_error *e) {
  mark_arg *a = ctx;
  int64_t end;
  int rc = frond__store_sql_mark_get(o, a->i, a->tag, &end, e);
  if (rc == 0 && end > a->end)
    a->end = end;
  return rc;
}

static int mark_write(frond_store *o, void *ctx, frond_error *e) {
  mark_arg *a = ctx;
  return frond__store_sql_mark_put(o, a->i, a->tag, a->end, e);
}

/* The word of the other members on member i's blocks of tag: the highest
** mark they keep (0: none) into *top, from every other member that holds
** marks now. How many answered: 0 means nobody can say where member i
** stands, and why tells of one that did not. */
static int marks_of(multi_store *ms, int i, const char *tag, int64_t *top,
                    char *why, size_t len) {
  mark_arg a = {i, tag, 0};
  int answered = each_other(ms, i, mark_read, &a, why, len);
  *top = a.end;
  return answered;
}

/* Record on every other member that holds marks now that member i handed
** out tag's IDs up to gend; how many recorded it (durably: each write is
** a committed statement). */
static int mark(multi_store *ms, int i, const char *tag, int64_t gend,
                char *why, size_t len) {
  mark_arg a = {i, tag, gend};
  return each_other(ms, i, mark_write, &a, why, len);
}

/* The block size b member i's row gives for tag, against the one this
** process saw last: another one is accepted only when the member records
** it as the block the tag was created with (deleted, created again). */
static int block_check(multi_store *ms, int i, const char *tag, int64_t b,
                       frond_error *err) {
  int64_t seen = frond__guard_end(ms->step, tag), floor, marks, block = 0;
  if (seen == b)
    return 0;
  if (seen != 0 && (frond__store_sql_facts(ms->m[i].st, tag, &floor, &marks,
                                           &block, err) != 0 ||
                    block != b))
    return frond__fail(err, FROND_ESTORE,
                       "multi: member %d: tag \"%s\" has step %lld where "
                       "another member gave %lld: in a multi: store the step "
                       "is the block size and must never change",
                       i, tag, (long long)b, (long long)seen);
  frond__guard_forget(ms->step, tag);
  frond__guard_note(ms->step, tag, b);
  return 0;
}

/* Nobody vouches for member i now: no block of it is served. */
static int unheld(multi_store *ms, int i, const char *tag, const char *what,
                  const char *why, frond_error *err) {
  return frond__fail(err, FROND_ESTORE,
                     "multi: member %d (%s): tag \"%s\": %s: %s; a member's "
                     "block is served only once another member has recorded "
                     "it, so that a restore of the member is always seen (a "
                     "store of two members stops while one is down; three or "
                     "more keep serving)",
                     i, ms->m[i].engine, tag, what, why);
}

/*
** One whole aligned block of tag from member i: the global range. The
** fence rule, for marks: the block is handed out only once another member
** has recorded it, and only after another member has said how far member
** i went before (so that a member restored from an older backup is found
** behind, whatever else is down). *held is 0 when that failed for want of
** another member (member i itself is not at fault).
*/
static int member_alloc(multi_store *ms, int i, const char *tag, int64_t *gend,
                        int64_t *block, int *held, frond_error *err) {
  member *m = &ms->m[i];
  char why[WHY_MAX] = "no other member", spelt[FROND_TAG_MAX + 1];
  int64_t lmax, b, b2, lstart, gstart, top, also, seen, lmin = 0;
  int rc;
  *held = 1;
  /* What the others record of member i; with the block size known, the
  ** row is left alone when it is below (the database went back). */
  if (marks_of(ms, i, tag, &top, why, sizeof(why)) == 0) {
    *held = 0;
    return unheld(ms, i, tag, "no other member answers for its blocks", why,
                  err);
  }
  seen = frond__guard_end(ms->step, tag);
  if (top > 0 && seen > 0 &&
      (lmin = frond__multi_local_min(top, seen, i, ms->n)) < 0)
    lmin = INT64_MAX;
  frond__store_sql_alloc_min(m->st, lmin, seen);
  rc = frond__store_alloc(m->st, tag, 0, &lmax, &b, err);
  frond__store_sql_alloc_min(m->st, 0, 0);
  if (rc != 0)
    return rc;
  /* Marks are kept under the name as member i's row spells it: every
  ** spelling its database takes for the row (another case, trailing
  ** spaces, under its collation) meets the same marks, wherever they are
  ** kept. Asked under another spelling, the marks of the row's own are the
  ** ones that count. */
  snprintf(spelt, sizeof(spelt), "%s", frond__store_sql_spelling(m->st));
  if (spelt[0] == '\0')
    snprintf(spelt, sizeof(spelt), "%s", tag);
  if (strcmp(spelt, tag) != 0) {
    if (marks_of(ms, i, spelt, &also, why, sizeof(why)) == 0) {
      *held = 0;
      return unheld(ms, i, spelt, "no other member answers for its blocks", why,
                    err);
    }
    top = also > top ? also : top;
  }
  if (b < 1 || b > INT32_MAX || lmax - b < 1)
    return frond__fail(err, FROND_ESTORE,
                       "multi: member %d: tag \"%s\": invalid row (max_id "
                       "%lld, step %lld)",
                       i, tag, (long long)lmax, (long long)b);
  if ((rc = block_check(ms, i, tag, b, err)) != 0)
    return rc;
  lstart = lmax - b;
  if ((lstart - 1) % b != 0) {
    /* Not on a block boundary (a row moved by hand, or by the rollback
    ** guard): 2B - 1 IDs always hold one whole aligned block. */
    if ((rc = frond__store_alloc(m->st, tag, 2 * b - 1, &lmax, &b2, err)) != 0)
      return rc;
    lstart = lmax - (2 * b - 1);
    lstart += (b - (lstart - 1) % b) % b;
    frond_log(FROND_LOG_WARN,
              "store: multi: member %d: tag \"%s\": the row was not on a "
              "block boundary; skipped to %lld",
              i, tag, (long long)lstart);
  }
  if (frond__multi_map(lstart, b, i, ms->n, &gstart) != 0)
    return frond__fail(err, FROND_ESTORE,
                       "multi: member %d: tag \"%s\": the block at %lld is "
                       "past the bigint range",
                       i, tag, (long long)lstart);
  /* The exact check: a block below a mark was handed out before (the
  ** row was below it with a block size this process had not seen yet). */
  if (gstart < top)
    return frond__fail(err, FROND_ESTORE_MEMBER_STALE,
                       "multi: member %d: tag \"%s\": it handed out the block "
                       "at %lld where the other members record that it "
                       "handed out IDs up to %lld: the database lost "
                       "allocations (an empty database in its place, a "
                       "restore from an older backup); the block is skipped; "
                       "repair it with: frond tag repair-member %d",
                       i, tag, (long long)gstart, (long long)top - 1, i);
  if (mark(ms, i, spelt, gstart + b, why, sizeof(why)) == 0) {
    char what[96];
    *held = 0;
    snprintf(what, sizeof(what),
             "no other member recorded its block at %lld (skipped)",
             (long long)gstart);
    return unheld(ms, i, spelt, what, why, err);
  }
  *gend = gstart + b;
  *block = b;
  return 0;
}

int frond__multi_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err) {
  multi_store *ms = MS(st);
  frond_error e;
  int pass, k, rc, held, missing = 0, failed = 0, stale = 0;
  uint32_t tried = 0;
  char why[WHY_MAX] = "", alone[WHY_MAX] = "";
  if (step != 0)
    return frond__fail(err, FROND_EINVAL,
                       "multi: a tag's step is fixed (the block size); "
                       "asked for %lld",
                       (long long)step);
  /* First the members not backing off; when none of them serves, the
  ** others too (the caller has its own backoff). */
  for (pass = 0; pass < 2; pass++) {
    for (k = 0; k < ms->n; k++) {
      int i = (int)((ms->next + (unsigned)k) % (unsigned)ms->n);
      member *m = &ms->m[i];
      if (m->refused || frond__multi_member_due(m) != !pass || (tried >> i & 1))
        continue;
      tried |= UINT32_C(1) << i;
      e.code = 0;
      e.message[0] = '\0';
      held = 1;
      if ((rc = frond__multi_member_open(ms, i, &e)) == 0) {
        frond__store_sql_deadline(m->st, frond__mono_ns() +
                                             MEMBER_ANSWER_MS * 1000000);
        rc = member_alloc(ms, i, tag, max_id, row_step, &held, &e);
        frond__store_sql_deadline(m->st, 0);
      }
      if (rc == 0) {
        frond__multi_member_up(ms, i);
        ms->next = (unsigned)i + 1;
        return 0;
      }
      if (rc == FROND_ETAG_NOT_FOUND) {
        missing++;
        frond__multi_member_up(ms, i);
        continue;
      }
      failed++;
      stale += rc == FROND_ESTORE_MEMBER_STALE;
      if (!held) /* the others' fault, not its own */
        snprintf(alone, sizeof(alone), "%s", e.message);
      else if (m->st != NULL)
        frond__multi_member_down(ms, i, &e);
      snprintf(why, sizeof(why), "%s", e.message);
    }
  }
  if (failed == 0 && missing > 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  return frond__fail(
      err,
      failed > 0 && stale == failed ? FROND_ESTORE_MEMBER_STALE : FROND_ESTORE,
      "multi: no member could allocate for tag \"%s\" (%s: %s)", tag,
      alone[0] ? "why" : "the last", alone[0] ? alone : why);
}

/* ---- bounds and strides (store_sql_seq.c) ---- */

/* A member's attributes: its SQL store's xControl (op SEQ_GET, MAX_PUT or
** SEQ_SET) on tag, *q read or written. */
static int member_seq(frond_store *m, int op, const char *tag, frond_tag_seq *q,
                      frond_error *err) {
  frond__store_seq_arg a;
  int rc;
  a.tag = tag;
  a.seq = *q;
  rc = m->methods->xControl(m, op, &a, err);
  *q = a.seq;
  return rc;
}

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
        member_seq(ms->m[i].st, FROND__STORE_SEQ_GET, tag, &v, &e) != 0) {
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

/* A set-max writes every member, each checked in its own transaction
** (frond__seq_max_set), even when an earlier one failed or the members
** disagree (a set-max that reached some of them): that is what repairs
** them. Then the members are read back: any that failed or still
** disagrees is named, with the remedy. A member that refused leaves the
** others with the new max: reads refuse the disagreement (STORE_MEMBER)
** until a set-max reaches every member, so no node issues under either
** value meanwhile. */
static int multi_max_put(frond__multi *ms, const char *tag, int64_t max,
                         frond_error *err) {
  frond_tag_seq q;
  frond_error e;
  int i, rc, first = 0;
  for (i = 0; i < ms->n; i++) {
    q.max = max;
    q.increment = 1;
    q.offset = 0;
    e.code = 0;
    e.message[0] = '\0';
    if ((rc = frond__multi_member_open(ms, i, &e)) == 0)
      rc = member_seq(ms->m[i].st, FROND__STORE_MAX_PUT, tag, &q, &e);
    if (rc != 0 && first == 0) {
      first = rc;
      frond__fail(err, rc,
                  "multi: member %d (%s): %.600s; the members that took max "
                  "%lld keep it: run the set-max again with every member up",
                  i, ms->m[i].engine, e.message, (long long)max);
    }
  }
  if (first != 0)
    return first;
  return multi_seq_get(ms, tag, &q, err);
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
    if (((const frond_tag_seq *)arg)->ordered)
      return frond__fail(err, FROND_EINVAL,
                         "an ordered tag needs one database: a multi: "
                         "store's members interleave their blocks, and no "
                         "one sequence runs across them");
    ms->create_seq = *(const frond_tag_seq *)arg;
    return 0;
  default:
    return FROND_EINVAL;
  }
}
