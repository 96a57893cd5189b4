#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The availability drill of issue 49: what a caller feels when one responder
# dies, hangs, restarts, is cut off or loses its clock.
#
# Three responders in a network namespace of their own: flakesock A
# (127.0.0.1:4301, worker 21) and B (127.0.0.1:4303, worker 23) on the
# namespace's loopback and flakewire on TAP (10.77.0.2:4242, worker 22; one
# lcore, --no-huge --no-pci). All three are the test-clock builds
# (flakesock-testclock, flakewire-testclock), each with its own fault file,
# so that a clock step and ticks going back can be injected; with an empty
# fault file they are the responders as shipped. flakewire's lcore sleeps
# when idle (power.idle=sleep), so that it leaves a core to the callers on a
# 2-core machine.
#
# For each event a fresh caller process per client (tests/clients/drill/:
# C through libflakewire-client, Go, Java, Python, TypeScript, Rust through
# clients/LANG's public API) runs one client
# with all three responders configured, the event's target first, the
# client's default options (or --timeout), and calls next() and get() (one
# round trip) at RATE calls a second each from two threads, for a bounded
# time; one line per call (wall time, mode, latency, ok/error). The event
# starts WARM seconds after the callers (the first second of each run is
# their warm-up and not in the latency figures; its errors count).
#
# Events (NAME:TARGET, TARGET a, b or fw):
#   kill9       kill -9 of the target, restarted at once (as a supervisor would)
#   alone       kill9 with the target as the callers' only responder (the
#               issue's "one responder: 0 failed calls through a crash and restart")
#   stop        SIGSTOP for STOP seconds (10; --short 2), then SIGCONT
#   partition   the target's packets dropped silently for STOP seconds
#               (iptables DROP rules in the namespace's INPUT chain: replies
#               from the target, and requests to a flakesock target)
#   graceful    SIGTERM, wait for the exit, start again
#   rolling     a graceful restart of a, fw, b in turn (each once it answers
#               again, 1 s apart); the order a,fw,b
#   registry    the registry down under a fleet: a and b are restarted as
#               fleet nodes (their worker IDs leased from a one-member etcd or
#               one-server ZooKeeper, --store, on the namespace's loopback; the
#               root made by `flakectl fleet init`, reserving the static 21-23),
#               then the registry is stopped for STOP seconds while calls go
#               on (the nodes issue within their confirmed leases) and started
#               again; afterwards a and b go back to static worker IDs
#   clockstep   the target's system clock steps back 2 s (test clock offset_ms)
#   ticksback   the target's monotonic ticks go back 1 h (tick_back_ms;
#               flakesock only: flakewire-testclock refuses the key)
# Default: kill9:a alone:a stop:a partition:fw graceful:fw rolling
# clockstep:fw ticksback:a registry:a. --short: kill9:a alone:a stop:a graceful:fw. Between events every
# responder is brought back (fault files emptied, ticksback's target
# restarted) and answers INFO before the next one.
#
# Prints one Markdown table (event x client x mode: calls, errors, p50, p99,
# p99.9, max latency in ms) and writes OUT/drill.png (gnuplot: each client's
# latency over the drill's time, events shaded), OUT/table.md, the responders'
# logs OUT/responder-NAME.log and the raw per-call logs OUT/N-EVENT/LANG.out.
#
# usage: scripts/drill.sh [-b BUILD] [-o OUT] [--short] [--clients c,go,java,python,ts,rust]
#                         [--events kill9:a,stop:a,...] [--rate N] [--timeout MS]
#                         [--check [--deadline MS]] [--store etcd|zookeeper]
#   -b          meson build dir (default: build); the responders' test-clock
#               builds, flakectl and tests/clients/drill/drill_c are built there
#   -o          where the logs, table and picture go (default: a new /tmp/drill.XXXXXX)
#   --rate      calls a second per client and mode (default 200)
#   --store     the registry event's store (default etcd)
#   --timeout   the clients' timeout option in ms (default: each client's own default)
#   --check     exit 1 unless every call of every client succeeded and none
#               took longer than its deadline plus 100 ms (the deadline:
#               --deadline MS, default --timeout or 1000, the clients'
#               default deadline of the availability contract): the test's
#               assertion, which is not a speed
# Root (namespace, TAP). A client whose toolchain is missing is left out
# (under CI=true: a failure). Bounded: the default drill takes about 3 min,
# --short about 50 s (every client at once; each caller is also ended by
# timeout(1)); every process it starts is stopped by PID on exit.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
out=""
short=""
clients=c,go,java,python,ts,rust
events=""
rate=200
timeout_ms=0
check=""
deadline_ms=1000
deadline_set=""
store=etcd
while [ $# -gt 0 ]; do
	case $1 in
	-b) build=$(cd "$2" && pwd); shift ;;
	-o) out=$2; shift ;;
	--short) short=1 ;;
	--clients) clients=$2; shift ;;
	--events) events=$2; shift ;;
	--rate) rate=$2; shift ;;
	--timeout) timeout_ms=$2; shift ;;
	--check) check=1 ;;
	--deadline) deadline_ms=$2; deadline_set=1; shift ;;
	--store) store=$2; shift ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 2 ;;
	esac
	shift
