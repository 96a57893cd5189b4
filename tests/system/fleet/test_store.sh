#!/usr/bin/env bash
# The registry interface's rules against each real store: a 3-server
# ZooKeeper ensemble and a 3-member etcd cluster started here on loopback,
# the same checks for both (test_store.c), the last one with the leader
# killed mid-test.
# usage: test_store.sh TEST_STORE_BINARY
set -u
BIN=$1
TMP=$(mktemp -d /tmp/fwt-store.XXXXXX)
D=$(dirname "$0")
. "$D/zk.sh"
. "$D/etcd.sh"
trap 'zk_stop_all; etcd_stop_all; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
fail=0

mkdir -p "$TMP/zk" "$TMP/etcd"
zk_start "$TMP/zk" 3 || { echo "FAIL: the ZooKeeper ensemble did not start"; exit 1; }
l=$(zk_leader)
[ -n "$l" ] || { echo "FAIL: the ZooKeeper ensemble has no leader"; exit 1; }
echo "== ZooKeeper ($ZK_CONNECT), leader server $l killed in the last test"
FW_STORE=zookeeper FW_STORE_CONNECT=$ZK_CONNECT FW_STORE_KILL_CMD="kill -KILL ${ZK_PID[$l]}" \
	"$BIN" || fail=1
zk_stop_all

etcd_start "$TMP/etcd" 3 || { echo "FAIL: the etcd cluster did not start"; tail -5 "$TMP"/etcd/etcd*/server.log; exit 1; }
l=$(etcd_leader)
echo "== etcd ($ETCD_ENDPOINTS), leader member $l killed in the last test"
FW_STORE=etcd FW_STORE_CONNECT=$ETCD_ENDPOINTS FW_STORE_KILL_CMD="kill -KILL ${ETCD_PID[$l]}" \
	"$BIN" || fail=1
[ $fail -eq 0 ] && echo "PASS: both stores keep S1-S4 and liveness" || echo "FAIL: a store broke a rule (above)"
exit $fail
