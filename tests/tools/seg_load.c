/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_load.c -- a segment load client that the integration tests drive.
**
**   seg_load [options] URI PREFIX TAG...
**     -t N   threads (default 1)
**     -n N   IDs per thread and tag; 0: until SIGTERM (default 1000)
**     -m N   max_step (default 1000000)     -r MS  retry_max_ms (default 500)
**     -w MS  wait_ms (default 50)           -f MS  refresh_ms (default 60000)
**     -p N   pause 10 ms after every N IDs of a thread (rate limit)
**     -k     keep going on errors (reported on stdout), else exit 1
**
** Each thread writes the IDs of each tag, as native int64, to
** PREFIX.<thread>.<tag index>. Lines on stdout, flushed:
**   "ready", "count <ids so far>" (every 100 ms), "state ok" /
**   "state error <CODE> <message>" on every change, at the end
**   "rollbacks <ranges the rollback guard refused>" and "done <ids>".
*/
#include "frond.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_TAGS 8
#define CHUNK 4096

static const char *prefix;
static char **tags;
static int ntags, keep_going;
static long long per_thread = 1000, pause_every;
static frond_seg *seg;
static atomic_llong issued;
static atomic_int stop, last_state = 1; /* 0 ok, else -code; 1: none yet */
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_term(int sig) {
  (void)sig;
  atomic_store(&stop, 1);
}

static void report(int code, const char *msg) {
  int prev = atomic_exchange(&last_state, code);
  if (prev == code)
    return;
  pthread_mutex_lock(&out_mu);
  if (code == 0)
    printf("state ok\n");
  else
    printf("state error %s %s\n", frond_err_name(code), msg);
  fflush(stdout);
  pthread_mutex_unlock(&out_mu);
}

typedef struct out {
  FILE *f;
  int64_t buf[CHUNK];
  size_t n;
} out;

static void flush_out(out *o) {
  if (o->n > 0 && fwrite(o->buf, sizeof(int64_t), o->n, o->f) != o->n) {
    perror("seg_load: write");
    exit(2);
  }
  fflush(o->f);
  o->n = 0;
}

static void *work(void *arg) {
  long th = (long)arg;
  out *o = calloc((size_t)ntags, sizeof(out));
  char path[4096];
  long long i;
  int k, rc;
  frond_error e;
  int64_t id;
  for (k = 0; k < ntags; k++) {
    snprintf(path, sizeof(path), "%s.%ld.%d", prefix, th, k);
    if ((o[k].f = fopen(path, "wb")) == NULL) {
      perror(path);
      exit(2);
    }
  }
  for (i = 0; (per_thread == 0 || i < per_thread) && !atomic_load(&stop);) {
    for (k = 0; k < ntags; k++) {
      rc = frond_seg_next(seg, tags[k], strlen(tags[k]), &id, &e);
      if (rc != 0) {
        if (!keep_going) {
          fprintf(stderr, "seg_load: %s: %s: %s\n", tags[k], frond_err_name(rc),
                  e.message);
          exit(1);
        }
        report(rc, e.message);
        usleep(1000);
        break;
      }
      report(0, "");
      o[k].buf[o[k].n++] = id;
      if (o[k].n == CHUNK)
        flush_out(&o[k]);
    }
    if (k < ntags)
      continue; /* retry the same round after an error */
    i++;
    atomic_fetch_add(&issued, ntags);
    if (pause_every > 0 && i % pause_every == 0) {
      for (k = 0; k < ntags; k++)
        flush_out(&o[k]);
      usleep(10000);
    }
  }
  for (k = 0; k < ntags; k++) {
    flush_out(&o[k]);
    fclose(o[k].f);
  }
  free(o);
  return NULL;
}

int main(int argc, char **argv) {
  frond_seg_options opts;
  frond_error e;
  pthread_t th[64];
  long threads = 1, t;
  int c, done = 0;
  frond_seg_stats ss;
  frond_seg_options_init(&opts);
  opts.retry_max_ms = 500;
  while ((c = getopt(argc, argv, "t:n:m:r:w:f:p:k")) != -1) {
    switch (c) {
    case 't':
      threads = atol(optarg);
      break;
    case 'n':
      per_thread = atoll(optarg);
      break;
    case 'm':
      opts.max_step = atoll(optarg);
      break;
    case 'r':
      opts.retry_max_ms = atoll(optarg);
      break;
    case 'w':
      opts.wait_ms = atoll(optarg);
      break;
    case 'f':
      opts.refresh_ms = atoll(optarg);
      break;
    case 'p':
      pause_every = atoll(optarg);
      break;
    case 'k':
      keep_going = 1;
      break;
    default:
      return 2;
    }
  }
  if (argc - optind < 3 || argc - optind - 2 > MAX_TAGS || threads < 1 ||
      threads > 64) {
    fprintf(stderr, "usage: seg_load [-t N] [-n N] [-m N] [-r MS] [-w MS] "
                    "[-f MS] [-p N] [-k] URI PREFIX TAG...\n");
    return 2;
  }
  if (opts.retry_min_ms > opts.retry_max_ms)
    opts.retry_min_ms = opts.retry_max_ms;
  prefix = argv[optind + 1];
  tags = argv + optind + 2;
  ntags = argc - optind - 2;
  signal(SIGTERM, on_term);
  if (frond_seg_open(&seg, argv[optind], &opts, &e) != 0) {
    fprintf(stderr, "seg_load: open: %s: %s\n", frond_err_name(e.code),
            e.message);
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  for (t = 0; t < threads; t++)
    pthread_create(&th[t], NULL, work, (void *)t);
  /* Report progress until every worker is done. */
  while (!done) {
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&out_mu);
    printf("count %lld\n", (long long)atomic_load(&issued));
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
    done =
        per_thread > 0 && atomic_load(&issued) >= per_thread * threads * ntags;
    done = done || atomic_load(&stop);
  }
  for (t = 0; t < threads; t++)
    pthread_join(th[t], NULL);
  frond_seg_stats_get(seg, &ss);
  frond_seg_close(seg);
  printf("rollbacks %llu\ndone %lld\n", (unsigned long long)ss.rollbacks,
         (long long)atomic_load(&issued));
  fflush(stdout);
  return 0;
}
