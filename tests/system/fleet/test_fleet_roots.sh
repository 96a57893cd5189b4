#!/usr/bin/env bash
# One ID space per store (issue 48, case 2), flakesock and flakectl against
# one registry (ZooKeeper or etcd by FW_STORE, registry.sh) in the test's
# namespace:
# - a node with a store and no [fleet] root refuses to start, naming the key;
# - a node on a root nobody made refuses, naming it (nodes never create one),
#   and the store holds no such root afterwards;
# - `flakectl fleet init` makes a root; again with the same terms it changes
#   nothing and exits 0; roots /bars/one and /bars/two with the same
#   datacenter value: the second init refuses, naming the first; another
#   layout in the same store is refused; another datacenter value is taken;
# - a node whose [id] datacenter differs from its root's refuses, both named;
# - a static node ([fleet] static = yes) whose worker ID the root does not
#   reserve refuses; a reserved one starts, and the fleet's claims never take
#   the reserved IDs: two fleet nodes (2 threads each) on /bars/one (0-1
#   reserved) and /bars/two and the static node: every ID distinct.
# usage: test_fleet_roots.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
. "$HERE/node.sh"

reg_test roots
ctl() { sys_in_ns "$FLAKECTL" fleet "$@" --timeout 15000; }

COMMON=(--set stats.interval_s=0 --set state.mark_ahead_ms=1000 --set "state.lock_dir=$SYS_TMP/locks"
	--set fleet.session_timeout_ms=4000 --set fleet.start_wait_ms=5000
	--set fleet.lease_ms=6000 --set fleet.renew_ms=1000 --set id.datacenter_bits=1)
# refused NAME PATTERN ARGS...: flakesock with ARGS exits non-zero within 30 s, its output
# matching PATTERN
refused() {
	local name=$1 pat=$2 rc
	shift 2
	sys_in_ns timeout 30 "$FLAKESOCK" --listen 127.0.0.1 --threads 1 --set net.udp_port=5499 \
		--set "state.file=$SYS_TMP/$name.mark" "${COMMON[@]}" "$@" >"$SYS_TMP/$name.log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || ! grep -q -- "$pat" "$SYS_TMP/$name.log"; then
		echo "  exit $rc; log:"
		sed 's/^/    /' "$SYS_TMP/$name.log" | tail -5
		return 1
	fi
	grep -m1 -- "$pat" "$SYS_TMP/$name.log" | sed 's/^/  /'
}
# sock NAME PORT ARGS...: flakesock NAME (2 threads) in the namespace
sock() {
	local name=$1 port=$2
	shift 2
	sys_start "$SYS_TMP/$name.log" "$FLAKESOCK" --listen 127.0.0.1 --threads "${THREADS:-2}" \
		--set "net.udp_port=$port" --set "state.file=$SYS_TMP/$name.mark" --set "$REG_SET" \
		--set "fleet.identity=$name" --set "fleet.cache_file=$SYS_TMP/$name.cache" \
		"${COMMON[@]}" "$@"
}
# init EXPECTED_EXIT PATTERN ARGS...: flakectl fleet init ARGS, its exit and output
init() {
	local want=$1 pat=$2 out rc
	shift 2
	out=$(ctl init "${STORE[@]}" "$@" 2>&1)
	rc=$?
	echo "  $out" | head -2
	[ "$rc" -eq "$want" ] && echo "$out" | grep -q -- "$pat"
}

echo "[${SECONDS}s] no implicit root ----"
check "a node with a store and no [fleet] root refuses, naming the key" \
	refused noroot "\[fleet\] root: not set" --set "$REG_SET"
check "a node on a root nobody made refuses, naming it" \
	refused uninit "no fleet root /bars/one" --set "$REG_SET" --set fleet.root=/bars/one \
	--set fleet.identity=u
no_root() { # no_root ROOT: fleet ls says there is none (exit 1, not 3: the store answered)
	local rc
	ctl ls "${STORE[@]}" --root "$1" >"$SYS_TMP/ls.out" 2>&1
	rc=$?
	[ "$rc" -eq 1 ] && grep -q "no flakewire fleet at $1" "$SYS_TMP/ls.out" || { cat "$SYS_TMP/ls.out"; return 1; }
}
check "  and the store holds no root /bars/one (a node never creates one)" no_root /bars/one

echo "[${SECONDS}s] flakectl fleet init ----"
check "init /bars/one (datacenter 0, 0-1 reserved): created" \
	init 0 "created" --root /bars/one --set id.datacenter_bits=1 --reserve 0-1
check "init /bars/one again with the same terms: exit 0, unchanged" \
	init 0 "unchanged" --root /bars/one --set id.datacenter_bits=1 --reserve 0-1
