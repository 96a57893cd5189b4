#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The PostgreSQL extension (issue 26) on a real PostgreSQL 15 started here
# (own data directory, socket and loopback port; clients/postgres/pgtmp.sh)
# and real flakesock responders on loopback:
#   - CREATE EXTENSION; the functions' volatility and parallel safety;
#   - bad settings refused, naming the setting and the allowed form;
#     ALTER DATABASE / ROLE SET reach new sessions;
#   - flakewire_decode and flakewire_next_uuid7 agree with flakectl decode;
#   - 100,000 rows with DEFAULT flakewire_next() from 8 pgbench sessions
#     while the first responder is killed mid-load: every transaction
#     commits, every key unique, each session's keys increasing, keys from
#     both responders;
#   - an ID taken by a rolled-back transaction is never handed out again;
#   - flakewire_min_id: exactly the rows of flakewire_time, as an index
#     range scan (EXPLAIN);
#   - a dead fleet: SQLSTATE 08006 naming the servers within the bound of
#     flakewire.timeout and flakewire.retries, and the backend lives on;
#   - statement_timeout and pg_cancel_backend interrupt a wait on a silent
#     responder whose own timeout is 60 s;
#   - no backend crashed (server log).
# usage: test_postgres.sh SOURCE_ROOT FLAKEWIRE_SO FLAKESOCK FLAKECTL
set -u
SRC=$1
SO=$2
FLAKESOCK=$3
FLAKECTL=$4
. "$SRC/tests/system/lib.sh"
. "$SRC/clients/postgres/pgtmp.sh"

for need in "$PGT_BIN/postgres" "$PGT_BIN/pgbench" "$PGT_BIN/psql" "$SO" "$FLAKESOCK" "$FLAKECTL"; do
	[ -x "$need" ] || [ -f "$need" ] || sys_skip "missing: $need (postgresql-15, postgresql-client-15)"
done
[ "$(id -u)" -eq 0 ] || sys_skip "needs root (runs PostgreSQL as the postgres user)"

