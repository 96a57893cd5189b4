# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the /metrics tests (sourced after a responder's lib.sh, which
# provides fail, $NS, $TMP, $PY). $URL is the endpoint inside $NS.

# m_scrape FILE: GET $URL into FILE (status 200 and the 0.0.4 content type).
m_scrape() {
	local h
	h=$(ip netns exec "$NS" curl -sS --max-time 5 -D - -o "$1" "$URL") || fail "GET $URL"
	grep -q '^HTTP/1.1 200' <<<"$h" || fail "GET $URL: $h"
	grep -qi '^content-type: text/plain; version=0.0.4' <<<"$h" || fail "content type: $h"
}

# m_promtool FILE: the exposition passes promtool's format and lint checks.
m_promtool() {
	local out
	out=$(promtool check metrics <"$1" 2>&1) || fail "promtool check metrics: $out"
	[ -z "$out" ] || fail "promtool check metrics reports: $out"
}

# m_get FILE NAME LABELS: the sample's value ("" when absent).
m_get() {
	awk -v k="$2$3" '$1 == k { print $2 }' "$1"
}

# m_delta NAME LABELS EXPECTED: $TMP/m1 minus $TMP/m0 equals EXPECTED.
m_delta() {
	local a b
	a=$(m_get "$TMP/m0" "$1" "$2")
	b=$(m_get "$TMP/m1" "$1" "$2")
	[ -n "$a" ] && [ -n "$b" ] || fail "$1$2 missing"
	echo "$1$2: +$((b - a)), expected +$3"
	[ $((b - a)) -eq "$3" ] || fail "$1$2 moved by $((b - a)), expected $3"
}

# m_value NAME LABELS EXPECTED: in $TMP/m1.
m_value() {
	local v
	v=$(m_get "$TMP/m1" "$1" "$2")
	echo "$1$2 = $v"
	[ "$v" = "$3" ] || fail "$1$2 = '$v', expected $3"
}

# m_check FILE EXPR WHAT: a python comparison over the unlabelled or labelled
# samples of FILE (names usable as variables; NAME{...} written literally).
m_check() {
	"$PY" - "$1" "$2" <<'PYEOF' || fail "$3: $2"
import re, sys
vals = {}
for line in open(sys.argv[1]):
    if line.startswith('#') or not line.strip():
        continue
    k, v = line.rsplit(' ', 1)
    vals[k] = float(v)
expr = sys.argv[2]
for k in sorted(vals, key=len, reverse=True):
    if k in expr:
        expr = expr.replace(k, repr(vals[k]))
print(sys.argv[2], '->', expr)
sys.exit(0 if eval(expr) else 1)
PYEOF
}
