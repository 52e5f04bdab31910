/* SPDX-License-Identifier: Apache-2.0 */
/*
** bench_formats.c -- ID formats in process, beside the plain snowflake
** generator measured in the same run.
**
**   make bench-formats        (or: make && ./build/bench_formats [reps])
**   build/bench_formats 7 aes (only the rows whose name holds "aes", and
**                              the reference: to profile one path)
**
** One thread. Each row issues IDS ids and reports the median over REPS
** repetitions of ns per ID, IDs per second, and the ratio of its time to
** the plain generator's. Time is the thread's CPU time, not the wall
** clock: on a shared machine the wall clock also counts the time other
** processes hold the core, which moved rows by 2-4 times between runs;
** nothing measured here sleeps or waits.
**
**   snowflake next          frond_gen_next: the reference
**   SipHash-2-4 call        libsodium's crypto_shorthash on 8 bytes, one
**                           call waiting for the last: one round of the
**                           permutation costs one; the same through
**                           crypto_shorthash_siphash24 (no wrapper), and
**                           SipHash-2-4-128 (crypto_shorthash_siphashx24,
**                           two 64-bit outputs per call), and the inline
**                           SipHash of one word that the permutation
**                           calls (core/siphash.h): SipHash's latency,
**                           8 of which are the floor of one ID at 8 rounds
**   permutation, N rounds   the keyed permutation of a 19-digit order
**                           number alone (what an order number adds), one
**                           ID at a time (frond__perm_apply)
**   permutation, batch      8 rounds, 256 IDs per call side by side
**                           (frond__perm_apply_n), once per SipHash kernel
**                           this machine runs (siphash_lanes.c)
**   order:digits=19         frond_format_next: a snowflake ID, permuted,
**                           Damm check digit, written as a string; then
**                           frond_format_next_n, 256 per call
**   base62                  frond_format_next: a snowflake ID as base62
**   uuid7, ulid, objectid   the generators alone (16 or 12 bytes), and as
**                           strings through frond_format_next; then 256
**                           per call: bytes (frond__uuid7_next_n ...) and
**                           strings (frond_format_next_n)
**   uuid4                   frond_uuid4, and strings one at a time and 256
**                           per call
**   aes scheme              a key version "V:aes:KEY" (order_aes.c): the
**                           permutation alone one at a time and 256 per
**                           call (with the halves' digits, which the next
**                           row times alone: frond__perm_put_n, which
**                           every scheme's batch calls), and the whole
**                           order number one at a time, 256 per call and
**                           32 per call (what one at a time pays for a
**                           refill of the thread's cache, its largest:
**                           the difference is the cost of handing a
**                           number out)
**   random bits             frond__rand_take64 (inlined, as the IDs draw
**                           them): 8 bytes of a thread's keystream,
**                           ChaCha20 (forced) and this CPU's own (AES-256-
**                           CTR on AES-NI, rand_aes.c); and a UUIDv7 one at
**                           a time on ChaCha20's bits, the reference for
**                           what the keystream changed; and the keystream
**                           alone, 1 KiB draws as the refills make them,
**                           per 8 bytes, on each code path this CPU has
**   snowflake next_n        frond_gen_next_n(256), per ID: what the plain
**                           generator's batches cost, beside the formats'
**                           batches
**   segment batches         frond_format_next_n, 256 per call, of a
**                           segment tag's IDs (order:digits=12,tag=) and
**                           of a daily sequence (seq:digits=12), on a
**                           SQLite store in a temp dir with a step of a
**                           million: the batch path of segment IDs, where
**                           every ID of a batch is checked against the
**                           format's end; one allocation per repetition
**
** The generators get a fresh snowflake generator per repetition with
** max_ahead raised to a day, so no call waits for the clock: the rows
** measure the cost of a call, not the layout's rate (frond bench measures
** that). No high-water file: the IDs are thrown away.
*/
#include "core/formats.h"
#include "core/rand_hot.h"
#include "core/siphash.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define IDS 1000000
#define REPS 7
#define KEY "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

