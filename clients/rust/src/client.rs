// SPDX-License-Identifier: BSD-3-Clause
//! The client: options, sockets, one call under the availability contract
//! (doc/clients.md, "Availability: deadlines, hedging, health"), the
//! background probe, and the one-round-trip calls.

use crate::fork;
use crate::health::Health;
use crate::layout::{Layout, Uuid};
use crate::prefetch::Pool;
use crate::wire::*;
use crate::Error;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often an unhealthy responder is probed with INFO.
const PROBE_EVERY: Duration = Duration::from_millis(100);
/// A responder that refused during a call is asked again after this.
const REFUSED_RESEND: Duration = Duration::from_millis(10);
/// The resend timer's floor: T = max(4 d, 50 ms).
const RESEND_MIN: Duration = Duration::from_millis(50);
/// While two or more sends of a call wait, each socket is read in turn with
/// this sleep between rounds (std has no poll; only hedged calls wait so).
const MULTI_WAIT_SLICE: Duration = Duration::from_micros(100);
/// Workers whose last ID is remembered for the "above the last" check.
const WORKERS_TRACKED: usize = 64;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A random 64-bit tag: SipHash with the process's random keys over a
/// counter, the time and the PID (a forked child asks with other tags).
pub(crate) fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = SystemTime::now().duration_since(UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

fn now_unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn fmt_ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 10.0 {
        format!("{:.0} ms", ms)
    } else {
        format!("{:.1} ms", ms)
    }
}

fn status_text(st: u8) -> String {
    status_name(st).to_uppercase().replace('-', "_")
}

/// Options of a [`Client`]: `Client::builder().timeout(...).build(&servers)`.
/// Every time is a [`Duration`]; defaults are those of every flakewire client.
///
/// Every option in one chain (each option's default and range are in its
/// doc); an option out of range is an error that names it, its value and the
/// range. `build` resolves the names and opens the sockets; it asks nothing yet.
///
/// ```
/// use std::time::Duration;
/// let c = flakewire::Client::builder()
///     .timeout(Duration::from_millis(300)) // each call's deadline
///     .hedge_min(Duration::from_millis(5))
///     .hedge_budget_pct(0) // never hedge
///     .prefetch(4096)
///     .low_water(1024) // 0: refill only when the pool is empty
///     .trusted(true)
///     .use_range(false)
///     .max_skew(None)
///     .max_age(Duration::from_millis(200))
///     .build(&["127.0.0.1:4242"])?;
/// let e = flakewire::Client::builder().prefetch(0).build(&["127.0.0.1:4242"]).unwrap_err();
/// assert_eq!(e.to_string(), "flakewire: prefetch 0 not in 1..1048576");
/// # drop(c);
/// # Ok::<(), flakewire::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    pub(crate) timeout: Duration,
    pub(crate) hedge_min: Duration,
    pub(crate) hedge_budget_pct: u32,
    pub(crate) prefetch: usize,
    pub(crate) low_water: usize,
    pub(crate) trusted: bool,
    pub(crate) use_range: bool,
    pub(crate) max_skew: Option<Duration>,
    pub(crate) max_age: Duration,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            timeout: Duration::from_millis(1000),
            hedge_min: Duration::from_millis(2),
            hedge_budget_pct: 5,
            prefetch: 1024,
            low_water: 256,
            trusted: false,
            use_range: true,
            max_skew: Some(Duration::from_secs(300)),
            max_age: Duration::from_secs(1),
        }
    }
}

impl Builder {
    /// The per-call deadline (1 ms..60 s; 1 s): a call (one `get`, one
    /// refill of `next`, one INFO) returns an ID or fails at most this long
    /// after it started, whatever the responders do.
    pub fn timeout(mut self, d: Duration) -> Builder {
        self.timeout = d;
        self
    }

    /// The hedge delay's floor (0..100 ms; 2 ms): a call sends to the next
    /// responder after the 99th percentile of this client's recent round
    /// trips, never earlier than this.
    pub fn hedge_min(mut self, d: Duration) -> Builder {
        self.hedge_min = d;
        self
    }

    /// The hedge budget in % of calls (0..100; 5; 0: no hedging): a token
    /// bucket of 10 that starts full and gains `pct / 100` per call.
    pub fn hedge_budget_pct(mut self, pct: u32) -> Builder {
        self.hedge_budget_pct = pct;
        self
    }

    /// IDs per refill of `next` at the start (1..2^20; 1024); refills grow
    /// while callers drain the pool.
    pub fn prefetch(mut self, n: usize) -> Builder {
        self.prefetch = n;
        self
    }

    /// `next` refills in the background below this many IDs (0..2^20; 256).
    pub fn low_water(mut self, n: usize) -> Builder {
        self.low_water = n;
        self
    }

    /// Do not pad requests (false): only for a source the responders trust
    /// (PROTOCOL.md section 6).
    pub fn trusted(mut self, yes: bool) -> Builder {
        self.trusted = yes;
        self
    }

    /// Refill with RANGE requests (true), else LIST.
    pub fn use_range(mut self, yes: bool) -> Builder {
        self.use_range = yes;
        self
    }

    /// Reject IDs further than this from the local clock (5 min; `None`: off).
    pub fn max_skew(mut self, d: Option<Duration>) -> Builder {
        self.max_skew = d;
        self
    }

    /// The longest `next` keeps a prefetched ID (10 ms..1 h; 1 s): older
    /// IDs are dropped (wasted, never reused), so a buffer filled long ago
    /// never hands out old times.
    pub fn max_age(mut self, d: Duration) -> Builder {
        self.max_age = d;
        self
    }

