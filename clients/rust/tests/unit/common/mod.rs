// SPDX-License-Identifier: BSD-3-Clause
//! A scripted fake responder, in process: a UDP socket on 127.0.0.1 and a
//! thread that answers each request with what a script says (datagrams,
//! each after an optional delay), counting the requests per op.
#![allow(dead_code)]

use flakewire::wire::*;
use std::collections::HashMap;
use std::convert::TryInto;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const EPOCH: u64 = flakewire::DEFAULT_EPOCH_MS;

/// One request as the fake saw it.
#[derive(Clone, Copy, Debug)]
pub struct Req {
    pub op: u8,
    pub count: u16,
    pub tag: u64,
    pub len: usize,
}

/// What to send back: a datagram after a delay.
pub struct Out(pub Duration, pub Vec<u8>);

pub type Script = Box<dyn Fn(&Req, &Ids) -> Vec<Out> + Send + Sync>;

/// Valid IDs and UUIDs of one worker under the default layout, each reply's
/// from a millisecond of its own (never behind the clock), increasing.
pub struct Ids {
    pub worker: u16,
    last_ms: AtomicU64,
}

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

impl Ids {
    fn fresh_ms(&self) -> u64 {
        let now = now_ms();
        let mut cur = self.last_ms.load(Ordering::Acquire);
        loop {
            let next = now.max(cur + 1);
            match self.last_ms.compare_exchange(cur, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return next,
                Err(c) => cur = c,
            }
        }
    }

    pub fn id_at(&self, unix_ms: u64, seq: u64) -> u64 {
        ((unix_ms - EPOCH) << 22) | (u64::from(self.worker) << 12) | seq
    }

    /// The correct OK reply to a request.
    pub fn ok(&self, r: &Req) -> Vec<u8> {
        let ms = self.fresh_ms();
        match r.op {
            OP_INFO => reply_info(r.tag, self.worker),
            OP_ID => reply(r.op, r.tag, ST_OK, 0, self.worker, &ids_body(&[self.id_at(ms, 0)]), 1),
            OP_LIST => {
                let v: Vec<u64> = (0..u64::from(r.count)).map(|s| self.id_at(ms, s)).collect();
                reply(r.op, r.tag, ST_OK, 0, self.worker, &ids_body(&v), r.count)
            }
            OP_RANGE => {
                let n = u32::from(r.count).min(4096);
                let mut b = self.id_at(ms, 0).to_be_bytes().to_vec();
                b.extend_from_slice(&n.to_be_bytes());
                let flags = if n < u32::from(r.count) { FLAG_PARTIAL } else { 0 };
                reply(r.op, r.tag, ST_OK, flags, self.worker, &b, 1)
            }
            OP_UUID7 => {
                let mut b = Vec::new();
                for k in 0..u64::from(r.count) {
                    let hi = (ms << 16) | (0x7 << 12) | k; // rand_a: the counter (12 sequence bits)
                    let lo = (0b10u64 << 62) | (u64::from(self.worker) << 52) | (0xF7 << 44);
                    b.extend_from_slice(&hi.to_be_bytes());
                    b.extend_from_slice(&lo.to_be_bytes());
                }
                reply(r.op, r.tag, ST_OK, 0, self.worker, &b, r.count)
            }
            _ => status(r, ST_BAD_REQUEST, 0),
        }
    }
}

fn ids_body(ids: &[u64]) -> Vec<u8> {
    ids.iter().flat_map(|i| i.to_be_bytes()).collect()
}

pub fn reply(op: u8, tag: u64, st: u8, flags: u8, worker: u16, body: &[u8], count: u16) -> Vec<u8> {
    let mut b = vec![0u8; 24];
    b[0..2].copy_from_slice(&MAGIC.to_be_bytes());
    b[2] = VERSION;
    b[3] = op | OP_REPLY;
    b[4] = st;
    b[5] = flags;
    if st == ST_OK {
        b[6..8].copy_from_slice(&count.to_be_bytes());
    }
    b[8..16].copy_from_slice(&tag.to_be_bytes());
    b[18..20].copy_from_slice(&worker.to_be_bytes());
    b.extend_from_slice(body);
    b
}

