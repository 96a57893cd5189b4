#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A bounded soak of flakewire: 2 lcores (-l 0,1, worker IDs 7 and 9) on TAP
# in a network namespace of its own, under mixed load from several clients
# (flakectl bench, 8 sockets: single IDs, LIST, RANGE; pings; junk), in chunks
# of at most 20 s. It checks:
#  - every ID received: no duplicate within a chunk (all clients together),
#    increasing per worker within each client (bench), and each worker's IDs
#    in a chunk above all its IDs of earlier chunks;
#  - the counters add up once the load stops (/flakewire/stats):
#    rx = arp + icmp + udp_replies + every drop_* (requests = replies + drops
#    by reason), tx + tx_dropped = arp + icmp + udp_replies, requests = the sum
#    of op_* = the sum of st_*; every client's answered requests and IDs are
#    at most what the responder counted;
#  - memory does not grow: mbufs in use (idle, /flakewire/stats mbuf_in_use)
#    back where they were after warm-up, no RX mbuf allocation failure
#    (/ethdev/stats rx_nombuf), VmRSS within 4 MiB of its post-warm-up value.
#
#   tests/system/faults/soak.sh [--minutes N | --seconds N] [--chunk N]
#     default 2 minutes in chunks of 20 s; needs root
#
# Binaries: FLAKEWIRE and FLAKECTL, else BUILD (default build)/app/... .
# Exits 0 when every check holds, 1 otherwise, 77 when root or TAP is missing.
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
SECONDS_TOTAL=120
CHUNK=20
while [ $# -gt 0 ]; do
	case $1 in
	--minutes) SECONDS_TOTAL=$(($2 * 60)); shift 2 ;;
	--seconds) SECONDS_TOTAL=$2; shift 2 ;;
	--chunk) CHUNK=$2; shift 2 ;;
	-h | --help) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak.sh: unknown argument $1 (--minutes N, --seconds N, --chunk N)" >&2; exit 2 ;;
	esac
done
[ "$SECONDS_TOTAL" -ge 10 ] 2>/dev/null || { echo "soak.sh: --seconds $SECONDS_TOTAL: at least 10" >&2; exit 2; }
[ "$CHUNK" -ge 5 ] 2>/dev/null || { echo "soak.sh: --chunk $CHUNK: at least 5" >&2; exit 2; }
BUILD=${BUILD:-$ROOT/build}
export FLAKEWIRE=${FLAKEWIRE:-$BUILD/app/flakewire/flakewire}
export FLAKECTL=${FLAKECTL:-$BUILD/app/flakectl/flakectl}
export WIRE_CLIENT=${WIRE_CLIENT:-$ROOT/tests/system/flakewire/wire_client.py}
export FW_SRC=$ROOT
BENCH_RATE=0 # the soak's clients: as fast as the replies come
. "$(dirname "$0")/lib.sh"

MEM_SLACK_KB=4096
faults_setup soak
# the production default: its lcores busy-poll (it runs alone, at full rate)
fw_start 0,1 --set id.workers=7,9 --set power.idle=busy
grep -q "2 queue(s)" "$TMP/fw.log" || fail "port not set up with 2 queues"
ip -n "$NS" neigh replace 10.77.0.2 lladdr "$FW_MAC" dev fw0 nud permanent

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$FW_PID/status"; }
in_use() { stats_get mbuf_in_use; }
nombuf() { fw_json "$(fw_tel /ethdev/stats,0)" '["/ethdev/stats"]["rx_nombuf"]'; }

# one chunk of mixed load for $1 seconds; IDs into $TMP/$2.{a,b,c}.ids
load() {
	local secs=$1 tag=$2 pids=() p rc=0
	bench_start "$tag.a" --duration "$secs" --concurrency 4 --timeout 200
	pids+=("$BENCH_PID")
	bench_start "$tag.b" --duration "$secs" --count 4 --concurrency 2 --timeout 200
	pids+=("$BENCH_PID")
	bench_start "$tag.c" --duration "$secs" --range --count 4 --concurrency 2 --timeout 200
	pids+=("$BENCH_PID")
	ip netns exec "$NS" ping -q -i 0.2 -w "$secs" 10.77.0.2 >"$TMP/$tag.ping" 2>&1 &
	pids+=("$!")
	FAULT_PIDS+=("$!")
	# junk: datagrams too short or with a bad magic, 20 a second (counted as drop_wire)
	ip netns exec "$NS" "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + float(sys.argv[1])
i = 0
while time.monotonic() < end:
    s.sendto(b"\0" * (8 if i % 2 else 40), ("10.77.0.2", 4242))
    i += 1
    time.sleep(0.05)' "$secs" &
	pids+=("$!")
	FAULT_PIDS+=("$!")
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	for p in a b c; do
		[ -s "$TMP/$tag.$p.json" ] || fail "$tag.$p: no summary: $(cat "$TMP/$tag.$p.err")"
		bench_clean "$tag.$p" || fail "$tag.$p: duplicate, order violation or no ID: $(cat "$TMP/$tag.$p.json")"
	done
	return $rc
}

echo "soak: ${SECONDS_TOTAL} s on lcores 0,1, chunks of ${CHUNK} s"
load 3 warm || echo "warm-up: a client exited non-zero (checked above)"
rm -f "$TMP"/warm.*.ids
sleep 0.5
rss0=$(rss_kb)
use0=$(in_use)
echo "after warm-up: VmRSS ${rss0} kB, mbufs in use ${use0}"

