/* SPDX-License-Identifier: Apache-2.0 */
/*
** config_load.c -- the configuration's sources, in order: the defaults,
** the file named by --config, the FROND_* variables, the flags (what
** frond__config_load reads; the table, the file's text and the values
** are config.c's). And the refusal of a FROND_* variable Frond does not
** read.
**
** The keys' variables are read here, and so are a family's:
** FROND_FORMAT_ORDERS is format.orders.
**
** A variable with a misspelt name is not read, and a default takes its
** place: FROND_STORE_URI for FROND_STORE left every node on its own
** SQLite file, each handing out a shared tag's IDs again. So a FROND_*
** variable that Frond does not document stops `frond serve` and every
** subcommand that reads FROND_* variables, with the nearest known name
** suggested. Known are the keys' variables (config.c's table), the
** members of a family (FROND_FORMAT_<NAME>) and the variables below,
** which docs/reference/configuration.md lists one by one ("Environment of
** the frond command").
*/
#include "server/config.h"

#include "base/base.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The variables Frond documents besides the keys', and what reads them. */
static const struct {
  const char *name, *what;
} others[] = {
    {FROND_ORDER_KEY_ENV, "order number keys (frond serve, next, decode)"},
    {"FROND_ZK_DEBUG", "the ZooKeeper client's own log, on stderr"},
    {"FROND_BIN", "the test suites: the frond binary under test"},
    {"FROND_SRC", "the test suites: the source tree"},
    {"FROND_BUILD", "the test suites: the build directory"},
    {"FROND_TEST", "the unit tests: run only the test it names"},
    {"FROND_CLIENTS_NODE", "the client tests: which node.js to use"},
    {"FROND_SERVERS", "the clients (clients/): the servers they call"},
    {"FROND_DEB_BUILD", "scripts/deb.sh: the build directory"},
    {"FROND_DEB_SOURCE", "scripts/deb.sh: what the package is built from, "
                         "outside a git checkout (scripts/release.sh sets it)"},
    {"FROND_DEB_YEARS", "scripts/deb.sh: the copyright's years, outside a git "
                        "checkout"},
};

/* Prefixes kept for the project's own tools: the settings of the chaos
** and mistakes suites, and in test builds the hooks' (FROND_TEST_WEDGE_MS).
** A release reads none of them, and holds no trace of the hooks: a
** FROND_TEST_* variable is refused by it like any unknown one. */
static const char *const reserved[] = {
#ifdef FROND_TEST_HOOKS
    "FROND_TEST_",
#endif
    "FROND_CHAOS_", "FROND_MISTAKES_"};

size_t frond__config_env_others(size_t i, const char **name,
                                const char **what) {
  if (i < FROND__ARRAY_SIZE(others)) {
    *name = others[i].name;
    *what = others[i].what;
  }
  return FROND__ARRAY_SIZE(others);
}

/* Levenshtein distance between a[0..n) and b[0..m), both at most 63
** bytes (longer ones are far from every name here anyway). */
static size_t distance(const char *a, size_t n, const char *b, size_t m) {
  size_t d[64], i, j;
  if (n > 63 || m > 63)
    return 64;
  for (j = 0; j <= m; j++)
    d[j] = j;
  for (i = 1; i <= n; i++) {
    size_t diag = d[0], up;
    d[0] = i;
    for (j = 1; j <= m; j++) {
      size_t best = diag + (a[i - 1] != b[j - 1]);
      up = d[j];
      if (up + 1 < best)
        best = up + 1;
      if (d[j - 1] + 1 < best)
        best = d[j - 1] + 1;
      diag = up;
      d[j] = best;
    }
  }
  return d[m];
}

/* Is known worth suggesting for name (both whole variable names)? Close
** in edit distance, or one is the other plus more words (FROND_STORE_URI,
** FROND_LOG). Returns a score, lower is better, or 0 for no. */
static size_t closeness(const char *name, size_t n, const char *known) {
  size_t m = strlen(known), d = distance(name, n, known, m);
  size_t longer = n > m ? n : m;
  if (m < n && memcmp(name, known, m) == 0 && name[m] == '_')
    return d + 1;
  if (n < m && memcmp(known, name, n) == 0 && known[n] == '_')
    return d + 1;
  return d <= 2 || d * 3 <= longer - 6 ? d + 1 : 0;
}

