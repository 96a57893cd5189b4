#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Consumer test of one language client, as a service developer meets it: a
# fresh project in a mktemp dir OUTSIDE the source tree, next to a link
# "flakewire" to the checkout (the READMEs' commands say ../flakewire/...).
#
# usage: consumer.sh LANG SRCROOT FLAKESOCK [CONSUMER_C]
#   LANG  go | java | python | ts | rust | c (c: the C client's program CONSUMER_C,
#         built by meson: no README install step)
#
# 1. starts flakesock A (worker 31) and B (worker 32) on loopback, a third
#    (worker 33) stopped with SIGSTOP (a silent host: its port is bound, it
#    never answers) and picks a dead port (nothing bound: ICMP port
#    unreachable);
# 2. runs every ```sh block of clients/LANG/README.md in order, as written,
#    in the fresh project (the install steps);
# 3. writes every ```LANG block of that README to a file and runs it with
#    FLAKEWIRE_SERVERS=A,B (the snippets read their addresses from it);
# 4. runs tests/clients/consumer/LANG: one ID, 1,000 through the prefetching
#    call, 5 UUIDv7, kill -9 of A, more IDs from B, every ID unique and
#    increasing per worker; then the failover figures (a request to
#    [dead port, B] and to [silent host, B], printed, never asserted) and
#    close() ending hand-outs with the "closed" error.
# Everything started here is stopped by PID on exit, also on failure.
set -u
lang=${1:?usage: consumer.sh LANG SRCROOT FLAKESOCK [CONSUMER_C]}
root=$(cd "${2:?source root}" && pwd)
fsock=$(realpath "${3:?flakesock binary}")
consumer_c=${4:+$(realpath "$4")}
here=$root/tests/clients
pids=()
stopped=""
tmp=$(mktemp -d "/tmp/fw-consumer-$lang.XXXXXX")
app=$tmp/app

cleanup()
{
	local p
	[ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null
	for p in "${pids[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null
			for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$p" 2>/dev/null
		fi
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail()
{
	echo "FAIL ($lang): $*" >&2
	for f in "$tmp"/*.log; do
		[ -f "$f" ] && { echo "---- $f" >&2; tail -n 20 "$f" >&2; }
	done
	exit 1
}

. "$(dirname "${BASH_SOURCE[0]}")/ports.sh" # port_busy, free_port

# start_sock NAME WORKER: flakesock on a free loopback port; sets port, pid.
start_sock()
{
	local name=$1 log="$tmp/$1.log"
	for _ in 1 2 3 4 5; do
		port=$(free_port) || break
		: >"$log"
		"$fsock" --listen 127.0.0.1 --set "state.file=$tmp/$name.mark" --set "net.udp_port=$port" \
			--set "state.lock_dir=$tmp/locks" \
			--set stats.interval_s=0 --set "id.workers=$2" >"$log" 2>&1 &
		pid=$!
		pids+=("$pid")
		for _ in $(seq 50); do
			grep -q "listening on" "$log" && return 0
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	done
	fail "flakesock $name did not start"
}

[ -x "$fsock" ] || fail "flakesock $fsock is not executable"
start_sock a 31
FW_A=127.0.0.1:$port FW_A_PID=$pid
start_sock b 32
FW_B=127.0.0.1:$port
start_sock silent 33
FW_SILENT=127.0.0.1:$port
kill -STOP "$pid" && stopped=$pid
FW_DEAD=127.0.0.1:$(free_port)
FLAKEWIRE_SERVERS=$FW_A,$FW_B
export FW_A FW_A_PID FW_B FW_SILENT FW_DEAD FLAKEWIRE_SERVERS
# Isolated caches: nothing of this run lands in the user's ~/.m2 or Go cache.
# Maven's JVM compiles with C1 only and collects serially: a build this size
# ends before C2 pays off (consumer-java: 24-27 CPU-seconds against 36-37,
# two runs each, the same steps).
export GOCACHE=$tmp/go-cache GOPATH=$tmp/go-path GOPROXY=off GOTOOLCHAIN=local \
	CGO_ENABLED=0 PYTHONDONTWRITEBYTECODE=1 \
	MAVEN_OPTS="-Dmaven.repo.local=$tmp/m2 -XX:TieredStopAtLevel=1 -XX:+UseSerialGC" \
	npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
# Rust: Debian's cargo (a rustup toolchain may come first on PATH), no registry.
[ "$lang" = rust ] && export PATH=/usr/bin:$PATH CARGO_HOME=$tmp/cargo-home CARGO_NET_OFFLINE=true

ln -s "$root" "$tmp/flakewire"
mkdir -p "$app"
cd "$app" || fail "no project dir"
readme=$root/clients/$lang/README.md
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# blocks FENCE DIR: every ```FENCE block of the README as DIR/N (N = 1, 2, ...).
blocks()
{
	mkdir -p "$2"
	awk -v fence="$1" -v dir="$2" '
		$0 == "```" fence { n++; f = dir "/" n; printf "" > f; inb = 1; next }
		inb && /^```/ { inb = 0; close(f); next }
		inb { print > f }
		END { print n + 0 }' "$readme"
}

# The user's own project, before the README's steps.
case $lang in
ts) printf '{"name": "app", "private": true, "type": "module"}\n' >package.json
	# The consumer compiles with the client's pinned tsc and Node types
	# (npm ci in clients/ts, once, shared with the ts tests: FW_TS_OUT).
	sh "$here/ts.sh" "$root/clients/ts" "${FW_TS_OUT:-$tmp/ts-tests}" true ||
		fail "npm ci / tsc in clients/ts"
	cat >tsconfig.json <<-EOF
	{"compilerOptions": {"target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
	  "strict": true, "skipLibCheck": true, "outDir": "out", "types": ["node"],
	  "typeRoots": ["$root/clients/ts/node_modules/@types"]}, "include": ["*.ts", "*.cts"]}
	EOF
	tsc=$root/clients/ts/node_modules/.bin/tsc ;;
esac

# 2. The README's install steps, as written.
if [ "$lang" != c ]; then
	[ -f "$readme" ] || fail "$readme missing"
	nsh=$(blocks sh "$tmp/sh")
	[ "$nsh" -gt 0 ] || fail "$readme has no \`\`\`sh block (install steps)"
	for i in $(seq "$nsh"); do
		echo "== README sh block $i:"; cat "$tmp/sh/$i"
		bash -e "$tmp/sh/$i" >"$tmp/sh-$i.log" 2>&1 || fail "README sh block $i failed: $(tail -n 20 "$tmp/sh-$i.log")"
		case $lang in
		ts) # each route (folder, tarball) serves ESM and CommonJS, with types
			node --input-type=module -e 'import { Client } from "flakewire"; if (typeof Client !== "function") process.exit(1)' &&
			node --input-type=commonjs -e 'const { Client } = require("flakewire"); if (typeof Client !== "function") process.exit(1)' ||
				fail "after sh block $i: flakewire does not load as ESM and CommonJS" ;;
		python) .venv/bin/python -c 'import flakewire' || fail "after sh block $i: import flakewire fails in .venv" ;;
		esac
	done
	echo "consumer $lang: README install steps done in $(elapsed) s"
	if [ "$lang" = java ]; then
		# The consumer project's pom.xml is the README's ```xml block.
		[ "$(blocks xml "$tmp/xml")" -eq 1 ] || fail "$readme: want one \`\`\`xml block (the consumer pom.xml)"
		cp "$tmp/xml/1" pom.xml
	fi
fi

# run_one KIND FILE: compiles and runs one program of this language.
run_one()
{
	local kind=$1 file=$2 name cls
	case $lang in
	go) name=$kind; mkdir -p "cmd/$name"; cp "$file" "cmd/$name/main.go"
		go vet "./cmd/$name" && go run "./cmd/$name" ;;
	python) .venv/bin/python "$file" ;;
	ts) name=$kind; cp "$file" "$name.${3:-ts}"
		"$tsc" -p . && node "out/$name.${4:-js}" ;;
	java) cls=$(sed -n 's/^public class \([A-Za-z0-9_]*\).*/\1/p' "$file" | head -n 1)
		[ -n "$cls" ] || { echo "no public class in $file" >&2; return 1; }
		mkdir -p src/main/java; cp "$file" "src/main/java/$cls.java"
		mvn -q -s "$tmp/flakewire/clients/java/debian-settings.xml" package >"$tmp/mvn.log" 2>&1 ||
			{ cat "$tmp/mvn.log" >&2; return 1; }
		java -cp "target/classes:$(ls "$tmp"/m2/dev/flakewire/flakewire-client/*/flakewire-client-*.jar)" "$cls" ;;
	rust) name=$kind; mkdir -p src/bin; cp "$file" "src/bin/$name.rs"
		cargo build --offline -q --bin "$name" && "target/debug/$name" ;;
	c) "$consumer_c" ;;
	esac
}

