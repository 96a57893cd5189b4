#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the Debian packages of flakewire from this tree (no debhelper: the
# layout is `meson install`'s, split by the lists below):
#   flakewire                 the DPDK responder, its XDP program, flakewire.service
#                             and flakewire-afxdp.service
#   flakewire-tools           flakesock + flakesock.service, flakectl, the config
#                             /etc/flakewire/flakewire.ini, alert rules, dashboard
#   libflakewire-client0      the client shared library
#   libflakewire-client-dev   headers, static library, .so link, pkg-config file
#   postgresql-15-flakewire   the PostgreSQL extension (clients/postgres, issue 26)
# Dependencies come from dpkg-shlibdeps (plus control.in's); the units'
# maintainer scripts from dist/debian/scripts; man pages and changelogs are gzipped
# -9n, binaries stripped, md5sums written; lintian overrides (each justified)
# are in dist/debian/overrides.
#
# usage: scripts/package.sh [--builddir DIR] [--out DIR] [--no-build]
#   --builddir  meson build directory for the package build (default
#               build-pkg, set up here: prefix /usr, release, no tests,
#               Debian's hardening flags)
#   --no-build  package DIR as it is built (any build type; its prefix must
#               be /usr): what tests/ops/test_packages.sh does with build/
#   --out       where the .deb files go (default BUILDDIR/debs)
# Prints the path of each package built. Needs dpkg-dev and fakeroot.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build-pkg
OUT=""
NO_BUILD=""
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) BUILD=$(realpath -m "$2"); shift 2 ;;
	--out) OUT=$(realpath -m "$2"); shift 2 ;;
	--no-build) NO_BUILD=1; shift ;;
	*) echo "usage: $0 [--builddir DIR] [--out DIR] [--no-build]" >&2; exit 2 ;;
	esac
done
OUT=${OUT:-$BUILD/debs}
for t in dpkg-deb dpkg-shlibdeps fakeroot meson ninja; do
	command -v "$t" >/dev/null || { echo "package.sh: $t missing (dpkg-dev, fakeroot, meson)" >&2; exit 1; }
done

# Debian's hardening flags (fortify, stack protector, relro, bindnow)
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS=$(dpkg-buildflags --get CFLAGS)
LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
CPPFLAGS=$(dpkg-buildflags --get CPPFLAGS)
export CFLAGS="$CFLAGS $CPPFLAGS" LDFLAGS
if [ -n "$NO_BUILD" ]; then
	[ -f "$BUILD/build.ninja" ] || { echo "package.sh: $BUILD is not a meson build directory" >&2; exit 1; }
