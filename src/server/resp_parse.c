/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp_parse.c -- the RESP request parser (see resp_parse.h).
**
** The messages follow Redis' own for the same faults, so that clients and
** people see what they would see from Redis.
*/
#include "server/resp_parse.h"

#include <stdint.h>
#include <string.h>

/* Longest "*<n>\r\n" or "$<n>\r\n" line we accept before calling it
** garbage. */
#define NUM_LINE_MAX 32

/* Parse the decimal line at buf[0..len) ending in "\r\n" into *out.
** Returns bytes consumed, 0 if incomplete, -1 if malformed. */
static long read_number_line(const char *buf, size_t len, long long *out) {
  const char *cr;
  size_t n = len < NUM_LINE_MAX ? len : NUM_LINE_MAX;
  size_t i = 0;
  int neg = 0;
  unsigned long long v = 0;
  cr = memchr(buf, '\r', n);
  if (memchr(buf, '\n', cr ? (size_t)(cr - buf) : n) != NULL)
    return -1; /* a bare LF: not RESP */
  if (cr == NULL)
    return len < NUM_LINE_MAX ? 0 : -1;
  if ((size_t)(cr - buf) + 1 >= len)
    return 0; /* need the '\n' */
  if (cr[1] != '\n')
    return -1;
  n = (size_t)(cr - buf);
  if (n > 0 && buf[0] == '-') {
    neg = 1;
    i = 1;
  }
  if (i == n)
    return -1;
  for (; i < n; i++) {
    if (buf[i] < '0' || buf[i] > '9')
      return -1;
    if (v > (unsigned long long)(INT64_MAX / 10))
      return -1;
    v = v * 10 + (unsigned long long)(buf[i] - '0');
  }
  if (v > (unsigned long long)INT64_MAX)
    return -1;
  *out = neg ? -(long long)v : (long long)v;
  return (long)(n + 2);
}

static long parse_multibulk(const char *buf, size_t len,
                            const frond__resp_limits *lim,
                            frond__resp_arg *argv, size_t *argc,
                            const char **why) {
  long long count, blen;
  long r = read_number_line(buf + 1, len - 1, &count);
  size_t pos;
  if (r == 0)
    return 0;
  if (r < 0 || count > (long long)lim->max_args) {
    *why = "Protocol error: invalid multibulk length";
    return -1;
  }
  pos = 1 + (size_t)r;
  *argc = 0;
  if (count <= 0) /* "*0" and "*-1" are empty: skipped, as Redis does */
    return (long)pos;
  for (long long i = 0; i < count; i++) {
    if (pos >= len)
      return 0;
    if (buf[pos] != '$') {
      *why = "Protocol error: expected '$'";
      return -1;
    }
    r = read_number_line(buf + pos + 1, len - pos - 1, &blen);
    if (r == 0)
      return 0;
    if (r < 0 || blen < 0 || blen > (long long)lim->max_bulk) {
      *why = "Protocol error: invalid bulk length";
      return -1;
    }
    pos += 1 + (size_t)r;
    if (len - pos < (size_t)blen + 2)
      return 0;
    if (buf[pos + (size_t)blen] != '\r' ||
        buf[pos + (size_t)blen + 1] != '\n') {
      *why = "Protocol error: bulk string not followed by CRLF";
      return -1;
    }
    argv[*argc].p = buf + pos;
    argv[*argc].len = (size_t)blen;
    (*argc)++;
    pos += (size_t)blen + 2;
  }
  return (long)pos;
}

static long parse_inline(const char *buf, size_t len,
                         const frond__resp_limits *lim, frond__resp_arg *argv,
                         size_t *argc, const char **why) {
  size_t scan = len < lim->max_inline + 1 ? len : lim->max_inline + 1;
  const char *nl = memchr(buf, '\n', scan);
  size_t end, i = 0;
  if (nl == NULL) {
    if (len > lim->max_inline) {
      *why = "Protocol error: too big inline request";
      return -1;
    }
    return 0;
  }
  end = (size_t)(nl - buf);
  if (end > 0 && buf[end - 1] == '\r')
    end--;
  *argc = 0;
  while (i < end) {
    size_t start;
    while (i < end && (buf[i] == ' ' || buf[i] == '\t'))
      i++;
    if (i == end)
      break;
    start = i;
    while (i < end && buf[i] != ' ' && buf[i] != '\t')
      i++;
    if (*argc == lim->max_args) {
      *why = "Protocol error: too many arguments in inline request";
      return -1;
    }
    argv[*argc].p = buf + start;
    argv[*argc].len = i - start;
    (*argc)++;
  }
  return (long)(nl - buf) + 1;
}

long frond__resp_parse(const char *buf, size_t len,
                       const frond__resp_limits *lim, frond__resp_arg *argv,
                       size_t *argc, const char **why) {
  *argc = 0;
  if (len == 0)
    return 0;
  if (buf[0] == '*')
    return parse_multibulk(buf, len, lim, argv, argc, why);
  return parse_inline(buf, len, lim, argv, argc, why);
}
