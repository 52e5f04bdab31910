/*
** internal.h -- helpers shared by libfrond's sources; not part of the API.
**
** Internal non-static names carry the frond__ prefix. The shared library
** hides them (-fvisibility=hidden); the frond command and the tests link the
** static library and may use them.
*/
#ifndef FROND_INTERNAL_H
#define FROND_INTERNAL_H

#include "frond.h"

#include <pthread.h>
#include <stdarg.h>

#if defined(__GNUC__)
#define FROND__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define FROND__LIKELY(x) __builtin_expect(!!(x), 1)
#define FROND__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define FROND__PRINTF(f, a)
#define FROND__LIKELY(x) (x)
#define FROND__UNLIKELY(x) (x)
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

/* Read up to n bytes from fd into buf, restarting after signals; stops at
** the end of the file or an error. Returns the bytes read. */
size_t frond__read_full(int fd, void *buf, size_t n);

/* FNV-1a, 64 bits: hashing for tables and checksums of our own files,
** where no adversary chooses the input. */
uint64_t frond__fnv1a64(const void *p, size_t n);

/* Test hook: make a generator follow its (possibly fake) clock now rather
** than at its next tick. Thread-safe. */
void frond__gen_tick(frond_gen *g);

#endif /* FROND_INTERNAL_H */
