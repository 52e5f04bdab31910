/*
** test_resp.c -- the RESP front's replies, byte for byte, through the real
** protocol code without a network (server_fixture.h).
*/
#include "server_fixture.h"

#include "server/resp.h"

static int setup(void **state) {
  static const char *const tags[] = {"order", NULL};
  *state = fixture_open(&frond__resp_proto, tags);
  return 0;
}

static void test_incr(void **state) {
  fixture *f = *state;
  int last;
  assert_string_equal(FEED(f, "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n", &last),
                      ":1\r\n");
  assert_int_equal(last, 25);
  assert_string_equal(FEED(f, "incr order\r\nINCR order\n", NULL),
                      ":2\r\n:3\r\n");
  assert_string_equal(FEED(f, "INCRBY order 1\r\n", NULL), ":4\r\n");
  assert_string_equal(FEED(f, "ID.NEXT order 3\r\n", NULL),
                      "*3\r\n:5\r\n:6\r\n:7\r\n");
  assert_memory_equal(FEED(f, "INCR nope\r\n", NULL), "-TAG_NOT_FOUND ", 15);
  assert_memory_equal(FEED(f, "INCRBY order 2\r\n", NULL), "-COUNT_INVALID ",
                      15);
  assert_string_equal(FEED(f, "INCR order\r\n", NULL), ":8\r\n");
}

static void test_counts(void **state) {
  fixture *f = *state;
  static const char *bad[] = {
      "0", "-1", "x", "1.5", "", "100001", "9223372036854775808"};
  char cmd[64];
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    int n = snprintf(cmd, sizeof cmd,
                     "*3\r\n$7\r\nID.NEXT\r\n$5\r\norder\r\n"
                     "$%zu\r\n%s\r\n",
                     strlen(bad[i]), bad[i]);
    assert_memory_equal(feed(f, cmd, (size_t)n, NULL), "-COUNT_INVALID ", 15);
    n = snprintf(cmd, sizeof cmd, "*2\r\n$12\r\nID.SNOWFLAKE\r\n$%zu\r\n%s\r\n",
                 strlen(bad[i]), bad[i]);
    assert_memory_equal(feed(f, cmd, (size_t)n, NULL), "-COUNT_INVALID ", 15);
  }
}

static void test_snowflake_decode(void **state) {
  fixture *f = *state;
  const char *r = FEED(f, "ID.SNOWFLAKE 2\r\n", NULL);
  char cmd[64];
  long long a, b;
  int n;
  assert_int_equal(sscanf(r, "*2\r\n:%lld\r\n:%lld\r\n", &a, &b), 2);
  assert_true(b == a + 1);
  n = snprintf(cmd, sizeof cmd, "ID.DECODE %lld\r\n", a);
  r = feed(f, cmd, (size_t)n, NULL);
  assert_memory_equal(r, "*18\r\n$2\r\nid\r\n:", 14);
  assert_non_null(strstr(r, "$4\r\nnode\r\n:3\r\n"));
  assert_non_null(strstr(r, "$6\r\nlayout\r\n$"));
  assert_memory_equal(FEED(f, "ID.DECODE -5\r\n", NULL), "-ID_INVALID ", 12);
}

static void test_connection_commands(void **state) {
  fixture *f = *state;
  int last;
  assert_string_equal(FEED(f, "PING\r\n", NULL), "+PONG\r\n");
  assert_string_equal(FEED(f, "PING hi\r\n", NULL), "$2\r\nhi\r\n");
  assert_string_equal(FEED(f, "SELECT 0\r\n", NULL), "+OK\r\n");
  assert_string_equal(FEED(f, "SELECT 2\r\n", NULL),
                      "-ERR DB index is out of range\r\n");
  assert_string_equal(FEED(f, "HELLO 3\r\n", NULL),
                      "-NOPROTO unsupported protocol version\r\n");
  assert_string_equal(FEED(f, "CLIENT GETNAME\r\n", NULL), "$-1\r\n");
  assert_string_equal(FEED(f, "CLIENT SETNAME me\r\n", NULL), "+OK\r\n");
  assert_string_equal(FEED(f, "CLIENT GETNAME\r\n", NULL), "$2\r\nme\r\n");
  assert_string_equal(FEED(f, "CONFIG GET save\r\n", NULL), "*0\r\n");
  assert_string_equal(FEED(f, "INCR\r\n", NULL),
                      "-ERR wrong number of arguments for 'incr' command\r\n");
  assert_string_equal(FEED(f, "FOO a\r\n", NULL),
                      "-ERR unknown command 'FOO', with args beginning "
                      "with: 'a' \r\n");
  /* CR and LF from an argument never reach the reply line. */
  assert_string_equal(FEED(f, "*1\r\n$3\r\na\r\n\r\n", NULL),
                      "-ERR unknown command 'a  ', with args beginning "
                      "with: \r\n");
  assert_string_equal(FEED(f, "QUIT\r\nPING\r\n", &last), "+OK\r\n");
  assert_int_equal(last, -1);
}

