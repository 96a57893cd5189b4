#!/usr/bin/env bash
# A fresh process on a restored registry (issue 48, case 7), flakesock and
# flakectl against one registry (ZooKeeper or etcd by FW_STORE, registry.sh):
# - a copy of the registry is taken (etcd: `etcdctl snapshot save`;
#   ZooKeeper: its data directory copied while stopped) with the root made
#   and no worker claimed; node a starts after it and claims worker IDs that
#   the copy holds free;
# - the registry is restored from the copy under a: a sees it at its
#   reconnection (its renew_ms is far longer than the time allowed) and
#   writes the stop record /r/stopped;
# - node b, a fresh process (its own identity and state, no cache: it has
#   seen nothing of the store), starts then: the restored store holds a's
#   worker IDs free, so without the record it would claim them at floor 0
#   while a still issues under them. It refuses to start, naming the record
#   and `flakectl fleet fence --root /r`, and serves nothing;
# - after `flakectl fleet fence` b starts, claims above the fence and
#   serves; a answers again (its records gone, above the fence too).
# Every ID collected from a and b all along: no duplicate.
# usage: test_fleet_restore_fresh.sh FLAKESOCK FLAKECTL
# FRESH_LEASE_MS, FRESH_RENEW_MS, FRESH_SESSION_MS (16000, 8000, 1000): the
# nodes' lease_ms, renew_ms, session_timeout_ms (doc/fleet.md's figures are a
# run with the defaults: 86400000 cannot be fenced in a test, 120000 stands in)
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
. "$HERE/node.sh"
FP_ARGS=(--sockets 32)

reg_test restorefresh
ctl() { sys_in_ns "$FLAKECTL" fleet "$@" "${STORE[@]}" --root /r --timeout 15000; }
check "fleet init /r" ctl init

# The restore comes just after a renewal of a's: its next renewal is RENEW ms on,
# and b starts before it (the window of the code before the stop record, where
# a's renewal would have shown it the restore); a sees the restore sooner, at its
# reconnection
LEASE=${FRESH_LEASE_MS:-16000} RENEW=${FRESH_RENEW_MS:-8000} SESSION=${FRESH_SESSION_MS:-1000}
COMMON=(--set stats.interval_s=0 --set state.mark_ahead_ms=1000 --set "$REG_SET"
	--set fleet.root=/r --set fleet.session_timeout_ms=$SESSION --set fleet.start_wait_ms=5000
	--set fleet.lease_ms=$LEASE --set fleet.renew_ms=$RENEW)
declare -A MP=([a]=9871 [b]=9872) UP=([a]=5611 [b]=5612)
sock() { # sock NAME: a fresh process of identity NAME, its own state and cache
	sys_start "$SYS_TMP/$1.log" "$FLAKESOCK" --listen 127.0.0.1 --threads 2 \
		--set "net.udp_port=${UP[$1]}" --set "state.file=$SYS_TMP/$1.mark" \
		--set "fleet.identity=$1" --set "fleet.cache_file=$SYS_TMP/$1.cache" \
		--set "metrics.listen=127.0.0.1:${MP[$1]}" "${COMMON[@]}"
}
collect() { # every OK reply's IDs from both nodes into ids
	local p
	for p in "${UP[a]}" "${UP[b]}"; do probe "$p" --sockets 8 --ids "$SYS_TMP/ids.raw" >/dev/null; done
}
renewals() { # node a's flakewire_fleet_renewals_total
	sys_in_ns curl -s -m 2 "http://127.0.0.1:${MP[a]}/metrics" |
		awk '$1 == "flakewire_fleet_renewals_total" {print $2}'
}
stop_record() { # the stop record's text, if any
	if [ "$FW_STORE" = etcd ]; then
		sys_in_ns etcdctl --endpoints "$REG_CONNECT" get /r/stopped --print-value-only 2>/dev/null
	else
		sys_in_ns /usr/share/zookeeper/bin/zkCli.sh -server "$REG_CONNECT" get /r/stopped 2>/dev/null |
			sed -n '/^flakewire-stopped/,/^reason=/p'
	fi
}
has_stop_record() { stop_record | grep -q '^flakewire-stopped v1'; }

echo "[${SECONDS}s] the copy: the root made, no worker claimed ----"
if [ "$FW_STORE" = etcd ]; then
	sys_in_ns etcdctl --endpoints "$REG_CONNECT" snapshot save "$SYS_TMP/snap.db" >/dev/null 2>&1
	check "etcdctl snapshot save" test -s "$SYS_TMP/snap.db"
else
	zk_stop_one 1
	cp -a "$ZK_DIR/zk1/data" "$SYS_TMP/zk-copy"
	zk_start_one 1
	check "ZooKeeper's data directory copied while stopped" zk_wait_ready 60
fi

sock a
check "a answers (it claimed after the copy)" until_ok 20 "${UP[a]}"
WA=$(workers "${UP[a]}")
echo "  a: workers $WA"
collect

