/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_forward.c -- libFuzzer harness for the parser of an ordered tag's
** forwarded answer (server/forward.c): the owner's text, one ID a line.
**
** The first byte is the count asked (1 to 16), the rest the answer.
** Whatever the bytes, the answer is read whole or refused:
**   - read: exactly the count, each a non-negative integer, strictly
**     increasing, and written back one a line they read back the same;
**   - refused: STORE, with a message;
**   - the same input always gives the same result;
** and read as an error answer, it names a library code or none.
*/
#include "server/server.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int64_t a[16], b[16];
  frond_error e = {0, ""}, e2 = {0, ""};
  char text[16 * 21 + 1];
  size_t n, i, len = 0;
  char *body;
  int rc;
  if (size < 1)
    return 0;
  n = (size_t)(data[0] % 16) + 1;
  /* An exact-size copy so that ASan sees any over-read. */
  if ((body = malloc(size - 1 ? size - 1 : 1)) == NULL)
    return 0;
  memcpy(body, data + 1, size - 1);
  rc = frond__forward_error(body, size - 1);
  check(rc <= 0 && rc >= -1000 && frond__forward_error(body, size - 1) == rc &&
        (rc == 0 || frond_err_name(rc)[0] != '\0'));
  rc = frond__forward_parse(body, size - 1, n, a, &e);
  check(frond__forward_parse(body, size - 1, n, b, &e2) == rc);
  free(body);
  if (rc != 0) {
    check(rc == FROND_ESTORE && e.message[0] != '\0');
    return 0;
  }
  for (i = 0; i < n; i++) {
    check(a[i] >= 0 && a[i] == b[i] && (i == 0 || a[i] > a[i - 1]));
    len += (size_t)snprintf(text + len, sizeof(text) - len, "%lld\n",
                            (long long)a[i]);
  }
  check(frond__forward_parse(text, len, n, b, &e2) == 0);
  check(memcmp(a, b, n * sizeof(a[0])) == 0);
  return 0;
}
