/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_resp.c -- the RESP front's replies, byte for byte, through the real
** protocol code without a network (server_fixture.h).
*/
#include "server_fixture.h"

#include "server/resp_shared.h"

static int setup(void **state) {
  static const char *const tags[] = {"order", NULL};
  *state = fixture_open(&frond__resp_proto, tags);
  return 0;
}

static void test_incr(void **state) {
  fixture *f = *state;
  long long v, w;
  int last;
  assert_string_equal(FEED(f, "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n", &last),
                      ":1\r\n");
  assert_int_equal(last, 25);
  assert_string_equal(FEED(f, "incr order\r\nINCR order\n", NULL),
                      ":2\r\n:3\r\n");
  assert_string_equal(FEED(f, "INCRBY order 1\r\n", NULL), ":4\r\n");
  /* INCR answers an integer, as Redis; ID.* answer IDs as bulk strings. */
  assert_string_equal(FEED(f, "ID.NEXT order 3\r\n", NULL),
                      "*3\r\n$1\r\n5\r\n$1\r\n6\r\n$1\r\n7\r\n");
  assert_memory_equal(FEED(f, "INCR nope\r\n", NULL), "-TAG_NOT_FOUND ", 15);
  /* INCRBY n: n consecutive IDs, the last answered, as Redis' INCRBY. */
  assert_string_equal(FEED(f, "INCRBY order 2\r\n", NULL), ":9\r\n");
  assert_string_equal(FEED(f, "INCR order\r\n", NULL), ":10\r\n");
  /* A range that does not fit what is left of the segment starts in a
  ** fresh one (the rest is skipped): consecutive, above all before. */
  assert_int_equal(
      sscanf(FEED(f, "INCRBY order 500\r\n", NULL), ":%lld\r\n", &v), 1);
  assert_true(v >= 510);
  assert_int_equal(sscanf(FEED(f, "INCR order\r\n", NULL), ":%lld\r\n", &w), 1);
  assert_true(w > v);
  assert_memory_equal(FEED(f, "INCRBY order 0\r\n", NULL), "-COUNT_INVALID ",
                      15);
  assert_memory_equal(FEED(f, "INCRBY order -3\r\n", NULL), "-COUNT_INVALID ",
                      15);
  assert_memory_equal(FEED(f, "INCRBY order 1000001\r\n", NULL),
                      "-COUNT_INVALID ", 15);
  assert_memory_equal(FEED(f, "INCRBY nope 5\r\n", NULL), "-TAG_NOT_FOUND ",
                      15);
  assert_int_equal(sscanf(FEED(f, "INCR order\r\n", NULL), ":%lld\r\n", &v), 1);
  assert_true(v == w + 1);
}

static size_t read_ids(const char **p, long long *ids);

/* MULTI queues, EXEC runs in order and answers one array, an error inside
** as an element; nothing runs before EXEC. */
static void test_multi_exec(void **state) {
  fixture *f = *state;
  const char *r;
  assert_string_equal(FEED(f,
                           "MULTI\r\nINCR order\r\nID.NEXT order 2\r\n"
                           "PING\r\n",
                           NULL),
                      "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n");
  assert_int_equal(FROND__SUM(&f->srv, ids_segment), 0);
  r = FEED(f, "INCRBY order 3\r\nINCR nope\r\nEXEC\r\nINCR order\r\n", NULL);
  /* INCR nope waits for the store off the loop: EXEC goes on after it, and
  ** the INCR pipelined behind EXEC answers after the array. */
  assert_memory_equal(r,
                      "+QUEUED\r\n+QUEUED\r\n*5\r\n:1\r\n*2\r\n$1\r\n2\r\n"
                      "$1\r\n3\r\n+PONG\r\n:6\r\n-TAG_NOT_FOUND ",
                      52);
  assert_non_null(strstr(r, "not found\r\n:7\r\n"));
  assert_true(f->holds >= 1);
  /* Out of MULTI again. */
  assert_string_equal(FEED(f, "INCR order\r\n", NULL), ":8\r\n");
  /* Nested MULTI is refused and the transaction goes on; DISCARD drops it,
  ** and nothing it queued ran. */
  assert_string_equal(
      FEED(f, "MULTI\r\nMULTI\r\nINCR order\r\nDISCARD\r\nINCR order\r\n",
           NULL),
      "+OK\r\n-ERR MULTI calls can not be nested\r\n+QUEUED\r\n+OK\r\n:9\r\n");
  assert_string_equal(FEED(f, "EXEC\r\nDISCARD\r\n", NULL),
                      "-ERR EXEC without MULTI\r\n"
                      "-ERR DISCARD without MULTI\r\n");
  /* An empty transaction. */
  assert_string_equal(FEED(f, "MULTI\r\nEXEC\r\n", NULL), "+OK\r\n*0\r\n");
  /* WATCH and UNWATCH watch nothing: Frond's commands have no keys. */
  assert_string_equal(FEED(f,
                           "WATCH order\r\nMULTI\r\nWATCH order\r\n"
                           "UNWATCH\r\nINCR order\r\nEXEC\r\n",
                           NULL),
                      "+OK\r\n+OK\r\n-ERR WATCH inside MULTI is not allowed\r\n"
                      "+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:10\r\n");
  /* RESET drops a transaction. */
  assert_string_equal(
      FEED(f, "MULTI\r\nINCR order\r\nRESET\r\nEXEC\r\nINCR order\r\n", NULL),
      "+OK\r\n+QUEUED\r\n+RESET\r\n-ERR EXEC without MULTI\r\n:11\r\n");
  assert_string_equal(FEED(f, "MULTI x\r\nEXEC x\r\n", NULL),
                      "-ERR wrong number of arguments for 'multi' command\r\n"
                      "-ERR wrong number of arguments for 'exec' command\r\n");
}

