/* SPDX-License-Identifier: Apache-2.0 */
/*
** forward.c -- a call for an ordered tag that another node owns is
** forwarded to that node, over the fleet's own HTTP API, and its answer
** is this node's.
**
** Why forward rather than redirect. A redirect needs every client to
** follow it: Leaf's clients, curl without -L, and every Redis client (a
** Redis client follows -MOVED only in cluster mode) would fail or need
** changes. Forwarded, an ordered tag works from any node, for every
** front (HTTP, Leaf's paths, RESP) and every client as it is; the cost
** is one hop on the owner's network, which a client that cares can save
** by calling the owner (its address is in the message of TAG_OWNER, and
** in /v1/tags/{tag}).
**
** How. The request runs on the thread pool (req.c, like every call that
** waits): GET http://owner/v1/segment/{tag}?count=n&as=text with the
** header Frond-Forwarded, so that an owner that lost the tag meanwhile
** answers TAG_OWNER instead of forwarding again (one hop at most, no
** loop). With credentials configured, the node presents the fleet's
** admin_token (the caller was checked here already); without one, none.
** Handles are pooled, so that a busy follower keeps its connections to
** the owner open, and calls of one tag forwarded at once go to the owner
** as one batch (lead(), below). An owner that does not answer within the wait is
** SEGMENT_UNAVAILABLE, naming it; the caller retries (503), and once the
** owner's claim expires a node claims the tag (seg_ordered.c).
**
** Order: the owner takes the IDs while the forwarded call is in flight,
** within the caller's call, so a forwarded answer keeps the guarantee of
** seg_ordered.c.
*/
#include "base/base.h"
#include "core/core.h"
#include "server/server.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__forward_parse(const char *body, size_t len, size_t n, int64_t *out,
                         frond_error *err) {
  size_t i = 0, k = 0, d;
  while (i < len && k < n) {
    int64_t v = 0;
    for (d = 0; i < len && body[i] >= '0' && body[i] <= '9'; i++, d++) {
      if (v > (INT64_MAX - (body[i] - '0')) / 10)
        return frond__fail(err, FROND_ESTORE,
                           "the owner's answer holds a number past the "
                           "bigint range");
      v = v * 10 + (body[i] - '0');
    }
    if (d == 0 || (i < len && body[i] != '\n' && body[i] != '\r'))
      return frond__fail(err, FROND_ESTORE,
                         "the owner's answer is not one ID a line (byte %zu)",
                         i);
    while (i < len && (body[i] == '\r' || body[i] == '\n'))
      i++;
    if (k > 0 && v <= out[k - 1])
      return frond__fail(err, FROND_ESTORE,
                         "the owner's answer does not increase (%lld after "
                         "%lld)",
                         (long long)v, (long long)out[k - 1]);
    out[k++] = v;
  }
  if (k != n || i != len)
    return frond__fail(err, FROND_ESTORE,
                       "the owner's answer holds %s IDs than the %zu asked",
                       k < n ? "fewer" : "more", n);
  return 0;
}

