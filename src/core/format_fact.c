/* SPDX-License-Identifier: Apache-2.0 */
/*
** format_fact.c -- a keyed format's key as a shared fact: its fingerprint,
** the name it is recorded under, the check against the record, and the
** record file of a data directory.
**
** Two processes that issue the numbers of one order format (or keyed
** sequence) from IDs that never repeat between them still issue equal
** numbers when their keys differ: each permutation is a bijection, two
** different ones are not disjoint. The same holds for anything else that
** re-permutes under one key version: rounds=, the radix and width, the
** unversioned key changed in place. So every keyed format has a
** fingerprint, a keyed hash (BLAKE2b under the master key) of a fixed
** string naming its kind, radix, width and rounds: equal for equal keys
** and parameters, unrelated otherwise, and revealing nothing of the key
** (recovering a 256-bit key from 64 bits of a PRF's output is a brute
** force of the key).
**
** The fingerprint is recorded once where the processes sharing the
** numbers meet, under a name that says which numbers:
**
**   key.<kind>.<d|b><width>.<version or ->.<scope>
**   key.order.d12.1.tag.orders         order numbers of tag "orders"
**   key.seq.d6.-.tagh.0f3c9a1b2d4e5f60 a sequence of a tag whose name is
**                                      not [A-Za-z0-9_-]{1,40}: its hash
**   key.order.d19.2.snowflake          order numbers of snowflake IDs
**
** (64 bytes at most, [A-Za-z0-9._-] only: a row of frond_meta, a znode, a
** file name.) A new key version has a name of its own, so rotation is
** adding a version, never changing one.
**
** Not so a shard= format's: its strings carry no key version, and one
** made under S = 4 can equal one made under S = 5 (the shard bits over
** other ID bits), or under another key. So all its variants share one
** record per scope, key.shard.<scope>, whose value names S, the version
** and the fingerprint ("shard=4,key=1,fingerprint=0f3c..."): another S,
** version or key is refused with both named, and none of them rotates. Which place holds the record is
** the caller's choice (frond_format_check in coord_fact.c): the store the
** numbers' IDs come from, a coordinator, or, for one host alone, a file in
** its data directory (below).
*/
#include "base/base.h"
#include "base/record.h"
#include "core/core.h"
#include "core/formats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FACT_KIND "format fact"

/* The kind's name in a record (only order and seq formats have keys). */
static const char *kind_word(const frond_format *f) {
  return f->kind == FROND_FORMAT_SEQ ? "seq"
         : f->shard_bits > 0         ? "shard"
                                     : "order";
}

void frond__format_fingerprint_init(
    frond_format *f, const uint8_t master[FROND_ORDER_KEY_BYTES]) {
  static const char hex[] = "0123456789abcdef";
  uint8_t h[16];
  char ctx[96];
  /* A scheme other than the first is named, so that processes that
  ** disagree on it are told; the first keeps the string of the records
  ** already made. */
  snprintf(ctx, sizeof(ctx),
           "frond key fingerprint v1 kind=%s radix=%u width=%u rounds=%u%s",
           kind_word(f), f->radix, f->width, f->rounds,
           f->escheme == FROND__SCHEME_AES ? " scheme=aes" : "");
  crypto_generichash(h, sizeof(h), (const unsigned char *)ctx, strlen(ctx),
                     master, FROND_ORDER_KEY_BYTES);
  for (int i = 0; i < FROND__FINGERPRINT_LEN / 2; i++) {
    f->fingerprint[2 * i] = hex[h[i] >> 4];
    f->fingerprint[2 * i + 1] = hex[h[i] & 15];
  }
  f->fingerprint[FROND__FINGERPRINT_LEN] = '\0';
  sodium_memzero(h, sizeof(h));
}

/* A tag that may stand in a name as it is. */
static int plain_tag(const char *t) {
  size_t n = strlen(t);
  if (n == 0 || n > 40)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') ||
          (t[i] >= '0' && t[i] <= '9') || t[i] == '_' || t[i] == '-'))
      return 0;
  return 1;
}

