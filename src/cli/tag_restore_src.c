/* SPDX-License-Identifier: Apache-2.0 */
/*
** tag_restore_src.c -- `frond tag restore`'s sources read into its plan
** (tag_restore.h): the audit log (audit_line.c), a scrape of /metrics
** (metrics_line.c), a running node's /metrics fetched.
*/
#include "cli/cli.h"
#include "cli/tag_restore.h"
#include "server/audit_line.h"
#include "server/metrics_line.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef frond__restore_seen seen;
typedef frond__restore_plan plan;

seen *frond__restore_tag(plan *p, const char *tag) {
  size_t i;
  seen *grown;
  for (i = 0; i < p->n; i++)
    if (strcmp(p->v[i].tag, tag) == 0)
      return &p->v[i];
  if (p->n == p->cap) {
    size_t c = p->cap ? p->cap * 2 : 16;
    if ((grown = realloc(p->v, c * sizeof(*grown))) == NULL)
      return NULL;
    p->v = grown;
    p->cap = c;
  }
  grown = &p->v[p->n++];
  memset(grown, 0, sizeof(*grown));
  snprintf(grown->tag, sizeof(grown->tag), "%s", tag);
  grown->high = -1;
  return grown;
}

int frond__restore_oom(plan *p) {
  fprintf(stderr, "frond: NOMEM: out of memory\n");
  p->failed = 1;
  return -1;
}

static int saw(plan *p, const char *tag, int64_t id, const char *where) {
  seen *s = frond__restore_tag(p, tag);
  if (s == NULL)
    return frond__restore_oom(p);
  if (id > s->high) {
    s->high = id;
    snprintf(s->from, sizeof(s->from), "%s", where);
  }
  return 0;
}

/* A store identity a source names: the first one seen is the fleet's;
** another is refused, both named. */
static void identity(plan *p, const char *store, const char *where) {
  if (p->store[0] == '\0') {
    snprintf(p->store, sizeof(p->store), "%s", store);
    snprintf(p->store_from, sizeof(p->store_from), "%s", where);
  } else if (strcmp(p->store, store) != 0) {
    fprintf(stderr,
            "frond: STORE_MISMATCH: %s served store %s, %s served store %s: "
            "sources of two stores (the wrong backup, or another fleet's "
            "node)\n",
            p->store_from, p->store, where, store);
    p->failed = 1;
  }
}

/* ---- the audit log ---- */

/* A format's record with strings and no IDs (a seq format's: its numbers
** count in its period rows, tag:YYYYMMDD): read back with the format's
** --format, else kept to be refused with the rows it leaves uncovered. */
static void format_line(plan *p, const frond__audit_line *l,
                        const char *where) {
  const char *str[2] = {l->first_string, l->last_string};
  frond_format_value v;
  frond_error err = {0};
  int i, k;
  for (i = 0; i < p->nfmt; i++)
    if (strcmp(p->fname[i], l->format) == 0)
      break;
  if (i == p->nfmt) {
    for (k = 0; k < p->nunread; k++)
      if (strcmp(p->unread[k].format, l->format) == 0 &&
          strcmp(p->unread[k].tag, l->tag) == 0)
        return;
    if (p->nunread < FORMATS_MAX) {
      struct unread *u = &p->unread[p->nunread++];
      snprintf(u->format, sizeof(u->format), "%s", l->format);
      snprintf(u->tag, sizeof(u->tag), "%s", l->tag);
      snprintf(u->where, sizeof(u->where), "%s", where);
    }
    p->failed = 1;
    return;
  }
  for (k = 0; k < 2; k++) {
    if (frond_format_decode(p->fmt[i], str[k], strlen(str[k]), &v, &err) != 0 ||
        !v.has_id) {
      fprintf(stderr,
              "frond: INVAL: %s: \"%s\" is not a string of --format %s: "
              "%s\n",
              where, str[k], l->format, err.message);
      p->failed = 1;
      return;
    }
    /* A seq number counts in its period's row, others in the tag's. */
    (void)saw(p, v.tag[0] != '\0' ? v.tag : l->tag, v.id, where);
  }
}

