#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hostile traffic for test_hostile.sh (stdlib only): real UDP sockets bound
to the extra source addresses the test gives the kernel side of the TAP,
and AF_PACKET for what a socket cannot send (source port 0). Each phase
prints one JSON object; the shell test compares it with the telemetry.

  hostile.py policy IFACE DST_MAC N     denied sources and reflector ports
  hostile.py sizes SRC                  every operation: reply size <= request size
  hostile.py flood SRC N                N requests back to back, then collect

A flood's replies are collected up to a sentinel, not until a quiet
timeout: the responder runs one lcore on one queue, so it answers in the
order it receives, and its replies reach the kernel's sockets in that order.
Once the reply to an ICMP echo sent after the flood is in, so is every
reply to the flood, however long load made the responder pause.
"""
import json
import os
import select
import socket
import struct
import sys
import time

from craft import csum  # the Internet checksum, beside this file

SERVER = ("10.77.0.2", 4242)
HDR = struct.Struct(">HBBBBHQHHI")
ST_OK, ST_RETRY = 0, 3


def req(op, count, pad, version=1, tag=1):
    return HDR.pack(0x464B, version, op, 0, 0, count, tag, 0, 0, 0) + bytes(pad)


def padded(op, count, tag=1):
    if op == 1:
        n = 32
    elif op == 2:
        n = 24 + 8 * count
    elif op == 3:
        n = 24 + 12 * min((count + 4095) // 4096 + 1, 16)
    else:
        n = 56
    return req(op, count, n - 24, tag=tag)


def sock(src, sport=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind((src, sport))
    return s


# Only a hung responder keeps the sentinel's reply away this long.
SENTINEL_WAIT_S = 30.0


def read_now(s, out, stamps=None):
    """Appends to @out the replies already queued on @s, without waiting."""
    s.setblocking(False)
    while True:
        try:
            out.append(s.recv(4096))
        except BlockingIOError:
            break
        if stamps is not None:
            stamps.append(time.monotonic())
    s.setblocking(True)


def collect(s, src, stamps=None):
    """Every reply to the requests sent on @s so far (arrival times into
    @stamps): reads @s until the reply to an ICMP echo sent from @src after
    them is in (see the top), then what is left queued on @s."""
    r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    r.bind((src, 0))
    ident = os.getpid() & 0xFFFF
    echo = struct.pack("!BBHHH", 8, 0, 0, ident, 1) + b"flakewire sentinel"
    r.sendto(echo[:2] + struct.pack("!H", csum(echo)) + echo[4:], (SERVER[0], 0))
    out = []
    deadline = time.monotonic() + SENTINEL_WAIT_S
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            sys.exit("no reply to the sentinel echo within %d s" % SENTINEL_WAIT_S)
        ready, _, _ = select.select([s, r], [], [], left)
        if s in ready:
            read_now(s, out, stamps)
        if r in ready:
            pkt, addr = r.recvfrom(4096)
            ihl = (pkt[0] & 0x0F) * 4
            if (addr[0] == SERVER[0] and len(pkt) >= ihl + 8 and pkt[ihl] == 0 and
                    struct.unpack_from("!H", pkt, ihl + 4)[0] == ident):
                break
    read_now(s, out, stamps)
    r.close()
    return out


def drain(s, wait, stamps=None):
    """Replies until none came for @wait seconds (arrival times into @stamps)."""
    out = []
    s.settimeout(wait)
    while True:
        try:
            out.append(s.recv(4096))
        except socket.timeout:
            return out
        if stamps is not None:
            stamps.append(time.monotonic())


def raw_udp(src_mac, dst_mac, src, sport, payload):
    length = 8 + len(payload)
    ph = socket.inet_aton(src) + socket.inet_aton(SERVER[0]) + struct.pack("!BBH", 0, 17, length)
    c = csum(ph + struct.pack("!HHHH", sport, SERVER[1], length, 0) + payload) or 0xFFFF
    udp = struct.pack("!HHHH", sport, SERVER[1], length, c) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(SERVER[0]))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    frame = dst_mac + src_mac + b"\x08\x00" + ip + udp
    return frame + bytes(max(0, 60 - len(frame)))


def policy(iface, dst_mac, n):
    denied = ["192.0.2.1", "198.51.100.7", "203.0.113.9"]
    reflect = [7, 17, 19, 53, 123, 1900, 11211]
    res = {"denied_sent": 0, "denied_replies": 0, "reflector_sent": 0, "reflector_replies": 0,
           "allowed_sent": 0, "allowed_ok": 0}
    socks = []
    for src in denied:
        s = sock(src)
        socks.append(s)
        for _ in range(n):
            s.sendto(padded(1, 1), SERVER)
            res["denied_sent"] += 1
    for port in reflect:
        s = sock("10.77.0.1", port)
        socks.append(s)
        for _ in range(n):
            s.sendto(padded(1, 1), SERVER)
            res["reflector_sent"] += 1
    # source port 0 cannot be bound: crafted, its would-be reply is caught on port 0 by nobody
    r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    r.bind((iface, 0))
    frame = raw_udp(r.getsockname()[4], bytes.fromhex(dst_mac.replace(":", "")), "10.77.0.1", 0,
                    padded(1, 1))
    for _ in range(n):
        r.send(frame)
        res["reflector_sent"] += 1
    a = sock("100.64.0.1")
    for i in range(n):
        a.sendto(padded(1, 1, tag=i), SERVER)
        res["allowed_sent"] += 1
    for s in socks[:len(denied)]:
        res["denied_replies"] += len(drain(s, 0.3))
    for s in socks[len(denied):]:
        res["reflector_replies"] += len(drain(s, 0.1))
    for d in drain(a, 0.5):
        if len(d) >= 24 and d[4] == ST_OK:
            res["allowed_ok"] += 1
    print(json.dumps(res))


def sizes(src):
    cases = []
    for op, count in ((1, 1), (2, 1), (2, 10), (2, 100), (2, 181), (3, 1), (3, 4096),
                      (3, 5000), (3, 65535), (4, 0)):
        cases.append(("%d/%d padded" % (op, count), padded(op, count)))
        cases.append(("%d/%d bare" % (op, count), req(op, count, 0)))
    cases += [
        ("list 181 jumbo", req(2, 181, 1472 - 24)),
        ("bad version", req(1, 1, 8, version=7)),
        ("bad version bare", req(1, 1, 0, version=7)),
        ("unknown op", req(9, 1, 40)),
        ("count 0", req(2, 0, 40)),
        ("list over max", req(2, 500, 0)),
        ("range 0", req(3, 0, 0)),
    ]
    s = sock(src)
    out = {"cases": [], "violations": [], "capped": None}
    for i, (name, payload) in enumerate(cases):
        tag = 1000 + i
        payload = payload[:8] + struct.pack(">Q", tag) + payload[16:]
        reply = None
        # a busy machine may answer RETRY_AFTER (mark not yet extended): its size
        # is checked too, then the request is sent again, a bounded number of times
        for _ in range(10):
            s.sendto(payload, SERVER)
            for d in drain(s, 0.5):
                if len(d) >= 24 and HDR.unpack_from(d)[6] == tag:
                    reply = d
                    if len(d) > len(payload):
                        out["violations"].append("%s: %d-byte reply to %d bytes" %
                                                 (name, len(d), len(payload)))
            if reply is not None and reply[4] != ST_RETRY:
                break
            time.sleep(0.1)
        if reply is None:
            out["violations"].append("%s: no reply" % name)
            continue
        st, flags, count = reply[4], reply[5], HDR.unpack_from(reply)[5]
        out["cases"].append([name, len(payload), len(reply), st])
        if name == "3/5000 padded":
            ids = sum(struct.unpack_from(">QI", reply, 24 + 12 * k)[1] for k in range(count))
            out["capped"] = {"status": st, "ids": ids, "partial": bool(flags & 0x08)}
    print(json.dumps(out))


def flood(src, n):
    s = sock(src)
    t0 = time.monotonic()
    sent = 0
    for i in range(n):
        s.sendto(padded(1, 1, tag=i), SERVER)
        sent += 1
    elapsed = time.monotonic() - t0
    ok = retry = mark_retry = other = 0
    retry_us = []
    max_len = 0
    stamps = [t0]
    for d in collect(s, src, stamps):
        max_len = max(max_len, len(d))
        if len(d) < 24:
            other += 1
        elif d[4] == ST_OK:
            ok += 1
        elif d[4] == ST_RETRY and HDR.unpack_from(d)[9] <= 10000:
            mark_retry += 1  # the generator's (mark, sequence), not the rate limit's
        elif d[4] == ST_RETRY:
            retry += 1
            retry_us.append(HDR.unpack_from(d)[9])
            if len(d) != 24:
                other += 1
        else:
            other += 1
    # every request was answered or dropped between the first send and the last reply
    print(json.dumps({"sent": sent, "ok": ok, "retry": retry, "mark_retry": mark_retry,
                      "other": other, "elapsed": elapsed, "window": stamps[-1] - t0,
                      "max_reply_len": max_len,
                      "retry_us_min": min(retry_us, default=0),
                      "retry_us_max": max(retry_us, default=0)}))


def main():
    if sys.argv[1] == "policy":
        policy(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "sizes":
        sizes(sys.argv[2])
    elif sys.argv[1] == "flood":
        flood(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit("usage: hostile.py policy|sizes|flood ...")


if __name__ == "__main__":
    main()
