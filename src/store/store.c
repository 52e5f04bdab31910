/* SPDX-License-Identifier: Apache-2.0 */
/*
** store.c -- URI dispatch, the wrappers the core calls, tag validation and
** the public frond_store_* administration functions.
*/
#include "store/store.h"
#include "base/utf8.h"

#include <stdlib.h>
#include <string.h>

/* Registered backends (fakes in tests); the SQL store takes the rest. */
static const frond_store_methods *backends[8];
static size_t nbackends;

/* Built-in backends that own a scheme. */
static const frond_store_methods *const builtin[] = {&frond__store_multi};

int frond__store_register(const frond_store_methods *m) {
  if (nbackends == FROND__ARRAY_SIZE(backends))
    return FROND_ENOMEM;
  backends[nbackends++] = m;
  return 0;
}

int frond_tag_validate(const char *tag, size_t len, frond_error *err) {
  const unsigned char *s = (const unsigned char *)tag;
  size_t i = 0, k;
  uint32_t cp;
  if (tag == NULL || len == 0)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name is empty");
  if (len > FROND_TAG_MAX)
    return frond__fail(err, FROND_ETAG_INVALID,
                       "tag name is %zu bytes long, the limit is %d", len,
                       FROND_TAG_MAX);
  while (i < len) {
    k = frond__utf8_len(s + i, len - i, &cp);
    if (k == 0)
      return frond__fail(err, FROND_ETAG_INVALID,
                         "tag name is not valid UTF-8 (byte %zu)", i);
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
      return frond__fail(err, FROND_ETAG_INVALID,
                         "tag name contains control character U+%04X at "
                         "byte %zu",
                         (unsigned)cp, i);
    i += k;
  }
  return 0;
}

static int tag_check(const char *tag, frond_error *err) {
  if (tag == NULL)
    return frond__fail(err, FROND_ETAG_INVALID, "tag name is missing");
  return frond_tag_validate(tag, strnlen(tag, FROND_TAG_MAX + 1), err);
}

static int open_backend(const char *uri, frond_store **out, frond_error *err) {
  size_t i;
  for (i = 0; i < nbackends; i++) {
    const char *scheme = backends[i]->zScheme;
    if (strncmp(uri, scheme, strlen(scheme)) == 0)
      return backends[i]->xOpen(uri, out, err);
  }
  for (i = 0; i < FROND__ARRAY_SIZE(builtin); i++)
    if (strncmp(uri, builtin[i]->zScheme, strlen(builtin[i]->zScheme)) == 0)
      return builtin[i]->xOpen(uri, out, err);
  return frond__store_sql.xOpen(uri, out, err);
}

