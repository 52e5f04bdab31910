/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_open.c -- picking a store's backend by its URI and opening it: the
** registered ones (tests' fakes), the built-in multi: and frond://, and
** the SQL store for every other URI. The one file that names every
** backend, so it sits above them all (as SQLite registers its built-in
** VFSes apart from the os.c wrappers); everything on an open store is
** store.c's.
*/
#include "store/store.h"

#include <string.h>

/* Registered backends (fakes in tests); the SQL store takes the rest. */
static const frond_store_methods *backends[8];
static size_t nbackends;

/* Built-in backends that own a scheme. */
static const frond_store_methods *const builtin[] = {&frond__store_multi,
                                                     &frond__store_frond};

int frond__store_register(const frond_store_methods *m) {
  if (nbackends == FROND__ARRAY_SIZE(backends))
    return FROND_ENOMEM;
  backends[nbackends++] = m;
  return 0;
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
  if (frond__store_own_guards(*out))
    return 0; /* it keeps its own guards (multi:'s, one per member) */
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
  if (!frond__store_own_guards(*out)) {
    (*out)->guard = base->guard;
    (*out)->guard_shared = 1;
  }
  /* Whatever else the backend keeps per process (multi:: its members'
  ** guards and health, shared member by member). */
  if ((*out)->methods->iVersion >= 4 && (*out)->methods->xControl != NULL)
    (*out)->methods->xControl(*out, FROND__STORE_SHARE, base, NULL);
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
