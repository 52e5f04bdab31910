/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_layout.c -- write-spreading layouts (format_layout.c):
** reverse=yes and shard=S round-trip through decode, stay unique under
** threads, put one key on one shard in every process sharing the key, and
** refuse bad parameters with stable codes.
*/
#include "format_testutil.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_reverse63(void **state) {
  uint64_t s = 0x9e3779b97f4a7c15u;
  (void)state;
  assert_int_equal(frond__reverse63(0), 0);
  assert_int_equal(frond__reverse63(1), UINT64_C(1) << 62);
  assert_int_equal(frond__reverse63(UINT64_C(1) << 62), 1);
  assert_int_equal(frond__reverse63(6), UINT64_C(3) << 60);
  for (int i = 0; i < 100000; i++) {
    uint64_t x = rnd(&s) >> 1;
    uint64_t r = frond__reverse63(x);
    assert_true(r < UINT64_C(1) << 63);
    assert_int_equal(frond__reverse63(r), x); /* its own inverse */
    /* bit k of x is bit 62 - k of r */
    for (int k = 0; k < 63; k += 9)
      assert_int_equal(x >> k & 1, r >> (62 - k) & 1);
  }
}

/* Encode with reverse=yes, decode back: the ID, in every plain kind. */
static void test_reverse_round_trip(void **state) {
  static const char *const specs[] = {
      "decimal:reverse=yes", "base62:reverse=yes", "base32:reverse=yes"};
  uint64_t s = 42;
  char buf[32], spec[64];
  (void)state;
  for (size_t k = 0; k < 3; k++) {
    frond_format *f = format_of(specs[k], NULL), *g;
    frond_format_spec(f, spec, sizeof(spec));
    assert_string_equal(spec, specs[k]);
    g = format_of(spec, NULL); /* the spec reads back */
    for (int i = 0; i < 20000; i++) {
      int64_t id = (int64_t)(rnd(&s) >> 1);
      frond_format_value v;
      if (i < 3)
        id = i;
      assert_int_equal(frond_format_encode(f, id, 0, buf, sizeof(buf), NULL),
                       0);
      assert_int_equal(frond_format_decode(g, buf, strlen(buf), &v, NULL), 0);
      assert_true(v.has_id);
      assert_int_equal(v.id, id);
    }
    frond_format_free(g);
    frond_format_free(f);
  }
}

/* Consecutive IDs land far apart: the low bits lead. */
static void test_reverse_spreads(void **state) {
  frond_format *f = format_of("decimal:reverse=yes", NULL);
  char a[32], b[32];
  (void)state;
  assert_int_equal(frond_format_encode(f, 1000, 0, a, sizeof(a), NULL), 0);
  assert_int_equal(frond_format_encode(f, 1001, 0, b, sizeof(b), NULL), 0);
  assert_true(strtoll(b, NULL, 10) - strtoll(a, NULL, 10) ==
              (INT64_C(1) << 62));
  frond_format_free(f);
}

static frond_gen *gen_of(uint64_t node) {
  frond_gen *g;
  frond_gen_options o;
  frond_error err = {0, ""};
  frond_layout l;
  frond_gen_options_init(&o);
  /* 14 bits of node and sequence: the IDs fit below shard=8's bits for
  ** 69 years from the epoch. */
  assert_int_equal(
      frond_layout_parse("time=41,node=4,seq=10,unit=1ms,epoch=2026-01-01", &l,
                         NULL),
      0);
  if (frond_gen_create(&g, &l, node, &o, &err) != 0)
    fail_msg("gen: %s", err.message);
  return g;
}

static uint64_t shard_of(const frond_format *f, const char *key) {
  uint64_t s;
  assert_int_equal(frond_format_shard_of(f, key, strlen(key), &s, NULL), 0);
  return s;
}

