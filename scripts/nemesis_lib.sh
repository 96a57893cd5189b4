# SPDX-License-Identifier: BSD-3-Clause
# The machinery of scripts/nemesis.sh: the registry (store_*), the network
# (a hub namespace holding the registry's servers, one veth per node), the
# nodes (node_*: flakesock-testclock or flakewire-testclock on TAP, each in
# its own namespace with its own tmpfs state directory) and the event log.
# Sourced by nemesis.sh, which sets RUN, RID, HUB, the binaries and the
# fleet settings; every process started here is recorded for the cleanup.

NM_PIDS=()   # helper processes (clients, poller, twins) to stop at the end
NM_MOUNTS=() # tmpfs mounts to unmount
NM_NETNS=()  # namespaces to delete
NM_PREFIXES=() # DPDK --file-prefix names (runtime dirs to remove)

now_us() { date +%s%6N; }

# ev WORD ARGS...: one line of the event log (the checker reads it).
ev() { echo "$(now_us) $*" >>"$RUN/events.log"; }

say() { echo "nemesis: $*"; }

ms_to_s() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

# ---- the registry: only ZooKeeper today; etcd slots in as another case ----

# zk.sh's arrays must be global: sourced here, never inside a function.
case "$STORE" in
zookeeper)
	ZK_BIND=0.0.0.0
	# shellcheck source=../tests/system/fleet/zk.sh
	. "$ROOT/tests/system/fleet/zk.sh"
	;;
esac

# store_start: the servers in the hub namespace; sets STORE_LOCAL (the
# connect string from inside the hub).
store_start() {
	case "$STORE" in
	zookeeper)
		zk_start "$RUN/zk" 3 "ip netns exec $HUB" || return 1
		STORE_LOCAL=$ZK_CONNECT
		;;
	*) return 1 ;;
	esac
}

# store_connect_for I: the connect string node I uses (through its veth).
store_connect_for() {
	local i=$1 c="" p
	for p in "${ZK_CPORT[@]}"; do c+="${c:+,}10.99.$i.1:$p"; done
	echo "$c"
}

# store_fleet_set I: the responder's --set options naming the registry.
store_fleet_set() {
	case "$STORE" in
	zookeeper) echo "fleet.zookeeper=$(store_connect_for "$1")" ;;
	esac
}

store_kill_leader() { # sets STORE_KILLED to the index of the server killed
	STORE_KILLED=$(zk_leader) || return 1
	zk_stop_one "$STORE_KILLED"
}
store_start_one() { zk_start_one "$1"; }
store_stop_all() { zk_stop_all; }
store_start_all() {
	local i
	for ((i = 1; i <= ZK_N; i++)); do [ -z "${ZK_PID[$i]:-}" ] && zk_start_one "$i"; done
	return 0
}
store_ls() { # the registry, as flakectl fleet ls prints it (from the hub)
	ip netns exec "$HUB" "$FLAKECTL" fleet ls --zk "$STORE_LOCAL" --root "$FLEET_ROOT" \
		--timeout 1000 2>&1
}

# store_owned: how many worker IDs the registry shows owned (empty: unreadable).
store_owned() { store_ls | sed -n 's/^\([0-9]*\) of [0-9]* worker IDs owned.*/\1/p'; }

# ---- the network ----

# net_node I NS: namespace NS, lo up, a veth to the hub (10.99.I.2 <-> 10.99.I.1).
net_node() {
	local i=$1 ns=$2
	ip netns add "$ns" || return 1
	NM_NETNS+=("$ns")
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1
	ip link add "nm${RID}a$i" netns "$ns" type veth peer name "nm${RID}b$i" netns "$HUB" || return 1
	ip -n "$ns" addr add "10.99.$i.2/24" dev "nm${RID}a$i"
	ip -n "$ns" link set "nm${RID}a$i" up
	ip -n "$HUB" addr add "10.99.$i.1/24" dev "nm${RID}b$i"
	ip -n "$HUB" link set "nm${RID}b$i" up
}
net_cut() { ip -n "$HUB" link set "nm${RID}b$1" down; }
net_heal() { ip -n "$HUB" link set "nm${RID}b$1" up; }

