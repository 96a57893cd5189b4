# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# The servers tests and scripts start for themselves, started one way
# (sourced, never run): a ZooKeeper ensemble, an etcd cluster, a MariaDB and a
# PostgreSQL 15, each from Debian's packages (scripts/install-deps.sh), run
# directly (never a system service), with its own data directory under the
# caller's DIR and free loopback ports, waited for within a bound and stopped
# by PID (scripts/lib/proc.sh).
#
# Source this file at the top level, never inside a function: its arrays must
# be global. The settings below are read when a server starts, so a caller may
# set them before sourcing or before each start.
#
# ---- ZooKeeper (java, /usr/share/java/zookeeper.jar) ----
#   zk_start DIR N [PREFIX]  start N servers (1 or 3) under DIR/zkI; sets
#                            ZK_CONNECT ("127.0.0.1:P1,127.0.0.1:P2,...") and
#                            waits (60 s) until a leader serves and every
#                            server answers `srvr` with a Mode: line. PREFIX:
#                            a command put before java (e.g. "ip netns exec
#                            NS"), optional.
#   zk_stop_one I            SIGKILL server I (1-based); zk_start_one I restarts it
#   zk_leader                prints the index of the leader (or nothing)
#   zk_stop_all              stops every server (also from an EXIT trap)
#   zk_wait_ready SECS [N]   until a leader serves and N servers (default: all
#                            running) have a mode
#   zk_srvr PORT             the `srvr` four-letter answer of the server on PORT
#   ZK_BIND (default 127.0.0.1): the client port's address; 0.0.0.0 inside a
#   test's own namespace lets nodes in other namespaces reach it over a veth.
#   ZK_JVM_ARGS: more java options (e.g. -Dzookeeper.enforceQuota=true).
#   ZK_CFG_EXTRA: more zoo.cfg lines (e.g. "maxClientCnxns=0": hundreds of
#   sessions from one address, which ZooKeeper caps at 60 per server).
#   The servers write their transaction log without fsync (forceSync=no):
#   a test's data is thrown away and a killed server's writes stay in the
#   page cache, so only a crash of the machine could lose them. It removes
#   the server's one wait on the disk per write: on a purged machine, with
#   packages unpacking beside the tests, fleet-lib's ZooKeeper operations
#   timed out.
#
# ---- etcd (etcd-server) ----
#   etcd_start DIR N [PREFIX]  start N members (1 or 3) under DIR/etcdI; sets
#                              ETCD_ENDPOINTS ("http://127.0.0.1:P1,...") and
#                              waits (30 s) until the cluster has a leader.
#   etcd_stop_one I / etcd_start_one I / etcd_leader / etcd_stop_all /
#   etcd_wait_ready SECS [N]   as for ZooKeeper
#   etcd_status I              member I's /v3/maintenance/status reply (JSON)
#   ETCD_BIND (default 127.0.0.1): as ZK_BIND.
#   ETCD_TLS_DIR (default empty): a directory with ca.pem, server.pem,
#   server.key, client.pem and client.key (doc/fleet.md's openssl commands
#   make them): the members serve https:// with client certificate
#   authentication (peers stay http:// on loopback) and ETCD_ENDPOINTS are
#   https://.
#   ETCD_TOKEN (default fwtest-PID): the cluster token; ETCD_ARGS: more etcd
#   options (word-split: e.g. --quota-backend-bytes N).
#   ETCD_TMPFS=1 (as root): etcd_start mounts a tmpfs of its own on each
#   member's directory (DIR/etcdI), so its data survives the member's and the
#   cluster's restarts but its fsyncs never wait on the disk. etcd 3.4 has no
#   switch to write without fsync (ZooKeeper's forceSync=no above), and on a
#   machine installing packages beside the tests a member's write waited
#   behind dpkg's (fleet-sock-etcd missed a lease). The caller unmounts them
#   (tests/system/lib.sh's sys_cleanup unmounts everything under SYS_TMP).
#
# ---- MariaDB (mariadb-server) ----
#   mariadb_start DIR [MARIADBD_OPTION...]
#       mariadb-install-db into DIR/data (log DIR/install.log), then mariadbd
#       (as root: --user=root) with socket DIR/sock, a free port on 127.0.0.1,
#       DIR/pid, error log DIR/server.log, innodb_flush_log_at_trx_commit=2
#       and the options given; waits (60 s) until `SELECT 1` answers on the
#       socket. Sets MARIADB_PID, MARIADB_PORT, MARIADB_SOCK. Its environment
#       is the caller's (e.g. FLAKEWIRE_CONF=FILE mariadb_start ...).
#   mariadb_stop_all           stops every mariadbd started (TERM, 30 s, KILL)
#
# ---- PostgreSQL 15 (postgresql-15) ----
#   pg_start DIR [SETTING=VALUE...]
#       initdb into DIR/data (log DIR/initdb.log; as root everything runs as
#       the postgres user), then pg_ctl start -w -t 60 with the socket in
#       DIR/sock, a free port on 127.0.0.1, the log DIR/server.log and the
#       settings given. Sets PG_PID (the postmaster), PG_PORT, PG_SOCK.
#   pg_stop                    fast shutdown (SIGINT to the postmaster, which is
#                              not our child), 30 s, then SIGKILL
#   pg_as_pg CMD...            CMD as the postgres user when root (psql, ...)
#   PG_BIN (default /usr/lib/postgresql/15/bin)
#
# The stops are safe under `set -e`; a caller with set -e calls a start as
# `start ... || die ...`.
# Every start returns non-zero on failure with a line on stderr naming what
# did not start and where its log is (MariaDB and PostgreSQL: the log's tail).