/* A command refused while queueing (unknown, wrong arity, over the
** queue's bound) makes EXEC answer -EXECABORT and run nothing: a refused
** transaction burns no ID. */
static void test_multi_abort(void **state) {
  fixture *f = *state;
  static const char *const bad[] = {"DEL order\r\n", "INCR\r\n",
                                    "INCR order extra\r\n"};
  char in[256];
  frond__buf big = {NULL, 0, 0};
  const char *r;
  size_t i;
  int n;
  assert_string_equal(FEED(f, "INCR order\r\n", NULL), ":1\r\n");
  for (i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    n = snprintf(in, sizeof in,
                 "MULTI\r\nINCR order\r\n%sINCR order\r\nEXEC\r\n", bad[i]);
    r = feed(f, in, (size_t)n, NULL);
    assert_memory_equal(r, "+OK\r\n+QUEUED\r\n-ERR ", 19);
    assert_non_null(strstr(r, "\r\n+QUEUED\r\n-EXECABORT Transaction discarded "
                              "because of previous errors.\r\n"));
  }
  assert_string_equal(FEED(f, "INCR order\r\n", NULL), ":2\r\n");
  /* The queue's bound. */
  assert_int_equal(frond__buf_append(&big, "MULTI\r\n", 7), 0);
  for (i = 0; i <= FROND__RESP_MAX_QUEUED; i++)
    assert_int_equal(frond__buf_append(&big, "INCR order\r\n", 12), 0);
  assert_int_equal(frond__buf_append(&big, "EXEC\r\n", 6), 0);
  r = feed(f, big.data, big.len, NULL);
  assert_non_null(strstr(r, "+QUEUED\r\n-QUEUE_FULL a transaction holds at "
                            "most 10000 commands"));
  assert_non_null(strstr(r, "\r\n-EXECABORT "));
  frond__buf_free(&big);
  assert_string_equal(FEED(f, "INCR order\r\n", NULL), ":3\r\n");
  /* A long transaction that fits runs whole. */
  n = snprintf(in, sizeof in, "MULTI\r\n");
  assert_string_equal(feed(f, in, (size_t)n, NULL), "+OK\r\n");
  for (i = 0; i < 100; i++)
    assert_string_equal(FEED(f, "INCR order\r\n", NULL), "+QUEUED\r\n");
  r = FEED(f, "EXEC\r\n", NULL);
  assert_memory_equal(r, "*100\r\n:4\r\n:5\r\n", 14);
  assert_non_null(strstr(r, ":103\r\n"));
  assert_string_equal(FEED(f, "INCR order\r\n", NULL), ":104\r\n");
}

