/* SPDX-License-Identifier: Apache-2.0 */
/*
** format.c -- writing ID strings: encode, and issue new ones from a
** source. Reading them: format_decode.c.
**
** An order or seq number is [prefix][date][version][body][check]. The
** check character covers every symbol the number is made of (date fields,
** version, body), not literal prefix text.
*/
#include "core/core.h"
#include "core/formats.h"
#include "core/id128_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define CHUNK 256

/* Local calendar fields of unix ms in zone tz. */
typedef struct local_tm {
  int64_t year;
  unsigned mon, day, hour, doy;
} local_tm;

static void local_time(const frond__tz *tz, int64_t ms, local_tm *t) {
  int64_t sec = frond__floor_div(ms, 1000);
  int64_t local = sec + frond__tz_offset(tz, sec, NULL);
  int64_t days = frond__floor_div(local, 86400);
  frond__civil_from_days(days, &t->year, &t->mon, &t->day);
  t->hour = (unsigned)((local - days * 86400) / 3600);
  t->doy = (unsigned)(days - frond__days_from_civil(t->year, 1, 1) + 1);
}

/* v mod 10^n as n decimal digits; each digit's value also into vals. */
static void put_digits(int64_t v, unsigned n, char *out, uint8_t *vals) {
  if (v < 0)
    v = -v;
  for (unsigned i = n; i > 0; i--) {
    out[i - 1] = (char)('0' + v % 10);
    vals[i - 1] = (uint8_t)(v % 10);
    v /= 10;
  }
}

const char *frond__format_alphabet(const frond_format *f) {
  return f->radix == 10 ? "0123456789" : frond__crockford;
}

char frond__format_check(const frond_format *f, const uint8_t *vals,
                         size_t nv) {
  switch (f->check) {
  case FROND__CHECK_DAMM:
    return (char)('0' + frond__damm(vals, nv));
  case FROND__CHECK_LUHN:
    return (char)('0' + frond__luhn(vals, nv));
  default:
    return frond__crockford[frond__mod37(vals, nv)];
  }
}

/* The value of the version character in the number's alphabet. */
static uint8_t version_value(const frond_format *f, char c) {
  return (uint8_t)(f->radix == 10 ? c - '0'
                                  : frond__crockford_value((unsigned char)c));
}

/* Write [version][body][check] at out, given the checked values so far;
** returns the characters written. */
static size_t finish_number(const frond_format *f, char version,
                            const uint8_t *body, char *out, uint8_t *vals,
                            size_t nv) {
  size_t pos = 0;
  if (version != '\0') {
    out[pos++] = version;
    vals[nv++] = version_value(f, version);
  }
  {
    /* Symbols apart from values, neither aliasing the other: decimal
    ** digits are one vector add. */
    const uint8_t *restrict b = body;
    char *restrict o = out + pos;
    unsigned w = f->width;
    memcpy(vals + nv, b, w);
    if (f->radix == 10)
      for (unsigned i = 0; i < w; i++)
        o[i] = (char)('0' + b[i]);
    else
      for (unsigned i = 0; i < w; i++)
        o[i] = frond__crockford[b[i]];
    pos += w;
    nv += w;
  }
  if (f->check != FROND__CHECK_NONE)
    out[pos++] = frond__format_check(f, vals, nv);
  return pos;
}

static void plain_body(const frond_format *f, uint64_t v, uint8_t *body) {
  for (unsigned i = f->width; i > 0; i--) {
    body[i - 1] = (uint8_t)(v % f->radix);
    v /= f->radix;
  }
}

static int too_large(const frond_format *f, int64_t id, frond_error *err) {
  unsigned need = frond_order_width((uint64_t)id, f->radix);
  return frond__fail(err, FROND_EID_TOO_LARGE,
                     "ID %" PRId64 " needs %u %s, the format has %u (every "
                     "snowflake ID fits 19 digits or 13 base32 characters)",
                     id, need, f->radix == 10 ? "digits" : "base32 characters",
                     f->width);
}

