/* SPDX-License-Identifier: Apache-2.0 */
/*
** tls.c -- the TLS transport: contexts, reloads, a connection's records.
**
** The bar (docs/reference/configuration.md, TLS): TLS 1.2 and 1.3 only;
** in TLS 1.2 only ECDHE key exchange with AES-GCM or ChaCha20-Poly1305
** (forward secrecy, AEAD), in TLS 1.3 its three AEAD suites; groups
** X25519, P-256, P-384; no compression, no renegotiation; session tickets
** on (stateless resumption, keys per SSL_CTX, so a reload rotates them).
**
** A connection reads ciphertext into a memory BIO (frond__tls_feed) and
** writes through a BIO of its own that appends to a frond__buf, which
** frond__tls_seal then hands back as the bytes to send: one copy in, none
** out. A key with a passphrase is refused rather than prompted for.
*/
#include "server/tls.h"

#include "base/base.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define TLS12_CIPHERS                                                          \
  "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                 \
  "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                 \
  "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
#define TLS13_SUITES                                                           \
  "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define GROUPS "X25519:P-256:P-384"
/* A certificate this close to its end is warned about at load. */
#define EXPIRY_WARN_S (14 * 86400)
/* A ciphertext buffer above this is given back when idle. */
#define CT_KEEP 4096

struct frond__tls {
  pthread_mutex_t lock; /* ctx: swapped by a reload, read by accepts */
  SSL_CTX *ctx;
  BIO_METHOD *sink;
  const char *cert, *key, *ca; /* the configuration's, which outlives it */
  _Atomic int64_t not_after;
  _Atomic uint64_t handshakes[2]; /* ok, failed */
  _Atomic uint64_t reloads[2];
};

struct frond__tls_conn {
  frond__tls *t;
  SSL *ssl;
  BIO *rbio;
  frond__buf ct; /* ciphertext to send, appended by the sink BIO */
  int done;      /* handshake complete */
  const char *alpn;
};

/* ------------------------------------------------------------- contexts */

/* OpenSSL's last error, for a message, and its queue cleared. */
static const char *ssl_why(char *buf, size_t cap) {
  unsigned long e = ERR_peek_last_error();
  const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
  snprintf(buf, cap, "%s", r != NULL ? r : "unknown reason");
  ERR_clear_error();
  return buf;
}

/* A key with a passphrase would prompt on the terminal: refuse instead. */
static int no_passphrase(char *buf, int size, int rwflag, void *u) {
  (void)buf, (void)size, (void)rwflag, (void)u;
  return -1;
}

static int readable(const char *key, const char *path, frond_error *err) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return frond__fail(err, FROND_ECONFIG, "%s %s: %s", key, path,
                       errno == ENOENT ? "no such file" : strerror(errno));
  fclose(f);
  return 0;
}

int frond__tls_key_exposed(const char *path, char *why, size_t cap) {
  struct stat st;
  if (stat(path, &st) != 0 || (st.st_mode & S_IROTH) == 0)
    return 0;
  snprintf(why, cap,
           "tls_key %s can be read by any user of this host (mode %04o): "
           "chmod o-r it (in Kubernetes, the secret volume's defaultMode "
           "0400 or 0440)",
           path, (unsigned)(st.st_mode & 07777));
  return 1;
}

/* t as seconds since the epoch, and as text into buf. */
static int64_t asn1_time(const ASN1_TIME *t, char *buf, size_t cap) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (ASN1_TIME_to_tm(t, &tm) != 1) {
    snprintf(buf, cap, "?");
    return 0;
  }
  strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return (int64_t)timegm(&tm);
}

static int alpn_select(SSL *ssl, const unsigned char **out,
                       unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
  const frond__tls_conn *tc = SSL_get_app_data(ssl);
  const char *want = tc->alpn;
  unsigned int i, n;
  (void)arg;
  for (i = 0; want != NULL && i < inlen; i += 1 + n) {
    n = in[i];
    if (i + 1 + n > inlen)
      break;
    if (n == strlen(want) && memcmp(in + i + 1, want, n) == 0) {
      *out = in + i + 1;
      *outlen = (unsigned char)n;
      return SSL_TLSEXT_ERR_OK;
    }
  }
  return SSL_TLSEXT_ERR_NOACK; /* go on without one, as nginx does */
}

