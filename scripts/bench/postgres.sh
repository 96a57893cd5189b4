#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# INSERT throughput and primary-key index size of four key defaults, side by
# side in one run on the same PostgreSQL 15 (issue 26):
#   bigserial                        one sequence in this database
#   bigint DEFAULT flakewire_next()  the extension (clients/postgres), from flakesock
#   uuid DEFAULT gen_random_uuid()   UUIDv4, random
#   uuid DEFAULT flakewire_next_uuid7()  the extension's UUIDv7, from flakesock
# each loaded by pgbench from 1 and from 8 sessions into a fresh table, with
# INSERTs of --batch rows each. Prints one table (rows/s, index size, bytes
# per row, leaf density) and the settings it ran with.
#
# The servers are started here and stopped on exit: a PostgreSQL 15 of
# Debian's postgresql-15 with its own data directory, socket and loopback
# port, the extension installed privately (clients/postgres/pgtmp.sh), and
# flakesock (one worker, loopback). Root runs PostgreSQL as the postgres
# user. On a 2-core machine flakesock, pgbench and the backends share the
# cores: the figures are for comparing the rows with each other.
#
# usage: scripts/bench/postgres.sh [--rows N] [--sessions "1 8"] [--batch B]
#                            [--build-dir DIR] [--no-build]
#   --rows      rows per load (default 100000)
#   --sessions  session counts to load from (default "1 8")
#   --batch     rows per INSERT statement (default 1: one row per statement)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$SRC/build
ROWS=100000
SESSIONS="1 8"
BATCH=1
NO_BUILD=""
CMD="scripts/bench/postgres.sh $*"
while [ $# -gt 0 ]; do
	case $1 in
	--rows) ROWS=$2; shift 2 ;;
	--sessions) SESSIONS=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--build-dir) BUILD=$(realpath "$2"); shift 2 ;;
	--no-build) NO_BUILD=1; shift ;;
	*) sed -n '/^# usage/,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
die() { echo "bench-pg: $*" >&2; exit 1; }
[[ $ROWS =~ ^[0-9]+$ && $BATCH =~ ^[0-9]+$ && $BATCH -ge 1 ]] || die "--rows and --batch are positive integers"
. "$SRC/clients/postgres/pgtmp.sh"
[ -x "$PGT_BIN/pgbench" ] || die "$PGT_BIN/pgbench missing (Debian package postgresql-15)"
[ -f "$PGT_SHARE/extension/pgstattuple.control" ] || die "pgstattuple missing (postgresql-contrib)"
if [ -z "$NO_BUILD" ]; then
	ninja -C "$BUILD" clients/postgres/flakewire.so app/flakesock/flakesock app/flakectl/flakectl \
		>/dev/null || die "build failed"
fi
SO=$BUILD/clients/postgres/flakewire.so
FLAKESOCK=$BUILD/app/flakesock/flakesock
FLAKECTL=$BUILD/app/flakectl/flakectl
for f in "$SO" "$FLAKESOCK" "$FLAKECTL"; do [ -e "$f" ] || die "$f missing (build it or drop --no-build)"; done

