#!/usr/bin/env bash
# A node that finds no free worker ID starts anyway, not ready (issue 50).
# A root of 8 worker IDs with 0-3 reserved for static nodes: 4 to claim.
# a (2 threads), b and x (1 each) take all 4; x is SIGKILLed (a crash
# nothing releases: its ID is stranded for its 10-minute lease). c (2
# threads) then finds none free: it keeps running (on 1e8cbc3 it exited 1),
# answers NO_LEASE, /readyz says 503 not ready, and its log says once how
# many are free and stranded and when the first stranded one comes back.
# a stops gracefully (SIGTERM: its 2 IDs released); c claims both at its
# next round, /readyz 200, and serves a's worker IDs; no ID is served twice
# (a's before its stop, b's and c's after).
# usage: test_fleet_full.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
. "$HERE/node.sh"
FP_ARGS=(--sockets 16 --worker-bits 3)

reg_test fleetfull KILL
reg_init "$FLAKECTL" /full --set id.worker_bits=3 --reserve 0-3 >/dev/null ||
	{ echo "FAIL: fleet init /full"; exit 1; }

COMMON=(--listen 127.0.0.1 --set id.worker_bits=3 --set fleet.root=/full
	--set clock.calibrate_ms=200 --set stats.interval_s=0 --set "$REG_SET"
	--set fleet.lease_ms=600000 --set fleet.renew_ms=1000 --set fleet.session_timeout_ms=4000
	--set fleet.start_wait_ms=20000)
node() { # NAME PORT THREADS [--set ...]
	local name=$1 port=$2 threads=$3
	shift 3
	sys_start "$SYS_TMP/$name.log" "$FLAKESOCK" "${COMMON[@]}" --threads "$threads" \
		--set net.udp_port="$port" --set "state.file=$SYS_TMP/$name/mark" \
		--set fleet.identity="$name" "$@"
}
readyz() { sys_in_ns curl -s -o "$SYS_TMP/readyz" -w '%{http_code}' "http://127.0.0.1:$1/readyz"; }
ls_root() { sys_in_ns "$FLAKECTL" fleet ls "${STORE[@]}" --root /full --timeout 15000; }

node a 5651 2
A=$SYS_LAST_PID
check "a serves 2 worker IDs" serves 5651 2
WA=$SERVED
node b 5652 1
check "b serves 1 worker ID" serves 5652 1
WB=$SERVED
node x 5653 1
X=$SYS_LAST_PID
check "x serves 1 worker ID" serves 5653 1
WX=$SERVED
echo "  a: $WA; b: $WB; x: $WX"
check "the 4 claimable worker IDs (4-7) are taken" \
	test "$(echo "$WA,$WB,$WX" | tr , '\n' | sort -n | tr '\n' ' ')" = "4 5 6 7 "
kill -KILL "$X"
wait "$X" 2>/dev/null
gone() { # x's session ended (SESSION "-" in fleet ls)
	for _ in $(seq 60); do
		ls_root | awk '$2 == "x" && $(NF-1) == "alive" {a++} END {exit a > 0}' && return 0
		sleep 0.5
	done
	return 1
}
check "x's session ended: its worker ID is stranded" gone

node c 5654 2 --set metrics.listen=127.0.0.1:9881
C=$SYS_LAST_PID
said() { sys_wait_for 20 grep -q "starting without worker IDs" "$SYS_TMP/c.log"; }
check "c, finding none free, says it starts without worker IDs" said
sleep 1.5
check "c is still running (it used to exit 1)" kill -0 "$C"
grep "starting without" "$SYS_TMP/c.log" | sed 's/^/  /'
check "  its log: none can be claimed, 0 free, 1 stranded, and when the first comes back" \
	grep -Eq "c needs 2 worker ID\(s\) and only 0 can be claimed.*; 0 free, 1 stranded \(leased to owners with no live session\), the first back at 20" "$SYS_TMP/c.log"
PC=$(probe 5654)
echo "  c: $PC"
check "c answers NO_LEASE, no ID" bash -c '[[ "$1" == ok=0\ no_lease=[1-9]* ]]' _ "$PC"
code=$(readyz 9881)
check "c's /readyz: 503 not ready, its workers no_lease ($code: $(head -1 "$SYS_TMP/readyz"))" \
	bash -c '[ "$1" = 503 ] && grep -q "^not ready" "$2" && grep -q "no_lease" "$2"' _ "$code" "$SYS_TMP/readyz"
check "c's /metrics: flakewire_ready 0, 0 free, 1 stranded" \
	test "$(metric 9881 flakewire_ready) $(metric 9881 flakewire_fleet_free_worker_ids) $(metric 9881 flakewire_fleet_stranded_worker_ids)" = "0 0 1"

: >"$SYS_TMP/ids"
probe 5651 --rounds 10 --count 50 --ids "$SYS_TMP/ids" >/dev/null
probe 5652 --rounds 10 --count 50 --ids "$SYS_TMP/ids" >/dev/null
sys_stop "$A"
check "a's SIGTERM released its 2 worker IDs" test "$(grep -c 'released at the stop' "$SYS_TMP/a.log")" = 2
ready() { [ "$(readyz 9881)" = 200 ]; }
t0=$SECONDS
check "c becomes ready once a's IDs are free" sys_wait_for 15 ready
echo "  ready after $((SECONDS - t0)) s: $(head -1 "$SYS_TMP/readyz")"
check "c serves 2 worker IDs" serves 5654 2
WC=$SERVED # what that probe saw (a probe of its own could time out on a loaded machine)
check "c serves a's worker IDs ($WC, a had $WA)" test "$WC" = "$WA"
check "c claimed them after waiting, and said it" grep -q "2 worker ID(s) claimed after waiting" "$SYS_TMP/c.log"
check "c logged the shortage once" test "$(grep -c "can be claimed" "$SYS_TMP/c.log")" = 1
probe 5654 --rounds 10 --count 50 --ids "$SYS_TMP/ids" >/dev/null
probe 5652 --rounds 10 --count 50 --ids "$SYS_TMP/ids" >/dev/null
echo "  $(wc -l <"$SYS_TMP/ids") IDs from a (before its stop), b and c"
awk '{print $2}' "$SYS_TMP/ids" >"$SYS_TMP/ids.only"
check "no ID served twice" ids_unique "$SYS_TMP/ids.only"
check "  from all three" bash -c 'for w in ${1//,/ } ${2//,/ }; do grep -q "^$w " "$3" || exit 1; done' _ "$WA" "$WB" "$SYS_TMP/ids"
ls_root | sed 's/^/  /'
check "fleet ls: c holds 2, 0 free, 1 stranded, 4 claimable, 4 reserved" \
	bash -c 'ls=$(cat); [ "$(awk "\$2 == \"c\"" <<<"$ls" | wc -l)" = 2 ] && grep -Eq "^free: 0 .*; stranded: 1 .*; 4 claimable, 4 reserved" <<<"$ls"' < <(ls_root)
sys_done
