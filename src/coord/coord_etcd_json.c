/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_etcd_json.c -- what the etcd coordinator reads, as pure functions:
** the v3 JSON gateway's replies and the coordinator's URI. No libcurl, so
** they are built (and fuzzed) in every build, FROND_WITH_ETCD or not.
**
** The gateway maps etcd's protobuf replies to JSON (proto3's mapping):
** int64 fields are strings ("revision":"12"), bytes are base64, and
** fields at their default value are left out. The parser is strict JSON
** (RFC 8259) into a flat array of tokens, bounded in depth and size; the
** reply is then read from the few paths the driver needs. Anything else
** is refused: the driver treats an unreadable reply as etcd unreachable.
*/
#include "coord/coord_etcd.h"
#include "base/base.h"
#include "store/db.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { T_OBJ, T_ARR, T_STR, T_NUM, T_LIT };

typedef struct tok {
  int type;
  size_t start, end; /* a string's: inside the quotes */
  size_t next;       /* index of the token after this one's subtree */
} tok;

typedef struct parser {
  const char *s;
  size_t len, pos;
  tok *t;
  size_t n, cap;
} parser;

#define MAX_DEPTH 24

static void skip_ws(parser *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                             p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

static int is_digit(char ch) {
  return ch >= '0' && ch <= '9';
}

static int is_hex(char ch) {
  return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static int value(parser *p, int depth);

static int string(parser *p, tok *t) {
  p->pos++; /* the quote */
  t->type = T_STR;
  t->start = p->pos;
  while (p->pos < p->len) {
    unsigned char ch = (unsigned char)p->s[p->pos];
    if (ch == '"') {
      t->end = p->pos++;
      return 0;
    }
    if (ch < 0x20)
      return -1;
    if (ch == '\\') {
      if (++p->pos >= p->len)
        return -1;
      ch = (unsigned char)p->s[p->pos];
      if (ch == 'u') {
        for (int k = 1; k <= 4; k++)
          if (p->pos + (size_t)k >= p->len || !is_hex(p->s[p->pos + k]))
            return -1;
        p->pos += 4;
      } else if (!strchr("\"\\/bfnrt", ch) || ch == 0) {
        return -1;
      }
    }
    p->pos++;
  }
  return -1;
}

static int number(parser *p, tok *t) {
  size_t i = p->pos;
  t->type = T_NUM;
  t->start = i;
  if (i < p->len && p->s[i] == '-')
    i++;
  if (i >= p->len || !is_digit(p->s[i]))
    return -1;
  if (p->s[i] == '0')
    i++;
  else
    while (i < p->len && is_digit(p->s[i]))
      i++;
  if (i < p->len && p->s[i] == '.') {
    if (++i >= p->len || !is_digit(p->s[i]))
      return -1;
    while (i < p->len && is_digit(p->s[i]))
      i++;
  }
  if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
    i++;
    if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
      i++;
    if (i >= p->len || !is_digit(p->s[i]))
      return -1;
    while (i < p->len && is_digit(p->s[i]))
      i++;
  }
  t->end = p->pos = i;
  return 0;
}

static int literal(parser *p, tok *t) {
  static const char *const words[] = {"true", "false", "null"};
  for (size_t k = 0; k < 3; k++) {
    size_t wl = strlen(words[k]);
    if (p->len - p->pos >= wl && memcmp(p->s + p->pos, words[k], wl) == 0) {
      t->type = T_LIT;
      t->start = p->pos;
      t->end = p->pos += wl;
      return 0;
    }
  }
  return -1;
}

/* Members or elements after '{' or '['. */
static int members(parser *p, int depth, int obj) {
  char close = obj ? '}' : ']';
  p->pos++;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    return 0;
  }
  for (;;) {
    skip_ws(p);
    if (obj) {
      if (p->pos >= p->len || p->s[p->pos] != '"' || value(p, depth) != 0)
        return -1;
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':')
        return -1;
      p->pos++;
      skip_ws(p);
    }
    if (value(p, depth) != 0)
      return -1;
    skip_ws(p);
    if (p->pos >= p->len)
      return -1;
    if (p->s[p->pos] == close) {
      p->pos++;
      return 0;
    }
    if (p->s[p->pos] != ',')
      return -1;
    p->pos++;
  }
}

