/* SPDX-License-Identifier: Apache-2.0 */
/*
** tag_restore.c -- `frond tag restore`: after a store was restored from a
** backup, how far each tag must move forward, from what the fleet handed
** out since; with --apply, move it (frond_store_tag_advance, as
** `frond tag advance`: one way, never down).
**
** The sources, any number and kind in one run, each the highest ID of
** each tag it knows:
**   audit:FILE   the audit log (and its rotated files beside it): the last
**                ID of each record of a segment tag (audit_line.c)
**   metrics:FILE one node's /metrics, scraped: the last ID each buffer it
**                held may hand out (frond_segment_buffer_last_id), the
**                step of its next load, the store it served
**                (frond_store_info) (metrics_line.c)
**   http://HOST:PORT  the same, fetched now from a running node
**
** Per tag: to = highest seen + 1 + margin (default: nodes x 2 x the
** largest step a node may load: the current and next buffer of every
** node, which its records or scrape may not show; see fleet()). The
** plan shows the row's max_id (the next ID it allocates) against it; a
** tag whose row is at or past `to` stays.
**
** Refused, nothing applied (exit 1): a source that cannot be read, a
** source of another store (STORE_MISMATCH: the wrong backup or another
** fleet), a tag seen that the store does not hold (TAG_NOT_FOUND: created
** after the backup).
*/
#include "cli/cli.h"
#include "server/audit_line.h"
#include "server/metrics_line.h"
#include "store/store.h"
#include "store/store_frond.h"
#include "store/store_multi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: frond tag restore SOURCE... [--nodes N] [--max-step N]\n"
    "                         [--margin N] [--format NAME=SPEC]...\n"
    "                         [--key-file FILE] [--missing-tags-ok]\n"
    "                         [--apply] [--nodes-fenced] [--json]\n"
    "\n"
    "After the store was restored from a backup, with every node stopped:\n"
    "how far each tag must move forward so that no ID handed out since the\n"
    "backup is handed out again, and with --apply, move it (as 'frond tag\n"
    "advance': never backwards). Takes --store URI (default: $FROND_STORE,\n"
    "else " FROND_STORE_DEFAULT ").\n"
    "\n"
    "SOURCE, as many as there are (every node's, or the plan is a lower\n"
    "bound):\n"
    "  audit:FILE         an audit log, with its rotated files beside it\n"
    "  metrics:FILE       a node's /metrics, scraped at its stop (best)\n"
    "  http://HOST:PORT[/PATH]  a running node's /metrics, fetched now\n"
    "\n"
    "  --nodes N          nodes that served the store since the backup\n"
    "                     (default: one per scrape; needed with an audit\n"
    "                     log unless --margin is given)\n"
    "  --max-step N       the largest step or range a node may load\n"
    "                     (default 1000000: max_step's and max_range's)\n"
    "  --margin N         IDs above the highest seen (default: nodes x 2\n"
    "                     buffers x the largest step a node may load)\n"
    "  --format NAME=SPEC read the audit records of format NAME (a seq\n"
    "                     format's numbers count in its period rows)\n"
    "  --key-file FILE    the keys of keyed --format specs\n"
    "  --missing-tags-ok  plan although a scrape used tags it shows no\n"
    "                     series of (outside metrics_tags)\n"
    "  --apply            move the tags the plan moves\n"
    "  --nodes-fenced     apply although an http:// source answered: every\n"
    "                     node that answered serves no ID of this store\n"
    "  --json             the plan as JSON\n"
    "\n"
    "Exit status: 0 the plan (applied with --apply), 1 refused (a source\n"
    "unread or unsound, another store's, a tag the store does not hold,\n"
    "nodes running), 2 bad arguments.\n";

#include "cli/tag_restore.h"

typedef frond__restore_seen seen;
typedef frond__restore_plan plan;

/* ---- the store ---- */

