/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_acl.c -- the clients file: what it accepts and what it refuses
** (with file:line and CONFIG), glob patterns, rights on tags and formats,
** and the check of a secret: right, wrong, unknown client, and every byte
** of the hash compared whatever the secret.
*/
#define FROND_TEST_HOOKS /* frond__acl_compared: the server's test build */
#include "testutil.h"
#include "server/acl.h"

#include <sodium.h>

#define HASH_A                                                                 \
  "blake2b:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static frond__acl *parse_ok(const char *text) {
  frond_error err = {0, ""};
  frond__acl *a = NULL;
  int rc = frond__acl_parse(text, strlen(text), "c.conf", &a, &err);
  if (rc != 0)
    fail_msg("refused: %s", err.message);
  assert_non_null(a);
  return a;
}

/* The text is refused with CONFIG and a message holding want. */
static void refused(const char *text, const char *want) {
  frond_error err = {0, ""};
  frond__acl *a = (frond__acl *)1;
  int rc = frond__acl_parse(text, strlen(text), "c.conf", &a, &err);
  if (rc != FROND_ECONFIG || strstr(err.message, want) == NULL)
    fail_msg("%s: got %d %s, wanted CONFIG ... %s", text, rc, err.message,
             want);
  assert_null(a);
}

static void test_parse(void **state) {
  frond__acl *a = parse_ok(
      "# clients\n\n"
      "payments secret=" HASH_A " rights=issue,read tags=orders:*,inv:*\n"
      "  dash\tcert=\"dash board\" rights=read # a comment\r\n"
      "ops secret=" HASH_A " cert=ops.example rights=admin formats=*");
  const frond__acl_client *k;
  (void)state;
  assert_int_equal(a->n, 3);
  k = frond__acl_find(a, "payments", 8);
  assert_non_null(k);
  assert_int_equal(k->rights, FROND__ACL_ISSUE | FROND__ACL_READ);
  assert_true(k->has_secret);
  assert_int_equal(k->hash[0], 0x00);
  assert_int_equal(k->hash[31], 0xff);
  assert_int_equal(k->ntags, 2);
  assert_string_equal(k->tags, "orders:*");
  assert_string_equal(k->tags + 9, "inv:*");
  assert_int_equal(k->nformats, 0);
  assert_int_equal(k->line, 3);
  assert_ptr_equal(k->set, a);
  k = frond__acl_find_cert(a, "dash board");
  assert_non_null(k);
  assert_string_equal(k->c.name, "dash");
  assert_false(k->has_secret);
  assert_int_equal(k->line, 4);
  assert_null(frond__acl_find(a, "pay", 3));
  assert_null(frond__acl_find(a, "paymentsX", 9));
  assert_null(frond__acl_find_cert(a, ""));
  assert_non_null(frond__acl_find_cert(a, "ops.example"));
  frond__acl_unref(a);
  a = parse_ok("");
  assert_int_equal(a->n, 0);
  frond__acl_unref(a);
}

