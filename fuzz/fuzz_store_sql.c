/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_store_sql.c -- libFuzzer harness for the SQL layer's template
** renderer (frond__db_render, db.h), in every dialect style: numbered
** $n, numbered ?n, and positional ? (the MySQL style).
**
** Every template is rendered or refused with INVAL and a message; a
** rendered one has exactly the placeholders the layer will bind, all of
** $1..$n used; a buffer too small is refused, never overrun (the buffers
** are exact-size heap copies, so ASan sees any overrun).
*/
#include "store/db.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Placeholders of style c in out, outside quotes. */
static int placeholders(const char *out, char c) {
  const char *p = out;
  int n = 0;
  while (*p) {
    if (*p == '\'' || *p == '"' || *p == '`') {
      const char *q = strchr(p + 1, *p);
      if (q == NULL)
        abort(); /* rendered text always closes its quotes */
      p = q + 1;
    } else if (*p == (c ? c : '?') &&
               (c == 0 || (p[1] >= '1' && p[1] <= '9'))) {
      n++;
      p++;
    } else {
      p++;
    }
  }
  return n;
}

static void one(const frond_db_methods *m, const char *sql, size_t size) {
  size_t len = size * 8 + 512;
  char *out = malloc(len), *small;
  unsigned char slots[FROND_DB_MAX_SLOTS];
  int np = -1, ns = -1, i;
  uint64_t seen = 0;
  frond_error e = {0, ""};
  if (out == NULL)
    return;
  if (frond__db_render(m, sql, out, len, &np, slots, &ns, &e) != 0) {
    if (e.code != FROND_EINVAL || e.message[0] == '\0')
      abort();
    free(out);
    return;
  }
  if (np < 0 || np > FROND_DB_MAX_ARGS || ns < np || ns > FROND_DB_MAX_SLOTS ||
      strlen(out) >= len)
    abort();
  for (i = 0; i < ns; i++) {
    if (slots[i] >= np)
      abort();
    seen |= (uint64_t)1 << slots[i];
  }
  if (np > 0 && seen != ((uint64_t)1 << np) - 1)
    abort();
  /* Tokens bring no placeholders of their own. */
  if (m->cParam != '$' && placeholders(out, m->cParam) != ns)
    abort();
  /* One byte short: refused, and nothing written past the end. */
  if ((small = malloc(strlen(out))) != NULL) {
    if (frond__db_render(m, sql, small, strlen(out), &np, slots, &ns, NULL) !=
        FROND_EINVAL)
      abort();
    free(small);
  }
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static frond_db_methods positional;
  char *sql;
  if (size > 4096 || (sql = malloc(size + 1)) == NULL)
    return 0;
  memcpy(sql, data, size);
  sql[size] = '\0';
  if (positional.zName == NULL) {
    positional = frond__db_pg;
    positional.cParam = 0;
    positional.cQuote = '`';
    positional.zIfAbsent = "ON DUPLICATE KEY UPDATE {x} = {x}";
    positional.zTsText = "DATE_FORMAT({x}, '%Y-%m-%d %H:%i:%s')";
  }
  one(&frond__db_pg, sql, size);
  one(&frond__db_sqlite, sql, size);
  one(&positional, sql, size);
  free(sql);
  return 0;
}
