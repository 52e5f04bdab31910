/* SPDX-License-Identifier: Apache-2.0 */
/*
** acl_parse.c -- the clients file: its text into a set of clients, the
** patterns they are granted, and the check of a secret against its hash.
**
** One client a line, fields separated by spaces or tabs; '#' starts a
** comment (outside quotes); blank lines are skipped:
**
**   NAME field...
**   secret=blake2b:<64 hex>    the hash of its secret (frond clients hash)
**   cert=<name>                a client certificate's subject name
**   rights=issue,read,admin    one or more
**   tags=<glob>,...            segment tags it may issue or change
**   formats=<glob>,...         other IDs: snowflake, uuid7, uuid4, ulid,
**                              objectid, or a format.<name>'s name
**
** A value may be double-quoted ("a b", with \" and \\) to hold spaces or
** '#'. A name is 1 to 63 of A-Z a-z 0-9 . _ @ -, not admin or default
** (admin_token's). Each client needs rights and a secret or a cert; no
** field twice, no name or certificate name twice. Any mistake refuses the
** whole file with CONFIG, naming file:line: a server never runs with half
** a file.
*/
#include "server/acl.h"

#include "base/base.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef FROND_TEST_HOOKS
_Atomic uint64_t frond__acl_compared;
#endif

/* ------------------------------------------------------------- matching */

int frond__acl_glob(const char *pat, const char *s, size_t len) {
  const char *star = NULL; /* the last '*' seen, and where it matched */
  size_t i = 0, from = 0;
  while (i < len) {
    if (*pat == '*') {
      star = pat++;
      from = i;
    } else if (*pat != '\0' && *pat == s[i]) {
      pat++;
      i++;
    } else if (star != NULL) {
      pat = star + 1;
      i = ++from;
    } else {
      return 0;
    }
  }
  while (*pat == '*')
    pat++;
  return *pat == '\0';
}

int frond__acl_allows(const frond__acl_client *k, unsigned right, int kind,
                      const char *name, size_t len) {
  const char *p = kind == 0 ? k->tags : k->formats;
  size_t i, n = kind == 0 ? k->ntags : k->nformats;
  if ((k->rights & right) != right)
    return 0;
  for (i = 0; i < n; i++, p += strlen(p) + 1)
    if (frond__acl_glob(p, name, len))
      return 1;
  return 0;
}

const char *frond__acl_rights_str(unsigned rights, char *buf, size_t cap) {
  static const char *const names[] = {"issue", "read", "admin"};
  size_t i, n = 0;
  buf[0] = '\0';
  for (i = 0; i < 3; i++)
    if (rights & (1u << i))
      n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s",
                            n > 0 ? "," : "", names[i]);
  return buf;
}

/* -------------------------------------------------------------- secrets */

/* The hash is keyed, so that it is Frond's alone: the same secret hashed
** for another purpose never reads the same. */
static const unsigned char hash_key[] = "frond clients file secret v1";

void frond__acl_hash(const char *secret, size_t len,
                     unsigned char out[FROND__ACL_HASH_LEN]) {
  crypto_generichash(out, FROND__ACL_HASH_LEN, (const unsigned char *)secret,
                     len, hash_key, sizeof hash_key - 1);
}

int frond__acl_equal(const void *a, const void *b, size_t n) {
  const volatile unsigned char *x = a, *y = b;
  unsigned char diff = 0;
  size_t i;
  for (i = 0; i < n; i++)
    diff |= (unsigned char)(x[i] ^ y[i]);
#ifdef FROND_TEST_HOOKS
  atomic_fetch_add(&frond__acl_compared, n);
#endif
  return diff == 0;
}

int frond__acl_verify(const frond__acl_client *k, const char *secret,
                      size_t len) {
  static const unsigned char none[FROND__ACL_HASH_LEN];
  unsigned char h[FROND__ACL_HASH_LEN];
  int same;
  frond__acl_hash(secret, len, h);
  same = frond__acl_equal(h, k != NULL && k->has_secret ? k->hash : none,
                          sizeof h);
  sodium_memzero(h, sizeof h);
  return same && k != NULL && k->has_secret;
}

/* ------------------------------------------------------------- the set */

