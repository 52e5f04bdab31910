/* SPDX-License-Identifier: Apache-2.0 */
/*
** store.h -- the segment store interface: one table, leaf_alloc, behind a
** versioned struct of function pointers (like SQLite's VFS).
**
** A backend is a frond_store_methods with a URI scheme. frond__store_open
** (store_open.c) picks a registered backend by scheme (tests register
** fakes), then a built-in one (multi:), and hands every other URI to the
** one SQL store (store_sql.c), which runs Leaf's table on any engine of
** the SQL layer (db.h) and owns its URI grammar. The core then only
** calls the frond__store_* wrappers (store.c), never a method directly:
** they are the one place every call passes, where tests inject faults
** (frond__store_fault), the rollback guard checks ranges and calls are
** timed. A backend is never told apart by type: what differs is what it
** declares through xControl (its order, a fixed step) and answers there.
**
** A frond_store is used by one thread at a time; callers serialize.
*/
#ifndef FROND_STORE_H
#define FROND_STORE_H

#include "base/base.h"
#include "store/db.h"

#include <stdatomic.h>

typedef struct frond_store_methods frond_store_methods;
typedef struct frond_store_guard frond_store_guard;

/* Receives one row of a page of the tag list: its name and step. Returns
** 0 to go on, or a FROND_E* code that ends the page with it. */
typedef int (*frond__tag_fn)(void *ctx, const char *tag, int64_t step);

typedef struct frond__store_calls frond__store_calls;

/* Every backend's connection struct starts with this; the backend sets
** methods, the wrappers the rest. */
struct frond_store {
  const frond_store_methods *methods;
  frond_store_guard *guard;  /* the wrappers' (store_guard.c); NULL in a
                            ** backend that is not opened through them,
                            ** and in one that keeps segment order only
                            ** (it answers for its ranges itself) */
  int guard_shared;          /* guard is another connection's: not freed */
  frond__store_calls *calls; /* its row of the call timings, found at its
                             ** first call (store.c) */
};

/* xControl's operations. A backend answers those it knows and returns
** FROND_EINVAL for the others; the wrappers then take the default. */
enum {
  /* int *: the order the store keeps, FROND_SEG_ORDER_* (frond.h).
  ** Default FROND_SEG_ORDER_TAG: every range above the ones before it,
  ** which the wrappers' rollback guard holds the store to. A store that
  ** declares FROND_SEG_ORDER_SEGMENT must keep guards of its own and say
  ** so (FROND__STORE_ROLLBACKS); one that does not still gets the
  ** wrappers' guard, which refuses its lower ranges (an error, never an
  ** ID twice). */
  FROND__STORE_ORDER = 1,
  /* int *: 1 when every allocation takes the row's step (asked with step
  ** 0 only: the row's step is the unit of the store's scheme). Default 0. */
  FROND__STORE_FIXED_STEP,
  /* frond__store_label *: the engine and member index the store's calls
  ** are timed under. Default: the backend's zName, member -1. */
  FROND__STORE_LABEL,
  /* const frond_store *: a connection of the same URI whose per-process
  ** state (guards, health) this one shares (frond__store_open_shared). */
  FROND__STORE_SHARE,
  /* uint64_t *: ranges refused by the guards the store keeps itself.
  ** Answering it says the store keeps its own: the wrappers put no guard
  ** over it (frond__store_own_guards). */
  FROND__STORE_ROLLBACKS,
  /* frond__store_members_arg *: members of a store over several. */
  FROND__STORE_MEMBERS,
  /* frond__store_repair_arg *: repair one member. */
  FROND__STORE_REPAIR,
  /* int64_t *: the largest step one allocation takes (frond://: the
  ** servers' max_range), 0 for none. Default 0. */
  FROND__STORE_MAX_STEP,
  /* frond__store_seq_arg *: a tag's bound and stride (store_sql_seq.c). A
  ** store that does not answer keeps none: the allocator cuts nothing
  ** (a frond:// store's servers cut the ranges they hand out). */
  FROND__STORE_SEQ_GET,
  /* frond__store_seq_arg *: record a tag's bound (seq.max, 0 to drop it),
  ** keeping its stride, checked against what the tag may have issued and
  ** written atomically with the check (frond__seq_max_set). */
  FROND__STORE_MAX_PUT,
  /* const frond_tag_seq *: what the next xTagCreate records in its
  ** transaction. */
  FROND__STORE_CREATE_SEQ,
  /* frond__store_seq_arg *: record a tag's attributes whole, with no
  ** check (a multi: store completing a create, or repairing a member). */
  FROND__STORE_SEQ_SET,
  /* frond__store_give_back_arg *: a clean stop's give-back (seg_give.c):
  ** set the row's max_id from `end` back to `to` only if it is still
  ** `end`, in one statement; *moved 1 when it was. A backend that does not
  ** answer (multi:, frond://) returns FROND_EINVAL with handled 0: the
  ** numbers stay skipped. */
  FROND__STORE_GIVE_BACK,
  /* frond__store_ordered_arg *: an ordered tag's claim and a segment in
  ** one transaction, its renewal, its release (store_sql_ordered.c). A
  ** backend that does not answer serves no ordered tag. */
  FROND__STORE_ORDERED_TAKE,
  FROND__STORE_ORDERED_RENEW,
  FROND__STORE_ORDERED_RELEASE,
  /* frond__store_ordered_arg *: the claim as recorded, into holder,
  ** holder_epoch, holder_mark, holder_lease_ms; no lock. */
  FROND__STORE_ORDERED_READ
};

