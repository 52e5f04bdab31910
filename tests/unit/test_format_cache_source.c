/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_format_cache_source.c -- the thread's cache of order numbers
** (format_cache.c) and its sources: a generator or segment allocator
** closed and another made at the same address finds nothing of the old
** one's numbers; a refill that fails hands out what it wrote, counts
** what it drew as skipped, and does not grow; a call without a tag
** never gets a tag's cached numbers, nor a call with one a generator's,
** nor one of another allocator's or no_store's; the one-number call
** checks its buffer and source.
*/
#include "format_testutil.h"

#include "core/core.h"
#include "core/rand_hot.h"

#include <pthread.h>

#define SPEC "order:digits=19,check=damm,key=1"

/* Freed memory is handed out again at once in the sanitizer build too, so
** that a new generator or allocator lands where the closed one was, as it
** does under the C library's allocator. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
}

static frond_format *fmt(frond_order_keys *k, const char *spec) {
  frond_format *f = format_of(spec, k);
  frond_format_skip_check(f);
  return f;
}

static int64_t id_of(const frond_format *f, const char *s) {
  frond_format_value v;
  return frond_format_decode(f, s, strlen(s), &v, NULL) == 0 ? v.id : -1;
}

/* Calls with src until the thread's cache holds numbers (bounded): 1 when
** it does. */
static int fill(frond_format *f, const frond_format_source *src) {
  char buf[64];
  for (int i = 0; i < 20000 && (i < 64 || frond__order_cache_held() == 0); i++)
    if (frond_format_next(f, src, buf, sizeof(buf), NULL) != 0)
      return 0;
  return frond__order_cache_held() > 0;
}

/* A generator of node 1 fills the cache and is closed; one of node 2 is
** made (at the same address, most trials): its first number is node 2's,
** never one of node 1's IDs cached. Bounded: 100 trials. */
static void test_gen_at_old_address(void **state) {
  enum { TRIALS = 100 };
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC);
  int tried = 0, reused = 0, foreign = 0;
  char buf[64];
  (void)state;
  for (int t = 0; t < TRIALS; t++) {
    frond_gen *g1 = format_gen(1), *g2;
    frond_format_source s1 = {g1, NULL, NULL, 0}, s2 = {NULL, NULL, NULL, 0};
    frond_fields fl;
    frond_error err = {0, ""};
    int filled = fill(f, &s1);
    frond_gen_close(g1, NULL);
    if (!filled)
      continue;
    tried++;
    g2 = format_gen(2);
    reused += g2 == g1;
    s2.gen = g2;
    if (frond_format_next(f, &s2, buf, sizeof(buf), &err) != 0)
      fail_msg("node 2: %s", err.message);
    assert_int_equal(
        frond_decode(frond_layout_preset(0), id_of(f, buf), &fl, NULL), 0);
    foreign += fl.node != 2;
    frond_gen_close(g2, NULL);
  }
  print_message("%d trials, %d at the old address, %d numbers of node 1\n",
                tried, reused, foreign);
  assert_true(tried > 0);
  assert_int_equal(foreign, 0);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* A store in dir/name.db with tag "t" counting from 5000. */
static void store_make(const char *dir, const char *name, char *uri,
                       size_t room) {
  frond_store *st;
  frond_error err = {0, ""};
  snprintf(uri, room, "sqlite://%s/%s.db", dir, name);
  assert_int_equal(frond_store_open(&st, uri, &err), 0);
  if (frond_store_tag_create(st, "t", 1000, 5000, NULL, &err) != 0)
    fail_msg("create: %s", err.message);
  frond_store_close(st);
}

static frond_seg *seg_of(const char *uri) {
  frond_seg_options o;
  frond_seg *s;
  frond_error err = {0, ""};
  frond_seg_options_init(&o);
  o.wait_ms = 20000; /* a busy machine commits slowly: wait, not fail */
  o.first_wait_ms = 20000;
  if (frond_seg_open(&s, uri, &o, &err) != 0)
    fail_msg("seg: %s", err.message);
  return s;
}

