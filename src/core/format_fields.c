/* SPDX-License-Identifier: Apache-2.0 */
/*
** format_fields.c -- a decoded ID string as named fields (see
** format_fields.h).
*/
#include "core/format_fields.h"

#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct list {
  frond__field *f;
  size_t n;
} list;

static frond__field *add(list *l, const char *name) {
  frond__field *f = &l->f[l->n++];
  f->name = name;
  f->is_num = 0;
  f->num = 0;
  f->str[0] = '\0';
  return f;
}

static void num(list *l, const char *name, int64_t v) {
  frond__field *f = add(l, name);
  f->is_num = 1;
  f->num = v;
}

static void str(list *l, const char *name, const char *s) {
  snprintf(add(l, name)->str, sizeof(l->f[0].str), "%s", s);
}

static void id(list *l, const char *name, int64_t v) {
  snprintf(add(l, name)->str, sizeof(l->f[0].str), "%" PRId64, v);
}

static void hex(list *l, const char *name, const uint8_t *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  char *s = add(l, name)->str;
  for (size_t i = 0; i < n; i++) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 15];
  }
  s[2 * n] = '\0';
}

/* "time" and "unix_ms", or "<name>" and "<name>_ms". */
static void when(list *l, int64_t unix_ms, const char *name, const char *ms) {
  frond__format_rfc3339(unix_ms, add(l, name)->str, sizeof(l->f[0].str));
  num(l, ms, unix_ms);
}

static void key_version(list *l, char v) {
  char s[2] = {v, '\0'};
  if (v != '\0')
    str(l, "key_version", s);
}

/* A snowflake ID's fields after "id", in frond__snowflake_fields' order;
** without "time" and "unix_ms" inside a string that has its own. */
static void snowflake(list *l, const frond_layout *lay, const frond_fields *fl,
                      int with_time) {
  if (with_time)
    when(l, fl->unix_ms, "time", "unix_ms");
  num(l, "time_units", fl->time);
  num(l, "node", (int64_t)fl->node);
  num(l, "datacenter", (int64_t)fl->datacenter);
  num(l, "worker", (int64_t)fl->worker);
  num(l, "sequence", (int64_t)fl->sequence);
  frond_layout_format(lay, add(l, "layout")->str, sizeof(l->f[0].str));
}

int frond__snowflake_fields(const frond_layout *lay, int64_t v,
                            frond__field *out, size_t *n, frond_error *err) {
  list l = {out, 0};
  frond_fields fl;
  int rc;
  if ((rc = frond_decode(lay, v, &fl, err)) != 0)
    return rc;
  id(&l, "id", v);
  snowflake(&l, lay, &fl, 1);
  *n = l.n;
  return 0;
}

/* The snowflake ID inside a node-scoped string (scope=node): the string
** carries the time. */
static void node_fields(list *l, const frond_format_value *v,
                        const frond_layout *lay, const frond_fields *fl) {
  id(l, "id", v->id);
  snowflake(l, lay, fl, 0);
}

int frond__format_fields(const frond_format_value *v, const char *input,
                         size_t len, const frond_layout *lay, frond__field *out,
                         size_t *n, frond_error *err) {
  list l = {out, 0};
  char s[48];
  frond_fields fl;
  int rc;
  /* A 64-bit ID without a tag is a snowflake ID: check that it fits the
  ** layout before anything is listed. */
  if (v->has_id && v->kind != FROND_FORMAT_SEQ && v->tag[0] == '\0' &&
      (rc = frond_decode(lay, v->id, &fl, err)) != 0)
    return rc;
  /* A node-scoped string's time is its ID's: under another layout the ID
  ** reads as another time, and its node would be wrong too. */
  if (v->has_id && v->nbytes > 0 && v->unix_ms / 1000 != fl.unix_ms / 1000)
    return frond__fail(err, FROND_EID_INVALID,
                       "'%.*s' holds snowflake ID %lld, whose time under "
                       "layout %s is not the string's: decode it with the "
                       "layout it was made under",
                       (int)(len > 64 ? 64 : len), input, (long long)v->id,
                       lay->name);
  str(&l, "format", frond_format_kind_name(v->kind));
  snprintf(add(&l, "input")->str, sizeof(out->str), "%.*s",
           (int)(len > FROND__FIELD_INPUT_MAX ? FROND__FIELD_INPUT_MAX : len),
           input);
  switch (v->kind) {
  case FROND_FORMAT_UUID7:
  case FROND_FORMAT_UUID4:
    frond_uuid_format(v->bytes, s);
    str(&l, "uuid", s);
    num(&l, "version", v->uuid_version);
    if (v->has_time)
      when(&l, v->unix_ms, "time", "unix_ms");
    if (v->has_id)
      node_fields(&l, v, lay, &fl);
    break;
  case FROND_FORMAT_ULID:
    frond_ulid_format(v->bytes, s);
    str(&l, "ulid", s);
    when(&l, v->unix_ms, "time", "unix_ms");
    if (v->has_id)
      node_fields(&l, v, lay, &fl);
    else
      hex(&l, "random", v->bytes + 6, 10);
    frond_uuid_format(v->bytes, s);
    str(&l, "uuid", s);
    break;
  case FROND_FORMAT_OBJECTID:
    frond_objectid_format(v->bytes, s);
    str(&l, "objectid", s);
    when(&l, v->unix_ms, "time", "unix_ms");
    if (v->has_id) {
      node_fields(&l, v, lay, &fl);
      break;
    }
    hex(&l, "process", v->process, 5);
    num(&l, "counter", (int64_t)v->counter);
    break;
  case FROND_FORMAT_SEQ:
    str(&l, "tag", v->tag);
    str(&l, "period", v->period);
    when(&l, v->unix_ms, "period_start", "period_start_ms");
    id(&l, "sequence", v->id);
    key_version(&l, v->key_version);
    break;
  default: /* a 64-bit ID: decimal, base62, base32, order */
    id(&l, "id", v->id);
    key_version(&l, v->key_version);
    if (v->period[0] != '\0')
      str(&l, "prefix_date", v->period);
    if (v->tag[0] != '\0') {
      str(&l, "tag", v->tag);
      break;
    }
    snowflake(&l, lay, &fl, 1);
    break;
  }
  *n = l.n;
  return 0;
}
