// SPDX-License-Identifier: BSD-3-Clause
//! The prefetching `next()`: a pool refilled in bulk by a background
//! thread, handed out in per-thread shares (doc/clients.md, "Prefetch:
//! many callers, one client"), with a maximum age.

use crate::client::{fetch, fetch_uuids, lock, Builder, Client, Shared};
use crate::fork;
use crate::layout::Uuid;
use crate::wire::{Range, LIST_MAX, RANGE_IDS_MAX, UUID7_MAX};
use crate::Error;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// IDs fetched at epoch e are handed out while the epoch is below e + AGE_TICKS.
const AGE_TICKS: u64 = 4;
/// The ticker ends after this many ticks without a take from the pool.
const IDLE_TICKS: u32 = 2 * AGE_TICKS as u32;
const GROW_MAX: usize = 64;
const GROW_MAX_RANGE: usize = 1024;
const GROW_SEQ_MS: usize = 16;
const SHARE_RUNS: usize = 8;
/// Shares of this many clients are kept per thread (older ones are dropped).
const SHARES_PER_THREAD: usize = 16;

struct PoolRun {
    r: Range,
    epoch: u64,
    at: Instant,
}

pub(crate) struct Pool {
    runs: VecDeque<PoolRun>,
    count: u64,
    refilling: bool,
    refill_want: usize,
    refill_gen: u64,
    refill_err: Option<Error>,
    refiller: bool,
    ticking: bool,
    idle_ticks: u32,
    takes: u64,
    takes_seen: u64,
    starved: bool,
    want: usize,
    low: usize,
    last_refill: Option<Instant>,
    uuids: VecDeque<Uuid>,
}

impl Pool {
    pub fn new(o: &Builder) -> Pool {
        Pool {
            runs: VecDeque::new(),
            count: 0,
            refilling: false,
            refill_want: 0,
            refill_gen: 0,
            refill_err: None,
            refiller: false,
            ticking: false,
            idle_ticks: 0,
            takes: 0,
            takes_seen: 0,
            starved: false,
            want: o.prefetch,
            low: o.low_water,
            last_refill: None,
            uuids: VecDeque::new(),
        }
    }

    pub fn clear(&mut self) {
        self.runs.clear();
        self.count = 0;
        self.uuids.clear();
    }
}

/// One thread's share of one client's pool.
struct Share {
    client: u64,
    gen: u64,
    epoch: u64,
    runs: [Range; SHARE_RUNS],
    head: usize,
    n: usize,
}

impl Share {
    fn take(&mut self) -> u64 {
        let r = &mut self.runs[self.head];
        let id = r.first;
        r.first += 1;
        r.n -= 1;
        if r.n == 0 {
            self.head += 1;
            self.n -= 1;
        }
        id
    }
}

thread_local! {
    static SHARES: RefCell<Vec<Share>> = RefCell::new(Vec::new());
}

/// The thread's share for client `id`, created empty if none.
fn with_share<R>(id: u64, f: impl FnOnce(&mut Share) -> R) -> R {
    SHARES.with(|v| {
        let mut v = v.borrow_mut();
        let k = match v.iter().position(|s| s.client == id) {
            Some(k) => k,
            None => {
                if v.len() >= SHARES_PER_THREAD {
                    v.remove(0);
                }
                v.push(Share {
                    client: id,
                    gen: u64::MAX,
                    epoch: 0,
                    runs: [Range::default(); SHARE_RUNS],
                    head: 0,
                    n: 0,
                });
                v.len() - 1
            }
        };
        f(&mut v[k])
    })
}

impl Shared {
    /// Drops the pool's IDs older than the maximum age. Under the pool lock.
    fn drop_expired(&self, p: &mut Pool, now: Instant) {
        let e = self.epoch.load(Ordering::Acquire);
        while let Some(h) = p.runs.front() {
            if h.epoch + AGE_TICKS > e && now.duration_since(h.at) < self.opts.max_age {
                break;
            }
            p.count -= u64::from(h.r.n);
            p.runs.pop_front();
        }
    }

    /// Moves one share (an eighth of a refill, at most 65,535 IDs) to sh. Under the pool lock.
    fn fill(&self, p: &mut Pool, sh: &mut Share) {
        let mut want = ((p.want / 8).max(1) as u64).min(RANGE_IDS_MAX as u64);
        sh.head = 0;
        sh.n = 0;
        sh.epoch = u64::MAX;
        sh.gen = self.gen.load(Ordering::Acquire);
        while want > 0 && sh.n < SHARE_RUNS {
            let h = match p.runs.front_mut() {
                Some(h) => h,
                None => break,
            };
            let k = u64::from(h.r.n).min(want);
            sh.runs[sh.n] = Range { first: h.r.first, n: k as u32 };
            sh.n += 1;
            sh.epoch = sh.epoch.min(h.epoch);
            h.r.first += k;
            h.r.n -= k as u32;
            p.count -= k;
            want -= k;
            if h.r.n == 0 {
                p.runs.pop_front();
            }
        }
    }
}

