#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Minimal flakewire protocol client for the system tests (stdlib only).

Speaks version 1 of lib/wire/PROTOCOL.md: 24-byte big-endian header
(magic "FK", version, op, status, flags, count, tag, datacenter, worker,
retry_after_us), requests padded so a full reply is never larger.

  wire_client.py get   --server H:P [--op id|list|range] [--count N] [--repeat R]
                       [--sports P1,P2,...]   prints one ID per line
  wire_client.py info  --server H:P           prints key=value lines
  wire_client.py raw   --server H:P HEX [--expect-none]  sends a raw payload
Every request is retried a bounded number of times (timeouts, RETRY_AFTER,
CLOCK_UNSAFE); the exit status is 1 when one never got an OK answer.
"""
import argparse
import os
import socket
import struct
import sys
import time

MAGIC = 0x464B
HDR = struct.Struct(">HBBBBHQHHI")
OPS = {"id": 1, "list": 2, "range": 3, "info": 4}
ST_OK, ST_RETRY, ST_UNSAFE = 0, 3, 5
STATUS = ["ok", "bad-request", "bad-version", "retry-after", "refused", "clock-unsafe"]
INFO = struct.Struct(">QBBBBBBHHHIq")


def request_size(op, count):
    if op == 1:
        return 24 + 8
    if op == 2:
        return 24 + 8 * count
    if op == 3:
        return 24 + 12 * min((count + 4095) // 4096 + 1, 16)
    return 24 + 32


def encode(op, count, tag, version=1, pad=True):
    h = HDR.pack(MAGIC, version, op, 0, 0, count, tag, 0, 0, 0)
    n = request_size(op, count) if pad else 24
    return h + bytes(max(0, n - 24))


def decode(data):
    if len(data) < 24:
        raise ValueError("short reply")
    magic, ver, op, st, flags, count, tag, dc, worker, retry = HDR.unpack_from(data)
    if magic != MAGIC or not op & 0x80:
        raise ValueError("not a reply")
    r = dict(op=op & 0x7F, status=st, flags=flags, count=count, tag=tag, datacenter=dc,
             worker=worker, retry_after_us=retry, ids=[], ranges=[], info=None)
    body = data[24:]
    if st != ST_OK:
        return r
    if r["op"] in (1, 2):
        r["ids"] = list(struct.unpack_from(">%dQ" % count, body))
    elif r["op"] == 3:
        for i in range(count):
            first, n = struct.unpack_from(">QI", body, 12 * i)
            r["ranges"].append((first, n))
    elif r["op"] == 4:
        f = INFO.unpack_from(body)
        r["info"] = dict(epoch_ms=f[0], time_bits=f[1], dc_bits=f[2], worker_bits=f[3],
                         seq_bits=f[4], version_min=f[5], version_max=f[6], list_max=f[7],
                         ranges_max=f[8], max_borrow_ms=f[9], clock_offset_ns=f[11])
    return r


SENT = [0]


def exchange(sock, server, payload, tag, timeout=0.5, tries=1000, deadline_s=15.0):
    """Sends until an OK reply with our tag arrives; returns it or the last reply.
    Bounded by @tries sends and @deadline_s seconds."""
    last = None
    end = time.monotonic() + deadline_s
    for _ in range(tries):
        if time.monotonic() > end:
            break
        sock.sendto(payload, server)
        SENT[0] += 1
        r = None
        sock.settimeout(timeout)
        try:
            while True:
                data, _ = sock.recvfrom(2048)
                r = decode(data)
                if r["tag"] == tag:
                    break
        except socket.timeout:
            continue
        last = r
        if r["status"] in (ST_RETRY, ST_UNSAFE):
            time.sleep(max(r["retry_after_us"] / 1e6, 0.02))
            continue
        return r
    return last


def parse_server(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["get", "info", "raw"])
    ap.add_argument("hex", nargs="?")
    ap.add_argument("--server", default="10.77.0.2:4242")
    ap.add_argument("--op", default="id", choices=["id", "list", "range"])
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--sports", default="0", help="comma list of source ports (0: any)")
    ap.add_argument("--workers", action="store_true", help="print 'worker id' pairs")
    ap.add_argument("--expect-none", action="store_true")
    ap.add_argument("--check-time", type=float, default=-1,
                    help="fail unless every ID's time is within this many ms of the "
                         "system clock around its request")
    ap.add_argument("--sent", action="store_true", help="print sent=N on stderr")
    a = ap.parse_args()
    server = parse_server(a.server)
    socks = []
    for p in a.sports.split(","):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", int(p)))
        socks.append(s)
    tag = int.from_bytes(os.urandom(4), "big") << 16

    if a.cmd == "raw":
        socks[0].sendto(bytes.fromhex(a.hex), server)
        socks[0].settimeout(0.5)
        try:
            data, _ = socks[0].recvfrom(2048)
        except socket.timeout:
            print("no reply")
            return 0 if a.expect_none else 1
        print("reply", data.hex())
        return 1 if a.expect_none else 0

    if a.cmd == "info":
        r = exchange(socks[0], server, encode(4, 1, tag), tag)
        if not r or r["status"] != ST_OK:
            print("info failed: %s" % (r and STATUS[r["status"]]), file=sys.stderr)
            return 1
        for k, v in r["info"].items():
            print("%s=%s" % (k, v))
        print("worker=%d" % r["worker"])
        print("datacenter=%d" % r["datacenter"])
        print("flags=%d" % r["flags"])
        return 0

    op = OPS[a.op]
    layout = None
    if a.check_time >= 0:
        tag += 1
        r = exchange(socks[0], server, encode(4, 1, tag), tag)
        if not r or r["status"] != ST_OK:
            print("info failed", file=sys.stderr)
            return 1
        layout = r["info"]
    for i in range(a.repeat):
        s = socks[i % len(socks)]
        tag += 1
        t0 = time.time() * 1000
        r = exchange(s, server, encode(op, a.count, tag), tag)
        t1 = time.time() * 1000
        if not r or r["status"] != ST_OK:
            print("get failed: %s" % (r and STATUS[r["status"]]), file=sys.stderr)
            return 1
        ids = list(r["ids"])
        for first, n in r["ranges"]:
            ids.extend(range(first, first + n))
        if layout:
            shift = 63 - layout["time_bits"]
            for x in ids:
                ms = (x >> shift) + layout["epoch_ms"]
                if not t0 - a.check_time <= ms <= t1 + a.check_time:
                    print("ID %d: time %d ms not within %.0f ms of [%.0f, %.0f]"
                          % (x, ms, a.check_time, t0, t1), file=sys.stderr)
                    return 1
        for x in ids:
            print("%d %d" % (r["worker"], x) if a.workers else x)
    if a.sent:
        print("sent=%d" % SENT[0], file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
