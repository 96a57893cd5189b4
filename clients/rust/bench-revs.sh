#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# next() of two revisions of this crate side by side, and C's: IDs/s with 1,
# 2 and 4 threads of one client, the programs and responder of
# scripts/bench/clients.sh (bench_c, examples/bench.rs, flakesock on
# loopback with 20 sequence bits), defaults and tuned, in interleaved
# rounds: a cell is the median over the rounds, a ratio N/1 the median of
# the rounds' own ratios. Made for the fork check (README.md, "Fork").
# usage: clients/rust/bench-revs.sh [-b BUILD] [-s SECONDS] [-r ROUNDS] BEFORE AFTER
#   e.g. clients/rust/bench-revs.sh -s 0.5 -r 7 3c13b43 HEAD
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build secs=0.5 runs=5
while getopts b:s:r:h o; do
	case $o in
	b) build=$(cd "$OPTARG" && pwd) ;;
	s) secs=$OPTARG ;;
	r) runs=$OPTARG ;;
	*) sed -n '3,10p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 2 ] || { sed -n '9,10p' "$0" >&2; exit 2; }
ninja -C "$build" app/flakesock/flakesock tests/clients/bench_c >/dev/null
work=$(mktemp -d /tmp/bench-revs.XXXXXX)
pid=""
cleanup()
{
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
declare -A cmd=([C]="$build/tests/clients/bench_c")
for rev in "$1" "$2"; do
	mkdir -p "$work/src-$rev"
	git -C "$root" archive "$rev" clients/rust | tar -x -C "$work/src-$rev"
	(cd "$work/src-$rev/clients/rust" && PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc \
		CARGO_HOME=$build/tests/clients/cargo-home CARGO_TARGET_DIR=$work/target-$rev \
		/usr/bin/cargo build --offline -q --release --example bench)
	cmd[$rev]=$work/target-$rev/release/examples/bench
done
port=""
for _ in $(seq 20); do
	p=$((20000 + RANDOM % 40000))
	ss -Hunl "sport = :$p" | grep -q . || { port=$p; break; }
done
[ -n "$port" ] || { echo "bench-revs: no free port" >&2; exit 1; }
"$build/app/flakesock/flakesock" --listen 127.0.0.1 --threads 1 --set id.workers=1 \
	--set id.worker_bits=2 --set id.sequence_bits=20 --set "state.file=$work/mark" \
	--set "state.lock_dir=$work/locks" --set "net.udp_port=$port" --set stats.interval_s=0 \
	>"$work/fsock.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	grep -q "listening on" "$work/fsock.log" && break
	sleep 0.1
done
grep -q "listening on" "$work/fsock.log" || { cat "$work/fsock.log" >&2; exit 1; }
rows=("C defaults" "$1 defaults" "$2 defaults" "C tuned" "$1 tuned" "$2 tuned")
for r in $(seq "$runs"); do
	for i in "${!rows[@]}"; do
		read -r who mode <<<"${rows[$i]}"
		one=""
		for n in 1 2 4; do
			v=$(timeout 60 ${cmd[$who]} "127.0.0.1:$port" "$n" "$secs" "$mode" | sed -n 's/^ids_per_s //p')
			[ -n "$v" ] || continue
			echo "$v" >>"$work/$i-$n"
			if [ "$n" = 1 ]; then
				one=$v
			elif [ -n "$one" ]; then
				awk -v x="$v" -v y="$one" 'BEGIN {printf "%.4f\n", x / y}' >>"$work/$i-r$n"
			fi
		done
	done
	echo "bench-revs: round $r of $runs done" >&2
done
med()
{
	[ -s "$1" ] || { echo -; return; }
	sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
echo "bench-revs: next() IDs/s, $runs interleaved rounds of $secs s, $(nproc) CPUs," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| client | options | 1 thread | 2 threads | 4 threads | 2/1 | 4/1 |"
echo "|---|---|---:|---:|---:|---:|---:|"
for i in "${!rows[@]}"; do
	read -r who mode <<<"${rows[$i]}"
	[ "$who" = C ] || who="Rust $who"
	line="| $who | $mode"
	for n in 1 2 4; do
		line="$line | $(med "$work/$i-$n" | awk '$1 == "-" {print; next} {printf "%.1f M", $1 / 1e6}')"
	done
	for n in 2 4; do
		line="$line | $(med "$work/$i-r$n" | awk '$1 == "-" {print; next} {printf "%.2f", $1}')"
	done
	echo "$line |"
done
