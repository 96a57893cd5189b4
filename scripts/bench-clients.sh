#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# IDs/s through each client's prefetching next() (C fw_client_next, Go
# Client.Next, Java Client.next, Python Client.next, TypeScript
# Client.next) with one caller and with several, against one flakesock on
# loopback, printed as one table with two rows per client, the options on
# each row:
#   defaults  the client's default options, what a new user gets: untrusted
#             (requests padded to the reply's size), prefetch 1024, low
#             water 256, RANGE refills;
#   tuned     trusted (no padding: only for a source the responder trusts),
#             prefetch 4096, low water 1024, RANGE refills.
# The responder's layout has 16 sequence bits so its ID space is not the
# limit, and it trusts loopback (its default), so both rows are answered.
# Runs are interleaved (C, Go, ..., then again) and the median is shown, so
# the load other processes put on the machine falls on every row alike.
#
# usage: scripts/bench-clients.sh [-b BUILD] [-s SECONDS] [-r RUNS] [-t THREADS]
#   -b  meson build dir with flakesock and bench_c (default: build)
#   -s  seconds per measurement (default 3)
#   -r  runs per cell, median shown (default 3)
#   -t  callers in the "several" column (default 4)
# A client whose toolchain is missing shows "-" in its row.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
secs=3
runs=3
threads=4
while getopts b:s:r:t:h o; do
	case $o in
	b) build=$(cd "$OPTARG" && pwd) ;;
	s) secs=$OPTARG ;;
	r) runs=$OPTARG ;;
	t) threads=$OPTARG ;;
	*) sed -n '2,23p' "$0"; exit 2 ;;
	esac
done
ninja -C "$build" app/flakesock/flakesock tests/clients/bench_c >/dev/null
fsock=$build/app/flakesock/flakesock
work=$(mktemp -d /tmp/bench-clients.XXXXXX)
pid=""
cleanup()
{
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Build each client's bench program once.
declare -A cmd
cmd[C]="$build/tests/clients/bench_c"
if command -v go >/dev/null; then
	(cd "$root/clients/go" && GOCACHE=$build/tests/clients/go-cache GOPATH=$build/tests/clients/go-path \
		GOPROXY=off CGO_ENABLED=0 go build -o "$work/bench_go" ./examples/bench) &&
		cmd[Go]="$work/bench_go"
fi
if command -v javac >/dev/null && "$root/clients/java/build.sh" -o "$build/tests/clients/java" jar >/dev/null; then
	cmd[Java]="java -cp $build/tests/clients/java/classes:$build/tests/clients/java/example-classes Bench"
fi
[ -x /usr/bin/python3 ] && cmd[Python]="/usr/bin/python3 $root/clients/python/examples/bench.py"
if command -v node >/dev/null &&
	sh "$root/tests/clients/ts.sh" "$root/clients/ts" "$build/tests/clients/ts" true; then
	cmd[TypeScript]="node $build/tests/clients/ts/examples/bench.js"
fi
clients=(C Go Java Python TypeScript)

port=""
for _ in $(seq 20); do
	p=$((20000 + RANDOM % 40000))
	ss -Hunl "sport = :$p" | grep -q . || { port=$p; break; }
done
[ -n "$port" ] || { echo "bench-clients: no free port" >&2; exit 1; }
# 16 sequence bits (65,536 IDs per ms): the responder's ID space is not the
# ceiling (the default 12 bits cap one worker at 4.096 M IDs/s).
"$fsock" --listen 127.0.0.1 --threads 1 --set id.workers=1 --set id.sequence_bits=16 \
	--set "state.file=$work/mark" --set "state.lock_dir=$work/locks" \
	--set "net.udp_port=$port" --set stats.interval_s=0 >"$work/fsock.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	grep -q "listening on" "$work/fsock.log" && break
	sleep 0.1
done
grep -q "listening on" "$work/fsock.log" || { cat "$work/fsock.log" >&2; exit 1; }

# measure CLIENT CALLERS MODE: one run, IDs/s on stdout ("" on failure)
measure()
{
	[ -n "${cmd[$1]:-}" ] || return 0
	# shellcheck disable=SC2086
	timeout $((secs * 4 + 30)) ${cmd[$1]} "127.0.0.1:$port" "$2" "$secs" "$3" 2>>"$work/err.log" |
		sed -n 's/^ids_per_s //p'
}

modes=(defaults tuned)
declare -A opts
opts[defaults]="untrusted (padded), prefetch 1024, low water 256"
opts[tuned]="trusted, prefetch 4096, low water 1024"
for _ in $(seq "$runs"); do
	for c in "${clients[@]}"; do
		for m in "${modes[@]}"; do
			for n in 1 "$threads"; do
				v=$(measure "$c" "$n" "$m")
				[ -n "$v" ] && echo "$v" >>"$work/$c-$m-$n"
			done
		done
	done
done

median()
{
	[ -s "$1" ] || { echo "-"; return; }
	sort -n "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}


echo "bench-clients: IDs/s through next(), flakesock on 127.0.0.1 (1 worker thread, 16 sequence bits), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "  $runs run(s) of ${secs}s per cell, median; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  ratios: against C with the same options"
printf '%-11s %-9s %-50s %12s %12s %7s %7s\n' client options "(what they are)" "1 caller" \
	"$threads callers" "1/C" "$threads/C"
for m in "${modes[@]}"; do
	c1=$(median "$work/C-$m-1")
	cn=$(median "$work/C-$m-$threads")
	for c in "${clients[@]}"; do
		a=$(median "$work/$c-$m-1")
		b=$(median "$work/$c-$m-$threads")
		ra=-
		rb=-
		[ "$a" != - ] && [ "$c1" != - ] && ra=$(awk -v x="$a" -v y="$c1" 'BEGIN {printf "%.2f", x / y}')
		[ "$b" != - ] && [ "$cn" != - ] && rb=$(awk -v x="$b" -v y="$cn" 'BEGIN {printf "%.2f", x / y}')
		printf '%-11s %-9s %-50s %12s %12s %7s %7s\n' "$c" "$m" "${opts[$m]}" "$a" "$b" "$ra" "$rb"
	done
done
if [ -s "$work/err.log" ]; then
	echo "errors:" >&2
	sort -u "$work/err.log" | head -n 10 >&2
fi
