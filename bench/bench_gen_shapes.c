/* SPDX-License-Identifier: Apache-2.0 */
/*
** bench_gen_shapes.c -- where the snowflake hot path's cost over one
** atomic fetch-add comes from, measured on the instructions themselves.
**
**   bench_gen_shapes [REPS]        (x86-64; default 31 repetitions)
**
** Each row is a loop written in assembly, so that no compiler decides its
** shape: one locked add per pass, plus what frond_gen_next's inline part
** (frond/inline.h) adds to it, one piece at a time, on a word and a
** generator-like block of this program (no library call, no clock):
**
**   lock add               the reference: a fetch-add, value dropped
**   claim                  load the limit, fetch-add, compare, branch:
**                          what the fence rule needs
**   claim + fork key       and the process key's check (base/fork.h):
**                          a pointer, its word and the armed key
**   claim + ID             and the ID from the value: shift the time
**                          past the node bits, OR the node, mask the
**                          sequence (make_id)
**   claim + fork + ID      both: what frond_gen_next did with a packed word
**   claim + fork + ID, st  and the ID stored to memory on every pass
**   claim + 1-op ID        an ID one XOR away from the value (a state
**                          word kept in the ID's own layout)
**   claim + 1-op ID + fork the same with the fork check: what
**                          frond_gen_next does since (the OR of the node
**                          bits costs what the XOR does)
**   claim + 3 / 4 NOPs     the claim and one-byte NOPs: instructions
**                          that load, compute and store nothing
**
** Rows run in turn, rotated each repetition, so that all see the same
** machine; the median and the fastest repetition are shown, each as a
** ratio to the reference's. On the project's machine the rows fall in
** two groups: 1.00x up to about eleven instructions a pass (the claim with
** up to three NOPs), about 1.4x from there on, whatever the instructions
** do, loads, stores or NOPs (bench/RESULTS.md, 2026-11-28, the shapes).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)

#define PASSES 2000000L

/* A generator's first two cache lines, as frond__gen_hot lays them out:
** state, then limit, node_part, seq_mask, (max_count), seq_bits,
** time_shift, fork_at, fork_key. */
static _Alignas(64) uint64_t gen[16];
static uint64_t process_key = 0x5eed;
static volatile int64_t sink;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The loop around each body: count down, the claim's branch last, as
** GCC lays out frond_gen_next's loop in `frond bench`. BODY runs after the
** fetch-add, with the value in %rsi; PRE before it. A failed claim or
** fork check leaves the loop early (never, with these words). */
#define LOOP(PRE, BODY)                                                        \
  long n = PASSES;                                                             \
  uint64_t acc = 0;                                                            \
  int64_t t0 = now_ns();                                                       \
  __asm__ volatile("jmp 2f\n"                                                  \
                   "1: sub $1, %0\n"                                           \
                   "je 9f\n"                                                   \
                   "2: mov 64(%2), %%rdx\n" PRE "mov $1, %%esi\n"              \
                   "lock xadd %%rsi, (%2)\n" BODY "lea 1(%%rsi), %%r11\n"      \
                   "cmp %%r11, %%rdx\n"                                        \
                   "jae 1b\n"                                                  \
                   "9:\n"                                                      \
                   : "+r"(n), "+r"(acc)                                        \
                   : "r"(gen)                                                  \
                   : "rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11",     \
                     "memory", "cc");                                          \
  sink += (int64_t)acc + n;                                                    \
  return (double)(now_ns() - t0) / PASSES;

/* The fork check: the key's word through its pointer, against the key
** armed; a changed key leaves the loop. */
#define FORK_PRE                                                               \
  "mov 104(%2), %%r8\n"                                                        \
  "mov (%%r8), %%r8\n"                                                         \
  "mov 112(%2), %%r9\n"
#define FORK_TEST                                                              \
  "cmp %%r8, %%r9\n"                                                           \
  "jne 9f\n"

/* make_id from a packed word, as frond_gen_next computed it before:
** ((v >> seq_bits) << time_shift) | node_part | (v & seq_mask). */
#define MAKE_ID                                                                \
  "mov 96(%2), %%ecx\n"                                                        \
  "mov 80(%2), %%rax\n"                                                        \
  "and %%rsi, %%rax\n"                                                         \
  "or 72(%2), %%rax\n"                                                         \
  "mov %%rsi, %%r9\n"                                                          \
  "shr %%cl, %%r9\n"                                                           \
  "mov 100(%2), %%ecx\n"                                                       \
  "shl %%cl, %%r9\n"                                                           \
  "or %%r9, %%rax\n"
