/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_tzif.c -- libFuzzer harness for the TZif reader (time zone files
** and their POSIX TZ footer).
**
** Any file accepted must answer every lookup with an offset within a day
** and a change instant after the instant asked about, and its windows must
** tile time: the offset holds until the change and the lookup at the
** change starts the next window.
*/
#include "core/formats.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int64_t probes[] = {
      INT64_MIN,           -INT64_C(4000000000), -1,           0, 1700000000,
      INT64_C(4102444800), INT64_C(7258118400),  INT64_MAX - 1};
  frond__tz *tz;
  frond_error err;
  if (frond__tz_parse(data, size, &tz, &err) != 0) {
    if (err.code == 0 || err.message[0] == '\0')
      abort(); /* every refusal explains itself */
    return 0;
  }
  for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
    int64_t t = probes[i], until;
    for (int k = 0; k < 64; k++) {
      int32_t off = frond__tz_offset(tz, t, &until);
      if (off < -89999 || off > 93599 || until <= t)
        abort();
      if (until == INT64_MAX)
        break;
      if (frond__tz_offset(tz, until - 1, NULL) != off)
        abort();
      t = until;
    }
  }
  frond__tz_free(tz);
  return 0;
}
