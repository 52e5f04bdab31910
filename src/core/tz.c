/* SPDX-License-Identifier: Apache-2.0 */
/*
** tz.c -- time zones from the system's tz database, for date prefixes and
** for the periods of daily, monthly and yearly sequences.
**
** Why Frond reads TZif files itself: the C library converts only in the
** process-wide zone (TZ), and switching TZ under localtime_r races with
** every other thread of the process. Of the libraries on the system, ICU
** converts correctly but with its own copy of the data (updated with ICU,
** not with the system's tzdata) and 30 MB of libraries. GLib's GTimeZone
** reads the system's files, footer included, and is thread-safe; but it
** ends the process when memory runs out (g_malloc aborts), where a library
** on a payment path must return an error; it has no call that says when
** an offset ends, which is what a period's end is; and it would bring GLib
** into every program that links libfrond for one computation a day. TZif
** is a small, specified format (RFC 8536), the choice PostgreSQL, Go and
** Python's zoneinfo made: this reader checks every count against the
** file's length, is fuzzed, and the tests hold it to the C library's
** localtime_r for every zone on the system from 1970 to 2100.
**
** A zone is loaded once into a sorted array of (transition, offset) pairs:
** the file's transitions, then the footer's rule expanded up to
** FROND__TZ_LAST_YEAR. Lookups are a binary search with no allocation, and
** say until when the offset holds, so callers can cache a whole period.
*/
#include "core/formats.h"
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct frond__tz {
  char name[72];
  size_t n;     /* transitions */
  int32_t off0; /* offset before the first transition */
  int64_t *at;  /* transition instants, strictly increasing */
  int32_t *off; /* offset from at[i] on */
};

/* ---- calendar ---- */

