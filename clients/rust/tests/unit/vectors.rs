// SPDX-License-Identifier: BSD-3-Clause
//! The conformance vectors (tests/vectors/wire.vec, generated from lib/wire):
//! requests encoded byte for byte, replies parsed or rejected with the C
//! parser's reason, IDs decoded and UUIDs read under their layouts.

use flakewire::wire::{encode_request, parse_reply, WireError};
use flakewire::{Layout, Uuid};
use std::collections::HashMap;

fn path() -> String {
    std::env::var("FW_VECTORS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/wire.vec").into())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{:02x}", x)).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn num(s: &str) -> u64 {
    s.parse().unwrap_or_else(|_| panic!("bad number {:?}", s))
}

fn layout(kv: &HashMap<&str, &str>) -> Layout {
    let b: Vec<u8> = kv["bits"].split(':').map(|x| x.parse().unwrap()).collect();
    Layout::new(num(kv["epoch"]), b[0], b[1], b[2], b[3]).unwrap()
}

#[test]
fn vectors() {
    let text = std::fs::read_to_string(path()).expect("read wire.vec");
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut bad = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut toks = line.split(' ');
        let kind = toks.next().unwrap();
        let kv: HashMap<&str, &str> = toks.filter_map(|t| t.split_once('=')).collect();
        *counts.entry(kind.into()).or_insert(0) += 1;
        match kind {
            "req" => {
                let tag = u64::from_str_radix(kv["tag"], 16).unwrap();
                let got = encode_request(
                    num(kv["op"]) as u8,
                    num(kv["count"]) as u16,
                    tag,
                    kv["pad"] == "1",
                    num(kv["seq"]) as u32,
                );
                if hex(&got) != kv["bytes"] {
                    bad.push(format!("req {}: bytes differ", kv["name"]));
                }
            }
            "rep" => {
                let r = parse_reply(&unhex(kv["bytes"]));
                let (name, want) = (kv["name"], kv["result"]);
                if want != "ok" {
                    match r {
                        Err(e) if e.reason() == want => {
                            if let WireError::Version(t) = e {
                                if format!("{:016x}", t) != kv["tag"] {
                                    bad.push(format!("rep {}: tag of a version reply", name));
                                }
                            }
                        }
                        other => bad.push(format!("rep {}: got {:?}, want {}", name, other, want)),
                    }
                    continue;
                }
                let r = match r {
                    Ok(r) => r,
                    Err(e) => {
                        bad.push(format!("rep {}: {}", name, e));
                        continue;
                    }
                };
                let hdr = format!(
                    "{} {} {} {} {:016x} {} {} {}",
                    r.op, r.status, r.flags, r.count, r.tag, r.datacenter, r.worker, r.retry_after_us
                );
                let want_hdr = ["op", "status", "flags", "count", "tag", "dc", "worker", "retry_us"]
                    .iter()
                    .map(|k| kv[k])
                    .collect::<Vec<_>>()
                    .join(" ");
                if hdr != want_hdr {
                    bad.push(format!("rep {}: header {}, want {}", name, hdr, want_hdr));
                }
                if let Some(s) = kv.get("ids") {
                    let got = r.ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
                    if &got != s {
                        bad.push(format!("rep {}: ids differ", name));
                    }
                }
                if let Some(s) = kv.get("ranges") {
                    let got = r.ranges.iter().map(|x| format!("{}:{}", x.first, x.n)).collect::<Vec<_>>().join(",");
                    if &got != s {
                        bad.push(format!("rep {}: ranges differ", name));
                    }
                }
                if let Some(s) = kv.get("info") {
                    let i = r.info.unwrap();
                    let got = format!(
                        "{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}",
                        i.epoch_ms,
                        i.time_bits,
                        i.dc_bits,
                        i.worker_bits,
                        i.seq_bits,
                        i.version_min,
                        i.version_max,
                        i.list_max,
                        i.ranges_max,
                        i.max_borrow_ms,
                        i.features,
                        i.clock_offset_ns
                    );
                    if &got != s {
                        bad.push(format!("rep {}: info {}, want {}", name, got, s));
                    }
                }
                if let Some(s) = kv.get("uuids") {
                    let got = r.uuids.iter().map(|u| hex(u)).collect::<Vec<_>>().join(",");
                    if &got != s {
                        bad.push(format!("rep {}: uuids differ", name));
                    }
                }
            }
            "dec" => {
                let p = flakewire::decode(&layout(&kv), num(kv["id"])).unwrap();
                let got = (p.ms, p.unix_ms, u64::from(p.datacenter), u64::from(p.worker), u64::from(p.sequence));
                let want = (num(kv["ms"]), num(kv["unix_ms"]), num(kv["dc"]), num(kv["worker"]), num(kv["seq"]));
                if got != want {
                    bad.push(format!("dec {}: {:?}, want {:?}", kv["id"], got, want));
                }
            }
            "uuid" => {
                let u: Uuid = kv["text"].parse().unwrap();
                if u.to_string() != kv["text"] {
                    bad.push(format!("uuid {}: format", kv["text"]));
                }
                let p = layout(&kv).read_uuid(&u);
                let got = format!(
                    "{} {} {} {} {} {} {} {}",
                    p.version,
                    p.variant,
                    p.is_v7 as u8,
                    p.unix_ms,
                    p.flakewire as u8,
                    p.counter,
                    p.datacenter,
                    p.worker
                );
                let want = ["ver", "var", "v7", "unix_ms", "flakewire", "counter", "dc", "worker"]
                    .iter()
                    .map(|k| kv[k])
                    .collect::<Vec<_>>()
                    .join(" ");
                if got != want {
                    bad.push(format!("uuid {}: {}, want {}", kv["text"], got, want));
                }
                if p.is_v7 != u.unix_ms().is_some() || (p.is_v7 && u.unix_ms() != Some(p.unix_ms)) {
                    bad.push(format!("uuid {}: unix_ms()", kv["text"]));
                }
            }
            other => bad.push(format!("unknown line kind {:?}", other)),
        }
    }
    assert!(bad.is_empty(), "{} vectors failed:\n{}", bad.len(), bad.join("\n"));
    let c = |k: &str| *counts.get(k).unwrap_or(&0);
    assert!(c("req") >= 40 && c("rep") >= 100 && c("dec") >= 5 && c("uuid") >= 8, "too few vectors: {:?}", counts);
}
