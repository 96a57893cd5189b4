# SPDX-License-Identifier: BSD-3-Clause
"""Live: the client against flakewire on TAP and a flakesock backup, inside
the namespace tests/clients/live.sh tap made (FW_TAP, FW_TAP_BACKUP,
FW_TAP_PID)."""

import os
import pathlib
import signal
import sys
import threading
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from flakewire import Client  # noqa: E402

if "FW_TAP" not in os.environ:
    pytest.skip("run by tests/clients/live.sh tap", allow_module_level=True)


def take(c, threads, each):
    out = [[] for _ in range(threads)]
    errors = []

    def run(k):
        try:
            for _ in range(each):
                out[k].append(c.next())
        except Exception as e:  # noqa: BLE001 - a thread's error fails the test below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    return [i for o in out for i in o]


def test_uuid7_over_tap():
    """Runs before the failover test, which stops flakewire."""
    from flakewire import uuid7_parts
    with Client([os.environ["FW_TAP"]]) as c:  # the default deadline (1 s)
        us = [c.next_uuid7() for _ in range(300)]
        assert len(set(us)) == 300
        assert {uuid7_parts(u, c.layout).worker for u in us} == {21}


def test_concurrent_unique_retry_after_then_failover():
    # the default deadline (1 s): timeout is a call's deadline since issue 49
    with Client([os.environ["FW_TAP"], os.environ["FW_TAP_BACKUP"]],
                prefetch=256, low_water=64, max_age_ms=200) as c:
        first = take(c, 4, 1000)
        assert len(set(first)) == 4000
        assert c.layout.seq_bits == 4
        # RETRY_AFTER moves a refill to the backup at once (issue 49): both may serve
        workers = {c.layout.decode(i).worker for i in first}
        assert 21 in workers and workers <= {21, 22}, workers
        assert c.stats["retry_after"] > 0, c.stats
        os.kill(int(os.environ["FW_TAP_PID"]), signal.SIGKILL)  # see live.sh: FW_TAP_PID
        # max_age_ms 200: the IDs the pool still holds from flakewire (a refill
        # grows while callers drain it) expire, so the next must come from the backup
        time.sleep(0.6)
        second = take(c, 4, 500)
        ids = first + second
        assert len(set(ids)) == len(ids) == 6000
        assert 22 in {c.layout.decode(i).worker for i in second}
        # flakewire is dead and its buffered IDs expired: every later ID is the backup's
        # (reached by a hedge or a resend: no status, so no "failovers" count)
        assert {c.layout.decode(i).worker for i in second} == {22}

