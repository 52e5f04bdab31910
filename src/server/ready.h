/* SPDX-License-Identifier: Apache-2.0 */
/*
** ready.h -- readiness per kind of ID: which of snowflake and segment IDs
** this node can issue now, and why not.
**
** The facts are read from the real state (the coordinator, the generator,
** the segment allocator, the drain) into frond__ready_facts; the verdict
** is a pure function of them (frond__ready_eval), so that a unit test can
** give it any state. /readyz, the status page, /metrics, RESP's INFO and
** the log all say what the same verdict says.
*/
#ifndef FROND_SERVER_READY_H
#define FROND_SERVER_READY_H

#include <stddef.h>
#include <stdint.h>

struct frond__server;
struct frond__buf;

enum { FROND__KIND_SNOWFLAKE, FROND__KIND_SEGMENT, FROND__KINDS };

/* Why a kind is (not) ready: a bounded set, each with a stable label
** (the reason label of frond_ready_reason, INFO's ready_reason). */
#define FROND__READY_MAP(XX)                                                   \
  XX(OK, "ready", "ready")                                                     \
  XX(DRAINING, "draining", "draining")                                         \
  XX(NODE_NOT_HELD, "node_id_not_held", "node ID not held")                    \
  XX(FENCE_REACHED, "fence_reached",                                           \
     "node ID held, stopped at its fence: the coordinator has not confirmed "  \
     "a fence")                                                                \
  XX(COORD_NOT_REACHED, "coordinator_not_reached",                             \
     "node ID from the cache, coordinator not reached yet")                    \
  XX(LAYOUT_CHANGED, "layout_changed", "the fleet's layout changed")           \
  XX(CLOCK_BEHIND, "clock_behind", "clock behind")                             \
  XX(STORE_NOT_REACHED, "store_not_reached", "store not reached")              \
  XX(STORE_REFUSING, "store_refusing", "store refusing")                       \
  XX(NO_STORE, "no_store", "no store configured")                              \
  XX(COORD_UNCHECKED, "coordinator_unchecked",                                 \
     "the coordinator not yet checked against the store's record")

typedef enum frond__ready_reason {
#define XX(name, label, text) FROND__READY_##name,
  FROND__READY_MAP(XX)
#undef XX
      FROND__READY_REASONS
} frond__ready_reason;

/* What the verdict is made of. Times in unix ms unless said otherwise. */
typedef struct frond__ready_facts {
  int draining;
  /* snowflake */
  int fenced;              /* a coordinator keeps a fence for this node */
  int coord_state;         /* frond_coord_state; 0 without a coordinator */
  int coord_unchecked;     /* not yet checked against the store's record */
  int coord_lost;          /* the coordinator said the claim is gone */
  int validity_expired;    /* not confirmed within the session/lease */
  int coord_error;         /* the fencer's last round failed with it; 0: ok */
  int64_t last_write_ms;   /* last confirmed fence write, 0: none (its
                              age is the monotonic clock's) */
  int64_t fence_ms;        /* durable fence; INT64_MAX: none */
  int64_t window_ms;       /* the coordinator's window_ms */
  int64_t validity_ms;     /* session timeout, 9/10 of a lease; 0: none */
  int64_t resume_after_ms; /* another holder's fence to start above */
  int64_t high_water_ms;   /* the generator's last issued time */
  int64_t max_ahead_ms;
  int64_t unit_ms;  /* the layout's time unit; 0 counts as 1 */
  int64_t epoch_ms; /* the layout's epoch */
  int64_t now_ms;
  /* segment */
  int seg_enabled;    /* store is not "none" */
  int seg_open;       /* the store was reached once, the allocator is open */
  int store_ok;       /* its last store operation worked */
  int store_refusing; /* opening it failed for good with this code (it is
                         retried all the same); 0: not refusing */
} frond__ready_facts;

/* The first unit (its unix ms) the generator may issue in now: the
** clock's unit, or past the last unit issued when it borrowed ahead.
** Snowflake IDs are stopped at the fence once it is above the fence. */
int64_t frond__ready_next_unit_ms(const frond__ready_facts *f);
/* The verdict for each kind (out[FROND__KIND_*]). Pure. */
void frond__ready_eval(const frond__ready_facts *f,
                       frond__ready_reason out[FROND__KINDS]);
/* Every configured kind ready (segment counts only with a store). */
int frond__ready_all(const frond__ready_reason r[FROND__KINDS]);
const char *frond__ready_label(frond__ready_reason r);
const char *frond__ready_text(frond__ready_reason r);
const char *frond__ready_kind_name(int kind);
/* A kind's name ("snowflake", "segment") of len bytes: its index, or -1. */
int frond__ready_kind_parse(const char *s, size_t len);
/* One line on kind: "ready", or "not ready: <text>", with what the facts
** add in parentheses (how long the coordinator has not answered, the
** fence's time left). Pure. */
void frond__ready_describe(const frond__ready_facts *f, int kind,
                           frond__ready_reason r, char *out, size_t cap);

/* /readyz's first line for every configured kind: "ready", "draining" or
** "not ready: <text>[; <text>]" (the failing kinds'). Pure. */
void frond__ready_summary(const frond__ready_facts *f,
                          const frond__ready_reason r[FROND__KINDS], char *out,
                          size_t cap);

/* The facts of the running server. Never blocks on I/O. Any thread. */
void frond__ready_facts_get(struct frond__server *srv, frond__ready_facts *f);
/* /readyz's answer into b: kind -1 for every configured kind, else one.
** Returns the HTTP status (200 or 503). */
int frond__ready_body(struct frond__server *srv, int kind,
                      struct frond__buf *b);
/* frond_ready and frond_ready_reason. */
void frond__ready_metrics(struct frond__server *srv, struct frond__buf *b);

#endif
