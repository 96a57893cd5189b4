// SPDX-License-Identifier: BSD-3-Clause
//! A real fork (libc's `fork` through `extern "C"`): the child's client
//! starts over, so the child and the parent never hand out the same ID, and
//! the child is not deadlocked. The only `unsafe` of the tests.
#![allow(unsafe_code)]

use crate::common::*;
use flakewire::Client;
use std::collections::HashSet;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn kill(pid: i32, sig: i32) -> i32;
    fn _exit(code: i32) -> !;
}
const WNOHANG: i32 = 1;
const SIGKILL: i32 = 9;
/// IDs each process takes after the fork: several refills in each.
const TAKE: usize = 5000;

fn take(c: &Client, n: usize) -> Result<Vec<u64>, flakewire::Error> {
    (0..n).map(|_| c.next()).collect()
}

/// In the child: TAKE IDs from next() on two threads (one of them new) and
/// one from get(), written to `out`; exit 0, or 1 on an error, 2 on a panic.
fn child(c: &Client, out: &PathBuf) -> ! {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<Vec<u64>, flakewire::Error> {
        let mut ids = thread::scope(|sc| {
            let h = sc.spawn(|| take(c, TAKE / 2));
            let mut a = take(c, TAKE - TAKE / 2)?;
            a.extend(h.join().expect("child thread")?);
            Ok::<_, flakewire::Error>(a)
        })?;
        ids.push(c.get()?);
        Ok(ids)
    }));
    let code = match r {
        Ok(Ok(ids)) => {
            let text: String = ids.iter().map(|i| format!("{}\n", i)).collect();
            if std::fs::write(out, text).is_ok() {
                0
            } else {
                1
            }
        }
        Ok(Err(e)) => {
            let _ = std::fs::write(out, format!("error {}\n", e));
            1
        }
        Err(_) => 2,
    };
    // SAFETY: ends the child without running the parent's test harness.
    unsafe { _exit(code) }
}

#[test]
fn real_fork_child_and_parent_never_share_an_id() {
    let f = Fake::answering(9);
    // The ticker sleeps max_age / 4: no thread of the client holds a lock at the fork.
    let c = Client::builder().timeout(Duration::from_secs(2)).prefetch(1000).max_age(Duration::from_secs(60));
    let c = c.build(&[f.addr]).unwrap();
    let mut parent = vec![c.next().unwrap()]; // a thread share and the pool buffered
                                              // The refiller ends its refill (a short hold of the pool's lock) and waits
                                              // without it: a fork while the parent's refiller or ticker holds one of the
                                              // client's locks would leave it held in the child (README.md, "Fork").
    thread::sleep(Duration::from_millis(200));
    let out = std::env::temp_dir().join(format!("flakewire-fork-{}.ids", std::process::id()));
    let _ = std::fs::remove_file(&out);
    // SAFETY: the child runs only `child`, which ends in _exit.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        child(&c, &out);
    }
    parent.extend(take(&c, TAKE).unwrap());
    let mut status = 0i32;
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        // SAFETY: waits for our own child; status is a valid pointer.
        let r = unsafe { waitpid(pid, &mut status, WNOHANG) };
        if r == pid {
            break;
        }
        if Instant::now() >= until {
            // SAFETY: our own child, then reaped.
            unsafe {
                kill(pid, SIGKILL);
                waitpid(pid, &mut status, 0);
            }
            panic!("the child took no {} IDs within 20 s: deadlocked", TAKE);
        }
        thread::sleep(Duration::from_millis(10));
    }
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    let exited = status & 0x7f == 0;
    assert!(exited && (status >> 8) & 0xff == 0, "child status {:#x}: {}", status, text.trim());
    let kid: Vec<u64> = text.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(kid.len(), TAKE + 1);
    let mine: HashSet<u64> = parent.iter().copied().collect();
    assert_eq!(mine.len(), parent.len(), "the parent handed out an ID twice");
    let both: Vec<u64> = kid.iter().filter(|i| mine.contains(i)).copied().collect();
    assert!(both.is_empty(), "{} IDs handed out in both processes, e.g. {:?}", both.len(), &both[..both.len().min(5)]);
    assert_eq!(kid.iter().collect::<HashSet<_>>().len(), kid.len(), "the child handed out an ID twice");
}
