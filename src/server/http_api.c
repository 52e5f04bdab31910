/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_api.c -- the HTTP endpoints of IDs and ID strings (Leaf's paths,
** /v1's IDs, ranges and formats), the layout, health, /metrics and the
** status page.
**
** An ID endpoint reads its arguments (http_args.c) into a frond__req and
** hands it to the request layer (req.c), which issues from memory on the
** loop or finishes the request off it; either way it is answered here,
** by ids_how. Lists answer {"ids":["...",...]} (one per line as text),
** every ID a JSON string, so that JavaScript reads it exactly.
*/
#include "server/http.h"

#include "base/base.h"
#include "base/escape.h"
#include "coord/coord.h"
#include "server/ready.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------- through req.c */

/* Leaf's error answer: its code (-1 not initialised or clock behind, -2
** a tag it does not know, -3 anything else), and Frond's name; a quota's
** refusal is 429 with its Retry-After, as on /v1. */
static void leaf_fail(frond__http_ctx *x, int leaf_code, int code) {
  char body[64], extra[112], retry[48];
  const char *ra = frond__http_retry_after(code, retry, sizeof retry);
  int n =
      snprintf(body, sizeof body, "Result{id=%d, status=EXCEPTION}", leaf_code);
  snprintf(extra, sizeof extra, "Frond-Error: %s\r\n%s", frond_err_name(code),
           ra != NULL ? ra : "");
  frond__http_respond(x, code == FROND_EQUOTA_EXCEEDED ? 429 : 500,
                      "text/plain;charset=UTF-8", body, (size_t)n, extra);
}

static void leaf_answer(frond__http_ctx *x, const frond__req *r) {
  char num[FROND__DEC_MAX];
  if (r->rc == FROND_ECLOCK_BEHIND)
    leaf_fail(x, -1, r->rc);
  else if (r->rc == FROND_ETAG_NOT_FOUND || r->rc == FROND_ETAG_INVALID)
    leaf_fail(x, -2, r->rc);
  else if (r->rc != 0)
    leaf_fail(x, -3, r->rc);
  else
    frond__http_respond(x, 200, "text/plain;charset=UTF-8", num,
                        frond__dec_u64(num, (uint64_t)r->ids[0]), NULL);
}

/* {"tag":"orders","start":"1001","end":"2001","count":1000}: the range
** [start, end); IDs as strings, as everywhere in /v1. Text: "1001 2001"
** (start, end). */
static void range_answer(frond__http_ctx *x, const frond__req *r) {
  char esc[FROND_TAG_MAX * 6 + 1], a[FROND__DEC_MAX + 1], e[FROND__DEC_MAX + 1];
  char hdr[FROND__STORE_ID_LEN + 24];
  const char *store = frond__store_id(x->srv);
  frond__buf *b = &x->w->scratch;
  a[frond__dec_i64(a, r->start)] = '\0';
  e[frond__dec_i64(e, r->start + (int64_t)r->n)] = '\0';
  b->len = 0;
  if (x->text) {
    frond__buf_printf(b, "%s %s\n", a, e);
  } else {
    frond__json_escape(r->tag, r->len, esc, sizeof esc);
    frond__buf_printf(b,
                      "{\"tag\":\"%s\",\"start\":\"%s\",\"end\":\"%s\","
                      "\"count\":%lld%s%s%s}\n",
                      esc, a, e, (long long)r->n, store ? ",\"store\":\"" : "",
                      store ? store : "", store ? "\"" : "");
  }
  /* The store's identity, which a client listing several servers checks
  ** (store_id.c), in the text answer's head too. */
  if (store != NULL)
    snprintf(hdr, sizeof hdr, "Frond-Store: %s\r\n", store);
  frond__http_respond(x, 200, x->text ? "text/plain" : "application/json",
                      b->data, b->len, store != NULL ? hdr : NULL);
}

static void answer(const frond__req *r, void *ctx) {
  frond__http_ctx *x = ctx;
  if (x->leaf)
    leaf_answer(x, r);
  else if (r->rc != 0)
    frond__http_error_code(x, r->rc, &r->err);
  else if (r->op == FROND__REQ_RANGE)
    range_answer(x, r);
  else if (r->op == FROND__REQ_FORMAT)
    frond__http_strings(x, r->strs, r->n, r->nf->stride,
                        r->nf->kind != FROND_FORMAT_DECIMAL);
  else
    frond__http_ids(x, r->ids, r->n);
}

static void keep(void *ctx) {
  frond__http_ctx *x = ctx;
  x->req = NULL;
  x->body = NULL;
  x->body_len = 0;
  x->param = NULL;
  x->param_len = 0;
}

static int done(const frond__req *r, void *ctx, int gone) {
  (void)r;
  (void)gone;
  return !((frond__http_ctx *)ctx)->keep_alive;
}

static const frond__req_how ids_how = {sizeof(frond__http_ctx), keep, answer,
                                       done, NULL};

/* Serve r, unless an argument was refused (answered). */
static void run(frond__http_ctx *x, frond__req *r) {
  r->how = &ids_how;
  r->ctx = x;
  frond__req_run(x->c, r);
}

/* ---------------------------------------------------------------- Leaf */

void frond__http_leaf_snowflake(frond__http_ctx *x) {
  frond__req r = {.op = FROND__REQ_SNOWFLAKE, .n = 1};
  x->leaf = 1;
  run(x, &r);
}

void frond__http_leaf_segment(frond__http_ctx *x) {
  char tag[FROND_TAG_MAX + 1];
  frond__req r = {.op = FROND__REQ_SEGMENT, .tag = tag, .n = 1};
  int n = frond__http_unescape(x->param, x->param_len, tag, FROND_TAG_MAX);
  x->leaf = 1;
  if (n < 0) {
    leaf_fail(x, -2, FROND_ETAG_INVALID);
    return;
  }
  if (atomic_load(&x->srv->seg) == NULL) { /* Leaf: "not initialised" */
    leaf_fail(x, -1, FROND_ESEGMENT_UNAVAILABLE);
    return;
  }
  r.len = (size_t)n;
  run(x, &r);
}

/* ------------------------------------------------------------------ v1 */

void frond__http_v1_snowflake(frond__http_ctx *x) {
  frond__req r = {.op = FROND__REQ_SNOWFLAKE};
  if (frond__http_count(x, &r) == 0 && frond__http_as(x) == 0)
    run(x, &r);
}

/* /v1/segment/{tag} and /v1/segment/{tag}/range. */
static void segment(frond__http_ctx *x, int op) {
  char tag[FROND_TAG_MAX + 1];
  frond__req r = {.op = op, .tag = tag};
  int tl;
  if ((tl = frond__http_tag(x, tag)) < 0 || frond__http_count(x, &r) != 0 ||
      frond__http_as(x) != 0)
    return;
  r.len = (size_t)tl;
  r.forwarded = x->req->forwarded;
  run(x, &r);
}

void frond__http_v1_segment(frond__http_ctx *x) {
  segment(x, FROND__REQ_SEGMENT);
}

void frond__http_v1_segment_range(frond__http_ctx *x) {
  segment(x, FROND__REQ_RANGE);
}

/* n strings of nf; ?key=: the caller's key of a shard= format. */
/* The key is percent-decoded, '+' a space, as a query string means: its
** bytes, not their spelling, choose the shard, the same bytes RESP and
** frond next --shard-key hash. */
static void strings(frond__http_ctx *x, const frond__named_format *nf) {
  frond__req r = {.op = FROND__REQ_FORMAT, .nf = nf};
  char key[FROND_SHARD_KEY_MAX];
  char msg[96];
  size_t kl;
  int n = 0;
  const char *k = frond__http_arg(x, "key", &kl);
  if (k != NULL &&
      (n = frond__http_unescape_query(k, kl, key, sizeof key)) <= 0) {
    snprintf(msg, sizeof msg,
             "key is 1 to %d bytes once decoded, with valid %%-escapes",
             FROND_SHARD_KEY_MAX);
    frond__http_error(x, 400, "INVAL", msg, NULL);
    return;
  }
  r.tag = k != NULL ? key : NULL;
  r.len = (size_t)n;
  if (frond__http_count(x, &r) == 0 && frond__http_as(x) == 0)
    run(x, &r);
}

void frond__http_v1_format(frond__http_ctx *x) {
  const frond__named_format *nf;
  char msg[160];
  if ((nf = frond__formats_find(x->srv, x->param, x->param_len)) == NULL)
    frond__http_error(
        x, 404, "FORMAT_NOT_FOUND",
        frond__formats_missing(x->param, x->param_len, msg, sizeof msg), NULL);
  else
    strings(x, nf);
}

void frond__http_v1_builtin(frond__http_ctx *x) {
  strings(x, &x->srv->builtin[x->arg]);
}

/* ------------------------------------------------------------ layout */

void frond__http_v1_layout(frond__http_ctx *x) {
  const frond_layout *l = &x->srv->layout;
  const char *store = frond__store_id(x->srv);
  char spec[160], end[40], served[160] = "";
  frond__buf *b = &x->w->scratch;
  uint64_t lo, hi;
  const char *scope = frond__coord_served(x->srv->coord, &lo, &hi, NULL);
  /* What the coordinator serves: the node IDs this node's came from. */
  if (scope)
    snprintf(served, sizeof served,
             ",\"served\":\"%s\",\"served_nodes\":[%llu,%llu]", scope,
             (unsigned long long)lo, (unsigned long long)hi);
  frond_layout_format(l, spec, sizeof spec);
  frond__format_rfc3339(frond_layout_end_ms(l), end, sizeof end);
  b->len = 0;
  frond__buf_printf(
      b,
      "{\"name\":\"%s\",\"spec\":\"%s\",\"time_bits\":%u,\"node_bits\":%u,"
      "\"dc_bits\":%u,\"worker_bits\":%u,\"seq_bits\":%u,\"unit_ms\":%lld,"
      "\"epoch_ms\":%lld,\"end\":\"%s\",\"ids_per_second\":%.0f,"
      "\"node\":%llu,\"max_range\":%lld%s%s%s%s}\n",
      l->name, spec, l->time_bits, l->node_bits, l->dc_bits, l->worker_bits,
      l->seq_bits, (long long)l->unit_ms, (long long)l->epoch_ms, end,
      frond_layout_ids_per_second(l), (unsigned long long)x->srv->node,
      (long long)x->srv->cfg.max_range, store ? ",\"store\":\"" : "",
      store ? store : "", store ? "\"" : "", served);
  frond__http_respond(x, 200, "application/json", b->data, b->len, NULL);
}

/* -------------------------------------------------------------- health */

static void plain(frond__http_ctx *x, int status, const char *text) {
  frond__http_respond(x, status, "text/plain", text, strlen(text), NULL);
}

void frond__http_livez(frond__http_ctx *x) {
  plain(x, 200, "ok\n");
}

/* ?kind=snowflake|segment: that kind alone (ready.c); none: every kind
** configured. */
void frond__http_readyz(frond__http_ctx *x) {
  frond__buf *b = &x->w->scratch;
  char name[16];
  size_t vl = 0;
  const char *v = frond__http_arg(x, "kind", &vl);
  int kind = -1, status, n;
  if (v != NULL) {
    /* Percent-decoded as every query value; one kind, never the first of
    ** several (a load balancer would be told about a kind it did not ask
    ** for). */
    n = frond__http_unescape_query(v, vl, name, sizeof name);
    if (frond__http_arg_count(x, "kind") > 1) {
      frond__http_error(x, 400, "BAD_REQUEST", "kind is given more than once",
                        NULL);
      return;
    }
    if (n < 0 || (kind = frond__ready_kind_parse(name, (size_t)n)) < 0) {
      frond__http_error(x, 400, "BAD_REQUEST",
                        "kind must be snowflake or segment", NULL);
      return;
    }
  }
  b->len = 0;
  status = frond__ready_body(x->srv, kind, b);
  frond__http_respond(x, status, "text/plain", b->data, b->len, NULL);
}

/* --------------------------------------------------------------- pages */

void frond__http_metrics(frond__http_ctx *x) {
  frond__buf *b = &x->w->scratch;
  b->len = 0;
  frond__metrics_render(x->srv, b);
  frond__http_respond(x, 200, "text/plain; version=0.0.4", b->data, b->len,
                      NULL);
}

void frond__http_status_page(frond__http_ctx *x) {
  frond__buf *b = &x->w->scratch;
  b->len = 0;
  frond__status_render(x->srv, b, x->req->target, x->req->target_len);
  frond__http_respond(x, 200, "text/html; charset=utf-8", b->data, b->len,
                      "Cache-Control: no-store\r\n");
}
