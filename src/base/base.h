/* SPDX-License-Identifier: Apache-2.0 */
/*
** base.h -- the bottom layer's private header: what every other layer of
** libfrond uses. Errors, clocks, numbers, hashing and the log's fields.
**
** Nothing here knows an ID, a store or a coordinator; the files of
** src/base/ include nothing above them. Internal non-static names carry
** the frond__ prefix. The shared library hides them
** (-fvisibility=hidden); the frond command and the tests link the static
** library and may use them.
*/
#ifndef FROND_BASE_H
#define FROND_BASE_H

#include "frond.h"

#include <pthread.h>
#include <stdarg.h>

#if defined(__GNUC__)
#define FROND__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define FROND__LIKELY(x) __builtin_expect(!!(x), 1)
#define FROND__UNLIKELY(x) __builtin_expect(!!(x), 0)
/* A rare path kept out of line, so that its caller's hot path needs no
** stack frame. */
#define FROND__COLD __attribute__((noinline, cold))
#else
#define FROND__PRINTF(f, a)
#define FROND__LIKELY(x) (x)
#define FROND__UNLIKELY(x) (x)
#define FROND__COLD
#endif

#define FROND__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Record a failure in err (when not NULL) and return code, so that callers
** can write `return frond__fail(err, FROND_EINVAL, "count %d", n);`. With a
** NULL fmt the message is frond_strerror(code). */
int frond__fail(frond_error *err, int code, const char *fmt, ...)
    FROND__PRINTF(3, 4);
int frond__vfail(frond_error *err, int code, const char *fmt, va_list ap);

/* Monotonic clock in nanoseconds, for deadlines and measurements. */
int64_t frond__mono_ns(void);
/* A random nonzero 64-bit key (getrandom; the clock and pid where that
** fails): unique per process, not a secret (base/fork.c). */
uint64_t frond__random_key(void);

/* A condition variable whose timed waits use the monotonic clock, so that
** a wall-clock step neither shortens nor stretches a wait. */
void frond__cond_init(pthread_cond_t *cv);
/* Wait on cv (mu held) until signalled or the monotonic deadline, in ns as
** frond__mono_ns counts. Returns pthread_cond_timedwait's result. */
int frond__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                           int64_t deadline_ns);
/* Sleep for ns nanoseconds (restarting after signals). */
void frond__sleep_ns(int64_t ns);

/* Format unix ms as RFC 3339 UTC with milliseconds
** ("2024-01-01T00:00:00.000Z") into buf (>= 32 bytes). */
void frond__format_rfc3339(int64_t unix_ms, char *buf, size_t len);

/* Parse a decimal int64 (optional leading '-', no spaces, no overflow) of
** exactly len bytes. Returns 0 or -1. */
int frond__parse_i64(const char *s, size_t len, int64_t *out);

/* a / b rounded towards minus infinity (b != 0): the day or second a
** time before the epoch falls in. */
static inline int64_t frond__floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The value of a hexadecimal digit of either case, -1 for any other
** character (a negative char included). */
static inline int frond__hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* The longest decimal text of a 64-bit integer ("-9223372036854775808"). */
#define FROND__DEC_MAX 20

/* Write v in decimal at dst (room for FROND__DEC_MAX bytes), without a
** NUL; return the length. The one integer formatter: the hot paths (HTTP
** and RESP answers, `frond next`) print IDs with it rather than printf. */
size_t frond__dec_u64(char *dst, uint64_t v);
size_t frond__dec_i64(char *dst, int64_t v);

/* FNV-1a, 64 bits: hashing for tables and checksums of our own files,
** where no adversary chooses the input. */
uint64_t frond__fnv1a64(const void *p, size_t n);

/* A number never returned before in this process (from 1; never 0): what
** tells objects apart where an address cannot, as a freed object's
** address may be reused by the next one made. Thread-safe, lock-free. */
uint64_t frond__serial(void);

/* An event's own field in a log line: a string (str != NULL) or a number.
** Keys are [a-z0-9_]. */
typedef struct frond__log_field {
  const char *key;
  const char *str;
  int64_t num;
} frond__log_field;

/* Log with fields of this event (a request's method, path, status): JSON
** lines carry them as members, text lines as key=value after the message.
** Thread-safe. */
void frond__log_fields(int level, const frond__log_field *fields, size_t n,
                       const char *fmt, ...) FROND__PRINTF(4, 5);

/* Set (or replace) a field every JSON line carries from now on, such as
** the node ID: a string, or with str NULL the number num. At most 8; keys
** are [a-z0-9_], up to 31 bytes, not time, level or msg; strings up to
** 127 bytes. Returns 0 or FROND_EINVAL. Thread-safe. */
int frond__log_set_field(const char *key, const char *str, int64_t num);
/* Forget every field set with frond__log_set_field. Thread-safe. */
void frond__log_clear_fields(void);

/* 1 when stderr is the journal's stream: JOURNAL_STREAM is "<dev>:<ino>"
** and those are stderr's. */
int frond__log_journal_detect(void);

#endif /* FROND_BASE_H */
