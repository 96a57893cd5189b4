#!/usr/bin/env bash
# An etcd cluster of its own for a test: Debian's `etcd-server` started
# directly (never a system service), one data dir per member under a temp
# dir, loopback ports picked free, stopped by PID. The same verbs as zk.sh.
#
#   . etcd.sh
#   etcd_start DIR N [PREFIX]  start N members (1 or 3) under DIR; sets
#                              ETCD_ENDPOINTS ("http://127.0.0.1:P1,...") and
#                              waits until the cluster has a leader.
#                              PREFIX: a command put before etcd (e.g.
#                              "ip netns exec NS"), optional.
#   etcd_stop_one I            SIGKILL member I (1-based); etcd_start_one I restarts it
#   etcd_leader                prints the index of the leader (or nothing)
#   etcd_stop_all              stops every member (also from an EXIT trap)
#   etcd_wait_ready SECS       until the cluster has a leader
#
# ETCD_BIND (default 127.0.0.1): the client URL's address; 0.0.0.0 inside a
# test's own namespace lets nodes in other namespaces reach it over a veth.
# ETCD_TLS_DIR (default empty): a directory with ca.pem, server.pem,
# server.key, client.pem and client.key (doc/fleet.md's openssl commands make
# them): the members serve https:// with client certificate authentication
# (peers stay http:// on loopback) and ETCD_ENDPOINTS are https://.

ETCD_DIR=""
ETCD_N=0
ETCD_PREFIX=""
ETCD_ENDPOINTS=""
ETCD_BIND=${ETCD_BIND:-127.0.0.1}
ETCD_TLS_DIR=${ETCD_TLS_DIR:-}
ETCD_SCHEME=http
declare -a ETCD_PID ETCD_CPORT ETCD_PPORT

etcd_free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

etcd_cluster_arg() {
	local i out=""
	for ((i = 1; i <= ETCD_N; i++)); do
		out+="${out:+,}m$i=http://127.0.0.1:${ETCD_PPORT[$i]}"
	done
	echo "$out"
}

etcd_start_one() {
	local i=$1 d="$ETCD_DIR/etcd$1" state=new
	[ -d "$d/data/member" ] && state=existing
	local -a tls=()
	mkdir -p "$d"
	[ -z "$ETCD_TLS_DIR" ] || tls=(--cert-file "$ETCD_TLS_DIR/server.pem"
		--key-file "$ETCD_TLS_DIR/server.key" --client-cert-auth
		--trusted-ca-file "$ETCD_TLS_DIR/ca.pem")
	# shellcheck disable=SC2086
	${ETCD_PREFIX} etcd --name "m$i" --data-dir "$d/data" \
		--listen-client-urls "$ETCD_SCHEME://$ETCD_BIND:${ETCD_CPORT[$i]}" \
		--advertise-client-urls "$ETCD_SCHEME://127.0.0.1:${ETCD_CPORT[$i]}" "${tls[@]}" \
		--listen-peer-urls "http://127.0.0.1:${ETCD_PPORT[$i]}" \
		--initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PPORT[$i]}" \
		--initial-cluster "$(etcd_cluster_arg)" --initial-cluster-state "$state" \
		--initial-cluster-token "fwtest-$$" \
		--heartbeat-interval 100 --election-timeout 1000 ${ETCD_ARGS:-} \
		--log-level warn >>"$d/server.log" 2>&1 &
	ETCD_PID[$i]=$!
}

etcd_stop_one() {
	local pid=${ETCD_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	ETCD_PID[$1]=""
}

etcd_stop_all() {
	local i
	for ((i = 1; i <= ETCD_N; i++)); do etcd_stop_one "$i"; done
}

# etcd_status I: member I's /v3/maintenance/status reply (empty if it does not answer).
etcd_status() {
	local -a tls=()
	[ -z "$ETCD_TLS_DIR" ] || tls=(--cacert "$ETCD_TLS_DIR/ca.pem"
		--cert "$ETCD_TLS_DIR/client.pem" --key "$ETCD_TLS_DIR/client.key")
	${ETCD_PREFIX} curl -s -m 1 "${tls[@]}" -X POST -d '{}' \
		"$ETCD_SCHEME://127.0.0.1:${ETCD_CPORT[$1]}/v3/maintenance/status" 2>/dev/null
}

etcd_leader() {
	local i st
	for ((i = 1; i <= ETCD_N; i++)); do
		[ -n "${ETCD_PID[$i]:-}" ] || continue
		st=$(etcd_status "$i")
		# a member is the leader when its own id is the leader it reports
		if [ -n "$st" ] && /usr/bin/python3 -c '
import json, sys
s = json.loads(sys.argv[1])
sys.exit(0 if s.get("leader") and s["leader"] == s["header"]["member_id"] else 1)' "$st" 2>/dev/null; then
			echo "$i"
			return 0
		fi
	done
}

# etcd_wait_ready SECS [N]: until the cluster has a leader and N members (default all running) answer.
etcd_wait_ready() {
	local end=$((SECONDS + $1)) want=${2:-} i up
	if [ -z "$want" ]; then
		want=0
		for ((i = 1; i <= ETCD_N; i++)); do [ -n "${ETCD_PID[$i]:-}" ] && want=$((want + 1)); done
	fi
	while [ $SECONDS -lt $end ]; do
		up=0
		for ((i = 1; i <= ETCD_N; i++)); do
			[ -n "${ETCD_PID[$i]:-}" ] && [ -n "$(etcd_status "$i")" ] && up=$((up + 1))
		done
		[ "$up" -ge "$want" ] && [ -n "$(etcd_leader)" ] && return 0
		sleep 0.2
	done
	return 1
}

etcd_start() {
	ETCD_DIR=$1
	ETCD_N=$2
	ETCD_PREFIX=${3:-}
	local i
	command -v etcd >/dev/null || { echo "etcd not found (Debian package etcd-server)"; return 1; }
	ETCD_ENDPOINTS=""
	ETCD_SCHEME=http
	[ -z "$ETCD_TLS_DIR" ] || ETCD_SCHEME=https
	for ((i = 1; i <= ETCD_N; i++)); do
		ETCD_CPORT[$i]=$(etcd_free_port)
		ETCD_PPORT[$i]=$(etcd_free_port)
		ETCD_ENDPOINTS+="${ETCD_ENDPOINTS:+,}$ETCD_SCHEME://127.0.0.1:${ETCD_CPORT[$i]}"
	done
	for ((i = 1; i <= ETCD_N; i++)); do etcd_start_one "$i"; done
	etcd_wait_ready 30
}
