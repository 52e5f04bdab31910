/* SPDX-License-Identifier: Apache-2.0 */
/*
** acl.c -- credentials on the server: who a request comes from and what
** it may do.
**
** With neither admin_token nor clients_file, nothing is checked and
** requests are anonymous (r->client NULL). With either, every request
** that issues, reads or changes needs a client: admin_token is the client
** `admin` with every right on everything (HTTP `Bearer <token>`, RESP
** `AUTH <token>` or `AUTH default|admin <token>`); clients_file's clients
** present `Bearer <name>:<secret>` or `AUTH <name> <secret>`, or a client
** certificate whose name a cert= line gives. open_reads keeps /livez,
** /healthz, /readyz and /metrics open to probes.
**
** The set of clients is read-only once parsed, and counted: SIGHUP
** publishes a new one (a file that does not parse leaves the old one in
** place, and says why). Each worker keeps a reference to the set it uses
** and takes the new one at its next request (a relaxed load of the
** generation per request, no lock); a connection keeps a reference to
** the set its client comes from, and a request that waits off the loop
** one more, so that a client's name stays valid as long as anything
** reads it (quotas, the audit log). A RESP connection's client is looked
** up again by name in a new set: a client removed from the file is
** logged out.
*/
#include "server/acl.h"

#include "base/base.h"
#include "base/file.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_WORKERS 257 /* threads' bound, and one for the main thread */

typedef struct slot {
  frond__acl *set;
  uint64_t gen;
} slot;

static struct {
  int on;        /* a credential is configured */
  int has_admin; /* admin_token is set */
  const char *token;
  frond__acl_client admin;
  pthread_mutex_t lock; /* published and gen, for a reference */
  frond__acl *published;
  _Atomic uint64_t gen;
  slot workers[MAX_WORKERS];
  _Atomic uint64_t fails[2][FROND__ACL_FAILS]; /* [0] no name, [1] unknown */
  _Atomic uint64_t reloads[2];                 /* [0] ok, [1] refused */
  _Atomic int64_t logged_ms; /* the last refusal logged, a second apart */
  uv_signal_t hup;
  int hup_on;
} acl = {.lock = PTHREAD_MUTEX_INITIALIZER};

int frond__acl_on(const frond__server *srv) {
  (void)srv;
  return acl.on;
}

/* ------------------------------------------------------------- the file */

int frond__acl_load(const char *path, frond__acl **out, frond_error *err) {
  struct stat st;
  char *text;
  size_t n;
  int fd, rc;
  *out = NULL;
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
    return frond__fail(err, FROND_ECONFIG, "clients_file %s: %s", path,
                       strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return frond__fail(err, FROND_ECONFIG,
                       "clients_file %s is not a regular file", path);
  }
  if ((st.st_mode & 0002) != 0) {
    close(fd);
    return frond__fail(err, FROND_ECONFIG,
                       "clients_file %s can be written by any user (mode "
                       "%04o): anyone could add a client; chmod o-w it",
                       path, (unsigned)(st.st_mode & 07777));
  }
  if (st.st_size > (off_t)FROND__ACL_FILE_MAX) {
    close(fd);
    return frond__fail(err, FROND_ECONFIG,
                       "clients_file %s: longer than %u "
                       "bytes",
                       path, FROND__ACL_FILE_MAX);
  }
  if ((text = malloc((size_t)st.st_size + 1)) == NULL) {
    close(fd);
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  }
  n = frond__read_full(fd, text, (size_t)st.st_size);
  close(fd);
  rc = frond__acl_parse(text, n, path, out, err);
  free(text);
  return rc;
}

static void publish(frond__acl *set) {
  frond__acl *old;
  pthread_mutex_lock(&acl.lock);
  old = acl.published;
  acl.published = set;
  atomic_fetch_add(&acl.gen, 1);
  pthread_mutex_unlock(&acl.lock);
  frond__acl_unref(old);
}

int frond__acl_open(frond__server *srv, frond_error *err) {
  const frond__config *cfg = &srv->cfg;
  frond__acl *set = NULL;
  int rc;
  acl.token = cfg->admin_token;
  acl.has_admin = cfg->admin_token[0] != '\0';
  memset(&acl.admin, 0, sizeof acl.admin);
  memcpy(acl.admin.c.name, "admin", 6);
  acl.admin.rights = FROND__ACL_ALL;
  acl.admin.cert = "";
  acl.admin.tags = acl.admin.formats = "*";
  acl.admin.ntags = acl.admin.nformats = 1;
  if (cfg->clients_file[0] != '\0' &&
      (rc = frond__acl_load(cfg->clients_file, &set, err)) != 0)
    return rc;
  acl.on = acl.has_admin || cfg->clients_file[0] != '\0';
  if (set != NULL)
    frond_log(FROND_LOG_INFO, "clients_file %s: %zu clients", cfg->clients_file,
              set->n);
  publish(set);
  return 0;
}

