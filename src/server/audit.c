/* SPDX-License-Identifier: Apache-2.0 */
/*
** audit.c -- the audit log (audit_log = path): who was given which IDs,
** from where, over which protocol, and when; one JSON object a line.
**
** Every range, batch and format batch handed out is one line. Single IDs
** are aggregated per client, peer, protocol, tag (or node, or format) and
** second into one line (first, last, count), so that the hot path costs a
** look-up in a small table and no formatting.
**
** The event loop never touches the disk. Each worker appends its lines
** to a buffer of its own, under a lock of its own that only the writer
** thread also takes, for as long as a buffer swap (or the formatting of
** the aggregates of a second gone by). The writer thread wakes every
** TICK_MS (sooner when a buffer fills), takes the workers' buffers,
** appends them to the file and syncs it (fdatasync). SIGHUP has the
** writer write what it holds to the file it has open, then open the path
** again (for logrotate): a record goes to the old file or to the new one,
** never nowhere. A reopen that fails keeps the old file and is retried
** every second.
**
** When the log cannot keep up (a write or sync fails: disk full, an I/O
** error; or more than audit_buffer bytes wait), audit_full says what
** gives way. refuse (the default): requests that would issue IDs answer
** AUDIT_UNAVAILABLE before anything is issued, until the writer has
** caught up; what was issued before stays in memory and is written once
** the file takes it, or, at the stop, to stderr, and serve exits 1. drop: IDs are issued, records beyond audit_buffer are
** dropped, counted in frond_audit_dropped_total, logged as errors and
** written into the log itself as a "dropped" line once it can be written.
** Records still in memory when the process is killed (SIGKILL) are lost:
** at most TICK_MS of them while the disk keeps up.
*/
#include "base/base.h"
#include "server/audit_shared.h"
#include "server/server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------- on the loop */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  while (n-- > 0)
    h = (h ^ *s++) * 0x100000001b3ull;
  return h;
}

int frond__audit_admit(frond__conn *c, frond__req *r) {
  frond__audit *a = c->w->srv->audit;
  if (a == NULL || !a->refuse || r->op == FROND__REQ_STORE)
    return 0;
  if (!atomic_load_explicit(&a->failing, memory_order_relaxed) &&
      atomic_load_explicit(&a->pending, memory_order_relaxed) <= a->limit)
    return 0;
  atomic_fetch_add_explicit(&a->refused, 1, memory_order_relaxed);
  r->rc = frond__fail(&r->err, FROND_EAUDIT_UNAVAILABLE,
                      atomic_load(&a->failing)
                          ? "the audit log cannot be written (see the "
                            "server's log); IDs are issued again once it can"
                          : "the audit log is behind by more than "
                            "audit_buffer; retry shortly");
  return -1;
}

/* A batch of format strings: one line for each run of strings whose
** underlying IDs are consecutive, as for IDs without a format: a batch of
** a segment tag's may span two segments, and one over snowflake IDs is
** taken a chunk at a time, other requests' IDs in between. The IDs are
** read back from the strings, a decode each.
** Strings without one (random UUIDs): one line, first and last string.
** With ws->lock. */
static void format_batch(frond__audit *a, wstate *ws, agg *key,
                         const frond__req *r, int64_t ms) {
  const char *s = r->strs;
  size_t stride = r->nf->stride, i0 = 0, j;
  int64_t id = 0, prev = 0;
  int run = 0, ok;
  if (stride > STR_MAX || !frond__audit_id_of(r->nf, s, stride, &key->first)) {
    if (stride <= STR_MAX) {
      snprintf(key->first_s, STR_MAX, "%s", s);
      snprintf(key->last_s, STR_MAX, "%s", s + (r->n - 1) * stride);
    }
    frond__audit_record(a, &ws->buf, ms, 1, key, &ws->tc);
    return;
  }
  for (j = 0; j <= r->n; j++) {
    ok = j < r->n && frond__audit_id_of(r->nf, s + j * stride, stride, &id);
    if (run && ok && id == prev + 1) {
      prev = id;
      continue;
    }
    if (run) { /* i0..j-1 */
      snprintf(key->first_s, STR_MAX, "%s", s + i0 * stride);
      snprintf(key->last_s, STR_MAX, "%s", s + (j - 1) * stride);
      key->last = prev;
      key->count = j - i0;
      key->has_ids = 1;
      frond__audit_record(a, &ws->buf, ms, 1, key, &ws->tc);
    }
    if ((run = ok) != 0) {
      i0 = j;
      key->first = prev = id;
    } else if (j < r->n) { /* no ID read back: a line of its own */
      snprintf(key->first_s, STR_MAX, "%s", s + j * stride);
      snprintf(key->last_s, STR_MAX, "%s", s + j * stride);
      key->count = 1;
      key->has_ids = 0;
      frond__audit_record(a, &ws->buf, ms, 1, key, &ws->tc);
    }
  }
}

