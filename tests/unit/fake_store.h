/* SPDX-License-Identifier: Apache-2.0 */
/*
** fake_store.h -- an in-memory segment store for unit tests ("fake:" URIs)
** that fails, stalls or holds on demand, a fake clock, and what the
** segment allocator's tests share (T(), next_id()).
**
** Header-only: each test program includes it once. Call fake_install()
** before opening an allocator on "fake:".
*/
#ifndef FROND_FAKE_STORE_H
#define FROND_FAKE_STORE_H

#include "testutil.h"

#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_ROWS 32

typedef struct fake_row {
  char tag[FROND_TAG_MAX + 1];
  int64_t max_id, step;
  int live;
} fake_row;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  fake_row rows[FAKE_ROWS];
  int fail; /* every operation fails with STORE (< 0: allocations fail with
            ** that code, a refusal) */
  int hold; /* alloc blocks until cleared */
  char hold_tag[FROND_TAG_MAX + 1]; /* alloc of this tag blocks until "" */
  int gets;                         /* tag look-ups (xTagGet) */
  int64_t stall_ns;                 /* alloc sleeps this long */
  int allocs;                       /* successful allocations */
  int64_t last_step;
  int64_t max_step;     /* the largest step an allocation asked for */
  int64_t refuse_above; /* > 0: a larger step is refused, COUNT_INVALID */
  /* Called by an allocation with its answer, in the loader's thread, after
  ** the store and before the allocator sees it (no lock held). */
  void (*after_alloc)(const char *tag, int rc);
} fake;

static atomic_llong fake_now = 1700000000000;

static int64_t fake_now_read(void *ctx) {
  (void)ctx;
  return atomic_load(&fake_now);
}

static fake_row *fake_find(const char *tag) {
  int i;
  for (i = 0; i < FAKE_ROWS; i++)
    if (fake.rows[i].live && strcmp(fake.rows[i].tag, tag) == 0)
      return &fake.rows[i];
  return NULL;
}

static void fake_reset(void) {
  static int inited;
  if (!inited) {
    pthread_mutex_init(&fake.mu, NULL);
    pthread_cond_init(&fake.cv, NULL);
    inited = 1;
  }
  pthread_mutex_lock(&fake.mu);
  memset(fake.rows, 0, sizeof(fake.rows));
  fake.fail = fake.hold = 0;
  fake.hold_tag[0] = '\0';
  fake.gets = 0;
  fake.stall_ns = 0;
  fake.allocs = 0;
  fake.last_step = 0;
  fake.max_step = 0;
  fake.refuse_above = 0;
  fake.after_alloc = NULL;
  pthread_mutex_unlock(&fake.mu);
}

static void fake_add(const char *tag, int64_t max_id, int64_t step) {
  int i;
  pthread_mutex_lock(&fake.mu);
  for (i = 0; fake.rows[i].live; i++)
    ;
  snprintf(fake.rows[i].tag, sizeof(fake.rows[i].tag), "%s", tag);
  fake.rows[i].max_id = max_id;
  fake.rows[i].step = step;
  fake.rows[i].live = 1;
  pthread_mutex_unlock(&fake.mu);
}

static inline void fake_delete(const char *tag) {
  pthread_mutex_lock(&fake.mu);
  fake_find(tag)->live = 0;
  pthread_mutex_unlock(&fake.mu);
}

static void fake_set(int *field, int v) {
  pthread_mutex_lock(&fake.mu);
  *field = v;
  pthread_cond_broadcast(&fake.cv);
  pthread_mutex_unlock(&fake.mu);
}

/* Make allocations of tag block (NULL: release them). */
static inline void fake_hold_tag(const char *tag) {
  pthread_mutex_lock(&fake.mu);
  snprintf(fake.hold_tag, sizeof(fake.hold_tag), "%s", tag ? tag : "");
  pthread_cond_broadcast(&fake.cv);
  pthread_mutex_unlock(&fake.mu);
}

static inline int fake_gets(void) {
  int n;
  pthread_mutex_lock(&fake.mu);
  n = fake.gets;
  pthread_mutex_unlock(&fake.mu);
  return n;
}

static inline int fake_allocs(void) {
  int n;
  pthread_mutex_lock(&fake.mu);
  n = fake.allocs;
  pthread_mutex_unlock(&fake.mu);
  return n;
}

static const frond_store_methods fake_methods;

static int fake_open(const char *uri, frond_store **out, frond_error *err) {
  frond_store *st = calloc(1, sizeof(*st));
  st->methods = &fake_methods;
  *out = st;
  return 0;
}

static void fake_close(frond_store *st) {
  free(st);
}

static int fake_schema(frond_store *st, frond_error *err) {
  return 0;
}

static int fake_down(frond_error *err) {
  return frond__fail(err, FROND_ESTORE, "fake store is down");
}

static int fake_alloc_row(frond_store *st, const char *tag, int64_t step,
                          int64_t *max_id, int64_t *row_step,
                          frond_error *err) {
  fake_row *r;
  int64_t stall;
  pthread_mutex_lock(&fake.mu);
  while (fake.hold || strcmp(fake.hold_tag, tag) == 0)
    pthread_cond_wait(&fake.cv, &fake.mu);
  stall = fake.stall_ns;
  pthread_mutex_unlock(&fake.mu);
  frond__sleep_ns(stall);
  pthread_mutex_lock(&fake.mu);
  if (fake.fail) { /* a negative one: the store refuses with that code */
    int code = fake.fail;
    pthread_mutex_unlock(&fake.mu);
    return code < 0 ? frond__fail(err, code, "fake store refuses")
                    : fake_down(err);
  }
  if ((r = fake_find(tag)) == NULL) {
    pthread_mutex_unlock(&fake.mu);
    return frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  }
  if (fake.refuse_above > 0 && step > fake.refuse_above) {
    pthread_mutex_unlock(&fake.mu);
    return frond__fail(err, FROND_ECOUNT_INVALID, "fake store: step %lld",
                       (long long)step);
  }
  r->max_id += step > 0 ? step : r->step;
  *max_id = r->max_id;
  *row_step = r->step;
  fake.allocs++;
  fake.last_step = step;
  if (step > fake.max_step)
    fake.max_step = step;
  pthread_mutex_unlock(&fake.mu);
  return 0;
}

