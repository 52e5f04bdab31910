/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_quota.c -- libFuzzer harness for the rules of quota_client and
** quota_tag (quota_parse.c).
**
** The first byte picks the key (even: quota_tag, with a tag's longest
** name; odd: quota_client, with a client's); the rest is its value.
** Invariants beyond "no crash": parsing is a pure function of the text; a
** refusal is INVAL with a message naming the key; accepted rules are
** within their bounds (names of 1 to max bytes without control
** characters, '/' or a '*' before the end, unique; rate and burst in
** range), sorted (exact names by bytes, then patterns longest first),
** printed back as text they read back the same, and every name finds its
** own rule (a pattern's prefix, one at least as long). Each rule's bucket
** gives exactly its burst at once, then refuses with a wait of at least a
** second.
*/
#include "server/quota.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

static frond__quota_rule rules[FROND__QUOTA_RULES_MAX];
static frond__quota_rule again[FROND__QUOTA_RULES_MAX];

static void rule_ok(const frond__quota_rule *r, size_t max_name) {
  size_t nl = strlen(r->name), i;
  check(nl >= 1 && nl <= max_name && nl == r->len + (size_t)r->prefix);
  check(!r->prefix || r->name[nl - 1] == '*');
  check(frond__quota_name_ok(r->name, nl));
  for (i = 0; i < r->len; i++)
    check((unsigned char)r->name[i] >= 0x20 && r->name[i] != 0x7f &&
          r->name[i] != '/' && r->name[i] != '*');
  check(r->rate >= 1 && r->rate <= FROND__QUOTA_RATE_MAX);
  check(r->burst >= 1 && r->burst <= FROND__QUOTA_BURST_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *key, *text;
  size_t max_name, n, n2, i, len;
  frond_error err = {0, ""}, err2 = {0, ""};
  char *printed, buf[64];
  FILE *f;
  size_t plen = 0;
  int rc;
  if (size == 0)
    return 0;
  key = data[0] & 1 ? "quota_client" : "quota_tag";
  max_name = data[0] & 1 ? FROND__QUOTA_CLIENT_MAX : FROND__QUOTA_NAME_MAX;
  text = (const char *)data + 1;
  len = size - 1;
  rc = frond__quota_parse(key, text, len, max_name, rules,
                          FROND__QUOTA_RULES_MAX, &n, &err);
  check(frond__quota_parse(key, text, len, max_name, again,
                           FROND__QUOTA_RULES_MAX, &n2, &err2) == rc);
  if (rc != 0) {
    check(rc == FROND_EINVAL && err.code == FROND_EINVAL);
    check(strncmp(err.message, key, strlen(key)) == 0 &&
          strcmp(err.message, err2.message) == 0);
    return 0;
  }
  check(n == n2 && n <= FROND__QUOTA_RULES_MAX);
  for (i = 0; i < n; i++) {
    rule_ok(&rules[i], max_name);
    if (i > 0) {
      const frond__quota_rule *a = &rules[i - 1], *b = &rules[i];
      check(a->prefix <= b->prefix);
      if (a->prefix && b->prefix)
        check(a->len >= b->len);
      if (!a->prefix && !b->prefix)
        check(strcmp(a->name, b->name) < 0);
    }
  }
  /* Printed back, read back the same. */
  f = open_memstream(&printed, &plen);
  check(f != NULL);
  for (i = 0; i < n; i++)
    fprintf(f, "%s%s=%llu/%llu", i ? "," : "", rules[i].name,
            (unsigned long long)rules[i].rate,
            (unsigned long long)rules[i].burst);
  check(fclose(f) == 0);
  check(frond__quota_parse(key, printed, plen, max_name, again,
                           FROND__QUOTA_RULES_MAX, &n2, &err) == 0);
  check(n2 == n && memcmp(rules, again, n * sizeof *rules) == 0);
  free(printed);
  for (i = 0; i < n; i++) {
    const frond__quota_rule *m =
        frond__quota_match(rules, n, rules[i].name, rules[i].len);
    _Atomic uint64_t tat = 0;
    uint64_t retry = 0, t = (uint64_t)data[0] * UINT64_C(1000000007);
    check(m != NULL);
    if (!rules[i].prefix)
      check(m == &rules[i]);
    else
      check(m->prefix ? m->len >= rules[i].len
                      : m->len == rules[i].len); /* an exact name wins */
    /* A name beyond the prefix still finds a rule of it. */
    if (rules[i].prefix && rules[i].len + 1 < sizeof buf) {
      memcpy(buf, rules[i].name, rules[i].len);
      buf[rules[i].len] = 'z';
      m = frond__quota_match(rules, n, buf, rules[i].len + 1);
      check(m != NULL && (!m->prefix || m->len >= rules[i].len));
    }
    check(frond__quota_bucket_take(&tat, rules[i].rate, rules[i].burst, t,
                                   rules[i].burst, &retry) == 0);
    check(frond__quota_bucket_tokens(&tat, rules[i].rate, rules[i].burst, t) ==
          0);
    check(frond__quota_bucket_take(&tat, rules[i].rate, rules[i].burst, t, 1,
                                   &retry) == 1 &&
          retry >= 1);
  }
  return 0;
}
