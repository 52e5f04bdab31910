/* SPDX-License-Identifier: Apache-2.0 */
/*
** formats.c -- ID formats in the server, shared by the HTTP and Redis
** fronts: the named formats of the configuration (format.<name>) and the
** built-in UUIDv7, UUIDv4, ULID and ObjectId, issuing them in batches,
** decoding any of them, and their counters.
**
** Formats are built once at start, with the keys read from order_key_file
** or FROND_ORDER_KEY (then wiped): a spec or key problem stops the start.
** Every format is thread-safe, so all workers share them.
**
** Issuing runs on the loop with a source that never waits on the store
** (no_store): what does, a seq format's first use of a period (making the
** period's row and loading its first segment) or a tag whose next segment
** is not loaded yet (the tag's handle, taken without waiting, as segment
** requests do), fails with WOULD_BLOCK and is repeated on libuv's thread
** pool (frond__formats_next_wait, run by the request layer, req.c), as is
** a format whose tag the allocator does not know yet (looked up in the
** store first, within the look-up budget that segment requests share; see
** ids.c).
**
** A keyed format (order numbers, keyed sequences) issues only once its
** key's fingerprint has been checked where the servers sharing its
** numbers meet (frond_format_check): the store when the server has one
** (its numbers' tag lives there, or the fleet's servers share it), else a
** coordinator that keeps facts, else the data directory. At start where
** it can be reached: another fingerprint stops the start (KEY_MISMATCH,
** naming both). Otherwise the first request checks, on the pool, and so
** does the first after the store or the coordinator came back
** (frond__formats_tick): a refused format answers KEY_MISMATCH. And every
** keyed format is checked again on the pool every refresh interval of the
** segment allocator (a minute), so that a record deleted by hand or lost
** with a restore of the store is recorded again, and one changed is seen:
** the format is then refused. Between two checks nothing sees an edit of
** the records: a server started in that window with another key records
** its own, and the older ones are refused at their next check.
*/
#include "core/format_fields.h"
#include "coord/coord.h"
#include "core/core.h"
#include "base/base.h"
#include "server/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name, *spec;
} builtins[FROND__BUILTINS] = {{"uuid7", "uuid7"},
                               {"uuid4", "uuid4"},
                               {"ulid", "ulid"},
                               {"objectid", "objectid"}};

static int named(frond__named_format *nf, const char *name, const char *spec,
                 const frond_order_keys *keys, size_t index, frond_error *err) {
  snprintf(nf->name, sizeof nf->name, "%s", name);
  nf->index = index;
  if (frond_format_create(&nf->f, spec, keys, NULL, NULL, err) != 0)
    return -1;
  nf->kind = frond_format_kind(nf->f);
  nf->stride = frond_format_length(nf->f) + 1;
  return 0;
}

/* The keys: from order_key_file, else FROND_ORDER_KEY when set, else none
** (formats that need one then fail to build, saying where keys come from). */
static int load_keys(const frond__config *cfg, frond_order_keys **keys,
                     frond_error *err) {
  const char *env = getenv(FROND_ORDER_KEY_ENV);
  *keys = NULL;
  if (cfg->order_key_file[0] != '\0')
    return frond_order_keys_load(cfg->order_key_file, keys, err);
  if (env != NULL && env[0] != '\0')
    return frond_order_keys_load(NULL, keys, err);
  return 0;
}

/* An order format of snowflake IDs must hold the layout's IDs: refuse one
** too narrow for today's, warn when IDs will outgrow it. */
static int check_width(const frond__server *srv, const frond__named_format *nf,
                       frond_error *err) {
  const frond_layout *l = &srv->layout;
  unsigned low = l->node_bits + l->seq_bits;
  int64_t max = frond_format_max_id(nf->f), now = frond_clock_realtime(NULL);
  uint64_t units = now > l->epoch_ms
                       ? (uint64_t)(now - l->epoch_ms) / (uint64_t)l->unit_ms
                       : 0;
  uint64_t today = (units + 1) << low, last;
  char when[40];
  if (nf->kind != FROND_FORMAT_ORDER || frond_format_tag(nf->f) != NULL)
    return 0;
  if (today > (uint64_t)max)
    return frond__fail(err, FROND_EID_TOO_LARGE,
                       "format.%s holds snowflake IDs up to %lld, and this "
                       "layout's are above %llu today (%u digits, %u base32 "
                       "characters): give it more (19 digits or 13 base32 "
                       "characters hold every ID), or tag= for segment IDs",
                       nf->name, (long long)max, (unsigned long long)today,
                       frond_order_width(today, 10),
                       frond_order_width(today, 32));
  last = l->time_bits + low >= 63 ? (uint64_t)INT64_MAX
                                  : (UINT64_C(1) << (l->time_bits + low)) - 1;
  if (last > (uint64_t)max) {
    frond__format_rfc3339(l->epoch_ms + (int64_t)(((uint64_t)max + 1) >> low) *
                                            l->unit_ms,
                          when, sizeof when);
    frond_log(FROND_LOG_WARN,
              "format.%s: its order numbers hold this layout's snowflake IDs "
              "until %s only; after that it fails with ID_TOO_LARGE",
              nf->name, when);
  }
  return 0;
}

