/* SPDX-License-Identifier: Apache-2.0 */
/*
** chaos_check.c -- the fault-injection suite's checker.
**
** This file contains the program that decides whether a run kept Frond's
** promises, from the files chaos_load wrote (every ID every node answered,
** per client stream, in arrival order, with the time of each request) and
** the fence samples chaos_fence took. Jepsen's unique-ids checker is the
** model; the rules are Frond's:
**
**   duplicates   no snowflake ID is answered twice across the whole fleet,
**                no segment ID twice for one tag (counted as IDs answered
**                more than once, and as answers beyond the first)
**   order        per client stream, snowflake IDs of one node ID and
**                segment IDs of one tag strictly increase; and after a
**                node restarts, its new IDs are above everything its
**                earlier incarnations issued (same node ID, same tag)
**   above fence  no snowflake ID's time is above the fence its node ID
**                had at the coordinator: the first fence sample taken after
**                the ID was received must cover it (fences only grow, so
**                this never blames an ID wrongly)
**   floor        after a fleet-wide barrier (a layout change: every node
**                stopped, the new layout recorded with its floor), every
**                snowflake ID of the nodes it names is above every one they
**                issued before it (counted with order)
**
** It scales to hundreds of millions of IDs in bounded memory: duplicates
** are found by spreading (ID, where) pairs over 256 bucket files by a hash
** of the ID, then sorting one bucket at a time; the order and fence checks
** stream through the files.
**
**   chaos_check MANIFEST
**
** The manifest, one item per line:
**   tmp DIR                          where the bucket files go
**   layout NAME SPEC                 a snowflake layout in use
**   incarnation NODE SPAWN_NS LAYOUT a node process started then (monotonic)
**   stream NAME PREFIX KIND TAG NODE PREFIX.ids / PREFIX.rec of chaos_load
**   fence FILE                       samples of chaos_fence
**   static NODE                      a node with a static node ID: no fence
**   barrier NS NODE[,NODE...]        incarnations of these nodes started at
**                                    or after NS (monotonic) issue above
**                                    everything those before NS issued
**
** Output: up to a few examples of each kind of violation, one per line,
** starting with "example"; then "key value" lines (ids, snowflake_ids,
** segment_ids, requests, failed_requests, duplicates, duplicate_answers,
** order, order_restart, order_floor, above_fence, unfenced, fence_samples)
** and
** "failed CODE n" per kind of failed request (Frond's codes, or the
** client's CONNECT, TIMEOUT, CLOSED, GARBAGE, STATUS).
*/
#include "frond.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 256
#define MAX_LAYOUTS 256
#define MAX_NODES 64
#define MAX_INC 1024
#define MAX_STREAMS 1024
#define MAX_GROUPS 32
#define MAX_KEYS 32 /* node IDs one stream may see */
#define MAX_BARRIERS 256
#define EXAMPLES 5

typedef struct rec {
  int64_t sent_ns, recv_ns, n, code;
} rec;

typedef struct incarnation {
  int64_t spawn_ns;
  int layout;
} incarnation;

typedef struct node {
  char label[64];
  incarnation inc[MAX_INC];
  int ninc;
  int fixed; /* a static node ID: no coordinator, no fence */
} node;

typedef struct stream {
  char name[64], prefix[4096];
  int node, group; /* group 0: snowflake; i > 0: tag i */
} stream;

/* A fleet-wide barrier: nodes (a bit per node index) started from at_ns on
** issue above `below`, the largest snowflake ID of their incarnations
** started before it. */
typedef struct barrier {
  int64_t at_ns, below;
  uint64_t nodes;
} barrier;

typedef struct sample {
  int64_t at_ns, node, fence_ms;
} sample;

/* One answered ID and where it was: stream << 40 | position. */
typedef struct where {
  int64_t id;
  uint64_t loc;
} where;