/* A new SSL_CTX from t's files, with its certificate's end in *not_after. */
static int ctx_build(frond__tls *t, SSL_CTX **out, int64_t *not_after,
                     frond_error *err) {
  SSL_CTX *ctx;
  X509 *cert;
  char why[256], when[64];
  int64_t now = (int64_t)time(NULL), end;
  *out = NULL;
  if (readable("tls_cert", t->cert, err) != 0 ||
      readable("tls_key", t->key, err) != 0 ||
      (t->ca[0] != '\0' && readable("tls_ca", t->ca, err) != 0))
    return err->code;
  if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
    return frond__fail(err, FROND_ENOMEM, "TLS: %s", ssl_why(why, sizeof why));
  SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
  if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
    frond__fail(err, FROND_ECONFIG,
                "tls_cert %s: not a PEM certificate chain (%s)", t->cert,
                ssl_why(why, sizeof why));
    goto fail;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
    unsigned long e = ERR_peek_last_error();
    if (ERR_GET_LIB(e) == ERR_LIB_X509 &&
        (ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH ||
         ERR_GET_REASON(e) == X509_R_KEY_TYPE_MISMATCH)) {
      frond__fail(err, FROND_ECONFIG,
                  "tls_key %s does not match the certificate of tls_cert %s "
                  "(%s)",
                  t->key, t->cert, ssl_why(why, sizeof why));
      goto fail;
    }
    frond__fail(err, FROND_ECONFIG,
                "tls_key %s: not an unencrypted PEM private key (%s)", t->key,
                ssl_why(why, sizeof why));
    goto fail;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    frond__fail(err, FROND_ECONFIG,
                "tls_key %s does not match the certificate of tls_cert %s "
                "(%s)",
                t->key, t->cert, ssl_why(why, sizeof why));
    goto fail;
  }
  cert = SSL_CTX_get0_certificate(ctx);
  end = asn1_time(X509_get0_notAfter(cert), when, sizeof when);
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    frond__fail(err, FROND_ECONFIG,
                "tls_cert %s expired on %s: clients would refuse it (renew "
                "it, then start or send SIGHUP)",
                t->cert, when);
    goto fail;
  }
  if (end - now < EXPIRY_WARN_S)
    frond_log(FROND_LOG_WARN, "tls_cert %s expires on %s, in %lld hours",
              t->cert, when, (long long)((end - now) / 3600));
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    char from[64];
    asn1_time(X509_get0_notBefore(cert), from, sizeof from);
    frond_log(FROND_LOG_WARN,
              "tls_cert %s is not valid before %s: clients refuse it until "
              "then (is this clock right?)",
              t->cert, from);
  }
  if (t->ca[0] != '\0') {
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca);
    if (names == NULL || SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1) {
      sk_X509_NAME_pop_free(names, X509_NAME_free);
      frond__fail(err, FROND_ECONFIG,
                  "tls_ca %s: no PEM certificate in it (%s)", t->ca,
                  ssl_why(why, sizeof why));
      goto fail;
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx,
                       SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT |
                           SSL_VERIFY_CLIENT_ONCE,
                       NULL);
  }
  /* Resumed sessions keep their verified client: a context is needed. */
  SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"frond", 5);
  SSL_CTX_set_security_level(ctx, 2);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, TLS13_SUITES) != 1 ||
      SSL_CTX_set1_groups_list(ctx, GROUPS) != 1) {
    frond__fail(err, FROND_ECONFIG,
                "TLS: this OpenSSL refuses the ciphers "
                "or groups Frond asks for (%s)",
                ssl_why(why, sizeof why));
    goto fail;
  }
  SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
  *out = ctx;
  *not_after = end;
  return 0;
