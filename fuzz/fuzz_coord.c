/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_coord.c -- libFuzzer harness for what coordinators parse.
**
** The first byte picks the parser, the rest is its input (the node cache
** file has its own target, fuzz_node_cache):
**   'A'  an advertise identity: accepted ones are host:port with a port in
**        1..65535;
**   'L'  ZooKeeper's layout record: it prints back to the same record;
**   'T'  Leaf's JSON in a forever child, and 'K' a claim's data: any input
**        parses without reading past its end.
*/
#include "coord/coord.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void advertise(const char *s) {
  frond_error err;
  const char *colon;
  long port;
  if (frond__coord_check_advertise(s, &err) != 0) {
    if (err.code != FROND_EINVAL || !strstr(err.message, "advertise"))
      abort();
    return;
  }
  colon = strrchr(s, ':');
  port = colon ? strtol(colon + 1, NULL, 10) : 0;
  if (!colon || port < 1 || port > 65535)
    abort();
}

static void layout(const char *s) {
  frond__zk_layout_rec a, b;
  char text[512];
  frond__zk_parse_layout(s, &a);
  if (frond__zk_format_layout(&a, text, sizeof(text)) >= (int)sizeof(text))
    return;
  frond__zk_parse_layout(text, &b);
  if (strcmp(a.spec, b.spec) != 0 || strcmp(a.previous, b.previous) != 0 ||
      a.floor != b.floor || a.changing != b.changing)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s;
  if (size < 1 || size > 4096)
    return 0;
  if (!(s = malloc(size)))
    return 0;
  memcpy(s, data + 1, size - 1);
  s[size - 1] = '\0';
  switch (data[0]) {
  case 'A':
    advertise(s);
    break;
  case 'L':
    layout(s);
    break;
  case 'T':
    (void)frond__zk_timestamp(s);
    break;
  case 'K':
    (void)frond__zk_claim_field(s, "clock");
    (void)frond__zk_claim_field(s, "session");
    break;
  }
  free(s);
  return 0;
}
