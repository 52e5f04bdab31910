/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_coord_record.c -- libFuzzer harness for the entries of the store's
** log of the fleet's coordinators (coord_record.c): whatever the bytes,
** an entry is read whole or refused, never half read. An accepted entry
** has a 32-hex identity, lo <= hi, a scope without spaces and a URI, and
** written again reads back the same entry (the identity, the numbers and
** the scope exactly; the URI cut to the writer's bound).
*/
#include "coord/coord.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char in[512], out[300];
  frond__coord_rec r, back;
  size_t i;
  if (size >= sizeof(in))
    return 0;
  memcpy(in, data, size);
  in[size] = '\0';
  if (frond__coord_rec_parse(in, &r) != 0)
    return 0;
  if (strlen(r.id) != FROND__COORD_ID_LEN || r.lo > r.hi || !r.scope[0] ||
      strchr(r.scope, ' ') || !r.uri[0])
    abort();
  for (i = 0; i < FROND__COORD_ID_LEN; i++)
    if (!strchr("0123456789abcdef", r.id[i]))
      abort();
  if (frond__coord_rec_format(&r, out, sizeof(out)) != 0)
    return 0; /* longer than a fact holds: never written */
  if (frond__coord_rec_parse(out, &back) != 0 || back.set != r.set ||
      strcmp(back.id, r.id) != 0 || back.lo != r.lo || back.hi != r.hi ||
      back.floor_ms != r.floor_ms || strcmp(back.scope, r.scope) != 0 ||
      strncmp(back.uri, r.uri, strlen(back.uri)) != 0)
    abort();
  return 0;
}
