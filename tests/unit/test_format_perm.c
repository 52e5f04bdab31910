/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_perm.c -- the keyed permutation behind order numbers: a
** bijection over whole small domains, round trips and wrong keys, outputs
** pinned as released, the inline SipHash against libsodium and the
** published vector, every batch kernel against one at a time.
*/
#include "format_testutil.h"

#include "core/siphash.h"

#include <sodium.h>

/* Over whole small domains, every input maps to a distinct output, and
** back: the map is a bijection, including odd widths and base32. */
static void test_bijection_full_domains(void **state) {
  static const unsigned cases[][2] = {{10, 2}, {10, 3}, {10, 5}, {10, 6},
                                      {32, 2}, {32, 3}, {32, 4}};
  (void)state;
  for (size_t c = 0; c < FROND__ARRAY_SIZE(cases); c++) {
    frond__perm p;
    uint64_t dom = 1, x, back;
    uint8_t digits[FROND__PERM_MAX_WIDTH], *seen;
    assert_int_equal(frond__perm_init(&p, cases[c][0], cases[c][1], 8), 0);
    for (unsigned i = 0; i < p.width; i++)
      dom *= p.radix;
    seen = calloc(dom, 1);
    for (x = 0; x < dom; x++) {
      uint64_t y = 0;
      frond__perm_apply(&p, key16, x, digits);
      for (unsigned i = 0; i < p.width; i++) {
        assert_true(digits[i] < p.radix);
        y = y * p.radix + digits[i];
      }
      assert_true(y < dom);
      if (seen[y]++)
        fail_msg("radix %u width %u: %llu maps onto a taken output", p.radix,
                 p.width, (unsigned long long)x);
      assert_int_equal(frond__perm_invert(&p, key16, digits, &back), 0);
      assert_true(back == x);
    }
    free(seen);
  }
}

/* Over large domains, random IDs round-trip through the format, and a
** wrong key never gives the ID back. */
static void test_round_trip_and_wrong_key(void **state) {
  static const char *const specs[] = {
      "order:digits=19,check=damm", "order:base32=13,check=mod37",
      "order:digits=12,prefix=%Y%m%d", "order:digits=10,check=luhn"};
  frond_order_keys *right = keys_of(KEY0), *wrong = keys_of(KEY1);
  uint64_t seed = 0x9e3779b97f4a7c15u;
  (void)state;
  for (size_t s = 0; s < FROND__ARRAY_SIZE(specs); s++) {
    frond_format *f = format_of(specs[s], right);
    frond_format *g = format_of(specs[s], wrong);
    int64_t max = frond_format_max_id(f);
    int same = 0;
    for (int i = 0; i < 20000; i++) {
      int64_t id = (int64_t)(rnd(&seed) % (uint64_t)max);
      char buf[64];
      frond_format_value v;
      frond_error err = {0, ""};
      if (i == 0)
        id = max;
      assert_int_equal(frond_format_encode(f, id, INT64_C(1767225600000), buf,
                                           sizeof(buf), &err),
                       0);
      assert_int_equal(strlen(buf), frond_format_length(f));
      assert_int_equal(frond_format_decode(f, buf, strlen(buf), &v, &err), 0);
      assert_true(v.id == id);
      if (frond_format_decode(g, buf, strlen(buf), &v, &err) == 0 && v.id == id)
        same++;
    }
    assert_int_equal(same, 0);
    frond_format_free(f);
    frond_format_free(g);
  }
  frond_order_keys_free(right);
  frond_order_keys_free(wrong);
}