/* name[0..n) is a FROND_* variable Frond reads (or keeps for its tools). */
static int known(const char *name, size_t n, char *best, size_t cap) {
  size_t nrows, i, score = 0, s;
  const frond__cfg_row *rows = frond__config_rows(&nrows);
  char env[80];
  best[0] = '\0';
#define CONSIDER(cand)                                                         \
  do {                                                                         \
    if ((s = closeness(name, n, (cand))) != 0 && (score == 0 || s < score)) {  \
      score = s;                                                               \
      snprintf(best, cap, "%s", (cand));                                       \
    }                                                                          \
  } while (0)
  for (i = 0; i < nrows; i++) {
    size_t e = strlen(frond__config_env_name(&rows[i], env, sizeof env));
    if (rows[i].type == FROND__CFG_FORMAT) {
      /* FROND_FORMAT_<NAME>: the family's members. */
      e = strcspn(env, "<");
      if (n > e && memcmp(name, env, e) == 0)
        return 1;
      CONSIDER(env);
      continue;
    }
    if (e == n && memcmp(name, env, n) == 0)
      return 1;
    CONSIDER(env);
  }
  for (i = 0; i < FROND__ARRAY_SIZE(others); i++) {
    if (strlen(others[i].name) == n && memcmp(name, others[i].name, n) == 0)
      return 1;
    CONSIDER(others[i].name);
  }
#undef CONSIDER
  for (i = 0; i < FROND__ARRAY_SIZE(reserved); i++)
    if (n > strlen(reserved[i]) &&
        memcmp(name, reserved[i], strlen(reserved[i])) == 0)
      return 1;
  return 0;
}

int frond__config_env_unknown(const char *name, size_t n, frond_error *err) {
  char best[80], shown[72];
  size_t i;
  if (n < 6 || memcmp(name, "FROND_", 6) != 0 ||
      known(name, n, best, sizeof best))
    return 0;
  /* The name as given, control characters shown as '?'. */
  for (i = 0; i < n && i + 4 < sizeof shown; i++)
    shown[i] = isprint((unsigned char)name[i]) ? name[i] : '?';
  snprintf(shown + i, sizeof shown - i, "%s", i < n ? "..." : "");
  if (best[0] != '\0')
    return frond__fail(err, FROND_ECONFIG,
                       "unknown variable %s; did you mean %s? A FROND_* "
                       "variable Frond does not read is refused: rename or "
                       "unset it (every one Frond reads: frond serve "
                       "--list-keys, frond.conf(5))",
                       shown, best);
  return frond__fail(err, FROND_ECONFIG,
                     "unknown variable %s: a FROND_* variable Frond does not "
                     "read is refused: rename or unset it (every one Frond "
                     "reads: frond serve --list-keys, frond.conf(5))",
                     shown);
}

/* The variables of a family row r: FROND_FORMAT_ORDERS is format.orders
** (the name in lower case). */
static int load_family(frond__config *c, const frond__cfg_row *r,
                       frond_error *err) {
  extern char **environ;
  char env[64], key[128];
  size_t elen, p = strcspn(r->name, "<"), k;
  char **e;
  frond__config_env_name(r, env, sizeof env);
  elen = strcspn(env, "<");
  for (e = environ; *e != NULL; e++) {
    const char *eq = strchr(*e, '=');
    size_t nlen;
    if (eq == NULL || strncmp(*e, env, elen) != 0 || eq - *e <= (long)elen)
      continue;
    nlen = (size_t)(eq - *e) - elen;
    if (p + nlen >= sizeof key)
      return frond__fail(err, FROND_EINVAL, "%.*s: the name is too long",
                         (int)(eq - *e > 80 ? 80 : eq - *e), *e);
    memcpy(key, r->name, p);
    for (k = 0; k < nlen; k++)
      key[p + k] = (char)tolower((unsigned char)(*e)[elen + k]);
    snprintf(env, sizeof env, "%.*s", (int)(eq - *e), *e);
    if (frond__config_set(c, key, p + nlen, eq + 1, env, err) != 0)
      return FROND_EINVAL;
    frond__config_env_name(r, env, sizeof env);
  }
  return 0;
}

