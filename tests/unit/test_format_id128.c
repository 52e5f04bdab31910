/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_id128.c -- UUIDv7, UUIDv4, ULID and ObjectId: reference
** values, layout, monotonic order under a frozen or stepping-back clock,
** uniqueness across threads and across fork(); scope=node: two nodes
** never collide even with their random bits forced equal, one node never
** repeats across a restart, and every string decodes to its snowflake
** ID and node.
*/
#include "testutil.h"

#include "base/fork.h"
#include "core/core.h"
#include "core/formats.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

/* RFC 9562 appendix A.6: the example UUIDv7 for 2022-02-22T14:22:22-05:00
** with rand_a 0xCC3 and rand_b 0x18C4DC0C0C07398F. */
static void test_rfc9562_example(void **state) {
  frond_format_value v;
  frond_error err = {0, ""};
  char s[FROND_UUID_STRLEN + 1];
  (void)state;
  assert_int_equal(frond_format_decode_any(
                       "017F22E2-79B0-7CC3-98C4-DC0C0C07398F", 36, &v, &err),
                   0);
  assert_int_equal(v.kind, FROND_FORMAT_UUID7);
  assert_int_equal(v.uuid_version, 7);
  assert_true(v.has_time);
  assert_int_equal(v.unix_ms, INT64_C(1645557742000));
  assert_int_equal(be(v.bytes + 6, 2) & 0xfff, 0xcc3); /* rand_a */
  assert_int_equal(be(v.bytes + 8, 8) & ((UINT64_C(1) << 62) - 1),
                   UINT64_C(0x18C4DC0C0C07398F)); /* rand_b */
  assert_int_equal(v.bytes[8] >> 6, 2);           /* var */
  frond_uuid_format(v.bytes, s);
  assert_string_equal(s, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
  /* The 32-digit form reads the same. */
  assert_int_equal(
      frond_uuid_parse("017f22e279b07cc398c4dc0c0c07398f", 32, v.bytes, &err),
      0);
  frond_uuid_format(v.bytes, s);
  assert_string_equal(s, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
  /* The vector writer and the table agree on every byte value in every
  ** position, and each parses back. */
  for (int round = 0; round < 4096; round++) {
    uint8_t u[16], back[16];
    char t[FROND_UUID_STRLEN + 1];
    for (int i = 0; i < 16; i++)
      u[i] = (uint8_t)(round * 7 + i * (round / 256 + 1) + (round & 1) * i);
    frond__hex_format_force_scalar(0);
    frond_uuid_format(u, s);
    frond__hex_format_force_scalar(1);
    frond_uuid_format(u, t);
    frond__hex_format_force_scalar(0);
    assert_string_equal(s, t);
    assert_int_equal(strlen(s), 36);
    assert_int_equal(frond_uuid_parse(s, 36, back, &err), 0);
    assert_memory_equal(back, u, 16);
  }
}

static void test_uuid7_layout_and_order(void **state) {
  fake_clock clk;
  frond_uuid7 *g;
  uint8_t prev[16], u[16];
  int64_t t0 = INT64_C(1767225600000); /* 2026-01-01 */
  (void)state;
  fake_clock_set(&clk, t0);
  assert_int_equal(frond_uuid7_create(&g, fake_clock_read, &clk, NULL), 0);
  frond_uuid7_next(g, prev);
  assert_int_equal((int64_t)be(prev, 6), t0);
  assert_int_equal(prev[6] >> 4, 7);
  assert_int_equal(prev[8] >> 6, 2);
  /* The counter is seeded below 2^15: the top bit guards rollover. */
  assert_true(((be(prev + 6, 2) & 0xfff) << 4 | (prev[8] >> 2 & 15)) < 0x8000);
  /* A frozen clock: 100,000 UUIDs in "one" ms still strictly increase;
  ** past the counter they borrow the next milliseconds. */
  for (int i = 0; i < 100000; i++) {
    frond_uuid7_next(g, u);
    assert_true(memcmp(prev, u, 16) < 0);
    assert_int_equal(u[6] >> 4, 7);
    assert_int_equal(u[8] >> 6, 2);
    memcpy(prev, u, 16);
  }
  assert_true((int64_t)be(u, 6) > t0);
  assert_true((int64_t)be(u, 6) <= t0 + 4);
  /* The clock steps back an hour: never a smaller UUID. */
  fake_clock_set(&clk, t0 - 3600000);
  for (int i = 0; i < 1000; i++) {
    frond_uuid7_next(g, u);
    assert_true(memcmp(prev, u, 16) < 0);
    memcpy(prev, u, 16);
  }
  /* The clock moves on: the new ms is used, with a fresh counter seed. */
  fake_clock_set(&clk, t0 + 1000);
  frond_uuid7_next(g, u);
  assert_int_equal((int64_t)be(u, 6), t0 + 1000);
  frond_uuid7_free(g);
}

/* Version 4, variant 10, and each of the other 122 bits both ways in
** 1,000 UUIDs (stuck by chance: 2^-1000), one at a time, as strings one
** at a time (format.c's path for one) and in a batch. */
static void test_uuid4(void **state) {
  static uint8_t u[3000][16];
  uint8_t any[16] = {0}, all[16];
  frond_format *f;
  char s[FROND_UUID_STRLEN + 1];
  (void)state;
  assert_int_equal(frond_format_create(&f, "uuid4", NULL, NULL, NULL, NULL), 0);
  memset(all, 0xff, sizeof(all));
  frond__uuid4_next_n(1000, u[2000]);
  for (int i = 0; i < 3000; i++) {
    if (i < 1000) {
      assert_int_equal(frond_uuid4(u[i], NULL), 0);
    } else if (i < 2000) {
      frond_format_value v;
      assert_int_equal(frond_format_next(f, NULL, s, sizeof(s), NULL), 0);
      assert_int_equal(frond_format_decode(f, s, strlen(s), &v, NULL), 0);
      memcpy(u[i], v.bytes, 16);
    }
    for (int j = 0; j < 16; j++) {
      any[j] |= u[i][j];
      all[j] &= u[i][j];
    }
    if (i % 1000 != 999)
      continue;
    for (int j = 0; j < 16; j++) {
      assert_int_equal(any[j], j == 6 ? 0x4f : j == 8 ? 0xbf : 0xff);
      assert_int_equal(all[j], j == 6 ? 0x40 : j == 8 ? 0x80 : 0);
    }
    memset(any, 0, sizeof(any));
    memset(all, 0xff, sizeof(all));
  }
  for (int i = 1; i < 3000; i++)
    for (int j = 0; j < i; j++)
      assert_true(memcmp(u[i], u[j], 16) != 0);
  frond_format_free(f);
}

/* The ULID spec's example: 01ARYZ6S41 is 1469918176385 ms. */
static void test_ulid(void **state) {
  frond_format_value v;
  frond_error err = {0, ""};
  fake_clock clk;
  frond_ulid *g;
  uint8_t a[16], b[16];
  char s[FROND_ULID_STRLEN + 1];
  (void)state;
  assert_int_equal(
      frond_format_decode_any("01ARYZ6S41TSV4RRFFQ69G5FAV", 26, &v, &err), 0);
  assert_int_equal(v.kind, FROND_FORMAT_ULID);
  assert_int_equal(v.unix_ms, INT64_C(1469918176385));
  frond_ulid_format(v.bytes, s);
  assert_string_equal(s, "01ARYZ6S41TSV4RRFFQ69G5FAV");
  /* Lower case and Crockford's aliases read the same. */
  assert_int_equal(frond_ulid_parse("01aryz6s41tsv4rrffq69g5fav", 26, a, &err),
                   0);
  assert_memory_equal(a, v.bytes, 16);
  assert_int_equal(frond_ulid_parse("OIARYZ6S4ITSV4RRFFQ69G5FAV", 26, b, &err),
                   0);
  assert_memory_equal(b, v.bytes, 16);
  /* Above 2^128 (first symbol 8) and the letter U are not ULIDs. */
  assert_int_equal(frond_ulid_parse("81ARYZ6S41TSV4RRFFQ69G5FAV", 26, a, &err),
                   FROND_EID_INVALID);
  assert_int_equal(frond_ulid_parse("01ARYZ6S41TSV4RRFFQ69G5FAU", 26, a, &err),
                   FROND_EID_INVALID);
  /* Monotonic: in one ms the random part goes up by exactly one. */
  fake_clock_set(&clk, INT64_C(1767225600000));
  assert_int_equal(frond_ulid_create(&g, fake_clock_read, &clk, NULL), 0);
  frond_ulid_next(g, a);
  assert_int_equal((int64_t)be(a, 6), INT64_C(1767225600000));
  assert_int_equal(a[6] >> 7, 0); /* a 79-bit base: no overflow */
  for (int i = 0; i < 70000; i++) {
    frond_ulid_next(g, b);
    assert_true(memcmp(a, b, 16) < 0);
    if (be(a, 6) == be(b, 6))
      assert_true(be(b + 8, 8) == be(a + 8, 8) + 1 ||
                  (be(b + 8, 8) == 0 && be(b + 6, 2) == be(a + 6, 2) + 1));
    memcpy(a, b, 16);
  }
  /* 65,536 per ms, then the next ms is borrowed. */
  assert_int_equal((int64_t)be(b, 6), INT64_C(1767225600001));
  frond_ulid_free(g);
}

static void test_objectid(void **state) {
  frond_format_value v;
  frond_error err = {0, ""};
  fake_clock clk;
  frond_objectid *g;
  uint8_t a[12], b[12];
  uint32_t c0;
  (void)state;
  /* MongoDB's documentation example. */
  assert_int_equal(
      frond_format_decode_any("507f1f77bcf86cd799439011", 24, &v, &err), 0);
  assert_int_equal(v.kind, FROND_FORMAT_OBJECTID);
  assert_int_equal(v.unix_ms, INT64_C(1350508407000));
  assert_int_equal(v.counter, 0x439011);
  assert_memory_equal(v.process, "\xbc\xf8\x6c\xd7\x99", 5);
  fake_clock_set(&clk, INT64_C(1767225600500));
  assert_int_equal(frond_objectid_create(&g, fake_clock_read, &clk, NULL), 0);
  frond_objectid_next(g, a);
  assert_int_equal(be(a, 4), 1767225600);
  c0 = (uint32_t)be(a + 9, 3);
  /* The counter goes up by one per ObjectId, across seconds, and the
  ** process value stays. */
  fake_clock_add(&clk, 3000);
  frond_objectid_next(g, b);
  assert_int_equal(be(b, 4), 1767225603);
  assert_int_equal(be(b + 9, 3), (c0 + 1) & 0xffffff);
  assert_memory_equal(a + 4, b + 4, 5);
  /* 2^24 + 10 in one second: never a repeat, always increasing; the
  ** seconds run ahead instead of the counter wrapping onto itself. */
  memcpy(a, b, 12);
  for (int i = 0; i < (1 << 24) + 10; i++) {
    frond_objectid_next(g, b);
    if (memcmp(a, b, 12) >= 0)
      fail_msg("ObjectId %d did not increase", i);
    memcpy(a, b, 12);
  }
  assert_int_equal(be(b, 4), 1767225604);
  frond_objectid_free(g);
}

typedef struct worker {
  frond_uuid7 *u;
  frond_ulid *l;
  uint8_t (*out)[16];
  int n;
  int disorder; /* values not above the one before: counted, asserted later */
} worker;

static void *work(void *arg) {
  worker *w = arg;
  for (int i = 0; i < w->n; i++) {
    if (w->u != NULL)
      frond_uuid7_next(w->u, w->out[i]);
    else
      frond_ulid_next(w->l, w->out[i]);
    if (i > 0 && memcmp(w->out[i - 1], w->out[i], 16) >= 0)
      w->disorder++; /* one thread's values must increase */
  }
  return NULL;
}

static int cmp16(const void *a, const void *b) {
  return memcmp(a, b, 16);
}

/* No two of the n 16-byte values alike (sorts them). */
static void assert_distinct16(uint8_t (*all)[16], size_t n) {
  qsort(all, n, 16, cmp16);
  for (size_t i = 1; i < n; i++)
    assert_true(memcmp(all[i - 1], all[i], 16) != 0);
}

/* Four threads on one generator: every value is unique. */
static void test_threads_unique(void **state) {
  enum { T = 4, N = 50000 };
  uint8_t(*all)[16] = malloc(sizeof(*all) * T * N);
  pthread_t th[T];
  worker w[T];
  (void)state;
  for (int kind = 0; kind < 2; kind++) {
    frond_uuid7 *u = NULL;
    frond_ulid *l = NULL;
    if (kind == 0)
      assert_int_equal(frond_uuid7_create(&u, NULL, NULL, NULL), 0);
    else
      assert_int_equal(frond_ulid_create(&l, NULL, NULL, NULL), 0);
    for (int i = 0; i < T; i++) {
      w[i] = (worker){u, l, all + i * N, N, 0};
      assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < T; i++) /* all joined before any assertion */
      pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++)
      assert_int_equal(w[i].disorder, 0);
    assert_distinct16(all, T * N);
    frond_uuid7_free(u);
    frond_ulid_free(l);
  }
  free(all);
}

/* A clock shared by threads that moves one unit every STEP reads: nearly
** every call finds the word's unit behind it, or races another call that
** moves the word up (id128.c's compare-and-swap after its fetch-add). */
typedef struct step_clock {
  _Atomic uint64_t reads;
  int64_t base, unit;
} step_clock;

enum { STEP = 3 };

static int64_t step_now(step_clock *c, uint64_t reads) {
  return c->base + (int64_t)(reads / STEP) * c->unit;
}

static int64_t step_read(void *ctx) {
  step_clock *c = ctx;
  return step_now(c, atomic_fetch_add(&c->reads, 1));
}

typedef struct stepper {
  frond_uuid7 *u;
  frond_ulid *l;
  frond_objectid *o;
  step_clock *clk;
  uint8_t (*out)[16];
  int n, disorder, behind; /* counted, asserted after the join */
} stepper;

/* The unit an ID was made in: the first 48 bits (ms), or ObjectId's 32
** (s). */
static int64_t id_unit_ms(const stepper *w, const uint8_t *b) {
  return w->o != NULL ? (int64_t)be(b, 4) * 1000 : (int64_t)be(b, 6);
}

/* Each thread takes its IDs one at a time or in batches of 2 to 6 (the
** batch path moves the word once for all its values), and checks each. */
static void *step_work(void *arg) {
  stepper *w = arg;
  size_t len = w->o != NULL ? 12 : 16;
  unsigned r = (unsigned)(uintptr_t)w;
  uint8_t b[6 * 16];
  for (int i = 0; i < w->n;) {
    /* The clock as it reads before the call: the call's own read is
    ** later, so the IDs' unit is at least this one. */
    int64_t before = step_now(w->clk, atomic_load(&w->clk->reads));
    size_t k;
    r = r * 1103515245u + 12345u;
    k = 1 + (r >> 16) % 6;
    if (k > (size_t)(w->n - i))
      k = (size_t)(w->n - i);
    if (k == 1 && w->u != NULL)
      frond_uuid7_next(w->u, b);
    else if (k == 1 && w->l != NULL)
      frond_ulid_next(w->l, b);
    else if (k == 1)
      frond_objectid_next(w->o, b);
    else if (w->u != NULL)
      frond__uuid7_next_n(w->u, k, b);
    else if (w->l != NULL)
      frond__ulid_next_n(w->l, k, b);
    else
      frond__objectid_next_n(w->o, k, b);
    for (size_t j = 0; j < k; j++, i++) {
      memset(w->out[i], 0, 16);
      memcpy(w->out[i], b + len * j, len);
      if (id_unit_ms(w, w->out[i]) < before - before % w->clk->unit)
        w->behind++;
      if (i > 0 && memcmp(w->out[i - 1], w->out[i], len) >= 0)
        w->disorder++;
    }
  }
  return NULL;
}

/* Four threads on one generator whose clock moves every few reads, one
** ID or a batch a call: every value unique, each thread's increasing,
** and no ID made in a unit before the clock's reading at its call (a
** call that took the word's next value without moving it up to a new
** unit would be). The units are milliseconds, seconds for ObjectId. */
static void test_threads_at_unit_boundaries(void **state) {
  enum { T = 4, N = 20000 };
  uint8_t(*all)[16] = malloc(sizeof(*all) * T * N);
  pthread_t th[T];
  stepper w[T];
  (void)state;
  for (int kind = 0; kind < 3; kind++) {
    step_clock clk = {0, INT64_C(1767225600000), kind == 2 ? 1000 : 1};
    frond_uuid7 *u = NULL;
    frond_ulid *l = NULL;
    frond_objectid *o = NULL;
    if (kind == 0)
      assert_int_equal(frond_uuid7_create(&u, step_read, &clk, NULL), 0);
    else if (kind == 1)
      assert_int_equal(frond_ulid_create(&l, step_read, &clk, NULL), 0);
    else
      assert_int_equal(frond_objectid_create(&o, step_read, &clk, NULL), 0);
    for (int i = 0; i < T; i++) {
      w[i] = (stepper){u, l, o, &clk, all + i * N, N, 0, 0};
      assert_int_equal(pthread_create(&th[i], NULL, step_work, &w[i]), 0);
    }
    for (int i = 0; i < T; i++) /* all joined before any assertion */
      pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++) {
      assert_int_equal(w[i].disorder, 0);
      assert_int_equal(w[i].behind, 0);
    }
    assert_distinct16(all, T * N);
    frond_uuid7_free(u);
    frond_ulid_free(l);
    frond_objectid_free(o);
  }
  free(all);
}

