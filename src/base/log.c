/* SPDX-License-Identifier: Apache-2.0 */
/*
** log.c -- the library's log sink: one line per event.
**
** The default sink writes to stderr, each line with one write(2) so that
** lines from several threads never interleave. Two formats:
**
**   text  frond: warn: store not reached, retrying: ...
**   json  {"time":"2026-11-22T01:37:58.733Z","level":"warn",
**          "msg":"store not reached, retrying: ...","node":7}
**
** JSON lines carry the process-wide fields (frond__log_set_field: the node
** ID, the layout) and an event's own fields (frond__log_fields: a request's
** method, path, status); text lines carry an event's fields as key=value
** after the message. When stderr is the journal's stream (JOURNAL_STREAM
** names its device and inode, see systemd.exec(5)), every line starts with
** its syslog priority, "<3>" to "<7>" as sd-daemon(3) describes, and text
** lines drop the "frond: <level>: " prefix the journal records anyway.
*/
#include "base/base.h"
#include "base/escape.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static frond_log_fn log_fn;
static void *log_ctx;
static int log_max = FROND_LOG_INFO;
static atomic_int log_format = FROND_LOG_TEXT;
static atomic_int log_journal = -1; /* -1: not looked at yet */

/* Process-wide fields, set at start and read by every JSON line. */
#define MAX_FIELDS 8
typedef struct field {
  char key[32];
  char str[128];
  int64_t num;
  int is_num;
} field;
static pthread_mutex_t fields_lock = PTHREAD_MUTEX_INITIALIZER;
static field fields[MAX_FIELDS];
static size_t nfields;

int frond__log_journal_detect(void) {
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  struct stat st;
  char end;
  if (js == NULL || sscanf(js, "%llu:%llu%c", &dev, &ino, &end) != 2)
    return 0;
  if (fstat(STDERR_FILENO, &st) != 0)
    return 0;
  return (unsigned long long)st.st_dev == dev &&
         (unsigned long long)st.st_ino == ino;
}

static int journal(void) {
  int j = atomic_load_explicit(&log_journal, memory_order_relaxed);
  if (j < 0) {
    j = frond__log_journal_detect();
    atomic_store_explicit(&log_journal, j, memory_order_relaxed);
  }
  return j;
}

void frond_log_set(frond_log_fn fn, void *ctx, int max_level) {
  log_fn = fn;
  log_ctx = ctx;
  log_max = max_level;
  atomic_store(&log_journal, frond__log_journal_detect());
}

int frond_log_set_format(int format) {
  if (format != FROND_LOG_TEXT && format != FROND_LOG_JSON)
    return FROND_EINVAL;
  atomic_store(&log_format, format);
  atomic_store(&log_journal, frond__log_journal_detect());
  return 0;
}

const char *frond_log_level_name(int level) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  if (level < 0 || level > FROND_LOG_DEBUG)
    return "unknown";
  return names[level];
}

/* A key is what a log pipeline can index without quoting: [a-z0-9_]. */
static int key_ok(const char *k) {
  size_t i, n = strlen(k);
  if (n == 0 || n >= sizeof fields[0].key)
    return 0;
  for (i = 0; i < n; i++)
    if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') ||
          k[i] == '_'))
      return 0;
  return strcmp(k, "time") != 0 && strcmp(k, "level") != 0 &&
         strcmp(k, "msg") != 0;
}

int frond__log_set_field(const char *key, const char *str, int64_t num) {
  size_t i;
  int rc = 0;
  if (key == NULL || !key_ok(key) ||
      (str != NULL && strlen(str) >= sizeof fields[0].str))
    return FROND_EINVAL;
  pthread_mutex_lock(&fields_lock);
  for (i = 0; i < nfields && strcmp(fields[i].key, key) != 0; i++)
    ;
  if (i == nfields && nfields == MAX_FIELDS) {
    rc = FROND_EINVAL;
  } else {
    field *f = &fields[i];
    snprintf(f->key, sizeof f->key, "%s", key);
    snprintf(f->str, sizeof f->str, "%s", str ? str : "");
    f->num = num;
    f->is_num = str == NULL;
    if (i == nfields)
      nfields++;
  }
  pthread_mutex_unlock(&fields_lock);
  return rc;
}

void frond__log_clear_fields(void) {
  pthread_mutex_lock(&fields_lock);
  nfields = 0;
  pthread_mutex_unlock(&fields_lock);
}

/* ---- a bounded output line ---------------------------------------------- */

/* Room is kept for the line's end ("\"}\n" at most), so a long message is
** cut, never the line's frame. */
#define LINE_MAX_BYTES 8192
#define LINE_TAIL 8
typedef struct line {
  char buf[LINE_MAX_BYTES];
  size_t len;
} line;

static void put(line *l, const char *s, size_t n) {
  if (n > LINE_MAX_BYTES - LINE_TAIL - l->len)
    n = LINE_MAX_BYTES - LINE_TAIL - l->len;
  memcpy(l->buf + l->len, s, n);
  l->len += n;
}

