#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The configuration table: config/flakewire.ini is exactly --print-config's
# output, loads cleanly, and bad settings fail naming key, value and range.
FLAKEWIRE=${FLAKEWIRE:?} SRC=${FW_SRC:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$FLAKEWIRE" --print-config >"$TMP/sample.ini" || fail "--print-config"
diff -u "$SRC/config/flakewire.ini" "$TMP/sample.ini" ||
	fail "config/flakewire.ini is stale: regenerate with flakewire --print-config"
"$FLAKEWIRE" -- --config "$SRC/config/flakewire.ini" --check-config || fail "sample does not load"
"$FLAKEWIRE" --help | grep -q 'id.worker_bits = 10' || fail "--help lacks the settings"

expect_err() { # message args...
	local msg=$1
	shift
	out=$("$FLAKEWIRE" -- "$@" --check-config 2>&1) && fail "accepted: $*"
	grep -qF -- "$msg" <<<"$out" || fail "for '$*' expected '$msg', got '$out'"
}
expect_err 'config: [id] worker_bits = 30: out of range (0-16)' --set id.worker_bits=30
expect_err 'config: [id] workers = 1,2,1: duplicate 1' --set id.workers=1,2,1
expect_err '[idx]: unknown section' --set idx.a=1
expect_err '[net] bogus: unknown key' --set net.bogus=1
expect_err '[net] udp_port = x: not a number (1-65535)' --set net.udp_port=x
expect_err '[port0] address = 1.2.3: not an IPv4 address' --set port0.address=1.2.3
expect_err '[state] start_policy = later: not one of (wait, fail)' --set state.start_policy=later
expect_err 'leaves 25 timestamp bits' --set id.worker_bits=16 --set id.sequence_bits=22
printf '[id]\nworker_bits = 8\nworker_bits = 9\n' >"$TMP/dup.ini"
expect_err '[id] worker_bits: given twice' --config "$TMP/dup.ini"
printf '[clock]\nreanchor_ms\n' >"$TMP/typo.ini"
expect_err "'reanchor_ms': expected key = value" --config "$TMP/typo.ini"
printf '[id]\nworker_bits = 8\n' >"$TMP/ok.ini"
"$FLAKEWIRE" -- --config "$TMP/ok.ini" --set id.workers=255 --check-config >/dev/null ||
	fail "valid config rejected"
expect_err '[id] workers: 256 out of range (0-255)' --config "$TMP/ok.ini" --set id.workers=256

# issue 38: --print-config beside --config and --set prints what would run (it printed the
# defaults), as an INI file that loads back to the same text
printf '[id]\nworker_base = 9\n[net]\ntrusted = 10.1.0.0/16,fd00::/8\n[port0]\naddress = 10.2.0.5\n' \
	>"$TMP/eff.ini"
"$FLAKEWIRE" -- --config "$TMP/eff.ini" --set state.mark_ahead_ms=5000 --print-config \
	>"$TMP/eff.out" || fail "--print-config with --config"
grep -qx 'worker_base = 9' "$TMP/eff.out" || fail "--print-config: the file's worker_base"
grep -qx 'trusted = 10.1.0.0/16,fd00::/8' "$TMP/eff.out" || fail "--print-config: the file's trusted"
grep -qx 'address = 10.2.0.5' "$TMP/eff.out" || fail "--print-config: the file's [port0] address"
grep -qx 'mark_ahead_ms = 5000' "$TMP/eff.out" || fail "--print-config: --set mark_ahead_ms"
"$FLAKEWIRE" -- --config "$TMP/eff.out" --print-config >"$TMP/eff2.out" || fail "reload"
diff -u "$TMP/eff.out" "$TMP/eff2.out" || fail "--print-config output does not load back the same"
echo PASS
