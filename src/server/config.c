/* SPDX-License-Identifier: Apache-2.0 */
/*
** config.c -- the configuration table, its values and the file's text
** (see config.h); reading the sources in order is config_load.c's.
**
** Adding a key is adding one row below and a field to frond__config: the
** file key, environment variable, flag, checks, --print-config, --help and
** --list-keys all follow from the row.
*/
#include "server/config.h"

#include "base/base.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(f) offsetof(frond__config, f)
#define CAP(f) sizeof(((frond__config *)0)->f)

/* name, type, field, [capacity], [range], [values], default, flags, help */
#define INT(n, f, lo, hi, def, help)                                           \
  { n, FROND__CFG_INT, FIELD(f), 0, lo, hi, NULL, def, 0, help }
#define MS(n, f, lo, hi, def, help)                                            \
  { n, FROND__CFG_DURATION, FIELD(f), 0, lo, hi, NULL, def, 0, help }
#define BYTES(n, f, lo, hi, def, help)                                         \
  { n, FROND__CFG_SIZE, FIELD(f), 0, lo, hi, NULL, def, 0, help }
#define STR(n, f, def, flags, help)                                            \
  { n, FROND__CFG_STRING, FIELD(f), CAP(f), 0, 0, NULL, def, flags, help }
#define ADDR(n, f, def, flags, help)                                           \
  { n, FROND__CFG_ADDRESS, FIELD(f), CAP(f), 0, 0, NULL, def, flags, help }
#define ENUM(n, f, values, def, help)                                          \
  { n, FROND__CFG_ENUM, FIELD(f), 0, 0, 0, values, def, 0, help }
#define FORMATS(n, help)                                                       \
  { n, FROND__CFG_FORMAT, FIELD(formats), 0, 0, 0, NULL, "", 0, help }
#define BOOL(n, f, def, help)                                                  \
  { n, FROND__CFG_BOOL, FIELD(f), 0, 0, 0, NULL, def, 0, help }

static const char *const log_levels[] = {"error", "warn", "info", "debug",
                                         NULL};
static const char *const time_zones[] = {"utc", "local", NULL};
/* In the order of FROND_LOG_TEXT, FROND_LOG_JSON. */
static const char *const log_formats[] = {"text", "json", NULL};
/* In the order of FROND__AUDIT_REFUSE, FROND__AUDIT_DROP. */
static const char *const audit_fulls[] = {"refuse", "drop", NULL};

