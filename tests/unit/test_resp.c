/*
** test_resp.c -- the RESP front's replies, byte for byte, without sockets.
**
** A server with a real generator and a SQLite store in a temp dir, one
** worker and one connection that are never attached to a loop: input goes
** straight to the protocol's on_data, as the connection layer would hand
** it over, and the answer is read back from the connection's output.
*/
#include "testutil.h"
#include "server/resp.h"

typedef struct fixture {
  char *dir;
  frond__server srv;
  frond__worker w;
  frond__endpoint ep;
  frond__resp_stats stats;
  frond__conn c;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  char uri[600];
  frond_error err = {0, ""};
  frond_store *st;
  frond_seg *seg;
  f->dir = tmpdir_make();
  snprintf(uri, sizeof uri, "sqlite://%s/frond.db", f->dir);
  frond__config_defaults(&f->srv.cfg);
  assert_int_equal(frond_store_open(&st, uri, &err), 0);
  assert_int_equal(frond_store_tag_create(st, "order", 100, 1, "", &err), 0);
  frond_store_close(st);
  assert_int_equal(frond_seg_open(&seg, uri, NULL, &err), 0);
  atomic_store(&f->srv.seg, seg);
  f->srv.seg_enabled = 1;
  assert_int_equal(frond_layout_parse("frond", &f->srv.layout, &err), 0);
  assert_int_equal(frond_gen_create(&f->srv.gen, &f->srv.layout, 3, NULL, &err),
                   0);
  f->srv.node = 3;
  f->srv.nworkers = 1;
  f->srv.workers = &f->w;
  f->srv.protos[0] = &frond__resp_proto;
  f->srv.nprotos = 1;
  f->w.srv = &f->srv;
  f->w.ids = malloc((size_t)f->srv.cfg.max_count * sizeof(int64_t));
  assert_int_equal(frond__resp_proto.configure(&f->srv, &f->ep, &err), 0);
  f->w.listeners[0].w = &f->w;
  f->w.listeners[0].proto = &frond__resp_proto;
  f->w.listeners[0].ep = &f->ep;
  f->w.listeners[0].state = &f->stats;
  f->w.nlisteners = 1;
  f->c.w = &f->w;
  f->c.l = &f->w.listeners[0];
  f->c.proto = &frond__resp_proto;
  assert_int_equal(frond__resp_proto.on_open(&f->c), 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  frond__resp_proto.on_close(&f->c);
  frond__buf_free(&f->c.out);
  frond__buf_free(&f->w.scratch);
  free(f->w.ids);
  frond_seg_close(f->srv.seg);
  frond_gen_close(f->srv.gen, NULL);
  tmpdir_remove(f->dir);
  free(f);
  return 0;
}

/* Feed s as the connection layer would: whole commands, in a loop; returns
** the answer (static, NUL-terminated) and the last on_data result. */
static const char *feed(fixture *f, const char *s, size_t len, int *last) {
  static char out[1 << 16];
  size_t off = 0;
  int n = 0;
  f->c.out.len = 0;
  while (off < len) {
    n = frond__resp_proto.on_data(&f->c, s + off, len - off);
    if (n <= 0)
      break;
    off += (size_t)n;
  }
  if (last != NULL)
    *last = n;
  assert_true(f->c.out.len < sizeof out);
  memcpy(out, f->c.out.data ? f->c.out.data : "", f->c.out.len);
  out[f->c.out.len] = '\0';
  return out;
}

#define FEED(f, lit, last) feed(f, lit, sizeof(lit) - 1, last)

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
    f->c.out.len = 0;
    /* The first read: only what arrived. */
    while (off < cut &&
           (n = frond__resp_proto.on_data(&f->c, in + off, cut - off)) > 0)
      off += (size_t)n;
    while (off < sizeof in - 1 &&
           (n = frond__resp_proto.on_data(&f->c, in + off,
                                          sizeof in - 1 - off)) > 0)
      off += (size_t)n;
    assert_int_equal(off, sizeof in - 1);
    glen = f->c.out.len;
    memcpy(got, f->c.out.data, glen);
    got[glen] = '\0';
    assert_string_equal(got, want);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_incr, setup, teardown),
      cmocka_unit_test_setup_teardown(test_counts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_snowflake_decode, setup, teardown),
      cmocka_unit_test_setup_teardown(test_connection_commands, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_protocol_error, setup, teardown),
      cmocka_unit_test_setup_teardown(test_auth, setup, teardown),
      cmocka_unit_test_setup_teardown(test_splits, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
