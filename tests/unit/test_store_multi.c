/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_store_multi.c -- the multi: store: block interleaving gives every
** member IDs no other member can give; a database listed in another order,
** with another count, twice, or opened as a plain store is refused; and
** what that refusal prevents: two nodes listing the databases in another
** order (the check off) serve the same IDs.
*/
#include "testutil.h"

#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *dir;

static int setup(void **state) {
  (void)state;
  dir = tmpdir_make();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tmpdir_remove(dir);
  return 0;
}

static void quiet(void *ctx, int level, const char *msg) {
  (void)ctx;
  (void)level;
  (void)msg;
}

/* "multi:sqlite://DIR/x.db|sqlite://DIR/y.db..." for the names given. */
static void multi_uri(char *out, size_t n, const char *names) {
  size_t k = (size_t)snprintf(out, n, "multi:");
  const char *p;
  for (p = names; *p; p++)
    k += (size_t)snprintf(out + k, n - k, "%ssqlite://%s/%c.db",
                          p == names ? "" : "|", dir, *p);
}

static void test_mapping_is_disjoint_and_contiguous(void **state) {
  int n, i;
  int64_t b, q, g, prev;
  (void)state;
  for (n = 1; n <= 4; n++)
    for (b = 1; b <= 7; b++) {
      /* Global blocks in order: q*n + i, each starting b after the last:
      ** the members tile the ID line without a gap or an overlap. */
      prev = 1 - b;
      for (q = 0; q < 30; q++)
        for (i = 0; i < n; i++) {
          assert_int_equal(frond__multi_map(1 + q * b, b, i, n, &g), 0);
          assert_int_equal(g, prev + b);
          prev = g;
        }
      if (b > 1) /* a range off a block boundary has no global place */
        assert_int_equal(frond__multi_map(2, b, 0, n, &g), -1);
    }
  assert_int_equal(frond__multi_map(1, 1, 2, 2, &g), -1);
  assert_int_equal(frond__multi_map(INT64_MAX / 2, 1000, 1, 2, &g), -1);
  /* A new tag's rows: every member's first block at or above start, and
  ** no more than one round of blocks past it. */
  for (n = 1; n <= 3; n++)
    for (b = 1; b <= 5; b++)
      for (q = 1; q < 60; q++) {
        int64_t l = frond__multi_local_start(q, b, n);
        assert_true(l >= 1 && (l - 1) % b == 0);
        for (i = 0; i < n; i++) {
          assert_int_equal(frond__multi_map(l, b, i, n, &g), 0);
          assert_true(g >= q && g < q + 2 * n * b);
        }
      }
  assert_int_equal(frond__multi_local_start(INT64_MAX, 1000, 3), -1);
}

static void test_uri_grammar(void **state) {
  frond_multi_uri u;
  frond_error e = {0, ""};
  const char *pg = "multi:sqlite:a.db|postgresql://h1:5432,h2:5432/ids"
                   "?target_session_attrs=read-write|mysql://u:p@h/ids";
  char many[2048];
  int i, k;
  (void)state;
  assert_int_equal(frond__store_multi_parse(pg, &u, &e), 0);
  assert_int_equal(u.n, 3);
  assert_int_equal(u.len[0], strlen("sqlite:a.db"));
  /* The comma of a PostgreSQL host list stays inside its member. */
  assert_memory_equal(pg + u.start[1], "postgresql://h1:5432,h2:5432/ids", 32);
  assert_memory_equal(pg + u.start[2], "mysql://u:p@h/ids", u.len[2]);
  static const char *const bad[] = {
      "multi:",
      "multi:sqlite:a.db",
      "multi:sqlite:a.db|",
      "multi:|sqlite:a.db",
      "multi:sqlite:a.db||sqlite:b.db",
      "multi:sqlite:a.db|multi:sqlite:b.db|sqlite:c.db",
      "multi:sqlite:a.db|sqlite::memory:",
      "multi:sqlite:a.db|redis://h/0",
      "multi:sqlite:a.db|mysql://u:secret@h",
  };
  for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
    e.message[0] = '\0';
    assert_int_equal(frond__store_multi_parse(bad[i], &u, &e),
                     FROND_ESTORE_URI);
    assert_true(e.message[0] != '\0');
    assert_null(strstr(e.message, "secret"));
  }
  k = snprintf(many, sizeof(many), "multi:sqlite:0.db");
  for (i = 1; i <= FROND_STORE_MULTI_MAX; i++)
    k += snprintf(many + k, sizeof(many) - (size_t)k, "|sqlite:%d.db", i);
  assert_int_equal(frond__store_multi_parse(many, &u, &e), FROND_ESTORE_URI);
}