/// Sizes the next refill as Leaf sizes its segments (doubled while callers
/// find the pool empty, halved when one lasted over half the maximum age,
/// at the largest size the low-water mark doubles) and hands it to the
/// refiller thread. Under the pool lock.
fn start_refill(s: &Arc<Shared>, p: &mut Pool) {
    let o = &s.opts;
    let mut top = o.prefetch * GROW_MAX;
    let seq = s.seq_bits.load(Ordering::Acquire);
    if o.use_range && seq > 0 {
        top = top.max((o.prefetch * GROW_MAX_RANGE).min(GROW_SEQ_MS << seq));
    }
    if top > 1 << 20 {
        top = (1 << 20usize).max(o.prefetch);
    }
    let now = Instant::now();
    let low_for = |want: usize| (want as u64 * o.low_water as u64 / o.prefetch as u64) as usize;
    if let Some(last) = p.last_refill {
        if p.starved && p.want < top {
            p.want = (2 * p.want).min(top);
            p.low = low_for(p.want);
        } else if p.starved {
            p.low = (2 * p.low).max(1).min(2 * p.want);
        } else if now.duration_since(last) > o.max_age / 2 {
            p.want = (p.want / 2).max(o.prefetch);
            p.low = low_for(p.want);
        }
    }
    p.last_refill = Some(now);
    p.starved = false;
    p.refilling = true;
    let mut n = p.want;
    if o.use_range && n > RANGE_IDS_MAX {
        n -= n % RANGE_IDS_MAX; // whole RANGE requests
    }
    p.refill_want = n;
    if p.refiller {
        s.pool_cv.notify_all();
        return;
    }
    p.refiller = true;
    let s2 = Arc::clone(s);
    let forks = fork::generation();
    if thread::Builder::new().name("flakewire-refill".into()).spawn(move || refiller(s2, forks)).is_err() {
        p.refiller = false;
        p.refilling = false;
        p.refill_err =
            Some(Error::Io(std::io::Error::new(std::io::ErrorKind::Other, "cannot start the refill thread")));
        p.refill_gen += 1;
    }
}

