#!/usr/bin/env bash
# flakesock in a fleet against a 3-server ZooKeeper ensemble of its own (in
# the test's namespace): distinct worker IDs, restart keeps them, the
# leader killed and the whole ensemble restarted while nodes renew,
# exhaustion (2 worker bits), ZooKeeper down at start with and without a
# cache, and a node partitioned from ZooKeeper (its own namespace, veth
# down): it issues until its lease ends, answers NO_LEASE, resumes when
# healed; cut again, a second node takes its worker IDs over: no duplicate,
# and each worker's IDs from the second node are above the first node's.
# A cut-off node's worker ID released with --force and claimed by another
# node: the cut-off node issues under its lease, the claimer only above the
# floor the release wrote (no duplicate, the claimer's IDs above).
# s2 also serves /metrics: the lease families pass `promtool check metrics`,
# with 0 < remaining <= lease length while renewing, NO_LEASE once the
# ensemble is down past a lease (issue 17).
# usage: test_fleet_sock.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
PROBE="/usr/bin/python3 $HERE/fleetprobe.py"

sys_init fleet
NS_A="fwt-fleetA-$$"
VZ="fwz$$"
VA="fwa$$"
fleet_cleanup() {
	local pid
	for pid in "${SYS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	sleep 0.3
	reg_stop_all
	ip netns del "$NS_A" 2>/dev/null
	sys_cleanup
}
trap fleet_cleanup EXIT

REG_BIND=0.0.0.0
reg_start "$SYS_TMP" 3 "ip netns exec $SYS_NS" || { echo "FAIL: ensemble did not start"; exit 1; }
echo "ensemble: $REG_CONNECT"
check "3-server ensemble with a leader" reg_leader

# One layout per store (issue 48): the four roots take datacenter values 0-3;
# /f2's fleet may claim 4 worker IDs, /f3's and /f4's 2 (the rest reserved).
if [ "$FW_STORE" = etcd ]; then STORE=(--etcd "$REG_CONNECT"); else STORE=(--zk "$REG_CONNECT"); fi
fleet_init() { # fleet_init ROOT DATACENTER [--reserve LIST]
	local root=$1 dc=$2
	shift 2
	sys_in_ns "$FLAKECTL" fleet init "${STORE[@]}" --root "$root" --timeout 15000 \
		--set id.datacenter_bits=2 --set "id.datacenter=$dc" "$@" | sed 's/^/  /'
	[ "${PIPESTATUS[0]}" -eq 0 ]
}
init_all() {
	fleet_init /f1 0 && fleet_init /f2 1 --reserve 4-1023 && fleet_init /f3 2 --reserve 2-1023 &&
		fleet_init /f4 3 --reserve 2-1023
}
check "fleet init /f1 /f2 /f3 /f4" init_all

COMMON=(--set id.datacenter_bits=2 --set stats.interval_s=0 --set state.mark_ahead_ms=1000
	--set fleet.session_timeout_ms=4000 --set fleet.start_wait_ms=2000
	--set fleet.lease_ms=3000 --set fleet.renew_ms=500)

