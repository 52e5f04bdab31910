/* SPDX-License-Identifier: Apache-2.0 */
/*
** coord_record.c -- which coordinator hands out which node IDs, recorded
** once where every server of a fleet meets: its store.
**
** A coordinator keeps node IDs apart among its own nodes only. Two
** coordinators on one store (the store's default lease on one server,
** ZooKeeper on another; two lease databases; a configuration copied
** without its coordinator line) each hand out node 0, and their servers
** issue the same IDs. So a coordinator's identity (frond__coord_identity:
** a random ID recorded once in the coordinator itself, which every
** spelling of one ZooKeeper ensemble or one lease database reads back)
** is recorded in the store with the node IDs it serves, and a server
** whose coordinator is not the recorded one for an overlapping range is
** refused (COORDINATOR_MISMATCH) before it issues a snowflake ID.
**
** The record is a log in the store's facts (frond_meta), each entry a
** fact that is written once and never changed:
**
**   coord.record.1   add <identity> <lo> <hi> <floor_ms> <scope> <uri>
**   coord.record.2   add ...
**   coord.record.3   set ...
**
** Read in order, the entries give the current coordinators: an "add"
** makes its coordinator current for lo..hi unless another coordinator is
** current for an overlapping range (then it is void: no process writes
** such an entry, see below, and every reader ignores it alike); a "set"
** (a deliberate change, frond node coordinator --set) first takes every
** current coordinator overlapping lo..hi away, and its nodes start above
** floor_ms, the old coordinator's highest fence.
**
** Why no two coordinators hand out one node ID to servers of one store:
** a server checks before it issues: it reads the log to its first empty
** slot N; a current coordinator other than its own for an overlapping
** range refuses it; its own current for its range lets it through; with
** neither, it writes its "add" into slot N. A fact is written only when
** nothing is recorded under its name (one INSERT wins a race), and the
** writer reads back what is recorded: of two servers writing slot N at
** once exactly one entry lands there, and the other reads it, applies it
** and judges again from slot N + 1. So every entry was written by a
** process that had read every entry before it, and was valid then;
** two starts with different coordinators on an empty store cannot both
** pass: the second entry to land finds the first. A later start of a
** coordinator that was replaced reads the "set" that replaced it.
*/
#include "coord/coord.h"
#include "base/base.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* Entries read at most: a fleet records one per coordinator and change. */
#define REC_MAX 1000

