/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_order.c -- order numbers: batches decode to their IDs,
** consecutive IDs give numbers with no usable pattern (measured with
** chi-square tests), check characters catch what they promise, keys
** rotate; specs and keys parse with clear errors. The permutation itself:
** test_format_perm.c.
*/
#include "format_testutil.h"

#include <math.h>
#include <sodium.h>
#include <sys/stat.h>

/* Order numbers issued in a batch (permuted side by side) are the numbers
** of increasing snowflake IDs: each decodes to its ID, which encodes back
** to the same number. A batch is what one at a time would be: the same
** bodies, and each number's date prefix the time of its own ID (a batch
** writes a date once per millisecond and reuses it). The fake clock stops
** 1 ms before an hour turns in Tokyo; a batch borrows ahead of it, 4096
** IDs a millisecond, so the hour turns inside the batch. */
static void test_next_batch(void **state) {
  enum { N = 5000 };
  static const char *const specs[] = {
      "order:digits=19,check=damm,key=1",
      "order:digits=19,check=damm,key=1,prefix=SO-%Y%m%d%H-,tz=Asia/Tokyo"};
  frond_order_keys *k = keys_of("1:" KEY0);
  char(*out)[48] = calloc(N, 48), again[48], *dir = tmpdir_make();
  (void)state;
  for (size_t s = 0; s < FROND__ARRAY_SIZE(specs); s++) {
    frond_format *f = format_of(specs[s], k);
    fake_clock clock;
    frond_gen_options o;
    frond_gen *g;
    frond_format_source src;
    int64_t prev = -1;
    size_t turns = 0;
    fake_clock_set(&clock, INT64_C(1795402800000) - 1); /* 2026-11-23 */
    frond_gen_options_init(&o);
    o.max_ahead_ms = 60000;
    o.clock = fake_clock_read;
    o.clock_ctx = &clock;
    assert_int_equal(frond_gen_create(&g, frond_layout_preset(0), 3, &o, NULL),
                     0);
    src = (frond_format_source){g, NULL, NULL, 0};
    /* The key is checked before the first number: here in a data
    ** directory, where both specs (one key, one width) agree. */
    assert_int_equal(frond_format_check(f, &src, NULL, dir, NULL), 0);
    assert_int_equal(frond_format_next_n(f, &src, N, out[0], 48, NULL), 0);
    for (int i = 0; i < N; i++) {
      frond_format_value v;
      frond_fields fl;
      assert_int_equal(frond_format_decode(f, out[i], strlen(out[i]), &v, NULL),
                       0);
      assert_true(v.id > prev);
      prev = v.id;
      assert_int_equal(frond_decode(frond_gen_layout(g), v.id, &fl, NULL), 0);
      assert_int_equal(
          frond_format_encode(f, v.id, fl.unix_ms, again, sizeof(again), NULL),
          0);
      assert_string_equal(again, out[i]);
      if (s == 1 && i > 0 && strncmp(out[i], out[i - 1], 14) != 0)
        turns++;
    }
    /* The prefixed batch saw the hour turn, once. */
    if (s == 1)
      assert_int_equal(turns, 1);
    frond_gen_close(g, NULL);
    frond_format_free(f);
  }
  frond_order_keys_free(k);
  free(out);
  tmpdir_remove(dir);
}

/* Chi-square statistic of counts against a uniform expectation. */
static double chi2(const long *count, int k, long n) {
  double e = (double)n / k, x = 0;
  for (int i = 0; i < k; i++)
    x += (count[i] - e) * (count[i] - e) / e;
  return x;
}

/*
** Critical values at p = 0.001 (the statistic a uniform source exceeds
** once in a thousand runs): chi-square with 9 degrees of freedom (10
** digit values) 27.877, with 99 (100 buckets) 148.230. The inputs and key
** are fixed, so each result is deterministic; the threshold says how
** unusual a failure would be for a truly random permutation.
*/
#define CHI2_9_P001 27.877
#define CHI2_99_P001 148.230

typedef struct stats {
  double digit_max; /* the worst position's digit statistic */
  double diff;      /* differences of consecutive numbers in 100 buckets */
  double lowdiff;   /* the same, of the last two digits only */
} stats;

