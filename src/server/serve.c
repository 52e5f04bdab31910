/* SPDX-License-Identifier: Apache-2.0 */
/*
** serve.c -- `frond serve`: start-up, signals, drain.
**
** The main thread owns start-up and shutdown. It runs a small libuv loop
** of its own for the signals and a one-second tick (rates, readiness);
** the workers run the connections. On SIGTERM or SIGINT: /readyz turns
** false, every worker stops accepting and finishes what is in flight
** (bounded by drain_timeout_ms; work off the loop is always waited for),
** then the generator is closed, which stores the exact high-water time,
** and the process exits 0. A second signal cuts the drain short; the rest
** of the stop is the same.
**
** The configuration is checked by its table (config.c) as it is read, and
** by each protocol's configure hook at start-up; nothing here checks a
** value by hand.
*/
#include "server/serve.h"
#include "server/node.h"
#include "coord/coord.h"

#include "base/base.h"
#include "core/core.h"
#include "core/high_water.h"
#include "store/db.h"
#include "store/store.h"
#include "server/quota.h"
#include "server/server.h"
#include "server/tls.h"
#include "server/acl.h"
#include "server/ready.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Take a node ID and create the generator on it, as `frond next` does with
** the same settings (node.c): from the coordinator the configuration
** names (by default a lease in the store's database), above the fence of
** every earlier holder of that ID and above the data directory's
** high-water file of a static node ID. */
static int start_generator(frond__server *srv, frond_error *err) {
  frond__node_claim_opts o;
  int unchecked = 0;
  memset(&o, 0, sizeof o);
  o.unchecked = &unchecked;
  o.uri = srv->coord_uri;
  o.host = srv->listen_host;
  o.port = srv->listen_port;
  o.files = 1;
  o.serving = 1;
  if (frond__node_claim(&srv->cfg, &o, &srv->layout, &srv->coord, &srv->gen,
                        err) != 0)
    return -1;
  atomic_store(&srv->coord_unchecked, unchecked);
  srv->node = frond_gen_node(srv->gen);
  return 0;
}

/* The coordinator checked against the store's record on libuv's pool
** while unchecked (node_coord.c). A mismatch found now is said and keeps
** snowflake IDs refused: the server already runs, and segment IDs do not
** depend on it. Main thread: coord_check_busy. */
static uv_work_t coord_work;
static int coord_work_rc;
static frond_error coord_work_err;

static void coord_check_run(uv_work_t *w) {
  frond__server *srv = w->data;
  coord_work_err.code = 0;
  coord_work_rc = frond__node_coord_check(srv->cfg.store, srv->coord, srv->gen,
                                          &coord_work_err);
}

static void coord_check_done(uv_work_t *w, int status) {
  frond__server *srv = w->data;
  static int said;
  (void)status;
  srv->coord_check_busy = 0;
  if (coord_work_rc == 0) {
    atomic_store(&srv->coord_unchecked, 0);
    frond_log(FROND_LOG_INFO, "coordinator checked against the store's "
                              "record: snowflake IDs available");
    return;
  }
  /* What calls fail with: STORE or COORD while not reached, the refusal
  ** once refused. Each code said once, however long it lasts (one try a
  ** second). */
  atomic_store(&srv->coord_unchecked, coord_work_rc);
  if (said != coord_work_rc)
    frond_log(FROND_LOG_ERROR, "coordinator not checked (retrying): %s: %s",
              frond_err_name(coord_work_rc), coord_work_err.message);
  said = coord_work_rc;
}

static void coord_check_tick(frond__server *srv) {
  if (!atomic_load(&srv->coord_unchecked) || srv->coord_check_busy)
    return;
  coord_work.data = srv;
  if (uv_queue_work(uv_default_loop(), &coord_work, coord_check_run,
                    coord_check_done) == 0)
    srv->coord_check_busy = 1;
}

int frond__serve_coord_options(frond__server *srv, frond_coord_options *co,
                               char *buf, size_t len, frond_error *err) {
  return frond__node_coord_options(&srv->cfg, srv->listen_host,
                                   srv->listen_port, co, buf, len, err) != 0
             ? -1
             : 0;
}

/* SIGTERM or SIGINT before the loop runs (libuv's handler would only
** queue it for a loop not running yet): a start waiting for an earlier
** holder of the node ID (up to its session or lease after a crash) gives
** up at once, and a signal that came during any other step of the start
** begins the drain as soon as the loop is there. A second one takes the
** default action: a start stuck on a step no signal ends (a coordinator
** that does not answer) is ended as a crash would, having issued nothing
** and with its fence out. */
static volatile sig_atomic_t early_signal;

static void on_early_signal(int signum) {
  if (early_signal != 0) {
    signal(signum, SIG_DFL);
    raise(signum);
    return;
  }
  early_signal = signum;
  atomic_store(&frond__start_interrupted, 1);
}

static frond__server *the_srv;
static uv_signal_t sig_term, sig_int, sig_hup;
static uv_async_t loop_ended;
static uv_timer_t tick, watchdog;
#ifdef FROND_TEST_HOOKS
static uv_signal_t sig_wedge;
#endif

/* Open the segment allocator and publish it to the workers. */
static int open_seg(frond__server *srv, frond_error *err) {
  frond_seg_options o;
  frond_coord_options co;
  frond_seg *seg;
  char buf[300], ip[64];
  int r;
  /* The address other nodes forward this node's ordered tags to: the
  ** identity the coordinator knows it by (advertise, else the HTTP
  ** address; on a wildcard, the host's first address). */
  memset(&co, 0, sizeof(co));
  if (frond__serve_coord_options(srv, &co, buf, sizeof(buf), err) != 0)
    return -1;
  if (co.advertise != NULL) {
    snprintf(srv->owner_addr, sizeof(srv->owner_addr), "%s", co.advertise);
  } else {
    frond__coord_default_ip(ip, sizeof(ip));
    snprintf(srv->owner_addr, sizeof(srv->owner_addr), "%s:%d", ip,
             srv->listen_port);
  }
  frond__ids_seg_options(srv, &o);
  r = frond_seg_open(&seg, srv->cfg.store, &o, err);
  if (r == 0)
    atomic_store(&srv->seg, seg);
  return r;
}

/* Every half watchdog period: feed it if every loop is alive. */
static void on_watchdog(uv_timer_t *t) {
  frond__watchdog_check(t->data, uv_now(t->loop));
}

/* Each kind's readiness, logged when its reason changes; srv->ready and
** systemd's status follow every configured kind (ready.c). Main thread. */
static void readiness(frond__server *srv) {
  static frond__ready_reason was[FROND__KINDS] = {FROND__READY_OK,
                                                  FROND__READY_OK};
  frond__ready_facts f;
  frond__ready_reason r[FROND__KINDS];
  char line[400], status[300];
  int k, ready;
  frond__ready_facts_get(srv, &f);
  frond__ready_eval(&f, r);
  for (k = 0; k < FROND__KINDS; k++) {
    if (r[k] == was[k])
      continue;
    frond__ready_describe(&f, k, r[k], line, sizeof line);
    if (r[k] == FROND__READY_OK)
      frond_log(FROND_LOG_INFO, "%s IDs: ready", frond__ready_kind_name(k));
    else if (r[k] != FROND__READY_NO_STORE)
      frond_log(FROND_LOG_WARN, "%s IDs: %s", frond__ready_kind_name(k), line);
    was[k] = r[k];
  }
  ready = frond__ready_all(r);
  if (atomic_exchange(&srv->ready, ready) != ready) {
    frond__ready_summary(&f, r, status, sizeof status);
    if (ready)
      frond_log(FROND_LOG_INFO, "ready: yes");
    else
      frond_log(FROND_LOG_WARN, "ready: no (%s)",
                strncmp(status, "not ready: ", 11) == 0 ? status + 11 : status);
    frond__notify_status(srv, status);
  }
}

/* Once a second: retry an unreached store (every few seconds), update
** readiness, sample rates. */
static void on_tick(uv_timer_t *t) {
  frond__server *srv = t->data;
  frond_seg *seg = srv->seg;
  static unsigned ticks;
  frond__formats_tick(srv);
  frond__store_id_tick(srv);
  coord_check_tick(srv);
  if (srv->seg_enabled && seg == NULL && ++ticks % 3 == 0) {
    frond_error err = {0, ""};
    /* Retried whatever the failure: the server runs already, and a
    ** database made or a password fixed meanwhile is taken up. */
    if (open_seg(srv, &err) == 0) {
      atomic_store(&srv->store_refusing, 0);
      frond_log(FROND_LOG_INFO, "store reached: segment IDs available");
    } else if (frond__db_transient(err.code)) {
      atomic_store(&srv->store_refusing, 0);
      frond_log(FROND_LOG_WARN, "store still not reached: %s", err.message);
    } else {
      atomic_store(&srv->store_refusing, err.code);
      frond_log(FROND_LOG_ERROR,
                "store refuses: %s: %s (fix the store or the configuration; "
                "retrying)",
                frond_err_name(err.code), err.message);
    }
  }
  readiness(srv);
  frond__rates_sample(srv, 1.0);
}

/* The first SIGTERM or SIGINT starts the drain. A second one ends it at
** once: what is still in flight on the loops is cut, and the stop goes on
** as after any drain (the high-water time stored, the node ID given up,
** exit 0). The signals stay handled until every loop has ended, so that a
** repeated signal never falls back to the default action, which would end
** the process without storing anything. */
static void on_signal(uv_signal_t *s, int signum) {
  frond__server *srv = s->data;
  const char *name = signum == SIGTERM ? "SIGTERM" : "SIGINT";
  int i, was = atomic_load(&srv->draining);
  if (was > 1)
    return;
  atomic_store(&srv->draining, was + 1);
  for (i = 0; i < srv->nworkers; i++)
    frond__worker_wake(&srv->workers[i]);
  if (was == 1) {
    frond_log(FROND_LOG_WARN, "%s again: ending the drain now", name);
    frond__notify_status(srv, "ending the drain now");
    return;
  }
  frond_log(FROND_LOG_INFO, "%s: draining (at most %lld ms)", name,
            (long long)srv->cfg.drain_timeout_ms);
  frond__notify_stopping(srv, "draining");
  uv_close((uv_handle_t *)&tick, NULL);
  /* systemd stops watching once the unit is stopping. */
  if (srv->watchdog_ms > 0)
    uv_close((uv_handle_t *)&watchdog, NULL);
#ifdef FROND_TEST_HOOKS
  if (uv_is_active((uv_handle_t *)&sig_wedge))
    uv_close((uv_handle_t *)&sig_wedge, NULL);
#endif
}

/* A worker's loop has ended; after the last one, the main loop ends too.
** From then on the last steps (the high-water time, the coordinator) run
** to the end: a signal no longer interrupts them, SIGKILL does. */
static void on_loop_ended(uv_async_t *a) {
  frond__server *srv = a->data;
  pthread_mutex_lock(&srv->end_lock);
  if (srv->loops_ended == srv->nworkers) {
    uv_close((uv_handle_t *)&sig_term, NULL);
    uv_close((uv_handle_t *)&sig_int, NULL);
    uv_close((uv_handle_t *)&sig_hup, NULL);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    frond__acl_stop();
    uv_close((uv_handle_t *)a, NULL);
  }
  pthread_mutex_unlock(&srv->end_lock);
}

#ifdef FROND_TEST_HOOKS
/* Test builds only (FROND_TESTS): with FROND_TEST_WEDGE_MS=N in the
** environment, SIGUSR2 blocks the first worker's loop for N ms, as a bug
** stuck in a callback would (test_notify.py). A release has no hook. */
static void on_wedge(uv_signal_t *s, int signum) {
  frond__server *srv = s->data;
  const char *ms = getenv("FROND_TEST_WEDGE_MS");
  atomic_store(&srv->workers[0].test_wedge_ms, ms ? atoi(ms) : 0);
  frond__worker_wake(&srv->workers[0]);
}
#endif

/* Each protocol checks its part of the configuration and says where it
** listens, on a plain port and over TLS. */
static int configure_protocols(frond__server *srv, frond_error *err) {
  int i, r, tls = 0;
  for (i = 0; i < FROND__MAX_LISTENERS; i++) {
    frond__endpoint *ep = &srv->ep[i];
    if (i % FROND__MAX_PROTOS >= srv->nprotos)
      continue;
    ep->tls = i >= FROND__MAX_PROTOS;
    if ((r = srv->protos[i % FROND__MAX_PROTOS]->configure(srv, ep, err)) < 0)
      return r;
    if (r > 0)
      ep->addr.port = 0; /* off */
    tls |= ep->tls && ep->addr.port != 0;
  }
  if (frond__tls_check(&srv->cfg, tls, err) != 0)
    return err->code;
  return frond__endpoints_check(srv->ep, FROND__MAX_LISTENERS, err);
}

/* SIGHUP: the TLS certificate, key and client CA are read again; new
** connections get them, open ones keep what they began with. A file that
** does not load keeps the old ones in use. */
static void on_hup(uv_signal_t *s, int signum) {
  frond__server *srv = s->data;
  frond_error err = {0, ""};
  char why[FROND__CFG_STR_MAX + 200];
  (void)signum;
  if (srv->tls == NULL) {
    frond_log(FROND_LOG_INFO, "SIGHUP: no TLS listener, nothing to reload");
    return;
  }
  if (frond__tls_reload(srv->tls, &err) != 0)
    frond_log(FROND_LOG_ERROR,
              "SIGHUP: TLS certificate not reloaded, the old one stays in "
              "use: %s: %s",
              frond_err_name(err.code), err.message);
  else
    frond_log(FROND_LOG_INFO, "SIGHUP: TLS certificate %s reloaded",
              srv->cfg.tls_cert);
  if (frond__tls_key_exposed(srv->cfg.tls_key, why, sizeof why))
    frond_log(FROND_LOG_WARN, "SIGHUP: %s", why);
}

/* The listening sockets of every worker: one per protocol that is on. */
static int open_listeners(frond__server *srv, frond__worker *w,
                          frond_error *err) {
  int i;
  for (i = 0; i < FROND__MAX_LISTENERS; i++) {
    frond__listener *l = &w->listeners[w->nlisteners];
    if (srv->ep[i].addr.port == 0)
      continue;
    l->proto = srv->protos[i % FROND__MAX_PROTOS];
    l->ep = &srv->ep[i];
    if ((l->state = calloc(1, l->proto->state_size)) == NULL)
      return frond__fail(err, FROND_ENOMEM, "out of memory");
    w->nlisteners++;
    if ((l->fd = frond__listen_socket(&srv->ep[i].addr, err)) < 0)
      return err->code;
  }
  return 0;
}

/* The store URI as frond_seg_open reads it before it connects. */
static int store_uri_check(const char *uri, frond_error *err) {
  frond_multi_uri m;
  if (strcmp(uri, "none") == 0)
    return 0;
  if (strncmp(uri, "multi:", 6) == 0)
    return frond__store_multi_parse(uri, &m, err);
  /* A server over other servers would be a proxy with less than they
  ** have: its ranges would come through them, but its node ID, its tag
  ** floors and its formats' key records belong to their database. */
  if (strncmp(uri, "frond://", 8) == 0)
    return frond__fail(err, FROND_ESTORE_URI,
                       "store: frond:// names other Frond servers; a server "
                       "over them would only proxy them (its node ID, tag "
                       "floors and format keys could not be kept where "
                       "theirs are): give this server the database they use, "
                       "or give frond:// to the program that wants the IDs");
  return frond__db_uri_check(uri, err);
}

int frond__serve_preflight(frond__server *srv, frond_error *err) {
  uint64_t max_node;
  if (srv->nprotos == 0) {
    srv->protos[0] = &frond__http_proto; /* first: its address is the node's */
    srv->protos[1] = &frond__resp_proto;
    srv->nprotos = 2;
  }
  /* The store first: the default coordinator is made of its URI. */
  if (configure_protocols(srv, err) != 0 ||
      store_uri_check(srv->cfg.store, err) != 0 ||
      frond__config_coord_uri(&srv->cfg, srv->coord_uri, sizeof srv->coord_uri,
                              err) != 0 ||
      frond_layout_parse(srv->cfg.layout, &srv->layout, err) != 0 ||
      frond__node_one_holder(&srv->cfg, srv->coord_uri, &srv->layout, 0, err) !=
          0)
    return -1;
  max_node = (UINT64_C(1) << srv->layout.node_bits) - 1;
  /* A node ID pinned on a lease (node = N with a store) fits the layout
  ** as a static one must. */
  if (frond__config_pinned_node(srv->coord_uri) > (int64_t)max_node) {
    frond__fail(err, FROND_ENODE_RANGE,
                "node %lld is out of range 0..%llu for layout %s",
                (long long)frond__config_pinned_node(srv->coord_uri),
                (unsigned long long)max_node, srv->cfg.layout);
    return -1;
  }
  if (frond__coord_uri_check(srv->coord_uri, max_node, err) != 0 ||
      (strcmp(srv->cfg.advertise, "auto") != 0 && srv->cfg.advertise[0] &&
       frond__coord_check_advertise(srv->cfg.advertise, err) != 0) ||
      frond__formats_create(srv, err) != 0 ||
      frond__quota_create(srv, err) != 0 || frond__acl_open(srv, err) != 0)
    return -1;
  /* The coordinator records the HTTP address for this node. */
  snprintf(srv->listen_host, sizeof srv->listen_host, "%s",
           srv->ep[0].addr.host);
  srv->listen_port = srv->ep[0].addr.port;
  return 0;
}

static int start(frond__server *srv, int *code) {
  frond_error err = {0, ""};
  char shown[1100];
  int64_t wait_ms;
  int i, r;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  if (frond__serve_preflight(srv, &err) != 0)
    goto fail;
  srv->nworkers = srv->cfg.threads > 0 ? (int)srv->cfg.threads
                                       : (int)(cores > 0 ? cores : 1);
  srv->start_ms = frond_clock_realtime(NULL);
  srv->start_mono_ns = frond__mono_ns();
  srv->watchdog_ms = frond__watchdog_ms();
  /* A call may wait on its loop for the clock (or the fence) up to
  ** max_wait_ms: long enough, and the watchdog would take a slow clock
  ** for a stuck loop. */
  wait_ms = srv->cfg.max_wait_ms >= 0      ? srv->cfg.max_wait_ms
            : 2 * srv->layout.unit_ms > 10 ? 2 * srv->layout.unit_ms
                                           : 10;
  if (srv->watchdog_ms > 0 && (uint64_t)wait_ms * 4 > srv->watchdog_ms)
    frond_log(FROND_LOG_WARN,
              "max_wait_ms %lld is more than a quarter of the watchdog "
              "period (WatchdogSec=%llu ms): calls waiting for the clock may "
              "get the service restarted; raise WatchdogSec",
              (long long)wait_ms, (unsigned long long)srv->watchdog_ms);

  if (start_generator(srv, &err) != 0)
    goto fail;
  /* From here on every JSON log line names the node and its layout. */
  frond__log_set_field("node", NULL, (int64_t)srv->node);
  if (strcmp(srv->layout.name, "custom") == 0) {
    char spec[160];
    frond_layout_format(&srv->layout, spec, sizeof spec);
    frond__log_set_field("layout", spec, 0);
  } else {
    frond__log_set_field("layout", srv->layout.name, 0);
  }
  (void)frond__layout_warn_end(&srv->layout, frond_clock_realtime(NULL));
  /* A store that cannot be reached does not stop the start: snowflake IDs
  ** do not need it, and it is retried until it answers (not ready until
  ** then). A store that can never work as configured does: a URI it
  ** cannot take, or what the database said for good (no such database,
  ** user or directory, a wrong password: STORE_PERMANENT). */
  srv->seg_enabled = strcmp(srv->cfg.store, "none") != 0;
  if (srv->seg_enabled && open_seg(srv, &err) != 0) {
    if (!frond__db_transient(err.code))
      goto fail;
    frond_log(FROND_LOG_WARN, "store not reached, retrying: %s", err.message);
    err.code = 0;
  }
  if (srv->seg != NULL)
    (void)frond__store_id_read(srv); /* else, or failing: each tick */
  if (frond__formats_check(srv, &err) != 0)
    goto fail;

  for (i = 0; i < FROND__MAX_LISTENERS; i++)
    if (srv->ep[i].addr.port != 0 &&
        frond__listen_probe(&srv->ep[i].addr, &err) != 0)
      goto fail;
  /* The certificate before the first worker, so that a bad one stops the
  ** start with the file named. */
  if ((srv->ep[FROND__MAX_PROTOS].addr.port != 0 ||
       srv->ep[FROND__MAX_PROTOS + 1].addr.port != 0) &&
      frond__tls_open(&srv->tls, &srv->cfg, &err) != 0)
    goto fail;
  if (srv->tls != NULL) {
    char why[FROND__CFG_STR_MAX + 200];
    if (frond__tls_key_exposed(srv->cfg.tls_key, why, sizeof why))
      frond_log(FROND_LOG_WARN, "%s", why);
  }
  /* Before the first listener: a SIGHUP that comes once the port answers
  ** finds the audit log's handler (logrotate during a restart). */
  if (frond__audit_open(srv, uv_default_loop(), &err) != 0)
    goto fail;
  srv->workers = calloc((size_t)srv->nworkers, sizeof *srv->workers);
  if (srv->workers == NULL) {
    frond__fail(&err, FROND_ENOMEM, "out of memory");
    goto fail;
  }
  for (i = 0; i < srv->nworkers; i++) {
    frond__worker *w = &srv->workers[i];
    w->id = i;
    w->srv = srv;
    w->ids = malloc((size_t)srv->cfg.max_count * sizeof(int64_t));
    if (w->ids == NULL || frond__formats_worker_init(w) != 0) {
      frond__fail(&err, FROND_ENOMEM, "out of memory for max_count IDs");
      goto fail;
    }
    if (open_listeners(srv, w, &err) != 0)
      goto fail;
  }
  {
    frond__ready_facts f;
    frond__ready_reason why[FROND__KINDS];
    frond__ready_facts_get(srv, &f);
    frond__ready_eval(&f, why);
    atomic_store(&srv->ready, frond__ready_all(why));
  }
  for (i = 0; i < srv->nworkers; i++) {
    if ((r = frond__worker_start(&srv->workers[i])) != 0) {
      frond__fail(&err, FROND_EIO, "worker %d: %s", i, uv_strerror(r));
      goto fail;
    }
  }
  frond__node_store_shown(srv->cfg.store, shown, sizeof(shown));
  frond_log(
      FROND_LOG_INFO,
      "listening on %s (http), %s (resp), %s (https), %s (resp over TLS), "
      "node %llu, layout %s, %d threads, store %s",
      srv->cfg.listen, srv->ep[1].addr.port ? srv->cfg.resp_listen : "off",
      srv->ep[FROND__MAX_PROTOS].addr.port ? srv->cfg.tls_listen : "off",
      srv->ep[FROND__MAX_PROTOS + 1].addr.port ? srv->cfg.resp_tls_listen
                                               : "off",
      (unsigned long long)srv->node, srv->layout.name, srv->nworkers, shown);
  return 0;
fail:
  frond_log(FROND_LOG_ERROR, "cannot start: %s: %s", frond_err_name(err.code),
            err.message);
  {
    char status[sizeof err.message + 64];
    snprintf(status, sizeof status, "cannot start: %s: %s",
             frond_err_name(err.code), err.message);
    frond__notify_failed(status);
  }
  *code = err.code;
  return -1;
}

int frond__cli_serve(int argc, char **argv) {
  static frond__server srv;
  frond_error err = {0, ""};
  int action, i, j, started = 0, stopped = 0, why = 0;
  uint64_t unwritten;
  uv_loop_t *loop;

  /* argv[0] is the subcommand's name. */
  if (argc > 0) {
    argc--;
    argv++;
  }
  if (frond__config_load(&srv.cfg, argc, argv, &action, &err) != 0) {
    fprintf(stderr, "frond serve: %s: %s\n", frond_err_name(err.code),
            err.message);
    return 2;
  }
  switch (action) {
  case FROND__CFG_HELP:
    frond__config_usage(stdout);
    return 0;
  case FROND__CFG_PRINT:
    /* The configuration, then what a start would refuse in it before it
    ** reaches a store, a coordinator or a port (exit 1 then). */
    frond__config_print(&srv.cfg, stdout);
    fflush(stdout);
    frond_log_set(NULL, NULL, FROND_LOG_ERROR);
    i = frond__serve_preflight(&srv, &err);
    frond__formats_free(&srv);
    frond__quota_free(&srv);
    frond__acl_close(&srv);
    if (i != 0) {
      fprintf(stderr, "frond serve: %s: %s (a start would refuse it)\n",
              frond_err_name(err.code), err.message);
      return 1;
    }
    return 0;
  case FROND__CFG_LIST:
    frond__config_list(stdout);
    return 0;
  }
  frond_log_set(NULL, NULL, srv.cfg.log_level);
  frond_log_set_format(srv.cfg.log_format);
  signal(SIGPIPE, SIG_IGN);
  /* Large buffers (an answer of 100,000 IDs) come straight from mmap and go
  ** back to the system when freed: a connection that held one once keeps
  ** nothing of it (glibc would otherwise raise this threshold after the
  ** first large free and keep such buffers in its heap). */
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  /* Segment calls that wait for the store run on libuv's thread pool (a
  ** tag's first segment): more threads than libuv's 4, so that a few slow
  ** tags do not hold up the others. The environment still wins. */
  setenv("UV_THREADPOOL_SIZE", "16", 0);
  pthread_mutex_init(&srv.store_lock, NULL);
  pthread_mutex_init(&srv.lookup_lock, NULL);
  pthread_mutex_init(&srv.rate_lock, NULL);
  pthread_mutex_init(&srv.end_lock, NULL);
  the_srv = &srv;

  loop = uv_default_loop();
  uv_signal_init(loop, &sig_term);
  uv_signal_init(loop, &sig_int);
  sig_term.data = sig_int.data = &srv;
  {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_early_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
  }
  /* SIGHUP reloads (on_hup) rather than ending the process. */
  uv_signal_init(loop, &sig_hup);
  sig_hup.data = &srv;
  uv_signal_start(&sig_hup, on_hup, SIGHUP);
  uv_async_init(loop, &loop_ended, on_loop_ended);
  loop_ended.data = &srv;
  srv.loop_ended = &loop_ended;

  /* The clients file's SIGHUP, before the ports answer (as the audit
  ** log's, in start). */
  frond__acl_start(&srv, loop);
  if (start(&srv, &why) == 0) {
    started = 1;
    uv_timer_init(loop, &tick);
    tick.data = &srv;
    uv_timer_start(&tick, on_tick, 1000, 1000);
    if (srv.watchdog_ms > 0) {
      uv_timer_init(loop, &watchdog);
      watchdog.data = &srv;
      uv_timer_start(&watchdog, on_watchdog, srv.watchdog_ms / 2,
                     srv.watchdog_ms / 2);
    }
#ifdef FROND_TEST_HOOKS
    if (getenv("FROND_TEST_WEDGE_MS") != NULL) {
      uv_signal_init(loop, &sig_wedge);
      sig_wedge.data = &srv;
      uv_signal_start(&sig_wedge, on_wedge, SIGUSR2);
    }
#endif
    /* Listening, node ID held: the unit is started. */
    {
      char status[300];
      frond__ready_facts f;
      frond__ready_reason r[FROND__KINDS];
      frond__ready_facts_get(&srv, &f);
      frond__ready_eval(&f, r);
      frond__ready_summary(&f, r, status, sizeof status);
      frond__notify_ready(&srv, status);
    }
    /* libuv's handlers from here on, every handle on_signal closes being
    ** there; a signal that came during the start begins the drain now. */
    uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_signal_start(&sig_int, on_signal, SIGINT);
    if (early_signal != 0)
      on_signal(early_signal == SIGINT ? &sig_int : &sig_term, early_signal);
    uv_run(loop, UV_RUN_DEFAULT);
  } else {
    /* The start has ended: a signal from here on takes its default
    ** action (a second SIGTERM ends a stop stuck on the coordinator). */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    /* The signal stopped the start only if a wait gave up for it;
    ** another failure is a failure, signal or not. */
    stopped = early_signal != 0 && why == FROND_ECLOSED;
    if (stopped)
      frond_log(FROND_LOG_INFO, "%s while starting: stopped",
                early_signal == SIGINT ? "SIGINT" : "SIGTERM");
    uv_close((uv_handle_t *)&sig_term, NULL);
    uv_close((uv_handle_t *)&sig_int, NULL);
    uv_close((uv_handle_t *)&sig_hup, NULL);
    uv_close((uv_handle_t *)&loop_ended, NULL);
    frond__acl_stop();
    uv_run(loop, UV_RUN_DEFAULT);
  }
  for (i = 0; started && i < srv.nworkers; i++)
    frond__worker_join(&srv.workers[i]);
  unwritten = frond__audit_close(&srv, loop);
  uv_loop_close(loop);
  if (srv.store_conn != NULL)
    frond_store_close(srv.store_conn);
  frond_seg_close(atomic_load(&srv.seg));
  frond__forward_free();
  /* The coordinator owns the generator: it stores the exact high-water
  ** time as the final fence, gives the node ID up and closes it. */
  if (srv.coord != NULL && frond_coord_close(srv.coord, &err) != 0)
    frond_log(FROND_LOG_ERROR, "stopping the node: %s", err.message);
  else if (srv.gen != NULL)
    frond_log(FROND_LOG_INFO, "stopped; high-water time stored");
  for (i = 0; srv.workers != NULL && i < srv.nworkers; i++) {
    for (j = 0; j < srv.workers[i].nlisteners; j++)
      free(srv.workers[i].listeners[j].state);
    frond__buf_free(&srv.workers[i].scratch);
    free(srv.workers[i].ids);
    frond__formats_worker_free(&srv.workers[i]);
  }
  frond__formats_free(&srv);
  frond__tls_close(srv.tls);
  frond__quota_free(&srv);
  frond__acl_close(&srv);
  free(srv.workers);
  /* IDs went out whose records are only on stderr: not a clean stop. */
  if (unwritten > 0)
    frond_log(FROND_LOG_ERROR,
              "stopped with %llu audit records not in the audit log "
              "(on stderr); exit status 1",
              (unsigned long long)unwritten);
  /* Stopped by a signal before it started: the stop asked for, exit 0. */
  return (started || stopped) && unwritten == 0 ? 0 : 1;
}