int frond__store_open(const char *uri, frond_store **out, frond_error *err) {
  int rc;
  *out = NULL;
  if (uri == NULL)
    uri = FROND_STORE_DEFAULT;
  if ((rc = open_backend(uri, out, err)) != 0)
    return rc;
  (*out)->guard_shared = 0;
  if ((*out)->xRollbacks != NULL)
    return 0; /* guards of its own (multi:'s members) */
  if (((*out)->guard = frond__guard_new()) == NULL) {
    (*out)->methods->xClose(*out);
    *out = NULL;
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  return 0;
}

int frond__store_open_shared(const char *uri, frond_store *base,
                             frond_store **out, frond_error *err) {
  int rc;
  *out = NULL;
  if (uri == NULL)
    uri = FROND_STORE_DEFAULT;
  if ((rc = open_backend(uri, out, err)) != 0)
    return rc;
  if ((*out)->xRollbacks != NULL) {
    /* multi: its members' guards, shared member by member. */
    frond__store_multi_share(*out, base);
    return 0;
  }
  (*out)->guard = base->guard;
  (*out)->guard_shared = 1;
  return 0;
}

/* Public administration API. */

int frond_store_open(frond_store **out, const char *store_uri,
                     frond_error *err) {
  int rc;
  if (out == NULL)
    return frond__fail(err, FROND_EINVAL, "out is NULL");
  rc = frond__store_open(store_uri, out, err);
  if (rc == 0 && (rc = frond__store_ensure_schema(*out, err)) != 0) {
    frond__store_close(*out);
    *out = NULL;
  }
  return rc;
}

void frond_store_close(frond_store *st) {
  frond__store_close(st);
}

/* leaf_alloc.step is an int. */
static int step_check(int64_t step, frond_error *err) {
  if (step < 1 || step > INT32_MAX)
    return frond__fail(err, FROND_EINVAL, "step %lld is out of 1..%d",
                       (long long)step, INT32_MAX);
  return 0;
}

int frond_store_tag_create(frond_store *st, const char *tag, int64_t step,
                           int64_t start, const char *description,
                           frond_error *err) {
  int rc;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  if ((rc = step_check(step, err)) != 0)
    return rc;
  if (start < 0)
    return frond__fail(err, FROND_EINVAL, "start %lld is below 1",
                       (long long)start);
  if (description != NULL && strlen(description) > 256)
    return frond__fail(err, FROND_EINVAL,
                       "description is longer than 256 bytes");
  FROND__STORE_FAULT(st, "create");
  if (start == 0 && st->methods->iVersion < 3)
    start = 1; /* a store that keeps no floors (tests' fakes) */
  return st->methods->xTagCreate(st, tag, step, start, description, err);
}

int frond_store_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                         frond_error *err) {
  return frond__store_tag_list(st, out, n, err);
}

int frond_store_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                        frond_error *err) {
  int rc;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  return frond__store_tag_get(st, tag, out, err);
}

int frond_store_tag_set_step(frond_store *st, const char *tag, int64_t step,
                             frond_error *err) {
  int rc;
  if ((rc = tag_check(tag, err)) != 0 || (rc = step_check(step, err)) != 0)
    return rc;
  FROND__STORE_FAULT(st, "set_step");
  return st->methods->xTagSetStep(st, tag, step, err);
}

int frond_store_tag_delete(frond_store *st, const char *tag, frond_error *err) {
  int rc;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  FROND__STORE_FAULT(st, "delete");
  return st->methods->xTagDelete(st, tag, err);
}

int frond_store_tag_advance(frond_store *st, const char *tag, int64_t to,
                            frond_error *err) {
  int rc;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  if (to < 1)
    return frond__fail(err, FROND_EINVAL, "advancing to %lld: IDs start at 1",
                       (long long)to);
  if (st->methods->iVersion < 3 || st->methods->xTagAdvance == NULL)
    return frond__fail(err, FROND_EINVAL, "the %s store cannot advance tags",
                       st->methods->zName);
  FROND__STORE_FAULT(st, "advance");
  return st->methods->xTagAdvance(st, tag, to, err);
}

int frond_store_tag_floor(frond_store *st, const char *tag, int64_t *first,
                          frond_error *err) {
  int rc;
  if ((rc = tag_check(tag, err)) != 0)
    return rc;
  if (first == NULL)
    return frond__fail(err, FROND_EINVAL, "first is NULL");
  *first = 1;
  if (st->methods->iVersion < 3 || st->methods->xTagFloor == NULL)
    return 0; /* a store without floors (tests' fakes) */
  FROND__STORE_FAULT(st, "floor");
  return st->methods->xTagFloor(st, tag, first, err);
}

int frond_store_member_repair(frond_store *st, int member, frond_repair_fn fn,
                              void *ctx, frond_error *err) {
  if (st == NULL || st->methods != &frond__store_multi)
    return frond__fail(err, FROND_EINVAL,
                       "repairing a member needs a multi: store URI");
  FROND__STORE_FAULT(st, "repair");
  return frond__store_multi_repair(st, member, fn, ctx, err);
}

void frond_free(void *p) {
  free(p);
}
