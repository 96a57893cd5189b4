#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The packages under a real systemd: a Debian 12 root from debootstrap
# (tests/ops/nspawn_root.sh, cached), booted with systemd-nspawn -b on a
# throwaway overlay, private network. Then what doc/deploying.md tells an
# operator, command for command:
#   - apt install ./flakewire_*.deb ./flakewire-tools_*.deb installs, nothing
#     starts by itself;
#   - flakesock.service: enable --now, IDs from flakectl get, /metrics through
#     flakectl status, systemctl restart and kill -9 of MainPID (restarted,
#     IDs increasing); the boot ID hidden from it (ProcSubset=pid) and passed
#     as FLAKEWIRE_BOOT_ID=%b, the real one;
#   - flakesock.service in a fleet (issue 50): etcd in the container, the root
#     made by flakectl fleet init, systemctl kill -s KILL: systemd restarts it
#     and it takes its own worker IDs back (the boot ID passed as %b proves
#     the restart is on the same state), none stranded;
#   - flakewire-afxdp.service on a veth moved into the container (bpffs
#     mounted): starts, attaches its XDP program, answers IDs from a client
#     namespace on the veth's peer, restarts after kill -9 with IDs
#     increasing, leaves no XDP program after systemctl stop;
#   - flakewire.service (vfio-pci, hugepages) where /sys is read-only: fails
#     with one journal line naming the hugepages, no traceback, no restart;
#   - systemd-analyze security of each running unit at or below the figure
#     doc/deploying.md gives;
#   - apt remove: flakesock stopped by prerm, the marks kept, no daemon-reload
#     asked; reinstall + start: IDs above those issued before; apt purge: no
#     link left in /etc/systemd/system, the marks kept (documented).
# Under CI=true a missing debootstrap or systemd-nspawn is a failure.
set -u
fail() {
	echo "FAIL: $*" >&2
	if [ -n "${CPID:-}" ]; then
		c journalctl -b --no-pager -n 25 -o short-monotonic 2>/dev/null | sed 's/^/  journal: /' >&2
	fi
	exit 1
}
: "${FW_SRC:?}" "${BUILD_ROOT:?}" "${FLAKECTL:?}" "${PEER_XDP:?}"
DOC=$FW_SRC/doc/deploying.md
. "$FW_SRC/tests/ops/lib.sh" # need
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, systemd-nspawn, veth)"
need debootstrap debootstrap
need systemd-nspawn systemd-container
need nsenter util-linux
need ethtool ethtool
need curl curl
need etcd etcd-server

TMP=$(mktemp -d /tmp/fw-nspawn.XXXXXX)
NSC="fwn-c-$$" SRV="fwn$$" CLI="fwc$$"
NSPID="" CPID=""
cleanup() {
	if [ -n "$NSPID" ] && kill -0 "$NSPID" 2>/dev/null; then
		# SIGTERM: nspawn asks the container's systemd to power off
		kill -TERM "$NSPID" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$NSPID" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$NSPID" 2>/dev/null
		wait "$NSPID" 2>/dev/null
	fi
	ip netns del "$NSC" 2>/dev/null
	ip link del "$SRV" 2>/dev/null
	mountpoint -q "$TMP/root" && umount "$TMP/root"
	mountpoint -q "$TMP/bpf" && umount "$TMP/bpf"
	rm -rf "$TMP"
	return 0
}
trap cleanup EXIT
trap 'exit 1' INT TERM

