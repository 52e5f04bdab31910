/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_admin.c -- /v1/tags: create, list, read, re-step, delete and
** advance the segment tags in the store.
**
** A store call takes as long as the database takes (a PostgreSQL round
** trip, a lock wait), so none runs on an event loop: the request is
** checked and its body read on the loop, the call runs on libuv's thread
** pool (uv_queue_work), and the completion callback, back on the loop,
** writes the answer. The connection is held meanwhile (frond__conn_hold):
** requests pipelined behind the call wait for it, in order, and a client
** that goes away leaves the connection allocated until the completion has
** found it gone. Calls share one store connection, one at a time
** (store_lock). A drain waits for calls in flight: a loop does not end
** while work it queued is pending.
*/
#include "server/http.h"

#include "base/base.h"
#include "server/json.h"

#include <stdlib.h>
#include <string.h>

typedef struct admin_call {
  uv_work_t work;
  frond__http_ctx x; /* a copy: the request's views are gone by the answer */
  int method;
  int one;     /* /v1/tags/{tag} */
  int advance; /* POST /v1/tags/{tag}/advance */
  char tag[FROND_TAG_MAX + 1];
  char desc[257];
  int64_t step, start, to;
  int has_start, has_desc;
  /* Written by the pool thread, read by the completion. */
  int rc;
  int status;
  frond_error err;
  frond__buf body;
} admin_call;

/* Constant-time comparison of the bearer token. 1 when authorized. The
** scheme is case-insensitive and followed by one or more spaces (RFC 9110
** 11.1, 11.4). */
static int authorized(frond__http_ctx *x) {
  const char *tok = x->srv->cfg.admin_token;
  size_t tl = strlen(tok), i, sp = 6;
  const frond__http_header *h;
  unsigned char diff = 0;
  if (tl == 0)
    return 1;
  h = frond__http_header_find(x->req, "authorization");
  if (h != NULL)
    while (sp < h->value_len && h->value[sp] == ' ')
      sp++;
  if (h == NULL || sp == 6 || !frond__http_eq_nocase(h->value, 6, "bearer") ||
      h->value_len - sp != tl)
    diff = 1;
  else
    for (i = 0; i < tl; i++)
      diff |= (unsigned char)(h->value[sp + i] ^ tok[i]);
  if (diff != 0) {
    frond__http_error(x, 401, "UNAUTHORIZED",
                      "this endpoint needs Authorization: Bearer <admin_token>",
                      "WWW-Authenticate: Bearer\r\n");
    return 0;
  }
  return 1;
}

static void tag_json(frond__buf *b, const frond_tag_row *r) {
  frond__buf_printf(b, "{\"tag\":\"");
  frond__json_append(b, r->tag, strlen(r->tag));
  frond__buf_printf(b, "\",\"max_id\":%lld,\"step\":%lld,\"description\":\"",
                    (long long)r->max_id, (long long)r->step);
  frond__json_append(b, r->description, strlen(r->description));
  frond__buf_printf(b, "\",\"update_time\":\"%s\"}", r->update_time);
}

/* The store call itself, on a pool thread with store_lock held. */
static int call_store(admin_call *a, frond_store *st) {
  frond__buf *b = &a->body;
  frond_tag_row row;
  int r;
  switch (a->method) {
  case FROND__HTTP_GET:
  case FROND__HTTP_HEAD:
    if (a->one) {
      if ((r = frond_store_tag_get(st, a->tag, &row, &a->err)) == 0)
        tag_json(b, &row);
    } else {
      frond_tag_row *rows = NULL;
      size_t n = 0, i;
      if ((r = frond_store_tag_list(st, &rows, &n, &a->err)) != 0)
        return r;
      frond__buf_printf(b, "{\"tags\":[");
      for (i = 0; i < n; i++) {
        if (i > 0)
          frond__buf_append(b, ",", 1);
        tag_json(b, &rows[i]);
      }
      frond__buf_printf(b, "]}");
      frond_free(rows);
    }
    return r;
  case FROND__HTTP_POST:
    if (a->advance) {
      r = frond_store_tag_advance(st, a->tag, a->to, &a->err);
      break;
    }
    /* Without a start, at the name's floor (1 unless it was deleted). */
    a->status = 201;
    r = frond_store_tag_create(st, a->tag, a->step, a->has_start ? a->start : 0,
                               a->has_desc ? a->desc : "", &a->err);
    break;
  case FROND__HTTP_PATCH:
    r = frond_store_tag_set_step(st, a->tag, a->step, &a->err);
    break;
  default:
    return frond_store_tag_delete(st, a->tag, &a->err);
  }
  /* POST and PATCH answer with the row as it is now. */
  if (r == 0 && (r = frond_store_tag_get(st, a->tag, &row, &a->err)) == 0)
    tag_json(b, &row);
  return r;
}

static void admin_work(uv_work_t *w) {
  admin_call *a = w->data;
  frond__server *srv = a->x.srv;
  frond_seg *seg;
  int r;
  a->status = 200;
  pthread_mutex_lock(&srv->store_lock);
  if ((r = frond__store_conn(srv, &a->err)) == 0)
    r = call_store(a, srv->store_conn);
  frond__store_conn_check(srv, r);
  pthread_mutex_unlock(&srv->store_lock);
  a->rc = r;
  /* A change shows in the allocator at once, not at its next refresh: the
  ** one row is read again (not the whole list, which may be long). */
  if (r == 0 && a->method != FROND__HTTP_GET && a->method != FROND__HTTP_HEAD &&
      (seg = atomic_load(&srv->seg)) != NULL)
    (void)frond_seg_refresh_tag(seg, a->tag, strlen(a->tag), NULL);
}

