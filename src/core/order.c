/* SPDX-License-Identifier: Apache-2.0 */
/*
** order.c -- the keyed permutation behind order numbers, and its keys.
**
** An order number must be unique, fixed-length, and say nothing about how
** many came before it. Frond maps an ID through a permutation of the
** number's whole domain, [0, radix^width): unique because it is a
** bijection, and reversible only with the key.
**
** The permutation is a Feistel network over the two halves of the numeral
** string, as Black and Rogaway's generalized Feistel and NIST's FF1 do:
** with a = radix^ceil(w/2) and b = radix^floor(w/2) the domain is exactly
** a * b, so every output is a valid w-symbol number and no cycle-walking
** is needed (a binary Feistel over 2^ceil(log2 10^w) would walk 1.0 to 1.85
** times on average, doubling the cost for some widths).
**
** Round function: SipHash-2-4, a PRF made for short inputs under a
** 128-bit key: about 13 ns per call here, where keyed BLAKE2b
** (crypto_generichash) costs about 250 ns because the key alone fills a
** first block. The round input is one 8-byte word, the half (< 2^35) with
** the round number in the top byte; the 64-bit output is reduced to the
** half's modulus by multiply-shift (bias below 2^-29), one multiplication
** and no division. SipHash is computed inline (siphash.h), bit for bit
** libsodium's crypto_shorthash, which the first releases called: the
** same numbers, without a call, a byte-by-byte copy in and out and the
** key schedule per round.
**
** Cost, one ID at a time: the rounds are a chain, each waiting for the
** last, and a SipHash-2-4 of one word is itself a chain of 8 SipRounds of
** 4 dependent operations each (about 34 cycles, 13 ns at 2.6 GHz, inline
** or in libsodium alike). 8 rounds therefore cannot take less than about
** 105 ns on that machine, whatever the code around them; under 50 ns an
** ID takes batches (frond__perm_apply_n), where independent IDs share the
** SIMD lanes of siphash_lanes.c.
**
** Rounds: 8 by default. Patarin (CRYPTO 2004) shows 6 rounds of a random
** Feistel scheme secure against adaptive chosen plaintext and ciphertext
** attacks up to about sqrt(domain) queries, an attacker far stronger than
** one who reads order numbers; small domains (a 6-digit daily sequence
** has halves of 1000) are where Feistel ciphers have been attacked
** (Bellare, Hoang and Tessaro 2016), and 8 is what NIST's FF3-1 settled
** on. A spec may choose any even count from 4 to 32 (rounds=).
**
** Keys: a 32-byte master key per version. Each format derives its own
** SipHash key with BLAKE2b keyed by the master key over a context string
** naming the kind, radix, width and rounds (and, for keyed sequences, the
** period), so that two formats sharing a master key are unrelated.
*/
#include "core/formats.h"
#include "base/file.h"
#include "core/siphash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_rc;

static void sodium_start(void) {
  sodium_rc = sodium_init() < 0 ? -1 : 0;
}

int frond__sodium_init(frond_error *err) {
  pthread_once(&sodium_once, sodium_start);
  if (sodium_rc != 0)
    return frond__fail(err, FROND_EIO,
                       "libsodium could not start (no system randomness?)");
  return 0;
}

/* ---- the permutation ---- */

static uint64_t upow(uint64_t r, unsigned n) {
  uint64_t v = 1;
  while (n--)
    v *= r;
  return v;
}

int frond__perm_init(frond__perm *p, unsigned radix, unsigned width,
                     unsigned rounds) {
  unsigned max = radix == 10 ? FROND__PERM_MAX_WIDTH : 13;
  if ((radix != 10 && radix != 32) || width < 2 || width > max || rounds < 2 ||
      rounds > 32 || rounds % 2 != 0)
    return -1;
  p->radix = radix;
  p->width = width;
  p->rounds = rounds;
  p->adig = (width + 1) / 2;
  p->bdig = width / 2;
  p->a = upow(radix, p->adig);
  p->b = upow(radix, p->bdig);
  return 0;
}

/* A 64-bit PRF output reduced to [0, m) by multiply-shift. */
static uint64_t reduce(uint64_t h, uint64_t m) {
#if defined(__SIZEOF_INT128__)
  return (uint64_t)(((unsigned __int128)h * m) >> 64);
#else
  return h % m;
#endif
}

