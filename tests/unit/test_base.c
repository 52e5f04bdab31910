/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_base.c -- the bottom layer: numbers, UTF-8, JSON escaping, durable
** files, checksummed record files, and the process key that tells a child
** of any fork.
*/
#include "testutil.h"

#include "base/escape.h"
#include "base/file.h"
#include "base/fork.h"
#include "base/record.h"
#include "base/utf8.h"

#include <inttypes.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- numbers ---- */

static void test_parse_i64(void **state) {
  static const struct {
    const char *s;
    int rc;
    int64_t v;
  } cases[] = {
      {"0", 0, 0},
      {"-0", 0, 0},
      {"007", 0, 7},
      {"9223372036854775807", 0, INT64_MAX},
      {"-9223372036854775808", 0, INT64_MIN},
      {"9223372036854775808", -1, 0},
      {"-9223372036854775809", -1, 0},
      {"", -1, 0},
      {"-", -1, 0},
      {"+1", -1, 0},
      {" 1", -1, 0},
      {"1x", -1, 0},
  };
  (void)state;
  for (size_t i = 0; i < FROND__ARRAY_SIZE(cases); i++) {
    int64_t v = 42;
    int rc = frond__parse_i64(cases[i].s, strlen(cases[i].s), &v);
    assert_int_equal(rc, cases[i].rc);
    if (rc == 0)
      assert_true(v == cases[i].v);
  }
}

static void test_dec(void **state) {
  static const uint64_t u[] = {0,
                               1,
                               9,
                               10,
                               99,
                               100,
                               12345,
                               UINT32_MAX,
                               (uint64_t)INT64_MAX,
                               UINT64_MAX,
                               UINT64_C(10000000000000000000)};
  static const int64_t s[] = {0, -1, 42, -100, INT64_MIN, INT64_MAX};
  char got[FROND__DEC_MAX + 1], want[32];
  (void)state;
  for (size_t i = 0; i < FROND__ARRAY_SIZE(u); i++) {
    got[frond__dec_u64(got, u[i])] = '\0';
    snprintf(want, sizeof(want), "%" PRIu64, u[i]);
    assert_string_equal(got, want);
  }
  for (size_t i = 0; i < FROND__ARRAY_SIZE(s); i++) {
    got[frond__dec_i64(got, s[i])] = '\0';
    snprintf(want, sizeof(want), "%" PRId64, s[i]);
    assert_string_equal(got, want);
  }
  /* Every value from 0 to 100,000 and around every power of ten. */
  for (uint64_t v = 0; v <= 100000; v++) {
    got[frond__dec_u64(got, v)] = '\0';
    snprintf(want, sizeof(want), "%" PRIu64, v);
    assert_string_equal(got, want);
  }
  for (uint64_t p = 10; p <= UINT64_C(10000000000000000000); p *= 10) {
    for (uint64_t v = p - 1; v <= p + 1; v++) {
      got[frond__dec_u64(got, v)] = '\0';
      snprintf(want, sizeof(want), "%" PRIu64, v);
      assert_string_equal(got, want);
    }
    if (p > UINT64_MAX / 10)
      break;
  }
}

/* ---- UTF-8 and JSON ---- */

