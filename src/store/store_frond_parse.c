/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_frond_parse.c -- the frond:// store's pure parts: its URI, the head
** of an HTTP/1.x response, and the little JSON its servers answer (an
** error, a tag row, the tag list). Pure functions over a buffer, as
** picohttpparser's: they read nothing past the length they are given and
** keep no state; fuzz/fuzz_store_frond.c drives them.
*/
#include "store/store_frond.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- the URI ---- */

static int ranged(const char *v, size_t n, int64_t lo, int64_t hi,
                  int64_t *out) {
  if (n == 0 || v[0] == '-' || v[0] == '+' || frond__parse_i64(v, n, out) != 0)
    return -1;
  return *out < lo || *out > hi ? -1 : 0;
}

static int token_char(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || (c != 0 && strchr("-._~+/=:", c) != NULL);
}

/* One host[:port] of n bytes into s. */
static int parse_server(const char *p, size_t n, int i, frond_fs_server *s,
                        frond_error *err) {
  const char *host = p, *colon;
  size_t hlen;
  int64_t port = FROND_FS_DEFAULT_PORT;
  unsigned char v6[16];
  if (n == 0)
    return frond__fail(err, FROND_ESTORE_URI,
                       "frond URI: server %d is empty (servers are "
                       "separated by a single ',')",
                       i + 1);
  if (p[0] == '[') {
    const char *close = memchr(p, ']', n);
    if (close == NULL)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: server %d: '[' without ']'", i + 1);
    host = p + 1;
    hlen = (size_t)(close - host);
    colon = close + 1 < p + n ? close + 1 : NULL;
    if (colon != NULL && *colon != ':')
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: server %d: expected ':' after ']'", i + 1);
    if (hlen == 0 || hlen > 45)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: server %d: not an IPv6 address", i + 1);
    memcpy(s->host, host, hlen);
    s->host[hlen] = '\0';
    if (inet_pton(AF_INET6, s->host, v6) != 1)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: server %d: not an IPv6 address", i + 1);
  } else {
    size_t k;
    colon = memchr(p, ':', n);
    hlen = colon ? (size_t)(colon - p) : n;
    if (hlen == 0 || hlen > FROND_FS_HOST_MAX)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: server %d: a host name of 1 to %d "
                         "bytes is needed",
                         i + 1, FROND_FS_HOST_MAX);
    for (k = 0; k < hlen; k++) {
      int c = (unsigned char)host[k];
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
        return frond__fail(err, FROND_ESTORE_URI,
                           "frond URI: server %d: the host has a character "
                           "a host name cannot have, at byte %zu (an IPv6 "
                           "address goes in [])",
                           i + 1, k);
    }
    memcpy(s->host, host, hlen);
    s->host[hlen] = '\0';
  }
  if (colon != NULL &&
      ranged(colon + 1, (size_t)(p + n - colon - 1), 1, 65535, &port) != 0)
    return frond__fail(err, FROND_ESTORE_URI,
                       "frond URI: server %d: the port must be a number in "
                       "1..65535",
                       i + 1);
  s->port = (int)port;
  snprintf(s->shown, sizeof(s->shown), p[0] == '[' ? "[%s]:%d" : "%s:%d",
           s->host, s->port);
  return 0;
}