/* The prefix of an order number made at unix ms `ms`: literal text and
** date fields, into out (returned: its length); the date digits' values
** go to vals (*nv of them). */
static size_t write_prefix(const frond_format *f, int64_t ms, char *out,
                           uint8_t *vals, size_t *nv) {
  size_t pos = 0;
  local_tm t = {0, 0, 0, 0, 0};
  *nv = 0;
  if (f->prefix_dates)
    local_time(f->tz, ms, &t);
  for (size_t i = 0; i < f->nprefix; i++) {
    const frond__pitem *it = &f->prefix[i];
    int64_t v;
    switch (it->type) {
    case FROND__P_LIT:
      memcpy(out + pos, f->prefix_text + it->off, it->len);
      pos += it->len;
      continue;
    case FROND__P_Y4:
    case FROND__P_Y2:
      v = t.year;
      break;
    case FROND__P_MON:
      v = t.mon;
      break;
    case FROND__P_DAY:
      v = t.day;
      break;
    case FROND__P_HOUR:
      v = t.hour;
      break;
    default:
      v = t.doy;
      break;
    }
    put_digits(v, it->len, out + pos, vals + *nv);
    pos += it->len;
    *nv += it->len;
  }
  return pos;
}

/* The last prefix written, for the numbers of a batch: most share their
** millisecond, and a date in a time zone costs more than the rest of the
** number. */
typedef struct prefix_memo {
  int valid;
  int64_t ms;
  size_t len, nv;
  uint8_t damm; /* Damm's interim digit after vals and the version */
  char text[80];
  uint8_t vals[80];
} prefix_memo;

/* The memo made for ms (memo_for: when it is not). */
static void memo_make(const frond_format *f, int64_t ms, prefix_memo *memo) {
  uint8_t v;
  memo->len = write_prefix(f, ms, memo->text, memo->vals, &memo->nv);
  memo->valid = 1;
  memo->ms = ms;
  memo->damm = 0;
  if (f->check == FROND__CHECK_DAMM) {
    memo->damm = (uint8_t)frond__damm(memo->vals, memo->nv);
    if (f->version != '\0') {
      v = version_value(f, f->version);
      memo->damm = (uint8_t)frond__damm_from(memo->damm, &v, 1);
    }
  }
  /* the version follows the prefix in the text the numbers copy */
  if (f->version != '\0')
    memo->text[memo->len++] = f->version;
}

static inline void memo_for(const frond_format *f, int64_t ms,
                            prefix_memo *memo) {
  if (!memo->valid || memo->ms != ms)
    memo_make(f, ms, memo);
}

/* An order number whose permuted body (f->width symbol values) is given;
** ms is the time its date prefix shows. memo may be NULL. */
static void write_order(const frond_format *f, const uint8_t *body, int64_t ms,
                        char *out, prefix_memo *memo) {
  uint8_t vals[80];
  size_t pos, nv;
  if (memo != NULL) {
    memo_for(f, ms, memo);
    pos = memo->len - (f->version != '\0'); /* without the version */
    memcpy(out, memo->text, pos);
    memcpy(vals, memo->vals, memo->nv);
    nv = memo->nv;
  } else {
    pos = write_prefix(f, ms, out, vals, &nv);
  }
  pos += finish_number(f, f->version, body, out + pos, vals, nv);
  out[pos] = '\0';
}

