/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_layout.c -- layouts: presets, specs, validation, compose/decode.
*/
#include "testutil.h"

static void parse_ok(const char *spec, frond_layout *l) {
  frond_error err = {0, ""};
  int rc = frond_layout_parse(spec, l, &err);
  if (rc != 0)
    fail_msg("'%s': %s", spec, err.message);
}

static void parse_bad(const char *spec, const char *expect) {
  frond_error err = {0, ""};
  frond_layout l;
  int rc = frond_layout_parse(spec, &l, &err);
  if (rc != FROND_ELAYOUT_INVALID)
    fail_msg("'%s' gave %d, want LAYOUT_INVALID", spec, rc);
  assert_int_equal(err.code, FROND_ELAYOUT_INVALID);
  if (strstr(err.message, expect) == NULL)
    fail_msg("'%s': message '%s' lacks '%s'", spec, err.message, expect);
}

static void test_presets(void **state) {
  frond_layout l;
  (void)state;
  assert_int_equal(frond_layout_preset_count(), 6);
  parse_ok("twitter", &l);
  assert_int_equal(l.time_bits, 41);
  assert_int_equal(l.node_bits, 10);
  assert_int_equal(l.dc_bits, 5);
  assert_int_equal(l.worker_bits, 5);
  assert_int_equal(l.seq_bits, 12);
  assert_int_equal(l.unit_ms, 1);
  assert_int_equal(l.epoch_ms, INT64_C(1288834974657));
  parse_ok("sonyflake", &l);
  assert_int_equal(l.time_bits, 39);
  assert_int_equal(l.node_bits, 16);
  assert_int_equal(l.seq_bits, 8);
  assert_int_equal(l.unit_ms, 10);
  parse_ok("baidu", &l);
  assert_int_equal(l.time_bits, 28);
  assert_int_equal(l.node_bits, 22);
  assert_int_equal(l.seq_bits, 13);
  assert_int_equal(l.unit_ms, 1000);
  /* Baidu's default ran out on 2024-11-20. */
  {
    char when[40];
    frond__format_rfc3339(frond_layout_end_ms(&l), when, sizeof(when));
    assert_memory_equal(when, "2024-11-20", 10);
  }
  parse_ok("instagram", &l);
  assert_int_equal(l.node_bits, 13);
  assert_int_equal(l.seq_bits, 10);
  for (size_t i = 0; i < frond_layout_preset_count(); i++) {
    frond_error err = {0, ""};
    const frond_layout *p = frond_layout_preset(i);
    assert_int_equal(frond_layout_validate(p, INT64_C(1764000000000), &err), 0);
  }
  parse_ok("frond", &l);
  assert_int_equal(frond_layout_id_bits(&l), 63);
  assert_true(frond_layout_end_ms(&l) > INT64_C(3900000000000)); /* > 2093 */
  assert_true(frond_layout_ids_per_second(&l) == 4096000.0);
  assert_int_equal(frond_layout_max_node(&l), 1023);
}

static void test_specs(void **state) {
  frond_layout l;
  char buf[128];
  (void)state;
  parse_ok("time=41,dc=5,worker=5,seq=12,unit=1ms,epoch=2024-01-01T00:00:00Z",
           &l);
  assert_int_equal(l.node_bits, 10);
  assert_int_equal(l.epoch_ms, INT64_C(1704067200000));
  assert_string_equal(l.name, "custom");
  parse_ok("time=41,node=10,seq=12", &l);
  assert_int_equal(l.dc_bits, 0);
  assert_int_equal(l.unit_ms, 1);
  parse_ok("time=31,node=16,seq=16,unit=1s,epoch=2020-02-29", &l);
  assert_int_equal(l.unit_ms, 1000);
  assert_int_equal(l.epoch_ms, INT64_C(1582934400000));
  parse_ok("time=40,node=12,seq=11,unit=10ms,epoch=1700000000123", &l);
  assert_int_equal(l.epoch_ms, INT64_C(1700000000123));
  parse_ok("time=41,node=10,seq=12,epoch=2024-01-01T12:30:45.250Z", &l);
  assert_int_equal(l.epoch_ms, INT64_C(1704112245250));
  /* format -> parse is the identity. */
  for (size_t i = 0; i < frond_layout_preset_count(); i++) {
    frond_layout back;
    const frond_layout *p = frond_layout_preset(i);
    frond_layout_format(p, buf, sizeof(buf));
    parse_ok(buf, &back);
    assert_int_equal(back.time_bits, p->time_bits);
    assert_int_equal(back.node_bits, p->node_bits);
    assert_int_equal(back.dc_bits, p->dc_bits);
    assert_int_equal(back.worker_bits, p->worker_bits);
    assert_int_equal(back.seq_bits, p->seq_bits);
    assert_int_equal(back.unit_ms, p->unit_ms);
    assert_int_equal(back.epoch_ms, p->epoch_ms);
  }
}

