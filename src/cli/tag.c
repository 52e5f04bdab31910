/* SPDX-License-Identifier: Apache-2.0 */
/*
** tag.c -- `frond tag`: administer segment tags (rows of leaf_alloc) in a
** store: create, list, get, set-step, delete, advance, and repair a
** member of a multi: store.
**
** Each subcommand opens the store, does one thing and closes it. The store
** is --store, else $FROND_STORE, else FROND_STORE_DEFAULT.
*/
#include "cli/cli.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: frond tag create NAME [--step N] [--start N] [--max N]\n"
    "                        [--increment K --offset R] [--ordered]\n"
    "                        [--description TEXT]\n"
    "       frond tag list [--json]\n"
    "       frond tag get NAME [--json]\n"
    "       frond tag set-step NAME N\n"
    "       frond tag set-max NAME N\n"
    "       frond tag delete NAME\n"
    "       frond tag advance NAME --to N\n"
    "       frond tag repair-member I\n"
    "       frond tag restore SOURCE... [--nodes N] [--max-step N]\n"
    "                 [--margin N] [--format NAME=SPEC]... [--key-file FILE]\n"
    "                 [--missing-tags-ok] [--apply] [--nodes-fenced] [--json]\n"
    "\n"
    "Administer segment tags: the rows of the leaf_alloc table that\n"
    "'frond next --segment' and the server allocate from. Every subcommand\n"
    "takes --store URI (default: $FROND_STORE, else " FROND_STORE_DEFAULT ").\n"
    "\n"
    "  --step N           IDs reserved per allocation, 1..2147483647 "
    "(default 2000)\n"
    "  --start N          the first ID the tag yields (default 1; a deleted\n"
    "                     tag's name starts one Leaf step (its step, at least\n"
    "                     1000000) above its floor, above every ID it could\n"
    "                     have issued, and no lower)\n"
    "  --max N            the highest ID the tag ever issues; past it every\n"
    "                     call answers SEGMENT_EXHAUSTED, never a wrap\n"
    "                     (set-max raises it; 0 drops it; lowering it below\n"
    "                     what the tag may have issued is refused)\n"
    "  --increment K      every ID of the tag is R modulo K (default 1:\n"
    "  --offset R         every number; 0 <= R < K; the step counts numbers\n"
    "                     and must be at least K); fixed at creation\n"
    "  --ordered          one sequence across the fleet: every ID is larger\n"
    "                     than every ID answered before it, from any node;\n"
    "                     one node serves the tag at a time, the others\n"
    "                     forward to it; fixed at creation\n"
    "  --description TEXT up to 256 bytes\n"
    "  --json             JSON instead of a table\n"
    "  --to N             advance: issue no ID below N from now on (after a\n"
    "                     restore from a backup); never backwards\n"
    "\n"
    "repair-member I: member I of a multi: store lost allocations (an empty\n"
    "database in its place, a restore from an older backup) and is refused\n"
    "(STORE_MEMBER_STALE); move its rows above everything any member may\n"
    "have handed out, and accept it again. Needs every member.\n"
    "\n"
    "restore SOURCE...: after a restore from a backup, how far each tag must\n"
    "move forward, from the audit log or the nodes' metrics; --apply moves\n"
    "them ('frond tag restore --help').\n";

#define DEFAULT_STEP 2000
#define MAX_STEP 2147483647 /* leaf_alloc.step is an int */
#define MAX_DESCRIPTION 256 /* leaf_alloc.description is varchar(256) */

static int open_store(const char *uri, frond_store **st) {
  frond_error err = {0};
  if (uri == NULL)
    uri = frond__cli_env("FROND_STORE", FROND_STORE_DEFAULT);
  if (frond_store_open(st, uri, &err) != 0)
    return frond__cli_fail(&err);
  return FROND__EXIT_OK;
}

/* Exit 2 for a name the store would refuse anyway. */
static int check_tag(const char *cmd, const char *tag) {
  frond_error err = {0};
  if (frond_tag_validate(tag, strlen(tag), &err) == 0)
    return 0;
  frond__usage_error(cmd, "NAME: %s", err.message);
  return -1;
}

