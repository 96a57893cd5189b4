#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The default run: installs what is missing, builds, starts the DPDK
# responder on a TAP device (no NIC, no hugepages), shows IDs coming back
# through the kernel, then keeps it in the foreground with its stats line
# until Ctrl-C. Extra arguments go to flakewire (e.g. --set id.worker_base=3).
#
#   kernel side: fw0 10.77.0.1/24   responder: 10.77.0.2 UDP 4242
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "run.sh: TAP devices need root; re-running with sudo" >&2
	exec sudo -E "$0" "$@"
fi
[ -c /dev/net/tun ] || { echo "run.sh: /dev/net/tun is missing" >&2; exit 1; }

scripts/install-deps.sh
BUILD=${BUILD:-build}
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD"
ninja -C "$BUILD"

FW=$BUILD/app/flakewire/flakewire
CTL=$BUILD/app/flakectl/flakectl
STATE_DIR=${XDG_STATE_HOME:+$XDG_STATE_HOME/flakewire}
STATE_DIR=${STATE_DIR:-/var/lib/flakewire}
PREFIX="flakewire-run-$$"
IFACE=fw0 HOST_IP=10.77.0.1 FW_IP=10.77.0.2 PORT=4242
mkdir -p "$STATE_DIR"

if ip link show "$IFACE" >/dev/null 2>&1; then
	echo "run.sh: $IFACE already exists (another flakewire running?)" >&2
	exit 1
fi

FW_PID=""
cleanup() {
	trap - EXIT INT TERM
	if [ -n "$FW_PID" ] && kill -0 "$FW_PID" 2>/dev/null; then
		kill -TERM "$FW_PID" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$FW_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$FW_PID" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	ip link del "$IFACE" 2>/dev/null || true
	rm -rf "/var/run/dpdk/$PREFIX"
}
trap cleanup EXIT
trap 'echo; echo "run.sh: stopping"; cleanup; exit 0' INT TERM

echo "== starting flakewire on TAP $IFACE (state in $STATE_DIR/mark)"
"$FW" -l 0 --no-huge --no-pci -m 256 --file-prefix "$PREFIX" -- \
	--set "port0.device=net_tap0,iface=$IFACE" --set "port0.address=$FW_IP" \
	--set "net.udp_port=$PORT" --set "state.file=$STATE_DIR/mark" \
	--set stats.interval_s=5 "$@" &
FW_PID=$!

up=""
for _ in $(seq 100); do
	kill -0 "$FW_PID" 2>/dev/null || { echo "run.sh: flakewire exited" >&2; exit 1; }
	if ip link show "$IFACE" >/dev/null 2>&1; then
		up=1
		break
	fi
	sleep 0.1
done
[ -n "$up" ] || { echo "run.sh: $IFACE did not appear" >&2; exit 1; }
ip addr add "$HOST_IP/24" dev "$IFACE" 2>/dev/null || true
ip link set "$IFACE" up

up=""
for _ in $(seq 30); do
	if ping -c 1 -W 1 "$FW_IP" >/dev/null 2>&1; then
		up=1
		break
	fi
	sleep 0.2
done
[ -n "$up" ] || { echo "run.sh: no answer from $FW_IP" >&2; exit 1; }

echo
echo "== ping $FW_IP (ARP and ICMP answered by the DPDK responder)"
ping -c 3 -i 0.2 "$FW_IP" || true
echo
if "$CTL" help 2>&1 | grep -qE '^[[:space:]]+get[[:space:]]'; then
	echo "== $CTL get --server $FW_IP:$PORT"
	"$CTL" get --server "$FW_IP:$PORT" || true
	echo "== $CTL info --server $FW_IP:$PORT"
	"$CTL" info --server "$FW_IP:$PORT" || true
else
	client=tests/system/flakewire/wire_client.py
	echo "== three IDs over UDP ($client; flakectl get is not built yet)"
	ids=$(/usr/bin/python3 "$client" --server "$FW_IP:$PORT" get --op list --count 3) || true
	echo "$ids"
	if [ -n "$ids" ] && "$CTL" help 2>&1 | grep -qE '^[[:space:]]+decode[[:space:]]'; then
		echo "== $CTL decode"
		# shellcheck disable=SC2086
		"$CTL" decode $ids || true
	fi
	echo "== info"
	/usr/bin/python3 "$client" --server "$FW_IP:$PORT" info || true
fi
echo
echo "== flakewire keeps running with a stats line every 5 s; Ctrl-C stops it"
echo "   telemetry: dpdk-telemetry.py -f $PREFIX   (try /flakewire/stats, /flakewire/clock)"
wait "$FW_PID"