static char tmpdir[4096];
static frond_layout layouts[MAX_LAYOUTS];
static char layout_names[MAX_LAYOUTS][64];
static int nlayouts;
static node nodes[MAX_NODES];
static int nnodes;
static stream streams[MAX_STREAMS];
static int nstreams;
static char groups[MAX_GROUPS][130]; /* groups[0] = "" (snowflake) */
static int ngroups = 1;
static sample *samples;
static size_t nsamples;
static int have_fence;
static barrier barriers[MAX_BARRIERS];
static int nbarriers;
static int64_t t0_ns = INT64_MAX;

static void die(const char *what, const char *arg) {
  fprintf(stderr, "chaos_check: %s%s%s\n", what, arg ? ": " : "",
          arg ? arg : "");
  exit(2);
}

static FILE *open_part(const stream *s, const char *ext) {
  char path[4200];
  FILE *f;
  snprintf(path, sizeof path, "%s.%s", s->prefix, ext);
  if (!(f = fopen(path, "rb")))
    die("cannot open", path);
  return f;
}

static int find_node(const char *label) {
  for (int i = 0; i < nnodes; i++)
    if (strcmp(nodes[i].label, label) == 0)
      return i;
  if (nnodes == MAX_NODES)
    die("too many nodes", NULL);
  snprintf(nodes[nnodes].label, sizeof nodes[nnodes].label, "%.*s",
           (int)sizeof nodes[nnodes].label - 1, label); /* cut if longer */
  return nnodes++;
}

static int find_group(const char *kind, const char *tag) {
  if (strcmp(kind, "snowflake") == 0)
    return 0;
  if (strcmp(kind, "segment") != 0)
    die("kind is snowflake or segment", kind);
  for (int i = 1; i < ngroups; i++)
    if (strcmp(groups[i], tag) == 0)
      return i;
  if (ngroups == MAX_GROUPS)
    die("too many tags", NULL);
  snprintf(groups[ngroups], sizeof groups[0], "%.*s", (int)sizeof groups[0] - 1,
           tag); /* cut if longer */
  return ngroups++;
}

static int cmp_sample(const void *a, const void *b) {
  const sample *x = a, *y = b;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  return x->at_ns < y->at_ns ? -1 : x->at_ns > y->at_ns;
}

static void read_fence(const char *path) {
  FILE *f = fopen(path, "rb");
  size_t cap = 0;
  sample s;
  if (!f)
    die("cannot open", path);
  while (fread(&s, sizeof s, 1, f) == 1) {
    if (nsamples == cap) {
      cap = cap ? cap * 2 : 4096;
      if (!(samples = realloc(samples, cap * sizeof *samples)))
        die("out of memory", NULL);
    }
    samples[nsamples++] = s;
  }
  fclose(f);
  if (nsamples > 1)
    qsort(samples, nsamples, sizeof *samples, cmp_sample);
  have_fence = 1;
}

