/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_aes.c -- the "aes" scheme of order numbers (order_aes.c):
** AES-128 against FIPS-197's example, the CPU's code against the portable
** code; pinned numbers of the scheme; a bijection on a whole small
** domain; batches equal to single IDs; a key text naming schemes per
** version; the single path against the scheme written out, at several
** rounds=; rotation from a sip version to an aes one with the old numbers
** unchanged; the fingerprint names the scheme; seq formats refuse it.
*/
#include "format_testutil.h"

#include <sodium.h>

/* FIPS-197 appendix C.1: AES-128. */
static void test_fips197(void **state) {
  static const uint8_t want[16] = {0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b,
                                   0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80,
                                   0x70, 0xb4, 0xc5, 0x5a};
  uint8_t key[16], pt[16], ct[16], c2[16];
  frond__aes_key k;
  (void)state;
  for (int i = 0; i < 16; i++) {
    key[i] = (uint8_t)i;
    pt[i] = (uint8_t)(i * 0x11);
  }
  frond__aes_expand(key, &k);
  frond__aes_encrypt_c(&k, pt, ct);
  assert_memory_equal(ct, want, 16);
  frond__aes_encrypt(&k, pt, ct);
  assert_memory_equal(ct, want, 16);
  print_message("aes runs as %s here\n", frond__aes_impl());
  /* The CPU's code and the portable code agree on random keys/blocks. */
  assert_int_equal(sodium_init() < 0, 0);
  for (int i = 0; i < 20000; i++) {
    randombytes_buf(key, 16);
    randombytes_buf(pt, 16);
    frond__aes_expand(key, &k);
    frond__aes_encrypt(&k, pt, ct);
    frond__aes_encrypt_c(&k, pt, c2);
    assert_memory_equal(ct, c2, 16);
  }
}

/* Numbers of the aes scheme under KEY0 as version 1: pinned, so that no
** later change moves a number already issued. The same from the CPU's
** code and from the portable code. */
static void test_pinned_vectors(void **state) {
  static const struct {
    const char *spec;
    int64_t id;
    const char *want;
  } v[] = {
      {"order:digits=19,check=damm,key=1", 0, "170599455195844410296"},
      {"order:digits=19,check=damm,key=1", 1, "192145346488490228616"},
      {"order:digits=19,check=damm,key=1", 12345, "179739544354830889034"},
      {"order:digits=19,check=damm,key=1", INT64_C(1234567890123456789),
       "127682968714638091729"},
      {"order:digits=19,check=damm,key=1", INT64_MAX, "133790198011876073132"},
      {"order:base32=13,check=mod37,key=1", 0, "13057HGNYNGYPQ0"},
      {"order:base32=13,check=mod37,key=1", 12345, "1NM39MTJXQ39N83"},
      {"order:base32=13,check=mod37,key=1", INT64_MAX, "1HMADQKY9RHFTT="},
      {"order:digits=8,key=1", 0, "110568349"},
      {"order:digits=8,key=1", 12345, "155296634"},
  };
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  (void)state;
  for (int c = 0; c < 2; c++) {
    frond__aes_force_c(c);
    for (size_t i = 0; i < FROND__ARRAY_SIZE(v); i++) {
      frond_format *f = format_of(v[i].spec, k);
      frond_format_value back;
      char s[64];
      assert_int_equal(frond_format_encode(f, v[i].id, 0, s, sizeof(s), NULL),
                       0);
      assert_string_equal(s, v[i].want);
      assert_int_equal(frond_format_decode(f, s, strlen(s), &back, NULL), 0);
      assert_int_equal(back.id, v[i].id);
      frond_format_free(f);
    }
  }
  frond__aes_force_c(0);
  frond_order_keys_free(k);
}

/* Every 6-digit input has its own output, and decodes back. */
static void test_bijection(void **state) {
  enum { N = 1000000 };
  frond__perm p;
  frond__aes_key k;
  uint8_t *seen = calloc(N, 1), out[6];
  (void)state;
  frond__aes_expand(key16, &k);
  assert_int_equal(frond__perm_init(&p, 10, 6, 8), 0);
  for (uint64_t x = 0; x < N; x++) {
    uint64_t y = 0, back;
    frond__aes_perm_apply(&p, &k, x, out);
    for (int i = 0; i < 6; i++)
      y = y * 10 + out[i];
    assert_int_equal(seen[y], 0);
    seen[y] = 1;
    if (x % 997 == 0) {
      assert_int_equal(frond__aes_perm_invert(&p, &k, out, &back), 0);
      assert_int_equal(back, x);
    }
  }
  free(seen);
}

