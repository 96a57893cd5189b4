#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Probe a responder that is (re)starting: sends one GET (op id) every
INTERVAL ms from now on, and on the first OK reply prints one JSON object:
the wall time of that reply (ns, time.time_ns), its ID, and how many
replies of each status came before it, and the time of the first reply of
any status (first_ns: from then on the responder ran, and refused). Exit 1 when no OK came within
--max-s seconds (the last status seen is printed). Bounded: at most
max_s / interval requests. Stdlib only; speaks wire_client.py's protocol.

  firstok.py --server H:P [--interval-ms 2] [--max-s 10] [--go PATH]
--go: start sending once PATH exists (polled every ms, for at most max_s),
so the test starts the probe before the kill and sends from the exec on.
"""
import argparse
import json
import os
import select
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "flakewire"))
import wire_client as wc  # noqa: E402  (the tests' protocol client)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--interval-ms", type=float, default=2.0)
    ap.add_argument("--max-s", type=float, default=10.0)
    ap.add_argument("--go")
    a = ap.parse_args()
    if a.go:
        until = time.monotonic() + a.max_s
        while not os.path.exists(a.go) and time.monotonic() < until:
            time.sleep(0.001)
    server = wc.parse_server(a.server)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    counts = {}
    sent = 0
    first = 0
    end = time.monotonic() + a.max_s
    tag = 1
    while time.monotonic() < end:
        tag += 1
        try:
            s.sendto(wc.encode(1, 1, tag), server)
            sent += 1
        except OSError:
            pass  # no route yet (the TAP interface is not up): try again
        until = time.monotonic() + a.interval_ms / 1000.0
        while True:
            left = until - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([s], [], [], left)
            if not r:
                break
            try:
                data = s.recv(2048)
            except OSError:
                continue  # ICMP unreachable while nothing listens
            t = time.time_ns()
            try:
                rep = wc.decode(data)
            except ValueError:
                continue
            first = first or t
            name = wc.STATUS[rep["status"]] if rep["status"] < len(wc.STATUS) else str(rep["status"])
            if rep["status"] == wc.ST_OK and rep["ids"]:
                print(json.dumps({"ok_ns": t, "first_ns": first, "id": rep["ids"][0],
                                  "before": counts, "sent": sent}))
                return 0
            counts[name] = counts.get(name, 0) + 1
    print(json.dumps({"ok_ns": 0, "first_ns": first, "before": counts, "sent": sent}))
    return 1


if __name__ == "__main__":
    sys.exit(main())
