#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sends malformed frames to the responder through an AF_PACKET socket on the
kernel side of the TAP (stdlib only, no scapy), N of each kind, and prints,
as JSON, the telemetry counter deltas each kind must cause and the replies
that came back to the UDP source port.

  craft.py IFACE DST_MAC [N]
"""
import json
import socket
import struct
import sys
import time

SRC_IP, DST_IP, BCAST_IP = "10.77.0.1", "10.77.0.2", "10.77.0.255"
SPORT, PORT = 5555, 4242


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(payload, proto=17, dst=DST_IP, options=b"", frag=0, total=None, bad_cksum=False):
    ihl = 5 + len(options) // 4
    tl = total if total is not None else 4 * ihl + len(payload)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tl, 1, frag, 64, proto, 0,
                    socket.inet_aton(SRC_IP), socket.inet_aton(dst)) + options
    c = csum(h)
    if bad_cksum:
        c ^= 0x5A5A
    return h[:10] + struct.pack("!H", c) + h[12:] + payload


def udp(payload, dport=PORT, dst=DST_IP, bad_cksum=False):
    length = 8 + len(payload)
    ph = socket.inet_aton(SRC_IP) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, length)
    h = struct.pack("!HHHH", SPORT, dport, length, 0)
    c = csum(ph + h + payload) or 0xFFFF
    if bad_cksum:
        c ^= 0x5A5A
    return struct.pack("!HHHH", SPORT, dport, length, c) + payload


def req(magic=0x464B, version=1, op=1, count=1, pad=8):
    return struct.pack("!HBBBBHQHHI", magic, version, op, 0, 0, count, 42, 0, 0, 0) + bytes(pad)


def main():
    iface, dst_mac = sys.argv[1], bytes.fromhex(sys.argv[2].replace(":", ""))
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    src_mac = s.getsockname()[4]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((SRC_IP, SPORT))

    def eth(payload, dst=dst_mac, etype=0x0800):
        return dst + src_mac + struct.pack("!H", etype) + payload

    bcast = b"\xff" * 6
    cases = [
        # (name, frame, counters it must raise by one)
        ("bad_magic", eth(ipv4(udp(req(magic=0x1234)))), ["drop_wire", "wire_magic"]),
        ("truncated", eth(ipv4(udp(b"\x46\x4b\x01\x01" + bytes(6)))), ["drop_wire", "wire_short"]),
        ("wrong_version", eth(ipv4(udp(req(version=9)))), ["st_bad_version", "udp_replies"]),
        ("reply_op", eth(ipv4(udp(req(op=0x81)))), ["drop_wire", "wire_reply"]),
        ("ip_options", eth(ipv4(udp(req()), options=b"\x01\x01\x01\x00")), ["drop_ip_options"]),
        ("fragment", eth(ipv4(udp(req()), frag=0x2000)), ["drop_fragment"]),
        ("wrong_port", eth(ipv4(udp(req(), dport=PORT + 1))), ["drop_udp_port"]),
        ("bad_ip_cksum", eth(ipv4(udp(req()), bad_cksum=True)), ["drop_bad_cksum"]),
        ("bad_udp_cksum", eth(ipv4(udp(req(), bad_cksum=True))), ["drop_bad_cksum"]),
        ("ip_truncated", eth(ipv4(udp(req()), total=1000)), ["drop_bad_length"]),
        ("broadcast_junk", eth(b"\xde\xad" * 30, dst=bcast, etype=0x88B5), ["drop_not_ip"]),
        ("broadcast_ip", eth(ipv4(udp(req(), dst=BCAST_IP), dst=BCAST_IP), dst=bcast),
         ["drop_not_us"]),
        ("other_proto", eth(ipv4(b"\0" * 20, proto=47)), ["drop_ip_proto"]),
    ]
    expect = {}
    for name, frame, counters in cases:
        if len(frame) < 60:
            frame += bytes(60 - len(frame))  # Ethernet minimum: padding after IP
        for _ in range(n):
            s.send(frame)
        for c in counters:
            expect[c] = expect.get(c, 0) + n
        expect["rx"] = expect.get("rx", 0) + n
        time.sleep(0.01)
    replies = 0
    u.settimeout(0.5)
    for _ in range(10 * n * len(cases)):
        try:
            data = u.recv(2048)
        except socket.timeout:
            break
        if len(data) >= 24 and data[4] == 2:  # status BAD_VERSION
            replies += 1
    print(json.dumps({"expect": expect, "bad_version_replies": replies}))


if __name__ == "__main__":
    main()