static const frond__cfg_row rows[] = {
    ADDR("listen", listen, "127.0.0.1:8080", 0,
         "HTTP address, host:port (IPv6 as [::1]:8080)"),
    ADDR("resp_listen", resp_listen, "127.0.0.1:6380", FROND__CFG_OFF,
         "Redis protocol (RESP) address, host:port, or off"),
    ADDR("tls_listen", tls_listen, "off", FROND__CFG_OFF,
         "HTTPS address (HTTP over TLS), host:port, or off"),
    ADDR("resp_tls_listen", resp_tls_listen, "off", FROND__CFG_OFF,
         "Redis protocol over TLS address, host:port, or off"),
    STR("tls_cert", tls_cert, "", 0,
        "PEM certificate chain of the TLS listeners, the server's first; "
        "read again on SIGHUP"),
    STR("tls_key", tls_key, "", 0,
        "PEM private key of tls_cert (unencrypted, readable by the server's "
        "user only); read again on SIGHUP"),
    STR("tls_ca", tls_ca, "", 0,
        "PEM CA certificates of client certificates: set, every TLS client "
        "must present one they signed (mTLS); empty: none asked for"),
    INT("resp_max_args", resp_max_args, 1, 1024, "1024",
        "RESP: most arguments in one command"),
    BYTES("resp_max_bulk", resp_max_bulk, 16, 65536, "65536",
          "RESP: longest argument in bytes"),
    BYTES("resp_max_inline", resp_max_inline, 16, 65536, "65536",
          "RESP: longest inline command line"),
    BYTES("resp_max_query", resp_max_query, 65536, 67108864, "1048576",
          "RESP: input buffered per connection"),
    MS("resp_idle_timeout_ms", resp_idle_timeout_ms, 0, 86400000, "0",
       "RESP: close idle connections after this, 0 = never (as Redis)"),
    STR("store", store, FROND_STORE_DEFAULT, 0,
        "segment store URI (sqlite:///path, postgresql://..., mysql://...), "
        "or none"),
    STR("coordinator", coordinator, "auto", 0,
        "node ID source: auto (a lease in the store's database, or `node` "
        "registered there; static node 0 with store = none), static (use "
        "`node`), static:N, zk://host:port[,host:port]/cluster, "
        "etcd://host:port[,host:port]/prefix, "
        "lease+sqlite:///path.db, lease+postgresql://... or "
        "lease+mysql://..."),
    STR("advertise", advertise, "auto", 0,
        "identity given to the coordinator, host:port (containers, NAT); auto: "
        "the listen address (the first non-loopback IPv4 address when "
        "listening on all) and the HTTP port"),
    STR("layout", layout, FROND_LAYOUT_DEFAULT, 0,
        "snowflake layout: preset name or time=..,node=..,seq=.. spec"),
    BOOL("layout_change", layout_change, "off",
         "start under a layout other than the one the data directory or the "
         "store records, switching the record (the old layout is then "
         "locked out for a while)"),
    INT("node", node, -1, INT64_MAX, "-1",
        "a static node (worker) ID, unique per live process: registered in "
        "the store when there is one; -1: none, the coordinator hands one "
        "out"),
    INT("datacenter", datacenter, -1, 65535, "-1",
        "the datacenter whose node IDs the coordinator hands out (a layout "
        "with dc bits; zk://, etcd:// or lease+): datacenter=N on its URI, "
        "recorded "
        "there; -1: none"),
    INT("threads", threads, 0, 256, "0",
        "event-loop threads, 0 = number of cores"),
    STR("admin_token", admin_token, "", FROND__CFG_SECRET,
        "the client admin, with every right (HTTP Bearer, RESP AUTH); with "
        "it or clients_file set every request needs a credential; one of "
        "them is required beyond loopback"),
    INT("max_count", max_count, 1, 10000000, "100000",
        "largest batch (?count=) per request"),
    INT("max_range", max_range, 1, 1073741824, "1000000",
        "largest range lease (/v1/segment/{tag}/range?count=, ID.RANGE)"),
    INT("segment_loaders", segment_loaders, 1, 64, "4",
        "threads loading segments, each with its own store connection"),
    MS("ordered_lease_ms", ordered_lease_ms, 300, 600000, "3000",
       "how long a node's claim on an ordered tag lasts unless renewed: "
       "after a crash, the tag waits this long for another owner"),
    BOOL("segment_give_back", segment_give_back, "on",
         "on a clean stop, give the rest of each tag's last segment back to "
         "the store when no one allocated after it"),
    INT("metrics_top_tags", metrics_top_tags, 0, 1000, "10",
        "per-tag series in /metrics (and INFO) for the N fastest tags"),
    STR("metrics_tags", metrics_tags, "", 0,
        "per-tag series in /metrics (and INFO) for these tags, "
        "comma-separated, whatever their rate"),
    INT("max_connections", max_connections, 1, 1000000, "10000",
        "open client connections, all threads"),
    MS("header_timeout_ms", header_timeout_ms, 100, 3600000, "10000",
       "time to receive a whole request"),
    MS("idle_timeout_ms", idle_timeout_ms, 100, 86400000, "60000",
       "keep-alive connection idle time"),
    MS("drain_timeout_ms", drain_timeout_ms, 0, 600000, "5000",
       "on SIGTERM, time to finish in-flight"),
    BYTES("max_body", max_body, 0, 1048576, "4096",
          "largest request body in bytes (admin JSON)"),
    STR("data_dir", data_dir, ".", 0,
        "directory of the high-water file frond-node-N.hw"),
    MS("max_ahead_ms", max_ahead_ms, 0, 3600000, "1000",
       "snowflake clock may run this far ahead"),
    MS("max_wait_ms", max_wait_ms, -1, 60000, "-1",
       "wait this long for the wall clock, then CLOCK_BEHIND; -1: 10 ms or "
       "two time units of the layout, whichever is longer"),
    MS("segment_wait_ms", segment_wait_ms, 1, 60000, "50",
       "both segments of a tag used up: wait this long for the store's next "
       "range, then SEGMENT_UNAVAILABLE"),
    ENUM("log_level", log_level, log_levels, "info",
         "error, warn, info or debug"),
    ENUM("log_format", log_format, log_formats, "text",
         "log lines as text (frond: level: message) or json (one object a "
         "line, with the node and the layout)"),
    BOOL("metrics_histograms", metrics_histograms, "on",
         "latency histograms in /metrics (HTTP by route, RESP by command)"),
    ENUM("leaf_time_zone", leaf_time_zone, time_zones, "utc",
         "zone of /decodeSnowflakeId's timestamp text: utc or local"),
    STR("order_key_file", order_key_file, "", 0,
        "file of order number keys, one V:KEY per line, readable by the "
        "server's user only; empty: the variable FROND_ORDER_KEY"),
    STR("quota_client", quota_client, "", 0,
        "IDs a second per client, NAME=RATE[/BURST] comma-separated; NAME a "
        "client, anonymous, * (each client) or a prefix*"),
    STR("quota_tag", quota_tag, "", 0,
        "IDs a second per segment tag, TAG=RATE[/BURST] comma-separated; TAG "
        "a tag, * (each tag) or a prefix* such as orders:*"),
    INT("quota_buckets", quota_buckets, 16, 1048576, "4096",
        "buckets kept for the names of quota patterns, per kind (clients, "
        "tags)"),
    STR("clients_file", clients_file, "", 0,
        "file of named clients, one a line: NAME secret=HASH|cert=NAME "
        "rights=issue,read,admin tags=GLOB,... formats=GLOB,... "
        "(docs/reference/configuration.md); read again on SIGHUP"),
    BOOL("open_reads", open_reads, "on",
         "with credentials configured, /livez, /healthz, /readyz and "
         "/metrics stay open to probes without one"),
    FORMATS("format.<name>",
            "a named ID format, e.g. format.orders = "
            "order:digits=12,check=damm,key=1 (docs/formats.md): served at "
            "/v1/format/<name> and by ID.FORMAT <name>"),
    STR("audit_log", audit_log, "", 0,
        "audit log file: who was given which IDs, one JSON object a line, "
        "reopened on SIGHUP; empty: none"),
    ENUM("audit_full", audit_full, audit_fulls, "refuse",
         "when the audit log cannot keep up (disk full, unwritable, "
         "audit_buffer waiting): refuse issuing IDs (AUDIT_UNAVAILABLE) or "
         "drop records (counted and logged)"),
    BYTES("audit_buffer", audit_buffer, 65536, 1073741824, "16777216",
          "audit records held in memory while the log is behind"),
};

