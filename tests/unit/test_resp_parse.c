/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_resp_parse.c -- the RESP request parser, every input placed against
** a guard page.
*/
#include "testutil.h"
#include "server/resp_parse.h"

static const frond__resp_limits lim = {8, 64, 128};

typedef struct parsed {
  long r;
  size_t argc;
  char args[8][80];
  const char *why;
} parsed;

static parsed parse(const char *s, size_t len) {
  parsed out;
  frond__resp_arg argv[8];
  guarded g = guarded_copy(s, len);
  memset(&out, 0, sizeof(out));
  out.r = frond__resp_parse(g.p, len, &lim, argv, &out.argc, &out.why);
  for (size_t i = 0; out.r > 0 && i < out.argc; i++) {
    assert_true(argv[i].len < sizeof(out.args[i]));
    memcpy(out.args[i], argv[i].p, argv[i].len);
    out.args[i][argv[i].len] = '\0';
  }
  guarded_free(&g);
  return out;
}

#define P(lit) parse(lit, sizeof(lit) - 1)

static void test_multibulk(void **state) {
  parsed p = P("*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n");
  (void)state;
  assert_int_equal(p.r, 25);
  assert_int_equal(p.argc, 2);
  assert_string_equal(p.args[0], "INCR");
  assert_string_equal(p.args[1], "order");
  /* Binary-safe: CR, LF and NUL inside a bulk string. */
  p = parse("*1\r\n$5\r\na\r\n\0b\r\n", 15);
  assert_int_equal(p.r, 15);
  assert_int_equal(p.argc, 1);
  assert_memory_equal(p.args[0], "a\r\n\0b", 5);
  /* Empty bulk string. */
  p = P("*1\r\n$0\r\n\r\n");
  assert_int_equal(p.r, 10);
  assert_int_equal(p.argc, 1);
  assert_string_equal(p.args[0], "");
  /* Empty and null arrays are consumed without a command. */
  p = P("*0\r\n");
  assert_int_equal(p.r, 4);
  assert_int_equal(p.argc, 0);
  p = P("*-1\r\n");
  assert_int_equal(p.r, 5);
  assert_int_equal(p.argc, 0);
}

static void test_pipelined(void **state) {
  const char in[] = "*1\r\n$4\r\nPING\r\nINCR a\r\n*1\r\n$4\r\nQUIT\r\n";
  size_t len = sizeof(in) - 1, pos = 0, n = 0;
  frond__resp_arg argv[8];
  guarded g = guarded_copy(in, len);
  const char *want[] = {"PING", "INCR", "QUIT"};
  (void)state;
  while (pos < len) {
    size_t argc;
    const char *why;
    long r = frond__resp_parse(g.p + pos, len - pos, &lim, argv, &argc, &why);
    assert_true(r > 0);
    assert_true(argc >= 1);
    assert_int_equal(argv[0].len, 4);
    assert_memory_equal(argv[0].p, want[n], 4);
    pos += (size_t)r;
    n++;
  }
  assert_int_equal(n, 3);
  guarded_free(&g);
}

static void test_inline(void **state) {
  parsed p = P("INCR  order\r\n");
  (void)state;
  assert_int_equal(p.r, 13);
  assert_int_equal(p.argc, 2);
  assert_string_equal(p.args[0], "INCR");
  assert_string_equal(p.args[1], "order");
  p = P("\tPING\n");
  assert_int_equal(p.r, 6);
  assert_int_equal(p.argc, 1);
  assert_string_equal(p.args[0], "PING");
  p = P("\r\n");
  assert_int_equal(p.r, 2);
  assert_int_equal(p.argc, 0);
  p = P("a b c d e f g h i\n");
  assert_int_equal(p.r, -1);
  assert_non_null(strstr(p.why, "too many arguments"));
}

static void test_partial(void **state) {
  const char full[] = "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n";
  (void)state;
  /* Every strict prefix needs more bytes; none is an error. */
  for (size_t k = 1; k < sizeof(full) - 1; k++) {
    parsed p = parse(full, k);
    if (p.r != 0)
      fail_msg("prefix of %zu bytes gave %ld", k, p.r);
  }
  assert_int_equal(P("INCR ord").r, 0);
  assert_int_equal(parse("", 0).r, 0);
}

static void expect_error(const char *in, size_t len, const char *why) {
  parsed p = parse(in, len);
  if (p.r != -1)
    fail_msg("'%.*s' gave %ld, want -1", (int)len, in, p.r);
  if (strstr(p.why, why) == NULL)
    fail_msg("'%.*s': '%s' lacks '%s'", (int)len, in, p.why, why);
}
#define E(lit, why) expect_error(lit, sizeof(lit) - 1, why)

static void test_errors(void **state) {
  char big[300];
  (void)state;
  E("*9\r\n", "invalid multibulk length"); /* above max_args */
  E("*99999999999999999999\r\n", "invalid multibulk length");
  E("*abc\r\n", "invalid multibulk length");
  E("*\r\n", "invalid multibulk length");
  E("*1\n", "invalid multibulk length");
  E("*1\r\n$-5\r\n", "invalid bulk length");
  E("*1\r\n$65\r\n", "invalid bulk length"); /* above max_bulk */
  E("*1\r\n$99999999999999999999999\r\n", "invalid bulk length");
  E("*1\r\n$x\r\n", "invalid bulk length");
  E("*1\r\n:1\r\n", "expected '$'");
  E("*1\r\n$3\r\nabcXY", "not followed by CRLF");
  /* A number line that never ends is garbage, not a wait. */
  memset(big, '1', sizeof(big));
  big[0] = '*';
  expect_error(big, sizeof(big), "invalid multibulk length");
  /* An inline line longer than the limit without a newline. */
  memset(big, 'a', sizeof(big));
  expect_error(big, sizeof(big), "too big inline request");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_multibulk), cmocka_unit_test(test_pipelined),
      cmocka_unit_test(test_inline),    cmocka_unit_test(test_partial),
      cmocka_unit_test(test_errors),
  };
  return frond_run_tests(tests, NULL, NULL);
}
