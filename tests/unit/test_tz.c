/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_tz.c -- time zones read from the tz database, checked against the
** C library's localtime_r (single-threaded here, so switching TZ is safe)
** for every zone on the system from 1970 to 2100, and the footer rules
** checked on their own with "slim" files built in memory.
*/
#include "testutil.h"

#include "core/formats.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#define ZONEINFO "/usr/share/zoneinfo"
#define Y1970 INT64_C(0)
#define Y2100 INT64_C(4102444800)

/* The offset glibc gives for unix second t in the process zone. */
static long libc_offset(int64_t t) {
  time_t tt = (time_t)t;
  struct tm tm;
  assert_non_null(localtime_r(&tt, &tm));
  return tm.tm_gmtoff;
}

static void use_libc_zone(const char *name) {
  setenv("TZ", name, 1);
  tzset();
}

/* Compare one zone at a spread of instants and around every transition
** of ours in range. Returns the instants compared. */
static long compare_zone(const char *name, const frond__tz *tz) {
  long n = 0;
  int64_t t, until;
  use_libc_zone(name);
  /* Every 7 days, 13 hours and 17 minutes: walks through all hours of the
  ** day and days of the week over the years. */
  for (t = Y1970; t < Y2100; t += 7 * 86400 + 13 * 3600 + 17 * 60) {
    int32_t mine = frond__tz_offset(tz, t, NULL);
    if (mine != libc_offset(t))
      fail_msg("%s at %lld: frond %d, libc %ld", name, (long long)t, mine,
               libc_offset(t));
    n++;
  }
  /* Each transition exactly: the second before and the second of. */
  for (t = Y1970; t < Y2100; t = until) {
    frond__tz_offset(tz, t, &until);
    if (until >= Y2100)
      break;
    if (frond__tz_offset(tz, until - 1, NULL) != libc_offset(until - 1) ||
        frond__tz_offset(tz, until, NULL) != libc_offset(until))
      fail_msg("%s around transition %lld: frond %d/%d, libc %ld/%ld", name,
               (long long)until, frond__tz_offset(tz, until - 1, NULL),
               frond__tz_offset(tz, until, NULL), libc_offset(until - 1),
               libc_offset(until));
    n += 2;
  }
  return n;
}

static int is_tzif(const char *path) {
  char magic[4];
  FILE *f = fopen(path, "rb");
  int ok;
  if (f == NULL)
    return 0;
  ok = fread(magic, 1, 4, f) == 4 && memcmp(magic, "TZif", 4) == 0;
  fclose(f);
  return ok;
}

