// SPDX-License-Identifier: BSD-3-Clause
//! The wire protocol, version 1 (lib/wire/PROTOCOL.md): request encoding
//! with padding (section 6) and reply parsing with the C parser's reasons.
//!
//! Every item of the module in one example:
//!
//! ```
//! use flakewire::wire::*;
//! assert_eq!(status_name(ST_NO_LEASE), "no-lease");
//! assert_eq!(status_name(200), "unknown");
//! // Requests, padded (section 6) unless trusted:
//! assert_eq!(request_size(OP_LIST, 2, 12), 24 + 16);
//! assert_eq!(request_size(OP_RANGE, 4096, 12), 24 + 2 * 12);
//! let b = encode_request(OP_ID, 1, 0x0123, true, 12);
//! assert_eq!(b.len(), 32);
//! assert_eq!(&b[..4], &[0x46, 0x4b, 1, 1]);
//! // Replies ([`Reply`]), with the C parser's reasons ([`WireError`]):
//! let b = [0x46, 0x4b, 1, 0x81, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 7, 0, 0, 0x03, 0xe8];
//! let r = parse_reply(&b).unwrap();
//! assert_eq!((r.status, r.tag, r.worker, r.retry_after_us), (3, 9, 7, 1000));
//! assert_eq!(parse_reply(b"short").unwrap_err(), WireError::Short);
//! let mut b = vec![0x46, 0x4b, 2, 0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5];
//! b.resize(24, 0);
//! assert_eq!(parse_reply(&b).unwrap_err(), WireError::Version(5));
//! assert_eq!(WireError::Magic.reason(), "magic");
//! // An INFO record ([`Info`]; Client::info returns it) and runs of IDs ([`Range`]):
//! assert!(Info { features: 1, ..Default::default() }.supports_uuid7());
//! let r = Range { first: 10, n: 3 };
//! assert_eq!(r.iter().collect::<Vec<_>>(), vec![10, 11, 12]);
//! assert_eq!(Range { first: 5, n: 2 }.iter().sum::<u64>(), 11);
//! ```

use std::fmt;

/// The protocol's magic number, `"FK"`.
pub const MAGIC: u16 = 0x464B;
/// The protocol version this client speaks.
pub const VERSION: u8 = 1;
/// Size of a request or reply header in bytes.
pub const HDR_LEN: usize = 24;
/// The responders' default UDP port.
pub const DEFAULT_PORT: u16 = 4242;

/// Op: one ID.
pub const OP_ID: u8 = 1;
/// Op: a list of up to [`LIST_MAX`] IDs.
pub const OP_LIST: u8 = 2;
/// Op: up to 65,535 IDs as runs of consecutive IDs.
pub const OP_RANGE: u8 = 3;
/// Op: the responder's layout, epoch, worker and clock.
pub const OP_INFO: u8 = 4;
/// Op: up to [`UUID7_MAX`] UUIDv7.
pub const OP_UUID7: u8 = 5;
/// The bit a reply sets in its op.
pub const OP_REPLY: u8 = 0x80;

/// Status: OK (with [`FLAG_PARTIAL`] when fewer IDs than asked).
pub const ST_OK: u8 = 0;
/// Status: malformed request.
pub const ST_BAD_REQUEST: u8 = 1;
/// Status: unsupported protocol version.
pub const ST_BAD_VERSION: u8 = 2;
/// Status: overloaded, ask again after `retry_after_us`.
pub const ST_RETRY_AFTER: u8 = 3;
/// Status: refused by policy (for example an unpadded request from an untrusted source).
pub const ST_REFUSED: u8 = 4;
/// Status: the responder's clock is not safe to issue from.
pub const ST_CLOCK_UNSAFE: u8 = 5;
/// Status: the responder holds no confirmed worker-ID lease.
pub const ST_NO_LEASE: u8 = 6;

/// Flag: IDs from a borrowed (future) millisecond.
pub const FLAG_BORROWED: u8 = 0x01;
/// Flag: the clock stepped back and is being held.
pub const FLAG_BACKSTEP: u8 = 0x02;
/// Flag: the clock is in a degraded state.
pub const FLAG_UNSAFE: u8 = 0x04;
/// Flag: fewer IDs than asked.
pub const FLAG_PARTIAL: u8 = 0x08;
/// Flag: the clock is slewing.
pub const FLAG_SLEWING: u8 = 0x10;