/* Numbers of `n` consecutive IDs from `start` through perm (or the plain
** number when p is NULL): digit frequency per position and the spread of
** differences between neighbours. */
static void measure(const frond__perm *p, uint64_t start, long n, stats *st) {
  enum { W = 12 };
  static long digit[W][10], diff[100], low[100];
  uint64_t dom = 1000000000000ULL, prev = 0;
  memset(digit, 0, sizeof(digit));
  memset(diff, 0, sizeof(diff));
  memset(low, 0, sizeof(low));
  for (long i = 0; i < n; i++) {
    uint8_t d[W];
    uint64_t y = 0, x = start + (uint64_t)i;
    if (p != NULL)
      frond__perm_apply(p, key16, x, d);
    else
      for (int k = W - 1; k >= 0; k--, x /= 10)
        d[k] = (uint8_t)(x % 10);
    for (int k = 0; k < W; k++) {
      digit[k][d[k]]++;
      y = y * 10 + d[k];
    }
    if (i > 0) {
      uint64_t delta = (y + dom - prev) % dom;
      diff[delta / (dom / 100)]++;
      low[delta % 100]++;
    }
    prev = y;
  }
  st->digit_max = 0;
  for (int k = 0; k < W; k++) {
    double x = chi2(digit[k], 10, n);
    if (x > st->digit_max)
      st->digit_max = x;
  }
  st->diff = chi2(diff, 100, n - 1);
  st->lowdiff = chi2(low, 100, n - 1);
}

static void test_non_enumerable(void **state) {
  frond__perm p;
  stats st;
  /* A segment's first IDs, and a run of snowflake-like IDs (node 3,
  ** sequence counting up within a millisecond). */
  static const uint64_t starts[] = {1, 250552182569435136ULL % 1000000000000};
  (void)state;
  assert_int_equal(frond__perm_init(&p, 10, 12, 8), 0);
  for (size_t i = 0; i < FROND__ARRAY_SIZE(starts); i++) {
    measure(&p, starts[i], 200000, &st);
    print_message("12 digits from %llu: digit chi2 (worst of 12 positions) "
                  "%.1f < %.3f; differences chi2 %.1f, last two digits %.1f "
                  "< %.3f\n",
                  (unsigned long long)starts[i], st.digit_max, CHI2_9_P001,
                  st.diff, st.lowdiff, CHI2_99_P001);
    assert_true(st.digit_max < CHI2_9_P001);
    assert_true(st.diff < CHI2_99_P001);
    assert_true(st.lowdiff < CHI2_99_P001);
  }
  /* The same measures on the plain numbers fail by orders of magnitude:
  ** the test can tell a counter from a permutation. */
  measure(NULL, 1, 200000, &st);
  print_message("plain counter: digit chi2 %.0f, differences chi2 %.0f\n",
                st.digit_max, st.diff);
  assert_true(st.digit_max > 1000 * CHI2_9_P001);
  assert_true(st.diff > 1000 * CHI2_99_P001);
}

/* Damm's check digit one digit at a time, as Damm defined it: the table
** frond__damm's pairs are built from, written out again here. */
static int damm_reference(const uint8_t *v, size_t n) {
  static const uint8_t t[10][10] = {
      {0, 3, 1, 7, 5, 9, 8, 6, 4, 2}, {7, 0, 9, 2, 1, 5, 4, 8, 6, 3},
      {4, 2, 0, 6, 8, 7, 1, 3, 5, 9}, {1, 7, 5, 0, 9, 8, 3, 4, 2, 6},
      {6, 1, 2, 3, 0, 4, 5, 9, 7, 8}, {3, 6, 7, 4, 2, 0, 9, 5, 8, 1},
      {5, 8, 6, 9, 7, 2, 0, 1, 3, 4}, {8, 9, 4, 5, 3, 6, 2, 0, 1, 7},
      {9, 4, 3, 8, 6, 1, 7, 2, 0, 5}, {2, 5, 8, 1, 4, 3, 6, 7, 9, 0}};
  unsigned s = 0;
  for (size_t i = 0; i < n; i++)
    s = t[s][v[i]];
  return (int)s;
}

/* The same from the interim digit s: Damm's digit of v after one digit
** that leads from 0 to s (the table's first row holds each digit once). */
static int damm_from_reference(unsigned s, const uint8_t *v, size_t n) {
  static const uint8_t row0_at[10] = {0, 2, 9, 1, 8, 4, 7, 3, 6, 5};
  uint8_t all[64];
  all[0] = row0_at[s];
  memcpy(all + 1, v, n);
  return damm_reference(all, n + 1);
}