static void walk(const char *rel, long *zones, long *points) {
  char dir[512];
  DIR *d;
  struct dirent *e;
  snprintf(dir, sizeof(dir), "%s%s%s", ZONEINFO, rel[0] ? "/" : "", rel);
  assert_non_null(d = opendir(dir));
  while ((e = readdir(d)) != NULL) {
    char name[512], path[1024];
    struct stat st;
    frond__tz *tz;
    frond_error err = {0, ""};
    if (e->d_name[0] == '.')
      continue;
    /* right/ counts leap seconds (refused by design); posix/ repeats the
    ** top level. */
    if (rel[0] == '\0' &&
        (strcmp(e->d_name, "right") == 0 || strcmp(e->d_name, "posix") == 0))
      continue;
    snprintf(name, sizeof(name), "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
    snprintf(path, sizeof(path), "%s/%s", ZONEINFO, name);
    if (stat(path, &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      walk(name, zones, points);
      continue;
    }
    if (!is_tzif(path))
      continue;
    if (frond__tz_open(name, &tz, &err) != 0)
      fail_msg("%s: %s", name, err.message);
    *points += compare_zone(name, tz);
    (*zones)++;
    frond__tz_free(tz);
  }
  closedir(d);
}

static void test_every_zone_matches_libc(void **state) {
  long zones = 0, points = 0;
  (void)state;
  walk("", &zones, &points);
  print_message("compared %ld zones at %ld instants with localtime_r\n", zones,
                points);
  assert_true(zones > 300);
  unsetenv("TZ");
  tzset();
}

/* A TZif v2 file with no transitions and the footer `rule`: what the tz
** project's "slim" output looks like for a zone whose rules never changed,
** so every date comes from the footer. */
static size_t slim_file(const char *rule, uint8_t *buf) {
  size_t n = 0;
  for (int block = 0; block < 2; block++) {
    uint8_t hdr[44] = {'T', 'Z', 'i', 'f', '2'};
    hdr[20 + 4 * 4 + 3] = 1; /* typecnt */
    hdr[20 + 5 * 4 + 3] = 4; /* charcnt */
    memcpy(buf + n, hdr, 44);
    n += 44;
    memset(buf + n, 0, 6 + 4); /* one type: offset 0, abbreviation "UTC" */
    memcpy(buf + n + 6, "UTC", 4);
    n += 10;
  }
  buf[n++] = '\n';
  memcpy(buf + n, rule, strlen(rule));
  n += strlen(rule);
  buf[n++] = '\n';
  return n;
}

/* Compare a zone built from `rule` alone with the system's `zone` from
** the start of year `from` (when the zone's current rule began) to 2100. */
static void check_rule(const char *rule, const char *zone, int64_t from) {
  uint8_t buf[512];
  size_t len = slim_file(rule, buf);
  frond__tz *tz;
  frond_error err = {0, ""};
  int64_t t, until;
  if (frond__tz_parse(buf, len, &tz, &err) != 0)
    fail_msg("%s: %s", rule, err.message);
  use_libc_zone(zone);
  /* The footer applies from the start: compare the years the system's
  ** file lists and the ones it takes from its own footer. */
  for (t = frond__days_from_civil(from, 1, 1) * 86400; t < Y2100; t = until) {
    int32_t off = frond__tz_offset(tz, t, &until);
    if (off != libc_offset(t))
      fail_msg("%s at %lld: %d, %s says %ld", rule, (long long)t, off, zone,
               libc_offset(t));
    if (until > Y2100)
      break;
    if (frond__tz_offset(tz, until - 1, NULL) != libc_offset(until - 1) ||
        frond__tz_offset(tz, until, NULL) != libc_offset(until))
      fail_msg("%s around %lld differs from %s", rule, (long long)until, zone);
  }
  frond__tz_free(tz);
}

static void test_footer_rules(void **state) {
  (void)state;
  check_rule("CET-1CEST,M3.5.0,M10.5.0/3", "Europe/Berlin", 1997);
  check_rule("EST5EDT,M3.2.0,M11.1.0", "America/New_York", 2008);
  /* Southern hemisphere: summer time spans the new year. */
  check_rule("AEST-10AEDT,M10.1.0,M4.1.0/3", "Australia/Sydney", 2009);
  /* Half-hour DST, quoted names. */
  check_rule("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "Australia/Lord_Howe",
             2009);
  /* Negative transition times and 24:00 (tzcode's version 3 extension). */
  check_rule("<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "America/Nuuk", 2024);
  check_rule("<-04>4<-03>,M9.1.6/24,M4.1.6/24", "America/Santiago", 2023);
  unsetenv("TZ");
  tzset();
}

static void test_names_and_offsets(void **state) {
  frond__tz *tz;
  frond_error err = {0, ""};
  int64_t until;
  static const char *const bad[] = {"../../etc/passwd", "/etc/passwd",
                                    "Europe/../../x",   "Nowhere/City",
                                    "Europe/",          "",
                                    "Asia//Tokyo",      "UTC; rm",
                                    "+25:00",           "+08:60"};
  (void)state;
  assert_int_equal(frond__tz_open("UTC", &tz, &err), 0);
  assert_int_equal(frond__tz_offset(tz, 1700000000, &until), 0);
  assert_true(until == INT64_MAX);
  frond__tz_free(tz);
  assert_int_equal(frond__tz_open("+08:00", &tz, &err), 0);
  assert_int_equal(frond__tz_offset(tz, 0, NULL), 8 * 3600);
  assert_string_equal(frond__tz_name(tz), "+08:00");
  frond__tz_free(tz);
  assert_int_equal(frond__tz_open("-0530", &tz, &err), 0);
  assert_int_equal(frond__tz_offset(tz, 0, NULL), -(5 * 3600 + 30 * 60));
  frond__tz_free(tz);
  assert_int_equal(frond__tz_open("Asia/Kolkata", &tz, &err), 0);
  assert_int_equal(frond__tz_offset(tz, 1700000000, NULL), 5 * 3600 + 1800);
  frond__tz_free(tz);
  for (size_t i = 0; i < FROND__ARRAY_SIZE(bad); i++) {
    if (frond__tz_open(bad[i], &tz, &err) != FROND_EFORMAT_INVALID)
      fail_msg("'%s' was accepted", bad[i]);
    assert_true(err.message[0] != '\0');
  }
  /* Leap-second zones are refused with the reason. */
  if (access(ZONEINFO "/right/UTC", R_OK) == 0) {
    assert_int_equal(frond__tz_open("right/UTC", &tz, &err),
                     FROND_EFORMAT_INVALID);
    assert_non_null(strstr(err.message, "leap seconds"));
  }
}

static void test_malformed_files(void **state) {
  uint8_t buf[512];
  size_t len = slim_file("CET-1CEST,M3.5.0,M10.5.0/3", buf);
  frond__tz *tz;
  frond_error err = {0, ""};
  (void)state;
  /* Every truncation is refused, never read past. */
  for (size_t n = 0; n < len - 1; n++) {
    guarded g = guarded_copy(buf, n);
    if (frond__tz_parse((const uint8_t *)g.p, n, &tz, &err) == 0)
      fail_msg("a TZif file cut at %zu bytes was accepted", n);
    guarded_free(&g);
  }
  buf[0] = 'X';
  assert_int_equal(frond__tz_parse(buf, len, &tz, &err), FROND_EFORMAT_INVALID);
  assert_non_null(strstr(err.message, "not a TZif"));
  len = slim_file("CET-1CEST,M13.5.0,M10.5.0/3", buf);
  assert_int_equal(frond__tz_parse(buf, len, &tz, &err), FROND_EFORMAT_INVALID);
  assert_non_null(strstr(err.message, "footer"));
}

static void test_civil(void **state) {
  int64_t y;
  unsigned m, d;
  (void)state;
  assert_int_equal(frond__days_from_civil(1970, 1, 1), 0);
  assert_int_equal(frond__days_from_civil(2000, 3, 1), 11017);
  assert_int_equal(frond__days_from_civil(1969, 12, 31), -1);
  for (int64_t z = -800000; z < 800000; z += 97) {
    frond__civil_from_days(z, &y, &m, &d);
    assert_int_equal(frond__days_from_civil(y, m, d), z);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_civil),
      cmocka_unit_test(test_names_and_offsets),
      cmocka_unit_test(test_malformed_files),
      cmocka_unit_test(test_footer_rules),
      cmocka_unit_test(test_every_zone_matches_libc),
  };
  return frond_run_tests(tests, NULL, NULL);
}