fail:
  SSL_CTX_free(ctx);
  return err->code;
}

int frond__tls_check(const frond__config *cfg, int listeners,
                     frond_error *err) {
  const char *set = cfg->tls_cert[0]  ? "tls_cert"
                    : cfg->tls_key[0] ? "tls_key"
                    : cfg->tls_ca[0]  ? "tls_ca"
                                      : NULL;
  if (listeners && (cfg->tls_cert[0] == '\0' || cfg->tls_key[0] == '\0'))
    return frond__fail(err, FROND_ECONFIG,
                       "a TLS listener (tls_listen, resp_tls_listen) needs "
                       "tls_cert and tls_key");
  if (!listeners && set != NULL)
    return frond__fail(err, FROND_ECONFIG,
                       "%s is set but no TLS listener is on: set tls_listen "
                       "or resp_tls_listen",
                       set);
  return 0;
}

static int sink_write(BIO *b, const char *p, size_t n, size_t *written) {
  if (frond__buf_append(BIO_get_data(b), p, n) != 0)
    return 0;
  *written = n;
  return 1;
}

static long sink_ctrl(BIO *b, int cmd, long num, void *ptr) {
  (void)b, (void)num, (void)ptr;
  return cmd == BIO_CTRL_FLUSH;
}

static int sink_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

int frond__tls_open(frond__tls **out, const frond__config *cfg,
                    frond_error *err) {
  frond__tls *t = calloc(1, sizeof *t);
  int64_t end = 0;
  *out = NULL;
  if (t == NULL)
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  t->cert = cfg->tls_cert;
  t->key = cfg->tls_key;
  t->ca = cfg->tls_ca;
  pthread_mutex_init(&t->lock, NULL);
  t->sink =
      BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "frond sink");
  if (t->sink == NULL || BIO_meth_set_write_ex(t->sink, sink_write) != 1 ||
      BIO_meth_set_ctrl(t->sink, sink_ctrl) != 1 ||
      BIO_meth_set_create(t->sink, sink_create) != 1) {
    frond__tls_close(t);
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  }
  if (ctx_build(t, &t->ctx, &end, err) != 0) {
    frond__tls_close(t);
    return err->code;
  }
  atomic_store(&t->not_after, end);
  *out = t;
  return 0;
}

int frond__tls_reload(frond__tls *t, frond_error *err) {
  SSL_CTX *ctx, *old;
  int64_t end = 0;
  if (ctx_build(t, &ctx, &end, err) != 0) {
    atomic_fetch_add(&t->reloads[1], 1);
    return err->code;
  }
  pthread_mutex_lock(&t->lock);
  old = t->ctx;
  t->ctx = ctx;
  pthread_mutex_unlock(&t->lock);
  /* Connections made under it hold references of their own. */
  SSL_CTX_free(old);
  atomic_store(&t->not_after, end);
  atomic_fetch_add(&t->reloads[0], 1);
  return 0;
}