c() { # COMMAND...: run inside the container, as the operator's root shell
	nsenter -t "$CPID" -a -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
prop() { c systemctl show -p "$2" --value "$1"; } # UNIT PROPERTY
wait_for() { # SECONDS COMMAND...: until COMMAND succeeds
	local n=$(($1 * 5))
	shift
	for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
	return 1
}
get_id() { # prints one ID (the container's flakectl, or the client namespace's)
	if [ "$ADDR" = 127.0.0.1:4242 ]; then
		c flakectl get --server "$ADDR" --timeout 300 2>/dev/null | tail -n 1
	else
		ip netns exec "$NSC" "$FLAKECTL" get --server "$ADDR" --timeout 300 2>/dev/null | tail -n 1
	fi
}
answers() { local i; i=$(get_id); [[ $i =~ ^[0-9]+$ ]]; }
above() { # LAST WHAT: an ID above LAST now, printed
	local i
	wait_for 20 answers || fail "$2: no ID from $ADDR"
	i=$(get_id)
	[[ $i =~ ^[0-9]+$ ]] && [ "$i" -gt "$1" ] || fail "$2: ID $i is not above $1"
	echo "$i"
}
new_main() { # UNIT OLDPID: until the unit runs with another MainPID
	local p
	p=$(prop "$1" MainPID)
	[ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$2" ] && [ "$(prop "$1" ActiveState)" = active ]
}
exposure() { # UNIT: the documented figure for the running unit
	awk -F' *[|] *' -v u="\`$1\`" '$2 == u && $4 ~ /^[0-9.]+$/ { print $5 }' "$DOC"
}
check_security() { # UNIT
	local lvl max
	max=$(exposure "$1")
	[[ $max =~ ^[0-9.]+$ ]] || fail "$DOC gives no running exposure for $1"
	lvl=$(c systemd-analyze security "$1" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	[ -n "$lvl" ] || fail "systemd-analyze security $1 gave no level"
	awk -v l="$lvl" -v m="$max" 'BEGIN { exit !(l <= m) }' ||
		fail "$1: running exposure $lvl above the documented $max"
	echo "$1: systemd-analyze security (running) $lvl, documented $max"
}

start=$(date +%s)
ROOT=$(bash "$FW_SRC/tests/ops/nspawn_root.sh") || fail "tests/ops/nspawn_root.sh"
"$FW_SRC/scripts/package.sh" --builddir "$BUILD_ROOT" --no-build --out "$TMP/debs" >/dev/null ||
	fail "scripts/package.sh"
echo "root $ROOT, packages built ($(($(date +%s) - start)) s)"

# The container's network is private: the packages' dependencies are
# downloaded from the host side into the cached root's apt archive (a no-op
# once they are there), as an operator's apt would fetch them.
mkdir -p "$ROOT/var/tmp/fw-debs"
debs=()
for d in "$TMP"/debs/flakewire_*.deb "$TMP"/debs/flakewire-tools_*.deb; do
	cp "$d" "$ROOT/var/tmp/fw-debs/"
	debs+=("/var/tmp/fw-debs/$(basename "$d")")
done
chroot "$ROOT" apt-get install -y -qq --download-only -o APT::Sandbox::User=root \
	"${debs[@]}" >"$TMP/dl.log" 2>&1 ||
	{ rm -rf "$ROOT/var/tmp/fw-debs"; cat "$TMP/dl.log" >&2; fail "apt-get --download-only in the root"; }
rm -rf "$ROOT/var/tmp/fw-debs"

# a throwaway overlay over the cached root; a bpffs of its own for /sys/fs/bpf.
# nspawn's /sys holds only block, bus, class, dev, devices and kernel: EAL
# stats /sys/module at start (its VFIO probe: "Could not get loaded module
# details", "Cannot init VFIO" without it), so the host's is bound read-only.
mkdir -p "$TMP/upper" "$TMP/work" "$TMP/root" "$TMP/bpf"
mount -t overlay overlay -o "lowerdir=$ROOT,upperdir=$TMP/upper,workdir=$TMP/work" "$TMP/root" ||
	fail "overlay mount"
mount -t bpf bpf "$TMP/bpf" || fail "bpffs mount"
# dpkg without an fsync per file in this throwaway overlay, as in Debian's
# own container images; the operator's commands below stay as documented
mkdir -p "$TMP/root/etc/dpkg/dpkg.cfg.d"
echo force-unsafe-io >"$TMP/root/etc/dpkg/dpkg.cfg.d/flakewire-test-unsafe-io"
systemd-nspawn -q -D "$TMP/root" -b --keep-unit --register=no --private-network \
	--machine="fwnspawn$$" --capability=all --system-call-filter=bpf \
	--bind="$TMP/bpf:/sys/fs/bpf" --bind-ro=/sys/module --bind-ro="$TMP/debs:/root/debs" \
	--bind-ro="$(command -v etcd):/usr/local/sbin/fw-etcd" \
	</dev/null >"$TMP/console.log" 2>&1 &
NSPID=$!
find_init() { # the container's PID 1: PID 1 of a child PID namespace, rooted in our overlay
	local p want
	want=$(stat -c %d:%i "$TMP/root/")
	for p in $(grep -lE '^NSpid:[[:space:]]+[0-9]+[[:space:]]+1$' /proc/[0-9]*/status 2>/dev/null); do
		p=${p#/proc/}
		p=${p%/status}
		[ "$(stat -L -c %d:%i "/proc/$p/root/" 2>/dev/null)" = "$want" ] && { echo "$p"; return 0; }
	done
	return 1
}
wait_for 30 find_init || { cat "$TMP/console.log" >&2; fail "systemd-nspawn did not start the container"; }
CPID=$(find_init)
wait_for 60 nsenter -t "$CPID" -a test -S /run/systemd/private ||
	fail "the container's systemd does not listen on /run/systemd/private"
state=$(timeout 90 nsenter -t "$CPID" -a systemctl is-system-running --wait 2>&1)
case $state in
running) ;;
degraded) echo "note: the container's systemd is degraded: $(c systemctl --failed --no-legend --plain | awk '{ print $1 }' | tr '\n' ' ')" ;;
*) fail "the container's systemd is '$state'" ;;
esac
[ "$(c cat /proc/1/comm)" = systemd ] || fail "PID 1 in the container is not systemd"
echo "booted: systemd $(c systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') as PID 1 ($(($(date +%s) - start)) s)"

# 1. install
c sh -c 'cd /root/debs && apt-get install -y -q ./flakewire_*.deb ./flakewire-tools_*.deb' \
	>"$TMP/install.log" 2>&1 || { tail -n 30 "$TMP/install.log" >&2; fail "apt-get install ./*.deb"; }
for u in flakesock flakewire flakewire-afxdp; do
	[ "$(c systemctl is-enabled $u.service 2>&1)" = disabled ] || fail "$u.service is enabled by the install"
	[ "$(prop $u.service ActiveState)" = inactive ] || fail "$u.service started by the install"
done
c dpkg -s librte-net-af-xdp23 librte-mempool-ring23 >/dev/null 2>&1 || fail "the install did not pull DPDK's AF_XDP driver or ring mempool"
echo "installed ($(grep -c '^Unpacking' "$TMP/install.log") packages), nothing started or enabled ($(($(date +%s) - start)) s)"

# 2. configure: metrics on loopback (doc/deploying.md, step 2)
c sed -i '/^\[metrics\]$/,/^\[/s/^listen =.*/listen = 127.0.0.1:9842/' /etc/flakewire/flakewire.ini
c grep -qx 'listen = 127.0.0.1:9842' /etc/flakewire/flakewire.ini || fail "[metrics] listen not set"
c flakewire -- --config /etc/flakewire/flakewire.ini --check-config >/dev/null || fail "--check-config"

# 3. flakesock.service
ADDR=127.0.0.1:4242
c systemctl enable --now flakesock.service >/dev/null 2>&1 || fail "systemctl enable --now flakesock"
wait_for 20 answers || fail "flakesock.service does not answer on $ADDR"
last=$(get_id)
c flakectl get -n 5 --server "$ADDR" >"$TMP/ids" 2>&1 || fail "flakectl get -n 5"
[ "$(sort -un "$TMP/ids" | wc -l)" -eq 5 ] && sort -nc "$TMP/ids" || fail "flakectl get -n 5: $(cat "$TMP/ids")"
last=$(tail -n 1 "$TMP/ids")
wait_for 10 nsenter -t "$CPID" -n curl -sf http://127.0.0.1:9842/metrics || fail "/metrics not served"
c flakectl status --metrics 127.0.0.1:9842 >"$TMP/status" 2>&1
grep -qi flakesock "$TMP/status" || fail "flakectl status: $(head -c 300 "$TMP/status")"
nsenter -t "$CPID" -n curl -sf http://127.0.0.1:9842/metrics >"$TMP/metrics" || fail "/metrics not served"
grep -q '^flakewire_build_info' "$TMP/metrics" || fail "/metrics has no flakewire_build_info"
check_security flakesock.service
pid=$(prop flakesock.service MainPID)
c systemctl restart flakesock.service || fail "systemctl restart flakesock"
wait_for 10 new_main flakesock.service "$pid" || fail "flakesock.service did not restart"
last=$(above "$last" "flakesock after systemctl restart")
pid=$(prop flakesock.service MainPID)
c sh -c "kill -9 $pid"
wait_for 15 new_main flakesock.service "$pid" || fail "flakesock.service not restarted after kill -9"
last=$(above "$last" "flakesock after kill -9")
[ "$(prop flakesock.service NRestarts)" = 1 ] || fail "NRestarts $(prop flakesock.service NRestarts) after one kill -9"
c test -s /var/lib/flakewire-sock/mark || fail "no mark in /var/lib/flakewire-sock"
# the boot ID under ProcSubset=pid (issue 50): hidden from the unit, passed as %b
pid=$(prop flakesock.service MainPID)
boot=$(c cat /proc/sys/kernel/random/boot_id)
env_boot=$(c sh -c "tr '\\0' '\\n' </proc/$pid/environ" | sed -n 's/^FLAKEWIRE_BOOT_ID=//p')
[ -n "$boot" ] && [ "$env_boot" = "${boot//-/}" ] ||
	fail "flakesock.service's FLAKEWIRE_BOOT_ID '$env_boot' is not the boot ID $boot"
c nsenter -t "$pid" -m cat /proc/sys/kernel/random/boot_id >/dev/null 2>&1 &&
	fail "the boot_id file is visible inside flakesock.service (ProcSubset=pid expected)"
c systemctl stop flakesock.service
echo "flakesock.service: enable --now, IDs, /metrics, restart, kill -9 restarted, IDs increasing ($(($(date +%s) - start)) s)"

# 3b. flakesock.service in a fleet (issue 50): an etcd inside the container
# (the host's binary, bound read-only; the container's network is private), the
# root made once by the operator, the node's keys in /etc/default/flakesock.
# systemctl kill -s KILL: systemd restarts it; the restart holds the same state
# and the same boot ID (FLAKEWIRE_BOOT_ID=%b), so its cache proves it held its
# worker IDs: it takes them back and strands none.
ETCD=http://127.0.0.1:23790 FROOT=/flakewire/nspawn
c systemd-run --quiet --unit=fw-test-etcd /usr/local/sbin/fw-etcd --name fw \
	--data-dir /var/tmp/fw-etcd --listen-client-urls "$ETCD" --advertise-client-urls "$ETCD" \
	--listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
	--initial-cluster fw=http://127.0.0.1:23800 || fail "systemd-run etcd in the container"
wait_for 30 c flakectl fleet init --etcd "$ETCD" --root "$FROOT" --timeout 2000 ||
	fail "flakectl fleet init --etcd $ETCD --root $FROOT in the container"
c cp /etc/default/flakesock /root/flakesock.default
c sh -c "echo 'FLAKESOCK_ARGS=\"--listen 0.0.0.0 --threads 2 --set fleet.etcd=$ETCD --set fleet.root=$FROOT --set fleet.renew_ms=1000\"' >>/etc/default/flakesock"
owned() { # the worker IDs this container's identity owns, comma-separated
	c flakectl fleet ls --etcd "$ETCD" --root "$FROOT" --timeout 5000 |
		awk -v h="$(c hostname)" '$2 == h && $NF == "owned" { print $1 }' | sort -n | paste -sd, -
}
two_owned() { case "$(owned)" in *,*) return 0 ;; esac; return 1; }
c systemctl start flakesock.service || fail "systemctl start flakesock (fleet)"
last=$(above "$last" "flakesock in the fleet")
wait_for 20 two_owned || fail "flakesock in the fleet owns '$(owned)', not two worker IDs"
before=$(owned)
pid=$(prop flakesock.service MainPID)
c systemctl kill -s KILL flakesock.service || fail "systemctl kill -s KILL flakesock"
wait_for 15 new_main flakesock.service "$pid" || fail "flakesock.service (fleet) not restarted after SIGKILL"
last=$(above "$last" "flakesock (fleet) after systemctl kill -s KILL")
after=$(owned)
[ "$after" = "$before" ] || fail "after SIGKILL and systemd's restart it owns worker IDs '$after', not its own '$before' back"
c flakectl fleet ls --etcd "$ETCD" --root "$FROOT" --timeout 5000 >"$TMP/fleet.ls" 2>&1
grep -q 'stranded: 0 ' "$TMP/fleet.ls" || fail "a worker ID stranded after the restart: $(cat "$TMP/fleet.ls")"
c journalctl -u flakesock.service -b --no-pager -o cat | grep -qi 'taken back' ||
	fail "the journal does not say the worker IDs were taken back"
