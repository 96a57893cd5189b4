# SPDX-License-Identifier: BSD-3-Clause
"""Live: the client against flakesock responders on loopback started by
tests/clients/live.sh (FW_TRUSTED, FW_UNTRUSTED, FW_FEWSEQ, FW_DEAD)."""

import asyncio
import os
import pathlib
import sys
import threading

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from flakewire import Client, StatusError, wire  # noqa: E402

if "FW_TRUSTED" not in os.environ:
    pytest.skip("run by tests/clients/live.sh loop", allow_module_level=True)
TRUSTED, UNTRUSTED = os.environ["FW_TRUSTED"], os.environ["FW_UNTRUSTED"]
FEWSEQ, DEAD = os.environ["FW_FEWSEQ"], os.environ["FW_DEAD"]


def test_info_and_one_shot_calls():
    with Client([TRUSTED]) as c:
        rep = c.info()
        i = rep.info
        assert (rep.worker, i.time_bits, i.dc_bits, i.worker_bits, i.seq_bits) == (11, 41, 0, 10, 12)
        assert i.epoch_ms == 1767225600000
        a = c.get()
        assert c.layout.decode(a).worker == 11
        ids = c.get_n(500)
        assert len(ids) == 500 and ids == sorted(set(ids)) and ids[0] > a
        runs = c.get_range(5000)
        assert 0 < sum(n for _, n in runs) <= 5000 and runs[0][0] > ids[-1]


def test_untrusted_padded_gets_full_answers():
    with Client([UNTRUSTED]) as c:
        ids = c.get_n(181)
        assert len(ids) == 181 and c.last_reply.count == 181
        assert not c.last_reply.flags & wire.F_PARTIAL
        assert c.layout.decode(ids[0]).worker == 12
        assert sum(n for _, n in c.get_range(4096)) >= 1
        assert c.info().info.epoch_ms == 1767225600000


def test_untrusted_unpadded_is_refused():
    with Client([UNTRUSTED], trusted=True) as c:
        with pytest.raises(StatusError) as e:
            c.get()
        assert e.value.status == wire.ST_REFUSED


def test_concurrent_next_unique_and_valid():
    with Client([TRUSTED], prefetch=512, low_water=128) as c:
        out = [[] for _ in range(4)]

        def run(k):
            for _ in range(2500):
                out[k].append(c.next())

        ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        ids = [i for o in out for i in o]
        assert len(ids) == 10000 and len(set(ids)) == 10000
        for o in out:
            assert o == sorted(o)  # one worker: increasing per caller
        assert {c.layout.decode(i).worker for i in ids} == {11}
        assert isinstance(c.next_str(), str)


def test_asyncio_callers():
    async def main(c):
        return await asyncio.gather(*(c.anext() for _ in range(300)))

    with Client([TRUSTED], prefetch=100, low_water=20) as c:
        ids = asyncio.run(main(c))
        assert len(set(ids)) == 300


def test_partial_and_retry_after_with_one_sequence_bit():
    # First, before any background refill competes for the 2 IDs per ms.
    with Client([FEWSEQ], retries=10) as c:
        runs = c.get_range(4096)
        assert c.last_reply.flags & wire.F_PARTIAL and sum(n for _, n in runs) < 4096
    with Client([FEWSEQ], prefetch=200, low_water=50) as c:
        out = []
        lock = threading.Lock()

        def run():
            for _ in range(100):
                i = c.next()
                with lock:
                    out.append(i)

        ts = [threading.Thread(target=run) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(set(out)) == 300
        assert c.layout.seq_bits == 1 and {c.layout.decode(i).worker for i in out} == {13}
        assert c.stats["retry_after"] > 0, c.stats


def test_failover_from_a_dead_responder():
    # The dead port answers ICMP port unreachable: failover at once.
    with Client([DEAD, TRUSTED], timeout=0.05, retries=1) as c:
        ids = [c.next() for _ in range(10)]
        assert len(set(ids)) == 10 and c.stats["failovers"] >= 1, c.stats
        assert c.stats["refused"] >= 1 and c.stats["timeouts"] == 0, c.stats


def test_ipv6_loopback():
    if not os.environ.get("FW_V6"):
        pytest.skip("no IPv6 loopback")
    with Client([os.environ["FW_V6"]]) as c:
        ids = c.get_n(181)
        assert len(set(ids)) == 181 and {c.layout.decode(i).worker for i in ids} == {14}
        assert c.info().worker == 14


def test_all_dead_times_out():
    from flakewire import NoResponseError
    with Client([DEAD], timeout=0.02, retries=1) as c:
        with pytest.raises(NoResponseError):
            c.get()
        with pytest.raises(NoResponseError):
            c.next()


def test_uuid7_trusted_and_untrusted():
    from flakewire import uuid7_parts
    for addr, worker in ((TRUSTED, 11), (UNTRUSTED, 12)):
        with Client([addr]) as c:
            assert c.info().info.supports_uuid7
            us = c.uuid7(90)
            assert len(us) == 90 and c.last_reply.count == 90 and us == sorted(us)
            parts = [uuid7_parts(u, c.layout) for u in us]
            assert all(p.flakewire and p.worker == worker for p in parts)
            more = [c.next_uuid7() for _ in range(200)]
            assert len(set(more) | set(us)) == 290 and min(more) > max(us)
    with Client([UNTRUSTED], trusted=True) as c:
        with pytest.raises(StatusError) as e:
            c.uuid7(1)
        assert e.value.status == wire.ST_REFUSED