/* Check the sources' store against the restored one's frond_meta, read
** without writing (a plan writes nothing): a single database's, every
** member's of a multi: store; another kind (frond://) is not checked. */
static void store_identity(plan *p, frond_store *st) {
  char recorded[257] = "";
  frond_error err = {0};
  int rc;
  if (p->store[0] == '\0')
    return;
  if (st->methods == &frond__store_sql)
    rc = frond__store_sql_fact_read(st, "store.id", recorded, sizeof(recorded),
                                    &err);
  else if (st->methods == &frond__store_multi)
    rc = frond__store_multi_fact_read(st, "store.id", recorded,
                                      sizeof(recorded), &err);
  else {
    fprintf(stderr,
            "frond tag restore: a %s store's identity is not read here: the "
            "sources' store %s is not checked against it\n",
            st->methods->zName, p->store);
    return;
  }
  if (rc != 0) {
    fprintf(stderr, "frond: %s: reading the store's identity: %s\n",
            frond_err_name(err.code), err.message);
    p->failed = 1;
  } else if (recorded[0] == '\0') {
    fprintf(stderr,
            "frond tag restore: the store records no identity (the backup "
            "was taken before any server opened it): the sources' store %s "
            "cannot be checked against it\n",
            p->store);
  } else if (strcmp(recorded, p->store) != 0) {
    fprintf(stderr,
            "frond: STORE_MISMATCH: the store is %s, %s served store %s: "
            "the wrong backup, or another fleet's sources\n",
            recorded, p->store_from, p->store);
    p->failed = 1;
  }
}