int frond__format_fact_name(const frond_format *f, const char *scope, char *out,
                            size_t len) {
  char where[64];
  if (scope[0] == '\0') {
    snprintf(where, sizeof(where), "snowflake");
  } else if (plain_tag(scope)) {
    snprintf(where, sizeof(where), "tag.%s", scope);
  } else {
    uint8_t h[16];
    crypto_generichash(h, sizeof(h), (const unsigned char *)scope,
                       strlen(scope), NULL, 0);
    snprintf(where, sizeof(where), "tagh.%02x%02x%02x%02x%02x%02x%02x%02x",
             h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]);
  }
  if (f->shard_bits > 0) /* one record for every S and version: above */
    return snprintf(out, len, "key.shard.%s", where);
  return snprintf(out, len, "key.%s.%c%u.%c.%s", kind_word(f),
                  f->radix == 10 ? 'd' : 'b', f->width,
                  f->version ? f->version : '-', where);
}

int frond__format_fact_value(const frond_format *f, char *out, size_t len) {
  if (f->shard_bits > 0)
    return snprintf(out, len, "shard=%u,key=%c,fingerprint=%s", f->shard_bits,
                    f->version ? f->version : '-', f->fingerprint);
  return snprintf(out, len, "%s", f->fingerprint);
}

const char *frond__format_scope(const frond_format *f,
                                const frond_format_source *src) {
  if (f->tag_len > 0)
    return f->tag;
  return src != NULL && src->tag != NULL ? src->tag : "";
}

/* What the numbers are, for messages: "order numbers of 12 digits from
** tag orders, key version 1". */
static void describe(const frond_format *f, const char *scope, char *out,
                     size_t len) {
  char ver[32];
  if (f->version)
    snprintf(ver, sizeof(ver), "key version %c", f->version);
  else
    snprintf(ver, sizeof(ver), "the unversioned key");
  if (f->shard_bits > 0) /* "shard=4 strings of snowflake IDs, ..." */
    snprintf(out, len, "shard=%u strings of %s%.64s%s, %s", f->shard_bits,
             scope[0] ? "tag \"" : "snowflake IDs", scope, scope[0] ? "\"" : "",
             ver);
  else
    snprintf(out, len, "%s of %u %s from %s%.64s%s, %s",
             f->kind == FROND_FORMAT_SEQ ? "sequence numbers" : "order numbers",
             f->width, f->radix == 10 ? "digits" : "base32 characters",
             scope[0] ? "tag \"" : "snowflake IDs", scope, scope[0] ? "\"" : "",
             ver);
}

void frond__format_fact_init(frond_format *f) {
  pthread_mutex_init(&f->fact.mu, NULL);
  atomic_init(&f->fact.word, FROND__FACT_UNCHECKED | FROND__FACT_NO_SCOPE);
  f->fact.resets = 0;
  for (int i = 0; i < FROND__FACT_WORDS; i++)
    atomic_init(&f->fact.scope[i], 0);
  f->fact.why[0] = '\0';
}

void frond__format_fact_free(frond_format *f) {
  pthread_mutex_destroy(&f->fact.mu);
}

/* scope as the fact's words: its bytes, zero-padded. */
static void scope_words(const char *scope, uint64_t w[FROND__FACT_WORDS]) {
  char b[FROND__FACT_WORDS * 8] = {0};
  memcpy(b, scope, strnlen(scope, FROND_TAG_MAX));
  memcpy(w, b, sizeof(b));
}

