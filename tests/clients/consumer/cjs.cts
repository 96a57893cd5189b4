// SPDX-License-Identifier: BSD-3-Clause
// tests/clients/consumer.sh: the TypeScript package from CommonJS, with types.
import flakewire = require("flakewire");

async function main(): Promise<void> {
  const c = await flakewire.Client.create((process.env.FLAKEWIRE_SERVERS ?? "").split(","));
  const id: bigint = await c.next();
  const p: flakewire.Parts = (await c.getLayout()).decode(id);
  console.log("CommonJS:", id, p.time.toISOString());
  c.close();
}
main().catch((e) => { console.error(e); process.exit(1); });
