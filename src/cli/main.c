/* SPDX-License-Identifier: Apache-2.0 */
/*
** main.c -- entry point of the `frond` command: dispatch to a subcommand.
**
** Each subcommand is a function frond__cli_<name>(argc, argv) declared in
** cli.h, called with argv[0] set to its name; it parses its own options
** with args.c and prints its own help for --help, so `frond help CMD` is
** simply `frond CMD --help`. A subcommand that reads FROND_* variables
** is not run while one of them is unknown (config_load.c).
*/
#include "cli/cli.h"
#include "server/config.h"
#include "server/serve.h"

#include <stdio.h>
#include <string.h>

typedef struct cli_cmd {
  const char *name;
  int (*fn)(int argc, char **argv);
  int env; /* reads FROND_* variables: an unknown one is refused first */
  const char *summary;
} cli_cmd;

static const cli_cmd commands[] = {
    {"serve", frond__cli_serve, 0, /* its configuration checks them */
     "run the server (HTTP and the Redis protocol)"},
    {"check", frond__cli_check, 0, /* as serve */
     "check a server's configuration, store and coordinator before a start"},
    {"next", frond__cli_next, 1, "issue snowflake or segment IDs"},
    {"decode", frond__cli_decode, 1, "split snowflake IDs into their fields"},
    {"layouts", frond__cli_layouts, 0,
     "list the layout presets and their limits"},
    {"tag", frond__cli_tag, 1, "create, list and change segment tags"},
    {"bench", frond__cli_bench, 0, "measure the snowflake generator"},
    {"node", frond__cli_node, 1,
     "node IDs and the fleet's layout at a coordinator"},
    {"audit", frond__cli_audit, 1, "find who was given an ID in the audit log"},
    {"clients", frond__cli_clients, 0,
     "make a client's secret and its clients_file line; check the file"},
};

static void usage(FILE *f) {
  size_t i;
  fprintf(f, "usage: frond COMMAND [ARGS]\n"
             "       frond help COMMAND | --help | --version\n\n"
             "Frond issues unique 64-bit IDs: snowflake (time | node | "
             "sequence)\nand segment (increasing integers per tag).\n\n"
             "commands:\n");
  for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
    fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'frond help COMMAND' shows a command's options. Exit status: "
             "0 success,\n1 the operation failed (\"frond: CODE: message\" "
             "on stderr), 2 bad arguments.\n");
}

static const cli_cmd *find(const char *name) {
  size_t i;
  for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

/* Does the command line ask for help only? */
static int asks_help(int argc, char **argv) {
  int i;
  for (i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return 1;
  return 0;
}

static int unknown(const char *name) {
  fprintf(stderr, "frond: unknown command '%s' (see 'frond --help')\n", name);
  return FROND__EXIT_USAGE;
}

int main(int argc, char **argv) {
  const cli_cmd *c;
  if (argc < 2) {
    fprintf(stderr, "frond: missing command (see 'frond --help')\n");
    return FROND__EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return FROND__EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0)
    return frond__cli_version();
  if (strcmp(argv[1], "help") == 0) {
    /* "help CMD [SUB]" is "CMD [SUB] --help". */
    char *help_argv[3];
    if (argc == 2) {
      usage(stdout);
      return FROND__EXIT_OK;
    }
    if ((c = find(argv[2])) == NULL)
      return unknown(argv[2]);
    if (argc > 4) {
      fprintf(stderr, "frond help: unexpected argument '%s'\n", argv[4]);
      return FROND__EXIT_USAGE;
    }
    help_argv[0] = argv[2];
    help_argv[1] = argc == 4 ? argv[3] : (char *)"--help";
    help_argv[2] = (char *)"--help";
    return c->fn(argc - 1, help_argv);
  }
  if (argv[1][0] == '-') {
    fprintf(stderr, "frond: unknown option '%s' (see 'frond --help')\n",
            argv[1]);
    return FROND__EXIT_USAGE;
  }
  if ((c = find(argv[1])) == NULL)
    return unknown(argv[1]);
  if (c->env && !asks_help(argc, argv)) {
    /* A misspelt variable is not read: its default would act instead. */
    frond_error err = {0, ""};
    if (frond__config_env_check(&err) != 0)
      return frond__usage_error(c->name, "%s: %s", frond_err_name(err.code),
                                err.message);
  }
  return c->fn(argc - 1, argv + 1);
}
