/* SPDX-License-Identifier: Apache-2.0 */
/*
** seg_fork.c -- a program that opens a segment allocator, takes IDs, then
** forks and takes IDs in the parent and in the child, for the mistakes
** suite (tests/mistakes/rows_tags.py).
**
**   seg_fork URI TAG N [fork | _Fork | syscall]
**
** The fork is fork() unless named: _Fork() and the raw system call run no
** pthread_atfork handler.
** Lines on stdout: "parent <id>" for N IDs before the fork and N after;
** in the child, N IDs by the tag's name and N through a handle taken
** before the fork (the inline frond_seg_tag_next), each "child <id>", or
** "child error <CODE> <message>" at the first failure of each. The child
** prints and exits before the parent goes on. Exit 0 unless the parent
** fails.
*/
#include "frond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

static void take_handle(frond_seg_tag *h, const char *who, long n) {
  frond_error e = {0, ""};
  int64_t id;
  long i;
  for (i = 0; i < n; i++) {
    if (frond_seg_tag_next(h, &id, &e) != 0) {
      printf("%s error %s %s\n", who, frond_err_name(e.code), e.message);
      return;
    }
    printf("%s %lld\n", who, (long long)id);
  }
}

int main(int argc, char **argv) {
  frond_error e = {0, ""};
  frond_seg *s;
  frond_seg_tag *h;
  long n;
  pid_t pid;
  int status = 0;
  const char *how = argc == 5 ? argv[4] : "fork";
  if ((argc != 4 && argc != 5) || (n = atol(argv[3])) < 1 ||
      (strcmp(how, "fork") != 0 && strcmp(how, "_Fork") != 0 &&
       strcmp(how, "syscall") != 0)) {
    fprintf(stderr, "usage: seg_fork URI TAG N [fork | _Fork | syscall]\n");
    return 2;
  }
  if (frond_seg_open(&s, argv[1], NULL, &e) != 0) {
    fprintf(stderr, "seg_fork: %s: %s\n", frond_err_name(e.code), e.message);
    return 1;
  }
  if (take(s, "parent", argv[2], n) != 0)
    return 1;
  if (frond_seg_tag_get(s, argv[2], strlen(argv[2]), &h, &e) != 0) {
    fprintf(stderr, "seg_fork: %s: %s\n", frond_err_name(e.code), e.message);
    return 1;
  }
  fflush(stdout);
  pid = strcmp(how, "_Fork") == 0     ? _Fork()
        : strcmp(how, "syscall") == 0 ? (pid_t)syscall(SYS_fork)
                                      : fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    take(s, "child", argv[2], n);
    take_handle(h, "child", n);
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