/// The refill thread: runs the refills asked for, ends after two maximum
/// ages without one (or at close, or in a forked child).
fn refiller(s: Arc<Shared>, forks: u64) {
    loop {
        let want = {
            let mut p = lock(&s.pool);
            loop {
                if s.closed.load(Ordering::Acquire) || fork::generation() != forks {
                    if fork::generation() == forks {
                        p.refiller = false;
                        p.refilling = false;
                        s.pool_cv.notify_all();
                    }
                    return;
                }
                if p.refill_want > 0 {
                    break;
                }
                let (g, t) = s.pool_cv.wait_timeout(p, 2 * s.opts.max_age).unwrap_or_else(|e| e.into_inner());
                p = g;
                if t.timed_out() && p.refill_want == 0 {
                    p.refiller = false;
                    return;
                }
            }
            std::mem::replace(&mut p.refill_want, 0)
        };
        let per = if s.opts.use_range { RANGE_IDS_MAX } else { LIST_MAX };
        let mut fetched = 0usize;
        let mut err = None;
        while fetched < want {
            let n = (want - fetched).min(per) as u16;
            match fetch(&s, s.opts.use_range, n) {
                Ok(runs) => {
                    let mut p = lock(&s.pool);
                    if s.closed.load(Ordering::Acquire) {
                        err = Some(Error::Closed);
                        break;
                    }
                    let e = s.epoch.load(Ordering::Acquire);
                    let now = Instant::now();
                    for x in runs {
                        let merged = match p.runs.back_mut() {
                            Some(b)
                                if b.epoch == e
                                    && b.r.first + u64::from(b.r.n) == x.first
                                    && b.r.n <= u32::MAX - x.n =>
                            {
                                b.r.n += x.n;
                                true
                            }
                            _ => false,
                        };
                        if !merged {
                            p.runs.push_back(PoolRun { r: x, epoch: e, at: now });
                        }
                        p.count += u64::from(x.n);
                        fetched += x.n as usize;
                    }
                    drop(p);
                    s.pool_cv.notify_all();
                }
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let mut p = lock(&s.pool);
        // After a failed refill the next may start at once: health memory makes it fast.
        p.refill_err = err;
        p.refilling = false;
        p.refill_gen += 1;
        drop(p);
        s.pool_cv.notify_all();
    }
}

fn ensure_ticking(s: &Arc<Shared>, p: &mut Pool) {
    if p.ticking {
        return;
    }
    p.ticking = true;
    p.idle_ticks = 0;
    let s2 = Arc::clone(s);
    let forks = fork::generation();
    if thread::Builder::new().name("flakewire-tick".into()).spawn(move || ticker(s2, forks)).is_err() {
        p.ticking = false;
    }
}

/// Advances the epoch every max_age / 4 while `next` is used, drops
/// expired IDs, keeps the pool above low water; ends when idle.
fn ticker(s: Arc<Shared>, forks: u64) {
    let every = s.opts.max_age / AGE_TICKS as u32;
    loop {
        thread::sleep(every);
        if fork::generation() != forks {
            return;
        }
        let mut p = lock(&s.pool);
        s.epoch.fetch_add(1, Ordering::AcqRel);
        if p.takes == p.takes_seen {
            p.idle_ticks += 1;
        } else {
            p.idle_ticks = 0;
        }
        p.takes_seen = p.takes;
        s.drop_expired(&mut p, Instant::now());
        if s.closed.load(Ordering::Acquire) || p.idle_ticks >= IDLE_TICKS {
            p.ticking = false;
            return;
        }
        if p.count < p.low as u64 && !p.refilling {
            start_refill(&s, &mut p);
        }
    }
}

impl Client {
    /// One ID from the prefetched pool. Each thread takes a share of the
    /// pool (an eighth of a refill) under the client's lock, then hands it
    /// out with no lock, so more threads get more IDs per second. Below
    /// the low-water mark a background thread refills (RANGE requests,
    /// growing while callers drain the pool); a caller waits only when the
    /// pool is empty, at most its deadline, and gets the refill's error if
    /// it fails. IDs older than the maximum age are dropped. A thread's own
    /// IDs increase while its refills are answered by one worker.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&self) -> Result<u64, Error> {
        let s = &*self.s;
        // A relaxed load, not getpid (README.md, "Fork"): fork.rs.
        s.check_fork();
        if s.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let gen = s.gen.load(Ordering::Acquire);
        let epoch = s.epoch.load(Ordering::Relaxed);
        let hit = with_share(s.id, |sh| {
            if sh.gen == gen && sh.n > 0 && sh.epoch + AGE_TICKS > epoch {
                Some(sh.take())
            } else {
                None
            }
        });
        match hit {
            Some(id) => Ok(id),
            None => self.next_slow(),
        }
    }

    #[cold]
    fn next_slow(&self) -> Result<u64, Error> {
        let s = &self.s;
        with_share(s.id, |sh| sh.n = 0); // empty or expired: wasted, never reused
        let deadline = s.deadline();
        let mut p = lock(&s.pool);
        p.takes += 1;
        ensure_ticking(s, &mut p);
        let mut waited = false;
        let mut gen = 0;
        loop {
            s.closed_check()?;
            let now = Instant::now();
            s.drop_expired(&mut p, now);
            if p.count > 0 {
                // the ticker may have ended while this caller waited out a long refill
                ensure_ticking(s, &mut p);
                let id = with_share(s.id, |sh| {
                    s.fill(&mut p, sh);
                    sh.take()
                });
                if p.count < p.low as u64 && !p.refilling {
                    start_refill(s, &mut p);
                }
                return Ok(id);
            }
            if waited && p.refill_gen != gen {
                if let Some(e) = &p.refill_err {
                    return Err(e.duplicate());
                }
            }
            if now >= deadline {
                return Err(Error::NoResponse {
                    tried: vec![format!("no refill within the deadline of {:?}", s.opts.timeout)],
                });
            }
            p.starved = true;
            if !p.refilling {
                start_refill(s, &mut p);
            }
            gen = p.refill_gen;
            waited = true;
            p = s.pool_cv.wait_timeout(p, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// One UUIDv7 from a small buffer refilled 90 at a time (one UUID7 call).
    pub fn next_uuid7(&self) -> Result<Uuid, Error> {
        let s = &self.s;
        s.check_fork();
        s.closed_check()?;
        if let Some(u) = lock(&s.pool).uuids.pop_front() {
            return Ok(u);
        }
        let got = fetch_uuids(s)?;
        let mut p = lock(&s.pool);
        s.closed_check()?;
        p.uuids.extend(got.iter().skip(1).copied());
        debug_assert!(p.uuids.len() <= UUID7_MAX);
        Ok(got[0])
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Client>();
    let _ = Duration::ZERO;
}