SYS_TMP=$(mktemp -d /tmp/flakewire-pgtest.XXXXXX)
chmod 755 "$SYS_TMP" # the postgres user reads the private installation below it
cleanup() {
	[ -n "$PGT_PID" ] && [ "$SYS_FAILS" -gt 0 ] && tail -n 20 "$PGT_DIR/log/server.log"
	pgtmp_stop
	sys_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# sock_start NAME PORT WORKER: a flakesock with one worker on 127.0.0.1:PORT
sock_start() {
	"$FLAKESOCK" --listen 127.0.0.1 --threads 1 --set "id.workers=$3" \
		--set "net.udp_port=$2" --set "state.file=$SYS_TMP/$1.mark" \
		--set "state.lock_dir=$SYS_TMP/locks" --set stats.interval_s=0 >"$SYS_TMP/$1.log" 2>&1 &
	SYS_LAST_PID=$!
	SYS_PIDS+=("$SYS_LAST_PID")
	sys_wait_for 10 "$FLAKECTL" info --server "127.0.0.1:$2" --timeout 100
}
psql_() { pgtmp_psql -At "$@"; }

PA=$(pgtmp_free_port udp) PB=$(pgtmp_free_port udp) PS=$(pgtmp_free_port udp) PD1=$(pgtmp_free_port udp) PD2=$(pgtmp_free_port udp)
A=127.0.0.1:$PA B=127.0.0.1:$PB SILENT=127.0.0.1:$PS
check "flakesock A (worker 1) answers" sock_start a "$PA" 1
A_PID=$SYS_LAST_PID
check "flakesock B (worker 2) answers" sock_start b "$PB" 2
# A responder that never answers: a bound UDP socket nobody reads.
/usr/bin/python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(("127.0.0.1",int(sys.argv[1]))); time.sleep(120)' "$PS" &
SYS_PIDS+=($!)

check "PostgreSQL 15 starts with the extension installed privately" \
	pgtmp_start "$SYS_TMP/pg" "$(pgtmp_free_port tcp)" "$SO" \
	"$SRC/clients/postgres/flakewire.control" "$SRC/clients/postgres/flakewire--0.1.sql" \
	-- fsync=off synchronous_commit=off max_connections=30 shared_buffers=64MB
[ -n "$PGT_PID" ] || { sys_done; exit 1; }

check "CREATE EXTENSION flakewire" psql_ -c "CREATE EXTENSION flakewire"
attrs=$(psql_ -c "SELECT string_agg(proname || ':' || provolatile::text || proparallel::text, ' '
	ORDER BY proname)
	FROM pg_proc WHERE proname LIKE 'flakewire%'")
check "volatility and parallel safety: next* volatile restricted, the rest stable safe" \
	test "$attrs" = "flakewire_decode:ss flakewire_min_id:ss flakewire_next:vr flakewire_next_uuid7:vr flakewire_time:ss"
check "every function has a COMMENT" test "$(psql_ -c "SELECT count(*) FROM pg_proc
	WHERE proname LIKE 'flakewire%' AND obj_description(oid, 'pg_proc') IS NULL")" = 0

# ---- settings ----
refused() { # SQL PATTERN...: the statement fails and its message has every PATTERN
	local out p
	out=$(psql_ -c "LOAD 'flakewire'" -c "$1" 2>&1) && return 1
	shift
	for p in "$@"; do grep -qF -- "$p" <<<"$out" || { echo "  got: $out"; return 1; }; done
}
check "a malformed server is refused naming the setting and the form" \
	refused "SET flakewire.servers = '127.0.0.1:99999'" 'flakewire.servers' '127.0.0.1:99999' 'HOST[:PORT]'
check "an empty entry is refused" refused "SET flakewire.servers = 'a:1,,b:2'" 'flakewire.servers' 'HOST[:PORT]'
check "a timeout out of range is refused with its range" \
	refused "SET flakewire.timeout = 0" 'flakewire.timeout' '1 .. 60000'
check "a prefetch out of range is refused with its range" \
	refused "SET flakewire.prefetch = 2000000" 'flakewire.prefetch' '1 .. 1048576'
check "a malformed epoch is refused naming the setting" \
	refused "SET flakewire.epoch_ms = '2026-01-01'" 'flakewire.epoch_ms' 'decimal integer'
check "a layout without enough time bits is refused naming the settings" \
	refused "SET flakewire.worker_bits = 16; SET flakewire.sequence_bits = 22; SELECT flakewire_time(1)" \
	'flakewire.worker_bits' 'flakewire.sequence_bits'
psql_ -c "CREATE ROLE plain LOGIN"
check "flakewire.servers is superuser only" \
	refused "SET ROLE plain; SET flakewire.servers = '$A'" \
	'permission denied' 'flakewire.servers'
check "an ordinary user cannot make one call wait beyond flakewire.max_wait" \
	refused "SET ROLE plain; SET flakewire.timeout = 60000" 'flakewire.timeout' 'flakewire.max_wait'
check "retries is accepted and no longer used (issue 49)" \
	psql_ -c "SET ROLE plain; SET flakewire.retries = 10"
check "a superuser may" psql_ -c "SET flakewire.timeout = 60000; SET flakewire.retries = 10"
check "an ID whose time is beyond timestamptz is refused, not wrapped" \
	refused "SET flakewire.worker_bits = 0; SET flakewire.sequence_bits = 1; SELECT flakewire_time(9223372036854775807)" \
	'outside the range of timestamptz'
check "with no servers, flakewire_next says so" \
	refused "SELECT flakewire_next()" 'flakewire.servers is empty'
psql_ -c "ALTER DATABASE postgres SET flakewire.servers = '$A, $B'" \
	-c "ALTER DATABASE postgres SET flakewire.timeout = '50ms'" \
	-c "ALTER DATABASE postgres SET flakewire.retries = 1" \
	-c "ALTER ROLE plain SET flakewire.prefetch = 77" >/dev/null
check "ALTER DATABASE SET reaches a new session" \
	test "$(psql_ -c "LOAD 'flakewire'" -c "SHOW flakewire.servers")" = "$A, $B"
check "ALTER ROLE SET reaches a new session of that role" \
	test "$(psql_ -U plain -c "SHOW flakewire.prefetch")" = 77

# ---- decode agrees with flakectl decode ----
psql_ -c "SET timezone = 'UTC'" -c "SELECT id, to_char(d.time, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
	d.datacenter, d.worker, d.sequence FROM (SELECT flakewire_next() id FROM generate_series(1, 20)
	UNION ALL SELECT 123456789012345 UNION ALL SELECT 9223372036854775807) s,
	flakewire_decode(id) d ORDER BY id" | tr '|' ' ' >"$SYS_TMP/pgdec"
cut -d' ' -f1 "$SYS_TMP/pgdec" | "$FLAKECTL" decode --json |
	/usr/bin/python3 -c 'import json,sys
for l in sys.stdin:
    j = json.loads(l); print(j["id"], j["time"], j["datacenter"], j["worker"], j["sequence"])' >"$SYS_TMP/ctldec"
check "flakewire_decode agrees with flakectl decode on 22 IDs" \
	test "$(wc -l <"$SYS_TMP/pgdec")" -eq 22 -a -z "$(diff "$SYS_TMP/pgdec" "$SYS_TMP/ctldec")"
check "the IDs came from worker 1 (responder A)" \
	test "$(awk '$4 != 1' "$SYS_TMP/pgdec" | grep -cv '^123456789012345 \|^9223372036854775807 ')" -eq 0
check "flakewire_time is decode's time" test "$(psql_ -c "SELECT flakewire_time(123456789012345) =
	(flakewire_decode(123456789012345)).time")" = t
u=$(psql_ -c "SELECT flakewire_next_uuid7()")
"$FLAKECTL" decode --json "$u" >"$SYS_TMP/u" 2>&1
check "flakewire_next_uuid7 is a flakewire UUIDv7 of worker 1 ($u)" \
	/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j["version"]==7 and j["flakewire"] and j["worker"]==1 else 1)' "$SYS_TMP/u"
