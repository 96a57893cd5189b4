#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A fleet under a nemesis, every ID checked (doc/nemesis.md).
#
# N nodes of both responders, the test-clock builds (flakesock-testclock,
# flakewire-testclock on TAP), each in its own network namespace with a
# client inside that asks for ID, LIST, RANGE and UUID7 and logs every ID it
# gets with its worker, status and time; a 3-server ZooKeeper ensemble or
# etcd cluster in a hub namespace, one veth per node; short leases. A seeded
# nemesis then injects, one at a time: the node's registry link cut for less
# and for more than the lease, SIGKILL + restart, SIGSTOP beyond the lease,
# backward clock steps small and > 1 s, forward steps, the registry's leader
# killed, every registry server stopped and restarted, the node's state
# directory full, its identity started a second time, the node replaced by
# one with a new identity (its worker IDs taken over once their leases end),
# a partitioned node's identity started elsewhere with an empty state
# directory once its session expired (partition-twin), a second process on
# a node's own state file (same-state-twin), the registry refusing
# writes while a node's clock steps back (store-error: etcd's NOSPACE
# alarm, ZooKeeper's hard quota), and an operator releasing a live node's
# worker ID, refused, then forced (release), and the fleet's root wiped under the
# nodes, then fenced with `flakectl fleet fence` (root-wipe, issue 48), and the
# registry restored from a copy taken seconds earlier (etcd: snapshot save and
# restore; ZooKeeper: the data directories of the stopped ensemble), then
# fenced (snapshot-restore, issue 48). Every run
# draws a picture (ids.png).
# scripts/nemesis/check.py then reads the clients' logs and the registry's
# history: no ID twice across the fleet, every (node, worker) stream
# increasing, successive holders of a worker never interleaving, no
# CLOCK_UNSAFE, every node issuing again at the end; and prints the figures.
#
#   scripts/nemesis.sh [--seconds N | --minutes N] [--seed S] [--faults SET]
#                      [--backstep slew|new_worker] [--sock N] [--wire N]
#                      [--store zookeeper|etcd] [--lease-ms MS] [--rate R]
#                      [--force K1,K2] [--out DIR] [--keep]
#
#  --seconds/--minutes  the run, clients start to end (default 120 s, >= 30)
#  --seed S             replays a run: the same faults, targets, sizes and
#                       order, the same client requests (default: random,
#                       printed first)
#  --faults SET         default: every kind, [clock] backstep = slew;
#                       all: every kind, backstep = new_worker (large steps
#                       then take the new_worker path); or a comma list of
#                       kinds (scripts/nemesis/plan.py KINDS)
#  --backstep P         overrides the backstep policy of --faults
#  --sock N --wire N    flakesock and flakewire nodes (default 3 and 1)
#  --store S            the registry: zookeeper (default) or etcd
#  --lease-ms MS        [fleet] lease_ms (default 2000; renew_ms a quarter);
#                       the partition-twin target (the last flakesock node)
#                       runs with 8 x session_timeout_ms (16000)
#  --force K1,K2        these kinds come first in the first round (the
#                       short run in the test command forces the new ones)
#  --rate R             requests per second per client (default 200)
#  --out DIR            the run's logs go to DIR (default: a temp dir, kept
#                       when the check fails or with --keep)
#
# Binaries: FLAKESOCK_TESTCLOCK, FLAKEWIRE_TESTCLOCK, FLAKECTL, else
# BUILD (default build)/app/... . Needs root, /dev/net/tun, java and
# Debian's zookeeper package (--store etcd: etcd-server and etcd-client). Exits 0 when every check holds, 1 otherwise,
# 2 on a bad argument, 77 when something it needs is missing (1 under CI=true).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOTAL_S=120
SEED=""
FAULTS=default
BACKSTEP=""
N_SOCK=3
N_WIRE=1
STORE=zookeeper
LEASE=2000
RATE=200
OUT=""
KEEP=0
FORCE=""
usage() { sed -n '3,55p' "$0" | sed 's/^# \{0,1\}//'; }
bad() { echo "nemesis.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) TOTAL_S=${2:-}; shift 2 ;;
	--minutes) TOTAL_S=$((${2:-0} * 60)); shift 2 ;;
	--seed) SEED=${2:-}; shift 2 ;;
	--faults) FAULTS=${2:-}; shift 2 ;;
	--backstep) BACKSTEP=${2:-}; shift 2 ;;
	--sock) N_SOCK=${2:-}; shift 2 ;;
	--wire) N_WIRE=${2:-}; shift 2 ;;
	--store) STORE=${2:-}; shift 2 ;;
	--lease-ms) LEASE=${2:-}; shift 2 ;;
	--rate) RATE=${2:-}; shift 2 ;;
	--out) OUT=${2:-}; shift 2 ;;
	--force) FORCE=${2:-}; shift 2 ;;
	--keep) KEEP=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) bad "unknown argument $1 (--help)" ;;
	esac
