/* SPDX-License-Identifier: Apache-2.0 */
/*
** bench_segment.c -- the segment allocator's hot path and its latency
** while the store is slow.
**
**   bench_segment [STORE-URI]   (postgresql://..., mysql://..., sqlite:...)
**   bench_segment --hot         (part 1 only)
**
** 1. ns per ID of frond_seg_next (by name) and frond_seg_tag_next (on a
**    resolved handle: inline, and through the exported function) with 1
**    and 2 threads on one tag, beside a bare atomic fetch-add on a shared
**    word measured in the same run, both dropping their values; then both
**    keeping each value (stored, as a caller keeps an ID); a strided
**    tag's call (served from the slow path) beside the kept fetch-add;
**    and store transactions per million IDs.
** 2. p50 / p99.9 / max latency of next() over 10 million calls while
**    every store allocation takes 100 ms, beside an instant store (an
**    in-memory store inside this program). With a store URI, the same
**    against it (make it slow first: scripts/pg.sh delay URI 100,
**    scripts/mariadb.sh delay DIR 100).
**
**   bench_segment --stores NAME=URI...
**
** Only the latency table: the instant store, then each URI given (a
** "slow+" before a URI: every allocation 100 ms later, a hook in this
** program, for SQLite, which has no server to slow). bench/store/slow.sh
** runs it for every engine, direct and slowed, in one run.
** Medians over repetitions; ratios against the reference.
*/
#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 9
#define IDS_PER_THREAD 10000000
#define LAT_CALLS 10000000
#define LAT_REPS 5

/* ---- an in-memory store whose allocations take delay_ns ---- */

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t mem_max_id = 1, mem_step = 1000, delay_ns;
static atomic_long mem_allocs;

static int mem_open(const char *uri, frond_store **out, frond_error *err);
static void mem_close(frond_store *st) {
  free(st);
}
static int mem_schema(frond_store *st, frond_error *err) {
  return 0;
}
static int mem_alloc(frond_store *st, const char *tag, int64_t step,
                     int64_t *max_id, int64_t *row_step, frond_error *err) {
  frond__sleep_ns(delay_ns);
  pthread_mutex_lock(&mem_mu);
  mem_max_id += step > 0 ? step : mem_step;
  *max_id = mem_max_id;
  *row_step = mem_step;
  pthread_mutex_unlock(&mem_mu);
  atomic_fetch_add(&mem_allocs, 1);
  return 0;
}
/* Two tags: "bench", and "strided", whose IDs are 1 modulo 2 (a stride
** is served from the slow path: its cost beside a plain tag's). */
static int mem_list(frond_store *st, frond_tag_row **out, size_t *n,
                    frond_error *err) {
  *out = calloc(2, sizeof(**out));
  strcpy((*out)[0].tag, "bench");
  (*out)[0].step = mem_step;
  strcpy((*out)[1].tag, "strided");
  (*out)[1].step = mem_step;
  *n = 2;
  return 0;
}
static int mem_control(frond_store *st, int op, void *arg, frond_error *err) {
  frond__store_seq_arg *q = arg;
  if (op != FROND__STORE_SEQ_GET)
    return FROND_EINVAL;
  q->seq.max = 0;
  q->seq.increment = strcmp(q->tag, "strided") == 0 ? 2 : 1;
  q->seq.offset = q->seq.increment > 1 ? 1 : 0;
  return 0;
}
static int mem_get(frond_store *st, const char *tag, frond_tag_row *out,
                   frond_error *err) {
  return frond__fail(err, FROND_ETAG_NOT_FOUND, NULL);
}
static const frond_store_methods mem_methods = {
    4,         "mem:",   "memory", mem_open, mem_close,  mem_schema,
    mem_alloc, mem_list, mem_get,  NULL,     NULL,       NULL,
    NULL,      NULL,     NULL,     NULL,     mem_control};
static int mem_open(const char *uri, frond_store **out, frond_error *err) {
  *out = calloc(1, sizeof(**out));
  (*out)->methods = &mem_methods;
  return 0;
}

/* ---- "slow+URI": the store of URI, every allocation 100 ms later ---- */

typedef struct slow_store {
  frond_store base;
  frond_store *inner;
} slow_store;

#define INNER(st) (((slow_store *)(st))->inner)