static void test_check_characters(void **state) {
  static const uint8_t damm572[] = {5, 7, 2};
  static const uint8_t luhn[] = {7, 9, 9, 2, 7, 3, 9, 8, 7, 1};
  frond_order_keys *k = keys_of(KEY0);
  static const char *const specs[] = {"order:digits=12,check=damm",
                                      "order:base32=10,check=mod37",
                                      "order:digits=12,check=luhn"};
  (void)state;
  /* Reference values: Damm's 572 -> 4, Luhn's 7992739871 -> 3. */
  assert_int_equal(frond__damm(damm572, 3), 4);
  /* Two digits a step, or four maps a shuffle, give Damm's digit for
  ** every length up to the longest number with a date (80 values). */
  {
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    uint8_t v[80];
    for (int round = 0; round < 8100; round++) {
      size_t n = (size_t)round % 81;
      for (size_t i = 0; i < n; i++)
        v[i] = (uint8_t)(rnd(&seed) % 10);
      assert_int_equal(frond__damm(v, n), damm_reference(v, n));
    }
  }
  /* From any interim digit, and a batch side by side (sixteen numbers a
  ** vector where the CPU has AVX-512 VBMI, the rest one by one), forced
  ** one by one too: Damm's digits of each number. */
  {
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    static uint8_t v[70 * 40];
    uint8_t from[70], got[70];
    for (int forced = 0; forced < 2; forced++) {
      frond__damm_force_scalar(forced);
      for (int round = 0; round < 400; round++) {
        size_t w = 1 + (size_t)round % 40, n = (size_t)(rnd(&seed) % 71);
        for (size_t i = 0; i < n * w; i++)
          v[i] = (uint8_t)(rnd(&seed) % 10);
        for (size_t j = 0; j < n; j++)
          from[j] = (uint8_t)(rnd(&seed) % 10);
        frond__damm_n(v, w, n, from, got);
        for (size_t j = 0; j < n; j++) {
          assert_int_equal(frond__damm_from(from[j], v + j * w, w),
                           damm_from_reference(from[j], v + j * w, w));
          assert_int_equal(got[j], damm_from_reference(from[j], v + j * w, w));
        }
      }
    }
    frond__damm_force_scalar(0);
  }
  assert_int_equal(frond__luhn(luhn, 10), 3);
  for (size_t s = 0; s < FROND__ARRAY_SIZE(specs); s++) {
    frond_format *f = format_of(specs[s], k);
    const char *alpha = s == 1 ? frond__crockford : "0123456789";
    unsigned radix = s == 1 ? 32 : 10;
    long missed_sub = 0, missed_swap = 0;
    for (int64_t id = 0; id < 300; id++) {
      char buf[64], t[64];
      frond_format_value v;
      size_t len;
      assert_int_equal(
          frond_format_encode(f, id * 7919, 0, buf, sizeof(buf), NULL), 0);
      len = strlen(buf);
      /* Every single-character substitution. */
      for (size_t i = 0; i < len; i++)
        for (unsigned d = 0; d < radix; d++) {
          if (alpha[d] == buf[i])
            continue;
          memcpy(t, buf, len + 1);
          t[i] = alpha[d];
          if (frond_format_decode(f, t, len, &v, NULL) == 0)
            missed_sub++;
        }
      /* Every transposition of neighbours that differ. */
      for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] == buf[i + 1])
          continue;
        memcpy(t, buf, len + 1);
        t[i] = buf[i + 1];
        t[i + 1] = buf[i];
        if (frond_format_decode(f, t, len, &v, NULL) == 0)
          missed_swap++;
      }
    }
    print_message("%s: %ld substitutions and %ld transpositions missed\n",
                  specs[s], missed_sub, missed_swap);
    assert_int_equal(missed_sub, 0);
    if (s < 2) /* Damm and mod 37 catch every one; Luhn misses 09 <-> 90 */
      assert_int_equal(missed_swap, 0);
    frond_format_free(f);
  }
  frond_order_keys_free(k);
}