static const char *const type_names[] = {
    "int", "bool", "string", "enum", "duration", "size", "address", "format"};

/* Units a DURATION (in ms) or SIZE (in bytes) may carry; the bare number
** is the first unit. */
typedef struct unit {
  const char *name;
  int64_t scale;
} unit;
static const unit ms_units[] = {
    {"ms", 1}, {"s", 1000}, {"min", 60000}, {"h", 3600000}, {NULL, 0}};
static const unit byte_units[] = {{"B", 1},
                                  {"KiB", 1024},
                                  {"MiB", 1024 * 1024},
                                  {"GiB", 1024 * 1024 * 1024},
                                  {NULL, 0}};

const frond__cfg_row *frond__config_rows(size_t *n) {
  *n = FROND__ARRAY_SIZE(rows);
  return rows;
}

const char *frond__config_env_name(const frond__cfg_row *r, char *env,
                                   size_t cap) {
  size_t i = 0, j;
  i = (size_t)snprintf(env, cap, "FROND_");
  for (j = 0; r->name[j] != '\0' && i + 1 < cap; j++)
    env[i++] =
        r->name[j] == '.' ? '_' : (char)toupper((unsigned char)r->name[j]);
  env[i] = '\0';
  return env;
}

/* "--" and the name with '-' for '_', into flag[64]. */
static const char *flag_name(const frond__cfg_row *r, char *flag, size_t cap) {
  size_t i, j;
  i = (size_t)snprintf(flag, cap, "--");
  for (j = 0; r->name[j] != '\0' && i + 1 < cap; j++)
    flag[i++] = r->name[j] == '_' ? '-' : r->name[j];
  flag[i] = '\0';
  return flag;
}

/* The length of a FORMAT row's prefix ("format." of "format.<name>"). */
static size_t family_prefix(const frond__cfg_row *r) {
  return strcspn(r->name, "<");
}