/* F_i of the scheme as docs/formats.md writes it, on FIPS-197's AES
** alone: the first 8 bytes, read little-endian, of AES-128 of the block
** LE64(word) || 0^64 (perm_reference_by does the rest). */
static uint64_t aes_round_c(const void *key, uint64_t word) {
  uint8_t in[16] = {0}, enc[16];
  uint64_t h = 0;
  for (int j = 0; j < 8; j++)
    in[j] = (uint8_t)(word >> (8 * j));
  frond__aes_encrypt_c(key, in, enc);
  for (int j = 7; j >= 0; j--)
    h = h << 8 | enc[j];
  return h;
}

/* The single path against the reference, at rounds= other than the
** default too (the pinned vectors are of 8 rounds), for widths of both
** radixes, at the domain's edges and on random IDs; then the batch at
** those rounds through test_kernels_at_edges. */
static void test_rounds_match_reference(void **state) {
  static const unsigned rounds[] = {2, 8, 10, 32};
  static const unsigned widths[][2] = {{10, 2}, {10, 7}, {10, 12}, {10, 19},
                                       {32, 3}, {32, 8}, {32, 13}};
  uint64_t seed = 11;
  uint8_t want[19], got[19];
  frond__aes_key k;
  (void)state;
  frond__aes_expand(key16, &k);
  for (size_t r = 0; r < FROND__ARRAY_SIZE(rounds); r++)
    for (size_t w = 0; w < FROND__ARRAY_SIZE(widths); w++) {
      frond__perm p;
      uint64_t top; /* radix^width, 0 when every 64-bit x is one (32^13) */
      assert_int_equal(
          frond__perm_init(&p, widths[w][0], widths[w][1], rounds[r]), 0);
      top = p.a > UINT64_MAX / p.b ? 0 : p.a * p.b;
      for (int i = 0; i < 200; i++) {
        uint64_t x = i == 0   ? 0
                     : i == 1 ? top - 1
                     : top    ? rnd(&seed) % top
                              : rnd(&seed);
        perm_reference_by(&p, aes_round_c, &k, x, want);
        frond__aes_perm_apply(&p, &k, x, got);
        assert_memory_equal(got, want, p.width);
      }
    }
}

/* Batches, through whichever code runs (VAES lanes, AES-NI, C), give the
** single IDs' bodies, for widths of both radixes and odd counts. */
static void test_batches_equal_single(void **state) {
  static const unsigned widths[][2] = {
      {10, 19}, {10, 12}, {10, 7}, {32, 13}, {32, 6}};
  uint64_t seed = 0x9e3779b97f4a7c15ULL, x[301];
  uint8_t many[301 * 19], one[19];
  frond__aes_key k;
  (void)state;
  frond__aes_expand(key16, &k);
  for (size_t w = 0; w < FROND__ARRAY_SIZE(widths); w++) {
    frond__perm p;
    uint64_t top = 1;
    assert_int_equal(frond__perm_init(&p, widths[w][0], widths[w][1], 8), 0);
    for (unsigned i = 0; i < widths[w][1] && top < UINT64_MAX / 32; i++)
      top *= widths[w][0];
    for (size_t i = 0; i < 301; i++)
      x[i] = rnd(&seed) % (top > INT64_MAX ? (uint64_t)INT64_MAX : top);
    frond__aes_perm_apply_n(&p, &k, x, 301, many);
    for (size_t i = 0; i < 301; i++) {
      frond__aes_perm_apply(&p, &k, x[i], one);
      assert_memory_equal(many + i * p.width, one, p.width);
    }
  }
}

