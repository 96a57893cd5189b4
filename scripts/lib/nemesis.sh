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

# ---- the registry: ZooKeeper or etcd, 3 servers in the hub namespace ----

# scripts/lib/servers.sh's arrays must be global: sourced here, never inside
# a function. The servers get what the store-error fault needs: ZooKeeper
# quota enforcement; etcd a small backend quota and periodic compaction.
STORE_QUOTA_MB=${STORE_QUOTA_MB:-24}
ZK_BIND=0.0.0.0 ETCD_BIND=0.0.0.0
ZK_JVM_ARGS=-Dzookeeper.enforceQuota=true
ETCD_TOKEN="nemesis-$RID"
ETCD_ARGS="--quota-backend-bytes $((STORE_QUOTA_MB << 20)) --auto-compaction-mode periodic --auto-compaction-retention 30s"
# shellcheck source=servers.sh
. "$ROOT/scripts/lib/servers.sh"

# store_start: the servers in the hub namespace; sets STORE_LOCAL (the
# connect string from inside the hub). etcd's data sits on a tmpfs (three
# members fsyncing on a 2-core machine's disk are slow to elect).
store_start() {
	case "$STORE" in
	zookeeper)
		zk_start "$RUN/zk" 3 "ip netns exec $HUB" || return 1
		STORE_LOCAL=$ZK_CONNECT
		;;
	etcd)
		mkdir -p "$RUN/etcd"
		mount -t tmpfs -o size=1g tmpfs "$RUN/etcd" || return 1
		NM_MOUNTS+=("$RUN/etcd")
		etcd_start "$RUN/etcd" 3 "ip netns exec $HUB" || return 1
		STORE_LOCAL=$ETCD_ENDPOINTS
		;;
	*) return 1 ;;
	esac
}

# store_connect_for I: the connect string node I uses (through its veth).
store_connect_for() {
	local i=$1 c="" p
	case "$STORE" in
	zookeeper) for p in "${ZK_CPORT[@]}"; do c+="${c:+,}10.99.$i.1:$p"; done ;;
	etcd) for p in "${ETCD_CPORT[@]}"; do c+="${c:+,}http://10.99.$i.1:$p"; done ;;
	esac
	echo "$c"
}

# store_fleet_set I: the responder's --set option naming the registry.
store_fleet_set() { echo "fleet.$STORE=$(store_connect_for "$1")"; }

# store_flag: flakectl fleet's option naming the store.
store_flag() { case "$STORE" in zookeeper) echo --zk ;; etcd) echo --etcd ;; esac; }

store_kill_leader() { # sets STORE_KILLED to the index of the server killed
	case "$STORE" in
	zookeeper) STORE_KILLED=$(zk_leader) || return 1; zk_stop_one "$STORE_KILLED" ;;
	etcd)
		STORE_KILLED=$(etcd_leader)
		[ -n "$STORE_KILLED" ] || return 1
		etcd_stop_one "$STORE_KILLED"
		;;
	esac
}
store_start_one() { case "$STORE" in zookeeper) zk_start_one "$1" ;; etcd) etcd_start_one "$1" ;; esac; }
store_stop_all() { case "$STORE" in zookeeper) zk_stop_all ;; etcd) etcd_stop_all ;; esac; }
store_start_all() {
	local i
	case "$STORE" in
	zookeeper) for ((i = 1; i <= ZK_N; i++)); do [ -z "${ZK_PID[$i]:-}" ] && zk_start_one "$i"; done ;;
	etcd) for ((i = 1; i <= ETCD_N; i++)); do [ -z "${ETCD_PID[$i]:-}" ] && etcd_start_one "$i"; done ;;
	esac
	return 0
}
store_ls() { # the registry, as flakectl fleet ls prints it (from the hub)
	ip netns exec "$HUB" "$FLAKECTL" fleet ls "$(store_flag)" "$STORE_LOCAL" --root "$FLEET_ROOT" \
		--timeout 1000 2>&1
}

