/*
** formats.c -- what `frond next --format` and `frond decode` share: opening
** a format with its keys, and printing a decoded string as JSON.
**
** Keys come from --key-file or FROND_ORDER_KEY, never from the command
** line, where every user of the machine could read them.
*/
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int frond__cli_format_open(const char *cmd, const char *spec,
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

static void hex(const uint8_t *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  char buf[64];
  for (size_t i = 0; i < n && i < 32; i++) {
    buf[2 * i] = digits[p[i] >> 4];
    buf[2 * i + 1] = digits[p[i] & 15];
  }
  frond__out_bytes(buf, 2 * (n < 32 ? n : 32));
}

static void time_fields(int64_t unix_ms, const char *name) {
  char when[48];
  frond__cli_time(unix_ms, when, sizeof(when));
  frond__out_printf(",\"%s\":\"%s\",\"%s_ms\":", name, when,
                    strcmp(name, "time") == 0 ? "unix" : name);
  frond__out_i64(unix_ms);
}

void frond__cli_snowflake_fields(const frond_layout *l, const frond_fields *f) {
  time_fields(f->unix_ms, "time");
  frond__out_str(",\"node\":");
  frond__out_u64(f->node);
  if (l->dc_bits > 0) {
    frond__out_str(",\"datacenter\":");
    frond__out_u64(f->datacenter);
    frond__out_str(",\"worker\":");
    frond__out_u64(f->worker);
  }
  frond__out_str(",\"sequence\":");
  frond__out_u64(f->sequence);
}

int frond__cli_print_value(const frond_format_value *v, const char *input,
                           const frond_layout *l) {
  char s[48];
  frond_fields fl;
  frond_error err = {0};
  int snowflake = v->has_id && v->kind != FROND_FORMAT_SEQ && v->tag[0] == 0;
  /* A 64-bit ID without a tag is a snowflake ID: check it fits the layout
  ** before printing anything. */
  if (snowflake && frond_decode(l, v->id, &fl, &err) != 0)
    return frond__cli_fail(&err);
  frond__out_str("{\"format\":");
  frond__out_json_str(frond_format_kind_name(v->kind));
  frond__out_str(",\"input\":");
  frond__out_json_str(input);
  switch (v->kind) {
  case FROND_FORMAT_UUID7:
  case FROND_FORMAT_UUID4:
    frond_uuid_format(v->bytes, s);
    frond__out_printf(",\"uuid\":\"%s\",\"version\":%d", s, v->uuid_version);
    if (v->has_time)
      time_fields(v->unix_ms, "time");
    break;
  case FROND_FORMAT_ULID:
    frond_ulid_format(v->bytes, s);
    frond__out_printf(",\"ulid\":\"%s\"", s);
    time_fields(v->unix_ms, "time");
    frond__out_str(",\"random\":\"");
    hex(v->bytes + 6, 10);
    frond_uuid_format(v->bytes, s);
    frond__out_printf("\",\"uuid\":\"%s\"", s);
    break;
  case FROND_FORMAT_OBJECTID:
    frond_objectid_format(v->bytes, s);
    frond__out_printf(",\"objectid\":\"%s\"", s);
    time_fields(v->unix_ms, "time");
    frond__out_str(",\"process\":\"");
    hex(v->process, 5);
    frond__out_str("\",\"counter\":");
    frond__out_u64(v->counter);
    break;
  case FROND_FORMAT_SEQ:
    frond__out_str(",\"tag\":");
    frond__out_json_str(v->tag);
    frond__out_printf(",\"period\":\"%s\"", v->period);
    time_fields(v->unix_ms, "period_start");
    frond__out_str(",\"sequence\":\"");
    frond__out_i64(v->id);
    frond__out_str("\"");
    if (v->key_version != '\0')
      frond__out_printf(",\"key_version\":\"%c\"", v->key_version);
    break;
  default: /* a 64-bit ID: decimal, base62, base32, order */
    frond__out_str(",\"id\":\"");
    frond__out_i64(v->id);
    frond__out_str("\"");
    if (v->key_version != '\0')
      frond__out_printf(",\"key_version\":\"%c\"", v->key_version);
    if (v->period[0] != '\0')
      frond__out_printf(",\"prefix_date\":\"%s\"", v->period);
    if (v->tag[0] != '\0') {
      frond__out_str(",\"tag\":");
      frond__out_json_str(v->tag);
    } else {
      frond__cli_snowflake_fields(l, &fl);
    }
    break;
  }
  frond__out_str("}\n");
  return FROND__EXIT_OK;
}
