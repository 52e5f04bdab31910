/*
** fuzz_highwater.c -- libFuzzer harness for the high-water file parser.
**
** Whatever the bytes, the parser accepts a record that formats back to the
** same bytes, or refuses with HIGHWATER_CORRUPT: a file is never half
** understood.
*/
#include "os/highwater.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  frond__hw_record rec;
  char *buf = malloc(size ? size : 1);
  char line[1024];
  int rc, n;
  if (buf == NULL)
    return 0;
  memcpy(buf, data, size);
  rc = frond__hw_parse(buf, size, &rec, NULL);
  if (rc == 0) {
    n = frond__hw_format(&rec, line, sizeof(line));
    if (n < 0 || (size_t)n != size || memcmp(line, buf, size) != 0)
      abort();
  } else if (rc != FROND_EHIGHWATER_CORRUPT) {
    abort();
  }
  free(buf);
  return 0;
}