/* A row and its attributes (max 0 for none, shown as null). */
static void row_json(const frond_tag_row *r, const frond_tag_seq *q) {
  frond__out_str("{\"tag\":");
  frond__out_json_str(r->tag);
  frond__out_str(",\"max_id\":");
  frond__out_i64(r->max_id);
  frond__out_str(",\"step\":");
  frond__out_i64(r->step);
  frond__out_str(",\"max\":");
  if (q->max > 0)
    frond__out_i64(q->max);
  else
    frond__out_str("null");
  frond__out_str(",\"increment\":");
  frond__out_i64(q->increment);
  frond__out_str(",\"offset\":");
  frond__out_i64(q->offset);
  frond__out_str(q->ordered ? ",\"ordered\":true" : ",\"ordered\":false");
  frond__out_str(",\"description\":");
  frond__out_json_str(r->description);
  frond__out_str(",\"updated\":");
  frond__out_json_str(r->update_time);
  frond__out_str("}");
}

static int tag_create(int argc, char **argv) {
  int64_t step = DEFAULT_STEP, start = 0, first = 1;
  frond_tag_seq q = {0, 1, 0, 0};
  const char *desc = "", *store = NULL;
  frond__opt opts[] = {
      {"ordered", FROND__OPT_FLAG, &q.ordered, 0, 0, 0},
      {"step", FROND__OPT_INT, &step, 1, MAX_STEP, 0},
      {"start", FROND__OPT_INT, &start, 1, INT64_MAX, 0},
      {"max", FROND__OPT_INT, &q.max, 1, INT64_MAX, 0},
      {"increment", FROND__OPT_INT, &q.increment, 1, INT32_MAX, 0},
      {"offset", FROND__OPT_INT, &q.offset, 0, INT32_MAX - 1, 0},
      {"description", FROND__OPT_STR, &desc, 0, 0, 0},
      {"store", FROND__OPT_STR, &store, 0, 0, 0},
      {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"tag create", usage, opts, 1, 1, "NAME", NULL, 0};
  frond_store *st;
  frond_error err = {0};
  int rc;
  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if (check_tag(a.cmd, a.pos[0]) != 0)
    return FROND__EXIT_USAGE;
  if (strlen(desc) > MAX_DESCRIPTION)
    return frond__usage_error(a.cmd, "--description: longer than %d bytes",
                              MAX_DESCRIPTION);
  if ((rc = open_store(store, &st)) != FROND__EXIT_OK)
    return rc;
  /* Without --start, one Leaf step above the name's floor (at 1 unless it was
  ** deleted): the store picks it in the create's transaction; the floor
  ** read before is what is shown (a delete racing the create can only
  ** raise it). */
  if ((start == 0 && frond_store_tag_floor(st, a.pos[0], &first, &err) != 0) ||
      frond_store_tag_create_seq(st, a.pos[0], step, start, desc, &q, &err) !=
          0)
    rc = frond__cli_fail(&err);
  else {
    int64_t at = start > 0 ? start : frond__tag_lowest_start(first, step);
    int64_t k = q.increment > 1 ? q.increment : 1;
    /* The first number of the residue at or above where the row starts. */
    int64_t d = ((q.offset - at % k) % k + k) % k;
    if (at > INT64_MAX - d) /* a floor at the end of the range */
      frond__out_printf("created tag %s: no ID left below the end of the "
                        "bigint range, step %lld",
                        a.pos[0], (long long)step);
    else
      frond__out_printf("created tag %s: first ID %lld, step %lld", a.pos[0],
                        (long long)(at + d), (long long)step);
    if (k > 1)
      frond__out_printf(", every ID %lld modulo %lld", (long long)q.offset,
                        (long long)k);
    if (q.max > 0)
      frond__out_printf(", max %lld", (long long)q.max);
    if (q.ordered)
      frond__out_str(", ordered across the fleet");
    frond__out_str("\n");
  }
  frond_store_close(st);
  return frond__out_finish(rc);
}

static int tag_list(int argc, char **argv) {
  const char *store = NULL;
  int json = 0, rc;
  frond__opt opts[] = {{"json", FROND__OPT_FLAG, &json, 0, 0, 0},
                       {"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"tag list", usage, opts, 0, 0, NULL, NULL, 0};
  frond_store *st;
  frond_tag_row *rows = NULL;
  frond_tag_seq *q = NULL;
  frond_error err = {0};
  size_t i, n = 0;
  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if ((rc = open_store(store, &st)) != FROND__EXIT_OK)
    return rc;
  if (frond_store_tag_list(st, &rows, &n, &err) != 0) {
    frond_store_close(st);
    return frond__cli_fail(&err);
  }
  /* Each row's attributes (a tag deleted meanwhile: none). */
  if ((q = calloc(n + 1, sizeof(*q))) == NULL) {
    err.code = FROND_ENOMEM;
    err.message[0] = '\0';
  }
  for (i = 0; q != NULL && i < n; i++)
    if (frond_store_tag_seq(st, rows[i].tag, &q[i], &err) != 0) {
      if (err.code != FROND_ETAG_NOT_FOUND)
        break;
      q[i].increment = 1;
    }
  frond_store_close(st);
  if (q == NULL || i < n) {
    free(q);
    frond_free(rows);
    return frond__cli_fail(&err);
  }
  if (json) {
    frond__out_str("[\n");
    for (i = 0; i < n; i++) {
      row_json(&rows[i], &q[i]);
      frond__out_str(i + 1 < n ? ",\n" : "\n");
    }
    frond__out_str("]\n");
  } else {
    enum { COLS = 7 };
    const char **cells = malloc(sizeof(*cells) * COLS * (n + 1));
    char(*nums)[4][48] = malloc(sizeof(*nums) * (n + 1));
    if (cells == NULL || nums == NULL) {
      free(cells);
      free(nums);
      free(q);
      frond_free(rows);
      err.code = FROND_ENOMEM;
      err.message[0] = '\0';
      return frond__cli_fail(&err);
    }
    cells[0] = "tag", cells[1] = "max_id", cells[2] = "step";
    cells[3] = "description", cells[4] = "updated", cells[5] = "max";
    cells[6] = "ids";
    for (i = 0; i < n; i++) {
      const char **c = &cells[(i + 1) * COLS];
      snprintf(nums[i][0], sizeof(nums[i][0]), "%lld",
               (long long)rows[i].max_id);
      snprintf(nums[i][1], sizeof(nums[i][1]), "%lld", (long long)rows[i].step);
      if (q[i].max > 0)
        snprintf(nums[i][2], sizeof(nums[i][2]), "%lld", (long long)q[i].max);
      else
        snprintf(nums[i][2], sizeof(nums[i][2]), "-");
      if (q[i].increment > 1)
        snprintf(nums[i][3], sizeof(nums[i][3]), "%lld mod %lld",
                 (long long)q[i].offset, (long long)q[i].increment);
      else
        snprintf(nums[i][3], sizeof(nums[i][3]), "all");
      c[0] = rows[i].tag, c[1] = nums[i][0], c[2] = nums[i][1];
      c[3] = rows[i].description, c[4] = rows[i].update_time;
      c[5] = nums[i][2], c[6] = nums[i][3];
    }
    frond__out_table(cells, n + 1, COLS, "lrrllrl");
    free(cells);
    free(nums);
  }
  free(q);
  frond_free(rows);
  return frond__out_finish(FROND__EXIT_OK);
}

static int tag_get(int argc, char **argv) {
  const char *store = NULL;
  int json = 0, rc;
  frond__opt opts[] = {{"json", FROND__OPT_FLAG, &json, 0, 0, 0},
                       {"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"tag get", usage, opts, 1, 1, "NAME", NULL, 0};
  frond_store *st;
  frond_tag_row row;
  frond_tag_seq q = {0, 1, 0, 0};
  frond_error err = {0};
  char owner[300] = "";
  int64_t epoch = 0;
  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if (check_tag(a.cmd, a.pos[0]) != 0)
    return FROND__EXIT_USAGE;
  if ((rc = open_store(store, &st)) != FROND__EXIT_OK)
    return rc;
  if ((rc = frond_store_tag_get(st, a.pos[0], &row, &err)) == 0)
    rc = frond_store_tag_seq(st, a.pos[0], &q, &err);
  if (rc == 0 && q.ordered)
    rc =
        frond_store_tag_owner(st, a.pos[0], owner, sizeof(owner), &epoch, &err);
  frond_store_close(st);
  if (rc != 0)
    return frond__cli_fail(&err);
  if (json) {
    row_json(&row, &q);
    frond__out_str("\n");
  } else {
    char bound[24] = "none";
    char ids[64] = "every number";
    if (q.max > 0)
      snprintf(bound, sizeof bound, "%lld", (long long)q.max);
    if (q.increment > 1)
      snprintf(ids, sizeof ids, "%lld modulo %lld", (long long)q.offset,
               (long long)q.increment);
    frond__out_str("tag          ");
    frond__out_text(row.tag);
    frond__out_printf("\nmax_id       %lld\nstep         %lld\nmax          "
                      "%s\nids          %s\norder        %s\ndescription  ",
                      (long long)row.max_id, (long long)row.step, bound, ids,
                      q.ordered ? "ordered: one sequence across the fleet"
                                : "increasing per node");
    frond__out_text(row.description);
    frond__out_printf("\nupdated      %s\n", row.update_time);
    if (q.ordered && owner[0])
      frond__out_printf("owner        %s (claim %lld; recorded, not "
                        "necessarily alive)\n",
                        owner, (long long)epoch);
    else if (q.ordered)
      frond__out_str("owner        none (the next call claims it)\n");
  }
  return frond__out_finish(FROND__EXIT_OK);
}

/* tag set-step and tag set-max: NAME and N, N in [lo, hi], through set;
** for max, 0 means none. */
static int tag_set(int argc, char **argv, const char *cmd, const char *what,
                   int64_t lo, int64_t hi,
                   int (*set)(frond_store *, const char *, int64_t,
                              frond_error *)) {
  const char *store = NULL;
  frond__opt opts[] = {{"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {cmd, usage, opts, 2, 2, "NAME and N", NULL, 0};
  frond_store *st;
  frond_error err = {0};
  int64_t n;
  int rc;
  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if (check_tag(a.cmd, a.pos[0]) != 0 ||
      frond__args_int(a.cmd, "N", a.pos[1], lo, hi, &n) != 0)
    return FROND__EXIT_USAGE;
  if ((rc = open_store(store, &st)) != FROND__EXIT_OK)
    return rc;
  if (set(st, a.pos[0], n, &err) != 0)
    rc = frond__cli_fail(&err);
  else if (n > 0)
    frond__out_printf("tag %s: %s %lld\n", a.pos[0], what, (long long)n);
  else
    frond__out_printf("tag %s: no %s\n", a.pos[0], what);
  frond_store_close(st);
  return frond__out_finish(rc);
}

static int tag_set_step(int argc, char **argv) {
  return tag_set(argc, argv, "tag set-step", "step", 1, MAX_STEP,
                 frond_store_tag_set_step);
}

static int tag_set_max(int argc, char **argv) {
  return tag_set(argc, argv, "tag set-max", "max", 0, INT64_MAX,
                 frond_store_tag_set_max);
}

static int tag_delete(int argc, char **argv) {
  const char *store = NULL;
  frond__opt opts[] = {{"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"tag delete", usage, opts, 1, 1, "NAME", NULL, 0};
  frond_store *st;
  frond_error err = {0};
  int64_t floor = 0;
  int rc;
  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if (check_tag(a.cmd, a.pos[0]) != 0)
    return FROND__EXIT_USAGE;
  if ((rc = open_store(store, &st)) != FROND__EXIT_OK)
    return rc;
  if (frond_store_tag_delete(st, a.pos[0], &err) != 0)
    rc = frond__cli_fail(&err);
  else if (frond_store_tag_floor(st, a.pos[0], &floor, &err) != 0 || floor <= 1)
    frond__out_printf("deleted tag %s\n", a.pos[0]);
  else
    frond__out_printf("deleted tag %s; its floor is %lld: created again, it "
                      "starts one Leaf step above it\n",
                      a.pos[0], (long long)floor);
  frond_store_close(st);
  return frond__out_finish(rc);
}

static int tag_advance(int argc, char **argv) {
  const char *store = NULL;
  int64_t to = 0;
  frond__opt opts[] = {{"to", FROND__OPT_INT, &to, 1, INT64_MAX, 0},
                       {"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"tag advance", usage, opts, 1, 1, "NAME", NULL, 0};
  frond_store *st;
  frond_error err = {0};
  int rc;
  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if (check_tag(a.cmd, a.pos[0]) != 0)
    return FROND__EXIT_USAGE;
  if (!opts[0].seen)
    return frond__usage_error(a.cmd, "--to N is required");
  if ((rc = open_store(store, &st)) != FROND__EXIT_OK)
    return rc;
  if (frond_store_tag_advance(st, a.pos[0], to, &err) != 0)
    rc = frond__cli_fail(&err);
  else
    frond__out_printf("tag %s: advanced; it issues no ID below %lld\n",
                      a.pos[0], (long long)to);
  frond_store_close(st);
  return frond__out_finish(rc);
}

static void repaired(void *ctx, const char *tag, int64_t from, int64_t to) {
  ++*(int *)ctx;
  frond__out_str("tag ");
  frond__out_text(tag);
  if (from == 0)
    frond__out_printf(": created on the member, from %lld\n", (long long)to);
  else
    frond__out_printf(": moved from %lld to %lld\n", (long long)from,
                      (long long)to);
}

static int tag_repair_member(int argc, char **argv) {
  const char *store = NULL;
  frond__opt opts[] = {{"store", FROND__OPT_STR, &store, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"tag repair-member", usage, opts, 1, 1, "I", NULL, 0};
  frond_store *st;
  frond_error err = {0};
  int64_t member;
  int rc, moved = 0;
  if (!frond__args_parse(&a, argc, argv, &rc))
    return rc;
  if (frond__args_int(a.cmd, "I", a.pos[0], 0, 63, &member) != 0)
    return FROND__EXIT_USAGE;
  if ((rc = open_store(store, &st)) != FROND__EXIT_OK)
    return rc;
  if (frond_store_member_repair(st, (int)member, repaired, &moved, &err) != 0)
    rc = frond__cli_fail(&err);
  else
    frond__out_printf("member %lld repaired: %d tag%s moved; it serves "
                      "again\n",
                      (long long)member, moved, moved == 1 ? "" : "s");
  frond_store_close(st);
  return frond__out_finish(rc);
}

static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
} subcommands[] = {{"create", tag_create},
                   {"list", tag_list},
                   {"get", tag_get},
                   {"set-step", tag_set_step},
                   {"set-max", tag_set_max},
                   {"delete", tag_delete},
                   {"advance", tag_advance},
                   {"repair-member", tag_repair_member},
                   {"restore", frond__cli_tag_restore}};

int frond__cli_tag(int argc, char **argv) {
  size_t i;
  if (argc < 2)
    return frond__usage_error("tag", "missing subcommand (create, list, get, "
                                     "set-step, set-max, delete, advance, "
                                     "repair-member, restore)");
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage, stdout);
    return FROND__EXIT_OK;
  }
  for (i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
    if (strcmp(argv[1], subcommands[i].name) == 0)
      return subcommands[i].fn(argc - 1, argv + 1);
  return frond__usage_error("tag", "unknown subcommand '%s'", argv[1]);
}
