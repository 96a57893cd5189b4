#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What the BEFORE INSERT trigger of the MariaDB plugin (doc/mariadb.md) costs
# against AUTO_INCREMENT, side by side on one mariadbd (issue 36): rows/s of
# multi-row INSERTs (100 rows a statement, one transaction each) into
#   auto     id BIGINT AUTO_INCREMENT PRIMARY KEY
#   trigger  id BIGINT PRIMARY KEY, set by flakewire_next() in the trigger
# from 1 and from 8 connections, in interleaved pairs (auto then trigger),
# the median of --pairs. Starts its own flakesock, mariadbd (own data dir,
# loopback port) and stops them by PID at the end. Prints a Markdown table.
#
#   scripts/bench/mariadb.sh [--rows N] [--pairs P] [--build-dir DIR]
#     --rows N    rows per run (default 20000)
#     --pairs P   interleaved pairs per connection count (default 5)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/servers.sh
. "$ROOT/scripts/lib/servers.sh" # proc_* and mariadb_start
ROWS=20000 PAIRS=5 BUILD=$ROOT/build
while [ $# -gt 0 ]; do
	case $1 in
	--rows) ROWS=$2; shift 2 ;;
	--pairs) PAIRS=$2; shift 2 ;;
	--build-dir) BUILD=$(realpath "$2"); shift 2 ;;
	-h | --help) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/mariadb.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
SO=$BUILD/clients/mariadb/flakewire_udf.so FLAKESOCK=$BUILD/app/flakesock/flakesock
for f in "$SO" "$FLAKESOCK"; do [ -e "$f" ] || { echo "bench/mariadb.sh: $f missing (ninja -C $BUILD)" >&2; exit 1; }; done
command -v mariadbd >/dev/null || { echo "bench/mariadb.sh: mariadbd missing (mariadb-server)" >&2; exit 1; }

TMP=$(mktemp -d /tmp/fw-benchmy.XXXXXX)
chmod 755 "$TMP"
PIDS=()
cleanup() {
	mariadb_stop_all
	proc_stop_all 10 "${PIDS[@]}"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
UP=$(proc_free_port udp)
"$FLAKESOCK" --listen 127.0.0.1 --threads 2 --set id.workers=1,2 --set "net.udp_port=$UP" \
	--set "state.file=$TMP/mark" --set "state.lock_dir=$TMP/locks" --set stats.interval_s=0 \
	>"$TMP/sock.log" 2>&1 &
PIDS+=($!)
mkdir -p "$TMP/plugin"
cp "$SO" "$TMP/plugin/"
printf '[flakewire]\nservers = 127.0.0.1:%s\n' "$UP" >"$TMP/flakewire.cnf"
FLAKEWIRE_CONF=$TMP/flakewire.cnf mariadb_start "$TMP/db" --plugin-dir="$TMP/plugin" --skip-log-bin \
	--innodb-buffer-pool-size=256M --max-connections=50 || exit 1
M=(mariadb --no-defaults -S "$MARIADB_SOCK" -uroot)
"${M[@]}" -e "CREATE FUNCTION flakewire_next RETURNS INTEGER SONAME 'flakewire_udf.so';
	CREATE DATABASE b" || exit 1

setup() { # recreate both tables empty
	"${M[@]}" b -e "DROP TABLE IF EXISTS auto, trig;
	CREATE TABLE auto (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB;
	CREATE TABLE trig (id BIGINT NOT NULL DEFAULT 0 PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB;
	CREATE TRIGGER trig_id BEFORE INSERT ON trig FOR EACH ROW SET NEW.id = flakewire_next();"
}
# the statements one connection sends: ROWS/C rows, 100 a statement
sql() { # TABLE CONNS
	/usr/bin/python3 - "$1" "$((ROWS / $2))" <<'PY'
import sys
t, n = sys.argv[1], int(sys.argv[2])
for s in range(0, n, 100):
    print("INSERT INTO %s (v) VALUES %s;" % (t, ",".join("(%d)" % (s + i) for i in range(min(100, n - s)))))
PY
}
run() { # TABLE CONNS: prints rows/s
	local t=$1 c=$2 i
	for i in $(seq "$c"); do sql "$t" "$c" >"$TMP/$t.$c.$i.sql"; done
	local a b
	a=$(date +%s%N)
	local pids=()
	for i in $(seq "$c"); do
		"${M[@]}" b <"$TMP/$t.$c.$i.sql" &
		pids+=($!)
	done
	for j in "${pids[@]}"; do wait "$j" || { echo "bench/mariadb.sh: a client failed" >&2; exit 1; }; done
	b=$(date +%s%N)
	local n
	n=$("${M[@]}" -N b -e "SELECT COUNT(*) FROM $t")
	[ "$n" -eq $(((ROWS / c) * c)) ] || { echo "bench/mariadb.sh: $t has $n rows" >&2; exit 1; }
	/usr/bin/python3 -c "print(round($n / (($b - $a) / 1e9)))"
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

echo "| connections | AUTO_INCREMENT rows/s | trigger (flakewire_next) rows/s | trigger / AUTO_INCREMENT |"
echo "|---:|---:|---:|---:|"
for c in 1 8; do
	A="" T="" R=""
	for _ in $(seq "$PAIRS"); do
		setup
		a=$(run auto "$c")
		t=$(run trig "$c")
		A="$A $a" T="$T $t" R="$R $(/usr/bin/python3 -c "print(round($t / $a, 3))")"
	done
	echo "| $c | $(median <<<"$A") | $(median <<<"$T") | $(median <<<"$R") |"
done
echo
echo "command: scripts/bench/mariadb.sh --rows $ROWS --pairs $PAIRS; $ROWS rows a run, 100 a statement, medians of $PAIRS interleaved pairs; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
