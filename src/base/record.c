/* SPDX-License-Identifier: Apache-2.0 */
/*
** record.c -- small checksummed record files (see record.h).
*/
#include "base/record.h"
#include "base/base.h"
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define KEY_MAX 31
#define SUM_LEN 16 /* hex digits of the checksum */

/* [A-Za-z0-9_]{1,31}, and not "end", the checksum's own line. */
static int key_ok(const char *k, size_t n) {
  if (n == 0 || n > KEY_MAX || (n == 3 && memcmp(k, "end", 3) == 0))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
          (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
      return 0;
  return 1;
}

/* A value holds no control character (and so no newline). */
static int value_ok(const char *v, size_t n, int spaces) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v[i];
    if (c < 0x20 || c == 0x7f || (c == ' ' && !spaces))
      return 0;
  }
  return 1;
}

static const char *lookup(const frond__record *r, const char *key,
                          size_t klen) {
  for (size_t i = 0; i < r->n; i++)
    if (r->kv[i].klen == klen && memcmp(r->kv[i].key, key, klen) == 0)
      return r->kv[i].value ? r->kv[i].value : "";
  return NULL;
}

/* ---- writing ---- */

void frond__record_init(frond__record *r, const char *kind) {
  int n = snprintf(r->text, sizeof(r->text), "# frond %s\n", kind);
  r->n = 0;
  r->legacy = 0;
  r->bad =
      n < 0 || (size_t)n >= sizeof(r->text) || !value_ok(kind, strlen(kind), 1);
  r->len = r->bad ? 0 : (size_t)n;
}

void frond__record_put(frond__record *r, const char *key, const char *value) {
  size_t kl = strlen(key), vl = strlen(value);
  /* Room is kept for the end line. */
  size_t room = sizeof(r->text) - r->len - (sizeof("end=\n") - 1 + SUM_LEN);
  if (r->bad)
    return;
  if (!key_ok(key, kl) || !value_ok(value, vl, 1) || lookup(r, key, kl) ||
      r->n == FROND__RECORD_KEYS || kl + vl + 2 > room) {
    r->bad = 1;
    return;
  }
  memcpy(r->text + r->len, key, kl);
  r->text[r->len + kl] = '=';
  memcpy(r->text + r->len + kl + 1, value, vl);
  r->text[r->len + kl + 1 + vl] = '\n';
  r->kv[r->n].key = r->text + r->len; /* for the check of repeated keys */
  r->kv[r->n].value = NULL;
  r->kv[r->n].klen = kl;
  r->n++;
  r->len += kl + vl + 2;
}

void frond__record_put_i64(frond__record *r, const char *key, int64_t v) {
  char num[FROND__DEC_MAX + 1];
  num[frond__dec_i64(num, v)] = '\0';
  frond__record_put(r, key, num);
}

void frond__record_put_u64(frond__record *r, const char *key, uint64_t v) {
  char num[FROND__DEC_MAX + 1];
  num[frond__dec_u64(num, v)] = '\0';
  frond__record_put(r, key, num);
}

int frond__record_finish(frond__record *r) {
  char end[32];
  int n;
  if (r->bad)
    return -1;
  n = snprintf(end, sizeof(end), "end=%016" PRIx64 "\n",
               frond__fnv1a64(r->text, r->len));
  /* The file may fill the buffer: it needs no NUL. */
  if (n < 0 || (size_t)n > sizeof(r->text) - r->len)
    return -1;
  memcpy(r->text + r->len, end, (size_t)n);
  r->len += (size_t)n;
  r->bad = 1; /* finished: no more puts */
  return (int)r->len;
}

int frond__record_write(frond__record *r, const char *path, frond_error *err) {
  if (frond__record_finish(r) < 0)
    return frond__fail(err, FROND_EINVAL,
                       "%s: a record too long or with a malformed key or "
                       "value",
                       path);
  return frond__file_replace(path, r->text, r->len, err);
}

/* ---- reading ---- */

/* 16 lowercase hex digits at p equal to sum. */
static int sum_ok(const char *p, uint64_t sum) {
  char want[SUM_LEN + 1];
  snprintf(want, sizeof(want), "%016" PRIx64, sum);
  return memcmp(p, want, SUM_LEN) == 0;
}

/* Record the NUL-ended key=value at r->text + at, of length n. */
static int add(frond__record *r, size_t at, size_t n, int spaces) {
  char *k = r->text + at, *eq = memchr(k, '=', n);
  if (eq == NULL || !key_ok(k, (size_t)(eq - k)) ||
      !value_ok(eq + 1, n - (size_t)(eq - k) - 1, spaces) ||
      lookup(r, k, (size_t)(eq - k)) != NULL || r->n == FROND__RECORD_KEYS)
    return -1;
  *eq = '\0';
  k[n] = '\0';
  r->kv[r->n].key = k;
  r->kv[r->n].value = eq + 1;
  r->kv[r->n].klen = (size_t)(eq - k);
  r->n++;
  return 0;
}

