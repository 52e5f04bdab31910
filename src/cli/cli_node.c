/* SPDX-License-Identifier: Apache-2.0 */
/*
** cli_node.c -- `frond node`: the node IDs a coordinator hands out.
**
**   frond node list [--coordinator URI] [--datacenter N] [--json]
**   frond node layout [--coordinator URI] [--datacenter N] [--set SPEC]
**
** list: what the coordinator serves (its record: the whole node range,
** a datacenter or a range), every node ID it knows, its owner (identity), its
** fence (the exact high-water time after a clean stop), the lease expiry
** (database lease) and whether a live process holds it now. It only reads;
** it never claims an ID.
** layout: the layout the fleet records (and a change of it that was begun
** and did not finish), and with --set the procedure that changes it
** (refused while any node holds an ID; the layout recorded before an
** unfinished change undoes it).
** The coordinator is the one `frond serve` would use with the same
** settings: --coordinator, else the --config file and the FROND_*
** variables (by default the lease in the store's database; --store names
** another store).
*/
#include "cli/cli.h"
#include "coord/coord.h"
#include "server/config.h"
#include "server/node.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__cli_node(int argc, char **argv);
/* frond node coordinator (cli_node_coord.c). */
int frond__cli_node_coordinator(int argc, char **argv);

static const char usage[] =
    "usage: frond node list [--coordinator URI | --store URI] [--config FILE]\n"
    "                       [--datacenter N] [--json]\n"
    "       frond node layout [--coordinator URI | --store URI]\n"
    "                         [--config FILE] [--datacenter N] [--set SPEC]\n"
    "       frond node coordinator [--store URI] [--config FILE]\n"
    "                              [--set URI --from URI]\n"
    "\n"
    "list: the node IDs a coordinator hands out: owner (host:port), the\n"
    "fence (no ID above it was issued; the exact high-water time after a\n"
    "clean stop), the lease expiry and whether a live process holds the ID\n"
    "now. It never claims an ID.\n"
    "\n"
    "layout: the layout the fleet's nodes must use. With --set, change it:\n"
    "refused while any node holds an ID; records the largest ID the old\n"
    "layout could have issued, and nodes under the new one start above it.\n"
    "A change that was stopped halfway (no node starts then; the output\n"
    "says so) is finished by --set with the new layout, and undone by\n"
    "--set with the old one.\n"
    "\n"
    "coordinator: the coordinators the store records for its servers'\n"
    "node IDs; --set NEW --from OLD moves the fleet (frond node coordinator\n"
    "--help says how).\n"
    "\n"
    "  --coordinator URI  static:N | zk://host:port[,host:port...]/name |\n"
    "                     etcd://host:port[,host:port...]/prefix |\n"
    "                     lease+sqlite:///path.db | lease+postgresql://... |\n"
    "                     lease+mysql://...\n"
    "                     (default: the one `frond serve` would use with the\n"
    "                     same settings: $FROND_COORDINATOR, else the lease\n"
    "                     in the store's database)\n"
    "  --store URI        the store whose database holds the node IDs\n"
    "                     (default: $FROND_STORE, else " FROND_STORE_DEFAULT
    ")\n"
    "  --config FILE      read serve's keys from FILE\n"
    "  --datacenter N     the datacenter the coordinator serves, as for\n"
    "                     serve (datacenter=N on its URI); checked against\n"
    "                     its record, DATACENTER_MISMATCH when it differs\n"
    "  --json             list: JSON instead of a table\n"
    "  --set SPEC         layout: the new layout (a preset or keys, as for\n"
    "                     'frond layouts'); coordinator: the new\n"
    "                     coordinator\n"
    "  --from URI         coordinator: the one the store records now\n";

static void print_json(const frond_coord_entry *e, size_t n,
                       const char *served) {
  frond__out_str("[\n");
  for (size_t i = 0; i < n; i++) {
    frond__out_str("  {\"node\":");
    frond__out_u64(e[i].node);
    if (served) {
      frond__out_str(",\"served\":");
      frond__out_json_str(served);
    }
    frond__out_str(",\"owner\":");
    frond__out_json_str(e[i].owner);
    frond__out_str(",\"fence_ms\":");
    frond__out_i64(e[i].fence_ms);
    frond__out_str(",\"lease_expires_ms\":");
    frond__out_i64(e[i].expires_ms);
    frond__out_str(e[i].live ? ",\"live\":true}" : ",\"live\":false}");
    frond__out_str(i + 1 < n ? ",\n" : "\n");
  }
  frond__out_str("]\n");
}

