#!/usr/bin/env bash
# Rows over shards by the key (issue 36): how one worker's IDs spread over N
# shards under the generator's sequence start rule, before (every ms from 0,
# FW_GEN_SEQ_ZERO) and after (each ms goes on from where the last stopped,
# FW_GEN_SEQ_CARRY, the default). Prints markdown tables:
#
#   1. the generator on a scripted clock (tests/unit/test_shards.c): at 0.1,
#      1, 16 and 4096 IDs per ms, paced (exactly that rate) and random
#      (Poisson arrivals), the largest shard over the mean (1.00 is even) for
#      id % N and for a hash of the ID (murmur3's fmix64), N = 2, 3, 16, 64,
#      256, 1000, 1024, PER_SHARD x N IDs a cell;
#   2. real databases: the same generator's IDs (1 ID per ms, random
#      arrivals) loaded into MariaDB PARTITION BY HASH(id) (which is
#      MOD(id, N)) and PARTITION BY KEY(id), and PostgreSQL hash partitions
#      (PARTITION BY HASH, hashint8), with the rows per partition.
#
# MariaDB and PostgreSQL are started here from Debian's packages, each with
# its own data directory in a temp folder and a free loopback port, and
# stopped at the end, also on failure. No system service is used.
#
# Usage: scripts/bench/shards.sh [--per-shard N] [--db-rows N] [--no-db]
#                                [--build-dir DIR] [--no-build] [--keep-logs]
#   --per-shard N  IDs per shard in table 1 (default 100: issue 36's Done-when)
#   --db-rows N    rows per table for N = 16 partitions (default 16000);
#                  N = 1000 partitions get 100 x 1000
#   --no-db        table 1 only (a second)
# Default run: about 2 minutes on 2 busy cores (most of it the 1000-partition
# tables).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../lib/servers.sh
. "$ROOT/scripts/lib/servers.sh" # proc_* and the servers: pg_start, mariadb_start
CLI_NAME=bench-shards
# shellcheck source=../lib/cli.sh
. "$ROOT/scripts/lib/cli.sh" # die, posint, cli_usage
BUILD="$ROOT/build"
PER_SHARD=100
DB_ROWS=16000
DO_DB=1
DO_BUILD=1
KEEP_LOGS=0
INVOCATION="scripts/bench/shards.sh $*"

usage() { cli_usage 2 28; }

while [ $# -gt 0 ]; do
	case "$1" in
	--per-shard) posint "$1" "${2:-}"; PER_SHARD=$2; shift 2 ;;
	--db-rows) posint "$1" "${2:-}"; DB_ROWS=$2; shift 2 ;;
	--no-db) DO_DB=0; shift ;;
	--build-dir) [ -n "${2:-}" ] || die "--build-dir wants a directory"; BUILD=$(cd "$2" && pwd); shift 2 ;;
	--no-build) DO_BUILD=0; shift ;;
	--keep-logs) KEEP_LOGS=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
done

