/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_args.c -- what an HTTP request says beside its path: the route's
** path parameter as a tag, ?count=, and how ID lists are answered
** (?format=json|text; on the decode endpoints ?format= names an ID
** format, and is not read here).
*/
#include "server/http.h"

#include "base/base.h"

#include <string.h>

const char *frond__http_arg(const frond__http_ctx *x, const char *key,
                            size_t *len) {
  const char *v;
  if (!frond__http_query(x->req->target, x->req->target_len, key, &v, len))
    return NULL;
  return v;
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

int frond__http_as(frond__http_ctx *x) {
  const char *v;
  size_t vl;
  x->text = 0;
  if ((v = frond__http_arg(x, "format", &vl)) == NULL)
    return 0;
  if (vl == 4 && memcmp(v, "json", 4) == 0)
    return 0;
  if (vl == 4 && memcmp(v, "text", 4) == 0) {
    x->text = 1;
    return 0;
  }
  frond__http_error(x, 400, "BAD_REQUEST", "format must be json or text", NULL);
  return -1;
}
