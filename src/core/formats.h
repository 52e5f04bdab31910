/*
** formats.h -- pieces shared by the ID format sources; not part of the
** API.
*/
#ifndef FROND_FORMATS_H
#define FROND_FORMATS_H

#include "core/internal.h"

/* ---- time zones (tz.c) ---- */

/*
** A time zone from the system's tz database (TZif files, RFC 8536),
** including the POSIX TZ rule in the file's footer, expanded into
** transitions up to FROND__TZ_LAST_YEAR; later instants keep the last
** offset. Immutable once loaded: any thread may read it.
*/
#define FROND__TZ_LAST_YEAR 2200
typedef struct frond__tz frond__tz;

/* name: an IANA zone ("Asia/Shanghai"), "UTC", or a fixed offset
** "+08:00" / "-0530". Reads $TZDIR (else /usr/share/zoneinfo)/name.
** Errors: FORMAT_INVALID (unknown zone, bad file), NOMEM. */
int frond__tz_open(const char *name, frond__tz **out, frond_error *err);
/* Parse TZif bytes. Errors: FORMAT_INVALID, NOMEM. */
int frond__tz_parse(const uint8_t *buf, size_t len, frond__tz **out,
                    frond_error *err);
void frond__tz_free(frond__tz *tz);
const char *frond__tz_name(const frond__tz *tz);
/* Offset east of UTC in seconds at unix second t; *until (may be NULL)
** receives the first second at which the offset may change (INT64_MAX when
** never). Thread-safe, no allocation. */
int32_t frond__tz_offset(const frond__tz *tz, int64_t t, int64_t *until);

/* Proleptic Gregorian calendar: days since 1970-01-01 and back. */
int64_t frond__days_from_civil(int64_t y, unsigned m, unsigned d);
void frond__civil_from_days(int64_t days, int64_t *y, unsigned *m,
                            unsigned *d);

#endif /* FROND_FORMATS_H */
