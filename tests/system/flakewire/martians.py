#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Martian frames (issue 33) sent to a responder through an AF_PACKET socket
on the other side of its link (stdlib only; Debian's /usr/bin/python3), N of
each kind, every one a valid single-ID request (or ICMP echo) with correct
checksums, from a source no peer on the wire can have: loopback,
unspecified, multicast, broadcast, the responder's own addresses (IPv4,
IPv6, IPv4-mapped), or a group source MAC. Then two controls from the real
peer (IPv4 and IPv6), which must be answered: they prove that the capture
sees replies. Prints JSON:

  {"kinds": {KIND: {"reason": R, "xdp": R or null, "sent": N, "replies": K}},
   "expect": {"drop_martian_R": n, ...},   what flakewire must count
   "xdp_expect": {"martian_R": n, ...},    what its XDP program must count
   "controls": {"control4": K, "control6": K}}

  martians.py IFACE FW_MAC SRC4 DST4 SRC6 DST6 N [--no-echo]

SRC4/SRC6: the peer's addresses on IFACE (the controls' sources), DST4/DST6
the responder's (also the "self" sources). --no-echo leaves out the ICMP
echo kinds (on AF_XDP the kernel, not flakewire, owns ICMP).
"""
import json
import socket
import struct
import sys
import time

PORT, SPORT = 4242, 5557
MAGIC = 0x464B


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def request(tag):
    """A single-ID request padded to its reply's 32 bytes (protocol v1)."""
    return struct.pack(">HBBBBHQHHI", MAGIC, 1, 1, 0, 0, 1, tag, 0, 0, 0) + bytes(8)


def a4(s):
    return socket.inet_pton(socket.AF_INET, s)


def a6(s):
    return socket.inet_pton(socket.AF_INET6, s)


