/* SPDX-License-Identifier: Apache-2.0 */
/*
** file.c -- durable, atomic replacement of small files (see file.h).
*/
#include "base/file.h"
#include "base/base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define TMP_TRIES 8
/* A temporary file this old, of a process that is gone, is a leftover. */
#define STALE_TMP_S 60

static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* 64 bits that differ between calls and processes; no secrecy needed. */
static uint64_t tmp_suffix(void) {
  static _Atomic uint64_t counter;
  uint64_t r = 0;
  if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
    r = (uint64_t)frond__mono_ns() * UINT64_C(0x9e3779b97f4a7c15);
  return r ^ atomic_fetch_add(&counter, 1);
}

/* Create a temporary file next to `path` that no other writer uses:
** "<path>.<pid>.<16 hex>.tmp", created with O_EXCL. Returns the fd or -1
** (errno set). */
static int open_tmp(const char *path, char *tmp, size_t len) {
  for (int i = 0; i < TMP_TRIES; i++) {
    int fd;
    if ((size_t)snprintf(tmp, len, "%s.%ld.%016llx.tmp", path, (long)getpid(),
                         (unsigned long long)tmp_suffix()) >= len) {
      errno = ENAMETOOLONG;
      return -1;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  return -1;
}

int frond__file_replace(const char *path, const void *data, size_t len,
                        frond_error *err) {
  char tmp[PATH_MAX], dir[PATH_MAX];
  char *slash;
  int fd, dfd;
  if (strlen(path) + 48 >= sizeof(tmp) ||
      (size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
    return frond__fail(err, FROND_EINVAL, "path too long: %.64s...", path);
  slash = strrchr(dir, '/');
  if (slash == NULL)
    snprintf(dir, sizeof(dir), ".");
  else
    *(slash == dir ? slash + 1 : slash) = '\0';

  fd = open_tmp(path, tmp, sizeof(tmp));
  if (fd < 0)
    return frond__fail(err, FROND_EIO,
                       "cannot create a temporary file for "
                       "%s: %s",
                       path, strerror(errno));
  if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return frond__fail(err, FROND_EIO, "cannot write %s: %s", tmp, strerror(e));
  }
  close(fd);
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return frond__fail(err, FROND_EIO, "cannot rename %s to %s: %s", tmp, path,
                       strerror(e));
  }
  /* The rename is durable only once the directory is. */
  dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return frond__fail(err, FROND_EIO, "cannot open directory %s: %s", dir,
                       strerror(errno));
  if (fsync(dfd) != 0) {
    int e = errno;
    close(dfd);
    return frond__fail(err, FROND_EIO, "cannot fsync directory %s: %s", dir,
                       strerror(e));
  }
  close(dfd);
  return 0;
}

void frond__file_sweep(const char *path) {
  char dir[PATH_MAX], full[PATH_MAX];
  const char *base, *slash = strrchr(path, '/');
  size_t bl;
  DIR *d;
  struct dirent *de;
  if (slash) {
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path),
             path);
    base = slash + 1;
  } else {
    snprintf(dir, sizeof(dir), ".");
    base = path;
  }
  bl = strlen(base);
  if (!(d = opendir(dir)))
    return;
  while ((de = readdir(d)) != NULL) {
    const char *n = de->d_name, *dot;
    struct stat st;
    char *end;
    long pid;
    size_t len = strlen(n);
    if (len <= bl + 5 || strncmp(n, base, bl) != 0 || n[bl] != '.' ||
        strcmp(n + len - 4, ".tmp") != 0)
      continue;
    pid = strtol(n + bl + 1, &end, 10);
    dot = end;
    if (pid <= 0 || *dot != '.' || pid == (long)getpid())
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue; /* its writer may still be at work */
    if ((size_t)snprintf(full, sizeof(full), "%s/%s", dir, n) >= sizeof(full) ||
        stat(full, &st) != 0 || time(NULL) - st.st_mtime < STALE_TMP_S)
      continue;
    unlink(full);
  }
  closedir(d);
}

size_t frond__read_full(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, (char *)buf + got, n - got);
    if (k > 0)
      got += (size_t)k;
    else if (k == 0 || errno != EINTR)
      break;
  }
  return got;
}