#ifdef FROND_TEST_HOOKS
/* FROND_TEST_ID128_KEY=<32 hex digits>: every UUIDv7, ULID and ObjectId
** generator draws its random bits under this key, so that two servers
** draw equal ones (test_formats_server, the mistakes suite). */
static void test_random_key(void) {
  const char *v = getenv("FROND_TEST_ID128_KEY");
  uint8_t key[16];
  unsigned b;
  if (v == NULL || strlen(v) != 32)
    return;
  for (int i = 0; i < 16; i++) {
    if (sscanf(v + 2 * i, "%2x", &b) != 1)
      return;
    key[i] = (uint8_t)b;
  }
  frond__id128_fixed_key(key);
  frond_log(FROND_LOG_WARN, "FROND_TEST_ID128_KEY: random bits of UUIDs, "
                            "ULIDs and ObjectIds are not random");
}
#endif

int frond__formats_create(frond__server *srv, frond_error *err) {
  const frond__config *cfg = &srv->cfg;
  frond_order_keys *keys = NULL;
  frond_error e = {0, ""};
  size_t i;
  int rc = 0;
#ifdef FROND_TEST_HOOKS
  test_random_key();
#endif
  for (i = 0; i < FROND__BUILTINS; i++)
    if (named(&srv->builtin[i], builtins[i].name, builtins[i].spec, NULL,
              (size_t)cfg->nformats + i, err) != 0)
      return err->code;
  if (cfg->nformats == 0)
    return 0;
  if (load_keys(cfg, &keys, &e) != 0)
    return frond__fail(err, e.code, "order keys: %s", e.message);
  srv->formats = calloc((size_t)cfg->nformats, sizeof *srv->formats);
  if (srv->formats == NULL) {
    frond_order_keys_free(keys);
    return frond__fail(err, FROND_ENOMEM, "out of memory");
  }
  for (i = 0; i < (size_t)cfg->nformats && rc == 0; i++) {
    const frond__cfg_format *c = &cfg->formats[i];
    frond__named_format *nf = &srv->formats[i];
    srv->nformats++;
    if (named(nf, c->name, c->spec, keys, i, &e) != 0)
      rc = frond__fail(err, e.code, "format.%s: %s%s", c->name, e.message,
                       e.code == FROND_EKEY_INVALID && keys == NULL
                           ? " (set order_key_file, or FROND_ORDER_KEY)"
                           : "");
    else if ((nf->kind == FROND_FORMAT_SEQ || frond_format_tag(nf->f)) &&
             strcmp(cfg->store, "none") == 0)
      rc =
          frond__fail(err, FROND_EINVAL,
                      "format.%s takes segment IDs, and store = none", c->name);
    else
      rc = check_width(srv, nf, err);
  }
  frond_order_keys_free(keys);
  return rc;
}

/* Check nf's key where its numbers' servers meet (see the head comment).
** Blocks: start-up, or a pool thread. */
static int fact_check(frond__server *srv, const frond__named_format *nf,
                      frond_error *err) {
  frond_format_source src = {srv->gen, atomic_load(&srv->seg), NULL, 0};
  /* A tag's numbers are checked in its store; snowflake IDs' where the
  ** node IDs are claimed when the coordinator keeps facts, else in the
  ** store, else in the data directory (frond_format_check). */
  int in_store = frond__format_scope(nf->f, &src)[0] != '\0' ||
                 !frond__coord_has_facts(srv->coord);
  if (in_store && srv->seg_enabled && src.seg == NULL)
    return frond__ids_seg_missing(srv, err);
  return frond_format_check(nf->f, &src, srv->coord,
                            srv->seg_enabled ? NULL : srv->cfg.data_dir, err);
}

