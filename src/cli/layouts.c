/* SPDX-License-Identifier: Apache-2.0 */
/*
** layouts.c -- `frond layouts`: the layout presets and what they allow.
**
** For each preset: the bit split, the time unit and epoch, the rate one
** node can sustain, how many nodes fit, how long the time bits last, the
** day they run out, and the bits an ID uses (53 or fewer: a JavaScript
** number holds every ID exactly). A layout whose time is already used up is
*marked
** EXHAUSTED: a generator refuses to start on it (TIME_EXHAUSTED).
*/
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: frond layouts [--json]\n"
    "\n"
    "List the layout presets a --layout option accepts by name: bits\n"
    "(time/node/sequence, node as datacenter+worker when split), time unit,\n"
    "epoch, IDs per second per node, nodes, years of life, the day the\n"
    "time bits run out, and the bits an ID uses (\"53 JS\": every ID is\n"
    "below 2^53, so JavaScript and other JSON readers that parse numbers\n"
    "as doubles read it exactly).\n"
    "\n"
    "  --json   a JSON array, one object per preset and line\n";

#define MS_PER_YEAR (365.2425 * 86400 * 1000)

typedef struct row {
  char name[32], bits[32], unit[24], epoch[48], rate[32], nodes[32];
  char years[32], end[64], idbits[16];
} row;

static void fmt_unit(const frond_layout *l, char *buf, size_t len) {
  if (l->unit_ms % 1000 == 0)
    snprintf(buf, len, "%llds", (long long)(l->unit_ms / 1000));
  else
    snprintf(buf, len, "%lldms", (long long)l->unit_ms);
}

static void fmt_row(const frond_layout *l, int64_t now, row *r) {
  int64_t end = frond_layout_end_ms(l);
  char when[48];
  snprintf(r->name, sizeof(r->name), "%s", l->name);
  if (l->dc_bits > 0)
    snprintf(r->bits, sizeof(r->bits), "%u/%u+%u/%u", l->time_bits, l->dc_bits,
             l->worker_bits, l->seq_bits);
  else
    snprintf(r->bits, sizeof(r->bits), "%u/%u/%u", l->time_bits, l->node_bits,
             l->seq_bits);
  fmt_unit(l, r->unit, sizeof(r->unit));
  snprintf(r->idbits, sizeof(r->idbits), "%u%s", frond_layout_id_bits(l),
           frond_layout_id_bits(l) <= 53 ? " JS" : "");
  frond__cli_time(l->epoch_ms, r->epoch, sizeof(r->epoch));
  snprintf(r->rate, sizeof(r->rate), "%.0f", frond_layout_ids_per_second(l));
  snprintf(r->nodes, sizeof(r->nodes), "%llu",
           (unsigned long long)frond_layout_max_node(l) + 1);
  if (end == INT64_MAX) {
    snprintf(r->years, sizeof(r->years), "-");
    snprintf(r->end, sizeof(r->end), "never");
    return;
  }
  snprintf(r->years, sizeof(r->years), "%.1f",
           (double)(end - l->epoch_ms) / MS_PER_YEAR);
  frond__cli_time(end, when, sizeof(when));
  snprintf(r->end, sizeof(r->end), "%.10s%s", when,
           end <= now ? " EXHAUSTED" : "");
}

static void print_json(const frond_layout *l, int64_t now, int last) {
  int64_t end = frond_layout_end_ms(l);
  char spec[256], when[48];
  frond_layout_format(l, spec, sizeof(spec));
  frond__out_str("{\"name\":");
  frond__out_json_str(l->name);
  frond__out_str(",\"spec\":");
  frond__out_json_str(spec);
  frond__out_printf(",\"time_bits\":%u,\"node_bits\":%u,\"dc_bits\":%u,"
                    "\"worker_bits\":%u,\"seq_bits\":%u,\"unit_ms\":%lld,"
                    "\"epoch_ms\":%lld,\"id_bits\":%u,\"js_safe\":%s,",
                    l->time_bits, l->node_bits, l->dc_bits, l->worker_bits,
                    l->seq_bits, (long long)l->unit_ms, (long long)l->epoch_ms,
                    frond_layout_id_bits(l),
                    frond_layout_id_bits(l) <= 53 ? "true" : "false");
  frond__cli_time(l->epoch_ms, when, sizeof(when));
  frond__out_printf("\"epoch\":\"%s\",\"ids_per_second\":%.0f,"
                    "\"max_nodes\":%llu,",
                    when, frond_layout_ids_per_second(l),
                    (unsigned long long)frond_layout_max_node(l) + 1);
  if (end == INT64_MAX) {
    frond__out_str("\"life_years\":null,\"end_ms\":null,\"end\":null,"
                   "\"exhausted\":false}");
  } else {
    frond__cli_time(end, when, sizeof(when));
    frond__out_printf("\"life_years\":%.2f,\"end_ms\":%lld,\"end\":\"%s\","
                      "\"exhausted\":%s}",
                      (double)(end - l->epoch_ms) / MS_PER_YEAR, (long long)end,
                      when, end <= now ? "true" : "false");
  }
  frond__out_str(last ? "\n" : ",\n");
}

int frond__cli_layouts(int argc, char **argv) {
  int json = 0, st;
  frond__opt opts[] = {{"json", FROND__OPT_FLAG, &json, 0, 0, 0},
                       {NULL, FROND__OPT_FLAG, NULL, 0, 0, 0}};
  frond__args a = {"layouts", usage, opts, 0, 0, NULL, NULL, 0};
  size_t i, n = frond_layout_preset_count();
  int64_t now = frond_clock_realtime(NULL);
  enum { COLS = 9, MAX_ROWS = 64 };
  static const char *const head[COLS] = {"name",  "time/node/seq", "unit",
                                         "epoch", "IDs/s/node",    "max nodes",
                                         "years", "runs out",      "ID bits"};
  static row rows[MAX_ROWS];
  static const char *cells[(MAX_ROWS + 1) * COLS];

  if (!frond__args_parse(&a, argc, argv, &st))
    return st;
  if (n > MAX_ROWS)
    n = MAX_ROWS;
  if (json) {
    frond__out_str("[\n");
    for (i = 0; i < n; i++)
      print_json(frond_layout_preset(i), now, i + 1 == n);
    frond__out_str("]\n");
  } else {
    memcpy(cells, head, sizeof(head));
    for (i = 0; i < n; i++) {
      row *r = &rows[i];
      const char **c = &cells[(i + 1) * COLS];
      fmt_row(frond_layout_preset(i), now, r);
      c[0] = r->name, c[1] = r->bits, c[2] = r->unit, c[3] = r->epoch;
      c[4] = r->rate, c[5] = r->nodes, c[6] = r->years, c[7] = r->end;
      c[8] = r->idbits;
    }
    frond__out_table(cells, n + 1, COLS, "llllrrrll");
  }
  return frond__out_finish(FROND__EXIT_OK);
}