enum {
  R_SNOWFLAKE,
  R_SIPHASH,
  R_SIPHASH_DIRECT,
  R_SIPHASHX,
  R_SIPHASH_INLINE,
  R_PERM4,
  R_PERM6,
  R_PERM8,
  R_BATCH0, /* one row per SipHash kernel, up to R_BATCH0 + MAX_KERNELS */
  R_ORDER = R_BATCH0 + 3,
  R_ORDER_BATCH,
  R_BASE62,
  R_UUID7,
  R_UUID7_STR,
  R_ULID,
  R_ULID_STR,
  R_OID,
  R_OID_STR,
  R_ORDER_TAG_BATCH,
  R_SEQ_BATCH,
  R_SNOWFLAKE_N,
  R_UUID7_N,
  R_UUID7_STR_N,
  R_ULID_N,
  R_ULID_STR_N,
  R_OID_N,
  R_OID_STR_N,
  R_UUID4,
  R_UUID4_STR,
  R_UUID4_STR_N,
  R_AES_PERM,
  R_AES_PERM_BATCH,
  R_PUT_BATCH,
  R_AES_ORDER,
  R_AES_ORDER_BATCH,
  R_AES_ORDER_32,
  R_RAND_CHACHA,
  R_RAND,
  R_UUID7_CHACHA,
  R_DRAW_CHACHA,
  R_DRAW_AESNI,
  R_DRAW_VAES,
  R_COUNT
};
#define MAX_KERNELS 3
#define BATCH 256

static char names[R_COUNT][64] = {
    "snowflake next (reference)",     "SipHash-2-4 call (libsodium)",
    "  crypto_shorthash_siphash24",   "  siphashx24 (128-bit output)",
    "  inline, one word (siphash.h)", "permutation, 4 rounds",
    "permutation, 6 rounds",          "permutation, 8 rounds (default)"};
static const char *const tail_names[] = {"order:digits=19,check=damm",
                                         "  the same, 256 per call",
                                         "base62",
                                         "uuid7 (16 bytes)",
                                         "uuid7 string",
                                         "ulid (16 bytes)",
                                         "ulid string",
                                         "objectid (12 bytes)",
                                         "objectid string",
                                         "order:digits=12,tag=, 256 per call",
                                         "seq:digits=12, 256 per call",
                                         "snowflake next_n, 256 per call",
                                         "uuid7 (16 bytes), 256 per call",
                                         "uuid7 string, 256 per call",
                                         "ulid (16 bytes), 256 per call",
                                         "ulid string, 256 per call",
                                         "objectid (12 bytes), 256 per call",
                                         "objectid string, 256 per call",
                                         "uuid4 (16 bytes)",
                                         "uuid4 string",
                                         "uuid4 string, 256 per call",
                                         "aes: permutation, 8 rounds",
                                         "aes: permutation, 256 per call",
                                         "  its digits alone, 256 per call",
                                         "aes: order:digits=19,check=damm",
                                         "aes:   the same, 256 per call",
                                         "aes:   the same, 32 per call",
                                         "random bits, 8 bytes (chacha20)",
                                         "random bits, 8 bytes",
                                         "uuid7 (16 bytes), chacha20 bits",
                                         "  1 KiB draw, per 8 bytes: chacha20",
                                         "  1 KiB draw, per 8 bytes: aes-ni",
                                         "  1 KiB draw, per 8 bytes: vaes"};

static const frond__sip_kernel *kernels;
static size_t nkernels;
static frond_seg *seg; /* the segment rows' allocator */

static volatile uint64_t sink;

/* The calling thread's CPU time in ns. */
static int64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static frond_gen *fresh_gen(void) {
  frond_gen_options o;
  frond_gen *g;
  frond_error err = {0, ""};
  frond_gen_options_init(&o);
  o.max_ahead_ms = 86400000;
  if (frond_gen_create(&g, frond_layout_preset(0), 1, &o, &err) != 0) {
    fprintf(stderr, "bench_formats: %s\n", err.message);
    exit(1);
  }
  return g;
}

static frond_format *format(const char *spec, frond_order_keys *k) {
  frond_format *f;
  frond_error err = {0, ""};
  if (frond_format_create(&f, spec, k, NULL, NULL, &err) != 0) {
    fprintf(stderr, "bench_formats: %s: %s\n", spec, err.message);
    exit(1);
  }
  return f;
}

