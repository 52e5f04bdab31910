/* SPDX-License-Identifier: Apache-2.0 */
/*
** record.h -- small checksummed record files: keys and values, one per
** line, and a checksum line last.
**
** The high-water file (core/high_water.c) and the node cache
** (coord/coord_cache.c) both keep a handful of values that a restart
** trusts, so a torn, truncated or edited file must be refused rather
** than half read. They share this one format:
**
**   # frond <kind>
**   key=value
**   ...
**   end=<FNV-1a 64 of every byte before this line, 16 lowercase hex>
**
** The first line names what the file is ("high-water", "node cache"), so
** one kind of file is never taken for another. Keys are [A-Za-z0-9_], 1
** to 31 bytes, each once, not "end"; values are any bytes but control
*characters
** (below 0x20, and 0x7f), possibly empty. Nothing may follow the end
** line, and the file ends with a newline. Readers ignore keys they do not
** know, so a later version may add some.
**
** An older, one-line form is still read (frond__record_parse's legacy):
**
**   <legacy> key=value key=value ... check=<FNV-1a 64 of every byte
**   before " check=", 16 lowercase hex>
**
** with values without spaces; files are always written in the form above.
**
** A record is built or read in a frond__record (no allocation): the
** writer puts keys in order then writes the file durably
** (frond__file_replace); the reader parses bytes into views.
*/
#ifndef FROND_BASE_RECORD_H
#define FROND_BASE_RECORD_H

#include "frond.h"

#include <stddef.h>
#include <stdint.h>

#define FROND__RECORD_MAX 4096 /* bytes of a record file */
#define FROND__RECORD_KEYS 16  /* keys of a record */

typedef struct frond__record {
  char text[FROND__RECORD_MAX]; /* the file's bytes (writer), or a copy
                                   split into NUL-ended keys and values */
  size_t len;
  size_t n;   /* keys */
  int bad;    /* writer: a put did not fit or was not valid */
  int legacy; /* reader: the record was in the one-line form */
  struct {
    const char *key;   /* into text: klen bytes (NUL-ended when read) */
    const char *value; /* into text, NUL-ended; NULL while writing */
    size_t klen;
  } kv[FROND__RECORD_KEYS];
} frond__record;

/* ---- writing ---- */

/* Start a record of this kind ("high-water": the first line is
** "# frond high-water"). */
void frond__record_init(frond__record *r, const char *kind);
/* Add key=value. A key that is not [A-Za-z0-9_]{1,31} or repeats, a value
** with a control character, or a record grown past FROND__RECORD_MAX
** bytes or FROND__RECORD_KEYS keys marks the record bad: finish and write
** then fail. */
void frond__record_put(frond__record *r, const char *key, const char *value);
void frond__record_put_i64(frond__record *r, const char *key, int64_t v);
void frond__record_put_u64(frond__record *r, const char *key, uint64_t v);
/* Append the end line: r->text[0..len) is then the whole file. Returns
** the length, or -1 when the record is bad or does not fit. */
int frond__record_finish(frond__record *r);
/* Finish and replace the file at path durably (frond__file_replace).
** Errors: INVAL (a bad record), IO. */
int frond__record_write(frond__record *r, const char *path, frond_error *err);

/* ---- reading ---- */

/*
** Parse data[0..len) as a record of this kind, or, when legacy is not
** NULL, as a one-line record starting with "<legacy> ". Returns 0, or -1
** with *why (not NULL) a static sentence saying what is wrong (torn,
** checksum mismatch, another kind of file, a malformed line). Pure.
*/
int frond__record_parse(frond__record *r, const char *kind, const char *legacy,
                        const char *data, size_t len, const char **why);
/*
** Read and parse the file at path. Returns 0; 1 when there is no file;
** IO with the system's words; or the caller's code `corrupt` with
** "<path>: <why>" when the file is not a whole record of this kind.
*/
int frond__record_read(frond__record *r, const char *path, const char *kind,
                       const char *legacy, int corrupt, frond_error *err);

/* The value of key in a record read, or NULL when it has none. */
const char *frond__record_get(const frond__record *r, const char *key);
/* The value of key as an integer written in decimal as the writer prints
** it (an optional '-', no leading zero, no "-0"). 0, or -1 when absent or
** not such a number. */
int frond__record_get_i64(const frond__record *r, const char *key,
                          int64_t *out);
/* The same, at least 0 and at most INT64_MAX. */
int frond__record_get_u64(const frond__record *r, const char *key,
                          uint64_t *out);
/* Copy the value of key into out (len bytes, NUL-ended). 0, or -1 when
** absent or too long. */
int frond__record_get_str(const frond__record *r, const char *key, char *out,
                          size_t len);

#endif /* FROND_BASE_RECORD_H */
