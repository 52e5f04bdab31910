/* SPDX-License-Identifier: Apache-2.0 */
/*
** http_parse.h -- a pure HTTP/1.x request-head parser.
**
** In the style of picohttpparser: no allocation, every output is a view into
** the caller's buffer, and the caller may call again with more bytes after a
** partial result. Only what Frond serves is accepted: HTTP/1.0 and
** HTTP/1.1; origin-form targets of visible ASCII, the absolute form a proxy
** sends (RFC 9112 3.2.2), and "*" for OPTIONS; bodies framed by
** Content-Length or by chunked transfer coding (frond__http_chunked below).
** Every line of a head ends in CRLF: a bare LF is an error, since a proxy
** in front that does not split lines there would frame the request
** differently.
*/
#ifndef FROND_HTTP_PARSE_H
#define FROND_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
  const char *target; /* path and query, as sent ("/" for "*", and for an
                         absolute form without a path) */
  size_t target_len;
  size_t path_len;  /* target bytes before '?' */
  int asterisk;     /* the target was "*" (OPTIONS only) */
  const char *host; /* the authority of an absolute-form target, else the */
  size_t host_len;  /* Host header's value; NULL when there is neither */
  int minor;        /* HTTP/1.<minor>: 0 or 1 */
  int keep_alive;   /* after Connection and the version's default */
  int chunked;      /* Transfer-Encoding: chunked; body_len is then 0 */
  int64_t body_len; /* Content-Length, 0 when absent */
  /* Headers a browser sends about the page behind a request, or NULL. */
  const frond__http_header *origin;     /* Origin */
  const frond__http_header *fetch_site; /* Sec-Fetch-Site */
  /* Frond-Forwarded: another node of the fleet forwarded the request to
  ** this one as an ordered tag's owner (server/forward.c). */
  int forwarded;
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

/* Is v[0..len) equal to s, ignoring ASCII case? Inline: with s a literal,
** its length is known where it is called (the header loop of every request
** calls this several times a header). */
static inline int frond__http_eq_nocase(const char *v, size_t len,
                                        const char *s) {
  size_t i;
  if (len != strlen(s))
    return 0;
  for (i = 0; i < len; i++) {
    int a = (unsigned char)v[i], b = (unsigned char)s[i];
    if ((a >= 'A' && a <= 'Z' ? a + 32 : a) !=
        (b >= 'A' && b <= 'Z' ? b + 32 : b))
      return 0;
  }
  return 1;
}

/*
** A chunked request body (RFC 9112 7.1), read as it arrives. The scan is
** resumable: it checks whole chunks from where the last call stopped, so a
** body that trickles in is not scanned again from its start each time.
** Chunk extensions are parsed (token or quoted-string values) and ignored;
** trailer fields are parsed as header lines and ignored. Every line ends
** in CRLF.
*/
typedef struct frond__http_chunks {
  size_t pos;      /* bytes checked: the start of a chunk or trailer line */
  size_t data;     /* data bytes in the chunks before pos */
  size_t trailers; /* where the trailer section starts; 0: not yet */
} frond__http_chunks;

#define FROND__HTTP_CHUNK_LINE_MAX 1024 /* chunk size and extensions */

/*
** Scan the chunked body at buf[0..len) (from the end of the head on),
** continuing from *ch (zeroed before the first call). Returns the length
** of the whole encoded body, trailers and final CRLF included; PARTIAL
** when more bytes are needed; or ERROR with *status 400 (malformed), 413
** (more than max data bytes) or 431 (trailers above FROND__HTTP_MAX_HEAD)
** and *reason set. Never reads outside buf[0..len).
*/
int frond__http_chunked(const char *buf, size_t len, size_t max,
                        frond__http_chunks *ch, int *status,
                        const char **reason);

/* Copy the data of a chunked body that frond__http_chunked accepted,
** buf[0..n) (n its return value), to dst (ch->data bytes). */
void frond__http_chunked_copy(const char *buf, size_t n, char *dst);

/*
** Find query parameter `key` in target[0..len) (the part after '?' is
** searched). On success points *val at the raw (still percent-encoded)
** value and returns 1; returns 0 when absent.
*/
int frond__http_query(const char *target, size_t len, const char *key,
                      const char **val, size_t *val_len);
/* The same over the parameters alone (q just past the '?', or past the
** '&' after a value found before): to find a key given more than once. */
int frond__http_query_params(const char *q, size_t len, const char *key,
                             const char **val, size_t *val_len);

/* Percent-decode src into dst (at most cap bytes). '+' is kept as is.
** Returns the decoded length or -1 on a bad escape or overflow. */
int frond__http_unescape(const char *src, size_t len, char *dst, size_t cap);
/* The same for a query value (application/x-www-form-urlencoded): a '+'
** is a space, as every HTML form and URL library encodes one. */
int frond__http_unescape_query(const char *src, size_t len, char *dst,
                               size_t cap);

#endif /* FROND_HTTP_PARSE_H */
