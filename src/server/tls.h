/* SPDX-License-Identifier: Apache-2.0 */
/*
** tls.h -- the TLS transport under the connection layer (OpenSSL 3).
**
** A frond__tls is the server's: the certificate, key and client CA of the
** configuration in one SSL_CTX, swapped for a new one on SIGHUP
** (frond__tls_reload) while connections made under the old one go on
** with it. A frond__tls_conn is one connection's: ciphertext read from
** the socket goes in with frond__tls_feed and comes out as plaintext with
** frond__tls_read; plaintext answers go in with frond__tls_seal, which
** leaves the ciphertext to write in the same buffer. No socket, loop or
** protocol is known here: conn.c does the I/O, and the protocols never
** learn that TLS is there.
*/
#ifndef FROND_SERVER_TLS_H
#define FROND_SERVER_TLS_H

#include "frond.h"
#include "server/buf.h"
#include "server/config.h"

#include <stddef.h>
#include <sys/types.h>

typedef struct frond__tls frond__tls;
typedef struct frond__tls_conn frond__tls_conn;

/* The TLS keys against each other and the listeners, before anything is
** read: a TLS listener needs tls_cert and tls_key; tls_cert, tls_key and
** tls_ca without a TLS listener, or tls_ca without tls_cert, are refused
** (CONFIG), since they would not do what they say. 0, or CONFIG. */
int frond__tls_check(const frond__config *cfg, int listeners, frond_error *err);
/* Load tls_cert, tls_key and tls_ca into a new frond__tls. Every failure
** is CONFIG naming the file and what is wrong with it: missing,
** unreadable, not a certificate or key, the key not the certificate's,
** expired. */
int frond__tls_open(frond__tls **out, const frond__config *cfg,
                    frond_error *err);
/* Main thread (SIGHUP): read the files again; on success new connections
** get the new SSL_CTX, existing ones keep theirs. On failure the old one
** stays, and err says why. */
int frond__tls_reload(frond__tls *t, frond_error *err);
void frond__tls_close(frond__tls *t);
/* 1, with why (cap bytes) saying so, when tls_key can be read by any user
** of the host (a warning: a Kubernetes secret is mounted so by default);
** 0 otherwise, and when it cannot be looked at (opening it says why). */
int frond__tls_key_exposed(const char *path, char *why, size_t cap);
/* The frond_tls_* families. */
void frond__tls_metrics(frond__tls *t, frond__buf *b);
/* The certificate's end of validity, seconds since the epoch. */
int64_t frond__tls_not_after(frond__tls *t);

/* A connection's TLS (server side), offering alpn (NUL-terminated, e.g.
** "http/1.1"; NULL: none) to clients that ask. NULL when out of memory.
** Any thread. */
frond__tls_conn *frond__tls_conn_new(frond__tls *t, const char *alpn);
void frond__tls_conn_free(frond__tls_conn *tc);
/* tc's first bytes were plain text, not a handshake (someone typed
** http:// for https://, or redis-cli without --tls): count its handshake
** as failed, and give the answer to send unencrypted before closing, in
** the words of HTTP (http) or the Redis protocol, as nginx does. Its
** length; *text is static. */
size_t frond__tls_plain(frond__tls_conn *tc, int http, const char **text);
/* Ciphertext from the socket. 0, or -1 when out of memory. */
int frond__tls_feed(frond__tls_conn *tc, const char *p, size_t n);
/*
** Go on with the handshake over what was fed: 1 once it is complete (the
** first time: the client certificate's name, with mTLS, is in
** name[0..cap), "" without one), 0 while it needs more bytes, -1 when it
** failed (why, for a log line, in why[0..whycap)). What the server has to
** send is left for frond__tls_seal either way (an alert too).
*/
int frond__tls_handshake(frond__tls_conn *tc, char *name, size_t cap, char *why,
                         size_t whycap);
/* Plaintext into p[0..cap): bytes (> 0), 0 when more ciphertext is needed,
** FROND__TLS_EOF when the client closed its side (close_notify), or
** FROND__TLS_FAILED (a bad record: close the connection). */
#define FROND__TLS_EOF (-1)
#define FROND__TLS_FAILED (-2)
ssize_t frond__tls_read(frond__tls_conn *tc, char *p, size_t cap);
/* Is plaintext, or ciphertext not decrypted yet, waiting? */
int frond__tls_pending(const frond__tls_conn *tc);
/* Encrypt out's plaintext (after the handshake), and leave in out,
** instead, every byte the server has to send (handshake messages, alerts,
** records). 0, or -1 (out of memory, or plaintext before the handshake). */
int frond__tls_seal(frond__tls_conn *tc, frond__buf *out);
/* Say close_notify; frond__tls_seal brings it out. */
void frond__tls_shutdown(frond__tls_conn *tc);
/* Bytes the TLS state has made to send and frond__tls_seal has not yet
** taken (handshake messages, alerts, KeyUpdate replies): back-pressure
** counts them with the answers, so that a client sending messages that
** make the server answer, and never reading, cannot grow them. */
size_t frond__tls_backlog(const frond__tls_conn *tc);
/* An idle connection: give back a large ciphertext buffer. */
void frond__tls_trim(frond__tls_conn *tc);

#endif /* FROND_SERVER_TLS_H */
