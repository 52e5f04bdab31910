/*
** log.c -- the library's log sink: one line per event.
*/
#include "core/internal.h"

#include <stdio.h>

static frond_log_fn log_fn;
static void *log_ctx;
static int log_max = FROND_LOG_INFO;

void frond_log_set(frond_log_fn fn, void *ctx, int max_level) {
  log_fn = fn;
  log_ctx = ctx;
  log_max = max_level;
}

const char *frond_log_level_name(int level) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  if (level < 0 || level > FROND_LOG_DEBUG)
    return "unknown";
  return names[level];
}

void frond_log(int level, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  if (level > log_max)
    return;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (log_fn != NULL)
    log_fn(log_ctx, level, line);
  else
    fprintf(stderr, "frond: %s: %s\n", frond_log_level_name(level), line);
}