static void audit_line(void *ctx, const char *path, unsigned long n,
                       const frond__audit_line *l) {
  plan *p = ctx;
  unsigned need = FROND__AUDIT_FIRST | FROND__AUDIT_LAST;
  char where[FROM_MAX];
  if (strcmp(l->event, "dropped") == 0)
    p->dropped++;
  /* A segment tag's IDs: a line with a tag and no node (a snowflake
  ** format names its node), answered or not (taken either way). */
  if (l->tag[0] == '\0' || (l->have & FROND__AUDIT_NODE))
    return;
  snprintf(where, sizeof(where), "%s:%lu", path, n);
  if ((l->have & need) != need && l->format[0] != '\0' &&
      l->first_string[0] != '\0') {
    format_line(p, l, where);
    return;
  }
  if ((l->have & need) != need || l->last < l->first)
    return;
  (void)saw(p, l->tag, l->last, where);
}

void frond__restore_audit(plan *p, const char *log) {
  char **v = NULL;
  size_t n = 0, i;
  if (frond__cli_audit_files(log, NULL, 0, &v, &n) != 0) {
    (void)frond__restore_oom(p);
    return;
  }
  for (i = 0; i < n; i++) {
    if (v[i][0] != '\0' &&
        frond__cli_audit_read(v[i], audit_line, p, &p->skipped) != 0)
      p->failed = 1;
    free(v[i]);
  }
  free(v);
}

/* ---- metrics ---- */

/* An ID-valued sample that is not a whole number in range: refused with
** its line (a float from federation or recording rules has lost the low
** digits of an ID above 2^53; one planned from it may be too low). */
static int bad_value(plan *p, const char *where, unsigned long n,
                     const frond__metrics_line *l, const char *want) {
  fprintf(stderr,
          "frond: INVAL: %s:%lu: %s: the value is not %s (a scrape re-exported "
          "as floats loses an ID's low digits: scrape the node itself)\n",
          where, n, l->name, want);
  p->failed = 1;
  return 0;
}

/* A node that used more tags than its scrape shows series of: those
** outside metrics_tags and the metrics_top_tags fastest, whose IDs the
** plan cannot see. Refused unless --missing-tags-ok. */
static void missing(plan *p, const char *where, int64_t in_use, int64_t shown) {
  int64_t k = in_use - shown;
  fprintf(stderr,
          "%s%s: the node used %lld tag%s since it started and shows the "
          "series of %lld: %lld tag%s missing (outside metrics_tags and "
          "the metrics_top_tags fastest), whose IDs the plan cannot see: "
          "name every tag in metrics_tags (or raise metrics_top_tags) "
          "before the next backup, add the audit log%s\n",
          p->missing_ok ? "frond tag restore: warning: " : "frond: INVAL: ",
          where, (long long)in_use, in_use == 1 ? "" : "s", (long long)shown,
          (long long)k, k == 1 ? "" : "s",
          p->missing_ok ? "; planned without them (--missing-tags-ok)"
                        : ", or give --missing-tags-ok to plan without them");
  if (!p->missing_ok)
    p->failed = 1;
}

/* One scrape's text: 0, or -1 when it holds no Frond segment metrics at
** all (not a Frond node's, or one with segment IDs off). */
static int read_metrics_text(plan *p, const char *text, size_t len,
                             const char *where) {
  const char *s = text, *end = text + len, *nl, *tag, *store;
  frond__metrics_line l;
  int frond = 0, named = 0;
  unsigned long n = 0;
  int64_t in_use = -1, shown = 0; /* tags used; tags with series */
  p->source++;
  for (; s < end; s = nl + 1) {
    n++;
    if ((nl = memchr(s, '\n', (size_t)(end - s))) == NULL)
      nl = end;
    if (frond__metrics_line_parse(s, (size_t)(nl - s), &l) != 1)
      continue;
    if (strncmp(l.name, "frond_segment_", 14) == 0)
      frond = 1;
    if (strcmp(l.name, "frond_store_info") == 0 &&
        (store = frond__metrics_label_get(&l, "store")) != NULL) {
      identity(p, store, where);
      named = 1;
    } else if (strcmp(l.name, "frond_segment_buffer_last_id") == 0 &&
               (tag = frond__metrics_label_get(&l, "tag")) != NULL) {
      if (!l.is_int || l.ivalue < 1)
        bad_value(p, where, n, &l, "an ID (a whole number from 1)");
      else if (saw(p, tag, l.ivalue, where) != 0)
        return 0;
    } else if (strcmp(l.name, "frond_segment_tags_in_use") == 0) {
      if (!l.is_int || l.ivalue < 0)
        bad_value(p, where, n, &l, "a count");
      else
        in_use = l.ivalue;
    } else if (strcmp(l.name, "frond_segment_step") == 0 &&
               (tag = frond__metrics_label_get(&l, "tag")) != NULL) {
      seen *t;
      if (!l.is_int || l.ivalue < 0 || l.ivalue > FROND__RESTORE_STEP_MAX) {
        bad_value(p, where, n, &l, "a step (a whole number up to 2^31-1)");
        continue;
      }
      if ((t = frond__restore_tag(p, tag)) == NULL)
        return frond__restore_oom(p), 0;
      if (l.ivalue > t->step)
        t->step = l.ivalue;
      if (t->source != p->source) { /* a tag with series in this scrape */
        t->source = p->source;
        shown++;
      }
    }
  }
  if (!frond)
    return -1;
  if (in_use > shown)
    missing(p, where, in_use, shown);
  if (!named)
    p->no_identity++;
  return 0;
}

