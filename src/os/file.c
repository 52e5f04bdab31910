/*
** file.c -- durable, atomic replacement of small files (see file.h).
*/
#include "os/file.h"
#include "core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

int frond__file_replace(const char *path, const void *data, size_t len,
                        frond_error *err) {
  char tmp[PATH_MAX], dir[PATH_MAX];
  char *slash;
  int fd, dfd;
  if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp) ||
      (size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
    return frond__fail(err, FROND_EINVAL, "path too long: %.64s...", path);
  slash = strrchr(dir, '/');
  if (slash == NULL)
    snprintf(dir, sizeof(dir), ".");
  else
    *(slash == dir ? slash + 1 : slash) = '\0';

  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return frond__fail(err, FROND_EIO, "cannot create %s: %s", tmp,
                       strerror(errno));
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
