// SPDX-License-Identifier: BSD-3-Clause
//! Fork detection: a `pthread_atfork` child handler, registered once, bumps
//! a process-wide fork generation; every call compares it (one relaxed
//! load) with the generation its client was made in. The only `unsafe` of
//! the crate, for a measured reason: the PID check it replaces
//! (`std::process::id()`, a getpid system call of 150-220 ns) made `next()`
//! 20 to 40 times slower and 4 callers slower than 1 (README.md, "Fork").

#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Once;

/// Forks this process went through (bumped in each child).
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// 0 once the handler is registered, else the error number of `pthread_atfork`.
static REGISTERED: AtomicI32 = AtomicI32::new(-1);

extern "C" {
    // POSIX, in libc (libpthread's symbols are libc's since glibc 2.34, and
    // std links both): returns 0 or an error number.
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> i32;
}

/// Runs in the child right after a fork, before `fork` returns there, while
/// it has one thread: only an atomic add (async-signal-safe).
extern "C" fn in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers the child handler once per process (at the first client); the
/// error of `pthread_atfork` (ENOMEM, the only one POSIX names) otherwise.
pub(crate) fn init() -> io::Result<()> {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handler is a plain `extern "C" fn` that lives as long
        // as the process and touches one static atomic; no handler for the
        // prepare and parent steps.
        let rc = unsafe { pthread_atfork(None, None, Some(in_child)) };
        REGISTERED.store(rc, Ordering::Release);
    });
    match REGISTERED.load(Ordering::Acquire) {
        0 => Ok(()),
        rc => Err(io::Error::from_raw_os_error(rc)),
    }
}

/// The fork generation of this process, different in a forked child: one
/// relaxed load (the child handler ran before any thread of the child
/// exists to read it).
#[inline]
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}