static void read_manifest(const char *path) {
  FILE *f = fopen(path, "r");
  char line[8192], a[4096], b[4096], nm[64], c[256], d[256], e[256];
  long long n;
  if (!f)
    die("cannot open", path);
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "tmp %4095s", a) == 1) {
      snprintf(tmpdir, sizeof tmpdir, "%s", a);
    } else if (sscanf(line, "layout %63s %4095s", nm, b) == 2) {
      frond_error err;
      if (nlayouts == MAX_LAYOUTS)
        die("too many layouts", NULL);
      if (frond_layout_parse(b, &layouts[nlayouts], &err) != 0)
        die("bad layout", b);
      snprintf(layout_names[nlayouts++], sizeof layout_names[0], "%s", nm);
    } else if (sscanf(line, "incarnation %63s %lld %63s", nm, &n, b) == 3) {
      node *nd = &nodes[find_node(nm)];
      int l = -1;
      for (int i = 0; i < nlayouts; i++)
        if (strcmp(layout_names[i], b) == 0)
          l = i;
      if (l < 0)
        die("unknown layout", b);
      if (nd->ninc == MAX_INC)
        die("too many incarnations", nm);
      nd->inc[nd->ninc].spawn_ns = n;
      nd->inc[nd->ninc++].layout = l;
      if (n < t0_ns)
        t0_ns = n;
    } else if (sscanf(line, "stream %63s %4095s %255s %255s %255s", nm, b, c, d,
                      e) == 5) {
      stream *s = &streams[nstreams];
      if (nstreams == MAX_STREAMS)
        die("too many streams", NULL);
      snprintf(s->name, sizeof s->name, "%s", nm);
      snprintf(s->prefix, sizeof s->prefix, "%s", b);
      s->group = find_group(c, d);
      s->node = find_node(e);
      nstreams++;
    } else if (sscanf(line, "fence %4095s", a) == 1) {
      read_fence(a);
    } else if (sscanf(line, "static %63s", nm) == 1) {
      nodes[find_node(nm)].fixed = 1;
    } else if (sscanf(line, "barrier %lld %4095s", &n, a) == 2) {
      barrier *br = &barriers[nbarriers];
      if (nbarriers == MAX_BARRIERS)
        die("too many barriers", NULL);
      br->at_ns = n;
      br->below = INT64_MIN;
      br->nodes = 0;
      for (char *p = strtok(a, ","); p; p = strtok(NULL, ","))
        br->nodes |= UINT64_C(1) << find_node(p);
      nbarriers++;
    } else if (line[0] != '#' && line[0] != '\n') {
      die("bad manifest line", line);
    }
  }
  fclose(f);
  if (!tmpdir[0])
    die("the manifest names no tmp directory", NULL);
}

/* The incarnation of a node that answered a request sent at sent_ns: the
** last one started before it (an earlier one was reaped before a later one
** was started, so a request sent later cannot reach it). */
static int incarnation_of(const node *nd, int64_t sent_ns) {
  int k = 0;
  while (k + 1 < nd->ninc && nd->inc[k + 1].spawn_ns <= sent_ns)
    k++;
  return k;
}

/* ---- duplicates ---------------------------------------------------------- */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  x *= UINT64_C(0xc4ceb3fe1a85ec53);
  return x ^ (x >> 33);
}

static int cmp_where(const void *a, const void *b) {
  const where *x = a, *y = b;
  int gx = streams[x->loc >> 40].group, gy = streams[y->loc >> 40].group;
  if (x->id != y->id)
    return x->id < y->id ? -1 : 1;
  if (gx != gy)
    return gx < gy ? -1 : 1;
  return x->loc < y->loc ? -1 : x->loc > y->loc;
}

/* Describe where the pos-th ID of a stream came from. */
static void describe(uint64_t loc, char *buf, size_t len) {
  const stream *s = &streams[loc >> 40];
  uint64_t pos = loc & ((UINT64_C(1) << 40) - 1), seen = 0;
  FILE *f = open_part(s, "rec");
  rec r;
  int64_t at = 0;
  while (fread(&r, sizeof r, 1, f) == 1) {
    if (seen + (uint64_t)r.n > pos) {
      at = r.recv_ns;
      break;
    }
    seen += (uint64_t)r.n;
  }
  fclose(f);
  snprintf(buf, len, "%s[%" PRIu64 "] at +%.3fs", s->name, pos,
           (double)(at - t0_ns) / 1e9);
}

