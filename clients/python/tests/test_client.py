# SPDX-License-Identifier: BSD-3-Clause
"""The client's own rules against a scripted fake responder on loopback:
stray datagrams ignored, invalid IDs rejected, failover on NO_LEASE and
CLOCK_UNSAFE, address parsing."""

import collections
import pathlib
import re
import socket
import struct
import sys
import threading
import time

import pytest
from forkkids import assert_unique, collect, fork_kid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from flakewire import Client, InvalidReplyError, StatusError, parse_server, wire  # noqa: E402
from flakewire.layout import DEFAULT  # noqa: E402


def mk_id(worker, seq=0, ms=None):
    if ms is None:
        ms = time.time_ns() // 1_000_000 - DEFAULT.epoch_ms
    return ms << 22 | worker << 12 | seq


def info_body():
    return struct.pack(">QBBBBBBHHHIq", DEFAULT.epoch_ms, 41, 0, 10, 12, 1, 1, 181, 16, 4, 0, 0)


class Fake:
    """Answers each request with handler(op, count, tag) -> list of datagrams."""

    def __init__(self, handler):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.handler = handler
        self.sock.settimeout(0.05)
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop:
            try:
                buf, frm = self.sock.recvfrom(2048)
            except socket.timeout:
                continue
            _, _, op, _, _, count, tag, _, _, _ = struct.unpack_from(">HBBBBHQHHI", buf)
            self.frm = frm  # the request's source, for a handler that answers later
            for d in self.handler(op, count, tag):
                self.sock.sendto(d, frm)

    def close(self):
        self.stop = True
        self.t.join()
        self.sock.close()


def reply(op, tag, status=0, worker=7, body=b"", count=None, version=1):
    if count is None:
        count = 0 if status else 1 if op == wire.OP_INFO else len(body) // 8
    return struct.pack(">HBBBBHQHHI", 0x464B, version, op | 0x80, status, 0, count, tag, 0,
                       worker, 0) + body


def test_parse_server():
    assert parse_server("10.0.0.1:99") == ("10.0.0.1", 99)
    assert parse_server("10.0.0.1") == ("10.0.0.1", 4242)
    assert parse_server("[::1]:4243") == ("::1", 4243)
    assert parse_server("[fe80::1]") == ("fe80::1", 4242)
    assert parse_server("fe80::1") == ("fe80::1", 4242)
    for bad in ("[::1", "[::1]x", "h:0", "h:65536", "h:x", ":1", ""):
        with pytest.raises(ValueError):
            parse_server(bad)


def test_ipv6_loopback_fake():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    try:
        s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    port = s.getsockname()[1]
    c = Client(["[::1]:%d" % port], timeout=0.01, retries=0)
    assert c._srv[0].key == ("::1", port)
    c.close()
    s.close()


def test_strays_ignored_and_valid_reply_taken():
    def h(op, count, tag):
        if op == wire.OP_INFO:
            return [reply(op, tag, body=info_body())]
        good = reply(op, tag, body=struct.pack(">Q", mk_id(7)))
        return [b"junk", reply(op, tag ^ 1, body=good[24:]), reply(wire.OP_LIST, tag, body=good[24:]),
                reply(op, tag ^ 1, version=2), good]

    f = Fake(h)
    with Client([f.addr], timeout=0.5, retries=0) as c:
        i = c.get()
        assert DEFAULT.decode(i).worker == 7 and c.stats["stray"] == 4
    f.close()


@pytest.mark.parametrize("bad", ["worker", "sign", "time", "count", "order"])
def test_invalid_ids_rejected(bad):
    def h(op, count, tag):
        if op == wire.OP_INFO:
            return [reply(op, tag, body=info_body())]
        ids = {"worker": [mk_id(8)], "sign": [1 << 63 | mk_id(7)],
               "time": [mk_id(7, ms=1000)], "count": [mk_id(7), mk_id(7, 1)],
               "order": [mk_id(7, 5), mk_id(7, 4)]}[bad]
        return [reply(op, tag, body=b"".join(struct.pack(">Q", x) for x in ids))]

    f = Fake(h)
    with Client([f.addr], timeout=0.5, retries=0) as c:
        with pytest.raises(InvalidReplyError):
            if bad in ("order", "count"):
                c.get_n(2 if bad == "order" else 1)
            else:
                c.get()
    f.close()


