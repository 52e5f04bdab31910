/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_config.c -- the server's configuration table: sources and their
** order, every type's parsing and refusals, the names derived from a row,
** and the printed forms (--print-config, --list-keys, --help); a key given
** twice in a file and FROND_* variables Frond does not read, refused.
*/
#include "testutil.h"
#include "server/config.h"

#include <unistd.h>

/* f's output as a string (static, NUL-terminated). */
static const char *printed(void (*fn)(FILE *), const frond__config *c) {
  static char out[1 << 16];
  FILE *f = tmpfile();
  size_t n;
  assert_non_null(f);
  if (c != NULL)
    frond__config_print(c, f);
  else
    fn(f);
  rewind(f);
  n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  fclose(f);
  return out;
}

static void test_sources(void **state) {
  frond__config c;
  frond_error err = {0, ""};
  char *dir = tmpdir_make(), path[600];
  char *argv[] = {"--config", path, "--max-count", "7", "--threads=3"};
  int action;
  FILE *f;
  snprintf(path, sizeof path, "%s/frond.conf", dir);
  f = fopen(path, "w");
  fprintf(f, "# comment\n  listen = 127.0.0.1:9000 \r\nmax_count = 5\n"
             "threads = 2\nnode = 4\n\n");
  fclose(f);
  setenv("FROND_NODE", "9", 1);
  setenv("FROND_THREADS", "1", 1);
  assert_int_equal(frond__config_load(&c, 5, argv, &action, &err), 0);
  assert_int_equal(action, FROND__CFG_RUN);
  assert_string_equal(c.listen, "127.0.0.1:9000"); /* file */
  assert_int_equal(c.node, 9);                     /* env over file */
  assert_int_equal(c.max_count, 7);                /* flag over file */
  assert_int_equal(c.threads, 3);                  /* flag over env */
  assert_int_equal(c.idle_timeout_ms, 60000);      /* default */
  unsetenv("FROND_NODE");
  unsetenv("FROND_THREADS");
  {
    char *bad[] = {"--max-count", "0"};
    assert_int_equal(frond__config_load(&c, 2, bad, &action, &err),
                     FROND_ECONFIG);
    assert_string_equal(err.message, "flag: max_count must be an integer in "
                                     "[1, 10000000], not '0'");
  }
  {
    char *bad[] = {"--nope", "1"};
    assert_int_equal(frond__config_load(&c, 2, bad, &action, &err),
                     FROND_ECONFIG);
    assert_string_equal(err.message, "unknown flag '--nope'");
  }
  {
    char *bad[] = {"--threads"};
    assert_int_equal(frond__config_load(&c, 1, bad, &action, &err),
                     FROND_ECONFIG);
    assert_string_equal(err.message, "flag --threads needs a value");
  }
  {
    char *acts[] = {"--print-config", "--list-keys", "-h"};
    int want[] = {FROND__CFG_PRINT, FROND__CFG_LIST, FROND__CFG_HELP};
    for (int i = 0; i < 3; i++) {
      assert_int_equal(frond__config_load(&c, 1, &acts[i], &action, &err), 0);
      assert_int_equal(action, want[i]);
    }
  }
  setenv("FROND_LOG_LEVEL", "loud", 1);
  assert_int_equal(frond__config_load(&c, 0, NULL, &action, &err),
                   FROND_ECONFIG);
  assert_non_null(strstr(err.message, "FROND_LOG_LEVEL: log_level must be "
                                      "one of error, warn, info, debug"));
  unsetenv("FROND_LOG_LEVEL");
  f = fopen(path, "w");
  fprintf(f, "bogus = 1\n");
  fclose(f);
  assert_int_equal(frond__config_load(&c, 2, argv, &action, &err),
                   FROND_ECONFIG);
  assert_non_null(strstr(err.message, ":1: unknown key 'bogus'"));
  unlink(path);
  assert_int_equal(frond__config_load(&c, 2, argv, &action, &err),
                   FROND_ECONFIG);
  assert_non_null(strstr(err.message, "cannot open config file"));
  tmpdir_remove(dir);
}

