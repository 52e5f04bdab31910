/*
** config.c -- the configuration table and its sources (see config.h).
**
** Adding a key is adding one row below and a field to frond__config.
*/
#include "server/config.h"

#include "core/internal.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { T_STR, T_INT };

typedef struct cfg_row {
  const char *name;
  int type;
  size_t off;
  size_t size; /* T_STR: capacity of the field */
  int64_t min, max;
  const char *def;
  const char *env;
  int secret;
  const char *help;
} cfg_row;

#define STR(f)                                                                 \
  T_STR, offsetof(frond__config, f), sizeof(((frond__config *)0)->f)
#define INT(f) T_INT, offsetof(frond__config, f), 0

static const cfg_row rows[] = {
    {"listen", STR(listen), 0, 0, "127.0.0.1:8080", "FROND_LISTEN", 0,
     "HTTP address, host:port (IPv6 as [::1]:8080)"},
    {"resp_listen", STR(resp_listen), 0, 0, "127.0.0.1:6380",
     "FROND_RESP_LISTEN", 0,
     "Redis protocol (RESP) address, host:port, or off"},
    {"resp_max_args", INT(resp_max_args), 1, 1024, "1024",
     "FROND_RESP_MAX_ARGS", 0, "RESP: most arguments in one command"},
    {"resp_max_bulk", INT(resp_max_bulk), 16, 65536, "65536",
     "FROND_RESP_MAX_BULK", 0, "RESP: longest argument in bytes"},
    {"resp_max_inline", INT(resp_max_inline), 16, 65536, "65536",
     "FROND_RESP_MAX_INLINE", 0, "RESP: longest inline command line"},
    {"resp_max_query", INT(resp_max_query), 65536, 67108864, "1048576",
     "FROND_RESP_MAX_QUERY", 0, "RESP: input buffered per connection"},
    {"resp_idle_timeout_ms", INT(resp_idle_timeout_ms), 0, 86400000, "0",
     "FROND_RESP_IDLE_TIMEOUT_MS", 0,
     "RESP: close idle connections after this, 0 = never (as Redis)"},
    {"store", STR(store), 0, 0, FROND_STORE_DEFAULT, "FROND_STORE", 0,
     "segment store URI (sqlite:///path, postgresql://...), or none"},
    {"coordinator", STR(coordinator), 0, 0, "static", "FROND_COORDINATOR", 0,
     "node ID source: static (use `node`), static:N, "
     "zk://host:port[,host:port]/cluster, lease+sqlite:///path.db or "
     "lease+postgresql://..."},
    {"advertise", STR(advertise), 0, 0, "auto", "FROND_ADVERTISE", 0,
     "identity given to the coordinator, host:port (containers, NAT); auto: "
     "the listen address (the first non-loopback IPv4 address when "
     "listening on all) and the HTTP port"},
    {"layout", STR(layout), 0, 0, FROND_LAYOUT_DEFAULT, "FROND_LAYOUT", 0,
     "snowflake layout: preset name or time=..,node=..,seq=.. spec"},
    {"node", INT(node), 0, INT64_MAX, "0", "FROND_NODE", 0,
     "node (worker) ID for the static coordinator"},
    {"threads", INT(threads), 0, 256, "0", "FROND_THREADS", 0,
     "event-loop threads, 0 = number of cores"},
    {"admin_token", STR(admin_token), 0, 0, "", "FROND_ADMIN_TOKEN", 1,
     "bearer token for admin endpoints; required beyond loopback"},
    {"max_count", INT(max_count), 1, 10000000, "100000", "FROND_MAX_COUNT", 0,
     "largest batch (?count=) per request"},
    {"max_connections", INT(max_connections), 1, 1000000, "10000",
     "FROND_MAX_CONNECTIONS", 0, "open client connections, all threads"},
    {"header_timeout_ms", INT(header_timeout_ms), 100, 3600000, "10000",
     "FROND_HEADER_TIMEOUT_MS", 0, "time to receive a whole request"},
    {"idle_timeout_ms", INT(idle_timeout_ms), 100, 86400000, "60000",
     "FROND_IDLE_TIMEOUT_MS", 0, "keep-alive connection idle time"},
    {"drain_timeout_ms", INT(drain_timeout_ms), 0, 600000, "5000",
     "FROND_DRAIN_TIMEOUT_MS", 0, "on SIGTERM, time to finish in-flight"},
    {"max_body", INT(max_body), 0, 1048576, "4096", "FROND_MAX_BODY", 0,
     "largest request body in bytes (admin JSON)"},
    {"data_dir", STR(data_dir), 0, 0, ".", "FROND_DATA_DIR", 0,
     "directory of the high-water file frond-node-N.hw"},
    {"max_ahead_ms", INT(max_ahead_ms), 0, 3600000, "1000",
     "FROND_MAX_AHEAD_MS", 0, "snowflake clock may run this far ahead"},
    {"max_wait_ms", INT(max_wait_ms), -1, 60000, "-1", "FROND_MAX_WAIT_MS", 0,
     "wait this long for the wall clock, then CLOCK_BEHIND; -1: 10 ms or "
     "two time units of the layout, whichever is longer"},
    {"log_level", STR(log_level), 0, 0, "info", "FROND_LOG_LEVEL", 0,
     "error, warn, info or debug"},
    {"leaf_time_zone", STR(leaf_time_zone), 0, 0, "utc", "FROND_LEAF_TIME_ZONE",
     0, "zone of /decodeSnowflakeId's timestamp text: utc or local"},
};