static void test_uri_shown_without_passwords(void **state) {
  char out[300];
  (void)state;
  frond__store_uri_shown("multi:postgresql://u:pw1@h/db|sqlite:a.db|mysql:/"
                         "/u:pw2@h:3306/db",
                         out, sizeof(out));
  assert_string_equal(out, "multi:postgresql://u:***@h/db|sqlite:a.db|"
                           "mysql://u:***@h:3306/db");
  frond__store_uri_shown("postgresql://u:pw@h/db", out, sizeof(out));
  assert_string_equal(out, "postgresql://u:***@h/db");
  frond__store_uri_shown("multi:mysql://u:pw@h/db|sqlite:b.db", out, 12);
  assert_null(strstr(out, "pw"));
}

static int open_store(const char *names, frond_error *e) {
  char uri[1400];
  frond_store *st;
  int rc;
  multi_uri(uri, sizeof(uri), names);
  rc = frond_store_open(&st, uri, e);
  if (rc == 0)
    frond_store_close(st);
  return rc;
}

static void test_identity_is_checked(void **state) {
  frond_error e = {0, ""};
  char plain[600];
  frond_store *st;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  assert_int_equal(open_store("ab", &e), 0);
  assert_int_equal(open_store("ab", &e), 0); /* the same again: fine */
  assert_int_equal(open_store("ba", &e), FROND_ESTORE_MEMBER);
  assert_non_null(strstr(e.message, "same order"));
  assert_int_equal(open_store("abc", &e), FROND_ESTORE_MEMBER);
  assert_int_equal(open_store("aa", &e), FROND_ESTORE_MEMBER);
  snprintf(plain, sizeof(plain), "sqlite://%s/a.db", dir);
  assert_int_equal(frond_store_open(&st, plain, &e), FROND_ESTORE_MEMBER);
  assert_non_null(strstr(e.message, "member 0 of 2"));
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

enum { DRAWS = 4000 };

/* Two allocators, as two nodes, over the same two databases listed in
** opposite orders; the IDs they serve, interleaved; the duplicates. */
static size_t swapped_nodes(const char *one, const char *two, int *refused) {
  static int64_t ids[2 * DRAWS];
  char u1[1400], u2[1400];
  frond_seg *s1, *s2;
  frond_seg_options o;
  frond_store *st;
  frond_error e = {0, ""};
  size_t i, dups = 0;
  multi_uri(u1, sizeof(u1), one);
  multi_uri(u2, sizeof(u2), two);
  assert_int_equal(frond_store_open(&st, u1, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 50, 1, NULL, &e), 0);
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms = 30000;
  assert_int_equal(frond_seg_open(&s1, u1, &o, &e), 0);
  *refused = frond_seg_open(&s2, u2, &o, &e);
  if (*refused != 0) {
    frond_seg_close(s1);
    return 0;
  }
  for (i = 0; i < DRAWS; i++) {
    assert_int_equal(frond_seg_next(s1, "t", 1, &ids[2 * i], &e), 0);
    assert_int_equal(frond_seg_next(s2, "t", 1, &ids[2 * i + 1], &e), 0);
  }
  frond_seg_close(s1);
  frond_seg_close(s2);
  qsort(ids, 2 * DRAWS, sizeof(ids[0]), cmp_i64);
  for (i = 1; i < 2 * DRAWS; i++)
    dups += ids[i] == ids[i - 1];
  return dups;
}

static void test_swapped_order_would_serve_duplicates(void **state) {
  size_t dups;
  int refused;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  /* The check off: the interleave alone cannot tell the orders apart. */
  frond__store_multi_nocheck = 1;
  dups = swapped_nodes("cd", "dc", &refused);
  frond__store_multi_nocheck = 0;
  assert_int_equal(refused, 0);
  print_message("swapped order, check off: %zu duplicates in %d IDs\n", dups,
                2 * DRAWS);
  assert_true(dups > 0);
  /* The check on: the second node does not start. */
  dups = swapped_nodes("ef", "fe", &refused);
  print_message("swapped order, check on: refused (%d), %zu duplicates\n",
                refused, dups);
  assert_int_equal(refused, FROND_ESTORE_MEMBER);
  /* The same order on both: no duplicate. */
  assert_int_equal(swapped_nodes("gh", "gh", &refused), 0);
  assert_int_equal(refused, 0);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* A member of three down: the others serve (each records the other's
** blocks), its health says so, nothing repeats. Members are told apart by
** their rollback guard, one per member whichever of the allocator's
** connections (one per loader) reaches it. */
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static const void *members_seen[3]; /* under seen_mu: loaders write it */
static atomic_int member_down;

static int fault(frond_store *st, const char *op) {
  int k;
  if (st->methods == &frond__store_multi || strcmp(op, "alloc") != 0)
    return 0;
  pthread_mutex_lock(&seen_mu);
  for (k = 0; k < 3 && members_seen[k] != NULL &&
              members_seen[k] != (const void *)st->guard;
       k++)
    ;
  if (k < 3 && members_seen[k] == NULL)
    members_seen[k] = st->guard;
  pthread_mutex_unlock(&seen_mu);
  return atomic_load(&member_down) && k == 1 ? FROND_ESTORE : 0;
}

static int all_members_seen(void) {
  int all;
  pthread_mutex_lock(&seen_mu);
  all = members_seen[2] != NULL;
  pthread_mutex_unlock(&seen_mu);
  return all;
}

static void test_one_member_down(void **state) {
  enum { PHASE = 3000 };
  static int64_t ids[3 * PHASE];
  char uri[1400];
  frond_seg *seg;
  frond_seg_options o;
  frond_seg_stats ss;
  frond_store *st;
  frond_error e = {0, ""};
  int i;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  multi_uri(uri, sizeof(uri), "ijw");
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "d", 20, 1, NULL, &e), 0);
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms = 30000;
  o.retry_min_ms = 1;
  o.retry_max_ms = 5;
  assert_int_equal(frond_seg_open(&seg, uri, &o, &e), 0);
  frond__store_fault = fault;
  for (i = 0; i < PHASE; i++)
    assert_int_equal(frond_seg_next(seg, "d", 1, &ids[i], &e), 0);
  assert_true(all_members_seen()); /* every member served */
  atomic_store(&member_down, 1);
  for (; i < 2 * PHASE; i++)
    assert_int_equal(frond_seg_next(seg, "d", 1, &ids[i], &e), 0);
  frond_seg_stats_get(seg, &ss);
  assert_int_equal(ss.store_members, 3);
  /* All but the one down (a bit per member). */
  assert_int_equal(__builtin_popcountll(ss.store_members_up), 2);
  atomic_store(&member_down, 0);
  frond__store_fault = NULL; /* member 1 back (after its backoff) */
  for (; i < 3 * PHASE; i++)
    assert_int_equal(frond_seg_next(seg, "d", 1, &ids[i], &e), 0);
  frond_seg_close(seg);
  qsort(ids, 3 * PHASE, sizeof(ids[0]), cmp_i64);
  for (i = 1; i < 3 * PHASE; i++)
    assert_true(ids[i] != ids[i - 1]);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* ---- listing in pages ---- */

static const void *listed_by[8]; /* guard of the member each read was on */
static int nlists, fail_guard_after;
static const void *fail_guard;

static int list_fault(frond_store *st, const char *op) {
  if (st->methods == &frond__store_multi || strcmp(op, "list") != 0)
    return 0;
  if (nlists < 8)
    listed_by[nlists] = st->guard;
  nlists++;
  if (fail_guard != NULL && st->guard == fail_guard && fail_guard_after-- <= 0)
    return FROND_ESTORE;
  return 0;
}

typedef struct listing {
  char tags[64][16];
  int n;
} listing;

static int collect(void *ctx, const char *tag, int64_t step) {
  listing *l = ctx;
  assert_int_equal(step, 5);
  assert_true(l->n < 64);
  snprintf(l->tags[l->n++], sizeof(l->tags[0]), "%s", tag);
  return 0;
}

/* Pages of 7 until a short one; the listing's return code. */
static int list_all(frond_store *st, listing *l) {
  frond_error e = {0, ""};
  int rc, got = 7;
  l->n = 0;
  while (got == 7)
    if ((rc = frond__store_tag_page(st, l->n ? l->tags[l->n - 1] : NULL, 7,
                                    collect, l, &got, &e)) != 0)
      return rc;
  return 0;
}

/* A listing in pages reads one member per page (before, every page read
** every member's whole list), each tag once and in order, and stays on
** the member it started on: one that fails halfway fails the listing,
** and the next listing starts on a member that answers. */
static void test_pages_from_one_member(void **state) {
  char uri[1400], tag[16];
  frond_store *st;
  frond_error e = {0, ""};
  listing l;
  int i;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  multi_uri(uri, sizeof(uri), "pq");
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  for (i = 0; i < 50; i++) {
    snprintf(tag, sizeof(tag), "t%02d", i);
    assert_int_equal(frond_store_tag_create(st, tag, 5, 1, NULL, &e), 0);
  }
  frond__store_fault = list_fault;
  nlists = 0;
  assert_int_equal(list_all(st, &l), 0);
  assert_int_equal(l.n, 50);
  for (i = 0; i < 50; i++) {
    snprintf(tag, sizeof(tag), "t%02d", i);
    assert_string_equal(l.tags[i], tag);
  }
  assert_int_equal(nlists, 8); /* 8 pages (7 full, one of 1), one read each */
  for (i = 1; i < 8; i++)
    assert_ptr_equal(listed_by[i], listed_by[0]);
  /* Its member fails after the first page: the listing fails... */
  fail_guard = listed_by[0];
  fail_guard_after = 1;
  assert_int_equal(list_all(st, &l), FROND_ESTORE);
  assert_int_equal(l.n, 7);
  /* ...and the next one is read from the other member, whole. */
  nlists = 0;
  assert_int_equal(list_all(st, &l), 0);
  assert_int_equal(l.n, 50);
  assert_ptr_not_equal(listed_by[0], fail_guard);
  fail_guard = NULL;
  frond__store_fault = NULL;
  frond_store_close(st);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* ---- members that lost allocations, conversions, re-created tags ---- */

/* n IDs of tag from a new allocator over uri (a process of its own). */
static void take(const char *uri, const char *tag, int64_t *out, size_t n) {
  frond_seg *s;
  frond_seg_options o;
  frond_error e = {0, ""};
  size_t i;
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms = 30000;
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  for (i = 0; i < n; i++)
    assert_int_equal(frond_seg_next(s, tag, strlen(tag), &out[i], &e), 0);
  frond_seg_close(s);
}

static size_t dups(int64_t *ids, size_t n) {
  size_t i, d = 0;
  qsort(ids, n, sizeof(*ids), cmp_i64);
  for (i = 1; i < n; i++)
    d += ids[i] == ids[i - 1];
  return d;
}

/* Which members of m served among ids (block (id - 1) / b, modulo m). */
static int served_of(const int64_t *ids, size_t n, int64_t b, int m) {
  int bits = 0;
  size_t i;
  for (i = 0; i < n; i++)
    bits |= 1 << ((ids[i] - 1) / b % m);
  return bits;
}

static int served(const int64_t *ids, size_t n, int64_t b) {
  return served_of(ids, n, b, 2);
}

static void file_copy(const char *from, const char *to) {
  char buf[8192];
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  size_t k;
  assert_non_null(a);
  assert_non_null(b);
  while ((k = fread(buf, 1, sizeof(buf), a)) > 0)
    assert_int_equal(fwrite(buf, 1, k, b), k);
  fclose(a);
  fclose(b);
}

/* Database c (no process has it open) as it was at `saved`, or empty. */
static void put_back(char c, const char *saved) {
  char p[600], q[600];
  static const char *const sfx[] = {"", "-wal", "-shm"};
  size_t i;
  for (i = 0; i < 3; i++) {
    snprintf(p, sizeof(p), "%s/%c.db%s", dir, c, sfx[i]);
    unlink(p);
  }
  if (saved != NULL) {
    snprintf(q, sizeof(q), "%s/%c.db", dir, c);
    file_copy(saved, q);
  }
}

/* 3,000 IDs from a single database, then the same database as member 0
** of a multi: store and the tag completed on a new member: nothing twice
** (the new member's rows once started at `start`: 1,000 IDs twice). */
static void test_conversion_starts_above(void **state) {
  static int64_t ids[6000];
  char single[600], uri[1400];
  frond_store *st;
  frond_error e = {0, ""};
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  snprintf(single, sizeof(single), "sqlite://%s/k.db", dir);
  assert_int_equal(frond_store_open(&st, single, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 500, 1, NULL, &e), 0);
  frond_store_close(st);
  take(single, "t", ids, 3000);
  multi_uri(uri, sizeof(uri), "kl");
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  /* Below what member 0 issued as a single database: refused. */
  assert_int_equal(frond_store_tag_create(st, "t", 500, 1, NULL, &e),
                   FROND_ETAG_FLOOR);
  assert_int_equal(frond_store_tag_create(st, "t", 500, 0, NULL, &e), 0);
  frond_store_close(st);
  take(uri, "t", ids + 3000, 3000);
  assert_int_equal(served(ids + 3000, 3000, 500), 3);
  assert_int_equal(dups(ids, 6000), 0);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* A member replaced by an empty database is refused (the others serve)
** until repaired; a member restored from an older copy too; after each
** repair all serve, and no ID comes twice. Three members: a store of
** two stops while one does not serve (test_store_marks). */
static void test_member_that_lost_allocations(void **state) {
  static int64_t ids[5 * 2000];
  char uri[1400], saved[600];
  frond_store *st;
  frond_error e = {0, ""};
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  multi_uri(uri, sizeof(uri), "mnx");
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 50, 0, NULL, &e), 0);
  frond_store_close(st);
  take(uri, "t", ids, 2000);
  assert_int_equal(served_of(ids, 2000, 50, 3), 7);
  /* Member 1 replaced by an empty database. */
  put_back('n', NULL);
  assert_int_equal(frond_store_open(&st, uri, &e), 0); /* the others serve */
  assert_int_equal(frond_store_tag_create(st, "t", 50, 0, NULL, &e),
                   FROND_ESTORE_MEMBER_STALE);
  assert_non_null(strstr(e.message, "member 1"));
  frond_store_close(st);
  take(uri, "t", ids + 2000, 2000);
  assert_int_equal(served_of(ids + 2000, 2000, 50, 3), 5); /* not member 1 */
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_member_repair(st, 1, NULL, NULL, &e), 0);
  frond_store_close(st);
  take(uri, "t", ids + 4000, 2000);
  assert_int_equal(served_of(ids + 4000, 2000, 50, 3), 7);
  /* Member 1 restored from a copy taken before 2,000 more IDs. */
  snprintf(saved, sizeof(saved), "%s/n-saved.db", dir);
  {
    char p[600];
    snprintf(p, sizeof(p), "%s/n.db", dir);
    file_copy(p, saved);
  }
  take(uri, "t", ids + 6000, 2000);
  put_back('n', saved);
  take(uri, "t", ids + 8000, 2000);
  assert_int_equal(served_of(ids + 8000, 2000, 50, 3), 5);
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_member_repair(st, 1, NULL, NULL, &e), 0);
  assert_int_equal(frond_store_member_repair(st, 3, NULL, NULL, &e),
                   FROND_EINVAL);
  frond_store_close(st);
  assert_int_equal(dups(ids, 10000), 0);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* A tag deleted and created again with another step through a separate