void frond__audit_req(frond__conn *c, const frond__req *r, int gone) {
  frond__audit *a = c->w->srv->audit;
  wstate *ws;
  agg key, *g;
  const char *who;
  int64_t ms;
  uint64_t h;
  unsigned i;
  int full;
  if (a == NULL || r->rc != 0 || r->op == FROND__REQ_STORE)
    return;
  ws = &a->ws[c->w->id];
  memset(&key, 0, offsetof(agg, first_s));
  key.kind = r->op == FROND__REQ_SNOWFLAKE ? SNOWFLAKE
             : r->op == FROND__REQ_FORMAT  ? FORMAT
                                           : SEGMENT;
  key.answered = !gone;
  key.proto = c->proto->name;
  key.peerlen = (int)sizeof key.peer;
  if (gone || uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&key.peer,
                                 &key.peerlen) != 0)
    key.peerlen = 0;
  who = r->client != NULL ? r->client->name : "anonymous";
  memcpy(key.client, who, strnlen(who, sizeof key.client - 1));
  key.nf = r->nf;
  if (r->tag != NULL && r->len < sizeof key.tag) {
    memcpy(key.tag, r->tag, r->len);
    key.taglen = r->len;
  }
  ms = frond__audit_now_ms();
  pthread_mutex_lock(&ws->lock);
  if (r->op == FROND__REQ_RANGE || r->n > 1) {
    size_t len0 = ws->buf.len, i0 = 0, j;
    key.count = r->n;
    if (r->op == FROND__REQ_RANGE) {
      key.first = r->start;
      key.last = r->start + (int64_t)r->n - 1;
      frond__audit_record(a, &ws->buf, ms, 2, &key, &ws->tc);
    } else if (key.kind == FORMAT) {
      format_batch(a, ws, &key, r, ms);
    } else if (key.kind == SNOWFLAKE) {
      /* A batch is issued a time unit's IDs at a time (ids.c), each in
      ** one atomic step: one line for each, which no other ID lies in. */
      size_t unit = (size_t)1 << a->srv->layout.seq_bits;
      for (i0 = 0; i0 < r->n; i0 += unit) {
        j = r->n - i0 < unit ? r->n : i0 + unit;
        key.first = r->ids[i0];
        key.last = r->ids[j - 1];
        key.count = j - i0;
        frond__audit_record(a, &ws->buf, ms, 1, &key, &ws->tc);
      }
    } else {
      /* Segment IDs of a batch may come from two segments or more: one
      ** line for each run of consecutive IDs, so that find is exact. */
      for (j = 1; j <= r->n; j++) {
        if (j < r->n && r->ids[j] == r->ids[j - 1] + 1)
          continue;
        key.first = r->ids[i0];
        key.last = r->ids[j - 1];
        key.count = j - i0;
        frond__audit_record(a, &ws->buf, ms, 1, &key, &ws->tc);
        i0 = j;
      }
    }
    frond__audit_account(a, &ws->buf, len0);
    goto out;
  }
  if (ms / 1000 != ws->second) {
    frond__audit_flush_aggs(a, ws);
    ws->second = ms / 1000;
  }
  h = fnv(0xcbf29ce484222325ull, &key.kind, sizeof key.kind);
  h = fnv(h, &key.answered, sizeof key.answered);
  h = fnv(h, key.proto, strlen(key.proto));
  h = fnv(h, &key.peer, (size_t)key.peerlen);
  h = fnv(h, key.client, strlen(key.client));
  h = fnv(h, &key.nf, sizeof key.nf);
  h = fnv(h, key.tag, key.taglen);
  for (i = (unsigned)h;; i++) {
    g = &ws->slot[i & (SLOTS - 1)];
    if (!g->used)
      break;
    if (g->hash == h && g->kind == key.kind && g->answered == key.answered &&
        g->proto == key.proto && g->nf == key.nf && g->peerlen == key.peerlen &&
        memcmp(&g->peer, &key.peer, (size_t)key.peerlen) == 0 &&
        g->taglen == key.taglen && memcmp(g->tag, key.tag, key.taglen) == 0 &&
        strcmp(g->client, key.client) == 0)
      break;
  }
  if (!g->used) {
    if (ws->nused >= SLOTS * 3 / 4) { /* full: this second's so far */
      frond__audit_flush_aggs(a, ws);
      g = &ws->slot[h & (SLOTS - 1)];
    }
    memcpy(g, &key, offsetof(agg, first_s));
    g->used = 1;
    g->hash = h;
    g->first_s[0] = '\0';
    ws->nused++;
  }
  g->count++;
  if (key.kind == FORMAT) {
    if (r->nf->stride <= STR_MAX) {
      if (g->count == 1)
        snprintf(g->first_s, STR_MAX, "%s", r->strs);
      snprintf(g->last_s, STR_MAX, "%s", r->strs);
    }
  } else {
    if (g->count == 1)
      g->first = r->ids[0];
    g->last = r->ids[0];
  }
