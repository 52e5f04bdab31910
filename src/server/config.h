/* SPDX-License-Identifier: Apache-2.0 */
/*
** config.h -- the server's configuration: one typed table, four sources.
**
** Every key is one row of the table in config.c: its name, type, range or
** values, default and one line of meaning. The config file key, the
** FROND_* environment variable and the --flag are derived from the name,
** and --print-config, --list-keys and --help print from the table, so
** nothing about a key is written twice. Sources, later ones winning:
** defaults, the file given with --config, the environment, flags.
**
** A value is checked against its row when it is read (a usage error, exit
** 2), and so is every source as a whole: a key given twice in one file
** and a FROND_* variable Frond does not read are refused (CONFIG), since
** either would otherwise leave a value nobody meant in force. Rules
** between keys (admin_token beyond loopback, two listeners on one port,
** coordinator against node) are checked at start-up by the part of the
** server they concern.
*/
#ifndef FROND_SERVER_CONFIG_H
#define FROND_SERVER_CONFIG_H

#include "frond.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FROND__CFG_STR_MAX 1024

enum { FROND__TZ_UTC, FROND__TZ_LOCAL };         /* leaf_time_zone */
enum { FROND__AUDIT_REFUSE, FROND__AUDIT_DROP }; /* audit_full */

/* Named ID formats (format.<name> = <spec>): how many, and how long. */
#define FROND__CFG_FORMATS_MAX 64
#define FROND__CFG_FORMAT_NAME_MAX 32
#define FROND__CFG_FORMAT_SPEC_MAX 512
typedef struct frond__cfg_format {
  char name[FROND__CFG_FORMAT_NAME_MAX + 1]; /* [a-z][a-z0-9_]* */
  char spec[FROND__CFG_FORMAT_SPEC_MAX + 1]; /* as given; checked */
} frond__cfg_format;

typedef struct frond__config {
  char listen[256];
  char resp_listen[256];     /* "off": no RESP listener */
  char tls_listen[256];      /* HTTP over TLS; "off": none */
  char resp_tls_listen[256]; /* RESP over TLS; "off": none */
  char tls_cert[FROND__CFG_STR_MAX];
  char tls_key[FROND__CFG_STR_MAX];
  char tls_ca[FROND__CFG_STR_MAX]; /* "": no client certificates */
  int64_t resp_max_args;
  int64_t resp_max_bulk;
  int64_t resp_max_inline;
  int64_t resp_max_query;
  int64_t resp_idle_timeout_ms; /* 0: never */
  char store[FROND__CFG_STR_MAX];
  char coordinator[256];
  char advertise[128]; /* "auto": the listen address */
  char layout[256];
  int layout_change;  /* a layout other than the recorded one is asked for */
  int64_t node;       /* -1: none */
  int64_t datacenter; /* -1: none; else datacenter=N on the coordinator */
  int64_t threads;    /* 0: number of cores */
  char admin_token[256];
  int64_t max_count;
  int64_t max_range;
  int64_t segment_loaders;
  int segment_give_back;
  int64_t ordered_lease_ms;
  int64_t metrics_top_tags;
  char metrics_tags[FROND__CFG_STR_MAX];
  int64_t max_connections;
  int64_t header_timeout_ms;
  int64_t idle_timeout_ms;
  int64_t drain_timeout_ms;
  int64_t max_body;
  char data_dir[FROND__CFG_STR_MAX];
  int64_t max_ahead_ms;
  int64_t max_wait_ms;
  int64_t segment_wait_ms;
  int log_level;  /* FROND_LOG_* */
  int log_format; /* FROND_LOG_TEXT, FROND_LOG_JSON */
  int metrics_histograms;
  int leaf_time_zone;                      /* FROND__TZ_* */
  char order_key_file[FROND__CFG_STR_MAX]; /* "": FROND_ORDER_KEY */
  char clients_file[FROND__CFG_STR_MAX];   /* "": no named clients */
  int open_reads; /* /livez, /healthz, /readyz, /metrics without a client */
  /* format.<name> keys, in the order first given. */
  frond__cfg_format formats[FROND__CFG_FORMATS_MAX];
  int64_t nformats;
  /* Quotas (quota.c): rules NAME=RATE[/BURST], comma-separated. */
  char quota_client[FROND__CFG_STR_MAX];
  char quota_tag[FROND__CFG_STR_MAX];
  int64_t quota_buckets;
  char audit_log[FROND__CFG_STR_MAX]; /* "": no audit log */
  int audit_full;                     /* FROND__AUDIT_* */
  int64_t audit_buffer;
} frond__config;

typedef enum frond__cfg_type {
  FROND__CFG_INT,      /* int64_t in [min, max] */
  FROND__CFG_BOOL,     /* int 0/1: on/off, yes/no, true/false, 1/0 */
  FROND__CFG_STRING,   /* char[size] */
  FROND__CFG_ENUM,     /* int: the index of the name in values */
  FROND__CFG_DURATION, /* int64_t ms in [min, max]; units ms, s, min, h */
  FROND__CFG_SIZE,     /* int64_t bytes in [min, max]; units KiB, MiB, GiB */
  FROND__CFG_ADDRESS,  /* char[size]: host:port, [v6]:port (or off) */
  FROND__CFG_FORMAT    /* a family of keys "<prefix><name>": formats,
                          nformats; the value is an ID format spec */
} frond__cfg_type;

#define FROND__CFG_SECRET 1u /* --print-config shows "(set)" */
#define FROND__CFG_OFF 2u    /* an address may be "off" */

