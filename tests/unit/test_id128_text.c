/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_id128_text.c -- the string forms of UUIDs, ULIDs and ObjectIds
** written from words (id128_text.h), and the formats' one-string paths
** that use them (id128.c):
**   - the ULID writer against a writer of one symbol at a time, for
**     values that set every bit position, and the hex writers against
**     the byte table;
**   - no writer touches a byte past its string's NUL;
**   - a format's strings, one at a time on the real clock (the leaf path
**     and its cold path at each new millisecond), parse back, increase,
**     keep their layout, and read the same as the table writes them; the
**     same under a clock the test moves (the cold path throughout), and
**     interleaved with the generator's own bytes.
*/
#include "testutil.h"

#include "core/core.h"
#include "core/formats.h"
#include "core/id128_text.h"
#include "core/rand_hot.h"

#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* The ULID of hi:lo a symbol at a time, as the spec spells it: 130 bits
** (two zero bits on top) read 5 at a time from the top. */
static void ulid_slow(uint64_t hi, uint64_t lo, char out[27]) {
  for (int i = 0; i < 26; i++) {
    int at = 125 - 5 * i; /* the symbol's lowest bit */
    unsigned v = 0;
    for (int b = 4; b >= 0; b--) {
      int bit = at + b;
      unsigned x = bit >= 128  ? 0
                   : bit >= 64 ? (unsigned)(hi >> (bit - 64)) & 1
                               : (unsigned)(lo >> bit) & 1;
      v = v << 1 | x;
    }
    out[i] = crockford[v];
  }
  out[26] = '\0';
}

/* A value of round r: single bits walking both words, then a mix. */
static void value_of(int r, uint64_t *hi, uint64_t *lo) {
  uint64_t x = (uint64_t)r * UINT64_C(0x9e3779b97f4a7c15);
  if (r < 128) {
    *hi = r >= 64 ? UINT64_C(1) << (r - 64) : 0;
    *lo = r < 64 ? UINT64_C(1) << r : 0;
    return;
  }
  *hi = x ^ (x >> 29) ^ (r & 1 ? UINT64_C(0xffffffff00000000) : 0);
  *lo = (x << 7 | x >> 57) ^ (r & 2 ? ~UINT64_C(0) : 0);
}

static void put_be(uint8_t *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8)
    p[i] = (uint8_t)v;
}

/* Every writer leaves the bytes after its NUL as they were. */
#define CANARY 0x5a
static void assert_untouched(const char *buf, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if ((unsigned char)buf[i] != CANARY)
      fail_msg("byte %zu past the string was written", i);
}

static void test_ulid_writer(void **state) {
  (void)state;
  for (int r = 0; r < 20000; r++) {
    uint64_t hi, lo;
    char want[27], got[64], viabytes[64];
    uint8_t b[16], back[16];
    frond_error err = {0, ""};
    value_of(r, &hi, &lo);
    ulid_slow(hi, lo, want);
    memset(got, CANARY, sizeof(got));
    frond__ulid_text(hi, lo, got);
    assert_string_equal(got, want);
    assert_untouched(got, 27, sizeof(got));
    put_be(b, hi);
    put_be(b + 8, lo);
    memset(viabytes, CANARY, sizeof(viabytes));
    frond_ulid_format(b, viabytes);
    assert_string_equal(viabytes, want);
    assert_untouched(viabytes, 27, sizeof(viabytes));
    assert_int_equal(frond_ulid_parse(got, 26, back, &err), 0);
    assert_memory_equal(back, b, 16);
  }
}

/* The UUID's and ObjectId's vector writers against the byte table. */
static void test_hex_writers(void **state) {
  (void)state;
  for (int r = 0; r < 20000; r++) {
    uint64_t hi, lo;
    uint8_t b[16];
    char vec[64], tab[64];
    value_of(r, &hi, &lo);
    put_be(b, hi);
    put_be(b + 8, lo);
    for (int kind = 0; kind < 2; kind++) {
      size_t len = kind == 0 ? 36 : 24;
      memset(vec, CANARY, sizeof(vec));
      memset(tab, CANARY, sizeof(tab));
      frond__hex_format_force_scalar(0);
      if (kind == 0)
        frond_uuid_format(b, vec);
      else
        frond_objectid_format(b, vec);
      frond__hex_format_force_scalar(1);
      if (kind == 0)
        frond_uuid_format(b, tab);
      else
        frond_objectid_format(b, tab);
      frond__hex_format_force_scalar(0);
      assert_string_equal(vec, tab);
      assert_int_equal(strlen(vec), len);
      assert_untouched(vec, len + 1, sizeof(vec));
    }
#ifdef FROND__TEXT_SSSE3
    if (frond__text_ssse3()) { /* the one-string paths' input: words */
      memset(vec, CANARY, sizeof(vec));
      frond__uuid_text(frond__words_v(hi, lo), vec);
      frond_uuid_format(b, tab);
      assert_string_equal(vec, tab);
      assert_untouched(vec, 37, sizeof(vec));
      memset(vec, CANARY, sizeof(vec));
      frond__objectid_text(hi, (uint32_t)(lo >> 32), vec);
      frond_objectid_format(b, tab);
      assert_string_equal(vec, tab);
      assert_untouched(vec, 25, sizeof(vec));
    }
#endif
  }
}

