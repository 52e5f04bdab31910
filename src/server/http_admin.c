/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_admin.c -- /v1/tags: create, list, read, re-step, delete and
** advance the segment tags in the store.
**
** A store call takes as long as the database takes (a PostgreSQL round
** trip, a lock wait), so none runs on an event loop: the request is
** checked (its token by the route table, http.c) and its body read on the
** loop, and the request layer (req.c) runs the call on libuv's thread
** pool and has it answered, back on the loop. The connection is held
** meanwhile: requests pipelined behind the call wait for it, in order,
** and a client that goes away leaves the connection allocated until the
** completion has found it gone. Calls share one store connection, one at
** a time. A drain waits for calls in flight: a loop does not end while
** work it queued is pending.
*/
#include "server/http.h"

#include "base/base.h"
#include "server/json.h"

#include <stdlib.h>
#include <string.h>

/* The record of an admin request, copied by the request layer while the
** call runs. */
typedef struct admin_call {
  frond__http_ctx x;
  int method;
  int one;     /* /v1/tags/{tag} */
  int advance; /* POST /v1/tags/{tag}/advance */
  char tag[FROND_TAG_MAX + 1];
  char desc[257];
  int64_t step, start, to, max, increment, offset;
  int ordered;
  int has_step, has_start, has_desc, has_max;
  /* Written by the pool thread, read by the answer. */
  int status;
  frond__buf body;
} admin_call;

/* A row, and its attributes ("max", null for none; "increment" and
** "offset", 1 and 0 for every number: store_sql_seq.c). */
static int tag_json(frond__buf *b, frond_store *st, const frond_tag_row *r,
                    frond_error *err) {
  frond_tag_seq q = {0, 1, 0, 0};
  int rc = frond_store_tag_seq(st, r->tag, &q, err);
  if (rc != 0 && rc != FROND_ETAG_NOT_FOUND) /* deleted while listed */
    return rc;
  frond__buf_printf(b, "{\"tag\":\"");
  frond__json_append(b, r->tag, strlen(r->tag));
  frond__buf_printf(b, "\",\"max_id\":%lld,\"step\":%lld,",
                    (long long)r->max_id, (long long)r->step);
  if (q.max > 0)
    frond__buf_printf(b, "\"max\":%lld,", (long long)q.max);
  else
    frond__buf_printf(b, "\"max\":null,");
  frond__buf_printf(b, "\"increment\":%lld,\"offset\":%lld,\"ordered\":%s,",
                    (long long)q.increment, (long long)q.offset,
                    q.ordered ? "true" : "false");
  frond__buf_printf(b, "\"description\":\"");
  frond__json_append(b, r->description, strlen(r->description));
  frond__buf_printf(b, "\",\"update_time\":\"%s\"}", r->update_time);
  return 0;
}

/* The store call itself, on a pool thread (req.c holds the store). */
static int call_store(frond__req *q, void *ctx, frond_store *st) {
  admin_call *a = ctx;
  frond__buf *b = &a->body;
  frond_error *err = &q->err;
  frond_tag_row row;
  frond_tag_seq seq;
  int r;
  a->status = 200;
  switch (a->method) {
  case FROND__HTTP_GET:
  case FROND__HTTP_HEAD:
    if (a->one) {
      if ((r = frond_store_tag_get(st, a->tag, &row, err)) == 0)
        r = tag_json(b, st, &row, err);
    } else {
      frond_tag_row *rows = NULL;
      size_t n = 0, i;
      if ((r = frond_store_tag_list(st, &rows, &n, err)) != 0)
        return r;
      frond__buf_printf(b, "{\"tags\":[");
      for (i = 0; i < n && r == 0; i++) {
        if (i > 0)
          frond__buf_append(b, ",", 1);
        r = tag_json(b, st, &rows[i], err);
      }
      frond__buf_printf(b, "]}");
      frond_free(rows);
      if (r != 0)
        frond__buf_free(b);
    }
    return r;
  case FROND__HTTP_POST:
    if (a->advance) {
      r = frond_store_tag_advance(st, a->tag, a->to, err);
      break;
    }
    /* Without a start, at the name's floor (1 unless it was deleted). */
    a->status = 201;
    seq.max = a->max;
    seq.increment = a->increment;
    seq.offset = a->offset;
    seq.ordered = a->ordered;
    r = frond_store_tag_create_seq(st, a->tag, a->step,
                                   a->has_start ? a->start : 0,
                                   a->has_desc ? a->desc : "", &seq, err);
    break;
  case FROND__HTTP_PATCH: /* "step", "max" (null: none), or both */
    r = a->has_step ? frond_store_tag_set_step(st, a->tag, a->step, err) : 0;
    if (r == 0 && a->has_max)
      r = frond_store_tag_set_max(st, a->tag, a->max, err);
    break;
  default:
    return frond_store_tag_delete(st, a->tag, err);
  }
  /* POST and PATCH answer with the row as it is now. */
  if (r == 0 && (r = frond_store_tag_get(st, a->tag, &row, err)) == 0)
    r = tag_json(b, st, &row, err);
  return r;
}

