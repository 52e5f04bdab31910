/*
** sd_notify.h -- telling systemd how the service is doing, without
** libsystemd: the sd_notify(3) datagram protocol and the watchdog's
** environment.
**
** A unit with Type=notify gets NOTIFY_SOCKET, a unix datagram socket
** (a path, or "@name" in the abstract namespace); the service sends it
** newline-separated assignments: READY=1 once it serves, STATUS=<text>
** for `systemctl status`, STOPPING=1 when it begins to stop, WATCHDOG=1
** at least every WATCHDOG_USEC/2 when the unit sets WatchdogSec=.
*/
#ifndef FROND_BASE_SD_NOTIFY_H
#define FROND_BASE_SD_NOTIFY_H

#include <stdint.h>

/* Send state ("READY=1\nSTATUS=listening") to NOTIFY_SOCKET in one
** datagram. Returns 1 when sent, 0 when NOTIFY_SOCKET is not set (not
** under systemd, or not Type=notify: nothing to do), or a negative errno
** when it is set but the message could not be sent (a bad address, a
** socket that is gone). Thread-safe: every call uses a socket of its
** own. Never blocks. */
int frond__sd_notify(const char *state);

/* frond__sd_notify with a printf format. Messages over 4 KiB are cut. */
int frond__sd_notifyf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The watchdog period systemd expects from this process, in microseconds:
** WATCHDOG_USEC when it is a positive integer and WATCHDOG_PID is unset or
** names this process; else 0 (no watchdog). Send WATCHDOG=1 at least
** every half of it. */
int64_t frond__sd_watchdog_usec(void);

#endif /* FROND_BASE_SD_NOTIFY_H */
