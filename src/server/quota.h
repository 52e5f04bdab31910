/* SPDX-License-Identifier: Apache-2.0 */
/*
** quota.h -- quotas of IDs per client and per tag: token buckets, their
** rules (quota_parse.c, pure) and the server's table of them (quota.c).
**
** A rule is NAME=RATE[/BURST]: RATE IDs a second, at most BURST at once
** (default RATE). NAME is a client's name ("anonymous" for requests
** without credentials) or a tag; "*" is each name its own bucket, and
** "orders:*" each name beginning "orders:" its own bucket. An exact name
** wins over a pattern, a longer pattern over a shorter one.
**
** A bucket is the generic cell rate algorithm (GCRA, as ATM networks and
** Redis' redis-cell count cells): one 64-bit word, the theoretical arrival
** time of the next ID on the bucket's own clock, whose unit is one ID at
** the rule's rate (1/RATE s). Taking n IDs is one compare-and-swap of that
** word, from any worker thread; the bucket is the whole server's, exact
** across threads.
*/
#ifndef FROND_SERVER_QUOTA_H
#define FROND_SERVER_QUOTA_H

#include "frond.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of a rule. A rate above a billion IDs a second would make the
** bucket's clock run faster than the nanosecond clock it is read from. */
#define FROND__QUOTA_RATE_MAX UINT64_C(1000000000)
#define FROND__QUOTA_BURST_MAX UINT64_C(1000000000000)
#define FROND__QUOTA_RULES_MAX 256
/* A client's name is what frond__client holds (63 bytes); a tag's at most
** FROND_TAG_MAX. */
#define FROND__QUOTA_CLIENT_MAX 63
#define FROND__QUOTA_NAME_MAX FROND_TAG_MAX

typedef struct frond__quota frond__quota;

typedef struct frond__quota_rule {
  char name[FROND__QUOTA_NAME_MAX + 2]; /* as given: "orders", "orders:*" */
  size_t len;                           /* of the name, or of the prefix */
  int prefix;                           /* a pattern: name[0..len) + "*" */
  uint64_t rate;                        /* IDs a second */
  uint64_t burst;                       /* IDs at most at once */
} frond__quota_rule;

/*
** Parse the value of key (quota_client or quota_tag; max_name, the longest
** name a rule may give) into out[0..cap), *n rules: the exact names first
** sorted by byte value, then the patterns, longest first. Items are
** separated by commas, blanks around them ignored; "" is no rule. Returns
** 0, or FROND_EINVAL naming the key and the item: a name empty, too long,
** not UTF-8, with a control character, a '/' or a '*' other than its last
** byte; a rate or
** burst not an integer in range; a name given twice; more than cap rules.
** Pure: no allocation, never reads outside text[0..len).
*/
int frond__quota_parse(const char *key, const char *text, size_t len,
                       size_t max_name, frond__quota_rule *out, size_t cap,
                       size_t *n, frond_error *err);

/* Is s[0..len) a name a bucket may have: 1 byte or more of UTF-8 without
** control characters (what a metrics label can show)? */
int frond__quota_name_ok(const char *s, size_t len);

/* The rule for name[0..len) among rules[0..n) as parsed: the exact one,
** else the longest pattern it begins with; NULL when none applies. */
const frond__quota_rule *frond__quota_match(const frond__quota_rule *rules,
                                            size_t n, const char *name,
                                            size_t len);

/*
** A bucket's word, *tat, starts at 0 (full). now_ns is a monotonic clock
** in ns; the bucket's clock is now_ns * rate / 1e9, exact to one ID.
**
** take: n IDs, or none. 0 when taken; 1 when refused, with *retry_s the
** seconds (rounded up) after which they would be, or UINT64_MAX when n is
** above the burst and never would be. A clock behind the bucket (another
** thread's later reading moved it; the server's clock is monotonic) finds
** it empty: nothing extra is ever granted.
** give: undo a take of n (another bucket of the same request refused).
** tokens: the IDs that could be taken now.
*/
int frond__quota_bucket_take(_Atomic uint64_t *tat, uint64_t rate,
                             uint64_t burst, uint64_t now_ns, uint64_t n,
                             uint64_t *retry_s);
void frond__quota_bucket_give(_Atomic uint64_t *tat, uint64_t n);
uint64_t frond__quota_bucket_tokens(_Atomic uint64_t *tat, uint64_t rate,
                                    uint64_t burst, uint64_t now_ns);
/* now_ns on the clock of a bucket of rate IDs a second. */
uint64_t frond__quota_clock(uint64_t now_ns, uint64_t rate);

/* ------------------------------------------------------------- quota.c */

typedef struct frond__server frond__server;
typedef struct frond__req frond__req;
typedef struct frond__buf frond__buf;

/* Build srv->quota from quota_client, quota_tag and quota_buckets; it
** stays NULL when no rule is given. 0, or INVAL (the rules' refusal) or
** NOMEM with err filled. Main thread, at start. */
int frond__quota_create(frond__server *srv, frond_error *err);
void frond__quota_free(frond__server *srv);

/*
** Before r is served (srv->quota not NULL): take r's IDs from its client's
** bucket and its tag's, from both or from neither. 0, or QUOTA_EXCEEDED
** with err naming the client or tag, its rule and when to retry. Any
** worker thread; lock-free unless a name is first seen (its bucket is
** then made under the table's lock).
*/
int frond__quota_take(frond__server *srv, const frond__req *r,
                      frond_error *err);

/* The seconds after which the last request this thread was refused may
** be asked again (HTTP's Retry-After), or UINT64_MAX when never as asked
** (a count above the burst). Valid while that refusal is answered. */
uint64_t frond__quota_retry_after(void);

/* The frond_quota_* families of /metrics. */
void frond__quota_metrics(frond__server *srv, frond__buf *b);

#endif /* FROND_SERVER_QUOTA_H */