static void find_duplicates(long long *dups, long long *extra) {
  FILE *b[BUCKETS];
  char path[4200];
  where *all = NULL;
  size_t cap = 0;
  int shown = 0;
  for (int i = 0; i < BUCKETS; i++) {
    snprintf(path, sizeof path, "%s/bucket.%03d", tmpdir, i);
    if (!(b[i] = fopen(path, "w+b")))
      die("cannot create", path);
    setvbuf(b[i], NULL, _IOFBF, 1 << 16);
  }
  for (int si = 0; si < nstreams; si++) {
    FILE *f = open_part(&streams[si], "ids");
    int64_t id;
    uint64_t pos = 0;
    while (fread(&id, sizeof id, 1, f) == 1) {
      where w = {id, (uint64_t)si << 40 | pos++};
      uint64_t h = mix((uint64_t)id ^ (uint64_t)streams[si].group << 56);
      if (fwrite(&w, sizeof w, 1, b[h >> 56]) != 1)
        die("cannot write a bucket file", NULL);
    }
    fclose(f);
  }
  *dups = *extra = 0;
  for (int i = 0; i < BUCKETS; i++) {
    long size;
    size_t n, j, k;
    fflush(b[i]);
    size = ftell(b[i]);
    n = (size_t)size / sizeof(where);
    if (n > cap) {
      cap = n;
      if (!(all = realloc(all, cap * sizeof *all)))
        die("out of memory", NULL);
    }
    rewind(b[i]);
    if (n && fread(all, sizeof *all, n, b[i]) != n)
      die("cannot read a bucket file", NULL);
    fclose(b[i]);
    snprintf(path, sizeof path, "%s/bucket.%03d", tmpdir, i);
    remove(path);
    if (n > 1)
      qsort(all, n, sizeof *all, cmp_where);
    for (j = 0; j < n; j = k) {
      int g = streams[all[j].loc >> 40].group;
      for (k = j + 1; k < n && all[k].id == all[j].id &&
                      streams[all[k].loc >> 40].group == g;
           k++)
        ;
      if (k - j < 2)
        continue;
      (*dups)++;
      *extra += (long long)(k - j - 1);
      if (shown++ < EXAMPLES) {
        char w1[256], w2[256];
        describe(all[j].loc, w1, sizeof w1);
        describe(all[j + 1].loc, w2, sizeof w2);
        printf("example duplicate %s %" PRId64 " x%zu: %s; %s\n",
               g ? groups[g] : "snowflake", all[j].id, k - j, w1, w2);
      }
    }
  }
  free(all);
}

/* ---- order and fence ----------------------------------------------------- */

/* Per stream and key: the last ID, and (cached) the largest ID that
** earlier incarnations issued under the key. */
typedef struct key_last {
  int64_t key, last, before;
  int inc;
} key_last;

/* The fence of node ID `nid` at the first poll that began at or after
** at_ns; the last one when none did; -1 when there is none at all. */
static int64_t fence_after(int64_t nid, int64_t at_ns) {
  size_t lo = 0, hi = nsamples, first;
  while (lo < hi) { /* first sample of this node ID */
    size_t mid = (lo + hi) / 2;
    if (samples[mid].node < nid)
      lo = mid + 1;
    else
      hi = mid;
  }
  first = lo;
  if (first == nsamples || samples[first].node != nid)
    return -1;
  hi = first;
  while (hi < nsamples && samples[hi].node == nid)
    hi++;
  {
    size_t end = hi;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (samples[mid].at_ns < at_ns)
        lo = mid + 1;
      else
        hi = mid;
    }
    return samples[lo < end ? lo : end - 1].fence_ms;
  }
}

/* The key an ID is ordered under: its node ID (snowflake) or 0. */
static int64_t key_of(const stream *s, int layout, int64_t id,
                      frond_fields *f) {
  if (s->group != 0)
    return 0;
  if (frond_decode(&layouts[layout], id, f, NULL) != 0)
    return -1;
  return (int64_t)f->node;
}

/* Per node, tag and node ID: the largest ID of each incarnation. */
typedef struct inc_max {
  int node, group, inc;
  int64_t key, max;
} inc_max;

static inc_max *maxima;
static size_t nmaxima, capmaxima;

static inc_max *max_slot(int nd, int group, int inc, int64_t key) {
  for (size_t i = 0; i < nmaxima; i++)
    if (maxima[i].node == nd && maxima[i].group == group &&
        maxima[i].inc == inc && maxima[i].key == key)
      return &maxima[i];
  if (nmaxima == capmaxima) {
    capmaxima = capmaxima ? capmaxima * 2 : 64;
    if (!(maxima = realloc(maxima, capmaxima * sizeof *maxima)))
      die("out of memory", NULL);
  }
  maxima[nmaxima] = (inc_max){nd, group, inc, key, INT64_MIN};
  return &maxima[nmaxima++];
}