/* Two stores, tag "t" counting from 5000 in both. A's allocator fills the
** cache and is closed; B's is opened (at A's address, most trials). The
** numbers given for B's tag are B's own IDs: none of them is one B issues
** again later. Bounded: 60 trials of 4 numbers and 400 IDs. */
static void test_seg_at_old_address(void **state) {
  enum { TRIALS = 60, GIVEN = 4, LATER = 400 };
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC);
  int tried = 0, reused = 0, repeated = 0;
  char buf[64];
  (void)state;
  for (int t = 0; t < TRIALS; t++) {
    char *dir = tmpdir_make(), ua[600], ub[600];
    frond_seg *a, *b;
    frond_format_source sa = {NULL, NULL, "t", 0}, sb = {NULL, NULL, "t", 0};
    int64_t given[GIVEN], later[LATER];
    frond_error err = {0, ""};
    int filled;
    store_make(dir, "a", ua, sizeof(ua));
    store_make(dir, "b", ub, sizeof(ub));
    sa.seg = a = seg_of(ua);
    filled = fill(f, &sa);
    frond_seg_close(a);
    if (filled) {
      tried++;
      sb.seg = b = seg_of(ub);
      reused += b == a;
      for (int i = 0; i < GIVEN; i++) {
        if (frond_format_next(f, &sb, buf, sizeof(buf), &err) != 0)
          fail_msg("B: %s", err.message);
        given[i] = id_of(f, buf);
      }
      if (frond_seg_next_n(b, "t", 1, LATER, later, &err) != 0)
        fail_msg("B later: %s", err.message);
      for (int i = 0; i < GIVEN; i++)
        for (int j = 0; j < LATER; j++)
          repeated += given[i] == later[j];
      frond_seg_close(b);
    }
    tmpdir_remove(dir);
  }
  print_message("%d trials, %d at the old address, %d numbers repeated\n",
                tried, reused, repeated);
  assert_true(tried > 0);
  assert_int_equal(repeated, 0);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* The ticker's millisecond, -1 while it does not run: asks made within
** one of them, right after a fill, find the cache's numbers fresh, as the
** common path (format_cache.c) needs them to serve. It reads the ticker
** as that path does, after marking it read as the other calls do. */
static int64_t tick_ms(void) {
  int64_t ms;
  (void)frond__id128_now_ms();
  return frond__now_ms_hot(&ms) ? ms : -1;
}