/* A chunk's k order numbers, number i's body at bodies + i * f->width,
** the time its date prefix shows ms[i] (NULL: 0), into out, stride
** apart. Decimal numbers with a Damm digit are written whole but for it,
** and the chunk's checks go side by side (frond__damm_n) from the
** prefix's and version's interim digit, which the memo keeps. */
static void write_orders(const frond_format *f, const uint8_t *bodies,
                         const int64_t *ms, size_t k, char *out, size_t stride,
                         prefix_memo *memo) {
  unsigned w = f->width;
  uint8_t from[CHUNK], chk[CHUNK];
  uint16_t end[CHUNK];
  int same = 1;
  if (f->check != FROND__CHECK_DAMM || f->radix != 10) {
    for (size_t i = 0; i < k; i++)
      write_order(f, bodies + i * w, ms != NULL ? ms[i] : 0, out + i * stride,
                  memo);
    return;
  }
  for (size_t i = 0; i < k; i++) {
    char *o = out + i * stride;
    memo_for(f, ms != NULL ? ms[i] : 0, memo);
    if (memo->len == 1) /* the version alone, most often */
      o[0] = memo->text[0];
    else
      memcpy(o, memo->text, memo->len);
    end[i] = (uint16_t)(memo->len + w);
    same &= end[i] == end[0];
    from[i] = memo->damm;
  }
  /* the bodies after the heads, at one offset when all heads are as long
  ** (date fields have fixed widths: always, so far) */
  if (k > 0 && same)
    frond__perm_text_n(bodies, w, k, out + end[0] - w, stride);
  else
    for (size_t i = 0; i < k; i++)
      frond__perm_text_n(bodies + i * w, w, 1, out + i * stride + end[i] - w,
                         stride);
  frond__damm_n(bodies, w, k, from, chk);
  for (size_t i = 0; i < k; i++) {
    out[i * stride + end[i]] = (char)('0' + chk[i]);
    out[i * stride + end[i] + 1] = '\0';
  }
}

static void encode_order(const frond_format *f, int64_t id, int64_t ms,
                         char *out) {
  uint8_t body[FROND__PERM_MAX_WIDTH];
  if (f->escheme == FROND__SCHEME_AES)
    frond__aes_perm_apply(&f->perm, &f->aes[frond__key_slot(f->version)],
                          (uint64_t)id, body);
  else
    frond__perm_apply(&f->perm, f->ekey, (uint64_t)id, body);
  write_order(f, body, ms, out, NULL);
}

/* A seq number of `period` whose body (f->width symbol values: the
** permuted or plain sequence value) is given. */
static void write_seq(const frond_format *f, int64_t period,
                      const uint8_t *body, char *out) {
  uint8_t vals[80];
  size_t pos = 0;
  for (size_t i = 0; i < f->nprefix; i++) {
    memcpy(out + pos, f->prefix_text + f->prefix[i].off, f->prefix[i].len);
    pos += f->prefix[i].len;
  }
  put_digits(period, f->period_len, out + pos, vals);
  pos += f->period_len;
  pos += finish_number(f, f->version, body, out + pos, vals, f->period_len);
  out[pos] = '\0';
}

static void encode_plain(const frond_format *f, int64_t id, char *out) {
  if (f->kind == FROND_FORMAT_DECIMAL) {
    char tmp[20];
    size_t n = 0;
    do {
      tmp[n++] = (char)('0' + id % 10);
      id /= 10;
    } while (id > 0);
    for (size_t i = 0; i < n; i++)
      out[i] = tmp[n - 1 - i];
    out[n] = '\0';
  } else if (f->kind == FROND_FORMAT_BASE62) {
    frond__put_radix((uint64_t)id, 62, frond__base62, 11, out);
    out[11] = '\0';
  } else {
    frond__put_radix((uint64_t)id, 32, frond__crockford, 13, out);
    out[13] = '\0';
  }
}

