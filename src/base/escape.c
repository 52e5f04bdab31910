/* SPDX-License-Identifier: Apache-2.0 */
/*
** escape.c -- JSON string escaping (see escape.h).
*/
#include "base/escape.h"
#include "base/utf8.h"

#include <stdint.h>
#include <string.h>

/* A control character (below 0x20, or DEL) escaped into esc: RFC 8259's
** two-character escape where it has one, else \u00XX. Returns the length. */
static size_t control(uint32_t c, char *esc) {
  static const char hex[] = "0123456789abcdef";
  char brief = 0;
  switch (c) {
  case '\b':
    brief = 'b';
    break;
  case '\f':
    brief = 'f';
    break;
  case '\n':
    brief = 'n';
    break;
  case '\r':
    brief = 'r';
    break;
  case '\t':
    brief = 't';
    break;
  }
  esc[0] = '\\';
  if (brief) {
    esc[1] = brief;
    return 2;
  }
  memcpy(esc + 1, "u00", 3);
  esc[4] = hex[c >> 4];
  esc[5] = hex[c & 15];
  return 6;
}

size_t frond__json_escape(const char *s, size_t len, char *dst, size_t cap) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, n = 0;
  if (cap == 0)
    return 0;
  while (i < len) {
    char esc[6];
    const char *out = esc;
    size_t k, olen;
    uint32_t cp;
    k = frond__utf8_len(p + i, len - i, &cp);
    if (k == 0) {
      out = "\xef\xbf\xbd", olen = 3, k = 1;
    } else if (cp == '"' || cp == '\\') {
      esc[0] = '\\', esc[1] = (char)cp, olen = 2;
    } else if (cp < 0x20 || cp == 0x7f) {
      olen = control(cp, esc);
    } else {
      out = s + i, olen = k;
    }
    if (n + olen >= cap)
      break;
    memcpy(dst + n, out, olen);
    n += olen;
    i += k;
  }
  dst[n] = '\0';
  return n;
}
