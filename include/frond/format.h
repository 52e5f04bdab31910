/* SPDX-License-Identifier: Apache-2.0 */
/*
** frond/format.h -- ID formats: order numbers, daily sequences, UUIDv7,
** UUIDv4, ULID, ObjectId.
** Part of frond.h, which includes it; see the conventions there.
*/
#ifndef FROND_FROND_FORMAT_H
#define FROND_FROND_FORMAT_H

#ifndef FROND_H
#error "include <frond.h>, not <frond/format.h>"
#endif

/* ------------------------------------------------------------------------
** ID formats
**
** Strings made from IDs, each kind described by a format spec
** "KIND[:KEY=VALUE,...]" (docs/formats.md has the full reference):
**
**   decimal            a 64-bit ID as a decimal number (what `frond next`
**                      prints)
**   base62, base32     a 64-bit ID as a fixed-length string that sorts like
**                      the number: 11 characters of 0-9A-Za-z (in that
**                      order), or 13 of Crockford base32
**   order              a non-enumerable order number: a keyed permutation
**                      of [0, 10^digits) or [0, 32^chars), optional key
**                      version, check character and date or literal prefix
**                      e.g. "order:digits=12,check=damm,key=1"
**   seq                a sequence that restarts every day, month or year,
**                      per tag, after the period's date in a time zone
**                      e.g. "seq:tag=orders,period=day,digits=6,tz=Asia/Tokyo"
**   uuid7, uuid4       RFC 9562 UUIDs (v7 monotonic per generator)
**   ulid               ULID (monotonic per generator)
**   objectid           MongoDB ObjectId
**
** uuid7, uuid4, ulid and objectid are unique across processes only with
** high probability: their random bits make a repeat unlikely, not
** impossible (docs/safety.md gives the odds). uuid7, ulid and objectid
** take scope=node to be unique by construction instead: each is then made
** of a snowflake ID of the process' generator, embedded whole after the
** time field, so that it is unique as the fleet's snowflake IDs are (by
** the node ID and the fence rule), and decodes to it (its node):
**   e.g. "uuid7:scope=node"; scope=random is the default.
**
** Every string a format makes has the same length (frond_format_length),
** but decimal.
** A 64-bit ID comes from a snowflake generator, or from a segment tag when
** the spec names one (tag=) or the source does; seq needs a segment
** allocator and the tag's base row (see frond_format_next).
*/

enum {
  FROND_FORMAT_DECIMAL = 1,
  FROND_FORMAT_BASE62 = 2,
  FROND_FORMAT_BASE32 = 3,
  FROND_FORMAT_ORDER = 4,
  FROND_FORMAT_SEQ = 5,
  FROND_FORMAT_UUID7 = 6,
  FROND_FORMAT_UUID4 = 7,
  FROND_FORMAT_ULID = 8,
  FROND_FORMAT_OBJECTID = 9
};

/* "decimal", "base62", ... for a kind; "unknown" otherwise. Never NULL. */
FROND_EXPORT const char *frond_format_kind_name(int kind);

/*
** Keys for order numbers (and keyed sequences). A key is 32 bytes, written
** as 64 hex digits or 44 characters of base64. Text holds one key per line:
** "KEY" (the unversioned key, for formats without key=) or "V:KEY" where V
** is the key version, one character 0-9 or A-Z, which a versioned format
** writes into every number so that decoding picks the right key after a
** rotation. Blank lines and lines starting with '#' are skipped. Keys never
** come from a command line: from a file or from FROND_ORDER_KEY (the same
** syntax; entries may also be separated by spaces or commas).
*/
typedef struct frond_order_keys frond_order_keys;

#define FROND_ORDER_KEY_ENV "FROND_ORDER_KEY"
#define FROND_ORDER_KEY_BYTES 32

/* Parse key text (len bytes). Errors: KEY_INVALID (which line and why),
** NOMEM. The keys are kept in memory locked against swapping where the
** system allows, and wiped by frond_order_keys_free. */
FROND_EXPORT int frond_order_keys_parse(const char *text, size_t len,
                                        frond_order_keys **out,
                                        frond_error *err);
/* Load keys from the file `path`, or with path NULL from the environment
** variable FROND_ORDER_KEY. A file that others may read or write (mode
** bits 007) is refused. Errors: KEY_INVALID (missing variable, unreadable
** or open file, bad content), IO, NOMEM. */
FROND_EXPORT int frond_order_keys_load(const char *path, frond_order_keys **out,
                                       frond_error *err);