int frond__acl_reload(frond__server *srv, frond_error *err) {
  const char *path = srv->cfg.clients_file;
  frond__acl *set;
  int rc;
  size_t i;
  if (path[0] == '\0')
    return 0;
  if ((rc = frond__acl_load(path, &set, err)) != 0) {
    atomic_fetch_add(&acl.reloads[1], 1);
    frond_log(FROND_LOG_ERROR,
              "SIGHUP: %s: %s; the clients loaded before "
              "stay in use",
              frond_err_name(rc), err->message);
    return rc;
  }
  /* Failures counted so far carry over to the clients that stay. */
  pthread_mutex_lock(&acl.lock);
  if (acl.published != NULL)
    for (i = 0; i < set->n; i++) {
      const frond__acl_client *was =
          frond__acl_find(acl.published, set->clients[i].c.name,
                          strlen(set->clients[i].c.name));
      int f;
      for (f = 0; was != NULL && f < FROND__ACL_FAILS; f++)
        atomic_store(&set->clients[i].fails[f], atomic_load(&was->fails[f]));
    }
  pthread_mutex_unlock(&acl.lock);
  atomic_fetch_add(&acl.reloads[0], 1);
  frond_log(FROND_LOG_INFO, "SIGHUP: clients_file %s read again: %zu clients",
            path, set->n);
  publish(set);
  return 0;
}

static void on_hup(uv_signal_t *s, int signum) {
  frond_error err = {0, ""};
  (void)signum;
  (void)frond__acl_reload(s->data, &err);
}

void frond__acl_start(frond__server *srv, uv_loop_t *loop) {
  if (srv->cfg.clients_file[0] == '\0' || acl.hup_on)
    return;
  uv_signal_init(loop, &acl.hup);
  acl.hup.data = srv;
  uv_signal_start(&acl.hup, on_hup, SIGHUP);
  acl.hup_on = 1;
}

void frond__acl_stop(void) {
  if (acl.hup_on) {
    uv_close((uv_handle_t *)&acl.hup, NULL);
    signal(SIGHUP, SIG_IGN); /* the last steps run to the end */
  }
  acl.hup_on = 0;
}

void frond__acl_close(frond__server *srv) {
  int i;
  (void)srv;
  acl.on = acl.has_admin = 0;
  for (i = 0; i < MAX_WORKERS; i++) {
    frond__acl_unref(acl.workers[i].set);
    acl.workers[i].set = NULL;
    acl.workers[i].gen = 0;
  }
  publish(NULL);
}

/* The set worker w uses, the newest once it has seen it. */
static frond__acl *current(const frond__worker *w) {
  slot *s = &acl.workers[w != NULL && w->id >= 0 && w->id < MAX_WORKERS - 1
                             ? w->id + 1
                             : 0];
  uint64_t g = atomic_load_explicit(&acl.gen, memory_order_acquire);
  if (s->gen != g) {
    frond__acl *old = s->set;
    pthread_mutex_lock(&acl.lock);
    s->set = acl.published;
    if (s->set != NULL)
      atomic_fetch_add(&s->set->refs, 1);
    s->gen = atomic_load(&acl.gen);
    pthread_mutex_unlock(&acl.lock);
    frond__acl_unref(old);
  }
  return s->set;
}

/* ------------------------------------------------------- a connection */

void frond__acl_hold(const frond__client *k) {
  const frond__acl_client *a = (const frond__acl_client *)k;
  if (a != NULL && a->set != NULL)
    atomic_fetch_add(&a->set->refs, 1);
}

void frond__acl_release(const frond__client *k) {
  const frond__acl_client *a = (const frond__acl_client *)k;
  if (a != NULL)
    frond__acl_unref(a->set);
}

/* c's client becomes k (NULL: none), c's reference moving with it. */
static void set_client(frond__conn *c, const frond__acl_client *k) {
  const frond__acl_client *was = (const frond__acl_client *)c->client;
  if (was == k)
    return;
  if (k == NULL || was == NULL || k->set != was->set) {
    frond__acl_hold((const frond__client *)k); /* c is k's first member */
    frond__acl_release((const frond__client *)was);
  }
  c->client = (const frond__client *)k;
}

