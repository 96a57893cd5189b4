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
- availability (doc/clients.md, "Availability: deadlines, hedging, health";
  the C client's lib/client/route.h): timeout is each call's deadline; a
  request goes to healthy responders first (configured order), then those
  holding off after RETRY_AFTER, then unhealthy ones; without a reply after
  the hedge delay (p99 of the last 256 round trips, hedge_min..100 ms, 10 ms
  before 16 are known) it goes to the next responder too while the hedge
  budget allows (10 tokens, hedge_budget_pct % of one per call), and after
  max(4 x delay, 50 ms), doubling, it is resent; refused (ECONNREFUSED),
  NO_LEASE, CLOCK_UNSAFE and REFUSED move on at once and make the responder
  unhealthy, as does losing a hedge race or silence until the deadline;
  such a responder is asked again in the call only 10 ms later (a lone one
  every 10 ms until the deadline, whose NoResponseError says "answered
  NO_LEASE"); REFUSED from every responder in one call raises StatusError
  at once; BAD_REQUEST and BAD_VERSION raise StatusError at once (another
  responder would say the same) and leave the responder healthy;
  RETRY_AFTER holds the responder off for its hint and moves on at once (a
  lone responder is asked again after the hint, until the deadline); an
  unhealthy responder is probed with INFO every 100 ms by a daemon thread
  (after a status, from 1 s after it on) and used again once it answers;
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
import select
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
# The availability contract's constants (doc/clients.md, "Availability").
RTT_WINDOW, RTT_EVERY, RTT_MIN_SAMPLES = 256, 64, 16
D_DEFAULT, D_MAX, T_MIN = 0.010, 0.100, 0.050
# REASK: a responder refused, or answering NO_LEASE, CLOCK_UNSAFE or REFUSED,
# is asked again in the same call after this.
PROBE_EVERY, REASK, RETRY_AFTER_MIN = 0.100, 0.010, 0.001
# A responder unhealthy for a status (NO_LEASE, CLOCK_UNSAFE, REFUSED) is not
# probed before this has passed since its last such status: it answers INFO,
# so a probe would make it healthy again at once, and every call would ask it
# first only to hear the status again.
STATUS_HOLD = 1.0
TOKENS_CAP = 10.0
REFILL_PAUSE = 0.010


class FlakewireError(Exception):
    """Base class of the errors this client raises."""


class AddressError(FlakewireError, ValueError):
    """A server string that cannot be parsed (or no server at all)."""


class ResolveError(FlakewireError, OSError):
    """A host name that does not resolve."""


class NoResponseError(FlakewireError, TimeoutError):
    """No usable reply before the call's deadline; .tried lists
    "SERVER: what it did" for each server ("no reply in 80 ms",
    "RETRY_AFTER 900 ms", "refused", "answered NO_LEASE", "not asked")."""

    def __init__(self, tried: List[str]):
        self.tried = tried
        super().__init__("no responder answered: " + "; ".join(tried))


class ClosedError(FlakewireError):
    """The client was closed; buffered IDs are no longer handed out."""

    def __init__(self) -> None:
        super().__init__("client closed")


class StatusError(FlakewireError):
    """A responder answered with an error status (status, status_name,
    reply): BAD_REQUEST or BAD_VERSION from one, or REFUSED from every
    responder in one call. (NO_LEASE and CLOCK_UNSAFE are asked again until
    the deadline: NoResponseError.)"""

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
            sock.setblocking(False)  # waits are select()s over every responder asked
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


class _Route:
    """Which responder a request goes to (the C client's lib/client/route.h):
    health, hold-offs, the RTT window, the hedge budget and the probe thread.
    Shared by every call of one client; its lock is never held across I/O."""

    def __init__(self, servers: List["_Server"], hedge_min: float, budget_pct: int):
        self.srv = servers
        self.hedge_min, self.budget = hedge_min, budget_pct / 100.0
        self._reset()

    def _reset(self) -> None:
        n = len(self.srv)
        self.lock = threading.Lock()
        self.healthy = [True] * n
        self.hold = [0.0] * n
        self.probe_after = [0.0] * n  # not probed before (its last status + STATUS_HOLD)
        self.rtt: List[float] = []
        self.rtt_count = 0
        self.d = D_DEFAULT
        self.tokens = TOKENS_CAP if self.budget else 0.0  # a budget of 0: never hedge
        self.hedges = 0
        self.probe: Optional[threading.Thread] = None
        self.probe_socks: Dict[int, socket.socket] = {}
        self.stop = False

    def forked(self) -> None:
        """In a forked child: as a new client's (no probe thread, all healthy,
        no round trip known, a full budget); the parent's probe sockets closed."""
        for sk in self.probe_socks.values():
            sk.close()
        self._reset()

    def close(self) -> None:
        with self.lock:
            self.stop = True
            t = self.probe
        if t is not None and t is not threading.current_thread():
            t.join(1.0)
        for sk in list(self.probe_socks.values()):
            sk.close()

    def add_rtt(self, rtt: float) -> None:
        """Under lock."""
        if len(self.rtt) < RTT_WINDOW:
            self.rtt.append(rtt)
        else:
            self.rtt[self.rtt_count % RTT_WINDOW] = rtt
        self.rtt_count += 1
        if self.rtt_count == RTT_MIN_SAMPLES or self.rtt_count % RTT_EVERY == 0:
            v = sorted(self.rtt)
            k = -(-len(v) * 99 // 100)  # ceil(0.99 n), 1-based
            self.d = min(max(v[k - 1], self.hedge_min), D_MAX)

    def set_unhealthy(self, i: int, status_at: float = 0.0) -> None:
        """Under lock: marks @i unhealthy and makes sure a probe thread runs;
        @status_at: when it answered a status (then not probed before
        status_at + STATUS_HOLD), 0 for silence or a refusal."""
        if status_at:
            self.probe_after[i] = status_at + STATUS_HOLD
        self.healthy[i] = False
        if self.stop or (self.probe is not None and self.probe.is_alive()):
            return
        self.probe = threading.Thread(target=self._probe_run, name="flakewire-probe",
                                      daemon=True)
        self.probe.start()

    def _probe_run(self) -> None:
        while True:
            sent: Dict[socket.socket, Tuple[int, int]] = {}
            with self.lock:
                if self.stop:
                    return
                now = time.monotonic()
                unhealthy = [i for i, ok in enumerate(self.healthy) if not ok]
                if not unhealthy:
                    self.probe = None
                    return
                # those held by a status wait; look again within a period
                sick = [i for i in unhealthy if self.probe_after[i] <= now]
            for i in sick:
                try:
                    sk = self.probe_socks.get(i)
                    if sk is None:
                        sk = self.probe_socks[i] = self.srv[i]._connected()
                    tag = int.from_bytes(os.urandom(8), "big")
                    sk.send(wire.encode_request(wire.OP_INFO, 0, tag, False))
                    sent[sk] = (i, tag)
                except OSError:
                    continue
            end = time.monotonic() + PROBE_EVERY
            while sent and time.monotonic() < end and not self.stop:
                try:
                    ready, _, _ = select.select(list(sent), [], [],
                                                max(0.0, end - time.monotonic()))
                except (OSError, ValueError):
                    break
                for sk in ready:
                    i, tag = sent[sk]
                    try:
                        buf = sk.recv(2048)
                        rep = wire.parse_reply(buf)
                    except (OSError, wire.WireError):
                        continue
                    if rep.tag == tag and rep.request_op == wire.OP_INFO and \
                            rep.status == wire.ST_OK:
                        with self.lock:
                            # a status answered since the probe went out holds it
                            if self.probe_after[i] <= time.monotonic():
                                self.healthy[i] = True
            rest = end - time.monotonic()
            if rest > 0 and not self.stop:
                time.sleep(rest)

    def order_next(self, in_round: List[bool], now: float) -> Tuple[int, float]:
        """Under lock: the first of the order (eligible, held off by earliest
        end, unhealthy) not asked in this round, and when it may be sent to.
        A held-off one counts as not asked (and a RETRY_AFTER takes its
        responder out of the round): it comes back before the unhealthy ones."""
        if all(in_round):
            for i in range(len(in_round)):
                in_round[i] = False
        best, best_rank = -1, 3
        for i in range(len(self.srv)):
            rank = 2 if not self.healthy[i] else 1 if self.hold[i] > now else 0
            # A healthy responder held off by RETRY_AFTER comes before the
            # unhealthy ones even when this round asked it: it is asked again
            # when its hint ends, not after a silent one's resend timer.
            if in_round[i] and rank != 1:
                continue
            if rank < best_rank or (rank == 1 and best_rank == 1
                                    and self.hold[i] < self.hold[best]):
                best, best_rank = i, rank
        return best, max(now, self.hold[best])


class Client:
    """A client for responders tried in the order given.

    servers   "HOST:PORT", "HOST", "[IPV6]:PORT", "[IPV6]" or bare IPv6;
    timeout   each call's deadline in seconds (0.001..60; default 1): a call
              (get, info, one refill of next()) returns or raises by then;
    retries   no longer used: the deadline bounds a call (accepted, ignored);
    hedge_min the hedge delay's floor in seconds (0..0.1; default 0.002);
    hedge_budget_pct  hedges allowed, % of calls (0..100; default 5; 0: none);
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

    def __init__(self, servers: Sequence[str], *, timeout: float = 1.0, retries: int = 3,
                 prefetch: int = 1024, low_water: int = 256, trusted: bool = False,
                 use_range: bool = True, max_skew_ms: int = 300_000, max_age_ms: int = 1000,
                 hedge_min: float = 0.002, hedge_budget_pct: int = 5):
        if isinstance(servers, str):
            servers = [servers]
        if not servers:
            raise AddressError("servers: at least one responder is needed")
        _check("timeout", timeout, 0.001, 60)
        _check("hedge_min", hedge_min, 0, D_MAX)
        _check("hedge_budget_pct", hedge_budget_pct, 0, 100)
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
        self._route = _Route(self._srv, hedge_min, hedge_budget_pct)
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
        self._route.forked()
        if not self._closed:
            for s in self._srv:
                s.reopen()

    # -- lifecycle
    def close(self) -> None:
        """Closes the sockets: every later call raises ClosedError, and the
        IDs still buffered are dropped."""
        self._closed = True
        if hasattr(self, "_route"):
            self._route.close()
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
        deadline = time.monotonic() + self.timeout
        with self._net:
            self._ensure_layout(deadline)
            return self._layout or DEFAULT_LAYOUT

    # -- exchanges
    def _read(self, i: int, op: int, tag: int) -> Optional[wire.Reply]:
        """The reply to (op, tag) queued on responder i's socket, if any.
        ConnectionRefusedError when it refused."""
        srv = self._srv[i]
        while True:
            try:
                buf, frm = srv.sock.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return None
            except ConnectionRefusedError:
                raise
            except OSError:
                if self._closed:
                    raise ClosedError() from None
                return None
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

    def _exchange(self, op: int, count: int, deadline: float) -> wire.Reply:
        """One call as doc/clients.md "Availability" says: the same request
        (one tag) to the responders in order, hedged, resent, moved on, until
        a reply or the deadline; caller holds _net."""
        if self._closed:
            raise ClosedError()
        tag = int.from_bytes(os.urandom(8), "big")
        # RANGE pads for 2^seq_bits IDs per range once INFO gave the layout.
        seq = self._layout.seq_bits if self._layout else 12
        req = wire.encode_request(op, count, tag, not self.trusted, seq)
        r, n = self._route, len(self._srv)
        first = [0.0] * n       # first send to each in this call (0: never)
        last = [0.0] * n        # last send to each
        what: List[Optional[str]] = [None] * n  # what each did, for the error
        in_round, refused_st = [False] * n, [False] * n
        with r.lock:
            r.tokens = min(r.tokens + r.budget, TOKENS_CAP)
            d = r.d
            pending, at = r.order_next(in_round, time.monotonic())
        t_wait = max(4 * d, T_MIN)
        sends, hedge, last_send = 0, False, 0.0

        def schedule(now: float) -> None:
            nonlocal pending, at
            with r.lock:
                pending, at = r.order_next(in_round, now)

        while True:
            now = time.monotonic()
            if self._closed:
                raise ClosedError()
            if now >= deadline:
                with r.lock:
                    for i in range(n):
                        if what[i] == "sent":
                            r.set_unhealthy(i)
                tried = []
                for i, srv in enumerate(self._srv):
                    w = what[i]
                    if w is None:
                        w = "not asked"
                    elif w == "sent":
                        w = f"no reply in {int((now - first[i]) * 1000)} ms"
                    tried.append(f"{srv.spec}: {w}")
                raise NoResponseError(tried)
            if pending >= 0 and now >= at:
                i, pending = pending, -1
                if sends and not hedge:
                    t_wait *= 2
                sends += 1
                first[i] = first[i] or now
                last[i] = last_send = now
                in_round[i] = True
                what[i] = what[i] or "sent"
                self.stats["requests"] += 1
                try:
                    self._srv[i].sock.send(req)
                except ConnectionRefusedError:
                    self._refused(i, what, in_round)
                    schedule(time.monotonic())
                except OSError:
                    if self._closed:
                        raise ClosedError() from None
                continue
            until = deadline
            if pending >= 0:
                until = min(until, at)
            else:
                with r.lock:
                    can_hedge = n > 1 and r.tokens >= 1 and not all(first)
                    if can_hedge and now >= last_send + d:
                        r.tokens -= 1
                        r.hedges += 1
                if can_hedge and now >= last_send + d:
                    self.stats["hedges"] += 1
                    hedge = True
                    schedule(now)
                    continue
                if now >= last_send + t_wait:
                    self.stats["timeouts"] += 1
                    hedge = False
                    schedule(now)
                    continue
                if can_hedge:
                    until = min(until, last_send + d)
                until = min(until, last_send + t_wait)
            asked = [self._srv[i].sock for i in range(n) if first[i]]
            try:
                ready, _, _ = select.select(asked, [], [], max(0.0, until - now))
            except (OSError, ValueError):
                if self._closed:
                    raise ClosedError() from None
                raise
            for sk in ready:
                i = next(k for k in range(n) if self._srv[k].sock is sk)
                try:
                    rep = self._read(i, op, tag)
                except ConnectionRefusedError:
                    self._refused(i, what, in_round)
                    if pending < 0:
                        hedge = False
                        schedule(time.monotonic())
                    continue
                if rep is None:
                    continue
                self.last_reply = rep
                now = time.monotonic()
                if rep.status == wire.ST_OK:
                    with r.lock:
                        r.add_rtt(now - last[i])
                        for j in range(n):
                            if j != i and what[j] == "sent":
                                r.set_unhealthy(j)
                        r.healthy[i] = True
                        r.probe_after[i] = 0.0  # it issues: an older status no longer holds
                    return rep
                if rep.status == wire.ST_RETRY_AFTER:
                    self.stats["retry_after"] += 1
                    hint = min(rep.retry_after_us, RETRY_AFTER_MAX_US) / 1e6
                    with r.lock:
                        r.hold[i] = now + max(hint, RETRY_AFTER_MIN)
                    # out of this round: asked again when its hint ends (while
                    # held, and once eligible again), before the unhealthy ones
                    in_round[i] = False
                    what[i] = f"RETRY_AFTER {rep.retry_after_us // 1000} ms"
                    hedge = False
                    schedule(now)
                    continue
                # the protocol's spelling, as RETRY_AFTER's: "answered NO_LEASE"
                what[i] = "answered " + wire.status_name(rep.status).upper().replace("-", "_")
                if rep.status not in (wire.ST_CLOCK_UNSAFE, wire.ST_NO_LEASE,
                                      wire.ST_REFUSED):
                    # BAD_REQUEST, BAD_VERSION: any responder would say the
                    # same; this one is not unhealthy.
                    raise StatusError(rep)
                # It may issue later (NO_LEASE, CLOCK_UNSAFE), another's policy
                # may admit us (REFUSED): move on, ask it again after REASK.
                refused_st[i] = refused_st[i] or rep.status == wire.ST_REFUSED
                self.stats["failovers"] += 1
                with r.lock:
                    r.hold[i] = now + REASK
                    r.set_unhealthy(i, status_at=now)
                if all(refused_st):
                    raise StatusError(rep)
                hedge = False
                schedule(now)

    def _refused(self, i: int, what: List[Optional[str]], in_round: List[bool]) -> None:
        self.stats["refused"] += 1
        self.stats["failovers"] += 1
        what[i] = "refused"
        r = self._route
        with r.lock:
            r.hold[i] = time.monotonic() + REASK
            r.set_unhealthy(i)

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

    def _ensure_layout(self, deadline: float) -> None:
        if self._info_done:
            return
        try:
            self._adopt_info(self._exchange(wire.OP_INFO, 0, deadline))
        except StatusError as e:
            # BAD_REQUEST, BAD_VERSION: no INFO here, only that check is lost;
            # REFUSED everywhere fails the call (the layout may come later).
            if e.status == wire.ST_REFUSED:
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

    def _fetch(self, use_range: bool, want: int, deadline: float) -> List[Tuple[int, int]]:
        """One LIST or RANGE request, validated; caller holds _net."""
        self._ensure_layout(deadline)
        rep = self._exchange(wire.OP_RANGE if use_range else wire.OP_LIST, want, deadline)
        runs = rep.ranges if use_range else [(i, 1) for i in rep.ids]
        self._validate(rep, runs, want)
        return runs

    # -- one-shot calls
    def get(self) -> int:
        """One ID, one round trip (an ID request)."""
        deadline = time.monotonic() + self.timeout
        with self._net:
            self._ensure_layout(deadline)
            rep = self._exchange(wire.OP_ID, 1, deadline)
            self._validate(rep, [(rep.ids[0], 1)], 1)
            return rep.ids[0]

    def get_n(self, n: int) -> List[int]:
        """n IDs with LIST requests of at most 181 each (asking again while
        a responder answers PARTIAL)."""
        _check("n", n, 0, 1 << 30)
        out: List[int] = []
        deadline = time.monotonic() + self.timeout
        with self._net:
            while len(out) < n:
                out.extend(f for f, _ in self._fetch(False, min(n - len(out), wire.LIST_MAX),
                                                     deadline))
        return out

    def get_range(self, want: int) -> List[Tuple[int, int]]:
        """Up to want (1..65535) IDs as (first, n) runs of consecutive IDs,
        one RANGE request; the responder may give fewer (PARTIAL)."""
        _check("want", want, 1, wire.RANGE_IDS_MAX)
        deadline = time.monotonic() + self.timeout
        with self._net:
            return self._fetch(True, want, deadline)

    def info(self) -> wire.Reply:
        """The current responder's INFO reply (.info holds the record); its
        layout is adopted for the ID checks if none was known."""
        deadline = time.monotonic() + self.timeout
        with self._net:
            rep = self._exchange(wire.OP_INFO, 0, deadline)
            self._adopt_info(rep)
            return rep

    def uuid7(self, n: int = 1) -> List[uuid.UUID]:
        """n (1..90) UUIDv7 with one UUID7 request (a responder may give
        fewer: PARTIAL). Checked as the C client does: version 7, the RFC
        variant, strictly increasing and above the last UUID seen from that
        worker, a time near this clock, and, with the layout, flakewire's
        tag and the datacenter and worker the reply names."""
        _check("n", n, 1, wire.UUID7_MAX)
        deadline = time.monotonic() + self.timeout
        with self._net:
            self._ensure_layout(deadline)
            rep = self._exchange(wire.OP_UUID7, n, deadline)
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
        deadline = time.monotonic() + self.timeout  # a refill is one call
        try:
            while fetched < want:
                with self._net:
                    runs = self._fetch(self.use_range, min(want - fetched, per), deadline)
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
            if err is not None:  # health memory makes the next one fast: a short pause
                self._hold_until = time.monotonic() + REFILL_PAUSE
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
        deadline = time.monotonic() + self.timeout  # a caller waits at most its own
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
                left = deadline - time.monotonic()
                if left <= 0:
                    raise NoResponseError([f"next(): no refill within {self.timeout:g} s"])
                self._buf.wait(left)

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