/* Room for an ordered tag's owner address (host:port, IPv6 bracketed). */
#define FROND__OWNER_MAX 300

typedef struct frond__store_ordered_arg {
  const char *tag;
  const char *owner; /* this process's address ("" for none) */
  int64_t token;     /* this process's, random, never 0 */
  int64_t epoch;     /* in: the claim held, 0 for none; out: the one now */
  int64_t lease_ms;  /* the claim's lease, recorded with it */
  int64_t step;      /* TAKE: as frond__store_alloc; max_id, row_step out */
  int64_t max_id, row_step;
  /* TAKE: the holder's claim as the caller last saw it (epoch and renewal
  ** mark, 0 0: never), and for how long it has seen it unchanged by its
  ** own monotonic clock: a claim unchanged for its lease is stale, and
  ** is taken over. */
  int64_t seen_epoch, seen_mark, seen_ms;
  /* TAKE refused (TAG_OWNER): who holds the claim, and its state. */
  char holder[FROND__OWNER_MAX];
  int64_t holder_epoch, holder_mark, holder_lease_ms;
} frond__store_ordered_arg;

typedef struct frond__store_give_back_arg {
  const char *tag;
  int64_t end, to;  /* the row's max_id as our last allocation left it;
                    ** the first number not handed out (to < end) */
  int64_t deadline; /* frond__mono_ns() past which no answer is waited for */
  int handled;      /* set by a backend that does give-backs */
  int moved;        /* 1: the row was at end and is now at to */
} frond__store_give_back_arg;

typedef struct frond__store_seq_arg {
  const char *tag;
  frond_tag_seq seq;
} frond__store_seq_arg;

typedef struct frond__store_label {
  char engine[16];
  int member; /* -1: not a member of anything */
} frond__store_label;

typedef struct frond__store_members_arg {
  int n;       /* 0: a single database */
  uint64_t up; /* bit i: member i's last call worked */
} frond__store_members_arg;

typedef struct frond__store_repair_arg {
  int member;
  frond_repair_fn fn;
  void *ctx;
} frond__store_repair_arg;

