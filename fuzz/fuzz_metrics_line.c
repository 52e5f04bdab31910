/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_metrics_line.c -- libFuzzer harness for the Prometheus text line
** reader (`frond tag restore` reading scraped metrics).
**
** The input is one line of a scrape, as a cut download, a hand edit or
** another exporter may leave it. Invariants beyond "no crash": reading is
** a pure function; every name and label value is NUL-terminated inside
** its field; a sample line reads the same with a newline after it.
*/
#include "server/metrics_line.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size copy so that ASan sees any over-read. */
  char *copy = malloc(size ? size : 1), *nl = malloc(size + 1);
  frond__metrics_line a, b;
  int r, i;
  if (copy == NULL || nl == NULL) {
    free(copy);
    free(nl);
    return 0;
  }
  memcpy(copy, data, size);
  r = frond__metrics_line_parse(copy, size, &a);
  check(frond__metrics_line_parse(copy, size, &b) == r);
  check(r >= -1 && r <= 1);
  if (r == 1) {
    check(memcmp(&a, &b, sizeof a) == 0);
    check(memchr(a.name, '\0', sizeof a.name) != NULL && a.name[0] != '\0');
    check(a.nlabels >= 0 && a.nlabels <= FROND__METRICS_LABELS);
    for (i = 0; i < a.nlabels; i++) {
      check(memchr(a.labels[i].name, '\0', sizeof a.labels[i].name) != NULL);
      check(memchr(a.labels[i].value, '\0', sizeof a.labels[i].value) != NULL);
      check(a.labels[i].cut || i > 0 ||
            frond__metrics_label_get(&a, a.labels[i].name) ==
                a.labels[i].value);
    }
    memcpy(nl, copy, size);
    nl[size] = '\n';
    check(frond__metrics_line_parse(nl, size + 1, &b) == 1 &&
          b.is_int == a.is_int && (!a.is_int || b.ivalue == a.ivalue));
  }
  free(copy);
  free(nl);
  return 0;
}
