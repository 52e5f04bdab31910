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
** the file takes it. drop: IDs are issued, records beyond audit_buffer are
** dropped, counted in frond_audit_dropped_total, logged as errors and
** written into the log itself as a "dropped" line once it can be written.
** Records still in memory when the process is killed (SIGKILL) are lost:
** at most TICK_MS of them while the disk keeps up.
*/
#include "base/base.h"
#include "server/json.h"
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 256 /* aggregates per worker and second (a power of 2) */
#define KICK_BYTES (256u << 10) /* a worker's buffer wakes the writer */
#define TICK_MS 50
#define RETRY_MS 1000
#define STR_MAX 128 /* an ID string kept for an aggregate */

enum { SNOWFLAKE, SEGMENT, FORMAT };
static const char *const op_names[] = {"singles", "batch", "range"};

/* Single IDs of one client, peer, protocol, tag (node, format), second. */
typedef struct agg {
  int used, kind, answered;
  uint64_t hash;
  const char *proto;
  struct sockaddr_storage peer;
  int peerlen;
  const frond__named_format *nf;
  char client[sizeof(((frond__client *)0)->name)];
  char tag[FROND_TAG_MAX + 1];
  size_t taglen;
  int64_t first, last;
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
      reopen_failures;
};

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ lines */

static void put_time(frond__buf *b, int64_t ms, tcache *c) {
  tcache own = {-1, ""};
  char *p;
  if (c == NULL)
    c = &own;
  if (c->second != ms / 1000) {
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(c->text, sizeof c->text, "%Y-%m-%dT%H:%M:%S", &tm);
    c->second = ms / 1000;
  }
  if (frond__buf_reserve(b, 48) != 0)
    return;
  p = b->data + b->len;
  memcpy(p, "{\"time\":\"", 9);
  memcpy(p + 9, c->text, 19);
  p[28] = '.';
  p[29] = (char)('0' + ms % 1000 / 100);
  p[30] = (char)('0' + ms % 100 / 10);
  p[31] = (char)('0' + ms % 10);
  memcpy(p + 32, "Z\"", 2);
  b->len += 34;
}

/* ,"name":v */
static void put_num(frond__buf *b, const char *name, int64_t v) {
  size_t n = strlen(name);
  if (frond__buf_reserve(b, n + 24) != 0)
    return;
  b->data[b->len++] = ',';
  b->data[b->len++] = '"';
  memcpy(b->data + b->len, name, n);
  b->len += n;
  b->data[b->len++] = '"';
  b->data[b->len++] = ':';
  b->len += frond__dec_i64(b->data + b->len, v);
}

static void put_str(frond__buf *b, const char *name, const char *s,
                    size_t len) {
  size_t n = strlen(name);
  if (frond__buf_reserve(b, n + 5) != 0)
    return;
  b->data[b->len++] = ',';
  b->data[b->len++] = '"';
  memcpy(b->data + b->len, name, n);
  b->len += n;
  memcpy(b->data + b->len, "\":\"", 3);
  b->len += 3;
  frond__json_append(b, s, len);
  frond__buf_append(b, "\"", 1);
}

/* ,"name":"s" for s of the server's own (a protocol, an op, a layout):
** nothing to escape. */
static void put_raw(frond__buf *b, const char *name, const char *s) {
  size_t n = strlen(name), m = strlen(s);
  if (frond__buf_reserve(b, n + m + 6) != 0)
    return;
  b->data[b->len++] = ',';
  b->data[b->len++] = '"';
  memcpy(b->data + b->len, name, n);
  b->len += n;
  memcpy(b->data + b->len, "\":\"", 3);
  b->len += 3;
  memcpy(b->data + b->len, s, m);
  b->len += m;
  b->data[b->len++] = '"';
}

static void put_peer(frond__buf *b, const struct sockaddr_storage *ss,
                     int len) {
  char txt[INET6_ADDRSTRLEN + 16], *p = txt;
  const unsigned char *q;
  int port = 0, i;
  txt[0] = '\0';
  if (len > 0 && ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
    *p++ = '[';
    inet_ntop(AF_INET6, &s6->sin6_addr, p, INET6_ADDRSTRLEN);
    p += strlen(p);
    *p++ = ']';
    port = ntohs(s6->sin6_port);
  } else if (len > 0 && ss->ss_family == AF_INET) {
    /* By hand: inet_ntop and printf cost more than the rest of a line. */
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
    q = (const unsigned char *)&s4->sin_addr;
    for (i = 0; i < 4; i++) {
      p += frond__dec_u64(p, q[i]);
      *p++ = i < 3 ? '.' : ':';
    }
    p--;
    port = ntohs(s4->sin_port);
  }
  if (p != txt) {
    *p++ = ':';
    p += frond__dec_u64(p, (uint64_t)port);
  }
  *p = '\0';
  put_raw(b, "remote", txt);
}

