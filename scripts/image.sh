#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the OCI images of flakewire from the Debian packages that
# scripts/package.sh makes (no registry is needed or used):
#   localhost/flakesock:VERSION        flakesock (kernel sockets), user 10001,
#                                      no capability; doc/kubernetes.md
#   localhost/flakewire-afxdp:VERSION  flakewire in AF_XDP mode (root, with
#                                      the capabilities the DaemonSet adds)
# Both are layered on one Debian 12 base made here with mmdebstrap (variant
# apt: dpkg, apt and the essential set; no man pages, docs, locales or apt
# lists), cached in podman's store as localhost/flakewire-base:bookworm-KEY,
# KEY a hash of the base recipe below and the mirrors: a second run reuses
# it, a changed recipe builds a new one and removes the old. Each image is
# also tagged build-KEY (the base, the packages' contents, this file): a run
# whose packages did not change builds nothing.
#
# The layer installs the packages with apt (their dependencies from Debian's
# mirror; apt's lists and downloaded archives are kept in $FW_IMAGE_CACHE, so
# a rebuild after a code change downloads nothing new), adds the user, the
# state directory (a volume) and the entry point:
#   flakesock --config /etc/flakewire/flakewire.ini --listen 0.0.0.0
#             --set state.file=/var/lib/flakewire/mark
#             --set fleet.cache_file=/var/lib/flakewire/fleet
#             --set state.lock_dir_mount=yes  [ARGS: more --set]
# state.lock_dir_mount=yes (issue 48): a static worker ID (no fleet) needs
# [state] lock_dir to be a host directory mounted into every container of
# the host; the image's default configuration (static worker 0, no such
# mount) refuses to start instead of serving worker 0 beside another one.
# Configuration: mount a file over /etc/flakewire/flakewire.ini (a ConfigMap)
# and add --set arguments. Logs go to the standard streams; SIGTERM writes the
# mark and exits (PID 1 is the responder itself: it handles SIGTERM).
#
# usage: scripts/image.sh [--builddir DIR [--no-build] | --debs DIR | --base-only] [--quiet]
#   --base-only             build (or find cached) the Debian base and stop:
#                           what scripts/test.sh starts while it compiles
#   --builddir, --no-build  as scripts/package.sh (default: its build-pkg)
#   --debs DIR              take the .deb files from DIR (package.sh's output)
# Prints the two image names (build-KEY tags) on stdout, one per line.
# Needs root, podman, buildah, runc and mmdebstrap (scripts/install-deps.sh).
# FW_IMAGE_CACHE (default /var/cache/flakewire-test/image): apt's lists and
# archives and the containers.conf the builds use; FW_DEBIAN_MIRROR and
# FW_DEBIAN_SECURITY as tests/ops/nspawn_root.sh.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${FW_IMAGE_CACHE:-/var/cache/flakewire-test/image}
MIRROR=${FW_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${FW_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
PKG_ARGS=()
DEBS=""
QUIET=""
BASE_ONLY=""
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) PKG_ARGS+=(--builddir "$2"); shift 2 ;;
	--no-build) PKG_ARGS+=(--no-build); shift ;;
	--debs) DEBS=$(realpath "$2"); shift 2 ;;
	--quiet) QUIET=1; shift ;;
	--base-only) BASE_ONLY=1; shift ;;
	*) echo "usage: $0 [--builddir DIR [--no-build] | --debs DIR | --base-only] [--quiet]" >&2; exit 2 ;;
	esac