/* The ordered kinds first; uuid4 (3) only where order is not asked. */
static const char *const kinds[] = {"uuid7", "ulid", "objectid", "uuid4"};
static const size_t lens[] = {36, 26, 24, 36};

/* The bytes a string of kind k reads as, and the same bytes written the
** table's way (the hex writers forced to it). */
static void parse_and_rewrite(int k, const char *s, uint8_t *b, char *again) {
  frond_error err = {0, ""};
  if (k == 0) {
    assert_int_equal(frond_uuid_parse(s, 36, b, &err), 0);
    assert_int_equal(b[6] >> 4, 7); /* version */
    assert_int_equal(b[8] >> 6, 2); /* variant */
    frond__hex_format_force_scalar(1);
    frond_uuid_format(b, again);
  } else if (k == 1) {
    assert_int_equal(frond_ulid_parse(s, 26, b, &err), 0);
    frond_ulid_format(b, again);
  } else {
    assert_int_equal(frond_objectid_parse(s, 24, b, &err), 0);
    frond__hex_format_force_scalar(1);
    frond_objectid_format(b, again);
  }
  frond__hex_format_force_scalar(0);
}

/* The time of kind k's bytes: ms, seconds for an ObjectId. */
static int64_t time_of(int k, const uint8_t *b) {
  int64_t t = 0;
  for (int i = 0; i < (k == 2 ? 4 : 6); i++)
    t = t << 8 | b[i];
  return t;
}

/* The ticker's millisecond, which the generators read after it; -1 when
** it is not running (a clock read now could be a tick ahead of the
** ticker the call may find started). */
static int64_t ticker_ms(void) {
  int64_t ms;
  return frond__now_ms_hot(&ms) ? ms : -1;
}

/* n strings of kind k one at a time from f (every 7th the generator's
** bytes instead, written by the formatter): each parses, reads the same
** written the table's way, and is above the one before. */
static void one_at_a_time(int k, frond_format *f, int n, int given) {
  char prev[64] = "", s[64], again[64];
  uint8_t b[16];
  frond_error err = {0, ""};
  for (int i = 0; i < n; i++) {
    int64_t before = given ? -1 : ticker_ms();
    memset(s, CANARY, sizeof(s));
    if (i % 7 == 6) {
      uint8_t raw[16];
      if (k == 0) {
        frond_uuid7_next(f->uuid7, raw);
        frond_uuid_format(raw, s);
      } else if (k == 1) {
        frond_ulid_next(f->ulid, raw);
        frond_ulid_format(raw, s);
      } else {
        frond_objectid_next(f->oid, raw);
        frond_objectid_format(raw, s);
      }
    } else {
      assert_int_equal(frond_format_next(f, NULL, s, lens[k] + 1, &err), 0);
    }
    assert_int_equal(strlen(s), lens[k]);
    assert_untouched(s, lens[k] + 1, sizeof(s));
    parse_and_rewrite(k, s, b, again);
    assert_string_equal(again, s);
    if (before >= 0 && time_of(k, b) < (k == 2 ? before / 1000 : before))
      fail_msg("%s %d: %s is of %lld, the clock read %lld before it", kinds[k],
               i, s, (long long)time_of(k, b), (long long)before);
    if (strcmp(prev, s) >= 0)
      fail_msg("%s %d: %s after %s", kinds[k], i, s, prev);
    memcpy(prev, s, sizeof(prev));
  }
}

static void test_one_string_real_clock(void **state) {
  (void)state;
  for (int k = 0; k < 3; k++) {
    frond_format *f;
    frond_error err = {0, ""};
    assert_int_equal(frond_format_create(&f, kinds[k], NULL, NULL, NULL, &err),
                     0);
    /* the one-string path is taken wherever the CPU runs it */
    assert_int_equal(f->text_leaf != 0, frond__text_ssse3() != 0);
    one_at_a_time(k, f, 200000, 0);
    frond_format_free(f);
  }
}

