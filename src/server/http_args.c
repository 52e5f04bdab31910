/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_args.c -- what an HTTP request says beside its path: the route's
** path parameter as a tag, ?count=, and how ID lists are answered.
**
** The output of an ID list is chosen by ?as=json|text, or by an Accept
** header whose first choice is text/plain; JSON otherwise. ?format=json|text
** is the old spelling of ?as=, deprecated and still accepted (on the
** decode endpoints ?format= names an ID format, and is not read here): the
** first request that uses it logs one warning naming the replacement.
*/
#include "server/http.h"

#include "base/base.h"

#include <stdatomic.h>
#include <string.h>
#include <strings.h>

const char *frond__http_arg(const frond__http_ctx *x, const char *key,
                            size_t *len) {
  const char *v;
  if (!frond__http_query(x->req->target, x->req->target_len, key, &v, len))
    return NULL;
  return v;
}

int frond__http_arg_count(const frond__http_ctx *x, const char *key) {
  const char *t = x->req->target, *end = t + x->req->target_len;
  const char *q = memchr(t, '?', x->req->target_len), *v;
  size_t vl;
  int n = 0;
  if (q == NULL)
    return 0;
  for (q++;
       q <= end && frond__http_query_params(q, (size_t)(end - q), key, &v, &vl);
       q = v + vl + 1)
    n++;
  return n;
}

int frond__http_tag(frond__http_ctx *x, char *tag) {
  frond_error err = {0, ""};
  int n = frond__http_unescape(x->param, x->param_len, tag, FROND_TAG_MAX);
  if (n < 0) {
    frond__http_error(x, 400, "TAG_INVALID",
                      "bad percent-escape or tag too long", NULL);
    return -1;
  }
  tag[n] = '\0';
  if (frond_tag_validate(tag, (size_t)n, &err) != 0) {
    frond__http_error_code(x, err.code ? err.code : FROND_ETAG_INVALID, &err);
    return -1;
  }
  return n;
}

int frond__http_count(frond__http_ctx *x, frond__req *r) {
  size_t vl = 0;
  const char *v = frond__http_arg(x, "count", &vl);
  if (frond__req_count(r, x->srv, v, vl) == 0)
    return 0;
  frond__http_error_code(x, r->rc, &r->err);
  return -1;
}

/* json: 0, text: 1, else -1. */
static int json_or_text(const char *v, size_t vl) {
  if (vl == 4 && memcmp(v, "json", 4) == 0)
    return 0;
  if (vl == 4 && memcmp(v, "text", 4) == 0)
    return 1;
  return -1;
}

static atomic_int format_warned;

int frond__http_as(frond__http_ctx *x) {
  const frond__http_header *h;
  const char *v;
  size_t vl;
  if ((v = frond__http_arg(x, "as", &vl)) != NULL) {
    if ((x->text = json_or_text(v, vl)) >= 0)
      return 0;
    frond__http_error(x, 400, "BAD_REQUEST", "as must be json or text", NULL);
    return -1;
  }
  if ((v = frond__http_arg(x, "format", &vl)) != NULL) {
    if ((x->text = json_or_text(v, vl)) < 0) {
      frond__http_error(x, 400, "BAD_REQUEST", "format must be json or text",
                        NULL);
      return -1;
    }
    /* Read before written: the line is shared by every worker. */
    if (atomic_load_explicit(&format_warned, memory_order_relaxed) == 0 &&
        atomic_exchange(&format_warned, 1) == 0)
      frond_log(FROND_LOG_WARN,
                "http: the query parameter format=json|text is deprecated: "
                "use as=json|text (or Accept: text/plain) instead");
    return 0;
  }
  /* Accept: the first media range, parameters and case aside. */
  h = frond__http_header_find(x->req, "accept");
  x->text = h != NULL && h->value_len >= 10 &&
            strncasecmp(h->value, "text/plain", 10) == 0 &&
            (h->value_len == 10 || memchr(" \t;,", h->value[10], 4) != NULL);
  return 0;
}