SHARDS="$BUILD/tests/test_shards"
if [ "$DO_BUILD" = 1 ]; then
	"$ROOT/scripts/install-deps.sh" >/dev/null
	[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" "$ROOT" >/dev/null
	ninja -C "$BUILD" tests/test_shards >/dev/null
fi
[ -x "$SHARDS" ] || die "$SHARDS missing (build failed?)"

echo "command: $INVOCATION"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(uname -sr)"
echo "rules:   zero = every ms from sequence 0 (before issue 36); carry = each ms from where the last stopped (default)"
"$SHARDS" table "$PER_SHARD"
[ "$DO_DB" = 1 ] || exit 0

[ -x "$PG_BIN/postgres" ] || die "$PG_BIN/postgres missing (Debian package postgresql-15)"
command -v mariadbd >/dev/null || die "mariadbd missing (Debian package mariadb-server)"

TMP="$(mktemp -d /tmp/fw-shards.XXXXXX)"
chmod 755 "$TMP"
cleanup() {
	mariadb_stop_all
	pg_stop
	if [ "$KEEP_LOGS" = 1 ]; then
		rm -rf "$TMP/pg/data" "$TMP/my/data"
		echo "bench-shards: logs kept in $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- MariaDB ----
mariadb_start "$TMP/my" --skip-log-bin --secure-file-priv="$TMP" || die "MariaDB did not start"
MY=(mariadb --no-defaults -S "$MARIADB_SOCK" -uroot)
"${MY[@]}" -e 'CREATE DATABASE shards'

# ---- PostgreSQL 15 ----
pg_start "$TMP/pg" fsync=off max_locks_per_transaction=1024 || die "PostgreSQL did not start"
PSQL=(pg_as_pg psql -X -q -At -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres postgres)

# load N ROWS: for each rule, IDs at 1 ID/ms (random arrivals) into
# my_hash_RULE, my_key_RULE and pg_RULE with N partitions; writes
# $TMP/counts-N-TABLE (rows per partition, in partition order).
load() {
	local n=$1 rows=$2 rule t i
	for rule in zero carry; do
		"$SHARDS" ids "$rule" random 1 "$rows" >"$TMP/ids-$rule"
		chmod 644 "$TMP/ids-$rule"
		for t in hash key; do
			local by="HASH(id)"
			[ "$t" = key ] && by="KEY(id)"
			"${MY[@]}" shards -e "CREATE TABLE my_${t}_$rule (id BIGINT NOT NULL PRIMARY KEY) ENGINE=InnoDB PARTITION BY $by PARTITIONS $n;
				LOAD DATA INFILE '$TMP/ids-$rule' INTO TABLE my_${t}_$rule (id);"
			for ((i = 0; i < n; i++)); do
				[ "$i" = 0 ] || echo "UNION ALL"
				echo "SELECT $i, COUNT(*) FROM my_${t}_$rule PARTITION (p$i)"
			done | "${MY[@]}" -N shards | sort -n | cut -f2 >"$TMP/counts-$n-my_${t}_$rule"
			"${MY[@]}" shards -e "DROP TABLE my_${t}_$rule"
		done
		{
			echo "CREATE TABLE pg_$rule (id bigint PRIMARY KEY) PARTITION BY HASH (id);"
			for ((i = 0; i < n; i++)); do
				echo "CREATE TABLE pg_${rule}_$i PARTITION OF pg_$rule FOR VALUES WITH (MODULUS $n, REMAINDER $i);"
			done
			echo "COPY pg_$rule FROM '$TMP/ids-$rule';"
		} | "${PSQL[@]}"
		"${PSQL[@]}" -c "SELECT count(*) FROM pg_$rule GROUP BY tableoid
			ORDER BY substring(tableoid::regclass::text from '[0-9]+\$')::int" \
			>"$TMP/counts-$n-pg_$rule"
		"${PSQL[@]}" -c "DROP TABLE pg_$rule"
	done
}

# ratio FILE: largest partition / mean, 2 decimals; also checks the total.
ratio() {
	awk -v want="$2" '{ s += $1; if ($1 > m) m = $1; n++ }
		END { if (s != want) { print "rows " s " != " want; exit 1 } printf "%.2f", m / (s / n) }' "$1"
}

cols=(my_hash_zero my_hash_carry my_key_zero my_key_carry pg_zero pg_carry)
echo
echo "Rows per partition: $DB_ROWS IDs of one worker at 1 ID/ms (random arrivals), 16 partitions"
echo "($(mariadbd --version | sed 's/^.*Ver //'); $("$PG_BIN/postgres" --version))"
echo
echo "| partition | MariaDB HASH, zero | HASH, carry | MariaDB KEY, zero | KEY, carry | PostgreSQL hash, zero | hash, carry |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
load 16 "$DB_ROWS"
for ((i = 0; i < 16; i++)); do
	printf "| %d |" "$i"
	for c in "${cols[@]}"; do printf " %s |" "$(sed -n "$((i + 1))p" "$TMP/counts-16-$c")"; done
	echo
done
printf "| largest / mean |"
for c in "${cols[@]}"; do printf " %s |" "$(ratio "$TMP/counts-16-$c" "$DB_ROWS")"; done
echo
load 1000 100000
printf "| 1000 partitions, 100,000 rows: largest / mean |"
for c in "${cols[@]}"; do printf " %s |" "$(ratio "$TMP/counts-1000-$c" 100000)"; done
echo
