/* SPDX-License-Identifier: Apache-2.0 */
/*
** bench.c -- `frond bench`: measure the snowflake generator against the
** cost of the one atomic add it is built on.
**
** Every figure is printed beside a reference measured in the same run, on
** the same machine, so the ratio means something on a busy or slow box:
**
**   next, 1 and 2 threads   frond_gen_next        vs. a bare loop of one
**                           (inlined: frond/      atomic fetch-add on a
**                           inline.h)             shared 64-bit word
**   next, exported          (frond_gen_next), the vs. the same
**                           library's function
**   next_n(1000), per ID    frond_gen_next_n      vs. one fetch-add of 1000
**                                                 plus storing 1000 words
**   sustained               frond_gen_next for --seconds once the borrowing
**                           is used up            vs. the layout's bound,
**                                                 2^seq_bits per unit
**
** The burst rows use a fresh generator per repetition with max_ahead raised
** so that no call waits (checked with frond_gen_stats): they measure the
** cost of a call, not the layout's rate. The sustained row uses the default
** options and first issues IDs until calls start waiting, i.e. the logical
** clock is max_ahead in front of the wall clock; only then is it timed.
** No high-water file is used: the IDs are thrown away.
**
** Burst rows report the median of --reps repetitions; ns/ID is wall time
** divided by the IDs issued by all threads together.
**
** Both loops of a row have one shape, so that the ratio is the call's cost
** and nothing else: the word or the generator in a register, the value or
** the ID kept in a register and stored once after the loop. A locked add
** waits for every store before it, so an ID stored on each pass (as when
** the exported call's loop shares its variable, whose address escapes)
** is a cost the reference does not pay. On the project's machine it is
** hidden in a larger step that any extra instructions between two locked
** adds take (bench_gen_shapes; bench/RESULTS.md, 2026-11-28, last).
*/
#include "cli/cli.h"
#include "base/base.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: frond bench [--seconds S] [--reps N] [--layout SPEC]\n"
    "\n"
    "Measure the snowflake generator in this process, beside a reference\n"
    "measured in the same run (an atomic fetch-add on a shared word), and\n"
    "print ns per ID, IDs per second and their ratio. Uses no high-water\n"
    "file.\n"
    "\n"
    "  --seconds S   length of the sustained-rate run (default 2)\n"
    "  --reps N      repetitions of the other runs; the median is shown\n"
    "                (default 7)\n"
    "  --layout SPEC the layout (default: " FROND_LAYOUT_DEFAULT ")\n"
    "\n"
    "Goals: next() within 1.3x of the reference with one thread, 1.5x with\n"
    "two; sustained rate at least 99% of the layout's bound.\n";

#define BATCH 1000
#define BURST_IDS 5000000       /* per repetition, one thread */
#define BURST_IDS_2T 2000000    /* per thread and repetition, two threads */
#define BATCH_CALLS 20000       /* next_n(1000) calls per repetition */
#define MAX_AHEAD_MS 86400000LL /* the library's ceiling for max_ahead */

enum { REF, NEXT, REF_N, NEXT_N, NEXT_CALL };

/* The shared word of the reference loop, alone on its cache line. */
static _Alignas(64) _Atomic uint64_t ref_word;
/* Where batches land; global so the stores cannot be optimised away. */
static int64_t sink[2][BATCH];

typedef struct worker {
  pthread_t thread;
  int kind, index;
  frond_gen *g;
  uint64_t iters;
  _Atomic int *go;
  int failed;
} worker;

/* One fetch-add per pass, the value kept as next's loop keeps its ID. */
static void ref_loop(worker *w) {
  _Atomic uint64_t *word = &ref_word;
  uint64_t v = 0, n = w->iters;
  for (uint64_t i = 0; i < n; i++)
    v = atomic_fetch_add_explicit(word, 1, memory_order_relaxed);
  sink[w->index][0] = (int64_t)v;
}

/* The inline call; id's address goes nowhere else, so it stays in a
** register. */
static void next_loop(worker *w) {
  frond_gen *g = w->g;
  int64_t id = 0;
  uint64_t n = w->iters;
  int failed = 0;
  for (uint64_t i = 0; i < n; i++)
    if (frond_gen_next(g, &id, NULL) != 0)
      failed = 1;
  w->failed = failed;
  sink[w->index][0] = id;
}

