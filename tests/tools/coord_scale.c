/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_scale.c -- a fleet of node ID holders in one process, for the
** coordinators' scale test and benchmark.
**
** This file contains a program that claims many node IDs from one
** coordinator through the public API (frond_coord_open and
** frond_coord_gen_create, one handle per node, each with its own
** identity), checks them, and then kills some and restarts them in waves
** while the others renew. A kill is frond__coord_test_crash: the handle
** ends as kill -9 ends a process (no final fence, no release).
**
** usage: coord_scale --coordinator URI --nodes N [--layout SPEC]
**                    [--ident PREFIX] [--extra 0|1] [--waves W]
**                    [--kill-pct P] [--gap-ms MS] [--hold-ms MS] [--ids K --out FILE]
**                    [--deadline-s S] [--parallel P]
**
** Each line it prints is one fact, for the test to check:
**   wall <mono ms> <unix ms> <mono ms>  the wall clock at the start, read
**                                       between two monotonic readings
**   claimed <n> <ms> <distinct 0|1> <retries>  the claims, how long, all
**                                       distinct, claims retried (COORD,
**                                       NODE_ID_LOST, CLOCK_OFFSET)
**   extra <NAME> <message>              the claim past N (--extra 1)
**   ready                               then waits for a line on stdin
**                                       when --hold-ms is -1 (a benchmark
**                                       measures the database meanwhile)
**   wave <w> killed <k> at <ms>         a wave of kills (--gap-ms apart)
**   first <waited>                      every holder's first ID issued;
**                                       how many waited for a late renewal
**   churn <killed> <restarted> <ms> <rounds> <survivor calls refused>
**   survivors <ok> <of>                 holders that still issue, in order
**   writes <fence writes> <failures>    over every holder
**   clock <min> <median> <max> <checked>  the holders' clock offsets
**                                       from the coordinator's reference,
**                                       in ms (of those measured)
**   closed <ms>
**   FAIL <what>                         a check failed (exit 1)
** A restarted holder's start must be at or above the fence the previous
** holder of its node ID had made durable, and its first ID above the
** previous holder's last; no node ID is held by two live handles at any
** moment the program looks.
**
** --parallel P: the first N claims, and each round of restarts, by P
** threads at once (default 1: one after the other), as a fleet's servers
** start side by side.
**
** --ids K --out FILE: K IDs from every holder, appended to FILE as lines
** "<node> <id>" (the regions test collects them from three processes).
*/
#include "frond.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The one internal hook: end a handle as kill -9 would. */
void frond__coord_test_crash(frond_coord *c);

#define MAX_NODES 4096
#define MAX_CLAIMERS 64
/* How long a holder may take to recover from a late renewal (a lease
** or a session, 30 s in the scale test, and a regain) before the run
** counts it as failing. */
#define SETTLE_MS 60000

typedef struct {
  frond_coord *c;
  frond_gen *g;
  uint64_t node;
  int64_t last_id; /* the last ID this handle issued, -1: none */
} holder;

/* What the last holder of a node ID left: its durable fence and its
** last ID, for the next holder's checks. */
typedef struct {
  int64_t fence_ms;
  int64_t last_id;
  int killed;
} trace;

static const char *uri, *layout_spec = FROND_LAYOUT_DEFAULT, *ident = "10.9";
static frond_layout layout;
static holder h[MAX_NODES + 1];
static trace tr[1 << 16];
static int failed;
static int parallel = 1; /* --parallel */

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  failed = 1;
}

/* Claim a node ID for identity i into *out: 0, or the error's code. */
static int claim(int i, holder *out, frond_error *e) {
  frond_coord_options o;
  frond_coord_stats st;
  char who[64];
  int rc;
  frond_coord_options_init(&o);
  snprintf(who, sizeof(who), "%s.%d.%d:8080", ident, i / 256, i % 256);
  o.advertise = who;
  memset(out, 0, sizeof(*out));
  if ((rc = frond_coord_open(&out->c, uri, &o, e)) != 0)
    return rc;
  if ((rc = frond_coord_gen_create(out->c, &layout, NULL, &out->g, e)) != 0) {
    frond_coord_close(out->c, NULL);
    out->c = NULL;
    return rc;
  }
  frond_coord_stats_get(out->c, &st);
  out->node = st.node;
  out->last_id = -1;
  return 0;
}

/* A start refused for a while only: a database too busy to answer in
** time (COORD), a new claim lost before its start was done (NODE_ID_LOST),
** or the peers' clocks read from fence writes a loaded machine delayed
** (CLOCK_OFFSET: every holder here shares one clock). */
static int start_later(int rc) {
  return rc == FROND_ECOORD || rc == FROND_ENODE_ID_LOST ||
         rc == FROND_ECLOCK_OFFSET;
}

