/*
** serve.c -- `frond serve`: configuration, start-up, signals, drain.
**
** The main thread owns start-up and shutdown. It runs a small libuv loop
** of its own for the signals and a one-second tick (rates, readiness);
** the workers run the connections. On SIGTERM or SIGINT: /readyz turns
** false, every worker stops accepting and finishes what is in flight
** (bounded by drain_timeout_ms), then the generator is closed, which
** stores the exact high-water time, and the process exits 0.
*/
#include "server/serve.h"
#include "coord/coord.h"

#include "core/internal.h"
#include "os/highwater.h"
#include "server/http_parse.h"
#include "server/server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int frond__parse_hostport(const char *key, const char *l, char *host, int *port,
                          int *loopback, char *err, size_t len) {
  const char *colon;
  size_t hl;
  int64_t p;
  if (l[0] == '[') {
    const char *rb = strchr(l, ']');
    if (rb == NULL || rb[1] != ':')
      goto bad;
    hl = (size_t)(rb - l - 1);
    memcpy(host, l + 1, hl);
    colon = rb + 1;
  } else {
    colon = strrchr(l, ':');
    if (colon == NULL)
      goto bad;
    hl = (size_t)(colon - l);
    memcpy(host, l, hl);
  }
  host[hl] = '\0';
  if (strcmp(host, "localhost") == 0)
    strcpy(host, "127.0.0.1");
  if (frond__parse_i64(colon + 1, strlen(colon + 1), &p) != 0 || p < 1 ||
      p > 65535)
    goto bad;
  *port = (int)p;
  *loopback = strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
  return 0;
bad:
  snprintf(err, len, "%s: expected host:port or [v6]:port, not '%s'", key, l);
  return -1;
}

static int parse_listen(frond__server *srv, char *err, size_t len) {
  return frond__parse_hostport("listen", srv->cfg.listen, srv->listen_host,
                               &srv->listen_port, &srv->loopback, err, len);
}

/* The coordinator's URI: "static" alone takes the node key, "static:N"
** must agree with it; anything else is the coordinator's own URI. */
static int parse_coordinator(frond__server *srv, char *err, size_t len) {
  const char *c = srv->cfg.coordinator;
  int64_t n;
  if (strcmp(c, "static") == 0) {
    snprintf(srv->coord_uri, sizeof srv->coord_uri, "static:%lld",
             (long long)srv->cfg.node);
    return 0;
  }
  if (strncmp(c, "static:", 7) == 0) {
    if (frond__parse_i64(c + 7, strlen(c + 7), &n) != 0 || n < 0) {
      snprintf(err, len, "coordinator: bad node ID in '%s'", c);
      return -1;
    }
    if (srv->cfg.node != 0 && srv->cfg.node != n) {
      snprintf(err, len, "coordinator '%s' and node = %lld disagree", c,
               (long long)srv->cfg.node);
      return -1;
    }
  } else if (srv->cfg.node != 0) {
    snprintf(err, len,
             "node = %lld is for the static coordinator; '%s' assigns the "
             "node ID itself",
             (long long)srv->cfg.node, c);
    return -1;
  }
  snprintf(srv->coord_uri, sizeof srv->coord_uri, "%s", c);
  return 0;
}

/* The identity the coordinator knows this node by: advertise when set,
** else the listen address (a wildcard leaves the choice to the library:
** the first non-loopback IPv4 address) and the HTTP port. */
static int identity(frond__server *srv, frond_coord_options *co, char *buf,
                    size_t len, frond_error *err) {
  int wildcard = strcmp(srv->listen_host, "0.0.0.0") == 0 ||
                 strcmp(srv->listen_host, "::") == 0 ||
                 srv->listen_host[0] == '\0';
  co->port = srv->listen_port;
  if (srv->cfg.advertise[0] && strcmp(srv->cfg.advertise, "auto") != 0) {
    if (frond__coord_check_advertise(srv->cfg.advertise, err) != 0)
      return -1;
    co->advertise = srv->cfg.advertise;
  } else if (!wildcard) {
    snprintf(buf, len, strchr(srv->listen_host, ':') ? "[%s]:%d" : "%s:%d",
             srv->listen_host, srv->listen_port);
    co->advertise = buf;
  }
  return 0;
}

