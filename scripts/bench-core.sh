#!/usr/bin/env bash
# Builds flakectl and runs its ID-core micro-benchmark, with the machine and
# the build printed above the table so a pasted result says where it is from.
# usage: scripts/bench-core.sh [bench-core options, e.g. --runs 11]
#        BUILD_DIR=build-x scripts/bench-core.sh   (default: build)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$root" >/dev/null
fi
ninja -C "$build" app/flakectl/flakectl >/dev/null

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
buildtype=$(meson configure "$build" 2>/dev/null | awk '$1 == "buildtype" { print $2; exit }' || true)
cmd=("$build/app/flakectl/flakectl" bench-core "$@")

echo "command: ${cmd[*]}"
echo "machine: $(nproc) CPUs, ${cpu:-unknown CPU}, $(uname -sr)"
echo "build:   $build (${buildtype:-unknown} build)"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo
"${cmd[@]}"
