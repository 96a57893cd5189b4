#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer harnesses and runs them side by side, each for
# SECONDS (default 60), starting from the seeds in tests/fuzz/corpus/:
#   request, reply  the wire parsers, in build-fuzz (no DPDK)
#   frame           the whole packet path (fwire_pkt_answer on a test mbuf),
#                   in build-fuzz-dpdk; skipped with a message without DPDK
# Exits non-zero when a harness crashes; its input is kept in
# <build>/artifacts/.
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

# The frame harness links DPDK (EAL, mbufs): a second build dir with it on.
dpdk_build=$root/build-fuzz-dpdk
if pkg-config --exists libdpdk 2>/dev/null; then
	if [ ! -f "$dpdk_build/build.ninja" ]; then
		CC=clang meson setup "$dpdk_build" -Dfuzz=true -Ddpdk=enabled -Dtests=true
	else
		meson configure "$dpdk_build" -Dfuzz=true -Ddpdk=enabled -Dtests=true
	fi
	ninja -C "$dpdk_build" tests/fuzz/fuzz_frame
else
	echo "fuzz.sh: libdpdk not found: fuzz_frame skipped (scripts/install-deps.sh)" >&2
	dpdk_build=""
fi

failed=0
# under CI=true nothing may be skipped: a harness not built is a failure
if [ -z "$dpdk_build" ] && [ "${CI:-}" = true ]; then
	echo "fuzz.sh: FAIL under CI=true: fuzz_frame not run (libdpdk not found)" >&2
	failed=1
fi
# Side by side: each harness is bounded by its time, not by its inputs, so
# one after the other they took 3 x SECONDS of the test command's second
# lane for the same minimum time each (issue 34).
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start() { # build target: starts it; its output goes to $logs/target
	# New inputs go to the build tree; the committed seeds stay as they are.
	mkdir -p "$1/corpus/$2" "$1/artifacts"
	"$1/tests/fuzz/fuzz_$2" "$1/corpus/$2" "$root/tests/fuzz/corpus/$2" \
		-max_total_time="$secs" -timeout=5 -max_len=2048 \
		-artifact_prefix="$1/artifacts/$2-" -print_final_stats=1 >"$logs/$2" 2>&1 &
	echo "$! $1 $2" >>"$logs/pids"
}
for t in $targets; do
	start "$build" "$t"
done
[ -n "$dpdk_build" ] && start "$dpdk_build" frame
echo "== fuzz: $(cut -d' ' -f3 "$logs/pids" | sed 's/^/fuzz_/' | tr '\n' ' ')side by side, ${secs}s each"
while read -r pid dir t; do
	if wait "$pid"; then
		echo "== fuzz_$t: $(grep -E '^(#[0-9]+.*DONE|Done [0-9]+ runs)' "$logs/$t" | tail -n 1)"
		grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$logs/$t" || true
	else
		cat "$logs/$t"
		echo "fuzz.sh: fuzz_$t FAILED; reproducer in $dir/artifacts/" >&2
		failed=1
	fi
done <"$logs/pids"
exit $failed
