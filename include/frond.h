/* SPDX-License-Identifier: Apache-2.0 */
/*
** frond.h -- the public interface of libfrond.
**
** Frond issues unique 64-bit IDs: snowflake IDs (time | node | sequence in
** 63 bits, no shared storage on the request path) and segment IDs (plain
** increasing integers per business tag, reserved in ranges from a database).
**
** Conventions, for every function below:
**   - Functions return int: 0 on success, a negative FROND_E* code otherwise.
**     frond_err_name() and frond_strerror() turn a code into its stable name
**     and a sentence. The names are what the HTTP and RESP fronts show.
**   - Functions that can fail take an optional `frond_error *err` (may be
**     NULL). On failure it receives the code and a message with the detail
**     (which value, which limit, the backend's own words). It is owned by the
**     caller and never allocated.
**   - Opaque handles are created by an _open or _create function and
**     released by the matching _close; nothing else frees them.
**
** Contents: errors, clocks, layouts, the snowflake generator and the
** segment allocator here; tag administration on a store in
** frond/store.h, logging in frond/log.h, coordinators in frond/coord.h
** and ID formats in frond/format.h, which this file includes at its end.
** Include frond.h alone: it is the whole interface.
*/
#ifndef FROND_H
#define FROND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FROND_VERSION_MAJOR 0
#define FROND_VERSION_MINOR 1
#define FROND_VERSION_PATCH 0
#define FROND_VERSION_STRING "0.1.0"

#if defined(__GNUC__)
#define FROND_EXPORT __attribute__((visibility("default")))
#else
#define FROND_EXPORT
#endif

/* ------------------------------------------------------------------------
** Errors
**
** One list, one row per error: number, stable name, message. Numbers and
** names never change once released; new errors are added at the end.
*/
#define FROND_ERRNO_MAP(XX)                                                    \
  XX(1, INVAL, "invalid argument")                                             \
  XX(2, NOMEM, "out of memory")                                                \
  XX(3, LAYOUT_INVALID, "invalid layout")                                      \
  XX(4, NODE_RANGE, "node ID out of the layout's range")                       \
  XX(5, CLOCK_BEHIND, "wall clock is behind the generator's clock")            \
  XX(6, TIME_EXHAUSTED, "the layout's time bits are exhausted")                \
  XX(7, ID_INVALID, "not a valid ID for this layout")                          \
  XX(8, HIGHWATER_CORRUPT, "high-water file is torn or corrupt")               \
  XX(9, IO, "I/O error")                                                       \
  XX(10, NODE_IN_USE, "node ID is in use by another process")                  \
  XX(11, TAG_NOT_FOUND, "tag not found")                                       \
  XX(12, TAG_INVALID, "invalid tag name")                                      \
  XX(13, TAG_EXISTS, "tag already exists")                                     \
  XX(14, SEGMENT_UNAVAILABLE, "no segment available for the tag")              \
  XX(15, STORE, "store error")                                                 \
  XX(16, STORE_URI, "invalid or unsupported store URI")                        \
  XX(17, NODE_ID_LOST, "node ID is no longer held")                            \
  XX(18, COUNT_INVALID, "invalid count")                                       \
  XX(19, COORD, "coordinator error")                                           \
  XX(20, CLOSED, "handle is closing")                                          \
  XX(21, LAYOUT_MISMATCH, "layout differs from the one the fleet records")     \
  XX(22, CLOCK_OFFSET, "clock differs from the fleet's beyond the bound")      \
  XX(23, FORMAT_INVALID, "invalid ID format spec")                             \
  XX(24, KEY_INVALID, "missing or invalid key")                                \
  XX(25, ID_TOO_LARGE, "ID does not fit the format's width")                   \
  XX(26, SEQUENCE_EXHAUSTED, "the period's sequence numbers are used up")      \
  XX(27, WOULD_BLOCK, "the call would wait on the store")                      \
  XX(28, STORE_MEMBER, "database is another member of a multi: store")         \
  XX(29, KEY_MISMATCH, "format key differs from the one recorded")             \
  XX(30, CONFIG, "the configuration cannot be used as given")                  \
  XX(31, STORE_PERMANENT, "the store refuses in a way retrying cannot fix")    \
  XX(32, FORKED, "handle used in a child process after fork()")                \
  XX(33, TAG_FLOOR, "below the IDs the tag may already have issued")           \
  XX(34, STORE_MEMBER_STALE, "multi: member is behind what the others record") \
  XX(35, STORE_TIMEOUT, "the store did not answer in time")                    \
  XX(36, STORE_MISMATCH, "servers do not name one store")                      \
  XX(37, UNAUTHORIZED, "no valid credential for a request that needs one")     \
  XX(38, FORBIDDEN, "the client is not granted this right or tag")             \
  XX(39, QUOTA_EXCEEDED, "over the client's or the tag's quota of IDs")        \
  XX(40, AUDIT_UNAVAILABLE, "the audit log cannot record the IDs")             \
  XX(41, SEGMENT_EXHAUSTED, "the tag has issued every ID up to its max")       \
  XX(42, DATACENTER_MISMATCH, "not the node range the coordinator records")    \
  XX(43, COORDINATOR_MISMATCH, "not the coordinator the store records")        \
  XX(44, TAG_OWNER, "an ordered tag is served by its owner, another node")

