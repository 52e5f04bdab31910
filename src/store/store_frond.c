/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_frond.c -- the frond:// store: segment ranges leased from Frond
** servers over HTTP instead of a database transaction, so that a program
** linked with libfrond hands out a tag's IDs from memory, as with a
** database, while only the servers hold the database's credentials.
**
**   frond://10.0.0.5:8080,10.0.0.6:8080?token=T&timeout_ms=2000&retries=3
**
** An allocation is GET /v1/segment/{tag}/range?count=step: the server
** hands out [start, end), above every ID of the tag it handed out before
** and below every one after, from its own store; the allocator's double
** buffer, preload and dynamic step work on those ranges as on rows. The
** row's step (the dynamic step's floor, the first range's size) comes from
** GET /v1/tags/{tag}, kept a minute per connection.
**
** What a server cannot give, this store refuses, with a stable code:
** a tag's floor and the facts of ID formats (STORE_PERMANENT: no endpoint
** serves them), node IDs (the lease coordinator takes no frond:// URI:
** db.c). Tag changes go through the admin API, with the URI's token.
**
** Uniqueness: the servers listed must share one store (servers on two
** databases hand out the same IDs). Each names its store's identity
** (Frond-Store:, "store" in /v1/layout; server/store_id.c): the first
** one seen is pinned, and a range of another store is refused with
** STORE_MISMATCH naming both servers and both identities; so is, when
** several servers are listed, a range from a server that names none. The
** call then moves on to the next server.
**
** Order: a server hands out ranges from its own buffers, so a range from
** one server of the store may lie below one just taken from another:
** ranges are unique, not ordered across servers, and the store declares
** segment order. A range is compared only with the last one this process
** took of the tag from the same server (a guard per server, shared by the
** allocator's connections); one below it (a store that lost writes) is
** dropped, counted as a rollback, and the next server asked.
**
** Size: a server leases at most its max_range IDs at once (/v1/layout);
** the store declares that as its largest step (FROND__STORE_MAX_STEP), and
** caps the row's step at it.
*/
#include "store/store_frond.h"

#include "base/escape.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP_CACHE 64
#define STEP_TTL_NS (INT64_C(60) * 1000000000)

typedef struct step_slot {
  char tag[FROND_TAG_MAX + 1];
  int64_t step;
  int64_t at_ns; /* 0: empty */
} step_slot;

/* What the connections of one allocator share: per server, the ends of
** the ranges the process took of each tag; the ranges dropped for being
** below; the store pinned; the servers' max_range. */
typedef struct fs_shared {
  frond_store_guard *guard[FROND_FS_MAX_SERVERS];
  atomic_ullong rollbacks;
  _Atomic int64_t max_range;        /* the least seen; 0: none seen */
  pthread_mutex_t mu;               /* over the pin */
  char pin[FROND_FS_STORE_LEN + 1]; /* "": none yet */
  char pin_from[FROND_FS_HOST_MAX + 9];
} fs_shared;

typedef struct fs_store {
  frond_store base;
  frond_fs_client c;
  fs_shared *sh;   /* the process's, across an allocator's connections */
  int sh_borrowed; /* another connection's (closed after this one) */
  step_slot steps[STEP_CACHE];
  frond_tag_row *page; /* the list a paged read walks */
  size_t npage;
} fs_store;

const frond_store_methods frond__store_frond;

/* "/v1/..." with tag percent-encoded as one path segment. */
static int tag_path(char *out, size_t cap, const char *pre, const char *tag,
                    const char *post) {
  static const char hex[] = "0123456789ABCDEF";
  size_t k = (size_t)snprintf(out, cap, "%s", pre);
  for (const unsigned char *p = (const unsigned char *)tag; *p; p++) {
    int c = *p;
    if (k + 4 >= cap)
      return -1;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
        (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
        c == '~') {
      out[k++] = (char)c;
    } else {
      out[k++] = '%';
      out[k++] = hex[c >> 4];
      out[k++] = hex[c & 15];
    }
  }
  return snprintf(out + k, cap - k, "%s", post) >= (int)(cap - k) ? -1 : 0;
}

static void drop_shared(fs_store *s) {
  if (!s->sh_borrowed) {
    for (int i = 0; i < FROND_FS_MAX_SERVERS; i++)
      frond__guard_free(s->sh->guard[i]);
    pthread_mutex_destroy(&s->sh->mu);
    free(s->sh);
  }
  s->sh = NULL;
}

static int fs_open(const char *uri, frond_store **out, frond_error *err) {
  frond_fs_uri u;
  fs_store *s;
  int rc;
  *out = NULL;
  if ((rc = frond__fs_uri_parse(uri, &u, err)) != 0)
    return rc;
  if ((s = calloc(1, sizeof(*s))) == NULL ||
      (s->sh = calloc(1, sizeof(*s->sh))) == NULL) {
    free(s);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  pthread_mutex_init(&s->sh->mu, NULL);
  for (int i = 0; i < u.n; i++)
    if ((s->sh->guard[i] = frond__guard_new()) == NULL) {
      drop_shared(s);
      free(s);
      return frond__fail(err, FROND_ENOMEM, NULL);
    }
  s->base.methods = &frond__store_frond;
  frond__fs_client_init(&s->c, &u);
  *out = &s->base;
  return 0;
}

static void fs_close(frond_store *st) {
  fs_store *s = (fs_store *)st;
  frond__fs_client_free(&s->c);
  drop_shared(s);
  free(s->page);
  free(s);
}

static int get(fs_store *s, const char *path, frond_fs_answer *a,
               frond_error *err) {
  frond_fs_req r = {"GET", path, NULL, 1, NULL, NULL};
  return frond__fs_call(&s->c, &r, a, err);
}

/* The store the server of a names, against the one pinned (pinned now
** when none is). 0, or STORE_MISMATCH naming both. */
static int pin_store(fs_store *s, const frond_fs_answer *a, const char *store,
                     frond_error *err) {
  fs_shared *sh = s->sh;
  int rc = 0;
  if (store[0] == '\0')
    return s->c.u.n == 1
               ? 0
               : frond__fail(err, FROND_ESTORE_MISMATCH,
                             "server %s does not name its store (a server "
                             "older than this client?): with %d servers "
                             "listed, each must name its store so that the "
                             "client can check they share one; its range is "
                             "not used",
                             a->srv->shown, s->c.u.n);
  pthread_mutex_lock(&sh->mu);
  if (sh->pin[0] == '\0') {
    memcpy(sh->pin, store, sizeof(sh->pin));
    snprintf(sh->pin_from, sizeof(sh->pin_from), "%s", a->srv->shown);
  } else if (strcmp(sh->pin, store) != 0) {
    rc = frond__fail(err, FROND_ESTORE_MISMATCH,
                     "server %s serves store %s, and server %s store %s: "
                     "servers on different stores hand out the same IDs; "
                     "list only servers of one store (its range is not "
                     "used)",
                     a->srv->shown, store, sh->pin_from, sh->pin);
  }
  pthread_mutex_unlock(&sh->mu);
  if (rc != 0)
    frond_log(FROND_LOG_WARN, "store: %s", err->message);
  return rc;
}

/* Server i's layout (one attempt, no failover; i < 0: the current
** server's, with the call's failover and retries): its store pinned or
** checked, its max_range noted. */
static int layout_of(fs_store *s, int i, frond_error *err) {
  char store[FROND_FS_STORE_LEN + 1];
  int64_t max_range, was;
  frond_fs_answer a;
  frond_fs_req r = {"GET", "/v1/layout", NULL, 1, NULL, NULL};
  int rc, retries = s->c.u.retries;
  if (i >= 0 && s->c.cur != i) {
    frond__fs_next_server(&s->c); /* drops the connection */
    s->c.cur = i;
  }
  if (i >= 0 && s->c.u.n > 1) /* each server once */
    s->c.u.retries = 0;
  rc = frond__fs_call(&s->c, &r, &a, err);
  s->c.u.retries = retries;
  if (rc != 0)
    return rc;
  if (a.status != 200)
    return frond__fs_fail(&a, "GET /v1/layout", err);
  if (a.len < 2 || a.body[0] != '{' ||
      memmem(a.body, a.len, "\"ids_per_second\"", 16) == NULL ||
      frond__fs_layout_parse(a.body, a.len, store, &max_range) != 0)
    return frond__fail(err, FROND_ESTORE_PERMANENT,
                       "server %s: /v1/layout is not a Frond server's",
                       a.srv->shown);
  was = atomic_load(&s->sh->max_range);
  while (max_range > 0 && (was == 0 || max_range < was) &&
         !atomic_compare_exchange_weak(&s->sh->max_range, &was, max_range))
    ;
  /* Before this version servers named no store: their ranges say. */
  return store[0] != '\0' ? pin_store(s, &a, store, err) : 0;
}

/* The servers are Frond servers of one store: every one that answers
** names the same (those down now are checked by their ranges). 0 once
** one answered and none disagreed; else the first refusal, or the last
** failure when none answered. */
static int fs_ensure_schema(frond_store *st, frond_error *err) {
  fs_store *s = (fs_store *)st;
  int i, first = -1, rc = 0;
  for (i = 0; i < s->c.u.n; i++) {
    frond_error e = {0, ""};
    int r = s->c.u.n == 1 ? layout_of(s, -1, &e) : layout_of(s, i, &e);
    if (r == 0) {
      if (first < 0)
        first = i;
      continue;
    }
    if (r == FROND_ESTORE_MISMATCH || r == FROND_ESTORE_PERMANENT)
      return frond__fail(err, r, "%s", e.message);
    rc = frond__fail(err, r, "%s", e.message);
  }
  frond__fs_next_server(&s->c);
  s->c.cur = first >= 0 ? first : 0;
  /* None answered once: the servers get the call's every retry, with
  ** backoff, as any call. */
  if (first < 0 && s->c.u.n > 1 && frond__store_retryable(rc))
    return layout_of(s, -1, err);
  return first >= 0 ? 0 : rc;
}

/* A tag row to take (ctx: where it goes). */
static int row_check(void *ctx, const frond_fs_answer *a, frond_error *err) {
  if (frond__fs_row_parse(a->body, a->len, ctx) == 0)
    return 0;
  return frond__fail(err, FROND_ESTORE,
                     "server %s: a tag row that does not parse", a->srv->shown);
}

static int fs_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                      frond_error *err) {
  fs_store *s = (fs_store *)st;
  char path[FROND_TAG_MAX * 3 + 32];
  frond_fs_answer a;
  int rc;
  if (tag_path(path, sizeof(path), "/v1/tags/", tag, "") != 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name too long");
  {
    frond_fs_req r = {"GET", path, NULL, 1, row_check, out};
    if ((rc = frond__fs_call(&s->c, &r, &a, err)) != 0)
      return rc;
  }
  return a.status == 200 ? 0 : frond__fs_fail(&a, "", err);
}

/* The row's step of tag: from the cache when fresh (and not forced). */
static int row_step(fs_store *s, const char *tag, int force, int64_t *step,
                    frond_error *err) {
  step_slot *slot = &s->steps[frond__fnv1a64(tag, strlen(tag)) % STEP_CACHE];
  int64_t now = frond__mono_ns();
  frond_tag_row row;
  int rc;
  if (!force && slot->at_ns != 0 && now - slot->at_ns < STEP_TTL_NS &&
      strcmp(slot->tag, tag) == 0) {
    *step = slot->step;
    return 0;
  }
  if ((rc = fs_tag_get(&s->base, tag, &row, err)) != 0)
    return rc;
  if (row.step < 1)
    return frond__fail(err, FROND_ESTORE,
                       "tag \"%s\": the server gives step "
                       "%lld",
                       tag, (long long)row.step);
  snprintf(slot->tag, sizeof(slot->tag), "%s", tag);
  slot->step = *step = row.step;
  slot->at_ns = now;
  return 0;
}

/* What a range call expects, and what its check found. */
typedef struct range_ctx {
  fs_store *s;
  const char *tag;
  int64_t count, start, end;
} range_ctx;

/* A range answer to take: count IDs "start end", from the store pinned,
** above the last range taken of the tag from the same server. */
static int range_check(void *ctx, const frond_fs_answer *a, frond_error *err) {
  range_ctx *r = ctx;
  fs_store *s = r->s;
  frond_store_guard *g = s->sh->guard[a->i];
  int64_t mark;
  int rc;
  if (frond__fs_range_parse(a->body, a->len, &r->start, &r->end) != 0 ||
      r->end - r->start != r->count)
    return frond__fail(err, FROND_ESTORE,
                       "server %s: tag \"%s\": a range answer that is not "
                       "%lld IDs \"start end\"",
                       a->srv->shown, r->tag, (long long)r->count);
  if ((rc = pin_store(s, a, a->store, err)) != 0)
    return rc;
  /* The allocator loads a tag on one connection at a time: no other
  ** range of it is noted between this look and the note. */
  mark = frond__guard_end(g, r->tag);
  if (r->start < mark) {
    atomic_fetch_add(&s->sh->rollbacks, 1);
    frond_log(FROND_LOG_WARN,
              "store: tag \"%s\": server %s handed out [%lld, %lld), below "
              "%lld where the last range this process took from it ends: "
              "its store lost writes; the range is dropped",
              r->tag, a->srv->shown, (long long)r->start, (long long)r->end,
              (long long)mark);
    return frond__fail(err, FROND_ESTORE,
                       "tag \"%s\": server %s handed out [%lld, %lld), below "
                       "%lld where the last range taken from it ends (its "
                       "store lost writes): dropped",
                       r->tag, a->srv->shown, (long long)r->start,
                       (long long)r->end, (long long)mark);
  }
  frond__guard_note(g, r->tag, r->end);
  return 0;
}

static int fs_alloc(frond_store *st, const char *tag, int64_t step,
                    int64_t *max_id, int64_t *row_step_out, frond_error *err) {
  fs_store *s = (fs_store *)st;
  char path[FROND_TAG_MAX * 3 + 64];
  int64_t rs = 0, cap = atomic_load(&s->sh->max_range);
  range_ctx r = {s, tag, 0, 0, 0};
  frond_fs_req req = {"GET", path, NULL, 1, range_check, &r};
  frond_fs_answer a;
  int rc;
  if ((rc = row_step(s, tag, step == 0, &rs, err)) != 0)
    return rc;
  /* The servers lease at most max_range at once: a row's step above it
  ** is taken as max_range (the allocator asks no larger step). */
  if (cap > 0 && rs > cap)
    rs = cap;
  if (cap > 0 && step > cap)
    return frond__fail(err, FROND_ECOUNT_INVALID,
                       "tag \"%s\": a segment of %lld IDs, and the servers "
                       "lease at most %lld at once (their max_range)",
                       tag, (long long)step, (long long)cap);
  r.count = step > 0 ? step : rs;
  if (tag_path(path, sizeof(path), "/v1/segment/", tag, "/range") != 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name too long");
  snprintf(path + strlen(path), sizeof(path) - strlen(path),
           "?count=%lld&as=text", (long long)r.count);
  if ((rc = frond__fs_call(&s->c, &req, &a, err)) != 0)
    return rc;
  if (a.status != 200)
    return frond__fs_fail(&a, "", err);
  *max_id = r.end;
  *row_step_out = rs;
  return 0;
}

typedef struct list_ctx {
  frond_tag_row *rows;
  size_t n, cap;
} list_ctx;

static int add_row(void *ctx, const frond_tag_row *row) {
  list_ctx *l = ctx;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    frond_tag_row *r = realloc(l->rows, cap * sizeof(*r));
    if (r == NULL)
      return FROND_ENOMEM;
    l->rows = r;
    l->cap = cap;
  }
  l->rows[l->n++] = *row;
  return 0;
}

static int by_tag(const void *a, const void *b) {
  return strcmp(((const frond_tag_row *)a)->tag,
                ((const frond_tag_row *)b)->tag);
}

static int fs_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                       frond_error *err) {
  fs_store *s = (fs_store *)st;
  list_ctx l = {NULL, 0, 0};
  frond_fs_answer a;
  int rc;
  *out = NULL;
  *n = 0;
  if ((rc = get(s, "/v1/tags", &a, err)) != 0)
    return rc;
  if (a.status != 200)
    return frond__fs_fail(&a, "GET /v1/tags", err);
  rc = frond__fs_rows_parse(a.body, a.len, add_row, &l);
  if (rc != 0) {
    free(l.rows);
    if (rc == FROND_ENOMEM)
      return frond__fail(err, rc, NULL);
    frond__fs_next_server(&s->c);
    return frond__fail(err, FROND_ESTORE,
                       "server %s: GET /v1/tags: a list that does not parse",
                       a.srv->shown);
  }
  qsort(l.rows, l.n, sizeof(*l.rows), by_tag);
  *out = l.rows;
  *n = l.n;
  return 0;
}

/* Pages of one list read at the first page: a row that exists for the
** whole scan is seen exactly once. */
static int fs_tag_page(frond_store *st, const char *after, int limit,
                       frond__tag_fn fn, void *ctx, int *n, frond_error *err) {
  fs_store *s = (fs_store *)st;
  size_t i = 0;
  int rc;
  *n = 0;
  if (after == NULL || s->page == NULL) {
    free(s->page);
    s->page = NULL;
    s->npage = 0;
    if ((rc = fs_tag_list(st, &s->page, &s->npage, err)) != 0)
      return rc;
  }
  if (after != NULL)
    while (i < s->npage && strcmp(s->page[i].tag, after) <= 0)
      i++;
  for (; i < s->npage && *n < limit; i++, (*n)++)
    if ((rc = fn(ctx, s->page[i].tag, s->page[i].step)) != 0)
      return rc;
  return 0;
}

/* An admin call with a JSON body (NULL: none); the row it answers into
** out when out is not NULL. */
static int change(fs_store *s, const char *method, const char *path,
                  const char *body, int want, frond_tag_row *out,
                  frond_error *err) {
  frond_fs_req r = {method, path, body, 0, NULL, NULL};
  frond_fs_answer a;
  frond_tag_row row;
  char what[FROND_TAG_MAX * 3 + 48];
  int rc;
  snprintf(what, sizeof(what), "%s %s", method, path);
  if ((rc = frond__fs_call(&s->c, &r, &a, err)) != 0)
    return rc;
  if (a.status != want)
    return frond__fs_fail(&a, what, err);
  if (a.len > 0 && frond__fs_row_parse(a.body, a.len, out ? out : &row) != 0)
    return frond__fail(err, FROND_ESTORE,
                       "server %s: %s: done, but the row it answered does "
                       "not parse",
                       a.srv->shown, what);
  memset(s->steps, 0, sizeof(s->steps)); /* a step may have changed */
  return 0;
}

static int fs_tag_create(frond_store *st, const char *tag, int64_t step,
                         int64_t start, const char *description,
                         frond_error *err) {
  char body[FROND_TAG_MAX * 6 + 256 * 6 + 128], *p = body;
  size_t k;
  k = (size_t)snprintf(p, sizeof(body), "{\"tag\":\"");
  k += frond__json_escape(tag, strlen(tag), p + k, sizeof(body) - k);
  k += (size_t)snprintf(p + k, sizeof(body) - k, "\",\"step\":%lld",
                        (long long)step);
  if (start > 0)
    k += (size_t)snprintf(p + k, sizeof(body) - k, ",\"start\":%lld",
                          (long long)start);
  if (description != NULL && description[0] != '\0') {
    k += (size_t)snprintf(p + k, sizeof(body) - k, ",\"description\":\"");
    k += frond__json_escape(description, strlen(description), p + k,
                            sizeof(body) - k);
    k += (size_t)snprintf(p + k, sizeof(body) - k, "\"");
  }
  snprintf(p + k, sizeof(body) - k, "}");
  return change((fs_store *)st, "POST", "/v1/tags", body, 201, NULL, err);
}

static int fs_tag_set_step(frond_store *st, const char *tag, int64_t step,
                           frond_error *err) {
  char path[FROND_TAG_MAX * 3 + 32], body[48];
  if (tag_path(path, sizeof(path), "/v1/tags/", tag, "") != 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name too long");
  snprintf(body, sizeof(body), "{\"step\":%lld}", (long long)step);
  return change((fs_store *)st, "PATCH", path, body, 200, NULL, err);
}

static int fs_tag_delete(frond_store *st, const char *tag, frond_error *err) {
  char path[FROND_TAG_MAX * 3 + 32];
  if (tag_path(path, sizeof(path), "/v1/tags/", tag, "") != 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name too long");
  return change((fs_store *)st, "DELETE", path, NULL, 204, NULL, err);
}

static int fs_tag_advance(frond_store *st, const char *tag, int64_t to,
                          frond_error *err) {
  char path[FROND_TAG_MAX * 3 + 40], body[48];
  if (tag_path(path, sizeof(path), "/v1/tags/", tag, "/advance") != 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name too long");
  snprintf(body, sizeof(body), "{\"to\":%lld}", (long long)to);
  return change((fs_store *)st, "POST", path, body, 200, NULL, err);
}

static int fs_tag_floor(frond_store *st, const char *tag, int64_t *first,
                        frond_error *err) {
  (void)st;
  *first = 0;
  return frond__fail(err, FROND_ESTORE_PERMANENT,
                     "tag \"%s\": a frond:// store does not read a tag's "
                     "floor (no server endpoint serves it): give the tag's "
                     "start, or create it through the server "
                     "(POST /v1/tags), which starts it above its floor",
                     tag);
}

static int fs_fact(frond_store *st, const char *name, const char *value,
                   char *recorded, size_t len, frond_error *err) {
  (void)st;
  (void)value;
  if (len > 0)
    recorded[0] = '\0';
  return frond__fail(err, FROND_ESTORE_PERMANENT,
                     "a frond:// store records no facts (\"%.64s\"): check "
                     "the format against the servers' database, a "
                     "coordinator or the data directory instead",
                     name);
}

static int fs_control(frond_store *st, int op, void *arg, frond_error *err) {
  fs_store *s = (fs_store *)st;
  (void)err;
  switch (op) {
  case FROND__STORE_LABEL: {
    frond__store_label *l = arg;
    snprintf(l->engine, sizeof(l->engine), "frond");
    l->member = -1;
    return 0;
  }
  case FROND__STORE_SHARE: {
    const frond_store *b = arg;
    if (b->methods != &frond__store_frond)
      return FROND_EINVAL;
    drop_shared(s);
    s->sh = ((const fs_store *)b)->sh;
    s->sh_borrowed = 1;
    return 0;
  }
  case FROND__STORE_ROLLBACKS:
    *(uint64_t *)arg = atomic_load(&s->sh->rollbacks);
    return 0;
  case FROND__STORE_ORDER: /* servers hand out from their own buffers */
    *(int *)arg = FROND_SEG_ORDER_SEGMENT;
    return 0;
  case FROND__STORE_MAX_STEP:
    *(int64_t *)arg = atomic_load(&s->sh->max_range);
    return 0;
  default:
    return FROND_EINVAL;
  }
}

const frond_store_methods frond__store_frond = {
    4,           "frond://",       "frond",         fs_open,
    fs_close,    fs_ensure_schema, fs_alloc,        fs_tag_list,
    fs_tag_get,  fs_tag_create,    fs_tag_set_step, fs_tag_delete,
    fs_tag_page, fs_tag_advance,   fs_tag_floor,    fs_fact,
    fs_control,
};