/* After fork(), parent and child share the generator's state word; with a
** frozen clock both take the same next counter value, so only new keys
** (and ObjectId's new process value) keep their IDs apart. */
static void fork_reseeds(int how) {
  fake_clock clk;
  frond_uuid7 *u;
  frond_ulid *l;
  frond_objectid *o;
  uint8_t mine[3][16], theirs[3][16];
  int fds[2], status;
  pid_t pid;
  if (how != BY_FORK && !frond__fork_wipes())
    fail_msg("this kernel refuses MADV_WIPEONFORK (before Linux 4.14, or a "
             "seccomp filter): only fork() is caught here");
  fake_clock_set(&clk, INT64_C(1767225600000));
  assert_int_equal(frond_uuid7_create(&u, fake_clock_read, &clk, NULL), 0);
  assert_int_equal(frond_ulid_create(&l, fake_clock_read, &clk, NULL), 0);
  assert_int_equal(frond_objectid_create(&o, fake_clock_read, &clk, NULL), 0);
  frond_uuid7_next(u, mine[0]);
  frond_ulid_next(l, mine[1]);
  frond_objectid_next(o, mine[2]);
  assert_int_equal(pipe(fds), 0);
  pid = fork_by(how);
  assert_true(pid >= 0);
  if (pid == 0) {
    frond_uuid7_next(u, theirs[0]);
    frond_ulid_next(l, theirs[1]);
    memset(theirs[2], 0, 16);
    frond_objectid_next(o, theirs[2]);
    _exit(write(fds[1], theirs, sizeof(theirs)) == sizeof(theirs) ? 0 : 1);
  }
  close(fds[1]);
  assert_int_equal(read(fds[0], theirs, sizeof(theirs)), sizeof(theirs));
  close(fds[0]);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_int_equal(status, 0);
  frond_uuid7_next(u, mine[0]);
  frond_ulid_next(l, mine[1]);
  memset(mine[2], 0, 16);
  frond_objectid_next(o, mine[2]);
  /* Same time, same counter step... */
  assert_memory_equal(mine[0], theirs[0], 8);
  assert_memory_equal(mine[2], theirs[2], 4);
  assert_memory_equal(mine[2] + 9, theirs[2] + 9, 3);
  /* ...and still different IDs. */
  assert_true(memcmp(mine[0], theirs[0], 16) != 0);
  assert_true(memcmp(mine[1], theirs[1], 16) != 0);
  assert_true(memcmp(mine[2] + 4, theirs[2] + 4, 5) != 0);
  frond_uuid7_free(u);
  frond_ulid_free(l);
  frond_objectid_free(o);
}

