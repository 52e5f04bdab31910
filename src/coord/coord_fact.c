/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_fact.c -- facts a coordinator keeps for its fleet: the drivers'
** xFact, called here under the coordinator's lock.
*/
#include "coord/coord.h"
#include "base/base.h"

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
