/* SPDX-License-Identifier: Apache-2.0 */
/*
** serve.h -- the `frond serve` subcommand.
*/
#ifndef FROND_SERVE_H
#define FROND_SERVE_H

#include "frond.h"

/* Run the server with argv after "serve". Returns the exit status:
** 0 after a clean drain, 1 on a start-up failure, 2 on bad usage. */
int frond__cli_serve(int argc, char **argv);

typedef struct frond__server frond__server;
/*
** Every check a start makes on what the configuration says, before it
** reaches anything outside the process (a coordinator, a store, a port),
** on srv->cfg: each protocol's address and rules (a token beyond loopback,
** a port each), node against coordinator, the coordinator's URI and the
** node ID in the layout, the layout, the advertised identity, the store's
** URI, the ID formats and their keys (built into srv:
** frond__formats_free). start(), --print-config and `frond check` all run
** this one function, so that neither passes a configuration a start
** refuses. What depends on the host rather than the configuration (the
** data directory, free ports) is `frond check`'s to look at. 0, or -1
** with err filled.
*/
int frond__serve_preflight(frond__server *srv, frond_error *err);
/* The options a start opens the coordinator with (after the preflight):
** this node's identity (buf, len hold it when derived), the data directory
** for the cache file. 0, or -1 with err filled. */
int frond__serve_coord_options(frond__server *srv, frond_coord_options *co,
                               char *buf, size_t len, frond_error *err);

#endif /* FROND_SERVE_H */