void frond__acl_conn_drop(frond__conn *c) {
  set_client(c, NULL);
}

/* The client's address, for a log line (conn.c's own is above this
** file, which conn.c calls). */
static const char *peer(frond__conn *c, char *buf, size_t cap) {
  struct sockaddr_storage ss;
  int len = (int)sizeof ss;
  char host[INET6_ADDRSTRLEN] = "?";
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0 &&
      uv_ip_name((const struct sockaddr *)&ss, host, sizeof host) != 0)
    snprintf(host, sizeof host, "?");
  snprintf(buf, cap, "%s", host);
  return buf;
}

/* Count a failure (k NULL: under no name, or unknown) and log it, a
** second apart at most; the secret is never in what is logged. */
static int refuse(frond__conn *c, const frond__acl_client *k, int unknown,
                  int why, int code, frond_error *err, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static int refuse(frond__conn *c, const frond__acl_client *k, int unknown,
                  int why, int code, frond_error *err, const char *fmt, ...) {
  char msg[sizeof err->message], from[INET6_ADDRSTRLEN + 8];
  int64_t now = (int64_t)uv_now(&c->w->loop),
          last = atomic_load(&acl.logged_ms);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (k != NULL) /* the counters are the one thing of a set that changes */
    atomic_fetch_add((_Atomic uint64_t *)(uintptr_t)&k->fails[why], 1);
  else
    atomic_fetch_add(&acl.fails[unknown][why], 1);
  if (now - last >= 1000 &&
      atomic_compare_exchange_strong(&acl.logged_ms, &last, now))
    frond_log(FROND_LOG_WARN, "refused %s: %s", peer(c, from, sizeof from),
              msg);
  return frond__fail(err, code, "%s", msg);
}

/* The admin token, compared in constant time in its length. */
static int is_token(const char *p, size_t len) {
  size_t tl = strlen(acl.token), i;
  unsigned char diff = len != tl;
  for (i = 0; i < tl; i++)
    diff |= (unsigned char)((i < len ? p[i] : 0) ^ acl.token[i]);
  return acl.has_admin && diff == 0;
}

/* name and secret against the set: 0 with c's client set, or
** UNAUTHORIZED. */
static int check(frond__conn *c, frond__acl *set, const char *name, size_t nlen,
                 const char *secret, size_t slen, frond_error *err) {
  const frond__acl_client *k =
      set != NULL ? frond__acl_find(set, name, nlen) : NULL;
  /* An unknown name is hashed and compared too: it takes the same time. */
  if (frond__acl_verify(k, secret, slen)) {
    set_client(c, k);
    return 0;
  }
  if (k == NULL)
    return refuse(c, NULL, 1, FROND__ACL_FAIL_UNKNOWN, FROND_EUNAUTHORIZED, err,
                  "no client %.*s with that secret",
                  (int)(nlen < 64 ? nlen : 64), name);
  return refuse(c, k, 0, FROND__ACL_FAIL_WRONG, FROND_EUNAUTHORIZED, err,
                "wrong secret for client %s", k->c.name);
}

int frond__acl_http(frond__conn *c, const char *auth, size_t len,
                    frond_error *err) {
  frond__acl *set;
  const char *colon;
  if (!acl.on) {
    set_client(c, NULL);
    return 0;
  }
  set = current(c->w);
  if (auth == NULL) {
    const frond__acl_client *k =
        set != NULL ? frond__acl_find_cert(set, c->cert_name) : NULL;
    if (k != NULL) {
      set_client(c, k);
      return 0;
    }
    set_client(c, NULL);
    return refuse(c, NULL, 0, FROND__ACL_FAIL_MISSING, FROND_EUNAUTHORIZED, err,
                  c->cert_name[0] != '\0'
                      ? "the client certificate %.64s names no client, and "
                        "no Authorization: Bearer was sent"
                      : "%sthis endpoint needs Authorization: Bearer "
                        "<name>:<secret> (or <admin_token>)",
                  c->cert_name);
  }
  if (is_token(auth, len)) {
    set_client(c, &acl.admin);
    return 0;
  }
  set_client(c, NULL);
  colon = memchr(auth, ':', len);
  if (colon == NULL)
    return refuse(c, NULL, 1, FROND__ACL_FAIL_UNKNOWN, FROND_EUNAUTHORIZED, err,
                  "the Bearer credential is neither <name>:<secret> "
                  "nor admin_token");
  return check(c, set, auth, (size_t)(colon - auth), colon + 1,
               len - (size_t)(colon + 1 - auth), err);
}

int frond__acl_auth(frond__conn *c, const char *user, size_t ulen,
                    const char *pass, size_t plen, frond_error *err) {
  int admin = user == NULL || (ulen == 7 && memcmp(user, "default", 7) == 0) ||
              (ulen == 5 && memcmp(user, "admin", 5) == 0);
  /* A refused AUTH leaves the connection's client as it was (Redis). */
  if (admin) {
    if (is_token(pass, plen)) {
      set_client(c, &acl.admin);
      return 0;
    }
    return refuse(c, NULL, 1, FROND__ACL_FAIL_UNKNOWN, FROND_EUNAUTHORIZED, err,
                  "wrong admin_token (user %s)",
                  user == NULL ? "default"
                  : ulen == 5  ? "admin"
                               : "default");
  }
  return check(c, current(c->w), user, ulen, pass, plen, err);
}

const frond__client *frond__acl_conn(frond__conn *c) {
  const frond__acl_client *k = (const frond__acl_client *)c->client;
  frond__acl *set;
  if (!acl.on)
    return NULL;
  set = current(c->w);
  if (k != NULL && k->set != NULL && k->set != set) {
    const frond__acl_client *now =
        set != NULL ? frond__acl_find(set, k->c.name, strlen(k->c.name)) : NULL;
    /* A secret or a certificate name changed (rotated, revoked): what the
    ** connection proved no longer holds. A certificate still named is
    ** taken again below. */
    if (now != NULL && (now->has_secret != k->has_secret ||
                        memcmp(now->hash, k->hash, sizeof k->hash) != 0 ||
                        strcmp(now->cert, k->cert) != 0))
      now = NULL;
    if (now == NULL)
      frond_log(FROND_LOG_INFO,
                "client %s is no longer in clients_file with the credential "
                "its connection gave: it must authenticate again",
                k->c.name);
    set_client(c, now);
    k = now;
  }
  if (k == NULL && c->cert_name[0] != '\0' && set != NULL &&
      (k = frond__acl_find_cert(set, c->cert_name)) != NULL)
    set_client(c, k);
  return c->client;
}

/* ------------------------------------------------------------ rights */

int frond__acl_right(frond__conn *c, unsigned right, frond_error *err) {
  const frond__acl_client *k = (const frond__acl_client *)c->client;
  char r[32];
  if (!acl.on || (k != NULL && (k->rights & right) == right))
    return 0;
  if (k == NULL)
    return refuse(c, NULL, 0, FROND__ACL_FAIL_MISSING, FROND_EUNAUTHORIZED, err,
                  "no credential");
  return refuse(c, k, 0, FROND__ACL_FAIL_FORBIDDEN, FROND_EFORBIDDEN, err,
                "client %s has no right %s (rights=%s)", k->c.name,
                frond__acl_rights_str(right, r, sizeof r),
                frond__acl_rights_str(k->rights, r + 8, sizeof r - 8));
}

/* k's patterns of kind (0: tags, 1: formats) as the file spells them,
** into buf[cap]: "orders:*,invoices:*", or "none". */
static const char *patterns(const frond__acl_client *k, int kind, char *buf,
                            size_t cap) {
  const char *p = kind == 0 ? k->tags : k->formats;
  size_t i, n = kind == 0 ? k->ntags : k->nformats, at = 0;
  snprintf(buf, cap, "none");
  for (i = 0; i < n && at < cap; i++, p += strlen(p) + 1)
    at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? "," : "", p);
  return buf;
}

