/* SPDX-License-Identifier: Apache-2.0 */
/*
** format_spec.c -- format specs: parsing, validation and the canonical
** form; building and freeing a format.
**
** A spec is KIND or KIND:KEY=VALUE,KEY=VALUE,... Every key may appear once;
** values run to the next comma (so a tag or prefix cannot hold one). The
** parser is a pure function of the string (apart from reading the time
** zone file) and explains every refusal: which key, which value, what
** would be accepted.
*/
#include "core/formats.h"
#include "core/id128_text.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {NULL,    "decimal", "base62", "base32",
                                         "order", "seq",     "uuid7",  "uuid4",
                                         "ulid",  "objectid"};

const char *frond_format_kind_name(int kind) {
  if (kind >= FROND_FORMAT_DECIMAL && kind <= FROND_FORMAT_OBJECTID)
    return kind_names[kind];
  return "unknown";
}

/* Keys of a spec. */
enum {
  S_DIGITS,
  S_BASE32,
  S_CHECK,
  S_KEY,
  S_PREFIX,
  S_TZ,
  S_TAG,
  S_ROUNDS,
  S_PERIOD,
  S_SCOPE,
  S_REVERSE,
  S_SHARD,
  S_COUNT
};
static const char *const key_names[S_COUNT] = {
    "digits", "base32", "check",  "key",   "prefix",  "tz",
    "tag",    "rounds", "period", "scope", "reverse", "shard"};

/* Which keys each kind takes, as a bit set, and the list for messages. */
static unsigned kind_keys(int kind, const char **list) {
  switch (kind) {
  case FROND_FORMAT_ORDER:
    *list = "digits or base32, check, key, prefix, tz, tag, rounds";
    return 1u << S_DIGITS | 1u << S_BASE32 | 1u << S_CHECK | 1u << S_KEY |
           1u << S_PREFIX | 1u << S_TZ | 1u << S_TAG | 1u << S_ROUNDS;
  case FROND_FORMAT_SEQ:
    *list = "tag, period, digits or base32, check, key, prefix, tz, rounds";
    return 1u << S_DIGITS | 1u << S_BASE32 | 1u << S_CHECK | 1u << S_KEY |
           1u << S_PREFIX | 1u << S_TZ | 1u << S_TAG | 1u << S_ROUNDS |
           1u << S_PERIOD;
  case FROND_FORMAT_DECIMAL:
  case FROND_FORMAT_BASE62:
  case FROND_FORMAT_BASE32:
    *list = "tag, reverse, shard, key";
    return 1u << S_TAG | 1u << S_REVERSE | 1u << S_SHARD | 1u << S_KEY;
  case FROND_FORMAT_UUID7:
  case FROND_FORMAT_ULID:
  case FROND_FORMAT_OBJECTID:
    *list = "scope";
    return 1u << S_SCOPE;
  default:
    *list = "none";
    return 0;
  }
}

#define BAD(...) frond__fail(err, FROND_EFORMAT_INVALID, __VA_ARGS__)

static int parse_uint(const char *v, size_t n, unsigned lo, unsigned hi,
                      unsigned *out) {
  unsigned x = 0;
  if (n == 0 || n > 3)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < '0' || v[i] > '9')
      return -1;
    x = x * 10 + (unsigned)(v[i] - '0');
  }
  if (x < lo || x > hi)
    return -1;
  *out = x;
  return 0;
}

