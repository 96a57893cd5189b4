#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian package postgresql-15-flakewire, built by scripts/package.sh
# from this build (issue 26): it holds the module, the control file and the
# SQL script where Debian's PostgreSQL 15 looks; it depends on postgresql-15
# and libc, not on libflakewire-client0 (the client is linked in) and its
# module exports only PostgreSQL's entry points; its dependencies are
# satisfied here (dpkg --dry-run -i). Installed (unpacked into a throwaway
# root, as tests/ops/test_packages.sh does with the others) under a
# PostgreSQL 15 started here with a flakesock: CREATE EXTENSION from the
# packaged files and 1000 rows keyed by DEFAULT flakewire_next(), all
# distinct, from flakesock's worker. (tests/ops/test_packages.sh runs
# lintian on every package, this one included.)
# usage: test_package.sh SOURCE_ROOT BUILD_ROOT FLAKESOCK FLAKECTL
set -u
SRC=$1
BUILD=$2
FLAKESOCK=$3
FLAKECTL=$4
. "$SRC/tests/system/lib.sh"
. "$SRC/clients/postgres/pgtmp.sh"

[ "$(id -u)" -eq 0 ] || sys_skip "needs root (runs PostgreSQL as the postgres user)"
for t in dpkg-deb dpkg-shlibdeps fakeroot "$PGT_BIN/postgres"; do
	command -v "$t" >/dev/null || sys_skip "missing: $t (dpkg-dev, fakeroot, postgresql-15)"
done
SYS_TMP=$(mktemp -d /tmp/flakewire-pgpkg.XXXXXX)
chmod 755 "$SYS_TMP"
cleanup() {
	pgtmp_stop
	sys_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"$SRC/scripts/package.sh" --builddir "$BUILD" --no-build --out "$SYS_TMP/debs" >"$SYS_TMP/list" 2>&1
check "scripts/package.sh builds the packages" test $? -eq 0
DEB=$(grep '/postgresql-15-flakewire_.*\.deb$' "$SYS_TMP/list")
check "one of them is postgresql-15-flakewire" test -f "$DEB"
[ -f "$DEB" ] || { cat "$SYS_TMP/list"; sys_done; exit 1; }
dpkg-deb -c "$DEB" | awk '{ print $6 }' | sed 's|^\./|/|' >"$SYS_TMP/contents"
for f in /usr/lib/postgresql/15/lib/flakewire.so /usr/share/postgresql/15/extension/flakewire.control \
	/usr/share/postgresql/15/extension/flakewire--0.1.sql /usr/share/doc/postgresql-15-flakewire/copyright; do
	check "the package holds $f" grep -qx "$f" "$SYS_TMP/contents"
done
dep=$(dpkg-deb -f "$DEB" Depends)
echo "Depends: $dep"
check "it depends on postgresql-15 and libc6" grep -q 'libc6 .*postgresql-15' <<<"$dep"
check "it does not depend on libflakewire-client0 (linked in)" test "$(grep -c flakewire-client <<<"$dep")" = 0
check "dpkg --dry-run -i: its dependencies are satisfied here" dpkg --dry-run -i "$DEB"

R=$SYS_TMP/root
dpkg-deb -x "$DEB" "$R"
SO=$R/usr/lib/postgresql/15/lib/flakewire.so
exports=$(nm -D --defined-only "$SO" | awk '{ print $3 }' | grep -v '^_PG_init$\|^Pg_magic_func$\|^pg_finfo_flakewire_\|^flakewire_' | tr '\n' ' ')
check "the module exports only PostgreSQL's entry points${exports:+ (also: $exports)}" test -z "$exports"

PORT=$(pgtmp_free_port udp)
"$FLAKESOCK" --listen 127.0.0.1 --threads 1 --set id.workers=3 --set "net.udp_port=$PORT" \
	--set "state.file=$SYS_TMP/mark" --set "state.lock_dir=$SYS_TMP/locks" \
	--set stats.interval_s=0 >"$SYS_TMP/sock.log" 2>&1 &
SYS_PIDS+=($!)
check "flakesock answers" sys_wait_for 10 "$FLAKECTL" info --server "127.0.0.1:$PORT" --timeout 100
check "PostgreSQL 15 starts with the packaged extension" \
	pgtmp_start "$SYS_TMP/pg" "$(pgtmp_free_port tcp)" "$SO" \
	"$R/usr/share/postgresql/15/extension/flakewire.control" \
	"$R/usr/share/postgresql/15/extension/flakewire--0.1.sql" -- fsync=off
[ -n "$PGT_PID" ] || { sys_done; exit 1; }
out=$(pgtmp_psql -At -c "CREATE EXTENSION flakewire" \
	-c "ALTER DATABASE postgres SET flakewire.servers = '127.0.0.1:$PORT'" \
	-c "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT flakewire_next(), v int)" 2>&1 &&
	pgtmp_psql -At -c "INSERT INTO t (v) SELECT g FROM generate_series(1, 1000) g" \
	-c "SELECT count(*), count(DISTINCT id), min((flakewire_decode(id)).worker),
		max((flakewire_decode(id)).worker) FROM t" 2>&1)
echo "$out"
check "CREATE EXTENSION and 1000 rows by DEFAULT flakewire_next(), distinct, from worker 3" \
	test "$(tail -1 <<<"$out")" = "1000|1000|3|3"
sys_done
