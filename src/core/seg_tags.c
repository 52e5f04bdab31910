/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_tags.c -- the segment allocator's tag table: every row of the store
** as a small seg_name, found by name without a lock; the tag list read
** from the store in pages, in one pass; the index by name that pages the
** status page; queries; and per-tag rates.
**
** Costs, with n tags known and m in use: a look-up by name is a hash and
** one or two probes; a refresh is O(n) (a mark per row it reads, then a
** sweep for the rows it did not see); the index by name is kept by
** merging the names added since it was last built, O(n + k log k); the
** sampler and the top by rate are O(m). Nothing compares every tag with
** every other.
*/
#include "core/seg.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_MS (60 * 1000)

/* The name hash and the look-up are in seg.h, inline in the calls by
** name. */

/* ---- names in an arena, freed at close ---- */

#define ARENA_CHUNK (1u << 20)

struct seg_arena {
  seg_arena *next;
  size_t used, cap;
  _Alignas(8) char data[];
};

/* Expects table_mu held. */
static seg_name *name_alloc(frond_seg *s, size_t len) {
  size_t need = (sizeof(seg_name) + len + 1 + 7) & ~(size_t)7;
  seg_arena *a = s->arena;
  seg_name *nm;
  if (a == NULL || a->cap - a->used < need) {
    if ((a = malloc(sizeof(*a) + ARENA_CHUNK)) == NULL)
      return NULL;
    a->next = s->arena;
    a->used = 0;
    a->cap = ARENA_CHUNK;
    s->arena = a;
  }
  nm = (seg_name *)(void *)(a->data + a->used);
  a->used += need;
  memset(nm, 0, sizeof(*nm));
  return nm;
}

/* ---- the table ---- */

static seg_table *table_new(size_t cap) {
  seg_table *tb = calloc(1, sizeof(*tb) + cap * sizeof(tb->slot[0]));
  if (tb != NULL)
    tb->cap = cap;
  return tb;
}

static void table_put(seg_table *tb, seg_name *nm) {
  size_t i, mask = tb->cap - 1;
  for (i = nm->hash & mask;
       atomic_load_explicit(&tb->slot[i], memory_order_relaxed) != NULL;
       i = (i + 1) & mask)
    ;
  atomic_store_explicit(&tb->slot[i], nm, memory_order_release);
  tb->count++;
}

/* Room for one more name. Expects table_mu held. */
static int table_room(frond_seg *s) {
  seg_table *tb = atomic_load(&s->table), *grown;
  seg_name *nm;
  size_t i;
  if ((tb->count + 1) * 2 <= tb->cap)
    return 0;
  if ((grown = table_new(tb->cap * 2)) == NULL)
    return FROND_ENOMEM;
  for (i = 0; i < tb->cap; i++)
    if ((nm = atomic_load_explicit(&tb->slot[i], memory_order_relaxed)))
      table_put(grown, nm);
  grown->older = tb;
  atomic_store_explicit(&s->table, grown, memory_order_release);
  return 0;
}

int frond__seg_table_init(frond_seg *s) {
  /* Keyed by the clock and an address: not a secret, just not fixed. */
  s->seed = frond__seg_mix((uint64_t)frond__mono_ns() ^ SEG_P0,
                           (uint64_t)(uintptr_t)s ^ SEG_P1);
  atomic_init(&s->table, table_new(16));
  return atomic_load(&s->table) == NULL ? FROND_ENOMEM : 0;
}

static void tag_free(seg_tag *t) {
  free(t->fail_why);
  free(t->holder);
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->cv);
  frond__seg_tag_free(t);
}

void frond__seg_table_free(frond_seg *s) {
  seg_table *tb = atomic_load(&s->table), *older;
  seg_tag *t, *next;
  seg_arena *a, *an;
  for (t = atomic_load(&s->hot); t != NULL; t = next) {
    next = t->hot_next;
    tag_free(t);
  }
  for (; tb != NULL; tb = older) {
    older = tb->older;
    free(tb);
  }
  for (a = s->arena; a != NULL; a = an) {
    an = a->next;
    free(a);
  }
  free(s->added);
  free(s->sorted);
}

/* ---- names: add, revive, remove ---- */

