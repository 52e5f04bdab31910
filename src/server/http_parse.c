/*
** http_parse.c -- the HTTP/1.x request-head parser (see http_parse.h).
**
** One pass over the bytes, each access checked against the end of the
** buffer. A head is complete at the first empty line; until then the parser
** answers PARTIAL, unless the limits say the head can never be accepted, in
** which case it answers ERROR at once so that a client cannot make the
** server buffer more than FROND__HTTP_MAX_HEAD bytes.
*/
#include "server/http_parse.h"

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

static int lower(int c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int eq_nocase(const char *a, size_t alen, const char *b) {
  size_t i;
  if (alen != strlen(b))
    return 0;
  for (i = 0; i < alen; i++)
    if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
      return 0;
  return 1;
}

static int reject(frond__http_request *req, int status, const char *reason) {
  req->status = status;
  req->reason = reason;
  return FROND__HTTP_ERROR;
}

/* Does a comma-separated header value contain `token`? */
static int has_token(const char *v, size_t len, const char *token) {
  size_t i = 0;
  while (i < len) {
    size_t s, e;
    while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
      i++;
    s = i;
    while (i < len && v[i] != ',')
      i++;
    e = i;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
      e--;
    if (e > s && eq_nocase(v + s, e - s, token))
      return 1;
  }
  return 0;
}

/* Where the line starting at p ends: index of its '\n', or -1. The caller
** strips an optional '\r' before it. */
static const char *find_lf(const char *p, const char *end) {
  return memchr(p, '\n', (size_t)(end - p));
}

static int parse_request_line(const char *buf, const char *eol,
                              frond__http_request *req) {
  const char *p = buf, *s;
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
  /* target: origin-form of visible ASCII */
  s = p;
  while (p < eol && (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f)
    p++;
  if (p == eol || *p != ' ')
    return reject(req, 400, "malformed request target");
  if (p == s || *s != '/')
    return reject(req, 400, "request target must start with '/'");
  req->target = s;
  req->target_len = (size_t)(p - s);
  req->path_len = req->target_len;
  {
    const char *q = memchr(s, '?', req->target_len);
    if (q != NULL)
      req->path_len = (size_t)(q - s);
  }
  p++;
  /* version */
  if (eol - p != 8 || memcmp(p, "HTTP/", 5) != 0 || p[6] != '.' || p[5] < '0' ||
      p[5] > '9' || p[7] < '0' || p[7] > '9')
    return reject(req, 400, "malformed HTTP version");
  if (p[5] != '1' || p[7] > '1')
    return reject(req, 505, "only HTTP/1.0 and HTTP/1.1 are supported");
  req->minor = p[7] - '0';
  if (req->method < 0)
    return reject(req, 501, "unknown method");
  return 0;
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

/* Apply the headers the server acts on. */
static int interpret(frond__http_request *req) {
  size_t i;
  int have_len = 0, have_host = 0;
  int conn_close = 0, conn_keep = 0;
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
      return reject(req, 501, "Transfer-Encoding is not supported");
    } else if (eq_nocase(h->name, h->name_len, "host")) {
      have_host++;
    } else if (eq_nocase(h->name, h->name_len, "connection")) {
      conn_close |= has_token(h->value, h->value_len, "close");
      conn_keep |= has_token(h->value, h->value_len, "keep-alive");
    }
  }
  if (req->minor == 1 && have_host != 1)
    return reject(req, 400, "HTTP/1.1 needs exactly one Host header");
  if (req->minor == 1)
    req->keep_alive = !conn_close;
  else
    req->keep_alive = conn_keep && !conn_close;
  return 0;
}

int frond__http_parse(const char *buf, size_t len, frond__http_request *req) {
  const char *end =
      buf + (len < FROND__HTTP_MAX_HEAD ? len : FROND__HTTP_MAX_HEAD);
  const char *p = buf, *lf, *eol;
  req->num_headers = 0;
  req->status = 0;
  req->reason = NULL;
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
  eol = (lf > p && lf[-1] == '\r') ? lf - 1 : lf;
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
    eol = (lf > p && lf[-1] == '\r') ? lf - 1 : lf;
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
  const char *end = target + len;
  size_t klen = strlen(key);
  if (q == NULL)
    return 0;
  q++;
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

static int hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = lower(c);
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

int frond__http_unescape(const char *src, size_t len, char *dst, size_t cap) {
  size_t i, n = 0;
  for (i = 0; i < len; i++) {
    int c = (unsigned char)src[i];
    if (c == '%') {
      int h, l;
      if (len - i < 3)
        return -1;
      h = hexval((unsigned char)src[i + 1]);
      l = hexval((unsigned char)src[i + 2]);
      if (h < 0 || l < 0)
        return -1;
      c = h * 16 + l;
      i += 2;
    }
    if (n == cap)
      return -1;
    dst[n++] = (char)c;
  }
  return (int)n;
}
