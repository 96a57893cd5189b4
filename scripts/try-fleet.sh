#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A registry to try a fleet with on one machine (doc/fleet.md "Try it here"): a
# 3-server ZooKeeper ensemble or a 3-member etcd cluster on loopback, from
# Debian's packages (scripts/install-deps.sh installs them), data under DIR,
# free ports. It stays up in the background until `stop DIR`; the connect
# string is printed and kept in DIR/connect.
#
#   scripts/try-fleet.sh zookeeper DIR   start; prints e.g. 127.0.0.1:41234,...
#   scripts/try-fleet.sh etcd DIR        start; prints e.g. http://127.0.0.1:41236,...
#   scripts/try-fleet.sh etcd DIR PKI    the same over TLS with client certificates:
#                                        PKI holds ca.pem, server.pem/.key, client.pem/.key
#                                        (doc/fleet.md's openssl commands); https://...
#   scripts/try-fleet.sh stop DIR        stop what DIR holds (by PID) and remove DIR
#
# Not for production: loopback only, small timeouts, no authentication but
# etcd's client certificates.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-} DIR=${2:-} PKI=${3:-}
[ -n "$what" ] && [ -n "$DIR" ] || { sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
case $what in
zookeeper | etcd)
	[ ! -e "$DIR/pids" ] || { echo "try-fleet.sh: $DIR already holds a registry (stop it first)" >&2; exit 1; }
	mkdir -p "$DIR"
	DIR=$(cd "$DIR" && pwd)
	if [ "$what" = zookeeper ]; then
		. "$ROOT/scripts/lib/servers.sh"
		zk_start "$DIR" 3 || { echo "try-fleet.sh: ZooKeeper did not start (see $DIR/zk*/)" >&2; zk_stop_all; exit 1; }
		echo "${ZK_PID[@]}" >"$DIR/pids"
		echo "$ZK_CONNECT" >"$DIR/connect"
	else
		if [ -n "$PKI" ]; then
			for f in ca.pem server.pem server.key client.pem client.key; do
				[ -r "$PKI/$f" ] || { echo "try-fleet.sh: $PKI/$f missing (doc/fleet.md makes it)" >&2; exit 1; }
			done
			ETCD_TLS_DIR=$(cd "$PKI" && pwd)
		fi
		. "$ROOT/scripts/lib/servers.sh"
		etcd_start "$DIR" 3 || { echo "try-fleet.sh: etcd did not start (see $DIR/etcd*/)" >&2; etcd_stop_all; exit 1; }
		echo "${ETCD_PID[@]}" >"$DIR/pids"
		echo "$ETCD_ENDPOINTS" >"$DIR/connect"
	fi
	cat "$DIR/connect"
	;;
stop)
	[ -f "$DIR/pids" ] || { echo "try-fleet.sh: $DIR holds no registry" >&2; exit 1; }
	read -r -a pids <"$DIR/pids"
	kill -TERM "${pids[@]}" 2>/dev/null
	# kill -0 with several PIDs fails once any one is gone: ask each
	any_alive() {
		local p
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
		return 1
	}
	for _ in $(seq 50); do any_alive || break; sleep 0.1; done
	kill -KILL "${pids[@]}" 2>/dev/null
	# not our children (an earlier call started them): gone when none answers kill -0
	for _ in $(seq 50); do any_alive || break; sleep 0.1; done
	rm -rf "$DIR"
	;;
*)
	echo "try-fleet.sh: $what: zookeeper, etcd or stop" >&2
	exit 2
	;;
esac
