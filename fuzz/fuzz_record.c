/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_record.c -- libFuzzer harness for checksummed record files and the
** two files built on them: the high-water file and the node cache.
**
** Whatever the bytes, the record parser accepts or refuses, never half
** reads: an accepted record holds only valid keys and values without
** control characters, finds each of its keys, and written again by the
** writer gives the very same bytes (or, read in the one-line form of
** earlier versions, a record that reads back the same). The high-water
** and node cache parsers accept exactly what the record parser accepts
** and they can read, and print back what they read.
**
** Random bytes almost never carry a valid checksum, so each input is also
** tried sealed with its correct end line: mutations then reach the lines.
*/
#include "base/base.h"
#include "base/record.h"
#include "coord/coord.h"
#include "core/high_water.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
  const char *kind, *legacy;
} kinds[] = {
    {"high-water", "frond-highwater 1"},
    {"node cache", NULL},
    {"k", "L"},
};

static void check_record(const char *kind, const char *legacy, const char *in,
                         size_t n) {
  frond__record r, w, back;
  const char *why = NULL;
  if (frond__record_parse(&r, kind, legacy, in, n, &why) != 0) {
    if (why == NULL)
      abort();
    return;
  }
  frond__record_init(&w, kind);
  for (size_t i = 0; i < r.n; i++) {
    const char *v = r.kv[i].value;
    if (strlen(r.kv[i].key) != r.kv[i].klen ||
        frond__record_get(&r, r.kv[i].key) != v)
      abort();
    for (const char *p = v; *p; p++)
      if ((unsigned char)*p < 0x20 || *p == 0x7f)
        abort();
    frond__record_put(&w, r.kv[i].key, v);
  }
  if (frond__record_finish(&w) < 0)
    abort();
  if (!r.legacy && (w.len != n || memcmp(w.text, in, n) != 0))
    abort();
  if (frond__record_parse(&back, kind, NULL, w.text, w.len, &why) != 0 ||
      back.n != r.n)
    abort();
  for (size_t i = 0; i < r.n; i++)
    if (strcmp(back.kv[i].key, r.kv[i].key) != 0 ||
        strcmp(back.kv[i].value, r.kv[i].value) != 0)
      abort();
}

static void check_files(const char *in, size_t n) {
  frond__hw_record hw;
  frond_coord_cache cc, cc2;
  frond__record r;
  const char *why;
  char text[FROND__RECORD_MAX + 1];
  int len;
  if (frond__hw_parse(in, n, &hw, NULL) == 0) {
    if (frond__record_parse(&r, "high-water", "frond-highwater 1", in, n,
                            &why) != 0)
      abort();
    len = frond__hw_format(&hw, text, sizeof(text));
    if (len < 0 || (size_t)len >= sizeof(text))
      abort();
  }
  if (frond__coord_cache_parse(in, n, &cc) == 0) {
    if (frond__record_parse(&r, "node cache", NULL, in, n, &why) != 0)
      abort();
    len = frond__coord_cache_format(&cc, text, sizeof(text));
    if (len < 0 || frond__coord_cache_parse(text, (size_t)len, &cc2) != 0 ||
        strcmp(cc.uri, cc2.uri) != 0 || strcmp(cc.owner, cc2.owner) != 0 ||
        cc.node != cc2.node || cc.fence_ms != cc2.fence_ms ||
        cc.reported_ms != cc2.reported_ms)
      abort();
  }
}

static void check(const char *in, size_t n) {
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    check_record(kinds[i].kind, kinds[i].legacy, in, n);
  check_files(in, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size copy so that ASan sees any over-read. */
  char *in = malloc(size ? size : 1), *sealed;
  size_t body;
  if (in == NULL)
    return 0;
  memcpy(in, data, size);
  check(in, size);
  free(in);
  if ((sealed = malloc(size + 32)) == NULL)
    return 0;
  memcpy(sealed, data, size);
  body = size;
  if (body == 0 || sealed[body - 1] != '\n')
    sealed[body++] = '\n';
  body += (size_t)snprintf(sealed + body, 32, "end=%016" PRIx64 "\n",
                           frond__fnv1a64(sealed, body));
  check(sealed, body);
  free(sealed);
  return 0;
}
