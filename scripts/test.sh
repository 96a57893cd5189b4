#!/usr/bin/env bash
# The one test command: installs what is missing, builds with warnings as
# errors, runs every meson test suite (unit, cli, system) and a short bounded
# fuzz run, then prints "N passed, N failed" as its last line.
#
#   scripts/test.sh                 everything (system tests need root)
#   SUITES="unit cli" scripts/test.sh   only those meson suites
#   FUZZ_SECONDS=0 scripts/test.sh  skip the fuzz run
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh || { echo "install-deps failed"; echo "0 passed, 1 failed"; exit 1; }

BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" -Dwerror=true >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
fi
if ! ninja -C "$BUILD"; then
	echo "build failed"
	echo "0 passed, 1 failed"
	exit 1
fi

suite_args=()
for s in ${SUITES:-}; do
	suite_args+=(--suite "$s")
done
meson test -C "$BUILD" --print-errorlogs "${suite_args[@]}"

extra_pass=0
extra_fail=0
FUZZ_SECONDS=${FUZZ_SECONDS:-15}
if [ -z "${SUITES:-}" ] && [ "$FUZZ_SECONDS" -gt 0 ] && [ -x scripts/fuzz.sh ]; then
	echo "== fuzz: each harness for ${FUZZ_SECONDS}s"
	if scripts/fuzz.sh "$FUZZ_SECONDS"; then
		extra_pass=1
	else
		extra_fail=1
	fi
fi

# Count from meson's own log, one line of JSON per test.
/usr/bin/python3 - "$BUILD/meson-logs/testlog.json" "$extra_pass" "$extra_fail" <<'PY'
import json, sys
passed, failed, skipped = int(sys.argv[2]), int(sys.argv[3]), []
for line in open(sys.argv[1]):
    t = json.loads(line)
    r = t["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped.append(t["name"])
    else:
        failed += 1
if skipped:
    print("skipped (see their log for why): " + ", ".join(skipped))
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
