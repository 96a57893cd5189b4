// SPDX-License-Identifier: BSD-3-Clause
// Prints a few IDs from flakewire responders and takes the first apart.
// usage: node dist/examples/example.js [SERVER...]   (default 127.0.0.1:4242)
import { Client, DEFAULT_LAYOUT } from "../src/index.js";

const servers = process.argv.slice(2);
let c: Client | undefined;
try {
  c = await Client.create(servers.length ? servers : ["127.0.0.1:4242"]);
  const ids: bigint[] = [];
  for (let i = 0; i < 5; i++) ids.push(await c.next());
  for (const id of ids) console.log(id.toString()); // bigint: all 64 bits kept
  const p = (c.layout ?? DEFAULT_LAYOUT).decode(ids[0]);
  console.log(`first: unix_ms ${p.unixMs} datacenter ${p.datacenter} worker ${p.worker} sequence ${p.sequence}`);
} catch (e) {
  console.error(`example: ${(e as Error).message}`);
  process.exitCode = 1;
} finally {
  c?.close();
}
