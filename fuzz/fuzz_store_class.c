/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_store_class.c -- libFuzzer harness for how the SQL layer tells a
** failure retrying cannot fix from one it can: the SQLSTATE read out of
** libpq's verbose words (frond__db_pg_message_state) and the classes of
** PostgreSQL's states and MariaDB's error numbers (db.h).
**
** Whatever the bytes: a state found is five digits or capital letters,
** found in the words right after ":  " and before ':', and it is the last
** such one; with none found the state is empty; every class is
** FROND_DB_PERMANENT or FROND_DB_ERROR, the same for the same input, and a
** state is permanent only in classes 28 and 3D or as 42501.
*/
#include "store/db.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

static int is_state_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *msg = malloc(size + 1), st[6], again[6];
  const char *p, *last = NULL;
  unsigned no = 0;
  int found, cls, i;
  check(msg != NULL);
  memcpy(msg, data, size);
  msg[size] = '\0'; /* the words are a C string; a NUL ends them early */
  found = frond__db_pg_message_state(msg, st);
  check(frond__db_pg_message_state(msg, again) == found &&
        strcmp(st, again) == 0);
  /* The last ":  XXXXX:" in the words, found independently. */
  for (p = msg; (p = strstr(p, ":  ")) != NULL; p++) {
    for (i = 0; i < 5 && is_state_char(p[3 + i]); i++)
      ;
    if (i == 5 && p[8] == ':')
      last = p + 3;
  }
  check(found == (last != NULL));
  if (found) {
    check(strlen(st) == 5 && memcmp(st, last, 5) == 0);
    cls = frond__db_pg_state_class(st);
    check(cls == (strncmp(st, "28", 2) == 0 || strncmp(st, "3D", 2) == 0 ||
                          strcmp(st, "42501") == 0
                      ? FROND_DB_PERMANENT
                      : FROND_DB_ERROR));
  } else {
    check(st[0] == '\0');
  }
  check(frond__db_pg_state_class(msg) == FROND_DB_ERROR ||
        (strlen(msg) == 5 &&
         frond__db_pg_state_class(msg) == FROND_DB_PERMANENT));
  memcpy(&no, data, size < sizeof(no) ? size : sizeof(no));
  cls = frond__db_mysql_errno_class(no);
  check((cls == FROND_DB_PERMANENT || cls == FROND_DB_ERROR) &&
        cls == frond__db_mysql_errno_class(no));
  check(frond__db_transient(-(int)(no % 64)) ==
        (-(int)(no % 64) == FROND_ESTORE));
  free(msg);
  return 0;
}