done
say() { [ -n "$QUIET" ] || echo "image.sh: $*" >&2; }
die() { echo "image.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (podman's and buildah's store, mmdebstrap)"
for t in podman:podman buildah:buildah runc:runc mmdebstrap:mmdebstrap dpkg-deb:dpkg; do
	command -v "${t%%:*}" >/dev/null || die "${t%%:*} missing (apt-get install ${t#*:}; scripts/install-deps.sh)"
done

mkdir -p "$CACHE/apt-lists/partial" "$CACHE/apt-archives/partial"
# One build at a time on this machine (the store's tags, apt's cache).
exec 9>"$CACHE/.lock"
flock 9
# PITFALLS.md: crun refuses to start anything here (hybrid cgroups), and
# podman's default nofile limit is above this sandbox's hard limit.
cat >"$CACHE/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF=$CACHE/containers.conf
export BUILDAH_ISOLATION=chroot BUILDAH_RUNTIME=/usr/sbin/runc

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fw-image.XXXXXX")
CTR=""
cleanup() {
	[ -z "$CTR" ] || buildah rm "$CTR" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

# ---- the base: Debian 12 from the mirror, cached by the hash of its recipe
# merged-usr: /usr merged by a setup hook, not by the usrmerge package (which
# would pull perl, 46 MB of it, into every image)
BASE_ARGS=(--variant=apt --mode=root --format=tar
	--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
	--aptopt='Acquire::Languages "none"'
	--aptopt='APT::Install-Recommends "false"'
	--dpkgopt='path-exclude=/usr/share/man/*'
	--dpkgopt='path-exclude=/usr/share/info/*'
	--dpkgopt='path-exclude=/usr/share/locale/*'
	--dpkgopt='path-include=/usr/share/locale/locale.alias'
	--dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-include=/usr/share/doc/*/copyright'
	--dpkgopt='path-exclude=/usr/share/lintian/*'
	--include=ca-certificates
	--customize-hook='rm -rf "$1"/var/log/apt/* "$1"/var/log/dpkg.log "$1"/var/log/alternatives.log "$1"/var/cache/ldconfig/aux-cache "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old'
	--customize-hook='rm -f "$1"/etc/machine-id "$1"/etc/hostname "$1"/etc/resolv.conf; : >"$1"/etc/machine-id')
BASE_SOURCES=("deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main"
	"deb $SECURITY bookworm-security main")
BASE_KEY=$(printf '%s\n' base-v1 "${BASE_ARGS[@]}" "${BASE_SOURCES[@]}" | sha256sum | cut -c1-16)
BASE=localhost/flakewire-base:bookworm-$BASE_KEY
if ! podman image exists "$BASE"; then
	say "building the base $BASE (mmdebstrap from the mirror)"
	t0=$SECONDS
	# SOURCE_DATE_EPOCH: the same recipe gives the same files' times
	SOURCE_DATE_EPOCH=$(git -C "$SRC" log -1 --format=%ct 2>/dev/null || date +%s) \
		mmdebstrap "${BASE_ARGS[@]}" bookworm "$WORK/base.tar" "${BASE_SOURCES[@]}" \
		>"$WORK/mmdebstrap.log" 2>&1 || { tail -n 25 "$WORK/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
	podman import --quiet --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' \
		--message "Debian 12 (bookworm) by mmdebstrap, recipe $BASE_KEY" \
		"$WORK/base.tar" "$BASE" >/dev/null || die "podman import of the base failed"
	rm -f "$WORK/base.tar"
	say "base built in $((SECONDS - t0)) s"
	# older recipes' bases, and apt's lists of their sources
	podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/flakewire-base:' |
		grep -vx "$BASE" | xargs -r podman rmi --force >/dev/null 2>&1 || true
	rm -rf "$CACHE/apt-lists"
	mkdir -p "$CACHE/apt-lists/partial"
fi
[ -z "$BASE_ONLY" ] || { say "base $BASE ready"; exit 0; }

# ---- the packages
if [ -z "$DEBS" ]; then
	DEBS=$WORK/debs
	"$SRC/scripts/package.sh" "${PKG_ARGS[@]}" --out "$DEBS" >/dev/null || die "scripts/package.sh failed"
fi
deb_of() { # PACKAGE: its .deb in $DEBS
	local f
	f=$(find "$DEBS" -maxdepth 1 -name "${1}_*.deb" | sort | tail -n 1)
	[ -n "$f" ] || die "no ${1}_*.deb in $DEBS"
	echo "$f"
}
SOCK_DEBS=("$(deb_of flakewire-tools)")
WIRE_DEBS=("$(deb_of flakewire)" "$(deb_of flakewire-tools)")
VERSION=$(dpkg-deb -f "${SOCK_DEBS[0]}" Version)
VERSION=${VERSION%-*}
content_key() { # DEB...: the packages' contents (not their files' times), the base, this file
	local d
	{
		echo "$BASE_KEY"
		sha256sum <"${BASH_SOURCE[0]}"
		# (the changelog's date is the last commit's: not a change of content)
		for d in "$@"; do dpkg-deb -f "$d"; dpkg-deb -I "$d" md5sums | grep -v '/changelog\.Debian\.gz$'; done
	} | sha256sum | cut -c1-16
}

# apt_install CTR DEB...: the packages and their dependencies into the container
apt_install() {
	local ctr=$1 d
	shift
	buildah run "$ctr" mkdir -p /tmp/debs
	for d in "$@"; do buildah copy --quiet "$ctr" "$d" /tmp/debs/ >/dev/null; done
	local run=(buildah run --network host -v "$CACHE/apt-lists:/var/lib/apt/lists"
		-v "$CACHE/apt-archives:/var/cache/apt/archives" -v /etc/resolv.conf:/etc/resolv.conf:ro "$ctr" --
		env DEBIAN_FRONTEND=noninteractive apt-get -o APT::Sandbox::User=root
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o Dpkg::Options::=--force-unsafe-io)
	# (no pkgcache.bin: 72 MB in the layer otherwise; no fsync per file, as
	# Debian's own container images install: a layer cut short is rebuilt,
	# never committed)
	# the cached lists first; when they are missing or stale (a package
	# gone from the mirror), apt-get update and once more
	local in=()
	for d in "$@"; do in+=("/tmp/debs/$(basename "$d")"); done
	if ! "${run[@]}" install -y -q "${in[@]}" >"$WORK/apt.log" 2>&1; then
		"${run[@]}" update -q >>"$WORK/apt.log" 2>&1 ||
			{ tail -n 20 "$WORK/apt.log" >&2; die "apt-get update in the image failed"; }
		"${run[@]}" install -y -q "${in[@]}" >>"$WORK/apt.log" 2>&1 ||
			{ tail -n 20 "$WORK/apt.log" >&2; die "apt-get install in the image failed"; }
	fi
	buildah run "$ctr" sh -c 'rm -rf /tmp/debs /var/log/apt/* /var/log/dpkg.log /var/log/alternatives.log \
		/var/cache/ldconfig/aux-cache /var/cache/debconf/*-old /var/lib/dpkg/*-old'
}

common_config() { # CTR NAME
	buildah config --label "org.opencontainers.image.title=$2" \
		--label "org.opencontainers.image.version=$VERSION" \
		--label "org.opencontainers.image.source=https://github.com/flakewire/flakewire" \
		--label "org.opencontainers.image.base.name=$BASE" \
		--env LANG=C.UTF-8 --stop-signal SIGTERM --cmd '[]' \
		--port 4242/udp --port 9842/tcp --volume /var/lib/flakewire "$1"
}

# ---- flakesock
build_sock() {
	local name=localhost/flakesock key
	key=$(content_key "${SOCK_DEBS[@]}")
	if podman image exists "$name:build-$key"; then
		podman tag "$name:build-$key" "$name:$VERSION"
		echo "$name:build-$key"
		return 0
	fi
	say "building $name:$VERSION"
	CTR=$(buildah from --quiet --pull-never "$BASE")
	apt_install "$CTR" "${SOCK_DEBS[@]}"
	# a fixed numeric user (runAsNonRoot checks a numeric one); the state
	# directory its own; the mount point of the lock directory of static
	# worker IDs (a host volume goes there: state.lock_dir_mount=yes)
	buildah run "$CTR" sh -c 'groupadd --gid 10001 flakesock &&
		useradd --uid 10001 --gid 10001 --no-create-home \
			--home-dir /var/lib/flakewire --shell /usr/sbin/nologin flakesock &&
		install -d -o 10001 -g 10001 -m 0750 /var/lib/flakewire &&
		install -d -m 1777 /run/lock/flakewire &&
		rm -f /etc/default/flakesock /lib/systemd/system/flakesock.service'
	common_config "$CTR" flakesock
	buildah config --user 10001:10001 --workingdir /var/lib/flakewire \
		--entrypoint '["/usr/sbin/flakesock","--config","/etc/flakewire/flakewire.ini","--listen","0.0.0.0","--set","state.file=/var/lib/flakewire/mark","--set","fleet.cache_file=/var/lib/flakewire/fleet","--set","state.lock_dir_mount=yes"]' \
		--cmd '[]' "$CTR"
	buildah commit --quiet --rm "$CTR" "$name:build-$key" >/dev/null
	CTR=""
	podman tag "$name:build-$key" "$name:$VERSION"
	prune "$name" "build-$key"
	echo "$name:build-$key"
}

# ---- flakewire in AF_XDP mode
build_wire() {
	local name=localhost/flakewire-afxdp key
	key=$(content_key "${WIRE_DEBS[@]}")
	if podman image exists "$name:build-$key"; then
		podman tag "$name:build-$key" "$name:$VERSION"
		echo "$name:build-$key"
		return 0
	fi
	say "building $name:$VERSION"
	CTR=$(buildah from --quiet --pull-never "$BASE")
	apt_install "$CTR" "${WIRE_DEBS[@]}"
	buildah run "$CTR" sh -c 'install -d -m 0750 /var/lib/flakewire /run/flakewire &&
		install -d -m 1777 /run/lock/flakewire &&
		rm -f /etc/default/flakewire* /etc/default/flakesock /lib/systemd/system/flake*.service \
			/usr/libexec/flakewire/hugepages'
	common_config "$CTR" flakewire-afxdp
	# EAL's runtime files under RUNTIME_DIRECTORY (as under systemd): an
	# emptyDir in the DaemonSet, the root file system stays read-only.
	# One lcore, no hugepages, no PCI: [port0] mode = af_xdp on the iface the
	# ARGS name (--set port0.iface=eth0).
	buildah config --user 0:0 --env RUNTIME_DIRECTORY=/run/flakewire \
		--entrypoint '["/usr/sbin/flakewire"]' \
		--cmd '["-l","0","--no-huge","--no-pci","-m","256","--file-prefix","flakewire","--","--config","/etc/flakewire/flakewire.ini","--set","port0.mode=af_xdp","--set","state.file=/var/lib/flakewire/mark","--set","fleet.cache_file=/var/lib/flakewire/fleet","--set","state.lock_dir_mount=yes"]' \
		"$CTR"
	buildah commit --quiet --rm "$CTR" "$name:build-$key" >/dev/null
	CTR=""
	podman tag "$name:build-$key" "$name:$VERSION"
	prune "$name" "build-$key"
	echo "$name:build-$key"
}

prune() { # NAME KEEP: earlier build-* tags of NAME
	podman images --format '{{.Repository}}:{{.Tag}}' "$1" | grep ":build-" |
		grep -vx "$1:$2" | xargs -r podman rmi >/dev/null 2>&1 || true
}

build_sock
build_wire
