#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""IDs/s through Client.next() from THREADS callers for SECONDS, after a
warm-up of 0.3 s with the same threads.
usage: bench.py SERVER THREADS SECONDS [tuned|defaults|baseline]   (prints "ids_per_s N")
tuned (the default): trusted, prefetch 4096, low water 1024; defaults: the
library's; baseline: no client, an in-process itertools.count() (atomic under
the GIL), the ceiling of any hand-out."""

import itertools
import pathlib
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

import flakewire  # noqa: E402


def main() -> int:
    server, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else "tuned"
    opts = dict(trusted=True, prefetch=4096, low_water=1024) if mode == "tuned" else {}
    with flakewire.Client([server], **opts) as c:
        c.next()
        take = next if mode == "baseline" else None
        counter = itertools.count()

        def measure(secs):
            counts = [0] * threads
            stop = time.monotonic() + secs

            def run(k):
                n = 0
                call = (lambda: take(counter)) if take else c.next
                while time.monotonic() < stop:
                    for _ in range(256):
                        call()
                    n += 256
                counts[k] = n

            t0 = time.monotonic()
            ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return sum(counts) / (time.monotonic() - t0)

        measure(0.3)  # warm-up
        print(f"ids_per_s {measure(seconds):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
