#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Traffic helpers for test_xdp.sh (Debian's /usr/bin/python3, stdlib only).

  udp-echo PORT                  echo datagrams back (runs until killed)
  udp-sink PORT FILE             append "LEN PAYLOAD-PREFIX" per datagram to FILE
  tcp-echo PORT                  echo one line per connection
  udp-send HOST PORT COUNT SIZE  send COUNT datagrams of SIZE bytes
  udp-rpc HOST PORT              send one datagram, expect it echoed (exit 0/1)
  tcp-rpc HOST PORT              connect, send a line, expect it echoed
  raw IFACE DSTMAC KIND PORT     send one hand-made Ethernet frame (see FRAMES)
"""
import os
import socket
import struct
import sys

# the addresses of raw frames (test_afxdp.sh sets its own)
SRC = os.environ.get("XDP_SRC", "10.231.0.2")
DST = os.environ.get("XDP_DST", "10.231.0.1")
SRC6 = os.environ.get("XDP_SRC6", "fd00:f1::2")
DST6 = os.environ.get("XDP_DST6", "fd00:f1::1")
SRCPORT = 40000


def udp_echo(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    while True:
        data, peer = s.recvfrom(65535)
        s.sendto(data, peer)


def udp_sink(port, path):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)  # both families
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind(("::", port))
    with open(path, "a", buffering=1) as f:
        while True:
            data = s.recv(65535)
            f.write("%d %s\n" % (len(data), data[:16].decode("ascii", "replace")))


def tcp_echo(port):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)  # both families
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port))
    s.listen(8)
    while True:
        c, _ = s.accept()
        with c:
            c.sendall(c.recv(4096))


def udp_send(host, port, count, size):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(count):
        s.sendto((b"udp%05d" % i).ljust(size, b"."), (host, port))


def udp_rpc(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    for _ in range(3):
        s.sendto(b"echo-me", (host, port))
        try:
            if s.recv(100) == b"echo-me":
                return 0
        except socket.timeout:
            pass
    return 1


def tcp_rpc(host, port):
    with socket.create_connection((host, port), timeout=2) as s:
        s.sendall(b"tcp-echo\n")
        return 0 if s.recv(100) == b"tcp-echo\n" else 1


def csum(b):
    if len(b) % 2:
        b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16:
        t = (t & 0xFFFF) + (t >> 16)
    return ~t & 0xFFFF


def ipv4(payload, proto=17, ihl=5, options=b"", frag=0, tot_len=None, version=4, dst=DST):
    tl = 4 * max(ihl, 5) + len(payload) if tot_len is None else tot_len
    hdr = struct.pack("!BBHHHBBH4s4s", (version << 4) | ihl, 0, tl, 0x1234, frag, 64, proto, 0,
                      socket.inet_aton(SRC), socket.inet_aton(dst)) + options
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + payload


def udp(dport, data, length=None):
    return struct.pack("!HHHH", SRCPORT, dport, 8 + len(data) if length is None else length, 0) + data


def ipv6(payload, nh=17, dst=DST6, plen=None):
    pl = len(payload) if plen is None else plen
    return struct.pack("!IHBB", 6 << 28, pl, nh, 64) + socket.inet_pton(
        socket.AF_INET6, SRC6) + socket.inet_pton(socket.AF_INET6, dst) + payload


def udp6(dport, data, dst=DST6, zero=False):
    h = struct.pack("!HHHH", SRCPORT, dport, 8 + len(data), 0)
    ph = socket.inet_pton(socket.AF_INET6, SRC6) + socket.inet_pton(socket.AF_INET6, dst) + \
        struct.pack("!IxxxB", len(h) + len(data), 17)
    c = 0 if zero else (csum(ph + h + data) or 0xFFFF)
    return h[:6] + struct.pack("!H", c) + data


# Each frame and what the XDP program must call it.
def frames(port):
    return {
        # IP options: the UDP header starts at ihl*4, not 20.
        "ipopt-port": ipv4(udp(port, b"ipopt"), ihl=6, options=b"\x01\x01\x01\x00"),
        # Options that look like a UDP header to PORT when ihl is ignored.
        "ipopt-decoy": ipv4(udp(port + 2, b"decoy"), ihl=6,
                            options=struct.pack("!BBH", 1, 1, port)),
        "short-ip": ipv4(udp(port, b"x"))[:10],
        "ihl-4": ipv4(udp(port, b"ihl4"), ihl=4),
        "ihl-past-end": ipv4(udp(port, b""), ihl=15)[:28],
        "short-udp": ipv4(b"\0" * 6, tot_len=28),
        "totlen-short": ipv4(udp(port, b"tl"), tot_len=24),
        "udplen-short": ipv4(udp(port, b"ul", length=4)),
        "version-6": ipv4(udp(port, b"v6"), version=6),
        "frag-mf": ipv4(udp(port, b"frag0"), frag=0x2000),
        "frag-offset": ipv4(b"tail-of-a-datagram", frag=0x0010),
        "totlen-long": ipv4(udp(port, b"tl"), tot_len=200),
        "dst-other": ipv4(udp(port, b"other"), dst="10.231.0.77"),
        # IPv6
        "v6-port": ipv6(udp6(port, b"v6port")),
        "v6-other-port": ipv6(udp6(port + 2, b"v6other")),
        "v6-dst-other": ipv6(udp6(port, b"v6dst", dst="fd00:f1::77"), dst="fd00:f1::77"),
        "v6-zero-cksum": ipv6(udp6(port, b"v6zero", zero=True)),
        "v6-hop-by-hop": ipv6(struct.pack("!BB", 17, 0) + bytes(6) + udp6(port, b"hbh"), nh=0),
        "v6-dest-opts": ipv6(struct.pack("!BB", 17, 0) + bytes(6) + udp6(port, b"do"), nh=60),
        "v6-fragment": ipv6(struct.pack("!BxHI", 17, 1, 7) + udp6(port, b"frag"), nh=44),
        "v6-plen-long": ipv6(udp6(port, b"plen"), plen=300),
        "v6-udplen": ipv6(udp6(port, b"udplen")[:-2]),
        "v6-icmp": ipv6(bytes([128, 0, 0, 0, 0, 1, 0, 1]), nh=58),
    }


def raw(iface, dstmac, kind, port):
    dst = bytes.fromhex(dstmac.replace(":", ""))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    src = s.getsockname()[4][:6]
    if kind == "vlan":
        frame = dst + src + struct.pack("!HHH", 0x8100, 5, 0x0800) + ipv4(udp(port, b"vlan"))
    elif kind == "group-mac":
        frame = b"\xff" * 6 + src + struct.pack("!H", 0x0800) + ipv4(udp(port, b"bcast"))
    elif kind.startswith("v6-"):
        frame = dst + src + struct.pack("!H", 0x86DD) + frames(port)[kind]
    else:
        frame = dst + src + struct.pack("!H", 0x0800) + frames(port)[kind]
    s.send(frame)
    return 0


def main(a):
    cmd = a[0]
    if cmd == "udp-echo":
        return udp_echo(int(a[1]))
    if cmd == "udp-sink":
        return udp_sink(int(a[1]), a[2])
    if cmd == "tcp-echo":
        return tcp_echo(int(a[1]))
    if cmd == "udp-send":
        return udp_send(a[1], int(a[2]), int(a[3]), int(a[4]))
    if cmd == "udp-rpc":
        return udp_rpc(a[1], int(a[2]))
    if cmd == "tcp-rpc":
        return tcp_rpc(a[1], int(a[2]))
    if cmd == "raw":
        return raw(a[1], a[2], a[3], int(a[4]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