out:
  full = ws->buf.len >= KICK_BYTES;
  pthread_mutex_unlock(&ws->lock);
  if (full) {
    pthread_mutex_lock(&a->lock);
    a->kick = 1;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
  }
}

static void on_sighup(uv_signal_t *s, int signum) {
  frond__audit *a = s->data;
  (void)signum;
  pthread_mutex_lock(&a->lock);
  a->hup = 1;
  pthread_cond_signal(&a->cond);
  pthread_mutex_unlock(&a->lock);
}

/* --------------------------------------------------------- life cycle */

int frond__audit_open(frond__server *srv, uv_loop_t *loop, frond_error *err) {
  frond__audit *a;
  int i;
  if (srv->cfg.audit_log[0] == '\0')
    return 0;
  if ((a = calloc(1, sizeof *a)) == NULL ||
      (a->ws = calloc((size_t)srv->nworkers, sizeof *a->ws)) == NULL) {
    free(a);
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  }
  a->srv = srv;
  a->nws = srv->nworkers;
  a->refuse = srv->cfg.audit_full == FROND__AUDIT_REFUSE;
  a->limit = (uint64_t)srv->cfg.audit_buffer;
  snprintf(a->path, sizeof a->path, "%s", srv->cfg.audit_log);
  if (strcmp(srv->layout.name, "custom") == 0)
    frond_layout_format(&srv->layout, a->layout, sizeof a->layout);
  else
    snprintf(a->layout, sizeof a->layout, "%s", srv->layout.name);
  if ((a->fd = frond__audit_open_log(a->path)) < 0) {
    int e = errno;
    free(a->ws);
    free(a);
    return frond__fail(err, FROND_EIO, "audit_log %s: %s", srv->cfg.audit_log,
                       strerror(e));
  }
  for (i = 0; i < a->nws; i++) {
    pthread_mutex_init(&a->ws[i].lock, NULL);
    a->ws[i].tc.second = -1;
  }
  pthread_mutex_init(&a->lock, NULL);
  pthread_cond_init(&a->cond, NULL);
  if (pthread_create(&a->thread, NULL, frond__audit_writer, a) != 0) {
    close(a->fd);
    free(a->ws);
    free(a);
    return frond__fail(err, FROND_EIO, "audit log: cannot start its writer");
  }
  a->started = 1;
  uv_signal_init(loop, &a->sighup);
  a->sighup.data = a;
  uv_signal_start(&a->sighup, on_sighup, SIGHUP);
  /* The drain ends the main loop: this handle does not hold it open. */
  uv_unref((uv_handle_t *)&a->sighup);
  srv->audit = a;
  frond_log(FROND_LOG_INFO, "audit log %s (audit_full = %s)", a->path,
            a->refuse ? "refuse" : "drop");
  return 0;
}