/* Whether the place the formats' records are in answers: the store's
** last call worked (with a store), the coordinator confirms the node. */
static int facts_place_up(frond__server *srv) {
  frond_seg *seg = atomic_load(&srv->seg);
  frond_seg_stats ss;
  int up = srv->coord != NULL && frond_coord_state(srv->coord) == 0;
  if (!srv->seg_enabled || !up)
    return up;
  if (seg == NULL)
    return 0;
  frond_seg_stats_get(seg, &ss);
  return ss.store_ok;
}

int frond__formats_check(frond__server *srv, frond_error *err) {
  frond_error e = {0, ""};
  size_t i;
  srv->facts_up = facts_place_up(srv);
  for (i = 0; i < srv->nformats; i++) {
    const frond__named_format *nf = &srv->formats[i];
    int rc;
    if (frond_format_checked(nf->f))
      continue;
    if ((rc = fact_check(srv, nf, &e)) == FROND_EKEY_MISMATCH)
      return frond__fail(err, rc, "format.%s: %s", nf->name, e.message);
    if (rc != 0) { /* the store or coordinator: the first request checks */
      frond_log(FROND_LOG_WARN,
                "format.%s: its key is checked on first use: %s: %s", nf->name,
                frond_err_name(rc), e.message);
    } else {
      char fp[32];
      frond_format_fingerprint(nf->f, fp, sizeof fp);
      frond_log(FROND_LOG_INFO,
                "format.%s: key fingerprint %s, the one recorded for its "
                "numbers",
                nf->name, fp);
    }
  }
  return 0;
}

/* The periodic check of every keyed format's record (the head comment):
** one at a time, on libuv's pool of the main loop (which waits for it
** before the server is freed). Main thread: recheck_busy, recheck_at. */
static uv_work_t recheck;
static int recheck_busy;
static int64_t recheck_at;

static int64_t recheck_ms(void) {
  frond_seg_options o;
#ifdef FROND_TEST_HOOKS
  const char *v = getenv("FROND_TEST_FACT_RECHECK_MS");
  if (v != NULL && atoi(v) > 0)
    return atoi(v);
#endif
  frond_seg_options_init(&o);
  return o.refresh_ms;
}

static void recheck_work(uv_work_t *w) {
  frond__server *srv = w->data;
  frond_error e = {0, ""};
  size_t i;
  for (i = 0; i < srv->nformats; i++) {
    const frond__named_format *nf = &srv->formats[i];
    int was, rc;
    if (frond_format_fingerprint(nf->f, NULL, 0) == 0)
      continue;
    was = frond_format_checked(nf->f);
    rc = fact_check(srv, nf, &e);
    if (rc == FROND_EKEY_MISMATCH && was)
      frond_log(FROND_LOG_ERROR,
                "format.%s: refused from now on: KEY_MISMATCH: %s", nf->name,
                e.message);
    else if (rc == 0 && !was)
      frond_log(FROND_LOG_INFO, "format.%s: its key agrees with the record",
                nf->name);
  }
}

static void recheck_done(uv_work_t *w, int status) {
  (void)w;
  (void)status;
  recheck_busy = 0;
}

/* Recheck the formats whose record is in a place that came back: the
** store (or the coordinator, without a store); and every refresh
** interval, all of them. */
void frond__formats_tick(frond__server *srv) {
  int up = facts_place_up(srv), back = up && !srv->facts_up;
  int64_t now = frond__mono_ns();
  size_t i;
  srv->facts_up = up;
  if (back)
    for (i = 0; i < srv->nformats; i++)
      if (frond_format_fingerprint(srv->formats[i].f, NULL, 0) > 0)
        frond_format_recheck(srv->formats[i].f);
  if (srv->nformats == 0 || recheck_busy)
    return;
  if (recheck_at == 0)
    recheck_at = now + recheck_ms() * 1000000;
  if (now < recheck_at)
    return;
  recheck_at = now + recheck_ms() * 1000000;
  recheck.data = srv;
  if (uv_queue_work(uv_default_loop(), &recheck, recheck_work, recheck_done) ==
      0)
    recheck_busy = 1;
}