int frond__seg_name_add(frond_seg *s, const char *name, size_t len,
                        int64_t row_step, seg_name **out) {
  uint64_t h = frond__seg_hash(s, name, len);
  seg_name *nm = frond__seg_lookup(s, name, len, h);
  seg_tag *t;
  int32_t step = row_step > INT32_MAX ? INT32_MAX
                 : row_step < 0       ? 0
                                      : (int32_t)row_step;
  if (nm != NULL) {
    nm->seen = s->epoch;
    nm->row_step = step;
    if (atomic_load(&nm->removed)) {
      /* A new tag of an old name: nothing of the old one's state carries
      ** over, not its refusal (a call would give it up as the new tag's),
      ** nor its loads (the first segment is waited for as a first). */
      if ((t = atomic_load(&nm->tag)) != NULL) {
        pthread_mutex_lock(&t->mu);
        t->loads = 0;
        t->failures = 0;
        t->fail_code = 0;
        free(t->fail_why);
        t->fail_why = NULL;
        t->step = 0;
        t->last_load_ms = 0;
        t->row_step = step;
        t->backoff_ms = 0;
        t->retry_at_ns = 0;
        t->want = 0;
        t->range_need = 0;
        atomic_store(&t->bound, 0);
        atomic_store(&t->stride, 0);
        atomic_store(&t->residue, 0);
        atomic_store(&t->past, 0);
        atomic_store(&t->row_end, 0);
        atomic_store(&t->bound_read, 0);
        pthread_mutex_unlock(&t->mu);
      }
      atomic_store(&nm->removed, 0);
      s->nlive++;
    }
    *out = nm;
    return 0;
  }
  if (s->nadded == s->added_cap) {
    size_t cap = s->added_cap ? s->added_cap * 2 : 64;
    seg_name **v = realloc(s->added, cap * sizeof(*v));
    if (v == NULL)
      return FROND_ENOMEM;
    s->added = v;
    s->added_cap = cap;
  }
  if (table_room(s) != 0 || (nm = name_alloc(s, len)) == NULL)
    return FROND_ENOMEM;
  nm->hash = h;
  nm->len = (unsigned char)len;
  nm->row_step = step;
  nm->seen = s->epoch;
  memcpy(nm->name, name, len);
  nm->name[len] = '\0';
  table_put(atomic_load(&s->table), nm);
  s->added[s->nadded++] = nm;
  s->nlive++;
  *out = nm;
  return 0;
}

void frond__seg_name_remove(frond_seg *s, seg_name *nm) {
  seg_tag *t;
  if (atomic_load(&nm->removed))
    return;
  atomic_store(&nm->removed, 1);
  s->nlive--;
  if ((t = atomic_load(&nm->tag)) != NULL) {
    pthread_mutex_lock(&t->mu);
    frond__seg_drop(t);
    pthread_mutex_unlock(&t->mu);
  }
}

seg_tag *frond__seg_hot(frond_seg *s, seg_name *nm) {
  seg_tag *t = atomic_load_explicit(&nm->tag, memory_order_acquire), *none;
  if (FROND__LIKELY(t != NULL))
    return t;
  if ((t = frond__seg_tag_alloc()) == NULL) /* zeroed */
    return NULL;
  pthread_mutex_init(&t->mu, NULL);
  frond__cond_init(&t->cv);
  atomic_init(&t->e[0].gen, SEG_NO_GEN);
  atomic_init(&t->e[1].gen, SEG_NO_GEN);
  atomic_init(&t->cur.gen, SEG_NO_GEN);
  t->s = s;
  t->nm = nm;
  t->row_step = nm->row_step;
  none = NULL;
  if (!atomic_compare_exchange_strong(&nm->tag, &none, t)) {
    tag_free(t);
    return none; /* another thread made it first */
  }
  t->hot_next = atomic_load(&s->hot);
  while (!atomic_compare_exchange_weak(&s->hot, &t->hot_next, t))
    ;
  atomic_fetch_add(&s->nhot, 1);
  return t;
}

/* ---- the refresh: the tag list in pages ---- */

#define PAGE_ROWS 4096

/* One page of rows, copied out of the store's answer so that the table
** is changed without the store's lock. */
typedef struct page {
  char *text;
  size_t len, cap;
  int64_t step[PAGE_ROWS];
  size_t at[PAGE_ROWS];
  size_t slot[PAGE_ROWS]; /* prefetch_page: each row's first slot */
  int n;
} page;

/* The sweep asks for the name this many slots ahead. */
#define SWEEP_AHEAD 16