/* Wipe and free. NULL is a no-op. */
FROND_EXPORT void frond_order_keys_free(frond_order_keys *k);

/* Characters a number needs so that every ID up to max_id fits, in radix
** 10 or 32: 19 digits (or 13 base32 characters) hold every snowflake ID,
** frond_order_width(INT64_MAX, 10) == 19. 0 for another radix. */
FROND_EXPORT unsigned frond_order_width(uint64_t max_id, unsigned radix);

typedef struct frond_format frond_format;

/*
** Parse a format spec and build the format. `keys` is needed by order
** formats and by seq formats with key=, and may be NULL otherwise; the
** format keeps what it needs (keys may be freed afterwards). Loads the time
** zone named by tz= from the system database ($TZDIR, else
** /usr/share/zoneinfo). Errors: FORMAT_INVALID (the spec, with which key
** and why), KEY_INVALID (no key of the version the spec asks for), NOMEM.
** Generators of uuid7, ulid and objectid formats are created here; they
** read the clock given (NULL: frond_clock_realtime).
*/
FROND_EXPORT int frond_format_create(frond_format **out, const char *spec,
                                     const frond_order_keys *keys,
                                     frond_clock_fn clock, void *clock_ctx,
                                     frond_error *err);
/* Free a format. Not concurrent with other calls on f. NULL is a no-op. */
FROND_EXPORT void frond_format_free(frond_format *f);

/* The kind, and the length of every string f makes, without the NUL
** (decimal: the longest, 19). */
FROND_EXPORT int frond_format_kind(const frond_format *f);
/* 1 for uuid7, ulid and objectid with scope=node: made of the source's
** snowflake IDs (src->gen); 0 otherwise. */
FROND_EXPORT int frond_format_node_scoped(const frond_format *f);
FROND_EXPORT size_t frond_format_length(const frond_format *f);
/* The spec with every default spelled out ("order:digits=12,check=damm,
** key=1,rounds=8,tz=UTC"): frond_format_create reads it back to the same
** format. Returns the length (like snprintf), truncating to len. */
FROND_EXPORT int frond_format_spec(const frond_format *f, char *buf,
                                   size_t len);
/* The segment tag the spec names (tag=), or NULL. */
FROND_EXPORT const char *frond_format_tag(const frond_format *f);
/* The largest 64-bit ID f can encode (order: 10^digits - 1 capped at
** INT64_MAX; decimal, base62, base32: INT64_MAX); 0 for the other kinds. */
FROND_EXPORT int64_t frond_format_max_id(const frond_format *f);

/*
** Encode a 64-bit ID (decimal, base62, base32, order) into buf, NUL-
** terminated; len must exceed frond_format_length(f). unix_ms is the time
** a date prefix shows (the ID's own time for a snowflake ID: see
** frond_decode); formats without one ignore it. Pure apart from reading f;
** thread-safe. Errors: ID_TOO_LARGE (id does not fit the width: the
** message says how many characters it needs), ID_INVALID (negative),
** INVAL (kind takes no 64-bit ID, buffer too small).
*/
FROND_EXPORT int frond_format_encode(const frond_format *f, int64_t id,
                                     int64_t unix_ms, char *buf, size_t len,
                                     frond_error *err);

/* Where frond_format_next takes 64-bit IDs and sequences from. Any member
** may be NULL / 0 when no format in use needs it. */
typedef struct frond_format_source {
  frond_gen *gen;  /* snowflake IDs: decimal, base62, base32, order */
  frond_seg *seg;  /* segment IDs (formats with tag=, or tag below) and
                      every seq format */
  const char *tag; /* segment tag for formats whose spec names none; NULL:
                      use gen */
  int no_store;    /* 1: where the call would wait on the store (a seq
                      period's first use in this allocator: its row is made
                      and its first segment loaded; a tag whose next segment
                      is not loaded yet), fail at once with WOULD_BLOCK
                      instead, so that an event loop can repeat the call on
                      a thread that may block; a tag the allocator does not
                      know is TAG_NOT_FOUND without asking the store. IDs a
                      batch took before it stopped are skipped, never
                      issued */
} frond_format_source;

