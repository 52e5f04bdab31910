/* SPDX-License-Identifier: Apache-2.0 */
/*
** db_tool.c -- drives the SQL layer (db.h) and a segment store from a
** test script, one command per line on stdin, one answer per command on
** stdout, so that a test can act on the database in between (terminate
** the backend, cut the connection) and watch what the layer does.
**
** Fields are separated by tabs; in fields and cells, \t \n and \\ are
** escaped. Arguments are i:<int64>, t:<text> or n (NULL).
**
**   open URI [STATEMENT_TIMEOUT_MS [CONNECT_TIMEOUT_MS [ANSWER_MS]]]
**   answer MS                    frond__db_set_answer_timeout
**   exec SQL ARG...              run a template
**   wr WRITE COLS BACK ARG...    frond__db_write_returning
**   begin | commit | rollback
**   noreturning                  use the RETURNING emulation
**   store URI                    open a segment store (frond_store_open)
**   alloc TAG STEP               frond__store_alloc on it
**   tag TAG STEP START           frond_store_tag_create
**   list                         frond_store_tag_list: the tags in order
**
** Answers: "ok [changes=N rows=R]" followed by R lines "row\tCELL...",
** NULL as \N; "ok MAX_ID STEP" for alloc; or "err CODE CLASS MESSAGE"
** with CLASS one of ok, error, unique, lost, permanent.
*/
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS (FROND_DB_MAX_ARGS + 8)

static frond_db *db;
static frond_store *st;

static void unescape(char *s) {
  char *o = s;
  for (; *s; s++) {
    if (*s == '\\' && s[1]) {
      s++;
      *o++ = *s == 't' ? '\t' : *s == 'n' ? '\n' : *s;
    } else {
      *o++ = *s;
    }
  }
  *o = '\0';
}

static void put_escaped(const char *s) {
  for (; *s; s++) {
    if (*s == '\t')
      fputs("\\t", stdout);
    else if (*s == '\n')
      fputs("\\n", stdout);
    else if (*s == '\\')
      fputs("\\\\", stdout);
    else
      putchar(*s);
  }
}

static void answer_err(int rc, const frond_error *e, frond_db *on) {
  static const char *const cls[] = {"ok", "error", "unique", "lost",
                                    "permanent"};
  printf("err %s %s ", frond_err_name(rc),
         on ? cls[frond__db_error_class(on)] : "-");
  put_escaped(e->message);
  putchar('\n');
}

static void answer_rows(const frond_db_result *r) {
  int i, j;
  printf("ok changes=%lld rows=%d\n", (long long)r->changes, r->nrows);
  for (i = 0; i < r->nrows; i++) {
    fputs("row", stdout);
    for (j = 0; j < r->ncols; j++) {
      const char *t = frond__db_get_text(r, i, j);
      putchar('\t');
      if (t == NULL)
        fputs("\\N", stdout);
      else
        put_escaped(t);
    }
    putchar('\n');
  }
}

static int args(char **f, int n, frond_db_arg *a) {
  int i;
  for (i = 0; i < n; i++) {
    if (f[i][0] == 'i' && f[i][1] == ':')
      a[i] = frond__db_int(strtoll(f[i] + 2, NULL, 10));
    else if (f[i][0] == 't' && f[i][1] == ':')
      a[i] = frond__db_text(f[i] + 2);
    else if (strcmp(f[i], "n") == 0)
      a[i] = frond__db_null();
    else
      return -1;
  }
  return 0;
}

