/* SPDX-License-Identifier: Apache-2.0 */
/*
** clients.c -- `frond clients`: make a client's secret and its line of
** clients_file, hash a secret, check a file as the server reads it.
**
** Secrets are made here, never chosen: 32 random bytes from libsodium,
** base64url (43 characters), which nobody can guess, so the file may keep
** a fast hash of them (server/acl.h says why). The secret is printed once
** (stderr, or --secret-file); stdout has the file's line only, so that
** `>> clients.conf` never writes a secret into the file.
*/
#include "cli/cli.h"
#include "server/acl.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: frond clients add NAME [--rights R] [--tags P] [--formats P]\n"
    "                          [--secret-file PATH]\n"
    "       frond clients hash < SECRET\n"
    "       frond clients check FILE\n"
    "\n"
    "Named clients of the server (clients_file). add makes a 256-bit random\n"
    "secret for NAME and prints the line to add to the file, which keeps\n"
    "only the secret's hash; the secret is shown once, on stderr (or written\n"
    "to --secret-file, mode 0600, which must not exist). The client sends\n"
    "Authorization: Bearer NAME:SECRET (HTTP) or AUTH NAME SECRET (RESP).\n"
    "\n"
    "  --rights R       issue, read, admin, comma-separated (default issue)\n"
    "  --tags P         segment tags, glob patterns (orders:*), "
    "comma-separated\n"
    "  --formats P      other IDs: snowflake, uuid7, uuid4, ulid, objectid or "
    "a\n"
    "                   format's name, glob patterns, comma-separated\n"
    "\n"
    "hash reads a secret (one line, at least 32 bytes) on stdin and prints\n"
    "its secret= field. check reads FILE as the server would, and says how\n"
    "many clients it has or what is wrong where (exit 1).\n";

/* The line of NAME, checked by the server's own parser. */
static int add(int argc, char **argv) {
  const char *rights = "issue", *tags = NULL, *formats = NULL, *out = NULL;
  frond__opt opts[] = {{"rights", FROND__OPT_STR, &rights, 0, 0, 0},
                       {"tags", FROND__OPT_STR, &tags, 0, 0, 0},
                       {"formats", FROND__OPT_STR, &formats, 0, 0, 0},
                       {"secret-file", FROND__OPT_STR, &out, 0, 0, 0},
                       {NULL, 0, NULL, 0, 0, 0}};
  frond__args a = {"clients add", usage, opts, 1, 1, "NAME", NULL, 0};
  unsigned char raw[32], hash[FROND__ACL_HASH_LEN];
  char secret[FROND__ACL_SECRET_LEN + 1], hex[2 * FROND__ACL_HASH_LEN + 1];
  char line[FROND__ACL_LINE_MAX + 1];
  frond_error err = {0, ""};
  frond__acl *set;
  int status, n;
  if (!frond__args_parse(&a, argc, argv, &status))
    return status;
  if (sodium_init() < 0) {
    frond__fail(&err, FROND_EIO, "libsodium cannot start");
    return frond__cli_fail(&err);
  }
  randombytes_buf(raw, sizeof raw);
  sodium_bin2base64(secret, sizeof secret, raw, sizeof raw,
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  sodium_memzero(raw, sizeof raw);
  frond__acl_hash(secret, strlen(secret), hash);
  sodium_bin2hex(hex, sizeof hex, hash, sizeof hash);
  n = snprintf(line, sizeof line, "%s secret=blake2b:%s rights=%s%s%s%s%s",
               a.pos[0], hex, rights, tags ? " tags=" : "", tags ? tags : "",
               formats ? " formats=" : "", formats ? formats : "");
  if (n < 0 || (size_t)n >= sizeof line)
    return frond__usage_error("clients add", "the line is too long");
  if (frond__acl_parse(line, (size_t)n, "the line", &set, &err) != 0)
    return frond__usage_error("clients add", "%s", err.message);
  frond__acl_unref(set);
  if (out != NULL) {
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    size_t len = strlen(secret);
    if (fd < 0 || write(fd, secret, len) != (ssize_t)len ||
        write(fd, "\n", 1) != 1) {
      int e = errno;
      if (fd >= 0)
        close(fd);
      errno = e;
      sodium_memzero(secret, sizeof secret);
      return frond__cli_fail_errno(out);
    }
    close(fd);
  } else {
    fprintf(stderr,
            "secret of %s (shown once; the file keeps only its hash):\n%s\n",
            a.pos[0], secret);
  }
  sodium_memzero(secret, sizeof secret);
  printf("%s\n", line);
  return FROND__EXIT_OK;
}

static int hash(int argc, char **argv) {
  frond__args a = {"clients hash", usage, NULL, 0, 0, NULL, NULL, 0};
  unsigned char h[FROND__ACL_HASH_LEN];
  char buf[1024], hex[2 * FROND__ACL_HASH_LEN + 1];
  size_t n;
  int status;
  if (!frond__args_parse(&a, argc, argv, &status))
    return status;
  n = fread(buf, 1, sizeof buf - 1, stdin);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    n--;
  if (memchr(buf, '\n', n) != NULL || n == sizeof buf - 1) {
    sodium_memzero(buf, sizeof buf);
    return frond__usage_error("clients hash",
                              "the secret is one line, under 1 KiB");
  }
  if (n < FROND__ACL_SECRET_MIN) {
    sodium_memzero(buf, sizeof buf);
    return frond__usage_error(
        "clients hash",
        "a secret of %zu bytes is too short to be kept as a fast hash "
        "(at least %d: use `frond clients add`, which makes one)",
        n, FROND__ACL_SECRET_MIN);
  }
  frond__acl_hash(buf, n, h);
  sodium_memzero(buf, sizeof buf);
  sodium_bin2hex(hex, sizeof hex, h, sizeof h);
  printf("secret=blake2b:%s\n", hex);
  return FROND__EXIT_OK;
}

static int check(int argc, char **argv) {
  frond__args a = {"clients check", usage, NULL, 1, 1, "FILE", NULL, 0};
  frond_error err = {0, ""};
  frond__acl *set;
  int status;
  if (!frond__args_parse(&a, argc, argv, &status))
    return status;
  if (frond__acl_load(a.pos[0], &set, &err) != 0)
    return frond__cli_fail(&err);
  printf("%s: %zu client%s\n", a.pos[0], set->n, set->n == 1 ? "" : "s");
  frond__acl_unref(set);
  return FROND__EXIT_OK;
}

int frond__cli_clients(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "add") == 0)
    return add(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "hash") == 0)
    return hash(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "check") == 0)
    return check(argc - 1, argv + 1);
  if (argc >= 2 &&
      (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs(usage, stdout);
    return FROND__EXIT_OK;
  }
  fputs(usage, stderr);
  return FROND__EXIT_USAGE;
}