SERVERS_LIB=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=proc.sh
. "$SERVERS_LIB/proc.sh"

# ---------------------------------------------------------------- ZooKeeper

ZK_DIR=""
ZK_N=0
ZK_PREFIX=""
ZK_CONNECT=""
ZK_BIND=${ZK_BIND:-127.0.0.1}
ZK_JVM_ARGS=${ZK_JVM_ARGS:-}
declare -a ZK_PID ZK_CPORT

zk_srvr() {
	${ZK_PREFIX} /usr/bin/python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
    s.sendall(b"srvr")
    out = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        out += d
    print(out.decode(errors="replace"))
except OSError:
    pass
PY
}

zk_mode() { zk_srvr "${ZK_CPORT[$1]}" | sed -n 's/^Mode: //p'; }

zk_start_one() {
	local i=$1 d="$ZK_DIR/zk$1"
	# shellcheck disable=SC2086
	${ZK_PREFIX} java -Xmx96m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
		-Dzookeeper.log.dir="$d" -Dzookeeper.root.logger=INFO,CONSOLE \
		-Dzookeeper.admin.enableServer=false ${ZK_JVM_ARGS} \
		-cp "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/*" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >>"$d/server.log" 2>&1 &
	ZK_PID[$i]=$!
}

zk_stop_one() {
	local pid=${ZK_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	ZK_PID[$1]=""
}

zk_stop_all() {
	local i
	for ((i = 1; i <= ZK_N; i++)); do zk_stop_one "$i"; done
}

zk_leader() {
	local i
	for ((i = 1; i <= ZK_N; i++)); do
		case "$(zk_mode "$i")" in leader | standalone) echo "$i"; return 0 ;; esac
	done
	return 1
}

zk_wait_ready() {
	local secs=$1 want=${2:-} t i up
	if [ -z "$want" ]; then
		want=0
		for ((i = 1; i <= ZK_N; i++)); do [ -n "${ZK_PID[$i]:-}" ] && want=$((want + 1)); done
	fi
	for ((t = 0; t < secs * 5; t++)); do
		up=0
		for ((i = 1; i <= ZK_N; i++)); do
			[ -n "${ZK_PID[$i]:-}" ] && [ -n "$(zk_mode "$i")" ] && up=$((up + 1))
		done
		[ "$up" -ge "$want" ] && zk_leader >/dev/null && return 0
		sleep 0.2
	done
	return 1
}

