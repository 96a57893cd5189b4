#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The probes on the metrics listener (issue 35), on flakesock:
#   - /healthz 200 "ok" while it serves; /readyz 200 "ready: N of N workers
#     issuing" when every worker can issue now, 503 "not ready" naming each
#     worker that cannot and its state otherwise;
#   - each state that makes a node unready, provoked for real: waiting (the
#     mark set 20 s ahead of the clock before the start: RETRY_AFTER), no_lease
#     (a fleet whose registry does not answer and no cache: NO_LEASE); the
#     flakewire_worker_state gauge and flakewire_ready agree with /readyz;
#   - load does not make a node unready (/readyz polled while flakectl bench
#     floods it);
#   - [fleet] identity = env:POD_NAME: the fleet's record names the pod, and
#     an unset variable is refused naming it (ZooKeeper, 1 server, scripts/lib/servers.sh).
# usage: test_probes.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../../../scripts/lib/servers.sh"
sys_init probes
trap 'zk_stop_all; sys_cleanup' EXIT

ctl() { sys_in_ns "$FLAKECTL" "$@"; }
http() { # URL: prints "CODE BODY..." (the body on one line)
	sys_in_ns curl -s --noproxy '*' -m 3 -o "$SYS_TMP/body" -w '%{http_code}' "$1" >"$SYS_TMP/code"
	echo "$(cat "$SYS_TMP/code") $(tr '\n' '|' <"$SYS_TMP/body")"
}
sock() { # NAME METRICS_PORT UDP_PORT SETTINGS...: starts flakesock; sets SYS_LAST_PID
	local name=$1 mp=$2 up=$3
	shift 3
	sys_start "$SYS_TMP/$name.log" "$FLAKESOCK" --threads 2 --set "state.file=$SYS_TMP/$name/mark" \
		--set "state.lock_dir=$SYS_TMP/locks" --set "metrics.listen=127.0.0.1:$mp" \
		--set "net.udp_port=$up" --set stats.interval_s=0 "$@"
	sys_wait_for 10 grep -q "listening on" "$SYS_TMP/$name.log"
}