static int value(parser *p, int depth) {
  size_t i;
  int rc;
  if (p->pos >= p->len || depth > MAX_DEPTH || p->n >= p->cap)
    return -1;
  i = p->n++;
  switch (p->s[p->pos]) {
  case '{':
  case '[':
    p->t[i].type = p->s[p->pos] == '{' ? T_OBJ : T_ARR;
    p->t[i].start = p->pos;
    rc = members(p, depth + 1, p->t[i].type == T_OBJ);
    p->t[i].end = p->pos;
    break;
  case '"':
    rc = string(p, &p->t[i]);
    break;
  case 't':
  case 'f':
  case 'n':
    rc = literal(p, &p->t[i]);
    break;
  default:
    rc = number(p, &p->t[i]);
  }
  p->t[i].next = p->n;
  return rc;
}

/* The value of member key of the object at token i, or 0 (token 0 is
** the root, never a member's value). */
static size_t get(const parser *p, size_t i, const char *key) {
  size_t kl = strlen(key);
  if (i >= p->n || p->t[i].type != T_OBJ)
    return 0;
  for (size_t k = i + 1; k < p->t[i].next; k = p->t[k + 1].next) {
    const tok *name = &p->t[k];
    if (name->end - name->start == kl &&
        memcmp(p->s + name->start, key, kl) == 0)
      return k + 1;
  }
  return 0;
}

/* An int64 given as a JSON string of digits (the gateway's) or a number;
** 0 when absent. -1 when malformed. */
static int get_i64(const parser *p, size_t obj, const char *key, int64_t *v) {
  size_t i = get(p, obj, key);
  const tok *t;
  *v = 0;
  if (i == 0)
    return 0;
  t = &p->t[i];
  if ((t->type != T_STR && t->type != T_NUM) || t->end == t->start)
    return -1;
  return frond__parse_i64(p->s + t->start, t->end - t->start, v) == 0 ? 0 : -1;
}

/* A JSON string's text, unescaped (\uXXXX outside ASCII as '?'), into
** out (len bytes). -1 when it does not fit. */
static int get_str(const parser *p, size_t i, char *out, size_t len) {
  const tok *t = &p->t[i];
  size_t o = 0;
  if (t->type != T_STR)
    return -1;
  for (size_t k = t->start; k < t->end; k++) {
    char ch = p->s[k];
    if (ch == '\\') {
      ch = p->s[++k];
      if (ch == 'u') {
        unsigned v = (unsigned)strtoul(
            (char[5]){p->s[k + 1], p->s[k + 2], p->s[k + 3], p->s[k + 4], 0},
            NULL, 16);
        ch = v >= 0x20 && v < 0x7f ? (char)v : '?';
        k += 4;
      } else {
        ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch == 'r' ? '\r' : ch;
        if (ch == 'b' || ch == 'f')
          ch = ' ';
      }
    }
    if (o + 1 >= len)
      return -1;
    out[o++] = ch;
  }
  out[o] = 0;
  return 0;
}

/* A base64 member into out (len bytes, NUL-terminated; "" when absent). */
static int get_b64(const parser *p, size_t obj, const char *key, char *out,
                   size_t len) {
  size_t i = get(p, obj, key), bin = 0;
  const tok *t;
  out[0] = 0;
  if (i == 0)
    return 0;
  t = &p->t[i];
  if (t->type != T_STR)
    return -1;
  if (sodium_base642bin((unsigned char *)out, len - 1, p->s + t->start,
                        t->end - t->start, NULL, &bin, NULL,
                        sodium_base64_VARIANT_ORIGINAL) != 0)
    return -1;
  if (memchr(out, 0, bin))
    return -1; /* our keys and values are text */
  out[bin] = 0;
  return 0;
}

static int read_kvs(const parser *p, size_t arr, int resp,
                    frond__etcd_reply *r) {
  size_t n = 0, k;
  frond__etcd_kv *kv;
  if (arr == 0)
    return 0;
  if (p->t[arr].type != T_ARR)
    return -1;
  for (k = arr + 1; k < p->t[arr].next; k = p->t[k].next)
    n++;
  if (n == 0)
    return 0;
  kv = realloc(r->kvs, (r->nkvs + n) * sizeof(*kv));
  if (!kv)
    return -1;
  r->kvs = kv;
  for (k = arr + 1; k < p->t[arr].next; k = p->t[k].next) {
    frond__etcd_kv *e = &r->kvs[r->nkvs];
    memset(e, 0, sizeof(*e));
    e->resp = resp;
    if (p->t[k].type != T_OBJ ||
        get_b64(p, k, "key", e->key, sizeof(e->key)) != 0 ||
        get_b64(p, k, "value", e->value, sizeof(e->value)) != 0 ||
        get_i64(p, k, "create_revision", &e->create_rev) != 0 ||
        get_i64(p, k, "mod_revision", &e->mod_rev) != 0 ||
        get_i64(p, k, "version", &e->version) != 0 ||
        get_i64(p, k, "lease", &e->lease) != 0)
      return -1;
    r->nkvs++;
  }
  return 0;
}

