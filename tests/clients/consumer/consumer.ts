// SPDX-License-Identifier: BSD-3-Clause
// The consumer program of tests/clients/consumer.sh (TypeScript, ESM): IDs
// through each call, kill -9 of the first responder, failover figures, close().
import { Client, ClosedError } from "flakewire";

function fail(msg: string): never {
  console.error("FAIL:", msg);
  process.exit(1);
}

async function timed(...servers: string[]): Promise<number> {
  const c = await Client.create(servers);
  const t = performance.now();
  await c.get();
  c.close();
  return performance.now() - t;
}

const env = process.env;
const c = await Client.create([env.FW_A!, env.FW_B!]);
const ids: bigint[] = [await c.get()];
for (let i = 0; i < 1000; i++) ids.push(await c.next());
if ((await c.uuid7(5)).length !== 5) fail("uuid7(5)");
process.kill(Number(env.FW_A_PID), "SIGKILL");
let worst = 0;
for (let i = 0; i < 3000; i++) {
  const t = performance.now();
  ids.push(await c.next());
  worst = Math.max(worst, performance.now() - t);
}
ids.push(await c.get());
const layout = await c.getLayout();
if (new Set(ids).size !== ids.length) fail("duplicate IDs");
const last = new Map<number, bigint>();
for (const id of ids) {
  const p = layout.decode(id);
  const w = p.datacenter * 65536 + p.worker;
  if (id <= (last.get(w) ?? 0n)) fail(`ID ${id} of worker ${p.worker} not above ${last.get(w)}`);
  if (Math.abs(p.time.getTime() - Date.now()) > 60_000) fail(`ID ${id}: time ${p.time.toISOString()}`);
  last.set(w, id);
}
if (last.size !== 2) fail(`IDs from ${last.size} workers, want 2 (A then B)`);
c.close();
for (const call of [() => c.next(), () => c.get()]) {
  const e = await call().then(() => null, (x) => x);
  if (!(e instanceof ClosedError) || e.code !== "CLOSED") fail(`after close(): ${e}`);
}
console.log(`FAILOVER ts dead_port_ms=${(await timed(env.FW_DEAD!, env.FW_B!)).toFixed(1)} ` +
  `silent_host_ms=${(await timed(env.FW_SILENT!, env.FW_B!)).toFixed(1)} after_kill9_worst_call_ms=${worst.toFixed(1)}`);
console.log(`OK ts: ${ids.length} unique IDs increasing per worker, 5 UUIDv7, closed after close()`);