const frond__cfg_row *frond__config_find(const char *name, size_t len) {
  size_t i, j;
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++) {
    const char *n = rows[i].name;
    if (rows[i].type == FROND__CFG_FORMAT) {
      size_t p = family_prefix(&rows[i]);
      if (len > p && memcmp(name, n, p) == 0)
        return &rows[i];
      continue;
    }
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

int frond__config_addr(const char *key, const char *text, frond__addr *a,
                       frond_error *err) {
  const char *l = text, *colon;
  unsigned char ip[16];
  size_t hl;
  int64_t p;
  if (strcmp(l, "off") == 0)
    return 1;
  if (l[0] == '[') {
    const char *rb = strchr(l, ']');
    if (rb == NULL || rb[1] != ':')
      goto bad;
    hl = (size_t)(rb - l - 1);
    colon = rb + 1;
    l++;
  } else {
    colon = strrchr(l, ':');
    if (colon == NULL)
      goto bad;
    hl = (size_t)(colon - l);
  }
  if (hl >= sizeof a->host)
    goto bad;
  memcpy(a->host, l, hl);
  a->host[hl] = '\0';
  if (strcmp(a->host, "localhost") == 0)
    strcpy(a->host, "127.0.0.1");
  if (frond__parse_i64(colon + 1, strlen(colon + 1), &p) != 0 || p < 1 ||
      p > 65535)
    goto bad;
  if (inet_pton(strchr(a->host, ':') ? AF_INET6 : AF_INET, a->host, ip) != 1)
    goto bad;
  a->port = (int)p;
  a->loopback = strncmp(a->host, "127.", 4) == 0 || strcmp(a->host, "::1") == 0;
  return 0;
bad:
  return frond__fail(err, FROND_EINVAL,
                     "%s must be host:port or [v6]:port with a numeric IP "
                     "address, not '%s'",
                     key, text);
}

/* A number with an optional unit from units (NULL: none) into *out. */
static int parse_number(const char *v, const unit *units, int64_t *out) {
  size_t n = strlen(v), digits = 0;
  int64_t x;
  if (v[0] == '-' || v[0] == '+')
    digits = 1;
  while (digits < n && v[digits] >= '0' && v[digits] <= '9')
    digits++;
  if (frond__parse_i64(v, digits, &x) != 0)
    return -1;
  if (digits == n) {
    *out = x;
    return 0;
  }
  for (; units != NULL && units->name != NULL; units++) {
    if (strcmp(v + digits, units->name) != 0)
      continue;
    if (x < 0 || x > INT64_MAX / units->scale)
      return -1;
    *out = x * units->scale;
    return 0;
  }
  return -1;
}

/* format.<name> = spec: the name is [a-z][a-z0-9_]*, at most 32 bytes;
** the spec must build a format (a missing key is only known at start,
** once the keys are read). The same name again replaces the spec. */
static int set_format(frond__config *c, const frond__cfg_row *r,
                      const char *key, size_t klen, const char *v,
                      const char *source, frond_error *err) {
  size_t p = family_prefix(r), nlen = klen - p, i;
  const char *name = key + p;
  frond__cfg_format *slot = NULL;
  frond_format *f;
  frond_error e = {0, ""};
  int rc;
  for (i = 0; i < nlen; i++)
    if (!((name[i] >= 'a' && name[i] <= 'z') ||
          (i > 0 && ((name[i] >= '0' && name[i] <= '9') || name[i] == '_'))))
      break;
  if (nlen > FROND__CFG_FORMAT_NAME_MAX || i != nlen)
    return frond__fail(err, FROND_EINVAL,
                       "%s: '%.*s': a format's name is a lower-case letter, "
                       "then letters, digits or '_', at most %d bytes",
                       source, (int)(klen > 80 ? 80 : klen), key,
                       FROND__CFG_FORMAT_NAME_MAX);
  if (strlen(v) > FROND__CFG_FORMAT_SPEC_MAX)
    return frond__fail(err, FROND_EINVAL,
                       "%s: %.*s is too long (at most %d bytes)", source,
                       (int)klen, key, FROND__CFG_FORMAT_SPEC_MAX);
  rc = frond_format_create(&f, v, NULL, NULL, NULL, &e);
  frond_format_free(f);
  if (rc != 0 && rc != FROND_EKEY_INVALID)
    return frond__fail(err, FROND_EINVAL, "%s: %.*s: %s: %s", source, (int)klen,
                       key, frond_err_name(rc), e.message);
  for (i = 0; i < (size_t)c->nformats && slot == NULL; i++)
    if (strlen(c->formats[i].name) == nlen &&
        memcmp(c->formats[i].name, name, nlen) == 0)
      slot = &c->formats[i];
  if (slot == NULL) {
    if (c->nformats == FROND__CFG_FORMATS_MAX)
      return frond__fail(err, FROND_EINVAL,
                         "%s: %.*s: at most %d formats can be named", source,
                         (int)klen, key, FROND__CFG_FORMATS_MAX);
    slot = &c->formats[c->nformats++];
    memcpy(slot->name, name, nlen);
    slot->name[nlen] = '\0';
  }
  /* The whole field, so that equal configurations are equal bytes. */
  memset(slot->spec, 0, sizeof slot->spec);
  memcpy(slot->spec, v, strlen(v));
  return 0;
}

static int set_row(frond__config *c, const frond__cfg_row *r, const char *key,
                   size_t klen, const char *v, const char *source,
                   frond_error *err) {
  char *field = (char *)c + r->off;
  int64_t n;
  int i;
  frond__addr a;
  switch (r->type) {
  case FROND__CFG_FORMAT:
    return set_format(c, r, key, klen, v, source, err);
  case FROND__CFG_ADDRESS:
    if (r->flags & FROND__CFG_OFF ? frond__config_addr(r->name, v, &a, NULL) < 0
                                  : frond__config_addr(r->name, v, &a, NULL))
      return frond__fail(err, FROND_EINVAL,
                         "%s: %s must be host:port or [v6]:port with a "
                         "numeric IP address%s, not '%s'",
                         source, r->name,
                         r->flags & FROND__CFG_OFF ? " (or off)" : "", v);
    /* Checked; stored as written, as a string is. */
    __attribute__((fallthrough));
  case FROND__CFG_STRING:
    n = (int64_t)strlen(v);
    if ((size_t)n >= r->size)
      return frond__fail(err, FROND_EINVAL,
                         "%s: %s is too long (at most %zu bytes)", source,
                         r->name, r->size - 1);
    memcpy(field, v, (size_t)n + 1);
    return 0;
  case FROND__CFG_ENUM:
    for (i = 0; r->values[i] != NULL; i++)
      if (strcmp(v, r->values[i]) == 0) {
        memcpy(field, &i, sizeof i);
        return 0;
      }
    {
      char list[160] = "";
      for (i = 0; r->values[i] != NULL; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 i ? ", " : "", r->values[i]);
      return frond__fail(err, FROND_EINVAL,
                         "%s: %s must be one of %s, not '%s'", source, r->name,
                         list, v);
    }
  case FROND__CFG_BOOL:
    if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") ||
        !strcmp(v, "1"))
      i = 1;
    else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") ||
             !strcmp(v, "0"))
      i = 0;
    else
      return frond__fail(err, FROND_EINVAL,
                         "%s: %s must be on or off (yes/no, true/false, "
                         "1/0), not '%s'",
                         source, r->name, v);
    memcpy(field, &i, sizeof i);
    return 0;
  case FROND__CFG_DURATION:
  case FROND__CFG_SIZE:
  case FROND__CFG_INT: {
    int dur = r->type == FROND__CFG_DURATION, size = r->type == FROND__CFG_SIZE;
    if (parse_number(v,
                     dur    ? ms_units
                     : size ? byte_units
                            : NULL,
                     &n) != 0 ||
        n < r->min || n > r->max)
      return frond__fail(
          err, FROND_EINVAL,
          "%s: %s must be an integer in [%lld, %lld]%s, not '%s'", source,
          r->name, (long long)r->min, (long long)r->max,
          dur    ? " ms (or with a unit: 500ms, 10s, 5min, 1h)"
          : size ? " bytes (or with a unit: 64KiB, 1MiB)"
                 : "",
          v);
    memcpy(field, &n, sizeof n);
    return 0;
  }
  }
  return frond__fail(err, FROND_EINVAL, "%s: %s has no type", source, r->name);
}

