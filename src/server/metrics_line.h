/* SPDX-License-Identifier: Apache-2.0 */
/*
** metrics_line.h -- one line of the Prometheus text format (metrics.c
** writes them), read back for `frond tag restore`.
**
** A pure function over a buffer, as the audit line reader is: no
** allocation, no read outside its input. It reads a sample line
** (name{label="value",...} value [timestamp]), says a comment or a blank
** line is none, and refuses anything else: a torn line (a scrape cut
** short), an unterminated label value, a value that is not a number.
*/
#ifndef FROND_SERVER_METRICS_LINE_H
#define FROND_SERVER_METRICS_LINE_H

#include <stddef.h>
#include <stdint.h>

#define FROND__METRICS_LABELS 8      /* labels kept; more are skipped */
#define FROND__METRICS_NAME_MAX 128  /* a metric's or a label's name */
#define FROND__METRICS_VALUE_MAX 256 /* a label's value, unescaped */

typedef struct frond__metrics_label {
  char name[FROND__METRICS_NAME_MAX + 1];
  char value[FROND__METRICS_VALUE_MAX + 1];
  int cut; /* the value was longer than the field: do not trust it */
} frond__metrics_label;

typedef struct frond__metrics_line {
  char name[FROND__METRICS_NAME_MAX + 1];
  int nlabels; /* kept, at most FROND__METRICS_LABELS */
  frond__metrics_label labels[FROND__METRICS_LABELS];
  int is_int;     /* the value is a plain decimal integer, in ivalue */
  int64_t ivalue; /* when is_int */
} frond__metrics_line;

/* Read s[0..len) (without its newline). 1 for a sample (out filled), 0 for
** a comment or a blank line, -1 when it is neither. */
int frond__metrics_line_parse(const char *s, size_t len,
                              frond__metrics_line *out);

/* The value of label `name` in l, or NULL (also when it was cut). */
const char *frond__metrics_label_get(const frond__metrics_line *l,
                                     const char *name);

#endif /* FROND_SERVER_METRICS_LINE_H */
