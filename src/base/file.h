/* SPDX-License-Identifier: Apache-2.0 */
/*
** file.h -- small files: durable, atomic replacement, and reading whole.
*/
#ifndef FROND_BASE_FILE_H
#define FROND_BASE_FILE_H

#include "frond.h"

/* Replace the content of `path` with data[0..len): write a temporary file
** of a name no other writer uses ("<path>.<pid>.<random>.tmp", created
** with O_EXCL), fsync it, rename it over `path`, fsync the directory. A
** crash at any point leaves the old content or the new one, never a mix
** (and at worst a stray temporary file). Processes replacing files in one
** directory never touch each other's temporary files; two replacing the
** same path leave one whole version. Errors: IO (with the system's
** words), INVAL (path too long). */
int frond__file_replace(const char *path, const void *data, size_t len,
                        frond_error *err);

/* Read up to n bytes from fd into buf, restarting after signals; stops at
** the end of the file or an error. Returns the bytes read. */
size_t frond__read_full(int fd, void *buf, size_t n);

/* Remove the temporary files that frond__file_replace left next to path in
** processes that died between creating and renaming them: older than a
** minute, of a pid that no longer exists. Best effort, never fails. */
void frond__file_sweep(const char *path);

#endif /* FROND_BASE_FILE_H */
