/* SPDX-License-Identifier: Apache-2.0 */
/*
** audit_writer.c -- the audit log's writer thread (see audit.c): takes
** the workers' lines every TICK_MS, appends them to the file and syncs it,
** retries a failed write, reopens the path on SIGHUP.
*/
#include "base/base.h"
#include "server/audit_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Open the path for appending; a file it creates is made durable in its
** directory. The descriptor, or -1 with errno set. */
int frond__audit_open_log(const char *path) {
  char dir[FROND__CFG_STR_MAX];
  const char *slash = strrchr(path, '/');
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600), d, e;
  if (fd < 0)
    return -1;
  snprintf(dir, sizeof dir, "%.*s", slash == NULL ? 1 : (int)(slash - path),
           slash == NULL   ? "."
           : slash == path ? "/"
                           : path);
  if ((d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
    e = fsync(d);
    close(d);
    (void)e;
  }
  return fd;
}

/* The prefix of a record written to stderr instead of the file. */
#define SPILLED "frond: audit record not written: "

/* All of v[0..n) to stderr, through partial writes. */
static void put_all(struct iovec *v, int n) {
  while (n > 0) {
    ssize_t w = writev(STDERR_FILENO, v, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    for (; n > 0 && (size_t)w >= v->iov_len; v++, n--)
      w -= (ssize_t)v->iov_len;
    if (n > 0) {
      v->iov_base = (char *)v->iov_base + w;
      v->iov_len -= (size_t)w;
    }
  }
}

/* Records the file did not take and the writer gives up on (at the stop,
** or out of memory): never dropped silently. Each line goes to stderr as
** SPILLED and the line itself, in one writev (the journal keeps them, at
** error priority), is counted in a->unwritten and taken off pending; one
** error says how many and why. Allocates nothing. */
static void spill(frond__audit *a, char *p, size_t len, const char *why) {
  int journal = frond__log_journal_detect();
  uint64_t n = 0;
  atomic_fetch_sub(&a->pending, len);
  while (len > 0) {
    char *nl = memchr(p, '\n', len);
    size_t k = nl != NULL ? (size_t)(nl - p) : len;
    struct iovec v[4] = {{(void *)"<3>", 3},
                         {(void *)SPILLED, sizeof SPILLED - 1},
                         {p, k},
                         {(void *)"\n", 1}};
    put_all(journal ? v : v + 1, journal ? 4 : 3);
    n++;
    k += nl != NULL;
    p += k;
    len -= k;
  }
  atomic_fetch_add(&a->unwritten, n);
  frond_log(FROND_LOG_ERROR,
            "audit log %s: %llu records could not be written to it (%s); "
            "they are on stderr, each after \"%s\"",
            a->path, (unsigned long long)n, why, SPILLED);
}

/* Take every worker's lines (and, with all or once their second is over,
** its aggregates) into a->out. */
static void collect(frond__audit *a, int all) {
  int64_t second = frond__audit_now_ms() / 1000;
  int i;
  for (i = 0; i < a->nws; i++) {
    wstate *ws = &a->ws[i];
    frond__buf t;
    pthread_mutex_lock(&ws->lock);
    if (ws->nused > 0 && (all || ws->second < second))
      frond__audit_flush_aggs(a, ws);
    t = ws->buf;
    ws->buf = a->take;
    ws->buf.len = 0;
    pthread_mutex_unlock(&ws->lock);
    a->take = t;
    if (t.len > 0 && frond__buf_append(&a->out, t.data, t.len) != 0)
      spill(a, t.data, t.len, "out of memory");
    a->take.len = 0;
  }
}

/* What was dropped since last told, as a line of the log itself. */
static void tell_drops(frond__audit *a) {
  uint64_t d = atomic_load(&a->dropped);
  size_t len0 = a->out.len;
  if (d == a->drops_told)
    return;
  frond__audit_put_time(&a->out, frond__audit_now_ms(), NULL);
  frond__buf_printf(&a->out,
                    ",\"event\":\"dropped\",\"records\":%llu,"
                    "\"reason\":\"audit_full = drop\"}\n",
                    (unsigned long long)(d - a->drops_told));
  atomic_fetch_add(&a->pending, a->out.len - len0);
  frond_log(FROND_LOG_ERROR,
            "audit log: %llu records dropped (behind by more than "
            "audit_buffer, audit_full = drop)",
            (unsigned long long)(d - a->drops_told));
  a->drops_told = d;
}

/* Write a->out to the file and sync it. A failure leaves the file ending
** with a whole line (what a partial write left of a line is cut off) and
** the rest in a->out, tried again RETRY_MS later. */
static void write_out(frond__audit *a) {
  off_t end = lseek(a->fd, 0, SEEK_END);
  size_t done = 0, keep;
  int e = 0;
  while (done < a->out.len) {
    ssize_t w = write(a->fd, a->out.data + done, a->out.len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      e = w < 0 ? errno : ENOSPC;
      break;
    }
    done += (size_t)w;
  }
  if (e == 0 && fdatasync(a->fd) != 0)
    e = errno, done = 0; /* not known to be on disk: written again */
  keep = done;
  if (e != 0) {
    /* Keep whole lines only; a sync failure keeps nothing as written. */
    while (keep > 0 && a->out.data[keep - 1] != '\n')
      keep--;
    if (end >= 0 && ftruncate(a->fd, end + (off_t)keep) != 0)
      keep = done; /* the tail stays: find skips a torn line */
  }
  if (keep > 0) {
    uint64_t lines = 0;
    const char *p = a->out.data, *lim = p + keep;
    while ((p = memchr(p, '\n', (size_t)(lim - p))) != NULL && p++ < lim)
      lines++;
    atomic_fetch_add(&a->records, lines);
    atomic_fetch_add(&a->bytes, keep);
    atomic_fetch_sub(&a->pending, keep);
    memmove(a->out.data, a->out.data + keep, a->out.len - keep);
    a->out.len -= keep;
  }
  if (e != 0) {
    atomic_fetch_add(&a->write_errors, 1);
    if (!atomic_exchange(&a->failing, 1))
      frond_log(FROND_LOG_ERROR,
                "audit log %s: %s; %s until it can be written (retried every "
                "second)",
                a->path, strerror(e),
                a->refuse ? "IDs are refused (AUDIT_UNAVAILABLE)"
                          : "records are kept up to audit_buffer, then "
                            "dropped");
    a->retry_ms = frond__audit_now_ms() + RETRY_MS;
  } else if (atomic_exchange(&a->failing, 0)) {
    frond_log(FROND_LOG_INFO, "audit log %s: written again", a->path);
  }
}

/* SIGHUP: the path again (logrotate moved the file away). Failing, the
** old file stays in use and the reopen is tried again RETRY_MS later. */
static void reopen_log(frond__audit *a) {
  int fd = frond__audit_open_log(a->path);
  if (fd < 0) {
    atomic_fetch_add(&a->reopen_failures, 1);
    if (!a->reopen_failing)
      frond_log(FROND_LOG_ERROR,
                "audit log %s: cannot open it again: %s; records go on to the "
                "file open before (retried every second)",
                a->path, strerror(errno));
    a->reopen_failing = 1;
    a->reopen_ms = frond__audit_now_ms() + RETRY_MS;
    return;
  }
  (void)fdatasync(a->fd);
  close(a->fd);
  a->fd = fd;
  a->reopen = 0;
  a->reopen_failing = 0;
  atomic_fetch_add(&a->reopens, 1);
  frond_log(FROND_LOG_INFO, "audit log %s: reopened", a->path);
}

void *frond__audit_writer(void *arg) {
  frond__audit *a = arg;
  sigset_t all;
  int stop = 0;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  while (!stop) {
    struct timespec ts;
    int64_t now;
    pthread_mutex_lock(&a->lock);
    if (!a->stop && !a->kick && !a->hup) {
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += TICK_MS * 1000000L;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&a->cond, &a->lock, &ts);
    }
    stop = a->stop;
    if (a->hup)
      a->reopen = 1, a->retry_ms = a->reopen_ms = 0;
    a->hup = a->kick = 0;
    pthread_mutex_unlock(&a->lock);
    collect(a, stop);
    tell_drops(a);
    now = frond__audit_now_ms();
    /* What was collected before the SIGHUP goes to the old file first;
    ** if that cannot take it, the new one may. */
    if (a->out.len > 0 &&
        (stop || now >= a->retry_ms || !atomic_load(&a->failing)))
      write_out(a);
    if (a->reopen && (stop || now >= a->reopen_ms)) {
      reopen_log(a);
      if (!a->reopen && a->out.len > 0)
        write_out(a);
    }
  }
  /* Written again until the stop (above, stop forces a last try); what
  ** the file still does not take is given up on now. */
  if (a->out.len > 0) {
    spill(a, a->out.data, a->out.len, "at the stop");
    a->out.len = 0;
  }
  return NULL;
}
