/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_multi.c -- the multi: store: N independent databases, any mix of
** engines, each handing out only IDs that no other can, so that no single
** database is needed for a node to keep serving.
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
**   by the first node that opens it and compared on every open; a
**   mismatch (another order, another N, one database listed twice)
**   refuses the member with STORE_MEMBER. A plain store URI on a member
**   database is refused too (store_sql.c): its local IDs are not global.
** - B must not change: set-step is refused here, and a member whose row
**   gives another step than this process saw before for the tag is
**   refused for that allocation (a step changed by hand).
** - A local range must be block-aligned. The rows this store creates are;
**   a row moved by hand (or by a member's rollback guard) is realigned by
**   one allocation of 2B - 1, which always holds one whole aligned block.
** - The rollback guard runs per member, on the member's own row (ranges
**   of different members interleave, so one guard over all of them would
**   see every other member's block as a step back).
**
** Draws go round-robin over the members; a member that fails is skipped
** for a backoff (0.5 s doubling to 8 s) while the others serve, and tried
** again after it. A member's allocation has 3 s for its answers (then
** the connection is given up: the allocation, if it took effect, is a
** gap), a connection its engine's connect timeout.
** Tags: creating one needs every member (a member down fails the create,
** after creating on the others; running it again completes it); deleting
** one needs every member reachable; list and get read whichever answer,
** and a listing in pages (the allocator's refresh) one member throughout.
*/
#include "store/store.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 8000
#define WHY_MAX 512
/* A member's allocation (its statements' answers) gets this long before
** the next member is asked: a silent server costs one load this much. */
#define MEMBER_ANSWER_MS INT64_C(3000)

typedef struct member {
  char *uri;
  char engine[16]; /* the scheme, for messages (never the password) */
  frond_store *st; /* NULL until connected and its identity checked */
  int refused;     /* its identity does not match: never used */

  /* Shared by every connection of one allocator (frond__store_multi_share):
  ** the rollback guard of the member's ranges, and whether it serves. */
  frond_store_guard *guard;
  struct member_health {
    atomic_int up;
    _Atomic int64_t retry_ns; /* no attempt before (monotonic), 0: now */
    _Atomic int64_t backoff_ms;
  } * h, h_own;
  char why[WHY_MAX]; /* the last failure */
} member;

typedef struct multi_store {
  frond_store base;
  int n;
  unsigned next;           /* round-robin cursor */
  frond_store_guard *step; /* tag -> the block size seen first */
  int shared;              /* guards, step and up are another's */
  int scan;                /* the member a listing in pages reads, -1: none */
  member m[FROND_STORE_MULTI_MAX];
} multi_store;

#define MS(st) ((multi_store *)(st))

/* ---- the URI ---- */

int frond__store_multi_parse(const char *uri, frond_multi_uri *out,
                             frond_error *err) {
  const char *p;
  int n = 0;
  memset(out, 0, sizeof(*out));
  if (strncmp(uri, "multi:", 6) != 0)
    return frond__fail(err, FROND_ESTORE_URI, "multi URI: expected multi:");
  for (p = uri + 6;; n++) {
    size_t len = strcspn(p, "|");
    char buf[FROND_STORE_URI_MAX + 1];
    frond_db_uri u;
    frond_error e = {0, ""};
    if (n == FROND_STORE_MULTI_MAX)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: more than %d members",
                         FROND_STORE_MULTI_MAX);
    if (len == 0)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: member %d is empty (members are "
                         "separated by a single '|')",
                         n);
    if (len > FROND_STORE_URI_MAX)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: member %d is longer than %d bytes", n,
                         FROND_STORE_URI_MAX);
    memcpy(buf, p, len);
    buf[len] = '\0';
    if (strncmp(buf, "multi:", 6) == 0)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: member %d is a multi: URI", n);
    if (frond__db_uri_parse(buf, &u, &e) != 0)
      return frond__fail(err, FROND_ESTORE_URI, "multi URI: member %d: %s", n,
                         e.message);
    if (u.memory)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: member %d is in memory", n);
    out->start[n] = (size_t)(p - uri);
    out->len[n] = len;
    if (p[len] == '\0')
      break;
    p += len + 1;
  }
  out->n = n + 1;
  if (out->n < 2)
    return frond__fail(err, FROND_ESTORE_URI,
                       "multi URI: at least 2 members, separated by '|'");
  return 0;
}