static void test_fork_reseeds(void **state) {
  (void)state;
  fork_reseeds(BY_FORK);
}

static void test_underscore_fork_reseeds(void **state) {
  (void)state;
  fork_reseeds(BY_UNDERSCORE_FORK);
}

static void test_syscall_fork_reseeds(void **state) {
  (void)state;
  fork_reseeds(BY_SYSCALL);
}

static void test_decode_any_shapes(void **state) {
  frond_format_value v;
  frond_error err = {0, ""};
  static const char *const bad[] = {
      "017F22E2-79B0-1CC3-98C4-DC0C0C07398F", /* version 1 */
      "017F22E2-79B0-7CC3-18C4-DC0C0C07398F", /* not RFC 9562's variant */
      "017F22E2_79B0-7CC3-98C4-DC0C0C07398F",
      "507f1f77bcf86cd79943901g",
      "hello",
      "9223372036854775808",
      "zzzzzzzzzzz",   /* base62 above 2^63 */
      "8ZZZZZZZZZZZZ", /* base32 above 2^63 */
  };
  (void)state;
  assert_int_equal(frond_format_decode_any("42", 2, &v, &err), 0);
  assert_int_equal(v.kind, FROND_FORMAT_DECIMAL);
  assert_int_equal(v.id, 42);
  assert_int_equal(frond_format_decode_any("00000000000", 11, &v, &err), 0);
  assert_int_equal(v.kind, FROND_FORMAT_DECIMAL); /* digits read as decimal */
  assert_int_equal(frond_format_decode_any("0000000000A", 11, &v, &err), 0);
  assert_int_equal(v.kind, FROND_FORMAT_BASE62);
  assert_int_equal(v.id, 10);
  assert_int_equal(frond_format_decode_any("7ZZZZZZZZZZZZ", 13, &v, &err), 0);
  assert_int_equal(v.kind, FROND_FORMAT_BASE32);
  assert_true(v.id == INT64_MAX);
  assert_int_equal(frond_format_decode_any("AzL8n0Y58m7", 11, &v, &err), 0);
  assert_true(v.id == INT64_MAX);
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    if (frond_format_decode_any(bad[i], strlen(bad[i]), &v, &err) !=
        FROND_EID_INVALID)
      fail_msg("'%s' decoded", bad[i]);
    assert_true(err.message[0] != '\0');
  }
}

