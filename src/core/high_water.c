/*
** high_water.c -- the durable high-water file (see high_water.h).
**
** Format, one line:
**   frond-highwater 1 node=N time_ms=T seq=S clean=C layout=SPEC check=H
** where H is the FNV-1a 64-bit hash, in 16 hex digits, of everything before
** " check=". A missing newline, a bad hash or any other deviation is a torn
** or foreign file and is reported, never silently reset.
*/
#include "core/high_water.h"
#include "base/file.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define HW_MAGIC "frond-highwater 1 "
#define HW_MAX 512

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

int frond__hw_format(const frond__hw_record *rec, char *buf, size_t len) {
  char body[HW_MAX];
  int n = snprintf(body, sizeof(body),
                   HW_MAGIC "node=%" PRIu64 " time_ms=%" PRId64 " seq=%" PRIu64
                            " clean=%d layout=%s",
                   rec->node, rec->time_ms, rec->seq, rec->clean ? 1 : 0,
                   rec->layout);
  if (n < 0 || (size_t)n >= sizeof(body))
    return -1;
  return snprintf(buf, len, "%s check=%016" PRIx64 "\n", body,
                  frond__fnv1a64(body, (size_t)n));
}

/* Read "name=<digits>" at *p followed by a space. Digits as the writer
** prints them: no sign, no leading zero. */
static int field_u64(const char **p, const char *end, const char *name,
                     uint64_t *out) {
  size_t n = strlen(name);
  const char *q;
  int64_t v;
  if ((size_t)(end - *p) < n + 1 || memcmp(*p, name, n) != 0 || (*p)[n] != '=')
    return -1;
  *p += n + 1;
  q = memchr(*p, ' ', (size_t)(end - *p));
  if (q == NULL || q == *p || **p < '0' || **p > '9' ||
      (**p == '0' && q - *p > 1) ||
      frond__parse_i64(*p, (size_t)(q - *p), &v) != 0 || v < 0)
    return -1;
  *out = (uint64_t)v;
  *p = q + 1;
  return 0;
}

int frond__hw_parse(const char *buf, size_t len, frond__hw_record *rec,
                    frond_error *err) {
  const char *p = buf, *end, *check, *lay;
  uint64_t node, t, seq, clean, want;
  size_t laylen;
  char hex[17];
  if (len == 0 || buf[len - 1] != '\n')
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT,
                       "the file is empty or torn (no final newline)");
  end = buf + len - 1;
  check = NULL;
  for (const char *s = buf; s + 7 <= end; s++)
    if (memcmp(s, " check=", 7) == 0)
      check = s;
  if (check == NULL || end - (check + 7) != 16)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "no valid check field");
  memcpy(hex, check + 7, 16);
  hex[16] = '\0';
  for (int i = 0; i < 16; i++)
    if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
      return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "malformed check");
  want = strtoull(hex, NULL, 16);
  if (frond__fnv1a64(buf, (size_t)(check - buf)) != want)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT,
                       "checksum mismatch: the content was altered or torn");
  if ((size_t)(check - p) < strlen(HW_MAGIC) ||
      memcmp(p, HW_MAGIC, strlen(HW_MAGIC)) != 0)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT,
                       "not a frond high-water file (version 1)");
  p += strlen(HW_MAGIC);
  if (field_u64(&p, check, "node", &node) ||
      field_u64(&p, check, "time_ms", &t) ||
      field_u64(&p, check, "seq", &seq) ||
      field_u64(&p, check, "clean", &clean) || clean > 1 ||
      (size_t)(check - p) < 7 || memcmp(p, "layout=", 7) != 0)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "malformed fields");
  lay = p + 7;
  laylen = (size_t)(check - lay);
  if (laylen == 0 || laylen >= sizeof(rec->layout) || t > (uint64_t)INT64_MAX)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "malformed layout");
  /* A spec is printable ASCII without spaces: a NUL or a control byte
  ** would be cut off or misread, never round-tripped. */
  for (size_t i = 0; i < laylen; i++)
    if (lay[i] <= ' ' || lay[i] > '~')
      return frond__fail(err, FROND_EHIGHWATER_CORRUPT, "malformed layout");
  rec->node = node;
  rec->time_ms = (int64_t)t;
  rec->seq = seq;
  rec->clean = (int)clean;
  memcpy(rec->layout, lay, laylen);
  rec->layout[laylen] = '\0';
  return 0;
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

int frond__hw_read(frond__hw *hw, frond__hw_record *rec, frond_error *err) {
  char buf[HW_MAX + 1];
  ssize_t n;
  int rc;
  int fd = open(hw->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 1;
    return frond__fail(err, FROND_EIO, "cannot open %s: %s", hw->path,
                       strerror(errno));
  }
  n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n < 0)
    return frond__fail(err, FROND_EIO, "cannot read %s: %s", hw->path,
                       strerror(errno));
  if ((size_t)n > HW_MAX)
    return frond__fail(err, FROND_EHIGHWATER_CORRUPT,
                       "%s: too large to be a high-water file", hw->path);
  rc = frond__hw_parse(buf, (size_t)n, rec, err);
  if (rc != 0 && err != NULL) {
    char detail[sizeof(err->message)];
    snprintf(detail, sizeof(detail), "%s", err->message);
    frond__fail(err, rc,
                "%s: %s; it is never reset silently: check it, or remove it "
                "only if no IDs of this node may still exist above the "
                "current time",
                hw->path, detail);
  }
  return rc;
}

int frond__hw_write(frond__hw *hw, const frond__hw_record *rec,
                    frond_error *err) {
  char line[HW_MAX];
  int n = frond__hw_format(rec, line, sizeof(line));
  if (n < 0 || (size_t)n >= sizeof(line))
    return frond__fail(err, FROND_EINVAL, "high-water record too long");
  return frond__file_replace(hw->path, line, (size_t)n, err);
}
