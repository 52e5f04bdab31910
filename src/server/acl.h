/* SPDX-License-Identifier: Apache-2.0 */
/*
** acl.h -- credentials: named clients, their rights and their patterns.
**
**   acl_parse.c  the clients file's text into a set of clients (pure: no
**                I/O), glob patterns, secrets' hashes and their check
**   acl.c        the server's side: the set in use and its reload on
**                SIGHUP, who a connection's request comes from (HTTP's
**                Bearer header, RESP's AUTH, a client certificate), what
**                a request may do, failures counted per client
**
** A clients file has one client a line:
**
**   payments  secret=blake2b:<64 hex> rights=issue,read tags=orders:*
**   dashboard cert=dashboard.example.com rights=read
**
** Secrets are 256-bit random strings (`frond clients add` makes them);
** the file keeps only their keyed BLAKE2b-256 hash. A fast hash is
** enough for a secret nobody can guess, and it keeps the check cheap on
** every request (HTTP sends its Bearer header with each one); a password
** hash (Argon2) would cost tens of milliseconds a request or a cache of
** secrets in memory. docs/reference/configuration.md says the same.
*/
#ifndef FROND_SERVER_ACL_H
#define FROND_SERVER_ACL_H

#include "server/server.h"

#include <stdatomic.h>
#include <stdint.h>

/* Rights. */
#define FROND__ACL_ISSUE 1u
#define FROND__ACL_READ 2u
#define FROND__ACL_ADMIN 4u
#define FROND__ACL_ALL 7u

#define FROND__ACL_HASH_LEN 32   /* BLAKE2b-256 */
#define FROND__ACL_SECRET_LEN 43 /* 32 random bytes, base64url */
#define FROND__ACL_SECRET_MIN 32 /* shortest secret `clients hash` takes */
#define FROND__ACL_NAME_MAX 63   /* fits frond__client.name */
#define FROND__ACL_MAX_CLIENTS 4096
#define FROND__ACL_LINE_MAX 4096
#define FROND__ACL_FILE_MAX (4u << 20)

/* Why a request was refused, as the failures metric labels it. */
enum {
  FROND__ACL_FAIL_MISSING,   /* no credential where one is needed */
  FROND__ACL_FAIL_UNKNOWN,   /* a client name the file does not have */
  FROND__ACL_FAIL_WRONG,     /* a known client, a wrong secret */
  FROND__ACL_FAIL_FORBIDDEN, /* a right or a pattern not granted */
  FROND__ACL_FAILS
};

typedef struct frond__acl frond__acl;

/* One client. Its strings point into its set, which outlives it. */
typedef struct frond__acl_client {
  frond__client c; /* first: a request's client points here */
  frond__acl *set; /* NULL: admin_token's client, which lives as long */
  unsigned rights; /* FROND__ACL_* */
  int has_secret;
  unsigned char hash[FROND__ACL_HASH_LEN];
  const char *cert;    /* the certificate name, "" without */
  const char *tags;    /* ntags patterns, each NUL-terminated, in a row */
  size_t ntags;        /* of segment tags */
  const char *formats; /* nformats patterns of ID kinds: snowflake, uuid7, */
  size_t nformats;     /* uuid4, ulid, objectid, or a format's name */
  unsigned line;       /* in the file */
  _Atomic uint64_t fails[FROND__ACL_FAILS];
} frond__acl_client;

struct frond__acl {
  atomic_long refs;
  frond__acl_client *clients;
  size_t n;
  char *text; /* the file's text, cut into the clients' strings */
};

/* The text of a clients file (len bytes; file names it in messages) as a
** set with one reference, in *out. 0, or CONFIG with err naming
** file:line and what is wrong; NOMEM. */
int frond__acl_parse(const char *text, size_t len, const char *file,
                     frond__acl **out, frond_error *err);
/* Drop a reference; the last one frees the set. NULL: nothing. */
void frond__acl_unref(frond__acl *a);
/* The client named name[0..len), or NULL. */
const frond__acl_client *frond__acl_find(const frond__acl *a, const char *name,
                                         size_t len);
/* The client whose certificate name is cert, or NULL. */
const frond__acl_client *frond__acl_find_cert(const frond__acl *a,
                                              const char *cert);

