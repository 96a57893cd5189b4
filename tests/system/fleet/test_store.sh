#!/usr/bin/env bash
# The registry interface's rules against each real store: a 3-server
# ZooKeeper ensemble and a 3-member etcd cluster started here on loopback,
# the same checks for both (test_store.c), the last one with the leader
# killed mid-test; then etcd over TLS with client certificates and with
# etcd's users, as shops run it.
# usage: test_store.sh TEST_STORE_BINARY
set -u
BIN=$1
# in a namespace of its own: the servers' loopback ports are this test's
. "$(dirname "$0")/../lib.sh"
sys_own_ns store "$0" "$@"
TMP=$(mktemp -d /tmp/fwt-store.XXXXXX)
D=$(dirname "$0")
. "$D/../../../scripts/lib/servers.sh"
trap 'zk_stop_all; etcd_stop_all; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
fail=0

mkdir -p "$TMP/zk" "$TMP/etcd"
zk_start "$TMP/zk" 3 || { echo "FAIL: the ZooKeeper ensemble did not start"; tail -n 5 "$TMP"/zk/zk*/server.log; exit 1; }
l=$(zk_leader)
[ -n "$l" ] || { echo "FAIL: the ZooKeeper ensemble has no leader"; exit 1; }
echo "== ZooKeeper ($ZK_CONNECT), leader server $l killed in the last test"
FW_STORE=zookeeper FW_STORE_CONNECT=$ZK_CONNECT FW_STORE_KILL_CMD="kill -KILL ${ZK_PID[$l]}" \
	FW_STORE_WIPE_CMD="/usr/share/zookeeper/bin/zkCli.sh -server $ZK_CONNECT deleteall" "$BIN" || fail=1
zk_stop_all

etcd_start "$TMP/etcd" 3 || { echo "FAIL: the etcd cluster did not start"; tail -5 "$TMP"/etcd/etcd*/server.log; exit 1; }
l=$(etcd_leader)
echo "== etcd ($ETCD_ENDPOINTS), leader member $l killed in the last test"
FW_STORE=etcd FW_STORE_CONNECT=$ETCD_ENDPOINTS FW_STORE_KILL_CMD="kill -KILL ${ETCD_PID[$l]}" \
	FW_STORE_WIPE_CMD="env ETCDCTL_API=3 etcdctl --endpoints $ETCD_ENDPOINTS del --prefix" "$BIN" || fail=1
etcd_stop_all

# etcd as shops run it: TLS with client certificates, then users and passwords.
# A CA, a server certificate for 127.0.0.1 and a client certificate, made here.
P="$TMP/pki"
mkdir -p "$P"
(
	cd "$P" || exit 1
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=fwtest-ca -keyout ca.key -out ca.pem
	openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr
	# etcd's JSON gateway dials etcd itself with the server's certificate: with
	# --client-cert-auth that certificate must allow clientAuth too
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >server.ext
	openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.pem
	openssl req -newkey rsa:2048 -nodes -subj /CN=flakewire -keyout client.key -out client.csr
	printf 'extendedKeyUsage=clientAuth\n' >client.ext
	openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out client.pem
) >"$TMP/pki.log" 2>&1 || { echo "FAIL: openssl could not make the test certificates"; cat "$TMP/pki.log"; exit 1; }
ETCD_TLS_DIR=$P etcd_start "$TMP/etcd-tls" 1 ||
	{ echo "FAIL: etcd with TLS did not start"; tail -5 "$TMP"/etcd-tls/etcd*/server.log; exit 1; }
E=$ETCD_ENDPOINTS
echo "== etcd over TLS with a client certificate ($E)"
FW_STORE=etcd FW_STORE_CONNECT=$E FW_STORE_CA=$P/ca.pem FW_STORE_CERT=$P/client.pem \
	FW_STORE_KEY=$P/client.key "$BIN" || fail=1
echo "== the same without the client certificate: refused"
if FW_STORE=etcd FW_STORE_CONNECT=$E FW_STORE_CA=$P/ca.pem "$BIN" >"$TMP/nocert.log" 2>&1; then
	echo "FAIL: an etcd that wants a client certificate answered without one"
	fail=1
else
	echo "ok   refused without a client certificate: $(grep -m1 'connect:' "$TMP/nocert.log")"
fi
etcd_stop_all

