/* SPDX-License-Identifier: Apache-2.0 */
/*
** audit_line.c -- one audit log line read back (see audit_line.h).
*/
#include "server/audit_line.h"

#include <string.h>

typedef struct cur {
  const char *p, *end;
} cur;

static void ws(cur *c) {
  while (c->p < c->end &&
         (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
    c->p++;
}

static int hex4(cur *c, unsigned *v) {
  int i;
  *v = 0;
  if (c->end - c->p < 4)
    return -1;
  for (i = 0; i < 4; i++) {
    char h = *c->p++;
    *v <<= 4;
    if (h >= '0' && h <= '9')
      *v |= (unsigned)(h - '0');
    else if (h >= 'a' && h <= 'f')
      *v |= (unsigned)(h - 'a' + 10);
    else if (h >= 'A' && h <= 'F')
      *v |= (unsigned)(h - 'A' + 10);
    else
      return -1;
  }
  return 0;
}

/* The one-character escapes of JSON, and what each stands for. */
#define ESCAPES "\"\\/bfnrt"
#define ESCAPED "\"\\/\b\f\n\r\t"

/* A string (after its opening quote) into dst[cap], NUL-terminated, or
** skipped with dst NULL. Escapes are decoded; \u0000 and lone surrogates
** are refused. */
static int str(cur *c, char *dst, size_t cap) {
  size_t n = 0;
  for (;;) {
    unsigned u, lo;
    const char *e;
    char b[4];
    size_t k = 1, i;
    if (c->p >= c->end)
      return -1;
    b[0] = *c->p++;
    if (b[0] == '"')
      break;
    if ((unsigned char)b[0] < 0x20)
      return -1;
    if (b[0] == '\\') {
      if (c->p >= c->end)
        return -1;
      if ((e = strchr(ESCAPES, *c->p)) != NULL && *c->p != '\0') {
        b[0] = ESCAPED[e - ESCAPES];
        c->p++;
      } else if (*c->p++ != 'u') {
        return -1;
      } else {
        if (hex4(c, &u) != 0 || u == 0 || (u >= 0xdc00 && u <= 0xdfff))
          return -1;
        if (u >= 0xd800 && u <= 0xdbff) {
          if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u')
            return -1;
          c->p += 2;
          if (hex4(c, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
            return -1;
          u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        }
        if (u < 0x80) {
          b[0] = (char)u;
        } else if (u < 0x800) {
          b[0] = (char)(0xc0 | (u >> 6));
          b[1] = (char)(0x80 | (u & 0x3f));
          k = 2;
        } else if (u < 0x10000) {
          b[0] = (char)(0xe0 | (u >> 12));
          b[1] = (char)(0x80 | ((u >> 6) & 0x3f));
          b[2] = (char)(0x80 | (u & 0x3f));
          k = 3;
        } else {
          b[0] = (char)(0xf0 | (u >> 18));
          b[1] = (char)(0x80 | ((u >> 12) & 0x3f));
          b[2] = (char)(0x80 | ((u >> 6) & 0x3f));
          b[3] = (char)(0x80 | (u & 0x3f));
          k = 4;
        }
      }
    }
    if (dst == NULL)
      continue;
    if (n + k >= cap)
      return -1;
    for (i = 0; i < k; i++)
      dst[n++] = b[i];
  }
  if (dst != NULL)
    dst[n] = '\0';
  return 0;
}

/* An integer: -?[0-9]+ within int64_t; a fraction or exponent is refused
** (no field of the log is one). */
static int num(cur *c, int64_t *v) {
  int neg = 0, digits = 0;
  uint64_t u = 0, lim;
  if (c->p < c->end && *c->p == '-')
    neg = 1, c->p++;
  lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    unsigned d = (unsigned)(*c->p++ - '0');
    if (u > (lim - d) / 10)
      return -1;
    u = u * 10 + d;
    digits++;
  }
  if (digits == 0 ||
      (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E')))
    return -1;
  *v = neg ? (int64_t)(0 - u) : (int64_t)u;
  return 0;
}

static int word(cur *c, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0)
    return -1;
  c->p += n;
  return 0;
}

#define FIELD(name, f)                                                         \
  { name, offsetof(frond__audit_line, f), sizeof(((frond__audit_line *)0)->f) }
static const struct {
  const char *name;
  size_t off, cap;
} strs[] = {
    FIELD("time", time),
    FIELD("client", client),
    FIELD("remote", remote),
    FIELD("proto", proto),
    FIELD("op", op),
    FIELD("event", event),
    FIELD("tag", tag),
    FIELD("format", format),
    FIELD("layout", layout),
    FIELD("first_string", first_string),
    FIELD("last_string", last_string),
};
#undef FIELD

int frond__audit_line_parse(const char *s, size_t len, frond__audit_line *out) {
  cur c = {s, s + len};
  char key[256];
  memset(out, 0, sizeof *out);
  out->answered = 1;
  ws(&c);
  if (c.p >= c.end || *c.p++ != '{')
    return -1;
  ws(&c);
  if (c.p < c.end && *c.p == '}') {
    c.p++;
    goto end;
  }
  for (;;) {
    size_t i;
    int64_t v;
    char *dst = NULL;
    size_t cap = 0;
    ws(&c);
    if (c.p >= c.end || *c.p++ != '"')
      return -1;
    /* Keys are short: one of 256 bytes or more is refused. */
    if (str(&c, key, sizeof key) != 0)
      return -1;
    ws(&c);
    if (c.p >= c.end || *c.p++ != ':')
      return -1;
    ws(&c);
    if (c.p >= c.end)
      return -1;
    for (i = 0; i < sizeof strs / sizeof strs[0]; i++)
      if (strcmp(key, strs[i].name) == 0) {
        dst = (char *)out + strs[i].off;
        cap = strs[i].cap;
      }
    if (*c.p == '"') {
      c.p++;
      if (str(&c, dst, cap) != 0)
        return -1;
    } else if (*c.p == 't' || *c.p == 'f' || *c.p == 'n') {
      int f = *c.p == 'f';
      if (word(&c, *c.p == 't' ? "true"
                   : f         ? "false"
                               : "null") != 0 ||
          dst != NULL)
        return -1;
      if (strcmp(key, "answered") == 0)
        out->answered = !f;
    } else {
      unsigned bit = strcmp(key, "node") == 0    ? FROND__AUDIT_NODE
                     : strcmp(key, "first") == 0 ? FROND__AUDIT_FIRST
                     : strcmp(key, "last") == 0  ? FROND__AUDIT_LAST
                     : strcmp(key, "count") == 0 ? FROND__AUDIT_COUNT
                                                 : 0;
      if (num(&c, &v) != 0 || dst != NULL || (out->have & bit))
        return -1;
      out->have |= bit;
      if (bit == FROND__AUDIT_NODE)
        out->node = v;
      else if (bit == FROND__AUDIT_FIRST)
        out->first = v;
      else if (bit == FROND__AUDIT_LAST)
        out->last = v;
      else if (bit == FROND__AUDIT_COUNT)
        out->count = v;
    }
    ws(&c);
    if (c.p >= c.end)
      return -1;
    if (*c.p == '}') {
      c.p++;
      break;
    }
    if (*c.p++ != ',')
      return -1;
  }
end:
  ws(&c);
  return c.p == c.end ? 0 : -1;
}
