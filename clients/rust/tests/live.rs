// SPDX-License-Identifier: BSD-3-Clause
//! Live tests against the responders tests/clients/live.sh starts (it
//! exports their addresses). Without them a test is skipped, except under
//! CI=true where a missing responder is a failure.

use flakewire::wire::*;
use flakewire::{Client, Error, Layout};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

fn env(keys: &[&str]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for k in keys {
        match std::env::var(k) {
            Ok(v) if !v.is_empty() => out.push(v),
            _ => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "{} unset under CI=true: run by tests/clients/live.sh",
                    k
                );
                eprintln!("SKIP: {} unset: run by tests/clients/live.sh", k);
                return None;
            }
        }
    }
    Some(out)
}

/// threads callers of next, each calls; a caller's own IDs increase while one
/// worker serves its refills, so per worker (RETRY_AFTER or a failover moves a
/// refill to another worker).
fn take(c: &Arc<Client>, l: &Layout, threads: usize, each: usize) -> Vec<Vec<u64>> {
    // every thread started before the first join
    #[allow(clippy::needless_collect)]
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let c = c.clone();
            thread::spawn(move || (0..each).map(|_| c.next().expect("next")).collect::<Vec<u64>>())
        })
        .collect();
    let all: Vec<Vec<u64>> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    for v in &all {
        let mut last: HashMap<u32, u64> = HashMap::new();
        for &id in v {
            let prev = last.entry(l.decode(id).unwrap().worker).or_insert(0);
            assert!(id > *prev, "one caller's IDs of one worker not increasing: {} after {}", id, prev);
            *prev = id;
        }
    }
    all
}

/// Workers of the IDs; fails on a duplicate (seen carries across calls).
fn workers(l: &Layout, all: &[Vec<u64>], seen: &mut HashSet<u64>) -> HashMap<u32, usize> {
    let mut w = HashMap::new();
    for id in all.iter().flatten() {
        assert!(seen.insert(*id), "duplicate ID {}", id);
        *w.entry(l.decode(*id).unwrap().worker).or_insert(0) += 1;
    }
    w
}

