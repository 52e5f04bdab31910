/* SPDX-License-Identifier: Apache-2.0 */
/*
** db_uri.c -- a MySQL URI taken apart (db.h's grammar), for db.c, which
** checks every URI before an engine sees it, and for db_mysql.c. A pure
** function over the URI's text, fuzzed (fuzz/fuzz_store_uri.c); no
** MySQL library is needed, so a build without MySQL still checks and
** explains a mysql:// URI.
*/
#include "store/db.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- MySQL ---- */

typedef struct outbuf {
  char *p;
  size_t len, n;
} outbuf;

/* Percent-decode [s, s + n) into o; the start of the copy, or NULL for a
** bad escape, a %00 or no room. */
static const char *decode(outbuf *o, const char *s, size_t n) {
  const char *start = o->p + o->n;
  size_t i;
  for (i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (c == '%') {
      int hi = i + 2 < n ? frond__hexval(s[i + 1]) : -1;
      int lo = i + 2 < n ? frond__hexval(s[i + 2]) : -1;
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
        return NULL;
      c = hi * 16 + lo;
      i += 2;
    }
    if (o->n + 1 >= o->len)
      return NULL;
    o->p[o->n++] = (char)c;
  }
  if (o->n >= o->len)
    return NULL;
  o->p[o->n++] = '\0';
  return start;
}

static int bad(frond_error *err, const char *what) {
  return frond__fail(err, FROND_ESTORE_URI, "mysql URI: %s", what);
}

static int ssl_mode(const char *v, int *out) {
  static const char *const names[] = {"DISABLED", "PREFERRED", "REQUIRED",
                                      "VERIFY_CA", "VERIFY_IDENTITY"};
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(names); i++)
    if (strcasecmp(v, names[i]) == 0) {
      *out = (int)i;
      return 0;
    }
  return -1;
}

/* One name=value of the query. */
static int option(frond_db_mysql_uri *u, outbuf *o, const char *s, size_t n,
                  frond_error *err) {
  const char *eq = memchr(s, '=', n), *v;
  char key[24];
  size_t k, klen = eq ? (size_t)(eq - s) : n;
  int64_t secs;
  if (eq == NULL || klen == 0 || klen >= sizeof(key))
    return frond__fail(err, FROND_ESTORE_URI,
                       "mysql URI: option \"%.*s\" is not name=value",
                       (int)(n > 40 ? 40 : n), s);
  for (k = 0; k < klen; k++)
    key[k] = s[k] == '-' ? '_' : (char)tolower((unsigned char)s[k]);
  key[klen] = '\0';
  if ((v = decode(o, eq + 1, n - klen - 1)) == NULL)
    return frond__fail(err, FROND_ESTORE_URI,
                       "mysql URI: option %s: bad %%-escape", key);
  if (*v == '\0')
    return frond__fail(err, FROND_ESTORE_URI, "mysql URI: option %s is empty",
                       key);
  if (strcmp(key, "socket") == 0 || strcmp(key, "unix_socket") == 0) {
    if (v[0] != '/')
      return bad(err, "socket must be an absolute path");
    u->socket = v;
  } else if (strcmp(key, "ssl_mode") == 0 || strcmp(key, "sslmode") == 0) {
    if (ssl_mode(v, &u->ssl_mode) != 0)
      return bad(err, "ssl-mode must be DISABLED, PREFERRED, REQUIRED, "
                      "VERIFY_CA or VERIFY_IDENTITY");
  } else if (strcmp(key, "ssl_ca") == 0) {
    u->ssl_ca = v;
  } else if (strcmp(key, "ssl_cert") == 0) {
    u->ssl_cert = v;
  } else if (strcmp(key, "ssl_key") == 0) {
    u->ssl_key = v;
  } else if (strcmp(key, "connect_timeout") == 0) {
    if (frond__parse_i64(v, strlen(v), &secs) != 0 || secs < 1 || secs > 86400)
      return bad(err, "connect_timeout must be 1..86400 seconds");
    u->connect_timeout_ms = secs * 1000;
  } else {
    return frond__fail(err, FROND_ESTORE_URI,
                       "mysql URI: unknown option \"%s\" (known: socket, "
                       "ssl-mode, ssl-ca, ssl-cert, ssl-key, connect_timeout)",
                       key);
  }
  return 0;
}

