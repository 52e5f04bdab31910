/* SPDX-License-Identifier: Apache-2.0 */
/*
** frond/log.h -- what the library logs, and where it goes.
** Part of frond.h, which includes it; see the conventions there.
*/
#ifndef FROND_FROND_LOG_H
#define FROND_FROND_LOG_H

#ifndef FROND_H
#error "include <frond.h>, not <frond/log.h>"
#endif

/* ------------------------------------------------------------------------
** Logging
**
** The library logs what it cannot return to a caller (a background store
** failure, a retry, a recovery): one line per event. The default writes
** "frond: <level>: <message>" to stderr. The callback may be called from any
** thread, concurrently; it must not call back into libfrond.
*/
enum {
  FROND_LOG_ERROR = 0,
  FROND_LOG_WARN = 1,
  FROND_LOG_INFO = 2,
  FROND_LOG_DEBUG = 3
};
typedef void (*frond_log_fn)(void *ctx, int level, const char *msg);

/* Set the sink (NULL restores stderr) and the most verbose level that is
** delivered (default FROND_LOG_INFO). Not thread-safe against concurrent
** logging: call it at start. */
FROND_EXPORT void frond_log_set(frond_log_fn fn, void *ctx, int max_level);

/* Line formats of the stderr sink. */
enum { FROND_LOG_TEXT = 0, FROND_LOG_JSON = 1 };
/*
** Choose the stderr sink's format (default FROND_LOG_TEXT):
**   text  frond: <level>: <message>
**   json  one object a line, with the stable fields time (RFC 3339 UTC,
**         milliseconds), level, msg, then those the process set (e.g.
**         node) and the event's own: {"time":"2026-11-22T01:37:58.733Z",
**         "level":"info","msg":"listening on ...","node":7}
** Whatever the format, when stderr is the systemd journal's stream
** (JOURNAL_STREAM names it), each line starts with its syslog priority
** "<3>" (error), "<4>" (warn), "<6>" (info) or "<7>" (debug), as
** sd-daemon(3) describes, and text lines leave out "frond: <level>: ".
** A line is written with one write(2) and never holds a newline of its
** message. Returns 0, or FROND_EINVAL for another format. Call it at
** start, as frond_log_set; a sink set with frond_log_set gets the message
** only, whatever the format.
*/
FROND_EXPORT int frond_log_set_format(int format);
/* "error", "warn", "info", "debug". */
FROND_EXPORT const char *frond_log_level_name(int level);
/* Log through the configured sink, printf-style. Thread-safe. */
FROND_EXPORT void frond_log(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* FROND_FROND_LOG_H */