done
isnum() { [[ "$1" =~ ^[0-9]+$ ]]; }
isnum "$TOTAL_S" && [ "$TOTAL_S" -ge 30 ] || bad "--seconds $TOTAL_S: a whole number, at least 30"
[ -z "$SEED" ] && SEED=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
isnum "$SEED" || bad "--seed $SEED: a whole number"
isnum "$N_SOCK" && isnum "$N_WIRE" && [ $((N_SOCK + N_WIRE)) -ge 2 ] && [ $((N_SOCK + N_WIRE)) -le 16 ] ||
	bad "--sock $N_SOCK --wire $N_WIRE: 2 to 16 nodes in all"
isnum "$LEASE" && [ "$LEASE" -ge 1000 ] || bad "--lease-ms $LEASE: at least 1000"
isnum "$RATE" && [ "$RATE" -ge 1 ] || bad "--rate $RATE: at least 1"
case "$STORE" in
zookeeper | etcd) ;;
*) bad "--store $STORE: zookeeper or etcd" ;;
esac
KINDS=""
case "$FAULTS" in
default) POLICY=slew ;;
all) POLICY=new_worker ;;
*) POLICY=slew KINDS=$FAULTS ;;
esac
[ -n "$BACKSTEP" ] && POLICY=$BACKSTEP
case "$POLICY" in slew | new_worker) ;; *) bad "--backstep $POLICY: slew or new_worker" ;; esac
RENEW=$((LEASE / 4))
BUILD=${BUILD:-$ROOT/build}
FLAKESOCK=${FLAKESOCK_TESTCLOCK:-$BUILD/app/flakesock/flakesock-testclock}
FLAKEWIRE=${FLAKEWIRE_TESTCLOCK:-$BUILD/app/flakewire/flakewire-testclock}
FLAKECTL=${FLAKECTL:-$BUILD/app/flakectl/flakectl}
PY=/usr/bin/python3

