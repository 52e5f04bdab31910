/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_formats.c -- the HTTP endpoints of ID formats:
**
**   GET /v1/format/{name}?count=N   strings of a named format (format.<name>)
**   GET /v1/uuid7, /v1/uuid4, /v1/ulid, /v1/objectid ?count=N
**   GET /v1/decode/{string}[?format=name]   any shape, or a named format
**
** Lists answer {"ids":["...",...]} (or one per line with format=text), as
** the other ID endpoints do: every ID a JSON string. A decoded string
** answers the fields `frond decode` prints (core/format_fields.c). A seq
** format's first use of a period is finished on the thread pool
** (formats.c), the connection held meanwhile.
*/
#include "server/http.h"

#include "base/base.h"
#include "server/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A format request finishing off the loop. */
typedef struct format_call {
  frond__format_call call; /* first */
  frond__http_ctx x;
  int text;
} format_call;

static void later_done(frond__format_call *call) {
  format_call *fc = (format_call *)(void *)call;
  frond__http_ctx *x = &fc->x;
  if (frond__conn_gone(x->c))
    ; /* the client went away */
  else if (call->rc != 0)
    frond__http_error_code(x, call->rc, &call->err);
  else
    frond__http_strings(x, call->out, call->n, call->nf->stride, fc->text);
  frond__conn_resume(x->c, !x->keep_alive);
  free(call->out);
  free(fc);
}

/* n strings of nf, answered now or (a period's first use, a tag to look
** up) once the thread pool has made them. */
static void issue(frond__http_ctx *x, const frond__named_format *nf) {
  frond_error err = {0, ""};
  format_call *fc;
  size_t n;
  int text, r;
  if ((n = frond__http_count(x)) == 0 || (text = frond__http_text(x)) < 0)
    return;
  r = frond__formats_next(x->w, nf, n, &err);
  if (r == 0) {
    frond__http_strings(x, x->w->strs.data, n, nf->stride, text);
    return;
  }
  if ((fc = calloc(1, sizeof *fc)) != NULL) {
    frond__http_ctx_keep(&fc->x, x);
    fc->text = text;
    fc->call.done = later_done;
    if (frond__formats_later(&fc->call, x->c, nf, n, r))
      return;
    free(fc);
  }
  frond__http_error_code(x, r, &err);
}

/* A path segment: the name after prefix, without a further '/'. NULL
** after answering 404. */
static const frond__named_format *named(frond__http_ctx *x, size_t prefix) {
  const char *s = x->req->target + prefix;
  size_t len = x->req->path_len - prefix;
  const frond__named_format *nf;
  char msg[160];
  if (len == 0 || memchr(s, '/', len) != NULL) {
    frond__http_error(x, 404, "NOT_FOUND", "no such path", NULL);
    return NULL;
  }
  if ((nf = frond__formats_find(x->srv, s, len)) == NULL)
    frond__http_error(x, 404, "FORMAT_NOT_FOUND",
                      frond__formats_missing(s, len, msg, sizeof msg), NULL);
  return nf;
}

void frond__http_v1_format(frond__http_ctx *x, size_t prefix) {
  const frond__named_format *nf;
  if (!frond__http_is_get(x))
    frond__http_not_allowed(x, "GET, HEAD");
  else if ((nf = named(x, prefix)) != NULL)
    issue(x, nf);
}

void frond__http_v1_builtin(frond__http_ctx *x, int which) {
  if (!frond__http_is_get(x))
    frond__http_not_allowed(x, "GET, HEAD");
  else
    issue(x, &x->srv->builtin[which]);
}

/* ------------------------------------------------------------- decoding */

static int decimal(const char *s, size_t len) {
  size_t i;
  for (i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return 0;
  return len >= 1 && len <= 19;
}

void frond__http_v1_decode_any(frond__http_ctx *x, size_t prefix) {
  const char *s = x->req->target + prefix;
  size_t len = x->req->path_len - prefix;
  frond__field f[FROND__FIELDS_MAX];
  frond_error err = {0, ""};
  frond__buf *b = &x->w->scratch;
  const frond__named_format *nf = NULL;
  const char *name;
  char in[FROND__FIELD_INPUT_MAX + 1], msg[160];
  size_t nl, n, i;
  int il, r;
  if (!frond__http_is_get(x)) {
    frond__http_not_allowed(x, "GET, HEAD");
    return;
  }
  if (frond__http_query(x->req->target, x->req->target_len, "format", &name,
                        &nl)) {
    if ((nf = frond__formats_find(x->srv, name, nl)) == NULL) {
      frond__http_error(x, 404, "FORMAT_NOT_FOUND",
                        frond__formats_missing(name, nl, msg, sizeof msg),
                        NULL);
      return;
    }
  } else if (decimal(s, len)) {
    frond__http_v1_decode(x, prefix); /* the classic answer */
    return;
  }
  if ((il = frond__http_unescape(s, len, in, sizeof in - 1)) < 0) {
    frond__http_error(x, 400, "ID_INVALID",
                      "bad percent-escape, or longer than any ID string", NULL);
    return;
  }
  if ((r = frond__formats_decode(x->srv, nf, in, (size_t)il, f, &n, &err)) !=
      0) {
    frond__http_error_code(x, r, &err);
    return;
  }
  b->len = 0;
  for (i = 0; i < n; i++) {
    frond__buf_printf(b, "%s\"%s\":", i == 0 ? "{" : ",", f[i].name);
    if (f[i].is_num) {
      frond__buf_printf(b, "%lld", (long long)f[i].num);
    } else {
      frond__buf_append(b, "\"", 1);
      frond__json_append(b, f[i].str, strlen(f[i].str));
      frond__buf_append(b, "\"", 1);
    }
  }
  if (frond__buf_append(b, "}\n", 2) != 0) {
    frond__http_error(x, 500, "NOMEM", "out of memory", NULL);
    return;
  }
  frond__http_respond(x, 200, "application/json", b->data, b->len, NULL);
}
