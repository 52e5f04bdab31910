/* SPDX-License-Identifier: Apache-2.0 */
/*
** audit_line.h -- one line of the audit log (audit.c writes them), read
** back for `frond audit find`.
**
** A pure function over a buffer, as the HTTP parser is: no allocation, no
** read outside its input. It reads one flat JSON object, keeps the fields
** it knows and skips the others (a later version may write more), and
** refuses anything else: a torn line (a crash in the middle of a write),
** a nested value, a string too long for its field.
*/
#ifndef FROND_SERVER_AUDIT_LINE_H
#define FROND_SERVER_AUDIT_LINE_H

#include "frond.h"

#include <stddef.h>
#include <stdint.h>

/* Which integer fields a line had (frond__audit_line.have). */
enum {
  FROND__AUDIT_NODE = 1,
  FROND__AUDIT_FIRST = 2,
  FROND__AUDIT_LAST = 4,
  FROND__AUDIT_COUNT = 8
};

typedef struct frond__audit_line {
  char time[40];
  char client[64];
  char remote[72];
  char proto[16];
  char op[16];    /* range, batch, singles; "" for an event line */
  char event[16]; /* dropped; "" for a record */
  char tag[FROND_TAG_MAX + 1];
  char format[40];
  char layout[160];
  char first_string[128], last_string[128];
  unsigned have; /* FROND__AUDIT_* */
  int64_t node, first, last, count;
  int answered; /* 0 when "answered":false */
} frond__audit_line;

/* Read s[0..len) (without its newline) into *out. 0, or -1 when it is
** not a whole, flat JSON object whose known fields fit. */
int frond__audit_line_parse(const char *s, size_t len, frond__audit_line *out);

#endif /* FROND_SERVER_AUDIT_LINE_H */