/* a + b and a * b for a, b >= 0, INT64_MAX where they would overflow. */
static int64_t sat_add(int64_t a, int64_t b) {
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t sat_mul(int64_t a, int64_t b) {
  return a != 0 && b > INT64_MAX / a ? INT64_MAX : a * b;
}

/* Records of a format no --format was given for: refused, naming the
** store's rows their numbers count in (a seq format's period rows). */
static void unread_formats(plan *p) {
  char rowsv[512];
  size_t i, len, off;
  int k;
  for (k = 0; k < p->nunread; k++) {
    const struct unread *u = &p->unread[k];
    len = strlen(u->tag);
    rowsv[0] = '\0';
    for (i = off = 0; i < p->n && off < sizeof(rowsv) - 64; i++)
      if (p->v[i].in_store && strncmp(p->v[i].tag, u->tag, len) == 0 &&
          p->v[i].tag[len] == ':')
        off += (size_t)snprintf(rowsv + off, sizeof(rowsv) - off, "%s%s",
                                off ? ", " : "", p->v[i].tag);
    fprintf(stderr,
            "frond: INVAL: %s: format \"%s\" of tag \"%s\" records strings, "
            "not IDs (a seq format: its numbers count in the period rows "
            "%s:PERIOD of the store%s%s): give --format %s=SPEC (the "
            "servers' format.%s) to read them, or the plan cannot cover "
            "those rows\n",
            u->where, u->format, u->tag, u->tag, off ? ": " : ", none yet",
            rowsv, u->format, u->format);
  }
}

/* The default margin covers what any node may have loaded and not shown:
** each of the fleet's nodes holds a current and a next buffer, each up
** to the largest step it may load: the step it showed, the row's, and
** what the step may have grown to unseen (the dynamic step doubles up to
** max_step, a range lease is a load of up to max_range; both 1,000,000
** unless --max-step says otherwise; a multi: store's step is fixed). The
** number of nodes: --nodes, else one per scrape when only scrapes are
** given; an audit log does not say how many nodes wrote it: refused. */
static int fleet(plan *p, frond_store *st) {
  int64_t most = frond__store_max_step(st);
  /* A store whose segments do not increase (multi:: each comes from the
  ** member whose turn it is): a node's buffers now do not bound what it
  ** handed out from the ones before them. Only its records do. */
  if (frond__store_order(st) != FROND_SEG_ORDER_TAG && p->nmetrics > 0 &&
      p->naudit == 0) {
    fprintf(stderr,
            "frond: INVAL: the store's segments do not increase (%s): a "
            "node's buffers do not bound the IDs it handed out from "
            "earlier ones, so scrapes alone cannot plan: give every node's "
            "audit log too\n",
            st->methods->zName);
    p->failed = p->no_plan = 1;
  }
  if (p->margin_set)
    return 0;
  if (!p->nodes_set && p->naudit > 0) {
    fprintf(stderr,
            "frond: INVAL: an audit log does not say how many nodes served "
            "the store since the backup, and each may have loaded two "
            "buffers past its last record: give --nodes N (every node "
            "that served since the backup) or --margin N\n");
    p->failed = p->no_plan = 1;
    p->nodes = 1; /* the rest is checked; no plan is printed */
    return -1;
  }
  if (!p->nodes_set) {
    p->nodes = p->nmetrics;
    fprintf(stderr,
            "frond tag restore: margin: assumed %lld node%s (one per scrape "
            "given): give --nodes N when more served since the backup\n",
            (long long)p->nodes, p->nodes == 1 ? "" : "s");
  }
  if (frond__store_fixed_step(st)) {
    if (!p->max_step_set)
      p->max_step = 0; /* the row's step: a multi: store takes no other */
  } else if (!p->max_step_set) {
    p->max_step = most > 0 ? most : FROND__RESTORE_MAX_STEP;
    fprintf(stderr,
            "frond tag restore: margin: %lld node%s x 2 buffers x a step of "
            "up to %lld (assumed: %s, unless a source shows a larger one); "
            "give --max-step N for your fleet's (a larger max_range, or "
            "a step that cannot grow), or --margin N\n",
            (long long)p->nodes, p->nodes == 1 ? "" : "s",
            (long long)p->max_step,
            most > 0 ? "the servers' max_range, the store's largest load"
                     : "max_step's 1000000 and max_range's default; the "
                       "dynamic step grows unseen between records");
  }
  return 0;
}

static int64_t margin_of(const plan *p, const seen *s) {
  int64_t step = s->step > s->row_step ? s->step : s->row_step;
  if (p->margin_set)
    return p->margin;
  if (p->max_step > step)
    step = p->max_step;
  return sat_mul(sat_mul(p->nodes, 2), step);
}

/* Each tag's row, its target; refuse the tags the store does not hold. */
static int compare(plan *p, frond_store *st) {
  frond_tag_row *rows = NULL;
  frond_error err = {0};
  size_t i, j, n = 0;
  if (frond_store_tag_list(st, &rows, &n, &err) != 0)
    return frond__cli_fail(&err);
  for (j = 0; j < n; j++) {
    seen *s = frond__restore_tag(p, rows[j].tag);
    if (s == NULL) {
      frond_free(rows);
      return frond__restore_oom(p), FROND__EXIT_FAILURE;
    }
    s->in_store = 1;
    s->max_id = rows[j].max_id;
    s->row_step = rows[j].step;
  }
  frond_free(rows);
  unread_formats(p);
  fleet(p, st);
  for (i = 0; i < p->n; i++) {
    seen *s = &p->v[i];
    int64_t m = margin_of(p, s);
    /* highest + 1 + m, saturated: never below highest + 1. */
    s->to = s->high < 0 ? 0 : sat_add(sat_add(s->high, 1), m);
    if (s->high == INT64_MAX) {
      fprintf(stderr,
              "frond: INVAL: tag \"%s\": %s says ID %lld was handed out, "
              "the largest there is: no target above it\n",
              s->tag, s->from, (long long)s->high);
      p->failed = 1;
    } else if (!s->in_store && s->high >= 0) {
      fprintf(stderr,
              "frond: TAG_NOT_FOUND: tag \"%s\": %s says IDs up to %lld "
              "were (or may have been) handed out, and the store holds no "
              "such tag (created after the "
              "backup?): create it with --start %lld, then run this "
              "again\n",
              s->tag, s->from, (long long)s->high, (long long)s->to);
      p->failed = 1;
    }
  }
  return FROND__EXIT_OK;
}

static int by_tag(const void *a, const void *b) {
  return strcmp(((const seen *)a)->tag, ((const seen *)b)->tag);
}

static int moves(const seen *s) {
  return s->in_store && s->to > s->max_id;
}

static const char *action(const seen *s) {
  return s->high < 0 ? "not seen"
         : s->done   ? "advanced"
         : moves(s)  ? "advance"
                     : "none";
}

static void print_plan(const plan *p, int json) {
  size_t i, k = 0;
  if (json) {
    frond__out_str("[\n");
    for (i = 0; i < p->n; i++) {
      const seen *s = &p->v[i];
      if (!s->in_store)
        continue;
      frond__out_str(k++ ? ",\n{\"tag\":" : "{\"tag\":");
      frond__out_json_str(s->tag);
      frond__out_str(",\"max_id\":");
      frond__out_i64(s->max_id);
      if (s->high >= 0) {
        frond__out_str(",\"highest_seen\":");
        frond__out_i64(s->high);
        frond__out_str(",\"from\":");
        frond__out_json_str(s->from);
        frond__out_str(",\"to\":");
        frond__out_i64(s->to);
      }
      frond__out_str(",\"action\":");
      frond__out_json_str(action(s));
      frond__out_str("}");
    }
    frond__out_str(k ? "\n]\n" : "]\n");
    return;
  }
  {
    enum { COLS = 6 };
    const char **cells = malloc(sizeof(*cells) * COLS * (p->n + 1));
    char(*nums)[3][24] = malloc(sizeof(*nums) * (p->n + 1));
    if (cells == NULL || nums == NULL) {
      free(cells);
      free(nums);
      fprintf(stderr, "frond: NOMEM: out of memory\n");
      return;
    }
    cells[0] = "tag", cells[1] = "max_id", cells[2] = "highest seen";
    cells[3] = "from", cells[4] = "advance to", cells[5] = "action";
    for (i = 0; i < p->n; i++) {
      const seen *s = &p->v[i];
      const char **c = &cells[(k + 1) * COLS];
      if (!s->in_store)
        continue;
      snprintf(nums[k][0], sizeof(nums[k][0]), "%lld", (long long)s->max_id);
      snprintf(nums[k][1], sizeof(nums[k][1]), "%lld", (long long)s->high);
      snprintf(nums[k][2], sizeof(nums[k][2]), "%lld", (long long)s->to);
      c[0] = s->tag, c[1] = nums[k][0];
      c[2] = s->high < 0 ? "-" : nums[k][1];
      c[3] = s->high < 0 ? "-" : s->from;
      c[4] = moves(s) ? nums[k][2] : "-";
      c[5] = action(s);
      k++;
    }
    frond__out_table(cells, k + 1, COLS, "lrrlrl");
    free(cells);
    free(nums);
  }
}

/* What the plan could not know, on stderr. */
static void caveats(const plan *p) {
  size_t i, unseen = 0;
  for (i = 0; i < p->n; i++)
    unseen += p->v[i].in_store && p->v[i].high < 0;
  if (unseen > 0)
    fprintf(stderr,
            "frond tag restore: %zu tag%s of the store seen in no source "
            "(idle since the backup, or outside metrics_tags and the "
            "metrics_top_tags fastest): left as they are\n",
            unseen, unseen == 1 ? "" : "s");
  if (p->skipped > 0)
    fprintf(stderr,
            "frond tag restore: %lu audit lines skipped (torn or not "
            "audit records)\n",
            p->skipped);
  if (p->dropped > 0)
    fprintf(stderr,
            "frond tag restore: the audit log records %lu drop%s "
            "(audit_full = drop): records are missing, the plan is a lower "
            "bound; add the nodes' metrics or a larger --margin\n",
            p->dropped, p->dropped == 1 ? "" : "s");
  if (p->no_identity > 0)
    fprintf(stderr,
            "frond tag restore: %d metrics source%s named no store (a node "
            "that had not reached it): not checked against the store\n",
            p->no_identity, p->no_identity == 1 ? "" : "s");
}

/* --format NAME=SPEC, as often as there are formats: taken out of argv
** (the option parser takes each option once). 0, or 2 (reported). */
static int take_formats(plan *p, int *argc, char **argv) {
  int i, j = 1;
  char *v, *eq;
  for (i = 1; i < *argc; i++) {
    if (strcmp(argv[i], "--format") == 0 && i + 1 < *argc)
      v = argv[++i];
    else if (strncmp(argv[i], "--format=", 9) == 0)
      v = argv[i] + 9;
    else {
      argv[j++] = argv[i];
      continue;
    }
    if ((eq = strchr(v, '=')) == NULL || eq == v || eq[1] == '\0')
      return frond__usage_error("tag restore",
                                "--format '%s': not NAME=SPEC (the name "
                                "the audit log records, the servers' spec)",
                                v);
    if (p->nfmt == FORMATS_MAX)
      return frond__usage_error("tag restore", "more than %d --format",
                                FORMATS_MAX);
    p->fname[p->nfmt] = v;
    p->fspec[p->nfmt++] = eq + 1;
  }
  *argc = j;
  argv[j] = NULL;
  return 0;
}

/* Build each --format's format (keys from key_file). 0, or an exit
** status. The names are cut at their '=' in place. */
static int make_formats(plan *p, const char *key_file) {
  int i, rc;
  for (i = 0; i < p->nfmt; i++) {
    p->fname[i][p->fspec[i] - 1 - p->fname[i]] = '\0';
    if ((rc = frond__cli_format_create("tag restore", p->fspec[i], key_file,
                                       &p->fmt[i])) != 0)
      return rc;
  }
  return 0;
}

static void free_formats(plan *p) {
  int i;
  for (i = 0; i < p->nfmt; i++)
    frond_format_free(p->fmt[i]);
}

/* An advance failed at tag k: say what moved and what did not (advance
** is one way: those done stay done, a run again moves the rest). */
static void partial(const plan *p, size_t k) {
  size_t i, done = 0, left = 0;
  for (i = 0; i < p->n; i++)
    if (p->v[i].done)
      done++;
    else if (i >= k && moves(&p->v[i]))
      left++;
  fprintf(
      stderr,
      "frond tag restore: applied in part: %zu tag%s advanced (\"advanced\" "
      "below), %zu not, from tag \"%s\" on: fix the cause and run "
      "the same command again; do not start the fleet before\n",
      done, done == 1 ? "" : "s", left, p->v[k].tag);
}

int frond__cli_tag_restore(int argc, char **argv) {
  const char *store = NULL, *key_file = NULL;
  int64_t margin = 0, nodes = 0, max_step = 0;
  int apply = 0, json = 0, missing_ok = 0, fenced = 0, rc, i;
  frond__opt opts[] = {
      {"margin", FROND__OPT_INT, &margin, 0, INT64_MAX, 0},
      {"nodes", FROND__OPT_INT, &nodes, 1, 1 << 20, 0},
      {"max-step", FROND__OPT_INT, &max_step, 1, FROND__RESTORE_STEP_MAX, 0},
      {"apply", FROND__OPT_FLAG, &apply, 0, 0, 0},
      {"json", FROND__OPT_FLAG, &json, 0, 0, 0},
      {"store", FROND__OPT_STR, &store, 0, 0, 0},
      {"key-file", FROND__OPT_STR, &key_file, 0, 0, 0},
      {"missing-tags-ok", FROND__OPT_FLAG, &missing_ok, 0, 0, 0},
      {"nodes-fenced", FROND__OPT_FLAG, &fenced, 0, 0, 0},
      {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"tag restore", usage, opts, 1, -1, "SOURCE", NULL, 0};
  frond_store *st;
  frond_error err = {0};
  plan p;
  size_t k;
  memset(&p, 0, sizeof(p));
  if ((rc = take_formats(&p, &argc, argv)) != 0)
    return rc;
  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if ((rc = make_formats(&p, key_file)) != 0) {
    free_formats(&p);
    return rc;
  }
  for (i = 0; i < a.npos; i++)
    if (strncmp(a.pos[i], "audit:", 6) != 0 &&
        strncmp(a.pos[i], "metrics:", 8) != 0 &&
        strncmp(a.pos[i], "http://", 7) != 0)
      return frond__usage_error(a.cmd,
                                "SOURCE '%s': not audit:FILE, metrics:FILE "
                                "or http://HOST:PORT%s",
                                a.pos[i],
                                strncmp(a.pos[i], "https://", 8) == 0
                                    ? " (scrape a TLS port with curl and give "
                                      "metrics:FILE)"
                                    : "");
    else if (strchr(a.pos[i], ':')[1] == '\0')
      return frond__usage_error(a.cmd, "SOURCE '%s': no file", a.pos[i]);
  p.margin = margin, p.margin_set = opts[0].seen;
  p.nodes = nodes, p.nodes_set = opts[1].seen;
  p.max_step = max_step, p.max_step_set = opts[2].seen;
  p.missing_ok = missing_ok;
  for (i = 0; i < a.npos; i++) {
    if (strncmp(a.pos[i], "audit:", 6) == 0)
      p.naudit++, frond__restore_audit(&p, a.pos[i] + 6);
    else if (strncmp(a.pos[i], "metrics:", 8) == 0)
      p.nmetrics++, frond__restore_metrics_file(&p, a.pos[i] + 8);
    else
      p.nmetrics++, frond__restore_metrics_url(&p, a.pos[i]);
  }
  if (store == NULL)
    store = frond__cli_env("FROND_STORE", FROND_STORE_DEFAULT);
  if (frond_store_open(&st, store, &err) != 0) {
    free(p.v);
    free_formats(&p);
    return frond__cli_fail(&err);
  }
  store_identity(&p, st);
  if ((rc = compare(&p, st)) != FROND__EXIT_OK) {
    frond_store_close(st);
    free(p.v);
    free_formats(&p);
    return rc;
  }
  if (p.n > 1)
    qsort(p.v, p.n, sizeof(*p.v), by_tag);
  if (apply && p.live > 0 && !fenced) {
    fprintf(stderr,
            "frond: INVAL: --apply: %s answered (%d node%s running): a "
            "running node hands out its buffers and loads more while the "
            "rows move, above any plan taken now. Stop the fleet and plan "
            "from its last scrapes and audit logs, or give --nodes-fenced "
            "when every node that answered serves no ID of this store "
            "(stopped serving, fenced, pointed at another store)\n",
            p.live_url, p.live, p.live == 1 ? "" : "s");
    p.failed = 1;
  }
  if (apply && p.failed)
    fprintf(stderr, "frond tag restore: refused above: nothing applied\n");
  for (k = 0; apply && !p.failed && k < p.n; k++)
    if (moves(&p.v[k]) &&
        frond_store_tag_advance(st, p.v[k].tag, p.v[k].to, &err) != 0) {
      fprintf(stderr, "frond: %s: tag \"%s\": %s\n", frond_err_name(err.code),
              p.v[k].tag, err.message);
      partial(&p, k);
      p.failed = 1;
    } else if (moves(&p.v[k])) {
      p.v[k].done = 1;
    }
  frond_store_close(st);
  if (!p.no_plan)
    print_plan(&p, json);
  caveats(&p);
  free(p.v);
  free_formats(&p);
  return frond__out_finish(p.failed ? FROND__EXIT_FAILURE : FROND__EXIT_OK);
}
