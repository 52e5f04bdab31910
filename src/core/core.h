/* SPDX-License-Identifier: Apache-2.0 */
/*
** core.h -- the core layer's private header: what the generators share
** with each other and with the coordinators above them (the fence rule's
** side of the generator), and the layout's end-of-life warning.
*/
#ifndef FROND_CORE_H
#define FROND_CORE_H

#include "base/base.h"

#include <stdatomic.h>

/* A layout with less than this left gets a warning at start: a year, time
** to choose and roll out another before IDs stop. */
#define FROND__LAYOUT_WARN_MS (INT64_C(365) * 86400000)
/* Log a warning when l has less than FROND__LAYOUT_WARN_MS left at now_ms,
** naming the end, the days left and what to do. Returns 1 when it logged,
** else 0 (also once the layout has run out: frond_gen_create refuses it
** then, with TIME_EXHAUSTED). Call it at start. */
int frond__layout_warn_end(const frond_layout *l, int64_t now_ms);

/* ---- the segment allocator for event loops ----
** frond_seg_tag_next_n and frond_seg_tag_range that never wait: where they
** would wait for the loaders (a tag's first segment, both buffers used
** up, a range larger than what is buffered) they ask for the load and
** fail with FROND_EWOULD_BLOCK, having handed out nothing; the caller
** then makes the blocking call off its loop. Errors otherwise as the
** blocking calls. */
int frond__seg_tag_next_nowait(frond_seg_tag *t, size_t n, int64_t *out,
                               frond_error *err);
int frond__seg_tag_range_nowait(frond_seg_tag *t, int64_t n, int64_t *start,
                                frond_error *err);

/* An ordered tag's owner as this allocator last read it (seg_ordered.c),
** host:port into out (cap bytes): 0 when another process holds the tag
** and gave an address, -1 otherwise. */
int frond__seg_ordered_owner(frond_seg *s, const char *tag, size_t len,
                             char *out, size_t cap);
/* The owner could not be reached: the store is asked again within a
** tenth of a lease rather than at the time it would be (a clean stop
** released the claim: another node may take it over at once). */
void frond__seg_ordered_forget(frond_seg *s, const char *tag, size_t len);

/* Test hook: make a generator follow its (possibly fake) clock now rather
** than at its next tick. Thread-safe. */
void frond__gen_tick(frond_gen *g);

/* Test hook (id128.c): key every UUIDv7, ULID and ObjectId generator
** created (or re-keyed after fork) from now on with key, and take its
** ObjectId process value from it, instead of the system's random numbers,
** so that two processes draw equal random bits; NULL: back to those. Not
** thread-safe with generators being created. */
void frond__id128_fixed_key(const uint8_t key[16]);

/* ---- the snowflake generator under a coordinator ------------------------
**
** The fence rule: a node never issues an ID whose unit lies above a fence
** already durable where any later holder of its node ID will read it. A
** fence F (unix ms) allows the units u with ms_of(u) <= F; a successor
** starts at the unit after F's. The coordinator makes a fence durable
** BEFORE it hands it to the generator, and moves it ahead in the background
** (frond__gen_fence_target) so that the hot path never waits for it. A
** generator's limit is min(wall + max_ahead, local reservation, coordinator
** fence, layout end).
*/

/* What a coordinator adds to a generator's creation. */
typedef struct frond__gen_fence {
  int64_t start_after_ms;  /* start above the unit of this unix ms: the
                              fence of every earlier holder; 0: none */
  int64_t fence_ms;        /* initial coordinator fence, unix ms, already
                              durable at the coordinator: no ID whose unit
                              starts after it; INT64_MAX: no coordinator
                              fence */
  int64_t window_ms;       /* how far ahead the coordinator extends its fence
                              (enters the start slack rule) */
  void (*want)(void *ctx); /* called without the generator's lock when a
                              caller waits at the fence: extend it now. May
                              be NULL. */
  void *ctx;
} frond__gen_fence;

/* frond_gen_create with a coordinator's part; f NULL: none (exactly
** frond_gen_create). The start waits or refuses by the start slack with
** window max(opts->window_ms, f->window_ms). Errors as frond_gen_create;
** INVAL also for f->window_ms outside 0..86400000. */
int frond__gen_create_fenced(frond_gen **out, const frond_layout *l,
                             uint64_t node, const frond_gen_options *opts,
                             const frond__gen_fence *f, frond_error *err);
/* Raise the coordinator fence (never lowers it); republish the limit; wake
** waiters. Thread-safe; takes the generator's lock briefly. */
void frond__gen_set_fence(frond_gen *g, int64_t fence_ms);
/* Make every call fail with code (e.g. FROND_ENODE_ID_LOST) without
** consuming anything; waiting calls fail at once. code must be negative
** (0 is resume's job). A call already past its limit check when the block
** lands may still complete: it issues below the fence, which is what a
** successor starts above. Thread-safe. */
void frond__gen_block(frond_gen *g, int code);
/* Under the generator's lock, before any call can issue again: raise the
** logical clock above the unit of after_ms (0: no raise), raise the fence
** to fence_ms, then unblock. A call that starts after this returns issues
** above after_ms's unit; one that would be more than max_ahead in front of
** the wall clock waits up to max_wait, then fails CLOCK_BEHIND. Does not
** wait itself. Thread-safe. */
void frond__gen_resume(frond_gen *g, int64_t after_ms, int64_t fence_ms);
/* Raise the logical clock above the unit of after_ms, blocked or not (a
** block stays): no call that starts after this returns issues at or below
** that unit, and no value below it is given back. For a coordinator that
** learns of another holder's fence before it raises its own, whether or
** not the generator was ever blocked. Does not wait. Thread-safe. */
void frond__gen_raise_floor(frond_gen *g, int64_t after_ms);
/* The fence a coordinator should make durable now: now_ms + max_ahead +
** window_ms, capped at the layout's last unit, in unix ms. Pure. */
int64_t frond__gen_fence_target(const frond_gen *g, int64_t now_ms,
                                int64_t window_ms);