# per-worker highest ID of the chunks so far, kept by faultcheck-style python
STATE=$TMP/workers.max
: >"$STATE"
check_chunk() { # files...
	$PY - "$STATE" "$@" <<'PY'
import heapq, sys
state, files = sys.argv[1], sys.argv[2:]
prev = {}
for line in open(state):
    w, m = line.split()
    prev[int(w)] = int(m)
def ids(p):
    with open(p) as f:
        for l in f:
            yield int(l)
lo, hi, n, last = {}, {}, 0, None
for x in heapq.merge(*(ids(p) for p in files)):
    if x == last:
        sys.exit("duplicate ID %d across clients" % x)
    last = x
    n += 1
    w = (x >> 12) & 1023
    if w not in lo:
        lo[w] = x
    hi[w] = x
for w in lo:
    if w in prev and lo[w] <= prev[w]:
        sys.exit("worker %d: ID %d not above its earlier chunks' %d" % (w, lo[w], prev[w]))
    prev[w] = max(prev.get(w, 0), hi[w])
with open(state, "w") as f:
    for w in sorted(prev):
        f.write("%d %d\n" % (w, prev[w]))
print(n, " ".join("w%d" % w for w in sorted(lo)))
PY
}

sum_json() { # key files...
	local k=$1 t=0 f
	shift
	for f in "$@"; do
		t=$((t + $(fw_json "$(cat "$f")" "[\"$k\"]")))
	done
	echo $t
}

left=$SECONDS_TOTAL
k=0
ids_total=0
all_workers=""
while [ "$left" -gt 0 ]; do
	k=$((k + 1))
	secs=$((left < CHUNK ? left : CHUNK))
	load "$secs" "c$k" || echo "chunk $k: a client exited non-zero (checked above)"
	out=$(check_chunk "$TMP/c$k".{a,b,c}.ids) || fail "chunk $k: $out"
	read -r n workers <<<"$out"
	ids_total=$((ids_total + n))
	all_workers="$all_workers $workers"
	echo "chunk $k: ${secs} s, $n IDs unique and increasing per worker ($workers), VmRSS $(rss_kb) kB"
	rm -f "$TMP/c$k".{a,b,c}.ids
	left=$((left - secs))
done

# 8 client sockets a chunk, spread over the 2 queues by the TAP's flow hash
seen=$(echo "$all_workers" | tr ' ' '\n' | sort -u | tr '\n' ' ')
[ "$seen" = " w7 w9 " ] || fail "IDs from workers '$seen', expected w7 and w9 (both lcores)"
sleep 0.5
st=$(fw_tel /flakewire/stats) || fail "telemetry"
echo "$st"
$PY - "$st" <<'PY' || fail "the counters do not add up"
import json, sys
s = json.loads(sys.argv[1])["/flakewire/stats"]
drops = sum(v for k, v in s.items() if k.startswith("drop_"))
ops = sum(v for k, v in s.items() if k.startswith("op_"))
sts = sum(v for k, v in s.items() if k.startswith("st_"))
rules = [
    ("rx = arp + nd + icmp + udp_replies + drops", s["rx"],
     s["arp"] + s.get("nd", 0) + s["icmp"] + s["udp_replies"] + drops),
    ("tx + tx_dropped = arp + nd + icmp + udp_replies", s["tx"] + s["tx_dropped"],
     s["arp"] + s.get("nd", 0) + s["icmp"] + s["udp_replies"]),
    ("requests = sum of op_*", s["requests"], ops),
    ("requests = sum of st_*", s["requests"], sts),
]
bad = 0
for name, a, b in rules:
    print("%-45s %d = %d %s" % (name, a, b, "ok" if a == b else "MISMATCH"))
    bad += a != b
print("drops by reason:", {k: v for k, v in s.items() if k.startswith("drop_") and v})
sys.exit(1 if bad else 0)
PY
answered=$(sum_json answered "$TMP"/c*.json)
cids=$(sum_json ids "$TMP"/c*.json)
[ "$answered" -le "$(fw_json "$st" '["/flakewire/stats"]["udp_replies"]')" ] ||
	fail "clients counted $answered replies, more than the responder sent"
[ "$cids" -le "$(fw_json "$st" '["/flakewire/stats"]["ids"]')" ] ||
	fail "clients counted $cids IDs, more than the responder issued"
lc=$(fw_tel /flakewire/lcores) || fail "telemetry"
for l in lcore0 lcore1; do
	r=$(fw_json "$lc" "[\"/flakewire/lcores\"][\"$l\"][\"requests\"]")
	echo "$l: $r requests"
	[ "$r" -gt 0 ] || fail "$l answered no request"
done

rss1=$(rss_kb)
use1=$(in_use)
nb=$(nombuf)
echo "end: VmRSS ${rss1} kB (after warm-up ${rss0}), mbufs in use ${use1} (after warm-up ${use0}), rx_nombuf ${nb}"
[ "$use1" -le "$use0" ] || fail "mbufs in use grew from $use0 to $use1 (a leak)"
[ "$nb" -eq 0 ] || fail "$nb RX mbuf allocation failures (pool drained)"
[ $((rss1 - rss0)) -le "$MEM_SLACK_KB" ] || fail "VmRSS grew by $((rss1 - rss0)) kB"
fw_stop TERM || fail "exit status $?"
echo "PASS: soak ${SECONDS_TOTAL} s: $ids_total IDs, $answered replies to clients, counters add up, memory flat (VmRSS $((rss1 - rss0)) kB, mbufs $((use1 - use0)))"