static int read_reply(const parser *p, frond__etcd_reply *r) {
  size_t root = 0, i, e;
  int64_t code = 0;
  if (p->t[0].type != T_OBJ)
    return -1;
  /* An error: {"error":"...","code":N} or, from a stream,
  ** {"error":{"grpc_code":N,"message":"..."}}. */
  if ((e = get(p, root, "error")) != 0) {
    r->is_error = 1;
    if (p->t[e].type == T_OBJ) {
      i = get(p, e, "message");
      if (get_i64(p, e, "grpc_code", &code) != 0)
        return -1;
    } else {
      i = e;
      if (get_i64(p, root, "code", &code) != 0)
        return -1;
    }
    if (i == 0 || get_str(p, i, r->error, sizeof(r->error)) != 0 ||
        r->error[0] == '\0')
      snprintf(r->error, sizeof(r->error), "(no message)");
    r->code = (int)(code >= 0 && code < 100 ? code : 2);
    return 0;
  }
  if ((i = get(p, root, "result")) != 0)
    root = i; /* a stream's message: keepalive */
  if (get_i64(p, get(p, root, "header"), "revision", &r->revision) != 0 ||
      get_i64(p, root, "count", &r->count) != 0 ||
      get_i64(p, root, "ID", &r->id) != 0 ||
      get_i64(p, root, "TTL", &r->ttl) != 0)
    return -1;
  if ((i = get(p, root, "succeeded")) != 0) {
    if (p->t[i].type != T_LIT || p->s[p->t[i].start] == 'n')
      return -1;
    r->succeeded = p->s[p->t[i].start] == 't';
  }
  if ((i = get(p, root, "token")) != 0 &&
      get_str(p, i, r->token, sizeof(r->token)) != 0)
    return -1;
  if (read_kvs(p, get(p, root, "kvs"), -1, r) != 0)
    return -1;
  if ((i = get(p, root, "responses")) != 0) {
    if (p->t[i].type != T_ARR)
      return -1;
    for (size_t k = i + 1; k < p->t[i].next; k = p->t[k].next) {
      size_t rr = get(p, k, "response_range");
      if (p->t[k].type != T_OBJ)
        return -1;
      if (rr && read_kvs(p, get(p, rr, "kvs"), r->nresp, r) != 0)
        return -1;
      r->nresp++;
    }
  }
  return 0;
}

int frond__etcd_reply_parse(const char *body, size_t len,
                            frond__etcd_reply *r) {
  parser p;
  int rc;
  memset(r, 0, sizeof(*r));
  if (len == 0 || len > FROND__ETCD_BODY_MAX)
    return -1;
  memset(&p, 0, sizeof(p));
  p.s = body;
  p.len = len;
  p.cap = len; /* every token takes at least one byte */
  if (!(p.t = calloc(p.cap, sizeof(*p.t))))
    return -1;
  skip_ws(&p);
  rc = value(&p, 0);
  skip_ws(&p);
  if (rc == 0 && p.pos != p.len)
    rc = -1;
  if (rc == 0)
    rc = read_reply(&p, r);
  free(p.t);
  if (rc != 0)
    frond__etcd_reply_free(r);
  return rc;
}

void frond__etcd_reply_free(frond__etcd_reply *r) {
  free(r->kvs);
  r->kvs = NULL;
  r->nkvs = 0;
}

int frond__etcd_b64(const char *in, size_t n, char *out, size_t len) {
  if (sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL) > len)
    return -1;
  sodium_bin2base64(out, len, (const unsigned char *)in, n,
                    sodium_base64_VARIANT_ORIGINAL);
  return 0;
}

/* ---- the URI ------------------------------------------------------------ */

static int is_ours(const char *k, size_t kl) {
  static const char *const keys[] = {"user", "password", "cacert",
                                     "cert", "key",      "tls"};
  for (size_t i = 0; i < FROND__ARRAY_SIZE(keys); i++)
    if (strlen(keys[i]) == kl && memcmp(keys[i], k, kl) == 0)
      return 1;
  return 0;
}