/* Does glob pattern pat (NUL-terminated; '*' any run of bytes, anything
** else itself) match s[0..len)? */
int frond__acl_glob(const char *pat, const char *s, size_t len);
/* May k do right on name[0..len): a segment tag (kind 0) or an ID kind
** (kind 1: snowflake, a built-in or a format's name)? */
int frond__acl_allows(const frond__acl_client *k, unsigned right, int kind,
                      const char *name, size_t len);
/* The rights as "issue,read,admin", into buf[cap]; returns buf. */
const char *frond__acl_rights_str(unsigned rights, char *buf, size_t cap);

/* The hash a clients file keeps of a secret. */
void frond__acl_hash(const char *secret, size_t len,
                     unsigned char out[FROND__ACL_HASH_LEN]);
/* Is secret[0..len) k's secret? k NULL (an unknown client): hashed and
** compared all the same, and 0, so that an unknown name takes the time a
** known one does. Constant time in the secret's value. */
int frond__acl_verify(const frond__acl_client *k, const char *secret,
                      size_t len);
/* a[0..n) == b[0..n), looking at every byte whatever they hold. */
int frond__acl_equal(const void *a, const void *b, size_t n);
#ifdef FROND_TEST_HOOKS
/* Bytes frond__acl_equal has looked at (tests check the whole hash is). */
extern _Atomic uint64_t frond__acl_compared;
#endif

/* ---------------------------------------------------------------- acl.c */

/* The clients file at path, as the server reads it: a regular file no
** other user may write, parsed. 0, or CONFIG / NOMEM. */
int frond__acl_load(const char *path, frond__acl **out, frond_error *err);
/* Load clients_file (when set) at start; the admin_token's client. 0, or
** CONFIG with err naming file:line. Main thread. */
int frond__acl_open(frond__server *srv, frond_error *err);
/* Watch SIGHUP on the main loop: clients_file read again, a bad one kept
** out (the old set stays, the reason logged). And stop watching. */
void frond__acl_start(frond__server *srv, uv_loop_t *loop);
void frond__acl_stop(void);
/* Read clients_file again now: 0, or the failure (logged, the old set
** kept). Main thread. */
int frond__acl_reload(frond__server *srv, frond_error *err);
void frond__acl_close(frond__server *srv);

/* Does any credential guard the server (admin_token or clients_file)? */
int frond__acl_on(const frond__server *srv);

/* Who c's current request comes from, from an HTTP Authorization value
** (auth[0..len), NULL: none) or, without one, c's client certificate:
** sets c->client (NULL when nothing is configured). 0, or UNAUTHORIZED
** with err saying why (counted; the secret never in it). */
int frond__acl_http(frond__conn *c, const char *auth, size_t len,
                    frond_error *err);
/* RESP's AUTH: user (NULL: the one-argument form, admin_token's) and
** pass. Sets c->client: 0, or UNAUTHORIZED (counted). */
int frond__acl_auth(frond__conn *c, const char *user, size_t ulen,
                    const char *pass, size_t plen, frond_error *err);
/* A RESP connection's client, kept across commands: again after a reload
** (a client gone from the file: none), or from the client certificate
** when the connection has none yet. NULL: not authenticated. */
const frond__client *frond__acl_conn(frond__conn *c);
/* Forget c's client (RESET, a connection closing). */
void frond__acl_conn_drop(frond__conn *c);
/* Does c's client hold right (on anything)? 0, or FORBIDDEN naming the
** client (counted). Nothing configured: 0. */
int frond__acl_right(frond__conn *c, unsigned right, frond_error *err);

/* The request layer's check (req.c), before anything is issued or
** changed: sets r->client from c, and fails r (r->rc, r->err) with
** UNAUTHORIZED or FORBIDDEN when c's client may not do what r asks. 0
** when it may. */
int frond__acl_req(frond__conn *c, frond__req *r);
/* A request taken off the loop keeps its client's set until it ends. */
void frond__acl_hold(const frond__client *k);
void frond__acl_release(const frond__client *k);

/* The frond_auth_failures_total family. */
void frond__acl_metrics(frond__server *srv, frond__buf *b);

#endif /* FROND_SERVER_ACL_H */