void frond__acl_unref(frond__acl *a) {
  if (a == NULL || atomic_fetch_sub(&a->refs, 1) != 1)
    return;
  free(a->clients);
  free(a->text);
  free(a);
}

const frond__acl_client *frond__acl_find(const frond__acl *a, const char *name,
                                         size_t len) {
  size_t i;
  if (len == 0 || len > FROND__ACL_NAME_MAX)
    return NULL;
  for (i = 0; i < a->n; i++)
    if (strlen(a->clients[i].c.name) == len &&
        memcmp(a->clients[i].c.name, name, len) == 0)
      return &a->clients[i];
  return NULL;
}

const frond__acl_client *frond__acl_find_cert(const frond__acl *a,
                                              const char *cert) {
  size_t i;
  if (cert[0] == '\0')
    return NULL;
  for (i = 0; i < a->n; i++)
    if (strcmp(a->clients[i].cert, cert) == 0)
      return &a->clients[i];
  return NULL;
}

/* ------------------------------------------------------------- parsing */

typedef struct parser {
  const char *file;
  unsigned line;
  frond_error *err;
} parser;

#define BAD bad

/* CONFIG, "file:line: " and what is wrong; returns -1. */
static int bad(parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int bad(parser *p, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  frond__fail(p->err, FROND_ECONFIG, "%s:%u: %s", p->file, p->line, what);
  return -1;
}

static int name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '@' ||
         ch == '-';
}

static int blank(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\r';
}

/* The next word of the line s[*i..end), cut in place (quotes removed,
** NUL-terminated) into *w; 1, 0 at the end of the line (or a comment),
** -1 after an error. */
static int word(parser *p, char *s, size_t *i, size_t end, char **w) {
  size_t r, o;
  int quoted = 0, stop;
  while (*i < end && blank(s[*i]))
    (*i)++;
  if (*i >= end || s[*i] == '#')
    return 0;
  r = o = *i;
  *w = s + o;
  while (r < end && (quoted || !blank(s[r]))) {
    if (s[r] == '"') {
      quoted = !quoted;
      r++;
    } else if (quoted && s[r] == '\\' && r + 1 < end &&
               (s[r + 1] == '"' || s[r + 1] == '\\')) {
      s[o++] = s[r + 1];
      r += 2;
    } else if (!quoted && s[r] == '#') {
      break;
    } else {
      if (s[r] == '\0' || (unsigned char)s[r] < 0x20 || s[r] == 0x7f)
        return BAD(p, "a control character in the line");
      s[o++] = s[r++];
    }
  }
  if (quoted)
    return BAD(p, "a quote is not closed");
  /* Cut: o <= r <= end, and s[end] is the line's newline or the text's
  ** NUL, so the byte is always the text's own. */
  stop = r < end && s[r] == '#';
  s[o] = '\0';
  *i = stop ? end : r < end ? r + 1 : end;
  return 1;
}

