/* SPDX-License-Identifier: Apache-2.0 */
/*
** resp_multi.c -- transactions of the Redis protocol front: MULTI, EXEC,
** DISCARD, and WATCH and UNWATCH, which watch nothing.
**
** Between MULTI and EXEC, commands are checked (known, authenticated, of
** the right arity) and queued, each answered +QUEUED; nothing runs. One
** refused while queueing marks the transaction, and EXEC then answers
** -EXECABORT and runs none of it: a transaction a client got wrong burns
** no ID. EXEC runs the queue in order and answers one array of their
** replies, an error among them as an element (as Redis does: the others
** still run). DISCARD drops the queue.
**
** A queued command may have to wait off the loop (a tag looked up in the
** store, a segment not loaded yet, a period's first use). EXEC then stops
** behind it, and resp.c leaves EXEC's own bytes unconsumed: when the
** waiting command has answered into the connection's output and the
** connection resumes, the same EXEC is read again and goes on from the
** next command. Replies stay in order, and nothing a client pipelined
** behind EXEC runs before the transaction's last command has answered.
**
** WATCH and UNWATCH are accepted and watch nothing. That is exact, not an
** approximation: WATCH makes EXEC fail when a watched key was written by
** someone else since, and Frond has no keys in that sense. A tag is not a
** value a client reads and then writes back; every command that names one
** takes fresh IDs no other client can be given, so no write by another
** client can make a transaction's outcome wrong, and EXEC never needs to
** refuse for one.
**
** The queue holds its commands' arguments in one buffer: for each command
** its argument count, then each argument's length and bytes (lengths as
** 32-bit words in the machine's order: the buffer never leaves the
** process). It is bounded by FROND__RESP_MAX_QUEUED commands and by
** FROND__RESP_TX_MAX_BYTES (or resp_max_query, if lower): a command
** beyond either is refused -QUEUE_FULL and aborts the transaction.
**
** What a transaction holds is bounded in time as well as in size. An
** open transaction is work the client left unfinished, as a request whose
** bytes have not all come: from MULTI until EXEC starts it is timed as a
** pending request (c->open_ms), and closed with an error after
** header_timeout_ms, which frees its queue. And EXEC answers in parts:
** once the connection's output is past FROND__OUT_HIGH_WATER it stops
** between two commands, leaves its bytes unconsumed, and goes on when the
** client has read (conn.c reads the same EXEC again once the output has
** drained), as it does behind a command that waits. What one EXEC holds
** in memory is then the high-water mark and one command's reply, however
** many IDs its commands ask for, and the loop serves other connections
** between its parts.
*/
#include "server/resp_shared.h"

#include <stdlib.h>
#include <string.h>

static void tx_reset(frond__resp_tx *tx) {
  frond__buf_free(&tx->q);
  memset(tx, 0, sizeof *tx);
}

void frond__resp_tx_free(frond__resp_client *st) {
  tx_reset(&st->tx);
}

/* The transaction is over (EXEC answered, DISCARD, EXECABORT). */
static void tx_end(frond__resp_ctx *x) {
  tx_reset(&x->st->tx);
  x->c->open_ms = 0;
}

/* ---------------------------------------------------------------- queue */

int frond__resp_tx_put(frond__buf *q, const frond__resp_arg *argv,
                       size_t argc) {
  uint32_t w = (uint32_t)argc;
  size_t i, need = sizeof w;
  for (i = 0; i < argc; i++) {
    if (argv[i].len > UINT32_MAX)
      return -1;
    need += sizeof w + argv[i].len;
  }
  if (frond__buf_reserve(q, need) != 0)
    return -1;
  memcpy(q->data + q->len, &w, sizeof w);
  q->len += sizeof w;
  for (i = 0; i < argc; i++) {
    w = (uint32_t)argv[i].len;
    memcpy(q->data + q->len, &w, sizeof w);
    q->len += sizeof w;
    /* memcpy of 0 bytes from a pointer that may be NULL is undefined. */
    if (argv[i].len > 0)
      memcpy(q->data + q->len, argv[i].p, argv[i].len);
    q->len += argv[i].len;
  }
  return 0;
}