#[test]
fn live_loop() {
    let e = match env(&["FW_TRUSTED", "FW_UNTRUSTED", "FW_FEWSEQ", "FW_DEAD"]) {
        Some(e) => e,
        None => return,
    };
    let (trusted, untrusted, fewseq, dead) = (&e[0], &e[1], &e[2], &e[3]);

    // info and one-shot calls
    let c = Client::new(&[trusted.as_str()]).unwrap();
    let r = c.info().unwrap();
    let i = r.info.unwrap();
    assert_eq!((r.worker, i.seq_bits, i.epoch_ms), (11, 12, flakewire::DEFAULT_EPOCH_MS));
    let a = c.get().unwrap();
    let ids = c.get_n(500).unwrap();
    assert_eq!(ids.len(), 500);
    assert!(ids[0] > a && ids.windows(2).all(|w| w[0] < w[1]));
    let runs = c.get_range(5000).unwrap();
    let total: u64 = runs.iter().map(|x| u64::from(x.n)).sum();
    assert!((1..=5000).contains(&total) && runs[0].first > ids[499]);

    // untrusted, padded: full answers
    let c = Client::new(&[untrusted.as_str()]).unwrap();
    let ids = c.get_n(181).unwrap();
    let last = c.last_reply().unwrap();
    assert_eq!((ids.len(), last.count, last.flags & FLAG_PARTIAL), (181, 181, 0));
    assert_eq!(c.layout().unwrap().decode(ids[0]).unwrap().worker, 12);

    // untrusted, unpadded: refused
    let c = Client::builder().trusted(true).build(&[untrusted.as_str()]).unwrap();
    match c.get() {
        Err(Error::Status { status, .. }) => assert_eq!(status, ST_REFUSED),
        other => panic!("unpadded request from an untrusted source: {:?}", other),
    }

    // concurrent next: unique, valid, increasing per thread
    let c = Arc::new(Client::builder().prefetch(512).low_water(128).build(&[trusted.as_str()]).unwrap());
    let mut seen = HashSet::new();
    let w = workers(&c.layout().unwrap(), &take(&c, &c.layout().unwrap(), 8, 1250), &mut seen);
    assert_eq!(seen.len(), 10000);
    assert_eq!(w.keys().copied().collect::<Vec<_>>(), vec![11]);

    // one sequence bit: PARTIAL, and RETRY_AFTER waited out (one responder)
    let c = Client::new(&[fewseq.as_str()]).unwrap();
    let runs = c.get_range(4096).unwrap();
    assert!(!runs.is_empty() && c.last_reply().unwrap().flags & FLAG_PARTIAL != 0);
    let c = Arc::new(Client::builder().prefetch(200).low_water(50).build(&[fewseq.as_str()]).unwrap());
    let mut seen = HashSet::new();
    workers(&c.layout().unwrap(), &take(&c, &c.layout().unwrap(), 3, 100), &mut seen);
    assert_eq!(seen.len(), 300);
    assert_eq!(c.layout().unwrap().seq_bits, 1);
    eprintln!("fewseq: {:?}", c.stats());

    // UUID7, trusted and untrusted (padded)
    for (addr, worker) in [(trusted, 11), (untrusted, 12)] {
        let c = Client::new(&[addr.as_str()]).unwrap();
        assert!(c.info().unwrap().info.unwrap().supports_uuid7());
        let us = c.uuid7(90).unwrap();
        assert_eq!(us.len(), 90);
        let l = c.layout().unwrap();
        let mut seen = HashSet::new();
        for u in us {
            let p = l.read_uuid(&u);
            assert!(p.flakewire && p.worker == worker, "{} {:?}", u, p);
            seen.insert(u);
        }
        for _ in 0..200 {
            assert!(seen.insert(c.next_uuid7().unwrap()), "duplicate UUID");
        }
    }

    // IPv6 loopback
    if let Ok(v6) = std::env::var("FW_V6") {
        if !v6.is_empty() {
            let c = Client::new(&[v6.as_str()]).unwrap();
            let ids = c.get_n(181).unwrap();
            assert_eq!(c.layout().unwrap().decode(ids[0]).unwrap().worker, 14);
        }
    }

    // a dead responder first: ICMP port unreachable, failover at once
    let c = Client::new(&[dead.as_str(), trusted.as_str()]).unwrap();
    for _ in 0..10 {
        c.next().unwrap();
    }
    let st = c.stats();
    assert!(st.refused >= 1 && st.resends == 0, "{:?}", st);
    assert!(!c.health()[0].healthy);
}

#[test]
fn live_tap() {
    let e = match env(&["FW_TAP", "FW_TAP_BACKUP", "FW_TAP_PID"]) {
        Some(e) => e,
        None => return,
    };
    // max_age 200 ms: after the kill the pool's IDs from flakewire expire,
    // so the next ones come from the backup.
    let c = Arc::new(
        Client::builder()
            .prefetch(256)
            .low_water(64)
            .max_age(Duration::from_millis(200))
            .build(&[e[0].as_str(), e[1].as_str()])
            .unwrap(),
    );
    let l = c.layout().unwrap();
    assert_eq!(l.seq_bits, 4);
    let mut us = HashSet::new();
    for _ in 0..300 {
        let u = c.next_uuid7().unwrap();
        assert!(us.insert(u), "duplicate UUID7 over TAP");
    }
    let mut seen = HashSet::new();
    let w = workers(&l, &take(&c, &l, 8, 500), &mut seen);
    assert_eq!(seen.len(), 4000);
    // RETRY_AFTER from a saturated millisecond moves a refill to the backup (worker 22).
    assert!(w.contains_key(&21) && w.keys().all(|k| *k == 21 || *k == 22), "{:?}", w);
    eprintln!("tap before the kill: workers {:?}, {:?}", w, c.stats());
    let st = std::process::Command::new("kill").args(["-KILL", &e[2]]).status().unwrap();
    assert!(st.success(), "kill -9 {}", e[2]);
    thread::sleep(Duration::from_millis(600));
    let w = workers(&l, &take(&c, &l, 8, 250), &mut seen);
    assert_eq!(seen.len(), 6000);
    assert!(w.contains_key(&22), "{:?}", w);
    eprintln!("tap after the kill: workers {:?}, {:?}", w, c.stats());
}
