# SPDX-License-Identifier: BSD-3-Clause
"""The Python caller of scripts/drill.sh (issue 49): one flakewire.Client (the
public API) shared by two threads, one calling next() and one get() (one round
trip), each at a fixed rate for a bounded time, one line per call on stdout:
    WALL_S MODE LATENCY_US ok|err [MESSAGE]
WALL_S is the call's start (Unix seconds, 6 decimals). A call late on its slot
does not make up the missed ones.

usage: drill.py SERVERS RATE SECONDS TIMEOUT_MS (0: the client's default)"""
import sys
import threading
import time

import flakewire


def main():
    if len(sys.argv) != 5:
        print("usage: drill.py SERVERS RATE SECONDS TIMEOUT_MS", file=sys.stderr)
        sys.exit(2)
    servers = sys.argv[1].split(",")
    rate, secs, tmo = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    if not (1 <= rate <= 10000 and 1 <= secs <= 600 and tmo >= 0):
        print("drill.py: bad arguments", file=sys.stderr)
        sys.exit(2)
    c = flakewire.Client(servers, timeout=tmo / 1000) if tmo else flakewire.Client(servers)
    lines = []
    lock = threading.Lock()

    def run(name, call):
        period = 1 / rate
        start = time.monotonic()
        slot = start
        for _ in range(int(rate * secs) + 1):
            if time.monotonic() >= start + secs:
                break
            d = slot - time.monotonic()
            if d > 0:
                time.sleep(d)
            w = time.time()
            t0 = time.monotonic()
            try:
                call()
                res = "ok"
            except Exception as e:  # every error of the client is a failed call
                res = "err " + (str(e) or type(e).__name__).replace("\n", " ")
            lat = (time.monotonic() - t0) * 1e6
            with lock:
                lines.append("%.6f %s %.0f %s\n" % (w, name, lat, res))
            slot += period
            now = time.monotonic()
            if slot < now:
                slot = now

    ts = [threading.Thread(target=run, args=("next", c.next)),
          threading.Thread(target=run, args=("get", c.get))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    sys.stdout.write("".join(lines))
    sys.stdout.flush()
    c.close()


main()
