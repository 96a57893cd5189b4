// SPDX-License-Identifier: BSD-3-Clause
//! The Snowflake ID layout, decoding of any 63-bit layout, and UUIDv7.

use crate::Error;
use std::fmt;

/// 2026-01-01T00:00:00Z in Unix milliseconds: the default epoch.
pub const DEFAULT_EPOCH_MS: u64 = 1_767_225_600_000;

/// The marker byte of a UUIDv7 made in flakewire's layout.
pub const UUID7_TAG: u64 = 0xF7;

/// A Snowflake ID layout: 1 sign bit, then time, datacenter, worker and
/// sequence fields whose widths add up to 63, and an epoch.
///
/// Decoding under any layout ([`Parts`]), the checks of a layout, and what a
/// UUID carries ([`UuidParts`]):
///
/// ```
/// use flakewire::{Layout, Uuid};
/// // Twitter's layout: 41 bits of time, 5 + 5 of datacenter and worker, 12 of sequence.
/// let twitter = Layout::new(1_288_834_974_657, 41, 5, 5, 12)?;
/// let id = 1_212_161_512_566_386_688u64;
/// let p = twitter.decode(id)?;
/// assert_eq!(p.unix_ms, (id >> 22) + 1_288_834_974_657);
/// assert_eq!(u64::from(p.sequence), id & 4095);
/// // flakewire's default layout; flakewire::decode is Layout::decode.
/// let p = flakewire::decode(&Layout::DEFAULT, (1000 << 22) | (7 << 12) | 5)?;
/// assert_eq!((p.ms, p.worker, p.sequence), (1000, 7, 5));
/// assert_eq!(p.unix_ms, flakewire::DEFAULT_EPOCH_MS + 1000);
/// assert!(Layout::DEFAULT.decode(1 << 63).is_err()); // not a positive int64
/// // The widths must add up to 63, the sequence have at least one bit.
/// assert!(Layout::new(0, 41, 0, 10, 12).is_ok());
/// assert!(Layout::new(0, 41, 0, 10, 13).is_err());
/// let mut l = Layout::DEFAULT;
/// l.seq_bits = 0;
/// assert!(l.validate().unwrap_err().to_string().contains("seq_bits 0"));
/// // A UUID read under the layout.
/// let u: Uuid = "01890a5d-ac96-774b-bcce-b302099a8057".parse()?;
/// let q = Layout::DEFAULT.read_uuid(&u);
/// assert!(q.is_v7);
/// assert_eq!(q.unix_ms, 0x01890a5dac96);
/// assert!(!Layout::DEFAULT.read_uuid(&Uuid::from_bytes([0; 16])).is_v7);
/// # Ok::<(), flakewire::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The epoch, Unix milliseconds.
    pub epoch_ms: u64,
    /// Width of the time field.
    pub time_bits: u8,
    /// Width of the datacenter field (0..10).
    pub dc_bits: u8,
    /// Width of the worker field (0..16).
    pub worker_bits: u8,
    /// Width of the sequence field (1..22).
    pub seq_bits: u8,
}

impl Default for Layout {
    /// 41/0/10/12 with the 2026-01-01 epoch.
    fn default() -> Layout {
        Layout::DEFAULT
    }
}

/// An ID taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Parts {
    /// Milliseconds since the layout's epoch.
    pub ms: u64,
    /// Unix milliseconds.
    pub unix_ms: u64,
    /// The datacenter field.
    pub datacenter: u32,
    /// The worker field.
    pub worker: u32,
    /// The sequence field.
    pub sequence: u32,
}

/// What [`Layout::read_uuid`] finds in a UUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UuidParts {
    /// The version nibble.
    pub version: u32,
    /// 0 (0xx), 2 (10x, RFC 9562), 6 (110) or 7 (111).
    pub variant: u32,
    /// Version 7 with the RFC 9562 variant.
    pub is_v7: bool,
    /// unix_ts_ms, when `is_v7`.
    pub unix_ms: u64,
    /// `is_v7` and flakewire's tag sits where the layout puts it.
    pub flakewire: bool,
    /// The counter, when `flakewire`.
    pub counter: u32,
    /// The datacenter, when `flakewire`.
    pub datacenter: u32,
    /// The worker, when `flakewire`.
    pub worker: u32,
}

impl Layout {
    /// 41/0/10/12 with the 2026-01-01 epoch.
    pub const DEFAULT: Layout =
        Layout { epoch_ms: DEFAULT_EPOCH_MS, time_bits: 41, dc_bits: 0, worker_bits: 10, seq_bits: 12 };

    /// A layout, validated as [`Layout::validate`] does.
    pub fn new(epoch_ms: u64, time_bits: u8, dc_bits: u8, worker_bits: u8, seq_bits: u8) -> Result<Layout, Error> {
        let l = Layout { epoch_ms, time_bits, dc_bits, worker_bits, seq_bits };
        l.validate()?;
        Ok(l)
    }

    /// An error naming the field when this is not a layout flakewire can
    /// issue (the bounds of `fw_layout_validate`).
    pub fn validate(&self) -> Result<(), Error> {
        let bad =
            |key: &str, value: String, range: &str| Err(Error::Option { name: key.into(), value, range: range.into() });
        if !(1..=22).contains(&self.seq_bits) {
            return bad("seq_bits", self.seq_bits.to_string(), "1..22");
        }
        if self.dc_bits > 10 {
            return bad("dc_bits", self.dc_bits.to_string(), "0..10");
        }
        if self.worker_bits > 16 {
            return bad("worker_bits", self.worker_bits.to_string(), "0..16");
        }
        if self.time_bits < 32 {
            return bad("time_bits", self.time_bits.to_string(), "32..62");
        }
        let sum = u32::from(self.time_bits)
            + u32::from(self.dc_bits)
            + u32::from(self.worker_bits)
            + u32::from(self.seq_bits);
        if sum != 63 {
            return bad("field widths", sum.to_string(), "a sum of 63");
        }
        if self.epoch_ms >= 1 << 42 {
            return bad("epoch_ms", self.epoch_ms.to_string(), "0..2^42");
        }
        Ok(())
    }

