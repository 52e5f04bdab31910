/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_log.c -- the library's stderr log sink: text and JSON lines, the
** fields JSON lines carry, escaping, the journald priority prefix, long
** messages and lines from many threads at once.
*/
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- stderr into a file -------------------------------------------------- */

static char cap_path[600];
static int saved_stderr = -1;

static void capture_begin(void) {
  const char *base = getenv("TMPDIR");
  int fd;
  snprintf(cap_path, sizeof cap_path, "%s/frond-log-XXXXXX",
           base ? base : "/tmp");
  fd = mkstemp(cap_path);
  assert_true(fd >= 0);
  close(fd);
  fd = open(cap_path, O_WRONLY | O_APPEND);
  assert_true(fd >= 0);
  fflush(stderr);
  saved_stderr = dup(STDERR_FILENO);
  assert_true(saved_stderr >= 0);
  assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
  close(fd);
}

/* Point JOURNAL_STREAM at the capture file (what systemd does for a unit
** whose stderr is the journal), or at something else. */
static void journal_stream(int match) {
  struct stat st;
  char v[64];
  assert_int_equal(fstat(STDERR_FILENO, &st), 0);
  snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev,
           (unsigned long long)st.st_ino + (match ? 0 : 1));
  setenv("JOURNAL_STREAM", v, 1);
}

/* Restore stderr; return what was written (free it). */
static char *capture_end(void) {
  FILE *f;
  char *buf = calloc(1, 1 << 20);
  size_t n;
  assert_int_equal(dup2(saved_stderr, STDERR_FILENO), STDERR_FILENO);
  close(saved_stderr);
  f = fopen(cap_path, "r");
  assert_non_null(f);
  n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose(f);
  unlink(cap_path);
  return buf;
}

static int reset(void **state) {
  (void)state;
  unsetenv("JOURNAL_STREAM");
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
  assert_int_equal(frond_log_set_format(FROND_LOG_TEXT), 0);
  frond__log_clear_fields();
  return 0;
}

/* "2026-11-22T01:37:58.733Z" at p. */
static void assert_rfc3339(const char *p) {
  static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";
  size_t i;
  for (i = 0; i < sizeof pat - 1; i++) {
    if (pat[i] == 'd' ? (p[i] < '0' || p[i] > '9') : p[i] != pat[i])
      fail_msg("not an RFC 3339 time at %zu: '%.24s'", i, p);
  }
}

/* Check a JSON line's time and return what follows it. */
static const char *after_time(const char *line) {
  static const char head[] = "{\"time\":\"";
  if (strncmp(line, head, sizeof head - 1) != 0)
    fail_msg("not a JSON log line: '%s'", line);
  assert_rfc3339(line + sizeof head - 1);
  return line + sizeof head - 1 + 24;
}

/* ---- tests ----------------------------------------------------------------
 */

static void test_text(void **state) {
  char *out;
  (void)state;
  capture_begin();
  frond_log(FROND_LOG_WARN, "store not reached, retrying: %s", "timeout");
  frond_log(FROND_LOG_DEBUG, "not shown at info");
  /* A backend's message may end in a newline or hold several: the event
  ** stays one line. */
  frond_log(FROND_LOG_ERROR, "libpq: %s", "server closed\nthe connection\n");
  out = capture_end();
  assert_string_equal(out, "frond: warn: store not reached, retrying: timeout\n"
                           "frond: error: libpq: server closed the "
                           "connection\n");
  free(out);
}

static void test_text_fields(void **state) {
  frond__log_field ev[] = {{"method", "GET", 0},
                           {"path", "/v1/segment/a b", 0},
                           {"status", NULL, 404}};
  char *out;
  (void)state;
  assert_int_equal(frond__log_set_field("node", NULL, 7), 0);
  capture_begin();
  frond__log_fields(FROND_LOG_INFO, ev, 3, "request");
  out = capture_end();
  /* Process-wide fields are for JSON lines; text lines stay as they were. */
  assert_string_equal(
      out, "frond: info: request method=GET path=\"/v1/segment/a b\" "
           "status=404\n");
  free(out);
}