/* One format, one generator and one allocator, asked in turn with and
** without a tag: a call without one gets a number of the generator's
** IDs, never one of the tag's cached, and a call with the tag one of the
** tag's (5000 on), never a generator's cached. At least 20 turns of 4
** calls, and as many more (up to 2,000) as it takes for 10 turns without
** a tag to ask within the millisecond of the ticker they began in. */
static void test_tag_then_none(void **state) {
  enum { TURNS = 20, MAX_TURNS = 2000, HOT = 10, CALLS = 4 };
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC);
  char *dir = tmpdir_make(), uri[600], buf[64];
  frond_gen *g = format_gen(3);
  frond_seg *s;
  frond_format_source tagged = {g, NULL, "t", 0}, plain = {g, NULL, NULL, 0};
  int filled = 0, wrong = 0, hot = 0, t;
  (void)state;
  store_make(dir, "a", uri, sizeof(uri));
  tagged.seg = plain.seg = s = seg_of(uri);
  for (t = 0; t < MAX_TURNS && (t < TURNS || hot < HOT); t++) {
    const frond_format_source *fill_src = t % 2 ? &plain : &tagged;
    const frond_format_source *ask = t % 2 ? &tagged : &plain;
    int64_t began;
    filled += fill(f, fill_src);
    began = tick_ms();
    for (int i = 0; i < CALLS; i++) {
      frond_error err = {0, ""};
      frond_fields fl;
      int64_t id;
      if (frond_format_next(f, ask, buf, sizeof(buf), &err) != 0)
        fail_msg("turn %d: %s", t, err.message);
      id = id_of(f, buf);
      if (ask == &tagged)
        wrong += id < 5000 || id > 10000000;
      else
        wrong += frond_decode(frond_layout_preset(0), id, &fl, NULL) != 0 ||
                 fl.node != 3 || id <= 10000000;
    }
    hot += ask == &plain && began >= 0 && tick_ms() == began;
  }
  print_message("%d turns, %d filled the cache, %d asked without a tag "
                "within a millisecond; %d numbers of the other source\n",
                t, filled, hot, wrong);
  assert_true(filled > 0);
  assert_true(hot >= HOT);
  assert_int_equal(wrong, 0);
  frond_seg_close(s);
  tmpdir_remove(dir);
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* A spec that names its tag takes IDs of the source's allocator with
** src->tag NULL (the common path): the allocators of two stores, A's tag
** from 5000 and B's from 9000000, B asked right after A filled the
** cache. B's numbers are B's IDs, never A's cached. As
** test_tag_then_none: at least 20 turns, until 10 asked within the
** ticker's millisecond (2,000 at most). */
static void test_spec_tag_two_allocators(void **state) {
  enum { TURNS = 20, MAX_TURNS = 2000, HOT = 10, GIVEN = 4 };
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC ",tag=t");
  char *dir = tmpdir_make(), ua[600], ub[600], buf[64];
  frond_seg *a, *b;
  frond_store *st;
  frond_error err = {0, ""};
  frond_format_source sa = {NULL, NULL, NULL, 0}, sb = {NULL, NULL, NULL, 0};
  int foreign = 0, filled = 0, hot = 0, t;
  (void)state;
  store_make(dir, "a", ua, sizeof(ua));
  snprintf(ub, sizeof(ub), "sqlite://%s/b.db", dir);
  assert_int_equal(frond_store_open(&st, ub, &err), 0);
  if (frond_store_tag_create(st, "t", 1000, 9000000, NULL, &err) != 0)
    fail_msg("create: %s", err.message);
  frond_store_close(st);
  sa.seg = a = seg_of(ua);
  sb.seg = b = seg_of(ub);
  for (t = 0; t < MAX_TURNS && (t < TURNS || hot < HOT); t++) {
    int64_t began;
    if (!fill(f, &sa))
      continue;
    filled++;
    began = tick_ms();
    for (int i = 0; i < GIVEN; i++) {
      if (frond_format_next(f, &sb, buf, sizeof(buf), &err) != 0)
        fail_msg("B: %s", err.message);
      foreign += id_of(f, buf) < 9000000;
    }
    hot += began >= 0 && tick_ms() == began;
  }
  print_message("%d turns, %d filled, %d within a millisecond; %d numbers "
                "of A's IDs given for B\n",
                t, filled, hot, foreign);
  assert_true(hot >= HOT);
  assert_int_equal(foreign, 0);
  frond_seg_close(a);
  frond_seg_close(b);
  tmpdir_remove(dir);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* On a thread of its own (an empty cache): a generator of 1 s units (the
** cache's validity 1 s) fills the cache for no_store 0; a call with
** no_store 1 draws its own ID, later than every one cached, so that the
** next call with no_store 0 hands out an earlier one. 1 when it did, 0
** when not, -1 when a step failed, 2 when the turn took the validity or
** more (a stalled machine: the cached numbers may have been dropped for
** their age, which proves nothing either way). */
static void *no_store_turn(void *arg) {
  frond_format *f = arg;
  frond_gen *g = format_gen_seconds(1);
  frond_format_source s0 = {NULL, NULL, NULL, 0}, s1 = {NULL, NULL, NULL, 1};
  char buf[64];
  int64_t own = -1, cached_next = -1, began;
  int ok;
  if (g == NULL)
    return (void *)(intptr_t)-1;
  s0.gen = s1.gen = g;
  began = frond__id128_now_ms();
  ok = fill(f, &s0);
  (void)frond__id128_now_ms(); /* the ticker read: the common path serves */
  ok = ok && frond_format_next(f, &s1, buf, sizeof(buf), NULL) == 0;
  if (ok)
    own = id_of(f, buf);
  ok = ok && frond_format_next(f, &s0, buf, sizeof(buf), NULL) == 0;
  if (ok)
    cached_next = id_of(f, buf);
  frond_gen_close(g, NULL);
  if (ok && frond__id128_now_ms() - began >= 1000)
    return (void *)(intptr_t)2;
  return (void *)(intptr_t)(ok ? cached_next < own : -1);
}

/* A call with no_store set is another source than one without: it never
** takes the numbers drawn for the other. Threads in turn until five turns
** ran within the cache's validity (50 at most). */
static void test_no_store_own_slot(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC);
  int done = 0;
  (void)state;
  for (int i = 0; i < 50 && done < 5; i++) {
    pthread_t th;
    void *r;
    assert_int_equal(pthread_create(&th, NULL, no_store_turn, f), 0);
    assert_int_equal(pthread_join(th, &r), 0);
    if ((intptr_t)r == 2)
      continue;
    assert_int_equal((intptr_t)r, 1);
    done++;
  }
  assert_int_equal(done, 5);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* The one-number call's own checks, as frond_format_next_n makes them: a
** buffer one byte short is refused and not written past, and a call
** without a source is refused, both with INVAL. */
static void test_next_arguments(void **state) {
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC);
  frond_gen *g = format_gen(1);
  frond_format_source src = {g, NULL, NULL, 0};
  char *exact = malloc(f->length + 1), *shorter = malloc(f->length);
  frond_error err = {0, ""};
  (void)state;
  assert_non_null(exact);
  assert_non_null(shorter);
  assert_true(fill(f, &src)); /* the cache would serve */
  assert_int_equal(frond_format_next(f, &src, exact, f->length + 1, &err), 0);
  assert_int_equal(strlen(exact), f->length);
  assert_int_equal(frond_format_next(f, &src, shorter, f->length, &err),
                   FROND_EINVAL);
  assert_int_equal(frond_format_next(f, NULL, exact, f->length + 1, &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "no generator"));
  free(exact);
  free(shorter);
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* A tag 5 below the format's largest ID (8 digits), taken 1000 times in
** a tight loop: every ID that fits is handed out, and once the IDs
** outgrow the format each failing call takes about one, as the single
** call does: a batch that fails is not drawn again larger. */
static void test_refill_too_large(void **state) {
  enum { CALLS = 1000 };
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, "order:digits=8,key=1");
  char *dir = tmpdir_make(), uri[600], buf[64];
  frond_store *st;
  frond_seg *s;
  frond_format_source src = {NULL, NULL, "t", 0};
  frond_error err = {0, ""};
  int64_t first, after;
  int ok = 0, failed = 0;
  (void)state;
  snprintf(uri, sizeof(uri), "sqlite://%s/ids.db", dir);
  assert_int_equal(frond_store_open(&st, uri, &err), 0);
  if (frond_store_tag_create(st, "t", 100000, f->max_id - 5, NULL, &err))
    fail_msg("create: %s", err.message);
  frond_store_close(st);
  src.seg = s = seg_of(uri);
  assert_int_equal(frond_seg_next(s, "t", 1, &first, &err), 0);
  for (int i = 0; i < CALLS; i++) {
    if (frond_format_next(f, &src, buf, sizeof(buf), &err) == 0) {
      assert_true(id_of(f, buf) > first && id_of(f, buf) <= f->max_id);
      ok++;
    } else {
      assert_int_equal(err.code, FROND_EID_TOO_LARGE);
      failed++;
    }
  }
  assert_int_equal(frond_seg_next(s, "t", 1, &after, &err), 0);
  print_message("%d numbers, %d failed, %lld IDs taken\n", ok, failed,
                (long long)(after - first - 1));
  assert_int_equal(ok, f->max_id - first);
  /* Skipped: the first failing batch's IDs, then one a failing call. */
  assert_true(after - first - 1 - ok <= failed + 32);
  frond_seg_close(s);
  tmpdir_remove(dir);
  frond_format_free(f);
  frond_order_keys_free(k);
}

