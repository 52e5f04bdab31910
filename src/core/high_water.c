/* SPDX-License-Identifier: Apache-2.0 */
/*
** high_water.c -- the durable high-water file (see high_water.h).
**
** A record file (base/record.h) of kind "high-water":
**   # frond high-water
**   node=N
**   time_ms=T
**   seq=S
**   clean=C
**   layout=SPEC
**   end=H
** where H is the FNV-1a 64-bit hash, in 16 hex digits, of everything
** before the end line. Earlier versions wrote one line,
**   frond-highwater 1 node=N time_ms=T seq=S clean=C layout=SPEC check=H
** which is still read. A missing newline, a bad hash or any other
** deviation is a torn or foreign file and is reported, never silently
** reset.
*/
#include "core/high_water.h"
#include "base/base.h"
#include "base/record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define HW_KIND "high-water"
#define HW_LEGACY "frond-highwater 1"

struct frond__hw {
  int lock_fd;
  char *path;
};

static char *concat(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 1);
  if (s != NULL) {
    memcpy(s, a, la);
    memcpy(s + la, b, lb + 1);
  }
  return s;
}

int frond__hw_path(char *buf, size_t len, const char *dir, uint64_t node) {
  int n = snprintf(buf, len, "%s/frond-node-%" PRIu64 ".hw", dir, node);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

int frond__hw_open(frond__hw **out, const char *path, frond_error *err) {
  frond__hw *hw = calloc(1, sizeof(*hw));
  char *lock_path;
  if (hw == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  hw->lock_fd = -1;
  hw->path = strdup(path);
  lock_path = concat(path, ".lock");
  if (hw->path == NULL || lock_path == NULL) {
    free(lock_path);
    frond__hw_close(hw);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  hw->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (hw->lock_fd < 0) {
    int rc = frond__fail(err, FROND_EIO, "cannot open %s: %s", lock_path,
                         strerror(errno));
    free(lock_path);
    frond__hw_close(hw);
    return rc;
  }
  if (flock(hw->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int rc = errno == EWOULDBLOCK
                 ? frond__fail(err, FROND_ENODE_IN_USE,
                               "%s is locked by another process using the "
                               "same node ID",
                               lock_path)
                 : frond__fail(err, FROND_EIO, "cannot lock %s: %s", lock_path,
                               strerror(errno));
    free(lock_path);
    frond__hw_close(hw);
    return rc;
  }
  free(lock_path);
  *out = hw;
  return 0;
}

void frond__hw_close(frond__hw *hw) {
  if (hw == NULL)
    return;
  if (hw->lock_fd >= 0)
    close(hw->lock_fd); /* releases the flock */
  free(hw->path);
  free(hw);
}

/* The record as a record file (not finished). */
static void fill(const frond__hw_record *rec, frond__record *r) {
  frond__record_init(r, HW_KIND);
  frond__record_put_u64(r, "node", rec->node);
  frond__record_put_i64(r, "time_ms", rec->time_ms);
  frond__record_put_u64(r, "seq", rec->seq);
  frond__record_put_i64(r, "clean", rec->clean ? 1 : 0);
  frond__record_put(r, "layout", rec->layout);
}

int frond__hw_format(const frond__hw_record *rec, char *buf, size_t len) {
  frond__record r;
  fill(rec, &r);
  if (frond__record_finish(&r) < 0)
    return -1;
  return snprintf(buf, len, "%.*s", (int)r.len, r.text);
}

/* The fields of a record read; HIGHWATER_CORRUPT when one is missing or
** out of its range. */
static int fields_of(const frond__record *r, frond__hw_record *rec,
                     frond_error *err) {
  uint64_t node, t, seq, clean;
  const char *lay = frond__record_get(r, "layout");
  size_t laylen;
  if (frond__record_get_u64(r, "node", &node) != 0 ||
      frond__record_get_u64(r, "time_ms", &t) != 0 ||
      frond__record_get_u64(r, "seq", &seq) != 0 ||
      frond__record_get_u64(r, "clean", &clean) != 0 || clean > 1 ||
      lay == NULL)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "malformed fields");
  laylen = strlen(lay);
  if (laylen == 0 || laylen >= sizeof(rec->layout))
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "malformed layout");
  /* A spec is printable ASCII without spaces: anything else would be
  ** misread, never round-tripped. */
  for (size_t i = 0; i < laylen; i++)
    if (lay[i] <= ' ' || lay[i] > '~')
      return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "malformed layout");
  rec->node = node;
  rec->time_ms = (int64_t)t;
  rec->seq = seq;
  rec->clean = (int)clean;
  memcpy(rec->layout, lay, laylen + 1);
  return 0;
}

int frond__hw_parse(const char *buf, size_t len, frond__hw_record *rec,
                    frond_error *err) {
  frond__record r;
  const char *why;
  if (frond__record_parse(&r, HW_KIND, HW_LEGACY, buf, len, &why) != 0)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "%s", why);
  return fields_of(&r, rec, err);
}

