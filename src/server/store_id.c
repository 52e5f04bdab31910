/* SPDX-License-Identifier: Apache-2.0 */
/*
** store_id.c -- the store's identity, the fact every client checks its
** servers share: 32 random lowercase hex characters, recorded once in the
** store (frond_meta's store.id: the first server to open the store
** records its own, every later one reads that back) and named in
** /v1/layout and in every range answer ("store", Frond-Store:).
**
** Two servers on one database name the same identity; servers on two
** databases, which would hand out the same IDs, name two. A client that
** lists several servers pins the first identity it sees and refuses a
** range of another (STORE_MISMATCH).
**
** Read when the store opens: at start, which may block, and then, while
** it is not known (the store down, a multi: member down), once per tick
** on libuv's pool of the main loop, never on a worker's loop. Until it is
** known, answers omit it.
*/
#include "server/server.h"

#include "core/core.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#define STORE_ID_FACT "store.id"

static int is_id(const char *v) {
  size_t i;
  for (i = 0; v[i] != '\0'; i++)
    if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
      return 0;
  return i == FROND__STORE_ID_LEN;
}

/* Record ours when none is, read back what is, publish it. Blocks on the
** store: start-up, or a pool thread. */
static int read_id(frond__server *srv, frond_error *err) {
  static const char hex[] = "0123456789abcdef";
  frond_seg *seg = atomic_load(&srv->seg);
  unsigned char r[FROND__STORE_ID_LEN / 2];
  char mine[FROND__STORE_ID_LEN + 1], recorded[257], where[256];
  size_t i;
  int rc;
  if (seg == NULL)
    return frond__fail(err, FROND_ESTORE, "store not reached");
  if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
    return frond__fail(err, FROND_EIO, "getrandom: no random bytes");
  for (i = 0; i < sizeof(r); i++) {
    mine[2 * i] = hex[r[i] >> 4];
    mine[2 * i + 1] = hex[r[i] & 15];
  }
  mine[FROND__STORE_ID_LEN] = '\0';
  rc = frond__seg_fact(seg, STORE_ID_FACT, mine, recorded, sizeof(recorded),
                       where, sizeof(where), err);
  if (rc != 0)
    return rc;
  if (!is_id(recorded))
    return frond__fail(err, FROND_ESTORE,
                       "%s records %s = \"%.64s\", not 32 lowercase hex "
                       "characters",
                       where, STORE_ID_FACT, recorded);
  memcpy(srv->store_id, recorded, sizeof(srv->store_id));
  atomic_store_explicit(&srv->store_id_known, 1, memory_order_release);
  frond_log(FROND_LOG_INFO, "store identity %s%s", recorded,
            strcmp(recorded, mine) == 0 ? " (recorded now)" : "");
  return 0;
}

int frond__store_id_read(frond__server *srv) {
  frond_error e = {0, ""};
  int rc = read_id(srv, &e);
  if (rc != 0)
    frond_log(FROND_LOG_WARN,
              "store identity not read (retrying; until then range answers "
              "do not name the store): %s: %s",
              frond_err_name(rc), e.message);
  return rc;
}

const char *frond__store_id(const frond__server *srv) {
  return atomic_load_explicit(&srv->store_id_known, memory_order_acquire)
             ? srv->store_id
             : NULL;
}

/* Main thread: store_id_busy. */
static uv_work_t work;

static void work_run(uv_work_t *w) {
  (void)frond__store_id_read(w->data);
}

static void work_done(uv_work_t *w, int status) {
  frond__server *srv = w->data;
  (void)status;
  srv->store_id_busy = 0;
}

void frond__store_id_tick(frond__server *srv) {
  if (!srv->seg_enabled || srv->store_id_busy ||
      atomic_load(&srv->store_id_known) || atomic_load(&srv->seg) == NULL)
    return;
  work.data = srv;
  if (uv_queue_work(uv_default_loop(), &work, work_run, work_done) == 0)
    srv->store_id_busy = 1;
}