check "init /bars/two with datacenter 0 too: refused, naming /bars/one" \
	init 1 "datacenter value 0 is root /bars/one's" --root /bars/two --set id.datacenter_bits=1
check "init /bars/two with another layout: refused" \
	init 1 "every root of one store shares one layout" --root /bars/two \
	--set id.datacenter_bits=1 --set id.worker_bits=9 --set id.datacenter=1
check "a node on /bars/two (not made) still refuses" \
	refused two "no fleet root /bars/two" --set "$REG_SET" --set fleet.root=/bars/two \
	--set id.datacenter=1 --set fleet.identity=t
check "init /bars/two with datacenter 1: created" \
	init 0 "created" --root /bars/two --set id.datacenter_bits=1 --set id.datacenter=1
check "a node with [id] datacenter 1 on /bars/one (datacenter 0) refuses, both named" \
	refused dcwrong "/bars/one serves datacenter value 0; this node has \[id\] datacenter = 1" \
	--set "$REG_SET" --set fleet.root=/bars/one --set id.datacenter=1 --set fleet.identity=w

echo "[${SECONDS}s] static nodes beside the fleet ----"
check "a static node whose worker ID (5) /bars/one does not reserve refuses" \
	refused st5 "static worker 5 is not reserved in /bars/one (reserved: '0-1')" \
	--set "$REG_SET" --set fleet.root=/bars/one --set fleet.static=yes --set id.worker_base=5
check "a static node with worker 0 on /bars/two (no reservation) refuses" \
	refused st0two "static worker 0 is not reserved in /bars/two" \
	--set "$REG_SET" --set fleet.root=/bars/two --set fleet.static=yes --set id.datacenter=1
sock a 5401 --set fleet.root=/bars/one --set metrics.listen=127.0.0.1:9871
sock b 5402 --set fleet.root=/bars/two --set id.datacenter=1
THREADS=1 sock s0 5403 --set fleet.root=/bars/one --set fleet.static=yes --set id.worker_base=0
THREADS=1 sock s1 5404 --set fleet.root=/bars/one --set fleet.static=yes --set id.worker_base=1
check "fleet node a (/bars/one) answers" until_ok 20 5401 8
check "fleet node b (/bars/two) answers" until_ok 20 5402 8
check "static node s0 (worker 0, reserved) answers" until_ok 20 5403 4
check "static node s1 (worker 1, reserved) answers" until_ok 20 5404 4
WA=$(probe 5401 --sockets 32 | field workers)
WB=$(probe 5402 --sockets 32 | field workers)
echo "  a: workers $WA; b: workers $WB"
check "a claimed two worker IDs, neither reserved (0, 1)" \
	bash -c '[ "$(echo "$1" | tr , "\n" | grep -c .)" -eq 2 ] && ! echo ",$1," | grep -qE ",(0|1),"' _ "$WA"
: >"$SYS_TMP/ids"
for p in 5401 5402 5403 5404; do
	probe "$p" --sockets 16 --rounds 20 --count 50 --ids "$SYS_TMP/ids.$p" >/dev/null
	awk '{print $2}' "$SYS_TMP/ids.$p" >>"$SYS_TMP/ids"
done
echo "  $(wc -l <"$SYS_TMP/ids") IDs from a, b, s0, s1"
check "every ID from the two roots' fleets and the static nodes is distinct" ids_unique "$SYS_TMP/ids"
check "  from all four" bash -c 'for p in 5401 5402 5403 5404; do [ -s "$1/ids.$p" ] || exit 1; done' _ "$SYS_TMP"
# one census (issue 50): fleet ls and a node's gauges count with one function, so the
# reserved IDs are neither claimable nor free in either
LS=$(ctl ls "${STORE[@]}" --root /bars/one)
echo "$LS" | sed 's/^/  /'
M=$(sed -n 's/^[0-9]* of \([0-9]*\) worker IDs owned.*/\1/p' <<<"$LS")
check "fleet ls /bars/one: of ${M:-?} IDs, 2 reserved, $((${M:-0} - 2)) claimable, a's 2 held, $((${M:-0} - 4)) free" \
	grep -Eq "^free: $((${M:-0} - 4)) .*; stranded: 0 .*; $((${M:-0} - 2)) claimable, 2 reserved for static nodes, 0 garbled" <<<"$LS"
check "a's /metrics counts the same: $((${M:-0} - 4)) free, $((${M:-0} - 2)) in all" \
	test "$(metric 9871 flakewire_fleet_free_worker_ids) $(metric 9871 flakewire_fleet_worker_ids)" = "$((${M:-0} - 4)) $((${M:-0} - 2))"
sys_done