static const uint8_t forced[16] = {7, 7, 7, 7, 7, 7, 7, 7,
                                   7, 7, 7, 7, 7, 7, 7, 7};
static const char *const kinds[] = {"uuid7", "ulid", "objectid"};

static frond_format *fmt(const char *spec, fake_clock *c) {
  frond_format *f;
  frond_error err = {0, ""};
  if (frond_format_create(&f, spec, NULL, fake_clock_read, c, &err) != 0)
    fail_msg("%s: %s", spec, err.message);
  return f;
}

static frond_gen *node_gen(uint64_t node, fake_clock *c, const char *hw) {
  frond_gen_options o;
  frond_gen *g;
  frond_error err = {0, ""};
  frond_gen_options_init(&o);
  o.clock = fake_clock_read;
  o.clock_ctx = c;
  o.max_ahead_ms = 3600000;
  o.high_water_path = hw;
  if (frond_gen_create(&g, frond_layout_preset(0), node, &o, &err) != 0)
    fail_msg("gen: %s", err.message);
  return g;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(a, b);
}

/* Repeats in n strings of stride 40. */
static int repeats(char (*s)[40], size_t n) {
  int r = 0;
  qsort(s, n, 40, cmp_str);
  for (size_t i = 1; i < n; i++)
    r += strcmp(s[i - 1], s[i]) == 0;
  return r;
}

