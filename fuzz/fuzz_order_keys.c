/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_order_keys.c -- libFuzzer harness for key text (FROND_ORDER_KEY and
** key files).
**
** Accepted text holds at least one key, each version with a scheme Frond
** knows ("V:aes:KEY"); a refusal says why without quoting the text (it
** may hold key material).
*/
#include "core/formats.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  frond_order_keys *k;
  frond_error err;
  int any = 0;
  if (frond_order_keys_parse((const char *)data, size, &k, &err) != 0) {
    if (err.code == 0 || err.message[0] == '\0')
      abort();
    /* No run of 8 input bytes of a would-be key appears in the message. */
    for (size_t i = 0; size >= 16 && i + 16 <= size; i += 16) {
      char probe[17];
      memcpy(probe, data + i, 16);
      probe[16] = '\0';
      if (strlen(probe) == 16 && strstr(err.message, probe) != NULL &&
          strspn(probe, "0123456789abcdefABCDEF") == 16)
        abort();
    }
    return 0;
  }
  for (int i = 0; i < FROND__KEY_SLOTS; i++) {
    any |= k->present[i];
    /* A scheme is one Frond knows, and none without a key. */
    if (k->scheme[i] > FROND__SCHEME_AES || (!k->present[i] && k->scheme[i]))
      abort();
  }
  if (!any)
    abort();
  frond_order_keys_free(k);
  return 0;
}
