/* SPDX-License-Identifier: Apache-2.0 */
/*
** next.c -- `frond next`: issue IDs and print one per line.
**
** Snowflake IDs come from a generator on a node ID claimed as `frond
** serve` claims its own with the same settings (server/node.c: the
** configuration file, FROND_* variables and the flags below): by default a
** lease in the store's database, so a run beside a server, or beside
** another run, gets a node ID of its own, and a run after a run starts
** above it; a static node ID (--node, store none) is registered in the
** store, else kept apart by its high-water file in the data directory
** (DIR/frond-node-<N>.hw, NODE_IN_USE for a second run). A layout other
** than the recorded one is refused unless --layout-change asks for it.
** Segment IDs come from a segment allocator over a store.
**
** It never makes a store: a SQLite file that is not there (a relative
** path read from another directory than the servers') is refused, naming
** the absolute path, before anything opens it (node.c's
** frond__node_sqlite_here); a lease in a new file would be node 0 again,
** perhaps a running server's.
**
** With --format, each ID is printed as a string of that format (base62,
** order numbers, ...; uuid7, ulid and objectid make their own, seq numbers
** come from a segment allocator) through frond_format_next_n, the call a
** server makes too.
**
** All print through the buffered output in out.c, fetching IDs in chunks.
** SIGINT, SIGTERM and a closed pipe stop the loop between chunks so that
** the generator is closed cleanly (storing the exact high-water time, so
** the next run need not wait); the process then dies of the same signal,
** as a shell expects.
*/
#include "cli/cli.h"
#include "coord/coord.h"
#include "core/core.h"
#include "server/config.h"
#include "server/node.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: frond next [--count N] [--layout SPEC] [--node N] [--store URI]\n"
    "                  [--coordinator URI] [--advertise HOST:PORT]\n"
    "                  [--data-dir DIR] [--no-high-water] [--layout-change]\n"
    "                  [--config FILE] [--format SPEC]\n"
    "       frond next --segment TAG [--count N] [--store URI] [--format "
    "SPEC]\n"
    "       frond next --format SPEC [--count N] [--key-file FILE]\n"
    "                  [--shard-key KEY]\n"
    "\n"
    "Print N new IDs (default 1), one decimal number per line, in\n"
    "increasing order; with --format, one string of that format per line.\n"
    "\n"
    "snowflake (default): the node ID is claimed as `frond serve` claims\n"
    "its own with the same settings (the --config file, FROND_* variables,\n"
    "these flags): by default a lease in the store's database, node IDs\n"
    "unique per live process, beside a server too.\n"
    "  --layout SPEC   a preset (see 'frond layouts') or keys such as\n"
    "                  time=41,node=10,seq=12,unit=1ms,epoch=2024-01-01\n"
    "                  (default: " FROND_LAYOUT_DEFAULT ")\n"
    "  --node N        a static node ID, 0..2^node_bits-1, unique per live\n"
    "                  process: registered in the store (a second live\n"
    "                  holder is refused); default: the store hands one out\n"
    "  --store URI     the store whose database holds the node IDs\n"
    "                  (default: $FROND_STORE, else " FROND_STORE_DEFAULT ");\n"
    "                  none: static node 0 and its high-water file;\n"
    "                  a SQLite file that is not there is refused: this\n"
    "                  command makes no store\n"
    "  --coordinator URI  as serve's coordinator key (default: auto)\n"
    "  --advertise HOST:PORT  the identity given to the coordinator\n"
    "  --data-dir DIR  the node cache file, and a static node ID's\n"
    "                  high-water file frond-node-N.hw (default:\n"
    "                  $FROND_DATA_DIR, else the working directory)\n"
    "  --no-high-water keep no file in the data directory (the store or the\n"
    "                  coordinator keeps the fence); refused for a static\n"
    "                  node ID registered nowhere (store none)\n"
    "                  (--no-highwater, the old spelling, is deprecated)\n"
    "  --layout-change start under a layout other than the recorded one,\n"
    "                  switching the record (the old layout is then locked\n"
    "                  out for a while; the refusal says how long)\n"
    "  --config FILE   read serve's keys from FILE\n"
    "\n"
    "segment:\n"
    "  --segment TAG   IDs of this tag (create it with 'frond tag create')\n"
    "  --store URI     the store (default: $FROND_STORE, else "
    "" FROND_STORE_DEFAULT ")\n"
    "\n"
    "formats (docs/formats.md):\n"
    "  --format SPEC   base62 | base32 | uuid7 | uuid4 | ulid | objectid |\n"
    "                  order:digits=N[,check=damm][,key=V][,prefix=%Y%m%d]... "
    "|\n"
    "                  "
    "seq:tag=T,digits=N[,period=day|month|year][,tz=ZONE]...\n"
    "                  order and the base ones take snowflake IDs, or segment\n"
    "                  IDs with --segment or tag=; seq needs the store\n"
    "  --key-file FILE keys of order numbers (default: $FROND_ORDER_KEY);\n"
    "                  never on the command line\n"
    "  --shard-key KEY the caller's key (a user ID) whose shard a shard=\n"
    "                  format writes the IDs in\n";

