/* SPDX-License-Identifier: Apache-2.0 */
/*
** formats.c -- what `frond next --format` and `frond decode` share: opening
** a format with its keys, and printing a decoded string as JSON.
**
** Keys come from --key-file or FROND_ORDER_KEY, never from the command
** line, where every user of the machine could read them. A keyed format's
** key is checked before its first number: in the store its tag's IDs come
** from, else (snowflake IDs) in the data directory of the high-water file,
** as every run on this host sees it.
*/
#include "cli/cli.h"
#include "core/format_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__cli_format_create(const char *cmd, const char *spec,
                             const char *key_file, frond_format **out) {
  frond_order_keys *keys = NULL;
  frond_error err = {0};
  int rc;
  if (key_file != NULL || getenv(FROND_ORDER_KEY_ENV) != NULL) {
    if (frond_order_keys_load(key_file, &keys, &err) != 0)
      return frond__cli_fail(&err);
  }
  rc = frond_format_create(out, spec, keys, NULL, NULL, &err);
  frond_order_keys_free(keys);
  if (rc == FROND_EFORMAT_INVALID)
    return frond__usage_error(cmd, "--format: %s", err.message);
  if (rc == FROND_EKEY_INVALID && keys == NULL) {
    char why[sizeof(err.message)];
    snprintf(why, sizeof(why), "%s", err.message);
    snprintf(err.message, sizeof(err.message),
             "%.400s (give --key-file FILE or set " FROND_ORDER_KEY_ENV ")",
             why);
  }
  return rc != 0 ? frond__cli_fail(&err) : FROND__EXIT_OK;
}

int frond__cli_format_check(frond_format *f, const frond_format_source *src,
                            frond_coord *coord, const char *dir,
                            frond_error *err) {
  if (dir == NULL && src->seg == NULL && coord == NULL) {
    frond_format_skip_check(f);
    return 0;
  }
  return frond_format_check(f, src, coord, dir, err);
}

/* One JSON object per line: numbers as numbers, strings escaped. */
static void print_fields(const frond__field *f, size_t n) {
  for (size_t i = 0; i < n; i++) {
    frond__out_printf("%s\"%s\":", i == 0 ? "{" : ",", f[i].name);
    if (f[i].is_num)
      frond__out_i64(f[i].num);
    else
      frond__out_json_str(f[i].str);
  }
  frond__out_str("}\n");
}

int frond__cli_print_value(const frond_format_value *v, const char *input,
                           const frond_layout *l) {
  frond__field f[FROND__FIELDS_MAX];
  frond_error err = {0};
  size_t n;
  if (frond__format_fields(v, input, strlen(input), l, f, &n, &err) != 0)
    return frond__cli_fail(&err);
  print_fields(f, n);
  return FROND__EXIT_OK;
}

int frond__cli_print_snowflake(int64_t id, const frond_layout *l) {
  frond__field f[FROND__FIELDS_MAX];
  frond_error err = {0};
  size_t n;
  if (frond__snowflake_fields(l, id, f, &n, &err) != 0)
    return frond__cli_fail(&err);
  print_fields(f, n);
  return FROND__EXIT_OK;
}
