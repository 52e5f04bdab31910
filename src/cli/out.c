/* SPDX-License-Identifier: Apache-2.0 */
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
#include "base/utf8.h"

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

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

/* A line being built for a table. */
typedef struct line {
  char *p;
  size_t len, cap;
} line;

static void line_put(line *l, const char *s, size_t n) {
  if (l->len + n > l->cap) {
    size_t cap = (l->cap ? l->cap * 2 : 256) + n;
    char *p = realloc(l->p, cap);
    if (p == NULL)
      return; /* out of memory: the cell is left out */
    l->p = p;
    l->cap = cap;
  }
  memcpy(l->p + l->len, s, n);
  l->len += n;
}

static void line_pad(line *l, size_t n) {
  while (n-- > 0)
    line_put(l, " ", 1);
}

/* The columns code point cp takes on a terminal, as wcwidth() says in a
** UTF-8 locale whatever the user's locale is (2 for East Asian wide
** characters, 0 for combining marks); -1 for what is not printable. */
static int cp_width(uint32_t cp) {
  static locale_t utf8;
  static int tried;
  locale_t old;
  int w;
  if (cp >= 0x20 && cp < 0x7f)
    return 1;
  if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
    return -1;
  if (!tried) {
    tried = 1;
    utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  }
  if (utf8 == (locale_t)0)
    return 1; /* no UTF-8 locale: a column per code point */
  old = uselocale(utf8);
  w = wcwidth((wchar_t)cp);
  uselocale(old);
  return w;
}

/*
** Append s to l (NULL: only measure) the way a terminal should show it in
** a table: control characters and what is not printable as escapes (\n,
** \t, \r, \xNN for other control bytes and bytes that are not UTF-8,
** \u{NNNN} for other code points), so that a description with a newline
** stays on its row. Returns the columns it takes.
*/
static size_t cell(const char *s, line *l) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s), i = 0, width = 0, k;
  while (i < n) {
    uint32_t cp = 0;
    char esc[16];
    int w = -1;
    k = frond__utf8_len(p + i, n - i, &cp);
    if (k != 0)
      w = cp_width(cp);
    if (w >= 0) {
      if (l != NULL)
        line_put(l, s + i, k);
      width += (size_t)w;
      i += k;
      continue;
    }
    if (k == 0) {
      snprintf(esc, sizeof esc, "\\x%02X", p[i]);
      k = 1;
    } else if (cp == '\n' || cp == '\t' || cp == '\r') {
      snprintf(esc, sizeof esc, "\\%c",
               cp == '\n'   ? 'n'
               : cp == '\t' ? 't'
                            : 'r');
    } else if (cp < 0x80) {
      snprintf(esc, sizeof esc, "\\x%02X", (unsigned)cp);
    } else {
      snprintf(esc, sizeof esc, "\\u{%X}", (unsigned)cp);
    }
    if (l != NULL)
      line_put(l, esc, strlen(esc));
    width += strlen(esc);
    i += k;
  }
  return width;
}

void frond__out_text(const char *s) {
  line l = {NULL, 0, 0};
  cell(s, &l);
  frond__out_bytes(l.p != NULL ? l.p : "", l.len);
  free(l.p);
}

void frond__out_table(const char *const *cells, size_t rows, size_t cols,
                      const char *align) {
  size_t r, c, w[16] = {0};
  line l = {NULL, 0, 0};
  if (cols > 16)
    cols = 16;
  for (c = 0; c < cols; c++)
    for (r = 0; r < rows; r++) {
      size_t cw = cell(cells[r * cols + c], NULL);
      if (cw > w[c])
        w[c] = cw;
    }
  for (r = 0; r < rows; r++) {
    l.len = 0;
    for (c = 0; c < cols; c++) {
      const char *s = cells[r * cols + c];
      size_t pad = w[c] - cell(s, NULL);
      if (c > 0)
        line_put(&l, "  ", 2);
      if (align[c] == 'r')
        line_pad(&l, pad);
      cell(s, &l);
      if (align[c] != 'r')
        line_pad(&l, pad);
    }
    while (l.len > 0 && l.p[l.len - 1] == ' ')
      l.len--; /* no trailing blanks */
    frond__out_bytes(l.p != NULL ? l.p : "", l.len);
    frond__out_bytes("\n", 1);
  }
  free(l.p);
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