# users: etcd's auth enabled, flakewire's user with a role on the fleet's keys
etcd_start "$TMP/etcd-auth" 1 || { echo "FAIL: etcd (auth) did not start"; exit 1; }
ctl() { ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ENDPOINTS" "$@" >>"$TMP/auth.log" 2>&1; }
ctl user add root:rootpw && ctl user add fw:fwpw && ctl role add fleet &&
	ctl role grant-permission fleet --prefix=true readwrite /fwtest-store &&
	ctl user grant-role fw fleet && ctl auth enable ||
	{ echo "FAIL: could not enable etcd's authentication"; cat "$TMP/auth.log"; exit 1; }
echo "== a password over plain http:// without the explicit override: refused before a byte is sent"
if FW_STORE=etcd FW_STORE_CONNECT=$ETCD_ENDPOINTS FW_STORE_USER=fw FW_STORE_PASSWORD=fwpw \
	"$BIN" >"$TMP/plain.log" 2>&1; then
	echo "FAIL: a password was sent over plain http://"
	fail=1
elif grep -q "is plain http://: etcd_user's password would cross the network in clear" "$TMP/plain.log" &&
	! grep -q fwpw "$TMP/plain.log"; then
	echo "ok   refused: $(grep -m1 -o 'http://[^ ]* is plain http://' "$TMP/plain.log")"
else
	echo "FAIL: refused without saying why (or echoing the password)"
	cat "$TMP/plain.log"
	fail=1
fi
echo "== etcd with authentication, user fw ($ETCD_ENDPOINTS, etcd_plain_password = yes: loopback)"
FW_STORE=etcd FW_STORE_CONNECT=$ETCD_ENDPOINTS FW_STORE_USER=fw FW_STORE_PASSWORD=fwpw FW_STORE_PLAIN=1 \
	"$BIN" || fail=1
echo "== a wrong password: refused"
if FW_STORE=etcd FW_STORE_CONNECT=$ETCD_ENDPOINTS FW_STORE_USER=fw FW_STORE_PASSWORD=nope FW_STORE_PLAIN=1 \
	"$BIN" >"$TMP/badpw.log" 2>&1; then
	echo "FAIL: etcd answered a wrong password"
	fail=1
else
	echo "ok   refused with a wrong password: $(grep -m1 'connect:' "$TMP/badpw.log")"
fi

etcd_stop_all

# JWT tokens (etcd --auth-token jwt, RS256 with a 4096-bit key: 784 bytes measured, beyond
# the 512 bytes the token had)
openssl genrsa -out "$TMP/jwt.key" 4096 >/dev/null 2>&1 &&
	openssl rsa -in "$TMP/jwt.key" -pubout -out "$TMP/jwt.pub" >/dev/null 2>&1 ||
	{ echo "FAIL: openssl could not make the JWT key pair"; exit 1; }
ETCD_ARGS="--auth-token jwt,pub-key=$TMP/jwt.pub,priv-key=$TMP/jwt.key,sign-method=RS256,ttl=10m" \
	etcd_start "$TMP/etcd-jwt" 1 || { echo "FAIL: etcd (jwt) did not start"; exit 1; }
: >"$TMP/auth.log"
ctl user add root:rootpw && ctl user add fw:fwpw && ctl role add fleet &&
	ctl role grant-permission fleet --prefix=true readwrite /fwtest-store &&
	ctl user grant-role fw fleet && ctl auth enable ||
	{ echo "FAIL: could not enable etcd's authentication (jwt)"; cat "$TMP/auth.log"; exit 1; }
echo "== etcd with JWT tokens, user fw ($ETCD_ENDPOINTS), and a proxy in the environment"
# the environment's proxy would see the credentials: the store uses none unless
# [fleet] etcd_proxy names one (curl itself goes through http_proxy for 127.0.0.1)
http_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
	FW_STORE=etcd FW_STORE_CONNECT=$ETCD_ENDPOINTS FW_STORE_USER=fw FW_STORE_PASSWORD=fwpw \
	FW_STORE_PLAIN=1 "$BIN" || fail=1

[ $fail -eq 0 ] && echo "PASS: both stores keep S1-S4 and liveness (etcd also over TLS, with users, with JWT tokens)" || echo "FAIL: a store broke a rule (above)"
exit $fail
