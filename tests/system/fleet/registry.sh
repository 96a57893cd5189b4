#!/usr/bin/env bash
# The fleet's registry for a test, ZooKeeper or etcd by FW_STORE
# (zookeeper by default), behind one set of verbs, so every fleet test runs
# unchanged against both stores:
#
#   . registry.sh
#   reg_start DIR N [PREFIX]  start N servers (1 or 3); sets REG_CONNECT (what
#                             the node's config and `flakectl fleet --zk` take)
#                             and REG_SET (the --set assignment naming it:
#                             REG_KEY=REG_CONNECT)
#   reg_stop_one I / reg_start_one I / reg_leader / reg_stop_all
#   reg_wait_ready SECS [N]
#   reg_writes                a number that grows by one per write to the store
#                             (ZooKeeper's zxid, etcd's revision)
#   reg_init FLAKECTL ROOT [ARGS...]
#                             `flakectl fleet init` of ROOT in this registry (in
#                             $SYS_NS when set): a node never makes its root (issue
#                             48); ARGS: --set id.KEY=VALUE, --reserve LIST
#   reg_test NAME [SIGNAL]    a fleet test's start: sys_init NAME, one server in
#                             $SYS_NS, STORE (flakectl fleet's --zk or --etcd and
#                             REG_CONNECT), and a trap at exit that sends SIGNAL
#                             (TERM) to every SYS_PIDS, stops the registry and
#                             cleans up
#   REG_BIND (default 127.0.0.1): the client port's address (0.0.0.0 to reach
#   it from other namespaces)
#   REG_NAME: "ZooKeeper" or "etcd", for messages
# The servers themselves: scripts/lib/servers.sh (zk_*, etcd_*).
# shellcheck source=../../../scripts/lib/servers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/servers.sh"
FW_STORE=${FW_STORE:-zookeeper}
REG_BIND=${REG_BIND:-127.0.0.1}
REG_CONNECT=""
REG_SET=""
case "$FW_STORE" in
zookeeper)
	REG_NAME=ZooKeeper
	reg_start() { ZK_BIND=$REG_BIND; zk_start "$@" || return 1; REG_CONNECT=$ZK_CONNECT; REG_SET="fleet.zookeeper=$REG_CONNECT"; }
	REG_KEY=fleet.zookeeper
	reg_stop_one() { zk_stop_one "$@"; }
	reg_start_one() { zk_start_one "$@"; }
	reg_leader() { zk_leader; }
	reg_stop_all() { zk_stop_all; }
	reg_wait_ready() { zk_wait_ready "$@"; }
	reg_writes() { echo $(($(zk_srvr "${ZK_CPORT[1]}" | sed -n 's/^Zxid: //p'))); }
	;;
etcd)
	REG_NAME=etcd
	ETCD_TMPFS=1 # each member on a tmpfs (scripts/lib/servers.sh): no fsync waits on the disk
	reg_start() { ETCD_BIND=$REG_BIND; etcd_start "$@" || return 1; REG_CONNECT=$ETCD_ENDPOINTS; REG_SET="fleet.etcd=$REG_CONNECT"; }
	REG_KEY=fleet.etcd
	reg_stop_one() { etcd_stop_one "$@"; }
	reg_start_one() { etcd_start_one "$@"; }
	reg_leader() { etcd_leader; }
	reg_stop_all() { etcd_stop_all; }
	reg_wait_ready() { etcd_wait_ready "$@"; }
	reg_writes() {
		etcd_status 1 | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])'
	}
	;;
*)
	echo "registry.sh: FW_STORE=$FW_STORE: zookeeper or etcd" >&2
	return 1
	;;
esac

reg_init() {
	local ctl=$1 root=$2 flag=--zk
	shift 2
	[ "$FW_STORE" = etcd ] && flag=--etcd
	${SYS_NS:+ip netns exec "$SYS_NS"} "$ctl" fleet init "$flag" "$REG_CONNECT" --root "$root" \
		--timeout 15000 "$@"
}

reg_test_cleanup() {
	local pid
	for pid in "${SYS_PIDS[@]}"; do kill -"$REG_TEST_SIG" "$pid" 2>/dev/null; done
	sleep 0.3
	reg_stop_all
	sys_cleanup
}
reg_test() {
	sys_init "$1"
	REG_TEST_SIG=${2:-TERM}
	trap reg_test_cleanup EXIT
	reg_start "$SYS_TMP" 1 "ip netns exec $SYS_NS" || { echo "FAIL: $REG_NAME did not start"; exit 1; }
	echo "$REG_NAME: $REG_CONNECT"
	if [ "$FW_STORE" = etcd ]; then STORE=(--etcd "$REG_CONNECT"); else STORE=(--zk "$REG_CONNECT"); fi
}