static void test_refusals(void **state) {
  (void)state;
  refused("a rights=read\n", "c.conf:1: client a has neither secret=");
  refused("\na cert=x\n", "c.conf:2: client a has no rights=");
  refused("a cert=x rights=read,write", "unknown right 'write'");
  refused("a cert=x rights=read,", "rights has an empty item");
  refused("a cert=x rights=read tags=", "tags has an empty item");
  refused("a cert=x rights=read right=issue", "unknown field 'right'");
  refused("a cert=x rights=read rights=issue", "rights given twice");
  refused("a cert=x rights=read issue", "'issue' is not field=value");
  refused("a secret=abc rights=read", "secret must be blake2b:");
  refused("a secret=blake2b:zz112233445566778899aabbccddeeff0011223344556677"
          "8899aabbccddeeff rights=read",
          "64 hex digits");
  refused("a cert=\"x rights=read", "a quote is not closed");
  refused("a cert=x rights=read\nb cert=y rights=read\na cert=z rights=read",
          "c.conf:3: client a is also on line 1");
  refused("a cert=x rights=read\nb cert=x rights=read",
          "c.conf:2: cert x is also client a's (line 1)");
  refused("admin cert=x rights=read", "admin_token's client");
  refused("default cert=x rights=read", "admin_token's client");
  refused("a/b cert=x rights=read", "only A-Z a-z 0-9");
  refused("a cert=x\001 rights=read", "a control character");
  /* A distinguished name matches no certificate's name: refused, in every
  ** spelling OpenSSL and RFC 4514 print it; names that merely hold a '='
  ** or a '/' are not. */
  refused("a cert=CN=dash rights=read", "e.g. cert=dash");
  refused("a cert=cn=dash,O=Acme rights=read", "e.g. cert=dash");
  refused("a cert=\"O=Acme, CN=dash\" rights=read", "e.g. cert=dash");
  refused("a cert=/C=US/O=Acme/CN=dash rights=read", "e.g. cert=dash");
  refused("a cert=\"OU = ops + CN = dash\" rights=read", "e.g. cert=dash");
  refused("a cert=O=Acme rights=read", "e.g. cert=dash.example.com");
  frond__acl_unref(parse_ok("a cert=spiffe://example.org/ns/c=1 rights=read\n"
                            "b cert=dash.example.com rights=read\n"
                            "c cert=key=value rights=read\n"));
  {
    char name[100];
    memset(name, 'n', 64);
    snprintf(name + 64, sizeof name - 64, " cert=x rights=read");
    refused(name, "1 to 63 characters");
  }
  {
    char *big = malloc(FROND__ACL_LINE_MAX + 100);
    memset(big, 'x', FROND__ACL_LINE_MAX + 10);
    big[FROND__ACL_LINE_MAX + 10] = '\0';
    refused(big, "line longer than");
    free(big);
  }
}

static void test_glob(void **state) {
  (void)state;
  assert_true(frond__acl_glob("*", "", 0));
  assert_true(frond__acl_glob("*", "anything", 8));
  assert_true(frond__acl_glob("orders:*", "orders:eu", 9));
  assert_true(frond__acl_glob("orders:*", "orders:", 7));
  assert_false(frond__acl_glob("orders:*", "orders", 6));
  assert_false(frond__acl_glob("orders:*", "invoices:eu", 11));
  assert_true(frond__acl_glob("a*b*c", "axxbyyc", 7));
  assert_false(frond__acl_glob("a*b*c", "axxbyy", 6));
  assert_true(frond__acl_glob("*:eu", "orders:eu", 9));
  assert_false(frond__acl_glob("*:eu", "orders:us", 9));
  assert_true(frond__acl_glob("exact", "exact", 5));
  assert_false(frond__acl_glob("exact", "exactly", 7));
  assert_false(frond__acl_glob("exact", "exac", 4));
  /* The length counts, not a NUL in the name. */
  assert_false(frond__acl_glob("ab", "ab\0", 3));
}

static void test_allows(void **state) {
  frond__acl *a = parse_ok("p cert=p rights=issue tags=orders:* "
                           "formats=snowflake,uuid7\n"
                           "r cert=r rights=read tags=*\n"
                           "o cert=o rights=admin,read tags=orders:*\n");
  const frond__acl_client *p = frond__acl_find(a, "p", 1),
                          *r = frond__acl_find(a, "r", 1),
                          *o = frond__acl_find(a, "o", 1);
  char buf[32];
  (void)state;
  assert_true(frond__acl_allows(p, FROND__ACL_ISSUE, 0, "orders:eu", 9));
  assert_false(frond__acl_allows(p, FROND__ACL_ISSUE, 0, "invoices", 8));
  assert_true(frond__acl_allows(p, FROND__ACL_ISSUE, 1, "snowflake", 9));
  assert_true(frond__acl_allows(p, FROND__ACL_ISSUE, 1, "uuid7", 5));
  assert_false(frond__acl_allows(p, FROND__ACL_ISSUE, 1, "ulid", 4));
  /* Tags and formats are apart: a tag named snowflake is not a format. */
  assert_false(frond__acl_allows(p, FROND__ACL_ISSUE, 0, "snowflake", 9));
  assert_false(frond__acl_allows(p, FROND__ACL_ADMIN, 0, "orders:eu", 9));
  assert_false(frond__acl_allows(r, FROND__ACL_ISSUE, 0, "orders:eu", 9));
  assert_true(frond__acl_allows(o, FROND__ACL_ADMIN, 0, "orders:new", 10));
  assert_false(frond__acl_allows(o, FROND__ACL_ADMIN, 0, "other", 5));
  assert_string_equal(frond__acl_rights_str(FROND__ACL_ALL, buf, sizeof buf),
                      "issue,read,admin");
  assert_string_equal(frond__acl_rights_str(FROND__ACL_READ, buf, sizeof buf),
                      "read");
  frond__acl_unref(a);
}

