#!/usr/bin/env bash
# Primary keys on real databases (issue 15): flakewire Snowflake IDs vs a
# sequence vs UUIDv4 vs UUIDv7 vs UUIDv4 as text, in PostgreSQL 15 and MariaDB
# (InnoDB), loaded the way a service inserts: batches of rows, one transaction
# each. Prints ONE table and writes it with a JSON and two gnuplot PNGs under
# build/bench/ (or --out DIR): keys.txt, keys.json, keys-insert-rate.png,
# keys-index-size.png.
#
# Everything it needs it starts itself and stops at the end, also on failure:
#   - PostgreSQL 15 (Debian postgresql-15, pgstattuple from its contrib) and
#     MariaDB (Debian mariadb-server), each with its own data directory in a
#     temp folder and its own free port on 127.0.0.1; as root PostgreSQL runs
#     as the postgres user. No system service is used or touched.
#   - flakesock on a free loopback UDP port: the Snowflake keys are fetched
#     live, batch by batch, with `flakectl get --range --csv`. UUIDv7 keys come
#     from flakewire's UUID7 op when the responder advertises it (INFO features
#     bit 0), else from the RFC 9562 generator in scripts/bench/keys.py; the
#     table says which.
# The buffer pools (shared_buffers, innodb_buffer_pool_size) are deliberately
# smaller than the indexes: --pool-mb (default 16). The table warns when the
# largest index did not outgrow the pool.
#
# Per key kind and database: insert rate per batch over the load, index and
# table size, pgstatindex leaf density and fragmentation, WAL bytes and
# full-page images (pg_stat_wal; a CHECKPOINT after every tenth of the rows,
# so each kind sees the same number), index buffer hit ratio
# (pg_statio_user_indexes), InnoDB page splits/merges (INNODB_METRICS,
# module_index), redo and data bytes written, buffer pool hit ratio, InnoDB
# clustered index (= table) size; then point lookups by key and time-range
# scans (latency percentiles).
#
# Usage: scripts/bench/keys.sh [--quick] [--rows N] [--batch N] [--pool-mb MB]
#                              [--lookups N] [--scans N] [--kinds LIST]
#                              [--dbs LIST] [--out DIR] [--build-dir DIR]
#                              [--no-build] [--keep-logs]
#   --rows N      rows per key kind and database (default 1000000)
#   --batch N     rows per INSERT transaction (default 1000)
#   --pool-mb MB  PostgreSQL shared_buffers and InnoDB buffer pool (default 16)
#   --lookups N   point lookups per kind (default 2000); --scans N: time-range
#                 scans of 1 % of the rows each (default 30)
#   --quick       smoke run: 5000 rows, 500 per batch, 200 lookups, 10 scans
#   --kinds LIST  comma-separated: snowflake,sequence,uuidv4,uuidv7,uuidv4text
#   --dbs LIST    comma-separated: pg,mariadb
# The kinds are loaded side by side: ten rounds, each giving every kind its
# next tenth of the rows (the order rotating), so the load of the rest of the
# machine falls on all kinds alike; counters are read around each slice.
# Default run: about 14 minutes on 2 busy cores, most of it MariaDB with
# random keys (about 5,000 rows/s once the table outgrows the 16 MB pool).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../lib/servers.sh
. "$ROOT/scripts/lib/servers.sh" # proc_* and the servers: pg_start, mariadb_start
CLI_NAME=bench-keys
# shellcheck source=../lib/cli.sh
. "$ROOT/scripts/lib/cli.sh" # die, posint, cli_usage
BUILD="$ROOT/build"
OUT=""
ROWS=1000000
BATCH=1000
POOL_MB=16
LOOKUPS=2000
SCANS=30
KINDS="snowflake,sequence,uuidv4,uuidv7,uuidv4text"
DBS="pg,mariadb"
QUICK=0
DO_BUILD=1
KEEP_LOGS=0
INVOCATION="scripts/bench/keys.sh $*"

usage() { cli_usage 2 48; }