static int option(frond__etcd_uri *u, const char *part, frond_error *err) {
  const char *eq = strchr(part, '='), *v = eq + 1;
  size_t kl = (size_t)(eq - part);
  char *dst = NULL;
  size_t dl = 0;
  if (kl == 3 && memcmp(part, "tls", 3) == 0) {
    if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
      return frond__fail(err, FROND_EINVAL, "etcd option tls=%s: want 0 or 1",
                         v);
    u->tls = u->tls || v[0] == '1';
    return 0;
  }
  if (kl == 4 && memcmp(part, "user", 4) == 0)
    dst = u->user, dl = sizeof(u->user);
  else if (kl == 8 && memcmp(part, "password", 8) == 0)
    dst = u->password, dl = sizeof(u->password);
  else if (kl == 6 && memcmp(part, "cacert", 6) == 0)
    dst = u->cacert, dl = sizeof(u->cacert);
  else if (kl == 4 && memcmp(part, "cert", 4) == 0)
    dst = u->cert, dl = sizeof(u->cert);
  else
    dst = u->key, dl = sizeof(u->key);
  if (!*v || strlen(v) >= dl)
    return frond__fail(err, FROND_EINVAL,
                       "etcd option %.*s: empty or longer than %zu bytes",
                       (int)kl, part, dl - 1);
  for (const char *s = v; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == '%')
      return frond__fail(err, FROND_EINVAL,
                         "etcd option %.*s: control characters and "
                         "%%-escapes are not accepted",
                         (int)kl, part);
  snprintf(dst, dl, "%s", v);
  if (dst != u->user && dst != u->password)
    u->tls = 1;
  return 0;
}

/* The driver's own key names under a prefix (coord_etcd.c's list). */
static const char *const own_keys[] = {"layout", "node", "claim", "facts"};

/* A component of prefix p (plen bytes) that is one of own_keys: its index
** into own_keys, -1 when none. A fleet on "/a/claim" would put its keys
** among the claims of a fleet on "/a", which read them as their own. */
static int own_key_in(const char *p, size_t plen, size_t *at, size_t *len) {
  for (size_t i = 1; i < plen;) {
    size_t n = 0;
    while (i + n < plen && p[i + n] != '/')
      n++;
    for (size_t k = 0; k < FROND__ARRAY_SIZE(own_keys); k++)
      if (strlen(own_keys[k]) == n && memcmp(own_keys[k], p + i, n) == 0) {
        *at = i;
        *len = n;
        return (int)k;
      }
    i += n + 1;
  }
  return -1;
}

static int endpoint(frond__etcd_uri *u, const char *h, size_t n,
                    frond_error *err) {
  const char *colon = NULL, *at = memchr(h, '@', n);
  int64_t port;
  /* etcd://user:password@host: the part before '@' never shown. */
  if (at)
    return frond__fail(err, FROND_EINVAL,
                       "etcd endpoint '***@%.*s': credentials go in the "
                       "query (?user=...&password=...), not before the host",
                       (int)(n - (size_t)(at + 1 - h)), at + 1);
  for (size_t i = 0; i < n; i++)
    if (h[i] == ':')
      colon = h + i;
  if (n == 0 || !colon || colon == h ||
      frond__parse_i64(colon + 1, n - (size_t)(colon - h) - 1, &port) != 0 ||
      port < 1 || port > 65535 || n >= 120)
    return frond__fail(err, FROND_EINVAL,
                       "etcd endpoint '%.*s': want host:port (port 1..65535)",
                       (int)n, h);
  for (size_t i = 0; i < n; i++) {
    char ch = h[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          is_digit(ch) || ch == '.' || ch == '-' || ch == '_' || ch == ':' ||
          ch == '[' || ch == ']'))
      return frond__fail(err, FROND_EINVAL,
                         "etcd endpoint '%.*s': a host of letters, digits, "
                         "'.', '-', '_' (IPv6 in brackets)",
                         (int)n, h);
  }
  if (u->n >= FROND__ETCD_ENDPOINTS_MAX)
    return frond__fail(err, FROND_EINVAL, "etcd: more than %d endpoints",
                       FROND__ETCD_ENDPOINTS_MAX);
  snprintf(u->endpoints[u->n++], sizeof(u->endpoints[0]), "%.*s", (int)n, h);
  return 0;
}