int frond__hw_first_after(const frond__hw_record *rec, const frond_layout *l,
                          uint64_t node, uint64_t *start, int64_t *last_id,
                          frond_error *err) {
  frond_layout old;
  frond_fields f;
  frond_error e = {0, ""};
  char spec[sizeof(rec->layout)];
  unsigned ts = l->seq_bits + l->node_bits;
  uint64_t mask = (UINT64_C(1) << l->seq_bits) - 1, m, unit, first;
  int64_t d;
  if (node > frond_layout_max_node(l))
    return frond__fail(err, FROND_ENODE_RANGE,
                       "node %" PRIu64 " does not fit %u node bits", node,
                       l->node_bits);
  /* A spec is read back only when it differs from ours: ours was checked
  ** against the generator's own clock already. */
  frond_layout_format(l, spec, sizeof(spec));
  if (strcmp(spec, rec->layout) == 0)
    old = *l;
  else if (frond_layout_parse(rec->layout, &old, &e) != 0)
    return frond__fail(err, FROND_ELAYOUT_INVALID,
                       "written under layout '%s', which cannot be read (%s): "
                       "refusing to guess where its IDs end",
                       rec->layout, e.message);
  d = rec->time_ms - old.epoch_ms;
  f.time = d >= 0 ? d / old.unit_ms : -1;
  f.node = rec->node;
  f.sequence = rec->seq;
  if (frond_compose(&old, &f, last_id, &e) != 0)
    return frond__fail(
        err, FROND_EHIGHWATER_CORRUPT,
        "the record (node %" PRIu64 ", time_ms %" PRId64 ", seq %" PRIu64
        ") does not fit its own layout '%s': %s",
        rec->node, rec->time_ms, rec->seq, rec->layout, e.message);
  /* The least ID of `node` above m: in m's unit of `l` when node's part of
  ** that unit reaches past m, else the next unit's first. */
  m = (uint64_t)*last_id;
  unit = m >> ts;
  first = unit << ts | node << l->seq_bits;
  if (first > m)
    *start = unit << l->seq_bits;
  else if (m - first < mask)
    *start = unit << l->seq_bits | (m - first + 1);
  else
    *start = (unit + 1) << l->seq_bits;
  return 0;
}

int64_t frond__layout_lockout_ms(const frond_layout *old,
                                 const frond_layout *nw, int64_t now_ms) {
  frond_fields f;
  int64_t id, end = frond_layout_end_ms(nw);
  uint64_t unit;
  unsigned shift = old->seq_bits + old->node_bits;
  if (now_ms < nw->epoch_ms)
    return now_ms;
  memset(&f, 0, sizeof(f));
  f.time = ((now_ms < end ? now_ms : end - 1) - nw->epoch_ms) / nw->unit_ms;
  f.node = frond_layout_max_node(nw);
  f.sequence = (UINT64_C(1) << nw->seq_bits) - 1;
  if (frond_compose(nw, &f, &id, NULL) != 0)
    return INT64_MAX;
  /* old's first unit whose smallest ID (node 0, sequence 0) is above id. */
  unit = ((uint64_t)id >> shift) + 1;
  if (shift + old->time_bits < 63 && (uint64_t)id >> (shift + old->time_bits))
    return INT64_MAX;
  if (unit > (UINT64_C(1) << old->time_bits) - 1 ||
      (int64_t)unit > (INT64_MAX - old->epoch_ms) / old->unit_ms)
    return INT64_MAX;
  return old->epoch_ms + (int64_t)unit * old->unit_ms;
}

