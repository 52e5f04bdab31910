/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_fork.c -- a program that opens a segment allocator, takes IDs, then
** forks and takes IDs in the parent and in the child, for the mistakes
** suite (tests/mistakes/rows_tags.py).
**
**   seg_fork URI TAG N
**
** Lines on stdout: "parent <id>" for N IDs before the fork and N after,
** "child <id>" for N IDs in the child, or "child error <CODE> <message>"
** at the child's first failure. The child prints and exits before the
** parent goes on. Exit 0 unless the parent fails.
*/
#include "frond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int take(frond_seg *s, const char *who, const char *tag, long n) {
  frond_error e = {0, ""};
  int64_t id;
  long i;
  for (i = 0; i < n; i++) {
    if (frond_seg_next(s, tag, strlen(tag), &id, &e) != 0) {
      printf("%s error %s %s\n", who, frond_err_name(e.code), e.message);
      return -1;
    }
    printf("%s %lld\n", who, (long long)id);
  }
  return 0;
}

int main(int argc, char **argv) {
  frond_error e = {0, ""};
  frond_seg *s;
  long n;
  pid_t pid;
  int status = 0;
  if (argc != 4 || (n = atol(argv[3])) < 1) {
    fprintf(stderr, "usage: seg_fork URI TAG N\n");
    return 2;
  }
  if (frond_seg_open(&s, argv[1], NULL, &e) != 0) {
    fprintf(stderr, "seg_fork: %s: %s\n", frond_err_name(e.code), e.message);
    return 1;
  }
  if (take(s, "parent", argv[2], n) != 0)
    return 1;
  fflush(stdout);
  if ((pid = fork()) < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    take(s, "child", argv[2], n);
    fflush(stdout);
    _exit(0);
  }
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "seg_fork: the child failed (status %d)\n", status);
    return 1;
  }
  if (take(s, "parent", argv[2], n) != 0)
    return 1;
  frond_seg_close(s);
  return 0;
}