done
[ -n "$deadline_set" ] || [ "$timeout_ms" -eq 0 ] || deadline_ms=$timeout_ms
if [ -n "$short" ]; then
	: "${events:=kill9:a,alone:a,stop:a,graceful:fw}"
	stop_s=2 warm_s=2 tail_s=3
else
	: "${events:=kill9:a,alone:a,stop:a,partition:fw,graceful:fw,rolling,clockstep:fw,ticksback:a,registry:a}"
	stop_s=10 warm_s=3 tail_s=7
fi

fsock=$build/app/flakesock/flakesock-testclock
fwire=$build/app/flakewire/flakewire-testclock
flakectl=$build/app/flakectl/flakectl
py=/usr/bin/python3
ns="fwdrill-$$"
work=$(mktemp -d /tmp/drill-work.XXXXXX)
# --check without -o (the test): the logs go with the work dir
[ -n "$out" ] || { [ -n "$check" ] && out=$work/out; } || out=$(mktemp -d /tmp/drill.XXXXXX)
mkdir -p "$out"
declare -A PID=()    # responder -> PID
declare -A FLEET=()  # responder -> 1 while it runs as a fleet node (the registry event)
reg_up=""
# the registry event's store, sourced here: its arrays (declare) must be global
FW_STORE=$store
# shellcheck source=../tests/system/fleet/registry.sh
. "$root/tests/system/fleet/registry.sh" || { echo "drill: --store etcd or zookeeper" >&2; exit 2; }
declare -A CALLER=() # client -> command (SERVERS RATE SECONDS TIMEOUT_MS appended)
callers=()           # PIDs of running callers
stopped=""

log() { echo "drill: $*" >&2; }