# store_wipe_root: the fleet root's keys deleted, as a wiped registry (from the hub).
store_wipe_root() {
	case "$STORE" in
	zookeeper)
		ip netns exec "$HUB" /usr/share/zookeeper/bin/zkCli.sh -server "$STORE_LOCAL" \
			deleteall "$FLEET_ROOT" >/dev/null 2>&1
		;;
	etcd) ip netns exec "$HUB" etcdctl --endpoints "$STORE_LOCAL" del --prefix "$FLEET_ROOT" >/dev/null ;;
	esac
}

# store_snapshot_save DIR: a copy of the registry to restore later, in DIR
# (emptied first). etcd: `etcdctl snapshot save` from one running member,
# online. ZooKeeper: every server stopped (SIGKILL, as store-restart), its
# data directory copied, the ensemble started again (a copy of a stopped
# ensemble). 1 when no copy was made.
store_snapshot_save() {
	local d=$1 i
	rm -rf "$d"
	mkdir -p "$d"
	case "$STORE" in
	etcd)
		for ((i = 1; i <= ETCD_N; i++)); do
			[ -n "${ETCD_PID[$i]:-}" ] || continue
			ip netns exec "$HUB" env ETCDCTL_API=3 etcdctl --endpoints "http://127.0.0.1:${ETCD_CPORT[$i]}" \
				--command-timeout 10s snapshot save "$d/snap.db" >"$d/save.log" 2>&1 && [ -s "$d/snap.db" ] &&
				return 0
		done
		return 1
		;;
	zookeeper)
		zk_stop_all
		for ((i = 1; i <= ZK_N; i++)); do cp -a "$ZK_DIR/zk$i/data" "$d/zk$i" || break; done
		store_start_all
		zk_wait_ready 60 >/dev/null
		[ "$i" -gt "$ZK_N" ]
		;;
	esac
}

# store_snapshot_restore DIR: every server stopped and its data replaced by
# the copy store_snapshot_save made in DIR, then started (etcd: `etcdctl
# snapshot restore` per member, with its name, the cluster and the run's
# token, as an operator rebuilds a cluster from a snapshot; ZooKeeper: each
# server's data directory copied back). 1 when the servers did not come back.
store_snapshot_restore() {
	local d=$1 i
	case "$STORE" in
	etcd)
		etcd_stop_all
		for ((i = 1; i <= ETCD_N; i++)); do
			rm -rf "$ETCD_DIR/etcd$i/data"
			ETCDCTL_API=3 etcdctl snapshot restore "$d/snap.db" --data-dir "$ETCD_DIR/etcd$i/data" \
				--name "m$i" --initial-cluster "$(etcd_cluster_arg)" --initial-cluster-token "$ETCD_TOKEN" \
				--initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PPORT[$i]}" >>"$d/restore.log" 2>&1 ||
				return 1
		done
		store_start_all
		etcd_wait_ready 30
		;;
	zookeeper)
		zk_stop_all
		for ((i = 1; i <= ZK_N; i++)); do
			rm -rf "$ZK_DIR/zk$i/data"
			cp -a "$d/zk$i" "$ZK_DIR/zk$i/data" || return 1
		done
		store_start_all
		zk_wait_ready 60
		;;
	esac
}

# fleet_fence: the operator's `flakectl fleet fence` after a wipe, from the hub.
fleet_fence() {
	ip netns exec "$HUB" "$FLAKECTL" fleet fence "$(store_flag)" "$STORE_LOCAL" \
		--root "$FLEET_ROOT" --set "id.worker_bits=$WB" --lease-ms "$LONG_LEASE" --timeout 10000
}

# fleet_release WORKER [--force]: flakectl fleet release, from the hub.
fleet_release() {
	ip netns exec "$HUB" "$FLAKECTL" fleet release "$1" "$(store_flag)" "$STORE_LOCAL" \
		--root "$FLEET_ROOT" --timeout 5000 "${@:2}"
}

# store_owned: how many worker IDs the registry shows owned (empty: unreadable).
store_owned() { store_ls | sed -n 's/^\([0-9]*\) of [0-9]* worker IDs owned.*/\1/p'; }

# store_alive IDENTITY: the registry shows IDENTITY's session alive (flakectl
# fleet ls: an owned worker ID whose SESSION column says alive).
store_alive() { store_ls | awk -v id="$1" '$2 == id && $7 == "alive" { f = 1 } END { exit !f }'; }

