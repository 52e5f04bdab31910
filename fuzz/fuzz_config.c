/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_config.c -- libFuzzer harness for the server's config file parser
** and, through it, every type's value parser in the configuration table.
**
** The input is the text of a config file (format.<name> lines build their
** ID format to check the spec). Invariants beyond "no crash":
** parsing is a pure function of the text; a refusal is INVAL with a
** message naming the line, or CONFIG for a key given twice, naming the
** later line and the earlier one before it; an accepted configuration,
** printed with --print-config's printer, reads back to a configuration
** that prints the same. Its coordinator resolves (frond__config_coord_uri)
** to a URI that names the configured node ID when one is set, or is
** refused with INVAL and a message.
**
** The input's first line is also read as the name of a FROND_* variable
** (frond__config_env_unknown): refused with CONFIG and "unknown variable",
** or accepted, the same way twice; never refused when it is a key's
** variable.
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

/* The first line of text[0..size) as a variable's name. */
static void env_name(const char *text, size_t size) {
  const char *nl = memchr(text, '\n', size);
  size_t n = nl ? (size_t)(nl - text) : size, rows, i;
  const frond__cfg_row *row = frond__config_rows(&rows);
  frond_error e = {0, ""}, e2 = {0, ""};
  char env[80];
  int r = frond__config_env_unknown(text, n, &e);
  check(frond__config_env_unknown(text, n, &e2) == r);
  check(r == 0 || (r == FROND_ECONFIG && e.code == FROND_ECONFIG &&
                   strncmp(e.message, "unknown variable ", 17) == 0 &&
                   strcmp(e.message, e2.message) == 0));
  for (i = 0; i < rows && r != 0; i++)
    check(row[i].type == FROND__CFG_FORMAT ||
          strlen(frond__config_env_name(&row[i], env, sizeof env)) != n ||
          memcmp(env, text, n) != 0);
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
  env_name(copy, size);
  if (r == FROND_ECONFIG) {
    int later = 0, first = 0, n = 0;
    check(sscanf(ea.message,
                 "fuzz:%d: %*s is given twice, on line %d and "
                 "again on line %d:%n",
                 &later, &first, &later, &n) == 3 &&
          n > 0 && first > 0 && first < later &&
          strcmp(ea.message, eb.message) == 0);
    free(copy);
    return 0;
  }
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
