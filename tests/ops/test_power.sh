#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# [power] idle on a TAP port: every mode answers requests; in interrupt and
# sleep modes the idle responder uses at most 10 % of a core (its CPU time
# over 2 s), in busy mode its worker never sleeps (state S in /proc); monitor is refused, naming WAITPKG,
# on a CPU without it; a bad value is refused naming the key and the values.
. "$FW_SRC/tests/system/flakewire/lib.sh"
fw_setup power

asleep() { # samples of the worker (the main lcore: the process's main thread) in state S, of 20
	local n=0 s
	for _ in $(seq 20); do
		s=$(awk '{ print $3 }' "/proc/$FW_PID/stat" 2>/dev/null)
		[ "$s" = S ] && n=$((n + 1))
		sleep 0.05
	done
	echo "$n"
}
for mode in busy pause interrupt sleep; do
	fw_start 0 --set power.idle=$mode --set power.idle_polls=64 --set power.sleep_us=1000
	fw_client get --op id --repeat 20 >/dev/null || fail "$mode: no IDs"
	sleep 0.3
	t0=$(awk '{ print $14 + $15 }' "/proc/$FW_PID/stat")
	n=$(asleep)
	sleep 1
	t1=$(awk '{ print $14 + $15 }' "/proc/$FW_PID/stat")
	pct=$(( (t1 - t0) * 100 / $(getconf CLK_TCK) / 2 ))
	echo "$mode: IDs answered; idle: $pct % of a core, worker asleep in $n of 20 samples"
	case $mode in
	interrupt | sleep) [ "$pct" -le 10 ] || fail "$mode: idle responder used $pct % of a core" ;;
	busy) [ "$n" -le 2 ] || fail "busy: the worker slept ($n of 20 samples)" ;;
	esac
	grep -q "power: $mode" "$TMP/fw.log" || [ $mode = busy ] || fail "$mode: not logged"
	fw_stop TERM || fail "$mode: exit status $?"
done

if ! grep -qw waitpkg /proc/cpuinfo; then
	out=$("$FLAKEWIRE" -l 0 --no-huge --no-pci -m 256 --file-prefix "$NS" -- \
		--set state.file="$TMP/mark" --set power.idle=monitor 2>&1) && fail "monitor accepted"
	grep -q "no UMONITOR/UMWAIT (WAITPKG)" <<<"$out" || fail "monitor refusal: $out"
	ip link del fw0 2>/dev/null
	echo "monitor: refused (no WAITPKG)"
fi
out=$("$FLAKEWIRE" -- --set power.idle=nap --check-config 2>&1) && fail "power.idle=nap accepted"
grep -q "\[power\] idle = nap" <<<"$out" && grep -q "busy, pause, monitor, scale, interrupt, sleep" <<<"$out" ||
	fail "bad value message: $out"
echo PASS