static const cfg_row *find_row(const char *name, size_t len) {
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++) {
    size_t j;
    const char *n = rows[i].name;
    if (strlen(n) != len)
      continue;
    /* Flags spell '_' as '-'; accept both everywhere. */
    for (j = 0; j < len; j++)
      if (n[j] != name[j] && !(n[j] == '_' && name[j] == '-'))
        break;
    if (j == len)
      return &rows[i];
  }
  return NULL;
}

static int set_value(frond__config *c, const cfg_row *r, const char *v,
                     const char *source, char *errbuf, size_t errlen) {
  char *field = (char *)c + r->off;
  if (r->type == T_STR) {
    size_t n = strlen(v);
    if (n >= r->size) {
      snprintf(errbuf, errlen, "%s: %s is too long (at most %zu bytes)", source,
               r->name, r->size - 1);
      return -1;
    }
    memcpy(field, v, n + 1);
    return 0;
  } else {
    int64_t n;
    if (frond__parse_i64(v, strlen(v), &n) != 0 || n < r->min || n > r->max) {
      snprintf(errbuf, errlen,
               "%s: %s must be an integer in [%lld, %lld], not '%s'", source,
               r->name, (long long)r->min, (long long)r->max, v);
      return -1;
    }
    memcpy(field, &n, sizeof n);
    return 0;
  }
}

void frond__config_defaults(frond__config *c) {
  size_t i;
  char err[64];
  memset(c, 0, sizeof *c);
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++)
    (void)set_value(c, &rows[i], rows[i].def, "default", err, sizeof err);
}

static char *trim(char *s) {
  char *e;
  while (isspace((unsigned char)*s))
    s++;
  e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = '\0';
  return s;
}