void frond__formats_free(frond__server *srv) {
  size_t i;
  for (i = 0; i < srv->nformats; i++)
    frond_format_free(srv->formats[i].f);
  free(srv->formats);
  srv->formats = NULL;
  srv->nformats = 0;
  for (i = 0; i < FROND__BUILTINS; i++) {
    frond_format_free(srv->builtin[i].f);
    srv->builtin[i].f = NULL;
  }
}

int frond__formats_worker_init(frond__worker *w) {
  size_t n = w->srv->nformats + FROND__BUILTINS;
  w->format_counts = calloc(n, sizeof *w->format_counts);
  return w->format_counts != NULL ? 0 : -1;
}

void frond__formats_worker_free(frond__worker *w) {
  free(w->format_counts);
  w->format_counts = NULL;
  frond__buf_free(&w->strs);
}

const frond__named_format *frond__formats_find(const frond__server *srv,
                                               const char *name, size_t len) {
  size_t i;
  for (i = 0; i < srv->nformats; i++)
    if (strlen(srv->formats[i].name) == len &&
        memcmp(srv->formats[i].name, name, len) == 0)
      return &srv->formats[i];
  return NULL;
}

const char *frond__formats_missing(const char *name, size_t len, char *msg,
                                   size_t cap) {
  snprintf(msg, cap,
           "no format named '%.*s' (the server's formats are its "
           "format.<name> keys)",
           (int)(len > 64 ? 64 : len), name);
  return msg;
}

/* Does nf take IDs from the segment allocator? */
static int needs_seg(const frond__named_format *nf) {
  return nf->kind == FROND_FORMAT_SEQ || frond_format_tag(nf->f) != NULL;
}

/* Whether nf's strings are made of the generator's snowflake IDs, which
** wait for the coordinator's check: not a segment tag's numbers, not the
** random numbers of uuid4 or of uuid7, ulid, objectid with scope=random. */
static int uses_snowflake(const frond__named_format *nf) {
  if (needs_seg(nf))
    return 0;
  switch (nf->kind) {
  case FROND_FORMAT_UUID7:
  case FROND_FORMAT_ULID:
  case FROND_FORMAT_OBJECTID:
    return frond_format_node_scoped(nf->f);
  case FROND_FORMAT_UUID4:
    return 0;
  default:
    return 1;
  }
}

/* frond_format_next_n, or with a caller's key frond_format_next_for. */
static int next_n(const frond__named_format *nf, const frond_format_source *src,
                  const char *key, size_t key_len, size_t n, char *out,
                  frond_error *err) {
  if (key != NULL)
    return frond_format_next_for(nf->f, src, key, key_len, n, out, nf->stride,
                                 err);
  return frond_format_next_n(nf->f, src, n, out, nf->stride, err);
}

int frond__formats_next(frond__worker *w, const frond__named_format *nf,
                        const char *key, size_t key_len, size_t n,
                        frond_error *err) {
  frond_format_source src = {w->srv->gen, atomic_load(&w->srv->seg), NULL, 1};
  int r;
  if (needs_seg(nf) && src.seg == NULL)
    return frond__ids_seg_missing(w->srv, err);
  if (uses_snowflake(nf) && (r = frond__ids_coord_unchecked(w->srv, err)) != 0)
    return r;
  w->strs.len = 0;
  if (frond__buf_reserve(&w->strs, n * nf->stride) != 0)
    return frond__fail(err, FROND_ENOMEM, "out of memory for %zu strings", n);
  r = next_n(nf, &src, key, key_len, n, w->strs.data, err);
  /* Not checked yet (or again, after a reconnect): on the pool. */
  if (r == FROND_EINVAL && !frond_format_checked(nf->f))
    return frond__fail(err, FROND_EWOULD_BLOCK,
                       "format.%s: its key is checked first", nf->name);
  if (r == 0) {
    w->strs.len = n * nf->stride;
    FROND__INC(w->format_counts[nf->index], n);
  }
  return r;
}

/* ---------------------------------------------------- off the event loop */

