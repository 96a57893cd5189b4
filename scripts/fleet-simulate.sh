#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A fleet of many nodes simulated against the real registries (issue 50;
# doc/fleet.md): the real lib/fleet, many nodes per process
# (tests/system/fleet/fleet_simulate.c), against a 3-member etcd cluster and
# a 3-server ZooKeeper ensemble started here on loopback.
#
#   scripts/fleet-simulate.sh [--store zookeeper|etcd|both] [--scenarios LIST]
#       [--nodes N] [--per-proc K] [--restart-nodes N] [--restart-per-proc K]
#       [--slots S] [--batch N] [--batch-gap-ms MS] [--steady-s S]
#       [--duration-s S] [--period-s S] [--rounds R] [--lease-ms MS]
#       [--reboot-lease-ms MS] [--out DIR]
#
# Scenarios (default all, in this order, each on a root of its own, made as
# `flakectl fleet init` does, with one layout and its own datacenter value):
#   storm      NODES (256) x SLOTS (4) = every ID of 10 worker bits claim at
#              once, in batches of --batch (32) nodes every --batch-gap-ms
#              (500; 256 starts at once starved the 2 cores); the registry's
#              leader is SIGKILLed when half the slots hold a lease and
#              restarted 2 s later; then --steady-s (120) of steady state for
#              the registry's requests per node per minute; then the 1,025th
#              slot, which must find none
#   crashloop  RESTART_NODES (200) x 4: every --period-s (60) for
#              --duration-s (600), SIGKILL the processes holding 10 % of the
#              nodes and restart them on the same state (taken back)
#   rolling    each process in turn stopped gracefully (SIGTERM: final mark,
#              then its IDs released) and restarted on the same state,
#              --rounds (2) times
#   reboot     each process in turn stopped gracefully and restarted on a new
#              state (a restart that proves nothing), with --reboot-lease-ms
#              (60000): the lease a release that fails would strand
# --lease-ms (default 86400000, lib/fleet's) is the storm's, the crash loop's
# and the rolling restart's; renew_ms is a quarter of a lease up to 60 s.
# Every scenario is checked (fleet_simulate: no two holders of one worker ID
# with overlapping ranges, a released holding ending at its final mark;
# free IDs never 0 in the restart scenarios). Writes OUT/STORE-SCENARIO/ (slots.log, series.dat, the output),
# OUT/summary.txt and OUT/storm.png (slots holding a lease over the storm,
# gnuplot). Needs root (tmpfs for etcd), java, Debian's zookeeper and
# etcd-server, gnuplot-nox; a build (BUILD, default build) with
# tests/system/fleet/fleet_simulate. Exits 0 when every check holds.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
SIM=${FLEET_SIMULATE:-$BUILD/tests/system/fleet/fleet_simulate}
STORES=both
SCENARIOS=storm,crashloop,rolling,reboot
NODES=256 PER_PROC=32 RNODES=200 RPER_PROC=10 SLOTS=4
BATCH=32 BATCH_GAP_MS=500 STEADY_S=120
DURATION_S=600 PERIOD_S=60 ROUNDS=2
LEASE_MS=86400000 REBOOT_LEASE_MS=60000
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--store) STORES=$2 ;;
	--scenarios) SCENARIOS=$2 ;;
	--nodes) NODES=$2 ;;
	--per-proc) PER_PROC=$2 ;;
	--restart-nodes) RNODES=$2 ;;
	--restart-per-proc) RPER_PROC=$2 ;;
	--slots) SLOTS=$2 ;;
	--batch) BATCH=$2 ;;
	--batch-gap-ms) BATCH_GAP_MS=$2 ;;
	--steady-s) STEADY_S=$2 ;;
	--duration-s) DURATION_S=$2 ;;
	--period-s) PERIOD_S=$2 ;;
	--rounds) ROUNDS=$2 ;;
	--lease-ms) LEASE_MS=$2 ;;
	--reboot-lease-ms) REBOOT_LEASE_MS=$2 ;;
	--out) OUT=$2 ;;
	*) sed -n '3,40p' "$0" >&2; exit 2 ;;
	esac
	shift 2 || { echo "fleet-simulate: $1 needs a value" >&2; exit 2; }