struct frond_store_methods {
  int iVersion; /* 1; 2 with xTagPage; 3 with xTagAdvance, xTagFloor, xFact;
                ** 4 with xControl */
  const char *zScheme; /* URI prefix up to and including ':' */
  const char *zName;   /* for messages */
  /* Open a connection for `uri` (the whole URI, scheme included). */
  int (*xOpen)(const char *uri, frond_store **out, frond_error *err);
  void (*xClose)(frond_store *st);
  /* Create leaf_alloc when missing; accept one made by Leaf's DDL. */
  int (*xEnsureSchema)(frond_store *st, frond_error *err);
  /*
  ** In one committed transaction: max_id += (step ? step : the row's step),
  ** then read back max_id and the row's step. Returns 0 only once the
  ** transaction has committed. TAG_NOT_FOUND when there is no row.
  */
  int (*xAlloc)(frond_store *st, const char *tag, int64_t step, int64_t *max_id,
                int64_t *row_step, frond_error *err);
  int (*xTagList)(frond_store *st, frond_tag_row **out, size_t *n,
                  frond_error *err);
  int (*xTagGet)(frond_store *st, const char *tag, frond_tag_row *out,
                 frond_error *err);
  /* start 0: at the tag's floor (1 for a name never deleted); a start
  ** below the floor is TAG_FLOOR. */
  int (*xTagCreate)(frond_store *st, const char *tag, int64_t step,
                    int64_t start, const char *description, frond_error *err);
  int (*xTagSetStep)(frond_store *st, const char *tag, int64_t step,
                     frond_error *err);
  /* In one transaction with the delete, raise the tag's floor to the
  ** row's max_id: a tag of this name never issues an ID below it again. */
  int (*xTagDelete)(frond_store *st, const char *tag, frond_error *err);
  /*
  ** Version 2. A page of the tag list, for lists too long for one answer:
  ** up to `limit` rows whose tag sorts after `after` (NULL: from the first)
  ** in the store's own key order, name and step only, each to fn; *n
  ** receives how many were passed. Keyset paging: a row that exists for
  ** the whole scan is seen exactly once, whatever changes meanwhile.
  */
  int (*xTagPage)(frond_store *st, const char *after, int limit,
                  frond__tag_fn fn, void *ctx, int *n, frond_error *err);
  /*
  ** Version 3. Move the tag forward so that it issues no ID below `to`
  ** (a restore from a backup): TAG_FLOOR when `to` is below what it may
  ** already have issued (its max_id) or below its floor.
  */
  int (*xTagAdvance)(frond_store *st, const char *tag, int64_t to,
                     frond_error *err);
  /* The lowest start a create of tag accepts: its floor, or 1. */
  int (*xTagFloor)(frond_store *st, const char *tag, int64_t *first,
                   frond_error *err);
  /*
  ** Version 3. A fact that every process using the store must agree on
  ** (an ID format's key fingerprint): record name = value when nothing is
  ** recorded under name, then read back what is recorded (ours, or one
  ** recorded before) into recorded (len bytes, NUL-terminated). Never
  ** overwrites. In frond_meta (FROND__META_DDL). name: 1 to 64 bytes,
  ** value: 1 to 256.
  */
  int (*xFact)(frond_store *st, const char *name, const char *value,
               char *recorded, size_t len, frond_error *err);
  /*
  ** Version 4. The store's questions and knobs, one method (as SQLite's
  ** xFileControl): op a FROND__STORE_* operation above, arg its argument.
  ** 0, a FROND_E* code, or FROND_EINVAL for an op it does not know.
  */
  int (*xControl)(frond_store *st, int op, void *arg, frond_error *err);
};

/* The largest step a Leaf node grows to (Leaf's MAX_STEP): after its first
** two loads, Leaf doubles its own step for a segment used up quickly. */
#define FROND__LEAF_MAX_STEP INT64_C(1000000)

/* The lowest start a create of a tag accepts over its floor (the first ID
** a deleted tag of that name had not allocated, 1 for a name never used):
** one Leaf step above a floor, the larger of the tag's step and the
** largest a Leaf node's grows to. A Leaf node whose load raced the create
** (its UPDATE found no row, its SELECT the new one) takes the new row's
** last range [max_id - its step, max_id) without allocating it: that must
** hold IDs no tag of the name ever issued, whatever that node's step has
** grown to. INT64_MAX past the range. */
static inline int64_t frond__tag_lowest_start(int64_t floor, int64_t step) {
  int64_t gap = step > FROND__LEAF_MAX_STEP ? step : FROND__LEAF_MAX_STEP;
  if (floor <= 1)
    return 1;
  return floor > INT64_MAX - gap ? INT64_MAX : floor + gap;
}