/* Claims by `parallel` threads at once (a fleet's servers start side by
** side): entry j of who[0..n) (identity who[j]; j when who is NULL) into
** h[], its code into rcs[j] (NOT_TRIED: stopped before it) and its
** error into errs[j]. With `first`, a start_later() refusal is retried
** until the deadline, as a starting server retries, and any other
** refusal stops the rest; otherwise each entry is tried once. Returns
** the retries. */
static struct {
  const int *who;
  int n, step, first;
  int64_t deadline;
  atomic_int stop, retries;
} job;
#define NOT_TRIED 1 /* every FROND_E* code is negative */
static int rcs[MAX_NODES + 1];
static frond_error errs[MAX_NODES + 1];

static void *claimer_run(void *arg) {
  int from = (int)(intptr_t)arg;
  for (int j = from; j < job.n && !atomic_load(&job.stop); j += job.step) {
    int i = job.who ? job.who[j] : j, rc;
    while (start_later(rc = claim(i, &h[i], &errs[j])) && job.first &&
           mono_ms() < job.deadline)
      atomic_fetch_add(&job.retries, 1);
    rcs[j] = rc;
    if (rc != 0 && job.first)
      atomic_store(&job.stop, 1);
  }
  return NULL;
}

static int claim_many(const int *who, int n, int first, int64_t deadline) {
  static pthread_t t[MAX_CLAIMERS];
  int threads = parallel < n ? parallel : n, started = 0;
  job.who = who;
  job.n = n;
  job.step = threads > 0 ? threads : 1;
  job.first = first;
  job.deadline = deadline;
  atomic_store(&job.stop, 0);
  atomic_store(&job.retries, 0);
  for (int j = 0; j < n; j++)
    rcs[j] = NOT_TRIED;
  for (int k = 0; k < threads; k++)
    if (pthread_create(&t[started], NULL, claimer_run, (void *)(intptr_t)k) ==
        0)
      started++;
    else
      claimer_run((void *)(intptr_t)k); /* no thread: its share here */
  for (int k = 0; k < started; k++)
    pthread_join(t[k], NULL);
  return atomic_load(&job.retries);
}

/* One ID from holder x, checked against its last: 0 or the error. */
static int issue(holder *x, frond_error *e) {
  int64_t id;
  int rc = frond_gen_next(x->g, &id, e);
  if (rc != 0)
    return rc;
  if (id <= x->last_id)
    fail("IDs not increasing: %" PRId64 " after %" PRId64, id, x->last_id);
  x->last_id = id;
  return 0;
}

/* One ID from holder x as issue() does, waiting (by 100 ms naps, until
** `until`, a monotonic ms) while the refusal is one a holder recovers
** from by itself: its fence not yet confirmed (COORD) or its claim lost
** and being taken back (NODE_ID_LOST). Those decide availability only:
** on a loaded machine a holder's database may answer a renewal late.
** *waited counts the holders that had to wait. */
static int issue_waiting(holder *x, int64_t until, int *waited,
                         frond_error *e) {
  int rc, first = 1;
  while ((rc = issue(x, e)) == FROND_ECOORD || rc == FROND_ENODE_ID_LOST) {
    if (mono_ms() >= until)
      break;
    if (first && waited)
      (*waited)++;
    first = 0;
    nap_ms(100);
  }
  return rc;
}

/* No node ID held by two live handles. */
static void check_distinct(int n) {
  static unsigned char seen[1 << 16];
  memset(seen, 0, sizeof(seen));
  for (int i = 0; i < n; i++) {
    if (!h[i].c || frond_coord_state(h[i].c) != 0)
      continue;
    if (h[i].node >= sizeof(seen) || seen[h[i].node]++)
      fail("a node ID held twice: node %" PRIu64 " (handle %d)", h[i].node, i);
  }
}

/* Kill the victims of wave w (every `every`-th handle, split in `waves`
** waves) into pending[]; their count. */
static int kill_wave(int w, int n, int every, int waves, int *pending,
                     int *np) {
  int killed = 0;
  frond_error e;
  for (int i = 0; i < n; i += every)
    if ((i / every) % waves == w) {
      frond_coord_stats st;
      trace *t = &tr[h[i].node];
      issue(&h[i], &e);
      frond_coord_stats_get(h[i].c, &st);
      t->fence_ms = st.fence_ms;
      t->last_id = h[i].last_id;
      t->killed = 1;
      frond__coord_test_crash(h[i].c);
      h[i].c = NULL;
      pending[(*np)++] = i;
      killed++;
    }
  return killed;
}