def ipv4(src, dst, proto, l4):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, proto, 0, a4(src),
                    a4(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + l4


def udp4(src, dst, tag):
    p = request(tag)
    h = struct.pack("!HHHH", SPORT, PORT, 8 + len(p), 0)
    c = csum(a4(src) + a4(dst) + struct.pack("!BBH", 0, 17, 8 + len(p)) + h + p) or 0xFFFF
    return ipv4(src, dst, 17, h[:6] + struct.pack("!H", c) + p)


def echo4(src, dst, ident):
    body = struct.pack("!BBHHH", 8, 0, 0, ident, 1) + b"flakewire martian echo"
    return ipv4(src, dst, 1, body[:2] + struct.pack("!H", csum(body)) + body[4:])


def ipv6(src, dst, nh, l4):
    return struct.pack("!IHBB", 6 << 28, len(l4), nh, 64) + a6(src) + a6(dst) + l4


def l4sum6(src, dst, nh, data):
    return csum(a6(src) + a6(dst) + struct.pack("!IxxxB", len(data), nh) + data)


def udp6(src, dst, tag):
    p = request(tag)
    h = struct.pack("!HHHH", SPORT, PORT, 8 + len(p), 0)
    c = l4sum6(src, dst, 17, h + p) or 0xFFFF
    return ipv6(src, dst, 17, h[:6] + struct.pack("!H", c) + p)


def echo6(src, dst, ident):
    body = struct.pack("!BBHHH", 128, 0, 0, ident, 1) + b"flakewire martian echo"
    c = l4sum6(src, dst, 58, body)
    return ipv6(src, dst, 58, body[:2] + struct.pack("!H", c) + body[4:])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    no_echo = "--no-echo" in sys.argv
    iface, fw_mac = args[0], bytes.fromhex(args[1].replace(":", ""))
    src4, dst4, src6, dst6, n = args[2], args[3], args[4], args[5], int(args[6])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
    s.bind((iface, 0))
    my_mac = s.getsockname()[4]
    bcast, mcast4, mcast6 = b"\xff" * 6, bytes.fromhex("01005e000001"), bytes.fromhex(
        "333300000001")
    # the controls' replies reach a socket, so the kernel sends no port unreachable
    sinks = []
    for fam, a in ((socket.AF_INET, src4), (socket.AF_INET6, src6)):
        try:
            u = socket.socket(fam, socket.SOCK_DGRAM)
            u.bind((a, SPORT))
            sinks.append(u)
        except OSError:
            pass  # IPv6 off on this side: the kernel ignores the reply anyway

    # (kind, IPv4?, source, source MAC, echo?, flakewire's reason, the XDP program's)
    kinds = [
        ("v4_loopback", True, "127.0.0.1", my_mac, False, "loopback"),
        ("v4_loopback_net", True, "127.1.2.3", my_mac, False, "loopback"),
        ("v4_unspecified", True, "0.0.0.0", my_mac, False, "unspecified"),
        ("v4_multicast", True, "224.0.0.1", my_mac, False, "multicast"),
        ("v4_broadcast", True, "255.255.255.255", my_mac, False, "broadcast"),
        ("v4_self", True, dst4, my_mac, False, "self"),
        ("v4_mac_multicast", True, src4, mcast4, False, "mac"),
        ("v4_mac_broadcast", True, src4, bcast, False, "mac"),
        ("v4_echo_loopback", True, "127.0.0.1", my_mac, True, "loopback"),
        ("v6_loopback", False, "::1", my_mac, False, "loopback"),
        ("v6_unspecified", False, "::", my_mac, False, "unspecified"),
        ("v6_multicast", False, "ff02::1", my_mac, False, "multicast"),
        ("v6_self", False, dst6, my_mac, False, "self"),
        ("v6_mapped_loopback", False, "::ffff:127.0.0.1", my_mac, False, "loopback"),
        ("v6_mapped_unspecified", False, "::ffff:0.0.0.0", my_mac, False, "unspecified"),
        ("v6_mapped_multicast", False, "::ffff:224.0.0.1", my_mac, False, "multicast"),
        ("v6_mapped_broadcast", False, "::ffff:255.255.255.255", my_mac, False, "broadcast"),
        ("v6_mapped_self", False, "::ffff:" + dst4, my_mac, False, "self"),
        ("v6_mac_multicast", False, src6, mcast6, False, "mac"),
        ("v6_mac_broadcast", False, src6, bcast, False, "mac"),
        ("v6_echo_loopback", False, "::1", my_mac, True, "loopback"),
    ]
    if no_echo:
        kinds = [k for k in kinds if not k[4]]
    controls = [("control4", True, src4), ("control6", False, src6)]

    by_tag = {}  # UDP tag or echo ident -> kind
    out = {"kinds": {}, "expect": {}, "xdp_expect": {}, "controls": {}}

    def frame(v4, src, mac, echo, tag):
        if v4:
            l3 = echo4(src, dst4, tag) if echo else udp4(src, dst4, tag)
            et = 0x0800
        else:
            l3 = echo6(src, dst6, tag) if echo else udp6(src, dst6, tag)
            et = 0x86DD
        f = fw_mac + mac + struct.pack("!H", et) + l3
        return f + bytes(max(0, 60 - len(f)))

    for i, (kind, v4, src, mac, echo, why) in enumerate(kinds):
        tag = 7000 + i
        by_tag[tag] = kind
        f = frame(v4, src, mac, echo, tag)
        for _ in range(n):
            s.send(f)
        out["kinds"][kind] = {"reason": why, "xdp": None if echo else why, "sent": n,
                              "replies": 0}
        c = "drop_martian_" + why
        out["expect"][c] = out["expect"].get(c, 0) + n
        if not echo:
            c = "martian_" + why
            out["xdp_expect"][c] = out["xdp_expect"].get(c, 0) + n
        time.sleep(0.005)
    for i, (kind, v4, src) in enumerate(controls):
        tag = 7900 + i
        by_tag[tag] = kind
        out["controls"][kind] = 0
        f = frame(v4, src, my_mac, False, tag)
        for _ in range(n):
            s.send(f)

    # every frame from the responder's MAC that is a reply to one of ours
    s.settimeout(0.5)
    deadline = time.monotonic() + 3
    want = len(controls) * n
    got_controls = 0
    while time.monotonic() < deadline:
        try:
            f = s.recv(4096)
        except socket.timeout:
            if got_controls >= want:
                break  # the controls are in and nothing came for 0.5 s
            continue
        if f[6:12] != fw_mac or len(f) < 42:
            continue
        et = struct.unpack("!H", f[12:14])[0]
        tag = None
        if et == 0x0800:
            ihl = (f[14] & 0x0F) * 4
            proto, l4 = f[23], f[14 + ihl:]
            if proto == 17 and len(l4) >= 24 and struct.unpack("!H", l4[0:2])[0] == PORT:
                tag = struct.unpack(">Q", l4[16:24])[0]
            elif proto == 1 and len(l4) >= 8 and l4[0] == 0:
                tag = struct.unpack("!H", l4[4:6])[0]
        elif et == 0x86DD and len(f) >= 54:
            nh, l4 = f[20], f[54:]
            if nh == 17 and len(l4) >= 24 and struct.unpack("!H", l4[0:2])[0] == PORT:
                tag = struct.unpack(">Q", l4[16:24])[0]
            elif nh == 58 and len(l4) >= 8 and l4[0] == 129:
                tag = struct.unpack("!H", l4[4:6])[0]
        kind = by_tag.get(tag)
        if kind in out["controls"]:
            out["controls"][kind] += 1
            got_controls += 1
        elif kind is not None:
            out["kinds"][kind]["replies"] += 1
    for u in sinks:
        u.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
