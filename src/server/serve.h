/* SPDX-License-Identifier: Apache-2.0 */
/*
** serve.h -- the `frond serve` subcommand.
*/
#ifndef FROND_SERVE_H
#define FROND_SERVE_H

/* Run the server with argv after "serve". Returns the exit status:
** 0 after a clean drain, 1 on a start-up failure, 2 on bad usage. */
int frond__cli_serve(int argc, char **argv);

#endif /* FROND_SERVE_H */
