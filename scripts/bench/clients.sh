#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# IDs/s through each client's prefetching next() (C fw_client_next, Go
# Client.Next and a Sequence per goroutine, Java Client.next, Python
# Client.next, TypeScript Client.next, Rust Client::next) with 1, 2, 4 and 8 callers of ONE
# client object, against one flakesock on loopback, printed as one Markdown
# table: a row per client and options, and per language a baseline row:
#   defaults  the client's default options, what a new user gets: untrusted
#             (requests padded to the reply's size), prefetch 1024, low
#             water 256, RANGE refills;
#   tuned     trusted (no padding: only for a source the responder trusts),
#             prefetch 4096, low water 1024, RANGE refills;
#   baseline  no client: the same callers take numbers from an in-process
#             atomic counter of the language's standard library (C
#             atomic_fetch_add, Go sync/atomic, Java AtomicLong, Python
#             itertools.count, TypeScript a counter behind the same await,
#             Rust AtomicU64::fetch_add):
#             the ceiling of any client-side hand-out.
# Callers are threads (C, Java, Python, Rust), goroutines (Go) or concurrent
# async callers on one event loop (TypeScript). Each program warms up with
# the same callers before it measures (C, Go, Python, TypeScript, Rust 0.3 s; Java
# JMH-style: 5 warm-up iterations of 0.2 s, then the measured one).
# The responder has 20 sequence bits and 2 worker bits (about 10^9 IDs/s)
# so its ID space is not the limit, and it trusts loopback (its default).
# Rounds are interleaved (every row and caller count, then again), and each
# round measures a row's 1, 2, 4 and 8 callers back to back: a cell is the
# median over the rounds, a ratio N/1 the median of the rounds' own ratios,
# so the load other processes put on the machine falls on every cell alike.
#
# usage: scripts/bench/clients.sh [-b BUILD] [-s SECONDS] [-r ROUNDS] [-l LANGS]
#   -b  meson build dir with flakesock and bench_c (default: build)
#   -s  seconds per measurement (default 1)
#   -r  rounds, at least 5 (default 5)
#   -l  only these languages, comma separated (e.g. C,Rust: rows side by side
#       for a ratio; default every language)
# A client whose toolchain is missing shows "-" in its rows.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
secs=1
runs=5
langs=""
while getopts b:s:r:l:h o; do
	case $o in
	b) build=$(cd "$OPTARG" && pwd) ;;
	s) secs=$OPTARG ;;
	r) runs=$OPTARG ;;
	l) langs=,$OPTARG, ;;
	*) sed -n '2,35p' "$0"; exit 2 ;;
	esac
done
[ "$runs" -ge 5 ] || { echo "bench-clients: -r must be at least 5" >&2; exit 2; }
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
# Rust: Debian's cargo (/usr/bin), offline, optimized.
if [ -x /usr/bin/cargo ] && (cd "$root/clients/rust" && PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc \
	CARGO_HOME=$build/tests/clients/cargo-home CARGO_TARGET_DIR=$build/tests/clients/rust-target \
	/usr/bin/cargo build --offline -q --release --example bench); then
	cmd[Rust]="$build/tests/clients/rust-target/release/examples/bench"
fi

port=""
for _ in $(seq 20); do
	p=$((20000 + RANDOM % 40000))
	ss -Hunl "sport = :$p" | grep -q . || { port=$p; break; }
done
[ -n "$port" ] || { echo "bench-clients: no free port" >&2; exit 1; }
"$fsock" --listen 127.0.0.1 --threads 1 --set id.workers=1 --set id.worker_bits=2 \
	--set id.sequence_bits=20 --set "state.file=$work/mark" --set "state.lock_dir=$work/locks" \
	--set "net.udp_port=$port" --set stats.interval_s=0 >"$work/fsock.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	grep -q "listening on" "$work/fsock.log" && break
	sleep 0.1
done
grep -q "listening on" "$work/fsock.log" || { cat "$work/fsock.log" >&2; exit 1; }

