/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_decode.c -- the HTTP endpoints that split an ID into its fields:
**
**   GET /decodeSnowflakeId?snowflakeId=N   Leaf's, answered as Leaf does
**   GET /v1/decode/{s}[?format=name]       any ID or ID string
**
** /v1/decode answers the fields the request layer lists (req.c, from
** core/format_fields.c): a decimal snowflake ID the same fields as `frond
** decode` and ID.DECODE, a UUID, ULID, ObjectId, base62 or base32 string
** by its shape, and with ?format= the strings of that named format.
*/
#include "server/http.h"

#include "base/base.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void frond__http_leaf_decode(frond__http_ctx *x) {
  const char *v;
  size_t vl;
  int64_t id;
  frond_fields f;
  struct tm tm;
  time_t t;
  char body[256];
  int n;
  if ((v = frond__http_arg(x, "snowflakeId", &vl)) == NULL) {
    /* Spring answers a missing required parameter with 400. */
    frond__http_error(x, 400, "BAD_REQUEST", "parameter snowflakeId is missing",
                      NULL);
    return;
  }
  if (frond__parse_i64(v, vl, &id) != 0 ||
      frond_decode(&x->srv->layout, id, &f, NULL) != 0) {
    /* Leaf answers its own error map with status 200. */
    static const char msg[] = "{\"errorMsg\":\"snowflake Id反解析失败\"}";
    frond__http_respond(x, 200, "application/json", msg, sizeof msg - 1, NULL);
    return;
  }
  t = (time_t)(f.unix_ms >= 0 ? f.unix_ms / 1000 : (f.unix_ms - 999) / 1000);
  if (x->srv->cfg.leaf_time_zone == FROND__TZ_LOCAL)
    localtime_r(&t, &tm);
  else
    gmtime_r(&t, &tm);
  n = snprintf(body, sizeof body,
               "{\"timestamp\":\"%lld(%04d-%02d-%02d %02d:%02d:%02d.%03d)\","
               "\"workerId\":\"%llu\",\"sequenceId\":\"%llu\"}",
               (long long)f.unix_ms, tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
               (int)(((f.unix_ms % 1000) + 1000) % 1000),
               (unsigned long long)f.node, (unsigned long long)f.sequence);
  frond__http_respond(x, 200, "application/json", body, (size_t)n, NULL);
}

void frond__http_v1_decode(frond__http_ctx *x) {
  frond__field f[FROND__FIELDS_MAX];
  frond_error err = {0, ""};
  const frond__named_format *nf = NULL;
  const char *name;
  char in[FROND__FIELD_INPUT_MAX + 1], msg[160];
  size_t nl, n;
  int il, r;
  if ((name = frond__http_arg(x, "format", &nl)) != NULL &&
      (nf = frond__formats_find(x->srv, name, nl)) == NULL) {
    frond__http_error(x, 404, "FORMAT_NOT_FOUND",
                      frond__formats_missing(name, nl, msg, sizeof msg), NULL);
    return;
  }
  if ((il = frond__http_unescape(x->param, x->param_len, in, sizeof in - 1)) <
      0) {
    frond__http_error(x, 400, "ID_INVALID",
                      "bad percent-escape, or longer than any ID string", NULL);
    return;
  }
  if ((r = frond__req_decode(x->srv, nf, in, (size_t)il, f, &n, &err)) != 0)
    frond__http_error_code(x, r, &err);
  else
    frond__http_fields(x, f, n);
}