/* A change to a tag is an operator's act: one log line each, made or
** not, with the request's fields (method, path, client, tag, and the
** status answered unless the client went away first). Reads are not
** logged. */
static void admin_log(admin_call *a) {
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
  if (a->rc == 0)
    frond__log_fields(FROND_LOG_INFO, f, n, "tag \"%s\" %s", a->tag, did[i]);
  else
    frond__log_fields(FROND_LOG_WARN, f, n, "tag \"%s\" not %s: %s: %s", a->tag,
                      did[i], frond_err_name(a->rc),
                      a->err.code ? a->err.message : frond_strerror(a->rc));
}

static void admin_done(uv_work_t *w, int status) {
  admin_call *a = w->data;
  frond__http_ctx *x = &a->x;
  if (status != 0) /* cancelled: the call never ran */
    a->rc = frond__fail(&a->err, FROND_ECLOSED, "%s", uv_strerror(status));
  if (frond__conn_gone(x->c)) {
    /* The client went away; the change, if any, is made all the same. */
  } else if (a->rc != 0) {
    frond__http_error_code(x, a->rc, &a->err);
  } else if (a->method == FROND__HTTP_DELETE) {
    frond__http_respond(x, 204, "application/json", "", 0, NULL);
  } else {
    frond__buf_append(&a->body, "\n", 1);
    frond__http_respond(x, a->status, "application/json", a->body.data,
                        a->body.len, NULL);
  }
  admin_log(a);
  frond__conn_resume(x->c, !x->keep_alive);
  frond__buf_free(&a->body);
  free(a);
}

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

/* Read the body of a POST (tag, step, start, description), a PATCH
** (step) or an advance (to) into a. 0, or -1 after answering 415 or 400.
** The tag is read whole (it cannot be longer than the body) and checked
** as a tag, so that a long one is TAG_INVALID here as on the other paths. */
static int read_body(frond__http_ctx *x, admin_call *a) {
  frond_error jerr = {0, ""};
  int post = a->method == FROND__HTTP_POST && !a->advance;
  char *tag = malloc(x->body_len + 1);
  frond__json_field fields[4] = {
      {"tag", FROND__JSON_STR, tag, x->body_len + 1, 0, 0},
      {a->advance ? "to" : "step", FROND__JSON_INT, NULL, 0, 0, 0},
      {"start", FROND__JSON_INT, NULL, 0, 0, 0},
      {"description", FROND__JSON_STR, a->desc, sizeof a->desc, 0, 0},
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
                              post ? 4 : 1, &jerr) != 0) {
    frond__http_error(x, 400, "BAD_REQUEST", jerr.message, NULL);
  } else if ((post && !fields[0].present) || !fields[1].present) {
    frond__http_error(x, 400, "BAD_REQUEST",
                      post         ? "body needs \"tag\" and \"step\""
                      : a->advance ? "body needs \"to\""
                                   : "body needs \"step\"",
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
  a->start = fields[2].num;
  a->has_start = fields[2].present;
  a->has_desc = fields[3].present;
  return 0;
}

void frond__http_v1_tags(frond__http_ctx *x, size_t prefix, int one) {
  int m = x->req->method, r;
  admin_call *a;
  if (one && m != FROND__HTTP_GET && m != FROND__HTTP_HEAD &&
      m != FROND__HTTP_PATCH && m != FROND__HTTP_DELETE) {
    frond__http_not_allowed(x, "GET, HEAD, PATCH, DELETE");
    return;
  }
  if (!one && !frond__http_is_get(x) && m != FROND__HTTP_POST) {
    frond__http_not_allowed(x, "GET, HEAD, POST");
    return;
  }
  if ((a = calloc(1, sizeof *a)) == NULL) {
    frond__http_error_code(x, FROND_ENOMEM, NULL);
    return;
  }
  a->method = m;
  a->one = one;
  if ((one && frond__http_path_tag(x, prefix, a->tag) < 0) ||
      (!frond__http_is_get(x) && !authorized(x)) ||
      ((m == FROND__HTTP_POST || m == FROND__HTTP_PATCH) &&
       read_body(x, a) != 0)) {
    free(a);
    return;
  }
  frond__http_ctx_keep(&a->x, x);
  a->work.data = a;
  if ((r = uv_queue_work(&x->w->loop, &a->work, admin_work, admin_done)) != 0) {
    frond__http_error(x, 503, "CLOSED", uv_strerror(r), NULL);
    free(a);
    return;
  }
  frond__conn_hold(x->c);
}

/* POST /v1/tags/{tag}/advance, {"to": N}: the tag issues no ID below N
** from now on (after a restore of the store from a backup); never back. */
void frond__http_v1_tag_advance(frond__http_ctx *x, size_t prefix, size_t end) {
  admin_call *a;
  int r;
  if (x->req->method != FROND__HTTP_POST) {
    frond__http_not_allowed(x, "POST");
    return;
  }
  if ((a = calloc(1, sizeof *a)) == NULL) {
    frond__http_error_code(x, FROND_ENOMEM, NULL);
    return;
  }
  a->method = FROND__HTTP_POST;
  a->one = a->advance = 1;
  if (frond__http_tag_between(x, prefix, end, a->tag) < 0 || !authorized(x) ||
      read_body(x, a) != 0) {
    free(a);
    return;
  }
  frond__http_ctx_keep(&a->x, x);
  a->work.data = a;
  if ((r = uv_queue_work(&x->w->loop, &a->work, admin_work, admin_done)) != 0) {
    frond__http_error(x, 503, "CLOSED", uv_strerror(r), NULL);
    free(a);
    return;
  }
  frond__conn_hold(x->c);
}
