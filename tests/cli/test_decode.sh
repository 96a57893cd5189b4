#!/usr/bin/env bash
# flakectl decode and layout against IDs encoded by hand.
# usage: test_decode.sh PATH/TO/flakectl
set -u
fc=${1:?usage: test_decode.sh FLAKECTL}
. "$(dirname "$0")/lib.sh"

default_epoch=1767225600000
twitter_epoch=1288834974657

# decode_fields ARGS...: "id time unix_ms datacenter worker sequence" of the first line
decode_fields()
{
	run "$@"
	local id time unix dc worker seq
	read -r id time _ unix _ dc _ worker _ seq <<<"$out"
	fields="$id $time $unix $dc $worker $seq"
}

# Default layout 41/0/10/12: ms 1000, worker 5, sequence 7.
id=$(((1000 << 22) | (5 << 12) | 7))
expect_eq "hand-encoded default ID" "$id" 4194324487
decode_fields decode "$id"
expect_eq "decode default layout" "$fields" \
	"$id $(iso_ms $((default_epoch + 1000))) $((default_epoch + 1000)) 0 5 7"
expect_eq "decode default time is 2026-01-01T00:00:01.000Z" "$(cut -d' ' -f2 <<<"$fields")" \
	2026-01-01T00:00:01.000Z

# The smallest and largest IDs.
decode_fields decode 0
expect_eq "decode 0 is the epoch" "$fields" "0 $(iso_ms $default_epoch) $default_epoch 0 0 0"
max=$(((1 << 63) - 1))
end=$((default_epoch + (1 << 41) - 1))
decode_fields decode "$max"
expect_eq "decode 2^63-1" "$fields" "$max $(iso_ms $end) $end 0 1023 4095"

# A Twitter ID from 2019-12-31: 41/5/5/12 above Twitter's epoch.
tid=1212161184839843840
tms=$(((tid >> 22) + twitter_epoch))
twant="$tid $(iso_ms $tms) $tms $(((tid >> 17) & 31)) $(((tid >> 12) & 31)) $((tid & 4095))"
decode_fields decode --twitter "$tid"
expect_eq "decode --twitter" "$fields" "$twant"
expect_match "twitter ID is from 2019-12-31" "$fields" " 2019-12-31T23:5[0-9]:"
decode_fields decode --epoch "$twitter_epoch" --datacenter-bits 5 --worker-bits=5 \
	--sequence-bits 12 "$tid"
expect_eq "explicit flags equal --twitter" "$fields" "$twant"
decode_fields decode --worker-bits 10 --discord --datacenter-bits 0 "$tid"
expect_eq "explicit flags override a preset in any order" "$(cut -d' ' -f4-5 <<<"$fields")" \
	"0 $(((tid >> 12) & 1023))"

# Discord's documented example: 2016-04-30T11:18:25.796Z, worker 1, process 0,
# increment 7 (their worker/process are our datacenter/worker).
decode_fields decode --discord 175928847299117063
expect_eq "decode --discord" "$fields" \
	"175928847299117063 2016-04-30T11:18:25.796Z 1462015105796 1 0 7"

# Several IDs, one aligned line each; stdin gives the same output.
run decode "$id" "$tid" 0
args_out=$out
expect_eq "one line per ID" "$(wc -l <<<"$args_out")" 3
for col in unix_ms datacenter worker sequence; do
	expect_eq "column $col is aligned" \
		"$(awk -v c=" $col " '{ print index($0, c) }' <<<"$args_out" | sort -u | wc -l)" 1
done
run_in "$id"$'\n'"$tid"$'\n'"0"$'\n' decode
expect_eq "IDs from stdin" "$out" "$args_out"
run_in " $id "$'\r\n' decode
expect_eq "stdin line with spaces and CRLF" "$(cut -c1-10 <<<"$out")" "$id"

# --json: one object per line, id as a string (JS loses 64-bit integers).
run decode --json "$id"
expect_eq "decode --json" "$out" \
	"{\"id\":\"$id\",\"time\":\"2026-01-01T00:00:01.000Z\",\"unix_ms\":$((default_epoch + 1000)),\"datacenter\":0,\"worker\":5,\"sequence\":7}"
for k in id time unix_ms datacenter worker sequence; do
	expect_match "decode --json has key $k" "$out" "\"$k\":"
