/* SPDX-License-Identifier: Apache-2.0 */
/*
** audit.c -- `frond audit find ID`: which client was given an ID, and when,
** from the server's audit log (audit_log; docs/operations.md).
**
** A segment ID is found in the lines of its tag whose first..last holds
** it; a snowflake ID in the lines of the node its bits name (under the
** layout the line records) whose first..last holds it. A range or batch
** line holds every ID from first to last (the server writes one line per
** run), so its answer is certain; a singles line holds count of them, and
** the others of that second belong to other lines: every line that may
** hold the ID is printed, and said to be so. A format's line is found by
** the ID under its strings (first, last): by its tag, or, over snowflake
** IDs, by its node as above; strings without an ID (random UUIDs) are
** not found.
**
** The files: --log FILE (default $FROND_AUDIT_LOG) and what rotation made
** of it beside it (FILE.1, FILE.2.gz, FILE-20261128 ...), then any FILE
** given after the ID as it is. Compressed files (.gz) are read through
** gzip -dc. A line that does not read (the torn last line of a crash) is
** skipped and counted on stderr.
*/
#include "cli/cli.h"
#include "server/audit_line.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] =
    "usage: frond audit find ID [--log FILE] [--tag TAG] [FILE...]\n"
    "\n"
    "Which client was given the segment or snowflake ID, and when: every\n"
    "line of the audit log that holds it, one per line, as\n"
    "  FILE:LINE: ID: CLIENT (ADDRESS, PROTO) at TIME: OP FIRST..LAST, N "
    "IDs\n"
    "A range or batch line holds every ID from FIRST to LAST: the answer\n"
    "is certain. A singles line holds N of them within a second, and is\n"
    "marked \"maybe\" when the others may be other clients'.\n"
    "Exit status: 0 found, 1 not found (or a file could not be read),\n"
    "2 bad arguments.\n"
    "\n"
    "  --log FILE  the audit log (default: $FROND_AUDIT_LOG), with its\n"
    "              rotated files beside it (FILE.1, FILE.2.gz, FILE-DATE)\n"
    "  --tag TAG   segment IDs of this tag only (without: any tag's, and\n"
    "              snowflake IDs)\n"
    "  FILE...     more files, read as given (.gz ones decompressed)\n";

typedef struct finder {
  int64_t id;
  const char *tag;
  unsigned long found, skipped;
  char layout_spec[160]; /* the last layout parsed, and it */
  frond_layout layout;
  int layout_ok;
} finder;

/* Does the snowflake line's node hold id, under the line's layout? */
static int node_of(finder *f, const frond__audit_line *l, int64_t id) {
  frond_fields fl;
  frond_error err = {0, ""};
  if (strcmp(f->layout_spec, l->layout) != 0) {
    snprintf(f->layout_spec, sizeof f->layout_spec, "%s", l->layout);
    f->layout_ok = frond_layout_parse(l->layout, &f->layout, &err) == 0;
  }
  return f->layout_ok && frond_decode(&f->layout, id, &fl, &err) == 0 &&
         (int64_t)fl.node == l->node;
}

