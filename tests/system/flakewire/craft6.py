#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""IPv6 frames, good and hostile, sent to the responder through an AF_PACKET
socket on the kernel side of the TAP (stdlib only), N of each kind. Prints,
as JSON, the telemetry counter deltas each kind must cause ("expect"), what
came back ("got": replies by kind, checked here where the frame is known) and
a list of problems found in the replies ("bad").

  craft6.py IFACE FW_MAC N SRC DST UNTRUSTED_SRC DENIED_SRC

SRC is the kernel's address on IFACE (trusted by the responder), DST the
responder's, UNTRUSTED_SRC another kernel address (allowed, not trusted),
DENIED_SRC a kernel address outside [net] allow.
"""
import json
import socket
import struct
import sys
import time

PORT, SPORT = 4242, 5556
ICMP6, UDP = 58, 17


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def a6(s):
    return socket.inet_pton(socket.AF_INET6, s)


def l4sum(src, dst, proto, data):
    return csum(a6(src) + a6(dst) + struct.pack("!IxxxB", len(data), proto) + data)


def ipv6(payload, src, dst, nh, hops=64, plen=None):
    pl = len(payload) if plen is None else plen
    return struct.pack("!IHBB", 6 << 28, pl, nh, hops) + a6(src) + a6(dst) + payload


def udp6(payload, src, dst, dport=PORT, sport=SPORT, cksum="ok"):
    length = 8 + len(payload)
    h = struct.pack("!HHHH", sport, dport, length, 0)
    c = l4sum(src, dst, UDP, h + payload) or 0xFFFF
    c = {"ok": c, "zero": 0, "bad": c ^ 0x5A5A}[cksum]
    return struct.pack("!HHHH", sport, dport, length, c) + payload


def icmp6(src, dst, typ, code, body, bad=False):
    c = l4sum(src, dst, ICMP6, struct.pack("!BBH", typ, code, 0) + body)
    if bad:
        c ^= 0x5A5A
    return struct.pack("!BBH", typ, code, c) + body


def req(version=1, op=1, count=1, pad=8):
    return struct.pack("!HBBBBHQHHI", 0x464B, version, op, 0, 0, count, 42, 0, 0, 0) + bytes(pad)


def snm(addr):
    return socket.inet_ntop(socket.AF_INET6, a6("ff02::1:ff00:0")[:13] + a6(addr)[13:])


def mcast_mac(group):
    return b"\x33\x33" + a6(group)[12:]


def main():
    iface, fw_mac = sys.argv[1], bytes.fromhex(sys.argv[2].replace(":", ""))
    n = int(sys.argv[3])
    src, dst, usrc, dsrc = sys.argv[4:8]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86DD))
    s.bind((iface, 0x86DD))
    my_mac = s.getsockname()[4]
    # replies to our UDP source port are read here, so the kernel sends no
    # port-unreachable back to the responder
    socks = []
    for a in (src, usrc):
        u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        u.bind((a, SPORT))
        socks.append(u)

    def eth(payload, to=fw_mac):
        return to + my_mac + struct.pack("!H", 0x86DD) + payload

    def ns(target, ip_src=src, ip_dst=None, hops=255, opts=None, bad=False):
        ip_dst = ip_dst or snm(target)
        if opts is None:
            opts = b"" if ip_src == "::" else b"\x01\x01" + my_mac
        body = bytes(4) + a6(target) + opts
        to = mcast_mac(ip_dst) if ip_dst.startswith("ff") else fw_mac
        return eth(ipv6(icmp6(ip_src, ip_dst, 135, 0, body, bad), ip_src, ip_dst, ICMP6, hops), to)

    def echo(ip_src=src, bad=False):
        return eth(ipv6(icmp6(ip_src, dst, 128, 0, b"\x12\x34\x00\x01" + b"ping" * 8, bad),
                        ip_src, dst, ICMP6))

    def u6(payload, ip_src=src, ip_dst=dst, **kw):
        return eth(ipv6(udp6(payload, ip_src, ip_dst, **kw), ip_src, ip_dst, UDP))

    def ext(nh_ext, ip_src=src):
        # the extension header (8 bytes, next header UDP) then a request
        inner = udp6(req(), ip_src, dst)
        return eth(ipv6(struct.pack("!BB", UDP, 0) + bytes(6) + inner, ip_src, dst, nh_ext))

    big = req(op=2, count=181, pad=0)  # a trusted LIST: 181 asked, 178 fit over IPv6
    cases = [
        # (name, frame, counters it must raise by one each)
        ("ns", ns(dst), ["nd"]),
        ("ns_unicast", ns(dst, ip_dst=dst), ["nd"]),
        ("ns_dad", ns(dst, ip_src="::"), ["nd"]),
        ("ns_hop254", ns(dst, hops=254), ["drop_nd_invalid"]),
        ("ns_hop1", ns(dst, hops=1), ["drop_nd_invalid"]),
        ("ns_bad_cksum", ns(dst, bad=True), ["drop_bad_cksum"]),
        ("ns_zero_opt", ns(dst, opts=b"\x01\x00" + bytes(6)), ["drop_nd_invalid"]),
        ("ns_dad_slla", ns(dst, ip_src="::", opts=b"\x01\x01" + my_mac), ["drop_nd_invalid"]),
        ("ns_other", ns("fd77::99"), ["drop_not_us"]),
        ("ns_short", eth(ipv6(icmp6(src, snm(dst), 135, 0, bytes(12)), src, snm(dst), ICMP6,
                              255), mcast_mac(snm(dst))), ["drop_nd_invalid"]),
        ("echo", echo(), ["icmp", "icmp6"]),
        ("echo_bad_cksum", echo(bad=True), ["drop_bad_cksum"]),
        ("echo_denied", echo(ip_src=dsrc), ["drop_source"]),
        ("id", u6(req()), ["udp_replies", "udp6_replies", "op_id", "requests"]),
        ("id_untrusted", u6(req(), ip_src=usrc), ["udp_replies", "udp6_replies", "op_id",
                                                  "requests"]),
        ("list_big", u6(big), ["udp_replies", "udp6_replies", "op_list", "requests"]),
        # the largest unfragmented request (1452 bytes of payload): a 32-byte answer
        ("id_oversized", u6(req(pad=1452 - 24), ip_src=usrc),
         ["udp_replies", "udp6_replies", "op_id", "requests"]),
        ("bad_version", u6(req(version=9)), ["udp_replies", "udp6_replies",
                                             "st_bad_version", "requests"]),
        ("udp_zero_cksum", u6(req(), cksum="zero"), ["drop_udp6_zero_cksum"]),
        ("udp_bad_cksum", u6(req(), cksum="bad"), ["drop_bad_cksum"]),
        ("udp_denied", u6(req(), ip_src=dsrc), ["drop_source"]),
        ("udp_unspecified_src", u6(req(), ip_src="::"), ["drop_martian_unspecified"]),
        ("udp_port", u6(req(), dport=PORT + 1), ["drop_udp_port"]),
        ("udp_reflector", u6(req(), sport=53), ["drop_reflector_port"]),
        ("udp_other_dst", u6(req(), ip_dst="fd77::77"), ["drop_not_us"]),
        ("udp_multicast", eth(ipv6(udp6(req(), src, "ff02::1"), src, "ff02::1", UDP),
                              mcast_mac("ff02::1")), ["drop_not_us"]),
        ("hop_by_hop", ext(0), ["drop_ipv6_ext"]),
        ("dest_opts", ext(60), ["drop_ipv6_ext"]),
        ("routing", ext(43), ["drop_ipv6_ext"]),
        ("fragment", ext(44), ["drop_fragment"]),
        ("truncated", eth(ipv6(udp6(req(), src, dst), src, dst, UDP, plen=400)),
         ["drop_bad_length"]),
        ("udp_len", eth(ipv6(udp6(req(), src, dst)[:-4], src, dst, UDP)), ["drop_bad_length"]),
        ("short_header", eth(ipv6(b"", src, dst, UDP)[:30]), ["drop_bad_length"]),
        ("no_next", eth(ipv6(bytes(8), src, dst, 59)), ["drop_ip_proto"]),
        ("wrong_mac", eth(ipv6(udp6(req(), src, dst), src, dst, UDP), to=b"\x02" * 6),
         ["drop_not_us"]),
    ]
    expect = {}
    got = {}
    bad = []
    sent = {}
    for name, frame, counters in cases:
        if len(frame) < 60 and not name.startswith("short"):
            frame += bytes(60 - len(frame))  # Ethernet minimum (a TAP takes shorter)
        for _ in range(n):
            s.send(frame)
        sent[frame[14:]] = name
        for c in counters:
            expect[c] = expect.get(c, 0) + n
        expect["rx"] = expect.get("rx", 0) + n
        expect["rx6"] = expect.get("rx6", 0) + n
        time.sleep(0.01)

    # every frame from the responder's MAC: check what we can
    s.settimeout(1.0)  # the replies' tail: generous on a loaded machine
    deadline = time.time() + 4
    while time.time() < deadline:
        try:
            f = s.recv(4096)
        except socket.timeout:
            break
        if f[6:12] != fw_mac or len(f) < 54:
            continue
        ip = f[14:]
        plen = struct.unpack("!H", ip[4:6])[0]
        nh, hops = ip[6], ip[7]
        isrc = socket.inet_ntop(socket.AF_INET6, ip[8:24])
        idst = socket.inet_ntop(socket.AF_INET6, ip[24:40])
        body = ip[40:40 + plen]
        if l4sum(isrc, idst, nh, body) != 0:
            bad.append("reply with a bad checksum (next header %d)" % nh)
        if nh == ICMP6 and body[0] == 136:
            kind = "na_dad" if idst == "ff02::1" else "na"
            got[kind] = got.get(kind, 0) + 1
            flags, target = body[4], socket.inet_ntop(socket.AF_INET6, body[8:24])
            if hops != 255 or target != dst or isrc != dst or len(body) != 32:
                bad.append("NA: hops %d target %s source %s length %d" % (hops, target, isrc,
                                                                          len(body)))
            if body[24:26] != b"\x02\x01" or body[26:32] != fw_mac:
                bad.append("NA: no target link-layer option with the responder's MAC")
            want = 0x20 if kind == "na_dad" else 0x60  # O, or S|O; R clear
            if flags != want:
                bad.append("NA %s: flags 0x%02x, expected 0x%02x" % (kind, flags, want))
            if kind == "na" and (idst != src or f[0:6] != my_mac):
                bad.append("NA to %s / %s, expected %s" % (idst, f[0:6].hex(), src))
            if kind == "na_dad" and f[0:6] != b"\x33\x33\x00\x00\x00\x01":
                bad.append("DAD NA not to 33:33:00:00:00:01")
        elif nh == ICMP6 and body[0] == 129:
            got["echo"] = got.get("echo", 0) + 1
            if hops != 64 or idst != src or isrc != dst:
                bad.append("echo reply: hops %d %s -> %s" % (hops, isrc, idst))
        elif nh == UDP:
            dl = len(body) - 8
            key = "udp_%d" % dl
            got[key] = got.get(key, 0) + 1
            if hops != 64 or isrc != dst:
                bad.append("UDP reply: hops %d from %s" % (hops, isrc))
            if struct.unpack("!H", body[6:8])[0] == 0:
                bad.append("UDP reply without a checksum")
            if dl > 1452:
                bad.append("UDP reply of %d payload bytes, over 1452" % dl)
            if idst == usrc and dl > 32:
                bad.append("reply to an untrusted source larger than its request")
        else:
            bad.append("unexpected reply: next header %d" % nh)
    for u in socks:
        u.close()
    print(json.dumps({"expect": expect, "got": got, "bad": bad}))


if __name__ == "__main__":
    main()