/* A part of the query that is no option of ours and whose name looks
** like a secret's ("Password=", "passwd=", "token="): refused here, since
** the generic parser's message would show its value. */
static int secret_like(const char *part) {
  static const char *const words[] = {"pass", "token", "secret"};
  size_t kl = strcspn(part, "=");
  for (size_t i = 0; i < kl; i++)
    for (size_t w = 0; w < FROND__ARRAY_SIZE(words); w++)
      if (kl - i >= strlen(words[w]) &&
          strncasecmp(part + i, words[w], strlen(words[w])) == 0)
        return 1;
  return 0;
}

int frond__etcd_parse_uri(frond_coord *c, const char *uri, frond__etcd_uri *u,
                          frond_error *err) {
  const char *h = uri + strlen("etcd://"), *slash, *qm, *q;
  char shown[FROND_COORD_URI_MAX];
  size_t plen, at, len;
  int rc, k;

  memset(u, 0, sizeof(*u));
  /* The URI for messages: its secrets (password=, user:password@) as
  ** "***", as the coordinator keeps it (coord.c). */
  frond__uri_redact(uri, strlen(uri), shown, sizeof(shown));
  if (strncmp(uri, "etcd://", 7) != 0 || !(slash = strchr(h, '/')) ||
      slash == h)
    return frond__fail(err, FROND_EINVAL,
                       "etcd coordinator wants "
                       "etcd://host:port[,host:port...]/prefix, not '%s'",
                       shown);
  for (const char *s = h; s < slash;) {
    size_t n = strcspn(s, ",/");
    if ((rc = endpoint(u, s, n, err)) != 0)
      return rc;
    s += n + (s[n] == ',');
  }
  qm = strchr(slash, '?');
  plen = qm ? (size_t)(qm - slash) : strlen(slash);
  if (plen < 2 || plen > FROND__ETCD_PREFIX_MAX || slash[plen - 1] == '/')
    goto bad_prefix;
  for (size_t i = 1; i < plen; i++) {
    char ch = slash[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          is_digit(ch) || ch == '.' || ch == '-' || ch == '_' ||
          (ch == '/' && slash[i - 1] != '/')))
      goto bad_prefix;
  }
  if ((k = own_key_in(slash, plen, &at, &len)) >= 0)
    return frond__fail(err, FROND_EINVAL,
                       "etcd key prefix '%.*s': '%.*s' is one of the "
                       "coordinator's own key names (layout, node, claim, "
                       "facts), so its keys would lie in '%.*s/', another "
                       "fleet's key directory: one fleet's prefix must not "
                       "be another's key directory; choose a prefix without "
                       "these names",
                       (int)plen, slash, (int)len, slash + at, (int)(at + len),
                       slash);
  snprintf(u->prefix, sizeof(u->prefix), "%.*s", (int)plen, slash);
  for (q = qm ? qm + 1 : NULL; q && *q;) {
    char part[600];
    size_t n = strcspn(q, "&");
    if (n >= sizeof(part))
      return frond__fail(err, FROND_EINVAL, "etcd option too long");
    memcpy(part, q, n);
    part[n] = 0;
    if (!strchr(part, '='))
      return frond__fail(err, FROND_EINVAL,
                         "coordinator option '%s' has no value", part);
    if (!is_ours(part, strcspn(part, "=")) && secret_like(part))
      return frond__fail(err, FROND_EINVAL,
                         "etcd option '%.*s': unknown (the password is "
                         "password=, in lower case); its value not shown",
                         (int)strcspn(part, "="), part);
    rc = is_ours(part, strcspn(part, "="))
             ? option(u, part, err)
             : frond__coord_parse_query(c, part, err);
    if (rc != 0)
      return rc;
    q += n + (q[n] == '&');
  }
  if (!u->user[0] != !u->password[0])
    return frond__fail(err, FROND_EINVAL,
                       "etcd: user= and password= go together");
  if (!u->cert[0] != !u->key[0])
    return frond__fail(err, FROND_EINVAL,
                       "etcd: cert= and key= (a client certificate and its "
                       "key) go together");
  for (int i = 0; i < u->n; i++) {
    char ep[sizeof(u->endpoints[0])];
    /* endpoint() kept each below 120 bytes: the scheme fits. */
    snprintf(ep, sizeof(ep), "%s://%.120s", u->tls ? "https" : "http",
             u->endpoints[i]);
    memcpy(u->endpoints[i], ep, sizeof(ep));
  }
  return 0;
bad_prefix:
  return frond__fail(err, FROND_EINVAL,
                     "etcd key prefix must be '/' and 1..%d characters of "
                     "letters, digits, '.', '-', '_' and single '/', not "
                     "ending in '/': '%s'",
                     FROND__ETCD_PREFIX_MAX - 1, shown);
}
