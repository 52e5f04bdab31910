/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_audit_line.c -- libFuzzer harness for the audit log's line reader
** (`frond audit find`).
**
** The input is one line of a log, as a torn write, a hand edit or a
** later version may leave it. Invariants beyond "no crash": reading is a
** pure function; every string read is NUL-terminated inside its field;
** a line read whole reads the same with a newline after it and is refused
** once cut short of its closing brace.
*/
#include "server/audit_line.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

static void terminated(const char *s, size_t cap) {
  check(memchr(s, '\0', cap) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size copy so that ASan sees any over-read. */
  char *copy = malloc(size ? size : 1), *nl = malloc(size + 1);
  frond__audit_line a, b;
  int r;
  size_t end;
  if (copy == NULL || nl == NULL) {
    free(copy);
    free(nl);
    return 0;
  }
  memcpy(copy, data, size);
  r = frond__audit_line_parse(copy, size, &a);
  check(frond__audit_line_parse(copy, size, &b) == r);
  check(r == 0 || r == -1);
  if (r == 0) {
    check(memcmp(&a, &b, sizeof a) == 0);
    terminated(a.time, sizeof a.time);
    terminated(a.client, sizeof a.client);
    terminated(a.remote, sizeof a.remote);
    terminated(a.tag, sizeof a.tag);
    terminated(a.layout, sizeof a.layout);
    terminated(a.first_string, sizeof a.first_string);
    memcpy(nl, copy, size);
    nl[size] = '\n';
    check(frond__audit_line_parse(nl, size + 1, &b) == 0 && a.have == b.have &&
          a.first == b.first && a.last == b.last);
    /* Cut before its closing brace: torn. */
    end = size;
    while (end > 0 && copy[end - 1] != '}')
      end--;
    check(end > 0);
    check(frond__audit_line_parse(copy, end - 1, &b) == -1);
  }
  free(copy);
  free(nl);
  return 0;
}