# issuing: a static node
check "a static node starts (metrics 9851)" sock ok 9851 4251 --set id.worker_base=10
check "/healthz: 200 ok" sys_wait_for 5 sh -c "[ \"\$(ip netns exec $SYS_NS curl -s -m 2 -o /dev/null -w '%{http_code}' http://127.0.0.1:9851/healthz)\" = 200 ]"
r=$(http http://127.0.0.1:9851/readyz)
echo "readyz: $r"
check "/readyz: 200 ready: 2 of 2 workers issuing" [ "$r" = "200 ready: 2 of 2 workers issuing|" ]
check "flakewire_ready 1 and both workers issuing" sh -c \
	"ip netns exec $SYS_NS curl -s -m 3 http://127.0.0.1:9851/metrics | grep -c -e '^flakewire_ready 1' -e 'state=\"issuing\"} 1' | grep -qx 3"
# load is not a state: poll /readyz while a bench floods the node
ctl bench --server 127.0.0.1:4251 --concurrency 4 --duration 2 >/dev/null 2>&1 &
BENCH=$!
codes=""
for _ in $(seq 15); do codes="$codes$(http http://127.0.0.1:9851/readyz | cut -c1-3) "; sleep 0.1; done
wait $BENCH
echo "readyz under load: $codes"
check "under a flood /readyz stays 200 (15 polls)" [ "$(grep -o 200 <<<"$codes" | wc -l)" -eq 15 ]

# waiting: the mark 20 s ahead of the clock (a restart after the clock stepped back)
mkdir -p "$SYS_TMP/wait"
"$FLAKECTL" mark "$SYS_TMP/wait/mark" --set "$(($(date +%s%3N) + 20000))" --force >/dev/null
check "a node behind its mark starts (start_policy wait)" sock wait 9852 4252 --set id.worker_base=20
r=$(http http://127.0.0.1:9852/readyz)
echo "readyz: $r"
check "/readyz: 503 not ready, each worker waiting" \
	[ "$r" = "503 not ready: 2 of 2 workers cannot issue now|thread=0 worker=20: waiting|thread=1 worker=21: waiting|" ]
check "/healthz still 200 (it serves: RETRY_AFTER)" sh -c "[ \"\$(ip netns exec $SYS_NS curl -s -m 2 -o /dev/null -w '%{http_code}' http://127.0.0.1:9852/healthz)\" = 200 ]"
check "the gauge says waiting" sh -c \
	"ip netns exec $SYS_NS curl -s -m 3 http://127.0.0.1:9852/metrics | grep -q 'thread=\"0\",worker=\"20\",state=\"waiting\"} 1'"
check "and flakewire_ready 0" sh -c \
	"ip netns exec $SYS_NS curl -s -m 3 http://127.0.0.1:9852/metrics | grep -qx 'flakewire_ready 0'"
ctl get --server 127.0.0.1:4252 --timeout 300 >"$SYS_TMP/get.wait" 2>&1
check "and the wire agrees: no ID (RETRY_AFTER)" [ $? -ne 0 ]

# no_lease: a fleet whose registry does not answer, no cache
check "a fleet node without its registry starts (NO_LEASE)" sock nolease 9853 4253 \
	--set fleet.zookeeper=127.0.0.1:1 --set fleet.start_wait_ms=0 --set fleet.cache_file= \
	--set fleet.identity=probe-x --set fleet.root=/fwt/nolease
r=$(http http://127.0.0.1:9853/readyz)
echo "readyz: $r"
check "/readyz: 503, each worker no_lease" \
	[ "$r" = "503 not ready: 2 of 2 workers cannot issue now|thread=0 worker=0: no_lease|thread=1 worker=0: no_lease|" ]
ctl get --server 127.0.0.1:4253 --timeout 300 >"$SYS_TMP/get.nolease" 2>&1
check "and the wire agrees: NO_LEASE" grep -q "answered 'no-lease'" "$SYS_TMP/get.nolease"

# identity = env:POD_NAME, against a real ZooKeeper
zk_start "$SYS_TMP/zk" 1 "ip netns exec $SYS_NS" || { echo "FAIL: ZooKeeper did not start"; exit 1; }
ctl fleet init --zk "$ZK_CONNECT" --root /fwt/probes >/dev/null || { echo "FAIL: fleet init"; exit 1; }
POD_NAME=pod-7 sys_start "$SYS_TMP/pod.log" env POD_NAME=pod-7 "$FLAKESOCK" --threads 1 \
	--set "state.file=$SYS_TMP/pod/mark" --set "metrics.listen=127.0.0.1:9854" \
	--set net.udp_port=4254 --set stats.interval_s=0 --set "fleet.zookeeper=$ZK_CONNECT" \
	--set fleet.root=/fwt/probes --set fleet.identity=env:POD_NAME \
	--set "fleet.cache_file=$SYS_TMP/pod/fleet"
check "a pod named by POD_NAME starts" sys_wait_for 15 grep -q "listening on" "$SYS_TMP/pod.log"
check "and is ready once its lease is confirmed" sys_wait_for 10 sh -c \
	"ip netns exec $SYS_NS curl -s -m 2 http://127.0.0.1:9854/readyz | grep -q '^ready: 1 of 1'"
ctl fleet ls --zk "$ZK_CONNECT" --root /fwt/probes >"$SYS_TMP/ls" 2>&1
cat "$SYS_TMP/ls"
check "the fleet's record names pod-7" grep -q " pod-7 " "$SYS_TMP/ls"
sys_in_ns env -u POD_NAME "$FLAKESOCK" --threads 1 --set "state.file=$SYS_TMP/unset/mark" \
	--set net.udp_port=4255 --set "fleet.zookeeper=$ZK_CONNECT" --set fleet.root=/fwt/probes \
	--set fleet.identity=env:POD_NAME >"$SYS_TMP/unset.log" 2>&1
rc=$?
cat "$SYS_TMP/unset.log"
check "POD_NAME unset: refused (exit 1), naming the variable" sh -c \
	"[ $rc -eq 1 ] && grep -q 'identity = env:POD_NAME: the environment variable POD_NAME is not set' '$SYS_TMP/unset.log'"
sys_done