int frond__config_set(frond__config *c, const char *key, size_t key_len,
                      const char *value, const char *source, frond_error *err) {
  const frond__cfg_row *r = frond__config_find(key, key_len);
  if (r == NULL)
    return frond__fail(err, FROND_EINVAL, "%s: unknown key '%.*s'", source,
                       (int)key_len, key);
  return set_row(c, r, key, key_len, value, source, err);
}

void frond__config_defaults(frond__config *c) {
  size_t i;
  memset(c, 0, sizeof *c);
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++)
    if (rows[i].type != FROND__CFG_FORMAT) /* a family has no default */
      (void)set_row(c, &rows[i], rows[i].name, strlen(rows[i].name),
                    rows[i].def, "default", NULL);
}

/* Without leading and trailing white space, in place. */
static char *trim(char *s) {
  char *e;
  while (isspace((unsigned char)*s))
    s++;
  e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = '\0';
  return s;
}

#define LINE_MAX_LEN 2047

/* Where a key was first given in a file: its row's line, or for a family
** member the line of each name. */
typedef struct seen {
  int line[FROND__ARRAY_SIZE(rows)];
  int nnames;
  struct {
    char name[FROND__CFG_FORMAT_NAME_MAX + 1];
    int line;
  } names[FROND__CFG_FORMATS_MAX];
} seen;