# Rows: "LANG|MODE|EXTRA ARG|label|options"
rows=(
	"C|defaults||C|defaults: untrusted (padded), prefetch 1024, low water 256"
	"Go|defaults|next|Go (Next)|defaults: untrusted (padded), prefetch 1024, low water 256"
	"Go|defaults|sequence|Go (a Sequence per goroutine)|defaults: untrusted (padded), prefetch 1024, low water 256"
	"Java|defaults||Java|defaults: untrusted (padded), prefetch 1024, low water 256"
	"Python|defaults||Python|defaults: untrusted (padded), prefetch 1024, low water 256"
	"TypeScript|defaults||TypeScript|defaults: untrusted (padded), prefetch 1024, low water 256"
	"Rust|defaults||Rust|defaults: untrusted (padded), prefetch 1024, low water 256"
	"C|tuned||C|tuned: trusted, prefetch 4096, low water 1024"
	"Go|tuned|next|Go (Next)|tuned: trusted, prefetch 4096, low water 1024"
	"Go|tuned|sequence|Go (a Sequence per goroutine)|tuned: trusted, prefetch 4096, low water 1024"
	"Java|tuned||Java|tuned: trusted, prefetch 4096, low water 1024"
	"Python|tuned||Python|tuned: trusted, prefetch 4096, low water 1024"
	"TypeScript|tuned||TypeScript|tuned: trusted, prefetch 4096, low water 1024"
	"Rust|tuned||Rust|tuned: trusted, prefetch 4096, low water 1024"
	"C|baseline||C|baseline: atomic_fetch_add on one counter"
	"Go|baseline||Go|baseline: atomic.Uint64.Add on one counter"
	"Java|baseline||Java|baseline: AtomicLong.incrementAndGet on one counter"
	"Python|baseline||Python|baseline: next(itertools.count())"
	"TypeScript|baseline||TypeScript|baseline: await of an async counter++"
	"Rust|baseline||Rust|baseline: AtomicU64::fetch_add on one counter"
)
if [ -n "$langs" ]; then # -l: keep only those languages' rows
	kept=()
	for row in "${rows[@]}"; do
		case $langs in *,"${row%%|*}",*) kept+=("$row") ;; esac
	done
	rows=("${kept[@]}")
fi
callers=(1 2 4 8)

# measure ROW-INDEX CALLERS: one run, IDs/s on stdout ("" on failure)
measure()
{
	local lang mode extra
	IFS='|' read -r lang mode extra _ _ <<<"${rows[$1]}"
	[ -n "${cmd[$lang]:-}" ] || return 0
	# shellcheck disable=SC2086
	timeout $((${secs%.*} * 4 + 60)) ${cmd[$lang]} "127.0.0.1:$port" "$2" "$secs" "$mode" $extra \
		2>>"$work/err.log" | sed -n 's/^ids_per_s //p'
}

for r in $(seq "$runs"); do
	for i in "${!rows[@]}"; do
		declare -A got=()
		for n in "${callers[@]}"; do
			got[$n]=$(measure "$i" "$n")
			[ "${got[$n]:-0}" != 0 ] && echo "${got[$n]}" >>"$work/$i-$n"
		done
		for n in "${callers[@]:1}"; do
			if [ "${got[1]:-0}" != 0 ] && [ "${got[$n]:-0}" != 0 ]; then
				awk -v x="${got[$n]}" -v y="${got[1]}" 'BEGIN {printf "%.4f\n", x / y}' >>"$work/$i-r$n"
			fi
		done
		unset got
	done
	echo "bench-clients: round $r of $runs done" >&2
done

median()
{
	[ -s "$1" ] || { echo "-"; return; }
	sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
# IDs/s as "12.3 M" (3 significant figures)
mps()
{
	[ "$1" = - ] && { echo -; return; }
	awk -v v="$1" 'BEGIN {m = v / 1e6; printf (m >= 100 ? "%.0f M" : m >= 10 ? "%.1f M" : "%.2f M"), m}'
}

echo "bench-clients: IDs/s through next() from N callers of one client, flakesock on 127.0.0.1 (1 thread, 20 sequence bits), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "  $runs interleaved rounds of ${secs} s per cell after each program's warm-up; cell: median; N/1: median of the rounds' ratios"
echo "  $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| client | options | 1 caller | 2 callers | 4 callers | 8 callers | 2/1 | 4/1 | 8/1 |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for i in "${!rows[@]}"; do
	IFS='|' read -r _ _ _ label options <<<"${rows[$i]}"
	line="| $label | $options"
	for n in "${callers[@]}"; do
		line="$line | $(mps "$(median "$work/$i-$n")")"
	done
	for n in "${callers[@]:1}"; do
		v=$(median "$work/$i-r$n")
		[ "$v" != - ] && v=$(awk -v x="$v" 'BEGIN {printf "%.2f", x}')
		line="$line | $v"
	done
	echo "$line |"
done
if [ -s "$work/err.log" ]; then
	echo "errors:" >&2
	sort -u "$work/err.log" | head -n 10 >&2
fi
