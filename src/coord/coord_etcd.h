/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_etcd.h -- the etcd v3 coordinator's state, shared by coord_etcd.c
** (claims, fences), coord_etcd_fleet.c (the list, clocks, the layout
** record, facts), coord_etcd_http.c (the v3 JSON gateway through
** libcurl: endpoints, failover, TLS, authentication, requests) and
** coord_etcd_json.c (the gateway's replies, parsed: pure, fuzzed, built
** in every build).
*/
#ifndef FROND_COORD_ETCD_H
#define FROND_COORD_ETCD_H

#include "base/base.h"
#include "coord/coord.h"

#include <stdint.h>

/* Longest key and value kept from a reply; longer ones are refused. */
#define FROND__ETCD_KEY_MAX 512
#define FROND__ETCD_VAL_MAX 1024
/* Largest reply body read: a range over 1,024 claims fits many times. */
#define FROND__ETCD_BODY_MAX (8 * 1024 * 1024)
#define FROND__ETCD_ENDPOINTS_MAX 16
#define FROND__ETCD_PREFIX_MAX 128

/* One key of a reply, its key and value decoded from base64. */
typedef struct frond__etcd_kv {
  char key[FROND__ETCD_KEY_MAX];
  char value[FROND__ETCD_VAL_MAX];
  int64_t create_rev, mod_rev, version, lease;
  int resp; /* which of a txn's responses holds it; -1: a range's own */
} frond__etcd_kv;

/* What a gateway reply says, for every call the driver makes. Fields a
** reply leaves out are 0 (proto3's JSON omits default values). */
typedef struct frond__etcd_reply {
  int64_t revision; /* header.revision */
  int succeeded;    /* txn */
  int nresp;        /* txn responses */
  frond__etcd_kv *kvs;
  size_t nkvs;
  int64_t count;
  int64_t id, ttl; /* lease grant, keepalive (under "result") */
  char token[512]; /* authenticate */
  int is_error;    /* an error reply: code and error */
  int code;        /* its gRPC code */
  char error[256];
} frond__etcd_reply;

/* Parse a reply body: 0, or -1 when it is not one (not strict JSON, too
** deep, a key or value not base64 or too long, a number out of range).
** kvs is malloc'd: frond__etcd_reply_free. Pure. */
int frond__etcd_reply_parse(const char *body, size_t len, frond__etcd_reply *r);
void frond__etcd_reply_free(frond__etcd_reply *r);
/* base64 of n bytes into out (len bytes, NUL-terminated); -1 when it
** does not fit. */
int frond__etcd_b64(const char *in, size_t n, char *out, size_t len);

/* What the URI says (frond__etcd_parse_uri): endpoints and options. */
typedef struct frond__etcd_uri {
  char endpoints[FROND__ETCD_ENDPOINTS_MAX][160]; /* "http(s)://h:p" */
  int n;
  char prefix[FROND__ETCD_PREFIX_MAX + 2]; /* "/name", no trailing '/' */
  char user[128], password[128];
  char cacert[512], cert[512], key[512];
  int tls;
} frond__etcd_uri;

/* "etcd://h:p[,h:p...]/prefix[?query]": our options out of the query
** (user, password, cacert, cert, key, tls), the tunables into c->t.
** INVAL naming what is wrong. Pure. */
int frond__etcd_parse_uri(frond_coord *c, const char *uri, frond__etcd_uri *u,
                          frond_error *err);

/* ---- the transport (coord_etcd_http.c) ---------------------------------- */

typedef struct frond__etcd_http frond__etcd_http;

/* A client on u's endpoints; authenticates when u names a user. */
int frond__etcd_http_open(frond__etcd_http **out, const frond__etcd_uri *u,
                          int64_t connect_ms, frond_error *err);
void frond__etcd_http_close(frond__etcd_http *h);
/*
** POST body to path ("/v3/kv/txn") and parse the reply into r (freed by
** the caller, also on failure). An endpoint that refuses the connection
** is passed over for the next, within timeout_ms; any other failure is
** COORD naming the endpoint and etcd's words, the next call starting at
** the next endpoint (a write whose answer was lost may have happened).
** An expired token is renewed once. idempotent: a read, retried on the
** next endpoint after any failure.
*/
int frond__etcd_call(frond__etcd_http *h, const char *path, const char *body,
                     int idempotent, int64_t timeout_ms, frond__etcd_reply *r,
                     frond_error *err);
