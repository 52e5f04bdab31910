/* SPDX-License-Identifier: Apache-2.0 */
/*
** quota.c -- quotas of IDs per client and per tag (see quota.h): the
** server's buckets, the check every request passes before it is served
** (frond__quota_take, called by the request layer), and their metrics.
**
** Counted are IDs, not requests: a batch of 1,000 takes 1,000, a range
** lease of n takes n, INCRBY and every command of a Redis transaction the
** IDs it issues; a store call (tag administration) takes none. Client
** rules count every ID and ID string; tag rules count those of a segment
** tag: INCR, ID.NEXT, ranges, Leaf's and /v1's segment paths, and the
** strings of a format drawn from a tag (seq). A request takes from its
** client's bucket and its tag's, or from neither: a refused request
** issues nothing.
**
** Buckets of exact names are made at start, one per rule. Buckets of
** patterns ("*", "orders:*") are made on demand, one per name, in one of
** two tables (clients, tags) of quota_buckets slots each, so that no
** sequence of names a client can send grows memory. A slot is found
** without a lock; a name seen for the first time takes the table's lock
** to claim one. A slot is given to another name only when its bucket is
** full (idle long enough to have refilled), which loses nothing: a full
** bucket and a new one are the same. When every slot in reach holds a
** bucket in use, the new name shares its rule's one overflow bucket,
** which never grants a name more than its own would.
**
** Precision: exact across worker threads (one compare-and-swap on one
** word per bucket), to one ID of the clock's rounding. A slot reclaimed
** at the instant its old name takes from it is found out by the taker,
** which takes again from its name's new bucket: a race may charge a
** request twice, never let one through uncounted.
*/
#include "server/quota.h"

#include "base/base.h"
#include "server/server.h"

#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* Slots a name may be in: those from its hash's, this many. */
#define PROBE 32
/* A slot's key: its name's hash, or one of these. */
#define EMPTY 0
#define RECLAIMING 1

typedef struct bucket {
  _Atomic uint64_t key;     /* a slot's: the name's hash; EMPTY, RECLAIMING */
  _Atomic uint64_t tat;     /* the GCRA word (quota_parse.c) */
  _Atomic uint64_t refused; /* requests refused by this bucket */
  atomic_int rule;          /* a slot's: its rule, by index */
  char pad[64 - 3 * sizeof(uint64_t) - sizeof(int)]; /* a line each */
} bucket;

/* The buckets of one kind: rules, one bucket per rule (an exact name's,
** or a pattern's overflow), and the slots of the patterns' names. */
typedef struct table {
  const char *kind; /* "client", "tag": the metrics' label */
  frond__quota_rule rules[FROND__QUOTA_RULES_MAX];
  size_t nrules;
  bucket *fixed; /* nrules */
  int patterns;  /* a pattern among the rules: slots are used */
  bucket *slots; /* mask + 1, when patterns */
  char (*names)[FROND__QUOTA_NAME_MAX + 1]; /* the slots', under lock */
  uint64_t mask;
  pthread_mutex_t lock; /* claiming a slot; the names */
  _Atomic uint64_t used, overflowed;
} table;

struct frond__quota {
  unsigned char hash_key[crypto_shorthash_KEYBYTES]; /* random, per process */
  table clients, tags;
};

static _Thread_local uint64_t last_retry_s;

uint64_t frond__quota_retry_after(void) {
  return last_retry_s;
}

/* -------------------------------------------------------------- tables */

static int table_init(table *t, const char *kind, const char *key,
                      const char *text, size_t max_name, int64_t slots,
                      frond_error *err) {
  size_t i;
  uint64_t cap = 1;
  int rc;
  t->kind = kind;
  if ((rc = frond__quota_parse(key, text, strlen(text), max_name, t->rules,
                               FROND__QUOTA_RULES_MAX, &t->nrules, err)) != 0)
    return rc;
  if (t->nrules == 0)
    return 0;
  if ((t->fixed = aligned_alloc(64, t->nrules * sizeof(bucket))) == NULL)
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  memset(t->fixed, 0, t->nrules * sizeof(bucket));
  for (i = 0; i < t->nrules; i++)
    t->patterns |= t->rules[i].prefix;
  if (!t->patterns)
    return 0;
  while (cap < (uint64_t)slots)
    cap <<= 1;
  t->mask = cap - 1;
  t->slots = aligned_alloc(64, cap * sizeof(bucket));
  t->names = calloc(cap, sizeof *t->names);
  if (t->slots == NULL || t->names == NULL)
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  memset(t->slots, 0, cap * sizeof(bucket));
  pthread_mutex_init(&t->lock, NULL);
  return 0;
}

static void table_free(table *t) {
  free(t->fixed);
  free(t->slots);
  free(t->names);
  if (t->patterns)
    pthread_mutex_destroy(&t->lock);
}