ROWS_SET=0 BATCH_SET=0 LOOKUPS_SET=0 SCANS_SET=0
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1; shift ;;
	--rows) posint "$1" "${2:-}"; ROWS="$2"; ROWS_SET=1; shift 2 ;;
	--batch) posint "$1" "${2:-}"; BATCH="$2"; BATCH_SET=1; shift 2 ;;
	--pool-mb) posint "$1" "${2:-}"; POOL_MB="$2"; shift 2 ;;
	--lookups) posint "$1" "${2:-}"; LOOKUPS="$2"; LOOKUPS_SET=1; shift 2 ;;
	--scans) posint "$1" "${2:-}"; SCANS="$2"; SCANS_SET=1; shift 2 ;;
	--kinds) KINDS="${2:-}"; shift 2 ;;
	--dbs) DBS="${2:-}"; shift 2 ;;
	--out) OUT="$(realpath -m "${2:-}")"; shift 2 ;;
	--build-dir) BUILD="$(realpath -m "${2:-}")"; shift 2 ;;
	--no-build) DO_BUILD=0; shift ;;
	--keep-logs) KEEP_LOGS=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
if [ "$QUICK" = 1 ]; then
	[ "$ROWS_SET" = 1 ] || ROWS=5000
	[ "$BATCH_SET" = 1 ] || BATCH=500
	[ "$LOOKUPS_SET" = 1 ] || LOOKUPS=200
	[ "$SCANS_SET" = 1 ] || SCANS=10
fi
[ "$POOL_MB" -ge 8 ] && [ "$POOL_MB" -le 65536 ] || die "--pool-mb must be 8-65536, got $POOL_MB"
[ "$BATCH" -le 65535 ] || die "--batch must be 1-65535 (one flakectl RANGE fetch), got $BATCH"
[ "$ROWS" -le 100000000 ] || die "--rows must be 1-100000000, got $ROWS"
for k in ${KINDS//,/ }; do
	case "$k" in snowflake|sequence|uuidv4|uuidv7|uuidv4text) ;;
	*) die "--kinds: unknown kind '$k' (allowed: snowflake,sequence,uuidv4,uuidv7,uuidv4text)" ;;
	esac
done
for d in ${DBS//,/ }; do
	case "$d" in pg|mariadb) ;; *) die "--dbs: unknown database '$d' (allowed: pg,mariadb)" ;; esac
done
[ -n "$OUT" ] || OUT="$BUILD/bench"

PY=/usr/bin/python3 # Debian's: python3-psycopg2 and python3-mysqldb import only there
FLAKESOCK="$BUILD/app/flakesock/flakesock"
FLAKECTL="$BUILD/app/flakectl/flakectl"