uint64_t frond__audit_close(frond__server *srv, uv_loop_t *loop) {
  frond__audit *a = srv->audit;
  uint64_t unwritten;
  int i;
  if (a == NULL)
    return 0;
  uv_close((uv_handle_t *)&a->sighup, NULL);
  /* libuv gave SIGHUP back its default, which ends the process: the last
  ** steps (the high-water time, the node ID) must run to the end. */
  signal(SIGHUP, SIG_IGN);
  uv_run(loop, UV_RUN_NOWAIT);
  pthread_mutex_lock(&a->lock);
  a->stop = 1;
  pthread_cond_signal(&a->cond);
  pthread_mutex_unlock(&a->lock);
  pthread_join(a->thread, NULL);
  unwritten = atomic_load(&a->unwritten);
  close(a->fd);
  for (i = 0; i < a->nws; i++) {
    frond__buf_free(&a->ws[i].buf);
    pthread_mutex_destroy(&a->ws[i].lock);
  }
  frond__buf_free(&a->out);
  frond__buf_free(&a->take);
  pthread_mutex_destroy(&a->lock);
  pthread_cond_destroy(&a->cond);
  free(a->ws);
  free(a);
  srv->audit = NULL;
  return unwritten;
}

/* ------------------------------------------------------------ metrics */

/* One family with one sample; metrics.c renders it in /metrics. */
static void family(frond__buf *b, const char *type, const char *name,
                   const char *help, uint64_t v) {
  frond__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help,
                    name, type, name, (unsigned long long)v);
}

void frond__audit_metrics(frond__server *srv, frond__buf *b) {
  frond__audit *a = srv->audit;
  if (a == NULL)
    return;
  family(b, "counter", "frond_audit_records_total",
         "Audit log lines written and synced.", atomic_load(&a->records));
  family(b, "counter", "frond_audit_bytes_total",
         "Audit log bytes written and synced.", atomic_load(&a->bytes));
  family(b, "gauge", "frond_audit_pending_bytes",
         "Audit records in memory, not yet on disk.", atomic_load(&a->pending));
  family(b, "gauge", "frond_audit_writable",
         "1 while the audit log's last write and sync worked.",
         (uint64_t)!atomic_load(&a->failing));
  family(b, "counter", "frond_audit_write_errors_total",
         "Audit log writes or syncs that failed.",
         atomic_load(&a->write_errors));
  family(b, "counter", "frond_audit_refused_total",
         "Requests refused with AUDIT_UNAVAILABLE "
         "(audit_full = refuse).",
         atomic_load(&a->refused));
  family(b, "counter", "frond_audit_dropped_total",
         "Audit records dropped (audit_full = drop).",
         atomic_load(&a->dropped));
  family(b, "counter", "frond_audit_reopens_total",
         "Audit log reopened on SIGHUP.", atomic_load(&a->reopens));
  family(b, "counter", "frond_audit_reopen_failures_total",
         "Audit log reopens that failed (the old file kept).",
         atomic_load(&a->reopen_failures));
}
