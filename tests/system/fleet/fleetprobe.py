#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Asks a responder for IDs from many source ports (so that every worker
thread or lcore behind SO_REUSEPORT / RSS answers) and reports what came back.

  fleetprobe.py --server H:P [--sockets N] [--rounds R] [--count K]
                [--ids FILE] [--append] [--worker-bits W] [--seq-bits S]
Prints one summary line:  ok=A no_lease=B retry=C unsafe=U other=D lost=E workers=W1,W2
(unsafe: CLOCK_UNSAFE replies)
and with --ids appends 'worker id' lines to FILE (every ID of every OK reply).
Bounded: N sockets x R rounds requests, 0.3 s timeout each. Exit 0 always
(the test asserts on the summary).
"""
import argparse
import socket
import struct

HDR = struct.Struct(">HBBBBHQHHI")
NAMES = {0: "ok", 3: "retry", 5: "unsafe", 6: "no_lease"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--sockets", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--ids")
    ap.add_argument("--worker-bits", type=int, default=10)
    ap.add_argument("--seq-bits", type=int, default=12)
    a = ap.parse_args()
    host, port = a.server.rsplit(":", 1)
    server = (host, int(port))
    socks = []
    for _ in range(a.sockets):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", 0))
        s.settimeout(0.3)
        socks.append(s)
    counts = {"ok": 0, "no_lease": 0, "retry": 0, "unsafe": 0, "other": 0, "lost": 0}
    workers = set()
    out = open(a.ids, "a") if a.ids else None
    tag = 1
    for _ in range(a.rounds):
        for s in socks:
            tag += 1
            req = HDR.pack(0x464B, 1, 2, 0, 0, a.count, tag, 0, 0, 0) + bytes(8 * a.count)
            s.sendto(req, server)
            try:
                while True:
                    data, _ = s.recvfrom(4096)
                    f = HDR.unpack_from(data)
                    if f[6] == tag:
                        break
            except socket.timeout:
                counts["lost"] += 1
                continue
            st, n, worker = f[3], f[5], f[8]
            counts[NAMES.get(st, "other")] += 1
            if st != 0:
                continue
            ids = struct.unpack_from(">%dQ" % n, data, 24)
            for i in ids:
                w = (i >> a.seq_bits) & ((1 << a.worker_bits) - 1)
                workers.add(w)
                if out:
                    out.write("%d %d\n" % (w, i))
    if out:
        out.close()
    print("ok=%d no_lease=%d retry=%d unsafe=%d other=%d lost=%d workers=%s" % (
        counts["ok"], counts["no_lease"], counts["retry"], counts["unsafe"], counts["other"],
        counts["lost"],
        ",".join(str(w) for w in sorted(workers))))


main()