static int page_row(void *ctx, const char *tag, int64_t step) {
  page *p = ctx;
  size_t l = strlen(tag) + 1;
  if (p->n == PAGE_ROWS)
    return 0;
  if (p->cap - p->len < l) {
    size_t cap = p->cap ? p->cap * 2 : 65536;
    char *t;
    while (cap - p->len < l)
      cap *= 2;
    if ((t = realloc(p->text, cap)) == NULL)
      return FROND_ENOMEM;
    p->text = t;
    p->cap = cap;
  }
  memcpy(p->text + p->len, tag, l);
  p->at[p->n] = p->len;
  p->step[p->n++] = step;
  p->len += l;
  return 0;
}

/* With a million names the table is far larger than the caches, and each
** row's look-up would wait for two cache misses in turn (its slot, then
** the name it points to). Ask for all of a page's slots, then for the
** names in them, so that the misses overlap; the look-ups that follow
** find them in the cache. Expects table_mu held. */
static void prefetch_page(frond_seg *s, page *p) {
  seg_table *tb = atomic_load_explicit(&s->table, memory_order_relaxed);
  size_t i, mask = tb->cap - 1;
  for (i = 0; i < (size_t)p->n; i++) {
    const char *tag = p->text + p->at[i];
    p->slot[i] = frond__seg_hash(s, tag, strlen(tag)) & mask;
    __builtin_prefetch(&tb->slot[p->slot[i]]);
  }
  for (i = 0; i < (size_t)p->n; i++) {
    seg_name *nm =
        atomic_load_explicit(&tb->slot[p->slot[i]], memory_order_relaxed);
    if (nm != NULL)
      __builtin_prefetch(nm, 1);
  }
}

/* A tag in use whose stride (or order) in the store is not the one its
** buffers were loaded with was deleted and created again with another
** between two refreshes (fixed for a tag's life): its buffers hold the
** old tag's numbers, unique (above the floor) but of the old residue,
** which another system's numbers may be. They are dropped. One read per
** tag in use, each refresh. It is compared under mu with what the last
** load recorded, which may be newer; nothing read here is recorded (an
** older read would undo the load's: ranges refused as strided). The tag
** is left unknown (no stride, not ordered: the slow path's range checks
** the entry it takes from) and the next load reads it first. */
void (*_Atomic frond__seg_restrided_hook)(seg_tag *t);

static void restrided(frond_seg *s) {
  frond_tag_seq q;
  frond_error e = {0, ""};
  void (*hook)(seg_tag *);
  seg_tag *t;
  int64_t k, r;
  int rc, same;
  for (t = atomic_load(&s->hot); t != NULL; t = t->hot_next) {
    if (atomic_load(&t->nm->removed) || !atomic_load(&t->bound_read))
      continue;
    pthread_mutex_lock(&s->store_mu);
    rc = frond__store_seq(s->store, t->nm->name, &q, &e);
    pthread_mutex_unlock(&s->store_mu);
    if (rc != 0)
      continue;
    if ((hook = atomic_load(&frond__seg_restrided_hook)) != NULL)
      hook(t);
    k = q.increment > 1 ? q.increment : 1;
    r = k > 1 ? q.offset : 0;
    pthread_mutex_lock(&t->mu);
    same = !atomic_load(&t->bound_read) ||
           (atomic_load(&t->stride) == k && atomic_load(&t->residue) == r &&
            atomic_load(&t->ordered) == q.ordered);
    if (!same) { /* unknown until the next load reads the tag */
      frond__seg_drop(t);
      atomic_store(&t->stride, 0);
      atomic_store(&t->residue, 0);
      atomic_store(&t->ordered, 0);
      atomic_store(&t->bound_read, 0);
    }
    pthread_mutex_unlock(&t->mu);
    if (!same)
      frond_log(FROND_LOG_WARN,
                "segment: tag \"%s\" was created again with increment %lld, "
                "offset %lld: the buffers of the old one are dropped",
                t->nm->name, (long long)k, (long long)r);
  }
}