# sock NAME PORT ROOT [extra --set ...]: starts flakesock NAME (THREADS threads,
# default 2) in the test namespace.
declare -A PID
sock() {
	local name=$1 port=$2 root=$3
	shift 3
	sys_start "$SYS_TMP/$name.log" "$FLAKESOCK" --listen 127.0.0.1 --threads "${THREADS:-2}" \
		--set "net.udp_port=$port" --set "state.file=$SYS_TMP/$name.mark" \
		--set "$REG_SET" --set "fleet.root=$root" \
		--set "fleet.identity=$name" --set "fleet.cache_file=$SYS_TMP/$name.cache" \
		"${COMMON[@]}" "$@"
	PID[$name]=$SYS_LAST_PID
}
probe() { sys_in_ns $PROBE --server "127.0.0.1:$1" "${@:2}"; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
# until_probe SECS PORT FIELD COND: probes until the FIELD of the summary satisfies COND
until_ok() {
	local secs=$1 port=$2 i out
	for ((i = 0; i < secs * 4; i++)); do
		out=$(probe "$port" --sockets 8)
		[ "$(echo "$out" | field ok)" = 8 ] && return 0
		sleep 0.25
	done
	echo "  last: $out"
	return 1
}
workers_of() { probe "$1" --sockets 32 | field workers; }

# scrape FILE: s2's /metrics into FILE; promtool-clean.
MPORT=9851
command -v promtool >/dev/null || { echo "FAIL: promtool missing (Debian package prometheus)"; exit 1; }
scrape() {
	sys_in_ns curl -sSf --max-time 5 -o "$1" "http://127.0.0.1:$MPORT/metrics" || return 1
	local out
	out=$(promtool check metrics <"$1" 2>&1) && [ -z "$out" ] || { echo "  promtool: $out"; return 1; }
}
# lease_check FILE WORKERS EXPR: EXPR (python) holds for every worker of WORKERS
# (comma list), with r = remaining s, e = end timestamp, n = no_lease, L = length,
# now = when the scrape was written (FILE's mtime: the check's own start may
# come seconds later on a busy machine, and e - r is the node's time of the
# scrape, not of the check).
lease_check() {
	/usr/bin/python3 - "$@" <<'PY'
import os, re, sys
v = {}
for line in open(sys.argv[1]):
    if line[0] != "#" and line.strip():
        k, x = line.rsplit(" ", 1)
        v[k] = float(x)
L = v.get("flakewire_fleet_lease_length_seconds")
ok = True
for w in sys.argv[2].split(","):
    r = v.get('flakewire_fleet_lease_remaining_seconds{worker="%s"}' % w)
    e = v.get('flakewire_fleet_lease_end_timestamp_seconds{worker="%s"}' % w)
    n = [x for k, x in v.items() if k.startswith("flakewire_fleet_no_lease{") and k.endswith(',worker="%s"}' % w)]
    good = None not in (r, e, L) and len(n) == 1 and eval(sys.argv[3], {"r": r, "e": e, "n": n[0], "L": L, "now": os.path.getmtime(sys.argv[1])})
    print("  worker %s: remaining %s s, ends %s, no_lease %s, length %s: %s" % (w, r, e, n, L, "ok" if good else "NOT " + sys.argv[3]))
    ok = ok and good
sys.exit(0 if ok else 1)
PY
}

# ---- distinct worker IDs, restart keeps them ----
echo "[${SECONDS}s]distinct worker IDs, restart keeps them ----"
sock s1 5301 /f1
sock s2 5302 /f1 --set metrics.listen=127.0.0.1:$MPORT
check "s1 answers" until_ok 15 5301
check "s2 answers" until_ok 15 5302
W1=$(workers_of 5301)
W2=$(workers_of 5302)
echo "  s1 workers $W1, s2 workers $W2"
distinct4() { [ "$(echo "$W1,$W2" | tr , '\n' | sort -u | grep -c .)" -eq 4 ]; }
check "two flakesock x 2 threads: 4 distinct worker IDs" distinct4
check "s2 /metrics: promtool check metrics" scrape "$SYS_TMP/m1"
check "s2 /metrics: each worker's lease 0 < remaining <= length (3 s), ends then, no NO_LEASE" \
	lease_check "$SYS_TMP/m1" "$W2" '0 < r <= L == 3 and abs(e - now - r) < 1 and n == 0'
check "s2 /metrics: connected, renewing, offset to $REG_NAME" grep -q '^flakewire_fleet_connected 1$' "$SYS_TMP/m1"
for f in flakewire_fleet_renewals_total flakewire_fleet_renewal_failures_total flakewire_fleet_leases_lost_total; do
	check "  $f" grep -q "^$f " "$SYS_TMP/m1"
done
# the clock offset: ZooKeeper's mtimes give one; etcd keeps no time (doc/fleet.md)
if [ "$FW_STORE" = etcd ]; then
	check "  no flakewire_fleet_clock_offset_seconds (etcd has no clock)" \
		bash -c '! grep -q "^flakewire_fleet_clock_offset_seconds " "$1"' _ "$SYS_TMP/m1"
else
	check "  flakewire_fleet_clock_offset_seconds" \
		grep -q "^flakewire_fleet_clock_offset_seconds " "$SYS_TMP/m1"
fi
sys_in_ns "$FLAKECTL" fleet ls --zk "$REG_CONNECT" --root /f1 --timeout 15000 >"$SYS_TMP/ls" 2>&1
sed 's/^/  /' "$SYS_TMP/ls"
check "fleet ls: 4 owned, alive" grep -q "^4 of 1024 worker IDs owned" "$SYS_TMP/ls"
check "fleet check: OK" sys_in_ns "$FLAKECTL" fleet check --zk "$REG_CONNECT" --root /f1 --warn-ms 1000 --timeout 15000
sys_stop "${PID[s1]}"
sock s1 5301 /f1
check "s1 restarted answers" until_ok 15 5301
check "restart keeps s1's worker IDs" test "$(workers_of 5301)" = "$W1"

# ---- the leader killed while nodes renew ----
echo "[${SECONDS}s]the leader killed while nodes renew ----"
L=$(reg_leader)
reg_stop_one "$L"
no_gap() {
	local i out
	for i in $(seq 16); do # 4 s, more than a lease
		out=$(probe "$1" --sockets 4)
		[ "$(echo "$out" | field ok)" = 4 ] || { echo "  $out"; return 1; }
		sleep 0.25
	done
}
check "leader $L killed: s1 keeps issuing past a lease length" no_gap 5301
check "and s2" until_ok 1 5302
reg_start_one "$L"
reg_wait_ready 30
check "the killed server rejoins" reg_wait_ready 30 3
check "no worker ID changed" test "$(workers_of 5301)" = "$W1"

# ---- the whole ensemble restarted ----
echo "[${SECONDS}s]the whole ensemble restarted ----"
reg_stop_all
sleep 4 # past every lease
out=$(probe 5301 --sockets 8)
check "ensemble down past the lease: NO_LEASE ($out)" test "$(echo "$out" | field no_lease)" = 8
check "s2 /metrics while the ensemble is down" scrape "$SYS_TMP/m2"
check "s2 /metrics: leases ended (remaining < 0), NO_LEASE 1" \
	lease_check "$SYS_TMP/m2" "$W2" 'r < 0 and n == 1'
check "s2 /metrics: last renewal older than 2 s (renew_ms 0.5 s)" \
	/usr/bin/python3 -c 'import sys, time; v = dict(l.rsplit(" ", 1) for l in open(sys.argv[1]) if l[0] != "#"); t = float(v["flakewire_fleet_last_renewal_timestamp_seconds"]); print("  last renewal %.1f s ago" % (time.time() - t)); sys.exit(not (t > 0 and time.time() - t > 2))' "$SYS_TMP/m2"
for i in 1 2 3; do reg_start_one "$i"; done
check "ensemble back" reg_wait_ready 40
check "s1 resumes by itself" until_ok 20 5301
check "s2 resumes by itself" until_ok 20 5302
check "same worker IDs after the ensemble restart" test "$(workers_of 5301)" = "$W1"
grep -q "NO_LEASE until the registry" "$SYS_TMP/s1.log"
check "the lease end was logged" test $? -eq 0

# ---- exhaustion: 4 worker IDs to claim, the fifth claimant waits, not ready ----
echo "[${SECONDS}s]exhaustion: 4 worker IDs to claim, the fifth claimant waits ----"
sock s3 5303 /f2 --set id.datacenter=1
sock s4 5304 /f2 --set id.datacenter=1
check "s3 answers" until_ok 15 5303
check "s4 answers" until_ok 15 5304
THREADS=1 sock s5 5305 /f2 --set id.datacenter=1
check "the fifth claimant starts without a worker ID (issue 50: it used to exit 1)" \
	sys_wait_for 20 grep -q "starting without worker IDs" "$SYS_TMP/s5.log"
sed 's/^/  /' "$SYS_TMP/s5.log" | grep -i "worker id"
msg_ok() {
	grep -q "needs 1 worker ID(s) and only 0 can be claimed: 4 of 4 worker IDs" "$1" &&
		grep -q "by s3 until 20" "$1" && grep -q "by s4 until 20" "$1"
}
check "its message names how many, whom and until when" msg_ok "$SYS_TMP/s5.log"
no_lease_8() { kill -0 "${PID[s5]}" && [ "$(probe 5305 --sockets 8 | field no_lease)" = 8 ]; }
check "  it runs, answering NO_LEASE" sys_wait_for 10 no_lease_8
sys_stop "${PID[s5]}"
sys_stop "${PID[s3]}"
sys_stop "${PID[s4]}"

# ---- ZooKeeper down at start: with and without a cache ----
echo "[${SECONDS}s]ZooKeeper down at start: with and without a cache ----"
sock s6 5306 /f1 --set fleet.lease_ms=60000
check "s6 answers" until_ok 15 5306
W6=$(workers_of 5306)
# a crash (a graceful stop releases its IDs since issue 50): the leases and the cache stay
sys_stop "${PID[s6]}" KILL
check "s6 wrote its cache" grep -q "^slot=1 worker=" "$SYS_TMP/s6.cache"
for _ in $(seq 40); do # until its session is gone (a session timeout, 4 s)
	sys_in_ns "$FLAKECTL" fleet check --zk "$REG_CONNECT" --root /f1 --warn-ms 1000 --timeout 15000 >"$SYS_TMP/check" 2>&1
	rc=$?
	grep -q "owner s6 has no live session" "$SYS_TMP/check" && break
	sleep 0.25
done
sed 's/^/  /' "$SYS_TMP/check" | grep s6
check "fleet check: a stopped owner whose lease runs is a problem (exit 1)" test "$rc" -eq 1
check "  naming it" grep -q "owner s6 has no live session" "$SYS_TMP/check"
reg_stop_all
sock s6 5306 /f1 --set fleet.lease_ms=60000
sock s7 5307 /f1 --set fleet.cache_file=
check "ZooKeeper down, cache: s6 issues" until_ok 15 5306
check "with its cached worker IDs" test "$(workers_of 5306)" = "$W6"
check "s6 said it started from the cache" grep -q "starting from the cache" "$SYS_TMP/s6.log"
sleep 0.5
out=$(probe 5307 --sockets 8)
check "ZooKeeper down, no cache: s7 answers NO_LEASE ($out)" test "$(echo "$out" | field no_lease)" = 8
check "s7 said why once" test "$(grep -c 'no worker ID is held' "$SYS_TMP/s7.log")" -eq 1
for i in 1 2 3; do reg_start_one "$i"; done
reg_wait_ready 40
check "s7 claims once ZooKeeper is back" until_ok 20 5307
check "s6 keeps issuing (renewed its cached claims)" until_ok 5 5306
sleep 1
check "s6 lost nothing" test "$(grep -c 'taken over' "$SYS_TMP/s6.log")" -eq 0
# issue 38: releasing a live owner's ID is refused without --force; forced,
# `fleet check` is not OK while the old owner may still issue under it
W7=$(workers_of 5307 | cut -d, -f1)
sys_in_ns "$FLAKECTL" fleet release "$W7" --zk "$REG_CONNECT" --root /f1 --timeout 15000 \
	>"$SYS_TMP/rel" 2>&1
rc=$?
cat "$SYS_TMP/rel"
check "release of live s7's worker $W7: refused (exit 1), naming s7" \
	sh -c "[ $rc -eq 1 ] && grep -q 'is held by s7, alive' '$SYS_TMP/rel'"
check "release --force goes through" sys_in_ns "$FLAKECTL" fleet release "$W7" --force \
	--zk "$REG_CONNECT" --root /f1 --timeout 15000
sys_in_ns "$FLAKECTL" fleet check --zk "$REG_CONNECT" --root /f1 --warn-ms 1000 --timeout 15000 \
	>"$SYS_TMP/check2" 2>&1
rc=$?
grep "worker $W7" "$SYS_TMP/check2"
check "fleet check after it: not OK (exit 1), the released ID named" \
	sh -c "[ $rc -eq 1 ] && grep -q 'PROBLEM worker $W7: free, but its floor is' '$SYS_TMP/check2'"
for n in s1 s2 s6 s7; do sys_stop "${PID[$n]}"; done

# ---- partition and takeover ----
echo "[${SECONDS}s]partition and takeover ----"
ip netns add "$NS_A" && ip -n "$NS_A" link set lo up &&
	ip link add "$VZ" netns "$SYS_NS" type veth peer name "$VA" netns "$NS_A" &&
	ip -n "$SYS_NS" addr add 10.251.0.1/24 dev "$VZ" && ip -n "$SYS_NS" link set "$VZ" up &&
	ip -n "$NS_A" addr add 10.251.0.2/24 dev "$VA" && ip -n "$NS_A" link set "$VA" up
check "node A's namespace, veth to the ensemble" test $? -eq 0
REG_A=${REG_CONNECT//127.0.0.1/10.251.0.1}
ip netns exec "$NS_A" "$FLAKESOCK" --listen 127.0.0.1 --threads 2 --set net.udp_port=4242 \
	--set "state.file=$SYS_TMP/pa.mark" --set "$REG_KEY=$REG_A" --set fleet.root=/f3 \
	--set fleet.identity=pa --set id.datacenter=2 --set "fleet.cache_file=$SYS_TMP/pa.cache" \
	"${COMMON[@]}" >"$SYS_TMP/pa.log" 2>&1 &
PA=$!
SYS_PIDS+=("$PA")
probe_a() { ip netns exec "$NS_A" $PROBE --server 127.0.0.1:4242 "$@"; }
a_ok() { for _ in $(seq 60); do [ "$(probe_a --sockets 8 | field ok)" = 8 ] && return 0; sleep 0.25; done; return 1; }
check "node A answers with both worker IDs of a 1-bit layout" a_ok
check "node A holds workers 0 and 1" test "$(probe_a --sockets 32 | field workers)" = "0,1"
# cut_until_no_lease IDS: cut A off, collect its IDs until every reply is NO_LEASE
cut_until_no_lease() {
	local t0 out okseen=0 i
	ip -n "$SYS_NS" link set "$VZ" down
	t0=$(date +%s%3N)
	for ((i = 0; i < 80; i++)); do
		out=$(probe_a --sockets 8 --ids "$1")
		[ "$(echo "$out" | field ok)" -gt 0 ] && okseen=$(($(date +%s%3N) - t0))
		[ "$(echo "$out" | field no_lease)" = 8 ] && break
		sleep 0.1
	done
	echo "  issued for $okseen ms after the cut, then: $out"
	[ "$okseen" -gt 1000 ] && [ "$(echo "$out" | field no_lease)" = 8 ]
}
check "cut off: A keeps issuing until its lease ends, then NO_LEASE" cut_until_no_lease "$SYS_TMP/a0.ids"
ip -n "$SYS_NS" link set "$VZ" up
check "healed: A resumes by itself" a_ok
check "cut again: A issues, then NO_LEASE" cut_until_no_lease "$SYS_TMP/a.ids"
cat "$SYS_TMP/a0.ids" >>"$SYS_TMP/a.ids"
# A answers NO_LEASE from its own view of the lease, which ends before the
# registry's (its margin); B refuses to start while A's records are live, so
# it starts once the registry shows them ended (at load, that took longer than
# B's start and B exited: the check below then polled a dead port).
a_ended() {
	sys_in_ns "$FLAKECTL" fleet ls --zk "$REG_CONNECT" --root /f3 --timeout 5000 >"$SYS_TMP/ls3" 2>&1
	grep -q "^0 of 1024 worker IDs owned" "$SYS_TMP/ls3"
}
t_end=$((SECONDS + 30))
until a_ended; do
	[ "$SECONDS" -lt "$t_end" ] || { sed 's/^/  /' "$SYS_TMP/ls3"; echo "  A's leases still owned in the registry after 30 s"; break; }
	sleep 0.2
done
sock pb 5310 /f3 --set id.datacenter=2
# sock_ok NAME PORT: until node NAME answers, but no longer than it lives (an
# exited node answers nothing)
sock_ok() {
	local i
	for ((i = 0; i < 80; i++)); do
		kill -0 "${PID[$1]}" 2>/dev/null || { echo "  $1 exited: $(tail -n 2 "$SYS_TMP/$1.log")"; return 1; }
		[ "$(probe "$2" --sockets 8 | field ok)" = 8 ] && return 0
		sleep 0.25
	done
	return 1
}
check "node B takes both worker IDs over" sock_ok pb 5310
for _ in 1 2 3 4; do probe 5310 --sockets 16 --ids "$SYS_TMP/b.ids" >/dev/null; done
grep -q "taken over for slot .*from pa" "$SYS_TMP/pb.log"
check "B logged the takeover from A" test $? -eq 0
order_proof() {
	/usr/bin/python3 - "$SYS_TMP/a.ids" "$SYS_TMP/b.ids" <<'PY'
import sys
a = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
b = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
ids = [i for _, i in a + b]
dup = len(ids) - len(set(ids))
ok = dup == 0 and a and b
for w in (0, 1):
    aw = [i for x, i in a if x == w]
    bw = [i for x, i in b if x == w]
    print("  worker %d: %d IDs from A (max %s), %d from B (min %s)" % (
        w, len(aw), max(aw) if aw else "-", len(bw), min(bw) if bw else "-"))
    if not aw or not bw or min(bw) <= max(aw):
        ok = False
print("  %d IDs, %d duplicates" % (len(ids), dup))
sys.exit(0 if ok else 1)
PY
}
check "no duplicate; every worker's IDs from B are above A's" order_proof
ip -n "$SYS_NS" link set "$VZ" up
lost_a() { for _ in $(seq 40); do grep -q "was taken over by pb" "$SYS_TMP/pa.log" && return 0; sleep 0.25; done; return 1; }
check "healed A sees its renewal fail (taken over by pb)" lost_a
out=$(probe_a --sockets 8)
check "and keeps answering NO_LEASE (no free worker ID) ($out)" test "$(echo "$out" | field no_lease)" = 8
kill -TERM "$PA"
wait "$PA" 2>/dev/null

# ---- a forced release of a cut-off node's worker ID, claimed by another node ----
# Issue 38's argument: a released ID's next holder issues only above the floor
# the release wrote (the holder's confirmed lease), and the holder issues under
# it at most until then. The two processes that could issue one ID: node C, cut
# off from the registry (so it never learns of the release and issues on its
# worker W until its own lease ends, 6 s), and node D, the only node needing an
# ID, which claims W as soon as it is free and is asked alongside C all the
# while. Every ID of both is collected: none twice, D's on W all above C's.
echo "[${SECONDS}s]forced release of a cut-off node's worker ID, claimed by another ----"
ip netns exec "$NS_A" "$FLAKESOCK" --listen 127.0.0.1 --threads 2 --set net.udp_port=4242 \
	--set "state.file=$SYS_TMP/pc.mark" --set "$REG_KEY=$REG_A" --set fleet.root=/f4 \
	--set fleet.identity=pc --set id.datacenter=3 --set fleet.cache_file= \
	"${COMMON[@]}" --set fleet.lease_ms=6000 >"$SYS_TMP/pc.log" 2>&1 &
PC=$!
SYS_PIDS+=("$PC")
check "node C answers with both worker IDs of a 1-bit layout" a_ok
check "node C holds workers 0 and 1" test "$(probe_a --sockets 32 | field workers)" = "0,1"
probe_a --sockets 16 --ids "$SYS_TMP/c.ids" >/dev/null
ip -n "$SYS_NS" link set "$VZ" down
check "C cut off: worker 1 released with --force (C's session not yet expired)" \
	sys_in_ns "$FLAKECTL" fleet release 1 --force --zk "$REG_CONNECT" --root /f4 --timeout 15000
THREADS=1 sock pd 5313 /f4 --set id.datacenter=3
# C issues on worker 1 under its lease (it cannot hear of the release) until
# the lease ends; D is asked all along and must not issue below any of it.
overlap() {
	local i out dout n1=0 nd=0
	for ((i = 0; i < 150; i++)); do
		out=$(probe_a --sockets 8 --ids "$SYS_TMP/c_after.ids")
		dout=$(probe 5313 --sockets 8 --ids "$SYS_TMP/d.ids")
		[ "$(echo "$out" | field no_lease)" = 8 ] && break
		sleep 0.05
	done
	[ -f "$SYS_TMP/c_after.ids" ] && n1=$(awk '$1 == 1' "$SYS_TMP/c_after.ids" | wc -l)
	[ -f "$SYS_TMP/d.ids" ] && nd=$(wc -l <"$SYS_TMP/d.ids")
	echo "  C issued $n1 IDs on worker 1 after its release, then: $out"
	echo "  D meanwhile issued $nd, its last answer: $dout"
	[ "$n1" -gt 0 ] && [ "$(echo "$out" | field no_lease)" = 8 ]
}
check "C keeps issuing on worker 1 after the release, until its lease ends" overlap
cat "$SYS_TMP/c_after.ids" >>"$SYS_TMP/c.ids"
check "node D claims the released worker 1 and issues" sock_ok pd 5313
for _ in 1 2 3 4; do probe 5313 --sockets 16 --ids "$SYS_TMP/d.ids" >/dev/null; done
release_proof() {
	/usr/bin/python3 - "$SYS_TMP/c.ids" "$SYS_TMP/d.ids" <<'PY'
import sys
c = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
d = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
ids = [i for _, i in c + d]
dup = len(ids) - len(set(ids))
c1 = [i for w, i in c if w == 1]
dw = sorted({w for w, _ in d})
print("  worker 1: %d IDs from C (max %s), %d from D (min %s); D's workers %s; %d IDs, %d duplicates" % (
    len(c1), max(c1) if c1 else "-", len(d), min(i for _, i in d) if d else "-", dw, len(ids), dup))
sys.exit(0 if dup == 0 and c1 and d and dw == [1] and min(i for _, i in d) > max(c1) else 1)
PY
}
check "no duplicate; D holds worker 1 only, its IDs above every one C issued on it" release_proof
kill -TERM "$PC"
wait "$PC" 2>/dev/null
ip -n "$SYS_NS" link set "$VZ" up
sys_done
