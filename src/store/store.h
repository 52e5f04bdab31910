/*
** store.h -- the segment store interface: one table, leaf_alloc, behind a
** versioned struct of function pointers (like SQLite's VFS).
**
** A backend is a frond_store_methods with a URI scheme. frond__store_open
** picks a registered backend by scheme (tests register fakes), and hands
** every other URI to the one SQL store (store_sql.c), which runs Leaf's
** table on any engine of the SQL layer (db.h) and owns its URI grammar.
** The core then only calls the frond__store_* wrappers below, never a
** method directly, so that tests can inject faults in one place
** (frond__store_fault).
**
** A frond_store is used by one thread at a time; callers serialize.
*/
#ifndef FROND_STORE_H
#define FROND_STORE_H

#include "base/base.h"
#include "store/db.h"

typedef struct frond_store_methods frond_store_methods;
typedef struct frond_store_guard frond_store_guard;

/* Receives one row of a page of the tag list: its name and step. Returns
** 0 to go on, or a FROND_E* code that ends the page with it. */
typedef int (*frond__tag_fn)(void *ctx, const char *tag, int64_t step);

/* Every backend's connection struct starts with this. */
struct frond_store {
  const frond_store_methods *methods;
  frond_store_guard *guard; /* the wrappers' (store_guard.c); NULL in a
                            ** backend that is not opened through them */
  int guard_shared;         /* guard is another connection's: not freed */
};

struct frond_store_methods {
  int iVersion;        /* 1, or 2 with xTagPage */
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
  int (*xTagCreate)(frond_store *st, const char *tag, int64_t step,
                    int64_t start, const char *description, frond_error *err);
  int (*xTagSetStep)(frond_store *st, const char *tag, int64_t step,
                     frond_error *err);
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
};

/* Leaf's table on the SQL layer: sqlite:, postgresql://, postgres://. */
extern const frond_store_methods frond__store_sql;

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
/* Ranges refused by st's guard so far (thread-safe). */
uint64_t frond__store_rollbacks(const frond_store *st);

/* Add a backend (tests register fakes). At most 8; not thread-safe. */
int frond__store_register(const frond_store_methods *m);

/*
** Fault injection: when set, every wrapper first calls it with the
** operation's name ("alloc", "list", ...) and fails with its non-zero
** return (a FROND_E* code) without touching the backend.
*/
extern int (*frond__store_fault)(frond_store *st, const char *op);

/* The wrappers the core calls. They validate tags and pass through. */
int frond__store_open(const char *uri, frond_store **out, frond_error *err);
/* Another connection for uri that shares base's rollback guard (base is
** closed last): the connections of one allocator's loaders, so that the
** guard remembers every range the process took, whichever connection took
** it. */
int frond__store_open_shared(const char *uri, frond_store *base,
                             frond_store **out, frond_error *err);
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

#endif /* FROND_STORE_H */