/* Every width of both radixes, every batch size the kernels take (16,
** 32 and 64 side by side, and the rest one at a time), random inputs and
** the domain's edges (0 and radix^width - 1): the batch equals the single
** IDs, with the digits written by AVX-512 IFMA and by the table, and with
** the rounds in VAES, AES-NI and portable C. */
static void test_kernels_at_edges(void **state) {
  static const size_t counts[] = {1,  15, 16, 17, 31,  32,  33,  48,  63,
                                  64, 65, 80, 96, 112, 127, 128, 129, 200};
  /* 8, the default, then a few more of the rounds= a spec may give: a
  ** round's number is part of its block from 8 on too. */
  static const unsigned rounds[] = {8, 2, 10, 32};
  uint64_t seed = 0x243f6a8885a308d3ULL, x[200];
  uint8_t many[200 * 19], one[19];
  frond__aes_key k;
  (void)state;
  frond__aes_expand(key16, &k);
  for (size_t r = 0; r < FROND__ARRAY_SIZE(rounds); r++)
    for (int mode = 0; mode < (r == 0 ? 3 : 2); mode++) {
      frond__perm_put_force_scalar(mode == 1);
      frond__aes_force_c(mode == 2);
      for (unsigned radix = 10; radix <= 32; radix += 22)
        for (unsigned w = 2; w <= (radix == 10 ? 19u : 13u); w++) {
          frond__perm p;
          uint64_t top = 1;
          assert_int_equal(frond__perm_init(&p, radix, w, rounds[r]), 0);
          for (unsigned i = 0; i < w; i++)
            top = top > UINT64_MAX / radix ? UINT64_MAX : top * radix;
          for (size_t c = 0; c < FROND__ARRAY_SIZE(counts); c++) {
            size_t n = counts[c];
            for (size_t i = 0; i < n; i++)
              x[i] = i % 5 == 0 ? 0 : i % 5 == 1 ? top - 1 : rnd(&seed) % top;
            frond__aes_perm_apply_n(&p, &k, x, n, many);
            for (size_t i = 0; i < n; i++) {
              frond__aes_perm_apply(&p, &k, x[i], one);
              assert_memory_equal(many + i * w, one, w);
            }
            if (mode == 2 && c > 4)
              break; /* portable C is slow: a few sizes suffice */
          }
        }
    }
  frond__perm_put_force_scalar(0);
  frond__aes_force_c(0);
}

/* The digits of both writers for every width, at 0, at each power of the
** radix and one below it, and at random halves; decimal digits as text
** both ways, nothing written between the numbers. */
static void test_digit_writers_agree(void **state) {
  uint64_t seed = 7, A[64], B[64];
  uint8_t fast[64 * 19], slow[64 * 19];
  (void)state;
  for (unsigned radix = 10; radix <= 32; radix += 22)
    for (unsigned w = 2; w <= (radix == 10 ? 19u : 13u); w++) {
      frond__perm p;
      assert_int_equal(frond__perm_init(&p, radix, w, 8), 0);
      for (int round = 0; round < 20; round++) {
        uint64_t pa = 1, pb = 1;
        for (size_t j = 0; j < 64; j++) {
          A[j] = rnd(&seed) % p.a;
          B[j] = rnd(&seed) % p.b;
        }
        for (size_t j = 0; j < 11 && pa <= p.a; j++, pa *= radix) {
          A[2 * j] = pa - 1;
          A[2 * j + 1] = pa < p.a ? pa : 0;
        }
        for (size_t j = 0; j < 11 && pb <= p.b; j++, pb *= radix) {
          B[63 - 2 * j] = pb - 1;
          B[62 - 2 * j] = pb < p.b ? pb : 0;
        }
        frond__perm_put_force_scalar(0);
        frond__perm_put_n(&p, A, B, 64, fast);
        frond__perm_put_force_scalar(1);
        frond__perm_put_n(&p, A, B, 64, slow);
        frond__perm_put_force_scalar(0);
        assert_memory_equal(fast, slow, 64 * w);
        for (size_t j = 0; j < 64; j++)
          assert_int_equal(frond__perm_get(slow + j * w, radix, p.adig), A[j]);
        if (radix == 10) { /* as text, both ways, touching nothing else */
          char tf[64 * 24], ts[64 * 24];
          size_t stride = w + 3, n = 1 + (size_t)round * 3;
          memset(tf, 'x', sizeof(tf));
          memset(ts, 'x', sizeof(ts));
          frond__perm_text_n(slow, w, n, tf + 1, stride);
          frond__perm_put_force_scalar(1);
          frond__perm_text_n(slow, w, n, ts + 1, stride);
          frond__perm_put_force_scalar(0);
          assert_memory_equal(tf, ts, sizeof(tf));
          for (size_t j = 0; j < n; j++) {
            assert_int_equal(tf[1 + j * stride + w], 'x');
            for (size_t i = 0; i < w; i++)
              assert_int_equal(tf[1 + j * stride + i], '0' + slow[j * w + i]);
          }
          assert_int_equal(tf[0], 'x');
        }
      }
    }
}

