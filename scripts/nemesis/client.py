#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The nemesis run's client (scripts/nemesis.sh): runs inside one node's
network namespace and asks that node's responder for IDs, one request at a
time, from several source ports (so every worker thread or lcore behind
SO_REUSEPORT or RSS answers), mixing ID, LIST, RANGE and UUID7 at random
(seeded), and logs every reply, IDs included, to --out.

  scripts/nemesis/client.py --server H:P --out FILE --seed S --seconds T
                    [--rate R] [--sockets K] [--stop FILE]

Every request is padded to the size of its full answer (lib/wire/PROTOCOL.md
section 6), so the client needs no trusted address. It stops after --seconds,
at SIGTERM, or once --stop exists; the log is flushed every 0.5 s.

Log format, one line per request, times in unix microseconds:
  L EPOCH_MS DC_BITS WORKER_BITS SEQ_BITS      the layout (INFO), first line
  R T_SEND T_RECV OP STATUS WORKER FLAGS RUNS  a reply
  T T_SEND T_RECV OP                           no reply within the timeout
  X T_SEND T_RECV OP WHY                       a reply that breaks the protocol
OP: I (ID), L (LIST), R (RANGE), U (UUID7). STATUS: the reply's status code.
RUNS (status 0 only): FIRST+N,FIRST+N,... the IDs of the reply as runs of
consecutive integers in the order received; a UUIDv7 stands for the
Snowflake ID of its (ms, counter, datacenter, worker) in the same layout, so
Snowflake IDs and UUIDv7 share one key space and one uniqueness check.
"""
import argparse
import os
import random
import select
import signal
import socket
import struct
import sys
import time

HDR = struct.Struct(">HBBBBHQHHI")
MAGIC = 0x464B
OP_ID, OP_LIST, OP_RANGE, OP_INFO, OP_UUID7 = 1, 2, 3, 4, 5
OP_CH = {OP_ID: "I", OP_LIST: "L", OP_RANGE: "R", OP_UUID7: "U"}
TIMEOUT_S = 0.1

stop = False


def on_term(_sig, _frm):
    global stop
    stop = True


def now_us():
    return time.time_ns() // 1000


class Layout:
    def __init__(self, epoch_ms, dc_bits, worker_bits, seq_bits):
        self.epoch_ms, self.dc, self.w, self.s = epoch_ms, dc_bits, worker_bits, seq_bits

    def key_of_uuid(self, u, worker):
        """The Snowflake ID of a UUIDv7's (ms, counter, dc, worker), or a reason string."""
        v = int.from_bytes(u, "big")
        if (v >> 76) & 0xF != 7 or (v >> 62) & 0x3 != 2:
            return "uuid version/variant"
        ms = v >> 80
        p = ((v >> 64) & 0xFFF) << 62 | (v & ((1 << 62) - 1))  # 74 bits
        sh = 74 - self.s
        counter = (p >> sh) & ((1 << self.s) - 1)
        sh -= self.dc
        dc = (p >> sh) & ((1 << self.dc) - 1) if self.dc else 0
        sh -= self.w
        w = (p >> sh) & ((1 << self.w) - 1)
        sh -= 8
        if (p >> sh) & 0xFF != 0xF7:
            return "uuid tag"
        if w != worker:
            return "uuid worker %d in a reply from worker %d" % (w, worker)
        t = ms - self.epoch_ms
        return ((t << (self.dc + self.w + self.s)) | (dc << (self.w + self.s)) |
                (w << self.s) | counter)

    def worker_of(self, i):
        return (i >> self.s) & ((1 << self.w) - 1)


def runs_of(keys):
    out = []
    for k in keys:
        if out and k == out[-1][0] + out[-1][1]:
            out[-1][1] += 1
        else:
            out.append([k, 1])
    return out