/* Keys rotate: numbers made under version 1 still decode after the format
** moved to version 2, each picking its key by the version it carries. */
static void test_key_rotation(void **state) {
  frond_order_keys *k = keys_of("1:" KEY0 "\n# the new one\n2:" KEY1 "\n");
  frond_order_keys *only2 = keys_of("2:" KEY1);
  frond_format *v1 = format_of("order:digits=12,check=damm,key=1", k);
  frond_format *v2 = format_of("order:digits=12,check=damm,key=2", k);
  frond_format *v2only = format_of("order:digits=12,check=damm,key=2", only2);
  frond_format_value v;
  frond_error err = {0, ""};
  char a[32], b[32];
  (void)state;
  assert_int_equal(frond_format_encode(v1, 12345, 0, a, sizeof(a), NULL), 0);
  assert_int_equal(frond_format_encode(v2, 12345, 0, b, sizeof(b), NULL), 0);
  assert_int_equal(a[0], '1');
  assert_int_equal(b[0], '2');
  assert_int_equal(strlen(a), 14);
  assert_int_equal(frond_format_decode(v2, a, strlen(a), &v, &err), 0);
  assert_int_equal(v.id, 12345);
  assert_int_equal(v.key_version, '1');
  assert_int_equal(frond_format_decode(v2, b, strlen(b), &v, &err), 0);
  assert_int_equal(v.id, 12345);
  assert_int_equal(v.key_version, '2');
  /* Without the old key, an old number is a KEY_INVALID, not a wrong ID. */
  assert_int_equal(frond_format_decode(v2only, a, strlen(a), &v, &err),
                   FROND_EKEY_INVALID);
  assert_non_null(strstr(err.message, "version '1'"));
  frond_format_free(v1);
  /* A spec asking for a version the keys lack. */
  assert_int_equal(
      frond_format_create(&v1, "order:digits=12,key=3", k, NULL, NULL, &err),
      FROND_EKEY_INVALID);
  assert_non_null(strstr(err.message, "version '3'"));
  /* No keys at all. */
  assert_int_equal(
      frond_format_create(&v1, "order:digits=12", NULL, NULL, NULL, &err),
      FROND_EKEY_INVALID);
  assert_non_null(strstr(err.message, "no unversioned key"));
  frond_format_free(v2);
  frond_format_free(v2only);
  frond_order_keys_free(k);
  frond_order_keys_free(only2);
}

static void test_encode_errors_and_prefix(void **state) {
  frond_order_keys *k = keys_of(KEY0);
  frond_format *f =
      format_of("order:digits=12,prefix=SO-%Y%m%d-,tz=Asia/Tokyo", k);
  frond_format_value v;
  frond_error err = {0, ""};
  char buf[64], small[8];
  (void)state;
  /* 2026-11-22T15:30:00Z is already the 23rd in Tokyo. */
  assert_int_equal(frond_format_encode(f, 42, INT64_C(1795361400000), buf,
                                       sizeof(buf), &err),
                   0);
  assert_memory_equal(buf, "SO-20261123-", 12);
  assert_int_equal(strlen(buf), 24);
  /* Lower case reads too; the date comes back as its local midnight. */
  buf[0] = 's';
  buf[1] = 'o';
  assert_int_equal(frond_format_decode(f, buf, strlen(buf), &v, &err), 0);
  assert_int_equal(v.id, 42);
  assert_string_equal(v.period, "20261123");
  assert_int_equal(v.unix_ms, INT64_C(1795359600000));
  assert_int_equal(
      frond_format_encode(f, INT64_C(1000000000000), 0, buf, sizeof(buf), &err),
      FROND_EID_TOO_LARGE);
  assert_non_null(strstr(err.message, "needs 13 digits"));
  assert_non_null(strstr(err.message, "19 digits"));
  assert_int_equal(frond_format_encode(f, -1, 0, buf, sizeof(buf), &err),
                   FROND_EID_INVALID);
  assert_int_equal(frond_format_encode(f, 1, 0, small, sizeof(small), &err),
                   FROND_EINVAL);
  /* Wrong shapes are ID_INVALID with the reason. */
  assert_int_equal(
      frond_format_decode(f, "XX-20261123-000000000000", 24, &v, &err),
      FROND_EID_INVALID);
  assert_non_null(strstr(err.message, "prefix"));
  assert_int_equal(
      frond_format_decode(f, "SO-20261123-00000000000", 23, &v, &err),
      FROND_EID_INVALID);
  assert_int_equal(
      frond_format_decode(f, "SO-20261123-0000000000000", 25, &v, &err),
      FROND_EID_INVALID);
  assert_non_null(strstr(err.message, "longer"));
  assert_int_equal(frond_order_width(INT64_MAX, 10), 19);
  assert_int_equal(frond_order_width(INT64_MAX, 32), 13);
  assert_int_equal(frond_order_width(999999, 10), 6);
  assert_int_equal(frond_order_width(1000000, 10), 7);
  assert_int_equal(frond_order_width(1, 7), 0);
  frond_format_free(f);
  /* Base32: hyphens, lower case and aliases read back. */
  frond_order_keys_free(k);
  k = keys_of("K:" KEY2);
  f = format_of("order:base32=13,check=mod37,key=K", k);
  assert_int_equal(frond_format_encode(f, 7, 0, buf, sizeof(buf), NULL), 0);
  {
    char t[80];
    size_t j = 0;
    for (size_t i = 0; buf[i]; i++) {
      char c = buf[i] >= 'A' && buf[i] <= 'Z' ? (char)(buf[i] + 32) : buf[i];
      t[j++] = c == '0' ? 'o' : c == '1' ? 'l' : c;
      if (i % 4 == 3)
        t[j++] = '-';
    }
    assert_int_equal(frond_format_decode(f, t, j, &v, &err), 0);
    assert_int_equal(v.id, 7);
  }
  frond_format_free(f);
  frond_order_keys_free(k);
}

