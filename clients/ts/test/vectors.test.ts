// SPDX-License-Identifier: BSD-3-Clause
// Conformance: tests/vectors/wire.vec, the same file every client checks.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import test from "node:test";

import { Layout, readUUID, wire } from "../src/index.js";

const path = process.env.FW_VECTORS ??
  fileURLToPath(new URL("../../../../tests/vectors/wire.vec", import.meta.url));

function load(kind: string): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const [k, ...toks] = line.split(" ");
    if (k !== kind) continue;
    const kv: Record<string, string> = {};
    for (const t of toks) {
      const i = t.indexOf("=");
      kv[t.slice(0, i)] = t.slice(i + 1);
    }
    out.push(kv);
  }
  return out;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

test("the vector file covers every op, status and reason", () => {
  const reps = load("rep");
  assert.ok(load("req").length >= 40 && reps.length >= 100 && load("dec").length >= 5 && load("uuid").length >= 8);
  assert.deepEqual(new Set(reps.map((r) => r.result)), new Set(["ok", "short", "magic", "version", "bad"]));
});

test("requests byte for byte", () => {
  for (const v of load("req")) {
    const got = wire.encodeRequest(Number(v.op), Number(v.count), BigInt("0x" + v.tag), v.pad === "1", Number(v.seq));
    assert.equal(hex(got), v.bytes, v.name);
  }
});

test("replies accepted and rejected alike", () => {
  for (const v of load("rep")) {
    const b = new Uint8Array(Buffer.from(v.bytes, "hex"));
    if (v.result !== "ok") {
      assert.throws(() => wire.parseReply(b), (e: unknown) => {
        assert.ok(e instanceof wire.WireError, v.name);
        assert.equal(e.reason, v.result, v.name);
        if (v.result === "version") assert.equal(e.tag, BigInt("0x" + v.tag), v.name);
        return true;
      });
      continue;
    }
    const r = wire.parseReply(b);
    assert.deepEqual(
      [r.op, r.status, r.flags, r.count, r.tag.toString(16).padStart(16, "0"), r.datacenter, r.worker, r.retryAfterUs].join(" "),
      [v.op, v.status, v.flags, v.count, v.tag, v.dc, v.worker, v.retry_us].join(" "), v.name);
    if (v.ids !== undefined) assert.equal(r.ids.join(","), v.ids, v.name);
    if (v.ranges !== undefined) assert.equal(r.ranges.map((x) => `${x.first}:${x.n}`).join(","), v.ranges, v.name);
    if (v.info !== undefined) {
      const i = r.info!;
      assert.equal([i.epochMs, i.timeBits, i.dcBits, i.workerBits, i.seqBits, i.versionMin, i.versionMax,
        i.listMax, i.rangesMax, i.maxBorrowMs, i.features, i.clockOffsetNs].join(":"), v.info, v.name);
    }
    if (v.uuids !== undefined) assert.equal(r.uuids.map(hex).join(","), v.uuids, v.name);
  }
});

test("decode", () => {
  for (const v of load("dec")) {
    const [t, d, w, s] = v.bits.split(":").map(Number);
    const l = new Layout(BigInt(v.epoch), t, d, w, s);
    l.validate();
    const p = l.decode(v.id);
    assert.deepEqual([p.ms, p.unixMs, p.datacenter, p.worker, p.sequence].join(" "),
      [v.ms, v.unix_ms, v.dc, v.worker, v.seq].join(" "), v.id);
  }
});

test("uuid", () => {
  for (const v of load("uuid")) {
    const [t, d, w, s] = v.bits.split(":").map(Number);
    const b = new Uint8Array(Buffer.from(v.text.replace(/-/g, ""), "hex"));
    assert.equal(wire.formatUUID(b), v.text);
    const p = readUUID(v.text, new Layout(BigInt(v.epoch), t, d, w, s));
    assert.equal([p.version, p.variant, Number(p.isV7), p.unixMs, Number(p.flakewire), p.counter, p.datacenter, p.worker].join(" "),
      [v.ver, v.var, v.v7, v.unix_ms, v.flakewire, v.counter, v.dc, v.worker].join(" "), v.text);
  }
});
