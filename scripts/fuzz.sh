#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer harnesses in build-fuzz and runs each for SECONDS
# (default 60), starting from the seeds in tests/fuzz/corpus/.
# Exits non-zero when a harness crashes; its input is kept in
# build-fuzz/artifacts/.
#
#   scripts/fuzz.sh [SECONDS]
set -eu

secs=${1:-60}
case $secs in
''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
targets="request reply"
cd "$root"

if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz.sh: clang not found (libFuzzer needs clang)" >&2
	exit 2
fi
# The harnesses live under tests/, which meson only reads with -Dtests=true,
# and that needs cmocka for the unit tests beside them.
if ! pkg-config --exists cmocka 2>/dev/null; then
	echo "fuzz.sh: cmocka not found; install libcmocka-dev (scripts/install-deps.sh)" >&2
	exit 2
fi

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=true -Ddpdk=disabled -Dtests=true
else
	meson configure "$build" -Dfuzz=true -Ddpdk=disabled -Dtests=true
fi
# Only the harnesses: the rest of the tree is not needed to fuzz the wire code.
ninja -C "$build" $(for t in $targets; do printf 'tests/fuzz/fuzz_%s ' "$t"; done)

mkdir -p "$build/artifacts"
failed=0
for t in $targets; do
	# New inputs go to the build tree; the committed seeds stay as they are.
	work=$build/corpus/$t
	mkdir -p "$work"
	echo "== fuzz_$t: ${secs}s"
	if ! "$build/tests/fuzz/fuzz_$t" "$work" "$root/tests/fuzz/corpus/$t" \
		-max_total_time="$secs" -timeout=5 -max_len=2048 \
		-artifact_prefix="$build/artifacts/$t-" -print_final_stats=1; then
		echo "fuzz.sh: fuzz_$t FAILED; reproducer in $build/artifacts/" >&2
		failed=1
	fi
done
exit $failed
