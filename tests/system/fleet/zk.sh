#!/usr/bin/env bash
# A ZooKeeper ensemble of its own for a test: Debian's `zookeeper` package
# started directly (never the system service), one data dir per server under
# a temp dir, loopback ports picked free, stopped by PID.
#
#   . zk.sh
#   zk_start DIR N [PREFIX]  start N servers (1 or 3) under DIR; sets ZK_CONNECT
#                            ("127.0.0.1:P1,127.0.0.1:P2,...") and waits until
#                            every server answers `srvr` with a Mode: line.
#                            PREFIX: a command put before java (e.g.
#                            "ip netns exec NS"), optional.
#   zk_stop_one I            SIGKILL server I (1-based); zk_start_one I restarts it
#   zk_leader                prints the index of the leader (or nothing)
#   zk_stop_all              stops every server (also from an EXIT trap)
#   zk_wait_ready SECS       until a quorum serves (some server says leader)
#
# ZK_BIND (default 127.0.0.1): the client port's address; 0.0.0.0 inside a test's
# own namespace lets nodes in other namespaces reach it over a veth.
#
# Needs: java (default-jre-headless) and /usr/share/java/zookeeper.jar.

ZK_DIR=""
ZK_N=0
ZK_PREFIX=""
ZK_CONNECT=""
ZK_BIND=${ZK_BIND:-127.0.0.1}
declare -a ZK_PID ZK_CPORT

zk_free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# zk_srvr PORT: the `srvr` four-letter answer of the server on PORT (empty if none).
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
		-Dzookeeper.admin.enableServer=false \
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

# zk_wait_ready SECS [N]: until a leader serves and N servers (default all running) have a mode.
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
	command -v java >/dev/null || { echo "zk.sh: java missing (default-jre-headless)" >&2; return 1; }
	[ -r /usr/share/java/zookeeper.jar ] || { echo "zk.sh: zookeeper.jar missing (zookeeper)" >&2; return 1; }
	ZK_CONNECT=""
	for ((i = 1; i <= ZK_N; i++)); do
		ZK_CPORT[$i]=$(zk_free_port)
		if [ "$ZK_N" -gt 1 ]; then
			servers+="server.$i=127.0.0.1:$(zk_free_port):$(zk_free_port)"$'\n'
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
minSessionTimeout=1000
maxSessionTimeout=60000
$servers
CFG
		zk_start_one "$i"
	done
	zk_wait_ready 60
}
