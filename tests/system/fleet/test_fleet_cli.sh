#!/usr/bin/env bash
# flakectl fleet without a ZooKeeper: usage errors exit 2 naming the
# argument; an unreachable ensemble exits 3 (ls and check), saying where each
# node's own leases are meanwhile (the runbook's FlakewireLeaseEnding step).
# usage: test_fleet_cli.sh FLAKECTL
set -u
CTL=$1
fails=0
expect() { # expect RC PATTERN ARGS...
	local want=$1 pat=$2 out rc
	shift 2
	out=$("$CTL" "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want" ] && echo "$out" | grep -q -- "$pat"; then
		echo "ok   flakectl $* -> $rc"
	else
		echo "FAIL flakectl $* -> $rc: $out"
		fails=$((fails + 1))
	fi
}
expect 2 "expected init, fence, ls, release, check or secure" fleet
expect 2 "bogus: expected init, fence, ls, release, check or secure" fleet bogus --zk h:1 --root /x
expect 2 "\-\-zk or \-\-etcd: give one" fleet ls --root /x
expect 2 "\-\-zk or \-\-etcd: give one" fleet ls --zk h:1 --etcd http://h:2 --root /x
expect 2 "\-\-etcd h:2: not http://HOST:PORT" fleet ls --etcd h:2 --root /x
expect 2 "\-\-root .*absolute" fleet ls --zk 127.0.0.1:1 --root x
# fleet init and fence (issue 48): usage errors before any store is asked
expect 2 "ls: --config, --set and --reserve are for init and fence" fleet ls --zk h:1 --root /x --reserve 0
expect 2 "\-\-set worker.x=1: only \[id\] keys" fleet init --zk h:1 --root /x --set worker.x=1
expect 2 "\[id\] datacenter_bits = 99: out of range" fleet init --zk h:1 --root /x --set id.datacenter_bits=99
expect 2 "reserve 5-2: not a list of worker IDs" fleet init --zk 127.0.0.1:1 --root /x --reserve 5-2 --timeout 300
expect 1 "does not answer within 300 ms" fleet init --zk 127.0.0.1:1 --root /x --timeout 300
expect 2 "release abc: WORKER must be a worker ID" fleet release abc --zk 127.0.0.1:1 --root /x
expect 2 "release (missing)" fleet release --zk 127.0.0.1:1 --root /x
expect 2 "\-\-timeout" fleet ls --zk 127.0.0.1:1 --root /x --timeout 5
expect 3 "does not answer within 300 ms" fleet ls --zk 127.0.0.1:1 --root /x --timeout 300
expect 3 "does not answer" fleet check --zk 127.0.0.1:1 --root /x --timeout 300
expect 3 "own leases .* on its /metrics: flakectl status --metrics HOST:PORT" \
	fleet ls --zk 127.0.0.1:1 --root /x --timeout 300
expect 0 "flakectl fleet ls" fleet --help
# issue 33: an endpoint with user info is refused, and the secret is never echoed
out=$("$CTL" fleet ls --etcd http://fw:s3cret@127.0.0.1:1 --root /x --timeout 300 2>&1)
if [ $? -ne 0 ] && grep -q "holds user info" <<<"$out" && ! grep -q s3cret <<<"$out"; then
	echo "ok   an etcd endpoint with user info: refused, the password not echoed"
else
	echo "FAIL an etcd endpoint with user info: $out"
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