/* Order numbers already issued must stay the numbers of their IDs: the
** permutation's outputs, and whole order numbers, pinned as first issued
** (each half's SipHash calls crypto_shorthash then). */
static void test_known_answers(void **state) {
  static const struct {
    unsigned radix, width, rounds;
    uint64_t x;
    const char *want;
  } perm[] = {
      {10, 19, 8, UINT64_C(0), "8884383800862930829"},
      {10, 19, 8, UINT64_C(1234567), "4866556670969123832"},
      {10, 19, 8, UINT64_C(9999999999999999999), "5863095079556972904"},
      {10, 18, 8, UINT64_C(0), "632339480333659644"},
      {10, 18, 8, UINT64_C(1234567), "051560605189685022"},
      {10, 18, 8, UINT64_C(999999999999999999), "299268100092239739"},
      {10, 12, 8, UINT64_C(0), "486678091597"},
      {10, 12, 8, UINT64_C(1234567), "398876126123"},
      {10, 12, 8, UINT64_C(999999999999), "906258522326"},
      {10, 7, 4, UINT64_C(0), "0348182"},
      {10, 7, 4, UINT64_C(1234567), "6892628"},
      {10, 7, 4, UINT64_C(9999999), "2043536"},
      {10, 6, 32, UINT64_C(0), "187228"},
      {10, 6, 32, UINT64_C(234567), "984831"},
      {10, 6, 32, UINT64_C(999999), "533923"},
      {10, 2, 8, UINT64_C(0), "00"},
      {10, 2, 8, UINT64_C(67), "50"},
      {10, 2, 8, UINT64_C(99), "66"},
      {32, 13, 8, UINT64_C(0), "EJMNN72WD8FCT"},
      {32, 13, 8, UINT64_C(1234567), "THHQ9QEFZ80Q4"},
      {32, 13, 8, UINT64_C(18446744073709551614), "J2MS1SCFENHMC"},
      {32, 5, 6, UINT64_C(0), "90B75"},
      {32, 5, 6, UINT64_C(1234567), "KWCXE"},
      {32, 5, 6, UINT64_C(33554431), "B5C3T"},
      {32, 2, 2, UINT64_C(0), "3D"},
      {32, 2, 2, UINT64_C(647), "02"},
      {32, 2, 2, UINT64_C(1023), "J1"},
      {10, 19, 6, UINT64_C(0), "4666559803564657014"},
      {10, 19, 6, UINT64_C(1234567), "3424054535560467011"},
      {10, 19, 6, UINT64_C(9999999999999999999), "1015444585035966737"},
      {10, 9, 8, UINT64_C(0), "874715458"},
      {10, 9, 8, UINT64_C(1234567), "663536131"},
      {10, 9, 8, UINT64_C(999999999), "226240962"},
  };
  static const struct {
    const char *spec;
    int64_t id;
    const char *want;
  } numbers[] = {
      {"order:digits=19,check=damm", INT64_C(1), "03700511732216733487"},
      {"order:digits=19,check=damm", INT64_C(7000000000000000123),
       "79481760335237930692"},
      {"order:base32=13,check=mod37", INT64_C(1), "ZQ7K8H50F9Z01D"},
      {"order:base32=13,check=mod37", INT64_C(7000000000000000123),
       "3VN8872E3ZCSMK"},
      {"order:digits=10,check=luhn", INT64_C(1), "95485207781"},
      {"order:digits=10,check=luhn", INT64_C(700000123), "01569167974"},
  };
  static const char sym[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  frond_order_keys *k = keys_of(KEY0);
  (void)state;
  for (size_t i = 0; i < FROND__ARRAY_SIZE(perm); i++) {
    frond__perm p;
    uint8_t d[FROND__PERM_MAX_WIDTH], one[FROND__PERM_MAX_WIDTH];
    char got[FROND__PERM_MAX_WIDTH + 1];
    const frond__sip_kernel *ks;
    size_t nk = frond__sip_kernels(&ks);
    uint64_t back;
    assert_int_equal(
        frond__perm_init(&p, perm[i].radix, perm[i].width, perm[i].rounds), 0);
    frond__perm_apply(&p, key16, perm[i].x, d);
    for (unsigned j = 0; j < p.width; j++)
      got[j] = sym[d[j]];
    got[p.width] = '\0';
    assert_string_equal(got, perm[i].want);
    assert_int_equal(frond__perm_invert(&p, key16, d, &back), 0);
    assert_true(back == perm[i].x);
    for (size_t j = 0; j < nk; j++) {
      frond__perm_apply_n(&p, key16, &perm[i].x, 1, one, &ks[j]);
      assert_memory_equal(one, d, p.width);
    }
  }
  for (size_t i = 0; i < FROND__ARRAY_SIZE(numbers); i++) {
    frond_format *f = format_of(numbers[i].spec, k);
    char buf[64];
    assert_int_equal(frond_format_encode(f, numbers[i].id,
                                         INT64_C(1767225600000), buf,
                                         sizeof(buf), NULL),
                     0);
    assert_string_equal(buf, numbers[i].want);
    frond_format_free(f);
  }
  frond_order_keys_free(k);
}

/* libsodium's SipHash-2-4 of the 8 little-endian bytes of m. */
static uint64_t sodium_sip(const uint8_t key[16], uint64_t m) {
  uint8_t in[8], out[8];
  uint64_t h = 0;
  for (int b = 0; b < 8; b++)
    in[b] = (uint8_t)(m >> (8 * b));
  crypto_shorthash(out, in, 8, key);
  for (int b = 7; b >= 0; b--)
    h = h << 8 | out[b];
  return h;
}

/* The inlined SipHash-2-4 of one word (siphash.h) is SipHash-2-4: the
** published test vector of the reference implementation (key 00..0f,
** message 00..07), and libsodium's crypto_shorthash on random keys and
** words, the words a round hashes, and words of zero and one bytes. */
static void test_sip_word(void **state) {
  /* vectors_sip64[8] of SipHash's reference implementation. */
  static const uint8_t want8[8] = {0x62, 0x24, 0x93, 0x9a,
                                   0x79, 0xf5, 0xf5, 0x93};
  uint8_t key[16], in[8], out[8];
  uint64_t seed = 0xd1b54a32d192ed03ULL, m = 0, h;
  frond__sip_key k;
  (void)state;
  for (int i = 0; i < 16; i++)
    key[i] = (uint8_t)i;
  for (int i = 0; i < 8; i++)
    in[i] = (uint8_t)i;
  crypto_shorthash(out, in, 8, key);
  assert_memory_equal(out, want8, 8);
  for (int i = 7; i >= 0; i--)
    m = m << 8 | in[i];
  frond__sip_key_init(&k, key);
  h = frond__sip24_word(&k, m);
  for (int i = 0; i < 8; i++)
    assert_int_equal((uint8_t)(h >> (8 * i)), want8[i]);
  for (int i = 0; i < 200000; i++) {
    uint64_t r = rnd(&seed);
    if (i % 64 == 0) {
      for (int j = 0; j < 16; j++)
        key[j] = (uint8_t)rnd(&seed);
      frond__sip_key_init(&k, key);
    }
    switch (i % 4) {
    case 0:
      m = r;
      break;
    case 1: /* what a round hashes */
      m = (r & ((UINT64_C(1) << 35) - 1)) | (uint64_t)(i / 4 % 32) << 56;
      break;
    case 2:
      m = (r & 0xff) << (8 * (i / 4 % 8));
      break;
    default:
      m = i / 4 % 2 ? UINT64_MAX : 0;
    }
    h = frond__sip24_word(&k, m);
    if (h != sodium_sip(key, m))
      fail_msg("word %016llx gives %016llx, libsodium %016llx",
               (unsigned long long)m, (unsigned long long)h,
               (unsigned long long)sodium_sip(key, m));
  }
}

/* The permutation as first written, one crypto_shorthash call per round
** and the textbook arithmetic: what every order number must stay. */
static uint64_t sodium_round(const void *key, uint64_t word) {
  return sodium_sip(key, word);
}

static void perm_reference(const frond__perm *p, const uint8_t key[16],
                           uint64_t x, uint8_t *out) {
  perm_reference_by(p, sodium_round, key, x, out);
}

/* The permutation, one at a time, in batches with every kernel, and
** backwards, gives exactly the reference's outputs: random keys, every
** width of both radixes, round counts 2 to 32, random IDs and the ends of
** each domain. */
static void test_perm_reference(void **state) {
  const frond__sip_kernel *ks;
  size_t nk = frond__sip_kernels(&ks);
  uint64_t seed = 0x9fb21c651e98df25ULL;
  long checked = 0;
  (void)state;
  for (int c = 0; c < 600; c++) {
    frond__perm p;
    unsigned radix = c % 2 ? 32 : 10;
    unsigned width = 2 + (unsigned)(c / 2) % (radix == 10 ? 18 : 12);
    unsigned rounds = c % 7 == 0 ? 2 + 2 * (unsigned)(rnd(&seed) % 16) : 8;
    uint64_t dom = 1, x[40], back;
    uint8_t key[16], got[40 * FROND__PERM_MAX_WIDTH];
    uint8_t want[FROND__PERM_MAX_WIDTH];
    assert_int_equal(frond__perm_init(&p, radix, width, rounds), 0);
    for (unsigned i = 0; i < width; i++)
      dom = dom > UINT64_MAX / radix ? UINT64_MAX : dom * radix;
    for (int j = 0; j < 16; j++)
      key[j] = (uint8_t)rnd(&seed);
    for (size_t i = 0; i < FROND__ARRAY_SIZE(x); i++)
      x[i] = i == 0 ? 0 : i == 1 ? dom - 1 : rnd(&seed) % dom;
    for (size_t i = 0; i < FROND__ARRAY_SIZE(x); i++) {
      perm_reference(&p, key, x[i], want);
      frond__perm_apply(&p, key, x[i], got);
      if (memcmp(got, want, width) != 0)
        fail_msg("radix %u width %u rounds %u: ID %llu differs from the "
                 "reference",
                 radix, width, rounds, (unsigned long long)x[i]);
      assert_int_equal(frond__perm_invert(&p, key, want, &back), 0);
      assert_true(back == x[i]);
      checked++;
    }
    for (size_t k = 0; k < nk; k++) {
      frond__perm_apply_n(&p, key, x, FROND__ARRAY_SIZE(x), got, &ks[k]);
      for (size_t i = 0; i < FROND__ARRAY_SIZE(x); i++) {
        perm_reference(&p, key, x[i], want);
        if (memcmp(got + i * width, want, width) != 0)
          fail_msg("kernel %s, radix %u width %u rounds %u: ID %llu differs "
                   "from the reference",
                   ks[k].name, radix, width, rounds, (unsigned long long)x[i]);
      }
    }
  }
  assert_true(checked == 600L * 40);
}

/* Every SipHash kernel this machine runs gives libsodium's
** crypto_shorthash for every word of a sample: random words under random
** keys, the words the permutation hashes (a half below 2^35 with each
** round number 0..31 in the top byte), and words of all-zero, all-one and
** single bytes. */
static void test_sip_kernels(void **state) {
  const frond__sip_kernel *ks;
  size_t nk = frond__sip_kernels(&ks);
  uint64_t seed = 0x2545f4914f6cdd1dULL;
  long checked = 0;
  (void)state;
  assert_true(nk >= 1);
  assert_string_equal(ks[nk - 1].name, "libsodium");
  for (size_t k = 0; k < nk; k++)
    print_message("kernel %s\n", ks[k].name);
  for (int batch = 0; batch < 4096; batch++) {
    uint8_t key[16];
    uint64_t m[16], h[16];
    for (int i = 0; i < 16; i++)
      key[i] = (uint8_t)rnd(&seed);
    if (batch == 0)
      memset(key, 0, sizeof(key));
    for (int j = 0; j < 16; j++) {
      uint64_t r = rnd(&seed);
      switch (batch % 4) {
      case 0:
        m[j] = r;
        break;
      case 1: /* what a round hashes */
        m[j] = (r & ((UINT64_C(1) << 35) - 1)) |
               (uint64_t)((batch / 4 + j) % 32) << 56;
        break;
      case 2: /* one byte set */
        m[j] = (r & 0xff) << (8 * (j % 8));
        break;
      default:
        m[j] = j % 2 ? UINT64_MAX : 0;
      }
    }
    for (size_t k = 0; k < nk; k++) {
      memset(h, 0, sizeof(h));
      ks[k].hash16(key, m, h);
      for (int j = 0; j < 16; j++) {
        uint8_t in[8], out[8];
        uint64_t want = 0;
        for (int b = 0; b < 8; b++)
          in[b] = (uint8_t)(m[j] >> (8 * b));
        crypto_shorthash(out, in, 8, key);
        for (int b = 7; b >= 0; b--)
          want = want << 8 | out[b];
        if (h[j] != want)
          fail_msg("kernel %s: word %016llx gives %016llx, libsodium %016llx",
                   ks[k].name, (unsigned long long)m[j],
                   (unsigned long long)h[j], (unsigned long long)want);
        checked++;
      }
    }
  }
  assert_true(checked >= 4096L * 16);
}

/* The batched permutation gives what the single one does, with every
** kernel, for batches that fill the lanes and batches that do not, over
** decimal and base32 domains of odd and even widths and several round
** counts. */
static void test_perm_batch(void **state) {
  static const unsigned cases[][3] = {{10, 19, 8}, {10, 12, 8}, {10, 7, 4},
                                      {10, 6, 32}, {32, 13, 8}, {32, 5, 6},
                                      {10, 2, 8},  {32, 2, 2}};
  /* Short batches cross each kernel's min_lanes. */
  static const size_t sizes[] = {1, 2, 3, 4, 5, 8, 15, 16, 17, 333};
  const frond__sip_kernel *ks;
  size_t nk = frond__sip_kernels(&ks);
  uint64_t seed = 0x853c49e6748fea9bULL;
  (void)state;
  for (size_t c = 0; c < FROND__ARRAY_SIZE(cases); c++) {
    frond__perm p;
    uint64_t dom = 1, x[333];
    uint8_t got[333 * FROND__PERM_MAX_WIDTH], want[FROND__PERM_MAX_WIDTH];
    assert_int_equal(
        frond__perm_init(&p, cases[c][0], cases[c][1], cases[c][2]), 0);
    for (unsigned i = 0; i < p.width; i++)
      dom = dom > UINT64_MAX / p.radix ? UINT64_MAX : dom * p.radix;
    for (size_t z = 0; z < FROND__ARRAY_SIZE(sizes); z++) {
      size_t n = sizes[z];
      for (size_t i = 0; i < n; i++)
        x[i] = i == 0 ? dom - 1 : rnd(&seed) % dom;
      for (size_t k = 0; k <= nk; k++) {
        memset(got, 0xee, sizeof(got));
        frond__perm_apply_n(&p, key16, x, n, got, k < nk ? &ks[k] : NULL);
        for (size_t i = 0; i < n; i++) {
          frond__perm_apply(&p, key16, x[i], want);
          if (memcmp(got + i * p.width, want, p.width) != 0)
            fail_msg("radix %u width %u rounds %u, kernel %s: ID %llu of a "
                     "batch of %zu differs",
                     p.radix, p.width, p.rounds, k < nk ? ks[k].name : "best",
                     (unsigned long long)x[i], n);
        }
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bijection_full_domains),
      cmocka_unit_test(test_round_trip_and_wrong_key),
      cmocka_unit_test(test_known_answers),
      cmocka_unit_test(test_sip_word),
      cmocka_unit_test(test_perm_reference),
      cmocka_unit_test(test_sip_kernels),
      cmocka_unit_test(test_perm_batch),
  };
  return frond_run_tests(tests, NULL, NULL);
}