static void test_protocol_error(void **state) {
  fixture *f = *state;
  int last;
  assert_string_equal(FEED(f, "*1\r\n$-2\r\n", &last),
                      "-ERR Protocol error: invalid bulk length\r\n");
  assert_int_equal(last, -1);
  /* A partial command waits for more; the answers before it stand. */
  assert_string_equal(FEED(f, "PING\r\n*2\r\n$4\r\nINCR\r\n$5\r\nor", &last),
                      "+PONG\r\n");
  assert_int_equal(last, 0);
}

static void test_auth(void **state) {
  fixture *f = *state;
  strcpy(f->srv.cfg.admin_token, "tok");
  assert_string_equal(FEED(f, "RESET\r\n", NULL), "+RESET\r\n");
  assert_string_equal(FEED(f, "INCR order\r\n", NULL),
                      "-NOAUTH Authentication required.\r\n");
  assert_string_equal(FEED(f, "PING\r\n", NULL), "+PONG\r\n");
  assert_memory_equal(FEED(f, "AUTH nope\r\n", NULL), "-WRONGPASS ", 11);
  assert_memory_equal(FEED(f, "AUTH tok2\r\n", NULL), "-WRONGPASS ", 11);
  assert_memory_equal(FEED(f, "AUTH to\r\n", NULL), "-WRONGPASS ", 11);
  assert_memory_equal(FEED(f, "AUTH root tok\r\n", NULL), "-WRONGPASS ", 11);
  assert_string_equal(FEED(f, "AUTH default tok\r\n", NULL), "+OK\r\n");
  assert_memory_equal(FEED(f, "INCR order\r\n", NULL), ":", 1);
}

/* Every split of a pipeline into two reads gives the same answers. */
static void test_splits(void **state) {
  fixture *f = *state;
  static const char in[] = "*1\r\n$4\r\nPING\r\nECHO abc\r\n*2\r\n$4\r\nECHO"
                           "\r\n$3\r\nx\ry\r\n";
  static const char want[] = "+PONG\r\n$3\r\nabc\r\n$3\r\nx\ry\r\n";
  char got[256];
  for (size_t cut = 0; cut <= sizeof in - 1; cut++) {
    size_t off = 0, glen = 0;
    int n;
    f->c->out.len = 0;
    /* The first read: only what arrived. */
    while (off < cut &&
           (n = frond__resp_proto.on_data(f->c, in + off, cut - off)) > 0)
      off += (size_t)n;
    while (off < sizeof in - 1 &&
           (n = frond__resp_proto.on_data(f->c, in + off,
                                          sizeof in - 1 - off)) > 0)
      off += (size_t)n;
    assert_int_equal(off, sizeof in - 1);
    glen = f->c->out.len;
    memcpy(got, f->c->out.data, glen);
    got[glen] = '\0';
    assert_string_equal(got, want);
  }
}

/* The sum of a RESP counter over the fixture's one worker. */
static uint64_t resp_stat(fixture *f, size_t off) {
  return frond__metrics_state_sum(&f->srv, &frond__resp_proto, off);
}
#define STAT(f, field) resp_stat(f, offsetof(frond__resp_stats, field))

/* A tag the allocator does not know is looked up in the store off the
** loop: one created elsewhere since the allocator read its tags works at
** once, in order with the commands pipelined behind it, and each command
** is counted once, when answered. */
static void test_unknown_tag_looked_up(void **state) {
  fixture *f = *state;
  uint64_t incr_ok = STAT(f, commands[FROND__RC_INCR][0]);
  uint64_t incr_err = STAT(f, commands[FROND__RC_INCR][1]);
  assert_memory_equal(FEED(f, "INCR fresh\r\n", NULL),
                      "-TAG_NOT_FOUND tag \"fresh\" not found\r\n", 36);
  fixture_tag(f, "fresh", 10);
  assert_string_equal(FEED(f,
                           "PING\r\nINCR fresh\r\nPING\r\n"
                           "ID.NEXT fresh 2\r\nINCR fresh\r\n",
                           NULL),
                      "+PONG\r\n:1\r\n+PONG\r\n*2\r\n:2\r\n:3\r\n:4\r\n");
  fixture_tag(f, "fresh2", 10);
  assert_string_equal(FEED(f, "ID.NEXT fresh2 3\r\n", NULL),
                      "*3\r\n:1\r\n:2\r\n:3\r\n");
  assert_int_equal(STAT(f, commands[FROND__RC_INCR][0]) - incr_ok, 2);
  assert_int_equal(STAT(f, commands[FROND__RC_INCR][1]) - incr_err, 1);
  assert_int_equal(STAT(f, commands[FROND__RC_ID_NEXT][0]), 2);
  assert_int_equal(FROND__SUM(&f->srv, ids_segment), 7);
}

/* A command taken off the loop that QUITs behind it: the reply comes,
** then the connection closes. */
static void test_quit_behind_lookup(void **state) {
  fixture *f = *state;
  int last;
  fixture_tag(f, "late", 10);
  assert_string_equal(FEED(f, "INCR late\r\nQUIT\r\nPING\r\n", &last),
                      ":1\r\n+OK\r\n");
  assert_int_equal(last, -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_incr, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_counts, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_snowflake_decode, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_connection_commands, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_protocol_error, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_auth, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_splits, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_unknown_tag_looked_up, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_quit_behind_lookup, setup,
                                      fixture_teardown),
  };
  return frond_run_tests(tests, NULL, NULL);
}