/* ns per ID of one repetition of row r. */
static double run(int r, frond_format *const *fmt) {
  static const uint8_t key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  frond_gen *g = fresh_gen();
  frond_format_source src = {g, NULL, NULL, 0};
  frond__perm p;
  frond__sip_key sk;
  uint8_t u[16], digits[FROND__PERM_MAX_WIDTH];
  char buf[64];
  int64_t id, t0;
  uint64_t acc = 0;
  frond__perm_init(&p, 10, 19, r == R_PERM4 ? 4 : r == R_PERM6 ? 6 : 8);
  frond__sip_key_init(&sk, key);
  /* The keystream the random bits came from before rand_aes.c. */
  frond__rand_force(r == R_RAND_CHACHA || r == R_UUID7_CHACHA ? 0
                    : r > R_DRAW_CHACHA && r <= R_DRAW_VAES ? r - R_DRAW_CHACHA
                                                            : -1);
  t0 = cpu_ns();
  if (r >= R_DRAW_CHACHA && r <= R_DRAW_VAES) {
    /* The keystream alone: IDS / 124 draws of 1 KiB (992 bytes handed
    ** out, 32 the next key), as id128_rand.c's refills make them. */
    static const uint8_t nonce[crypto_stream_chacha20_NONCEBYTES];
    static uint8_t b[1024];
    uint8_t k[32];
    for (int i = 0; i < IDS; i += 124) {
      if (r == R_DRAW_CHACHA) {
        memcpy(k, b, 32);
        crypto_stream_chacha20(b, sizeof(b), nonce, k);
      } else if (frond__rand_aes_draw(b, sizeof(b)) != 0) {
        abort();
      }
      acc += b[100];
    }
    goto done;
  }
  if (r == R_RAND || r == R_RAND_CHACHA) {
    uint64_t s = frond__rand_stream();
    for (int i = 0; i < IDS; i++)
      acc += frond__rand_take64(s);
    goto done;
  }
  if (r == R_PUT_BATCH) { /* the halves' digits, as the row above writes */
    static uint64_t A[BATCH], B[BATCH];
    static uint8_t out[BATCH * FROND__PERM_MAX_WIDTH];
    for (int j = 0; j < BATCH; j++) {
      A[j] = (uint64_t)j * 39916801 % p.a;
      B[j] = (uint64_t)j * 479001599 % p.b;
    }
    for (int i = 0; i < IDS; i += BATCH) {
      A[0] = (A[0] + out[0] + 1) % p.a;
      frond__perm_put_n(&p, A, B, BATCH, out);
    }
    acc += out[0];
    goto done;
  }
  if (r == R_AES_PERM || r == R_AES_PERM_BATCH) {
    static uint64_t x[BATCH];
    static uint8_t out[BATCH * FROND__PERM_MAX_WIDTH];
    const frond__aes_key *ak = &fmt[R_AES_ORDER]->aes[2];
    for (int i = 0; i < IDS; i += BATCH) {
      for (int j = 0; j < BATCH; j++)
        x[j] = ((uint64_t)(i + j) * 4099 + acc) % 10000000000000000000u;
      if (r == R_AES_PERM_BATCH)
        frond__aes_perm_apply_n(&p, ak, x, BATCH, out);
      else
        for (int j = 0; j < BATCH; j++) {
          frond__aes_perm_apply(&p, ak, x[j] + acc, out);
          acc += out[0];
        }
      acc += out[0];
    }
    goto done;
  }
  if (r >= R_BATCH0 && r < R_BATCH0 + MAX_KERNELS) {
    static uint64_t x[BATCH];
    static uint8_t out[BATCH * FROND__PERM_MAX_WIDTH];
    for (int i = 0; i < IDS; i += BATCH) {
      for (int j = 0; j < BATCH; j++)
        x[j] = ((uint64_t)(i + j) * 4099 + acc) % 10000000000000000000u;
      frond__perm_apply_n(&p, key, x, BATCH, out, &kernels[r - R_BATCH0]);
      acc += out[0];
    }
    goto done;
  }
  if (r == R_SNOWFLAKE_N || r == R_UUID7_N || r == R_ULID_N || r == R_OID_N) {
    static uint8_t b[BATCH * 16];
    static int64_t ids[BATCH];
    for (int i = 0; i < IDS; i += BATCH) {
      if (r == R_SNOWFLAKE_N) {
        if (frond_gen_next_n(g, BATCH, ids, NULL) != 0)
          abort();
        acc += (uint64_t)ids[BATCH - 1];
        continue;
      }
      if (r == R_UUID7_N)
        frond__uuid7_next_n(fmt[R_UUID7]->uuid7, BATCH, b);
      else if (r == R_ULID_N)
        frond__ulid_next_n(fmt[R_ULID]->ulid, BATCH, b);
      else
        frond__objectid_next_n(fmt[R_OID]->oid, BATCH, b);
      acc += b[BATCH * 12 - 1];
    }
    goto done;
  }
  if (r == R_ORDER_BATCH || r == R_ORDER_TAG_BATCH || r == R_SEQ_BATCH ||
      r == R_UUID7_STR_N || r == R_ULID_STR_N || r == R_OID_STR_N ||
      r == R_UUID4_STR_N || r == R_AES_ORDER_BATCH || r == R_AES_ORDER_32) {
    static char strs[BATCH][40];
    frond_format *f =
        fmt[r == R_ORDER_BATCH                              ? R_ORDER
            : r == R_AES_ORDER_BATCH || r == R_AES_ORDER_32 ? R_AES_ORDER
                                                            : r];
    int per_call = r == R_AES_ORDER_32 ? 32 : BATCH;
    frond_error err = {0, ""};
    if (r == R_ORDER_TAG_BATCH || r == R_SEQ_BATCH)
      src.seg = seg;
    for (int i = 0; i < IDS; i += per_call) {
      if (frond_format_next_n(f, &src, (size_t)per_call, strs[0], 40, &err) !=
          0) {
        fprintf(stderr, "bench_formats: %s\n", err.message);
        abort();
      }
      acc += (uint8_t)strs[0][5];
    }
    goto done;
  }
  for (int i = 0; i < IDS; i++) {
    switch (r) {
    case R_SNOWFLAKE:
      if (frond_gen_next(g, &id, NULL) != 0)
        abort();
      acc += (uint64_t)id;
      break;
    case R_SIPHASH: {
      uint8_t in[8], out[8];
      uint64_t v = (uint64_t)i + acc;
      memcpy(in, &v, 8);
      crypto_shorthash(out, in, 8, key);
      acc += out[0];
      break;
    }
    case R_SIPHASH_DIRECT: {
      uint8_t in[8], out[8];
      uint64_t v = (uint64_t)i + acc;
      memcpy(in, &v, 8);
      crypto_shorthash_siphash24(out, in, 8, key);
      acc += out[0];
      break;
    }
    case R_SIPHASHX: {
      uint8_t in[8], out[16];
      uint64_t v = (uint64_t)i + acc;
      memcpy(in, &v, 8);
      crypto_shorthash_siphashx24(out, in, 8, key);
      acc += out[0];
      break;
    }
    case R_SIPHASH_INLINE:
      acc = frond__sip24_word(&sk, (uint64_t)i + acc);
      break;
    case R_PERM4:
    case R_PERM6:
    case R_PERM8:
      frond__perm_apply(&p, key, (uint64_t)i * 4099 + acc, digits);
      acc += digits[0];
      break;
    case R_UUID7:
    case R_UUID7_CHACHA:
      frond_uuid7_next(fmt[R_UUID7]->uuid7, u);
      acc += u[15];
      break;
    case R_ULID:
      frond_ulid_next(fmt[R_ULID]->ulid, u);
      acc += u[15];
      break;
    case R_OID:
      frond_objectid_next(fmt[R_OID]->oid, u);
      acc += u[11];
      break;
    case R_UUID4:
      if (frond_uuid4(u, NULL) != 0)
        abort();
      acc += u[15];
      break;
    default:
      if (frond_format_next(fmt[r], &src, buf, sizeof(buf), NULL) != 0)
        abort();
      acc += (uint8_t)buf[5];
      break;
    }
  }
done:
  t0 = cpu_ns() - t0;
  frond__rand_force(-1);
  sink += acc;
  frond_gen_close(g, NULL);
  return (double)t0 / IDS;
}