# ---- store errors that are not unreachability (the store-error fault) ----

# etcdctl_hub ARGS: etcdctl against the cluster, from the hub.
etcdctl_hub() {
	ip netns exec "$HUB" env ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ENDPOINTS" \
		--command-timeout 5s "$@"
}

# zkcli_hub < COMMANDS: ZooKeeper's own CLI against server 1..3, from the hub.
zkcli_hub() {
	ip netns exec "$HUB" env JVMFLAGS="-Xmx64m -XX:TieredStopAtLevel=1" ZOO_LOG4J_PROP=ERROR,CONSOLE \
		/usr/share/zookeeper/bin/zkCli.sh -server "$ZK_CONNECT" 2>&1
}

# store_error_on: the store refuses writes for a reason other than being
# unreachable. etcd: junk keys outside the fleet's root until its NOSPACE
# alarm raises (writes fail "database space exceeded"). ZooKeeper: a hard
# quota on the fleet's root at its present size and count (creates and
# growing writes fail "Quota has exceeded"). Notes what it did; 1 if the
# error could not be raised.
store_error_on() {
	local k out
	case "$STORE" in
	etcd)
		head -c $((768 << 10)) /dev/urandom | base64 -w0 >"$RUN/junk"
		for ((k = 1; k <= 2 * STORE_QUOTA_MB + 8; k++)); do
			out=$(etcdctl_hub put "/nemesis-junk/$k" <"$RUN/junk" 2>&1)
			case "$out" in *"space exceeded"*) break ;; esac
		done
		out=$(etcdctl_hub alarm list 2>&1)
		ev note store "junk keys: $k of 768 KiB; alarm: $(echo "$out" | tr -s ' \n' ' ' | cut -c1-120)"
		case "$out" in *NOSPACE*) return 0 ;; esac
		return 1
		;;
	zookeeper)
		out=$(printf 'setquota -n 1000000 %s\nlistquota %s\nquit\n' "$FLEET_ROOT" "$FLEET_ROOT" | zkcli_hub)
		local use cnt bytes
		use=$(echo "$out" | grep -o 'Output stat for [^ ]* count=[0-9]*,bytes=[0-9]*' | tail -n 1)
		cnt=$(echo "$use" | sed -n 's/.*count=\([0-9]*\).*/\1/p')
		bytes=$(echo "$use" | sed -n 's/.*bytes=\([0-9]*\).*/\1/p')
		[ -n "$cnt" ] && [ -n "$bytes" ] || { ev note store "quota: no usage read"; echo "$out" >"$RUN/zkcli.err"; return 1; }
		out=$(printf 'delquota %s\nsetquota -B %s %s\nlistquota %s\nquit\n' "$FLEET_ROOT" \
			"$bytes" "$FLEET_ROOT" "$FLEET_ROOT" | zkcli_hub)
		ev note store "hard quota on $FLEET_ROOT: count $cnt bytes $bytes"
		echo "$out" | grep -q "Output quota for" || { echo "$out" >"$RUN/zkcli.err"; return 1; }
		return 0
		;;
	esac
}