/* Current coordinator fence (unix ms; INT64_MAX: none) and the block code
** (0 when issuing). Thread-safe, lock-free. (The fence's getter is
** frond__gen_fence_ms: C gives the type frond__gen_fence that name.) */
int64_t frond__gen_fence_ms(const frond_gen *g);
int frond__gen_blocked(const frond_gen *g);
/* The count of g's blocks, resumes and floor raises (incremented last,
** with release, under g's lock): a caller that holds IDs drawn from g
** hands none out once it moved since before it drew them, so that a block
** or raise is a barrier for them too. The word lives as long as g; read
** it with acquire before a draw, relaxed before a hand-out. */
const _Atomic uint64_t *frond__gen_barriers(const frond_gen *g);
/* 1 while the generator's clock thread sleeps (no call for sleep_ms): its
** reservation and fence need no extension until a call wakes it. */
int frond__gen_asleep(const frond_gen *g);
/* How far ahead of the clock a stored fence or high water may be and still
** be explained by a crash: max_ahead + window + max_wait. Beyond it a start
** refuses (the clock went back across the restart); within it, it waits
** until the clock is within max_ahead of the start. The one rule for the
** generator's start and the coordinator's. */
int64_t frond__start_slack_ms(int64_t max_ahead_ms, int64_t window_ms,
                              int64_t max_wait_ms);
/* Set (from a signal handler: lock-free) to end the waits of a start: the
** coordinator's for an earlier holder of the node ID (a restart after a
** crash waits up to its session or lease) and the generator's for the
** clock to reach the fence (up to window_ms). They give up with
** FROND_ECLOSED having issued nothing; what a wait had not yet taken is
** left as it was, what the start had taken is given up as on any failed
** start. Never cleared. */
extern atomic_int frond__start_interrupted;
/* Unix ms of the unit of the layout's last expressible time (for fences):
** a fence at or past it never limits. Pure. */
int64_t frond__layout_last_unit_ms(const frond_layout *l);

/* ---- ID formats' keys as shared facts (format_fact.c) -----------------
**
** A keyed format's key fingerprint is a fact that every process issuing
** its numbers must agree on. It is recorded once where they meet by a
** fact function: record name = value when nothing is recorded under name,
** then give back what is recorded (ours, or the one recorded first) into
** recorded (len bytes) and say where into where ("the store sqlite:///x",
** wlen bytes). 0, or an error when the place cannot answer (STORE, COORD,
** IO: nothing learnt). */
#define FROND__FACT_NAME_MAX 64
typedef int (*frond__fact_fn)(void *ctx, const char *name, const char *value,
                              char *recorded, size_t len, char *where,
                              size_t wlen, frond_error *err);
/* The tag whose IDs f takes from src, "" for snowflake IDs. */
const char *frond__format_scope(const frond_format *f,
                                const frond_format_source *src);
/* The name f's fingerprint is recorded under for that scope
** ("key.order.d12.1.tag.orders"), at most FROND__FACT_NAME_MAX bytes of
** [A-Za-z0-9._-]; returns its length. */
int frond__format_fact_name(const frond_format *f, const char *scope, char *out,
                            size_t len);
/* The value f records under that name: its fingerprint; for a shard=
** format "shard=S,key=V,fingerprint=F" (V '-' for the unversioned key),
** since its one record stands for every S and version. At most
** FROND__FACT_VALUE_MAX bytes; returns its length. */
#define FROND__FACT_VALUE_MAX 64
int frond__format_fact_value(const frond_format *f, char *out, size_t len);
/* Check f's fingerprint for scope through fn(ctx): agreed, or
** KEY_MISMATCH naming both fingerprints, where and the name; either way
** f remembers it (frond__format_fact_ready). An unkeyed format is 0 without
** a call. Errors of fn leave f as it was. */
int frond__format_check_with(frond_format *f, const char *scope,
                             frond__fact_fn fn, void *ctx, frond_error *err);
/* Fact functions: a data directory (ctx: its path; a file per fact, read
** by this host only), the store of a segment allocator (ctx: the
** frond_seg; segment.c). */
int frond__dir_fact(void *ctx, const char *name, const char *value,
                    char *recorded, size_t len, char *where, size_t wlen,
                    frond_error *err);
int frond__seg_fact(void *ctx, const char *name, const char *value,
                    char *recorded, size_t len, char *where, size_t wlen,
                    frond_error *err);
/* The name of tag's row as the store of s spells it (its database may take
** other spellings for the row: another case, trailing spaces, accents,
** under its collation): TAG_NOT_FOUND without a row. */
int frond__seg_tag_spelling(frond_seg *s, const char *tag, char *out,
                            size_t len, frond_error *err);
/* frond__format_check_with in the store of s, for the numbers of a tag
** (scope, "" for snowflake IDs): the record is named after the tag as the
** store spells its row, so that every spelling the database takes for
** one row meets one record. A seq format whose tag is spelt otherwise is
** refused (TAG_INVALID): its periods' rows are named after it. */
int frond__format_check_seg(frond_format *f, const char *scope, frond_seg *s,
                            frond_error *err);

#endif /* FROND_CORE_H */
