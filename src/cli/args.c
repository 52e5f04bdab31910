/* SPDX-License-Identifier: Apache-2.0 */
/*
** args.c -- the option parser shared by every subcommand, and the one way
** to report a usage error.
*/
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int frond__usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "frond %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return FROND__EXIT_USAGE;
}

/* What kind of integer a range asks for, for messages. */
static const char *int_kind(int64_t min, int64_t max) {
  if (max < INT64_MAX)
    return "an integer";
  if (min == 1)
    return "a positive integer";
  if (min == 0)
    return "a non-negative integer";
  return "an integer";
}

int frond__parse_int(const char *s, int64_t min, int64_t max, int64_t *out,
                     char *why, size_t whylen) {
  size_t i = 0, n = strlen(s);
  uint64_t v = 0;
  int neg = 0, big = 0;
  if (n > 0 && s[0] == '-' && min < 0) {
    neg = 1;
    i = 1;
  }
  if (i == n || strspn(s + i, "0123456789") != n - i)
    goto bad;
  for (; i < n && !big; i++) {
    unsigned d = (unsigned char)s[i] - '0';
    /* Anything beyond 2^63 is out of every range; stop before overflow. */
    if (v > ((uint64_t)INT64_MAX + 1 - d) / 10)
      big = 1;
    else
      v = v * 10 + d;
  }
  big = big || (!neg && v > (uint64_t)INT64_MAX);
  if (!big) {
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (*out >= min && *out <= max)
      return 0;
    /* "0" where a positive integer is wanted reads best as a kind error. */
    if (max == INT64_MAX && (min == 0 || min == 1))
      goto bad;
  }
  if (max != INT64_MAX)
    snprintf(why, whylen, "'%s' is out of range %lld..%lld", s, (long long)min,
             (long long)max);
  else if (big)
    snprintf(why, whylen, "'%s' is too large (at most %lld)", s,
             (long long)max);
  else
    snprintf(why, whylen, "'%s' is too small (at least %lld)", s,
             (long long)min);
  return -1;
bad:
  snprintf(why, whylen, "'%s' is not %s", s, int_kind(min, max));
  return -1;
}

int frond__args_int(const char *cmd, const char *what, const char *s,
                    int64_t min, int64_t max, int64_t *out) {
  char why[256];
  if (frond__parse_int(s, min, max, out, why, sizeof(why)) == 0)
    return 0;
  frond__usage_error(cmd, "%s: %s", what, why);
  return -1;
}

static frond__opt *find_opt(frond__opt *opts, const char *name, size_t len) {
  for (; opts != NULL && opts->name != NULL; opts++)
    if (strlen(opts->name) == len && memcmp(opts->name, name, len) == 0)
      return opts;
  return NULL;
}

/* "-5" and "-" are arguments, not options. */
static int is_option(const char *arg) {
  return arg[0] == '-' && arg[1] != '\0' && !(arg[1] >= '0' && arg[1] <= '9');
}

static int set_opt(frond__args *a, frond__opt *o, const char *value) {
  char why[256];
  o->seen = 1;
  switch (o->type) {
  case FROND__OPT_FLAG:
    *(int *)o->out = 1;
    return 0;
  case FROND__OPT_INT:
    if (frond__parse_int(value, o->min, o->max, (int64_t *)o->out, why,
                         sizeof(why)) == 0)
      return 0;
    frond__usage_error(a->cmd, "--%s: %s", o->name, why);
    return -1;
  case FROND__OPT_STR:
    if (value[0] == '\0') {
      frond__usage_error(a->cmd, "--%s: the value is empty", o->name);
      return -1;
    }
    *(const char **)o->out = value;
    return 0;
  }
  return -1;
}

int frond__args_parse(frond__args *a, int argc, char **argv, int *status) {
  int i, npos = 0, only_pos = 0;
  *status = FROND__EXIT_USAGE;
  for (i = 1; i < argc; i++) {
    char *arg = argv[i];
    const char *name, *eq, *value = NULL;
    frond__opt *o;
    size_t len;
    if (only_pos || !is_option(arg)) {
      argv[1 + npos++] = arg; /* never overtakes i: safe in place */
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      only_pos = 1;
      continue;
    }
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      fputs(a->usage, stdout);
      *status = FROND__EXIT_OK;
      return 0;
    }
    if (arg[1] != '-') {
      frond__usage_error(a->cmd, "unknown option '%s'", arg);
      return 0;
    }
    name = arg + 2;
    eq = strchr(name, '=');
    len = eq != NULL ? (size_t)(eq - name) : strlen(name);
    o = find_opt(a->opts, name, len);
    if (o == NULL) {
      frond__usage_error(a->cmd, "unknown option '--%.*s'", (int)len, name);
      return 0;
    }
    if (o->type == FROND__OPT_FLAG) {
      if (eq != NULL) {
        frond__usage_error(a->cmd, "--%s takes no value", o->name);
        return 0;
      }
    } else if (eq != NULL) {
      value = eq + 1;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      frond__usage_error(a->cmd, "--%s needs a value", o->name);
      return 0;
    }
    if (set_opt(a, o, value) != 0)
      return 0;
  }
  if (npos < a->min_pos) {
    frond__usage_error(a->cmd, "missing %s",
                       a->pos_name ? a->pos_name : "argument");
    return 0;
  }
  if (a->max_pos >= 0 && npos > a->max_pos) {
    frond__usage_error(a->cmd, "unexpected argument '%s'",
                       argv[1 + a->max_pos]);
    return 0;
  }
  a->pos = argv + 1;
  a->npos = npos;
  *status = FROND__EXIT_OK;
  return 1;
}