int frond__seg_refresh(frond_seg *s, frond_error *err) {
  char after[FROND_TAG_MAX + 1];
  seg_table *tb;
  seg_name *nm;
  page *p = calloc(1, sizeof(*p));
  size_t i;
  int rc = 0, n = PAGE_ROWS, first = 1;
  uint32_t epoch;
  if (p == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  /* One refresh at a time: each sweeps by its own mark. */
  pthread_mutex_lock(&s->refresh_mu);
  pthread_mutex_lock(&s->table_mu);
  epoch = ++s->epoch;
  pthread_mutex_unlock(&s->table_mu);
  while (rc == 0 && n == PAGE_ROWS) {
    p->n = 0;
    p->len = 0;
    pthread_mutex_lock(&s->store_mu);
    rc = frond__store_tag_page(s->store, first ? NULL : after, PAGE_ROWS,
                               page_row, p, &n, err);
    pthread_mutex_unlock(&s->store_mu);
    first = 0;
    if (rc != 0)
      break;
    pthread_mutex_lock(&s->table_mu);
    prefetch_page(s, p);
    for (i = 0; i < (size_t)p->n && rc == 0; i++) {
      const char *tag = p->text + p->at[i];
      size_t len = strlen(tag);
      if (frond_tag_validate(tag, len, NULL) != 0)
        continue; /* not a name a caller could ask for */
      rc = frond__seg_name_add(s, tag, len, p->step[i], &nm);
    }
    pthread_mutex_unlock(&s->table_mu);
    if (p->n > 0)
      memcpy(after, p->text + p->at[p->n - 1],
             strlen(p->text + p->at[p->n - 1]) + 1);
  }
  if (rc != FROND_ENOMEM)
    atomic_store(&s->store_ok, rc == 0);
  free(p->text);
  free(p);
  if (rc == 0) {
    /* Every row that exists was seen; the rest left the store. A name
    ** added meanwhile by a look-up carries this mark too, so it stays. */
    pthread_mutex_lock(&s->table_mu);
    tb = atomic_load(&s->table);
    for (i = 0; i < tb->cap; i++) {
      seg_name *ahead;
      if (i + SWEEP_AHEAD < tb->cap &&
          (ahead = atomic_load_explicit(&tb->slot[i + SWEEP_AHEAD],
                                        memory_order_relaxed)) != NULL)
        __builtin_prefetch(ahead);
      nm = atomic_load_explicit(&tb->slot[i], memory_order_relaxed);
      if (nm != NULL && !atomic_load(&nm->removed) && nm->seen != epoch)
        frond__seg_name_remove(s, nm);
    }
    pthread_mutex_unlock(&s->table_mu);
    restrided(s);
  }
  pthread_mutex_unlock(&s->refresh_mu);
  if (rc == FROND_ENOMEM)
    return frond__fail(err, rc, "out of memory adding tags");
  return rc;
}

/* ---- the index by name ---- */

static int name_cmp(const void *a, const void *b) {
  const seg_name *x = *(seg_name *const *)a, *y = *(seg_name *const *)b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->name, y->name, n);
  return c != 0 ? c : (int)x->len - (int)y->len;
}

/* Merge the names added since the last build into the sorted index.
** Expects index_mu held. 0 or NOMEM (the index stays as it was). */
static int index_update(frond_seg *s) {
  seg_name **add, **v;
  size_t nadd, i, j, k;
  pthread_mutex_lock(&s->table_mu);
  add = s->added;
  nadd = s->nadded;
  s->added = NULL;
  s->nadded = s->added_cap = 0;
  pthread_mutex_unlock(&s->table_mu);
  if (nadd == 0) {
    free(add);
    return 0;
  }
  qsort(add, nadd, sizeof(*add), name_cmp);
  if ((v = malloc((s->nsorted + nadd) * sizeof(*v))) == NULL) {
    /* Give them back for the next try. */
    pthread_mutex_lock(&s->table_mu);
    if (s->added == NULL) {
      s->added = add;
      s->nadded = s->added_cap = nadd;
      add = NULL;
    } else if ((v = realloc(s->added, (s->nadded + nadd) * sizeof(*v)))) {
      memcpy(v + s->nadded, add, nadd * sizeof(*v));
      s->added = v;
      s->nadded += nadd;
      s->added_cap = s->nadded;
    }
    pthread_mutex_unlock(&s->table_mu);
    free(add);
    return FROND_ENOMEM;
  }
  for (i = j = k = 0; i < s->nsorted || j < nadd;)
    v[k++] =
        j == nadd || (i < s->nsorted && name_cmp(&s->sorted[i], &add[j]) < 0)
            ? s->sorted[i++]
            : add[j++];
  free(s->sorted);
  free(add);
  s->sorted = v;
  s->nsorted = k;
  return 0;
}