static const char *only; /* a row's name must hold it, when set */

/* Whether this CPU runs the keystream of level l (rand_aes.c). */
static int has_level(int l) {
  int ok = frond__rand_force(l) == 0;
  frond__rand_force(-1);
  return ok;
}

/* Rows of kernels this machine does not run, and rows not asked for. */
static int skipped(int r) {
  return (r >= R_BATCH0 + (int)nkernels && r < R_BATCH0 + MAX_KERNELS) ||
         (r > R_DRAW_CHACHA && r <= R_DRAW_VAES &&
          !has_level(r - R_DRAW_CHACHA)) ||
         (only != NULL && r != R_SNOWFLAKE && strstr(names[r], only) == NULL);
}

/* A SQLite store in a temp dir with tag "b", step 10^6, and its
** allocator; the directory's path into dir. */
static void open_seg(char *dir, size_t len) {
  char uri[600];
  frond_store *st;
  frond_seg_options o;
  frond_error err = {0, ""};
  /* A loaded machine's SQLite may take longer than the default wait for
  ** the next segment: a wait is not what this measures (CPU time). */
  frond_seg_options_init(&o);
  o.wait_ms = 10000;
  snprintf(dir, len, "%s/frond-bench-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("bench_formats: mkdtemp");
    exit(1);
  }
  snprintf(uri, sizeof(uri), "sqlite://%s/ids.db", dir);
  if (frond_store_open(&st, uri, &err) != 0 ||
      frond_store_tag_create(st, "b", 1000000, 1, NULL, &err) != 0 ||
      frond_seg_open(&seg, uri, &o, &err) != 0) {
    fprintf(stderr, "bench_formats: %s\n", err.message);
    exit(1);
  }
  frond_store_close(st);
}

