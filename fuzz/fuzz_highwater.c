/*
** fuzz_highwater.c -- libFuzzer harness for the high-water file parser.
**
** Whatever the bytes, the parser accepts a record that formats back to the
** same bytes, or refuses with HIGHWATER_CORRUPT: a file is never half
** understood.
**
** Random bytes almost never carry a valid check, so each input is also
** tried as a record body sealed with its correct check: mutations then
** reach the fields.
*/
#include "os/highwater.h"
#include "core/internal.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parse buf; an accepted record must format back to the same bytes. */
static void check(const char *buf, size_t size) {
  frond__hw_record rec;
  char line[1024];
  int n, rc = frond__hw_parse(buf, size, &rec, NULL);
  if (rc == 0) {
    n = frond__hw_format(&rec, line, sizeof(line));
    if (n < 0 || (size_t)n != size || memcmp(line, buf, size) != 0)
      abort();
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
