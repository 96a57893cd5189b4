// SPDX-License-Identifier: BSD-3-Clause
//! The Rust caller of scripts/drill.sh (issue 49): one client
//! (`flakewire::Client`, the crate's public API) shared by two threads, one
//! calling `next()` and one `get()` (one round trip), each at a fixed rate
//! for a bounded time, one line per call on stdout:
//!
//!     WALL_S MODE LATENCY_US ok|err [MESSAGE]
//!
//! WALL_S is the call's start (Unix seconds, 6 decimals). A call late on its
//! slot does not make up the missed ones (no burst after a stall).
//! drill.sh builds it offline as the only source of a binary crate that
//! depends on clients/rust by path (prepare_rust).
//!
//! usage: drill SERVERS RATE SECONDS TIMEOUT_MS (0: the client's default)

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn run(c: &flakewire::Client, out: &Mutex<Vec<u8>>, name: &str, rate: f64, secs: f64) {
    let call = |c: &flakewire::Client| if name == "next" { c.next() } else { c.get() };
    let period = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut slot = start;
    let max_calls = (rate * secs) as u64 + 1;
    let mut i = 0;
    while i < max_calls && start.elapsed().as_secs_f64() < secs {
        let now = Instant::now();
        if slot > now {
            std::thread::sleep(slot - now);
        }
        let w = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let t0 = Instant::now();
        let r = call(c);
        let lat = t0.elapsed().as_micros();
        let line = match r {
            Ok(_) => format!("{:.6} {} {} ok\n", w, name, lat),
            Err(e) => format!("{:.6} {} {} err {}\n", w, name, lat, e.to_string().replace('\n', " ")),
        };
        out.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(line.as_bytes());
        slot += period;
        let now = Instant::now();
        if slot < now {
            slot = now; // late: no burst to make up missed slots
        }
        i += 1;
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 5 {
        eprintln!("usage: drill SERVERS RATE SECONDS TIMEOUT_MS");
        std::process::exit(2);
    }
    let servers: Vec<&str> = a[1].split(',').collect();
    let rate: f64 = a[2].parse().unwrap_or(0.0);
    let secs: f64 = a[3].parse().unwrap_or(0.0);
    let tmo: i64 = a[4].parse().unwrap_or(-1);
    if !(1.0..=10000.0).contains(&rate) || !(1.0..=600.0).contains(&secs) || tmo < 0 {
        eprintln!("drill: bad arguments");
        std::process::exit(2);
    }
    let mut b = flakewire::Client::builder();
    if tmo > 0 {
        b = b.timeout(Duration::from_millis(tmo as u64));
    }
    let c = b.build(&servers).unwrap_or_else(|e| {
        eprintln!("drill: Client: {}", e);
        std::process::exit(1)
    });
    // Lines are kept in memory and written at the end, so that no call waits
    // on stdout (as the other callers' buffered output).
    let out = Mutex::new(Vec::with_capacity(1 << 20));
    std::thread::scope(|s| {
        s.spawn(|| run(&c, &out, "next", rate, secs));
        s.spawn(|| run(&c, &out, "get", rate, secs));
    });
    c.close();
    let buf = out.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut so = std::io::stdout().lock();
    if so.write_all(&buf).and_then(|_| so.flush()).is_err() {
        std::process::exit(1);
    }
}