/* A comma-separated list in v, cut in place: its items' count, or -1. */
static long list(parser *p, char *v, const char *field) {
  long n = 0;
  char *s = v, *c;
  for (;;) {
    c = strchr(s, ',');
    if (c != NULL)
      *c = '\0';
    if (*s == '\0')
      return BAD(p, "%s has an empty item", field);
    n++;
    if (c == NULL)
      return n;
    s = c + 1;
  }
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

static int secret_field(parser *p, frond__acl_client *k, const char *v) {
  size_t i, n = strlen(v);
  if (n != 8 + 2 * FROND__ACL_HASH_LEN || memcmp(v, "blake2b:", 8) != 0)
    return BAD(p, "secret must be blake2b: and 64 hex digits, the line "
                  "`frond clients hash` prints (never the secret itself)");
  for (i = 0; i < FROND__ACL_HASH_LEN; i++) {
    int hi = hexval(v[8 + 2 * i]), lo = hexval(v[9 + 2 * i]);
    if (hi < 0 || lo < 0)
      return BAD(p, "secret must be blake2b: and 64 hex digits");
    k->hash[i] = (unsigned char)(hi << 4 | lo);
  }
  k->has_secret = 1;
  return 0;
}

static int rights_field(parser *p, frond__acl_client *k, char *v) {
  long n = list(p, v, "rights"), i;
  for (i = 0; i < n; i++, v += strlen(v) + 1) {
    if (strcmp(v, "issue") == 0)
      k->rights |= FROND__ACL_ISSUE;
    else if (strcmp(v, "read") == 0)
      k->rights |= FROND__ACL_READ;
    else if (strcmp(v, "admin") == 0)
      k->rights |= FROND__ACL_ADMIN;
    else
      return BAD(p, "unknown right '%.64s' (issue, read, admin)", v);
  }
  return n < 0 ? -1 : 0;
}

static const char *const fields[] = {"secret", "cert", "rights", "tags",
                                     "formats"};

/*
** Does v look like a distinguished name ("CN=dash", "/CN=dash/O=Acme",
** "O=Acme, CN=dash"): an attribute type of a DN at its start, or after a
** ',' or '+' (or a '/' in OpenSSL's "/CN=.../O=..." form), spaces
** allowed, followed by '='? A certificate's DNS or URI name has none.
** Then its CN's value, if it has one, goes into cn (cap bytes), else "".
*/
static int dn_like(const char *v, char *cn, size_t cap) {
  static const char *const types[] = {
      "CN", "O",  "OU", "C", "L",     "ST",     "DC",           "UID",
      "SN", "GN", "E",  "T", "TITLE", "STREET", "SERIALNUMBER", "EMAILADDRESS"};
  const char *p = v;
  size_t i, n;
  for (;;) {
    while (*p == ' ')
      p++;
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
      n = strlen(types[i]);
      if (strncasecmp(p, types[i], n) == 0) {
        const char *q = p + n;
        while (*q == ' ')
          q++;
        if (*q == '=') {
          const char *c = v;
          cn[0] = '\0';
          while ((c = strchr(c, '=')) != NULL) {
            const char *t = c;
            while (t > v && t[-1] == ' ')
              t--;
            if (t - v >= 2 && strncasecmp(t - 2, "CN", 2) == 0 &&
                (t - 2 == v || strchr(",/+ ", t[-3]) != NULL)) {
              c++;
              while (*c == ' ')
                c++;
              snprintf(cn, cap, "%.*s", (int)strcspn(c, ",/+"), c);
              break;
            }
            c++;
          }
          return 1;
        }
      }
    }
    p += strcspn(p, v[0] == '/' ? ",/+" : ",+");
    if (*p == '\0')
      return 0;
    p++;
  }
}

/* One client's line, its words cut in s[0..end). 0, 1 for a line with
** nothing on it, -1 after an error. */
static int client_line(parser *p, char *s, size_t end, frond__acl_client *k) {
  size_t i = 0, f;
  unsigned seen = 0;
  char *w, cn[65];
  int r = word(p, s, &i, end, &w);
  long n;
  if (r <= 0)
    return r < 0 ? -1 : 1;
  memset(k, 0, sizeof *k);
  k->line = p->line;
  k->cert = k->tags = k->formats = "";
  n = (long)strlen(w);
  if (n == 0 || n > FROND__ACL_NAME_MAX)
    return BAD(p, "a client name is 1 to %d characters", FROND__ACL_NAME_MAX);
  for (f = 0; f < (size_t)n; f++)
    if (!name_char(w[f]))
      return BAD(p, "client name '%.64s': only A-Z a-z 0-9 . _ @ -", w);
  if (strcmp(w, "admin") == 0 || strcmp(w, "default") == 0)
    return BAD(p, "the name %s is admin_token's client", w);
  memcpy(k->c.name, w, (size_t)n + 1);
  while ((r = word(p, s, &i, end, &w)) > 0) {
    char *eq = strchr(w, '='), *v;
    if (eq == NULL)
      return BAD(p, "'%.64s' is not field=value", w);
    *eq = '\0';
    v = eq + 1;
    for (f = 0; f < FROND__ARRAY_SIZE(fields); f++)
      if (strcmp(w, fields[f]) == 0)
        break;
    if (f == FROND__ARRAY_SIZE(fields))
      return BAD(p,
                 "unknown field '%.64s' (secret, cert, rights, tags, "
                 "formats)",
                 w);
    if (seen & (1u << f))
      return BAD(p, "%s given twice", fields[f]);
    seen |= 1u << f;
    if (f == 0 && secret_field(p, k, v) != 0)
      return -1;
    if (f == 1) {
      if (*v == '\0' || strlen(v) > 255)
        return BAD(p, "cert is 1 to 255 characters");
      /* The name the TLS listener gives a certificate is one value (its
      ** first DNS or URI name, else its CN), never a DN: "CN=x" would
      ** match no certificate, silently. */
      if (dn_like(v, cn, sizeof cn))
        return BAD(p,
                   "cert=%.64s is a distinguished name; give the name alone "
                   "(the certificate's first DNS or URI name, else its CN), "
                   "e.g. cert=%.64s",
                   v, cn[0] != '\0' ? cn : "dash.example.com");
      k->cert = v;
    }
    if (f == 2 && rights_field(p, k, v) != 0)
      return -1;
    if (f == 3 && (n = list(p, v, "tags")) < 0)
      return -1;
    if (f == 3) {
      k->tags = v;
      k->ntags = (size_t)n;
    }
    if (f == 4 && (n = list(p, v, "formats")) < 0)
      return -1;
    if (f == 4) {
      k->formats = v;
      k->nformats = (size_t)n;
    }
  }
  if (r < 0)
    return -1;
  if (k->rights == 0)
    return BAD(p, "client %s has no rights= (issue, read, admin)", k->c.name);
  if (!k->has_secret && k->cert[0] == '\0')
    return BAD(p, "client %s has neither secret= nor cert=", k->c.name);
  return 0;
}