typedef enum {
  FROND_OK = 0,
#define FROND__ERR_ENUM(n, name, msg) FROND_E##name = -(n),
  FROND_ERRNO_MAP(FROND__ERR_ENUM)
#undef FROND__ERR_ENUM
} frond_errno;

/* Caller-owned detail for a failure. */
typedef struct frond_error {
  int code;          /* the FROND_E* code, 0 when none */
  char message[512]; /* one line, NUL-terminated, never empty on failure */
} frond_error;

/* The stable name of a code ("CLOCK_BEHIND"), or "UNKNOWN". Never NULL. */
FROND_EXPORT const char *frond_err_name(int code);
/* A short sentence for a code. Never NULL. */
FROND_EXPORT const char *frond_strerror(int code);
/* The code whose stable name is `name`, or 0 when there is none. */
FROND_EXPORT int frond_err_from_name(const char *name);

/* ------------------------------------------------------------------------
** Clocks
**
** A clock returns the wall time in unix milliseconds. Generators take one so
** tests can inject a fake; NULL means frond_clock_realtime. It is called from
** the caller's threads and from the generator's background thread, so it
** must be thread-safe.
*/
typedef int64_t (*frond_clock_fn)(void *ctx);

/* CLOCK_REALTIME in milliseconds. Thread-safe, never blocks. */
FROND_EXPORT int64_t frond_clock_realtime(void *ctx);

/* ------------------------------------------------------------------------
** Layouts
**
** An ID is 0 | time | node | sequence, most significant first, with
** time_bits + node_bits + seq_bits <= 63: IDs are below 2^(the sum), the
** bits above it are zero (the "js" preset keeps IDs below 2^53, which a
** JavaScript number holds exactly). The node field may be split into
** datacenter (high) and worker (low) bits. `time` counts units of unit_ms
** since epoch_ms (unix milliseconds).
*/
typedef struct frond_layout {
  char name[32];        /* preset name, or "custom" */
  unsigned time_bits;   /* >= 1 */
  unsigned node_bits;   /* >= 0 (0: one node ID, 0); == dc + worker bits */
  unsigned dc_bits;     /* 0 when the node field is not split */
  unsigned worker_bits; /* 0 when the node field is not split */
  unsigned seq_bits;    /* >= 1 */
  int64_t unit_ms;      /* >= 1 */
  int64_t epoch_ms;     /* unix ms; not in the future */
} frond_layout;

/* The preset Frond uses when none is named. */
#define FROND_LAYOUT_DEFAULT "frond"

/* Number of named presets, and the i-th one (0 <= i < count), or NULL. The
** returned layouts are static and valid for the life of the process. */
FROND_EXPORT size_t frond_layout_preset_count(void);
FROND_EXPORT const frond_layout *frond_layout_preset(size_t i);

/*
** Parse a layout spec: a preset name ("twitter", "sonyflake", "baidu",
** "instagram", "frond", "js") or comma-separated keys
**   time=N, node=N | dc=N + worker=N, seq=N, unit=<n>ms|<n>s,
**   epoch=<unix ms>|<YYYY-MM-DD>[THH:MM:SS[.mmm]Z]
** e.g. "time=41,dc=5,worker=5,seq=12,unit=1ms,epoch=2024-01-01T00:00:00Z".
** unit defaults to 1ms and epoch to the frond preset's. The result is
** validated (frond_layout_validate) against the real clock.
** Returns 0 or FROND_ELAYOUT_INVALID with the reason in err.
*/
FROND_EXPORT int frond_layout_parse(const char *spec, frond_layout *out,
                                    frond_error *err);

/* Check a layout: bits sum to at most 63, time and sequence at least 1 bit
** each (node bits may be 0: one node ID), a split that
** adds up, unit >= 1, epoch not after now_ms. Returns 0 or
** FROND_ELAYOUT_INVALID. */
FROND_EXPORT int frond_layout_validate(const frond_layout *l, int64_t now_ms,
                                       frond_error *err);

/* Write the layout as a spec that frond_layout_parse reads back to the same
** layout. Returns the length written (like snprintf), truncating to len. */
FROND_EXPORT int frond_layout_format(const frond_layout *l, char *buf,
                                     size_t len);

/* Bits an ID of the layout can use: time + node + sequence bits (63 for
** the classic layouts, 53 for "js"). Every ID is below 2^that. */
FROND_EXPORT unsigned frond_layout_id_bits(const frond_layout *l);
/* Largest node ID of the layout: 2^node_bits - 1. */
FROND_EXPORT uint64_t frond_layout_max_node(const frond_layout *l);
/* The unix ms of the first unit that no longer fits in time_bits: from then
** on the layout cannot issue IDs. Saturates at INT64_MAX. */
FROND_EXPORT int64_t frond_layout_end_ms(const frond_layout *l);
/* Milliseconds from now_ms (unix ms) until frond_layout_end_ms: how long
** the layout can still issue IDs; 0 once it has run out. Baidu's default
** layout ran out on 2024-11-20 and stopped the systems that used it: watch
** this (the server exports it as frond_snowflake_time_left_seconds). */
FROND_EXPORT int64_t frond_layout_time_left_ms(const frond_layout *l,
                                               int64_t now_ms);