/* The underlying ID of a format's string, when it has one (an order
** number's or a sequence's): the "id" its decoding names. */
static int underlying(frond__server *srv, const frond__named_format *nf,
                      const char *s, int64_t *id) {
  frond__field f[FROND__FIELDS_MAX];
  frond_error err = {0, ""};
  size_t n = 0, i;
  if (frond__formats_decode(srv, nf, s, strlen(s), f, &n, &err) != 0)
    return 0;
  for (i = 0; i < n; i++)
    if (strcmp(f[i].name, "id") == 0)
      return f[i].is_num
                 ? (*id = f[i].num, 1)
                 : frond__parse_i64(f[i].str, strlen(f[i].str), id) == 0;
  return 0;
}

/* One record: (time, who, what, first, last, count) as a JSON line into
** b. For formats, first_s and last_s are the strings; first and last the
** underlying IDs, when they have some. tc: the caller's time cache. */
static void record(frond__audit *a, frond__buf *b, int64_t ms, int op,
                   const agg *g, tcache *tc) {
  int64_t first, last;
  put_time(b, ms, tc);
  put_str(b, "client", g->client, strlen(g->client));
  put_peer(b, &g->peer, g->peerlen);
  put_raw(b, "proto", g->proto);
  put_raw(b, "op", op_names[op]);
  if (g->kind == SNOWFLAKE) {
    put_num(b, "node", (int64_t)a->srv->node);
    put_raw(b, "layout", a->layout);
  } else if (g->kind == SEGMENT) {
    put_str(b, "tag", g->tag, g->taglen);
  } else {
    const char *tag = frond_format_tag(g->nf->f);
    put_str(b, "format", g->nf->name, strlen(g->nf->name));
    if (tag != NULL)
      put_str(b, "tag", tag, strlen(tag));
    if (g->taglen > 0)
      put_str(b, "key", g->tag, g->taglen);
  }
  if (g->kind != FORMAT) {
    put_num(b, "first", g->first);
    put_num(b, "last", g->last);
  } else if (g->first_s[0] != '\0') {
    put_str(b, "first_string", g->first_s, strlen(g->first_s));
    put_str(b, "last_string", g->last_s, strlen(g->last_s));
    if (underlying(a->srv, g->nf, g->first_s, &first) &&
        underlying(a->srv, g->nf, g->last_s, &last)) {
      put_num(b, "first", first);
      put_num(b, "last", last);
    }
  }
  put_num(b, "count", (int64_t)g->count);
  if (!g->answered)
    frond__buf_append(b, ",\"answered\":false", 17);
  frond__buf_append(b, "}\n", 2);
}

/* Append what b gained since len0 to the pending count, or take it back
** (drop) when audit_full = drop and the buffer is full. With ws->lock. */
static void account(frond__audit *a, frond__buf *b, size_t len0) {
  uint64_t add = b->len - len0;
  if (!a->refuse &&
      atomic_load_explicit(&a->pending, memory_order_relaxed) + add >
          a->limit) {
    b->len = len0;
    atomic_fetch_add_explicit(&a->dropped, 1, memory_order_relaxed);
    return;
  }
  atomic_fetch_add_explicit(&a->pending, add, memory_order_relaxed);
}

