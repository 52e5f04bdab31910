/*
** util.c -- clocks, sleeping, time formatting and number parsing.
*/
#include "core/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int64_t frond_clock_realtime(void *ctx) {
  struct timespec ts;
  (void)ctx;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t frond__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void frond__cond_init(pthread_cond_t *cv) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(cv, &a);
  pthread_condattr_destroy(&a);
}

int frond__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                           int64_t deadline_ns) {
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline_ns / 1000000000);
  ts.tv_nsec = (long)(deadline_ns % 1000000000);
  return pthread_cond_timedwait(cv, mu, &ts);
}

void frond__sleep_ns(int64_t ns) {
  struct timespec ts;
  if (ns <= 0)
    return;
  ts.tv_sec = (time_t)(ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

void frond__format_rfc3339(int64_t unix_ms, char *buf, size_t len) {
  struct tm tm;
  int64_t ms = unix_ms % 1000;
  int64_t secs = unix_ms / 1000;
  time_t t;
  if (ms < 0) {
    ms += 1000;
    secs -= 1;
  }
  t = (time_t)secs;
  if (gmtime_r(&t, &tm) == NULL) {
    snprintf(buf, len, "invalid-time");
    return;
  }
  snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           (int)ms);
}

int frond__parse_i64(const char *s, size_t len, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  uint64_t v = 0;
  uint64_t limit;
  if (len == 0)
    return -1;
  if (s[0] == '-') {
    neg = 1;
    i = 1;
    if (len == 1)
      return -1;
  }
  limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < len; i++) {
    unsigned d = (unsigned char)s[i] - '0';
    if (d > 9)
      return -1;
    if (v > (limit - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

uint64_t frond__fnv1a64(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  while (n--)
    h = (h ^ *s++) * UINT64_C(0x100000001b3);
  return h;
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