/* On a pool thread, for the request layer (req.c): the same call, allowed
** to wait on the store. A tag the allocator does not know (the format's
** own, or a seq format's base) is looked up in the store once, within the
** budget, and the call repeated. */
int frond__formats_next_wait(frond__server *srv, const frond__named_format *nf,
                             const char *key, size_t key_len, size_t n,
                             char *out, int *admitted, frond_error *err) {
  frond_format_source src = {srv->gen, atomic_load(&srv->seg), NULL, 0};
  const char *tag = frond_format_tag(nf->f);
  int rc;
  if (!*admitted) { /* WOULD_BLOCK on the loop */
    if (!frond_format_checked(nf->f) && (rc = fact_check(srv, nf, err)) != 0 &&
        rc != FROND_EKEY_MISMATCH)
      return rc;
    rc = next_n(nf, &src, key, key_len, n, out, err);
    if (rc != FROND_ETAG_NOT_FOUND || tag == NULL ||
        !frond__ids_lookup_admit(srv))
      return rc;
    *admitted = 1;
  }
  if ((rc = frond__ids_lookup_tag(srv, tag, err)) == 0)
    rc = next_n(nf, &src, key, key_len, n, out, err);
  return rc;
}

/* -------------------------------------------------------------- decoding */

/* No shape fits: the server's own order and seq formats may read it. One
** that does answers; several are ambiguous. */
static int decode_named(frond__server *srv, const char *s, size_t len,
                        frond_format_value *v, frond_error *err) {
  frond_format_value tmp;
  frond_error e = {0, ""}, first = {0, ""};
  char names[200] = "";
  size_t i, found = 0, nl = 0;
  for (i = 0; i < srv->nformats; i++) {
    const frond__named_format *nf = &srv->formats[i];
    int rc;
    if (nf->kind != FROND_FORMAT_ORDER && nf->kind != FROND_FORMAT_SEQ)
      continue;
    rc = frond_format_decode(nf->f, s, len, &tmp, &e);
    if (rc == 0) {
      if (found++ == 0)
        *v = tmp;
      nl += (size_t)snprintf(names + nl,
                             nl < sizeof names ? sizeof names - nl : 0, "%s%s",
                             found > 1 ? ", " : "", nf->name);
    } else if (rc != FROND_EID_INVALID && first.code == 0) {
      first = e; /* a number of this format, and something else wrong */
    }
  }
  if (found == 1)
    return 0;
  if (found > 1)
    return frond__fail(err, FROND_EID_INVALID,
                       "'%.*s' reads as a number of several formats (%s): "
                       "name one (?format=, or ID.DECODE's format argument)",
                       (int)(len > 64 ? 64 : len), s, names);
  if (first.code != 0)
    return frond__fail(err, first.code, "%s", first.message);
  return -1;
}

int frond__formats_decode(frond__server *srv, const frond__named_format *nf,
                          const char *s, size_t len, frond__field *out,
                          size_t *n, frond_error *err) {
  frond_format_value v;
  int rc;
  if (nf != NULL)
    rc = frond_format_decode(nf->f, s, len, &v, err);
  else if ((rc = frond_format_decode_any(s, len, &v, err)) == FROND_EID_INVALID)
    rc = decode_named(srv, s, len, &v, err) == 0 ? 0 : err->code;
  if (rc != 0)
    return rc;
  return frond__format_fields(&v, s, len, &srv->layout, out, n, err);
}

/* ---------------------------------------------------------------- metrics */

static uint64_t count_sum(const frond__server *srv, size_t index) {
  uint64_t s = 0;
  int i;
  for (i = 0; i < srv->nworkers; i++)
    if (srv->workers[i].format_counts != NULL)
      s += FROND__GET(srv->workers[i].format_counts[index]);
  return s;
}

void frond__formats_metrics(frond__server *srv, frond__buf *b) {
  size_t i;
  frond__buf_printf(b, "# HELP frond_format_strings_total ID strings issued, "
                       "by format (built-in or format.<name>) and kind.\n"
                       "# TYPE frond_format_strings_total counter\n");
  for (i = 0; i < srv->nformats + FROND__BUILTINS; i++) {
    const frond__named_format *nf =
        i < srv->nformats ? &srv->formats[i] : &srv->builtin[i - srv->nformats];
    frond__buf_printf(b,
                      "frond_format_strings_total{format=\"%s\",kind=\"%s\"} "
                      "%llu\n",
                      nf->name, frond_format_kind_name(nf->kind),
                      (unsigned long long)count_sum(srv, nf->index));
  }
}
