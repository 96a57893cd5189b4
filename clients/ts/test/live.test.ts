// SPDX-License-Identifier: BSD-3-Clause
// Live: against the responders tests/clients/live.sh starts (loop: FW_TRUSTED,
// FW_UNTRUSTED, FW_FEWSEQ, FW_DEAD; tap: FW_TAP, FW_TAP_BACKUP, FW_TAP_PID).
import assert from "node:assert/strict";
import test from "node:test";

import { Client, StatusError, readUUID, wire } from "../src/index.js";

const env = process.env;
const loop = !env.FW_TRUSTED && "run by tests/clients/live.sh loop";
const tap = !env.FW_TAP && "run by tests/clients/live.sh tap";

/** callers concurrent async callers of `each` next() calls each. */
async function take(c: Client, callers: number, each: number): Promise<bigint[][]> {
  return Promise.all(Array.from({ length: callers }, async () => {
    const out: bigint[] = [];
    for (let i = 0; i < each; i++) out.push(await c.next());
    return out;
  }));
}

function workers(c: Client, all: bigint[][], seen: Set<bigint>): Set<number> {
  const w = new Set<number>();
  for (const o of all) {
    for (const id of o) {
      assert.ok(!seen.has(id), `duplicate ID ${id}`);
      seen.add(id);
      w.add(c.layout!.decode(id).worker);
    }
  }
  return w;
}

test("loop: info and one-shot calls", { skip: loop }, async () => {
  const c = await Client.create([env.FW_TRUSTED!]);
  const r = await c.info();
  assert.equal(r.worker, 11);
  assert.equal(r.info!.seqBits, 12);
  const a = await c.get();
  const ids = await c.getN(500);
  assert.equal(ids.length, 500);
  assert.ok(ids[0] > a && ids.every((x, i) => i === 0 || x > ids[i - 1]));
  const runs = await c.getRange(5000);
  const total = runs.reduce((s, x) => s + x.n, 0);
  assert.ok(total >= 1 && total <= 5000 && runs[0].first > ids[499]);
  c.close();
});

test("loop: untrusted padded gets full answers, unpadded is refused", { skip: loop }, async () => {
  let c = await Client.create([env.FW_UNTRUSTED!]);
  const ids = await c.getN(181);
  assert.equal(ids.length, 181);
  assert.equal(c.lastReply!.count, 181);
  assert.equal(c.lastReply!.flags & wire.F_PARTIAL, 0);
  assert.equal(c.layout!.decode(ids[0]).worker, 12);
  c.close();
  c = await Client.create([env.FW_UNTRUSTED!], { trusted: true });
  await assert.rejects(c.get(), (e: unknown) => e instanceof StatusError && e.status === wire.ST_REFUSED);
  c.close();
});

test("loop: concurrent next() unique and valid", { skip: loop }, async () => {
  const c = await Client.create([env.FW_TRUSTED!], { prefetch: 512, lowWater: 128 });
  const all = await take(c, 8, 1250);
  for (const o of all) assert.ok(o.every((x, i) => i === 0 || x > o[i - 1]));
  const seen = new Set<bigint>();
  assert.deepEqual([...workers(c, all, seen)], [11]);
  assert.equal(seen.size, 10000);
  assert.match(await c.nextString(), /^[0-9]+$/);
  c.close();
});

test("loop: PARTIAL and RETRY_AFTER with one sequence bit", { skip: loop }, async () => {
  // First, before any background refill competes for the 2 IDs per ms.
  const d = await Client.create([env.FW_FEWSEQ!]);
  await d.getRange(4096);
  assert.ok(d.lastReply!.flags & wire.F_PARTIAL);
  d.close();
  const c = await Client.create([env.FW_FEWSEQ!], { prefetch: 200, lowWater: 50 });
  const seen = new Set<bigint>();
  workers(c, await take(c, 3, 100), seen);
  assert.equal(seen.size, 300);
  assert.equal(c.layout!.seqBits, 1);
  assert.ok(c.stats.retryAfter > 0, JSON.stringify(c.stats));
  c.close();
});

