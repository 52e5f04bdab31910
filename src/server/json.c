/* SPDX-License-Identifier: Apache-2.0 */
/*
** json.c -- the flat JSON object reader, and JSON strings appended to a
** buffer (see json.h).
*/
#include "server/json.h"

#include "base/base.h"
#include "base/utf8.h"

#include <stdio.h>
#include <string.h>

typedef struct rd {
  const char *p, *end;
  frond_error *err;
} rd;

static int bad(rd *r, const char *what) {
  return frond__fail(r->err, FROND_EINVAL, "invalid JSON body: %s", what);
}

static void ws(rd *r) {
  while (r->p < r->end &&
         (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static int hex4(rd *r, unsigned *out) {
  unsigned v = 0;
  int i;
  if (r->end - r->p < 4)
    return bad(r, "short \\u escape");
  for (i = 0; i < 4; i++) {
    char c = r->p[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (unsigned)(c - 'A' + 10);
    else
      return bad(r, "bad \\u escape");
  }
  r->p += 4;
  *out = v;
  return 0;
}

static int put(rd *r, char *dst, size_t cap, size_t *n, unsigned char c) {
  if (dst == NULL)
    return 0;
  if (*n + 1 >= cap)
    return bad(r, "string too long");
  dst[(*n)++] = (char)c;
  return 0;
}

/* Read a string; copy it to dst (NULL: skip). */
static int string(rd *r, char *dst, size_t cap, size_t *outlen) {
  size_t n = 0;
  if (r->p == r->end || *r->p != '"')
    return bad(r, "expected a string");
  r->p++;
  while (r->p < r->end) {
    unsigned char c = (unsigned char)*r->p;
    if (c == '"') {
      r->p++;
      if (dst != NULL)
        dst[n] = '\0';
      *outlen = n;
      return 0;
    }
    if (c < 0x20)
      return bad(r, "control character in string");
    if (c == '\\') {
      unsigned cp;
      r->p++;
      if (r->p == r->end)
        break;
      c = (unsigned char)*r->p++;
      switch (c) {
      case '"':
      case '\\':
      case '/':
        break;
      case 'b':
        c = '\b';
        break;
      case 'f':
        c = '\f';
        break;
      case 'n':
        c = '\n';
        break;
      case 'r':
        c = '\r';
        break;
      case 't':
        c = '\t';
        break;
      case 'u':
        if (hex4(r, &cp) != 0)
          return FROND_EINVAL;
        if (cp >= 0xdc00 && cp <= 0xdfff)
          return bad(r, "lone low surrogate");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          unsigned lo;
          if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
            return bad(r, "lone high surrogate");
          r->p += 2;
          if (hex4(r, &lo) != 0)
            return FROND_EINVAL;
          if (lo < 0xdc00 || lo > 0xdfff)
            return bad(r, "bad surrogate pair");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        if (cp == 0)
          return bad(r, "NUL in string");
        if (cp < 0x80) {
          if (put(r, dst, cap, &n, (unsigned char)cp) != 0)
            return FROND_EINVAL;
        } else if (cp < 0x800) {
          if (put(r, dst, cap, &n, (unsigned char)(0xc0 | cp >> 6)) ||
              put(r, dst, cap, &n, (unsigned char)(0x80 | (cp & 0x3f))))
            return FROND_EINVAL;
        } else if (cp < 0x10000) {
          if (put(r, dst, cap, &n, (unsigned char)(0xe0 | cp >> 12)) ||
              put(r, dst, cap, &n, (unsigned char)(0x80 | (cp >> 6 & 0x3f))) ||
              put(r, dst, cap, &n, (unsigned char)(0x80 | (cp & 0x3f))))
            return FROND_EINVAL;
        } else {
          if (put(r, dst, cap, &n, (unsigned char)(0xf0 | cp >> 18)) ||
              put(r, dst, cap, &n, (unsigned char)(0x80 | (cp >> 12 & 0x3f))) ||
              put(r, dst, cap, &n, (unsigned char)(0x80 | (cp >> 6 & 0x3f))) ||
              put(r, dst, cap, &n, (unsigned char)(0x80 | (cp & 0x3f))))
            return FROND_EINVAL;
        }
        continue;
      default:
        return bad(r, "bad escape");
      }
      if (put(r, dst, cap, &n, c) != 0)
        return FROND_EINVAL;
      continue;
    }
    {
      uint32_t cp;
      size_t k = frond__utf8_len((const unsigned char *)r->p,
                                 (size_t)(r->end - r->p), &cp);
      size_t i;
      if (k == 0)
        return bad(r, "invalid UTF-8");
      for (i = 0; i < k; i++)
        if (put(r, dst, cap, &n, (unsigned char)r->p[i]) != 0)
          return FROND_EINVAL;
      r->p += k;
    }
  }
  return bad(r, "unterminated string");
}

static int integer(rd *r, int64_t *out) {
  int neg = 0;
  uint64_t v = 0;
  const char *s;
  if (r->p < r->end && *r->p == '-') {
    neg = 1;
    r->p++;
  }
  s = r->p;
  while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
    unsigned d = (unsigned)(*r->p - '0');
    if (v > ((uint64_t)INT64_MAX - d) / 10)
      return bad(r, "integer out of range");
    v = v * 10 + d;
    r->p++;
  }
  if (r->p == s || (r->p - s > 1 && *s == '0'))
    return bad(r, "expected an integer");
  if (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E'))
    return bad(r, "expected an integer, not a fraction");
  *out = neg ? -(int64_t)v : (int64_t)v;
  return 0;
}

int frond__json_read(const char *in, size_t len, frond__json_field *fields,
                     size_t n, frond_error *err) {
  rd r = {in, in + len, err};
  size_t i;
  for (i = 0; i < n; i++)
    fields[i].present = 0;
  ws(&r);
  if (r.p == r.end || *r.p != '{')
    return bad(&r, "expected an object");
  r.p++;
  ws(&r);
  if (r.p < r.end && *r.p == '}') {
    r.p++;
    goto done;
  }
  for (;;) {
    char key[64];
    size_t klen;
    frond__json_field *f = NULL;
    ws(&r);
    if (string(&r, key, sizeof key, &klen) != 0)
      return FROND_EINVAL;
    for (i = 0; i < n; i++)
      if (strlen(fields[i].name) == klen &&
          memcmp(fields[i].name, key, klen) == 0)
        f = &fields[i];
    if (f == NULL) {
      return frond__fail(err, FROND_EINVAL,
                         "invalid JSON body: unknown field '%s'", key);
    }
    if (f->present) {
      return frond__fail(err, FROND_EINVAL,
                         "invalid JSON body: duplicate field '%s'", key);
    }
    ws(&r);
    if (r.p == r.end || *r.p != ':')
      return bad(&r, "expected ':'");
    r.p++;
    ws(&r);
    if (f->type == FROND__JSON_STR) {
      size_t sl;
      if (string(&r, f->str, f->str_cap, &sl) != 0)
        return FROND_EINVAL;
    } else if (f->type == FROND__JSON_BOOL) {
      size_t k = r.end - r.p >= 4 && memcmp(r.p, "true", 4) == 0    ? 4
                 : r.end - r.p >= 5 && memcmp(r.p, "false", 5) == 0 ? 5
                                                                    : 0;
      if (k == 0)
        return frond__fail(err, FROND_EINVAL,
                           "invalid JSON body: '%s' must be true or false",
                           key);
      f->num = k == 4;
      r.p += k;
    } else if (integer(&r, &f->num) != 0) {
      return FROND_EINVAL;
    }
    f->present = 1;
    ws(&r);
    if (r.p < r.end && *r.p == ',') {
      r.p++;
      continue;
    }
    if (r.p < r.end && *r.p == '}') {
      r.p++;
      break;
    }
    return bad(&r, "expected ',' or '}'");
  }
done:
  ws(&r);
  if (r.p != r.end)
    return bad(&r, "trailing bytes after the object");
  return 0;
}

int frond__json_append(frond__buf *b, const char *s, size_t len) {
  /* At most six bytes of output per byte of input ("\u001f"). */
  if (frond__buf_reserve(b, len * 6 + 1) != 0)
    return -1;
  b->len += frond__json_escape(s, len, b->data + b->len, b->cap - b->len);
  return 0;
}
