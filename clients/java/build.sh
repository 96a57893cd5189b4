#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds and tests the Java client with the JDK alone (javac, jar) and JUnit 5
# from Debian (junit5: /usr/share/java/junit-platform-console-standalone.jar).
# usage: build.sh [-o OUT] jar        OUT/flakewire-client.jar (default OUT: ./build)
#        build.sh [-o OUT] test [TAG] unit tests (vectors, fake responders), or
#                                     the live tests tagged TAG (loop, tap)
# The compile is serialised by a lock in OUT, so parallel runs compile once.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/build
if [ "${1:-}" = -o ]; then
	out=$2
	shift 2
fi
cmd=${1:-jar}
junit=${JUNIT_JAR:-/usr/share/java/junit-platform-console-standalone.jar}
mkdir -p "$out"
(
	flock 9
	stamp=$out/classes.stamp
	if [ ! -f "$stamp" ] || [ -n "$(find "$here/src" -newer "$stamp" -name '*.java' | head -n 1)" ]; then
		rm -rf "$out/classes" "$out/test-classes"
		# Source paths hold no spaces (this tree's own); word splitting lists them.
		# shellcheck disable=SC2046
		javac -Xlint:all -Werror --release 17 -d "$out/classes" $(find "$here/src/main" -name '*.java')
		jar --create --file "$out/flakewire-client.jar" -C "$out/classes" .
		if [ -f "$junit" ]; then
			# shellcheck disable=SC2046
			javac -Xlint:all -Werror --release 17 -d "$out/test-classes" -cp "$out/classes:$junit" \
				$(find "$here/src/test" -name '*.java')
		fi
		javac -Xlint:all -Werror --release 17 -d "$out/example-classes" -cp "$out/classes" \
			"$here"/examples/*.java
		touch "$stamp"
	fi
) 9>"$out/build.lock"
case $cmd in
jar) echo "$out/flakewire-client.jar" ;;
test)
	[ -f "$junit" ] || { echo "build.sh: JUnit 5 console launcher $junit missing (Debian junit5)" >&2; exit 1; }
	if [ $# -ge 2 ]; then
		sel="--select-class dev.flakewire.LiveTest --include-tag $2"
	else
		sel="--select-class dev.flakewire.VectorsTest --select-class dev.flakewire.ClientTest --select-class dev.flakewire.AvailabilityTest"
	fi
	# shellcheck disable=SC2086
	exec java -jar "$junit" -cp "$out/classes:$out/test-classes" $sel --fail-if-no-tests \
		--disable-banner --details=tree --disable-ansi-colors
	;;
*) echo "usage: build.sh [-o OUT] jar|test [TAG]" >&2; exit 2 ;;
esac