/* A duration for people: "5467 days", "7 hours", "12 minutes", "3 s". */
static void human(int64_t ms, char *buf, size_t len) {
  if (ms >= 2 * INT64_C(86400000))
    snprintf(buf, len, "%" PRId64 " days", ms / 86400000);
  else if (ms >= 2 * INT64_C(3600000))
    snprintf(buf, len, "%" PRId64 " hours", ms / 3600000);
  else if (ms >= 2 * INT64_C(60000))
    snprintf(buf, len, "%" PRId64 " minutes", ms / 60000);
  else
    snprintf(buf, len, "%" PRId64 " s", (ms + 999) / 1000);
}

const char *frond__layout_label(const frond_layout *l, char *buf, size_t len) {
  char spec[160], p[160];
  frond_layout_format(l, spec, sizeof(spec));
  for (size_t i = 0; i < frond_layout_preset_count(); i++) {
    frond_layout_format(frond_layout_preset(i), p, sizeof(p));
    if (strcmp(p, spec) == 0) {
      snprintf(buf, len, "%s", frond_layout_preset(i)->name);
      return buf;
    }
  }
  snprintf(buf, len, "%s", spec);
  return buf;
}

const char *frond__layout_lockout_text(const frond_layout *old,
                                       const frond_layout *nw, int64_t now_ms,
                                       char *buf, size_t len) {
  char a[160], when[40], dur[40];
  int64_t t = frond__layout_lockout_ms(old, nw, now_ms);
  /* IDs per ms of each: when the new layout's grow at least as fast,
  ** every day under it pushes the date further. */
  double o = (double)(UINT64_C(1) << (old->seq_bits + old->node_bits)) /
             (double)old->unit_ms;
  double n = (double)(UINT64_C(1) << (nw->seq_bits + nw->node_bits)) /
             (double)nw->unit_ms;
  frond__layout_label(old, a, sizeof(a));
  if (t == INT64_MAX) {
    snprintf(buf, len, "'%s' would be locked out for good", a);
  } else if (t <= now_ms) {
    snprintf(buf, len, "'%s' could come back at once", a);
  } else {
    frond__format_rfc3339(t, when, sizeof(when));
    human(t - now_ms, dur, sizeof(dur));
    snprintf(buf, len,
             "'%s' would be locked out until %s (%s, %s the longer the new "
             "layout runs)",
             a, when, dur, n >= o ? "more" : "less");
  }
  return buf;
}

int frond__hw_read(frond__hw *hw, frond__hw_record *rec, frond_error *err) {
  frond__record r;
  int rc = frond__record_read(&r, hw->path, HW_KIND, HW_LEGACY,
                              FROND_EHIGHWATER_CORRUPT, err);
  if (rc == 0 && (rc = fields_of(&r, rec, err)) != 0 && err != NULL) {
    char detail[sizeof(err->message)];
    snprintf(detail, sizeof(detail), "%s", err->message);
    frond__fail(err, rc, "%s: %s", hw->path, detail);
  }
  if (rc == FROND_EHIGHWATER_CORRUPT && err != NULL) {
    char detail[sizeof(err->message)];
    snprintf(detail, sizeof(detail), "%s", err->message);
    frond__fail(err, rc,
                "%s; it is never reset silently: check it, or remove it "
                "only if no IDs of this node may still exist above the "
                "current time",
                detail);
  }
  return rc;
}

int frond__hw_write(frond__hw *hw, const frond__hw_record *rec,
                    frond_error *err) {
  frond__record r;
  fill(rec, &r);
  return frond__record_write(&r, hw->path, err);
}