/* Howard Hinnant's days_from_civil / civil_from_days. */
int64_t frond__days_from_civil(int64_t y, unsigned m, unsigned d) {
  int64_t era, yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void frond__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  int64_t era, doe, yoe, doy, mp;
  z += 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
  *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int is_leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned month_days(int64_t y, unsigned m) {
  static const unsigned dm[12] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* ---- POSIX TZ strings (the TZif footer) ---- */

typedef struct tz_date {
  char form; /* 'J' (1..365, no Feb 29), 'N' (0..365), 'M' (month.week.day) */
  int a, b, c;
  int32_t secs; /* local time of day of the change; may be <0 or >24h */
} tz_date;

typedef struct tz_rule {
  int32_t std_off, dst_off; /* east of UTC */
  int has_dst;
  tz_date start, end;
} tz_rule;

static int skip_name(const char **p, const char *end) {
  const char *s = *p;
  if (s < end && *s == '<') {
    s++;
    while (s < end && *s != '>')
      s++;
    if (s >= end || s - *p < 4)
      return -1;
    *p = s + 1;
    return 0;
  }
  while (s < end && ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
    s++;
  if (s - *p < 3)
    return -1;
  *p = s;
  return 0;
}

static int num(const char **p, const char *end, int max, int *out) {
  int v = 0, n = 0;
  while (*p < end && **p >= '0' && **p <= '9' && n < 4) {
    v = v * 10 + (**p - '0');
    (*p)++;
    n++;
  }
  if (n == 0 || v > max)
    return -1;
  *out = v;
  return 0;
}

/* [+-]hh[:mm[:ss]] in seconds; hours up to max_h. */
static int hms(const char **p, const char *end, int max_h, int32_t *out) {
  int sign = 1, h, m = 0, s = 0;
  if (*p < end && (**p == '+' || **p == '-'))
    sign = *(*p)++ == '-' ? -1 : 1;
  if (num(p, end, max_h, &h) != 0)
    return -1;
  if (*p < end && **p == ':') {
    (*p)++;
    if (num(p, end, 59, &m) != 0)
      return -1;
    if (*p < end && **p == ':') {
      (*p)++;
      if (num(p, end, 59, &s) != 0)
        return -1;
    }
  }
  *out = sign * (h * 3600 + m * 60 + s);
  return 0;
}

static int rule_date(const char **p, const char *end, tz_date *d) {
  d->secs = 2 * 3600;
  if (*p < end && **p == 'J') {
    (*p)++;
    d->form = 'J';
    if (num(p, end, 365, &d->a) != 0 || d->a < 1)
      return -1;
  } else if (*p < end && **p == 'M') {
    (*p)++;
    d->form = 'M';
    if (num(p, end, 12, &d->a) != 0 || d->a < 1 || *p >= end ||
        *(*p)++ != '.' || num(p, end, 5, &d->b) != 0 || d->b < 1 || *p >= end ||
        *(*p)++ != '.' || num(p, end, 6, &d->c) != 0)
      return -1;
  } else {
    d->form = 'N';
    if (num(p, end, 365, &d->a) != 0)
      return -1;
  }
  if (*p < end && **p == '/') {
    (*p)++;
    if (hms(p, end, 167, &d->secs) != 0)
      return -1;
  }
  return 0;
}

/* Parse a POSIX TZ string of len bytes. POSIX offsets count west of UTC;
** the rule stores them east, as TZif does. */
static int parse_rule(const char *s, size_t len, tz_rule *r) {
  const char *p = s, *end = s + len;
  int32_t o;
  memset(r, 0, sizeof(*r));
  if (skip_name(&p, end) != 0 || hms(&p, end, 24, &o) != 0)
    return -1;
  r->std_off = -o;
  if (p == end)
    return 0;
  if (skip_name(&p, end) != 0)
    return -1;
  r->has_dst = 1;
  r->dst_off = r->std_off + 3600;
  if (p < end && *p != ',') {
    if (hms(&p, end, 24, &o) != 0)
      return -1;
    r->dst_off = -o;
  }
  if (p == end) { /* no rule: POSIX leaves it open; the US rule, as glibc */
    r->start = (tz_date){'M', 3, 2, 0, 7200};
    r->end = (tz_date){'M', 11, 1, 0, 7200};
    return 0;
  }
  if (*p++ != ',' || rule_date(&p, end, &r->start) != 0 || p >= end ||
      *p++ != ',' || rule_date(&p, end, &r->end) != 0 || p != end)
    return -1;
  return 0;
}

/* The local second (as if UTC) at which date d happens in year y. */
static int64_t rule_local(const tz_date *d, int64_t y) {
  int64_t day;
  if (d->form == 'J')
    day =
        frond__days_from_civil(y, 1, 1) + d->a - 1 + (is_leap(y) && d->a >= 60);
  else if (d->form == 'N')
    day = frond__days_from_civil(y, 1, 1) + d->a;
  else {
    int64_t first = frond__days_from_civil(y, (unsigned)d->a, 1);
    int wd = (int)((first % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
    int md = 1 + (d->c - wd + 7) % 7 + 7 * (d->b - 1);
    while (md > (int)month_days(y, (unsigned)d->a))
      md -= 7;
    day = first + md - 1;
  }
  return day * 86400 + d->secs;
}

/* ---- the zone ---- */

typedef struct tz_build {
  size_t n, cap;
  int64_t *at;
  int32_t *off;
} tz_build;

static int push(tz_build *b, int64_t at, int32_t off) {
  if (b->n > 0 && at <= b->at[b->n - 1]) {
    if (at == b->at[b->n - 1])
      b->off[b->n - 1] = off; /* two rule changes at one instant */
    return 0;
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 64;
    int64_t *a = realloc(b->at, cap * sizeof(*a));
    int32_t *o;
    if (a == NULL)
      return -1;
    b->at = a;
    if ((o = realloc(b->off, cap * sizeof(*o))) == NULL)
      return -1;
    b->off = o;
    b->cap = cap;
  }
  b->at[b->n] = at;
  b->off[b->n] = off;
  b->n++;
  return 0;
}

static int expand_rule(tz_build *b, const tz_rule *r) {
  int64_t y, from = 1970;
  if (b->n > 0) {
    unsigned m, d;
    frond__civil_from_days(frond__floor_div(b->at[b->n - 1], 86400), &from, &m,
                           &d);
    if (from < 1900) /* rules are for the present; bound the work */
      from = 1900;
  }
  for (y = from; y <= FROND__TZ_LAST_YEAR; y++) {
    int64_t s = rule_local(&r->start, y) - r->std_off;
    int64_t e = rule_local(&r->end, y) - r->dst_off;
    int64_t after = b->n > 0 ? b->at[b->n - 1] : INT64_MIN;
    int64_t t1 = s < e ? s : e, t2 = s < e ? e : s;
    int32_t o1 = s < e ? r->dst_off : r->std_off;
    int32_t o2 = s < e ? r->std_off : r->dst_off;
    if (t1 > after && push(b, t1, o1) != 0)
      return -1;
    if (t2 > after && push(b, t2, o2) != 0)
      return -1;
  }
  return 0;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static int64_t be64(const uint8_t *p) {
  return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

#define BAD(...) frond__fail(err, FROND_EFORMAT_INVALID, __VA_ARGS__)

int frond__tz_parse(const uint8_t *buf, size_t len, frond__tz **out,
                    frond_error *err) {
  uint32_t c[6]; /* isut, isstd, leap, time, type, char */
  const uint8_t *p = buf, *end = buf + len, *times, *idx, *types;
  size_t tsize = 4, body;
  tz_build b = {0, 0, NULL, NULL};
  frond__tz *tz;
  int version, rc;
  *out = NULL;
  if (len < 44 || memcmp(buf, "TZif", 4) != 0)
    return BAD("not a TZif file");
  version = buf[4];
  if (version != 0 && (version < '2' || version > '4'))
    return BAD("TZif version %d is not known", version);
  for (int pass = 0;; pass++) {
    if ((size_t)(end - p) < 44 || memcmp(p, "TZif", 4) != 0)
      return BAD("truncated TZif header");
    for (int i = 0; i < 6; i++)
      c[i] = be32(p + 20 + 4 * i);
    p += 44;
    if (c[3] > 100000 || c[4] > 256 || c[5] > 4096 || c[2] > 1000 ||
        c[0] > 256 || c[1] > 256)
      return BAD("TZif counts out of range");
    body = (size_t)c[3] * tsize + c[3] + (size_t)c[4] * 6 + c[5] +
           (size_t)c[2] * (tsize + 4) + c[1] + c[0];
    if ((size_t)(end - p) < body)
      return BAD("truncated TZif data");
    if (pass == 0 && version >= '2') {
      p += body; /* the 32-bit block; the 64-bit one follows */
      tsize = 8;
      continue;
    }
    break;
  }
  if (c[4] == 0 || c[5] == 0 || (c[0] != 0 && c[0] != c[4]) ||
      (c[1] != 0 && c[1] != c[4]))
    return BAD("TZif counts are inconsistent");
  if (c[2] != 0)
    return BAD("the zone counts leap seconds (a right/ zone), which the "
               "POSIX clock does not; use the zone without right/");
  times = p;
  idx = times + (size_t)c[3] * tsize;
  types = idx + c[3];
  for (uint32_t i = 0; i < c[4]; i++) {
    int32_t o = (int32_t)be32(types + 6 * i);
    if (o < -89999 || o > 93599 || types[6 * i + 4] > 1 ||
        types[6 * i + 5] >= c[5])
      return BAD("TZif time type %u is invalid", (unsigned)i);
  }
  for (uint32_t i = 0; i < c[3]; i++) {
    int64_t t = tsize == 8 ? be64(times + 8 * i)
                           : (int64_t)(int32_t)be32(times + 4 * i);
    if (idx[i] >= c[4] || (b.n > 0 && t <= b.at[b.n - 1])) {
      rc = BAD("TZif transition %u is invalid or out of order", (unsigned)i);
      goto fail;
    }
    if (push(&b, t, (int32_t)be32(types + 6 * idx[i])) != 0)
      goto nomem;
  }
  p += body;
  if (version >= '2') {
    const uint8_t *nl;
    tz_rule r;
    if (p >= end || *p != '\n' ||
        (nl = memchr(p + 1, '\n', (size_t)(end - p - 1))) == NULL) {
      rc = BAD("TZif footer is missing");
      goto fail;
    }
    if (nl > p + 1) {
      if (parse_rule((const char *)p + 1, (size_t)(nl - p - 1), &r) != 0) {
        rc = BAD("TZif footer '%.*s' is not a POSIX TZ rule",
                 (int)(nl - p - 1 > 64 ? 64 : nl - p - 1), p + 1);
        goto fail;
      }
      if (r.has_dst && expand_rule(&b, &r) != 0)
        goto nomem;
      if (!r.has_dst && b.n == 0 && push(&b, INT64_MIN, r.std_off) != 0)
        goto nomem;
    }
  }
  if ((tz = calloc(1, sizeof(*tz) + b.n * (sizeof(int64_t) + 4))) == NULL)
    goto nomem;
  tz->n = b.n;
  tz->at = (int64_t *)(tz + 1);
  tz->off = (int32_t *)(tz->at + b.n);
  if (b.n > 0) {
    memcpy(tz->at, b.at, b.n * sizeof(int64_t));
    memcpy(tz->off, b.off, b.n * sizeof(int32_t));
  }
  /* RFC 8536: before the first transition, local time is time type 0. */
  tz->off0 = (int32_t)be32(types);
  free(b.at);
  free(b.off);
  *out = tz;
  return 0;
nomem:
  rc = frond__fail(err, FROND_ENOMEM, NULL);
fail:
  free(b.at);
  free(b.off);
  return rc;
}

/* A zone with one offset forever. */
static int tz_fixed(const char *name, int32_t off, frond__tz **out,
                    frond_error *err) {
  frond__tz *tz = calloc(1, sizeof(*tz));
  if (tz == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  tz->off0 = off;
  snprintf(tz->name, sizeof(tz->name), "%s", name);
  *out = tz;
  return 0;
}

/* "+08:00", "-0530", "+09": a fixed offset. */
static int fixed_offset(const char *s, int32_t *off) {
  size_t n = strlen(s);
  int h, m = 0;
  if (n < 3 || (s[0] != '+' && s[0] != '-') || s[1] < '0' || s[1] > '9' ||
      s[2] < '0' || s[2] > '9')
    return -1;
  h = (s[1] - '0') * 10 + (s[2] - '0');
  if (n > 3) {
    const char *mm = s + 3 + (s[3] == ':');
    if (strlen(mm) != 2 || mm[0] < '0' || mm[0] > '5' || mm[1] < '0' ||
        mm[1] > '9')
      return -1;
    m = (mm[0] - '0') * 10 + (mm[1] - '0');
  }
  if (h > 23)
    return -1;
  *off = (s[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
  return 0;
}

/* An IANA name: letters, digits and _+-./, no empty, "." or ".."
** component, relative. */
static int zone_name_ok(const char *s) {
  size_t n = strlen(s);
  const char *c = s;
  if (n == 0 || n > 64 || s[0] == '/' || s[n - 1] == '/')
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || strchr("_+-./", s[i]) != NULL))
      return 0;
  while (*c) {
    size_t k = strcspn(c, "/");
    if (k == 0 || (k == 1 && c[0] == '.') ||
        (k == 2 && c[0] == '.' && c[1] == '.'))
      return 0;
    c += k + (c[k] == '/');
  }
  return 1;
}

int frond__tz_open(const char *name, frond__tz **out, frond_error *err) {
  const char *dir = getenv("TZDIR");
  char path[512];
  uint8_t *buf;
  struct stat st;
  size_t got = 0;
  int32_t off;
  int fd, rc;
  *out = NULL;
  if (strcmp(name, "UTC") == 0 || strcmp(name, "Z") == 0)
    return tz_fixed("UTC", 0, out, err);
  if (fixed_offset(name, &off) == 0)
    return tz_fixed(name, off, out, err);
  if (!zone_name_ok(name))
    return BAD("time zone '%.64s' is not a zone name (such as Asia/Shanghai "
               "or UTC) nor an offset (such as +08:00)",
               name);
  if (dir == NULL || dir[0] == '\0')
    dir = "/usr/share/zoneinfo";
  if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
    return BAD("time zone path is too long");
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
    return BAD("time zone '%s' is unknown (%s: %s)", name, path,
               strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
    close(fd);
    return BAD("time zone '%s': %s is not a zone file", name, path);
  }
  if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
    close(fd);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  got = frond__read_full(fd, buf, (size_t)st.st_size);
  close(fd);
  rc = frond__tz_parse(buf, got, out, err);
  free(buf);
  if (rc != 0) {
    if (err != NULL) {
      char why[sizeof(err->message)];
      snprintf(why, sizeof(why), "%s", err->message);
      frond__fail(err, rc, "time zone '%s' (%s): %s", name, path, why);
    }
    return rc;
  }
  snprintf((*out)->name, sizeof((*out)->name), "%s", name);
  return 0;
}

void frond__tz_free(frond__tz *tz) {
  free(tz);
}

const char *frond__tz_name(const frond__tz *tz) {
  return tz->name;
}

int32_t frond__tz_offset(const frond__tz *tz, int64_t t, int64_t *until) {
  size_t lo = 0, hi = tz->n;
  /* The first transition after t. */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (tz->at[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (until != NULL)
    *until = lo < tz->n ? tz->at[lo] : INT64_MAX;
  return lo == 0 ? tz->off0 : tz->off[lo - 1];
}
