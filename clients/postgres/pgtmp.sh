# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# A throwaway PostgreSQL 15 with the flakewire extension, for tests and
# benchmarks (source this file): Debian's postgresql-15 binaries, its own
# data directory, socket directory and loopback port, and the extension
# installed into a private copy of the installation layout, so nothing
# outside DIR is written and an installed postgresql-15-flakewire is neither
# used nor disturbed.
#
# PostgreSQL 15 reads extensions only from its share directory, which it
# finds relative to its own executable (symlinks resolved). So DIR/inst
# mirrors /usr/lib/postgresql/15 and /usr/share/postgresql/15 with symlinks,
# except the two executables (hard links, or copies across file systems)
# and the extension's files.
#
#   pgtmp_start DIR PORT SO SQL... [-- SETTING=VALUE...]
#       installs SO (flakewire.so) and the control and SQL files, runs
#       initdb and starts the server (as the postgres user when root;
#       initdb and postgres refuse root); sets PGT_DIR, PGT_PORT, PGT_SOCK,
#       PGT_PID; the server log is DIR/log/server.log. Returns non-zero
#       (the log on stderr) on failure.
#   pgtmp_psql ARGS...     psql on that server as postgres, ON_ERROR_STOP
#   pgtmp_pgbench ARGS...  pgbench on that server
#   pgtmp_stop             stops the server (fast, then SIGKILL after 20 s)
#   pgtmp_free_port tcp|udp  prints a loopback port nothing listens on

PGT_BIN=/usr/lib/postgresql/15/bin
PGT_SHARE=/usr/share/postgresql/15
PGT_LIB=/usr/lib/postgresql/15/lib
PGT_DIR="" PGT_PORT="" PGT_SOCK="" PGT_PID=""

pgtmp_free_port() {
	local p i
	for i in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		ss -Hln"${1:0:1}" "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
	done
	return 1
}

pgtmp_as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pgtmp_start() {
	local dir=$1 port=$2 so=$3 f
	shift 3
	local share=() settings=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do share+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift
	settings=("$@")
	local inst=$dir/inst
	local bin=$inst$PGT_BIN lib=$inst$PGT_LIB sh=$inst$PGT_SHARE
	mkdir -p "$bin" "$lib" "$sh/extension" "$dir/data" "$dir/sock" "$dir/log" || return 1
	for f in postgres pg_ctl; do
		ln -f "$PGT_BIN/$f" "$bin/$f" 2>/dev/null || cp "$PGT_BIN/$f" "$bin/$f" || return 1
	done
	for f in "$PGT_LIB"/*; do ln -s "$f" "$lib/"; done
	for f in "$PGT_SHARE"/*; do [ "$(basename "$f")" = extension ] || ln -s "$f" "$sh/"; done
	for f in "$PGT_SHARE"/extension/*; do ln -s "$f" "$sh/extension/"; done
	rm -f "$lib/flakewire.so" "$sh"/extension/flakewire*
	cp "$so" "$lib/flakewire.so" || return 1
	cp "${share[@]}" "$sh/extension/" || return 1
	chmod 755 "$dir"
	[ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir/data" "$dir/sock" "$dir/log"
	pgtmp_as_pg "$PGT_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
		--no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
	local opts="-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir/sock"
	for f in "${settings[@]}"; do opts+=" -c $f"; done
	pgtmp_as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log/server.log" -w -t 60 -o "$opts" \
		start >/dev/null || { cat "$dir/log/server.log" >&2; return 1; }
	PGT_DIR=$dir PGT_PORT=$port PGT_SOCK=$dir/sock
	PGT_PID=$(head -1 "$dir/data/postmaster.pid")
}

pgtmp_psql() {
	"$PGT_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PGT_SOCK" -p "$PGT_PORT" -U postgres \
		-d postgres "$@"
}

pgtmp_pgbench() {
	"$PGT_BIN/pgbench" -h "$PGT_SOCK" -p "$PGT_PORT" -U postgres "$@" postgres
}

pgtmp_stop() {
	local i
	[ -n "$PGT_PID" ] || return 0
	pgtmp_as_pg "$PGT_DIR/inst$PGT_BIN/pg_ctl" -D "$PGT_DIR/data" -m fast -w -t 20 stop \
		>/dev/null 2>&1
	for ((i = 0; i < 50; i++)); do kill -0 "$PGT_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$PGT_PID" 2>/dev/null
	PGT_PID=""
}