/* The 128-bit formats against their goals: bytes within 2x of next(),
** strings within 3x, one at a time and 256 per call. */
static void print_goals(const double *med) {
  static const struct {
    int row, goal;
  } g[] = {{R_UUID7, 2},       {R_UUID7_STR, 3},  {R_UUID7_N, 2},
           {R_UUID7_STR_N, 3}, {R_ULID, 2},       {R_ULID_STR, 3},
           {R_ULID_N, 2},      {R_ULID_STR_N, 3}, {R_OID, 2},
           {R_OID_STR, 3},     {R_OID_N, 2},      {R_OID_STR_N, 3},
           {R_UUID4, 2},       {R_UUID4_STR, 3},  {R_UUID4_STR_N, 3}};
  printf("\n128-bit formats against next() (goal: bytes <= 2x, strings <= "
         "3x):\n");
  for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
    double x = med[g[i].row] / med[R_SNOWFLAKE];
    printf("  %-34s %6.2fx  goal %dx  %s\n", names[g[i].row], x, g[i].goal,
           x <= g[i].goal ? "met" : "MISSED");
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  frond_order_keys *k, *kaes;
  frond_format *fmt[R_COUNT] = {NULL};
  double t[R_COUNT][REPS * 4], med[R_COUNT];
  char dir[512], path[600];
  int reps = argc > 1 ? atoi(argv[1]) : REPS;
  if (reps < 1 || reps > REPS * 4)
    reps = REPS;
  only = argc > 2 ? argv[2] : NULL;
  if (frond_order_keys_parse(KEY, strlen(KEY), &k, NULL) != 0 ||
      frond_order_keys_parse("1:aes:" KEY, strlen(KEY) + 6, &kaes, NULL) != 0)
    return 1;
  nkernels = frond__sip_kernels(&kernels);
  if (nkernels > MAX_KERNELS)
    nkernels = MAX_KERNELS;
  for (size_t i = 0; i < MAX_KERNELS; i++)
    snprintf(names[R_BATCH0 + i], sizeof(names[0]),
             "permutation, 8 rounds, batch (%s)",
             i < nkernels ? kernels[i].name : "-");
  for (int r = R_ORDER; r < R_COUNT; r++)
    snprintf(names[r], sizeof(names[0]), "%s", tail_names[r - R_ORDER]);
  snprintf(names[R_RAND], sizeof(names[0]), "random bits, 8 bytes (%s)",
           frond__rand_impl());
  fmt[R_ORDER] = format("order:digits=19,check=damm", k);
  /* Its key's record is no part of the cost measured: none is kept. */
  frond_format_skip_check(fmt[R_ORDER]);
  fmt[R_BASE62] = format("base62", k);
  fmt[R_UUID7] = fmt[R_UUID7_STR] = format("uuid7", k);
  fmt[R_ULID] = fmt[R_ULID_STR] = format("ulid", k);
  fmt[R_OID] = fmt[R_OID_STR] = format("objectid", k);
  fmt[R_ORDER_TAG_BATCH] = format("order:digits=12,tag=b", k);
  frond_format_skip_check(fmt[R_ORDER_TAG_BATCH]);
  fmt[R_SEQ_BATCH] = format("seq:tag=b,digits=12", k);
  fmt[R_UUID7_STR_N] = fmt[R_UUID7];
  fmt[R_ULID_STR_N] = fmt[R_ULID];
  fmt[R_OID_STR_N] = fmt[R_OID];
  fmt[R_UUID4_STR] = fmt[R_UUID4_STR_N] = format("uuid4", k);
  fmt[R_AES_ORDER] = format("order:digits=19,check=damm,key=1", kaes);
  frond_format_skip_check(fmt[R_AES_ORDER]);
  open_seg(dir, sizeof(dir));
  /* Interleave the rows, repetition by repetition, so that a burst of
  ** load from elsewhere on the machine spreads over all of them. */
  for (int i = 0; i < reps; i++)
    for (int r = 0; r < R_COUNT; r++)
      if (!skipped(r))
        t[r][i] = run(r, fmt);
  printf("%-34s %9s %14s %8s\n", "one thread, CPU time, median", "ns/ID",
         "IDs/s", "ratio");
  for (int r = 0; r < R_COUNT; r++) {
    if (skipped(r))
      continue;
    qsort(t[r], (size_t)reps, sizeof(double), cmp_double);
    med[r] = t[r][reps / 2];
    printf("%-34s %9.1f %14.0f %7.2fx\n", names[r], med[r], 1e9 / med[r],
           med[r] / med[R_SNOWFLAKE]);
  }
  if (only != NULL) { /* the summaries compare rows that did not run */
    printf("\nfiltered run: its reference may be slower than a full run's "
           "(bench/README.md);\njudge the goals on a full run\n");
    goto out;
  }
  printf("\nthe permutation at 8 rounds (the default; goal: <= 50 ns per "
         "ID):\n  one ID at a time %.1f ns, where its 8 SipHash calls alone, "
         "each waiting\n  for the last, take %.1f; in batches %.1f ns (%s "
         "kernel, %.2fx faster).\nAn order number adds %.1f ns to a "
         "snowflake ID one at a time, %.1f in batches\n(permutation, check "
         "digit, writing the string).\n",
         med[R_PERM8], 8 * med[R_SIPHASH_INLINE], med[R_BATCH0],
         kernels[0].name, med[R_PERM8] / med[R_BATCH0],
         med[R_ORDER] - med[R_SNOWFLAKE],
         med[R_ORDER_BATCH] - med[R_SNOWFLAKE]);
  printf("\nOrder numbers against next() (goal: one at a time <= 4x, "
         "batches <= 2x):\n  sip (the first scheme): %.2fx, %.2fx in "
         "batches\n  aes (%s): %.2fx, %.2fx in batches\n  aes one at a "
         "time against 32 a call (the cache's refill): %.2fx, %.1f ns to "
         "hand one out\n",
         med[R_ORDER] / med[R_SNOWFLAKE], med[R_ORDER_BATCH] / med[R_SNOWFLAKE],
         frond__aes_impl(), med[R_AES_ORDER] / med[R_SNOWFLAKE],
         med[R_AES_ORDER_BATCH] / med[R_SNOWFLAKE],
         med[R_AES_ORDER] / med[R_AES_ORDER_32],
         med[R_AES_ORDER] - med[R_AES_ORDER_32]);
  printf("\nRandom bits, 8 bytes a draw: %.1f ns (%s), %.1f ns (chacha20), "
         "%.2fx faster;\na UUIDv7 one at a time %.2fx next(), %.2fx on "
         "ChaCha20's bits.\n",
         med[R_RAND], frond__rand_impl(), med[R_RAND_CHACHA],
         med[R_RAND_CHACHA] / med[R_RAND], med[R_UUID7] / med[R_SNOWFLAKE],
         med[R_UUID7_CHACHA] / med[R_SNOWFLAKE]);
  print_goals(med);
out:
  frond_format_free(fmt[R_UUID4_STR]);
  frond_format_free(fmt[R_AES_ORDER]);
  frond_order_keys_free(kaes);
  frond_format_free(fmt[R_ORDER]);
  frond_format_free(fmt[R_BASE62]);
  frond_format_free(fmt[R_UUID7]);
  frond_format_free(fmt[R_ULID]);
  frond_format_free(fmt[R_OID]);
  frond_format_free(fmt[R_ORDER_TAG_BATCH]);
  frond_format_free(fmt[R_SEQ_BATCH]);
  frond_seg_close(seg);
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof(path), "%s/ids.db%s", dir,
             i == 0   ? ""
             : i == 1 ? "-wal"
                      : "-shm");
    remove(path);
  }
  rmdir(dir);
  frond_order_keys_free(k);
  return 0;
}
