/*
** resp.h -- the Redis protocol front: its commands, limits and counters.
**
** resp.c answers RESP2 on its own port, on the same worker loops and
** connection layer as HTTP (see server.h). This header holds what the
** rest of the server needs to know about it: the command list (for the
** metrics), the per-worker counters and the default limits.
*/
#ifndef FROND_SERVER_RESP_H
#define FROND_SERVER_RESP_H

#include <stdint.h>

/* Every command Frond answers, by its lower-case name; "unknown" counts
** the rest. The order is the metrics' order and COMMAND's. */
#define FROND__RESP_COMMANDS(XX)                                               \
  XX(INCR, "incr")                                                             \
  XX(INCRBY, "incrby")                                                         \
  XX(ID_NEXT, "id.next")                                                       \
  XX(ID_SNOWFLAKE, "id.snowflake")                                             \
  XX(ID_DECODE, "id.decode")                                                   \
  XX(ID_TAGS, "id.tags")                                                       \
  XX(PING, "ping")                                                             \
  XX(ECHO, "echo")                                                             \
  XX(QUIT, "quit")                                                             \
  XX(HELLO, "hello")                                                           \
  XX(AUTH, "auth")                                                             \
  XX(SELECT, "select")                                                         \
  XX(CLIENT, "client")                                                         \
  XX(COMMAND, "command")                                                       \
  XX(INFO, "info")                                                             \
  XX(CONFIG, "config")                                                         \
  XX(RESET, "reset")                                                           \
  XX(UNKNOWN, "unknown")

enum {
#define FROND__RESP_ENUM(id, name) FROND__RC_##id,
  FROND__RESP_COMMANDS(FROND__RESP_ENUM)
#undef FROND__RESP_ENUM
      FROND__RC_COUNT
};

/* Per-worker counters, written by the owning thread only (server.h). */
typedef struct frond__resp_metrics {
  _Atomic uint64_t commands[FROND__RC_COUNT][2]; /* [cmd][0 ok, 1 error] */
  _Atomic uint64_t accepted;
  _Atomic uint64_t closed;
  _Atomic uint64_t protocol_errors; /* closed after a protocol error */
  _Atomic uint64_t noauth;          /* commands refused before AUTH */
  _Atomic uint64_t auth_failures;
} frond__resp_metrics;

#endif /* FROND_SERVER_RESP_H */