    fn check(&self) -> Result<(), Error> {
        let bad = |name: &str, value: String, range: &str| {
            Err(Error::Option { name: name.into(), value, range: range.into() })
        };
        let ms = Duration::from_millis;
        if self.timeout < ms(1) || self.timeout > ms(60_000) {
            return bad("timeout", format!("{:?}", self.timeout), "1ms..60s");
        }
        if self.hedge_min > ms(100) {
            return bad("hedge_min", format!("{:?}", self.hedge_min), "0..100ms");
        }
        if self.hedge_budget_pct > 100 {
            return bad("hedge_budget_pct", self.hedge_budget_pct.to_string(), "0..100");
        }
        if self.prefetch < 1 || self.prefetch > 1 << 20 {
            return bad("prefetch", self.prefetch.to_string(), "1..1048576");
        }
        if self.low_water > 1 << 20 {
            return bad("low_water", self.low_water.to_string(), "0..1048576");
        }
        if self.max_age < ms(10) || self.max_age > ms(3_600_000) {
            return bad("max_age", format!("{:?}", self.max_age), "10ms..1h");
        }
        Ok(())
    }

    /// The client for `servers`, tried in this order (see [`Client::new`]).
    pub fn build<A: ToSocketAddrs>(self, servers: &[A]) -> Result<Client, Error> {
        self.check()?;
        if servers.is_empty() {
            return Err(Error::Address { server: String::new(), msg: "at least one responder is needed".into() });
        }
        let mut addrs = Vec::with_capacity(servers.len());
        for (k, s) in servers.iter().enumerate() {
            let name = format!("#{} of {}", k + 1, servers.len());
            let mut it = match s.to_socket_addrs() {
                Ok(it) => it,
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                    return Err(Error::Address { server: name, msg: e.to_string() })
                }
                Err(e) => return Err(Error::Resolve { server: name, source: e }),
            };
            match it.next() {
                Some(a) if a.port() != 0 => addrs.push(a),
                Some(_) => return Err(Error::Address { server: name, msg: "port 0 not in 1..65535".into() }),
                None => {
                    let e = io::Error::new(io::ErrorKind::NotFound, "no address");
                    return Err(Error::Resolve { server: name, source: e });
                }
            }
        }
        fork::init()?;
        let net = Net::open(&addrs)?;
        let n = addrs.len();
        let forks = fork::generation();
        static IDS: AtomicU64 = AtomicU64::new(1);
        let s = Shared {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            names: addrs.iter().map(|a| a.to_string()).collect(),
            addrs,
            closed: AtomicBool::new(false),
            forks: AtomicU64::new(forks),
            gen: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            seq_bits: AtomicU32::new(0),
            stats: StatsCounters::default(),
            health: Mutex::new(Health::new(n)),
            net: Mutex::new(NetSlot { net: Some(Box::new(net)), forks }),
            net_cv: Condvar::new(),
            pool: Mutex::new(Pool::new(&self)),
            pool_cv: Condvar::new(),
            fork: Mutex::new(()),
            opts: self,
        };
        Ok(Client { s: Arc::new(s) })
    }
}

/// What a client did, counted since it was created ([`Client::stats`];
/// example: [`Client`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Calls (one get, one refill request, one INFO, ...).
    pub calls: u64,
    /// Datagrams sent for calls (first sends, hedges, resends, failovers).
    pub requests: u64,
    /// Hedged requests (budgeted).
    pub hedges: u64,
    /// Resends after the resend timer T.
    pub resends: u64,
    /// Sends to the next responder after a refusal or a status.
    pub failovers: u64,
    /// ICMP port unreachable seen.
    pub refused: u64,
    /// RETRY_AFTER replies.
    pub retry_after: u64,
    /// Datagrams ignored (foreign tag, op or garbage).
    pub stray: u64,
    /// INFO probes sent to unhealthy responders.
    pub probes: u64,
    /// Calls that failed at their deadline.
    pub deadlines: u64,
}

#[derive(Default)]
pub(crate) struct StatsCounters {
    calls: AtomicU64,
    requests: AtomicU64,
    hedges: AtomicU64,
    resends: AtomicU64,
    failovers: AtomicU64,
    refused: AtomicU64,
    retry_after: AtomicU64,
    stray: AtomicU64,
    probes: AtomicU64,
    deadlines: AtomicU64,
}

fn inc(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// One responder's state as the client sees it ([`Client::health`];
/// example: [`Client`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponderHealth {
    /// The responder's address.
    pub addr: SocketAddr,
    /// False from a refusal, an error status or a missed reply until a probe answers.
    pub healthy: bool,
    /// How much longer a RETRY_AFTER holds it off, if it does.
    pub held_for: Option<Duration>,
    /// What it last did wrong ("refused", "no reply in 80 ms", "RETRY_AFTER 900 ms", ...).
    pub reason: String,
}

pub(crate) struct NetSlot {
    net: Option<Box<Net>>,
    forks: u64,
}

/// The sockets and what the replies taught; owned by one call at a time.
pub(crate) struct Net {
    socks: Vec<UdpSocket>,
    pub layout: Option<Layout>,
    info_done: bool,
    seen: HashMap<u32, u64>,
    seen_order: VecDeque<u32>,
    last_uuid: HashMap<u32, [u8; 16]>,
    pub last_reply: Option<Reply>,
    rx: Vec<u8>,
}

fn connect(a: &SocketAddr) -> io::Result<UdpSocket> {
    let any: SocketAddr = if a.is_ipv4() { "0.0.0.0:0".parse().unwrap() } else { "[::]:0".parse().unwrap() };
    let s = UdpSocket::bind(any)?;
    // Connected: the kernel reports ICMP port unreachable as ECONNREFUSED.
    s.connect(a)?;
    Ok(s)
}

