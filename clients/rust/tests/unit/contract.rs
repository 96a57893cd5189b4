// SPDX-License-Identifier: BSD-3-Clause
//! The availability contract's seven tests (doc/clients.md, "Availability:
//! deadlines, hedging, health"), against the scripted fake responder. No
//! timing is asserted as speed: only what the contract promises (a hint
//! not slept, a deadline kept).

use crate::common::*;
use flakewire::wire::*;
use flakewire::{Client, Error};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

fn wait_for(what: &str, limit: Duration, f: impl Fn() -> bool) {
    let end = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < end, "{} within {:?}", what, limit);
        thread::sleep(Duration::from_millis(5));
    }
}

/// 1. A silent first responder, a live second: a new client's first get
/// (INFO included) succeeds, the first is marked unhealthy, and later calls
/// go straight to the second (the silent one sees at most the probes).
#[test]
fn silent_first_responder_is_skipped() {
    let silent = Fake::silent();
    let live = Fake::answering(9);
    let c = Client::new(&[silent.addr, live.addr]).unwrap();
    let id = c.get().expect("first get over [silent, live]");
    assert_eq!(worker_of(id), 9);
    assert!(!c.health()[0].healthy, "silent responder still healthy: {:?}", c.health());
    assert!(c.health()[1].healthy);
    let calls_before = silent.calls();
    assert!(calls_before <= 1, "{} ID requests reached the silent responder", calls_before);
    let started = Instant::now();
    for _ in 0..20 {
        assert_eq!(worker_of(c.get().unwrap()), 9);
    }
    let probes_bound = 2 + (started.elapsed().as_millis() / 100) as u64 + 1;
    assert_eq!(silent.calls(), calls_before, "later calls reached the silent responder");
    assert!(silent.count(OP_INFO) <= probes_bound, "{} INFO to the silent responder", silent.count(OP_INFO));
    assert!(c.stats().probes >= 1 || started.elapsed() < Duration::from_millis(100));
}

/// 2. The silent responder starts answering: a probe marks it healthy and
/// calls return to it.
#[test]
fn probe_brings_a_responder_back() {
    let first = Fake::silent();
    let second = Fake::answering(9);
    let c = Client::new(&[first.addr, second.addr]).unwrap();
    c.get().unwrap();
    assert!(!c.health()[0].healthy);
    first.set_script(ok_script());
    wait_for("a probe marking the first responder healthy", Duration::from_secs(2), || c.health()[0].healthy);
    assert!(c.stats().probes >= 1);
    let before = first.count(OP_ID);
    let id = c.get().unwrap();
    assert_eq!(worker_of(id), 0, "the call did not return to the first responder");
    assert_eq!(first.count(OP_ID), before + 1);
}

/// 3. RETRY_AFTER from the first: the call is answered by the second at
/// once (one round trip, no sleep of the hint); the first is not used
/// until its hint passes.
#[test]
fn retry_after_moves_on_at_once() {
    let hint = Duration::from_millis(400);
    let until = Arc::new(Mutex::new(Instant::now() + Duration::from_secs(3600)));
    let u2 = until.clone();
    let first = Fake::new(
        1,
        Box::new(move |r, ids| {
            if r.op == OP_INFO || Instant::now() >= *u2.lock().unwrap() {
                vec![Out(Duration::ZERO, ids.ok(r))]
            } else {
                vec![Out(Duration::ZERO, status(r, ST_RETRY_AFTER, hint.as_micros() as u32))]
            }
        }),
    );
    let second = Fake::answering(2);
    let c = Client::new(&[first.addr, second.addr]).unwrap();
    c.layout().unwrap(); // INFO from the first, so the next call is one request
    *until.lock().unwrap() = Instant::now() + hint;
    let t = Instant::now();
    let id = c.get().unwrap();
    let took = t.elapsed();
    assert_eq!(worker_of(id), 2);
    assert!(took < hint, "the call took {:?}: it slept the hint of {:?}", took, hint);
    assert_eq!(first.count(OP_ID), 1);
    assert_eq!(second.count(OP_ID), 1);
    assert!(c.health()[0].held_for.is_some(), "{:?}", c.health());
    // Within the hint: straight to the second.
    for _ in 0..5 {
        assert_eq!(worker_of(c.get().unwrap()), 2);
    }
    assert_eq!(first.count(OP_ID), 1, "the held-off responder was asked within its hint");
    // After the hint: back to the first.
    thread::sleep(hint.saturating_sub(t.elapsed()) + Duration::from_millis(20));
    assert_eq!(worker_of(c.get().unwrap()), 1, "not back on the first responder after its hint");
    assert_eq!(c.stats().retry_after, 1);
}