/* Take a node ID from the coordinator and create the generator on it,
** above the fence of every earlier holder of that ID. With the static
** coordinator (no fence) a high-water file in data_dir protects restarts;
** any other coordinator keeps the fence itself. */
static int start_generator(frond__server *srv, char *msg, size_t len,
                           frond_error *err) {
  frond_coord_options co;
  frond_gen_options go;
  char who[300], hw[FROND__CFG_STR_MAX + 64];
  frond_coord_options_init(&co);
  if (identity(srv, &co, who, sizeof who, err) != 0)
    return -1;
  co.cache_dir = srv->cfg.data_dir;
  frond_gen_options_init(&go);
  go.max_ahead_ms = srv->cfg.max_ahead_ms;
  go.max_wait_ms = srv->cfg.max_wait_ms;
  if (strncmp(srv->coord_uri, "static:", 7) == 0) {
    int64_t n = 0;
    frond__parse_i64(srv->coord_uri + 7, strcspn(srv->coord_uri + 7, "?"), &n);
    if (frond__hw_path(hw, sizeof hw, srv->cfg.data_dir, (uint64_t)n) != 0) {
      snprintf(msg, len, "data_dir: the path is too long");
      return -2;
    }
    go.highwater_path = hw;
  }
  if (frond_coord_open(&srv->coord, srv->coord_uri, &co, err) != 0 ||
      frond_coord_gen_create(srv->coord, &srv->layout, &go, &srv->gen, err) !=
          0)
    return -1;
  srv->node = frond_gen_node(srv->gen);
  return 0;
}

static int log_level(const char *s) {
  int i;
  for (i = FROND_LOG_ERROR; i <= FROND_LOG_DEBUG; i++)
    if (strcmp(s, frond_log_level_name(i)) == 0)
      return i;
  return -1;
}

static frond__server *the_srv;
static uv_signal_t sig_term, sig_int;
static uv_timer_t tick;

/* Open the segment allocator and publish it to the workers. */
static int open_seg(frond__server *srv, frond_error *err) {
  frond_seg *seg;
  int r = frond_seg_open(&seg, srv->cfg.store, NULL, err);
  if (r == 0)
    atomic_store(&srv->seg, seg);
  return r;
}

/* Once a second: retry an unreached store (every few seconds), update
** readiness, sample rates. */
static void on_tick(uv_timer_t *t) {
  frond__server *srv = t->data;
  frond_seg *seg = srv->seg;
  static unsigned ticks;
  int ready = 1;
  const char *why;
  if (srv->seg_enabled && seg == NULL && ++ticks % 3 == 0) {
    frond_error err = {0, ""};
    if (open_seg(srv, &err) == 0)
      frond_log(FROND_LOG_INFO, "store reached: segment IDs available");
    else
      frond_log(FROND_LOG_WARN, "store still not reached: %s", err.message);
    seg = srv->seg;
  }
  if (srv->seg_enabled && seg == NULL) {
    ready = 0;
  } else if (seg != NULL) {
    frond_seg_stats ss;
    frond_seg_stats_get(seg, &ss);
    ready = ss.store_ok;
  }
  why = ready ? "yes" : "no (store not reached)";
  if (srv->coord != NULL && frond_coord_state(srv->coord) != 0) {
    ready = 0;
    why = "no (node ID not held)";
  }
  if (atomic_exchange(&srv->ready, ready) != ready)
    frond_log(ready ? FROND_LOG_INFO : FROND_LOG_WARN, "ready: %s", why);
  frond__rates_sample(srv, 1.0);
}

