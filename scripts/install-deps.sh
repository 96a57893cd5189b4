#!/usr/bin/env bash
# Installs every Debian package flakewire needs to build, test and run.
# Idempotent: quiet when everything is present; runs apt-get update only
# when something is missing.
set -euo pipefail

# Five sets:
#  - BUILD_PKGS: what `meson setup` probes and `ninja` compiles with (headers,
#    pkg-config files, and the programs and files meson looks for: go, javac,
#    junit5's jar, mvn, node, pg_config, scdoc, pytest);
#  - RUN_PKGS: what the responders and the tests of scripts/test.sh's first
#    lane need at run time (servers, network tools, the clients' ecosystems);
#  - OPS_PKGS: what only the tests of suite 'beside' (containers, packages,
#    MariaDB) and the benchmarks need. scripts/test.sh installs them in the
#    background while it compiles and runs the first lane; no test outside
#    suite 'beside' may need one (tests/ops/meson.build, tests/mariadb/);
#  - ROOTS_PKGS: what tests/ops/nspawn_root.sh builds deploy-nspawn's Debian
#    root with (in the ops set too). scripts/test.sh installs it first and
#    builds the root while the other sets install: dpkg's unpacking keeps
#    one core busy, not two (51-68 % of 2 cores, sampled every 10 s);
#  - BENCH_PKGS: what only the benchmarks (scripts/bench/) need; no test.
BUILD_PKGS=(
	build-essential pkg-config meson ninja-build clang llvm python3
	dpdk dpdk-dev libdpdk-dev
	libbpf-dev libxdp-dev bpftool
	libcmocka-dev libclang-rt-14-dev
	libinih-dev # issue 11: lib/conf parses the INI file with libinih (no DPDK)
	libzookeeper-mt-dev # issue 10: lib/fleet
	python3-pytest golang-go default-jdk-headless junit5 maven nodejs # issue 14: the language clients (meson looks for junit5's jar)
	cargo rustfmt rust-clippy # issue 51: the Rust client (clients/rust: /usr/bin/cargo, rustc 1.63, offline)
	libsodium-dev # issue 12: ChaCha20 keystream for the random bits of UUIDv7 (lib/rng)
	libmicrohttpd-dev scdoc # ops (issue 17): /metrics, the man pages
	libcurl4-openssl-dev libjson-c-dev # issue 25: the etcd registry (lib/fleet/store_etcd.c)
	postgresql-server-dev-15 # issue 26: the PostgreSQL extension (clients/postgres, PGXS)
	libmariadb-dev # issue 36: the MariaDB UDF plugin (clients/mariadb: mariadb_com.h)
	ccache # issue 34: meson compiles through it when installed; the test command's second tree reuses the first's objects
)
RUN_PKGS=(
	iproute2 iputils-ping ethtool tcpdump gnuplot-nox
	zookeeper default-jre-headless # issue 10: lib/fleet's tests
	postgresql-15 postgresql-contrib # issue 26: tests/postgres (the extension on a real server)
	prometheus dpkg-dev curl man-db # ops (issue 17)
	etcd-server etcd-client openssl # issue 25: the etcd registry's tests
	mkdocs # issue 23: the manual (doc/, mkdocs.yml) built with --strict by meson test docs
	# issue 22 (tests/clients/consumer.sh): the clients installed as their ecosystems do, offline
	libsurefire-java libmaven-compiler-plugin-java libmaven-jar-plugin-java
	libmaven-install-plugin-java libmaven-resources-plugin-java
	python3-venv python3-setuptools python3-wheel python3-build python3-pip
)
OPS_PKGS=(
	# issue 15 (scripts/bench/keys.sh, tests/dbbench) and issue 36 (tests/mariadb): the
	# databases they start besides PostgreSQL, the Python drivers
	mariadb-server python3-psycopg2 python3-mysqldb
	lintian fakeroot # ops (issue 17): scripts/package.sh
	debootstrap systemd-container # issue 21: tests/ops/test_nspawn.sh boots the packages under systemd
	# issue 35: scripts/image.sh (OCI images: mmdebstrap base, buildah layers) and
	# tests/ops/test_podman.sh (pods under podman: runc, not crun; catatonit for kube play)
	podman buildah runc catatonit mmdebstrap
)
ROOTS_PKGS=(debootstrap)
BENCH_PKGS=(
	redis-server redis-tools valgrind # issue 16: bench/performance.sh Redis peer rows (4d-4h), callgrind row P
)

