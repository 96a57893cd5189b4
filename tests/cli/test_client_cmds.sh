#!/usr/bin/env bash
# flakectl get, info, bench and mark against a live flakesock on loopback.
# usage: test_client_cmds.sh PATH/TO/flakectl PATH/TO/flakesock
set -u
fc=${1:?usage: test_client_cmds.sh FLAKECTL FLAKESOCK}
fsock=${2:?usage: test_client_cmds.sh FLAKECTL FLAKESOCK}
. "$(dirname "$0")/lib.sh"

default_epoch=1767225600000
pids=()

cleanup()
{
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# crun ARGS...: runs flakectl bounded in time; sets out, err, rc
crun()
{
	out=$(timeout 30 "$fc" "$@" </dev/null 2>"$tmp/err")
	rc=$?
	err=$(cat "$tmp/err")
}

# expect_run NAME ARGS...: exit 0 and nothing on stderr
expect_run()
{
	local name=$1
	shift
	crun "$@"
	if [ "$rc" -eq 0 ] && [ -z "$err" ]; then
		pass "$name"
	else
		fail "$name" "flakectl $*" "rc=$rc stderr: $err"
	fi
}

port_busy() { ss -Hunl "sport = :$1" 2>/dev/null | grep -q .; }

# A UDP port nothing listens on, from the dynamic range.
free_port()
{
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		if ! port_busy "$p"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# start_responder NAME WORKERS: starts flakesock on a free loopback port with
# its own state file $tmp/NAME.mark, a few tries (another test may take the
# port between the check and the bind); sets port and pid.
start_responder()
{
	local name=$1 workers=$2 log="$tmp/$1.log" locks=${LOCKS:-$tmp/locks}
	for _ in 1 2 3 4 5; do
		port=$(free_port) || break
		: >"$log"
		# timeout(1) ends it even if this script is killed without its trap.
		timeout 110 "$fsock" --listen 127.0.0.1 --threads $(($(tr -cd , <<<"$workers" | wc -c) + 1)) \
			--set "id.workers=$workers" --set "state.file=$tmp/$name.mark" \
			--set "state.lock_dir=$locks" ${SEQ_BITS:+--set "id.sequence_bits=$SEQ_BITS"} \
			--set "net.udp_port=$port" --set stats.interval_s=0 >"$log" 2>&1 &
		pid=$!
		pids+=("$pid")
		for _ in $(seq 50); do
			grep -q "listening on" "$log" && return 0
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	fail "flakesock $name starts" "$(cat "$log" 2>/dev/null)"
	return 1
}

start_responder main 1,2 || finish
sock_pid=$pid
pass "flakesock starts on 127.0.0.1:$port"
srv=(--server "127.0.0.1:$port")

for c in get info bench mark; do
	expect_run "$c --help" "$c" --help
	expect_match "$c --help: usage line" "$out" "^usage: flakectl $c"
done

# worker_of ID / time_of ID: fields of the default layout 41/0/10/12, by hand
worker_of() { echo $((($1 >> 12) & 1023)); }
ms_of() { echo $((($1 >> 22) + default_epoch)); }
now_ms=$(($(date +%s%N) / 1000000))

# get: one ID, decimal, from one of the two workers, minted about now.
expect_run "get" get "${srv[@]}"
expect_match "get prints one decimal ID" "$out" '^[1-9][0-9]{0,18}$'
expect_eq "get prints one line" "$(printf '%s\n' "$out" | wc -l)" 1
if [[ $out =~ ^[0-9]+$ ]]; then
	w=$(worker_of "$out")
	expect_eq "get ID is from worker 1 or 2" "$((w == 1 || w == 2))" 1
	age=$((now_ms - $(ms_of "$out")))
	expect_eq "get ID time within 60 s of now (off by ${age} ms)" \
		"$((age > -60000 && age < 60000))" 1
fi

# get -n 500: 500 unique IDs, strictly increasing per worker in order.
expect_run "get -n 500" get "${srv[@]}" -n 500
expect_eq "get -n 500 prints 500 lines" "$(printf '%s\n' "$out" | wc -l)" 500
expect_eq "get -n 500 IDs are unique" "$(printf '%s\n' "$out" | sort -u | wc -l)" 500
declare -A last=()
bad=0
while read -r id; do
	w=$(worker_of "$id")
	[ -n "${last[$w]:-}" ] && [ "$id" -le "${last[$w]}" ] && bad=$((bad + 1))
	last[$w]=$id
done <<<"$out"
expect_eq "get -n 500 IDs increase per worker" "$bad" 0

# get --range -n 10000: every ID of the ranges, exactly 10000, unique.
expect_run "get --range -n 10000" get "${srv[@]}" --range -n 10000
expect_eq "get --range -n 10000 prints 10000 lines" "$(printf '%s\n' "$out" | wc -l)" 10000
expect_eq "get --range -n 10000 IDs are unique" "$(printf '%s\n' "$out" | sort -u | wc -l)" 10000

# --json: the keys, id as a string, fields matching the ID decoded by hand.
expect_run "get --json -n 3" get "${srv[@]}" --json -n 3
expect_eq "get --json prints 3 objects" "$(printf '%s\n' "$out" | wc -l)" 3
re='^\{"id":"([0-9]+)","worker":([0-9]+),"datacenter":([0-9]+),"time":"(20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z)"\}$'
line=$(printf '%s\n' "$out" | head -1)
if [[ $line =~ $re ]]; then
	pass "get --json keys id (string), worker, datacenter, time"
	id=${BASH_REMATCH[1]}
	expect_eq "get --json worker and datacenter match the ID" \
		"${BASH_REMATCH[2]} ${BASH_REMATCH[3]}" "$(worker_of "$id") 0"
	expect_eq "get --json time matches the ID" "${BASH_REMATCH[4]}" "$(iso_ms "$(ms_of "$id")")"
else
	fail "get --json keys id (string), worker, datacenter, time" "line: $line"
fi
expect_run "get --range --json -n 5000" get "${srv[@]}" --range --json -n 5000
total=0
while read -r l; do
	[[ $l =~ \"n\":([0-9]+) ]] && total=$((total + BASH_REMATCH[1]))
done <<<"$out"
expect_eq "get --range --json ranges add up to 5000 IDs" "$total" 5000
expect_match "get --range --json names first and last" "$out" \
	'^\{"first":"[0-9]+","last":"[0-9]+","n":[0-9]+,"worker":[12],"datacenter":0,'

# --csv (scripts/bench/keys.sh reads it): id,unix_ms,datacenter,worker,sequence
# per ID; with --range first,n,unix_ms,datacenter,worker per range.
expect_run "get --csv -n 2" get "${srv[@]}" --csv -n 2
line=$(printf '%s\n' "$out" | head -1)
id=${line%%,*}
expect_eq "get --csv fields match the ID decoded by hand" "$line" \
	"$id,$(ms_of "$id"),0,$(worker_of "$id"),$((id & 4095))"
expect_run "get --range --csv -n 5000" get "${srv[@]}" --range --csv -n 5000
total=0
while IFS=, read -r first n ms dc w; do
	[ "$ms" = "$(ms_of "$first")" ] && [ "$w" = "$(worker_of "$first")" ] && total=$((total + n))
done <<<"$out"
expect_eq "get --range --csv ranges add up to 5000 IDs, each decoding to its ms and worker" \
	"$total" 5000
crun get "${srv[@]}" --csv --json
expect_eq "get --csv --json is a usage error (2)" "$rc" 2

# info: the worker that answered, the layout and epoch flakesock was given.
expect_run "info" info "${srv[@]}"
expect_match "info names the worker" "$out" '^answered by +datacenter 0, worker [12]$'
expect_match "info shows the layout" "$out" '^layout +41/0/10/12 '
expect_match "info shows the epoch" "$out" "^epoch +2026-01-01T00:00:00.000Z \\(unix ms $default_epoch\\)"
expect_match "info shows protocol versions" "$out" '^protocol +versions 1-1$'
expect_match "info shows clock flags in words" "$out" \
	'^clock flags +(none|((borrowed|backstep|unsafe|slewing)(, )?)+)$'
expect_run "info --json" info "${srv[@]}" --json
expect_match "info --json" "$out" \
	'^\{"server":"127.0.0.1:[0-9]+","datacenter":0,"worker":[12],.*"layout":\{"time_bits":41,'

# bench: bounded by --duration, every ID unique, written to --out.
start=$(date +%s%N)
expect_run "bench --duration 2 --concurrency 2 --out" bench "${srv[@]}" --duration 2 \
	--concurrency 2 --out "$tmp/ids"
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "bench --duration 2 ends within 6 s (took ${took} ms)" "$((took < 6000))" 1
expect_match "bench reports no duplicates" "$out" '^unique +[1-9][0-9]* IDs, 0 duplicate'
expect_match "bench reports no order violations" "$out" '^order +0 violation'
expect_match "bench reports latency percentiles" "$out" \
	'^latency \(us\) +p50 [0-9.]+ +p90 [0-9.]+ +p99 [0-9.]+ +p99.9 [0-9.]+ +max [0-9.]+$'
lines=$(wc -l <"$tmp/ids")
expect_eq "bench --out IDs are unique" "$(sort -u "$tmp/ids" | wc -l)" "$lines"
[[ $out =~ unique\ +([0-9]+)\ IDs ]] && expect_eq "bench --out holds every ID" "$lines" \
	"${BASH_REMATCH[1]}"
# IDs from this bench and from get must not collide either.
crun get "${srv[@]}" --range -n 1000
expect_eq "get after bench: no ID seen twice" \
	"$( (cat "$tmp/ids"; printf '%s\n' "$out") | sort | uniq -d | wc -l)" 0
expect_run "bench --requests 300 --range --json" bench "${srv[@]}" --requests 300 \
	--range --count 1000 --concurrency 3 --json
expect_match "bench --requests bounds the run" "$out" '"sent":300,'
expect_match "bench --json no duplicates" "$out" '"duplicates":0,"order_violations":0\}$'
# LIST replies (--count 2-...): checked by fw_idcheck_add_list, as flakeload checks them
expect_run "bench --requests 200 --count 50 --json" bench "${srv[@]}" --requests 200 \
	--count 50 --concurrency 2 --json
expect_match "bench LIST: every reply's IDs" "$out" '"ids":10000,'
expect_match "bench LIST: no duplicates" "$out" '"duplicates":0,"order_violations":0\}$'
# --rate caps the requests a second in all: 2 s at 100 a second from 2
# threads is at most 202 requests (a send slot every 20 ms per thread; a
# thread's first send at once), however fast the replies come
expect_run "bench --rate 100 --duration 2 --concurrency 2 --json" bench "${srv[@]}" \
	--rate 100 --duration 2 --concurrency 2 --json
[[ $out =~ \"sent\":([0-9]+), ]] && sent=${BASH_REMATCH[1]} || sent=-1
expect_eq "bench --rate 100 for 2 s: 1-202 requests (sent $sent)" "$((sent >= 1 && sent <= 202))" 1
expect_match "bench --rate: no duplicates" "$out" '"duplicates":0,"order_violations":0\}$'

# Nothing listening: exit 1, one clear line naming what the responder did
# (refused: asked again every 10 ms until the deadline, issue 49), in time.
dead=$(free_port)
start=$(date +%s%N)
crun get --server "127.0.0.1:$dead" --timeout 300
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "get without a responder exits 1" "$rc" 1
expect_eq "get without a responder: one line on stderr" "$(printf '%s\n' "$err" | wc -l)" 1
expect_match "get without a responder says so" "$err" \
	"^flakectl get: no usable reply within 300 ms: 127.0.0.1:$dead: refused$"
expect_eq "get without a responder gives up in time (took ${took} ms)" "$((took < 2000))" 1
crun bench --server "127.0.0.1:$dead" --timeout 100 --duration 1
expect_eq "bench without a responder exits 1" "$rc" 1
crun get -n 0 "${srv[@]}"
expect_eq "get -n 0: exit 2" "$rc" 2
expect_match "get -n 0: names the argument" "$err" "^flakectl get: -n 0: out of range"

# mark: the live responder's state file, then a scratch one.
crun mark "$tmp/main.mark"
expect_eq "mark reads the responder's state file" "$rc" 0
if [[ $out =~ unix_ms\ ([0-9]+)\ +([^ ]+)\ +\(epoch_ms\ $default_epoch\ datacenter_bits\ 0\ worker_bits\ 10\ sequence_bits\ 12\ datacenter\ 0\)$ ]]; then
	expect_eq "mark prints unix ms and ISO time" "${BASH_REMATCH[2]}" \
		"$(iso_ms "${BASH_REMATCH[1]}")"
	expect_eq "mark is not behind the IDs issued" \
		"$((BASH_REMATCH[1] >= $(ms_of "$(sort -n "$tmp/ids" | tail -1)")))" 1
else
	fail "mark prints unix ms and ISO time" "stdout: $out" "stderr: $err"
fi
m="$tmp/scratch-mark"
crun mark "$m"
expect_eq "mark of a missing file: exit 1" "$rc" 1
# issue 48: a missing or corrupt mark is written over only with --force
crun mark "$m" --set "$((default_epoch + 5000))"
expect_eq "mark --set over a missing file without --force: exit 2" "$rc" 2
expect_match "mark --set over a missing file: says why and advises" "$err" \
	"^flakectl mark: --set $((default_epoch + 5000)): $m is missing: the IDs issued under it are unknown.* or else at least [0-9]+ .*with --force$"
[ ! -e "$m" ] || fail "mark --set without --force wrote the missing file"
expect_run "mark --set --force" mark "$m" --set "$((default_epoch + 5000))" --force
crun mark "$m"
expect_match "mark reads back what --set wrote, in the default layout" "$out" \
	"unix_ms $((default_epoch + 5000))  2026-01-01T00:00:05.000Z  \\(epoch_ms $default_epoch datacenter_bits 0 worker_bits 10 sequence_bits 12 datacenter 0\\)$"
crun mark "$m" --set "$default_epoch"
expect_eq "mark --set refuses to lower a mark" "$rc" 2
expect_match "mark --set lowering: names the argument" "$err" "^flakectl mark: --set $default_epoch: below"
crun mark "$m"
expect_match "refused --set left the mark alone" "$out" "unix_ms $((default_epoch + 5000)) "
expect_run "mark --set --force lowers it" mark "$m" --set "$default_epoch" --force
printf 'flakewire-mark 1\nunix_ms 12\ncheck 0000000000000000\n' >"$m"
crun mark "$m"
expect_eq "mark of a corrupt file: exit 1" "$rc" 1
expect_match "mark of a corrupt file says so" "$err" "corrupt"
crun mark "$m" --set "$default_epoch"
expect_eq "mark --set over a corrupt file without --force: exit 2" "$rc" 2
expect_match "mark --set over a corrupt file: says so" "$err" "is corrupt: the IDs issued under it are unknown"
expect_run "mark --set --force over a corrupt file" mark "$m" --set "$default_epoch" --force
crun mark "$m"
expect_match "mark after recovery" "$out" "unix_ms $default_epoch "
# --convert: the epoch 5 s later waits 5 s more; a narrower sequence 16 ms per old ms
expect_run "mark --set a mark to convert" mark "$m" --set "$((default_epoch + 1000))"
crun mark "$m" --set "$((default_epoch + 2000))" --set id.epoch_ms=$((default_epoch + 5000))
expect_eq "mark --set in another layout than the mark's: exit 2" "$rc" 2
expect_match "mark --set in another layout: points at --convert" "$err" "--convert rewrites"
crun mark "$m" --convert
expect_eq "mark --convert without a layout: exit 2" "$rc" 2
expect_run "mark --convert to an epoch 5 s later" mark "$m" --convert \
	--set id.epoch_ms=$((default_epoch + 5000))
crun mark "$m"
expect_match "the converted mark waits 5 s more, in the new layout" "$out" \
	"unix_ms $((default_epoch + 6000)) .*\\(epoch_ms $((default_epoch + 5000)) datacenter_bits 0 worker_bits 10 sequence_bits 12 datacenter 0\\)$"
printf '[id]\nepoch_ms = %s\nsequence_bits = 8\n' "$((default_epoch + 5000))" >"$tmp/seq8.conf"
expect_run "mark --convert --config" mark "$m" --convert --config "$tmp/seq8.conf"
crun mark "$m"
expect_match "a sequence 4 bits narrower: 16 ms per old ms" "$out" \
	"unix_ms $((default_epoch + 5000 + 1001 * 16 - 1)) .*sequence_bits 8 datacenter 0\\)$"
crun mark "$m" --convert --config "$tmp/seq8.conf"
expect_match "mark --convert to the same layout changes nothing" "$out" "unchanged$"

if ! kill -0 "$sock_pid" 2>/dev/null; then
	fail "flakesock still running at the end" "$(cat "$tmp/main.log")"
fi

# bench must catch duplicates: two responders misconfigured with the same
# worker ID mint the same IDs in the same milliseconds. On one host the
# worker lock refuses the second (issue 32, test_state_lock.sh): dupA and dupB
# play two other hosts (a lock directory each) with the same static worker ID.
# One sequence bit: each millisecond's sequence starts where the last one
# stopped (issue 36), so with 12 bits two responders fed alike can march in
# step a fixed distance apart and never collide (this check then found no
# duplicate under load); with 2 IDs a millisecond both issue both.
if SEQ_BITS=1 LOCKS=$tmp/locks-host-a start_responder dupA 1 && portA=$port &&
	SEQ_BITS=1 LOCKS=$tmp/locks-host-b start_responder dupB 1; then
	crun bench --server "127.0.0.1:$portA" --server "127.0.0.1:$port" --concurrency 2 \
		--duration 1
	expect_eq "bench over two responders with one worker ID exits 1" "$rc" 1
	expect_match "bench reports the duplicates" "$err" \
		'^flakectl bench: [1-9][0-9]* duplicate ID\(s\)'
	expect_match "bench output counts the duplicates" "$out" '^unique .* [1-9][0-9]* duplicate'
fi
finish
