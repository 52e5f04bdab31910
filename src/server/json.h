/* SPDX-License-Identifier: Apache-2.0 */
/*
** json.h -- a strict reader for flat JSON objects, and JSON strings
** appended to a buffer.
**
** The admin API needs a few named fields per body ({"tag":"orders",
** "step":1000}); this reads exactly that: one object whose values are
** strings or integers, no nesting, no duplicate or unknown keys. Like the
** HTTP parser it never allocates and never reads outside its input.
*/
#ifndef FROND_SERVER_JSON_H
#define FROND_SERVER_JSON_H

#include "frond.h"
#include "base/escape.h"
#include "server/buf.h"

#include <stddef.h>
#include <stdint.h>

enum { FROND__JSON_STR, FROND__JSON_INT, FROND__JSON_BOOL };

typedef struct frond__json_field {
  const char *name;
  int type;
  char *str;      /* FROND__JSON_STR: destination, NUL-terminated */
  size_t str_cap; /* its capacity including the NUL */
  int64_t num;    /* FROND__JSON_INT: the value; _BOOL: 1 true, 0 false */
  int present;    /* set by the reader */
} frond__json_field;

/* Read `in` into fields. Returns 0, or FROND_EINVAL with the reason
** ("invalid JSON body: ...") in err. */
int frond__json_read(const char *in, size_t len, frond__json_field *fields,
                     size_t n, frond_error *err);

/* s as a JSON string body (without quotes), escaped by frond__json_escape
** (base/escape.h), appended to b whole. 0, or -1 when out of memory. */
int frond__json_append(frond__buf *b, const char *s, size_t len);

#endif /* FROND_SERVER_JSON_H */