missing() {
	if [ "${CI:-}" = true ]; then echo "FAIL: cannot run under CI=true: $*"; exit 1; fi
	echo "SKIP: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || missing "needs root (network namespaces, TAP, tmpfs)"
[ -x "$PY" ] || missing "$PY missing"
if [ "$STORE" = zookeeper ]; then
	command -v java >/dev/null || missing "java missing (default-jre-headless)"
	[ -r /usr/share/java/zookeeper.jar ] || missing "zookeeper.jar missing (Debian package zookeeper)"
	[ -x /usr/share/zookeeper/bin/zkCli.sh ] || missing "zkCli.sh missing (Debian package zookeeper)"
else
	command -v etcd >/dev/null || missing "etcd missing (Debian package etcd-server)"
	command -v etcdctl >/dev/null || missing "etcdctl missing (Debian package etcd-client)"
	command -v curl >/dev/null || missing "curl missing"
fi
command -v gnuplot >/dev/null || missing "gnuplot missing (gnuplot-nox)"
[ -x "$FLAKESOCK" ] || missing "flakesock-testclock not built ($FLAKESOCK)"
[ -x "$FLAKECTL" ] || missing "flakectl not built ($FLAKECTL)"
if [ "$N_WIRE" -gt 0 ]; then
	[ -x "$FLAKEWIRE" ] || missing "flakewire-testclock not built ($FLAKEWIRE)"
	[ -c /dev/net/tun ] || missing "/dev/net/tun missing (TAP)"
fi

N=$((N_SOCK + N_WIRE))
SLOTS=$((2 * N))
# The worker field: tight under slew (every worker ID in use, so a node
# started under a new identity must take over expired ones), one bit more
# under new_worker (a backward step needs fresh worker IDs).
WB=1
while [ $((1 << WB)) -lt "$SLOTS" ]; do WB=$((WB + 1)); done
[ "$POLICY" = new_worker ] && WB=$((WB + 1))
FLEET_ROOT=/nemesis
SESSION_MS=2000
# The partition-twin fault needs its target to keep issuing, inside its
# confirmed lease, after its session expired and while a twin starts and
# serves: that node (the last flakesock one) runs with a lease of 8 session
# timeouts; the others keep the short one, so that their lease faults stay
# short. Only when partition-twin may run: a --faults list without it runs
# (and replays) as before issue 32.
LONG_LEASE=$((8 * SESSION_MS))
LONG_NODE=""
case ",${KINDS:-partition-twin},$FORCE," in
*,partition-twin,*) [ "$N_SOCK" -ge 1 ] && LONG_NODE=$N_SOCK ;;
esac
[ "$LEASE" -ge "$LONG_LEASE" ] && LONG_LEASE=$LEASE
FLEET_SET=(--set "fleet.root=$FLEET_ROOT" --set "fleet.lease_ms=$LEASE" --set "fleet.renew_ms=$RENEW"
	--set "fleet.session_timeout_ms=$SESSION_MS" --set fleet.start_wait_ms=2000
	--set "clock.backstep=$POLICY" --set "id.worker_bits=$WB" --set state.mark_ahead_ms=1000
	--set clock.calibrate_ms=200 --set stats.interval_s=0)
WARM_S=3
SETTLE_S=8
FAULT_S=$((TOTAL_S - WARM_S - SETTLE_S))

if [ -n "$OUT" ]; then
	mkdir -p "$OUT" || bad "--out $OUT: cannot create it"
	RUN=$(cd "$OUT" && pwd)
	KEEP=1
else
	RUN=$(mktemp -d /tmp/nemesis.XXXXXX)
fi
RID=$(($$ % 100000))
HUB="nm${RID}-hub"
. "$ROOT/scripts/lib/nemesis.sh"
: >"$RUN/events.log"
CHECK_RC=1
finish() {
	nm_cleanup
	if [ "$KEEP" = 0 ] && [ "$CHECK_RC" = 0 ]; then
		rm -rf "$RUN"
	else
		echo "nemesis: the run's logs are in $RUN"
	fi
}
trap finish EXIT
trap 'exit 1' INT TERM HUP

NODES=""
for ((i = 1; i <= N; i++)); do NODES+="${NODES:+,}n$i"; done
REPLAY="scripts/nemesis.sh --seed $SEED --seconds $TOTAL_S --faults $FAULTS ${BACKSTEP:+--backstep $BACKSTEP }--sock $N_SOCK --wire $N_WIRE --store $STORE --lease-ms $LEASE --rate $RATE${FORCE:+ --force $FORCE}"
say "seed $SEED (replay: $REPLAY)"
say "$N_SOCK flakesock + $N_WIRE flakewire nodes, $SLOTS workers, worker_bits $WB, backstep $POLICY," \
	"lease $LEASE ms${LONG_NODE:+ (n$LONG_NODE: $LONG_LEASE ms)}, renew $RENEW ms, store $STORE; logs in $RUN"