/* Publish an outcome (under f->fact.mu): the word marked as being
** written, then the scope's words, then the word whole, a generation on
** (release). An issue that read the scope between the two finds the
** word changed and reads again; the message is read under the lock. */
static void publish(frond_format *f, int state, const char *scope, int code,
                    const char *why) {
  uint64_t w = atomic_load_explicit(&f->fact.word, memory_order_relaxed);
  uint64_t sw[FROND__FACT_WORDS];
  scope_words(scope, sw);
  atomic_store_explicit(&f->fact.word, w | FROND__FACT_WRITING,
                        memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  for (int i = 0; i < FROND__FACT_WORDS; i++)
    atomic_store_explicit(&f->fact.scope[i], sw[i], memory_order_relaxed);
  /* A refusal always says something: a check called without an error
  ** struct has no message of its own. */
  if ((why == NULL || why[0] == '\0') && state == FROND__FACT_REFUSED)
    why = frond_strerror(code);
  snprintf(f->fact.why, sizeof(f->fact.why), "%s", why ? why : "");
  atomic_store_explicit(
      &f->fact.word,
      ((w >> 32) + 1) << 32 | (uint64_t)(uint16_t)(int16_t)code << 8 |
          (scope[0] == '\0' ? FROND__FACT_NO_SCOPE : 0) | (uint64_t)state,
      memory_order_release);
}

/* frond_format_recheck's count now. A reset (the store came back) after
** a check began to read the store makes what it read stale: it may be
** the store's from before. */
static uint64_t resets_now(frond_format *f) {
  uint64_t r;
  pthread_mutex_lock(&f->fact.mu);
  r = f->fact.resets;
  pthread_mutex_unlock(&f->fact.mu);
  return r;
}

#define AGAIN 1 /* a reset came since: nothing published, read again */

/* Take the check's lock to publish what was read from the store since
** the reset count was since: 0, the lock held (no reset can come before
** the publish), or AGAIN, not held, when a reset came in between. */
static int lock_unless_reset(frond_format *f, uint64_t since) {
  pthread_mutex_lock(&f->fact.mu);
  if (f->fact.resets == since)
    return 0;
  pthread_mutex_unlock(&f->fact.mu);
  return AGAIN;
}

/* The check, for the numbers of scope (as the format names it, and as
** f remembers it), recorded under the name of spelt (the same tag as the
** store spells it); since: the reset count before anything of it was
** read from the store. AGAIN when a reset came since. */
static int check_named(frond_format *f, const char *scope, const char *spelt,
                       frond__fact_fn fn, void *ctx, uint64_t since,
                       frond_error *err) {
  char name[FROND__FACT_NAME_MAX + 1], value[FROND__FACT_VALUE_MAX + 1];
  char recorded[FROND__FACT_VALUE_MAX + 8], where[300], what[200];
  frond_error e = {0, ""};
  int rc;
  frond__format_fact_name(f, spelt, name, sizeof(name));
  frond__format_fact_value(f, value, sizeof(value));
  recorded[0] = '\0';
  where[0] = '\0';
  rc = fn(ctx, name, value, recorded, sizeof(recorded), where, sizeof(where),
          &e);
  if (rc != 0) /* nothing learnt: the state stays as it was */
    return frond__fail(err, rc, "%s", e.message);
  if (lock_unless_reset(f, since) != 0)
    return AGAIN;
  if (strcmp(recorded, value) == 0) {
    publish(f, FROND__FACT_AGREED, scope, 0, NULL);
    rc = 0;
  } else if (f->shard_bits > 0) {
    describe(f, scope, what, sizeof(what));
    rc = frond__fail(
        err, FROND_EKEY_MISMATCH,
        "%s: %s here, %.72s recorded in %s as %s: every process issuing "
        "these strings must have the same S, key version and key, and "
        "none of them can change (a shard string carries no version)",
        what, value, recorded, where, name);
    publish(f, FROND__FACT_REFUSED, scope, rc, err ? err->message : "");
  } else {
    describe(f, scope, what, sizeof(what));
    rc = frond__fail(
        err, FROND_EKEY_MISMATCH,
        "%s: fingerprint %s here, %.20s recorded in %s as %s: every "
        "process issuing these numbers must have the same key and rounds= "
        "for a version; a new key takes a new version (key=)",
        what, f->fingerprint, recorded, where, name);
    publish(f, FROND__FACT_REFUSED, scope, rc, err ? err->message : "");
  }
  pthread_mutex_unlock(&f->fact.mu);
  return rc;
}

/* One check, for the numbers of scope: with s, in its store, the record
** named after the tag as the store spells its row; AGAIN when a reset
** came since since. */
static int check_once(frond_format *f, const char *scope, frond_seg *s,
                      frond__fact_fn fn, void *ctx, uint64_t since,
                      frond_error *err) {
  char spelt[FROND_TAG_MAX + 1], what[200];
  int rc;
  if (s == NULL || scope[0] == '\0')
    return check_named(f, scope, scope, fn, ctx, since, err);
  /* The tag's row names the record: "orders.eu" and "ORDERS.EU" are one
  ** row where the database's collation takes them for one, and their
  ** numbers must be one key's. Nothing is learnt without the row. */
  if ((rc = frond__seg_tag_spelling(s, scope, spelt, sizeof(spelt), err)) != 0)
    return rc;
  if (f->kind == FROND_FORMAT_SEQ && strcmp(spelt, scope) != 0) {
    describe(f, scope, what, sizeof(what));
    if (lock_unless_reset(f, since) != 0)
      return AGAIN;
    rc = frond__fail(err, FROND_ETAG_INVALID,
                     "%s: the store holds the tag as \"%.128s\": the "
                     "periods' rows are named after the tag as the format "
                     "spells it, and \"%.128s:<period>\" is not a period of "
                     "\"%.128s\" in every database; give tag=%.128s",
                     what, spelt, scope, spelt, spelt);
    publish(f, FROND__FACT_REFUSED, scope, rc, err ? err->message : "");
    pthread_mutex_unlock(&f->fact.mu);
    return rc;
  }
  return check_named(f, scope, spelt, fn, ctx, since, err);
}

/* check_once, again while a reset comes during it (three times at most:
** then STORE, nothing learnt). An unkeyed format has no fact: 0. */
static int check(frond_format *f, const char *scope, frond_seg *s,
                 frond__fact_fn fn, void *ctx, frond_error *err) {
  char what[200];
  if (f->fingerprint[0] == '\0')
    return 0;
  for (int tries = 0; tries < 3; tries++) {
    int rc = check_once(f, scope, s, fn, ctx, resets_now(f), err);
    if (rc != AGAIN)
      return rc;
  }
  describe(f, scope, what, sizeof(what));
  return frond__fail(err, FROND_ESTORE,
                     "%s: the store came back three times while the check "
                     "read it: nothing learnt; check again",
                     what);
}

int frond__format_check_with(frond_format *f, const char *scope,
                             frond__fact_fn fn, void *ctx, frond_error *err) {
  return check(f, scope, NULL, fn, ctx, err);
}

int frond__format_check_seg(frond_format *f, const char *scope, frond_seg *s,
                            frond_error *err) {
  return check(f, scope, s, frond__seg_fact, s, err);
}

/* Whether the fact's scope is scope: its words up to the one that holds
** scope's end, read lock-free (the caller checks the word after). */
static int scope_is(frond_format *f, const char *scope) {
  uint64_t sw[FROND__FACT_WORDS];
  size_t last = strnlen(scope, FROND_TAG_MAX) / 8;
  scope_words(scope, sw);
  for (size_t i = 0; i <= last; i++)
    if (atomic_load_explicit(&f->fact.scope[i], memory_order_relaxed) != sw[i])
      return 0;
  return 1;
}

int frond__format_fact_ready(frond_format *f, const frond_format_source *src,
                             frond_error *err) {
  const char *scope = frond__format_scope(f, src);
  char what[200];
  uint64_t w;
  int state, same;
  /* One check's outcome, whole: its state goes with its own scope. A
  ** word marked as being written, or changed while the scope was read,
  ** is read again, after the lock (a publish holds it). */
  for (;;) {
    w = atomic_load_explicit(&f->fact.word, memory_order_acquire);
    state = FROND__FACT_STATE(w);
    if (state == FROND__FACT_SKIPPED)
      return 0;
    if ((w & FROND__FACT_WRITING) == 0) {
      same = scope_is(f, scope);
      atomic_thread_fence(memory_order_acquire);
      if (atomic_load_explicit(&f->fact.word, memory_order_relaxed) == w)
        break;
    }
    pthread_mutex_lock(&f->fact.mu);
    pthread_mutex_unlock(&f->fact.mu);
  }
  if (state == FROND__FACT_AGREED && same)
    return 0;
  if (state == FROND__FACT_REFUSED && same) {
    int code = FROND__FACT_CODE(w);
    if (err != NULL) {
      err->code = code;
      pthread_mutex_lock(&f->fact.mu);
      /* The refusal's own message, or, when a check came since, its
      ** code with the general one: the refusal stands for this issue. */
      if (atomic_load_explicit(&f->fact.word, memory_order_relaxed) == w)
        snprintf(err->message, sizeof(err->message), "%s", f->fact.why);
      else
        snprintf(err->message, sizeof(err->message), "%s",
                 frond_strerror(code));
      pthread_mutex_unlock(&f->fact.mu);
    }
    return code;
  }
  describe(f, scope, what, sizeof(what));
  return frond__fail(err, FROND_EINVAL,
                     "%s: the key's fingerprint is not checked%s: call "
                     "frond_format_check with the store, coordinator or data "
                     "directory the processes issuing them share",
                     what,
                     state == FROND__FACT_UNCHECKED ? "" : " for this source");
}

int frond_format_fingerprint(const frond_format *f, char *buf, size_t len) {
  if (f == NULL)
    return 0;
  if (buf != NULL && len > 0)
    snprintf(buf, len, "%s", f->fingerprint);
  return (int)strlen(f->fingerprint);
}

int frond_format_checked(const frond_format *f) {
  int state;
  if (f == NULL || f->fingerprint[0] == '\0')
    return 1;
  state = FROND__FACT_STATE(
      atomic_load_explicit(&f->fact.word, memory_order_acquire));
  return state == FROND__FACT_AGREED || state == FROND__FACT_SKIPPED;
}

void frond_format_recheck(frond_format *f) {
  if (f == NULL || f->fingerprint[0] == '\0')
    return;
  pthread_mutex_lock(&f->fact.mu);
  f->fact.resets++; /* a check reading the record now reads it again */
  if (FROND__FACT_STATE(atomic_load_explicit(
          &f->fact.word, memory_order_relaxed)) != FROND__FACT_SKIPPED)
    publish(f, FROND__FACT_UNCHECKED, "", 0, NULL);
  pthread_mutex_unlock(&f->fact.mu);
}

void frond_format_skip_check(frond_format *f) {
  if (f == NULL || f->fingerprint[0] == '\0')
    return;
  pthread_mutex_lock(&f->fact.mu);
  publish(f, FROND__FACT_SKIPPED, "", 0, NULL);
  pthread_mutex_unlock(&f->fact.mu);
}

/* ---- the data directory's record ----
**
** DIR/frond-fact-<name>, a checksummed record (base/record.h) of kind
** "format fact" with the keys name and value. It is created only when
** absent, and whole: written to a temporary file, synced, then linked to
** its name (link(2) fails when the name exists, so of two processes
** recording at once exactly one wins and the other reads its value),
** then the directory synced. It is never rewritten.
*/

static int fact_read(const char *path, const char *name, char *recorded,
                     size_t len, frond_error *err) {
  frond__record r;
  const char *v;
  int rc = frond__record_read(&r, path, FACT_KIND, NULL, FROND_EIO, err);
  if (rc != 0)
    return rc; /* 1: absent */
  v = frond__record_get(&r, "name");
  if (v == NULL || strcmp(v, name) != 0 ||
      frond__record_get_str(&r, "value", recorded, len) != 0)
    return frond__fail(err, FROND_EIO,
                       "%s: not the record of %s (edited or copied from "
                       "elsewhere?)",
                       path, name);
  return 0;
}

static int fact_create(const char *dir, const char *path, const char *name,
                       const char *value, frond_error *err) {
  char tmp[PATH_MAX + 64];
  frond__record r;
  uint64_t rnd = 0;
  int fd, n, rc = 0;
  frond__record_init(&r, FACT_KIND);
  frond__record_put(&r, "name", name);
  frond__record_put(&r, "value", value);
  if ((n = frond__record_finish(&r)) < 0)
    return frond__fail(err, FROND_EINVAL, "%s: the record does not fit", path);
  randombytes_buf(&rnd, sizeof(rnd)); /* a name no other writer picks */
  snprintf(tmp, sizeof(tmp), "%s.%ld.%016llx.tmp", path, (long)getpid(),
           (unsigned long long)rnd);
  if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
    return frond__fail(err, FROND_EIO, "%s: %s", tmp, strerror(errno));
  if (write(fd, r.text, (size_t)n) != n || fsync(fd) != 0)
    rc = frond__fail(err, FROND_EIO, "%s: %s", tmp, strerror(errno));
  close(fd);
  if (rc == 0 && link(tmp, path) != 0)
    rc = errno == EEXIST
             ? 1
             : frond__fail(err, FROND_EIO, "%s: %s", path, strerror(errno));
  unlink(tmp);
  if (rc == 0 && (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
    if (fsync(fd) != 0)
      rc = frond__fail(err, FROND_EIO, "%s: %s", dir, strerror(errno));
    close(fd);
  }
  return rc;
}

int frond__dir_fact(void *ctx, const char *name, const char *value,
                    char *recorded, size_t len, char *where, size_t wlen,
                    frond_error *err) {
  const char *dir = ctx;
  char path[PATH_MAX];
  int rc, i;
  if ((size_t)snprintf(path, sizeof(path), "%s/frond-fact-%s", dir, name) >=
      sizeof(path) - 64)
    return frond__fail(err, FROND_EINVAL, "data directory: path too long");
  snprintf(where, wlen, "the file %s", path);
  for (i = 0; i < 3; i++) {
    if ((rc = fact_read(path, name, recorded, len, err)) != 1)
      return rc;
    if ((rc = fact_create(dir, path, name, value, err)) != 1) {
      if (rc == 0)
        snprintf(recorded, len, "%s", value);
      return rc;
    }
  }
  return frond__fail(err, FROND_EIO, "%s: appears and vanishes", path);
}