c systemctl stop flakesock.service
c cp /root/flakesock.default /etc/default/flakesock
c systemctl stop fw-test-etcd.service
echo "flakesock.service in a fleet: systemctl kill -s KILL, restarted by systemd, worker IDs $before taken back, none stranded ($(($(date +%s) - start)) s)"

# 4. flakewire-afxdp.service on a veth: the container side takes the address,
# the client namespace on the peer asks
ip netns add "$NSC" || fail "ip netns add"
ip link add "$SRV" type veth peer name "$CLI" netns "$NSC" || fail "veth"
ip link set "$SRV" netns "$CPID" || fail "veth into the container"
ip -n "$NSC" link set lo up
ip -n "$NSC" addr add 10.236.0.1/24 dev "$CLI"
ip -n "$NSC" link set "$CLI" up
ip netns exec "$NSC" ethtool -K "$CLI" tx off >/dev/null || fail "ethtool -K"
# XDP frames sent into a veth need a program on the receiving peer
ip -n "$NSC" link set dev "$CLI" xdpdrv obj "$PEER_XDP" sec xdp || fail "peer XDP program"
c ip addr add 10.236.0.2/24 dev "$SRV"
c ip link set "$SRV" up
c sed -i -e '/^\[port0\]$/,/^\[/s/^mode = .*/mode = af_xdp/' \
	-e "/^\[port0\]$/,/^\[/s/^iface =.*/iface = $SRV/" /etc/flakewire/flakewire.ini