zk_start() {
	ZK_DIR=$1 ZK_N=$2 ZK_PREFIX=${3:-}
	local i servers="" d
	command -v java >/dev/null || { echo "servers.sh: java missing (default-jre-headless)" >&2; return 1; }
	[ -r /usr/share/java/zookeeper.jar ] ||
		{ echo "servers.sh: zookeeper.jar missing (Debian package zookeeper)" >&2; return 1; }
	ZK_CONNECT=""
	for ((i = 1; i <= ZK_N; i++)); do
		ZK_CPORT[$i]=$(proc_free_port)
		if [ "$ZK_N" -gt 1 ]; then
			servers+="server.$i=127.0.0.1:$(proc_free_port):$(proc_free_port)"$'\n'
		fi
		ZK_CONNECT+="${ZK_CONNECT:+,}127.0.0.1:${ZK_CPORT[$i]}"
	done
	for ((i = 1; i <= ZK_N; i++)); do
		d="$ZK_DIR/zk$i"
		mkdir -p "$d/data"
		echo "$i" >"$d/data/myid"
		cat >"$d/zoo.cfg" <<CFG
tickTime=500
initLimit=20
syncLimit=4
dataDir=$d/data
clientPort=${ZK_CPORT[$i]}
clientPortAddress=$ZK_BIND
admin.enableServer=false
4lw.commands.whitelist=srvr,stat,ruok
forceSync=no
minSessionTimeout=1000
maxSessionTimeout=60000
${ZK_CFG_EXTRA:-}
$servers
CFG
		zk_start_one "$i"
	done
	zk_wait_ready 120 ||
		{ echo "servers.sh: ZooKeeper ($ZK_N servers) not ready within 120 s (logs: $ZK_DIR/zk*/server.log)" >&2; return 1; }
}

# --------------------------------------------------------------------- etcd

ETCD_DIR=""
ETCD_N=0
ETCD_PREFIX=""
ETCD_ENDPOINTS=""
ETCD_BIND=${ETCD_BIND:-127.0.0.1}
ETCD_TLS_DIR=${ETCD_TLS_DIR:-}
ETCD_SCHEME=http
declare -a ETCD_PID ETCD_CPORT ETCD_PPORT

etcd_cluster_arg() {
	local i out=""
	for ((i = 1; i <= ETCD_N; i++)); do
		out+="${out:+,}m$i=http://127.0.0.1:${ETCD_PPORT[$i]}"
	done
	echo "$out"
}

etcd_start_one() {
	local i=$1 d="$ETCD_DIR/etcd$1" state=new
	local -a tls=()
	[ -d "$d/data/member" ] && state=existing
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
		--initial-cluster-token "${ETCD_TOKEN:-fwtest-$$}" \
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
	ETCD_DIR=$1 ETCD_N=$2 ETCD_PREFIX=${3:-}
	local i
	command -v etcd >/dev/null || { echo "servers.sh: etcd missing (Debian package etcd-server)" >&2; return 1; }
	ETCD_ENDPOINTS=""
	ETCD_SCHEME=http
	[ -z "$ETCD_TLS_DIR" ] || ETCD_SCHEME=https
	for ((i = 1; i <= ETCD_N; i++)); do
		ETCD_CPORT[$i]=$(proc_free_port)
		ETCD_PPORT[$i]=$(proc_free_port)
		ETCD_ENDPOINTS+="${ETCD_ENDPOINTS:+,}$ETCD_SCHEME://127.0.0.1:${ETCD_CPORT[$i]}"
	done
	for ((i = 1; i <= ETCD_N; i++)); do
		if [ "${ETCD_TMPFS:-}" = 1 ] && [ "$(id -u)" -eq 0 ]; then
			mkdir -p "$ETCD_DIR/etcd$i" &&
				mount -t tmpfs -o size=256m tmpfs "$ETCD_DIR/etcd$i" ||
				{ echo "servers.sh: cannot mount a tmpfs on $ETCD_DIR/etcd$i" >&2; return 1; }
		fi
		etcd_start_one "$i"
	done
	etcd_wait_ready 30 ||
		{ echo "servers.sh: etcd ($ETCD_N members) has no leader within 30 s (logs: $ETCD_DIR/etcd*/server.log)" >&2; return 1; }
}

