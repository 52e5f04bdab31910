#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Build the Java client with the JDK alone (javac and jar, Java 17).
#   clients/java/build.sh [OUTDIR]        OUTDIR/frond-client-VERSION.jar
#   clients/java/build.sh test [OUTDIR]   the jar, then the tests against
#                                         $FROND_BIN (the frond under test)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
test=
if [ "${1:-}" = test ]; then test=1; shift; fi
out=$(mkdir -p "${1:-$here/build}" && cd "${1:-$here/build}" && pwd)
version=$(sed -n 's/.*String VERSION = "\(.*\)";/\1/p' \
  "$here/src/main/java/dev/frond/client/FrondClient.java")
rm -rf "$out/classes" "$out/test-classes"
mkdir -p "$out/classes" "$out/test-classes"
javac --release 17 -Xlint:all -Werror -d "$out/classes" \
  $(find "$here/src/main/java" -name '*.java')
jar --create --file "$out/frond-client-$version.jar" -C "$out/classes" .
echo "$out/frond-client-$version.jar"
[ -n "$test" ] || exit 0
javac --release 17 -Xlint:all -Werror -cp "$out/classes" -d "$out/test-classes" \
  $(find "$here/src/test/java" -name '*.java')
exec java -ea -Dfrond.corpus="$here/test/corpus" \
  -cp "$out/classes:$out/test-classes" dev.frond.client.ClientTest
