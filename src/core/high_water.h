/* SPDX-License-Identifier: Apache-2.0 */
/*
** high_water.h -- the snowflake generator's durable high-water file.
**
** One small record file (base/record.h) per node ID, replaced atomically
** (write a temporary file, fsync it, rename it over the old one, fsync the
** directory), so a crash leaves either the old or the new content, never
** a mix, and checksummed, so a torn or edited file is refused. A sibling
** ".lock" file is held with flock() while a generator uses the node, so two
** processes on one host cannot share a node ID through the same file.
*/
#ifndef FROND_CORE_HIGH_WATER_H
#define FROND_CORE_HIGH_WATER_H

#include "frond.h"

typedef struct frond__hw frond__hw;

typedef struct frond__hw_record {
  uint64_t node;
  int64_t time_ms;  /* unix ms of the unit of the last ID that may have been
                       issued (a reservation) or was issued (a clean close) */
  uint64_t seq;     /* sequence within that unit; the layout's maximum for a
                       reservation */
  int clean;        /* 1 when written by a clean close */
  char layout[128]; /* frond_layout_format() of the writer's layout */
} frond__hw_record;

/* The node's file in a data directory: "<dir>/frond-node-<node>.hw", the
** one name the command and the server share, so that both use the same
** file for a node. Returns 0, or -1 when buf is too small. */
int frond__hw_path(char *buf, size_t len, const char *dir, uint64_t node);

/* Lock the node's file. Errors: NODE_IN_USE (another process holds it), IO,
** NOMEM. */
int frond__hw_open(frond__hw **out, const char *path, frond_error *err);
/* Read the record. Returns 0, 1 when there is no file (a first start), or
** HIGHWATER_CORRUPT / IO. */
int frond__hw_read(frond__hw *hw, frond__hw_record *rec, frond_error *err);
/* Replace the record durably. Errors: IO. */
int frond__hw_write(frond__hw *hw, const frond__hw_record *rec,
                    frond_error *err);
/* Release the lock and free. NULL is a no-op. */
void frond__hw_close(frond__hw *hw);

/*
** Where a generator for `node` under layout `l` may start after `rec`.
** *last_id is the largest ID the record's own layout could have issued for
** the record's node at the record (its unit and sequence); *start is the
** least packed value (unit << seq_bits | sequence, in `l`) whose ID, for
** `node` under `l`, is above it. The same layout is the special case where
** that is the value right after the record. *start may lie beyond l's last
** unit: then `l` cannot place an ID above the old ones. Pure function.
** Errors: LAYOUT_INVALID (the record's layout cannot be read; nothing is
** guessed), HIGHWATER_CORRUPT (the record does not fit its own layout),
** NODE_RANGE (node does not fit `l`).
*/
int frond__hw_first_after(const frond__hw_record *rec, const frond_layout *l,
                          uint64_t node, uint64_t *start, int64_t *last_id,
                          frond_error *err);

/*
** What switching from layout `old` to `nw` at now_ms costs `old`: the unix
** ms from which old's IDs pass the largest ID nw can issue at now_ms (any
** node, any sequence), so that old could be used again after a switch
** made now; the longer nw is used, the later that gets. INT64_MAX: never
** (old's time bits end first); at or below now_ms: at once. Pure.
*/
int64_t frond__layout_lockout_ms(const frond_layout *old,
                                 const frond_layout *nw, int64_t now_ms);
/* The same as a phrase for a message into buf: "'A' would be locked out
** until <time> (N days, more the longer the new layout runs)", "... for
** good" or "'A' could come back at once". Returns buf. */
const char *frond__layout_lockout_text(const frond_layout *old,
                                       const frond_layout *nw, int64_t now_ms,
                                       char *buf, size_t len);

/* A layout's name for messages: the preset it equals, else its spec. */
const char *frond__layout_label(const frond_layout *l, char *buf, size_t len);

/* The record as the file's bytes (for tests; the file holds the same);
** returns the length, as snprintf, or -1 when it does not fit a record. */
int frond__hw_format(const frond__hw_record *rec, char *buf, size_t len);
/* Parse a file's bytes: what frond__hw_format writes, or the one line
** that versions before the record files wrote. Returns 0 or
** HIGHWATER_CORRUPT. */
int frond__hw_parse(const char *buf, size_t len, frond__hw_record *rec,
                    frond_error *err);

#endif /* FROND_CORE_HIGH_WATER_H */