/* Set one key from text; 0 or the error. */
static int set(frond__config *c, const char *key, const char *v,
               frond_error *err) {
  return frond__config_set(c, key, strlen(key), v, "test", err);
}

static void test_types(void **state) {
  frond__config c;
  frond_error err = {0, ""};
  frond__config_defaults(&c);
  /* DURATION: milliseconds, or with a unit. */
  assert_int_equal(set(&c, "idle_timeout_ms", "2500", &err), 0);
  assert_int_equal(c.idle_timeout_ms, 2500);
  assert_int_equal(set(&c, "idle-timeout-ms", "90s", &err), 0);
  assert_int_equal(c.idle_timeout_ms, 90000);
  assert_int_equal(set(&c, "idle_timeout_ms", "2min", &err), 0);
  assert_int_equal(c.idle_timeout_ms, 120000);
  assert_int_equal(set(&c, "idle_timeout_ms", "1h", &err), 0);
  assert_int_equal(c.idle_timeout_ms, 3600000);
  assert_int_equal(set(&c, "max_wait_ms", "-1", &err), 0);
  assert_int_equal(c.max_wait_ms, -1);
  static const char *bad_ms[] = {
      "99",   "25h", "10 s", "s",   "",
      "1.5s", "-1s", "10m",  "1e3", "9223372036854775807h"};
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad_ms); i++) {
    assert_int_equal(set(&c, "idle_timeout_ms", bad_ms[i], &err), FROND_EINVAL);
    assert_non_null(strstr(err.message, "test: idle_timeout_ms must be an "
                                        "integer in [100, 86400000] ms"));
  }
  assert_int_equal(c.idle_timeout_ms, 3600000); /* unchanged by refusals */
  /* SIZE: bytes, or with a binary unit. */
  assert_int_equal(set(&c, "max_body", "1KiB", &err), 0);
  assert_int_equal(c.max_body, 1024);
  assert_int_equal(set(&c, "resp_max_query", "64MiB", &err), 0);
  assert_int_equal(c.resp_max_query, 67108864);
  assert_int_equal(set(&c, "resp_max_query", "65MiB", &err), FROND_EINVAL);
  assert_int_equal(set(&c, "max_body", "1kb", &err), FROND_EINVAL);
  /* INT: no unit. */
  assert_int_equal(set(&c, "threads", "2s", &err), FROND_EINVAL);
  assert_int_equal(set(&c, "threads", "257", &err), FROND_EINVAL);
  /* ENUM: stored as the index. */
  assert_int_equal(set(&c, "log_level", "debug", &err), 0);
  assert_int_equal(c.log_level, FROND_LOG_DEBUG);
  assert_int_equal(set(&c, "leaf_time_zone", "local", &err), 0);
  assert_int_equal(c.leaf_time_zone, FROND__TZ_LOCAL);
  assert_int_equal(set(&c, "leaf_time_zone", "UTC", &err), FROND_EINVAL);
  assert_string_equal(err.message, "test: leaf_time_zone must be one of utc, "
                                   "local, not 'UTC'");
  /* ADDRESS: numeric, checked when read; "off" only where allowed. */
  assert_int_equal(set(&c, "listen", "localhost:80", &err), 0);
  assert_int_equal(set(&c, "listen", "[::1]:8080", &err), 0);
  assert_int_equal(set(&c, "resp_listen", "off", &err), 0);
  static const char *bad_addr[] = {"off",       "8080",       "host:80",
                                   "1.2.3.4:0", "1.2.3.4:x",  "[::1]8080",
                                   ":8080",     "1.2.3:8080", "[::1:80"};
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad_addr); i++) {
    assert_int_equal(set(&c, "listen", bad_addr[i], &err), FROND_EINVAL);
    assert_non_null(strstr(err.message, "listen must be host:port"));
  }
  /* STRING: bounded by its field. */
  {
    char long_token[300];
    memset(long_token, 'a', sizeof long_token - 1);
    long_token[sizeof long_token - 1] = '\0';
    assert_int_equal(set(&c, "admin_token", long_token, &err), FROND_EINVAL);
    assert_string_equal(err.message,
                        "test: admin_token is too long (at most 255 bytes)");
  }
}