R0=$(renewals)
renewed() { [ "$(renewals)" -gt "$R0" ]; }
check "a renews" sys_wait_for $((RENEW / 1000 + 5)) renewed
echo "[${SECONDS}s] the registry restored from the copy under a, just after its renewal ----"
if [ "$FW_STORE" = etcd ]; then
	etcd_stop_one 1
	rm -rf "$ETCD_DIR/etcd1/data" "$SYS_TMP/restored"
	sys_in_ns etcdctl snapshot restore "$SYS_TMP/snap.db" --data-dir "$SYS_TMP/restored" --name m1 \
		--initial-cluster "m1=http://127.0.0.1:${ETCD_PPORT[1]}" \
		--initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PPORT[1]}" >/dev/null 2>&1
	cp -a "$SYS_TMP/restored" "$ETCD_DIR/etcd1/data"
	T_START=$(date +%s%3N)
	etcd_start_one 1
	check "etcd restored from the snapshot" etcd_wait_ready 30
else
	zk_stop_one 1
	rm -rf "$ZK_DIR/zk1/data"
	cp -a "$SYS_TMP/zk-copy" "$ZK_DIR/zk1/data"
	T_START=$(date +%s%3N)
	zk_start_one 1
	check "ZooKeeper restored from the copy" zk_wait_ready 60
fi
T_UP=$(date +%s%3N)
# a sees it at its reconnection: ZooKeeper refuses a client that saw a later
# zxid, so its handle is replaced after two session timeouts; etcd's
# keep-alive fails while the member is down, and a's lease is not in the copy
LIMIT=$((SESSION / 3000 + 3)) # etcd: a keep-alive every third of the session
[ "$FW_STORE" = etcd ] || LIMIT=$((2 * SESSION / 1000 + 3))
saw() { grep -q "the store went back" "$SYS_TMP/a.log"; }
check "a sees the restore within $LIMIT s of the registry's return" sys_wait_for $LIMIT saw
if saw; then
	T_SAW=$(date -d "$(grep -m1 "the store went back" "$SYS_TMP/a.log" | cut -d' ' -f1)" +%s%3N)
	echo "  $((T_SAW - T_START)) ms after the registry's restart, $((T_SAW - T_UP)) ms after it was" \
		"seen ready (renew_ms $RENEW ms)"
fi
if saw; then check "  and writes the stop record" sys_wait_for 10 has_stop_record; else check "  a stop record" has_stop_record; fi
stop_record | cut -c1-200 | sed 's/^/    /'
check "  a wrote it" bash -c 'grep -q "^by=a$" <<<"$1"' _ "$(stop_record)"
collect

echo "[${SECONDS}s] a fresh process b starts on the restored registry ----"
sock b
PB=$SYS_LAST_PID
exited() { ! kill -0 "$PB" 2>/dev/null; }
check "b refuses to start" sys_wait_for 10 exited
if exited; then
	wait "$PB"
	RC=$?
else # serving (the code before the stop record: it claimed a's worker IDs, free in
	# the copy): both loaded at once, every ID collected
	echo "  b: workers $(workers "${UP[b]}") (a: $WA)"
	probe "${UP[a]}" --sockets 16 --rounds 60 --ids "$SYS_TMP/ids.a" >/dev/null &
	probe "${UP[b]}" --sockets 16 --rounds 60 --ids "$SYS_TMP/ids.b" >/dev/null
	wait $!
	cat "$SYS_TMP/ids.a" "$SYS_TMP/ids.b" >>"$SYS_TMP/ids.raw"
	sys_stop "$PB"
	RC=0
fi
check "  exit status not 0 ($RC)" test "$RC" != 0
grep -m1 "stopped" "$SYS_TMP/b.log" | cut -c1-400 | sed 's/^/  /'
check "  its log names the stop record" grep -q "/r/stopped" "$SYS_TMP/b.log"
check "  and the fence" grep -q "flakectl fleet fence --root /r" "$SYS_TMP/b.log"
no_answer() { [ "$(probe "${UP[b]}" --sockets 8 | field ok)" = 0 ]; }
check "  b serves no ID" no_answer
collect

echo "[${SECONDS}s] fenced ----"
out=$(ctl fence --lease-ms $LEASE)
check "fleet fence" test $? = 0
echo "  $out"
sock b
check "b starts and serves above the fence" until_ok $((LEASE / 1000 + 15)) "${UP[b]}"
echo "  b: workers $(workers "${UP[b]}")"
check "a serves again" until_ok $((LEASE / 1000 + 15)) "${UP[a]}"
echo "  a: workers $(workers "${UP[a]}")"
collect
awk '{print $2}' "$SYS_TMP/ids.raw" >"$SYS_TMP/ids"
echo "  $(wc -l <"$SYS_TMP/ids") IDs from a and b"
check "no ID twice" ids_unique "$SYS_TMP/ids"
echo "[${SECONDS}s] done"
sys_done