pub fn reply_info(tag: u64, worker: u16) -> Vec<u8> {
    let mut info = EPOCH.to_be_bytes().to_vec();
    info.extend_from_slice(&[41, 0, 10, 12, 1, 1, 0, 181, 0, 16, 0, 4, 0, 0, 0, 1]);
    info.extend_from_slice(&[0u8; 8]);
    reply(OP_INFO, tag, ST_OK, 0, worker, &info, 1)
}

/// An error status reply (RETRY_AFTER with hint_us).
pub fn status(r: &Req, st: u8, hint_us: u32) -> Vec<u8> {
    let mut b = reply(r.op, r.tag, st, 0, 0, &[], 0);
    b[20..24].copy_from_slice(&hint_us.to_be_bytes());
    b
}

pub struct Fake {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<Mutex<HashMap<u8, u64>>>,
    pub ids: Arc<Ids>,
    script: Arc<Mutex<Script>>,
}

impl Fake {
    /// A fake answering by `script`.
    pub fn new(worker: u16, script: Script) -> Fake {
        Fake::on("127.0.0.1:0", worker, script).expect("bind a fake responder")
    }

    /// A fake bound to `addr` (for a port that was dead until now).
    pub fn on(addr: &str, worker: u16, script: Script) -> std::io::Result<Fake> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_read_timeout(Some(Duration::from_millis(20)))?;
        let f = Fake {
            addr: sock.local_addr()?,
            stop: Arc::new(AtomicBool::new(false)),
            counts: Arc::new(Mutex::new(HashMap::new())),
            ids: Arc::new(Ids { worker, last_ms: AtomicU64::new(0) }),
            script: Arc::new(Mutex::new(script)),
        };
        let (stop, counts, ids, script) = (f.stop.clone(), f.counts.clone(), f.ids.clone(), f.script.clone());
        thread::spawn(move || {
            let mut b = [0u8; 2048];
            while !stop.load(Ordering::Acquire) {
                let (n, from) = match sock.recv_from(&mut b) {
                    Ok(x) => x,
                    Err(_) => continue,
                };
                if n < 24 {
                    continue;
                }
                let r = Req {
                    op: b[3],
                    count: u16::from_be_bytes([b[6], b[7]]),
                    tag: u64::from_be_bytes(b[8..16].try_into().unwrap()),
                    len: n,
                };
                *counts.lock().unwrap().entry(r.op).or_insert(0) += 1;
                let outs = (script.lock().unwrap())(&r, &ids);
                for Out(delay, d) in outs {
                    if delay.is_zero() {
                        let _ = sock.send_to(&d, from);
                    } else {
                        let s2 = sock.try_clone().unwrap();
                        thread::spawn(move || {
                            thread::sleep(delay);
                            let _ = s2.send_to(&d, from);
                        });
                    }
                }
            }
        });
        Ok(f)
    }

    /// A fake answering every request correctly.
    pub fn answering(worker: u16) -> Fake {
        Fake::new(worker, ok_script())
    }

    /// A fake that never answers (a silent host: bound, no reply).
    pub fn silent() -> Fake {
        Fake::new(0, Box::new(|_, _| vec![]))
    }

    pub fn set_script(&self, s: Script) {
        *self.script.lock().unwrap() = s;
    }

    pub fn count(&self, op: u8) -> u64 {
        *self.counts.lock().unwrap().get(&op).unwrap_or(&0)
    }

    /// Requests other than INFO (probes are INFO).
    pub fn calls(&self) -> u64 {
        self.counts.lock().unwrap().iter().filter(|(&op, _)| op != OP_INFO).map(|(_, n)| n).sum()
    }

    pub fn addr_s(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

pub fn ok_script() -> Script {
    Box::new(|r, ids| vec![Out(Duration::ZERO, ids.ok(r))])
}

/// A loopback UDP port nothing listens on (ICMP port unreachable), below
/// the ephemeral range so no socket of the tests is given it meanwhile.
pub fn dead_port() -> String {
    let start = 20000 + (now_ms() % 10000) as u16;
    for p in start..32768 {
        let a = format!("127.0.0.1:{}", p);
        if UdpSocket::bind(&a).is_ok() {
            return a;
        }
    }
    panic!("no free port");
}

/// The worker an ID names under the default layout.
pub fn worker_of(id: u64) -> u32 {
    flakewire::Layout::DEFAULT.decode(id).unwrap().worker
}