static void test_addr(void **state) {
  frond__addr a;
  frond_error err = {0, ""};
  assert_int_equal(frond__config_addr("listen", "localhost:81", &a, &err), 0);
  assert_string_equal(a.host, "127.0.0.1");
  assert_int_equal(a.port, 81);
  assert_true(a.loopback);
  assert_int_equal(frond__config_addr("listen", "[::]:82", &a, &err), 0);
  assert_string_equal(a.host, "::");
  assert_false(a.loopback);
  assert_int_equal(frond__config_addr("listen", "off", &a, &err), 1);
  assert_int_equal(frond__config_addr("x", "nope", &a, &err), FROND_EINVAL);
  assert_string_equal(err.message, "x must be host:port or [v6]:port with a "
                                   "numeric IP address, not 'nope'");
}

static void test_coord_uri(void **state) {
  frond__config c;
  frond_error err = {0, ""};
  char uri[256];
  frond__config_defaults(&c);
  /* The default: a lease in the store's database. */
  assert_string_equal(c.coordinator, "auto");
  assert_int_equal(c.node, -1);
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "lease+" FROND_STORE_DEFAULT);
  assert_int_equal(frond__config_pinned_node(uri), -1);
  /* Empty is not the library's static:0 by the back door. */
  c.coordinator[0] = '\0';
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "coordinator is empty"));
  strcpy(c.coordinator, "auto");
  /* A node ID typed by hand is registered there. */
  c.node = 7;
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "lease+" FROND_STORE_DEFAULT "?node=7");
  assert_int_equal(frond__config_pinned_node(uri), 7);
  strcpy(c.coordinator, "static:7");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "lease+" FROND_STORE_DEFAULT "?node=7");
  strcpy(c.coordinator, "static:8");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err),
                   FROND_EINVAL);
  assert_string_equal(err.message, "coordinator 'static:8' and node = 7 "
                                   "disagree");
  /* A store with options of its own: ours follow them. */
  strcpy(c.coordinator, "static");
  strcpy(c.store, "postgresql://db/x?sslmode=require");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "lease+postgresql://db/x?sslmode=require&node=7");
  strcpy(c.coordinator, "static:7?report_ms=100");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(
      uri, "lease+postgresql://db/x?sslmode=require&node=7&report_ms=100");
  /* Registered nowhere: no store, or said so. */
  strcpy(c.coordinator, "static:7?unregistered=1");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "static:7?unregistered=1");
  assert_int_equal(frond__config_pinned_node(uri), 7);
  strcpy(c.coordinator, "auto");
  strcpy(c.store, "none");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "static:7");
  c.node = -1;
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "static:0");
  /* A multi: store has no one database for node IDs: name one. */
  strcpy(c.store, "multi:sqlite:a.db|sqlite:b.db");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "lease+<one database's URI>"));
  c.node = 4;
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "static:4?unregistered=1"));
  strcpy(c.coordinator, "lease+sqlite:a.db");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "lease+sqlite:a.db?node=4");
  strcpy(c.coordinator, "lease+sqlite:a.db?node=5");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err),
                   FROND_EINVAL);
  strcpy(c.coordinator, "static:4?node=5");
  strcpy(c.store, "sqlite:a.db");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "node= is for a lease"));
  strcpy(c.store, "multi:sqlite:a.db|sqlite:b.db");
  /* ZooKeeper hands out node IDs itself. */
  strcpy(c.coordinator, "zk://127.0.0.1:1/x");
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err),
                   FROND_EINVAL);
  c.node = -1;
  assert_int_equal(frond__config_coord_uri(&c, uri, sizeof uri, &err), 0);
  assert_string_equal(uri, "zk://127.0.0.1:1/x");
  assert_int_equal(frond__config_pinned_node(uri), -1);
}