void frond__tls_close(frond__tls *t) {
  if (t == NULL)
    return;
  SSL_CTX_free(t->ctx);
  BIO_meth_free(t->sink);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

int64_t frond__tls_not_after(frond__tls *t) {
  return atomic_load(&t->not_after);
}

void frond__tls_metrics(frond__tls *t, frond__buf *b) {
  static const char *const results[2] = {"ok", "failed"};
  int i;
  frond__buf_printf(b, "# HELP frond_tls_handshakes_total TLS handshakes, "
                       "by result.\n# TYPE frond_tls_handshakes_total "
                       "counter\n");
  for (i = 0; i < 2; i++)
    frond__buf_printf(b, "frond_tls_handshakes_total{result=\"%s\"} %llu\n",
                      results[i],
                      (unsigned long long)atomic_load(&t->handshakes[i]));
  frond__buf_printf(b, "# HELP frond_tls_reloads_total Certificate reloads "
                       "(SIGHUP), by result.\n# TYPE frond_tls_reloads_total "
                       "counter\n");
  for (i = 0; i < 2; i++)
    frond__buf_printf(b, "frond_tls_reloads_total{result=\"%s\"} %llu\n",
                      results[i],
                      (unsigned long long)atomic_load(&t->reloads[i]));
  frond__buf_printf(b,
                    "# HELP frond_tls_certificate_expiry_timestamp_seconds "
                    "When the served certificate expires.\n# TYPE "
                    "frond_tls_certificate_expiry_timestamp_seconds gauge\n"
                    "frond_tls_certificate_expiry_timestamp_seconds %lld\n",
                    (long long)atomic_load(&t->not_after));
}

/* ---------------------------------------------------------- connections */

frond__tls_conn *frond__tls_conn_new(frond__tls *t, const char *alpn) {
  frond__tls_conn *tc = calloc(1, sizeof *tc);
  BIO *wbio;
  if (tc == NULL)
    return NULL;
  tc->t = t;
  pthread_mutex_lock(&t->lock);
  tc->ssl = SSL_new(t->ctx); /* holds a reference to the context */
  pthread_mutex_unlock(&t->lock);
  tc->rbio = BIO_new(BIO_s_mem());
  wbio = BIO_new(t->sink);
  if (tc->ssl == NULL || tc->rbio == NULL || wbio == NULL) {
    BIO_free(tc->rbio);
    BIO_free(wbio);
    SSL_free(tc->ssl);
    free(tc);
    ERR_clear_error();
    return NULL;
  }
  BIO_set_mem_eof_return(tc->rbio, -1); /* empty: want more, not EOF */
  BIO_set_data(wbio, &tc->ct);
  SSL_set_bio(tc->ssl, tc->rbio, wbio);
  tc->alpn = alpn;
  SSL_set_app_data(tc->ssl, tc);
  SSL_set_accept_state(tc->ssl);
  return tc;
}

void frond__tls_conn_free(frond__tls_conn *tc) {
  if (tc == NULL)
    return;
  SSL_free(tc->ssl); /* and its BIOs */
  frond__buf_free(&tc->ct);
  free(tc);
}

int frond__tls_feed(frond__tls_conn *tc, const char *p, size_t n) {
  size_t w;
  if (BIO_write_ex(tc->rbio, p, n, &w) != 1 || w != n) {
    ERR_clear_error();
    return -1;
  }
  return 0;
}

/* The name of a verified client certificate: its first DNS or URI
** subject alternative name; without one, its subject's CN. Alternative
** names first, as RFC 6125 has it: a CA that checks only them (SPIFFE, a
** cert-manager policy) may leave the CN to the requester, who must not be
** able to name itself another client that way. A name with control
** bytes, of two CNs, or longer than cap - 1 is refused: credentials and
** logs take it as given. 0, or -1 with why filled. */
static int peer_name(SSL *ssl, char *name, size_t cap, char *why,
                     size_t whycap) {
  X509 *cert = SSL_get0_peer_certificate(ssl);
  X509_NAME *subj;
  GENERAL_NAMES *sans;
  unsigned char *utf8 = NULL;
  int i, len = -1;
  size_t k;
  name[0] = '\0';
  if (cert == NULL)
    return 0; /* no tls_ca: no client certificate asked for */
  sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
  for (i = 0; i < sk_GENERAL_NAME_num(sans) && len < 0; i++) {
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
    if (g->type == GEN_DNS || g->type == GEN_URI)
      len = ASN1_STRING_to_UTF8(&utf8, g->d.ia5);
  }
  GENERAL_NAMES_free(sans);
  subj = X509_get_subject_name(cert);
  if (len < 0 &&
      (i = X509_NAME_get_index_by_NID(subj, NID_commonName, -1)) >= 0) {
    if (X509_NAME_get_index_by_NID(subj, NID_commonName, i) >= 0) {
      snprintf(why, whycap, "client certificate has two subject CNs");
      return -1;
    }
    len = ASN1_STRING_to_UTF8(
        &utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i)));
  }
  if (len <= 0 || (size_t)len >= cap) {
    OPENSSL_free(utf8);
    snprintf(why, whycap, "client certificate has %s",
             len <= 0 ? "neither a subject CN nor a DNS or URI name"
                      : "a name longer than 255 bytes");
    return -1;
  }
  for (k = 0; k < (size_t)len; k++)
    if (utf8[k] < 0x20 || utf8[k] == 0x7f) {
      OPENSSL_free(utf8);
      snprintf(why, whycap, "client certificate name has control bytes");
      return -1;
    }
  memcpy(name, utf8, (size_t)len);
  name[len] = '\0';
  OPENSSL_free(utf8);
  return 0;
}