/* Refuse key k (set on lineno) when an earlier line gave it: the last line
** would win, silently; neither is what all who edit the file meant. */
static int given_twice(seen *s, const char *k, int lineno, const char *source,
                       frond_error *err) {
  const frond__cfg_row *r = frond__config_find(k, strlen(k));
  int *first = NULL, i;
  if (r == NULL)
    return 0; /* frond__config_set names it */
  if (r->type != FROND__CFG_FORMAT) {
    first = &s->line[r - rows];
  } else {
    const char *n = k + family_prefix(r);
    for (i = 0; i < s->nnames && first == NULL; i++)
      if (strcmp(s->names[i].name, n) == 0)
        first = &s->names[i].line;
    if (first == NULL && s->nnames < FROND__CFG_FORMATS_MAX &&
        strlen(n) <= FROND__CFG_FORMAT_NAME_MAX) {
      snprintf(s->names[s->nnames].name, sizeof s->names[0].name, "%s", n);
      first = &s->names[s->nnames++].line;
    }
    if (first == NULL)
      return 0; /* a name set_format refuses */
  }
  if (*first == 0) {
    *first = lineno;
    return 0;
  }
  return frond__fail(err, FROND_ECONFIG,
                     "%s: %s is given twice, on line %d and again on line "
                     "%d: the later line would silently win; keep one",
                     source, k, *first, lineno);
}

int frond__config_parse(frond__config *c, const char *text, size_t len,
                        const char *name, frond_error *err) {
  const char *p = text, *end = text + len;
  char line[LINE_MAX_LEN + 1], source[1200];
  int lineno = 0, rc;
  seen s;
  memset(&s, 0, sizeof s);
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl : end) - p);
    char *eq, *k, *v;
    lineno++;
    snprintf(source, sizeof source, "%s:%d", name, lineno);
    if (n > LINE_MAX_LEN)
      return frond__fail(err, FROND_EINVAL, "%s: line too long", source);
    if (memchr(p, '\0', n) != NULL)
      return frond__fail(err, FROND_EINVAL, "%s: NUL byte in the line", source);
    memcpy(line, p, n);
    line[n] = '\0';
    p = nl ? nl + 1 : end;
    k = trim(line);
    if (*k == '\0' || *k == '#')
      continue;
    eq = strchr(k, '=');
    if (eq == NULL)
      return frond__fail(err, FROND_EINVAL, "%s: expected key = value", source);
    *eq = '\0';
    k = trim(k);
    v = trim(eq + 1);
    if ((rc = given_twice(&s, k, lineno, source, err)) != 0)
      return rc;
    if (frond__config_set(c, k, strlen(k), v, source, err) != 0)
      return FROND_EINVAL;
  }
  return 0;
}

/* The value of r in c as a config file spells it. */
static const char *value_text(const frond__config *c, const frond__cfg_row *r,
                              char *buf, size_t cap) {
  const char *field = (const char *)c + r->off;
  int i;
  int64_t n;
  switch (r->type) {
  case FROND__CFG_STRING:
  case FROND__CFG_ADDRESS:
    return r->flags & FROND__CFG_SECRET && field[0] ? "(set)" : field;
  case FROND__CFG_ENUM:
    memcpy(&i, field, sizeof i);
    return r->values[i];
  case FROND__CFG_BOOL:
    memcpy(&i, field, sizeof i);
    return i ? "on" : "off";
  default:
    memcpy(&n, field, sizeof n);
    snprintf(buf, cap, "%lld", (long long)n);
    return buf;
  }
}