/* A prefix pattern: literal characters A-Z a-z 0-9 _ - . / and the date
** fields %Y %y %m %d %H %j. */
static int parse_prefix(frond_format *f, const char *v, size_t n,
                        int allow_dates, frond_error *err) {
  size_t i = 0, ndate = 0;
  if (n == 0 || n > FROND__PREFIX_MAX)
    return BAD("prefix must be 1 to %d characters", FROND__PREFIX_MAX);
  memcpy(f->prefix_spec, v, n);
  f->prefix_spec[n] = '\0';
  while (i < n) {
    frond__pitem *it = &f->prefix[f->nprefix++];
    if (v[i] == '%') {
      static const char fields[] = "YymdHj";
      static const uint8_t types[] = {FROND__P_Y4,   FROND__P_Y2,
                                      FROND__P_MON,  FROND__P_DAY,
                                      FROND__P_HOUR, FROND__P_DOY};
      static const uint8_t lens[] = {4, 2, 2, 2, 2, 3};
      const char *k = i + 1 < n ? strchr(fields, v[i + 1]) : NULL;
      if (k == NULL || v[i + 1] == '\0')
        return BAD("prefix '%.*s': '%%' must be followed by one of Y y m d "
                   "H j",
                   (int)n, v);
      if (!allow_dates)
        return BAD("prefix '%.*s': a seq format writes the period's date "
                   "itself; its prefix is literal text",
                   (int)n, v);
      it->type = types[k - fields];
      f->prefix_dates = 1;
      it->len = lens[k - fields];
      i += 2;
    } else {
      size_t start = i;
      while (i < n && v[i] != '%') {
        char c = v[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
              c == '/'))
          return BAD("prefix '%.*s': character '%c' is not allowed (letters, "
                     "digits, _ - . / and %%Y %%y %%m %%d %%H %%j)",
                     (int)n, v, c);
        i++;
      }
      it->type = FROND__P_LIT;
      it->off = (uint8_t)start;
      it->len = (uint8_t)(i - start);
      memcpy(f->prefix_text + start, v + start, i - start);
    }
    f->prefix_len += it->len;
    if (it->type != FROND__P_LIT)
      ndate += it->len;
  }
  /* The date is reported back whole by decode (frond_format_value.period). */
  if (ndate > 15)
    return BAD("prefix '%.*s' has more than 15 digits of date", (int)n, v);
  return 0;
}

static int parse_check(frond_format *f, const char *v, size_t n,
                       frond_error *err) {
  static const char *const names[] = {"none", "damm", "luhn", "mod37"};
  for (int i = 0; i < 4; i++)
    if (strlen(names[i]) == n && memcmp(names[i], v, n) == 0) {
      f->check = i;
      return 0;
    }
  return BAD("check '%.*s' is not none, damm, luhn (decimal) or mod37 "
             "(base32)",
             (int)n, v);
}

static int parse_period(frond_format *f, const char *v, size_t n,
                        frond_error *err) {
  static const char *const names[] = {"day", "month", "year"};
  static const unsigned lens[] = {8, 6, 4};
  for (int i = 0; i < 3; i++)
    if (strlen(names[i]) == n && memcmp(names[i], v, n) == 0) {
      f->period_kind = FROND__PERIOD_DAY + i;
      f->period_len = lens[i];
      return 0;
    }
  return BAD("period '%.*s' is not day, month or year", (int)n, v);
}

/* Check the pieces of an order or seq spec against each other. */
static int check_numbered(frond_format *f, const unsigned *seen,
                          frond_error *err) {
  int seq = f->kind == FROND_FORMAT_SEQ;
  unsigned lo = seq ? 1 : 6, hi_dec = seq ? 18 : 19, hi_b32 = seq ? 12 : 13;
  if (seen[S_DIGITS] == seen[S_BASE32])
    return BAD("%s needs exactly one of digits=N (decimal) or base32=N "
               "(Crockford characters)",
               seq ? "seq" : "order");
  if (seq && !seen[S_TAG])
    return BAD("seq needs tag=: the segment tag whose base row the "
               "periods are made from");
  if ((f->radix == 10 && (f->width < lo || f->width > hi_dec)) ||
      (f->radix == 32 && (f->width < lo || f->width > hi_b32)))
    return BAD("%s=%u is out of range %u..%u",
               f->radix == 10 ? "digits" : "base32", f->width, lo,
               f->radix == 10 ? hi_dec : hi_b32);
  if (f->check == FROND__CHECK_MOD37 && f->radix != 32)
    return BAD("check=mod37 goes with base32=; decimal numbers take damm or "
               "luhn");
  if ((f->check == FROND__CHECK_DAMM || f->check == FROND__CHECK_LUHN) &&
      f->radix != 10)
    return BAD("check=%s goes with digits=; base32 numbers take mod37",
               f->check == FROND__CHECK_DAMM ? "damm" : "luhn");
  if (f->version != '\0' &&
      ((f->radix == 10 && (f->version < '0' || f->version > '9')) ||
       (f->radix == 32 && memchr(frond__crockford, f->version, 32) == NULL)))
    return BAD(
        "key=%c is not a key version the number can hold (%s)", f->version,
        f->radix == 10 ? "a digit 0-9" : "an upper-case base32 character");
  f->keyed = !seq || seen[S_KEY];
  if (seen[S_ROUNDS] && !f->keyed)
    return BAD("rounds= needs key=: only keyed sequences are permuted");
  if (f->keyed && f->width < 4)
    return BAD("a keyed number needs at least 4 characters (got %u)", f->width);
  if (f->keyed && frond__perm_init(&f->perm, f->radix, f->width, f->rounds))
    return BAD("rounds=%u is not an even number from 4 to 32", f->rounds);
  if (seq && f->tag_len + 1 + f->period_len > FROND_TAG_MAX)
    return BAD("tag is too long: \"<tag>:<period>\" must fit %d bytes",
               FROND_TAG_MAX);
  return 0;
}

