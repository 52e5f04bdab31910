/* SPDX-License-Identifier: Apache-2.0 */
/*
** audit_record.c -- the audit log's lines (see audit.c): one record as a
** JSON line, the aggregates of single IDs flushed as lines. Called by the
** loops (audit.c) and by the writer (audit_writer.c), under the lock of
** the buffer a line goes into.
*/
#include "base/base.h"
#include "server/audit_shared.h"
#include "server/json.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static const char *const op_names[] = {"singles", "batch", "range"};

void frond__audit_put_time(frond__buf *b, int64_t ms, tcache *c) {
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

/* The underlying ID of a format's string, when it has one: a segment or
** snowflake ID (decimal, base62, base32, order numbers, and uuid7, ulid,
** objectid with scope=node). A seq number counts within its period's own
** tag, which the line does not name: none. 1, or 0. */
int frond__audit_id_of(const frond__named_format *nf, const char *s, size_t len,
                       int64_t *id) {
  frond_format_value v;
  frond_error err = {0, ""};
  if (nf->kind == FROND_FORMAT_SEQ ||
      frond_format_decode(nf->f, s, strnlen(s, len), &v, &err) != 0 ||
      !v.has_id)
    return 0;
  *id = v.id;
  return 1;
}

/* One record: (time, who, what, first, last, count) as a JSON line into
** b. For formats, first_s and last_s are the strings; first and last the
** underlying IDs, when they have some (has_ids: known already, else read
** back from the strings); a format over snowflake IDs (no tag) names the
** node and layout as snowflake lines do. tc: the caller's time cache. */
void frond__audit_record(frond__audit *a, frond__buf *b, int64_t ms, int op,
                         const agg *g, tcache *tc) {
  int64_t first = g->first, last = g->last;
  int ids = g->kind != FORMAT || g->has_ids;
  const char *tag = g->kind == FORMAT ? frond_format_tag(g->nf->f) : NULL;
  if (!ids && g->first_s[0] != '\0')
    ids = frond__audit_id_of(g->nf, g->first_s, STR_MAX, &first) &&
          frond__audit_id_of(g->nf, g->last_s, STR_MAX, &last);
  frond__audit_put_time(b, ms, tc);
  put_str(b, "client", g->client, strlen(g->client));
  put_peer(b, &g->peer, g->peerlen);
  put_raw(b, "proto", g->proto);
  put_raw(b, "op", op_names[op]);
  if (g->kind == FORMAT) {
    put_str(b, "format", g->nf->name, strlen(g->nf->name));
    if (tag != NULL)
      put_str(b, "tag", tag, strlen(tag));
    if (g->taglen > 0)
      put_str(b, "key", g->tag, g->taglen);
  }
  if (g->kind == SNOWFLAKE || (g->kind == FORMAT && ids && tag == NULL)) {
    put_num(b, "node", (int64_t)a->srv->node);
    put_raw(b, "layout", a->layout);
  } else if (g->kind == SEGMENT) {
    put_str(b, "tag", g->tag, g->taglen);
  }
  if (g->kind == FORMAT && g->first_s[0] != '\0') {
    put_str(b, "first_string", g->first_s, strlen(g->first_s));
    put_str(b, "last_string", g->last_s, strlen(g->last_s));
  }
  if (ids) {
    put_num(b, "first", first);
    put_num(b, "last", last);
  }
  put_num(b, "count", (int64_t)g->count);
  if (!g->answered)
    frond__buf_append(b, ",\"answered\":false", 17);
  frond__buf_append(b, "}\n", 2);
}

/* Append what b gained since len0 to the pending count, or take it back
** (drop) when audit_full = drop and the buffer is full. With ws->lock. */
void frond__audit_account(frond__audit *a, frond__buf *b, size_t len0) {
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

void frond__audit_flush_aggs(frond__audit *a, wstate *ws) {
  unsigned i;
  for (i = 0; i < SLOTS && ws->nused > 0; i++) {
    agg *g = &ws->slot[i];
    size_t len0 = ws->buf.len;
    if (!g->used)
      continue;
    frond__audit_record(a, &ws->buf, ws->second * 1000, 0, g, &ws->tc);
    frond__audit_account(a, &ws->buf, len0);
    g->used = 0;
    ws->nused--;
  }
}
