/* SPDX-License-Identifier: Apache-2.0 */
/*
** metrics_line.c -- one line of the Prometheus text format read back (see
** metrics_line.h).
*/
#include "server/metrics_line.h"

#include <string.h>

static int name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == ':';
}

static int name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}

static void blanks(const char **p, const char *end) {
  while (*p < end && (**p == ' ' || **p == '\t'))
    (*p)++;
}

/* A name into dst (cap bytes with its NUL). 0, or -1. */
static int name(const char **p, const char *end, char *dst, size_t cap) {
  size_t n = 0;
  if (*p >= end || !name_start(**p))
    return -1;
  while (*p < end && name_char(**p)) {
    if (n + 1 >= cap)
      return -1;
    dst[n++] = *(*p)++;
  }
  dst[n] = '\0';
  return 0;
}

/* A quoted label value, unescaped (\\, \", \n), into l. 0, or -1. */
static int quoted(const char **p, const char *end, frond__metrics_label *l) {
  size_t n = 0;
  char c;
  if (*p >= end || **p != '"')
    return -1;
  (*p)++;
  for (;;) {
    if (*p >= end)
      return -1;
    c = *(*p)++;
    if (c == '"')
      break;
    if (c == '\\') {
      if (*p >= end)
        return -1;
      c = *(*p)++;
      if (c == 'n')
        c = '\n';
      else if (c != '\\' && c != '"')
        return -1;
    }
    if (n < FROND__METRICS_VALUE_MAX)
      l->value[n++] = c;
    else
      l->cut = 1;
  }
  l->value[n] = '\0';
  return 0;
}

/* The sample's value: a decimal integer kept as such, else a float of the
** text format (digits, sign, point, exponent, Inf, NaN) checked only. */
static int value(const char *s, const char *end, frond__metrics_line *out) {
  const char *p = s, *d0;
  int neg = 0, over = 0, digits = 0;
  uint64_t v = 0, lim;
  if (p < end && (*p == '-' || *p == '+'))
    neg = *p++ == '-';
  lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (d0 = p; p < end && *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (lim - d) / 10)
      over = 1;
    else
      v = v * 10 + d;
  }
  if (p == end && p > d0 && !over) {
    out->is_int = 1;
    out->ivalue = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
  }
  p = s;
  if (p < end && (*p == '-' || *p == '+'))
    p++;
  if ((size_t)(end - p) == 3 &&
      (memcmp(p, "Inf", 3) == 0 || memcmp(p, "NaN", 3) == 0))
    return 0;
  while (p < end && *p >= '0' && *p <= '9')
    p++, digits++;
  if (p < end && *p == '.')
    for (p++; p < end && *p >= '0' && *p <= '9'; p++)
      digits++;
  if (digits == 0)
    return -1;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '-' || *p == '+'))
      p++;
    if (p >= end || *p < '0' || *p > '9')
      return -1;
    while (p < end && *p >= '0' && *p <= '9')
      p++;
  }
  return p == end ? 0 : -1;
}

int frond__metrics_line_parse(const char *s, size_t len,
                              frond__metrics_line *out) {
  const char *p = s, *end = s + len, *v;
  frond__metrics_label skip;
  memset(out, 0, sizeof *out);
  while (end > p && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' ||
                     end[-1] == '\t'))
    end--;
  blanks(&p, end);
  if (p == end || *p == '#')
    return 0;
  if (name(&p, end, out->name, sizeof out->name) != 0)
    return -1;
  v = p;
  blanks(&p, end);
  if (p < end && *p == '{') {
    p++;
    for (;;) {
      frond__metrics_label *l = out->nlabels < FROND__METRICS_LABELS
                                    ? &out->labels[out->nlabels]
                                    : &skip;
      blanks(&p, end);
      if (p < end && *p == '}')
        break;
      memset(l, 0, sizeof *l);
      if (name(&p, end, l->name, sizeof l->name) != 0)
        return -1;
      blanks(&p, end);
      if (p >= end || *p++ != '=')
        return -1;
      blanks(&p, end);
      if (quoted(&p, end, l) != 0)
        return -1;
      if (l != &skip)
        out->nlabels++;
      blanks(&p, end);
      if (p < end && *p == ',') {
        p++;
        continue;
      }
      if (p >= end || *p != '}')
        return -1;
      break;
    }
    p++;
    v = p;
    blanks(&p, end);
  }
  /* The value, after at least one blank (`name value`, `name{...} value`). */
  if (p == v || p >= end)
    return -1;
  blanks(&p, end);
  for (v = p; p < end && *p != ' ' && *p != '\t'; p++)
    ;
  if (v == p || value(v, p, out) != 0)
    return -1;
  /* An optional timestamp: an integer of milliseconds. */
  blanks(&p, end);
  if (p < end && *p == '-')
    p++;
  if (p < end && (*p < '0' || *p > '9'))
    return -1;
  while (p < end && *p >= '0' && *p <= '9')
    p++;
  blanks(&p, end);
  return p == end ? 1 : -1;
}

const char *frond__metrics_label_get(const frond__metrics_line *l,
                                     const char *name) {
  int i;
  for (i = 0; i < l->nlabels; i++)
    if (strcmp(l->labels[i].name, name) == 0)
      return l->labels[i].cut ? NULL : l->labels[i].value;
  return NULL;
}