/* A switch given alone means on: last, or before another flag. */
static void test_bare_switch(void **state) {
  frond__config c;
  frond_error err = {0, ""};
  int action;
  char *last[] = {"--node", "3", "--layout-change"};
  char *before[] = {"--layout-change", "--node", "4"};
  char *valued[] = {"--layout-change", "off", "--metrics-histograms=off"};
  (void)state;
  assert_int_equal(frond__config_load(&c, 3, last, &action, &err), 0);
  assert_int_equal(c.layout_change, 1);
  assert_int_equal(c.node, 3);
  assert_int_equal(frond__config_load(&c, 3, before, &action, &err), 0);
  assert_int_equal(c.layout_change, 1);
  assert_int_equal(c.node, 4);
  assert_int_equal(frond__config_load(&c, 3, valued, &action, &err), 0);
  assert_int_equal(c.layout_change, 0);
  assert_int_equal(c.metrics_histograms, 0);
}

static void test_file_text(void **state) {
  frond__config c;
  frond_error err = {0, ""};
  char line[2100];
  frond__config_defaults(&c);
  /* Pure over its buffer: no NUL needed, CRLF and no final newline fine. */
  static const char text[] = "threads = 5\r\n# x = y\n\n  node=3";
  assert_int_equal(frond__config_parse(&c, text, sizeof text - 1, "mem", &err),
                   0);
  assert_int_equal(c.threads, 5);
  assert_int_equal(c.node, 3);
  assert_int_equal(frond__config_parse(&c, "threads\n", 8, "mem", &err),
                   FROND_EINVAL);
  assert_string_equal(err.message, "mem:1: expected key = value");
  assert_int_equal(frond__config_parse(&c, "\nnode = -2\n", 11, "mem", &err),
                   FROND_EINVAL);
  assert_non_null(strstr(err.message, "mem:2: node must be an integer"));
  assert_int_equal(frond__config_parse(&c, "node = 1\0\n", 10, "mem", &err),
                   FROND_EINVAL);
  assert_string_equal(err.message, "mem:1: NUL byte in the line");
  memset(line, 'a', sizeof line);
  assert_int_equal(frond__config_parse(&c, line, sizeof line, "mem", &err),
                   FROND_EINVAL);
  assert_string_equal(err.message, "mem:1: line too long");
}

static void test_printed(void **state) {
  frond__config c;
  frond_error err = {0, ""};
  size_t n, i;
  const frond__cfg_row *rows = frond__config_rows(&n);
  const char *out;
  frond__config_defaults(&c);
  out = printed(NULL, &c);
  /* One line per row, in the table's order, in the file syntax. */
  assert_non_null(strstr(out, "listen = 127.0.0.1:8080\n"));
  assert_non_null(strstr(out, "log_level = info\n"));
  assert_non_null(strstr(out, "admin_token = \n"));
  assert_non_null(strstr(out, "advertise = auto\n"));
  assert_int_equal(set(&c, "admin_token", "secret", &err), 0);
  assert_int_equal(set(&c, "idle_timeout_ms", "2s", &err), 0);
  out = printed(NULL, &c);
  assert_non_null(strstr(out, "admin_token = (set)\n"));
  assert_non_null(strstr(out, "idle_timeout_ms = 2000\n"));
  assert_null(strstr(out, "secret"));
  /* What is printed reads back as the same configuration. */
  {
    frond__config d;
    frond__config_defaults(&d);
    assert_int_equal(set(&d, "admin_token", "secret", &err), 0);
    assert_int_equal(frond__config_parse(&d, out, strlen(out), "printed", &err),
                     0);
    strcpy(d.admin_token, "secret");
    assert_memory_equal(&c, &d, sizeof c);
  }
  /* --list-keys: a header, then key, env, flag, type, default, range,
  ** meaning for every row. */
  out = printed(frond__config_list, NULL);
  assert_memory_equal(out,
                      "#key\tenvironment\tflag\ttype\tdefault\trange\t"
                      "meaning\n",
                      47);
  assert_non_null(strstr(out, "\nheader_timeout_ms\tFROND_HEADER_TIMEOUT_MS\t"
                              "--header-timeout-ms\tduration\t10000\t"
                              "100..3600000 ms\ttime to receive a whole "
                              "request\n"));
  assert_non_null(strstr(out, "\nresp_listen\tFROND_RESP_LISTEN\t"
                              "--resp-listen\taddress\t127.0.0.1:6380\t"
                              "host:port|off\t"));
  assert_non_null(strstr(out, "\nlog_level\tFROND_LOG_LEVEL\t--log-level\t"
                              "enum\tinfo\terror|warn|info|debug\t"));
  for (i = 0; i < n; i++) {
    char want[128];
    snprintf(want, sizeof want, "\n%s\t", rows[i].name);
    assert_non_null(strstr(out, want));
  }
  /* --help lists every flag. */
  out = printed(frond__config_usage, NULL);
  for (i = 0; i < n; i++) {
    char flag[64];
    size_t j;
    snprintf(flag, sizeof flag, "--%s ", rows[i].name);
    for (j = 2; flag[j]; j++)
      if (flag[j] == '_')
        flag[j] = '-';
    assert_non_null(strstr(out, flag));
  }
  assert_non_null(strstr(out, "--list-keys"));
  /* Every default passes its own row's checks (a family of keys has no
  ** default). */
  for (i = 0; i < n; i++)
    if (rows[i].type != FROND__CFG_FORMAT)
      assert_int_equal(set(&c, rows[i].name, rows[i].def, &err), 0);
}