TMP=$(mktemp -d /tmp/flakewire-pgload.XXXXXX)
chmod 755 "$TMP"
SOCK_PID=""
cleanup() {
	local rc=$?
	if [ "$rc" -ne 0 ] && [ -f "$TMP/pg/log/server.log" ]; then
		echo "bench-pg: failed (exit $rc); the server log ends:" >&2
		tail -n 15 "$TMP/pg/log/server.log" >&2
	fi
	pgtmp_stop
	[ -n "$SOCK_PID" ] && kill "$SOCK_PID" 2>/dev/null && wait "$SOCK_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
trap 'echo "bench-pg: line $LINENO: exit $?" >&2' ERR

FW_PORT=$(pgtmp_free_port udp)
"$FLAKESOCK" --listen 127.0.0.1 --threads 1 --set id.workers=1 --set "net.udp_port=$FW_PORT" \
	--set "state.file=$TMP/mark" --set "state.lock_dir=$TMP/locks" --set stats.interval_s=0 >"$TMP/flakesock.log" 2>&1 &
SOCK_PID=$!
for _ in $(seq 50); do
	"$FLAKECTL" info --server "127.0.0.1:$FW_PORT" --timeout 100 >/dev/null 2>&1 && break
	sleep 0.2
done
"$FLAKECTL" info --server "127.0.0.1:$FW_PORT" --timeout 200 >/dev/null 2>&1 ||
	die "flakesock did not answer: $(cat "$TMP/flakesock.log")"

PG_SETTINGS="shared_buffers=256MB synchronous_commit=off autovacuum=off max_connections=30"
# shellcheck disable=SC2086
pgtmp_start "$TMP/pg" "$(pgtmp_free_port tcp)" "$SO" "$SRC/clients/postgres/flakewire.control" \
	"$SRC/clients/postgres/flakewire--0.1.sql" -- $PG_SETTINGS || die "PostgreSQL did not start"
pgtmp_psql -c "CREATE EXTENSION flakewire" -c "CREATE EXTENSION pgstattuple" \
	-c "ALTER DATABASE postgres SET flakewire.servers = '127.0.0.1:$FW_PORT'"

kinds=(bigserial flakewire_next gen_random_uuid flakewire_next_uuid7)
ddl() {
	case $1 in
	bigserial) echo "id bigserial PRIMARY KEY" ;;
	flakewire_next) echo "id bigint PRIMARY KEY DEFAULT flakewire_next()" ;;
	gen_random_uuid) echo "id uuid PRIMARY KEY DEFAULT gen_random_uuid()" ;;
	flakewire_next_uuid7) echo "id uuid PRIMARY KEY DEFAULT flakewire_next_uuid7()" ;;
	esac
}
label() {
	case $1 in
	bigserial) echo "bigserial" ;;
	flakewire_next) echo "bigint DEFAULT flakewire_next()" ;;
	gen_random_uuid) echo "uuid DEFAULT gen_random_uuid()" ;;
	flakewire_next_uuid7) echo "uuid DEFAULT flakewire_next_uuid7()" ;;
	esac
}
echo "INSERT INTO t (payload) SELECT 'x' FROM generate_series(1, $BATCH);" >"$TMP/insert.sql"

echo "command: $CMD"
echo "server: $("$PGT_BIN/postgres" --version); $PG_SETTINGS; flakesock 1 worker on loopback; $(nproc) CPUs"
echo "load: pgbench -n -c SESSIONS -j min(SESSIONS,2), INSERTs of $BATCH row(s), $ROWS rows per load, a fresh table each"
echo
# each row as soon as it is measured
printf '%s\n' "| key | sessions | rows | rows/s | index MB | index bytes/row | leaf density % |" \
	"|---|---:|---:|---:|---:|---:|---:|"
for s in $SESSIONS; do
	per=$((ROWS / s / BATCH))
	[ "$per" -ge 1 ] || die "--rows $ROWS is too few for $s sessions of --batch $BATCH"
	for k in "${kinds[@]}"; do
		pgtmp_psql -c "DROP TABLE IF EXISTS t" -c "CREATE TABLE t ($(ddl "$k"), payload text NOT NULL)" \
			-c "CHECKPOINT"
		pgtmp_pgbench -n -c "$s" -j "$((s < 2 ? s : 2))" -t "$per" -f "$TMP/insert.sql" \
			>"$TMP/pgbench.out" 2>&1 || { cat "$TMP/pgbench.out" >&2; die "pgbench failed ($k, $s sessions)"; }
		tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$TMP/pgbench.out")
		[ -n "$tps" ] || { cat "$TMP/pgbench.out" >&2; die "no tps in pgbench's output"; }
		row=$(pgtmp_psql -At -F ' ' -c "SELECT count(*), count(DISTINCT id), pg_relation_size('t_pkey'),
			(SELECT avg_leaf_density FROM pgstatindex('t_pkey')) FROM t")
		read -r n distinct isize density <<<"$row"
		[ "$n" = "$distinct" ] || die "$k: $n rows but $distinct distinct keys"
		awk -v k="$(label "$k")" -v s="$s" -v n="$n" -v tps="$tps" -v b="$BATCH" -v is="$isize" \
			-v d="$density" 'BEGIN { printf "| %s | %d | %d | %.0f | %.2f | %.1f | %.1f |\n",
			k, s, n, tps * b, is / 1048576, is / n, d }'
	done
done

exit 0
