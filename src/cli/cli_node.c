/*
** cli_node.c -- "frond node": look at node IDs held through a coordinator.
**
** This file contains the node subcommand:
**
**   frond node list [--coordinator URI] [--layout SPEC] [--json]
**
** It lists every node ID the coordinator knows, its owner (ip:port), the
** last high-water time it reported and whether a live process holds it
** now. It only reads; it never claims an ID.
*/
#include "coord/coord.h"
#include "core/internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__cli_node(int argc, char **argv);

static void node_usage(FILE *f) {
  fprintf(f, "usage: frond node list [--coordinator URI] [--layout SPEC] "
             "[--json]\n"
             "  URI: static:N | zk://host:port[,host:port...]/name |\n"
             "       lease+sqlite:///path.db | lease+postgresql://...\n"
             "  (default: $FROND_COORDINATOR, else " FROND_COORD_DEFAULT ")\n");
}

static void print_time(int64_t ms, char *buf, size_t len) {
  if (ms <= 0)
    snprintf(buf, len, "-");
  else
    frond__format_rfc3339(ms, buf, len);
}

static int node_list(const char *uri, const char *layout, int json) {
  frond_coord_options o;
  frond_coord *c;
  frond_coord_entry *e = NULL;
  frond_layout l;
  frond_error err;
  size_t n = 0;
  int rc;

  frond__coord_options_init(&o);
  if (layout) {
    if ((rc = frond_layout_parse(layout, &l, &err)) != 0) {
      fprintf(stderr, "frond node: %s\n", err.message);
      return 2;
    }
    o.node_bits = l.node_bits;
  }
  o.connect_ms = 5000;
  if ((rc = frond__coord_open(&c, uri, &o, &err)) != 0 ||
      (rc = frond__coord_list(c, &e, &n, &err)) != 0) {
    fprintf(stderr, "frond node: %s: %s\n", frond_err_name(err.code),
            err.message);
    frond__coord_close(c, NULL);
    return 1;
  }
  if (json)
    printf("[");
  else
    printf("%-8s %-40s %-26s %-26s %s\n", "NODE", "OWNER", "HIGH_WATER",
           "LEASE_EXPIRES", "LIVE");
  for (size_t i = 0; i < n; i++) {
    char hw[40], ex[40];
    if (json) {
      printf("%s{\"node\":%" PRIu64
             ",\"owner\":\"%s\",\"high_water_ms\":%" PRId64
             ",\"expires_ms\":%" PRId64 ",\"live\":%s}",
             i ? "," : "", e[i].node, e[i].owner, e[i].high_water_ms,
             e[i].expires_ms, e[i].live ? "true" : "false");
      continue;
    }
    print_time(e[i].high_water_ms, hw, sizeof(hw));
    print_time(e[i].expires_ms, ex, sizeof(ex));
    printf("%-8" PRIu64 " %-40s %-26s %-26s %s\n", e[i].node, e[i].owner, hw,
           ex, e[i].live ? "yes" : "no");
  }
  if (json)
    printf("]\n");
  free(e);
  frond__coord_close(c, NULL);
  return 0;
}

int frond__cli_node(int argc, char **argv) {
  const char *uri = getenv("FROND_COORDINATOR"), *layout = NULL;
  int json = 0, i = 1;

  if (argc < 2 || strcmp(argv[1], "list") != 0) {
    node_usage(argc >= 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr);
    return argc >= 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  for (i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--coordinator") == 0 && i + 1 < argc)
      uri = argv[++i];
    else if (strncmp(argv[i], "--coordinator=", 14) == 0)
      uri = argv[i] + 14;
    else if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc)
      layout = argv[++i];
    else if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else {
      node_usage(stderr);
      return 2;
    }
  }
  return node_list(uri, layout, json);
}