int frond__db_mysql_parse(const char *uri, frond_db_mysql_uri *u, char *buf,
                          size_t len, frond_error *err) {
  outbuf o = {buf, len, 0};
  const char *p, *auth, *at, *host, *host_end, *path, *query, *colon;
  memset(u, 0, sizeof(*u));
  u->port = 3306;
  u->ssl_mode = FROND_DB_SSL_PREFERRED;
  if (strncmp(uri, "mysql://", 8) == 0)
    auth = uri + 8;
  else if (strncmp(uri, "mariadb://", 10) == 0)
    auth = uri + 10;
  else
    return bad(err, "expected mysql:// or mariadb://");
  if (strchr(uri, '#') != NULL)
    return bad(err, "'#' is not allowed (percent-encode it as %23)");
  path = auth + strcspn(auth, "/?");
  /* user[:password]@: the last '@' before the path ends it. */
  for (at = path; at > auth && at[-1] != '@'; at--)
    ;
  host = auth;
  if (at > auth) {
    colon = memchr(auth, ':', (size_t)(at - 1 - auth));
    if ((u->user = decode(&o, auth,
                          colon ? (size_t)(colon - auth)
                                : (size_t)(at - 1 - auth))) == NULL)
      return bad(err, "bad %-escape in the user name");
    if (colon != NULL &&
        (u->password = decode(&o, colon + 1, (size_t)(at - 2 - colon))) == NULL)
      return bad(err, "bad %-escape in the password");
    if (*u->user == '\0')
      u->user = NULL;
    host = at;
  }
  if (*host == '[') {
    if ((host_end = memchr(host, ']', (size_t)(path - host))) == NULL)
      return bad(err, "'[' without ']' around the IPv6 address");
    for (p = host + 1; p < host_end; p++)
      if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
        return bad(err, "not an IPv6 address between '[' and ']'");
    if ((u->host = decode(&o, host + 1, (size_t)(host_end - host - 1))) == NULL)
      return bad(err, "URI too long");
    p = host_end + 1;
    if (p < path && *p != ':')
      return bad(err, "text after ']' that is not :port");
  } else {
    for (p = host; p < path && *p != ':'; p++)
      if (*p == '%' || *p == '[' || *p == ']' || *p == '@')
        return bad(err, "bad character in the host name");
    if (p > host && (u->host = decode(&o, host, (size_t)(p - host))) == NULL)
      return bad(err, "URI too long");
  }
  if (p < path) { /* ":port" */
    int64_t port;
    if (frond__parse_i64(p + 1, (size_t)(path - p - 1), &port) != 0 ||
        port < 1 || port > 65535 || p[1] == '+' || p[1] == '-')
      return bad(err, "the port must be 1..65535");
    u->port = (unsigned)port;
  }
  if (*path != '/')
    return bad(err, "no database (mysql://host/database)");
  query = path + 1 + strcspn(path + 1, "?");
  if (query == path + 1)
    return bad(err, "no database (mysql://host/database)");
  if ((u->database = decode(&o, path + 1, (size_t)(query - path - 1))) == NULL)
    return bad(err, "bad %-escape in the database name");
  if (strchr(u->database, '/') != NULL)
    return bad(err, "the database name has a '/'");
  if (*query == '?') {
    for (p = query + 1; *p;) {
      size_t n = strcspn(p, "&");
      int rc;
      if (n > 0 && (rc = option(u, &o, p, n, err)) != 0)
        return rc;
      p += n + (p[n] == '&');
    }
  }
  return 0;
}