/*
** Issue one new ID string into buf (NUL-terminated, len >
** frond_format_length(f)). uuid7/ulid/objectid use f's own generator
** (with scope=node, a snowflake ID of src->gen each), uuid4 the system's
** random numbers, the others take an ID from src (a segment tag: the
** spec's tag=, else src->tag; otherwise src->gen). A
** date prefix shows the snowflake ID's time, or the segment allocator's
** clock. seq takes the period's date from the segment allocator's clock
** (frond_seg_options.clock) in the format's time zone; the period's row
** "<tag>:<period>" is created on first use from the base tag's row (step
** capped at 1/1000 of the period's numbers), tolerating a concurrent
** create by another node. Thread-safe; blocks only where the source does
** (and for a seq period's first use, on the store).
** A keyed format issues only once frond_format_check agreed for this
** source (below). Errors: those of the source (CLOCK_BEHIND,
** TAG_NOT_FOUND, SEGMENT_UNAVAILABLE, ...), ID_TOO_LARGE,
** SEQUENCE_EXHAUSTED (the period's numbers are used up: never a wrap),
** WOULD_BLOCK (with src->no_store), KEY_MISMATCH (the check refused the
** key), INVAL (a needed source is NULL; a keyed format not checked).
*/
FROND_EXPORT int frond_format_next(frond_format *f,
                                   const frond_format_source *src, char *buf,
                                   size_t len, frond_error *err);
/* n new ID strings, increasing where the kind is ordered (all but uuid4
** and the keyed ones), written to out + i * stride for i < n, each
** NUL-terminated (stride > frond_format_length(f)). IDs are taken from
** the source 256 at a time; on failure nothing in out is usable, and IDs
** already taken are skipped, never handed out again. */
FROND_EXPORT int frond_format_next_n(frond_format *f,
                                     const frond_format_source *src, size_t n,
                                     char *out, size_t stride,
                                     frond_error *err);

/*
** Write-spreading layouts (decimal, base62 and base32 formats; see
** docs/formats.md#write-spreading-layouts). reverse=yes writes an ID with
** its 63 bits reversed; shard=S puts S bits of a keyed hash of a caller's
** key (a user ID) above the ID, so that all IDs of one key share a shard
** that can be read from them. A shard format needs the caller's key on
** every issue (frond_format_next_for); its hash key is a shared fact like
** an order number's key (below).
*/
#define FROND_SHARD_KEY_MAX 256
/* Issue n strings as frond_format_next_n does, each in the shard of the
** caller's key (1 to FROND_SHARD_KEY_MAX bytes). Errors: those of
** frond_format_next_n; INVAL (no key for a shard format, a key for any
** other, a key of no or too many bytes). */
FROND_EXPORT int frond_format_next_for(frond_format *f,
                                       const frond_format_source *src,
                                       const char *key, size_t key_len,
                                       size_t n, char *out, size_t stride,
                                       frond_error *err);
/* The shard= bits of f, 0 without. */
FROND_EXPORT unsigned frond_format_shard_bits(const frond_format *f);
/* The shard a caller's key lands on (the same on every process sharing
** the master key). Errors: INVAL. */
FROND_EXPORT int frond_format_shard_of(const frond_format *f, const char *key,
                                       size_t len, uint64_t *shard,
                                       frond_error *err);
/* The shard of a string f made. Errors: those of frond_format_decode,
** INVAL (no shard= bits). */
FROND_EXPORT int frond_format_shard_in(const frond_format *f, const char *s,
                                       size_t len, uint64_t *shard,
                                       frond_error *err);

/*
** Keys as shared facts. Processes that issue the numbers of one keyed
** format (order numbers, seq with key=) from IDs that never repeat between
** them still issue equal numbers when their keys differ, or their rounds=,
** or anything else that permutes the numbers under one key version. So a
** keyed format issues nothing until its key's fingerprint has been
** checked against the record of the place the processes share, made there
** by the first of them:
**   - IDs of a segment tag (seq, tag=, or src->tag): the store of that
**     tag, through src->seg (required);
**   - snowflake IDs: the coordinator's record when coord keeps facts
**     (lease+ and zk:// do, and the default coordinator is a lease in the
**     store's database; static: does not), else src->seg's store when
**     src->seg is given (a server's store), else the file
**     dir/frond-fact-<name> (dir: a data directory), which only this host
**     reads: a warning says that nothing shared checks it.
** The record is one per key version: a new version records its own, so a
** key is rotated by adding a version (key=2), never by changing one.
*/

/* The fingerprint of f's key (16 hex digits of keyed BLAKE2b over f's
** kind, radix, width and rounds: it changes with any of them and reveals
** nothing of the key) into buf, NUL-terminated, truncated to len; returns
** its length, 0 for a format without a key. */
FROND_EXPORT int frond_format_fingerprint(const frond_format *f, char *buf,
                                          size_t len);