/* format.<name> = spec: a family of keys, from every source; names and
** specs are checked as they are read; printed, they read back. */
static void test_formats(void **state) {
  frond__config c, d;
  frond_error err = {0, ""};
  char *argv[] = {"--format.orders=order:digits=12,check=damm,key=1",
                  "--format.short", "base62"};
  char big[600];
  int action;
  const char *out;
  (void)state;
  frond__config_defaults(&c);
  assert_int_equal(c.nformats, 0);
  assert_string_equal(c.order_key_file, "");
  /* A spec that needs a key is accepted: keys are read at start. */
  assert_int_equal(set(&c, "format.orders", "order:digits=12,key=1", &err), 0);
  assert_int_equal(set(&c, "format.ids", "uuid7", &err), 0);
  assert_int_equal(set(&c, "format.orders", "order:digits=19", &err), 0);
  assert_int_equal(c.nformats, 2);
  assert_string_equal(c.formats[0].name, "orders");
  assert_string_equal(c.formats[0].spec, "order:digits=19"); /* replaced */
  assert_string_equal(c.formats[1].name, "ids");
  /* Bad names and specs are refused with the key and the reason. */
  assert_int_equal(set(&c, "format.Orders", "uuid7", &err), FROND_EINVAL);
  assert_non_null(strstr(err.message, "a format's name is a lower-case"));
  assert_int_equal(set(&c, "format.1x", "uuid7", &err), FROND_EINVAL);
  assert_int_equal(set(&c, "format.a-b", "uuid7", &err), FROND_EINVAL);
  assert_int_equal(
      set(&c, "format.abcdefghijabcdefghijabcdefghijabc", "uuid7", &err),
      FROND_EINVAL);
  assert_int_equal(set(&c, "format.", "uuid7", &err), FROND_EINVAL);
  assert_int_equal(set(&c, "format.x", "order:digits=3", &err), FROND_EINVAL);
  assert_string_equal(err.message, "test: format.x: FORMAT_INVALID: digits=3 "
                                   "is out of range 6..19");
  assert_int_equal(set(&c, "format.x", "snowflake", &err), FROND_EINVAL);
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(set(&c, "format.x", big, &err), FROND_EINVAL);
  assert_non_null(strstr(err.message, "too long"));
  assert_int_equal(c.nformats, 2);
  for (int i = 0; i < FROND__CFG_FORMATS_MAX - 2; i++) {
    char key[32];
    snprintf(key, sizeof key, "format.f%d", i);
    assert_int_equal(set(&c, key, "ulid", &err), 0);
  }
  assert_int_equal(set(&c, "format.one_more", "ulid", &err), FROND_EINVAL);
  assert_non_null(strstr(err.message, "at most 64 formats"));
  /* Printed one line each, in the order given; read back the same. */
  out = printed(NULL, &c);
  assert_non_null(strstr(out, "\nformat.orders = order:digits=19\n"
                              "format.ids = uuid7\nformat.f0 = ulid\n"));
  frond__config_defaults(&d);
  assert_int_equal(frond__config_parse(&d, out, strlen(out), "printed", &err),
                   0);
  assert_memory_equal(&c, &d, sizeof c);
  /* File, environment (FROND_FORMAT_<NAME>, the name in lower case) and
  ** flags, flags winning. */
  setenv("FROND_FORMAT_SHORT", "base32", 1);
  setenv("FROND_FORMAT_DAILY", "seq:tag=orders,digits=6", 1);
  setenv("FROND_ORDER_KEY_FILE", "/etc/frond/keys", 1);
  assert_int_equal(frond__config_load(&c, 3, argv, &action, &err), 0);
  assert_int_equal(c.nformats, 3);
  for (int i = 0; i < 3; i++) {
    if (strcmp(c.formats[i].name, "short") == 0)
      assert_string_equal(c.formats[i].spec, "base62");
    else if (strcmp(c.formats[i].name, "daily") == 0)
      assert_string_equal(c.formats[i].spec, "seq:tag=orders,digits=6");
    else
      assert_string_equal(c.formats[i].spec,
                          "order:digits=12,check=damm,key=1");
  }
  assert_string_equal(c.order_key_file, "/etc/frond/keys");
  setenv("FROND_FORMAT_BAD", "order:digits=99", 1);
  assert_int_equal(frond__config_load(&c, 0, NULL, &action, &err),
                   FROND_ECONFIG);
  assert_non_null(strstr(err.message, "FROND_FORMAT_BAD: format.bad: "));
  unsetenv("FROND_FORMAT_BAD");
  unsetenv("FROND_FORMAT_SHORT");
  unsetenv("FROND_FORMAT_DAILY");
  unsetenv("FROND_ORDER_KEY_FILE");
  /* --list-keys shows the family once. */
  out = printed(frond__config_list, NULL);
  assert_non_null(strstr(out, "\nformat.<name>\tFROND_FORMAT_<NAME>\t"
                              "--format.<name>\tformat\t\t"));
}