/* Leaf's table on the SQL layer: sqlite:, postgresql://, postgres://,
** mysql://, mariadb:// (db.h). */
extern const frond_store_methods frond__store_sql;

/* Segment ranges leased from Frond servers over HTTP (store_frond.c):
** "frond://host:port[,host:port...][?options]". */
extern const frond_store_methods frond__store_frond;

/* Several independent databases (store_multi.c): "multi:" then 2 to
** FROND_STORE_MULTI_MAX member URIs separated by '|' (a character no
** member URI has unescaped: RFC 3986 leaves it out, and a SQLite path
** with one cannot be a member). */
extern const frond_store_methods frond__store_multi;
#define FROND_STORE_MULTI_MAX 16
#define FROND_STORE_URI_MAX 4096
typedef struct frond_multi_uri {
  int n;
  size_t start[FROND_STORE_MULTI_MAX], len[FROND_STORE_MULTI_MAX];
} frond_multi_uri;
/* The pure parts (store_multi_uri.c). */
/* Split a multi: URI and check every member's grammar; a pure function,
** fuzzed. 0 or STORE_URI. */
int frond__store_multi_parse(const char *uri, frond_multi_uri *out,
                             frond_error *err);
/* Block interleaving: member i of n's local block starting at lstart
** (1 + q*b) is global block q*n + i; its first ID into *gstart. -1 when
** lstart is not on a block boundary or the block passes the bigint range. */
int frond__multi_map(int64_t lstart, int64_t b, int i, int n, int64_t *gstart);
/* The local max_id of a new tag's rows: the first block boundary whose
** global blocks all start at or above start. -1 past the range. */
int64_t frond__multi_local_start(int64_t start, int64_t b, int n);
/* The first global ID member i of n hands out next when its row is at
** lmax (the block at or after lmax): every global ID the member handed
** out from the row so far is below it. INT64_MAX past the range. */
int64_t frond__multi_next(int64_t lmax, int64_t b, int i, int n);
/* The lowest block boundary of member i of n whose block starts at or
** above the global ID g (1 for g <= 1). -1 past the range. */
int64_t frond__multi_local_min(int64_t g, int64_t b, int i, int n);
/* A store URI for the log, every member's password shown as "***". */
void frond__store_uri_shown(const char *uri, char *out, size_t len);

/* What the SQL store (store_sql.c, store_sql_member.c) does for the
** multi: store's members. */
/* Open a SQL store as member i of n of a multi: store: its ensure_schema
** records (i, n) in the database, or checks the recorded one. A plain
** SQL store refuses a database that is a member (STORE_MEMBER). */
void frond__store_sql_member(frond_store *st, int i, int n);
/* The SQL layer's connection of the SQL store st. */
frond_db *frond__store_sql_db(frond_store *st);
/* Cap every answer of the SQL store st at mono_ns (0: lift the cap). */
void frond__store_sql_deadline(frond_store *st, int64_t mono_ns);
/* A member whose database records no place yet (an empty database, or
** one that was never a member): it joins (frond__store_sql_join records
** its place) only once the multi: store has checked that it may. */
int frond__store_sql_fresh(const frond_store *st);
int frond__store_sql_join(frond_store *st, frond_error *err);
/* A member's next allocations move only a row at or above min (local,
** for rows whose step is block): below it, STORE_MEMBER_STALE, and the row
** stays where it is. */
void frond__store_sql_alloc_min(frond_store *st, int64_t min, int64_t block);
/* The name of the row st's last allocation moved, as the row spells it
** (its database may take other spellings for it: another case, trailing
** spaces, under its collation); "" when unknown. */
const char *frond__store_sql_spelling(const frond_store *st);
/* The marks a member keeps of the others (frond_multi_mark): the global
** end of the last block member `member` handed out for tag, or of the
** IDs the database issued as a plain store before it joined (member -1),
** whichever is higher (0: none); raising it; whether it has any for
** `member`. */
int frond__store_sql_mark_get(frond_store *st, int member, const char *tag,
                              int64_t *end, frond_error *err);
