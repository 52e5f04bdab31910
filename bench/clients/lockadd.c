/* SPDX-License-Identifier: Apache-2.0 */
/*
** lockadd.c -- what a loop around one locked add costs on this CPU, by
** the shape of the loop: the floor under the clients' benchmarks
** (bench/clients/run.sh runs it first). Each row but the last is one loop
** written out in x86-64 assembly, so that no compiler chooses its shape:
** a `lock xadd` on a counter of its own cache line, the row's
** instructions, the loop counter; the last is C, a store to the stack
** (volatile) before the add. The rows are interleaved in each round; CPU
** ns per iteration, medians of the rounds, and the ratio of the bare
** counter's time to the row's (the clients' benchmarks' ratio).
**
**   cc -O2 -o lockadd bench/clients/lockadd.c && ./lockadd
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)

#define ROUNDS 7
#define PER_ROUND 20000000L

static int64_t counter __attribute__((aligned(64)));
static int64_t bound __attribute__((aligned(64))) = INT64_C(1) << 62;
static volatile int64_t sink;

static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One loop: [load the bound,] the locked add, BODY, the loop counter. */
#define LOOP(name, load, body)                                                 \
  static __attribute__((noinline)) int64_t name(long n) {                      \
    int64_t s = 0, r, d = 0, b = 0;                                            \
    __asm__ volatile(".p2align 5\n"                                            \
                     "1:\n" load "mov $1, %[r]\n"                              \
                     "lock xadd %[r], %[x]\n" body "dec %[n]\n"                \
                     "jnz 1b\n"                                                \
                     "jmp 3f\n"                                                \
                     "2: ud2\n"                                                \
                     "3:\n"                                                    \
                     : [s] "+r"(s), [r] "=&r"(r), [d] "+r"(d), [b] "+r"(b),    \
                       [n] "+r"(n), [x] "+m"(counter)                          \
                     : [e] "m"(bound)                                          \
                     : "cc", "memory");                                        \
    return s + d + b;                                                          \
  }

#define LOAD "mov %[e], %[b]\n"
#define SUM "lea 1(%[r],%[s]), %[s]\n" /* s += the new value */
#define ADD "add $1, %[d]\n"           /* one instruction, on nothing else */

LOOP(bare, "", SUM)
LOOP(add1, "", SUM ADD)
LOOP(add2, "", SUM ADD ADD)
LOOP(add3, "", SUM ADD ADD ADD)
LOOP(add4, "", SUM ADD ADD ADD ADD)
LOOP(add8, "", SUM ADD ADD ADD ADD ADD ADD ADD ADD)
/* The bound loaded before the add; the branch on the add's own result. */
LOOP(direct, LOAD, "cmp %[b], %[r]\njae 2b\n" SUM)
/* The same, with the +1 before the comparison: v = old + 1; v <= bound. */
LOOP(plus1, LOAD, "inc %[r]\ncmp %[b], %[r]\nja 2b\nadd %[r], %[s]\n")
/* A store before the add: a call's return address, a spilled variable. */
static __attribute__((noinline)) int64_t stored(long n) {
  volatile int64_t slot = 0;
  int64_t s = 0;
  for (long i = 0; i < n; i++) {
    slot = i;
    s += __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST);
  }
  return s + slot;
}

static const struct row {
  const char *what;
  int64_t (*fn)(long);
} rows[] = {
    {"`lock xadd`, the sum (the bare counter)", bare},
    {"+ 1 independent `add`", add1},
    {"+ 2 independent `add`s", add2},
    {"+ 3 independent `add`s", add3},
    {"+ 4 independent `add`s", add4},
    {"+ 8 independent `add`s", add8},
    {"bound loaded; `cmp`, `jae` on the add's result", direct},
    {"bound loaded; `inc`, then `cmp`, `ja` (v = old + 1)", plus1},
    {"a store to the stack before the add, the sum", stored},
};
#define NROWS (sizeof rows / sizeof rows[0])

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(void) {
  static double t[NROWS][ROUNDS];
  for (size_t i = 0; i < NROWS; i++) /* warm-up */
    sink += rows[i].fn(PER_ROUND / 10);
  for (int r = 0; r < ROUNDS; r++)
    for (size_t i = 0; i < NROWS; i++) {
      double t0 = cpu_ns();
      sink += rows[i].fn(PER_ROUND);
      t[i][r] = (cpu_ns() - t0) / PER_ROUND;
    }
  printf("%d rounds of %ld iterations, medians of CPU ns per "
         "iteration\n\n",
         ROUNDS, PER_ROUND);
  printf("| loop | ns | ratio of the bare counter to it |\n");
  printf("| --- | ---: | ---: |\n");
  double base = 0;
  for (size_t i = 0; i < NROWS; i++) {
    qsort(t[i], ROUNDS, sizeof t[i][0], cmp_double);
    double m = t[i][ROUNDS / 2];
    if (i == 0)
      base = m;
    printf("| %s | %.2f | %.2f× |\n", rows[i].what, m, base / m);
  }
  return 0;
}

#else

int main(void) {
  puts("bench/clients/lockadd.c: x86-64 only");
  return 0;
}

#endif