/// INFO feature bit: the responder serves [`OP_UUID7`].
pub const INFO_FEATURE_UUID7: u32 = 0x1;

/// Most IDs in one LIST reply: (1472 - 24) / 8.
pub const LIST_MAX: usize = 181;
/// Most runs in one RANGE reply.
pub const RANGES_MAX: usize = 16;
/// Most IDs one RANGE request asks for.
pub const RANGE_IDS_MAX: usize = 65535;
/// Most UUIDs in one UUID7 reply: (1472 - 24) / 16.
pub const UUID7_MAX: usize = 90;

const STATUS_NAMES: [&str; 7] =
    ["ok", "bad-request", "bad-version", "retry-after", "refused", "clock-unsafe", "no-lease"];

/// Names a status code (`"retry-after"`), `"unknown"` when it is not one.
pub fn status_name(status: u8) -> &'static str {
    STATUS_NAMES.get(status as usize).copied().unwrap_or("unknown")
}

/// Why a datagram is not a valid reply (PROTOCOL.md section 9), in the
/// order and with the reasons of the C parser `fw_wire_parse_reply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than its header or body says.
    Short,
    /// Not the protocol's magic number.
    Magic,
    /// Another protocol version; the reply's tag, to match it with a request.
    Version(u64),
    /// Anything else that is not a reply (a request, an unknown op or status, a bad count).
    Bad,
}

impl WireError {
    /// The reason's name as the conformance vectors spell it (`short`, `magic`, `version`, `bad`).
    pub fn reason(&self) -> &'static str {
        match self {
            WireError::Short => "short",
            WireError::Magic => "magic",
            WireError::Version(_) => "version",
            WireError::Bad => "bad",
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a flakewire reply: {}", self.reason())
    }
}

impl std::error::Error for WireError {}

/// The body of an INFO reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Info {
    /// The epoch, Unix milliseconds.
    pub epoch_ms: u64,
    /// Width of the time field.
    pub time_bits: u8,
    /// Width of the datacenter field.
    pub dc_bits: u8,
    /// Width of the worker field.
    pub worker_bits: u8,
    /// Width of the sequence field.
    pub seq_bits: u8,
    /// Lowest protocol version served.
    pub version_min: u8,
    /// Highest protocol version served.
    pub version_max: u8,
    /// Most IDs in one LIST reply.
    pub list_max: u16,
    /// Most runs in one RANGE reply.
    pub ranges_max: u16,
    /// Most milliseconds borrowed ahead of the clock.
    pub max_borrow_ms: u16,
    /// Feature bits ([`INFO_FEATURE_UUID7`]).
    pub features: u32,
    /// The responder's clock offset from its system clock, ns.
    pub clock_offset_ns: i64,
}

impl Info {
    /// Whether the responder advertises the UUID7 op.
    pub fn supports_uuid7(&self) -> bool {
        self.features & INFO_FEATURE_UUID7 != 0
    }
}

/// The IDs `first`, `first + 1`, ..., `first + n - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Range {
    /// The first ID.
    pub first: u64,
    /// How many consecutive IDs.
    pub n: u32,
}

impl Range {
    /// The IDs of the run, in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> {
        let first = self.first;
        (0..u64::from(self.n)).map(move |i| first + i)
    }
}

/// A parsed reply. `op` carries the reply bit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reply {
    /// The op with [`OP_REPLY`] set.
    pub op: u8,
    /// The status.
    pub status: u8,
    /// Flags ([`FLAG_PARTIAL`], ...).
    pub flags: u8,
    /// The count field.
    pub count: u16,
    /// The request's tag, echoed.
    pub tag: u64,
    /// The datacenter that answered.
    pub datacenter: u16,
    /// The worker that answered.
    pub worker: u16,
    /// RETRY_AFTER's hint, µs.
    pub retry_after_us: u32,
    /// ID and LIST replies.
    pub ids: Vec<u64>,
    /// RANGE replies.
    pub ranges: Vec<Range>,
    /// INFO replies.
    pub info: Option<Info>,
    /// UUID7 replies.
    pub uuids: Vec<[u8; 16]>,
}

fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
fn rd32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn rd64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_be_bytes(a)
}

