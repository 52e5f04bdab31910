#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every C source and header is formatted with the committed .clang-format.
set -eu
cd "${FROND_SRC:?}"
command -v clang-format >/dev/null ||
  { echo "FAIL: clang-format is not installed (scripts/deps.sh test)"; exit 1; }
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find src include tests fuzz bench -name '*.[ch]')
if clang-format --dry-run --Werror $files; then
  echo "1 passed, 0 failed"
else
  echo "FAIL: run 'make format'"
  exit 1
fi