/* Every ID of a key carries the key's shard and decodes to the ID issued;
** the same key gets the same shard from two nodes' formats (two processes
** with one key file) and from a child process. */
static void test_shard_same_key_same_shard(void **state) {
  frond_order_keys *k = keys_of(KEY0);
  frond_format *f1 = format_of("decimal:shard=8", k);
  frond_format *f2 = format_of("base62:shard=8", k);
  frond_format *other;
  frond_gen *g1 = gen_of(1), *g2 = gen_of(2);
  frond_format_source s1 = {g1, NULL, NULL, 0}, s2 = {g2, NULL, NULL, 0};
  char out[8][32];
  int fd[2], st, differ = 0;
  uint64_t shard, in;
  pid_t pid;
  (void)state;
  frond_format_skip_check(f1);
  frond_format_skip_check(f2);
  for (int u = 0; u < 200; u++) {
    char key[32];
    snprintf(key, sizeof(key), "user-%d", u);
    shard = shard_of(f1, key);
    assert_true(shard < 256);
    assert_int_equal(shard_of(f2, key), shard);
    assert_int_equal(
        frond_format_next_for(f1, &s1, key, strlen(key), 4, out[0], 32, NULL),
        0);
    assert_int_equal(
        frond_format_next_for(f2, &s2, key, strlen(key), 4, out[4], 32, NULL),
        0);
    for (int i = 0; i < 8; i++) {
      frond_format *f = i < 4 ? f1 : f2;
      frond_format_value v;
      frond_fields fl;
      assert_int_equal(
          frond_format_shard_in(f, out[i], strlen(out[i]), &in, NULL), 0);
      assert_int_equal(in, shard);
      assert_int_equal(frond_format_decode(f, out[i], strlen(out[i]), &v, NULL),
                       0);
      assert_int_equal(frond_decode(frond_gen_layout(g1), v.id, &fl, NULL), 0);
      assert_int_equal(fl.node, i < 4 ? 1 : 2);
    }
    differ += shard != shard_of(f1, "user-0");
  }
  assert_true(differ > 150); /* keys spread over the shards */
  /* Another process with the same key file. */
  assert_int_equal(pipe(fd), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    frond_format *c = NULL;
    uint64_t v = 0;
    close(fd[0]);
    if (frond_format_create(&c, "decimal:shard=8", k, NULL, NULL, NULL) == 0 &&
        frond_format_shard_of(c, "user-7", 6, &v, NULL) == 0 &&
        write(fd[1], &v, sizeof(v)) == (ssize_t)sizeof(v))
      _exit(0);
    _exit(1);
  }
  close(fd[1]);
  assert_int_equal(read(fd[0], &in, sizeof(in)), (ssize_t)sizeof(in));
  close(fd[0]);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  assert_int_equal(in, shard_of(f1, "user-7"));
  /* Another master key, another map; another S, another record. */
  frond_order_keys_free(k);
  k = keys_of(KEY1);
  other = format_of("decimal:shard=8", k);
  differ = 0;
  for (int u = 0; u < 64; u++) {
    char key[32];
    snprintf(key, sizeof(key), "user-%d", u);
    differ += shard_of(other, key) != shard_of(f1, key);
  }
  assert_true(differ > 32);
  frond_format_free(other);
  frond_format_free(f1);
  frond_format_free(f2);
  frond_order_keys_free(k);
  frond_gen_close(g1, NULL);
  frond_gen_close(g2, NULL);
}

typedef struct worker {
  pthread_t thread;
  frond_format *f;
  frond_gen *g;
  int index, failed;
  int64_t ids[20000];
} worker;