static void on_signal(uv_signal_t *s, int signum) {
  frond__server *srv = s->data;
  int i;
  if (atomic_exchange(&srv->draining, 1))
    return;
  frond_log(FROND_LOG_INFO, "%s: draining (at most %lld ms)",
            signum == SIGTERM ? "SIGTERM" : "SIGINT",
            (long long)srv->cfg.drain_timeout_ms);
  for (i = 0; i < srv->nworkers; i++)
    frond__worker_wake(&srv->workers[i]);
  uv_close((uv_handle_t *)&sig_term, NULL);
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&tick, NULL);
}

static int start(frond__server *srv) {
  char err[700];
  frond_error ferr = {0, ""};
  int i, r;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  if (parse_listen(srv, err, sizeof err) != 0 ||
      frond__resp_configure(srv, err, sizeof err) != 0 ||
      parse_coordinator(srv, err, sizeof err) != 0)
    goto fail_msg;
  if (!srv->loopback && srv->cfg.admin_token[0] == '\0') {
    snprintf(err, sizeof err,
             "refusing to listen on %s beyond loopback without admin_token "
             "(set FROND_ADMIN_TOKEN or --admin-token)",
             srv->cfg.listen);
    goto fail_msg;
  }
  if (strcmp(srv->cfg.leaf_time_zone, "utc") == 0)
    srv->leaf_local_time = 0;
  else if (strcmp(srv->cfg.leaf_time_zone, "local") == 0)
    srv->leaf_local_time = 1;
  else {
    snprintf(err, sizeof err, "leaf_time_zone must be utc or local");
    goto fail_msg;
  }
  if (frond_layout_parse(srv->cfg.layout, &srv->layout, &ferr) != 0)
    goto fail_lib;
  srv->nworkers = srv->cfg.threads > 0 ? (int)srv->cfg.threads
                                       : (int)(cores > 0 ? cores : 1);
  srv->start_ms = frond_clock_realtime(NULL);

  if ((r = start_generator(srv, err, sizeof err, &ferr)) == -1)
    goto fail_lib;
  if (r != 0)
    goto fail_msg;
  /* A store that cannot be reached does not stop the start: snowflake IDs
  ** do not need it, and it is retried until it answers (not ready until
  ** then). A store URI that can never work does. */
  srv->seg_enabled = strcmp(srv->cfg.store, "none") != 0;
  if (srv->seg_enabled && open_seg(srv, &ferr) != 0) {
    if (ferr.code != FROND_ESTORE)
      goto fail_lib;
    frond_log(FROND_LOG_WARN, "store not reached, retrying: %s", ferr.message);
    ferr.code = 0;
  }

  if (frond__listen_probe(srv->listen_host, srv->listen_port, err,
                          sizeof err) != 0 ||
      (srv->resp_port != 0 &&
       frond__listen_probe(srv->resp_host, srv->resp_port, err, sizeof err) !=
           0))
    goto fail_msg;
  srv->workers = calloc((size_t)srv->nworkers, sizeof *srv->workers);
  if (srv->workers == NULL) {
    snprintf(err, sizeof err, "out of memory");
    goto fail_msg;
  }
  for (i = 0; i < srv->nworkers; i++) {
    frond__worker *w = &srv->workers[i];
    w->id = i;
    w->srv = srv;
    w->ids = malloc((size_t)srv->cfg.max_count * sizeof(int64_t));
    if (w->ids == NULL) {
      snprintf(err, sizeof err, "out of memory for max_count IDs");
      goto fail_msg;
    }
    w->listeners[0].fd = frond__listen_socket(
        srv->listen_host, srv->listen_port, err, sizeof err);
    w->listeners[0].proto = &frond__http_proto;
    w->listeners[0].max_input =
        FROND__HTTP_MAX_HEAD + (size_t)srv->cfg.max_body;
    w->nlisteners = 1;
    if (w->listeners[0].fd < 0)
      goto fail_msg;
    if (srv->resp_port != 0) {
      w->listeners[1].fd =
          frond__listen_socket(srv->resp_host, srv->resp_port, err, sizeof err);
      w->listeners[1].proto = &frond__resp_proto;
      w->listeners[1].max_input = (size_t)srv->cfg.resp_max_query;
      w->nlisteners = 2;
      if (w->listeners[1].fd < 0)
        goto fail_msg;
    }
  }
  atomic_store(&srv->ready, !srv->seg_enabled);
  if (srv->seg != NULL) {
    frond_seg_stats ss;
    frond_seg_stats_get(srv->seg, &ss);
    atomic_store(&srv->ready, ss.store_ok);
  }
  for (i = 0; i < srv->nworkers; i++) {
    if ((r = frond__worker_start(&srv->workers[i])) != 0) {
      snprintf(err, sizeof err, "worker %d: %s", i, uv_strerror(r));
      goto fail_msg;
    }
  }
  frond_log(FROND_LOG_INFO,
            "listening on %s (http), %s (resp), node %llu, layout %s, "
            "%d threads, store %s",
            srv->cfg.listen, srv->resp_port ? srv->cfg.resp_listen : "off",
            (unsigned long long)srv->node, srv->layout.name, srv->nworkers,
            srv->cfg.store);
  return 0;
fail_lib:
  snprintf(err, sizeof err, "%s: %s", frond_err_name(ferr.code), ferr.message);
fail_msg:
  frond_log(FROND_LOG_ERROR, "cannot start: %s", err);
  return -1;
}

