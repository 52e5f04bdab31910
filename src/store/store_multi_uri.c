/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_multi_uri.c -- the multi: store's pure parts: its URI grammar, the
** URI as the log shows it, and the arithmetic of the block interleave
** (store_multi.c explains the scheme). Below the SQL store, which turns a
** member's row into global IDs for the floor a deleted tag leaves, and
** below store_multi.c, which serves and administers the members.
*/
#include "store/store.h"

#include <stdio.h>
#include <string.h>

/* ---- the URI ---- */

int frond__store_multi_parse(const char *uri, frond_multi_uri *out,
                             frond_error *err) {
  const char *p;
  int n = 0;
  memset(out, 0, sizeof(*out));
  if (strncmp(uri, "multi:", 6) != 0)
    return frond__fail(err, FROND_ESTORE_URI, "multi URI: expected multi:");
  for (p = uri + 6;; n++) {
    size_t len = strcspn(p, "|");
    char buf[FROND_STORE_URI_MAX + 1];
    frond_db_uri u;
    frond_error e = {0, ""};
    if (n == FROND_STORE_MULTI_MAX)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: more than %d members",
                         FROND_STORE_MULTI_MAX);
    if (len == 0)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: member %d is empty (members are "
                         "separated by a single '|')",
                         n);
    if (len > FROND_STORE_URI_MAX)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: member %d is longer than %d bytes", n,
                         FROND_STORE_URI_MAX);
    memcpy(buf, p, len);
    buf[len] = '\0';
    if (strncmp(buf, "multi:", 6) == 0)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: member %d is a multi: URI", n);
    if (frond__db_uri_parse(buf, &u, &e) != 0)
      return frond__fail(err, FROND_ESTORE_URI, "multi URI: member %d: %s", n,
                         e.message);
    if (u.memory)
      return frond__fail(err, FROND_ESTORE_URI,
                         "multi URI: member %d is in memory", n);
    out->start[n] = (size_t)(p - uri);
    out->len[n] = len;
    if (p[len] == '\0')
      break;
    p += len + 1;
  }
  out->n = n + 1;
  if (out->n < 2)
    return frond__fail(err, FROND_ESTORE_URI,
                       "multi URI: at least 2 members, separated by '|'");
  return 0;
}

void frond__store_uri_shown(const char *uri, char *out, size_t len) {
  frond__uri_redact(uri, strlen(uri), out, len);
}

/* ---- the mapping ---- */

int frond__multi_map(int64_t lstart, int64_t b, int i, int n, int64_t *gstart) {
  int64_t q;
  if (b < 1 || n < 1 || i < 0 || i >= n || lstart < 1 || (lstart - 1) % b != 0)
    return -1;
  q = (lstart - 1) / b;
  /* (q*n + i + 1) * b + 1 must fit. */
  if (q > (INT64_MAX / b - 1 - i) / n)
    return -1;
  *gstart = (q * n + i) * b + 1;
  return 0;
}

int64_t frond__multi_local_start(int64_t start, int64_t b, int n) {
  int64_t per, q0, g;
  if (b < 1 || n < 1 || start < 1 || b > INT64_MAX / n)
    return -1;
  per = b * n;
  q0 = (start - 1) / per + ((start - 1) % per != 0);
  if (q0 > (INT64_MAX - 1) / b - 1)
    return -1;
  /* Every member's block must have its global place. */
  if (frond__multi_map(1 + q0 * b, b, n - 1, n, &g) != 0)
    return -1;
  return 1 + q0 * b;
}

int64_t frond__multi_next(int64_t lmax, int64_t b, int i, int n) {
  int64_t g;
  if (b < 1 || lmax < 1)
    return lmax;
  if ((lmax - 1) % b != 0) {
    if (lmax > INT64_MAX - b)
      return INT64_MAX;
    lmax += b - (lmax - 1) % b;
  }
  return frond__multi_map(lmax, b, i, n, &g) == 0 ? g : INT64_MAX;
}

int64_t frond__multi_local_min(int64_t g, int64_t b, int i, int n) {
  int64_t per, over, q, l, gs;
  if (b < 1 || b > INT32_MAX || n < 1 || n > FROND_STORE_MULTI_MAX || i < 0 ||
      i >= n)
    return -1;
  if (g <= 1)
    return 1;
  per = b * n;
  over = g - 1 - (int64_t)i * b; /* (q*n + i)*b >= g - 1 */
  q = over <= 0 ? 0 : over / per + (over % per != 0);
  if (q > (INT64_MAX - 1) / b - 1)
    return -1;
  l = 1 + q * b;
  return frond__multi_map(l, b, i, n, &gs) == 0 ? l : -1;
}