/* IDs one node can issue per second at most: 2^seq_bits * 1000 / unit_ms. */
FROND_EXPORT double frond_layout_ids_per_second(const frond_layout *l);

/* The fields of one ID. */
typedef struct frond_fields {
  int64_t time;        /* units since the epoch */
  int64_t unix_ms;     /* start of that unit, in unix ms */
  uint64_t node;       /* the whole node field */
  uint64_t datacenter; /* high part of node when split, else 0 */
  uint64_t worker;     /* low part of node when split, else == node */
  uint64_t sequence;
} frond_fields;

/* Split an ID into its fields. Returns FROND_EID_INVALID for a negative ID
** or one at or above 2^frond_layout_id_bits. Pure function, thread-safe. */
FROND_EXPORT int frond_decode(const frond_layout *l, int64_t id,
                              frond_fields *out, frond_error *err);

/* Build an ID from f->time, f->node and f->sequence (datacenter, worker and
** unix_ms are ignored). Returns FROND_ETIME_EXHAUSTED, FROND_ENODE_RANGE or
** FROND_EINVAL when a field does not fit. Pure function, thread-safe. */
FROND_EXPORT int frond_compose(const frond_layout *l, const frond_fields *f,
                               int64_t *id, frond_error *err);

/* node = datacenter << worker_bits | worker, checked against the split. */
FROND_EXPORT int frond_layout_node(const frond_layout *l, uint64_t datacenter,
                                   uint64_t worker, uint64_t *node,
                                   frond_error *err);

/* ------------------------------------------------------------------------
** Snowflake generator
**
** State is one atomic 64-bit word laid out as the ID without its node bits:
** the next value to hand out. Issuing IDs within a time unit claims
** consecutive values with one atomic instruction on it (a fetch-add for
** one ID, a compare-and-swap for n; no lock) and ORs the node bits in;
** where a unit's sequence runs out, the call moves on to the next
** unit, so the generator's (logical) clock may run ahead of the wall clock
** ("borrowing"). Rules:
**   - the logical clock never goes back;
**   - while it is at most max_ahead_ms in front of the wall clock, IDs are
**     issued without waiting;
**   - beyond that the call waits for the wall clock, up to max_wait_ms, then
**     fails with FROND_ECLOCK_BEHIND (it fails at once when waiting
**     max_wait_ms could not be enough);
**   - a call that fails, for any reason, consumes nothing: the logical
**     clock, the high water it reports and the clean-close record count
**     only IDs actually issued; calls that wait are served before calls
**     that come later, and a call never fails while its IDs are allowed;
**   - with a high-water file, no ID is issued whose time is above the
**     reservation already made durable in that file (see below);
**   - under a coordinator, no ID is issued whose time is above the
**     coordinator's fence, already durable where every later holder of the
**     node ID reads it; a call that reaches the fence waits up to
**     max_wait_ms for a later one, then fails with FROND_ECOORD;
**   - when the layout's time bits run out, every call fails with
**     FROND_ETIME_EXHAUSTED; an ID is never negative or wrapped.
** Timing (leases, sessions, clocks) decides availability, never uniqueness.
**
** A background thread per generator follows the wall clock (about once per
** millisecond) and moves the reservation forward while IDs are being
** issued. After sleep_ms without a call it sleeps: it stops waking, and
** the reservation (and a coordinator's fence) are no longer extended. The
** first call after that takes the slow path, reads the clock, wakes the
** thread and may wait (within max_wait_ms) for one reservation write or
** fence extension; the rules above hold throughout.
**
** fork(): a generator belongs to the process that created it. In a child
** of fork() it would issue its parent's IDs (same node ID, same clock), so
** there every call fails with FROND_EFORKED and nothing is issued;
** frond_gen_close in the child frees the child's copy only (the parent's
** high-water file and lock are untouched). A child that needs snowflake
** IDs creates its own generator, on a node ID of its own (a coordinator
** opened in the child, or another static node ID), as a new process would.
**
** Threads: no call is a cancellation point. pthread_cancel of a thread
** inside a call (waiting, say) takes effect at the thread's next
** cancellation point after the call returned, its IDs issued or nothing
** consumed. No call is async-signal-safe: a signal handler must not call
** frond_gen_next or any other function of a generator (it may have
** interrupted a call holding the generator's lock).
*/
typedef struct frond_gen frond_gen;

enum { FROND_SEQ_ZERO = 0, FROND_SEQ_RANDOM = 1 };

