/*
** segment_table.c -- the segment allocator's tag table: an open-addressing
** hash table read without a lock, tags added and revived under table_mu,
** and the refresh that follows the store's tag list (tags that left it
** are marked removed, never freed before close).
**
** segment.c serves and loads the tags it finds here; this file calls
** nothing of segment.c.
*/
#include "core/segment.h"

#include <stdlib.h>
#include <string.h>

/* ---- the tag table ---- */

seg_table *frond__seg_table_new(size_t cap) {
  seg_table *tb = calloc(1, sizeof(*tb) + cap * sizeof(tb->slot[0]));
  if (tb != NULL)
    tb->cap = cap;
  return tb;
}

static void table_put(seg_table *tb, seg_tag *t) {
  size_t i, mask = tb->cap - 1;
  for (i = t->hash & mask;
       atomic_load_explicit(&tb->slot[i], memory_order_relaxed) != NULL;
       i = (i + 1) & mask)
    ;
  atomic_store_explicit(&tb->slot[i], t, memory_order_release);
  tb->count++;
}

int frond__seg_tag_add(frond_seg *s, const char *name, int64_t row_step,
                       seg_tag **out) {
  size_t len = strlen(name), i;
  uint64_t h = hash_name(name, len);
  seg_table *tb, *grown;
  seg_tag *t = seg_lookup(s, name, len, h);
  if (t != NULL) {
    if (atomic_load(&t->removed)) {
      pthread_mutex_lock(&t->mu);
      t->step = 0;
      t->last_load_ms = 0;
      t->row_step = row_step;
      t->backoff_ms = 0;
      t->retry_at_ns = 0;
      t->want = 0;
      atomic_store(&t->removed, 0);
      pthread_mutex_unlock(&t->mu);
    }
    *out = t;
    return 0;
  }
  tb = atomic_load(&s->table);
  if ((tb->count + 1) * 2 > tb->cap) {
    if ((grown = frond__seg_table_new(tb->cap * 2)) == NULL)
      return FROND_ENOMEM;
    for (i = 0; i < tb->cap; i++)
      if ((t = atomic_load(&tb->slot[i])) != NULL)
        table_put(grown, t);
    grown->older = tb;
    atomic_store_explicit(&s->table, grown, memory_order_release);
    tb = grown;
  }
  if ((t = calloc(1, sizeof(*t))) == NULL)
    return FROND_ENOMEM;
  pthread_mutex_init(&t->mu, NULL);
  frond__cond_init(&t->cv);
  atomic_init(&t->e[0].gen, NO_GEN);
  atomic_init(&t->e[1].gen, NO_GEN);
  memcpy(t->name, name, len + 1);
  t->len = len;
  t->hash = h;
  t->row_step = row_step;
  table_put(tb, t);
  *out = t;
  return 0;
}

/* Drop a tag that left the store. Expects table_mu held. */
static void tag_remove(seg_tag *t) {
  pthread_mutex_lock(&t->mu);
  atomic_store(&t->removed, 1);
  t->gen++;
  entry_write(&t->e[0], NO_GEN, 0, 0, 0, 0);
  entry_write(&t->e[1], NO_GEN, 0, 0, 0, 0);
  switch_gen(t, atomic_load(&t->word));
  t->want = 0;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

static int row_cmp(const void *a, const void *b) {
  return strcmp(((const frond_tag_row *)a)->tag,
                ((const frond_tag_row *)b)->tag);
}

/* Re-read the tag list: add new tags, remove those that are gone. */
int frond_seg_refresh(frond_seg *s, frond_error *err) {
  frond_tag_row *rows = NULL, key;
  size_t n = 0, i;
  seg_table *tb;
  seg_tag *t;
  int rc;
  pthread_mutex_lock(&s->store_mu);
  rc = frond__store_tag_list(s->store, &rows, &n, err);
  pthread_mutex_unlock(&s->store_mu);
  atomic_store(&s->store_ok, rc == 0);
  if (rc != 0)
    return rc;
  if (n > 0)
    qsort(rows, n, sizeof(*rows), row_cmp);
  pthread_mutex_lock(&s->table_mu);
  for (i = 0; i < n && rc == 0; i++) {
    if (frond_tag_validate(rows[i].tag, strlen(rows[i].tag), NULL) != 0)
      continue; /* not a name a caller could ask for */
    rc = frond__seg_tag_add(s, rows[i].tag, rows[i].step, &t);
  }
  tb = atomic_load(&s->table);
  for (i = 0; i < tb->cap && rc == 0; i++) {
    t = atomic_load(&tb->slot[i]);
    if (t == NULL || atomic_load(&t->removed))
      continue;
    memcpy(key.tag, t->name, t->len + 1);
    if (n == 0 || bsearch(&key, rows, n, sizeof(*rows), row_cmp) == NULL)
      tag_remove(t);
  }
  pthread_mutex_unlock(&s->table_mu);
  frond_free(rows);
  if (rc != 0)
    return frond__fail(err, rc, "out of memory adding tags");
  return 0;
}

void frond__seg_table_free(frond_seg *s) {
  seg_table *tb = atomic_load(&s->table), *older;
  seg_tag *t;
  size_t i;
  if (tb != NULL)
    for (i = 0; i < tb->cap; i++)
      if ((t = atomic_load(&tb->slot[i])) != NULL) {
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        free(t);
      }
  for (; tb != NULL; tb = older) {
    older = tb->older;
    free(tb);
  }
}
