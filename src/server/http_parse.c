/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_parse.c -- the HTTP/1.x request-head parser (see http_parse.h).
**
** One pass over the bytes, each access checked against the end of the
** buffer. A head is complete at the first empty line; until then the parser
** answers PARTIAL, unless the limits say the head can never be accepted, in
** which case it answers ERROR at once so that a client cannot make the
** server buffer more than FROND__HTTP_MAX_HEAD bytes. Chunked bodies are
** read by frond__http_chunked, at the end of this file.
*/
#include "server/http_parse.h"
#include "base/base.h"

#include <stdint.h>
#include <string.h>

static const struct {
  const char *name;
  size_t len;
  int method;
} methods[] = {
    {"GET", 3, FROND__HTTP_GET},         {"HEAD", 4, FROND__HTTP_HEAD},
    {"POST", 4, FROND__HTTP_POST},       {"PUT", 3, FROND__HTTP_PUT},
    {"PATCH", 5, FROND__HTTP_PATCH},     {"DELETE", 6, FROND__HTTP_DELETE},
    {"OPTIONS", 7, FROND__HTTP_OPTIONS}, {"TRACE", 5, FROND__HTTP_TRACE},
    {"CONNECT", 7, FROND__HTTP_CONNECT},
};

/* RFC 9110 tchar. */
static int is_tchar(unsigned char c) {
  if (c >= 'a' && c <= 'z')
    return 1;
  if (c >= 'A' && c <= 'Z')
    return 1;
  if (c >= '0' && c <= '9')
    return 1;
  return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

#define eq_nocase frond__http_eq_nocase

static int reject(frond__http_request *req, int status, const char *reason) {
  req->status = status;
  req->reason = reason;
  return FROND__HTTP_ERROR;
}

/* The next element of a comma-separated header value (RFC 9110 5.6.1),
** from *i: [*s, *e) without the spaces around it. Empty elements (",,")
** are skipped, so one is never empty. Returns 0 once the value is used
** up. */
static int next_element(const char *v, size_t len, size_t *i, size_t *s,
                        size_t *e) {
  while (*i < len && (v[*i] == ' ' || v[*i] == '\t' || v[*i] == ','))
    ++*i;
  if (*i >= len)
    return 0;
  *s = *i;
  while (*i < len && v[*i] != ',')
    ++*i;
  *e = *i;
  while (*e > *s && (v[*e - 1] == ' ' || v[*e - 1] == '\t'))
    --*e;
  return 1;
}

/* Does a comma-separated header value contain `token`? */
static int has_token(const char *v, size_t len, const char *token) {
  size_t i = 0, s, e;
  while (next_element(v, len, &i, &s, &e))
    if (eq_nocase(v + s, e - s, token))
      return 1;
  return 0;
}

/* Where the line starting at p ends: its '\n', or NULL. */
static const char *find_lf(const char *p, const char *end) {
  return memchr(p, '\n', (size_t)(end - p));
}

/* Does s[0..n) start with the literal lit, in any case? */
static int starts_nocase(const char *s, size_t n, const char *lit) {
  size_t l = strlen(lit);
  return n >= l && eq_nocase(s, l, lit);
}

/* The request target at s[0..n): origin form ("/path?query"), "*" (for
** OPTIONS only), or the absolute form a client sends to a proxy
** (RFC 9112 3.2.2), "http://host:port/path?query", which a server MUST
** accept: its authority stands for the Host header and its path is the
** target. */
static int parse_target(const char *s, size_t n, frond__http_request *req) {
  const char *q;
  req->target = s;
  req->target_len = n;
  if (n == 1 && *s == '*') {
    if (req->method != FROND__HTTP_OPTIONS)
      return reject(req, 400, "the target '*' is for OPTIONS only");
    req->asterisk = 1;
    req->target = "/";
    req->target_len = 1;
  } else if (*s != '/') {
    size_t skip = starts_nocase(s, n, "http://")    ? 7
                  : starts_nocase(s, n, "https://") ? 8
                                                    : 0;
    const char *a = s + skip, *end = s + n, *e = a;
    if (skip == 0)
      return reject(req, 400, "request target must start with '/'");
    while (e < end && *e != '/' && *e != '?' && *e != '#')
      e++;
    if (e == a || memchr(a, '@', (size_t)(e - a)) != NULL)
      return reject(req, 400, "bad authority in an absolute-form target");
    req->host = a;
    req->host_len = (size_t)(e - a);
    if (e < end && *e == '/') {
      req->target = e;
      req->target_len = (size_t)(end - e);
    } else {
      /* "http://host" and "http://host?q" name "/"; the only endpoint
      ** there, the status page, takes no query. */
      req->target = "/";
      req->target_len = 1;
    }
  }
  req->path_len = req->target_len;
  q = memchr(req->target, '?', req->target_len);
  if (q != NULL)
    req->path_len = (size_t)(q - req->target);
  return 0;
}

/* The request line buf[0..eol): method, target, version. The version is
** checked before the target's form, so that HTTP/2's preface
** ("PRI * HTTP/2.0") is answered 505, not 400. */
static int parse_request_line(const char *buf, const char *eol,
                              frond__http_request *req) {
  const char *p = buf, *s, *t, *te;
  size_t i;
  /* method */
  s = p;
  while (p < eol && is_tchar((unsigned char)*p))
    p++;
  if (p == s || p == eol || *p != ' ')
    return reject(req, 400, "malformed request line");
  req->method_name = s;
  req->method_len = (size_t)(p - s);
  req->method = -1;
  for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
    if (methods[i].len == req->method_len &&
        memcmp(methods[i].name, s, req->method_len) == 0)
      req->method = methods[i].method;
  p++;
  /* target: visible ASCII */
  t = p;
  while (p < eol && (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f)
    p++;
  if (p == eol || p == t || *p != ' ')
    return reject(req, 400, "malformed request target");
  te = p++;
  /* version */
  if (eol - p != 8 || memcmp(p, "HTTP/", 5) != 0 || p[6] != '.' || p[5] < '0' ||
      p[5] > '9' || p[7] < '0' || p[7] > '9')
    return reject(req, 400, "malformed HTTP version");
  if (p[5] != '1' || p[7] > '1')
    return reject(req, 505, "only HTTP/1.0 and HTTP/1.1 are supported");
  req->minor = p[7] - '0';
  if (req->method < 0)
    return reject(req, 501, "unknown method");
  return parse_target(t, (size_t)(te - t), req);
}

static int parse_header(const char *p, const char *eol,
                        frond__http_request *req) {
  const char *s = p, *v, *ve;
  frond__http_header *h;
  if (*p == ' ' || *p == '\t')
    return reject(req, 400, "obsolete header line folding");
  while (p < eol && is_tchar((unsigned char)*p))
    p++;
  if (p == s || p == eol || *p != ':')
    return reject(req, 400, "malformed header");
  if (req->num_headers == FROND__HTTP_MAX_HEADERS)
    return reject(req, 431, "too many headers");
  h = &req->headers[req->num_headers++];
  h->name = s;
  h->name_len = (size_t)(p - s);
  p++;
  while (p < eol && (*p == ' ' || *p == '\t'))
    p++;
  v = p;
  for (; p < eol; p++) {
    unsigned char c = (unsigned char)*p;
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return reject(req, 400, "control character in header value");
  }
  ve = eol;
  while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
    ve--;
  h->value = v;
  h->value_len = (size_t)(ve - v);
  return 0;
}

/* Transfer-Encoding's codings, over every such header in order: only
** "chunked", once, may be sent (RFC 9112 6.1: chunked is the last coding,
** and a server that does not know a coding answers 501). */
static int transfer_codings(const char *v, size_t len, int *chunked,
                            frond__http_request *req) {
  size_t i = 0, s, e;
  int any = 0;
  while (next_element(v, len, &i, &s, &e)) {
    any = 1;
    if (*chunked)
      return reject(req, 400, "chunked must be the last transfer coding");
    if (!eq_nocase(v + s, e - s, "chunked"))
      return reject(req, 501, "only the chunked transfer coding is supported");
    *chunked = 1;
  }
  if (!any)
    return reject(req, 400, "empty Transfer-Encoding");
  return 0;
}

/* Apply the headers the server acts on. */
static int interpret(frond__http_request *req) {
  size_t i;
  int have_len = 0, have_host = 0, have_te = 0, chunked = 0;
  int conn_close = 0, conn_keep = 0;
  const frond__http_header *host = NULL;
  req->body_len = 0;
  for (i = 0; i < req->num_headers; i++) {
    const frond__http_header *h = &req->headers[i];
    if (eq_nocase(h->name, h->name_len, "content-length")) {
      int64_t n = 0;
      size_t j;
      if (h->value_len == 0 || h->value_len > 18)
        return reject(req, 400, "invalid Content-Length");
      for (j = 0; j < h->value_len; j++) {
        if (h->value[j] < '0' || h->value[j] > '9')
          return reject(req, 400, "invalid Content-Length");
        n = n * 10 + (h->value[j] - '0');
      }
      if (have_len && n != req->body_len)
        return reject(req, 400, "conflicting Content-Length headers");
      have_len = 1;
      req->body_len = n;
    } else if (eq_nocase(h->name, h->name_len, "transfer-encoding")) {
      have_te = 1;
      if (transfer_codings(h->value, h->value_len, &chunked, req) != 0)
        return FROND__HTTP_ERROR;
    } else if (eq_nocase(h->name, h->name_len, "host")) {
      have_host++;
      host = h;
    } else if (eq_nocase(h->name, h->name_len, "connection")) {
      conn_close |= has_token(h->value, h->value_len, "close");
      conn_keep |= has_token(h->value, h->value_len, "keep-alive");
    } else if (eq_nocase(h->name, h->name_len, "origin")) {
      req->origin = h;
    } else if (eq_nocase(h->name, h->name_len, "sec-fetch-site")) {
      req->fetch_site = h;
    } else if (eq_nocase(h->name, h->name_len, "frond-forwarded")) {
      req->forwarded = 1;
    }
  }
  if (req->minor == 1 && have_host != 1)
    return reject(req, 400, "HTTP/1.1 needs exactly one Host header");
  /* Both framings, or chunked in HTTP/1.0, which has none: a proxy in
  ** front may have framed the body the other way (RFC 9112 6.1, 6.3). */
  if (have_te && have_len)
    return reject(req, 400, "both Transfer-Encoding and Content-Length");
  if (have_te && req->minor == 0)
    return reject(req, 400, "Transfer-Encoding in an HTTP/1.0 request");
  req->chunked = chunked;
  if (req->host == NULL && host != NULL) {
    req->host = host->value;
    req->host_len = host->value_len;
  }
  if (req->minor == 1)
    req->keep_alive = !conn_close;
  else
    req->keep_alive = conn_keep && !conn_close;
  return 0;
}

/* The end of the line starting at p, whose '\n' is lf: the '\r' before
** it, or NULL for a bare LF. */
static const char *crlf(const char *p, const char *lf) {
  return lf > p && lf[-1] == '\r' ? lf - 1 : NULL;
}

int frond__http_parse(const char *buf, size_t len, frond__http_request *req) {
  const char *end =
      buf + (len < FROND__HTTP_MAX_HEAD ? len : FROND__HTTP_MAX_HEAD);
  const char *p = buf, *lf, *eol;
  req->num_headers = 0;
  req->status = 0;
  req->reason = NULL;
  req->host = NULL;
  req->host_len = 0;
  req->asterisk = 0;
  req->chunked = 0;
  req->origin = NULL;
  req->fetch_site = NULL;
  req->forwarded = 0;
  /* RFC 9112 2.2: ignore at least one empty line before a request. */
  while (p < end && (*p == '\r' || *p == '\n'))
    p++;
  if (p - buf > 4)
    return reject(req, 400, "empty lines before the request");
  lf = find_lf(p, end);
  if (lf == NULL) {
    if (len >= FROND__HTTP_MAX_HEAD)
      return reject(req, 414, "request line too long");
    return FROND__HTTP_PARTIAL;
  }
  if ((eol = crlf(p, lf)) == NULL)
    return reject(req, 400, "a line of the request head ends in a bare LF");
  if (eol == p || parse_request_line(p, eol, req) != 0)
    return req->status ? FROND__HTTP_ERROR : reject(req, 400, "empty request");
  p = lf + 1;
  for (;;) {
    lf = find_lf(p, end);
    if (lf == NULL) {
      if (len >= FROND__HTTP_MAX_HEAD)
        return reject(req, 431, "request header fields too large");
      return FROND__HTTP_PARTIAL;
    }
    if ((eol = crlf(p, lf)) == NULL)
      return reject(req, 400, "a line of the request head ends in a bare LF");
    if (eol == p)
      break;
    if (memchr(p, '\r', (size_t)(eol - p)) != NULL)
      return reject(req, 400, "bare CR in header");
    if (parse_header(p, eol, req) != 0)
      return FROND__HTTP_ERROR;
    p = lf + 1;
  }
  if (interpret(req) != 0)
    return FROND__HTTP_ERROR;
  return (int)(lf + 1 - buf);
}

const frond__http_header *
frond__http_header_find(const frond__http_request *req, const char *name) {
  size_t i;
  for (i = 0; i < req->num_headers; i++)
    if (eq_nocase(req->headers[i].name, req->headers[i].name_len, name))
      return &req->headers[i];
  return NULL;
}

int frond__http_query(const char *target, size_t len, const char *key,
                      const char **val, size_t *val_len) {
  const char *q = memchr(target, '?', len);
  if (q == NULL)
    return 0;
  q++;
  return frond__http_query_params(q, (size_t)(target + len - q), key, val,
                                  val_len);
}

int frond__http_query_params(const char *q, size_t len, const char *key,
                             const char **val, size_t *val_len) {
  const char *end = q + len;
  size_t klen = strlen(key);
  while (q < end) {
    const char *amp = memchr(q, '&', (size_t)(end - q));
    const char *pe = amp ? amp : end;
    const char *eq = memchr(q, '=', (size_t)(pe - q));
    const char *ke = eq ? eq : pe;
    if ((size_t)(ke - q) == klen && memcmp(q, key, klen) == 0) {
      *val = eq ? eq + 1 : pe;
      *val_len = (size_t)(pe - *val);
      return 1;
    }
    q = amp ? amp + 1 : end;
  }
  return 0;
}

/* Percent-decoding; a '+' is a space when plus is set (a query value). */
static int unescape(const char *src, size_t len, char *dst, size_t cap,
                    int plus) {
  size_t i, n = 0;
  for (i = 0; i < len; i++) {
    int c = (unsigned char)src[i];
    if (c == '%') {
      int h, l;
      if (len - i < 3)
        return -1;
      h = frond__hexval((unsigned char)src[i + 1]);
      l = frond__hexval((unsigned char)src[i + 2]);
      if (h < 0 || l < 0)
        return -1;
      c = h * 16 + l;
      i += 2;
    } else if (c == '+' && plus) {
      c = ' ';
    }
    if (n == cap)
      return -1;
    dst[n++] = (char)c;
  }
  return (int)n;
}

int frond__http_unescape(const char *src, size_t len, char *dst, size_t cap) {
  return unescape(src, len, dst, cap, 0);
}

int frond__http_unescape_query(const char *src, size_t len, char *dst,
                               size_t cap) {
  return unescape(src, len, dst, cap, 1);
}

/* ---------------------------------------------------------------- chunked */

static void skip_ows(const char *p, size_t end, size_t *i) {
  while (*i < end && (p[*i] == ' ' || p[*i] == '\t'))
    (*i)++;
}

/* A quoted-string at p[*i..end) (RFC 9110 5.6.4); *i moves past it. */
static int quoted_string(const char *p, size_t end, size_t *i) {
  size_t j = *i + 1;
  while (j < end) {
    unsigned char c = (unsigned char)p[j];
    if (c == '"') {
      *i = j + 1;
      return 0;
    }
    if (c == '\\') {
      if (j + 1 == end)
        return -1;
      c = (unsigned char)p[++j];
      if (c < 0x20 && c != '\t')
        return -1;
    } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return -1;
    }
    j++;
  }
  return -1;
}

/*
** The chunk-size line at p[0..avail): hex size, then chunk extensions
** (";" name ["=" token / quoted-string], with optional whitespace around
** ";" and "="), then CRLF. Returns 1 with *size (UINT64_MAX when it does
** not fit) and *line (its length with the CRLF), 0 when the line is not
** complete, -1 when malformed or too long.
*/
static int chunk_line(const char *p, size_t avail, uint64_t *size,
                      size_t *line) {
  size_t n =
      avail < FROND__HTTP_CHUNK_LINE_MAX ? avail : FROND__HTTP_CHUNK_LINE_MAX;
  const char *lf = memchr(p, '\n', n);
  size_t i = 0, end;
  uint64_t v = 0;
  int h;
  if (lf == NULL)
    return avail >= FROND__HTTP_CHUNK_LINE_MAX ? -1 : 0;
  end = (size_t)(lf - p);
  if (end == 0 || p[end - 1] != '\r')
    return -1;
  end--;
  while (i < end && (h = frond__hexval((unsigned char)p[i])) >= 0) {
    v = v > (UINT64_MAX >> 4) ? UINT64_MAX : v * 16 + (uint64_t)h;
    i++;
  }
  if (i == 0)
    return -1;
  while (i < end) {
    size_t s;
    skip_ows(p, end, &i);
    if (i == end || p[i] != ';')
      return -1;
    i++;
    skip_ows(p, end, &i);
    for (s = i; i < end && is_tchar((unsigned char)p[i]); i++)
      ;
    if (i == s)
      return -1;
    s = i;
    skip_ows(p, end, &i);
    if (i < end && p[i] == '=') {
      i++;
      skip_ows(p, end, &i);
      if (i < end && p[i] == '"') {
        if (quoted_string(p, end, &i) != 0)
          return -1;
      } else {
        for (s = i; i < end && is_tchar((unsigned char)p[i]); i++)
          ;
        if (i == s)
          return -1;
      }
    } else {
      i = s; /* whitespace after a name is only allowed before '=' */
    }
  }
  *size = v;
  *line = end + 2;
  return 1;
}

int frond__http_chunked(const char *buf, size_t len, size_t max,
                        frond__http_chunks *ch, int *status,
                        const char **reason) {
  for (;;) {
    const char *p = buf + ch->pos;
    size_t avail = len - ch->pos, line;
    uint64_t size;
    int r;
    if (ch->trailers != 0) {
      /* Trailer fields, each a header line; an empty line ends them. */
      const char *lf, *eol;
      size_t n = avail;
      if (ch->pos - ch->trailers + n > FROND__HTTP_MAX_HEAD)
        n = FROND__HTTP_MAX_HEAD - (ch->pos - ch->trailers);
      lf = memchr(p, '\n', n);
      if (lf == NULL) {
        if (n < avail) {
          *status = 431;
          *reason = "trailer section too large";
          return FROND__HTTP_ERROR;
        }
        return FROND__HTTP_PARTIAL;
      }
      if (lf == p || lf[-1] != '\r') {
        *status = 400;
        *reason = "a trailer line ends in a bare LF";
        return FROND__HTTP_ERROR;
      }
      eol = lf - 1;
      if (eol == p)
        return (int)(ch->pos + 2);
      {
        frond__http_request tmp;
        tmp.num_headers = 0;
        if (memchr(p, '\r', (size_t)(eol - p)) != NULL ||
            parse_header(p, eol, &tmp) != 0) {
          *status = 400;
          *reason = "malformed trailer field";
          return FROND__HTTP_ERROR;
        }
      }
      ch->pos += (size_t)(lf + 1 - p);
      continue;
    }
    r = chunk_line(p, avail, &size, &line);
    if (r == 0)
      return FROND__HTTP_PARTIAL;
    if (r < 0) {
      *status = 400;
      *reason = "malformed chunk size line";
      return FROND__HTTP_ERROR;
    }
    if (size > max - ch->data) {
      *status = 413;
      *reason = "request body too large";
      return FROND__HTTP_ERROR;
    }
    if (size == 0) {
      ch->pos += line;
      ch->trailers = ch->pos;
      continue;
    }
    if (avail - line < size + 2)
      return FROND__HTTP_PARTIAL;
    if (p[line + size] != '\r' || p[line + size + 1] != '\n') {
      *status = 400;
      *reason = "chunk data not followed by CRLF";
      return FROND__HTTP_ERROR;
    }
    ch->pos += line + (size_t)size + 2;
    ch->data += (size_t)size;
  }
}

void frond__http_chunked_copy(const char *buf, size_t n, char *dst) {
  size_t pos = 0, line;
  uint64_t size;
  while (pos < n && chunk_line(buf + pos, n - pos, &size, &line) == 1 &&
         size > 0) {
    memcpy(dst, buf + pos + line, (size_t)size);
    dst += size;
    pos += line + (size_t)size + 2;
  }
}