/* Queued commands that wait off the loop, one after another, each
** answered in its place in EXEC's array; pipelined commands behind EXEC
** after it. */
static void test_multi_waits(void **state) {
  fixture *f = *state;
  long long ids[64], prev = 0;
  const char *p;
  size_t i, got, total = 0;
  fixture_tag(f, "wide", 10);
  p = FEED(f,
           "MULTI\r\nID.NEXT wide 7\r\nID.NEXT wide 7\r\nINCR wide\r\n"
           "ID.NEXT wide 7\r\nINCRBY wide 15\r\nEXEC\r\nINCR wide\r\n",
           NULL);
  for (i = 0; i < 6; i++) {
    assert_memory_equal(p, i == 0 ? "+OK\r\n" : "+QUEUED\r\n", i == 0 ? 5 : 9);
    p += i == 0 ? 5 : 9;
  }
  assert_memory_equal(p, "*5\r\n", 4);
  p += 4;
  for (i = 0; i < 6; i++) {
    got = read_ids(&p, ids);
    assert_int_equal(got, i == 2 || i >= 4 ? 1 : 7);
    assert_true(ids[0] > prev);
    prev = ids[got - 1];
    total += got;
  }
  assert_string_equal(p, "");
  assert_int_equal(total, 7 + 7 + 1 + 7 + 1 + 1);
  assert_true(f->holds >= 1);
}

