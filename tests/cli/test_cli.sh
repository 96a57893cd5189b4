#!/usr/bin/env bash
# flakectl dispatch and help, and a short bench-core run.
# usage: test_cli.sh PATH/TO/flakectl fleet|no-fleet (built with `flakectl fleet` or not)
set -u
fc=${1:?usage: test_cli.sh FLAKECTL fleet|no-fleet}
fleet=${2:?usage: test_cli.sh FLAKECTL fleet|no-fleet}
. "$(dirname "$0")/lib.sh"

commands=(decode layout bench-core)

expect_ok "--help" --help
for c in "${commands[@]}"; do
	expect_match "--help lists $c" "$out" "^  $c "
done
expect_ok "help" help
run
expect_eq "no command: exit 2" "$rc" 2
expect_match "no command: usage on stderr" "$err" "^usage: flakectl"

for c in "${commands[@]}"; do
	expect_ok "help $c" help "$c"
	help_out=$out
	expect_match "help $c: usage line" "$out" "^usage: flakectl $c"
	expect_ok "$c --help" "$c" --help
	expect_eq "help $c is $c --help" "$out" "$help_out"
	expect_ok "$c -h" "$c" -h
done
# the registry is ZooKeeper or etcd: the help says so wherever both work
if [ "$fleet" = fleet ]; then
	expect_ok "--help" --help
	expect_match "--help: fleet names both stores" "$out" "^  fleet .*ZooKeeper or etcd"
	expect_ok "fleet --help" fleet --help
	expect_match "fleet --help: the registry in ZooKeeper or etcd" "$out" \
		"registry of a fleet, in ZooKeeper .* or\$"
	expect_match "fleet --help: ... or etcd" "$out" "^etcd \(\[fleet\] etcd and root\)"
	expect_match "fleet --help: --root in ZooKeeper" "$out" "^  --root PATH .*znode in ZooKeeper"
	expect_match "fleet --help: --root in etcd" "$out" "prefix in etcd"
	expect_match "fleet --help: --etcd" "$out" "^  --etcd URLS"
else
	run fleet --help
	expect_eq "fleet without lib/fleet: a usage error" "$rc" 2
fi
expect_usage "unknown command" "'frobnicate'" frobnicate
expect_usage "help for an unknown command" "'frobnicate'" help frobnicate
expect_ok "--version" --version
expect_match "--version prints one" "$out" '^flakectl [0-9]+\.[0-9]+'

# issue 38: a bare IPv6 address is refused with the bracketed form (::1:4246 is itself
# an address, so the port was silently part of it: no reply, no error)
for c in get info bench; do
	expect_usage "$c --server ::1:4246: refused naming [::1]:4246" "[::1]:4246 for port 4246" \
		"$c" --server ::1:4246 --timeout 200
done
expect_usage "--server ::1: refused naming [::1]" "[::1] or [::1]:PORT" get --server ::1 --timeout 200
expect_usage "--server 2001:db8::5:4242 (second of two)" "[2001:db8::5]:4242" \
	get --server 127.0.0.1:1 --server 2001:db8::5:4242 --timeout 200

expect_ok "bench-core runs" bench-core --runs 3 --iterations 5000
for op in fw_gen_next "fw_gen_list 100" "fw_gen_range 1" "fw_gen_range 100" \
	"fw_gen_range 4096" fw_clock_ms; do
	expect_match "bench-core row $op" "$out" "^\| $op +\| +[0-9.]+ / +[0-9.]+ \|"
done
expect_usage "bench-core --runs 0" "--runs 0" bench-core --runs 0
expect_usage "bench-core --iterations x" "--iterations x" bench-core --iterations x
expect_usage "bench --rate 0" "--rate 0: out of range (allowed 1-100000000)" bench --rate 0

finish