static void test_verify(void **state) {
  const char *secret = "dGhpcyBpcyBhIHRlc3Qgc2VjcmV0IG9mIDMyIGJ5dGVz";
  unsigned char h[FROND__ACL_HASH_LEN];
  char text[256], hex[2 * FROND__ACL_HASH_LEN + 1];
  frond__acl *a;
  const frond__acl_client *k, *c;
  uint64_t before;
  size_t i;
  (void)state;
  frond__acl_hash(secret, strlen(secret), h);
  for (i = 0; i < sizeof h; i++)
    snprintf(hex + 2 * i, 3, "%02x", h[i]);
  snprintf(text, sizeof text,
           "k secret=blake2b:%s rights=issue\nc cert=c rights=read\n", hex);
  a = parse_ok(text);
  k = frond__acl_find(a, "k", 1);
  c = frond__acl_find(a, "c", 1);
  assert_true(frond__acl_verify(k, secret, strlen(secret)));
  assert_false(frond__acl_verify(k, secret, strlen(secret) - 1));
  assert_false(frond__acl_verify(k, "", 0));
  /* A client without a secret takes none, not even the empty one's. */
  assert_false(frond__acl_verify(c, "", 0));
  assert_false(frond__acl_verify(NULL, secret, strlen(secret)));
  /* Every byte of the hash is looked at: for a match, a secret whose hash
  ** differs in its first byte, and an unknown client alike. */
  before = atomic_load(&frond__acl_compared);
  assert_false(frond__acl_verify(k, "x", 1));
  assert_int_equal(atomic_load(&frond__acl_compared) - before,
                   FROND__ACL_HASH_LEN);
  before = atomic_load(&frond__acl_compared);
  assert_false(frond__acl_verify(NULL, "x", 1));
  assert_int_equal(atomic_load(&frond__acl_compared) - before,
                   FROND__ACL_HASH_LEN);
  before = atomic_load(&frond__acl_compared);
  assert_true(frond__acl_verify(k, secret, strlen(secret)));
  assert_int_equal(atomic_load(&frond__acl_compared) - before,
                   FROND__ACL_HASH_LEN);
  /* The compare itself: equal and unequal at either end. */
  {
    unsigned char x[32] = {0}, y[32] = {0};
    assert_true(frond__acl_equal(x, y, sizeof x));
    y[0] = 1;
    assert_false(frond__acl_equal(x, y, sizeof x));
    y[0] = 0;
    y[31] = 0x80;
    assert_false(frond__acl_equal(x, y, sizeof x));
  }
  /* The hash is keyed: not BLAKE2b-256 of the secret alone. */
  {
    unsigned char plain[FROND__ACL_HASH_LEN];
    crypto_generichash(plain, sizeof plain, (const unsigned char *)secret,
                       strlen(secret), NULL, 0);
    assert_memory_not_equal(plain, h, sizeof h);
  }
  frond__acl_unref(a);
}

static void test_refs(void **state) {
  frond__acl *a = parse_ok("a cert=a rights=read\n");
  (void)state;
  atomic_fetch_add(&a->refs, 1);
  frond__acl_unref(a); /* one left: still readable */
  assert_string_equal(a->clients[0].c.name, "a");
  frond__acl_unref(a); /* freed: ASan would see a use after this */
  frond__acl_unref(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),  cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_glob),   cmocka_unit_test(test_allows),
      cmocka_unit_test(test_verify), cmocka_unit_test(test_refs),
  };
  return frond_run_tests(tests, NULL, NULL);
}
