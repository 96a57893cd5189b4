#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""IDs/s through Client.next() from THREADS callers for SECONDS.
usage: bench.py SERVER THREADS SECONDS [tuned|defaults]   (prints "ids_per_s N")
tuned (the default): trusted, prefetch 4096, low water 1024; defaults: the library's."""

import pathlib
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

import flakewire  # noqa: E402


def main() -> int:
    server, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    counts = [0] * threads
    tuned = (sys.argv[4] if len(sys.argv) > 4 else "tuned") == "tuned"
    opts = dict(trusted=True, prefetch=4096, low_water=1024) if tuned else {}
    with flakewire.Client([server], **opts) as c:
        c.next()
        stop = time.monotonic() + seconds

        def run(k):
            n = 0
            while time.monotonic() < stop:
                for _ in range(256):
                    c.next()
                n += 256
            counts[k] = n

        t0 = time.monotonic()
        ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print(f"ids_per_s {sum(counts) / (time.monotonic() - t0):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