cleanup()
{
	local p
	[ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null
	for p in "${callers[@]}" "${PID[@]}"; do
		[ -n "$p" ] || continue
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null
			for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$p" 2>/dev/null
		fi
		wait "$p" 2>/dev/null
	done
	[ -z "$reg_up" ] || reg_stop_all
	mountpoint -q "$work/reg/etcd1" 2>/dev/null && umount "$work/reg/etcd1"
	ip netns del "$ns" 2>/dev/null
	rm -rf "/var/run/dpdk/$ns" "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail()
{
	echo "drill: FAIL: $*" >&2
	for f in "$work"/*.log "$out"/responder-*.log; do
		[ -f "$f" ] && { echo "---- $f" >&2; tail -n 15 "$f" >&2; }
	done
	exit 1
}

# Without a capability the drill cannot run: a skip (77) for meson, a
# failure under CI=true.
skip()
{
	[ "${CI:-}" = true ] && fail "$* (CI=true: a missing capability is a failure)"
	echo "SKIP: $*"
	exit 77
}

# ---- callers: prepare_LANG builds once and sets CALLER[LANG] ----------------
drill_src=$root/tests/clients/drill

prepare_c()
{
	ninja -C "$build" tests/clients/drill/drill_c >/dev/null || return 1
	CALLER[c]="$build/tests/clients/drill/drill_c"
}

prepare_go()
{
	command -v go >/dev/null || return 1
	mkdir -p "$work/go"
	cat >"$work/go/go.mod" <<-EOF
	module drill

	go 1.19

	require github.com/flakewire/flakewire/clients/go v0.0.0
	replace github.com/flakewire/flakewire/clients/go => $root/clients/go
	EOF
	cp "$drill_src/drill.go" "$work/go/main.go"
	(cd "$work/go" && GOCACHE=$build/tests/clients/go-cache GOPATH=$build/tests/clients/go-path \
		GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 go build -o drill .) \
		>"$work/go-build.log" 2>&1 || return 1
	CALLER[go]="$work/go/drill"
}

prepare_java()
{
	local jout=$build/tests/clients/java
	command -v javac >/dev/null || return 1
	"$root/clients/java/build.sh" -o "$jout" jar >/dev/null || return 1
	mkdir -p "$work/java"
	javac --release 17 -d "$work/java" -cp "$jout/classes" "$drill_src/Drill.java" \
		>"$work/java-build.log" 2>&1 || return 1
	CALLER[java]="java -cp $jout/classes:$work/java Drill"
}

prepare_python()
{
	[ -x "$py" ] || return 1
	CALLER[python]="env PYTHONPATH=$root/clients/python/src PYTHONDONTWRITEBYTECODE=1 $py $drill_src/drill.py"
}

prepare_ts()
{
	local tout=$build/tests/clients/ts
	command -v node >/dev/null || return 1
	sh "$root/tests/clients/ts.sh" "$root/clients/ts" "$tout" true >"$work/ts-build.log" 2>&1 ||
		return 1
	CALLER[ts]="node $drill_src/drill.mjs $tout/src/index.js"
}

# Rust: a binary crate made here (drill.rs its main, clients/rust by path),
# built offline with Debian's cargo (a rustup toolchain may come first on
# PATH), release, its target and cargo home under the build dir.
prepare_rust()
{
	[ -x /usr/bin/cargo ] || return 1
	mkdir -p "$work/rust/src"
	cat >"$work/rust/Cargo.toml" <<-EOF
	[package]
	name = "drill"
	version = "0.0.0"
	edition = "2018"
	publish = false

	[dependencies]
	flakewire = { path = "$root/clients/rust" }
	EOF
	cp "$drill_src/drill.rs" "$work/rust/src/main.rs"
	(cd "$work/rust" && PATH=/usr/bin:/bin RUSTC=/usr/bin/rustc CARGO_NET_OFFLINE=true \
		CARGO_HOME=$build/tests/clients/cargo-home \
		CARGO_TARGET_DIR=$build/tests/clients/drill/rust-target \
		/usr/bin/cargo build --offline --release -q) >"$work/rust-build.log" 2>&1 || return 1
	CALLER[rust]="$build/tests/clients/drill/rust-target/release/drill"
}

declare -A LABEL=([c]=C [go]=Go [java]=Java [python]=Python [ts]=TypeScript [rust]=Rust)
IFS=, read -r -a langs <<<"$clients"
ready=()
for l in "${langs[@]}"; do
	if declare -F "prepare_$l" >/dev/null && "prepare_$l"; then
		ready+=("$l")
	else
		[ "${CI:-}" = true ] && fail "client $l: no caller (toolchain missing or build failed: $(tail -n 5 "$work/$l-build.log" 2>/dev/null))"
		log "client $l left out: no caller (toolchain missing or build failed)"
	fi
done
[ ${#ready[@]} -gt 0 ] || fail "no client to drill"

# ---- responders ---------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespace, TAP)"
[ -c /dev/net/tun ] || skip "/dev/net/tun missing"
ninja -C "$build" app/flakesock/flakesock-testclock app/flakewire/flakewire-testclock \
	app/flakectl/flakectl >/dev/null || fail "cannot build the responders in $build"
for b in "$fsock" "$fwire" "$flakectl"; do
	[ -x "$b" ] || fail "$b is not built (-Ddpdk=enabled is needed for flakewire)"
done
ip netns add "$ns" || skip "cannot create a network namespace"
ip -n "$ns" link set lo up
ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1
command -v iptables >/dev/null || log "iptables missing: the partition event will fail"

declare -A ADDR=([a]=127.0.0.1:4301 [fw]=10.77.0.2:4242 [b]=127.0.0.1:4303)
declare -A WORKER=([a]=21 [fw]=22 [b]=23)

answers() { ip netns exec "$ns" "$flakectl" info --server "${ADDR[$1]}" --timeout 200 >/dev/null 2>&1; }
issues() { ip netns exec "$ns" "$flakectl" get --server "${ADDR[$1]}" --timeout 200 >/dev/null 2>&1; }

# start NAME: starts responder NAME (a, b: flakesock; fw: flakewire on TAP)
# and returns once it answers INFO.
start()
{
	local n=$1 log="$out/responder-$1.log" p up="" runs
	: >"$work/$n.clock"
	touch "$log"
	runs=$(grep -c "running on" "$log")
	echo "---- start $(date +%T.%N)" >>"$log"
	if [ "$n" = fw ]; then
		ip netns exec "$ns" env FLAKEWIRE_TEST_CLOCK="$work/$n.clock" "$fwire" -l 1 --no-huge \
			--no-pci -m 256 --file-prefix "$ns" -- --set "state.file=$work/$n.mark" \
			--set "state.lock_dir=$work/locks" --set clock.calibrate_ms=200 \
			--set stats.interval_s=0 --set power.idle=sleep \
			--set "id.workers=${WORKER[$n]}" >>"$log" 2>&1 &
		p=$!
		# as live.sh: the address once flakewire runs (its TAP set up)
		for _ in $(seq 200); do
			if ip -n "$ns" link show fw0 >/dev/null 2>&1 &&
				[ "$(grep -c "running on" "$log")" -gt "$runs" ]; then
				up=1
				break
			fi
			kill -0 "$p" 2>/dev/null || fail "flakewire exited during start"
			sleep 0.05
		done
		[ -n "$up" ] || fail "flakewire did not come up within 10 s"
		ip -n "$ns" addr add 10.77.0.1/24 dev fw0 2>/dev/null
		ip -n "$ns" link set fw0 up
	else
		local who=(--set "id.workers=${WORKER[$n]}")
		[ -z "${FLEET[$n]:-}" ] || who=(--set "$REG_SET" --set fleet.root=/drill
			--set "fleet.identity=drill-$n" --set fleet.renew_ms=1000
			--set fleet.session_timeout_ms=4000)
		ip netns exec "$ns" env FLAKEWIRE_TEST_CLOCK="$work/$n.clock" "$fsock" \
			--listen 127.0.0.1 --set "net.udp_port=${ADDR[$n]##*:}" \
			--set "state.file=$work/$n.mark" --set "state.lock_dir=$work/locks" \
			--set clock.calibrate_ms=200 --set stats.interval_s=0 \
			"${who[@]}" >>"$log" 2>&1 &
		p=$!
	fi
	PID[$n]=$p
	for _ in $(seq 150); do
		if answers "$n"; then
			# a fleet node answers INFO before it holds a lease: wait for an ID
			[ -z "${FLEET[$n]:-}" ] && return 0
			for _ in $(seq 300); do
				issues "$n" && return 0
				kill -0 "$p" 2>/dev/null || fail "fleet node $n exited during start"
				sleep 0.05
			done
			fail "fleet node $n served no ID within about 15 s"
		fi
		kill -0 "$p" 2>/dev/null || fail "responder $n exited during start"
		sleep 0.05
	done
	fail "responder $n did not answer within about 10 s"
}

# stop_graceful NAME: SIGTERM, waits for the exit (5 s, then SIGKILL).
stop_graceful()
{
	local p=${PID[$1]}
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
}

# ---- events: ev_NAME TARGET, run while the callers call ------------------------
ev_kill9()
{
	kill -KILL "${PID[$1]}"
	wait "${PID[$1]}" 2>/dev/null
	start "$1"
}

ev_alone() { ev_kill9 "$1"; }

ev_stop()
{
	kill -STOP "${PID[$1]}" && stopped=${PID[$1]}
	sleep "$stop_s"
	kill -CONT "${PID[$1]}"
	stopped=""
}

# The partition drops silently: a DROP in OUTPUT would fail the sender's
# sendto() with EPERM at once (a fast failover no partition gives), so the
# rules sit in INPUT, where the sender has already been told "sent": requests
# to a flakesock target and every reply from the target (flakewire's
# requests leave through TAP, never INPUT: they reach it, their replies are
# dropped). No netem on these kernels (sch_netem is missing).
partition_rules()
{
	local ip=${ADDR[$2]%:*} port=${ADDR[$2]##*:}
	ip netns exec "$ns" iptables "$1" INPUT -p udp -s "$ip" --sport "$port" -j DROP || return 1
	[ "$2" = fw ] || ip netns exec "$ns" iptables "$1" INPUT -p udp -d "$ip" --dport "$port" -j DROP
}
ev_partition()
{
	partition_rules -A "$1" || fail "iptables in $ns"
	sleep "$stop_s"
	partition_rules -D "$1"
}

ev_graceful()
{
	stop_graceful "$1"
	start "$1"
}

ev_rolling()
{
	local n
	for n in a fw b; do
		ev_graceful "$n"
		sleep 1
	done
}

# fleet_mode on|off: a and b restarted (gracefully) as fleet nodes of the
# drill's registry, started here the first time, or as static workers again
fleet_mode()
{
	local n
	if [ "$1" = on ] && [ -z "$reg_up" ]; then
		mkdir -p "$work/reg"
		reg_start "$work/reg" 1 "ip netns exec $ns" >"$work/reg.log" 2>&1 ||
			fail "the registry ($store) did not start: $(tail -n 5 "$work/reg.log")"
		reg_up=1
		SYS_NS=$ns reg_init "$flakectl" /drill --reserve 21,22,23 >>"$work/reg.log" 2>&1 ||
			fail "flakectl fleet init /drill: $(tail -n 3 "$work/reg.log")"
	fi
	for n in a b; do
		stop_graceful "$n"
		FLEET[$n]=""
		[ "$1" = on ] && FLEET[$n]=1
		start "$n"
	done
	log "a and b run as $([ "$1" = on ] && echo "fleet nodes of $REG_NAME ($REG_CONNECT)" || echo "static workers")"
}

# the target's registry (the fleet's, one member) stopped for STOP seconds
ev_registry()
{
	reg_stop_one 1
	sleep "$stop_s"
	reg_start_one 1 >>"$work/reg.log" 2>&1 || log "the registry did not start again"
}

tc_set() { printf '%s\n' "$2" >"$work/$1.clock.new" && mv "$work/$1.clock.new" "$work/$1.clock"; }
ev_clockstep() { tc_set "$1" offset_ms=-2000; }
ev_ticksback()
{
	[ "$1" != fw ] || fail "ticksback: flakewire-testclock refuses tick_back_ms; target a or b"
	tc_set "$1" tick_back_ms=3600000
}

# restore: every responder running, no fault, each answering.
restore()
{
	local n
	ip netns exec "$ns" iptables -F INPUT 2>/dev/null
	for n in a fw b; do
		if [ -s "$work/$n.clock" ] || ! kill -0 "${PID[$n]:-0}" 2>/dev/null; then
			[ -n "${PID[$n]:-}" ] && stop_graceful "$n"
			start "$n"
		fi
	done
	for n in a fw b; do
		for _ in $(seq 50); do answers "$n" && break; sleep 0.05; done
		answers "$n" && continue
		# Not the event's measure (its callers are done), but say so: a
		# responder that stopped answering after it is a finding.
		log "responder $n (pid ${PID[$n]}) does not answer after the event: restarted"
		echo "---- no answer after the event, $(date +%T.%N): restarted" >>"$out/responder-$n.log"
		stop_graceful "$n"
		start "$n"
	done
}

for n in a fw b; do start "$n"; done
log "responders up: a ${ADDR[a]} (pid ${PID[a]}), fw ${ADDR[fw]} (pid ${PID[fw]}), b ${ADDR[b]} (pid ${PID[b]})"

# run_event NAME TARGET DIR: callers of every client for the event's length,
# the event WARM seconds in; logs to OUT/DIR/LANG.out, the event's span
# (wall seconds) to OUT/events; DIR is N-NAME (the Nth event).
run_event()
{
	local name=$1 target=$2 dir=$3 order secs l t0 t1 ev_len
	case $name in
	stop | partition | registry) ev_len=$stop_s ;;
	rolling) ev_len=12 ;;
	kill9 | alone | graceful) ev_len=3 ;;
	*) ev_len=1 ;;
	esac
	if [ "$name" = rolling ]; then
		order="${ADDR[a]},${ADDR[fw]},${ADDR[b]}"
	elif [ "$name" = alone ]; then
		order=${ADDR[$target]}
	else
		order=${ADDR[$target]}
		for n in a fw b; do [ "$n" = "$target" ] || order="$order,${ADDR[$n]}"; done
	fi
	secs=$((warm_s + ev_len + tail_s))
	mkdir -p "$out/$dir"
	callers=()
	for l in "${ready[@]}"; do
		# shellcheck disable=SC2086
		ip netns exec "$ns" timeout $((secs + 60)) ${CALLER[$l]} "$order" "$rate" "$secs" \
			"$timeout_ms" >"$out/$dir/$l.out" 2>"$out/$dir/$l.err" &
		callers+=($!)
	done
	sleep "$warm_s"
	t0=$(date +%s.%N)
	"ev_$name" "$target"
	t1=$(date +%s.%N)
	echo "$dir $name ${target:-all} $t0 $t1" >>"$out/events"
	log "event $name ${target:-all}: $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s; order $order"
	for p in "${callers[@]}"; do
		wait "$p" || log "event $name: a caller exited $? (see $out/$dir/*.err)"
	done
	callers=()
	restore
}

: >"$out/events"
date +%s.%N >"$out/start"
IFS=, read -r -a evs <<<"$events"
i=0
for e in "${evs[@]}"; do
	i=$((i + 1))
	name=${e%%:*}
	target=""
	[ "$e" != "$name" ] && target=${e#*:}
	declare -F "ev_$name" >/dev/null || fail "no event $name"
	if [ "$name" != rolling ]; then
		[ -n "${ADDR[$target]:-}" ] || fail "event $e: target must be a, b or fw"
	fi
	[ "$name" = registry ] && fleet_mode on
	run_event "$name" "$target" "$(printf '%02d-%s' "$i" "$name")"
	[ "$name" = registry ] && fleet_mode off
done

# ---- table, picture, check ----------------------------------------------------
rargs=("$out" "$warm_s" "$((deadline_ms + 100))")
[ -n "$check" ] && rargs+=(check)
for l in "${ready[@]}"; do rargs+=("$l=${LABEL[$l]}"); done
{
	echo "drill $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$root" describe --always --dirty 2>/dev/null):" \
		"$rate calls/s per client and mode, timeout ${timeout_ms/#0/default}," \
		"$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	$py "$drill_src/report.py" "${rargs[@]}"
} >"$out/table.md"
rc=$?
cat "$out/table.md"
if [ "$out" = "$work/out" ]; then
	: # --check without -o: nothing kept
elif command -v gnuplot >/dev/null && [ -s "$out/plot.gp" ]; then
	if (cd "$out" && gnuplot plot.gp) 2>"$work/gnuplot.log"; then
		printf '\npicture: %s\n' "$out/drill.png"
	else
		log "gnuplot failed: $(head -n 3 "$work/gnuplot.log")"
	fi
fi
[ "$out" = "$work/out" ] || echo "logs: $out (events: $out/events; per call: $out/N-EVENT/CLIENT.out)"
exit $rc
