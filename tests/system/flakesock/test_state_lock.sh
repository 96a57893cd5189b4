#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One state, one process (issue 32, fw_state_lock.h): a second flakesock on
# the same state file refuses to start naming the PID that holds it (today's
# code bound the same port with SO_REUSEPORT and issued from the same mark);
# a second one with the same static worker ID on another state file refuses
# too (the host-wide lock in [state] lock_dir); another worker ID starts;
# `flakectl mark --set` is refused while the state is held and leaves the
# mark alone; after SIGKILL the kernel drops the lock and a restart on the
# same state serves above everything the first issued.
# usage: test_state_lock.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
. "$(dirname "$0")/../lib.sh"
sys_init lock

common=(--threads 1 --set stats.interval_s=0 --set "state.lock_dir=$SYS_TMP/locks"
	--set id.worker_base=5)
ctl() { sys_in_ns "$FLAKECTL" "$@"; }

sys_start "$SYS_TMP/a.log" "$FLAKESOCK" "${common[@]}" --set "state.file=$SYS_TMP/mark"
A=$SYS_LAST_PID
check "the first flakesock serves (worker 5)" sys_wait_for 10 ctl info --server 127.0.0.1:4242 --timeout 100
ctl get -n 200 --server 127.0.0.1:4242 >"$SYS_TMP/ids.a" 2>/dev/null

# the same configuration again: same state file, same port
sys_in_ns timeout 10 "$FLAKESOCK" "${common[@]}" --set "state.file=$SYS_TMP/mark" \
	>"$SYS_TMP/b.log" 2>&1
rc=$?
cat "$SYS_TMP/b.log"
check "a second flakesock on the same state refuses to start (exit 1)" [ "$rc" -eq 1 ]
check "naming the state and the PID that holds it" \
	grep -q "state $SYS_TMP/mark is locked by PID $A " "$SYS_TMP/b.log"
check "the first one still serves" ctl get --server 127.0.0.1:4242

# another state file, the same static worker ID, another port
sys_in_ns timeout 10 "$FLAKESOCK" "${common[@]}" --set "state.file=$SYS_TMP/mark2" \
	--set net.udp_port=4243 >"$SYS_TMP/c.log" 2>&1
rc=$?
cat "$SYS_TMP/c.log"
check "the same static worker ID on another state refuses to start (exit 1)" [ "$rc" -eq 1 ]
check "naming the worker ID, its lock file and the holder's PID" \
	grep -q "static worker ID 5 (datacenter 0: node field 5, 12 sequence bits) is locked by PID $A ($SYS_TMP/locks/node5-seq12.lock)" \
	"$SYS_TMP/c.log"

# another worker ID on another state serves beside it
sys_start "$SYS_TMP/d.log" "$FLAKESOCK" --threads 1 --set stats.interval_s=0 \
	--set "state.lock_dir=$SYS_TMP/locks" --set id.worker_base=6 \
	--set "state.file=$SYS_TMP/mark3" --set net.udp_port=4244
D=$SYS_LAST_PID
check "another worker ID on its own state serves beside it" \
	sys_wait_for 10 ctl info --server 127.0.0.1:4244 --timeout 100
sys_stop "$D" TERM

# outside the container images ([state] lock_dir_mount = no, the default) the
# default [id] still serves worker 0, its lock in a plain directory (issue 48)
sys_start "$SYS_TMP/z.log" "$FLAKESOCK" --threads 1 --set stats.interval_s=0 \
	--set "state.lock_dir=$SYS_TMP/locks" --set "state.file=$SYS_TMP/mark0" --set net.udp_port=4245
Z=$SYS_LAST_PID
check "the default [id] outside the images serves" \
	sys_wait_for 10 ctl info --server 127.0.0.1:4245 --timeout 100
check "as worker 0" eval 'ctl info --server 127.0.0.1:4245 | grep -q "datacenter 0, worker 0$"'
check "locked as node0-seq12.lock" test -e "$SYS_TMP/locks/node0-seq12.lock"
sys_stop "$Z" TERM

# flakectl mark --set while the state is held. The holder is stopped
# (SIGSTOP keeps its lock) so that its own mark extensions cannot change the
# file between the two reads: only flakectl could.
kill -STOP "$A"
before=$(cat "$SYS_TMP/mark")
"$FLAKECTL" mark "$SYS_TMP/mark" --set now >"$SYS_TMP/m.log" 2>&1
rc=$?
after=$(cat "$SYS_TMP/mark")
kill -CONT "$A"
cat "$SYS_TMP/m.log"
check "flakectl mark --set is refused while a responder holds the state" [ "$rc" -ne 0 ]
check "it names the holder" grep -q "locked by PID $A" "$SYS_TMP/m.log"
check "and leaves the mark as it was" [ "$after" = "$before" ]

# SIGKILL: the kernel drops the lock; a restart on the same state serves above
sys_stop "$A" KILL
sys_start "$SYS_TMP/e.log" "$FLAKESOCK" "${common[@]}" --set "state.file=$SYS_TMP/mark"
E=$SYS_LAST_PID
check "after kill -9 a restart on the same state starts" \
	sys_wait_for 10 ctl info --server 127.0.0.1:4242 --timeout 100
# It answers RETRY_AFTER until the clock passes the mark the first one
# reserved (up to [state] mark_ahead_ms, 300 ms since issue 49, 3 s before:
# doc/guarantees.md), which one `get` may not wait out. In a purged run three tests at a time the check
# below failed in both trees; that `get`'s errors were discarded and no ID
# printed, so whether it got none or IDs below is unknown (9 runs since, each
# restart issued 2.9-3.0 s above the first one's last ID). Now the test waits
# for an ID first, and prints both sets' bounds and the `get`'s errors.
check "and issues once the clock passes the first one's mark" \
	sys_wait_for 20 ctl get --server 127.0.0.1:4242
ctl get -n 200 --server 127.0.0.1:4242 >"$SYS_TMP/ids.e" 2>"$SYS_TMP/ids.e.err"
check "and issues above everything the first issued" ids_all_above "$SYS_TMP/ids.a" "$SYS_TMP/ids.e"
echo "the first: $(wc -l <"$SYS_TMP/ids.a") IDs up to $(sort -n "$SYS_TMP/ids.a" | tail -n 1);" \
	"after the restart: $(wc -l <"$SYS_TMP/ids.e") IDs from $(sort -n "$SYS_TMP/ids.e" | head -n 1)" \
	"$(cat "$SYS_TMP/ids.e.err")"
sys_stop "$E" TERM
check "flakectl mark --set works once the state is free" \
	"$FLAKECTL" mark "$SYS_TMP/mark" --set now
sys_done
