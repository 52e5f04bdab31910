/*
** fuzz_highwater.c -- libFuzzer harness for the high-water file parser and
** for where a restart starts after the record.
**
** Whatever the bytes, the parser accepts a record that formats back to the
** same bytes, or refuses with HIGHWATER_CORRUPT: a file is never half
** understood. For an accepted record, the start a generator of each preset
** layout would take after it (frond__hw_first_after) is the least value
** whose ID is above the record's last possible ID, or a refusal with a
** code that says why.
**
** Random bytes almost never carry a valid check, so each input is also
** tried as a record body sealed with its correct check: mutations then
** reach the fields and the start computation.
*/
#include "core/high_water.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The ID of packed value v (unit << seq_bits | seq) for node under l, or -1
** when its unit does not fit. */
static int64_t id_of(const frond_layout *l, uint64_t node, uint64_t v) {
  frond_fields f;
  int64_t id;
  memset(&f, 0, sizeof(f));
  f.time = (int64_t)(v >> l->seq_bits);
  f.node = node;
  f.sequence = v & ((UINT64_C(1) << l->seq_bits) - 1);
  return frond_compose(l, &f, &id, NULL) == 0 ? id : -1;
}

static void check_start(const frond__hw_record *rec, const frond_layout *l) {
  uint64_t node = rec->node & frond_layout_max_node(l), start;
  int64_t last, id;
  int rc = frond__hw_first_after(rec, l, node, &start, &last, NULL);
  if (rc != 0) {
    if (rc != FROND_ELAYOUT_INVALID && rc != FROND_EHIGHWATER_CORRUPT)
      abort();
    return;
  }
  if (last < 0)
    abort();
  id = id_of(l, node, start);
  if (id >= 0 && id <= last)
    abort(); /* not above the old IDs */
  if (start > 0 && id_of(l, node, start - 1) > last)
    abort(); /* not the least such value */
}

/* Parse buf; an accepted record must format back to the same bytes. */
static void check(const char *buf, size_t size) {
  frond__hw_record rec;
  char line[1024];
  int n, rc = frond__hw_parse(buf, size, &rec, NULL);
  if (rc == 0) {
    n = frond__hw_format(&rec, line, sizeof(line));
    if (n < 0 || (size_t)n != size || memcmp(line, buf, size) != 0)
      abort();
    for (size_t i = 0; i < frond_layout_preset_count(); i++)
      check_start(&rec, frond_layout_preset(i));
  } else if (rc != FROND_EHIGHWATER_CORRUPT) {
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 32);
  int n;
  if (buf == NULL)
    return 0;
  memcpy(buf, data, size);
  check(buf, size);
  /* The input as a body: up to its first newline, sealed. */
  {
    const char *nl = memchr(data, '\n', size);
    size_t body = nl ? (size_t)(nl - (const char *)data) : size;
    n = snprintf(buf + body, 32, " check=%016" PRIx64 "\n",
                 frond__fnv1a64(data, body));
    check(buf, body + (size_t)n);
  }
  free(buf);
  return 0;
}
