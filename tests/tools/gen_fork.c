/* SPDX-License-Identifier: Apache-2.0 */
/*
** gen_fork.c -- a program that makes a generator, takes IDs, then forks
** and takes IDs in the child and in the parent, for the mistakes suite
** (tests/mistakes/rows_nodes.py).
**
**   gen_fork KIND N HOW DIR
**
** KIND: snowflake (node 1, its high-water file in DIR), uuid7, ulid or
** objectid; HOW: fork, _Fork or syscall (the last two run no
** pthread_atfork handler). The clock stands still, so that a child that
** issued from its copy of the generator would repeat the parent's IDs one
** for one instead of by chance.
** Lines on stdout: "parent <id>" for N IDs before the fork and N after,
** "child <id>" for N IDs in the child, or "child error <CODE> <message>"
** at the child's first failure (a snowflake generator refuses; the others
** never fail, they take new keys). The child prints and exits before the
** parent goes on. Exit 0 unless the parent fails.
*/
#include "frond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* 2026-01-01, for ever. */
static int64_t frozen(void *ctx) {
  (void)ctx;
  return INT64_C(1767225600000);
}

typedef struct gens {
  frond_gen *sf;
  frond_uuid7 *u;
  frond_ulid *l;
  frond_objectid *o;
} gens;

static int take(gens *g, const char *who, long n) {
  frond_error e = {0, ""};
  char s[64];
  uint8_t b[16];
  int64_t id;
  long i;
  for (i = 0; i < n; i++) {
    if (g->sf != NULL && frond_gen_next(g->sf, &id, &e) != 0) {
      printf("%s error %s %s\n", who, frond_err_name(e.code), e.message);
      return -1;
    }
    if (g->sf != NULL)
      snprintf(s, sizeof(s), "%lld", (long long)id);
    else if (g->u != NULL)
      frond_uuid7_next(g->u, b), frond_uuid_format(b, s);
    else if (g->l != NULL)
      frond_ulid_next(g->l, b), frond_ulid_format(b, s);
    else
      frond_objectid_next(g->o, b), frond_objectid_format(b, s);
    printf("%s %s\n", who, s);
  }
  return 0;
}

static int make(gens *g, const char *kind, const char *dir, frond_error *e) {
  char path[4096];
  frond_gen_options o;
  frond_layout l;
  int rc;
  memset(g, 0, sizeof(*g));
  if (strcmp(kind, "uuid7") == 0)
    return frond_uuid7_create(&g->u, frozen, NULL, e);
  if (strcmp(kind, "ulid") == 0)
    return frond_ulid_create(&g->l, frozen, NULL, e);
  if (strcmp(kind, "objectid") == 0)
    return frond_objectid_create(&g->o, frozen, NULL, e);
  if ((rc = frond_layout_parse("frond", &l, e)) != 0)
    return rc;
  snprintf(path, sizeof(path), "%s/high-water", dir);
  frond_gen_options_init(&o);
  o.high_water_path = path;
  o.clock = frozen;
  return frond_gen_create(&g->sf, &l, 1, &o, e);
}

int main(int argc, char **argv) {
  frond_error e = {0, ""};
  gens g;
  long n;
  pid_t pid;
  int status = 0;
  const char *how = argc == 5 ? argv[3] : "";
  if (argc != 5 || (n = atol(argv[2])) < 1 ||
      (strcmp(how, "fork") != 0 && strcmp(how, "_Fork") != 0 &&
       strcmp(how, "syscall") != 0) ||
      (strcmp(argv[1], "snowflake") != 0 && strcmp(argv[1], "uuid7") != 0 &&
       strcmp(argv[1], "ulid") != 0 && strcmp(argv[1], "objectid") != 0)) {
    fprintf(stderr, "usage: gen_fork snowflake|uuid7|ulid|objectid N "
                    "fork|_Fork|syscall DIR\n");
    return 2;
  }
  if (make(&g, argv[1], argv[4], &e) != 0) {
    fprintf(stderr, "gen_fork: %s: %s\n", frond_err_name(e.code), e.message);
    return 1;
  }
  if (take(&g, "parent", n) != 0)
    return 1;
  fflush(stdout);
  pid = strcmp(how, "_Fork") == 0     ? _Fork()
        : strcmp(how, "syscall") == 0 ? (pid_t)syscall(SYS_fork)
                                      : fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    take(&g, "child", n);
    fflush(stdout);
    _exit(0);
  }
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "gen_fork: the child failed (status %d)\n", status);
    return 1;
  }
  if (take(&g, "parent", n) != 0)
    return 1;
  if (g.sf != NULL && frond_gen_close(g.sf, &e) != 0) {
    fprintf(stderr, "gen_fork: close: %s\n", e.message);
    return 1;
  }
  frond_uuid7_free(g.u);
  frond_ulid_free(g.l);
  frond_objectid_free(g.o);
  return 0;
}
