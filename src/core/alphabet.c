/* SPDX-License-Identifier: Apache-2.0 */
/*
** alphabet.c -- the symbols IDs are written with, and check characters.
**
** Crockford's base32 leaves out I, L, O and U so that a number read aloud
** or copied by hand cannot be misread; decoding accepts lower case and
** reads I and L as 1, O as 0. Base62 uses 0-9A-Za-z in ASCII order, so a
** fixed-length string sorts like the number it holds.
**
** Check characters:
**   - Damm (decimal): damm.c; detects every single-digit error and
**     every transposition of adjacent digits.
**   - Luhn (decimal): offered for systems that already expect it (payment
**     cards), with its known blind spot (09 <-> 90).
**   - Crockford's mod 37 (base32): the number modulo the prime 37, written
**     with the 32 symbols plus "*~$=U". A single substitution changes the
**     value by d * 32^k and an adjacent transposition by 31 * d * 32^k,
**     neither divisible by 37 for |d| < 32, so both are always detected.
*/
#include "core/formats.h"

const char frond__crockford[38] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U";
const char frond__base62[63] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

int frond__crockford_value(unsigned char c) {
  if (c >= 'a' && c <= 'z')
    c = (unsigned char)(c - 'a' + 'A');
  if (c >= '0' && c <= '9')
    return c - '0';
  switch (c) {
  case 'O':
    return 0;
  case 'I':
  case 'L':
    return 1;
  case 'U':
    return -1;
  default:
    break;
  }
  for (int i = 10; i < 32; i++)
    if (frond__crockford[i] == (char)c)
      return i;
  return -1;
}

int frond__crockford_check_value(unsigned char c) {
  int v = frond__crockford_value(c);
  if (v >= 0)
    return v;
  switch (c) {
  case '*':
    return 32;
  case '~':
    return 33;
  case '$':
    return 34;
  case '=':
    return 35;
  case 'U':
  case 'u':
    return 36;
  default:
    return -1;
  }
}

int frond__base62_value(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'Z')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 36;
  return -1;
}

int frond__luhn(const uint8_t *v, size_t n) {
  /* Double every second digit from the right, counting the check digit
  ** that will follow as the first. */
  unsigned sum = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned d = v[n - 1 - i];
    if (i % 2 == 0) {
      d *= 2;
      if (d > 9)
        d -= 9;
    }
    sum += d;
  }
  return (int)((10 - sum % 10) % 10);
}

int frond__mod37(const uint8_t *v, size_t n) {
  unsigned r = 0;
  for (size_t i = 0; i < n; i++)
    r = (r * 32 + v[i]) % 37;
  return (int)r;
}

void frond__put_radix(uint64_t v, unsigned radix, const char *alphabet,
                      unsigned width, char *out) {
  /* Constant divisors: the compiler turns them into multiplications. */
  switch (radix) {
  case 62:
    for (unsigned i = width; i > 0; i--, v /= 62)
      out[i - 1] = alphabet[v % 62];
    return;
  case 32:
    for (unsigned i = width; i > 0; i--, v >>= 5)
      out[i - 1] = alphabet[v & 31];
    return;
  case 10:
    for (unsigned i = width; i > 0; i--, v /= 10)
      out[i - 1] = alphabet[v % 10];
    return;
  default:
    for (unsigned i = width; i > 0; i--, v /= radix)
      out[i - 1] = alphabet[v % radix];
  }
}