/// 4. One responder answering RETRY_AFTER (50 ms) three times, then OK:
/// the call succeeds.
#[test]
fn lone_responder_retry_after_is_waited_out() {
    let n2 = Arc::new(AtomicU64::new(0));
    let f = Fake::new(
        5,
        Box::new(move |r, ids| {
            if r.op != OP_INFO && n2.fetch_add(1, Ordering::AcqRel) < 3 {
                vec![Out(Duration::ZERO, status(r, ST_RETRY_AFTER, 50_000))]
            } else {
                vec![Out(Duration::ZERO, ids.ok(r))]
            }
        }),
    );
    let c = Client::new(&[f.addr]).unwrap();
    let t = Instant::now();
    let id = c.get().expect("a lone responder's RETRY_AFTER is waited out within the deadline");
    assert_eq!(worker_of(id), 5);
    assert_eq!(f.count(OP_ID), 4);
    assert_eq!(c.stats().retry_after, 3);
    assert!(t.elapsed() >= Duration::from_millis(150), "the hints were not waited: {:?}", t.elapsed());
}

/// 5. One responder refused (nothing bound) that starts listening 200 ms
/// later: a call with the default deadline succeeds.
#[test]
fn refused_lone_responder_that_starts_is_reached() {
    let addr = dead_port();
    let c = Client::new(&[addr.as_str()]).unwrap();
    let a2 = addr;
    let starter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        Fake::on(&a2, 6, ok_script()).expect("bind the late responder")
    });
    let t = Instant::now();
    let got = c.get();
    let f = starter.join().unwrap();
    let id = got.expect("a call with the default deadline reaches the responder once it binds");
    assert_eq!(worker_of(id), 6);
    assert!(t.elapsed() >= Duration::from_millis(150));
    assert!(c.stats().refused >= 1);
    drop(f);
}

/// 6. All silent: the call fails with the no-response error no earlier than
/// the deadline and not much later, naming each responder.
#[test]
fn all_silent_fails_at_the_deadline_naming_each() {
    let a = Fake::silent();
    let b = Fake::silent();
    let deadline = Duration::from_millis(400);
    let c = Client::builder().timeout(deadline).build(&[a.addr, b.addr]).unwrap();
    let t = Instant::now();
    let e = c.get().unwrap_err();
    let took = t.elapsed();
    assert!(took >= deadline, "failed after {:?}, before the deadline", took);
    assert!(took <= deadline + Duration::from_secs(2), "failed after {:?}", took);
    match &e {
        Error::NoResponse { tried } => {
            assert_eq!(tried.len(), 2, "{:?}", tried);
            assert!(tried[0].starts_with(&format!("{}: no reply in ", a.addr)), "{:?}", tried);
            assert!(tried[1].starts_with(&format!("{}: no reply in ", b.addr)), "{:?}", tried);
        }
        other => panic!("not the no-response error: {:?}", other),
    }
    assert!(e.to_string().contains("no reply in"), "{}", e);
    assert!(e.is_timeout());
}

