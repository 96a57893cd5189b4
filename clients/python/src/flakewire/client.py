# SPDX-License-Identifier: BSD-3-Clause
"""The flakewire client: IDs from one or more responders over UDP, standard
library only. It behaves as the C client (lib/client/fw_client.h) does:

- every request carries a fresh random 64-bit tag; a reply is accepted only
  when its tag, its op and its source address match, so stale, foreign and
  garbled datagrams are ignored and the wait goes on;
- requests are padded as PROTOCOL.md section 6 says (unless trusted=True),
  so a responder that does not trust this host still answers in full;
- each responder has a connected UDP socket, so a closed port (ICMP port
  unreachable: ECONNREFUSED) moves to the next responder at once;
- a silent responder is asked again (timeout, 2x, 4x, ...: 3 s with the
  defaults), then the next one, round robin; CLOCK_UNSAFE and NO_LEASE move to the next responder at
  once; RETRY_AFTER waits as told (at most 1 s) and counts as an attempt;
- every ID is checked before it is handed out: positive, strictly increasing
  within a reply and above the last one seen from that worker, no more than
  asked, carrying the datacenter and worker the reply names (the layout is
  learnt with an INFO request first) and a time within max_skew_ms of this
  host's clock. A reply that fails a check raises InvalidReplyError and none
  of its IDs are used.

Fork: a process may fork with clients open (os.fork(), multiprocessing's
fork and forkserver start methods, pre-fork servers such as gunicorn
--preload, Celery prefork, uWSGI). The child's clients start afresh
(os.register_at_fork): the IDs and UUIDs buffered before the fork stay the
parent's and are never handed out in the child, which gets its own sockets,
locks and refill threads, even when it forked while a refill held a lock.
A fork from C code that bypasses os.fork() (PyOS_AfterFork_Child not
called) is not seen: the child must then not use the client.

Errors, the same six in every flakewire client (doc/clients.md), all
FlakewireError: AddressError (also ValueError), ResolveError (also OSError),
NoResponseError (also TimeoutError; .tried names each server and what it
did), StatusError, InvalidReplyError, ClosedError: after close() every call
raises it, buffered IDs included.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import os
import socket
import threading
import time
import types
import uuid
import weakref
from typing import Deque, Dict, List, Optional, Sequence, Tuple

from . import wire
from .layout import DEFAULT as DEFAULT_LAYOUT, INT64_MAX, Layout, uuid7_parts

RETRY_AFTER_MAX_US = 1_000_000
WORKERS_TRACKED = 64


class FlakewireError(Exception):
    """Base class of the errors this client raises."""


class AddressError(FlakewireError, ValueError):
    """A server string that cannot be parsed (or no server at all)."""


class ResolveError(FlakewireError, OSError):
    """A host name that does not resolve."""


class NoResponseError(FlakewireError, TimeoutError):
    """No responder answered within its attempts; .tried lists
    "SERVER: what happened" for each server tried."""

    def __init__(self, tried: List[str]):
        self.tried = tried
        super().__init__("no responder answered: " + "; ".join(tried))


class ClosedError(FlakewireError):
    """The client was closed; buffered IDs are no longer handed out."""

    def __init__(self) -> None:
        super().__init__("client closed")


class StatusError(FlakewireError):
    """A responder answered with an error status (status, status_name,
    reply); also raised when every responder kept answering RETRY_AFTER,
    CLOCK_UNSAFE or NO_LEASE."""

    def __init__(self, reply: wire.Reply):
        self.reply = reply
        self.status = reply.status
        self.status_name = wire.status_name(reply.status)
        super().__init__(f"responder answered {self.status_name} (status {self.status})")


class InvalidReplyError(FlakewireError):
    """A reply failed validation; none of its IDs were used."""


def parse_server(s: str) -> Tuple[str, int]:
    """Splits "HOST:PORT", "HOST", "[V6]:PORT", "[V6]" or a bare IPv6
    address into (host, port); the port defaults to 4242. ValueError on a
    malformed string."""
    port = wire.DEFAULT_PORT
    if s.startswith("["):
        close = s.find("]")
        if close < 0:
            raise AddressError(f"server {s!r}: '[' without ']'")
        host, rest = s[1:close], s[close + 1:]
        if rest.startswith(":"):
            port = _port(s, rest[1:])
        elif rest:
            raise AddressError(f"server {s!r}: unexpected {rest!r} after ']'")
    elif s.count(":") == 1:
        host, p = s.split(":")
        port = _port(s, p)
    else:
        host = s
    if not host:
        raise AddressError(f"server {s!r}: empty host")
    return host, port


def _port(s: str, p: str) -> int:
    if not p.isdigit() or not 1 <= int(p) <= 65535:
        raise AddressError(f"server {s!r}: port {p!r} not in 1..65535")
    return int(p)


class _Server:
    def __init__(self, spec: str):
        host, port = parse_server(spec)
        try:
            ai = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM,
                                    flags=socket.AI_NUMERICHOST)
        except socket.gaierror:
            try:
                ai = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
            except socket.gaierror as e:
                raise ResolveError(f"server {spec!r}: cannot resolve {host!r}: {e}") from None
        family, _, _, _, addr = ai[0]
        self.spec = spec
        self.addr = addr
        self.key = (addr[0], addr[1])
        self.family = family
        self.sock = self._connected()

    def _connected(self) -> socket.socket:
        sock = socket.socket(self.family, socket.SOCK_DGRAM)
        # Connected: the kernel reports ICMP port unreachable as ECONNREFUSED.
        try:
            sock.connect(self.addr)
        except BaseException:
            sock.close()
            raise
        return sock

    def reopen(self) -> None:
        """In a forked child: a socket of its own (the parent's copy would
        read the parent's replies). If none can be made, the closed one
        stays and calls fail over as on any socket error."""
        self.sock.close()
        try:
            self.sock = self._connected()
        except OSError:
            pass


class Client:
    """A client for responders tried in the order given.

    servers   "HOST:PORT", "HOST", "[IPV6]:PORT", "[IPV6]" or bare IPv6;
    timeout   first attempt's wait in seconds (0.001..60), doubled per retry;
    retries   resends per responder (0..10);
    prefetch  IDs fetched per refill by next() (1..2^20);
    low_water next() refills in the background below this many (0..2^20);
    trusted   do not pad requests (loopback or a trusted source);
    use_range prefetch with RANGE requests, else LIST;
    max_skew_ms  an ID whose time is further than this from the local clock
              is rejected (0 turns the check off);
    max_age_ms   the longest next() keeps a prefetched ID (10..3600000):
              an ID's time is when it was issued, so older IDs are dropped
              (wasted, never reused) rather than handed out.

    Every method is safe to call from several threads. next() hands out
    buffered IDs without waiting for a refill in flight, each thread from
    its own share of the buffer (no lock per call, so callers do not queue
    on one lock while the GIL switches between them).
    """

    def __init__(self, servers: Sequence[str], *, timeout: float = 0.2, retries: int = 3,
                 prefetch: int = 1024, low_water: int = 256, trusted: bool = False,
                 use_range: bool = True, max_skew_ms: int = 300_000, max_age_ms: int = 1000):
        if isinstance(servers, str):
            servers = [servers]
        if not servers:
            raise AddressError("servers: at least one responder is needed")
        _check("timeout", timeout, 0.001, 60)
        _check("retries", retries, 0, 10)
        _check("prefetch", prefetch, 1, 1 << 20)
        _check("low_water", low_water, 0, 1 << 20)
        _check("max_skew_ms", max_skew_ms, 0, 1 << 40)
        _check("max_age_ms", max_age_ms, 10, 3_600_000)
        self.max_age_ms = max_age_ms
        self._max_age = max_age_ms / 1000.0
        self.timeout, self.retries = timeout, retries
        self.prefetch, self.low_water = prefetch, low_water
        self.trusted, self.use_range, self.max_skew_ms = trusted, use_range, max_skew_ms
        self._srv: List[_Server] = []
        try:
            for s in servers:
                self._srv.append(_Server(s))
        except BaseException:
            self.close()
            raise
        self._cur = 0
        self._closed = False
        self._net = threading.Lock()        # one exchange at a time
        self._layout: Optional[Layout] = None
        self.info_reply: Optional[wire.Reply] = None
        self._info_done = False
        self._seen: Dict[tuple, int] = {}
        self.last_reply: Optional[wire.Reply] = None
        self.stats = collections.Counter()
        # each thread's share: an iterator over its IDs and when they expire
        self._local = threading.local()
        # prefetch pool of [first, n, fetched_at] runs, guarded by _buf
        self._buf = threading.Condition(threading.Lock())
        self._runs: Deque[List] = collections.deque()
        self._want, self._low = prefetch, low_water  # adaptive refill size
        self._starved = False
        self._last_refill = 0.0
        self._count = 0
        self._refilling = False
        self._gen = 0
        self._error: Optional[BaseException] = None
        self._hold_until = 0.0
        self._uuids: Deque[uuid.UUID] = collections.deque()
        _live.add(self)

    def _forked(self) -> None:
        """In a forked child (os.register_at_fork): the state of a new
        client. The parent's threads are not in the child, so their locks
        may be held for ever there and their buffers are the parent's: new
        locks, new (empty) buffers and thread shares, own sockets; the
        layout learnt from INFO is kept."""
        self._net = threading.Lock()
        self._buf = threading.Condition(threading.Lock())
        self._local = threading.local()
        self._runs = collections.deque()
        self._uuids = collections.deque()
        self._count = 0
        self._want, self._low = self.prefetch, self.low_water
        self._starved = False
        self._last_refill = 0.0
        self._refilling = False
        self._gen = 0
        self._error = None
        self._hold_until = 0.0
        self._seen = {}
        self.stats = collections.Counter()
        if not self._closed:
            for s in self._srv:
                s.reopen()

    # -- lifecycle
    def close(self) -> None:
        """Closes the sockets: every later call raises ClosedError, and the
        IDs still buffered are dropped."""
        self._closed = True
        for s in self._srv:
            s.sock.close()
        if hasattr(self, "_buf"):
            with self._buf:
                self._runs.clear()
                self._count = 0
                self._uuids.clear()
                self._buf.notify_all()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()

    @property
    def layout(self) -> Layout:
        """The responders' layout (for decode and uuid7_parts), asked with
        an INFO request if no request has learnt it yet; DEFAULT when the
        responder's INFO carries none."""
        with self._net:
            self._ensure_layout()
            return self._layout or DEFAULT_LAYOUT

    # -- exchanges
    def _await(self, srv: _Server, op: int, tag: int, deadline: float) -> Optional[wire.Reply]:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                srv.sock.settimeout(left)
                buf, frm = srv.sock.recvfrom(2048)
            except socket.timeout:
                return None
            except ConnectionRefusedError:
                raise
            except OSError:
                if self._closed:
                    raise ClosedError() from None
                continue
            if (frm[0], frm[1]) != srv.key:
                self.stats["stray"] += 1
                continue
            try:
                rep = wire.parse_reply(buf)
            except wire.WireError as e:
                if e.reason == "version" and e.tag == tag:
                    return wire.Reply(op | wire.OP_REPLY, wire.ST_BAD_VERSION, 0, 0, tag,
                                      0, 0, 0)
                self.stats["stray"] += 1
                continue
            if rep.tag != tag or rep.request_op != op:
                self.stats["stray"] += 1
                continue
            return rep

    def _exchange(self, op: int, count: int) -> wire.Reply:
        """One request with retries, RETRY_AFTER and failover; caller holds _net."""
        if self._closed:
            raise ClosedError()
        tag = int.from_bytes(os.urandom(8), "big")
        # RANGE pads for 2^seq_bits IDs per range once INFO gave the layout.
        seq = self._layout.seq_bits if self._layout else 12
        req = wire.encode_request(op, count, tag, not self.trusted, seq)
        retry_after: Optional[wire.Reply] = None
        moved: Optional[wire.Reply] = None
        tried: List[str] = []
        for _ in range(len(self._srv)):
            srv = self._srv[self._cur]
            what, waited = "", 0.0
            for a in range(self.retries + 1):
                try:
                    srv.sock.send(req)
                    self.stats["requests"] += 1
                    rep = self._await(srv, op, tag, time.monotonic() + self.timeout * (1 << a))
                except ConnectionRefusedError:
                    self.stats["refused"] += 1
                    what = "refused (ICMP port unreachable)"
                    break
                except OSError as e:
                    if self._closed:
                        raise ClosedError() from None
                    what = str(e)
                    break
                if rep is None:
                    self.stats["timeouts"] += 1
                    waited += self.timeout * (1 << a)
                    what = f"no reply in {waited:g} s"
                    continue
                self.last_reply = rep
                if rep.status == wire.ST_OK:
                    return rep
                if rep.status == wire.ST_RETRY_AFTER:
                    self.stats["retry_after"] += 1
                    retry_after = rep
                    time.sleep(min(rep.retry_after_us, RETRY_AFTER_MAX_US) / 1e6)
                    continue
                if rep.status in (wire.ST_CLOCK_UNSAFE, wire.ST_NO_LEASE):
                    moved = rep
                    break
                raise StatusError(rep)
            tried.append(f"{srv.spec}: {what}")
            self._cur = (self._cur + 1) % len(self._srv)
            self.stats["failovers"] += 1
        if moved is not None:
            raise StatusError(moved)
        if retry_after is not None:
            raise StatusError(retry_after)
        raise NoResponseError(tried)

    def _adopt_info(self, rep: wire.Reply) -> None:
        i = rep.info
        assert i is not None
        self.info_reply = rep
        lay = Layout(i.epoch_ms, i.time_bits, i.dc_bits, i.worker_bits, i.seq_bits)
        try:
            lay.validate()
        except ValueError:
            return
        if self._layout is None:
            self._layout = lay
        self._info_done = True

    def _ensure_layout(self) -> None:
        if self._info_done:
            return
        try:
            self._adopt_info(self._exchange(wire.OP_INFO, 0))
        except StatusError as e:
            if e.status == wire.ST_RETRY_AFTER:
                raise
        self._info_done = True

    # -- validation
    def _check_id(self, id_: int, rep: wire.Reply, now_ms: int) -> None:
        if self._layout is None:
            return
        p = self._layout.decode(id_)
        if p.datacenter != rep.datacenter or p.worker != rep.worker:
            raise InvalidReplyError(f"ID {id_} names worker {p.datacenter}/{p.worker}, "
                                    f"the reply {rep.datacenter}/{rep.worker}")
        if self.max_skew_ms and abs(p.unix_ms - now_ms) > self.max_skew_ms:
            raise InvalidReplyError(f"ID {id_} is {p.unix_ms - now_ms} ms from this clock")

    def _validate(self, rep: wire.Reply, runs: List[Tuple[int, int]], asked: int) -> None:
        now_ms = time.time_ns() // 1_000_000
        total, prev = 0, -1
        if not runs:
            raise InvalidReplyError("OK reply without IDs")
        for first, n in runs:
            last = first + n - 1
            if n < 1 or first < 1 or last > INT64_MAX:
                raise InvalidReplyError(f"ID run {first}+{n} is not positive int64")
            if first <= prev:
                raise InvalidReplyError("IDs of a reply do not increase")
            self._check_id(first, rep, now_ms)
            self._check_id(last, rep, now_ms)
            prev, total = last, total + n
        if total > asked:
            raise InvalidReplyError(f"{total} IDs for {asked} asked")
        key = (rep.datacenter, rep.worker)
        if key in self._seen and runs[0][0] <= self._seen[key]:
            raise InvalidReplyError(f"ID {runs[0][0]} not above {self._seen[key]} "
                                    "from the same worker")
        self._seen.pop(key, None)
        self._seen[key] = prev
        if len(self._seen) > WORKERS_TRACKED:
            self._seen.pop(next(iter(self._seen)))

    def _fetch(self, use_range: bool, want: int) -> List[Tuple[int, int]]:
        """One LIST or RANGE request, validated; caller holds _net."""
        self._ensure_layout()
        rep = self._exchange(wire.OP_RANGE if use_range else wire.OP_LIST, want)
        runs = rep.ranges if use_range else [(i, 1) for i in rep.ids]
        self._validate(rep, runs, want)
        return runs

    # -- one-shot calls
    def get(self) -> int:
        """One ID, one round trip (an ID request)."""
        with self._net:
            self._ensure_layout()
            rep = self._exchange(wire.OP_ID, 1)
            self._validate(rep, [(rep.ids[0], 1)], 1)
            return rep.ids[0]

    def get_n(self, n: int) -> List[int]:
        """n IDs with LIST requests of at most 181 each (asking again while
        a responder answers PARTIAL)."""
        _check("n", n, 0, 1 << 30)
        out: List[int] = []
        with self._net:
            while len(out) < n:
                out.extend(f for f, _ in self._fetch(False, min(n - len(out), wire.LIST_MAX)))
        return out

    def get_range(self, want: int) -> List[Tuple[int, int]]:
        """Up to want (1..65535) IDs as (first, n) runs of consecutive IDs,
        one RANGE request; the responder may give fewer (PARTIAL)."""
        _check("want", want, 1, wire.RANGE_IDS_MAX)
        with self._net:
            return self._fetch(True, want)

    def info(self) -> wire.Reply:
        """The current responder's INFO reply (.info holds the record); its
        layout is adopted for the ID checks if none was known."""
        with self._net:
            rep = self._exchange(wire.OP_INFO, 0)
            self._adopt_info(rep)
            return rep

    def uuid7(self, n: int = 1) -> List[uuid.UUID]:
        """n (1..90) UUIDv7 with one UUID7 request (a responder may give
        fewer: PARTIAL). Checked as the C client does: version 7, the RFC
        variant, strictly increasing and above the last UUID seen from that
        worker, a time near this clock, and, with the layout, flakewire's
        tag and the datacenter and worker the reply names."""
        _check("n", n, 1, wire.UUID7_MAX)
        with self._net:
            self._ensure_layout()
            rep = self._exchange(wire.OP_UUID7, n)
            self._validate_uuids(rep, n)
            return rep.uuids

    def _validate_uuids(self, rep: wire.Reply, asked: int) -> None:
        now_ms = time.time_ns() // 1_000_000
        if not rep.uuids or len(rep.uuids) > asked:
            raise InvalidReplyError(f"{len(rep.uuids)} UUIDs for {asked} asked")
        prev = -1
        for u in rep.uuids:
            p = uuid7_parts(u, self._layout)
            if not p.is_v7:
                raise InvalidReplyError(f"{u} is not a UUIDv7")
            if self._layout and (not p.flakewire or p.datacenter != rep.datacenter
                                or p.worker != rep.worker):
                raise InvalidReplyError(f"{u} does not carry worker {rep.datacenter}/{rep.worker}")
            if u.int <= prev:
                raise InvalidReplyError("UUIDs of a reply do not increase")
            if self.max_skew_ms and abs(p.unix_ms - now_ms) > self.max_skew_ms:
                raise InvalidReplyError(f"UUID {u} is {p.unix_ms - now_ms} ms from this clock")
            prev = u.int
        key = ("uuid", rep.datacenter, rep.worker)
        if key in self._seen and rep.uuids[0].int <= self._seen[key]:
            raise InvalidReplyError(f"UUID {rep.uuids[0]} not above the last from that worker")
        self._seen.pop(key, None)
        self._seen[key] = prev
        if len(self._seen) > WORKERS_TRACKED:
            self._seen.pop(next(iter(self._seen)))

    def next_uuid7(self) -> uuid.UUID:
        """One UUIDv7 from a small local buffer refilled 90 at a time."""
        with self._buf:
            if self._closed:
                raise ClosedError()
            if self._uuids:
                return self._uuids.popleft()
        got = self.uuid7(wire.UUID7_MAX)
        with self._buf:
            self._uuids.extend(got[1:])
        return got[0]

    # -- prefetching
    def _refill(self, want: int) -> None:
        err: Optional[BaseException] = None
        per = wire.RANGE_IDS_MAX if self.use_range else wire.LIST_MAX
        fetched = 0
        try:
            while fetched < want:
                with self._net:
                    runs = self._fetch(self.use_range, min(want - fetched, per))
                with self._buf:
                    if self._closed:
                        raise ClosedError()
                    now = time.monotonic()
                    for first, n in runs:
                        tail = self._runs[-1] if self._runs else None
                        if tail is not None and tail[0] + tail[1] == first:
                            tail[1] += n
                        else:
                            self._runs.append([first, n, now])
                        self._count += n
                        fetched += n
                    self._buf.notify_all()
        except BaseException as e:  # noqa: BLE001 - handed to the callers
            err = e
        with self._buf:
            if err is not None:
                self._hold_until = time.monotonic() + self.timeout * (1 << self.retries)
            self._error = err
            self._refilling = False
            self._gen += 1
            self._buf.notify_all()

    def _start_refill(self) -> None:
        # Sized as Leaf sizes its segments: doubled (up to 64 x prefetch)
        # when a caller found the pool empty since the last refill, halved
        # (down to prefetch) when the last one lasted over half max_age.
        now = time.monotonic()
        top = min(self.prefetch * 64, max(1 << 20, self.prefetch))
        if self._gen and self._starved and self._want < top:
            self._want = min(2 * self._want, top)
            self._low = self._want * self.low_water // self.prefetch
        elif self._gen and self._starved:
            self._low = min(max(2 * self._low, 1), 2 * self._want)
        elif self._gen and now - self._last_refill > self._max_age / 2:
            self._want = max(self._want // 2, self.prefetch)
            self._low = self._want * self.low_water // self.prefetch
        self._last_refill, self._starved, self._refilling = now, False, True
        threading.Thread(target=self._refill, args=(self._want,), name="flakewire-refill",
                         daemon=True).start()

    def _drop_expired(self, now: float) -> None:
        while self._runs and now - self._runs[0][2] >= self._max_age:
            self._count -= self._runs.popleft()[1]

    def _fill(self, loc) -> None:
        """Moves this thread's share (an eighth of a refill) from the pool. Under _buf."""
        want = max(1, min(self._want // 8, wire.RANGE_IDS_MAX))
        parts, oldest = [], None
        while want and self._runs:
            run = self._runs[0]
            k = min(want, run[1])
            parts.append(range(run[0], run[0] + k))
            oldest = run[2] if oldest is None else min(oldest, run[2])
            run[0] += k
            run[1] -= k
            self._count -= k
            want -= k
            if run[1] == 0:
                self._runs.popleft()
        loc.it = iter(parts[0]) if len(parts) == 1 else itertools.chain(*parts)
        loc.deadline = oldest + self._max_age

    def next(self) -> int:
        """One ID from this thread's share of the prefetch buffer (no lock);
        an empty or expired share takes the next one from the pool under a
        lock. Below low_water a refill of prefetch IDs (grown while callers
        drain the pool faster) starts in a background thread; callers wait
        only when the pool is empty, and then get the refill's error if it
        fails. A thread's own IDs increase (per responder worker); IDs of
        different threads are not ordered within the max_age window."""
        loc = self._local
        it = getattr(loc, "it", None)
        if it is not None and not self._closed and time.monotonic() < loc.deadline:
            id_ = next(it, None)
            if id_ is not None:
                return id_
        return self._next_slow(loc)

    def _next_slow(self, loc) -> int:
        loc.it = None  # empty or expired: these IDs are wasted, never reused
        with self._buf:
            gen = None
            while True:
                if self._closed:
                    raise ClosedError()
                self._drop_expired(time.monotonic())
                if self._count:
                    self._fill(loc)
                    if (self._count < self._low and not self._refilling
                            and time.monotonic() >= self._hold_until):
                        self._start_refill()
                    return next(loc.it)
                if gen is not None and self._gen != gen and self._error is not None:
                    raise self._error
                self._starved = True
                if not self._refilling:
                    self._start_refill()
                gen = self._gen
                self._buf.wait()

    def next_str(self) -> str:
        """next() as a decimal string (for JSON and JavaScript consumers)."""
        return str(self.next())

    async def anext(self) -> int:
        """next() for asyncio: returns at once while IDs are buffered, else
        waits for the refill in a worker thread without blocking the loop."""
        if self._closed:
            raise ClosedError()
        loc = self._local
        it = getattr(loc, "it", None)
        if it is not None and time.monotonic() < loc.deadline:
            id_ = next(it, None)
            if id_ is not None:
                return id_
        with self._buf:
            if self._count > self._low:
                self._drop_expired(time.monotonic())
            if self._count > self._low:
                self._fill(loc)
                return next(loc.it)
        # The pool is empty: wait for the refill in a worker thread, with a
        # share of its own (newer than any share handed out before).
        return await asyncio.get_running_loop().run_in_executor(None, self._next_slow,
                                                                types.SimpleNamespace())


# Every open client, so that a forked child starts each afresh.
_live: "weakref.WeakSet[Client]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for c in list(_live):
        c._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _check(name: str, v, lo, hi) -> None:
    if not lo <= v <= hi:
        raise ValueError(f"{name} = {v} not in {lo}..{hi}")