/* A key on two lines of a file: neither silently wins. */
static void test_key_twice(void **state) {
  frond__config c;
  frond_error err = {0, ""};
  static const char twice[] = "# the shared store\nstore = sqlite:a.db\n\n"
                              "store = sqlite:b.db\n";
  static const char spelt[] = "resp_listen = off\nresp-listen = off\n";
  static const char formats[] = "format.a = uuid7\nformat.b = ulid\n"
                                "format.a = uuid7\n";
  static const char fine[] = "format.a = uuid7\nformat.b = ulid\n"
                             "store = none\n# store = sqlite:x.db\n";
  frond__config_defaults(&c);
  assert_int_equal(frond__config_parse(&c, twice, strlen(twice), "f", &err),
                   FROND_ECONFIG);
  assert_int_equal(err.code, FROND_ECONFIG);
  assert_string_equal(err.message,
                      "f:4: store is given twice, on line 2 and again on line "
                      "4: the later line would silently win; keep one");
  assert_int_equal(frond__config_parse(&c, spelt, strlen(spelt), "f", &err),
                   FROND_ECONFIG);
  assert_non_null(strstr(err.message, "line 1 and again on line 2"));
  frond__config_defaults(&c);
  assert_int_equal(frond__config_parse(&c, formats, strlen(formats), "f", &err),
                   FROND_ECONFIG);
  assert_non_null(strstr(err.message, "format.a is given twice, on line 1 "
                                      "and again on line 3"));
  frond__config_defaults(&c);
  assert_int_equal(frond__config_parse(&c, fine, strlen(fine), "f", &err), 0);
  assert_string_equal(c.store, "none");
  assert_int_equal(c.nformats, 2);
  /* Two files are two parses: a key in each is no repeat (there is one
  ** file per start; the environment and flags win over it, by design). */
  assert_int_equal(frond__config_parse(&c, fine, strlen(fine), "g", &err), 0);
}

