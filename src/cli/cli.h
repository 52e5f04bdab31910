/* SPDX-License-Identifier: Apache-2.0 */
/*
** cli.h -- the `frond` command: one function per subcommand, and the few
** helpers they share (exit codes, error reporting, buffered output).
**
** A subcommand gets argv with argv[0] set to its own name and returns the
** process exit status: 0 success, 1 a runtime failure (reported as
** "frond: CODE_NAME: message"), 2 bad arguments (one line naming the
** subcommand and the argument).
*/
#ifndef FROND_CLI_H
#define FROND_CLI_H

#include "frond.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/args.h"

enum {
  FROND__EXIT_OK = 0,
  FROND__EXIT_FAILURE = 1, /* the library refused: see the message */
  FROND__EXIT_USAGE = 2    /* the command line is wrong */
};

/* The subcommands. */
int frond__cli_next(int argc, char **argv);
int frond__cli_decode(int argc, char **argv);
int frond__cli_layouts(int argc, char **argv);
int frond__cli_tag(int argc, char **argv);
/* `frond tag restore` (tag_restore.c), called by frond__cli_tag. */
int frond__cli_tag_restore(int argc, char **argv);
int frond__cli_bench(int argc, char **argv);
int frond__cli_node(int argc, char **argv);
int frond__cli_check(int argc, char **argv);
int frond__cli_audit(int argc, char **argv);
int frond__cli_clients(int argc, char **argv);

/* `frond --version`: the version, the build's options and the libraries'
** versions, on stdout. Returns the exit status. */
int frond__cli_version(void);

/* Build the format `spec` for subcommand `cmd`, with keys from key_file
** (may be NULL) or else $FROND_ORDER_KEY when set. Returns an exit
** status: 0, 2 for a bad spec (reported), 1 for a key problem (reported). */
int frond__cli_format_create(const char *cmd, const char *spec,
                             const char *key_file, frond_format **out);
/* Before a keyed format's first number: check its key (frond_format_check)
** in the store of src's segment allocator when there is one, else where
** the coordinator that gave this process its node ID keeps facts (the
** lease in the store's database by default: the same record a server's
** store holds), else in the data directory dir; with none of them
** (--no-high-water beside an unregistered node ID: nothing is kept
** between runs), skip the check. */
int frond__cli_format_check(frond_format *f, const frond_format_source *src,
                            frond_coord *coord, const char *dir,
                            frond_error *err);
/* Print a decoded string as one JSON line; 64-bit IDs without a tag are
** split into snowflake fields under layout l. Returns an exit status (1,
** reported, when the ID does not fit l; nothing printed then). */
int frond__cli_print_value(const frond_format_value *v, const char *input,
                           const frond_layout *l);
/* Print snowflake ID id's fields under layout l as one JSON line, the
** fields every front shows (core/format_fields.h). Returns an exit status,
** as frond__cli_print_value. */
int frond__cli_print_snowflake(int64_t id, const frond_layout *l);

/* The audit log's files (audit.c): log (may be NULL) and what rotation
** left beside it (log.1, log.2.gz, log-DATE), sorted, each once, then
** extra as given, in *out (each and the vector malloc'ed; a repeated
** name is ""). 0, or -1 out of memory. */
int frond__cli_audit_files(const char *log, char **extra, int nextra,
                           char ***out, size_t *n);
/* Read the audit log file path (through gzip -dc when it ends in .gz):
** fn is given each line that reads, with its number; the others (a torn
** last line) are counted in *skipped. 0, or -1 when the file cannot be
** read (reported on stderr). */
struct frond__audit_line;
typedef void (*frond__cli_audit_fn)(void *ctx, const char *path,
                                    unsigned long n,
                                    const struct frond__audit_line *l);
int frond__cli_audit_read(const char *path, frond__cli_audit_fn fn, void *ctx,
                          unsigned long *skipped);

/* Print "frond: CODE_NAME: message" for a library failure; returns
** FROND__EXIT_FAILURE. */
int frond__cli_fail(const frond_error *err);

/* Print "frond: IO: <what>: <strerror(errno)>"; returns FROND__EXIT_FAILURE. */
int frond__cli_fail_errno(const char *what);

/*
** Buffered standard output for commands that print a lot. write(2) in
** large blocks; a write error is remembered and reported by
** frond__out_flush. EPIPE (the reader went away) is reported as such so a
** command can stop quietly.
*/
void frond__out_bytes(const char *s, size_t n);
void frond__out_str(const char *s);
void frond__out_printf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Stop writing (with the error EINTR) once *flag is non-zero, even in the
** middle of a block: a signal handler that sets it stops a write blocked
** on a full pipe, since the write returns early with the signal. */
void frond__out_stop_on(volatile sig_atomic_t *flag);
/* Append v in decimal. */
void frond__out_u64(uint64_t v);
void frond__out_i64(int64_t v);
/* Append s as a JSON string, quotes included. */
void frond__out_json_str(const char *s);
/* Print a table of rows x cols cells (row-major, the first row is the
** header), columns padded to their widest cell and separated by two
** spaces; align[c] is 'l' or 'r'. At most 16 columns. Cells are shown as
** frond__out_text shows them, and measured in terminal columns (a wide
** character takes two, a combining mark none). */
/* Append s as text for a terminal: control characters (a newline in a
** description) and bytes that are not UTF-8 as escapes (\n, \xNN,
** \u{NNNN}), the rest as is. */
void frond__out_text(const char *s);
void frond__out_table(const char *const *cells, size_t rows, size_t cols,
                      const char *align);
/* Write what is buffered. Returns 0, or the errno of the first failed
** write (EPIPE included) since the start. */
int frond__out_flush(void);
/* The errno of the first failed write so far, or 0. */
int frond__out_error(void);
/* End a subcommand: flush the output; a failed write turns a successful
** rc into a reported failure. Returns the exit status. */
int frond__out_finish(int rc);

/* "2024-01-01T00:00:00.000Z" for unix ms. */
void frond__cli_time(int64_t unix_ms, char *buf, size_t len);

/* The value of environment variable `name` when set and non-empty, else
** `def`. */
const char *frond__cli_env(const char *name, const char *def);

#endif /* FROND_CLI_H */