long frond__resp_tx_get(const char *q, size_t len, frond__resp_arg *argv,
                        size_t max, size_t *argc) {
  uint32_t w;
  size_t pos = sizeof w, i;
  if (len < sizeof w)
    return -1;
  memcpy(&w, q, sizeof w);
  if (w == 0 || w > max)
    return -1;
  *argc = w;
  for (i = 0; i < *argc; i++) {
    if (len - pos < sizeof w)
      return -1;
    memcpy(&w, q + pos, sizeof w);
    pos += sizeof w;
    if (len - pos < w)
      return -1;
    argv[i].p = q + pos;
    argv[i].len = w;
    pos += w;
  }
  return (long)pos;
}

/* Queue the command x carries, answering +QUEUED, or -QUEUE_FULL (which
** aborts the transaction). */
void frond__resp_tx_queue(frond__resp_ctx *x) {
  frond__resp_tx *tx = &x->st->tx;
  size_t max_bytes = (size_t)x->srv->cfg.resp_max_query;
  size_t before = tx->q.len;
  if (max_bytes > FROND__RESP_TX_MAX_BYTES)
    max_bytes = FROND__RESP_TX_MAX_BYTES;
  if (tx->n >= FROND__RESP_MAX_QUEUED) {
    tx->dirty = 1;
    frond__resp_error(x, "QUEUE_FULL",
                      "a transaction holds at most %d commands; this one is "
                      "discarded at EXEC",
                      FROND__RESP_MAX_QUEUED);
    return;
  }
  if (frond__resp_tx_put(&tx->q, x->argv, x->argc) != 0 ||
      tx->q.len > max_bytes) {
    tx->q.len = before;
    tx->dirty = 1;
    frond__resp_error(x, "QUEUE_FULL",
                      "a transaction's commands hold at most %zu bytes; "
                      "this one is discarded at EXEC",
                      max_bytes);
    return;
  }
  tx->n++;
  frond__resp_status(x, "QUEUED");
}

/* ------------------------------------------------------------- commands */

void frond__resp_cmd_multi(frond__resp_ctx *x) {
  frond__resp_tx *tx = &x->st->tx;
  if (tx->on) {
    frond__resp_error(x, "ERR", "MULTI calls can not be nested");
    return;
  }
  tx_reset(tx);
  tx->on = 1;
  x->c->open_ms = uv_now(&x->w->loop);
  frond__resp_status(x, "OK");
}

void frond__resp_cmd_discard(frond__resp_ctx *x) {
  if (!x->st->tx.on) {
    frond__resp_error(x, "ERR", "DISCARD without MULTI");
    return;
  }
  tx_end(x);
  frond__resp_status(x, "OK");
}

void frond__resp_cmd_watch(frond__resp_ctx *x) {
  if (x->st->tx.on)
    frond__resp_error(x, "ERR", "WATCH inside MULTI is not allowed");
  else
    frond__resp_status(x, "OK");
}

void frond__resp_cmd_unwatch(frond__resp_ctx *x) {
  frond__resp_status(x, "OK");
}

int frond__resp_tx_exec(frond__resp_ctx *x, void (*run)(frond__resp_ctx *y)) {
  frond__resp_tx *tx = &x->st->tx;
  frond__resp_arg argv[FROND__RESP_MAX_ARGS];
  if (!tx->on) {
    frond__resp_error(x, "ERR", "EXEC without MULTI");
    return 0;
  }
  if (tx->dirty) {
    tx_end(x);
    frond__resp_error(x, "EXECABORT",
                      "Transaction discarded because of previous errors.");
    return 0;
  }
  if (!tx->running) {
    frond__resp_array(x, (int64_t)tx->n);
    tx->running = 1;
    tx->t0 = x->t0;
    /* Running, it is the server's to finish: no longer timed. */
    x->c->open_ms = 0;
  } else {
    x->t0 = tx->t0; /* read again after a wait: timed from the first */
  }
  while (tx->next < tx->n) {
    frond__resp_ctx y = *x;
    /* The rest once the client has read (the head comment). */
    if (x->c->out.len + x->c->wbuf.len >= FROND__OUT_HIGH_WATER)
      return 1;
    long used = frond__resp_tx_get(tx->q.data + tx->off, tx->q.len - tx->off,
                                   argv, FROND__RESP_MAX_ARGS, &y.argc);
    /* The queue is this file's own writing. */
    if (used < 0) {
      x->close = 1;
      break;
    }
    tx->off += (size_t)used;
    tx->next++;
    y.argv = argv;
    y.failed = 0;
    y.close = 0;
    run(&y);
    if (y.close)
      x->close = 1;
    if (x->c->held)
      return 1; /* the rest once its answer is written */
  }
  tx_end(x);
  return 0;
}
