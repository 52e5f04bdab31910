/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_pg_hosts.c -- libFuzzer harness for the split of libpq's comma
** lists (frond__db_pg_list_item, db.h), which the PostgreSQL engine uses
** to connect host by host.
**
** There are as many items as unescaped commas plus one; each item is
** what lies between them with every backslash escape undone, so items
** and commas together are never longer than the input; an item is cut to
** the buffer, NUL-terminated, never overrun (a buffer of one byte holds
** ""); an item past the last is "".
*/
#include "store/db.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *list = malloc(size + 1), *out = malloc(size + 1), small[3];
  size_t total = 0, i;
  int n, k, commas = 0;
  if (list == NULL || out == NULL)
    abort();
  memcpy(list, data, size);
  list[size] = '\0';
  for (i = 0; list[i]; i++) {
    if (list[i] == '\\' && list[i + 1])
      i++;
    else if (list[i] == ',')
      commas++;
  }
  n = frond__db_pg_list_item(list, 0, NULL, 0);
  if (n != commas + 1)
    abort();
  for (k = 0; k < n && k < 64; k++) {
    if (frond__db_pg_list_item(list, k, out, size + 1) != n)
      abort();
    total += strlen(out);
    if (strchr(out, ',') != NULL && strstr(list, "\\,") == NULL)
      abort(); /* a comma in an item is an escaped one */
    frond__db_pg_list_item(list, k, small, sizeof(small));
    if (strlen(small) > 2 || strncmp(small, out, strlen(small)) != 0)
      abort();
    frond__db_pg_list_item(list, k, small, 1);
    if (small[0] != '\0')
      abort();
  }
  if (n <= 64 && total + (size_t)(n - 1) > strlen(list))
    abort();
  frond__db_pg_list_item(list, n, out, size + 1);
  if (out[0] != '\0')
    abort();
  free(list);
  free(out);
  return 0;
}