static int slow_open(const char *uri, frond_store **out, frond_error *err);
static void slow_close(frond_store *st) {
  frond__store_close(INNER(st));
  free(st);
}
static int slow_schema(frond_store *st, frond_error *err) {
  return frond__store_ensure_schema(INNER(st), err);
}
static int slow_alloc(frond_store *st, const char *tag, int64_t step,
                      int64_t *max_id, int64_t *row_step, frond_error *err) {
  frond__sleep_ns(100000000);
  return frond__store_alloc(INNER(st), tag, step, max_id, row_step, err);
}
static int slow_list(frond_store *st, frond_tag_row **out, size_t *n,
                     frond_error *err) {
  return frond__store_tag_list(INNER(st), out, n, err);
}
static int slow_get(frond_store *st, const char *tag, frond_tag_row *out,
                    frond_error *err) {
  return frond__store_tag_get(INNER(st), tag, out, err);
}
static const frond_store_methods slow_methods = {
    1,          "slow+",   "slow",   slow_open, slow_close, slow_schema,
    slow_alloc, slow_list, slow_get, NULL,      NULL,       NULL,
    NULL,       NULL,      NULL,     NULL,      NULL};
static int slow_open(const char *uri, frond_store **out, frond_error *err) {
  slow_store *s = calloc(1, sizeof(*s));
  int rc;
  if (s == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  if ((rc = frond__store_open(uri + 5, &s->inner, err)) != 0) {
    free(s);
    return rc;
  }
  s->base.methods = &slow_methods;
  *out = &s->base;
  return 0;
}

/* ---- helpers ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return v[n / 2];
}

static double least(const double *v, int n) {
  double m = v[0];
  int i;
  for (i = 1; i < n; i++)
    if (v[i] < m)
      m = v[i];
  return m;
}

/* One throughput row: the median and the fastest run, each against the
** reference's own. Sorts both arrays (neither statistic minds). */
static void tp_row(const char *name, double *v, double *ref) {
  double m = least(v, REPS), rm = least(ref, REPS);
  double med = median(v, REPS), rmed = median(ref, REPS);
  printf("  %-32s %10.1f %10.2f %10.1f %10.2f\n", name, med, med / rmed, m,
         m / rm);
}

static frond_seg *open_seg(const char *uri, int64_t max_step) {
  frond_seg_options o;
  frond_error e;
  frond_seg *s;
  int64_t id;
  frond_seg_options_init(&o);
  o.max_step = max_step;
  o.wait_ms = 1000;
  if (frond_seg_open(&s, uri, &o, &e) != 0 ||
      frond_seg_next(s, "bench", 5, &id, &e) != 0) {
    fprintf(stderr, "bench_segment: %s: %s\n", uri, e.message);
    exit(1);
  }
  return s;
}

/* ---- throughput ---- */

static atomic_llong shared_word;
static frond_seg *tp_seg;
static frond_seg_tag *tp_tag, *tp_strided;
static atomic_int tp_errors;

static void *run_atomic(void *arg) {
  long i;
  (void)arg;
  for (i = 0; i < IDS_PER_THREAD; i++)
    atomic_fetch_add(&shared_word, 1);
  return NULL;
}

/* The same, keeping each value as a caller keeps its ID: the store
** between two locked instructions is part of any call that hands out a
** number, and costs the bare loop above a third more on x86. */
static void *run_atomic_kept(void *arg) {
  volatile int64_t id;
  long i;
  (void)arg;
  for (i = 0; i < IDS_PER_THREAD; i++)
    id = atomic_fetch_add(&shared_word, 1);
  (void)id;
  return NULL;
}

/* The calls below keep the allocator and the handle in locals, as a
** caller does; their IDs are dropped, as the bare fetch-add's are. */
static void *run_seg(void *arg) {
  frond_seg *s = tp_seg;
  int64_t id;
  long i;
  (void)arg;
  for (i = 0; i < IDS_PER_THREAD; i++)
    if (frond_seg_next(s, "bench", 5, &id, NULL) != 0)
      atomic_fetch_add(&tp_errors, 1);
  return NULL;
}

static void *run_handle(void *arg) {
  frond_seg_tag *h = tp_tag;
  int64_t id;
  long i;
  (void)arg;
  for (i = 0; i < IDS_PER_THREAD; i++)
    if (frond_seg_tag_next(h, &id, NULL) != 0)
      atomic_fetch_add(&tp_errors, 1);
  return NULL;
}

/* The same, keeping each ID. */
static void *run_handle_kept(void *arg) {
  frond_seg_tag *h = tp_tag;
  volatile int64_t kept;
  int64_t id;
  long i;
  (void)arg;
  for (i = 0; i < IDS_PER_THREAD; i++) {
    if (frond_seg_tag_next(h, &id, NULL) != 0)
      atomic_fetch_add(&tp_errors, 1);
    else
      kept = id;
  }
  (void)kept;
  return NULL;
}

/* A strided tag's handle: the inline call finds no segment it may serve
** and calls the library, which serves it under the tag's lock. */
static void *run_strided(void *arg) {
  frond_seg_tag *h = tp_strided;
  volatile int64_t kept;
  int64_t id;
  long i;
  (void)arg;
  for (i = 0; i < IDS_PER_THREAD; i++) {
    if (frond_seg_tag_next(h, &id, NULL) != 0 || (id & 1) != 1)
      atomic_fetch_add(&tp_errors, 1);
    else
      kept = id;
  }
  (void)kept;
  return NULL;
}

/* The same through the exported function, as a binding calls it. */
static void *run_handle_call(void *arg) {
  frond_seg_tag *h = tp_tag;
  int64_t id;
  long i;
  (void)arg;
  for (i = 0; i < IDS_PER_THREAD; i++)
    if ((frond_seg_tag_next)(h, &id, NULL) != 0)
      atomic_fetch_add(&tp_errors, 1);
  return NULL;
}

static double ns_per_id(void *(*fn)(void *), int threads) {
  pthread_t th[2];
  int64_t t0 = frond__mono_ns();
  int i;
  for (i = 0; i < threads; i++)
    pthread_create(&th[i], NULL, fn, NULL);
  for (i = 0; i < threads; i++)
    pthread_join(th[i], NULL);
  return (double)(frond__mono_ns() - t0) / ((double)IDS_PER_THREAD * threads);
}

/* ---- latency ---- */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

typedef struct lat {
  double p50, p999, max;
  long errors;
  long allocs;
} lat;

static lat latency(frond_seg *s, uint32_t *buf) {
  lat r = {0, 0, 0, 0, 0};
  int64_t id, t0, t1;
  long i, allocs0 = atomic_load(&mem_allocs);
  for (i = 0; i < LAT_CALLS; i++) {
    t0 = frond__mono_ns();
    if (frond_seg_next(s, "bench", 5, &id, NULL) != 0)
      r.errors++;
    t1 = frond__mono_ns();
    buf[i] = (uint32_t)(t1 - t0 > UINT32_MAX ? UINT32_MAX : t1 - t0);
  }
  qsort(buf, LAT_CALLS, sizeof(*buf), cmp_u32);
  r.p50 = buf[LAT_CALLS / 2];
  r.p999 = buf[(long)(LAT_CALLS * 0.999)];
  r.max = buf[LAT_CALLS - 1];
  r.allocs = atomic_load(&mem_allocs) - allocs0;
  return r;
}

/* One latency configuration; repetitions of all configurations are
** interleaved so that the machine's background load hits them alike. */
typedef struct lat_cfg {
  const char *name, *uri;
  int64_t delay_ns, step;
  double p50[LAT_REPS], p999[LAT_REPS], max[LAT_REPS];
  long errors, allocs;
} lat_cfg;

static void lat_run(lat_cfg *c, int k, uint32_t *buf) {
  frond_seg *s;
  frond_seg_stats before, after;
  lat one;
  delay_ns = 0;
  mem_step = c->step;
  s = open_seg(c->uri, c->step * 2);
  delay_ns = c->delay_ns;
  frond_seg_stats_get(s, &before);
  one = latency(s, buf);
  frond_seg_stats_get(s, &after);
  one.allocs = (long)(after.loads - before.loads);
  frond_seg_close(s);
  c->p50[k] = one.p50;
  c->p999[k] = one.p999;
  c->max[k] = one.max;
  c->errors += one.errors;
  c->allocs += one.allocs;
}

/* The row of tag "bench" with step 8,000,000 in the store of uri. */
static int bench_tag(const char *uri) {
  frond_store *st;
  frond_error e;
  const char *plain = strncmp(uri, "slow+", 5) == 0 ? uri + 5 : uri;
  if (frond_store_open(&st, plain, &e) != 0) {
    fprintf(stderr, "bench_segment: %s\n", e.message);
    return 1;
  }
  if (frond_store_tag_create(st, "bench", 8000000, 1, "bench", &e) != 0 &&
      frond_store_tag_set_step(st, "bench", 8000000, &e) != 0) {
    fprintf(stderr, "bench_segment: %s\n", e.message);
    frond_store_close(st);
    return 1;
  }
  frond_store_close(st);
  return 0;
}

static void lat_table(lat_cfg *cfg, int ncfg) {
  int c;
  printf("latency of frond_seg_next over %d calls (median of %d runs, "
         "interleaved; row step 8,000,000)\n",
         LAT_CALLS, LAT_REPS);
  printf("  %-26s %9s %9s %12s %7s %7s %8s\n", "store", "p50 ns", "p99.9 ns",
         "max ns", "loads", "errors", "p99.9/");
  for (c = 0; c < ncfg; c++) {
    double p999 = median(cfg[c].p999, LAT_REPS);
    printf("  %-26s %9.0f %9.0f %12.0f %7ld %7ld %8.2f\n", cfg[c].name,
           median(cfg[c].p50, LAT_REPS), p999, median(cfg[c].max, LAT_REPS),
           cfg[c].allocs, cfg[c].errors, p999 / median(cfg[0].p999, LAT_REPS));
  }
}

/* --stores NAME=URI...: the instant store, then each URI. */
static int stores(int n, char **args, uint32_t *buf) {
  lat_cfg cfg[13];
  int ncfg = 1, k, c;
  memset(cfg, 0, sizeof(cfg));
  cfg[0].name = "instant";
  cfg[0].uri = "mem:";
  cfg[0].step = 8000000;
  for (k = 0; k < n && ncfg < 13; k++) {
    char *eq = strchr(args[k], '=');
    if (eq == NULL) {
      fprintf(stderr, "bench_segment: --stores NAME=URI ...\n");
      return 2;
    }
    *eq = '\0';
    cfg[ncfg].name = args[k];
    cfg[ncfg].uri = eq + 1;
    cfg[ncfg].step = 8000000;
    if (bench_tag(cfg[ncfg].uri) != 0)
      return 1;
    ncfg++;
  }
  for (k = 0; k < LAT_REPS; k++)
    for (c = 0; c < ncfg; c++)
      lat_run(&cfg[c], k, buf);
  lat_table(cfg, ncfg);
  printf("  p99.9/: ratio to the instant store; loads: store allocations "
         "during\n  the timed calls of all runs\n");
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  double a1[REPS], a2[REPS], s1[REPS], s2[REPS], h1[REPS], h2[REPS];
  double k1[REPS], k2[REPS], c1[REPS], hk1[REPS], hk2[REPS];
  double st1[REPS], st2[REPS];
  int hot = argc > 1 && strcmp(argv[1], "--hot") == 0;
  long allocs0;
  uint32_t *buf = malloc(sizeof(uint32_t) * LAT_CALLS);
  int k;
  frond__store_register(&mem_methods);
  frond__store_register(&slow_methods);
  frond_log_set(NULL, NULL, FROND_LOG_ERROR);
  if (argc > 1 && strcmp(argv[1], "--stores") == 0)
    return stores(argc - 2, argv + 2, buf);

  /* Throughput: row step 1000 growing to the default max_step. */
  mem_step = 1000;
  tp_seg = open_seg("mem:", 1000000);
  if (frond_seg_tag_get(tp_seg, "bench", 5, &tp_tag, NULL) != 0 ||
      frond_seg_tag_get(tp_seg, "strided", 7, &tp_strided, NULL) != 0) {
    fprintf(stderr, "bench_segment: no handle\n");
    return 1;
  }
  allocs0 = atomic_load(&mem_allocs);
  for (k = 0; k < REPS; k++) {
    a1[k] = ns_per_id(run_atomic, 1);
    k1[k] = ns_per_id(run_atomic_kept, 1);
    s1[k] = ns_per_id(run_seg, 1);
    h1[k] = ns_per_id(run_handle, 1);
    c1[k] = ns_per_id(run_handle_call, 1);
    hk1[k] = ns_per_id(run_handle_kept, 1);
    a2[k] = ns_per_id(run_atomic, 2);
    k2[k] = ns_per_id(run_atomic_kept, 2);
    s2[k] = ns_per_id(run_seg, 2);
    h2[k] = ns_per_id(run_handle, 2);
    hk2[k] = ns_per_id(run_handle_kept, 2);
    st1[k] = ns_per_id(run_strided, 1);
    st2[k] = ns_per_id(run_strided, 2);
  }

  printf("throughput (%d interleaved runs of %d IDs per thread, one tag;\n"
         "the median and the fastest run, each against the reference's)\n",
         REPS, IDS_PER_THREAD);
  printf("  %-32s %10s %10s %10s %10s\n", "", "median ns", "ratio",
         "fastest ns", "ratio");
  tp_row("frond_seg_next, 1 thread", s1, a1);
  tp_row("frond_seg_tag_next, 1 thread", h1, a1);
  tp_row("  the same, exported function", c1, a1);
  tp_row("atomic fetch-add, 1 thread", a1, a1);
  tp_row("frond_seg_next, 2 threads", s2, a2);
  tp_row("frond_seg_tag_next, 2 threads", h2, a2);
  tp_row("atomic fetch-add, 2 threads", a2, a2);
  printf("each ID kept (stored, as a caller keeps it), on both sides:\n");
  tp_row("frond_seg_tag_next, 1 thread", hk1, k1);
  tp_row("fetch-add, value kept, 1 thread", k1, k1);
  tp_row("frond_seg_tag_next, 2 threads", hk2, k2);
  tp_row("fetch-add, value kept, 2 threads", k2, k2);
  printf("a strided tag (--increment 2 --offset 1), each ID kept:\n");
  tp_row("frond_seg_tag_next, 1 thread", st1, k1);
  tp_row("frond_seg_tag_next, 2 threads", st2, k2);
  printf("  store transactions per million IDs: %.2f (%ld loads, errors %d)"
         "\n\n",
         (double)(atomic_load(&mem_allocs) - allocs0) * 1e6 /
             ((double)IDS_PER_THREAD * 13 * REPS),
         atomic_load(&mem_allocs) - allocs0, atomic_load(&tp_errors));
  frond_seg_close(tp_seg);
  if (hot) {
    free(buf);
    return 0;
  }

  /* Latency: the step is sized so that 90 % of a segment outlasts a
  ** 100 ms allocation at this loop's rate (as a deployment sizes step
  ** against its peak rate); the same step with an instant store; and for
  ** contrast a step too small for the rate, where calls do wait. */
  lat_cfg cfg[] = {
      {"instant", "mem:", 0, 8000000, {0}, {0}, {0}, 0, 0},
      {"100 ms per allocation",
       "mem:",
       100000000,
       8000000,
       {0},
       {0},
       {0},
       0,
       0},
      {"100 ms, step 100,000 (*)",
       "mem:",
       100000000,
       100000,
       {0},
       {0},
       {0},
       0,
       0},
      {NULL, NULL, 0, 8000000, {0}, {0}, {0}, 0, 0},
  };
  int ncfg = 3, c;
  char label[40];
  if (argc > 1 && !hot) {
    frond_store *st;
    frond_error e;
    snprintf(label, sizeof(label), "%.*s (as given)",
             (int)strcspn(argv[1], ":"), argv[1]);
    cfg[3].name = label;
    if (frond_store_open(&st, argv[1], &e) != 0) {
      fprintf(stderr, "bench_segment: %s\n", e.message);
      return 1;
    }
    if (frond_store_tag_create(st, "bench", 8000000, 1, "bench", &e) != 0 &&
        frond_store_tag_set_step(st, "bench", 8000000, &e) != 0) {
      fprintf(stderr, "bench_segment: %s\n", e.message);
      return 1;
    }
    frond_store_close(st);
    cfg[3].uri = argv[1];
    ncfg = 4;
  }
  for (k = 0; k < LAT_REPS; k++)
    for (c = 0; c < ncfg; c++)
      lat_run(&cfg[c], k, buf);
  lat_table(cfg, ncfg);
  printf("  (*) too small a step for this rate: calls wait for the store\n"
         "  p99.9/: ratio to the instant store; loads: store allocations "
         "during\n  the timed calls of all runs\n");
  free(buf);
  return 0;
}