/* Check f's fingerprint where the list above says for the source src (the
** one frond_format_next will be given): record it when nothing is
** recorded, and refuse with KEY_MISMATCH when another is, naming both
** fingerprints and where the record is; f remembers the outcome, and
** frond_format_next on a keyed format fails until a check agreed (INVAL,
** or the KEY_MISMATCH). Call it before issuing and again after the store
** or coordinator comes back (a reconnect). An unkeyed format: 0 at once.
** May block on the store or the coordinator. Thread-safe. Errors:
** KEY_MISMATCH, STORE, COORD, IO (the file), INVAL (no place given). */
FROND_EXPORT int frond_format_check(frond_format *f,
                                    const frond_format_source *src,
                                    frond_coord *coord, const char *dir,
                                    frond_error *err);
/* 1 when f may issue: no key, or a check agreed (or was skipped). */
FROND_EXPORT int frond_format_checked(const frond_format *f);
/* Forget the check: f issues nothing until frond_format_check agrees again
** (after a reconnect, so that a changed record is seen before the next
** number). A check under way reads the record again. Thread-safe. */
FROND_EXPORT void frond_format_recheck(frond_format *f);
/* Issue without any check of the key: nothing then stops another process
** from issuing this format's numbers under another key. For a process
** that keeps nothing between runs anyway (`frond next --no-high-water`). */
FROND_EXPORT void frond_format_skip_check(frond_format *f);

/* What a string holds. Fields that a kind does not carry are 0 and their
** has_ flag is 0. */
typedef struct frond_format_value {
  int kind;          /* FROND_FORMAT_* */
  int has_id;        /* id is set: decimal, base62, base32, order, seq,
                        and uuid7/ulid/objectid of scope=node (the snowflake
                        ID inside) */
  int64_t id;        /* the 64-bit ID; for seq the sequence number */
  int has_time;      /* unix_ms is set */
  int64_t unix_ms;   /* uuid7/ulid: ms; objectid: seconds * 1000; a date
                        prefix or seq period: its local start */
  uint8_t bytes[16]; /* uuid/ulid: 16 bytes, objectid: 12 */
  size_t nbytes;
  int uuid_version;   /* uuid7/uuid4 (and other UUIDs): the version */
  uint64_t counter;   /* objectid: the 3-byte counter */
  uint8_t process[5]; /* objectid: the per-process random value */
  char key_version;   /* order/seq: the key version, '\0' when none */
  char period[16];    /* seq: "20261123" / "202611" / "2026"; order with
                         a date prefix: the prefix as written */
  char tag[FROND_TAG_MAX + 1]; /* seq: "<tag>:<period>"; order from a
                                  segment: the tag; else "" */
} frond_format_value;

/*
** Decode a string made by f: lower case, Crockford's aliases (I and L for
** 1, O for 0) and hyphens are accepted in base32 characters. A check
** character that does not match is ID_INVALID. An order number decodes
** with the key of its version; a wrong key (or a mistyped number that the
** check did not catch) yields another ID, not an error, unless the result
** is out of range. Thread-safe. Errors: ID_INVALID (shape, characters,
** check, range), KEY_INVALID (no key for the version in the string).
*/
FROND_EXPORT int frond_format_decode(const frond_format *f, const char *s,
                                     size_t len, frond_format_value *out,
                                     frond_error *err);

/*
** Decode a string by its shape alone, with no spec: a UUID (36 characters
** with hyphens, or 32 hex digits), a ULID (26 Crockford characters), an
** ObjectId (24 hex digits), a decimal ID (1-19 digits), a base32 ID (13
** Crockford characters, not all digits) or a base62 ID (11 characters, not
** all digits). Order numbers and sequences need their format. Errors:
** ID_INVALID (no shape fits, or the value is out of range).
*/
FROND_EXPORT int frond_format_decode_any(const char *s, size_t len,
                                         frond_format_value *out,
                                         frond_error *err);

/* ---- 128-bit and 96-bit IDs, usable without a format ---- */

#define FROND_UUID_STRLEN 36
#define FROND_ULID_STRLEN 26
#define FROND_OBJECTID_STRLEN 24