@pytest.mark.parametrize("status", [wire.ST_NO_LEASE, wire.ST_CLOCK_UNSAFE])
def test_failover_on_status(status):
    a = Fake(lambda op, count, tag: [reply(op, tag, status=status)])
    b = Fake(lambda op, count, tag: [reply(op, tag, body=info_body())] if op == wire.OP_INFO
             else [reply(op, tag, worker=9, body=struct.pack(">Q", mk_id(9)))])
    with Client([a.addr, b.addr], timeout=0.5, retries=0) as c:
        assert DEFAULT.decode(c.get()).worker == 9 and c.stats["failovers"] >= 1
    # Alone, it is asked again until the deadline (the harmonized statuses).
    from flakewire import NoResponseError
    with Client([a.addr], timeout=0.2, retries=0) as c:
        with pytest.raises(NoResponseError) as e:
            c.get()
        assert e.value.tried == [a.addr + ": answered " + NAMES[status]]
        assert c.last_reply.status == status
    a.close()
    b.close()


def test_bad_version_surfaces():
    f = Fake(lambda op, count, tag: [reply(op, tag, version=2)])
    with Client([f.addr], timeout=0.5, retries=0) as c:
        with pytest.raises(StatusError) as e:
            c.info()
        assert e.value.status == wire.ST_BAD_VERSION
    f.close()


NAMES = {wire.ST_NO_LEASE: "NO_LEASE", wire.ST_CLOCK_UNSAFE: "CLOCK_UNSAFE"}


def answering(op, count, tag):
    if op == wire.OP_INFO:
        return [reply(op, tag, body=info_body())]
    ids = [mk_id(7, i) for i in range(count)]
    return [reply(op, tag, body=b"".join(struct.pack(">Q", i) for i in ids))]


def dead_port():
    """A loopback port nothing listens on, below the ephemeral range."""
    for p in range(20000 + time.time_ns() % 10000, 32768):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        return "127.0.0.1:%d" % p
    raise RuntimeError("no free port")


def test_close_ends_hand_outs():
    from flakewire import ClosedError
    f = Fake(answering)
    try:
        c = Client([f.addr], use_range=False, prefetch=3, low_water=0)
        c.next()
        c.close()
        for call in (c.next, c.get, c.next_uuid7):
            with pytest.raises(ClosedError, match="closed"):
                call()
    finally:
        f.close()


def test_refused_fails_over_at_once():
    f = Fake(answering)
    try:
        with Client([dead_port(), f.addr], timeout=2, retries=3) as c:
            t = time.monotonic()
            c.get()
            # a timeout would cost 2 s; ICMP port unreachable a round trip
            assert time.monotonic() - t < 1
            assert c.stats["refused"] >= 1 and c.stats["timeouts"] == 0, c.stats
    finally:
        f.close()


def test_no_response_names_each_server():
    from flakewire import NoResponseError
    f = Fake(lambda op, count, tag: [])
    dead = dead_port()
    try:
        with Client([f.addr, dead], timeout=0.02, retries=0) as c:
            with pytest.raises(NoResponseError) as e:
                c.get()
            # issue 49: what each did in the call, the silent one in ms
            assert len(e.value.tried) == 2, e.value.tried
            assert re.fullmatch(re.escape(f.addr) + r": no reply in \d+ ms", e.value.tried[0])
            assert e.value.tried[1] == dead + ": refused"
            assert isinstance(e.value, TimeoutError)
    finally:
        f.close()


def test_error_classes():
    from flakewire import AddressError, FlakewireError, ResolveError
    with pytest.raises(AddressError):
        Client(["h:0"])
    with pytest.raises(ValueError):
        Client([])
    with pytest.raises(ResolveError) as e:
        Client(["no-such-host.invalid:4242"])
    assert isinstance(e.value, FlakewireError) and isinstance(e.value, OSError)


def test_async_with_and_layout_before_any_id():
    import asyncio
    f = Fake(answering)

    async def main():
        async with Client([f.addr], use_range=False) as c:
            assert c.layout == DEFAULT
            return await c.anext()
    try:
        assert asyncio.run(main()) > 0
    finally:
        f.close()