static void match(void *ctx, const char *file, unsigned long n,
                  const frond__audit_line *l) {
  finder *f = ctx;
  unsigned need = FROND__AUDIT_FIRST | FROND__AUDIT_LAST | FROND__AUDIT_COUNT;
  int snowflake = (l->have & FROND__AUDIT_NODE) != 0, maybe;
  char what[200];
  if ((l->have & need) != need || l->op[0] == '\0' || f->id < l->first ||
      f->id > l->last)
    return;
  if (f->tag != NULL ? strcmp(l->tag, f->tag) != 0
                     : !snowflake && l->tag[0] == '\0')
    return;
  if (snowflake && (f->tag != NULL || !node_of(f, l, f->id)))
    return;
  /* Certain: a range or batch, or singles that are every ID between. */
  maybe = strcmp(l->op, "singles") == 0 &&
          (snowflake ? l->count != 1 : l->count != l->last - l->first + 1);
  if (snowflake && l->format[0] != '\0')
    snprintf(what, sizeof what, "node %lld (format %s)", (long long)l->node,
             l->format);
  else if (snowflake)
    snprintf(what, sizeof what, "node %lld", (long long)l->node);
  else if (l->format[0] != '\0')
    snprintf(what, sizeof what, "%s (format %s)", l->tag, l->format);
  else
    snprintf(what, sizeof what, "%s", l->tag);
  printf("%s:%lu: %s %lld: %s (%s, %s) at %s: %s %lld..%lld, %lld ID%s%s%s\n",
         file, n, what, (long long)f->id, l->client,
         l->remote[0] ? l->remote : "gone", l->proto, l->time, l->op,
         (long long)l->first, (long long)l->last, (long long)l->count,
         l->count == 1 ? "" : "s",
         maybe ? ", maybe (others of that second took IDs between)" : "",
         l->answered ? "" : ", not answered (the client went away)");
  f->found++;
}

/* Read one file (through gzip -dc when it ends in .gz). 0, or -1. */
/* A compressed file read as text would be skipped line by line, its
** records silently lost: refused by its magic number (gzip is read only
** under a .gz name, through gzip -dc). 0 when in is text (rewound). */
static int compressed(FILE *in, const char *path) {
  static const struct {
    const char *magic, *name;
    size_t len;
  } kinds[] = {{"\x1f\x8b", "gzip (name it .gz)", 2},
               {"BZh", "bzip2", 3},
               {"\x28\xb5\x2f\xfd", "zstd", 4},
               {"\xfd"
                "7zXZ",
                "xz", 5}};
  unsigned char head[8];
  size_t got = fread(head, 1, sizeof(head), in), i;
  rewind(in);
  for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (got >= kinds[i].len &&
        memcmp(head, kinds[i].magic, kinds[i].len) == 0) {
      fprintf(stderr,
              "frond: IO: %s: a %s file: its records are not read; "
              "decompress it beside the log first\n",
              path, kinds[i].name);
      return -1;
    }
  return 0;
}