static void test_specs(void **state) {
  frond_order_keys *k = keys_of(KEY0 "\n1:" KEY1 "\nA:" KEY2);
  static const char *const good[][2] = {
      {"order:digits=12", "order:digits=12,check=none,rounds=8,tz=UTC"},
      {"order:digits=12,check=damm,prefix=%Y%m%d,key=1,rounds=10",
       "order:digits=12,check=damm,key=1,rounds=10,prefix=%Y%m%d,tz=UTC"},
      {"order:base32=13,check=mod37,key=A,tag=orders,tz=+08:00",
       "order:base32=13,check=mod37,key=A,rounds=8,tz=+08:00,tag=orders"},
      {"seq:tag=orders,digits=6", "seq:tag=orders,period=day,digits=6,"
                                  "check=none,tz=UTC"},
      {"seq:tag=o,period=month,digits=6,key=1,check=luhn,prefix=INV-,tz=UTC",
       "seq:tag=o,period=month,digits=6,check=luhn,key=1,rounds=8,prefix=INV-,"
       "tz=UTC"},
      {"base62", "base62"},
      {"base32:tag=x", "base32:tag=x"},
      {"uuid7", "uuid7"},
      {"ulid", "ulid"},
      {"objectid", "objectid"},
      {"uuid4", "uuid4"},
      {"decimal", "decimal"},
  };
  static const char *const bad[][2] = {
      {"", "not a format"},
      {"order", "exactly one of digits"},
      {"order:", "nothing after"},
      {"order:digits=12,base32=5", "exactly one of digits"},
      {"order:digits=5", "out of range 6..19"},
      {"order:digits=20", "out of range 6..19"},
      {"order:base32=14", "out of range 6..13"},
      {"order:digits=12,check=mod37", "goes with base32"},
      {"order:base32=12,check=damm", "goes with digits"},
      {"order:digits=12,check=crc", "is not none, damm"},
      {"order:digits=12,key=12", "one character"},
      {"order:digits=12,key=A", "a digit 0-9"},
      {"order:base32=12,key=U", "upper-case base32"},
      {"order:digits=12,rounds=7", "even number"},
      {"order:digits=12,rounds=2", "even number"},
      {"order:digits=12,prefix=%Q", "followed by one of"},
      {"order:digits=12,prefix=a,b", "not key=value"},
      {"order:digits=12,prefix=a b", "not allowed"},
      {"order:digits=12,prefix=", "has no value"},
      {"order:digits=12,tz=Mars/Olympus", "unknown"},
      {"order:digits=12,tz=../../etc/passwd", "not a zone name"},
      {"order:digits=12,digits=13", "given twice"},
      {"order:digits=12,", "ends with ','"},
      {"order:digits=12,period=day", "order takes no key 'period'"},
      {"seq:digits=6", "needs tag="},
      {"seq:tag=o,digits=6,prefix=%Y", "literal text"},
      {"seq:tag=o,digits=6,rounds=8", "rounds= needs key="},
      {"seq:tag=o,digits=3,key=1", "at least 4"},
      {"seq:tag=o,digits=6,period=week", "not day, month or year"},
      {"uuid7:tag=x", "uuid7 takes no key 'tag'"},
      {"uuid8", "not a format"},
  };
  (void)state;
  for (size_t i = 0; i < FROND__ARRAY_SIZE(good); i++) {
    frond_format *f = format_of(good[i][0], k), *g;
    char spec[256];
    frond_format_spec(f, spec, sizeof(spec));
    if (strcmp(spec, good[i][1]) != 0)
      fail_msg("'%s' printed as '%s', want '%s'", good[i][0], spec, good[i][1]);
    g = format_of(spec, k);
    frond_format_free(f);
    frond_format_free(g);
  }
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    frond_format *f;
    frond_error err = {0, ""};
    int rc = frond_format_create(&f, bad[i][0], k, NULL, NULL, &err);
    if (rc != FROND_EFORMAT_INVALID)
      fail_msg("'%s' gave %s, want FORMAT_INVALID", bad[i][0],
               frond_err_name(rc));
    if (strstr(err.message, bad[i][1]) == NULL)
      fail_msg("'%s': message '%s' lacks '%s'", bad[i][0], err.message,
               bad[i][1]);
  }
  frond_order_keys_free(k);
}