/* The one-line form: "<legacy> k=v k=v ... check=<hex>\n". */
static int parse_legacy(frond__record *r, size_t magic, const char **why) {
  size_t end = r->len - 1, check = 0, at;
  for (size_t i = magic; i + 7 <= end; i++)
    if (memcmp(r->text + i, " check=", 7) == 0)
      check = i;
  if (check == 0 || end - (check + 7) != SUM_LEN) {
    *why = "no valid check field";
    return -1;
  }
  if (!sum_ok(r->text + check + 7, frond__fnv1a64(r->text, check))) {
    *why = "checksum mismatch: the content was altered or torn";
    return -1;
  }
  r->legacy = 1;
  for (at = magic; at < check;) {
    char *sp = memchr(r->text + at, ' ', check - at);
    size_t n = sp ? (size_t)(sp - (r->text + at)) : check - at;
    if (add(r, at, n, 0) != 0) {
      *why = "malformed field";
      return -1;
    }
    at += n + 1;
  }
  return 0;
}

int frond__record_parse(frond__record *r, const char *kind, const char *legacy,
                        const char *data, size_t len, const char **why) {
  char head[64];
  size_t hl, last, at;
  r->n = 0;
  r->len = 0;
  r->bad = 1; /* a read record is not for writing */
  r->legacy = 0;
  if (len == 0 || data[len - 1] != '\n') {
    *why = "the file is empty or torn (no final newline)";
    return -1;
  }
  if (len > sizeof(r->text) || memchr(data, '\0', len) != NULL) {
    *why = "too large, or holds a NUL byte";
    return -1;
  }
  memcpy(r->text, data, len);
  r->len = len;
  if (legacy != NULL) {
    size_t ml = strlen(legacy);
    if (len > ml && memcmp(data, legacy, ml) == 0 && data[ml] == ' ')
      return parse_legacy(r, ml + 1, why);
  }
  /* The end line: the last one, whole. */
  for (last = len - 1; last > 0 && data[last - 1] != '\n'; last--)
    ;
  if (len - last != sizeof("end=\n") - 1 + SUM_LEN ||
      memcmp(data + last, "end=", 4) != 0) {
    *why = "no end line: the file is torn or not a record";
    return -1;
  }
  if (!sum_ok(data + last + 4, frond__fnv1a64(data, last))) {
    *why = "checksum mismatch: the content was altered or torn";
    return -1;
  }
  hl = (size_t)snprintf(head, sizeof(head), "# frond %s\n", kind);
  if (hl >= sizeof(head) || last < hl || memcmp(data, head, hl) != 0) {
    *why = "not a file of this kind (its first line differs)";
    return -1;
  }
  for (at = hl; at < last;) {
    size_t n = (size_t)((const char *)memchr(data + at, '\n', last - at) -
                        (data + at));
    if (add(r, at, n, 1) != 0) {
      *why = "malformed line";
      return -1;
    }
    at += n + 1;
  }
  return 0;
}

int frond__record_read(frond__record *r, const char *path, const char *kind,
                       const char *legacy, int corrupt, frond_error *err) {
  /* One byte more than a record may hold tells a file that is too large. */
  char buf[FROND__RECORD_MAX + 1];
  const char *why = NULL;
  size_t n = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 1;
    return frond__fail(err, FROND_EIO, "cannot open %s: %s", path,
                       strerror(errno));
  }
  while (n < sizeof(buf)) {
    ssize_t k = read(fd, buf + n, sizeof(buf) - n);
    if (k > 0) {
      n += (size_t)k;
    } else if (k == 0) {
      break;
    } else if (errno != EINTR) {
      int e = errno;
      close(fd);
      return frond__fail(err, FROND_EIO, "cannot read %s: %s", path,
                         strerror(e));
    }
  }
  close(fd);
  if (n > FROND__RECORD_MAX)
    return frond__fail(err, corrupt, "%s: too large to be a frond %s file",
                       path, kind);
  if (frond__record_parse(r, kind, legacy, buf, n, &why) != 0)
    return frond__fail(err, corrupt, "%s: %s", path, why);
  return 0;
}

const char *frond__record_get(const frond__record *r, const char *key) {
  return lookup(r, key, strlen(key));
}

int frond__record_get_i64(const frond__record *r, const char *key,
                          int64_t *out) {
  const char *v = frond__record_get(r, key), *d;
  size_t n;
  if (v == NULL)
    return -1;
  n = strlen(v);
  d = v[0] == '-' ? v + 1 : v;
  /* As the writer prints: digits, no leading zero, no "-0". */
  if (*d < '0' || *d > '9' || (d[0] == '0' && (d[1] != '\0' || d != v)))
    return -1;
  return frond__parse_i64(v, n, out);
}

int frond__record_get_u64(const frond__record *r, const char *key,
                          uint64_t *out) {
  int64_t v;
  if (frond__record_get_i64(r, key, &v) != 0 || v < 0)
    return -1;
  *out = (uint64_t)v;
  return 0;
}

int frond__record_get_str(const frond__record *r, const char *key, char *out,
                          size_t len) {
  const char *v = frond__record_get(r, key);
  size_t n;
  if (v == NULL || (n = strlen(v)) >= len)
    return -1;
  memcpy(out, v, n + 1);
  return 0;
}
