#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakeload end to end: flakewire and flakeload over memif (no hugepages, no
# NIC), started, bounded and stopped by scripts/lib/bench.sh exactly as
# scripts/bench/performance.sh runs them, with every kind of request (ID,
# LIST, RANGE, INFO) at a fixed rate for 2 s. From flakeload's exit status and
# JSON summary: no violation (every ID unique, increasing per worker, within
# the time bound of the clock), every request answered OK and in time, and
# exactly the IDs asked for: one per ID request, --count (10) per LIST and
# RANGE, so a LIST or RANGE reply flakeload's verifier skipped or miscounted
# fails the test.
# usage: test_flakeload.sh FLAKEWIRE FLAKELOAD
set -u
FLAKEWIRE=${1:?flakewire binary}
FLAKELOAD=${2:?flakeload binary}
[ "$(id -u)" -eq 0 ] || { echo "FAIL: needs root (DPDK's runtime directory)"; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "FAIL: needs 2 cores (responder on 0, load on 1)"; exit 1; }
# what scripts/lib/bench.sh reads
TMP=$(mktemp -d /tmp/fwt-flakeload.XXXXXX)
PIDS=()
EAL="--no-huge --no-pci --no-shconf -m 512"
SUT_CORE=0
LOAD_CORE=1
DURATION=2
TESTPMD=""
PY=/usr/bin/python3
KEEP_LOGS=0
BENCH_NAME=test_flakeload
. "$(dirname "$0")/../../../scripts/lib/bench.sh"
trap bench_cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$TMP/locks"

sock=$TMP/r1.sock
json=$TMP/load.json
# a rate far below one core's (no PARTIAL, no timeout on a loaded machine),
# timeouts at 1 s
run_pair "$(load_cmd flakewire "$sock" 1 "$json" \
	"--mix id:4,list:3,range:2,info:1 --count 10 --rate 50000 --timeout-ms 1000 --duration $DURATION")" \
	"$(sut_cmd flakewire "$sock" 1 "")" "$TMP/r1" "$sock"
fail() {
	echo "FAIL: $*"
	for f in "$TMP"/r1.load.log "$TMP"/r1.sut.log; do
		[ -f "$f" ] && { echo "---- $f"; tail -n 25 "$f"; }
	done
	exit 1
}
[ "$SUT_DIED" = 0 ] || fail "flakewire exited before it was stopped"
case $STOP_RC in 0 | 143) ;; *) fail "flakewire stopped with status $STOP_RC" ;; esac
[ "$PAIR_RC" = 0 ] || fail "flakeload exited $PAIR_RC (1: a violation, 2: set-up, 3: no reply, 124: overran)"
[ -s "$json" ] || fail "flakeload wrote no summary"
"$PY" - "$json" <<'PY' || fail "flakeload's summary"
import json, sys
s = json.load(open(sys.argv[1]))
v = s["verify"]
want = s["sent_id"] + 10 * (s["sent_list"] + s["sent_range"])
print("sent %d (id %d, list %d, range %d, info %d), replies %d, status ok %d, timeouts %d, late %d,"
      " partial %d; IDs %d (want %d), verified %d from %d worker(s), violations %d" % (
          s["sent"], s["sent_id"], s["sent_list"], s["sent_range"], s["sent_info"], s["replies"],
          s["status"]["ok"], s["timeouts"], s["late"], s["partial"], s["ids"], want, v["ids"],
          v["workers"], s["violations"]))
checks = [
    ("every kind of request sent", min(s["sent_id"], s["sent_list"], s["sent_range"], s["sent_info"]) > 0),
    ("every request answered OK, none late or lost",
     s["replies"] == s["sent"] == s["status"]["ok"] and s["timeouts"] == 0 and s["late"] == 0),
    ("no PARTIAL reply", s["partial"] == 0),
    ("exactly the IDs asked for: 1 per ID, 10 per LIST and RANGE", s["ids"] == want),
    ("every ID verified (unique, increasing per worker, in time)", v["ids"] == s["ids"] and v["ids_unchecked"] == 0),
    ("no violation", s["violations"] == 0 and all(v[k] == 0 for k in (
        "duplicate", "not_increasing", "time_out_of_bound", "worker_mismatch", "negative",
        "misaddressed", "bad_reply"))),
]
bad = 0
for name, ok in checks:
    print("%-4s %s" % ("ok" if ok else "FAIL", name))
    bad += not ok
sys.exit(1 if bad else 0)
PY
echo "PASS"
