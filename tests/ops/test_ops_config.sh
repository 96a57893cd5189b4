#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# config/prometheus and config/grafana: the alert rules pass `promtool check
# rules` and their unit tests (`promtool test rules`); every PromQL query of
# the Grafana dashboard parses (checked as recording rules); every flakewire_*
# name used in either is one a responder exports; every alert has a runbook
# section in README.md.
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

# names used vs names exported (fleet leases: exported by lib/fleet when it lands)
exported=$(grep -ohE '"flakewire_[a-z0-9_]+"' "$SRC"/app/flakewire/metrics.c \
	"$SRC"/app/flakesock/metrics.c "$SRC"/lib/metrics/serve_metrics.c | tr -d '"' | sort -u)
used=$(grep -ohE 'flakewire_[a-z0-9_]+' "$RULES" "$DASH" | sort -u)
for n in $used; do
	case $n in flakewire_fleet_*) continue ;; esac
	grep -qx "$n" <<<"$exported" || fail "$n is used in config/ but no responder exports it"
done
echo "$(wc -w <<<"$used") metric names used, all exported"

# a runbook entry per alert
for a in $(sed -n 's/^ *- alert: //p' "$RULES"); do
	grep -q "^### $a\$" "$SRC/README.md" || fail "README.md has no runbook section '### $a'"
done
echo PASS
