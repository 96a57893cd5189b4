// SPDX-License-Identifier: BSD-3-Clause
// The consumer program of tests/clients/consumer.sh (Rust): IDs through each
// call, kill -9 of the first responder, failover figures, close().
use std::collections::{HashMap, HashSet};
use std::process::{exit, Command};
use std::time::{Duration, Instant};

fn fail(msg: String) -> ! {
    eprintln!("FAIL: {}", msg);
    exit(1)
}

fn env(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| fail(format!("{} unset", k)))
}

/// Milliseconds one get takes from a new client of servers (defaults).
fn timed(servers: &[&str]) -> f64 {
    let c = flakewire::Client::new(servers).unwrap_or_else(|e| fail(format!("new({:?}): {}", servers, e)));
    let t = Instant::now();
    if let Err(e) = c.get() {
        fail(format!("get from {:?}: {}", servers, e));
    }
    t.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    let (a, b) = (env("FW_A"), env("FW_B"));
    let c = flakewire::Client::new(&[a.as_str(), b.as_str()]).unwrap_or_else(|e| fail(format!("new: {}", e)));
    let mut ids = vec![c.get().unwrap_or_else(|e| fail(format!("get: {}", e)))];
    for i in 0..1000 {
        ids.push(c.next().unwrap_or_else(|e| fail(format!("next {}: {}", i, e))));
    }
    let uuids = c.uuid7(5).unwrap_or_else(|e| fail(format!("uuid7(5): {}", e)));
    if uuids.len() != 5 {
        fail(format!("uuid7(5) gave {}", uuids.len()));
    }
    let pid = env("FW_A_PID");
    match Command::new("kill").args(["-9", &pid]).status() {
        Ok(s) if s.success() => {}
        other => fail(format!("kill -9 {}: {:?}", pid, other)),
    }
    let mut worst = Duration::ZERO;
    for _ in 0..3000 {
        let t = Instant::now();
        ids.push(c.next().unwrap_or_else(|e| fail(format!("next after kill -9 of {}: {}", a, e))));
        worst = worst.max(t.elapsed());
    }
    ids.push(c.get().unwrap_or_else(|e| fail(format!("get after kill -9 of {}: {}", a, e))));
    let l = c.layout().unwrap_or_else(|e| fail(format!("layout: {}", e)));
    let mut seen = HashSet::new();
    let mut last: HashMap<u32, u64> = HashMap::new();
    for &id in &ids {
        if !seen.insert(id) {
            fail(format!("duplicate ID {}", id));
        }
        let p = l.decode(id).unwrap_or_else(|e| fail(format!("decode({}): {}", id, e)));
        let w = (p.datacenter << 16) | p.worker;
        let prev = last.entry(w).or_insert(0);
        if id <= *prev {
            fail(format!("ID {} of worker {} not above {}", id, p.worker, prev));
        }
        *prev = id;
    }
    if last.len() != 2 {
        fail(format!("IDs from {} workers, want 2 (A then B)", last.len()));
    }
    c.close();
    if !matches!(c.next(), Err(flakewire::Error::Closed)) || !matches!(c.get(), Err(flakewire::Error::Closed)) {
        fail("calls after close() do not fail with Error::Closed".into());
    }
    println!(
        "FAILOVER rust dead_port_ms={:.1} silent_host_ms={:.1} after_kill9_worst_call_ms={:.1}",
        timed(&[env("FW_DEAD").as_str(), b.as_str()]),
        timed(&[env("FW_SILENT").as_str(), b.as_str()]),
        worst.as_secs_f64() * 1000.0
    );
    println!("OK rust: {} unique IDs increasing per worker, 5 UUIDv7, closed after close()", ids.len());
}
