/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp_formats.c -- the ID format commands of the Redis protocol front:
**
**   ID.FORMAT <name> [count [key]] strings of a named format (format.<name>);
**                                  key: the caller's, for a shard= format
**   ID.ORDER <name> [count]        the same, for an order format only
**   ID.UUID [v7|v4] [count]        UUIDs, version 7 unless v4 is asked
**   ID.ULID [count], ID.OBJECTID [count]
**   ID.DECODE <id> [format]        a decimal snowflake ID, any other
**                                  shape, or a named format
**
** Every batch answers an array of bulk strings, one string per ID; a
** decoded string answers field/value pairs, flat, as HGETALL does under
** RESP2, with the fields `frond decode` prints. Batches are served by the
** request layer (req.c): a seq format's first use of a period finishes on
** the thread pool.
*/
#include "server/resp_shared.h"

#include "base/base.h"

#include <stdlib.h>
#include <string.h>

/* n strings of nf, the count in argv[i], the caller's key (of a shard=
** format) in argv[i + 1] when given. */
static void issue(frond__resp_ctx *x, const frond__named_format *nf, size_t i) {
  frond__req r = {.op = FROND__REQ_FORMAT, .nf = nf};
  if (x->argc > i + 1) {
    const frond__resp_arg *k = &x->argv[i + 1];
    if (k->len == 0 || k->len > FROND_SHARD_KEY_MAX) {
      frond__resp_error(x, "INVAL", "key is 1 to %d bytes",
                        FROND_SHARD_KEY_MAX);
      return;
    }
    r.tag = k->p;
    r.len = k->len;
  }
  if (frond__resp_count_arg(x, &r, i) == 0)
    frond__resp_run(x, &r);
}

/* The format named by argv[1]; NULL after an error reply. */
static const frond__named_format *named(frond__resp_ctx *x) {
  const frond__resp_arg *a = &x->argv[1];
  const frond__named_format *nf = frond__formats_find(x->srv, a->p, a->len);
  char msg[160];
  if (nf == NULL)
    frond__resp_error(x, "FORMAT_NOT_FOUND", "%s",
                      frond__formats_missing(a->p, a->len, msg, sizeof msg));
  return nf;
}

void frond__resp_cmd_id_format(frond__resp_ctx *x) {
  const frond__named_format *nf = named(x);
  if (nf != NULL)
    issue(x, nf, 2);
}

void frond__resp_cmd_id_order(frond__resp_ctx *x) {
  const frond__named_format *nf = named(x);
  if (nf == NULL)
    return;
  if (nf->kind != FROND_FORMAT_ORDER) {
    frond__resp_error(x, frond_err_name(FROND_EFORMAT_INVALID),
                      "format '%s' is a %s format, not order: ID.FORMAT %s "
                      "issues it",
                      nf->name, frond_format_kind_name(nf->kind), nf->name);
    return;
  }
  issue(x, nf, 2);
}

void frond__resp_cmd_id_uuid(frond__resp_ctx *x) {
  int which = FROND__BUILTIN_UUID7;
  size_t i = 1;
  if (x->argc > 1 && frond__resp_arg_is(&x->argv[1], "v7"))
    i = 2;
  else if (x->argc > 1 && frond__resp_arg_is(&x->argv[1], "v4")) {
    which = FROND__BUILTIN_UUID4;
    i = 2;
  } else if (x->argc == 3 ||
             (x->argc == 2 && !frond__resp_arg_digits(&x->argv[1]))) {
    frond__resp_error(x, "ERR", "syntax error: ID.UUID [v7|v4] [count]");
    return;
  }
  issue(x, &x->srv->builtin[which], i);
}

void frond__resp_cmd_id_ulid(frond__resp_ctx *x) {
  issue(x, &x->srv->builtin[FROND__BUILTIN_ULID], 1);
}

void frond__resp_cmd_id_objectid(frond__resp_ctx *x) {
  issue(x, &x->srv->builtin[FROND__BUILTIN_OBJECTID], 1);
}

/* ID.DECODE <id> [format]: field/value pairs, a map in RESP3 and flat as
** HGETALL answers under RESP2, the fields the request layer lists (req.c):
** a decimal snowflake ID as `frond decode` and /v1/decode show it, any
** other string by its shape or as the named format's. IDs are bulk
** strings, as in every ID.* reply; the other numbers integers. */
void frond__resp_cmd_id_decode(frond__resp_ctx *x) {
  const frond__resp_arg *a = &x->argv[1];
  const frond__named_format *nf = NULL;
  frond__field f[FROND__FIELDS_MAX];
  frond_error err = {0, ""};
  size_t n, i;
  int r;
  if (x->argc == 3) {
    const frond__resp_arg *name = &x->argv[2];
    char msg[160];
    if ((nf = frond__formats_find(x->srv, name->p, name->len)) == NULL) {
      frond__resp_error(
          x, "FORMAT_NOT_FOUND", "%s",
          frond__formats_missing(name->p, name->len, msg, sizeof msg));
      return;
    }
  }
  if ((r = frond__req_decode(x->srv, nf, a->p, a->len, f, &n, &err)) != 0) {
    frond__resp_lib_error(x, r, &err);
    return;
  }
  frond__resp_map(x, (int64_t)n);
  for (i = 0; i < n; i++) {
    frond__resp_cstr(x, f[i].name);
    if (f[i].is_num)
      frond__resp_int(x, f[i].num);
    else
      frond__resp_cstr(x, f[i].str);
  }
}