int frond__quota_create(frond__server *srv, frond_error *err) {
  frond__quota *q;
  const frond__config *c = &srv->cfg;
  srv->quota = NULL;
  if ((q = calloc(1, sizeof *q)) == NULL)
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  if (table_init(&q->clients, "client", "quota_client", c->quota_client,
                 FROND__QUOTA_CLIENT_MAX, c->quota_buckets, err) != 0 ||
      table_init(&q->tags, "tag", "quota_tag", c->quota_tag,
                 FROND__QUOTA_NAME_MAX, c->quota_buckets, err) != 0) {
    srv->quota = q;
    frond__quota_free(srv);
    return err->code;
  }
  if (q->clients.nrules == 0 && q->tags.nrules == 0) {
    free(q); /* none: the request layer's one branch, and nothing else */
    return 0;
  }
  randombytes_buf(q->hash_key, sizeof q->hash_key);
  srv->quota = q;
  return 0;
}

void frond__quota_free(frond__server *srv) {
  frond__quota *q = srv->quota;
  if (q == NULL)
    return;
  table_free(&q->clients);
  table_free(&q->tags);
  free(q);
  srv->quota = NULL;
}

static uint64_t name_hash(const frond__quota *q, const char *name, size_t len) {
  uint64_t h;
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, (const unsigned char *)name, len, q->hash_key);
  memcpy(&h, out, sizeof h);
  return h <= RECLAIMING ? h + 2 : h;
}

/* The slot of hash h, or NULL. Lock-free: a slot once claimed is never
** EMPTY again, so a name is in reach before the first empty slot. */
static bucket *slot_find(table *t, uint64_t h) {
  uint64_t i, k;
  for (i = 0; i < PROBE; i++) {
    bucket *s = &t->slots[(h + i) & t->mask];
    if ((k = atomic_load(&s->key)) == h)
      return s;
    if (k == EMPTY)
      return NULL;
  }
  return NULL;
}

/* Claim a slot for name (hash h) of rule ri, under t->lock: an empty one,
** else the one whose bucket has been full the longest. NULL when every
** slot in reach holds a bucket in use. */
static bucket *slot_claim(table *t, uint64_t h, const char *name, size_t len,
                          int ri, uint64_t now_ns) {
  bucket *s, *best = NULL;
  uint64_t i, k, idle = 0, v, t0;
  const frond__quota_rule *r;
  pthread_mutex_lock(&t->lock);
  if ((s = slot_find(t, h)) != NULL)
    goto out; /* claimed meanwhile */
  for (i = 0; i < PROBE; i++) {
    s = &t->slots[(h + i) & t->mask];
    if ((k = atomic_load(&s->key)) == EMPTY) {
      atomic_fetch_add(&t->used, 1);
      goto claim;
    }
    r = &t->rules[atomic_load(&s->rule)];
    t0 = frond__quota_clock(now_ns, r->rate);
    v = atomic_load(&s->tat);
    /* Full for longer: idle the most, in seconds of its own rate. */
    if (v <= t0 && (best == NULL || (t0 - v) / r->rate >= idle)) {
      best = s;
      idle = (t0 - v) / r->rate;
    }
  }
  if ((s = best) == NULL)
    goto out;
  /* Out of reach of its name's takers first, then emptied only if no
  ** taker got in between (one who did made it not full). */
  k = atomic_load(&s->key);
  atomic_store(&s->key, RECLAIMING);
  v = atomic_load(&s->tat);
  r = &t->rules[atomic_load(&s->rule)];
  if (v > frond__quota_clock(now_ns, r->rate) ||
      !atomic_compare_exchange_strong(&s->tat, &v, 0)) {
    atomic_store(&s->key, k);
    s = NULL;
    goto out;
  }
claim:
  atomic_store(&s->tat, 0);
  atomic_store(&s->refused, 0);
  atomic_store(&s->rule, ri);
  memcpy(t->names[s - t->slots], name, len);
  t->names[s - t->slots][len] = '\0';
  atomic_store(&s->key, h);
out:
  pthread_mutex_unlock(&t->lock);
  return s;
}

