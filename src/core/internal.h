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

/* A layout with less than this left gets a warning at start: a year, time
** to choose and roll out another before IDs stop. */
#define FROND__LAYOUT_WARN_MS (INT64_C(365) * 86400000)
/* Log a warning when l has less than FROND__LAYOUT_WARN_MS left at now_ms,
** naming the end, the days left and what to do. Returns 1 when it logged,
** else 0 (also once the layout has run out: frond_gen_create refuses it
** then, with TIME_EXHAUSTED). Call it at start. */
int frond__layout_warn_end(const frond_layout *l, int64_t now_ms);

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

/* ---- the segment allocator for event loops ----
** frond_seg_tag_next_n and frond_seg_tag_range that never wait: where they
** would wait for the loaders (a tag's first segment, both buffers used
** up, a range larger than what is buffered) they ask for the load and
** return FROND__AGAIN, having handed out nothing; the caller then makes
** the blocking call off its loop. Errors otherwise as the blocking
** calls. */
#define FROND__AGAIN 1
int frond__seg_tag_next_nowait(frond_seg_tag *t, size_t n, int64_t *out,
                               frond_error *err);
int frond__seg_tag_range_nowait(frond_seg_tag *t, int64_t n, int64_t *start,
                                frond_error *err);

/* Test hook: make a generator follow its (possibly fake) clock now rather
** than at its next tick. Thread-safe. */
void frond__gen_tick(frond_gen *g);

/* ---- the snowflake generator under a coordinator ------------------------
**
** The fence rule: a node never issues an ID whose unit lies above a fence
** already durable where any later holder of its node ID will read it. A
** fence F (unix ms) allows the units u with ms_of(u) <= F; a successor
** starts at the unit after F's. The coordinator makes a fence durable
** BEFORE it hands it to the generator, and moves it ahead in the background
** (frond__gen_fence_target) so that the hot path never waits for it. A
** generator's limit is min(wall + max_ahead, local reservation, coordinator
** fence, layout end).
*/

/* What a coordinator adds to a generator's creation. */
typedef struct frond__gen_fence {
  int64_t start_after_ms;  /* start above the unit of this unix ms: the
                              fence of every earlier holder; 0: none */
  int64_t fence_ms;        /* initial coordinator fence, unix ms, already
                              durable at the coordinator: no ID whose unit
                              starts after it; INT64_MAX: no coordinator
                              fence */
  int64_t window_ms;       /* how far ahead the coordinator extends its fence
                              (enters the start slack rule) */
  void (*want)(void *ctx); /* called without the generator's lock when a
                              caller waits at the fence: extend it now. May
                              be NULL. */
  void *ctx;
} frond__gen_fence;

/* frond_gen_create with a coordinator's part; f NULL: none (exactly
** frond_gen_create). The start waits or refuses by the start slack with
** window max(opts->window_ms, f->window_ms). Errors as frond_gen_create;
** INVAL also for f->window_ms outside 0..86400000. */
int frond__gen_create_fenced(frond_gen **out, const frond_layout *l,
                             uint64_t node, const frond_gen_options *opts,
                             const frond__gen_fence *f, frond_error *err);
/* Raise the coordinator fence (never lowers it); republish the limit; wake
** waiters. Thread-safe; takes the generator's lock briefly. */
void frond__gen_set_fence(frond_gen *g, int64_t fence_ms);
/* Make every call fail with code (e.g. FROND_ENODE_ID_LOST) without
** consuming anything; waiting calls fail at once. code must be negative
** (0 is resume's job). A call already past its limit check when the block
** lands may still complete: it issues below the fence, which is what a
** successor starts above. Thread-safe. */
void frond__gen_block(frond_gen *g, int code);
/* Under the generator's lock, before any call can issue again: raise the
** logical clock above the unit of after_ms (0: no raise), raise the fence
** to fence_ms, then unblock. A call that starts after this returns issues
** above after_ms's unit; one that would be more than max_ahead in front of
** the wall clock waits up to max_wait, then fails CLOCK_BEHIND. Does not
** wait itself. Thread-safe. */
void frond__gen_resume(frond_gen *g, int64_t after_ms, int64_t fence_ms);
/* The fence a coordinator should make durable now: now_ms + max_ahead +
** window_ms, capped at the layout's last unit, in unix ms. Pure. */
int64_t frond__gen_fence_target(const frond_gen *g, int64_t now_ms,
                                int64_t window_ms);
/* Current coordinator fence (unix ms; INT64_MAX: none) and the block code
** (0 when issuing). Thread-safe, lock-free. (The fence's getter is
** frond__gen_fence_ms: C gives the type frond__gen_fence that name.) */
int64_t frond__gen_fence_ms(const frond_gen *g);
int frond__gen_blocked(const frond_gen *g);
/* 1 while the generator's clock thread sleeps (no call for sleep_ms): its
** reservation and fence need no extension until a call wakes it. */
int frond__gen_asleep(const frond_gen *g);
/* How far ahead of the clock a stored fence or high water may be and still
** be explained by a crash: max_ahead + window + max_wait. Beyond it a start
** refuses (the clock went back across the restart); within it, it waits
** until the clock is within max_ahead of the start. The one rule for the
** generator's start and the coordinator's. */
int64_t frond__start_slack_ms(int64_t max_ahead_ms, int64_t window_ms,
                              int64_t max_wait_ms);
/* Unix ms of the unit of the layout's last expressible time (for fences):
** a fence at or past it never limits. Pure. */
int64_t frond__layout_last_unit_ms(const frond_layout *l);

#endif /* FROND_INTERNAL_H */