int frond_format_encode(const frond_format *f, int64_t id, int64_t unix_ms,
                        char *buf, size_t len, frond_error *err) {
  if (f == NULL || buf == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if (len <= f->length)
    return frond__fail(err, FROND_EINVAL,
                       "buffer of %zu bytes, the format needs %zu", len,
                       f->length + 1);
  if (id < 0)
    return frond__fail(err, FROND_EID_INVALID, "ID %" PRId64 " is negative",
                       id);
  switch (f->kind) {
  case FROND_FORMAT_DECIMAL:
  case FROND_FORMAT_BASE62:
  case FROND_FORMAT_BASE32:
    if (f->shard_bits > 0)
      return frond__fail(err, FROND_EINVAL,
                         "a shard= format writes an ID in the shard of the "
                         "caller's key: frond_format_next_for");
    encode_plain(f, f->reverse ? (int64_t)frond__reverse63((uint64_t)id) : id,
                 buf);
    return 0;
  case FROND_FORMAT_ORDER:
    if (id > f->max_id)
      return too_large(f, id, err);
    encode_order(f, id, unix_ms, buf);
    return 0;
  default:
    return frond__fail(err, FROND_EINVAL,
                       "%s strings are not made from a 64-bit ID",
                       frond_format_kind_name(f->kind));
  }
}

/* ---- issuing ---- */

/* The time a date prefix shows for a snowflake ID: its own. */
static int64_t id_time(const frond_format_source *src, int64_t id) {
  frond_fields fl;
  if (frond_decode(frond_gen_layout(src->gen), id, &fl, NULL) != 0)
    return 0;
  return fl.unix_ms;
}

/* k IDs of `tag` (len bytes). With src->no_store, from memory only: a tag
** the allocator does not know is TAG_NOT_FOUND, and where the allocator
** would wait for its loaders (the tag's first segment, both buffers used
** up) nothing is taken and the call fails with WOULD_BLOCK. */
static int seg_take(const frond_format_source *src, const char *tag, size_t len,
                    size_t k, int64_t *ids, frond_error *err) {
  frond_seg_tag *h;
  int rc;
  if (!src->no_store)
    return frond_seg_next_n(src->seg, tag, len, k, ids, err);
  if ((rc = frond_seg_tag_find(src->seg, tag, len, &h, err)) != 0)
    return rc;
  return frond__seg_tag_next_nowait(h, k, ids, err);
}

/* The largest of k IDs. A batch is not increasing in general: a store
** that declares segment order (frond_seg_order: multi:) may hand out a
** later segment below the one before it, so a batch whose last ID fits
** may hold one that does not, and each ID is checked, never the last
** alone: this relies on no order at all, whatever the store declares. */
static int64_t max_id_of(const int64_t *ids, size_t k) {
  int64_t m = ids[0];
  for (size_t i = 1; i < k; i++)
    m = ids[i] > m ? ids[i] : m;
  return m;
}

/* Keep the IDs of ids[0..k) at or below max, in their order; how many. */
static size_t below(int64_t *ids, size_t k, int64_t max) {
  size_t j = 0;
  for (size_t i = 0; i < k; i++)
    if (ids[i] <= max)
      ids[j++] = ids[i];
  return j;
}

/* n numbers of src's IDs into out. On failure, t (when not NULL) tells
** how many were written first and how many IDs drawn were written not
** (formats.h, frond__issue_fn): a chunk with an ID too large writes the
** ones that fit before it fails. */
static int next_from_source(frond_format *f, const frond_format_source *src,
                            uint64_t shard, size_t n, char *out, size_t stride,
                            frond__issue_tally *t, frond_error *err) {
  const char *tag = f->tag_len > 0 ? f->tag : src->tag;
  int64_t ids[CHUNK], times[CHUNK];
  uint8_t bodies[CHUNK * FROND__PERM_MAX_WIDTH];
  size_t chunk = CHUNK;
  prefix_memo memo = {0, 0, 0, 0, 0, {0}, {0}};
  int64_t ms = 0, top;
  int rc;
  if (tag != NULL && src->seg == NULL)
    return frond__fail(err, FROND_EINVAL,
                       "format takes IDs of tag \"%s\" and no segment "
                       "allocator is given",
                       tag);
  if (tag == NULL && src->gen == NULL)
    return frond__fail(err, FROND_EINVAL,
                       "format takes snowflake IDs and no generator is given");
  /* Snowflake IDs a unit's worth at a time at most (the js layout's unit
  ** holds 128): a block of several units needs the wall clock to cover
  ** them all at once, which max_wait may not allow once the generator has
  ** borrowed ahead. */
  if (tag == NULL && frond_gen_layout(src->gen)->seq_bits < 8)
    chunk = (size_t)1 << frond_gen_layout(src->gen)->seq_bits;
  frond__issue_tally none;
  if (t == NULL)
    t = &none;
  t->done = t->lost = 0;
  while (n > 0) {
    size_t k = n < chunk ? n : chunk, drawn = k;
    int big = 0;
    rc = tag != NULL ? seg_take(src, tag, strlen(tag), k, ids, err)
                     : frond_gen_next_n(src->gen, k, ids, err);
    if (rc != 0) {
      /* A generator's batch takes nothing when it fails; an allocator's
      ** may have taken IDs it skips (frond_seg_next_n): counted all. */
      t->lost += tag != NULL ? k : 0;
      return rc;
    }
    /* IDs too large are skipped; the ones that fit are written first, in
    ** their order, and the call fails after them. */
    if (f->kind == FROND_FORMAT_ORDER && f->max_id < INT64_MAX &&
        (top = max_id_of(ids, k)) > f->max_id) {
      big = 1;
      k = below(ids, k, f->max_id);
      t->lost += drawn - k;
      if (k == 0)
        return too_large(f, top, err);
    }
    if (f->kind == FROND_FORMAT_ORDER && f->escheme == FROND__SCHEME_AES)
      frond__aes_perm_apply_n(&f->perm, &f->aes[frond__key_slot(f->version)],
                              (const uint64_t *)ids, k, bodies);
    else if (f->kind == FROND_FORMAT_ORDER)
      /* The IDs of a chunk are permuted side by side (order.c). */
      frond__perm_apply_n(&f->perm, f->ekey, (const uint64_t *)ids, k, bodies,
                          NULL);
    /* Segment IDs show the time they are taken: the chunk's. */
    if (f->prefix_dates && tag != NULL)
      ms = frond__seg_now_ms(src->seg);
    if (f->reverse || f->shard_bits > 0)
      for (size_t i = 0; i < k; i++)
        if ((rc = frond__layout_apply(f, shard, ids[i], &ids[i], err)) != 0) {
          t->lost += k;
          return rc;
        }
    if (f->kind != FROND_FORMAT_ORDER) {
      for (size_t i = 0; i < k; i++)
        encode_plain(f, ids[i], out + i * stride);
    } else {
      if (f->prefix_dates)
        for (size_t i = 0; i < k; i++)
          times[i] = tag != NULL ? ms : id_time(src, ids[i]);
      write_orders(f, bodies, f->prefix_dates ? times : NULL, k, out, stride,
                   &memo);
    }
    out += k * stride;
    t->done += k;
    if (big)
      return too_large(f, top, err);
    n -= drawn;
  }
  t->done = 0;
  return 0;
}

/* Order numbers without a shard: the issue function of format_cache.c. */
static int issue_order(frond_format *f, const frond_format_source *src,
                       size_t n, char *out, size_t stride,
                       frond__issue_tally *t, frond_error *err) {
  return next_from_source(f, src, 0, n, out, stride, t, err);
}

static int next_seq(frond_format *f, const frond_format_source *src, size_t n,
                    char *out, size_t stride, frond_error *err) {
  char tag[FROND_TAG_MAX + 1];
  const uint8_t *key = NULL;
  int64_t ids[CHUNK], period, start, cap;
  uint8_t bodies[CHUNK * FROND__PERM_MAX_WIDTH];
  size_t tlen;
  int rc;
  if (src->seg == NULL)
    return frond__fail(err, FROND_EINVAL,
                       "seq formats need a segment allocator");
  period = frond__period_of(&f->pc, f->tz, f->period_kind,
                            frond__seg_now_ms(src->seg), &start);
  memcpy(tag, f->tag, f->tag_len);
  tag[f->tag_len] = ':';
  tlen = f->tag_len + 1 + f->period_len;
  {
    uint8_t scratch[16];
    put_digits(period, f->period_len, tag + f->tag_len + 1, scratch);
  }
  tag[tlen] = '\0';
  if (atomic_load_explicit(&f->exhausted_period, memory_order_relaxed) ==
      period)
    return frond__fail(err, FROND_ESEQUENCE_EXHAUSTED,
                       "tag \"%s\": all %" PRId64 " numbers of the period are "
                       "used; the next period starts a new sequence",
                       tag, f->max_id);
  if (!frond__seg_period_ready(src->seg, tag, tlen)) {
    if (src->no_store)
      return frond__fail(err, FROND_EWOULD_BLOCK,
                         "tag \"%s\": the period's row is not ready in this "
                         "process yet (its first use makes it)",
                         tag);
    cap = (f->max_id + 1) / 1000;
    if ((rc = frond__seg_period_tag(src->seg, f->tag, tag, cap < 1 ? 1 : cap,
                                    err)) != 0)
      return rc;
  }
  if (f->keyed && (rc = frond__seq_key(f, period, &key, err)) != 0)
    return rc;
  while (n > 0) {
    size_t k = n < CHUNK ? n : CHUNK;
    if ((rc = seg_take(src, tag, tlen, k, ids, err)) != 0)
      return rc;
    /* Numbers past the end are skipped, never issued: on a store that
    ** declares segment order (multi:) later segments may still lie below
    ** it. A batch with none below is the period's end. */
    if (max_id_of(ids, k) > f->max_id && (k = below(ids, k, f->max_id)) == 0) {
      atomic_store(&f->exhausted_period, period);
      return frond__fail(err, FROND_ESEQUENCE_EXHAUSTED,
                         "tag \"%s\": all %" PRId64 " numbers of %u %s are "
                         "used; the next period starts a new sequence (use "
                         "more digits)",
                         tag, f->max_id, f->width,
                         f->radix == 10 ? "digits" : "base32 characters");
    }
    if (key != NULL)
      frond__perm_apply_n(&f->perm, key, (const uint64_t *)ids, k, bodies,
                          NULL);
    else
      for (size_t i = 0; i < k; i++)
        plain_body(f, (uint64_t)ids[i], bodies + i * f->width);
    for (size_t i = 0; i < k; i++, out += stride)
      write_seq(f, period, bodies + i * f->width, out);
    n -= k;
  }
  return 0;
}

/* scope=node: a string of each snowflake ID of src->gen, a unit's worth
** at a time at most (as next_from_source takes them). */
static int next_node_scoped(frond_format *f, const frond_format_source *src,
                            size_t n, char *out, size_t stride,
                            frond_error *err) {
  const frond_layout *l;
  int64_t ids[CHUNK];
  size_t chunk = CHUNK;
  uint8_t u[16];
  int rc;
  if (src->gen == NULL)
    return frond__fail(err, FROND_EINVAL,
                       "%s:scope=node is made of the process' snowflake IDs "
                       "and no generator is given",
                       frond_format_kind_name(f->kind));
  l = frond_gen_layout(src->gen);
  if (l->seq_bits < 8)
    chunk = (size_t)1 << l->seq_bits;
  while (n > 0) {
    size_t k = n < chunk ? n : chunk;
    if ((rc = frond_gen_next_n(src->gen, k, ids, err)) != 0)
      return rc;
    for (size_t i = 0; i < k; i++, out += stride) {
      int64_t ms = id_time(src, ids[i]);
      if (f->kind == FROND_FORMAT_UUID7) {
        frond__uuid7_of_id(f->uuid7, (uint64_t)ids[i], ms, u);
        frond_uuid_format(u, out);
      } else if (f->kind == FROND_FORMAT_ULID) {
        frond__ulid_of_id(f->ulid, (uint64_t)ids[i], ms, u);
        frond_ulid_format(u, out);
      } else {
        frond__objectid_of_id((uint64_t)ids[i], ms, u);
        frond_objectid_format(u, out);
      }
    }
    n -= k;
  }
  return 0;
}

/* One string of a 128-bit format by its generator's one-string path
** (id128.c: a leaf), when f->text_leaf says the CPU runs it: a tail
** call, so that the caller's path stays a leaf too. */
static inline int next_text(frond_format *f, char *out) {
#ifdef FROND__TEXT_SSSE3
  switch (f->kind) {
  case FROND_FORMAT_UUID7:
    return frond__uuid7_next_text(f->uuid7, out);
  case FROND_FORMAT_UUID4:
    return frond__uuid4_next_text(out);
  case FROND_FORMAT_ULID:
    return frond__ulid_next_text(f->ulid, out);
  default:
    return frond__objectid_next_text(f->oid, out);
  }
#else
  (void)f;
  (void)out;
  return 0; /* never: f->text_leaf is 0 without the vector code */
#endif
}

/* One string of a 128-bit format: none of a batch's loops or buffer
** (a call's saved registers are stores every ID waits on). */
static int next_one_128(frond_format *f, char *out) {
  uint8_t b[16];
  if (f->text_leaf)
    return next_text(f, out);
  switch (f->kind) {
  case FROND_FORMAT_UUID7:
    frond_uuid7_next(f->uuid7, b);
    frond_uuid_format(b, out);
    return 0;
  case FROND_FORMAT_UUID4:
    frond__uuid4_fast(b);
    frond_uuid_format(b, out);
    return 0;
  case FROND_FORMAT_ULID:
    frond_ulid_next(f->ulid, b);
    frond_ulid_format(b, out);
    return 0;
  default:
    frond_objectid_next(f->oid, b);
    frond_objectid_format(b, out);
    return 0;
  }
}

/* uuid7, ulid and objectid of the format's own generator: CHUNK values
** at a time taken in one step, then written out; uuid4: CHUNK at a time
** drawn at once from the thread's keystream. */
static int next_128(frond_format *f, size_t n, char *out, size_t stride) {
  uint8_t b[CHUNK * 16];
  while (n > 0) {
    size_t k = n < CHUNK ? n : CHUNK;
    if (f->kind == FROND_FORMAT_UUID7) {
      frond__uuid7_next_n(f->uuid7, k, b);
      for (size_t i = 0; i < k; i++, out += stride)
        frond_uuid_format(b + 16 * i, out);
    } else if (f->kind == FROND_FORMAT_UUID4) {
      frond__uuid4_next_n(k, b);
      for (size_t i = 0; i < k; i++, out += stride)
        frond_uuid_format(b + 16 * i, out);
    } else if (f->kind == FROND_FORMAT_ULID) {
      frond__ulid_next_n(f->ulid, k, b);
      for (size_t i = 0; i < k; i++, out += stride)
        frond_ulid_format(b + 16 * i, out);
    } else {
      frond__objectid_next_n(f->oid, k, b);
      for (size_t i = 0; i < k; i++, out += stride)
        frond_objectid_format(b + 12 * i, out);
    }
    n -= k;
  }
  return 0;
}

/* frond__format_fact_ready's two common answers, without a call: checks
** skipped, or agreed for snowflake IDs (the scope "" on both sides, as
** frond__format_scope gives it). */
static inline int fact_settled(frond_format *f,
                               const frond_format_source *src) {
  uint64_t w = atomic_load_explicit(&f->fact.word, memory_order_acquire);
  return FROND__FACT_STATE(w) == FROND__FACT_SKIPPED ||
         (FROND__FACT_STATE(w) == FROND__FACT_AGREED &&
          (w & (FROND__FACT_NO_SCOPE | FROND__FACT_WRITING)) ==
              FROND__FACT_NO_SCOPE &&
          f->tag_len == 0 && src->tag == NULL);
}

static inline int fact_ready(frond_format *f, const frond_format_source *src,
                             frond_error *err) {
  return fact_settled(f, src) ? 0 : frond__format_fact_ready(f, src, err);
}

/* frond_format_next_n and frond_format_next_for: shard is the caller's
** key's, for a shard= format. */
static int next_n(frond_format *f, const frond_format_source *src,
                  uint64_t shard, size_t n, char *out, size_t stride,
                  frond_error *err) {
  static const frond_format_source none = {NULL, NULL, NULL, 0};
  int rc;
  if (f == NULL || out == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if (n == 0)
    return frond__fail(err, FROND_ECOUNT_INVALID, "count must be at least 1");
  if (stride <= f->length)
    return frond__fail(err, FROND_EINVAL,
                       "stride of %zu bytes, the format needs %zu", stride,
                       f->length + 1);
  if (src == NULL)
    src = &none;
  if (f->node_scope)
    return next_node_scoped(f, src, n, out, stride, err);
  switch (f->kind) {
  case FROND_FORMAT_UUID4:
    if ((rc = frond__sodium_init(err)) != 0)
      return rc;
    __attribute__((fallthrough));
  case FROND_FORMAT_UUID7:
  case FROND_FORMAT_ULID:
  case FROND_FORMAT_OBJECTID:
    return n == 1 ? next_one_128(f, out) : next_128(f, n, out, stride);
  case FROND_FORMAT_SEQ:
    if (f->keyed && (rc = fact_ready(f, src, err)) != 0)
      return rc;
    return next_seq(f, src, n, out, stride, err);
  default:
    if ((f->kind == FROND_FORMAT_ORDER || f->shard_bits > 0) &&
        (rc = fact_ready(f, src, err)) != 0)
      return rc;
    /* One order number: from the thread's cache of a batch
    ** (format_cache.c), after the key's record was checked. */
    if (f->kind == FROND_FORMAT_ORDER && n == 1)
      return frond__order_cached(f, src, out, issue_order, err);
    return next_from_source(f, src, shard, n, out, stride, NULL, err);
  }
}

int frond_format_next_n(frond_format *f, const frond_format_source *src,
                        size_t n, char *out, size_t stride, frond_error *err) {
  if (f != NULL && f->shard_bits > 0)
    return frond__fail(err, FROND_EINVAL,
                       "a shard= format needs the caller's key on every "
                       "issue (frond_format_next_for; key= on the fronts)");
  return next_n(f, src, 0, n, out, stride, err);
}

int frond_format_next_for(frond_format *f, const frond_format_source *src,
                          const char *key, size_t key_len, size_t n, char *out,
                          size_t stride, frond_error *err) {
  uint64_t shard;
  int rc;
  if (f == NULL)
    return frond__fail(err, FROND_EINVAL, "NULL argument");
  if (f->shard_bits == 0)
    return frond__fail(err, FROND_EINVAL,
                       "a key is for shard= formats only; this one has none");
  if ((rc = frond_format_shard_of(f, key, key_len, &shard, err)) != 0)
    return rc;
  return next_n(f, src, shard, n, out, stride, err);
}

int frond_format_next(frond_format *f, const frond_format_source *src,
                      char *buf, size_t len, frond_error *err) {
  /* The common cases, next_n's steps for them without a frame of its
  ** own: a 128-bit format's string, an order number from the cache. */
  if (FROND__LIKELY(f != NULL && buf != NULL) && len > f->length) {
    if (f->text_leaf)
      return next_text(f, buf);
    if (f->order_leaf && src != NULL && fact_settled(f, src))
      return frond__order_cached(f, src, buf, issue_order, err);
  }
  return frond_format_next_n(f, src, 1, buf, len, err);
}