/* How to go on where the store is not there (node.c's
** frond__node_sqlite_here says the rest). */
#define WAYS                                                                   \
  "Run it where the servers' store is, or name it (--store "                   \
  "sqlite:///path/frond.db). A store of its own (frond tag create) or "        \
  "--store none (static node 0) holds node IDs no server on another store "    \
  "knows of: only where none runs"

/* IDs fetched per library call: few calls, and a small stack array. */
#define CHUNK 4096

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) {
  stop_signal = sig;
}

/* Catch SIGINT and SIGTERM into stop_signal and turn SIGPIPE into EPIPE.
** The two are blocked until unblock_signals() so that the generator's
** thread, created in between, inherits the mask and the main thread is the
** one interrupted. */
static void catch_signals(sigset_t *set) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal; /* no SA_RESTART: a blocked write returns */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  frond__out_stop_on(&stop_signal);
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, set, NULL);
}

static void unblock_signals(const sigset_t *set) {
  pthread_sigmask(SIG_UNBLOCK, set, NULL);
}

/* After a clean stop: die of the signal that asked for it. */
static int die_of(int sig) {
  signal(sig, SIG_DFL);
  raise(sig);
  return FROND__EXIT_FAILURE;
}

static void print_ids(const int64_t *ids, size_t n) {
  char line[CHUNK * 21], *p = line;
  size_t i;
  for (i = 0; i < n; i++) {
    p += frond__dec_u64(p, (uint64_t)ids[i]);
    *p++ = '\n';
  }
  frond__out_bytes(line, (size_t)(p - line));
}

/* Finish a run: flush, report a write error. EPIPE means the reader has
** gone, which is how `frond next | head` ends: no message. */
static int finish(int rc) {
  int e = frond__out_flush();
  if (e == EPIPE)
    return die_of(SIGPIPE);
  if (stop_signal != 0)
    return die_of(stop_signal);
  if (e != 0 && rc == FROND__EXIT_OK) {
    errno = e;
    rc = frond__cli_fail_errno("writing the IDs");
  }
  return rc;
}

static int running(void) {
  return stop_signal == 0 && frond__out_error() == 0;
}

/* --shard-key: the caller's key for a shard= format, NULL when none. */
static const char *shard_key;

/* Print `count` strings of format f, taking IDs from src, at most `limit`
** per call. Returns an exit status; failures are in *err. */
static int format_loop(frond_format *f, const frond_format_source *src,
                       int64_t count, size_t limit, frond_error *err) {
  size_t stride = frond_format_length(f) + 1,
         chunk = limit < CHUNK ? limit : CHUNK;
  char *buf = malloc(chunk * stride);
  int rc = FROND__EXIT_OK;
  if (buf == NULL) {
    err->code = FROND_ENOMEM;
    err->message[0] = '\0';
    return FROND__EXIT_FAILURE;
  }
  while (count > 0 && running()) {
    size_t n = count < (int64_t)chunk ? (size_t)count : chunk;
    if ((shard_key != NULL
             ? frond_format_next_for(f, src, shard_key, strlen(shard_key), n,
                                     buf, stride, err)
             : frond_format_next_n(f, src, n, buf, stride, err)) != 0) {
      rc = FROND__EXIT_FAILURE;
      break;
    }
    for (size_t i = 0; i < n; i++) {
      char *p = buf + i * stride;
      size_t len = strlen(p);
      p[len] = '\n';
      frond__out_bytes(p, len + 1);
    }
    count -= (int64_t)n;
  }
  free(buf);
  return rc;
}

