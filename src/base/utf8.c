/* SPDX-License-Identifier: Apache-2.0 */
/*
** utf8.c -- UTF-8 decoding (see utf8.h).
*/
#include "base/utf8.h"

size_t frond__utf8_len(const unsigned char *s, size_t n, uint32_t *cp) {
  size_t len, i;
  uint32_t c = s[0], min;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if ((c & 0xe0) == 0xc0)
    len = 2, c &= 0x1f, min = 0x80;
  else if ((c & 0xf0) == 0xe0)
    len = 3, c &= 0x0f, min = 0x800;
  else if ((c & 0xf8) == 0xf0)
    len = 4, c &= 0x07, min = 0x10000;
  else
    return 0;
  if (len > n)
    return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    c = c << 6 | (s[i] & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
    return 0;
  *cp = c;
  return len;
}