/* F_i(v) reduced to [0, m): SipHash-2-4 of the word i << 56 | v. */
static inline uint64_t round_f(const frond__sip_key *k, unsigned i, uint64_t v,
                               uint64_t m) {
  return reduce(frond__sip24_word(k, v | (uint64_t)i << 56), m);
}

uint64_t frond__perm_get(const uint8_t *in, unsigned radix, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++)
    v = v * radix + in[i];
  return v;
}

/* x / radix^k for the low half's k (at most 9 decimal digits): constant
** divisors, so multiplications. */
uint64_t frond__perm_div_low(const frond__perm *p, uint64_t x) {
  if (p->radix == 32)
    return x >> (5 * p->bdig);
  switch (p->bdig) {
  case 1:
    return x / 10;
  case 2:
    return x / 100;
  case 3:
    return x / 1000;
  case 4:
    return x / 10000;
  case 5:
    return x / 100000;
  case 6:
    return x / 1000000;
  case 7:
    return x / 10000000;
  case 8:
    return x / 100000000;
  case 9:
    return x / 1000000000;
  default:
    return x / p->b;
  }
}

void frond__perm_apply(const frond__perm *p, const uint8_t key[16], uint64_t x,
                       uint8_t *out) {
  uint64_t A = frond__perm_div_low(p, x), B = x - A * p->b, ma = p->a,
           mb = p->b;
  frond__sip_key k;
  frond__sip_key_init(&k, key);
  for (unsigned i = 0; i < p->rounds; i++) {
    /* (A, B) in [0,ma) x [0,mb) -> (B, (A + F(B)) mod ma). */
    uint64_t t = A + round_f(&k, i, B, ma);
    if (t >= ma)
      t -= ma;
    A = B;
    B = t;
    t = ma, ma = mb, mb = t;
  }
  frond__perm_put(p, A, B, out);
}

/* Round by round on up to 16 lanes: the kernel hashes every lane's B at
** once, then each lane does its addition. */
static void rounds_lanes(const frond__perm *p, const uint8_t key[16], size_t n,
                         uint64_t *A, uint64_t *B, const frond__sip_kernel *k) {
  uint64_t m[16] = {0}, h[16], ma = p->a, mb = p->b, t;
  for (unsigned i = 0; i < p->rounds; i++) {
    for (size_t j = 0; j < n; j++)
      m[j] = B[j] | (uint64_t)i << 56;
    k->hash16(key, m, h);
    for (size_t j = 0; j < n; j++) {
      t = A[j] + reduce(h[j], ma);
      if (t >= ma)
        t -= ma;
      A[j] = B[j];
      B[j] = t;
    }
    t = ma, ma = mb, mb = t;
  }
}

/* Up to 16 IDs side by side, all rounds in the kernel's registers when it
** can (feistel16), else round by round. */
static void apply_lanes(const frond__perm *p, const uint8_t key[16],
                        const uint64_t *x, size_t n, uint8_t *out,
                        const frond__sip_kernel *k) {
  uint64_t A[16] = {0}, B[16] = {0};
  for (size_t j = 0; j < n; j++) {
    A[j] = frond__perm_div_low(p, x[j]);
    B[j] = x[j] - A[j] * p->b;
  }
  if (k->feistel16 != NULL)
    k->feistel16(key, p->rounds, p->a, p->b, A, B);
  else
    rounds_lanes(p, key, n, A, B, k);
  frond__perm_put_n(p, A, B, n, out);
}

void frond__perm_apply_n(const frond__perm *p, const uint8_t key[16],
                         const uint64_t *x, size_t n, uint8_t *out,
                         const frond__sip_kernel *kernel) {
  if (kernel == NULL)
    frond__sip_kernels(&kernel); /* the first is the fastest */
  for (size_t i = 0; i < n; i += 16) {
    size_t k = n - i < 16 ? n - i : 16;
    if (k >= kernel->min_lanes)
      apply_lanes(p, key, x + i, k, out + i * p->width, kernel);
    else
      for (size_t j = i; j < i + k; j++)
        frond__perm_apply(p, key, x[j], out + j * p->width);
  }
}