/// The size a request is padded to so that a full reply is no larger
/// (PROTOCOL.md section 6), for a responder with `seq_bits` sequence bits
/// (RANGE: 2^seq_bits IDs per range; 12 before its INFO is known); 0 for an
/// unknown op.
pub fn request_size(op: u8, count: u16, seq_bits: u32) -> usize {
    let per: usize = if (1..=22).contains(&seq_bits) { 1 << seq_bits } else { 4096 };
    let n = match op {
        OP_ID => HDR_LEN + 8,
        OP_LIST => HDR_LEN + 8 * count as usize,
        OP_INFO => HDR_LEN + 32,
        OP_UUID7 => HDR_LEN + 16 * count as usize,
        OP_RANGE => {
            let r = ((count as usize + per - 1) / per + 1).min(RANGES_MAX);
            HDR_LEN + 12 * r
        }
        _ => return 0,
    };
    n.max(HDR_LEN)
}

/// The request datagram, zero-padded to [`request_size`] when `pad` (24 bytes otherwise).
pub fn encode_request(op: u8, count: u16, tag: u64, pad: bool, seq_bits: u32) -> Vec<u8> {
    let n = if pad { request_size(op, count, seq_bits).max(HDR_LEN) } else { HDR_LEN };
    let mut b = vec![0u8; n];
    b[0..2].copy_from_slice(&MAGIC.to_be_bytes());
    b[2] = VERSION;
    b[3] = op;
    b[6..8].copy_from_slice(&count.to_be_bytes());
    b[8..16].copy_from_slice(&tag.to_be_bytes());
    b
}

fn reply_max(op: u8) -> (usize, usize) {
    match op {
        OP_ID => (1, 8),
        OP_LIST => (LIST_MAX, 8),
        OP_RANGE => (RANGES_MAX, 12),
        OP_INFO => (1, 32),
        OP_UUID7 => (UUID7_MAX, 16),
        _ => (0, 0),
    }
}

/// Parses one reply datagram; a [`WireError`] says why it is not one.
pub fn parse_reply(b: &[u8]) -> Result<Reply, WireError> {
    if b.len() < HDR_LEN {
        return Err(WireError::Short);
    }
    if rd16(b, 0) != MAGIC {
        return Err(WireError::Magic);
    }
    let mut r = Reply {
        op: b[3],
        status: b[4],
        flags: b[5],
        count: rd16(b, 6),
        tag: rd64(b, 8),
        datacenter: rd16(b, 16),
        worker: rd16(b, 18),
        retry_after_us: rd32(b, 20),
        ..Default::default()
    };
    if b[2] != VERSION {
        return Err(WireError::Version(r.tag));
    }
    if r.op & OP_REPLY == 0 || r.status as usize >= STATUS_NAMES.len() {
        return Err(WireError::Bad);
    }
    let op = r.op & !OP_REPLY;
    let (max, entry) = reply_max(op);
    if max == 0 {
        return Err(WireError::Bad);
    }
    let count = r.count as usize;
    let need = if r.status != ST_OK {
        if count == 0 {
            HDR_LEN
        } else {
            0
        }
    } else if count != 0 && count <= max {
        HDR_LEN + entry * count
    } else {
        0
    };
    if need == 0 {
        return Err(WireError::Bad);
    }
    if b.len() < need {
        return Err(WireError::Short);
    }
    if b.len() > need {
        return Err(WireError::Bad);
    }
    if r.status != ST_OK {
        return Ok(r);
    }
    let body = &b[HDR_LEN..];
    match op {
        OP_ID | OP_LIST => r.ids = (0..count).map(|i| rd64(body, 8 * i)).collect(),
        OP_RANGE => {
            for i in 0..count {
                let x = Range { first: rd64(body, 12 * i), n: rd32(body, 12 * i + 8) };
                if x.n == 0 {
                    return Err(WireError::Bad);
                }
                r.ranges.push(x);
            }
        }
        OP_INFO => {
            r.info = Some(Info {
                epoch_ms: rd64(body, 0),
                time_bits: body[8],
                dc_bits: body[9],
                worker_bits: body[10],
                seq_bits: body[11],
                version_min: body[12],
                version_max: body[13],
                list_max: rd16(body, 14),
                ranges_max: rd16(body, 16),
                max_borrow_ms: rd16(body, 18),
                features: rd32(body, 20),
                clock_offset_ns: rd64(body, 24) as i64,
            })
        }
        _ => {
            r.uuids = (0..count)
                .map(|i| {
                    let mut u = [0u8; 16];
                    u.copy_from_slice(&body[16 * i..16 * i + 16]);
                    u
                })
                .collect()
        }
    }
    Ok(r)
}
