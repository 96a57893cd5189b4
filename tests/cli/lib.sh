# Helpers sourced by the flakectl test scripts. Each check prints one line,
# "ok NAME" or "FAIL NAME" with the details; finish() exits 1 if any failed.
# Expected values are computed here (bash arithmetic, date(1)), never by the
# library under test.

failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass() { echo "ok   $1"; }

fail()
{
	echo "FAIL $1"
	shift
	printf '       %s\n' "$@"
	failures=$((failures + 1))
}

# expect_eq NAME GOT WANT
expect_eq()
{
	if [ "$2" == "$3" ]; then
		pass "$1"
	else
		fail "$1" "got:  $2" "want: $3"
	fi
}

# expect_match NAME TEXT ERE: some line of TEXT matches the extended regex
expect_match()
{
	if printf '%s\n' "$2" | grep -Eq -- "$3"; then
		pass "$1"
	else
		fail "$1" "no line matches /$3/ in:" "$2"
	fi
}

# run_in INPUT ARGS...: runs flakectl with INPUT on stdin; sets out, err, rc
run_in()
{
	printf '%s' "$1" >"$tmp/in"
	shift
	out=$("$fc" "$@" <"$tmp/in" 2>"$tmp/err")
	rc=$?
	err=$(cat "$tmp/err")
}

# run ARGS...: as run_in with an empty stdin, so nothing can wait for a tty
run() { run_in '' "$@"; }

# expect_ok NAME ARGS...: exit 0 and nothing on stderr
expect_ok()
{
	local name=$1
	shift
	run "$@"
	if [ "$rc" -eq 0 ] && [ -z "$err" ]; then
		pass "$name"
	else
		fail "$name" "flakectl $*" "rc=$rc stderr: $err"
	fi
}

# expect_usage NAME NEEDLE ARGS...: exit 2, no stdout, and exactly one line on
# stderr that contains NEEDLE (the argument it must name)
expect_usage()
{
	local name=$1 needle=$2
	shift 2
	run "$@"
	expect_usage_result "$name" "$needle" "flakectl $*"
}

expect_usage_result()
{
	local lines=0
	[ -n "$err" ] && lines=$(printf '%s\n' "$err" | wc -l)
	if [ "$rc" -eq 2 ] && [ -z "$out" ] && [ "$lines" -eq 1 ] && [[ $err == *"$2"* ]]; then
		pass "$1"
	else
		fail "$1" "$3" "rc=$rc (want 2), stderr lines=$lines (want 1), want '$2' in it" \
			"stdout: $out" "stderr: $err"
	fi
}

# iso_ms MS: unix ms as ISO 8601 UTC with milliseconds
iso_ms()
{
	printf '%s.%03dZ' "$(date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%S)" $(($1 % 1000))
}

finish()
{
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed"
		exit 1
	fi
	echo "all checks passed"
}