int frond__acl_req(frond__conn *c, frond__req *r) {
  const frond__acl_client *k = (const frond__acl_client *)c->client;
  const char *name;
  char pats[96];
  size_t len;
  int kind = 0;
  r->client = c->client;
  if (!acl.on)
    return 0;
  if (k == NULL) {
    r->rc = refuse(c, NULL, 0, FROND__ACL_FAIL_MISSING, FROND_EUNAUTHORIZED,
                   &r->err, "issuing IDs needs a client's credential");
    return -1;
  }
  switch (r->op) {
  case FROND__REQ_SNOWFLAKE:
  case FROND__REQ_FORMAT:
    kind = 1;
    name = r->op == FROND__REQ_SNOWFLAKE ? "snowflake" : r->nf->name;
    len = strlen(name);
    if (!frond__acl_allows(k, FROND__ACL_ISSUE, 1, name, len))
      break;
    /* A format drawn from a segment tag (tag=, seq) hands out that tag's
    ** IDs: the tag's right too, as the quotas and the audit log count
    ** them against the tag. */
    if (r->op == FROND__REQ_SNOWFLAKE ||
        (name = frond_format_tag(r->nf->f)) == NULL)
      return 0;
    kind = 0;
    len = strlen(name);
    if (frond__acl_allows(k, FROND__ACL_ISSUE, 0, name, len))
      return 0;
    break;
  case FROND__REQ_STORE:
    name = r->tag != NULL ? r->tag : "";
    len = r->len;
    if (!r->change || len == 0) { /* reads: every tag alike */
      if (frond__acl_right(c, r->change ? FROND__ACL_ADMIN : FROND__ACL_READ,
                           &r->err) == 0)
        return 0;
      r->rc = r->err.code;
      return -1;
    }
    if (frond__acl_allows(k, FROND__ACL_ADMIN, 0, name, len))
      return 0;
    break;
  default:
    name = r->tag;
    len = r->len;
    if (frond__acl_allows(k, FROND__ACL_ISSUE, 0, name, len))
      return 0;
  }
  {
    char rr[24];
    unsigned right =
        r->op == FROND__REQ_STORE ? FROND__ACL_ADMIN : FROND__ACL_ISSUE;
    if ((k->rights & right) == 0)
      r->rc = refuse(c, k, 0, FROND__ACL_FAIL_FORBIDDEN, FROND_EFORBIDDEN,
                     &r->err, "client %s has no right %s (rights=%s)",
                     k->c.name, right == FROND__ACL_ADMIN ? "admin" : "issue",
                     frond__acl_rights_str(k->rights, rr, sizeof rr));
    else
      r->rc = refuse(c, k, 0, FROND__ACL_FAIL_FORBIDDEN, FROND_EFORBIDDEN,
                     &r->err, "client %s may not %s %s %.*s (%s=%s)", k->c.name,
                     r->op == FROND__REQ_STORE ? "change" : "issue from",
                     kind ? "format" : "tag", (int)(len < 128 ? len : 128),
                     name, kind ? "formats" : "tags",
                     patterns(k, kind, pats, sizeof pats));
  }
  return -1;
}