/* Segment IDs of `tag` (NULL: the format's own tag, or a seq format's
** periods), plain or through format f. */
static int next_segment(const char *tag, const char *store, int64_t count,
                        frond_format *f) {
  frond_error err = {0};
  frond_seg *s = NULL;
  frond_format_source src = {NULL, NULL, tag, 0};
  frond_seg_options o;
  int64_t ids[CHUNK];
  int rc = FROND__EXIT_OK;
  sigset_t set;
  if (tag != NULL && frond_tag_validate(tag, strlen(tag), &err) != 0)
    return frond__usage_error("next", "--segment: %s", err.message);
  if (frond__node_sqlite_here("store", store,
                              "frond next makes no store: a new one here "
                              "would hold none of the servers' tags. " WAYS,
                              &err) != 0)
    return frond__cli_fail(&err);
  /* A one-off command asks for its segments one after another, with no
  ** time to load ahead: it waits as long for each as for the first,
  ** where a server answering requests waits 50 ms. */
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms;
  /* What a server logs (the give-back on close) is noise here. */
  frond_log_set(NULL, NULL, FROND_LOG_WARN);
  catch_signals(&set);
  if (frond_seg_open(&s, store, &o, &err) != 0)
    return frond__cli_fail(&err);
  unblock_signals(&set);
  src.seg = s;
  if (f != NULL && frond__cli_format_check(f, &src, NULL, NULL, &err) != 0)
    rc = FROND__EXIT_FAILURE;
  else if (f != NULL)
    rc = format_loop(f, &src, count, CHUNK, &err);
  while (f == NULL && count > 0 && running()) {
    size_t n = count < CHUNK ? (size_t)count : CHUNK;
    if (frond_seg_next_n(s, tag, strlen(tag), n, ids, &err) != 0) {
      rc = FROND__EXIT_FAILURE;
      break;
    }
    print_ids(ids, n);
    count -= (int64_t)n;
  }
  frond_seg_close(s);
  if (rc != FROND__EXIT_OK) {
    frond__out_flush();
    return frond__cli_fail(&err);
  }
  return finish(rc);
}

/* The flags of a snowflake run, as serve's configuration keys. */
typedef struct sf_flags {
  const char *layout, *store, *coordinator, *advertise, *dir, *config;
  int64_t node;
  int no_hw, layout_change;
} sf_flags;

/* The configuration: defaults, then --config, then FROND_* variables,
** then the flags, as `frond serve` reads its own. */
static int load_config(const sf_flags *fl, frond__config *cfg) {
  char flag[] = "--config", file[PATH_MAX], *av[2] = {flag, file};
  frond_error err = {0, ""};
  int action;
  if (fl->config != NULL && strlen(fl->config) >= sizeof(file))
    return frond__usage_error("next", "--config: the path is too long");
  snprintf(file, sizeof(file), "%s", fl->config ? fl->config : "");
  if (frond__config_load(cfg, fl->config ? 2 : 0, av, &action, &err) != 0)
    return frond__usage_error("next", "%s", err.message);
#define SET(key, v)                                                            \
  if ((v) != NULL &&                                                           \
      frond__config_set(cfg, key, strlen(key), v, "--" key, &err) != 0)        \
    return frond__usage_error("next", "%s", err.message);
  SET("layout", fl->layout);
  SET("store", fl->store);
  SET("coordinator", fl->coordinator);
  SET("advertise", fl->advertise);
  SET("data_dir", fl->dir);
  SET("layout_change", fl->layout_change ? "on" : NULL);
#undef SET
  if (fl->node >= 0)
    cfg->node = fl->node;
  return 0;
}

/* Is the node ID leased in the store's database (coordinator auto or
** static, config_coord.c), rather than in a coordinator of its own? */
static int lease_on_store(const frond__config *cfg) {
  return strcmp(cfg->coordinator, "auto") == 0 ||
         strncmp(cfg->coordinator, "static", 6) == 0;
}

