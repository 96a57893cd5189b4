# SPDX-License-Identifier: BSD-3-Clause
"""The consumer program of tests/clients/consumer.sh (Python): IDs through
each call, kill -9 of the first responder, failover figures, close()."""
import os
import signal
import sys
import time

import flakewire


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def timed(*servers):
    """Milliseconds one get() takes from a client of servers (defaults)."""
    with flakewire.Client(list(servers)) as c:
        t = time.monotonic()
        c.get()
        return (time.monotonic() - t) * 1000


a, b = os.environ["FW_A"], os.environ["FW_B"]
c = flakewire.Client([a, b])
ids = [c.get()] + [c.next() for _ in range(1000)]
if len(c.uuid7(5)) != 5:
    fail("uuid7(5)")
os.kill(int(os.environ["FW_A_PID"]), signal.SIGKILL)
worst = 0.0
for _ in range(3000):
    t = time.monotonic()
    ids.append(c.next())
    worst = max(worst, time.monotonic() - t)
ids.append(c.get())
layout = c.layout
last = {}
if len(set(ids)) != len(ids):
    fail("duplicate IDs")
for i in ids:
    p = layout.decode(i)
    w = (p.datacenter, p.worker)
    if i <= last.get(w, 0):
        fail(f"ID {i} of worker {p.worker} not above {last[w]}")
    last[w] = i
if len(last) != 2:
    fail(f"IDs from {len(last)} workers, want 2 (A then B)")
c.close()
for call in (c.next, c.get):
    try:
        call()
        fail(f"{call.__name__} after close() succeeded")
    except flakewire.ClosedError:
        pass
print("FAILOVER python dead_port_ms=%.1f silent_host_ms=%.1f after_kill9_worst_call_ms=%.1f" % (
    timed(os.environ["FW_DEAD"], b), timed(os.environ["FW_SILENT"], b), worst * 1000))
print(f"OK python: {len(ids)} unique IDs increasing per worker, 5 UUIDv7, closed after close()")
