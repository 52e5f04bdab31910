/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_format_spec.c -- libFuzzer harness for format specs.
**
** Any spec accepted must print back (frond_format_spec) to a spec that
** builds the same format (with the same key fingerprint and scope), and,
** for kinds made from 64-bit IDs, encode and decode IDs losslessly (with
** shard=, through the layout and back); every refusal explains itself.
*/
#include "core/formats.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static frond_order_keys *keys(void) {
  static frond_order_keys *k;
  if (k == NULL) {
    /* An unversioned key and every version 0-9, A-Z. */
    char text[37 * 70], *p = text;
    const char *v = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    p += sprintf(p, "%064x\n", 7);
    for (size_t i = 0; i < strlen(v); i++)
      p += sprintf(p, "%c:%064zx\n", v[i], i + 1);
    if (frond_order_keys_parse(text, strlen(text), &k, NULL) != 0)
      abort();
  }
  return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char spec[600], again[600], again2[600], buf[128];
  frond_format *f, *g;
  frond_format_value v;
  frond_error err;
  if (size >= 520)
    return 0;
  memcpy(spec, data, size);
  spec[size] = '\0';
  if (frond_format_create(&f, spec, keys(), NULL, NULL, &err) != 0) {
    if (err.code == 0 || err.message[0] == '\0')
      abort();
    return 0;
  }
  frond_format_spec(f, again, sizeof(again));
  if (frond_format_create(&g, again, keys(), NULL, NULL, &err) != 0)
    abort();
  frond_format_spec(g, again2, sizeof(again2));
  if (strcmp(again, again2) != 0 ||
      frond_format_kind(f) != frond_format_kind(g) ||
      frond_format_length(f) != frond_format_length(g) ||
      frond_format_node_scoped(f) != frond_format_node_scoped(g))
    abort();
  /* The spec printed back permutes as the first: one key fingerprint. */
  {
    char fa[32], fb[32];
    frond_format_fingerprint(f, fa, sizeof(fa));
    frond_format_fingerprint(g, fb, sizeof(fb));
    if (strcmp(fa, fb) != 0)
      abort();
  }
  if (frond_format_shard_bits(f) > 0) {
    /* shard=: the value a key's shard and an ID make reads back to both. */
    int64_t ids[] = {0, 1, frond_format_max_id(f) / 3, frond_format_max_id(f)};
    uint64_t shard, back;
    if (frond_format_shard_of(f, spec, strlen(spec), &shard, &err) != 0 ||
        shard >> frond_format_shard_bits(f) != 0)
      abort();
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
      int64_t w;
      if (frond__layout_apply(f, shard, ids[i], &w, &err) != 0 || w < 0 ||
          frond__layout_invert(f, w, &back) != ids[i] || back != shard)
        abort();
    }
    if (frond__layout_apply(f, shard, frond_format_max_id(f) + 1, &ids[0],
                            &err) != FROND_EID_TOO_LARGE)
      abort();
  } else if (frond_format_max_id(f) > 0 &&
             frond_format_kind(f) != FROND_FORMAT_SEQ) {
    int64_t ids[] = {0, 1, frond_format_max_id(f) / 3, frond_format_max_id(f)};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
      if (frond_format_encode(f, ids[i], 1700000000000, buf, sizeof(buf),
                              &err) != 0 ||
          (frond_format_kind(f) != FROND_FORMAT_DECIMAL &&
           strlen(buf) != frond_format_length(f)) ||
          frond_format_decode(f, buf, strlen(buf), &v, &err) != 0 ||
          !v.has_id || v.id != ids[i])
        abort();
    }
  }
  frond_format_free(f);
  frond_format_free(g);
  return 0;
}
