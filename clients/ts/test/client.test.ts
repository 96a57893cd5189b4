// SPDX-License-Identifier: BSD-3-Clause
// The client's own rules against a scripted fake responder on loopback.
import assert from "node:assert/strict";
import dgram from "node:dgram";
import test from "node:test";

import { AddressError, ClosedError, ResolveError, Client, DEFAULT_EPOCH_MS, DEFAULT_LAYOUT, InvalidReplyError, NoResponseError, parseServer, wire } from "../src/index.js";

type Handler = (op: number, tag: bigint) => Uint8Array[];

async function fake(h: Handler): Promise<{ addr: string; close: () => void }> {
  return fakeReq((req) => h(req[3], req.readBigUInt64BE(8)));
}

/** A fake answering each request (its bytes, 24 at least) with the datagrams h gives, now or later. */
async function fakeReq(h: (req: Buffer) => Uint8Array[] | Promise<Uint8Array[]>): Promise<{ addr: string; close: () => void }> {
  const s = dgram.createSocket("udp4");
  s.on("message", (b, r) => {
    if (b.length < 24) return;
    void Promise.resolve(h(b)).then((ds) => {
      // A reply held past the test's end finds the socket closed: dropped.
      try { for (const d of ds) s.send(d, r.port, r.address); } catch { /* closed */ }
    });
  });
  await new Promise<void>((res) => s.bind(0, "127.0.0.1", res));
  return { addr: `127.0.0.1:${s.address().port}`, close: () => s.close() };
}

function reply(op: number, tag: bigint, status: number, worker: number, ids: bigint[] = []): Uint8Array {
  const info = op === wire.OP_INFO && status === 0;
  const b = Buffer.alloc(24 + 8 * ids.length + (info ? 32 : 0));
  b.writeUInt16BE(wire.MAGIC, 0);
  b[2] = 1; b[3] = op | 0x80; b[4] = status;
  b.writeUInt16BE(status ? 0 : info ? 1 : ids.length, 6);
  b.writeBigUInt64BE(tag, 8);
  b.writeUInt16BE(worker, 18);
  ids.forEach((id, i) => b.writeBigUInt64BE(id, 24 + 8 * i));
  if (info) {
    b.writeBigUInt64BE(DEFAULT_EPOCH_MS, 24);
    Buffer.from([41, 0, 10, 12, 1, 1, 0, 181, 0, 16, 0, 4]).copy(b, 32);
  }
  return b;
}

const mkId = (w: number, seq = 0, ms = BigInt(Date.now()) - DEFAULT_EPOCH_MS) =>
  (ms << 22n) | (BigInt(w) << 12n) | BigInt(seq);

test("parseServer", () => {
  assert.deepEqual(parseServer("10.0.0.1:99"), { host: "10.0.0.1", port: 99 });
  assert.deepEqual(parseServer("10.0.0.1"), { host: "10.0.0.1", port: 4242 });
  assert.deepEqual(parseServer("[::1]:4243"), { host: "::1", port: 4243 });
  assert.deepEqual(parseServer("[fe80::1]"), { host: "fe80::1", port: 4242 });
  assert.deepEqual(parseServer("fe80::1"), { host: "fe80::1", port: 4242 });
  for (const bad of ["[::1", "[::1]x", "h:0", "h:65536", "h:x", ":1", "", "[::1]:"]) {
    assert.throws(() => parseServer(bad), AddressError, bad);
  }
});

test("strays ignored, the matching reply taken", async () => {
  const f = await fake((op, tag) => op === wire.OP_INFO ? [reply(op, tag, 0, 7)] :
    [Buffer.from("junk"), reply(op, tag ^ 1n, 0, 7, [mkId(7)]), reply(wire.OP_LIST, tag, 0, 7, [mkId(7)]),
      reply(op, tag, 0, 7, [mkId(7)])]);
  const c = await Client.create([f.addr], { timeoutMs: 300, retries: 0 });
  const id = await c.get();
  assert.equal(DEFAULT_LAYOUT.decode(id).worker, 7);
  // 3 strays; more only when a reply came after T (50 ms) and the request went
  // again: its datagrams are strays too.
  assert.ok(c.stats.stray === 3 || (c.stats.stray > 3 && c.stats.timeouts > 0), JSON.stringify(c.stats));
  c.close();
  f.close();
});

test("invalid IDs rejected", async () => {
  for (const id of [mkId(8), (1n << 63n) | mkId(7), mkId(7, 0, 1000n)]) {
    const f = await fake((op, tag) => [op === wire.OP_INFO ? reply(op, tag, 0, 7) : reply(op, tag, 0, 7, [id])]);
    const c = await Client.create([f.addr], { timeoutMs: 300, retries: 0 });
    await assert.rejects(c.get(), InvalidReplyError);
    c.close();
    f.close();
  }
});