static uint64_t upow(uint64_t r, unsigned n) {
  uint64_t v = 1;
  while (n--)
    v = v > UINT64_MAX / r ? UINT64_MAX : v * r;
  return v;
}

/* Keys the format will use: the encoding key must exist; decoding uses
** any key present. */
static int take_keys(frond_format *f, const frond_order_keys *keys,
                     frond_error *err) {
  char ctx[96];
  int slot = frond__key_slot(f->version), rc;
  if ((rc = frond__format_key_needed(f, keys, "no unversioned key", err)) != 0)
    return rc;
  if (f->kind == FROND_FORMAT_SEQ && keys->scheme[slot] == FROND__SCHEME_AES)
    return frond__fail(err, FROND_EKEY_INVALID,
                       "key version '%c' is an aes key: seq formats permute "
                       "with sip keys only (a line \"%c:<key>\")",
                       f->version ? f->version : '-',
                       f->version ? f->version : 'V');
  if ((f->keys = sodium_malloc(sizeof(*f->keys))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  memcpy(f->keys, keys, sizeof(*keys));
  memcpy(f->dscheme, keys->scheme, sizeof(f->dscheme));
  f->escheme = keys->scheme[slot];
  frond__format_fingerprint_init(f, keys->key[slot]);
  if (f->kind == FROND_FORMAT_ORDER) {
    for (int i = 0; i < FROND__KEY_SLOTS; i++) {
      if (!keys->present[i])
        continue;
      if (keys->scheme[i] == FROND__SCHEME_SIP) {
        snprintf(ctx, sizeof(ctx), "frond order v1 radix=%u width=%u rounds=%u",
                 f->radix, f->width, f->rounds);
        frond__perm_key(keys->key[i], ctx, f->dkey[i]);
        continue;
      }
      /* An AES version: its own key, never the SipHash one. */
      if (f->aes == NULL &&
          (f->aes = sodium_malloc(FROND__KEY_SLOTS * sizeof(*f->aes))) == NULL)
        return frond__fail(err, FROND_ENOMEM, NULL);
      snprintf(ctx, sizeof(ctx),
               "frond order aes v1 radix=%u width=%u rounds=%u", f->radix,
               f->width, f->rounds);
      frond__perm_key(keys->key[i], ctx, f->dkey[i]);
      frond__aes_expand(f->dkey[i], &f->aes[i]);
    }
    memcpy(f->ekey, f->dkey[slot], 16);
  }
  return 0;
}

static int build_numbered(frond_format *f, const unsigned *seen,
                          const frond_order_keys *keys, const char *tz,
                          frond_error *err) {
  int rc;
  if ((rc = check_numbered(f, seen, err)) != 0)
    return rc;
  if ((rc = frond__tz_open(tz, &f->tz, err)) != 0)
    return rc;
  if (f->keyed && (rc = take_keys(f, keys, err)) != 0)
    return rc;
  f->length = f->prefix_len + (f->version != '\0') + f->width +
              (f->check != FROND__CHECK_NONE);
  if (f->kind == FROND_FORMAT_SEQ) {
    f->length += f->period_len;
    f->max_id = (int64_t)(upow(f->radix, f->width) - 1);
    frond__period_init(&f->pc);
  } else {
    uint64_t dom = upow(f->radix, f->width);
    f->max_id = dom - 1 > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(dom - 1);
  }
  f->order_leaf =
      f->kind == FROND_FORMAT_ORDER && f->shard_bits == 0 && !f->node_scope;
  return 0;
}

static int build_generator(frond_format *f, frond_clock_fn clock, void *ctx,
                           frond_error *err) {
  switch (f->kind) {
  case FROND_FORMAT_UUID7:
    f->length = FROND_UUID_STRLEN;
    return frond_uuid7_create(&f->uuid7, clock, ctx, err);
  case FROND_FORMAT_UUID4:
    f->length = FROND_UUID_STRLEN;
    return frond__sodium_init(err);
  case FROND_FORMAT_ULID:
    f->length = FROND_ULID_STRLEN;
    return frond_ulid_create(&f->ulid, clock, ctx, err);
  case FROND_FORMAT_OBJECTID:
    f->length = FROND_OBJECTID_STRLEN;
    return frond_objectid_create(&f->oid, clock, ctx, err);
  case FROND_FORMAT_DECIMAL:
    f->length = 19;
    f->max_id = INT64_MAX;
    return 0;
  case FROND_FORMAT_BASE62:
    f->length = 11;
    f->max_id = INT64_MAX;
    return 0;
  default: /* base32 */
    f->length = 13;
    f->max_id = INT64_MAX;
    return 0;
  }
}

static int parse_spec(frond_format *f, const char *spec,
                      const frond_order_keys *keys, frond_clock_fn clock,
                      void *ctx, frond_error *err) {
  const char *colon = strchr(spec, ':'), *p, *end, *list;
  size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
  unsigned seen[S_COUNT] = {0}, allowed;
  char tz[80] = "UTC";
  int rc;
  for (f->kind = FROND_FORMAT_DECIMAL; f->kind <= FROND_FORMAT_OBJECTID;
       f->kind++)
    if (strlen(kind_names[f->kind]) == klen &&
        memcmp(kind_names[f->kind], spec, klen) == 0)
      break;
  if (f->kind > FROND_FORMAT_OBJECTID)
    return BAD("'%.*s' is not a format (decimal, base62, base32, order, seq, "
               "uuid7, uuid4, ulid, objectid)",
               (int)(klen > 40 ? 40 : klen), spec);
  allowed = kind_keys(f->kind, &list);
  f->rounds = 8;
  f->period_kind = FROND__PERIOD_DAY;
  f->period_len = 8;
  p = colon ? colon + 1 : spec + klen;
  end = spec + strlen(spec);
  if (colon && p == end)
    return BAD("nothing after '%s:'", kind_names[f->kind]);
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *item_end = comma ? comma : end;
    const char *eq = memchr(p, '=', (size_t)(item_end - p));
    const char *v;
    size_t n, vlen;
    int k;
    if (eq == NULL)
      return BAD("'%.*s' is not key=value", (int)(item_end - p), p);
    n = (size_t)(eq - p);
    v = eq + 1;
    vlen = (size_t)(item_end - v);
    for (k = 0; k < S_COUNT; k++)
      if (strlen(key_names[k]) == n && memcmp(key_names[k], p, n) == 0)
        break;
    if (k == S_COUNT || !(allowed & 1u << k))
      return BAD("%s takes no key '%.*s' (keys: %s)", kind_names[f->kind],
                 (int)(n > 32 ? 32 : n), p, list);
    if (seen[k]++)
      return BAD("'%s' given twice", key_names[k]);
    if (vlen == 0)
      return BAD("'%s' has no value", key_names[k]);
    switch (k) {
    case S_DIGITS:
    case S_BASE32:
      f->radix = k == S_DIGITS ? 10 : 32;
      if (parse_uint(v, vlen, 1, 99, &f->width) != 0)
        return BAD("%s '%.*s' is not a number", key_names[k], (int)vlen, v);
      break;
    case S_ROUNDS:
      if (parse_uint(v, vlen, 4, 32, &f->rounds) != 0 || f->rounds % 2 != 0)
        return BAD("rounds '%.*s' is not an even number from 4 to 32",
                   (int)vlen, v);
      break;
    case S_CHECK:
      if ((rc = parse_check(f, v, vlen, err)) != 0)
        return rc;
      break;
    case S_KEY:
      if (vlen != 1 || frond__key_slot(v[0]) <= 0)
        return BAD("key '%.*s' is not one character 0-9 or A-Z", (int)vlen, v);
      f->version = v[0];
      break;
    case S_PREFIX:
      if ((rc = parse_prefix(f, v, vlen, f->kind == FROND_FORMAT_ORDER, err)) !=
          0)
        return rc;
      break;
    case S_TZ:
      if (vlen >= sizeof(tz))
        return BAD("tz is too long");
      memcpy(tz, v, vlen);
      tz[vlen] = '\0';
      break;
    case S_TAG:
      if (frond_tag_validate(v, vlen, err) != 0) {
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        return BAD("tag: %s", why);
      }
      memcpy(f->tag, v, vlen);
      f->tag[vlen] = '\0';
      f->tag_len = vlen;
      break;
    case S_REVERSE:
      if (vlen == 3 && memcmp(v, "yes", 3) == 0)
        f->reverse = 1;
      else if (!(vlen == 2 && memcmp(v, "no", 2) == 0))
        return BAD("reverse '%.*s' is not yes or no", (int)vlen, v);
      break;
    case S_SHARD:
      if (parse_uint(v, vlen, 1, 16, &f->shard_bits) != 0)
        return BAD("shard '%.*s' is not a number of bits from 1 to 16 (the "
                   "ID keeps 63 - S bits)",
                   (int)vlen, v);
      break;
    case S_SCOPE:
      if (vlen == 4 && memcmp(v, "node", 4) == 0)
        f->node_scope = 1;
      else if (!(vlen == 6 && memcmp(v, "random", 6) == 0))
        return BAD("scope '%.*s' is not random (unique with high probability) "
                   "or node (unique by the process' node ID)",
                   (int)vlen, v);
      break;
    default:
      if ((rc = parse_period(f, v, vlen, err)) != 0)
        return rc;
      break;
    }
    p = comma ? comma + 1 : end;
    if (comma && p == end)
      return BAD("spec ends with ','");
  }
  if (f->kind == FROND_FORMAT_ORDER || f->kind == FROND_FORMAT_SEQ)
    return build_numbered(f, seen, keys, tz, err);
  if (f->reverse && f->shard_bits > 0)
    return BAD("reverse and shard do not combine: shard= keeps the ID whole "
               "below its bits, reverse=yes moves every bit");
  if (seen[S_KEY] && f->shard_bits == 0)
    return BAD("key= goes with shard=: only the shard's hash is keyed");
  if ((rc = build_generator(f, clock, ctx, err)) != 0)
    return rc;
  f->text_leaf =
      (f->kind == FROND_FORMAT_UUID7 || f->kind == FROND_FORMAT_UUID4 ||
       f->kind == FROND_FORMAT_ULID || f->kind == FROND_FORMAT_OBJECTID) &&
      !f->node_scope && frond__text_ssse3();
  return frond__layout_init(f, keys, err);
}

int frond_format_create(frond_format **out, const char *spec,
                        const frond_order_keys *keys, frond_clock_fn clock,
                        void *clock_ctx, frond_error *err) {
  frond_format *f;
  int rc;
  if (out == NULL || spec == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  *out = NULL;
  if (strlen(spec) > 512)
    return BAD("spec is longer than 512 bytes");
  if ((f = calloc(1, sizeof(*f))) == NULL)
    return frond__fail(err, FROND_ENOMEM, NULL);
  frond__format_fact_init(f);
  f->serial = frond__serial();
  if ((rc = parse_spec(f, spec, keys, clock, clock_ctx, err)) != 0) {
    frond_format_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

void frond_format_free(frond_format *f) {
  frond__pkey *k, *older;
  if (f == NULL)
    return;
  if (f->kind == FROND_FORMAT_SEQ && f->tz != NULL)
    frond__period_destroy(&f->pc);
  for (k = atomic_load(&f->pkey); k != NULL; k = older) {
    older = k->older;
    sodium_memzero(k->key, sizeof(k->key));
    free(k);
  }
  frond__tz_free(f->tz);
  if (f->keys != NULL)
    sodium_free(f->keys);
  if (f->aes != NULL)
    sodium_free(f->aes); /* sodium_free wipes it */
  frond_uuid7_free(f->uuid7);
  frond_ulid_free(f->ulid);
  frond_objectid_free(f->oid);
  sodium_memzero(f->dkey, sizeof(f->dkey));
  sodium_memzero(f->ekey, sizeof(f->ekey));
  frond__format_fact_free(f);
  free(f);
}

int frond_format_kind(const frond_format *f) {
  return f->kind;
}

int frond_format_node_scoped(const frond_format *f) {
  return f->node_scope;
}

size_t frond_format_length(const frond_format *f) {
  return f->length;
}

const char *frond_format_tag(const frond_format *f) {
  return f->tag_len > 0 ? f->tag : NULL;
}

int64_t frond_format_max_id(const frond_format *f) {
  return f->max_id;
}

int frond_format_spec(const frond_format *f, char *buf, size_t len) {
  static const char *const checks[] = {"none", "damm", "luhn", "mod37"};
  static const char *const periods[] = {"", "day", "month", "year"};
  const char *kind = kind_names[f->kind];
  char key[8] = "", tag[FROND_TAG_MAX + 8] = "", prefix[48] = "";
  char rounds[16] = "";
  if (f->node_scope)
    return snprintf(buf, len, "%s:scope=node", kind);
  if (f->kind != FROND_FORMAT_ORDER && f->kind != FROND_FORMAT_SEQ) {
    char lay[24] = "";
    if (f->reverse)
      snprintf(lay, sizeof(lay), "reverse=yes");
    else if (f->shard_bits > 0)
      snprintf(lay, sizeof(lay), "shard=%u%s%.1s", f->shard_bits,
               f->version != '\0' ? ",key=" : "", &f->version);
    if (f->tag_len > 0)
      snprintf(tag, sizeof(tag), "%stag=%s", lay[0] ? "," : "", f->tag);
    return lay[0] || tag[0] ? snprintf(buf, len, "%s:%s%s", kind, lay, tag)
                            : snprintf(buf, len, "%s", kind);
  }
  if (f->version != '\0')
    snprintf(key, sizeof(key), ",key=%c", f->version);
  if (f->nprefix > 0)
    snprintf(prefix, sizeof(prefix), ",prefix=%s", f->prefix_spec);
  if (f->keyed)
    snprintf(rounds, sizeof(rounds), ",rounds=%u", f->rounds);
  if (f->kind == FROND_FORMAT_SEQ)
    return snprintf(
        buf, len, "seq:tag=%s,period=%s,%s=%u,check=%s%s%s%s,tz=%s", f->tag,
        periods[f->period_kind], f->radix == 10 ? "digits" : "base32", f->width,
        checks[f->check], key, rounds, prefix, frond__tz_name(f->tz));
  if (f->tag_len > 0)
    snprintf(tag, sizeof(tag), ",tag=%s", f->tag);
  return snprintf(buf, len, "order:%s=%u,check=%s%s%s%s,tz=%s%s",
                  f->radix == 10 ? "digits" : "base32", f->width,
                  checks[f->check], key, rounds, prefix, frond__tz_name(f->tz),
                  tag);
}
