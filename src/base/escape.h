/* SPDX-License-Identifier: Apache-2.0 */
/*
** escape.h -- text made safe inside a JSON string (RFC 8259).
**
** The one escaper of the tree: the server's answers, the log's JSON lines
** and the command's --json output all use it, so that one string always
** comes out the same way, and always as valid JSON whatever bytes a
** backend's message or a tag's description holds.
*/
#ifndef FROND_BASE_ESCAPE_H
#define FROND_BASE_ESCAPE_H

#include <stddef.h>

/*
** Write s[0..len) as the inside of a JSON string (no quotes) into
** dst[0..cap) and NUL-terminate it (when cap > 0):
**   "  \        as \" and \\
**   \b \f \n \r \t as those two-character escapes
**   other bytes below 0x20, and 0x7f (DEL), as \u00XX
**   valid UTF-8 as it is; each byte of invalid UTF-8 (a bad lead or
**   continuation byte, a truncated, overlong or surrogate sequence, a
**   code point above U+10FFFF) as U+FFFD, so the output is valid UTF-8
** Stops before a character whose escape would not fit whole with the NUL.
** Returns the bytes written (without the NUL). Output is at most 6 bytes
** per input byte. Pure function.
*/
size_t frond__json_escape(const char *s, size_t len, char *dst, size_t cap);

#endif /* FROND_BASE_ESCAPE_H */
