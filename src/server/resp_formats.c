/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp_formats.c -- the ID format commands of the Redis protocol front:
**
**   ID.FORMAT <name> [count]       strings of a named format (format.<name>)
**   ID.ORDER <name> [count]        the same, for an order format only
**   ID.UUID [v7|v4] [count]        UUIDs, version 7 unless v4 is asked
**   ID.ULID [count], ID.OBJECTID [count]
**   ID.DECODE <string> [format]    (beside a decimal snowflake ID) any
**                                  shape, or a named format
**
** Every batch answers an array of bulk strings, one string per ID; a
** decoded string answers field/value pairs, flat, as HGETALL does under
** RESP2, with the fields `frond decode` prints. A seq format's first use
** of a period finishes on the thread pool (formats.c).
*/
#include "server/resp.h"

#include "base/base.h"

#include <stdlib.h>
#include <string.h>

/* Parse argv[i] as a count in [1, max_count] (1 when absent); 0 after an
** error reply. */
static size_t count_arg(frond__resp_ctx *x, size_t i) {
  int64_t n;
  if (i >= x->argc)
    return 1;
  if (frond__parse_i64(x->argv[i].p, x->argv[i].len, &n) != 0 || n < 1 ||
      n > x->srv->cfg.max_count) {
    frond__resp_error(x, "COUNT_INVALID",
                      "count must be an integer in [1, %lld]",
                      (long long)x->srv->cfg.max_count);
    return 0;
  }
  return (size_t)n;
}

/* A command finishing off the loop. */
typedef struct format_call {
  frond__format_call call; /* first */
  frond__resp_ctx x;
} format_call;

static void later_done(frond__format_call *call) {
  format_call *fc = (format_call *)(void *)call;
  frond__resp_ctx *x = &fc->x;
  if (!frond__conn_gone(x->c)) {
    if (call->rc != 0)
      frond__resp_lib_error(x, call->rc, &call->err);
    else
      frond__resp_strings(x, call->out, call->n, call->nf->stride);
  }
  /* Counted now that its result is known (execute skipped it). */
  FROND__INC(FROND__RESP_STATS(x)->commands[x->cmd][x->failed], 1);
  frond__conn_resume(x->c, x->close);
  free(call->out);
  free(fc);
}

static void issue(frond__resp_ctx *x, const frond__named_format *nf, size_t n) {
  frond_error err = {0, ""};
  format_call *fc;
  int r = frond__formats_next(x->w, nf, n, &err);
  if (r == 0) {
    frond__resp_strings(x, x->w->strs.data, n, nf->stride);
    return;
  }
  if ((fc = calloc(1, sizeof *fc)) != NULL) {
    fc->x = *x;
    fc->x.argv = NULL;
    fc->x.argc = 0;
    fc->call.done = later_done;
    if (frond__formats_later(&fc->call, x->c, nf, n, r))
      return;
    free(fc);
  }
  frond__resp_lib_error(x, r, &err);
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
  size_t n;
  if (nf != NULL && (n = count_arg(x, 2)) != 0)
    issue(x, nf, n);
}

void frond__resp_cmd_id_order(frond__resp_ctx *x) {
  const frond__named_format *nf = named(x);
  size_t n;
  if (nf == NULL)
    return;
  if (nf->kind != FROND_FORMAT_ORDER) {
    frond__resp_error(x, frond_err_name(FROND_EFORMAT_INVALID),
                      "format '%s' is a %s format, not order: ID.FORMAT %s "
                      "issues it",
                      nf->name, frond_format_kind_name(nf->kind), nf->name);
    return;
  }
  if ((n = count_arg(x, 2)) != 0)
    issue(x, nf, n);
}

void frond__resp_cmd_id_uuid(frond__resp_ctx *x) {
  int which = FROND__BUILTIN_UUID7;
  size_t i = 1, n;
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
  if ((n = count_arg(x, i)) != 0)
    issue(x, &x->srv->builtin[which], n);
}

void frond__resp_cmd_id_ulid(frond__resp_ctx *x) {
  size_t n;
  if ((n = count_arg(x, 1)) != 0)
    issue(x, &x->srv->builtin[FROND__BUILTIN_ULID], n);
}

void frond__resp_cmd_id_objectid(frond__resp_ctx *x) {
  size_t n;
  if ((n = count_arg(x, 1)) != 0)
    issue(x, &x->srv->builtin[FROND__BUILTIN_OBJECTID], n);
}

int frond__resp_decode_formats(frond__resp_ctx *x) {
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
      return 1;
    }
  } else if (frond__resp_arg_digits(a) && a->len <= 19) {
    return 0; /* a decimal snowflake ID: the classic reply */
  }
  if ((r = frond__formats_decode(x->srv, nf, a->p, a->len, f, &n, &err)) != 0) {
    frond__resp_lib_error(x, r, &err);
    return 1;
  }
  frond__resp_map(x, (int64_t)n);
  for (i = 0; i < n; i++) {
    frond__resp_cstr(x, f[i].name);
    if (f[i].is_num)
      frond__resp_int(x, f[i].num);
    else
      frond__resp_cstr(x, f[i].str);
  }
  return 1;
}
