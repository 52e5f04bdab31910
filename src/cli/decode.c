/* SPDX-License-Identifier: Apache-2.0 */
/*
** decode.c -- `frond decode`: split IDs into their fields.
**
** One JSON object per ID and line. 64-bit IDs are JSON strings (they do
** not fit a double); the other fields are numbers. Without --format, an
** argument is recognised by its shape: a UUID, ULID, ObjectId, base62 or
** base32 ID by its length and alphabet, anything else as a decimal
** snowflake ID (with the fields every front shows: core/format_fields.h,
** as /v1/decode and ID.DECODE answer them). Order numbers
** and sequences need their --format (and keys). IDs given as arguments are
** all checked before anything is printed, so a typo prints nothing and
** exits 2. IDs read from standard input are decoded as they come (a pipe
** may be endless); a malformed line stops there with exit 2, after the
** lines before it were printed.
*/
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: frond decode [--layout SPEC] [--format SPEC [--key-file FILE]]\n"
    "                    [ID...]\n"
    "\n"
    "Print the fields of each ID as one JSON object per line. A decimal\n"
    "snowflake ID prints as\n"
    "  {\"id\":\"...\",\"time\":\"2024-01-01T00:00:00.000Z\",\"unix_ms\":...,"
    "\n   \"time_units\":...,\"node\":...,\"datacenter\":...,\"worker\":...,"
    "\n   \"sequence\":...,\"layout\":\"...\"}\n"
    "datacenter is 0 and worker the node when the layout does not split the\n"
    "node field; layout is the layout's spec.\n"
    "UUIDs (v7, v4), ULIDs, ObjectIds and base62 (11 characters) or base32\n"
    "(13) snowflake IDs are recognised by their shape and print as\n"
    "  {\"format\":\"ulid\",\"input\":\"...\",...}\n"
    "with their time (and node, process, counter where they have one).\n"
    "With no ID arguments, IDs are read from standard input, one per line.\n"
    "\n"
    "  --layout SPEC    the layout snowflake IDs were made with "
    "(default: " FROND_LAYOUT_DEFAULT ")\n"
    "  --format SPEC    read every ID as this format (order numbers and seq\n"
    "                   need it; see docs/formats.md)\n"
    "  --key-file FILE  keys of order numbers (default: $FROND_ORDER_KEY)\n";

/* Check that s is an ID: decimal digits, 0..2^63-1. On failure why says
** what is wrong with it. */
static int parse_id(const char *s, size_t len, int64_t *id, const char **why) {
  size_t i;
  uint64_t v = 0;
  if (len == 0) {
    *why = "is empty";
    return -1;
  }
  if (s[0] == '-' && len > 1 && strspn(s + 1, "0123456789") >= len - 1) {
    *why = "is negative (an ID is 0..9223372036854775807)";
    return -1;
  }
  for (i = 0; i < len; i++) {
    unsigned d = (unsigned char)s[i] - '0';
    if (d > 9) {
      *why = "is not a decimal number";
      return -1;
    }
  }
  for (i = 0; i < len; i++) {
    unsigned d = (unsigned char)s[i] - '0';
    if (v > ((uint64_t)INT64_MAX - d) / 10) {
      *why = "is too large (an ID is 0..9223372036854775807)";
      return -1;
    }
    v = v * 10 + d;
  }
  *id = (int64_t)v;
  return 0;
}

/* One argument, read and checked; printed later. */
typedef struct item {
  char *input; /* NUL-terminated copy */
  int plain;   /* a decimal snowflake ID: the classic output */
  frond_format_value v;
} item;

/* Lengths of the shapes frond_format_decode_any knows besides decimal. */
static int other_shape(size_t len) {
  return len == 36 || len == 32 || len == 26 || len == 24 || len == 13 ||
         len == 11;
}