typedef struct frond__cfg_row {
  const char *name; /* file key; --name with '-' for '_'; FROND_NAME. A
                       FORMAT row names its family: "format.<name>"
                       (FROND_FORMAT_<NAME>, --format.<name>) */
  frond__cfg_type type;
  size_t off;                /* the field in frond__config */
  size_t size;               /* STRING, ADDRESS: the field's capacity */
  int64_t min, max;          /* INT, DURATION, SIZE */
  const char *const *values; /* ENUM: the names, NULL-terminated */
  const char *def;           /* the default, as a file would spell it */
  unsigned flags;            /* FROND__CFG_* */
  const char *help;          /* one line */
} frond__cfg_row;

/* The table, in the order --print-config prints it. */
const frond__cfg_row *frond__config_rows(size_t *n);
/* A row's variable: "FROND_" and the name in upper case, '.' as '_'
** ("FROND_FORMAT_<NAME>" for a family), into env[cap]. Returns env. */
const char *frond__config_env_name(const frond__cfg_row *r, char *env,
                                   size_t cap);

/* The row of a key (file or flag spelling, '-' for '_'; a family's member
** "format.x"), or NULL. */
const frond__cfg_row *frond__config_find(const char *name, size_t len);

/* config_load.c: the sources, and the FROND_* variables. */
/* Apply every key's variable (and a family's members) over c. 0 or
** FROND_EINVAL naming the variable. */
int frond__config_load_env(frond__config *c, frond_error *err);
/* CONFIG when name[0..n) is a FROND_* variable Frond does not read (not a
** key's, a family member's or one of the others below), the message
** suggesting the nearest known name; else 0. */
int frond__config_env_unknown(const char *name, size_t n, frond_error *err);
/* frond__config_env_unknown over the whole environment: the first unknown
** FROND_* variable, or 0. Subcommands that read FROND_* variables call it
** first; frond__config_load does. */
int frond__config_env_check(frond_error *err);
/* The variables Frond documents besides the keys': the i-th one's name and
** what reads it (when i < the count). Returns the count. */
size_t frond__config_env_others(size_t i, const char **name, const char **what);

/* Fill c with the defaults. */
void frond__config_defaults(frond__config *c);

/* What `frond serve` was asked to do besides its keys. */
enum {
  FROND__CFG_RUN,
  FROND__CFG_PRINT, /* --print-config */
  FROND__CFG_LIST,  /* --list-keys */
  FROND__CFG_HELP   /* --help, -h */
};

/*
** Build the effective configuration from argv (after "serve"), the file
** named by --config and the environment; *action is a FROND__CFG_*.
** Unless the action is --help or --list-keys, an unknown FROND_* variable
** is refused. Returns 0, or FROND_ECONFIG with a message naming the key,
** the source and the rule.
*/
int frond__config_load(frond__config *c, int argc, char **argv, int *action,
                       frond_error *err);

/*
** Apply the text of a config file (name is used in messages: "name:line")
** over c: lines `key = value`, blank lines and # comments. Returns 0,
** FROND_EINVAL for a line that cannot be read, or FROND_ECONFIG for a key
** given on two lines (a format.<name> too), naming both. Never reads
** outside text[0..len).
*/
int frond__config_parse(frond__config *c, const char *text, size_t len,
                        const char *name, frond_error *err);

/* Set key (file or flag spelling) to value, checked against its row.
** source names where the value came from in a message. */
int frond__config_set(frond__config *c, const char *key, size_t key_len,
                      const char *value, const char *source, frond_error *err);

/* The effective configuration as a config file (secrets masked). */
void frond__config_print(const frond__config *c, FILE *f);
/* The keys for --help. */
void frond__config_usage(FILE *f);
/* One tab-separated line per key: key, environment, flag, type, default,
** range, meaning; after a header line that begins with '#'. */
void frond__config_list(FILE *f);

/* A listening address, parsed. */
typedef struct frond__addr {
  char host[256]; /* numeric; localhost becomes 127.0.0.1 */
  int port;
  int loopback;
} frond__addr;

/* Parse an ADDRESS value of key. Returns 0, 1 for "off", or FROND_EINVAL. */
int frond__config_addr(const char *key, const char *text, frond__addr *a,
                       frond_error *err);

/*
** The coordinator's URI from `coordinator`, `node` and `store`:
**   auto (the default)  a lease in the store's database, "lease+<store>"
**                       (several servers on one store get distinct node
**                       IDs); with `node` set, that node ID registered
**                       there (below); with store = none, "static:0";
**                       with a multi: store, INVAL (name one database)
**   static, static:N    node N (`node`, else 0; both must agree), registered
**                       in the store's database as a lease pinned to it,
**                       "lease+<store>?node=N": a second live holder is
**                       refused, and the lease hands it to nobody else;
**                       unregistered with store = none or
**                       static:N?unregistered=1 ("static:N"); INVAL with a
**                       multi: store
**   lease+...           as given; `node` pins it ("?node=N")
**   anything else       as given; `node` must be unset
** Returns 0 or FROND_EINVAL.
*/
int frond__config_coord_uri(const frond__config *c, char *uri, size_t cap,
                            frond_error *err);
/* The node ID a coordinator URI names itself (static:N, lease+...?node=N),
** or -1 when the coordinator chooses. */
int64_t frond__config_pinned_node(const char *uri);

#endif /* FROND_SERVER_CONFIG_H */