/* The clients before k (n of them) already name k's name or its cert? */
static int twice(parser *p, const frond__acl_client *all, size_t n,
                 const frond__acl_client *k) {
  size_t i;
  for (i = 0; i < n; i++) {
    if (strcmp(all[i].c.name, k->c.name) == 0)
      return BAD(p, "client %s is also on line %u", k->c.name, all[i].line);
    if (k->cert[0] != '\0' && strcmp(all[i].cert, k->cert) == 0)
      return BAD(p, "cert %.64s is also client %s's (line %u)", k->cert,
                 all[i].c.name, all[i].line);
  }
  return 0;
}

int frond__acl_parse(const char *text, size_t len, const char *file,
                     frond__acl **out, frond_error *err) {
  parser p = {file, 0, err};
  frond__acl *a;
  size_t at = 0, cap = 0;
  *out = NULL;
  if (len > FROND__ACL_FILE_MAX)
    return frond__fail(err, FROND_ECONFIG, "%s: longer than %u bytes", file,
                       FROND__ACL_FILE_MAX);
  if ((a = calloc(1, sizeof *a)) == NULL ||
      (a->text = malloc(len + 1)) == NULL) {
    free(a);
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  }
  atomic_init(&a->refs, 1);
  memcpy(a->text, text, len);
  a->text[len] = '\0';
  while (at < len) {
    char *s = a->text + at, *nl = memchr(s, '\n', len - at);
    size_t end = nl != NULL ? (size_t)(nl - s) : len - at;
    int r;
    p.line++;
    at += end + 1;
    if (end > FROND__ACL_LINE_MAX) {
      BAD(&p, "line longer than %d bytes", FROND__ACL_LINE_MAX);
      goto fail;
    }
    if (a->n == cap) {
      frond__acl_client *more;
      if (a->n >= FROND__ACL_MAX_CLIENTS) {
        BAD(&p, "more than %d clients", FROND__ACL_MAX_CLIENTS);
        goto fail;
      }
      cap = cap ? 2 * cap : 8;
      if ((more = realloc(a->clients, cap * sizeof *more)) == NULL) {
        frond__fail(err, FROND_ENOMEM, "out of memory");
        goto fail;
      }
      a->clients = more;
    }
    r = client_line(&p, s, end, &a->clients[a->n]);
    if (r < 0 || (r == 0 && twice(&p, a->clients, a->n, &a->clients[a->n])))
      goto fail;
    if (r == 0) {
      a->clients[a->n].set = a;
      a->n++;
    }
  }
  *out = a;
  return 0;
fail:
  frond__acl_unref(a);
  return err->code;
}
