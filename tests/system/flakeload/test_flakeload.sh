#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakeload end to end: flakewire and flakeload over memif (no hugepages, no
# NIC), started, bounded and stopped by scripts/lib/bench.sh exactly as
# scripts/bench/performance.sh runs them, with every kind of request (ID,
# LIST, RANGE, INFO) at a fixed rate for 2 s. From flakeload's exit status and
# JSON summary: no violation (every ID unique, increasing per worker, within
# the time bound of the clock, and every reply carrying the count asked for,
# fewer only when flagged PARTIAL), every request answered in time, every
# kind answered OK, and exactly the IDs asked for: one per ID request,
# --count (10) per LIST and RANGE answered OK, so a LIST or RANGE reply
# flakeload's verifier skipped or miscounted fails the test.
#
# What a loaded machine may change, and what it may not: a stalled flakeload
# catches up on its rate in one burst, which can ask one millisecond for more
# IDs than it has; flakewire then answers RETRY_AFTER (no IDs) or fewer IDs
# with PARTIAL, as the protocol says, so those are allowed. No request may go
# unanswered: the window (512 outstanding) is below memif's ring (1024
# slots), so flakewire's replies always fit the ring flakeload reads, however
# long flakeload is stalled (with 4096 outstanding, CI lost 45 of 100,000).
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
# a rate far below one core's, a window below the memif ring (see above),
# timeouts at 1 s
run_pair "$(load_cmd flakewire "$sock" 1 "$json" \
	"--mix id:4,list:3,range:2,info:1 --count 10 --rate 50000 --window 512 --timeout-ms 1000 --duration $DURATION")" \
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
ok = {k: s["ok_" + k] for k in ("id", "list", "range", "info")}
want = ok["id"] + 10 * (ok["list"] + ok["range"])
print("sent %d (id %d, list %d, range %d, info %d), replies %d, status %s, timeouts %d, late %d,"
      " partial %d; OK (id %d, list %d, range %d, info %d) asked %d IDs (want %d), got %d,"
      " verified %d from %d worker(s), violations %d" % (
          s["sent"], s["sent_id"], s["sent_list"], s["sent_range"], s["sent_info"], s["replies"],
          {k: n for k, n in s["status"].items() if n}, s["timeouts"], s["late"], s["partial"],
          ok["id"], ok["list"], ok["range"], ok["info"], s["ids_asked"], want, s["ids"], v["ids"],
          v["workers"], s["violations"]))
checks = [
    ("every kind of request sent, and answered OK", min(ok.values()) > 0 and
     min(s["sent_id"], s["sent_list"], s["sent_range"], s["sent_info"]) > 0),
    ("every request answered, none late or lost",
     s["replies"] == s["sent"] and s["timeouts"] == 0 and s["late"] == 0),
    ("every answer OK, or RETRY_AFTER to a burst",
     s["status"]["ok"] + s["status"]["retry-after"] == s["replies"] and
     sum(ok.values()) == s["status"]["ok"]),
    ("exactly the IDs asked for: 1 per ID, 10 per LIST and RANGE answered OK",
     s["ids_asked"] == want and (s["ids"] == want if s["partial"] == 0 else s["ids"] < want)),
    ("every ID verified (unique, increasing per worker, in time)", v["ids"] == s["ids"] and v["ids_unchecked"] == 0),
    ("no violation (bad_reply: a count other than asked without PARTIAL)",
     s["violations"] == 0 and all(v[k] == 0 for k in (
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