/// 7. The hedge budget: every call's first request is slower (30 ms) than
/// the hedge delay, its hedge fast; over 200 calls the hedges are at most
/// 10 + 5 % of 200 (+1), and the bucket's 10 were used.
#[test]
fn hedges_stay_within_the_budget() {
    let seen = Arc::new(Mutex::new(std::collections::HashSet::new()));
    let hedged = Arc::new(AtomicU64::new(0));
    let script = |seen: Arc<Mutex<std::collections::HashSet<u64>>>, hedged: Arc<AtomicU64>| -> Script {
        Box::new(move |r, ids| {
            let first = seen.lock().unwrap().insert(r.tag);
            if first {
                vec![Out(Duration::from_millis(30), ids.ok(r))]
            } else {
                hedged.fetch_add(1, Ordering::AcqRel);
                vec![Out(Duration::ZERO, ids.ok(r))]
            }
        })
    };
    let a = Fake::new(1, script(seen.clone(), hedged.clone()));
    let b = Fake::new(2, script(seen, hedged.clone()));
    let c = Client::new(&[a.addr, b.addr]).unwrap();
    for _ in 0..200 {
        c.get().unwrap();
    }
    let st = c.stats();
    let bound = 10 + 200 * 5 / 100 + 1 + 1; // + the INFO call's share
    assert!(st.hedges <= bound, "{} hedges over 200 calls, budget {}", st.hedges, bound);
    assert!(st.hedges >= 10, "only {} hedges: the full bucket was not used", st.hedges);
    let second_sends = hedged.load(Ordering::Acquire);
    assert!(second_sends <= bound, "{} second requests of a call reached the fakes", second_sends);
}

// The contract's "Statuses" (doc/clients.md): one test per rule.

/// A fake answering INFO, and ID requests with `st` while `bad(n)` holds for
/// the n-th of them (from 0).
fn status_fake(worker: u16, st: u8, bad: impl Fn(u64) -> bool + Send + Sync + 'static) -> Fake {
    let n = AtomicU64::new(0);
    Fake::new(
        worker,
        Box::new(move |r, ids| {
            if r.op != OP_INFO && bad(n.fetch_add(1, Ordering::AcqRel)) {
                vec![Out(Duration::ZERO, status(r, st, 0))]
            } else {
                vec![Out(Duration::ZERO, ids.ok(r))]
            }
        }),
    )
}

/// A lone responder answering NO_LEASE twice, then OK: the call succeeds.
#[test]
fn lone_no_lease_is_asked_again() {
    let f = status_fake(5, ST_NO_LEASE, |n| n < 2);
    let c = Client::new(&[f.addr]).unwrap();
    let id = c.get().expect("a lone responder's NO_LEASE is asked again within the deadline");
    assert_eq!(worker_of(id), 5);
    assert_eq!(f.count(OP_ID), 3);
}

/// A lone responder answering NO_LEASE always: the no-response error at
/// the deadline (not before), naming the status.
#[test]
fn lone_no_lease_fails_at_the_deadline_naming_it() {
    let f = status_fake(5, ST_NO_LEASE, |_| true);
    let deadline = Duration::from_millis(400);
    let c = Client::builder().timeout(deadline).build(&[f.addr]).unwrap();
    let t = Instant::now();
    let e = c.get().unwrap_err();
    let took = t.elapsed();
    assert!(took >= deadline && took <= deadline + Duration::from_secs(2), "failed after {:?}", took);
    match &e {
        Error::NoResponse { tried } => assert_eq!(tried, &[format!("{}: answered NO_LEASE", f.addr)]),
        other => panic!("not the no-response error: {:?}", other),
    }
    assert!(f.count(OP_ID) >= 3, "{} ID requests: not asked again", f.count(OP_ID));
}

/// Two responders both answering REFUSED: Error::Status once both did,
/// well before the deadline.
#[test]
fn all_refused_fails_at_once() {
    let a = status_fake(1, ST_REFUSED, |_| true);
    let b = status_fake(2, ST_REFUSED, |_| true);
    let deadline = Duration::from_secs(10);
    let c = Client::builder().timeout(deadline).build(&[a.addr, b.addr]).unwrap();
    let t = Instant::now();
    match c.get() {
        Err(Error::Status { status, .. }) => assert_eq!(status, ST_REFUSED),
        other => panic!("not the status error: {:?}", other),
    }
    assert!(t.elapsed() < deadline / 2, "failed after {:?}", t.elapsed());
    assert!(a.count(OP_ID) >= 1 && b.count(OP_ID) >= 1, "{} and {} ID requests", a.count(OP_ID), b.count(OP_ID));
    assert!(!c.health()[0].healthy && !c.health()[1].healthy, "{:?}", c.health());
}

