/* SPDX-License-Identifier: Apache-2.0 */
/*
** clock.c -- clocks, condition variables with monotonic deadlines, sleeping,
** and RFC 3339 time formatting.
*/
#include "base/base.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

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
