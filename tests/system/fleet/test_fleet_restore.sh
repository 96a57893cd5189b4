#!/usr/bin/env bash
# A wiped or restored registry (issue 48, case 7), flakesock and flakectl
# against one registry (ZooKeeper or etcd by FW_STORE, registry.sh) in the
# test's namespace, two fleet nodes (2 threads each) running throughout:
# - the root's keys deleted under them (zkCli.sh deleteall / etcdctl del
#   --prefix): neither makes it again; both stop claiming and renewing, say
#   so once, flakewire_fleet_root_ok 0, and keep answering within their
#   confirmed leases; a node started then refuses; `fleet init` refuses to
#   make the root again (it names fence); after `flakectl fleet fence` both
#   go on (root_ok 1) with worker IDs whose floors are at or above the fence;
# - the registry restored from an earlier copy (etcd: `etcdctl snapshot save`
#   and `snapshot restore`; ZooKeeper: its data directory copied while
#   stopped) after the nodes renewed since: both see their records gone back,
#   stop, say so, root_ok 0; fenced, they go on under the same worker IDs
#   (their own records, re-proven by token).
# Every ID collected from both nodes all along: no duplicate.
# usage: test_fleet_restore.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
. "$HERE/node.sh"
FP_ARGS=(--sockets 32)

reg_test restore
ctl() { sys_in_ns "$FLAKECTL" fleet "$@" "${STORE[@]}" --root /r --timeout 15000; }
check "fleet init /r" ctl init

LEASE=6000
COMMON=(--set stats.interval_s=0 --set state.mark_ahead_ms=1000 --set "$REG_SET"
	--set fleet.root=/r --set fleet.session_timeout_ms=4000 --set fleet.start_wait_ms=5000
	--set fleet.lease_ms=$LEASE --set fleet.renew_ms=500)
declare -A MP=([a]=9861 [b]=9862)
sock() { # sock NAME PORT
	sys_start "$SYS_TMP/$1.log" "$FLAKESOCK" --listen 127.0.0.1 --threads 2 \
		--set "net.udp_port=$2" --set "state.file=$SYS_TMP/$1.mark" \
		--set "fleet.identity=$1" --set "fleet.cache_file=$SYS_TMP/$1.cache" \
		--set "metrics.listen=127.0.0.1:${MP[$1]}" "${COMMON[@]}"
}
collect() { # every OK reply's IDs from both nodes into ids
	local p
	for p in 5601 5602; do probe "$p" --sockets 8 --ids "$SYS_TMP/ids.raw" >/dev/null; done
}
node_metric() { # node_metric NAME FAMILY: its value on node NAME's /metrics
	sys_in_ns curl -s -m 2 "http://127.0.0.1:${MP[$1]}/metrics" | awk -v f="$2" '$1 == f {print $2}'
}
root_ok_is() { # root_ok_is WANT SECS: both nodes' flakewire_fleet_root_ok
	local i n
	for ((i = 0; i < $2 * 4; i++)); do
		n=0
		for x in a b; do [ "$(node_metric "$x" flakewire_fleet_root_ok)" = "$1" ] && n=$((n + 1)); done
		[ "$n" = 2 ] && return 0
		collect
		sleep 0.25
	done
	return 1
}
renewals() { echo $(($(node_metric a flakewire_fleet_renewals_total) + $(node_metric b flakewire_fleet_renewals_total))); }

sock a 5601
sock b 5602
check "a answers" until_ok 20 5601
check "b answers" until_ok 20 5602
WA=$(workers 5601) WB=$(workers 5602)
echo "  a: workers $WA; b: workers $WB"
collect

echo "[${SECONDS}s] the root's keys deleted under the nodes ----"
if [ "$FW_STORE" = etcd ]; then
	sys_in_ns etcdctl --endpoints "$REG_CONNECT" del --prefix /r >/dev/null
else
	sys_in_ns /usr/share/zookeeper/bin/zkCli.sh -server "$REG_CONNECT" deleteall /r >/dev/null 2>&1