SOCK_NODES=""
for ((i = 1; i <= N_SOCK; i++)); do SOCK_NODES+="${SOCK_NODES:+,}n$i"; done
$PY "$ROOT/scripts/nemesis/plan.py" --seed "$SEED" --seconds "$FAULT_S" --nodes "$NODES" \
	${KINDS:+--kinds "$KINDS"} ${FORCE:+--force "$FORCE"} --lease-ms "$LEASE" --renew-ms "$RENEW" \
	--sock-nodes "$SOCK_NODES" ${LONG_NODE:+--long-node "n$LONG_NODE" --long-lease-ms "$LONG_LEASE"} \
	--session-ms "$SESSION_MS" >"$RUN/plan" || exit 2
{
	echo "seed $SEED"
	echo "command $REPLAY"
	echo "nodes $N_SOCK flakesock, $N_WIRE flakewire; workers $SLOTS; worker_bits $WB"
	echo "fleet backstep=$POLICY lease_ms=$LEASE renew_ms=$RENEW session_timeout_ms=$SESSION_MS store=$STORE"
	echo "long-lease ${LONG_NODE:+n$LONG_NODE $LONG_LEASE}"
	echo "forced ${FORCE:--}"
} >"$RUN/run.info"

# ---- set-up ----
ip netns add "$HUB" || missing "cannot create a network namespace"
NM_NETNS+=("$HUB")
ip -n "$HUB" link set lo up
store_start || { echo "FAIL: the $STORE ensemble did not start"; exit 1; }
# the fleet's root, made once as an operator does (nodes never make one)
[ "$STORE" = etcd ] && INIT_FLAG=--etcd || INIT_FLAG=--zk
ip netns exec "$HUB" "$FLAKECTL" fleet init "$INIT_FLAG" "$STORE_LOCAL" --root "$FLEET_ROOT" \
	--set "id.worker_bits=$WB" --timeout 30000 >"$RUN/fleet-init.log" 2>&1 ||
	{ echo "FAIL: flakectl fleet init $FLEET_ROOT"; exit 1; }
for ((i = 1; i <= N; i++)); do
	kind=sock
	[ "$i" -gt "$N_SOCK" ] && kind=wire
	node_setup "$i" "$kind" || { echo "FAIL: node $i set-up"; exit 1; }
done
TWIN_NS="nm${RID}-tw"
TWIN_I=$((N + 1))
net_node "$TWIN_I" "$TWIN_NS" || { echo "FAIL: twin namespace"; exit 1; }
ip -n "$TWIN_NS" addr add 10.77.0.2/32 dev lo
mkdir -p "$RUN/twin"
for ((i = 1; i <= N; i++)); do node_launch "$i"; done
node_start_wait() {
	local t
	for ((t = 0; t < 300; t++)); do node_ready "$1" && return 0; sleep 0.1; done
	return 1
}
for ((i = 1; i <= N; i++)); do
	node_start_wait "$i" || { echo "FAIL: ${NAME[$i]} did not start"; tail -n 20 "${DIR[$i]}/resp.log"; exit 1; }
done
# the fleet is on: every worker of every node holds a worker ID in the registry
for ((t = 0; t < 50; t++)); do [ "$(store_owned)" = "$SLOTS" ] && break; sleep 0.2; done
[ "$(store_owned)" = "$SLOTS" ] || { echo "FAIL: the registry shows $(store_owned) worker IDs owned, not $SLOTS"; store_ls; exit 1; }
poller_start
for ((i = 1; i <= N; i++)); do client_start "n$i" "${NS[$i]}"; done
T_START=$(date +%s)
ev phase start
say "fleet up; $(wc -l <"$RUN/plan") faults planned over ${FAULT_S} s"
sleep "$WARM_S"