int frond__cli_audit_read(const char *path, frond__cli_audit_fn fn, void *ctx,
                          unsigned long *skipped) {
  size_t len = strlen(path), cap = 0;
  int gz = len > 3 && strcmp(path + len - 3, ".gz") == 0, fds[2], st;
  pid_t pid = -1;
  FILE *in;
  char *buf = NULL;
  ssize_t got;
  unsigned long n = 0;
  frond__audit_line l;
  if (!gz) {
    if ((in = fopen(path, "r")) != NULL && compressed(in, path) != 0) {
      fclose(in);
      return -1;
    }
  } else {
    if (pipe(fds) != 0 || (pid = fork()) < 0) {
      fprintf(stderr, "frond: IO: %s: %s\n", path, strerror(errno));
      return -1;
    }
    if (pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      execlp("gzip", "gzip", "-dc", "--", path, (char *)NULL);
      fprintf(stderr, "frond: IO: %s: gzip: %s\n", path, strerror(errno));
      _exit(127);
    }
    close(fds[1]);
    in = fdopen(fds[0], "r");
  }
  if (in == NULL) {
    fprintf(stderr, "frond: IO: %s: %s\n", path, strerror(errno));
    return -1;
  }
  while ((got = getline(&buf, &cap, in)) > 0) {
    size_t k = (size_t)got;
    n++;
    if (buf[k - 1] == '\n')
      k--;
    if (frond__audit_line_parse(buf, k, &l) != 0) {
      ++*skipped;
      continue;
    }
    fn(ctx, path, n, &l);
  }
  free(buf);
  fclose(in);
  if (pid > 0 &&
      (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
    fprintf(stderr, "frond: IO: %s: gzip -dc failed\n", path);
    return -1;
  }
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* log and what rotation left beside it (log.*, log-*), sorted, each once,
** then extra as given. */
int frond__cli_audit_files(const char *log, char **extra, int nextra,
                           char ***out, size_t *n) {
  glob_t g[2];
  char pat[4096];
  size_t cap = (size_t)nextra + 1, i, j;
  char **v;
  int k;
  memset(g, 0, sizeof g);
  for (k = 0; log != NULL && k < 2; k++) {
    snprintf(pat, sizeof pat, "%s%s", log, k == 0 ? ".*" : "-*");
    if (glob(pat, 0, NULL, &g[k]) == 0)
      cap += g[k].gl_pathc;
  }
  if ((v = calloc(cap, sizeof *v)) == NULL)
    return -1;
  *n = 0;
  if (log != NULL)
    v[(*n)++] = strdup(log);
  for (k = 0; k < 2; k++)
    for (i = 0; i < g[k].gl_pathc; i++)
      v[(*n)++] = strdup(g[k].gl_pathv[i]);
  for (k = 0; k < nextra; k++)
    v[(*n)++] = strdup(extra[k]);
  for (i = 0; i < *n; i++)
    if (v[i] == NULL)
      return -1;
  /* The log's own files sorted and each once; the extra ones as given. */
  j = log != NULL ? *n - (size_t)nextra : 0;
  qsort(v, j, sizeof *v, by_name);
  for (i = 1; i < j; i++)
    if (strcmp(v[i], v[i - 1]) == 0)
      v[i][0] = '\0';
  globfree(&g[0]);
  globfree(&g[1]);
  *out = v;
  return 0;
}

int frond__cli_audit(int argc, char **argv) {
  const char *log = NULL, *tag = NULL;
  frond__opt opts[] = {{"log", FROND__OPT_STR, &log, 0, 0, 0},
                       {"tag", FROND__OPT_STR, &tag, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"audit", usage, opts, 1, -1, "find", NULL, 0};
  finder f;
  char **v = NULL;
  size_t n = 0, i;
  int status, failed = 0;
  if (!frond__args_parse(&a, argc, argv, &status))
    return status;
  if (strcmp(a.pos[0], "find") != 0)
    return frond__usage_error("audit", "unknown subcommand '%s' (find)",
                              a.pos[0]);
  if (a.npos < 2)
    return frond__usage_error("audit find", "missing ID");
  memset(&f, 0, sizeof f);
  f.tag = tag;
  if (frond__args_int("audit find", "ID", a.pos[1], 0, INT64_MAX, &f.id) != 0)
    return FROND__EXIT_USAGE;
  if (log == NULL && (log = getenv("FROND_AUDIT_LOG")) != NULL && !*log)
    log = NULL;
  if (log == NULL && a.npos < 3)
    return frond__usage_error("audit find", "no audit log: give --log FILE "
                                            "(or set FROND_AUDIT_LOG)");
  if (frond__cli_audit_files(log, a.pos + 2, a.npos - 2, &v, &n) != 0) {
    fprintf(stderr, "frond: NOMEM: out of memory\n");
    return FROND__EXIT_FAILURE;
  }
  for (i = 0; i < n; i++) {
    if (v[i][0] != '\0' &&
        frond__cli_audit_read(v[i], match, &f, &f.skipped) != 0)
      failed = 1;
    free(v[i]);
  }
  free(v);
  if (f.skipped > 0)
    fprintf(stderr,
            "frond audit find: %lu lines skipped (torn or not audit "
            "records)\n",
            f.skipped);
  if (f.found == 0 && !failed)
    fprintf(stderr, "frond audit find: no audit record holds ID %lld%s%s\n",
            (long long)f.id, tag != NULL ? " of tag " : "",
            tag != NULL ? tag : "");
  return failed || f.found == 0 ? FROND__EXIT_FAILURE : FROND__EXIT_OK;
}