static void test_counts(void **state) {
  fixture *f = *state;
  static const char *bad[] = {
      "0",
      "-1",
      "x",
      "1.5",
      "",
      "100001",
      "9223372036854775808",
      "00000000000000000001" /* 20 characters: as HTTP reads counts */};
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
  char want[64];
  assert_int_equal(sscanf(r, "*2\r\n$%*d\r\n%lld\r\n$%*d\r\n%lld\r\n", &a, &b),
                   2);
  assert_true(b == a + 1);
  n = snprintf(cmd, sizeof cmd, "ID.DECODE %lld\r\n", a);
  r = feed(f, cmd, (size_t)n, NULL);
  snprintf(want, sizeof want, "*18\r\n$2\r\nid\r\n$%d\r\n%lld\r\n",
           snprintf(NULL, 0, "%lld", a), a);
  assert_memory_equal(r, want, strlen(want));
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
  assert_string_equal(FEED(f, "HELLO 4\r\n", NULL),
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
  /* Credentials are read at start: the connection opened before is not
  ** authenticated (RESET would need it). */
  fixture_token(f, "tok");
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
                      "+PONG\r\n:1\r\n+PONG\r\n*2\r\n$1\r\n2\r\n$1\r\n3\r\n"
                      ":4\r\n");
  fixture_tag(f, "fresh2", 10);
  assert_string_equal(FEED(f, "ID.NEXT fresh2 3\r\n", NULL),
                      "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n");
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

/* HELLO 3 switches the connection to RESP3 and HELLO 2 back; every reply
** that has a RESP3 type uses it, and the rest is the same in both. */
static void test_resp3(void **state) {
  fixture *f = *state;
  const char *r;
  char want[64];
  long long a, b;
  char hello[512];
  frond__resp_client *st = f->c->pdata;
  snprintf(hello, sizeof hello,
           "%%7\r\n$6\r\nserver\r\n$5\r\nfrond\r\n$7\r\nversion\r\n$%zu\r\n"
           "%s\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:%llu\r\n$4\r\nmode\r\n"
           "$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\n"
           "modules\r\n*0\r\n",
           strlen(FROND_VERSION_STRING), FROND_VERSION_STRING,
           (unsigned long long)st->id);
  assert_string_equal(FEED(f, "HELLO 3\r\n", NULL), hello);
  /* HELLO without a version answers in the protocol spoken. */
  assert_memory_equal(FEED(f, "HELLO\r\n", NULL), "%7\r\n", 4);
  assert_string_equal(FEED(f, "INCR order\r\n", NULL), ":1\r\n");
  assert_string_equal(FEED(f, "ID.NEXT order 2\r\n", NULL),
                      "*2\r\n$1\r\n2\r\n$1\r\n3\r\n");
  r = FEED(f, "ID.SNOWFLAKE 2\r\n", NULL);
  assert_int_equal(sscanf(r, "*2\r\n$%*d\r\n%lld\r\n$%*d\r\n%lld\r\n", &a, &b),
                   2);
  assert_true(b == a + 1);
  snprintf(want, sizeof want, "ID.DECODE %lld\r\n", a);
  r = feed(f, want, strlen(want), NULL);
  snprintf(want, sizeof want, "%%9\r\n$2\r\nid\r\n$%d\r\n%lld\r\n",
           snprintf(NULL, 0, "%lld", a), a);
  assert_memory_equal(r, want, strlen(want));
  assert_non_null(strstr(r, "$4\r\nnode\r\n:3\r\n"));
  assert_string_equal(FEED(f, "CLIENT GETNAME\r\n", NULL), "_\r\n");
  assert_string_equal(FEED(f, "CONFIG GET save\r\n", NULL), "%0\r\n");
  assert_string_equal(FEED(f, "COMMAND DOCS incr\r\n", NULL), "%0\r\n");
  assert_string_equal(FEED(f, "COMMAND INFO nope\r\n", NULL), "*1\r\n_\r\n");
  assert_string_equal(FEED(f, "COMMAND INFO incr\r\n", NULL),
                      "*1\r\n*10\r\n$4\r\nincr\r\n:2\r\n~2\r\n+write\r\n"
                      "+fast\r\n:1\r\n:1\r\n:1\r\n~0\r\n~0\r\n~0\r\n~0\r\n");
  r = FEED(f, "INFO server\r\n", NULL);
  assert_memory_equal(r, "=", 1);
  assert_non_null(strstr(r, "\r\ntxt:# Server\r\nredis_version:"));
  r = FEED(f, "CLIENT INFO\r\n", NULL);
  assert_memory_equal(r, "=", 1);
  snprintf(want, sizeof want, "\r\ntxt:id=%llu ", (unsigned long long)st->id);
  assert_non_null(strstr(r, want));
  assert_non_null(strstr(r, " resp=3 "));
  /* Errors and status lines are the same in both. */
  assert_string_equal(FEED(f, "PING\r\n", NULL), "+PONG\r\n");
  assert_memory_equal(FEED(f, "INCR nope\r\n", NULL), "-TAG_NOT_FOUND ", 15);
  assert_memory_equal(FEED(f, "HELLO 2\r\n", NULL), "*14\r\n", 5);
  assert_string_equal(FEED(f, "CLIENT GETNAME\r\n", NULL), "$-1\r\n");
  assert_string_equal(FEED(f, "CONFIG GET save\r\n", NULL), "*0\r\n");
  assert_string_equal(FEED(f, "COMMAND INFO incr\r\n", NULL),
                      "*1\r\n*10\r\n$4\r\nincr\r\n:2\r\n*2\r\n+write\r\n"
                      "+fast\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*0\r\n*0\r\n");
  assert_memory_equal(FEED(f, "INFO server\r\n", NULL), "$", 1);
  /* RESET goes back to RESP2. */
  assert_memory_equal(FEED(f, "HELLO 3\r\n", NULL), "%7\r\n", 4);
  assert_string_equal(FEED(f, "RESET\r\nCLIENT GETNAME\r\n", NULL),
                      "+RESET\r\n$-1\r\n");
}

/* The reply helpers by themselves, in both protocols. */
static void test_reply_helpers(void **state) {
  fixture *f = *state;
  frond__resp_client st = {0};
  frond__resp_ctx x = {0};
  frond__buf *out = &f->c->out;
  x.c = f->c;
  x.st = &st;
  x.out = out;
  for (st.proto = 2; st.proto <= 3; st.proto++) {
    out->len = 0;
    frond__resp_double(&x, 1.5);
    frond__resp_double(&x, -1.0 / 0.0);
    frond__resp_u64(&x, 7);
    frond__resp_u64(&x, UINT64_MAX);
    frond__resp_id(&x, INT64_MAX);
    frond__resp_verbatim(&x, "a\r\nb", 4);
    frond__resp_set(&x, 2);
    frond__resp_map(&x, 2);
    frond__resp_nil(&x);
    assert_int_equal(frond__buf_append(out, "", 1), 0);
    assert_string_equal(
        out->data, st.proto == 2
                       ? "$3\r\n1.5\r\n$4\r\n-inf\r\n:7\r\n"
                         "$20\r\n18446744073709551615\r\n"
                         "$19\r\n9223372036854775807\r\n$4\r\na\r\nb\r\n*2\r\n"
                         "*4\r\n$-1\r\n"
                       : ",1.5\r\n,-inf\r\n:7\r\n(18446744073709551615\r\n"
                         "$19\r\n9223372036854775807\r\n=8\r\ntxt:a\r\nb\r\n"
                         "~2\r\n%2\r\n_\r\n");
  }
  out->len = 0;
}

/* HELLO's options as Redis reads them: nothing changes unless all of it
** succeeds; AUTH and SETNAME work in one round trip. */
static void test_hello(void **state) {
  fixture *f = *state;
  /* Credentials are read at start: the connection opened before is not
  ** authenticated (RESET would need it). */
  fixture_token(f, "tok");
  assert_memory_equal(FEED(f, "HELLO 3\r\n", NULL), "-NOAUTH ", 8);
  assert_memory_equal(FEED(f, "HELLO 3 AUTH default nope\r\n", NULL),
                      "-WRONGPASS ", 11);
  assert_memory_equal(FEED(f, "HELLO 3 AUTH default tok SETNAME\r\n", NULL),
                      "-ERR Syntax error in HELLO option 'SETNAME'", 42);
  assert_string_equal(FEED(f, "INCR order\r\n", NULL),
                      "-NOAUTH Authentication required.\r\n");
  assert_string_equal(
      FEED(f, "HELLO 3 AUTH default tok SETNAME a\x01\r\n", NULL),
      "-ERR Client names cannot contain spaces, newlines or special "
      "characters.\r\n");
  /* The credentials were right: authenticated, still RESP2, no name. */
  assert_string_equal(FEED(f, "CLIENT GETNAME\r\n", NULL), "$-1\r\n");
  assert_memory_equal(FEED(f, "HELLO 3 AUTH default tok SETNAME app\r\n", NULL),
                      "%7\r\n", 4);
  assert_string_equal(FEED(f, "CLIENT GETNAME\r\n", NULL), "$3\r\napp\r\n");
  assert_string_equal(FEED(f, "HELLO x\r\n", NULL),
                      "-ERR Protocol version is not an integer or out of "
                      "range\r\n");
  assert_string_equal(FEED(f, "HELLO 1\r\n", NULL),
                      "-NOPROTO unsupported protocol version\r\n");
  /* Without a token, user "default" takes any password, as Redis' user
  ** without a password does; the one-argument AUTH is refused. */
  fixture_token(f, "");
  assert_string_equal(FEED(f, "RESET\r\n", NULL), "+RESET\r\n");
  assert_memory_equal(FEED(f, "HELLO 3 AUTH default any\r\n", NULL), "%7\r\n",
                      4);
  assert_string_equal(FEED(f, "AUTH default any\r\n", NULL), "+OK\r\n");
  assert_memory_equal(FEED(f, "AUTH any\r\n", NULL),
                      "-ERR AUTH <password> called without any password", 48);
  assert_memory_equal(FEED(f, "AUTH root any\r\n", NULL), "-WRONGPASS ", 11);
}

/* The handshake commands of current clients, answered as Redis answers
** them. */
static void test_client_handshake(void **state) {
  fixture *f = *state;
  assert_string_equal(FEED(f,
                           "CLIENT SETINFO LIB-NAME node-redis\r\n"
                           "CLIENT SETINFO lib-ver 5.1.0\r\n",
                           NULL),
                      "+OK\r\n+OK\r\n");
  assert_string_equal(
      FEED(f,
           "*4\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$8\r\nLIB-NAME\r\n"
           "$12\r\nx resp=3 y=z\r\n",
           NULL),
      "-ERR LIB-NAME cannot contain spaces, newlines or special "
      "characters.\r\n");
  assert_string_equal(FEED(f, "CLIENT SETINFO LIB-COLOR red\r\n", NULL),
                      "-ERR Unrecognized option 'LIB-COLOR'\r\n");
  assert_non_null(
      strstr(FEED(f, "CLIENT INFO\r\n", NULL),
             " lib-name=node-redis lib-ver=5.1.0 resp=2 user=default\n"));
  assert_string_equal(
      FEED(f, "CLIENT NO-EVICT on\r\nCLIENT NO-TOUCH OFF\r\n", NULL),
      "+OK\r\n+OK\r\n");
  assert_string_equal(FEED(f, "CLIENT NO-EVICT maybe\r\n", NULL),
                      "-ERR syntax error\r\n");
  assert_string_equal(
      FEED(f, "CLIENT NO-TOUCH\r\n", NULL),
      "-ERR wrong number of arguments for 'client|no-touch' command\r\n");
  assert_string_equal(
      FEED(f, "CLIENT GETNAME x\r\n", NULL),
      "-ERR wrong number of arguments for 'client|getname' command\r\n");
  assert_string_equal(FEED(f, "CLIENT TRACKING on\r\n", NULL),
                      "-ERR unknown subcommand 'TRACKING'. Try CLIENT "
                      "HELP.\r\n");
  assert_string_equal(FEED(f, "READONLY\r\nREADWRITE\r\nSELECT 0\r\n", NULL),
                      "+OK\r\n+OK\r\n+OK\r\n");
  assert_string_equal(FEED(f, "SELECT 1\r\n", NULL),
                      "-ERR DB index is out of range\r\n");
}

/* An HTTP request sent to the RESP port is closed at its first line,
** before anything under it runs. */
static void test_http_refused(void **state) {
  fixture *f = *state;
  static const char *const reqs[] = {
      ("POST /x HTTP/1.1\r\nHost: 127.0.0.1:6380\r\nContent-Type: text/plain"
       "\r\nContent-Length: 12\r\n\r\nINCR order\r\n"),
      "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
      "PUT /x HTTP/1.0\r\n\r\n",
      "host: 127.0.0.1\r\nINCR order\r\n",
      "HOST:\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
  };
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(reqs); i++) {
    int last;
    assert_string_equal(feed(f, reqs[i], strlen(reqs[i]), &last), "");
    assert_int_equal(last, -1);
  }
  assert_int_equal(STAT(f, http_refused), FROND__ARRAY_SIZE(reqs));
  assert_int_equal(FROND__SUM(&f->srv, ids_segment), 0);
  /* Lower-case words and a lone GET are commands (unknown ones). */
  assert_memory_equal(FEED(f, "get order\r\n", NULL),
                      "-ERR unknown command 'get'", 26);
  assert_memory_equal(FEED(f, "GET\r\n", NULL), "-ERR unknown command 'GET'",
                      26);
  /* A client library's GET (multibulk) is an unknown command too. */
  assert_memory_equal(FEED(f, "*2\r\n$3\r\nGET\r\n$1\r\n/\r\n", NULL),
                      "-ERR unknown command 'GET'", 26);
}

