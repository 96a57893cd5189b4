// SPDX-License-Identifier: BSD-3-Clause
//! Unit tests of the client against the scripted fake responder: what every
//! flakewire client does (doc/clients.md, "Tests").

use crate::common::*;
use flakewire::wire::*;
use flakewire::{Client, Error, Layout};
use std::collections::HashSet;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

fn quick() -> flakewire::Builder {
    Client::builder().timeout(Duration::from_millis(300))
}

#[test]
fn handles_are_send_sync_and_errors_are_std_errors() {
    fn is<T: Send + Sync + 'static>() {}
    is::<Client>();
    is::<Error>();
    fn err<E: std::error::Error + Send + Sync + 'static>() {}
    err::<Error>();
}

#[test]
fn strays_are_ignored() {
    let f = Fake::new(
        7,
        Box::new(|r, ids| {
            if r.op == OP_INFO {
                return vec![Out(Duration::ZERO, ids.ok(r))];
            }
            let good = ids.ok(r);
            let mut other_tag = good.clone();
            other_tag[15] ^= 1;
            let mut other_op = good.clone();
            other_op[3] = OP_LIST | OP_REPLY;
            vec![
                Out(Duration::ZERO, b"junk".to_vec()),
                Out(Duration::ZERO, other_tag),
                Out(Duration::ZERO, other_op),
                Out(Duration::ZERO, good),
            ]
        }),
    );
    let c = quick().build(&[f.addr]).unwrap();
    let id = c.get().unwrap();
    assert_eq!(worker_of(id), 7);
    assert_eq!(c.stats().stray, 3);
}

#[test]
fn invalid_ids_are_rejected() {
    type BadId = Box<dyn Fn(&Ids) -> u64 + Send + Sync>;
    let cases: Vec<(&str, BadId)> = vec![
        ("worker", Box::new(|ids: &Ids| ids.id_at(now_ms(), 0) ^ (1 << 12))),
        ("sign", Box::new(|ids: &Ids| ids.id_at(now_ms(), 0) | (1 << 63))),
        ("time", Box::new(|_: &Ids| (1000 << 22) | (7 << 12))),
    ];
    for (name, bad) in cases {
        let f = Fake::new(
            7,
            Box::new(move |r, ids| {
                if r.op == OP_INFO {
                    return vec![Out(Duration::ZERO, ids.ok(r))];
                }
                let body = bad(ids).to_be_bytes();
                vec![Out(Duration::ZERO, reply(r.op, r.tag, ST_OK, 0, 7, &body, 1))]
            }),
        );
        let c = quick().build(&[f.addr]).unwrap();
        match c.get() {
            Err(Error::InvalidReply(_)) => {}
            other => panic!("{}: {:?}", name, other),
        }
    }
}

#[test]
fn error_statuses_move_on_and_fail_alone() {
    for st in [ST_NO_LEASE, ST_CLOCK_UNSAFE, ST_REFUSED] {
        let a = Fake::new(1, Box::new(move |r, _| vec![Out(Duration::ZERO, status(r, st, 0))]));
        let b = Fake::answering(9);
        let c = quick().build(&[a.addr, b.addr]).unwrap();
        let id = c.get().unwrap_or_else(|e| panic!("status {}: {}", st, e));
        assert_eq!(worker_of(id), 9);
        assert!(!c.health()[0].healthy);
        assert!(c.stats().failovers >= 1);
        // Alone: NO_LEASE and CLOCK_UNSAFE asked again until the deadline, which names them; REFUSED at once
        // (before the contract's "Statuses": each an Error::Status at once).
        let c = quick().build(&[a.addr]).unwrap();
        let t = Instant::now();
        let named = format!("{}: answered {}", a.addr, status_name(st).to_uppercase().replace('-', "_"));
        match c.get() {
            Err(Error::Status { status, .. }) if st == ST_REFUSED && status == st => {
                assert!(t.elapsed() < Duration::from_millis(300), "REFUSED alone waited for the deadline");
            }
            Err(Error::NoResponse { tried }) if st != ST_REFUSED && tried == [named.clone()] => {}
            other => panic!("status {} alone: {:?}", st, other),
        }
    }
}