/* Two processes, one clock, random bits forced equal (the same key for
** every generator): the random scope repeats the other process' values
** (it rests on random bits alone), scope=node never does (it rests on the
** node IDs), and each node-scoped string decodes to its ID and node. */
static void test_node_scope_forced_randomness(void **state) {
  enum { N = 3000 };
  char(*s)[40] = calloc(2 * N, 40);
  (void)state;
  for (size_t k = 0; k < FROND__ARRAY_SIZE(kinds); k++) {
    char spec[40];
    fake_clock c;
    frond_gen *g[2];
    frond_format *f[2];
    frond_format_source src;
    fake_clock_set(&c, INT64_C(1795402800000));
    frond__id128_fixed_key(forced);
    for (int p = 0; p < 2; p++)
      f[p] = fmt(kinds[k], &c); /* scope=random */
    for (int p = 0; p < 2; p++)
      assert_int_equal(frond_format_next_n(f[p], NULL, N, s[p * N], 40, NULL),
                       0);
    if (repeats(s, 2 * N) == 0)
      fail_msg("%s: random bits forced equal, and no repeat", kinds[k]);
    for (int p = 0; p < 2; p++)
      frond_format_free(f[p]);
    snprintf(spec, sizeof(spec), "%s:scope=node", kinds[k]);
    for (int p = 0; p < 2; p++) {
      f[p] = fmt(spec, &c);
      g[p] = node_gen((uint64_t)p + 1, &c, NULL);
      src = (frond_format_source){g[p], NULL, NULL, 0};
      assert_int_equal(frond_format_next_n(f[p], &src, N, s[p * N], 40, NULL),
                       0);
      /* In order, and each holds its ID and node. */
      for (int i = 0; i < N; i++) {
        frond_format_value v;
        frond_fields fl;
        if (i > 0)
          assert_true(strcmp(s[p * N + i - 1], s[p * N + i]) < 0);
        assert_int_equal(frond_format_decode(f[p], s[p * N + i],
                                             strlen(s[p * N + i]), &v, NULL),
                         0);
        assert_true(v.has_id);
        assert_int_equal(frond_decode(frond_gen_layout(g[p]), v.id, &fl, NULL),
                         0);
        assert_int_equal(fl.node, p + 1);
        assert_int_equal(v.unix_ms / 1000, fl.unix_ms / 1000);
      }
    }
    if (repeats(s, 2 * N) != 0)
      fail_msg("%s:scope=node repeated across two nodes", kinds[k]);
    for (int p = 0; p < 2; p++) {
      frond_format_free(f[p]);
      frond_gen_close(g[p], NULL);
    }
    frond__id128_fixed_key(NULL);
  }
  free(s);
}