/* A source that takes IDs in chunks of 4 (as a layout of 2 sequence bits
** does) and fails after the first chunk of a larger draw: the numbers it
** wrote are handed out, never skipped, and the next draw takes one. */
static int64_t chunk_next = 1;
static size_t chunk_written, chunk_big_fails, chunk_fails_in_row, chunk_worst;

static int chunk_issue(frond_format *f, const frond_format_source *src,
                       size_t n, char *out, size_t stride,
                       frond__issue_tally *t, frond_error *err) {
  size_t k = n < 4 ? n : 4;
  (void)src;
  for (size_t j = 0; j < k; j++) {
    snprintf(out + j * stride, f->length + 1, "%0*lld", (int)f->length,
             (long long)chunk_next++);
    chunk_written++;
  }
  if (n <= 4) {
    chunk_fails_in_row = 0;
    return 0;
  }
  chunk_big_fails++;
  if (++chunk_fails_in_row > chunk_worst)
    chunk_worst = chunk_fails_in_row;
  if (t != NULL) {
    t->done = k;
    t->lost = 0;
  }
  return frond__fail(err, FROND_EWOULD_BLOCK, "the second chunk would wait");
}

static void test_refill_chunk_fails(void **state) {
  enum { CALLS = 2000 };
  frond_order_keys *k = keys_of("1:aes:" KEY0);
  frond_format *f = fmt(k, SPEC);
  frond_gen *g = format_gen(1);
  frond_format_source src = {g, NULL, NULL, 0};
  char buf[64];
  size_t handed = 0, dropped = frond__order_cache_dropped();
  int64_t last = 0;
  (void)state;
  for (int i = 0; i < CALLS; i++) {
    frond_error err = {0, ""};
    if (frond__order_cached(f, &src, buf, chunk_issue, &err) != 0)
      fail_msg("call %d: %s", i, err.message);
    assert_true(strtoll(buf, NULL, 10) > last); /* in the order written */
    last = strtoll(buf, NULL, 10);
    handed++;
  }
  print_message("%zu written, %zu handed out, %zu held, %zu dropped, %zu "
                "draws failed\n",
                chunk_written, handed, frond__order_cache_held(),
                frond__order_cache_dropped() - dropped, chunk_big_fails);
  assert_true(chunk_big_fails > 0);
  /* A failing draw skips none of what it wrote. A batch may still be
  ** dropped for its age when the machine stalls the loop past the
  ** cache's validity: that is counted, never handed out. */
  assert_int_equal(chunk_written, handed + frond__order_cache_held() +
                                      frond__order_cache_dropped() - dropped);
  assert_int_equal(chunk_worst, 1); /* never two failing draws in a row */
  frond_gen_close(g, NULL);
  frond_format_free(f);
  frond_order_keys_free(k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      /* First: it counts the thread's cache, empty before it. */
      cmocka_unit_test(test_refill_chunk_fails),
      cmocka_unit_test(test_gen_at_old_address),
      cmocka_unit_test(test_seg_at_old_address),
      cmocka_unit_test(test_tag_then_none),
      cmocka_unit_test(test_spec_tag_two_allocators),
      cmocka_unit_test(test_no_store_own_slot),
      cmocka_unit_test(test_next_arguments),
      cmocka_unit_test(test_refill_too_large),
  };
  return frond_run_tests(tests, NULL, NULL);
}