** connection (the admin API's) is served by an allocator that served the
** old one, at once; the new IDs are above the old. */
static void test_recreated_with_another_step(void **state) {
  static int64_t ids[2 * 1000];
  char uri[1400];
  frond_seg *s;
  frond_seg_options o;
  frond_store *st;
  frond_error e = {0, ""};
  size_t i;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  multi_uri(uri, sizeof(uri), "op");
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 100, 0, NULL, &e), 0);
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms = 10000;
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  for (i = 0; i < 1000; i++)
    assert_int_equal(frond_seg_next(s, "t", 1, &ids[i], &e), 0);
  assert_int_equal(frond_store_tag_delete(st, "t", &e), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 30, 0, NULL, &e), 0);
  assert_int_equal(frond_seg_refresh_tag(s, "t", 1, &e), 0);
  for (; i < 2000; i++)
    assert_int_equal(frond_seg_next(s, "t", 1, &ids[i], &e), 0);
  assert_true(ids[1999] > ids[999]);
  frond_seg_close(s);
  frond_store_close(st);
  assert_int_equal(dups(ids, 2000), 0);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

/* A range larger than a block is refused at once, and never leaves the
** tag unable to load (a request for a larger segment did, until restart). */
static void test_range_over_block(void **state) {
  static int64_t ids[300];
  char uri[1400];
  frond_seg *s;
  frond_seg_options o;
  frond_store *st;
  frond_error e = {0, ""};
  int64_t start;
  size_t i;
  (void)state;
  frond_log_set(quiet, NULL, FROND_LOG_ERROR);
  multi_uri(uri, sizeof(uri), "qr");
  assert_int_equal(frond_store_open(&st, uri, &e), 0);
  assert_int_equal(frond_store_tag_create(st, "t", 100, 0, NULL, &e), 0);
  frond_store_close(st);
  frond_seg_options_init(&o);
  o.wait_ms = o.first_wait_ms = 10000;
  assert_int_equal(frond_seg_open(&s, uri, &o, &e), 0);
  assert_int_equal(frond_seg_next(s, "t", 1, &ids[0], &e), 0);
  assert_int_equal(frond_seg_range(s, "t", 1, 1000, &start, &e),
                   FROND_ECOUNT_INVALID);
  assert_non_null(strstr(e.message, "at most 100"));
  for (i = 1; i < 300; i++)
    assert_int_equal(frond_seg_next(s, "t", 1, &ids[i], &e), 0);
  assert_int_equal(frond_seg_range(s, "t", 1, 100, &start, &e), 0);
  frond_seg_close(s);
  assert_int_equal(dups(ids, 300), 0);
  frond_log_set(NULL, NULL, FROND_LOG_INFO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mapping_is_disjoint_and_contiguous),
      cmocka_unit_test(test_uri_grammar),
      cmocka_unit_test(test_uri_shown_without_passwords),
      cmocka_unit_test(test_identity_is_checked),
      cmocka_unit_test(test_swapped_order_would_serve_duplicates),
      cmocka_unit_test(test_one_member_down),
      cmocka_unit_test(test_pages_from_one_member),
      cmocka_unit_test(test_conversion_starts_above),
      cmocka_unit_test(test_member_that_lost_allocations),
      cmocka_unit_test(test_recreated_with_another_step),
      cmocka_unit_test(test_range_over_block),
  };
  return frond_run_tests(tests, setup, teardown);
}