static int is_hex_id(const char *s, size_t n) {
  size_t i;
  if (n != FROND__COORD_ID_LEN)
    return 0;
  for (i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

/* The next space-separated word of *p: its start and length, or -1. */
static int word(const char **p, const char **w, size_t *n) {
  const char *s = *p;
  if (*s == ' ')
    return -1;
  *w = s;
  while (*s != '\0' && *s != ' ')
    s++;
  *n = (size_t)(s - *w);
  if (*n == 0)
    return -1;
  *p = *s == ' ' ? s + 1 : s;
  return 0;
}

static int number(const char *w, size_t n, int64_t *out) {
  int64_t v = 0;
  size_t i;
  if (n == 0 || n > 18)
    return -1;
  for (i = 0; i < n; i++) {
    if (w[i] < '0' || w[i] > '9')
      return -1;
    v = v * 10 + (w[i] - '0');
  }
  *out = v;
  return 0;
}

int frond__coord_rec_parse(const char *s, frond__coord_rec *r) {
  const char *w;
  size_t n;
  int64_t lo, hi, floor;
  memset(r, 0, sizeof *r);
  if (word(&s, &w, &n) != 0)
    return -1;
  if (n == 3 && memcmp(w, "add", 3) == 0)
    r->set = 0;
  else if (n == 3 && memcmp(w, "set", 3) == 0)
    r->set = 1;
  else
    return -1;
  if (word(&s, &w, &n) != 0 || !is_hex_id(w, n))
    return -1;
  memcpy(r->id, w, n);
  if (word(&s, &w, &n) != 0 || number(w, n, &lo) != 0 ||
      word(&s, &w, &n) != 0 || number(w, n, &hi) != 0 || hi < lo ||
      word(&s, &w, &n) != 0 || number(w, n, &floor) != 0)
    return -1;
  r->lo = (uint64_t)lo;
  r->hi = (uint64_t)hi;
  r->floor_ms = floor;
  if (word(&s, &w, &n) != 0 || n >= sizeof r->scope)
    return -1;
  memcpy(r->scope, w, n);
  /* The URI, as shown (no password): the rest, for messages only. */
  if (*s == '\0' || strlen(s) >= sizeof r->uri)
    return -1;
  snprintf(r->uri, sizeof r->uri, "%s", s);
  return 0;
}

int frond__coord_rec_format(const frond__coord_rec *r, char *buf, size_t len) {
  /* A URI that would not fit the fact's 256 bytes is cut: it is only
  ** named in messages, the identity is what is compared. */
  int k =
      snprintf(buf, len, "%s %s %" PRIu64 " %" PRIu64 " %" PRId64 " %s %.*s",
               r->set ? "set" : "add", r->id, r->lo, r->hi, r->floor_ms,
               r->scope, 120, r->uri[0] ? r->uri : "-");
  return k < 0 || (size_t)k >= len ? -1 : 0;
}

static int overlap(const frond__coord_rec *a, uint64_t lo, uint64_t hi) {
  return a->lo <= hi && lo <= a->hi;
}

/* Apply entry e to the current coordinators (cur, *n of them). */
static void apply(frond__coord_rec *cur, size_t *n, const frond__coord_rec *e) {
  size_t i, k;
  if (e->set) {
    for (i = k = 0; i < *n; i++)
      if (!overlap(&cur[i], e->lo, e->hi))
        cur[k++] = cur[i];
    *n = k;
  } else {
    for (i = 0; i < *n; i++) {
      if (strcmp(cur[i].id, e->id) != 0 && overlap(&cur[i], e->lo, e->hi))
        return; /* void: another coordinator serves part of it */
      if (strcmp(cur[i].id, e->id) == 0 && cur[i].lo == e->lo &&
          cur[i].hi == e->hi)
        return; /* already current */
    }
  }
  if (*n < REC_MAX)
    cur[(*n)++] = *e;
}

/* Read entries from slot *k on until the first empty one (left in *k),
** applying each. */
static int read_on(const frond__coord_book *b, frond__coord_rec *cur, size_t *n,
                   int *k, frond_error *err) {
  char name[64], v[300];
  frond__coord_rec e;
  int rc;
  for (; *k <= REC_MAX; (*k)++) {
    snprintf(name, sizeof name, FROND__COORD_REC_PREFIX "%d", *k);
    v[0] = '\0';
    if ((rc = b->get(b->ctx, name, v, sizeof v, err)) != 0)
      return rc;
    if (v[0] == '\0')
      return 0;
    if (frond__coord_rec_parse(v, &e) != 0)
      return frond__fail(err, FROND_ECOORDINATOR_MISMATCH,
                         "%s records %s = \"%.120s\", which this version does "
                         "not read: the fleet's coordinators cannot be "
                         "checked",
                         b->where, name, v);
    apply(cur, n, &e);
  }
  return frond__fail(err, FROND_ECOORDINATOR_MISMATCH,
                     "%s records more than %d entries %s*: more than this "
                     "version reads",
                     b->where, REC_MAX, FROND__COORD_REC_PREFIX);
}

int frond__coord_rec_state(const frond__coord_book *b, frond__coord_rec **out,
                           size_t *n, int *next, frond_error *err) {
  frond__coord_rec *cur = calloc(REC_MAX, sizeof *cur);
  int k = 1, rc;
  *out = NULL;
  *n = 0;
  if (cur == NULL)
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  if ((rc = read_on(b, cur, n, &k, err)) != 0) {
    free(cur);
    return rc;
  }
  *out = cur;
  if (next)
    *next = k;
  return 0;
}

static int refuse(const frond__coord_book *b, const frond__coord_rec *me,
                  const frond__coord_rec *rec, frond_error *err) {
  (void)b;
  if (strcmp(me->uri, rec->uri) == 0)
    return frond__fail(
        err, FROND_ECOORDINATOR_MISMATCH,
        "the store records coordinator %.110s with identity %.8s for node "
        "IDs %" PRIu64 "..%" PRIu64 ", and it now answers with identity "
        "%.8s: its data was lost or replaced (wiped, recreated, restored), "
        "and with it the fences of its nodes. Check that it is the same "
        "coordinator, stop its nodes, then: frond node coordinator --set "
        "URI --from URI (the same URI: the store adopts the new identity "
        "with a floor above any lost fence)",
        rec->uri, rec->id, rec->lo, rec->hi, me->id);
  return frond__fail(
      err, FROND_ECOORDINATOR_MISMATCH,
      "this node's coordinator %.110s (identity %.8s, node IDs %" PRIu64
      "..%" PRIu64 ") is not the one its store records for them: %.110s "
      "(identity %.8s, node IDs %" PRIu64 "..%" PRIu64 "). Two coordinators "
      "would hand out the same node IDs. Name the recorded one, or move the "
      "fleet: frond node coordinator --set",
      me->uri, me->id, me->lo, me->hi, rec->uri, rec->id, rec->lo, rec->hi);
}

/* Append e at slot *k: 0 when it landed, 1 when another entry was there
** (read back into got), else an error. */
static int append(const frond__coord_book *b, const frond__coord_rec *e, int k,
                  frond__coord_rec *got, frond_error *err) {
  char name[64], mine[300], v[300];
  int rc;
  snprintf(name, sizeof name, FROND__COORD_REC_PREFIX "%d", k);
  if (frond__coord_rec_format(e, mine, 256) != 0)
    return frond__fail(err, FROND_EINVAL, "coordinator record too long");
  if ((rc = b->put(b->ctx, name, mine, v, sizeof v, err)) != 0)
    return rc;
  if (strcmp(v, mine) == 0)
    return 0;
  if (frond__coord_rec_parse(v, got) != 0)
    return frond__fail(err, FROND_ECOORDINATOR_MISMATCH,
                       "%s records %s = \"%.120s\", which this version does "
                       "not read",
                       b->where, name, v);
  return 1;
}

int frond__coord_rec_check(const frond__coord_book *b,
                           const frond__coord_rec *me, int64_t *floor_ms,
                           int *recorded, frond_error *err) {
  frond__coord_rec *cur, got;
  size_t n = 0, i;
  int k = 1, rc, mine;
  *floor_ms = 0;
  if (recorded)
    *recorded = 0;
  if ((cur = calloc(REC_MAX, sizeof *cur)) == NULL)
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  for (;;) {
    if ((rc = read_on(b, cur, &n, &k, err)) != 0)
      break;
    /* Judge on everything recorded before slot k. */
    mine = 0;
    for (i = 0; i < n; i++) {
      if (!overlap(&cur[i], me->lo, me->hi))
        continue;
      if (strcmp(cur[i].id, me->id) != 0) {
        rc = refuse(b, me, &cur[i], err);
        goto done;
      }
      if (cur[i].lo <= me->lo && cur[i].hi >= me->hi)
        mine = 1;
      if (cur[i].floor_ms > *floor_ms)
        *floor_ms = cur[i].floor_ms;
    }
    if (mine) {
      rc = 0;
      break;
    }
    /* Ours into slot k; another there first is applied and judged. */
    if ((rc = append(b, me, k, &got, err)) < 0)
      break;
    if (rc == 0) {
      if (recorded)
        *recorded = 1;
      break;
    }
    apply(cur, &n, &got);
    k++;
  }
done:
  free(cur);
  return rc;
}

int frond__coord_rec_set(const frond__coord_book *b, const frond__coord_rec *e,
                         int *slot, frond_error *err) {
  frond__coord_rec *cur, got;
  size_t n = 0;
  int k = 1, rc;
  if ((cur = calloc(REC_MAX, sizeof *cur)) == NULL)
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  /* The end of the log, then the change there: another entry landing
  ** first is read past (the change replaces it, too, where it overlaps). */
  while ((rc = read_on(b, cur, &n, &k, err)) == 0 &&
         (rc = append(b, e, k, &got, err)) == 1)
    k++;
  if (rc == 0 && slot)
    *slot = k;
  free(cur);
  return rc;
}

int frond__coord_identity(frond_coord *c, char *id, size_t len,
                          frond_error *err) {
  static const char hex[] = "0123456789abcdef";
  unsigned char r[FROND__COORD_ID_LEN / 2];
  char mine[FROND__COORD_ID_LEN + 1], rec[257], where[300];
  size_t i;
  int rc;
  if (!frond__coord_has_facts(c))
    return frond__fail(err, FROND_EINVAL,
                       "coordinator %s keeps no facts, so no identity",
                       c != NULL ? c->m->zScheme : "(none)");
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
    return frond__fail(err, FROND_EIO, "no random bytes");
  for (i = 0; i < sizeof r; i++) {
    mine[2 * i] = hex[r[i] >> 4];
    mine[2 * i + 1] = hex[r[i] & 15];
  }
  mine[FROND__COORD_ID_LEN] = '\0';
  /* First writer wins; every later node, on any spelling of the same
  ** coordinator, reads that one back. */
  if ((rc = frond__coord_fact(c, FROND__COORD_ID_FACT, mine, rec, sizeof rec,
                              where, sizeof where, err)) != 0)
    return rc;
  /* Not "try later" (COORD): it will read the same until repaired. */
  if (!is_hex_id(rec, strlen(rec)))
    return frond__fail(err, FROND_ECOORDINATOR_MISMATCH,
                       "%.200s records %s = \"%.64s\", not an identity (%d "
                       "lowercase hex characters): its data was altered, "
                       "and its nodes cannot be checked against the store's "
                       "record until %s is repaired",
                       where, FROND__COORD_ID_FACT, rec, FROND__COORD_ID_LEN,
                       FROND__COORD_ID_FACT);
  snprintf(id, len, "%s", rec);
  return 0;
}
