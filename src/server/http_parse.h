/*
** http_parse.h -- a pure HTTP/1.x request-head parser.
**
** In the style of picohttpparser: no allocation, every output is a view into
** the caller's buffer, and the caller may call again with more bytes after a
** partial result. Only what Frond serves is accepted: origin-form targets
** of visible ASCII, HTTP/1.0 and HTTP/1.1, Content-Length bodies.
*/
#ifndef FROND_HTTP_PARSE_H
#define FROND_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Request line plus headers, CRLFs included. Longer heads get 414 (no end
** of the request line within the limit) or 431. */
#define FROND__HTTP_MAX_HEAD 8192
#define FROND__HTTP_MAX_HEADERS 64

#define FROND__HTTP_PARTIAL (-2)
#define FROND__HTTP_ERROR (-1)

enum {
  FROND__HTTP_GET,
  FROND__HTTP_HEAD,
  FROND__HTTP_POST,
  FROND__HTTP_PUT,
  FROND__HTTP_PATCH,
  FROND__HTTP_DELETE,
  FROND__HTTP_OPTIONS,
  FROND__HTTP_TRACE,
  FROND__HTTP_CONNECT
};

typedef struct frond__http_header {
  const char *name;
  size_t name_len;
  const char *value; /* without surrounding whitespace */
  size_t value_len;
} frond__http_header;

typedef struct frond__http_request {
  int method; /* FROND__HTTP_GET ... */
  const char *method_name;
  size_t method_len;
  const char *target; /* path and query, as sent */
  size_t target_len;
  size_t path_len;  /* target bytes before '?' */
  int minor;        /* HTTP/1.<minor>: 0 or 1 */
  int keep_alive;   /* after Connection and the version's default */
  int64_t body_len; /* Content-Length, 0 when absent */
  size_t num_headers;
  frond__http_header headers[FROND__HTTP_MAX_HEADERS];
  /* On FROND__HTTP_ERROR: the status to answer and why. */
  int status;
  const char *reason;
} frond__http_request;

/*
** Parse one request head from buf[0..len). Returns the head's length in
** bytes (the body, if any, follows), FROND__HTTP_PARTIAL when more bytes
** are needed, or FROND__HTTP_ERROR with req->status (400, 414, 431, 501,
** 505) and req->reason set. Never reads outside buf[0..len).
*/
int frond__http_parse(const char *buf, size_t len, frond__http_request *req);

/* The value of header `name` (case-insensitive), or NULL. */
const frond__http_header *
frond__http_header_find(const frond__http_request *req, const char *name);

/*
** Find query parameter `key` in target[0..len) (the part after '?' is
** searched). On success points *val at the raw (still percent-encoded)
** value and returns 1; returns 0 when absent.
*/
int frond__http_query(const char *target, size_t len, const char *key,
                      const char **val, size_t *val_len);

/* Percent-decode src into dst (at most cap bytes). '+' is kept as is.
** Returns the decoded length or -1 on a bad escape or overflow. */
int frond__http_unescape(const char *src, size_t len, char *dst, size_t cap);

#endif /* FROND_HTTP_PARSE_H */