int frond__tls_handshake(frond__tls_conn *tc, char *name, size_t cap, char *why,
                         size_t whycap) {
  int r;
  if (tc->done)
    return 1;
  r = SSL_do_handshake(tc->ssl);
  if (r == 1) {
    if (peer_name(tc->ssl, name, cap, why, whycap) != 0) {
      atomic_fetch_add(&tc->t->handshakes[1], 1);
      return -1;
    }
    tc->done = 1;
    atomic_fetch_add(&tc->t->handshakes[0], 1);
    return 1;
  }
  if (SSL_get_error(tc->ssl, r) == SSL_ERROR_WANT_READ)
    return 0;
  ssl_why(why, whycap);
  atomic_fetch_add(&tc->t->handshakes[1], 1);
  return -1;
}

size_t frond__tls_plain(frond__tls_conn *tc, int http, const char **text) {
  static const char h[] =
      "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
      "Frond-Error: BAD_REQUEST\r\nConnection: close\r\n"
      "Content-Length: 102\r\n\r\n"
      "{\"error\":{\"code\":\"BAD_REQUEST\",\"message\":\"plain HTTP sent "
      "to a TLS port: use https:// on this port\"}}\n";
  static const char r[] = "-ERR plain text sent to a TLS port: connect with "
                          "TLS (redis-cli --tls)\r\n";
  atomic_fetch_add(&tc->t->handshakes[1], 1);
  *text = http ? h : r;
  return http ? sizeof h - 1 : sizeof r - 1;
}

ssize_t frond__tls_read(frond__tls_conn *tc, char *p, size_t cap) {
  size_t got = 0;
  int r = SSL_read_ex(tc->ssl, p, cap, &got);
  if (r == 1)
    return (ssize_t)got;
  switch (SSL_get_error(tc->ssl, r)) {
  case SSL_ERROR_WANT_READ:
    return 0;
  case SSL_ERROR_ZERO_RETURN:
    return FROND__TLS_EOF;
  default:
    ERR_clear_error();
    return FROND__TLS_FAILED;
  }
}

int frond__tls_pending(const frond__tls_conn *tc) {
  return tc->done &&
         (SSL_pending(tc->ssl) > 0 || BIO_ctrl_pending(tc->rbio) > 0);
}

int frond__tls_seal(frond__tls_conn *tc, frond__buf *out) {
  frond__buf tmp;
  size_t w;
  if (out->len > 0) {
    if (!tc->done || SSL_write_ex(tc->ssl, out->data, out->len, &w) != 1 ||
        w != out->len) {
      ERR_clear_error();
      return -1;
    }
    out->len = 0;
  }
  if (tc->ct.len > 0) {
    tmp = *out;
    *out = tc->ct;
    tc->ct = tmp;
    if (tc->ct.cap > CT_KEEP) /* the plaintext of a large answer */
      frond__buf_free(&tc->ct);
  }
  return 0;
}

void frond__tls_shutdown(frond__tls_conn *tc) {
  if (tc->done && SSL_shutdown(tc->ssl) < 0)
    ERR_clear_error();
}

size_t frond__tls_backlog(const frond__tls_conn *tc) {
  return tc->ct.len;
}

void frond__tls_trim(frond__tls_conn *tc) {
  if (tc->ct.len == 0 && tc->ct.cap > 0)
    frond__buf_free(&tc->ct);
}
