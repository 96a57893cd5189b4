#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two worker lcores on a TAP port with two queues: requests from many source
# ports reach both, each answers with its own worker ID, no ID repeats.
. "$(dirname "$0")/lib.sh"
fw_setup lcores
fw_start 0,1 --set id.workers=7,9
grep -q "2 queue(s)" "$TMP/fw.log" || fail "port not set up with 2 queues"

# net_tap learns of a frame by a realtime signal, handled by whichever thread
# the kernel picks among those not blocking it: one inside a slow system call
# (the keeper's fsync on a busy disk) handled it late, and requests waited a
# second. Only the lcores (the main thread and rte-worker-N) may take it.
"$PY" - "$FW_PID" <<'PY' || fail "a thread other than the lcores can take net_tap's signal"
import os, signal, sys
pid = sys.argv[1]
def mask(path, key):
    for line in open(path):
        if line.startswith(key + ":"):
            return int(line.split()[1], 16)
caught = mask(f"/proc/{pid}/status", "SigCgt")
rt = [s for s in range(signal.SIGRTMIN + 1, signal.SIGRTMAX + 1) if caught >> (s - 1) & 1]
if not rt:
    sys.exit(f"no realtime signal handler in {pid}: is the port not net_tap?")
bad = []
for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
    comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
    blk = mask(f"/proc/{pid}/task/{tid}/status", "SigBlk")
    lcore = tid == pid or comm.startswith(("rte-worker-", "lcore-worker-"))
    blocked = all(blk >> (s - 1) & 1 for s in rt)
    print(f"thread {tid} {comm}: {'lcore' if lcore else 'other'}, signal {rt} {'blocked' if blocked else 'open'}")
    if lcore == blocked:
        bad.append(comm)
sys.exit(f"wrong mask in: {bad}" if bad else 0)
PY

sports=$(seq -s, 40001 40032)
fw_client get --op list --count 20 --repeat 128 --sports "$sports" --workers >"$TMP/ids" ||
	fail "get"
workers=$(cut -d' ' -f1 "$TMP/ids" | sort -u | tr '\n' ' ')
echo "workers answering: $workers"
[ "$workers" = "7 9 " ] || fail "expected workers 7 and 9 to answer, got: $workers"
[ "$(wc -l <"$TMP/ids")" -eq 2560 ] || fail "expected 2560 IDs"
dups=$(cut -d' ' -f2 "$TMP/ids" | sort -n | uniq -d | wc -l)
[ "$dups" -eq 0 ] || fail "$dups duplicate IDs"
# each worker's IDs increase in the order it issued them
for w in 7 9; do
	awk -v w="$w" '$1 == w { print $2 }' "$TMP/ids" | sort -n -c ||
		fail "worker $w: IDs not increasing"
done
# flakectl bench from 4 client sockets, every ID kept: no duplicate, per
# worker increasing (bench exits 1 otherwise), none seen before either.
ip netns exec "$NS" "$FLAKECTL" bench --server 10.77.0.2:4242 --concurrency 4 \
	--requests 4000 --duration 10 --out "$TMP/bench_ids" >"$TMP/bench.log" 2>&1 ||
	fail "flakectl bench reported a problem: $(tail -n 3 "$TMP/bench.log")"
[ "$(wc -l <"$TMP/bench_ids")" -ge 3900 ] || fail "bench collected too few IDs"
dups=$( (cut -d' ' -f2 "$TMP/ids"; cat "$TMP/bench_ids") | sort -n | uniq -d | wc -l)
[ "$dups" -eq 0 ] || fail "$dups IDs from bench repeat earlier IDs"
tel=$(fw_tel /flakewire/lcores) || fail "telemetry"
for l in lcore0 lcore1; do
	r=$(fw_json "$tel" "[\"/flakewire/lcores\"][\"$l\"][\"requests\"]")
	[ "$r" -gt 0 ] || fail "$l answered no request"
done
fw_stop TERM || fail "exit status $?"
echo "PASS: 2560 IDs from workers $workers, no duplicates"
