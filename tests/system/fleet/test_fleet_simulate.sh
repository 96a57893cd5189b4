#!/usr/bin/env bash
# The fleet simulation's short form (scripts/fleet-simulate.sh is the full
# one): real lib/fleet nodes in a few processes against a 1-server registry
# (FW_STORE: zookeeper or etcd). 32 nodes x 4 slots claim every ID of 7
# worker bits, the 129th slot must find none (and say so); then on 24 nodes x
# 4 slots with a 6 s lease: a crash loop (SIGKILL of one process of 4 nodes,
# restarted on the same state), a rolling restart (graceful) and a rolling
# reboot (new state). fleet_simulate checks after each that no two holders of
# one worker ID had overlapping ranges and, where restarts are on the same
# state, that free IDs never reached 0.
# usage: test_fleet_simulate.sh FLEET_SIMULATE_BINARY
set -u
BIN=$1
. "$(dirname "$0")/../lib.sh"
sys_own_ns fleetsim "$0" "$@"
TMP=$(mktemp -d /tmp/fwt-fleetsim.XXXXXX)
. "$(dirname "$0")/registry.sh"
trap 'reg_stop_all; umount "$TMP"/etcd* 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
reg_start "$TMP" 1 || { echo "FAIL: $REG_NAME did not start"; exit 1; }
ulimit -n "$(ulimit -Hn)"
ETCD=()
[ "$FW_STORE" = etcd ] && ETCD=(--etcd)
common=(--connect "$REG_CONNECT" "${ETCD[@]}" --slots 4 --worker-bits 7 --renew-ms 1000
	--session-ms 2000 --timeout-s 40)
rc=0
# each root is made by init (as flakectl fleet init) with its own datacenter value
"$BIN" storm "${common[@]}" --root /sim/storm --datacenter 0 --dir "$TMP/storm" --nodes 32 \
	--per-proc 8 --lease-ms 6000 --steady-s 5 || rc=1
# The crash loop kills one process (4 nodes, 16 slots) every --period-s and
# restarts it on the same state: its mark and cache prove its worker IDs, which
# it takes back (the takeback check), so nothing is stranded and free IDs stay
# above 0 however close the crashes come.
dc=1
for s in crashloop rolling reboot; do
	"$BIN" "$s" "${common[@]}" --root "/sim/$s" --datacenter $dc --dir "$TMP/$s" --nodes 24 \
		--per-proc 4 --lease-ms 6000 --duration-s 12 --period-s 4 --fraction 10 || rc=1
	dc=$((dc + 1))
done
# the exhaustion message names the owners, as an operator reads it
[ $rc = 0 ] && echo "PASS: fleet-simulate ($REG_NAME)"
exit $rc
