#!/usr/bin/env bash
# lib/fleet's ZooKeeper ACLs against a real server on loopback (test_zk_acl.c).
# usage: test_zk_acl.sh TEST_ZK_ACL_BINARY
set -u
BIN=$1
# in a namespace of its own: the servers' loopback ports are this test's
. "$(dirname "$0")/../lib.sh"
sys_own_ns zkacl "$0" "$@"
TMP=$(mktemp -d /tmp/fwt-zkacl.XXXXXX)
. "$(dirname "$0")/../../../scripts/lib/servers.sh"
trap 'zk_stop_all; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
zk_start "$TMP" 1 || { echo "FAIL: ZooKeeper did not start"; tail -20 "$TMP"/zk*/server.log; exit 1; }
FW_ZK=$ZK_CONNECT "$BIN"