/* Take n for name from table t: 0 taken (*got the bucket, to give back
** from), 1 refused (*got the bucket that refused), -1 no rule. */
static int take(frond__quota *q, table *t, const char *name, size_t len,
                uint64_t now_ns, uint64_t n, bucket **got,
                const frond__quota_rule **rule) {
  const frond__quota_rule *r =
      frond__quota_match(t->rules, t->nrules, name, len);
  bucket *s;
  uint64_t h;
  int tries, rc;
  if (r == NULL)
    return -1;
  *rule = r;
  *got = &t->fixed[r - t->rules];
  if (!r->prefix)
    return frond__quota_bucket_take(&(*got)->tat, r->rate, r->burst, now_ns, n,
                                    &last_retry_s);
  /* A name no bucket may have (a tag that will be refused TAG_INVALID)
  ** counts under its rule's shared bucket, never unlimited. */
  if (len > FROND__QUOTA_NAME_MAX || !frond__quota_name_ok(name, len))
    goto shared;
  h = name_hash(q, name, len);
  for (tries = 0; tries < 4; tries++) {
    if ((s = slot_find(t, h)) == NULL &&
        (s = slot_claim(t, h, name, len, (int)(r - t->rules), now_ns)) == NULL)
      break;
    rc = frond__quota_bucket_take(&s->tat, r->rate, r->burst, now_ns, n,
                                  &last_retry_s);
    /* Still this name's slot: the take was on its bucket. */
    if (atomic_load(&s->key) == h) {
      *got = s;
      return rc;
    }
  }
  atomic_fetch_add(&t->overflowed, 1);
shared:
  return frond__quota_bucket_take(&(*got)->tat, r->rate, r->burst, now_ns, n,
                                  &last_retry_s);
}

static int refuse(const table *t, bucket *b, const frond__quota_rule *r,
                  const char *name, size_t len, uint64_t n, frond_error *err) {
  char when[64];
  atomic_fetch_add(&b->refused, 1);
  if (b != &t->fixed[r - t->rules]) /* the rule's count, of all its names */
    atomic_fetch_add(&t->fixed[r - t->rules].refused, 1);
  if (last_retry_s == UINT64_MAX)
    snprintf(when, sizeof when, "ask for at most %llu at once",
             (unsigned long long)r->burst);
  else
    snprintf(when, sizeof when, "retry in %llu s",
             (unsigned long long)last_retry_s);
  return frond__fail(err, FROND_EQUOTA_EXCEEDED,
                     "%s \"%.*s\" is over its quota (rule %s: %llu IDs/s, "
                     "burst %llu): %llu asked; %s",
                     t->kind, (int)(len > 128 ? 128 : len), name, r->name,
                     (unsigned long long)r->rate, (unsigned long long)r->burst,
                     (unsigned long long)n, when);
}

int frond__quota_take(frond__server *srv, const frond__req *r,
                      frond_error *err) {
  frond__quota *q = srv->quota;
  const char *client = r->client != NULL ? r->client->name : "anonymous";
  const char *tag = NULL;
  size_t clen = strnlen(client, FROND__QUOTA_CLIENT_MAX), tlen = 0;
  const frond__quota_rule *cr = NULL, *tr = NULL;
  bucket *cb = NULL, *tb = NULL;
  uint64_t now = frond__clock_ns();
  int c, t;
  switch (r->op) {
  case FROND__REQ_SEGMENT:
  case FROND__REQ_RANGE:
    tag = r->tag;
    tlen = r->len;
    break;
  case FROND__REQ_FORMAT:
    if ((tag = frond_format_tag(r->nf->f)) != NULL)
      tlen = strlen(tag);
    break;
  case FROND__REQ_STORE:
    return 0; /* issues no ID */
  default:
    break;
  }
  if ((c = take(q, &q->clients, client, clen, now, r->n, &cb, &cr)) == 1)
    return refuse(&q->clients, cb, cr, client, clen, r->n, err);
  if (tag == NULL ||
      (t = take(q, &q->tags, tag, tlen, now, r->n, &tb, &tr)) != 1)
    return 0;
  if (c == 0)
    frond__quota_bucket_give(&cb->tat, r->n);
  return refuse(&q->tags, tb, tr, tag, tlen, r->n, err);
}

/* ------------------------------------------------------------- metrics */

/* A label value: backslash, quote and newline escaped, as the text format
** asks. */
static const char *label(char *dst, size_t cap, const char *s) {
  size_t n = 0;
  for (; *s && n + 3 < cap; s++) {
    if (*s == '\\' || *s == '"' || *s == '\n')
      dst[n++] = '\\';
    dst[n++] = *s == '\n' ? 'n' : *s;
  }
  dst[n] = '\0';
  return dst;
}

/* A named bucket of t in the families: its name, its rule. */
typedef struct shown {
  const char *name;
  const frond__quota_rule *rule;
  bucket *b;
} shown;