static void put_str(line *l, const char *s) {
  put(l, s, strlen(s));
}

static void put_i64(line *l, int64_t v) {
  char num[FROND__DEC_MAX];
  put(l, num, frond__dec_i64(num, v));
}

/* s as the inside of a JSON string (frond__json_escape), so every line is
** valid JSON whatever a backend's message holds. Stops before an escape
** or a character that would not fit whole. */
static void put_json_str(line *l, const char *str) {
  l->len += frond__json_escape(str, strlen(str), l->buf + l->len,
                               LINE_MAX_BYTES - LINE_TAIL - l->len + 1);
}

static void put_json_field(line *l, const char *key, const char *str,
                           int64_t num) {
  put_str(l, ",\"");
  put_json_str(l, key);
  put_str(l, "\":");
  if (str == NULL) {
    put_i64(l, num);
  } else {
    put_str(l, "\"");
    put_json_str(l, str);
    put_str(l, "\"");
  }
}

/* key=value, the value quoted when it holds a space or a quote. */
static void put_text_field(line *l, const frond__log_field *f) {
  put_str(l, " ");
  put_str(l, f->key);
  put_str(l, "=");
  if (f->str == NULL)
    put_i64(l, f->num);
  else if (f->str[0] == '\0' || strpbrk(f->str, " \"=") != NULL) {
    put_str(l, "\"");
    put_json_str(l, f->str);
    put_str(l, "\"");
  } else {
    put_json_str(l, f->str);
  }
}

/* The message of a text line, on one line: control characters (a
** backend's message may end in a newline, or hold several) become spaces,
** trailing ones are dropped. */
static void put_text_msg(line *l, const char *msg) {
  size_t n = strlen(msg), i;
  while (n > 0 && (unsigned char)msg[n - 1] <= ' ')
    n--;
  for (i = 0; i < n && l->len < LINE_MAX_BYTES - LINE_TAIL; i++) {
    unsigned char c = (unsigned char)msg[i];
    l->buf[l->len++] = c < 0x20 && c != '\t' ? ' ' : (char)c;
  }
}

/* Write the whole line with as few write(2)s as the kernel allows (one
** for any line shorter than PIPE_BUF on a pipe, and in practice on a
** file or a terminal). */
static void write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    p += w;
    n -= (size_t)w;
  }
}

static void emit(int level, const frond__log_field *ev, size_t nev,
                 const char *msg) {
  static const char prio[] = {'3', '4', '6', '7'}; /* LOG_ERR .. LOG_DEBUG */
  line l;
  size_t i, j;
  int json =
      atomic_load_explicit(&log_format, memory_order_relaxed) == FROND_LOG_JSON;
  int jn = journal();
  l.len = 0;
  if (jn) {
    char p[3] = {'<', prio[level], '>'};
    put(&l, p, 3);
  }
  if (json) {
    char when[40];
    frond__format_rfc3339(frond_clock_realtime(NULL), when, sizeof when);
    put_str(&l, "{\"time\":\"");
    put_str(&l, when);
    put_str(&l, "\",\"level\":\"");
    put_str(&l, frond_log_level_name(level));
    put_str(&l, "\",\"msg\":\"");
    put_json_str(&l, msg);
    put_str(&l, "\"");
    pthread_mutex_lock(&fields_lock);
    for (i = 0; i < nfields; i++) {
      /* An event's own field wins over the process-wide one. */
      for (j = 0; j < nev && strcmp(ev[j].key, fields[i].key) != 0; j++)
        ;
      if (j == nev)
        put_json_field(&l, fields[i].key,
                       fields[i].is_num ? NULL : fields[i].str, fields[i].num);
    }
    pthread_mutex_unlock(&fields_lock);
    for (j = 0; j < nev; j++)
      put_json_field(&l, ev[j].key, ev[j].str, ev[j].num);
    /* The tail was reserved: the object always closes. */
    memcpy(l.buf + l.len, "}\n", 2);
    l.len += 2;
  } else {
    if (!jn) {
      put_str(&l, "frond: ");
      put_str(&l, frond_log_level_name(level));
      put_str(&l, ": ");
    }
    put_text_msg(&l, msg);
    for (j = 0; j < nev; j++)
      put_text_field(&l, &ev[j]);
    l.buf[l.len++] = '\n';
  }
  write_all(l.buf, l.len);
}

static void vlog(int level, const frond__log_field *ev, size_t nev,
                 const char *fmt, va_list ap) {
  char msg[1024];
  if (level > log_max || level < FROND_LOG_ERROR)
    return;
  if (level > FROND_LOG_DEBUG)
    level = FROND_LOG_DEBUG;
  vsnprintf(msg, sizeof(msg), fmt, ap);
  if (log_fn != NULL)
    log_fn(log_ctx, level, msg);
  else
    emit(level, ev, nev, msg);
}

void frond_log(int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, NULL, 0, fmt, ap);
  va_end(ap);
}

void frond__log_fields(int level, const frond__log_field *ev, size_t nev,
                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, ev, nev, fmt, ap);
  va_end(ap);
}
