#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The unit and dataplane tests (meson suite 'unit': every C test binary of
# it) built with ThreadSanitizer (-Db_sanitize=thread) in build-tsan/ and
# run: a data race between threads (the keeper's status read by telemetry
# while the control thread writes it, a seqlock, a worker slot) fails them.
# Only those tests' targets are built, not the tree. Suppressions (each
# with its reason): scripts/config/tsan.supp.
#
#   scripts/tsan.sh            exit 0 when every test passes
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_TSAN:-$root/build-tsan}
cd "$root"

# -Wno-error=tsan: GCC warns that TSan does not model atomic_thread_fence,
# which the keeper's worker slots use (their race is suppressed, config/tsan.supp)
opts=(-Dwerror=true -Ddpdk=enabled -Dtests=true -Db_sanitize=thread -Db_lundef=false
	"-Dc_args=-Wno-error=tsan")
if [ -f "$build/build.ninja" ]; then
	meson configure "$build" "${opts[@]}" >/dev/null
else
	meson setup "$build" "${opts[@]}" >/dev/null
fi
ninja -C "$build" build.ninja >/dev/null # regenerated if a meson.build changed
# the C test binaries of suite 'unit', as meson knows them
mapfile -t tests < <(meson introspect "$build" --tests | /usr/bin/python3 -c '
import json, os, sys
b = os.path.realpath(sys.argv[1])
for t in json.load(sys.stdin):
    exe = os.path.realpath(t["cmd"][0])
    if any(s.split(":")[-1] == "unit" for s in t["suite"]) and exe.startswith(b + os.sep):
        print(t["name"] + " " + os.path.relpath(exe, b))
' "$build")
[ ${#tests[@]} -gt 0 ] || { echo "tsan.sh: no C unit tests found in $build" >&2; exit 2; }
names=() targets=()
for t in "${tests[@]}"; do
	names+=("${t%% *}")
	targets+=("${t#* }")
done
ninja -C "$build" "${targets[@]}"
# halt_on_error: the first race fails the test (its report is in the log).
# die_after_fork=0: client_fork forks a process with threads, and its children
# start a refiller, as a pre-fork server's do; TSan otherwise kills every such
# child ("starting new threads after multi-threaded fork is not supported").
export TSAN_OPTIONS="halt_on_error=1 die_after_fork=0 second_deadlock_stack=1 suppressions=$root/scripts/config/tsan.supp"
# TSAN_MESON_ARGS: more options to meson test (scripts/test.sh's second lane: --timeout-multiplier)
# shellcheck disable=SC2086
meson test -C "$build" --no-rebuild --print-errorlogs ${TSAN_MESON_ARGS:-} "${names[@]}"
