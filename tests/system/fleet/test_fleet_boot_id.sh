#!/usr/bin/env bash
# The boot identity under the packaged unit's sandbox (issue 50, part 2):
# flakesock.service sets ProcSubset=pid, which mounts /proc with subset=pid
# and hides /proc/sys/kernel/random/boot_id. Here flakesock runs in a fleet
# in a PID and mount namespace whose /proc is mounted subset=pid, as the
# unit's, with FLAKEWIRE_BOOT_ID set as the units set it (systemd's %b: the
# boot ID without dashes). Its cache must record the real boot ID in its
# stamp (on 1e8cbc3 a random "unknown-..." one), and after a SIGKILL it must
# take its worker IDs back (on 1e8cbc3 it claimed new ones: nothing proved
# the old). Without the variable the stamp says the boot is unknown and the
# start warns. The units themselves must pass %b.
# usage: test_fleet_boot_id.sh FLAKESOCK FLAKECTL UNIT_DIR
set -u
FLAKESOCK=$1
FLAKECTL=$2
UNIT_DIR=$3
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
PROBE="/usr/bin/python3 $HERE/fleetprobe.py"

sys_init fleetbid
bi_cleanup() {
	local pid
	for pid in "${SYS_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
	sleep 0.3
	reg_stop_all
	sys_cleanup
}
trap bi_cleanup EXIT

BOOT=$(cat /proc/sys/kernel/random/boot_id)
PCT_B=${BOOT//-/} # what systemd's %b expands to
for u in flakesock flakewire flakewire-afxdp; do
	check "$u.service passes the boot ID (Environment=FLAKEWIRE_BOOT_ID=%b)" \
		grep -qx 'Environment=FLAKEWIRE_BOOT_ID=%b' "$UNIT_DIR/$u.service"
done
check "flakesock.service sets ProcSubset=pid (what this test reproduces)" \
	grep -qx 'ProcSubset=pid' "$UNIT_DIR/flakesock.service"
hidden=$(unshare -m -p -f --propagation private sh -c \
	'mount -t proc -o subset=pid proc /proc && cat /proc/sys/kernel/random/boot_id' 2>/dev/null)
check "under subset=pid the boot_id file is hidden (read '$hidden')" test -z "$hidden"

reg_start "$SYS_TMP" 1 "ip netns exec $SYS_NS" || { echo "FAIL: $REG_NAME did not start"; exit 1; }
# the root, made by an operator (issue 48): nodes never create one
reg_init "$FLAKECTL" /bid --set id.worker_bits=4 >/dev/null || { echo "FAIL: fleet init /bid"; exit 1; }
COMMON=(--listen 127.0.0.1 --threads 2 --set id.worker_bits=4 --set fleet.root=/bid
	--set clock.calibrate_ms=200 --set stats.interval_s=0 --set "$REG_SET"
	--set fleet.lease_ms=600000 --set fleet.renew_ms=1000 --set fleet.session_timeout_ms=4000)
# sandboxed NAME PORT [ENV...]: flakesock NAME in new PID and mount namespaces,
# /proc mounted subset=pid; killing the unshare process SIGKILLs it (--kill-child)
sandboxed() {
	local name=$1 port=$2
	shift 2
	sys_start "$SYS_TMP/$name.log" unshare -m -p -f --kill-child --propagation private \
		env "$@" sh -c 'mount -t proc -o subset=pid proc /proc && exec "$0" "$@"' \
		"$FLAKESOCK" "${COMMON[@]}" --set net.udp_port="$port" \
		--set "state.file=$SYS_TMP/$name/mark" --set fleet.identity="$name" \
		--set "fleet.cache_file=$SYS_TMP/$name/mark.fleet"
}
probe() { sys_in_ns $PROBE --server "127.0.0.1:$1" --sockets 16 --worker-bits 4; }
workers() { probe "$1" | sed -n 's/.*workers=\([0-9,]*\).*/\1/p'; }
two() {
	local w
	for _ in $(seq 80); do
		w=$(workers "$1")
		case "$w" in *,*) echo "$w"; return 0 ;; esac
		sleep 0.25
	done
	return 1
}

sandboxed a 5621 FLAKEWIRE_BOOT_ID="$PCT_B"
A=$SYS_LAST_PID
WA=$(two 5621)
check "a (subset=pid, FLAKEWIRE_BOOT_ID=%b) serves two worker IDs ($WA)" test -n "$WA"
STAMP=$(sed -n 's/^state=//p' "$SYS_TMP/a/mark.fleet")
check "its cache's stamp holds the real boot ID ($STAMP)" test "${STAMP##*:}" = "$BOOT"
kill -KILL "$A"
wait "$A" 2>/dev/null
sandboxed a 5621 FLAKEWIRE_BOOT_ID="$PCT_B"
WA2=$(two 5621)
check "a, SIGKILLed and started again in the sandbox, takes its worker IDs back ($WA -> $WA2)" \
	test -n "$WA2" -a "$WA2" = "$WA"

# the same without the variable: an unknown boot, said at start
sandboxed n 5622 FLAKEWIRE_BOOT_ID=
WN=$(two 5622)
check "without FLAKEWIRE_BOOT_ID it serves ($WN)" test -n "$WN"
check "its stamp says the boot is unknown" grep -q '^state=.*:unknown-' "$SYS_TMP/n/mark.fleet"
check "and it warns that its cache proves nothing" grep -q "boot ID is unknown" "$SYS_TMP/n.log"
sys_in_ns "$FLAKECTL" fleet ls --zk "$REG_CONNECT" --root /bid | sed 's/^/  /'
sys_done