/* Read s (len bytes) into it. Returns 0, or an exit status after
** reporting: 2 for a malformed ID (prefixed by `where`), 1 otherwise. */
static int read_item(const frond_format *f, const char *s, size_t len,
                     const char *where, item *it) {
  frond_error err = {0};
  const char *why;
  int rc;
  memset(it, 0, sizeof(*it));
  /* Up to 19 digits is a decimal ID whatever its length: printed as
  ** always. */
  if (f == NULL &&
      (!other_shape(len) || (len <= 19 && strspn(s, "0123456789") >= len))) {
    if (parse_id(s, len, &it->v.id, &why) != 0)
      return frond__usage_error("decode", "%s'%.*s' %s", where,
                                len > 64 ? 64 : (int)len, s, why);
    it->plain = 1;
    return 0;
  }
  rc = f != NULL ? frond_format_decode(f, s, len, &it->v, &err)
                 : frond_format_decode_any(s, len, &it->v, &err);
  if (rc == FROND_EID_INVALID)
    return frond__usage_error("decode", "%s%s", where, err.message);
  if (rc != 0)
    return frond__cli_fail(&err);
  return 0;
}

static int print_item(const frond_layout *l, const item *it, const char *s,
                      size_t len) {
  char input[160];
  if (it->plain)
    return frond__cli_print_snowflake(it->v.id, l);
  snprintf(input, sizeof(input), "%.*s", len > 128 ? 128 : (int)len, s);
  return frond__cli_print_value(&it->v, input, l);
}

static int decode_stdin(const frond_layout *l, const frond_format *f) {
  char *line = NULL, where[48];
  size_t cap = 0;
  ssize_t n;
  long lineno = 0;
  int rc = FROND__EXIT_OK;
  while (rc == FROND__EXIT_OK && (n = getline(&line, &cap, stdin)) >= 0) {
    const char *s = line;
    size_t len = (size_t)n;
    item it;
    lineno++;
    while (len > 0 && strchr(" \t\r\n", s[len - 1]) != NULL)
      len--;
    while (len > 0 && (s[0] == ' ' || s[0] == '\t')) {
      s++;
      len--;
    }
    snprintf(where, sizeof(where), "line %ld: ", lineno);
    if ((rc = read_item(f, s, len, where, &it)) != 0) {
      frond__out_flush();
      break;
    }
    rc = print_item(l, &it, s, len);
  }
  if (rc == FROND__EXIT_OK && ferror(stdin))
    rc = frond__cli_fail_errno("reading standard input");
  free(line);
  return frond__out_finish(rc);
}

static int decode_args(const frond_layout *l, const frond_format *f, int n,
                       char **args) {
  item *items = calloc((size_t)n, sizeof(*items));
  int i, rc = FROND__EXIT_OK;
  if (items == NULL) {
    frond_error err = {FROND_ENOMEM, ""};
    return frond__cli_fail(&err);
  }
  for (i = 0; i < n && rc == FROND__EXIT_OK; i++)
    rc = read_item(f, args[i], strlen(args[i]), "", &items[i]);
  for (i = 0; i < n && rc == FROND__EXIT_OK; i++)
    rc = print_item(l, &items[i], args[i], strlen(args[i]));
  free(items);
  return frond__out_finish(rc);
}

int frond__cli_decode(int argc, char **argv) {
  const char *spec = FROND_LAYOUT_DEFAULT, *fspec = NULL, *key_file = NULL;
  frond__opt opts[] = {{"layout", FROND__OPT_STR, &spec, 0, 0, 0},
                       {"format", FROND__OPT_STR, &fspec, 0, 0, 0},
                       {"key-file", FROND__OPT_STR, &key_file, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"decode", usage, opts, 0, -1, "ID", NULL, 0};
  frond_layout layout;
  frond_error err = {0};
  frond_format *f = NULL;
  int st, rc;

  if (!frond__args_parse(&a, argc, argv, &st))
    return st;
  if (frond_layout_parse(spec, &layout, &err) != 0)
    return frond__usage_error("decode", "--layout: %s", err.message);
  if (key_file != NULL && fspec == NULL)
    return frond__usage_error("decode", "--key-file needs --format");
  if (fspec != NULL &&
      (rc = frond__cli_format_create("decode", fspec, key_file, &f)) != 0)
    return rc;
  rc = a.npos == 0 ? decode_stdin(&layout, f)
                   : decode_args(&layout, f, a.npos, a.pos);
  frond_format_free(f);
  return rc;
}