int frond__perm_invert_by(const frond__perm *p, frond__perm_round f,
                          const void *ctx, const uint8_t *in, uint64_t *x) {
  uint64_t A = frond__perm_get(in, p->radix, p->adig);
  uint64_t B = frond__perm_get(in + p->adig, p->radix, p->bdig);
  /* After an even number of rounds the moduli are back where they began:
  ** going backwards, round i had A in [0, ma_i) with ma_i = a for even i. */
  for (unsigned i = p->rounds; i > 0; i--) {
    uint64_t ma = (i - 1) % 2 == 0 ? p->a : p->b;
    uint64_t r = reduce(f(ctx, A | (uint64_t)(i - 1) << 56), ma);
    uint64_t prevA = B >= r ? B - r : B + ma - r;
    B = A;
    A = prevA;
  }
  if (A > (UINT64_MAX - B) / p->b)
    return -1;
  *x = A * p->b + B;
  return 0;
}

static uint64_t sip_round(const void *k, uint64_t word) {
  return frond__sip24_word(k, word);
}

int frond__perm_invert(const frond__perm *p, const uint8_t key[16],
                       const uint8_t *in, uint64_t *x) {
  frond__sip_key k;
  frond__sip_key_init(&k, key);
  return frond__perm_invert_by(p, sip_round, &k, in, x);
}

void frond__perm_key(const uint8_t master[FROND_ORDER_KEY_BYTES],
                     const char *context, uint8_t out[16]) {
  crypto_generichash(out, 16, (const unsigned char *)context, strlen(context),
                     master, FROND_ORDER_KEY_BYTES);
}

unsigned frond_order_width(uint64_t max_id, unsigned radix) {
  unsigned w = 1;
  if (radix != 10 && radix != 32)
    return 0;
  while (max_id >= radix) {
    max_id /= radix;
    w++;
  }
  return w;
}

/* ---- keys ---- */

int frond__key_slot(char c) {
  if (c == '\0')
    return 0;
  if (c >= '0' && c <= '9')
    return 1 + (c - '0');
  if (c >= 'A' && c <= 'Z')
    return 11 + (c - 'A');
  return -1;
}

int frond__format_key_needed(const frond_format *f,
                             const frond_order_keys *keys, const char *none,
                             frond_error *err) {
  if (keys != NULL && keys->present[frond__key_slot(f->version)])
    return 0;
  if (f->version != '\0')
    return frond__fail(err, FROND_EKEY_INVALID,
                       "no key of version '%c' (key=%c in the spec): add "
                       "a line \"%c:<key>\" to the keys",
                       f->version, f->version, f->version);
  return frond__fail(err, FROND_EKEY_INVALID,
                     "%s: give one (a line with the key alone) or set key=V "
                     "in the spec",
                     none);
}

/* One key in hex or base64 into out. */
static int key_bytes(const char *s, size_t n, uint8_t out[32]) {
  size_t got = 0;
  const char *end = NULL;
  if (n == 64)
    return sodium_hex2bin(out, 32, s, n, NULL, &got, &end) == 0 && got == 32 &&
                   end == s + n
               ? 0
               : -1;
  if (n == 43 || n == 44) {
    static const int variants[] = {sodium_base64_VARIANT_ORIGINAL,
                                   sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
                                   sodium_base64_VARIANT_URLSAFE,
                                   sodium_base64_VARIANT_URLSAFE_NO_PADDING};
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
      if (sodium_base642bin(out, 32, s, n, NULL, &got, &end, variants[i]) ==
              0 &&
          got == 32 && end == s + n)
        return 0;
  }
  return -1;
}

static int is_sep(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',';
}