done
[ -x "$SIM" ] || { echo "fleet-simulate: $SIM missing (ninja -C build)" >&2; exit 2; }
case "$STORES" in both) STORES="zookeeper etcd" ;; zookeeper | etcd) ;;
*) echo "fleet-simulate: --store zookeeper, etcd or both" >&2; exit 2 ;; esac
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/fleet-simulate.XXXXXX)
mkdir -p "$OUT"
: >"$OUT/summary.txt"
renew_of() { local r=$(($1 / 4)); [ "$r" -gt 60000 ] && r=60000; echo "$r"; }
# hundreds of sessions from one address, each node a few descriptors
ulimit -n "$(ulimit -Hn)"
export ZK_CFG_EXTRA="maxClientCnxns=0"
rc=0
for store in $STORES; do
	export FW_STORE=$store
	# registry.sh's verbs; its arrays must be global: sourced here, once per store
	# shellcheck source=../tests/system/fleet/registry.sh
	. "$ROOT/tests/system/fleet/registry.sh"
	reg_dir=$(mktemp -d /tmp/fleet-simulate-reg.XXXXXX)
	trap '[ -z "${sim:-}" ] || { kill "$sim" 2>/dev/null; wait "$sim" 2>/dev/null; }; reg_stop_all; umount "$reg_dir"/etcd* 2>/dev/null; rm -rf "$reg_dir"' EXIT
	trap 'exit 1' INT TERM
	reg_start "$reg_dir" 3 || { echo "fleet-simulate: $REG_NAME did not start" >&2; exit 1; }
	etcd=()
	[ "$store" = etcd ] && etcd=(--etcd)
	label=$([ "$store" = etcd ] && echo etcd || echo zk)
	# every root of one store shares one layout (flakectl fleet init): the
	# worker bits the larger of the two fleets fills; each root gets its own
	# datacenter value (2 bits: the four scenarios)
	bits=1
	most=$((NODES > RNODES ? NODES : RNODES))
	while [ $((1 << bits)) -lt $((most * SLOTS)) ]; do bits=$((bits + 1)); done
	dc=0
	for s in ${SCENARIOS//,/ }; do
		d="$OUT/$label-$s"
		rm -rf "$d"
		mkdir -p "$d"
		lease=$LEASE_MS
		[ "$s" = reboot ] && lease=$REBOOT_LEASE_MS
		args=(--connect "$REG_CONNECT" "${etcd[@]}" --root "/sim/$s" --dir "$d"
			--slots "$SLOTS" --lease-ms "$lease" --renew-ms "$(renew_of "$lease")"
			--label "$label" --worker-bits "$bits" --datacenter "$dc")
		dc=$((dc + 1))
		if [ "$s" = storm ]; then
			args+=(--nodes "$NODES" --per-proc "$PER_PROC" --batch "$BATCH"
				--batch-gap-ms "$BATCH_GAP_MS" --steady-s "$STEADY_S" --timeout-s 600)
		else
			args+=(--nodes "$RNODES" --per-proc "$RPER_PROC" --duration-s "$DURATION_S"
				--period-s "$PERIOD_S" --rounds "$ROUNDS" --fraction 10 --timeout-s 180)
		fi
		echo "== $REG_NAME $s: $SIM $s ${args[*]}"
		"$SIM" "$s" "${args[@]}" >"$d/out.txt" 2>"$d/err.txt" &
		sim=$!
		if [ "$s" = storm ]; then
			# the registry's leader killed during the storm, restarted 2 s later
			for ((t = 0; t < 6000; t++)); do
				[ -s "$d/storm-half" ] && break
				kill -0 "$sim" 2>/dev/null || break
				sleep 0.1
			done
			if [ -s "$d/storm-half" ] && l=$(reg_leader) && [ -n "$l" ]; then
				reg_stop_one "$l"
				echo "$label storm      $REG_NAME leader (server $l) SIGKILLed at $(cat "$d/storm-half") s, restarted 2 s later" \
					>"$d/leader.txt"
				sleep 2
				reg_start_one "$l"
				reg_wait_ready 60 || echo "fleet-simulate: $REG_NAME not whole again within 60 s" >&2
			fi
		fi
		wait "$sim" || rc=1
		cat "$d/out.txt" "$d/leader.txt" 2>/dev/null | grep -v '^[a-z]*   fleet: ' |
			tee -a "$OUT/summary.txt"
	done
	reg_stop_all
	umount "$reg_dir"/etcd* 2>/dev/null
	rm -rf "$reg_dir"
	trap - EXIT
done
# the picture: slots holding a lease over the storm, per store
plots=()
for label in zk etcd; do
	f="$OUT/$label-storm/series.dat"
	[ -s "$f" ] || continue
	name=$([ $label = zk ] && echo ZooKeeper || echo etcd)
	plots+=("'$f' using 1:2 with lines lw 2 title '$name'")
done
if [ ${#plots[@]} -gt 0 ] && command -v gnuplot >/dev/null; then
	{
		# up to half again the slowest store's storm (the steady minutes are flat)
		xmax=$(cat "$OUT"/*-storm/out.txt 2>/dev/null |
			sed -n 's/.*all after \([0-9.]*\) s.*/\1/p' | sort -g | tail -1)
		echo "set terminal pngcairo size 900,420 font ',10' noenhanced"
		[ -z "$xmax" ] || echo "set xrange [0:$(awk -v x="$xmax" 'BEGIN { print int(x * 1.5 + 5) }')]"
		echo "set output '$OUT/storm.png'"
		echo "set title 'fleet_simulate storm: $NODES nodes x $SLOTS slots, batches of $BATCH every $BATCH_GAP_MS ms, leader killed at half'"
		echo "set xlabel 'seconds since the first start'"
		echo "set ylabel 'slots holding a lease'"
		echo "set key bottom right"
		echo "set grid"
		for label in zk etcd; do
			[ -s "$OUT/$label-storm/storm-half" ] || continue
			x=$(cat "$OUT/$label-storm/storm-half")
			echo "set arrow from $x, graph 0 to $x, graph 1 nohead dt 2 lc '$([ $label = zk ] && echo purple || echo dark-green)'"
		done
		(IFS=,; echo "plot ${plots[*]}")
	} >"$OUT/storm.gp"
	gnuplot "$OUT/storm.gp" && echo "picture: $OUT/storm.png"
fi
echo "summary: $OUT/summary.txt"
exit $rc
