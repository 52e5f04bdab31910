/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_clients.c -- libFuzzer harness for the clients file's parser
** (server/acl_parse.c) and its glob patterns.
**
** The input is the text of a clients file. Invariants beyond "no crash":
** parsing is a pure function of the text (twice the same answer); a
** refusal is CONFIG with a message "f:LINE: ..." whose line is one of
** the text's; an accepted set holds clients with rights and a secret or a
** certificate name, each found again by its name and its certificate
** name, and each of whose patterns without '*' matches itself and
** nothing longer, while '*' matches every name.
*/
#include "server/acl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

static void patterns_hold(const char *p, size_t n) {
  size_t i;
  for (i = 0; i < n; i++, p += strlen(p) + 1) {
    size_t len = strlen(p);
    check(len > 0);
    check(frond__acl_glob("*", p, len));
    if (strchr(p, '*') == NULL) {
      check(frond__acl_glob(p, p, len));
      check(!frond__acl_glob(p, p, len - 1));
    } else {
      /* The pattern read as a name matches itself: '*' takes a '*'. */
      check(frond__acl_glob(p, p, len));
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  frond_error e1 = {0, ""}, e2 = {0, ""};
  frond__acl *a = NULL, *b = NULL;
  int r1 = frond__acl_parse(text, size, "f", &a, &e1);
  int r2 = frond__acl_parse(text, size, "f", &b, &e2);
  size_t i, lines = 1;
  check(r1 == r2);
  for (i = 0; i < size; i++)
    lines += data[i] == '\n';
  if (r1 != 0) {
    long line;
    check(r1 == FROND_ECONFIG);
    check(a == NULL && b == NULL);
    check(strcmp(e1.message, e2.message) == 0);
    check(strncmp(e1.message, "f:", 2) == 0);
    line = strtol(e1.message + 2, NULL, 10);
    check(line >= 1 && (size_t)line <= lines);
    return 0;
  }
  check(a != NULL && b != NULL && a->n == b->n);
  for (i = 0; i < a->n; i++) {
    const frond__acl_client *k = &a->clients[i];
    size_t len = strlen(k->c.name);
    check(len >= 1 && len <= FROND__ACL_NAME_MAX);
    check(k->rights != 0 && (k->rights & ~FROND__ACL_ALL) == 0);
    check(k->has_secret || k->cert[0] != '\0');
    check(frond__acl_find(a, k->c.name, len) == k);
    check(k->cert[0] == '\0' || frond__acl_find_cert(a, k->cert) == k);
    check(strcmp(k->c.name, b->clients[i].c.name) == 0);
    check(memcmp(k->hash, b->clients[i].hash, sizeof k->hash) == 0);
    patterns_hold(k->tags, k->ntags);
    patterns_hold(k->formats, k->nformats);
  }
  frond__acl_unref(a);
  frond__acl_unref(b);
  return 0;
}
