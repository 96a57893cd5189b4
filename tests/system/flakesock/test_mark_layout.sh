#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The mark fences one layout, and once written it is never silently lost
# (issue 48, cases 3 and 4; lib/mark/fw_mark.h).
#  - flakesock loaded, stopped, restarted on its mark with [id] epoch_ms 5 s
#    later: it refuses (exit 1), naming both layouts and the file (before,
#    its IDs at t equalled those of t - 5 s). After `flakectl mark FILE
#    --convert --set id.epoch_ms=...` it starts, and under load again no ID
#    of the second run equals one of the first.
#  - The mark deleted beside its lock file: the restart exits 1 within
#    seconds naming the file (before: a silent first start); `flakectl mark
#    FILE --set now` refuses without --force.
# usage: test_mark_layout.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
. "$(dirname "$0")/../lib.sh"
sys_init marklayout

M=$SYS_TMP/state/mark
E0=1767225600000 # the default epoch
E1=$((E0 + 5000))
common=(--threads 1 --set stats.interval_s=0 --set "state.lock_dir=$SYS_TMP/locks"
	--set clock.calibrate_ms=200 --set "state.file=$M")
ctl() { sys_in_ns "$FLAKECTL" "$@"; }
now_ms() { date +%s%3N; }

# load NAME [SECS]: 2 s of LIST requests (100 IDs each); every ID to $SYS_TMP/NAME.ids
load() {
	ctl bench --server 127.0.0.1:4242 --duration "${2:-2}" --count 100 --rate 1000 \
		--out "$SYS_TMP/$1.ids" >"$SYS_TMP/$1.bench" 2>&1
	echo "run $1: $(wc -l <"$SYS_TMP/$1.ids") IDs"
}

# refuses NAME LOG [options...]: flakesock exits non-zero within 10 s. One
# that serves instead is stopped at once (before this change it served: the
# sooner the second run starts, the more of its IDs meet the first run's).
refuses() {
	local name=$1 log=$2 rc i
	shift 2
	sys_start "$log" "$FLAKESOCK" "${common[@]}" "$@"
	local pid=$SYS_LAST_PID
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		if ctl info --server 127.0.0.1:4242 --timeout 100 >/dev/null 2>&1; then
			sys_stop "$pid" TERM
			echo "$name: it serves"
			return 1
		fi
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		sys_stop "$pid" TERM
		echo "$name: still running after 10 s"
		return 1
	fi
	wait "$pid"
	rc=$?
	echo "$name: exit status $rc"
	[ "$rc" -ne 0 ]
}

# run 1: a first start on an empty state, loaded
sys_start "$SYS_TMP/a.log" "$FLAKESOCK" "${common[@]}"
A=$SYS_LAST_PID
check "the first start serves" sys_wait_for 10 ctl info --server 127.0.0.1:4242 --timeout 100
load a
sys_stop "$A" TERM
check "the first run issued IDs" [ -s "$SYS_TMP/a.ids" ]
check "its mark records its layout" \
	grep -qx "epoch_ms $E0" "$M"

# the epoch 5 s later over that mark
check "a restart with the epoch 5 s later refuses" \
	refuses epoch "$SYS_TMP/b.log" --set "id.epoch_ms=$E1"
cat "$SYS_TMP/b.log"
check "naming the file and both layouts" \
	grep -q "mark: $M fences the ID layout epoch_ms $E0 datacenter_bits 0 worker_bits 10 sequence_bits 12 datacenter 0, this start has epoch_ms $E1 datacenter_bits 0 worker_bits 10 sequence_bits 12 datacenter 0; refusing to start" \
	"$SYS_TMP/b.log"
old=$("$FLAKECTL" mark "$M" | awk '{print $3}')
check "flakectl mark --convert to the new epoch" \
	"$FLAKECTL" mark "$M" --convert --set "id.epoch_ms=$E1"
new=$("$FLAKECTL" mark "$M" | awk '{print $3}')
echo "mark $old in epoch $E0 -> $new in epoch $E1"
check "the converted mark is 5 s later (same widths)" [ "$new" = "$((old + 5000))" ]

# run 2 on the converted mark, loaded from the first run's first ms plus 5 s on:
# where its IDs met the first run's before this change (the probe's 835,499
# duplicates). Now it answers RETRY_AFTER until the clock passes the converted
# mark (the first run's last ms plus 5 s), and issues after.
sys_start "$SYS_TMP/c.log" "$FLAKESOCK" "${common[@]}" --set "id.epoch_ms=$E1"
C=$SYS_LAST_PID
check "the converted mark starts" sys_wait_for 10 ctl info --server 127.0.0.1:4242 --timeout 100
first=$((($(sort -n "$SYS_TMP/a.ids" | head -n 1) >> 22) + E0))
wait_ms=$((first + 5000 - $(now_ms)))
[ "$wait_ms" -gt 0 ] && sleep "$(printf '%d.%03d' $((wait_ms / 1000)) $((wait_ms % 1000)))"
load c 4
sys_stop "$C" TERM
check "the second run issued IDs" [ -s "$SYS_TMP/c.ids" ]
both=$(sort -u "$SYS_TMP/a.ids" | comm -12 - <(sort -u "$SYS_TMP/c.ids") | wc -l)
echo "IDs issued by both runs: $both"
check "no ID of the second run equals one of the first" [ "$both" -eq 0 ]
check "every ID of the second run is above every ID of the first" \
	ids_all_above "$SYS_TMP/a.ids" "$SYS_TMP/c.ids"

# the mark deleted beside its lock file
rm -f "$M"
beside() { [ -e "$M.lock" ] && [ -e "$M.written" ]; }
check "the lock file and the record stay" beside
check "a restart on the deleted mark refuses" refuses lost "$SYS_TMP/d.log" --set "id.epoch_ms=$E1"
cat "$SYS_TMP/d.log"
check "naming the file" grep -q "mark: cannot read $M: a mark was written to this state and is missing; refusing to start" "$SYS_TMP/d.log"
check "and a mark to write" grep -q "flakectl mark $M --set UNIX_MS --force.* at least [0-9]" "$SYS_TMP/d.log"
"$FLAKECTL" mark "$M" --set now >"$SYS_TMP/e.log" 2>&1
rc=$?
cat "$SYS_TMP/e.log"
check "flakectl mark --set on the missing mark refuses without --force (exit 2)" [ "$rc" -eq 2 ]
check "naming the file" grep -q "$M is missing, and .written beside it says a mark was written" "$SYS_TMP/e.log"
check "and writes nothing" [ ! -e "$M" ]
sys_done