test("failover on NO_LEASE and CLOCK_UNSAFE", async () => {
  for (const st of [wire.ST_NO_LEASE, wire.ST_CLOCK_UNSAFE]) {
    const a = await fake((op, tag) => [reply(op, tag, st, 1)]);
    const b = await fake((op, tag) => [op === wire.OP_INFO ? reply(op, tag, 0, 9) : reply(op, tag, 0, 9, [mkId(9)])]);
    let c = await Client.create([a.addr, b.addr], { timeoutMs: 300, retries: 0 });
    assert.equal(DEFAULT_LAYOUT.decode(await c.get()).worker, 9);
    assert.ok(c.stats.failovers >= 1);
    c.close();
    // Alone, the responder is asked again (every 10 ms) until the deadline,
    // whose error names what it answered (before issue 49: a StatusError at once).
    c = await Client.create([a.addr], { timeoutMs: 300, retries: 0 });
    await assert.rejects(c.get(), (e: unknown) => e instanceof NoResponseError &&
      e.tried.length === 1 && e.tried[0] === `${a.addr}: answered ${wire.statusName(st).toUpperCase().replace("-", "_")}`);
    c.close();
    a.close();
    b.close();
  }
});

test("no responder: next() rejects with NoResponseError", async () => {
  const f = await fake(() => []);
  const c = await Client.create([f.addr], { timeoutMs: 20, retries: 1 });
  await assert.rejects(c.next(), NoResponseError);
  c.close();
  f.close();
});

function deadPort(): Promise<string> {
  // A loopback port nothing listens on, below the ephemeral range.
  return new Promise((resolve) => {
    const s = dgram.createSocket("udp4");
    s.bind(20000 + Math.floor(Math.random() * 12000), "127.0.0.1", () => {
      const a = `127.0.0.1:${s.address().port}`;
      s.close(() => resolve(a));
    });
  });
}

test("refused port: failover at once; NoResponseError names each server", async () => {
  const silent = await fake(() => []);
  const dead = await deadPort();
  const c = await Client.create([silent.addr, dead], { timeoutMs: 200, retries: 0 });
  const e = await c.get().then(() => null, (x) => x);
  assert.ok(e instanceof NoResponseError && e.code === "NO_RESPONSE", String(e));
  // The text of issue 49: "no reply in N ms" (since its first send), "refused".
  assert.equal(e.tried.length, 2, String(e));
  assert.match(e.tried[0], new RegExp(`^${silent.addr}: no reply in [0-9]+ ms$`));
  assert.equal(e.tried[1], `${dead}: refused`);
  assert.ok(c.stats.refused >= 1 && c.stats.failovers >= 1, JSON.stringify(c.stats));
  c.close();
  silent.close();
});

test("error classes carry a code", async () => {
  await assert.rejects(Client.create(["h:0"]), (e: AddressError) => e.code === "BAD_ADDRESS");
  await assert.rejects(Client.create(["no-such-host.invalid:4242"]),
    (e: ResolveError) => e instanceof ResolveError && e.code === "RESOLVE");
});

test("close() ends hand-outs with ClosedError", async () => {
  const f = await fake(() => []);
  const c = await Client.create([f.addr], { timeoutMs: 20, retries: 0 });
  c.close();
  await assert.rejects(c.next(), (e: ClosedError) => e instanceof ClosedError && e.code === "CLOSED");
  await assert.rejects(c.get(), ClosedError);
  await assert.rejects(c.nextUUID7(), ClosedError);
  f.close();
});

test("an ID older than maxAgeMs is not handed out", async () => {
  // Before issue 37, next() handed out the 2 IDs left of the first reply however old.
  let seq = 0, lists = 0; // lists: LIST requests, resends after T apart
  const tags = new Set<bigint>();
  const f = await fake((op, tag) => {
    if (op === wire.OP_INFO) return [reply(op, tag, 0, 7)];
    if (!tags.has(tag)) lists++;
    tags.add(tag);
    seq += 3;
    return [reply(op, tag, 0, 7, [mkId(7, seq - 3), mkId(7, seq - 2), mkId(7, seq - 1)])];
  });
  await assert.rejects(Client.create([f.addr], { maxAgeMs: 9 }), RangeError);
  const c = await Client.create([f.addr], { timeoutMs: 300, retries: 0, useRange: false, prefetch: 3, lowWater: 0, maxAgeMs: 20 });
  const a = await c.next();
  assert.equal(lists, 1);
  await new Promise((r) => setTimeout(r, 100));
  const b = await c.next();
  assert.ok(lists >= 2, `requests: ${lists}`);
  assert.ok(b > a && (b & 0xfffn) >= 3n, `${b} after ${a}`);
  c.close();
  f.close();
});

/** A worker's IDs in a layout as a responder hands them out: each range within one ms, never back in time. */
class IdSource {
  ms = 0n;
  seq = 0n;
  counts: [number, number][] = []; // [op, count] of each LIST and RANGE request
  constructor(readonly seqBits = 12n, readonly worker = 7n) {}

