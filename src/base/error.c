/* SPDX-License-Identifier: Apache-2.0 */
/*
** error.c -- error names, messages and the caller-owned error struct.
*/
#include "base/base.h"

#include <stdio.h>
#include <string.h>

const char *frond_err_name(int code) {
  switch (code) {
  case FROND_OK:
    return "OK";
#define FROND__ERR_NAME(n, name, msg)                                          \
  case FROND_E##name:                                                          \
    return #name;
    FROND_ERRNO_MAP(FROND__ERR_NAME)
#undef FROND__ERR_NAME
  }
  return "UNKNOWN";
}

const char *frond_strerror(int code) {
  switch (code) {
  case FROND_OK:
    return "success";
#define FROND__ERR_MSG(n, name, msg)                                           \
  case FROND_E##name:                                                          \
    return msg;
    FROND_ERRNO_MAP(FROND__ERR_MSG)
#undef FROND__ERR_MSG
  }
  return "unknown error";
}

int frond_err_from_name(const char *name) {
  if (name == NULL)
    return 0;
#define FROND__ERR_FIND(n, nm, msg)                                            \
  if (strcmp(name, #nm) == 0)                                                  \
    return FROND_E##nm;
  FROND_ERRNO_MAP(FROND__ERR_FIND)
#undef FROND__ERR_FIND
  return 0;
}

int frond__vfail(frond_error *err, int code, const char *fmt, va_list ap) {
  if (err != NULL) {
    err->code = code;
    if (fmt == NULL)
      snprintf(err->message, sizeof(err->message), "%s", frond_strerror(code));
    else
      vsnprintf(err->message, sizeof(err->message), fmt, ap);
  }
  return code;
}

int frond__fail(frond_error *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  frond__vfail(err, code, fmt, ap);
  va_end(ap);
  return code;
}