void frond__store_uri_shown(const char *uri, char *out, size_t len) {
  size_t k = 0, n, from, to;
  const char *p = uri;
  int multi = strncmp(uri, "multi:", 6) == 0;
  if (len == 0)
    return;
  out[0] = '\0';
  if (multi) {
    k = (size_t)snprintf(out, len, "multi:");
    p += 6;
  }
  for (; k < len; p += n + 1) {
    n = multi ? strcspn(p, "|") : strlen(p);
    if (frond__db_uri_password(p, &from, &to) && to <= n)
      k += (size_t)snprintf(out + k, len - k, "%.*s***%.*s", (int)from, p,
                            (int)(n - to), p + to);
    else
      k += (size_t)snprintf(out + k, len - k, "%.*s", (int)n, p);
    if (p[n] == '\0' || k >= len)
      break;
    k += (size_t)snprintf(out + k, len - k, "|");
  }
}

/* ---- the mapping ---- */

int frond__multi_map(int64_t lstart, int64_t b, int i, int n, int64_t *gstart) {
  int64_t q;
  if (b < 1 || n < 1 || i < 0 || i >= n || lstart < 1 || (lstart - 1) % b != 0)
    return -1;
  q = (lstart - 1) / b;
  /* (q*n + i + 1) * b + 1 must fit. */
  if (q > (INT64_MAX / b - 1 - i) / n)
    return -1;
  *gstart = (q * n + i) * b + 1;
  return 0;
}

int64_t frond__multi_local_start(int64_t start, int64_t b, int n) {
  int64_t per, q0, g;
  if (b < 1 || n < 1 || start < 1 || b > INT64_MAX / n)
    return -1;
  per = b * n;
  q0 = (start - 1) / per + ((start - 1) % per != 0);
  if (q0 > (INT64_MAX - 1) / b - 1)
    return -1;
  /* Every member's block must have its global place. */
  if (frond__multi_map(1 + q0 * b, b, n - 1, n, &g) != 0)
    return -1;
  return 1 + q0 * b;
}

/* ---- members ---- */

static void member_down(member *m, int i, const frond_error *e) {
  int was = atomic_exchange(&m->h->up, 0);
  int64_t backoff = atomic_load(&m->h->backoff_ms);
  backoff = backoff == 0 ? BACKOFF_MIN_MS : backoff * 2;
  if (backoff > BACKOFF_MAX_MS)
    backoff = BACKOFF_MAX_MS;
  atomic_store(&m->h->backoff_ms, backoff);
  atomic_store(&m->h->retry_ns, frond__mono_ns() + backoff * 1000000);
  snprintf(m->why, sizeof(m->why), "%s", e->message);
  if (was)
    frond_log(FROND_LOG_WARN,
              "store: multi: member %d (%s) failed, the others serve; "
              "trying it again in %lld ms: %s",
              i, m->engine, (long long)backoff, e->message);
}

static void member_up(member *m, int i) {
  if (!atomic_exchange(&m->h->up, 1) && atomic_load(&m->h->backoff_ms) != 0)
    frond_log(FROND_LOG_INFO, "store: multi: member %d (%s) works again", i,
              m->engine);
  atomic_store(&m->h->backoff_ms, 0);
  atomic_store(&m->h->retry_ns, 0);
}

/* Connect member i and check its identity; 0 when it is usable. */
static int member_open(multi_store *ms, int i, frond_error *err) {
  member *m = &ms->m[i];
  frond_store *st;
  int rc;
  if (m->refused)
    return frond__fail(err, FROND_ESTORE_MEMBER, "multi: member %d (%s): %s", i,
                       m->engine, m->why);
  if (m->st != NULL)
    return 0;
  /* As frond__store_open (store.c) opens a SQL store, with the member's
  ** guard: one per member, whichever connection of the allocator uses it. */
  if ((rc = frond__store_sql.xOpen(m->uri, &st, err)) != 0)
    goto fail;
  st->guard = m->guard;
  st->guard_shared = 1;
  frond__store_sql_member(st, i, ms->n);
  if ((rc = frond__store_ensure_schema(st, err)) != 0) {
    frond__store_close(st);
    goto fail;
  }
  m->st = st;
  member_up(m, i);
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
    member_down(m, i, &e);
  }
  return frond__fail(err, rc, "multi: member %d (%s): %s", i, m->engine,
                     m->why);
}

/* Whether member i may be tried now (connected, or due for a retry). */
static int member_due(const member *m) {
  int64_t at = atomic_load(&m->h->retry_ns);
  return !m->refused && (at == 0 || frond__mono_ns() >= at);
}

/* One whole aligned block of tag from member i: the global range. */
static int member_alloc(multi_store *ms, int i, const char *tag, int64_t *gend,
                        int64_t *block, frond_error *err) {
  member *m = &ms->m[i];
  int64_t lmax, b, b2, seen, lstart, gstart;
  int rc;
  if ((rc = frond__store_alloc(m->st, tag, 0, &lmax, &b, err)) != 0)
    return rc;
  if (b < 1 || b > INT32_MAX || lmax - b < 1)
    return frond__fail(err, FROND_ESTORE,
                       "multi: member %d: tag \"%s\": invalid row (max_id "
                       "%lld, step %lld)",
                       i, tag, (long long)lmax, (long long)b);
  seen = frond__guard_end(ms->step, tag);
  if (seen == 0)
    frond__guard_note(ms->step, tag, b);
  else if (seen != b)
    return frond__fail(err, FROND_ESTORE,
                       "multi: member %d: tag \"%s\" has step %lld where "
                       "another member gave %lld: in a multi: store the step "
                       "is the block size and must never change",
                       i, tag, (long long)b, (long long)seen);
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
  *gend = gstart + b;
  *block = b;
  return 0;
}

