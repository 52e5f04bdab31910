/* SPDX-License-Identifier: Apache-2.0 */
/*
** args.h -- one option parser for every subcommand of `frond`.
**
** A subcommand describes its options in a table and gets back the
** positional arguments. Accepted forms: `--name value`, `--name=value`,
** `--flag`, `--` to end the options, `-h`/`--help`. Options and positionals
** may be interleaved. An argument that looks like a negative number ("-5")
** is a positional, so that `frond decode -5` can say what is wrong with it.
** Integers are parsed strictly: decimal digits only, no sign unless the
** range allows negatives, no spaces, no overflow, checked against the
** option's range.
*/
#ifndef FROND_CLI_ARGS_H
#define FROND_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  FROND__OPT_FLAG, /* out: int *, set to 1 */
  FROND__OPT_INT,  /* out: int64_t *, within [min, max] */
  FROND__OPT_STR   /* out: const char **, any non-empty string */
} frond__opt_type;

typedef struct frond__opt {
  const char *name; /* without the dashes: "count" */
  frond__opt_type type;
  void *out;
  int64_t min, max; /* FROND__OPT_INT only */
  int seen;         /* set by the parser: given on the command line */
} frond__opt;

typedef struct frond__args {
  const char *cmd;      /* for messages: "next", "tag create" */
  const char *usage;    /* the full help text, printed by --help */
  frond__opt *opts;     /* ends with a row whose name is NULL; may be NULL */
  int min_pos;          /* positional arguments wanted */
  int max_pos;          /* -1: no limit */
  const char *pos_name; /* for "missing NAME" */
  /* Output: the positional arguments, in order (points into argv). */
  char **pos;
  int npos;
} frond__args;

/*
** Parse argv[1..argc-1]. Returns 1 to go on, or 0 when the command must end
** now with *status as its exit status: 0 after printing the help, 2 after
** reporting a usage error (one line on stderr). Reorders argv so the
** positionals come first after argv[0].
*/
int frond__args_parse(frond__args *a, int argc, char **argv, int *status);

/* Report a usage error "frond CMD: message" on stderr; returns 2. */
int frond__usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Strictly parse a decimal integer in [min, max]. Returns 0, or -1 with the
** complaint ("'abc' is not a positive integer", "'7' is out of range
** 0..3") in why. */
int frond__parse_int(const char *s, int64_t min, int64_t max, int64_t *out,
                     char *why, size_t whylen);

/* A positional integer: parsed like an option value; on failure reports
** "frond CMD: WHAT: 'S' is not ..." and returns -1. */
int frond__args_int(const char *cmd, const char *what, const char *s,
                    int64_t min, int64_t max, int64_t *out);

#endif /* FROND_CLI_ARGS_H */
