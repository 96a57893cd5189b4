// SPDX-License-Identifier: BSD-3-Clause
//! The tests that need no responder, in one test binary (one link):
//! the conformance vectors, the client's unit tests and the availability
//! contract's seven tests, against the in-process fake responder (common).

mod client;
mod common;
mod contract;
mod fork;
mod vectors;