if [ "$DO_BUILD" = 1 ]; then
	"$ROOT/scripts/install-deps.sh" >/dev/null
	[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" "$ROOT" >/dev/null
	ninja -C "$BUILD" app/flakesock/flakesock app/flakectl/flakectl >/dev/null
fi
for b in "$FLAKESOCK" "$FLAKECTL"; do
	[ -x "$b" ] || die "$b missing (build failed?)"
done
[ -x "$PG_BIN/postgres" ] || die "$PG_BIN/postgres missing (Debian package postgresql-15)"
[ -f /usr/share/postgresql/15/extension/pgstattuple.control ] ||
	die "pgstattuple missing (Debian package postgresql-contrib)"
command -v mariadbd >/dev/null || die "mariadbd missing (Debian package mariadb-server)"
command -v gnuplot >/dev/null || die "gnuplot missing (Debian package gnuplot-nox)"
"$PY" -c 'import psycopg2, MySQLdb' 2>/dev/null ||
	die "$PY cannot import psycopg2 and MySQLdb (Debian packages python3-psycopg2 python3-mysqldb)"

TMP="$(mktemp -d /tmp/fw-keys.XXXXXX)"
chmod 755 "$TMP"
echo "bench-keys: temp dir $TMP" >&2
PIDS=() # flakesock: our child
PY_PID=""
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

cleanup() {
	[ -z "$PY_PID" ] || proc_stop "$PY_PID" TERM 10 || true
	pg_stop
	mariadb_stop_all
	proc_stop_all 30 "${PIDS[@]}"
	if [ "$KEEP_LOGS" = 1 ]; then
		rm -rf "$TMP/pg/data" "$TMP/my/data"
		echo "bench-keys: logs kept in $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}

want_db() { case ",$DBS," in *,"$1",*) return 0 ;; esac; return 1; }

# ---- flakesock: the Snowflake responder, one worker on loopback ----
FW_PORT=$(proc_free_port udp)
"$FLAKESOCK" --listen 127.0.0.1 --threads 1 --set id.workers=1 \
	--set "net.udp_port=$FW_PORT" --set "state.file=$TMP/mark" --set "state.lock_dir=$TMP/locks" --set stats.interval_s=0 \
	>"$TMP/flakesock.log" 2>&1 &
PIDS+=($!)
proc_wait_for 10 "$FLAKECTL" info --server "127.0.0.1:$FW_PORT" --timeout 200 ||
	{ cat "$TMP/flakesock.log" >&2; die "flakesock did not answer on 127.0.0.1:$FW_PORT"; }

PY_ARGS=()
PG_VERSION="" MY_VERSION=""

# ---- PostgreSQL 15 ----
if want_db pg; then
	# Settings (also printed in the table): the pool under test; commits that
	# do not wait for the WAL flush (the load measures the index, not fsync);
	# no automatic checkpoints or autovacuum (the script checkpoints itself at
	# fixed row counts, so every kind sees the same number of them).
	PG_SETTINGS="shared_buffers=${POOL_MB}MB synchronous_commit=off checkpoint_timeout=1d max_wal_size=64GB autovacuum=off full_page_writes=on"
	# shellcheck disable=SC2086 # one setting a word
	pg_start "$TMP/pg" $PG_SETTINGS || die "PostgreSQL did not start"
	PY_ARGS+=(--pg "host=$PG_SOCK port=$PG_PORT user=postgres dbname=postgres")
	PG_VERSION=$("$PG_BIN/postgres" --version)
fi

# ---- MariaDB (InnoDB) ----
if want_db mariadb; then
	# utf8mb4 is what Debian's own config sets (--no-defaults skips it);
	# innodb_flush_log_at_trx_commit=2 matches synchronous_commit=off above.
	MY_SETTINGS="innodb_buffer_pool_size=${POOL_MB}M innodb_flush_log_at_trx_commit=2 innodb_monitor_enable=module_index character_set_server=utf8mb4 collation_server=utf8mb4_general_ci skip_log_bin"
	my_opts=()
	for s in $MY_SETTINGS; do
		name=${s%%=*}
		my_opts+=("--${name//_/-}${s#"$name"}")
	done
	mariadb_start "$TMP/my" "${my_opts[@]}" || die "MariaDB did not start"
	PY_ARGS+=(--mariadb "$MARIADB_SOCK")
	MY_VERSION="mariadbd $(mariadbd --version | sed 's/^.*Ver //')"
fi

mkdir -p "$OUT"
echo "bench-keys: $ROWS rows per kind, batches of $BATCH, pool ${POOL_MB} MB; dbs $DBS; kinds $KINDS" >&2
"$PY" "$ROOT/scripts/bench/keys.py" "${PY_ARGS[@]}" \
	--flakectl "$FLAKECTL" --server "127.0.0.1:$FW_PORT" \
	--rows "$ROWS" --batch "$BATCH" --pool-mb "$POOL_MB" --lookups "$LOOKUPS" --scans "$SCANS" \
	--kinds "$KINDS" --out "$OUT" --command "$INVOCATION" \
	--pg-version "$PG_VERSION" --pg-settings "${PG_SETTINGS:-}" \
	--my-version "$MY_VERSION" --my-settings "${MY_SETTINGS:-}" &
# In the background so that a signal runs the trap at once (bash defers traps
# while a foreground child runs).
PY_PID=$!
rc=0
wait "$PY_PID" || rc=$?
PY_PID=""
exit "$rc"
