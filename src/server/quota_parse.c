/* SPDX-License-Identifier: Apache-2.0 */
/*
** quota_parse.c -- the pure half of quotas (see quota.h): the rules of
** quota_client and quota_tag read from their text, the rule a name falls
** under, and a token bucket's arithmetic on its one atomic word.
**
** The bucket is GCRA. Its word tat is the time, on the bucket's clock
** (one tick per ID at the rule's rate), by which every ID taken so far
** would have been paid for. At clock time t the bucket holds
** burst - (max(tat, t) - t) IDs; taking n moves tat to max(tat, t) + n.
** So the word needs no refill step and no second word for the time of the
** last refill, and one compare-and-swap takes n IDs for the whole server.
*/
#include "server/quota.h"

#include "base/base.h"
#include "base/utf8.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- rules */

static int blank(char c) {
  return c == ' ' || c == '\t';
}

/* An integer of 1 to 13 digits in [1, max], or -1. */
static int64_t number(const char *s, size_t len, uint64_t max) {
  int64_t v;
  if (len == 0 || len > 13 || frond__parse_i64(s, len, &v) != 0 || v < 1 ||
      (uint64_t)v > max)
    return -1;
  return v;
}

int frond__quota_name_ok(const char *s, size_t len) {
  size_t i, k;
  uint32_t cp;
  for (i = 0; i < len; i += k)
    if ((k = frond__utf8_len((const unsigned char *)s + i, len - i, &cp)) ==
            0 ||
        cp < 0x20 || cp == 0x7f)
      return 0;
  return len > 0;
}

static int cmp_rule(const void *a, const void *b) {
  const frond__quota_rule *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c;
  if (x->prefix != y->prefix)
    return x->prefix - y->prefix; /* exact names first */
  if (x->prefix && x->len != y->len)
    return x->len > y->len ? -1 : 1; /* longest pattern first */
  if ((c = memcmp(x->name, y->name, n)) != 0)
    return c;
  return x->len < y->len ? -1 : x->len > y->len;
}

#define SHOWN(len) (int)((len) > 200 ? 200 : (len))

/* One item s[0..len), trimmed, into *r. */
static int item(const char *key, const char *s, size_t len, size_t max_name,
                frond__quota_rule *r, frond_error *err) {
  const char *eq = memchr(s, '=', len), *v, *sl;
  size_t nl, vl, i;
  int64_t rate, burst;
  if (len == 0)
    return frond__fail(err, FROND_EINVAL,
                       "%s: an empty rule (NAME=RATE[/BURST], "
                       "comma-separated)",
                       key);
  if (eq == NULL)
    return frond__fail(err, FROND_EINVAL,
                       "%s: \"%.*s\" is not NAME=RATE[/BURST]", key, SHOWN(len),
                       s);
  for (nl = (size_t)(eq - s); nl > 0 && blank(s[nl - 1]); nl--)
    ;
  if (nl == 0 || nl > max_name)
    return frond__fail(err, FROND_EINVAL,
                       "%s: \"%.*s\": a name of 1 to %zu bytes (or a "
                       "pattern ending in *) before =",
                       key, SHOWN(len), s, max_name);
  for (i = 0; i < nl; i++)
    if (s[i] == '/' || (s[i] == '*' && i + 1 != nl))
      return frond__fail(err, FROND_EINVAL,
                         "%s: the name \"%.*s\" has %s; * may only end a "
                         "pattern (orders:*, or * for each name)",
                         key, SHOWN(nl), s,
                         s[i] == '*' ? "a * inside it" : "a /");
  if (!frond__quota_name_ok(s, nl))
    return frond__fail(err, FROND_EINVAL,
                       "%s: the name \"%.*s\" is not UTF-8 without control "
                       "characters",
                       key, SHOWN(nl), s);
  memcpy(r->name, s, nl);
  r->name[nl] = '\0';
  r->prefix = s[nl - 1] == '*';
  r->len = nl - (size_t)r->prefix;
  for (v = eq + 1; v < s + len && blank(*v); v++)
    ;
  vl = (size_t)(s + len - v);
  sl = memchr(v, '/', vl);
  rate = number(v, sl ? (size_t)(sl - v) : vl, FROND__QUOTA_RATE_MAX);
  burst = sl ? number(sl + 1, (size_t)(v + vl - sl - 1), FROND__QUOTA_BURST_MAX)
             : rate;
  if (rate < 0 || burst < 0)
    return frond__fail(err, FROND_EINVAL,
                       "%s: \"%.*s\": RATE must be an integer in [1, %llu] "
                       "IDs a second and BURST one in [1, %llu] IDs",
                       key, SHOWN(len), s,
                       (unsigned long long)FROND__QUOTA_RATE_MAX,
                       (unsigned long long)FROND__QUOTA_BURST_MAX);
  r->rate = (uint64_t)rate;
  r->burst = (uint64_t)burst;
  return 0;
}