/* A change to a tag is an operator's act: one log line each, made or
** not, with the request's fields (method, path, client, tag, and the
** status answered unless the client went away first). Reads are not
** logged. */
static void admin_log(const admin_call *a, int rc, const frond_error *err) {
  static const char *const did[] = {"created", "re-stepped", "deleted",
                                    "advanced"};
  static const char *const names[] = {"POST", "PATCH", "DELETE", "POST"};
  int i = a->advance                       ? 3
          : a->method == FROND__HTTP_POST  ? 0
          : a->method == FROND__HTTP_PATCH ? 1
                                           : 2;
  char path[FROND_TAG_MAX + 24], peer[FROND__PEER_MAX];
  frond__log_field f[5] = {{"method", names[i], 0},
                           {"path", path, 0},
                           {"client", peer, 0},
                           {"tag", a->tag, 0},
                           {"status", NULL, a->x.status}};
  size_t n = a->x.status != 0 ? 5 : 4;
  if (a->method == FROND__HTTP_GET || a->method == FROND__HTTP_HEAD)
    return;
  snprintf(path, sizeof path,
           a->advance ? "/v1/tags/%s/advance"
           : a->one   ? "/v1/tags/%s"
                      : "/v1/tags",
           a->tag);
  frond__conn_peer(a->x.c, peer, sizeof peer);
  if (rc == 0)
    frond__log_fields(FROND_LOG_INFO, f, n, "tag \"%s\" %s", a->tag, did[i]);
  else
    frond__log_fields(FROND_LOG_WARN, f, n, "tag \"%s\" not %s: %s: %s", a->tag,
                      did[i], frond_err_name(rc), frond__req_message(rc, err));
}

static void answer(const frond__req *r, void *ctx) {
  admin_call *a = ctx;
  frond__http_ctx *x = &a->x;
  if (r->rc != 0) {
    frond__http_error_code(x, r->rc, &r->err);
  } else if (a->method == FROND__HTTP_DELETE) {
    frond__http_respond(x, 204, "application/json", "", 0, NULL);
  } else {
    frond__buf_append(&a->body, "\n", 1);
    frond__http_respond(x, a->status, "application/json", a->body.data,
                        a->body.len, NULL);
  }
}

/* The client went away (gone): the change, if any, is made all the same,
** and logged. */
static int done(const frond__req *r, void *ctx, int gone) {
  admin_call *a = ctx;
  (void)gone;
  admin_log(a, r->rc, &r->err);
  frond__buf_free(&a->body);
  return !a->x.keep_alive;
}

static void keep(void *ctx) {
  admin_call *a = ctx;
  a->x.req = NULL;
  a->x.body = NULL;
  a->x.body_len = 0;
  a->x.param = NULL;
  a->x.param_len = 0;
}

static const frond__req_how admin_how = {sizeof(admin_call), keep, answer, done,
                                         call_store};

/* Is the body JSON: Content-Type application/json, parameters allowed?
** A page can send text/plain or a form to another site without the
** browser asking first; application/json needs the server's consent
** (a CORS preflight, which this server never gives). */
static int json_body(const frond__http_ctx *x) {
  const frond__http_header *h = frond__http_header_find(x->req, "content-type");
  size_t n = 16;
  if (h == NULL || h->value_len < n ||
      !frond__http_eq_nocase(h->value, n, "application/json"))
    return 0;
  while (n < h->value_len && (h->value[n] == ' ' || h->value[n] == '\t'))
    n++;
  return n == h->value_len || h->value[n] == ';';
}