/*
** UUIDv7 (RFC 9562): 48-bit unix ms, then RFC 9562 section 6.2 method 1:
** a 16-bit counter in rand_a (12 bits) and the 4 leftmost bits of rand_b,
** seeded at every new millisecond with 15 random bits (the top bit stays 0
** as a rollover guard), then 58 random bits. UUIDs of one generator
** strictly increase: the counter and the millisecond are one atomic word,
** advanced lock-free; a rollover (32,768 or more UUIDs in one ms) or a clock
** that goes back moves the timestamp ahead of the clock rather than back.
** Random bits come from a keyed PRF (SipHash, libsodium) over the counter
** word, keyed from the system's random numbers, re-keyed after fork().
*/
typedef struct frond_uuid7 frond_uuid7;
/* clock NULL: frond_clock_realtime. Errors: NOMEM, IO (no randomness). */
FROND_EXPORT int frond_uuid7_create(frond_uuid7 **out, frond_clock_fn clock,
                                    void *clock_ctx, frond_error *err);
/* Next UUID into out. Thread-safe, lock-free, never blocks, never fails. */
FROND_EXPORT void frond_uuid7_next(frond_uuid7 *g, uint8_t out[16]);
FROND_EXPORT void frond_uuid7_free(frond_uuid7 *g);
/* A UUIDv4 from the calling thread's keystream (AES-256-CTR on a CPU
** with AES-NI, ChaCha20 elsewhere), keyed from the system's random
** numbers (docs/formats.md). Thread-safe. Errors: IO (no
** randomness).
** Signal handlers: frond_uuid4 and frond_uuid7_next (and the ULID and
** ObjectId ones) may be called in a handler that interrupted any of them
** on the same thread: the handler's call takes its bits from the system
** and never repeats the bits of the call it interrupted. They are not
** async-signal-safe otherwise: a thread's first call allocates its state,
** and the default clock may start a thread, so a thread whose handler
** makes IDs makes one first outside it, and the process passes
** frond_uuid7_create (and the others) a clock function of its own that
** reads clock_gettime (frond_clock_realtime selects the default). */
FROND_EXPORT int frond_uuid4(uint8_t out[16], frond_error *err);
/* Lower-case 8-4-4-4-12 form, NUL-terminated (37 bytes). */
FROND_EXPORT void frond_uuid_format(const uint8_t u[16],
                                    char out[FROND_UUID_STRLEN + 1]);
/* Read a UUID: 36 characters with hyphens or 32 hex digits, any case.
** Errors: ID_INVALID. */
FROND_EXPORT int frond_uuid_parse(const char *s, size_t len, uint8_t out[16],
                                  frond_error *err);

/*
** ULID: 48-bit unix ms and 80 random bits, 26 Crockford base32 characters.
** Monotonic per generator: within one millisecond the random part is the
** previous one plus 1, over a 79-bit random base per millisecond so the 80
** bits never overflow; at 65,536 ULIDs in one ms the timestamp moves ahead
** of the clock (one atomic word, lock-free, as for UUIDv7).
*/
typedef struct frond_ulid frond_ulid;
FROND_EXPORT int frond_ulid_create(frond_ulid **out, frond_clock_fn clock,
                                   void *clock_ctx, frond_error *err);
FROND_EXPORT void frond_ulid_next(frond_ulid *g, uint8_t out[16]);
FROND_EXPORT void frond_ulid_free(frond_ulid *g);
FROND_EXPORT void frond_ulid_format(const uint8_t u[16],
                                    char out[FROND_ULID_STRLEN + 1]);
/* Any case, Crockford's aliases; the first character at most '7'. */
FROND_EXPORT int frond_ulid_parse(const char *s, size_t len, uint8_t out[16],
                                  frond_error *err);

/*
** MongoDB ObjectId: 4-byte unix seconds, 5-byte random value per process
** (and per generator; new after fork()), 3-byte counter starting at a
** random value and incremented by one per ObjectId, big-endian. Unique and
** increasing per generator: more than 2^24 in one second moves the seconds
** ahead of the clock instead of repeating a counter value.
*/
typedef struct frond_objectid frond_objectid;
FROND_EXPORT int frond_objectid_create(frond_objectid **out,
                                       frond_clock_fn clock, void *clock_ctx,
                                       frond_error *err);
FROND_EXPORT void frond_objectid_next(frond_objectid *g, uint8_t out[12]);
FROND_EXPORT void frond_objectid_free(frond_objectid *g);
FROND_EXPORT void frond_objectid_format(const uint8_t o[12],
                                        char out[FROND_OBJECTID_STRLEN + 1]);
FROND_EXPORT int frond_objectid_parse(const char *s, size_t len,
                                      uint8_t out[12], frond_error *err);

#endif /* FROND_FROND_FORMAT_H */