int frond__store_sql_mark_put(frond_store *st, int member, const char *tag,
                              int64_t end, frond_error *err);
int frond__store_sql_served(frond_store *st, int member, int *any,
                            frond_error *err);
/* What frond_meta records under name into recorded ("" when nothing:
** no table, no row), without recording anything. */
int frond__store_sql_fact_read(frond_store *st, const char *name,
                               char *recorded, size_t len, frond_error *err);
/* Record a joining member's history as a plain store (marks of member
** -1): the max_id of every row it holds, the floor of every tag deleted
** from it. */
int frond__store_sql_history(frond_store *st, frond_error *err);
/* Record block as the block size tag was created with (> 0). */
int frond__store_sql_block_put(frond_store *st, const char *tag, int64_t block,
                               frond_error *err);
/* What a member's database knows of tag: its floor (global, 0: none), the
** highest mark of any member, the block it was created with (0: none). */
int frond__store_sql_facts(frond_store *st, const char *tag, int64_t *floor,
                           int64_t *marks, int64_t *block, frond_error *err);
/* Bounds and strides: the SQL store's frond_tag_seq table on a SQL-layer
** connection (store_sql_seq.c): create it, read a tag's row ({0, 1, 0}
** without one), write it whole (NULL or none: no row; inside the
** caller's transaction), write its max alone (each statement leaves the
** row whole). */
int frond__seq_schema(frond_db *db, frond_error *err);
int frond__seq_get(frond_db *db, const char *tag, frond_tag_seq *q,
                   frond_error *err);
int frond__seq_create(frond_db *db, const char *tag, const frond_tag_seq *q,
                      frond_error *err);
int frond__seq_max_put(frond_db *db, const char *tag, int64_t max,
                       frond_error *err);
/* frond tag set-max on one database: checked and written in one
** transaction holding the tag's leaf_alloc row (member/members: a multi:
** member's interleave, members 0 for none). */
int frond__seq_max_set(frond_db *db, const char *tag, int64_t max, int member,
                       int members, frond_error *err);
/* Ordered tags on a plain SQL store (store_sql_ordered.c): the table;
** a create's or delete's attribute (inside its transaction); a take
** (claim or keep, and allocate with alloc, in one transaction of its
** own); a renewal or (release) an end of the caller's claim. TAG_OWNER
** when another holds the claim (a take names it in the arg). */
typedef int (*frond__ordered_alloc_fn)(void *ctx, const char *tag, int64_t step,
                                       int64_t *max_id, int64_t *row_step,
                                       frond_error *err);
int frond__ordered_schema(frond_db *db, frond_error *err);
int frond__ordered_put(frond_db *db, const char *tag, int ordered,
                       frond_error *err);
int frond__ordered_take(frond_db *db, frond__store_ordered_arg *a,
                        frond__ordered_alloc_fn alloc, void *ctx,
                        frond_error *err);
int frond__ordered_renew(frond_db *db, frond__store_ordered_arg *a, int release,
                         frond_error *err);
int frond__ordered_read(frond_db *db, frond__store_ordered_arg *a,
                        frond_error *err);
/* The wrappers: op FROND__STORE_ORDERED_*; INVAL for a store that serves
** no ordered tag. A take's range passes the rollback guard. */
int frond__store_ordered(frond_store *st, int op, frond__store_ordered_arg *a,
                         frond_error *err);
/* A clean stop's give-back on a plain SQL store (store_sql_give.c). */
int frond__sql_give_back(frond_db *db, frond__store_give_back_arg *g,
                         frond_error *err);
