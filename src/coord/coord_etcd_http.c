/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_etcd_http.c -- the etcd coordinator's transport: etcd's v3 JSON
** gateway (POST /v3/<service>/<method>, the JSON mapping of etcd's
** protobuf API, documented and stable since etcd 3.4) through libcurl.
**
** One easy handle, used under the coordinator's lock, keeps its
** connection between calls. Endpoints are tried in turn: one that refuses
** the connection is passed over at once; one that fails otherwise (a
** timeout, an error from a member that lost its quorum) fails the call,
** and the next call starts at the next endpoint, since the failed call may
** have been a write that happened. Reads are retried on every endpoint.
**
** Authentication (user= and password=): /v3/auth/authenticate gives a
** token sent in the Authorization header; etcd forgets tokens (simple
** tokens expire after 5 minutes, all of them at a restart), and a call
** refused for its token authenticates again and is sent once more.
*/
#include "coord/coord_etcd.h"
#include "base/base.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct frond__etcd_http {
  CURL *h;
  frond__etcd_uri u;
  int cur; /* the endpoint in use */
  int64_t connect_ms;
  char auth[600]; /* "Authorization: <token>", "" without a user */
  /* The reply being read. */
  char *body;
  size_t len, cap;
  int64_t date_s; /* from the Date header, 0 when none */
  char curl_err[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;

static void curl_init(void) {
  curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx) {
  frond__etcd_http *h = ctx;
  size_t add = size * n;
  if (h->len + add + 1 > FROND__ETCD_BODY_MAX)
    return 0; /* refused: curl fails the call */
  if (h->len + add + 1 > h->cap) {
    size_t cap = h->cap ? h->cap : 4096;
    char *b;
    while (cap < h->len + add + 1)
      cap *= 2;
    if (!(b = realloc(h->body, cap)))
      return 0;
    h->body = b;
    h->cap = cap;
  }
  memcpy(h->body + h->len, p, add);
  h->len += add;
  h->body[h->len] = 0;
  return add;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx) {
  frond__etcd_http *h = ctx;
  size_t len = size * n;
  if (len > 5 && len < 100 && strncasecmp(p, "Date:", 5) == 0) {
    char d[100];
    time_t t;
    snprintf(d, sizeof(d), "%.*s", (int)(len - 5), p + 5);
    if ((t = curl_getdate(d, NULL)) > 0)
      h->date_s = (int64_t)t;
  }
  return len;
}

const char *frond__etcd_endpoint(const frond__etcd_http *h) {
  return h->u.endpoints[h->cur];
}

/* One POST to the endpoint in use: 0 with the body, or the curl code. */
static CURLcode post(frond__etcd_http *h, const char *path, const char *body,
                     int64_t timeout_ms, long *status) {
  char url[400];
  struct curl_slist *hdr = NULL;
  CURLcode rc;
  snprintf(url, sizeof(url), "%s%s", h->u.endpoints[h->cur], path);
  h->len = 0;
  h->date_s = 0;
  h->curl_err[0] = 0;
  hdr = curl_slist_append(hdr, "Content-Type: application/json");
  if (h->auth[0] && hdr)
    hdr = curl_slist_append(hdr, h->auth);
  if (!hdr)
    return CURLE_OUT_OF_MEMORY;
  curl_easy_setopt(h->h, CURLOPT_URL, url);
  curl_easy_setopt(h->h, CURLOPT_HTTPHEADER, hdr);
  if (body) {
    curl_easy_setopt(h->h, CURLOPT_POSTFIELDS, body);
  } else {
    curl_easy_setopt(h->h, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(h->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  curl_easy_setopt(
      h->h, CURLOPT_CONNECTTIMEOUT_MS,
      (long)(timeout_ms < h->connect_ms ? timeout_ms : h->connect_ms));
  rc = curl_easy_perform(h->h);
  curl_slist_free_all(hdr);
  *status = 0;
  if (rc == CURLE_OK)
    curl_easy_getinfo(h->h, CURLINFO_RESPONSE_CODE, status);
  return rc;
}

/* Nothing was sent: the next endpoint may be tried at once. */
static int not_sent(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
}

static int authenticate(frond__etcd_http *h, int64_t timeout_ms,
                        frond_error *err);

static int call(frond__etcd_http *h, const char *path, const char *body,
                int idempotent, int64_t timeout_ms, frond__etcd_reply *r,
                int may_auth, frond_error *err) {
  int64_t deadline = frond__mono_ns() + timeout_ms * 1000000;
  int tries = 0;
  memset(r, 0, sizeof(*r));
  for (;;) {
    int64_t left = (deadline - frond__mono_ns()) / 1000000;
    long status = 0;
    CURLcode rc;
    if (left < 1)
      left = 1;
    rc = post(h, path, body, left, &status);
    tries++;
    if (rc != CURLE_OK) {
      char why[300];
      snprintf(why, sizeof(why), "%s",
               h->curl_err[0] ? h->curl_err : curl_easy_strerror(rc));
      const char *ep = h->u.endpoints[h->cur];
      int again = (not_sent(rc) || idempotent) && tries < h->u.n &&
                  frond__mono_ns() < deadline;
      h->cur = (h->cur + 1) % h->u.n;
      if (again)
        continue;
      return frond__fail(err, FROND_ECOORD, "etcd %s%s: %s", ep, path, why);
    }
    if (frond__etcd_reply_parse(h->body ? h->body : "", h->len, r) != 0) {
      const char *ep = h->u.endpoints[h->cur];
      h->cur = (h->cur + 1) % h->u.n;
      return frond__fail(err, FROND_ECOORD,
                         "etcd %s%s: HTTP %ld, not an etcd reply: %.120s", ep,
                         path, status, h->body ? h->body : "");
    }
    if (r->is_error && may_auth && h->u.user[0] &&
        (r->code == 16 || strstr(r->error, "invalid auth token") ||
         strstr(r->error, "user name is empty"))) {
      int arc;
      frond__etcd_reply_free(r);
      if ((arc = authenticate(h, (deadline - frond__mono_ns()) / 1000000 + 1,
                              err)) != 0)
        return arc;
      may_auth = 0;
      tries = 0;
      continue;
    }
    if (r->is_error && idempotent && r->code == 14 && tries < h->u.n &&
        frond__mono_ns() < deadline) {
      /* A member without a leader: ask another. */
      frond__etcd_reply_free(r);
      h->cur = (h->cur + 1) % h->u.n;
      continue;
    }
    return 0;
  }
}

static int authenticate(frond__etcd_http *h, int64_t timeout_ms,
                        frond_error *err) {
  char body[700], name[300], pass[300];
  frond__etcd_reply r;
  int rc;
  /* The options hold no '"' or '\\' escapes to worry about: quote them. */
  for (const char *s = h->u.user; *s; s++)
    if (*s == '"' || *s == '\\')
      return frond__fail(err, FROND_EINVAL, "etcd user name with '%c'", *s);
  for (const char *s = h->u.password; *s; s++)
    if (*s == '"' || *s == '\\')
      return frond__fail(err, FROND_EINVAL, "etcd password with '%c'", *s);
  snprintf(name, sizeof(name), "%s", h->u.user);
  snprintf(pass, sizeof(pass), "%s", h->u.password);
  snprintf(body, sizeof(body), "{\"name\":\"%s\",\"password\":\"%s\"}", name,
           pass);
  h->auth[0] = 0;
  rc = call(h, "/v3/auth/authenticate", body, 1, timeout_ms, &r, 0, err);
  if (rc != 0)
    return rc;
  if (r.is_error || !r.token[0]) {
    rc = frond__fail(err, FROND_ECOORD,
                     "etcd %s: authentication as '%s' refused: %s",
                     h->u.endpoints[h->cur], h->u.user,
                     r.is_error ? r.error : "no token in the reply");
    frond__etcd_reply_free(&r);
    return rc;
  }
  snprintf(h->auth, sizeof(h->auth), "Authorization: %s", r.token);
  frond__etcd_reply_free(&r);
  return 0;
}

int frond__etcd_call(frond__etcd_http *h, const char *path, const char *body,
                     int idempotent, int64_t timeout_ms, frond__etcd_reply *r,
                     frond_error *err) {
  return call(h, path, body, idempotent, timeout_ms, r, 1, err);
}

int frond__etcd_http_open(frond__etcd_http **out, const frond__etcd_uri *u,
                          int64_t connect_ms, frond_error *err) {
  frond__etcd_http *h;
  frond__etcd_reply r;
  int rc;
  *out = NULL;
  pthread_once(&curl_once, curl_init);
  if (!curl_ok)
    return frond__fail(err, FROND_ENOMEM, "libcurl did not initialise");
  if (!(h = calloc(1, sizeof(*h))))
    return frond__fail(err, FROND_ENOMEM, NULL);
  h->u = *u;
  h->connect_ms = connect_ms;
  if (!(h->h = curl_easy_init())) {
    free(h);
    return frond__fail(err, FROND_ENOMEM, "curl_easy_init failed");
  }
  curl_easy_setopt(h->h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h->h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h->h, CURLOPT_WRITEDATA, h);
  curl_easy_setopt(h->h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h->h, CURLOPT_HEADERDATA, h);
  curl_easy_setopt(h->h, CURLOPT_ERRORBUFFER, h->curl_err);
  curl_easy_setopt(h->h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h->h, CURLOPT_TCP_NODELAY, 1L);
  /* Never a proxy: etcd is reached directly, whatever the environment. */
  curl_easy_setopt(h->h, CURLOPT_NOPROXY, "*");
  if (u->cacert[0])
    curl_easy_setopt(h->h, CURLOPT_CAINFO, u->cacert);
  if (u->cert[0]) {
    curl_easy_setopt(h->h, CURLOPT_SSLCERT, u->cert);
    curl_easy_setopt(h->h, CURLOPT_SSLKEY, u->key);
  }
  *out = h;
  /* Reachable? /version answers without authentication. */
  rc = call(h, "/version", NULL, 1, connect_ms, &r, 0, err);
  frond__etcd_reply_free(&r);
  if (rc == 0 && u->user[0])
    rc = authenticate(h, connect_ms, err);
  return rc;
}

void frond__etcd_http_close(frond__etcd_http *h) {
  if (!h)
    return;
  curl_easy_cleanup(h->h);
  free(h->body);
  free(h);
}

/*
** A Date header says the member's clock read D seconds (D*1000 to
** D*1000 + 999 ms) at some moment between our send (t0) and its answer
** (t1): this clock minus the member's lies in [t0 - D*1000 - 999,
** t1 - D*1000]. Answers a few ms apart, across a change of second,
** narrow the intersection to about their spacing; on a loaded machine
** (slow answers) the estimate is the middle of what is left after 2 s.
*/
int frond__etcd_skew(frond__etcd_http *h, const frond_coord *c, int64_t *skew,
                     frond_error *err) {
  int64_t deadline = frond__mono_ns() + INT64_C(2000) * 1000000;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  do {
    frond__etcd_reply r;
    int64_t t0 = frond__coord_now(c), t1, a, b;
    int rc = call(h, "/version", NULL, 1, h->connect_ms, &r, 0, err);
    frond__etcd_reply_free(&r);
    t1 = frond__coord_now(c);
    if (rc != 0)
      return rc;
    if (h->date_s == 0)
      return frond__fail(err, FROND_ECOORD,
                         "etcd %s: no Date header to compare clocks with",
                         h->u.endpoints[h->cur]);
    a = t0 - h->date_s * 1000 - 999;
    b = t1 - h->date_s * 1000;
    if (a > hi || b < lo) { /* a clock stepped: start again */
      lo = a;
      hi = b;
    } else {
      lo = a > lo ? a : lo;
      hi = b < hi ? b : hi;
    }
    if (hi - lo > 20)
      frond__sleep_ns(5 * 1000000);
  } while (hi - lo > 20 && frond__mono_ns() < deadline);
  *skew = lo + (hi - lo) / 2;
  return 0;
}

/* ---- requests ----------------------------------------------------------- */

void frond__etcd_add(frond__etcd_body *b, const char *fmt, ...) {
  va_list ap;
  int k;
  if (b->over)
    return;
  va_start(ap, fmt);
  k = vsnprintf(b->b + b->n, sizeof(b->b) - b->n, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof(b->b) - b->n)
    b->over = 1;
  else
    b->n += (size_t)k;
}

/* Text as base64, into a static-size buffer of the caller. */
const char *frond__etcd_text64(const char *s, char *out, size_t len) {
  if (frond__etcd_b64(s, strlen(s), out, len) != 0)
    out[0] = 0;
  return out;
}

/* A compare: target "CREATE" or "MOD" of key equal to rev. */
void frond__etcd_cmp(frond__etcd_body *b, const char *key, const char *target,
                     int64_t rev) {
  char k[FROND__ETCD_KEY_LEN * 2];
  frond__etcd_add(b,
                  "%s{\"key\":\"%s\",\"target\":\"%s\",\"result\":\"EQUAL\","
                  "\"%s_revision\":\"%" PRId64 "\"}",
                  b->b[b->n - 1] == '[' ? "" : ",",
                  frond__etcd_text64(key, k, sizeof(k)), target,
                  target[0] == 'C' ? "create" : "mod", rev);
}

void frond__etcd_put(frond__etcd_body *b, const char *key, const char *value,
                     int64_t lease) {
  char k[FROND__ETCD_KEY_LEN * 2], v[FROND__ETCD_VAL_MAX * 2];
  frond__etcd_add(b, "%s{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"",
                  b->b[b->n - 1] == '[' ? "" : ",",
                  frond__etcd_text64(key, k, sizeof(k)),
                  frond__etcd_text64(value, v, sizeof(v)));
  if (lease)
    frond__etcd_add(b, ",\"lease\":\"%" PRId64 "\"", lease);
  frond__etcd_add(b, "}}");
}

void frond__etcd_rng(frond__etcd_body *b, const char *key) {
  char k[FROND__ETCD_KEY_LEN * 2];
  frond__etcd_add(b, "%s{\"request_range\":{\"key\":\"%s\"}}",
                  b->b[b->n - 1] == '[' ? "" : ",",
                  frond__etcd_text64(key, k, sizeof(k)));
}

/* A renewal's calls get a third of the validity each, so that a member
** that does not answer leaves time for another before the node stops. */
int64_t frond__etcd_call_ms(const frond_coord *c) {
  int64_t third = atomic_load(&c->validity_ms) / 3;
  return third > 100 ? third : 100;
}

/* An etcd error reply as COORD, naming the endpoint and etcd's words. */
static int refused(frond__etcd *e, const char *what, const frond__etcd_reply *r,
                   frond_error *err) {
  return frond__fail(err, FROND_ECOORD, "etcd %s: %s: %s",
                     frond__etcd_endpoint(e->h), what, r->error);
}

int frond__etcd_request(frond__etcd *e, const char *path, frond__etcd_body *b,
                        int idempotent, int64_t ms, frond__etcd_reply *r,
                        frond_error *err) {
  int rc;
  if (b->over) {
    memset(r, 0, sizeof(*r));
    return frond__fail(err, FROND_EINVAL, "etcd request too large");
  }
  rc = frond__etcd_call(e->h, path, b->b, idempotent, ms, r, err);
  if (rc == 0 && r->is_error && strstr(r->error, "lease not found"))
    return frond__fail(err, FROND_ENODE_ID_LOST, "etcd %s: %s: %s",
                       frond__etcd_endpoint(e->h), path, r->error);
  if (rc == 0 && r->is_error)
    rc = refused(e, path, r, err);
  return rc;
}

const frond__etcd_kv *frond__etcd_find(const frond__etcd_reply *r,
                                       const char *key) {
  for (size_t i = 0; i < r->nkvs; i++)
    if (strcmp(r->kvs[i].key, key) == 0)
      return &r->kvs[i];
  return NULL;
}

void frond__etcd_key(const frond__etcd *e, const char *what, uint64_t n,
                     char *buf) {
  snprintf(buf, FROND__ETCD_KEY_LEN, "%s/%s/%010" PRIu64, e->u.prefix, what, n);
}

/* A range over <prefix>/<what>/. */
int frond__etcd_range_dir(frond__etcd *e, const char *what,
                          frond__etcd_reply *r, frond_error *err) {
  char from[FROND__ETCD_KEY_LEN], to[FROND__ETCD_KEY_LEN],
      a[FROND__ETCD_KEY_LEN * 2], z[FROND__ETCD_KEY_LEN * 2];
  frond__etcd_body b = {.n = 0};
  snprintf(from, sizeof(from), "%s/%s/", e->u.prefix, what);
  snprintf(to, sizeof(to), "%s/%s0", e->u.prefix, what);
  frond__etcd_add(&b, "{\"key\":\"%s\",\"range_end\":\"%s\"}",
                  frond__etcd_text64(from, a, sizeof(a)),
                  frond__etcd_text64(to, z, sizeof(z)));
  return frond__etcd_request(e, "/v3/kv/range", &b, 1, e->c->t.connect_ms, r,
                             err);
}

/* The node ID of a key <prefix>/<what>/<digits>, or -1. */
int64_t frond__etcd_key_node(const frond__etcd *e, const char *key,
                             const char *what) {
  size_t pl = strlen(e->u.prefix), wl = strlen(what);
  int64_t v;
  if (strncmp(key, e->u.prefix, pl) != 0 || key[pl] != '/' ||
      strncmp(key + pl + 1, what, wl) != 0 || key[pl + 1 + wl] != '/' ||
      frond__parse_i64(key + pl + wl + 2, strlen(key + pl + wl + 2), &v) != 0 ||
      v < 0)
    return -1;
  return v;
}

/* "fence <ms> owner <owner>": 0, or -1 when it is not one. */
int frond__etcd_parse_node(const char *v, int64_t *fence, char *owner,
                           size_t len) {
  const char *sp, *o;
  if (strncmp(v, "fence ", 6) != 0 || !(sp = strchr(v + 6, ' ')) ||
      frond__parse_i64(v + 6, (size_t)(sp - v - 6), fence) != 0 ||
      strncmp(sp, " owner ", 7) != 0)
    return -1;
  o = sp + 7;
  snprintf(owner, len, "%s", o);
  return *o ? 0 : -1;
}

/* A number after " <key> " in a claim's value; def when absent. */
int64_t frond__etcd_claim_field(const char *v, const char *key, int64_t def) {
  char k[32];
  const char *p;
  int64_t x;
  snprintf(k, sizeof(k), " %s ", key);
  if (!(p = strstr(v, k)))
    return def;
  p += strlen(k);
  return frond__parse_i64(p, strcspn(p, " "), &x) == 0 ? x : def;
}