fi
no_root() { ! ctl ls >/dev/null 2>&1; }
check "the root is gone" no_root
check "both nodes stop: flakewire_fleet_root_ok 0" root_ok_is 0 10
# first (their leases, LEASE ms from the last renewal, end a few seconds on)
check "  both keep answering within their confirmed leases" until_ok 2 5601
R0=$(renewals); sleep 2; collect; R1=$(renewals)
check "  no renewal meanwhile ($R0, then $R1)" test "$R0" = "$R1"
check "  and the root is not made again by a node" no_root
status_says() { # flakectl status of a: WARNING (or worse), naming the stopped root
	sys_in_ns "$FLAKECTL" status --metrics "127.0.0.1:${MP[a]}" --interval 0 >"$SYS_TMP/status" 2>&1
	local rc=$?
	grep -E "^root|^status" "$SYS_TMP/status" | sed 's/^/  /'
	[ "$rc" -ge 1 ] && grep -q "^root .*stopped" "$SYS_TMP/status"
}
check "  flakectl status says the root stopped the claims" status_says
# each node says it stopped, and not at every round (renew_ms 500: about 8
# rounds by now): a line per change of what it sees. ZooKeeper's deleteall
# removes the children before the root, so a renewal in between may find its
# record gone first ("the store went back"); a store error between two rounds
# (a loaded machine) makes the root's line a change again.
said_once() {
	local n gone back
	for n in a b; do
		gone=$(grep -c "no fleet root /r" "$SYS_TMP/$n.log")
		back=$(grep -c "the store went back" "$SYS_TMP/$n.log")
		echo "  $n: 'no fleet root' $gone, 'the store went back' $back"
		[ "$gone" -le 2 ] && [ "$back" -le 1 ] && [ $((gone + back)) -ge 1 ] || return 1
	done
}
check "  each says so once" said_once
grep -m1 "no fleet root /r" "$SYS_TMP/a.log" | cut -c1-300 | sed 's/^/  /'
init_refused() {
	local out rc
	out=$(ctl init 2>&1)
	rc=$?
	echo "  $out" | head -1
	[ $rc = 1 ] && echo "$out" | grep -q "fleet fence"
}
check "fleet init refuses to make it again, naming fence" init_refused
out=$(ctl fence --lease-ms $LEASE)
check "fleet fence" test $? = 0
echo "  $out"
FENCE=$(echo "$out" | sed -n 's/.*no claim issues below \([^ ]*\) .*/\1/p')
check "both nodes go on: flakewire_fleet_root_ok 1" root_ok_is 1 15
floors_ok() { # every owned worker's floor at or above the fence (ISO times compare as text)
	ctl ls >"$SYS_TMP/ls" 2>&1 || return 1
	awk -v f="$FENCE" '$NF == "owned" { n++; if ($5 < f) bad++ } END { exit !(n == 4 && !bad) }' "$SYS_TMP/ls"
}
check "  4 worker IDs owned again, each floor at or above the fence $FENCE" sys_wait_for 15 floors_ok
sed 's/^/  /' "$SYS_TMP/ls"
check "  both answer again" until_ok 20 5601
check "  (b too)" until_ok 20 5602
collect

echo "[${SECONDS}s] the registry restored from an earlier copy ----"
WA=$(workers 5601) WB=$(workers 5602)
echo "  a: workers $WA; b: workers $WB"
if [ "$FW_STORE" = etcd ]; then
	sys_in_ns etcdctl --endpoints "$REG_CONNECT" snapshot save "$SYS_TMP/snap.db" >/dev/null 2>&1
	check "etcdctl snapshot save" test -s "$SYS_TMP/snap.db"
else
	zk_stop_one 1
	cp -a "$ZK_DIR/zk1/data" "$SYS_TMP/zk-copy"
	zk_start_one 1
	check "ZooKeeper's data directory copied while stopped" zk_wait_ready 60
fi
R0=$(renewals)
T_END=$((SECONDS + 20))
until [ "$(renewals)" -ge $((R0 + 8)) ] || [ $SECONDS -gt $T_END ]; do collect; sleep 0.25; done
echo "  renewals since the copy: $(($(renewals) - R0))"
if [ "$FW_STORE" = etcd ]; then
	etcd_stop_one 1
	rm -rf "$ETCD_DIR/etcd1/data" "$SYS_TMP/restored"
	sys_in_ns etcdctl snapshot restore "$SYS_TMP/snap.db" --data-dir "$SYS_TMP/restored" --name m1 \
		--initial-cluster "m1=http://127.0.0.1:${ETCD_PPORT[1]}" \
		--initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PPORT[1]}" >/dev/null 2>&1
	cp -a "$SYS_TMP/restored" "$ETCD_DIR/etcd1/data"
	etcd_start_one 1
	check "etcd restored from the snapshot" etcd_wait_ready 30
else
	zk_stop_one 1
	rm -rf "$ZK_DIR/zk1/data"
	cp -a "$SYS_TMP/zk-copy" "$ZK_DIR/zk1/data"
	zk_start_one 1
	check "ZooKeeper restored from the copy" zk_wait_ready 60
fi
stopped() { # as root_ok_is 0 SECS, a's last lines when not
	root_ok_is 0 "$1" && return 0
	tail -5 "$SYS_TMP/a.log" | cut -c1-300 | sed 's/^/  a: /'
	return 1
}
check "both nodes stop: flakewire_fleet_root_ok 0" stopped 20
check "  each says the store went back" bash -c 'for n in a b; do grep -q "went back" "$1/$n.log" || exit 1; done' _ "$SYS_TMP"
grep -m1 "went back" "$SYS_TMP/a.log" | cut -c1-300 | sed 's/^/  /'
R0=$(renewals); sleep 2; collect; R1=$(renewals)
check "  no renewal meanwhile ($R0, then $R1)" test "$R0" = "$R1"
out=$(ctl fence --lease-ms $LEASE)
check "fleet fence" test $? = 0
echo "  $out"
check "both nodes go on: flakewire_fleet_root_ok 1" root_ok_is 1 20
R0=$(renewals)
renewed_since() { [ "$(renewals)" -gt $((R0 + 2)) ]; }
check "  renewing again" sys_wait_for 10 renewed_since
check "  a keeps its worker IDs ($WA)" test "$(workers 5601)" = "$WA"
check "  b keeps its worker IDs ($WB)" test "$(workers 5602)" = "$WB"
collect
awk '{print $2}' "$SYS_TMP/ids.raw" >"$SYS_TMP/ids"
echo "  $(wc -l <"$SYS_TMP/ids") IDs from a and b"
check "no ID twice across the wipe, the restore and both fences" ids_unique "$SYS_TMP/ids"
sys_done
