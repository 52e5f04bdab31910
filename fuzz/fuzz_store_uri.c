/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_store_uri.c -- libFuzzer harness for the SQL layer's URI grammar
** (frond__db_uri_parse, db.h).
**
** Every input is accepted or refused with STORE_URI and a one-line
** message; the same input always gets the same answer; an accepted sqlite
** URI yields a non-empty path, a suffix of the input, free of options and
** control characters, absolute when the URI had "//"; an accepted
** PostgreSQL or MySQL URI is passed whole to its engine; a MySQL URI
** taken apart has a port in 1..65535, a database without '/', an
** absolute socket path, every string inside the caller's buffer, and a
** buffer one byte short is refused, never overrun; a refused URI with a
** password never shows it. A multi: URI is split into 2 to 16 members,
** each a non-empty slice of the input between '|' (or its ends), each
** accepted by the grammar above; when it is refused, a member's password
** never shows.
*/
#include "store/db.h"
#include "store/store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A password never reaches a message: put a marker found nowhere else in
** the URI where the layer says the password is (frond__db_uri_password,
** the one locator db.c and the engines redact with), and look for the
** marker. */
static void check_redacted(const char *uri) {
  char marker[16], *marked;
  size_t from, to, len = strlen(uri);
  frond_db_uri u;
  frond_error e = {0, ""};
  int k = 0;
  /* (multi: is its members' URIs, each redacted on its own.) */
  if (strncmp(uri, "sqlite:", 7) == 0 || strncasecmp(uri, "multi:", 6) == 0 ||
      !frond__db_uri_password(uri, &from, &to))
    return;
  do
    snprintf(marker, sizeof(marker), "PW%dWP", k++);
  while (strstr(uri, marker) != NULL);
  if ((marked = malloc(len + sizeof(marker))) == NULL)
    return;
  snprintf(marked, len + sizeof(marker), "%.*s%s%s", (int)from, uri, marker,
           uri + to);
  if (frond__db_uri_parse(marked, &u, &e) != 0 &&
      strstr(e.message, marker) != NULL)
    abort();
  free(marked);
}

static int inside(const char *s, const char *buf, size_t n) {
  return s == NULL || (s >= buf && s + strlen(s) < buf + n);
}

/* The MySQL grammar on its own (it needs no engine in the build). */
static void mysql_parts(const char *uri) {
  size_t n = strlen(uri) + 8;
  char *buf = malloc(n), *small;
  frond_db_mysql_uri u;
  frond_error e = {0, ""};
  int rc;
  if (buf == NULL)
    return;
  rc = frond__db_mysql_parse(uri, &u, buf, n, &e);
  if (rc != 0) {
    if (rc != FROND_ESTORE_URI || e.message[0] == '\0')
      abort();
  } else {
    if (u.port < 1 || u.port > 65535 || u.database == NULL ||
        u.database[0] == '\0' || strchr(u.database, '/') != NULL ||
        (u.socket != NULL && u.socket[0] != '/') || u.ssl_mode < 0 ||
        u.ssl_mode > FROND_DB_SSL_VERIFY_IDENTITY || !inside(u.user, buf, n) ||
        !inside(u.password, buf, n) || !inside(u.host, buf, n) ||
        !inside(u.database, buf, n) || !inside(u.socket, buf, n) ||
        !inside(u.ssl_ca, buf, n) || !inside(u.ssl_cert, buf, n) ||
        !inside(u.ssl_key, buf, n))
      abort();
    /* Exactly the room it used, then one byte less. */
    if ((small = malloc(n)) != NULL) {
      size_t used = 0;
      const char *const parts[] = {u.user,   u.password, u.host,     u.database,
                                   u.socket, u.ssl_ca,   u.ssl_cert, u.ssl_key};
      size_t i;
      for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (parts[i] != NULL &&
            (size_t)(parts[i] - buf) + strlen(parts[i]) + 1 > used)
          used = (size_t)(parts[i] - buf) + strlen(parts[i]) + 1;
      free(small);
      if (used > 1 && (small = malloc(used - 1)) != NULL) {
        frond_db_mysql_uri v;
        if (frond__db_mysql_parse(uri, &v, small, used - 1, NULL) == 0)
          abort();
        free(small);
      }
    }
  }
  free(buf);
}