#[test]
fn refused_fails_over_at_once() {
    let live = Fake::answering(3);
    let c = Client::builder().timeout(Duration::from_secs(2)).build(&[dead_port().as_str(), &live.addr_s()]).unwrap();
    c.get().unwrap();
    let st = c.stats();
    assert!(st.refused >= 1, "{:?}", st);
    assert_eq!(st.resends, 0, "{:?}", st);
    assert_eq!(c.health()[0].reason, "refused");
}

#[test]
fn no_response_names_each_server() {
    let silent = Fake::silent();
    let dead = dead_port();
    let c = Client::builder().timeout(Duration::from_millis(100)).build(&[silent.addr_s(), dead.clone()]).unwrap();
    let e = c.get().unwrap_err();
    match &e {
        Error::NoResponse { tried } => {
            assert_eq!(tried.len(), 2, "{:?}", tried);
            assert!(tried[0].starts_with(&format!("{}: no reply in", silent.addr)), "{:?}", tried);
            assert_eq!(tried[1], format!("{}: refused", dead), "{:?}", tried);
        }
        other => panic!("{:?}", other),
    }
}

#[test]
fn closed_ends_hand_outs() {
    let f = Fake::answering(7);
    let c = quick().use_range(false).prefetch(3).low_water(0).build(&[f.addr]).unwrap();
    c.next().unwrap();
    c.close();
    assert!(matches!(c.next(), Err(Error::Closed)), "next after close with IDs buffered");
    assert!(matches!(c.get(), Err(Error::Closed)));
    assert!(matches!(c.next_uuid7(), Err(Error::Closed)));
}

#[test]
fn layout_before_any_id_and_uuid7() {
    let f = Fake::answering(7);
    let c = quick().build(&[f.addr]).unwrap();
    assert_eq!(c.layout().unwrap(), Layout::DEFAULT);
    let us = c.uuid7(5).unwrap();
    assert_eq!(us.len(), 5);
    let mut seen = HashSet::new();
    for _ in 0..200 {
        let u = c.next_uuid7().unwrap();
        let p = Layout::DEFAULT.read_uuid(&u);
        assert!(p.is_v7 && p.flakewire && p.worker == 7, "{} {:?}", u, p);
        let s = u.to_string();
        assert_eq!(s.len(), 36);
        assert_eq!(s, s.to_lowercase());
        assert!(seen.insert(u));
    }
    assert_eq!(f.count(OP_UUID7), 1 + 3, "next_uuid7 asks 90 at a time");
}

#[test]
fn options_out_of_range_name_the_key_value_and_range() {
    let a = ["127.0.0.1:4242"];
    let e = Client::builder().timeout(Duration::ZERO).build(&a).unwrap_err();
    assert_eq!(e.to_string(), "flakewire: timeout 0ns not in 1ms..60s");
    let e = Client::builder().hedge_budget_pct(101).build(&a).unwrap_err();
    assert_eq!(e.to_string(), "flakewire: hedge_budget_pct 101 not in 0..100");
    let e = Client::builder().max_age(Duration::from_millis(5)).build(&a).unwrap_err();
    assert!(e.to_string().starts_with("flakewire: max_age 5ms not in"), "{}", e);
    assert!(matches!(Client::new(&["no-port-here"]).unwrap_err(), Error::Address { .. }));
    assert!(matches!(Client::new::<&str>(&[]).unwrap_err(), Error::Address { .. }));
}

#[test]
fn next_many_threads_unique_and_increasing_per_thread() {
    let f = Fake::answering(4);
    let c = Arc::new(quick().prefetch(64).low_water(16).build(&[f.addr]).unwrap());
    // every thread started before the first join
    #[allow(clippy::needless_collect)]
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let c = c.clone();
            thread::spawn(move || (0..3000).map(|_| c.next().unwrap()).collect::<Vec<u64>>())
        })
        .collect();
    let mut all = HashSet::new();
    for h in hs {
        let v = h.join().unwrap();
        assert!(v.windows(2).all(|w| w[0] < w[1]), "one thread's IDs not increasing");
        for id in v {
            assert_eq!(worker_of(id), 4);
            assert!(all.insert(id), "duplicate ID {}", id);
        }
    }
    assert_eq!(all.len(), 12000);
}

