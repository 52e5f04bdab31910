/* SPDX-License-Identifier: Apache-2.0 */
/*
** format_decode.c -- reading ID strings: by format (order and seq numbers,
** the plain and 128-bit shapes) and by shape alone.
**
** Decoding is strict about shape (length, alphabet, date ranges, check)
** and lenient where Crockford asks for it (case, aliases, hyphens in
** base32 numbers). Writing and issuing them: format.c.
*/
#include "core/formats.h"

#include <inttypes.h>
#include <string.h>

/* The unix ms at which local time (days, secs into the day) happens, the
** offset taken where it applies (the later instant across a gap). */
static int64_t local_to_unix_ms(const frond__tz *tz, int64_t days,
                                int64_t secs) {
  int64_t local = days * 86400 + secs;
  int64_t guess = local - frond__tz_offset(tz, local, NULL);
  return (local - frond__tz_offset(tz, guess, NULL)) * 1000;
}

typedef struct reader {
  const char *s;
  size_t len, pos;
  int b32; /* base32: skip hyphens, accept aliases */
} reader;

/* The next symbol's character, or -1 at the end. */
static int rd_next(reader *r) {
  while (r->b32 && r->pos < r->len && r->s[r->pos] == '-')
    r->pos++;
  return r->pos < r->len ? (unsigned char)r->s[r->pos++] : -1;
}

/* The value of the next symbol of the number's alphabet, or -1. */
static int rd_symbol(reader *r, unsigned radix) {
  int c = rd_next(r);
  if (c < 0)
    return -1;
  if (radix == 10)
    return c >= '0' && c <= '9' ? c - '0' : -1;
  return frond__crockford_value((unsigned char)c);
}

static int rd_digits(reader *r, unsigned n, int64_t *v, uint8_t *vals) {
  *v = 0;
  for (unsigned i = 0; i < n; i++) {
    int c = rd_next(r);
    if (c < '0' || c > '9')
      return -1;
    vals[i] = (uint8_t)(c - '0');
    *v = *v * 10 + (c - '0');
  }
  return 0;
}

