/*
** out.c -- buffered standard output, JSON strings, and error reporting for
** the `frond` command.
**
** `frond next` prints millions of lines per second, so output goes through
** one large buffer written with write(2) rather than through stdio.
*/
#include "cli/cli.h"
#include "base/base.h"
#include "base/escape.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_SIZE (1 << 20)

static char out_buf[OUT_SIZE];
static size_t out_len;
static int out_errno;                   /* first write error, sticky */
static volatile sig_atomic_t *out_stop; /* see frond__out_stop_on */

void frond__out_stop_on(volatile sig_atomic_t *flag) {
  out_stop = flag;
}

static void out_drain(void) {
  size_t off = 0;
  while (off < out_len && out_errno == 0) {
    ssize_t n;
    /* A signal that arrived while we were formatting, or that cut a
    ** write short (a pipe write returns the bytes it got through), must
    ** not be followed by a write that blocks on a full pipe. */
    if (out_stop != NULL && *out_stop) {
      out_errno = EINTR;
      break;
    }
    n = write(STDOUT_FILENO, out_buf + off, out_len - off);
    if (n > 0)
      off += (size_t)n;
    else if (n < 0 && errno != EINTR)
      out_errno = errno;
  }
  out_len = 0;
}

int frond__out_flush(void) {
  out_drain();
  return out_errno;
}

int frond__out_error(void) {
  return out_errno;
}

void frond__out_bytes(const char *s, size_t n) {
  while (n > 0) {
    size_t room = OUT_SIZE - out_len, k = n < room ? n : room;
    memcpy(out_buf + out_len, s, k);
    out_len += k;
    s += k;
    n -= k;
    if (out_len == OUT_SIZE)
      out_drain();
  }
}

void frond__out_str(const char *s) {
  frond__out_bytes(s, strlen(s));
}

void frond__out_printf(const char *fmt, ...) {
  char small[512], *p = small;
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof(small)) {
    p = malloc((size_t)n + 1);
    if (p == NULL)
      return;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  frond__out_bytes(p, (size_t)n);
  if (p != small)
    free(p);
}

void frond__out_u64(uint64_t v) {
  char buf[FROND__DEC_MAX];
  frond__out_bytes(buf, frond__dec_u64(buf, v));
}

void frond__out_i64(int64_t v) {
  char buf[FROND__DEC_MAX];
  frond__out_bytes(buf, frond__dec_i64(buf, v));
}

void frond__out_json_str(const char *s) {
  size_t len = strlen(s);
  frond__out_bytes("\"", 1);
  while (len > 0) {
    char esc[160 * 6 + 1];
    size_t k = len < 160 ? len : 160, j;
    /* A piece never ends inside a UTF-8 sequence (at most 4 bytes), which
    ** would turn a valid character into two U+FFFD. */
    for (j = 0; j < 3 && k < len && ((unsigned char)s[k] & 0xc0) == 0x80; j++)
      k--;
    frond__out_bytes(esc, frond__json_escape(s, k, esc, sizeof esc));
    s += k;
    len -= k;
  }
  frond__out_bytes("\"", 1);
}

void frond__out_table(const char *const *cells, size_t rows, size_t cols,
                      const char *align) {
  size_t r, c, w[16] = {0};
  for (c = 0; c < cols && c < 16; c++)
    for (r = 0; r < rows; r++)
      if (strlen(cells[r * cols + c]) > w[c])
        w[c] = strlen(cells[r * cols + c]);
  for (r = 0; r < rows; r++) {
    char line[1024];
    int len = 0;
    for (c = 0; c < cols && c < 16; c++) {
      const char *cell = cells[r * cols + c];
      int pad = (int)(w[c] - strlen(cell)), room = (int)sizeof(line) - len;
      int n =
          align[c] == 'r'
              ? snprintf(line + len, (size_t)room, "%*s%s  ", pad, "", cell)
              : snprintf(line + len, (size_t)room, "%s%*s  ", cell, pad, "");
      len += n < room ? n : room - 1;
    }
    while (len > 0 && line[len - 1] == ' ')
      len--; /* no trailing blanks */
    frond__out_bytes(line, (size_t)len);
    frond__out_bytes("\n", 1);
  }
}

void frond__cli_time(int64_t unix_ms, char *buf, size_t len) {
  frond__format_rfc3339(unix_ms, buf, len);
}

const char *frond__cli_env(const char *name, const char *def) {
  const char *v = getenv(name);
  return v != NULL && v[0] != '\0' ? v : def;
}

int frond__cli_fail(const frond_error *err) {
  const char *msg =
      err->message[0] != '\0' ? err->message : frond_strerror(err->code);
  fflush(stdout);
  fprintf(stderr, "frond: %s: %s\n", frond_err_name(err->code), msg);
  return FROND__EXIT_FAILURE;
}

int frond__cli_fail_errno(const char *what) {
  fprintf(stderr, "frond: %s: %s: %s\n", frond_err_name(FROND_EIO), what,
          strerror(errno));
  return FROND__EXIT_FAILURE;
}

int frond__out_finish(int rc) {
  int e = frond__out_flush();
  if (e != 0 && rc == FROND__EXIT_OK) {
    errno = e;
    return frond__cli_fail_errno("writing the output");
  }
  return rc;
}
