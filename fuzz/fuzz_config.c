/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_config.c -- libFuzzer harness for the server's config file parser
** and, through it, every type's value parser in the configuration table.
**
** The input is the text of a config file (format.<name> lines build their
** ID format to check the spec). Invariants beyond "no crash":
** parsing is a pure function of the text; a refusal is INVAL with a
** message naming the line; an accepted configuration, printed with
** --print-config's printer, reads back to a configuration that prints the
** same. Its coordinator resolves (frond__config_coord_uri) to a URI that
** names the configured node ID when one is set, or is refused with INVAL
** and a message.
*/
#include "server/config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

/* c printed as a config file, in a malloc'd string of *len bytes. */
static char *printed(const frond__config *c, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  check(f != NULL);
  frond__config_print(c, f);
  check(fclose(f) == 0);
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  frond__config a, b;
  frond_error ea = {0, ""}, eb = {0, ""};
  char *copy = malloc(size ? size : 1), *ta, *tb;
  size_t la, lb;
  int r;
  check(copy != NULL);
  /* An exact-size copy, no NUL after it: ASan sees any over-read. */
  memcpy(copy, data, size);
  frond__config_defaults(&a);
  frond__config_defaults(&b);
  r = frond__config_parse(&a, copy, size, "fuzz", &ea);
  check(frond__config_parse(&b, copy, size, "fuzz", &eb) == r);
  if (r != 0) {
    check(r == FROND_EINVAL && strncmp(ea.message, "fuzz:", 5) == 0 &&
          strcmp(ea.message, eb.message) == 0);
    free(copy);
    return 0;
  }
  ta = printed(&a, &la);
  frond__config_defaults(&b);
  check(frond__config_parse(&b, ta, la, "printed", &eb) == 0);
  tb = printed(&b, &lb);
  check(la == lb && memcmp(ta, tb, la) == 0);
  {
    char uri[FROND__CFG_STR_MAX + 64];
    frond_error e = {0, ""};
    int rc = frond__config_coord_uri(&a, uri, sizeof(uri), &e);
    if (rc == 0)
      check(uri[0] != '\0' &&
            (a.node < 0 || frond__config_pinned_node(uri) == a.node));
    else
      check(rc == FROND_EINVAL && e.message[0] != '\0');
  }
  free(ta);
  free(tb);
  free(copy);
  return 0;
}
