#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The systemd units (dist/systemd, as configured by meson): `systemd-analyze
# verify` reports nothing (syntax, directives, the commands exist and are
# executable, the man pages of Documentation= resolve), and `systemd-analyze
# security --offline` rates each at most EXPOSURE_MAX (README "Deploying"
# quotes the levels). Every unit keeps the settings the brief requires.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${UNIT_DIR:?}" "${FLAKEWIRE:?}" "${FLAKESOCK:?}" "${DOC_DIR:?}" "${PREFIX_SBIN:?}"
EXPOSURE_MAX=${EXPOSURE_MAX:-3.0}
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing"
TMP=$(mktemp -d /tmp/fw-units.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# the installed paths, pointed at the build tree
mkdir -p "$TMP/sbin" "$TMP/man/man8" "$TMP/man/man1" "$TMP/units"
ln -s "$FLAKEWIRE" "$TMP/sbin/flakewire"
ln -s "$FLAKESOCK" "$TMP/sbin/flakesock"
cp "$DOC_DIR"/*.8 "$TMP/man/man8/"
cp "$DOC_DIR"/*.1 "$TMP/man/man1/"
export MANPATH=$TMP/man
for f in "$UNIT_DIR"/*.service; do
	sed "s|$PREFIX_SBIN/|$TMP/sbin/|g" "$f" >"$TMP/units/$(basename "$f")"
done
n=0
for u in "$TMP"/units/*.service; do
	name=$(basename "$u")
	out=$(systemd-analyze verify "$u" 2>&1) || fail "$name: systemd-analyze verify: $out"
	[ -z "$out" ] || fail "$name: systemd-analyze verify reports: $out"
	for k in 'Restart=on-failure' 'StartLimitBurst=' 'NoNewPrivileges=yes' \
		'ProtectSystem=strict' 'StateDirectory=' 'LimitMEMLOCK=' 'CapabilityBoundingSet='; do
		grep -q "^$k" "$u" || fail "$name lacks $k"
	done
	sec=$(systemd-analyze security --offline=yes --threshold=100 "$u" 2>&1) ||
		fail "$name: systemd-analyze security: $sec"
	lvl=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$sec")
	[ -n "$lvl" ] || fail "$name: no exposure level in: $sec"
	echo "$name: verify clean, exposure $lvl"
	awk -v l="$lvl" -v m="$EXPOSURE_MAX" 'BEGIN { exit !(l <= m) }' ||
		fail "$name: exposure $lvl above $EXPOSURE_MAX"
	n=$((n + 1))
done
[ "$n" -eq 3 ] || fail "expected 3 units, found $n"
# the unit that needs hugepages reserves them with DPDK's own tool
grep -q '^ExecStartPre=+.*dpdk-hugepages.py --reserve' "$TMP/units/flakewire.service" ||
	fail "flakewire.service does not reserve hugepages with dpdk-hugepages.py"
echo PASS
