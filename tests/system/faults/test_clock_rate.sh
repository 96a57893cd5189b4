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
# With an argument PPM beyond 10,000 (a rate 50 % fast: 500000, 30 % slow:
# -300000; issue 49) the first re-anchors take the rate for a step (a
# second's gap is off by more than step_ms), and two intervals in a row at
# one rate then teach it: within 5 s the nominal rate is within 0.1 % of
# the new one and stays there, the offset stops growing, and no request is
# refused CLOCK_UNSAFE (the old keeper never learnt a rate over ~11 % fast:
# its lead over the system clock grew by the rate error every second).
# A second argument "flakesock" runs it against flakesock only (the keeper
# is one for both; the test command runs the large rates once, 13 s each).
[ "${2:-}" = flakesock ] && RESPONDER=flakesock
. "$(dirname "$0")/lib.sh"
PPM=${1:-2000}
if [ "${PPM#-}" -gt 10000 ]; then
	big_rate() {
		faults_setup "crate${PPM#-}"
		tc_use
		fw_start 0
		bench_start ids --duration 8 --concurrency 2
		local c0 hz0 hz want c off moved learnt="" off_l=0 i
		c0=$(clock_until 5 'c["generation"] >= 1')
		hz0=$(cj "$c0" nominal_hz)
		want=$((hz0 + hz0 / 1000000 * PPM))
		tc_set "tsc_ppm=$PPM"
		for i in $(seq 7); do
			sleep 1
			c=$(clock_get) || fail "telemetry"
			hz=$(cj "$c" nominal_hz)
			off=$(cj "$c" offset_ns)
			moved=$(((hz - hz0) * 1000000 / hz0))
			echo "t+${i}s: nominal rate ${moved} ppm from the start (want $PPM), offset $((off / 1000)) us, flags $(cj "$c" flags)"
			err=$(((hz - want) * 1000000 / want))
			if [ -z "$learnt" ]; then
				[ "${err#-}" -le 1000 ] && learnt=$i && off_l=${off#-}
			else
				[ "${err#-}" -le 1000 ] || fail "learnt at t+${learnt}s, off again at t+${i}s: $moved ppm"
			fi
		done
		[ -n "$learnt" ] && [ "$learnt" -le 5 ] || fail "a tick rate $PPM ppm off was not learnt within 5 s (last: $moved ppm)"
		off=${off#-}
		# learnt, the offset no longer grows (a fast source's lead is slewed
		# away at max_slew_ppm; a slow one's was stepped forward)
		[ "$off" -le $((off_l + 10000000)) ] || fail "offset grew from $((off_l / 1000)) us to $((off / 1000)) us after the rate was learnt"
		bench_wait ids || fail "bench reported a problem: $(cat "$TMP/ids.err")"
		bench_clean ids || fail "duplicates or order violations: $(cat "$TMP/ids.json")"
		[ "$(bj ids '["status"]["clock-unsafe"]')" -eq 0 ] || fail "CLOCK_UNSAFE answered"
		gap=$($FC maxgap "$TMP/ids.ids")
		limit=$(gap_limit ids)
		[ "$gap" -le "$limit" ] || fail "a ${gap} ms gap in issued times"
		fw_stop TERM || fail "exit status $?"
		echo "PASS: ticks $PPM ppm: learnt within ${learnt} s (nominal rate $moved ppm from the start), offset $((off / 1000)) us, retry-after $(bj ids '["status"]["retry-after"]')"
		exit 0
	}
	big_rate
fi
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