/* The exported function, as FROND_NO_INLINE calls it. */
static void next_call_loop(worker *w) {
  frond_gen *g = w->g;
  int64_t id = 0;
  uint64_t n = w->iters;
  int failed = 0;
  for (uint64_t i = 0; i < n; i++)
    if ((frond_gen_next)(g, &id, NULL) != 0)
      failed = 1;
  w->failed = failed;
  sink[w->index][0] = id;
}

static void *work(void *arg) {
  worker *w = arg;
  uint64_t i;
  while (!atomic_load_explicit(w->go, memory_order_acquire))
    ;
  switch (w->kind) {
  case REF:
    ref_loop(w);
    break;
  case NEXT:
    next_loop(w);
    break;
  case NEXT_CALL:
    next_call_loop(w);
    break;
  case REF_N:
    for (i = 0; i < w->iters; i++) {
      uint64_t v =
          atomic_fetch_add_explicit(&ref_word, BATCH, memory_order_relaxed);
      for (size_t k = 0; k < BATCH; k++)
        sink[w->index][k] = (int64_t)(v + k);
    }
    break;
  case NEXT_N:
    for (i = 0; i < w->iters; i++)
      if (frond_gen_next_n(w->g, BATCH, sink[w->index], NULL) != 0)
        w->failed = 1;
    break;
  }
  return NULL;
}