static void command(char **f, int n) {
  frond_error e = {0, ""};
  frond_db_result r = {0};
  frond_db_arg a[FROND_DB_MAX_ARGS];
  int rc;
  if (strcmp(f[0], "open") == 0 && n >= 2) {
    frond_db_options o = {0, 0, NULL, 0, 0, 0};
    o.statement_timeout_ms = n > 2 ? atoll(f[2]) : 0;
    o.connect_timeout_ms = n > 3 ? atoll(f[3]) : 0;
    o.answer_timeout_ms = n > 4 ? atoll(f[4]) : 0;
    frond__db_close(db);
    db = NULL;
    if ((rc = frond__db_open(f[1], &o, &db, &e)) != 0)
      answer_err(rc, &e, NULL);
    else
      printf("ok %s\n", frond__db_engine(db));
  } else if (db == NULL && strcmp(f[0], "store") != 0 &&
             strcmp(f[0], "alloc") != 0 && strcmp(f[0], "tag") != 0 &&
             strcmp(f[0], "list") != 0) {
    printf("err INVAL - no database open\n");
  } else if (strcmp(f[0], "answer") == 0 && n == 2) {
    frond__db_set_answer_timeout(db, atoll(f[1]));
    printf("ok\n");
  } else if (strcmp(f[0], "exec") == 0 && n >= 2 &&
             args(f + 2, n - 2, a) == 0) {
    if ((rc = frond__db_exec(db, f[1], a, n - 2, &r, &e)) != 0)
      answer_err(rc, &e, db);
    else
      answer_rows(&r);
  } else if (strcmp(f[0], "wr") == 0 && n >= 4 && args(f + 4, n - 4, a) == 0) {
    if ((rc = frond__db_write_returning(db, f[1], f[2], f[3], a, n - 4, &r,
                                        &e)) != 0)
      answer_err(rc, &e, db);
    else
      answer_rows(&r);
  } else if (strcmp(f[0], "begin") == 0 || strcmp(f[0], "commit") == 0) {
    rc = f[0][0] == 'b' ? frond__db_begin(db, &e) : frond__db_commit(db, &e);
    if (rc != 0)
      answer_err(rc, &e, db);
    else
      printf("ok\n");
  } else if (strcmp(f[0], "rollback") == 0) {
    frond__db_rollback(db);
    printf("ok\n");
  } else if (strcmp(f[0], "noreturning") == 0) {
    frond__db_test_clear_flags(db, FROND_DB_RETURNING);
    printf("ok\n");
  } else if (strcmp(f[0], "store") == 0 && n == 2) {
    frond_store_close(st);
    st = NULL;
    if ((rc = frond_store_open(&st, f[1], &e)) != 0)
      answer_err(rc, &e, NULL);
    else
      printf("ok\n");
  } else if (st != NULL && strcmp(f[0], "alloc") == 0 && n == 3) {
    int64_t max_id, step;
    if ((rc = frond__store_alloc(st, f[1], atoll(f[2]), &max_id, &step, &e)) !=
        0)
      answer_err(rc, &e, NULL);
    else
      printf("ok %lld %lld\n", (long long)max_id, (long long)step);
  } else if (st != NULL && strcmp(f[0], "tag") == 0 && n == 4) {
    if ((rc = frond_store_tag_create(st, f[1], atoll(f[2]), atoll(f[3]), NULL,
                                     &e)) != 0)
      answer_err(rc, &e, NULL);
    else
      printf("ok\n");
  } else if (st != NULL && strcmp(f[0], "list") == 0) {
    frond_tag_row *rows;
    size_t k, count;
    if ((rc = frond_store_tag_list(st, &rows, &count, &e)) != 0) {
      answer_err(rc, &e, NULL);
    } else {
      printf("ok");
      for (k = 0; k < count; k++) {
        putchar('\t');
        put_escaped(rows[k].tag);
      }
      putchar('\n');
      frond_free(rows);
    }
  } else {
    printf("err INVAL - bad command\n");
  }
  frond__db_result_free(&r);
}

int main(void) {
  char *line = NULL, *f[MAX_FIELDS], *p;
  size_t cap = 0;
  ssize_t len;
  frond_log_set(NULL, NULL, FROND_LOG_ERROR);
  setvbuf(stdout, NULL, _IOLBF, 0);
  while ((len = getline(&line, &cap, stdin)) > 0) {
    int n = 0;
    if (line[len - 1] == '\n')
      line[len - 1] = '\0';
    if (strcmp(line, "quit") == 0)
      break;
    for (p = line; n < MAX_FIELDS; n++) {
      f[n] = strsep(&p, "\t");
      if (f[n] == NULL)
        break;
      unescape(f[n]);
    }
    if (n > 0 && f[0][0] != '\0')
      command(f, n);
    fflush(stdout);
  }
  free(line);
  frond__db_close(db);
  frond_store_close(st);
  return 0;
}
