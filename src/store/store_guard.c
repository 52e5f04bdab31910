/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_guard.c -- the rollback guard: a range a store hands out is
** accepted only above every range this connection has already handed out
** for the tag.
**
** A store's row only moves forward, unless the database loses committed
** writes: a failover onto an asynchronous replica that had not received
** the last allocations, a restore from a backup, an operator's UPDATE.
** Then the next allocation returns a range this node may already have
** served. The guard remembers, per tag, the end of the highest range
** accepted (max_id), and when a new range starts below it, it says so
** (a warning and a counter), moves the row past it with one more
** allocation of (end - max_id + step), and hands out the range that ends
** there: [end, end + step) at the lowest.
**
** What it protects: the IDs this process served. What it cannot: ranges
** other nodes took from the lost writes (each node guards its own), and
** a range this process took before it restarted (the memory is the
** process's). Those need a synchronous replica; see docs/segment.md.
**
** One guard may serve several connections (frond__store_open_shared: the
** loaders of one allocator, so that the memory is the process's whatever
** connection took a range); its own mutex keeps the marks, held from the
** look-up of a tag's end to the note of the new one, never across a store
** call.
*/
#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TRIES 4

typedef struct mark {
  char *tag; /* NULL: a free slot */
  int64_t end;
} mark;

struct frond_store_guard {
  pthread_mutex_t mu; /* slots, cap, n */
  mark *slots;
  size_t cap, n;           /* a power of two; used slots */
  atomic_ullong rollbacks; /* ranges refused */
};

frond_store_guard *frond__guard_new(void) {
  frond_store_guard *g = calloc(1, sizeof(frond_store_guard));
  if (g != NULL && pthread_mutex_init(&g->mu, NULL) != 0) {
    free(g);
    g = NULL;
  }
  return g;
}

void frond__guard_free(frond_store_guard *g) {
  size_t i;
  if (g == NULL)
    return;
  for (i = 0; i < g->cap; i++)
    free(g->slots[i].tag);
  free(g->slots);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

uint64_t frond__guard_rollbacks(const frond_store_guard *g) {
  return g == NULL ? 0 : atomic_load(&g->rollbacks);
}

static mark *find(frond_store_guard *g, const char *tag, int add) {
  size_t i, h;
  if (g->cap == 0 || (add && (g->n + 1) * 4 > g->cap * 3)) {
    size_t cap = g->cap ? g->cap * 2 : 16;
    mark *s = calloc(cap, sizeof(*s));
    if (s == NULL)
      return NULL;
    for (i = 0; i < g->cap; i++) {
      if (g->slots[i].tag == NULL)
        continue;
      h = (size_t)frond__fnv1a64(g->slots[i].tag, strlen(g->slots[i].tag));
      while (s[h & (cap - 1)].tag != NULL)
        h++;
      s[h & (cap - 1)] = g->slots[i];
    }
    free(g->slots);
    g->slots = s;
    g->cap = cap;
  }
  h = (size_t)frond__fnv1a64(tag, strlen(tag));
  for (i = 0; i < g->cap; i++, h++) {
    mark *m = &g->slots[h & (g->cap - 1)];
    if (m->tag == NULL) {
      if (!add || (m->tag = strdup(tag)) == NULL)
        return NULL;
      m->end = 0;
      g->n++;
      return m;
    }
    if (strcmp(m->tag, tag) == 0)
      return m;
  }
  return NULL;
}

/* With g->mu held. */
static int64_t end_of(frond_store_guard *g, const char *tag) {
  mark *m = find(g, tag, 0);
  return m ? m->end : 0;
}

static void note(frond_store_guard *g, const char *tag, int64_t end) {
  mark *m = find(g, tag, 1);
  if (m != NULL && end > m->end)
    m->end = end;
}

int64_t frond__guard_end(frond_store_guard *g, const char *tag) {
  int64_t end;
  if (g == NULL)
    return 0;
  pthread_mutex_lock(&g->mu);
  end = end_of(g, tag);
  pthread_mutex_unlock(&g->mu);
  return end;
}

void frond__guard_note(frond_store_guard *g, const char *tag, int64_t end) {
  if (g == NULL)
    return;
  pthread_mutex_lock(&g->mu);
  note(g, tag, end);
  pthread_mutex_unlock(&g->mu);
}

void frond__guard_forget(frond_store_guard *g, const char *tag) {
  mark *m;
  if (g == NULL)
    return;
  pthread_mutex_lock(&g->mu);
  if ((m = find(g, tag, 0)) != NULL)
    m->end = 0;
  pthread_mutex_unlock(&g->mu);
}

int frond__guard_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err) {
  frond_store_guard *g = st->guard;
  int64_t end, used, m2 = 0, rs2 = 0;
  int rc, i;
  rc = st->methods->xAlloc(st, tag, step, max_id, row_step, err);
  if (rc != 0 || g == NULL)
    return rc;
  used = step > 0 ? step : *row_step;
  pthread_mutex_lock(&g->mu);
  end = end_of(g, tag);
  if (*max_id - used >= end)
    note(g, tag, *max_id);
  pthread_mutex_unlock(&g->mu);
  if (*max_id - used >= end)
    return 0;
  atomic_fetch_add(&g->rollbacks, 1);
  frond_log(FROND_LOG_WARN,
            "store: tag \"%s\": the store handed out [%lld, %lld), below "
            "%lld where a range this node already took ends: the row went "
            "back (a failover that lost writes?); moving it past %lld",
            tag, (long long)(*max_id - used), (long long)*max_id,
            (long long)end, (long long)end);
  for (i = 0; i < TRIES; i++) {
    /* From wherever the row is now, at least (end - max_id + used) on:
    ** the range [m2 - used, m2) starts at end or above. */
    int64_t need = end - *max_id + used;
    if (need <= 0 || need > INT64_MAX - *max_id)
      return frond__fail(err, FROND_ESTORE,
                         "tag \"%s\": cannot move the row past %lld", tag,
                         (long long)end);
    if ((rc = st->methods->xAlloc(st, tag, need, &m2, &rs2, err)) != 0)
      return rc;
    if (m2 - used >= end) {
      *max_id = m2;
      frond__guard_note(g, tag, m2);
      return 0; /* *row_step: the row's as first read, which used is */
    }
    *max_id = m2; /* it went back again meanwhile: once more from here */
  }
  return frond__fail(err, FROND_ESTORE,
                     "tag \"%s\": the row keeps going back below %lld", tag,
                     (long long)end);
}