# ---- the nemesis ----
TWINS=0
RELEASES=0
WIPES=0
RESTORES=0
node_index() { echo "${1#n}"; }
fault() {
	local kind=$1 target=$2 dur=$3 param=$4 i off rc rel
	ev fault "$kind" "$target" "$param"
	case "$kind" in
	zk-cut-short | zk-cut-long)
		i=$(node_index "$target")
		net_cut "$i"
		sleep "$(ms_to_s "$dur")"
		net_heal "$i"
		;;
	kill)
		i=$(node_index "$target")
		node_kill "$i"
		sleep "$(ms_to_s "$dur")"
		node_start "$i" 30
		;;
	replace)
		i=$(node_index "$target")
		node_kill "$i"
		sleep "$(ms_to_s "$dur")"
		GEN[$i]=$((GEN[$i] + 1))
		IDENT[$i]="n$i.r${GEN[$i]}"
		node_start "$i" 30
		;;
	graceful)
		# SIGTERM: the node stops its workers, persists its final mark and
		# releases its worker IDs (floor at or above that mark, issue 50)
		# before it exits; down this long, then started again on the same
		# state, where it claims free IDs, released ones first (its own, unless
		# another node's slot took one meanwhile)
		i=$(node_index "$target")
		node_term "$i"
		rel=$(tail -c +"$((LOGOFF[$i] + 1))" "${DIR[$i]}/resp.log" | grep -c "released at the stop")
		ev note "$target" "stopped gracefully: $rel worker ID(s) released"
		sleep "$(ms_to_s "$dur")"
		node_start "$i" 30
		;;
	stop)
		i=$(node_index "$target")
		[ -n "${PID[$i]}" ] && kill -STOP "${PID[$i]}"
		sleep "$(ms_to_s "$dur")"
		[ -n "${PID[$i]}" ] && kill -CONT "${PID[$i]}"
		;;
	clock-*)
		i=$(node_index "$target")
		off=$((OFFSET[$i] + param))
		node_clock "$i" "$off"
		ev note "$target" "offset_ms=$off"
		sleep "$(ms_to_s "$dur")"
		;;
	leader-kill)
		if store_kill_leader; then
			ev note store "killed server $STORE_KILLED (the leader)"
			sleep "$(ms_to_s "$dur")"
			store_start_one "$STORE_KILLED"
		else
			ev note store "no leader to kill"
		fi
		;;
	store-restart)
		store_stop_all
		sleep "$(ms_to_s "$dur")"
		store_start_all
		;;
	disk-full)
		i=$(node_index "$target")
		dd if=/dev/zero of="${ST[$i]}/fill" bs=4k 2>/dev/null
		sleep "$(ms_to_s "$dur")"
		rm -f "${ST[$i]}/fill"
		;;
	twin)
		i=$(node_index "$target")
		TWINS=$((TWINS + 1))
		twin_start "twin$TWINS" "$i" "${IDENT[$i]}" "$RUN/twin/twin$TWINS"
		sleep "$(ms_to_s "$dur")"
		twin_stop "twin$TWINS"
		;;
	partition-twin)
		# The node's link cut; once the registry shows its session gone (it
		# still issues: its lease is 8 session timeouts), its identity is
		# started in the twin namespace with an empty state directory, serves
		# for DUR with its own client, is stopped; then the link comes back.
		i=$(node_index "$target")
		TWINS=$((TWINS + 1))
		local tw="ptwin$TWINS" t0 t
		net_cut "$i"
		t0=$(now_us)
		for ((t = 0; t < 40; t++)); do store_alive "${IDENT[$i]}" || break; sleep 0.2; done
		if store_alive "${IDENT[$i]}"; then
			ev note "$target" "partition-twin: session still alive $((($(now_us) - t0) / 1000)) ms after the cut"
		else
			ev note "$target" "partition-twin: session gone $((($(now_us) - t0) / 1000)) ms after the cut"
		fi
		if client_issuing "$target"; then
			ev note "$target" "partition-twin: original issuing when the twin starts"
		else
			ev note "$target" "partition-twin: original NOT issuing when the twin starts"
		fi
		twin_start "$tw" "$i" "${IDENT[$i]}" "$RUN/twin/$tw/state"
		sleep "$(ms_to_s "$dur")"
		if client_issuing "$target"; then
			ev note "$target" "partition-twin: original still issuing when the twin stops"
		fi
		twin_stop "$tw"
		net_heal "$i"
		;;
	same-state-twin)
		# A second process on the node's host with its config and state file:
		# it must refuse at once, naming the lock and the holder's PID.
		i=$(node_index "$target")
		TWINS=$((TWINS + 1))
		local tw="sstwin$TWINS" t rc=running
		mkdir -p "$RUN/twin/$tw"
		ev ident "$tw" "${IDENT[$i]}/$tw"
		resp_cmd_for "$i" "${IDENT[$i]}" "${ST[$i]}"
		"${RESP_CMD[@]}" >"$RUN/twin/$tw/resp.log" 2>&1 &
		TWIN_PID=$!
		for ((t = 0; t < dur / 100; t++)); do proc_alive "$TWIN_PID" || break; sleep 0.1; done
		if proc_alive "$TWIN_PID"; then
			kill -TERM "$TWIN_PID"
			for ((t = 0; t < 50; t++)); do proc_alive "$TWIN_PID" || break; sleep 0.1; done
			kill -KILL "$TWIN_PID" 2>/dev/null
			wait "$TWIN_PID"
			ev note "$tw" "same-state twin of $target (PID ${PID[$i]}) still running after $dur ms: SIGTERM"
		else
			wait "$TWIN_PID"
			rc=$?
			ev note "$tw" "same-state twin of $target (PID ${PID[$i]}) exited: exit $rc:" \
				"$(grep -m1 -i 'locked\|refus\|fleet' "$RUN/twin/$tw/resp.log" | tr -s ' ' | cut -c1-200)"
		fi
		echo "holder ${PID[$i]} exit $rc" >"$RUN/twin/$tw/outcome"
		TWIN_PID=""
		;;
	release)
		# An operator's mistaken release under traffic: one of the target's
		# worker IDs (PARAM picks which), released without --force (refused:
		# its owner is alive), then with --force. The owner keeps issuing
		# under it up to its confirmed lease (the record's new floor), finds
		# it lost at its next renewal and claims another; whoever claims the
		# ID next (another slot, of this node or another) issues only above
		# the floor. The fault lasts DUR from its start, and at least a lease
		# and a renewal after the forced release (the owner's lease over, the
		# loss found). RUN/release/relK: the registry before and right after
		# (the floor), the two runs' output, outcome ("worker W holder
		# IDENTITY unforced RC forced RC t US", US: the forced run's end).
		i=$(node_index "$target")
		RELEASES=$((RELEASES + 1))
		local rd="$RUN/release/rel$RELEASES" held="" w n t rc1=- rc2=- t_rel=0 t0 left
		t0=$(now_us)
		mkdir -p "$rd"
		for ((t = 0; t < 25; t++)); do
			store_ls >"$rd/ls.before"
			held=$(awk -v id="${IDENT[$i]}" '$2 == id && $7 == "alive" && $8 == "owned" { print $1 }' \
				"$rd/ls.before" | tr '\n' ' ')
			[ -n "$held" ] && break
			sleep 0.2
		done
		if [ -z "$held" ]; then
			w=-
			ev note "$target" "release: ${IDENT[$i]} holds no worker ID with a live session"
		else
			read -r -a held <<<"$held"
			n=${#held[@]}
			w=${held[$((param % n))]}
			fleet_release "$w" >"$rd/unforced" 2>&1
			rc1=$?
			fleet_release "$w" --force >"$rd/forced" 2>&1
			rc2=$?
			t_rel=$(now_us)
			for ((t = 0; t < 10; t++)); do # the floor written (a loaded registry may time out)
				store_ls >"$rd/ls.after"
				awk -v w="$w" '$1 == w { f = 1 } END { exit !f }' "$rd/ls.after" && break
				sleep 0.2
			done
			ev note "$target" "release of worker $w held by ${IDENT[$i]}: unforced exit $rc1," \
				"forced exit $rc2: $(tr -s ' \n' ' ' <"$rd/unforced" | cut -c1-100)"
		fi
		echo "worker $w holder ${IDENT[$i]} unforced $rc1 forced $rc2 t $t_rel" >"$rd/outcome"
		left=$((dur - ($(now_us) - t0) / 1000))
		[ "$w" != - ] && [ "$left" -lt $((LEASE + RENEW - ($(now_us) - t_rel) / 1000)) ] &&
			left=$((LEASE + RENEW - ($(now_us) - t_rel) / 1000))
		[ "$left" -gt 0 ] && sleep "$(ms_to_s "$left")"
		;;
	root-wipe)
		# The fleet's root wiped under the nodes (its keys deleted): no node
		# makes it again; each stops claiming, taking over and renewing and
		# issues on within its confirmed leases for DUR; then the operator's
		# `flakectl fleet fence` (the longest lease): every later claim's
		# floor is above anything issued before, the nodes go on (those
		# whose records went claim others, issuing from the fence on).
		WIPES=$((WIPES + 1))
		if store_wipe_root; then ev note store "root $FLEET_ROOT wiped"; else ev note store "root wipe FAILED"; fi
		sleep "$(ms_to_s "$dur")"
		fleet_fence >"$RUN/fence$WIPES.log" 2>&1
		ev note store "fleet fence: exit $?: $(tr -s ' \n' ' ' <"$RUN/fence$WIPES.log" | cut -c1-120)"
		# the nodes whose records went claim others, which issue from the fence on
		sleep "$(ms_to_s $((LONG_LEASE + 1000)))"
		;;
	snapshot-restore)
		# The registry restored from a copy taken DUR earlier (etcd: `etcdctl
		# snapshot save`, then every member rebuilt with `etcdctl snapshot
		# restore`; ZooKeeper: the data directories of the stopped ensemble
		# copied, then copied back): the nodes renewed in between, so each
		# finds its own records older than it wrote, or the store's write
		# counter below one it saw, and stops claiming, taking over and
		# renewing, issuing on within its confirmed leases. After a few of
		# their rounds, the operator's `flakectl fleet fence` (the longest
		# lease): the nodes re-prove their own records and go on; one whose
		# record is not in the copy claims another, which issues from the
		# fence on. Before the fence, once a node said it saw the restore
		# (at most two session timeouts and a few seconds), a fresh process
		# (an identity and a state of its own: it has seen nothing of the
		# registry; its client's IDs are checked with all others) starts in
		# the twin namespace: the stop record that node wrote must refuse it
		# (issue 48). The fault waits until every node issues again (at most
		# the longest lease and a second). RUN/restore/restoreK: the copy,
		# its logs, fence.log.
		RESTORES=$((RESTORES + 1))
		local rd="$RUN/restore/restore$RESTORES" t0 t left seen0
		t0=$(now_us)
		if store_snapshot_save "$rd"; then ev note store "snapshot saved"; else ev note store "snapshot save FAILED"; fi
		left=$((dur - ($(now_us) - t0) / 1000))
		[ "$left" -gt 0 ] && sleep "$(ms_to_s "$left")"
		seen0=$(cat "$RUN"/n*/resp.log 2>/dev/null | grep -c "went back")
		store_snapshot_restore "$rd"
		rc=$?
		ev note store "restored from the snapshot of $((($(now_us) - t0) / 1000)) ms before: exit $rc"
		t0=$(now_us)
		for ((t = 0; t < (2 * SESSION_MS + 4000) / 250; t++)); do
			[ "$(cat "$RUN"/n*/resp.log 2>/dev/null | grep -c "went back")" -gt "$seen0" ] && break
			sleep 0.25
		done
		ev note store "a node saw the restore $((($(now_us) - t0) / 1000)) ms after the registry was back"
		twin_start "fresh$RESTORES" 0 "fresh$RESTORES" "$rd/fresh"
		for ((t = 0; t < 12; t++)); do proc_alive "$TWIN_PID" || break; sleep 0.25; done
		twin_stop "fresh$RESTORES"
		sleep "$(ms_to_s $((2 * RENEW)))"
		fleet_fence >"$rd/fence.log" 2>&1
		ev note store "fleet fence: exit $?: $(tr -s ' \n' ' ' <"$rd/fence.log" | cut -c1-120)"
		t0=$(now_us)
		for ((t = 0; t < (LONG_LEASE + 1000) / 250; t++)); do
			rc=0
			for ((i = 1; i <= N; i++)); do client_issuing "n$i" || { rc=1; break; }; done
			[ "$rc" = 0 ] && break
			sleep 0.25
		done
		ev note store "every node issuing again: $([ "$rc" = 0 ] && echo yes || echo NO)" \
			"$((($(now_us) - t0) / 1000)) ms after the fence"
		;;
	store-error)
		# The registry refuses writes (etcd: NOSPACE; ZooKeeper: hard quota)
		# while the target's clock steps back PARAM ms (under new_worker: it
		# must retire its worker IDs and claim fresh ones, which fails), kept
		# DUR, then undone.
		i=$(node_index "$target")
		if store_error_on; then
			ev note store "store-error raised"
		else
			ev note store "store-error NOT raised"
		fi
		off=$((OFFSET[$i] + param))
		node_clock "$i" "$off"
		ev note "$target" "offset_ms=$off"
		sleep "$(ms_to_s "$dur")"
		store_error_off
		;;
	esac
	ev heal "$kind" "$target"
}