/* One key=value of the query. seen: bit per key, for duplicates. */
static int parse_option(const char *p, size_t n, frond_fs_uri *out,
                        unsigned *seen, frond_error *err) {
  static const char *const keys[] = {"token", "timeout_ms", "retries", "tls"};
  const char *eq = memchr(p, '=', n);
  size_t klen = eq ? (size_t)(eq - p) : n, vlen, k;
  const char *v = eq ? eq + 1 : p + n;
  int64_t x;
  vlen = (size_t)(p + n - v);
  for (k = 0; k < FROND__ARRAY_SIZE(keys); k++)
    if (strlen(keys[k]) == klen && memcmp(keys[k], p, klen) == 0)
      break;
  if (k == FROND__ARRAY_SIZE(keys))
    return frond__fail(err, FROND_ESTORE_URI,
                       "frond URI: unknown option \"%.*s\" (known: token, "
                       "timeout_ms, retries, tls)",
                       (int)(klen > 64 ? 64 : klen), p);
  if (*seen & (1u << k))
    return frond__fail(err, FROND_ESTORE_URI,
                       "frond URI: option %s given twice", keys[k]);
  *seen |= 1u << k;
  if (eq == NULL || vlen == 0)
    return frond__fail(err, FROND_ESTORE_URI,
                       "frond URI: option %s needs "
                       "a value (%s=...)",
                       keys[k], keys[k]);
  switch (k) {
  case 0:
    if (vlen > FROND_FS_TOKEN_MAX)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: token longer than %d bytes",
                         FROND_FS_TOKEN_MAX);
    for (size_t j = 0; j < vlen; j++)
      if (!token_char((unsigned char)v[j]))
        return frond__fail(err, FROND_ESTORE_URI,
                           "frond URI: the token has a character a bearer "
                           "token cannot have, at byte %zu (allowed: "
                           "letters, digits, -._~+/=:)",
                           j);
    memcpy(out->token, v, vlen);
    out->token[vlen] = '\0';
    return 0;
  case 1:
    if (ranged(v, vlen, 1, 600000, &x) != 0)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: timeout_ms must be a number of "
                         "milliseconds in 1..600000");
    out->timeout_ms = x;
    return 0;
  case 2:
    if (ranged(v, vlen, 0, 10, &x) != 0)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: retries must be a number in 0..10");
    out->retries = (int)x;
    return 0;
  default:
    if ((vlen == 3 && memcmp(v, "off", 3) == 0) || (vlen == 1 && v[0] == '0') ||
        (vlen == 5 && memcmp(v, "false", 5) == 0))
      return 0;
    if ((vlen == 2 && memcmp(v, "on", 2) == 0) || (vlen == 1 && v[0] == '1') ||
        (vlen == 4 && memcmp(v, "true", 4) == 0))
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: tls=on: this store speaks plain HTTP "
                         "only, to the servers' listen port, not yet to "
                         "their tls_listen; reach them over a private "
                         "network or a TLS tunnel of your own, and say "
                         "tls=off");
    return frond__fail(err, FROND_ESTORE_URI,
                       "frond URI: tls must be off (or on, once this store "
                       "speaks TLS)");
  }
}

int frond__fs_uri_parse(const char *uri, frond_fs_uri *out, frond_error *err) {
  const char *p, *auth, *end;
  unsigned seen = 0;
  memset(out, 0, sizeof(*out));
  out->timeout_ms = FROND_FS_DEFAULT_TIMEOUT_MS;
  out->retries = FROND_FS_DEFAULT_RETRIES;
  if (strncmp(uri, "frond://", 8) != 0)
    return frond__fail(err, FROND_ESTORE_URI, "frond URI: expected frond://");
  for (p = uri; *p; p++)
    if ((unsigned char)*p < 0x21 || *p == 0x7f)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: a space or control character at byte "
                         "%zu",
                         (size_t)(p - uri));
  if (p - uri > FROND_STORE_URI_MAX)
    return frond__fail(err, FROND_ESTORE_URI, "frond URI: longer than %d bytes",
                       FROND_STORE_URI_MAX);
  auth = uri + 8;
  end = auth + strcspn(auth, "/?#");
  if (memchr(auth, '@', (size_t)(end - auth)) != NULL)
    return frond__fail(err, FROND_ESTORE_URI,
                       "frond URI: no user:password@ here; give an admin "
                       "token as ?token=...");
  for (p = auth;; out->n++) {
    size_t n = 0;
    int rc;
    while (p + n < end && p[n] != ',')
      n++;
    if (out->n == FROND_FS_MAX_SERVERS)
      return frond__fail(err, FROND_ESTORE_URI,
                         "frond URI: more than %d servers",
                         FROND_FS_MAX_SERVERS);
    if ((rc = parse_server(p, n, out->n, &out->srv[out->n], err)) != 0)
      return rc;
    if (p + n == end) {
      out->n++;
      break;
    }
    p += n + 1;
  }
  p = end;
  if (*p == '/')
    p++;
  if (*p == '#' || (*p != '\0' && *p != '?'))
    return frond__fail(err, FROND_ESTORE_URI,
                       "frond URI: no path or fragment after the servers "
                       "(only ?options)");
  if (*p == '?') {
    for (p++;;) {
      size_t n = strcspn(p, "&#");
      int rc;
      if (p[n] == '#')
        return frond__fail(err, FROND_ESTORE_URI,
                           "frond URI: no fragment after the options");
      if (n == 0)
        return frond__fail(err, FROND_ESTORE_URI,
                           "frond URI: an empty option (options are "
                           "separated by a single '&')");
      if ((rc = parse_option(p, n, out, &seen, err)) != 0)
        return rc;
      if (p[n] == '\0')
        break;
      p += n + 1;
    }
  }
  return 0;
}

