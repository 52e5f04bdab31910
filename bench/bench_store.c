/* SPDX-License-Identifier: Apache-2.0 */
/*
** bench_store.c -- segment allocations per second straight against a
** store: the store's own cost, without the allocator's buffers in front.
**
**   bench_store URI [ALLOCS [REPS]]
**
** Creates the tag "bench_store" (step 1000) when missing, then runs REPS
** rounds (default 5) of ALLOCS allocations (default 2000) on one
** connection, as the allocator's loader does. Prints, per round and as
** the median of the rounds: allocations per second and the median and
** p99 latency of one allocation. SQLite commits with synchronous=FULL, so
** on a file its numbers are those of the disk's fsync; PostgreSQL's are
** those of a round trip plus the server's commit.
*/
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG "bench_store"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, const frond_error *e) {
  fprintf(stderr, "bench_store: %s: %s\n", what, e->message);
  exit(1);
}

int main(int argc, char **argv) {
  frond_store *st;
  frond_error e = {0, ""};
  long allocs = argc > 2 ? atol(argv[2]) : 2000;
  int reps = argc > 3 ? atoi(argv[3]) : 5, k;
  double *rate, *p50, *p99;
  int64_t *lat, max_id, step, prev = 0;
  if (argc < 2 || allocs < 1 || reps < 1) {
    fprintf(stderr, "usage: bench_store URI [ALLOCS [REPS]]\n");
    return 2;
  }
  rate = calloc((size_t)reps, sizeof(*rate));
  p50 = calloc((size_t)reps, sizeof(*p50));
  p99 = calloc((size_t)reps, sizeof(*p99));
  lat = calloc((size_t)allocs, sizeof(*lat));
  if (!rate || !p50 || !p99 || !lat)
    return 1;
  if (frond_store_open(&st, argv[1], &e) != 0)
    die("open", &e);
  if (frond_store_tag_create(st, TAG, 1000, 1, "bench_store", &e) != 0 &&
      e.code != FROND_ETAG_EXISTS)
    die("tag create", &e);
  printf("store allocations on %s (%ld per round, one connection)\n", argv[1],
         allocs);
  printf("  %-8s %12s %12s %12s\n", "round", "allocs/s", "p50 us", "p99 us");
  for (k = 0; k < reps; k++) {
    int64_t t0 = frond__mono_ns(), t;
    long i;
    for (i = 0; i < allocs; i++) {
      t = frond__mono_ns();
      if (frond__store_alloc(st, TAG, 0, &max_id, &step, &e) != 0)
        die("alloc", &e);
      lat[i] = frond__mono_ns() - t;
      if (max_id <= prev) {
        fprintf(stderr, "bench_store: max_id went from %lld to %lld\n",
                (long long)prev, (long long)max_id);
        return 1;
      }
      prev = max_id;
    }
    rate[k] = (double)allocs * 1e9 / (double)(frond__mono_ns() - t0);
    qsort(lat, (size_t)allocs, sizeof(*lat), cmp_i64);
    p50[k] = (double)lat[allocs / 2] / 1e3;
    p99[k] = (double)lat[allocs * 99 / 100] / 1e3;
    printf("  %-8d %12.0f %12.1f %12.1f\n", k + 1, rate[k], p50[k], p99[k]);
  }
  qsort(rate, (size_t)reps, sizeof(*rate), cmp_double);
  qsort(p50, (size_t)reps, sizeof(*p50), cmp_double);
  qsort(p99, (size_t)reps, sizeof(*p99), cmp_double);
  printf("  %-8s %12.0f %12.1f %12.1f\n", "median", rate[reps / 2],
         p50[reps / 2], p99[reps / 2]);
  frond_store_close(st);
  free(rate);
  free(p50);
  free(p99);
  free(lat);
  return 0;
}
