/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_fact.c -- facts a coordinator keeps for its fleet (the drivers'
** xFact, called here under the coordinator's lock), and
** frond_format_check, which picks where a keyed format's key fingerprint
** is checked: the first of these that the processes issuing the format's
** numbers share.
**
**   the numbers' IDs                  recorded in
**   a segment tag (seq, tag=, or      the store of that tag (the source's
**   the source's tag)                 allocator): every process drawing
**                                     the tag's IDs meets there
**   snowflake IDs                     the store of the source's allocator
**                                     when given (a server's store), else
**                                     the coordinator when it keeps facts
**                                     (lease, ZooKeeper), else a file in
**                                     the data directory, which only this
**                                     host reads (a warning says so)
**
** This sits above the core because it calls a coordinator; the record's
** name, the comparison and the message are the core's (format_fact.c).
*/
#include "coord/coord.h"
#include "base/base.h"
#include "core/core.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int frond__coord_has_facts(const frond_coord *c) {
  return c != NULL && c->m->xFact != NULL;
}

int frond__coord_fact(void *ctx, const char *name, const char *value,
                      char *recorded, size_t len, char *where, size_t wlen,
                      frond_error *err) {
  frond_coord *c = ctx;
  int rc;
  if (!frond__coord_has_facts(c))
    return frond__fail(err, FROND_EINVAL, "coordinator %s keeps no facts",
                       c != NULL ? c->m->zScheme : "(none)");
  pthread_mutex_lock(&c->lock);
  rc = c->m->xFact(c, name, value, recorded, len, where, wlen, err);
  pthread_mutex_unlock(&c->lock);
  return rc;
}

int frond_format_check(frond_format *f, const frond_format_source *src,
                       frond_coord *coord, const char *dir, frond_error *err) {
  char name[FROND__FACT_NAME_MAX + 1], path[PATH_MAX];
  const char *scope;
  int rc;
  if (f == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL format");
  if (frond_format_fingerprint(f, NULL, 0) == 0)
    return 0; /* no key: nothing to agree on */
  scope = frond__format_scope(f, src);
  if (scope[0] != '\0') {
    if (src == NULL || src->seg == NULL)
      return frond__fail(err, FROND_EINVAL,
                         "the format takes IDs of tag \"%.64s\": its key is "
                         "checked in that tag's store (give the source's "
                         "segment allocator)",
                         scope);
    return frond__format_check_seg(f, scope, src->seg, err);
  }
  /* Snowflake IDs: where the processes that issue them meet to claim
  ** their node IDs, else the store they share. */
  if (frond__coord_has_facts(coord))
    return frond__format_check_with(f, "", frond__coord_fact, coord, err);
  if (src != NULL && src->seg != NULL)
    return frond__format_check_seg(f, "", src->seg, err);
  if (dir == NULL)
    return frond__fail(err, FROND_EINVAL,
                       "nowhere to check the format's key: give the store, "
                       "a coordinator that keeps facts (lease+, zk://) or a "
                       "data directory that the processes issuing its "
                       "numbers share");
  /* The fact function's context is not const: a copy. */
  if ((size_t)snprintf(path, sizeof(path), "%s", dir) >= sizeof(path))
    return frond__fail(err, FROND_EINVAL, "data directory: path too long");
  if ((rc = frond__format_check_with(f, "", frond__dir_fact, path, err)) == 0) {
    frond__format_fact_name(f, "", name, sizeof(name));
    snprintf(path, sizeof(path), "%s/frond-fact-%s", dir, name);
    frond_log(FROND_LOG_WARN,
              "the key of %.64s numbers of snowflake IDs is recorded in %s, "
              "which only this host reads: nothing shared checks that other "
              "hosts issue them with the same key (a store or a lease or "
              "ZooKeeper coordinator would)",
              frond_format_kind_name(frond_format_kind(f)), path);
  }
  return rc;
}