static void test_json(void **state) {
  frond__log_field ev[] = {{"method", "GET", 0}, {"status", NULL, 200}};
  char *out, *second;
  (void)state;
  assert_int_equal(frond_log_set_format(FROND_LOG_JSON), 0);
  capture_begin();
  frond_log(FROND_LOG_INFO, "listening on %s", "127.0.0.1:8080");
  assert_int_equal(frond__log_set_field("node", NULL, 7), 0);
  assert_int_equal(frond__log_set_field("layout", "frond", 0), 0);
  frond__log_fields(FROND_LOG_WARN, ev, 2, "slow");
  out = capture_end();
  second = strchr(out, '\n');
  assert_non_null(second);
  *second++ = '\0';
  assert_string_equal(after_time(out),
                      "\",\"level\":\"info\",\"msg\":\"listening on "
                      "127.0.0.1:8080\"}");
  assert_string_equal(after_time(second),
                      "\",\"level\":\"warn\",\"msg\":\"slow\",\"node\":7,"
                      "\"layout\":\"frond\",\"method\":\"GET\",\"status\":"
                      "200}\n");
  free(out);
}

static void test_json_event_field_wins(void **state) {
  frond__log_field ev[] = {{"node", NULL, 9}};
  char *out;
  (void)state;
  assert_int_equal(frond_log_set_format(FROND_LOG_JSON), 0);
  assert_int_equal(frond__log_set_field("node", NULL, 7), 0);
  assert_int_equal(frond__log_set_field("node", "replaced", 0), 0);
  capture_begin();
  frond_log(FROND_LOG_ERROR, "a");
  frond__log_fields(FROND_LOG_ERROR, ev, 1, "b");
  out = capture_end();
  assert_non_null(strstr(out, "\"msg\":\"a\",\"node\":\"replaced\"}\n"));
  /* No key twice in one object: the event's node replaces the process's. */
  assert_non_null(strstr(out, "\"msg\":\"b\",\"node\":9}\n"));
  free(out);
}

static void test_json_escaping(void **state) {
  char *out;
  (void)state;
  assert_int_equal(frond_log_set_format(FROND_LOG_JSON), 0);
  capture_begin();
  /* quote, backslash, newline, tab, a control character, DEL, valid
  ** UTF-8 (é, 𝄞), a stray continuation byte, a truncated sequence. */
  frond_log(FROND_LOG_INFO, "%s",
            "q\"b\\n\nt\tc\x01"
            "d\x7f"
            "e\xc3\xa9 g\xf0\x9d\x84\x9e x\x80y\xe2\x82");
  out = capture_end();
  assert_string_equal(after_time(out),
                      "\",\"level\":\"info\",\"msg\":\"q\\\"b\\\\n\\nt\\tc"
                      "\\u0001d\\u007fe\xc3\xa9 g\xf0\x9d\x84\x9e "
                      "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd\"}\n");
  free(out);
}