  /** Up to n consecutive IDs (those left in the current ms). */
  take(n: bigint): [bigint, bigint] {
    const now = BigInt(Date.now()) - DEFAULT_EPOCH_MS;
    if (now > this.ms) { this.ms = now; this.seq = 0n; }
    const per = 1n << this.seqBits;
    if (n > per - this.seq) n = per - this.seq;
    const first = (this.ms << 22n) | (this.worker << this.seqBits) | this.seq;
    this.seq += n;
    if (this.seq === per) { this.ms++; this.seq = 0n; }
    return [first, n];
  }

  answer(req: Buffer): Uint8Array {
    const op = req[3], tag = req.readBigUInt64BE(8), count = req.readUInt16BE(6), w = Number(this.worker);
    if (op === wire.OP_INFO) {
      const b = Buffer.from(reply(op, tag, 0, w));
      b[24 + 10] = 22 - Number(this.seqBits);
      b[24 + 11] = Number(this.seqBits);
      return b;
    }
    this.counts.push([op, count]);
    if (op === wire.OP_LIST) return reply(op, tag, 0, w, Array.from({ length: count }, () => this.take(1n)[0]));
    const runs: [bigint, bigint][] = [];
    for (let left = BigInt(count); left > 0n && runs.length < wire.RANGES_MAX;) {
      const r = this.take(left);
      runs.push(r);
      left -= r[1];
    }
    const b = Buffer.alloc(24 + 12 * runs.length);
    Buffer.from(reply(op, tag, 0, w)).copy(b);
    b.writeUInt16BE(runs.length, 6);
    runs.forEach(([first, n], i) => { b.writeBigUInt64BE(first, 24 + 12 * i); b.writeUInt32BE(Number(n), 32 + 12 * i); });
    return b;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("IDs buffered through a long refill are not handed out past maxAgeMs", async () => {
  // Four callers wait out a first refill the responder holds for 6 x maxAgeMs (the
  // ticker that ages the buffer ends idle meanwhile), take an ID each, wait
  // 4 x maxAgeMs, and must get IDs at most 2 x maxAgeMs old, from a new request.
  // Before, the ticker was not restarted when the refill came in: the 796 IDs
  // left kept their epoch, and the next calls handed them out however old.
  const maxAge = 100, wait = 4 * maxAge;
  const g = new IdSource();
  let held: bigint | undefined; // the first LIST's tag: it and its resends are held
  const f = await fakeReq(async (req) => {
    if (req[3] === wire.OP_LIST && (held ?? req.readBigUInt64BE(8)) === req.readBigUInt64BE(8)) {
      held = req.readBigUInt64BE(8);
      await sleep(6 * maxAge);
    }
    return [g.answer(req)];
  });
  const c = await Client.create([f.addr], { timeoutMs: 5000, retries: 0, useRange: false, prefetch: 800, lowWater: 0, maxAgeMs: maxAge });
  try { // a failure must not leave the fake's socket holding the event loop
    const first = await Promise.all([c.next(), c.next(), c.next(), c.next()]);
    const sent = g.counts.length, waitFrom = Date.now();
    await sleep(wait);
    const after = await Promise.all([c.next(), c.next(), c.next(), c.next()]);
    after.forEach((b, k) => {
      const issued = Number(DEFAULT_LAYOUT.decode(b).unixMs);
      assert.ok(issued >= waitFrom + wait - 2 * maxAge,
        `call ${k}: ID ${b} issued ${waitFrom + wait - issued} ms before the wait ended (the first ${first[k]})`);
    });
    assert.ok(g.counts.length > sent, `no request after the wait: ${g.counts.length}`);
  } finally {
    c.close();
    f.close();
  }
});

test("refills grow to 64 x prefetch and no further", async () => {
  // With lowWater 0 every refill starts on an empty buffer (a caller asks), so
  // each doubles the last until the cap.
  const prefetch = 8, cap = 64 * prefetch;
  const g = new IdSource();
  const f = await fakeReq((req) => [g.answer(req)]);
  const c = await Client.create([f.addr], { timeoutMs: 5000, retries: 0, prefetch, lowWater: 0 });
  try {
    let prev = 0n;
    // Past the cap (2 x cap, a refill of each size below it) and 8 refills at it.
    for (let i = 0; i < 10 * cap; i++) {
      const id = await c.next();
      assert.ok(id > prev, `${id} after ${prev}`);
      prev = id;
    }
  } finally {
    c.close();
    f.close();
  }
  const asked = g.counts.filter(([op]) => op === wire.OP_RANGE).map(([, n]) => n);
  assert.equal(Math.max(...asked), cap, `RANGE counts asked: ${asked}`);
  assert.ok(asked.every((n) => n <= cap), `RANGE counts asked: ${asked}`);
});
