#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Live tests of the language clients: starts the responders, exports their
# addresses, then runs one client's live test command, which reads them from
# the environment (tests/clients/README.md). Everything started here is
# stopped by PID on exit, also on failure.
#
# usage: live.sh loop FLAKESOCK CMD...
#        live.sh tap FLAKESOCK FLAKEWIRE CMD...
#
# loop: three flakesock on loopback (no root needed):
#   FW_TRUSTED    trusted source (loopback is trusted by default), worker 11
#   FW_UNTRUSTED  net.trusted empty: replies never larger than requests, worker 12
#   FW_FEWSEQ     untrusted, 1 sequence bit, no borrowing: PARTIAL and
#                 RETRY_AFTER on every busy millisecond, worker 13
#   FW_DEAD       a loopback port nothing listens on
#   FW_V6         [::1]:PORT, flakesock on IPv6 loopback, worker 14 (empty
#                 when the host has no IPv6 loopback: those checks are skipped)
# tap: root; flakewire on a TAP device in a namespace of its own (4 sequence
# bits, no borrowing, worker 21, untrusted client at 10.77.0.1) and a
# flakesock backup on the namespace's loopback (same layout, worker 22); CMD
# runs inside the namespace with
#   FW_TAP FW_TAP_BACKUP  the two addresses, FW_TAP_PID  flakewire's PID (the
#   test kills it with SIGKILL, so that nothing answers once the kill
#   returns, and waits past the client's maximum age, so that the pool holds
#   none of flakewire's IDs, before it asks again: java-tap failed in a CI run
#   when a refill grown under load left the next 2,000 IDs in the pool).
set -u
mode=${1:?usage: live.sh loop|tap FLAKESOCK [FLAKEWIRE] CMD...}
fsock=${2:?flakesock binary}
shift 2
fwire=""
if [ "$mode" = tap ]; then
	fwire=${1:?flakewire binary}
	shift
fi
[ $# -gt 0 ] || { echo "live.sh: no test command" >&2; exit 2; }

pids=()
ns=""
tmp=$(mktemp -d "/tmp/fw-clients.XXXXXX")

cleanup()
{
	local p
	for p in "${pids[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null
			for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$p" 2>/dev/null
		fi
		wait "$p" 2>/dev/null
	done
	if [ -n "$ns" ]; then
		ip netns del "$ns" 2>/dev/null
		rm -rf "/var/run/dpdk/$ns"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail()
{
	echo "FAIL: $*" >&2
	for f in "$tmp"/*.log; do
		[ -f "$f" ] && { echo "---- $f" >&2; tail -n 20 "$f" >&2; }
	done
	exit 1
}

# Without a capability the test skips, except under CI where it fails.
skip()
{
	if [ "${CI:-}" = true ]; then
		fail "$* (CI=true: a missing capability is a failure)"
	fi
	echo "SKIP: $*"
	exit 77
}

. "$(dirname "${BASH_SOURCE[0]}")/ports.sh" # port_busy, free_port

# start_sock NAME PREFIX SETTINGS...: flakesock on a free port of $listen
# (default 127.0.0.1), run through PREFIX (empty, or "ip netns exec NS");
# sets port.
start_sock()
{
	local name=$1 prefix=$2 log="$tmp/$1.log" p
	shift 2
	for _ in 1 2 3 4 5; do
		port=$(free_port) || break
		: >"$log"
		# timeout(1) ends it even if this script is killed without its trap.
		# Its own lock_dir: the live tests of every language run side by side,
		# each its own private ID space with the same worker IDs.
		$prefix timeout 170 "$fsock" --listen "${listen:-127.0.0.1}" --set "state.file=$tmp/$name.mark" \
			--set "state.lock_dir=$tmp/locks" \
			--set "net.udp_port=$port" --set stats.interval_s=0 "$@" >"$log" 2>&1 &
		p=$!
		pids+=("$p")
		for _ in $(seq 50); do
			grep -q "listening on" "$log" && return 0
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
	done
	fail "flakesock $name did not start"
}

if [ "$mode" = loop ]; then
	[ -x "$fsock" ] || fail "flakesock $fsock is not executable"
	start_sock trusted "" --set id.workers=11
	FW_TRUSTED=127.0.0.1:$port
	start_sock untrusted "" --set id.workers=12 --set net.trusted=
	FW_UNTRUSTED=127.0.0.1:$port
	start_sock fewseq "" --set id.workers=13 --set net.trusted= --set id.sequence_bits=1 \
		--set id.worker_bits=10 --set id.max_borrow_ms=0
	FW_FEWSEQ=127.0.0.1:$port
	FW_DEAD=127.0.0.1:$(free_port)
	FW_V6=""
	if ip -6 addr show dev lo 2>/dev/null | grep -q '::1/128'; then
		listen=::1 start_sock v6 "" --set id.workers=14
		FW_V6="[::1]:$port"
	else
		echo "live.sh: no IPv6 loopback: the [::1] checks are skipped" >&2
	fi
	export FW_TRUSTED FW_UNTRUSTED FW_FEWSEQ FW_DEAD FW_V6
	timeout 120 "$@" || fail "live test failed: $*"
	exit 0
fi

[ "$mode" = tap ] || { echo "live.sh: mode $mode is not loop or tap" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespace, TAP)"
[ -c /dev/net/tun ] || skip "/dev/net/tun missing"
[ -x "$fwire" ] || fail "flakewire $fwire is not executable"
ns="fwc-$$"
ip netns add "$ns" || skip "cannot create a network namespace"
ip -n "$ns" link set lo up
ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1
layout=(--set id.sequence_bits=4 --set id.max_borrow_ms=0)
: >"$tmp/fw.log"
ip netns exec "$ns" "$fwire" -l 1 --no-huge --no-pci -m 256 --file-prefix "$ns" -- \
	--set "state.file=$tmp/fw.mark" --set clock.calibrate_ms=200 --set stats.interval_s=0 \
	--set "state.lock_dir=$tmp/locks" --set id.workers=21 "${layout[@]}" >>"$tmp/fw.log" 2>&1 &
FW_TAP_PID=$!
pids+=("$FW_TAP_PID")
up=""
for _ in $(seq 100); do
	if ip -n "$ns" link show fw0 >/dev/null 2>&1 && grep -q "running on" "$tmp/fw.log"; then
		up=1
		break
	fi
	kill -0 "$FW_TAP_PID" 2>/dev/null || fail "flakewire exited during start"
	sleep 0.1
done
[ -n "$up" ] || fail "flakewire did not come up within 10 s"
ip -n "$ns" addr add 10.77.0.1/24 dev fw0
ip -n "$ns" link set fw0 up
up=""
for _ in $(seq 20); do
	ip netns exec "$ns" ping -c 1 -W 1 10.77.0.2 >/dev/null 2>&1 && { up=1; break; }
	sleep 0.2
done
[ -n "$up" ] || fail "no ping reply from flakewire at 10.77.0.2"
start_sock backup "ip netns exec $ns" --set id.workers=22 "${layout[@]}"
export FW_TAP=10.77.0.2:4242 FW_TAP_BACKUP=127.0.0.1:$port FW_TAP_PID
ip netns exec "$ns" timeout 120 "$@" || fail "live test failed: $*"
exit 0