/* One reply of out at *p: an integer (n = 1) or an array of bulk IDs;
** returns how many IDs it held, each into ids. */
static size_t read_ids(const char **p, long long *ids) {
  long long n, len;
  size_t k = 0;
  if (**p == ':') {
    assert_int_equal(sscanf(*p, ":%lld\r\n", &ids[0]), 1);
    *p = strstr(*p, "\r\n") + 2;
    return 1;
  }
  assert_int_equal(sscanf(*p, "*%lld\r\n", &n), 1);
  *p = strstr(*p, "\r\n") + 2;
  for (; k < (size_t)n; k++) {
    assert_int_equal(sscanf(*p, "$%lld\r\n%lld\r\n", &len, &ids[k]), 2);
    *p = strstr(strstr(*p, "\r\n") + 2, "\r\n") + 2;
  }
  return k;
}

/* Batches, ranges and single IDs of a tag whose segments (of 10) run out
** every few commands, pipelined: those that wait for a load finish off
** the loop and answer from the waiting request's own room. Every ID is
** handed out once, in the order of the commands, and counted once. */
static void test_batches_across_segments(void **state) {
  fixture *f = *state;
  char in[2048];
  long long ids[64], all[512], prev = 0;
  size_t n = 0, total = 0, i, k, got;
  const char *p;
  fixture_tag(f, "wide", 10);
  for (i = 0; i < 12; i++)
    n += (size_t)snprintf(in + n, sizeof in - n, "%s",
                          i % 4 == 3   ? "ID.RANGE wide 15\r\n"
                          : i % 4 == 2 ? "INCR wide\r\n"
                                       : "ID.NEXT wide 7\r\n");
  p = feed(f, in, n, NULL);
  for (i = 0; i < 12; i++) {
    got = read_ids(&p, ids);
    if (i % 4 == 3) { /* a range [start, end) of 15 */
      assert_int_equal(got, 2);
      assert_int_equal(ids[1] - ids[0], 15);
      for (k = 0; k < 15; k++)
        all[total++] = ids[0] + (long long)k;
    } else {
      assert_int_equal(got, i % 4 == 2 ? 1 : 7);
      for (k = 0; k < got; k++)
        all[total++] = ids[k];
    }
  }
  assert_string_equal(p, "");
  for (i = 0; i < total; i++) {
    assert_true(all[i] > prev); /* increasing, so never twice */
    prev = all[i];
  }
  assert_int_equal(total, 3 * (7 + 7 + 1 + 15));
  assert_int_equal(FROND__SUM(&f->srv, ids_segment), total);
  /* The tag is new to the allocator: the first batch at least was looked
  ** up and answered off the loop (a load behind the rest usually too). */
  assert_true(f->holds >= 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_incr, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_counts, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_multi_exec, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_multi_abort, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_multi_waits, setup,
                                      fixture_teardown),
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
      cmocka_unit_test_setup_teardown(test_batches_across_segments, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_resp3, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_reply_helpers, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_hello, setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_client_handshake, setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_http_refused, setup,
                                      fixture_teardown),
  };
  return frond_run_tests(tests, NULL, NULL);
}