static void test_utf8(void **state) {
  static const struct {
    const char *s;
    size_t n, len;
    uint32_t cp;
  } cases[] = {
      {"a", 1, 1, 'a'},
      {"\xc3\xa9", 2, 2, 0xe9},
      {"\xe2\x82\xac", 3, 3, 0x20ac},
      {"\xf0\x9d\x84\x9e", 4, 4, 0x1d11e},
      {"\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff},
      {"\xc0\x80", 2, 0, 0},         /* overlong NUL */
      {"\xe0\x80\xaf", 3, 0, 0},     /* overlong '/' */
      {"\xed\xa0\x80", 3, 0, 0},     /* a surrogate */
      {"\xf4\x90\x80\x80", 4, 0, 0}, /* above U+10FFFF */
      {"\xc3", 1, 0, 0},             /* truncated */
      {"\x80", 1, 0, 0},             /* a lone continuation */
      {"\xff", 1, 0, 0},
  };
  (void)state;
  for (size_t i = 0; i < FROND__ARRAY_SIZE(cases); i++) {
    uint32_t cp = 0;
    size_t len =
        frond__utf8_len((const unsigned char *)cases[i].s, cases[i].n, &cp);
    assert_int_equal(len, cases[i].len);
    if (len != 0)
      assert_int_equal(cp, cases[i].cp);
  }
}

static void test_json_escape(void **state) {
  char out[64];
  size_t n;
  (void)state;
  n = frond__json_escape("q\"b\\s/", 6, out, sizeof out);
  assert_string_equal(out, "q\\\"b\\\\s/");
  assert_int_equal(n, strlen(out));
  frond__json_escape("\b\f\n\r\t\v\x01\x1f\x7f", 9, out, sizeof out);
  assert_string_equal(out, "\\b\\f\\n\\r\\t\\u000b\\u0001\\u001f\\u007f");
  /* Valid UTF-8 passes; each invalid byte becomes U+FFFD. */
  frond__json_escape("\xc3\xa9\xc3\xff", 4, out, sizeof out);
  assert_string_equal(out, "\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd");
  /* A NUL inside the input is escaped, not an end. */
  frond__json_escape("a\0b", 3, out, sizeof out);
  assert_string_equal(out, "a\\u0000b");
  /* Never a character or an escape cut in half, always a NUL. */
  assert_int_equal(frond__json_escape("\xc3\xa9", 2, out, 2), 0);
  assert_string_equal(out, "");
  assert_int_equal(frond__json_escape("a\n", 2, out, 3), 1);
  assert_string_equal(out, "a");
  assert_int_equal(frond__json_escape("a\x01", 2, out, 7), 1);
  assert_int_equal(frond__json_escape("a\x01", 2, out, 8), 7);
  assert_int_equal(frond__json_escape("abc", 3, out, 0), 0);
}

/* ---- record files ---- */

static char *slurp(const char *path, size_t *len) {
  static char buf[FROND__RECORD_MAX + 64];
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  *len = fread(buf, 1, sizeof(buf) - 1, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

static void put_file(const char *path, const char *s, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(s, 1, len, f), len);
  fclose(f);
}

/* The FNV-1a of s as the 16 hex digits a record's checksum is. */
static void sum_of(const char *s, size_t n, char *out) {
  snprintf(out, 17, "%016" PRIx64, frond__fnv1a64(s, n));
}

static void test_record_round_trip(void **state) {
  char *dir = tmpdir_make(), path[600], sum[17], want[512];
  frond__record w, r;
  frond_error err = {0, ""};
  const char *why = NULL;
  size_t len;
  char *text;
  int64_t v;
  uint64_t u;
  (void)state;
  snprintf(path, sizeof(path), "%s/x.rec", dir);
  frond__record_init(&w, "test kind");
  frond__record_put(&w, "name", "a b=c \xc3\xa9");
  frond__record_put(&w, "empty", "");
  frond__record_put_i64(&w, "neg", INT64_MIN);
  frond__record_put_u64(&w, "big", (uint64_t)INT64_MAX);
  frond__record_put_i64(&w, "zero", 0);
  assert_int_equal(frond__record_write(&w, path, &err), 0);
  text = slurp(path, &len);
  snprintf(want, sizeof(want),
           "# frond test kind\nname=a b=c \xc3\xa9\nempty=\n"
           "neg=-9223372036854775808\nbig=9223372036854775807\nzero=0\n");
  sum_of(want, strlen(want), sum);
  assert_int_equal(len, strlen(want) + 21);
  assert_memory_equal(text, want, strlen(want));
  assert_memory_equal(text + strlen(want), "end=", 4);
  assert_memory_equal(text + strlen(want) + 4, sum, 16);

  assert_int_equal(frond__record_read(&r, path, "test kind", NULL,
                                      FROND_EHIGHWATER_CORRUPT, &err),
                   0);
  assert_int_equal(r.legacy, 0);
  assert_string_equal(frond__record_get(&r, "name"), "a b=c \xc3\xa9");
  assert_string_equal(frond__record_get(&r, "empty"), "");
  assert_null(frond__record_get(&r, "nam"));
  assert_null(frond__record_get(&r, "end"));
  assert_int_equal(frond__record_get_i64(&r, "neg", &v), 0);
  assert_true(v == INT64_MIN);
  assert_int_equal(frond__record_get_u64(&r, "big", &u), 0);
  assert_true(u == (uint64_t)INT64_MAX);
  assert_int_equal(frond__record_get_u64(&r, "neg", &u), -1);
  assert_int_equal(frond__record_get_i64(&r, "name", &v), -1);
  assert_int_equal(frond__record_get_i64(&r, "empty", &v), -1);
  assert_int_equal(frond__record_get_i64(&r, "zero", &v), 0);
  {
    char small[4];
    assert_int_equal(frond__record_get_str(&r, "name", small, sizeof small),
                     -1);
    assert_int_equal(frond__record_get_str(&r, "zero", small, sizeof small), 0);
    assert_string_equal(small, "0");
  }
  /* Another kind of file is refused, though its checksum is right. */
  assert_int_equal(frond__record_parse(&r, "other", NULL, text, len, &why), -1);
  assert_non_null(strstr(why, "kind"));
  /* A missing file is 1, not an error. */
  snprintf(path, sizeof(path), "%s/none.rec", dir);
  assert_int_equal(frond__record_read(&r, path, "test kind", NULL,
                                      FROND_EHIGHWATER_CORRUPT, &err),
                   1);
  tmpdir_remove(dir);
}

/* Seal body (lines, each ending in a newline) with its end line. */
static size_t seal(const char *body, char *out, size_t cap) {
  char sum[17];
  sum_of(body, strlen(body), sum);
  return (size_t)snprintf(out, cap, "%send=%s\n", body, sum);
}

static void test_record_refusals(void **state) {
  static const char *const bodies[] = {
      "# frond k\nkey\n",        /* no '=' */
      "# frond k\n=v\n",         /* empty key */
      "# frond k\nk-y=v\n",      /* a key outside [A-Za-z0-9_] */
      "# frond k\nk=1\nk=2\n",   /* a key twice */
      "# frond k\nk=a\tb\n",     /* a control character */
      "# frond k\n\nk=v\n",      /* an empty line */
      "# frond k\n# more\n",     /* a comment past the first line */
      "# frond kk\nk=v\n",       /* another kind */
      "k=v\n",                   /* no kind line */
      "# frond k\nk=v\nend=0\n", /* a second end line (not the last) */
      "# frond k\n0123456789012345678901234567890123=v\n", /* key of 34 */
  };
  frond__record r;
  const char *why;
  char buf[512], good[512];
  size_t n, i;
  (void)state;
  for (i = 0; i < FROND__ARRAY_SIZE(bodies); i++) {
    n = seal(bodies[i], buf, sizeof buf);
    why = NULL;
    assert_int_equal(frond__record_parse(&r, "k", NULL, buf, n, &why), -1);
    assert_non_null(why);
  }
  /* A good record; then every truncation, every flipped bit, and any
  ** byte after the end line is refused. */
  n = seal("# frond k\nk=v\nn=12\n", good, sizeof good);
  assert_int_equal(frond__record_parse(&r, "k", NULL, good, n, &why), 0);
  for (i = 0; i < n; i++) {
    assert_int_equal(frond__record_parse(&r, "k", NULL, good, i, &why), -1);
    for (int bit = 0; bit < 8; bit++) {
      memcpy(buf, good, n);
      buf[i] ^= (char)(1 << bit);
      assert_int_equal(frond__record_parse(&r, "k", NULL, buf, n, &why), -1);
    }
  }
  memcpy(buf, good, n);
  memcpy(buf + n, "x\n", 2);
  assert_int_equal(frond__record_parse(&r, "k", NULL, buf, n + 2, &why), -1);
  /* Leading zeros and "-0" are not numbers a writer prints. */
  n = seal("# frond k\na=007\nb=-0\nc=-7\n", buf, sizeof buf);
  assert_int_equal(frond__record_parse(&r, "k", NULL, buf, n, &why), 0);
  {
    int64_t v;
    assert_int_equal(frond__record_get_i64(&r, "a", &v), -1);
    assert_int_equal(frond__record_get_i64(&r, "b", &v), -1);
    assert_int_equal(frond__record_get_i64(&r, "c", &v), 0);
    assert_true(v == -7);
  }
}

/* The one-line form of earlier versions: still read, never written. */
static void test_record_legacy(void **state) {
  /* Written by the high-water file of the version before record files. */
  static const char old[] =
      "frond-highwater 1 node=7 time_ms=1795431844479 seq=0 clean=1 "
      "layout=time=41,node=10,seq=12,unit=1ms,epoch=1735689600000 "
      "check=4f7108165be156e3\n";
  frond__record r;
  const char *why = NULL;
  char buf[512];
  uint64_t u;
  (void)state;
  assert_int_equal(frond__record_parse(&r, "high-water", "frond-highwater 1",
                                       old, strlen(old), &why),
                   0);
  assert_int_equal(r.legacy, 1);
  assert_int_equal(frond__record_get_u64(&r, "node", &u), 0);
  assert_int_equal(u, 7);
  assert_string_equal(frond__record_get(&r, "layout"),
                      "time=41,node=10,seq=12,unit=1ms,epoch=1735689600000");
  /* Without the legacy prefix it is no record. */
  assert_int_equal(
      frond__record_parse(&r, "high-water", NULL, old, strlen(old), &why), -1);
  /* Torn and altered one-liners are refused. */
  assert_int_equal(frond__record_parse(&r, "high-water", "frond-highwater 1",
                                       old, strlen(old) - 1, &why),
                   -1);
  memcpy(buf, old, sizeof old);
  buf[25] = '8';
  assert_int_equal(frond__record_parse(&r, "high-water", "frond-highwater 1",
                                       buf, strlen(old), &why),
                   -1);
  assert_non_null(strstr(why, "checksum"));
}

static void test_record_writer_limits(void **state) {
  frond__record w;
  char big[FROND__RECORD_MAX];
  char key[8];
  (void)state;
  /* A value with a newline, a bad key, a key twice: bad, nothing written. */
  frond__record_init(&w, "k");
  frond__record_put(&w, "a", "x\ny");
  assert_int_equal(frond__record_finish(&w), -1);
  frond__record_init(&w, "k");
  frond__record_put(&w, "a b", "x");
  assert_int_equal(frond__record_finish(&w), -1);
  frond__record_init(&w, "k");
  frond__record_put(&w, "a", "1");
  frond__record_put(&w, "a", "2");
  assert_int_equal(frond__record_finish(&w), -1);
  /* Too many keys, too many bytes. */
  frond__record_init(&w, "k");
  for (int i = 0; i <= FROND__RECORD_KEYS; i++) {
    snprintf(key, sizeof key, "k%d", i);
    frond__record_put(&w, key, "v");
  }
  assert_int_equal(frond__record_finish(&w), -1);
  memset(big, 'v', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  frond__record_init(&w, "k");
  frond__record_put(&w, "a", big);
  assert_int_equal(frond__record_finish(&w), -1);
  /* The largest value that fits makes a record that reads back. */
  {
    frond__record r;
    const char *why;
    size_t room = FROND__RECORD_MAX - strlen("# frond k\n") - strlen("a=\n") -
                  strlen("end=0123456789abcdef\n");
    big[room] = '\0';
    frond__record_init(&w, "k");
    frond__record_put(&w, "a", big);
    assert_int_equal(frond__record_finish(&w), FROND__RECORD_MAX);
    assert_int_equal(frond__record_parse(&r, "k", NULL, w.text, w.len, &why),
                     0);
    assert_int_equal(strlen(frond__record_get(&r, "a")), room);
  }
}

static void test_record_read_errors(void **state) {
  char *dir = tmpdir_make(), path[600], buf[FROND__RECORD_MAX + 2];
  frond__record r;
  frond_error err = {0, ""};
  (void)state;
  snprintf(path, sizeof(path), "%s/x.rec", dir);
  put_file(path, "# frond k\nk=v\n", 14);
  assert_int_equal(frond__record_read(&r, path, "k", NULL, FROND_ECOORD, &err),
                   FROND_ECOORD);
  assert_int_equal(err.code, FROND_ECOORD);
  assert_non_null(strstr(err.message, path));
  memset(buf, '#', sizeof buf);
  put_file(path, buf, sizeof buf);
  assert_int_equal(frond__record_read(&r, path, "k", NULL, FROND_ECOORD, &err),
                   FROND_ECOORD);
  assert_non_null(strstr(err.message, "too large"));
  /* A directory cannot be read: IO. */
  assert_int_equal(frond__record_read(&r, dir, "k", NULL, FROND_ECOORD, &err),
                   FROND_EIO);
  tmpdir_remove(dir);
}

/* ---- the process key ---- */

/* What a child of a fork sees (one bit per check that failed): the
** parent's mark seen, one armed here not, and the parent's still seen
** after that (the key is new, not the parent's). */
static int fork_child(const frond__fork_mark *parents) {
  frond__fork_mark mine;
  int bad = 0;
  memset(&mine, 0, sizeof(mine));
  bad |= !frond__fork_seen(parents);
  frond__fork_arm(&mine);
  bad |= frond__fork_seen(&mine) << 1;
  bad |= !frond__fork_seen(parents) << 2;
  return bad;
}

static void fork_key(int how) {
  frond__fork_mark m, again;
  pid_t pid;
  int st = -1;
  memset(&m, 0, sizeof(m));
  memset(&again, 0, sizeof(again));
  frond__fork_arm(&m);
  frond__fork_arm(&again);
  assert_false(frond__fork_seen(&m));
  assert_int_equal(again.key, m.key); /* one key per process */
  pid = how == 0 ? fork() : how == 1 ? _Fork() : (pid_t)syscall(SYS_fork);
  assert_true(pid >= 0);
  if (pid == 0)
    _exit(fork_child(&m));
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_false(frond__fork_seen(&m)); /* the parent's key is unchanged */
}

/* fork() runs the pthread_atfork handler; _Fork() and the raw system
** call do not, and are caught only through the page the kernel wipes. */
static void test_fork_key(void **state) {
  (void)state;
  fork_key(0);
  if (!frond__fork_wipes())
    fail_msg("this kernel refuses MADV_WIPEONFORK (before Linux 4.14, or a "
             "seccomp filter): only fork() is caught here");
  fork_key(1);
  fork_key(2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_i64),
      cmocka_unit_test(test_dec),
      cmocka_unit_test(test_utf8),
      cmocka_unit_test(test_json_escape),
      cmocka_unit_test(test_record_round_trip),
      cmocka_unit_test(test_record_refusals),
      cmocka_unit_test(test_record_legacy),
      cmocka_unit_test(test_record_writer_limits),
      cmocka_unit_test(test_record_read_errors),
      cmocka_unit_test(test_fork_key),
  };
  return frond_run_tests(tests, NULL, NULL);
}