#[test]
fn max_age_drops_old_ids() {
    let f = Fake::answering(7);
    let max_age = Duration::from_millis(100);
    let c = quick().prefetch(1000).low_water(0).max_age(max_age).build(&[f.addr]).unwrap();
    let first = c.next().unwrap();
    let issued = flakewire::Layout::DEFAULT.decode(first).unwrap().unix_ms;
    let fills = f.count(OP_RANGE);
    thread::sleep(3 * max_age);
    let id = c.next().unwrap();
    let p = flakewire::Layout::DEFAULT.decode(id).unwrap();
    assert!(p.unix_ms > issued, "an ID from the first refill was handed out after its maximum age");
    assert!(now_ms() - p.unix_ms <= max_age.as_millis() as u64 + 50, "ID {} ms old", now_ms() - p.unix_ms);
    assert!(f.count(OP_RANGE) > fills, "no new refill after the maximum age");
}

#[test]
fn waiting_caller_gets_the_refill_error_within_its_deadline() {
    let silent = Fake::silent();
    let deadline = Duration::from_millis(200);
    let c = Client::builder().timeout(deadline).build(&[silent.addr]).unwrap();
    let t = Instant::now();
    let e = c.next().unwrap_err();
    assert!(e.is_timeout(), "{:?}", e);
    assert!(t.elapsed() <= deadline + Duration::from_millis(100), "{:?}", t.elapsed());
}

#[test]
fn untrusted_requests_are_padded_trusted_are_not() {
    let lens = Arc::new(std::sync::Mutex::new(Vec::new()));
    let l2 = lens.clone();
    let f = Fake::new(
        7,
        Box::new(move |r, ids| {
            l2.lock().unwrap().push((r.op, r.count, r.len));
            vec![Out(Duration::ZERO, ids.ok(r))]
        }),
    );
    let c = quick().build(&[f.addr]).unwrap();
    c.get_n(10).unwrap();
    let t = quick().trusted(true).build(&[f.addr]).unwrap();
    t.get_n(10).unwrap();
    let v = lens.lock().unwrap().clone();
    assert!(v.contains(&(OP_LIST, 10, 24 + 80)), "{:?}", v);
    assert!(v.contains(&(OP_LIST, 10, 24)), "{:?}", v);
    assert!(v.contains(&(OP_INFO, 0, 24 + 32)), "{:?}", v);
}

#[test]
fn get_range_and_get_n() {
    let f = Fake::answering(7);
    let c = quick().build(&[f.addr]).unwrap();
    let ids = c.get_n(400).unwrap();
    assert_eq!(ids.len(), 400);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let runs = c.get_range(5000).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].n, 4096);
    assert!(c.last_reply().unwrap().flags & FLAG_PARTIAL != 0);
    assert!(runs[0].first > ids[399]);
}

/// After a fork (a PID change, seen at the next call) nothing buffered in the
/// parent is handed out, and the health memory is gone.
#[test]
fn fork_drops_buffers_and_health() {
    let silent = Fake::silent();
    let live = Fake::answering(4);
    let c = quick().prefetch(1000).low_water(0).build(&[silent.addr, live.addr]).unwrap();
    let first = c.next().unwrap(); // a share of 125 and a pool of 875 buffered
    assert!(!c.health()[0].healthy);
    let ranges = live.count(OP_RANGE);
    c.pretend_forked();
    assert!(c.health().iter().all(|r| r.healthy), "health memory kept across the fork: {:?}", c.health());
    let after = c.next().unwrap();
    let (a, b) = (Layout::DEFAULT.decode(first).unwrap(), Layout::DEFAULT.decode(after).unwrap());
    assert!(b.ms > a.ms, "ID {} after the fork is from the parent's buffer (first {})", after, first);
    assert!(live.count(OP_RANGE) > ranges, "no new refill after the fork");
}