static int print_table(const frond_coord_entry *e, size_t n) {
  enum { COLS = 5 };
  const char **cells = malloc(sizeof(*cells) * COLS * (n + 1));
  char(*txt)[3][40] = malloc(sizeof(*txt) * (n + 1));
  if (!cells || !txt) {
    frond_error err = {FROND_ENOMEM, ""};
    free(cells);
    free(txt);
    return frond__cli_fail(&err);
  }
  cells[0] = "node", cells[1] = "owner", cells[2] = "fence";
  cells[3] = "lease_expires", cells[4] = "live";
  for (size_t i = 0; i < n; i++) {
    const char **c = &cells[(i + 1) * COLS];
    snprintf(txt[i][0], sizeof(txt[i][0]), "%llu",
             (unsigned long long)e[i].node);
    if (e[i].fence_ms > 0)
      frond__cli_time(e[i].fence_ms, txt[i][1], sizeof(txt[i][1]));
    else
      snprintf(txt[i][1], sizeof(txt[i][1]), "-");
    if (e[i].expires_ms > 0)
      frond__cli_time(e[i].expires_ms, txt[i][2], sizeof(txt[i][2]));
    else
      snprintf(txt[i][2], sizeof(txt[i][2]), "-");
    c[0] = txt[i][0], c[1] = e[i].owner, c[2] = txt[i][1];
    c[3] = txt[i][2], c[4] = e[i].live ? "yes" : "no";
  }
  frond__out_table(cells, n + 1, COLS, "rllll");
  free(cells);
  free(txt);
  return FROND__EXIT_OK;
}

/* The coordinator as `frond serve` resolves it: 1 after a usage error
** (reported), else frond_coord_open's result (0 or a negative code). A
** lease in a SQLite file that is not there is refused (CONFIG), as frond
** next refuses it: opening it would make a new, empty store where there
** was none, in which a frond next run there later would lease node 0,
** perhaps a running server's. */
static int open_coord(const char *cmd, const char *uri, const char *store,
                      const char *file, const char *dc, frond_coord **c,
                      frond_error *err) {
  char flag[] = "--config", path[4096], *av[2] = {flag, path};
  char resolved[FROND__CFG_STR_MAX + 64];
  frond__config cfg;
  int action, on_store;
  if (file != NULL && strlen(file) >= sizeof(path)) {
    frond__usage_error(cmd, "--config: the path is too long");
    return 1;
  }
  snprintf(path, sizeof(path), "%s", file ? file : "");
  if (frond__config_load(&cfg, file ? 2 : 0, av, &action, err) != 0 ||
      (uri != NULL && frond__config_set(&cfg, "coordinator", 11, uri,
                                        "--coordinator", err) != 0) ||
      (store != NULL &&
       frond__config_set(&cfg, "store", 5, store, "--store", err) != 0) ||
      (dc != NULL && frond__config_set(&cfg, "datacenter", 10, dc,
                                       "--datacenter", err) != 0) ||
      frond__config_coord_uri(&cfg, resolved, sizeof(resolved), err) != 0) {
    frond__usage_error(cmd, "%s", err->message);
    return 1;
  }
  on_store = strcmp(cfg.coordinator, "auto") == 0 ||
             strncmp(cfg.coordinator, "static", 6) == 0;
  if (frond__node_sqlite_here(on_store ? "store" : "coordinator",
                              on_store ? cfg.store : resolved,
                              "frond node makes no store: a new one here "
                              "would hold no server's node IDs or layout, "
                              "and a frond next run here after it could "
                              "lease a running server's. Run it where the "
                              "servers' store is, or name it (--store "
                              "sqlite:///path/frond.db, --coordinator)",
                              err) != 0)
    return err->code;
  return frond_coord_open(c, resolved, NULL, err);
}

/* What the coordinator serves, as its record says: the line above the
** table (the node IDs in it are these). */
static void print_served(const char *scope, uint64_t lo, uint64_t hi,
                         int recorded) {
  frond__out_printf("serves %s: node IDs %llu..%llu%s\n",
                    strcmp(scope, "all") == 0 ? "the whole node range" : scope,
                    (unsigned long long)lo, (unsigned long long)hi,
                    recorded ? ", as the coordinator records"
                             : " (nothing recorded yet)");
}