/* A FROND_* variable Frond does not read is refused, with a suggestion. */
static void test_env_unknown(void **state) {
  static const char *const known[] = {"FROND_STORE",
                                      "FROND_LOG_LEVEL",
                                      "FROND_FORMAT_ORDERS",
                                      "FROND_ORDER_KEY",
                                      "FROND_ORDER_KEY_FILE",
                                      "FROND_TEST_WEDGE_MS",
                                      "FROND_BIN",
                                      "FROND_SRC",
                                      "FROND_BUILD",
                                      "FROND_TEST",
                                      "FROND_CHAOS_SOAK",
                                      "FROND_MISTAKES_KEEP",
                                      "FROND_ZK_DEBUG",
                                      "FRONDSTORE",
                                      "STORE",
                                      "FROND"};
  static const char *const unknown[][2] = {
      {"FROND_STORE_URI", "did you mean FROND_STORE?"},
      {"FROND_LOGLEVEL", "did you mean FROND_LOG_LEVEL?"},
      {"FROND_ADMIN_TOKN", "did you mean FROND_ADMIN_TOKEN?"},
      {"FROND_COORDINATER", "did you mean FROND_COORDINATOR?"},
      {"FROND_ORDERS_KEY", "did you mean FROND_ORDER_KEY?"},
      {"FROND_FORMAT_", "unknown variable FROND_FORMAT_"},
      {"FROND_TEST_", "unknown variable FROND_TEST_"},
      {"FROND_XYZZY_PLUGH_QUUX", "unknown variable FROND_XYZZY_PLUGH_QUUX:"}};
  frond__config c;
  frond_error err = {0, ""};
  char *help[] = {"--help"}, *print[] = {"--print-config"};
  int action;
  size_t i;
  for (i = 0; i < FROND__ARRAY_SIZE(known); i++)
    assert_int_equal(
        frond__config_env_unknown(known[i], strlen(known[i]), &err), 0);
  for (i = 0; i < FROND__ARRAY_SIZE(unknown); i++) {
    assert_int_equal(
        frond__config_env_unknown(unknown[i][0], strlen(unknown[i][0]), &err),
        FROND_ECONFIG);
    if (strstr(err.message, unknown[i][1]) == NULL)
      fail_msg("%s: %s", unknown[i][0], err.message);
  }
  assert_null(strstr(err.message, "did you mean"));
  /* Every source's load refuses it, but for --help and --list-keys. */
  setenv("FROND_STORE_URI", "postgresql://db/frond", 1);
  assert_int_equal(frond__config_env_check(&err), FROND_ECONFIG);
  assert_int_equal(frond__config_load(&c, 0, NULL, &action, &err),
                   FROND_ECONFIG);
  assert_int_equal(frond__config_load(&c, 1, print, &action, &err),
                   FROND_ECONFIG);
  assert_non_null(strstr(err.message, "unknown variable FROND_STORE_URI; "
                                      "did you mean FROND_STORE?"));
  assert_int_equal(frond__config_load(&c, 1, help, &action, &err), 0);
  unsetenv("FROND_STORE_URI");
  assert_int_equal(frond__config_env_check(&err), 0);
  assert_int_equal(frond__config_load(&c, 0, NULL, &action, &err), 0);
  /* Each documented variable has a name and a reader. */
  for (i = 0;
       i < frond__config_env_others(0, &(const char *){0}, &(const char *){0});
       i++) {
    const char *name = NULL, *what = NULL;
    frond__config_env_others(i, &name, &what);
    assert_int_equal(strncmp(name, "FROND_", 6), 0);
    assert_true(strlen(what) > 10);
    assert_int_equal(frond__config_env_unknown(name, strlen(name), &err), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sources),     cmocka_unit_test(test_types),
      cmocka_unit_test(test_addr),        cmocka_unit_test(test_coord_uri),
      cmocka_unit_test(test_file_text),   cmocka_unit_test(test_printed),
      cmocka_unit_test(test_bare_switch), cmocka_unit_test(test_formats),
      cmocka_unit_test(test_key_twice),   cmocka_unit_test(test_env_unknown),
  };
  return frond_run_tests(tests, NULL, NULL);
}
