/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_etcd_reply.c -- libFuzzer harness for the etcd coordinator's reply
** parser (coord_etcd_json.c): the v3 JSON gateway's answers to range,
** txn, lease grant and keepalive, authenticate, and its error replies.
**
** Whatever the bytes, a reply is read whole or refused, never half read:
**   - refused: nothing is left allocated, no key kept;
**   - read: every key and value is NUL-terminated text within its
**     buffer, a txn response's index is below the number of responses,
**     an error reply carries a message and a code below 100;
**   - base64 of the input decodes, through the parser, to the input
**     (when it is text and short enough to be a value).
*/
#include "coord/coord_etcd.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reply(const frond__etcd_reply *r) {
  for (size_t i = 0; i < r->nkvs; i++) {
    const frond__etcd_kv *kv = &r->kvs[i];
    if (strnlen(kv->key, sizeof(kv->key)) >= sizeof(kv->key) ||
        strnlen(kv->value, sizeof(kv->value)) >= sizeof(kv->value) ||
        kv->resp < -1 || kv->resp >= r->nresp)
      abort();
  }
  if (r->is_error && (!r->error[0] || r->code < 0 || r->code >= 100))
    abort();
}

/* A value of these bytes, base64'd into a range reply, reads back. */
static void round_trip(const uint8_t *data, size_t size) {
  static char b64[2 * FROND__ETCD_VAL_MAX], body[3 * FROND__ETCD_VAL_MAX];
  frond__etcd_reply r;
  if (size >= FROND__ETCD_VAL_MAX || memchr(data, 0, size))
    return;
  if (frond__etcd_b64((const char *)data, size, b64, sizeof(b64)) != 0)
    abort();
  snprintf(body, sizeof(body),
           "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"eA==\","
           "\"value\":\"%s\",\"mod_revision\":\"7\"}],\"count\":\"1\"}",
           b64);
  if (frond__etcd_reply_parse(body, strlen(body), &r) != 0)
    abort();
  if (r.nkvs != 1 || r.revision != 7 || r.count != 1 ||
      strlen(r.kvs[0].value) != size || memcmp(r.kvs[0].value, data, size))
    abort();
  frond__etcd_reply_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  frond__etcd_reply r;
  if (frond__etcd_reply_parse((const char *)data, size, &r) == 0) {
    check_reply(&r);
    frond__etcd_reply_free(&r);
  } else if (r.kvs != NULL || r.nkvs != 0) {
    abort();
  }
  round_trip(data, size);
  return 0;
}