# 3. Every snippet of the README, extracted from the Markdown.
if [ "$lang" != c ]; then
	fence=$lang
	[ "$lang" = python ] && fence=python
	n=$(blocks "$fence" "$tmp/snip")
	[ "$n" -gt 0 ] || fail "$readme has no \`\`\`$fence block"
	for i in $(seq "$n"); do
		echo "== README $fence block $i"
		run_one "snippet$i" "$tmp/snip/$i" >"$tmp/snippet-$i.log" 2>&1 ||
			fail "README $fence block $i failed: $(tail -n 30 "$tmp/snippet-$i.log")"
		sed 's/^/   /' "$tmp/snippet-$i.log"
	done
	if [ "$lang" = ts ]; then
		# The same package from CommonJS, with its types.
		run_one cjs "$here/consumer/cjs.cts" cts cjs >"$tmp/cjs.log" 2>&1 ||
			fail "CommonJS consumer failed: $(tail -n 30 "$tmp/cjs.log")"
	fi
	echo "consumer $lang: $n README snippets ran, $(elapsed) s so far"
fi

# 4. The consumer program: IDs, kill -9 of A, failover figures, close().
prog=
case $lang in
go) prog=$here/consumer/main.go ;;
python) prog=$here/consumer/consumer.py ;;
ts) prog=$here/consumer/consumer.ts ;;
java) prog=$here/consumer/Consumer.java ;;
rust) prog=$here/consumer/consumer.rs ;;
esac
run_one consumer "$prog" >"$tmp/consumer.log" 2>&1
rc=$?
cat "$tmp/consumer.log"
[ $rc -eq 0 ] || fail "consumer program failed (exit $rc)"
grep -q '^OK ' "$tmp/consumer.log" || fail "consumer program did not print its OK line"
kill -0 "$FW_A_PID" 2>/dev/null && fail "responder A (pid $FW_A_PID) is still running: the program did not kill it"
echo "consumer $lang: passed in $(elapsed) s"
exit 0