void frond__config_print(const frond__config *c, FILE *f) {
  size_t i;
  int64_t k;
  char buf[32];
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++) {
    if (rows[i].type == FROND__CFG_FORMAT) {
      for (k = 0; k < c->nformats; k++)
        fprintf(f, "%.*s%s = %s\n", (int)family_prefix(&rows[i]), rows[i].name,
                c->formats[k].name, c->formats[k].spec);
      continue;
    }
    fprintf(f, "%s = %s\n", rows[i].name,
            value_text(c, &rows[i], buf, sizeof buf));
  }
}

/* The values a row accepts, in a few words. */
static const char *range_text(const frond__cfg_row *r, char *buf, size_t cap) {
  size_t i, n = 0;
  buf[0] = '\0';
  switch (r->type) {
  case FROND__CFG_INT:
  case FROND__CFG_DURATION:
  case FROND__CFG_SIZE:
    snprintf(buf, cap, "%lld..%lld%s", (long long)r->min, (long long)r->max,
             r->type == FROND__CFG_DURATION ? " ms"
             : r->type == FROND__CFG_SIZE   ? " bytes"
                                            : "");
    break;
  case FROND__CFG_ENUM:
    for (i = 0; r->values[i] != NULL && n < cap; i++)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "|" : "",
                            r->values[i]);
    break;
  case FROND__CFG_BOOL:
    snprintf(buf, cap, "on|off");
    break;
  case FROND__CFG_ADDRESS:
    snprintf(buf, cap, "host:port%s", r->flags & FROND__CFG_OFF ? "|off" : "");
    break;
  case FROND__CFG_STRING:
    snprintf(buf, cap, "at most %zu bytes", r->size - 1);
    break;
  case FROND__CFG_FORMAT:
    snprintf(buf, cap, "an ID format spec, at most %d bytes",
             FROND__CFG_FORMAT_SPEC_MAX);
    break;
  }
  return buf;
}

void frond__config_usage(FILE *f) {
  size_t i;
  fprintf(f,
          "usage: frond serve [--config FILE] [--KEY VALUE]...\n"
          "       frond serve --print-config | --list-keys | --help\n\n"
          "  --config FILE        read keys from FILE: lines 'key = value', "
          "# comments\n"
          "  --print-config       print the effective configuration as a "
          "config file\n"
          "  --list-keys          print every key: key, environment, flag, "
          "type, default,\n"
          "                       range, meaning (tab-separated)\n"
          "  --help, -h           this text\n\n"
          "keys (flags win over FROND_* environment variables, which win over "
          "the file;\nin a file: key_name = value; durations take ms, s, min, "
          "h; sizes B, KiB, MiB):\n");
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++) {
    const frond__cfg_row *r = &rows[i];
    char flag[64], env[64], range[160], arg[96], type[16];
    size_t k;
    for (k = 0; type_names[r->type][k] != '\0' && k + 1 < sizeof type; k++)
      type[k] = (char)toupper((unsigned char)type_names[r->type][k]);
    type[k] = '\0';
    snprintf(arg, sizeof arg, "%s %s", flag_name(r, flag, sizeof flag), type);
    range_text(r, range, sizeof range);
    /* Strings and addresses say what they take in their help. */
    if (r->type == FROND__CFG_STRING || r->type == FROND__CFG_ADDRESS)
      range[0] = '\0';
    fprintf(f, "  %-32s %s=%s\n      %s%s%s%s\n", arg,
            frond__config_env_name(r, env, sizeof env), r->def, r->help,
            range[0] ? " (" : "", range, range[0] ? ")" : "");
  }
}

void frond__config_list(FILE *f) {
  size_t i;
  fprintf(f, "#key\tenvironment\tflag\ttype\tdefault\trange\tmeaning\n");
  for (i = 0; i < FROND__ARRAY_SIZE(rows); i++) {
    const frond__cfg_row *r = &rows[i];
    char flag[64], env[64], range[160];
    fprintf(f, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r->name,
            frond__config_env_name(r, env, sizeof env),
            flag_name(r, flag, sizeof flag), type_names[r->type], r->def,
            range_text(r, range, sizeof range), r->help);
  }
}