/* This clock minus the clock of the etcd member that answers, in ms,
** from its Date header's change of second (up to 2 s of requests). */
int frond__etcd_skew(frond__etcd_http *h, const frond_coord *c, int64_t *skew,
                     frond_error *err);
/* The endpoint in use, for messages. */
const char *frond__etcd_endpoint(const frond__etcd_http *h);

/* ---- the driver's state and requests (coord_etcd_http.c) --------------- */

#define FROND__ETCD_KEY_LEN (FROND__ETCD_PREFIX_MAX + 96)

typedef struct frond__etcd {
  frond_coord *c;
  frond__etcd_http *h;
  frond__etcd_uri u;
  char layout[FROND__ETCD_KEY_LEN];
  int64_t lease, ttl_s;
  uint64_t node;
  int have_node, claimed;
  int64_t claim_rev, node_rev, layout_rev;
  int64_t skew; /* this clock minus the member's; INT64_MIN: not measured */
} frond__etcd;

/* A request's JSON, appended to; over: it did not fit (refused). */
typedef struct frond__etcd_body {
  char b[16384];
  size_t n;
  int over;
} frond__etcd_body;

/* A txn: compares, then success and failure ops, each list appended by
** the caller between these. */
#define FROND__ETCD_TXN_BEGIN "{\"compare\":["
#define FROND__ETCD_TXN_SUCCESS "],\"success\":["
#define FROND__ETCD_TXN_FAILURE "],\"failure\":["
#define FROND__ETCD_TXN_END "]}"

void frond__etcd_add(frond__etcd_body *b, const char *fmt, ...)
    FROND__PRINTF(2, 3);
/* Text as base64 into out (len bytes); out. */
const char *frond__etcd_text64(const char *s, char *out, size_t len);
/* A compare of key's target ("CREATE", "MOD") with rev; a put (lease 0:
** none); a range of one key. */
void frond__etcd_cmp(frond__etcd_body *b, const char *key, const char *target,
                     int64_t rev);
void frond__etcd_put(frond__etcd_body *b, const char *key, const char *value,
                     int64_t lease);
void frond__etcd_rng(frond__etcd_body *b, const char *key);
/* How long one call of a renewal may take: a third of the validity. */
int64_t frond__etcd_call_ms(const frond_coord *c);
/* frond__etcd_call, with etcd's error replies as COORD naming the
** endpoint and etcd's words (NODE_ID_LOST for "lease not found"). */
int frond__etcd_request(frond__etcd *e, const char *path, frond__etcd_body *b,
                        int idempotent, int64_t ms, frond__etcd_reply *r,
                        frond_error *err);
/* The reply's key of that name, or NULL. */
const frond__etcd_kv *frond__etcd_find(const frond__etcd_reply *r,
                                       const char *key);
/* <prefix>/<what>/<10 digits of n> into buf (FROND__ETCD_KEY_LEN). */
void frond__etcd_key(const frond__etcd *e, const char *what, uint64_t n,
                     char *buf);
/* A range over every key <prefix>/<what>/. */
int frond__etcd_range_dir(frond__etcd *e, const char *what,
                          frond__etcd_reply *r, frond_error *err);
/* The node ID of a key <prefix>/<what>/<digits>, or -1. */
int64_t frond__etcd_key_node(const frond__etcd *e, const char *key,
                             const char *what);
/* A node key's value "fence <ms> owner <owner>": 0, or -1. */
int frond__etcd_parse_node(const char *v, int64_t *fence, char *owner,
                           size_t len);
/* A number after " <key> " in a claim's value; def when absent. */
int64_t frond__etcd_claim_field(const char *v, const char *key, int64_t def);

/* ---- the fleet's methods (coord_etcd_fleet.c) --------------------------- */

int frond__etcd_list(frond_coord *c, frond_coord_entry **out, size_t *n,
                     frond_error *err);
int frond__etcd_clock_offset(frond_coord *c, int64_t *offset_ms, char *ref,
                             size_t len, frond_error *err);
int frond__etcd_layout_get(frond_coord *c, char *spec, size_t len,
                           int64_t *floor_id, frond_error *err);
int frond__etcd_layout_set(frond_coord *c, const char *spec, int64_t *floor_id,
                           frond_error *err);
int frond__etcd_fact(frond_coord *c, const char *name, const char *value,
                     char *recorded, size_t len, char *where, size_t wlen,
                     frond_error *err);

#endif /* FROND_COORD_ETCD_H */