int frond__config_load_env(frond__config *c, frond_error *err) {
  size_t nrows, i;
  const frond__cfg_row *rows = frond__config_rows(&nrows);
  char env[64];
  for (i = 0; i < nrows; i++) {
    const char *v;
    if (rows[i].type == FROND__CFG_FORMAT) {
      if (load_family(c, &rows[i], err) != 0)
        return FROND_EINVAL;
      continue;
    }
    v = getenv(frond__config_env_name(&rows[i], env, sizeof env));
    if (v != NULL && frond__config_set(c, rows[i].name, strlen(rows[i].name), v,
                                       env, err) != 0)
      return FROND_EINVAL;
  }
  return 0;
}

int frond__config_env_check(frond_error *err) {
  extern char **environ;
  char **e;
  for (e = environ; e != NULL && *e != NULL; e++) {
    const char *eq = strchr(*e, '=');
    size_t n = eq != NULL ? (size_t)(eq - *e) : strlen(*e);
    if (frond__config_env_unknown(*e, n, err) != 0)
      return FROND_ECONFIG;
  }
  return 0;
}

/* ---- the sources, in order ---- */

static int load_file(frond__config *c, const char *path, frond_error *err) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  size_t len = 0, cap = 0;
  int rc;
  if (f == NULL)
    return frond__fail(err, FROND_EINVAL, "cannot open config file %s: %s",
                       path, strerror(errno));
  for (;;) {
    size_t got;
    if (len == cap) {
      char *t = realloc(text, cap = cap ? cap * 2 : 8192);
      if (t == NULL) {
        fclose(f);
        free(text);
        return frond__fail(err, FROND_ENOMEM, "config file %s: out of memory",
                           path);
      }
      text = t;
    }
    got = fread(text + len, 1, cap - len, f);
    len += got;
    if (got == 0)
      break;
  }
  rc = ferror(f)
           ? frond__fail(err, FROND_EINVAL, "cannot read config file %s", path)
           : frond__config_parse(c, text, len, path, err);
  fclose(f);
  free(text);
  return rc;
}

static int load(frond__config *c, int argc, char **argv, int *action,
                frond_error *err) {
  const char *file = NULL;
  int pass, a;
  frond__config_defaults(c);
  *action = FROND__CFG_RUN;
  /* Pass 0 finds --config; pass 1 applies flags over file and env. */
  for (pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      int rc = *action == FROND__CFG_HELP || *action == FROND__CFG_LIST
                   ? 0
                   : frond__config_env_check(err);
      if (rc == 0 && file != NULL)
        rc = load_file(c, file, err);
      if (rc == 0)
        rc = frond__config_load_env(c, err);
      if (rc != 0)
        return rc;
    }
    for (a = 0; a < argc; a++) {
      const char *arg = argv[a], *name, *val, *eq;
      size_t nlen;
      if (strcmp(arg, "--print-config") == 0) {
        *action = FROND__CFG_PRINT;
        continue;
      }
      if (strcmp(arg, "--list-keys") == 0) {
        *action = FROND__CFG_LIST;
        continue;
      }
      if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        *action = FROND__CFG_HELP;
        continue;
      }
      if (strncmp(arg, "--", 2) != 0)
        return frond__fail(err, FROND_EINVAL, "unexpected argument '%s'", arg);
      name = arg + 2;
      eq = strchr(name, '=');
      nlen = eq ? (size_t)(eq - name) : strlen(name);
      if (eq != NULL)
        val = eq + 1;
      else if (frond__config_find(name, nlen) != NULL &&
               frond__config_find(name, nlen)->type == FROND__CFG_BOOL &&
               (a + 1 >= argc || strncmp(argv[a + 1], "--", 2) == 0))
        val = "on"; /* a switch given alone: --layout-change */
      else if (a + 1 < argc)
        val = argv[++a];
      else
        return frond__fail(err, FROND_EINVAL, "flag %s needs a value", arg);
      if (nlen == 6 && memcmp(name, "config", 6) == 0) {
        file = val;
        continue;
      }
      if (frond__config_find(name, nlen) == NULL)
        return frond__fail(err, FROND_EINVAL, "unknown flag '--%.*s'",
                           (int)nlen, name);
      if (pass == 1 && frond__config_set(c, name, nlen, val, "flag", err) != 0)
        return FROND_EINVAL;
    }
  }
  return 0;
}

int frond__config_load(frond__config *c, int argc, char **argv, int *action,
                       frond_error *err) {
  /* Whatever the rule, the configuration as a whole cannot be used. */
  if (load(c, argc, argv, action, err) == 0)
    return 0;
  if (err != NULL)
    err->code = FROND_ECONFIG;
  return FROND_ECONFIG;
}
