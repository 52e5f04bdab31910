/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_multi_tags.c -- the multi: store's backend: opening and closing
** it, and its tags: list, read, create, delete, advance, their floors,
** and the repair of a member that lost allocations. Over store_multi.c,
** which keeps the members and allocates (store_multi.h maps the files).
**
** Tags: creating one needs every member (a member down fails the create,
** after creating on the others; running it again completes it), and its
** rows start above every ID any member, and any database a member was
** before it joined, may have handed out: the members' rows, their floors
** (deleted tags) and their marks of each other. Deleting one needs every
** member reachable and leaves each member's floor; advancing one needs
** every member; list and get read whichever answer, and a listing in
** pages (the allocator's refresh) one member throughout.
*/
#include "store/store_multi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHY_MAX FROND__MULTI_WHY_MAX

typedef frond__multi multi_store;

#define MS(st) ((multi_store *)(st))

/* ---- the backend ---- */

static void multi_close(frond_store *st) {
  multi_store *ms = MS(st);
  int i;
  for (i = 0; i < ms->n; i++) {
    frond__store_close(ms->m[i].st);
    free(ms->m[i].uri);
    if (!ms->shared)
      frond__guard_free(ms->m[i].guard);
  }
  if (!ms->shared)
    frond__guard_free(ms->step);
  free(ms);
}

static int multi_open(const char *uri, frond_store **out, frond_error *err) {
  frond_multi_uri u;
  multi_store *ms;
  int rc, i;
  if ((rc = frond__store_multi_parse(uri, &u, err)) != 0)
    return rc;
  if ((ms = calloc(1, sizeof(*ms))) == NULL ||
      (ms->step = frond__guard_new()) == NULL) {
    free(ms);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  ms->base.methods = &frond__store_multi;
  ms->n = u.n;
  ms->scan = -1;
  for (i = 0; i < u.n; i++) {
    frond__multi_member *m = &ms->m[i];
    if ((m->uri = malloc(u.len[i] + 1)) == NULL) {
      multi_close(&ms->base);
      return frond__fail(err, FROND_ENOMEM, NULL);
    }
    m->h = &m->h_own;
    if ((m->guard = frond__guard_new()) == NULL) {
      multi_close(&ms->base);
      return frond__fail(err, FROND_ENOMEM, NULL);
    }
    memcpy(m->uri, uri + u.start[i], u.len[i]);
    m->uri[u.len[i]] = '\0';
    snprintf(m->engine, sizeof(m->engine), "%.*s", (int)strcspn(m->uri, ":"),
             m->uri);
  }
  *out = &ms->base;
  return 0;
}

/* Every member that answers; refused when one is refused (a wrong
** identity is a configuration to fix, never to serve around), or when
** none answers. */
static int multi_ensure_schema(frond_store *st, frond_error *err) {
  multi_store *ms = MS(st);
  frond_error e;
  int i, rc, ok = 0;
  char why[WHY_MAX] = "";
  for (i = 0; i < ms->n; i++) {
    e.code = 0;
    e.message[0] = '\0';
    rc = frond__multi_member_open(ms, i, &e);
    if (rc == FROND_ESTORE_MEMBER)
      return frond__fail(err, rc, "%s", e.message);
    if (rc == 0) {
      ok++;
    } else {
      snprintf(why, sizeof(why), "%s", e.message);
      if (rc != FROND_ESTORE_MEMBER_STALE) /* logged as a refusal */
        frond_log(FROND_LOG_WARN, "store: %s; the other members serve",
                  e.message);
    }
  }
  if (ok == 0)
    return frond__fail(err, FROND_ESTORE,
                       "multi: no member answers (the last: %s)", why);
  return 0;
}

static int row_cmp(const void *a, const void *b) {
  return strcmp(((const frond_tag_row *)a)->tag,
                ((const frond_tag_row *)b)->tag);
}

static int multi_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                          frond_error *err) {
  multi_store *ms = MS(st);
  frond_tag_row *all = NULL, *rows, *grown;
  size_t nall = 0, nrows, j, w;
  frond_error e;
  int i, ok = 0;
  char why[WHY_MAX] = "";
  *out = NULL;
  *n = 0;
  for (i = 0; i < ms->n; i++) {
    e.message[0] = '\0';
    if (!frond__multi_member_due(&ms->m[i]) ||
        frond__multi_member_open(ms, i, &e) != 0 ||
        frond__store_tag_list(ms->m[i].st, &rows, &nrows, &e) != 0) {
      if (ms->m[i].st != NULL && e.message[0] != '\0')
        frond__multi_member_down(ms, i, &e);
      snprintf(why, sizeof(why), "%s", e.message[0] ? e.message : ms->m[i].why);
      continue;
    }
    ok++;
    frond__multi_member_up(ms, i);
    for (j = 0; j < nrows; j++)
      rows[j].max_id = frond__multi_row_next(ms, i, &rows[j]);
    if (nrows > 0 &&
        (grown = realloc(all, (nall + nrows) * sizeof(*all))) == NULL) {
      free(rows);
      free(all);
      return frond__fail(err, FROND_ENOMEM, NULL);
    } else if (nrows > 0) {
      all = grown;
      memcpy(all + nall, rows, nrows * sizeof(*rows));
      nall += nrows;
    }
    free(rows);
  }
  if (ok == 0) {
    free(all);
    return frond__fail(err, FROND_ESTORE,
                       "multi: no member answers (the last: %s)", why);
  }
  if (nall > 0)
    qsort(all, nall, sizeof(*all), row_cmp);
  /* One row per tag: the highest next ID any member would give. */
  for (j = 0, w = 0; j < nall; j++) {
    if (w > 0 && strcmp(all[w - 1].tag, all[j].tag) == 0) {
      if (all[j].max_id > all[w - 1].max_id)
        all[w - 1].max_id = all[j].max_id;
      continue;
    }
    all[w++] = all[j];
  }
  *out = all;
  *n = w;
  return 0;
}

/* A page's rows go to the caller's fn through this, which tells its
** failures from the member's. */
typedef struct page_pass {
  frond__tag_fn fn;
  void *ctx;
  int rc; /* what fn returned, when not 0 */
} page_pass;

static int page_row(void *ctx, const char *tag, int64_t step) {
  page_pass *p = ctx;
  return p->rc = p->fn(p->ctx, tag, step);
}

/* A page of the tag list. A listing (the pages from after == NULL on)
** reads one member from its first page to its last: members may order
** tags differently (each by its own key and collation), and a keyset
** listing holds in one order only. It starts on the first member that
** answers; if that member fails before the listing ends, the page fails
** and the caller lists again later. Without this, every page read every
** member's whole list: a million tags cost hundreds of whole lists per
** listing. A tag that only some members hold (a create that did not
** complete) may be missing from a listing; it is found by name, which
** asks every member. */
static int multi_tag_page(frond_store *st, const char *after, int limit,
                          frond__tag_fn fn, void *ctx, int *n,
                          frond_error *err) {
  multi_store *ms = MS(st);
  page_pass pass = {fn, ctx, 0};
  frond_error e;
  char why[WHY_MAX + 64] = "no member may be tried now";
  int i, rc, first = after == NULL ? 0 : ms->scan;
  int last = after == NULL ? ms->n - 1 : ms->scan;
  *n = 0;
  if (first < 0)
    return frond__fail(err, FROND_ESTORE,
                       "multi: a page of the tag list after \"%s\" without "
                       "the listing's first page",
                       after);
  ms->scan = -1;
  for (i = first; i <= last; i++) {
    e.message[0] = '\0';
    if (after == NULL && !frond__multi_member_due(&ms->m[i]))
      continue;
    rc = frond__multi_member_open(ms, i, &e);
    if (rc == 0)
      rc = frond__store_tag_page(ms->m[i].st, after, limit, page_row, &pass, n,
                                 &e);
    if (rc == 0) {
      frond__multi_member_up(ms, i);
      ms->scan = i;
      return 0;
    }
    if (pass.rc != 0) /* the caller's own failure */
      return frond__fail(err, rc, "%s", e.message);
    if (ms->m[i].st != NULL)
      frond__multi_member_down(ms, i, &e);
    snprintf(why, sizeof(why), "member %d (%s): %s", i, ms->m[i].engine,
             e.message[0] ? e.message : ms->m[i].why);
    if (*n > 0 || after != NULL)
      break; /* rows of this member were passed: no other may go on */
  }
  return frond__fail(err, FROND_ESTORE, "multi: listing tags: %s", why);
}

/* Two members that spell one tag's rows differently: their databases
** compare names differently (collations), and what is one tag to one is
** two to the other. */
static int spelt_apart(multi_store *ms, const char *tag, int i, const char *a,
                       int j, const char *b, frond_error *err) {
  return frond__fail(err, FROND_ESTORE_MEMBER,
                     "tag \"%s\": member %d (%s) holds it as \"%s\" and "
                     "member %d (%s) as \"%s\": their databases compare tag "
                     "names differently, and one of them holds two tags "
                     "where the other holds one; delete one of the spellings",
                     tag, i, ms->m[i].engine, a, j, ms->m[j].engine, b);
}

static int multi_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                         frond_error *err) {
  multi_store *ms = MS(st);
  frond_tag_row r;
  frond_error e;
  int i, rc, found = 0, failed = 0, first = -1;
  char why[WHY_MAX] = "", spelt[FROND_TAG_MAX + 1] = "";
  for (i = 0; i < ms->n; i++) {
    e.message[0] = '\0';
    rc = frond__multi_member_due(&ms->m[i])
             ? frond__multi_member_open(ms, i, &e)
             : FROND_ESTORE;
    if (rc == 0)
      rc = frond__store_tag_get(ms->m[i].st, tag, &r, &e);
    if (rc == FROND_ETAG_NOT_FOUND)
      continue;
    if (rc != 0) {
      failed++;
      snprintf(why, sizeof(why), "%s", e.message[0] ? e.message : ms->m[i].why);
      continue;
    }
    if (first < 0) {
      first = i;
      snprintf(spelt, sizeof(spelt), "%s", r.tag);
    } else if (strcmp(spelt, r.tag) != 0) {
      return spelt_apart(ms, tag, first, spelt, i, r.tag, err);
    }
    r.max_id = frond__multi_row_next(ms, i, &r);
    if (!found++ || r.max_id > out->max_id)
      *out = r;
  }
  if (found)
    return 0;
  if (failed == ms->n)
    return frond__fail(err, FROND_ESTORE,
                       "multi: no member answers (the last: %s)", why);
  return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
}