/* ---- the response head ---- */

/* A malformed head: why into err, and -1. */
FROND__PRINTF(2, 3) static int bad(frond_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  frond__vfail(err, FROND_ESTORE, fmt, ap);
  va_end(ap);
  return -1;
}

static int ci_eq(const char *a, size_t n, const char *lower) {
  size_t i;
  if (strlen(lower) != n)
    return 0;
  for (i = 0; i < n; i++) {
    int c = (unsigned char)a[i];
    if (c >= 'A' && c <= 'Z')
      c += 'a' - 'A';
    if (c != lower[i])
      return 0;
  }
  return 1;
}

static int has_token(const char *v, size_t n, const char *lower) {
  size_t i = 0, k;
  while (i < n) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
      i++;
    for (k = i; k < n && v[k] != ',' && v[k] != ' ' && v[k] != '\t'; k++)
      ;
    if (k > i && ci_eq(v + i, k - i, lower))
      return 1;
    i = k;
  }
  return 0;
}

int frond__fs_resp_parse(const char *buf, size_t len, frond_fs_resp *out,
                         frond_error *err) {
  const char *p = buf, *end = buf + len, *eol;
  int minor, have_len = 0, keep_alive = 0;
  memset(out, 0, sizeof(*out));
  out->content_length = -1;
  /* The status line: HTTP/1.x SP 3DIGIT SP reason CRLF. */
  if (len < 12)
    return len > 0 && memcmp(buf, "HTTP/1.", len < 7 ? len : 7) != 0
               ? bad(err, "not an HTTP/1 answer")
               : -2;
  if (memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') ||
      p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' ||
      p[11] < '0' || p[11] > '9')
    return bad(err, "not an HTTP/1 status line");
  minor = p[7] - '0';
  out->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
  for (;;) {
    size_t n;
    const char *colon, *v, *ve;
    if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
      return len > FROND_FS_HEAD_MAX
                 ? bad(err, "answer head over %d bytes", FROND_FS_HEAD_MAX)
                 : -2;
    if (eol == p || eol[-1] != '\r')
      return bad(err, "a line of the answer head does "
                      "not end in CRLF");
    n = (size_t)(eol - 1 - p);
    if (p == buf) { /* the status line's reason: anything printable */
      if (n > 12 && p[12] != ' ')
        return bad(err, "not an HTTP/1 status line");
      p = eol + 1;
      continue;
    }
    if (n == 0) {
      p = eol + 1;
      break;
    }
    if ((colon = memchr(p, ':', n)) == NULL || colon == p)
      return bad(err, "a header line without a name");
    for (v = colon + 1; v < p + n && (*v == ' ' || *v == '\t'); v++)
      ;
    for (ve = p + n; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
      ;
    if (ci_eq(p, (size_t)(colon - p), "content-length")) {
      int64_t cl;
      if (ve == v || *v == '-' || *v == '+' ||
          frond__parse_i64(v, (size_t)(ve - v), &cl) != 0 ||
          (have_len && cl != out->content_length))
        return bad(err, "a bad Content-Length");
      if (cl > FROND_FS_BODY_MAX)
        return bad(err, "an answer over %d bytes", FROND_FS_BODY_MAX);
      out->content_length = cl;
      have_len = 1;
    } else if (ci_eq(p, (size_t)(colon - p), "frond-store")) {
      size_t k, vn = (size_t)(ve - v);
      for (k = 0; k < vn; k++)
        if (!((v[k] >= '0' && v[k] <= '9') || (v[k] >= 'a' && v[k] <= 'f')))
          break;
      if (vn != FROND_FS_STORE_LEN || k != vn ||
          (out->store[0] != '\0' && memcmp(out->store, v, vn) != 0))
        return bad(err, "a bad Frond-Store (32 lowercase hex characters)");
      memcpy(out->store, v, vn);
      out->store[vn] = '\0';
    } else if (ci_eq(p, (size_t)(colon - p), "transfer-encoding")) {
      return bad(err, "an answer with Transfer-Encoding, which no Frond "
                      "server sends (a proxy in between?)");
    } else if (ci_eq(p, (size_t)(colon - p), "connection")) {
      if (has_token(v, (size_t)(ve - v), "close"))
        out->close = 1;
      if (has_token(v, (size_t)(ve - v), "keep-alive"))
        keep_alive = 1;
    }
    p = eol + 1;
  }
  if (out->status < 200)
    return bad(err,
               "an interim %d answer, which no "
               "request asked for",
               out->status);
  if (out->status == 204 || out->status == 304) {
    out->content_length = 0;
  } else if (!have_len) {
    return bad(err, "an answer without "
                    "Content-Length");
  }
  if (minor == 0 && !keep_alive)
    out->close = 1;
  out->head_len = (size_t)(p - buf);
  return (int)out->head_len;
}

/* ---- JSON: just what the servers answer ---- */

typedef struct jcur {
  const char *p, *end;
} jcur;

static void ws(jcur *j) {
  while (j->p < j->end &&
         (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
    j->p++;
}

static int lit(jcur *j, char c) {
  ws(j);
  if (j->p < j->end && *j->p == c) {
    j->p++;
    return 1;
  }
  return 0;
}

static int hex4(const char *p, unsigned *out) {
  int k, d;
  *out = 0;
  for (k = 0; k < 4; k++) {
    if ((d = frond__hexval((unsigned char)p[k])) < 0)
      return -1;
    *out = *out << 4 | (unsigned)d;
  }
  return 0;
}

/* A string into out (cap bytes with the NUL; NULL: skip it). Too long for
** out: truncated when trunc, else -1. \u escapes become UTF-8, a lone
** surrogate U+FFFD. 0 or -1. */
static int jstr(jcur *j, char *out, size_t cap, int trunc) {
  size_t n = 0;
  if (!lit(j, '"'))
    return -1;
  while (j->p < j->end && *j->p != '"') {
    unsigned char c = (unsigned char)*j->p++, u8[4];
    size_t k, m = 1;
    unsigned cp;
    if (c < 0x20)
      return -1;
    u8[0] = c;
    if (c == '\\') {
      if (j->p >= j->end)
        return -1;
      c = (unsigned char)*j->p++;
      switch (c) {
      case '"':
      case '\\':
      case '/':
        u8[0] = c;
        break;
      case 'b':
        u8[0] = '\b';
        break;
      case 'f':
        u8[0] = '\f';
        break;
      case 'n':
        u8[0] = '\n';
        break;
      case 'r':
        u8[0] = '\r';
        break;
      case 't':
        u8[0] = '\t';
        break;
      case 'u':
        if (j->end - j->p < 4 || hex4(j->p, &cp) != 0)
          return -1;
        j->p += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && j->end - j->p >= 6 &&
            j->p[0] == '\\' && j->p[1] == 'u') {
          unsigned lo;
          if (hex4(j->p + 2, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            j->p += 6;
          }
        }
        if (cp >= 0xD800 && cp < 0xE000)
          cp = 0xFFFD;
        if (cp < 0x80) {
          u8[0] = (unsigned char)cp;
        } else if (cp < 0x800) {
          u8[0] = (unsigned char)(0xC0 | cp >> 6);
          u8[1] = (unsigned char)(0x80 | (cp & 0x3F));
          m = 2;
        } else if (cp < 0x10000) {
          u8[0] = (unsigned char)(0xE0 | cp >> 12);
          u8[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
          u8[2] = (unsigned char)(0x80 | (cp & 0x3F));
          m = 3;
        } else {
          u8[0] = (unsigned char)(0xF0 | cp >> 18);
          u8[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
          u8[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
          u8[3] = (unsigned char)(0x80 | (cp & 0x3F));
          m = 4;
        }
        break;
      default:
        return -1;
      }
    }
    if (out == NULL)
      continue;
    if (n + m >= cap) {
      if (!trunc)
        return -1;
      continue; /* keep reading to the end of the string */
    }
    for (k = 0; k < m; k++)
      out[n++] = (char)u8[k];
  }
  if (j->p >= j->end)
    return -1;
  j->p++;
  if (out != NULL)
    out[n] = '\0';
  return 0;
}

/* An integer: -?digits, no fraction or exponent. */
static int jint(jcur *j, int64_t *out) {
  const char *s;
  ws(j);
  s = j->p;
  if (j->p < j->end && *j->p == '-')
    j->p++;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
    j->p++;
  if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
    return -1;
  return frond__parse_i64(s, (size_t)(j->p - s), out);
}

static int jword(jcur *j, const char *w) {
  size_t n = strlen(w);
  ws(j);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
    return -1;
  j->p += n;
  return 0;
}

/* Skip any value, nested at most depth levels more. */
static int jskip(jcur *j, int depth) {
  ws(j);
  if (j->p >= j->end || depth < 0)
    return -1;
  switch (*j->p) {
  case '"':
    return jstr(j, NULL, 0, 0);
  case '{':
  case '[': {
    char close = *j->p == '{' ? '}' : ']';
    int obj = close == '}', first = 1;
    j->p++;
    if (lit(j, close))
      return 0;
    for (;;) {
      if (!first && !lit(j, ','))
        return -1;
      first = 0;
      if (obj && (jstr(j, NULL, 0, 0) != 0 || !lit(j, ':')))
        return -1;
      if (jskip(j, depth - 1) != 0)
        return -1;
      if (lit(j, close))
        return 0;
    }
  }
  case 't':
    return jword(j, "true");
  case 'f':
    return jword(j, "false");
  case 'n':
    return jword(j, "null");
  default: {
    const char *s = j->p;
    while (j->p < j->end && *j->p != '\0' &&
           strchr("-+.eE0123456789", *j->p) != NULL)
      j->p++;
    return j->p > s ? 0 : -1;
  }
  }
}

/* The next key of an object (after '{'), into key: 1, 0 at its end, -1. */
static int jkey(jcur *j, int *first, char *key, size_t cap) {
  if (lit(j, '}'))
    return 0;
  if (!*first && !lit(j, ','))
    return -1;
  *first = 0;
  if (jstr(j, key, cap, 1) != 0 || !lit(j, ':'))
    return -1;
  return 1;
}

static int row_at(jcur *j, frond_tag_row *out) {
  char key[32];
  int first = 1, rc, have = 0;
  memset(out, 0, sizeof(*out));
  if (!lit(j, '{'))
    return -1;
  while ((rc = jkey(j, &first, key, sizeof(key))) == 1) {
    if (strcmp(key, "tag") == 0) {
      rc = jstr(j, out->tag, sizeof(out->tag), 0);
      have |= 1;
    } else if (strcmp(key, "max_id") == 0) {
      rc = jint(j, &out->max_id);
      have |= 2;
    } else if (strcmp(key, "step") == 0) {
      rc = jint(j, &out->step);
      have |= 4;
    } else if (strcmp(key, "description") == 0) {
      ws(j);
      rc = j->p < j->end && *j->p == 'n'
               ? jword(j, "null")
               : jstr(j, out->description, sizeof(out->description), 1);
    } else if (strcmp(key, "update_time") == 0) {
      rc = jstr(j, out->update_time, sizeof(out->update_time), 1);
    } else {
      rc = jskip(j, 16);
    }
    if (rc != 0)
      return -1;
  }
  return rc == 0 && have == 7 && out->tag[0] != '\0' ? 0 : -1;
}

int frond__fs_row_parse(const char *body, size_t len, frond_tag_row *out) {
  jcur j = {body, body + len};
  if (row_at(&j, out) != 0)
    return -1;
  ws(&j);
  return j.p == j.end ? 0 : -1;
}

int frond__fs_rows_parse(const char *body, size_t len, frond_fs_row_fn fn,
                         void *ctx) {
  jcur j = {body, body + len};
  char key[16];
  int first = 1, rc, seen = 0;
  if (!lit(&j, '{'))
    return -1;
  while ((rc = jkey(&j, &first, key, sizeof(key))) == 1) {
    if (strcmp(key, "tags") != 0) {
      if (jskip(&j, 16) != 0)
        return -1;
      continue;
    }
    if (seen++ || !lit(&j, '['))
      return -1;
    if (lit(&j, ']'))
      continue;
    for (;;) {
      frond_tag_row row;
      if (row_at(&j, &row) != 0)
        return -1;
      if ((rc = fn(ctx, &row)) != 0)
        return rc;
      if (lit(&j, ']'))
        break;
      if (!lit(&j, ','))
        return -1;
    }
  }
  ws(&j);
  return rc == 0 && seen == 1 && j.p == j.end ? 0 : -1;
}

int frond__fs_error_parse(const char *body, size_t len, char *code,
                          size_t code_len, char *msg, size_t msg_len) {
  jcur j = {body, body + len};
  char key[16];
  int first = 1, rc, found = 0;
  code[0] = msg[0] = '\0';
  if (!lit(&j, '{'))
    return -1;
  while ((rc = jkey(&j, &first, key, sizeof(key))) == 1) {
    int f2 = 1, r2;
    if (strcmp(key, "error") != 0 || found) {
      if (jskip(&j, 16) != 0)
        return -1;
      continue;
    }
    if (!lit(&j, '{'))
      return -1;
    while ((r2 = jkey(&j, &f2, key, sizeof(key))) == 1) {
      if (strcmp(key, "code") == 0)
        r2 = jstr(&j, code, code_len, 1);
      else if (strcmp(key, "message") == 0)
        r2 = jstr(&j, msg, msg_len, 1);
      else
        r2 = jskip(&j, 16);
      if (r2 != 0)
        return -1;
    }
    if (r2 != 0)
      return -1;
    found = 1;
  }
  /* A server's words go into one line of a message or a log. */
  for (char *q = msg; *q; q++)
    if ((unsigned char)*q < 0x20 || *q == 0x7f)
      *q = ' ';
  for (char *q = code; *q; q++)
    if ((unsigned char)*q < 0x20 || *q == 0x7f)
      *q = ' ';
  return rc == 0 && found && code[0] != '\0' ? 0 : -1;
}

int frond__fs_layout_parse(const char *body, size_t len, char *store,
                           int64_t *max_range) {
  jcur j = {body, body + len};
  char key[32], v[FROND_FS_STORE_LEN + 2];
  int first = 1, rc;
  store[0] = '\0';
  *max_range = 0;
  if (!lit(&j, '{'))
    return -1;
  while ((rc = jkey(&j, &first, key, sizeof(key))) == 1) {
    if (strcmp(key, "store") == 0) {
      size_t k;
      if (jstr(&j, v, sizeof(v), 0) != 0 || strlen(v) != FROND_FS_STORE_LEN)
        return -1;
      for (k = 0; k < FROND_FS_STORE_LEN; k++)
        if (!((v[k] >= '0' && v[k] <= '9') || (v[k] >= 'a' && v[k] <= 'f')))
          return -1;
      memcpy(store, v, FROND_FS_STORE_LEN + 1);
    } else if (strcmp(key, "max_range") == 0) {
      if (jint(&j, max_range) != 0 || *max_range < 1)
        return -1;
    } else if (jskip(&j, 16) != 0) {
      return -1;
    }
  }
  ws(&j);
  return rc == 0 && j.p == j.end ? 0 : -1;
}

int frond__fs_range_parse(const char *body, size_t len, int64_t *start,
                          int64_t *end) {
  const char *sp = memchr(body, ' ', len), *e = body + len;
  if (len > 0 && e[-1] == '\n')
    e--;
  /* sp + 1 < e before sp[1] is read: "5 " ends at its space. */
  if (sp == NULL || sp + 1 >= e || body[0] == '-' || sp[1] == '-' ||
      frond__parse_i64(body, (size_t)(sp - body), start) != 0 ||
      frond__parse_i64(sp + 1, (size_t)(e - sp - 1), end) != 0)
    return -1;
  return *start >= 0 && *start < *end ? 0 : -1;
}
