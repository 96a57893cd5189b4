#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Rust client's checks, as meson test 'rust' runs them: formatting,
# clippy with warnings as errors, then the tests (conformance vectors, unit
# tests and the availability contract's against the in-process fake
# responder, the doc examples). Debian's toolchain (/usr/bin), offline.
# The live tests (tests/live.rs) run under tests/clients/live.sh instead.
set -eu
cd "$(dirname "$0")"
export PATH="/usr/bin:/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc CARGO_NET_OFFLINE=true
cargo=/usr/bin/cargo
$cargo fmt --check
$cargo clippy --offline --all-targets -q -- -D warnings
$cargo test --offline -q --lib --test unit
$cargo test --offline -q --doc