def test_max_age_drops_old_ids():
    """An ID buffered longer than max_age_ms is not handed out: after 100 ms
    the next ID comes from a later request, not from the 2 left of the first
    reply (before issue 37, next() handed those out however old)."""
    state = {"seq": 0, "lists": 0}

    def handler(op, count, tag):
        if op == wire.OP_INFO:
            return [reply(op, tag, body=info_body())]
        state["lists"] += 1
        s = state["seq"]
        state["seq"] += 3
        return [reply(op, tag, body=struct.pack(">3Q", mk_id(7, s), mk_id(7, s + 1), mk_id(7, s + 2)))]

    f = Fake(handler)
    try:
        with pytest.raises(ValueError, match="max_age_ms"):
            Client([f.addr], max_age_ms=9)
        with Client([f.addr], use_range=False, prefetch=3, low_water=0, max_age_ms=20) as c:
            a = c.next()
            assert state["lists"] == 1
            time.sleep(0.1)
            b = c.next()
            assert state["lists"] >= 2
            assert b > a and b & 0xFFF >= 3
    finally:
        f.close()


class IdSource:
    """A worker's IDs in a layout as a responder hands them out: each range
    within one ms, never back in time. answer() is a Fake handler."""

    def __init__(self, seq_bits=12, worker=7):
        self.seq_bits, self.worker_bits, self.worker = seq_bits, 22 - seq_bits, worker
        self.ms = self.seq = 0
        self.lock = threading.Lock()
        self.counts = []  # (op, count) of each LIST and RANGE request

    def take(self, n):
        """Up to n consecutive IDs (those left in the current ms): (first, n)."""
        now = time.time_ns() // 1_000_000 - DEFAULT.epoch_ms
        if now > self.ms:
            self.ms, self.seq = now, 0
        per = 1 << self.seq_bits
        n = min(n, per - self.seq)
        first = self.ms << 22 | self.worker << self.seq_bits | self.seq
        self.seq += n
        if self.seq == per:
            self.ms, self.seq = self.ms + 1, 0
        return first, n

    def answer(self, op, count, tag):
        with self.lock:
            if op == wire.OP_INFO:
                return [reply(op, tag, body=struct.pack(">QBBBBBBHHHIq", DEFAULT.epoch_ms, 41, 0,
                                                        self.worker_bits, self.seq_bits, 1, 1,
                                                        181, 16, 4, 0, 0))]
            self.counts.append((op, count))
            if op == wire.OP_LIST:
                ids = [self.take(1)[0] for _ in range(count)]
                return [reply(op, tag, body=b"".join(struct.pack(">Q", x) for x in ids))]
            body, left = b"", count
            while left and len(body) < 12 * wire.RANGES_MAX:
                first, n = self.take(left)
                body += struct.pack(">QI", first, n)
                left -= n
            return [reply(op, tag, body=body, count=len(body) // 12)]


def test_max_age_reaches_thread_shares():
    """IDs held in a thread's own share are not handed out past max_age_ms
    either. Four threads wait out a first refill the responder holds for
    6 x max_age, hold a share of 100 IDs each (prefetch 800), wait
    4 x max_age, and must each get an ID at most 2 x max_age old, from a new
    request (test_max_age_drops_old_ids, prefetch 3, holds no share)."""
    max_age, callers = 0.1, 4
    wait = 4 * max_age
    g = IdSource()

    def handler(op, count, tag):
        if op == wire.OP_LIST and not g.counts:
            time.sleep(6 * max_age)
        return g.answer(op, count, tag)

    f = Fake(handler)
    taken, resume = threading.Barrier(callers + 1), threading.Event()
    got, errs = [None] * callers, []
    try:
        with Client([f.addr], timeout=5, retries=0, use_range=False, prefetch=800, low_water=0,
                    max_age_ms=int(max_age * 1000)) as c:
            def run(k):
                try:
                    a = c.next()
                    taken.wait(10)
                    assert resume.wait(10)
                    got[k] = (a, c.next())
                except Exception as e:  # noqa: BLE001 - reported below
                    errs.append(e)
            ts = [threading.Thread(target=run, args=(k,)) for k in range(callers)]
            for t in ts:
                t.start()
            taken.wait(10)
            sent, wait_from = len(g.counts), time.time()
            time.sleep(wait)
            resume.set()
            for t in ts:
                t.join(10)
            assert errs == [] and all(x is not None for x in got)
            for k, (a, b) in enumerate(got):
                issued = DEFAULT.decode(b).unix_ms / 1000
                assert issued >= wait_from + wait - 2 * max_age, \
                    f"caller {k}: ID {b} issued {wait_from + wait - issued:.3f} s before the wait ended (first {a})"
            assert len(g.counts) > sent
    finally:
        f.close()


def test_refill_grows_to_the_cap():
    """Refills grow while a caller drains the pool, up to 64 x prefetch and no
    further: with low_water 0 every refill starts on an empty pool, so each
    doubles the last until the cap. The fake notes every RANGE asked."""
    prefetch, cap = 8, 64 * 8
    g = IdSource()
    f = Fake(g.answer)
    try:
        with Client([f.addr], timeout=5, retries=0, prefetch=prefetch, low_water=0) as c:
            prev = 0
            # Past the cap (2 x cap, a refill of each size below it) and 8 refills at it.
            for _ in range(10 * cap):
                i = c.next()
                assert i > prev
                prev = i
        asked = [n for op, n in g.counts if op == wire.OP_RANGE]
        assert max(asked) == cap and all(n <= cap for n in asked), asked
    finally:
        f.close()


def test_threads_each_increasing_and_unique():
    """Four threads on one client: each thread's own IDs increase, all are unique."""
    state = {"seq": 0}
    lock = threading.Lock()

    def handler(op, count, tag):
        if op == wire.OP_INFO:
            return [reply(op, tag, body=info_body())]
        with lock:
            s = state["seq"]
            state["seq"] += 3
        return [reply(op, tag, body=struct.pack(">3Q", mk_id(7, s % 4096), mk_id(7, s % 4096 + 1),
                                                  mk_id(7, s % 4096 + 2)))]

    f = Fake(handler)
    out = [[] for _ in range(4)]
    try:
        with Client([f.addr], use_range=False, prefetch=60, low_water=30) as c:
            def run(k):
                for _ in range(300):
                    out[k].append(c.next())
            ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        for o in out:
            assert len(o) == 300 and all(x < y for x, y in zip(o, o[1:]))
        assert len({x for o in out for x in o}) == 1200
    finally:
        f.close()


def test_fork_while_refill_holds_the_network_lock():
    """A fork while the refill thread waits for its reply, holding the
    client's network lock (the fake holds that one reply and answers every
    other request, the child's too): the child must not wait on the
    parent's lock or refill, nor hand out the parent's IDs; it takes 300
    IDs of its own. Before the fix the child hung (killed after 10 s)."""
    g = IdSource()
    hold, held, stash = threading.Event(), threading.Event(), []

    def handler(op, count, tag):
        if op == wire.OP_RANGE and hold.is_set() and not stash:
            stash.append((g.answer(op, count, tag), f.frm))
            held.set()
            return []
        return g.answer(op, count, tag)

    f = Fake(handler)
    ids, errs, stop = [], [], threading.Event()
    try:
        with Client([f.addr], timeout=5, retries=0, prefetch=64, low_water=32) as c:
            ids.append(c.next())
            hold.set()

            def load():
                try:
                    while not stop.is_set():
                        ids.append(c.next())
                except Exception as e:  # noqa: BLE001 - reported below
                    errs.append(e)
            t = threading.Thread(target=load)
            t.start()
            assert held.wait(5), "the refill was not held"
            kid = fork_kid(c)
            for d, frm in stash:
                for x in d:
                    f.sock.sendto(x, frm)
            try:
                ids += collect(*kid)
            finally:
                stop.set()
                t.join(10)
            assert errs == []
        assert_unique(ids)
    finally:
        f.close()


# ---- availability (issue 49; doc/clients.md "Availability: deadlines, hedging, health") ----

class Counting(Fake):
    """A fake that counts requests per op and answers as .mode says:
    "ok", "silent", "info" (INFO only), ("retry_after", us, n): RETRY_AFTER us to the first n ID
    requests, or ("status", st, n): status st to the first n requests of
    each op but INFO (n 0: to every one). IDs of worker .worker from .ms on,
    increasing."""

    def __init__(self, worker=7, mode="ok", delay=0.0, ms_offset=0):
        self.counts = collections.Counter()
        self.tags = collections.defaultdict(set)
        self.mode, self.delay, self.worker = mode, delay, worker
        self.seq = 0
        self.ms_offset = ms_offset
        super().__init__(self.handle)

    def handle(self, op, count, tag):
        self.counts[op] += 1
        self.tags[op].add(tag)
        if self.delay:
            time.sleep(self.delay)
        mode = self.mode
        if mode == "silent" or mode == "info" and op != wire.OP_INFO:
            return []
        if op == wire.OP_INFO:
            return [reply(op, tag, worker=self.worker, body=info_body())]
        if isinstance(mode, tuple) and mode[0] == "status" and \
                (mode[2] == 0 or self.counts[op] <= mode[2]):
            return [reply(op, tag, status=mode[1], worker=self.worker)]
        if isinstance(mode, tuple) and mode[0] == "retry_after" and self.counts[op] <= mode[2]:
            return [struct.pack(">HBBBBHQHHI", 0x464B, 1, op | 0x80, wire.ST_RETRY_AFTER, 0, 0,
                                tag, 0, self.worker, mode[1])]
        ms = time.time_ns() // 1_000_000 - DEFAULT.epoch_ms + self.ms_offset
        ids = []
        for _ in range(count):
            self.seq += 1
            ids.append(ms << 22 | self.worker << 12 | (self.seq % 4096))
        ids.sort()
        return [reply(op, tag, worker=self.worker, body=b"".join(struct.pack(">Q", i) for i in ids))]


def test_avail_silent_first_then_back():
    """1. silent first, live second: the first get (INFO included) succeeds,
    later calls go straight to the second (the silent one sees only probes);
    2. once it answers, a probe marks it healthy and calls return to it."""
    s = Counting(worker=5, mode="silent", ms_offset=1000)
    b = Counting(worker=9)
    try:
        with Client([s.addr, b.addr]) as c:
            t0 = time.monotonic()
            assert DEFAULT.decode(c.get()).worker == 9
            assert time.monotonic() - t0 < 1.0
            for _ in range(20):
                assert DEFAULT.decode(c.get()).worker == 9
            assert s.counts[wire.OP_ID] == 0
            end = time.monotonic() + 5
            while s.counts[wire.OP_INFO] < 3 and time.monotonic() < end:
                time.sleep(0.01)
            probes = s.counts[wire.OP_INFO]
            assert 3 <= probes <= 2 + (time.monotonic() - t0) / 0.1 + 1
            s.mode = "ok"
            end = time.monotonic() + 3
            while s.counts[wire.OP_ID] == 0 and time.monotonic() < end:
                c.get()
                time.sleep(0.01)
            assert s.counts[wire.OP_ID] > 0
            assert DEFAULT.decode(c.get()).worker == 5
    finally:
        s.close()
        b.close()


def test_avail_retry_after_moves_on():
    """3. RETRY_AFTER from the first: answered by the second at once, the first
    left alone until its hint has passed."""
    a = Counting(worker=5, mode=("retry_after", 800_000, 1), ms_offset=1000)
    b = Counting(worker=9)
    try:
        with Client([a.addr, b.addr]) as c:
            c.info()
            t0 = time.monotonic()
            assert DEFAULT.decode(c.get()).worker == 9
            assert time.monotonic() - t0 < 0.8
            assert a.counts[wire.OP_ID] == 1 and b.counts[wire.OP_ID] == 1
            for _ in range(10):
                if time.monotonic() - t0 > 0.7:
                    break
                assert DEFAULT.decode(c.get()).worker == 9
            assert a.counts[wire.OP_ID] == 1
            while time.monotonic() - t0 < 0.9:
                time.sleep(0.01)
            assert DEFAULT.decode(c.get()).worker == 5
            assert a.counts[wire.OP_ID] == 2
    finally:
        a.close()
        b.close()


def test_avail_retry_after_lone():
    """4. one responder answering RETRY_AFTER 50 ms three times, then OK: the
    call succeeds (the old client failed after counting them)."""
    a = Counting(mode=("retry_after", 50_000, 3))
    try:
        # retries=0: no longer an attempt count (the old client gave up after one)
        with Client([a.addr], retries=0) as c:
            c.info()
            t0 = time.monotonic()
            c.get()
            assert time.monotonic() - t0 >= 0.15
            assert a.counts[wire.OP_ID] == 4
    finally:
        a.close()


def test_avail_refused_then_listens():
    """5. one responder refused (nothing bound), listening 200 ms later: a call
    with the default deadline succeeds."""
    addr = dead_port()
    port = int(addr.rsplit(":", 1)[1])
    holder = {}

    def later():
        time.sleep(0.2)
        f = Counting.__new__(Counting)
        f.counts, f.tags = collections.Counter(), collections.defaultdict(set)
        f.mode, f.delay, f.worker, f.seq, f.ms_offset = "ok", 0.0, 7, 0, 0
        f.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        f.sock.bind(("127.0.0.1", port))
        f.addr, f.handler = addr, f.handle
        f.sock.settimeout(0.05)
        f.stop = False
        f.t = threading.Thread(target=f.run, daemon=True)
        f.t.start()
        holder["f"] = f

    t = threading.Thread(target=later)
    try:
        with Client([addr]) as c:
            t0 = time.monotonic()
            t.start()
            assert DEFAULT.decode(c.get()).worker == 7
            assert time.monotonic() - t0 >= 0.2
            assert c.stats["refused"] >= 1
    finally:
        t.join()
        if "f" in holder:
            holder["f"].close()


def test_avail_all_silent():
    """6. all silent: NoResponseError no earlier than the deadline and within
    deadline + 2 s (a loaded machine schedules late), naming each responder."""
    from flakewire import NoResponseError
    a, b = Counting(mode="silent"), Counting(mode="silent")
    try:
        with Client([a.addr, b.addr], timeout=0.3) as c:
            t0 = time.monotonic()
            with pytest.raises(NoResponseError) as e:
                c.get()
            took = time.monotonic() - t0
            assert 0.3 <= took <= 2.3, took
            for f, said in zip((a, b), e.value.tried):
                assert re.fullmatch(re.escape(f.addr) + r": no reply in \d+ ms", said), said
    finally:
        a.close()
        b.close()


def test_avail_hedge_budget():
    """7. every responder slower than the hedge delay (30 ms): over 200 calls
    some hedges, at most 10 + 5 % of 200 (+1)."""
    a, b = Counting(worker=7), Counting(worker=8)
    try:
        with Client([a.addr, b.addr]) as c:
            c.info()
            a.delay = b.delay = 0.03
            for _ in range(200):
                c.get()
        time.sleep(0.2)
        hedges = a.counts[wire.OP_ID] + b.counts[wire.OP_ID] - 200
        assert 1 <= hedges <= 10 + 10 + 1, hedges
    finally:
        a.close()
        b.close()


def test_avail_hedge_budget_zero():
    """hedge_budget_pct=0 never hedges, not even a new client's first calls
    (the old client spent its 10 starting tokens anyway)."""
    a, b = Counting(worker=7, delay=0.03), Counting(worker=8, delay=0.03)
    try:
        with Client([a.addr, b.addr], hedge_budget_pct=0) as c:
            for _ in range(20):
                c.get()
            assert c.stats["hedges"] == 0
            resends = c.stats["timeouts"]  # a reply later than 50 ms on a loaded machine
        time.sleep(0.1)
        # (b's INFO count may hold probes, after a resend to it lost the race)
        assert b.counts[wire.OP_ID] <= resends, (b.counts, resends)
    finally:
        a.close()
        b.close()


def test_avail_fork_child_starts_fresh():
    """After a fork the child's client has no probe thread, every responder
    healthy, no round trip known and a full budget: as a new client."""
    import os
    s, b = Counting(worker=5, mode="silent"), Counting(worker=9)
    try:
        with Client([s.addr, b.addr]) as c:
            for _ in range(20):
                c.get()
            r = c._route
            assert r.healthy == [False, True] and r.probe is not None and r.rtt_count > 0
            pid = os.fork()
            if pid == 0:
                r = c._route
                ok = (r.healthy == [True, True] and r.probe is None and r.rtt_count == 0
                      and r.tokens == 10.0 and r.hedges == 0)
                try:
                    ok = ok and DEFAULT.decode(c.get()).worker == 9
                except Exception:  # noqa: BLE001 - reported by the exit status
                    ok = False
                os._exit(0 if ok else 1)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            assert c._route.healthy[0] is False
    finally:
        s.close()
        b.close()


# ---- statuses (doc/clients.md "Availability", Statuses: the harmonized rule) ----

TRANSIENT = [wire.ST_NO_LEASE, wire.ST_CLOCK_UNSAFE]


@pytest.mark.parametrize("status", TRANSIENT)
def test_avail_status_lone_then_ok(status):
    """A lone responder answering NO_LEASE (CLOCK_UNSAFE) twice, then OK: asked
    again after 10 ms each time, the call succeeds (the old client raised
    StatusError at the first)."""
    a = Counting(mode=("status", status, 2))
    try:
        with Client([a.addr]) as c:
            c.info()
            t0 = time.monotonic()
            assert DEFAULT.decode(c.get()).worker == 7
            assert time.monotonic() - t0 >= 0.02  # a pause before each resend
            # 3, or more if a reply came later than the first resend's 50 ms
            assert a.counts[wire.OP_ID] >= 3 and len(a.tags[wire.OP_ID]) == 1
    finally:
        a.close()


@pytest.mark.parametrize("status", TRANSIENT)
def test_avail_status_lone_deadline(status):
    """A lone responder answering NO_LEASE (CLOCK_UNSAFE) always: asked every
    10 ms until the deadline, then NoResponseError (no earlier than the
    deadline, within deadline + 2 s) naming the status."""
    from flakewire import NoResponseError
    a = Counting(mode=("status", status, 0))
    try:
        with Client([a.addr], timeout=0.3) as c:
            c.info()
            t0 = time.monotonic()
            with pytest.raises(NoResponseError) as e:
                c.get()
            took = time.monotonic() - t0
            assert 0.3 <= took <= 2.3, took
            assert e.value.tried == [a.addr + ": answered " + NAMES[status]]
            time.sleep(0.05)  # the fake reads what is queued
            n = a.counts[wire.OP_ID]
            assert 2 <= n <= took / 0.010 + 2, (n, took)  # again, but no tight loop
    finally:
        a.close()


def test_avail_status_all_refused():
    """Two responders both REFUSED: StatusError at once, each asked once, well
    before the deadline (the old client raised at the first, the second
    never asked)."""
    a = Counting(mode=("status", wire.ST_REFUSED, 0))
    b = Counting(worker=9, mode=("status", wire.ST_REFUSED, 0))
    try:
        with Client([a.addr, b.addr], timeout=5, hedge_budget_pct=0) as c:
            c.info()
            t0 = time.monotonic()
            with pytest.raises(StatusError) as e:
                c.get()
            assert time.monotonic() - t0 < 2.5
            assert e.value.status == wire.ST_REFUSED
            # each asked (more than once only if a reply came after 50 ms)
            assert a.counts[wire.OP_ID] >= 1 and b.counts[wire.OP_ID] >= 1
    finally:
        a.close()
        b.close()


def test_avail_status_refused_moves_on():
    """The first REFUSED, the second OK: the second's ID (the old client raised
    StatusError). The first is unhealthy after the call and is not probed for
    STATUS_HOLD (1 s), although it answers INFO (before, the probe's INFO made
    it healthy again within a round trip, so every call asked it first). Once
    it admits us, the probe after the hold, and no earlier, makes it healthy,
    and calls return to it."""
    from flakewire.client import STATUS_HOLD
    a = Counting(mode=("status", wire.ST_REFUSED, 0))
    b = Counting(worker=9)
    try:
        with Client([a.addr, b.addr], timeout=5, hedge_budget_pct=0) as c:
            c.info()
            # should its reply come after the resend to b, the probe makes both healthy again
            end = time.monotonic() + 3
            while c._route.healthy != [True, True] and time.monotonic() < end:
                time.sleep(0.01)
            assert c._route.healthy == [True, True]
            t0 = time.monotonic()
            assert DEFAULT.decode(c.get()).worker == 9
            assert c._route.healthy[0] is False
            assert a.counts[wire.OP_ID] >= 1 and b.counts[wire.OP_ID] >= 1
            # it admits us from now on; no call runs, so only a probe can bring it back
            a.mode = "ok"
            end = time.monotonic() + 5
            while not c._route.healthy[0] and time.monotonic() < end:
                time.sleep(0.01)
            assert c._route.healthy[0] is True
            assert time.monotonic() - t0 >= STATUS_HOLD
            # calls return to it (a slow reply on a loaded machine may bring a resend: a few tries)
            w, end = DEFAULT.decode(c.get()).worker, time.monotonic() + 5
            while w != 7 and time.monotonic() < end:
                time.sleep(0.01)
                w = DEFAULT.decode(c.get()).worker
            assert w == 7
    finally:
        a.close()
        b.close()


def test_avail_retry_after_before_unhealthy():
    """A responder that answered RETRY_AFTER is asked again before an unhealthy
    one, although this call asked it already: once its hint has passed, and as
    the earliest hold when no responder is eligible. Responders s (silent,
    found so by the first call: unhealthy), a, and b (never issues; answers
    INFO, so it is healthy, until it falls silent). 1: a's RETRY_AFTER 200 ms,
    read while a is held, sends the call to b; at b's resend timer (400 ms or
    more after that send) a's hint has passed: a answers, s is not asked
    (before, a counted as asked in that round and the call went to s). 2: with
    b unhealthy too, a's three RETRY_AFTER 50 ms and its OK are all the call's
    sends (before 1c10b9d, each sent the call to a silent one, whose resend
    timer came after the hint). No hedging, and 20 calls first with a hedge
    floor of 100 ms: the resend timer is then 400 ms, so a slow reply on a
    loaded machine does not send the call elsewhere either."""
    s = Counting(worker=5, mode="silent")
    a = Counting(worker=7)
    b = Counting(worker=9, mode="info")
    try:
        with Client([s.addr, a.addr, b.addr], timeout=2, hedge_budget_pct=0,
                    hedge_min=0.1) as c:
            c.info()  # finds s silent (a answers the resend after 50 ms)
            assert c._route.healthy[0] is False
            for _ in range(20):
                c.get()
            assert c._route.d == 0.1
            # should a slow reply have sent a call to b (or a lost a race), the probe brings it back
            end = time.monotonic() + 3
            while c._route.healthy != [False, True, True] and time.monotonic() < end:
                time.sleep(0.01)
            assert c._route.healthy == [False, True, True]
            b.mode = "silent"
            # 1. its hint passed while the call waited for b
            s_ids, a_ids, b_ids = s.counts[wire.OP_ID], a.counts[wire.OP_ID], b.counts[wire.OP_ID]
            a.mode = ("retry_after", 200_000, a_ids + 1)
            assert DEFAULT.decode(c.get()).worker == 7
            assert b.counts[wire.OP_ID] == b_ids + 1, b.counts
            assert a.counts[wire.OP_ID] == a_ids + 2, a.counts
            assert s.counts[wire.OP_ID] == s_ids, s.counts
            assert c._route.healthy == [False, True, False]
            # 2. no responder eligible: a, held off, before the unhealthy ones
            a_ids = a.counts[wire.OP_ID]
            a.mode = ("retry_after", 50_000, a_ids + 3)
            assert DEFAULT.decode(c.get()).worker == 7
            assert a.counts[wire.OP_ID] == a_ids + 4, a.counts
            assert s.counts[wire.OP_ID] == s_ids, s.counts
            assert b.counts[wire.OP_ID] == b_ids + 1, b.counts
    finally:
        s.close()
        a.close()
        b.close()


@pytest.mark.parametrize("status", [wire.ST_BAD_REQUEST, wire.ST_BAD_VERSION])
def test_avail_status_bad_request(status):
    """BAD_REQUEST (BAD_VERSION) from the first: StatusError at once, the second
    never asked; the first stays healthy: the next call (which it answers)
    goes to it, not to the second."""
    a = Counting(mode=("status", status, 1))
    b = Counting(worker=9)
    try:
        with Client([a.addr, b.addr], timeout=5, hedge_budget_pct=0) as c:
            c.info()
            t0 = time.monotonic()
            with pytest.raises(StatusError) as e:
                c.get()
            assert time.monotonic() - t0 < 2.5
            assert e.value.status == status
            assert a.counts[wire.OP_ID] == 1
            assert b.counts[wire.OP_ID] == 0 and b.counts[wire.OP_INFO] == 0
            assert c._route.healthy == [True, True]
            assert DEFAULT.decode(c.get()).worker == 7
            assert b.counts[wire.OP_ID] == 0
    finally:
        a.close()
        b.close()