impl Net {
    fn open(addrs: &[SocketAddr]) -> Result<Net, Error> {
        let socks = addrs.iter().map(connect).collect::<io::Result<Vec<_>>>()?;
        Ok(Net {
            socks,
            layout: None,
            info_done: false,
            seen: HashMap::new(),
            seen_order: VecDeque::new(),
            last_uuid: HashMap::new(),
            last_reply: None,
            rx: vec![0u8; 2048],
        })
    }
}

pub(crate) struct Shared {
    pub id: u64,
    pub opts: Builder,
    addrs: Vec<SocketAddr>,
    names: Vec<String>,
    pub closed: AtomicBool,
    /// The fork generation (fork.rs) the client's state belongs to.
    pub forks: AtomicU64,
    /// Bumped at close and after a fork: every thread's share is dropped.
    pub gen: AtomicU64,
    /// Advanced every max_age / 4 while `next` is used (prefetch.rs).
    pub epoch: AtomicU64,
    pub seq_bits: AtomicU32,
    stats: StatsCounters,
    pub health: Mutex<Health>,
    net: Mutex<NetSlot>,
    net_cv: Condvar,
    pub pool: Mutex<Pool>,
    pub pool_cv: Condvar,
    fork: Mutex<()>,
}

/// The net, taken from its slot for one call; given back on drop.
pub(crate) struct NetGuard<'a> {
    s: &'a Shared,
    net: Option<Box<Net>>,
    forks: u64,
}

impl std::ops::Deref for NetGuard<'_> {
    type Target = Net;
    fn deref(&self) -> &Net {
        self.net.as_ref().expect("net taken")
    }
}
impl std::ops::DerefMut for NetGuard<'_> {
    fn deref_mut(&mut self) -> &mut Net {
        self.net.as_mut().expect("net taken")
    }
}
impl Drop for NetGuard<'_> {
    fn drop(&mut self) {
        let mut slot = lock(&self.s.net);
        if slot.forks == self.forks && slot.net.is_none() {
            slot.net = self.net.take();
        }
        drop(slot);
        self.s.net_cv.notify_one();
    }
}

enum Event {
    Nothing,
    Reply(usize, Reply),
    Refused(usize),
    Failed(usize, String),
}

#[derive(Clone, Default)]
struct Sent {
    first: Option<Instant>,
    last: Option<Instant>,
    pending: bool,
    in_round: bool,
    refused_at: Option<Instant>,
    bad_status: bool,
    what: String,
}

impl Shared {
    #[inline]
    pub fn check_fork(&self) {
        let g = fork::generation();
        if g != self.forks.load(Ordering::Relaxed) {
            self.after_fork(g);
        }
    }

    /// In a forked child: no buffers, no health memory, an empty RTT
    /// window and a full budget, as a new client (the net is reopened when
    /// next taken: the parent's sockets are shared with it).
    #[cold]
    fn after_fork(&self, g: u64) {
        let _g = lock(&self.fork);
        if self.forks.load(Ordering::Acquire) == g {
            return;
        }
        *lock(&self.pool) = Pool::new(&self.opts);
        *lock(&self.health) = Health::new(self.addrs.len());
        self.gen.fetch_add(1, Ordering::AcqRel);
        self.forks.store(g, Ordering::Release);
    }