static void *work_main(void *arg) {
  worker *w = arg;
  frond_format_source src = {w->g, NULL, NULL, 0};
  char buf[100][32], key[16];
  for (int i = 0; i < 20000; i += 100) {
    snprintf(key, sizeof(key), "k%d", (i / 100) % 7);
    if (frond_format_next_for(w->f, &src, key, strlen(key), 100, buf[0], 32,
                              NULL) != 0) {
      w->failed = 1;
      return NULL;
    }
    for (int j = 0; j < 100; j++)
      w->ids[i + j] = strtoll(buf[j], NULL, 10);
  }
  return NULL;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Four threads, seven keys, one generator: every written value differs,
** and so do the IDs they decode to. */
static void test_shard_unique_threads(void **state) {
  enum { T = 4 };
  frond_order_keys *k = keys_of(KEY2);
  frond_format *f = format_of("decimal:shard=3", k);
  frond_gen *g = gen_of(5);
  worker *w = calloc(T, sizeof(*w));
  int64_t *all = malloc(sizeof(*all) * 20000 * T);
  (void)state;
  assert_non_null(w);
  assert_non_null(all);
  frond_format_skip_check(f);
  for (int i = 0; i < T; i++) {
    w[i].f = f;
    w[i].g = g;
    w[i].index = i;
    assert_int_equal(pthread_create(&w[i].thread, NULL, work_main, &w[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(w[i].thread, NULL);
    assert_int_equal(w[i].failed, 0);
    memcpy(all + i * 20000, w[i].ids, sizeof(w[i].ids));
  }
  qsort(all, 20000 * T, sizeof(*all), cmp64);
  for (int i = 1; i < 20000 * T; i++)
    assert_true(all[i] != all[i - 1]);
  for (int i = 0; i < 20000 * T; i++)
    all[i] &= (INT64_C(1) << 60) - 1; /* the IDs inside */
  qsort(all, 20000 * T, sizeof(*all), cmp64);
  for (int i = 1; i < 20000 * T; i++)
    assert_true(all[i] != all[i - 1]);
  free(all);
  free(w);
  frond_format_free(f);
  frond_order_keys_free(k);
  frond_gen_close(g, NULL);
}

static void refused(const char *spec, const frond_order_keys *k, int code,
                    const char *words) {
  frond_format *f = NULL;
  frond_error err = {0, ""};
  assert_int_equal(frond_format_create(&f, spec, k, NULL, NULL, &err), code);
  assert_null(f);
  if (strstr(err.message, words) == NULL)
    fail_msg("'%s': \"%s\" does not say \"%s\"", spec, err.message, words);
}

static void test_refusals(void **state) {
  frond_order_keys *k = keys_of(KEY0);
  frond_format *f, *r;
  frond_gen *g;
  frond_format_source src;
  frond_error err = {0, ""};
  char buf[32], big[FROND_SHARD_KEY_MAX + 2];
  uint64_t s;
  (void)state;
  refused("decimal:reverse=maybe", NULL, FROND_EFORMAT_INVALID, "yes or no");
  refused("decimal:shard=0", k, FROND_EFORMAT_INVALID, "1 to 16");
  refused("decimal:shard=17", k, FROND_EFORMAT_INVALID, "1 to 16");
  refused("base32:shard=x", k, FROND_EFORMAT_INVALID, "1 to 16");
  refused("decimal:reverse=yes,shard=2", k, FROND_EFORMAT_INVALID,
          "do not combine");
  refused("decimal:key=1", k, FROND_EFORMAT_INVALID, "goes with shard=");
  refused("order:digits=19,reverse=yes", k, FROND_EFORMAT_INVALID,
          "takes no key 'reverse'");
  refused("uuid7:shard=2", k, FROND_EFORMAT_INVALID, "takes no key 'shard'");
  refused("decimal:shard=4", NULL, FROND_EKEY_INVALID, "shard= needs a key");
  refused("decimal:shard=4,key=7", k, FROND_EKEY_INVALID, "version '7'");
  g = gen_of(1);
  src = (frond_format_source){g, NULL, NULL, 0};
  f = format_of("decimal:shard=4", k);
  r = format_of("decimal:reverse=yes", NULL);
  frond_format_skip_check(f);
  /* A shard format without the caller's key, a key without shard=. */
  assert_int_equal(frond_format_next(f, &src, buf, sizeof(buf), &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "caller's key"));
  assert_int_equal(frond_format_encode(f, 1, 0, buf, sizeof(buf), &err),
                   FROND_EINVAL);
  assert_int_equal(
      frond_format_next_for(r, &src, "u", 1, 1, buf, sizeof(buf), &err),
      FROND_EINVAL);
  assert_int_equal(frond_format_shard_of(r, "u", 1, &s, &err), FROND_EINVAL);
  /* Keys of no byte, or too many. */
  memset(big, 'x', sizeof(big));
  assert_int_equal(
      frond_format_next_for(f, &src, "", 0, 1, buf, sizeof(buf), &err),
      FROND_EINVAL);
  assert_int_equal(frond_format_next_for(f, &src, big, FROND_SHARD_KEY_MAX + 1,
                                         1, buf, sizeof(buf), &err),
                   FROND_EINVAL);
  assert_int_equal(frond_format_next_for(f, &src, big, FROND_SHARD_KEY_MAX, 1,
                                         buf, sizeof(buf), &err),
                   0);
  /* A string that is not the format's. */
  assert_int_equal(frond_format_shard_in(f, "12x", 3, &s, &err),
                   FROND_EID_INVALID);
  frond_format_free(f);
  frond_gen_close(g, NULL);
  /* IDs that need the shard's bits: refused, never cut. The frond layout's
  ** IDs (epoch 2025) need 58 bits today: shard=9 leaves 54. */
  {
    frond_layout l;
    frond_gen_options o;
    frond_gen_options_init(&o);
    assert_int_equal(frond_layout_parse("frond", &l, NULL), 0);
    assert_int_equal(frond_gen_create(&g, &l, 1, &o, NULL), 0);
    src = (frond_format_source){g, NULL, NULL, 0};
    f = format_of("decimal:shard=9", k);
    frond_format_skip_check(f);
    assert_int_equal(
        frond_format_next_for(f, &src, "u", 1, 1, buf, sizeof(buf), &err),
        FROND_EID_TOO_LARGE);
    assert_non_null(strstr(err.message, "54 bits"));
    frond_format_free(f);
    frond_gen_close(g, NULL);
  }
  frond_format_free(r);
  frond_order_keys_free(k);
}

/* A shard format is keyed: it issues nothing until its key's fingerprint
** is checked, and the fingerprint changes with S. */
static void test_shard_key_is_a_fact(void **state) {
  frond_order_keys *k = keys_of(KEY0);
  frond_format *a = format_of("decimal:shard=4", k);
  frond_format *b = format_of("decimal:shard=5", k);
  frond_gen *g = gen_of(1);
  frond_format_source src = {g, NULL, NULL, 0};
  char fa[32], fb[32], buf[32];
  (void)state;
  assert_true(frond_format_fingerprint(a, fa, sizeof(fa)) > 0);
  assert_true(frond_format_fingerprint(b, fb, sizeof(fb)) > 0);
  assert_string_not_equal(fa, fb);
  assert_int_equal(
      frond_format_next_for(a, &src, "u", 1, 1, buf, sizeof(buf), NULL),
      FROND_EINVAL); /* not checked */
  frond_format_free(a);
  frond_format_free(b);
  frond_order_keys_free(k);
  frond_gen_close(g, NULL);
}

/* One record per scope for every shard format: another S, key version or
** key is KEY_MISMATCH naming both (their strings carry no version, and
** one of S = 4 can equal one of S = 5); the same spec, and the same S,
** version and key in another radix, agree. */
static void mismatch(const char *spec, const char *keys, const char *dir,
                     const char *here, const char *there) {
  frond_order_keys *k = keys_of(keys);
  frond_format *f = format_of(spec, k);
  frond_gen *g = gen_of(1);
  frond_format_source src = {g, NULL, NULL, 0};
  frond_error err = {0, ""};
  char buf[32];
  if (here == NULL) {
    if (frond_format_check(f, &src, NULL, dir, &err) != 0)
      fail_msg("%s: %s", spec, err.message);
    assert_int_equal(
        frond_format_next_for(f, &src, "u", 1, 1, buf, sizeof(buf), NULL), 0);
  } else {
    assert_int_equal(frond_format_check(f, &src, NULL, dir, &err),
                     FROND_EKEY_MISMATCH);
    if (strstr(err.message, here) == NULL ||
        strstr(err.message, there) == NULL ||
        strncmp(err.message, "shard=", 6) != 0 || /* named as a shard format */
        strstr(err.message, "order numbers") != NULL)
      fail_msg("%s: '%s' does not name %s and %s", spec, err.message, here,
               there);
    assert_int_equal(
        frond_format_next_for(f, &src, "u", 1, 1, buf, sizeof(buf), NULL),
        FROND_EKEY_MISMATCH);
  }
  frond_format_free(f);
  frond_order_keys_free(k);
  frond_gen_close(g, NULL);
}

static void test_shard_one_record(void **state) {
  char *dir = tmpdir_make(), path[600];
  const char *k01 = "1:" KEY0 "\n2:" KEY1 "\n";
  (void)state;
  mismatch("decimal:shard=4,key=1", k01, dir, NULL, NULL); /* recorded */
  mismatch("decimal:shard=4,key=1", k01, dir, NULL, NULL); /* the same */
  mismatch("base32:shard=4,key=1", k01, dir, NULL, NULL);
  mismatch("decimal:shard=5,key=1", k01, dir, "shard=5,key=1", "shard=4,key=1");
  mismatch("decimal:shard=4,key=2", k01, dir, "shard=4,key=2", "shard=4,key=1");
  mismatch("decimal:shard=4", KEY0, dir, "shard=4,key=-", "shard=4,key=1");
  mismatch("decimal:shard=4,key=1", "1:" KEY1, dir, "shard=4,key=1",
           "shard=4,key=1,fingerprint=");
  snprintf(path, sizeof(path), "%s/frond-fact-key.shard.snowflake", dir);
  assert_int_equal(access(path, F_OK), 0);
  tmpdir_remove(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reverse63),
      cmocka_unit_test(test_reverse_round_trip),
      cmocka_unit_test(test_reverse_spreads),
      cmocka_unit_test(test_shard_same_key_same_shard),
      cmocka_unit_test(test_shard_unique_threads),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_shard_key_is_a_fact),
      cmocka_unit_test(test_shard_one_record),
  };
  return frond_run_tests(tests, NULL, NULL);
}