c mountpoint -q /sys/fs/bpf || fail "bpffs not mounted in the container"
xdp_on() { c ip link show dev "$SRV" | grep -q 'prog/xdp'; }
ADDR=10.236.0.2:4242
c systemctl enable --now flakewire-afxdp.service >/dev/null 2>&1 || fail "systemctl enable --now flakewire-afxdp"
wait_for 30 answers || fail "flakewire-afxdp.service does not answer on $ADDR"
xdp_on || fail "no XDP program on $SRV"
c journalctl -u flakewire-afxdp.service -b -o cat | grep -q "^flakewire: port0: XDP program id [1-9][0-9]* (.* mode) on $SRV" ||
	fail "the journal does not name flakewire's XDP program"
last=$(get_id)
[ "$(c stat -c %n /run/flakewire/dpdk/flakewire 2>&1)" = /run/flakewire/dpdk/flakewire ] ||
	fail "EAL's runtime directory is not /run/flakewire/dpdk/flakewire"
check_security flakewire-afxdp.service
pid=$(prop flakewire-afxdp.service MainPID)
c sh -c "kill -9 $pid"
wait_for 20 new_main flakewire-afxdp.service "$pid" || fail "flakewire-afxdp.service not restarted after kill -9"
last=$(above "$last" "flakewire-afxdp after kill -9")
xdp_on || fail "no XDP program on $SRV after the restart"
c systemctl stop flakewire-afxdp.service
[ "$(prop flakewire-afxdp.service ActiveState)" = inactive ] || fail "flakewire-afxdp.service did not stop"
! xdp_on || fail "an XDP program is still attached to $SRV after systemctl stop"
c test -s /var/lib/flakewire/mark || fail "no mark in /var/lib/flakewire"
c systemctl disable flakewire-afxdp.service >/dev/null 2>&1
echo "flakewire-afxdp.service: answers over the veth, kill -9 restarted, IDs increasing, no XDP program after stop ($(($(date +%s) - start)) s)"