int frond__forward_error(const char *body, size_t len) {
  static const char key[] = "\"code\":\"";
  char name[40];
  size_t i, j;
  /* The first "code":"NAME" of the answer's {"error":{...}}. */
  for (i = 0; i + sizeof(key) - 1 <= len; i++)
    if (memcmp(body + i, key, sizeof(key) - 1) == 0)
      break;
  if (i + sizeof(key) - 1 > len)
    return 0;
  i += sizeof(key) - 1;
  for (j = 0;
       i + j < len && j + 1 < sizeof(name) &&
       ((body[i + j] >= 'A' && body[i + j] <= 'Z') ||
        (body[i + j] >= '0' && body[i + j] <= '9') || body[i + j] == '_');
       j++)
    name[j] = body[i + j];
  name[j] = '\0';
  if (i + j >= len || body[i + j] != '"')
    return 0;
#define FROND__FWD_NAME(num, nm, msg)                                          \
  if (strcmp(name, #nm) == 0)                                                  \
    return -(num);
  FROND_ERRNO_MAP(FROND__FWD_NAME)
#undef FROND__FWD_NAME
  return 0;
}

#ifdef FROND_WITH_ETCD
#include <curl/curl.h>
#include <pthread.h>

#define POOL 16
#define BODY_MAX (64 * 1024 * 1024)

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static CURL *pool[POOL];
static int npool;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;

static void curl_init(void) {
  curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

/* The owner's answer, into a frond__buf (0 refuses: curl fails the
** call). */
static size_t on_body(char *p, size_t size, size_t n, void *ctx) {
  frond__buf *b = ctx;
  size_t add = size * n;
  return b->len + add <= BODY_MAX && frond__buf_append(b, p, add) == 0 ? add
                                                                       : 0;
}

static CURL *handle_get(void) {
  CURL *h = NULL;
  pthread_mutex_lock(&pool_mu);
  if (npool > 0)
    h = pool[--npool];
  pthread_mutex_unlock(&pool_mu);
  return h != NULL ? h : curl_easy_init();
}

static void handle_put(CURL *h) {
  pthread_mutex_lock(&pool_mu);
  if (npool < POOL) {
    pool[npool++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&pool_mu);
  if (h != NULL)
    curl_easy_cleanup(h);
}

static int call(frond__server *srv, const char *owner, const char *tag,
                size_t len, size_t n, int64_t *out, frond_error *err) {
  char url[FROND__OWNER_MAX + 3 * FROND_TAG_MAX + 64], auth[300];
  char cerr[CURL_ERROR_SIZE] = "";
  struct curl_slist *hdr = NULL, *h2;
  frond__buf r = {NULL, 0, 0};
  long status = 0, wait_ms = srv->cfg.segment_wait_ms + 2000;
  char *esc;
  CURL *h;
  CURLcode cc;
  int rc;
  if ((h = handle_get()) == NULL ||
      (esc = curl_easy_escape(h, tag, (int)len)) == NULL) {
    if (h != NULL)
      handle_put(h);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  snprintf(url, sizeof(url), "http://%s/v1/segment/%s?count=%zu&as=text", owner,
           esc, n);
  curl_free(esc);
  hdr = curl_slist_append(NULL, "Frond-Forwarded: 1");
  if (hdr != NULL && srv->cfg.admin_token[0]) {
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
             srv->cfg.admin_token);
    if ((h2 = curl_slist_append(hdr, auth)) != NULL)
      hdr = h2;
  }
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, wait_ms);
  cc = curl_easy_perform(h);
  if (cc == CURLE_OK)
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(hdr);
  if (cc != CURLE_OK)
    rc = frond__fail(err, FROND_ESEGMENT_UNAVAILABLE,
                     "tag \"%.*s\" is ordered and its owner %s did not "
                     "answer the forwarded call: %s",
                     (int)len, tag, owner,
                     cerr[0] ? cerr : curl_easy_strerror(cc));
  else if (status == 200)
    rc = frond__forward_parse(r.data != NULL ? r.data : "", r.len, n, out, err);
  else if ((rc = frond__forward_error(r.data != NULL ? r.data : "", r.len)) ==
           0)
    rc = FROND_ESTORE; /* not Frond's answer */
  if (cc == CURLE_OK && status != 200)
    frond__fail(err, rc, "tag \"%.*s\": its owner %s answered %ld: %.*s",
                (int)len, tag, owner, status, (int)(r.len < 300 ? r.len : 300),
                r.data != NULL ? r.data : "");
  frond__buf_free(&r);
  if (cc == CURLE_OK) {
    curl_easy_reset(h); /* nothing left pointing at this call's memory */
    handle_put(h);      /* its connection stays open for the next */
  } else {
    curl_easy_cleanup(h);
  }
  return rc;
}

/* At most one warning every 10 s of an owner that did not answer: an
** address other nodes cannot reach (a wrong advertise) shows in the log,
** and a burst of calls does not flood it. */
static int warn_now(void) {
  static _Atomic int64_t last;
  int64_t now = frond__mono_ns(), was = atomic_load(&last);
  return (was == 0 || now - was >= 10000000000LL) &&
         atomic_compare_exchange_strong(&last, &was, now);
}

/* One forwarded call to the owner, and what a failure says of it. */
static int forward_one(frond__server *srv, frond_seg *seg, const char *tag,
                       size_t len, size_t n, int64_t *out, frond_error *err) {
  char owner[FROND__OWNER_MAX];
  int rc;
  if (frond__seg_ordered_owner(seg, tag, len, owner, sizeof(owner)) != 0)
    return frond__fail(err, FROND_ETAG_OWNER,
                       "tag \"%.*s\" is ordered and its owner is not known "
                       "now",
                       (int)len, tag);
  /* Another process that records this node's own address: two nodes
  ** that each call themselves 127.0.0.1:8080 on two hosts, say. A call
  ** to it would come back here. */
  if (strcmp(owner, srv->owner_addr) == 0)
    return frond__fail(err, FROND_ETAG_OWNER,
                       "tag \"%.*s\" is ordered and its owner records the "
                       "address %s, which is this node's own: give each node "
                       "an address the others reach (advertise, or listen on "
                       "one)",
                       (int)len, tag, owner);
  rc = call(srv, owner, tag, len, n, out, err);
  if (rc == FROND_ESEGMENT_UNAVAILABLE || rc == FROND_ETAG_OWNER)
    frond__seg_ordered_forget(seg, tag, len); /* ask the store next time */
  if (rc == FROND_ESEGMENT_UNAVAILABLE && warn_now())
    frond_log(FROND_LOG_WARN, "ordered tags: %s", err->message);
  return rc;
}

/*
** Calls of one tag forwarded at once go as one batch (as TiDB's TSO
** batches its clients' requests): the first becomes the leader, takes
** every call queued behind it (at most max_count IDs), asks the owner
** for the sum, and hands each call its slice, in the order they came;
** the next call queued then leads. Each call's IDs are taken by the owner
** while that call waits, so the order guarantee holds for each, and a
** batch's slices are increasing as the batch is. A lane per ordered tag
** forwarded, kept until exit.
*/
typedef struct waiter {
  struct waiter *next;
  size_t n;
  int64_t *out;
  int done, rc;
  frond_error err;
} waiter;

typedef struct lane {
  struct lane *next;
  char tag[FROND_TAG_MAX + 1];
  size_t len;
  int busy;            /* a leader's call is under way */
  waiter *head, *tail; /* queued, not yet taken */
} lane;

static pthread_mutex_t lanes_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lanes_cv = PTHREAD_COND_INITIALIZER;
static lane *lanes;

static lane *lane_of(const char *tag, size_t len) {
  lane *l;
  for (l = lanes; l != NULL; l = l->next)
    if (l->len == len && memcmp(l->tag, tag, len) == 0)
      return l;
  if ((l = calloc(1, sizeof(*l))) == NULL)
    return NULL;
  memcpy(l->tag, tag, len);
  l->len = len;
  l->next = lanes;
  lanes = l;
  return l;
}

/* As the leader of l, with lanes_mu held: one batch. */
static void lead(frond__server *srv, frond_seg *seg, lane *l) {
  size_t total = 0, k = 0;
  waiter *batch = l->head, *w, *last = NULL;
  int64_t *ids;
  frond_error e = {0, ""};
  int rc;
  for (w = l->head;
       w != NULL && (total == 0 || total + w->n <= (size_t)srv->cfg.max_count);
       w = w->next) {
    total += w->n;
    last = w;
  }
  l->head = last->next;
  if (l->head == NULL)
    l->tail = NULL;
  last->next = NULL;
  l->busy = 1;
  pthread_mutex_unlock(&lanes_mu);
  if ((ids = malloc(total * sizeof(*ids))) == NULL)
    rc = frond__fail(&e, FROND_ENOMEM, NULL);
  else
    rc = forward_one(srv, seg, l->tag, l->len, total, ids, &e);
  pthread_mutex_lock(&lanes_mu);
  for (w = batch; w != NULL; w = w->next) {
    if (rc == 0)
      memcpy(w->out, ids + k, w->n * sizeof(*ids));
    k += w->n;
    w->rc = rc;
    w->err = e;
    w->done = 1;
  }
  free(ids);
  l->busy = 0;
  pthread_cond_broadcast(&lanes_cv);
}

int frond__forward_segment(frond__server *srv, const char *tag, size_t len,
                           size_t n, int64_t *out, frond_error *err) {
  frond_seg *seg = atomic_load(&srv->seg);
  waiter me = {NULL, n, out, 0, 0, {0, ""}};
  lane *l;
  pthread_once(&curl_once, curl_init);
  if (seg == NULL || !curl_ok || len > FROND_TAG_MAX)
    return FROND_ETAG_OWNER; /* err says who, as the allocator put it */
  pthread_mutex_lock(&lanes_mu);
  if ((l = lane_of(tag, len)) == NULL) {
    pthread_mutex_unlock(&lanes_mu);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  if (l->tail != NULL)
    l->tail->next = &me;
  else
    l->head = &me;
  l->tail = &me;
  while (!me.done) {
    if (!l->busy && l->head != NULL)
      lead(srv, seg, l); /* takes me along if I am within its batch */
    else
      pthread_cond_wait(&lanes_cv, &lanes_mu);
  }
  pthread_mutex_unlock(&lanes_mu);
  if (me.rc != 0)
    frond__fail(err, me.rc, "%s", me.err.message);
  return me.rc;
}

void frond__forward_free(void) {
  lane *l;
  pthread_mutex_lock(&pool_mu);
  while (npool > 0)
    curl_easy_cleanup(pool[--npool]);
  pthread_mutex_unlock(&pool_mu);
  pthread_mutex_lock(&lanes_mu);
  while ((l = lanes) != NULL) {
    lanes = l->next;
    free(l);
  }
  pthread_mutex_unlock(&lanes_mu);
}
#else
void frond__forward_free(void) {}

int frond__forward_segment(frond__server *srv, const char *tag, size_t len,
                           size_t n, int64_t *out, frond_error *err) {
  (void)srv, (void)tag, (void)len, (void)n, (void)out, (void)err;
  return FROND_ETAG_OWNER; /* built without libcurl: err says who */
}
#endif
