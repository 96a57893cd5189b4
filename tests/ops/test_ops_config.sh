#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# config/prometheus and config/grafana: the alert rules pass `promtool check
# rules` and their unit tests (`promtool test rules`); every PromQL query of
# the Grafana dashboard parses (checked as recording rules); every flakewire_*
# name used in either is one a responder exports (fleet leases included);
# every alert has a runbook section in doc/runbook.md and a runbook_url that
# points at it: doc/runbook.md#<alert in lower case>, under the optional base
# external label flakewire_runbook (no placeholder host).
set -u
SRC=${FW_SRC:?}
TMP=$(mktemp -d /tmp/fw-opscfg.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus)"
PY=/usr/bin/python3
RULES=$SRC/config/prometheus/flakewire-alerts.yml
DASH=$SRC/config/grafana/flakewire-dashboard.json

promtool check rules "$RULES" || fail "promtool check rules"
(cd "$SRC/config/prometheus" && promtool test rules flakewire-alerts.test.yml) ||
	fail "promtool test rules"

# dashboard queries as recording rules, so promtool parses every one
"$PY" - "$DASH" >"$TMP/dash-rules.yml" <<'PYEOF' || fail "dashboard JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["uid"] and d["title"] and d["panels"], "uid, title, panels"
print("groups:\n  - name: dashboard\n    rules:")
n = 0
for p in d["panels"]:
    assert p.get("targets"), "panel %r has no query" % p.get("title")
    for t in p["targets"]:
        e = t["expr"].replace("$__rate_interval", "5m").replace("$instance", ".*")
        n += 1
        print("      - record: dashboard:q%d\n        expr: %s" % (n, json.dumps(e)))
PYEOF
promtool check rules "$TMP/dash-rules.yml" >/dev/null || fail "a dashboard query does not parse"

# names used vs names exported
exported=$(grep -ohE '"flakewire_[a-z0-9_]+"' "$SRC"/app/flakewire/responder.c \
	"$SRC"/lib/responder/responder_metrics.c "$SRC"/lib/metrics/serve_metrics.c \
	"$SRC"/lib/fleet/fleet_metrics.c | tr -d '"' | sort -u)
used=$(grep -ohE 'flakewire_[a-z0-9_]+' "$RULES" "$DASH" | grep -vx flakewire_runbook | sort -u)
for n in $used; do
	grep -qx "$n" <<<"$exported" || fail "$n is used in config/ but no responder exports it"
done
echo "$(wc -w <<<"$used") metric names used, all exported"

# a runbook entry per alert
for a in $(sed -n 's/^ *- alert: //p' "$RULES"); do
	grep -q "^### $a\$" "$SRC/doc/runbook.md" || fail "doc/runbook.md has no runbook section '### $a'"
done
# each alert's runbook_url: the base external label, else doc/runbook.md, then #anchor
"$PY" - "$RULES" <<'PYEOF' || fail "runbook_url"
import re, sys
alert = None
n = 0
for line in open(sys.argv[1]):
    m = re.match(r"\s*- alert: (\S+)", line)
    if m:
        alert = m.group(1)
    m = re.match(r'\s*runbook_url: "(.*)"$', line)
    if m:
        want = ("{{ with $externalLabels.flakewire_runbook }}{{ . }}{{ else }}doc/runbook.md{{ end }}#"
                + alert.lower())
        assert m.group(1) == want, "%s: runbook_url %s, expected %s" % (alert, m.group(1), want)
        n += 1
alerts = sum(1 for l in open(sys.argv[1]) if re.match(r"\s*- alert: ", l))
assert n == alerts, "%d alerts, %d runbook_url" % (alerts, n)
print("%d runbook_url annotations point at doc/runbook.md#<alert>" % n)
PYEOF
echo PASS
