/* SPDX-License-Identifier: Apache-2.0 */
/*
** bench_frond.c -- frond_seg_tag_next on a tag leased from Frond servers
** (a frond:// store) beside the same call on a SQLite tag and a bare
** atomic fetch-add, in one run, one thread.
**
**   bench_frond FROND-URI SQLITE-URI TAG [REPS]
**
** TAG must exist behind both URIs (bench/frond/run.sh makes both and
** starts the server). Each round takes IDS IDs of each in turn, values
** kept (stored, as a caller keeps an ID); the table gives the median ns
** per ID over REPS rounds (default 7) and its ratio to the atomic add,
** (both allocators wait up to 5 s for a load rather than fail at 50 ms),
** then, for frond://, the ranges loaded and the ranges per million IDs:
** each load is one GET /v1/segment/{tag}/range (the script adds what the
** server counted, every HTTP request).
*/
#include "frond.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IDS 50000000L
#define MAX_REPS 31

static _Atomic int64_t shared_word;
static volatile int64_t sink;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double run_atomic(void) {
  int64_t t0 = now_ns();
  for (long i = 0; i < IDS; i++)
    sink = atomic_fetch_add(&shared_word, 1);
  return (double)(now_ns() - t0) / IDS;
}

static double run_tag(frond_seg_tag *h, int64_t *last, long *errors) {
  int64_t id = 0, t0 = now_ns();
  for (long i = 0; i < IDS; i++) {
    if (frond_seg_tag_next(h, &id, NULL) != 0)
      ++*errors;
    sink = id;
  }
  *last = id;
  return (double)(now_ns() - t0) / IDS;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static frond_seg_tag *open_tag(const char *uri, const char *tag,
                               frond_seg **s) {
  frond_error e = {0, ""};
  frond_seg_options o;
  frond_seg_tag *h;
  /* Flat out, one thread takes a 1,000,000-ID range in a few ms: a load
  ** that takes longer (a loaded machine) is waited for, and counted in the
  ** time, rather than failed after the default 50 ms. */
  frond_seg_options_init(&o);
  o.wait_ms = 5000;
  if (frond_seg_open(s, uri, &o, &e) != 0 ||
      frond_seg_tag_get(*s, tag, strlen(tag), &h, &e) != 0) {
    fprintf(stderr, "bench_frond: %s: %s: %s\n", uri, frond_err_name(e.code),
            e.message);
    exit(1);
  }
  return h;
}

int main(int argc, char **argv) {
  double a[MAX_REPS], q[MAX_REPS], f[MAX_REPS];
  frond_seg *sf, *sq;
  frond_seg_tag *hf, *hq;
  frond_seg_stats st0, st1;
  int64_t lastf = 0, lastq = 0, prev = 0;
  long errors = 0;
  int reps = argc > 4 ? atoi(argv[4]) : 7, r;
  if (argc < 4 || reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "usage: bench_frond FROND-URI SQLITE-URI TAG [REPS "
                    "1..31]\n");
    return 2;
  }
  hf = open_tag(argv[1], argv[3], &sf);
  hq = open_tag(argv[2], argv[3], &sq);
  /* Warm both up to the dynamic step's top (a segment that lasts under
  ** 15 minutes doubles the next), as a long-running program is. */
  run_tag(hf, &lastf, &errors);
  run_tag(hq, &lastq, &errors);
  frond_seg_stats_get(sf, &st0);
  for (r = 0; r < reps; r++) {
    a[r] = run_atomic();
    q[r] = run_tag(hq, &lastq, &errors);
    f[r] = run_tag(hf, &lastf, &errors);
    if (lastf <= prev) {
      fprintf(stderr, "bench_frond: frond:// IDs went back\n");
      return 1;
    }
    prev = lastf;
  }
  frond_seg_stats_get(sf, &st1);
  {
    double ma = median(a, reps), mq = median(q, reps), mf = median(f, reps);
    double ids = (double)IDS * reps;
    printf("| call (1 thread, value kept) | ns/ID, median of %d | ratio to "
           "the atomic add |\n| --- | ---: | ---: |\n",
           reps);
    printf("| atomic fetch-add on a shared word | %.2f | 1.00 |\n", ma);
    printf("| frond_seg_tag_next, sqlite: tag | %.2f | %.2f |\n", mq, mq / ma);
    printf("| frond_seg_tag_next, frond:// tag | %.2f | %.2f |\n", mf, mf / ma);
    printf("\nfrond:// ranges loaded in the timed rounds: %llu for %.0f "
           "IDs = %.2f per million IDs; errors: %ld\n",
           (unsigned long long)(st1.loads - st0.loads), ids,
           (double)(st1.loads - st0.loads) * 1e6 / ids, errors);
    printf("frond:// IDs taken in all: %lld\n", (long long)(IDS * (reps + 1)));
  }
  frond_seg_close(sf);
  frond_seg_close(sq);
  return errors != 0;
}