/* ------------------------------------------------------------ metrics */

void frond__acl_metrics(frond__server *srv, frond__buf *b) {
  static const char *const reasons[FROND__ACL_FAILS] = {
      "missing", "unknown_client", "wrong_secret", "forbidden"};
  frond__acl *set;
  size_t i;
  int f;
  (void)srv;
  if (!acl.on)
    return;
  frond__buf_printf(b, "# HELP frond_auth_failures_total Requests refused "
                       "for their credentials, by client (\"\": none or "
                       "unknown) and reason.\n"
                       "# TYPE frond_auth_failures_total counter\n");
  for (f = 0; f < FROND__ACL_FAILS; f++) {
    uint64_t v = atomic_load(&acl.fails[0][f]) + atomic_load(&acl.fails[1][f]);
    if (v != 0)
      frond__buf_printf(b,
                        "frond_auth_failures_total{client=\"\",reason=\"%s\""
                        "} %llu\n",
                        reasons[f], (unsigned long long)v);
  }
  pthread_mutex_lock(&acl.lock);
  set = acl.published;
  if (set != NULL)
    atomic_fetch_add(&set->refs, 1);
  pthread_mutex_unlock(&acl.lock);
  for (i = 0; set != NULL && i < set->n; i++)
    for (f = 0; f < FROND__ACL_FAILS; f++) {
      uint64_t v = atomic_load(&set->clients[i].fails[f]);
      if (v != 0)
        frond__buf_printf(b,
                          "frond_auth_failures_total{client=\"%s\","
                          "reason=\"%s\"} %llu\n",
                          set->clients[i].c.name, reasons[f],
                          (unsigned long long)v);
    }
  for (f = 0; f < FROND__ACL_FAILS; f++) {
    uint64_t v = atomic_load(&acl.admin.fails[f]);
    if (v != 0)
      frond__buf_printf(b,
                        "frond_auth_failures_total{client=\"admin\","
                        "reason=\"%s\"} %llu\n",
                        reasons[f], (unsigned long long)v);
  }
  frond__acl_unref(set);
  frond__buf_printf(b,
                    "# HELP frond_clients_reloads_total Reloads of "
                    "clients_file on SIGHUP, by result.\n"
                    "# TYPE frond_clients_reloads_total counter\n"
                    "frond_clients_reloads_total{result=\"ok\"} %llu\n"
                    "frond_clients_reloads_total{result=\"refused\"} "
                    "%llu\n",
                    (unsigned long long)atomic_load(&acl.reloads[0]),
                    (unsigned long long)atomic_load(&acl.reloads[1]));
}
