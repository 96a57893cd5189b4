#!/usr/bin/env bash
# lib/fleet against a real 3-server ZooKeeper ensemble on loopback.
# usage: test_fleet_lib.sh TEST_FLEET_LIB_BINARY
set -u
BIN=$1
# in a namespace of its own: the servers' loopback ports are this test's
. "$(dirname "$0")/../lib.sh"
sys_own_ns fleetlib "$0" "$@"
TMP=$(mktemp -d /tmp/fwt-fleetlib.XXXXXX)
. "$(dirname "$0")/../../../scripts/lib/servers.sh"
trap 'zk_stop_all; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
zk_start "$TMP" 3 || { echo "FAIL: the ZooKeeper ensemble did not start"; tail -20 "$TMP"/zk*/server.log; exit 1; }
FW_ZK=$ZK_CONNECT FW_TMP=$TMP "$BIN"
