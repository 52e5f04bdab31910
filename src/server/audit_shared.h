/* SPDX-License-Identifier: Apache-2.0 */
/*
** audit_shared.h -- what the audit log's files share: audit.c (the
** loops' side, life cycle, metrics), audit_record.c (lines),
** audit_writer.c (the writer thread). Internal to them.
*/
#ifndef FROND_SERVER_AUDIT_SHARED_H
#define FROND_SERVER_AUDIT_SHARED_H

#include "server/server.h"

#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>

#define SLOTS 256 /* aggregates per worker and second (a power of 2) */
#define KICK_BYTES (256u << 10) /* a worker's buffer wakes the writer */
#define TICK_MS 50
#define RETRY_MS 1000
#define STR_MAX 128 /* an ID string kept for an aggregate */

enum { SNOWFLAKE, SEGMENT, FORMAT };

/* Single IDs of one client, peer, protocol, tag (node, format), second. */
typedef struct agg {
  int used, kind, answered;
  uint64_t hash;
  const char *proto;
  struct sockaddr_storage peer;
  int peerlen;
  const frond__named_format *nf;
  char client[sizeof(((frond__client *)0)->name)];
  /* The tag, or a shard= format's key (as long as FROND_SHARD_KEY_MAX). */
  char tag[(FROND_TAG_MAX > FROND_SHARD_KEY_MAX ? FROND_TAG_MAX
                                                : FROND_SHARD_KEY_MAX) +
           1];
  size_t taglen;
  int64_t first, last;
  int has_ids; /* a format's: first and last are its strings' IDs */
  uint64_t count;
  char first_s[STR_MAX], last_s[STR_MAX];
} agg;

/* The time of a line: its second's text is made once a second and kept
** (the worker's, under its lock). */
typedef struct tcache {
  int64_t second;
  char text[24]; /* 2026-11-28T13:44:32 */
} tcache;

/* A worker's share; lock held by its loop for a record, by the writer for
** a swap or a flush of past aggregates. */
typedef struct wstate {
  pthread_mutex_t lock;
  frond__buf buf; /* lines for the writer */
  int64_t second; /* of the aggregates in slot[] */
  unsigned nused;
  tcache tc;
  agg slot[SLOTS];
} wstate;

struct frond__audit {
  frond__server *srv;
  char path[FROND__CFG_STR_MAX];
  char layout[160];
  int fd;
  int refuse;     /* audit_full = refuse */
  uint64_t limit; /* audit_buffer */
  wstate *ws;
  int nws;
  pthread_t thread;
  int started;
  pthread_mutex_t lock; /* stop, hup, kick */
  pthread_cond_t cond;
  int stop, hup, kick;
  uv_signal_t sighup;
  /* The writer's own. */
  frond__buf out, take;
  int reopen;          /* a SIGHUP not yet acted on */
  int64_t retry_ms;    /* a failed write is tried again then */
  int64_t reopen_ms;   /* a failed reopen is tried again then */
  int reopen_failing;  /* logged once per spell */
  uint64_t drops_told; /* dropped records already written into the log */
  /* Shared, relaxed. */
  _Atomic uint64_t pending; /* bytes in workers' buffers and in out */
  atomic_int failing;       /* the last write or sync failed */
  _Atomic uint64_t records, bytes, dropped, refused, write_errors, reopens,
      reopen_failures, unwritten;
};

static inline int64_t frond__audit_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* {"time":"...Z" into b, the second's text from c (NULL: none kept). */
void frond__audit_put_time(frond__buf *b, int64_t ms, tcache *c);
/* One record (time, who, what, first, last, count) as a JSON line into
** b (audit_record.c). */
void frond__audit_record(frond__audit *a, frond__buf *b, int64_t ms, int op,
                         const agg *g, tcache *tc);
/* The segment or snowflake ID under a format's string s (NUL-terminated
** within len): 1, or 0 when it has none. */
int frond__audit_id_of(const frond__named_format *nf, const char *s, size_t len,
                       int64_t *id);
/* Count what b gained since len0 as pending, or take it back (drop). */
void frond__audit_account(frond__audit *a, frond__buf *b, size_t len0);
/* Every aggregate of ws as a line, the table emptied. With ws->lock. */
void frond__audit_flush_aggs(frond__audit *a, wstate *ws);
/* Open the path for appending; the descriptor, or -1 with errno set. */
int frond__audit_open_log(const char *path);
/* The writer thread's body; arg: the frond__audit. */
void *frond__audit_writer(void *arg);

#endif