/* Snowflake IDs, plain or through format f, on a node ID claimed as serve
** claims its own. */
static int next_snowflake(const frond__config *cfg, int no_hw, int64_t count,
                          frond_format *f) {
  int64_t ids[CHUNK];
  int rc = FROND__EXIT_OK;
  frond_layout layout;
  frond_error err = {0};
  frond_coord *c = NULL;
  frond_gen *g = NULL;
  frond_format_source src = {NULL, NULL, NULL, 0};
  frond__node_claim_opts o;
  frond__addr at;
  char uri[FROND__CFG_STR_MAX + 64];
  size_t limit;
  sigset_t set;

  if (frond_layout_parse(cfg->layout, &layout, &err) != 0)
    return frond__usage_error("next", "--layout: %s", err.message);
  if (cfg->node >= 0 && (uint64_t)cfg->node > frond_layout_max_node(&layout))
    return frond__usage_error(
        "next", "--node: '%lld' is out of range 0..%llu for layout %s",
        (long long)cfg->node,
        (unsigned long long)frond_layout_max_node(&layout), layout.name);
  if (frond__config_coord_uri(cfg, uri, sizeof(uri), &err) != 0 ||
      frond__config_addr("listen", cfg->listen, &at, &err) != 0 ||
      (strcmp(cfg->advertise, "auto") != 0 &&
       frond__coord_check_advertise(cfg->advertise, &err) != 0))
    return frond__usage_error("next", "%s", err.message);
  if (frond__node_one_holder(cfg, uri, &layout, 1, &err) != 0)
    return frond__cli_fail(&err);
  /* Never a new store: a lease on a SQLite file that is not there would
  ** hand out node IDs that no server knows of. */
  if (frond__node_sqlite_here(lease_on_store(cfg) ? "store" : "coordinator",
                              lease_on_store(cfg) ? cfg->store : uri,
                              "frond next makes no store: a new one would "
                              "lease a node ID a running server may hold, "
                              "and repeat its IDs. " WAYS,
                              &err) != 0)
    return frond__cli_fail(&err);
  if (no_hw && strncmp(uri, "static:", 7) == 0)
    return frond__usage_error("next",
                              "--no-high-water: node ID %lld is static and "
                              "registered nowhere (%s), so its high-water "
                              "file is all that keeps two runs apart; claim "
                              "the node ID from a store or a coordinator to "
                              "run without it",
                              (long long)frond__config_pinned_node(uri), uri);
  memset(&o, 0, sizeof(o));
  o.uri = uri;
  o.host = at.host;
  o.port = at.port;
  o.files = !no_hw;
  /* At most one unit's worth of IDs per call: a call is all or nothing,
  ** and once the borrowing is used up it must wait for every unit it
  ** spans. With 2^seq_bits IDs it spans at most two. The default max_wait
  ** covers two units of any layout, so past the layout's rate each call
  ** waits for the clock rather than fails. */
  limit = layout.seq_bits < 12 ? (size_t)1 << layout.seq_bits : CHUNK;

  /* What a server logs at start is noise here: warnings and errors only. */
  frond_log_set(NULL, NULL,
                cfg->log_level < FROND_LOG_WARN ? cfg->log_level
                                                : FROND_LOG_WARN);
  (void)frond__layout_warn_end(&layout, frond_clock_realtime(NULL));
  catch_signals(&set);
  if (frond__node_claim(cfg, &o, &layout, &c, &g, &err) != 0)
    return frond__cli_fail(&err);
  unblock_signals(&set);
  src.gen = g;
  if (f != NULL &&
      frond__cli_format_check(f, &src, c, no_hw ? NULL : cfg->data_dir, &err))
    rc = FROND__EXIT_FAILURE;
  else if (f != NULL)
    rc = format_loop(f, &src, count, limit, &err);
  while (f == NULL && count > 0 && running()) {
    size_t n = count < (int64_t)limit ? (size_t)count : limit;
    if (frond_gen_next_n(g, n, ids, &err) != 0) {
      rc = FROND__EXIT_FAILURE;
      break;
    }
    print_ids(ids, n);
    count -= (int64_t)n;
  }
  /* Print what was issued before closing: those IDs are spent either way.
  ** Closing stores the exact high water and gives the node ID back. */
  if (rc != FROND__EXIT_OK) {
    frond__out_flush();
    frond_coord_close(c, NULL);
    return frond__cli_fail(&err);
  }
  frond__out_flush();
  if (frond_coord_close(c, &err) != 0)
    return frond__cli_fail(&err);
  return finish(rc);
}

/* Formats that make their own IDs: uuid7, uuid4, ulid, objectid. */
static int next_own(frond_format *f, int64_t count) {
  frond_error err = {0};
  sigset_t set;
  int rc;
  catch_signals(&set);
  unblock_signals(&set);
  rc = format_loop(f, NULL, count, CHUNK, &err);
  if (rc != FROND__EXIT_OK) {
    frond__out_flush();
    return frond__cli_fail(&err);
  }
  return finish(rc);
}

/* scope=node formats take the snowflake IDs of this node. */
static int own_ids(const frond_format *f) {
  int kind = frond_format_kind(f);
  return !frond_format_node_scoped(f) &&
         (kind == FROND_FORMAT_UUID7 || kind == FROND_FORMAT_UUID4 ||
          kind == FROND_FORMAT_ULID || kind == FROND_FORMAT_OBJECTID);
}

