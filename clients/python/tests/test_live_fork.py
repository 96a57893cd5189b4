# SPDX-License-Identifier: BSD-3-Clause
"""Live: a client in a process that forks (issue 48), against flakesock on
loopback (FW_TRUSTED, started by tests/clients/live.sh loop). Children made
by os.fork() and by multiprocessing (fork start method) after the parent
took IDs, under load and while refills run: every child hands out all its
IDs (a child that hangs is killed after KID_WAIT s and fails the test) and
no ID appears twice among every process's."""

import multiprocessing
import os
import pathlib
import queue
import sys
import threading
import time

import pytest
from forkkids import KID_WAIT, PER_PROC, assert_unique, collect, collect_all, fork_kid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from flakewire import Client  # noqa: E402

if "FW_TRUSTED" not in os.environ:
    pytest.skip("run by tests/clients/live.sh loop", allow_module_level=True)
TRUSTED = os.environ["FW_TRUSTED"]


class Load:
    """Threads taking IDs from c until stop(), at most ~1 M a second each
    (below flakesock's 4,096 a millisecond: no RETRY_AFTER)."""

    def __init__(self, c, threads=2):
        self.c, self.done, self.ids, self.errs = c, threading.Event(), [], []
        self.ts = [threading.Thread(target=self.run) for _ in range(threads)]
        for t in self.ts:
            t.start()

    def run(self):
        mine = []
        try:
            while not self.done.is_set():
                mine.append(self.c.next())
                if len(mine) % 1000 == 0:
                    time.sleep(0.001)
        except Exception as e:  # noqa: BLE001 - reported by stop()
            self.errs.append(e)
        self.ids.extend(mine)

    def stop(self):
        self.done.set()
        for t in self.ts:
            t.join(10)
        assert self.errs == []
        return self.ids


def test_os_fork_probe():
    """The issue's probe: next(), then three os.fork() children and the
    parent take 300 IDs each (on the code before the fix, 300 of the 1,200
    were handed out twice)."""
    with Client([TRUSTED]) as c:
        ids = [c.next()]
        kids = [fork_kid(c) for _ in range(3)]
        ids += [c.next() for _ in range(PER_PROC - 1)]
        ids += collect_all(kids)
    assert_unique(ids)


def test_os_fork_children_under_load():
    """The issue's probe under load: next(), then two threads keep taking
    IDs while three os.fork() children and the parent take 300 each."""
    with Client([TRUSTED]) as c:
        ids = [c.next()]
        load = Load(c)
        kids = [fork_kid(c) for _ in range(3)]
        ids += [c.next() for _ in range(PER_PROC - 1)]
        ids += load.stop()
        ids += collect_all(kids)
    assert_unique(ids)


def test_os_fork_while_refills_run():
    """A thread keeps the refills going (prefetch 16, LIST: at most 181 IDs
    a round trip, so a refill thread nearly always holds the client's
    network lock) while the parent forks 20 children one after another."""
    with Client([TRUSTED], prefetch=16, low_water=8, use_range=False) as c:
        ids = [c.next()]
        load = Load(c, threads=1)
        for _ in range(20):
            ids += collect(*fork_kid(c))
        ids += load.stop()
    assert_unique(ids)


def mp_take(c, q):
    try:
        q.put([c.next() for _ in range(PER_PROC)])
    except BaseException as e:  # noqa: BLE001 - the parent reports it
        q.put(repr(e))


def test_multiprocessing_fork_children():
    """multiprocessing with the fork start method: the client is inherited
    by three Process children (and a Pool's workers), none hands out an ID
    of the parent's buffer or of a sibling's."""
    global _pool_client
    ctx = multiprocessing.get_context("fork")
    with Client([TRUSTED]) as c:
        ids = [c.next()]
        load = Load(c)
        q = ctx.Queue()
        ps = [ctx.Process(target=mp_take, args=(c, q)) for _ in range(3)]
        try:
            for p in ps:
                p.start()
            ids += [c.next() for _ in range(PER_PROC - 1)]
            for _ in ps:
                try:
                    g = q.get(timeout=KID_WAIT)
                except queue.Empty:
                    pytest.fail(f"a child hung: no IDs within {KID_WAIT} s")
                assert isinstance(g, list) and len(g) == PER_PROC, g
                ids += g
        finally:
            for p in ps:
                p.join(KID_WAIT)
                if p.is_alive():
                    p.kill()
                    p.join()
        assert [p.exitcode for p in ps] == [0, 0, 0]
        _pool_client = c
        with ctx.Pool(3) as pool:  # terminates its workers on the way out
            try:
                for g in pool.map_async(_pool_take, range(6), chunksize=1).get(KID_WAIT):
                    assert len(g) == PER_PROC
                    ids += g
            except multiprocessing.TimeoutError:
                pytest.fail(f"a Pool worker hung: no IDs within {KID_WAIT} s")
        ids += load.stop()
    assert_unique(ids)


_pool_client = None


def _pool_take(_):
    return [_pool_client.next() for _ in range(PER_PROC)]