/* Read the body of a POST (tag, step, start, description, max,
** increment, offset), a PATCH (step, max: one or both) or an advance (to)
** into a. 0, or -1 after answering 415 or 400.
** The tag is read whole (it cannot be longer than the body) and checked
** as a tag, so that a long one is TAG_INVALID here as on the other paths. */
static int read_body(frond__http_ctx *x, admin_call *a) {
  frond_error jerr = {0, ""};
  int post = a->method == FROND__HTTP_POST && !a->advance;
  int patch = a->method == FROND__HTTP_PATCH;
  char *tag = malloc(x->body_len + 1);
  /* POST reads all eight; PATCH step and max (fields 1 and 2); an
  ** advance to (field 1). */
  frond__json_field fields[8] = {
      {"tag", FROND__JSON_STR, tag, x->body_len + 1, 0, 0},
      {a->advance ? "to" : "step", FROND__JSON_INT, NULL, 0, 0, 0},
      {"max", FROND__JSON_INT, NULL, 0, 0, 0},
      {"start", FROND__JSON_INT, NULL, 0, 0, 0},
      {"description", FROND__JSON_STR, a->desc, sizeof a->desc, 0, 0},
      {"increment", FROND__JSON_INT, NULL, 0, 0, 0},
      {"offset", FROND__JSON_INT, NULL, 0, 0, 0},
      {"ordered", FROND__JSON_BOOL, NULL, 0, 0, 0},
  };
  int r = -1;
  if (!json_body(x)) {
    frond__http_error(x, 415, "UNSUPPORTED_MEDIA_TYPE",
                      "the body must be JSON (Content-Type: "
                      "application/json)",
                      post ? "Accept-Post: application/json\r\n"
                           : "Accept-Patch: application/json\r\n");
  } else if (tag == NULL) {
    frond__http_error_code(x, FROND_ENOMEM, NULL);
  } else if (frond__json_read(x->body, x->body_len, post ? fields : fields + 1,
                              post    ? 8
                              : patch ? 2
                                      : 1,
                              &jerr) != 0) {
    frond__http_error(x, 400, "BAD_REQUEST", jerr.message, NULL);
  } else if ((post && !fields[0].present) ||
             !(fields[1].present || (patch && fields[2].present))) {
    frond__http_error(x, 400, "BAD_REQUEST",
                      post         ? "body needs \"tag\" and \"step\""
                      : a->advance ? "body needs \"to\""
                                   : "body needs \"step\" or \"max\"",
                      NULL);
  } else if (fields[2].present && fields[2].num < 0) {
    frond__http_error(x, 400, "BAD_REQUEST",
                      "\"max\" is the highest ID the tag may issue, at "
                      "least 1 (0: no bound)",
                      NULL);
  } else if (post && frond_tag_validate(tag, strlen(tag), &jerr) != 0) {
    frond__http_error_code(x, FROND_ETAG_INVALID, &jerr);
  } else {
    if (post)
      memcpy(a->tag, tag, strlen(tag) + 1);
    r = 0;
  }
  free(tag);
  if (r != 0)
    return -1;
  a->step = a->to = fields[1].num;
  a->has_step = fields[1].present;
  a->max = fields[2].num;
  a->has_max = fields[2].present;
  a->start = fields[3].num;
  a->has_start = fields[3].present;
  a->has_desc = fields[4].present;
  a->increment = fields[5].present ? fields[5].num : 1;
  a->offset = fields[6].num;
  a->ordered = fields[7].num != 0;
  return 0;
}

/* /v1/tags (x->arg 0), /v1/tags/{tag} (1), POST /v1/tags/{tag}/advance
** (2): {"to": N}, the tag issues no ID below N from now on (after a
** restore of the store from a backup); never back. The route table has
** checked the method, the page the request came from, and the token. */
void frond__http_v1_tags(frond__http_ctx *x) {
  int m = x->req->method;
  admin_call a;
  frond__req r = {.op = FROND__REQ_STORE};
  memset(&a, 0, sizeof a);
  a.method = m;
  a.one = x->arg >= 1;
  a.advance = x->arg == 2;
  if ((a.one && frond__http_tag(x, a.tag) < 0) ||
      ((m == FROND__HTTP_POST || m == FROND__HTTP_PATCH) &&
       read_body(x, &a) != 0))
    return;
  a.x = *x;
  r.tag = a.tag;
  r.len = strlen(a.tag);
  r.change = m != FROND__HTTP_GET && m != FROND__HTTP_HEAD;
  r.how = &admin_how;
  r.ctx = &a;
  frond__req_run(x->c, &r);
  /* Answered at once (the call could not be queued): as x. */
  if (!x->c->held)
    *x = a.x;
}