test("loop: UUID7 trusted, untrusted padded, unpadded refused", { skip: loop }, async () => {
  for (const [addr, worker] of [[env.FW_TRUSTED!, 11], [env.FW_UNTRUSTED!, 12]] as const) {
    const c = await Client.create([addr]);
    assert.equal((await c.info()).info!.features & wire.INFO_F_UUID7, 1);
    const us = await c.uuid7(90);
    assert.equal(us.length, 90);
    assert.equal(c.lastReply!.count, 90);
    for (const u of us) assert.ok(readUUID(u, c.layout).flakewire && readUUID(u, c.layout).worker === worker);
    const more = new Set(us);
    for (let i = 0; i < 200; i++) more.add(await c.nextUUID7());
    assert.equal(more.size, 290);
    c.close();
  }
  const c = await Client.create([env.FW_UNTRUSTED!], { trusted: true });
  await assert.rejects(c.uuid7(1), (e: unknown) => e instanceof StatusError && e.status === wire.ST_REFUSED);
  c.close();
});

test("loop: IPv6 loopback", { skip: loop || (!env.FW_V6 && "no IPv6 loopback") }, async () => {
  const c = await Client.create([env.FW_V6!]);
  const ids = await c.getN(181);
  assert.equal(new Set(ids).size, 181);
  assert.equal(c.layout!.decode(ids[0]).worker, 14);
  c.close();
});

test("loop: failover from a dead responder", { skip: loop }, async () => {
  const c = await Client.create([env.FW_DEAD!, env.FW_TRUSTED!], { timeoutMs: 50 });
  const seen = new Set<bigint>();
  workers(c, await take(c, 1, 10), seen);
  assert.equal(seen.size, 10);
  // The dead port answers ICMP port unreachable: failover at once.
  assert.ok(c.stats.failovers >= 1 && c.stats.refused >= 1, JSON.stringify(c.stats));
  c.close();
});

test("tap: concurrent callers unique, RETRY_AFTER, failover when flakewire stops", { skip: tap }, async () => {
  // maxAgeMs 200: after the kill, the IDs the pool still holds from flakewire (a refill
  // grows while callers drain it) expire, so the next ones must come from the backup
  const o = { prefetch: 256, lowWater: 64, maxAgeMs: 200 };
  // UUIDv7 from flakewire alone (with the backup configured, a hedge or a
  // RETRY_AFTER may take any call to it).
  const u1 = await Client.create([env.FW_TAP!], o);
  const us = new Set<string>();
  for (let i = 0; i < 300; i++) us.add(await u1.nextUUID7());
  assert.equal(us.size, 300);
  for (const u of us) assert.equal(readUUID(u, u1.layout).worker, 21);
  u1.close();
  // Issue 49: RETRY_AFTER from flakewire's busy milliseconds (4 sequence
  // bits) moves a call to the backup at once; every ID stays unique.
  const c = await Client.create([env.FW_TAP!, env.FW_TAP_BACKUP!], o);
  const seen = new Set<bigint>();
  const before = workers(c, await take(c, 8, 500), seen);
  assert.ok(before.has(21) && before.size <= 2, JSON.stringify([...before]) + JSON.stringify(c.stats));
  assert.equal(seen.size, 4000);
  assert.equal(c.layout!.seqBits, 4);
  assert.ok(c.stats.retryAfter > 0, JSON.stringify(c.stats));
  process.kill(Number(env.FW_TAP_PID), "SIGKILL"); // see live.sh: FW_TAP_PID
  await new Promise((r) => setTimeout(r, 600)); // past the maximum age: the pool's IDs expire
  const w = workers(c, await take(c, 8, 250), seen);
  assert.equal(seen.size, 6000);
  assert.ok(w.has(22) && c.stats.failovers >= 1, JSON.stringify(c.stats));
  c.close();
});
