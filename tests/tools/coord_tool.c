/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_tool.c -- a node ID holder for the coordinator's integration tests.
**
** This file contains a small program that does what a program embedding
** libfrond does with a coordinator, through the public API only: open it,
** create a generator on a node ID (frond_coord_gen_create), issue IDs. The
** tests drive it line by line on stdin:
**
**   next        issue one ID        -> "id <id> <unix ms>" | "err <NAME> ..."
**   next N      issue N IDs         -> "ids <first> <last> <unix ms of last>"
**   state       what the generator's calls see now -> "state OK" |
**               "state <NAME>"
**   stats       -> "stats fence <ms> offset <ms> checked <0|1> writes <n>
**               regains <n> error <NAME|OK>"
**   expire      make ZooKeeper expire our session -> "ok" (a test hook)
**   list        the coordinator's IDs -> "list <node>,<owner>,<ms>,<live> ..."
**   run MS FILE [BATCH]  issue IDs for MS ms, BATCH per call (default 1),
**               appending them to FILE as native int64
**               -> "ran <ids> <failed calls> <last error name or OK>"
**   quit        close and exit      -> "closed"
**
** usage: coord_tool --coordinator URI [--ip IP --port N | --advertise H:P]
**                   [--cache-dir DIR] [--layout SPEC] [--max-wait-ms N]
**                   [--max-ahead-ms N] [--window-ms N]
**                   [--max-clock-offset-ms N]
** On start it prints "node <id> <start above, unix ms> <from_cache>" or
** "err <NAME> <message>" and exits 3.
*/
#include "frond.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The one internal hook: end our ZooKeeper session from the server side. */
int frond__coord_zk_expire_session(frond_coord *c, frond_error *err);

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Issue IDs for ms milliseconds into file f; print the summary line. */
static void run(frond_gen *g, long ms, const char *path, long batch) {
  FILE *f = fopen(path, "ab");
  int64_t *buf = malloc((size_t)(batch > 0 ? batch : 1) * sizeof(*buf));
  int64_t deadline = mono_ns() + (int64_t)ms * 1000000;
  uint64_t ids = 0, failed = 0;
  int last = 0;
  frond_error e;
  if (!f || !buf || batch < 1) {
    printf("err INVAL cannot run\n");
    free(buf);
    if (f)
      fclose(f);
    return;
  }
  while (mono_ns() < deadline) {
    int rc = batch == 1 ? frond_gen_next(g, buf, &e)
                        : frond_gen_next_n(g, (size_t)batch, buf, &e);
    if (rc != 0) {
      struct timespec ts = {0, 1000000}; /* blocked: do not spin */
      failed++;
      last = rc;
      nanosleep(&ts, NULL);
      continue;
    }
    fwrite(buf, sizeof(*buf), (size_t)batch, f);
    ids += (uint64_t)batch;
  }
  fclose(f);
  free(buf);
  printf("ran %" PRIu64 " %" PRIu64 " %s\n", ids, failed,
         last ? frond_err_name(last) : "OK");
}

static int fail(const frond_error *e) {
  printf("err %s %s\n", frond_err_name(e->code), e->message);
  fflush(stdout);
  return 3;
}