/* Every member connected, or the first that is not, as the error. */
static int all_members(multi_store *ms, const char *what, frond_error *err) {
  frond_error e;
  int i;
  for (i = 0; i < ms->n; i++) {
    e.code = 0;
    e.message[0] = '\0';
    if (frond__multi_member_open(ms, i, &e) != 0)
      return frond__fail(err,
                         e.code == FROND_ESTORE_MEMBER ||
                                 e.code == FROND_ESTORE_MEMBER_STALE
                             ? e.code
                             : FROND_ESTORE,
                         "multi: %s needs every member: %s", what, e.message);
  }
  return 0;
}

/* What every member knows of tag: its row (have[i]), and the lowest ID a
** tag of that name may start at anywhere without meeting an ID any member
** may have handed out (*g): above every row's next block, every member's
** floor and every mark. Every member must answer. */
static int survey(multi_store *ms, const char *what, const char *tag,
                  frond_tag_row *rows, int *have, int64_t *g,
                  frond_error *err) {
  int64_t floor, marks, block, next;
  int i, rc, first = -1;
  *g = 1;
  if ((rc = all_members(ms, what, err)) != 0)
    return rc;
  for (i = 0; i < ms->n; i++) {
    rc = frond__store_tag_get(ms->m[i].st, tag, &rows[i], err);
    have[i] = rc == 0;
    if (rc != 0 && rc != FROND_ETAG_NOT_FOUND)
      return rc;
    if (have[i] && first >= 0 && strcmp(rows[first].tag, rows[i].tag) != 0)
      return spelt_apart(ms, tag, first, rows[first].tag, i, rows[i].tag, err);
    if (have[i] && first < 0)
      first = i;
    if ((rc = frond__store_sql_facts(ms->m[i].st, tag, &floor, &marks, &block,
                                     err)) != 0)
      return rc;
    next = have[i] ? frond__multi_row_next(ms, i, &rows[i]) : 0;
    if (floor > *g)
      *g = floor;
    if (marks > *g)
      *g = marks;
    if (next > *g)
      *g = next;
  }
  return 0;
}

