/*
** config.h -- the server's configuration: one table, four sources.
**
** Every key is one row of the table in config.c (name, type, bounds,
** default, environment variable, help). Sources, later ones winning:
** defaults, the file given with --config, FROND_* environment variables,
** command-line flags.
*/
#ifndef FROND_SERVER_CONFIG_H
#define FROND_SERVER_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#define FROND__CFG_STR_MAX 1024

typedef struct frond__config {
  char listen[256];
  char resp_listen[256]; /* "off": no RESP listener */
  int64_t resp_max_args;
  int64_t resp_max_bulk;
  int64_t resp_max_inline;
  int64_t resp_max_query;
  int64_t resp_idle_timeout_ms; /* 0: never */
  char store[FROND__CFG_STR_MAX];
  char coordinator[256];
  char advertise[128]; /* "auto": the listen address */
  char layout[256];
  int64_t node;
  int64_t threads; /* 0: number of cores */
  char admin_token[256];
  int64_t max_count;
  int64_t max_connections;
  int64_t header_timeout_ms;
  int64_t idle_timeout_ms;
  int64_t drain_timeout_ms;
  int64_t max_body;
  char data_dir[FROND__CFG_STR_MAX];
  int64_t max_ahead_ms;
  int64_t max_wait_ms;
  char log_level[16];
  char leaf_time_zone[16];
} frond__config;

/* Fill c with the defaults. */
void frond__config_defaults(frond__config *c);

/*
** Build the effective configuration from argv (after "serve"), the file
** named by --config and the environment. Sets *print when --print-config
** was given and *help for --help. Returns 0, or -1 after writing a message
** naming the key and the source to errbuf.
*/
int frond__config_load(frond__config *c, int argc, char **argv, int *print,
                       int *help, char *errbuf, size_t errlen);

/* Print the effective configuration as a config file (secrets masked). */
void frond__config_print(const frond__config *c, FILE *f);
/* Print the table of keys for --help. */
void frond__config_usage(FILE *f);

#endif /* FROND_SERVER_CONFIG_H */
