/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_high_water.c -- libFuzzer harness for the high-water file parser and
** for where a restart starts after the record.
**
** Whatever the bytes, the parser accepts a record or refuses with
** HIGHWATER_CORRUPT: a file is never half understood. An accepted record
** formats to a file that parses to the same record, and to the very same
** bytes when it was read in that form (not the one line of earlier
** versions) with the writer's keys only. For an accepted record, the start a generator of each preset
** layout would take after it (frond__hw_first_after) is the least value
** whose ID is above the record's last possible ID, or a refusal with a
** code that says why.
**
** Random bytes almost never carry a valid check, so each input is also
** tried sealed with its correct check, in both forms: mutations then
** reach the fields and the start computation.
*/
#include "core/high_water.h"
#include "base/base.h"
#include "base/record.h"

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

static int same(const frond__hw_record *a, const frond__hw_record *b) {
  return a->node == b->node && a->time_ms == b->time_ms && a->seq == b->seq &&
         a->clean == b->clean && strcmp(a->layout, b->layout) == 0;
}

/* The number of keys of a record file in the writer's form, -1 when buf is
** not one. */
static long keys_of(const char *buf, size_t size) {
  static frond__record r;
  const char *why;
  if (size == 0 || buf[0] != '#' ||
      frond__record_parse(&r, "high-water", NULL, buf, size, &why) != 0)
    return -1;
  return (long)r.n;
}

/* Parse buf; an accepted record must format to a file that reads back the
** same, byte for byte when buf was in that form with the writer's keys and
** no others (readers skip keys a later version may add). */
static void check(const char *buf, size_t size) {
  frond__hw_record rec, back;
  char line[FROND__RECORD_MAX + 1];
  int n, rc = frond__hw_parse(buf, size, &rec, NULL);
  if (rc == 0) {
    n = frond__hw_format(&rec, line, sizeof(line));
    if (n < 0 || (size_t)n >= sizeof(line) ||
        frond__hw_parse(line, (size_t)n, &back, NULL) != 0 ||
        !same(&rec, &back))
      abort();
    if (keys_of(buf, size) >= 0 &&
        keys_of(buf, size) == keys_of(line, (size_t)n) &&
        ((size_t)n != size || memcmp(line, buf, size) != 0))
      abort();
    for (size_t i = 0; i < frond_layout_preset_count(); i++)
      check_start(&rec, frond_layout_preset(i));
  } else if (rc != FROND_EHIGHWATER_CORRUPT) {
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 32);
  size_t body;
  int n;
  if (buf == NULL)
    return 0;
  memcpy(buf, data, size);
  check(buf, size);
  /* The input as the one line of earlier versions: up to its first
  ** newline, sealed. */
  {
    const char *nl = memchr(data, '\n', size);
    body = nl ? (size_t)(nl - (const char *)data) : size;
    n = snprintf(buf + body, 32, " check=%016" PRIx64 "\n",
                 frond__fnv1a64(data, body));
    check(buf, body + (size_t)n);
  }
  /* The input as the lines of a record file, sealed with its end line. */
  memcpy(buf, data, size);
  body = size;
  if (body == 0 || buf[body - 1] != '\n')
    buf[body++] = '\n';
  n = snprintf(buf + body, 32, "end=%016" PRIx64 "\n",
               frond__fnv1a64(buf, body));
  check(buf, body + (size_t)n);
  free(buf);
  return 0;
}