static int multi_tag_floor(frond_store *st, const char *tag, int64_t *first,
                           frond_error *err) {
  frond_tag_row rows[FROND_STORE_MULTI_MAX];
  int have[FROND_STORE_MULTI_MAX];
  return survey(MS(st), "a floor", tag, rows, have, first, err);
}

/* A start (0: the lowest allowed) becomes the rows' local start, every
** member's first block at or above every ID any member may have issued.
** Members that have the tag already (a create that stopped halfway, or a
** single database converted into member 0) keep their rows, and record
** the block. */
/* Write a member's attributes of tag whole (store_sql_seq.c). */
static int seq_set(frond_store *m, const char *tag, const frond_tag_seq *q,
                   frond_error *err) {
  frond__store_seq_arg a;
  a.tag = tag;
  a.seq = *q;
  return m->methods->xControl(m, FROND__STORE_SEQ_SET, &a, err);
}

static int multi_tag_create(frond_store *st, const char *tag, int64_t step,
                            int64_t start, const char *description,
                            frond_error *err) {
  multi_store *ms = MS(st);
  frond_tag_row rows[FROND_STORE_MULTI_MAX];
  int have[FROND_STORE_MULTI_MAX];
  int64_t g, low, lstart;
  int i, rc, existed = 0;
  if ((rc = survey(ms, "creating a tag", tag, rows, have, &g, err)) != 0)
    return rc;
  for (i = 0; i < ms->n; i++)
    if (have[i] && strcmp(rows[i].tag, tag) != 0)
      return frond__fail(err, FROND_ETAG_EXISTS,
                         "tag \"%s\" already exists as \"%s\" on member %d "
                         "(%s), whose database takes the two names for one",
                         tag, rows[i].tag, i, ms->m[i].engine);
  for (i = 0; i < ms->n; i++)
    if (have[i] && rows[i].step != step)
      return frond__fail(err, FROND_ETAG_EXISTS,
                         "tag \"%s\" already exists (step %lld on member %d)",
                         tag, (long long)rows[i].step, i);
  low = frond__tag_lowest_start(g, step);
  if (start > 0 && start < low)
    return frond__fail(err, FROND_ETAG_FLOOR,
                       "tag \"%s\": start %lld is below %lld: the members' "
                       "rows, floors (deleted tags) and marks say IDs up to "
                       "%lld may have been handed out, and a tag starts one "
                       "step above that; leave out the start to begin there",
                       tag, (long long)start, (long long)low, (long long)g - 1);
  if ((lstart = frond__multi_local_start(start > low ? start : low, step,
                                         ms->n)) < 0)
    return frond__fail(err, FROND_EINVAL,
                       "multi: start %lld with step %lld is past the bigint "
                       "range",
                       (long long)(start > low ? start : low), (long long)step);
  for (i = 0; i < ms->n; i++) {
    if (have[i]) {
      if ((rc = frond__store_sql_block_put(ms->m[i].st, tag, step, err)) == 0)
        rc = seq_set(ms->m[i].st, tag, &ms->create_seq, err);
      existed++;
    } else if ((rc = frond__store_create_seq(ms->m[i].st, &ms->create_seq,
                                             err)) == 0) {
      rc = ms->m[i].st->methods->xTagCreate(ms->m[i].st, tag, step, lstart,
                                            description, err);
    }
    if (rc != 0) {
      char why[WHY_MAX];
      snprintf(why, sizeof(why), "%s", err ? err->message : "failed");
      return frond__fail(err, rc,
                         "multi: member %d: %s (the tag exists on members "
                         "before it: create it again to complete)",
                         i, why);
    }
  }
  if (existed == ms->n)
    return frond__fail(err, FROND_ETAG_EXISTS, "tag \"%s\" already exists",
                       tag);
  return 0;
}