done
if command -v python3 >/dev/null; then
	run decode --json --twitter "$tid" "$id"
	got=$(python3 -c 'import json, sys
objs = [json.loads(l) for l in sys.stdin]
o = objs[0]
print(len(objs), o["id"], o["time"], o["unix_ms"], o["datacenter"], o["worker"], o["sequence"])' \
		<<<"$out")
	expect_eq "decode --json parses as JSON" "$got" "2 $twant"
fi

# Bad input: exit 2, one line on stderr naming the argument.
expect_usage "reject non-number" "argument 'abc'" decode abc
expect_usage "reject negative" "argument '-5'" decode -- -5
expect_usage "reject negative without --" "argument '-5'" decode -5
expect_usage "reject empty argument" "argument ''" decode ''
expect_usage "reject above 2^64-1" "argument '18446744073709551616'" decode 18446744073709551616
expect_usage "reject sign bit" "argument '9223372036854775808'" decode 9223372036854775808
expect_usage "reject 2^64-1" "argument '18446744073709551615'" decode 18446744073709551615
expect_usage "reject leading +" "argument '+5'" decode +5
expect_usage "all or nothing" "argument 'x1'" decode 1 x1
expect_usage "reject --worker-bits 30" "--worker-bits 30" decode --worker-bits 30 1
expect_usage "--worker-bits names the range" "allowed 0-16" decode --worker-bits 30 1
expect_usage "reject --sequence-bits 0" "--sequence-bits 0" decode --sequence-bits 0 1
expect_usage "reject --datacenter-bits 11" "--datacenter-bits 11" decode --datacenter-bits 11 1
expect_usage "reject too few time bits" "timestamp bits" \
	decode --datacenter-bits 10 --worker-bits 16 --sequence-bits 22 1
expect_usage "reject non-numeric width" "--worker-bits ten" decode --worker-bits ten 1
expect_usage "reject missing value" "--epoch" decode 1 --epoch
expect_usage "reject epoch in the future" "--epoch 99999999999999" decode --epoch 99999999999999 1
expect_usage "reject two presets" "--discord" decode --twitter --discord 1
expect_usage "reject unknown option" "--bogus" decode --bogus 1
run_in $'1\nabc\n' decode
expect_eq "bad stdin line: first ID still printed" "$(cut -d' ' -f1 <<<"$out")" 1
out=
expect_usage_result "bad stdin line" "line 2 'abc'" "decode <<< 1 abc"
run_in $'\n' decode
expect_usage_result "empty stdin line" "line 1" "decode <<< ''"
run decode
expect_usage_result "no IDs at all" "no IDs" "decode </dev/null"

# layout: capacity and lifetime.
layout_value() { awk -v k="$1" '$1 == k { print $2 }' <<<"$out"; }
expect_ok "layout" layout
expect_eq "layout: 4096 IDs per ms per worker" "$(layout_value IDs/ms/worker)" 4096
expect_eq "layout: IDs per s per worker" "$(layout_value IDs/s/worker)" 4096000
expect_eq "layout: workers" "$(layout_value workers)" 1024
expect_eq "layout: datacenters" "$(layout_value datacenters)" 1
expect_eq "layout: epoch" "$(layout_value epoch)" "$(iso_ms $default_epoch)"
expect_eq "layout: end" "$(layout_value end)" "$(iso_ms $end)"
expect_eq "layout: years" "$(layout_value life)" 69.7
expect_ok "layout --twitter" layout --twitter
expect_eq "layout --twitter: 32 datacenters" "$(layout_value datacenters)" 32
expect_eq "layout --twitter: 32 workers" "$(layout_value workers)" 32
expect_ok "layout with 22 sequence bits" layout --worker-bits 0 --sequence-bits 22
expect_eq "layout: 2^22 IDs per ms" "$(layout_value IDs/ms/worker)" $((1 << 22))
run layout --json
expect_match "layout --json" "$out" '^\{.*"ids_per_ms":4096,.*"workers":1024,.*\}$'
expect_usage "layout rejects --worker-bits 30" "--worker-bits 30" layout --worker-bits 30
expect_usage "layout rejects an argument" "'1'" layout 1

# UUIDs (issue 12). RFC 9562 appendix A.6: a UUIDv7 of 2022-02-22T19:22:22.000Z.
run decode 017F22E2-79B0-7CC3-98C4-DC0C0C07398F
expect_match "decode the RFC 9562 UUIDv7 vector" "$out" \
	'^017f22e2-79b0-7cc3-98c4-dc0c0c07398f  version 7  variant rfc9562  2022-02-22T19:22:22.000Z  unix_ms 1645557742000  note: not made by flakewire'
# PROTOCOL.md's worked example: worker 7, counter 5, 1000 ms after the epoch.
run decode 019b76da-abe8-7005-807f-7abcdef01234
expect_eq "decode a flakewire UUIDv7" "$out" \
	"019b76da-abe8-7005-807f-7abcdef01234  version 7  variant rfc9562  2026-01-01T00:00:01.000Z  unix_ms 1767225601000  datacenter 0  worker 7  counter 5  random_bits 44"
run decode --json 019b76da-abe8-7005-807f-7abcdef01234
expect_match "decode --json a UUIDv7" "$out" '"flakewire":true,"datacenter":0,"worker":7,"counter":5,"random_bits":44}$'
# The same UUID read with another layout has no tag where that layout puts it.
run decode --worker-bits 8 019b76da-abe8-7005-807f-7abcdef01234
expect_match "decode a UUIDv7 with the wrong layout" "$out" 'note: not made by flakewire in layout 43/0/8/12'
run decode 919108f7-52d1-4320-9bac-f847db4148a8
expect_match "decode a UUIDv4" "$out" 'version 4  variant rfc9562  note: not a UUIDv7'
printf '%s\n' 4194324487 019b76da-abe8-7005-807f-7abcdef01234 | "$fc" decode >/dev/null
expect_eq "decode IDs and UUIDs from stdin" "$?" 0
expect_usage "reject a 35-character UUID" "is 36 characters" decode 017f22e2-79b0-7cc3-98c4-dc0c0c07398
expect_usage "reject a UUID without its hyphen" "character 9 is '0', expected '-'" \
	decode 017f22e2079b0-7cc3-98c4-dc0c0c07398f
expect_usage "reject a UUID with a non-hex digit" "character 36 is 'g', not a hex digit" \
	decode 017f22e2-79b0-7cc3-98c4-dc0c0c07398g

finish