check "a negative ID is refused" refused "SELECT flakewire_time(-1)" 'is not an ID'

# ---- rollback: an ID is never handed out twice ----
rb=$(psql_ -c "BEGIN" -c "SELECT flakewire_next()" -c "ROLLBACK" -c "SELECT flakewire_next()")
check "after ROLLBACK the next ID is larger, not the rolled-back one" \
	test "$(sed -n 1p <<<"$rb")" -lt "$(sed -n 2p <<<"$rb")"

# ---- 100,000 rows from 8 sessions, responder A killed mid-load ----
psql_ -c "CREATE SEQUENCE ord" -c "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT flakewire_next(),
	sess int NOT NULL, ord bigint NOT NULL DEFAULT nextval('ord'))"
echo 'INSERT INTO t (sess) SELECT :client_id FROM generate_series(1, 50);' >"$SYS_TMP/load.sql"
start=$(date +%s.%N)
# paced (-R: at most 800 transactions a second, 40,000 rows): unpaced, an
# idle machine loaded all 100,000 rows in 0.9 s, between two of the polls
# below, and A was killed after the load (at 94,850 rows), not during it
pgtmp_pgbench -n -c 8 -j 2 -t 250 -R 800 -f "$SYS_TMP/load.sql" >"$SYS_TMP/pgbench.out" 2>&1 &
bench=$!
at_kill=0
for _ in $(seq 300); do
	at_kill=$(psql_ -c "SELECT count(*) FROM t")
	[ "$at_kill" -ge 25000 ] && break
	sleep 0.05
done
sys_kill_wait "$A_PID" KILL 5
wait $bench
rc=$?
echo "load: $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") s, responder A killed at $at_kill rows"
check "pgbench: all 2000 transactions of 8 sessions committed through the failover" \
	test $rc -eq 0 -a "$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$SYS_TMP/pgbench.out")" = 0
[ $rc -eq 0 ] || tail -5 "$SYS_TMP/pgbench.out"
check "responder A was killed mid-load ($at_kill of 100000 rows)" test "$at_kill" -ge 1000 -a "$at_kill" -lt 90000
check "100,000 rows, 100,000 distinct keys, all positive" test "$(psql_ -c "SELECT count(*), count(DISTINCT id),
	min(id) > 0 FROM t")" = "100000|100000|t"
check "each session's keys increase in insertion order" test "$(psql_ -c "SELECT count(*) FROM
	(SELECT id, lag(id) OVER (PARTITION BY sess ORDER BY ord) prev FROM t) s WHERE id <= prev")" = 0
check "8 sessions" test "$(psql_ -c "SELECT count(DISTINCT sess) FROM t")" = 8
check "keys from both responders (workers 1 and 2)" test "$(psql_ -c "SELECT string_agg(w::text, ',')
	FROM (SELECT DISTINCT (flakewire_decode(id)).worker w FROM t ORDER BY 1) s")" = "1,2"