/* Run `threads` workers of one kind from a common start; return ns per ID
** (wall time over all IDs), or -1 when a call failed. */
static double run(int kind, int threads, frond_gen *g, uint64_t iters) {
  worker w[2];
  _Atomic int go = 0;
  int64_t t0, t1;
  int i, failed = 0;
  uint64_t ids = iters * (uint64_t)threads;
  for (i = 0; i < threads; i++) {
    w[i] =
        (worker){.kind = kind, .index = i, .g = g, .iters = iters, .go = &go};
    pthread_create(&w[i].thread, NULL, work, &w[i]);
  }
  t0 = frond__mono_ns();
  atomic_store_explicit(&go, 1, memory_order_release);
  for (i = 0; i < threads; i++) {
    pthread_join(w[i].thread, NULL);
    failed |= w[i].failed;
  }
  t1 = frond__mono_ns();
  if (kind == REF_N || kind == NEXT_N)
    ids *= BATCH;
  return failed ? -1 : (double)(t1 - t0) / (double)ids;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct measure {
  double frond_ns, ref_ns; /* medians over the repetitions */
  double best_ratio;       /* median of each repetition's fastest slices */
  uint64_t waits;          /* calls that waited (should be 0) */
} measure;

/* Slices per repetition; see burst(). */
#define SLICES 8

/*
** A burst row. Each repetition uses a fresh generator whose max_ahead
** covers all of it, and alternates SLICES slices of the reference with
** SLICES of frond, so that both see the same machine: on a shared box the
** speed drifts within a second by more than the difference measured.
** Beside the medians, each repetition's fastest slice of frond over its
** fastest of the reference (median over the repetitions): on a machine
** that other work shares, a slice that lost the CPU to it moves the
** means by more than the call costs; the fastest slices show the call.
*/
static int burst(const frond_layout *l, int kind, int threads, uint64_t iters,
                 int reps, measure *m, frond_error *err) {
  double f[64], r[64], best[64];
  frond_gen_options go;
  uint64_t slice = iters / SLICES > 0 ? iters / SLICES : 1;
  int i, k;
  m->waits = 0;
  frond_gen_options_init(&go);
  go.max_ahead_ms = MAX_AHEAD_MS;
  for (i = 0; i < reps; i++) {
    frond_gen *g;
    frond_gen_stats s;
    double tf = 0, tr = 0, bf = 0, br = 0, x, y;
    if (frond_gen_create(&g, l, 0, &go, err) != 0)
      return -1;
    for (k = 0; k < SLICES; k++) {
      y = run(kind == NEXT_N ? REF_N : REF, threads, NULL, slice);
      if ((x = run(kind, threads, g, slice)) < 0)
        break;
      tr += y;
      tf += x;
      br = k == 0 || y < br ? y : br;
      bf = k == 0 || x < bf ? x : bf;
    }
    frond_gen_stats_get(g, &s);
    m->waits += s.waits;
    frond_gen_close(g, NULL);
    if (k < SLICES)
      return frond__fail(err, FROND_ECLOCK_BEHIND,
                         "the generator refused IDs during the burst run");
    f[i] = tf / SLICES;
    r[i] = tr / SLICES;
    best[i] = bf / br;
  }
  m->frond_ns = median(f, reps);
  m->ref_ns = median(r, reps);
  m->best_ratio = median(best, reps);
  return 0;
}

/* Sustained rate: IDs per second over `seconds` once borrowing is used up.
** *warmup_ids says how many IDs it took to get there, 0 when calls never
** waited within max_ahead + 2 s: then the generator is slower than the
** layout's bound and the figure shows by how much. */
static int sustained(const frond_layout *l, int64_t seconds, double *rate,
                     uint64_t *warmup_ids, frond_error *err) {
  frond_gen *g;
  frond_gen_stats s;
  int64_t id, t0, t1, deadline;
  uint64_t n = 0;
  frond_gen_options go;
  /* Waiting is the point here; the default max_wait covers two units. */
  frond_gen_options_init(&go);
  if (frond_gen_create(&g, l, 0, &go, err) != 0)
    return -1;
  deadline = frond__mono_ns() +
             (FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS + 2000) * (int64_t)1000000;
  do {
    for (int k = 0; k < 4096; k++)
      if (frond_gen_next(g, &id, err) != 0)
        goto fail;
    n += 4096;
    frond_gen_stats_get(g, &s);
  } while (s.waits == 0 && frond__mono_ns() < deadline);
  *warmup_ids = s.waits > 0 ? n : 0;
  n = 0;
  t0 = frond__mono_ns();
  deadline = t0 + seconds * 1000000000;
  do {
    for (int k = 0; k < 256; k++)
      if (frond_gen_next(g, &id, err) != 0)
        goto fail;
    n += 256;
    t1 = frond__mono_ns();
  } while (t1 < deadline);
  *rate = (double)n * 1e9 / (double)(t1 - t0);
  frond_gen_close(g, NULL);
  return 0;
fail:
  frond_gen_close(g, NULL);
  return -1;
}

static void fmt_rate(double per_s, char *buf, size_t len) {
  if (per_s >= 1e9)
    snprintf(buf, len, "%.2fG", per_s / 1e9);
  else if (per_s >= 1e6)
    snprintf(buf, len, "%.2fM", per_s / 1e6);
  else if (per_s >= 1e3)
    snprintf(buf, len, "%.1fk", per_s / 1e3);
  else
    snprintf(buf, len, "%.0f", per_s);
}

enum { COLS = 8, ROWS = 5 };
static char text[ROWS][COLS][48];

/* best: the ratio of the fastest slices, 0 for none. */
static void row(int r, const char *what, double frond_ns, double ref_ns,
                const char *ratio, double best, const char *goal) {
  snprintf(text[r][0], sizeof(text[r][0]), "%s", what);
  snprintf(text[r][1], sizeof(text[r][1]), "%.2f", frond_ns);
  fmt_rate(1e9 / frond_ns, text[r][2], sizeof(text[r][2]));
  snprintf(text[r][3], sizeof(text[r][3]), "%.2f", ref_ns);
  fmt_rate(1e9 / ref_ns, text[r][4], sizeof(text[r][4]));
  snprintf(text[r][5], sizeof(text[r][5]), "%s", ratio);
  if (best > 0)
    snprintf(text[r][6], sizeof(text[r][6]), "%.2fx", best);
  else
    text[r][6][0] = '\0';
  snprintf(text[r][7], sizeof(text[r][7]), "%s", goal);
}

int frond__cli_bench(int argc, char **argv) {
  int64_t seconds = 2, reps = 7;
  const char *spec = FROND_LAYOUT_DEFAULT;
  frond__opt opts[] = {{"seconds", FROND__OPT_INT, &seconds, 1, 3600, 0},
                       {"reps", FROND__OPT_INT, &reps, 1, 64, 0},
                       {"layout", FROND__OPT_STR, &spec, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"bench", usage, opts, 0, 0, NULL, NULL, 0};
  static const char *const head[COLS] = {"",          "ns/ID",     "IDs/s",
                                         "ref ns/ID", "ref IDs/s", "frond/ref",
                                         "fastest",   "goal"};
  const char *cells[(ROWS + 1) * COLS];
  frond_layout l;
  frond_error err = {0};
  measure one = {0}, two = {0}, batch = {0}, call = {0};
  double rate, bound, ratio;
  uint64_t warmup, cap;
  char spec_text[160], r[48];
  int st, i, j;

  if (!frond__args_parse(&a, argc, argv, &st))
    return st;
  if (frond_layout_parse(spec, &l, &err) != 0)
    return frond__usage_error("bench", "--layout: %s", err.message);
  bound = frond_layout_ids_per_second(&l);
  /* Keep each burst inside what max_ahead lets the generator borrow. */
  cap = (uint64_t)(bound * (MAX_AHEAD_MS / 1000) * 0.9);
  frond_layout_format(&l, spec_text, sizeof(spec_text));
  printf("frond bench: layout %s (%s)\n"
         "node 0, no high-water file; medians of %lld repetitions, "
         "sustained over %lld s\n\n",
         l.name, spec_text, (long long)reps, (long long)seconds);
  fflush(stdout);

  /* Wake the CPU up (frequency, caches) before the first timed slice. */
  run(REF, 1, NULL, BURST_IDS);
  if (burst(&l, NEXT, 1, BURST_IDS < cap ? BURST_IDS : cap, (int)reps, &one,
            &err) != 0 ||
      burst(&l, NEXT_CALL, 1, BURST_IDS < cap ? BURST_IDS : cap, (int)reps,
            &call, &err) != 0 ||
      burst(&l, NEXT, 2, BURST_IDS_2T < cap / 2 ? BURST_IDS_2T : cap / 2,
            (int)reps, &two, &err) != 0 ||
      burst(&l, NEXT_N, 1,
            BATCH_CALLS < cap / BATCH ? BATCH_CALLS : cap / BATCH + 1,
            (int)reps, &batch, &err) != 0 ||
      sustained(&l, seconds, &rate, &warmup, &err) != 0)
    return frond__cli_fail(&err);

  ratio = one.frond_ns / one.ref_ns;
  snprintf(r, sizeof(r), "%.2fx", ratio);
  row(0, "next, 1 thread", one.frond_ns, one.ref_ns, r, one.best_ratio,
      ratio <= 1.3 ? "<= 1.3x: met" : "<= 1.3x: MISSED");
  snprintf(r, sizeof(r), "%.2fx", call.frond_ns / call.ref_ns);
  row(1, "next, 1 thread, exported", call.frond_ns, call.ref_ns, r,
      call.best_ratio, "");
  ratio = two.frond_ns / two.ref_ns;
  snprintf(r, sizeof(r), "%.2fx", ratio);
  row(2, "next, 2 threads", two.frond_ns, two.ref_ns, r, two.best_ratio,
      ratio <= 1.5 ? "<= 1.5x: met" : "<= 1.5x: MISSED");
  snprintf(r, sizeof(r), "%.2fx", batch.frond_ns / batch.ref_ns);
  row(3, "next_n(1000), per ID", batch.frond_ns, batch.ref_ns, r,
      batch.best_ratio, "");
  snprintf(r, sizeof(r), "%.2f%% of bound", 100.0 * rate / bound);
  row(4, "sustained next, 1 thread", 1e9 / rate, 1e9 / bound, r, 0,
      rate >= 0.99 * bound ? ">= 99%: met" : ">= 99%: MISSED");
  for (j = 0; j < COLS; j++)
    cells[j] = head[j];
  for (i = 0; i < ROWS; i++)
    for (j = 0; j < COLS; j++)
      cells[(i + 1) * COLS + j] = text[i][j];
  frond__out_table(cells, ROWS + 1, COLS, "lrrrrrrl");
  frond__out_printf(
      "\nreference: one atomic fetch-add on a shared word per ID (next_n: one"
      " add of 1000\nand 1000 stores); sustained: the layout's bound, 2^%u IDs"
      " per %lld ms.\nfastest: each repetition's fastest of %d slices of frond"
      " over the reference's\n(median); the goals are judged on frond/ref.\n",
      l.seq_bits, (long long)l.unit_ms, SLICES);
  if (warmup > 0)
    frond__out_printf("The sustained run started after %llu IDs, when calls "
                      "began to wait (borrowing\nused up).\n",
                      (unsigned long long)warmup);
  else
    frond__out_printf("Calls never waited: the generator could not reach "
                      "the layout's bound.\n");
  if (one.waits + call.waits + two.waits + batch.waits > 0)
    frond__out_printf(
        "note: %llu burst calls waited for the clock; the burst "
        "figures include that wait.\n",
        (unsigned long long)(one.waits + call.waits + two.waits + batch.waits));
  frond__out_flush();
  return FROND__EXIT_OK;
}