void frond__restore_metrics_file(plan *p, const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL, *grown;
  size_t len = 0, cap = 0, got;
  if (f == NULL) {
    fprintf(stderr, "frond: IO: %s: %s\n", path, strerror(errno));
    p->failed = 1;
    return;
  }
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 65536;
      if ((grown = realloc(buf, cap)) == NULL) {
        free(buf);
        fclose(f);
        (void)frond__restore_oom(p);
        return;
      }
      buf = grown;
    }
    if ((got = fread(buf + len, 1, cap - len, f)) == 0)
      break;
    len += got;
  }
  if (ferror(f)) {
    fprintf(stderr, "frond: IO: %s: read failed\n", path);
    p->failed = 1;
  } else if (read_metrics_text(p, buf, len, path) != 0) {
    fprintf(stderr,
            "frond: INVAL: %s: no Frond segment metrics in it (not a "
            "Frond node's /metrics, or segment IDs off)\n",
            path);
    p->failed = 1;
  }
  free(buf);
  fclose(f);
}

void frond__restore_metrics_url(plan *p, const char *url) {
  const char *host = url + strlen("http://");
  size_t n = strcspn(host, "/?#");
  char uri[FROND_FS_HOST_MAX + 64];
  frond_fs_uri u;
  frond_fs_client c;
  const char *path = host + n;
  frond_fs_req req = {"GET", "/metrics", NULL, 1, NULL, NULL};
  frond_fs_answer a;
  frond_error err = {0};
  snprintf(uri, sizeof(uri), "frond://%.*s?retries=2&timeout_ms=5000", (int)n,
           host);
  if (n == 0 || n > FROND_FS_HOST_MAX + 8 ||
      frond__fs_uri_parse(uri, &u, &err) != 0 || u.n != 1) {
    fprintf(stderr, "frond: STORE_URI: %s: not http://HOST:PORT\n", url);
    p->failed = 1;
    return;
  }
  /* A path given is kept (a node behind a prefix), with its query;
  ** none, or "/", is /metrics. */
  if (*path == '/' && path[1] != '\0')
    req.path = path;
  frond__fs_client_init(&c, &u);
  c.agent = "frond-tag-restore";
  if (frond__fs_call(&c, &req, &a, &err) != 0 ||
      (a.status != 200 && frond__fs_fail(&a, url, &err) != 0)) {
    fprintf(stderr,
            "frond: %s: %s: %s (its buffers are not known: give "
            "every node, or stop them and use their scrapes or the "
            "audit log)\n",
            frond_err_name(err.code), url, err.message);
    p->failed = 1;
  } else {
    /* It answered: a node is running (--apply refuses unless fenced). */
    if (p->live++ == 0)
      snprintf(p->live_url, sizeof(p->live_url), "%s", url);
    if (read_metrics_text(p, a.body, a.len, url) != 0) {
      fprintf(stderr,
              "frond: INVAL: %s: no Frond segment metrics in its answer "
              "(not a Frond node's /metrics, or segment IDs off)\n",
              url);
      p->failed = 1;
    }
  }
  frond__fs_client_free(&c);
}