/* One node across restarts (its high-water file), the clock frozen and
** then set back, the random bits forced equal: nothing repeats, and the
** strings keep increasing. */
static void test_node_scope_restart(void **state) {
  enum { N = 2000, RUNS = 3 };
  char(*s)[40] = calloc(RUNS * N, 40), *dir = tmpdir_make(), hw[600];
  (void)state;
  snprintf(hw, sizeof(hw), "%s/frond-node-3.hw", dir);
  frond__id128_fixed_key(forced);
  for (size_t k = 0; k < FROND__ARRAY_SIZE(kinds); k++) {
    char spec[40];
    fake_clock c;
    snprintf(spec, sizeof(spec), "%s:scope=node", kinds[k]);
    fake_clock_set(&c, INT64_C(1795402800000));
    unlink(hw);
    for (int r = 0; r < RUNS; r++) {
      frond_format *f = fmt(spec, &c);
      frond_gen *g = node_gen(3, &c, hw);
      frond_format_source src = {g, NULL, NULL, 0};
      assert_int_equal(frond_format_next_n(f, &src, N, s[r * N], 40, NULL), 0);
      if (r > 0)
        assert_true(strcmp(s[r * N - 1], s[r * N]) < 0);
      assert_int_equal(frond_gen_close(g, NULL), 0);
      frond_format_free(f);
      if (r == 0) /* the clock goes back 2 s across the restart */
        fake_clock_add(&c, -2000);
    }
    if (repeats(s, RUNS * N) != 0)
      fail_msg("%s repeated across restarts", spec);
  }
  frond__id128_fixed_key(NULL);
  free(s);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rfc9562_example),
      cmocka_unit_test(test_uuid7_layout_and_order),
      cmocka_unit_test(test_uuid4),
      cmocka_unit_test(test_ulid),
      cmocka_unit_test(test_objectid),
      cmocka_unit_test(test_threads_unique),
      cmocka_unit_test(test_threads_at_unit_boundaries),
      cmocka_unit_test(test_fork_reseeds),
      cmocka_unit_test(test_underscore_fork_reseeds),
      cmocka_unit_test(test_syscall_fork_reseeds),
      cmocka_unit_test(test_decode_any_shapes),
      cmocka_unit_test(test_node_scope_forced_randomness),
      cmocka_unit_test(test_node_scope_restart),
  };
  return frond_run_tests(tests, NULL, NULL);
}
