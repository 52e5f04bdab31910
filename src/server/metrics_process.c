/* SPDX-License-Identifier: Apache-2.0 */
/*
** metrics_process.c -- what the process_* families of /metrics report,
** as every Prometheus client library exports them (CPU time, memory,
** descriptors, start time), read from /proc/self at scrape time;
** metrics.c prints them.
**
** The names, types and units are the ones Prometheus' own clients use
** (client_golang's process collector), so that dashboards and alerts
** written for any other service work on Frond unchanged. A value the
** system does not give (no /proc) is left out rather than made up.
*/
#include "server/server.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* From /proc/self/stat: user and system CPU ticks, start time in ticks
** after boot, virtual size in bytes and resident pages. 0 on success. */
typedef struct proc_stat {
  unsigned long long utime, stime, starttime, vsize;
  long long rss;
} proc_stat;

static int read_stat(proc_stat *st) {
  char buf[1024], *p;
  size_t n;
  FILE *f = fopen("/proc/self/stat", "r");
  if (f == NULL)
    return -1;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* The command name is in parentheses and may hold spaces: the fields
  ** we want are counted from the last ')'. Field 3 (state) follows it. */
  if ((p = strrchr(buf, ')')) == NULL)
    return -1;
  /* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  ** utime stime cutime cstime priority nice threads itrealvalue starttime
  ** vsize rss */
  if (sscanf(p + 2,
             "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
             "%*d %*d %*d %*d %llu %llu %lld",
             &st->utime, &st->stime, &st->starttime, &st->vsize, &st->rss) != 5)
    return -1;
  return 0;
}

/* Seconds since the epoch at boot, from /proc/stat's btime. */
static long long boot_time(void) {
  char line[256];
  long long bt = -1;
  FILE *f = fopen("/proc/stat", "r");
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "btime ", 6) == 0) {
      bt = atoll(line + 6);
      break;
    }
  fclose(f);
  return bt;
}

/* Open descriptors: the entries of /proc/self/fd, less the one the
** listing itself holds. -1 when it cannot be read. */
static long open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  long n = 0;
  if (d == NULL)
    return -1;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1;
}

void frond__process_read(frond__process *p) {
  long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
  long long bt;
  struct rlimit rl;
  proc_stat st;
  memset(p, 0, sizeof *p);
  if (ticks > 0 && read_stat(&st) == 0) {
    p->have_stat = 1;
    p->resident_bytes = (double)st.rss * (double)page;
    p->virtual_bytes = (double)st.vsize;
    p->cpu_seconds = (double)(st.utime + st.stime) / (double)ticks;
    if ((bt = boot_time()) >= 0) {
      p->have_start = 1;
      p->start_time_seconds = (double)bt + (double)st.starttime / (double)ticks;
    }
  }
  if ((fds = open_fds()) >= 0) {
    p->have_fds = 1;
    p->open_fds = (double)fds;
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    p->have_max_fds = 1;
    p->max_fds = (double)rl.rlim_cur;
  }
}