#define FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS 1000
#define FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS 10
#define FROND_SNOWFLAKE_DEFAULT_WINDOW_MS 1000
#define FROND_SNOWFLAKE_DEFAULT_SLEEP_MS 1000
/* Deprecated spellings of the three above, kept for existing code. */
#define FROND_DEFAULT_MAX_AHEAD_MS                                             \
  FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS /* deprecated */
#define FROND_DEFAULT_MAX_WAIT_MS                                              \
  FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS /* deprecated */
#define FROND_DEFAULT_WINDOW_MS                                                \
  FROND_SNOWFLAKE_DEFAULT_WINDOW_MS /* deprecated */

typedef struct frond_gen_options {
  int64_t max_ahead_ms; /* default FROND_SNOWFLAKE_DEFAULT_MAX_AHEAD_MS */
  /*
  ** How long a call may wait for the wall clock, the reservation or the
  ** fence, from when it takes the generator's lock; -1 (the default):
  ** FROND_SNOWFLAKE_DEFAULT_MAX_WAIT_MS or two time units of the layout,
  ** whichever is longer, so that a layout with coarse units can always
  ** wait for its next unit. Two waits go past it, both bounded: a failed
  ** call consumes nothing, so one whose values lie below those of a
  ** concurrent call still on its way (claimed, not yet settled) waits for
  ** that call to settle, up to 50 ms (even with max_wait_ms 0); and the
  ** first call after the generator slept waits up to 1 s for its
  ** reservation write. The error names the bound that stopped the call:
  ** COORD when the fence is at or below the wall clock's bound,
  ** CLOCK_BEHIND otherwise.
  */
  int64_t max_wait_ms;
  int seq_start; /* FROND_SEQ_ZERO (default) or FROND_SEQ_RANDOM:
                      each new unit entered from the wall clock starts at
                      a random sequence in [0, min(100, 2^seq/16)) */
  /*
  ** High-water file, or NULL for none. With a file: create locks it (a
  ** second generator on the same file fails with FROND_ENODE_IN_USE), reads
  ** it and starts above the largest ID the record can stand for (its unit
  ** and sequence, composed in the layout it was written under), so that
  ** even under another layout (epoch, bits, unit) no number is issued
  ** twice. A record of another layout is refused (FROND_ELAYOUT_MISMATCH)
  ** unless layout_change is set. It waits when that start is ahead of the
  ** wall clock by less than the start slack, max_ahead_ms + window_ms +
  ** max_wait_ms, until it is within max_ahead_ms, and fails beyond:
  ** FROND_ECLOCK_BEHIND (the clock went back), or FROND_ELAYOUT_INVALID when
  ** a layout change put the start there (the message names both layouts,
  ** the old last ID and when the new layout would pass it). A record whose
  ** layout cannot be read is
  ** FROND_ELAYOUT_INVALID, never guessed around. A missing file is a first
  ** start; a torn or garbage one fails with FROND_EHIGHWATER_CORRUPT. While
  ** running, a reservation of "now + max_ahead_ms + window_ms" is kept
  ** durable (write, fsync, rename) ahead of every issued ID; close stores
  ** the exact last ID.
  */
  union {
    const char *high_water_path;
    const char *highwater_path; /* deprecated spelling */
  };
  int64_t window_ms;    /* reservation window, default
                           FROND_SNOWFLAKE_DEFAULT_WINDOW_MS */
  frond_clock_fn clock; /* NULL: frond_clock_realtime */
  void *clock_ctx;
  int64_t sleep_ms; /* the clock thread sleeps after this long without a
                       call; 0: it never sleeps. Default
                       FROND_SNOWFLAKE_DEFAULT_SLEEP_MS, 0..86400000 */
  /* 0 (the default): a high-water file written under another layout is
  ** refused with FROND_ELAYOUT_MISMATCH, naming both layouts and how long
  ** a switch would lock the recorded one out of the file (the new
  ** layout's IDs stay above the old one's until then). 1: the change is
  ** asked for: start under the new layout above the record, as described
  ** for high_water_path. */
  int layout_change;
} frond_gen_options;

/* Fill opts with the defaults. */
FROND_EXPORT void frond_gen_options_init(frond_gen_options *opts);

/*
** Create a generator for `node` under layout `l` (copied). opts may be NULL
** for the defaults. May block: reads and fsyncs the high-water file, and may
** wait for the wall clock as described above. Starts one thread.
** Errors: LAYOUT_INVALID, LAYOUT_MISMATCH, NODE_RANGE, CLOCK_BEHIND,
** TIME_EXHAUSTED, HIGHWATER_CORRUPT, NODE_IN_USE, IO, NOMEM, INVAL.
*/
FROND_EXPORT int frond_gen_create(frond_gen **out, const frond_layout *l,
                                  uint64_t node, const frond_gen_options *opts,
                                  frond_error *err);

