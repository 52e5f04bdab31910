/* SPDX-License-Identifier: Apache-2.0 */
/*
** notify.c -- telling systemd how the server is doing: sd_notify(3) from
** libsystemd, linked into the server only (never into libfrond).
**
** Under a unit with Type=notify the main thread sends READY=1 once the
** ports listen and the node ID is held, STATUS= lines that `systemctl
** status` shows (the node, the layout, readiness), and STOPPING=1 when a
** signal starts the drain. Without NOTIFY_SOCKET every call is a no-op.
**
** The watchdog (WatchdogSec= in the unit) is fed from the main loop only
** when every event loop is alive: each worker bumps a heartbeat from a
** timer of its own loop (conn.c), and every half watchdog period the main
** thread sends WATCHDOG=1 only if every worker's heartbeat has moved since
** the last check. A loop wedged in a callback stops the pings and systemd
** restarts the service (SIGABRT, then Restart=on-failure); the main loop
** being alive is not enough.
*/
#include "server/server.h"

#include "base/base.h"

#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

/* "node 7, layout frond", the start of every STATUS line. */
static void who(frond__server *srv, char *buf, size_t cap) {
  snprintf(buf, cap, "node %llu, layout %s", (unsigned long long)srv->node,
           srv->layout.name);
}

static void notify(const char *what, const char *state) {
  int r = sd_notify(0, state);
  if (r < 0)
    frond_log(FROND_LOG_WARN, "systemd notify socket: %s not sent: %s", what,
              strerror(-r));
}

void frond__notify_ready(frond__server *srv, const char *status) {
  char w[320], msg[512];
  who(srv, w, sizeof w);
  snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s: %s", w, status);
  notify("READY=1", msg);
}

void frond__notify_status(frond__server *srv, const char *status) {
  char w[320], msg[512];
  who(srv, w, sizeof w);
  snprintf(msg, sizeof msg, "STATUS=%s: %s", w, status);
  notify("STATUS", msg);
}

void frond__notify_stopping(frond__server *srv, const char *status) {
  char w[320], msg[512];
  who(srv, w, sizeof w);
  snprintf(msg, sizeof msg, "STOPPING=1\nSTATUS=%s: %s", w, status);
  notify("STOPPING=1", msg);
}

void frond__notify_failed(const char *status) {
  char msg[1200];
  snprintf(msg, sizeof msg, "STATUS=%s", status);
  notify("STATUS", msg);
}

uint64_t frond__watchdog_ms(void) {
  uint64_t usec = 0;
  /* > 0 when WATCHDOG_USEC is set and WATCHDOG_PID, if set, is ours. */
  if (sd_watchdog_enabled(0, &usec) <= 0)
    return 0;
  return usec / 1000 > 0 ? usec / 1000 : 1;
}

void frond__watchdog_check(frond__server *srv, uint64_t now_ms) {
  int i, alive = 1;
  for (i = 0; i < srv->nworkers; i++) {
    frond__worker *w = &srv->workers[i];
    uint64_t beats = atomic_load(&w->beats);
    if (beats != w->beats_seen) {
      if (w->stalled_ms != 0)
        frond_log(FROND_LOG_INFO,
                  "event loop %d runs again after %llu ms; watchdog fed", i,
                  (unsigned long long)(now_ms - w->stalled_ms));
      w->beats_seen = beats;
      w->stalled_ms = 0;
      continue;
    }
    alive = 0;
    if (w->stalled_ms == 0) {
      w->stalled_ms = now_ms - srv->watchdog_ms / 2;
      frond_log(FROND_LOG_WARN,
                "event loop %d has not run for %llu ms: watchdog not fed "
                "(systemd restarts the service after %llu ms)",
                i, (unsigned long long)(srv->watchdog_ms / 2),
                (unsigned long long)srv->watchdog_ms);
    }
  }
  if (alive)
    notify("WATCHDOG=1", "WATCHDOG=1");
}