static void test_keys(void **state) {
  frond_order_keys *k;
  frond_error err = {0, ""};
  char *dir = tmpdir_make(), path[600];
  FILE *f;
  static const char *const bad[][2] = {
      {"", "no key"},
      {"# only a comment\n", "no key"},
      {"abc", "not 32 bytes"},
      {KEY0 "00", "not 32 bytes"},
      {"1:" KEY0 "\n1:" KEY1, "version '1' is given twice"},
      {KEY0 "," KEY1, "unversioned key is given twice"},
      {"a:" KEY0, "version must be"},
      {"1:" KEY0 "\n\n!:" KEY1, "line 3"},
  };
  (void)state;
  /* Hex and base64 (with or without padding, either alphabet). */
  k = keys_of("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
  assert_memory_equal(k->key[0], "\x00\x01\x02\x03", 4);
  frond_order_keys_free(k);
  k = keys_of("7:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8");
  assert_true(k->present[frond__key_slot('7')]);
  assert_memory_equal(k->key[frond__key_slot('7')] + 28, "\x1c\x1d\x1e\x1f", 4);
  frond_order_keys_free(k);
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    if (frond_order_keys_parse(bad[i][0], strlen(bad[i][0]), &k, &err) !=
        FROND_EKEY_INVALID)
      fail_msg("'%s' was accepted", bad[i][0]);
    if (strstr(err.message, bad[i][1]) == NULL)
      fail_msg("'%s': '%s' lacks '%s'", bad[i][0], err.message, bad[i][1]);
  }
  /* Files: refused while others may read them. */
  snprintf(path, sizeof(path), "%s/order.key", dir);
  assert_non_null(f = fopen(path, "w"));
  fprintf(f, "# rotated 2026-11\n1:%s\n2:%s\n", KEY0, KEY1);
  fclose(f);
  chmod(path, 0644);
  assert_int_equal(frond_order_keys_load(path, &k, &err), FROND_EKEY_INVALID);
  assert_non_null(strstr(err.message, "chmod o-rwx"));
  chmod(path, 0600);
  assert_int_equal(frond_order_keys_load(path, &k, &err), 0);
  assert_true(k->present[frond__key_slot('2')]);
  frond_order_keys_free(k);
  strcat(path, ".missing");
  assert_int_equal(frond_order_keys_load(path, &k, &err), FROND_EKEY_INVALID);
  /* The environment. */
  unsetenv(FROND_ORDER_KEY_ENV);
  assert_int_equal(frond_order_keys_load(NULL, &k, &err), FROND_EKEY_INVALID);
  assert_non_null(strstr(err.message, FROND_ORDER_KEY_ENV));
  setenv(FROND_ORDER_KEY_ENV, "1:" KEY0 " 2:" KEY1, 1);
  assert_int_equal(frond_order_keys_load(NULL, &k, &err), 0);
  assert_true(k->present[frond__key_slot('1')]);
  frond_order_keys_free(k);
  setenv(FROND_ORDER_KEY_ENV, "nope", 1);
  assert_int_equal(frond_order_keys_load(NULL, &k, &err), FROND_EKEY_INVALID);
  assert_non_null(strstr(err.message, FROND_ORDER_KEY_ENV ": key 1"));
  unsetenv(FROND_ORDER_KEY_ENV);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_next_batch),
      cmocka_unit_test(test_non_enumerable),
      cmocka_unit_test(test_check_characters),
      cmocka_unit_test(test_key_rotation),
      cmocka_unit_test(test_encode_errors_and_prefix),
      cmocka_unit_test(test_specs),
      cmocka_unit_test(test_keys),
  };
  return frond_run_tests(tests, NULL, NULL);
}