static int fake_alloc(frond_store *st, const char *tag, int64_t step,
                      int64_t *max_id, int64_t *row_step, frond_error *err) {
  int rc = fake_alloc_row(st, tag, step, max_id, row_step, err);
  void (*after)(const char *, int);
  pthread_mutex_lock(&fake.mu);
  after = fake.after_alloc;
  pthread_mutex_unlock(&fake.mu);
  if (after != NULL)
    after(tag, rc);
  return rc;
}

static void fake_row_out(const fake_row *r, frond_tag_row *o) {
  memset(o, 0, sizeof(*o));
  memcpy(o->tag, r->tag, sizeof(o->tag));
  o->max_id = r->max_id;
  o->step = r->step;
}

static int fake_list(frond_store *st, frond_tag_row **out, size_t *n,
                     frond_error *err) {
  int i;
  pthread_mutex_lock(&fake.mu);
  if (fake.fail) {
    pthread_mutex_unlock(&fake.mu);
    return fake_down(err);
  }
  *out = calloc(FAKE_ROWS, sizeof(**out));
  *n = 0;
  for (i = 0; i < FAKE_ROWS; i++)
    if (fake.rows[i].live)
      fake_row_out(&fake.rows[i], &(*out)[(*n)++]);
  pthread_mutex_unlock(&fake.mu);
  return 0;
}

static int fake_get(frond_store *st, const char *tag, frond_tag_row *out,
                    frond_error *err) {
  fake_row *r;
  int rc = 0;
  pthread_mutex_lock(&fake.mu);
  fake.gets++;
  if (fake.fail)
    rc = fake_down(err);
  else if ((r = fake_find(tag)) == NULL)
    rc = frond__fail(err, FROND_ETAG_NOT_FOUND, "tag \"%s\" not found", tag);
  else
    fake_row_out(r, out);
  pthread_mutex_unlock(&fake.mu);
  return rc;
}

static const frond_store_methods fake_methods = {
    1,          "fake:",   "fake",   fake_open, fake_close, fake_schema,
    fake_alloc, fake_list, fake_get, NULL,      NULL,       NULL,
    NULL,       NULL,      NULL,     NULL,      NULL};

static void fake_install(void) {
  static int done;
  if (!done)
    frond__store_register(&fake_methods);
  done = 1;
}

/* Silent log sink that keeps the last line, so tests can assert on it. */
static char fake_last_log[1024];
static pthread_mutex_t fake_log_mu = PTHREAD_MUTEX_INITIALIZER;
static void fake_log(void *ctx, int level, const char *msg) {
  (void)ctx;
  (void)level;
  pthread_mutex_lock(&fake_log_mu);
  snprintf(fake_last_log, sizeof(fake_last_log), "%s", msg);
  pthread_mutex_unlock(&fake_log_mu);
}

/* A tag literal as the (name, len) pair the allocator takes. */
#define T(name) name, sizeof(name) - 1

/* An allocator's options on the fake store: its clock, short waits and
** retries. */
static inline frond_seg_options fake_seg_options(void) {
  frond_seg_options o;
  frond_seg_options_init(&o);
  o.clock = fake_now_read;
  o.wait_ms = 100;
  o.retry_min_ms = 10;
  o.retry_max_ms = 50;
  return o;
}

/* A tag's state as frond_seg_tag_list gives it (zeros when unknown). */
static inline frond_tag_info fake_tag_info(frond_seg *s, const char *tag) {
  frond_tag_info *v, r;
  size_t n, i;
  memset(&r, 0, sizeof(r));
  assert_int_equal(frond_seg_tag_list(s, &v, &n, NULL), 0);
  for (i = 0; i < n; i++)
    if (strcmp(v[i].tag, tag) == 0)
      r = v[i];
  frond_free(v);
  return r;
}

/* Wait until the tag's next buffer is ready: bounded, 30 s, for a
** loaded machine; returns as soon as it is. */
static inline frond_tag_info fake_wait_next_ready(frond_seg *s,
                                                  const char *tag) {
  int64_t deadline = frond__mono_ns() + 30000000000;
  frond_tag_info r;
  do {
    r = fake_tag_info(s, tag);
    if (r.next.ready)
      return r;
    frond__sleep_ns(1000000);
  } while (frond__mono_ns() < deadline);
  fail_msg("next buffer of %s never became ready", tag);
  return r;
}

/* An allocator on the fake store, logging to fake_log. */
static inline frond_seg *fake_seg_open(const frond_seg_options *o) {
  frond_seg *s = NULL;
  frond_error e = {0, ""};
  fake_install();
  frond_log_set(fake_log, NULL, FROND_LOG_DEBUG);
  if (frond_seg_open(&s, "fake:", o, &e) != 0)
    fail_msg("open: %s", e.message);
  return s;
}

/* The next ID of tag; the test fails when there is none. */
static int64_t next_id(frond_seg *s, const char *tag) {
  int64_t id = -1;
  frond_error e = {0, ""};
  int rc = frond_seg_next(s, tag, strlen(tag), &id, &e);
  if (rc != 0)
    fail_msg("next(%s): %s: %s", tag, frond_err_name(rc), e.message);
  return id;
}

#endif /* FROND_FAKE_STORE_H */