static int node_list(int argc, char **argv) {
  const char *uri = NULL, *layout = NULL, *store = NULL, *file = NULL;
  const char *dc = NULL, *served;
  char scope[64];
  uint64_t lo = 0, hi = 0;
  int json = 0, rc, recorded = 0, conflict;
  frond_error cerr = {0, ""};
  frond__opt opts[] = {{"coordinator", FROND__OPT_STR, &uri, 0, 0, 0},
                       {"datacenter", FROND__OPT_STR, &dc, 0, 0, 0},
                       {"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {"config", FROND__OPT_STR, &file, 0, 0, 0},
                       {"layout", FROND__OPT_STR, &layout, 0, 0, 0},
                       {"json", FROND__OPT_FLAG, &json, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"node list", usage, opts, 0, 0, NULL, NULL, 0};
  frond_coord *c = NULL;
  frond_coord_entry *e = NULL;
  frond_error err = {0, ""};
  size_t n = 0;

  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  (void)layout; /* accepted for old scripts: listing needs no layout */
  if ((rc = open_coord(a.cmd, uri, store, file, dc, &c, &err)) > 0)
    return FROND__EXIT_USAGE;
  if (rc != 0 || frond_coord_list(c, &e, &n, &err) != 0) {
    frond_coord_close(c, NULL);
    return frond__cli_fail(&err);
  }
  served = frond__coord_served(c, &lo, &hi, &recorded);
  snprintf(scope, sizeof(scope), "%s", served ? served : "");
  /* Listed by the record; settings that name another range would be
  ** refused at a start: said after the list, and the exit says so. */
  conflict = frond__coord_scope_conflict(c, &cerr);
  frond_coord_close(c, NULL);
  if (json) {
    print_json(e, n, served ? scope : NULL);
  } else {
    if (served)
      print_served(scope, lo, hi, recorded);
    rc = print_table(e, n);
  }
  frond_free(e);
  if (conflict != 0) {
    frond__out_finish(FROND__EXIT_OK);
    return frond__cli_fail(&cerr);
  }
  return frond__out_finish(json ? FROND__EXIT_OK : rc);
}

static int node_layout(int argc, char **argv) {
  const char *uri = NULL, *set = NULL, *store = NULL, *file = NULL;
  const char *dc = NULL;
  int rc;
  frond__opt opts[] = {{"coordinator", FROND__OPT_STR, &uri, 0, 0, 0},
                       {"datacenter", FROND__OPT_STR, &dc, 0, 0, 0},
                       {"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {"config", FROND__OPT_STR, &file, 0, 0, 0},
                       {"set", FROND__OPT_STR, &set, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"node layout", usage, opts, 0, 0, NULL, NULL, 0};
  frond_coord *c = NULL;
  frond_layout l;
  frond_error err = {0, ""};
  char spec[160];
  int64_t floor_id = 0;
  int changing = 0;

  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if (set && frond_layout_parse(set, &l, &err) != 0)
    return frond__usage_error(a.cmd, "--set: %s", err.message);
  if ((rc = open_coord(a.cmd, uri, store, file, dc, &c, &err)) > 0)
    return FROND__EXIT_USAGE;
  if (rc != 0)
    return frond__cli_fail(&err);
  rc = set ? frond_coord_layout_set(c, &l, &floor_id, &err)
           : frond__coord_layout_read(c, &l, &floor_id, &changing, &err);
  frond_coord_close(c, NULL);
  if (rc != 0)
    return frond__cli_fail(&err);
  frond_layout_format(&l, spec, sizeof(spec));
  frond__out_printf("layout %s\nfloor %lld\n", spec, (long long)floor_id);
  /* A change whose mark was left: every start refuses until it is done. */
  if (changing)
    frond__out_printf("changing from %s: begun and not finished, no node "
                      "starts until `frond node layout --set <new layout>` "
                      "finishes it or `frond node layout --set %s` undoes "
                      "it\n",
                      spec, spec);
  return frond__out_finish(FROND__EXIT_OK);
}

int frond__cli_node(int argc, char **argv) {
  if (argc < 2)
    return frond__usage_error("node",
                              "missing subcommand (list, layout, coordinator)");
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage, stdout);
    return FROND__EXIT_OK;
  }
  if (strcmp(argv[1], "list") == 0)
    return node_list(argc - 1, argv + 1);
  if (strcmp(argv[1], "layout") == 0)
    return node_layout(argc - 1, argv + 1);
  if (strcmp(argv[1], "coordinator") == 0)
    return frond__cli_node_coordinator(argc - 1, argv + 1);
  return frond__usage_error("node", "unknown subcommand '%s'", argv[1]);
}