/* Restart pending[] with their identities: those that hold a node ID
** again leave the list, checked against what the last holder of that
** node ID left; the others (a dead lease still runs) stay. */
static int restart(int *pending, int *np) {
  int left = 0, restarted = 0;
  frond_error e;
  claim_many(pending, *np, 0, 0);
  for (int k = 0; k < *np; k++) {
    int i = pending[k], rc = rcs[k];
    frond_coord_stats st;
    trace *t;
    if (rc == FROND_ENODE_RANGE || rc == FROND_ENODE_IN_USE ||
        start_later(rc)) {
      /* A dead holder's lease still runs, or start_later(): later. */
      pending[left++] = i;
      continue;
    }
    if (rc != 0) {
      fail("restart: %s", errs[k].message);
      pending[left++] = i;
      continue;
    }
    t = &tr[h[i].node];
    frond_coord_stats_get(h[i].c, &st);
    if (t->killed && st.start_after_ms < t->fence_ms)
      fail("restart: start above %" PRId64 ", below the dead fence %" PRId64,
           st.start_after_ms, t->fence_ms);
    if (issue_waiting(&h[i], mono_ms() + SETTLE_MS, NULL, &e) != 0)
      fail("first ID after restart: %s", e.message);
    else if (t->killed && h[i].last_id <= t->last_id)
      fail("first ID after restart: %" PRId64
           " not above the dead holder's %" PRId64,
           h[i].last_id, t->last_id);
    t->killed = 0;
    restarted++;
  }
  *np = left;
  return restarted;
}

/* Waves of kills gap_ms apart, each wave's restarts retried (every
** 100 ms) while the others run, renew and issue now and then. */
static void churn(int n, int every, int waves, int64_t gap_ms,
                  int64_t deadline) {
  static int pending[MAX_NODES];
  int np = 0, w = 0, killed = 0, restarted = 0, tries = 0, stalls = 0;
  int64_t t0 = mono_ms(), next = t0, last_issue = 0;
  frond_error e;
  while ((w < waves || np > 0) && mono_ms() < deadline) {
    if (w < waves && mono_ms() >= next) {
      int k = kill_wave(w, n, every, waves, pending, &np);
      printf("wave %d killed %d at %" PRId64 "\n", w, k, mono_ms() - t0);
      killed += k;
      w++;
      next = mono_ms() + gap_ms;
    }
    tries++;
    restarted += restart(pending, &np);
    check_distinct(n);
    if (mono_ms() - last_issue >= 1000) {
      for (int i = 0; i < n; i++)
        if (h[i].c && issue(&h[i], &e) != 0)
          stalls++; /* timing: the survivors line says who recovered */
      last_issue = mono_ms();
    }
    if (np > 0 || w < waves)
      nap_ms(100);
  }
  if (np > 0 || w < waves)
    fail("churn: %d of %d not restarted in time", np, killed);
  printf("churn %d %d %" PRId64 " %d %d\n", killed, restarted, mono_ms() - t0,
         tries, stalls);
}