    /// Takes an ID apart; an error when the sign bit is set.
    pub fn decode(&self, id: u64) -> Result<Parts, Error> {
        if id >> 63 != 0 {
            return Err(Error::InvalidReply(format!("ID {} is not a positive int64", id)));
        }
        let (s, w, d) = (u32::from(self.seq_bits), u32::from(self.worker_bits), u32::from(self.dc_bits));
        let mask = |bits: u32| if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let ms = id.checked_shr(s + w + d).unwrap_or(0);
        Ok(Parts {
            sequence: (id & mask(s)) as u32,
            worker: (id.checked_shr(s).unwrap_or(0) & mask(w)) as u32,
            datacenter: (id.checked_shr(s + w).unwrap_or(0) & mask(d)) as u32,
            ms,
            unix_ms: ms.wrapping_add(self.epoch_ms),
        })
    }

    /// Reads any UUID; for a UUIDv7 made by flakewire in this layout also
    /// its counter, datacenter and worker (PROTOCOL.md, "UUID7 reply body").
    pub fn read_uuid(&self, u: &Uuid) -> UuidParts {
        let b = u.as_bytes();
        let mut h = [0u8; 8];
        h.copy_from_slice(&b[..8]);
        let hi = u64::from_be_bytes(h);
        h.copy_from_slice(&b[8..]);
        let lo = u64::from_be_bytes(h);
        let mut p = UuidParts { version: ((hi >> 12) & 0xF) as u32, ..Default::default() };
        let top = (lo >> 61) as u32;
        p.variant = match top {
            0..=3 => 0,
            4 | 5 => 2,
            t => t,
        };
        if p.version != 7 || p.variant != 2 {
            return p;
        }
        p.is_v7 = true;
        p.unix_ms = hi >> 16;
        // P: rand_a (12 bits) then rand_b (62 bits), 74 bits, MSB first.
        let (rand_a, rand_b) = (hi & 0xFFF, lo & ((1u64 << 62) - 1));
        let (s, d, w) = (u32::from(self.seq_bits), u32::from(self.dc_bits), u32::from(self.worker_bits));
        let field = |off: u32, width: u32| {
            let mut v = 0u64;
            for i in off..off + width {
                let bit = if i < 12 {
                    (rand_a >> (11 - i)) & 1
                } else if i < 74 {
                    (rand_b >> (73 - i)) & 1
                } else {
                    0
                };
                v = (v << 1) | bit;
            }
            v
        };
        if field(s + d + w, 8) != UUID7_TAG {
            return p;
        }
        p.flakewire = true;
        p.counter = field(0, s) as u32;
        p.datacenter = field(s, d) as u32;
        p.worker = field(s + d, w) as u32;
        p
    }
}

/// A UUID (here a UUIDv7 from a responder). `Display` writes the lowercase
/// 8-4-4-4-12 form; `FromStr` reads it.
///
/// ```
/// let u = flakewire::Uuid::from_bytes([0x01, 0x89, 0x0a, 0x5d, 0xac, 0x96, 0x77, 0x4b,
///     0xbc, 0xce, 0xb3, 0x02, 0x09, 0x9a, 0x80, 0x57]);
/// assert_eq!(u.to_string(), "01890a5d-ac96-774b-bcce-b302099a8057");
/// assert_eq!(u.unix_ms(), Some(0x01890a5dac96));
/// assert_eq!(u.as_bytes()[0], 0x01);
/// assert_eq!(flakewire::Uuid::from_bytes([0; 16]).unix_ms(), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Uuid([u8; 16]);

impl Uuid {
    /// The UUID of these 16 bytes (network order).
    pub const fn from_bytes(b: [u8; 16]) -> Uuid {
        Uuid(b)
    }

    /// The 16 bytes, network order.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// unix_ts_ms of a UUIDv7 (version 7, RFC 9562 variant); `None` for others.
    pub fn unix_ms(&self) -> Option<u64> {
        if self.0[6] >> 4 != 7 || self.0[8] >> 6 != 2 {
            return None;
        }
        Some(self.0[..6].iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i == 4 || i == 6 || i == 8 || i == 10 {
                f.write_str("-")?;
            }
            write!(f, "{:02x}", b)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({})", self)
    }
}

impl std::str::FromStr for Uuid {
    type Err = Error;
    /// Reads the 8-4-4-4-12 form (either case).
    fn from_str(s: &str) -> Result<Uuid, Error> {
        let bad = || Error::InvalidReply(format!("{:?} is not a UUID in 8-4-4-4-12 form", s));
        let b = s.as_bytes();
        if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
            return Err(bad());
        }
        let hex: Vec<u8> = b.iter().copied().filter(|&c| c != b'-').collect();
        if hex.len() != 32 {
            return Err(bad());
        }
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            let pair = std::str::from_utf8(&hex[2 * i..2 * i + 2]).map_err(|_| bad())?;
            *o = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(Uuid(out))
    }
}

impl From<[u8; 16]> for Uuid {
    fn from(b: [u8; 16]) -> Uuid {
        Uuid(b)
    }
}