static void test_bad_specs(void **state) {
  (void)state;
  parse_bad("time=42,node=10,seq=12", "= 64, must be at most 63");
  parse_bad("time=50,node=10,seq=12", "= 72, must be at most 63");
  parse_bad("time=63,node=0,seq=0", "sequence bits must be at least 1");
  parse_bad("time=42,node=0,seq=22", "= 64, must be at most 63");
  parse_bad("time=0,node=51,seq=12", "time bits must be at least 1");
  parse_bad("time=41,node=22,seq=0", "sequence bits must be at least 1");
  parse_bad("time=41,node=10,seq=12,unit=0ms", "at least 1ms");
  parse_bad("time=41,node=10,seq=12,unit=0s", "at least 1ms");
  parse_bad("time=41,node=10,seq=12,unit=5m", "is not <n>ms or <n>s");
  parse_bad("time=41,node=10,seq=12,unit=2000000s", "at most 1 day");
  parse_bad("time=61,node=1,seq=1,unit=1s", "overflow");
  parse_bad("time=41,node=10,seq=12,epoch=2999-01-01", "in the future");
  parse_bad("time=41,node=10,seq=12,epoch=2024-02-30", "neither unix ms");
  parse_bad("time=41,node=10,seq=12,epoch=yesterday", "neither unix ms");
  parse_bad("time=41,node=10,seq=12,foo=1", "unknown layout key 'foo'");
  parse_bad("time=41,time=41,node=10,seq=12", "'time' given twice");
  parse_bad("time=x,node=10,seq=12", "not a number");
  parse_bad("time=-1,node=10,seq=12", "not a number");
  parse_bad("time=41,node=10,seq=12,", "ends with ','");
  parse_bad("time=41,dc=5,seq=12", "go together");
  parse_bad("time=41,dc=0,worker=10,seq=12", "at least 1");
  parse_bad("time=41,node=9,dc=5,worker=5,seq=12", "disagrees");
  parse_bad("time=41,seq=22", "needs");
  parse_bad("twitterx", "neither a preset");
  parse_bad("", "neither a preset");
  parse_bad("time", "neither a preset");
  parse_bad("time41,node=10", "is not key=value");
}

/* The js preset: IDs stay below 2^53 for its whole life, so a double (a
** JavaScript number, a JSON number in most parsers) holds each exactly. */
static void test_js_safe(void **state) {
  frond_layout l, s;
  frond_fields f, g;
  frond_error err = {0, ""};
  int64_t id;
  char spec[128];
  (void)state;
  parse_ok("js", &l);
  assert_int_equal(frond_layout_id_bits(&l), 53);
  assert_int_equal(l.time_bits, 41);
  assert_int_equal(l.node_bits, 5);
  assert_int_equal(l.seq_bits, 7);
  assert_true(frond_layout_ids_per_second(&l) == 128000.0);
  assert_int_equal(frond_layout_max_node(&l), 31);
  assert_true(frond_layout_end_ms(&l) > INT64_C(3900000000000)); /* > 2093 */
  /* The largest ID of its life is 2^53 - 1, and a double holds it. */
  memset(&f, 0, sizeof(f));
  f.time = (INT64_C(1) << 41) - 1;
  f.node = 31;
  f.sequence = 127;
  assert_int_equal(frond_compose(&l, &f, &id, NULL), 0);
  assert_int_equal(id, (INT64_C(1) << 53) - 1);
  assert_true((int64_t)(double)id == id);
  /* IDs at or above 2^53 are not IDs of this layout. */
  assert_int_equal(frond_decode(&l, INT64_C(1) << 53, &g, &err),
                   FROND_EID_INVALID);
  assert_non_null(strstr(err.message, "2^53"));
  /* A custom layout below 63 bits parses and prints back. */
  parse_ok("time=40,node=6,seq=6", &s);
  assert_int_equal(frond_layout_id_bits(&s), 52);
  frond_layout_format(&l, spec, sizeof(spec));
  parse_ok(spec, &s);
  assert_int_equal(frond_layout_id_bits(&s), 53);
}