def request(op, count, tag, seq_bits):
    if op == OP_ID:
        pad = 8
    elif op == OP_LIST:
        pad = 8 * count
    elif op == OP_RANGE:
        per = 1 << seq_bits
        pad = 12 * min((count + per - 1) // per + 1, 16)
    elif op == OP_UUID7:
        pad = 16 * count
    else:
        pad = 32
    return HDR.pack(MAGIC, 1, op, 0, 0, count, tag, 0, 0, 0) + bytes(pad)


def parse(op, data, lay):
    """(status, worker, flags, runs or None, error or None) of one reply."""
    f = HDR.unpack_from(data)
    st, flags, n, worker = f[3], f[4], f[5], f[8]
    if st != 0:
        return st, worker, flags, None, None if len(data) == 24 else "error reply length"
    keys = []
    if op in (OP_ID, OP_LIST):
        if len(data) != 24 + 8 * n:
            return st, worker, flags, None, "length %d for %d IDs" % (len(data), n)
        keys = list(struct.unpack_from(">%dQ" % n, data, 24))
    elif op == OP_RANGE:
        if len(data) != 24 + 12 * n:
            return st, worker, flags, None, "length %d for %d ranges" % (len(data), n)
        runs = []
        for i in range(n):
            first, cnt = struct.unpack_from(">QI", data, 24 + 12 * i)
            if cnt == 0:
                return st, worker, flags, None, "empty range"
            runs.append([first, cnt])
        for r in runs:
            if lay.worker_of(r[0]) != worker or lay.worker_of(r[0] + r[1] - 1) != worker:
                return st, worker, flags, None, "range outside worker %d" % worker
        return st, worker, flags, runs, None
    elif op == OP_UUID7:
        if len(data) != 24 + 16 * n:
            return st, worker, flags, None, "length %d for %d UUIDs" % (len(data), n)
        for i in range(n):
            k = lay.key_of_uuid(data[24 + 16 * i:40 + 16 * i], worker)
            if isinstance(k, str):
                return st, worker, flags, None, k
            keys.append(k)
    for k in keys:
        if lay.worker_of(k) != worker:
            return st, worker, flags, None, "ID %d outside worker %d" % (k, worker)
    return st, worker, flags, runs_of(keys), None


def exchange(sock, server, req, tag, op):
    """Sends @req; the reply with @tag and op|0x80, or None after TIMEOUT_S."""
    end = time.monotonic() + TIMEOUT_S
    try:
        sock.sendto(req, server)
    except OSError:  # no route while a TAP is gone (its flakewire restarts)
        time.sleep(TIMEOUT_S)
        return None
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            return None
        try:
            data, src = sock.recvfrom(2048)
        except OSError:
            continue
        if src != server or len(data) < 24:
            continue
        f = HDR.unpack_from(data)
        if f[0] == MAGIC and f[2] == (op | 0x80) and f[6] == tag:
            return data


def get_layout(socks, server, deadline, rng):
    tag = rng.getrandbits(63)
    while not stop and time.monotonic() < deadline and not stop_file():
        tag += 1
        d = exchange(socks[0], server, request(OP_INFO, 1, tag, 12), tag, OP_INFO)
        if d is not None and len(d) == 56 and HDR.unpack_from(d)[3] == 0:
            epoch, tb, db, wb, sb = struct.unpack_from(">QBBBB", d, 24)
            return Layout(epoch, db, wb, sb)
        time.sleep(0.05)
    return None


STOP_FILE = None


def stop_file():
    return STOP_FILE is not None and os.path.exists(STOP_FILE)


def main():
    global STOP_FILE
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--rate", type=float, default=200.0, help="requests per second at most")
    ap.add_argument("--sockets", type=int, default=8)
    ap.add_argument("--stop")
    a = ap.parse_args()
    STOP_FILE = a.stop
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    rng = random.Random(a.seed)
    host, port = a.server.rsplit(":", 1)
    server = (host, int(port))
    socks = []
    for _ in range(max(1, a.sockets)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", 0))
        s.setblocking(False)
        socks.append(s)
    deadline = time.monotonic() + a.seconds
    out = open(a.out, "w", buffering=1 << 16)
    lay = get_layout(socks, server, deadline, rng)
    if lay is None:
        out.write("# no INFO reply\n")
        out.close()
        return 1
    out.write("L %d %d %d %d\n" % (lay.epoch_ms, lay.dc, lay.w, lay.s))
    gap = 1.0 / a.rate if a.rate > 0 else 0.0
    tag = rng.getrandbits(62)
    last_flush = time.monotonic()
    i = 0
    while not stop and time.monotonic() < deadline:
        t_next = time.monotonic() + gap
        x = rng.random()
        if x < 0.3:
            op, count = OP_ID, 1
        elif x < 0.55:
            op, count = OP_LIST, rng.randint(1, 181)
        elif x < 0.75:
            op, count = OP_RANGE, rng.randint(1, 8192)
        else:
            op, count = OP_UUID7, rng.randint(1, 90)
        tag += 1
        sock = socks[i % len(socks)]
        i += 1
        t0 = now_us()
        d = exchange(sock, server, request(op, count, tag, lay.s), tag, op)
        t1 = now_us()
        if d is None:
            out.write("T %d %d %s\n" % (t0, t1, OP_CH[op]))
        else:
            st, worker, flags, runs, err = parse(op, d, lay)
            if err:
                out.write("X %d %d %s %s\n" % (t0, t1, OP_CH[op], err.replace(" ", "_")))
            else:
                out.write("R %d %d %s %d %d %d %s\n" % (
                    t0, t1, OP_CH[op], st, worker, flags,
                    ",".join("%d+%d" % (f, n) for f, n in runs) if runs else "-"))
        m = time.monotonic()
        if m - last_flush > 0.5:
            out.flush()
            last_flush = m
            if stop_file():
                break
        if t_next > m:
            time.sleep(t_next - m)
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