int frond_order_keys_parse(const char *text, size_t len, frond_order_keys **out,
                           frond_error *err) {
  frond_order_keys *k;
  size_t i = 0, entry = 0, line = 1;
  int any = 0, rc;
  if (out == NULL || (text == NULL && len > 0))
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  *out = NULL;
  if ((rc = frond__sodium_init(err)) != 0)
    return rc;
  if ((k = sodium_malloc(sizeof(*k))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  memset(k, 0, sizeof(*k));
  while (i < len) {
    size_t start, n;
    char version = '\0';
    const char *s, *colon;
    int slot, scheme = FROND__SCHEME_SIP;
    if (text[i] == '\n')
      line++;
    if (is_sep(text[i])) {
      i++;
      continue;
    }
    if (text[i] == '#') { /* a comment, to the end of the line */
      while (i < len && text[i] != '\n')
        i++;
      continue;
    }
    start = i;
    while (i < len && !is_sep(text[i]))
      i++;
    s = text + start;
    n = i - start;
    entry++;
    if (n >= 2 && s[1] == ':') {
      version = s[0];
      s += 2;
      n -= 2;
      if (frond__key_slot(version) <= 0) {
        rc = frond__fail(err, FROND_EKEY_INVALID,
                         "key %zu (line %zu): the version must be one "
                         "character 0-9 or A-Z",
                         entry, line);
        goto fail;
      }
    }
    /* "aes:KEY": the version's scheme (a key in hex or base64 has no
    ** ':'); without one, the first scheme, SipHash. */
    if ((colon = memchr(s, ':', n)) != NULL) {
      size_t wl = (size_t)(colon - s);
      if (wl == 3 && memcmp(s, "aes", 3) == 0)
        scheme = FROND__SCHEME_AES;
      else if (!(wl == 3 && memcmp(s, "sip", 3) == 0)) {
        rc = frond__fail(err, FROND_EKEY_INVALID,
                         "key %zu (line %zu): the scheme before the key must "
                         "be aes or sip",
                         entry, line);
        goto fail;
      }
      s += wl + 1;
      n -= wl + 1;
    }
    slot = frond__key_slot(version);
    if (k->present[slot]) {
      if (version)
        rc = frond__fail(err, FROND_EKEY_INVALID,
                         "key %zu (line %zu): version '%c' is given twice",
                         entry, line, version);
      else
        rc = frond__fail(err, FROND_EKEY_INVALID,
                         "key %zu (line %zu): the unversioned key is given "
                         "twice",
                         entry, line);
      goto fail;
    }
    if (key_bytes(s, n, k->key[slot]) != 0) {
      rc = frond__fail(err, FROND_EKEY_INVALID,
                       "key %zu (line %zu) is not 32 bytes in hex (64 "
                       "digits) or base64 (44 characters)",
                       entry, line);
      goto fail;
    }
    k->present[slot] = 1;
    k->scheme[slot] = (uint8_t)scheme;
    any = 1;
  }
  if (!any) {
    rc = frond__fail(err, FROND_EKEY_INVALID, "no key found");
    goto fail;
  }
  *out = k;
  return 0;
fail:
  sodium_free(k);
  return rc;
}

int frond_order_keys_load(const char *path, frond_order_keys **out,
                          frond_error *err) {
  char *buf;
  struct stat st;
  size_t got = 0;
  int fd, rc;
  if (out == NULL)
    return frond__fail(err, FROND_EINVAL, "out is NULL");
  *out = NULL;
  if ((rc = frond__sodium_init(err)) != 0)
    return rc;
  if (path == NULL) {
    const char *v = getenv(FROND_ORDER_KEY_ENV);
    if (v == NULL || v[0] == '\0')
      return frond__fail(err, FROND_EKEY_INVALID,
                         "no key: set " FROND_ORDER_KEY_ENV " or give a key "
                         "file");
    rc = frond_order_keys_parse(v, strlen(v), out, err);
    if (rc != 0 && err != NULL) {
      char why[sizeof(err->message)];
      snprintf(why, sizeof(why), "%s", err->message);
      frond__fail(err, rc, "%s: %s", FROND_ORDER_KEY_ENV, why);
    }
    return rc;
  }
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
    return frond__fail(err, FROND_EKEY_INVALID, "key file %s: %s", path,
                       strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return frond__fail(err, FROND_EKEY_INVALID,
                       "key file %s is not a regular file", path);
  }
  if ((st.st_mode & 0007) != 0) {
    close(fd);
    return frond__fail(err, FROND_EKEY_INVALID,
                       "key file %s is open to other users (mode %04o): "
                       "chmod o-rwx it",
                       path, (unsigned)(st.st_mode & 07777));
  }
  if (st.st_size > 65536) {
    close(fd);
    return frond__fail(err, FROND_EKEY_INVALID,
                       "key file %s is larger than 64 KiB", path);
  }
  if ((buf = sodium_malloc((size_t)st.st_size + 1)) == NULL) {
    close(fd);
    return frond__fail(err, FROND_ENOMEM, NULL);
  }
  got = frond__read_full(fd, buf, (size_t)st.st_size);
  close(fd);
  rc = frond_order_keys_parse(buf, got, out, err);
  sodium_free(buf);
  if (rc != 0 && err != NULL) {
    char why[sizeof(err->message)];
    snprintf(why, sizeof(why), "%s", err->message);
    frond__fail(err, rc, "key file %s: %s", path, why);
  }
  return rc;
}

void frond_order_keys_free(frond_order_keys *k) {
  if (k != NULL)
    sodium_free(k);
}