static int multi_tag_set_step(frond_store *st, const char *tag, int64_t step,
                              frond_error *err) {
  (void)st;
  (void)step;
  return frond__fail(err, FROND_EINVAL,
                     "tag \"%s\": in a multi: store the step is the block "
                     "size of the interleave and cannot change; create a "
                     "new tag",
                     tag);
}

/* Each member leaves its floor (global) in the delete's transaction. */
static int multi_tag_delete(frond_store *st, const char *tag,
                            frond_error *err) {
  multi_store *ms = MS(st);
  frond_tag_row rows[FROND_STORE_MULTI_MAX];
  int have[FROND_STORE_MULTI_MAX];
  const char *spelt = tag;
  int64_t g;
  int i, rc, gone = 0;
  /* Every member's row of the tag, under the name as the members hold it
  ** (a spelling one member's database takes for it is the tag on all). */
  if ((rc = survey(ms, "deleting a tag", tag, rows, have, &g, err)) != 0)
    return rc;
  for (i = 0; i < ms->n; i++)
    if (have[i])
      spelt = rows[i].tag;
  for (i = 0; i < ms->n; i++) {
    rc = ms->m[i].st->methods->xTagDelete(ms->m[i].st, spelt, err);
    if (rc == 0)
      gone++;
    else if (rc != FROND_ETAG_NOT_FOUND)
      return rc;
  }
  return gone ? 0
              : frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found",
                            tag);
}

