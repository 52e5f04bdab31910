/* SPDX-License-Identifier: Apache-2.0 */
/*
** format_fields.h -- what a decoded ID string holds, as a list of named
** fields, for every front that shows it: `frond decode` prints it as JSON,
** the server as JSON and as RESP field/value pairs. One list, so that they
** agree (tests/integration/test_formats_server.py compares them).
*/
#ifndef FROND_FORMAT_FIELDS_H
#define FROND_FORMAT_FIELDS_H

#include "frond.h"

/* One field: a number (a JSON number, a RESP integer) or a string. 64-bit
** IDs and sequence numbers are strings, as every JSON answer gives IDs. */
typedef struct frond__field {
  const char *name;
  int is_num;
  int64_t num;
  char str[FROND_TAG_MAX + 2];
} frond__field;

#define FROND__FIELDS_MAX 16
/* Input longer than this is shown cut (no ID string is this long). */
#define FROND__FIELD_INPUT_MAX 128

/*
** The fields of v, decoded from input[0..len): "format", "input", then
** what the kind holds. A 64-bit ID without a tag is a snowflake ID of
** layout l: its fields follow as frond__snowflake_fields lists them (the
** time of a UUID, ULID or ObjectId that holds one is the string's own).
** Writes at most FROND__FIELDS_MAX fields to out, their count to *n.
** Errors: those of frond_decode (the ID does not fit l).
*/
int frond__format_fields(const frond_format_value *v, const char *input,
                         size_t len, const frond_layout *l, frond__field *out,
                         size_t *n, frond_error *err);

/*
** The fields of snowflake ID id under layout l, the one list every front
** shows (frond decode, /v1/decode, ID.DECODE), in this order: "id" (a
** string), "time" (RFC 3339, UTC), "unix_ms", "time_units" (units since
** the epoch), "node", "datacenter" and "worker" (0 and the node when l
** does not split the node field), "sequence" and "layout" (l's spec).
** Errors: those of frond_decode.
*/
int frond__snowflake_fields(const frond_layout *l, int64_t id,
                            frond__field *out, size_t *n, frond_error *err);

#endif /* FROND_FORMAT_FIELDS_H */
