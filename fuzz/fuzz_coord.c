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
**        parses without reading past its end;
**   'H'  a lease row's holder record, after the token and a newline: only
**        a record of that token is read, a pid is positive, a host name a
**        word within its buffer;
**   'S'  a recorded scope (the layout record's part after ';'): an
**        accepted one prints back, in its canonical form, to the same.
*/
#include "coord/coord.h"

#include <stdint.h>
#include <stdio.h>
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

static void holder(char *s) {
  char *nl = strchr(s, '\n'), host[16];
  long pid = -1;
  if (!nl)
    return;
  *nl = '\0';
  if (frond__lease_parse_holder(nl + 1, s, &pid, host, sizeof(host)) != 0) {
    if (pid != 0 || host[0])
      abort();
    return;
  }
  if (!s[0] || strncmp(nl + 1, s, strlen(s)) != 0 || pid < 0 ||
      strlen(host) >= sizeof(host) || strchr(host, ' '))
    abort();
}

static void scope(const char *s) {
  int64_t dc, lo, hi, dc2, lo2, hi2;
  char text[96];
  if (frond__coord_scope_parse(s, &dc, &lo, &hi) != 0)
    return;
  if (dc >= 0)
    snprintf(text, sizeof(text), "datacenter=%lld", (long long)dc);
  else if (lo >= 0)
    snprintf(text, sizeof(text), "nodes=%lld-%lld", (long long)lo,
             (long long)hi);
  else
    snprintf(text, sizeof(text), "all");
  if (frond__coord_scope_parse(text, &dc2, &lo2, &hi2) != 0 || dc != dc2 ||
      lo != lo2 || hi != hi2 || dc > 65535 || (lo >= 0 && hi < lo))
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
  case 'H':
    holder(s);
    break;
  case 'S':
    scope(s);
    break;
  }
  free(s);
  return 0;
}