# usage: scripts/install-deps.sh [--build] [--run] [--ops] [--roots] [--bench]
#   (default: all five sets)
# INSTALL_DEPS_BUILD_DONE=FILE: FILE is created once the build set is in,
# before the others install (scripts/test.sh compiles from then on).
sets=()
for a in "$@"; do
	case $a in
	--build | --run | --ops | --roots | --bench) sets+=("${a#--}") ;;
	*) echo "usage: $0 [--build] [--run] [--ops] [--roots] [--bench]" >&2; exit 2 ;;
	esac
done
[ ${#sets[@]} -gt 0 ] || sets=(build run ops roots bench)
want() { [[ " ${sets[*]} " == *" $1 "* ]]; }

# missing NAME...: those of NAME... that dpkg does not have installed
missing() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			echo "$p"
	done
}
mapfile -t missing_build < <(! want build || missing "${BUILD_PKGS[@]}")
mapfile -t missing_rest < <(! want run || missing "${RUN_PKGS[@]}"; ! want ops || missing "${OPS_PKGS[@]}"
	! want roots || missing "${ROOTS_PKGS[@]}"; ! want bench || missing "${BENCH_PKGS[@]}")
build_done() { [ -z "${INSTALL_DEPS_BUILD_DONE:-}" ] || touch "$INSTALL_DEPS_BUILD_DONE"; }
[ ${#missing_build[@]} -gt 0 ] || build_done
if [ ${#missing_build[@]} -eq 0 ] && [ ${#missing_rest[@]} -eq 0 ]; then
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi

echo "install-deps: installing ${missing_build[*]} ${missing_rest[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# a dpkg run cut short (scripts/test.sh stopped during its background install
# of the ops set) is finished first, or apt-get refuses to install
$SUDO dpkg --configure -a
$SUDO apt-get update -qq >/dev/null
# Under CI=true (a machine used once) dpkg skips its fsync per file
# (--force-unsafe-io, as Debian's own container images do): 10-20 % off the
# unpacking, measured by reinstalling Go, Java, LLVM, podman and MariaDB.
unsafe=()
[ "${CI:-}" != true ] || unsafe=(-o Dpkg::Options::=--force-unsafe-io)
apt_install() { # PACKAGE...: apt-get install, quiet, no recommends
	$SUDO apt-get install -y -qq --no-install-recommends "${unsafe[@]}" "$@" >/dev/null
}

# The build set and others missing (a new machine): the others' archives
# download (network only) into a directory of their own while the build set
# downloads and unpacks; they then unpack from there. Only the download
# overlaps: dpkg runs one at a time. apt-get --download-only still takes
# dpkg's frontend lock, which the build set's apt-get holds, so it runs
# without apt's locks (Debug::NoLocking): it reads dpkg's status once and
# writes only its own directory.
if [ ${#missing_build[@]} -eq 0 ] || [ ${#missing_rest[@]} -eq 0 ]; then
	apt_install "${missing_build[@]}" "${missing_rest[@]}"
	build_done
	exit 0
fi
archives=/var/cache/apt/archives/flakewire-rest
$SUDO mkdir -p "$archives/partial"
$SUDO apt-get install -y -qq --no-install-recommends --download-only -o Debug::NoLocking=1 \
	-o Dir::Cache::Archives="$archives/" "${missing_rest[@]}" >/dev/null &
download=$!
apt_install "${missing_build[@]}" || { wait "$download"; exit 1; }
build_done
wait "$download" || echo "install-deps: the download beside the build set failed; apt-get fetches again" >&2
apt_install -o Dir::Cache::Archives="$archives/" "${missing_rest[@]}"
$SUDO rm -rf "$archives"