/* ---- the backend ---- */

static uint64_t multi_rollbacks(const frond_store *st);

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
  ms->base.fixed_step = 1;
  ms->base.xRollbacks = multi_rollbacks;
  ms->n = u.n;
  ms->scan = -1;
  for (i = 0; i < u.n; i++) {
    member *m = &ms->m[i];
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
    rc = member_open(ms, i, &e);
    if (rc == FROND_ESTORE_MEMBER)
      return frond__fail(err, rc, "%s", e.message);
    if (rc == 0) {
      ok++;
    } else {
      snprintf(why, sizeof(why), "%s", e.message);
      frond_log(FROND_LOG_WARN, "store: %s; the other members serve",
                e.message);
    }
  }
  if (ok == 0)
    return frond__fail(err, FROND_ESTORE,
                       "multi: no member answers (the last: %s)", why);
  return 0;
}

static int multi_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err) {
  multi_store *ms = MS(st);
  frond_error e;
  int pass, k, rc, missing = 0, failed = 0;
  uint32_t tried = 0;
  char why[WHY_MAX] = "";
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
      if (m->refused || member_due(m) != !pass || (tried >> i & 1))
        continue;
      tried |= UINT32_C(1) << i;
      e.code = 0;
      e.message[0] = '\0';
      if ((rc = member_open(ms, i, &e)) == 0) {
        frond__store_sql_deadline(m->st, frond__mono_ns() +
                                             MEMBER_ANSWER_MS * 1000000);
        rc = member_alloc(ms, i, tag, max_id, row_step, &e);
        frond__store_sql_deadline(m->st, 0);
      }
      if (rc == 0) {
        member_up(m, i);
        ms->next = (unsigned)i + 1;
        return 0;
      }
      if (rc == FROND_ETAG_NOT_FOUND) {
        missing++;
        member_up(m, i);
        continue;
      }
      failed++;
      if (m->st != NULL)
        member_down(m, i, &e);
      snprintf(why, sizeof(why), "%s", e.message);
    }
  }
  if (failed == 0 && missing > 0)
    return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  return frond__fail(err, FROND_ESTORE,
                     "multi: no member could allocate for tag \"%s\" (the "
                     "last: %s)",
                     tag, why);
}

/* The first global ID member i would hand out next for a row. */
static int64_t next_global(const frond_tag_row *r, int i, int n) {
  int64_t b = r->step, l = r->max_id, g;
  if (b < 1 || l < 1)
    return r->max_id;
  l += (b - (l - 1) % b) % b;
  return frond__multi_map(l, b, i, n, &g) == 0 ? g : INT64_MAX;
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
    if (!member_due(&ms->m[i]) || member_open(ms, i, &e) != 0 ||
        frond__store_tag_list(ms->m[i].st, &rows, &nrows, &e) != 0) {
      if (ms->m[i].st != NULL && e.message[0] != '\0')
        member_down(&ms->m[i], i, &e);
      snprintf(why, sizeof(why), "%s", e.message[0] ? e.message : ms->m[i].why);
      continue;
    }
    ok++;
    member_up(&ms->m[i], i);
    for (j = 0; j < nrows; j++)
      rows[j].max_id = next_global(&rows[j], i, ms->n);
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
    if (after == NULL && !member_due(&ms->m[i]))
      continue;
    rc = member_open(ms, i, &e);
    if (rc == 0)
      rc = frond__store_tag_page(ms->m[i].st, after, limit, page_row, &pass, n,
                                 &e);
    if (rc == 0) {
      member_up(&ms->m[i], i);
      ms->scan = i;
      return 0;
    }
    if (pass.rc != 0) /* the caller's own failure */
      return frond__fail(err, rc, "%s", e.message);
    if (ms->m[i].st != NULL)
      member_down(&ms->m[i], i, &e);
    snprintf(why, sizeof(why), "member %d (%s): %s", i, ms->m[i].engine,
             e.message[0] ? e.message : ms->m[i].why);
    if (*n > 0 || after != NULL)
      break; /* rows of this member were passed: no other may go on */
  }
  return frond__fail(err, FROND_ESTORE, "multi: listing tags: %s", why);
}