/*
** Issue one ID into *id. Thread-safe; lock-free unless it has to wait for
** the wall clock, the reservation or the coordinator's fence. May block up
** to max_wait_ms. Errors: CLOCK_BEHIND, TIME_EXHAUSTED, COORD (the fence
** was not extended in time), the code a coordinator blocked the generator
** with (NODE_ID_LOST), FORKED (called in a child of fork()); on every error
** *id is left untouched and nothing is consumed. With GCC or Clang it is
** inlined into the caller (frond/inline.h): its cost is one atomic
** fetch-add.
*/
FROND_EXPORT int frond_gen_next(frond_gen *g, int64_t *id, frond_error *err);

/*
** Issue n consecutive IDs (in one atomic step) into out[0..n-1], in
** increasing order; no other call can issue an ID between out[0] and
** out[n-1]. n must be >= 1 and at most 2^seq_bits * 1000 (COUNT_INVALID).
** A block spans n / 2^seq_bits time units: once the generator has borrowed
** max_ahead, it waits for the wall clock to cover the whole block, so a
** block of more units than max_wait covers fails with CLOCK_BEHIND then.
** Callers that want sustained throughput ask for at most 2^seq_bits.
** Thread-safety and blocking as frond_gen_next. On failure nothing is
** written to out.
*/
FROND_EXPORT int frond_gen_next_n(frond_gen *g, size_t n, int64_t *out,
                                  frond_error *err);

/* The generator's layout and node ID. Thread-safe. */
FROND_EXPORT const frond_layout *frond_gen_layout(const frond_gen *g);
FROND_EXPORT uint64_t frond_gen_node(const frond_gen *g);

/* Unix ms of the unit of the value just below the next one to issue:
** the last issued ID's; before the first, the value just below the start
** point (where the predecessor stopped); once the generator has followed
** an idle wall clock (until its clock thread sleeps), the unit before the
** clock's. Failed calls never move it. What a coordinator reports as this
** node's high-water time. Thread-safe. */
FROND_EXPORT int64_t frond_gen_high_water_ms(frond_gen *g);

/* Counters since create; relaxed reads, thread-safe. */
typedef struct frond_gen_stats {
  uint64_t borrowed;      /* time units the logical clock entered ahead of
                             the wall clock (sequence overflow) */
  uint64_t waits;         /* calls that waited for the wall clock */
  uint64_t clock_behind;  /* calls that failed with CLOCK_BEHIND */
  uint64_t reservations;  /* high-water reservations made durable */
  int64_t ahead_ms;       /* logical clock minus wall clock, >= 0 */
  int64_t reserved_ms;    /* durable reservation, unix ms; 0 without file */
  int64_t last_error;     /* last background error code (0 when none) */
  int64_t fence_ms;       /* coordinator fence, unix ms; 0 without one */
  uint64_t fence_refused; /* calls that failed with COORD at the fence */
  int asleep;             /* the clock thread sleeps (no call lately) */
  uint64_t sleeps;        /* times it went to sleep */
} frond_gen_stats;
FROND_EXPORT void frond_gen_stats_get(frond_gen *g, frond_gen_stats *out);

/*
** Stop the background thread, store the exact high-water time (fsynced)
** and free the generator. Must not run concurrently with any other call on
** g. Returns 0, or IO when the final write failed (the reservation on disk
** still protects the next start). NULL is a no-op returning 0. In a child
** of fork() it frees the child's copy and writes nothing.
*/
FROND_EXPORT int frond_gen_close(frond_gen *g, frond_error *err);

/* ------------------------------------------------------------------------
** Segment allocator
**
** Plain integers per business tag, unique, increasing with one database
** (see frond_seg_next for a multi: store). A tag is a row of the table
** leaf_alloc (compatible with Meituan Leaf); allocating reserves
** [max_id - step, max_id) in one transaction. IDs are served from memory
** from two buffers; the next segment is loaded in the background once
** preload_pct of the current one is used. An allocator must not be used
** in a child process after fork() (FORKED).
**
** Stores are chosen by URI: "sqlite:///path/file.db" (also "sqlite:file.db"
** relative), "postgresql://..." / "postgres://..." (any libpq URI).
*/
typedef struct frond_seg frond_seg;
typedef struct frond_store frond_store;
/* A segment tag's bound, stride and order (frond_store_tag_create_seq).
** ordered: one fleet-wide sequence, served by one owner at a time
** (docs/segment.md, "Ordered tags"); fixed when the tag is created. */
typedef struct frond_tag_seq {
  int64_t max;
  int64_t increment;
  int64_t offset;
  int ordered;
} frond_tag_seq;

/* Longest tag name in bytes (leaf_alloc.biz_tag is varchar(128)). */
#define FROND_TAG_MAX 128
/* Default store when none is configured. */
#define FROND_STORE_DEFAULT "sqlite:frond.db"

