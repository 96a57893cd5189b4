#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The capability sets of the systemd units are enough, and each capability
# of the AF_XDP set is needed:
#   - flakesock as an unprivileged user (nobody) with no capability at all
#     and no_new_privs answers and persists its mark at SIGTERM
#     (flakesock.service: DynamicUser, CapabilityBoundingSet empty);
#   - flakewire in AF_XDP mode, as root restricted to flakewire-afxdp.service's
#     bounding set and no_new_privs, answers from another namespace over a
#     veth; without any one of those capabilities it does not start.
# The capability lists are read from the configured units themselves.
set -u
# sys_kill_wait (sourced for its helpers only: no sys_init, this test keeps its own trap)
. "$(dirname "${BASH_SOURCE[0]}")/../system/lib.sh"
fail() { echo "FAIL: $*" >&2; [ -n "${LOG:-}" ] && [ -f "$LOG" ] && tail -n 15 "$LOG" >&2; exit 1; }
: "${FLAKEWIRE:?}" "${FLAKESOCK:?}" "${FLAKECTL:?}" "${UNIT_DIR:?}" "${PEER_XDP:?}"
[ "$(id -u)" -eq 0 ] || fail "needs root"
command -v setpriv >/dev/null || fail "setpriv missing (util-linux)"
NS="fwc-s-$$" NSC="fwc-c-$$" SRV="fwcs$$" CLI="fwcc$$"
TMP=$(mktemp -d /tmp/fw-caps.XXXXXX)
chmod 0755 "$TMP"
PID=""
stop() {
	[ -n "$PID" ] || return 0
	sys_kill_wait "$PID" TERM 5
	PID=""
}
cleanup() {
	stop
	ip -n "$NS" link set dev "$SRV" xdp off 2>/dev/null
	ip -n "$NSC" link set dev "$CLI" xdp off 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	ip netns del "$NSC" 2>/dev/null
	rm -rf "$TMP" "/var/run/dpdk/fwc-$$"
	rm -f /run/flakewire/xdp-*-"$SRV".lock 2>/dev/null
	return 0
}
trap cleanup EXIT
ip netns add "$NS" && ip netns add "$NSC" || fail "netns"
ip -n "$NS" link set lo up
ip -n "$NSC" link set lo up

caps_of() { # UNIT: its CapabilityBoundingSet= as setpriv's "-all,+a,+b"
	local c
	c=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT_DIR/$1" | tr 'A-Z' 'a-z' | sed 's/cap_//g')
	printf -- '-all%s' "$(for x in $c; do printf ',+%s' "$x"; done)"
}

# flakesock: nobody, no capability, no_new_privs
[ "$(caps_of flakesock.service)" = "-all" ] || fail "flakesock.service grants capabilities"
mkdir "$TMP/sock" && chown nobody "$TMP/sock"
LOG=$TMP/sock.log
ip netns exec "$NS" setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
	--bounding-set=-all --no-new-privs "$FLAKESOCK" --listen 127.0.0.1 \
	--set "state.file=$TMP/sock/mark" --set stats.interval_s=0 >"$LOG" 2>&1 &
PID=$!
ok=""
for _ in $(seq 50); do
	ip netns exec "$NS" "$FLAKECTL" get --server 127.0.0.1:4242 --timeout 200 >/dev/null 2>&1 && { ok=1; break; }
	sleep 0.1
done
[ -n "$ok" ] || fail "flakesock without privileges does not answer"
grep -q "^CapEff:[[:space:]]*0000000000000000" "/proc/$PID/status" || fail "flakesock has capabilities"
kill -TERM "$PID"; wait "$PID" || fail "flakesock exit status $?"
PID=""
grep -q "persisted" "$LOG" || fail "flakesock did not persist its mark"
echo "flakesock: answers as nobody with no capabilities; mark persisted at SIGTERM"

# flakewire AF_XDP with the unit's bounding set
ip -n "$NS" link add "$SRV" type veth peer name "$CLI" netns "$NSC" || fail "veth"
ip -n "$NS" addr add 10.234.0.2/24 dev "$SRV"
ip -n "$NSC" addr add 10.234.0.1/24 dev "$CLI"
ip -n "$NS" link set "$SRV" up
ip -n "$NSC" link set "$CLI" up
ip netns exec "$NSC" ethtool -K "$CLI" tx off >/dev/null || fail "ethtool -K"
ip -n "$NSC" link set dev "$CLI" xdpdrv obj "$PEER_XDP" sec xdp || fail "peer XDP program"
SET=$(caps_of flakewire-afxdp.service)
fw() { # bounding set; starts flakewire, returns 0 once it answers
	LOG=$TMP/fw.log
	: >"$LOG"
	# bpffs as systemd mounts it at boot (ip netns exec gives a fresh /sys)
	ip netns exec "$NS" sh -c 'mount -t bpf bpf /sys/fs/bpf && exec "$@"' sh \
		setpriv --bounding-set="$1" --inh-caps=-all --no-new-privs \
		"$FLAKEWIRE" -l 0 --no-huge --no-pci -m 256 --file-prefix "fwc-$$" -- \
		--set port0.mode=af_xdp --set port0.iface="$SRV" --set state.file="$TMP/mark" \
		--set clock.calibrate_ms=200 --set stats.interval_s=0 >"$LOG" 2>&1 &
	PID=$!
	for _ in $(seq 60); do
		kill -0 "$PID" 2>/dev/null || { wait "$PID"; PID=""; return 1; }
		ip netns exec "$NSC" "$FLAKECTL" get --server 10.234.0.2:4242 --timeout 200 \
			>/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}
fw "$SET" || fail "flakewire (AF_XDP) with $SET does not answer"
stop
echo "flakewire AF_XDP: answers with bounding set $SET"
for c in $(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT_DIR/flakewire-afxdp.service"); do
	less=$(sed "s/,+$(tr 'A-Z' 'a-z' <<<"${c#CAP_}")//" <<<"$SET")
	if fw "$less"; then
		stop
		fail "flakewire (AF_XDP) works without $c: the unit grants more than it needs"
	fi
	stop
	echo "without $c: does not start or answer ($(grep -m1 -iE 'error|fail|cannot|denied|not permitted' "$LOG" | cut -c1-100))"
	ip -n "$NS" link set dev "$SRV" xdp off 2>/dev/null
done
echo PASS