/* The multi: grammar: members tile the input after "multi:". */
static void multi_parts(const char *uri) {
  frond_multi_uri m;
  frond_error e = {0, ""};
  size_t len = strlen(uri), at = 6, from, to;
  int i, rc = frond__store_multi_parse(uri, &m, &e);
  if (rc != 0) {
    const char *p;
    if (rc != FROND_ESTORE_URI || e.message[0] == '\0' ||
        strchr(e.message, '\n') != NULL)
      abort();
    /* A marked password in the first member that has one never shows (a
    ** SQLite member has none: its text is a path). */
    for (p = uri + (strncmp(uri, "multi:", 6) == 0 ? 6 : len); *p;) {
      size_t n = strcspn(p, "|");
      char *piece = strndup(p, n);
      if (piece != NULL && strncmp(piece, "sqlite:", 7) != 0 &&
          frond__db_uri_password(piece, &from, &to) && to > from) {
        size_t off = (size_t)(p - uri);
        char *marked = malloc(len + 16);
        frond_error f = {0, ""};
        if (marked != NULL && memchr(uri, '~', len) == NULL) {
          snprintf(marked, len + 16, "%.*s~PW~%s", (int)(off + from), uri,
                   uri + off + to);
          if (frond__store_multi_parse(marked, &m, &f) != 0 &&
              strstr(f.message, "~PW~") != NULL)
            abort();
        }
        free(marked);
        free(piece);
        break;
      }
      free(piece);
      p += n + (p[n] == '|');
    }
    return;
  }
  if (strncmp(uri, "multi:", 6) != 0 || m.n < 2 || m.n > FROND_STORE_MULTI_MAX)
    abort();
  for (i = 0; i < m.n; i++) {
    char *piece;
    frond_db_uri u;
    if (m.start[i] != at || m.len[i] == 0 ||
        memchr(uri + at, '|', m.len[i]) != NULL)
      abort();
    at += m.len[i];
    if (uri[at] != (i + 1 < m.n ? '|' : '\0'))
      abort();
    at++;
    if ((piece = strndup(uri + m.start[i], m.len[i])) == NULL)
      return;
    if (frond__db_uri_parse(piece, &u, NULL) != 0 || u.memory)
      abort();
    free(piece);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *uri = malloc(size + 1);
  frond_db_uri u, v;
  frond_error e = {0, ""}, f = {0, ""};
  int rc;
  if (uri == NULL)
    return 0;
  memcpy(uri, data, size);
  uri[size] = '\0';
  rc = frond__db_uri_parse(uri, &u, &e);
  if (frond__db_uri_parse(uri, &v, &f) != rc || memcmp(&u, &v, sizeof(u)) != 0)
    abort(); /* a pure function */
  if (rc != 0) {
    if (rc != FROND_ESTORE_URI || e.code != rc || e.message[0] == '\0' ||
        strchr(e.message, '\n') != NULL || strcmp(e.message, f.message) != 0)
      abort();
    check_redacted(uri);
  } else if (u.engine == &frond__db_sqlite) {
    size_t i;
    if (u.target_len == 0 || u.target + u.target_len != uri + strlen(uri) ||
        u.target < uri + 7 || strncmp(uri, "sqlite:", 7) != 0)
      abort();
    for (i = 0; i < u.target_len; i++)
      if (u.target[i] == '?' || u.target[i] == '#' ||
          (unsigned char)u.target[i] < 0x20 || u.target[i] == 0x7f)
        abort();
    if (strncmp(uri, "sqlite://", 9) == 0 && u.target[0] != '/')
      abort(); /* sqlite://host/... is never read as a path */
    if (u.memory != (strcmp(u.target, ":memory:") == 0))
      abort();
  } else if (u.engine == &frond__db_pg) {
    if (u.target != uri || u.target_len != strlen(uri) || u.memory ||
        (strncmp(uri, "postgresql://", 13) != 0 &&
         strncmp(uri, "postgres://", 11) != 0))
      abort();
#ifdef FROND_WITH_MYSQL
  } else if (u.engine == &frond__db_mysql) {
    if (u.target != uri || u.target_len != strlen(uri) || u.memory ||
        (strncmp(uri, "mysql://", 8) != 0 &&
         strncmp(uri, "mariadb://", 10) != 0))
      abort();
#endif
  } else {
    abort();
  }
  mysql_parts(uri);
  multi_parts(uri);
  free(uri);
  return 0;
}