static int load_file(frond__config *c, const char *path, char *errbuf,
                     size_t errlen) {
  FILE *f = fopen(path, "r");
  char line[2048], source[1200];
  int lineno = 0;
  if (f == NULL) {
    snprintf(errbuf, errlen, "cannot open config file %s", path);
    return -1;
  }
  while (fgets(line, sizeof line, f) != NULL) {
    char *eq, *k, *v;
    const cfg_row *r;
    lineno++;
    snprintf(source, sizeof source, "%s:%d", path, lineno);
    if (strchr(line, '\n') == NULL && !feof(f)) {
      snprintf(errbuf, errlen, "%s: line too long", source);
      fclose(f);
      return -1;
    }
    k = trim(line);
    if (*k == '\0' || *k == '#')
      continue;
    eq = strchr(k, '=');
    if (eq == NULL) {
      snprintf(errbuf, errlen, "%s: expected key = value", source);
      fclose(f);
      return -1;
    }
    *eq = '\0';
    k = trim(k);
    v = trim(eq + 1);
    r = find_row(k, strlen(k));
    if (r == NULL) {
      snprintf(errbuf, errlen, "%s: unknown key '%s'", source, k);
      fclose(f);
      return -1;
    }
    if (set_value(c, r, v, source, errbuf, errlen) != 0) {
      fclose(f);
      return -1;
    }
  }
  fclose(f);
  return 0;
}

int frond__config_load(frond__config *c, int argc, char **argv, int *print,
                       int *help, char *errbuf, size_t errlen) {
  const char *file = NULL;
  size_t i;
  int pass, a;
  frond__config_defaults(c);
  *print = *help = 0;
  /* Pass 0 finds --config; pass 1 applies flags over file and env. */
  for (pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      if (file != NULL && load_file(c, file, errbuf, errlen) != 0)
        return -1;
      for (i = 0; i < FROND__ARRAY_SIZE(rows); i++) {
        const char *v = getenv(rows[i].env);
        if (v != NULL &&
            set_value(c, &rows[i], v, rows[i].env, errbuf, errlen) != 0)
          return -1;
      }
    }
    for (a = 0; a < argc; a++) {
      const char *arg = argv[a], *name, *val, *eq;
      const cfg_row *r;
      size_t nlen;
      if (strcmp(arg, "--print-config") == 0) {
        *print = 1;
        continue;
      }
      if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        *help = 1;
        continue;
      }
      if (strncmp(arg, "--", 2) != 0) {
        snprintf(errbuf, errlen, "unexpected argument '%s'", arg);
        return -1;
      }
      name = arg + 2;
      eq = strchr(name, '=');
      nlen = eq ? (size_t)(eq - name) : strlen(name);
      if (eq != NULL) {
        val = eq + 1;
      } else if (a + 1 < argc) {
        val = argv[++a];
      } else {
        snprintf(errbuf, errlen, "flag %s needs a value", arg);
        return -1;
      }
      if (nlen == 6 && memcmp(name, "config", 6) == 0) {
        file = val;
        continue;
      }
      r = find_row(name, nlen);
      if (r == NULL) {
        snprintf(errbuf, errlen, "unknown flag '--%.*s'", (int)nlen, name);
        return -1;
      }
      if (pass == 1 && set_value(c, r, val, "flag", errbuf, errlen) != 0)
        return -1;
    }
  }
  return 0;
}

void frond__config_print(const frond__config *c, FILE *f) {
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++) {
    const cfg_row *r = &rows[i];
    const char *field = (const char *)c + r->off;
    if (r->type == T_STR)
      fprintf(f, "%s = %s\n", r->name, r->secret && field[0] ? "(set)" : field);
    else
      fprintf(f, "%s = %lld\n", r->name,
              (long long)*(const int64_t *)(const void *)field);
  }
}

void frond__config_usage(FILE *f) {
  size_t i;
  fprintf(f, "usage: frond serve [--config FILE] [--print-config] "
             "[--KEY VALUE]...\n\nkeys (flag, environment, default; in a file: "
             "key_name = value):\n");
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++) {
    char flag[32], *p;
    snprintf(flag, sizeof flag, "%s", rows[i].name);
    for (p = flag; *p; p++)
      if (*p == '_')
        *p = '-';
    fprintf(f, "  --%-18s %-24s %-16s %s\n", flag, rows[i].env,
            rows[i].def[0] ? rows[i].def : "(none)", rows[i].help);
  }
}