/* The largest ID that earlier incarnations of a node issued under a key. */
static int64_t max_before(int nd, int group, int inc, int64_t key) {
  int64_t m = INT64_MIN;
  for (size_t i = 0; i < nmaxima; i++)
    if (maxima[i].node == nd && maxima[i].group == group &&
        maxima[i].inc < inc && maxima[i].key == key && maxima[i].max > m)
      m = maxima[i].max;
  return m;
}

/* The latest barrier for node nd at or before spawn_ns, or -1. */
static int barrier_of(int nd, int64_t spawn_ns) {
  int b = -1;
  for (int i = 0; i < nbarriers; i++)
    if ((barriers[i].nodes >> nd & 1) && barriers[i].at_ns <= spawn_ns &&
        (b < 0 || barriers[i].at_ns > barriers[b].at_ns))
      b = i;
  return b;
}

/* After pass 0: what each barrier's nodes issued before it. */
static void barrier_maxima(void) {
  for (int b = 0; b < nbarriers; b++)
    for (size_t i = 0; i < nmaxima; i++) {
      const inc_max *m = &maxima[i];
      if (m->group == 0 && (barriers[b].nodes >> m->node & 1) &&
          nodes[m->node].inc[m->inc].spawn_ns < barriers[b].at_ns &&
          m->max > barriers[b].below)
        barriers[b].below = m->max;
    }
}

typedef struct totals {
  long long ids, sf, seg, requests, failed, order, order_restart, order_floor,
      above, unfenced;
  long long codes[64]; /* failed requests by code: 0..31 Frond's, 32.. the
                          client's own */
} totals;

static const char *code_name(int i) {
  static const char *client[] = {"",       "CONNECT", "TIMEOUT",
                                 "CLOSED", "GARBAGE", "STATUS"};
  if (i < 32)
    return frond_err_name(-i);
  return i - 32 < 6 ? client[i - 32] : "OTHER";
}