static int dispatch(const sf_flags *fl, const char *tag, int64_t count,
                    frond_format *f) {
  int snowflake_opts = fl->layout != NULL || fl->node >= 0 || fl->dir != NULL ||
                       fl->no_hw || fl->coordinator != NULL ||
                       fl->advertise != NULL || fl->layout_change;
  int kind = f != NULL ? frond_format_kind(f) : 0;
  const char *ftag = f != NULL ? frond_format_tag(f) : NULL;
  frond__config cfg;
  int rc;
  if (f != NULL && own_ids(f)) {
    if (snowflake_opts || tag != NULL || fl->store != NULL)
      return frond__usage_error("next",
                                "--format %s makes its own IDs: it does not "
                                "go with --layout, --node, --data-dir, "
                                "--no-high-water, --coordinator, "
                                "--advertise, --layout-change, --segment or "
                                "--store",
                                frond_format_kind_name(kind));
    return next_own(f, count);
  }
  if (tag != NULL && ftag != NULL && strcmp(tag, ftag) != 0)
    return frond__usage_error("next",
                              "--segment %s disagrees with the "
                              "format's tag=%s",
                              tag, ftag);
  if (kind == FROND_FORMAT_SEQ && tag != NULL)
    return frond__usage_error("next", "a seq format names its tag (tag=); "
                                      "--segment does not go with it");
  if (fl->no_hw && fl->dir != NULL)
    return frond__usage_error("next", "--data-dir does not go with "
                                      "--no-high-water");
  if ((rc = load_config(fl, &cfg)) != 0)
    return rc;
  if (tag != NULL || ftag != NULL || kind == FROND_FORMAT_SEQ) {
    if (snowflake_opts)
      return frond__usage_error("next",
                                "%s does not go with --layout, --node, "
                                "--data-dir, --no-high-water, "
                                "--coordinator, --advertise or "
                                "--layout-change",
                                tag != NULL ? "--segment" : "a segment format");
    return next_segment(kind == FROND_FORMAT_SEQ ? NULL : tag, cfg.store, count,
                        f);
  }
  return next_snowflake(&cfg, fl->no_hw, count, f);
}

int frond__cli_next(int argc, char **argv) {
  int64_t count = 1;
  const char *tag = NULL, *fspec = NULL, *key_file = NULL;
  sf_flags fl;
  int old_no_hw = 0, st, rc;
  frond__opt opts[] = {
      {"count", FROND__OPT_INT, &count, 1, INT64_MAX, 0},
      {"layout", FROND__OPT_STR, &fl.layout, 0, 0, 0},
      {"node", FROND__OPT_INT, &fl.node, 0, INT64_MAX, 0},
      {"data-dir", FROND__OPT_STR, &fl.dir, 0, 0, 0},
      {"no-high-water", FROND__OPT_FLAG, &fl.no_hw, 0, 0, 0},
      /* deprecated spelling, still accepted */
      {"no-highwater", FROND__OPT_FLAG, &old_no_hw, 0, 0, 0},
      {"coordinator", FROND__OPT_STR, &fl.coordinator, 0, 0, 0},
      {"advertise", FROND__OPT_STR, &fl.advertise, 0, 0, 0},
      {"layout-change", FROND__OPT_FLAG, &fl.layout_change, 0, 0, 0},
      {"config", FROND__OPT_STR, &fl.config, 0, 0, 0},
      {"segment", FROND__OPT_STR, &tag, 0, 0, 0},
      {"store", FROND__OPT_STR, &fl.store, 0, 0, 0},
      {"format", FROND__OPT_STR, &fspec, 0, 0, 0},
      {"key-file", FROND__OPT_STR, &key_file, 0, 0, 0},
      {"shard-key", FROND__OPT_STR, &shard_key, 0, 0, 0},
      {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"next", usage, opts, 0, 0, NULL, NULL, 0};
  frond_format *f = NULL;

  memset(&fl, 0, sizeof(fl));
  fl.node = -1;
  if (!frond__args_parse(&a, argc, argv, &st))
    return st;
  if (old_no_hw) {
    /* A deprecated spelling warns, naming its replacement
    ** (docs/versioning.md, Deprecations). */
    frond_log(FROND_LOG_WARN,
              "--no-highwater is deprecated: use --no-high-water");
    fl.no_hw = 1;
  }
  if (key_file != NULL && fspec == NULL)
    return frond__usage_error("next", "--key-file needs --format");
  if (shard_key != NULL && fspec == NULL)
    return frond__usage_error("next", "--shard-key needs --format");
  if (fspec != NULL &&
      (rc = frond__cli_format_create("next", fspec, key_file, &f)) != 0)
    return rc;
  rc = dispatch(&fl, tag, count, f);
  frond_format_free(f);
  return rc;
}