# store_error_off: undoes store_error_on (etcd: junk deleted, compacted,
# defragmented, the alarm disarmed; ZooKeeper: the quota deleted).
store_error_off() {
	local rev
	case "$STORE" in
	etcd)
		etcdctl_hub del --prefix /nemesis-junk/ >/dev/null 2>&1
		rev=$(etcdctl_hub endpoint status -w json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
print(max(e["Status"]["header"]["revision"] for e in json.load(sys.stdin)))' 2>/dev/null)
		[ -n "$rev" ] && etcdctl_hub compact "$rev" >/dev/null 2>&1
		etcdctl_hub defrag --cluster >/dev/null 2>&1
		etcdctl_hub alarm disarm >/dev/null 2>&1
		ev note store "junk deleted, compacted at ${rev:-?}, defragmented, alarm: $(etcdctl_hub alarm list 2>&1 | tr -s ' \n' ' ' | cut -c1-60)"
		;;
	zookeeper)
		printf 'delquota %s\nquit\n' "$FLEET_ROOT" | zkcli_hub >/dev/null
		ev note store "quota deleted"
		;;
	esac
}

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
	[ "$i" = "${LONG_NODE:-}" ] && set+=(--set "fleet.lease_ms=$LONG_LEASE")
	if [ "${KIND[$i]}" = wire ]; then
		RESP_CMD=(ip netns exec "${NS[$i]}" env FLAKEWIRE_TEST_CLOCK="${DIR[$i]}/clock"
			"$FLAKEWIRE" --lcores "$(proc_lcores 0,1)" --no-huge --no-pci -m 256 --file-prefix "nm${RID}w$i" --
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
	ip netns exec "$2" /usr/bin/python3 "$ROOT/scripts/nemesis/client.py" \
		--server 10.77.0.2:4242 --out "$RUN/clients/$1.log" --seed "$((SEED + ${#NM_PIDS[@]}))" \
		--seconds "$((TOTAL_S + 120))" --rate "$RATE" --stop "$RUN/stop" \
		>"$RUN/clients/$1.err" 2>&1 &
	NM_PIDS+=($!)
	CPID_LAST=$!
}

# twin_start NAME I IDENTITY STATE_DIR: a second flakesock (settings of node
# I, identity IDENTITY, state in STATE_DIR) in the twin namespace with its own
# client, logging to RUN/twin/NAME; sets TWIN_PID and TWIN_CPID.
twin_start() {
	local tw=$1 i=$2 id=$3 st=$4
	mkdir -p "$RUN/twin/$tw" "$st"
	ev ident "$tw" "$id/$tw"
	client_start "$tw" "$TWIN_NS"
	TWIN_CPID=$CPID_LAST
	local set=(--set "$(store_fleet_set "$TWIN_I")" --set "fleet.identity=$id"
		--set "fleet.cache_file=$st/cache" --set "state.file=$st/mark" "${FLEET_SET[@]}")
	[ "$i" = "${LONG_NODE:-}" ] && set+=(--set "fleet.lease_ms=$LONG_LEASE")
	ip netns exec "$TWIN_NS" env FLAKEWIRE_TEST_CLOCK="$RUN/twin/$tw/clock" "$FLAKESOCK" \
		--listen 10.77.0.2 --threads 2 "${set[@]}" >"$RUN/twin/$tw/resp.log" 2>&1 &
	TWIN_PID=$!
}

# twin_stop NAME: SIGTERM to a twin still running (SIGKILL after 5 s), its
# exit noted; its client stopped.
twin_stop() {
	local tw=$1 rc t
	if proc_alive "$TWIN_PID"; then
		kill -TERM "$TWIN_PID"
		for ((t = 0; t < 50; t++)); do proc_alive "$TWIN_PID" || break; sleep 0.1; done
		kill -KILL "$TWIN_PID" 2>/dev/null
		wait "$TWIN_PID"
		rc=$?
		ev note "$tw" "twin still running at the end: SIGTERM; exit $rc"
	else
		wait "$TWIN_PID"
		rc=$?
		ev note "$tw" "twin exited by itself: exit $rc: $(grep -m1 -i 'identity\|fleet\|locked' "$RUN/twin/$tw/resp.log" | tr -s ' ' | cut -c1-160)"
	fi
	TWIN_PID=""
	kill -TERM "$TWIN_CPID" 2>/dev/null
	wait "$TWIN_CPID" 2>/dev/null
}

# client_issuing NODE: NODE's client logged an ID in the last 1.5 s (its log
# is flushed every 0.5 s).
client_issuing() {
	local since=$(($(now_us) - 1500000))
	tail -n 400 "$RUN/clients/$1.log" 2>/dev/null |
		awk -v s="$since" '$1 == "R" && $3 >= s && $5 == 0 && $8 != "-" { f = 1 } END { exit !f }'
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
	[ "${ETCD_N:-0}" -gt 0 ] && etcd_stop_all
	for m in "${NM_MOUNTS[@]}"; do umount -l "$m" 2>/dev/null; done
	for ns in "${NM_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null; done
	for p in "${NM_PREFIXES[@]}"; do rm -rf "/var/run/dpdk/$p"; done
	return 0
}
