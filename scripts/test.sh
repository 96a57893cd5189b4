#!/usr/bin/env bash
# The one test command: installs what is missing, builds two trees with
# warnings as errors and runs their tests, then a short bounded fuzz run,
# and prints "N passed, N failed, N skipped" as its last line.
#
#  - $BUILD (build/): -Ddpdk=enabled, so a missing DPDK fails the build
#    instead of silently dropping the DPDK responder and its tests; every
#    meson suite (unit, cli, system).
#  - $BUILD_NODPDK (build-nodpdk/): -Ddpdk=disabled, what a host without
#    DPDK builds (flakesock, flakectl, the client library); its unit, cli
#    and flakesock suites, counted in the totals as "nodpdk/NAME".
#
# Under CI=true a test never skips: one that skips (exit 77) is counted as
# failed, with its reason (the tests' own skip helpers fail under CI=true).
#
#   scripts/test.sh                     everything (system tests need root)
#   SUITES="unit cli" scripts/test.sh   only those meson suites (both trees)
#   FUZZ_SECONDS=0 scripts/test.sh      skip the fuzz run
#   TSAN=0 scripts/test.sh              skip the ThreadSanitizer build (scripts/tsan.sh)
set -uo pipefail
cd "$(dirname "$0")/.."

summary_fail() { # reason: the last line for a failure before any test ran
	echo "$1"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
}

LOGS=$(mktemp -d)
WARM_PID=""
trap '[ -z "$WARM_PID" ] || kill -- "-$WARM_PID" 2>/dev/null; rm -rf "$LOGS"' EXIT

# phase NAME: the seconds since the last phase ends up in the last lines.
PHASES=""
phase_t0=$SECONDS
phase() {
	PHASES="$PHASES $1 $((SECONDS - phase_t0))s,"
	phase_t0=$SECONDS
}

scripts/install-deps.sh || summary_fail "install-deps failed"
phase install

# The two Debian roots the ops tests boot (the nspawn root, the images' base)
# come from the mirror: on a new machine they take minutes of network, not
# CPU, so they are made in the background while the trees compile. Each
# script locks its cache, so a test that needs one waits for it to finish.
WARM_PID=""
if [ "$(id -u)" -eq 0 ] && { [ -z "${SUITES:-}" ] || [[ " ${SUITES} " == *" ops "* ]] || [[ " ${SUITES} " == *" system "* ]]; }; then
	# its own process group (setsid), so an early exit stops all of it; each
	# step bounded (a stalled mirror must not hold the test command)
	setsid bash -c '
		timeout 900 bash tests/ops/nspawn_root.sh >/dev/null || echo "warm-up: tests/ops/nspawn_root.sh failed (deploy-nspawn will say why)"
		timeout 900 scripts/image.sh --base-only --quiet || echo "warm-up: scripts/image.sh --base-only failed (podman-pods will say why)"
		echo "warm-up: the Debian roots ready after $SECONDS s"' >"$LOGS/warm.log" 2>&1 </dev/null &
	WARM_PID=$!
fi

BUILD=${BUILD:-build}
BUILD_NODPDK=${BUILD_NODPDK:-build-nodpdk}

# setup DIR OPTIONS...: configures DIR (new or existing) with OPTIONS, then builds it.
setup() {
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" -Dwerror=true "$@" >/dev/null || return 1
	else
		meson setup "$dir" -Dwerror=true "$@" >/dev/null || return 1
	fi
	ninja -C "$dir"
}

setup "$BUILD" -Ddpdk=enabled || summary_fail "build failed ($BUILD, -Ddpdk=enabled)"
phase build

suite_args=()
for s in ${SUITES:-}; do
	suite_args+=(--suite "$s")
done
meson test -C "$BUILD" --print-errorlogs "${suite_args[@]}"
cp "$BUILD/meson-logs/testlog.json" "$LOGS/main.json"
phase tests

# The DPDK-free tree: its suites are unit, cli and flakesock (or those of
# SUITES among them). A build failure there counts as one failed test.
nodpdk_suites=()
for s in ${SUITES:-unit cli flakesock}; do
	case "$s" in
	unit | cli | flakesock) nodpdk_suites+=(--suite "$s") ;;
	esac
done
nodpdk_build_fail=0
if [ ${#nodpdk_suites[@]} -gt 0 ]; then
	echo "== $BUILD_NODPDK: -Ddpdk=disabled (${nodpdk_suites[*]})"
	if setup "$BUILD_NODPDK" -Ddpdk=disabled; then
		meson test -C "$BUILD_NODPDK" --print-errorlogs "${nodpdk_suites[@]}"
		cp "$BUILD_NODPDK/meson-logs/testlog.json" "$LOGS/nodpdk.json"
	else
		echo "FAIL: build failed ($BUILD_NODPDK, -Ddpdk=disabled)"
		nodpdk_build_fail=1
	fi
	phase nodpdk
fi

extra_pass=0
extra_fail=$nodpdk_build_fail
FUZZ_SECONDS=${FUZZ_SECONDS:-15}
if [ -z "${SUITES:-}" ] && [ "$FUZZ_SECONDS" -gt 0 ] && [ -x scripts/fuzz.sh ]; then
	echo "== fuzz: each harness for ${FUZZ_SECONDS}s"
	if scripts/fuzz.sh "$FUZZ_SECONDS"; then
		extra_pass=1
	else
		extra_fail=$((extra_fail + 1))
	fi
	phase fuzz
fi

# The unit and dataplane tests under ThreadSanitizer (scripts/tsan.sh, build-tsan/).
if [ -z "${SUITES:-}" ] && [ "${TSAN:-1}" != 0 ] && [ -x scripts/tsan.sh ]; then
	echo "== tsan: suite unit under ThreadSanitizer"
	if scripts/tsan.sh; then
		extra_pass=$((extra_pass + 1))
	else
		extra_fail=$((extra_fail + 1))
	fi
	phase tsan
fi
if [ -n "$WARM_PID" ]; then
	wait "$WARM_PID"
	WARM_PID=""
	cat "$LOGS/warm.log"
fi
echo "the phases (seconds):${PHASES%,}; total $SECONDS s"

# Count from meson's own logs, one line of JSON per test.
/usr/bin/python3 - "$extra_pass" "$extra_fail" "${CI:-}" "$LOGS/main.json" "$LOGS/nodpdk.json" <<'PY'
import json, os, sys
passed, failed, ci = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "true"
skipped, ci_failed = [], []

def reason(t):
    lines = [l.strip() for l in (t.get("stdout") or "").splitlines() if l.strip()]
    for l in lines:
        if "SKIP" in l:
            return l
    return lines[-1] if lines else "no reason printed"

durations = []
for path, prefix in ((sys.argv[4], ""), (sys.argv[5], "nodpdk/")):
    if not os.path.exists(path):
        continue
    for line in open(path):
        t = json.loads(line)
        r, name = t["result"], prefix + t["name"]
        durations.append((float(t.get("duration") or 0), name))
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            if ci:
                ci_failed.append(f"{name}: {reason(t)}")
                failed += 1
            else:
                skipped.append(f"{name} ({reason(t)})")
        else:
            failed += 1
for f in ci_failed:
    print("FAIL (skipped, and CI=true allows no skip): " + f)
if skipped:
    print("skipped: " + "; ".join(skipped))
if durations:
    print("the ten slowest tests (seconds):")
    for d, name in sorted(durations, reverse=True)[:10]:
        print(f"  {d:7.1f}  {name}")
print(f"{passed} passed, {failed} failed, {len(skipped)} skipped")
sys.exit(1 if failed else 0)
PY