/* Every member's row to the first block boundary whose blocks are all at
** or above `to`; refused below anything a member may have handed out. */
static int multi_tag_advance(frond_store *st, const char *tag, int64_t to,
                             frond_error *err) {
  multi_store *ms = MS(st);
  frond_tag_row rows[FROND_STORE_MULTI_MAX];
  int have[FROND_STORE_MULTI_MAX];
  int64_t g, b = 0, l;
  int i, rc;
  if ((rc = survey(ms, "advancing a tag", tag, rows, have, &g, err)) != 0)
    return rc;
  for (i = 0; i < ms->n; i++)
    if (have[i])
      b = rows[i].step;
  if (b == 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  if (to < g)
    return frond__fail(err, FROND_ETAG_FLOOR,
                       "tag \"%s\" may already have issued IDs up to %lld "
                       "(the members' rows, floors and marks): a tag only "
                       "moves forward; give %lld or more",
                       tag, (long long)g - 1, (long long)g);
  if ((l = frond__multi_local_start(to, b, ms->n)) < 0)
    return frond__fail(err, FROND_EINVAL,
                       "multi: %lld with step %lld is past the bigint range",
                       (long long)to, (long long)b);
  for (i = 0; i < ms->n; i++)
    if (have[i] && rows[i].max_id < l &&
        (rc = ms->m[i].st->methods->xTagAdvance(ms->m[i].st, rows[i].tag, l,
                                                err)) != 0)
      return rc;
  return 0;
}

/* ---- repairing a member ---- */

/* The tags of every member, once each, sorted. */
static int all_tags(frond_store **m, int n, frond_tag_row **out, size_t *nout,
                    frond_error *err) {
  frond_tag_row *all = NULL, *rows, *grown;
  size_t nall = 0, nrows, j, w;
  int i, rc;
  for (i = 0; i < n; i++) {
    if ((rc = frond__store_tag_list(m[i], &rows, &nrows, err)) != 0) {
      free(all);
      return rc;
    }
    if (nrows > 0 &&
        (grown = realloc(all, (nall + nrows) * sizeof(*all))) == NULL) {
      free(rows);
      free(all);
      return frond__fail(err, FROND_ENOMEM, NULL);
    } else if (nrows > 0) {
      all = grown;
      memcpy(all + nall, rows, nrows * sizeof(*rows));
      nall += nrows;
    }
    free(rows);
  }
  if (nall > 0)
    qsort(all, nall, sizeof(*all), row_cmp);
  for (j = 0, w = 0; j < nall; j++)
    if (w == 0 || strcmp(all[w - 1].tag, all[j].tag) != 0)
      all[w++] = all[j];
  *out = all;
  *nout = w;
  return 0;
}

/* Member k's row of tag t moved (or created) above every ID any member
** may have handed out of it: every row's next block, every floor and
** every mark. */
static int repair_tag(frond_store **m, int n, int k, const frond_tag_row *t,
                      frond_repair_fn fn, void *ctx, frond_error *err) {
  frond_tag_row row;
  frond__store_seq_arg q = {t->tag, {0, 1, 0, 0}};
  int64_t g = 1, floor, marks, block, next, l, from = 0, b = t->step;
  int i, rc, own = 0, seq = 0;
  for (i = 0; i < n; i++) {
    rc = frond__store_tag_get(m[i], t->tag, &row, err);
    /* Its bound and stride as another member records them (store_sql_seq.c),
    ** for a row created again on k. */
    if (rc == 0 && i != k && !seq++ &&
        (rc = m[i]->methods->xControl(m[i], FROND__STORE_SEQ_GET, &q, err)) !=
            0)
      return rc;
    if (rc == 0) {
      next = frond__multi_next(row.max_id, row.step, i, n);
      g = next > g ? next : g;
      if (i == k) {
        own = 1;
        from = row.max_id;
        b = row.step;
      }
    } else if (rc != FROND_ETAG_NOT_FOUND) {
      return rc;
    }
    if ((rc = frond__store_sql_facts(m[i], t->tag, &floor, &marks, &block,
                                     err)) != 0)
      return rc;
    g = floor > g ? floor : g;
    g = marks > g ? marks : g;
  }
  if ((l = frond__multi_local_min(g, b, k, n)) < 0)
    return frond__fail(err, FROND_ESTORE,
                       "multi: member %d: tag \"%s\": no block above %lld in "
                       "the bigint range",
                       k, t->tag, (long long)g);
  if (own && from >= l)
    return 0;
  if (!own && (rc = frond__store_create_seq(m[k], &q.seq, err)) != 0)
    return rc;
  rc = own ? m[k]->methods->xTagAdvance(m[k], t->tag, l, err)
           : m[k]->methods->xTagCreate(m[k], t->tag, b, l, t->description, err);
  if (rc == 0)
    rc = frond__store_sql_block_put(m[k], t->tag, b, err);
  if (rc == 0 && fn != NULL)
    fn(ctx, t->tag, own ? frond__multi_next(from, b, k, n) : 0,
       frond__multi_next(l, b, k, n));
  return rc;
}

/*
** Member k lost allocations (an empty database in its place, a restore
** from an older backup). Every member is opened as it is (its place
** checked, not its marks: another member may need repairing too) and
** must answer; each tag any member has gets, on member k, a row above
** everything any member may have handed out of it; then k records its
** place, and the allocators' next attempt finds it usable.
*/
static int multi_repair(frond_store *st, int k, frond_repair_fn fn, void *ctx,
                        frond_error *err) {
  multi_store *ms = MS(st);
  frond_store *m[FROND_STORE_MULTI_MAX] = {0};
  frond_tag_row *tags = NULL;
  frond_error e = {0, ""};
  size_t t, n = 0;
  int i, rc = 0;
  if (k < 0 || k >= ms->n)
    return frond__fail(err, FROND_EINVAL,
                       "multi: member %d: the store has members 0 to %d", k,
                       ms->n - 1);
  for (i = 0; i < ms->n && rc == 0; i++) {
    if ((rc = frond__store_sql.xOpen(ms->m[i].uri, &m[i], &e)) == 0) {
      frond__store_sql_member(m[i], i, ms->n);
      rc = frond__store_ensure_schema(m[i], &e);
    }
    if (rc != 0)
      rc = frond__fail(err, rc,
                       "multi: repairing member %d needs every member: "
                       "member %d (%s): %s",
                       k, i, ms->m[i].engine, e.message);
  }
  if (rc == 0)
    rc = all_tags(m, ms->n, &tags, &n, err);
  for (t = 0; t < n && rc == 0; t++)
    rc = repair_tag(m, ms->n, k, &tags[t], fn, ctx, err);
  if (rc == 0 && frond__store_sql_fresh(m[k]))
    rc = frond__store_sql_join(m[k], err);
  free(tags);
  for (i = 0; i < ms->n; i++)
    frond__store_close(m[i]);
  return rc;
}

/* ---- the allocator's view ---- */

static uint64_t multi_rollbacks(const multi_store *ms) {
  uint64_t sum = 0;
  int i;
  for (i = 0; i < ms->n; i++)
    sum += frond__guard_rollbacks(ms->m[i].guard);
  return sum;
}

/* Make ms, opened for the same URI as b, use b's per-member rollback
** guards, step memory and health (b is closed last). */
static int multi_share(multi_store *ms, const frond_store *base) {
  const multi_store *b = (const multi_store *)base;
  int i;
  /* Only another connection of a multi: store of as many members (a
  ** wrapper that forwards xControl could pass its own): else this one
  ** keeps guards of its own, never another struct's as ours. */
  if (base == NULL || base->methods != &frond__store_multi || b->n != ms->n)
    return FROND_EINVAL;
  for (i = 0; i < ms->n; i++) {
    if (!ms->shared)
      frond__guard_free(ms->m[i].guard);
    ms->m[i].guard = b->m[i].guard;
    ms->m[i].h = b->m[i].h;
  }
  if (!ms->shared)
    frond__guard_free(ms->step);
  ms->step = b->step;
  ms->shared = 1;
  return 0;
}

/* What the core and the wrappers ask of a multi: store (store.h's
** FROND__STORE_*): its order (its members' blocks interleave, so a next
** block may lie below the current one, and it keeps its ranges apart
** itself: a guard per member and the marks), its fixed step (the block
** size), its members and their health, the guards it keeps, sharing them
** with another connection of the allocator, and repairing a member. */
static int multi_control(frond_store *st, int op, void *arg, frond_error *err) {
  multi_store *ms = MS(st);
  frond__store_members_arg *m;
  frond__store_repair_arg *r;
  int i;
  switch (op) {
  case FROND__STORE_ORDER:
    *(int *)arg = FROND_SEG_ORDER_SEGMENT;
    return 0;
  case FROND__STORE_FIXED_STEP:
    *(int *)arg = 1;
    return 0;
  case FROND__STORE_LABEL:
    snprintf(((frond__store_label *)arg)->engine,
             sizeof(((frond__store_label *)arg)->engine), "multi");
    return 0;
  case FROND__STORE_SHARE:
    return multi_share(ms, arg);
  case FROND__STORE_ROLLBACKS:
    *(uint64_t *)arg = multi_rollbacks(ms);
    return 0;
  case FROND__STORE_MEMBERS:
    m = arg;
    m->n = ms->n;
    m->up = 0;
    for (i = 0; i < ms->n; i++)
      if (atomic_load(&ms->m[i].h->up))
        m->up |= UINT64_C(1) << i;
    return 0;
  case FROND__STORE_REPAIR:
    r = arg;
    return multi_repair(st, r->member, r->fn, r->ctx, err);
  case FROND__STORE_SEQ_GET:
  case FROND__STORE_MAX_PUT:
  case FROND__STORE_CREATE_SEQ:
    return frond__store_multi_seq(ms, op, arg, err);
  default:
    return FROND_EINVAL;
  }
}

/* Every member records the fact, and all must hold the same value. Every
** member is read first: when one holds another value, that is the answer
** and nothing is written anywhere (a process whose value is refused must
** leave no trace of it, or the processes that hold the right one would be
** refused at the member it wrote to). Then the members that hold none
** record ours, in the members' order; the first that holds another by
** then (a process recording at the same moment) stops the round, and its
** value is the answer. Needs every member, as creating a tag does. */
static int multi_fact(frond_store *st, const char *name, const char *value,
                      char *recorded, size_t len, frond_error *err) {
  multi_store *ms = MS(st);
  int i, rc, ours = -1;
  if ((rc = all_members(ms,
                        "recording a shared fact (a format's key, the "
                        "store's identity)",
                        err)) != 0)
    return rc;
  for (i = 0; i < ms->n; i++) {
    if ((rc = frond__store_sql_fact_read(ms->m[i].st, name, recorded, len,
                                         err)) != 0)
      return rc;
    if (recorded[0] != '\0' && strcmp(recorded, value) != 0) {
      if (ours >= 0)
        frond_log(FROND_LOG_WARN,
                  "store: multi: member %d (%s) records %s = %s, and member "
                  "%d %s",
                  i, ms->m[i].engine, name, recorded, ours, value);
      return 0;
    }
    if (recorded[0] != '\0' && ours < 0)
      ours = i;
  }
  for (i = 0; i < ms->n; i++) {
    frond_store *m = ms->m[i].st;
    if ((rc = m->methods->xFact(m, name, value, recorded, len, err)) != 0)
      return rc;
    if (strcmp(recorded, value) != 0) {
      if (i > 0)
        frond_log(FROND_LOG_WARN,
                  "store: multi: member %d (%s) records %s = %s, and the "
                  "members before it %s",
                  i, ms->m[i].engine, name, recorded, value);
      return 0;
    }
  }
  return 0;
}

int frond__store_multi_fact_read(frond_store *st, const char *name,
                                 char *recorded, size_t len, frond_error *err) {
  multi_store *ms = MS(st);
  char v[257];
  int i, rc, from = -1;
  recorded[0] = '\0';
  if ((rc = all_members(ms, "reading a shared fact", err)) != 0)
    return rc;
  for (i = 0; i < ms->n; i++) {
    if ((rc = frond__store_sql_fact_read(ms->m[i].st, name, v, sizeof(v),
                                         err)) != 0)
      return rc;
    if (v[0] == '\0')
      continue;
    if (from >= 0 && strcmp(v, recorded) != 0)
      return frond__fail(err, FROND_ESTORE_MISMATCH,
                         "multi: member %d (%s) records %s = %s, member %d "
                         "(%s) %s",
                         from, ms->m[from].engine, name, recorded, i,
                         ms->m[i].engine, v);
    if (from < 0) {
      snprintf(recorded, len, "%s", v);
      from = i;
    }
  }
  return 0;
}

const frond_store_methods frond__store_multi = {
    4,
    "multi:",
    "multi",
    multi_open,
    multi_close,
    multi_ensure_schema,
    frond__multi_alloc,
    multi_tag_list,
    multi_tag_get,
    multi_tag_create,
    multi_tag_set_step,
    multi_tag_delete,
    multi_tag_page,
    multi_tag_advance,
    multi_tag_floor,
    multi_fact,
    multi_control,
};