/* Key text: "V:aes:KEY" and "aes:KEY" (unversioned) name the scheme,
** "V:sip:KEY" and "V:KEY" the first one; anything else is refused. */
static void test_key_text(void **state) {
  frond_order_keys *k;
  frond_error err = {0, ""};
  static const char *const bad[] = {"1:des:" KEY0, "1:AES:" KEY0,
                                    "1:aes:aes:" KEY0, "1:aes:", "aes"};
  (void)state;
  k = keys_of("aes:" KEY0 "\n1:" KEY1 "\n2:sip:" KEY2 "\n3:aes:" KEY1);
  assert_int_equal(k->scheme[0], FROND__SCHEME_AES);
  assert_int_equal(k->scheme[frond__key_slot('1')], FROND__SCHEME_SIP);
  assert_int_equal(k->scheme[frond__key_slot('2')], FROND__SCHEME_SIP);
  assert_int_equal(k->scheme[frond__key_slot('3')], FROND__SCHEME_AES);
  frond_order_keys_free(k);
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++)
    assert_int_equal(frond_order_keys_parse(bad[i], strlen(bad[i]), &k, &err),
                     FROND_EKEY_INVALID);
}

/* Version 1 stays sip, version 2 is aes: version 1's numbers are the same
** as with no aes version at all, a version-2 format decodes both, and the
** two schemes' numbers of one ID differ. */
static void test_rotation_keeps_old_numbers(void **state) {
  frond_order_keys *old = keys_of("1:" KEY0);
  frond_order_keys *both = keys_of("1:" KEY0 "\n2:aes:" KEY1);
  frond_order_keys *sip2 = keys_of("1:" KEY0 "\n2:" KEY1);
  frond_format *v1old = format_of("order:digits=12,check=damm,key=1", old);
  frond_format *v1 = format_of("order:digits=12,check=damm,key=1", both);
  frond_format *v2 = format_of("order:digits=12,check=damm,key=2", both);
  frond_format *v2sip = format_of("order:digits=12,check=damm,key=2", sip2);
  (void)state;
  for (int64_t id = 0; id < 5000; id += 7) {
    char a[32], b[32], c[32], d[32];
    frond_format_value v;
    assert_int_equal(frond_format_encode(v1old, id, 0, a, sizeof(a), NULL), 0);
    assert_int_equal(frond_format_encode(v1, id, 0, b, sizeof(b), NULL), 0);
    assert_string_equal(a, b);
    assert_int_equal(frond_format_encode(v2, id, 0, c, sizeof(c), NULL), 0);
    assert_int_equal(frond_format_encode(v2sip, id, 0, d, sizeof(d), NULL), 0);
    assert_string_not_equal(c, d);
    assert_int_equal(frond_format_decode(v2, a, strlen(a), &v, NULL), 0);
    assert_int_equal(v.id, id);
    assert_int_equal(v.key_version, '1');
    assert_int_equal(frond_format_decode(v2, c, strlen(c), &v, NULL), 0);
    assert_int_equal(v.id, id);
    assert_int_equal(v.key_version, '2');
  }
  /* The fingerprint names the scheme: a sip and an aes process sharing
  ** version 2's key are told apart; version 1's is as before. */
  assert_string_not_equal(v2->fingerprint, v2sip->fingerprint);
  assert_string_equal(v1->fingerprint, v1old->fingerprint);
  frond_format_free(v1old);
  frond_format_free(v1);
  frond_format_free(v2);
  frond_format_free(v2sip);
  frond_order_keys_free(old);
  frond_order_keys_free(both);
  frond_order_keys_free(sip2);
}

/* Seq formats permute with sip keys only: an aes version is refused for
** issuing, and a number carrying an aes version does not decode. */
static void test_seq_refuses_aes(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0 "\n2:" KEY1);
  frond_format *f;
  frond_format_value v;
  frond_error err = {0, ""};
  (void)state;
  assert_int_equal(
      frond_format_create(&f, "seq:tag=t,digits=8,key=1", k, NULL, NULL, &err),
      FROND_EKEY_INVALID);
  assert_non_null(strstr(err.message, "aes"));
  f = format_of("seq:tag=t,digits=8,key=2", k);
  assert_int_equal(frond_format_decode(f, "20260101112345678", 17, &v, &err),
                   FROND_EID_INVALID);
  assert_non_null(strstr(err.message, "aes"));
  frond_format_free(f);
  frond_order_keys_free(k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fips197),
      cmocka_unit_test(test_pinned_vectors),
      cmocka_unit_test(test_bijection),
      cmocka_unit_test(test_batches_equal_single),
      cmocka_unit_test(test_rounds_match_reference),
      cmocka_unit_test(test_kernels_at_edges),
      cmocka_unit_test(test_digit_writers_agree),
      cmocka_unit_test(test_key_text),
      cmocka_unit_test(test_rotation_keeps_old_numbers),
      cmocka_unit_test(test_seq_refuses_aes),
  };
  return frond_run_tests(tests, NULL, NULL);
}