# ---- time ranges: flakewire_min_id as an index range scan ----
psql_ -c "ANALYZE t"
mid=$(psql_ -c "SELECT flakewire_time(id) + interval '0.5 ms' FROM t ORDER BY id OFFSET 50000 LIMIT 1")
check "id >= flakewire_min_id(t) is exactly flakewire_time(id) >= t" test "$(psql_ -c "SELECT count(*)
	FROM t WHERE (id >= flakewire_min_id('$mid')) <> (flakewire_time(id) >= '$mid')")" = 0
psql_ -c "EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id >= flakewire_min_id('$mid')
	AND id < flakewire_min_id(timestamptz '$mid' + interval '2 ms')" >"$SYS_TMP/explain"
cat "$SYS_TMP/explain"
check "EXPLAIN: an index scan on the key bounded by flakewire_min_id" \
	grep -q "Index Cond: ((id >= flakewire_min_id(.*)) AND (id < flakewire_min_id(" "$SYS_TMP/explain"
check "EXPLAIN: no sequential scan" test "$(grep -c 'Seq Scan' "$SYS_TMP/explain")" = 0

# ---- a dead fleet: a clear error in time, the backend lives on ----
DEAD="127.0.0.1:$PD1, 127.0.0.1:$PD2"
t0=$(date +%s%3N)
out=$(psql_ -v ON_ERROR_STOP=0 -c "\\set VERBOSITY verbose" -c "SET flakewire.servers = '$DEAD'" \
	-c "SET flakewire.timeout = 50" -c "SET flakewire.retries = 1" -c "SELECT flakewire_next()" \
	-c "SELECT 'alive'" 2>&1)
dt=$(($(date +%s%3N) - t0))
echo "$out" | head -4
check "dead fleet: SQLSTATE 08006 naming the servers" grep -q "08006: flakewire: no responder answered .*$DEAD" <<<"$out"
check "dead fleet: the error names what each responder did" grep -q "127.0.0.1:$PD1: refused; 127.0.0.1:$PD2: refused" <<<"$out"
check "dead fleet: the error came within the deadline (50 ms) plus slack: $dt ms" test "$dt" -lt 3000
check "dead fleet: the same backend answers the next statement" grep -qx alive <<<"$out"

# ---- cancel: statement_timeout and pg_cancel_backend interrupt a wait ----
t0=$(date +%s%3N)
out=$(psql_ -v ON_ERROR_STOP=0 -c "\\set VERBOSITY verbose" -c "SET flakewire.servers = '$SILENT'" \
	-c "SET flakewire.timeout = '60s'" -c "SET flakewire.retries = 0" \
	-c "SET statement_timeout = '300ms'" -c "SELECT flakewire_next()" -c "SELECT 'alive'" 2>&1)
dt=$(($(date +%s%3N) - t0))
check "statement_timeout interrupts a wait of 60 s: 57014 after $dt ms" \
	grep -q '57014: canceling statement due to statement timeout' <<<"$out"
check "statement_timeout: the wait ended within 5 s" test "$dt" -lt 5000
check "after the timeout the backend answers the next statement" grep -qx alive <<<"$out"
psql_ -c "SET flakewire.servers = '$SILENT'" -c "SET flakewire.timeout = '60s'" \
	-c "SET application_name = 'fw_wait'" -c "SELECT flakewire_next()" >"$SYS_TMP/wait.out" 2>&1 &
waiter=$!
waiting() { [ "$(psql_ -c "SELECT count(*) FROM pg_stat_activity
	WHERE application_name = 'fw_wait' AND state = 'active'
	AND query LIKE '%flakewire_next%'")" = 1 ]; }
check "a session waits on the silent responder" sys_wait_for 10 waiting
t0=$(date +%s%3N)
psql_ -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'fw_wait'" >/dev/null
# the waiter's error, not its exit: a finished background job stays a zombie until waited for
for _ in $(seq 100); do grep -q 'canceling statement' "$SYS_TMP/wait.out" && break; sleep 0.05; done
dt=$(($(date +%s%3N) - t0))
kill $waiter 2>/dev/null
wait $waiter
check "pg_cancel_backend interrupts a wait: canceled after $dt ms" \
	grep -q 'canceling statement due to user request' "$SYS_TMP/wait.out"
check "pg_cancel_backend: the wait ended within 3 s" test "$dt" -lt 3000

no_crash() { ! grep -E 'terminated by signal|was terminated|PANIC' "$PGT_DIR/log/server.log"; }
check "no backend crashed (server log)" no_crash
sys_done
