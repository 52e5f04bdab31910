/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_format_decode.c -- libFuzzer harness for reading ID strings: by
** shape (frond_format_decode_any) and by each kind of format.
**
** The first byte picks a format, the rest is the string. Whatever decodes
** must encode back to a string that decodes to the same value; nothing
** may read outside the string.
*/
#include "core/formats.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const specs[] = {
    "order:digits=12,check=damm,key=1,prefix=ORD-%Y%m%d-",
    "order:base32=13,check=mod37,key=A,prefix=%y%j",
    "order:digits=19,check=luhn",
    "seq:tag=orders,period=day,digits=6,check=damm,key=2,tz=Asia/Tokyo",
    "seq:tag=orders,period=month,base32=5,check=mod37,prefix=X",
    "base62",
    "base32",
    "decimal",
    "uuid7",
    "ulid",
    "objectid",
    "decimal:reverse=yes",
    "base62:reverse=yes",
    "decimal:shard=6,key=1",
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static frond_format *formats[NSPECS];

static void setup(void) {
  char text[400];
  frond_order_keys *k;
  snprintf(text, sizeof(text), "%064x\n1:%064x\n2:%064x\nA:%064x\n", 1, 2, 3,
           4);
  if (frond_order_keys_parse(text, strlen(text), &k, NULL) != 0)
    abort();
  for (size_t i = 0; i < NSPECS; i++)
    if (frond_format_create(&formats[i], specs[i], k, NULL, NULL, NULL) != 0)
      abort();
  frond_order_keys_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  frond_format_value v, w;
  frond_error err;
  const frond_format *f;
  char buf[128];
  if (formats[0] == NULL)
    setup();
  if (size == 0)
    return 0;
  if (data[0] >= NSPECS) {
    if (frond_format_decode_any((const char *)data + 1, size - 1, &v, &err) !=
        0) {
      if (err.message[0] == '\0')
        abort();
    }
    return 0;
  }
  f = formats[data[0]];
  if (frond_format_decode(f, (const char *)data + 1, size - 1, &v, &err) != 0) {
    if (err.message[0] == '\0')
      abort();
    return 0;
  }
  if (v.kind != frond_format_kind(f))
    abort();
  /* Encode what was read and read it again. */
  switch (v.kind) {
  case FROND_FORMAT_ORDER:
  case FROND_FORMAT_BASE62:
  case FROND_FORMAT_BASE32:
  case FROND_FORMAT_DECIMAL:
    if (frond_format_shard_bits(f) > 0) {
      /* The ID and the shard read make the value read. */
      uint64_t shard;
      int64_t again;
      if (frond_format_shard_in(f, (const char *)data + 1, size - 1, &shard,
                                &err) != 0 ||
          frond__layout_apply(f, shard, v.id, &again, &err) != 0 ||
          frond__layout_invert(f, again, &shard) != v.id)
        abort();
      break;
    }
    if (frond_format_encode(f, v.id, v.has_time ? v.unix_ms : 0, buf,
                            sizeof(buf), &err) != 0 ||
        frond_format_decode(f, buf, strlen(buf), &w, &err) != 0 || w.id != v.id)
      abort();
    break;
  case FROND_FORMAT_ULID:
    frond_ulid_format(v.bytes, buf);
    if (frond_format_decode(f, buf, strlen(buf), &w, &err) != 0 ||
        memcmp(w.bytes, v.bytes, 16) != 0)
      abort();
    break;
  case FROND_FORMAT_OBJECTID:
    frond_objectid_format(v.bytes, buf);
    if (frond_format_decode(f, buf, strlen(buf), &w, &err) != 0 ||
        memcmp(w.bytes, v.bytes, 12) != 0)
      abort();
    break;
  default:
    break;
  }
  return 0;
}