/* One pass over every stream. pass 0 collects the maxima of each
** incarnation; pass 1 counts order and fence violations. */
static void walk(int pass, totals *t) {
  int shown_order = 0, shown_restart = 0, shown_fence = 0, shown_floor = 0;
  for (int si = 0; si < nstreams; si++) {
    const stream *s = &streams[si];
    const node *nd = &nodes[s->node];
    FILE *fi = open_part(s, "ids"), *fr = open_part(s, "rec");
    key_last last[MAX_KEYS];
    int nlast = 0;
    uint64_t pos = 0;
    rec r;
    while (fread(&r, sizeof r, 1, fr) == 1) {
      int inc = incarnation_of(nd, r.sent_ns);
      int layout = nd->ninc ? nd->inc[inc].layout : 0;
      int br = nd->ninc && s->group == 0
                   ? barrier_of(s->node, nd->inc[inc].spawn_ns)
                   : -1;
      int64_t fence = -2, fence_key = -1;
      if (pass == 1) {
        t->requests++;
        t->failed += r.code != 0;
        if (r.code < 0 && r.code > -32)
          t->codes[-r.code]++;
        else if (r.code > 0)
          t->codes[32 + (r.code < 6 ? r.code : 6)]++;
      }
      for (int64_t i = 0; i < r.n; i++, pos++) {
        frond_fields f;
        int64_t id, key, prev, before;
        int k;
        if (fread(&id, sizeof id, 1, fi) != 1)
          die("an ID file is shorter than its records", s->name);
        key = key_of(s, layout, id, &f);
        if (pass == 0) {
          inc_max *m = max_slot(s->node, s->group, inc, key);
          if (id > m->max)
            m->max = id;
          continue;
        }
        t->ids++;
        if (s->group == 0)
          t->sf++;
        else
          t->seg++;
        for (k = 0; k < nlast && last[k].key != key; k++)
          ;
        if (k == nlast) {
          if (nlast == MAX_KEYS)
            die("a stream saw too many node IDs", s->name);
          last[nlast].key = key;
          last[nlast].inc = -1;
          last[nlast++].last = INT64_MIN;
        }
        if (last[k].inc != inc) {
          last[k].inc = inc;
          last[k].before = max_before(s->node, s->group, inc, key);
        }
        prev = last[k].last;
        last[k].last = id;
        before = last[k].before;
        if (id <= prev || id <= before) {
          t->order++;
          if (id <= before && id > prev)
            t->order_restart++;
          if (id <= prev ? shown_order++ < EXAMPLES
                         : shown_restart++ < EXAMPLES)
            printf("example order %s[%" PRIu64 "] at +%.3fs: %" PRId64
                   " after %" PRId64 "\n",
                   s->name, pos, (double)(r.recv_ns - t0_ns) / 1e9, id,
                   id <= prev ? prev : before);
        }
        if (br >= 0 && id <= barriers[br].below) {
          t->order += id > prev && id > before; /* once per ID */
          t->order_floor++;
          if (shown_floor++ < EXAMPLES)
            printf("example floor %s[%" PRIu64 "] at +%.3fs: %" PRId64
                   " not above %" PRId64 ", issued before the barrier at "
                   "+%.3fs\n",
                   s->name, pos, (double)(r.recv_ns - t0_ns) / 1e9, id,
                   barriers[br].below,
                   (double)(barriers[br].at_ns - t0_ns) / 1e9);
        }
        if (!have_fence || s->group != 0 || nd->fixed)
          continue;
        if (fence == -2 || fence_key != key) {
          fence = fence_after(key, r.recv_ns);
          fence_key = key;
        }
        if (fence < 0) {
          t->unfenced++;
        } else if (f.unix_ms > fence) {
          t->above++;
          if (shown_fence++ < EXAMPLES)
            printf("example fence %s[%" PRIu64 "] at +%.3fs: %" PRId64
                   " (node %" PRId64 ", time %" PRId64
                   ") above the fence %" PRId64 " (%+" PRId64 " ms)\n",
                   s->name, pos, (double)(r.recv_ns - t0_ns) / 1e9, id, key,
                   f.unix_ms, fence, f.unix_ms - fence);
        }
      }
    }
    fclose(fi);
    fclose(fr);
  }
}

int main(int argc, char **argv) {
  totals t;
  long long dups, extra;
  if (argc != 2)
    die("usage: chaos_check MANIFEST", NULL);
  read_manifest(argv[1]);
  if (nlayouts == 0) {
    frond_error err;
    frond_layout_parse(FROND_LAYOUT_DEFAULT, &layouts[0], &err);
    nlayouts = 1;
  }
  if (t0_ns == INT64_MAX)
    t0_ns = 0;
  memset(&t, 0, sizeof t);
  find_duplicates(&dups, &extra);
  walk(0, &t);
  barrier_maxima();
  walk(1, &t);
  printf("ids %lld\nsnowflake_ids %lld\nsegment_ids %lld\nrequests %lld\n"
         "failed_requests %lld\nduplicates %lld\nduplicate_answers %lld\n"
         "order %lld\norder_restart %lld\norder_floor %lld\n",
         t.ids, t.sf, t.seg, t.requests, t.failed, dups, extra, t.order,
         t.order_restart, t.order_floor);
  if (have_fence)
    printf("above_fence %lld\nunfenced %lld\nfence_samples %zu\n", t.above,
           t.unfenced, nsamples);
  for (int i = 1; i < 64; i++)
    if (t.codes[i])
      printf("failed %s %lld\n", code_name(i), t.codes[i]);
  free(samples);
  free(maxima);
  return 0;
}