int frond__cli_serve(int argc, char **argv) {
  static frond__server srv;
  char err[512];
  int print, help, level, i, started = 0;
  uv_loop_t *loop;
  frond_error ferr = {0, ""};

  /* argv[0] is the subcommand's name. */
  if (argc > 0) {
    argc--;
    argv++;
  }
  if (frond__config_load(&srv.cfg, argc, argv, &print, &help, err,
                         sizeof err) != 0) {
    fprintf(stderr, "frond serve: %s\n", err);
    return 2;
  }
  if (help) {
    frond__config_usage(stdout);
    return 0;
  }
  if (print) {
    frond__config_print(&srv.cfg, stdout);
    return 0;
  }
  if ((level = log_level(srv.cfg.log_level)) < 0) {
    fprintf(stderr, "frond serve: log_level must be error, warn, info or "
                    "debug\n");
    return 2;
  }
  frond_log_set(NULL, NULL, level);
  signal(SIGPIPE, SIG_IGN);
  pthread_mutex_init(&srv.admin_lock, NULL);
  pthread_mutex_init(&srv.rate_lock, NULL);
  the_srv = &srv;

  loop = uv_default_loop();
  uv_signal_init(loop, &sig_term);
  uv_signal_init(loop, &sig_int);
  sig_term.data = sig_int.data = &srv;
  uv_signal_start(&sig_term, on_signal, SIGTERM);
  uv_signal_start(&sig_int, on_signal, SIGINT);

  if (start(&srv) == 0) {
    started = 1;
    uv_timer_init(loop, &tick);
    tick.data = &srv;
    uv_timer_start(&tick, on_tick, 1000, 1000);
    uv_run(loop, UV_RUN_DEFAULT);
  } else {
    uv_close((uv_handle_t *)&sig_term, NULL);
    uv_close((uv_handle_t *)&sig_int, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
  }
  for (i = 0; started && i < srv.nworkers; i++)
    frond__worker_join(&srv.workers[i]);
  uv_loop_close(loop);
  frond_seg_close(atomic_load(&srv.seg));
  if (srv.admin_store != NULL)
    frond_store_close(srv.admin_store);
  /* The coordinator owns the generator: it stores the exact high-water
  ** time as the final fence, gives the node ID up and closes it. */
  if (srv.coord != NULL && frond_coord_close(srv.coord, &ferr) != 0)
    frond_log(FROND_LOG_ERROR, "stopping the node: %s", ferr.message);
  else if (srv.gen != NULL)
    frond_log(FROND_LOG_INFO, "stopped; high-water time stored");
  for (i = 0; srv.workers != NULL && i < srv.nworkers; i++) {
    frond__buf_free(&srv.workers[i].scratch);
    free(srv.workers[i].ids);
  }
  free(srv.workers);
  free(srv.rates);
  return started ? 0 : 1;
}