static void test_validate(void **state) {
  frond_layout l = *preset("frond");
  frond_error err = {0, ""};
  (void)state;
  assert_int_equal(frond_layout_validate(&l, frond_clock_realtime(NULL), &err),
                   0);
  l.epoch_ms = frond_clock_realtime(NULL) + 60000;
  assert_int_equal(frond_layout_validate(&l, frond_clock_realtime(NULL), &err),
                   FROND_ELAYOUT_INVALID);
  assert_non_null(strstr(err.message, "future"));
  l = *preset("twitter");
  l.worker_bits = 4;
  assert_int_equal(frond_layout_validate(&l, frond_clock_realtime(NULL), &err),
                   FROND_ELAYOUT_INVALID);
}

/* Simpleflake's layout without its random tail: 41 time bits over a 22-bit
** sequence and no node field. One node ID (0); time in the top bits, the
** sequence right below it; decode and compose round-trip; spec and format
** agree; a node other than 0 is refused. */
static void test_no_node_bits(void **state) {
  frond_layout l, back;
  frond_fields f, g;
  frond_error err = {0, ""};
  int64_t id;
  uint64_t node = 7;
  char spec[160];
  (void)state;
  parse_ok("time=41,node=0,seq=22", &l);
  assert_int_equal(l.node_bits, 0);
  assert_int_equal(l.dc_bits, 0);
  assert_int_equal(frond_layout_id_bits(&l), 63);
  assert_int_equal(frond_layout_max_node(&l), 0);
  assert_true(frond_layout_ids_per_second(&l) == 4194304000.0);
  frond_layout_format(&l, spec, sizeof(spec));
  assert_non_null(strstr(spec, "time=41,node=0,seq=22,"));
  parse_ok(spec, &back);
  assert_int_equal(back.node_bits, 0);
  assert_int_equal(back.seq_bits, 22);
  assert_int_equal(back.epoch_ms, l.epoch_ms);
  memset(&f, 0, sizeof(f));
  f.time = 123456789;
  f.sequence = (UINT64_C(1) << 22) - 1;
  assert_int_equal(frond_compose(&l, &f, &id, NULL), 0);
  assert_int_equal(id, (INT64_C(123456789) << 22) | ((INT64_C(1) << 22) - 1));
  assert_int_equal(frond_decode(&l, id, &g, NULL), 0);
  assert_int_equal(g.time, f.time);
  assert_int_equal(g.node, 0);
  assert_int_equal(g.worker, 0);
  assert_int_equal(g.datacenter, 0);
  assert_int_equal(g.sequence, f.sequence);
  assert_int_equal(g.unix_ms, l.epoch_ms + f.time);
  /* The largest ID of its life is 2^63 - 1. */
  f.time = (INT64_C(1) << 41) - 1;
  assert_int_equal(frond_compose(&l, &f, &id, NULL), 0);
  assert_int_equal(id, INT64_MAX);
  assert_int_equal(frond_decode(&l, id, &g, NULL), 0);
  assert_int_equal(g.time, f.time);
  assert_int_equal(g.sequence, f.sequence);
  /* Node 1 does not exist here. */
  f.node = 1;
  assert_int_equal(frond_compose(&l, &f, &id, &err), FROND_ENODE_RANGE);
  assert_int_equal(frond_layout_node(&l, 0, 1, &node, &err), FROND_ENODE_RANGE);
  assert_int_equal(frond_layout_node(&l, 0, 0, &node, &err), 0);
  assert_int_equal(node, 0);
  /* Still no zero-width time or sequence, and no empty split. */
  parse_bad("time=41,node=0,seq=0", "sequence bits must be at least 1");
  parse_bad("time=41,dc=0,worker=0,seq=22", "dc and worker bits must be");
  /* A js-sized variant: 53 bits, the whole 12 below time for sequence. */
  parse_ok("time=41,node=0,seq=12", &l);
  assert_int_equal(frond_layout_id_bits(&l), 53);
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void test_compose_decode(void **state) {
  uint64_t seed = 88172645463325252ULL;
  (void)state;
  for (size_t i = 0; i < frond_layout_preset_count(); i++) {
    const frond_layout *l = frond_layout_preset(i);
    for (int k = 0; k < 20000; k++) {
      frond_fields f, g;
      int64_t id;
      memset(&f, 0, sizeof(f));
      f.time = (int64_t)(rnd(&seed) & ((UINT64_C(1) << l->time_bits) - 1));
      f.node = rnd(&seed) & frond_layout_max_node(l);
      f.sequence = rnd(&seed) & ((UINT64_C(1) << l->seq_bits) - 1);
      if (k == 0) { /* the extremes too */
        f.time = (INT64_C(1) << l->time_bits) - 1;
        f.node = frond_layout_max_node(l);
        f.sequence = (UINT64_C(1) << l->seq_bits) - 1;
      }
      assert_int_equal(frond_compose(l, &f, &id, NULL), 0);
      assert_true(id >= 0);
      assert_int_equal(frond_decode(l, id, &g, NULL), 0);
      assert_int_equal(g.time, f.time);
      assert_int_equal(g.node, f.node);
      assert_int_equal(g.sequence, f.sequence);
      assert_int_equal(g.unix_ms, l->epoch_ms + f.time * l->unit_ms);
      if (l->dc_bits) {
        assert_int_equal(g.datacenter << l->worker_bits | g.worker, f.node);
      } else {
        assert_int_equal(g.worker, f.node);
      }
    }
  }
}

static void test_compose_errors(void **state) {
  const frond_layout *l = preset("twitter");
  frond_fields f;
  frond_error err = {0, ""};
  int64_t id = 42;
  uint64_t node;
  (void)state;
  memset(&f, 0, sizeof(f));
  f.time = INT64_C(1) << 41;
  assert_int_equal(frond_compose(l, &f, &id, &err), FROND_ETIME_EXHAUSTED);
  f.time = 1;
  f.node = 1024;
  assert_int_equal(frond_compose(l, &f, &id, &err), FROND_ENODE_RANGE);
  f.node = 0;
  f.sequence = 4096;
  assert_int_equal(frond_compose(l, &f, &id, &err), FROND_EINVAL);
  assert_int_equal(id, 42);
  assert_int_equal(frond_decode(l, -5, &f, &err), FROND_EID_INVALID);
  assert_non_null(strstr(err.message, "negative"));
  assert_int_equal(frond_layout_node(l, 31, 31, &node, NULL), 0);
  assert_int_equal(node, 1023);
  assert_int_equal(frond_layout_node(l, 32, 0, &node, &err), FROND_ENODE_RANGE);
  assert_int_equal(frond_layout_node(l, 0, 32, &node, &err), FROND_ENODE_RANGE);
  /* Twitter layout: time above bit 22, worker in the 10 bits below. */
  assert_int_equal(frond_decode(l, INT64_C(1318101487386165248), &f, NULL), 0);
  assert_int_equal(f.unix_ms, INT64_C(1603094858391));
  assert_int_equal(f.node, 272);
  assert_int_equal(f.datacenter, 8);
  assert_int_equal(f.worker, 16);
  assert_int_equal(f.sequence, 0);
}

static void test_errors(void **state) {
  (void)state;
  assert_string_equal(frond_err_name(FROND_ECLOCK_BEHIND), "CLOCK_BEHIND");
  assert_string_equal(frond_err_name(FROND_ETAG_NOT_FOUND), "TAG_NOT_FOUND");
  assert_string_equal(frond_err_name(0), "OK");
  assert_string_equal(frond_err_name(-999), "UNKNOWN");
  assert_int_equal(frond_err_from_name("SEGMENT_UNAVAILABLE"),
                   FROND_ESEGMENT_UNAVAILABLE);
  assert_int_equal(frond_err_from_name("nope"), 0);
  /* Numbers are stable. */
  assert_int_equal(FROND_EINVAL, -1);
  assert_int_equal(FROND_ECLOCK_BEHIND, -5);
  assert_int_equal(FROND_ETAG_NOT_FOUND, -11);
#define CHECK_ROUNDTRIP(n, name, msg)                                          \
  assert_int_equal(frond_err_from_name(#name), -(n));                          \
  assert_string_equal(frond_strerror(-(n)), msg);
  FROND_ERRNO_MAP(CHECK_ROUNDTRIP)
#undef CHECK_ROUNDTRIP
}

static void test_time_left(void **state) {
  frond_layout l;
  int64_t end;
  (void)state;
  parse_ok("frond", &l);
  end = frond_layout_end_ms(&l);
  assert_int_equal(frond_layout_time_left_ms(&l, end - 1), 1);
  assert_int_equal(frond_layout_time_left_ms(&l, end), 0);
  assert_int_equal(frond_layout_time_left_ms(&l, end + 86400000), 0);
  assert_int_equal(frond_layout_time_left_ms(&l, l.epoch_ms),
                   (INT64_C(1) << 41));
  /* 2026-01-01: 41 bits of ms from 2025 last until 2094-09-07. */
  assert_int_equal(frond_layout_time_left_ms(&l, INT64_C(1767225600000)),
                   end - INT64_C(1767225600000));
  assert_int_equal(frond_layout_time_left_ms(&l, INT64_MIN), INT64_MAX);
  /* Sonyflake's 39 bits of 10 ms units last until 2188. */
  parse_ok("sonyflake", &l);
  assert_true(frond_layout_time_left_ms(&l, INT64_C(1767225600000)) >
              INT64_C(100) * 365 * 86400000);
}

/* The warnings go through the log sink; keep the last one. */
static int warn_level = -1;
static char warn_msg[1024];
static void warn_sink(void *ctx, int level, const char *msg) {
  (void)ctx;
  warn_level = level;
  snprintf(warn_msg, sizeof(warn_msg), "%s", msg);
}

static void test_warn_end(void **state) {
  frond_layout l = *preset("baidu");
  int64_t end = frond_layout_end_ms(&l), day = 86400000;
  (void)state;
  assert_string_equal(l.name, "baidu");
  frond_log_set(warn_sink, NULL, FROND_LOG_DEBUG);
  /* A year and a day before the end: quiet. */
  assert_int_equal(frond__layout_warn_end(&l, end - 366 * day), 0);
  assert_int_equal(frond__layout_warn_end(&l, end - FROND__LAYOUT_WARN_MS), 0);
  assert_int_equal(warn_level, -1);
  /* Baidu's users got here on 2023-11-21 and had a year to move. */
  assert_int_equal(frond__layout_warn_end(&l, end - FROND__LAYOUT_WARN_MS + 1),
                   1);
  assert_int_equal(warn_level, FROND_LOG_WARN);
  assert_non_null(strstr(warn_msg, "layout 'baidu'"));
  assert_non_null(strstr(warn_msg, "time=28,node=22,seq=13,unit=1s"));
  assert_non_null(strstr(warn_msg, "on 2024-11-20T13:24:16.000Z, in 364 days"));
  assert_non_null(strstr(warn_msg, "TIME_EXHAUSTED"));
  assert_int_equal(frond__layout_warn_end(&l, end - 30 * day - 1), 1);
  assert_non_null(strstr(warn_msg, "in 30 days"));
  assert_int_equal(frond__layout_warn_end(&l, end - 1), 1);
  assert_non_null(strstr(warn_msg, "in 0 days"));
  /* At and after the end the generator refuses, with TIME_EXHAUSTED: no
  ** countdown on top. */
  warn_level = -1;
  assert_int_equal(frond__layout_warn_end(&l, end), 0);
  assert_int_equal(frond__layout_warn_end(&l, end + day), 0);
  assert_int_equal(warn_level, -1);
  /* The presets, at the start of 2026: none is within a year of its end. */
  for (size_t i = 0; i < frond_layout_preset_count(); i++)
    assert_int_equal(
        frond__layout_warn_end(frond_layout_preset(i), INT64_C(1767225600000)),
        0);
  assert_int_equal(warn_level, -1);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_presets),
      cmocka_unit_test(test_specs),
      cmocka_unit_test(test_bad_specs),
      cmocka_unit_test(test_js_safe),
      cmocka_unit_test(test_validate),
      cmocka_unit_test(test_no_node_bits),
      cmocka_unit_test(test_compose_decode),
      cmocka_unit_test(test_compose_errors),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_time_left),
      cmocka_unit_test(test_warn_end),
  };
  return frond_run_tests(tests, NULL, NULL);
}