typedef struct frond_seg_options {
  unsigned preload_pct; /* load the next segment once this share of the
                           current one is used; default 10 */
  int64_t max_step;     /* dynamic step cap, default 1000000 */
  int64_t wait_ms;      /* both buffers empty: wait this long for the loader,
                           then SEGMENT_UNAVAILABLE; default 50 */
  int64_t refresh_ms;   /* re-read the tag list this often (less often when
                           reading it costs over 0.25 % of a core); default
                           60000 */
  int64_t retry_min_ms; /* store failure backoff: first retry, default 100 */
  int64_t retry_max_ms; /* backoff ceiling, default 5000 */
  frond_clock_fn clock; /* NULL: frond_clock_realtime; times the dynamic
                           step (how long a segment lasted) */
  void *clock_ctx;
  int64_t first_wait_ms;    /* a tag's first use waits this long for its first
                            segment; default 5000 */
  unsigned miss_checks;     /* unknown tags: at most this many store look-ups
                            per second, default 50 */
  unsigned loaders;         /* loader threads, each with its own store
                            connection, loading segments of different tags
                            at once (a slow tag delays only itself);
                            default 4, 1..64 */
  int give_back;            /* frond_seg_close returns the rest of each tag's
                            last segment when no one allocated after it
                            (see frond_seg_close); default 1, 0: off */
  const char *owner;        /* ordered tags: the address (host:port) other
                            nodes forward this allocator's ordered tags
                            to when it owns them; NULL: it never owns one,
                            and their calls answer TAG_OWNER */
  int64_t ordered_lease_ms; /* how long an owner's claim on an ordered tag
                               lasts in the store unless renewed (every
                               third of it); the owner stops issuing a
                               tenth before, by its own clock; default
                               3000, 300..600000 */
} frond_seg_options;

FROND_EXPORT void frond_seg_options_init(frond_seg_options *opts);

/* Check a tag name: 1..FROND_TAG_MAX bytes of valid UTF-8 without control
** characters. Returns 0 or FROND_ETAG_INVALID with the reason. */
FROND_EXPORT int frond_tag_validate(const char *tag, size_t len,
                                    frond_error *err);

/*
** Open a segment allocator over the store at `store_uri` (NULL: the
** default). Creates leaf_alloc when missing, reads the tag list (names and
** steps, in one pass) and starts the loader threads. Segments are loaded
** lazily on a tag's first use: a tag never used costs a few dozen bytes.
** May block on the store. Errors: STORE_URI, STORE (the store could not
** be used now: down, busy, starting; worth retrying), STORE_PERMANENT (it
** refuses for good: no such database, user or file, a wrong password, no
** privilege; retrying will not help), NOMEM, INVAL.
*/
FROND_EXPORT int frond_seg_open(frond_seg **out, const char *store_uri,
                                const frond_seg_options *opts,
                                frond_error *err);

/*
** Next ID of `tag` (len bytes, not necessarily NUL-terminated). Thread-safe.
** Memory only while the buffers are healthy: one atomic fetch-add, no lock.
** May wait up to wait_ms for the loader (and on a tag's very first use up
** to first_wait_ms, for its first segment). An unknown tag is looked up in
** the store once (at most miss_checks per second) before TAG_NOT_FOUND, so
** a tag created since the last refresh works at once; that look-up blocks
** on the store. Unique, always. Order is what the store declares
** (frond_seg_order): with one database, IDs of a tag strictly increase per
** calling thread (every segment is above the ones before it); with a
** multi: store, they increase within a segment (one member's block), and
** the next block may lie below the current one (a member whose row lags):
** never rely on order across segments there.
** Errors: TAG_NOT_FOUND, TAG_INVALID, SEGMENT_UNAVAILABLE, INVAL, FORKED
** (in a child process after fork(): open a new allocator there), and
** the store's refusal when it refuses the tag's next segment (TAG_FLOOR,
** STORE_MEMBER, STORE_MEMBER_STALE).
*/
FROND_EXPORT int frond_seg_next(frond_seg *s, const char *tag, size_t len,
                                int64_t *id, frond_error *err);

/*
** The order a tag's IDs keep, as the allocator's store declares it (each
** backend declares one; docs/segment.md). Uniqueness never depends on it.
**   FROND_SEG_ORDER_TAG      every segment lies above the ones before it:
**                            a tag's IDs strictly increase per calling
**                            thread, and a batch or a range is above
**                            every ID taken before it (one database:
**                            sqlite, postgresql, mysql).
**   FROND_SEG_ORDER_SEGMENT  IDs increase within a segment only; the next
**                            segment may lie below the current one
**                            (multi:, whose members' blocks interleave).
** A caller that compares IDs (the end of a numbering, "the newest") may
** rely on more than within-segment order only under FROND_SEG_ORDER_TAG.
** s NULL: FROND_SEG_ORDER_SEGMENT, the least any store keeps.
*/
enum { FROND_SEG_ORDER_TAG = 0, FROND_SEG_ORDER_SEGMENT = 1 };
FROND_EXPORT int frond_seg_order(frond_seg *s);

/* n IDs of `tag` into out[0..n-1], not necessarily consecutive: they may
** span several segments (a batch larger than the buffers waits, up to
** wait_ms each time, for the segments it needs); increasing with one
** database, increasing within each segment with a multi: store (see
** frond_seg_next).
** All or nothing: on failure out holds nothing usable, and IDs the batch
** took are skipped, never handed out. Same errors plus COUNT_INVALID
** (n == 0). */
FROND_EXPORT int frond_seg_next_n(frond_seg *s, const char *tag, size_t len,
                                  size_t n, int64_t *out, frond_error *err);