int main(int argc, char **argv) {
  const char *uri = NULL, *layout_spec = FROND_LAYOUT_DEFAULT, *ip = NULL;
  int port = 8080;
  char who[160];
  frond_coord_options o;
  frond_gen_options go;
  frond_coord *c = NULL;
  frond_coord_stats st;
  frond_layout l;
  frond_gen *g = NULL;
  frond_error e;
  char line[256];

  setvbuf(stdout, NULL, _IOLBF, 0);
  frond_coord_options_init(&o);
  frond_gen_options_init(&go);
  /* Options come in pairs: --name value. */
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "coord_tool: %s needs a value\n", a);
      return 2;
    }
    if (strcmp(a, "--coordinator") == 0)
      uri = v;
    else if (strcmp(a, "--ip") == 0)
      ip = v;
    else if (strcmp(a, "--port") == 0)
      port = atoi(v);
    else if (strcmp(a, "--advertise") == 0)
      o.advertise = v;
    else if (strcmp(a, "--cache-dir") == 0)
      o.cache_dir = v;
    else if (strcmp(a, "--layout") == 0)
      layout_spec = v;
    else if (strcmp(a, "--max-wait-ms") == 0)
      go.max_wait_ms = atoll(v);
    else if (strcmp(a, "--max-ahead-ms") == 0)
      go.max_ahead_ms = atoll(v);
    else if (strcmp(a, "--window-ms") == 0)
      o.window_ms = atoll(v);
    else if (strcmp(a, "--max-clock-offset-ms") == 0)
      o.max_clock_offset_ms = atoll(v);
    else {
      fprintf(stderr, "coord_tool: unknown option %s\n", a);
      return 2;
    }
  }
  if (!o.advertise && ip) {
    snprintf(who, sizeof(who), "%s:%d", ip, port);
    o.advertise = who;
  }
  o.port = port;
  if (frond_layout_parse(layout_spec, &l, &e) != 0)
    return fail(&e);
  if (frond_coord_open(&c, uri, &o, &e) != 0)
    return fail(&e);
  if (frond_coord_gen_create(c, &l, &go, &g, &e) != 0) {
    frond_coord_close(c, NULL);
    return fail(&e);
  }
  frond_coord_stats_get(c, &st);
  printf("node %" PRIu64 " %" PRId64 " %d\n", st.node, st.start_after_ms,
         st.from_cache);

  while (fgets(line, sizeof(line), stdin)) {
    int64_t id, ids[2];
    frond_fields f;
    long n = 0;
    if (strncmp(line, "next", 4) == 0 && sscanf(line + 4, "%ld", &n) == 1 &&
        n > 1) {
      int64_t *buf = malloc((size_t)n * sizeof(*buf));
      if (!buf || frond_gen_next_n(g, (size_t)n, buf, &e) != 0) {
        printf("err %s %s\n", frond_err_name(e.code), e.message);
        free(buf);
        continue;
      }
      ids[0] = buf[0], ids[1] = buf[n - 1];
      free(buf);
      frond_decode(&l, ids[1], &f, NULL);
      printf("ids %" PRId64 " %" PRId64 " %" PRId64 "\n", ids[0], ids[1],
             f.unix_ms);
    } else if (strncmp(line, "next", 4) == 0) {
      if (frond_gen_next(g, &id, &e) != 0) {
        printf("err %s %s\n", frond_err_name(e.code), e.message);
        continue;
      }
      frond_decode(&l, id, &f, NULL);
      printf("id %" PRId64 " %" PRId64 "\n", id, f.unix_ms);
    } else if (strncmp(line, "state", 5) == 0) {
      int s = frond_coord_state(c);
      printf("state %s\n", s ? frond_err_name(s) : "OK");
    } else if (strncmp(line, "stats", 5) == 0) {
      frond_coord_stats_get(c, &st);
      printf("stats fence %" PRId64 " offset %" PRId64 " checked %d writes "
             "%" PRIu64 " regains %" PRIu64 " error %s\n",
             st.fence_ms, st.clock_offset_ms, st.clock_checked, st.fence_writes,
             st.regains, st.last_error ? frond_err_name(st.last_error) : "OK");
    } else if (strncmp(line, "expire", 6) == 0) {
#ifdef FROND_WITH_ZK
      if (frond__coord_zk_expire_session(c, &e) != 0)
        printf("err %s %s\n", frond_err_name(e.code), e.message);
      else
        printf("ok\n");
#else
      printf("err INVAL built without ZooKeeper support\n");
#endif
    } else if (strncmp(line, "list", 4) == 0) {
      frond_coord_entry *ents = NULL;
      size_t ne = 0;
      if (frond_coord_list(c, &ents, &ne, &e) != 0) {
        printf("err %s %s\n", frond_err_name(e.code), e.message);
        continue;
      }
      printf("list");
      for (size_t i = 0; i < ne; i++)
        printf(" %" PRIu64 ",%s,%" PRId64 ",%d", ents[i].node, ents[i].owner,
               ents[i].fence_ms, ents[i].live);
      printf("\n");
      frond_free(ents);
    } else if (strncmp(line, "run ", 4) == 0) {
      char path[200];
      long ms = 0, batch = 1;
      if (sscanf(line + 4, "%ld %199s %ld", &ms, path, &batch) < 2)
        printf("err INVAL run MS FILE [BATCH]\n");
      else
        run(g, ms, path, batch);
    } else if (strncmp(line, "quit", 4) == 0) {
      break;
    } else {
      printf("err INVAL unknown command\n");
    }
  }
  frond_coord_close(c, NULL);
  printf("closed\n");
  return 0;
}