/// The client's hold of a responder unhealthy for a status before its probe (STATUS_HOLD in health.rs).
const STATUS_HOLD: Duration = Duration::from_secs(1);

/// The first answering REFUSED, the second OK: the second's ID. The first
/// is unhealthy after the call and is not probed for STATUS_HOLD (before,
/// the probe's INFO made it healthy again within a round trip, so every call
/// asked it first). Once it admits us, the probe after the hold, and no
/// earlier, makes it healthy, and calls return to it.
#[test]
fn refused_moves_on() {
    let refuse = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let r2 = refuse.clone();
    let a = status_fake(1, ST_REFUSED, move |_| r2.load(Ordering::Acquire));
    let b = Fake::answering(2);
    let c = Client::new(&[a.addr, b.addr]).unwrap();
    c.layout().unwrap(); // INFO; should its reply lose a hedge race, the probe makes both healthy again:
    wait_for("both healthy", Duration::from_secs(3), || c.health().iter().all(|h| h.healthy));
    let t = Instant::now();
    assert_eq!(worker_of(c.get().expect("the second answers")), 2);
    // (more than one if a slow reply from the second brought a resend)
    assert!(a.count(OP_ID) >= 1, "{} ID requests to the first", a.count(OP_ID));
    assert!(!c.health()[0].healthy, "the REFUSED responder is not unhealthy after the call: {:?}", c.health());
    // It admits us from now on; no call runs, so only a probe can bring it back.
    refuse.store(false, Ordering::Release);
    wait_for("a probe marking the first healthy", Duration::from_secs(5), || c.health()[0].healthy);
    assert!(t.elapsed() >= STATUS_HOLD, "healthy again {:?} after its REFUSED, within the hold", t.elapsed());
    // Calls return to it (a slow reply on a loaded machine may lose a hedge race: a few tries).
    let end = Instant::now() + Duration::from_secs(5);
    let mut w = worker_of(c.get().unwrap());
    while w != 1 && Instant::now() < end {
        thread::sleep(Duration::from_millis(10));
        w = worker_of(c.get().unwrap());
    }
    assert_eq!(w, 1, "calls did not return to the first after the hold");
}