/*
** Handles. A caller that issues from one tag again and again resolves it
** once and skips the look-up by name on every call:
**
**   frond_seg_tag *h;
**   frond_seg_tag_get(s, "orders", 6, &h, &err);
**   ... frond_seg_tag_next(h, &id, &err) from any thread ...
**
** A handle belongs to its allocator and stays valid until
** frond_seg_close; nothing frees it. It follows its tag: a tag deleted from
** the store (seen at a refresh) fails with TAG_NOT_FOUND through the handle
** too, and works again through the same handle once it is created again.
*/
typedef struct frond_seg_tag frond_seg_tag;

/* Resolve `tag` (len bytes). An unknown tag is looked up in the store as
** frond_seg_next does (at most miss_checks per second; blocks on the
** store). Errors: TAG_NOT_FOUND, TAG_INVALID, NOMEM, INVAL. Thread-safe. */
FROND_EXPORT int frond_seg_tag_get(frond_seg *s, const char *tag, size_t len,
                                   frond_seg_tag **out, frond_error *err);
/* The same from memory only: never blocks, an unknown tag is TAG_NOT_FOUND
** at once. */
FROND_EXPORT int frond_seg_tag_find(frond_seg *s, const char *tag, size_t len,
                                    frond_seg_tag **out, frond_error *err);
/* frond_seg_next and frond_seg_next_n on a handle: the same contract,
** without the look-up. */
FROND_EXPORT int frond_seg_tag_next(frond_seg_tag *t, int64_t *id,
                                    frond_error *err);
FROND_EXPORT int frond_seg_tag_next_n(frond_seg_tag *t, size_t n, int64_t *out,
                                      frond_error *err);
/* The tag's name, NUL-terminated; valid as long as the handle. */
FROND_EXPORT const char *frond_seg_tag_name(const frond_seg_tag *t);

/* With GCC or Clang, frond_seg_tag_next is inlined into the caller
** (frond/inline.h): its cost is one atomic fetch-add. */

/*
** Range leases, for clients that hand out IDs themselves (a tinyid-style
** client-side segment): n consecutive IDs [*start, *start + n) in one call.
** The range comes from one segment: from the current one when it has n
** left; else the rest of the current one is skipped and the range is cut
** from the next; a range larger than the buffered segments waits (up to
** first_wait_ms, as a first segment: a store transaction is the design
** here, not a slow store) for a segment of at least n from the store, one
** transaction, without changing the tag's dynamic step. With one
** database, ordered like a batch: above every ID of the tag this process
** handed out before the call, below every one after it (a multi: store
** promises no order across segments). IDs of a range the
** client does not use are skipped, never issued again, as are IDs skipped
** to keep a range whole. 1 <= n <= FROND_SEG_RANGE_MAX, else
** COUNT_INVALID; on a store whose segments have a fixed size (multi:'s
** blocks) n above the tag's step is COUNT_INVALID too, at once. Errors as
** frond_seg_next_n.
*/
#define FROND_SEG_RANGE_MAX (INT64_C(1) << 30)
FROND_EXPORT int frond_seg_tag_range(frond_seg_tag *t, int64_t n,
                                     int64_t *start, frond_error *err);
FROND_EXPORT int frond_seg_range(frond_seg *s, const char *tag, size_t len,
                                 int64_t n, int64_t *start, frond_error *err);

/* One buffer of a tag: IDs [start, end); pos is the next to hand out. */
typedef struct frond_seg_buffer {
  int64_t start;
  int64_t end;
  int64_t pos;
  int64_t step;
  int ready; /* holds a committed segment */
} frond_seg_buffer;

typedef struct frond_tag_info {
  char tag[FROND_TAG_MAX + 1];
  frond_seg_buffer current;
  frond_seg_buffer next;
  int64_t step;         /* step the next load will use */
  int64_t row_step;     /* the row's configured step */
  int64_t last_load_ms; /* unix ms of the last successful load, 0: never */
  uint64_t issued;      /* IDs taken by this process (handed out, or
                           skipped by a batch that failed) */
  uint64_t loads;       /* successful loads */
  uint64_t load_failures;
  int loading; /* a load is requested or in flight */
  int in_use;  /* used since open (else nothing is buffered for it) */
  double rate; /* IDs per second between the last two frond_seg_sample */
} frond_tag_info;

/* Snapshot of every tag's state, sorted by name (bytewise), in *out (free
** with frond_free); *n is the count. Thread-safe. Costs O(tags): with many
** tags, prefer frond_seg_tag_query. */
FROND_EXPORT int frond_seg_tag_list(frond_seg *s, frond_tag_info **out,
                                    size_t *n, frond_error *err);
/* The 0.1 name of frond_seg_tag_list: still compiles, and still exported
** for programs linked against 0.1. */
#define frond_seg_tags frond_seg_tag_list /* deprecated */

