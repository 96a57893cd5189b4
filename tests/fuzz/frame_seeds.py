#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed frames of fuzz_frame (tests/fuzz/corpus/frame/): each file is
the harness header (fix-up flags, hidden bytes, rate pre-charge) and a frame.

  frame_seeds.py tests/fuzz/corpus/frame
"""
import socket, struct, os, sys
out = sys.argv[1]
PMAC = bytes.fromhex("020000770002"); CMAC = bytes.fromhex("020000770001")
def csum(d):
    if len(d) % 2: d += b"\0"
    s = sum(struct.unpack("!%dH" % (len(d)//2), d))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def ip(payload, src, proto=17):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20+len(payload), 1, 0, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton("10.77.0.2"))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload
def udp(payload, src, sport=40000):
    l = 8 + len(payload)
    ph = socket.inet_aton(src) + socket.inet_aton("10.77.0.2") + struct.pack("!BBH", 0, 17, l)
    c = csum(ph + struct.pack("!HHHH", sport, 4242, l, 0) + payload) or 0xffff
    return struct.pack("!HHHH", sport, 4242, l, c) + payload
def req(op, count, pad, version=1):
    return struct.pack("!HBBBBHQHHI", 0x464B, version, op, 0, 0, count, 7, 0, 0, 0) + bytes(pad)
def eth(p, t=0x0800): return PMAC + CMAC + struct.pack("!H", t) + p
def put(name, frame, how=0, hide=0, charge=0):
    open(os.path.join(out, name), "wb").write(bytes([how, hide, charge]) + frame)
for src, tag in (("10.77.0.1", "untrusted"), ("10.99.0.1", "trusted")):
    put(f"id-{tag}", eth(ip(udp(req(1, 1, 8), src), src)))
    put(f"id24-{tag}", eth(ip(udp(req(1, 1, 0), src), src)))
    put(f"list10-{tag}", eth(ip(udp(req(2, 10, 80), src), src)))
    put(f"list181-{tag}", eth(ip(udp(req(2, 181, 0), src), src)))
    put(f"range-{tag}", eth(ip(udp(req(3, 5000, 36), src), src)))
    put(f"range-max-{tag}", eth(ip(udp(req(3, 65535, 200), src), src)))
    put(f"info-{tag}", eth(ip(udp(req(4, 0, 32), src), src)))
    put(f"uuid7-2-{tag}", eth(ip(udp(req(5, 2, 32), src), src)))
    put(f"uuid7-90-{tag}", eth(ip(udp(req(5, 90, 20), src), src)))
put("bad-version", eth(ip(udp(req(1, 1, 8, version=9), "10.77.0.1"), "10.77.0.1")))
put("denied-source", eth(ip(udp(req(1, 1, 8), "192.0.2.1"), "192.0.2.1")))
put("reflector-53", eth(ip(udp(req(1, 1, 8), "10.77.0.1", sport=53), "10.77.0.1")))
icmp = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"ping" * 8
icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
put("icmp-echo", eth(ip(icmp, "10.77.0.1", proto=1)))
arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, CMAC, socket.inet_aton("10.77.0.1"),
                  bytes(6), socket.inet_aton("10.77.0.2"))
put("arp-request", b"\xff" * 6 + CMAC + b"\x08\x06" + arp + bytes(18))
put("fixup-all", eth(ip(udp(req(2, 3, 24), "10.77.0.1"), "10.77.0.1")), how=0x17)
# RX checksum verdicts (byte 1, bits 6-7): NONE with unfinished checksums, GOOD, BAD
def partial(frame):
    f = bytearray(frame); f[24:26] = b"\0\0"; f[40:42] = b"\x12\x34"; return bytes(f)
put("rx-none-id", partial(eth(ip(udp(req(1, 1, 8), "10.77.0.1"), "10.77.0.1"))), hide=0xc0)
put("rx-good-id", eth(ip(udp(req(1, 1, 8), "10.77.0.1"), "10.77.0.1")), hide=0x40)
put("rx-bad-id", eth(ip(udp(req(1, 1, 8), "10.77.0.1"), "10.77.0.1")), hide=0x80)
put("hidden-tail", eth(ip(udp(req(2, 3, 24), "10.77.0.1"), "10.77.0.1")), hide=10)
put("rate-drop", eth(ip(udp(req(2, 3, 24), "10.77.0.1"), "10.77.0.1")), charge=8)
put("rate-slip", eth(ip(udp(req(2, 3, 24), "10.77.0.1"), "10.77.0.1")), charge=9)
put("rate-slip-bare", eth(ip(udp(req(1, 1, 0), "10.77.0.1"), "10.77.0.1")), charge=9)

# IPv6 (issue 13): port address fd77::2, fd99::/16 trusted, fd77::/16 allowed (fc00::/7)
A6 = lambda a: socket.inet_pton(socket.AF_INET6, a)
ME6 = "fd77::2"
def ip6(payload, src, nh=17, dst=ME6, hops=64):
    return struct.pack("!IHBB", 6 << 28, len(payload), nh, hops) + A6(src) + A6(dst) + payload
def l4sum6(src, dst, nh, d):
    return csum(A6(src) + A6(dst) + struct.pack("!IxxxB", len(d), nh) + d)
def udp6(payload, src, sport=40000, dst=ME6):
    h = struct.pack("!HHHH", sport, 4242, 8 + len(payload), 0)
    c = l4sum6(src, dst, 17, h + payload) or 0xffff
    return h[:6] + struct.pack("!H", c) + payload
def icmp6(body, src, dst=ME6):
    c = l4sum6(src, dst, 58, body[:2] + b"\0\0" + body[4:])
    return body[:2] + struct.pack("!H", c) + body[4:]
def eth6(p, dst=PMAC): return dst + CMAC + b"\x86\xdd" + p
for src, tag in (("fd77::1", "untrusted"), ("fd99::1", "trusted")):
    put(f"v6-id-{tag}", eth6(ip6(udp6(req(1, 1, 8), src), src)))
    put(f"v6-list181-{tag}", eth6(ip6(udp6(req(2, 181, 0), src), src)))
    put(f"v6-range-{tag}", eth6(ip6(udp6(req(3, 5000, 36), src), src)))
    put(f"v6-info-{tag}", eth6(ip6(udp6(req(4, 0, 32), src), src)))
put("v6-echo", eth6(ip6(icmp6(bytes([128, 0, 0, 0, 0, 1, 0, 1]) + b"ping" * 8, "fd77::1"),
                        "fd77::1", nh=58)))
SNM = "ff02::1:ff00:2"
SNM_MAC = bytes.fromhex("3333ff000002")
ns = bytes([135, 0, 0, 0, 0, 0, 0, 0]) + A6(ME6) + bytes([1, 1]) + CMAC
put("v6-ns", eth6(ip6(icmp6(ns, "fe80::1", SNM), "fe80::1", nh=58, dst=SNM, hops=255), SNM_MAC))
ns0 = bytes([135, 0, 0, 0, 0, 0, 0, 0]) + A6(ME6)
put("v6-ns-dad", eth6(ip6(icmp6(ns0, "::", SNM), "::", nh=58, dst=SNM, hops=255), SNM_MAC))
put("v6-ns-unicast", eth6(ip6(icmp6(ns0, "fd77::1"), "fd77::1", nh=58, hops=255)))
put("v6-ns-hop254", eth6(ip6(icmp6(ns, "fe80::1", SNM), "fe80::1", nh=58, dst=SNM, hops=254),
                         SNM_MAC))
put("v6-udp-zero-cksum", eth6(ip6(udp6(req(1, 1, 8), "fd77::1")[:6] + b"\0\0" +
                                  udp6(req(1, 1, 8), "fd77::1")[8:], "fd77::1")))
put("v6-hop-by-hop", eth6(ip6(bytes([17, 0]) + bytes(6) + udp6(req(1, 1, 8), "fd77::1"),
                              "fd77::1", nh=0)))
put("v6-fragment", eth6(ip6(struct.pack("!BxHI", 17, 1, 7) + udp6(req(1, 1, 8), "fd77::1"),
                            "fd77::1", nh=44)))
put("v6-denied", eth6(ip6(udp6(req(1, 1, 8), "2001:db8::1"), "2001:db8::1")))
put("v6-fixup-all", eth6(ip6(udp6(req(2, 3, 24), "fd77::1"), "fd77::1")), how=0x17)
put("v6-rate-slip", eth6(ip6(udp6(req(2, 3, 24), "fd77::1"), "fd77::1")), charge=9)
