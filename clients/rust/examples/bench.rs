// SPDX-License-Identifier: BSD-3-Clause
//! IDs/s through Client::next from THREADS threads (one client), after a
//! warm-up of 0.3 s; the Rust row of scripts/bench/clients.sh.
//! usage: bench SERVER THREADS SECONDS [tuned|defaults|baseline]   (prints "ids_per_s N")
//! tuned (the default): trusted, prefetch 4096, low water 1024; defaults:
//! the default options; baseline: no client, one shared AtomicU64::fetch_add.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 || a.len() > 5 {
        eprintln!("usage: bench SERVER THREADS SECONDS [tuned|defaults|baseline]");
        std::process::exit(2);
    }
    let threads: usize = a[2].parse().expect("THREADS");
    let secs: f64 = a[3].parse().expect("SECONDS");
    let mode = a.get(4).map(String::as_str).unwrap_or("tuned");
    let mut b = flakewire::Client::builder();
    if mode == "tuned" {
        b = b.trusted(true).prefetch(4096).low_water(1024);
    }
    let c = Arc::new(b.build(&[a[1].as_str()]).unwrap_or_else(|e| {
        eprintln!("bench: {}", e);
        std::process::exit(1)
    }));
    if let Err(e) = c.next() {
        eprintln!("bench: {}", e);
        std::process::exit(1);
    }
    let counter = Arc::new(AtomicU64::new(0));
    let baseline = mode == "baseline";
    let run = |d: Duration| -> f64 {
        let start = Instant::now();
        let stop = start + d;
        // every thread started before the first join
        #[allow(clippy::needless_collect)]
        // every thread started before the first join
        #[allow(clippy::needless_collect)]
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let (c, counter) = (c.clone(), counter.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while Instant::now() < stop {
                        for _ in 0..256 {
                            let r = if baseline { Ok(counter.fetch_add(1, Ordering::Relaxed)) } else { c.next() };
                            if let Err(e) = r {
                                eprintln!("bench: {}", e);
                                std::process::exit(1);
                            }
                        }
                        n += 256;
                    }
                    n
                })
            })
            .collect();
        let total: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        total as f64 / start.elapsed().as_secs_f64()
    };
    run(Duration::from_millis(300)); // warm-up: refills grown, threads running
    println!("ids_per_s {:.0}", run(Duration::from_secs_f64(secs)));
}
