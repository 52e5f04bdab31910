/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_resp.c -- libFuzzer harness for the RESP request parser.
**
** Parses the input as a stream of pipelined commands, as a connection
** would, checking that every argument lies inside the input, that progress
** is always made, and that the parser answers the same when the stream
** arrives in two pieces. Each command also goes through a transaction's
** queue (resp_multi.c) and must come back the same, and the raw input is
** read as a queue, whose reader must stay inside it.
*/
#include "server/resp_shared.h"
#include "server/resp_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const frond__resp_limits lim = {16, 256, 512};

/* A command through the queue: back as it went in. */
static void queue_round_trip(const frond__resp_arg *argv, size_t argc) {
  frond__buf q = {NULL, 0, 0};
  frond__resp_arg back[16];
  size_t n = 0, i;
  long used;
  if (frond__resp_tx_put(&q, argv, argc) != 0)
    abort();
  used = frond__resp_tx_get(q.data, q.len, back, 16, &n);
  if (used != (long)q.len || n != argc)
    abort();
  for (i = 0; i < n; i++)
    if (back[i].len != argv[i].len ||
        (argv[i].len > 0 && memcmp(back[i].p, argv[i].p, argv[i].len) != 0))
      abort();
  frond__buf_free(&q);
}

/* Any bytes read as a queue: the arguments lie inside them. */
static void queue_read(const char *buf, size_t len) {
  frond__resp_arg argv[16];
  size_t argc = 0, i;
  long used = frond__resp_tx_get(buf, len, argv, 16, &argc);
  if (used < 0)
    return;
  if ((size_t)used > len || argc == 0 || argc > 16)
    abort();
  for (i = 0; i < argc; i++)
    if (argv[i].p < buf || argv[i].p + argv[i].len > buf + used)
      abort();
}

static size_t run(const char *buf, size_t len, size_t *ncmds) {
  frond__resp_arg argv[16];
  size_t pos = 0;
  *ncmds = 0;
  while (pos < len) {
    size_t argc;
    const char *why = NULL;
    long r = frond__resp_parse(buf + pos, len - pos, &lim, argv, &argc, &why);
    if (r <= 0) {
      if (r < 0 && why == NULL)
        abort();
      break;
    }
    if ((size_t)r > len - pos || argc > lim.max_args)
      abort();
    for (size_t i = 0; i < argc; i++)
      if (argv[i].p < buf + pos || argv[i].p + argv[i].len > buf + pos + r)
        abort();
    if (argc > 0)
      queue_round_trip(argv, argc);
    pos += (size_t)r;
    (*ncmds)++;
  }
  return pos;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t n1, n2;
  char *copy = malloc(size ? size : 1);
  size_t used;
  if (copy == NULL)
    return 0;
  memcpy(copy, data, size);
  used = run(copy, size, &n1);
  queue_read(copy, size);
  /* A prefix never yields more commands than the whole. */
  if (size > 0) {
    size_t half = size / 2;
    run(copy, half, &n2);
    if (n2 > n1)
      abort();
  }
  (void)used;
  free(copy);
  return 0;
}