# ---- nodes ----
# Per node I (1..N): NAME[I] (n1..), KIND[I] (sock|wire), NS[I], DIR[I]
# (logs, fault file), ST[I] (the tmpfs state dir), IDENT[I] (the identity it
# runs under now), GEN[I], PID[I], OFFSET[I] (test clock offset, ms).
declare -a NAME KIND NS DIR ST IDENT GEN PID OFFSET CPID

# node_setup I KIND: the namespace, veth, state tmpfs and fault file of node I.
node_setup() {
	local i=$1
	NAME[$i]="n$i" KIND[$i]=$2 NS[$i]="nm${RID}-n$i" DIR[$i]="$RUN/n$i" GEN[$i]=0
	IDENT[$i]="n$i" OFFSET[$i]=0 PID[$i]=""
	ST[$i]="${DIR[$i]}/state"
	mkdir -p "${ST[$i]}" "$RUN/clients"
	mount -t tmpfs -o size=256k tmpfs "${ST[$i]}" || return 1
	NM_MOUNTS+=("${ST[$i]}")
	echo "offset_ms=0" >"${DIR[$i]}/clock"
	net_node "$i" "${NS[$i]}" || return 1
	if [ "$2" = sock ]; then
		ip -n "${NS[$i]}" addr add 10.77.0.2/32 dev lo
	fi
}

# resp_cmd_for I IDENTITY STATE_DIR: RESP_CMD, the responder's command line.
resp_cmd_for() {
	local i=$1 id=$2 st=$3
	local set=(--set "$(store_fleet_set "$i")" --set "fleet.identity=$id"
		--set "fleet.cache_file=$st/cache" --set "state.file=$st/mark" "${FLEET_SET[@]}")
	if [ "${KIND[$i]}" = wire ]; then
		RESP_CMD=(ip netns exec "${NS[$i]}" env FLAKEWIRE_TEST_CLOCK="${DIR[$i]}/clock"
			"$FLAKEWIRE" -l 0,1 --no-huge --no-pci -m 256 --file-prefix "nm${RID}w$i" --
			--set "port0.device=net_tap0,iface=nm${RID}t$i" --set port0.address=10.77.0.2
			--set power.idle=sleep "${set[@]}")
	else
		RESP_CMD=(ip netns exec "${NS[$i]}" env FLAKEWIRE_TEST_CLOCK="${DIR[$i]}/clock"
			"$FLAKESOCK" --listen 10.77.0.2 --threads 2 "${set[@]}")
	fi
}

# proc_alive PID: PID runs (kill -0 also succeeds on a zombie not yet reaped).
proc_alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}

# node_launch I: starts node I's responder under IDENT[I] (returns at once).
# LOGOFF[I]: where this start's lines begin in its log.
declare -a LOGOFF
node_launch() {
	local i=$1
	resp_cmd_for "$i" "${IDENT[$i]}" "${ST[$i]}"
	ev ident "${NAME[$i]}" "${IDENT[$i]}"
	echo "==== $(now_us) start as ${IDENT[$i]}" >>"${DIR[$i]}/resp.log"
	LOGOFF[$i]=$(stat -c %s "${DIR[$i]}/resp.log")
	"${RESP_CMD[@]}" >>"${DIR[$i]}/resp.log" 2>&1 &
	PID[$i]=$!
	[ "${KIND[$i]}" = wire ] && NM_PREFIXES+=("nm${RID}w$i")
	return 0
}

# node_ready I: the responder runs and (flakewire) its TAP is configured.
node_ready() {
	local i=$1 tap="nm${RID}t$1"
	proc_alive "${PID[$i]}" || return 2
	if [ "${KIND[$i]}" = wire ]; then
		ip -n "${NS[$i]}" link show "$tap" >/dev/null 2>&1 || return 1
		ip -n "${NS[$i]}" addr show dev "$tap" | grep -q 10.77.0.1 ||
			ip -n "${NS[$i]}" addr add 10.77.0.1/24 dev "$tap" 2>/dev/null
		ip -n "${NS[$i]}" link set "$tap" up 2>/dev/null
		tail -c +$((LOGOFF[$i] + 1)) "${DIR[$i]}/resp.log" | grep -q "running on" || return 1
	else
		tail -c +$((LOGOFF[$i] + 1)) "${DIR[$i]}/resp.log" | grep -q "flakesock: listening on" || return 1
	fi
	return 0
}