/* The names of t shown, at most cap: every exact rule's, then the slots'
** with the most refusals (up to top of them). With t->lock held. */
static size_t pick(table *t, shown *out, size_t cap, size_t top) {
  size_t n = 0, i, j, first;
  uint64_t k;
  for (i = 0; i < t->nrules && n < cap; i++)
    if (!t->rules[i].prefix)
      out[n++] = (shown){t->rules[i].name, &t->rules[i], &t->fixed[i]};
  first = n;
  for (i = 0; t->patterns && i <= t->mask && top > 0; i++) {
    bucket *s = &t->slots[i];
    uint64_t refused = atomic_load(&s->refused);
    if ((k = atomic_load(&s->key)) <= RECLAIMING || refused == 0)
      continue;
    if (n - first == top) { /* full: replace the least refused */
      for (j = first + 1, k = first; j < n; j++)
        if (atomic_load(&out[j].b->refused) < atomic_load(&out[k].b->refused))
          k = j;
      if (atomic_load(&out[k].b->refused) >= refused)
        continue;
      j = k;
    } else if (n < cap) {
      j = n++;
    } else {
      continue;
    }
    out[j] = (shown){t->names[i], &t->rules[atomic_load(&s->rule)], s};
  }
  return n;
}

static void families(frond__buf *b, table *t, shown *sh, size_t n, uint64_t now,
                     int tokens) {
  char l[FROND__QUOTA_NAME_MAX * 2 + 8];
  size_t i;
  for (i = 0; i < n; i++) {
    label(l, sizeof l, sh[i].name);
    if (tokens)
      frond__buf_printf(
          b, "frond_quota_tokens{%s=\"%s\"} %llu\n", t->kind, l,
          (unsigned long long)frond__quota_bucket_tokens(
              &sh[i].b->tat, sh[i].rule->rate, sh[i].rule->burst, now));
    else
      frond__buf_printf(b, "frond_quota_refused_total{%s=\"%s\"} %llu\n",
                        t->kind, l,
                        (unsigned long long)atomic_load(&sh[i].b->refused));
  }
}

void frond__quota_metrics(frond__server *srv, frond__buf *b) {
  frond__quota *q = srv->quota;
  table *ts[2];
  size_t n[2], i, j, top = (size_t)srv->cfg.metrics_top_tags;
  shown *sh[2];
  uint64_t now = frond__clock_ns();
  char l[FROND__QUOTA_NAME_MAX * 2 + 8];
  if (q == NULL)
    return;
  ts[0] = &q->clients;
  ts[1] = &q->tags;
  for (i = 0; i < 2; i++) {
    size_t cap = ts[i]->nrules + top;
    sh[i] = malloc((cap > 0 ? cap : 1) * sizeof(shown));
    if (ts[i]->patterns)
      pthread_mutex_lock(&ts[i]->lock);
    n[i] = sh[i] != NULL ? pick(ts[i], sh[i], cap, top) : 0;
  }
  frond__buf_printf(
      b, "# HELP frond_quota_refused_total Requests refused for a quota, by "
         "client and by tag: each exact rule's name, and the metrics_top_tags "
         "names of pattern rules refused the most.\n"
         "# TYPE frond_quota_refused_total counter\n");
  for (i = 0; i < 2; i++)
    families(b, ts[i], sh[i], n[i], now, 0);
  frond__buf_printf(b, "# HELP frond_quota_tokens IDs a bucket could give now "
                       "(the same names).\n"
                       "# TYPE frond_quota_tokens gauge\n");
  for (i = 0; i < 2; i++)
    families(b, ts[i], sh[i], n[i], now, 1);
  for (i = 0; i < 2; i++) {
    if (ts[i]->patterns)
      pthread_mutex_unlock(&ts[i]->lock);
    free(sh[i]);
  }
  frond__buf_printf(b, "# HELP frond_quota_rule_refused_total Requests "
                       "refused by each rule as configured (a pattern: all "
                       "its names).\n"
                       "# TYPE frond_quota_rule_refused_total counter\n");
  for (i = 0; i < 2; i++)
    for (j = 0; j < ts[i]->nrules; j++)
      frond__buf_printf(
          b, "frond_quota_rule_refused_total{kind=\"%s\",rule=\"%s\"} %llu\n",
          ts[i]->kind, label(l, sizeof l, ts[i]->rules[j].name),
          (unsigned long long)atomic_load(&ts[i]->fixed[j].refused));
  frond__buf_printf(b, "# HELP frond_quota_buckets Buckets of pattern rules' "
                       "names in use, of quota_buckets for each kind.\n"
                       "# TYPE frond_quota_buckets gauge\n");
  for (i = 0; i < 2; i++)
    frond__buf_printf(b, "frond_quota_buckets{kind=\"%s\"} %llu\n", ts[i]->kind,
                      (unsigned long long)atomic_load(&ts[i]->used));
  frond__buf_printf(
      b, "# HELP frond_quota_overflow_total Requests of a name that found "
         "every bucket in reach in use and shared its rule's one bucket.\n"
         "# TYPE frond_quota_overflow_total counter\n");
  for (i = 0; i < 2; i++)
    frond__buf_printf(b, "frond_quota_overflow_total{kind=\"%s\"} %llu\n",
                      ts[i]->kind,
                      (unsigned long long)atomic_load(&ts[i]->overflowed));
}
