/* SPDX-License-Identifier: Apache-2.0 */
/*
** tag_restore.h -- `frond tag restore`'s plan, shared by the command
** (tag_restore.c) and its sources' readers (tag_restore_src.c).
*/
#ifndef FROND_CLI_TAG_RESTORE_H
#define FROND_CLI_TAG_RESTORE_H

#include "frond.h"
#include "store/store_frond.h"

#include <stdint.h>

#define FROM_MAX 160 /* where a tag's highest ID was seen, for the plan */
/* The largest step a server loads unless told: max_step's default (the
** dynamic step's cap) and max_range's (a range lease is one load). */
#define FROND__RESTORE_MAX_STEP 1000000
/* The largest step a node loads: leaf_alloc.step is an int, max_step and
** max_range are below it. A larger one is not a Frond node's. */
#define FROND__RESTORE_STEP_MAX 2147483647
#define FORMATS_MAX 16 /* --format options, and unread formats named */

typedef struct frond__restore_seen {
  char tag[FROND_TAG_MAX + 1];
  int64_t high;        /* the highest ID seen, -1: none */
  int64_t step;        /* the largest step a node reported, 0: none */
  char from[FROM_MAX]; /* where high was seen */
  int64_t max_id, to;  /* the row's, and where it must be */
  int64_t row_step;    /* the row's step */
  int in_store;        /* the store holds it */
  unsigned source;     /* the last scrape that showed its series */
  int done;            /* advanced by --apply */
} frond__restore_seen;

typedef struct frond__restore_plan {
  frond__restore_seen *v;
  size_t n, cap;
  char store[FROND_FS_STORE_LEN + 1]; /* the first identity a source named */
  char store_from[FROM_MAX];
  int failed;            /* a source refused or unread: nothing applied */
  unsigned long skipped; /* audit lines that did not read */
  unsigned long dropped; /* audit "dropped" events */
  int no_identity;       /* metrics sources that named no store */
  int naudit, nmetrics;  /* sources of each kind given */
  /* The margin: given, or nodes x 2 x the largest step a node may load. */
  int64_t margin, nodes, max_step;
  int margin_set, nodes_set, max_step_set;
  int no_plan;             /* the margin is not known: no plan printed */
  unsigned source;         /* scrapes read, the current one's number */
  int missing_ok;          /* --missing-tags-ok: tags outside a scrape warned */
  int live;                /* http:// sources that answered: nodes running */
  char live_url[FROM_MAX]; /* the first of them */
  /* --format NAME=SPEC: the servers' formats, to read their records'
  ** strings back (a seq format's records carry no ID); and the records
  ** of a format none was given for, refused once the store is read. */
  char *fname[FORMATS_MAX];
  const char *fspec[FORMATS_MAX];
  frond_format *fmt[FORMATS_MAX];
  int nfmt;
  struct unread {
    char format[40], tag[FROND_TAG_MAX + 1], where[FROM_MAX];
  } unread[FORMATS_MAX];
  int nunread;
} frond__restore_plan;

/* The entry of tag, made when new (NULL: out of memory). */
frond__restore_seen *frond__restore_tag(frond__restore_plan *p,
                                        const char *tag);
/* Report out of memory, fail the plan: -1. */
int frond__restore_oom(frond__restore_plan *p);
/* Read one source into the plan (failures reported, p->failed set). */
void frond__restore_audit(frond__restore_plan *p, const char *log);
void frond__restore_metrics_file(frond__restore_plan *p, const char *path);
void frond__restore_metrics_url(frond__restore_plan *p, const char *url);

#endif /* FROND_CLI_TAG_RESTORE_H */