/* Every aggregate of ws as a line, the table emptied. With ws->lock. */
static void flush_aggs(frond__audit *a, wstate *ws) {
  unsigned i;
  for (i = 0; i < SLOTS && ws->nused > 0; i++) {
    agg *g = &ws->slot[i];
    size_t len0 = ws->buf.len;
    if (!g->used)
      continue;
    record(a, &ws->buf, ws->second * 1000, 0, g, &ws->tc);
    account(a, &ws->buf, len0);
    g->used = 0;
    ws->nused--;
  }
}

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
  if (r->tag != NULL && r->len <= FROND_TAG_MAX) {
    memcpy(key.tag, r->tag, r->len);
    key.taglen = r->len;
  }
  ms = now_ms();
  pthread_mutex_lock(&ws->lock);
  if (r->op == FROND__REQ_RANGE || r->n > 1) {
    size_t len0 = ws->buf.len, i0 = 0, j;
    key.count = r->n;
    if (r->op == FROND__REQ_RANGE) {
      key.first = r->start;
      key.last = r->start + (int64_t)r->n - 1;
      record(a, &ws->buf, ms, 2, &key, &ws->tc);
    } else if (key.kind == FORMAT) {
      const char *s = r->strs;
      size_t stride = r->nf->stride;
      if (stride <= STR_MAX) {
        snprintf(key.first_s, STR_MAX, "%s", s);
        snprintf(key.last_s, STR_MAX, "%s", s + (r->n - 1) * stride);
      }
      record(a, &ws->buf, ms, 1, &key, &ws->tc);
    } else if (key.kind == SNOWFLAKE) {
      /* A batch is issued a time unit's IDs at a time (ids.c), each in
      ** one atomic step: one line for each, which no other ID lies in. */
      size_t unit = (size_t)1 << a->srv->layout.seq_bits;
      for (i0 = 0; i0 < r->n; i0 += unit) {
        j = r->n - i0 < unit ? r->n : i0 + unit;
        key.first = r->ids[i0];
        key.last = r->ids[j - 1];
        key.count = j - i0;
        record(a, &ws->buf, ms, 1, &key, &ws->tc);
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
        record(a, &ws->buf, ms, 1, &key, &ws->tc);
        i0 = j;
      }
    }
    account(a, &ws->buf, len0);
    goto out;
  }
  if (ms / 1000 != ws->second) {
    flush_aggs(a, ws);
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
      flush_aggs(a, ws);
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

/* ---------------------------------------------------------- the writer */

/* Open the path for appending; a file it creates is made durable in its
** directory. The descriptor, or -1 with errno set. */
static int open_log(const char *path) {
  char dir[FROND__CFG_STR_MAX];
  const char *slash = strrchr(path, '/');
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600), d, e;
  if (fd < 0)
    return -1;
  snprintf(dir, sizeof dir, "%.*s", slash == NULL ? 1 : (int)(slash - path),
           slash == NULL   ? "."
           : slash == path ? "/"
                           : path);
  if ((d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
    e = fsync(d);
    close(d);
    (void)e;
  }
  return fd;
}

/* Take every worker's lines (and, with all or once their second is over,
** its aggregates) into a->out. */
static void collect(frond__audit *a, int all) {
  int64_t second = now_ms() / 1000;
  int i;
  for (i = 0; i < a->nws; i++) {
    wstate *ws = &a->ws[i];
    frond__buf t;
    pthread_mutex_lock(&ws->lock);
    if (ws->nused > 0 && (all || ws->second < second))
      flush_aggs(a, ws);
    t = ws->buf;
    ws->buf = a->take;
    ws->buf.len = 0;
    pthread_mutex_unlock(&ws->lock);
    a->take = t;
    if (t.len > 0 && frond__buf_append(&a->out, t.data, t.len) != 0)
      frond_log(FROND_LOG_ERROR, "audit log: out of memory");
    a->take.len = 0;
  }
}

/* What was dropped since last told, as a line of the log itself. */
static void tell_drops(frond__audit *a) {
  uint64_t d = atomic_load(&a->dropped);
  size_t len0 = a->out.len;
  if (d == a->drops_told)
    return;
  put_time(&a->out, now_ms(), NULL);
  frond__buf_printf(&a->out,
                    ",\"event\":\"dropped\",\"records\":%llu,"
                    "\"reason\":\"audit_full = drop\"}\n",
                    (unsigned long long)(d - a->drops_told));
  atomic_fetch_add(&a->pending, a->out.len - len0);
  frond_log(FROND_LOG_ERROR,
            "audit log: %llu records dropped (behind by more than "
            "audit_buffer, audit_full = drop)",
            (unsigned long long)(d - a->drops_told));
  a->drops_told = d;
}

/* Write a->out to the file and sync it. A failure leaves the file ending
** with a whole line (what a partial write left of a line is cut off) and
** the rest in a->out, tried again RETRY_MS later. */
static void write_out(frond__audit *a) {
  off_t end = lseek(a->fd, 0, SEEK_END);
  size_t done = 0, keep;
  int e = 0;
  while (done < a->out.len) {
    ssize_t w = write(a->fd, a->out.data + done, a->out.len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      e = w < 0 ? errno : ENOSPC;
      break;
    }
    done += (size_t)w;
  }
  if (e == 0 && fdatasync(a->fd) != 0)
    e = errno, done = 0; /* not known to be on disk: written again */
  keep = done;
  if (e != 0) {
    /* Keep whole lines only; a sync failure keeps nothing as written. */
    while (keep > 0 && a->out.data[keep - 1] != '\n')
      keep--;
    if (end >= 0 && ftruncate(a->fd, end + (off_t)keep) != 0)
      keep = done; /* the tail stays: find skips a torn line */
  }
  if (keep > 0) {
    uint64_t lines = 0;
    const char *p = a->out.data, *lim = p + keep;
    while ((p = memchr(p, '\n', (size_t)(lim - p))) != NULL && p++ < lim)
      lines++;
    atomic_fetch_add(&a->records, lines);
    atomic_fetch_add(&a->bytes, keep);
    atomic_fetch_sub(&a->pending, keep);
    memmove(a->out.data, a->out.data + keep, a->out.len - keep);
    a->out.len -= keep;
  }
  if (e != 0) {
    atomic_fetch_add(&a->write_errors, 1);
    if (!atomic_exchange(&a->failing, 1))
      frond_log(FROND_LOG_ERROR,
                "audit log %s: %s; %s until it can be written (retried every "
                "second)",
                a->path, strerror(e),
                a->refuse ? "IDs are refused (AUDIT_UNAVAILABLE)"
                          : "records are kept up to audit_buffer, then "
                            "dropped");
    a->retry_ms = now_ms() + RETRY_MS;
  } else if (atomic_exchange(&a->failing, 0)) {
    frond_log(FROND_LOG_INFO, "audit log %s: written again", a->path);
  }
}

/* SIGHUP: the path again (logrotate moved the file away). Failing, the
** old file stays in use and the reopen is tried again RETRY_MS later. */
static void reopen(frond__audit *a) {
  int fd = open_log(a->path);
  if (fd < 0) {
    atomic_fetch_add(&a->reopen_failures, 1);
    if (!a->reopen_failing)
      frond_log(FROND_LOG_ERROR,
                "audit log %s: cannot open it again: %s; records go on to the "
                "file open before (retried every second)",
                a->path, strerror(errno));
    a->reopen_failing = 1;
    a->reopen_ms = now_ms() + RETRY_MS;
    return;
  }
  (void)fdatasync(a->fd);
  close(a->fd);
  a->fd = fd;
  a->reopen = 0;
  a->reopen_failing = 0;
  atomic_fetch_add(&a->reopens, 1);
  frond_log(FROND_LOG_INFO, "audit log %s: reopened", a->path);
}

static void *writer(void *arg) {
  frond__audit *a = arg;
  sigset_t all;
  int stop = 0;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  while (!stop) {
    struct timespec ts;
    int64_t now;
    pthread_mutex_lock(&a->lock);
    if (!a->stop && !a->kick && !a->hup) {
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += TICK_MS * 1000000L;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&a->cond, &a->lock, &ts);
    }
    stop = a->stop;
    if (a->hup)
      a->reopen = 1, a->retry_ms = a->reopen_ms = 0;
    a->hup = a->kick = 0;
    pthread_mutex_unlock(&a->lock);
    collect(a, stop);
    tell_drops(a);
    now = now_ms();
    /* What was collected before the SIGHUP goes to the old file first;
    ** if that cannot take it, the new one may. */
    if (a->out.len > 0 &&
        (stop || now >= a->retry_ms || !atomic_load(&a->failing)))
      write_out(a);
    if (a->reopen && (stop || now >= a->reopen_ms)) {
      reopen(a);
      if (!a->reopen && a->out.len > 0)
        write_out(a);
    }
  }
  if (a->out.len > 0)
    frond_log(FROND_LOG_ERROR,
              "audit log %s: %zu bytes of records could not be written at "
              "the stop",
              a->path, a->out.len);
  return NULL;
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
  if ((a->fd = open_log(a->path)) < 0) {
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
  if (pthread_create(&a->thread, NULL, writer, a) != 0) {
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

void frond__audit_close(frond__server *srv, uv_loop_t *loop) {
  frond__audit *a = srv->audit;
  int i;
  if (a == NULL)
    return;
  uv_close((uv_handle_t *)&a->sighup, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
  pthread_mutex_lock(&a->lock);
  a->stop = 1;
  pthread_cond_signal(&a->cond);
  pthread_mutex_unlock(&a->lock);
  pthread_join(a->thread, NULL);
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