int frond__quota_parse(const char *key, const char *text, size_t len,
                       size_t max_name, frond__quota_rule *out, size_t cap,
                       size_t *n, frond_error *err) {
  size_t at = 0, i, il;
  const char *s, *comma;
  int rc;
  *n = 0;
  for (s = text; s < text + len && blank(*s); s++)
    ;
  if (s == text + len)
    return 0; /* no rule */
  while (at <= len) {
    s = text + at;
    comma = memchr(s, ',', len - at);
    il = comma ? (size_t)(comma - s) : len - at;
    at += il + 1;
    while (il > 0 && blank(*s))
      s++, il--;
    while (il > 0 && blank(s[il - 1]))
      il--;
    if (*n == cap)
      return frond__fail(err, FROND_EINVAL, "%s: more than %zu rules", key,
                         cap);
    if ((rc = item(key, s, il, max_name, &out[*n], err)) != 0)
      return rc;
    for (i = 0; i < *n; i++)
      if (out[i].prefix == out[*n].prefix && out[i].len == out[*n].len &&
          memcmp(out[i].name, out[*n].name, out[i].len) == 0)
        return frond__fail(err, FROND_EINVAL, "%s: \"%s\" is given twice", key,
                           out[i].name);
    ++*n;
    if (comma == NULL)
      break;
  }
  qsort(out, *n, sizeof *out, cmp_rule);
  return 0;
}

const frond__quota_rule *frond__quota_match(const frond__quota_rule *rules,
                                            size_t n, const char *name,
                                            size_t len) {
  size_t lo = 0, hi = 0, mid;
  int c;
  while (hi < n && !rules[hi].prefix)
    hi++;
  /* The exact names, sorted: a binary search. */
  while (lo < hi) {
    mid = lo + (hi - lo) / 2;
    c = memcmp(rules[mid].name, name,
               rules[mid].len < len ? rules[mid].len : len);
    if (c == 0)
      c = rules[mid].len < len ? -1 : rules[mid].len > len;
    if (c == 0)
      return &rules[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  /* The patterns, longest first: the first that fits. */
  for (; hi < n && !rules[hi].prefix; hi++)
    ;
  for (; hi < n; hi++)
    if (rules[hi].len <= len &&
        memcmp(rules[hi].name, name, rules[hi].len) == 0)
      return &rules[hi];
  return NULL;
}

/* --------------------------------------------------------------- bucket */

uint64_t frond__quota_clock(uint64_t now_ns, uint64_t rate) {
  /* rate <= 1e9: the first product fits for 584 years of uptime, the
  ** second is below 1e18. */
  return now_ns / 1000000000u * rate +
         now_ns % 1000000000u * rate / 1000000000u;
}

/*
** Where the bucket's debt starts at clock time t: tat, or t when it is
** full. A tat more than one burst ahead shows a clock read behind another
** (a thread's reading, older than the one that moved tat; or a clock that
** stepped back): the bucket is then empty, and stays so until the clock
** is past tat again. It is never lowered: a stale reading must not hand
** out what a later one has already.
*/
static uint64_t base(uint64_t tat, uint64_t t, uint64_t burst) {
  if (tat <= t)
    return t;
  return tat - t > burst ? t + burst : tat;
}

int frond__quota_bucket_take(_Atomic uint64_t *tat, uint64_t rate,
                             uint64_t burst, uint64_t now_ns, uint64_t n,
                             uint64_t *retry_s) {
  uint64_t t = frond__quota_clock(now_ns, rate), old, b, room;
  if (n > burst) {
    *retry_s = UINT64_MAX;
    return 1;
  }
  old = atomic_load_explicit(tat, memory_order_relaxed);
  for (;;) {
    b = base(old, t, burst);
    room = burst - (b - t);
    if (n > room) {
      /* The missing IDs come back at rate a second. */
      *retry_s = (n - room + rate - 1) / rate;
      return 1;
    }
    if (atomic_compare_exchange_weak_explicit(
            tat, &old, b + n, memory_order_relaxed, memory_order_relaxed))
      return 0;
  }
}

void frond__quota_bucket_give(_Atomic uint64_t *tat, uint64_t n) {
  uint64_t old = atomic_load_explicit(tat, memory_order_relaxed);
  /* Back to where it would be without the take; a bucket that has filled
  ** since is full either way. */
  while (!atomic_compare_exchange_weak_explicit(
      tat, &old, old > n ? old - n : 0, memory_order_relaxed,
      memory_order_relaxed))
    ;
}

uint64_t frond__quota_bucket_tokens(_Atomic uint64_t *tat, uint64_t rate,
                                    uint64_t burst, uint64_t now_ns) {
  uint64_t t = frond__quota_clock(now_ns, rate);
  return burst -
         (base(atomic_load_explicit(tat, memory_order_relaxed), t, burst) - t);
}
