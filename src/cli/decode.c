/*
** decode.c -- `frond decode`: split snowflake IDs into their fields.
**
** One JSON object per ID and line. The ID is a JSON string (it does not fit
** a double); the other fields are numbers. IDs given as arguments are all
** checked before anything is printed, so a typo prints nothing and exits 2.
** IDs read from standard input are decoded as they come (a pipe may be
** endless); a malformed line stops there with exit 2, after the lines
** before it were printed.
*/
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: frond decode [--layout SPEC] [ID...]\n"
    "\n"
    "Print the fields of each snowflake ID as one JSON object per line:\n"
    "  {\"id\":\"...\",\"time\":\"2024-01-01T00:00:00.000Z\",\"unix_ms\":...,"
    "\n   \"node\":...,\"datacenter\":...,\"worker\":...,\"sequence\":...}\n"
    "datacenter and worker appear only when the layout splits the node "
    "field.\n"
    "With no ID arguments, IDs are read from standard input, one per line.\n"
    "\n"
    "  --layout SPEC   the layout the IDs were made with "
    "(default: " FROND_LAYOUT_DEFAULT ")\n";

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

static void print_fields(const frond_layout *l, int64_t id,
                         const frond_fields *f) {
  char when[48];
  frond__cli_time(f->unix_ms, when, sizeof(when));
  frond__out_str("{\"id\":\"");
  frond__out_i64(id);
  frond__out_printf("\",\"time\":\"%s\",\"unix_ms\":", when);
  frond__out_i64(f->unix_ms);
  frond__out_str(",\"node\":");
  frond__out_u64(f->node);
  if (l->dc_bits > 0) {
    frond__out_str(",\"datacenter\":");
    frond__out_u64(f->datacenter);
    frond__out_str(",\"worker\":");
    frond__out_u64(f->worker);
  }
  frond__out_str(",\"sequence\":");
  frond__out_u64(f->sequence);
  frond__out_str("}\n");
}

static int decode_one(const frond_layout *l, int64_t id) {
  frond_fields f;
  frond_error err = {0};
  if (frond_decode(l, id, &f, &err) != 0)
    return frond__cli_fail(&err);
  print_fields(l, id, &f);
  return FROND__EXIT_OK;
}

static int decode_stdin(const frond_layout *l) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  long lineno = 0;
  int rc = FROND__EXIT_OK;
  while (rc == FROND__EXIT_OK && (n = getline(&line, &cap, stdin)) >= 0) {
    const char *why, *s = line;
    size_t len = (size_t)n;
    int64_t id;
    lineno++;
    while (len > 0 && strchr(" \t\r\n", s[len - 1]) != NULL)
      len--;
    while (len > 0 && (s[0] == ' ' || s[0] == '\t')) {
      s++;
      len--;
    }
    if (parse_id(s, len, &id, &why) != 0) {
      frond__out_flush();
      rc = frond__usage_error("decode", "line %ld: '%.*s' %s", lineno,
                              len > 64 ? 64 : (int)len, s, why);
      break;
    }
    rc = decode_one(l, id);
  }
  if (rc == FROND__EXIT_OK && ferror(stdin))
    rc = frond__cli_fail_errno("reading standard input");
  free(line);
  return frond__out_finish(rc);
}

int frond__cli_decode(int argc, char **argv) {
  const char *spec = FROND_LAYOUT_DEFAULT;
  frond__opt opts[] = {{"layout", FROND__OPT_STR, &spec, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"decode", usage, opts, 0, -1, "ID", NULL, 0};
  frond_layout layout;
  frond_error err = {0};
  int64_t *ids;
  int i, st, rc = FROND__EXIT_OK;

  if (!frond__args_parse(&a, argc, argv, &st))
    return st;
  if (frond_layout_parse(spec, &layout, &err) != 0)
    return frond__usage_error("decode", "--layout: %s", err.message);
  if (a.npos == 0)
    return decode_stdin(&layout);
  ids = malloc(sizeof(*ids) * (size_t)a.npos);
  if (ids == NULL) {
    err.code = FROND_ENOMEM;
    err.message[0] = '\0';
    return frond__cli_fail(&err);
  }
  for (i = 0; i < a.npos; i++) {
    const char *why;
    if (parse_id(a.pos[i], strlen(a.pos[i]), &ids[i], &why) != 0) {
      free(ids);
      return frond__usage_error("decode", "'%s' %s", a.pos[i], why);
    }
  }
  for (i = 0; i < a.npos && rc == FROND__EXIT_OK; i++)
    rc = decode_one(&layout, ids[i]);
  free(ids);
  return frond__out_finish(rc);
}
