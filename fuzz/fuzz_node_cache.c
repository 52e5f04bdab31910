/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_node_cache.c -- libFuzzer harness for the node cache file, which a
** coordinator reads at start to learn its node ID while the coordinator
** is unreachable (coord_cache.c, over the checksummed record file).
**
** Whatever the bytes, a file is refused or parses to an entry that prints
** back to text which parses to the same entry: a cache written by one
** start is read the same by the next.
*/
#include "coord/coord.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  frond_coord_cache a, b;
  char text[2048];
  int len;
  if (frond__coord_cache_parse((const char *)data, size, &a) != 0)
    return 0;
  len = frond__coord_cache_format(&a, text, sizeof(text));
  if (len < 0 || frond__coord_cache_parse(text, (size_t)len, &b) != 0 ||
      strcmp(a.uri, b.uri) != 0 || strcmp(a.owner, b.owner) != 0 ||
      a.node != b.node || a.fence_ms != b.fence_ms ||
      a.reported_ms != b.reported_ms)
    abort();
  return 0;
}