static void test_long_messages(void **state) {
  char big[5000], *out, *p;
  size_t i, len;
  (void)state;
  assert_int_equal(frond_log_set_format(FROND_LOG_JSON), 0);
  assert_int_equal(frond__log_set_field("layout", "frond", 0), 0);
  /* 1023 bytes survive formatting; each \x01 escapes to six: the line is
  ** cut inside the message, at an escape's boundary, and still closes. */
  memset(big, '\x01', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  capture_begin();
  frond_log(FROND_LOG_INFO, "%s", big);
  out = capture_end();
  len = strlen(out);
  assert_true(len <= 8192);
  assert_true(len > 20);
  assert_string_equal(out + len - 20, "\",\"layout\":\"frond\"}\n");
  p = strstr(out, "\"msg\":\"") + 7;
  for (i = 0; p[i] != '"'; i += 6)
    assert_memory_equal(p + i, "\\u0001", 6);
  assert_int_equal(i, 1023 * 6);
  free(out);
  /* A cut through a multibyte character leaves U+FFFD, not broken text. */
  for (i = 0; i + 2 < sizeof big; i += 2)
    memcpy(big + i, "\xc3\xa9", 2);
  big[i] = '\0';
  capture_begin();
  frond_log(FROND_LOG_INFO, "%s", big); /* 1023 bytes: 511 and a half */
  out = capture_end();
  p = strstr(out, "\"msg\":\"") + 7;
  for (i = 0; p[i] != '"'; i += 2)
    if (memcmp(p + i, "\xc3\xa9", 2) != 0)
      break;
  assert_int_equal(i, 511 * 2);
  assert_memory_equal(p + i, "\xef\xbf\xbd\"", 4);
  free(out);
}

static void test_journald(void **state) {
  char *out, *second;
  (void)state;
  capture_begin();
  journal_stream(1);
  assert_int_equal(frond_log_set_format(FROND_LOG_TEXT), 0);
  frond_log(FROND_LOG_ERROR, "e");
  frond_log(FROND_LOG_WARN, "w");
  frond_log(FROND_LOG_INFO, "i");
  frond_log_set(NULL, NULL, FROND_LOG_DEBUG); /* detects again */
  frond_log(FROND_LOG_DEBUG, "d");
  assert_int_equal(frond_log_set_format(FROND_LOG_JSON), 0);
  frond_log(FROND_LOG_WARN, "j");
  out = capture_end();
  second = strstr(out, "<4>{");
  assert_non_null(second);
  *second = '\0';
  /* The journal records the level and the program: text lines keep only
  ** the message, after the sd-daemon(3) priority. */
  assert_string_equal(out, "<3>e\n<4>w\n<6>i\n<7>d\n");
  assert_string_equal(after_time(second + 3),
                      "\",\"level\":\"warn\",\"msg\":\"j\"}\n");
  free(out);
}

static void test_journald_other_stream(void **state) {
  char *out;
  (void)state;
  capture_begin();
  /* stderr is not the stream JOURNAL_STREAM names (a child started from
  ** a unit with its stderr redirected): plain lines. */
  journal_stream(0);
  assert_int_equal(frond_log_set_format(FROND_LOG_TEXT), 0);
  assert_int_equal(frond__log_journal_detect(), 0);
  frond_log(FROND_LOG_WARN, "a");
  setenv("JOURNAL_STREAM", "12:34x", 1);
  assert_int_equal(frond__log_journal_detect(), 0);
  setenv("JOURNAL_STREAM", "", 1);
  assert_int_equal(frond__log_journal_detect(), 0);
  journal_stream(1);
  assert_int_equal(frond__log_journal_detect(), 1);
  unsetenv("JOURNAL_STREAM");
  assert_int_equal(frond_log_set_format(FROND_LOG_TEXT), 0);
  frond_log(FROND_LOG_WARN, "b");
  out = capture_end();
  assert_string_equal(out, "frond: warn: a\nfrond: warn: b\n");
  free(out);
}

static void test_bad_arguments(void **state) {
  char key[40];
  int i;
  (void)state;
  assert_int_equal(frond_log_set_format(2), FROND_EINVAL);
  assert_int_equal(frond_log_set_format(-1), FROND_EINVAL);
  assert_int_equal(frond__log_set_field("Node", NULL, 1), FROND_EINVAL);
  assert_int_equal(frond__log_set_field("a-b", NULL, 1), FROND_EINVAL);
  assert_int_equal(frond__log_set_field("", NULL, 1), FROND_EINVAL);
  assert_int_equal(frond__log_set_field(NULL, NULL, 1), FROND_EINVAL);
  assert_int_equal(frond__log_set_field("time", "x", 0), FROND_EINVAL);
  assert_int_equal(frond__log_set_field("level", "x", 0), FROND_EINVAL);
  assert_int_equal(frond__log_set_field("msg", "x", 0), FROND_EINVAL);
  memset(key, 'k', 32);
  key[32] = '\0';
  assert_int_equal(frond__log_set_field(key, NULL, 1), FROND_EINVAL);
  key[31] = '\0';
  assert_int_equal(frond__log_set_field(key, NULL, 1), 0);
  {
    char v[129];
    memset(v, 'v', 128);
    v[128] = '\0';
    assert_int_equal(frond__log_set_field("v", v, 0), FROND_EINVAL);
  }
  frond__log_clear_fields();
  for (i = 0; i < 8; i++) {
    snprintf(key, sizeof key, "f%d", i);
    assert_int_equal(frond__log_set_field(key, NULL, i), 0);
  }
  assert_int_equal(frond__log_set_field("f8", NULL, 8), FROND_EINVAL);
  assert_int_equal(frond__log_set_field("f3", NULL, 33), 0); /* replace */
}

static int sink_calls;
static char sink_msg[128];
static void sink(void *ctx, int level, const char *msg) {
  (void)ctx;
  (void)level;
  sink_calls++;
  snprintf(sink_msg, sizeof sink_msg, "%s", msg);
}

static void test_custom_sink(void **state) {
  char *out;
  (void)state;
  assert_int_equal(frond_log_set_format(FROND_LOG_JSON), 0);
  frond_log_set(sink, NULL, FROND_LOG_INFO);
  capture_begin();
  frond_log(FROND_LOG_INFO, "to the sink %d", 1);
  out = capture_end();
  assert_string_equal(out, "");
  assert_int_equal(sink_calls, 1);
  assert_string_equal(sink_msg, "to the sink 1");
  free(out);
}

#define THREADS 4
#define LINES 300

static void *log_lines(void *arg) {
  int t = (int)(intptr_t)arg, i;
  for (i = 0; i < LINES; i++) {
    frond__log_field ev[] = {{"thread", NULL, t}, {"i", NULL, i}};
    frond__log_fields(FROND_LOG_INFO, ev, 2, "%0400d", i);
  }
  return NULL;
}

static void test_threads(void **state) {
  pthread_t th[THREADS];
  int seen[THREADS] = {0}, n = 0, t, i;
  char *out, *line, *save = NULL;
  (void)state;
  assert_int_equal(frond_log_set_format(FROND_LOG_JSON), 0);
  capture_begin();
  for (t = 0; t < THREADS; t++)
    assert_int_equal(
        pthread_create(&th[t], NULL, log_lines, (void *)(intptr_t)t), 0);
  for (t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  out = capture_end();
  /* Every line whole: one object, its thread's lines in order. */
  for (line = strtok_r(out, "\n", &save); line != NULL;
       line = strtok_r(NULL, "\n", &save)) {
    const char *rest = after_time(line);
    char want[600];
    if (sscanf(strstr(rest, "\"thread\":"), "\"thread\":%d,\"i\":%d}", &t,
               &i) != 2 ||
        t < 0 || t >= THREADS)
      fail_msg("torn line: %s", line);
    snprintf(want, sizeof want,
             "\",\"level\":\"info\",\"msg\":\"%0400d\",\"thread\":%d,"
             "\"i\":%d}",
             i, t, i);
    assert_string_equal(rest, want);
    assert_int_equal(i, seen[t]);
    seen[t]++;
    n++;
  }
  assert_int_equal(n, THREADS * LINES);
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_text, reset),
      cmocka_unit_test_setup(test_text_fields, reset),
      cmocka_unit_test_setup(test_json, reset),
      cmocka_unit_test_setup(test_json_event_field_wins, reset),
      cmocka_unit_test_setup(test_json_escaping, reset),
      cmocka_unit_test_setup(test_long_messages, reset),
      cmocka_unit_test_setup(test_journald, reset),
      cmocka_unit_test_setup(test_journald_other_stream, reset),
      cmocka_unit_test_setup(test_bad_arguments, reset),
      cmocka_unit_test_setup(test_custom_sink, reset),
      cmocka_unit_test_setup(test_threads, reset),
  };
  return frond_run_tests(tests, NULL, NULL);
}
