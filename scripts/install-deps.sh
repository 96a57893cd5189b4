#!/usr/bin/env bash
# Installs every Debian package flakewire needs to build, test and run.
# Idempotent: quiet when everything is present; runs apt-get update only
# when something is missing.
set -euo pipefail

PKGS=(
	build-essential pkg-config meson ninja-build clang llvm
	dpdk dpdk-dev libdpdk-dev
	libbpf-dev libxdp-dev bpftool
	libcmocka-dev libclang-rt-14-dev
	iproute2 iputils-ping ethtool tcpdump
	python3 gnuplot-nox
	libsodium-dev # issue 12: ChaCha20 keystream for the random bits of UUIDv7 (lib/rng)
	redis-server redis-tools valgrind # issue 16: bench.sh Redis peer rows (4d-4h), callgrind row P
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
