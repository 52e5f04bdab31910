/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_rand_aes.c -- the AES-256-CTR keystream of 128-bit IDs' random
** bits (rand_aes.c) against OpenSSL's aes-256-ctr, at every length and
** on each code path this CPU has; and the bits that calls get, under a
** fixed key, exactly the fast-key-erasure chain the head comments of
** id128_rand.c and rand_aes.c describe, on each keystream.
*/
#include "testutil.h"

#include "core/formats.h"

#include <openssl/evp.h>
#include <sodium.h>

/* OpenSSL's aes-256-ctr keystream: zeros encrypted from counter 0. */
static void ref_ctr(const uint8_t key[32], uint8_t *out, size_t n) {
  static const uint8_t iv[16];
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int len = 0, fin = 0;
  assert_non_null(c);
  memset(out, 0, n);
  assert_int_equal(EVP_EncryptInit_ex(c, EVP_aes_256_ctr(), NULL, key, iv), 1);
  assert_int_equal(EVP_EncryptUpdate(c, out, &len, out, (int)n), 1);
  assert_int_equal(EVP_EncryptFinal_ex(c, out + len, &fin), 1);
  assert_int_equal((size_t)(len + fin), n);
  EVP_CIPHER_CTX_free(c);
}

/* Lengths around each path's edges: a part block, one block, the eight
** blocks of AES-NI's loop, the 32 of VAES's, a whole draw, the largest. */
static const size_t lengths[] = {
    1,   15,  16,  17,   32,   127,  128,  129,
    511, 512, 513, 1000, 1024, 1040, 2047, FROND__RAND_AES_MAX};

static void test_matches_openssl(void **state) {
  static uint8_t got[FROND__RAND_AES_MAX + 16], want[FROND__RAND_AES_MAX];
  int tried = 0;
  (void)state;
  for (int lvl = 1; lvl <= 2; lvl++) {
    if (frond__rand_force(lvl) != 0) {
      print_message("level %d: not on this CPU\n", lvl);
      continue;
    }
    print_message("%s\n", frond__rand_impl());
    tried++;
    for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
      for (int k = 0; k < 8; k++) {
        size_t n = lengths[i];
        uint8_t key[32];
        randombytes_buf(key, sizeof(key));
        if (k == 0)
          memset(key, 0, sizeof(key));
        memcpy(got, key, sizeof(key));
        memset(got + 32, 0xa5, sizeof(got) - 32);
        assert_int_equal(frond__rand_aes_draw(got, n), 0);
        ref_ctr(key, want, n);
        assert_memory_equal(got, want, n);
        /* Not a byte past n (the key's own bytes aside). */
        for (size_t j = n > 32 ? n : 32; j < n + 16; j++)
          assert_int_equal(got[j], 0xa5);
      }
  }
  frond__rand_force(-1);
  if (tried == 0)
    skip();
}

/* Whether /proc/cpuinfo's first flags line holds flag. */
static int cpu_flag(const char *flag) {
  char line[8192], want[64];
  FILE *f = fopen("/proc/cpuinfo", "r");
  int found = 0;
  assert_non_null(f);
  snprintf(want, sizeof(want), " %s ", flag);
  while (fgets(line, sizeof(line), f) != NULL)
    if (strncmp(line, "flags", 5) == 0) {
      line[strcspn(line, "\n")] = ' ';
      found = strstr(line, want) != NULL;
      break;
    }
  fclose(f);
  return found;
}

/* Unforced, the keystream is the best this CPU has, as the kernel's list
** of its flags says (a probe that wrongly said "none" would otherwise
** leave every AES check above skipped). */
static void test_default_is_the_cpus(void **state) {
  const char *want = "chacha20";
  (void)state;
#if defined(__x86_64__)
  if (cpu_flag("aes") && cpu_flag("sse4_1"))
    want = cpu_flag("vaes") && cpu_flag("avx512f") ? "vaes" : "aes-ni";
#endif
  frond__rand_force(-1);
  print_message("this CPU: %s\n", want);
  assert_string_equal(frond__rand_impl(), want);
}

static void test_refuses_what_it_cannot(void **state) {
  uint8_t buf[FROND__RAND_AES_MAX + 16] = {1};
  (void)state;
  if (frond__rand_force(1) != 0)
    skip();
  /* A level above the CPU's is refused, and the force stays. */
  assert_int_equal(frond__rand_force(3), -1);
  assert_string_equal(frond__rand_impl(), "aes-ni");
  assert_int_equal(frond__rand_aes_draw(buf, FROND__RAND_AES_MAX + 1), -1);
  assert_int_equal(buf[0], 1); /* nothing written */
  assert_int_equal(frond__rand_force(0), 0);
  assert_string_equal(frond__rand_impl(), "chacha20");
  assert_int_equal(frond__rand_aes_draw(buf, 64), -1);
  assert_int_equal(buf[0], 1);
  frond__rand_force(-1);
}

/* One draw of 1 KiB under key: its first 32 bytes the next key, the rest
** what calls get. */
static void draw_ref(int lvl, uint8_t key[32], uint8_t out[1024 - 32]) {
  static const uint8_t nonce[crypto_stream_chacha20_NONCEBYTES];
  uint8_t d[1024];
  if (lvl == 0)
    crypto_stream_chacha20(d, sizeof(d), nonce, key);
  else
    ref_ctr(key, d, sizeof(d));
  memcpy(key, d, 32);
  memcpy(out, d + 32, sizeof(d) - 32);
}

/* Under a fixed key (16 bytes, twice: id128_rand.c) a new stream's bytes
** are the chain's: three draws, each under the key the last one made. */
static void test_calls_get_the_chain(void **state) {
  static const uint8_t fixed[16] = {3, 1, 4, 1, 5, 9, 2, 6};
  enum { PART = 1024 - 32, DRAWS = 3 };
  uint8_t key[32], want[PART * DRAWS], got[PART * DRAWS];
  uint64_t s;
  (void)state;
  for (int lvl = 0; lvl <= 2; lvl++) {
    if (frond__rand_force(lvl) != 0)
      continue;
    memcpy(key, fixed, 16);
    memcpy(key + 16, fixed, 16);
    for (int d = 0; d < DRAWS; d++)
      draw_ref(lvl, key, want + PART * d);
    frond__rand_fixed(fixed);
    s = frond__rand_stream();
    frond__rand_bytes(s, got, 8); /* both ways of drawing */
    for (size_t i = 8; i < sizeof(got); i += 8) {
      uint64_t v = frond__rand64(s);
      memcpy(got + i, &v, 8);
    }
    frond__rand_fixed(NULL);
    assert_memory_equal(got, want, sizeof(want));
    print_message("%s: %d draws as the chain says\n", frond__rand_impl(),
                  DRAWS);
  }
  frond__rand_force(-1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_is_the_cpus),
      cmocka_unit_test(test_matches_openssl),
      cmocka_unit_test(test_refuses_what_it_cannot),
      cmocka_unit_test(test_calls_get_the_chain),
  };
  return frond_run_tests(tests, NULL, NULL);
}
