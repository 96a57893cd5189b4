#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian 12 root that tests/ops/test_nspawn.sh boots with systemd-nspawn:
# debootstrap's minbase from Debian's mirror plus systemd as PID 1, with the
# package lists of bookworm, bookworm-updates and bookworm-security fetched.
# Cached in $FW_NSPAWN_CACHE (default /var/cache/flakewire-test) under a
# name made of the hash of this file: a second run on the same machine
# reuses it, a change of this recipe builds a new one (and removes the old).
# The root is built in a temporary directory and renamed when complete, so an
# interrupted build leaves nothing that a later run would take for a root.
#
# usage: tests/ops/nspawn_root.sh   (as root) prints the root's path
set -euo pipefail
CACHE=${FW_NSPAWN_CACHE:-/var/cache/flakewire-test}
MIRROR=${FW_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${FW_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
INCLUDE=systemd,systemd-sysv,dbus,iproute2
KEY=$( (sha256sum <"${BASH_SOURCE[0]}"; echo "$MIRROR $SECURITY") | sha256sum | cut -c1-16)
ROOT=$CACHE/bookworm-$KEY
[ "$(id -u)" -eq 0 ] || { echo "nspawn_root.sh: needs root" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "nspawn_root.sh: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }
mkdir -p "$CACHE"
# One build at a time (scripts/test.sh starts one in the background while it
# compiles): a second caller waits here, then finds the root complete.
exec 9>"$CACHE/.nspawn.lock"
flock 9
if [ -f "$ROOT/.complete" ]; then
	echo "$ROOT"
	exit 0
fi
# older recipes and interrupted builds
find "$CACHE" -mindepth 1 -maxdepth 1 \( -name 'bookworm-*' -o -name '.build-*' \) \
	! -name "bookworm-$KEY" -exec rm -rf {} +
NEW=$(mktemp -d "$CACHE/.build-XXXXXX")
trap 'rm -rf "$NEW"' EXIT
chmod 0755 "$NEW"
debootstrap --variant=minbase --include="$INCLUDE" bookworm "$NEW" "$MIRROR" >"$NEW.log" 2>&1 ||
	{ tail -n 20 "$NEW.log" >&2; rm -f "$NEW.log"; echo "nspawn_root.sh: debootstrap failed" >&2; exit 1; }
rm -f "$NEW.log"
cat >"$NEW/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
EOF
# the host's resolver for apt on the host side (the container's network is private)
cp /etc/resolv.conf "$NEW/etc/resolv.conf"
chroot "$NEW" apt-get update -qq >/dev/null ||
	{ echo "nspawn_root.sh: apt-get update in the new root failed" >&2; exit 1; }
# a machine ID and a host name of its own; no getty on the console
systemd-machine-id-setup --root="$NEW" >/dev/null
echo fw-nspawn >"$NEW/etc/hostname"
chroot "$NEW" systemctl mask console-getty.service getty@.service >/dev/null 2>&1 || true
touch "$NEW/.complete"
trap - EXIT
mv -T "$NEW" "$ROOT"
echo "$ROOT"
