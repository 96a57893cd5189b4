// SPDX-License-Identifier: BSD-3-Clause
//! A client for the flakewire Snowflake ID responders (UDP, protocol
//! version 1), standard library only. It behaves as every
//! flakewire client does (doc/clients.md):
//!
//! - every request carries a fresh random 64-bit tag; a reply is accepted
//!   only when its tag, op and source address match, so stale, foreign and
//!   garbled datagrams are ignored and the wait goes on;
//! - requests are padded as PROTOCOL.md section 6 says (unless
//!   [`Builder::trusted`]), so a responder that does not trust this host
//!   still answers in full;
//! - every ID is checked before it is handed out: positive, increasing
//!   within a reply and above the last one from that worker, no more than
//!   asked, naming the datacenter and worker of the reply (the layout is
//!   learnt with an INFO request first) and near this host's clock;
//! - availability (doc/clients.md, "Availability: deadlines, hedging,
//!   health"): a call has a deadline ([`Builder::timeout`], 1 s), not an
//!   attempt count; a connected UDP socket per responder, so a closed port
//!   (ICMP port unreachable) moves the call on at once; RETRY_AFTER holds
//!   that responder off for its hint and moves on at once (with one
//!   responder, the call waits for the hint and asks again until the
//!   deadline); a hedged request goes to the next responder after the 99th
//!   percentile of this client's recent round trips (at least
//!   [`Builder::hedge_min`]), under a budget ([`Builder::hedge_budget_pct`]);
//!   a responder that refused, answered NO_LEASE, CLOCK_UNSAFE or REFUSED, or missed a reply
//!   another answered is unhealthy, skipped, and probed with INFO every
//!   100 ms by a background thread until it answers (after a status, from
//!   1 s after it on);
//! - [`Client::next`] hands out prefetched IDs in per-thread shares,
//!   refilled in the background, never older than [`Builder::max_age`].
//!
//! A [`Client`] is `Send + Sync`. After a `fork` the child's client starts
//! as a new one: no buffered IDs, no health memory, new sockets; the
//! parent's are untouched. The fork is caught by a `pthread_atfork` child
//! handler that bumps a fork generation, compared at each call with one
//! relaxed atomic load: the crate's one `unsafe` (`#![deny(unsafe_code)]`,
//! allowed in that module only), for a measured reason: the PID check it
//! replaces (`std::process::id()`, a getpid system call of 150-220 ns) made
//! `next()` 20 to 40 times slower and 4 callers slower than 1: 1.5 M/s with
//! 1 thread and 1.0 M/s with 4 before, 43.9 and 48.5 M/s after (defaults,
//! `clients/rust/bench-revs.sh -s 0.5 -r 5 76cdcd3 829c6ed` on a loaded
//! 2-CPU machine; README.md, "Fork", has the table).
//!
//! ```no_run
//! let c = flakewire::Client::new(&["10.0.0.5:4242", "10.0.0.6:4242"])?;
//! let id = c.next()?;
//! let p = c.layout()?.decode(id)?;
//! println!("{} issued at {} ms by worker {}; {}", id, p.unix_ms, p.worker, c.next_uuid7()?);
//! # Ok::<(), flakewire::Error>(())
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod client;
mod error;
mod fork;
mod health;
mod layout;
mod prefetch;
pub mod wire;

pub use client::{Builder, Client, ResponderHealth, Stats};
pub use error::Error;
pub use layout::{Layout, Parts, Uuid, UuidParts, DEFAULT_EPOCH_MS, UUID7_TAG};
pub use wire::{Range, Reply};

/// Takes `id` apart under `layout` (any layout whose widths add up to 63;
/// example: [`Layout`]).
pub fn decode(layout: &Layout, id: u64) -> Result<Parts, Error> {
    layout.decode(id)
}