int main(int argc, char **argv) {
  int n = 0, extra = 0, waves = 0, pct = 10, ids = 0, every, distinct = 1;
  int retries = 0, full = 0;
  int64_t hold_ms = 0, deadline_s = 100, gap_ms = 5000, t0, deadline,
          writes = 0, wfail = 0;
  const char *out = NULL;
  frond_error e;
  int ok = 0;

  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (strcmp(a, "--coordinator") == 0)
      uri = v;
    else if (strcmp(a, "--nodes") == 0)
      n = atoi(v);
    else if (strcmp(a, "--layout") == 0)
      layout_spec = v;
    else if (strcmp(a, "--ident") == 0)
      ident = v;
    else if (strcmp(a, "--extra") == 0)
      extra = atoi(v);
    else if (strcmp(a, "--waves") == 0)
      waves = atoi(v);
    else if (strcmp(a, "--kill-pct") == 0)
      pct = atoi(v);
    else if (strcmp(a, "--hold-ms") == 0)
      hold_ms = atoll(v);
    else if (strcmp(a, "--ids") == 0)
      ids = atoi(v);
    else if (strcmp(a, "--out") == 0)
      out = v;
    else if (strcmp(a, "--gap-ms") == 0)
      gap_ms = atoll(v);
    else if (strcmp(a, "--deadline-s") == 0)
      deadline_s = atoll(v);
    else if (strcmp(a, "--parallel") == 0)
      parallel = atoi(v);
    else {
      fprintf(stderr, "coord_scale: unknown option %s\n", a);
      return 2;
    }
  }
  if (!uri || n < 1 || n > MAX_NODES || pct < 1 || pct > 100 || parallel < 1 ||
      parallel > MAX_CLAIMERS || (ids > 0 && !out)) {
    fprintf(stderr, "coord_scale: see the usage in coord_scale.c\n");
    return 2;
  }
  if (frond_layout_parse(layout_spec, &layout, &e) != 0) {
    printf("FAIL layout: %s\n", e.message);
    return 1;
  }
  deadline = mono_ms() + deadline_s * 1000;
  {
    int64_t before = mono_ms(), wall = frond_clock_realtime(NULL);
    printf("wall %" PRId64 " %" PRId64 " %" PRId64 "\n", before, wall,
           mono_ms());
  }

  t0 = mono_ms();
  retries = claim_many(NULL, n, 1, deadline);
  for (int j = 0; j < n; j++)
    if (rcs[j] != 0 && rcs[j] != NOT_TRIED)
      fail("claim %d of %d: %s %s", j + 1, n, frond_err_name(rcs[j]),
           errs[j].message);
  if (failed)
    goto close;
  {
    static unsigned char seen[1 << 16];
    for (int i = 0; i < n; i++)
      if (h[i].node >= sizeof(seen) || seen[h[i].node]++)
        distinct = 0;
  }
  printf("claimed %d %" PRId64 " %d %d\n", n, mono_ms() - t0, distinct,
         retries);
  if (extra) {
    int rc = claim(n, &h[n], &e);
    if (rc == 0) {
      printf("extra OK node %" PRIu64 "\n", h[n].node);
      frond_coord_close(h[n].c, NULL);
    } else
      printf("extra %s %s\n", frond_err_name(rc), e.message);
  }
  {
    /* Every holder's first ID; the claims took a while, and the first
    ** holders' renewals met a database busy with the last claims. */
    int waited = 0;
    int64_t until = mono_ms() + SETTLE_MS;
    for (int i = 0; i < n; i++)
      if (issue_waiting(&h[i], until, &waited, &e) != 0)
        fail("first ID: %s", e.message);
    printf("first %d\n", waited);
  }
  if (ids > 0) {
    FILE *f = fopen(out, "a");
    if (!f) {
      printf("FAIL cannot open %s\n", out);
      failed = 1;
      goto close;
    }
    int64_t until = mono_ms() + SETTLE_MS;
    for (int k = 0; k < ids; k++)
      for (int i = 0; i < n; i++) {
        if (issue_waiting(&h[i], until, NULL, &e) != 0) {
          fail("collecting IDs: %s", e.message);
          break;
        }
        fprintf(f, "%" PRIu64 " %" PRId64 "\n", h[i].node, h[i].last_id);
      }
    fclose(f);
  }
  if (hold_ms != 0) {
    printf("ready\n");
    if (hold_ms < 0) {
      char line[64];
      if (!fgets(line, sizeof(line), stdin))
        line[0] = 0;
    } else
      nap_ms((long)hold_ms);
  }
  every = 100 / pct;
  if (waves > 0)
    churn(n, every, waves, gap_ms, deadline);
  check_distinct(n);
  {
    /* A holder in the middle of taking its claim back is given the same
    ** time as a first ID; one whose node ID another took meanwhile (its
    ** lease ran out unrenewed) stays refused, as it must. */
    int64_t until = mono_ms() + SETTLE_MS;
    for (int i = 0; i < n; i++) {
      frond_coord_stats st;
      if (!h[i].c)
        continue;
      if (issue_waiting(&h[i], until, NULL, &e) == 0)
        ok++;
      frond_coord_stats_get(h[i].c, &st);
      writes += (int64_t)st.fence_writes;
      wfail += (int64_t)st.write_failures;
    }
  }
  printf("survivors %d %d\n", ok, n);
  printf("writes %" PRId64 " %" PRId64 "\n", writes, wfail);
  {
    static int64_t off[MAX_NODES + 1];
    int checked = 0;
    for (int i = 0; i < n; i++) {
      frond_coord_stats st;
      if (!h[i].c)
        continue;
      frond_coord_stats_get(h[i].c, &st);
      if (st.clock_checked)
        off[checked++] = st.clock_offset_ms;
    }
    if (checked) {
      qsort(off, (size_t)checked, sizeof(off[0]), cmp_i64);
      printf("clock %" PRId64 " %" PRId64 " %" PRId64 " %d\n", off[0],
             off[checked / 2], off[checked - 1], checked);
    }
  }
close:
  t0 = mono_ms();
  for (int i = 0; i < n; i++)
    if (h[i].c && frond_coord_close(h[i].c, &e) != 0) {
      /* A close whose final write found the database full leaves its
      ** lease to run out, as a crash does: safe, and slower to take
      ** over. On a machine loaded past its cores the other holders'
      ** renewals can fill MariaDB's 151 connections (1040) while the
      ** closes go one by one, for longer than a close tries again
      ** (connect_ms): counted, at most 1 % of them. Any other
      ** failure, an etcd request that timed out among them, fails. */
      if (strstr(e.message, "too many connections") != NULL) {
        full++;
        continue;
      }
      fail("close: %s", e.message);
    }
  if (full > n / 100)
    fail("close: %d of %d closes found the database full", full, n);
  printf("closed %" PRId64 " (%d found the database full)\n", mono_ms() - t0,
         full);
  return failed ? 1 : 0;
}