/* A clock given: every string by the cold path, the time the clock's. */
static void test_one_string_given_clock(void **state) {
  (void)state;
  for (int k = 0; k < 3; k++) {
    frond_format *f;
    frond_error err = {0, ""};
    fake_clock clk;
    char s[64], again[64];
    uint8_t b[16];
    int64_t t0 = INT64_C(1767225600000);
    fake_clock_set(&clk, t0);
    assert_int_equal(
        frond_format_create(&f, kinds[k], NULL, fake_clock_read, &clk, &err),
        0);
    one_at_a_time(k, f, 3000, 1);
    fake_clock_add(&clk, 5000);
    assert_int_equal(frond_format_next(f, NULL, s, sizeof(s), &err), 0);
    parse_and_rewrite(k, s, b, again);
    if (k == 2) {
      uint64_t secs = (uint64_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
      assert_int_equal(secs, (t0 + 5000) / 1000);
    } else {
      uint64_t ms = 0;
      for (int i = 0; i < 6; i++)
        ms = ms << 8 | b[i];
      assert_int_equal(ms, t0 + 5000);
    }
    frond_format_free(f);
  }
}

/* A buffer one byte short is refused, with nothing written. */
static void test_one_string_short_buffer(void **state) {
  (void)state;
  for (int k = 0; k < 4; k++) {
    frond_format *f;
    frond_error err = {0, ""};
    char s[64];
    assert_int_equal(frond_format_create(&f, kinds[k], NULL, NULL, NULL, &err),
                     0);
    memset(s, CANARY, sizeof(s));
    assert_int_not_equal(frond_format_next(f, NULL, s, lens[k], &err), 0);
    assert_untouched(s, 0, sizeof(s));
    frond_format_free(f);
  }
}

static int cmp37(const void *a, const void *b) {
  return memcmp(a, b, 37);
}

static int cmp64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* UUIDv4 strings one at a time (the leaf path, its keystream's bytes):
** version and variant, the table's spelling, and no two alike; the same
** across a fork, parent and child. */
static void test_uuid4_one_string(void **state) {
  enum { N = 100000 };
  frond_format *f;
  frond_error err = {0, ""};
  char(*all)[37] = calloc(N, 37), again[64];
  uint64_t *words = calloc(2 * N, sizeof(uint64_t));
  uint8_t b[16];
  (void)state;
  assert_non_null(all);
  assert_non_null(words);
  assert_int_equal(frond_format_create(&f, "uuid4", NULL, NULL, NULL, &err), 0);
  assert_int_equal(f->text_leaf != 0, frond__text_ssse3() != 0);
  for (int i = 0; i < N; i++) {
    char s[64];
    memset(s, CANARY, sizeof(s));
    assert_int_equal(frond_format_next(f, NULL, s, 37, &err), 0);
    assert_int_equal(strlen(s), 36);
    assert_untouched(s, 37, sizeof(s));
    assert_int_equal(frond_uuid_parse(s, 36, b, &err), 0);
    assert_int_equal(b[6] >> 4, 4);
    assert_int_equal(b[8] >> 6, 2);
    frond__hex_format_force_scalar(1);
    frond_uuid_format(b, again);
    frond__hex_format_force_scalar(0);
    assert_string_equal(again, s);
    memcpy(all[i], s, 37);
    /* the keystream's two words, less the version and variant bits */
    for (int h = 0; h < 2; h++) {
      uint64_t w = 0;
      for (int j = 0; j < 8; j++)
        w = w << 8 | b[8 * h + j];
      words[2 * i + h] = w & ~(UINT64_C(0xf000) | UINT64_C(3) << 62);
    }
  }
  qsort(all, N, 37, cmp37);
  for (int i = 1; i < N; i++)
    if (memcmp(all[i - 1], all[i], 37) == 0)
      fail_msg("UUIDv4 %s issued twice", all[i]);
  /* no 8 bytes of keystream in two places (2 * N words of 58 bits or
  ** more: a repeat by chance is below one in ten million) */
  qsort(words, 2 * N, sizeof(words[0]), cmp64);
  for (int i = 1; i < 2 * N; i++)
    if (words[i - 1] == words[i])
      fail_msg("8 bytes of keystream in two UUIDv4s: %016llx",
               (unsigned long long)words[i]);
  free(words);
  free(all);
  frond_format_free(f);
}

/* With a fixed key, an ObjectId's five process bytes are the key's first
** five, in order, by every path. */
static void test_objectid_process_bytes(void **state) {
  static const uint8_t key[16] = {0x11, 0x22, 0x33, 0x44, 0x55, 6,  7,  8,
                                  9,    10,   11,   12,   13,   14, 15, 16};
  frond_format *f;
  frond_error err = {0, ""};
  uint8_t b[12];
  char s[64];
  (void)state;
  frond__id128_fixed_key(key);
  assert_int_equal(frond_format_create(&f, "objectid", NULL, NULL, NULL, &err),
                   0);
  frond__id128_fixed_key(NULL);
  for (int i = 0; i < 2000; i++) { /* the leaf path once the ticker runs */
    assert_int_equal(frond_format_next(f, NULL, s, sizeof(s), &err), 0);
    assert_memory_equal(s + 8, "1122334455", 10);
    frond_objectid_next(f->oid, b);
    assert_memory_equal(b + 4, key, 5);
  }
  frond_format_free(f);
}

/* Child and parent each issue CHILD_N strings of b after the fork. */
#define CHILD_N 2000

static void fork_case(int k, int how) {
  frond_format *a, *b;
  frond_error err = {0, ""};
  char(*mine)[64] = calloc(CHILD_N, 64), (*theirs)[64] = calloc(CHILD_N, 64);
  int fd[2], status;
  pid_t pid;
  assert_non_null(mine);
  assert_non_null(theirs);
  assert_int_equal(frond_format_create(&a, kinds[k], NULL, NULL, NULL, &err),
                   0);
  assert_int_equal(frond_format_create(&b, kinds[k], NULL, NULL, NULL, &err),
                   0);
  for (int i = 0; i < 2000; i++) /* b's leaf path, the ticker running */
    assert_int_equal(frond_format_next(b, NULL, mine[0], 64, &err), 0);
  assert_int_equal(pipe(fd), 0);
  if ((pid = fork_by(how)) == 0) {
    int64_t ms, until = frond_clock_realtime(NULL) + 20000;
    char s[64];
    close(fd[0]);
    /* a's calls start the child's ticker; b's first call then takes the
    ** leaf path, and only b's own fork check stops it (a UUIDv4 reads no
    ** clock, and its stream is the process', a's too: a's first call
    ** meets the keystream's fork check, and b reads the new keys) */
    do
      frond_format_next(a, NULL, s, sizeof(s), NULL);
    while (k != 3 && !frond__now_ms_hot(&ms) &&
           frond_clock_realtime(NULL) < until);
    for (int i = 0; i < CHILD_N; i++) {
      frond_format_next(b, NULL, s, 64, NULL);
      if (write(fd[1], s, 64) != 64)
        _exit(2);
    }
    _exit(k == 3 || frond__now_ms_hot(&ms) ? 0 : 3);
  }
  assert_true(pid > 0);
  close(fd[1]);
  for (int i = 0; i < CHILD_N; i++)
    assert_int_equal(frond_format_next(b, NULL, mine[i], 64, &err), 0);
  for (int i = 0; i < CHILD_N; i++)
    assert_int_equal(read(fd[0], theirs[i], 64), 64);
  close(fd[0]);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (k == 2) /* another process value */
    assert_memory_not_equal(mine[0] + 8, theirs[0] + 8, 10);
  for (int i = 0; i < CHILD_N; i++)
    for (int j = 0; j < CHILD_N; j++)
      if (strcmp(mine[i], theirs[j]) == 0)
        fail_msg("%s: parent and child both issued %s", kinds[k], mine[i]);
  free(mine);
  free(theirs);
  frond_format_free(a);
  frond_format_free(b);
}

static void test_fork_on_the_leaf_path(void **state) {
  (void)state;
#ifdef __SANITIZE_THREAD__
  /* ThreadSanitizer cannot start a thread (the child's ticker) in a child
  ** of a process with threads: the ASan build runs this. */
  skip();
#endif
  for (int k = 0; k < 4; k++)
    for (int how = 0; how < 3; how++)
      fork_case(k, how);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ulid_writer),
      cmocka_unit_test(test_hex_writers),
      cmocka_unit_test(test_one_string_real_clock),
      cmocka_unit_test(test_one_string_given_clock),
      cmocka_unit_test(test_one_string_short_buffer),
      cmocka_unit_test(test_uuid4_one_string),
      cmocka_unit_test(test_objectid_process_bytes),
      cmocka_unit_test(test_fork_on_the_leaf_path),
  };
  return frond_run_tests(tests, NULL, NULL);
}
