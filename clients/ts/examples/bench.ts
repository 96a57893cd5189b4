// SPDX-License-Identifier: BSD-3-Clause
// IDs/s through Client.next() from CALLERS concurrent async callers.
// usage: node dist/examples/bench.js SERVER CALLERS SECONDS [tuned|defaults]   (prints "ids_per_s N")
// tuned (the default): trusted, prefetch 4096, low water 1024; defaults: the library's.
import { Client } from "../src/index.js";

const [server, callers, seconds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const tuned = (process.argv[5] ?? "tuned") === "tuned";
const c = await Client.create([server], tuned ? { trusted: true, prefetch: 4096, lowWater: 1024 } : {});
await c.next();
const t0 = performance.now();
const stop = t0 + seconds * 1000;
const counts = await Promise.all(Array.from({ length: callers }, async () => {
  let n = 0;
  while (performance.now() < stop) {
    for (let i = 0; i < 256; i++) await c.next();
    n += 256;
  }
  return n;
}));
console.log(`ids_per_s ${Math.round(counts.reduce((a, b) => a + b, 0) / ((performance.now() - t0) / 1000))}`);
c.close();
