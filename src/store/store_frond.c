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
** Order and uniqueness: ranges from one server's store come in increasing
** order. Several servers must share one store; nothing a server answers
** names its store, so that is the operator's to keep (docs/clients/c.md).
** What the process can check, it does: a range is taken only above every
** range this process took of the tag (the guard, shared by the
** allocator's connections); one that is not is dropped, counted as a
** rollback, and the call moves to the next server, with an error naming
** the server and the mark.
*/
#include "store/store_frond.h"

#include "base/escape.h"

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

/* What the connections of one allocator share: the ends of the ranges
** the process took, per tag, and the ranges dropped for being below. */
typedef struct fs_shared {
  frond_store_guard *guard;
  atomic_ullong rollbacks;
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

static int fs_open(const char *uri, frond_store **out, frond_error *err) {
  frond_fs_uri u;
  fs_store *s;
  int rc;
  *out = NULL;
  if ((rc = frond__fs_uri_parse(uri, &u, err)) != 0)
    return rc;
  if ((s = calloc(1, sizeof(*s))) == NULL ||
      (s->sh = calloc(1, sizeof(*s->sh))) == NULL ||
      (s->sh->guard = frond__guard_new()) == NULL) {
    if (s != NULL)
      free(s->sh);
    free(s);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  s->base.methods = &frond__store_frond;
  frond__fs_client_init(&s->c, &u);
  *out = &s->base;
  return 0;
}

static void drop_shared(fs_store *s) {
  if (!s->sh_borrowed) {
    frond__guard_free(s->sh->guard);
    free(s->sh);
  }
  s->sh = NULL;
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
  frond_fs_req r = {"GET", path, NULL, 1};
  return frond__fs_call(&s->c, &r, a, err);
}

/* A server is there and is a Frond server: its layout answers. */
static int fs_ensure_schema(frond_store *st, frond_error *err) {
  fs_store *s = (fs_store *)st;
  frond_fs_answer a;
  int rc = get(s, "/v1/layout", &a, err);
  if (rc != 0)
    return rc;
  if (a.status != 200)
    return frond__fs_fail(&a, "GET /v1/layout", err);
  if (a.len < 2 || a.body[0] != '{' ||
      memmem(a.body, a.len, "\"ids_per_second\"", 16) == NULL)
    return frond__fail(err, FROND_ESTORE_PERMANENT,
                       "server %s: /v1/layout is not a Frond server's",
                       a.srv->shown);
  return 0;
}

static int fs_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                      frond_error *err) {
  fs_store *s = (fs_store *)st;
  char path[FROND_TAG_MAX * 3 + 32];
  frond_fs_answer a;
  int rc;
  if (tag_path(path, sizeof(path), "/v1/tags/", tag, "") != 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name too long");
  if ((rc = get(s, path, &a, err)) != 0)
    return rc;
  if (a.status != 200)
    return frond__fs_fail(&a, "", err);
  if (frond__fs_row_parse(a.body, a.len, out) != 0) {
    frond__fs_next_server(&s->c);
    return frond__fail(err, FROND_ESTORE,
                       "server %s: GET %s: a row that does not parse",
                       a.srv->shown, path);
  }
  return 0;
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

static int fs_alloc(frond_store *st, const char *tag, int64_t step,
                    int64_t *max_id, int64_t *row_step_out, frond_error *err) {
  fs_store *s = (fs_store *)st;
  char path[FROND_TAG_MAX * 3 + 64];
  int64_t rs = 0, count, start, end, mark;
  frond_fs_answer a;
  int rc;
  if ((rc = row_step(s, tag, step == 0, &rs, err)) != 0)
    return rc;
  count = step > 0 ? step : rs;
  if (tag_path(path, sizeof(path), "/v1/segment/", tag, "/range") != 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name too long");
  snprintf(path + strlen(path), sizeof(path) - strlen(path),
           "?count=%lld&as=text", (long long)count);
  if ((rc = get(s, path, &a, err)) != 0)
    return rc;
  if (a.status != 200)
    return frond__fs_fail(&a, "", err);
  if (frond__fs_range_parse(a.body, a.len, &start, &end) != 0 ||
      end - start != count) {
    frond__fs_next_server(&s->c);
    return frond__fail(err, FROND_ESTORE,
                       "server %s: tag \"%s\": a range answer that is not "
                       "%lld IDs \"start end\"",
                       a.srv->shown, tag, (long long)count);
  }
  /* Above every range this process took of the tag, or dropped. The
  ** allocator loads a tag on one connection at a time: no other range
  ** of it is noted between this look and the note. */
  mark = frond__guard_end(s->sh->guard, tag);
  if (start < mark) {
    frond_fs_server srv = *a.srv;
    atomic_fetch_add(&s->sh->rollbacks, 1);
    frond__fs_next_server(&s->c);
    frond_log(FROND_LOG_WARN,
              "store: tag \"%s\": server %s handed out [%lld, %lld), below "
              "%lld where a range this process took ends: servers that do "
              "not share one store, or a store that lost writes; the range "
              "is dropped",
              tag, srv.shown, (long long)start, (long long)end,
              (long long)mark);
    return frond__fail(err, FROND_ESTORE,
                       "tag \"%s\": server %s handed out [%lld, %lld), below "
                       "%lld where a range this process took ends: its store "
                       "is not the one the range before came from, or lost "
                       "writes; dropped, asking the next server",
                       tag, srv.shown, (long long)start, (long long)end,
                       (long long)mark);
  }
  frond__guard_note(s->sh->guard, tag, end);
  *max_id = end;
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
  frond_fs_req r = {method, path, body, 0};
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
