#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/package.sh on this build: six .deb files that dpkg-deb reads, with
# the expected files and conffile, flakewire depending on DPDK's AF_XDP
# driver, the units' maintainer scripts (deb-systemd-helper and
# deb-systemd-invoke, as dh_installsystemd writes them; shell syntax
# checked), the packaged config stating one stats line a minute; lintian reports no error and no warning
# (overrides are justified in dist/debian/overrides); their dependencies are
# satisfied on this host (dpkg --dry-run -i); unpacked into a throwaway root,
# the installed flakewire, flakesock and flakectl answer --version and
# --help, the packaged config passes --check-config, the man pages render,
# and a program builds against libflakewire-client-dev through pkg-config
# (shared and static) and runs.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${FW_SRC:?}" "${BUILD_ROOT:?}"
for t in dpkg-deb lintian fakeroot dpkg-shlibdeps pkg-config cc; do
	command -v "$t" >/dev/null || fail "$t missing (lintian, fakeroot, dpkg-dev, pkg-config)"
done
TMP=$(mktemp -d /tmp/fw-pkgtest.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
"$FW_SRC/scripts/package.sh" --builddir "$BUILD_ROOT" --no-build --out "$TMP/debs" >"$TMP/list" ||
	fail "scripts/package.sh"
[ "$(wc -l <"$TMP/list")" -eq 6 ] || fail "expected 6 packages: $(cat "$TMP/list")"
VER=$(dpkg-deb -f "$TMP"/debs/flakewire_*.deb Version)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

has() { # DEB PATH...
	local deb=$1
	shift
	dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|; s| ->.*||' >"$TMP/c"
	for p in "$@"; do grep -qx "$p" "$TMP/c" || fail "$(basename "$deb") lacks $p"; done
}
D=$TMP/debs
has "$D"/flakewire_*.deb /usr/sbin/flakewire /usr/lib/$MA/bpf/flakewire.bpf.o \
	/lib/systemd/system/flakewire.service /lib/systemd/system/flakewire-afxdp.service \
	/usr/share/man/man8/flakewire.8.gz /var/lib/flakewire/ /usr/share/doc/flakewire/copyright \
	/etc/default/flakewire /etc/default/flakewire-afxdp /usr/libexec/flakewire/hugepages
has "$D"/flakewire-tools_*.deb /usr/sbin/flakesock /usr/bin/flakectl /etc/flakewire/flakewire.ini \
	/lib/systemd/system/flakesock.service /usr/share/man/man8/flakesock.8.gz \
	/usr/share/man/man1/flakectl.1.gz /usr/share/flakewire/prometheus/flakewire-alerts.yml
has "$D"/libflakewire-client0_*.deb /usr/lib/$MA/libflakewire-client.so.0
has "$D"/libflakewire-client-dev_*.deb /usr/include/flakewire/fw_client.h \
	/usr/lib/$MA/libflakewire-client.so /usr/lib/$MA/libflakewire-client.a \
	/usr/lib/$MA/pkgconfig/flakewire-client.pc
# the MariaDB/MySQL UDF plugin (issue 36): in the server's plugin_dir, and its only
# exported symbols are the functions' entry points (the C client inside is hidden)
has "$D"/mariadb-plugin-flakewire_*.deb /usr/lib/mysql/plugin/flakewire_udf.so
dpkg-deb -x "$D"/mariadb-plugin-flakewire_*.deb "$TMP/udf"
nm -D --defined-only "$TMP/udf/usr/lib/mysql/plugin/flakewire_udf.so" | awk '{print $3}' |
	grep -v '^flakewire_' | grep -v '^_' >"$TMP/udf.sym"
[ ! -s "$TMP/udf.sym" ] || fail "flakewire_udf.so exports more than its functions: $(tr '\n' ' ' <"$TMP/udf.sym")"
dpkg-deb -I "$D"/flakewire-tools_*.deb conffiles | grep -qx /etc/flakewire/flakewire.ini ||
	fail "flakewire.ini is not a conffile"
dpkg-deb -I "$D"/flakewire_*.deb conffiles | grep -qx /etc/default/flakewire ||
	fail "/etc/default/flakewire is not a conffile"
dpkg-deb -f "$D"/flakewire_*.deb Depends | grep -q "librte-eal.*dpdk, librte-mempool-ring23, librte-net-af-xdp23, flakewire-tools (= $VER)" ||
	fail "flakewire Depends: $(dpkg-deb -f "$D"/flakewire_*.deb Depends)"
dpkg-deb -f "$D"/libflakewire-client-dev_*.deb Depends | grep -qx "libflakewire-client0 (= $VER)" ||
	fail "-dev does not depend on the exact library version"
for p in flakewire flakewire-tools; do
	units=$(dpkg-deb -c "$D/${p}"_*.deb | grep -o '[a-z-]*\.service$' | sort | tr '\n' ' ')
	for s in postinst prerm postrm; do
		dpkg-deb --ctrl-tarfile "$D/${p}"_*.deb | tar -x -O "./$s" >"$TMP/$s" 2>/dev/null ||
			fail "$p has no $s"
		sh -n "$TMP/$s" || fail "$p $s: shell syntax"
		for u in $units; do grep -q "$u" "$TMP/$s" || fail "$p $s does not handle $u"; done
	done
	grep -q 'deb-systemd-helper purge' "$TMP/postrm" || fail "$p postrm does not purge the unit state"
	dpkg-deb --ctrl-tarfile "$D/${p}"_*.deb | tar -x -O ./prerm | grep -q 'deb-systemd-invoke stop' ||
		fail "$p prerm does not stop its units"
	echo "$p: postinst, prerm, postrm for $units"
done
for d in "$D"/*.deb; do echo "$(basename "$d"): Depends: $(dpkg-deb -f "$d" Depends)"; done

lintian --fail-on error,warning "$D"/*.deb >"$TMP/lintian" 2>&1 || {
	cat "$TMP/lintian" >&2
	fail "lintian"
}
grep -E '^[EW]:' "$TMP/lintian" && fail "lintian reports errors or warnings"
echo "lintian: clean ($(grep -c '^[IN]:' "$TMP/lintian") info/notes)"
dpkg --dry-run -i "$D"/*.deb >"$TMP/dry" 2>&1 || { cat "$TMP/dry" >&2; fail "dependencies not satisfiable here"; }

R=$TMP/root
for d in "$D"/*.deb; do dpkg-deb -x "$d" "$R"; done
for b in usr/sbin/flakewire usr/sbin/flakesock usr/bin/flakectl; do
	v=$("$R/$b" --version 2>&1) || fail "$b --version"
	[ "$v" = "$(basename "$b") ${VER%-*}" ] || fail "$b --version says '$v'"
	"$R/$b" --help >"$TMP/help" 2>&1 || fail "$b --help"
	grep -qi usage "$TMP/help" || fail "$b --help prints no usage"
	echo "$b: $v, --help ok"
done
"$R/usr/sbin/flakewire" -- --config "$R/etc/flakewire/flakewire.ini" --check-config >/dev/null ||
	fail "the packaged flakewire.ini does not pass --check-config"
iv=$(awk '/^\[/ { s = $0 } s == "[stats]" && /^interval_s = / { print $3 }' "$R/etc/flakewire/flakewire.ini")
[ "$iv" = 60 ] || fail "the packaged [stats] interval_s is '$iv', not 60 (one journal line a minute)"
for m in "$R"/usr/share/man/man*/*.gz; do
	MANWIDTH=80 man --warnings -l "$m" >/dev/null 2>"$TMP/w" || fail "man -l $m"
	[ ! -s "$TMP/w" ] || fail "$m: $(cat "$TMP/w")"
done

cat >"$TMP/c.c" <<'CEOF'
#include <stdio.h>
#include <fw_client.h>
#include <fw_err.h>
int main(void)
{
	struct fw_client_opts o;
	fw_client_opts_init(&o);
	printf("timeout %u %s\n", (unsigned)o.timeout_ms, fw_strerror(-22));
	return 0;
}
CEOF
export PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_LIBDIR=$R/usr/lib/$MA/pkgconfig
# shellcheck disable=SC2046
cc -o "$TMP/c-shared" "$TMP/c.c" $(pkg-config --cflags --libs flakewire-client) ||
	fail "build against the -dev package (shared)"
# shellcheck disable=SC2046
cc -o "$TMP/c-static" "$TMP/c.c" $(pkg-config --cflags flakewire-client) \
	"$R/usr/lib/$MA/libflakewire-client.a" -pthread || fail "build against the static library"
out=$(LD_LIBRARY_PATH=$R/usr/lib/$MA "$TMP/c-shared") || fail "shared client program"
ldd "$TMP/c-shared" | grep -q "$R/usr/lib/$MA/libflakewire-client.so.0" 2>/dev/null ||
	LD_LIBRARY_PATH=$R/usr/lib/$MA ldd "$TMP/c-shared" | grep -q "libflakewire-client.so.0" ||
	fail "the program does not use libflakewire-client.so.0"
out2=$("$TMP/c-static") || fail "static client program"
[ "$out" = "$out2" ] && grep -q '^timeout [0-9]' <<<"$out" || fail "client program printed '$out' / '$out2'"
echo "client library: $out (shared and static)"
echo PASS