/* The wrappers (store.c). tag's attributes after an allocation: {0, 1, 0} for none, or a store
** that keeps none. */
int frond__store_seq(frond_store *st, const char *tag, frond_tag_seq *q,
                     frond_error *err);
/* What the next create records (NULL: none); INVAL with any for a store
** that keeps none. */
int frond__store_create_seq(frond_store *st, const frond_tag_seq *q,
                            frond_error *err);
/* A create's attributes against its step and start: 0 or INVAL. */
int frond__store_seq_check(const frond_tag_seq *q, int64_t step, int64_t start,
                           frond_error *err);
/* Tests only: skip the members' identity check (to show what it stops). */
extern int frond__store_multi_nocheck;

/* The rollback guard (store_guard.c): frond__store_alloc accepts a range
** only above every range it handed out before for the tag; a lower one
** (the row went back: a failover that lost writes) is logged, counted,
** and replaced by a range past the highest end. */
frond_store_guard *frond__guard_new(void);
void frond__guard_free(frond_store_guard *g);
/* xAlloc through the guard (st->guard may be NULL: then xAlloc alone). */
int frond__guard_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err);
/* The end of the highest range handed out for tag, 0 when none; note a
** range ending at end as handed out. */
int64_t frond__guard_end(frond_store_guard *g, const char *tag);
void frond__guard_note(frond_store_guard *g, const char *tag, int64_t end);
uint64_t frond__guard_rollbacks(const frond_store_guard *g);
/* Back to "nothing handed out" for tag. */
void frond__guard_forget(frond_store_guard *g, const char *tag);
/* Ranges refused by st's guard, or the guards it keeps, so far
** (thread-safe; store.c). */
uint64_t frond__store_rollbacks(frond_store *st);

/* Add a backend (tests register fakes). At most 8; not thread-safe. */
int frond__store_register(const frond_store_methods *m);

/*
** Fault injection (store.c): when set, every wrapper first calls it with
** the operation's name ("alloc", "list", ...) and fails with its non-zero
** return (a FROND_E* code) without touching the backend.
*/
typedef int frond__store_fault_fn(frond_store *st, const char *op);
extern frond__store_fault_fn *_Atomic frond__store_fault;

/* The wrappers' check for an injected fault (err in scope). */
#define FROND__STORE_FAULT(st, op)                                             \
  do {                                                                         \
    int rc_;                                                                   \
    frond__store_fault_fn *f_ =                                                \
        atomic_load_explicit(&frond__store_fault, memory_order_acquire);       \
    if (f_ != NULL && (rc_ = f_(st, op)) != 0)                                 \
      return frond__fail(err, rc_, "injected fault in store %s", op);          \
  } while (0)

/* Opening (store_open.c: the one file that names every backend). */
int frond__store_open(const char *uri, frond_store **out, frond_error *err);
/* Another connection for uri that shares base's rollback guard (base is
** closed last): the connections of one allocator's loaders, so that the
** guard remembers every range the process took, whichever connection took
** it. */
int frond__store_open_shared(const char *uri, frond_store *base,
                             frond_store **out, frond_error *err);

/* The wrappers the core calls on an open store (store.c). */
void frond__store_close(frond_store *st);
int frond__store_ensure_schema(frond_store *st, frond_error *err);
int frond__store_alloc(frond_store *st, const char *tag, int64_t step,
                       int64_t *max_id, int64_t *row_step, frond_error *err);
int frond__store_tag_list(frond_store *st, frond_tag_row **out, size_t *n,
                          frond_error *err);
int frond__store_tag_get(frond_store *st, const char *tag, frond_tag_row *out,
                         frond_error *err);
/* xTagPage; a version-1 backend answers from its whole list (fakes). */
int frond__store_tag_page(frond_store *st, const char *after, int limit,
                          frond__tag_fn fn, void *ctx, int *n,
                          frond_error *err);
/* xFact; INVAL from a backend before version 3, which records nothing. */
int frond__store_fact(frond_store *st, const char *name, const char *value,
                      char *recorded, size_t len, frond_error *err);