    pub fn closed_check(&self) -> Result<(), Error> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// Takes the net for one call, waiting for another call at most until `deadline`.
    pub fn acquire(&self, deadline: Instant) -> Result<NetGuard<'_>, Error> {
        let forks = fork::generation();
        let mut slot = lock(&self.net);
        loop {
            self.closed_check()?;
            if slot.forks != forks {
                slot.net = Some(Box::new(Net::open(&self.addrs)?));
                slot.forks = forks;
            }
            if let Some(n) = slot.net.take() {
                return Ok(NetGuard { s: self, net: Some(n), forks });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::NoResponse { tried: vec!["another call held the client past the deadline".into()] });
            }
            slot = self.net_cv.wait_timeout(slot, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    pub fn deadline(&self) -> Instant {
        Instant::now() + self.opts.timeout
    }

    fn ready_at(&self, h: &Health, sent: &Sent, i: usize, now: Instant) -> Instant {
        let mut t = now;
        if let Some(u) = h.resp[i].hold_until {
            t = t.max(u);
        }
        if let Some(r) = sent.refused_at {
            t = t.max(r + REFUSED_RESEND);
        }
        t
    }

    fn send(&self, net: &mut Net, sent: &mut [Sent], asked: &mut Vec<usize>, i: usize, req: &[u8]) -> Option<Event> {
        let now = Instant::now();
        let x = &mut sent[i];
        if x.first.is_none() {
            x.first = Some(now);
            asked.push(i);
        }
        x.last = Some(now);
        x.in_round = true;
        inc(&self.stats.requests);
        match net.socks[i].send(req) {
            Ok(_) => {
                x.pending = true;
                None
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Some(Event::Refused(i)),
            Err(e) => Some(Event::Failed(i, e.to_string())),
        }
    }

    /// One datagram from socket i until `until`, checked against tag and op.
    fn recv_one(&self, net: &mut Net, i: usize, op: u8, tag: u64, until: Instant, block: bool) -> Event {
        loop {
            let now = Instant::now();
            if block {
                let wait = if until > now { until - now } else { Duration::from_micros(10) };
                if net.socks[i].set_read_timeout(Some(wait.max(Duration::from_micros(10)))).is_err() {
                    return Event::Nothing;
                }
            }
            let Net { socks, rx, .. } = net;
            let got = socks[i].recv_from(rx);
            match got {
                Ok((n, from)) => {
                    if from != self.addrs[i] {
                        inc(&self.stats.stray);
                        continue;
                    }
                    match parse_reply(&rx[..n]) {
                        Ok(r) if r.tag == tag && r.op & !OP_REPLY == op => return Event::Reply(i, r),
                        Err(WireError::Version(t)) if t == tag => {
                            let r = Reply { op: op | OP_REPLY, status: ST_BAD_VERSION, tag, ..Default::default() };
                            return Event::Reply(i, r);
                        }
                        _ => inc(&self.stats.stray),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Event::Refused(i),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Event::Nothing
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Event::Failed(i, e.to_string()),
            }
            if block && Instant::now() >= until {
                return Event::Nothing;
            }
        }
    }

    /// Waits for an event on the pending sends until `until`.
    fn wait(&self, net: &mut Net, sent: &[Sent], op: u8, tag: u64, until: Instant) -> Event {
        let pending: Vec<usize> = (0..sent.len()).filter(|&i| sent[i].pending).collect();
        match pending.len() {
            0 => {
                let now = Instant::now();
                if until > now {
                    thread::sleep(until - now);
                }
                Event::Nothing
            }
            1 => self.recv_one(net, pending[0], op, tag, until, true),
            _ => {
                for &i in &pending {
                    let _ = net.socks[i].set_nonblocking(true);
                }
                let ev = loop {
                    let mut ev = Event::Nothing;
                    for &i in &pending {
                        ev = self.recv_one(net, i, op, tag, until, false);
                        if !matches!(ev, Event::Nothing) {
                            break;
                        }
                    }
                    let now = Instant::now();
                    if !matches!(ev, Event::Nothing) || now >= until {
                        break ev;
                    }
                    thread::sleep(MULTI_WAIT_SLICE.min(until - now));
                };
                for &i in &pending {
                    let _ = net.socks[i].set_nonblocking(false);
                }
                ev
            }
        }
    }

    fn no_response(&self, sent: &mut [Sent], asked: &[usize], now: Instant) -> Error {
        inc(&self.stats.deadlines);
        let mut h = lock(&self.health);
        let mut tried = Vec::new();
        for &i in asked {
            let x = &mut sent[i];
            // A lone responder's NO_LEASE, asked again every 10 ms, stays "answered NO_LEASE".
            if x.pending && (x.what.is_empty() || now - x.last.unwrap_or(now) >= RESEND_MIN) {
                x.what = format!("no reply in {}", fmt_ms(now - x.first.unwrap_or(now)));
            }
            if x.pending {
                h.mark_unhealthy(i, &x.what);
            }
            tried.push(format!("{}: {}", self.names[i], x.what));
        }
        Error::NoResponse { tried }
    }
}

/// One call: the request to the responders in health order, with hedges,
/// resends and failovers, until a valid reply or `deadline`
/// (doc/clients.md, "One call"). Returns the reply and who answered.
pub(crate) fn exchange(
    s: &Arc<Shared>,
    net: &mut Net,
    op: u8,
    count: u16,
    deadline: Instant,
) -> Result<(Reply, usize), Error> {
    s.closed_check()?;
    inc(&s.stats.calls);
    let tag = random_u64();
    let seq = net.layout.map_or(12, |l| u32::from(l.seq_bits));
    let req = encode_request(op, count, tag, !s.opts.trusted, seq);
    let n = s.addrs.len();
    let d = {
        let mut h = lock(&s.health);
        h.add_budget(s.opts.hedge_budget_pct);
        h.hedge_delay(s.opts.hedge_min)
    };
    let mut resend_after = (4 * d).max(RESEND_MIN);
    let mut sent = vec![Sent::default(); n];
    let mut asked: Vec<usize> = Vec::with_capacity(n);
    let mut last_send = Instant::now();
    let mut hedge_considered = false;
    let mut need_send = true;
    let mut ev = Event::Nothing;
    loop {
        s.closed_check()?;
        let now = Instant::now();
        if matches!(ev, Event::Nothing) {
            if now >= deadline {
                let e = s.no_response(&mut sent, &asked, now);
                ensure_prober(s);
                return Err(e);
            }
            let mut wake = deadline;
            if need_send {
                let (i, ready) = {
                    let h = lock(&s.health);
                    let order = h.order(now);
                    // The first of the order not asked in this round, or one held off by
                    // RETRY_AFTER even if this round asked it (a RETRY_AFTER also takes it out
                    // of the round): asked again when its hint ends, before the unhealthy ones.
                    let i = match order.iter().copied().find(|&i| !sent[i].in_round || h.held_off(i, now)) {
                        Some(i) => i,
                        None => {
                            sent.iter_mut().for_each(|x| x.in_round = false);
                            order[0]
                        }
                    };
                    (i, s.ready_at(&h, &sent[i], i, now))
                };
                if ready <= now {
                    need_send = false;
                    hedge_considered = false;
                    last_send = now;
                    ev = s.send(net, &mut sent, &mut asked, i, &req).unwrap_or(Event::Nothing);
                    continue;
                }
                wake = wake.min(ready);
            } else {
                if n > 1 && !hedge_considered && now >= last_send + d {
                    hedge_considered = true;
                    let target = {
                        let mut h = lock(&s.health);
                        let order = h.order(now);
                        let t = order
                            .into_iter()
                            .find(|&i| sent[i].first.is_none() && s.ready_at(&h, &sent[i], i, now) <= now);
                        match t {
                            Some(t) if s.opts.hedge_budget_pct > 0 && h.take_token() => Some(t),
                            _ => None,
                        }
                    };
                    if let Some(t) = target {
                        inc(&s.stats.hedges);
                        last_send = now;
                        ev = s.send(net, &mut sent, &mut asked, t, &req).unwrap_or(Event::Nothing);
                        continue;
                    }
                }
                if now >= last_send + resend_after {
                    inc(&s.stats.resends);
                    resend_after = resend_after.saturating_mul(2);
                    need_send = true;
                    continue;
                }
                if n > 1 && !hedge_considered {
                    wake = wake.min(last_send + d);
                }
                wake = wake.min(last_send + resend_after);
            }
            ev = s.wait(net, &sent, op, tag, wake);
            continue;
        }
        let now = Instant::now();
        match std::mem::replace(&mut ev, Event::Nothing) {
            Event::Nothing => {}
            Event::Refused(i) => {
                inc(&s.stats.refused);
                inc(&s.stats.failovers);
                let x = &mut sent[i];
                x.pending = false;
                x.refused_at = Some(now);
                x.what = "refused".into();
                lock(&s.health).mark_unhealthy(i, "refused");
                ensure_prober(s);
                need_send = true;
            }
            Event::Failed(i, e) => {
                inc(&s.stats.failovers);
                let x = &mut sent[i];
                x.pending = false;
                x.refused_at = Some(now);
                x.what = e.clone();
                lock(&s.health).mark_unhealthy(i, &e);
                ensure_prober(s);
                need_send = true;
            }
            Event::Reply(i, r) => match r.status {
                ST_OK => {
                    let rtt = now - sent[i].last.unwrap_or(now);
                    {
                        let mut h = lock(&s.health);
                        h.record_rtt(rtt);
                        h.mark_healthy(i);
                        for &j in &asked {
                            if j != i && sent[j].pending {
                                let what = format!(
                                    "no reply in {} (lost a hedge race)",
                                    fmt_ms(now - sent[j].first.unwrap_or(now))
                                );
                                h.mark_unhealthy(j, &what);
                            }
                        }
                    }
                    ensure_prober(s);
                    net.last_reply = Some(r.clone());
                    return Ok((r, i));
                }
                ST_RETRY_AFTER => {
                    inc(&s.stats.retry_after);
                    inc(&s.stats.failovers);
                    let hint = Duration::from_micros(u64::from(r.retry_after_us))
                        .clamp(Duration::from_millis(1), Duration::from_secs(1));
                    let x = &mut sent[i];
                    x.pending = false;
                    x.in_round = false; // asked again when its hint ends, before the unhealthy ones
                    x.what = format!("RETRY_AFTER {}", fmt_ms(hint));
                    lock(&s.health).hold(i, now + hint, &x.what);
                    net.last_reply = Some(r);
                    need_send = true;
                }
                // doc/clients.md, "Statuses": BAD_REQUEST, BAD_VERSION end the call (the responder stays
                // healthy); REFUSED once every responder answered it; NO_LEASE, CLOCK_UNSAFE, REFUSED move on,
                // back to a lone responder every 10 ms.
                st => {
                    let x = &mut sent[i];
                    x.pending = false;
                    x.what = format!("answered {}", status_text(st));
                    net.last_reply = Some(r);
                    if st == ST_BAD_REQUEST || st == ST_BAD_VERSION {
                        return Err(Error::Status { status: st, server: s.names[i].clone() });
                    }
                    inc(&s.stats.failovers);
                    x.bad_status |= st == ST_REFUSED;
                    x.refused_at = Some(now);
                    lock(&s.health).mark_status(i, &x.what, now);
                    ensure_prober(s);
                    if sent.iter().all(|x| x.bad_status) {
                        return Err(Error::Status { status: st, server: s.names[i].clone() });
                    }
                    need_send = true;
                }
            },
        }
    }
}

/// Starts the probe thread when a responder is unhealthy and none runs.
pub(crate) fn ensure_prober(s: &Arc<Shared>) {
    let mut h = lock(&s.health);
    if h.prober || !h.any_unhealthy() || s.closed.load(Ordering::Acquire) {
        return;
    }
    h.prober = true;
    drop(h);
    let s2 = Arc::clone(s);
    let forks = fork::generation();
    let spawned = thread::Builder::new().name("flakewire-probe".into()).spawn(move || probe(s2, forks));
    if spawned.is_err() {
        lock(&s.health).prober = false;
    }
}

/// Every 100 ms an INFO to each unhealthy responder, on sockets of its own
/// (a probe never blocks a call), but not to one held by its last status
/// (`STATUS_HOLD`); the first valid INFO reply marks it healthy.
fn probe(s: Arc<Shared>, forks: u64) {
    let mut socks: HashMap<usize, UdpSocket> = HashMap::new();
    let mut prev_tag = 0u64;
    let mut rx = [0u8; 2048];
    loop {
        if s.closed.load(Ordering::Acquire) || fork::generation() != forks {
            if fork::generation() == forks {
                lock(&s.health).prober = false;
            }
            return;
        }
        let list: Vec<usize> = {
            let mut h = lock(&s.health);
            if !h.any_unhealthy() {
                h.prober = false;
                return;
            }
            // Those held by a status are looked at again next round.
            let now = Instant::now();
            (0..h.resp.len()).filter(|&i| !h.resp[i].healthy && h.probe_due(i, now)).collect()
        };
        let tag = random_u64();
        let req = encode_request(OP_INFO, 0, tag, !s.opts.trusted, 12);
        let start = Instant::now();
        for &i in &list {
            if let std::collections::hash_map::Entry::Vacant(e) = socks.entry(i) {
                if let Ok(sock) = connect(&s.addrs[i]) {
                    e.insert(sock);
                }
            }
            if let Some(sock) = socks.get(&i) {
                inc(&s.stats.probes);
                let _ = sock.send(&req);
            }
        }
        let end = start + PROBE_EVERY;
        for &i in &list {
            let sock = match socks.get(&i) {
                Some(x) => x,
                None => continue,
            };
            loop {
                let now = Instant::now();
                let wait = if end > now { end - now } else { Duration::from_millis(1) };
                if sock.set_read_timeout(Some(wait)).is_err() {
                    break;
                }
                match sock.recv(&mut rx) {
                    Ok(n) => {
                        if let Ok(r) = parse_reply(&rx[..n]) {
                            if (r.tag == tag || r.tag == prev_tag) && r.op == OP_INFO | OP_REPLY && r.status == ST_OK {
                                lock(&s.health).probe_answered(i, Instant::now());
                                break;
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
                if Instant::now() >= end {
                    break;
                }
            }
        }
        prev_tag = tag;
        let now = Instant::now();
        if end > now {
            thread::sleep(end - now);
        }
    }
}

/// The client: a connected UDP socket per responder, the availability
/// state, and the prefetch pool. `Send + Sync`: share one per process
/// (in an `Arc` or a static) and call it from every thread.
///
/// Every method in one example (each method's doc says what it does):
///
/// ```no_run
/// let c = flakewire::Client::new(&["10.0.0.5:4242", "10.0.0.6:4242"])?;
/// let c2 = flakewire::Client::builder().trusted(true).build(&["127.0.0.1:4242"])?;
/// // Prefetched, per-thread shares:
/// let id = c.next()?;
/// let u = c.next_uuid7()?; // lowercase 8-4-4-4-12: 0190f1d4-8c2e-7f3a-b7e2-...
/// println!("{} {}", id, u);
/// // One round trip each:
/// let one = c2.get()?;
/// assert_eq!(c.get_n(500)?.len(), 500);
/// let total: u64 = c.get_range(10_000)?.iter().map(|r| u64::from(r.n)).sum();
/// let partial = c.last_reply().map_or(false, |r| r.flags & flakewire::wire::FLAG_PARTIAL != 0);
/// for u in c.uuid7(10)? {
///     println!("{}", u);
/// }
/// let r = c.info()?;
/// println!("worker {} features {:?}", r.worker, r.info.map(|i| i.features));
/// let info = r.info.expect("an INFO reply carries its record");
/// println!("{} sequence bits, uuid7: {}", info.seq_bits, info.supports_uuid7());
/// let p = c.layout()?.decode(c.next()?)?;
/// println!("issued at {} by worker {}", p.unix_ms, p.worker);
/// // What the client did ([`Stats`]), each responder's state ([`ResponderHealth`]):
/// println!("{:?} {} {} {}", c.stats(), one, total, partial);
/// assert_eq!(c2.stats().hedges, 0);
/// for r in c.health() {
///     println!("{} healthy={} held={:?} {}", r.addr, r.healthy, r.held_for, r.reason);
/// }
/// c.close();
/// assert!(matches!(c.next(), Err(flakewire::Error::Closed)));
/// # Ok::<(), flakewire::Error>(())
/// ```
pub struct Client {
    pub(crate) s: Arc<Shared>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("servers", &self.s.names).finish()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.close();
    }
}

impl Client {
    /// A client with the default options for `servers`, tried in this
    /// order (the first one while it is healthy): anything
    /// [`ToSocketAddrs`] takes, e.g. `"10.0.0.5:4242"`, `"[2001:db8::5]:4242"`,
    /// `("ids.example", 4242)`. Resolves each name once, here.
    pub fn new<A: ToSocketAddrs>(servers: &[A]) -> Result<Client, Error> {
        Builder::default().build(servers)
    }

    /// The options builder, starting from the defaults.
    pub fn builder() -> Builder {
        Builder::default()
    }

    fn begin(&self) -> Result<Instant, Error> {
        self.s.check_fork();
        self.s.closed_check()?;
        Ok(self.s.deadline())
    }

    /// One ID with one ID request (one round trip; INFO first on a new client).
    pub fn get(&self) -> Result<u64, Error> {
        let deadline = self.begin()?;
        let mut net = self.s.acquire(deadline)?;
        ensure_layout(&self.s, &mut net, deadline)?;
        let (r, _) = exchange(&self.s, &mut net, OP_ID, 1, deadline)?;
        let runs = [Range { first: r.ids[0], n: 1 }];
        validate(&self.s, &mut net, &r, &runs, 1)?;
        Ok(r.ids[0])
    }

    /// `n` IDs with LIST requests of at most 181 each (each a call of its
    /// own), asking again while a responder answers PARTIAL.
    pub fn get_n(&self, n: usize) -> Result<Vec<u64>, Error> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let want = (n - out.len()).min(LIST_MAX) as u16;
            let runs = fetch(&self.s, false, want)?;
            out.extend(runs.iter().map(|x| x.first));
        }
        Ok(out)
    }

    /// Up to `want` (1..65535) IDs as runs of consecutive IDs with one RANGE
    /// request; the responder may give fewer (PARTIAL).
    pub fn get_range(&self, want: usize) -> Result<Vec<Range>, Error> {
        if !(1..=RANGE_IDS_MAX).contains(&want) {
            return Err(Error::Option { name: "want".into(), value: want.to_string(), range: "1..65535".into() });
        }
        fetch(&self.s, true, want as u16)
    }

    /// The INFO reply of the responder that answers first (`reply.info`:
    /// layout, epoch, clock offset, features); its layout is adopted for
    /// the ID checks if none was known.
    pub fn info(&self) -> Result<Reply, Error> {
        let deadline = self.begin()?;
        let mut net = self.s.acquire(deadline)?;
        let (r, _) = exchange(&self.s, &mut net, OP_INFO, 0, deadline)?;
        adopt_info(&self.s, &mut net, &r);
        Ok(r)
    }

    /// The responders' layout (for [`Layout::decode`] and
    /// [`Layout::read_uuid`]), asking INFO if no call has learnt it yet;
    /// [`Layout::DEFAULT`] when the INFO carries no valid layout.
    pub fn layout(&self) -> Result<Layout, Error> {
        let deadline = self.begin()?;
        let mut net = self.s.acquire(deadline)?;
        ensure_layout(&self.s, &mut net, deadline)?;
        Ok(net.layout.unwrap_or_default())
    }

    /// Up to `n` (1..90) UUIDv7 with one UUID7 request (PARTIAL may give
    /// fewer), checked: version 7, the RFC variant, increasing and above
    /// the last from that worker, a time near this clock, and (with the
    /// layout) flakewire's tag and the datacenter and worker of the reply.
    pub fn uuid7(&self, n: usize) -> Result<Vec<Uuid>, Error> {
        if !(1..=UUID7_MAX).contains(&n) {
            return Err(Error::Option { name: "n".into(), value: n.to_string(), range: "1..90".into() });
        }
        let deadline = self.begin()?;
        let mut net = self.s.acquire(deadline)?;
        ensure_layout(&self.s, &mut net, deadline)?;
        let (r, _) = exchange(&self.s, &mut net, OP_UUID7, n as u16, deadline)?;
        check_uuids(&self.s, &mut net, &r, n)?;
        Ok(r.uuids.into_iter().map(Uuid::from_bytes).collect())
    }

    /// For tests of the fork path only: the next call sees another fork
    /// generation, as in a forked child (buffers, shares and health dropped,
    /// sockets reopened), for this client only.
    #[doc(hidden)]
    pub fn pretend_forked(&self) {
        self.s.forks.store(u64::MAX, Ordering::Release);
        lock(&self.s.net).forks = u64::MAX;
    }

    /// What the client did so far.
    pub fn stats(&self) -> Stats {
        let t = &self.s.stats;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            calls: g(&t.calls),
            requests: g(&t.requests),
            hedges: g(&t.hedges),
            resends: g(&t.resends),
            failovers: g(&t.failovers),
            refused: g(&t.refused),
            retry_after: g(&t.retry_after),
            stray: g(&t.stray),
            probes: g(&t.probes),
            deadlines: g(&t.deadlines),
        }
    }

    /// Each responder's health, in configured order.
    pub fn health(&self) -> Vec<ResponderHealth> {
        self.s.check_fork();
        let h = lock(&self.s.health);
        let now = Instant::now();
        h.resp
            .iter()
            .zip(&self.s.addrs)
            .map(|(r, a)| ResponderHealth {
                addr: *a,
                healthy: r.healthy,
                held_for: r.hold_until.and_then(|u| if u > now { Some(u - now) } else { None }),
                reason: r.reason.clone(),
            })
            .collect()
    }

    /// The header and body of the last reply accepted (statuses included).
    pub fn last_reply(&self) -> Option<Reply> {
        let net = self.s.acquire(self.s.deadline()).ok()?;
        net.last_reply.clone()
    }

    /// Closes the client: every later call, and a caller waiting for a
    /// refill, fails with [`Error::Closed`]; buffered IDs are dropped;
    /// background threads end. Dropping the client closes it too.
    pub fn close(&self) {
        if self.s.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.s.gen.fetch_add(1, Ordering::AcqRel);
        let mut p = lock(&self.s.pool);
        p.clear();
        drop(p);
        self.s.pool_cv.notify_all();
        self.s.net_cv.notify_all();
    }
}

pub(crate) fn adopt_info(s: &Shared, net: &mut Net, r: &Reply) {
    if let Some(i) = r.info {
        let l = Layout {
            epoch_ms: i.epoch_ms,
            time_bits: i.time_bits,
            dc_bits: i.dc_bits,
            worker_bits: i.worker_bits,
            seq_bits: i.seq_bits,
        };
        if net.layout.is_none() && l.validate().is_ok() {
            net.layout = Some(l);
            s.seq_bits.store(u32::from(l.seq_bits), Ordering::Release);
        }
    }
    net.info_done = true;
}

pub(crate) fn ensure_layout(s: &Arc<Shared>, net: &mut Net, deadline: Instant) -> Result<(), Error> {
    if net.info_done {
        return Ok(());
    }
    match exchange(s, net, OP_INFO, 0, deadline) {
        Ok((r, _)) => {
            adopt_info(s, net, &r);
            Ok(())
        }
        // A responder that answers INFO with an error status has no layout to give.
        Err(Error::Status { .. }) => {
            net.info_done = true;
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn check_id(s: &Shared, net: &Net, id: u64, r: &Reply, now_ms: i64) -> Result<(), Error> {
    let l = match net.layout {
        Some(l) => l,
        None => return Ok(()),
    };
    let p = l.decode(id)?;
    if p.datacenter != u32::from(r.datacenter) || p.worker != u32::from(r.worker) {
        return Err(Error::InvalidReply(format!(
            "ID {} names worker {}/{}, the reply {}/{}",
            id, p.datacenter, p.worker, r.datacenter, r.worker
        )));
    }
    if let Some(max) = s.opts.max_skew {
        let skew = p.unix_ms as i64 - now_ms;
        if skew.unsigned_abs() as u128 > max.as_millis() {
            return Err(Error::InvalidReply(format!("ID {} is {} ms from this clock", id, skew)));
        }
    }
    Ok(())
}

/// Every ID positive, increasing within the reply and above the last one
/// from that worker, no more than asked, naming the reply's worker, near
/// this clock.
pub(crate) fn validate(s: &Shared, net: &mut Net, r: &Reply, runs: &[Range], asked: u64) -> Result<(), Error> {
    const I64_MAX: u64 = (1 << 63) - 1;
    let now_ms = now_unix_ms();
    if runs.is_empty() {
        return Err(Error::InvalidReply("OK reply without IDs".into()));
    }
    let (mut total, mut prev) = (0u64, 0u64);
    for (i, x) in runs.iter().enumerate() {
        if x.n == 0 || x.first == 0 || x.first > I64_MAX || u64::from(x.n - 1) > I64_MAX - x.first {
            return Err(Error::InvalidReply(format!("ID run {}+{} is not positive int64", x.first, x.n)));
        }
        let last = x.first + u64::from(x.n) - 1;
        if i > 0 && x.first <= prev {
            return Err(Error::InvalidReply("IDs of a reply do not increase".into()));
        }
        check_id(s, net, x.first, r, now_ms)?;
        check_id(s, net, last, r, now_ms)?;
        prev = last;
        total += u64::from(x.n);
    }
    if total > asked {
        return Err(Error::InvalidReply(format!("{} IDs for {} asked", total, asked)));
    }
    let key = (u32::from(r.datacenter) << 16) | u32::from(r.worker);
    if let Some(&last) = net.seen.get(&key) {
        if runs[0].first <= last {
            return Err(Error::InvalidReply(format!("ID {} not above {} from the same worker", runs[0].first, last)));
        }
    } else {
        net.seen_order.push_back(key);
        if net.seen_order.len() > WORKERS_TRACKED {
            if let Some(old) = net.seen_order.pop_front() {
                net.seen.remove(&old);
            }
        }
    }
    net.seen.insert(key, prev);
    Ok(())
}

fn check_uuids(s: &Shared, net: &mut Net, r: &Reply, n: usize) -> Result<(), Error> {
    if r.uuids.is_empty() || r.uuids.len() > n {
        return Err(Error::InvalidReply(format!("{} UUIDs for {} asked", r.uuids.len(), n)));
    }
    let l = net.layout.unwrap_or_default();
    let now_ms = now_unix_ms();
    for (i, u) in r.uuids.iter().enumerate() {
        let uu = Uuid::from_bytes(*u);
        let p = l.read_uuid(&uu);
        if !p.is_v7 {
            return Err(Error::InvalidReply(format!("{} is not a UUIDv7", uu)));
        }
        if net.layout.is_some()
            && (!p.flakewire || p.datacenter != u32::from(r.datacenter) || p.worker != u32::from(r.worker))
        {
            return Err(Error::InvalidReply(format!("{} does not carry worker {}/{}", uu, r.datacenter, r.worker)));
        }
        if i > 0 && u <= &r.uuids[i - 1] {
            return Err(Error::InvalidReply("UUIDs of a reply do not increase".into()));
        }
        if let Some(max) = s.opts.max_skew {
            let skew = p.unix_ms as i64 - now_ms;
            if skew.unsigned_abs() as u128 > max.as_millis() {
                return Err(Error::InvalidReply(format!("UUID {} is {} ms from this clock", uu, skew)));
            }
        }
    }
    let key = (u32::from(r.datacenter) << 16) | u32::from(r.worker);
    if let Some(last) = net.last_uuid.get(&key) {
        if &r.uuids[0] <= last {
            return Err(Error::InvalidReply("UUID not above the last one from that worker".into()));
        }
    }
    if net.last_uuid.len() >= WORKERS_TRACKED {
        net.last_uuid.clear();
    }
    net.last_uuid.insert(key, r.uuids[r.uuids.len() - 1]);
    Ok(())
}

/// One LIST or RANGE call (INFO first if needed), validated.
pub(crate) fn fetch(s: &Arc<Shared>, use_range: bool, want: u16) -> Result<Vec<Range>, Error> {
    s.check_fork();
    s.closed_check()?;
    let deadline = s.deadline();
    let mut net = s.acquire(deadline)?;
    ensure_layout(s, &mut net, deadline)?;
    let op = if use_range { OP_RANGE } else { OP_LIST };
    let (r, _) = exchange(s, &mut net, op, want, deadline)?;
    let runs: Vec<Range> =
        if use_range { r.ranges.clone() } else { r.ids.iter().map(|&id| Range { first: id, n: 1 }).collect() };
    validate(s, &mut net, &r, &runs, u64::from(want))?;
    Ok(runs)
}

/// A UUID7 call of 90 for the `next_uuid7` buffer.
pub(crate) fn fetch_uuids(s: &Arc<Shared>) -> Result<Vec<Uuid>, Error> {
    let deadline = s.deadline();
    let mut net = s.acquire(deadline)?;
    ensure_layout(s, &mut net, deadline)?;
    let (r, _) = exchange(s, &mut net, OP_UUID7, UUID7_MAX as u16, deadline)?;
    check_uuids(s, &mut net, &r, UUID7_MAX)?;
    Ok(r.uuids.into_iter().map(Uuid::from_bytes).collect())
}