enum { FROND_SEG_BY_NAME = 0, FROND_SEG_BY_RATE = 1 };

/* Which tags frond_seg_tag_query returns. */
typedef struct frond_seg_query {
  const char *match; /* only names that contain these bytes; NULL or "":
                        every tag */
  size_t offset;     /* skip this many of those */
  size_t limit;      /* at most this many; 0: no limit */
  int order;         /* FROND_SEG_BY_NAME (bytewise), or FROND_SEG_BY_RATE:
                        tags in use only, fastest first (the top N with
                        limit N) */
} frond_seg_query;

/* A page of tags: *total receives how many match (before offset and
** limit), *out the page (free with frond_free; NULL when empty), *n its
** length. By name: O(matches before the page + the page) without match,
** O(tags) with one; the name order is kept up to date as tags come and go.
** By rate: O(tags in use). Thread-safe. Errors: NOMEM. */
FROND_EXPORT int frond_seg_tag_query(frond_seg *s, const frond_seg_query *q,
                                     frond_tag_info **out, size_t *n,
                                     size_t *total, frond_error *err);
/* One tag's state. Thread-safe. */
FROND_EXPORT void frond_seg_tag_info(frond_seg_tag *t, frond_tag_info *out);

/* The tag's attributes (frond_tag_seq) as this process's last load of it
** read them into *out ({0, 1, 0}: none, or not loaded yet), and into
** *remaining the IDs it can still issue up to its max as this process
** last saw the store: what its buffers hold plus what its row had not
** allocated (allocations by other processes since are not counted); -1
** without a max, or while the tag is unknown (a refresh found it created
** again; until its next load). Thread-safe; never blocks. */
FROND_EXPORT void frond_seg_tag_seq(frond_seg_tag *t, frond_tag_seq *out,
                                    int64_t *remaining);

/* Measure rates: for every tag in use, the IDs taken since the previous
** call per second, shown as frond_tag_info.rate. Call it periodically
** (the server does once a second). O(tags in use); takes no tag's lock.
** Thread-safe. */
FROND_EXPORT void frond_seg_sample(frond_seg *s);

/* Read one tag's row again now (after creating, changing or deleting it
** elsewhere): a row that exists is added or revived with its step, a
** missing one is removed. Not rate-limited; blocks on the store. Errors:
** TAG_NOT_FOUND (no row; removed if it was known), TAG_INVALID, STORE. */
FROND_EXPORT int frond_seg_refresh_tag(frond_seg *s, const char *tag,
                                       size_t len, frond_error *err);

/* Re-read the tag list from the store now (also done every refresh_ms),
** in pages, in one pass: O(tags). May block on the store. */
FROND_EXPORT int frond_seg_refresh(frond_seg *s, frond_error *err);

/* Process-wide counters of a segment allocator. */
typedef struct frond_seg_stats {
  uint64_t loads;
  uint64_t load_failures;
  uint64_t unavailable;      /* calls that failed with SEGMENT_UNAVAILABLE */
  int store_ok;              /* the last store operation succeeded */
  uint64_t tags;             /* tags known (rows of the store) */
  uint64_t tags_in_use;      /* tags used since open */
  unsigned loaders;          /* loader threads */
  unsigned loaders_busy_max; /* the most loaders in the store at once */
  /* Ranges the store handed out at or below one this allocator had
  ** already taken (the row went back: a failover that lost writes),
  ** refused and replaced by a range above (docs/segment.md). */
  uint64_t rollbacks;
  /* A multi: store's members (0 for a single database) and, bit i set,
  ** those whose last call worked (docs/segment.md). */
  unsigned store_members;
  uint64_t store_members_up;
} frond_seg_stats;
FROND_EXPORT void frond_seg_stats_get(frond_seg *s, frond_seg_stats *out);

/* Stop the loader and free everything. Not concurrent with other calls on
** s. With give_back (the default), each tag's buffers are closed and the
** numbers of its last allocation not handed out are given back to the
** store in one compare-and-set on the row's max_id, when no one allocated
** after it and the store does give-backs (a plain SQL store; not multi:
** nor frond://): the next allocation continues at the first number not
** handed out. Otherwise, or when the store does not answer within 3 s,
** they are abandoned (never reused). Never fails. NULL is a no-op.
** In a child process after fork(), it only forgets s: its threads, locks
** and store connections are the parent's (its memory is the parent's
** copy, left as it is). */
FROND_EXPORT void frond_seg_close(frond_seg *s);

/* Free memory returned by libfrond. NULL is a no-op. */
FROND_EXPORT void frond_free(void *p);

/* ------------------------------------------------------------------------
** Tag administration, logging, coordinators, ID formats and the calls
** compiled into the caller, in their own files: part of this interface (include frond.h,
** never them alone).
*/
#include "frond/store.h"
#include "frond/log.h"
#include "frond/coord.h"
#include "frond/format.h"
#include "frond/inline.h"

#ifdef __cplusplus
}
#endif
#endif /* FROND_H */