FAULT_END=$((T_START + TOTAL_S - SETTLE_S))
# A forced kind's first fault runs even when the faults before it overran
# their nominal time (a loaded machine: etcd's junk writes of store-error
# took 27 s instead of 3 at a load of 30): the run then grows past
# --seconds (its settle is kept) instead of failing its 'faults' check.
FORCED_LEFT=",$FORCE,"
while read -r kind target dur param gap; do
	now=$(date +%s)
	if [ $((now + (dur + 999) / 1000)) -ge "$FAULT_END" ]; then
		case "$FORCED_LEFT" in
		*",$kind,"*) ev note - "$kind: forced, run $((now + (dur + 999) / 1000 - FAULT_END)) s late" ;;
		*)
			ev note - "out of time: the remaining faults are skipped"
			break
			;;
		esac
	fi
	FORCED_LEFT=${FORCED_LEFT/,$kind,/,}
	say "$(printf '%5ds' $((now - T_START))) $kind $target ${dur} ms${param:+ (param $param)}"
	fault "$kind" "$target" "$dur" "$param"
	sleep "$(ms_to_s "$gap")"
done <"$RUN/plan"

# ---- settle, stop, check ----
ev phase settle
left=$((T_START + TOTAL_S - $(date +%s)))
[ "$left" -lt "$SETTLE_S" ] && left=$SETTLE_S
sleep "$left"
ev phase end
touch "$RUN/stop"
for p in "${NM_PIDS[@]}"; do
	for ((t = 0; t < 30; t++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
done
{ echo "# $(now_us)"; store_ls; } >>"$RUN/registry.log"
touch "$RUN/stop-poll"
for ((i = 1; i <= N; i++)); do
	node_term "$i"
	cp "${DIR[$i]}/resp.log" "$RUN/clients/n$i.resp.log" 2>/dev/null
done
grep -h "CLOCK_UNSAFE\|stepped\|taken over\|took over\|needs .* worker ID" "$RUN"/n*/resp.log | sort | uniq -c | sort -rn | head -n 12 >"$RUN/resp-notes" 2>/dev/null
$PY "$ROOT/scripts/nemesis/check.py" "$RUN" | tee "$RUN/report"
CHECK_RC=${PIPESTATUS[0]}
# the picture: IDs per second per node, the faults shaded (ids.png)
if ! $PY "$ROOT/scripts/nemesis/plot.py" "$RUN" "$RUN/ids.png"; then
	echo "FAIL: scripts/nemesis/plot.py drew no picture"
	[ "$CHECK_RC" = 0 ] && CHECK_RC=1
fi
exit "$CHECK_RC"