static int multi_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                         frond_error *err) {
  multi_store *ms = MS(st);
  frond_tag_row r;
  frond_error e;
  int i, rc, found = 0, failed = 0;
  char why[WHY_MAX] = "";
  for (i = 0; i < ms->n; i++) {
    e.message[0] = '\0';
    rc = member_due(&ms->m[i]) ? member_open(ms, i, &e) : FROND_ESTORE;
    if (rc == 0)
      rc = frond__store_tag_get(ms->m[i].st, tag, &r, &e);
    if (rc == FROND_ETAG_NOT_FOUND)
      continue;
    if (rc != 0) {
      failed++;
      snprintf(why, sizeof(why), "%s", e.message[0] ? e.message : ms->m[i].why);
      continue;
    }
    r.max_id = next_global(&r, i, ms->n);
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
    e.message[0] = '\0';
    if (member_open(ms, i, &e) != 0)
      return frond__fail(err,
                         e.code == FROND_ESTORE_MEMBER ? e.code : FROND_ESTORE,
                         "multi: %s needs every member: %s", what, e.message);
  }
  return 0;
}

static int multi_tag_create(frond_store *st, const char *tag, int64_t step,
                            int64_t start, const char *description,
                            frond_error *err) {
  multi_store *ms = MS(st);
  int64_t lstart = frond__multi_local_start(start, step, ms->n);
  frond_tag_row r;
  int i, rc, existed = 0;
  if (lstart < 0)
    return frond__fail(err, FROND_EINVAL,
                       "multi: start %lld with step %lld is past the bigint "
                       "range",
                       (long long)start, (long long)step);
  if ((rc = all_members(ms, "creating a tag", err)) != 0)
    return rc;
  for (i = 0; i < ms->n; i++) {
    rc = ms->m[i].st->methods->xTagCreate(ms->m[i].st, tag, step, lstart,
                                          description, err);
    if (rc == FROND_ETAG_EXISTS) {
      /* A create that stopped halfway is completed; a tag with another
      ** step is another tag. */
      if ((rc = frond__store_tag_get(ms->m[i].st, tag, &r, err)) != 0)
        return rc;
      if (r.step != step)
        return frond__fail(err, FROND_ETAG_EXISTS,
                           "tag \"%s\" already exists (step %lld on member "
                           "%d)",
                           tag, (long long)r.step, i);
      existed++;
    } else if (rc != 0) {
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

static int multi_tag_delete(frond_store *st, const char *tag,
                            frond_error *err) {
  multi_store *ms = MS(st);
  int i, rc, gone = 0;
  if ((rc = all_members(ms, "deleting a tag", err)) != 0)
    return rc;
  frond__guard_forget(ms->step, tag); /* a new tag may have a new step */
  for (i = 0; i < ms->n; i++) {
    rc = ms->m[i].st->methods->xTagDelete(ms->m[i].st, tag, err);
    if (rc == 0)
      gone++;
    else if (rc != FROND_ETAG_NOT_FOUND)
      return rc;
  }
  return gone ? 0
              : frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found",
                            tag);
}

static uint64_t multi_rollbacks(const frond_store *st) {
  const multi_store *ms = (const multi_store *)st;
  uint64_t sum = 0;
  int i;
  for (i = 0; i < ms->n; i++)
    sum += frond__guard_rollbacks(ms->m[i].guard);
  return sum;
}

void frond__store_multi_share(frond_store *st, const frond_store *base) {
  multi_store *ms = MS(st);
  const multi_store *b = (const multi_store *)base;
  int i;
  assert(st->methods == &frond__store_multi &&
         base->methods == &frond__store_multi && b->n == ms->n);
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
}

int frond__store_members(frond_store *st, uint64_t *up) {
  multi_store *ms = (multi_store *)st;
  int i;
  *up = 0;
  if (st == NULL || st->methods != &frond__store_multi)
    return 0;
  for (i = 0; i < ms->n; i++)
    if (atomic_load(&ms->m[i].h->up))
      *up |= UINT64_C(1) << i;
  return ms->n;
}

/* Every member records the fact, in the members' order, and all must
** hold the same value: the first that holds another stops the round (so
** that a process whose value was refused writes it nowhere further) and
** its value is the answer. Needs every member, as creating a tag does. */
static int multi_fact(frond_store *st, const char *name, const char *value,
                      char *recorded, size_t len, frond_error *err) {
  multi_store *ms = MS(st);
  int i, rc;
  if ((rc = all_members(ms, "recording a format's key", err)) != 0)
    return rc;
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

const frond_store_methods frond__store_multi = {
    3,
    "multi:",
    "multi",
    multi_open,
    multi_close,
    multi_ensure_schema,
    multi_alloc,
    multi_tag_list,
    multi_tag_get,
    multi_tag_create,
    multi_tag_set_step,
    multi_tag_delete,
    multi_tag_page,
    multi_fact,
};
