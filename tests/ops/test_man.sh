#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The man pages (doc/*.scd, built by scdoc at build time) render without
# groff warnings and are in step with the programs: every option of
# flakewire's and flakesock's --help is in the page's OPTIONS and every option
# there is in --help; every configuration key (the table, via --print-config)
# is in SETTINGS; every flakectl command and each of its options is in
# flakectl(1).
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
DOC=${DOC_DIR:?}
TMP=$(mktemp -d /tmp/fw-man.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

render() { # PAGE OUT: plain text; groff warnings are failures
	MANWIDTH=100 LC_ALL=C.UTF-8 man --warnings -l "$1" >"$2" 2>"$TMP/warn" ||
		fail "man -l $1"
	[ ! -s "$TMP/warn" ] || fail "$1: $(cat "$TMP/warn")"
	[ "$(wc -l <"$2")" -gt 40 ] || fail "$1 renders to almost nothing"
	# man joins hyphenated words and uses U+2010 for hyphens: normalise
	sed -i 's/\xe2\x80\x90/-/g' "$2"
}
section() { # FILE NAME: the text of one top-level section
	awk -v s="$2" '/^[A-Z]/ { on = ($0 == s) } on' "$1"
}
opts() { grep -oE -- '--[a-z][a-z-]+' | sort -u; }
# the long option of each option line ("  -c, --config FILE", "      --version")
optlines() { sed -nE 's/^ +(-[a-zA-Z], )?(--[a-z][a-z-]+).*/\2/p' | sort -u; }

for p in flakewire flakesock; do
	case $p in flakewire) BIN=$FLAKEWIRE ;; *) BIN=$FLAKESOCK ;; esac
	render "$DOC/$p.8" "$TMP/$p.txt"
	"$BIN" --help >"$TMP/$p.help" 2>&1 || fail "$p --help"
	# options: the part of --help before the settings
	sed '/^Settings/q' "$TMP/$p.help" | optlines >"$TMP/$p.hopts"
	section "$TMP/$p.txt" OPTIONS | optlines >"$TMP/$p.mopts"
	diff -u "$TMP/$p.hopts" "$TMP/$p.mopts" >"$TMP/d" ||
		{ cat "$TMP/d" >&2; fail "$p: options in --help (-) and in the man page (+) differ"; }
	n=0
	"$FLAKEWIRE" --print-config | awk '/^\[/ { s = substr($0, 2, length($0) - 2) }
		/^[a-z_]+ =/ { print s "." $1 }' >"$TMP/keys"
	while read -r k; do
		[ "$p" = flakesock ] && [[ $k == port* ]] && continue
		section "$TMP/$p.txt" SETTINGS | grep -q "^ *$k = " || fail "$p(8) lacks setting $k"
		# and --help lists it too
		grep -qF -- "${k/port0./portN.}" "$TMP/$p.help" || fail "$p --help lacks setting $k"
		n=$((n + 1))
	done <"$TMP/keys"
	echo "$p(8): $(wc -l <"$TMP/$p.hopts") options, $n settings, in step"
done
if [ "$(grep -c '^port' "$TMP/keys")" -gt 0 ]; then
	section "$TMP/flakesock.txt" SETTINGS | grep -q "port0\." && fail "flakesock(8) lists [port] keys"
fi

render "$DOC/flakectl.1" "$TMP/flakectl.txt"
cmds=$("$FLAKECTL" --help 2>&1 | sed -n 's/^  \([a-z][a-z0-9-]*\)  .*/\1/p')
[ -n "$cmds" ] || fail "no commands in flakectl --help"
for c in $cmds; do
	section "$TMP/flakectl.txt" COMMANDS | grep -q "^   $c\$" || fail "flakectl(1) lacks command $c"
	for o in $("$FLAKECTL" help "$c" 2>&1 | opts); do
		section "$TMP/flakectl.txt" COMMANDS | awk -v c="$c" '/^   [a-z]/ { on = ($1 == c) } on' |
			grep -q -- "$o" || fail "flakectl(1) lacks $c $o"
	done
done
echo "flakectl(1): $(wc -w <<<"$cmds") commands, in step"
echo PASS
