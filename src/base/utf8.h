/* SPDX-License-Identifier: Apache-2.0 */
/*
** utf8.h -- UTF-8 decoding for the pieces that check or escape text.
*/
#ifndef FROND_BASE_UTF8_H
#define FROND_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the valid UTF-8 sequence at s[0..n), with its code
** point in *cp; 0 when the bytes are not valid UTF-8 (a bad lead or
** continuation byte, a truncated, overlong or surrogate sequence, or a
** code point above U+10FFFF). n must be at least 1. Pure function. */
size_t frond__utf8_len(const unsigned char *s, size_t n, uint32_t *cp);

#endif /* FROND_BASE_UTF8_H */