# node_start I [SECS]: launches node I and waits until it runs; a start that
# fails (its worker IDs are still leased to others: the registry is full,
# or its identity is still alive) is retried every 0.5 s for SECS (default 20).
node_start() {
	local i=$1 secs=${2:-20} t rc
	node_launch "$i"
	for ((t = 0; t < secs * 10; t++)); do
		node_ready "$i"
		rc=$?
		[ $rc -eq 0 ] && return 0
		if [ $rc -eq 2 ]; then
			wait "${PID[$i]}" 2>/dev/null
			ev note "${NAME[$i]}" start-failed "rc=$?"
			sleep 0.5
			t=$((t + 5))
			node_launch "$i"
		fi
		sleep 0.1
	done
	ev note "${NAME[$i]}" start-timeout
	say "${NAME[$i]} did not come up within ${secs} s"
	return 1
}

# node_kill I: SIGKILL, reaped.
node_kill() {
	local i=$1
	[ -n "${PID[$i]}" ] || return 0
	kill -KILL "${PID[$i]}" 2>/dev/null
	wait "${PID[$i]}" 2>/dev/null
	PID[$i]=""
}

# node_term I: SIGTERM (SIGCONT first), SIGKILL after 5 s; reaped.
node_term() {
	local i=$1 t
	[ -n "${PID[$i]}" ] || return 0
	kill -CONT "${PID[$i]}" 2>/dev/null
	kill -TERM "${PID[$i]}" 2>/dev/null
	for ((t = 0; t < 50; t++)); do kill -0 "${PID[$i]}" 2>/dev/null || break; sleep 0.1; done
	node_kill "$i"
}

# node_clock I OFFSET_MS: the test clock's system-clock offset of node I.
node_clock() {
	local i=$1
	OFFSET[$i]=$2
	echo "offset_ms=$2" >"${DIR[$i]}/clock.new" && mv "${DIR[$i]}/clock.new" "${DIR[$i]}/clock"
}

# client_start NODE_NAME NS: the logging client inside NS, for the whole run.
client_start() {
	ip netns exec "$2" /usr/bin/python3 "$ROOT/scripts/nemesis_client.py" \
		--server 10.77.0.2:4242 --out "$RUN/clients/$1.log" --seed "$((SEED + ${#NM_PIDS[@]}))" \
		--seconds "$((TOTAL_S + 120))" --rate "$RATE" --stop "$RUN/stop" \
		>"$RUN/clients/$1.err" 2>&1 &
	NM_PIDS+=($!)
	CPID_LAST=$!
}

# poller_start: the registry's history, one snapshot every 0.5 s.
poller_start() {
	(
		while [ ! -e "$RUN/stop-poll" ]; do
			echo "# $(now_us)"
			store_ls
			sleep 0.5
		done
	) >>"$RUN/registry.log" 2>&1 &
	NM_PIDS+=($!)
}

# nm_cleanup: every process, mount, namespace; on every exit path.
nm_cleanup() {
	local p i m ns
	touch "$RUN/stop" "$RUN/stop-poll" 2>/dev/null
	for i in "${!PID[@]}"; do
		[ -n "${PID[$i]}" ] && kill -CONT "${PID[$i]}" 2>/dev/null && kill -TERM "${PID[$i]}" 2>/dev/null
	done
	[ -n "${TWIN_PID:-}" ] && kill -TERM "$TWIN_PID" 2>/dev/null
	for p in "${NM_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.5
	for i in "${!PID[@]}"; do [ -n "${PID[$i]}" ] && node_term "$i"; done
	[ -n "${TWIN_PID:-}" ] && kill -KILL "$TWIN_PID" 2>/dev/null && wait "$TWIN_PID" 2>/dev/null
	for p in "${NM_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ "${ZK_N:-0}" -gt 0 ] && zk_stop_all
	for m in "${NM_MOUNTS[@]}"; do umount -l "$m" 2>/dev/null; done
	for ns in "${NM_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null; done
	for p in "${NM_PREFIXES[@]}"; do rm -rf "/var/run/dpdk/$p"; done
	return 0
}