/* ---- queries ---- */

static void info_cold(const seg_name *nm, frond_tag_info *out) {
  memset(out, 0, sizeof(*out));
  memcpy(out->tag, nm->name, (size_t)nm->len + 1);
  out->step = out->row_step = nm->row_step;
}

/* The state of a name, in use or not. */
static void info_of(frond_seg *s, seg_name *nm, frond_tag_info *out) {
  seg_tag *t = atomic_load_explicit(&nm->tag, memory_order_acquire);
  if (t == NULL) {
    info_cold(nm, out);
    return;
  }
  pthread_mutex_lock(&t->mu);
  frond__seg_describe(s, t, out);
  pthread_mutex_unlock(&t->mu);
}

void frond_seg_tag_info(frond_seg_tag *h, frond_tag_info *out) {
  seg_tag *t = (seg_tag *)h;
  if (frond__seg_forked(t->s, NULL) != 0) { /* a child's copy: its name */
    memset(out, 0, sizeof(*out));
    snprintf(out->tag, sizeof(out->tag), "%s", t->nm ? t->nm->name : "");
    return;
  }
  info_of(t->s, t->nm, out);
}

static int matches(const seg_name *nm, const char *m, size_t ml) {
  return ml == 0 || (ml <= nm->len && memmem(nm->name, nm->len, m, ml));
}

static int by_name(frond_seg *s, const frond_seg_query *q, frond_tag_info **out,
                   size_t *n, size_t *total, frond_error *err) {
  const char *m = q->match != NULL ? q->match : "";
  size_t ml = strlen(m), i, seen = 0, k = 0, cap;
  size_t limit = q->limit ? q->limit : SIZE_MAX;
  frond_tag_info *v = NULL;
  int rc;
  pthread_mutex_lock(&s->index_mu);
  if ((rc = index_update(s)) != 0) {
    pthread_mutex_unlock(&s->index_mu);
    return frond__fail(err, rc, NULL);
  }
  pthread_mutex_lock(&s->table_mu);
  cap = s->nlive;
  pthread_mutex_unlock(&s->table_mu);
  if (cap > q->offset && cap - q->offset < limit)
    cap = cap - q->offset;
  else if (cap > q->offset)
    cap = limit;
  else
    cap = 0;
  if (cap > 0 && (v = calloc(cap, sizeof(*v))) == NULL) {
    pthread_mutex_unlock(&s->index_mu);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (i = 0; i < s->nsorted; i++) {
    seg_name *nm = s->sorted[i];
    if (atomic_load(&nm->removed) || !matches(nm, m, ml))
      continue;
    if (seen++ >= q->offset && k < cap)
      info_of(s, nm, &v[k++]);
    else if (k == cap && ml == 0)
      break; /* the total is known without looking further */
  }
  if (k == cap && ml == 0) {
    pthread_mutex_lock(&s->table_mu);
    seen = s->nlive;
    pthread_mutex_unlock(&s->table_mu);
  }
  pthread_mutex_unlock(&s->index_mu);
  *out = v;
  *n = k;
  *total = seen;
  return 0;
}

/* A min-heap of (rate, tag) keeps the fastest `limit`. */
typedef struct ranked {
  double rate;
  seg_tag *t;
} ranked;

static void sift_down(ranked *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    ranked tmp;
    if (l < n && h[l].rate < h[m].rate)
      m = l;
    if (r < n && h[r].rate < h[m].rate)
      m = r;
    if (m == i)
      return;
    tmp = h[i];
    h[i] = h[m];
    h[m] = tmp;
    i = m;
  }
}

static int rank_cmp(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->rate != y->rate)
    return x->rate < y->rate ? 1 : -1;
  return strcmp(x->t->nm->name, y->t->nm->name);
}