# ------------------------------------------------------------------ MariaDB

MARIADB_PID="" MARIADB_PORT="" MARIADB_SOCK=""
declare -a MARIADB_PIDS

mariadb_start() {
	local dir=$1
	shift
	local -a user=()
	command -v mariadbd >/dev/null || { echo "servers.sh: mariadbd missing (Debian package mariadb-server)" >&2; return 1; }
	[ "$(id -u)" -eq 0 ] && user=(--user=root)
	mkdir -p "$dir"
	mariadb-install-db --no-defaults "${user[@]}" --datadir="$dir/data" \
		--auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 ||
		{ cat "$dir/install.log" >&2; echo "servers.sh: mariadb-install-db failed (log above)" >&2; return 1; }
	MARIADB_PORT=$(proc_free_port)
	MARIADB_SOCK=$dir/sock
	mariadbd --no-defaults "${user[@]}" --datadir="$dir/data" --socket="$MARIADB_SOCK" \
		--port="$MARIADB_PORT" --bind-address=127.0.0.1 --pid-file="$dir/pid" \
		--log-error="$dir/server.log" --innodb-flush-log-at-trx-commit=2 "$@" \
		>"$dir/stderr.log" 2>&1 &
	MARIADB_PID=$!
	MARIADB_PIDS+=("$MARIADB_PID")
	proc_wait_for 60 mariadb --no-defaults -S "$MARIADB_SOCK" -uroot -e 'SELECT 1' || {
		tail -n 20 "$dir/server.log" "$dir/stderr.log" >&2 2>/dev/null
		echo "servers.sh: MariaDB did not answer on $MARIADB_SOCK within 60 s (logs above)" >&2
		return 1
	}
}

mariadb_stop_all() {
	proc_stop_all 30 "${MARIADB_PIDS[@]}"
	MARIADB_PIDS=()
}

# --------------------------------------------------------------- PostgreSQL

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_DIR="" PG_PID="" PG_PORT="" PG_SOCK=""

pg_as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
	local dir=$1 s
	shift
	local -a opts=()
	[ -x "$PG_BIN/postgres" ] || { echo "servers.sh: $PG_BIN/postgres missing (Debian package postgresql-15)" >&2; return 1; }
	mkdir -p "$dir/data" "$dir/sock"
	[ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir"
	pg_as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
		--no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; echo "servers.sh: initdb failed (log above)" >&2; return 1; }
	PG_DIR=$dir PG_PORT=$(proc_free_port) PG_SOCK=$dir/sock PG_PID=""
	opts=(-c listen_addresses=127.0.0.1 -c "unix_socket_directories=$PG_SOCK")
	for s in "$@"; do opts+=(-c "$s"); done
	pg_as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-p $PG_PORT ${opts[*]}" start >/dev/null || {
		tail -n 20 "$dir/server.log" >&2
		echo "servers.sh: PostgreSQL did not start within 60 s (log above: $dir/server.log)" >&2
		return 1
	}
	PG_PID=$(head -1 "$dir/data/postmaster.pid")
}

pg_stop() {
	local pid=$PG_PID
	# pg_ctl may have given up waiting on a postmaster that runs all the same
	if [ -z "$pid" ] && [ -n "$PG_DIR" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
		pid=$(head -1 "$PG_DIR/data/postmaster.pid" 2>/dev/null || true)
	fi
	if [ -n "$pid" ]; then proc_stop "$pid" INT 30 || true; fi
	PG_PID=""
}
