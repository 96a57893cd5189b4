#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The systemd units (dist/systemd, as configured by meson): `systemd-analyze
# verify` reports nothing (syntax, directives, the commands exist and are
# executable, the man pages of Documentation= resolve), and `systemd-analyze
# security --offline` rates each at most EXPOSURE_MAX (README "Deploying"
# quotes the levels). Every unit keeps the settings the brief requires:
# one RuntimeDirectory (EAL takes RUNTIME_DIRECTORY as one path), a
# SystemCallFilter allow list whose every call outside @system-service has
# its comment, the DPDK units restarting crashes only (Restart=on-abnormal:
# a start-up error is not retried) and flakewire.service reserving
# hugepages through the wrapper that turns a failure into one line.
# tests/ops/test_nspawn.sh runs them under systemd.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${UNIT_DIR:?}" "${FLAKEWIRE:?}" "${FLAKESOCK:?}" "${DOC_DIR:?}" "${PREFIX_SBIN:?}" "${PREFIX_LIBEXEC:?}"
EXPOSURE_MAX=${EXPOSURE_MAX:-3.0}
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing"
TMP=$(mktemp -d /tmp/fw-units.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# the installed paths, pointed at the build tree
mkdir -p "$TMP/sbin" "$TMP/man/man8" "$TMP/man/man1" "$TMP/units" "$TMP/libexec/flakewire"
ln -s "$UNIT_DIR/hugepages" "$TMP/libexec/flakewire/hugepages"
ln -s "$FLAKEWIRE" "$TMP/sbin/flakewire"
ln -s "$FLAKESOCK" "$TMP/sbin/flakesock"
cp "$DOC_DIR"/*.8 "$TMP/man/man8/"
cp "$DOC_DIR"/*.1 "$TMP/man/man1/"
export MANPATH=$TMP/man
for f in "$UNIT_DIR"/*.service; do
	sed "s|$PREFIX_SBIN/|$TMP/sbin/|g; s|$PREFIX_LIBEXEC/|$TMP/libexec/|g" "$f" >"$TMP/units/$(basename "$f")"
done
n=0
for u in "$TMP"/units/*.service; do
	name=$(basename "$u")
	out=$(systemd-analyze verify "$u" 2>&1) || fail "$name: systemd-analyze verify: $out"
	[ -z "$out" ] || fail "$name: systemd-analyze verify reports: $out"
	for k in 'Restart=on-' 'StartLimitBurst=' 'NoNewPrivileges=yes' \
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
for u in flakewire.service flakewire-afxdp.service; do
	f=$TMP/units/$u
	grep -qx 'Restart=on-abnormal' "$f" || fail "$u does not restart crashes only (Restart=on-abnormal)"
	[ "$(grep -c '^RuntimeDirectory=' "$f")" -eq 1 ] && grep -qx 'RuntimeDirectory=[a-z-]*' "$f" ||
		fail "$u: not exactly one RuntimeDirectory (EAL takes RUNTIME_DIRECTORY as one path)"
	for c in $(sed -n 's/^SystemCallFilter=\([^~].*\)/\1/p' "$f"); do
		case $c in @system-service) continue ;; esac
		grep -q "^#   $c " "$f" || fail "$u: SystemCallFilter allows $c without a comment saying why"
	done
done
grep -q '^SystemCallFilter=@system-service$' "$TMP/units/flakesock.service" ||
	fail "flakesock.service allows more than @system-service"
# the unit that needs hugepages reserves them with DPDK's own tool, through
# the wrapper that says in one line why it cannot
grep -q "^ExecStartPre=+$TMP/libexec/flakewire/hugepages \${FLAKEWIRE_HUGEPAGES}$" "$TMP/units/flakewire.service" ||
	fail "flakewire.service does not reserve hugepages through libexec/flakewire/hugepages"
grep -q 'dpdk-hugepages.py --reserve\|"$tool" --reserve' "$UNIT_DIR/hugepages" &&
	grep -q '^tool=.*dpdk-hugepages.py$' "$UNIT_DIR/hugepages" ||
	fail "the hugepages wrapper does not call dpdk-hugepages.py --reserve"
echo PASS