# 5. flakewire.service (vfio-pci): no hugepages here (/sys read-only), no NIC
c systemctl start flakewire.service >/dev/null 2>&1 && fail "flakewire.service started without hugepages"
sleep 5 # more than RestartSec=2: a restart would have begun
[ "$(prop flakewire.service ActiveState)" = failed ] || fail "flakewire.service is $(prop flakewire.service ActiveState), not failed"
[ "$(prop flakewire.service NRestarts)" = 0 ] || fail "flakewire.service restarted $(prop flakewire.service NRestarts) times"
c journalctl -u flakewire.service -b --no-pager -o cat >"$TMP/fw.journal"
n=$(grep -c '^flakewire: cannot reserve 1G of hugepages: ' "$TMP/fw.journal")
[ "$n" -eq 1 ] || fail "expected one 'cannot reserve' line, got $n: $(cat "$TMP/fw.journal")"
! grep -q Traceback "$TMP/fw.journal" || fail "a Python traceback in the journal"
echo "flakewire.service: $(grep '^flakewire: cannot reserve' "$TMP/fw.journal"); failed, 0 restarts"
c systemctl reset-failed flakewire.service

# 6. remove, reinstall, purge
ADDR=127.0.0.1:4242
c systemctl start flakesock.service
wait_for 20 answers || fail "flakesock.service does not answer before the removal"
last=$(get_id)
c apt-get remove -y -q flakewire flakewire-tools >"$TMP/remove.log" 2>&1 || { cat "$TMP/remove.log" >&2; fail "apt-get remove"; }
[ "$(prop flakesock.service ActiveState)" = inactive ] || fail "flakesock.service still $(prop flakesock.service ActiveState) after apt-get remove"
! c pgrep -x flakesock >/dev/null || fail "a flakesock process survived apt-get remove"
c systemctl status flakesock.service 2>&1 | grep -q daemon-reload && fail "systemctl asks for a daemon-reload after remove"
c test -s /var/lib/flakewire-sock/mark || fail "the mark did not survive apt-get remove"
c sh -c 'cd /root/debs && apt-get install -y -q ./flakewire_*.deb ./flakewire-tools_*.deb' \
	>"$TMP/install.log" 2>&1 || { tail -n 30 "$TMP/install.log" >&2; fail "reinstall"; }
[ "$(c systemctl is-enabled flakesock.service 2>&1)" = enabled ] || fail "flakesock.service not enabled again after the reinstall"
c systemctl start flakesock.service
last=$(above "$last" "flakesock after remove and reinstall")
c apt-get purge -y -q flakewire flakewire-tools >"$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log" >&2; fail "apt-get purge"; }
[ "$(prop flakesock.service ActiveState)" = inactive ] || fail "flakesock.service runs after purge"
links=$(c find /etc/systemd/system \( -xtype l -o -name 'flake*' \) -print)
[ -z "$links" ] || fail "left in /etc/systemd/system after purge: $links"
c test -s /var/lib/flakewire-sock/mark || fail "flakesock's mark did not survive purge"
c test -s /var/lib/flakewire/mark || fail "flakewire's mark did not survive purge"
echo "remove: stopped, no daemon-reload asked, mark kept; reinstall: IDs above; purge: no links left, marks kept ($(($(date +%s) - start)) s)"
echo PASS
