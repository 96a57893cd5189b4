#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Static worker IDs in containers (issue 48, case 6): two containers of the
# flakesock image on one host never both issue one static worker ID.
#   - the image's default configuration (static worker 0, no fleet, no lock
#     volume): each container refuses to start (exit 1, naming [state]
#     lock_dir and lock_dir_mount). Before, both started and both issued
#     worker 0 (their lock files were each in its own container);
#   - the host's lock directory mounted at /run/lock/flakewire in both: the
#     first serves worker 0, the second refuses, naming the lock file;
#     once the first stops, the second starts.
# The image is scripts/image.sh's from this build's packages (the base
# cached in podman's store, as tests/ops/test_podman.sh builds it). Each
# container has no network but its own loopback; flakectl inside it asks
# for the worker that answers.
# Under CI=true a missing tool is a failure naming it, never a skip.
set -u
: "${FW_SRC:?}" "${BUILD_ROOT:?}"
fail() {
	echo "FAIL: $*" >&2
	local c
	for c in $(podman ps -a --format '{{.Names}}' 2>/dev/null | grep "^$P-"); do
		echo "  --- podman logs $c (last 8 lines)" >&2
		podman logs "$c" 2>&1 | tail -n 8 | sed 's/^/  /' >&2
	done
	exit 1
}
. "$FW_SRC/tests/ops/lib.sh" # need, ops_sweep_stale
[ "$(id -u)" -eq 0 ] || fail "needs root (podman's store)"
need podman podman
need buildah buildah
need runc runc
need mmdebstrap mmdebstrap

ops_sweep_stale fws
P=fws$$
TMP=$(mktemp -d /tmp/fw-podman-static.XXXXXX)
cleanup() {
	local c
	for c in $(podman ps -a --format '{{.Names}}' 2>/dev/null | grep "^$P-"); do
		podman rm --force --volumes --time 0 "$c" >/dev/null 2>&1
	done
	rm -rf "$TMP"
	return 0
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cat >"$TMP/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF=$TMP/containers.conf
start=$SECONDS
t() { echo "($((SECONDS - start)) s)"; }

"$FW_SRC/scripts/package.sh" --builddir "$BUILD_ROOT" --no-build --out "$TMP/debs" >/dev/null ||
	fail "scripts/package.sh"
mapfile -t images < <("$FW_SRC/scripts/image.sh" --debs "$TMP/debs" --quiet) || fail "scripts/image.sh"
IMG=${images[0]:-}
[[ $IMG == localhost/flakesock:build-* ]] || fail "scripts/image.sh printed: ${images[*]}"
echo "image $IMG $(t)"

# run NAME [podman run options...]: the image with its default configuration
run() {
	local name=$1
	shift
	podman run -d --name "$P-$name" --network none "$@" "$IMG" --set stats.interval_s=0 \
		>/dev/null || fail "podman run $name"
}
running() { [ "$(podman inspect --format '{{.State.Running}}' "$P-$1" 2>/dev/null)" = true ]; }
# worker NAME: the worker ID that answers inside container NAME ("" if none)
worker() {
	podman exec "$P-$1" flakectl info --timeout 300 2>/dev/null |
		sed -n 's/^answered by *datacenter [0-9]*, worker \([0-9]*\)$/\1/p'
}
# refused NAME SECS: NAME exits 1 within SECS; fails naming what it serves otherwise
refused() {
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		running "$1" || break
		sleep 0.2
	done
	if running "$1"; then
		fail "$1 still runs after $2 s, serving worker '$(worker "$1")'"
	fi
	local code
	code=$(podman inspect --format '{{.State.ExitCode}}' "$P-$1")
	[ "$code" = 1 ] || fail "$1 exited $code, not 1"
}
# serving NAME SECS: NAME answers INFO within SECS; prints its worker ID
serving() {
	local i w=""
	for ((i = 0; i < $2 * 2; i++)); do
		w=$(worker "$1")
		[ -n "$w" ] && { echo "$w"; return 0; }
		running "$1" || break
		sleep 0.5
	done
	return 1
}

# 1. the image's default configuration, twice on one host: both refuse
run a
run b
refused a 15
refused b 15
for c in a b; do
	podman logs "$P-$c" 2>&1 | grep -q "\[state\] lock_dir = /run/lock/flakewire is not a mount point of its own, and \[state\] lock_dir_mount = yes" ||
		fail "$c's refusal does not name [state] lock_dir and lock_dir_mount"
done
echo "the default configuration: both containers refuse to start (a static worker needs the host's lock directory) $(t)"
podman rm "$P-a" "$P-b" >/dev/null

# 2. the host's lock directory mounted in both: the first serves worker 0,
# the second refuses naming the lock; after the first stops, it starts
mkdir -m 1777 "$TMP/lock"
chmod 1777 "$TMP/lock"
run c -v "$TMP/lock:/run/lock/flakewire"
w=$(serving c 20) || fail "c with the host's lock directory: no answer in 20 s"
[ "$w" = 0 ] || fail "c serves worker '$w', not 0"
run d -v "$TMP/lock:/run/lock/flakewire"
refused d 15
podman logs "$P-d" 2>&1 | grep -q "static worker ID 0 (datacenter 0: node field 0, 12 sequence bits) is locked by PID .* (/run/lock/flakewire/node0-seq12.lock)" ||
	fail "d's refusal does not name the lock of worker 0"
echo "the host's lock directory in both: c serves worker 0, d refuses (locked) $(t)"
podman stop --time 10 "$P-c" >/dev/null || fail "podman stop c"
podman rm "$P-d" >/dev/null
run d -v "$TMP/lock:/run/lock/flakewire"
w=$(serving d 20) || fail "d after c stopped: no answer in 20 s"
[ "$w" = 0 ] || fail "d serves worker '$w', not 0"
echo "c stopped: d serves worker 0 $(t)"
echo PASS