static int lower(int c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

#define BADID(...) frond__fail(err, FROND_EID_INVALID, __VA_ARGS__)
#define SHOW(s, len) (int)((len) > 64 ? 64 : (len)), (s)

/* Read [version][body][check]; vals holds nv checked values before. */
static int read_number(const frond_format *f, reader *r, uint8_t *vals,
                       size_t nv, uint8_t *body, char *version,
                       frond_error *err) {
  int v;
  *version = '\0';
  if (f->version != '\0') {
    if ((v = rd_symbol(r, f->radix)) < 0)
      return BADID("'%.*s': no key version where one belongs",
                   SHOW(r->s, r->len));
    *version = frond__format_alphabet(f)[v];
    vals[nv++] = (uint8_t)v;
  }
  for (unsigned i = 0; i < f->width; i++) {
    if ((v = rd_symbol(r, f->radix)) < 0)
      return BADID("'%.*s' is not %zu characters of this format (%s)",
                   SHOW(r->s, r->len), f->length,
                   f->radix == 10 ? "decimal digits"
                                  : "Crockford base32 characters");
    body[i] = (uint8_t)v;
    vals[nv++] = (uint8_t)v;
  }
  if (f->check != FROND__CHECK_NONE) {
    int c = rd_next(r), want = (unsigned char)frond__format_check(f, vals, nv);
    int got = c < 0            ? -1
              : f->radix == 10 ? c
                               : frond__crockford_check_value((unsigned char)c);
    if (f->radix == 32)
      want = frond__crockford_check_value((unsigned char)want);
    if (got < 0)
      return BADID("'%.*s' has no check character", SHOW(r->s, r->len));
    if (got != want)
      return BADID("'%.*s': the check character does not match (a mistyped "
                   "or made-up number)",
                   SHOW(r->s, r->len));
  }
  while (r->b32 && r->pos < r->len && r->s[r->pos] == '-')
    r->pos++;
  if (r->pos != r->len)
    return BADID("'%.*s' is longer than this format's %zu characters",
                 SHOW(r->s, r->len), f->length);
  return 0;
}

static int key_of(const frond_format *f, char version, int *slot,
                  frond_error *err) {
  *slot = frond__key_slot(version);
  if (*slot < 0 || f->keys == NULL || !f->keys->present[*slot])
    return frond__fail(err, FROND_EKEY_INVALID,
                       "no key of version '%c' to decode this number", version);
  return 0;
}

static int date_ok(int64_t y, int64_t m, int64_t d) {
  static const unsigned dm[12] = {31, 29, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1 || d > dm[m - 1])
    return 0;
  return m != 2 || d < 29 || (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
}

static int decode_order(const frond_format *f, reader *r,
                        frond_format_value *out, frond_error *err) {
  uint8_t vals[80], body[FROND__PERM_MAX_WIDTH];
  int64_t y = -1, mon = -1, day = -1, hour = 0, doy = -1, v;
  size_t nv = 0, np = 0;
  uint64_t x;
  char version;
  int slot, rc;
  for (size_t i = 0; i < f->nprefix; i++) {
    const frond__pitem *it = &f->prefix[i];
    if (it->type == FROND__P_LIT) {
      for (unsigned k = 0; k < it->len; k++, r->pos++)
        if (r->pos >= r->len || lower((unsigned char)r->s[r->pos]) !=
                                    lower(f->prefix_text[it->off + k]))
          return BADID("'%.*s' does not start with this format's prefix",
                       SHOW(r->s, r->len));
      continue;
    }
    if (rd_digits(r, it->len, &v, vals + nv) != 0)
      return BADID("'%.*s': the date in the prefix is not %u digits",
                   SHOW(r->s, r->len), it->len);
    memcpy(out->period + np, r->s + r->pos - it->len, it->len);
    nv += it->len;
    np += it->len;
    switch (it->type) {
    case FROND__P_Y4:
      y = v;
      break;
    case FROND__P_Y2:
      y = 2000 + v;
      break;
    case FROND__P_MON:
      mon = v;
      break;
    case FROND__P_DAY:
      day = v;
      break;
    case FROND__P_HOUR:
      hour = v;
      break;
    default:
      doy = v;
      break;
    }
  }
  out->period[np] = '\0';
  if ((rc = read_number(f, r, vals, nv, body, &version, err)) != 0)
    return rc;
  if ((rc = key_of(f, version, &slot, err)) != 0)
    return rc;
  if ((f->dscheme[slot] == FROND__SCHEME_AES
           ? frond__aes_perm_invert(&f->perm, &f->aes[slot], body, &x)
           : frond__perm_invert(&f->perm, f->dkey[slot], body, &x)) != 0 ||
      x > (uint64_t)INT64_MAX)
    return BADID("'%.*s' decodes to no 64-bit ID: another key made it, or it "
                 "is not a number of this format",
                 SHOW(r->s, r->len));
  out->has_id = 1;
  out->id = (int64_t)x;
  out->key_version = version;
  if (f->tag_len > 0)
    memcpy(out->tag, f->tag, f->tag_len + 1);
  if (y >= 0 && hour < 24 &&
      ((mon >= 0 && day >= 0 && date_ok(y, mon, day)) ||
       (doy >= 1 && doy <= 366))) {
    int64_t days =
        doy >= 1 ? frond__days_from_civil(y, 1, 1) + doy - 1
                 : frond__days_from_civil(y, (unsigned)mon, (unsigned)day);
    out->has_time = 1;
    out->unix_ms = local_to_unix_ms(f->tz, days, hour * 3600);
  }
  return 0;
}

static int decode_seq(const frond_format *f, reader *r, frond_format_value *out,
                      frond_error *err) {
  uint8_t vals[80], body[FROND__PERM_MAX_WIDTH], key[16];
  int64_t period, y, m = 1, d = 1;
  uint64_t x = 0;
  char version;
  int slot, rc;
  for (size_t i = 0; i < f->nprefix; i++) {
    const frond__pitem *it = &f->prefix[i];
    for (unsigned k = 0; k < it->len; k++, r->pos++)
      if (r->pos >= r->len || lower((unsigned char)r->s[r->pos]) !=
                                  lower(f->prefix_text[it->off + k]))
        return BADID("'%.*s' does not start with this format's prefix",
                     SHOW(r->s, r->len));
  }
  if (rd_digits(r, f->period_len, &period, vals) != 0)
    return BADID("'%.*s': no %u-digit period where one belongs",
                 SHOW(r->s, r->len), f->period_len);
  y = f->period_kind == FROND__PERIOD_DAY     ? period / 10000
      : f->period_kind == FROND__PERIOD_MONTH ? period / 100
                                              : period;
  if (f->period_kind == FROND__PERIOD_DAY) {
    m = period / 100 % 100;
    d = period % 100;
  } else if (f->period_kind == FROND__PERIOD_MONTH)
    m = period % 100;
  if (!date_ok(y, m, d))
    return BADID("'%.*s': %0*" PRId64 " is not a date", SHOW(r->s, r->len),
                 (int)f->period_len, period);
  memcpy(out->period, r->s + r->pos - f->period_len, f->period_len);
  out->period[f->period_len] = '\0';
  if ((rc = read_number(f, r, vals, f->period_len, body, &version, err)) != 0)
    return rc;
  if (f->keyed) {
    if ((rc = key_of(f, version, &slot, err)) != 0)
      return rc;
    if (f->dscheme[slot] == FROND__SCHEME_AES)
      return BADID("'%.*s': key version '%c' is an aes key, which no seq "
                   "number is made with",
                   SHOW(r->s, r->len), version ? version : '-');
    if ((rc = frond__seq_key_for(f, slot, period, key, err)) != 0)
      return rc;
    if (frond__perm_invert(&f->perm, key, body, &x) != 0 ||
        x > (uint64_t)f->max_id)
      return BADID("'%.*s' decodes to no sequence number: another key made it",
                   SHOW(r->s, r->len));
  } else {
    for (unsigned i = 0; i < f->width; i++)
      x = x * f->radix + body[i];
  }
  out->has_id = 1;
  out->id = (int64_t)x;
  out->key_version = version;
  out->has_time = 1;
  out->unix_ms = frond__period_start(f->tz, f->period_kind, period);
  /* The spec check keeps "<tag>:<period>" within FROND_TAG_MAX. */
  memcpy(out->tag, f->tag, f->tag_len);
  out->tag[f->tag_len] = ':';
  memcpy(out->tag + f->tag_len + 1, out->period, f->period_len + 1);
  return 0;
}

/* Decimal 0..INT64_MAX, base62 (11) or base32 (13) into *id. */
static int read_plain(int kind, const char *s, size_t len, int64_t *id) {
  uint64_t v = 0;
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    int d;
    unsigned radix = kind == FROND_FORMAT_DECIMAL  ? 10
                     : kind == FROND_FORMAT_BASE62 ? 62
                                                   : 32;
    if (kind == FROND_FORMAT_BASE32 && s[i] == '-')
      continue;
    d = kind == FROND_FORMAT_DECIMAL
            ? (s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : -1)
        : kind == FROND_FORMAT_BASE62
            ? frond__base62_value((unsigned char)s[i])
            : frond__crockford_value((unsigned char)s[i]);
    if (d < 0 || v > ((uint64_t)INT64_MAX - (uint64_t)d) / radix)
      return d < 0 ? -1 : -2;
    v = v * radix + (uint64_t)d;
    n++;
  }
  if (n == 0 || (kind == FROND_FORMAT_DECIMAL && n > 19) ||
      (kind == FROND_FORMAT_BASE62 && n != 11) ||
      (kind == FROND_FORMAT_BASE32 && n != 13))
    return -1;
  *id = (int64_t)v;
  return 0;
}

static int decode_plain(int kind, const char *s, size_t len,
                        frond_format_value *out, frond_error *err) {
  int rc = read_plain(kind, s, len, &out->id);
  if (rc == -2)
    return BADID("'%.*s' is too large (an ID is 0..9223372036854775807)",
                 SHOW(s, len));
  if (rc != 0)
    return BADID("'%.*s' is not a %s ID (%s)", SHOW(s, len),
                 frond_format_kind_name(kind),
                 kind == FROND_FORMAT_DECIMAL ? "1 to 19 digits"
                 : kind == FROND_FORMAT_BASE62
                     ? "11 characters of 0-9A-Za-z"
                     : "13 Crockford base32 characters");
  out->kind = kind;
  out->has_id = 1;
  return 0;
}

static void uuid_value(const uint8_t u[16], frond_format_value *out) {
  memcpy(out->bytes, u, 16);
  out->nbytes = 16;
  out->uuid_version = u[6] >> 4;
  out->kind = out->uuid_version == 7 ? FROND_FORMAT_UUID7 : FROND_FORMAT_UUID4;
  if (out->uuid_version == 7) {
    out->has_time = 1;
    out->unix_ms = 0;
    for (int i = 0; i < 6; i++)
      out->unix_ms = out->unix_ms << 8 | u[i];
  }
}

static int decode_uuid(const char *s, size_t len, frond_format_value *out,
                       frond_error *err) {
  uint8_t u[16];
  int rc = frond_uuid_parse(s, len, u, err);
  if (rc != 0)
    return rc;
  if ((u[8] & 0xc0) != 0x80 || ((u[6] >> 4) != 7 && (u[6] >> 4) != 4))
    return BADID("'%.*s' is a UUID of version %d, variant %d: frond decodes "
                 "versions 4 and 7 of RFC 9562's variant",
                 SHOW(s, len), u[6] >> 4, u[8] >> 6);
  uuid_value(u, out);
  return 0;
}

static int decode_ulid(const char *s, size_t len, frond_format_value *out,
                       frond_error *err) {
  uint8_t u[16];
  int rc = frond_ulid_parse(s, len, u, err);
  if (rc != 0)
    return rc;
  out->kind = FROND_FORMAT_ULID;
  memcpy(out->bytes, u, 16);
  out->nbytes = 16;
  out->has_time = 1;
  for (int i = 0; i < 6; i++)
    out->unix_ms = out->unix_ms << 8 | u[i];
  return 0;
}

static int decode_objectid(const char *s, size_t len, frond_format_value *out,
                           frond_error *err) {
  uint8_t o[12];
  int rc = frond_objectid_parse(s, len, o, err);
  if (rc != 0)
    return rc;
  out->kind = FROND_FORMAT_OBJECTID;
  memcpy(out->bytes, o, 12);
  out->nbytes = 12;
  out->has_time = 1;
  out->unix_ms = (int64_t)((uint32_t)o[0] << 24 | (uint32_t)o[1] << 16 |
                           (uint32_t)o[2] << 8 | o[3]) *
                 1000;
  memcpy(out->process, o + 4, 5);
  out->counter = (uint64_t)o[9] << 16 | (uint64_t)o[10] << 8 | o[11];
  return 0;
}

/* A string of a format with scope=node holds a snowflake ID: out->id. */
static int node_scoped(const frond_format *f, frond_format_value *out) {
  if (!f->node_scope)
    return 0;
  out->has_id = 1;
  out->id = (int64_t)frond__id_in(f->kind, out->bytes);
  out->counter = 0;
  memset(out->process, 0, sizeof(out->process));
  return 0;
}

/* A plain kind's string as written, without undoing its layout. */
static int decode_raw(const frond_format *f, const char *s, size_t len,
                      frond_format_value *out, frond_error *err) {
  int rc;
  memset(out, 0, sizeof(*out));
  if ((rc = decode_plain(f->kind, s, len, out, err)) != 0)
    return rc;
  if (f->tag_len > 0)
    memcpy(out->tag, f->tag, f->tag_len + 1);
  return 0;
}

int frond_format_decode(const frond_format *f, const char *s, size_t len,
                        frond_format_value *out, frond_error *err) {
  reader r;
  if (f == NULL || out == NULL || (s == NULL && len > 0))
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  memset(out, 0, sizeof(*out));
  out->kind = f->kind;
  switch (f->kind) {
  case FROND_FORMAT_UUID7:
  case FROND_FORMAT_UUID4: {
    int rc = decode_uuid(s, len, out, err);
    if (rc == 0 && out->kind != f->kind)
      return BADID("'%.*s' is a UUID of version %d, not %d", SHOW(s, len),
                   out->uuid_version, f->kind == FROND_FORMAT_UUID7 ? 7 : 4);
    return rc != 0 ? rc : node_scoped(f, out);
  }
  case FROND_FORMAT_ULID: {
    int rc = decode_ulid(s, len, out, err);
    return rc != 0 ? rc : node_scoped(f, out);
  }
  case FROND_FORMAT_OBJECTID: {
    int rc = decode_objectid(s, len, out, err);
    return rc != 0 ? rc : node_scoped(f, out);
  }
  case FROND_FORMAT_ORDER:
  case FROND_FORMAT_SEQ:
    r.s = s;
    r.len = len;
    r.pos = 0;
    r.b32 = f->radix == 32;
    return f->kind == FROND_FORMAT_ORDER ? decode_order(f, &r, out, err)
                                         : decode_seq(f, &r, out, err);
  default: {
    int rc = decode_raw(f, s, len, out, err);
    uint64_t shard;
    if (rc != 0)
      return rc;
    /* The ID the layout wrote (reverse=, shard=). */
    out->id = frond__layout_invert(f, out->id, &shard);
    return 0;
  }
  }
}

static int all_of(const char *s, size_t len, const char *set) {
  for (size_t i = 0; i < len; i++)
    if (s[i] == '\0' || strchr(set, s[i]) == NULL)
      return 0;
  return len > 0;
}

int frond_format_decode_any(const char *s, size_t len, frond_format_value *out,
                            frond_error *err) {
  static const char hex[] = "0123456789abcdefABCDEF";
  static const char digits[] = "0123456789";
  if (out == NULL || (s == NULL && len > 0))
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  memset(out, 0, sizeof(*out));
  if (len == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-')
    return decode_uuid(s, len, out, err);
  if (len == 32 && all_of(s, len, hex))
    return decode_uuid(s, len, out, err);
  if (len == 24 && all_of(s, len, hex))
    return decode_objectid(s, len, out, err);
  if (len == 26)
    return decode_ulid(s, len, out, err);
  if (all_of(s, len, digits))
    return decode_plain(FROND_FORMAT_DECIMAL, s, len, out, err);
  if (len == 13)
    return decode_plain(FROND_FORMAT_BASE32, s, len, out, err);
  if (len == 11)
    return decode_plain(FROND_FORMAT_BASE62, s, len, out, err);
  return BADID("'%.*s' is not a decimal number, nor a UUID, ULID, ObjectId, "
               "or base62 (11 characters) or base32 (13) ID",
               SHOW(s, len));
}

int frond_format_shard_in(const frond_format *f, const char *s, size_t len,
                          uint64_t *shard, frond_error *err) {
  frond_format_value v;
  int rc;
  if (f == NULL || shard == NULL || (s == NULL && len > 0))
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if (frond_format_shard_bits(f) == 0)
    return frond__fail(err, FROND_EINVAL, "the format has no shard= bits");
  if ((rc = decode_raw(f, s, len, &v, err)) != 0)
    return rc;
  (void)frond__layout_invert(f, v.id, shard);
  return 0;
}
