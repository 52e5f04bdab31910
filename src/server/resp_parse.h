/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp_parse.h -- the Redis protocol request parser (requests are the
** same in RESP2 and RESP3).
**
** A pure function over a buffer, in the manner of picohttpparser: it never
** allocates, and the arguments it returns are views into the input. It reads
** one command at a time, either a multibulk array of bulk strings (what
** every client library sends) or an inline line (what a person types over
** telnet: words separated by spaces, no quoting).
*/
#ifndef FROND_RESP_PARSE_H
#define FROND_RESP_PARSE_H

#include <stddef.h>

typedef struct frond__resp_arg {
  const char *p;
  size_t len;
} frond__resp_arg;

typedef struct frond__resp_limits {
  size_t max_args;   /* most arguments in one command; argv holds this many */
  size_t max_bulk;   /* longest bulk string */
  size_t max_inline; /* longest inline command line */
} frond__resp_limits;

#define FROND__RESP_MAX_ARGS 1024
#define FROND__RESP_MAX_BULK (64 * 1024)
#define FROND__RESP_MAX_INLINE (64 * 1024)

/*
** Parse one command from buf[0..len).
** Returns the bytes consumed (> 0) with *argc arguments in argv (*argc may
** be 0: an empty line or an empty array, which a server skips), 0 when the
** command is not complete yet, or -1 on a protocol error, with *why set to a
** static message ("Protocol error: ..."), after which the stream cannot be
** resynchronised and the connection should be closed.
*/
long frond__resp_parse(const char *buf, size_t len,
                       const frond__resp_limits *lim, frond__resp_arg *argv,
                       size_t *argc, const char **why);

#endif /* FROND_RESP_PARSE_H */
