/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_layout.c -- libFuzzer harness for layout specs and decode.
**
** Any accepted spec must describe a valid layout, print back to a spec
** that parses to the same layout, and decode/compose any ID losslessly.
*/
#include "frond.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char spec[256], again[256];
  frond_layout l, m;
  frond_error err;
  frond_fields f;
  int64_t id, back;
  if (size >= sizeof(spec))
    return 0;
  memcpy(spec, data, size);
  spec[size] = '\0';
  if (frond_layout_parse(spec, &l, &err) != 0) {
    if (err.code == 0 || err.message[0] == '\0')
      abort(); /* every failure explains itself */
    return 0;
  }
  if (frond_layout_validate(&l, INT64_MAX, NULL) != 0)
    abort();
  frond_layout_format(&l, again, sizeof(again));
  if (frond_layout_parse(again, &m, NULL) != 0 || m.time_bits != l.time_bits ||
      m.node_bits != l.node_bits || m.seq_bits != l.seq_bits ||
      m.unit_ms != l.unit_ms || m.epoch_ms != l.epoch_ms ||
      m.dc_bits != l.dc_bits)
    abort();
  /* Decode a few IDs derived from the input and compose them back. */
  id = (int64_t)(size * UINT64_C(0x9e3779b97f4a7c15) >> 1);
  if (frond_layout_id_bits(&l) < 63) /* IDs of the layout stay below that */
    id &= (INT64_C(1) << frond_layout_id_bits(&l)) - 1;
  if (frond_decode(&l, id, &f, NULL) != 0 ||
      frond_compose(&l, &f, &back, NULL) != 0 || back != id)
    abort();
  (void)frond_layout_end_ms(&l);
  (void)frond_layout_ids_per_second(&l);
  return 0;
}