/// A responder that answered RETRY_AFTER is asked again before an unhealthy
/// one, although this call asked it already: once its hint has passed, and as
/// the earliest hold when no responder is eligible. Responders s (silent, found
/// so by the first call: unhealthy), a, and b (never issues; answers INFO, so
/// it is healthy, until it falls silent). 1: a's RETRY_AFTER 200 ms, read while
/// a is held, sends the call to b; at b's resend timer (400 ms or more after
/// that send) a's hint has passed: a answers, s is not asked (before, a counted
/// as asked in that round and the call went to s). 2: with b unhealthy too, a's
/// three RETRY_AFTER 50 ms and its OK are all the call's sends (before, each
/// sent the call to a silent one, whose resend timer came after the hint). No
/// hedging, and 20 calls first with a hedge floor of 100 ms: the resend timer
/// is then 400 ms, so a slow reply on a loaded machine does not send the call
/// elsewhere either.
#[test]
fn retry_after_before_unhealthy() {
    let ras = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let hint_us = Arc::new(AtomicU64::new(0));
    let (r2, h2) = (ras.clone(), hint_us.clone());
    let s = Fake::silent();
    let a = Fake::new(
        2,
        Box::new(move |r, ids| {
            if r.op == OP_ID && r2.fetch_sub(1, Ordering::AcqRel) > 0 {
                vec![Out(Duration::ZERO, status(r, ST_RETRY_AFTER, h2.load(Ordering::Acquire) as u32))]
            } else {
                vec![Out(Duration::ZERO, ids.ok(r))]
            }
        }),
    );
    let b_off = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let b2 = b_off.clone();
    let b = Fake::new(
        3,
        Box::new(move |r, ids| {
            if r.op == OP_INFO && !b2.load(Ordering::Acquire) {
                vec![Out(Duration::ZERO, ids.ok(r))]
            } else {
                vec![]
            }
        }),
    );
    let c = Client::builder()
        .timeout(Duration::from_secs(2))
        .hedge_budget_pct(0)
        .hedge_min(Duration::from_millis(100))
        .build(&[s.addr, a.addr, b.addr])
        .unwrap();
    for _ in 0..20 {
        assert_eq!(worker_of(c.get().unwrap()), 2); // the first finds s silent
    }
    // Should a slow reply have sent a call to b (or a lost a race), the probe brings it back.
    wait_for("a and b healthy", Duration::from_secs(3), || c.health()[1].healthy && c.health()[2].healthy);
    assert!(!c.health()[0].healthy, "{:?}", c.health());
    b_off.store(true, Ordering::Release);
    // 1. Its hint passed while the call waited for b.
    let (s_ids, a_ids, b_ids) = (s.count(OP_ID), a.count(OP_ID), b.count(OP_ID));
    hint_us.store(200_000, Ordering::Release);
    ras.store(1, Ordering::Release);
    assert_eq!(worker_of(c.get().unwrap()), 2);
    assert_eq!(s.count(OP_ID), s_ids, "ID requests to s");
    assert_eq!(a.count(OP_ID), a_ids + 2, "ID requests to a (RETRY_AFTER, then OK)");
    assert_eq!(b.count(OP_ID), b_ids + 1, "ID requests to b");
    assert!(!c.health()[2].healthy, "b, silent, still healthy");
    // 2. No responder eligible: a, held off, before the unhealthy ones.
    let a_ids = a.count(OP_ID);
    hint_us.store(50_000, Ordering::Release);
    ras.store(3, Ordering::Release);
    assert_eq!(worker_of(c.get().unwrap()), 2);
    assert_eq!(s.count(OP_ID), s_ids, "ID requests to s");
    assert_eq!(b.count(OP_ID), b_ids + 1, "ID requests to b");
    assert_eq!(a.count(OP_ID), a_ids + 4, "ID requests to a (3 RETRY_AFTER, then OK)");
}

/// BAD_REQUEST (and BAD_VERSION) from the first: Error::Status at once, the
/// second never asked, the first still healthy. The first answers 20 calls
/// first (a warm client; should a slow round trip lose a race, the probe
/// makes both healthy again before the test goes on), and
/// there is no hedging (a hedge after d would ask the second).
#[test]
fn bad_request_ends_the_call() {
    for st in [ST_BAD_REQUEST, ST_BAD_VERSION] {
        let on = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let on2 = on.clone();
        let a = status_fake(1, st, move |_| on2.load(Ordering::Acquire));
        let b = Fake::answering(2);
        let deadline = Duration::from_secs(10);
        let c = Client::builder().timeout(deadline).hedge_budget_pct(0).build(&[a.addr, b.addr]).unwrap();
        for _ in 0..20 {
            c.get().unwrap();
        }
        wait_for("both healthy", Duration::from_secs(3), || c.health().iter().all(|h| h.healthy));
        on.store(true, Ordering::Release);
        let (before, probes) = (b.calls() + b.count(OP_INFO), c.stats().probes);
        let t = Instant::now();
        match c.get() {
            Err(Error::Status { status, .. }) => assert_eq!(status, st),
            other => panic!("status {}: not the status error: {:?}", st, other),
        }
        assert!(t.elapsed() < deadline / 2, "failed after {:?}", t.elapsed());
        thread::sleep(Duration::from_millis(150)); // a probe would have gone by now
        assert_eq!(b.calls() + b.count(OP_INFO), before, "status {}: the second was asked", st);
        assert!(c.health()[0].healthy, "status {}: {:?}", st, c.health());
        assert_eq!(c.stats().probes, probes);
    }
}
