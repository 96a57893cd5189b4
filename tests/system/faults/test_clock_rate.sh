#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The TSC starts running 2,000 ppm fast against the system clock (a VM moved
# to a host with another TSC rate) while a client collects every ID. Policy
# (lib/clock): re-anchoring re-estimates the nominal rate over the window
# since the last step and slews the offset away within max_slew_ppm; the
# offset stays far under step_ms (no step either way), IDs stay unique and
# increasing, no request is refused. The estimate converges as T / (W + T)
# (W: uptime before the change, T: time since), so within 12 s of a change
# made 2 s after start it has moved most of the 2,000 ppm.
. "$(dirname "$0")/lib.sh"
PPM=2000
faults_setup crate
tc_use
fw_start 0
bench_start ids --duration 15 --concurrency 2

c0=$(clock_until 5 'c["generation"] >= 1')
hz0=$(cj "$c0" nominal_hz)
tc_set "tsc_ppm=$PPM"
worst=0
for i in $(seq 12); do
	sleep 1
	c=$(clock_get) || fail "telemetry"
	off=$(cj "$c" offset_ns)
	hz=$(cj "$c" nominal_hz)
	flags=$(cj "$c" flags)
	moved=$(( (hz - hz0) * 1000000 / hz0 ))
	echo "t+${i}s: offset $((off / 1000)) us, nominal rate ${moved} ppm from the start, slew $(cj "$c" slew_ppb) ppb, flags $flags"
	[ $((flags & 3)) -eq 0 ] || fail "a 2,000 ppm rate error was taken for a step (flags $flags)"
	a=${off#-}
	[ "$a" -gt "$worst" ] && worst=$a
done
[ "$moved" -ge 1200 ] && [ "$moved" -le 2300 ] ||
	fail "nominal rate moved $moved ppm, expected most of $PPM"
[ "$worst" -lt 50000000 ] || fail "offset reached $((worst / 1000)) us"
bench_wait ids || fail "bench reported a problem: $(cat "$TMP/ids.err")"
bench_clean ids || fail "duplicates or order violations: $(cat "$TMP/ids.json")"
[ "$(bj ids '["status"]["clock-unsafe"]')" -eq 0 ] || fail "CLOCK_UNSAFE answered"
[ "$(bj ids '["status"]["retry-after"]')" -eq 0 ] || fail "RETRY_AFTER answered"
gap=$($FC maxgap "$TMP/ids.ids")
# a lost datagram's 1 s client timeout, or the machine's own pause, is not a stall (gap_limit)
limit=$(gap_limit ids)
[ "$gap" -le "$limit" ] || fail "a ${gap} ms gap in issued times"
fw_stop TERM || fail "exit status $?"
echo "PASS: TSC +$PPM ppm: nominal rate moved $moved ppm, worst offset $((worst / 1000)) us, last $((off / 1000)) us"