/* What the store declares (xControl, or the default): its order
** (FROND_SEG_ORDER_*), whether its step is fixed; its members (0 for a
** single database) and, bit i, those up. */
int frond__store_order(frond_store *st);
/* 1 when the store keeps rollback guards of its own (it answers
** FROND__STORE_ROLLBACKS: multi:, one per member): then, and only then,
** the wrappers put none over it. The order a store declares never turns
** the guard off: uniqueness must not rest on an answer about order. */
int frond__store_own_guards(frond_store *st);
int frond__store_fixed_step(frond_store *st);
/* FROND__STORE_MAX_STEP: the largest step, 0 for no limit. */
int64_t frond__store_max_step(frond_store *st);
/* Is a failed allocation's code one a later attempt may not get (the
** store, or the servers in front of it, unreachable or not serving now:
** STORE, STORE_TIMEOUT, STORE_MISMATCH, SEGMENT_UNAVAILABLE), rather than
** a refusal that calls waiting for the segment should be told at once? */
int frond__store_retryable(int code);
int frond__store_members(frond_store *st, uint64_t *up);
/* FROND__STORE_GIVE_BACK through the fault hook ("give_back") and the
** call timings. FROND_EINVAL with a->handled 0: the store does none. */
int frond__store_give_back(frond_store *st, frond__store_give_back_arg *a,
                           frond_error *err);

/* Timings of the wrappers' calls, per engine, member and call, kept with
** atomics: the count, the sum and cumulative buckets with these upper
** bounds (seconds; the last, +Inf, is the count). */
#define FROND__STORE_CALL_BUCKETS 11
extern const double frond__store_call_bounds[FROND__STORE_CALL_BUCKETS];
typedef struct frond__store_call_stat {
  char engine[16];
  int member; /* -1: not a member */
  const char *call;
  uint64_t count;
  double sum; /* seconds */
  uint64_t le[FROND__STORE_CALL_BUCKETS];
} frond__store_call_stat;
/* The n-th (engine, member, call) that was called at least once, into
** *out: 0, or -1 past the last. Thread-safe. */
int frond__store_call_get(size_t n, frond__store_call_stat *out);

/* Leaf's own DDL (scripts/leaf_alloc.sql in Leaf's repository) for MySQL,
** as Leaf ships it, "IF NOT EXISTS" added. */
#define FROND__LEAF_ALLOC_DDL_MYSQL                                            \
  "CREATE TABLE IF NOT EXISTS `leaf_alloc` ("                                  \
  "`biz_tag` varchar(128) NOT NULL DEFAULT '', "                               \
  "`max_id` bigint(20) NOT NULL DEFAULT '1', "                                 \
  "`step` int(11) NOT NULL, "                                                  \
  "`description` varchar(256) DEFAULT NULL, "                                  \
  "`update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE "      \
  "CURRENT_TIMESTAMP, "                                                        \
  "PRIMARY KEY (`biz_tag`)) ENGINE=InnoDB"

/* The same table for the other dialects (no ENGINE, no ON UPDATE, no
** display widths or backticks). */
#define FROND__LEAF_ALLOC_DDL                                                  \
  "CREATE TABLE IF NOT EXISTS leaf_alloc ("                                    \
  "biz_tag varchar(128) NOT NULL DEFAULT '' PRIMARY KEY, "                     \
  "max_id bigint NOT NULL DEFAULT 1, "                                         \
  "step int NOT NULL, "                                                        \
  "description varchar(256) DEFAULT NULL, "                                    \
  "update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP)"

/* Frond's own facts, one table for both layers that keep some: the lease
** coordinator's (the fleet's layout; coord_lease.c creates it with this
** very DDL) and the store's (xFact). MySQL gets " ENGINE=InnoDB" after it. */
#define FROND__META_DDL                                                        \
  "CREATE TABLE IF NOT EXISTS frond_meta ("                                    \
  "name VARCHAR(64) PRIMARY KEY, value VARCHAR(256) NOT NULL)"

#endif /* FROND_STORE_H */