static int by_rate(frond_seg *s, const frond_seg_query *q, frond_tag_info **out,
                   size_t *n, size_t *total, frond_error *err) {
  const char *m = q->match != NULL ? q->match : "";
  size_t ml = strlen(m), keep, nh = 0, i, matched = 0;
  size_t want = q->limit ? q->offset + q->limit : SIZE_MAX;
  size_t in_use = atomic_load(&s->nhot);
  ranked *h;
  frond_tag_info *v = NULL;
  seg_tag *t;
  if (want < q->offset)
    want = SIZE_MAX; /* overflow: no limit */
  keep = want < in_use ? want : in_use;
  *out = NULL;
  *n = 0;
  *total = 0;
  if (keep == 0)
    keep = 1;
  if ((h = malloc(keep * sizeof(*h))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  for (t = atomic_load(&s->hot); t != NULL; t = t->hot_next) {
    ranked r;
    if (atomic_load(&t->nm->removed) || !matches(t->nm, m, ml))
      continue;
    matched++;
    r.rate = atomic_load_explicit(&t->rate, memory_order_relaxed);
    r.t = t;
    if (nh < keep) {
      h[nh++] = r;
      if (nh == keep)
        for (i = keep / 2 + 1; i-- > 0;)
          sift_down(h, nh, i);
    } else if (r.rate > h[0].rate) {
      h[0] = r;
      sift_down(h, nh, 0);
    }
  }
  qsort(h, nh, sizeof(*h), rank_cmp);
  if (nh > q->offset && (v = calloc(nh - q->offset, sizeof(*v))) == NULL) {
    free(h);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  for (i = q->offset; i < nh; i++)
    info_of(s, h[i].t->nm, &v[i - q->offset]);
  free(h);
  *out = v;
  *n = nh > q->offset ? nh - q->offset : 0;
  *total = matched;
  return 0;
}

int frond_seg_tag_query(frond_seg *s, const frond_seg_query *q,
                        frond_tag_info **out, size_t *n, size_t *total,
                        frond_error *err) {
  frond_seg_query all;
  size_t dummy;
  int rc;
  if (s == NULL || out == NULL || n == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if ((rc = frond__seg_forked(s, err)) != 0)
    return rc;
  if (q == NULL) {
    memset(&all, 0, sizeof(all));
    q = &all;
  }
  if (total == NULL)
    total = &dummy;
  return q->order == FROND_SEG_BY_RATE ? by_rate(s, q, out, n, total, err)
                                       : by_name(s, q, out, n, total, err);
}

int frond_seg_tag_list(frond_seg *s, frond_tag_info **out, size_t *n,
                       frond_error *err) {
  return frond_seg_tag_query(s, NULL, out, n, NULL, err);
}

/* 0.1's exported name (frond.h maps the name in source to the new one). */
#undef frond_seg_tags
FROND_EXPORT int frond_seg_tags(frond_seg *s, frond_tag_info **out, size_t *n,
                                frond_error *err);
int frond_seg_tags(frond_seg *s, frond_tag_info **out, size_t *n,
                   frond_error *err) {
  return frond_seg_tag_list(s, out, n, err);
}

/* ---- rates ---- */

void frond_seg_sample(frond_seg *s) {
  int64_t now = frond__mono_ns(), dt;
  seg_tag *t;
  if (frond__seg_forked(s, NULL) != 0)
    return;
  pthread_mutex_lock(&s->sample_mu);
  dt = s->sample_ns != 0 ? now - s->sample_ns : 0;
  s->sample_ns = now;
  for (t = atomic_load(&s->hot); t != NULL; t = t->hot_next) {
    uint64_t taken = frond__seg_taken(t);
    double r = 0;
    if (dt > 0 && taken > t->sample_last)
      r = (double)(taken - t->sample_last) * 1e9 / (double)dt;
    atomic_store_explicit(&t->rate, r, memory_order_relaxed);
    t->sample_last = taken;
    s->sample_visits++;
  }
  pthread_mutex_unlock(&s->sample_mu);
}

uint64_t frond__seg_sample_visits(frond_seg *s) {
  uint64_t n;
  pthread_mutex_lock(&s->sample_mu);
  n = s->sample_visits;
  pthread_mutex_unlock(&s->sample_mu);
  return n;
}

/* ---- a tag's state (the table's readers) ---- */

/* The step of the next load, as Leaf: the row's step first; then double
** while segments last under 15 min (capped at max_step, where Leaf keeps
** the step instead), keep up to 30 min, halve from 30 min on (never below
** the row's step). 0 means "the row's step". The time is since the last
** load, which is about how long the previous segment lasted. */
int64_t frond__seg_next_step(frond_seg *s, seg_tag *t) {
  int64_t dur, step, cap = t->max_step > 0 ? t->max_step : s->o.max_step;
  int64_t most = frond__store_max_step(s->store);
  if (frond__store_fixed_step(s->store))
    return 0; /* the row's step is the store's unit (multi:) */
  if (t->last_load_ms == 0 || t->step == 0)
    return 0;
  if (most > 0 && cap > most) /* frond://: the servers' max_range */
    cap = most;
  dur = frond__seg_clock(s) - t->last_load_ms;
  if (dur < 15 * MIN_MS)
    step = t->step * 2 <= cap ? t->step * 2 : t->step < cap ? cap : t->step;
  else if (dur < 30 * MIN_MS)
    step = t->step;
  else
    step = t->step / 2;
  step = step < t->row_step ? t->row_step : step;
  return most > 0 && step > most ? most : step;
}

void frond__seg_drop(seg_tag *t) {
  uint64_t w = atomic_load(&t->word);
  seg_entry *e = entry_of(t, w >> SEG_GEN_SHIFT);
  int64_t size = e != NULL ? atomic_load(&e->size) : 0; /* to count its IDs */
  /* Odd from before the entries go to after the word moved: a count in
  ** between would find the word on a generation without its entry. */
  atomic_fetch_add(&t->moving, 1);
  t->gen++;
  entry_write(&t->e[0], SEG_NO_GEN, 0, 0, 1, 0, 0);
  entry_write(&t->e[1], SEG_NO_GEN, 0, 0, 1, 0, 0);
  t->e[0].res_start = t->e[0].res_end = t->e[1].res_start = 0;
  t->e[1].res_end = t->last_start = t->last_end = 0; /* nothing to give */
  move_word(t, w, size);
  t->want = 0;
  t->range_need = 0;
  pthread_cond_broadcast(&t->cv);
}

/* Describe generation g's entry; off is its taken offset. Under mu. */
static void describe_entry(seg_tag *t, uint64_t g, uint64_t off,
                           frond_seg_buffer *d) {
  seg_entry *e = entry_of(t, g);
  int64_t size;
  if (e == NULL)
    return;
  size = atomic_load(&e->size);
  if (off > (uint64_t)size)
    off = (uint64_t)size;
  /* Numbers: a strided segment's end is one stride past its last ID. */
  d->start = atomic_load(&e->start);
  d->end = size > (INT64_MAX - d->start) / e->stride
               ? INT64_MAX /* one stride past the last ID passes the range */
               : d->start + size * e->stride;
  d->pos = off == (uint64_t)size ? d->end : d->start + (int64_t)off * e->stride;
  d->step = e->step;
  d->ready = 1;
}

void frond__seg_describe(frond_seg *s, seg_tag *t, frond_tag_info *v) {
  uint64_t w = atomic_load(&t->word);
  memset(v, 0, sizeof(*v));
  memcpy(v->tag, t->nm->name, (size_t)t->nm->len + 1);
  describe_entry(t, w >> SEG_GEN_SHIFT, w & SEG_OFF_MASK, &v->current);
  describe_entry(t, ((w >> SEG_GEN_SHIFT) + 1) & SEG_GEN_MASK, 0, &v->next);
  v->issued = frond__seg_taken(t);
  v->step = frond__seg_next_step(s, t);
  if (v->step == 0)
    v->step = t->row_step;
  v->row_step = t->row_step;
  v->last_load_ms = t->last_load_unix_ms;
  v->loads = t->loads;
  v->load_failures = t->failures;
  v->loading = t->want;
  v->in_use = 1;
  v->rate = atomic_load_explicit(&t->rate, memory_order_relaxed);
}

uint64_t frond__seg_taken(seg_tag *t) {
  unsigned spins = 0;
  for (;;) {
    /* done and the word, read between two equal, even values of moving:
    ** no switch_gen moved the word or counted in done meanwhile. */
    uint64_t m = atomic_load(&t->moving), d, w, g, off, size = 0;
    seg_entry *e;
    if (m & 1) { /* a switch under way, a few instructions long */
      if (++spins % 64 == 0)
        sched_yield();
      continue;
    }
    d = atomic_load(&t->done);
    w = atomic_load(&t->word);
    g = w >> SEG_GEN_SHIFT;
    off = w & SEG_OFF_MASK;
    e = &t->e[g & 1];
    if (atomic_load(&e->gen) == g)
      size = (uint64_t)atomic_load(&e->size);
    if (atomic_load(&t->moving) == m)
      return d + (off < size ? off : size);
  }
}