#define KEEP "mov %%rax, %1\n"
#define STORE "mov %%rax, -8(%%rsp)\n"
/* The constant loaded before the add, as the limit is. */
#define ONE_OP_PRE "mov 72(%2), %%r10\n"
#define ONE_OP_ID                                                              \
  "mov %%rsi, %%rax\n"                                                         \
  "xor %%r10, %%rax\n"

static double ref(void) {
  long n = PASSES;
  int64_t t0 = now_ns();
  __asm__ volatile("1: lock addq $1, (%1)\n"
                   "sub $1, %0\n"
                   "jne 1b\n"
                   : "+r"(n)
                   : "r"(gen)
                   : "memory", "cc");
  return (double)(now_ns() - t0) / PASSES;
}
static double claim(void) {
  LOOP("", "")
}
static double claim_fork(void) {
  LOOP(FORK_PRE, FORK_TEST)
}
static double claim_id(void) {
  LOOP("", MAKE_ID KEEP)
}
static double claim_fork_id(void) {
  LOOP(FORK_PRE, FORK_TEST MAKE_ID KEEP)
}
static double claim_fork_id_st(void) {
  LOOP(FORK_PRE, FORK_TEST MAKE_ID STORE)
}
static double claim_xor(void) {
  LOOP(ONE_OP_PRE, ONE_OP_ID KEEP)
}
/* No work at all, one-byte NOPs: instructions in the loop, no more. */
static double claim_nop3(void) {
  LOOP("", ".fill 3, 1, 0x90\n")
}
static double claim_nop4(void) {
  LOOP("", ".fill 4, 1, 0x90\n")
}
static double claim_xor_fork(void) {
  LOOP(ONE_OP_PRE FORK_PRE, FORK_TEST ONE_OP_ID KEEP)
}

static const struct {
  const char *name;
  double (*run)(void);
} rows[] = {
    {"lock add (reference)", ref},
    {"claim", claim},
    {"claim + fork key", claim_fork},
    {"claim + ID", claim_id},
    {"claim + fork + packed ID", claim_fork_id},
    {"claim + fork + ID, stored", claim_fork_id_st},
    {"claim + 1-op ID", claim_xor},
    {"claim + 1-op ID + fork (today)", claim_xor_fork},
    {"claim + 3 NOPs", claim_nop3},
    {"claim + 4 NOPs", claim_nop4},
};
#define NROWS (int)(sizeof(rows) / sizeof(rows[0]))
#define MAX_REPS 101

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  static double t[NROWS][MAX_REPS];
  int reps = argc > 1 ? atoi(argv[1]) : 31;
  if (reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "usage: bench_gen_shapes [REPS (1 to %d)]\n", MAX_REPS);
    return 2;
  }
  gen[8] = UINT64_MAX;               /* limit: never reached */
  gen[9] = UINT64_C(3) << 12;        /* node_part: node 3 */
  gen[10] = 4095;                    /* seq_mask */
  gen[12] = 12 | UINT64_C(22) << 32; /* seq_bits 12, time_shift 22 */
  gen[13] = (uint64_t)(uintptr_t)&process_key;
  gen[14] = process_key;
  ref(); /* wake the CPU up */
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < NROWS; k++) {
      int i = (k + r) % NROWS;
      t[i][r] = rows[i].run();
    }
  for (int i = 0; i < NROWS; i++)
    qsort(t[i], (size_t)reps, sizeof(double), cmp_double);
  printf("%-28s %8s %7s %8s %7s\n", "loop", "median", "ratio", "fastest",
         "ratio");
  for (int i = 0; i < NROWS; i++)
    printf("%-28s %6.2fns %6.2fx %6.2fns %6.2fx\n", rows[i].name,
           t[i][reps / 2], t[i][reps / 2] / t[0][reps / 2], t[i][0],
           t[i][0] / t[0][0]);
  printf("\n%d repetitions of %ld passes, rotated; ratios to the "
         "reference's.\n",
         reps, PASSES);
  return 0;
}

#else

int main(void) {
  fprintf(stderr, "bench_gen_shapes: x86-64 with GCC or Clang only\n");
  return 0;
}

#endif