elif [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" "$SRC" --prefix=/usr --sysconfdir=/etc --localstatedir=/var \
		--buildtype=release -Dtests=false -Dwerror=false -Dman=enabled >/dev/null
fi
if [ -z "$NO_BUILD" ]; then
	ninja -C "$BUILD" >"$BUILD/package-build.log" 2>&1 ||
		{ tail -n 30 "$BUILD/package-build.log" >&2; echo "package.sh: build failed" >&2; exit 1; }
fi
prefix=$(meson introspect --buildoptions "$BUILD" |
	python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
[ "$prefix" = /usr ] || { echo "package.sh: $BUILD has prefix $prefix, not /usr" >&2; exit 1; }

VERSION=$(meson introspect --projectinfo "$BUILD" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
DEBVER=$VERSION-1
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fw-pkg.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STAGE=$WORK/stage
DESTDIR=$STAGE meson install -C "$BUILD" --no-rebuild --quiet >/dev/null

# package -> paths under the stage (globs allowed)
declare -A FILES=(
	[flakewire]="usr/sbin/flakewire usr/lib/$MA/bpf/flakewire.bpf.o
		lib/systemd/system/flakewire.service lib/systemd/system/flakewire-afxdp.service
		usr/share/man/man8/flakewire.8 var/lib/flakewire
		etc/default/flakewire etc/default/flakewire-afxdp usr/libexec/flakewire/hugepages"
	[flakewire-tools]="usr/sbin/flakesock usr/bin/flakectl lib/systemd/system/flakesock.service
		usr/share/man/man8/flakesock.8 usr/share/man/man1/flakectl.1 etc/flakewire/flakewire.ini
		etc/default/flakesock"
	[libflakewire-client0]="usr/lib/$MA/libflakewire-client.so.0 usr/lib/$MA/libflakewire-client.so.$VERSION"
	[libflakewire-client-dev]="usr/include/flakewire usr/lib/$MA/libflakewire-client.so
		usr/lib/$MA/libflakewire-client.a usr/lib/$MA/pkgconfig/flakewire-client.pc"
	[postgresql-15-flakewire]="usr/lib/postgresql/15/lib/flakewire.so
		usr/share/postgresql/15/extension/flakewire.control
		usr/share/postgresql/15/extension/flakewire--0.1.sql"
	[mariadb-plugin-flakewire]="usr/lib/mysql/plugin/flakewire_udf.so"
)
PKGS=(flakewire flakewire-tools libflakewire-client0 libflakewire-client-dev postgresql-15-flakewire
	mariadb-plugin-flakewire)

# dpkg-shlibdeps wants a debian/control and, for our own library, its shlibs
mkdir -p "$WORK/src/debian"
printf 'Source: flakewire\n\nPackage: flakewire\nArchitecture: any\n' >"$WORK/src/debian/control"

control_field() { # PACKAGE: its stanza of control.in, filled in
	awk -v p="Package: $1" '$0 == p { on = 1 } on && /^$/ { exit } on' \
		"$SRC/dist/debian/control.in"
}

changelog() { # PACKAGE
	cat <<-EOC
	flakewire ($DEBVER) unstable; urgency=medium

	  * Package built by scripts/package.sh from the flakewire tree.

	 -- flakewire maintainers <flakewire@example.org>  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$SRC" log -1 --format=%ct 2>/dev/null || date +%s)}")
	EOC
}

mkdir -p "$OUT"
for p in "${PKGS[@]}"; do
	R=$WORK/$p
	mkdir -p "$R/DEBIAN"
	for f in ${FILES[$p]}; do
		[ -e "$STAGE/$f" ] || [ -L "$STAGE/$f" ] || { echo "package.sh: $f not installed" >&2; exit 1; }
		mkdir -p "$R/$(dirname "$f")"
		cp -a "$STAGE/$f" "$R/$f"
	done
	case $p in
	flakewire-tools)
		mkdir -p "$R/usr/share/flakewire"
		cp -r "$SRC/config/prometheus" "$SRC/config/grafana" "$R/usr/share/flakewire/"
		printf '%s\n' /etc/flakewire/flakewire.ini /etc/default/flakesock >"$R/DEBIAN/conffiles"
		;;
	flakewire)
		printf '%s\n' /etc/default/flakewire /etc/default/flakewire-afxdp >"$R/DEBIAN/conffiles"
		;;
	libflakewire-client0)
		echo "libflakewire-client 0 libflakewire-client0 (>= $VERSION)" >"$R/DEBIAN/shlibs"
		echo "activate-noawait ldconfig" >"$R/DEBIAN/triggers"
		;;
	esac
	# maintainer scripts: the units' (dist/debian/scripts, dh_installsystemd's)
	for s in postinst prerm postrm; do
		[ ! -f "$SRC/dist/debian/scripts/$p.$s" ] ||
			install -m 0755 "$SRC/dist/debian/scripts/$p.$s" "$R/DEBIAN/$s"
	done
	# strip (not the BPF object: libbpf needs its BTF), gzip man pages
	find "$R" -type f \( -path '*/sbin/*' -o -path '*/bin/*' -o -name '*.so.*' -o -path '*/postgresql/*/lib/*.so' \
		-o -path '*/mysql/plugin/*.so' \) \
		-exec strip --remove-section=.comment --remove-section=.note --strip-unneeded {} +
	find "$R" -type f -name '*.a' -exec strip --strip-debug --enable-deterministic-archives {} +
	find "$R/usr/share/man" -type f -exec gzip -9n {} + 2>/dev/null || true
	doc=$R/usr/share/doc/$p
	mkdir -p "$doc"
	cp "$SRC/dist/debian/copyright" "$doc/copyright"
	changelog "$p" | gzip -9n >"$doc/changelog.Debian.gz"
	mkdir -p "$R/usr/share/lintian/overrides"
	cat "$SRC/dist/debian/overrides/all" >"$R/usr/share/lintian/overrides/$p"
	if [ -f "$SRC/dist/debian/overrides/$p" ]; then
		cat "$SRC/dist/debian/overrides/$p" >>"$R/usr/share/lintian/overrides/$p"
	fi
	# dependencies of the ELF files
	elves=$(find "$R" -type f \( -path '*/sbin/*' -o -path '*/bin/*' -o -name '*.so.*' -o -path '*/postgresql/*/lib/*.so' \
		-o -path '*/mysql/plugin/*.so' \) | sort)
	shlibs=""
	if [ -n "$elves" ]; then
		# shellcheck disable=SC2086
		shlibs=$(cd "$WORK/src" && dpkg-shlibdeps -O -e $elves 2>/dev/null |
			sed -n 's/^shlibs:Depends=//p')
	fi
	size=$(du -sk --exclude=DEBIAN "$R" | cut -f1)
	{
		control_field "$p" | sed -e "s/@SHLIBS@, //; s/@SHLIBS@//" -e "s/@VERSION@/$DEBVER/" |
			sed "/^Depends: *$/d" | sed -n '1p'
		echo "Source: flakewire"
		echo "Version: $DEBVER"
		echo "Architecture: $ARCH"
		echo "Maintainer: flakewire maintainers <flakewire@example.org>"
		echo "Installed-Size: $size"
		control_field "$p" | sed 1d | sed -e "s/@VERSION@/$DEBVER/" |
			sed -e "s/^Depends: @SHLIBS@/Depends: $shlibs/"
		echo "Homepage: https://github.com/flakewire/flakewire"
	} | sed "/^Depends: *$/d; /^Depends: , /s/^Depends: , /Depends: /" >"$R/DEBIAN/control"
	[ "$p" = libflakewire-client0 ] && [ -z "$shlibs" ] && { echo "package.sh: no shlibs for $p" >&2; exit 1; }
	(cd "$R" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z |
		xargs -0 md5sum >DEBIAN/md5sums)
	chmod 0644 "$R"/DEBIAN/*
	chmod 0755 "$R"/DEBIAN/p*{inst,rm} 2>/dev/null || true
	find "$R" -type d -exec chmod 0755 {} +
	find "$R" -type f \( -name '*.so.*' -o -path '*/mysql/plugin/*.so' \) -exec chmod 0644 {} +
	deb=$OUT/${p}_${DEBVER}_$ARCH.deb
	fakeroot dpkg-deb -Zxz --build "$R" "$deb" >/dev/null
	echo "$deb"
done
